//! The traffic manager proper. Every entry point takes the current time in nanoseconds, so the
//! same code runs under the switch's monotonic clock and under a test's simulated one.

use crate::config::{
    ConfigError, PfcwdAction, PortConfig, SchedulerType, TmConfig, QUEUES_PER_PORT,
};
use crate::stats::{
    BufferStats, DropCounts, DropReason, PfcwdQueueStats, PortStats, QueueStats, TmStats,
};
use lossless_wire::pfc::{quanta_to_ns, MacControl};
use std::collections::VecDeque;

/// FCS the port appends to every frame the pipeline hands over.
const FCS_BYTES: u64 = 4;
/// Ethernet's minimum frame, FCS included: shorter frames are padded on the wire.
const MIN_WIRE_FRAME: u64 = 64;
/// Preamble + SFD (8) and the minimum inter-frame gap (12) occupy the line for every frame.
const PER_FRAME_OVERHEAD: u64 = 20;
/// Ethernet header plus one 802.1Q tag, on top of the IP MTU.
const L2_HEADER_ALLOWANCE: u32 = 18;
/// Watchdog events kept for [`Tm::take_pfcwd_events`]; older ones are discarded first.
const MAX_PENDING_EVENTS: usize = 4096;
const NS_PER_S: u128 = 1_000_000_000;
/// DWRR quantum per unit of weight, in bytes (the smallest Ethernet frame).
const DWRR_QUANTUM_BYTES: u64 = 64;

