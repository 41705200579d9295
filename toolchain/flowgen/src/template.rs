//! Flow templates: the packets of one flow, prepared once so that sending a packet of any flow
//! is a copy of the template bytes plus a few patched fields.
//!
//! A template comes from a pcap file holding one flow (its first packet's source is the client)
//! or is built from a profile's `builtin` description. Per flow, the client and server IPv4
//! addresses and the client's port are rewritten; the IPv4 and TCP/UDP checksums are computed
//! from sums prepared at load time (RFC 1071 one's-complement arithmetic), and a RoCEv2 packet's
//! ICRC is recomputed because it covers the rewritten fields.

use std::path::Path;

use lossless_wire::rocev2::{self, Bth, Ext, L3Header, Reth};
use switch_ports::pcap;

use crate::error::{Error, FrameError};
use crate::profile::{Builtin, BuiltinKind, CapInfo, Source};

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const ETHERTYPE_VLAN: u16 = 0x8100;
const PROTO_TCP: u8 = 6;
const PROTO_UDP: u8 = 17;
const BTH_LEN: usize = 12;
/// Gaps and aging beyond a day are refused (or capped), so that generator time cannot overflow.
const MAX_GAP_USEC: f64 = 86_400e6;
/// New flows per second of one template: beyond this no core keeps up, and flow start times
/// would no longer be distinct nanoseconds.
pub const MAX_CPS: f64 = 1e9;
const ICRC_LEN: usize = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// Client to server: source is the client.
    C2s,
    S2c,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum L4 {
    Udp,
    Tcp,
    /// Another IP protocol: only the addresses are rewritten.
    Other,
}

/// One packet of a template, with what the per-flow rewrite needs to know about it.
#[derive(Debug, Clone)]
pub struct TemplatePacket {
    pub frame: Vec<u8>,
    pub dir: Dir,
    /// Time to the flow's next packet, ns (0 after the last).
    pub gap_ns: u64,
    ip_off: usize,
    l4_off: usize,
    l4: L4,
    /// One's-complement sum of the IPv4 header without addresses and checksum.
    ip_sum: u32,
    /// Sum of the TCP/UDP pseudo header and segment without addresses, client port and checksum.
    l4_sum: u32,
    /// A UDP packet sent without a checksum keeps it zero.
    l4_csum_off: bool,
    /// Offset of the BTH when the packet is RoCEv2 (UDP to 4791).
    bth_off: Option<usize>,
}

/// A flow's packets and how often flows of it start.
#[derive(Debug, Clone)]
pub struct Template {
    /// The pcap path or the built-in kind, for reports.
    pub name: String,
    pub packets: Vec<TemplatePacket>,
    /// New flows per second, multiplier applied.
    pub cps: f64,
    /// Consecutive flows sharing one client address (TRex `w`).
    pub w: u32,
    /// How long a flow's state lingers after its last packet, ns.
    pub aging_ns: u64,
    /// Builtin RoCEv2 templates address a QP per flow.
    pub per_flow_qp: bool,
}

/// The addresses one flow rewrites into its template's packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rewrite {
    pub client: u32,
    pub server: u32,
    pub client_port: u16,
    /// RoCEv2 destination QP, when the template addresses a QP per flow.
    pub dest_qp: Option<u32>,
}

impl Template {
    /// Sum of the gaps: how long a flow of this template lasts, ns (aging excluded).
    pub fn span_ns(&self) -> u64 {
        self.packets.iter().map(|p| p.gap_ns).sum()
    }

    pub fn bytes_per_flow(&self) -> u64 {
        self.packets.iter().map(|p| p.frame.len() as u64).sum()
    }

    /// Stretches every gap by `factor` (how `--active-flows` holds N flows at a fixed rate).
    pub fn scale_gaps(&mut self, factor: f64) {
        for p in &mut self.packets {
            p.gap_ns = (p.gap_ns as f64 * factor).round() as u64;
        }
    }

