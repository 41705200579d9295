//! The generator: starts flows at their templates' rates, fires each flow's packets through a
//! scheduler, and hands the rewritten frames to a sink.
//!
//! Time is "generator time" in ns. A driver moves it forward: with the wall clock when sending
//! on a wire, or as fast as the CPU allows when measuring the generator itself. Packets carry
//! the time they were due, so the schedule does not drift whatever the driver does.

use std::net::Ipv4Addr;

use crate::error::Error;
use crate::profile::{Distribution, Generator as GenSpec};
use crate::sched::{Flow, FlowTable, Scheduler};
use crate::template::{Rewrite, Template};

/// Where generated frames go.
pub trait Sink {
    /// Sends `frame` out of port pair `pair` at generator time `t_ns`. `Ok(false)`: the
    /// output queue was full and the frame was dropped (counted as a queue-full event).
    fn send(&mut self, pair: usize, frame: &[u8], t_ns: u64) -> Result<bool, Error>;
    /// Hands on whatever `send` batched up (the driver calls it after every step).
    fn flush(&mut self) -> Result<(), Error> {
        Ok(())
    }
    /// Frames accepted by `send` that were lost further on (an interface's queue was full).
    fn dropped(&self) -> u64 {
        0
    }
}

/// Discards frames: the in-process sink that measures the generator alone.
#[derive(Default)]
pub struct NullSink;

impl Sink for NullSink {
    fn send(&mut self, _pair: usize, frame: &[u8], _t: u64) -> Result<bool, Error> {
        std::hint::black_box(frame);
        Ok(true)
    }
}

/// Keeps every frame with its time and pair (tests, small captures).
#[derive(Default)]
pub struct VecSink {
    pub frames: Vec<(u64, usize, Vec<u8>)>,
}

impl Sink for VecSink {
    fn send(&mut self, pair: usize, frame: &[u8], t: u64) -> Result<bool, Error> {
        self.frames.push((t, pair, frame.to_vec()));
        Ok(true)
    }
}

/// Running totals since the start of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    pub packets: u64,
    pub bytes: u64,
    pub flows_started: u64,
    pub flows_ended: u64,
    pub queue_full: u64,
}

/// Hands out client and server addresses as the `generator` section says.
pub struct Addresses {
    clients_start: u32,
    clients: u32,
    servers_start: u32,
    servers: u32,
    dist: Distribution,
    next_client: u32,
    next_server: u32,
    rng: fastrand::Rng,
}

impl Addresses {
    /// `gbps` is the offered load, which sets how many clients are used (TRex's
    /// `clients_per_gb`, at least `min_clients`, at most the range).
    pub fn new(g: &GenSpec, gbps: f64, seed: u64) -> Self {
        // A range of all 2^32 addresses has 2^32 members; u32 arithmetic saturates there.
        let range = (u32::from(g.clients_end) - u32::from(g.clients_start)).saturating_add(1);
        let clients = if g.clients_per_gb.is_none() && g.min_clients.is_none() {
            range
        } else {
            let per_gb = g.clients_per_gb.unwrap_or(0) as f64 * gbps;
            let wanted = per_gb.ceil().min(u32::MAX as f64) as u32;
            wanted.max(g.min_clients.unwrap_or(1)).clamp(1, range)
        };
        Addresses {
            clients_start: g.clients_start.into(),
            clients,
            servers_start: g.servers_start.into(),
            servers: (u32::from(g.servers_end) - u32::from(g.servers_start)).saturating_add(1),
            dist: g.distribution,
            next_client: 0,
            next_server: 0,
            rng: fastrand::Rng::with_seed(seed),
        }
    }

    /// How many client addresses are in use.
    pub fn clients(&self) -> u32 {
        self.clients
    }

    fn pick(&mut self, start: u32, n: u32, next: fn(&mut Self) -> &mut u32) -> u32 {
        match self.dist {
            Distribution::Seq => {
                let cursor = next(self);
                let a = start.wrapping_add(*cursor);
                *cursor = if *cursor + 1 >= n { 0 } else { *cursor + 1 };
                a
            }
            Distribution::Random => start.wrapping_add(self.rng.u32(0..n)),
        }
    }

    pub fn client(&mut self) -> u32 {
        self.pick(self.clients_start, self.clients, |s| &mut s.next_client)
    }

    pub fn server(&mut self) -> u32 {
        self.pick(self.servers_start, self.servers, |s| &mut s.next_server)
    }
}

/// Per template: when its next flow starts and which client its flows are sharing.
struct Starter {
    /// Flows started so far; flow k starts at `origin + k * period`.
    started: u64,
    period_ns: f64,
    next_ns: u64,
    client: u32,
    client_left: u32,
}

