//! Reliable-connection transport between two endpoints on a simulated clock (see common/).

mod common;

use common::*;
use lossless_wire::rocev2::{build_frame, opcode, Bth, Ext, L3Header, Packet, Reth};
use roce_host::{
    Endpoint, EndpointConfig, IncomingKind, WcStatus, WorkRequest, WrOp, PAYLOAD_REF_LEN,
};

/// Posts WRITEs of `sizes` from A's QP `i` buffer (filled with a pattern when `fill`, else left
/// as created: zeros) to B at consecutive offsets, runs until all complete, and checks B's
/// buffer byte for byte.
fn write_and_check(sim: &mut Sim, i: usize, sizes: &[usize], limit_ns: u64, fill: bool) {
    let total: usize = sizes.iter().sum();
    let data = if fill {
        let data = pattern(total, i as u8);
        sim.a.memory_mut(sim.qa[i]).unwrap()[..total].copy_from_slice(&data);
        data
    } else {
        vec![0; total]
    };
    let info = sim.b.qp_info(sim.qb[i]).unwrap();
    let mut off = 0;
    for (n, &len) in sizes.iter().enumerate() {
        let wr = WorkRequest {
            wr_id: n as u64,
            op: WrOp::Write {
                remote_va: info.va + off as u64,
                rkey: info.rkey,
            },
            local_offset: off,
            len,
        };
        sim.a.post(sim.now, sim.qa[i], wr).unwrap();
        off += len;
    }
    let mut done = Vec::new();
    let finished = sim.run_until(limit_ns, |s| {
        done.extend(s.a.take_completions());
        done.len() == sizes.len()
    });
    assert!(finished, "only {} of {} completed", done.len(), sizes.len());
    assert!(done.iter().all(|c| c.status == WcStatus::Success));
    let ids: Vec<u64> = done.iter().map(|c| c.wr_id).collect();
    assert_eq!(ids, (0..sizes.len() as u64).collect::<Vec<_>>(), "in order");
    let got = &sim.b.memory(sim.qb[i]).unwrap()[..total];
    if let Some(pos) = got.iter().zip(&data).position(|(a, b)| a != b) {
        panic!(
            "byte {pos} differs: got {:#x}, wrote {:#x}",
            got[pos], data[pos]
        );
    }
}

const SIZES: [usize; 8] = [1, 0, 3, 1024, 1025, 4096 * 3 + 7, 100_000, 64];

#[test]
fn writes_of_every_size_land_byte_exact() {
    let mut sim = Sim::new(config(MAC_A, IP_A), config(MAC_B, IP_B), 1, 1 << 20);
    write_and_check(&mut sim, 0, &SIZES, 1_000_000_000, true);
    let inc = sim.b.take_incoming();
    assert_eq!(inc.len(), SIZES.len());
    assert_eq!(inc[6].len, 100_000);
    assert!(matches!(inc[6].kind, IncomingKind::Write { .. }));
    assert_eq!(sim.a.counters().tx_retransmitted_pkts, 0);
    assert_eq!(sim.b.counters().rx_out_of_sequence, 0);
}

/// Payloads by reference: the same frames at the same times, but for the payload bytes of data
/// frames of at least the reference's length, with the ICRC computed over the real bytes (of a
/// pattern when `fill`, of the zeros a new buffer holds otherwise); the receiver places the bytes
/// of the sender's memory; an endpoint that takes only carried payloads finds the ICRC wrong.
fn same_frames_by_reference(fill: bool) {
    let by_ref = |mut c: EndpointConfig| {
        c.payload_by_reference = true;
        c
    };
    let mut full = Sim::new(config(MAC_A, IP_A), config(MAC_B, IP_B), 1, 1 << 20);
    let (ca, cb) = (by_ref(config(MAC_A, IP_A)), by_ref(config(MAC_B, IP_B)));
    let mut named = Sim::new(ca, cb, 1, 1 << 20);
    full.keep_log = true;
    named.keep_log = true;
    write_and_check(&mut full, 0, &SIZES, 1_000_000_000, fill);
    write_and_check(&mut named, 0, &SIZES, 1_000_000_000, fill);
    assert_eq!(full.log.len(), named.log.len());
    let mut by_reference = 0;
    for ((t, dir, f), (t2, dir2, f2)) in full.log.iter().zip(&named.log) {
        assert_eq!((t, dir, f.len()), (t2, dir2, f2.len()));
        let p = Packet::parse(f).unwrap().unwrap();
        let tail = p.payload.len() + p.bth.pad as usize + 4;
        let head = f.len() - tail;
        assert_eq!(f[..head], f2[..head], "headers at {t} ns");
        assert_eq!(f[f.len() - 4..], f2[f2.len() - 4..], "ICRC at {t} ns");
        if p.payload.len() >= PAYLOAD_REF_LEN {
            assert_ne!(f[head..], f2[head..], "payload at {t} ns");
            by_reference += 1;
            let mut plain = Endpoint::new(config(MAC_B, IP_B));
            plain.handle_frame(0, f2);
            assert_eq!(plain.counters().rx_bad_icrc, 1);
        } else {
            assert_eq!(f, f2);
        }
    }
    // 100 000 bytes alone are 98 packets of 1024.
    assert!(by_reference > 98, "{by_reference}");
    assert_eq!(named.b.counters().rx_bad_icrc, 0);
}

