//! The dataplane proper: the engine, the traffic manager and the transmit side of the ports.
//! Pure apart from `Port::send`: time is passed in (ns), so tests drive it with a simulated clock
//! and the runtime thread with its monotonic one.

use crate::pktgen::{Pktgen, PktgenConfig, PktgenError};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;
use switch_ports::Port;
use switch_tm::{ClearScope, PortConfig, PortIndex, RxVerdict, Tm, TmConfig, TmError};
use switch_v1model::{EgressJob, Output, QueueMeta, Stats, Switch, SwitchConfig};

/// Rate given to ports the `--port-config` file does not list (and to the CPU port): far above
/// anything a software port reaches, so they are effectively unshaped but still share the buffer.
pub const UNSHAPED_BPS: u64 = 1_000_000_000_000;

/// bmv2's queueing metadata fields `enq_qdepth`/`deq_qdepth` are 19 bits wide.
const QDEPTH_MASK: u32 = (1 << 19) - 1;

/// Where frames the pipeline sends to the CPU port go (P4Runtime PacketIn).
/// A runtime-CLI entry key: as typed, and as the engine stored it.
pub type CliKey = (
    Vec<switch_v1model::FieldMatch>,
    Vec<switch_v1model::FieldMatch>,
);

pub type CpuSink = Box<dyn Fn(Vec<u8>) + Send + Sync>;

/// Frames handed to ports, in order, for a transmit thread to send (see
/// [`Core::defer_transmit`]).
pub type TxBatch = Vec<(Arc<dyn Port>, Vec<u8>)>;

/// What the switch counts beside the engine and the traffic manager.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CoreCounters {
    /// Frames handed to the pipeline, per port.
    pub rx_frames: BTreeMap<u32, u64>,
    /// Frames and bytes handed to each port (with a transmit thread, before it sends them).
    pub tx_frames: BTreeMap<u32, u64>,
    pub tx_bytes: BTreeMap<u32, u64>,
    /// `Port::send` failures among them.
    pub tx_errors: u64,
    /// PFC/PAUSE and other MAC control frames consumed by the ports.
    pub mac_control_consumed: u64,
    /// Packets sent to a port that has no interface (bmv2 drops them silently).
    pub unknown_egress_port: u64,
    /// Frames received while no pipeline is loaded.
    pub no_pipeline: u64,
    pub cpu_packet_in: u64,
    /// Traffic-manager drops (full buffer, queue limits, watchdog...): details in the TM stats.
    pub tm_drops: u64,
    /// Packets the packet generator injected, and its firings skipped because the dataplane
    /// woke up more than a period late ([`crate::pktgen::Fired`]).
    pub pktgen_packets: u64,
    pub pktgen_skipped: u64,
    /// Generated packets the pipeline dropped in ingress, as a program that only acts on them
    /// (p4src's timed refresh) does with all of them: they are in the engine's
    /// `dropped_ingress` too, but are not traffic lost.
    pub pktgen_dropped: u64,
}

/// The buffer occupancy a pipeline keeps in its own registers, under the names p4src's
/// `lossless.p4` gives them: `pg_bytes` and `queue_bytes` indexed port * 8 + class, and
/// `shared_pool_used`. Read for the traffic manager's ports, so that it sits beside switch-tm's
/// own queue depths (with the accounting pass, they agree).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PipelineOccupancy {
    /// Ingress port -> bytes per PG.
    pub pg_bytes: BTreeMap<u32, [u64; CLASSES]>,
    /// Egress port -> bytes per queue.
    pub queue_bytes: BTreeMap<u32, [u64; CLASSES]>,
    pub shared_pool_used: u64,
}

/// Classes per port in the occupancy registers' `port * 8 + class` index.
const CLASSES: usize = 8;

/// A packet in the traffic manager, with the depth it found there.
pub struct Queued {
    job: EgressJob,
    enq_qdepth: u32,
}