/// The generator with scheduler `S`.
pub struct Generator<S: Scheduler> {
    sched: S,
    table: FlowTable,
    templates: Vec<Template>,
    starters: Vec<Starter>,
    addrs: Addresses,
    pairs: u32,
    pair_mask: u32,
    serial: u32,
    origin_ns: u64,
    counters: Counters,
    scratch: Vec<u8>,
}

/// The offered load of a set of templates, Gb/s of frame bytes.
pub fn offered_gbps(templates: &[Template]) -> f64 {
    templates
        .iter()
        .map(|t| t.cps * t.bytes_per_flow() as f64 * 8.0 / 1e9)
        .sum()
}

/// Flows a set of templates keeps active in steady state (Little's law: rate x lifetime).
pub fn steady_active_flows(templates: &[Template]) -> f64 {
    templates
        .iter()
        .map(|t| t.cps * (t.span_ns() + t.aging_ns) as f64 / 1e9)
        .sum()
}

/// The most flows `--active-flows` may ask for: 16 GiB of flow state.
pub const MAX_ACTIVE_FLOWS: u64 = 500_000_000;

/// Flow-table slots reserved up front; beyond this the table grows as flows arrive.
const RESERVE_FLOWS: f64 = (1 << 24) as f64;

/// Stretches every template's gaps by one factor so that `active` flows are active in steady
/// state at unchanged flow and packet rates (TRex's `--active-flows`). Errors when the
/// templates cannot hold that many (single-packet flows have no gaps to stretch).
pub fn scale_to_active_flows(templates: &mut [Template], active: u64) -> Result<f64, Error> {
    let aging: f64 = templates
        .iter()
        .map(|t| t.cps * t.aging_ns as f64 / 1e9)
        .sum();
    let spans: f64 = templates
        .iter()
        .map(|t| t.cps * t.span_ns() as f64 / 1e9)
        .sum();
    let want = active as f64 - aging;
    if spans <= 0.0 {
        return Err(Error::setting(
            "--active-flows",
            "needs templates with two or more packets and a gap between them",
        ));
    }
    if want <= 0.0 {
        return Err(Error::setting(
            "--active-flows",
            format!("{active} is below the {aging:.0} flows that aging alone keeps active"),
        ));
    }
    if active > MAX_ACTIVE_FLOWS {
        return Err(Error::setting(
            "--active-flows",
            format!("{active} is above {MAX_ACTIVE_FLOWS} (32 bytes of state each)"),
        ));
    }
    let factor = want / spans;
    for t in templates.iter_mut() {
        t.scale_gaps(factor);
    }
    Ok(factor)
}

impl<S: Scheduler> Generator<S> {
    /// A generator over `templates`, sending on `pairs` port pairs; `seed` drives random
    /// address distribution. Generator time starts at `origin_ns`.
    pub fn new(
        sched: S,
        templates: Vec<Template>,
        spec: &GenSpec,
        pairs: u32,
        seed: u64,
        origin_ns: u64,
    ) -> Self {
        let addrs = Addresses::new(spec, offered_gbps(&templates), seed);
        let starters = templates
            .iter()
            .map(|t| Starter {
                started: 0,
                period_ns: 1e9 / t.cps,
                next_ns: origin_ns,
                client: 0,
                client_left: 0,
            })
            .collect();
        let capacity = steady_active_flows(&templates).ceil().min(RESERVE_FLOWS) as usize;
        Generator {
            sched,
            table: FlowTable::with_capacity(capacity),
            templates,
            starters,
            addrs,
            pairs: pairs.max(1),
            pair_mask: spec.dual_port_mask.into(),
            serial: 0,
            origin_ns,
            counters: Counters::default(),
            scratch: Vec::with_capacity(2048),
        }
    }

    pub fn counters(&self) -> Counters {
        self.counters
    }

    pub fn active_flows(&self) -> usize {
        self.table.active()
    }

    pub fn templates(&self) -> &[Template] {
        &self.templates
    }

    pub fn addresses(&self) -> &Addresses {
        &self.addrs
    }

    /// Bytes held for flows: the flow table (capacity) plus the scheduler's own structures.
    pub fn state_bytes(&self) -> usize {
        self.table.flows.capacity() * std::mem::size_of::<Flow>() + self.sched.memory_bytes()
    }

