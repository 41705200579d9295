//! The simulated network: switches (p4-switch's [`Core`]: the engine and the traffic manager),
//! host NICs and the links between them, driven by one event queue in virtual time.
//!
//! How time flows: a frame handed to a port at `t` (a switch's traffic manager hands it over
//! when the line is free, a host NIC when its previous frame's gap has passed) reaches the far
//! end at `t + frame time + propagation`. There a MAC control frame (PFC, PAUSE) acts at once,
//! in switch-tm's reception; any other frame enters the pipeline after the switch's pipeline
//! latency. After each arrival the switch's traffic manager is run at that instant, and it says
//! when it next needs to run (a line frees up, a pause ends, a watchdog poll): one wake-up is
//! kept per switch.

use crate::des::EventQueue;
use crate::link::LinkSpec;
use crate::traffic::{PingPong, Sender};
use p4_switch::core::{Core, TxBatch};
use roce_host::Endpoint;
use std::collections::{BTreeMap, VecDeque};
use std::net::Ipv4Addr;
use std::sync::Arc;
use switch_ports::{Port, PortError, Recv};

/// A switch port in the simulation. The switch's core defers its transmissions
/// ([`Core::defer_transmit`]): the simulator takes each released frame from it as an owned
/// buffer ([`Core::take_tx`]) and moves that buffer through the event queue, so no hop copies a
/// frame. The port itself therefore never sends.
pub struct SimPort {
    name: String,
}

impl SimPort {
    pub fn new(name: String) -> SimPort {
        SimPort { name }
    }
}

impl Port for SimPort {
    fn name(&self) -> &str {
        &self.name
    }

    fn send(&self, _frame: &[u8]) -> Result<(), PortError> {
        Err(PortError::Io {
            port: self.name.clone(),
            op: "send",
            source: std::io::Error::other("a simulated switch transmits through Core::take_tx"),
        })
    }

    /// Frames reach a simulated switch through the event queue, never through its ports.
    fn recv(&self, _buf: &mut [u8], _timeout: std::time::Duration) -> Result<Recv, PortError> {
        Ok(Recv::Closed)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Node {
    Switch(usize),
    Host(usize),
}

/// The far end of a port, and the link to it.
#[derive(Debug, Clone, Copy)]
pub struct Peer {
    pub node: Node,
    pub port: u32,
    pub link: LinkSpec,
}

pub struct SimSwitch {
    pub name: String,
    pub core: Core,
    /// The core's ports and their numbers ([`Core::take_tx`] names a frame's port by its `Arc`).
    ports: Vec<(Arc<dyn Port>, u32)>,
    /// Emptied transmit batches, for [`Core::take_tx`] to reuse.
    spare: Vec<TxBatch>,
    pipeline_ns: u64,
    /// The wake-up in the event queue that counts; others are stale.
    wake_at: Option<u64>,
    peers: BTreeMap<u32, Peer>,
    /// Frames sent to a port with nothing attached.
    pub unconnected_tx: u64,
}

impl SimSwitch {
    /// `core` must defer its transmissions ([`Core::defer_transmit`]) to the ports in `ports`.
    pub fn new(
        name: String,
        core: Core,
        ports: Vec<(Arc<dyn Port>, u32)>,
        pipeline_ns: u64,
    ) -> SimSwitch {
        SimSwitch {
            name,
            core,
            ports,
            spare: Vec::new(),
            pipeline_ns,
            wake_at: None,
            peers: BTreeMap::new(),
            unconnected_tx: 0,
        }
    }
}

/// roce-host's endpoint as a host's NIC, with the applications that post on it.
pub struct HostNic {
    pub ep: Endpoint,
    pub senders: Vec<Sender>,
    pub pingpongs: Vec<PingPong>,
    wake_at: Option<u64>,
}

impl HostNic {
    pub fn new(ep: Endpoint) -> HostNic {
        HostNic {
            ep,
            senders: Vec::new(),
            pingpongs: Vec::new(),
            wake_at: None,
        }
    }

    fn foreground_done(&self) -> bool {
        self.pingpongs.iter().all(PingPong::done)
            && self
                .senders
                .iter()
                .filter(|s| !s.background)
                .all(Sender::done)
    }
}

/// A host: roce-host's endpoint when it runs RDMA traffic; otherwise a transmit FIFO sent back
/// to back at the link rate, recording what it receives (probes).
pub struct SimHost {
    pub name: String,
    pub ip: Ipv4Addr,
    pub mac: [u8; 6],
    pub gateway_mac: [u8; 6],
    /// NIC and PCIe latency (ns) between the endpoint (or probe FIFO) and the wire, added on
    /// the way out and on the way in. MAC control frames act in the NIC's MAC, without it.
    pub latency_ns: u64,
    peer: Option<Peer>,
    tx: VecDeque<Vec<u8>>,
    /// When the line is free, in units of 1/rate ns (exact, see [`LinkSpec::line_units`]).
    busy_units: u128,
    line_event: bool,
    /// Every frame received, with the virtual time its last bit arrived (hosts without a NIC).
    pub rx: Vec<(u64, Vec<u8>)>,
    pub nic: Option<HostNic>,
}

impl SimHost {
    pub fn new(name: String, ip: Ipv4Addr, mac: [u8; 6], gateway_mac: [u8; 6]) -> SimHost {
        SimHost {
            name,
            ip,
            mac,
            gateway_mac,
            latency_ns: 0,
            peer: None,
            tx: VecDeque::new(),
            busy_units: 0,
            line_event: false,
            rx: Vec::new(),
            nic: None,
        }
    }

    /// The host latency `frame` takes between the wire and the endpoint, either way.
    fn wire_latency_ns(&self, frame: &[u8]) -> u64 {
        if is_mac_control(frame) {
            0
        } else {
            self.latency_ns
        }
    }
}

enum Event {
    /// A frame reaches a switch port (MAC control) or its pipeline (anything else).
    SwitchRx {
        sw: usize,
        port: u32,
        frame: Vec<u8>,
    },
    Wake {
        sw: usize,
    },
    HostRx {
        host: usize,
        frame: Vec<u8>,
    },
    /// A host application hands a frame to its NIC.
    HostSend {
        host: usize,
        frame: Vec<u8>,
    },
    /// A host's line is free for its next frame.
    HostLine {
        host: usize,
    },
    /// A host's endpoint asked to be woken (pacing, pause end, timers, a sender's start).
    NicWake {
        host: usize,
    },
}

/// Why [`Sim::run`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// Nothing left to happen.
    Drained,
    /// The next event lies beyond the time asked for.
    Reached,
    /// `--max-events` would have been passed.
    MaxEvents,
    /// Every application has finished (timers such as DCQCN's may still be running).
    Finished,
}

/// What the progress callback is told, every so many events.
pub struct Progress {
    pub now_ns: u64,
    pub events: u64,
}

#[derive(Default)]
pub struct Sim {
    pub switches: Vec<SimSwitch>,
    pub hosts: Vec<SimHost>,
    queue: EventQueue<Event>,
    now_ns: u64,
    events: u64,
    /// Buffers of frames the hosts' endpoints consumed, for their next transmissions.
    buffers: Vec<Vec<u8>>,
}

/// Spare host frame buffers kept (about what the fabric holds in flight at once).
const SPARE_BUFFERS: usize = 1024;

/// Events between two progress calls.
const PROGRESS_EVERY: u64 = 1 << 16;

fn is_mac_control(frame: &[u8]) -> bool {
    frame.get(12..14) == Some(&[0x88, 0x08])
}

impl Sim {
    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }

