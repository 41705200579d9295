//! Traffic manager behaviour under a simulated clock: one port, sources feeding its queues, and a
//! driver that jumps from event to event (arrivals, `next_event_ns`) the way the switch's egress
//! loop will.

use lossless_wire::pfc::{quanta_to_ns, MacControl};
use switch_tm::{
    wire_bytes, ClearScope, ConfigFormat, DropReason, PfcwdAction, PfcwdConfig, PortConfig,
    QueueConfig, RxVerdict, SchedulerType, Tm, TmConfig,
};

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;
const G10: u64 = 10_000_000_000;

fn tm_with(ports: Vec<PortConfig>, total_bytes: u64, poll_ms: u64) -> Tm<u64> {
    let cfg = TmConfig {
        buffer: switch_tm::config::BufferConfig {
            total_bytes,
            cell_bytes: None,
            chip: None,
        },
        pfcwd_poll_interval_ms: poll_ms,
        catch_up_ns: 0,
        ports,
    };
    Tm::new(cfg, 0).unwrap()
}

/// Offers `len`-byte frames to `queue`: back to back (always a few waiting) when `every_ns` is
/// `None`, else one every `every_ns`.
struct Source {
    queue: usize,
    len: u32,
    every_ns: Option<u64>,
    next_ns: u64,
}

fn backlogged(queue: usize, len: u32) -> Source {
    Source {
        queue,
        len,
        every_ns: None,
        next_ns: 0,
    }
}

fn periodic(queue: usize, len: u32, every_ns: u64) -> Source {
    Source {
        queue,
        len,
        every_ns: Some(every_ns),
        next_ns: 0,
    }
}

/// Frame bytes sent per queue by frames that started before `until`.
fn run(tm: &mut Tm<u64>, port: u32, sources: &mut [Source], from: u64, until: u64) -> [u64; 8] {
    let mut sent = [0u64; 8];
    let mut now = from;
    let mut idle_polls = 0;
    loop {
        for s in sources.iter().filter(|s| s.every_ns.is_none()) {
            while tm.queue_depth(port, s.queue).unwrap().packets < 4 {
                if tm.enqueue(now, port, s.queue, s.len, 0).is_err() {
                    break;
                }
            }
        }
        let arrival = sources
            .iter()
            .filter(|s| s.every_ns.is_some())
            .map(|s| s.next_ns)
            .min();
        let departure = tm.next_event_ns(now, port);
        let t = match (arrival, departure) {
            (Some(a), Some(d)) => a.min(d),
            (a, d) => a.or(d).expect("nothing left to simulate"),
        };
        if t >= until {
            return sent;
        }
        now = t;
        if arrival == Some(t) {
            for s in sources
                .iter_mut()
                .filter(|s| s.every_ns.is_some() && s.next_ns == t)
            {
                let _ = tm.enqueue(now, port, s.queue, s.len, 0);
                s.next_ns += s.every_ns.unwrap();
            }
            continue;
        }
        match tm.dequeue(now, port) {
            Some(d) => {
                sent[d.queue] += d.len as u64;
                idle_polls = 0;
            }
            None => {
                idle_polls += 1;
                assert!(
                    idle_polls < 3,
                    "next_event_ns {t} promised work that dequeue refused"
                );
            }
        }
    }
}

fn within(actual: f64, expected: f64, tolerance: f64) -> bool {
    (actual - expected).abs() <= tolerance * expected
}

#[test]
fn shaping_holds_line_rate_within_two_percent_counting_preamble_ifg_and_padding() {
    for len in [1500u32, 60, 40] {
        let mut tm = tm_with(vec![PortConfig::new(1, G10)], 16 << 20, 200);
        let sent = run(&mut tm, 1, &mut [backlogged(0, len)], 0, S);
        let goodput_bps = sent[0] as f64 * 8.0;
        // A 40-byte frame is padded to 64 on the wire like a 60-byte one.
        let expected = G10 as f64 * len as f64 / wire_bytes(len) as f64;
        assert!(
            within(goodput_bps, expected, 0.02),
            "len {len}: {goodput_bps} b/s of frames, expected {expected}"
        );
        assert_eq!(wire_bytes(len), (len as u64 + 4).max(64) + 20);
    }
}