    /// Creates a flow of template `t` starting at `start_ns` with the next address, port and
    /// pair; its first event is packet `pkt` at `due`.
    fn open_flow(&mut self, t: usize, pkt: u16, due: u64) {
        let st = &mut self.starters[t];
        if st.client_left == 0 {
            st.client = self.addrs.client();
            st.client_left = self.templates[t].w;
        }
        st.client_left -= 1;
        let client = st.client;
        let server = self.addrs.server();
        let serial = self.serial;
        self.serial = self.serial.wrapping_add(1);
        let pair = serial % self.pairs;
        let offset = pair.wrapping_mul(self.pair_mask);
        let qp = serial & 0xff_ffff;
        let client_port = if self.templates[t].per_flow_qp {
            lossless_wire::rocev2::udp_src_port(qp)
        } else {
            // Ports 1024..65535 in turn, as a client's ephemeral ports would go.
            1024 + (serial % 64_512) as u16
        };
        let id = self.table.alloc(Flow {
            due,
            next: 0,
            client: client.wrapping_add(offset),
            server: server.wrapping_add(offset),
            serial,
            template: t as u16,
            pkt,
            client_port,
            pair: pair as u8,
            _reserved: 0,
        });
        self.counters.flows_started += 1;
        self.sched.push(&mut self.table.flows, id, due);
    }

    /// Fills the table with the flows that a run at steady state would have in flight at the
    /// origin: for each template, the flows started during the last flow lifetime, each at the
    /// packet it would be sending next. Packets already "sent" are not counted.
    pub fn prefill(&mut self) {
        for t in 0..self.templates.len() {
            let period = self.starters[t].period_ns;
            let life = self.templates[t].span_ns() + self.templates[t].aging_ns;
            let n = (life as f64 / period).floor() as u64;
            // Offsets of each packet from the flow's start.
            let mut offsets = Vec::with_capacity(self.templates[t].packets.len() + 1);
            let mut acc = 0u64;
            for p in &self.templates[t].packets {
                offsets.push(acc);
                acc += p.gap_ns;
            }
            offsets.push(acc + self.templates[t].aging_ns);
            for k in 1..=n {
                let age = (k as f64 * period).round() as u64;
                // The first packet not yet sent by a flow started `age` ago.
                let pkt = offsets.partition_point(|&o| o < age);
                if pkt >= offsets.len() {
                    continue;
                }
                let due = self.origin_ns + offsets[pkt] - age;
                self.open_flow(t, pkt as u16, due);
            }
        }
    }

    /// Runs every flow start and packet due by `now` (the wheel: by `now`'s bucket).
    pub fn advance<K: Sink>(&mut self, now: u64, sink: &mut K) -> Result<(), Error> {
        loop {
            let (t, start) = self.next_start();
            let limit = start.min(now);
            while let Some(id) = self.sched.pop(&mut self.table.flows, limit) {
                self.fire(id, sink)?;
            }
            if start > now {
                return Ok(());
            }
            let st = &mut self.starters[t];
            st.started += 1;
            st.next_ns = self.origin_ns + (st.started as f64 * st.period_ns).round() as u64;
            self.open_flow(t, 0, start);
        }
    }

    fn next_start(&self) -> (usize, u64) {
        let mut best = (0, u64::MAX);
        for (i, s) in self.starters.iter().enumerate() {
            if s.next_ns < best.1 {
                best = (i, s.next_ns);
            }
        }
        best
    }

    fn fire<K: Sink>(&mut self, id: u32, sink: &mut K) -> Result<(), Error> {
        let f = self.table.flows[id as usize];
        let tpl = &self.templates[f.template as usize];
        let Some(p) = tpl.packets.get(f.pkt as usize) else {
            // The aging timer of a finished flow.
            self.table.release(id);
            self.counters.flows_ended += 1;
            return Ok(());
        };
        let rw = Rewrite {
            client: f.client,
            server: f.server,
            client_port: f.client_port,
            dest_qp: tpl.per_flow_qp.then_some(f.serial & 0xff_ffff),
        };
        p.render(&rw, &mut self.scratch);
        if sink.send(f.pair as usize, &self.scratch, f.due)? {
            self.counters.packets += 1;
            self.counters.bytes += self.scratch.len() as u64;
        } else {
            self.counters.queue_full += 1;
        }
        let next_pkt = f.pkt + 1;
        let last = next_pkt as usize == tpl.packets.len();
        if last && tpl.aging_ns == 0 {
            self.table.release(id);
            self.counters.flows_ended += 1;
            return Ok(());
        }
        let due = f
            .due
            .saturating_add(if last { tpl.aging_ns } else { p.gap_ns });
        self.table.flows[id as usize].pkt = next_pkt;
        self.sched.push(&mut self.table.flows, id, due);
        Ok(())
    }
}

/// An address as dotted quad, for reports.
pub fn addr(a: u32) -> Ipv4Addr {
    Ipv4Addr::from(a)
}
