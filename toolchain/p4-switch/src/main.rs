//! `p4-switch`, also run as `simple_switch` and `simple_switch_grpc` (same command line) and as
//! `simple_switch_CLI` (the runtime CLI client).

use clap::Parser;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// mimalloc, not glibc's malloc: a P4Runtime write allocates its entries on the gRPC threads
/// and frees what the engine does not keep on the dataplane thread, and glibc's cross-thread
/// frees and arena locks cost a quarter of the switch's CPU per entry (p4-switch-p4rt-write-bench).
/// Built without transparent huge pages (Cargo.toml says why).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let argv0 = std::env::args().next().unwrap_or_default();
    if argv0.ends_with("simple_switch_CLI") {
        std::process::exit(p4_switch::cli_server::client_main());
    }
    // bmv2 takes its target-specific options (`--grpc-server-addr`, `--cpu-port`, ...) after a
    // `--` separator; ours are all one command line, so the separator is only dropped.
    let mut args = p4_switch::app::Args::parse_from(std::env::args_os().filter(|a| a != "--"));
    args.as_simple_switch = argv0.ends_with("simple_switch");
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        if let Err(e) = signal_hook::flag::register(sig, stop.clone()) {
            eprintln!("installing a signal handler: {e}");
            std::process::exit(1);
        }
    }
    let running = match p4_switch::app::start(&args) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    let mut serving = Vec::new();
    if let Some(g) = &running.grpc {
        serving.push(format!("P4Runtime on {}", g.addr()));
    }
    if let Some(s) = &running.stats {
        serving.push(format!("stats on http://{}", s.addr()));
    }
    if let Some(c) = &running.cli {
        serving.push(format!("runtime CLI on {}", c.addr()));
    }
    eprintln!("p4-switch running; {}", serving.join(", "));
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(50));
    }
    running.shutdown();
}
