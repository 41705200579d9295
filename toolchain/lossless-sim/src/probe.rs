//! Probes: one RoCEv2 RDMA WRITE frame from a host to another, timed from the moment it is handed
//! to the NIC to the moment its last bit reaches the destination. `lossless-sim run` sends one
//! between every ordered pair of hosts, one at a time, so each sees an idle fabric: its
//! latency is the sum over its hops of frame time, propagation and pipeline latency, and a
//! host that is not reached is reported. (The experiments' own traffic comes with roce-host on
//! the virtual clock; README.md.)

use crate::net::Sim;
use lossless_wire::rocev2::{
    build_frame, opcode, udp_src_port, Bth, Ext, L3Header, Packet, Reth, ECN_ECT0,
};

/// A probe sent: identified by its destination QP number (the tag) at the receiver.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Probe {
    pub from: String,
    pub to: String,
    pub dscp: u8,
    pub bytes: usize,
    pub sent_ns: u64,
    #[serde(skip)]
    tag: u32,
    #[serde(skip)]
    to_index: usize,
}

/// The RoCEv2 headers of a frame from host `from` (QP `qpn`, whose UDP source port it takes)
/// to host `to` through `from`'s router, ECT(0) as RoCEv2 NICs send with DCQCN.
pub fn l3_header(sim: &Sim, from: usize, to: usize, dscp: u8, qpn: u32) -> L3Header {
    let (src, dst) = (&sim.hosts[from], &sim.hosts[to]);
    L3Header {
        dst_mac: src.gateway_mac,
        src_mac: src.mac,
        vlan: None,
        src_ip: src.ip.octets(),
        dst_ip: dst.ip.octets(),
        dscp,
        ecn: ECN_ECT0,
        ttl: 64,
        ip_id: 0,
        udp_src: udp_src_port(qpn),
    }
}

/// The probe frame from host `from` to host `to`: RDMA WRITE Only of `payload` bytes.
pub fn frame(sim: &Sim, from: usize, to: usize, dscp: u8, payload: usize, tag: u32) -> Vec<u8> {
    let l3 = l3_header(sim, from, to, dscp, tag);
    let reth = Reth {
        va: 0,
        rkey: 0,
        dma_len: payload as u32,
    };
    let mut out = Vec::new();
    build_frame(
        &mut out,
        &l3,
        &Bth::new(opcode::RC_WRITE_ONLY, tag, 0),
        &Ext::Reth(reth),
        &vec![0u8; payload],
    );
    out
}

/// Schedules a probe between every ordered pair of hosts, `gap_ns` apart from `start_ns` on.
pub fn all_pairs(
    sim: &mut Sim,
    start_ns: u64,
    gap_ns: u64,
    dscp: u8,
    payload: usize,
) -> Vec<Probe> {
    let n = sim.hosts.len();
    let mut probes = Vec::new();
    for from in 0..n {
        for to in (0..n).filter(|&t| t != from) {
            let tag = probes.len() as u32 + 1;
            let at = start_ns + gap_ns * (tag as u64 - 1);
            let f = frame(sim, from, to, dscp, payload, tag);
            let bytes = f.len();
            sim.host_send(from, at, f);
            probes.push(Probe {
                from: sim.hosts[from].name.clone(),
                to: sim.hosts[to].name.clone(),
                dscp,
                bytes,
                sent_ns: at,
                tag,
                to_index: to,
            });
        }
    }
    probes
}

/// When each probe arrived (in `probes`' order), from what its destination received.
pub fn arrivals(sim: &Sim, probes: &[Probe]) -> Vec<Option<u64>> {
    probes
        .iter()
        .map(|p| {
            sim.hosts[p.to_index].rx.iter().find_map(|(t, f)| {
                let pkt = Packet::parse(f).ok().flatten()?;
                (pkt.bth.dest_qp == p.tag).then_some(*t)
            })
        })
        .collect()
}
