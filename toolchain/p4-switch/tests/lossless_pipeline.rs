//! p4src's `lossless.p4` on p4-switch (issue 19), in process with a simulated clock:
//! - one truth for occupancy: the pipeline counts buffer bytes in registers, and whatever
//!   leaves the traffic manager, transmitted or dropped, is released from them;
//! - generated PFC frames leave ahead of data (the clone session's class of service);
//! - a paused PG is re-paused by the packet generator while it holds, arrivals or not.

mod common;
use common::lossless::{udp, Pause};
use common::*;
use lossless_wire::pfc::MacControl;
use p4_switch::core::Core;
use p4_switch::pktgen::{AppConfig, PktgenConfig, DEFAULT_PORT};
use switch_tables::FieldMatch;
use switch_tm::{ConfigFormat, DropReason, TmConfig};

const MS: u64 = 1_000_000;
/// Host port (the PG under test is (1, 3)) and uplink (queue 3 of port 3).
const HOST: u32 = 1;
const UPLINK: u32 = 3;
const PG_INDEX: u64 = (HOST as u64) * 8 + 3;
const QUEUE_INDEX: u64 = (UPLINK as u64) * 8 + 3;

/// A RoCEv2-sized IPv4/UDP packet of `len` bytes from the host, DSCP 3, to 10.3.0.1.
fn data(len: usize, seq: u16) -> Vec<u8> {
    udp(len, seq, 3, [10, 1, 0, 2], [10, 3, 0, 1])
}

fn tm(yaml: &str) -> TmConfig {
    TmConfig::parse(yaml, ConfigFormat::Yaml).expect("test config parses")
}

fn core(
    cfg: TmConfig,
) -> (
    Core,
    std::collections::BTreeMap<u32, switch_ports::ChannelPort>,
) {
    let (ports, host) = ports(&[HOST, UPLINK]);
    let sw = common::lossless::switch(&[HOST], UPLINK);
    let core = Core::new(Some(sw), Some(cfg), ports, common::lossless::engine(), 0).expect("core");
    (core, host)
}

fn reg(core: &mut Core, name: &str, index: u64) -> u128 {
    core.switch
        .as_mut()
        .expect("pipeline")
        .register_read(name, index)
        .unwrap_or_else(|e| panic!("{name}[{index}]: {e:?}"))
}

/// Every cell of the occupancy registers that is not 0, as (register, index, bytes).
fn occupied(core: &mut Core) -> Vec<(&'static str, u64, u128)> {
    let mut out = Vec::new();
    for (name, size) in [
        ("pg_bytes", 4096),
        ("pg_headroom_bytes", 4096),
        ("queue_bytes", 4096),
        ("shared_pool_used", 1),
    ] {
        for i in 0..size {
            let v = reg(core, name, i);
            if v != 0 {
                out.push((name, i, v));
            }
        }
    }
    out
}

/// PFC frames that left `port`, as (class_enable, quanta of priority 3).
fn pfc_frames(frames: &[Vec<u8>]) -> Vec<(u8, u16)> {
    frames
        .iter()
        .filter_map(|f| match MacControl::decode(f) {
            Ok(Some(MacControl::Pfc {
                class_enable,
                quanta,
            })) => Some((class_enable, quanta[3])),
            _ => None,
        })
        .collect()
}

/// Runs the switch's schedule from `now` until nothing is due before `end`; returns `end`.
fn run_until(core: &mut Core, mut now: u64, end: u64) -> u64 {
    while let Some(t) = core.run_due(now) {
        if t > end {
            break;
        }
        now = t;
    }
    end
}

/// One sample of a Prometheus text body, by metric name and labels.
fn sample(text: &str, series: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {series} in /metrics"))
}