#[test]
fn a_port_is_never_faster_than_its_rate_and_reports_transmission_times() {
    let mut tm = tm_with(vec![PortConfig::new(1, G10)], 1 << 20, 200);
    for _ in 0..3 {
        tm.enqueue(0, 1, 0, 1500, 0).unwrap();
    }
    let first = tm.dequeue(0, 1).unwrap();
    assert_eq!((first.tx_start_ns, first.tx_end_ns), (0, 1220)); // 1524 B x 8 / 10 Gb/s = 1219.2 ns
    assert!(tm.dequeue(1000, 1).is_none(), "the line is still busy");
    assert_eq!(tm.next_event_ns(1000, 1), Some(1220));
    let second = tm.dequeue(1220, 1).unwrap();
    assert_eq!(second.tx_start_ns, 1219);
    assert_eq!(second.deq_timedelta_ns, 1220);
    assert_eq!(second.deq_qdepth, 1);
}

#[test]
fn strict_priority_serves_the_higher_queue_first_and_gives_the_rest_to_lower_ones() {
    let mut tm = tm_with(vec![PortConfig::new(1, G10)], 16 << 20, 200);
    // Queue 7 offers 30 % of the line; queues 0 and 3 are backlogged; queue 3 beats 0 entirely.
    let every = wire_bytes(1000) * 8 * S / G10 * 10 / 3;
    let sent = run(
        &mut tm,
        1,
        &mut [
            periodic(7, 1000, every),
            backlogged(3, 1000),
            backlogged(0, 1000),
        ],
        0,
        100 * MS,
    );
    let total: u64 = sent.iter().sum();
    let share = |q: usize| sent[q] as f64 / total as f64;
    assert!(within(share(7), 0.30, 0.05), "queue 7 share {}", share(7));
    assert!(within(share(3), 0.70, 0.05), "queue 3 share {}", share(3));
    assert_eq!(sent[0], 0, "queue 0 must starve under strict priority");
}

fn shares(tm: &mut Tm<u64>, sources: &mut [Source]) -> [f64; 8] {
    let sent = run(tm, 1, sources, 0, 100 * MS);
    let total: u64 = sent.iter().sum();
    sent.map(|b| b as f64 / total as f64)
}

#[test]
fn dwrr_shares_bytes_by_weight_within_five_percent() {
    let mut port = PortConfig::new(1, G10);
    port.queues = vec![
        QueueConfig::scheduled(1, SchedulerType::Dwrr, Some(25)),
        QueueConfig::scheduled(2, SchedulerType::Dwrr, Some(75)),
    ];
    let mut tm = tm_with(vec![port], 16 << 20, 200);
    // Different frame sizes: DWRR is fair in bytes, not packets.
    let s = shares(&mut tm, &mut [backlogged(1, 1500), backlogged(2, 200)]);
    assert!(within(s[1], 0.25, 0.05), "queue 1 {}", s[1]);
    assert!(within(s[2], 0.75, 0.05), "queue 2 {}", s[2]);
}

#[test]
fn rate_pps_spaces_a_queues_packets_and_lets_other_queues_use_the_line() {
    // bmv2's set_queue_rate: queue 7 (strict, highest) limited to 1000 packets/s, so queue 0
    // (backlogged) gets the line between them; the limit applies whatever the packet size.
    let mut port = PortConfig::new(1, G10);
    port.queues = vec![QueueConfig {
        rate_pps: Some(1000),
        ..QueueConfig::scheduled(7, SchedulerType::Strict, None)
    }];
    let mut tm = tm_with(vec![port], 16 << 20, 200);
    let sent = run(
        &mut tm,
        1,
        &mut [backlogged(7, 100), backlogged(0, 1500)],
        0,
        100 * MS,
    );
    // 100 ms at 1000 packets/s: the first at t = 0, then one per ms.
    assert_eq!(sent[7], 100 * 100);
    let line = G10 as f64 / 8.0 * 0.1;
    let q0 = sent[0] as f64 * wire_bytes(1500) as f64 / 1500.0;
    assert!(q0 > line * 0.98, "queue 0 sent {} bytes", sent[0]);
    // A limited queue waits for its gap: next_event_ns says when.
    let mut tm = tm_with(
        vec![PortConfig {
            queues: vec![QueueConfig {
                rate_pps: Some(1000),
                ..QueueConfig::scheduled(0, SchedulerType::Strict, None)
            }],
            ..PortConfig::new(1, G10)
        }],
        1 << 20,
        200,
    );
    for _ in 0..2 {
        tm.enqueue(0, 1, 0, 64, 0).unwrap();
    }
    assert!(tm.dequeue(0, 1).is_some());
    assert!(tm.dequeue(500_000, 1).is_none());
    assert_eq!(tm.next_event_ns(500_000, 1), Some(MS));
    assert!(tm.dequeue(MS, 1).is_some());
    let bad = "ports:\n  - {port: 1, rate_bps: 1000, queues: [{queue: 0, rate_pps: 0}]}\nbuffer: {total_bytes: 1024}\n";
    let err = TmConfig::parse(bad, ConfigFormat::Yaml)
        .unwrap_err()
        .to_string();
    assert!(err.contains("ports[0].queues[0].rate_pps"), "{err}");
}

