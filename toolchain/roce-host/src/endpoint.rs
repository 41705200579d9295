//! The RoCEv2 endpoint: reliable-connection queue pairs, the transmit scheduler and the receive
//! path, as one pure state machine. Frames go in with [`Endpoint::handle_frame`], come out of
//! [`Endpoint::poll_tx`], and [`Endpoint::next_wakeup`] says when something is next due; time is
//! the caller's `now` in nanoseconds, so tests run on a simulated clock.
//!
//! Per QP, the requester keeps a send queue of work requests with PSNs assigned at post time and
//! a transmit cursor; ACKs advance the oldest unacknowledged PSN (`una`) and complete work
//! requests; a PSN-sequence NAK or the retry timer moves the cursor back to `una` (go-back-N).
//! The responder accepts only the expected PSN, places WRITE payloads through the RETH's
//! address and rkey and SEND payloads at the start of the QP buffer, answers every AckReq packet
//! (coalesced: one pending ACK per QP), sends one NAK per out-of-order episode and re-ACKs
//! duplicates. CE-marked requests raise a CNP through the DCQCN notification point.
//!
//! Transmit order: ARP, then CNPs, then ACK/NAKs, then data round-robin over ready QPs. Every
//! frame waits for the link (paced at the configured rate, preamble, FCS and inter-frame gap
//! included) and for its priority to be unpaused; data also waits for its QP's DCQCN rate.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};

use lossless_wire::pfc::MacControl;
use lossless_wire::rocev2::{
    build_frame, opcode, psn_add, psn_diff, udp_src_port, write_frame_elided, Aeth, Bth, Elided,
    Ext, L3Header, NakCode, Packet, Reth, RoceError, Syndrome, ZeroRun, ECN_CE, ECN_ECT0,
    ECN_NOT_ECT, ELIDED_CRC_LEN,
};
use serde::{Deserialize, Serialize};

use crate::arp::{Arp, ArpOp};
use crate::dcqcn::{CnpLimiter, DcqcnConfig, ReactionPoint};
use crate::pause::{PauseCounters, PauseState};

/// Preamble + start delimiter (8) and inter-frame gap (12) that every frame costs on the wire.
const WIRE_OVERHEAD: usize = 20;
const FCS_LEN: usize = 4;
const MIN_FRAME_WITH_FCS: usize = 64;
const PSN_MASK: u32 = 0xff_ffff;
/// Upper bound of [`EndpointConfig::max_outstanding`].
pub const MAX_OUTSTANDING: u32 = 1 << 22;

#[derive(Debug, Clone, PartialEq)]
pub struct EndpointConfig {
    pub mac: [u8; 6],
    pub ip: [u8; 4],
    /// The NIC's line rate: link pacing and the length of a pause quantum.
    pub rate_bps: u64,
    /// RoCE path MTU: payload bytes per packet (256, 512, 1024, 2048 or 4096).
    pub mtu: usize,
    pub dscp: u8,
    /// 802.1Q PCP for data and ACKs; `None` sends untagged and the PFC priority is `dscp / 8`
    /// (the default DSCP-to-priority map of NICs in DSCP-trust mode).
    pub pcp: Option<u8>,
    pub vlan: u16,
    /// Send ECT(0) so switches can mark CE.
    pub ecn: bool,
    pub cnp_dscp: u8,
    /// PCP of CNPs when tagging.
    pub cnp_pcp: u8,
    /// DCQCN reaction and notification points; `None` turns DCQCN off (no CNPs sent, none obeyed).
    pub dcqcn: Option<DcqcnConfig>,
    /// Retransmission timeout (IB local ACK timeout 4.096 us x 2^14 = 67 ms by default).
    pub retry_timeout_ns: u64,
    /// Timeouts tolerated before the QP fails its work requests (IB retry_cnt, 7).
    pub retry_cnt: u32,
    /// Most PSNs in flight per QP (at most [`MAX_OUTSTANDING`]).
    pub max_outstanding: u32,
    /// AckReq on every this-many PSNs besides the last packet of each message (a power of two).
    pub ack_every: u32,
    pub max_send_wr: usize,
    /// QPNs are allocated upwards from here.
    pub qpn_base: u32,
    /// Data payloads of at least [`PAYLOAD_REF_LEN`] bytes leave as references to this
    /// endpoint's memory ([`PayloadRef`]), not as bytes: for a simulator whose receiving
    /// endpoints take them with [`Endpoint::handle_frame_with`].
    pub payload_by_reference: bool,
}

impl EndpointConfig {
    pub fn new(mac: [u8; 6], ip: [u8; 4]) -> Self {
        EndpointConfig {
            mac,
            ip,
            rate_bps: 100_000_000_000,
            mtu: 1024,
            dscp: 26,
            pcp: None,
            vlan: 0,
            ecn: true,
            cnp_dscp: 48,
            cnp_pcp: 6,
            dcqcn: None,
            retry_timeout_ns: 67_108_864,
            retry_cnt: 7,
            max_outstanding: 256,
            ack_every: 16,
            max_send_wr: 4096,
            qpn_base: 0x100,
            payload_by_reference: false,
        }
    }

    /// PFC priority of data and ACK frames.
    pub fn data_prio(&self) -> u8 {
        self.pcp.unwrap_or(self.dscp >> 3) & 7
    }

    /// PFC priority of CNPs.
    pub fn cnp_prio(&self) -> u8 {
        match self.pcp {
            Some(_) => self.cnp_pcp & 7,
            None => self.cnp_dscp >> 3,
        }
    }
}

/// What a peer needs to reach one of our QPs (perftest exchanges the same out of band).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct QpInfo {
    pub qpn: u32,
    /// First PSN our requester sends (the peer's expected PSN).
    pub psn: u32,
    /// Base address and key of our buffer, the target of the peer's WRITEs.
    pub va: u64,
    pub rkey: u32,
    pub len: u64,
}

/// The other end of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer {
    pub ip: [u8; 4],
    pub mac: [u8; 6],
    pub qp: QpInfo,
}