/// `/metrics` shows the pipeline's queue and PG counts equal to switch-tm's depth of queue 3,
/// `shared` of them in the shared pool and the rest in PG 3's headroom, which lies outside it.
fn metrics_agree(core: &mut Core, now: u64, bytes: u64, shared: u64) {
    let m = p4_switch::http::metrics(core, now);
    let tm = sample(&m, "lossless_tm_queue_depth_bytes{port=\"3\",queue=\"3\"}");
    let queue = sample(&m, "p4switch_pipeline_queue_bytes{port=\"3\",queue=\"3\"}");
    let pg = sample(&m, "p4switch_pipeline_pg_bytes{port=\"1\",pg=\"3\"}");
    let pool = sample(&m, "p4switch_pipeline_shared_pool_used_bytes");
    assert_eq!((tm, queue, pg, pool), (bytes, bytes, bytes, shared));
    assert_eq!(
        reg(core, "pg_headroom_bytes", PG_INDEX),
        u128::from(bytes - shared)
    );
}

#[test]
fn watchdog_flush_releases_the_pipeline_accounting_and_resumes_the_sender() {
    let (mut core, host) = core(tm(
        "buffer: {total_bytes: 4194304}\npfcwd_poll_interval_ms: 100\nports:\n  \
         - {port: 1, rate_bps: 1000000000}\n  \
         - {port: 3, rate_bps: 1000000000, pfc_enable: [3], pfc_to_queue: {3: 3}, \
         pfcwd: {detection_time_ms: 200, restoration_time_ms: 400, action: drop}}\n",
    ));
    let xoff = MacControl::pfc_xoff(1 << 3, 0xffff).encode([2, 0, 0, 0, 3, 1]);
    // The uplink's peer pauses priority 3 and keeps doing so: a storm.
    core.receive(0, UPLINK, &xoff);
    for i in 0..20u16 {
        core.receive(0, HOST, &data(1000, i));
    }
    core.run_due(0);
    assert!(drain(&host[&UPLINK]).is_empty(), "queue 3 is paused");
    assert_eq!(reg(&mut core, "pg_bytes", PG_INDEX), 20_000);
    assert_eq!(reg(&mut core, "queue_bytes", QUEUE_INDEX), 20_000);
    // The pipeline and the traffic manager count the same bytes in the queue.
    let depth = core.tm().unwrap().queue_depth(UPLINK, 3).unwrap();
    assert_eq!(
        u128::from(depth.bytes),
        reg(&mut core, "queue_bytes", QUEUE_INDEX)
    );
    assert_eq!(
        pfc_frames(&drain(&host[&HOST])),
        vec![(0x08, 0xffff)],
        "one XOFF"
    );
    // PG 3 paused beyond 4000 bytes; the 16 000 after that are in its headroom (xoff 100 000).
    metrics_agree(&mut core, 0, 20_000, 4_000);

    let mut now = 0;
    while now < 250 * MS {
        now += MS;
        core.receive(now, UPLINK, &xoff);
        core.run_due(now);
    }
    let tm_stats = core.tm().unwrap().stats(now);
    let q = &tm_stats
        .ports
        .iter()
        .find(|p| p.port == UPLINK)
        .unwrap()
        .queues[3];
    assert_eq!(
        q.drops.get(DropReason::PfcWatchdog),
        20,
        "the watchdog flushed the queue"
    );
    assert_eq!(occupied(&mut core), vec![], "the flush released every byte");
    metrics_agree(&mut core, now, 0, 0);
    // The PG drained below XON: the sender is resumed.
    assert_eq!(pfc_frames(&drain(&host[&HOST])), vec![(0x08, 0)], "one XON");
    assert!(drain(&host[&UPLINK]).is_empty());

    // The storm ends; once restored, the queue forwards again and stays accounted.
    now = run_until(&mut core, now, now + 800 * MS);
    for i in 0..3u16 {
        core.receive(now, HOST, &data(1000, 100 + i));
    }
    run_until(&mut core, now, now + 100 * MS);
    assert_eq!(drain(&host[&UPLINK]).len(), 3);
    assert_eq!(occupied(&mut core), vec![]);
}

