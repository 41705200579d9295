//! The built binary as two processes over a real veth pair, one namespace per end:
//!
//! ```text
//!   netns rh-<pid>-<n>-a: va 10.77.0.1/24 <==veth==> vb 10.77.0.2/24 :netns rh-<pid>-<n>-b
//!        roce-host write_bw ... 10.77.0.2          roce-host write_bw (server)
//! ```
//!
//! Needs root (namespaces, AF_PACKET). The namespaces are deleted on drop, panics included.

use std::process::{Child, Output, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use netns_test_support::{ip, veth_between, Netns};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_roce-host");

/// Network namespaces (deleted, with their veths and bridge, when dropped, panics included).
struct Lab {
    hosts: Vec<Netns>,
    /// Holds the bridge; kept for its drop.
    _bridge: Option<Netns>,
}

fn host_up(ns: &Netns, dev: &str, addr: &str) {
    ip(&["-n", ns.name(), "addr", "add", addr, "dev", dev]);
    ip(&["-n", ns.name(), "link", "set", dev, "up"]);
}

impl Lab {
    /// Two hosts, `va` 10.77.0.1 and `vb` 10.77.0.2, on one veth pair.
    fn pair() -> Lab {
        let lab = Lab {
            hosts: vec![Netns::new("rh"), Netns::new("rh")],
            _bridge: None,
        };
        let (a, b) = (&lab.hosts[0], &lab.hosts[1]);
        veth_between(a, "va", b, "vb");
        host_up(a, "va", "10.77.0.1/24");
        host_up(b, "vb", "10.77.0.2/24");
        lab
    }

    /// `n` hosts with `eth0` at 10.78.0.(i+1), each on a port of a Linux bridge.
    fn bridged(n: usize) -> Lab {
        let br = Netns::new("rh");
        ip(&["-n", br.name(), "link", "add", "br0", "type", "bridge"]);
        ip(&["-n", br.name(), "link", "set", "br0", "up"]);
        let hosts: Vec<Netns> = (0..n).map(|_| Netns::new("rh")).collect();
        for (i, h) in hosts.iter().enumerate() {
            let port = format!("p{i}");
            veth_between(h, "eth0", &br, &port);
            ip(&["-n", br.name(), "link", "set", &port, "master", "br0"]);
            host_up(h, "eth0", &format!("10.78.0.{}/24", i + 1));
        }
        Lab {
            hosts,
            _bridge: Some(br),
        }
    }

    fn spawn(&self, host: usize, args: &[&str]) -> Child {
        self.hosts[host]
            .command(BIN)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn roce-host")
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
    let lab = Lab::pair();
    let server = lab.spawn(
        1,
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
    let samples = std::env::temp_dir().join(format!("roce-samples-{}.csv", std::process::id()));
    let client = lab.spawn(
        0,
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
            "--samples",
            &samples.to_string_lossy(),
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
    assert_eq!(
        s["client_reports"][0]["bytes"], expect,
        "the client's report, as perftest's server prints it"
    );
    let csv = std::fs::read_to_string(&samples).expect("samples file");
    let _ = std::fs::remove_file(&samples);
    let rows: Vec<Vec<u64>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len() as u64, iters * qps);
    assert!(rows.iter().all(|r| r.len() == 4 && r[3] >= r[2]));
    // 5000 bytes at MTU 1024: 5 packets per message, all of them received at least once.
    assert!(s["counters"]["rx_data_pkts"].as_u64().unwrap() >= 5 * iters * qps);
}

#[test]
fn write_lat_ping_pong_over_veth_reports_perftest_latency_columns() {
    let lab = Lab::pair();
    let server = lab.spawn(
        1,
        &["write_lat", "-d", "vb", "--time-limit", "50", "-p", "18556"],
    );
    let client = lab.spawn(
        0,
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

/// One client process driving 3 QPs to each of two servers, then two clients into one server
/// (an incast), all through a Linux bridge.
#[test]
fn n_qps_to_m_destinations_and_m_clients_into_one_server_through_a_bridge() {
    let lab = Lab::bridged(3);
    let (size, iters, qps) = (3000u64, 100u64, 3u64);
    let (s, n, q) = (size.to_string(), iters.to_string(), qps.to_string());
    let server_args = ["write_bw", "-d", "eth0", "--json", "--time-limit", "50"];
    let servers = [lab.spawn(1, &server_args), lab.spawn(2, &server_args)];
    let client = lab.spawn(
        0,
        &[
            "write_bw",
            "-d",
            "eth0",
            "-s",
            &s,
            "-n",
            &n,
            "-q",
            &q,
            "--json",
            "--time-limit",
            "50",
            "10.78.0.2",
            "10.78.0.3",
        ],
    );
    let c = json(&finish(client, Duration::from_secs(60)), "client");
    assert_eq!(c["bw"]["bytes"], 2 * size * iters * qps, "{c}");
    for (i, srv) in servers.into_iter().enumerate() {
        let r = json(&finish(srv, Duration::from_secs(60)), "server");
        assert_eq!(r["bytes_received"], size * iters * qps, "server {i}: {r}");
        assert_eq!(r["data_ok"], true);
        assert_eq!(c["servers"][i]["bytes_received"], size * iters * qps);
    }

    let server = lab.spawn(
        0,
        &[
            "write_bw",
            "-d",
            "eth0",
            "--clients",
            "2",
            "--json",
            "--time-limit",
            "50",
        ],
    );
    let client_args = [
        "write_bw",
        "-d",
        "eth0",
        "-s",
        &s,
        "-n",
        &n,
        "-q",
        &q,
        "--json",
        "--time-limit",
        "50",
        "10.78.0.1",
    ];
    let clients = [lab.spawn(1, &client_args), lab.spawn(2, &client_args)];
    for cl in clients {
        let c = json(&finish(cl, Duration::from_secs(60)), "incast client");
        assert_eq!(c["bw"]["bytes"], size * iters * qps);
        assert_eq!(
            c["servers"][0]["bytes_received"],
            size * iters * qps,
            "per client"
        );
    }
    let r = json(&finish(server, Duration::from_secs(60)), "incast server");
    assert_eq!(r["bytes_received"], 2 * size * iters * qps, "{r}");
    assert_eq!(r["clients"], 2);
    assert_eq!(r["client_reports"].as_array().map(Vec::len), Some(2));
    assert_eq!(r["data_ok"], true);
}

/// Seed 001's setup: a latency flow next to a bandwidth flow (-D, a fixed duration) between the
/// same two hosts, four processes on two interfaces, each endpoint ignoring the others' packets.
#[test]
fn write_lat_and_write_bw_share_the_interfaces() {
    let lab = Lab::pair();
    let bw_server = lab.spawn(
        1,
        &[
            "write_bw",
            "-d",
            "vb",
            "-p",
            "18557",
            "--json",
            "--time-limit",
            "50",
        ],
    );
    let lat_server = lab.spawn(
        1,
        &[
            "write_lat",
            "-d",
            "vb",
            "-p",
            "18558",
            "--json",
            "--time-limit",
            "50",
        ],
    );
    let bw = lab.spawn(
        0,
        &[
            "write_bw",
            "-d",
            "va",
            "-p",
            "18557",
            "-s",
            "8192",
            "-D",
            "0.5",
            "--dscp",
            "32",
            "--json",
            "--time-limit",
            "50",
            "10.77.0.2",
        ],
    );
    let lat = lab.spawn(
        0,
        &[
            "write_lat",
            "-d",
            "va",
            "-p",
            "18558",
            "-n",
            "300",
            "--json",
            "--time-limit",
            "50",
            "10.77.0.2",
        ],
    );
    let b = json(&finish(bw, Duration::from_secs(60)), "bw client");
    let l = json(&finish(lat, Duration::from_secs(60)), "lat client");
    let bs = json(&finish(bw_server, Duration::from_secs(60)), "bw server");
    let ls = json(&finish(lat_server, Duration::from_secs(60)), "lat server");
    // the bandwidth flow ran for a duration (-D): whatever it sent, the server received
    let sent = b["bw"]["bytes"].as_u64().unwrap();
    assert!(sent > 0 && sent % 8192 == 0);
    assert_eq!(bs["bytes_received"], sent);
    assert_eq!(
        b["bw"]["bw_peak_mb_per_sec"], 0.0,
        "perftest reports no peak with -D"
    );
    assert!(b["bw"]["duration_ns"].as_u64().unwrap() >= 500_000_000);
    assert_eq!(bs["data_ok"], true);
    assert_eq!(l["latency"]["iterations"], 300);
    assert_eq!(ls["messages_received"], 300);
    // Whichever flow finished first ran while the other flow's server was up and reading the
    // same interface: that server saw its packets and left them alone.
    let unknown = |v: &Value| v["counters"]["rx_unknown_qp"].as_u64().unwrap();
    assert!(unknown(&bs) + unknown(&ls) > 0, "{bs} {ls}");
}

/// PFC frames arriving on the client's interface while it sends are honoured and counted.
#[test]
fn pfc_frames_on_the_wire_are_counted_per_priority() {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use switch_ports::{AfPacketPort, Port};

    let lab = Lab::pair();
    let server = lab.spawn(
        1,
        &[
            "write_bw",
            "-d",
            "vb",
            "-p",
            "18559",
            "--json",
            "--time-limit",
            "50",
        ],
    );
    let client = lab.spawn(
        0,
        &[
            "write_bw",
            "-d",
            "va",
            "-p",
            "18559",
            "-s",
            "65536",
            "-n",
            "200",
            "--rate",
            "10",
            "--json",
            "--time-limit",
            "50",
            "10.77.0.2",
        ],
    );
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    // From the server's side of the veth: XOFF for priority 3 (DSCP 26), 1000 quanta
    // (51.2 us at 10 Gb/s), every 2 ms.
    let sender = lab.hosts[1].spawn(move || {
        let port = AfPacketPort::open("vb").expect("open vb");
        let frame =
            lossless_wire::pfc::MacControl::pfc_xoff(1 << 3, 1000).encode([2, 0, 0, 0, 0, 9]);
        let mut sent = 0u64;
        while !flag.load(Ordering::Relaxed) {
            port.send(&frame).expect("send PFC");
            sent += 1;
            std::thread::sleep(Duration::from_millis(2));
        }
        sent
    });
    let out = finish(client, Duration::from_secs(60));
    stop.store(true, Ordering::Relaxed);
    let sent = sender.join().expect("PFC sender");
    let c = json(&out, "client");
    json(&finish(server, Duration::from_secs(60)), "server");
    assert_eq!(c["bw"]["bytes"], 65536 * 200);
    let xoff = c["pause"]["rx_pfc_xoff"][3].as_u64().unwrap();
    assert!(xoff >= 1 && xoff <= sent, "{xoff} of {sent} counted");
    assert_eq!(c["pause"]["rx_pfc_frames"].as_u64().unwrap(), xoff);
    assert_eq!(c["pause"]["rx_pfc_xoff"][4], 0);
}

/// --rate paces the real interface: the payload rate never exceeds what the line rate allows
/// once headers, FCS, preamble and gap are counted (in-process tests check the exact spacing).
#[test]
fn rate_option_paces_the_interface() {
    let lab = Lab::pair();
    let server = lab.spawn(
        1,
        &[
            "write_bw",
            "-d",
            "vb",
            "-p",
            "18560",
            "--json",
            "--time-limit",
            "50",
        ],
    );
    let client = lab.spawn(
        0,
        &[
            "write_bw",
            "-d",
            "va",
            "-p",
            "18560",
            "-s",
            "65536",
            "-n",
            "40",
            "--rate",
            "0.1",
            "--json",
            "--time-limit",
            "50",
            "10.77.0.2",
        ],
    );
    let c = json(&finish(client, Duration::from_secs(60)), "client");
    json(&finish(server, Duration::from_secs(60)), "server");
    // 64 packets of 1024 bytes per message, each 1106 bytes on the wire (14 Ethernet + 20 IPv4
    // + 8 UDP + 12 BTH + 4 ICRC + 4 FCS + 20 preamble and gap; the first also has a 16-byte RETH).
    let wire_bits = 40.0 * (64.0 * 1106.0 + 16.0) * 8.0;
    let min_ns = wire_bits / 0.1e9 * 1e9;
    let took = c["bw"]["duration_ns"].as_f64().unwrap();
    assert!(took >= min_ns * 0.99, "{took} ns < {min_ns} ns at 100 Mb/s");
}
