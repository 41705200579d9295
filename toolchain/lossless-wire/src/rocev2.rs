//! RoCEv2 (InfiniBand Architecture Annex A17): IB transport headers carried in IPv4/UDP to port 4791.
//!
//! Frame layout: Ethernet [802.1Q] / IPv4 / UDP(dst 4791) / BTH / extension headers / payload /
//! pad (0..3 bytes, so the payload ends on a 4-byte boundary) / ICRC (4 bytes).
//!
//! The ICRC is the Ethernet CRC-32 over, in order: eight 0xff bytes standing for the masked IB LRH,
//! the IP header with the fields routers rewrite set to ones (IPv4 TOS, TTL and header checksum;
//! IPv6 traffic class, flow label and hop limit), the UDP header with its checksum set to ones,
//! the BTH with its FECN/BECN/reserved byte set to ones, then everything up to the ICRC. It is
//! transmitted least significant byte first, like the Ethernet FCS.
//!
//! Parsing never panics: short or inconsistent frames give a [`RoceError`] that names the header
//! and the lengths involved, so a receiver can count it and drop the frame.

use crate::inet::{be16, be32, Ipv4};

pub const UDP_PORT: u16 = 4791;
pub const ETHERTYPE_IPV4: u16 = 0x0800;
pub const ETHERTYPE_VLAN: u16 = 0x8100;
pub const BTH_LEN: usize = 12;
pub const RETH_LEN: usize = 16;
pub const AETH_LEN: usize = 4;
pub const IMMDT_LEN: usize = 4;
pub const ICRC_LEN: usize = 4;
/// A CNP carries 16 reserved bytes after its BTH.
pub const CNP_PAD_LEN: usize = 16;
/// The partition key of the default partition, which RoCEv2 endpoints use unless configured.
pub const DEFAULT_PKEY: u16 = 0xffff;
/// ECN codepoints (RFC 3168) in the low two bits of the IPv4 TOS byte.
pub const ECN_NOT_ECT: u8 = 0b00;
pub const ECN_ECT1: u8 = 0b01;
pub const ECN_ECT0: u8 = 0b10;
pub const ECN_CE: u8 = 0b11;

const ETH_LEN: usize = 14;
const VLAN_LEN: usize = 4;
const IPV4_MIN_LEN: usize = 20;
const UDP_LEN: usize = 8;
const IPPROTO_UDP: u8 = 17;

/// Base transport header opcodes (IBA 9.2, table 38); the transport is the top three bits.
pub mod opcode {
    pub const RC_SEND_FIRST: u8 = 0x00;
    pub const RC_SEND_MIDDLE: u8 = 0x01;
    pub const RC_SEND_LAST: u8 = 0x02;
    pub const RC_SEND_LAST_IMM: u8 = 0x03;
    pub const RC_SEND_ONLY: u8 = 0x04;
    pub const RC_SEND_ONLY_IMM: u8 = 0x05;
    pub const RC_WRITE_FIRST: u8 = 0x06;
    pub const RC_WRITE_MIDDLE: u8 = 0x07;
    pub const RC_WRITE_LAST: u8 = 0x08;
    pub const RC_WRITE_LAST_IMM: u8 = 0x09;
    pub const RC_WRITE_ONLY: u8 = 0x0a;
    pub const RC_WRITE_ONLY_IMM: u8 = 0x0b;
    pub const RC_READ_REQUEST: u8 = 0x0c;
    pub const RC_READ_RESPONSE_FIRST: u8 = 0x0d;
    pub const RC_READ_RESPONSE_MIDDLE: u8 = 0x0e;
    pub const RC_READ_RESPONSE_LAST: u8 = 0x0f;
    pub const RC_READ_RESPONSE_ONLY: u8 = 0x10;
    pub const RC_ACK: u8 = 0x11;
    pub const RC_ATOMIC_ACK: u8 = 0x12;
    pub const RC_COMPARE_SWAP: u8 = 0x13;
    pub const RC_FETCH_ADD: u8 = 0x14;
    /// Unreliable connection: the RC send/write opcodes plus this offset.
    pub const UC_BASE: u8 = 0x20;
    /// Congestion notification packet (RoCEv2 annex A17.9.3).
    pub const CNP: u8 = 0x81;
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoceError {
    #[error("{header} truncated: frame has {len} bytes, {header} needs {needed}")]
    Truncated {
        header: &'static str,
        len: usize,
        needed: usize,
    },
    #[error("IPv4 header length field {ihl} words is below the 5-word minimum")]
    BadIhl { ihl: u8 },
    #[error("IPv4 total length {ip_len} is inconsistent with the {available}-byte frame")]
    BadIpLength { ip_len: usize, available: usize },
    #[error("UDP length {udp_len} is inconsistent with the IPv4 payload of {available} bytes")]
    BadUdpLength { udp_len: usize, available: usize },
    #[error("BTH opcode {opcode:#04x} is not an RC, UC or CNP opcode this endpoint handles")]
    UnsupportedOpcode { opcode: u8 },
    #[error("BTH transport version {tver} is not 0")]
    BadTransportVersion { tver: u8 },
    #[error("pad count {pad} exceeds the {payload}-byte payload")]
    BadPad { pad: u8, payload: usize },
    #[error("ICRC mismatch: frame carries {found:#010x}, computed {computed:#010x}")]
    BadIcrc { found: u32, computed: u32 },
}

/// Base transport header (12 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bth {
    pub opcode: u8,
    pub solicited: bool,
    pub mig_req: bool,
    pub pad: u8,
    pub tver: u8,
    pub pkey: u16,
    pub fecn: bool,
    pub becn: bool,
    /// 24 bits.
    pub dest_qp: u32,
    pub ack_req: bool,
    /// 24 bits.
    pub psn: u32,
}

impl Bth {
    /// A BTH for `opcode` to `dest_qp` at `psn` with the default partition and no flags.
    pub fn new(opcode: u8, dest_qp: u32, psn: u32) -> Self {
        Bth {
            opcode,
            solicited: false,
            mig_req: false,
            pad: 0,
            tver: 0,
            pkey: DEFAULT_PKEY,
            fecn: false,
            becn: false,
            dest_qp: dest_qp & 0xff_ffff,
            ack_req: false,
            psn: psn & 0xff_ffff,
        }
    }

