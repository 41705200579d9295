//! Seed 001's head-of-line test (prio-2to1 at 100G, quick) with roce-host's endpoints on the
//! virtual clock: write_bw on write_lat's priority delays it, ECN (DCQCN) reduces that delay,
//! and write_bw on another priority leaves write_lat as it was alone (within 10 % of the
//! fabric's own latency; the topology's host latency comes on top of every case). And both ECN
//! cases in one run, the switches reprogrammed between them by `lossless-ctl load --reconcile`,
//! give what each gives in a run of its own.
//!
//! Needs what `make test` provides: the venv (.venv) and build/bin/p4-compile.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

mod common;
use common::{common_values, run_ok};

/// write_lat alone across the fabric without the hosts' latency (us): two 8-ns frame times at
/// 100G, the 500-ns pipeline and the ACK the server's NIC sends before its reply.
const FABRIC_US: f64 = 0.523;

fn run(name: &str, args: &[&str]) -> serde_json::Value {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("lossless-sim-prio-{name}"));
    let mut all = vec!["--quick"];
    all.extend(args);
    run_ok("prio-2to1", &all, &out)
}

/// The single-case runs, once for both tests.
fn single(case: &str) -> &'static serde_json::Value {
    static ON: OnceLock<serde_json::Value> = OnceLock::new();
    static OFF: OnceLock<serde_json::Value> = OnceLock::new();
    let cell = if case == "ecn=on" { &ON } else { &OFF };
    cell.get_or_init(|| run(case, &["--case", case]))
}

/// Each measurement's values by its case label ("baseline ecn=on", ...).
fn by_case(doc: &serde_json::Value) -> BTreeMap<String, serde_json::Value> {
    doc["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["case"].as_str().unwrap().to_string(), m["values"].clone()))
        .collect()
}

/// t_avg of write_lat per case name.
fn t_avg(doc: &serde_json::Value) -> BTreeMap<String, f64> {
    doc["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let v = common_values(m);
            // The names hold what the lab's names beside them report.
            assert_eq!(v["avg_latency_us"], v["lat_t_avg_us_nominal"], "{m}");
            assert_eq!(v["ecn_marked"], v["ce_marked"], "{m}");
            assert_eq!(v["lat_iterations"], 200, "{m}");
            assert_eq!(v["retransmissions"], 0, "{m}");
            let name = m["params"]["name"].as_str().unwrap().to_string();
            (name, v["lat_t_avg_us_nominal"].as_f64().unwrap())
        })
        .collect()
}

#[test]
fn same_priority_delays_write_lat_ecn_helps_another_priority_isolates() {
    let off = t_avg(single("ecn=off"));
    let on = t_avg(single("ecn=on"));
    for t in [&off, &on] {
        // What write_bw adds to write_lat alone (the hosts' latency is in every case alike).
        let added = |case: &str| t[case] - t["baseline"];
        assert!(added("same") > 0.05 * FABRIC_US, "{t:?}");
        assert!(added("different") < added("same"), "{t:?}");
        assert!(added("different") < 0.1 * FABRIC_US, "{t:?}");
    }
    assert!(on["same"] < off["same"], "ECN on {on:?} vs off {off:?}");
}

#[test]
fn one_run_over_both_cases_equals_two_single_case_runs() {
    let both = run("all", &[]);
    // The lab runner's order: ECN on, then off; three rows each.
    let cases: Vec<&str> = both["sim"]["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(cases, ["ecn=on", "ecn=off"]);
    let got = by_case(&both);
    let mut want = by_case(single("ecn=on"));
    want.extend(by_case(single("ecn=off")));
    assert_eq!(got.len(), 6, "{got:?}");
    // Every value of every case, latency samples' summaries, CE marks and CNPs included: the
    // reprogramming and the drain between the cases leave nothing behind.
    assert_eq!(got, want);
    for m in both["measurements"].as_array().unwrap() {
        assert_eq!(
            m["params"]["ecn"],
            m["case"].as_str().unwrap().ends_with("on")
        );
    }
    // ECN marking on the shared priority happened in the first case and not in the second.
    assert!(
        got["same ecn=on"]["ce_marked"].as_u64().unwrap() > 0,
        "{got:?}"
    );
    assert_eq!(got["same ecn=off"]["ce_marked"], 0, "{got:?}");
    // The second case's switches: the pipeline kept, the difference written, and read-back
    // finding exactly what its config_db.json describes.
    let second = &both["sim"]["cases"][1];
    let switches = second["reprogrammed"].as_array().unwrap();
    assert_eq!(switches.len(), 1, "{second}");
    for s in switches {
        assert_eq!(s["pipeline_kept"], true, "{s}");
        assert_eq!(s["read_back_exact"], true, "{s}");
    }
    assert!(second["start_ns"].as_u64() > both["sim"]["cases"][0]["start_ns"].as_u64());
}