#[test]
fn writes_by_reference_send_the_same_frames_and_land_byte_exact() {
    same_frames_by_reference(true);
}

/// MTU-sized payloads of a never-written buffer take the ICRC over their zeros from a table
/// (lossless-wire's `ZeroRun`), the others from the bytes: all as the carried frames'.
#[test]
fn zeros_by_reference_send_the_same_frames_and_icrcs() {
    same_frames_by_reference(false);
}

/// A never-written sender's buffer sends its zeros by reference: a receiving buffer of zeros
/// skips the copy, a written one takes them.
#[test]
fn zeros_by_reference_overwrite_a_written_buffer() {
    let by_ref = |mut c: EndpointConfig| {
        c.payload_by_reference = true;
        c
    };
    let (ca, cb) = (by_ref(config(MAC_A, IP_A)), by_ref(config(MAC_B, IP_B)));
    let mut sim = Sim::new(ca, cb, 2, 1 << 16);
    sim.b.memory_mut(sim.qb[1]).unwrap().fill(0x5a);
    for i in 0..2 {
        let info = sim.b.qp_info(sim.qb[i]).unwrap();
        let wr = WorkRequest {
            wr_id: i as u64,
            op: WrOp::Write {
                remote_va: info.va + 1024,
                rkey: info.rkey,
            },
            local_offset: 0,
            len: 8192,
        };
        sim.a.post(sim.now, sim.qa[i], wr).unwrap();
    }
    let mut done = Vec::new();
    assert!(sim.run_until(1_000_000_000, |s| {
        done.extend(s.a.take_completions());
        done.len() == 2
    }));
    assert!(done.iter().all(|c| c.status == WcStatus::Success));
    let untouched = sim.b.memory(sim.qb[0]).unwrap();
    assert!(untouched.iter().all(|&b| b == 0));
    let written = sim.b.memory(sim.qb[1]).unwrap();
    assert!(written[1024..1024 + 8192].iter().all(|&b| b == 0));
    assert!(written[..1024].iter().all(|&b| b == 0x5a));
    assert!(written[1024 + 8192..].iter().all(|&b| b == 0x5a));
}

#[test]
fn send_lands_at_the_start_of_the_buffer() {
    let mut sim = Sim::new(config(MAC_A, IP_A), config(MAC_B, IP_B), 1, 1 << 16);
    let data = pattern(5000, 9);
    sim.a.memory_mut(sim.qa[0]).unwrap()[100..5100].copy_from_slice(&data);
    let wr = WorkRequest {
        wr_id: 7,
        op: WrOp::Send,
        local_offset: 100,
        len: 5000,
    };
    sim.a.post(0, sim.qa[0], wr).unwrap();
    let mut inc = Vec::new();
    assert!(sim.run_until(1_000_000_000, |s| {
        inc.extend(s.b.take_incoming());
        !inc.is_empty()
    }));
    assert_eq!(inc[0].kind, IncomingKind::Send);
    assert_eq!(inc[0].len, 5000);
    assert_eq!(&sim.b.memory(sim.qb[0]).unwrap()[..5000], &data[..]);
}

