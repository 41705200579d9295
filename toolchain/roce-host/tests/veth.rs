//! The built binary as two processes over a real veth pair, one namespace per end:
//!
//! ```text
//!   netns rh-<pid>-<n>-a: va 10.77.0.1/24 <==veth==> vb 10.77.0.2/24 :netns rh-<pid>-<n>-b
//!        roce-host write_bw ... 10.77.0.2          roce-host write_bw (server)
//! ```
//!
//! Needs root (namespaces, AF_PACKET). The namespaces are deleted on drop, panics included.

use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_roce-host");

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Two namespaces joined by a veth pair, deleted when dropped.
struct Pair {
    a: String,
    b: String,
}

impl Pair {
    fn new() -> Pair {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let base = format!(
            "rh-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let pair = Pair {
            a: format!("{base}-a"),
            b: format!("{base}-b"),
        };
        ip(&["netns", "add", &pair.a]);
        ip(&["netns", "add", &pair.b]);
        ip(&[
            "link", "add", "va", "netns", &pair.a, "type", "veth", "peer", "name", "vb", "netns",
            &pair.b,
        ]);
        for (ns, dev, addr) in [
            (&pair.a, "va", "10.77.0.1/24"),
            (&pair.b, "vb", "10.77.0.2/24"),
        ] {
            ip(&["-n", ns, "addr", "add", addr, "dev", dev]);
            ip(&["-n", ns, "link", "set", dev, "up"]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        pair
    }

    fn spawn(&self, ns: &str, args: &[&str]) -> Child {
        Command::new("ip")
            .args(["netns", "exec", ns, BIN])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn roce-host")
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        for ns in [&self.a, &self.b] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

/// Waits for `child` at most `limit`, killing it (by its own pid) if it overstays.
fn finish(mut child: Child, limit: Duration) -> Output {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let out = child.wait_with_output().expect("output");
    panic!(
        "roce-host did not finish in {limit:?}; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn json(out: &Output, who: &str) -> Value {
    assert!(
        out.status.success(),
        "{who} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{who} printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

#[test]
fn write_bw_client_and_server_over_veth_report_every_byte() {
    let pair = Pair::new();
    let server = pair.spawn(
        &pair.b,
        &[
            "write_bw",
            "-d",
            "vb",
            "--json",
            "--time-limit",
            "50",
            "-p",
            "18555",
        ],
    );
    let (size, iters, qps) = (5000u64, 300u64, 4u64);
    let client = pair.spawn(
        &pair.a,
        &[
            "write_bw",
            "-d",
            "va",
            "-s",
            &size.to_string(),
            "-n",
            &iters.to_string(),
            "-q",
            &qps.to_string(),
            "-p",
            "18555",
            "--dscp",
            "24",
            "--json",
            "--time-limit",
            "50",
            "10.77.0.2",
        ],
    );
    let c = json(&finish(client, Duration::from_secs(60)), "client");
    let s = json(&finish(server, Duration::from_secs(60)), "server");
    let expect = size * iters * qps;
    assert_eq!(c["bw"]["bytes"], expect, "{c}");
    assert_eq!(c["latency"]["iterations"], iters * qps);
    assert!(c["bw"]["bw_average_mb_per_sec"].as_f64().unwrap() > 0.0);
    assert_eq!(c["servers"][0]["bytes_received"], expect);
    assert_eq!(c["servers"][0]["data_ok"], true);
    assert_eq!(s["bytes_received"], expect, "{s}");
    assert_eq!(s["messages_received"], iters * qps);
    assert_eq!(s["data_ok"], true);
    assert_eq!(s["counters"]["rx_bad_icrc"], 0);
    // 5000 bytes at MTU 1024: 5 packets per message, all of them received at least once.
    assert!(s["counters"]["rx_data_pkts"].as_u64().unwrap() >= 5 * iters * qps);
}

#[test]
fn write_lat_ping_pong_over_veth_reports_perftest_latency_columns() {
    let pair = Pair::new();
    let server = pair.spawn(
        &pair.b,
        &["write_lat", "-d", "vb", "--time-limit", "50", "-p", "18556"],
    );
    let client = pair.spawn(
        &pair.a,
        &[
            "write_lat",
            "-d",
            "va",
            "-n",
            "200",
            "-p",
            "18556",
            "--time-limit",
            "50",
            "10.77.0.2",
        ],
    );
    let out = finish(client, Duration::from_secs(60));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let srv = finish(server, Duration::from_secs(60));
    assert!(
        srv.status.success(),
        "{}",
        String::from_utf8_lossy(&srv.stderr)
    );
    let lines: Vec<&str> = text.lines().collect();
    let header = lines
        .iter()
        .position(|l| l.starts_with(" #bytes #iterations    t_min[usec]"))
        .unwrap_or_else(|| panic!("no perftest latency header in:\n{text}"));
    let row: Vec<f64> = lines[header + 1]
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect();
    // #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%
    assert_eq!(row.len(), 9, "{text}");
    assert_eq!((row[0], row[1]), (2.0, 200.0));
    let (min, max, typical, avg, p99) = (row[2], row[3], row[4], row[5], row[7]);
    assert!(min > 0.0 && min <= typical && typical <= max && min <= avg && avg <= max);
    assert!(p99 <= max && p99 >= typical);
    let s = String::from_utf8_lossy(&srv.stdout);
    assert!(
        s.contains(" server: 200 messages, 400 bytes received"),
        "{s}"
    );
}
