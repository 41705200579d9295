//! Seed 001's head-of-line test (prio-2to1 at 100G, quick) with roce-host's endpoints on the
//! virtual clock: write_bw on write_lat's priority delays it, ECN (DCQCN) reduces that delay,
//! and write_bw on another priority leaves write_lat as it was alone (within 10 % of the
//! fabric's own latency; the topology's host latency comes on top of every case).
//!
//! Needs what `make test` provides: the venv (.venv) and build/bin/p4-compile.

use std::path::Path;

mod common;
use common::run_ok;

/// write_lat alone across the fabric without the hosts' latency (us): two 8-ns frame times at
/// 100G, the 500-ns pipeline and the ACK the server's NIC sends before its reply.
const FABRIC_US: f64 = 0.523;

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
        // What write_bw adds to write_lat alone (the hosts' latency is in every case alike).
        let added = |case: &str| t[case] - t["baseline"];
        assert!(added("same") > 0.05 * FABRIC_US, "{t:?}");
        assert!(added("different") < added("same"), "{t:?}");
        assert!(added("different") < 0.1 * FABRIC_US, "{t:?}");
    }
    assert!(on["same"] < off["same"], "ECN on {on:?} vs off {off:?}");
}