#[test]
fn traffic_manager_overflow_releases_what_it_refuses() {
    // A 20 KB buffer in 256-byte cells at 10 Mb/s: a burst of 40 KB overflows it.
    let (mut core, host) = core(tm(
        "buffer: {total_bytes: 20480, cell_bytes: 256}\nports:\n  \
         - {port: 1, rate_bps: 10000000}\n  - {port: 3, rate_bps: 10000000}\n",
    ));
    for i in 0..40u16 {
        core.receive(0, HOST, &data(1000, i));
    }
    assert!(
        core.counters().tm_drops > 0,
        "the burst overflows the buffer"
    );
    // What the pipeline counts in the queue is what the traffic manager holds (the XOFF clone
    // waits on port 1 and is not a data packet).
    let depth = core.tm().unwrap().queue_depth(UPLINK, 3).unwrap();
    assert!(depth.packets > 0 && depth.packets < 40);
    assert_eq!(u64::from(depth.packets) * 1000, depth.bytes);
    assert_eq!(
        u128::from(depth.bytes),
        reg(&mut core, "queue_bytes", QUEUE_INDEX)
    );
    assert_eq!(
        u128::from(depth.bytes),
        reg(&mut core, "pg_bytes", PG_INDEX)
    );
    run_until(&mut core, 0, 100 * MS);
    assert_eq!(drain(&host[&UPLINK]).len(), depth.packets as usize);
    assert_eq!(occupied(&mut core), vec![], "every register back to 0");
    // Paused above 4000 bytes, resumed when the queue drained below 2000.
    let pfc = pfc_frames(&drain(&host[&HOST]));
    assert_eq!(pfc.first(), Some(&(0x08, 0xffff)));
    assert_eq!(pfc.last(), Some(&(0x08, 0)));
}

#[test]
fn generated_pfc_leaves_within_one_mtu_time_under_full_load() {
    // Both ports at 1 Gb/s, every queue strict (the TM's default).
    let (mut core, host) = core(tm(
        "buffer: {total_bytes: 4194304}\nports:\n  - {port: 1, rate_bps: 1000000000}\n  \
         - {port: 3, rate_bps: 1000000000, pfc_enable: [3], pfc_to_queue: {3: 3}}\n",
    ));
    // The uplink's peer pauses priority 3, so what the host sends stays in its PG.
    let xoff = MacControl::pfc_xoff(1 << 3, 0xffff).encode([2, 0, 0, 0, 3, 1]);
    core.receive(0, UPLINK, &xoff);
    // Full load toward the host on queue 0: 60 MTU-sized frames (DSCP 0 from the uplink).
    const MTU_FRAME: usize = 1514;
    for i in 0..60u16 {
        core.receive(
            0,
            UPLINK,
            &udp(MTU_FRAME, i, 0, [10, 3, 0, 9], [10, 1, 0, 9]),
        );
    }
    let mut now = 0;
    let mut next = core.run_due(now);
    // A few frames into the burst the host's PG crosses its pause point (4000 bytes).
    let generated_at = 40_000;
    while let Some(t) = next.filter(|&t| t <= generated_at) {
        now = t;
        next = core.run_due(now);
    }
    now = generated_at;
    let before = drain(&host[&HOST]).len();
    assert!(before >= 3, "the line was busy ({before} frames sent)");
    for i in 0..5u16 {
        core.receive(now, HOST, &data(1000, i));
    }
    assert_eq!(
        reg(&mut core, "pg_bytes", PG_INDEX),
        5000,
        "paused above 4000"
    );
    let mut sent_at = None;
    let mut data_before = 0;
    loop {
        next = core.run_due(now);
        for f in drain(&host[&HOST]) {
            if pfc_frames(std::slice::from_ref(&f)) == [(0x08, 0xffff)] {
                sent_at = Some(now);
            } else if sent_at.is_none() {
                data_before += 1;
            }
        }
        match (sent_at, next) {
            (None, Some(t)) => now = t,
            _ => break,
        }
    }
    let sent_at = sent_at.expect("an XOFF toward the host");
    // At most the frame on the line when it was generated goes first.
    let mtu_time_ns = switch_tm::wire_bytes(MTU_FRAME as u32) * 8;
    assert!(
        sent_at - generated_at <= mtu_time_ns,
        "XOFF left {} ns after it was generated (one MTU time is {mtu_time_ns} ns)",
        sent_at - generated_at
    );
    assert!(data_before <= 1, "{data_before} data frames went first");
    let left = core.tm().unwrap().queue_depth(HOST, 0).unwrap().packets;
    assert!(left > 50, "the load was still queued ({left} frames)");
}