/// A received frame, lent or given.
enum Rx<'a> {
    Slice(&'a [u8]),
    Owned(Vec<u8>),
}

impl Rx<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Rx::Slice(b) => b,
            Rx::Owned(v) => v,
        }
    }
}

/// A port of the switch with what it counts per frame: [`Core::transmit`] and
/// [`Core::receive`] find it by indexing rather than in a map per frame and counter.
struct Line {
    number: u32,
    port: Arc<dyn Port>,
    rx_frames: u64,
    tx_frames: u64,
    tx_bytes: u64,
}

/// Why a port of the traffic manager could not be added or changed while running.
#[derive(Debug, thiserror::Error)]
pub enum ConfigurePortError {
    #[error("no traffic manager: start the switch with --port-config FILE")]
    NoTm,
    #[error("{0}")]
    Tm(#[from] TmError),
}

/// Engine, traffic manager (optional) and ports, driven by one thread.
pub struct Core {
    pub switch: Option<Switch>,
    tm: Option<Tm<Queued>>,
    /// The traffic manager's ports, in its order (refreshed when one is added).
    tm_ports: Vec<u32>,
    /// By position in `tm_ports`: when [`Core::run_due`] must look at the port again, i.e. what
    /// `Tm::next_event_ns` said at its last look (`None`: nothing to do), or 0 once something
    /// changed the port since (an enqueue, a MAC control frame, a watchdog poll, any access
    /// through [`Core::tm_mut`]). Until then the answer stands, so `run_due` visits only the
    /// ports that are due instead of every port on every call.
    port_due: Vec<Option<u64>>,
    /// `Tm::next_poll_ns` when `port_due` was last valid.
    poll_seen_ns: u64,
    /// The ports, in number order, and their positions by number.
    lines: Vec<Line>,
    line_index: PortIndex,
    /// The engine settings of this switch (`--cpu-port`, `--priority-queues`, `--drop-port`),
    /// which every pipeline it runs gets, also one loaded later over P4Runtime.
    engine: SwitchConfig,
    cpu_sink: Option<CpuSink>,
    jobs: Vec<EgressJob>,
    more: Vec<EgressJob>,
    /// Clones of accounting passes waiting to be enqueued (reused).
    released: Vec<EgressJob>,
    outs: Vec<Output>,
    /// What is counted beside the lines' own counts; its `rx_frames` holds frames received on
    /// numbers that are not ports.
    counters: CoreCounters,
    /// Engine counters at the last clear (the engine's own never reset).
    engine_base: Stats,
    /// Keys of entries added by the runtime CLI as typed, with what the engine stored, by
    /// (table, handle): bmv2 dumps a key as it was given (`0a000001/12`), the engine keeps it
    /// masked (`0a000000/12`). A dump shows the typed key only while the stored one still
    /// matches, so entries replaced over P4Runtime show their own.
    pub cli_keys: BTreeMap<(String, u64), CliKey>,
    /// Per-packet log lines (`-L debug`/`--dump-packet-data`) go here when set.
    pub log: Option<crate::log::Logger>,
    /// Frames waiting for the transmit thread, when there is one.
    tx_queue: Option<TxBatch>,
    pktgen: Option<Pktgen>,
}

impl Core {
    /// `tm`: the `--port-config` configuration, or `None` to run without a traffic manager
    /// (bmv2's behaviour: no line rate, egress right after ingress).
    pub fn new(
        switch: Option<Switch>,
        tm: Option<TmConfig>,
        ports: BTreeMap<u32, Arc<dyn Port>>,
        engine: SwitchConfig,
        now_ns: u64,
    ) -> Result<Core, TmError> {
        let tm = match tm {
            None => None,
            Some(cfg) => {
                let mut tm = Tm::new(cfg, now_ns)?;
                let missing: Vec<u32> = ports
                    .keys()
                    .copied()
                    .chain(engine.cpu_port)
                    .filter(|p| tm.port_config(*p).is_none())
                    .collect();
                for p in missing {
                    tm.configure_port(now_ns, PortConfig::new(p, UNSHAPED_BPS))?;
                }
                Some(tm)
            }
        };
        let tm_ports: Vec<u32> = tm
            .as_ref()
            .map_or(Vec::new(), |t| t.port_numbers().collect());
        let mut line_index = PortIndex::default();
        let lines = ports
            .into_iter()
            .enumerate()
            .map(|(i, (number, port))| {
                line_index.insert(number, i);
                Line {
                    number,
                    port,
                    rx_frames: 0,
                    tx_frames: 0,
                    tx_bytes: 0,
                }
            })
            .collect();
        Ok(Core {
            switch,
            port_due: vec![Some(0); tm_ports.len()],
            poll_seen_ns: tm.as_ref().map_or(0, |t| t.next_poll_ns()),
            tm,
            tm_ports,
            lines,
            line_index,
            engine,
            cpu_sink: None,
            jobs: Vec::new(),
            more: Vec::new(),
            released: Vec::new(),
            outs: Vec::new(),
            counters: CoreCounters::default(),
            engine_base: Stats::default(),
            cli_keys: BTreeMap::new(),
            log: None,
            tx_queue: None,
            pktgen: None,
        })
    }

