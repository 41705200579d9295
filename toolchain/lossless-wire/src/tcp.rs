//! TCP segments in IPv4 in Ethernet (RFC 9293 header, RFC 3168's ECE and CWR flags), as the
//! simulator's TCP hosts send and receive them: no options (the window scale the two ends use is
//! agreed outside the frame), no VLAN tag, no IP options. Both checksums are filled in on
//! building and checked on parsing.

use crate::inet::{be16, be32, checksum, Ipv4};
use crate::rocev2::ETHERTYPE_IPV4;

pub const IPPROTO_TCP: u8 = 6;
pub const ETH_LEN: usize = 14;
pub use crate::inet::IPV4_LEN;
pub const TCP_LEN: usize = 20;
/// Ethernet + IPv4 + TCP headers of every frame built here.
pub const HEADERS_LEN: usize = ETH_LEN + IPV4_LEN + TCP_LEN;

/// The TCP header's flag bits (byte 13).
pub mod flags {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const PSH: u8 = 0x08;
    pub const ACK: u8 = 0x10;
    pub const ECE: u8 = 0x40;
    pub const CWR: u8 = 0x80;
}

/// Everything of a frame but its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub dst_mac: [u8; 6],
    pub src_mac: [u8; 6],
    pub src_ip: [u8; 4],
    pub dst_ip: [u8; 4],
    pub dscp: u8,
    pub ecn: u8,
    pub ttl: u8,
    pub ip_id: u16,
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub window: u16,
}

