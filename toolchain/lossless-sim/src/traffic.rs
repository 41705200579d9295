//! Hosts' RDMA traffic: roce-host's own [`Endpoint`] (RC queue pairs, go-back-N, PFC reception,
//! DCQCN notification and reaction points, NIC pacing at the link rate) on the virtual clock,
//! and perftest-style senders on top of it. The endpoint is pure, time passed in; the simulator
//! hands it received frames, takes what it transmits and wakes it when it asks
//! ([`Endpoint::next_wakeup`]). What perftest's TCP exchange does (QP numbers, PSNs, buffer
//! keys) is done here directly.

use roce_host::dcqcn::DcqcnConfig;
use roce_host::perftest::BwReport;
use roce_host::{
    Completion, Endpoint, EndpointConfig, Incoming, Peer, WcStatus, WorkRequest, WrOp,
};

/// Senders start at a random offset below this (from `--seed`): processes on different hosts
/// never start in the same nanosecond, and in lockstep they would share every queue alike.
pub const START_JITTER_NS: u64 = 1_000;

/// perftest's default tx-depth (WRITEs in flight per QP), as the lab's write_bw runs.
pub const TX_DEPTH: u32 = 128;

/// The NIC's parameters beside the link rate.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct NicParams {
    /// RoCE path MTU (payload bytes per packet).
    pub mtu: usize,
    pub dscp: u8,
    /// DCQCN on: ECT(0), CNPs for CE, rate reduction on CNPs.
    pub dcqcn: bool,
    /// The NIC's minimum interval between two CNPs for one QP (seed 003: 1 us on real NICs).
    pub cnp_interval_ns: u64,
    /// The reaction point's per-flow minimum rate (seed 003: 45 Mb/s on real NICs).
    pub min_rate_bps: f64,
    /// perftest's retransmission timeout (IB local ACK timeout 14: 67 ms).
    pub retry_timeout_ns: u64,
    /// The first QP number (its UDP source port, hence its ECMP path, derives from it).
    pub qpn_base: u32,
}

impl NicParams {
    /// roce-host's defaults: perftest's timeout, DCQCN on with the paper's 50 us CNP interval
    /// and 1 Mb/s floor.
    pub fn new(mtu: usize, dscp: u8) -> NicParams {
        NicParams {
            mtu,
            dscp,
            dcqcn: true,
            cnp_interval_ns: 50_000,
            min_rate_bps: 1e6,
            retry_timeout_ns: 67_108_864,
            qpn_base: 0x100,
        }
    }

    /// `by_reference`: data payloads leave as references to the endpoint's memory
    /// ([`roce_host::PayloadRef`]), not as bytes.
    pub fn endpoint(
        &self,
        mac: [u8; 6],
        ip: [u8; 4],
        rate_bps: u64,
        by_reference: bool,
    ) -> Endpoint {
        let mut cfg = EndpointConfig::new(mac, ip);
        cfg.payload_by_reference = by_reference;
        cfg.rate_bps = rate_bps;
        cfg.mtu = self.mtu;
        cfg.dscp = self.dscp;
        cfg.ecn = self.dcqcn;
        cfg.retry_timeout_ns = self.retry_timeout_ns;
        cfg.qpn_base = self.qpn_base;
        cfg.dcqcn = self.dcqcn.then(|| DcqcnConfig {
            cnp_interval_ns: self.cnp_interval_ns,
            min_rate_bps: self.min_rate_bps,
            ..DcqcnConfig::paper(rate_bps as f64)
        });
        Endpoint::new(cfg)
    }
}

/// One requester QP of a sender and where its WRITEs land.
#[derive(Debug, Clone, Copy)]
struct Flow {
    qpn: u32,
    remote_va: u64,
    rkey: u32,
    posted: u64,
    outstanding: u32,
}