    /// From now on frames for ports are queued for [`Core::take_tx`] instead of sent here: the
    /// runtime's transmit thread sends them, so that the kernel's send path (most of a
    /// forwarded packet's cost through veths) runs beside the pipeline, as bmv2's transmit
    /// thread does.
    pub fn defer_transmit(&mut self) {
        self.tx_queue.get_or_insert_with(Vec::new);
    }

    /// The frames queued since the last call, replaced by an empty batch from `spare` (so that
    /// batches are reused); `None` when there are none.
    pub fn take_tx(&mut self, spare: &mut Vec<TxBatch>) -> Option<TxBatch> {
        let queue = self.tx_queue.as_mut().filter(|q| !q.is_empty())?;
        Some(std::mem::replace(queue, spare.pop().unwrap_or_default()))
    }

    /// A batch the transmit thread has sent, `errors` of its frames failed: their buffers go
    /// back to the engine and the emptied batch is returned for reuse.
    pub fn tx_done(&mut self, mut batch: TxBatch, errors: u64) -> TxBatch {
        self.counters.tx_errors += errors;
        for (_, data) in batch.drain(..) {
            if let Some(sw) = &mut self.switch {
                sw.recycle_buffer(data);
            }
        }
        batch
    }

    pub fn set_cpu_sink(&mut self, sink: CpuSink) {
        self.cpu_sink = Some(sink);
    }

    pub fn cpu_port(&self) -> Option<u32> {
        self.engine.cpu_port
    }

    pub fn engine_config(&self) -> &SwitchConfig {
        &self.engine
    }

    pub fn tm(&self) -> Option<&Tm<Queued>> {
        self.tm.as_ref()
    }

    pub fn tm_mut(&mut self) -> Option<&mut Tm<Queued>> {
        self.touch_all();
        self.tm.as_mut()
    }

    /// Makes [`Core::run_due`] look at `port` on its next call.
    fn touch(&mut self, port: u32) {
        // `tm_ports` is in the traffic manager's order.
        if let Some(i) = self.tm.as_ref().and_then(|tm| tm.port_position(port)) {
            self.port_due[i] = Some(0);
        }
    }

    fn touch_all(&mut self) {
        self.port_due.fill(Some(0));
    }

    /// A snapshot of the counters: a port appears in a per-port map once it has counted a frame.
    pub fn counters(&self) -> CoreCounters {
        let mut c = self.counters.clone();
        for l in &self.lines {
            if l.rx_frames > 0 {
                c.rx_frames.insert(l.number, l.rx_frames);
            }
            if l.tx_frames > 0 {
                c.tx_frames.insert(l.number, l.tx_frames);
                c.tx_bytes.insert(l.number, l.tx_bytes);
            }
        }
        c
    }