/// A data payload a frame names instead of carrying ([`EndpointConfig::payload_by_reference`];
/// the frame's form is lossless-wire's [`Elided`]): `len` bytes of QP `qpn`'s memory from
/// `offset`, at the endpoint with address `ip` (the frame's source). Verbs leave a posted
/// buffer to the NIC until its work request completes, which is after the receiver has placed
/// it, so the receiver may read it from the sender's memory when the frame arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PayloadRef {
    pub ip: [u8; 4],
    pub qpn: u32,
    pub offset: usize,
    pub len: usize,
    /// The sender's QP memory was all zeros when it sent (nothing had written it): placing the
    /// payload into a receiving buffer that is all zeros too changes nothing, and is skipped.
    pub zeros: bool,
}

/// The smallest payload sent by reference: the headers' CRC, then the reference (a mark, the
/// QPN, the offset, whether the memory is all zeros). A carried payload that holds the mark there is taken for a reference (by
/// [`Endpoint::handle_frame_with`] only).
pub const PAYLOAD_REF_LEN: usize = ELIDED_CRC_LEN + NOTE_LEN;
const NOTE_LEN: usize = 21;
const PAYLOAD_REF_MARK: [u8; 8] = [0xb7, 0x9e, 0x37, 0x79, 0x7f, 0x4a, 0x7c, 0x15];

/// The note a frame carries for a payload of QP `qpn`'s memory at `offset`.
fn ref_note(qpn: u32, offset: usize, zeros: bool) -> [u8; NOTE_LEN] {
    let mut n = [0u8; NOTE_LEN];
    n[..8].copy_from_slice(&PAYLOAD_REF_MARK);
    n[8..12].copy_from_slice(&qpn.to_be_bytes());
    n[12..20].copy_from_slice(&(offset as u64).to_be_bytes());
    n[20] = u8::from(zeros);
    n
}