#[test]
fn dwrr_shares_follow_weights_with_shallow_queues() {
    // Each queue holds at most 4 frames (less than one MTU of 9100 bytes) and is offered 75 % of
    // the line: both are congested, so the shares must still follow the weights, even though a
    // queue can empty within its turn.
    let mut port = PortConfig::new(1, G10);
    port.queues = vec![
        QueueConfig {
            limit_packets: Some(4),
            ..QueueConfig::scheduled(1, SchedulerType::Dwrr, Some(1))
        },
        QueueConfig {
            limit_packets: Some(4),
            ..QueueConfig::scheduled(2, SchedulerType::Dwrr, Some(3))
        },
    ];
    let mut tm = tm_with(vec![port], 16 << 20, 200);
    let every = wire_bytes(1500) * 8 * S / G10 * 4 / 3;
    let s = shares(
        &mut tm,
        &mut [periodic(1, 1500, every), periodic(2, 1500, every)],
    );
    assert!(within(s[1], 0.25, 0.05), "queue 1 {}", s[1]);
    assert!(within(s[2], 0.75, 0.05), "queue 2 {}", s[2]);
}

#[test]
fn wrr_shares_packets_by_weight() {
    let mut port = PortConfig::new(1, G10);
    port.queues = vec![
        QueueConfig::scheduled(1, SchedulerType::Wrr, Some(1)),
        QueueConfig::scheduled(2, SchedulerType::Wrr, Some(1)),
    ];
    let mut tm = tm_with(vec![port], 16 << 20, 200);
    let s = shares(&mut tm, &mut [backlogged(1, 1500), backlogged(2, 500)]);
    // Equal packets, so bytes 3:1.
    assert!(within(s[1], 0.75, 0.05), "queue 1 {}", s[1]);
}

#[test]
fn strict_queues_go_before_the_dwrr_group_which_shares_the_rest() {
    let mut port = PortConfig::new(1, G10);
    port.queues = vec![
        QueueConfig::scheduled(0, SchedulerType::Dwrr, Some(50)),
        QueueConfig::scheduled(1, SchedulerType::Dwrr, Some(50)),
    ];
    let mut tm = tm_with(vec![port], 16 << 20, 200);
    let every = wire_bytes(1000) * 8 * S / G10 * 5; // 20 % of the line
    let s = shares(
        &mut tm,
        &mut [
            periodic(6, 1000, every),
            backlogged(0, 1000),
            backlogged(1, 1000),
        ],
    );
    assert!(within(s[6], 0.20, 0.05), "strict queue 6 {}", s[6]);
    assert!(within(s[0], 0.40, 0.05), "dwrr queue 0 {}", s[0]);
    assert!(within(s[1], 0.40, 0.05), "dwrr queue 1 {}", s[1]);
}

fn pfc_port(port: u32, rate: u64) -> PortConfig {
    let mut p = PortConfig::new(port, rate);
    p.pfc_enable = vec![3, 4];
    p
}

#[test]
fn pfc_pause_holds_the_mapped_queue_until_expiry_while_others_flow() {
    let mut tm = tm_with(vec![pfc_port(1, G10)], 1 << 20, 200);
    for q in [3, 0] {
        tm.enqueue(0, 1, q, 100, q as u64).unwrap();
    }
    tm.on_mac_control(0, 1, &MacControl::pfc_xoff(1 << 3, 1000))
        .unwrap();
    let until = quanta_to_ns(1000, G10); // 51.2 us
    let d = tm.dequeue(0, 1).unwrap();
    assert_eq!(d.queue, 0, "unpaused queue 0 still sends");
    assert_eq!(tm.next_event_ns(1000, 1), Some(until));
    assert!(tm.dequeue(until - 1, 1).is_none());
    assert!(tm.is_paused(until - 1, 1, 3));
    assert_eq!(
        tm.queue_depth(1, 3).unwrap().packets,
        1,
        "paused queue keeps its packet"
    );
    let d = tm.dequeue(until, 1).unwrap();
    assert_eq!((d.queue, d.pkt), (3, 3));
    let st = tm.stats(until);
    assert_eq!(st.ports[0].queues[3].paused_ns, until);
    assert_eq!(st.ports[0].pfc_rx[3], 1);
}