/// Packet `packet` of batch 0 of the packet generator's application 0 renews the pause of PG 3
/// of `port` with `pause`, as lossless-ctl writes `pfc_refresh`.
fn pfc_refresh(sw: &mut switch_v1model::Switch, packet: u16, port: u32, pause: Pause) {
    let be = |v: u64, bytes: usize| v.to_be_bytes()[8 - bytes..].to_vec();
    let key = [be(0, 1), be(0, 2), be(u64::from(packet), 2)];
    sw.table_add(
        "LosslessIngress.pfc_refresh",
        key.into_iter().map(FieldMatch::Exact).collect(),
        None,
        "LosslessIngress.set_refresh",
        &[
            be(u64::from(port), 2),
            be(3, 1),
            be(0x08, 1),
            be(u64::from(pause.quanta), 2),
            be(pause.refresh_us, 6),
        ],
    )
    .expect("pfc_refresh");
}

/// PFC frames toward the host as (time sent, quanta).
type Sent = Vec<(u64, u16)>;

/// The time `quanta` pause a sender at `rate_bps` (802.1Qbb: 512 bit times each), in ns.
fn pause_ns(quanta: u16, rate_bps: u64) -> u64 {
    u64::from(quanta) * 512 * 1_000_000_000 / rate_bps
}

/// lossless.p4 with PG 3 of the host port pausing for `quanta` at `rate_bps` and renewing at
/// half that less 1 us, the packet generator firing every quarter pause with one packet (for
/// that PG), as lossless-ctl sets them, and the uplink's peer holding queue 3 with one XOFF of
/// 0xffff quanta. Five 1000-byte packets from the host at 0 put PG 3 above its pause point
/// (4000 bytes); nothing else arrives. Returns the PFC frames toward the host as (time,
/// quanta) until `end`, when the uplink's peer resumes; then, until `end` + 5 ms, those after.
fn held_pg(quanta: u16, rate_bps: u64, end: u64, pktgen: bool) -> (Sent, Sent) {
    let half_ns = pause_ns(quanta, rate_bps) / 2;
    let (ports, host) = ports(&[HOST, UPLINK]);
    let pause = Pause {
        quanta,
        refresh_us: half_ns / 1000 - 1,
    };
    let mut sw = common::lossless::switch_pausing(&[HOST], UPLINK, pause);
    pfc_refresh(&mut sw, 0, HOST, pause);
    let cfg = tm(&format!(
        "buffer: {{total_bytes: 4194304}}\nports:\n  - {{port: 1, rate_bps: {rate_bps}}}\n  \
         - {{port: 3, rate_bps: {rate_bps}, pfc_enable: [3], pfc_to_queue: {{3: 3}}}}\n"
    ));
    let mut core =
        Core::new(Some(sw), Some(cfg), ports, common::lossless::engine(), 0).expect("core");
    if pktgen {
        let app = AppConfig {
            app_id: 0,
            period_ns: half_ns / 2,
            batches: 1,
            packets_per_batch: 1,
            packet_len: 64,
        };
        core.set_pktgen(
            0,
            Some(PktgenConfig {
                port: DEFAULT_PORT,
                apps: vec![app],
            }),
        )
        .expect("pktgen");
    }
    let peer = [2, 0, 0, 0, 3, 1];
    core.receive(
        0,
        UPLINK,
        &MacControl::pfc_xoff(1 << 3, 0xffff).encode(peer),
    );
    for i in 0..5u16 {
        core.receive(0, HOST, &data(1000, i));
    }
    let frames = |core: &mut Core, from: u64, until: u64| {
        let mut out = Vec::new();
        let mut now = from;
        loop {
            let next = core.run_due(now);
            out.extend(
                pfc_frames(&drain(&host[&HOST]))
                    .into_iter()
                    .map(|(_, q)| (now, q)),
            );
            match next {
                Some(t) if t <= until => now = t.max(now),
                _ => return out,
            }
        }
    };
    let held = frames(&mut core, 0, end);
    assert!(drain(&host[&UPLINK]).is_empty(), "queue 3 stayed paused");
    assert_eq!(
        reg(&mut core, "pg_bytes", PG_INDEX),
        5000,
        "no arrivals, no drain"
    );
    core.receive(end, UPLINK, &MacControl::pfc_xoff(1 << 3, 0).encode(peer));
    let after = frames(&mut core, end, end + 5 * MS);
    assert_eq!(drain(&host[&UPLINK]).len(), 5, "the PG drained");
    (held, after)
}

