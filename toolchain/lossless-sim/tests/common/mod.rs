//! What the integration tests share: the checkout, and lossless.p4 compiled by the tree's own
//! compiler (build/bin/p4-compile, from `make build`) into the test's scratch directory.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Once per test binary.
pub fn pipeline() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("lossless-sim-p4-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("pipeline directory");
        let compiler = root().join("build/bin/p4-compile");
        let status = Command::new(&compiler)
            .args([
                "--target", "bmv2", "--arch", "v1model", "--std", "p4-16", "-o",
            ])
            .arg(&dir)
            .arg("--p4runtime-files")
            .arg(dir.join("lossless.p4info.txtpb"))
            .arg(root().join("p4src/lossless.p4"))
            .status()
            .unwrap_or_else(|e| panic!("{}: {e} (run make build)", compiler.display()));
        assert!(status.success(), "p4-compile failed on p4src/lossless.p4");
        dir
    })
}

/// `lossless-sim run TOPOLOGY ARGS... --out OUT` with the checkout and the test's pipeline;
/// it must succeed. Returns results.json.
pub fn run_ok(topology: &str, args: &[&str], out: &Path) -> serde_json::Value {
    let got = Command::new(env!("CARGO_BIN_EXE_lossless-sim"))
        .arg("run")
        .arg(topology)
        .args(args)
        .arg("--lab")
        .arg(root())
        .arg("--pipeline")
        .arg(pipeline())
        .arg("--out")
        .arg(out)
        .output()
        .expect("lossless-sim runs");
    assert!(
        got.status.success(),
        "{topology} {args:?}: {}",
        String::from_utf8_lossy(&got.stderr)
    );
    let text = std::fs::read(out.join("results.json")).expect("results.json");
    serde_json::from_slice(&text).expect("results.json is JSON")
}

/// Checks that a measurement holds the values every experiment reports under one set of names
/// (issue 18), its p99 the 99th-percentile rank of its own latency samples, and returns them.
// Only the incast and prio tests check their measurements this way; the others' binaries
// include this module too.
#[allow(dead_code)]
pub fn common_values(m: &serde_json::Value) -> &serde_json::Value {
    let v = &m["values"];
    for k in ["avg_latency_us", "p99_latency_us"] {
        assert!(v[k].is_f64(), "{k}: {v}");
    }
    for k in ["pauses_tx", "cnps", "cnps_tx", "ecn_marked"] {
        assert!(v[k].is_u64(), "{k}: {v}");
    }
    // One meaning of `cnps` in every measurement: what the reaction points took (the lab
    // runner's `cnps_rx`).
    assert_eq!(v["cnps"], v["cnps_rx"], "{v}");
    let mut samples: Vec<f64> = m["latency_us"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    samples.sort_by(f64::total_cmp);
    let rank = (0.99 * samples.len() as f64).ceil() as usize;
    assert_eq!(v["p99_latency_us"], samples[rank - 1], "{v}");
    v
}