#[test]
fn zero_quanta_resumes_at_once_and_a_new_frame_restarts_the_timer() {
    let mut tm = tm_with(vec![pfc_port(1, G10)], 1 << 20, 200);
    tm.enqueue(0, 1, 4, 100, 7).unwrap();
    tm.on_mac_control(0, 1, &MacControl::pfc_xoff(1 << 4, 0xffff))
        .unwrap();
    // A new frame at 10 us with 100 quanta shortens the pause to 10 us + 5.12 us.
    tm.on_mac_control(10_000, 1, &MacControl::pfc_xoff(1 << 4, 100))
        .unwrap();
    assert_eq!(tm.next_event_ns(10_000, 1), Some(15_120));
    tm.on_mac_control(11_000, 1, &MacControl::pfc_xoff(1 << 4, 0xffff))
        .unwrap();
    assert!(tm.dequeue(20_000, 1).is_none());
    tm.on_mac_control(20_000, 1, &MacControl::pfc_xon(1 << 4))
        .unwrap();
    assert_eq!(tm.dequeue(20_000, 1).unwrap().pkt, 7);
    assert_eq!(tm.stats(30_000).ports[0].queues[4].paused_ns, 20_000);
}

#[test]
fn pfc_for_a_priority_not_enabled_is_counted_but_ignored() {
    let mut tm = tm_with(vec![pfc_port(1, G10)], 1 << 20, 200);
    tm.enqueue(0, 1, 5, 100, 0).unwrap();
    tm.on_mac_control(0, 1, &MacControl::pfc_xoff(1 << 5, 0xffff))
        .unwrap();
    assert!(tm.dequeue(0, 1).is_some());
    assert_eq!(tm.stats(0).ports[0].pfc_rx[5], 1);
}

#[test]
fn priority_to_queue_map_redirects_the_pause() {
    let mut port = pfc_port(1, G10);
    port.pfc_to_queue.insert(3, 6);
    let mut tm = tm_with(vec![port], 1 << 20, 200);
    tm.enqueue(0, 1, 6, 100, 6).unwrap();
    tm.enqueue(0, 1, 3, 100, 3).unwrap();
    tm.on_mac_control(0, 1, &MacControl::pfc_xoff(1 << 3, 0xffff))
        .unwrap();
    assert_eq!(
        tm.dequeue(0, 1).unwrap().pkt,
        3,
        "queue 6 is paused, 3 is not"
    );
    assert!(tm.is_paused(0, 1, 6));
}

#[test]
fn pause_duration_scales_with_port_rate() {
    let mut tm = tm_with(
        vec![
            pfc_port(1, G10),
            pfc_port(2, 25_000_000_000),
            pfc_port(3, 100_000_000_000),
        ],
        1 << 20,
        200,
    );
    let mut ends = Vec::new();
    for port in 1..=3 {
        tm.enqueue(0, port, 3, 100, 0).unwrap();
        tm.on_mac_control(0, port, &MacControl::pfc_xoff(1 << 3, 0xffff))
            .unwrap();
        ends.push(tm.next_event_ns(0, port).unwrap());
    }
    // 65535 x 512 bit times: 3.355 ms at 10G, 1.342 ms at 25G, 335.5 us at 100G.
    assert_eq!(ends, vec![3_355_392, 1_342_156, 335_539]);
}

#[test]
fn pause_802_3x_holds_every_queue_unless_disabled() {
    let mut on = PortConfig::new(1, G10);
    on.pfc_enable = vec![3];
    let mut off = PortConfig::new(2, G10);
    off.pause_enable = false;
    let mut tm = tm_with(vec![on, off], 1 << 20, 200);
    for port in [1, 2] {
        for q in 0..8 {
            tm.enqueue(0, port, q, 100, 0).unwrap();
        }
        tm.on_mac_control(0, port, &MacControl::Pause { quanta: 100 })
            .unwrap();
    }
    assert!((0..8).all(|q| tm.is_paused(1, 1, q)));
    assert!(tm.dequeue(1, 1).is_none());
    assert!(tm.dequeue(1, 2).is_some(), "port 2 ignores PAUSE");
    // PFC XON for priority 3 does not lift the port-wide PAUSE.
    tm.on_mac_control(2, 1, &MacControl::pfc_xon(1 << 3))
        .unwrap();
    assert!(tm.is_paused(2, 1, 3));
    assert_eq!(tm.next_event_ns(2, 1), Some(5120));
    assert!(tm.dequeue(5120, 1).is_some());
    assert_eq!(tm.stats(5120).ports[1].pause_rx, 1);
}