    /// Engine counters since the last [`Core::clear`].
    pub fn engine_stats(&self) -> Stats {
        let Some(sw) = &self.switch else {
            return Stats::default();
        };
        let s = sw.stats();
        let b = &self.engine_base;
        Stats {
            received: s.received.saturating_sub(b.received),
            transmitted: s.transmitted.saturating_sub(b.transmitted),
            parser_errors: s.parser_errors.saturating_sub(b.parser_errors),
            checksum_errors: s.checksum_errors.saturating_sub(b.checksum_errors),
            dropped_ingress: s.dropped_ingress.saturating_sub(b.dropped_ingress),
            dropped_egress: s.dropped_egress.saturating_sub(b.dropped_egress),
            cloned: s.cloned.saturating_sub(b.cloned),
            resubmitted: s.resubmitted.saturating_sub(b.resubmitted),
            recirculated: s.recirculated.saturating_sub(b.recirculated),
            replicated: s.replicated.saturating_sub(b.replicated),
            reinjection_limit_drops: s
                .reinjection_limit_drops
                .saturating_sub(b.reinjection_limit_drops),
            priority_drops: s.priority_drops.saturating_sub(b.priority_drops),
            index_errors: s.index_errors.saturating_sub(b.index_errors),
            assert_failures: s.assert_failures.saturating_sub(b.assert_failures),
        }
    }

    /// The occupancy registers of the running pipeline for every port of the traffic manager;
    /// `None` without a pipeline, a traffic manager, or when the program has no such registers.
    pub fn pipeline_occupancy(&mut self) -> Option<PipelineOccupancy> {
        self.tm.as_ref()?;
        let sw = self.switch.as_mut()?;
        let mut occ = PipelineOccupancy {
            shared_pool_used: sw.register_read("shared_pool_used", 0).ok()? as u64,
            ..PipelineOccupancy::default()
        };
        for &port in &self.tm_ports {
            let (mut pgs, mut queues) = ([0; CLASSES], [0; CLASSES]);
            for class in 0..CLASSES {
                let index = (port as usize * CLASSES + class) as u64;
                pgs[class] = sw.register_read("pg_bytes", index).ok()? as u64;
                queues[class] = sw.register_read("queue_bytes", index).ok()? as u64;
            }
            occ.pg_bytes.insert(port, pgs);
            occ.queue_bytes.insert(port, queues);
        }
        Some(occ)
    }

    /// Seeds the pipeline's `random` extern (lossless-sim's `--seed`); the real-time switch
    /// never calls it and keeps the engine's fixed start.
    pub fn seed_random(&mut self, seed: u64) {
        if let Some(s) = self.switch.as_mut() {
            s.seed_random(seed);
        }
    }

    /// SONiC clear semantics: counters to zero, watermarks restart from the current occupancy.
    pub fn clear(&mut self, now_ns: u64) {
        self.clear_some(now_ns, ClearScope::ALL);
    }

    /// What `scope` names only; the switch's own frame and engine counts go with the ports.
    pub fn clear_some(&mut self, now_ns: u64, scope: ClearScope) {
        if scope.ports {
            self.counters = CoreCounters::default();
            for l in &mut self.lines {
                (l.rx_frames, l.tx_frames, l.tx_bytes) = (0, 0, 0);
            }
            if let Some(sw) = &self.switch {
                self.engine_base = sw.stats();
            }
        }
        if let Some(tm) = &mut self.tm {
            tm.clear_some(now_ns, scope);
        }
        self.touch_all();
    }

    /// A frame received on `port` at `now_ns`.
    pub fn receive(&mut self, now_ns: u64, port: u32, frame: &[u8]) {
        self.receive_frame(now_ns, port, Rx::Slice(frame));
    }

    /// [`Core::receive`] taking the frame's buffer: the engine runs the packet in it instead
    /// of a copy, and keeps it for reuse when the frame goes no further.
    pub fn receive_buf(&mut self, now_ns: u64, port: u32, frame: Vec<u8>) {
        self.receive_frame(now_ns, port, Rx::Owned(frame));
    }

