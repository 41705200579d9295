//! Seed 000's 16:1 incast at 100G through lossless.p4, with roce-host's endpoints on the virtual
//! clock: the buffer-calc tuned profile with PFC drops nothing on the lossless priority and
//! pauses the senders; the default buffers without PFC drop (issue 17's losslessness check);
//! PFC on the default buffers (one MTU of xoff headroom) pauses the senders and drops less,
//! but not nothing: more than an MTU arrives while the pause takes effect.
//!
//! Needs what `make test` provides: the venv (.venv) and build/bin/p4-compile.

use std::path::Path;

mod common;
use common::{common_values, run_ok};

fn incast(case: &str) -> serde_json::Value {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("lossless-sim-incast-{case}"));
    let doc = run_ok("incast-16to1", &["--quick", "--case", case], &out);
    let v = common_values(&doc["measurements"][0]);
    // The names hold what the lab's names beside them report.
    assert_eq!(v["avg_latency_us"], v["latency_avg_us_nominal"], "{v}");
    assert_eq!(v["ecn_marked"], v["ce_marked"], "{v}");
    v.clone()
}

#[test]
fn pfc_makes_the_100g_incast_lossless() {
    let tuned = incast("tuned");
    let default = incast("default");
    // Every one of the 16 x 10 messages completes in both cases (go-back-N recovers drops).
    for v in [&tuned, &default] {
        assert_eq!(v["messages_completed"], 160, "{v}");
        assert_eq!(v["qps_failed"], 0, "{v}");
    }
    assert_eq!(tuned["drops_lossless"], 0, "{tuned}");
    assert_eq!(tuned["retransmissions"], 0, "{tuned}");
    assert_eq!(tuned["retry_timeouts"], 0, "{tuned}");
    assert_eq!(tuned["messages_over_retry_timeout"], 0, "{tuned}");
    assert!(tuned["pfc_xoff_rx"].as_u64().unwrap() > 0, "{tuned}");
    assert!(default["drops_lossless"].as_u64().unwrap() > 0, "{default}");
    assert!(
        default["retransmissions"].as_u64().unwrap() > 0,
        "{default}"
    );
    assert_eq!(default["pfc_xoff_rx"], 0, "{default}");
    // Every XOFF a host took came in a PFC frame a switch sent; without PFC none is sent.
    assert!(
        tuned["pauses_tx"].as_u64() >= tuned["pfc_xoff_rx"].as_u64(),
        "{tuned}"
    );
    assert_eq!(default["pauses_tx"], 0, "{default}");
    // Drops cost retransmission timeouts (a go-back-N retransmission lost again after its
    // NAK: the responder NAKs a sequence error once): the lossy incast's messages take far
    // longer, every one that waited for a timeout at least 67 ms.
    assert!(default["retry_timeouts"].as_u64().unwrap() > 0, "{default}");
    assert!(
        default["messages_over_retry_timeout"].as_u64().unwrap() > 0,
        "{default}"
    );
    let lat = |v: &serde_json::Value| v["latency_avg_us_nominal"].as_f64().unwrap();
    assert!(lat(&default) > 5.0 * lat(&tuned), "{default} vs {tuned}");
    let pfc = incast("pfc");
    let n = |v: &serde_json::Value, k: &str| v[k].as_u64().unwrap();
    assert_eq!(pfc["messages_completed"], 160, "{pfc}");
    assert!(n(&pfc, "pfc_xoff_rx") > 0, "{pfc}");
    assert!(n(&pfc, "drops_lossless") > 0, "{pfc}");
    assert!(
        n(&pfc, "drops_lossless") < n(&default, "drops_lossless"),
        "{pfc} vs {default}"
    );
}
