//! p4src's `lossless.p4` on p4-switch: Source Flow Control's default deduplication, the public
//! reference's two-bank epoch filter, on a queue that really builds up in the traffic manager
//! (the STF files preset the depth), in process with a simulated clock.

mod common;
use common::lossless::{arg, exact, port_qos, udp};
use common::*;
use p4_switch::core::Core;
use switch_tm::{ConfigFormat, TmConfig};
use switch_v1model::MirrorSession;

const US: u64 = 1_000;
/// The congested host port (queue 3) and the spine the data comes from.
const HOST: u32 = 1;
const SPINE: u32 = 3;
/// `SFC|GLOBAL|min_interval_us`: the epoch length of the filter.
const WINDOW_US: u64 = 100;

/// A 1000-byte RoCEv2 frame (UDP 4791, a zero BTH) from the spine, DSCP 3.
fn roce(seq: u16, src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
    let mut f = udp(1000, seq, 3, src, dst);
    f[36..38].copy_from_slice(&4791u16.to_be_bytes());
    f
}

/// The switch of `common::lossless` with the spine trusting DSCP, its clone session and
/// egress entry (it faces a switch, so signals become SFC messages), SFC on (1, 3) above 3000
/// bytes, and the window; `sfc_mode` left at its default, the reference's behaviour.
fn core() -> (
    Core,
    std::collections::BTreeMap<u32, switch_ports::ChannelPort>,
) {
    let mut sw = common::lossless::switch(&[HOST], SPINE);
    let ing = |t: &str| format!("LosslessIngress.{t}");
    port_qos(&mut sw, SPINE);
    sw.table_add(
        &ing("sfc_queue"),
        vec![exact(u64::from(HOST), 2), exact(3, 1)],
        None,
        &ing("set_sfc"),
        &[arg(3000, 4), arg(0, 4), arg(134_218, 4), arg(48, 1)],
    )
    .expect("sfc_queue");
    sw.table_set_default(
        &ing("switch_config"),
        &ing("set_switch_config"),
        &[arg(1 << 20, 4), arg(WINDOW_US, 6)],
    )
    .expect("switch_config");
    sw.table_add(
        "LosslessEgress.egress_port",
        vec![exact(u64::from(SPINE), 2)],
        None,
        "LosslessEgress.set_egress_port",
        &[arg(0x0200_0000_0001, 6), arg(0, 1), arg(0, 4)],
    )
    .expect("egress_port");
    sw.mirroring_add(
        512 + SPINE,
        MirrorSession {
            port: Some(SPINE),
            mgrp: None,
            class_of_service: 7,
        },
    )
    .expect("clone session");
    let tm = TmConfig::parse(
        "buffer: {total_bytes: 4194304}\nports:\n  - {port: 1, rate_bps: 1000000000}\n  \
         - {port: 3, rate_bps: 1000000000}\n",
        ConfigFormat::Yaml,
    )
    .expect("tm config");
    let (ports, host) = ports(&[HOST, SPINE]);
    let core = Core::new(Some(sw), Some(tm), ports, common::lossless::engine(), 0).expect("core");
    (core, host)
}

#[test]
fn one_sfc_message_per_flow_per_epoch_on_a_real_queue() {
    let (mut core, host) = core();
    let source = [20, 9, 9, 9];
    let (a, b) = ([10, 1, 0, 2], [10, 1, 0, 3]);
    // A burst builds queue (1, 3) past the threshold; then flows A and B (the same source and
    // DSCP, two destinations) send a frame each every 10 us for 1 ms: 1.6 Gb/s into a 1 Gb/s
    // port, so the queue only grows and every one of their frames triggers.
    for seq in 0..8u16 {
        core.receive(0, SPINE, &roce(seq, [20, 7, 7, 7], [10, 1, 0, 4]));
    }
    let mut now = 0;
    for step in 1..=100u64 {
        let t = step * 10 * US;
        while let Some(due) = core.run_due(now).filter(|&d| d <= t) {
            now = due;
        }
        now = t;
        core.receive(now, SPINE, &roce(2 * step as u16, source, a));
        core.receive(now, SPINE, &roce(2 * step as u16 + 1, source, b));
    }
    while let Some(due) = core.run_due(now) {
        now = due;
    }
    // SFC messages back out of the spine port, by the flow's destination (the message's
    // IPv4 source).
    let messages: Vec<[u8; 4]> = drain(&host[&SPINE])
        .iter()
        .filter(|f| f.len() == 60 && f[36..38] == 1674u16.to_be_bytes())
        .map(|f| [f[26], f[27], f[28], f[29]])
        .collect();
    let epochs = core
        .switch
        .as_mut()
        .expect("pipeline")
        .register_read("sfc_epoch", 0)
        .expect("sfc_epoch");
    // The epoch ends at the first packet more than 100 us after it began: every 110 us here,
    // so 1 ms of flows sees epochs 0 to 9, and each of them holds frames of both flows.
    assert_eq!(epochs, 9, "epochs begun after epoch 0");
    for (flow, dst) in [("A", a), ("B", b)] {
        let n = messages.iter().filter(|&&m| m == dst).count() as u128;
        assert_eq!(
            n,
            epochs + 1,
            "flow {flow}: one message per epoch, 100 frames sent"
        );
    }
}