    fn receive_frame(&mut self, now_ns: u64, port: u32, rx: Rx) {
        let frame = rx.bytes();
        if let Some(tm) = &mut self.tm {
            if tm.on_rx_frame(now_ns, port, frame) == RxVerdict::Consumed {
                self.counters.mac_control_consumed += 1;
                self.touch(port);
                self.recycle_rx(rx);
                return;
            }
        } else if matches!(lossless_wire::pfc::MacControl::decode(frame), Ok(Some(_))) {
            // Without a traffic manager there is no queue to pause, but MAC control frames are
            // still link-local: a port never forwards them.
            self.counters.mac_control_consumed += 1;
            self.recycle_rx(rx);
            return;
        }
        if self.switch.is_none() {
            self.counters.no_pipeline += 1;
            return;
        }
        match self.line_index.get(port) {
            Some(i) => self.lines[i].rx_frames += 1,
            None => *self.counters.rx_frames.entry(port).or_default() += 1,
        }
        self.pipeline_in(now_ns, port, rx);
    }

    /// A frame into the pipeline from `port`, then into the traffic manager (or straight
    /// through egress without one).
    fn pipeline_in(&mut self, now_ns: u64, port: u32, rx: Rx) {
        let Some(sw) = self.switch.as_mut() else {
            return;
        };
        let frame = rx.bytes();
        if let Some(log) = &self.log {
            log.packet("Processing packet received on port", port, frame);
        }
        let now_us = now_ns / 1000;
        if self.tm.is_none() {
            let mut outs = std::mem::take(&mut self.outs);
            sw.process(port, frame, now_us, &mut outs);
            for o in outs.drain(..) {
                self.transmit(o);
            }
            self.outs = outs;
            self.recycle_rx(rx);
            return;
        }
        let mut jobs = std::mem::take(&mut self.jobs);
        match rx {
            Rx::Slice(frame) => sw.ingress(port, frame, now_us, &mut jobs),
            Rx::Owned(frame) => sw.ingress_buf(port, frame, now_us, &mut jobs),
        }
        for job in jobs.drain(..) {
            self.enqueue(now_ns, job);
        }
        self.jobs = jobs;
        self.release_flushed(now_ns);
    }

    fn recycle_rx(&mut self, rx: Rx) {
        if let (Rx::Owned(buf), Some(sw)) = (rx, self.switch.as_mut()) {
            sw.recycle_buffer(buf);
        }
    }

    /// Hands a job to the traffic manager. One it refuses goes through the accounting pass
    /// ([`Switch::egress_dropped`]), so that the pipeline releases what it counted for it; the
    /// clones that pass makes (an XON) are enqueued in turn.
    fn enqueue(&mut self, now_ns: u64, job: EgressJob) {
        let mut clones = std::mem::take(&mut self.released);
        let mut next = Some(job);
        // An egress program could clone on every accounting pass into a TM that refuses every
        // clone; the passes of one enqueue are bounded as reinjections are.
        let mut passes = 0;
        while let Some(job) = next.take().or_else(|| clones.pop()) {
            let Some(tm) = self.tm.as_mut() else {
                break;
            };
            // The engine already dropped priorities without a queue (`Stats::priority_drops`).
            let queue = if self.engine.priority_queues > 1 {
                job.priority as usize
            } else {
                0
            };
            let (port, len) = (job.port, job.len());
            if let Some(i) = tm.port_position(port) {
                self.port_due[i] = Some(0);
            }
            // bmv2's enq_qdepth: the depth the packet finds, known before it is admitted.
            let enq_qdepth = tm.queue_depth(port, queue).map_or(0, |d| d.packets);
            let Err(refused) = tm.enqueue(now_ns, port, queue, len, Queued { job, enq_qdepth })
            else {
                continue;
            };
            self.counters.tm_drops += 1;
            passes += 1;
            if passes > self.engine.max_reinjections {
                continue;
            }
            let meta = QueueMeta {
                enq_timestamp_us: now_ns / 1000,
                enq_qdepth: enq_qdepth & QDEPTH_MASK,
                deq_timedelta_us: 0,
                deq_qdepth: enq_qdepth & QDEPTH_MASK,
                qid: queue as u32,
            };
            if let Some(sw) = self.switch.as_mut() {
                sw.egress_dropped(refused.pkt.job, meta, now_ns / 1000, &mut clones);
            }
        }
        clones.clear();
        self.released = clones;
    }