    pub fn parse(b: &[u8]) -> Result<Self, RoceError> {
        need("BTH", b, BTH_LEN)?;
        Ok(Bth {
            opcode: b[0],
            solicited: b[1] & 0x80 != 0,
            mig_req: b[1] & 0x40 != 0,
            pad: (b[1] >> 4) & 0x3,
            tver: b[1] & 0xf,
            pkey: be16(b, 2),
            fecn: b[4] & 0x80 != 0,
            becn: b[4] & 0x40 != 0,
            dest_qp: be24(b, 5),
            ack_req: b[8] & 0x80 != 0,
            psn: be24(b, 9),
        })
    }

    pub fn write(&self, out: &mut Vec<u8>) {
        out.push(self.opcode);
        out.push(
            (self.solicited as u8) << 7
                | (self.mig_req as u8) << 6
                | (self.pad & 3) << 4
                | (self.tver & 0xf),
        );
        out.extend_from_slice(&self.pkey.to_be_bytes());
        out.push((self.fecn as u8) << 7 | (self.becn as u8) << 6);
        out.extend_from_slice(&self.dest_qp.to_be_bytes()[1..]);
        out.push((self.ack_req as u8) << 7);
        out.extend_from_slice(&self.psn.to_be_bytes()[1..]);
    }
}

/// RDMA extended transport header: where an RDMA WRITE (or READ) lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reth {
    pub va: u64,
    pub rkey: u32,
    pub dma_len: u32,
}

impl Reth {
    pub fn parse(b: &[u8]) -> Result<Self, RoceError> {
        need("RETH", b, RETH_LEN)?;
        Ok(Reth {
            va: u64::from_be_bytes(b[0..8].try_into().unwrap_or_default()),
            rkey: be32(b, 8),
            dma_len: be32(b, 12),
        })
    }

    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.va.to_be_bytes());
        out.extend_from_slice(&self.rkey.to_be_bytes());
        out.extend_from_slice(&self.dma_len.to_be_bytes());
    }
}

/// NAK codes of the AETH syndrome (IBA table 43).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NakCode {
    PsnSequenceError,
    InvalidRequest,
    RemoteAccessError,
    RemoteOperationalError,
    InvalidRdRequest,
    Reserved(u8),
}

impl NakCode {
    fn from_bits(v: u8) -> Self {
        match v {
            0 => NakCode::PsnSequenceError,
            1 => NakCode::InvalidRequest,
            2 => NakCode::RemoteAccessError,
            3 => NakCode::RemoteOperationalError,
            4 => NakCode::InvalidRdRequest,
            r => NakCode::Reserved(r),
        }
    }

    fn bits(self) -> u8 {
        match self {
            NakCode::PsnSequenceError => 0,
            NakCode::InvalidRequest => 1,
            NakCode::RemoteAccessError => 2,
            NakCode::RemoteOperationalError => 3,
            NakCode::InvalidRdRequest => 4,
            NakCode::Reserved(r) => r & 0x1f,
        }
    }
}

/// The AETH syndrome: bits 6:5 select ACK (00), RNR NAK (01) or NAK (11); bits 4:0 carry the
/// credit count, RNR timer or NAK code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syndrome {
    Ack { credits: u8 },
    RnrNak { timer: u8 },
    Nak(NakCode),
    Reserved(u8),
}

impl Syndrome {
    fn from_byte(b: u8) -> Self {
        let v = b & 0x1f;
        match (b >> 5) & 3 {
            0 => Syndrome::Ack { credits: v },
            1 => Syndrome::RnrNak { timer: v },
            3 => Syndrome::Nak(NakCode::from_bits(v)),
            _ => Syndrome::Reserved(b),
        }
    }

    fn byte(self) -> u8 {
        match self {
            Syndrome::Ack { credits } => credits & 0x1f,
            Syndrome::RnrNak { timer } => 0x20 | (timer & 0x1f),
            Syndrome::Nak(code) => 0x60 | code.bits(),
            Syndrome::Reserved(b) => b,
        }
    }
}

/// ACK extended transport header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Aeth {
    pub syndrome: Syndrome,
    /// Message sequence number, 24 bits.
    pub msn: u32,
}

impl Aeth {
    pub fn parse(b: &[u8]) -> Result<Self, RoceError> {
        need("AETH", b, AETH_LEN)?;
        Ok(Aeth {
            syndrome: Syndrome::from_byte(b[0]),
            msn: be24(b, 1),
        })
    }

    pub fn write(&self, out: &mut Vec<u8>) {
        out.push(self.syndrome.byte());
        out.extend_from_slice(&self.msn.to_be_bytes()[1..]);
    }
}

/// The extension headers that follow a BTH, as the opcode defines them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ext {
    None,
    Reth(Reth),
    Imm(u32),
    RethImm(Reth, u32),
    Aeth(Aeth),
    /// Atomic ACK: AETH and the original remote value.
    AethAtomic(Aeth, u64),
    /// Compare-swap / fetch-add request (28 bytes), kept raw: this endpoint does not issue atomics.
    Atomic([u8; 28]),
    /// The 16 reserved bytes of a CNP.
    CnpPad,
}

