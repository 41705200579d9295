//! p4src's `lossless.p4` compiled and programmed as p4src/tests sets it up (README.md there),
//! for the tests of the program on this switch (`tests/lossless_pipeline.rs`) and the soak
//! (`examples/soak.rs`, `#[path]` module): DSCP 3 -> TC 3 -> PG 3 -> queue 3, lossless on every
//! host port (pause above 4000 bytes, headroom 100000, XON below 2000), and a clone session per
//! host port with class of service 7 as lossless-ctl writes it.

use super::fixture::compile_p4;
use switch_tables::FieldMatch;
use switch_v1model::{MirrorSession, Switch, SwitchConfig};

/// The router's MAC: data frames are sent to it, generated frames come from it.
pub const ROUTER_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0x01];
/// Clone session of the generated frames out of port P: `PORT_SESSION_BASE + P` (headers.p4).
const PORT_SESSION_BASE: u32 = 512;

/// The engine's configuration: 8 priority queues, as lossless-ctl starts the switch.
pub fn engine() -> SwitchConfig {
    SwitchConfig {
        priority_queues: 8,
        ..SwitchConfig::default()
    }
}

/// What PG 3's XOFF asks for (`quanta`) and how often the pipeline may renew it.
#[derive(Debug, Clone, Copy)]
pub struct Pause {
    pub quanta: u16,
    pub refresh_us: u64,
}

/// `lossless.p4` with lossless PG 3 on each of `hosts`; 10.P.0.0/16 routes to port P for every
/// host and the uplink. PG 3 pauses with 0xffff quanta and renews them at most once a second.
pub fn switch(hosts: &[u32], uplink: u32) -> Switch {
    switch_pausing(
        hosts,
        uplink,
        Pause {
            quanta: 0xffff,
            refresh_us: 1_000_000,
        },
    )
}

/// [`switch`] with PG 3's pause set to `pause`.
pub fn switch_pausing(hosts: &[u32], uplink: u32, pause: Pause) -> Switch {
    let src = format!("{}/../../p4src/lossless.p4", env!("CARGO_MANIFEST_DIR"));
    let mut sw = Switch::from_json(&compile_p4(&src), engine()).expect("lossless.json loads");
    for &port in hosts.iter().chain([&uplink]) {
        route(&mut sw, port);
    }
    for &host in hosts {
        host_port(&mut sw, host, pause);
    }
    for (table, action) in [
        ("dscp_to_tc", "set_tc"),
        ("tc_to_pg", "set_pg"),
        ("tc_to_queue", "set_queue"),
    ] {
        add(
            &mut sw,
            table,
            vec![exact(1, 1), exact(3, 1)],
            action,
            &[arg(3, 1)],
        );
    }
    add(
        &mut sw,
        "router_mac",
        vec![exact(mac(ROUTER_MAC), 6)],
        "NoAction",
        &[],
    );
    sw.table_set_default(
        "LosslessIngress.switch_config",
        "LosslessIngress.set_switch_config",
        &[arg(1 << 20, 4), arg(0, 6)],
    )
    .expect("switch_config");
    sw
}

/// An IPv4/UDP frame of `len` bytes to the router's MAC.
pub fn udp(len: usize, seq: u16, dscp: u8, src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
    let mut f = Vec::with_capacity(len);
    f.extend_from_slice(&ROUTER_MAC);
    f.extend_from_slice(&[2, 0, 0, 0, 1, 2, 0x08, 0x00]);
    let ip_len = (len - 14) as u16;
    let mut ip = [
        0x45,
        dscp << 2,
        0,
        0,
        0,
        0,
        0,
        0,
        64,
        17,
        0,
        0,
        src[0],
        src[1],
        src[2],
        src[3],
        dst[0],
        dst[1],
        dst[2],
        dst[3],
    ];
    ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
    ip[4..6].copy_from_slice(&seq.to_be_bytes());
    let sum = ip
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum::<u32>();
    let sum = (sum & 0xffff) + (sum >> 16);
    let sum = !(((sum & 0xffff) + (sum >> 16)) as u16);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&[0x0f, 0xa0, 0x0f, 0xa1]);
    f.extend_from_slice(&(ip_len - 20).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.resize(len, 0);
    f
}