#[test]
fn mac_control_frames_are_consumed_and_counted_others_forwarded() {
    let mut tm = tm_with(vec![pfc_port(1, G10)], 1 << 20, 200);
    let src = [2, 0, 0, 0, 0, 1];
    let pfc = MacControl::pfc_xoff(1 << 3, 10).encode(src);
    assert_eq!(tm.on_rx_frame(0, 1, &pfc), RxVerdict::Consumed);
    assert!(tm.is_paused(0, 1, 3));
    assert_eq!(tm.on_rx_frame(0, 1, &pfc[..20]), RxVerdict::Consumed);
    let gate = MacControl::Other { opcode: 2 }.encode(src);
    assert_eq!(tm.on_rx_frame(0, 1, &gate), RxVerdict::Consumed);
    let mut ipv4 = pfc.clone();
    ipv4[12..14].copy_from_slice(&[0x08, 0x00]);
    assert_eq!(tm.on_rx_frame(0, 1, &ipv4), RxVerdict::Forward);
    let p = &tm.stats(0).ports[0];
    assert_eq!((p.rx_packets, p.rx_bytes), (4, 60 + 20 + 60 + 60));
    assert_eq!((p.mac_control_malformed, p.mac_control_other_rx), (1, 1));
    assert_eq!(p.pfc_rx[3], 1);
}

fn wd_port(action: PfcwdAction) -> PortConfig {
    let mut p = pfc_port(1, G10);
    p.pfcwd = Some(PfcwdConfig {
        detection_time_ms: 200,
        restoration_time_ms: Some(400),
        action,
    });
    p
}

/// Sends XOFF for priority 3 every millisecond in [from, to), as a stuck peer would.
fn storm(tm: &mut Tm<u64>, from: u64, to: u64, quanta: u16) {
    let mut t = from;
    while t < to {
        tm.on_mac_control(t, 1, &MacControl::pfc_xoff(1 << 3, quanta))
            .unwrap();
        t += MS;
    }
}

#[test]
fn watchdog_drop_fires_after_detection_and_restores_after_quiet_restoration_time() {
    let mut tm = tm_with(vec![wd_port(PfcwdAction::Drop)], 1 << 20, 100);
    for i in 0..5 {
        tm.enqueue(0, 1, 3, 1000, i).unwrap();
    }
    storm(&mut tm, 0, 250 * MS, 0xffff);
    // Polls at 100 and 200 ms each saw a stalled queue: 200 ms of detection time.
    let ev = tm.take_pfcwd_events();
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert_eq!((ev[0].time_ns, ev[0].queue), (200 * MS, 3));
    assert_eq!(ev[0].kind, switch_tm::PfcwdEventKind::StormDetected);
    assert_eq!(
        tm.queue_depth(1, 3).unwrap().packets,
        0,
        "drop action flushes"
    );
    // The flushed packets come back, in queue order, once.
    let flushed = tm.take_flushed();
    let got: Vec<(u64, u32, usize, u32)> = flushed
        .iter()
        .map(|f| (f.pkt, f.port, f.queue, f.len))
        .collect();
    assert_eq!(got, (0..5).map(|i| (i, 1, 3, 1000)).collect::<Vec<_>>());
    assert!(tm.take_flushed().is_empty());
    let dropped = tm.enqueue(250 * MS, 1, 3, 1000, 9).unwrap_err();
    assert_eq!(dropped.reason, DropReason::PfcWatchdog);
    storm(&mut tm, 250 * MS, 450 * MS, 0xffff);
    tm.advance(850 * MS);
    assert!(tm.take_pfcwd_events().is_empty(), "XOFF seen until 449 ms");
    // The poll at 500 ms still saw XOFF; quiet intervals ending 600..900 ms make 400 ms.
    tm.advance(950 * MS);
    let ev = tm.take_pfcwd_events();
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert_eq!(ev[0].time_ns, 900 * MS);
    assert_eq!(ev[0].kind, switch_tm::PfcwdEventKind::StormRestored);
    tm.enqueue(950 * MS, 1, 3, 1000, 10).unwrap();
    assert_eq!(tm.dequeue(950 * MS, 1).unwrap().pkt, 10);
    let q = &tm.stats(950 * MS).ports[0].queues[3];
    assert_eq!(q.drops.get(DropReason::PfcWatchdog), 6);
    assert_eq!((q.pfcwd.storms_detected, q.pfcwd.restorations), (1, 1));
    assert!(!q.pfcwd.stormed);
}

#[test]
fn watchdog_forward_transmits_through_the_storm() {
    let mut tm = tm_with(vec![wd_port(PfcwdAction::Forward)], 1 << 20, 100);
    for i in 0..3 {
        tm.enqueue(0, 1, 3, 1000, i).unwrap();
    }
    storm(&mut tm, 0, 210 * MS, 0xffff);
    assert!(tm.is_paused(210 * MS, 1, 3));
    assert_eq!(
        tm.dequeue(210 * MS, 1).unwrap().pkt,
        0,
        "forward ignores the pause"
    );
    assert!(tm.stats(210 * MS).ports[0].queues[3].pfcwd.stormed);
}