/// The (QPN, offset, all zeros) a note names, if it is a reference.
fn read_note(note: &[u8]) -> Option<(u32, usize, bool)> {
    let n = note.get(..NOTE_LEN)?;
    if n[..8] != PAYLOAD_REF_MARK {
        return None;
    }
    let qpn = u32::from_be_bytes(n[8..12].try_into().ok()?);
    let offset = u64::from_be_bytes(n[12..20].try_into().ok()?);
    Some((qpn, usize::try_from(offset).ok()?, n[20] == 1))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WrOp {
    Write { remote_va: u64, rkey: u32 },
    Send,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkRequest {
    pub wr_id: u64,
    pub op: WrOp,
    /// Source bytes: this range of the QP's buffer.
    pub local_offset: usize,
    pub len: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WcStatus {
    Success,
    /// The retry timer expired more than `retry_cnt` times.
    RetryExceeded,
    /// The responder answered with this NAK.
    RemoteError(NakCode),
    /// Flushed after an earlier work request failed.
    Flushed,
}

/// A finished work request, with the times that give its latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    pub qpn: u32,
    pub wr_id: u64,
    pub status: WcStatus,
    pub len: usize,
    pub posted_ns: u64,
    /// When the message's first packet first went on the wire (`None`: it never did). Minus
    /// `posted_ns`: the time it waited in the NIC (pacing, PFC pause, other QPs).
    pub first_tx_ns: Option<u64>,
    pub completed_ns: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncomingKind {
    /// A WRITE finished landing at `va`.
    Write { va: u64 },
    /// A SEND landed at the start of the buffer.
    Send,
}

/// A message the responder finished placing into a QP buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Incoming {
    pub qpn: u32,
    pub kind: IncomingKind,
    pub len: usize,
    pub imm: Option<u32>,
    pub at_ns: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PostError {
    #[error("QP {qpn:#x} does not exist")]
    UnknownQp { qpn: u32 },
    #[error("QP {qpn:#x} is not connected")]
    NotConnected { qpn: u32 },
    #[error("QP {qpn:#x} is in the error state")]
    QpError { qpn: u32 },
    #[error("QP {qpn:#x}: bytes {offset}..{end} are outside its {len}-byte buffer")]
    OutOfBounds {
        qpn: u32,
        offset: usize,
        end: usize,
        len: usize,
    },
    #[error("QP {qpn:#x}: send queue full ({depth} work requests)")]
    SendQueueFull { qpn: u32, depth: usize },
}

/// Endpoint counters: everything dropped is counted under its reason.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Counters {
    pub tx_frames: u64,
    pub tx_bytes: u64,
    pub tx_data_pkts: u64,
    pub tx_retransmitted_pkts: u64,
    pub tx_acks: u64,
    pub tx_naks: u64,
    pub tx_cnps: u64,
    pub tx_arp: u64,
    pub rx_frames: u64,
    pub rx_bytes: u64,
    pub rx_data_pkts: u64,
    pub rx_payload_bytes: u64,
    pub rx_acks: u64,
    pub rx_naks: u64,
    pub rx_cnps: u64,
    pub rx_ce_marked: u64,
    pub rx_arp: u64,
    /// Not RoCEv2, ARP or MAC control (e.g. the kernel's own traffic).
    pub rx_ignored: u64,
    pub rx_bad_icrc: u64,
    /// IPv4 header checksum mismatch (the ICRC does not cover the fields routers rewrite).
    pub rx_bad_ip_checksum: u64,
    /// Truncated or inconsistent headers.
    pub rx_malformed: u64,
    pub rx_not_for_us: u64,
    pub rx_unknown_qp: u64,
    /// Requests from an address other than the QP's peer, or to an unconnected QP.
    pub rx_wrong_peer: u64,
    pub rx_unsupported_opcode: u64,
    /// Requests ahead of the expected PSN (dropped; one NAK per episode).
    pub rx_out_of_sequence: u64,
    /// Requests behind the expected PSN (dropped, re-ACKed).
    pub rx_duplicate: u64,
    /// Requests NAKed as invalid (opcode sequence, length).
    pub rx_invalid_request: u64,
    /// WRITEs with a bad rkey or outside the buffer.
    pub rx_access_error: u64,
    /// ACKs for PSNs never sent or already acknowledged.
    pub rx_stale_ack: u64,
    pub retry_timeouts: u64,
    pub qp_errors: u64,
}

struct SendWr {
    wr_id: u64,
    op: WrOp,
    local_offset: usize,
    len: usize,
    first_psn: u32,
    npkts: u32,
    posted_ns: u64,
    first_tx_ns: Option<u64>,
}

enum RxMsg {
    Write {
        start: u64,
        next: u64,
        remaining: usize,
    },
    Send {
        offset: usize,
    },
}

struct Qp {
    qpn: u32,
    start_psn: u32,
    mem: Vec<u8>,
    /// `mem` is all zeros: nothing has written it since it was created (no [`Endpoint::memory_mut`],
    /// no payload placed but zeros over zeros).
    zeroed: bool,
    va: u64,
    rkey: u32,
    peer: Option<Peer>,
    l3: L3Header,
    error: bool,
    // requester
    sq: VecDeque<SendWr>,
    cur_wr: usize,
    cur_pkt: u32,
    next_psn: u32,
    tail_psn: u32,
    una: u32,
    /// One past the highest PSN ever sent.
    high: u32,
    retry_at: Option<u64>,
    retries: u32,
    timer_in_heap: bool,
    pace_at: u64,
    rp: Option<ReactionPoint>,
    queued: bool,
    // responder
    epsn: u32,
    msn: u32,
    rx: Option<RxMsg>,
    nak_sent: bool,
    ack: Option<(u32, Syndrome)>,
    in_ack_q: bool,
    cnp: bool,
    in_cnp_q: bool,
    np: CnpLimiter,
}

impl Qp {
    fn can_send(&self, max_outstanding: u32) -> bool {
        !self.error
            && self.peer.is_some()
            && self.cur_wr < self.sq.len()
            && psn_diff(self.next_psn, self.una) < max_outstanding as i32
    }

    /// Moves the transmit cursor to `psn`, or past the last work request when no posted work
    /// request holds it.
    fn seek(&mut self, psn: u32) {
        for (i, w) in self.sq.iter().enumerate() {
            let off = psn_diff(psn, w.first_psn);
            if off >= 0 && (off as u32) < w.npkts {
                self.cur_wr = i;
                self.cur_pkt = off as u32;
                self.next_psn = psn;
                return;
            }
        }
        self.cur_wr = self.sq.len();
        self.cur_pkt = 0;
        self.next_psn = self.tail_psn;
    }
}

/// Per-QP figures for reports.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct QpStats {
    pub qpn: u32,
    pub outstanding_wrs: usize,
    pub dcqcn_rate_bps: Option<f64>,
    pub dcqcn_target_bps: Option<f64>,
    pub dcqcn_alpha: Option<f64>,
    pub cnps_received: u64,
    pub error: bool,
}

pub struct Endpoint {
    cfg: EndpointConfig,
    qps: Vec<Qp>,
    ready: VecDeque<usize>,
    waiting: BinaryHeap<Reverse<(u64, usize)>>,
    timers: BinaryHeap<Reverse<(u64, usize)>>,
    ack_q: VecDeque<usize>,
    cnp_q: VecDeque<usize>,
    raw_q: VecDeque<Vec<u8>>,
    /// When the link finishes the frame on the wire, in picoseconds (ns would drift by the
    /// rounding of every frame).
    link_free_ps: u64,
    pause: PauseState,
    neighbors: HashMap<[u8; 4], [u8; 6]>,
    completions: Vec<Completion>,
    incoming: Vec<Incoming>,
    counters: Counters,
    ip_id: u16,
    /// The ICRC over an MTU of zeros, for payloads sent by reference from never-written memory
    /// (built at the first).
    mtu_zeros: Option<ZeroRun>,
}

fn npkts(len: usize, mtu: usize) -> u32 {
    len.div_ceil(mtu).max(1) as u32
}

impl Endpoint {
    pub fn new(mut cfg: EndpointConfig) -> Self {
        assert!(cfg.mtu >= 256 && cfg.rate_bps > 0 && cfg.ack_every.is_power_of_two());
        // PSN comparisons are unambiguous only within half the 24-bit space.
        cfg.max_outstanding = cfg.max_outstanding.clamp(1, MAX_OUTSTANDING);
        Endpoint {
            pause: PauseState::new(cfg.rate_bps),
            cfg,
            qps: Vec::new(),
            ready: VecDeque::new(),
            waiting: BinaryHeap::new(),
            timers: BinaryHeap::new(),
            ack_q: VecDeque::new(),
            cnp_q: VecDeque::new(),
            raw_q: VecDeque::new(),
            link_free_ps: 0,
            neighbors: HashMap::new(),
            completions: Vec::new(),
            incoming: Vec::new(),
            counters: Counters::default(),
            ip_id: 0,
            mtu_zeros: None,
        }
    }

    pub fn config(&self) -> &EndpointConfig {
        &self.cfg
    }

    /// A new QP with a zeroed buffer of `mem_len` bytes whose requester starts at `start_psn`.
    pub fn create_qp(&mut self, mem_len: usize, start_psn: u32) -> u32 {
        let qpn = (self.cfg.qpn_base + self.qps.len() as u32) & PSN_MASK;
        let start_psn = start_psn & PSN_MASK;
        self.qps.push(Qp {
            qpn,
            start_psn,
            mem: vec![0; mem_len],
            zeroed: true,
            va: (qpn as u64) << 32,
            rkey: qpn.rotate_left(12) ^ 0x5eed,
            peer: None,
            l3: self.l3_template([0; 6], [0; 4], qpn, self.cfg.dscp, self.cfg.pcp),
            error: false,
            sq: VecDeque::new(),
            cur_wr: 0,
            cur_pkt: 0,
            next_psn: start_psn,
            tail_psn: start_psn,
            una: start_psn,
            high: start_psn,
            retry_at: None,
            retries: 0,
            timer_in_heap: false,
            pace_at: 0,
            rp: self.cfg.dcqcn.map(ReactionPoint::new),
            queued: false,
            epsn: 0,
            msn: 0,
            rx: None,
            nak_sent: false,
            ack: None,
            in_ack_q: false,
            cnp: false,
            in_cnp_q: false,
            np: CnpLimiter::default(),
        });
        qpn
    }

    fn l3_template(
        &self,
        dst_mac: [u8; 6],
        dst_ip: [u8; 4],
        qpn: u32,
        dscp: u8,
        pcp: Option<u8>,
    ) -> L3Header {
        L3Header {
            dst_mac,
            src_mac: self.cfg.mac,
            vlan: pcp.map(|p| (p & 7, self.cfg.vlan)),
            src_ip: self.cfg.ip,
            dst_ip,
            dscp,
            ecn: if self.cfg.ecn { ECN_ECT0 } else { ECN_NOT_ECT },
            ttl: 64,
            ip_id: 0,
            udp_src: udp_src_port(qpn),
        }
    }

    fn index(&self, qpn: u32) -> Option<usize> {
        let i = qpn.checked_sub(self.cfg.qpn_base)? as usize;
        (i < self.qps.len()).then_some(i)
    }

    pub fn qp_info(&self, qpn: u32) -> Option<QpInfo> {
        let q = &self.qps[self.index(qpn)?];
        Some(QpInfo {
            qpn,
            psn: q.start_psn,
            va: q.va,
            rkey: q.rkey,
            len: q.mem.len() as u64,
        })
    }

    /// Moves the QP to ready-to-send towards `peer` (INIT -> RTR -> RTS in verbs terms).
    pub fn connect(&mut self, qpn: u32, peer: Peer) -> Result<(), PostError> {
        let i = self.index(qpn).ok_or(PostError::UnknownQp { qpn })?;
        let l3 = self.l3_template(peer.mac, peer.ip, qpn, self.cfg.dscp, self.cfg.pcp);
        let q = &mut self.qps[i];
        q.peer = Some(peer);
        q.l3 = l3;
        q.epsn = peer.qp.psn & PSN_MASK;
        Ok(())
    }

    pub fn memory(&self, qpn: u32) -> Option<&[u8]> {
        Some(&self.qps[self.index(qpn)?].mem)
    }

    /// The bytes `r` names in this endpoint's memory (`r.ip` is not checked).
    pub fn payload(&self, r: &PayloadRef) -> Option<&[u8]> {
        let end = r.offset.checked_add(r.len)?;
        self.qps[self.index(r.qpn)?].mem.get(r.offset..end)
    }

    pub fn memory_mut(&mut self, qpn: u32) -> Option<&mut [u8]> {
        let i = self.index(qpn)?;
        self.qps[i].zeroed = false;
        Some(&mut self.qps[i].mem)
    }

    pub fn qpns(&self) -> impl Iterator<Item = u32> + '_ {
        self.qps.iter().map(|q| q.qpn)
    }

    pub fn post(&mut self, now: u64, qpn: u32, wr: WorkRequest) -> Result<(), PostError> {
        let i = self.index(qpn).ok_or(PostError::UnknownQp { qpn })?;
        let mtu = self.cfg.mtu;
        let depth = self.cfg.max_send_wr;
        let q = &mut self.qps[i];
        if q.error {
            return Err(PostError::QpError { qpn });
        }
        if q.peer.is_none() {
            return Err(PostError::NotConnected { qpn });
        }
        let end = wr.local_offset.checked_add(wr.len);
        if end.map_or(true, |e| e > q.mem.len()) || wr.len > u32::MAX as usize {
            return Err(PostError::OutOfBounds {
                qpn,
                offset: wr.local_offset,
                end: end.unwrap_or(usize::MAX),
                len: q.mem.len(),
            });
        }
        if q.sq.len() >= depth {
            return Err(PostError::SendQueueFull { qpn, depth });
        }
        let n = npkts(wr.len, mtu);
        q.sq.push_back(SendWr {
            wr_id: wr.wr_id,
            op: wr.op,
            local_offset: wr.local_offset,
            len: wr.len,
            first_psn: q.tail_psn,
            npkts: n,
            posted_ns: now,
            first_tx_ns: None,
        });
        q.tail_psn = psn_add(q.tail_psn, n);
        self.make_ready(i);
        Ok(())
    }

    fn make_ready(&mut self, i: usize) {
        let max = self.cfg.max_outstanding;
        let q = &mut self.qps[i];
        if !q.queued && q.can_send(max) {
            q.queued = true;
            self.ready.push_back(i);
        }
    }

    /// Completed work requests since the last call.
    pub fn take_completions(&mut self) -> Vec<Completion> {
        std::mem::take(&mut self.completions)
    }

    /// Messages placed into our buffers since the last call.
    pub fn take_incoming(&mut self) -> Vec<Incoming> {
        std::mem::take(&mut self.incoming)
    }

    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    pub fn pause_counters(&self) -> &PauseCounters {
        self.pause.counters()
    }

    pub fn qp_stats(&self, qpn: u32) -> Option<QpStats> {
        let q = &self.qps[self.index(qpn)?];
        Some(QpStats {
            qpn,
            outstanding_wrs: q.sq.len(),
            dcqcn_rate_bps: q.rp.as_ref().map(|r| r.rate_bps()),
            dcqcn_target_bps: q.rp.as_ref().map(|r| r.target_bps()),
            dcqcn_alpha: q.rp.as_ref().map(|r| r.alpha()),
            cnps_received: q.rp.as_ref().map_or(0, |r| r.cnps()),
            error: q.error,
        })
    }

    /// The DCQCN reaction point of a QP, when DCQCN is on.
    pub fn reaction_point(&self, qpn: u32) -> Option<&ReactionPoint> {
        self.qps[self.index(qpn)?].rp.as_ref()
    }

    /// Queues an ARP request for `ip`; the answer lands in [`Endpoint::neighbor`].
    pub fn arp_request(&mut self, ip: [u8; 4]) {
        self.raw_q
            .push_back(Arp::request(self.cfg.mac, self.cfg.ip, ip).encode());
    }

    pub fn neighbor(&self, ip: [u8; 4]) -> Option<[u8; 6]> {
        self.neighbors.get(&ip).copied()
    }

    // ---------------------------------------------------------------- receive

    /// Takes one received Ethernet frame (FCS stripped). Never fails: whatever is wrong with the
    /// frame is counted.
    pub fn handle_frame(&mut self, now: u64, frame: &[u8]) {
        self.handle_frame_with(now, frame, |_| None);
    }

    /// [`Endpoint::handle_frame`] for a frame whose payload may be a [`PayloadRef`]: `memory`
    /// gives the bytes it names (the sending endpoint's [`Endpoint::payload`]). A reference
    /// that names nothing fails the ICRC, as a payload that is not the one sent.
    pub fn handle_frame_with<'m>(
        &mut self,
        now: u64,
        frame: &[u8],
        memory: impl FnOnce(&PayloadRef) -> Option<&'m [u8]>,
    ) {
        self.counters.rx_frames += 1;
        self.counters.rx_bytes += frame.len() as u64;
        match MacControl::decode(frame) {
            Ok(Some(m)) => return self.pause.on_frame(now, &m),
            Err(_) => {
                self.counters.rx_malformed += 1;
                return;
            }
            Ok(None) => {}
        }
        if let Some(arp) = Arp::parse(frame) {
            return self.on_arp(arp);
        }
        let mut zeros = false;
        let parsed = Packet::parse_with(frame, |l3, note| {
            let (qpn, offset, z) = read_note(note)?;
            let r = PayloadRef {
                ip: l3.src_ip,
                qpn,
                offset,
                len: ELIDED_CRC_LEN + note.len(),
                zeros: z,
            };
            let bytes = memory(&r)?;
            zeros = z;
            Some(bytes)
        });
        let pkt = match parsed {
            Ok(Some(p)) => p,
            Ok(None) => {
                self.counters.rx_ignored += 1;
                return;
            }
            Err(RoceError::BadIcrc { .. }) => {
                self.counters.rx_bad_icrc += 1;
                return;
            }
            Err(RoceError::UnsupportedOpcode { .. }) => {
                self.counters.rx_unsupported_opcode += 1;
                return;
            }
            Err(_) => {
                self.counters.rx_malformed += 1;
                return;
            }
        };
        if !ipv4_checksum_ok(frame, pkt.l3.vlan.is_some()) {
            self.counters.rx_bad_ip_checksum += 1;
            return;
        }
        if pkt.l3.dst_ip != self.cfg.ip {
            self.counters.rx_not_for_us += 1;
            return;
        }
        let Some(i) = self.index(pkt.bth.dest_qp) else {
            self.counters.rx_unknown_qp += 1;
            return;
        };
        let from_peer = self.qps[i].peer.is_some_and(|p| p.ip == pkt.l3.src_ip);
        if !from_peer {
            self.counters.rx_wrong_peer += 1;
            return;
        }
        match pkt.bth.opcode {
            opcode::CNP => self.on_cnp(now, i),
            opcode::RC_ACK => self.on_ack(now, i, &pkt),
            op if op <= opcode::RC_WRITE_ONLY_IMM => self.on_request(now, i, &pkt, zeros),
            _ => self.counters.rx_unsupported_opcode += 1,
        }
    }

    fn on_arp(&mut self, arp: Arp) {
        self.counters.rx_arp += 1;
        if arp.sender_ip != [0; 4] {
            self.neighbors.insert(arp.sender_ip, arp.sender_mac);
        }
        if arp.op == ArpOp::Request && arp.target_ip == self.cfg.ip {
            self.raw_q
                .push_back(Arp::reply_to(&arp, self.cfg.mac).encode());
        }
    }

    fn on_cnp(&mut self, now: u64, i: usize) {
        self.counters.rx_cnps += 1;
        if let Some(rp) = self.qps[i].rp.as_mut() {
            rp.on_cnp(now);
        }
    }

    fn queue_ack(&mut self, i: usize, psn: u32, syndrome: Syndrome) {
        let q = &mut self.qps[i];
        // A pending NAK stands until an ACK covers its PSN.
        if let Some((nak_psn, Syndrome::Nak(_))) = q.ack {
            if matches!(syndrome, Syndrome::Ack { .. }) && psn_diff(psn, nak_psn) < 0 {
                return;
            }
        }
        q.ack = Some((psn, syndrome));
        if !q.in_ack_q {
            q.in_ack_q = true;
            self.ack_q.push_back(i);
        }
    }

    /// `zeros`: the payload is all zeros ([`PayloadRef::zeros`]).
    fn on_request(&mut self, now: u64, i: usize, pkt: &Packet, zeros: bool) {
        self.counters.rx_data_pkts += 1;
        let cnp_interval = self.cfg.dcqcn.map(|d| d.cnp_interval_ns);
        let q = &mut self.qps[i];
        if pkt.l3.ecn == ECN_CE {
            self.counters.rx_ce_marked += 1;
            if let Some(interval) = cnp_interval {
                if q.np.on_ce(now, interval) {
                    q.cnp = true;
                    if !q.in_cnp_q {
                        q.in_cnp_q = true;
                        self.cnp_q.push_back(i);
                    }
                }
            }
        }
        let d = psn_diff(pkt.bth.psn, q.epsn);
        if d > 0 {
            self.counters.rx_out_of_sequence += 1;
            if !q.nak_sent {
                q.nak_sent = true;
                let epsn = q.epsn;
                self.queue_ack(i, epsn, Syndrome::Nak(NakCode::PsnSequenceError));
            }
            return;
        }
        if d < 0 {
            self.counters.rx_duplicate += 1;
            if pkt.bth.ack_req {
                let last = psn_add(q.epsn, PSN_MASK);
                self.queue_ack(i, last, Syndrome::Ack { credits: 0x1f });
            }
            return;
        }
        match place(q, pkt, zeros, self.cfg.mtu, now) {
            Ok(done) => {
                self.counters.rx_payload_bytes += pkt.payload.len() as u64;
                q.epsn = psn_add(q.epsn, 1);
                q.nak_sent = false;
                if let Some(inc) = done {
                    q.msn = psn_add(q.msn, 1);
                    self.incoming.push(inc);
                }
                if pkt.bth.ack_req {
                    self.queue_ack(i, pkt.bth.psn, Syndrome::Ack { credits: 0x1f });
                }
            }
            Err(code) => {
                match code {
                    NakCode::RemoteAccessError => self.counters.rx_access_error += 1,
                    _ => self.counters.rx_invalid_request += 1,
                }
                q.rx = None;
                let epsn = q.epsn;
                self.queue_ack(i, epsn, Syndrome::Nak(code));
            }
        }
    }

    fn on_ack(&mut self, now: u64, i: usize, pkt: &Packet) {
        let Ext::Aeth(aeth) = pkt.ext else {
            self.counters.rx_malformed += 1;
            return;
        };
        let q = &self.qps[i];
        let psn = pkt.bth.psn;
        // Valid: from una - 1 (a duplicate ACK) to the last PSN sent.
        if q.error || psn_diff(psn, q.una) < -1 || psn_diff(psn, q.high) >= 0 {
            self.counters.rx_stale_ack += 1;
            return;
        }
        match aeth.syndrome {
            Syndrome::Ack { .. } => {
                self.counters.rx_acks += 1;
                self.ack_through(now, i, psn);
            }
            Syndrome::Nak(NakCode::PsnSequenceError) => {
                self.counters.rx_naks += 1;
                self.ack_through(now, i, psn_add(psn, PSN_MASK));
                let q = &mut self.qps[i];
                if psn_diff(psn, q.una) == 0 {
                    q.seek(psn);
                    self.make_ready(i);
                }
            }
            Syndrome::Nak(code) => {
                self.counters.rx_naks += 1;
                self.ack_through(now, i, psn_add(psn, PSN_MASK));
                self.fail_qp(now, i, WcStatus::RemoteError(code));
            }
            // Receiver-not-ready and reserved syndromes: the retry timer recovers.
            Syndrome::RnrNak { .. } | Syndrome::Reserved(_) => self.counters.rx_naks += 1,
        }
    }

    /// Everything up to and including `last` is acknowledged.
    fn ack_through(&mut self, now: u64, i: usize, last: u32) {
        let timeout = self.cfg.retry_timeout_ns;
        let q = &mut self.qps[i];
        if psn_diff(last, q.una) < 0 {
            return;
        }
        q.una = psn_add(last, 1);
        q.retries = 0;
        let mut popped = 0;
        while let Some(w) = q.sq.front() {
            if psn_diff(q.una, psn_add(w.first_psn, w.npkts)) < 0 {
                break;
            }
            self.completions.push(Completion {
                qpn: q.qpn,
                wr_id: w.wr_id,
                status: WcStatus::Success,
                len: w.len,
                posted_ns: w.posted_ns,
                first_tx_ns: w.first_tx_ns,
                completed_ns: now,
            });
            q.sq.pop_front();
            popped += 1;
        }
        if popped > q.cur_wr || psn_diff(q.una, q.next_psn) > 0 {
            let una = q.una;
            q.seek(una);
        } else {
            q.cur_wr -= popped;
        }
        if q.una == q.high {
            q.retry_at = None;
        } else {
            self.arm_timer(i, now + timeout);
        }
        self.make_ready(i);
    }

    fn arm_timer(&mut self, i: usize, at: u64) {
        let q = &mut self.qps[i];
        q.retry_at = Some(at);
        if !q.timer_in_heap {
            q.timer_in_heap = true;
            self.timers.push(Reverse((at, i)));
        }
    }

    fn fail_qp(&mut self, now: u64, i: usize, status: WcStatus) {
        self.counters.qp_errors += 1;
        let q = &mut self.qps[i];
        q.error = true;
        q.retry_at = None;
        for (n, w) in q.sq.drain(..).enumerate() {
            self.completions.push(Completion {
                qpn: q.qpn,
                wr_id: w.wr_id,
                status: if n == 0 { status } else { WcStatus::Flushed },
                len: w.len,
                posted_ns: w.posted_ns,
                first_tx_ns: w.first_tx_ns,
                completed_ns: now,
            });
        }
        q.cur_wr = 0;
        q.cur_pkt = 0;
    }

    // ---------------------------------------------------------------- time

    fn run_timers(&mut self, now: u64) {
        while let Some(&Reverse((at, i))) = self.waiting.peek() {
            if at > now {
                break;
            }
            self.waiting.pop();
            self.ready.push_back(i);
        }
        while let Some(&Reverse((at, i))) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            self.qps[i].timer_in_heap = false;
            match self.qps[i].retry_at {
                None => {}
                Some(due) if due > now => {
                    self.qps[i].timer_in_heap = true;
                    self.timers.push(Reverse((due, i)));
                }
                Some(_) => self.retry(now, i),
            }
        }
    }

    fn retry(&mut self, now: u64, i: usize) {
        let q = &mut self.qps[i];
        if q.una == q.high {
            q.retry_at = None;
            return;
        }
        self.counters.retry_timeouts += 1;
        q.retries += 1;
        if q.retries > self.cfg.retry_cnt {
            return self.fail_qp(now, i, WcStatus::RetryExceeded);
        }
        let una = q.una;
        q.seek(una);
        self.arm_timer(i, now + self.cfg.retry_timeout_ns);
        self.make_ready(i);
    }

    /// The earliest time at which [`Endpoint::poll_tx`] may produce a frame or a timer fires;
    /// `None` when nothing is pending.
    pub fn next_wakeup(&self) -> Option<u64> {
        let link = self.link_free_ps.div_ceil(1000);
        let mut w: Option<u64> = None;
        let mut cand = |t: u64| w = Some(w.map_or(t, |x: u64| x.min(t)));
        if !self.ready.is_empty() || !self.ack_q.is_empty() {
            cand(link.max(self.pause.resume_at(self.cfg.data_prio())));
        }
        if !self.cnp_q.is_empty() {
            cand(link.max(self.pause.resume_at(self.cfg.cnp_prio())));
        }
        if !self.raw_q.is_empty() {
            cand(link.max(self.pause.resume_at(0)));
        }
        if let Some(&Reverse((at, _))) = self.waiting.peek() {
            cand(at.max(link));
        }
        if let Some(&Reverse((at, _))) = self.timers.peek() {
            cand(at);
        }
        w
    }

    // ---------------------------------------------------------------- transmit

    /// Writes the next frame allowed at `now` into `out`, replacing what it held (a payload
    /// sent by reference leaves the buffer's old bytes in its place). False: nothing may go now,
    /// and `out` is as it was; ask [`Endpoint::next_wakeup`] when to try again.
    pub fn poll_tx(&mut self, now: u64, out: &mut Vec<u8>) -> bool {
        self.run_timers(now);
        if self.link_free_ps > now.saturating_mul(1000) {
            return false;
        }
        let sent = self.tx_raw(now, out)
            || self.tx_cnp(now, out)
            || self.tx_ack(now, out)
            || self.tx_data(now, out);
        if sent {
            let wire = (out.len() + FCS_LEN).max(MIN_FRAME_WITH_FCS) + WIRE_OVERHEAD;
            let ps = (wire as u128 * 8 * 1_000_000_000_000 / self.cfg.rate_bps as u128) as u64;
            // A caller that wakes at the nanosecond after the link became free is not late:
            // keep the fraction, or the rate would drift down by up to 1 ns per frame.
            let now_ps = now.saturating_mul(1000);
            let start = if now_ps.saturating_sub(self.link_free_ps) < 1000 {
                self.link_free_ps
            } else {
                now_ps
            };
            self.link_free_ps = start + ps;
            self.counters.tx_frames += 1;
            self.counters.tx_bytes += out.len() as u64;
        }
        sent
    }

    fn next_ip_id(&mut self) -> u16 {
        self.ip_id = self.ip_id.wrapping_add(1);
        self.ip_id
    }

    fn tx_raw(&mut self, now: u64, out: &mut Vec<u8>) -> bool {
        if self.raw_q.is_empty() || self.pause.paused(0, now) {
            return false;
        }
        let Some(f) = self.raw_q.pop_front() else {
            return false;
        };
        out.clear();
        out.extend_from_slice(&f);
        self.counters.tx_arp += 1;
        true
    }

    fn tx_cnp(&mut self, now: u64, out: &mut Vec<u8>) -> bool {
        if self.pause.paused(self.cfg.cnp_prio(), now) {
            return false;
        }
        while let Some(i) = self.cnp_q.pop_front() {
            self.qps[i].in_cnp_q = false;
            if !std::mem::take(&mut self.qps[i].cnp) {
                continue;
            }
            let Some(peer) = self.qps[i].peer else {
                continue;
            };
            let qpn = self.qps[i].qpn;
            let pcp = self.cfg.pcp.map(|_| self.cfg.cnp_pcp);
            let mut l3 = self.l3_template(peer.mac, peer.ip, qpn, self.cfg.cnp_dscp, pcp);
            l3.ip_id = self.next_ip_id();
            let bth = Bth {
                becn: true,
                ..Bth::new(opcode::CNP, peer.qp.qpn, 0)
            };
            out.clear();
            build_frame(out, &l3, &bth, &Ext::CnpPad, &[]);
            self.counters.tx_cnps += 1;
            return true;
        }
        false
    }

    fn tx_ack(&mut self, now: u64, out: &mut Vec<u8>) -> bool {
        if self.pause.paused(self.cfg.data_prio(), now) {
            return false;
        }
        while let Some(i) = self.ack_q.pop_front() {
            let ip_id = self.next_ip_id();
            let q = &mut self.qps[i];
            q.in_ack_q = false;
            let (Some((psn, syndrome)), Some(peer)) = (q.ack.take(), q.peer) else {
                continue;
            };
            let mut l3 = q.l3;
            l3.ip_id = ip_id;
            let aeth = Aeth {
                syndrome,
                msn: q.msn,
            };
            out.clear();
            build_frame(
                out,
                &l3,
                &Bth::new(opcode::RC_ACK, peer.qp.qpn, psn),
                &Ext::Aeth(aeth),
                &[],
            );
            match syndrome {
                Syndrome::Ack { .. } => self.counters.tx_acks += 1,
                _ => self.counters.tx_naks += 1,
            }
            return true;
        }
        false
    }

    fn tx_data(&mut self, now: u64, out: &mut Vec<u8>) -> bool {
        if self.pause.paused(self.cfg.data_prio(), now) {
            return false;
        }
        let max = self.cfg.max_outstanding;
        while let Some(i) = self.ready.pop_front() {
            let q = &mut self.qps[i];
            if !q.can_send(max) {
                q.queued = false;
                continue;
            }
            if q.pace_at > now {
                self.waiting.push(Reverse((q.pace_at, i)));
                continue;
            }
            self.ip_id = self.ip_id.wrapping_add(1);
            let ip_id = self.ip_id;
            let q = &mut self.qps[i];
            let w = &mut q.sq[q.cur_wr];
            if q.cur_pkt == 0 {
                w.first_tx_ns.get_or_insert(now);
            }
            let w = &q.sq[q.cur_wr];
            let mtu = self.cfg.mtu;
            let psn = q.next_psn;
            let k = q.cur_pkt;
            let off = k as usize * mtu;
            let plen = w.len.saturating_sub(off).min(mtu);
            let (first, last) = (k == 0, k + 1 == w.npkts);
            let (op, ext) = match w.op {
                WrOp::Write { remote_va, rkey } => {
                    let reth = Ext::Reth(Reth {
                        va: remote_va,
                        rkey,
                        dma_len: w.len as u32,
                    });
                    match (first, last) {
                        (true, true) => (opcode::RC_WRITE_ONLY, reth),
                        (true, false) => (opcode::RC_WRITE_FIRST, reth),
                        (false, true) => (opcode::RC_WRITE_LAST, Ext::None),
                        (false, false) => (opcode::RC_WRITE_MIDDLE, Ext::None),
                    }
                }
                WrOp::Send => match (first, last) {
                    (true, true) => (opcode::RC_SEND_ONLY, Ext::None),
                    (true, false) => (opcode::RC_SEND_FIRST, Ext::None),
                    (false, true) => (opcode::RC_SEND_LAST, Ext::None),
                    (false, false) => (opcode::RC_SEND_MIDDLE, Ext::None),
                },
            };
            let Some(peer) = q.peer else {
                continue;
            };
            let bth = Bth {
                ack_req: last || psn & (self.cfg.ack_every - 1) == self.cfg.ack_every - 1,
                ..Bth::new(op, peer.qp.qpn, psn)
            };
            let at = w.local_offset + off;
            let mut l3 = q.l3;
            l3.ip_id = ip_id;
            let payload = &q.mem[at..at + plen];
            if self.cfg.payload_by_reference {
                let note = ref_note(q.qpn, at, q.zeroed);
                // Every packet of a message but its last carries an MTU.
                let zeros = (q.zeroed && plen == mtu)
                    .then(|| &*self.mtu_zeros.get_or_insert_with(|| ZeroRun::new(mtu)));
                let elided = Elided {
                    payload,
                    note: &note,
                    zeros,
                };
                write_frame_elided(out, &l3, &bth, &ext, &elided);
            } else {
                out.clear();
                build_frame(out, &l3, &bth, &ext, payload);
            }
            q.cur_pkt += 1;
            if q.cur_pkt == w.npkts {
                q.cur_wr += 1;
                q.cur_pkt = 0;
            }
            q.next_psn = psn_add(psn, 1);
            if psn_diff(psn, q.high) < 0 {
                self.counters.tx_retransmitted_pkts += 1;
            } else {
                q.high = q.next_psn;
            }
            self.counters.tx_data_pkts += 1;
            if let Some(rp) = q.rp.as_mut() {
                rp.on_sent(out.len() as u64, now);
                let rate = rp.rate_bps();
                let line = self.cfg.rate_bps as f64;
                if rate < line {
                    let wire = (out.len() + FCS_LEN).max(MIN_FRAME_WITH_FCS) + WIRE_OVERHEAD;
                    let gap = (wire as f64 * 8.0 * 1e9 / rate) as u64;
                    q.pace_at = q.pace_at.max(now) + gap;
                }
            }
            if q.retry_at.is_none() {
                let at = now + self.cfg.retry_timeout_ns;
                self.arm_timer(i, at);
            }
            let q = &mut self.qps[i];
            if q.can_send(max) {
                self.ready.push_back(i);
            } else {
                q.queued = false;
            }
            return true;
        }
        false
    }
}