fn mac(m: [u8; 6]) -> u64 {
    m.iter().fold(0, |v, &b| v << 8 | u64::from(b))
}

pub fn exact(v: u64, bytes: usize) -> FieldMatch {
    FieldMatch::Exact(v.to_be_bytes()[8 - bytes..].to_vec())
}

pub fn arg(v: u64, bytes: usize) -> Vec<u8> {
    v.to_be_bytes()[8 - bytes..].to_vec()
}

fn add(sw: &mut Switch, table: &str, keys: Vec<FieldMatch>, action: &str, args: &[Vec<u8>]) {
    let action = match action {
        "NoAction" => action.to_string(),
        _ => format!("LosslessIngress.{action}"),
    };
    sw.table_add(
        &format!("LosslessIngress.{table}"),
        keys,
        None,
        &action,
        args,
    )
    .unwrap_or_else(|e| panic!("{table}: {e:?}"));
}

/// `port` trusts DSCP and uses maps 1 (DSCP 3 -> TC 3 -> PG 3 and queue 3).
pub fn port_qos(sw: &mut Switch, port: u32) {
    add(
        sw,
        "port_qos",
        vec![exact(u64::from(port), 2)],
        "set_port_qos",
        &[
            arg(1, 1),
            arg(1, 1),
            arg(0, 1),
            arg(1, 1),
            arg(1, 1),
            arg(0, 1),
        ],
    );
}

/// A lossless host port: its QoS maps, PG 3's profile, its PFC source MAC and its clone session.
fn host_port(sw: &mut Switch, port: u32, pause: Pause) {
    let key = || exact(u64::from(port), 2);
    port_qos(sw, port);
    add(
        sw,
        "pg_profile",
        vec![key(), exact(3, 1)],
        "set_lossless",
        &[
            arg(4000, 4),
            arg(4000, 4),
            arg(100_000, 4),
            arg(2000, 4),
            arg(0, 4),
            arg(0, 1),
            arg(0, 1),
            arg(0, 1),
            arg(0x08, 1),
            arg(u64::from(pause.quanta), 2),
            arg(pause.refresh_us, 6),
        ],
    );
    sw.table_add(
        "LosslessEgress.egress_port",
        vec![key()],
        None,
        "LosslessEgress.set_egress_port",
        &[arg(mac(ROUTER_MAC), 6), arg(0, 1), arg(0, 4)],
    )
    .unwrap_or_else(|e| panic!("egress_port: {e:?}"));
    sw.mirroring_add(
        PORT_SESSION_BASE + port,
        MirrorSession {
            port: Some(port),
            mgrp: None,
            // As lossless-ctl writes it: generated frames enter the strict-priority queue 7.
            class_of_service: 7,
        },
    )
    .expect("clone session");
}

/// 10.P.0.0/16 through next hop P (router interface P) to 10.P.0.1 at 02:00:00:00:0P:01.
fn route(sw: &mut Switch, port: u32) {
    let p = u64::from(port);
    let octet = port as u8;
    let mut ip = vec![0u8; 16];
    ip[12..].copy_from_slice(&[10, octet, 0, 1]);
    add(
        sw,
        "ipv4_route",
        vec![FieldMatch::Lpm {
            value: vec![10, octet, 0, 0],
            prefix_len: 16,
        }],
        "set_nexthop_id",
        &[arg(p, 2)],
    );
    add(
        sw,
        "nexthop",
        vec![exact(p, 2)],
        "set_ip_nexthop",
        &[arg(p, 2), ip.clone()],
    );
    add(
        sw,
        "neighbor",
        vec![exact(p, 2), FieldMatch::Exact(ip)],
        "set_dst_mac",
        &[arg(0x0200_0000_0001 | p << 8, 6)],
    );
    add(
        sw,
        "router_interface",
        vec![exact(p, 2)],
        "set_port_and_src_mac",
        &[arg(p, 2), arg(mac(ROUTER_MAC), 6)],
    );
}
