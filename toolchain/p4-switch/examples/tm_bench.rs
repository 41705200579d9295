//! The traffic manager with 8 active queues per port, through the dataplane core (ingress, TM,
//! egress, transmit to a port that discards), on a simulated clock:
//!
//! - **shares**: every queue offered more than it can get; the bytes each queue sent, as a share
//!   of the port, against the share its SONiC SCHEDULER configuration gives it (DWRR by weight;
//!   strict queues first, the DWRR group sharing the rest);
//! - **speed**: packets/s of wall time with 8 queues backlogged and scheduled, beside 1 queue
//!   and beside the same program without a traffic manager (bmv2's path), all in this run.
//!
//! `cargo run --release -p p4-switch --example p4-switch-tm-bench -- OUT.json [PACKETS]`
//!
//! The program is `tests/fixtures/prio_forward.p4` (compiled with the workspace's p4-compile):
//! queue = IPv4 DSCP >> 3, ports 0/1 to port 2.

#[path = "../tests/common/fixture.rs"]
mod fixture;

mod support;

use p4_switch::core::Core;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;
use switch_ports::Port;
use switch_tm::{wire_bytes, ConfigFormat, TmConfig};
use switch_v1model::{Switch, SwitchConfig};

const FRAME: usize = 64;
const RATE_BPS: u64 = 100_000_000_000;

/// A 64-byte IPv4 frame whose DSCP class selector is `queue`.
fn frame(queue: usize) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend_from_slice(&[0x45, (queue as u8) << 5, 0, 50, 0, 0, 0, 0, 64, 17, 0, 0]);
    f.extend_from_slice(&[10, 0, 0, 1, 10, 0, 1, 1]);
    f.resize(FRAME, 0);
    f
}

fn core(program: &str, port2: Option<&str>) -> Result<Core, String> {
    let engine = SwitchConfig {
        priority_queues: 8,
        ..SwitchConfig::default()
    };
    let sw = Switch::from_json(program, engine.clone()).map_err(|e| e.to_string())?;
    let ports: BTreeMap<u32, Arc<dyn Port>> = (0..3)
        .map(|p| (p, Arc::new(support::Discard) as Arc<dyn Port>))
        .collect();
    let tm = port2
        .map(|p| {
            let text =
                format!("buffer: {{total_bytes: 12582912, chip: trident3}}\nports:\n  - {p}\n");
            TmConfig::parse(&text, ConfigFormat::Yaml)
        })
        .transpose()
        .map_err(|e| e.to_string())?;
    Core::new(Some(sw), tm, ports, engine, 0).map_err(|e| e.to_string())
}

fn port_config(queues: &[(&str, u8)]) -> String {
    let qs: Vec<String> = queues
        .iter()
        .enumerate()
        .map(|(q, (kind, w))| match *kind {
            "STRICT" => format!("{{queue: {q}, type: STRICT}}"),
            _ => format!("{{queue: {q}, type: {kind}, weight: {w}, limit_bytes: 65536}}"),
        })
        .collect();
    format!(
        "{{port: 2, rate_bps: {RATE_BPS}, queues: [{}]}}",
        qs.join(", ")
    )
}

/// Offers `load[q]` (fraction of the line rate) to each queue for `sim_ns` of simulated time, and
/// returns each queue's share of the bytes sent after the first tenth (the warm-up).
fn shares(
    program: &str,
    queues: &[(&str, u8)],
    load: &[f64],
    sim_ns: u64,
) -> Result<Vec<f64>, String> {
    let mut core = core(program, Some(&port_config(queues)))?;
    let frames: Vec<Vec<u8>> = (0..8).map(frame).collect();
    let bytes_per_ns = RATE_BPS as f64 / 8e9 / wire_bytes(FRAME as u32) as f64 * FRAME as f64;
    let step = 1_000u64;
    let mut credit = [0f64; 8];
    let mut base: Option<Vec<u64>> = None;
    let mut now = 0;
    while now < sim_ns {
        for q in 0..8 {
            credit[q] += load[q] * bytes_per_ns * step as f64;
            while credit[q] >= FRAME as f64 {
                credit[q] -= FRAME as f64;
                core.receive(now, 0, &frames[q]);
            }
        }
        let end = now + step;
        while let Some(t) = core.run_due(now) {
            if t >= end {
                break;
            }
            now = t.max(now + 1).min(end);
        }
        now = end;
        if base.is_none() && now >= sim_ns / 10 {
            base = Some(tx_bytes(&core, now));
        }
    }
    let base = base.unwrap_or_else(|| vec![0; 8]);
    let sent: Vec<u64> = tx_bytes(&core, now)
        .iter()
        .zip(&base)
        .map(|(a, b)| a - b)
        .collect();
    let total: u64 = sent.iter().sum();
    if total == 0 {
        return Err("nothing was sent".into());
    }
    Ok(sent.iter().map(|&b| b as f64 / total as f64).collect())
}

fn tx_bytes(core: &Core, now: u64) -> Vec<u64> {
    let stats = core.tm().map(|t| t.stats(now));
    let port = stats.and_then(|s| s.ports.into_iter().find(|p| p.port == 2));
    port.map_or(vec![0; 8], |p| {
        p.queues.iter().map(|q| q.tx_bytes).collect()
    })
}

