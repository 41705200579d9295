//! Seed 003's field test, small (topologies/fieldtest-7to1.json, DCQCN alone, seed 003's NIC
//! limits: 1 us CNP interval, 45 Mb/s floor):
//! - ECN mark ratio: in the 7-to-1 write_bw incast more QPs per sender mark a larger share of
//!   the RoCE packets (seed 003: up to 100 % at about 5);
//! - flow rate against CNPs: sending sender 1's QP more CNPs per second lowers its DCQCN rate,
//!   and once they come faster than the rate-increase timer (55 us) the rate sits exactly at
//!   the NIC's minimum, 45 Mb/s, in every sample of the window (the reaction point's floor:
//!   `RC = max(RC (1 - alpha / 2), min_rate)`, and every CNP restarts the timer that would
//!   raise it);
//! - the field test's incast reports perftest's line and the port's buffer usage beside the
//!   seed's;
//! - every part's `cnps` is what the reaction points took, as every other measurement's: the
//!   notification points' CNPs (`cnps_tx`) plus, in cnp-rate, those the part sends itself,
//!   at most one per QP per microsecond (the NICs' 1 us CNP interval).
//!
//! Needs what `make test` provides: the venv (.venv) and build/bin/p4-compile.

use std::path::Path;

mod common;
use common::{root, run_ok};

/// Runs one part of a shrunk fieldtest-7to1 (`edit` changes its experiment section).
fn run(case: &str, edit: impl Fn(&mut serde_json::Value)) -> serde_json::Value {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("lossless-sim-ft-{case}"));
    std::fs::create_dir_all(&dir).unwrap();
    let file = root().join("topo/lossless_topo/topologies/fieldtest-7to1.json");
    let mut topo: serde_json::Value =
        serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    edit(&mut topo["experiment"]);
    let path = dir.join("fieldtest-small.json");
    std::fs::write(&path, serde_json::to_string(&topo).unwrap()).unwrap();
    run_ok(path.to_str().unwrap(), &["--case", case], &dir.join("out"))
}