#[test]
fn watchdog_restores_when_an_xoff_storm_turns_into_xon() {
    let mut tm = tm_with(vec![wd_port(PfcwdAction::Drop)], 1 << 20, 100);
    tm.enqueue(0, 1, 3, 1000, 0).unwrap();
    storm(&mut tm, 0, 250 * MS, 0xffff);
    assert_eq!(tm.take_pfcwd_events().len(), 1);
    // The peer now sends XON frames only: they are PFC frames but pause nothing.
    storm(&mut tm, 250 * MS, 800 * MS, 0);
    let ev = tm.take_pfcwd_events();
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert_eq!(ev[0].kind, switch_tm::PfcwdEventKind::StormRestored);
    assert_eq!(ev[0].time_ns, 700 * MS);
}

#[test]
fn watchdog_ignores_a_paused_queue_that_still_drains_or_is_empty() {
    let mut tm = tm_with(vec![wd_port(PfcwdAction::Drop)], 1 << 20, 100);
    // Paused but empty: not a storm.
    storm(&mut tm, 0, 500 * MS, 0xffff);
    // Short pauses the queue drains between: not a storm either.
    let mut t = 500 * MS;
    while t < MS * 1000 {
        tm.enqueue(t, 1, 3, 1000, 0).unwrap();
        tm.on_mac_control(t, 1, &MacControl::pfc_xoff(1 << 3, 1000))
            .unwrap();
        let until = tm.next_event_ns(t, 1).unwrap();
        assert!(tm.dequeue(until, 1).is_some());
        t += MS;
    }
    assert!(tm.take_pfcwd_events().is_empty());
}

#[test]
fn buffer_and_limit_drops_are_counted_by_reason() {
    let mut port = PortConfig::new(1, G10);
    port.mtu = 1500;
    port.queues = vec![
        QueueConfig {
            limit_packets: Some(2),
            ..QueueConfig::scheduled(1, SchedulerType::Strict, None)
        },
        QueueConfig {
            limit_bytes: Some(1024),
            ..QueueConfig::scheduled(2, SchedulerType::Strict, None)
        },
    ];
    let mut small = PortConfig::new(2, G10);
    small.limit_bytes = Some(2048);
    // 20 cells of 256 B.
    let mut tm = tm_with(vec![port, small], 20 * 256, 200);
    let r =
        |res: Result<switch_tm::EnqueueInfo, switch_tm::Dropped<u64>>| res.err().map(|d| d.reason);
    assert_eq!(
        r(tm.enqueue(0, 1, 0, 1519, 0)),
        Some(DropReason::MtuExceeded)
    );
    assert_eq!(r(tm.enqueue(0, 1, 0, 1518, 0)), None); // 6 cells
    assert_eq!(
        r(tm.enqueue(0, 1, 9, 100, 0)),
        Some(DropReason::InvalidQueue)
    );
    assert_eq!(
        r(tm.enqueue(0, 9, 0, 100, 0)),
        Some(DropReason::UnknownPort)
    );
    assert_eq!(r(tm.enqueue(0, 1, 1, 100, 0)), None);
    assert_eq!(r(tm.enqueue(0, 1, 1, 100, 0)), None);
    assert_eq!(r(tm.enqueue(0, 1, 1, 100, 0)), Some(DropReason::QueueLimit));
    assert_eq!(r(tm.enqueue(0, 1, 2, 768, 0)), None); // 3 cells of 4
    assert_eq!(r(tm.enqueue(0, 1, 2, 257, 0)), Some(DropReason::QueueLimit));
    assert_eq!(r(tm.enqueue(0, 2, 0, 1024, 0)), None);
    assert_eq!(r(tm.enqueue(0, 2, 0, 1024, 0)), None);
    assert_eq!(r(tm.enqueue(0, 2, 0, 1, 0)), Some(DropReason::PortLimit));
    // Used: 6 + 2 + 3 + 8 = 19 cells; a 2-cell packet does not fit, a 1-cell one does.
    assert_eq!(
        r(tm.enqueue(0, 1, 0, 300, 0)),
        Some(DropReason::BufferExhausted)
    );
    assert_eq!(r(tm.enqueue(0, 1, 0, 256, 0)), None);
    let st = tm.stats(0);
    assert_eq!((st.buffer.used_cells, st.buffer.total_cells), (20, 20));
    assert_eq!(st.unknown_port_drops, 1);
    let p1 = &st.ports[0];
    for (reason, n) in [
        (DropReason::MtuExceeded, 1),
        (DropReason::InvalidQueue, 1),
        (DropReason::QueueLimit, 2),
        (DropReason::BufferExhausted, 1),
    ] {
        assert_eq!(p1.drops.get(reason), n, "{reason:?}");
    }
    assert_eq!(p1.drops.total(), 5);
    assert_eq!(st.ports[1].drops.get(DropReason::PortLimit), 1);
    assert_eq!(p1.queues[1].drops.get(DropReason::QueueLimit), 1);
    assert_eq!(p1.used_cells, 12);
}

