//! AF_PACKET ports over a real veth pair, in a network namespace made for each test:
//!
//! ```text
//!   netns swp-<pid>-<n>:   [AfPacketPort] va <==veth==> vb [AfPacketPort]
//! ```
//!
//! Needs root (CAP_NET_ADMIN for the namespace, CAP_NET_RAW for the sockets).

use std::time::Duration;

use netns_test_support::Netns;
use switch_ports::{AfPacketPort, Port, PortError, Recv, MAX_FRAME};

const WAIT: Duration = Duration::from_secs(5);
/// IEEE 802 local experimental EtherType: nothing else in the namespace sends it.
const TEST_ETHERTYPE: [u8; 2] = [0x88, 0xb5];

/// A namespace holding veth pair va/vb with `mtu`, deleted (with the veths) when dropped.
fn veth_ns(mtu: u32) -> Netns {
    let ns = Netns::new("swp");
    ns.veth("va", "vb", Some(mtu));
    ns
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
    let ns = veth_ns(1500);
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
    let ns = veth_ns(9000);
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
    let ns = veth_ns(1500);
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
