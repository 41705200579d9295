//! The dataplane core with the traffic manager under a simulated clock (in-process ports).

mod common;
use common::*;
use lossless_wire::pfc::MacControl;
use p4_switch::core::Core;
use std::collections::BTreeMap;
use std::sync::Arc;
use switch_ports::Port;
use switch_tm::{wire_bytes, ConfigFormat, TmConfig};
use switch_v1model::SwitchConfig;

const GBPS: u64 = 1_000_000_000;

fn tm(yaml: &str) -> TmConfig {
    TmConfig::parse(yaml, ConfigFormat::Yaml).expect("test config parses")
}

/// The `l3` program behind a traffic manager configured by `yaml`, from time 0.
fn l3_core(ports: BTreeMap<u32, Arc<dyn Port>>, yaml: &str) -> Core {
    Core::new(
        Some(switch("l3")),
        Some(tm(yaml)),
        ports,
        SwitchConfig::default(),
        0,
    )
    .unwrap()
}

/// Runs the core's TM schedule until nothing is due, returning the transmit times.
fn run_until_idle(core: &mut Core, mut now: u64) -> u64 {
    while let Some(t) = core.run_due(now) {
        assert!(t >= now, "next event {t} is before now {now}");
        now = t;
    }
    now
}

#[test]
fn rate_limited_port_drains_at_line_rate() {
    let (ports, host) = ports(&[0, 1]);
    let mut core = l3_core(
        ports,
        "buffer: {total_bytes: 1048576}\nports:\n  - {port: 0, rate_bps: 1000000000}\n",
    );
    for i in 0..100u8 {
        core.receive(0, 1, &frame(100, i));
    }
    // At t = 0 the line takes exactly one frame.
    core.run_due(0);
    assert_eq!(drain(&host[&0]).len(), 1);
    let end = run_until_idle(&mut core, 0);
    let sent = drain(&host[&0]);
    assert_eq!(sent.len(), 99);
    // The last frame starts when the 99 before it have occupied the line.
    let per_frame_ns = wire_bytes(100) * 8 * 1_000_000_000 / GBPS;
    assert_eq!(end, 99 * per_frame_ns);
    // In order, unchanged.
    assert!(sent.iter().enumerate().all(|(i, f)| f[0] == i as u8 + 1));
}

#[test]
fn pfc_frame_pauses_the_queue_until_quanta_expire() {
    let (ports, host) = ports(&[0, 1]);
    let mut core = l3_core(ports, "buffer: {total_bytes: 1048576}\nports:\n  - {port: 0, rate_bps: 1000000000, pfc_enable: [3], pfc_to_queue: {3: 0}}\n");
    let pfc = MacControl::pfc_xoff(1 << 3, 100).encode([2, 0, 0, 0, 0, 1]);
    core.receive(0, 0, &pfc);
    for i in 0..3u8 {
        core.receive(0, 1, &frame(64, i));
    }
    let next = core.run_due(0);
    assert!(
        drain(&host[&0]).is_empty(),
        "a paused queue transmits nothing"
    );
    // 100 quanta of 512 bit times at 1 Gb/s.
    assert_eq!(next, Some(100 * 512));
    assert_eq!(core.counters().mac_control_consumed, 1);
    // The PFC frame is consumed, never forwarded.
    assert!(drain(&host[&1]).is_empty());
    run_until_idle(&mut core, 100 * 512);
    assert_eq!(drain(&host[&0]).len(), 3);
}

#[test]
fn pfc_xon_resumes_at_once() {
    let (ports, host) = ports(&[0, 1]);
    let mut core = l3_core(ports, "buffer: {total_bytes: 1048576}\nports:\n  - {port: 0, rate_bps: 1000000000, pfc_enable: [3], pfc_to_queue: {3: 0}}\n");
    core.receive(0, 0, &MacControl::pfc_xoff(1 << 3, 0xffff).encode([2; 6]));
    core.receive(0, 1, &frame(64, 1));
    core.run_due(10);
    assert!(drain(&host[&0]).is_empty());
    core.receive(20, 0, &MacControl::pfc_xon(1 << 3).encode([2; 6]));
    core.run_due(20);
    assert_eq!(drain(&host[&0]).len(), 1);
}