    /// The accounting pass for every packet the watchdog flushed since the last call.
    fn release_flushed(&mut self, now_ns: u64) {
        let Some(tm) = self.tm.as_mut() else {
            return;
        };
        let flushed = tm.take_flushed();
        if flushed.is_empty() {
            return;
        }
        let mut clones = Vec::new();
        for f in flushed {
            let meta = QueueMeta {
                enq_timestamp_us: f.enq_ns / 1000,
                enq_qdepth: f.pkt.enq_qdepth & QDEPTH_MASK,
                deq_timedelta_us: now_ns.saturating_sub(f.enq_ns) / 1000,
                deq_qdepth: 0,
                qid: f.queue as u32,
            };
            if let Some(sw) = self.switch.as_mut() {
                sw.egress_dropped(f.pkt.job, meta, now_ns / 1000, &mut clones);
            }
        }
        for job in clones {
            self.enqueue(now_ns, job);
        }
    }

    /// Starts the packet generator with `config` from `now_ns` (its applications first fire one
    /// period later), or stops it with `None`. Its port must not be one of the switch's.
    pub fn set_pktgen(
        &mut self,
        now_ns: u64,
        config: Option<PktgenConfig>,
    ) -> Result<(), PktgenError> {
        let Some(config) = config else {
            self.pktgen = None;
            return Ok(());
        };
        let taken: Vec<u32> = self
            .lines
            .iter()
            .map(|l| l.number)
            .chain(self.engine.cpu_port)
            .collect();
        config.validate(&taken)?;
        self.pktgen = Some(Pktgen::new(config, now_ns));
        Ok(())
    }

    /// Whether the traffic manager holds a packet: a switch that holds none and has only its
    /// packet generator's firings ahead is quiet (lossless-sim stops on that).
    pub fn holds_packets(&self) -> bool {
        let Some(tm) = &self.tm else {
            return false;
        };
        self.tm_ports.iter().any(|&p| {
            (0..switch_tm::QUEUES_PER_PORT)
                .any(|q| tm.queue_depth(p, q).is_some_and(|d| d.packets > 0))
        })
    }

    pub fn pktgen_config(&self) -> Option<&PktgenConfig> {
        self.pktgen.as_ref().map(Pktgen::config)
    }

    /// Injects the generator's packets due at `now_ns` into the pipeline; when it fires next.
    fn run_pktgen(&mut self, now_ns: u64) -> Option<u64> {
        // Most calls come between firings: nothing to make, nothing to count.
        let due = self.pktgen.as_ref()?.next_ns()?;
        if due > now_ns {
            return Some(due);
        }
        let mut pktgen = self.pktgen.take()?;
        let dropped = |core: &Core| {
            core.switch
                .as_ref()
                .map_or(0, |s| s.stats().dropped_ingress)
        };
        let before = dropped(self);
        let fired = pktgen.fire(now_ns, |port, frame| {
            self.pipeline_in(now_ns, port, Rx::Slice(frame))
        });
        self.counters.pktgen_dropped += dropped(self) - before;
        self.counters.pktgen_packets += fired.packets;
        self.counters.pktgen_skipped += fired.skipped;
        let next = pktgen.next_ns();
        self.pktgen = Some(pktgen);
        next
    }

