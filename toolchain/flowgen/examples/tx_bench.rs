//! Packets per CPU-second of the sending thread, TX ring against plain `send()` per frame (the
//! baseline), on a veth pair in a network namespace of this process's own (root needed).
//!
//! `cargo run --release -p flowgen --example flowgen-tx-bench -- results/bench/flowgen-tx.json`
//!
//! The seed profile at `-m 30000` drives both, as fast as the thread goes; the methods
//! alternate, each measured `REPEAT` times, and the best run of each counts (the one least
//! disturbed by other work on a shared machine). Sender CPU time includes the kernel's: the
//! system calls and, on a veth, handing each frame to the peer.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use serde::Serialize;

use flowgen::bench::{seed_variant, SEED_MULTIPLIER};
use flowgen::run::{self, Pace, PortSink, RunConfig, Setup, TxMethod, DEFAULT_RING_SLOTS};

const PACKETS: u64 = 2_000_000;
const REPEAT: usize = 3;

#[derive(Serialize)]
struct Point {
    method: TxMethod,
    /// Best of the runs.
    mpps_per_core: f64,
    runs_mpps_per_core: Vec<f64>,
    /// Wall-clock rate of the best run (the thread may not have had a whole core).
    tx_pps: f64,
    cpu_util: f64,
    packets: u64,
    queue_full: u64,
    tx_dropped: u64,
    /// Frames the peer interface received, and those the veth dropped on the way.
    peer_rx_packets: u64,
    veth_drops: u64,
}

#[derive(Serialize)]
struct Report {
    what: &'static str,
    profile: &'static str,
    multiplier: f64,
    packets_per_run: u64,
    frame_bytes: u64,
    ring_slots: u32,
    baseline: TxMethod,
    points: Vec<Point>,
    /// Ring Mpps/core over plain Mpps/core.
    ring_speedup: f64,
}

/// flowgen's errors and the bench's own (setting up the veth pair), printed as one line.
type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

/// (rx packets of vb, drops of va and vb) from this namespace's /proc/net/dev.
fn veth_counters() -> Result<(u64, u64), String> {
    let text =
        std::fs::read_to_string("/proc/net/dev").map_err(|e| format!("/proc/net/dev: {e}"))?;
    let mut rx = 0;
    let mut drops = 0;
    for line in text.lines().skip(2) {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let v: Vec<u64> = rest
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        // rx: bytes packets errs drop ...; tx (from the 9th): bytes packets errs drop ...
        let (Some(&rxp), Some(&rxd), Some(&txd)) = (v.get(1), v.get(3), v.get(11)) else {
            continue;
        };
        match name.trim() {
            "vb" => {
                rx = rxp;
                drops += rxd + txd;
            }
            "va" => drops += rxd + txd,
            _ => {}
        }
    }
    Ok((rx, drops))
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn measure(method: TxMethod) -> BenchResult<Point> {
    let v = seed_variant("tx", None)?;
    let setup = Setup {
        profile_path: v.profile_path,
        profile: v.profile,
        sched: flowgen::run::SchedChoice::Wheel(flowgen::profile::TwConfig::default()),
        multiplier: SEED_MULTIPLIER,
        active_flows: None,
        prefill: true,
        pairs: 1,
        seed: 1,
    };
    let cfg = RunConfig {
        duration_ns: u64::MAX / 2,
        pace: Pace::Max,
        max_packets: Some(PACKETS),
        progress: false,
    };
    let mut sink = PortSink::open(&["va".to_string()], method, DEFAULT_RING_SLOTS)?;
    if sink.methods() != [method] {
        return Err(format!("va: asked for {method:?}, got {:?}", sink.methods()).into());
    }
    let (rx0, drops0) = veth_counters()?;
    let report = run::run(&setup, &mut sink, &cfg)?;
    // Closing the ring waits until the kernel has taken every frame.
    drop(sink);
    let (rx1, drops1) = veth_counters()?;
    let m = report.measurement;
    Ok(Point {
        method,
        mpps_per_core: m.mpps_per_core,
        runs_mpps_per_core: vec![m.mpps_per_core],
        tx_pps: m.tx_pps,
        cpu_util: m.cpu_util,
        packets: m.packets,
        queue_full: m.queue_full,
        tx_dropped: m.tx_dropped,
        peer_rx_packets: rx1 - rx0,
        veth_drops: drops1 - drops0,
    })
}

fn bench(out: &Path) -> BenchResult<Report> {
    // SAFETY: unshare has no memory-safety preconditions; the process is single-threaded here.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        return Err(format!(
            "unshare(CLONE_NEWNET) (root needed): {}",
            std::io::Error::last_os_error()
        )
        .into());
    }
    ip(&["link", "add", "va", "type", "veth", "peer", "name", "vb"])?;
    ip(&["link", "set", "va", "up"])?;
    ip(&["link", "set", "vb", "up"])?;
    let methods = [TxMethod::Plain, TxMethod::Ring];
    let mut best: Vec<Option<Point>> = vec![None, None];
    let mut runs: Vec<Vec<f64>> = vec![Vec::new(), Vec::new()];
    for _ in 0..REPEAT {
        for (i, &method) in methods.iter().enumerate() {
            let p = measure(method)?;
            eprintln!(
                "{method:?}: {:.3} Mpps/core ({} packets, peer received {}, veth drops {})",
                p.mpps_per_core, p.packets, p.peer_rx_packets, p.veth_drops
            );
            runs[i].push(p.mpps_per_core);
            if best[i]
                .as_ref()
                .map_or(true, |b| p.mpps_per_core > b.mpps_per_core)
            {
                best[i] = Some(p);
            }
        }
    }
    let mut points = Vec::new();
    for (p, r) in best.into_iter().zip(runs) {
        let mut p = p.ok_or("no measurement")?;
        p.runs_mpps_per_core = r;
        points.push(p);
    }
    let ring_speedup = points[1].mpps_per_core / points[0].mpps_per_core.max(1e-9);
    eprintln!(
        "ring: {ring_speedup:.2} x plain send per core; written to {}",
        out.display()
    );
    Ok(Report {
        what: "flowgen frames sent on a veth per CPU-second of the sending thread",
        profile: "profiles/cur_flow_single.yaml",
        multiplier: SEED_MULTIPLIER,
        packets_per_run: PACKETS,
        frame_bytes: 64,
        ring_slots: DEFAULT_RING_SLOTS,
        baseline: TxMethod::Plain,
        points,
        ring_speedup,
    })
}

fn main() -> ExitCode {
    let out = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "results/bench/flowgen-tx.json".to_string()),
    );
    match bench(&out).and_then(|r| Ok(run::write_json(&out, &r)?)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("flowgen-tx-bench: {e}");
            ExitCode::FAILURE
        }
    }
}
