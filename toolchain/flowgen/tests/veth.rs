//! `flowgen run -i` on a veth pair in a fresh network namespace (root needed): what arrives on
//! the peer is, frame for frame and byte for byte, what the same run writes to a pcap file, and
//! it arrives at the profile's pace; with the TX ring, with plain sends, and with a ring that
//! cannot be set up (the one-line fallback).

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use switch_ports::{AfPacketPort, Port, Recv, MAX_FRAME};

const BIN: &str = env!("CARGO_BIN_EXE_flowgen");

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A namespace holding `va <-> vb`, both up, deleted on drop.
struct Netns(String);

impl Netns {
    fn new(tag: &str) -> Netns {
        let name = format!("fg{tag}{}", std::process::id());
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        ip(&["netns", "add", &name]);
        let ns = Netns(name);
        let n = ns.0.as_str();
        ip(&[
            "-n", n, "link", "add", "va", "type", "veth", "peer", "name", "vb",
        ]);
        // No IPv6 chatter (router and listener solicitations) among the frames under test.
        for dev in ["va", "vb"] {
            let _ = Command::new("ip")
                .args(["netns", "exec", n, "sysctl", "-qw"])
                .arg(format!("net.ipv6.conf.{dev}.disable_ipv6=1"))
                .status();
            ip(&["-n", n, "link", "set", dev, "up"]);
        }
        ns
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// Captures IPv4 frames on `vb` inside `ns` from a thread that entered the namespace, each with
/// its arrival time, until `stop` is set.
fn capture(ns: &str, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Vec<(Instant, Vec<u8>)>> {
    let path = format!("/var/run/netns/{ns}");
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        let f = std::fs::File::open(&path).expect("open netns");
        // SAFETY: setns on this thread only, with a namespace descriptor we hold open.
        let rc = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
        let port = AfPacketPort::open("vb").expect("open vb");
        ready_tx.send(()).expect("ready");
        let mut buf = vec![0u8; MAX_FRAME];
        let mut frames = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            if let Recv::Frame(n) = port
                .recv(&mut buf, Duration::from_millis(50))
                .expect("recv")
            {
                if buf.get(12..14) == Some(&[0x08, 0x00]) {
                    frames.push((Instant::now(), buf[..n].to_vec()));
                }
            }
        }
        frames
    });
    ready_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("capture ready");
    h
}

fn seed_profile() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles/cur_flow_single.yaml")
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("flowgen-veth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    dir.join(name)
}

/// The frames (generator time, bytes) that `args` produce, from a pcap-out run (the tests run
/// in parallel: `tag` keeps their files apart).
fn reference(tag: &str, args: &[&str]) -> Vec<(Duration, Vec<u8>)> {
    let pcap = tmp(&format!("{tag}-ref.pcap"));
    let out = Command::new(BIN)
        .args(["run", "-q", "--pcap-out"])
        .arg(&pcap)
        .args(args)
        .output()
        .expect("run flowgen");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    switch_ports::pcap::read_file(&pcap)
        .expect("read reference pcap")
        .into_iter()
        .map(|r| (r.timestamp, r.data))
        .collect()
}

/// What a run on the veth did: stderr, the JSON result, when flowgen was started, and what
/// arrived on `vb` when.
struct Sent {
    stderr: String,
    result: serde_json::Value,
    started: Instant,
    frames: Vec<(Instant, Vec<u8>)>,
}

/// Runs flowgen on `va` with `extra` options.
fn send_on_veth(tag: &str, args: &[&str], extra: &[&str]) -> Sent {
    let ns = Netns::new(tag);
    let stop = Arc::new(AtomicBool::new(false));
    let cap = capture(&ns.0, stop.clone());
    let json = tmp(&format!("{tag}.json"));
    let started = Instant::now();
    let out = Command::new("ip")
        .args([
            "netns", "exec", &ns.0, BIN, "run", "-q", "-i", "va", "--json",
        ])
        .arg(&json)
        .args(args)
        .args(extra)
        .output()
        .expect("run flowgen");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    // The last frames are still crossing the veth when the sender exits.
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    let frames = cap.join().expect("capture thread");
    let result =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("result")).expect("json");
    Sent {
        stderr,
        result,
        started,
        frames,
    }
}

