//! Seed 001's head-of-line test (prio-2to1 at 100G, quick) with roce-host's endpoints on the
//! virtual clock: write_bw on write_lat's priority delays it, ECN (DCQCN) reduces that delay,
//! and write_bw on another priority leaves write_lat as it was alone.
//!
//! Needs what `make test` provides: the venv (.venv) and build/bin/p4-compile.

use std::path::Path;

mod common;
use common::run_ok;

/// t_avg of write_lat per case name.
fn prio(case: &str) -> std::collections::BTreeMap<String, f64> {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("lossless-sim-prio-{case}"));
    let doc = run_ok("prio-2to1", &["--quick", "--case", case], &out);
    doc["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let v = &m["values"];
            assert_eq!(v["lat_iterations"], 200, "{m}");
            assert_eq!(v["retransmissions"], 0, "{m}");
            let name = m["params"]["name"].as_str().unwrap().to_string();
            (name, v["lat_t_avg_us_nominal"].as_f64().unwrap())
        })
        .collect()
}

#[test]
fn same_priority_delays_write_lat_ecn_helps_another_priority_isolates() {
    let off = prio("ecn=off");
    let on = prio("ecn=on");
    for t in [&off, &on] {
        assert!(t["same"] > 1.05 * t["baseline"], "{t:?}");
        assert!(t["different"] < t["same"], "{t:?}");
        assert!(t["different"] < 1.1 * t["baseline"], "{t:?}");
    }
    assert!(on["same"] < off["same"], "ECN on {on:?} vs off {off:?}");
}
