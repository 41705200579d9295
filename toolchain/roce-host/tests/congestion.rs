//! PFC reception and DCQCN between two endpoints on a simulated clock (see common/).

mod common;

use common::*;
use lossless_wire::pfc::MacControl;
use lossless_wire::rocev2::{build_frame, mark_ce, opcode, Bth, Ext, L3Header, Packet};
use roce_host::{WorkRequest, WrOp};

/// A never answers in some tests: let it keep sending without ACKs.
fn unlimited(mut c: roce_host::EndpointConfig) -> roce_host::EndpointConfig {
    c.max_outstanding = 1 << 22;
    c
}

fn post_write(sim: &mut Sim, i: usize, len: usize) {
    let info = sim.b.qp_info(sim.qb[i]).unwrap();
    let wr = WorkRequest {
        wr_id: 0,
        op: WrOp::Write {
            remote_va: info.va,
            rkey: info.rkey,
        },
        local_offset: 0,
        len,
    };
    sim.a.post(sim.now, sim.qa[i], wr).unwrap();
}

/// Times at which A transmits data frames, driving A alone (B never answers) until `until`.
fn a_data_times(sim: &mut Sim, until: u64, mut at: impl FnMut(&mut Sim, u64)) -> Vec<u64> {
    let mut times = Vec::new();
    let mut out = Vec::new();
    loop {
        at(sim, sim.now);
        while sim.a.poll_tx(sim.now, &mut out) {
            if data_psn(&out).is_some() {
                times.push(sim.now);
            }
        }
        if sim.now >= until {
            return times;
        }
        let wake = sim.a.next_wakeup().unwrap_or(u64::MAX);
        sim.now = wake.max(sim.now + 1).min(next_event(sim.now));
    }
}

/// Tests inject frames at round microsecond marks; never step past one.
fn next_event(now: u64) -> u64 {
    (now / 1000 + 1) * 1000
}

#[test]
fn pfc_stops_the_priority_for_quanta_times_512_bit_times_and_zero_resumes() {
    let mut sim = Sim::new(
        unlimited(config(MAC_A, IP_A)),
        config(MAC_B, IP_B),
        1,
        1 << 20,
    );
    let prio = sim.a.config().data_prio();
    assert_eq!(prio, 3, "DSCP 26 maps to priority 3");
    post_write(&mut sim, 0, 1 << 20);
    let xoff = MacControl::pfc_xoff(1 << prio, 1000).encode(MAC_B);
    let other = MacControl::pfc_xoff(1 << 5, 0xffff).encode(MAC_B);
    let xoff_long = MacControl::pfc_xoff(1 << prio, 0xffff).encode(MAC_B);
    let xon = MacControl::pfc_xon(1 << prio).encode(MAC_B);
    let times = a_data_times(&mut sim, 400_000, |s, now| match now {
        10_000 => {
            s.a.handle_frame(now, &xoff);
            s.a.handle_frame(now, &other);
        }
        200_000 => s.a.handle_frame(now, &xoff_long),
        250_000 => s.a.handle_frame(now, &xon),
        _ => {}
    });
    // 1000 quanta x 512 bit times at 10 Gb/s = 51.2 us: nothing in [10 us, 61.2 us).
    let pause_end = 10_000 + 1000 * 512 * 1_000_000_000 / 10_000_000_000;
    assert_eq!(pause_end, 61_200);
    assert!(
        times.iter().any(|&t| t < 10_000),
        "sending before the pause"
    );
    assert!(!times.iter().any(|&t| (10_001..pause_end).contains(&t)));
    assert!(
        times.contains(&pause_end),
        "first frame exactly when the pause ends: {:?}",
        &times[times.partition_point(|&t| t < 10_000)..][..3]
    );
    // 65535 quanta (3.36 ms) from 200 us, cut short by XON at 250 us.
    assert!(!times.iter().any(|&t| (200_001..250_000).contains(&t)));
    assert!(times.contains(&250_000), "XON resumes at once");
    let pc = sim.a.pause_counters();
    assert_eq!(pc.rx_pfc_frames, 4);
    assert_eq!(pc.rx_pfc_xoff[prio as usize], 2);
    assert_eq!(pc.rx_pfc_xon[prio as usize], 1);
    assert_eq!(pc.rx_pfc_xoff[5], 1, "priority 5 paused, data unaffected");
}