    /// Loads the template of one `cap_info` entry; `dir` resolves relative pcap paths and
    /// `yaml_path` (e.g. `cap_info[0]`) locates errors.
    pub fn load(
        cap: &CapInfo,
        dir: &Path,
        multiplier: f64,
        aging: (f64, f64),
        yaml_path: &str,
    ) -> Result<Template, Error> {
        let (name, frames, tcp) = match &cap.source {
            Source::Pcap(p) => {
                let full = dir.join(p);
                let recs = pcap::read_file(&full)
                    .map_err(|e| Error::template(format!("{yaml_path}.name"), e.to_string()))?;
                if recs.is_empty() {
                    return Err(Error::template(
                        format!("{yaml_path}.name: {}", full.display()),
                        "no packets",
                    ));
                }
                if recs.len() > u16::MAX as usize - 1 {
                    return Err(Error::template(
                        format!("{yaml_path}.name: {}", full.display()),
                        format!("{} packets, at most 65534 per flow", recs.len()),
                    ));
                }
                let frames: Vec<Vec<u8>> = recs.into_iter().map(|r| r.data).collect();
                let tcp = frames
                    .first()
                    .and_then(|f| parse(f).ok())
                    .map(|p| p.l4 == L4::Tcp);
                (p.display().to_string(), frames, tcp.unwrap_or(false))
            }
            Source::Builtin(b) => (
                b.kind.to_string(),
                build_builtin(b),
                b.kind == BuiltinKind::Tcp,
            ),
        };
        let mut packets = Vec::with_capacity(frames.len());
        let mut client_server: Option<([u8; 4], [u8; 4])> = None;
        for (i, frame) in frames.into_iter().enumerate() {
            let at = || match &cap.source {
                Source::Pcap(p) => format!("{yaml_path}.name: {}: record {}", p.display(), i + 1),
                Source::Builtin(_) => format!("{yaml_path}.builtin: packet {}", i + 1),
            };
            let parsed = parse(&frame).map_err(|source| Error::Frame { at: at(), source })?;
            let src: [u8; 4] = slice4(&frame, parsed.ip_off + 12);
            let dst: [u8; 4] = slice4(&frame, parsed.ip_off + 16);
            let (client, server) = *client_server.get_or_insert((src, dst));
            let dir = if (src, dst) == (client, server) {
                Dir::C2s
            } else if (src, dst) == (server, client) {
                Dir::S2c
            } else {
                return Err(Error::template(
                    at(),
                    format!(
                        "addresses {}->{} are not those of the template's flow ({}->{}); a template holds one flow",
                        ip(src),
                        ip(dst),
                        ip(client),
                        ip(server)
                    ),
                ));
            };
            packets.push(prepare(frame, parsed, dir));
        }
        for (field, usec) in [("ipg", cap.ipg.0), ("rtt", cap.rtt.0)] {
            if usec > MAX_GAP_USEC {
                return Err(Error::template(
                    format!("{yaml_path}.{field}"),
                    format!("{usec} us is above the {MAX_GAP_USEC} us (one day) limit"),
                ));
            }
        }
        let cps = cap.cps.0 * multiplier;
        if cps > MAX_CPS {
            return Err(Error::template(
                format!("{yaml_path}.cps"),
                format!(
                    "{} x multiplier {multiplier:.3e} = {cps:.3e} new flows per second, above {MAX_CPS:e}",
                    cap.cps.0
                ),
            ));
        }
        let n = packets.len();
        for i in 0..n.saturating_sub(1) {
            let turn = packets[i].dir != packets[i + 1].dir;
            let usec = if turn { cap.rtt.0 } else { cap.ipg.0 };
            packets[i].gap_ns = (usec * 1000.0).round() as u64;
        }
        let per_flow_qp =
            matches!(&cap.source, Source::Builtin(b) if b.kind == BuiltinKind::Rocev2Write);
        let aging = if tcp { aging.0 } else { aging.1 }.min(MAX_GAP_USEC / 1e6);
        Ok(Template {
            name,
            packets,
            cps,
            w: cap.w,
            aging_ns: (aging * 1e9).round() as u64,
            per_flow_qp,
        })
    }
}

fn slice4(b: &[u8], at: usize) -> [u8; 4] {
    [b[at], b[at + 1], b[at + 2], b[at + 3]]
}

