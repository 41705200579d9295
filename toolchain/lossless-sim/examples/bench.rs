//! Packet-hops per second of the simulator through lossless.p4 (one core: a run is one thread),
//! beside the in-process engine's packets per second on the same programmed switch in the same
//! run (the ceiling: the simulator adds the traffic manager, the event queue and the hosts).
//!
//! The workload is seed 000's incast (incast-16to1, tuned buffers, PFC on) at 100G, programmed
//! by lossless-ctl as `lossless-sim run` does, with five times the experiment's messages per
//! sender (1000 x 64 KB): about 82 ms of virtual time and 0.3 M packet-hops. It needs the venv
//! and build/p4 (`make bench`).
//!
//! Each rate is given per wall second and per second of this thread's CPU time: on a shared
//! machine the wall figures move with the other processes' load, the CPU ones much less. The
//! run is cut into slices of virtual time and the engine-alone loop into slices of wall time;
//! the medians of the slices' CPU rates are the figures to compare (a burst of another job's
//! load moves one slice, not the median).
//!
//! `--iters N` sets the messages per sender (default 1000): fewer make a short run for an
//! instruction count under callgrind, where the rate figures mean nothing but the counts per
//! packet-hop (`packet_hops`) and per engine packet (`engine_packets`) do.
//!
//! `cargo run --release -p lossless-sim --example lossless-sim-bench -- OUT.json [--iters N]`

use lossless_sim::experiment::{setup_incast, Plan};
use lossless_sim::net::Stop;
use lossless_sim::program::{self, Lab};
use lossless_sim::traffic::NicParams;
use lossless_sim::{assemble, probe, DEFAULT_PIPELINE_NS};
use std::path::Path;
use std::time::Instant;

/// Engine-alone measurement length, and its slices.
const ENGINE_SECS: f64 = 2.0;
const ENGINE_SLICES: usize = 20;

/// Messages per sender by default: five times the experiment's 200, so that the simulation
/// takes seconds of CPU rather than 0.3 s.
const ITERS: u64 = 1000;

/// Virtual time per measured slice of the simulation (about 13 000 packet-hops each).
const SLICE_NS: u64 = 4_000_000;

/// CPU time this thread has used, in seconds.
fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the timespec it is given.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(
        rc, 0,
        "CLOCK_THREAD_CPUTIME_ID is always available on Linux"
    );
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// The median of `v` (sorted in place); 0 when empty.
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// (largest - smallest) / median of sorted rates: how much the slices of one run disagree.
fn spread(sorted: &[f64]) -> f64 {
    match (sorted.first(), sorted.last()) {
        (Some(lo), Some(hi)) => (hi - lo) / sorted[sorted.len() / 2],
        _ => 0.0,
    }
}

