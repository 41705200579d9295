//! TCP for the TCP share of seed 003's RoCE:TCP mixes: one end of an established connection,
//! NewReno (RFC 5681 slow start and congestion avoidance, RFC 6582 fast retransmit and fast
//! recovery with partial ACKs), RFC 6298 retransmission timeout with exponential backoff,
//! optional delayed ACKs and optional ECN (RFC 3168: ECT(0) data, ECE echoed until CWR, one
//! window reduction per window of data), and optional DCTCP (RFC 8257: the sender cuts the window
//! by alpha / 2 once per window, alpha the marked fraction of bytes per window with g = 1/16,
//! [`crate::dctcp`]; the receiver sets ECE on an ACK exactly when the segments it acknowledges
//! were CE-marked, acknowledging at once when that changes under delayed ACKs). Pure like
//! roce-host's endpoint: time is passed in,
//! frames (Ethernet/IPv4/TCP, [`lossless_wire::tcp`]) go in through
//! [`Connection::handle_frame`] and out through [`Connection::poll_tx`], and
//! [`Connection::next_wakeup`] says when it next has something to do.
//!
//! The connection starts established: the handshake iperf3 makes before its test is not
//! simulated, and both ends use [`WSCALE`] as if their SYNs had agreed on it. The application
//! ([`Source`]) is iperf3's: bulk data written at a fixed rate (`-b`) or as fast as the window
//! lets, for a number of bytes or until stopped.

use crate::dctcp::Alpha;
use lossless_wire::rocev2::{ECN_CE, ECN_ECT0, ECN_NOT_ECT};
use lossless_wire::tcp::{self, flags, Header};
use std::collections::{BTreeMap, VecDeque};

/// IPv4 and TCP headers without options: MSS = MTU - 40.
pub const IP_TCP_HEADERS: usize = 40;
/// The window scale both ends use (RFC 7323), as their SYNs would have agreed.
pub const WSCALE: u8 = 7;
/// RFC 6298's upper bound on the retransmission timeout.
pub const RTO_MAX_NS: u64 = 60_000_000_000;

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct TcpParams {
    /// Payload bytes per segment.
    pub mss: usize,
    pub dscp: u8,
    /// ECN: data sent ECT(0), the receiver echoes CE, the sender reduces once per window.
    pub ecn: bool,
    /// DCTCP (RFC 8257) on both ends; implies `ecn`.
    pub dctcp: bool,
    /// Delayed ACKs (RFC 5681 4.2): one ACK per two full segments or after `delack_ns`;
    /// out-of-order and duplicate segments are acknowledged at once.
    pub delayed_ack: bool,
    pub delack_ns: u64,
    /// Initial window in segments (RFC 6928: 10).
    pub init_cwnd_segments: u32,
    /// Lower bound of the retransmission timeout (Linux: 200 ms; RFC 6298: 1 s).
    pub rto_min_ns: u64,
    /// Retransmission timeout before the first RTT sample (RFC 6298: 1 s).
    pub rto_initial_ns: u64,
    /// Receive window advertised (bytes).
    pub rcv_wnd: u64,
}

impl TcpParams {
    /// Linux's defaults on an interface of `mtu` bytes: MSS = MTU - 40, initial window 10,
    /// RTO at least 200 ms, ACK every segment, no ECN, 6 MB of receive window (tcp_rmem's
    /// maximum).
    pub fn new(mtu: usize, dscp: u8) -> TcpParams {
        TcpParams {
            mss: mtu - IP_TCP_HEADERS,
            dscp,
            ecn: false,
            dctcp: false,
            delayed_ack: false,
            delack_ns: 40_000_000,
            init_cwnd_segments: 10,
            rto_min_ns: 200_000_000,
            rto_initial_ns: 1_000_000_000,
            rcv_wnd: 6 << 20,
        }
    }

    /// The same with DCTCP (and so ECN) on.
    pub fn with_dctcp(self) -> TcpParams {
        TcpParams {
            ecn: true,
            dctcp: true,
            ..self
        }
    }
}

/// Where the connection sends and how it is addressed.
#[derive(Debug, Clone, Copy)]
pub struct Addressing {
    pub src_mac: [u8; 6],
    /// The next hop (the router in front of the host).
    pub dst_mac: [u8; 6],
    pub src_ip: [u8; 4],
    pub dst_ip: [u8; 4],
    pub src_port: u16,
    pub dst_port: u16,
    /// Initial sequence numbers of this end and of its peer.
    pub iss: u32,
    pub irs: u32,
}

