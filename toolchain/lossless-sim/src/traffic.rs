//! Hosts' RDMA traffic: roce-host's own [`Endpoint`] (RC queue pairs, go-back-N, PFC reception,
//! DCQCN notification and reaction points, NIC pacing at the link rate) on the virtual clock,
//! and perftest-style senders on top of it. The endpoint is pure, time passed in; the simulator
//! hands it received frames, takes what it transmits and wakes it when it asks
//! ([`Endpoint::next_wakeup`]). What perftest's TCP exchange does (QP numbers, PSNs, buffer
//! keys) is done here directly.

use roce_host::dcqcn::DcqcnConfig;
use roce_host::perftest::BwReport;
use roce_host::{Completion, Endpoint, EndpointConfig, Peer, WcStatus, WorkRequest, WrOp};

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
        }
    }

    pub fn endpoint(&self, mac: [u8; 6], ip: [u8; 4], rate_bps: u64) -> Endpoint {
        let mut cfg = EndpointConfig::new(mac, ip);
        cfg.rate_bps = rate_bps;
        cfg.mtu = self.mtu;
        cfg.dscp = self.dscp;
        cfg.ecn = self.dcqcn;
        cfg.retry_timeout_ns = self.retry_timeout_ns;
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
    pub failed: u64,
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
            failed: 0,
        }
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
            && self
                .flows
                .iter()
                .all(|f| f.outstanding == 0 && (f.posted == self.iters || self.failed > 0))
    }

    fn post(&mut self, now: u64, ep: &mut Endpoint, i: usize) {
        let f = &mut self.flows[i];
        while f.outstanding < self.depth && f.posted < self.iters {
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