/// Checks that the XOFFs in `held` keep a sender paused from 0 to `end` without a gap: the
/// first at 0, each next one before the previous one's pause has run out, every one carrying
/// `quanta`, one per half pause.
fn assert_held(held: &[(u64, u16)], quanta: u16, rate_bps: u64, end: u64) {
    let pause = pause_ns(quanta, rate_bps);
    assert_eq!(held.first().map(|x| x.0), Some(0), "XOFF on the arrival");
    assert!(held.iter().all(|&(_, q)| q == quanta), "{held:?}");
    for w in held.windows(2) {
        let gap = w[1].0 - w[0].0;
        assert!(
            gap < pause,
            "XOFF at {} ns came {gap} ns after the previous one; its {quanta} quanta last {pause} ns",
            w[1].0
        );
    }
    let last = held.last().unwrap().0;
    assert!(
        last + pause > end,
        "the last XOFF ({last} ns) covers {end} ns"
    );
    // Closed form: one at the arrival, then one every half pause.
    assert_eq!(held.len() as u64, 1 + end / (pause / 2), "{held:?}");
}

#[test]
fn a_held_pg_is_repaused_every_half_pause_without_arrivals_and_resumed_when_it_drains() {
    const RATE: u64 = 1_000_000_000;
    const QUANTA: u16 = 0x1000; // 2.097 ms at 1 Gb/s
    let end = 5 * pause_ns(QUANTA, RATE) + 1000;
    let (held, after) = held_pg(QUANTA, RATE, end, true);
    assert_held(&held, QUANTA, RATE, end);
    // The uplink resumes: the queue drains, the PG falls below XON, one XON and no more XOFF.
    assert_eq!(
        after.iter().map(|x| x.1).collect::<Vec<_>>(),
        vec![0],
        "{after:?}"
    );
    assert!(
        after[0].0 - end < MS,
        "XON {} ns after the resume",
        after[0].0 - end
    );

    // Without the packet generator only the arrival pauses: the sender's timer runs out.
    let (held, _) = held_pg(QUANTA, RATE, end, false);
    assert_eq!(held, vec![(0, QUANTA)]);
}

#[test]
fn the_refresh_period_follows_small_quanta() {
    // 256 quanta at 1 Gb/s pause for 131.072 us: renewed every 65.536 us.
    const RATE: u64 = 1_000_000_000;
    const QUANTA: u16 = 256;
    let end = 8 * pause_ns(QUANTA, RATE);
    let (held, after) = held_pg(QUANTA, RATE, end, true);
    assert_held(&held, QUANTA, RATE, end);
    assert_eq!(held.len(), 17);
    assert_eq!(after.iter().map(|x| x.1).collect::<Vec<_>>(), vec![0]);
}

#[test]
fn the_packet_generator_runs_without_traffic_manager_and_reports_its_next_firing() {
    let (ports, _host) = ports(&[HOST, UPLINK]);
    let sw = common::lossless::switch(&[HOST], UPLINK);
    let mut core = Core::new(Some(sw), None, ports, common::lossless::engine(), 0).expect("core");
    assert_eq!(core.run_due(0), None);
    let app = AppConfig {
        app_id: 0,
        period_ns: 700,
        batches: 2,
        packets_per_batch: 8,
        packet_len: 64,
    };
    let cfg = PktgenConfig {
        port: DEFAULT_PORT,
        apps: vec![app],
    };
    core.set_pktgen(100, Some(cfg.clone())).expect("pktgen");
    assert_eq!(core.run_due(100), Some(800));
    assert_eq!(core.run_due(800), Some(1500));
    assert_eq!(core.counters().pktgen_packets, 16);
    // Its port cannot be one of the switch's.
    let taken = PktgenConfig { port: HOST, ..cfg };
    assert_eq!(
        core.set_pktgen(0, Some(taken)).unwrap_err().to_string(),
        "pktgen.port: 1 is one of the switch's ports"
    );
}