fn ip(a: [u8; 4]) -> std::net::Ipv4Addr {
    std::net::Ipv4Addr::from(a)
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

struct Parsed {
    ip_off: usize,
    l4_off: usize,
    l4: L4,
}

/// Locates the IPv4 and transport headers of an Ethernet frame (one optional VLAN tag).
fn parse(frame: &[u8]) -> Result<Parsed, FrameError> {
    if frame.len() < 14 {
        return Err(FrameError::Short(frame.len()));
    }
    let (ip_off, ethertype) = match be16(frame, 12) {
        ETHERTYPE_VLAN if frame.len() >= 18 => (18, be16(frame, 16)),
        t => (14, t),
    };
    match ethertype {
        ETHERTYPE_IPV4 => {}
        ETHERTYPE_IPV6 => return Err(FrameError::Ipv6),
        t => return Err(FrameError::Ethertype(t)),
    }
    let ip = &frame[ip_off.min(frame.len())..];
    if ip.len() < 20 || ip[0] >> 4 != 4 {
        return Err(FrameError::BadIpv4);
    }
    let ihl = (ip[0] & 0xf) as usize * 4;
    let total = be16(ip, 2) as usize;
    if ihl < 20 || total < ihl || total > ip.len() {
        return Err(FrameError::Ipv4Length {
            ihl,
            total,
            len: ip.len(),
        });
    }
    let fragmented = be16(ip, 6) & 0x3fff != 0;
    let l4_off = ip_off + ihl;
    let seg = total - ihl;
    let l4 = match ip[9] {
        PROTO_UDP if !fragmented && seg >= 8 => L4::Udp,
        PROTO_TCP if !fragmented && seg >= 20 => L4::Tcp,
        PROTO_UDP | PROTO_TCP if !fragmented => return Err(FrameError::Transport(seg)),
        _ => L4::Other,
    };
    Ok(Parsed { ip_off, l4_off, l4 })
}

/// One's-complement sum of big-endian 16-bit words (an odd last byte is padded with zero).
fn sum16(b: &[u8]) -> u32 {
    let mut s = 0u32;
    let mut chunks = b.chunks_exact(2);
    for w in &mut chunks {
        s += u16::from_be_bytes([w[0], w[1]]) as u32;
    }
    if let [last] = chunks.remainder() {
        s += (*last as u32) << 8;
    }
    s
}

fn fold(mut s: u32) -> u16 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

fn prepare(frame: Vec<u8>, p: Parsed, dir: Dir) -> TemplatePacket {
    let ip_hdr = &frame[p.ip_off..p.l4_off];
    // Addresses (bytes 12..20) and checksum (10..12) are added per flow.
    let ip_sum = sum16(&ip_hdr[..10]) + sum16(&ip_hdr[20..]);
    let total = be16(&frame, p.ip_off + 2) as usize;
    let seg = &frame[p.l4_off..p.ip_off + total];
    let (l4_sum, l4_csum_off) = match p.l4 {
        L4::Udp | L4::Tcp => {
            let (csum_at, proto) = if p.l4 == L4::Udp {
                (6, PROTO_UDP)
            } else {
                (16, PROTO_TCP)
            };
            // Pseudo header (protocol, length), then the segment without ports and checksum;
            // the server's port is added back per direction.
            let s = proto as u32
                + seg.len() as u32
                + sum16(&seg[4..csum_at])
                + sum16(&seg[csum_at + 2..]);
            (s, p.l4 == L4::Udp && be16(seg, 6) == 0)
        }
        L4::Other => (0, true),
    };
    let bth_off = (p.l4 == L4::Udp
        && be16(seg, 2) == rocev2::UDP_PORT
        && seg.len() >= 8 + BTH_LEN + ICRC_LEN)
        .then_some(p.l4_off + 8);
    TemplatePacket {
        frame,
        dir,
        gap_ns: 0,
        ip_off: p.ip_off,
        l4_off: p.l4_off,
        l4: p.l4,
        ip_sum,
        l4_sum,
        l4_csum_off,
        bth_off,
    }
}

impl TemplatePacket {
    /// Writes this packet for the flow `rw` into `out` (replacing its contents).
    pub fn render(&self, rw: &Rewrite, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&self.frame);
        let (src, dst) = match self.dir {
            Dir::C2s => (rw.client, rw.server),
            Dir::S2c => (rw.server, rw.client),
        };
        let ip = self.ip_off;
        out[ip + 12..ip + 16].copy_from_slice(&src.to_be_bytes());
        out[ip + 16..ip + 20].copy_from_slice(&dst.to_be_bytes());
        let addr_sum = (src >> 16) + (src & 0xffff) + (dst >> 16) + (dst & 0xffff);
        let ip_csum = !fold(self.ip_sum + addr_sum);
        out[ip + 10..ip + 12].copy_from_slice(&ip_csum.to_be_bytes());
        if self.l4 == L4::Other {
            return;
        }
        let l4 = self.l4_off;
        let port_at = match self.dir {
            Dir::C2s => l4,
            Dir::S2c => l4 + 2,
        };
        out[port_at..port_at + 2].copy_from_slice(&rw.client_port.to_be_bytes());
        let ports = be16(out, l4) as u32 + be16(out, l4 + 2) as u32;
        if let (Some(bth), Some(qp)) = (self.bth_off, rw.dest_qp) {
            out[bth + 5..bth + 8].copy_from_slice(&qp.to_be_bytes()[1..]);
        }
        if !self.l4_csum_off {
            let csum_at = l4 + if self.l4 == L4::Udp { 6 } else { 16 };
            let mut c = !fold(self.l4_sum + addr_sum + ports);
            if self.l4 == L4::Udp && c == 0 {
                c = 0xffff; // zero means "no checksum" in UDP (RFC 768)
            }
            out[csum_at..csum_at + 2].copy_from_slice(&c.to_be_bytes());
        }
        if let Some(bth) = self.bth_off {
            let total = be16(out, ip + 2) as usize;
            let end = ip + total;
            let crc = rocev2::icrc(&out[ip..l4], &out[l4..bth], &out[bth..end - ICRC_LEN]);
            out[end - ICRC_LEN..end].copy_from_slice(&crc.to_le_bytes());
        }
    }
}

