//! The built binary between real veths (AF_PACKET), in a network namespace made for each test
//! and deleted on drop (`netns-test-support`). Needs root, as the switch-ports veth tests.
//!
//! ```text
//!   netns: h0 <==veth==> s0 [port 0]                 [port 2] s2 <==veth==> h2
//!          h1 <==veth==> s1 [port 1]   p4-switch
//! ```
//!
//! The traffic-manager tests run `tests/fixtures/prio_forward.p4` (compiled with the workspace's
//! p4-compile): ports 0 and 1 forward to port 2, on the queue of the IPv4 DSCP class selector.
//! Port 2 is shaped to 1 Mb/s, so the test's own user-space senders are "line rate" without
//! having to be fast: a 200-byte frame occupies the line for 1.792 ms.

mod common;
use common::fixture::compile_fixture;
use common::request;

use netns_test_support::Netns;
use serde_json::Value;
use std::io::{BufRead, Read};
use std::path::PathBuf;
use std::process::{Child, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use switch_ports::{AfPacketPort, Port, Recv, MAX_FRAME};
use switch_tm::wire_bytes;

const BIN: &str = env!("CARGO_BIN_EXE_p4-switch");

/// Line rate of the egress port (2) in the traffic-manager tests.
const RATE_BPS: u64 = 1_000_000;
/// Length of the test's data frames (as the pipeline sees them, FCS excluded).
const FRAME: usize = 200;
/// How long any single expected event may take on a loaded machine before the test fails.
const PATIENCE: Duration = Duration::from_secs(15);

/// The switch binary in a namespace; stopped with SIGTERM (and killed if a test panics first).
struct SwitchProcess {
    child: Option<Child>,
    stats: String,
    stderr: Arc<Mutex<String>>,
    dir: PathBuf,
}

impl SwitchProcess {
    /// Starts `p4-switch ARGS` in `ns` with the stats endpoint on an ephemeral port; `files`
    /// are written first into a directory of the test's own, `{dir}` in `args` names it.
    fn start(ns: &Netns, files: &[(&str, &str)], args: &[&str]) -> SwitchProcess {
        let dir = std::env::temp_dir().join(format!("{}-files", ns.name()));
        std::fs::create_dir_all(&dir).expect("create the test directory");
        for (name, text) in files {
            std::fs::write(dir.join(name), text).expect("write a test file");
        }
        let d = dir.display().to_string();
        let args: Vec<String> = args.iter().map(|a| a.replace("{dir}", &d)).collect();
        let mut child = ns
            .command(BIN)
            .args(&args)
            .args([
                "--stats-addr",
                "127.0.0.1:0",
                "--grpc-server-addr",
                "127.0.0.1:0",
            ])
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the switch");
        let mut err = std::io::BufReader::new(child.stderr.take().expect("stderr"));
        let mut banner = String::new();
        err.read_line(&mut banner).expect("banner");
        assert!(banner.starts_with("p4-switch running"), "{banner}");
        let stats = banner
            .split("stats on http://")
            .nth(1)
            .and_then(|r| r.split([',', '\n']).next())
            .expect("the banner names the stats address")
            .to_string();
        // Whatever the switch says later is kept for failure messages (and the pipe never fills).
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = err.read_to_string(&mut rest);
            sink.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push_str(&rest);
        });
        SwitchProcess {
            child: Some(child),
            stats,
            stderr,
            dir,
        }
    }

    /// `GET /stats` from inside the namespace.
    fn stats(&self, ns: &Netns) -> Value {
        let addr = self.stats.clone();
        let (status, body) = ns.run(move || request(&addr, "GET", "/stats", ""));
        assert_eq!(status, 200, "{body}");
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("/stats: {e}: {body}"))
    }

    fn request(&self, ns: &Netns, method: &'static str, path: &'static str, body: String) {
        let addr = self.stats.clone();
        let (status, answer) = ns.run(move || request(&addr, method, path, &body));
        assert_eq!(status, 200, "{method} {path}: {answer}");
    }

    /// Port 2's statistics from the traffic manager.
    fn port2(&self, ns: &Netns) -> Value {
        let s = self.stats(ns);
        let ports = s["tm"]["ports"].as_array().cloned().unwrap_or_default();
        ports
            .into_iter()
            .find(|p| p["port"] == 2)
            .unwrap_or_else(|| panic!("no port 2 in the TM stats: {s}"))
    }

    /// Polls port 2's statistics until `f` holds, failing after [`PATIENCE`].
    fn wait_port2(&self, ns: &Netns, what: &str, f: impl Fn(&Value) -> bool) -> Value {
        let t = Instant::now();
        loop {
            let p = self.port2(ns);
            if f(&p) {
                return p;
            }
            assert!(t.elapsed() < PATIENCE, "timed out waiting for {what}: {p}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// SIGTERM and the exit status.
    fn stop(mut self) -> ExitStatus {
        let mut child = self.child.take().expect("running");
        // SAFETY: kill(2) on our own child's pid (`ip netns exec` execs the switch in place).
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let t = Instant::now();
        loop {
            if let Some(s) = child.try_wait().expect("wait") {
                return s;
            }
            if t.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                panic!("the switch did not exit on SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for SwitchProcess {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
            let err = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
            if !err.is_empty() {
                eprintln!("p4-switch stderr:\n{err}");
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A namespace with veth pairs `sN <-> hN` for each port number.
fn lab(ports: &[u32]) -> Netns {
    let ns = Netns::new("p4sw");
    for p in ports {
        ns.veth(&format!("s{p}"), &format!("h{p}"), None);
    }
    ns
}

/// The host ends `hN`, opened inside the namespace.
fn hosts(ns: &Netns, ports: &'static [u32]) -> Vec<Arc<AfPacketPort>> {
    ns.run(move || {
        ports
            .iter()
            .map(|p| Arc::new(AfPacketPort::open(&format!("h{p}")).expect("open a host port")))
            .collect()
    })
}

/// A 200-byte IPv4 frame from host `src` with `dscp`, numbered `seq` (IPv4 identification);
/// protocol 253 (RFC 3692 experimental), so nothing in the kernel answers it.
fn data(src: u8, dscp: u8, seq: u16) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 0x22, 2, 0, 0, 0, 0, src, 0x08, 0x00];
    let total = (FRAME - 14) as u16;
    f.extend_from_slice(&[0x45, dscp << 2]);
    f.extend_from_slice(&total.to_be_bytes());
    f.extend_from_slice(&seq.to_be_bytes());
    f.extend_from_slice(&[0, 0, 64, 253, 0, 0, 10, 0, 0, src, 10, 0, 0, 2]);
    f.resize(FRAME, 0x5a);
    f
}

/// A data frame as received on h2.
#[derive(Debug, Clone, Copy)]
struct Seen {
    priority: u8,
    at: Instant,
}

fn parse(f: &[u8]) -> Option<Seen> {
    (f.len() >= 34 && f[12..14] == [0x08, 0x00] && f[23] == 253).then(|| Seen {
        priority: f[15] >> 5,
        at: Instant::now(),
    })
}

/// Receives data frames on `port` until `done(seen)` holds, then `linger` longer; fails after
/// [`PATIENCE`].
fn receive(
    port: &AfPacketPort,
    done: impl Fn(&[Seen]) -> bool,
    linger: Duration,
    what: &str,
) -> Vec<Seen> {
    let mut buf = vec![0u8; MAX_FRAME];
    let mut seen = Vec::new();
    let start = Instant::now();
    let mut done_at: Option<Instant> = None;
    loop {
        if done_at.is_none() && done(&seen) {
            done_at = Some(Instant::now());
        }
        if done_at.is_some_and(|t| t.elapsed() >= linger) {
            return seen;
        }
        assert!(
            done_at.is_some() || start.elapsed() < PATIENCE,
            "timed out waiting for {what}: {} frames seen",
            seen.len()
        );
        if let Ok(Recv::Frame(n)) = port.recv(&mut buf, Duration::from_millis(10)) {
            seen.extend(parse(&buf[..n]));
        }
    }
}

fn count(seen: &[Seen], priority: u8) -> usize {
    seen.iter().filter(|s| s.priority == priority).count()
}

/// Sends `n` data frames paced at the egress port's line rate (with catch-up: a late sender
/// bursts back onto its schedule, so the offered rate holds on average).
fn paced(port: Arc<AfPacketPort>, src: u8, dscp: u8, n: u16) -> std::thread::JoinHandle<()> {
    let gap = Duration::from_nanos(wire_bytes(FRAME as u32) * 8 * 1_000_000_000 / RATE_BPS);
    std::thread::spawn(move || {
        let start = Instant::now();
        for seq in 0..n {
            let due = start + gap * seq as u32;
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            port.send(&data(src, dscp, seq)).expect("send a data frame");
        }
    })
}

fn burst(port: &AfPacketPort, src: u8, dscp: u8, n: u16) {
    for seq in 0..n {
        port.send(&data(src, dscp, seq)).expect("send a data frame");
    }
}

fn pfc(port: &AfPacketPort, priority: u8, quanta: u16) {
    let f = lossless_wire::pfc::MacControl::pfc_xoff(1 << priority, quanta)
        .encode([2, 0, 0, 0, 0, 0x22]);
    port.send(&f).expect("send a PFC frame");
}

/// PFC quanta (512 bit times each) lasting at least `d` at [`RATE_BPS`].
fn quanta_for(d: Duration) -> u16 {
    let bit_ns = 1_000_000_000 / RATE_BPS;
    u16::try_from((d.as_nanos() as u64).div_ceil(512 * bit_ns)).expect("fits in 16 bits")
}

fn queue(port: &Value, q: usize) -> &Value {
    &port["queues"][q]
}

/// The lab of the traffic-manager tests: `prio_forward` on ports 0, 1, 2 with 8 priority
/// queues and the port configuration `config`; the switch and the host ends h0, h1, h2.
fn tm_lab(config: &str) -> (Netns, SwitchProcess, Vec<Arc<AfPacketPort>>) {
    let ns = lab(&[0, 1, 2]);
    let sw = SwitchProcess::start(
        &ns,
        &[
            ("prio_forward.json", &compile_fixture("prio_forward")),
            ("ports.yaml", config),
        ],
        &[
            "{dir}/prio_forward.json",
            "-i",
            "0@s0",
            "-i",
            "1@s1",
            "-i",
            "2@s2",
            "--priority-queues",
            "8",
            "--port-config",
            "{dir}/ports.yaml",
        ],
    );
    let h = hosts(&ns, &[0, 1, 2]);
    (ns, sw, h)
}

#[test]
fn forwards_between_veths() {
    let ns = lab(&[0, 1]);
    let prog = format!(
        "{}/../switch-v1model/tests/stf/l3.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let sw = SwitchProcess::start(&ns, &[], &[&prog, "-i", "0@s0", "-i", "1@s1"]);
    // l3.json sends anything that is not IPv4 to port 0 unchanged.
    let got = ns.run(|| {
        let h0 = AfPacketPort::open("h0").expect("open h0");
        let h1 = AfPacketPort::open("h1").expect("open h1");
        let mut frame = vec![0x5au8; 64];
        frame[..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        frame[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        frame[12] = 0x88;
        frame[13] = 0xb5;
        let mut buf = vec![0u8; MAX_FRAME];
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(10) {
            h1.send(&frame).expect("send on h1");
            while let Ok(Recv::Frame(len)) = h0.recv(&mut buf, Duration::from_millis(200)) {
                if buf[..len] == frame[..] {
                    return true;
                }
            }
        }
        false
    });
    let status = sw.stop();
    assert!(got, "the frame sent on h1 did not come out of h0");
    assert_eq!(status.code(), Some(0));
}

/// The transmit thread's failures reach the counters: a frame forwarded to a port whose
/// interface is down is counted as handed to the port (`tx_frames`) and as a send error.
#[test]
fn a_send_to_a_down_interface_is_a_tx_error() {
    let ns = lab(&[0, 1]);
    let prog = format!(
        "{}/../switch-v1model/tests/stf/l3.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let sw = SwitchProcess::start(&ns, &[], &[&prog, "-i", "0@s0", "-i", "1@s1"]);
    let down = ns
        .command("ip")
        .args(["link", "set", "s0", "down"])
        .status()
        .expect("run ip");
    assert!(down.success(), "ip link set s0 down: {down}");
    // l3.json sends anything that is not IPv4 to port 0 unchanged.
    ns.run(|| {
        let h1 = AfPacketPort::open("h1").expect("open h1");
        let mut frame = vec![0x5au8; 64];
        frame[..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        frame[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        frame[12..14].copy_from_slice(&[0x88, 0xb5]);
        h1.send(&frame).expect("send on h1");
    });
    let t = Instant::now();
    let s = loop {
        let s = sw.stats(&ns);
        if s["switch"]["tx_errors"] != 0 || t.elapsed() > PATIENCE {
            break s;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(s["switch"]["tx_errors"], 1, "{s}");
    assert_eq!(s["switch"]["tx_frames"]["0"], 1, "{s}");
    assert_eq!(sw.stop().code(), Some(0));
}

/// Issue 5's end-to-end check: two senders at the egress port's line rate into one port with a
/// small shared buffer overflow it; the drops are counted by reason and every frame the switch
/// received is either transmitted or counted as dropped.
#[test]
fn two_line_rate_senders_overflow_a_port_and_drops_are_counted_by_reason() {
    // 16 KiB in 256-byte cells: 64 cells, one per 200-byte frame.
    let config = format!(
        "buffer: {{total_bytes: 16384, cell_bytes: 256}}\nports:\n  - {{port: 2, rate_bps: {RATE_BPS}}}\n"
    );
    let (ns, sw, h) = tm_lab(&config);
    let per_sender = 150u16;
    let senders = [
        paced(h[0].clone(), 1, 8, per_sender),
        paced(h[1].clone(), 2, 8, per_sender),
    ];
    let h2 = h[2].clone();
    let rx_done = Arc::new(AtomicBool::new(false));
    let flag = rx_done.clone();
    // Until the senders are done, then one second of quiet (the queue drains in < 0.2 s).
    let receiver = std::thread::spawn(move || {
        receive(
            &h2,
            |_| flag.load(Ordering::Relaxed),
            Duration::from_secs(1),
            "the drain",
        )
    });
    for s in senders {
        s.join().expect("sender");
    }
    rx_done.store(true, Ordering::Relaxed);
    let seen = receiver.join().expect("receiver");
    let s = sw.stats(&ns);
    let received_by_switch: u64 = ["0", "1"]
        .iter()
        .map(|p| s["switch"]["rx_frames"][p].as_u64().unwrap_or(0))
        .sum();
    let p2 = sw.port2(&ns);
    let exhausted = p2["drops"]["buffer_exhausted"]
        .as_u64()
        .expect("drop reason");
    let status = sw.stop();

    assert_eq!(count(&seen, 1), seen.len(), "all on priority 1");
    assert!(exhausted > 0, "no buffer drops: {p2}");
    let total_drops: u64 = p2["drops"]
        .as_object()
        .map_or(0, |m| m.values().filter_map(Value::as_u64).sum());
    assert_eq!(total_drops, exhausted, "only the buffer ran out: {p2}");
    assert_eq!(queue(&p2, 1)["drops"]["buffer_exhausted"], exhausted);
    // Conservation: each frame the switch received left on h2 or was dropped, counted.
    assert_eq!(
        seen.len() as u64 + exhausted,
        received_by_switch,
        "{} seen on h2 + {exhausted} dropped != {received_by_switch} received; {p2}",
        seen.len()
    );
    assert_eq!(queue(&p2, 1)["tx_packets"], seen.len() as u64);
    // Tail drop happens only with the buffer full: its watermark reached every cell.
    assert_eq!(
        s["tm"]["buffer"]["peak_cells"],
        s["tm"]["buffer"]["total_cells"]
    );
    assert_eq!(p2["queues"][1]["depth_packets"], 0);
    assert_eq!(status.code(), Some(0));
}

/// PFC reception end to end: a PFC XOFF from the link partner on the egress link holds that
/// priority's queue while the others keep flowing; XON and quanta expiry resume it; a PFC storm
/// is detected by the watchdog, whose drop action flushes the queue and drops arrivals (counted),
/// and the queue is restored once the storm stops.
#[test]
fn pfc_on_the_egress_link_pauses_one_priority_and_the_watchdog_breaks_a_storm() {
    let port2 =
        format!("{{port: 2, rate_bps: {RATE_BPS}, pfc_enable: [3], pfc_to_queue: {{3: 3}}}}");
    let config = format!(
        "buffer: {{total_bytes: 65536, cell_bytes: 256}}\npfcwd_poll_interval_ms: 20\nports:\n  - {port2}\n"
    );
    let (ns, sw, h) = tm_lab(&config);
    let (h0, h1, h2) = (&h[0], &h[1], &h[2]);
    let paused = |p: &Value| queue(p, 3)["paused"] == true;

    // 1. XOFF for priority 3, longest quanta (33.5 s at 1 Mb/s): CS3 frames stay queued, CS1
    // frames go out. XON (quanta 0) releases the CS3 frames at once.
    pfc(h2, 3, u16::MAX);
    sw.wait_port2(&ns, "the XOFF", paused);
    burst(h0, 1, 24, 10);
    burst(h1, 2, 8, 10);
    let seen = receive(
        h2,
        |s| count(s, 1) == 10,
        Duration::from_millis(300),
        "CS1 frames",
    );
    assert_eq!(count(&seen, 3), 0, "a paused priority sent data");
    assert_eq!(count(&seen, 1), 10);
    let p = sw.port2(&ns);
    assert_eq!(queue(&p, 3)["depth_packets"], 10, "{p}");
    pfc(h2, 3, 0);
    let seen = receive(h2, |s| count(s, 3) == 10, Duration::ZERO, "CS3 after XON");
    assert_eq!(count(&seen, 3), 10);
    let p = sw.port2(&ns);
    assert_eq!(p["pfc_rx"][3], 2, "XOFF and XON counted: {p}");
    assert!(queue(&p, 3)["paused_ns"].as_u64() > Some(0), "{p}");
    assert_eq!(queue(&p, 3)["pfcwd"]["storms_detected"], 0);
    // The PFC frames were consumed by the port, not forwarded (port 2 forwards to port 0).
    let s = sw.stats(&ns);
    assert_eq!(s["switch"]["mac_control_consumed"], 2);
    assert_eq!(s["switch"]["tx_frames"]["0"], Value::Null);

    // 2. Quanta expiry: an XOFF of about one second and no XON. The CS3 frames sent while it
    // holds come out by themselves, not before the pause can have ended.
    let pause = Duration::from_secs(1);
    let xoff_sent = Instant::now();
    pfc(h2, 3, quanta_for(pause));
    sw.wait_port2(&ns, "the second XOFF", paused);
    burst(h0, 1, 24, 5);
    let seen = receive(h2, |s| count(s, 3) == 5, Duration::ZERO, "CS3 after expiry");
    let first = seen
        .iter()
        .find(|s| s.priority == 3)
        .map(|s| s.at.duration_since(xoff_sent));
    assert!(
        first >= Some(pause),
        "CS3 left {first:?} after an XOFF of {pause:?}"
    );
    let p = sw.port2(&ns);
    assert_eq!(queue(&p, 3)["paused"], false, "{p}");

    // 3. Watchdog: detection 100 ms, restoration 200 ms, drop; set while running.
    sw.request(
        &ns,
        "PUT",
        "/ports/2",
        format!("{{rate_bps: {RATE_BPS}, pfc_enable: [3], pfc_to_queue: {{3: 3}}, pfcwd: {{detection_time_ms: 100, restoration_time_ms: 200, action: drop}}}}"),
    );
    sw.request(&ns, "POST", "/clear", String::new());
    let storming = Arc::new(AtomicBool::new(true));
    let flag = storming.clone();
    let storm_port = h2.clone();
    // XOFF with the longest quanta every 10 ms: the partner is stuck sending pause frames.
    let storm = std::thread::spawn(move || {
        while flag.load(Ordering::Relaxed) {
            pfc(&storm_port, 3, u16::MAX);
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    sw.wait_port2(&ns, "the storm's pause", paused);
    burst(h0, 1, 24, 5);
    let p = sw.wait_port2(&ns, "storm detection", |p| {
        queue(p, 3)["pfcwd"]["storms_detected"] == 1
    });
    assert_eq!(queue(&p, 3)["pfcwd"]["stormed"], true, "{p}");
    assert_eq!(queue(&p, 3)["depth_packets"], 0, "drop action flushes: {p}");
    // While stormed: CS3 arrivals are dropped by the watchdog, CS1 keeps flowing.
    burst(h0, 1, 24, 10);
    burst(h1, 2, 8, 10);
    let seen = receive(
        h2,
        |s| count(s, 1) == 10,
        Duration::from_millis(200),
        "CS1 in a storm",
    );
    assert_eq!(count(&seen, 3), 0, "{p}");
    let p = sw.port2(&ns);
    assert_eq!(queue(&p, 3)["drops"]["pfc_watchdog"], 15, "{p}");
    assert_eq!(p["drops"]["pfc_watchdog"], 15, "{p}");
    // The storm stops (XON ends the last pause): the queue is restored and forwards again.
    storming.store(false, Ordering::Relaxed);
    storm.join().expect("storm sender");
    pfc(h2, 3, 0);
    let p = sw.wait_port2(&ns, "restoration", |p| {
        queue(p, 3)["pfcwd"]["restorations"] == 1
    });
    assert_eq!(queue(&p, 3)["pfcwd"]["stormed"], false, "{p}");
    burst(h0, 1, 24, 5);
    let seen = receive(
        h2,
        |s| count(s, 3) == 5,
        Duration::ZERO,
        "CS3 after restoration",
    );
    assert_eq!(count(&seen, 3), 5);
    assert_eq!(sw.stop().code(), Some(0));
}