/// A parsed frame: its header and its payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment<'a> {
    pub header: Header,
    pub payload: &'a [u8],
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TcpError {
    #[error("IPv4 header: {0}")]
    Ip(&'static str),
    #[error("TCP: frame of {len} bytes, IPv4 total length {ip_len}: segment truncated")]
    Truncated { len: usize, ip_len: usize },
    #[error("TCP: {0}")]
    Tcp(&'static str),
    #[error("IPv4 header checksum does not verify")]
    IpChecksum,
    #[error("TCP checksum does not verify")]
    TcpChecksum,
}

/// TCP's pseudo-header (RFC 9293 3.1): addresses, zero, protocol, TCP length.
fn pseudo(src: [u8; 4], dst: [u8; 4], tcp_len: usize) -> [u8; 12] {
    let mut p = [0u8; 12];
    p[..4].copy_from_slice(&src);
    p[4..8].copy_from_slice(&dst);
    p[9] = IPPROTO_TCP;
    p[10..].copy_from_slice(&(tcp_len as u16).to_be_bytes());
    p
}

/// Writes the frame of `h` carrying `payload` into `out` (cleared first), checksums included.
pub fn build_frame(out: &mut Vec<u8>, h: &Header, payload: &[u8]) {
    out.clear();
    out.extend_from_slice(&h.dst_mac);
    out.extend_from_slice(&h.src_mac);
    out.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    let tcp_len = TCP_LEN + payload.len();
    Ipv4 {
        dscp: h.dscp,
        ecn: h.ecn,
        id: h.ip_id,
        ttl: h.ttl,
        protocol: IPPROTO_TCP,
        src: h.src_ip,
        dst: h.dst_ip,
    }
    .write(out, tcp_len);
    out.extend_from_slice(&h.src_port.to_be_bytes());
    out.extend_from_slice(&h.dst_port.to_be_bytes());
    out.extend_from_slice(&h.seq.to_be_bytes());
    out.extend_from_slice(&h.ack.to_be_bytes());
    out.push(((TCP_LEN / 4) as u8) << 4);
    out.push(h.flags);
    out.extend_from_slice(&h.window.to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
    out.extend_from_slice(payload);
    let at = ETH_LEN + IPV4_LEN;
    let sum = checksum(&[&pseudo(h.src_ip, h.dst_ip, tcp_len), &out[at..]]);
    out[at + 16..at + 18].copy_from_slice(&sum.to_be_bytes());
}

/// The frame's segment; `Ok(None)` when it is not an untagged IPv4 frame carrying TCP. IP and TCP
/// options are skipped; both checksums must verify. Never panics.
pub fn parse(frame: &[u8]) -> Result<Option<Segment<'_>>, TcpError> {
    if frame.len() < ETH_LEN + IPV4_LEN || be16(frame, 12) != ETHERTYPE_IPV4 {
        return Ok(None);
    }
    let ip = &frame[ETH_LEN..];
    if ip[0] >> 4 != 4 {
        return Err(TcpError::Ip("version is not 4"));
    }
    if ip[9] != IPPROTO_TCP {
        return Ok(None);
    }
    let ihl = usize::from(ip[0] & 0xf) * 4;
    let ip_len = usize::from(be16(ip, 2));
    if ihl < IPV4_LEN || ip_len < ihl + TCP_LEN {
        return Err(TcpError::Ip("header or total length too short for TCP"));
    }
    if ip_len > ip.len() {
        return Err(TcpError::Truncated {
            len: frame.len(),
            ip_len,
        });
    }
    if checksum(&[&ip[..ihl]]) != 0 {
        return Err(TcpError::IpChecksum);
    }
    let seg = &ip[ihl..ip_len];
    let off = usize::from(seg[12] >> 4) * 4;
    if off < TCP_LEN || off > seg.len() {
        return Err(TcpError::Tcp("data offset outside the segment"));
    }
    let src_ip: [u8; 4] = [ip[12], ip[13], ip[14], ip[15]];
    let dst_ip: [u8; 4] = [ip[16], ip[17], ip[18], ip[19]];
    if checksum(&[&pseudo(src_ip, dst_ip, seg.len()), seg]) != 0 {
        return Err(TcpError::TcpChecksum);
    }
    let mut dst_mac = [0u8; 6];
    let mut src_mac = [0u8; 6];
    dst_mac.copy_from_slice(&frame[..6]);
    src_mac.copy_from_slice(&frame[6..12]);
    Ok(Some(Segment {
        header: Header {
            dst_mac,
            src_mac,
            src_ip,
            dst_ip,
            dscp: ip[1] >> 2,
            ecn: ip[1] & 3,
            ttl: ip[8],
            ip_id: be16(ip, 4),
            src_port: be16(seg, 0),
            dst_port: be16(seg, 2),
            seq: be32(seg, 4),
            ack: be32(seg, 8),
            flags: seg[13],
            window: be16(seg, 14),
        },
        payload: &seg[off..],
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Header {
        Header {
            dst_mac: [2, 0, 0, 0, 0, 1],
            src_mac: [2, 0, 0, 0, 0, 2],
            src_ip: [10, 0, 1, 2],
            dst_ip: [10, 0, 8, 2],
            dscp: 0,
            ecn: 2,
            ttl: 64,
            ip_id: 7,
            src_port: 40000,
            dst_port: 5201,
            seq: 0x0102_0304,
            ack: 0xa0b0_c0d0,
            flags: flags::ACK | flags::PSH,
            window: 512,
        }
    }

    #[test]
    fn frame_field_by_field() {
        let mut f = Vec::new();
        build_frame(&mut f, &sample(), b"hello");
        assert_eq!(f.len(), HEADERS_LEN + 5);
        assert_eq!(&f[12..14], &[0x08, 0x00]);
        // IPv4: version/IHL, TOS = DSCP 0 / ECT(0), total length 45, id, DF, TTL, protocol 6.
        assert_eq!(&f[14..24], &[0x45, 0x02, 0, 45, 0, 7, 0x40, 0, 64, 6]);
        assert_eq!(&f[26..34], &[10, 0, 1, 2, 10, 0, 8, 2]);
        // TCP: ports 40000 / 5201, seq, ack, data offset 5 words, flags, window.
        assert_eq!(&f[34..38], &[0x9c, 0x40, 0x14, 0x51]);
        assert_eq!(&f[38..46], &[1, 2, 3, 4, 0xa0, 0xb0, 0xc0, 0xd0]);
        assert_eq!(&f[46..50], &[0x50, 0x18, 0x02, 0x00]);
        assert_eq!(&f[54..], b"hello");
        // The checksums by RFC 1071's rule, summed here by hand: a header with a right checksum
        // sums to 0xffff.
        let fold = |words: &[u16]| {
            let mut s: u32 = words.iter().map(|&w| u32::from(w)).sum();
            while s > 0xffff {
                s = (s & 0xffff) + (s >> 16);
            }
            s
        };
        let ip: Vec<u16> = f[14..34]
            .chunks(2)
            .map(|w| u16::from_be_bytes([w[0], w[1]]))
            .collect();
        assert_eq!(fold(&ip), 0xffff);
        // Pseudo-header words: addresses, protocol 6, TCP length 25; then the segment, its odd
        // last byte padded with zero.
        let mut tcp = vec![0x0a00, 0x0102, 0x0a00, 0x0802, 6, 25];
        let mut seg = f[34..].to_vec();
        seg.push(0);
        tcp.extend(seg.chunks(2).map(|w| u16::from_be_bytes([w[0], w[1]])));
        assert_eq!(fold(&tcp), 0xffff);
        let s = parse(&f).unwrap().unwrap();
        assert_eq!(s.header, sample());
        assert_eq!(s.payload, b"hello");
    }

    #[test]
    fn corruption_and_truncation_are_errors() {
        let mut f = Vec::new();
        build_frame(&mut f, &sample(), &[0u8; 100]);
        for at in [15, 40, 60] {
            let mut g = f.clone();
            g[at] ^= 0x10;
            assert!(parse(&g).is_err(), "flipped byte {at}");
        }
        for n in 0..f.len() {
            let _ = parse(&f[..n]);
        }
        assert!(matches!(
            parse(&f[..f.len() - 1]),
            Err(TcpError::Truncated { .. })
        ));
        // Not TCP: UDP in IPv4, or not IPv4 at all.
        let mut udp = f.clone();
        udp[23] = 17;
        assert_eq!(parse(&udp), Ok(None));
        assert_eq!(parse(&[0u8; 60]), Ok(None));
    }
}
