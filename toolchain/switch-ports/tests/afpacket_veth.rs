//! AF_PACKET ports over a real veth pair, in a network namespace made for each test:
//!
//! ```text
//!   netns swp-<pid>-<n>:   [AfPacketPort] va <==veth==> vb [AfPacketPort]
//! ```
//!
//! Needs root (CAP_NET_ADMIN for the namespace, CAP_NET_RAW for the sockets).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use switch_ports::{AfPacketPort, Port, PortError, Recv, MAX_FRAME};

const WAIT: Duration = Duration::from_secs(5);
/// IEEE 802 local experimental EtherType: nothing else in the namespace sends it.
const TEST_ETHERTYPE: [u8; 2] = [0x88, 0xb5];

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A namespace holding veth pair va/vb, deleted (with the veths) when dropped, even on panic.
struct VethNs {
    name: String,
}

impl VethNs {
    fn new(mtu: u32) -> VethNs {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "swp-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        ip(&["netns", "add", &name]);
        let ns = VethNs { name };
        // IPv6 autoconfiguration would put router solicitations on the wire.
        let disable = "/proc/sys/net/ipv6/conf/default/disable_ipv6";
        let _ = Command::new("ip")
            .args(["netns", "exec", &ns.name, "sh", "-c"])
            .arg(format!("[ -e {disable} ] && echo 1 > {disable}; true"))
            .status();
        let mtu = mtu.to_string();
        let n = ns.name.as_str();
        ip(&[
            "-n", n, "link", "add", "va", "mtu", &mtu, "type", "veth", "peer", "name", "vb", "mtu",
            &mtu,
        ]);
        ip(&["-n", n, "link", "set", "va", "up"]);
        ip(&["-n", n, "link", "set", "vb", "up"]);
        ns
    }

    /// Runs `f` on a thread that has entered the namespace, so its sockets live there.
    fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> T {
        let path = format!("/var/run/netns/{}", self.name);
        std::thread::spawn(move || {
            let ns = File::open(&path).expect("open netns");
            // SAFETY: setns on a valid namespace descriptor; it affects this thread only.
            let rc = unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
            f()
        })
        .join()
        .expect("test thread")
    }
}

impl Drop for VethNs {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

fn frame(payload_len: usize, tag: u8) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 0xbb, 0x02, 0, 0, 0, 0, 0xaa];
    f.extend_from_slice(&TEST_ETHERTYPE);
    f.extend((0..payload_len).map(|i| (i as u8).wrapping_add(tag)));
    f
}

/// The next frame of ours on `port`, skipping anything the kernel itself sends.
fn recv_test_frame(port: &AfPacketPort) -> Vec<u8> {
    let mut buf = vec![0u8; MAX_FRAME];
    loop {
        match port.recv(&mut buf, WAIT).expect("recv") {
            Recv::Frame(n) => {
                let f = &buf[..n];
                let ethertype_at = if f.len() >= 18 && f[12..14] == [0x81, 0x00] {
                    16
                } else {
                    12
                };
                if f.len() >= ethertype_at + 2
                    && f[ethertype_at..ethertype_at + 2] == TEST_ETHERTYPE
                {
                    return f.to_vec();
                }
            }
            other => panic!("expected a frame on {}, got {other:?}", port.name()),
        }
    }
}

#[test]
fn frames_cross_a_veth_pair_and_own_copies_are_not_received() {
    let ns = VethNs::new(1500);
    ns.run(|| {
        let a = AfPacketPort::open("va").unwrap();
        let b = AfPacketPort::open("vb").unwrap();
        let small = frame(46, 1);
        let full = frame(1500, 2);
        a.send(&small).unwrap();
        a.send(&full).unwrap();
        b.send(&frame(100, 3)).unwrap();
        assert_eq!(recv_test_frame(&b), small);
        assert_eq!(recv_test_frame(&b), full);
        // Port a's first test frame is the one b sent: its own two were not looped back.
        assert_eq!(recv_test_frame(&a), frame(100, 3));
    });
}

#[test]
fn jumbo_frames_and_vlan_tags_survive() {
    let ns = VethNs::new(9000);
    ns.run(|| {
        let a = AfPacketPort::open("va").unwrap();
        let b = AfPacketPort::open("vb").unwrap();
        let jumbo = frame(9000, 7);
        a.send(&jumbo).unwrap();
        assert_eq!(recv_test_frame(&b), jumbo);

        // 802.1Q, PCP 3 (the RoCE class), VLAN 100: veth offload strips the tag on receive and
        // the port must put it back.
        let mut tagged = vec![
            0x02, 0, 0, 0, 0, 0xbb, 0x02, 0, 0, 0, 0, 0xaa, 0x81, 0x00, 0x60, 0x64,
        ];
        tagged.extend_from_slice(&TEST_ETHERTYPE);
        tagged.extend_from_slice(&[0x5a; 50]);
        a.send(&tagged).unwrap();
        assert_eq!(recv_test_frame(&b), tagged);
    });
}

#[test]
fn small_buffer_reports_the_frame_length_and_missing_interface_is_named() {
    let ns = VethNs::new(1500);
    ns.run(|| {
        let a = AfPacketPort::open("va").unwrap();
        let b = AfPacketPort::open("vb").unwrap();
        a.send(&frame(200, 0)).unwrap();
        let mut small = [0u8; 64];
        let err = loop {
            match b.recv(&mut small, WAIT) {
                Err(e) => break e,
                Ok(Recv::Frame(_)) => continue, // a kernel frame that fit; ours did not
                Ok(other) => panic!("no frame: {other:?}"),
            }
        };
        assert!(
            matches!(
                err,
                PortError::Truncated {
                    len: 214,
                    capacity: 64,
                    ..
                }
            ),
            "{err}"
        );
        let missing = AfPacketPort::open("nosuch0")
            .err()
            .expect("no such interface");
        assert!(
            missing
                .to_string()
                .starts_with("port nosuch0: look up interface:"),
            "{missing}"
        );
    });
}