/// Builds the frames of a built-in flow; the addresses and client port are placeholders that
/// every flow rewrites.
fn build_builtin(b: &Builtin) -> Vec<Vec<u8>> {
    let client = [10, 0, 0, 1];
    let server = [10, 0, 0, 2];
    let n = b.packets as usize;
    match b.kind {
        BuiltinKind::Udp => (0..n)
            .map(|i| udp_frame(b, client, server, &payload(b.frame_size as usize - 42, i)))
            .collect(),
        BuiltinKind::Tcp => tcp_flow(b, client, server),
        BuiltinKind::Rocev2Write => rocev2_write(b, client, server),
    }
}

/// A payload that differs per packet, so packet order is visible in a capture.
fn payload(len: usize, seq: usize) -> Vec<u8> {
    (0..len).map(|j| (seq + j) as u8).collect()
}

fn eth_ipv4(
    b: &Builtin,
    src: [u8; 4],
    dst: [u8; 4],
    dst_mac: [u8; 6],
    src_mac: [u8; 6],
    proto: u8,
    seg_len: usize,
) -> Vec<u8> {
    let mut f = Vec::with_capacity(34 + seg_len);
    f.extend_from_slice(&dst_mac);
    f.extend_from_slice(&src_mac);
    f.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    f.push(0x45);
    f.push(b.dscp << 2);
    f.extend_from_slice(&((20 + seg_len) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x40, 0, 64, proto, 0, 0]); // id 0, DF, TTL 64
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    f
}

/// Fills in the IPv4 and transport checksums of a frame built here.
fn finish_checksums(mut f: Vec<u8>) -> Vec<u8> {
    let ip_csum = !fold(sum16(&f[14..34]));
    f[24..26].copy_from_slice(&ip_csum.to_be_bytes());
    let proto = f[23];
    let csum_at = match proto {
        PROTO_UDP => 34 + 6,
        PROTO_TCP => 34 + 16,
        _ => return f,
    };
    let seg_len = f.len() - 34;
    let s = sum16(&f[26..34]) + proto as u32 + seg_len as u32 + sum16(&f[34..]);
    let mut c = !fold(s);
    if proto == PROTO_UDP && c == 0 {
        c = 0xffff;
    }
    f[csum_at..csum_at + 2].copy_from_slice(&c.to_be_bytes());
    f
}