#[test]
fn dynamic_threshold_limits_a_queue_to_alpha_times_free_buffer() {
    let mut port = PortConfig::new(1, G10);
    port.queues = vec![QueueConfig {
        dynamic_th: Some(0), // alpha 1: the queue may hold as much as is still free
        ..QueueConfig::scheduled(0, SchedulerType::Strict, None)
    }];
    let mut tm = tm_with(vec![port], 100 * 256, 200);
    let mut admitted = 0;
    while tm.enqueue(0, 1, 0, 256, 0).is_ok() {
        admitted += 1;
    }
    // q + 1 <= 100 - q  =>  q = 50 when the 51st arrives.
    assert_eq!(admitted, 50);
    let st = tm.stats(0);
    assert_eq!(st.ports[0].drops.get(DropReason::DynamicThreshold), 1);
}

#[test]
fn cells_follow_the_chip_cell_size() {
    for (chip, cells) in [
        ("trident3", 6),  // 1500 / 256
        ("helix5", 6),    // 1500 / 256
        ("tomahawk2", 8), // 1500 / 208
        ("tomahawk3", 6), // 1500 / 254
    ] {
        let text = format!(
            "buffer: {{total_bytes: 1000000, chip: {chip}}}\nports: [{{port: 1, rate_bps: 1000000000}}]\n"
        );
        let mut tm: Tm<()> =
            Tm::new(TmConfig::parse(&text, ConfigFormat::Yaml).unwrap(), 0).unwrap();
        let info = tm.enqueue(0, 1, 0, 1500, ()).unwrap();
        assert_eq!(info.cells, cells, "{chip}");
        assert_eq!(tm.queue_depth(1, 0).unwrap().cells, cells as u64);
    }
}

#[test]
fn enqueue_reports_depth_found_in_packets_bytes_and_cells() {
    let mut tm = tm_with(vec![PortConfig::new(1, G10)], 1 << 20, 200);
    tm.enqueue(0, 1, 2, 300, 0).unwrap();
    let info = tm.enqueue(0, 1, 2, 100, 0).unwrap();
    assert_eq!(
        (
            info.enq_qdepth,
            info.enq_qdepth_bytes,
            info.enq_qdepth_cells
        ),
        (1, 300, 2)
    );
}

#[test]
fn watermarks_average_and_clear() {
    let mut port = pfc_port(1, G10);
    port.pfc_enable = vec![0];
    let mut tm = tm_with(vec![port], 1 << 20, 200);
    tm.on_mac_control(0, 1, &MacControl::pfc_xoff(1, 0xffff))
        .unwrap();
    for _ in 0..4 {
        tm.enqueue(0, 1, 0, 512, 0).unwrap();
    }
    // Held 2048 B for 1 ms, then drained; average over 2 ms is 1024 B.
    tm.on_mac_control(MS, 1, &MacControl::pfc_xon(1)).unwrap();
    let mut t = MS;
    while let Some(next) = tm.next_event_ns(t, 1) {
        t = next;
        tm.dequeue(t, 1).unwrap();
    }
    let st = tm.stats(2 * MS);
    let q = &st.ports[0].queues[0];
    assert_eq!((q.peak_bytes, q.peak_cells, q.depth_bytes), (2048, 8, 0));
    assert!(within(q.avg_bytes, 1024.0, 0.01), "avg {}", q.avg_bytes);
    assert_eq!(q.paused_ns, MS);
    assert_eq!((q.tx_packets, q.tx_bytes), (4, 2048));
    assert_eq!(st.buffer.peak_cells, 8);

    tm.enqueue(2 * MS, 1, 0, 100, 0).unwrap();
    // One group at a time: watermarks restart from the 100 B queued, counters go on.
    let pfc_rx = st.ports[0].pfc_rx;
    tm.clear_some(2 * MS, ClearScope::parse("watermarks").unwrap());
    let st = tm.stats(2 * MS);
    let q = &st.ports[0].queues[0];
    assert_eq!((q.peak_bytes, q.tx_packets), (100, 4));
    assert_eq!((st.buffer.peak_cells, st.ports[0].pfc_rx), (1, pfc_rx));
    tm.clear_some(2 * MS, ClearScope::parse("queues,pfcwd").unwrap());
    let q = &tm.stats(2 * MS).ports[0].queues[0];
    assert_eq!((q.peak_bytes, q.tx_packets, q.tx_bytes), (100, 0, 0));
    let err = ClearScope::parse("queues,bogus").unwrap_err();
    assert_eq!(err.name, "bogus");
    assert!(err.to_string().contains("unknown clear scope \"bogus\""));
    tm.clear(2 * MS);
    let st = tm.stats(3 * MS);
    let q = &st.ports[0].queues[0];
    assert_eq!((q.peak_bytes, q.tx_packets, q.paused_ns), (100, 0, 0));
    assert_eq!(st.ports[0].pfc_rx, [0; 8]);
    assert_eq!(st.buffer.peak_cells, 1);
    assert!(within(q.avg_bytes, 100.0, 0.01));
    assert_eq!(st.since_ns, 2 * MS);
}