fn values(doc: &serde_json::Value) -> Vec<serde_json::Value> {
    doc["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["values"].clone())
        .collect()
}

fn f(v: &serde_json::Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or_else(|| panic!("{k} in {v}"))
}

fn n(v: &serde_json::Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"))
}

/// A CNP from h8 to a sender crosses three switches (500 ns of pipeline each) and four links
/// (tens of ns for its 80 bytes at 25G and 100G) on a return path that carries only ACKs and
/// CNPs: under 2 us, so with 1 us between two CNPs of a QP at most two of each QP are in
/// flight when a measurement window opens or closes.
const IN_FLIGHT_PER_QP_PER_EDGE: u64 = 2;

/// The fieldtest's NICs' minimum interval between two CNPs of one QP.
const CNP_INTERVAL_US: u64 = 1;

#[test]
fn more_flows_per_sender_mark_a_larger_share_of_roce_packets() {
    let doc = run("ecn-ratio", |e| {
        e["ecn_ratio"] = serde_json::json!({"flows_per_sender": [1, 8], "size": 4096,
            "warmup_us": 5000, "measure_us": 2000});
    });
    let v = values(&doc);
    assert_eq!(v.len(), 2);
    let (one, eight) = (f(&v[0], "ecn_mark_ratio"), f(&v[1], "ecn_mark_ratio"));
    assert!(eight > one, "1 flow {one}, 8 flows {eight}");
    assert!(f(&v[1], "roce_packets_received") > 1000.0);
    let params = &doc["measurements"][1]["params"];
    assert_eq!(
        (
            params["flows"].as_str(),
            params["flows_per_sender"].as_u64()
        ),
        (Some("8x7"), Some(8))
    );
    for (p, flows) in v.iter().zip([1, 8]) {
        let qps = flows * 7;
        // The receiver's notification points send at most one CNP per QP per interval in the
        // 2 ms window (plus one per QP decided just before it and sent inside it).
        let tx = n(p, "cnps_tx");
        assert!(tx > 0 && tx <= qps * (2000 / CNP_INTERVAL_US + 2), "{p}");
        // `cnps` is the senders' count of the same CNPs (nothing else sends one here), apart
        // from those in flight at the window's two edges.
        assert_eq!(p["cnps"], p["cnps_rx"], "{p}");
        assert!(
            n(p, "cnps").abs_diff(tx) <= 2 * IN_FLIGHT_PER_QP_PER_EDGE * qps,
            "{p}"
        );
        assert_eq!(f(p, "cnps_per_s"), n(p, "cnps") as f64 / 0.002, "{p}");
    }
}

#[test]
fn cnps_faster_than_the_rate_timer_hold_the_flow_at_exactly_the_nic_minimum() {
    let doc = run("cnp-rate", |e| {
        e["cnp_rate"] = serde_json::json!({"senders": ["h1", "h3"], "cnps_per_s": [0, 200000],
            "size": 4096, "warmup_us": 1000, "measure_us": 2000});
    });
    let v = values(&doc);
    assert_eq!(v.len(), 2);
    let (none, many) = (&v[0], &v[1]);
    // 200 000 CNPs/s from the point's start, one every 5 us: the 200th to the 599th fall in the
    // window [1 ms, 3 ms), 400, and each reaches sender 1 well inside 5 us, so all 400 arrive
    // in it. The reaction points (`cnps`) take those and the notification points' own
    // (`cnps_tx`, two QPs), but for the latter's in flight at the window's edges.
    assert_eq!(n(many, "cnps_injected"), 400, "{many}");
    assert_eq!(n(none, "cnps_injected"), 0, "{none}");
    for (p, injected) in [(none, 0), (many, 400)] {
        assert_eq!(p["cnps"], p["cnps_rx"], "{p}");
        // Two edges, two QPs.
        let off = n(p, "cnps").abs_diff(n(p, "cnps_tx") + injected);
        assert!(off <= 2 * IN_FLIGHT_PER_QP_PER_EDGE * 2, "{p}");
    }
    assert_eq!(f(many, "min_rate_mbps"), 45.0);
    for k in ["rate_mbps_min", "rate_mbps_max", "rate_mbps_end"] {
        assert_eq!(f(many, k), 45.0, "{k}: {many}");
    }
    assert!(f(none, "rate_mbps_avg") > 1000.0, "{none}");
    // Paced at 45 Mb/s of wire bytes, sender 1 completes a 4 KB message every ~790 us.
    assert!(f(many, "goodput_mbps") < 45.0, "{many}");
    assert!(
        f(many, "other_goodput_mbps") > 20_000.0,
        "sender 2 takes the port: {many}"
    );
}

#[test]
fn the_field_test_incast_prints_perftests_line_and_the_ports_buffer_beside_the_seed() {
    let doc = run("latency", |e| {
        e["latency"] = serde_json::json!({"mix": "9:1", "size": 4096, "flows_per_sender": 8,
            "iters": 2});
    });
    let v = values(&doc);
    assert_eq!(v.len(), 1);
    assert_eq!(f(&v[0], "seed_avg_latency_us"), 4691.74);
    assert_eq!(v[0]["messages_completed"], 2 * 8 * 7);
    // The row ends when its last message completes. A CNP leaves the receiver's NIC before the
    // ACK it comes with (roce-host sends CNPs first) on the uncongested return path, so by then
    // the senders have taken every CNP the receiver sent: two counts at the two ends.
    let p = &v[0];
    assert_eq!(p["drops_tm"], 0, "{p}");
    assert!(n(p, "cnps") > 0, "{p}");
    assert_eq!(p["cnps"], p["cnps_tx"], "{p}");
    assert_eq!(p["cnps"], p["cnps_rx"], "{p}");
    // CE marks arrive between the row's start and its last completion; 56 QPs, one CNP each
    // per interval at most.
    let span_us = f(p, "duration_us").ceil() as u64;
    assert!(
        n(p, "cnps_tx") <= 56 * (span_us / CNP_INTERVAL_US + 1),
        "{p}"
    );
    let tables = doc["tables"].as_array().unwrap();
    let text = |i: usize| tables[i].as_str().unwrap().to_string();
    assert!(text(0).contains("4691.74") && text(0).contains("t_typical[usec]"));
    assert!(text(1).contains("16743/4185"));
}
