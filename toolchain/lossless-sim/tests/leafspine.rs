//! Seed 003's remote PFC test, small: the leaf-spine at 25G, 9:1 RoCE:TCP, 4 KB messages,
//! 8x7 and 256x7 QPs at depth 1 for 3 messages each, without and with remote PFC (the lab's
//! sfc=off / sfc=on config_db.json) in one run, the switches reprogrammed between them, with
//! seed 003's NIC limits from the topology (1 us CNP interval, 45 Mb/s floor). The sfc=on rows
//! of that run are exactly those of a run of sfc=on alone: nothing of sfc=off carries over.
//!
//! What it checks are directions the simulation can be held to:
//! - the row's latency is the probe's (h1's extra QP, one message at a time), sampled while
//!   the load runs, and the flows' own average is reported beside it;
//! - 256x7: remote PFC fires (pauses from the senders' ToRs, none without it) and holds the
//!   congested port's RoCE queue and the network's part of the flows' latency (first packet
//!   on the wire to completion) lower;
//! - 8x7 stays similar (within 2x), as the seed says.
//!
//! The flows' perftest average (post to completion) is not among them: with every QP keeping
//! one message in flight it is the messages in flight over the receiver's goodput (Little's
//! law), which remote PFC does not change; nor is the probe's at 256x7, which waits in its
//! NIC's round robin with the paused flows (README.md, seed 003).
//!
//! Needs what `make test` provides: the venv (.venv) and build/bin/p4-compile.

use std::path::Path;

mod common;
use common::{root, run_ok};

/// leafspine-7to1 with `experiment` fields replaced, run in `name`'s directory: its
/// measurements, of one case or (`None`) of all.
fn run_with(name: &str, set: serde_json::Value, case: Option<&str>) -> Vec<serde_json::Value> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("lossless-sim-ls-{name}"));
    std::fs::create_dir_all(&dir).unwrap();
    let file = root().join("topo/lossless_topo/topologies/leafspine-7to1.json");
    let mut topo: serde_json::Value =
        serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    for (k, v) in set.as_object().unwrap() {
        topo["experiment"][k] = v.clone();
    }
    let path = dir.join("leafspine-small.json");
    std::fs::write(&path, serde_json::to_string(&topo).unwrap()).unwrap();
    let args: Vec<&str> = case.map_or(Vec::new(), |c| vec!["--case", c]);
    let doc = run_ok(path.to_str().unwrap(), &args, &dir.join("out"));
    doc["measurements"].as_array().unwrap().clone()
}

/// The small topology's measurements, of one case or (`None`) of all.
fn run(case: Option<&str>) -> Vec<serde_json::Value> {
    let small = serde_json::json!({"mixes": ["9:1"], "sizes": [4096],
        "flows_per_sender": [8, 256], "iters": 3});
    run_with(case.unwrap_or("all"), small, case)
}

fn row<'a>(ms: &'a [serde_json::Value], flows: &str) -> &'a serde_json::Value {
    let m = ms
        .iter()
        .find(|m| m["params"]["flows"] == flows)
        .unwrap_or_else(|| panic!("no {flows} row"));
    &m["values"]
}

fn f(v: &serde_json::Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or_else(|| panic!("{k} in {v}"))
}

/// The RoCE queue's (3) time-average at the receiver's port, KB.
fn roce_queue_avg_kb(v: &serde_json::Value) -> f64 {
    let q = v["receiver_port_queues"].as_array().unwrap();
    q.iter().find(|q| q["queue"] == 3).unwrap()["average_kb"]
        .as_f64()
        .unwrap()
}