fn udp_frame(b: &Builtin, src: [u8; 4], dst: [u8; 4], data: &[u8]) -> Vec<u8> {
    let mut f = eth_ipv4(
        b,
        src,
        dst,
        b.dst_mac.0,
        b.src_mac.0,
        PROTO_UDP,
        8 + data.len(),
    );
    f.extend_from_slice(&b.src_port.to_be_bytes());
    f.extend_from_slice(&b.dst_port.to_be_bytes());
    f.extend_from_slice(&((8 + data.len()) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(data);
    finish_checksums(f)
}

const SYN: u8 = 0x02;
const ACK: u8 = 0x10;
const PSH: u8 = 0x08;
const FIN: u8 = 0x01;

/// SYN, SYN-ACK, ACK, `packets - 4` data segments from the client, FIN-ACK.
fn tcp_flow(b: &Builtin, client: [u8; 4], server: [u8; 4]) -> Vec<Vec<u8>> {
    let isn_c: u32 = 0x1000_0000;
    let isn_s: u32 = 0x2000_0000;
    let data_len = b.frame_size as usize - 54;
    let seg = |c2s: bool, seq: u32, ack: u32, flags: u8, data: &[u8]| {
        let (src, dst, sp, dp, dmac, smac) = if c2s {
            (
                client,
                server,
                b.src_port,
                b.dst_port,
                b.dst_mac.0,
                b.src_mac.0,
            )
        } else {
            (
                server,
                client,
                b.dst_port,
                b.src_port,
                b.src_mac.0,
                b.dst_mac.0,
            )
        };
        let mut f = eth_ipv4(b, src, dst, dmac, smac, PROTO_TCP, 20 + data.len());
        f.extend_from_slice(&sp.to_be_bytes());
        f.extend_from_slice(&dp.to_be_bytes());
        f.extend_from_slice(&seq.to_be_bytes());
        f.extend_from_slice(&ack.to_be_bytes());
        f.push(5 << 4);
        f.push(flags);
        f.extend_from_slice(&65535u16.to_be_bytes());
        f.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
        f.extend_from_slice(data);
        finish_checksums(f)
    };
    let mut out = vec![
        seg(true, isn_c, 0, SYN, &[]),
        seg(false, isn_s, isn_c + 1, SYN | ACK, &[]),
        seg(true, isn_c + 1, isn_s + 1, ACK, &[]),
    ];
    let mut seq = isn_c + 1;
    for i in 0..b.packets as usize - 4 {
        let data = payload(data_len, i);
        out.push(seg(true, seq, isn_s + 1, ACK | PSH, &data));
        seq = seq.wrapping_add(data_len as u32);
    }
    out.push(seg(true, seq, isn_s + 1, FIN | ACK, &[]));
    out
}

/// One RDMA WRITE message as FIRST, MIDDLE.., LAST packets (ONLY for a single packet), each
/// carrying as much payload as the frame size leaves after the headers.
fn rocev2_write(b: &Builtin, client: [u8; 4], server: [u8; 4]) -> Vec<Vec<u8>> {
    use rocev2::opcode::*;
    let n = b.packets as usize;
    let mtu_payload = b.frame_size as usize - crate::profile::ETH_IPV4_LEN - 8 - BTH_LEN - ICRC_LEN;
    let first_payload = mtu_payload - rocev2::RETH_LEN;
    let total = first_payload + (n - 1) * mtu_payload;
    let l3 = L3Header {
        dst_mac: b.dst_mac.0,
        src_mac: b.src_mac.0,
        vlan: None,
        src_ip: client,
        dst_ip: server,
        dscp: b.dscp,
        ecn: rocev2::ECN_ECT0,
        ttl: 64,
        ip_id: 0,
        udp_src: b.src_port,
    };
    let reth = Reth {
        va: 0x1000,
        rkey: 0x100,
        dma_len: total as u32,
    };
    (0..n)
        .map(|i| {
            let (op, ext, len) = match (i, n) {
                (0, 1) => (RC_WRITE_ONLY, Ext::Reth(reth), first_payload),
                (0, _) => (RC_WRITE_FIRST, Ext::Reth(reth), first_payload),
                (i, n) if i == n - 1 => (RC_WRITE_LAST, Ext::None, mtu_payload),
                _ => (RC_WRITE_MIDDLE, Ext::None, mtu_payload),
            };
            let mut bth = Bth::new(op, 1, i as u32);
            bth.ack_req = i == n - 1;
            let mut f = Vec::with_capacity(b.frame_size as usize);
            rocev2::build_frame(&mut f, &l3, &bth, &ext, &payload(len, i));
            f
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;

    fn full_checksums_ok(f: &[u8]) {
        let p = parse(f).expect("parses");
        let ihl = p.l4_off - p.ip_off;
        assert_eq!(
            fold(sum16(&f[p.ip_off..p.ip_off + ihl])),
            0xffff,
            "IPv4 checksum"
        );
        let total = be16(f, p.ip_off + 2) as usize;
        let seg = &f[p.l4_off..p.ip_off + total];
        let proto = f[p.ip_off + 9];
        if p.l4 != L4::Other && !(p.l4 == L4::Udp && be16(seg, 6) == 0) {
            let s = sum16(&f[p.ip_off + 12..p.ip_off + 20])
                + proto as u32
                + seg.len() as u32
                + sum16(seg);
            assert_eq!(fold(s), 0xffff, "transport checksum");
        }
    }

    fn builtin(kind: &str, packets: u16, frame: u16) -> Template {
        let yaml = format!(
            "generator: {{clients_start: 16.0.0.1, clients_end: 16.0.0.9, servers_start: 48.0.0.1, servers_end: 48.0.0.9}}\n\
             cap_info: [{{builtin: {{kind: {kind}, packets: {packets}, frame_size: {frame}}}, cps: 10, ipg: 100, rtt: 300}}]\n"
        );
        let prof = Profile::parse(&yaml, Path::new("t.yaml")).expect("profile");
        Template::load(
            &prof.cap_info[0],
            Path::new("."),
            1.0,
            (0.0, 0.0),
            "cap_info[0]",
        )
        .expect("template")
    }

    #[test]
    fn rewritten_packets_have_valid_checksums_and_addresses() {
        let rw = Rewrite {
            client: u32::from_be_bytes([16, 0, 0, 7]),
            server: u32::from_be_bytes([48, 0, 3, 200]),
            client_port: 40_000,
            dest_qp: Some(0x12_3456),
        };
        let mut out = Vec::new();
        for t in [
            builtin("udp", 3, 64),
            builtin("tcp", 6, 200),
            builtin("rocev2_write", 4, 1078),
        ] {
            for p in &t.packets {
                p.render(&rw, &mut out);
                assert_eq!(out.len(), p.frame.len());
                full_checksums_ok(&out);
                let (src, dst) = (slice4(&out, 26), slice4(&out, 30));
                let (sport, dport) = (be16(&out, 34), be16(&out, 36));
                match p.dir {
                    Dir::C2s => {
                        assert_eq!((src, dst), ([16, 0, 0, 7], [48, 0, 3, 200]));
                        if p.bth_off.is_none() {
                            assert_eq!(sport, 40_000);
                        }
                    }
                    Dir::S2c => {
                        assert_eq!((src, dst), ([48, 0, 3, 200], [16, 0, 0, 7]));
                        assert_eq!(dport, 40_000);
                    }
                }
                if p.bth_off.is_some() {
                    // The ICRC is checked by lossless-wire's parser.
                    let pkt = rocev2::Packet::parse(&out)
                        .expect("valid RoCEv2")
                        .expect("is RoCEv2");
                    assert_eq!(pkt.bth.dest_qp, 0x12_3456);
                    assert_eq!(dport, rocev2::UDP_PORT);
                }
            }
        }
    }

    #[test]
    fn builtin_shapes() {
        let t = builtin("tcp", 6, 100);
        let dirs: Vec<Dir> = t.packets.iter().map(|p| p.dir).collect();
        assert_eq!(
            dirs,
            [Dir::C2s, Dir::S2c, Dir::C2s, Dir::C2s, Dir::C2s, Dir::C2s]
        );
        // rtt where the direction turns, ipg otherwise.
        let gaps: Vec<u64> = t.packets.iter().map(|p| p.gap_ns).collect();
        assert_eq!(gaps, [300_000, 300_000, 100_000, 100_000, 100_000, 0]);
        assert!(t.packets.iter().all(|p| p.frame.len() <= 100));
        let r = builtin("rocev2_write", 3, 1078);
        let ops: Vec<u8> = r
            .packets
            .iter()
            .map(|p| rocev2::Packet::parse(&p.frame).unwrap().unwrap().bth.opcode)
            .collect();
        assert_eq!(ops, [0x06, 0x07, 0x08]);
        assert!(r.packets.iter().all(|p| p.frame.len() == 1078));
        let u = builtin("udp", 10, 64);
        assert_eq!(u.packets.len(), 10);
        assert!(u.packets.iter().all(|p| p.frame.len() == 64));
    }
}