/// 5 x 100 flows/s of ten 64-byte packets 200 us apart for 1 s: 5000 frames, 5 kpps, heap
/// scheduler so the order does not depend on how the wall clock steps the generator.
const RUN: [&str; 8] = ["-f", "PROFILE", "-m", "5", "-d", "1", "-s", "pq"];

fn run_args() -> Vec<String> {
    let p = seed_profile().display().to_string();
    RUN.iter()
        .map(|a| {
            if *a == "PROFILE" {
                p.clone()
            } else {
                a.to_string()
            }
        })
        .collect()
}

fn check_arrivals(what: &str, expect: &[(Duration, Vec<u8>)], sent: &Sent) {
    let (v, got) = (&sent.result, &sent.frames);
    assert_eq!(v["packets"].as_u64(), Some(expect.len() as u64), "{what}");
    assert_eq!(v["tx_dropped"].as_u64(), Some(0), "{what}");
    assert_eq!(got.len(), expect.len(), "{what}: frames that arrived");
    for (i, ((_, e), (_, g))) in expect.iter().zip(got).enumerate() {
        assert_eq!(e, g, "{what}: frame {i}");
    }
    // Paced, not blasted: no frame arrives before its due time (generator time counts from
    // when the sender started, which is after we spawned it; the heap scheduler fires exactly
    // on time). Load on the machine can only delay frames, so this holds however busy it is;
    // the delay of the last frame is bounded loosely.
    for (i, ((due, _), (at, _))) in expect.iter().zip(got).enumerate() {
        let since = at.duration_since(sent.started);
        assert!(
            since >= *due,
            "{what}: frame {i} due at {due:?} arrived {since:?} after the start"
        );
    }
    let (Some((last_due, _)), Some((last_at, _))) = (expect.last(), got.last()) else {
        panic!("{what}: nothing expected");
    };
    let last = last_at.duration_since(sent.started);
    assert!(
        last < *last_due + Duration::from_secs(3),
        "{what}: the last frame, due at {last_due:?}, arrived after {last:?}"
    );
}

#[test]
fn ring_and_plain_sends_arrive_byte_for_byte_at_the_profile_rate() {
    let args = run_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let expect = reference("both", &args);
    assert!(expect.len() > 4_000, "{} frames", expect.len());
    for method in ["ring", "plain"] {
        let sent = send_on_veth(method, &args, &["--tx", method]);
        let stderr = &sent.stderr;
        assert_eq!(
            sent.result["tx_methods"],
            serde_json::json!([method]),
            "{stderr}"
        );
        assert!(!stderr.contains("TX ring unavailable"), "{stderr}");
        check_arrivals(method, &expect, &sent);
    }
}

#[test]
fn a_ring_that_cannot_be_set_up_falls_back_to_plain_sends() {
    let args = run_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let expect = reference("fallback", &args);
    // 4e9 slots of 2 KiB (8 TB) is more than the kernel will allocate for a ring.
    let sent = send_on_veth("fb", &args, &["--tx-ring-slots", "4000000000"]);
    let stderr = &sent.stderr;
    let notes: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("TX ring unavailable"))
        .collect();
    assert_eq!(notes.len(), 1, "{stderr}");
    assert!(
        notes[0].starts_with("flowgen: TX ring unavailable (va: ")
            && notes[0].ends_with("; va sends one frame per send()"),
        "{stderr}"
    );
    assert_eq!(sent.result["tx_methods"], serde_json::json!(["plain"]));
    check_arrivals("fallback", &expect, &sent);
}