/// Bytes one frame of `len` (as the pipeline sees it: no FCS) occupies on the line.
pub fn wire_bytes(len: u32) -> u64 {
    (len as u64 + FCS_BYTES).max(MIN_WIRE_FRAME) + PER_FRAME_OVERHEAD
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TmError {
    #[error("port {0} is not configured in the traffic manager")]
    UnknownPort(u32),
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// A packet the traffic manager refused, handed back so the caller can reuse its buffer.
#[derive(Debug)]
pub struct Dropped<P> {
    pub reason: DropReason,
    pub pkt: P,
}

/// A queued packet the watchdog's drop action flushed, handed back (see [`Tm::take_flushed`]).
#[derive(Debug)]
pub struct Flushed<P> {
    pub pkt: P,
    pub port: u32,
    pub queue: usize,
    pub len: u32,
    pub enq_ns: u64,
}

/// What the pipeline learns at enqueue: the depth the packet found (bmv2 `enq_qdepth` in packets;
/// bytes and cells as well).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnqueueInfo {
    pub queue: usize,
    pub enq_qdepth: u32,
    pub enq_qdepth_bytes: u64,
    pub enq_qdepth_cells: u64,
    /// Buffer cells this packet occupies.
    pub cells: u32,
}

/// A packet leaving a port, with bmv2's queueing metadata (in ns; the switch converts to the
/// microseconds bmv2 shows) and when its bits occupy the line.
#[derive(Debug)]
pub struct Dequeued<P> {
    pub pkt: P,
    pub len: u32,
    pub queue: usize,
    pub enq_ns: u64,
    /// bmv2 `deq_timedelta`: time spent queued.
    pub deq_timedelta_ns: u64,
    /// bmv2 `deq_qdepth`: packets left behind in the queue.
    pub deq_qdepth: u32,
    pub deq_qdepth_bytes: u64,
    pub deq_qdepth_cells: u64,
    pub tx_start_ns: u64,
    pub tx_end_ns: u64,
}

/// Occupancy of one queue right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueDepth {
    pub packets: u32,
    pub bytes: u64,
    pub cells: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PfcwdEventKind {
    StormDetected,
    StormRestored,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct PfcwdEvent {
    pub time_ns: u64,
    pub port: u32,
    pub queue: usize,
    pub kind: PfcwdEventKind,
    pub action: PfcwdAction,
}

/// Whether a received frame goes on to the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RxVerdict {
    Forward,
    /// A MAC control frame: the port acted on it (or counted it as malformed) and keeps it.
    Consumed,
}

struct Entry<P> {
    pkt: P,
    len: u32,
    cells: u32,
    enq_ns: u64,
}

#[derive(Default)]
struct WdState {
    stormed: bool,
    stalled_ns: u64,
    calm_ns: u64,
    /// Queue transmissions seen at the previous poll (never cleared, unlike tx counters).
    tx_mark: u64,
    xoff_seen: bool,
    storms: u64,
    restorations: u64,
}

struct Queue<P> {
    fifo: VecDeque<Entry<P>>,
    sched: SchedulerType,
    quantum: u64,
    deficit: u64,
    limit_cells: Option<u64>,
    limit_packets: Option<u32>,
    dynamic_th: Option<i8>,
    /// Gap between two transmissions of a rate-limited queue (`rate_pps`), and when it may
    /// send next.
    rate_gap_ns: Option<u64>,
    next_ok_ns: u64,
    bytes: u64,
    cells: u64,
    peak_bytes: u64,
    peak_cells: u64,
    area_bytes: u128,
    area_cells: u128,
    area_ns: u64,
    /// Current (or last) pause interval, and paused time accumulated before it.
    pause_start: u64,
    pause_end: u64,
    paused_acc: u64,
    tx_packets: u64,
    tx_bytes: u64,
    tx_lifetime: u64,
    drops: DropCounts,
    /// Some honoured PFC priority maps here: the watchdog looks after it.
    pfc: bool,
    wd: WdState,
}

impl<P> Queue<P> {
    fn new(now: u64) -> Self {
        Queue {
            fifo: VecDeque::new(),
            sched: SchedulerType::Strict,
            quantum: 0,
            deficit: 0,
            limit_cells: None,
            limit_packets: None,
            dynamic_th: None,
            rate_gap_ns: None,
            next_ok_ns: 0,
            bytes: 0,
            cells: 0,
            peak_bytes: 0,
            peak_cells: 0,
            area_bytes: 0,
            area_cells: 0,
            area_ns: now,
            pause_start: now,
            pause_end: now,
            paused_acc: 0,
            tx_packets: 0,
            tx_bytes: 0,
            tx_lifetime: 0,
            drops: DropCounts::default(),
            pfc: false,
            wd: WdState::default(),
        }
    }

    /// What sending the head frame costs the deficit: bytes for DWRR, one for WRR.
    fn cost(&self) -> u64 {
        match self.sched {
            SchedulerType::Dwrr => self.fifo.front().map_or(0, |e| e.len as u64),
            _ => 1,
        }
    }

    /// Integrates occupancy up to `now` before it changes, for the time-weighted average.
    fn integrate(&mut self, now: u64) {
        let dt = now.saturating_sub(self.area_ns) as u128;
        self.area_bytes += self.bytes as u128 * dt;
        self.area_cells += self.cells as u128 * dt;
        self.area_ns = self.area_ns.max(now);
    }

    fn paused_ns(&self, now: u64) -> u64 {
        self.paused_acc + now.min(self.pause_end).saturating_sub(self.pause_start)
    }

    /// Moves the queue's pause end to `new_end` (a time at or before `now` means resume now),
    /// keeping the paused-time bookkeeping in intervals.
    fn set_pause_end(&mut self, now: u64, new_end: u64) {
        if self.pause_end > now {
            self.pause_end = new_end.max(now);
        } else if new_end > now {
            self.paused_acc += self.pause_end.saturating_sub(self.pause_start);
            self.pause_start = now;
            self.pause_end = new_end;
        }
    }
}

struct WdParams {
    detection_ns: u64,
    restoration_ns: u64,
    action: PfcwdAction,
}

struct Port<P> {
    cfg: PortConfig,
    max_frame: u32,
    limit_cells: Option<u64>,
    honoured: u8,
    prio_queue: [usize; 8],
    wd: Option<WdParams>,
    /// End of the frame on the line, in units of 1/rate_bps ns so that no rounding accumulates.
    busy_until: u128,
    prio_pause_until: [u64; 8],
    port_pause_until: u64,
    used_cells: u64,
    peak_cells: u64,
    rx_packets: u64,
    rx_bytes: u64,
    tx_packets: u64,
    tx_bytes: u64,
    drops: DropCounts,
    pfc_rx: [u64; 8],
    pause_rx: u64,
    mac_control_other_rx: u64,
    mac_control_malformed: u64,
    queues: Vec<Queue<P>>,
    rr: usize,
    rr_fresh: bool,
}

impl<P> Port<P> {
    fn new(cfg: PortConfig, cell_bytes: u32, now: u64) -> Self {
        let mut port = Port {
            cfg: PortConfig::new(cfg.port, cfg.rate_bps),
            max_frame: 0,
            limit_cells: None,
            honoured: 0,
            prio_queue: [0; 8],
            wd: None,
            busy_until: now as u128 * cfg.rate_bps as u128,
            prio_pause_until: [0; 8],
            port_pause_until: 0,
            used_cells: 0,
            peak_cells: 0,
            rx_packets: 0,
            rx_bytes: 0,
            tx_packets: 0,
            tx_bytes: 0,
            drops: DropCounts::default(),
            pfc_rx: [0; 8],
            pause_rx: 0,
            mac_control_other_rx: 0,
            mac_control_malformed: 0,
            queues: (0..QUEUES_PER_PORT).map(|_| Queue::new(now)).collect(),
            rr: 0,
            rr_fresh: true,
        };
        port.apply(cfg, cell_bytes, now);
        port
    }

    /// Applies a (validated) configuration, keeping queued packets, counters and pause state.
    fn apply(&mut self, cfg: PortConfig, cell_bytes: u32, now: u64) {
        let busy_ns = self.busy_until_ns();
        self.busy_until = busy_ns as u128 * cfg.rate_bps as u128;
        self.max_frame = cfg.mtu + L2_HEADER_ALLOWANCE;
        self.limit_cells = cfg.limit_bytes.map(|b| b / cell_bytes as u64);
        self.honoured = cfg.pfc_enable.iter().fold(0, |m, &p| m | 1 << p);
        for p in 0..8u8 {
            self.prio_queue[p as usize] = cfg.queue_of_priority(p);
        }
        self.wd = cfg.pfcwd.as_ref().map(|w| WdParams {
            detection_ns: w.detection_time_ms * 1_000_000,
            restoration_ns: w.effective_restoration_time_ms() * 1_000_000,
            action: w.action,
        });
        for (qi, q) in self.queues.iter_mut().enumerate() {
            let qc = cfg.queues.iter().find(|c| c.queue as usize == qi);
            q.sched = qc.map_or(SchedulerType::Strict, |c| c.scheduler);
            let weight = qc.and_then(|c| c.weight).unwrap_or(1) as u64;
            // A small DWRR quantum (weight x 64 bytes) keeps the shares by weight even when a
            // queue holds less than one MTU-sized quantum: with weight x MTU, a shallow queue
            // empties within its turn and every congested queue ends up with the same share.
            q.quantum = match q.sched {
                SchedulerType::Dwrr => weight * DWRR_QUANTUM_BYTES,
                _ => weight,
            };
            q.limit_cells = qc
                .and_then(|c| c.limit_bytes)
                .map(|b| b / cell_bytes as u64);
            q.limit_packets = qc.and_then(|c| c.limit_packets);
            q.dynamic_th = qc.and_then(|c| c.dynamic_th);
            q.rate_gap_ns = qc
                .and_then(|c| c.rate_pps)
                .map(|pps| NS_PER_S.div_ceil(pps as u128) as u64);
            q.pfc = (0..8).any(|p| self.honoured & (1 << p) != 0 && self.prio_queue[p] == qi);
        }
        self.cfg = cfg;
        for qi in 0..QUEUES_PER_PORT {
            self.refresh_pause(qi, now);
        }
    }

    fn rate(&self) -> u128 {
        self.cfg.rate_bps as u128
    }

    fn busy_until_ns(&self) -> u64 {
        if self.cfg.rate_bps == 0 {
            return 0;
        }
        self.busy_until.div_ceil(self.rate()) as u64
    }

    fn pfc_paused(&self, qi: usize, t: u64) -> bool {
        (0..8).any(|p| {
            self.honoured & (1 << p) != 0
                && self.prio_queue[p] == qi
                && self.prio_pause_until[p] > t
        })
    }

    fn refresh_pause(&mut self, qi: usize, now: u64) {
        let mut end = self.port_pause_until;
        for p in 0..8 {
            if self.honoured & (1 << p) != 0 && self.prio_queue[p] == qi {
                end = end.max(self.prio_pause_until[p]);
            }
        }
        self.queues[qi].set_pause_end(now, end);
    }

    fn ignores_pause(&self, qi: usize) -> bool {
        self.queues[qi].wd.stormed
            && matches!(&self.wd, Some(w) if w.action == PfcwdAction::Forward)
    }

    fn eligible(&self, qi: usize, now: u64) -> bool {
        let q = &self.queues[qi];
        !q.fifo.is_empty()
            && (q.pause_end <= now || self.ignores_pause(qi))
            && (q.rate_gap_ns.is_none() || q.next_ok_ns <= now)
    }

    /// When a queue held back by a pause or its rate limit may send again.
    fn ready_at(&self, qi: usize) -> u64 {
        let q = &self.queues[qi];
        let pause = if self.ignores_pause(qi) {
            0
        } else {
            q.pause_end
        };
        let rate = q.rate_gap_ns.map_or(0, |_| q.next_ok_ns);
        pause.max(rate)
    }

    /// Strict queues first, highest number first; then one deficit round robin over the
    /// DWRR (bytes) and WRR (packets) queues.
    fn pick(&mut self, now: u64) -> Option<usize> {
        if let Some(qi) = self.pick_strict(now) {
            return Some(qi);
        }
        let mut ready = 0u32;
        for qi in 0..QUEUES_PER_PORT {
            if self.queues[qi].sched != SchedulerType::Strict && self.eligible(qi, now) {
                ready |= 1 << qi;
            }
        }
        match ready.count_ones() {
            0 => None,
            1 => Some(self.pick_only(ready.trailing_zeros() as usize, now)),
            _ => Some(self.pick_round_robin(now)),
        }
    }

    fn pick_strict(&self, now: u64) -> Option<usize> {
        (0..QUEUES_PER_PORT)
            .rev()
            .find(|&qi| self.queues[qi].sched == SchedulerType::Strict && self.eligible(qi, now))
    }

    /// What [`Port::pick_round_robin`] does when `w` is the only weighted queue that may send
    /// (one lossless class congested, as in an incast), in closed form: its rounds over all
    /// eight queues, and the extra rounds played when a quantum is smaller than the head frame,
    /// took most of a dequeue's instructions.
    fn pick_only(&mut self, w: usize, now: u64) -> usize {
        let q = &self.queues[w];
        if q.quantum == 0 {
            return self.pick_round_robin(now);
        }
        let (start, cost) = (self.rr, q.cost());
        // `w` takes its quantum when the ring reaches it afresh.
        let mut deficit = q.deficit
            + if self.rr_fresh || start != w {
                q.quantum
            } else {
                0
            };
        // The ring visits the queues from `start` to `w`, or, when `w` cannot afford its frame
        // at once, all of them and then again up to `w`; an empty queue it passes loses its
        // deficit.
        let passed = if cost <= deficit {
            (w + QUEUES_PER_PORT - start) % QUEUES_PER_PORT
        } else {
            // Rounds until it can: all but the last add their quanta at once, the last as the
            // ring reaches `w` again.
            deficit += (cost - deficit).div_ceil(q.quantum) * q.quantum;
            QUEUES_PER_PORT
        };
        for k in 0..passed {
            let qi = (start + k) % QUEUES_PER_PORT;
            if qi != w && self.queues[qi].fifo.is_empty() {
                self.queues[qi].deficit = 0;
            }
        }
        self.queues[w].deficit = deficit - cost;
        self.rr = w;
        self.rr_fresh = false;
        w
    }

    /// One deficit round robin over the DWRR (bytes) and WRR (packets) queues, at least one of
    /// which may send.
    fn pick_round_robin(&mut self, now: u64) -> usize {
        let weighted = |p: &Self, qi: usize| p.queues[qi].sched != SchedulerType::Strict;
        loop {
            for _ in 0..QUEUES_PER_PORT {
                let qi = self.rr;
                if weighted(self, qi) && self.eligible(qi, now) {
                    let q = &mut self.queues[qi];
                    if self.rr_fresh {
                        q.deficit += q.quantum;
                        self.rr_fresh = false;
                    }
                    let cost = q.cost();
                    if cost <= q.deficit {
                        q.deficit -= cost;
                        return qi;
                    }
                } else if self.queues[qi].fifo.is_empty() {
                    self.queues[qi].deficit = 0;
                }
                self.rr = (qi + 1) % QUEUES_PER_PORT;
                self.rr_fresh = true;
            }
            // A whole round and no queue could afford its head frame (quanta smaller than
            // frames): play the rounds until the first one can at once, all but the last by
            // adding their quanta, the last by visiting in ring order as usual.
            let rounds = (0..QUEUES_PER_PORT)
                .filter(|&qi| weighted(self, qi) && self.eligible(qi, now))
                .map(|qi| {
                    let q = &self.queues[qi];
                    q.cost()
                        .saturating_sub(q.deficit)
                        .div_ceil(q.quantum.max(1))
                })
                .min()
                .unwrap_or(1);
            for qi in 0..QUEUES_PER_PORT {
                if weighted(self, qi) && self.eligible(qi, now) {
                    let q = &mut self.queues[qi];
                    q.deficit += (rounds - 1) * q.quantum;
                }
            }
        }
    }
}

/// Port numbers below this are looked up by indexing (bmv2 numbers a switch's ports, its CPU
/// port and its drop port from 0 to 511); others by bisection.
const DENSE_PORTS: u32 = 1024;

/// Port number -> position in `Tm::ports`. Every enqueue, dequeue and received frame looks a
/// port up: a vector indexed by the number (position + 1, 0 for none), which is a load, for the
/// usual numbers, and a sorted vector searched by bisection for the rest (the bisection over the
/// 17 ports of lossless-sim's incast switch was 1.3 % of a run's instructions; SipHash would be
/// more).
/// Also p4-switch's core's index of its ports.
#[derive(Default)]
pub struct PortIndex {
    dense: Vec<u32>,
    sparse: Vec<(u32, usize)>,
}

impl PortIndex {
    pub fn get(&self, port: u32) -> Option<usize> {
        if port < DENSE_PORTS {
            let at = *self.dense.get(port as usize)?;
            return at.checked_sub(1).map(|i| i as usize);
        }
        let i = self.sparse.binary_search_by_key(&port, |e| e.0).ok()?;
        self.sparse.get(i).map(|e| e.1)
    }

    pub fn insert(&mut self, port: u32, at: usize) {
        if port < DENSE_PORTS {
            let p = port as usize;
            if self.dense.len() <= p {
                self.dense.resize(p + 1, 0);
            }
            // A TM has far fewer than 2^32 ports.
            self.dense[p] = at as u32 + 1;
            return;
        }
        match self.sparse.binary_search_by_key(&port, |e| e.0) {
            Ok(i) => self.sparse[i].1 = at,
            Err(i) => self.sparse.insert(i, (port, at)),
        }
    }
}

/// The traffic manager: ports, their queues, the shared buffer, PFC state and the watchdog.
/// `P` is whatever the switch carries for a packet; the TM only looks at the length given with it.
pub struct Tm<P> {
    cell_bytes: u32,
    total_cells: u64,
    used_cells: u64,
    peak_cells: u64,
    poll_ns: u64,
    next_poll_ns: u64,
    catch_up_ns: u64,
    ports: Vec<Port<P>>,
    index: PortIndex,
    unknown_port_drops: u64,
    unknown_port_rx: u64,
    events: VecDeque<PfcwdEvent>,
    /// Packets flushed by the watchdog since the last [`Tm::take_flushed`].
    flushed: Vec<Flushed<P>>,
    since_ns: u64,
}

impl<P> Tm<P> {
    /// Builds the TM at time `now_ns` (normally 0) from a configuration.
    pub fn new(cfg: TmConfig, now_ns: u64) -> Result<Self, TmError> {
        cfg.validate()?;
        let cell_bytes = cfg.buffer.effective_cell_bytes();
        let poll_ns = cfg.pfcwd_poll_interval_ms * 1_000_000;
        let mut tm = Tm {
            cell_bytes,
            total_cells: cfg.buffer.total_bytes / cell_bytes as u64,
            used_cells: 0,
            peak_cells: 0,
            poll_ns,
            next_poll_ns: now_ns + poll_ns,
            catch_up_ns: cfg.catch_up_ns,
            ports: Vec::new(),
            index: PortIndex::default(),
            unknown_port_drops: 0,
            unknown_port_rx: 0,
            events: VecDeque::new(),
            flushed: Vec::new(),
            since_ns: now_ns,
        };
        for pc in cfg.ports {
            tm.index.insert(pc.port, tm.ports.len());
            tm.ports.push(Port::new(pc, cell_bytes, now_ns));
        }
        Ok(tm)
    }

    /// Adds a port or changes one while running (rate, MTU, schedulers, limits, PFC, watchdog);
    /// queued packets, counters and pause timers are kept.
    pub fn configure_port(&mut self, now_ns: u64, cfg: PortConfig) -> Result<(), TmError> {
        self.advance(now_ns);
        cfg.validate(&format!("port {}", cfg.port))?;
        match self.index.get(cfg.port) {
            Some(i) => self.ports[i].apply(cfg, self.cell_bytes, now_ns),
            None => {
                self.index.insert(cfg.port, self.ports.len());
                self.ports.push(Port::new(cfg, self.cell_bytes, now_ns));
            }
        }
        Ok(())
    }

    pub fn port_config(&self, port: u32) -> Option<&PortConfig> {
        self.index.get(port).map(|i| &self.ports[i].cfg)
    }

    pub fn port_numbers(&self) -> impl Iterator<Item = u32> + '_ {
        self.ports.iter().map(|p| p.cfg.port)
    }

    /// Where `port` is in [`Tm::port_numbers`]' order.
    pub fn port_position(&self, port: u32) -> Option<usize> {
        self.index.get(port)
    }

    pub fn cell_bytes(&self) -> u32 {
        self.cell_bytes
    }

    /// Depth of one queue in packets (what bmv2 reports), bytes and cells.
    pub fn queue_depth(&self, port: u32, queue: usize) -> Option<QueueDepth> {
        let q = self.ports.get(self.index.get(port)?)?.queues.get(queue)?;
        Some(QueueDepth {
            packets: q.fifo.len() as u32,
            bytes: q.bytes,
            cells: q.cells,
        })
    }

    /// Whether `queue` of `port` is held by PFC or PAUSE at `now_ns`.
    pub fn is_paused(&self, now_ns: u64, port: u32, queue: usize) -> bool {
        self.index
            .get(port)
            .and_then(|i| self.ports[i].queues.get(queue))
            .is_some_and(|q| q.pause_end > now_ns)
    }

    /// Admits a packet of `len` bytes (frame without FCS) into `queue` of `port`, or says why not.
    pub fn enqueue(
        &mut self,
        now_ns: u64,
        port: u32,
        queue: usize,
        len: u32,
        pkt: P,
    ) -> Result<EnqueueInfo, Dropped<P>> {
        self.advance(now_ns);
        let Some(pi) = self.index.get(port) else {
            self.unknown_port_drops += 1;
            return Err(Dropped {
                reason: DropReason::UnknownPort,
                pkt,
            });
        };
        let cells = len.div_ceil(self.cell_bytes).max(1);
        let free = self.total_cells - self.used_cells;
        let p = &mut self.ports[pi];
        let reason = if queue >= QUEUES_PER_PORT {
            Some(DropReason::InvalidQueue)
        } else if len > p.max_frame {
            Some(DropReason::MtuExceeded)
        } else if p.queues[queue].wd.stormed
            && matches!(&p.wd, Some(w) if w.action == PfcwdAction::Drop)
        {
            Some(DropReason::PfcWatchdog)
        } else if cells as u64 > free {
            Some(DropReason::BufferExhausted)
        } else if p
            .limit_cells
            .is_some_and(|l| p.used_cells + cells as u64 > l)
        {
            Some(DropReason::PortLimit)
        } else {
            let q = &p.queues[queue];
            if q.limit_packets
                .is_some_and(|l| q.fifo.len() as u64 >= l as u64)
                || q.limit_cells.is_some_and(|l| q.cells + cells as u64 > l)
            {
                Some(DropReason::QueueLimit)
            } else if q.dynamic_th.is_some_and(|th| {
                // SONiC dynamic_th: the queue may grow to 2^th x the buffer still free.
                let limit = if th >= 0 {
                    free.saturating_mul(1 << th)
                } else {
                    free >> (-th)
                };
                q.cells + cells as u64 > limit
            }) {
                Some(DropReason::DynamicThreshold)
            } else {
                None
            }
        };
        if let Some(reason) = reason {
            p.drops.add(reason);
            if let Some(q) = p.queues.get_mut(queue) {
                q.drops.add(reason);
            }
            return Err(Dropped { reason, pkt });
        }
        let q = &mut p.queues[queue];
        q.integrate(now_ns);
        let info = EnqueueInfo {
            queue,
            enq_qdepth: q.fifo.len() as u32,
            enq_qdepth_bytes: q.bytes,
            enq_qdepth_cells: q.cells,
            cells,
        };
        q.fifo.push_back(Entry {
            pkt,
            len,
            cells,
            enq_ns: now_ns,
        });
        q.bytes += len as u64;
        q.cells += cells as u64;
        q.peak_bytes = q.peak_bytes.max(q.bytes);
        q.peak_cells = q.peak_cells.max(q.cells);
        p.used_cells += cells as u64;
        p.peak_cells = p.peak_cells.max(p.used_cells);
        self.used_cells += cells as u64;
        self.peak_cells = self.peak_cells.max(self.used_cells);
        Ok(info)
    }

    /// The next packet `port` transmits at `now_ns`, if the line is free and a queue may send.
    pub fn dequeue(&mut self, now_ns: u64, port: u32) -> Option<Dequeued<P>> {
        self.advance(now_ns);
        let pi = self.index.get(port)?;
        let p = &mut self.ports[pi];
        if now_ns < p.busy_until_ns() {
            return None;
        }
        let qi = p.pick(now_ns)?;
        let rate = p.rate();
        let q = &mut p.queues[qi];
        q.integrate(now_ns);
        let e = q.fifo.pop_front()?;
        q.bytes -= e.len as u64;
        q.cells -= e.cells as u64;
        q.tx_packets += 1;
        q.tx_bytes += e.len as u64;
        q.tx_lifetime += 1;
        if let Some(gap) = q.rate_gap_ns {
            // As bmv2's rate-limited queues: the next packet no sooner than one gap after this
            // one, or now if the queue has been idle longer.
            q.next_ok_ns = q.next_ok_ns.max(now_ns) + gap;
        }
        let deq = (q.fifo.len() as u32, q.bytes, q.cells);
        p.used_cells -= e.cells as u64;
        p.tx_packets += 1;
        p.tx_bytes += e.len as u64;
        self.used_cells -= e.cells as u64;
        // A caller woken at the rounded-up end of the previous frame is on time: the fraction of
        // a nanosecond must not become idle line, or short frames at 100G would lose percents.
        let start = if p.busy_until + rate > now_ns as u128 * rate {
            p.busy_until
        } else {
            let earliest = now_ns.saturating_sub(self.catch_up_ns) as u128 * rate;
            p.busy_until.max(earliest)
        };
        p.busy_until = start + wire_bytes(e.len) as u128 * 8 * NS_PER_S;
        Some(Dequeued {
            len: e.len,
            queue: qi,
            enq_ns: e.enq_ns,
            deq_timedelta_ns: now_ns.saturating_sub(e.enq_ns),
            deq_qdepth: deq.0,
            deq_qdepth_bytes: deq.1,
            deq_qdepth_cells: deq.2,
            tx_start_ns: (start / rate) as u64,
            tx_end_ns: p.busy_until_ns(),
            pkt: e.pkt,
        })
    }

    /// Earliest time at or after `now_ns` when calling [`Tm::dequeue`] for `port` may return a
    /// packet, or when the watchdog must look at it; `None` when the port has nothing to do.
    pub fn next_event_ns(&self, now_ns: u64, port: u32) -> Option<u64> {
        let p = &self.ports[self.index.get(port)?];
        let busy = p.busy_until_ns().max(now_ns);
        let mut next: Option<u64> = None;
        let mut consider = |t: u64| next = Some(next.map_or(t, |n: u64| n.min(t)));
        let mut watch = false;
        for (qi, q) in p.queues.iter().enumerate() {
            if q.fifo.is_empty() {
                watch |= q.wd.stormed;
                continue;
            }
            if p.eligible(qi, now_ns) {
                consider(busy);
            } else {
                consider(p.ready_at(qi).max(busy));
                watch |= q.pfc;
            }
        }
        if watch && p.wd.is_some() {
            consider(self.next_poll_ns.max(now_ns));
        }
        next
    }

    /// Counts a frame received on `port` and consumes it if it is a MAC control frame (decoded by
    /// `lossless-wire`). Other frames go on to the pipeline.
    pub fn on_rx_frame(&mut self, now_ns: u64, port: u32, frame: &[u8]) -> RxVerdict {
        let decoded = MacControl::decode(frame);
        let Some(pi) = self.index.get(port) else {
            self.unknown_port_rx += 1;
            return match decoded {
                Ok(None) => RxVerdict::Forward,
                _ => RxVerdict::Consumed,
            };
        };
        let p = &mut self.ports[pi];
        p.rx_packets += 1;
        p.rx_bytes += frame.len() as u64;
        match decoded {
            Ok(None) => RxVerdict::Forward,
            Ok(Some(mc)) => {
                self.apply_mac_control(now_ns, pi, &mc);
                RxVerdict::Consumed
            }
            Err(_) => {
                p.mac_control_malformed += 1;
                RxVerdict::Consumed
            }
        }
    }

    /// Acts on a decoded MAC control frame received on `port` (PFC pauses queues, PAUSE the port).
    pub fn on_mac_control(
        &mut self,
        now_ns: u64,
        port: u32,
        mc: &MacControl,
    ) -> Result<(), TmError> {
        let pi = self.index.get(port).ok_or(TmError::UnknownPort(port))?;
        self.apply_mac_control(now_ns, pi, mc);
        Ok(())
    }

    fn apply_mac_control(&mut self, now_ns: u64, pi: usize, mc: &MacControl) {
        self.advance(now_ns);
        let p = &mut self.ports[pi];
        match *mc {
            MacControl::Pfc {
                class_enable,
                quanta,
            } => {
                for (prio, &q) in quanta.iter().enumerate() {
                    if class_enable & (1 << prio) == 0 {
                        continue;
                    }
                    p.pfc_rx[prio] += 1;
                    if p.honoured & (1 << prio) == 0 {
                        continue;
                    }
                    // A new frame restarts the timer; zero quanta resumes at once.
                    p.prio_pause_until[prio] = now_ns + quanta_to_ns(q, p.cfg.rate_bps);
                    let qi = p.prio_queue[prio];
                    if q != 0 {
                        p.queues[qi].wd.xoff_seen = true;
                    }
                    p.refresh_pause(qi, now_ns);
                }
            }
            MacControl::Pause { quanta } => {
                p.pause_rx += 1;
                if p.cfg.pause_enable {
                    p.port_pause_until = now_ns + quanta_to_ns(quanta, p.cfg.rate_bps);
                    for qi in 0..QUEUES_PER_PORT {
                        p.refresh_pause(qi, now_ns);
                    }
                }
            }
            MacControl::Other { .. } => p.mac_control_other_rx += 1,
        }
    }

    /// When the watchdog polls next. A poll may change any port's queues (flushes, storms,
    /// restorations), so a driver that keeps [`Tm::next_event_ns`] answers between calls
    /// drops them when this moves.
    pub fn next_poll_ns(&self) -> u64 {
        self.next_poll_ns
    }

    /// Runs the watchdog polls that fall due up to `now_ns`. Every other entry point does this
    /// first; a driver with nothing else to do calls it at [`Tm::next_event_ns`].
    pub fn advance(&mut self, now_ns: u64) {
        while self.next_poll_ns <= now_ns {
            let t = self.next_poll_ns;
            self.poll_watchdog(t);
            self.next_poll_ns += self.poll_ns;
        }
    }

    /// One pfcwd poll at time `t`, as SONiC's per-queue detection script: a queue that is paused
    /// by PFC, holds packets and sent nothing since the last poll has been stalled one more poll
    /// interval; a stormed queue that saw no XOFF for one more interval is that much closer to
    /// restoration.
    fn poll_watchdog(&mut self, t: u64) {
        let poll = self.poll_ns;
        for p in &mut self.ports {
            let Some(wd) = &p.wd else { continue };
            let (detection, restoration, action) = (wd.detection_ns, wd.restoration_ns, wd.action);
            for qi in 0..QUEUES_PER_PORT {
                if !p.queues[qi].pfc {
                    continue;
                }
                let paused = p.pfc_paused(qi, t);
                let q = &mut p.queues[qi];
                let sent = q.tx_lifetime != q.wd.tx_mark;
                q.wd.tx_mark = q.tx_lifetime;
                let xoff_seen = std::mem::take(&mut q.wd.xoff_seen);
                let kind = if !q.wd.stormed {
                    if paused && !q.fifo.is_empty() && !sent {
                        q.wd.stalled_ns += poll;
                    } else {
                        q.wd.stalled_ns = 0;
                    }
                    if q.wd.stalled_ns < detection {
                        continue;
                    }
                    q.wd.stormed = true;
                    q.wd.storms += 1;
                    q.wd.calm_ns = 0;
                    if action == PfcwdAction::Drop {
                        q.integrate(t);
                        for e in q.fifo.drain(..) {
                            q.drops.add(DropReason::PfcWatchdog);
                            p.drops.add(DropReason::PfcWatchdog);
                            p.used_cells -= e.cells as u64;
                            self.used_cells -= e.cells as u64;
                            self.flushed.push(Flushed {
                                pkt: e.pkt,
                                port: p.cfg.port,
                                queue: qi,
                                len: e.len,
                                enq_ns: e.enq_ns,
                            });
                        }
                        q.bytes = 0;
                        q.cells = 0;
                    }
                    PfcwdEventKind::StormDetected
                } else {
                    if xoff_seen {
                        q.wd.calm_ns = 0;
                    } else {
                        q.wd.calm_ns += poll;
                    }
                    if q.wd.calm_ns < restoration {
                        continue;
                    }
                    q.wd.stormed = false;
                    q.wd.stalled_ns = 0;
                    q.wd.restorations += 1;
                    PfcwdEventKind::StormRestored
                };
                if self.events.len() == MAX_PENDING_EVENTS {
                    self.events.pop_front();
                }
                self.events.push_back(PfcwdEvent {
                    time_ns: t,
                    port: p.cfg.port,
                    queue: qi,
                    kind,
                    action,
                });
            }
        }
    }

    /// Packets the watchdog flushed since the last call, in the order they were queued, so
    /// that the caller can release what it accounts for them (as it does for [`Dropped`]).
    /// They pile up until taken.
    pub fn take_flushed(&mut self) -> Vec<Flushed<P>> {
        std::mem::take(&mut self.flushed)
    }

    /// Whether [`Tm::take_flushed`] has packets to give.
    pub fn has_flushed(&self) -> bool {
        !self.flushed.is_empty()
    }

    /// Watchdog events since the last call, oldest first.
    pub fn take_pfcwd_events(&mut self) -> Vec<PfcwdEvent> {
        self.events.drain(..).collect()
    }

    /// A snapshot of every counter, gauge and watermark at `now_ns`.
    pub fn stats(&self, now_ns: u64) -> TmStats {
        let window = now_ns.saturating_sub(self.since_ns);
        let ports = self
            .ports
            .iter()
            .map(|p| PortStats {
                port: p.cfg.port,
                rate_bps: p.cfg.rate_bps,
                rx_packets: p.rx_packets,
                rx_bytes: p.rx_bytes,
                tx_packets: p.tx_packets,
                tx_bytes: p.tx_bytes,
                drops: p.drops.clone(),
                used_cells: p.used_cells,
                peak_cells: p.peak_cells,
                pfc_rx: p.pfc_rx,
                pause_rx: p.pause_rx,
                mac_control_other_rx: p.mac_control_other_rx,
                mac_control_malformed: p.mac_control_malformed,
                queues: p
                    .queues
                    .iter()
                    .enumerate()
                    .map(|(qi, q)| {
                        let dt = now_ns.saturating_sub(q.area_ns) as u128;
                        let avg = |area: u128, cur: u64| {
                            if window == 0 {
                                cur as f64
                            } else {
                                (area + cur as u128 * dt) as f64 / window as f64
                            }
                        };
                        QueueStats {
                            queue: qi,
                            scheduler: q.sched,
                            tx_packets: q.tx_packets,
                            tx_bytes: q.tx_bytes,
                            drops: q.drops.clone(),
                            depth_packets: q.fifo.len() as u64,
                            depth_bytes: q.bytes,
                            depth_cells: q.cells,
                            peak_bytes: q.peak_bytes,
                            peak_cells: q.peak_cells,
                            avg_bytes: avg(q.area_bytes, q.bytes),
                            avg_cells: avg(q.area_cells, q.cells),
                            paused: q.pause_end > now_ns,
                            paused_ns: q.paused_ns(now_ns),
                            pfcwd: PfcwdQueueStats {
                                enabled: q.pfc && p.wd.is_some(),
                                stormed: q.wd.stormed,
                                storms_detected: q.wd.storms,
                                restorations: q.wd.restorations,
                            },
                        }
                    })
                    .collect(),
            })
            .collect();
        TmStats {
            time_ns: now_ns,
            since_ns: self.since_ns,
            buffer: BufferStats {
                cell_bytes: self.cell_bytes,
                total_cells: self.total_cells,
                used_cells: self.used_cells,
                peak_cells: self.peak_cells,
            },
            unknown_port_drops: self.unknown_port_drops,
            unknown_port_rx: self.unknown_port_rx,
            ports,
        }
    }

    /// Resets every counter and watermark (SONiC's clear commands together); watermarks
    /// restart from the current occupancy.
    pub fn clear(&mut self, now_ns: u64) {
        self.clear_some(now_ns, ClearScope::ALL);
    }

    /// Resets what `scope` names, leaving the rest counting.
    pub fn clear_some(&mut self, now_ns: u64, scope: ClearScope) {
        if scope.ports {
            self.unknown_port_drops = 0;
            self.unknown_port_rx = 0;
        }
        if scope.watermarks {
            self.peak_cells = self.used_cells;
        }
        if scope.queues {
            // The mean occupancy's window starts again with the queues' areas.
            self.since_ns = now_ns;
        }
        for p in &mut self.ports {
            if scope.ports {
                p.rx_packets = 0;
                p.rx_bytes = 0;
                p.tx_packets = 0;
                p.tx_bytes = 0;
                p.drops = DropCounts::default();
                p.mac_control_other_rx = 0;
                p.mac_control_malformed = 0;
            }
            if scope.pfc {
                p.pfc_rx = [0; 8];
                p.pause_rx = 0;
            }
            if scope.watermarks {
                p.peak_cells = p.used_cells;
            }
            for q in &mut p.queues {
                if scope.queues {
                    q.tx_packets = 0;
                    q.tx_bytes = 0;
                    q.drops = DropCounts::default();
                    q.area_bytes = 0;
                    q.area_cells = 0;
                    q.area_ns = now_ns;
                    q.paused_acc = 0;
                    q.pause_start = now_ns.min(q.pause_end).max(q.pause_start);
                }
                if scope.watermarks {
                    q.peak_bytes = q.bytes;
                    q.peak_cells = q.cells;
                }
                if scope.pfcwd {
                    q.wd.storms = 0;
                    q.wd.restorations = 0;
                }
            }
        }
    }
}