    /// Events handled so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    pub fn switch_index(&self, name: &str) -> Option<usize> {
        self.switches.iter().position(|s| s.name == name)
    }

    pub fn host_index(&self, name: &str) -> Option<usize> {
        self.hosts.iter().position(|h| h.name == name)
    }

    /// Connects two ends with one full-duplex link (`port` is ignored for hosts).
    pub fn connect(&mut self, a: (Node, u32), b: (Node, u32), link: LinkSpec) {
        for ((node, port), (peer, peer_port)) in [(a, b), (b, a)] {
            let p = Peer {
                node: peer,
                port: peer_port,
                link,
            };
            match node {
                Node::Switch(s) => {
                    self.switches[s].peers.insert(port, p);
                }
                Node::Host(h) => self.hosts[h].peer = Some(p),
            }
        }
    }

    /// The link of a host, if it has one.
    pub fn host_link(&self, host: usize) -> Option<LinkSpec> {
        self.hosts[host].peer.map(|p| p.link)
    }

    /// Hands `frame` to `host`'s NIC at virtual time `at_ns` (not before the present).
    pub fn host_send(&mut self, host: usize, at_ns: u64, frame: Vec<u8>) {
        self.queue
            .push(at_ns.max(self.now_ns), Event::HostSend { host, frame });
    }

    /// Runs events in time order until none is left, the next one lies after `until_ns` (time
    /// then stands at `until_ns`), or `max_events` more would be passed.
    pub fn run(
        &mut self,
        until_ns: Option<u64>,
        max_events: Option<u64>,
        progress: &mut dyn FnMut(&Progress),
    ) -> Stop {
        let apps = self.apps();
        loop {
            if apps > 0 && self.settle() {
                return Stop::Finished;
            }
            let Some(t) = self.queue.peek_time() else {
                return Stop::Drained;
            };
            if let Some(u) = until_ns.filter(|&u| t > u) {
                self.now_ns = self.now_ns.max(u);
                return Stop::Reached;
            }
            if max_events.is_some_and(|m| self.events >= m) {
                return Stop::MaxEvents;
            }
            let Some((t, ev)) = self.queue.pop() else {
                return Stop::Drained;
            };
            self.now_ns = t;
            self.events += 1;
            self.handle(ev);
            if self.events % PROGRESS_EVERY == 0 {
                progress(&Progress {
                    now_ns: self.now_ns,
                    events: self.events,
                });
            }
        }
    }

    fn handle(&mut self, ev: Event) {
        let now = self.now_ns;
        match ev {
            Event::SwitchRx { sw, port, frame } => {
                let core = &mut self.switches[sw].core;
                // The engine runs the packet in this buffer (no copy per hop).
                core.receive_buf(now, port, frame);
                self.service(sw);
            }
            Event::Wake { sw } => {
                if self.switches[sw].wake_at == Some(now) {
                    self.switches[sw].wake_at = None;
                    self.service(sw);
                }
            }
            Event::HostRx { host, frame } => match &mut self.hosts[host].nic {
                Some(nic) => {
                    nic.ep.handle_frame(now, &frame);
                    if self.buffers.len() < SPARE_BUFFERS {
                        self.buffers.push(frame);
                    }
                    self.drive_nic(host);
                }
                None => self.hosts[host].rx.push((now, frame)),
            },
            Event::NicWake { host } => {
                if let Some(nic) = &mut self.hosts[host].nic {
                    if nic.wake_at == Some(now) {
                        nic.wake_at = None;
                        self.drive_nic(host);
                    }
                }
            }
            Event::HostSend { host, frame } => {
                self.hosts[host].tx.push_back(frame);
                self.host_transmit(host);
            }
            Event::HostLine { host } => {
                self.hosts[host].line_event = false;
                self.host_transmit(host);
            }
        }
    }

    /// Runs the switch's traffic manager now, sends what it released and keeps its next
    /// wake-up.
    fn service(&mut self, sw: usize) {
        let now = self.now_ns;
        let s = &mut self.switches[sw];
        let next = s.core.run_due(now);
        let mut spare = std::mem::take(&mut s.spare);
        if let Some(mut batch) = s.core.take_tx(&mut spare) {
            for (port, frame) in batch.drain(..) {
                let s = &self.switches[sw];
                let number = s.ports.iter().find(|(p, _)| Arc::ptr_eq(p, &port));
                match number.and_then(|(_, n)| s.peers.get(n)).copied() {
                    Some(peer) => {
                        let at = (now as u128 * peer.link.rate_bps as u128
                            + peer.link.frame_units(frame.len()))
                        .div_ceil(peer.link.rate_bps as u128)
                            as u64
                            + peer.link.delay_ns;
                        self.deliver(peer, at, frame);
                    }
                    None => self.switches[sw].unconnected_tx += 1,
                }
            }
            spare.push(batch);
        }
        self.switches[sw].spare = spare;
        let s = &mut self.switches[sw];
        if let Some(t) = next {
            let t = t.max(now);
            if s.wake_at.map_or(true, |w| t < w) {
                s.wake_at = Some(t);
                self.queue.push(t, Event::Wake { sw });
            }
        }
    }

    /// Gives `host` a new roce-host endpoint as its NIC, at its link's rate; the previous one
    /// (and its applications) is returned.
    pub fn set_nic(&mut self, host: usize, params: &crate::traffic::NicParams) -> Option<HostNic> {
        let h = &mut self.hosts[host];
        let peer = h.peer?;
        let ep = params.endpoint(h.mac, h.ip.octets(), peer.link.rate_bps);
        h.nic.replace(HostNic::new(ep))
    }

    pub fn add_sender(&mut self, host: usize, sender: Sender) {
        if let Some(nic) = &mut self.hosts[host].nic {
            nic.senders.push(sender);
        }
    }

    pub fn add_pingpong(&mut self, host: usize, p: PingPong) {
        if let Some(nic) = &mut self.hosts[host].nic {
            nic.pingpongs.push(p);
        }
    }

    /// The NICs of two different hosts, both at once (to connect their QPs); `None` when
    /// `a == b` or either has none ([`Sim::add_nic`]).
    pub fn two_nics(&mut self, a: usize, b: usize) -> Option<(&mut HostNic, &mut HostNic)> {
        if a == b || a.max(b) >= self.hosts.len() {
            return None;
        }
        let (left, right) = self.hosts.split_at_mut(a.max(b));
        let (lo, hi) = (left[a.min(b)].nic.as_mut()?, right[0].nic.as_mut()?);
        Some(if a < b { (lo, hi) } else { (hi, lo) })
    }

    fn apps(&self) -> usize {
        self.hosts
            .iter()
            .filter_map(|h| h.nic.as_ref())
            .map(|n| n.senders.len() + n.pingpongs.len())
            .sum()
    }

    /// True when every application is done. Background senders are stopped once all the
    /// others are done, and then waited for.
    fn settle(&mut self) -> bool {
        let nics = || self.hosts.iter().filter_map(|h| h.nic.as_ref());
        if !nics().all(HostNic::foreground_done) {
            return false;
        }
        for nic in self.hosts.iter_mut().filter_map(|h| h.nic.as_mut()) {
            nic.senders.iter_mut().for_each(Sender::stop);
        }
        self.hosts
            .iter()
            .filter_map(|h| h.nic.as_ref())
            .all(|n| n.senders.iter().all(Sender::done))
    }

    /// Wakes `host`'s endpoint at `at_ns` (a sender's start).
    pub fn wake_nic(&mut self, host: usize, at_ns: u64) {
        if let Some(nic) = &mut self.hosts[host].nic {
            if nic.wake_at.map_or(true, |w| at_ns < w) {
                nic.wake_at = Some(at_ns);
                self.queue.push(at_ns, Event::NicWake { host });
            }
        }
    }

    /// Lets the senders react to completions, sends what the endpoint may send now and keeps
    /// its next wake-up.
    fn drive_nic(&mut self, host: usize) {
        let now = self.now_ns;
        let h = &mut self.hosts[host];
        let (Some(nic), Some(peer)) = (h.nic.as_mut(), h.peer) else {
            return;
        };
        let completions = nic.ep.take_completions();
        let incoming = nic.ep.take_incoming();
        for s in &mut nic.senders {
            s.step(now, &mut nic.ep, &completions);
        }
        for p in &mut nic.pingpongs {
            p.step(now, &mut nic.ep, &incoming, &completions);
        }
        let mut buf = self.buffers.pop().unwrap_or_default();
        let sent = if nic.ep.poll_tx(now, &mut buf) {
            Some(buf)
        } else {
            self.buffers.push(buf);
            None
        };
        let mut next = nic.ep.next_wakeup();
        let starts = nic.senders.iter().map(|s| s.start_ns);
        for t in starts.chain(nic.pingpongs.iter().map(|p| p.start_ns)) {
            if t > now {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        }
        if let Some(t) = next.map(|t| t.max(now + u64::from(sent.is_none()))) {
            if nic.wake_at.map_or(true, |w| t < w || w < now) {
                nic.wake_at = Some(t);
                self.queue.push(t, Event::NicWake { host });
            }
        }
        if let Some(frame) = sent {
            let rate = peer.link.rate_bps as u128;
            let at = (now as u128 * rate + peer.link.frame_units(frame.len())).div_ceil(rate)
                as u64
                + peer.link.delay_ns
                + h.wire_latency_ns(&frame);
            self.deliver(peer, at, frame);
        }
    }

    /// Sends the host's next frame if its line is free, or makes sure it is woken when it is.
    fn host_transmit(&mut self, host: usize) {
        let now = self.now_ns;
        let h = &mut self.hosts[host];
        let Some(peer) = h.peer else {
            h.tx.clear();
            return;
        };
        let rate = peer.link.rate_bps as u128;
        let free_ns = h.busy_units.div_ceil(rate) as u64;
        if h.tx.is_empty() || h.line_event {
            return;
        }
        if free_ns > now {
            h.line_event = true;
            self.queue.push(free_ns, Event::HostLine { host });
            return;
        }
        let Some(frame) = h.tx.pop_front() else {
            return;
        };
        let start = h.busy_units.max(now as u128 * rate);
        h.busy_units = start + peer.link.line_units(frame.len());
        let at = (start + peer.link.frame_units(frame.len())).div_ceil(rate) as u64
            + peer.link.delay_ns
            + h.wire_latency_ns(&frame);
        if !h.tx.is_empty() {
            h.line_event = true;
            let free = h.busy_units.div_ceil(rate) as u64;
            self.queue.push(free, Event::HostLine { host });
        }
        self.deliver(peer, at, frame);
    }

    fn deliver(&mut self, peer: Peer, at_ns: u64, frame: Vec<u8>) {
        match peer.node {
            Node::Switch(sw) => {
                let at = if is_mac_control(&frame) {
                    at_ns
                } else {
                    at_ns + self.switches[sw].pipeline_ns
                };
                self.queue.push(
                    at,
                    Event::SwitchRx {
                        sw,
                        port: peer.port,
                        frame,
                    },
                );
            }
            Node::Host(host) => {
                let at = at_ns + self.hosts[host].wire_latency_ns(&frame);
                self.queue.push(at, Event::HostRx { host, frame });
            }
        }
    }
}