impl Ext {
    fn len(&self) -> usize {
        match self {
            Ext::None => 0,
            Ext::Reth(_) => RETH_LEN,
            Ext::Imm(_) => IMMDT_LEN,
            Ext::RethImm(..) => RETH_LEN + IMMDT_LEN,
            Ext::Aeth(_) => AETH_LEN,
            Ext::AethAtomic(..) => AETH_LEN + 8,
            Ext::Atomic(_) => 28,
            Ext::CnpPad => CNP_PAD_LEN,
        }
    }

    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Ext::None => {}
            Ext::Reth(r) => r.write(out),
            Ext::Imm(i) => out.extend_from_slice(&i.to_be_bytes()),
            Ext::RethImm(r, i) => {
                r.write(out);
                out.extend_from_slice(&i.to_be_bytes());
            }
            Ext::Aeth(a) => a.write(out),
            Ext::AethAtomic(a, v) => {
                a.write(out);
                out.extend_from_slice(&v.to_be_bytes());
            }
            Ext::Atomic(raw) => out.extend_from_slice(raw),
            Ext::CnpPad => out.extend_from_slice(&[0; CNP_PAD_LEN]),
        }
    }

    /// Parses the extension headers `opcode` defines from the bytes after the BTH.
    pub fn parse(opcode: u8, b: &[u8]) -> Result<Self, RoceError> {
        use opcode::*;
        let op = if (UC_BASE..UC_BASE + 0x0c).contains(&opcode) {
            opcode - UC_BASE
        } else {
            opcode
        };
        Ok(match op {
            RC_SEND_FIRST
            | RC_SEND_MIDDLE
            | RC_SEND_LAST
            | RC_SEND_ONLY
            | RC_WRITE_MIDDLE
            | RC_WRITE_LAST
            | RC_READ_RESPONSE_MIDDLE => Ext::None,
            RC_SEND_LAST_IMM | RC_SEND_ONLY_IMM | RC_WRITE_LAST_IMM => {
                need("ImmDt", b, IMMDT_LEN)?;
                Ext::Imm(be32(b, 0))
            }
            RC_WRITE_FIRST | RC_WRITE_ONLY | RC_READ_REQUEST => Ext::Reth(Reth::parse(b)?),
            RC_WRITE_ONLY_IMM => {
                need("RETH+ImmDt", b, RETH_LEN + IMMDT_LEN)?;
                Ext::RethImm(Reth::parse(b)?, be32(b, RETH_LEN))
            }
            RC_READ_RESPONSE_FIRST | RC_READ_RESPONSE_LAST | RC_READ_RESPONSE_ONLY | RC_ACK
                if opcode == op =>
            {
                Ext::Aeth(Aeth::parse(b)?)
            }
            RC_ATOMIC_ACK if opcode == op => {
                need("AtomicAckETH", b, AETH_LEN + 8)?;
                let v = u64::from_be_bytes(b[4..12].try_into().unwrap_or_default());
                Ext::AethAtomic(Aeth::parse(b)?, v)
            }
            RC_COMPARE_SWAP | RC_FETCH_ADD if opcode == op => {
                need("AtomicETH", b, 28)?;
                let mut raw = [0u8; 28];
                raw.copy_from_slice(&b[..28]);
                Ext::Atomic(raw)
            }
            CNP => {
                need("CNP", b, CNP_PAD_LEN)?;
                Ext::CnpPad
            }
            _ => return Err(RoceError::UnsupportedOpcode { opcode }),
        })
    }
}

/// The Ethernet, IPv4 and UDP fields a RoCEv2 sender chooses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct L3Header {
    pub dst_mac: [u8; 6],
    pub src_mac: [u8; 6],
    /// 802.1Q tag: (PCP, VLAN id). PCP is how a VLAN-marked lossless class is selected.
    pub vlan: Option<(u8, u16)>,
    pub src_ip: [u8; 4],
    pub dst_ip: [u8; 4],
    pub dscp: u8,
    pub ecn: u8,
    pub ttl: u8,
    pub ip_id: u16,
    pub udp_src: u16,
}

/// A parsed RoCEv2 frame borrowing its payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<'a> {
    pub l3: L3Header,
    pub bth: Bth,
    pub ext: Ext,
    /// Payload without pad bytes and ICRC.
    pub payload: &'a [u8],
    pub icrc: u32,
}

/// The UDP source port for a QP: RoCEv2 uses it as flow entropy for ECMP, so it is derived from
/// the QP number (folded into the 49152..65535 range that NICs use).
pub fn udp_src_port(qpn: u32) -> u16 {
    let h = (qpn ^ (qpn >> 14)) & 0x3fff;
    0xc000 | h as u16
}

/// 24-bit PSN arithmetic: `a - b` as a signed distance in the window of 2^23 either side.
pub fn psn_diff(a: u32, b: u32) -> i32 {
    let d = a.wrapping_sub(b) & 0xff_ffff;
    if d & 0x80_0000 != 0 {
        d as i32 - 0x100_0000
    } else {
        d as i32
    }
}

pub fn psn_add(a: u32, n: u32) -> u32 {
    a.wrapping_add(n) & 0xff_ffff
}

/// ICRC of a RoCEv2 packet given its IP header, UDP header and the bytes from the BTH up to (not
/// including) the ICRC. `ip` may be IPv4 or IPv6 (selected by its version nibble).
pub fn icrc(ip: &[u8], udp: &[u8], bth_onwards: &[u8]) -> u32 {
    icrc_hasher(ip, udp, bth_onwards).finalize()
}

/// The ICRC's CRC state after `ip`, `udp` and `bth_onwards` (masked), to be continued.
fn icrc_hasher(ip: &[u8], udp: &[u8], bth_onwards: &[u8]) -> crc32fast::Hasher {
    // CRC-32 as Ethernet's FCS. Both ends sum every data frame, so in lossless-sim this is the
    // hosts' largest cost: the carry-less multiply (PCLMULQDQ) path runs several times faster
    // than a lookup table. The masked headers go in as one piece (a few short updates take
    // the byte-table path each, at several times the cost per byte).
    const LRH: usize = 8;
    const IP_MAX: usize = 60;
    const BTH_MAX: usize = 64;
    let mut b = [0u8; LRH + IP_MAX + UDP_LEN + BTH_MAX];
    b[..LRH].fill(0xff);
    let n = ip.len().min(IP_MAX);
    let masked = &mut b[LRH..LRH + n];
    masked.copy_from_slice(&ip[..n]);
    if n >= 1 && masked[0] >> 4 == 6 && n >= 8 {
        // traffic class and flow label span bits 4..31; hop limit is byte 7
        masked[0] |= 0x0f;
        masked[1..4].fill(0xff);
        masked[7] = 0xff;
    } else if n >= 12 {
        masked[1] = 0xff; // TOS (DSCP and ECN)
        masked[8] = 0xff; // TTL
        masked[10] = 0xff; // header checksum
        masked[11] = 0xff;
    }
    let mut at = LRH + n;
    let un = udp.len().min(UDP_LEN);
    b[at..at + un].copy_from_slice(&udp[..un]);
    for byte in b.iter_mut().take(at + un).skip(at + 6) {
        *byte = 0xff; // the UDP checksum
    }
    at += un;
    let k = bth_onwards.len().min(BTH_MAX);
    b[at..at + k].copy_from_slice(&bth_onwards[..k]);
    if k > 4 {
        b[at + 4] = 0xff; // FECN, BECN and reserved bits
    }
    at += k;
    let mut d = crc32fast::Hasher::new();
    d.update(&b[..at]);
    d.update(&bth_onwards[k..]);
    d
}