#[test]
fn three_hundred_qps_share_the_link() {
    let n = 300;
    let mut sim = Sim::new(config(MAC_A, IP_A), config(MAC_B, IP_B), n, 8192);
    sim.keep_log = true;
    for i in 0..n {
        let data = pattern(3000, i as u8);
        sim.a.memory_mut(sim.qa[i]).unwrap()[..3000].copy_from_slice(&data);
        let info = sim.b.qp_info(sim.qb[i]).unwrap();
        let wr = WorkRequest {
            wr_id: i as u64,
            op: WrOp::Write {
                remote_va: info.va,
                rkey: info.rkey,
            },
            local_offset: 0,
            len: 3000,
        };
        sim.a.post(0, sim.qa[i], wr).unwrap();
    }
    let mut done = 0;
    assert!(sim.run_until(1_000_000_000, |s| {
        done += s.a.take_completions().len();
        done == n
    }));
    for i in 0..n {
        assert_eq!(
            &sim.b.memory(sim.qb[i]).unwrap()[..3000],
            &pattern(3000, i as u8)[..],
            "QP {i}"
        );
    }
    // Round-robin: the first n data packets on the wire come from n different QPs.
    let first: std::collections::HashSet<u32> = sim
        .log
        .iter()
        .filter(|(_, d, _)| *d == Dir::AtoB)
        .take(n)
        .map(|(_, _, f)| Packet::parse(f).unwrap().unwrap().bth.dest_qp)
        .collect();
    assert_eq!(first.len(), n);
}

#[test]
fn go_back_n_recovers_from_loss_by_nak_and_by_timeout() {
    let mut sim = Sim::new(config(MAC_A, IP_A), config(MAC_B, IP_B), 1, 1 << 20);
    let start = sim.a.qp_info(sim.qa[0]).unwrap().psn;
    // 100_000 bytes at MTU 1024: 98 packets (with the sizes before it, more).
    let total_pkts: u32 = SIZES.iter().map(|&s| s.div_ceil(1024).max(1) as u32).sum();
    let lost_mid = (start + 5) & 0xff_ffff;
    let lost_last = (start + total_pkts - 1) & 0xff_ffff;
    let mut dropped = Vec::new();
    let mut acks_dropped = 0;
    sim.tap = Box::new(move |dir, f| {
        if dir == Dir::BtoA {
            // lose the first ACK too
            if acks_dropped == 0 {
                acks_dropped += 1;
                return Verdict::Drop;
            }
            return Verdict::Deliver;
        }
        match data_psn(f) {
            Some(p) if (p == lost_mid || p == lost_last) && !dropped.contains(&p) => {
                dropped.push(p);
                Verdict::Drop
            }
            _ => Verdict::Deliver,
        }
    });
    write_and_check(&mut sim, 0, &SIZES, 10_000_000_000, true);
    let (a, b) = (sim.a.counters(), sim.b.counters());
    assert!(a.rx_naks >= 1, "the gap after PSN start+5 is NAKed");
    assert!(b.rx_out_of_sequence >= 1);
    assert!(
        a.retry_timeouts >= 1,
        "nothing follows the lost last packet: only the timer recovers it"
    );
    assert!(a.tx_retransmitted_pkts >= 2);
    assert!(sim.now >= 67_108_864, "recovery waited for the retry timer");
}

#[test]
fn go_back_n_recovers_from_reordering() {
    let mut sim = Sim::new(config(MAC_A, IP_A), config(MAC_B, IP_B), 1, 1 << 20);
    let start = sim.a.qp_info(sim.qa[0]).unwrap().psn;
    let late = (start + 3) & 0xff_ffff;
    let mut once = false;
    sim.tap = Box::new(move |dir, f| {
        if dir == Dir::AtoB && data_psn(f) == Some(late) && !once {
            once = true;
            return Verdict::Hold;
        }
        Verdict::Deliver
    });
    write_and_check(&mut sim, 0, &SIZES, 10_000_000_000, true);
    let (a, b) = (sim.a.counters(), sim.b.counters());
    // start+4 arrived before start+3 (and start+5 may still be ahead of the expected PSN
    // when start+3 fills the hole: a second sequence error episode).
    assert!(b.rx_out_of_sequence >= 1);
    assert!(b.tx_naks >= 1);
    assert_eq!(a.rx_naks, b.tx_naks);
    assert!(a.tx_retransmitted_pkts >= 1);
    assert_eq!(a.retry_timeouts, 0, "the NAK, not the timer, recovered");
}