impl Addressing {
    /// The peer's view of the same connection (`gateway_mac`: the router in front of it).
    pub fn reversed(&self, peer_mac: [u8; 6], gateway_mac: [u8; 6]) -> Addressing {
        Addressing {
            src_mac: peer_mac,
            dst_mac: gateway_mac,
            src_ip: self.dst_ip,
            dst_ip: self.src_ip,
            src_port: self.dst_port,
            dst_port: self.src_port,
            iss: self.irs,
            irs: self.iss,
        }
    }
}

/// iperf3's client: bulk data from `start_ns`, at `rate_bps` (`-b`) or unlimited, `bytes` in
/// all or until stopped.
#[derive(Debug, Clone, Copy)]
pub struct Source {
    pub start_ns: u64,
    pub rate_bps: Option<u64>,
    pub bytes: Option<u64>,
    /// Runs beside the other applications and is stopped when they are done.
    pub background: bool,
    /// The time it stopped writing (no bytes are written after it).
    stopped_ns: Option<u64>,
}

impl Source {
    pub fn new(start_ns: u64, rate_bps: Option<u64>, bytes: Option<u64>) -> Source {
        Source {
            start_ns,
            rate_bps,
            bytes,
            background: false,
            stopped_ns: None,
        }
    }

    /// Bytes written by `now`.
    fn written(&self, now: u64) -> u64 {
        let now = self.stopped_ns.map_or(now, |s| s.min(now));
        if now < self.start_ns {
            return 0;
        }
        let w = match self.rate_bps {
            Some(r) => ((now - self.start_ns) as u128 * r as u128 / 8_000_000_000) as u64,
            None => u64::MAX,
        };
        self.bytes.map_or(w, |b| b.min(w))
    }

    /// No byte will be written after `now`.
    fn finished(&self, now: u64) -> bool {
        self.stopped_ns.is_some_and(|s| s <= now)
            || self.bytes.is_some_and(|b| self.written(now) >= b)
    }

