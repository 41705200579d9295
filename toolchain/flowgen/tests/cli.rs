//! The `flowgen` binary: results files, pcap output and one-line errors.

use std::path::{Path, PathBuf};
use std::process::Command;

fn flowgen(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_flowgen"))
        .args(args)
        .output()
        .expect("runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("flowgen-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn seed_profile() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("profiles/cur_flow_single.yaml")
        .display()
        .to_string()
}

#[test]
fn sink_run_writes_json_and_csv() {
    let json = tmp("r.json");
    let csv = tmp("r.csv");
    let (ok, _, err) = flowgen(&[
        "run",
        "-f",
        &seed_profile(),
        "--sink",
        "-m",
        "1000",
        "-d",
        "0.05",
        "-q",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // 100 cps x 1000 for 0.05 s: flows 0..=5000 start; each sends 10 packets 200 us apart.
    assert_eq!(v["flows_started"], 5001);
    assert_eq!(v["scheduler"], "tw");
    let packets = v["packets"].as_u64().unwrap();
    assert!(packets > 49_000 && packets <= 50_010, "{packets}");
    assert_eq!(v["bytes"].as_u64().unwrap(), packets * 64);
    assert!(std::fs::read_to_string(&csv)
        .unwrap()
        .starts_with("t,tx_pps,tx_bps,active_flows,cpu_util,queue_full\n"));
}

#[test]
fn pcap_out_holds_every_packet() {
    let pcap = tmp("o.pcap");
    let json = tmp("o.json");
    let (ok, _, err) = flowgen(&[
        "run",
        "-f",
        &seed_profile(),
        "--pcap-out",
        pcap.to_str().unwrap(),
        "-s",
        "pq",
        "-d",
        "0.1",
        "-q",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let recs = switch_ports::pcap::read_file(&pcap).unwrap();
    assert_eq!(recs.len() as u64, v["packets"].as_u64().unwrap());
    // 100 cps for 0.1 s: flows at 0, 10, .., 100 ms; first packets at those times.
    assert_eq!(v["flows_started"], 11);
    assert!(recs.iter().all(|r| r.data.len() == 64));
}

#[test]
fn bad_profile_is_one_line_with_path_and_position() {
    let p = tmp("bad.yaml");
    std::fs::write(
        &p,
        "generator:\n  clients_start: 16.0.0.1\n  clients_end: 16.0.0.2\n  servers_start: 48.0.0.1\n  servers_end: 48.0.0.2\ncap_info:\n  - builtin: {kind: udp, packets: 3}\n    cps: -3\n",
    )
    .unwrap();
    let (ok, _, err) = flowgen(&["run", "-f", p.to_str().unwrap(), "--sink"]);
    assert!(!ok);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("cap_info[0].cps (line 8, column 10): must be a number greater than 0"),
        "{err}"
    );

    std::fs::write(&p, "generator: {clients_start: 16.0.0.1}\ncap_info: []\n").unwrap();
    let (ok, _, err) = flowgen(&["check", "-f", p.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        err.contains("generator") && err.contains("missing field `clients_end`"),
        "{err}"
    );

    std::fs::write(&p, "generator: {clients_start: 16.0.0.1, clients_end: 16.0.0.1, servers_start: 1.1.1.1, servers_end: 1.1.1.1}\ncap_info:\n  - {builtin: {kind: udp, packets: 1}, cps: 1, colour: red}\n").unwrap();
    let (ok, _, err) = flowgen(&["check", "-f", p.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        err.contains("cap_info[0]") && err.contains("unknown field `colour`"),
        "{err}"
    );
}

#[test]
fn missing_interface_is_one_line() {
    let (ok, _, err) = flowgen(&[
        "run",
        "-f",
        &seed_profile(),
        "-i",
        "flowgen-nosuch0",
        "-d",
        "0.01",
    ]);
    assert!(!ok);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("flowgen-nosuch0") && err.contains("look up interface"),
        "{err}"
    );
}

#[test]
fn run_needs_an_output() {
    let (ok, _, err) = flowgen(&["run", "-f", &seed_profile()]);
    assert!(!ok);
    assert!(err.contains("choose an output"), "{err}");
}

#[test]
fn realtime_run_prints_a_progress_line_per_second() {
    let (ok, _, err) = flowgen(&[
        "run",
        "-f",
        &seed_profile(),
        "--sink",
        "--pace",
        "realtime",
        "-m",
        "10",
        "-d",
        "1.3",
    ]);
    assert!(ok, "{err}");
    let progress: Vec<&str> = err.lines().filter(|l| l.starts_with('[')).collect();
    assert_eq!(progress.len(), 1, "{err}");
    for field in ["tx ", "pps", "b/s", "active ", "cpu ", "queue-full 0"] {
        assert!(
            progress[0].contains(field),
            "{field} missing: {}",
            progress[0]
        );
    }
}