#[test]
fn retry_exhaustion_fails_the_work_request_and_flushes_the_rest() {
    let mut sim = Sim::new(config(MAC_A, IP_A), config(MAC_B, IP_B), 1, 1 << 16);
    sim.tap = Box::new(|dir, _| {
        if dir == Dir::AtoB {
            Verdict::Drop
        } else {
            Verdict::Deliver
        }
    });
    let info = sim.b.qp_info(sim.qb[0]).unwrap();
    for n in 0..2 {
        let wr = WorkRequest {
            wr_id: n,
            op: WrOp::Write {
                remote_va: info.va,
                rkey: info.rkey,
            },
            local_offset: 0,
            len: 100,
        };
        sim.a.post(0, sim.qa[0], wr).unwrap();
    }
    let mut done = Vec::new();
    assert!(sim.run_until(10_000_000_000, |s| {
        done.extend(s.a.take_completions());
        done.len() == 2
    }));
    assert_eq!(done[0].status, WcStatus::RetryExceeded);
    assert_eq!(done[1].status, WcStatus::Flushed);
    assert_eq!(
        sim.a.counters().retry_timeouts,
        8,
        "retry_cnt 7, then the 8th fails"
    );
    assert!(sim.a.qp_stats(sim.qa[0]).unwrap().error);
}

/// A valid WRITE_ONLY frame from A to B's first QP with the given PSN, rkey and payload.
fn write_frame(sim: &Sim, psn: u32, rkey: u32, va_off: u64, payload: &[u8]) -> Vec<u8> {
    let info = sim.b.qp_info(sim.qb[0]).unwrap();
    write_frame_to(info.qpn, info.va + va_off, psn, rkey, payload)
}

fn write_frame_to(qpn: u32, va: u64, psn: u32, rkey: u32, payload: &[u8]) -> Vec<u8> {
    let l3 = L3Header {
        dst_mac: MAC_B,
        src_mac: MAC_A,
        vlan: None,
        src_ip: IP_A,
        dst_ip: IP_B,
        dscp: 26,
        ecn: 2,
        ttl: 64,
        ip_id: 1,
        udp_src: 0xc000,
    };
    let bth = Bth {
        ack_req: true,
        ..Bth::new(opcode::RC_WRITE_ONLY, qpn, psn)
    };
    let reth = Ext::Reth(Reth {
        va,
        rkey,
        dma_len: payload.len() as u32,
    });
    let mut f = Vec::new();
    build_frame(&mut f, &l3, &bth, &reth, payload);
    f
}

#[test]
fn bad_packets_are_counted_and_dropped_never_placed() {
    let mut sim = Sim::new(config(MAC_A, IP_A), config(MAC_B, IP_B), 1, 4096);
    let epsn = sim.a.qp_info(sim.qa[0]).unwrap().psn;
    let rkey = sim.b.qp_info(sim.qb[0]).unwrap().rkey;
    let good = write_frame(&sim, epsn, rkey, 0, b"good data");

    // every truncation of a valid frame
    for len in 0..good.len() {
        sim.b.handle_frame(0, &good[..len]);
    }
    let c = sim.b.counters().clone();
    assert_eq!(c.rx_frames, good.len() as u64);
    assert_eq!(
        c.rx_malformed + c.rx_ignored + c.rx_bad_icrc,
        good.len() as u64,
        "{c:?}"
    );
    // a flipped payload bit: ICRC mismatch
    let mut bad = good.clone();
    let at = bad.len() - 8;
    bad[at] ^= 0x40;
    sim.b.handle_frame(0, &bad);
    assert_eq!(sim.b.counters().rx_bad_icrc, c.rx_bad_icrc + 1);
    // a TTL rewrite without the checksum update: the ICRC masks the TTL, the IP checksum
    // catches it
    let mut ttl = good.clone();
    ttl[14 + 8] = 1;
    sim.b.handle_frame(0, &ttl);
    assert_eq!(sim.b.counters().rx_bad_ip_checksum, 1);
    // PSN ahead of the expected one: dropped, one NAK
    sim.b
        .handle_frame(0, &write_frame(&sim, epsn + 2, rkey, 0, b"ahead"));
    sim.b
        .handle_frame(0, &write_frame(&sim, epsn + 3, rkey, 0, b"ahead"));
    assert_eq!(sim.b.counters().rx_out_of_sequence, 2);
    // wrong rkey, and a WRITE beyond the buffer: remote access errors
    sim.b
        .handle_frame(0, &write_frame(&sim, epsn, rkey ^ 1, 0, b"key"));
    sim.b
        .handle_frame(0, &write_frame(&sim, epsn, rkey, 4090, b"past the end"));
    assert_eq!(sim.b.counters().rx_access_error, 2);
    // an unknown QP and random garbage
    sim.b
        .handle_frame(0, &write_frame_to(0x55, 0, epsn, rkey, b"x"));
    // Random corruption of the bytes the ICRC covers unmasked (after the BTH's FECN/BECN
    // byte): every such frame must be caught, none may crash the endpoint.
    let icrc_before = sim.b.counters().rx_bad_icrc;
    let mut x: u32 = 12345;
    for n in 0..2000 {
        let mut f = good.clone();
        for _ in 0..(n % 7 + 1) {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let i = 47 + (x >> 8) as usize % (f.len() - 47);
            f[i] = !good[i];
        }
        sim.b.handle_frame(0, &f);
    }
    assert_eq!(sim.b.counters().rx_bad_icrc - icrc_before, 2000);
    assert!(sim.b.take_incoming().is_empty(), "nothing was placed");
    assert_eq!(&sim.b.memory(sim.qb[0]).unwrap()[..9], &[0; 9]);
    // the frames a receiver answers: NAKs for the sequence error and the access errors
    let c = sim.b.counters();
    assert!(c.rx_unknown_qp >= 1);
    assert_eq!(c.rx_data_pkts, 4);

    // The good frame still lands afterwards.
    sim.b.handle_frame(0, &good);
    let inc = sim.b.take_incoming();
    assert_eq!(inc.len(), 1);
    assert_eq!(&sim.b.memory(sim.qb[0]).unwrap()[..9], b"good data");
}