#[test]
fn link_pacing_spaces_frames_by_their_wire_time() {
    let mut sim = Sim::new(config(MAC_A, IP_A), config(MAC_B, IP_B), 1, 1 << 20);
    post_write(&mut sim, 0, 64 * 1024);
    let times = a_data_times(&mut sim, 1_000_000, |_, _| {});
    // MIDDLE packets: 14 + 20 + 8 + 12 + 1024 + 4 ICRC = 1082 bytes, + FCS, preamble and IFG
    // = 1106 bytes = 884.8 ns at 10 Gb/s.
    let gaps: Vec<u64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps[2..].iter().all(|&g| g == 884 || g == 885), "{gaps:?}");
    let total = times.last().unwrap() - times[1];
    assert_eq!(total / (times.len() as u64 - 2), 884);
}

/// A CNP from B's first QP to A's first QP, as B's notification point builds it.
fn cnp_to_a(sim: &Sim) -> Vec<u8> {
    let l3 = L3Header {
        dst_mac: MAC_A,
        src_mac: MAC_B,
        vlan: None,
        src_ip: IP_B,
        dst_ip: IP_A,
        dscp: 48,
        ecn: 2,
        ttl: 64,
        ip_id: 0,
        udp_src: 0xc000,
    };
    let bth = Bth {
        becn: true,
        ..Bth::new(opcode::CNP, sim.qa[0], 0)
    };
    let mut f = Vec::new();
    build_frame(&mut f, &l3, &bth, &Ext::CnpPad, &[]);
    f
}

#[test]
fn notification_point_sends_at_most_one_cnp_per_qp_per_interval() {
    let mut sim = Sim::new(
        config(MAC_A, IP_A),
        with_dcqcn(config(MAC_B, IP_B)),
        2,
        1 << 20,
    );
    post_write(&mut sim, 0, 200 * 1024);
    post_write(&mut sim, 1, 200 * 1024);
    // Collect A's data frames per QP, CE-marked as a congested switch would.
    let mut frames: [Vec<Vec<u8>>; 2] = [Vec::new(), Vec::new()];
    let mut out = Vec::new();
    for t in 0..1000u64 {
        while sim.a.poll_tx(t * 1000, &mut out) {
            let p = Packet::parse(&out).unwrap().unwrap();
            let q = sim.qb.iter().position(|&q| q == p.bth.dest_qp).unwrap();
            let mut f = out.clone();
            assert!(mark_ce(&mut f));
            frames[q].push(f);
        }
    }
    // Deliver them to B at chosen times and collect B's CNPs (time, QP they go to).
    let schedule: [(u64, usize, usize); 6] = [
        (0, 0, 3),      // QP 0: first CE -> CNP
        (10_000, 0, 3), // 10 us later: suppressed
        (10_000, 1, 2), // QP 1 is independent -> CNP
        (49_999, 0, 1), // still inside the 50 us interval
        (50_000, 0, 1), // 50 us after the first -> CNP
        (120_000, 1, 1),
    ];
    let mut next = [0usize; 2];
    let mut cnps = Vec::new();
    for (t, q, n) in schedule {
        for _ in 0..n {
            sim.b.handle_frame(t, &frames[q][next[q]]);
            next[q] += 1;
        }
        while sim.b.poll_tx(t, &mut out) {
            let p = Packet::parse(&out).unwrap().unwrap();
            if p.bth.opcode == opcode::CNP {
                assert!(p.bth.becn);
                assert_eq!(p.l3.dscp, 48);
                assert_eq!(p.ext, Ext::CnpPad);
                cnps.push((t, p.bth.dest_qp));
            }
        }
    }
    let (a0, a1) = (sim.qa[0], sim.qa[1]);
    assert_eq!(
        cnps,
        vec![(0, a0), (10_000, a1), (50_000, a0), (120_000, a1)]
    );
    assert_eq!(sim.b.counters().rx_ce_marked, 11);
    assert_eq!(sim.b.counters().tx_cnps, 4);
}