/// A payload a frame names instead of carrying (a simulator's frame: the bytes stay in the
/// sender's memory, and no device on the way reads or writes them). The frame keeps the
/// payload's length, so everything that counts bytes sees the real frame, and its ICRC is the
/// one over the real bytes, which the sender sums in place. Its payload bytes are the CRC-32 of
/// the ICRC-covered headers as sent (4 bytes, little-endian), then `note` (where the bytes are,
/// for the receiver), then whatever the buffer held. The receiver checks its headers against
/// that CRC ([`Packet::parse_with`]): the payload and the ICRC behind them are the sender's,
/// so each payload is summed once.
#[derive(Debug, Clone, Copy)]
pub struct Elided<'a> {
    pub payload: &'a [u8],
    pub note: &'a [u8],
    /// Given when `payload` is all zeros: a run of its length carries the ICRC over it without
    /// reading it (a run of another length is not used).
    pub zeros: Option<&'a ZeroRun>,
}

/// The ICRC's CRC carried over a payload of `len` zero bytes and its pad in four table lookups
/// instead of a pass over the bytes (about 1 900 instructions for 4 KB): a simulator's
/// never-written sender memory goes out by reference ([`Elided::zeros`]) an MTU at a time.
///
/// CRC-32 keeps a 32-bit register (the complement of the CRC so far), and each zero byte maps it
/// through one fixed GF(2)-linear map; so do `len` of them. A linear map of 32 bits is the XOR
/// of its images of the register's four bytes: a table of 256 for each, built from the images of
/// the 32 single bits, which crc32fast itself computes over the zeros.
pub struct ZeroRun {
    len: usize,
    tables: Box<[[u32; 256]; 4]>,
}

impl std::fmt::Debug for ZeroRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZeroRun").field("len", &self.len).finish()
    }
}

impl ZeroRun {
    /// A run for payloads of `len` bytes (their pad included).
    pub fn new(len: usize) -> ZeroRun {
        let run = len + pad_len(len);
        let zeros = [0u8; 512];
        let image = |bit: u32| {
            let mut h = crc32fast::Hasher::new_with_initial(!bit);
            let mut left = run;
            while left > 0 {
                let n = left.min(zeros.len());
                h.update(&zeros[..n]);
                left -= n;
            }
            !h.finalize()
        };
        let bits: Vec<u32> = (0..32).map(|i| image(1 << i)).collect();
        let mut tables = Box::new([[0u32; 256]; 4]);
        for (k, t) in tables.iter_mut().enumerate() {
            for b in 1..256usize {
                let low = b & b.wrapping_neg();
                t[b] = if b == low {
                    bits[8 * k + low.trailing_zeros() as usize]
                } else {
                    t[low] ^ t[b ^ low]
                };
            }
        }
        ZeroRun { len, tables }
    }

    /// The payload length the run is for.
    pub fn payload_len(&self) -> usize {
        self.len
    }

    /// The CRC after the run's zeros, from `crc` before them.
    fn extend(&self, crc: u32) -> u32 {
        let r = !crc;
        let t = &self.tables;
        !(t[0][(r & 0xff) as usize]
            ^ t[1][(r >> 8 & 0xff) as usize]
            ^ t[2][(r >> 16 & 0xff) as usize]
            ^ t[3][(r >> 24) as usize])
    }
}

/// The pad bytes a payload of `len` takes to a multiple of 4.
fn pad_len(len: usize) -> usize {
    (4 - len % 4) % 4
}

/// The bytes an [`Elided`] payload takes for the CRC of the headers.
pub const ELIDED_CRC_LEN: usize = 4;

/// Appends a complete RoCEv2 frame (no FCS) to `out`: headers, payload, pad and ICRC. Lengths,
/// the IPv4 checksum and the BTH pad count are filled in here; `bth.pad` is ignored.
pub fn build_frame(out: &mut Vec<u8>, l3: &L3Header, bth: &Bth, ext: &Ext, payload: &[u8]) {
    // One allocation for the whole frame, not a doubling series as the payload is appended.
    out.reserve(headers_len(l3, ext) + payload.len() + 3 + ICRC_LEN);
    let at = build_headers(out, l3, bth, ext, payload.len());
    out.extend_from_slice(payload);
    out.extend_from_slice(&[0u8; 3][..at.pad]);
    let crc = icrc(&out[at.ip..at.udp], &out[at.udp..at.bth], &out[at.bth..]);
    out.extend_from_slice(&crc.to_le_bytes());
}

/// Writes a RoCEv2 frame as [`build_frame`] does into `out`, replacing what it held, with a
/// payload it names instead of carrying ([`Elided`]) when the payload can hold the CRC and the
/// note (otherwise the frame carries it). Of the payload's place only the CRC and the note are
/// written: the buffer's old bytes stay behind them.
pub fn write_frame_elided(out: &mut Vec<u8>, l3: &L3Header, bth: &Bth, ext: &Ext, p: &Elided) {
    let len = p.payload.len();
    let note_end = ELIDED_CRC_LEN + p.note.len();
    if len < note_end {
        out.clear();
        return build_frame(out, l3, bth, ext, p.payload);
    }
    // The headers go after the old bytes, then to the front. The buffer must hold that and the
    // frame, not both: asking for the old bytes plus the frame grew a reused buffer (and copied
    // its old bytes) whenever its length had moved by a few bytes since it last grew.
    let old = out.len();
    let head = headers_len(l3, ext);
    let total = head + len + pad_len(len) + ICRC_LEN;
    out.reserve(total.max(old + head) - old);
    let at = build_headers(out, l3, bth, ext, len);
    debug_assert_eq!(out.len() - old, head);
    out.copy_within(old.., 0);
    out.resize(total.max(old + head), 0);
    out.truncate(total);
    let (ip, udp, bth_at) = (at.ip - old, at.udp - old, at.bth - old);
    let mut d = icrc_hasher(&out[ip..udp], &out[udp..bth_at], &out[bth_at..head]);
    let head_crc = d.clone().finalize();
    let crc = match p.zeros.filter(|z| z.len == len) {
        Some(z) => {
            debug_assert!(
                p.payload.iter().all(|&b| b == 0),
                "a zero run over non-zeros"
            );
            z.extend(head_crc)
        }
        None => {
            d.update(p.payload);
            d.update(&[0u8; 3][..at.pad]);
            d.finalize()
        }
    };
    out[head..head + ELIDED_CRC_LEN].copy_from_slice(&head_crc.to_le_bytes());
    out[head + ELIDED_CRC_LEN..head + note_end].copy_from_slice(p.note);
    out[total - ICRC_LEN..].copy_from_slice(&crc.to_le_bytes());
}