/// perftest write_bw from one host: `iters` messages of `size` bytes per QP, at most `depth`
/// in flight per QP (depth 1: seed 003's one message in flight per QP).
#[derive(Debug)]
pub struct Sender {
    pub host: usize,
    pub size: usize,
    pub iters: u64,
    pub depth: u32,
    pub start_ns: u64,
    started: bool,
    flows: Vec<Flow>,
    /// Times of every post and every completion, in the order they happened (perftest's
    /// accounting, [`BwReport::compute`]).
    pub posted_ns: Vec<u64>,
    pub completed_ns: Vec<u64>,
    /// Per message: completion minus post.
    pub latency_ns: Vec<u64>,
    /// Per message: completion minus its first packet's departure from the NIC (the network's
    /// part of the latency, without the wait in the NIC).
    pub wire_latency_ns: Vec<u64>,
    pub failed: u64,
    /// Runs beside the other applications and stops posting when they are done (perftest's
    /// write_bw -D, long enough to cover a write_lat beside it).
    pub background: bool,
    /// A latency probe: its messages are the measured latency, tallied apart from the load's
    /// (seed 003's "send one message from a sender to the receiver iteratively" beside the
    /// background QPs).
    pub probe: bool,
    stopped: bool,
}

impl Sender {
    pub fn new(host: usize, size: usize, iters: u64, depth: u32, start_ns: u64) -> Sender {
        Sender {
            host,
            size,
            iters,
            depth,
            start_ns,
            started: false,
            flows: Vec::new(),
            posted_ns: Vec::new(),
            completed_ns: Vec::new(),
            latency_ns: Vec::new(),
            wire_latency_ns: Vec::new(),
            failed: 0,
            background: false,
            probe: false,
            stopped: false,
        }
    }

    /// Stops posting; what is in flight still completes.
    pub fn stop(&mut self) {
        self.stopped = true;
    }

    /// Connects a new requester QP on `ep` to a new responder QP on `peer_ep`. `gateway_mac` /
    /// `peer_gateway_mac`: where each side sends (the router in front of it).
    pub fn connect(
        &mut self,
        ep: &mut Endpoint,
        gateway_mac: [u8; 6],
        peer_ep: &mut Endpoint,
        peer_gateway_mac: [u8; 6],
    ) {
        let local = ep.create_qp(self.size, 0);
        let remote = peer_ep.create_qp(self.size, 0);
        let (Some(li), Some(ri)) = (ep.qp_info(local), peer_ep.qp_info(remote)) else {
            return;
        };
        let (ip, peer_ip) = (ep.config().ip, peer_ep.config().ip);
        // Both QPs were just created, so connecting cannot fail.
        let _ = ep.connect(
            local,
            Peer {
                ip: peer_ip,
                mac: gateway_mac,
                qp: ri,
            },
        );
        let _ = peer_ep.connect(
            remote,
            Peer {
                ip,
                mac: peer_gateway_mac,
                qp: li,
            },
        );
        self.flows.push(Flow {
            qpn: local,
            remote_va: ri.va,
            rkey: ri.rkey,
            posted: 0,
            outstanding: 0,
        });
    }

    pub fn done(&self) -> bool {
        self.started
            && self.flows.iter().all(|f| {
                f.outstanding == 0 && (f.posted == self.iters || self.stopped || self.failed > 0)
            })
    }

    fn post(&mut self, now: u64, ep: &mut Endpoint, i: usize) {
        let f = &mut self.flows[i];
        while !self.stopped && f.outstanding < self.depth && f.posted < self.iters {
            let wr = WorkRequest {
                wr_id: f.posted,
                op: WrOp::Write {
                    remote_va: f.remote_va,
                    rkey: f.rkey,
                },
                local_offset: 0,
                len: self.size,
            };
            if ep.post(now, f.qpn, wr).is_err() {
                self.failed += 1;
                return;
            }
            f.posted += 1;
            f.outstanding += 1;
            self.posted_ns.push(now);
        }
    }

    /// Starts posting when its time has come, and posts again for every completion.
    pub fn step(&mut self, now: u64, ep: &mut Endpoint, completions: &[Completion]) {
        if !self.started && now >= self.start_ns {
            self.started = true;
            for i in 0..self.flows.len() {
                self.post(now, ep, i);
            }
        }
        for c in completions {
            let Some(i) = self.flows.iter().position(|f| f.qpn == c.qpn) else {
                continue;
            };
            self.flows[i].outstanding -= 1;
            if c.status != WcStatus::Success {
                self.failed += 1;
                continue;
            }
            self.completed_ns.push(c.completed_ns);
            self.latency_ns.push(c.completed_ns - c.posted_ns);
            self.wire_latency_ns
                .push(c.completed_ns - c.first_tx_ns.unwrap_or(c.posted_ns));
            self.post(now, ep, i);
        }
    }

