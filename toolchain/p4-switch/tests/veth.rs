//! The built binary forwarding between real veths (AF_PACKET), in a network namespace made for
//! the test and deleted on drop. Needs root, as the switch-ports veth tests.
//!
//! ```text
//!   netns: h0 <==veth==> s0 [p4-switch port 0]   [port 1] s1 <==veth==> h1
//! ```

use std::fs::File;
use std::io::BufRead;
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use switch_ports::{AfPacketPort, Port, Recv, MAX_FRAME};

const BIN: &str = env!("CARGO_BIN_EXE_p4-switch");

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

struct Ns(String);

impl Drop for Ns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

fn in_ns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let path = format!("/var/run/netns/{ns}");
    std::thread::spawn(move || {
        let fd = File::open(&path).expect("open netns");
        // SAFETY: setns on a valid namespace descriptor; it affects this thread only.
        let rc = unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
        f()
    })
    .join()
    .expect("test thread")
}

#[test]
fn forwards_between_veths() {
    let ns = Ns(format!("p4sw-{}", std::process::id()));
    ip(&["netns", "add", &ns.0]);
    let n = ns.0.as_str();
    let _ = Command::new("ip")
        .args(["netns", "exec", n, "sh", "-c"])
        .arg("echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6; true")
        .status();
    for (s, h) in [("s0", "h0"), ("s1", "h1")] {
        ip(&["-n", n, "link", "add", s, "type", "veth", "peer", "name", h]);
        ip(&["-n", n, "link", "set", s, "up"]);
        ip(&["-n", n, "link", "set", h, "up"]);
    }
    let prog = format!(
        "{}/../switch-engine/tests/stf/l3.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut child = Command::new("ip")
        .args(["netns", "exec", n, BIN, &prog, "-i", "0@s0", "-i", "1@s1"])
        .args([
            "--stats-addr",
            "127.0.0.1:0",
            "--grpc-server-addr",
            "127.0.0.1:0",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the switch");
    let mut banner = String::new();
    let stderr = child.stderr.take().expect("stderr");
    std::io::BufReader::new(stderr)
        .read_line(&mut banner)
        .expect("banner");
    assert!(banner.starts_with("p4-switch running"), "{banner}");
    // l3.json sends anything that is not IPv4 to port 0 unchanged.
    let got = in_ns(n, || {
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
    // SAFETY: kill(2) on our own child's pid (ip netns exec execs the switch in place).
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if t.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            panic!("the switch did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(got, "the frame sent on h1 did not come out of h0");
    assert_eq!(status.code(), Some(0));
}