#[test]
fn overflow_is_dropped_and_counted_by_reason() {
    let (ports, host) = ports(&[0, 1]);
    let mut core = l3_core(ports, "buffer: {total_bytes: 1048576}\nports:\n  - port: 0\n    rate_bps: 1000000000\n    queues: [{queue: 0, limit_packets: 10}]\n");
    for i in 0..30u8 {
        core.receive(0, 1, &frame(100, i));
    }
    run_until_idle(&mut core, 0);
    assert_eq!(drain(&host[&0]).len(), 10);
    assert_eq!(core.counters().tm_drops, 20);
    let stats = core.tm().unwrap().stats(0).to_json();
    assert!(stats.contains("\"queue_limit\": 20"), "{stats}");
}

#[test]
fn without_a_traffic_manager_egress_follows_ingress_at_once() {
    let (ports, host) = ports(&[0, 1]);
    let mut core = Core::new(Some(switch("l3")), None, ports, SwitchConfig::default(), 0).unwrap();
    for i in 0..5u8 {
        core.receive(0, 1, &frame(100, i));
    }
    assert_eq!(core.run_due(0), None);
    assert_eq!(drain(&host[&0]).len(), 5);
    // MAC control frames are link-local even without a TM.
    core.receive(0, 1, &MacControl::Pause { quanta: 5 }.encode([2; 6]));
    assert!(drain(&host[&0]).is_empty());
    assert_eq!(core.counters().mac_control_consumed, 1);
}

#[test]
fn live_port_reconfiguration_changes_the_rate() {
    let (ports, host) = ports(&[0, 1]);
    let mut core = l3_core(
        ports,
        "buffer: {total_bytes: 1048576}\nports:\n  - {port: 0, rate_bps: 1000000000}\n",
    );
    core.configure_port(0, switch_tm::PortConfig::new(0, 10 * GBPS))
        .unwrap();
    for i in 0..10u8 {
        core.receive(0, 1, &frame(100, i));
    }
    let end = run_until_idle(&mut core, 0);
    assert_eq!(drain(&host[&0]).len(), 10);
    // 99.2 ns per frame: the TM keeps fractions and wakes at the rounded-up nanosecond.
    assert_eq!(
        end,
        (9 * wire_bytes(100) * 8 * 1_000_000_000).div_ceil(10 * GBPS)
    );
}

#[test]
fn cpu_port_frames_go_to_the_sink() {
    let (ports, _host) = ports(&[1]);
    let mut core = Core::new(
        Some(switch("l3")),
        None,
        ports,
        SwitchConfig {
            cpu_port: Some(0),
            ..SwitchConfig::default()
        },
        0,
    )
    .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    core.set_cpu_sink(Box::new(move |f| {
        let _ = tx.lock().unwrap().send(f);
    }));
    core.receive(0, 1, &frame(80, 7));
    assert_eq!(rx.try_recv().unwrap(), frame(80, 7));
    assert_eq!(core.counters().cpu_packet_in, 1);
}

/// The per-port frame counters against what the ports carried: received per port (and on a
/// number that is no port), handed to the line with their bytes as the host end got them,
/// absent for a port that carried nothing, and gone after a clear.
#[test]
fn port_counters_count_what_the_ports_carried() {
    let (ports, host) = ports(&[0, 1, 2]);
    let mut core = l3_core(
        ports,
        "buffer: {total_bytes: 1048576}\nports:\n  - {port: 0, rate_bps: 1000000000}\n",
    );
    for i in 0..5u8 {
        core.receive(0, 1, &frame(100 + usize::from(i), i));
    }
    core.receive(0, 7, &frame(100, 9));
    run_until_idle(&mut core, 0);
    let sent = drain(&host[&0]);
    assert!(!sent.is_empty());
    let c = core.counters();
    assert_eq!(c.rx_frames, BTreeMap::from([(1, 5), (7, 1)]));
    assert_eq!(c.tx_frames, BTreeMap::from([(0, sent.len() as u64)]));
    let bytes: u64 = sent.iter().map(|f| f.len() as u64).sum();
    assert_eq!(c.tx_bytes, BTreeMap::from([(0, bytes)]));
    core.clear(0);
    let c = core.counters();
    assert!(c.rx_frames.is_empty() && c.tx_frames.is_empty() && c.tx_bytes.is_empty());
}