    pub fn report(&self) -> BwReport {
        BwReport::compute(
            self.size as u64,
            self.completed_ns.len() as u64,
            &self.posted_ns,
            &self.completed_ns,
        )
    }
}

/// One side of perftest's write_lat ping-pong: the client WRITEs, the server WRITEs back when
/// the client's message has landed, the client samples half the round trip and WRITEs again.
#[derive(Debug)]
pub struct PingPong {
    pub host: usize,
    pub size: usize,
    /// Round trips still to start (client); `None` for the server.
    remaining: Option<u64>,
    pub start_ns: u64,
    started: bool,
    finished: bool,
    qpn: u32,
    remote_va: u64,
    rkey: u32,
    sent_ns: u64,
    /// Client: half of each round trip (perftest's one-way latency).
    pub samples_ns: Vec<u64>,
    pub failed: bool,
}

/// A host, its endpoint and the MAC it sends to (the router in front of it).
pub type Side<'a> = (usize, &'a mut Endpoint, [u8; 6]);

impl PingPong {
    /// A connected client/server pair: `iters` round trips of `size` bytes from `start_ns`.
    pub fn pair(
        iters: u64,
        size: usize,
        start_ns: u64,
        client: Side,
        server: Side,
    ) -> Option<(PingPong, PingPong)> {
        let (ch, cep, cgw) = client;
        let (sh, sep, sgw) = server;
        let c = cep.create_qp(size, 0);
        let s = sep.create_qp(size, 0);
        let (ci, si) = (cep.qp_info(c)?, sep.qp_info(s)?);
        let (cip, sip) = (cep.config().ip, sep.config().ip);
        let to_server = Peer {
            ip: sip,
            mac: cgw,
            qp: si,
        };
        let to_client = Peer {
            ip: cip,
            mac: sgw,
            qp: ci,
        };
        cep.connect(c, to_server).ok()?;
        sep.connect(s, to_client).ok()?;
        let side = |host, remaining, qpn, remote_va, rkey| PingPong {
            host,
            size,
            remaining,
            start_ns,
            started: false,
            finished: false,
            qpn,
            remote_va,
            rkey,
            sent_ns: 0,
            samples_ns: Vec::new(),
            failed: false,
        };
        Some((
            side(ch, Some(iters), c, si.va, si.rkey),
            side(sh, None, s, ci.va, ci.rkey),
        ))
    }

    pub fn is_client(&self) -> bool {
        self.remaining.is_some()
    }

    /// The client has all its samples (or failed); a server is never waited for.
    pub fn done(&self) -> bool {
        self.failed || self.finished || !self.is_client()
    }

    fn write(&mut self, now: u64, ep: &mut Endpoint) {
        let wr = WorkRequest {
            wr_id: 0,
            op: WrOp::Write {
                remote_va: self.remote_va,
                rkey: self.rkey,
            },
            local_offset: 0,
            len: self.size,
        };
        if ep.post(now, self.qpn, wr).is_err() {
            self.failed = true;
        }
        self.sent_ns = now;
    }

    fn next(&mut self, now: u64, ep: &mut Endpoint) {
        match &mut self.remaining {
            Some(0) => self.finished = true,
            Some(n) => {
                *n -= 1;
                self.write(now, ep);
            }
            None => {}
        }
    }

    /// Starts the client when its time has come; for every message that landed on its QP the
    /// server answers, the client samples and goes on. Completions of its own WRITEs matter
    /// only when they fail.
    pub fn step(
        &mut self,
        now: u64,
        ep: &mut Endpoint,
        incoming: &[Incoming],
        completions: &[Completion],
    ) {
        if self.is_client() && !self.started && now >= self.start_ns {
            self.started = true;
            self.next(now, ep);
        }
        if completions
            .iter()
            .any(|c| c.qpn == self.qpn && c.status != WcStatus::Success)
        {
            self.failed = true;
        }
        let qpn = self.qpn;
        for _ in incoming.iter().filter(|i| i.qpn == qpn) {
            if self.is_client() {
                self.samples_ns.push((now - self.sent_ns) / 2);
                self.next(now, ep);
            } else {
                self.write(now, ep);
            }
        }
    }
}