fn main() {
    let usage = || -> ! {
        eprintln!("usage: lossless-sim-bench OUT.json [--iters N]");
        std::process::exit(2);
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (out_path, iters) = match args.as_slice() {
        [out] => (out.clone(), ITERS),
        [out, flag, n] if flag == "--iters" => match n.parse::<u64>() {
            Ok(n) if n > 0 => (out.clone(), n),
            _ => usage(),
        },
        _ => usage(),
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let lab = Lab::at(&root);
    let dir = std::env::temp_dir().join(format!("lossless-sim-bench-{}", std::process::id()));
    let topo = root.join("topo/lossless_topo/topologies/incast-16to1.json");
    let fail = |e: String| -> ! {
        eprintln!("lossless-sim-bench: {e}");
        std::process::exit(1);
    };
    let fabric = program::prepare(&lab, &topo, Some("tuned"), false, &dir)
        .unwrap_or_else(|e| fail(e.to_string()));
    let (switches, _servers) =
        program::program(&lab, &fabric, &dir).unwrap_or_else(|e| fail(e.to_string()));
    let mut sim =
        assemble(&fabric, switches, DEFAULT_PIPELINE_NS).unwrap_or_else(|e| fail(e.to_string()));
    let Ok(Plan::Incast(mut inc)) = Plan::of(&fabric) else {
        fail("incast-16to1 is not an incast".into());
    };
    inc.iters = iters;
    let nic = NicParams::new(inc.roce_mtu, inc.priority * 8);
    let mut rng = fastrand::Rng::with_seed(1);
    setup_incast(&mut sim, &inc, &nic, 0, &mut rng).unwrap_or_else(|e| fail(e.to_string()));

    let hops_now = |sim: &lossless_sim::net::Sim| -> u64 {
        sim.switches
            .iter()
            .map(|s| {
                let c = s.core.counters();
                c.rx_frames.values().sum::<u64>() + c.mac_control_consumed
            })
            .sum()
    };
    // Slicing does not change the run: between slices no event is handled.
    let (start, cpu_start) = (Instant::now(), thread_cpu_s());
    let mut slice_rates = Vec::new();
    let stop = loop {
        let (h0, c0) = (hops_now(&sim), thread_cpu_s());
        let until = sim.now_ns() + SLICE_NS;
        let stop = sim.run(Some(until), None, &mut |_| {});
        let (h, c) = (hops_now(&sim) - h0, thread_cpu_s() - c0);
        // The last slice ends early, with the last messages' tail.
        if stop == Stop::Reached || slice_rates.is_empty() {
            slice_rates.push(h as f64 / c);
        }
        if stop != Stop::Reached {
            break stop;
        }
    };
    let sim_s = start.elapsed().as_secs_f64();
    let sim_cpu_s = thread_cpu_s() - cpu_start;
    let hops = hops_now(&sim);

    // The same switch's engine alone, on a data frame of the incast (h1 to h17, 4 KB MTU).
    let frame = probe::frame(&sim, 0, 16, inc.priority * 8, inc.roce_mtu, 1);
    let sw = sim.switches[0]
        .core
        .switch
        .as_mut()
        .unwrap_or_else(|| fail("no pipeline".into()));
    let mut outs = Vec::new();
    let (start, cpu_start) = (Instant::now(), thread_cpu_s());
    let mut n = 0u64;
    let mut engine_rates = Vec::new();
    for k in 1..=ENGINE_SLICES {
        let (n0, c0) = (n, thread_cpu_s());
        while start.elapsed().as_secs_f64() < ENGINE_SECS * k as f64 / ENGINE_SLICES as f64 {
            for _ in 0..1000 {
                sw.process(1, &frame, n / 1000, &mut outs);
                for o in outs.drain(..) {
                    sw.recycle_buffer(o.data);
                }
                n += 1;
            }
        }
        engine_rates.push((n - n0) as f64 / (thread_cpu_s() - c0));
    }
    let engine_pps = n as f64 / start.elapsed().as_secs_f64();
    let engine_cpu_pps = n as f64 / (thread_cpu_s() - cpu_start);
    let hops_median = median(&mut slice_rates);
    let engine_median = median(&mut engine_rates);
    let hops_per_s = hops as f64 / sim_s;
    let hops_per_cpu_s = hops as f64 / sim_cpu_s;
    let doc = serde_json::json!({
        "workload": format!("incast-16to1 case tuned, 16 x {iters} x 64 KB write_bw at 100G, 4 KB RoCE MTU"),
        "stop": stop,
        "packet_hops": hops,
        "events": sim.events(),
        "virtual_time_ns": sim.now_ns(),
        "wall_s": sim_s,
        "packet_hops_per_s": hops_per_s,
        "events_per_s": sim.events() as f64 / sim_s,
        "engine_packets": n,
        "engine_packets_per_s": engine_pps,
        "engine_frame_bytes": frame.len(),
        "sim_vs_engine": hops_per_s / engine_pps,
        "cpu_s": sim_cpu_s,
        "packet_hops_per_cpu_s": hops_per_cpu_s,
        "engine_packets_per_cpu_s": engine_cpu_pps,
        "sim_vs_engine_cpu": hops_per_cpu_s / engine_cpu_pps,
        // What the 1M packet-hops/s per core means: 1 us of CPU per hop.
        "cpu_us_per_hop": 1e6 / hops_per_cpu_s,
        "engine_cpu_us_per_packet": 1e6 / engine_cpu_pps,
        // The figures to compare between runs: medians of the slices' CPU rates.
        "slice_ns": SLICE_NS,
        "slices": slice_rates.len(),
        "packet_hops_per_cpu_s_median": hops_median,
        "engine_packets_per_cpu_s_median": engine_median,
        "sim_vs_engine_cpu_median": hops_median / engine_median,
        "slice_spread": spread(&slice_rates),
        "engine_slice_spread": spread(&engine_rates),
    });
    let text = serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n";
    if let Err(e) = std::fs::write(&out_path, &text) {
        fail(format!("{out_path}: {e}"));
    }
    let _ = std::fs::remove_dir_all(&dir);
    print!("{text}");
}