/// Expected shares of a saturated port: strict queues (highest first) take what they are
/// offered while line is left; the weighted queues share the rest by weight among those that
/// want more than their share (water-filling).
fn expected(queues: &[(&str, u8)], load: &[f64]) -> Vec<f64> {
    let mut out = [0.0; 8];
    let mut left = 1.0f64;
    for q in (0..8).rev().filter(|&q| queues[q].0 == "STRICT") {
        out[q] = load[q].min(left);
        left -= out[q];
    }
    let mut open: Vec<usize> = (0..8).filter(|&q| queues[q].0 != "STRICT").collect();
    loop {
        let weight: f64 = open.iter().map(|&q| queues[q].1 as f64).sum();
        let capped: Vec<usize> = open
            .iter()
            .copied()
            .filter(|&q| load[q] < left * queues[q].1 as f64 / weight)
            .collect();
        if capped.is_empty() {
            for &q in &open {
                out[q] = left * queues[q].1 as f64 / weight;
            }
            break;
        }
        for q in capped {
            out[q] = load[q];
            left -= load[q];
            open.retain(|&o| o != q);
        }
    }
    let total: f64 = out.iter().sum();
    out.iter().map(|s| s / total).collect()
}

fn scenario(
    name: &str,
    program: &str,
    queues: &[(&str, u8)],
    load: &[f64],
    sim_ns: u64,
) -> Result<Value, String> {
    let got = shares(program, queues, load, sim_ns)?;
    let want = expected(queues, load);
    let worst = got
        .iter()
        .zip(&want)
        .map(|(g, w)| (g - w).abs())
        .fold(0.0, f64::max);
    let round = |v: &[f64]| {
        v.iter()
            .map(|x| (x * 10000.0).round() / 10000.0)
            .collect::<Vec<_>>()
    };
    eprintln!("{name}: max share error {worst:.4}");
    Ok(json!({
        "scheduler": queues.iter().map(|(k, w)| format!("{k}:{w}")).collect::<Vec<_>>(),
        "offered_fraction_of_line": load,
        "expected_share": round(&want),
        "measured_share": round(&got),
        "max_abs_error": (worst * 10000.0).round() / 10000.0,
    }))
}

/// Wall-clock packets/s: batches of 64 frames spread over `classes` queues, each batch received at
/// one instant and transmitted at line rate on the simulated clock (so with 8 classes every
/// dequeue chooses among 8 backlogged queues).
fn speed(program: &str, port2: Option<&str>, classes: usize, packets: u64) -> Result<f64, String> {
    let mut core = core(program, port2)?;
    let frames: Vec<Vec<u8>> = (0..8).map(frame).collect();
    let mut now = 0u64;
    let start = Instant::now();
    let mut n = 0u64;
    while n < packets {
        for i in 0..64 {
            core.receive(now, 0, &frames[i % classes]);
        }
        n += 64;
        while let Some(t) = core.run_due(now) {
            now = now.max(t);
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let sent: u64 = core.counters().tx_frames.values().sum();
    if sent != n {
        return Err(format!("sent {sent} of {n} packets"));
    }
    Ok(n as f64 / secs)
}

fn run(packets: u64) -> Result<Value, String> {
    let program = fixture::compile_fixture("prio_forward");
    let p = &program;
    let dwrr: Vec<(&str, u8)> = (1..=8).map(|w| ("DWRR", w)).collect();
    let mut strict: Vec<(&str, u8)> = vec![("DWRR", 1), ("DWRR", 1), ("DWRR", 2), ("DWRR", 4)];
    strict.extend([("DWRR", 4), ("DWRR", 8), ("STRICT", 0), ("STRICT", 0)]);
    let all_over = [0.25; 8];
    let mixed = [0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.1, 0.2];
    let sim_ns = 2_000_000;
    let eight = port_config(&dwrr);
    Ok(json!({
        "bench": "p4-switch traffic manager, 8 queues",
        "program": "p4-switch/tests/fixtures/prio_forward.p4 (queue = DSCP >> 3)",
        "frame_bytes": FRAME,
        "port_rate_bps": RATE_BPS,
        "simulated_ns_per_scenario": sim_ns,
        "shares": {
            "dwrr_weights_1_to_8": scenario("dwrr", p, &dwrr, &all_over, sim_ns)?,
            "strict_7_6_over_dwrr": scenario("strict", p, &strict, &mixed, sim_ns)?,
        },
        "packets": packets,
        "pps_without_tm": speed(p, None, 8, packets)?.round(),
        "pps_tm_1_queue": speed(p, Some(&eight), 1, packets)?.round(),
        "pps_tm_8_queues_dwrr": speed(p, Some(&eight), 8, packets)?.round(),
        "pps_tm_8_queues_strict_and_dwrr": speed(p, Some(&port_config(&strict)), 8, packets)?.round(),
    }))
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(out) = args.next() else {
        eprintln!("usage: p4-switch-tm-bench OUT.json [PACKETS]");
        std::process::exit(2);
    };
    let packets = args
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000u64);
    support::finish("p4-switch-tm-bench", &out, run(packets));
}
