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
use crate::pcap::Capture;
use crate::tcp::Connection;
use crate::timeline::Timeline;
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
    /// The peers again by position in `ports`, for the frames the core releases.
    line_peers: Vec<Option<Peer>>,
    /// Frames sent to a port with nothing attached.
    pub unconnected_tx: u64,
}

impl SimSwitch {
    /// The core's ports by number, for a core built anew around the same lines.
    pub fn port_map(&self) -> BTreeMap<u32, Arc<dyn Port>> {
        self.ports.iter().map(|(p, n)| (*n, p.clone())).collect()
    }

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
            line_peers: vec![None; ports.len()],
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
}

impl HostNic {
    pub fn new(ep: Endpoint) -> HostNic {
        HostNic {
            ep,
            senders: Vec::new(),
            pingpongs: Vec::new(),
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

/// A host: roce-host's endpoint when it runs RDMA traffic, TCP connections when it runs TCP
/// (both share its line, taking turns frame by frame); otherwise a transmit FIFO sent back to
/// back at the link rate, recording what it receives (probes).
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
    pub tcp: Vec<Connection>,
    /// TCP frames for no connection of this host, or malformed.
    pub tcp_unknown: u64,
    /// Which TCP connection goes next, and whether TCP goes before the endpoint.
    tcp_next: usize,
    tcp_turn: bool,
    /// The wake-up of the endpoint and the TCP connections in the event queue that counts.
    wake_at: Option<u64>,
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
            tcp: Vec::new(),
            tcp_unknown: 0,
            tcp_next: 0,
            tcp_turn: false,
            wake_at: None,
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
    /// Switch wake-ups in `queue` (current or stale): when they are all it holds, only timers
    /// are left.
    wakes_queued: usize,
    /// Queue, buffer and PFC timelines, when recorded.
    pub timeline: Option<Timeline>,
    /// Capture files of switch ports, when asked for.
    pub capture: Option<Capture>,
    /// Whether every host's foreground applications are done, as last found: only a host's
    /// endpoint being driven ([`Sim::drive_nic`]), stopping the senders or a change between
    /// runs changes it, and it is asked after every event.
    nics_done: Option<bool>,
}

/// Spare host frame buffers kept (about what the fabric holds in flight at once).
const SPARE_BUFFERS: usize = 1024;

/// Events between two progress calls.
const PROGRESS_EVERY: u64 = 1 << 16;

fn is_mac_control(frame: &[u8]) -> bool {
    frame.get(12..14) == Some(&[0x88, 0x08])
}

/// An untagged IPv4 frame carrying TCP.
fn is_tcp(frame: &[u8]) -> bool {
    frame.get(12..14) == Some(&[0x08, 0x00])
        && frame.get(23) == Some(&lossless_wire::tcp::IPPROTO_TCP)
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
                    let s = &mut self.switches[s];
                    s.peers.insert(port, p);
                    if let Some(i) = s.ports.iter().position(|(_, n)| *n == port) {
                        s.line_peers[i] = Some(p);
                    }
                }
                Node::Host(h) => self.hosts[h].peer = Some(p),
            }
        }
    }

    /// The name of the switch at the far end of switch `sw`'s `port`, if a switch is there.
    pub fn switch_peer(&self, sw: usize, port: u32) -> Option<String> {
        match self.switches[sw].peers.get(&port)?.node {
            Node::Switch(s) => Some(self.switches[s].name.clone()),
            Node::Host(_) => None,
        }
    }

    /// The switch and port a host is attached to, if it is attached to one.
    pub fn host_attachment(&self, host: usize) -> Option<(usize, u32)> {
        match self.hosts[host].peer?.node {
            Node::Switch(s) => Some((s, self.hosts[host].peer?.port)),
            Node::Host(_) => None,
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
        self.nics_done = None;
        loop {
            if apps > 0 && self.settle() {
                return Stop::Finished;
            }
            let Some(t) = self.queue.peek_time() else {
                return Stop::Drained;
            };
            if self.quiet() {
                return Stop::Drained;
            }
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
            if let Some(tl) = &mut self.timeline {
                let switches = &self.switches;
                tl.before(t, || switches.iter().map(|s| &s.core));
            }
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
                // Stamped when its last bit arrived, before the pipeline's latency.
                let stamp = if is_mac_control(&frame) {
                    now
                } else {
                    now.saturating_sub(self.switches[sw].pipeline_ns)
                };
                self.tap(sw, port, false, stamp, &frame);
                let core = &mut self.switches[sw].core;
                // The engine runs the packet in this buffer (no copy per hop).
                core.receive_buf(now, port, frame);
                self.service(sw);
            }
            Event::Wake { sw } => {
                self.wakes_queued -= 1;
                if self.switches[sw].wake_at == Some(now) {
                    self.switches[sw].wake_at = None;
                    self.service(sw);
                }
            }
            Event::HostRx { host, frame } if is_tcp(&frame) && !self.hosts[host].tcp.is_empty() => {
                let h = &mut self.hosts[host];
                match lossless_wire::tcp::parse(&frame) {
                    Ok(Some(seg)) => match h.tcp.iter_mut().find(|c| c.owns(&seg)) {
                        Some(c) => c.handle_frame(now, &frame),
                        None => h.tcp_unknown += 1,
                    },
                    _ => h.tcp_unknown += 1,
                }
                if self.buffers.len() < SPARE_BUFFERS {
                    self.buffers.push(frame);
                }
                self.drive_nic(host);
            }
            Event::HostRx { host, frame } if self.hosts[host].nic.is_some() => {
                let (before, rest) = self.hosts.split_at_mut(host);
                if let Some((Some(nic), after)) = rest
                    .split_first_mut()
                    .map(|(me, after)| (me.nic.as_mut(), after))
                {
                    // A payload sent by reference is read from its sender's memory.
                    nic.ep.handle_frame_with(now, &frame, |r| {
                        let ip = Ipv4Addr::from(r.ip);
                        let sender = before.iter().chain(after.iter()).find(|h| h.ip == ip);
                        sender?.nic.as_ref()?.ep.payload(r)
                    });
                }
                if self.buffers.len() < SPARE_BUFFERS {
                    self.buffers.push(frame);
                }
                self.drive_nic(host);
            }
            Event::HostRx { host, frame } => self.hosts[host].rx.push((now, frame)),
            Event::NicWake { host } => {
                if self.hosts[host].wake_at == Some(now) {
                    self.hosts[host].wake_at = None;
                    self.drive_nic(host);
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

    /// Nothing left but switches' timers, with packet generators among them and no packet in
    /// any switch: a packet generator keeps a switch's queue of wake-ups going for ever, and a
    /// switch that holds nothing has no pause to renew, so the run is over as if drained.
    fn quiet(&self) -> bool {
        self.queue.len() == self.wakes_queued
            && self
                .switches
                .iter()
                .any(|s| s.core.pktgen_config().is_some())
            && self.switches.iter().all(|s| !s.core.holds_packets())
    }

    /// Shows a frame switch `sw` sent (`tx`, at `stamp_ns`, now) or received on `port` (its
    /// last bit at `stamp_ns`) to the timeline and the capture.
    fn tap(&mut self, sw: usize, port: u32, tx: bool, stamp_ns: u64, frame: &[u8]) {
        if let Some(tl) = &mut self.timeline {
            tl.frame(sw, port, tx, frame);
        }
        if let Some(c) = &mut self.capture {
            c.record(sw, port, stamp_ns, frame, self.now_ns);
        }
    }

    /// Samples the timeline up to the present, included (at the end of a run).
    pub fn sample_now(&mut self) {
        if let Some(tl) = &mut self.timeline {
            let switches = &self.switches;
            tl.before(self.now_ns + 1, || switches.iter().map(|s| &s.core));
        }
    }

    /// Lets virtual time pass idle to `t` (what is due before it happens first).
    pub fn idle_until(&mut self, t: u64) {
        self.run(Some(t), None, &mut |_| {});
        self.now_ns = self.now_ns.max(t);
    }

    /// Starts the packet generators: each switch that has one is run now, which schedules its
    /// first firing (otherwise it would wait for the switch's first frame).
    pub fn start_pktgens(&mut self) {
        for sw in 0..self.switches.len() {
            if self.switches[sw].core.pktgen_config().is_some() {
                self.service(sw);
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
                let line = s.ports.iter().position(|(p, _)| Arc::ptr_eq(p, &port));
                let Some(i) = line else {
                    self.switches[sw].unconnected_tx += 1;
                    continue;
                };
                let (number, peer) = (s.ports[i].1, s.line_peers[i]);
                self.tap(sw, number, true, now, &frame);
                match peer {
                    // Sent from `now`, a whole nanosecond: the frame's last bit a rounded-up
                    // frame time later.
                    Some(peer) => {
                        let at = now + peer.link.frame_ns(frame.len()) + peer.link.delay_ns;
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
                self.wakes_queued += 1;
            }
        }
    }

    /// Ends every host's applications and lets the fabric drain for at most `ns` of virtual
    /// time (less once only switches' timers are left); the endpoints stay, to take what is
    /// still in flight, and what hosts without one received is forgotten.
    pub fn drain(&mut self, ns: u64) {
        for h in &mut self.hosts {
            if let Some(nic) = &mut h.nic {
                nic.senders.clear();
                nic.pingpongs.clear();
            }
            h.tcp.clear();
        }
        let until = self.now_ns + ns;
        self.run(Some(until), None, &mut |_| {});
        for h in &mut self.hosts {
            h.rx.clear();
        }
    }

    /// Every host as new, after [`Sim::drain`]: no endpoint, no TCP connection, nothing
    /// received, no frame waiting (what the next config case starts from).
    pub fn reset_hosts(&mut self) {
        for h in &mut self.hosts {
            h.nic = None;
            h.tcp.clear();
            h.tx.clear();
            h.rx.clear();
            h.tcp_unknown = 0;
            h.tcp_next = 0;
            h.tcp_turn = false;
        }
    }

    /// Gives `host` a new roce-host endpoint as its NIC, at its link's rate; the previous one
    /// (and its applications) is returned.
    pub fn set_nic(&mut self, host: usize, params: &crate::traffic::NicParams) -> Option<HostNic> {
        // Payloads travel by reference (the receiving endpoint reads the sender's memory),
        // unless frames are captured: the files show the bytes.
        let by_reference = self.capture.is_none();
        let h = &mut self.hosts[host];
        let peer = h.peer?;
        let ep = params.endpoint(h.mac, h.ip.octets(), peer.link.rate_bps, by_reference);
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

    /// Connects `from` to `to` with one TCP connection (`from`'s end carries `source`) and
    /// wakes `from` when the source starts. `addr`'s MACs are filled in from the hosts.
    pub fn connect_tcp(
        &mut self,
        from: usize,
        to: usize,
        mut addr: crate::tcp::Addressing,
        params: crate::tcp::TcpParams,
        source: crate::tcp::Source,
    ) {
        let (a, b) = (&self.hosts[from], &self.hosts[to]);
        addr.src_mac = a.mac;
        addr.dst_mac = a.gateway_mac;
        addr.src_ip = a.ip.octets();
        addr.dst_ip = b.ip.octets();
        let back = addr.reversed(b.mac, b.gateway_mac);
        let mut c = Connection::new(addr, params);
        c.source = Some(source);
        self.hosts[from].tcp.push(c);
        self.hosts[to].tcp.push(Connection::new(back, params));
        self.wake_nic(from, source.start_ns);
    }

    fn apps(&self) -> usize {
        let nics: usize = self
            .hosts
            .iter()
            .filter_map(|h| h.nic.as_ref())
            .map(|n| n.senders.len() + n.pingpongs.len())
            .sum();
        let tcp = self.hosts.iter().flat_map(|h| &h.tcp);
        nics + tcp
            .filter(|c| c.source.is_some_and(|s| !s.background))
            .count()
    }

    /// True when every application is done. Background senders are stopped once all the
    /// others are done, and then waited for.
    fn settle(&mut self) -> bool {
        let now = self.now_ns;
        let nics = || self.hosts.iter().filter_map(|h| h.nic.as_ref());
        // The endpoints' answer first: it is kept between events, and while it is no the TCP
        // connections of every host need not be walked after each event.
        if !*self
            .nics_done
            .get_or_insert_with(|| nics().all(HostNic::foreground_done))
        {
            return false;
        }
        let foreground_tcp = self
            .hosts
            .iter()
            .flat_map(|h| &h.tcp)
            .all(|c| c.source.map_or(true, |s| s.background) || c.done(now));
        if !foreground_tcp {
            return false;
        }
        self.nics_done = None;
        for nic in self.hosts.iter_mut().filter_map(|h| h.nic.as_mut()) {
            nic.senders.iter_mut().for_each(Sender::stop);
        }
        // Background TCP (iperf3 beside the measured traffic) is stopped, not waited for.
        for c in self.hosts.iter_mut().flat_map(|h| &mut h.tcp) {
            c.stop(now);
        }
        self.hosts
            .iter()
            .filter_map(|h| h.nic.as_ref())
            .all(|n| n.senders.iter().all(Sender::done))
    }

    /// Wakes `host`'s endpoint at `at_ns` (a sender's start).
    pub fn wake_nic(&mut self, host: usize, at_ns: u64) {
        let h = &mut self.hosts[host];
        if (h.nic.is_some() || !h.tcp.is_empty()) && h.wake_at.map_or(true, |w| at_ns < w) {
            h.wake_at = Some(at_ns);
            self.queue.push(at_ns, Event::NicWake { host });
        }
    }

    /// Lets the senders react to completions, sends what the endpoint (or a TCP connection) may
    /// send now and keeps its next wake-up. With TCP beside the endpoint the host's line is
    /// shared: one frame at a time when it is free, TCP and the endpoint taking turns, the
    /// connections round robin among themselves; without TCP the endpoint paces itself.
    fn drive_nic(&mut self, host: usize) {
        self.nics_done = None;
        let now = self.now_ns;
        let h = &mut self.hosts[host];
        let Some(peer) = h.peer else {
            return;
        };
        let mut next: Option<u64> = None;
        let mut cand = |t: u64| next = Some(next.map_or(t, |n: u64| n.min(t)));
        if let Some(nic) = h.nic.as_mut() {
            let completions = nic.ep.take_completions();
            let incoming = nic.ep.take_incoming();
            for s in &mut nic.senders {
                s.step(now, &mut nic.ep, &completions);
            }
            for p in &mut nic.pingpongs {
                p.step(now, &mut nic.ep, &incoming, &completions);
            }
            let starts = nic.senders.iter().map(|s| s.start_ns);
            for t in starts.chain(nic.pingpongs.iter().map(|p| p.start_ns)) {
                if t > now {
                    cand(t);
                }
            }
        }
        let shared = !h.tcp.is_empty();
        let rate = peer.link.rate_bps as u128;
        let line_free = h.busy_units.div_ceil(rate) as u64;
        let mut buf = self.buffers.pop().unwrap_or_default();
        let mut sent = false;
        if !shared || line_free <= now {
            for turn in 0..2 {
                let tcp_now = shared && (turn == 0) == h.tcp_turn;
                sent = if tcp_now {
                    let n = h.tcp.len();
                    (0..n).any(|k| {
                        let i = (h.tcp_next + k) % n;
                        let s = h.tcp[i].poll_tx(now, &mut buf);
                        if s {
                            h.tcp_next = (i + 1) % n;
                        }
                        s
                    })
                } else {
                    h.nic
                        .as_mut()
                        .is_some_and(|nic| nic.ep.poll_tx(now, &mut buf))
                };
                if sent {
                    h.tcp_turn = !tcp_now;
                    break;
                }
            }
        }
        if let Some(t) = h.nic.as_ref().and_then(|n| n.ep.next_wakeup()) {
            cand(t);
        }
        for c in &h.tcp {
            if let Some(t) = c.next_wakeup(now) {
                cand(t);
            }
        }
        let mut at = 0;
        if sent {
            let start = if shared {
                // Woken at the nanosecond after the line became free is not late: keep the
                // fraction, or every frame would lose up to 1 ns of line rate.
                let start = if line_free >= now {
                    h.busy_units
                } else {
                    now as u128 * rate
                };
                h.busy_units = start + peer.link.line_units(buf.len());
                start
            } else {
                now as u128 * rate
            };
            at = (start + peer.link.frame_units(buf.len())).div_ceil(rate) as u64
                + peer.link.delay_ns
                + h.wire_latency_ns(&buf);
        }
        let next = if shared {
            // Nothing goes before the line is free again.
            let free = h.busy_units.div_ceil(rate) as u64;
            next.map(|t| t.max(free).max(now + u64::from(!sent)))
        } else {
            next.map(|t| t.max(now + u64::from(!sent)))
        };
        if let Some(t) = next {
            if h.wake_at.map_or(true, |w| t < w || w < now) {
                h.wake_at = Some(t);
                self.queue.push(t, Event::NicWake { host });
            }
        }
        if sent {
            self.deliver(peer, at, buf);
        } else {
            self.buffers.push(buf);
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