/// Where [`build_headers`] put the IPv4, UDP and BTH headers, and the payload's pad.
struct Offsets {
    ip: usize,
    udp: usize,
    bth: usize,
    pad: usize,
}

/// The bytes [`build_headers`] appends.
fn headers_len(l3: &L3Header, ext: &Ext) -> usize {
    let vlan = if l3.vlan.is_some() { VLAN_LEN } else { 0 };
    ETH_LEN + vlan + IPV4_MIN_LEN + UDP_LEN + BTH_LEN + ext.len()
}

/// Appends the headers of a RoCEv2 frame with a payload of `len` bytes, up to and including
/// the extension headers.
fn build_headers(out: &mut Vec<u8>, l3: &L3Header, bth: &Bth, ext: &Ext, len: usize) -> Offsets {
    out.extend_from_slice(&l3.dst_mac);
    out.extend_from_slice(&l3.src_mac);
    if let Some((pcp, vid)) = l3.vlan {
        out.extend_from_slice(&ETHERTYPE_VLAN.to_be_bytes());
        out.extend_from_slice(&(((pcp as u16 & 7) << 13) | (vid & 0x0fff)).to_be_bytes());
    }
    out.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    let ip = out.len();
    let pad = pad_len(len);
    let udp_len = UDP_LEN + BTH_LEN + ext.len() + len + pad + ICRC_LEN;
    Ipv4 {
        dscp: l3.dscp,
        ecn: l3.ecn,
        id: l3.ip_id,
        ttl: l3.ttl,
        protocol: IPPROTO_UDP,
        src: l3.src_ip,
        dst: l3.dst_ip,
    }
    .write(out, udp_len);
    let udp = out.len();
    out.extend_from_slice(&l3.udp_src.to_be_bytes());
    out.extend_from_slice(&UDP_PORT.to_be_bytes());
    out.extend_from_slice(&(udp_len as u16).to_be_bytes());
    out.extend_from_slice(&[0, 0]); // RoCEv2 senders leave the UDP checksum zero
    let bth_at = out.len();
    Bth {
        pad: pad as u8,
        ..*bth
    }
    .write(out);
    ext.write(out);
    Offsets {
        ip,
        udp,
        bth: bth_at,
        pad,
    }
}

/// Where the IPv4 header of an Ethernet frame starts, if the frame is IPv4 (optionally one VLAN tag).
fn ipv4_offset(frame: &[u8]) -> Option<(usize, Option<(u8, u16)>)> {
    if frame.len() < ETH_LEN {
        return None;
    }
    match be16(frame, 12) {
        ETHERTYPE_IPV4 => Some((ETH_LEN, None)),
        ETHERTYPE_VLAN if frame.len() >= ETH_LEN + VLAN_LEN => {
            let tci = be16(frame, 14);
            (be16(frame, 16) == ETHERTYPE_IPV4)
                .then_some((ETH_LEN + VLAN_LEN, Some(((tci >> 13) as u8, tci & 0x0fff))))
        }
        _ => None,
    }
}

impl<'a> Packet<'a> {
    /// Parses an Ethernet frame (FCS stripped). `Ok(None)`: not IPv4/UDP to port 4791, so not ours.
    /// The ICRC is verified; a mismatch is [`RoceError::BadIcrc`].
    pub fn parse(frame: &'a [u8]) -> Result<Option<Self>, RoceError> {
        Self::parse_with(frame, |_, _| None)
    }