#[test]
fn remote_pfc_holds_the_256x7_queue_down_and_8x7_stays_similar_in_one_run_over_both_cases() {
    let all = run(None);
    let with = |pfc: bool| -> Vec<serde_json::Value> {
        all.iter()
            .filter(|m| m["params"]["remote_pfc"] == pfc)
            .cloned()
            .collect()
    };
    let (off, on) = (with(false), with(true));
    assert_eq!((off.len(), on.len()), (2, 2), "{all:?}");
    let alone = run(Some("sfc=on"));
    let values = |ms: &[serde_json::Value]| -> Vec<serde_json::Value> {
        ms.iter().map(|m| m["values"].clone()).collect()
    };
    assert_eq!(values(&on), values(&alone), "sfc=on after sfc=off vs alone");
    for ms in [&off, &on] {
        for m in ms.iter() {
            let v = &m["values"];
            assert_eq!(v["messages_completed"], v["messages_posted"], "{m}");
            assert_eq!(v["qps_failed"], 0, "{m}");
            assert!(f(v, "tcp_throughput_mbps") > 0.0, "TCP flowed: {m}");
            assert_eq!(m["params"]["roce_tcp"], "9:1");
            assert_eq!(v["latency_from"], "probe", "{m}");
            assert!(v["latency_samples"].as_u64().unwrap() > 0, "{m}");
            assert_eq!(
                m["latency_us"].as_array().unwrap().len() as u64,
                v["latency_samples"].as_u64().unwrap()
            );
            assert!(
                (f(v, "avg_latency_us") - f(v, "flows_avg_latency_us")).abs() > 1e-9,
                "the probe's figure is its own: {m}"
            );
        }
    }
    let (off256, on256) = (row(&off, "256x7"), row(&on, "256x7"));
    assert_eq!(off256["pauses_tx"], 0, "{off256}");
    let by = on256["pauses_tx_by_switch"].as_object().unwrap();
    assert!(
        ["leaf1", "leaf7"].iter().all(|s| by.contains_key(*s)),
        "the senders' ToRs paused them: {on256}"
    );
    // The same frames counted by who received them: the senders (hosts), each from its ToR.
    let rx = on256["pauses_rx_by_node"].as_object().unwrap();
    let total = |m: &serde_json::Map<String, serde_json::Value>| {
        m.values().map(|n| n.as_u64().unwrap()).sum::<u64>()
    };
    assert_eq!(total(rx), on256["pauses_tx"].as_u64().unwrap(), "{on256}");
    assert_eq!(rx.get("h1"), by.get("leaf1"), "{on256}");
    assert!(
        roce_queue_avg_kb(on256) < roce_queue_avg_kb(off256),
        "{on256}\n{off256}"
    );
    assert!(
        f(on256, "flows_avg_wire_latency_us") < f(off256, "flows_avg_wire_latency_us"),
        "{on256}\n{off256}"
    );
    let (off8, on8) = (row(&off, "8x7"), row(&on, "8x7"));
    for k in [
        "avg_latency_us",
        "flows_avg_latency_us",
        "flows_avg_wire_latency_us",
    ] {
        let (a, b) = (f(off8, k), f(on8, k));
        assert!(a < 2.0 * b && b < 2.0 * a, "{k}: {a} vs {b}");
    }
}

/// TCP on priority 4 rides queue 4, which the config marks (WRED, seed 003's Kmin / Kmax): DCTCP
/// answers the marks and holds TCP's queue far below NewReno's, which is not ECN-capable and
/// so is never marked; on priority 0 (no WRED) the two are the same run.
#[test]
fn dctcp_holds_a_marked_tcp_queue_down_and_is_newreno_where_unmarked() {
    let row = |prio: u8, cc: &str| -> serde_json::Value {
        let set = serde_json::json!({"mixes": ["1:9"], "sizes": [4096], "flows_per_sender": [8],
            "iters": 50, "tcp_priority": prio, "tcp_cc": cc});
        let ms = run_with(&format!("tcp{prio}-{cc}"), set, Some("sfc=off"));
        assert_eq!(ms.len(), 1);
        ms[0]["values"].clone()
    };
    let (reno4, dctcp4) = (row(4, "newreno"), row(4, "dctcp"));
    assert_eq!(reno4["tcp_ce_marked"], 0, "{reno4}");
    assert!(f(&dctcp4, "tcp_ecn_reductions") > 0.0, "{dctcp4}");
    assert!(
        f(&dctcp4, "tcp_queue_avg_kb") < f(&reno4, "tcp_queue_avg_kb") / 4.0,
        "{dctcp4}\n{reno4}"
    );
    assert!(f(&dctcp4, "tcp_throughput_mbps") > 0.9 * f(&reno4, "tcp_throughput_mbps"));
    let (reno0, dctcp0) = (row(0, "newreno"), row(0, "dctcp"));
    assert_eq!(dctcp0["tcp_ce_marked"], 0, "{dctcp0}");
    assert_eq!(reno0, dctcp0);
}