/// What [`Tm::clear_some`] resets, grouped as SONiC's clear commands group them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClearScope {
    /// `sonic-clear counters`: port packets, bytes, drops and other MAC control frames.
    pub ports: bool,
    /// `sonic-clear pfccounters`: PFC and PAUSE frames received.
    pub pfc: bool,
    /// `sonic-clear queuecounters`: queue packets, bytes, drops, mean occupancy, time paused.
    pub queues: bool,
    /// `sonic-clear watermarks`: buffer, port and queue peaks restart from the occupancy.
    pub watermarks: bool,
    /// `sonic-clear pfcwdcounters`: watchdog storms detected and restored.
    pub pfcwd: bool,
}

/// A clear scope list names something that is not one of [`ClearScope::NAMES`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown clear scope {name:?}: known are {}", ClearScope::NAMES.join(", "))]
pub struct UnknownClearScope {
    pub name: String,
}

impl ClearScope {
    pub const ALL: ClearScope = ClearScope {
        ports: true,
        pfc: true,
        queues: true,
        watermarks: true,
        pfcwd: true,
    };
    pub const NAMES: [&'static str; 5] = ["ports", "pfc", "queues", "watermarks", "pfcwd"];

    /// A comma-separated list of [`ClearScope::NAMES`], e.g. `pfc,watermarks`.
    pub fn parse(list: &str) -> Result<ClearScope, UnknownClearScope> {
        let mut scope = ClearScope::default();
        for name in list.split(',') {
            let flag = match name {
                "ports" => &mut scope.ports,
                "pfc" => &mut scope.pfc,
                "queues" => &mut scope.queues,
                "watermarks" => &mut scope.watermarks,
                "pfcwd" => &mut scope.pfcwd,
                _ => {
                    return Err(UnknownClearScope {
                        name: name.to_string(),
                    })
                }
            };
            *flag = true;
        }
        Ok(scope)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::QueueConfig;

    /// Numbers on both sides of the indexed range, added out of order and one moved, against a
    /// map of what was inserted.
    #[test]
    fn port_index_finds_what_was_inserted_and_nothing_else() {
        let mut index = PortIndex::default();
        let mut want = std::collections::BTreeMap::new();
        for (at, port) in [7, 0, 511, DENSE_PORTS, 70_000, DENSE_PORTS - 1, 3, u32::MAX]
            .into_iter()
            .enumerate()
        {
            index.insert(port, at);
            want.insert(port, at);
        }
        index.insert(511, 42);
        want.insert(511, 42);
        index.insert(70_000, 43);
        want.insert(70_000, 43);
        for port in (0..2 * DENSE_PORTS).chain([70_000, 69_999, u32::MAX, u32::MAX - 1]) {
            assert_eq!(index.get(port), want.get(&port).copied(), "port {port}");
        }
    }

    /// The single-queue closed form against the round robin it replaces, visit by visit:
    /// random schedulers, weights, queues (empty, paused or sending, heads of any length),
    /// deficits and ring positions, then a series of picks, each pick's queue and the whole
    /// scheduler state (ring, freshness, every deficit) compared.
    #[test]
    fn one_ready_queue_picks_as_the_round_robin_does() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let state = |p: &Port<u32>| {
            let deficits: Vec<u64> = p.queues.iter().map(|q| q.deficit).collect();
            (p.rr, p.rr_fresh, deficits)
        };
        let mut closed_form = 0;
        for case in 0..20_000 {
            let mut cfg = PortConfig::new(1, 100_000_000_000);
            for q in 0..QUEUES_PER_PORT as u8 {
                let scheduler = match next(4) {
                    0 => SchedulerType::Strict,
                    1 => SchedulerType::Wrr,
                    _ => SchedulerType::Dwrr,
                };
                let weight = Some(1 + next(40) as u8);
                cfg.queues
                    .push(QueueConfig::scheduled(q, scheduler, weight));
            }
            let (mut fast, mut rounds) = (Port::new(cfg.clone(), 256, 0), Port::new(cfg, 256, 0));
            let now = 1_000;
            let rr = next(QUEUES_PER_PORT as u64) as usize;
            let fresh = next(2) == 0;
            for qi in 0..QUEUES_PER_PORT {
                let (packets, deficit) = (next(3), next(5000));
                let paused = next(4) == 0;
                let lens: Vec<u32> = (0..packets).map(|_| 60 + next(9000) as u32).collect();
                for p in [&mut fast, &mut rounds] {
                    let q = &mut p.queues[qi];
                    q.deficit = deficit;
                    if paused {
                        q.pause_end = now + 1;
                    }
                    for &len in &lens {
                        q.fifo.push_back(Entry {
                            pkt: 0,
                            len,
                            cells: 1,
                            enq_ns: 0,
                        });
                    }
                    p.rr = rr;
                    p.rr_fresh = fresh;
                }
            }
            for _ in 0..4 {
                let ready = (0..QUEUES_PER_PORT)
                    .filter(|&qi| {
                        rounds.queues[qi].sched != SchedulerType::Strict && rounds.eligible(qi, now)
                    })
                    .count();
                closed_form += usize::from(ready == 1 && rounds.pick_strict(now).is_none());
                let want = rounds
                    .pick_strict(now)
                    .or_else(|| (ready > 0).then(|| rounds.pick_round_robin(now)));
                let got = fast.pick(now);
                assert_eq!(got, want, "case {case}");
                assert_eq!(state(&fast), state(&rounds), "case {case}");
                let Some(qi) = got else { break };
                for p in [&mut fast, &mut rounds] {
                    p.queues[qi].fifo.pop_front();
                }
            }
        }
        assert!(
            closed_form > 5_000,
            "the closed form ran {closed_form} times"
        );
    }
}