    /// Parses a frame whose payload may be named rather than carried ([`Elided`]): `named` is
    /// given the addresses and the bytes after the headers' CRC in the payload's place (the
    /// note), and returns the payload they name, if they name one. The headers are then checked
    /// against the CRC the sender took of them (a mismatch is [`RoceError::BadIcrc`] with those
    /// two CRCs), and the packet's payload is the named one. `None`: the frame carries its
    /// payload.
    pub fn parse_with(
        frame: &'a [u8],
        named: impl FnOnce(&L3Header, &'a [u8]) -> Option<&'a [u8]>,
    ) -> Result<Option<Self>, RoceError> {
        let Some((ip_at, vlan)) = ipv4_offset(frame) else {
            return Ok(None);
        };
        let ip = &frame[ip_at..];
        if ip.len() < IPV4_MIN_LEN || ip[0] >> 4 != 4 || ip[9] != IPPROTO_UDP {
            return Ok(None);
        }
        let ihl = (ip[0] & 0xf) as usize * 4;
        if ihl < IPV4_MIN_LEN {
            return Err(RoceError::BadIhl { ihl: ip[0] & 0xf });
        }
        if be16(ip, 6) & 0x3fff != 0 {
            return Ok(None); // a fragment: RoCEv2 is never fragmented (DF), so not ours
        }
        let ip_len = be16(ip, 2) as usize;
        if ip_len > ip.len() || ip_len < ihl + UDP_LEN {
            return Err(RoceError::BadIpLength {
                ip_len,
                available: ip.len(),
            });
        }
        let ip = &ip[..ip_len];
        let udp = &ip[ihl..];
        if be16(udp, 2) != UDP_PORT {
            return Ok(None);
        }
        let udp_len = be16(udp, 4) as usize;
        if udp_len > udp.len() || udp_len < UDP_LEN {
            return Err(RoceError::BadUdpLength {
                udp_len,
                available: udp.len(),
            });
        }
        let rest = &udp[UDP_LEN..udp_len];
        need("BTH+ICRC", rest, BTH_LEN + ICRC_LEN)?;
        let bth = Bth::parse(rest)?;
        if bth.tver != 0 {
            return Err(RoceError::BadTransportVersion { tver: bth.tver });
        }
        let body = &rest[..rest.len() - ICRC_LEN];
        let ext = Ext::parse(bth.opcode, &body[BTH_LEN..])?;
        let after = &body[BTH_LEN + ext.len()..];
        let pad = bth.pad as usize;
        if pad > after.len() {
            return Err(RoceError::BadPad {
                pad: bth.pad,
                payload: after.len(),
            });
        }
        let found =
            u32::from_le_bytes(rest[rest.len() - ICRC_LEN..].try_into().unwrap_or_default());
        let mut dst_mac = [0u8; 6];
        let mut src_mac = [0u8; 6];
        dst_mac.copy_from_slice(&frame[0..6]);
        src_mac.copy_from_slice(&frame[6..12]);
        let l3 = L3Header {
            dst_mac,
            src_mac,
            vlan,
            src_ip: [ip[12], ip[13], ip[14], ip[15]],
            dst_ip: [ip[16], ip[17], ip[18], ip[19]],
            dscp: ip[1] >> 2,
            ecn: ip[1] & 3,
            ttl: ip[8],
            ip_id: be16(ip, 4),
            udp_src: be16(udp, 0),
        };
        let head = BTH_LEN + ext.len();
        let carried = &after[..after.len() - pad];
        let note = carried.get(ELIDED_CRC_LEN..).and_then(|n| named(&l3, n));
        let (payload, found, computed) = match note {
            Some(p) if p.len() == carried.len() => {
                let sent = u32::from_le_bytes([carried[0], carried[1], carried[2], carried[3]]);
                let now = icrc(&ip[..ihl], &udp[..UDP_LEN], &body[..head]);
                (p, sent, now)
            }
            _ => (carried, found, icrc(&ip[..ihl], &udp[..UDP_LEN], body)),
        };
        if found != computed {
            return Err(RoceError::BadIcrc { found, computed });
        }
        let trailer = &rest[rest.len() - ICRC_LEN..];
        Ok(Some(Packet {
            l3,
            bth,
            ext,
            payload,
            icrc: u32::from_le_bytes(trailer.try_into().unwrap_or_default()),
        }))
    }
}

/// Sets ECN to CE on an IPv4 frame carrying ECT(0) or ECT(1), fixing the IPv4 checksum the way a
/// switch does (RFC 1624 incremental update). The ICRC masks the TOS byte, so it stays valid.
/// Returns false (frame untouched) when the frame is not IPv4 or not ECN-capable.
pub fn mark_ce(frame: &mut [u8]) -> bool {
    let Some((ip_at, _)) = ipv4_offset(frame) else {
        return false;
    };
    if frame.len() < ip_at + IPV4_MIN_LEN || frame[ip_at] >> 4 != 4 {
        return false;
    }
    let tos = frame[ip_at + 1];
    if tos & 3 == ECN_NOT_ECT || tos & 3 == ECN_CE {
        return false;
    }
    let old = u16::from_be_bytes([frame[ip_at], tos]);
    let new = u16::from_be_bytes([frame[ip_at], tos | ECN_CE]);
    let hc = be16(frame, ip_at + 10);
    let mut sum = (!hc as u32) + (!old as u32 & 0xffff) + new as u32;
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    frame[ip_at + 1] = tos | ECN_CE;
    frame[ip_at + 10..ip_at + 12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    true
}

fn need(header: &'static str, b: &[u8], needed: usize) -> Result<(), RoceError> {
    if b.len() < needed {
        Err(RoceError::Truncated {
            header,
            len: b.len(),
            needed,
        })
    } else {
        Ok(())
    }
}

fn be24(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([0, b[at], b[at + 1], b[at + 2]])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let digits: Vec<u8> = s
            .bytes()
            .filter(|c| c.is_ascii_hexdigit())
            .map(|c| (c as char).to_digit(16).unwrap() as u8)
            .collect();
        digits.chunks(2).map(|p| p[0] << 4 | p[1]).collect()
    }

    /// A CNP captured from a ConnectX-4 Lx NIC (published with scapy's RoCE tests): the ICRC the
    /// hardware computed is 82 fd 00 2a on the wire.
    const CX4_CNP: &str =
        "e41d2dab2bc2 7cfe90643b32 0800 45c2003c718c40004011 9161 0a001101 0a001201
        0000 12b7 0028 0000 8100ffff40000118 00000000 00000000000000000000000000000000 82fd002a";

    #[test]
    fn icrc_matches_hardware_captured_cnp() {
        let f = hex(CX4_CNP);
        let p = Packet::parse(&f).unwrap().unwrap();
        assert_eq!(p.bth.opcode, opcode::CNP);
        assert!(p.bth.becn && !p.bth.fecn);
        assert_eq!(p.bth.dest_qp, 0x118);
        assert_eq!(p.ext, Ext::CnpPad);
        assert_eq!(p.icrc.to_le_bytes(), [0x82, 0xfd, 0x00, 0x2a]);
        assert_eq!(p.l3.dscp, 0x30);
        assert_eq!(p.l3.ecn, ECN_ECT0);
    }

    #[test]
    fn build_reproduces_captured_cnp_bytes() {
        let f = hex(CX4_CNP);
        let p = Packet::parse(&f).unwrap().unwrap();
        let mut out = Vec::new();
        build_frame(&mut out, &p.l3, &p.bth, &p.ext, p.payload);
        assert_eq!(out, f);
    }

    /// Scapy's UC SEND_ONLY example (pad count 2, so the ICRC covers two pad bytes): its ICRC
    /// reads 0x78f353f3 in wire order.
    #[test]
    fn icrc_matches_scapy_uc_send_only_vector() {
        let l3 = L3Header {
            dst_mac: [0x24, 0x8a, 0x07, 0xa8, 0xfa, 0x22],
            src_mac: [0x24, 0x8a, 0x07, 0xa8, 0xfa, 0x22],
            vlan: None,
            src_ip: [192, 168, 0, 7],
            dst_ip: [192, 168, 0, 7],
            dscp: 0,
            ecn: 1,
            ttl: 64,
            ip_id: 1144,
            udp_src: 49152,
        };
        let bth = Bth {
            mig_req: true,
            ..Bth::new(opcode::UC_BASE + opcode::RC_SEND_ONLY, 211, 13571856)
        };
        let payload = b"F0\x81\x8b\xe2\x895\xd9\x0e\x9a\x95PT\x01\xbe\x88^P";
        let mut f = Vec::new();
        build_frame(&mut f, &l3, &bth, &Ext::None, payload);
        assert_eq!(f.len(), 14 + 64);
        assert_eq!(
            &f[24..26],
            &[0xb4, 0xd5],
            "IPv4 checksum as scapy computes it"
        );
        assert_eq!(&f[f.len() - 4..], &[0x78, 0xf3, 0x53, 0xf3]);
        let p = Packet::parse(&f).unwrap().unwrap();
        assert_eq!(p.bth.pad, 2);
        assert_eq!(p.payload, payload);
    }

    fn sample_l3() -> L3Header {
        L3Header {
            dst_mac: [2, 0, 0, 0, 0, 2],
            src_mac: [2, 0, 0, 0, 0, 1],
            vlan: Some((3, 100)),
            src_ip: [10, 0, 0, 1],
            dst_ip: [10, 0, 0, 2],
            dscp: 26,
            ecn: ECN_ECT0,
            ttl: 64,
            ip_id: 7,
            udp_src: udp_src_port(0x123),
        }
    }

    #[test]
    fn round_trips_write_first_ack_and_nak() {
        let l3 = sample_l3();
        let cases = [
            (
                Bth::new(opcode::RC_WRITE_FIRST, 0x123, 0xff_fffe),
                Ext::Reth(Reth {
                    va: 0x1000,
                    rkey: 0xabcd,
                    dma_len: 9000,
                }),
                vec![0x5a; 1024],
            ),
            (
                Bth::new(opcode::RC_ACK, 0x123, 5),
                Ext::Aeth(Aeth {
                    syndrome: Syndrome::Ack { credits: 31 },
                    msn: 9,
                }),
                vec![],
            ),
            (
                Bth::new(opcode::RC_ACK, 0x123, 5),
                Ext::Aeth(Aeth {
                    syndrome: Syndrome::Nak(NakCode::PsnSequenceError),
                    msn: 9,
                }),
                vec![],
            ),
            (
                Bth::new(opcode::RC_SEND_LAST_IMM, 1, 2),
                Ext::Imm(0xdead_beef),
                vec![1, 2, 3],
            ),
        ];
        for (bth, ext, payload) in cases {
            let mut f = Vec::new();
            build_frame(&mut f, &l3, &bth, &ext, &payload);
            let p = Packet::parse(&f).unwrap().unwrap();
            assert_eq!(p.l3, l3);
            assert_eq!(
                p.bth,
                Bth {
                    pad: p.bth.pad,
                    ..bth
                }
            );
            assert_eq!(p.ext, ext);
            assert_eq!(p.payload, &payload[..]);
        }
    }

    #[test]
    fn ce_marking_keeps_ip_checksum_and_icrc_valid() {
        let mut f = Vec::new();
        let l3 = L3Header {
            vlan: None,
            ..sample_l3()
        };
        build_frame(
            &mut f,
            &l3,
            &Bth::new(opcode::RC_SEND_ONLY, 1, 1),
            &Ext::None,
            b"x",
        );
        assert!(mark_ce(&mut f));
        assert_eq!(crate::inet::checksum(&[&f[14..34]]), 0);
        assert_eq!(Packet::parse(&f).unwrap().unwrap().l3.ecn, ECN_CE);
        assert!(!mark_ce(&mut f), "already CE");
    }

    #[test]
    fn every_truncation_and_corruption_is_an_error_not_a_panic() {
        let mut f = Vec::new();
        build_frame(
            &mut f,
            &sample_l3(),
            &Bth::new(opcode::RC_WRITE_ONLY, 9, 9),
            &Ext::Reth(Reth {
                va: 0,
                rkey: 1,
                dma_len: 3,
            }),
            b"abc",
        );
        for len in 0..f.len() {
            assert!(
                !matches!(Packet::parse(&f[..len]), Ok(Some(_))),
                "truncated to {len} still parsed"
            );
        }
        for i in 18..f.len() {
            for bit in 0..8 {
                let mut g = f.clone();
                g[i] ^= 1 << bit;
                // must not panic; masked bits (TOS, TTL, checksums, FECN/BECN) may still parse
                let _ = Packet::parse(&g);
            }
        }
        let mut g = f.clone();
        let last = g.len() - 5;
        g[last] ^= 1;
        assert!(matches!(Packet::parse(&g), Err(RoceError::BadIcrc { .. })));
    }

    #[test]
    fn psn_arithmetic_wraps_at_24_bits() {
        assert_eq!(psn_add(0xff_ffff, 1), 0);
        assert_eq!(psn_diff(0, 0xff_ffff), 1);
        assert_eq!(psn_diff(0xff_ffff, 0), -1);
        assert_eq!(psn_diff(10, 3), 7);
    }

    #[test]
    fn udp_source_port_is_in_the_rocev2_range_and_varies_with_qp() {
        let ports: std::collections::HashSet<u16> = (0..256).map(udp_src_port).collect();
        assert!(ports.iter().all(|&p| p >= 0xc000));
        assert_eq!(ports.len(), 256);
    }

    /// A WRITE_FIRST with a payload of `len` bytes (odd lengths take a pad), carried and named
    /// (written over a buffer of 0xaa).
    fn full_and_elided(len: usize, note: &[u8]) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
        let payload: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
        let l3 = sample_l3();
        let bth = Bth::new(opcode::RC_WRITE_FIRST, 0x101, 77);
        let ext = Ext::Reth(Reth {
            va: 0x1000,
            rkey: 5,
            dma_len: 8192,
        });
        let (mut full, mut elided) = (Vec::new(), vec![0xaa; 9000]);
        build_frame(&mut full, &l3, &bth, &ext, &payload);
        let e = Elided {
            payload: &payload,
            note,
            zeros: None,
        };
        write_frame_elided(&mut elided, &l3, &bth, &ext, &e);
        (full, elided, payload)
    }

