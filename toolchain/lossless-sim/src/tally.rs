//! The hosts' counters summed over a run: what every experiment reports from.

use crate::net::Sim;
use roce_host::perftest::LatReport;

/// What every host's senders and endpoint did, summed: the figures the experiments share.
#[derive(Debug, Default)]
pub struct Tally {
    pub posted: usize,
    pub completed: usize,
    /// Senders with a failed QP.
    pub failed: u64,
    /// perftest's latency (completion - post) and the network's (completion - first packet
    /// out of the NIC) of every message.
    pub latency_ns: Vec<u64>,
    pub wire_latency_ns: Vec<u64>,
    /// The same for the latency probes' messages ([`crate::traffic::Sender::probe`]), which
    /// the figures above leave out.
    pub probe_latency_ns: Vec<u64>,
    pub probe_wire_latency_ns: Vec<u64>,
    pub first_post: u64,
    pub last_completion: u64,
    pub ce: u64,
    pub cnps: Cnps,
    pub xoff: u64,
    pub retx: u64,
    /// Retransmission timeouts (perftest's 67 ms): the drops go-back-N's NAK did not recover.
    pub timeouts: u64,
}

impl Tally {
    /// The samples a row reports as its latency, perftest's and the network's: the latency
    /// probe's where the run has one, every message's otherwise.
    pub fn measured(&self, probe: bool) -> (&[u64], &[u64]) {
        if probe {
            (&self.probe_latency_ns, &self.probe_wire_latency_ns)
        } else {
            (&self.latency_ns, &self.wire_latency_ns)
        }
    }

    /// Writes into `values` the figures every measurement holds under one set of names (the
    /// seed tables' columns, which the leaf-spine rows report), beside the names the lab's
    /// runner gives them for that experiment: `lat` is the case's latency and `pauses_tx` the
    /// PFC frames sent during it ([`crate::leafspine::pauses_tx`]); the CNPs as [`Cnps::fill`]
    /// writes them.
    pub fn fill_common(&self, values: &mut serde_json::Value, lat: &LatReport, pauses_tx: u64) {
        values["avg_latency_us"] = lat.t_avg_usec.into();
        values["p99_latency_us"] = lat.p99_usec.into();
        values["pauses_tx"] = pauses_tx.into();
        self.cnps.fill(values);
        values["ecn_marked"] = self.ce.into();
    }
}

/// CNPs the hosts' NICs took as reaction points (`rx`) and sent as notification points
/// (`tx`), every host's summed. Every measurement's `cnps` is `rx`, the senders' side, as the
/// lab's runner counts its `cnps_rx` (roce-host's `rx_cnps` over all hosts): CNPs that reached
/// a flow and could slow it. `tx` differs from it by the CNPs lost or still in flight, and in
/// the field test's cnp-rate part by the CNPs it sends itself.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Cnps {
    pub rx: u64,
    pub tx: u64,
}

impl Cnps {
    pub fn of(sim: &Sim) -> Cnps {
        let mut c = Cnps::default();
        for nic in sim.hosts.iter().filter_map(|h| h.nic.as_ref()) {
            let n = nic.ep.counters();
            c.rx += n.rx_cnps;
            c.tx += n.tx_cnps;
        }
        c
    }

    /// What was counted since `before` (the start of a measurement window).
    pub fn since(self, before: Cnps) -> Cnps {
        Cnps {
            rx: self.rx - before.rx,
            tx: self.tx - before.tx,
        }
    }

    /// `cnps` and `cnps_rx` (the same count, under issue 18's name and the lab runner's) and
    /// `cnps_tx`.
    pub fn fill(&self, values: &mut serde_json::Value) {
        values["cnps"] = self.rx.into();
        values["cnps_rx"] = self.rx.into();
        values["cnps_tx"] = self.tx.into();
    }
}

pub fn tally(sim: &Sim) -> Tally {
    let mut t = Tally {
        first_post: u64::MAX,
        ..Tally::default()
    };
    for nic in sim.hosts.iter().filter_map(|h| h.nic.as_ref()) {
        for s in &nic.senders {
            if s.probe {
                t.probe_latency_ns.extend(&s.latency_ns);
                t.probe_wire_latency_ns.extend(&s.wire_latency_ns);
                continue;
            }
            t.posted += s.posted_ns.len();
            t.completed += s.completed_ns.len();
            t.failed += u64::from(s.failed > 0);
            t.latency_ns.extend(&s.latency_ns);
            t.wire_latency_ns.extend(&s.wire_latency_ns);
            t.first_post = t
                .first_post
                .min(s.posted_ns.first().copied().unwrap_or(u64::MAX));
            t.last_completion = t
                .last_completion
                .max(s.completed_ns.last().copied().unwrap_or(0));
        }
        let c = nic.ep.counters();
        t.ce += c.rx_ce_marked;
        t.retx += c.tx_retransmitted_pkts;
        t.timeouts += c.retry_timeouts;
        t.xoff += nic.ep.pause_counters().rx_pfc_xoff.iter().sum::<u64>();
    }
    t.cnps = Cnps::of(sim);
    t
}