#[test]
fn remote_access_error_fails_the_requester() {
    let mut sim = Sim::new(config(MAC_A, IP_A), config(MAC_B, IP_B), 1, 4096);
    let info = sim.b.qp_info(sim.qb[0]).unwrap();
    let wr = WorkRequest {
        wr_id: 1,
        op: WrOp::Write {
            remote_va: info.va,
            rkey: info.rkey ^ 0xff,
        },
        local_offset: 0,
        len: 10,
    };
    sim.a.post(0, sim.qa[0], wr).unwrap();
    let mut done = Vec::new();
    assert!(sim.run_until(1_000_000_000, |s| {
        done.extend(s.a.take_completions());
        !done.is_empty()
    }));
    assert!(matches!(done[0].status, WcStatus::RemoteError(_)));
    assert_eq!(sim.b.counters().rx_access_error, 1);
}

#[test]
fn frames_carry_dscp_pcp_ect_and_a_udp_port_derived_from_the_qp() {
    let mut ca = config(MAC_A, IP_A);
    ca.dscp = 46;
    ca.pcp = Some(5);
    ca.vlan = 100;
    let mut sim = Sim::new(ca, config(MAC_B, IP_B), 2, 4096);
    sim.keep_log = true;
    for i in 0..2 {
        let info = sim.b.qp_info(sim.qb[i]).unwrap();
        let wr = WorkRequest {
            wr_id: 0,
            op: WrOp::Write {
                remote_va: info.va,
                rkey: info.rkey,
            },
            local_offset: 0,
            len: 100,
        };
        sim.a.post(0, sim.qa[i], wr).unwrap();
    }
    let mut n = 0;
    assert!(sim.run_until(1_000_000_000, |s| {
        n += s.a.take_completions().len();
        n == 2
    }));
    let sent: Vec<Packet> = sim
        .log
        .iter()
        .filter(|(_, d, _)| *d == Dir::AtoB)
        .map(|(_, _, f)| Packet::parse(f).unwrap().unwrap())
        .collect();
    assert_eq!(sent.len(), 2);
    for (i, p) in sent.iter().enumerate() {
        assert_eq!(p.l3.dscp, 46);
        assert_eq!(p.l3.vlan, Some((5, 100)));
        assert_eq!(p.l3.ecn, lossless_wire::rocev2::ECN_ECT0);
        assert_eq!(p.l3.udp_src, lossless_wire::rocev2::udp_src_port(sim.qa[i]));
    }
    assert_ne!(sent[0].l3.udp_src, sent[1].l3.udp_src);
    assert_eq!(sim.a.config().data_prio(), 5, "the PCP is the PFC priority");
}