    /// The reference is crc32fast's pass over the zeros themselves, pad included.
    #[test]
    fn zero_run_carries_the_crc_as_a_pass_over_the_zeros_does() {
        for len in [0, 1, 3, 4, 255, 1023, 4096, 9001] {
            let run = ZeroRun::new(len);
            let zeros = vec![0u8; len + (4 - len % 4) % 4];
            for start in [0, 1, 0xffff_ffff, 0x1234_5678, 0x8000_0000] {
                let mut h = crc32fast::Hasher::new_with_initial(start);
                h.update(&zeros);
                assert_eq!(run.extend(start), h.finalize(), "len {len} from {start:#x}");
            }
        }
    }

    /// A zero payload named with a run of its length has the ICRC of the carried frame; with a
    /// run of another length the bytes are summed.
    #[test]
    fn elided_zeros_with_a_run_keep_the_carried_frames_icrc() {
        let (l3, bth) = (sample_l3(), Bth::new(opcode::RC_WRITE_MIDDLE, 0x101, 78));
        for len in [4096, 1021] {
            let payload = vec![0u8; len];
            let mut full = Vec::new();
            build_frame(&mut full, &l3, &bth, &Ext::None, &payload);
            for run_len in [len, len + 4] {
                let run = ZeroRun::new(run_len);
                let mut elided = vec![0xaa; 5000];
                let e = Elided {
                    payload: &payload,
                    note: &[0x5a; 16],
                    zeros: Some(&run),
                };
                write_frame_elided(&mut elided, &l3, &bth, &Ext::None, &e);
                assert_eq!(full.len(), elided.len());
                assert_eq!(
                    full[full.len() - 4..],
                    elided[elided.len() - 4..],
                    "len {len}, run {run_len}"
                );
                let p = Packet::parse_with(&elided, |_, _| Some(&payload[..]));
                assert_eq!(p.unwrap().unwrap(), Packet::parse(&full).unwrap().unwrap());
            }
        }
    }