/// Whether the IPv4 header of a parsed RoCEv2 frame sums to 0xffff (RFC 1071).
fn ipv4_checksum_ok(frame: &[u8], tagged: bool) -> bool {
    let at = if tagged { 18 } else { 14 };
    let Some(&vihl) = frame.get(at) else {
        return false;
    };
    let Some(h) = frame.get(at..at + (vihl & 0xf) as usize * 4) else {
        return false;
    };
    let mut sum: u32 = h
        .chunks(2)
        .map(|w| u16::from_be_bytes([w[0], w.get(1).copied().unwrap_or(0)]) as u32)
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum == 0xffff
}

/// Validates an in-sequence request against the responder's state and places its payload.
/// `Ok(Some)` when it completed a message. State changes only on success.
/// `zeros`: the payload is all zeros, so a buffer of zeros needs no copy.
fn place(
    q: &mut Qp,
    pkt: &Packet,
    zeros: bool,
    mtu: usize,
    now: u64,
) -> Result<Option<Incoming>, NakCode> {
    use opcode::*;
    let op = pkt.bth.opcode;
    let (first, last, write) = match op {
        RC_WRITE_FIRST => (true, false, true),
        RC_WRITE_MIDDLE => (false, false, true),
        RC_WRITE_LAST | RC_WRITE_LAST_IMM => (false, true, true),
        RC_WRITE_ONLY | RC_WRITE_ONLY_IMM => (true, true, true),
        RC_SEND_FIRST => (true, false, false),
        RC_SEND_MIDDLE => (false, false, false),
        RC_SEND_LAST | RC_SEND_LAST_IMM => (false, true, false),
        RC_SEND_ONLY | RC_SEND_ONLY_IMM => (true, true, false),
        _ => return Err(NakCode::InvalidRequest),
    };
    let data = pkt.payload;
    // A message starts only when none is in progress, continues only when one is, and keeps
    // its kind; every packet but the last carries exactly one MTU.
    let in_progress = match &q.rx {
        None => None,
        Some(RxMsg::Write { .. }) => Some(true),
        Some(RxMsg::Send { .. }) => Some(false),
    };
    if first != in_progress.is_none()
        || in_progress.is_some_and(|w| w != write)
        || (!last && data.len() != mtu)
        || data.len() > mtu
    {
        return Err(NakCode::InvalidRequest);
    }
    let imm = match pkt.ext {
        Ext::Imm(v) | Ext::RethImm(_, v) => Some(v),
        _ => None,
    };
    let mut msg = match (first, write) {
        (true, true) => {
            let (Ext::Reth(r) | Ext::RethImm(r, _)) = pkt.ext else {
                return Err(NakCode::InvalidRequest);
            };
            let end = r.va.checked_add(r.dma_len as u64);
            if r.rkey != q.rkey
                || r.va < q.va
                || end.map_or(true, |e| e > q.va + q.mem.len() as u64)
            {
                return Err(NakCode::RemoteAccessError);
            }
            RxMsg::Write {
                start: r.va,
                next: r.va,
                remaining: r.dma_len as usize,
            }
        }
        (true, false) => RxMsg::Send { offset: 0 },
        (false, _) => match q.rx.take() {
            Some(m) => m,
            None => return Err(NakCode::InvalidRequest),
        },
    };
    let result = match &mut msg {
        RxMsg::Write {
            start,
            next,
            remaining,
        } => {
            if data.len() > *remaining || (last && data.len() != *remaining) {
                Err(NakCode::InvalidRequest)
            } else {
                let at = (*next - q.va) as usize;
                if !(zeros && q.zeroed) {
                    q.mem[at..at + data.len()].copy_from_slice(data);
                    q.zeroed &= zeros;
                }
                *next += data.len() as u64;
                *remaining -= data.len();
                Ok(last.then_some(Incoming {
                    qpn: q.qpn,
                    kind: IncomingKind::Write { va: *start },
                    len: (*next - *start) as usize,
                    imm,
                    at_ns: now,
                }))
            }
        }
        RxMsg::Send { offset } => {
            let end = *offset + data.len();
            if end > q.mem.len() {
                Err(NakCode::InvalidRequest)
            } else {
                if !(zeros && q.zeroed) {
                    q.mem[*offset..end].copy_from_slice(data);
                    q.zeroed &= zeros;
                }
                *offset = end;
                Ok(last.then_some(Incoming {
                    qpn: q.qpn,
                    kind: IncomingKind::Send,
                    len: end,
                    imm,
                    at_ns: now,
                }))
            }
        }
    };
    if result.is_ok() && !last {
        q.rx = Some(msg);
    }
    result
}