#[test]
fn rate_change_at_run_time_takes_effect_and_keeps_queued_packets() {
    let mut tm = tm_with(vec![PortConfig::new(1, G10)], 16 << 20, 200);
    tm.enqueue(0, 1, 0, 1000, 42).unwrap();
    let mut slower = tm.port_config(1).unwrap().clone();
    slower.rate_bps = G10 / 10;
    tm.configure_port(0, slower).unwrap();
    assert_eq!(tm.queue_depth(1, 0).unwrap().packets, 1);
    let sent = run(&mut tm, 1, &mut [backlogged(0, 1000)], 0, 100 * MS);
    let expected = G10 as f64 / 10.0 * 1000.0 / wire_bytes(1000) as f64 * 0.1;
    assert!(within(sent[0] as f64 * 8.0, expected, 0.02));
    let mut bad = PortConfig::new(1, 0);
    bad.mtu = 9000;
    let err = tm.configure_port(0, bad).unwrap_err();
    assert_eq!(err.to_string(), "port 1.rate_bps: must be at least 1");
}

#[test]
fn catch_up_lets_a_late_driver_keep_line_rate() {
    let mk = |catch_up_ns| {
        let cfg = TmConfig {
            catch_up_ns,
            ..TmConfig::parse(
                "{\"buffer\": {\"total_bytes\": 1000000}, \"ports\": [{\"port\": 1, \"rate_bps\": 10000000000}]}",
                ConfigFormat::Json,
            )
            .unwrap()
        };
        Tm::<()>::new(cfg, 0).unwrap()
    };
    for (catch_up, expect_full_rate) in [(0, false), (10_000, true)] {
        let mut tm = mk(catch_up);
        let mut sent = 0u64;
        // The driver wakes every 5 us only, and sends whatever the port allows.
        let mut t = 0;
        while t < MS {
            while tm.queue_depth(1, 0).unwrap().packets < 64 {
                tm.enqueue(t, 1, 0, 1500, ()).unwrap();
            }
            while let Some(d) = tm.dequeue(t, 1) {
                sent += d.len as u64;
            }
            t += 5_000;
        }
        let full = G10 as f64 * 1500.0 / 1524.0 / 1000.0 / 8.0;
        assert_eq!(
            within(sent as f64, full, 0.02),
            expect_full_rate,
            "catch_up {catch_up}: {sent} B"
        );
    }
}

#[test]
fn stats_render_as_prometheus_and_json() {
    let mut tm = tm_with(vec![pfc_port(1, G10)], 1 << 20, 200);
    tm.enqueue(0, 1, 3, 100, 0).unwrap();
    tm.dequeue(0, 1).unwrap();
    tm.on_mac_control(0, 1, &MacControl::pfc_xoff(1 << 3, 10))
        .unwrap();
    let st = tm.stats(0);
    let prom = st.to_prometheus();
    for line in [
        "# TYPE lossless_tm_queue_tx_packets_total counter",
        "lossless_tm_queue_tx_packets_total{port=\"1\",queue=\"3\"} 1",
        "lossless_tm_port_pfc_rx_frames_total{port=\"1\",priority=\"3\"} 1",
        "lossless_tm_queue_drops_total{port=\"1\",queue=\"0\",reason=\"buffer_exhausted\"} 0",
        "lossless_tm_buffer_cell_bytes 256",
        "lossless_tm_queue_paused{port=\"1\",queue=\"3\"} 1",
    ] {
        assert!(prom.lines().any(|l| l == line), "missing {line}");
    }
    let json: serde_json::Value = serde_json::from_str(&st.to_json()).unwrap();
    assert_eq!(json["ports"][0]["queues"][3]["tx_bytes"], 100);
    assert_eq!(json["ports"][0]["drops"]["pfc_watchdog"], 0);
    assert_eq!(json["ports"][0]["queues"][1]["scheduler"], "STRICT");
}