    /// Ethernet, 802.1Q, IPv4, UDP, BTH, RETH: 14 + 4 + 20 + 8 + 12 + 16 bytes.
    const HEAD: usize = 74;

    #[test]
    fn elided_frame_is_the_full_frame_but_its_payload_bytes() {
        for len in [4096, 1023, 20] {
            let note = [0x5a; 16];
            let (full, elided, payload) = full_and_elided(len, &note);
            assert_eq!(full.len(), elided.len(), "len {len}");
            assert_eq!(full[..HEAD], elided[..HEAD]);
            assert_eq!(full[HEAD..HEAD + len], payload[..]);
            // The CRC of the ICRC-covered headers, the note, the buffer's old bytes.
            let crc = icrc(&full[18..38], &full[38..46], &full[46..HEAD]);
            assert_eq!(elided[HEAD..HEAD + 4], crc.to_le_bytes());
            assert_eq!(elided[HEAD + 4..HEAD + 20], note);
            assert!(elided[HEAD + 20..elided.len() - 4]
                .iter()
                .all(|&b| b == 0xaa));
            // The ICRC over the real bytes.
            assert_eq!(
                full[full.len() - 4..],
                elided[elided.len() - 4..],
                "len {len}"
            );
            let p = Packet::parse_with(&elided, |l3, n| {
                assert_eq!(l3.src_ip, [10, 0, 0, 1]);
                assert_eq!(n[..16], note);
                Some(&payload[..])
            })
            .unwrap()
            .unwrap();
            assert_eq!(p.payload, &payload[..]);
            assert_eq!(p, Packet::parse(&full).unwrap().unwrap());
        }
        // Too short for the CRC and the note: carried.
        let (full, elided, _) = full_and_elided(19, &[0x5a; 16]);
        assert_eq!(full, elided);
    }

    /// A reused buffer that holds its old bytes plus the headers, and the frame, is written in
    /// place: a pool's buffers do not grow (and copy) whenever a frame's length moves.
    #[test]
    fn elided_frame_reuses_a_buffer_that_holds_it() {
        let payload = vec![0u8; 4096];
        let (l3, bth) = (sample_l3(), Bth::new(opcode::RC_WRITE_MIDDLE, 0x101, 78));
        let mut full = Vec::new();
        build_frame(&mut full, &l3, &bth, &Ext::None, &payload);
        let head = full.len() - payload.len() - ICRC_LEN;
        for old in [0, 60, full.len() - 4, full.len(), full.len() + 4, 9000] {
            let room = full.len().max(old + head);
            let mut buf = Vec::with_capacity(room);
            buf.resize(old, 0xaa);
            let (at, cap) = (buf.as_ptr(), buf.capacity());
            let e = Elided {
                payload: &payload,
                note: &[0x5a; 16],
                zeros: None,
            };
            write_frame_elided(&mut buf, &l3, &bth, &Ext::None, &e);
            assert_eq!(
                (buf.as_ptr(), buf.capacity()),
                (at, cap),
                "old length {old}"
            );
            assert_eq!(buf.len(), full.len());
            assert_eq!(buf[..head], full[..head]);
            assert_eq!(buf[buf.len() - 4..], full[full.len() - 4..]);
        }
    }

    #[test]
    fn elided_frame_fails_its_icrc_without_its_payload_or_with_other_headers() {
        let (_, mut elided, payload) = full_and_elided(256, &[1; 16]);
        assert!(matches!(
            Packet::parse(&elided),
            Err(RoceError::BadIcrc { .. })
        ));
        let with = |f: &[u8]| Packet::parse_with(f, |_, _| Some(&payload[..])).map(|p| p.is_some());
        assert_eq!(with(&elided), Ok(true));
        // A named payload of another length is not the frame's: the carried bytes are checked.
        let short = Packet::parse_with(&elided, |_, _| Some(&payload[..252]));
        assert!(matches!(short, Err(RoceError::BadIcrc { .. })));
        // The destination QP, covered by the ICRC, changed on the way.
        elided[46 + 7] ^= 1;
        assert!(matches!(with(&elided), Err(RoceError::BadIcrc { .. })));
        // The TTL is not covered.
        elided[46 + 7] ^= 1;
        elided[18 + 8] -= 1;
        assert_eq!(with(&elided), Ok(true));
    }
}