    /// When `total` bytes will have been written (`None`: never).
    fn time_of(&self, total: u64) -> Option<u64> {
        if self.bytes.is_some_and(|b| total > b) {
            return None;
        }
        let t = match self.rate_bps {
            Some(r) => self.start_ns + (total as u128 * 8_000_000_000).div_ceil(r as u128) as u64,
            None => self.start_ns,
        };
        match self.stopped_ns {
            Some(s) if t > s => None,
            _ => Some(t),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TcpStats {
    pub tx_segments: u64,
    pub tx_data_bytes: u64,
    pub tx_acks: u64,
    pub retransmits: u64,
    pub fast_retransmits: u64,
    pub timeouts: u64,
    pub ecn_reductions: u64,
    pub rx_segments: u64,
    /// Payload delivered in order to the application.
    pub rx_bytes: u64,
    pub rx_ce: u64,
    pub rx_dup_acks: u64,
    pub rx_bad: u64,
    /// When the first and the latest in-order payload arrived.
    pub rx_first_ns: Option<u64>,
    pub rx_last_ns: Option<u64>,
}

/// One end of an established TCP connection. Sequence numbers are kept as 64-bit offsets from
/// the initial ones, and put on the wire modulo 2^32.
#[derive(Debug)]
pub struct Connection {
    addr: Addressing,
    p: TcpParams,
    pub source: Option<Source>,
    snd_una: u64,
    snd_nxt: u64,
    snd_max: u64,
    cwnd: u64,
    ssthresh: u64,
    peer_wnd: u64,
    dupacks: u32,
    in_recovery: bool,
    /// NewReno's `recover`: the highest sequence sent when the last recovery (or timeout)
    /// began; `None` before any.
    recover: Option<u64>,
    /// A partial ACK or the third duplicate ACK asks for the first unacknowledged segment.
    retransmit: bool,
    /// Congestion avoidance's byte counter (RFC 5681: cwnd += MSS per cwnd acknowledged).
    ca_acked: u64,
    srtt_ns: Option<u64>,
    rttvar_ns: u64,
    rto_ns: u64,
    rto_at: Option<u64>,
    /// The one segment being timed: (end of its data, when it was sent). Karn: dropped when
    /// anything is retransmitted.
    rtt_probe: Option<(u64, u64)>,
    /// ECN: CWR goes on the next new data segment; no reduction until `snd_una` passes
    /// `ecn_recover`.
    cwr_pending: bool,
    ecn_recover: u64,
    /// DCTCP's estimate, when on.
    dctcp: Option<Alpha>,
    rcv_nxt: u64,
    /// Out-of-order data held: start -> end.
    ooo: BTreeMap<u64, u64>,
    /// Pure ACKs due, with the `rcv_nxt` each acknowledges and its ECE: one per segment that
    /// asked for it, so duplicate ACKs reach the peer as duplicates.
    acks: VecDeque<(u64, bool)>,
    unacked_segments: u32,
    delack_at: Option<u64>,
    /// RFC 3168: CE arrived and no CWR since, ECE on every ACK. DCTCP: the CE state (the
    /// last data segment's CE), which every ACK carries.
    ece: bool,
    ip_id: u16,
    stats: TcpStats,
    payload: Vec<u8>,
}

impl Connection {
    pub fn new(addr: Addressing, p: TcpParams) -> Connection {
        let mss = p.mss as u64;
        Connection {
            addr,
            p,
            source: None,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            cwnd: u64::from(p.init_cwnd_segments) * mss,
            ssthresh: u64::MAX,
            peer_wnd: (p.rcv_wnd >> WSCALE) << WSCALE,
            dupacks: 0,
            in_recovery: false,
            recover: None,
            retransmit: false,
            ca_acked: 0,
            srtt_ns: None,
            rttvar_ns: 0,
            rto_ns: p.rto_initial_ns,
            rto_at: None,
            rtt_probe: None,
            cwr_pending: false,
            ecn_recover: 0,
            dctcp: p.dctcp.then(Alpha::new),
            rcv_nxt: 0,
            ooo: BTreeMap::new(),
            acks: VecDeque::new(),
            unacked_segments: 0,
            delack_at: None,
            ece: false,
            ip_id: 0,
            stats: TcpStats::default(),
            payload: vec![0; p.mss],
        }
    }

    pub fn addressing(&self) -> &Addressing {
        &self.addr
    }

    pub fn params(&self) -> &TcpParams {
        &self.p
    }

    pub fn stats(&self) -> &TcpStats {
        &self.stats
    }

    pub fn cwnd(&self) -> u64 {
        self.cwnd
    }

    pub fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    /// DCTCP's alpha, when DCTCP is on.
    pub fn dctcp_alpha(&self) -> Option<f64> {
        self.dctcp.map(|d| d.alpha())
    }

    /// Bytes acknowledged by the peer.
    pub fn acked(&self) -> u64 {
        self.snd_una
    }

    /// Whether `frame` belongs to this connection (it came from the peer's port to ours).
    pub fn owns(&self, seg: &tcp::Segment) -> bool {
        let h = &seg.header;
        h.src_ip == self.addr.dst_ip
            && h.dst_ip == self.addr.src_ip
            && h.src_port == self.addr.dst_port
            && h.dst_port == self.addr.src_port
    }

    /// Stops the source: nothing more is written after `now`.
    pub fn stop(&mut self, now: u64) {
        if let Some(s) = &mut self.source {
            s.stopped_ns.get_or_insert(now);
        }
    }

    /// Its source has written everything it will and all of it is acknowledged.
    pub fn done(&self, now: u64) -> bool {
        self.source
            .map_or(true, |s| s.finished(now) && self.snd_una >= s.written(now))
    }

    fn written(&self, now: u64) -> u64 {
        self.source.map_or(0, |s| s.written(now))
    }

    fn window(&self) -> u64 {
        self.cwnd.min(self.peer_wnd)
    }

    /// The next segment of new (or, after a timeout, resent) data that may go at `now`:
    /// (offset, length).
    fn next_data(&self, now: u64) -> Option<(u64, usize)> {
        let written = self.written(now);
        let avail = written.saturating_sub(self.snd_nxt);
        if avail == 0 {
            return None;
        }
        let len = avail.min(self.p.mss as u64);
        let whole = len == self.p.mss as u64
            || self.snd_nxt < self.snd_max
            || self.source.is_some_and(|s| s.finished(now));
        (whole && self.snd_nxt - self.snd_una + len <= self.window())
            .then_some((self.snd_nxt, len as usize))
    }

    fn run_timers(&mut self, now: u64) {
        if self.rto_at.is_some_and(|t| t <= now) {
            self.on_timeout(now);
        }
        if self.delack_at.is_some_and(|t| t <= now) {
            self.delack_at = None;
            self.acks.push_back((self.rcv_nxt, self.ece));
        }
    }

    /// RFC 6298 5.4-5.7 and RFC 5681 (3.1, loss window): go back to the first unacknowledged
    /// byte with one segment of window.
    fn on_timeout(&mut self, now: u64) {
        self.stats.timeouts += 1;
        let flight = self.snd_max - self.snd_una;
        self.ssthresh = (flight / 2).max(2 * self.p.mss as u64);
        self.cwnd = self.p.mss as u64;
        self.ca_acked = 0;
        self.snd_nxt = self.snd_una;
        self.in_recovery = false;
        self.retransmit = false;
        self.recover = Some(self.snd_max);
        self.dupacks = 0;
        self.rtt_probe = None;
        self.rto_ns = (self.rto_ns * 2).min(RTO_MAX_NS);
        self.rto_at = (flight > 0).then_some(now + self.rto_ns);
    }

    fn rtt_sample(&mut self, r: u64) {
        // RFC 6298 2.2/2.3 with alpha 1/8, beta 1/4.
        match self.srtt_ns {
            None => {
                self.srtt_ns = Some(r);
                self.rttvar_ns = r / 2;
            }
            Some(s) => {
                self.rttvar_ns = (3 * self.rttvar_ns + s.abs_diff(r)) / 4;
                self.srtt_ns = Some((7 * s + r) / 8);
            }
        }
        let s = self.srtt_ns.unwrap_or(r);
        self.rto_ns = (s + (4 * self.rttvar_ns).max(1)).clamp(self.p.rto_min_ns, RTO_MAX_NS);
    }

    /// Takes a frame addressed to this connection.
    pub fn handle_frame(&mut self, now: u64, frame: &[u8]) {
        let seg = match tcp::parse(frame) {
            Ok(Some(s)) if self.owns(&s) => s,
            _ => {
                self.stats.rx_bad += 1;
                return;
            }
        };
        self.run_timers(now);
        self.stats.rx_segments += 1;
        let h = seg.header;
        let len = seg.payload.len() as u64;
        if h.flags & flags::ACK != 0 {
            self.on_ack(now, &h, len);
        }
        if len > 0 {
            self.on_data(now, &h, len);
        }
    }

    fn on_ack(&mut self, now: u64, h: &Header, len: u64) {
        let mss = self.p.mss as u64;
        let base = self.addr.iss.wrapping_add(self.snd_una as u32);
        let d = i64::from(h.ack.wrapping_sub(base) as i32);
        let ack = self.snd_una as i64 + d;
        if ack < self.snd_una as i64 || ack > self.snd_max as i64 {
            return;
        }
        let ack = ack as u64;
        self.peer_wnd = u64::from(h.window) << WSCALE;
        let ece = h.flags & flags::ECE != 0;
        if let Some(d) = &mut self.dctcp {
            // RFC 8257 3.3: the window's marked fraction, before its reaction below.
            d.on_ack(ack - self.snd_una, ece, ack, self.snd_nxt.max(ack));
        }
        if self.p.ecn && ece && self.snd_una >= self.ecn_recover {
            // RFC 3168 6.1.2: as for a loss, once per window, without retransmitting; DCTCP
            // cuts by alpha / 2 instead of half.
            if !self.in_recovery {
                self.ssthresh = match self.dctcp {
                    Some(d) => (self.cwnd as f64 * (1.0 - d.alpha() / 2.0)) as u64,
                    None => (self.snd_max - self.snd_una) / 2,
                }
                .max(2 * mss);
                self.cwnd = self.ssthresh;
                self.stats.ecn_reductions += 1;
            }
            self.ecn_recover = self.snd_max;
            self.cwr_pending = true;
        }
        if ack == self.snd_una {
            if len == 0 && self.snd_max > self.snd_una {
                self.on_dupack();
            }
            return;
        }
        let acked = ack - self.snd_una;
        self.snd_una = ack;
        self.snd_nxt = self.snd_nxt.max(ack);
        if let Some((end, sent)) = self.rtt_probe {
            if ack >= end {
                self.rtt_sample(now - sent);
                self.rtt_probe = None;
            }
        }
        if self.in_recovery {
            if self.recover.is_some_and(|r| ack >= r) {
                // Full ACK (RFC 6582 3.2 step 3): deflate.
                let flight = self.snd_max - self.snd_una;
                self.cwnd = self.ssthresh.min(flight.max(mss) + mss);
                self.in_recovery = false;
                self.dupacks = 0;
            } else {
                // Partial ACK: resend the next hole, deflate by what was acknowledged.
                self.retransmit = true;
                self.cwnd = self.cwnd.saturating_sub(acked);
                if acked >= mss {
                    self.cwnd += mss;
                }
                self.cwnd = self.cwnd.max(mss);
                self.rto_at = Some(now + self.rto_ns);
                return;
            }
        } else {
            self.dupacks = 0;
            if self.cwnd < self.ssthresh {
                self.cwnd += acked.min(mss);
            } else {
                self.ca_acked += acked;
                if self.ca_acked >= self.cwnd {
                    self.ca_acked -= self.cwnd;
                    self.cwnd += mss;
                }
            }
        }
        self.rto_at = (self.snd_max > self.snd_una).then_some(now + self.rto_ns);
    }

    fn on_dupack(&mut self) {
        let mss = self.p.mss as u64;
        self.stats.rx_dup_acks += 1;
        self.dupacks += 1;
        if self.in_recovery {
            self.cwnd += mss;
        } else if self.dupacks == 3 && self.recover.map_or(true, |r| self.snd_una > r) {
            // RFC 6582 3.2 step 2.
            let flight = self.snd_max - self.snd_una;
            self.ssthresh = (flight / 2).max(2 * mss);
            self.recover = Some(self.snd_max);
            self.cwnd = self.ssthresh + 3 * mss;
            self.in_recovery = true;
            self.retransmit = true;
            self.stats.fast_retransmits += 1;
        }
    }

    fn on_data(&mut self, now: u64, h: &Header, len: u64) {
        let ce = h.ecn == ECN_CE;
        if ce {
            self.stats.rx_ce += 1;
        }
        if self.p.dctcp {
            // RFC 8257 3.2: when the CE state changes, what is held for a delayed ACK is
            // acknowledged at once with the old state, so every ACK's ECE is its segments'.
            if ce != self.ece {
                if self.unacked_segments > 0 {
                    self.ack_now();
                }
                self.ece = ce;
            }
        } else {
            if h.flags & flags::CWR != 0 {
                self.ece = false;
            }
            if ce {
                self.ece = true;
            }
        }
        let base = self.addr.irs.wrapping_add(self.rcv_nxt as u32);
        let d = i64::from(h.seq.wrapping_sub(base) as i32);
        let start = self.rcv_nxt as i64 + d;
        let end = start + len as i64;
        if start == self.rcv_nxt as i64 {
            self.rcv_nxt = end as u64;
            // Whatever was held now follows in order.
            while let Some((&s, &e)) = self.ooo.first_key_value() {
                if s > self.rcv_nxt {
                    break;
                }
                self.rcv_nxt = self.rcv_nxt.max(e);
                self.ooo.remove(&s);
            }
            let delivered = self.rcv_nxt - start as u64;
            self.stats.rx_bytes += delivered;
            self.stats.rx_first_ns.get_or_insert(now);
            self.stats.rx_last_ns = Some(now);
            let filled_hole = delivered > len;
            self.unacked_segments += 1;
            if !self.p.delayed_ack || filled_hole || self.unacked_segments >= 2 {
                self.ack_now();
            } else if self.delack_at.is_none() {
                self.delack_at = Some(now + self.p.delack_ns);
            }
        } else {
            // Out of order or duplicate: an immediate (duplicate) ACK (RFC 5681 4.2).
            if start > self.rcv_nxt as i64 {
                let e = self.ooo.entry(start as u64).or_insert(end as u64);
                *e = (*e).max(end as u64);
            }
            self.ack_now();
        }
    }

    fn ack_now(&mut self) {
        self.acks.push_back((self.rcv_nxt, self.ece));
        self.unacked_segments = 0;
        self.delack_at = None;
    }

    /// The earliest time [`Connection::poll_tx`] may produce a frame or a timer fires.
    pub fn next_wakeup(&self, now: u64) -> Option<u64> {
        if !self.acks.is_empty() || self.retransmit || self.next_data(now).is_some() {
            return Some(now);
        }
        let mut w = [self.rto_at, self.delack_at];
        // The window is open but the source has not written the next segment yet.
        if let Some(s) = self.source {
            let next = self.snd_nxt + self.p.mss as u64;
            if self.snd_nxt - self.snd_una + self.p.mss as u64 <= self.window() {
                w[0] = match (w[0], s.time_of(next).filter(|&t| t > now)) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
        }
        w.into_iter().flatten().min()
    }

    /// Writes the next frame allowed at `now` into `out`: a retransmission, new data (with the
    /// ACK), or a pure ACK. False: nothing to send now.
    pub fn poll_tx(&mut self, now: u64, out: &mut Vec<u8>) -> bool {
        self.run_timers(now);
        let mss = self.p.mss as u64;
        let (off, len, resend) = if self.retransmit {
            self.retransmit = false;
            let len = (self.snd_max - self.snd_una).min(mss);
            if len == 0 {
                return self.poll_tx(now, out);
            }
            (self.snd_una, len as usize, true)
        } else if let Some((off, len)) = self.next_data(now) {
            (off, len, off < self.snd_max)
        } else if let Some((ack, ece)) = self.acks.pop_front() {
            let extra = if ece { flags::ECE } else { 0 };
            self.build(out, self.snd_nxt, 0, ECN_NOT_ECT, extra, ack);
            self.stats.tx_acks += 1;
            return true;
        } else {
            return false;
        };
        let end = off + len as u64;
        if resend {
            self.stats.retransmits += 1;
            self.rtt_probe = None;
        } else if self.rtt_probe.is_none() {
            self.rtt_probe = Some((end, now));
        }
        if off == self.snd_nxt {
            self.snd_nxt = end;
        }
        self.snd_max = self.snd_max.max(end);
        let mut extra = 0;
        if self.cwr_pending && !resend {
            extra |= flags::CWR;
            self.cwr_pending = false;
        }
        let ecn = if self.p.ecn { ECN_ECT0 } else { ECN_NOT_ECT };
        // The ACK carries everything due: no separate one is needed.
        self.acks.clear();
        self.unacked_segments = 0;
        self.delack_at = None;
        self.build(out, off, len, ecn, extra, self.rcv_nxt);
        self.stats.tx_data_bytes += len as u64;
        self.rto_at.get_or_insert(now + self.rto_ns);
        true
    }

    fn build(&mut self, out: &mut Vec<u8>, off: u64, len: usize, ecn: u8, extra: u8, ack: u64) {
        self.ip_id = self.ip_id.wrapping_add(1);
        let mut fl = flags::ACK | extra;
        if len > 0 {
            fl |= flags::PSH;
            // A data segment's ACK carries the present state; a pure ACK its own.
            if self.ece {
                fl |= flags::ECE;
            }
        }
        let h = Header {
            dst_mac: self.addr.dst_mac,
            src_mac: self.addr.src_mac,
            src_ip: self.addr.src_ip,
            dst_ip: self.addr.dst_ip,
            dscp: self.p.dscp,
            ecn,
            ttl: 64,
            ip_id: self.ip_id,
            src_port: self.addr.src_port,
            dst_port: self.addr.dst_port,
            seq: self.addr.iss.wrapping_add(off as u32),
            ack: self.addr.irs.wrapping_add(ack as u32),
            flags: fl,
            window: (self.p.rcv_wnd >> WSCALE).min(0xffff) as u16,
        };
        tcp::build_frame(out, &h, &self.payload[..len]);
        self.stats.tx_segments += 1;
    }
}

#[cfg(test)]
mod tests {
    //! Two connections joined by a test double of a network: a pipe with a fixed one-way delay
    //! and no serialization, which can drop chosen data segments. Without serialization the
    //! flights of slow start are exact: every ACK of round k arrives at k RTT.
    use super::*;

    const DELAY: u64 = 10_000;
    const RTT: u64 = 2 * DELAY;

    struct Pipe {
        a: Connection,
        b: Connection,
        /// (arrival, to b?, frame), in sending order.
        wire: Vec<(u64, bool, Vec<u8>)>,
        /// Data segments a sent, with their time and sequence offset.
        sent: Vec<(u64, u32)>,
        /// Sequence numbers (on the wire) of a's data segments to drop once.
        drop_seq: Vec<u32>,
        /// ... and to mark CE on the way.
        mark_seq: Vec<u32>,
        /// b's pure ACKs: (acknowledged sequence on the wire, ECE).
        acks: Vec<(u32, bool)>,
        now: u64,
    }

    fn pair(p: TcpParams, bytes: u64) -> Pipe {
        let addr = Addressing {
            src_mac: [2, 0, 0, 0, 0, 1],
            dst_mac: [2, 0, 0, 0, 0, 2],
            src_ip: [10, 0, 1, 2],
            dst_ip: [10, 0, 2, 2],
            src_port: 40000,
            dst_port: 5201,
            iss: 0xffff_f000,
            irs: 77,
        };
        let mut a = Connection::new(addr, p);
        a.source = Some(Source::new(0, None, Some(bytes)));
        let b = Connection::new(addr.reversed([2, 0, 0, 0, 0, 2], [2, 0, 0, 0, 0, 1]), p);
        Pipe {
            a,
            b,
            wire: Vec::new(),
            sent: Vec::new(),
            drop_seq: Vec::new(),
            mark_seq: Vec::new(),
            acks: Vec::new(),
            now: 0,
        }
    }

    impl Pipe {
        /// Sends whatever both ends may send now.
        fn poll(&mut self, buf: &mut Vec<u8>) {
            let now = self.now;
            while self.a.poll_tx(now, buf) {
                let seg = tcp::parse(buf).unwrap().unwrap();
                if !seg.payload.is_empty() {
                    self.sent.push((now, seg.header.seq));
                    if let Some(i) = self.drop_seq.iter().position(|&s| s == seg.header.seq) {
                        self.drop_seq.remove(i);
                        continue;
                    }
                    if self.mark_seq.contains(&seg.header.seq) {
                        lossless_wire::rocev2::mark_ce(buf);
                    }
                }
                self.wire.push((now + DELAY, true, buf.clone()));
            }
            while self.b.poll_tx(now, buf) {
                let h = tcp::parse(buf).unwrap().unwrap().header;
                self.acks.push((h.ack, h.flags & flags::ECE != 0));
                self.wire.push((now + DELAY, false, buf.clone()));
            }
        }

        /// Runs until nothing is left to happen or the next event lies after `until`; each
        /// arrival is handled on its own (in sending order) and both ends poll after it.
        fn run(&mut self, until: u64) {
            let mut buf = Vec::new();
            loop {
                self.poll(&mut buf);
                let now = self.now;
                let first = (0..self.wire.len()).min_by_key(|&i| (self.wire[i].0, i));
                let next = [
                    first.map(|i| self.wire[i].0),
                    self.a.next_wakeup(now),
                    self.b.next_wakeup(now),
                ]
                .into_iter()
                .flatten()
                .min();
                let Some(t) = next.filter(|&t| t <= until) else {
                    return;
                };
                self.now = t;
                if let Some(i) = first.filter(|&i| self.wire[i].0 == t) {
                    let (_, to_b, f) = self.wire.remove(i);
                    if to_b {
                        self.b.handle_frame(t, &f);
                    } else {
                        self.a.handle_frame(t, &f);
                    }
                }
            }
        }
    }

    #[test]
    fn slow_start_doubles_the_window_every_round_trip() {
        let p = TcpParams::new(1500, 0);
        let mss = p.mss as u64;
        let mut pipe = pair(p, 1000 * mss);
        for k in 0..6u32 {
            // Just after round k's ACKs arrived (at k RTT): 10 x 2^k segments of window,
            // all of them sent at that instant.
            pipe.run(u64::from(k) * RTT);
            assert_eq!(pipe.a.cwnd(), (10 * mss) << k, "round {k}");
            let in_round = pipe
                .sent
                .iter()
                .filter(|s| s.0 == u64::from(k) * RTT)
                .count();
            assert_eq!(in_round, 10 << k, "segments sent in round {k}");
        }
        pipe.run(u64::MAX);
        assert_eq!(pipe.b.stats().rx_bytes, 1000 * mss);
        assert_eq!(pipe.a.stats().retransmits, 0);
        assert!(pipe.a.done(pipe.now));
    }

    #[test]
    fn one_drop_is_recovered_by_fast_retransmit_without_timeout() {
        let p = TcpParams::new(1500, 0);
        let mss = p.mss as u64;
        let mut pipe = pair(p, 200 * mss);
        // The 25th data segment: in round 1 (segments 11..30), with 5 more behind it.
        let seq = pipe.a.addressing().iss.wrapping_add((24 * mss) as u32);
        pipe.drop_seq.push(seq);
        pipe.run(u64::MAX);
        let s = *pipe.a.stats();
        assert_eq!(pipe.b.stats().rx_bytes, 200 * mss, "everything delivered");
        assert_eq!((s.fast_retransmits, s.timeouts, s.retransmits), (1, 0, 1));
        // Round 1 at RTT: segments 10..29 sent, 24 lost. At 2 RTT the ACKs of 10..23 each
        // send two more (30..57), then the duplicate ACKs of 25, 26, 27: the retransmission
        // goes at the third, at 2 RTT.
        let resent: Vec<_> = pipe.sent.iter().filter(|x| x.1 == seq).collect();
        assert_eq!(resent.len(), 2);
        assert_eq!(resent[1].0, 2 * RTT);
        // Window halved at the loss: 58 - 24 = 34 segments in flight, ssthresh 17.
        assert_eq!(pipe.a.ssthresh(), 17 * mss);
        assert!(
            pipe.now < pipe.a.params().rto_min_ns,
            "no timeout waited for"
        );
    }

    #[test]
    fn a_lost_retransmission_waits_for_the_timeout_and_backs_off() {
        let p = TcpParams::new(1500, 0);
        let mss = p.mss as u64;
        let mut pipe = pair(p, 40 * mss);
        let seq = pipe.a.addressing().iss.wrapping_add((24 * mss) as u32);
        // Lost, and its fast retransmission lost too: only the timeout resends it.
        pipe.drop_seq.extend([seq, seq]);
        pipe.run(u64::MAX);
        let s = *pipe.a.stats();
        assert_eq!(pipe.b.stats().rx_bytes, 40 * mss);
        assert_eq!((s.fast_retransmits, s.timeouts), (1, 1));
        // RTT samples of 20 us keep the RTO at its 200 ms floor; the timer last restarted at
        // the last new ACK, at 2 RTT, when the fast retransmission went too.
        let resent: Vec<_> = pipe
            .sent
            .iter()
            .filter(|x| x.1 == seq)
            .map(|x| x.0)
            .collect();
        assert_eq!(resent.len(), 3);
        assert!(resent[2] >= resent[1] + p.rto_min_ns);
    }

    #[test]
    fn ecn_echo_halves_the_window_once_per_window() {
        let mut p = TcpParams::new(1500, 0);
        p.ecn = true;
        let mss = p.mss as u64;
        let mut pipe = pair(p, 100 * mss);
        // Round 0 (10 segments) goes out; mark every one of them CE on the way.
        pipe.run(0);
        for w in &mut pipe.wire {
            assert_eq!(w.2[15] & 3, ECN_ECT0);
            lossless_wire::rocev2::mark_ce(&mut w.2);
        }
        pipe.run(RTT);
        // Ten ECE ACKs, one reduction: flight 10 -> ssthresh 5 MSS.
        assert_eq!(pipe.a.stats().ecn_reductions, 1);
        assert_eq!(pipe.b.stats().rx_ce, 10);
        assert_eq!(pipe.a.ssthresh(), 5 * mss);
        pipe.run(u64::MAX);
        assert_eq!(pipe.b.stats().rx_bytes, 100 * mss);
        assert_eq!(pipe.a.stats().ecn_reductions, 1, "CWR stopped the echo");
    }

    #[test]
    fn dctcp_cuts_the_window_by_alpha_over_two_once_per_window() {
        let p = TcpParams::new(1500, 0).with_dctcp();
        let mss = p.mss as u64;
        let mut pipe = pair(p, 200 * mss);
        // Segment 30: the first of round 2 (10, 20, 40 segments per round in slow start).
        let seq = pipe.a.addressing().iss.wrapping_add((30 * mss) as u32);
        pipe.mark_seq.push(seq);
        pipe.run(3 * RTT - 1);
        assert_eq!(pipe.a.cwnd(), 40 * mss);
        pipe.run(3 * RTT);
        // Windows close at the first ACK beyond their end: at RTT (1 segment, none marked),
        // at 2 RTT (10, none), at 3 RTT with segment 30's ACK (20 segments, 1 marked).
        let g = crate::dctcp::G;
        let alpha = (1.0 - g) * ((1.0 - g) * ((1.0 - g) * 1.0)) + g * (1.0 / 20.0);
        assert_eq!(pipe.a.dctcp_alpha(), Some(alpha));
        let cut = ((40 * mss) as f64 * (1.0 - alpha / 2.0)) as u64;
        assert_eq!(pipe.a.ssthresh(), cut);
        assert_eq!(pipe.a.stats().ecn_reductions, 1);
        pipe.run(u64::MAX);
        assert_eq!(pipe.b.stats().rx_bytes, 200 * mss);
        assert_eq!(pipe.a.stats().ecn_reductions, 1, "one mark, one cut");
    }

    #[test]
    fn dctcp_receiver_echoes_exactly_the_marked_segments_under_delayed_acks() {
        let mut p = TcpParams::new(1500, 0).with_dctcp();
        p.delayed_ack = true;
        let mss = p.mss as u64;
        let mut pipe = pair(p, 120 * mss);
        let iss = pipe.a.addressing().iss;
        // Runs of marks of every length against two-segment delayed ACKs.
        let marked: Vec<u64> = vec![3, 10, 11, 20, 21, 22, 40, 41, 42, 43, 77, 100, 119];
        pipe.mark_seq = marked
            .iter()
            .map(|&k| iss.wrapping_add((k * mss) as u32))
            .collect();
        pipe.run(u64::MAX);
        assert_eq!(pipe.b.stats().rx_bytes, 120 * mss);
        assert_eq!(pipe.b.stats().rx_ce, marked.len() as u64);
        // Every ACK covers segments of one CE state, and says which.
        let mut covered = 0u64;
        for &(ack, ece) in &pipe.acks {
            let upto = u64::from(ack.wrapping_sub(iss)) / mss;
            for k in covered..upto {
                assert_eq!(marked.contains(&k), ece, "segment {k} in the ACK of {upto}");
            }
            covered = covered.max(upto);
        }
        assert_eq!(covered, 120);
        assert!(pipe.acks.len() < 120, "ACKs were delayed");
    }

    #[test]
    fn dctcp_alpha_settles_at_the_marked_fraction() {
        let p = TcpParams::new(1500, 0).with_dctcp();
        let mss = p.mss as u64;
        let segments = 20_000u64;
        let mut pipe = pair(p, segments * mss);
        let iss = pipe.a.addressing().iss;
        // One segment in four marked, whatever the window.
        pipe.mark_seq = (0..segments)
            .filter(|k| k % 4 == 0)
            .map(|k| iss.wrapping_add((k * mss) as u32))
            .collect();
        pipe.run(u64::MAX);
        let alpha = pipe.a.dctcp_alpha().unwrap();
        assert!((alpha - 0.25).abs() < 0.03, "alpha {alpha}");
        assert_eq!(pipe.b.stats().rx_bytes, segments * mss);
        let s = pipe.a.stats();
        assert_eq!((s.retransmits, s.timeouts), (0, 0));
        assert!(s.ecn_reductions > 100, "{s:?}");
    }
}