    /// Runs the packet generator's firings due at `now_ns`, then transmits every packet due,
    /// and returns when the switch next needs a call: the generator's next firing, or the
    /// traffic manager's next event (a line frees up, a pause ends, a watchdog poll).
    pub fn run_due(&mut self, now_ns: u64) -> Option<u64> {
        let generated = self.run_pktgen(now_ns);
        let next = self.run_tm(now_ns);
        match (generated, next) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn run_tm(&mut self, now_ns: u64) -> Option<u64> {
        let tm = self.tm.as_mut()?;
        tm.advance(now_ns);
        if tm.next_poll_ns() != self.poll_seen_ns {
            self.poll_seen_ns = tm.next_poll_ns();
            self.touch_all();
        }
        self.release_flushed(now_ns);
        let mut next: Option<u64> = None;
        let mut more = std::mem::take(&mut self.more);
        for i in 0..self.tm_ports.len() {
            match self.port_due[i] {
                None => continue,
                Some(t) if t > now_ns => {
                    next = Some(next.map_or(t, |n| n.min(t)));
                    continue;
                }
                Some(_) => {}
            }
            let port = self.tm_ports[i];
            loop {
                let tm = self.tm.as_mut()?;
                let Some(d) = tm.dequeue(now_ns, port) else {
                    let due = tm.next_event_ns(now_ns, port);
                    if let Some(t) = due {
                        next = Some(next.map_or(t, |n| n.min(t)));
                    }
                    self.port_due[i] = due;
                    break;
                };
                let meta = QueueMeta {
                    enq_timestamp_us: d.enq_ns / 1000,
                    enq_qdepth: d.pkt.enq_qdepth & QDEPTH_MASK,
                    deq_timedelta_us: d.deq_timedelta_ns / 1000,
                    deq_qdepth: d.deq_qdepth & QDEPTH_MASK,
                    qid: d.queue as u32,
                };
                let Some(sw) = self.switch.as_mut() else {
                    break;
                };
                if let Some(o) = sw.egress(d.pkt.job, meta, now_ns / 1000, &mut more) {
                    self.transmit(o);
                }
                // E2E clones and recirculated packets go back through the traffic manager.
                while let Some(job) = more.pop() {
                    self.enqueue(now_ns, job);
                }
            }
        }
        self.more = more;
        // A watchdog poll during the dequeues may have flushed packets, and their XON clones
        // may be due now.
        if self.tm.as_ref().is_some_and(|tm| tm.has_flushed()) {
            self.release_flushed(now_ns);
            next = Some(now_ns);
        }
        next
    }

    /// Adds or changes a port of the traffic manager while running.
    pub fn configure_port(
        &mut self,
        now_ns: u64,
        cfg: PortConfig,
    ) -> Result<(), ConfigurePortError> {
        let tm = self.tm.as_mut().ok_or(ConfigurePortError::NoTm)?;
        tm.configure_port(now_ns, cfg)?;
        self.tm_ports = tm.port_numbers().collect();
        self.port_due = vec![Some(0); self.tm_ports.len()];
        self.release_flushed(now_ns);
        Ok(())
    }

    fn transmit(&mut self, o: Output) {
        if Some(o.port) == self.engine.cpu_port {
            if let Some(sink) = &self.cpu_sink {
                self.counters.cpu_packet_in += 1;
                sink(o.data);
                return;
            }
        }
        match self.line_index.get(o.port) {
            Some(i) => {
                if let Some(log) = &self.log {
                    log.packet("Transmitting packet out of port", o.port, &o.data);
                }
                let line = &mut self.lines[i];
                line.tx_frames += 1;
                line.tx_bytes += o.data.len() as u64;
                if let Some(queue) = &mut self.tx_queue {
                    queue.push((line.port.clone(), o.data));
                    return;
                }
                if line.port.send(&o.data).is_err() {
                    self.counters.tx_errors += 1;
                }
            }
            None => self.counters.unknown_egress_port += 1,
        }
        if let Some(sw) = &mut self.switch {
            sw.recycle_buffer(o.data);
        }
    }
}