#[test]
fn reaction_point_cuts_on_cnp_paces_at_the_new_rate_and_recovers_without_cnps() {
    let mut sim = Sim::new(
        unlimited(with_dcqcn(config(MAC_A, IP_A))),
        config(MAC_B, IP_B),
        1,
        64 << 20,
    );
    let line = 10e9;
    post_write(&mut sim, 0, 64 << 20);
    let cnp = cnp_to_a(&sim);
    let times = a_data_times(&mut sim, 200_000, |s, now| {
        if now == 20_000 {
            s.a.handle_frame(now, &cnp);
        }
    });
    let rp = sim.a.reaction_point(sim.qa[0]).unwrap();
    // One CNP with alpha = 1: RC = line / 2; then the rate timer (55 us) gives fast recovery
    // steps RC = (RT + RC) / 2 at 75 us, 130 us, 185 us.
    let rc_after = |steps: i32| line - line / 2.0 / 2f64.powi(steps);
    assert_eq!(rp.cnps(), 1);
    assert!(
        (rp.rate_bps() - rc_after(3)).abs() < 1.0,
        "{}",
        rp.rate_bps()
    );
    // Between the CNP and the first timer event, frames leave at 5 Gb/s: 1106 wire bytes
    // every 1769.6 ns.
    let window: Vec<u64> = times
        .iter()
        .copied()
        .filter(|&t| (22_000..75_000).contains(&t))
        .collect();
    let gaps: Vec<u64> = window.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.iter().all(|&g| (1769..=1770).contains(&g)), "{gaps:?}");
    // Without further CNPs the rate climbs back to line rate.
    let times = a_data_times(&mut sim, 5_000_000, |_, _| {});
    assert!(!times.is_empty());
    let rp = sim.a.reaction_point(sim.qa[0]).unwrap();
    assert_eq!(rp.rate_bps(), line);
    assert_eq!(sim.a.counters().rx_cnps, 1);
}

#[test]
fn ce_marking_switch_drives_the_rate_down_and_dcqcn_off_ignores_cnps() {
    // A congested switch marks every data packet from A for the first 2 ms.
    let run = |dcqcn: bool| {
        let ca = config(MAC_A, IP_A);
        let cb = config(MAC_B, IP_B);
        let (ca, cb) = if dcqcn {
            (with_dcqcn(ca), with_dcqcn(cb))
        } else {
            (ca, cb)
        };
        let mut sim = Sim::new(ca, cb, 1, 32 << 20);
        sim.keep_log = true;
        post_write(&mut sim, 0, 32 << 20);
        let marking_until = 2_000_000;
        let clock = std::rc::Rc::new(std::cell::Cell::new(0u64));
        let c = clock.clone();
        sim.tap = Box::new(move |dir, f| {
            if dir == Dir::AtoB && c.get() < marking_until {
                mark_ce(f);
            }
            Verdict::Deliver
        });
        let mut min_rate = f64::MAX;
        sim.run_until(marking_until, |s| {
            clock.set(s.now);
            if let Some(rp) = s.a.reaction_point(s.qa[0]) {
                min_rate = min_rate.min(rp.rate_bps());
            }
            false
        });
        (sim, min_rate)
    };
    let (sim, min_rate) = run(true);
    // At most one CNP per 50 us: at most 40 (+1 at the boundary) in 2 ms, spaced >= 50 us.
    let cnps = sim.b.counters().tx_cnps;
    assert!((5..=41).contains(&cnps), "{cnps} CNPs");
    let cnp_times: Vec<u64> = sim
        .log
        .iter()
        .filter(|(_, d, f)| {
            *d == Dir::BtoA && Packet::parse(f).unwrap().unwrap().bth.opcode == opcode::CNP
        })
        .map(|(t, _, _)| *t)
        .collect();
    assert_eq!(cnp_times.len() as u64, cnps);
    assert!(
        cnp_times.windows(2).all(|w| w[1] - w[0] >= 50_000),
        "{cnp_times:?}"
    );
    assert_eq!(sim.a.counters().rx_cnps, cnps);
    assert!(min_rate < 1e9, "rate fell to {min_rate}");
    let (sim, _) = run(false);
    assert_eq!(sim.b.counters().tx_cnps, 0, "DCQCN off: no CNPs");
    assert!(sim.b.counters().rx_ce_marked > 0);
}

#[test]
fn dcqcn_off_counts_cnps_and_keeps_line_rate() {
    let mut sim = Sim::new(
        unlimited(config(MAC_A, IP_A)),
        config(MAC_B, IP_B),
        1,
        1 << 20,
    );
    post_write(&mut sim, 0, 1 << 20);
    let cnp = cnp_to_a(&sim);
    let times = a_data_times(&mut sim, 100_000, |s, now| {
        if now == 20_000 {
            s.a.handle_frame(now, &cnp);
        }
    });
    assert_eq!(sim.a.counters().rx_cnps, 1);
    assert!(sim.a.reaction_point(sim.qa[0]).is_none());
    let gaps: Vec<u64> = times
        .windows(2)
        .filter(|w| w[0] > 20_000)
        .map(|w| w[1] - w[0])
        .collect();
    assert!(
        !gaps.is_empty() && gaps.iter().all(|&g| g == 884 || g == 885),
        "{gaps:?}"
    );
}
