//! The topology's experiment on the simulated fabric: its hosts' traffic, and its results as the
//! lab reports them: seed 000's incast (`kind: incast`), seed 001's head-of-line test
//! (`kind: prio-2to1`) and seed 003's remote PFC test (`kind: leafspine`, [`crate::leafspine`]).

use crate::error::ExperimentError;
use crate::fabric::Fabric;
use crate::net::Sim;
use crate::results::{table, Measurement};
use crate::tally::{tally, Tally};
use crate::traffic::{NicParams, PingPong, Sender, START_JITTER_NS, TX_DEPTH};
use roce_host::perftest::{BwReport, LatReport};
use serde::Deserialize;

/// The incast section of a topology file (topo/README.md), quick overrides applied.
#[derive(Debug, Deserialize)]
pub struct Incast {
    pub receiver: String,
    pub senders: Vec<String>,
    pub priority: u8,
    pub size: usize,
    pub iters: u64,
    pub roce_mtu: usize,
    pub cases: Vec<IncastCase>,
}

/// One configuration of the incast (config_db.json variant).
#[derive(Debug, Deserialize)]
pub struct IncastCase {
    pub name: String,
    pub buffers: String,
    pub pfc: bool,
}

/// The prio-2to1 section (seed 001): write_lat alone and beside write_bw, per case.
#[derive(Debug, Deserialize)]
pub struct Prio {
    pub lat_host: String,
    pub bw_host: String,
    pub receiver: String,
    pub lat_size: usize,
    pub lat_iters: u64,
    pub bw_size: usize,
    pub cases: Vec<PrioCase>,
}

#[derive(Debug, Deserialize)]
pub struct PrioCase {
    pub name: String,
    pub lat_priority: u8,
    pub bw_priority: Option<u8>,
}

/// Seed 001's write_lat figures (us): alone; then (4, 4) and (3, 4) with ECN on / off.
const SEED001_BASELINE_US: f64 = 3.22;
const SEED001_US: [(&str, f64, f64); 2] = [("same", 5.67, 15.48), ("different", 4.28, 5.64)];
/// write_bw runs this long before write_lat starts beside it, so that its queue has built up
/// (the lab waits until it flows).
pub const BW_LEAD_NS: u64 = 200_000;

/// What the run does.
pub enum Plan {
    Probes,
    Incast(Incast),
    Prio(Prio),
    Leafspine(crate::leafspine::Leafspine),
    FieldTest(crate::fieldtest::FieldTest),
}

impl Plan {
    pub fn of(fabric: &Fabric) -> Result<Plan, ExperimentError> {
        match fabric.experiment.get("kind").and_then(|k| k.as_str()) {
            Some("incast") => {
                let mut doc = fabric.experiment.clone();
                if let Some(o) = doc.as_object_mut() {
                    // The lab's fields this traffic does not use.
                    for k in ["kind", "quick"] {
                        o.remove(k);
                    }
                }
                let inc: Incast = serde_json::from_value(doc).map_err(ExperimentError::Shape)?;
                Ok(Plan::Incast(inc))
            }
            Some("prio-2to1") => serde_json::from_value(fabric.experiment.clone())
                .map(Plan::Prio)
                .map_err(ExperimentError::Shape),
            Some("leafspine") => {
                crate::leafspine::Leafspine::parse(&fabric.experiment).map(Plan::Leafspine)
            }
            Some("fieldtest") => {
                crate::fieldtest::FieldTest::parse(&fabric.experiment).map(Plan::FieldTest)
            }
            _ => Ok(Plan::Probes),
        }
    }
}

fn host(sim: &Sim, field: String, name: &str) -> Result<usize, ExperimentError> {
    sim.host_index(name).ok_or(ExperimentError::UnknownHost {
        field,
        host: name.into(),
    })
}

/// Gives every host of the incast roce-host's endpoint and each sender one QP to the receiver;
/// each sender starts at `start_ns` plus a jitter drawn from `rng`.
pub fn setup_incast(
    sim: &mut Sim,
    inc: &Incast,
    nic: &NicParams,
    start_ns: u64,
    rng: &mut fastrand::Rng,
) -> Result<(), ExperimentError> {
    let recv = host(sim, "receiver".into(), &inc.receiver)?;
    let mut senders = Vec::new();
    for (i, s) in inc.senders.iter().enumerate() {
        let h = host(sim, format!("senders[{i}]"), s)?;
        if h == recv || senders.contains(&h) {
            return Err(ExperimentError::SenderRepeated {
                index: i,
                host: s.clone(),
            });
        }
        senders.push(h);
    }
    for &h in senders.iter().chain([&recv]) {
        sim.set_nic(h, nic);
    }
    for &s in &senders {
        let start = start_ns + rng.u64(0..START_JITTER_NS);
        let mut sender = Sender::new(s, inc.size, inc.iters, TX_DEPTH, start);
        let (gw, peer_gw) = (sim.hosts[s].gateway_mac, sim.hosts[recv].gateway_mac);
        if let Some((a, b)) = sim.two_nics(s, recv) {
            sender.connect(&mut a.ep, gw, &mut b.ep, peer_gw);
        }
        sim.add_sender(s, sender);
        sim.wake_nic(s, start);
    }
    Ok(())
}

/// The incast's measurement and table, as the lab's runner reports them (same value names and
/// table layout): goodput over the run, message latency, drops on the lossless priority (the
/// pipeline's admission and the traffic manager), what the hosts' mechanisms did.
pub fn incast_results(sim: &Sim, inc: &Incast, case: &str) -> (Measurement, String) {
    let pfc = inc.cases.iter().any(|c| c.name == case && c.pfc);
    let now = sim.now_ns();
    let prio = inc.priority as usize;
    let mut per_sender = serde_json::Map::new();
    for h in &sim.hosts {
        for s in h.nic.iter().flat_map(|n| &n.senders) {
            per_sender.insert(h.name.clone(), serde_json::json!(s.report()));
        }
    }
    let t = tally(sim);
    let Tally {
        posted,
        completed,
        failed,
        latency_ns: ref latencies,
        first_post,
        last_completion,
        ce,
        xoff,
        retx,
        timeouts,
        ..
    } = t;
    let mut tm_drops = 0;
    for s in &sim.switches {
        if let Some(tm) = s.core.tm() {
            for p in &tm.stats(now).ports {
                tm_drops += p.queues.get(prio).map_or(0, |q| q.drops.total());
            }
        }
    }
    let pipeline_drops: u64 = sim
        .switches
        .iter()
        .map(|s| {
            s.core
                .engine_stats()
                .dropped_ingress
                .saturating_sub(s.core.counters().pktgen_dropped)
        })
        .sum();
    let span = last_completion.saturating_sub(first_post);
    let bw_mbps = if span > 0 {
        (completed * inc.size) as f64 * 8.0 * 1e3 / span as f64
    } else {
        0.0
    };
    let mut samples = latencies.clone();
    let lat = LatReport::compute(inc.size as u64, &mut samples);
    // Where the run is short beside perftest's timeout, a message this late waited for at
    // least one: the figure that decides the average when drops are recovered by timeouts.
    let timeout_ns = sim
        .hosts
        .iter()
        .find_map(|h| h.nic.as_ref())
        .map_or(u64::MAX, |n| n.ep.config().retry_timeout_ns);
    let over_timeout = latencies.iter().filter(|&&l| l >= timeout_ns).count();
    let mut m = Measurement {
        case: case.to_string(),
        params: serde_json::json!({"name": case, "pfc": pfc, "size": inc.size,
            "iters": inc.iters, "senders": inc.senders.len(), "tx_depth": TX_DEPTH}),
        values: serde_json::json!({
            "bw_mbps_nominal": bw_mbps,
            "latency_avg_us_nominal": lat.t_avg_usec,
            "messages_posted": posted,
            "messages_completed": completed,
            "drops_lossless": tm_drops + pipeline_drops,
            "drops_pipeline": pipeline_drops,
            "drops_tm": tm_drops,
            "ce_marked": ce,
            "pfc_xoff_rx": xoff,
            "retransmissions": retx,
            "retry_timeouts": timeouts,
            "messages_over_retry_timeout": over_timeout,
            "qps_failed": failed,
            "senders": per_sender,
        }),
        latency_us: latencies.iter().map(|&l| l as f64 / 1000.0).collect(),
        throughput: serde_json::Map::new(),
    };
    t.fill_common(&mut m.values, &lat, crate::leafspine::pauses_tx(sim));
    let row = vec![
        case.to_string(),
        if pfc { "on" } else { "off" }.to_string(),
        format!("{bw_mbps:.2}"),
        format!("{:.2}", lat.t_avg_usec),
        (tm_drops + pipeline_drops).to_string(),
        xoff.to_string(),
        format!("{completed}/{posted}"),
        failed.to_string(),
    ];
    let text = table(
        &format!(
            "{}-to-1 incast, priority {prio} (virtual time, nominal rates)",
            inc.senders.len()
        ),
        &[
            "profile",
            "PFC",
            "Bandwidth (Mbps, nominal)",
            "Latency (us)",
            "Drops",
            "XOFF at hosts",
            "Messages",
            "QPs failed",
        ],
        &[row],
    );
    (m, text)
}

/// One prio-2to1 case from `start_ns`: fresh endpoints marked for its priorities, write_lat
/// from the latency host to the receiver and, in the cases that have it, write_bw from the
/// bandwidth host to the receiver in the background, started [`BW_LEAD_NS`] earlier.
pub fn setup_prio_case(
    sim: &mut Sim,
    prio: &Prio,
    case: &PrioCase,
    nic: &NicParams,
    start_ns: u64,
) -> Result<(), ExperimentError> {
    let lat = host(sim, "lat_host".into(), &prio.lat_host)?;
    let recv = host(sim, "receiver".into(), &prio.receiver)?;
    let bw = host(sim, "bw_host".into(), &prio.bw_host)?;
    if lat == recv || bw == recv || lat == bw {
        return Err(ExperimentError::PrioHostsShared);
    }
    let lat_nic = NicParams {
        dscp: case.lat_priority * 8,
        ..*nic
    };
    sim.set_nic(lat, &lat_nic);
    sim.set_nic(recv, &lat_nic);
    let lat_start = start_ns + BW_LEAD_NS * u64::from(case.bw_priority.is_some());
    let (gl, gr) = (sim.hosts[lat].gateway_mac, sim.hosts[recv].gateway_mac);
    let pair = sim.two_nics(lat, recv).and_then(|(a, b)| {
        PingPong::pair(
            prio.lat_iters,
            prio.lat_size,
            lat_start,
            (lat, &mut a.ep, gl),
            (recv, &mut b.ep, gr),
        )
    });
    let Some((client, server)) = pair else {
        return Err(ExperimentError::Connect { what: "write_lat" });
    };
    sim.add_pingpong(lat, client);
    sim.add_pingpong(recv, server);
    sim.wake_nic(lat, lat_start);
    if let Some(p) = case.bw_priority {
        sim.set_nic(
            bw,
            &NicParams {
                dscp: p * 8,
                ..*nic
            },
        );
        let mut sender = Sender::new(bw, prio.bw_size, u64::MAX, TX_DEPTH, start_ns);
        sender.background = true;
        let gb = sim.hosts[bw].gateway_mac;
        if let Some((a, b)) = sim.two_nics(bw, recv) {
            sender.connect(&mut a.ep, gb, &mut b.ep, gr);
        }
        sim.add_sender(bw, sender);
        sim.wake_nic(bw, start_ns);
    }
    Ok(())
}

/// The case's write_lat report (and write_bw's beside it) as a measurement.
pub fn prio_case_results(sim: &Sim, prio: &Prio, case: &PrioCase, ecn: bool) -> Measurement {
    let nic = |name: &str| sim.host_index(name).and_then(|h| sim.hosts[h].nic.as_ref());
    let mut samples: Vec<u64> = nic(&prio.lat_host)
        .and_then(|n| n.pingpongs.first())
        .map_or(Vec::new(), |p| p.samples_ns.clone());
    let lat = LatReport::compute(prio.lat_size as u64, &mut samples);
    let bw: Option<BwReport> = case
        .bw_priority
        .and_then(|_| nic(&prio.bw_host)?.senders.first().map(Sender::report));
    let t = tally(sim);
    let Tally { ce, xoff, retx, .. } = t;
    let mut m = Measurement {
        case: format!("{} ecn={}", case.name, if ecn { "on" } else { "off" }),
        params: serde_json::json!({"ecn": ecn, "name": case.name,
            "lat_priority": case.lat_priority, "bw_priority": case.bw_priority}),
        values: serde_json::json!({
            "lat_t_avg_us_nominal": lat.t_avg_usec,
            "lat_t_typical_us_nominal": lat.t_typical_usec,
            "lat_iterations": lat.iterations,
            "bw_gbps": bw.map(|b| b.bw_average_gbps),
            "ce_marked": ce,
            "pfc_xoff_rx": xoff,
            "retransmissions": retx,
        }),
        latency_us: samples.iter().map(|&l| l as f64 / 1000.0).collect(),
        throughput: serde_json::Map::new(),
    };
    t.fill_common(&mut m.values, &lat, crate::leafspine::pauses_tx(sim));
    m
}

/// Seed 001's table for one ECN setting, the seed's figure beside each simulated one.
pub fn prio_table(prio: &Prio, ecn: bool, rows: &[(String, f64)]) -> String {
    let seed = |name: &str| {
        if name == "baseline" {
            return Some(SEED001_BASELINE_US);
        }
        SEED001_US
            .iter()
            .find(|(n, ..)| *n == name)
            .map(|&(_, on, off)| if ecn { on } else { off })
    };
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|(name, us)| {
            let case = prio.cases.iter().find(|c| &c.name == name);
            let pri = case.map_or(String::new(), |c| match c.bw_priority {
                Some(b) => format!("({}, {b})", c.lat_priority),
                None => format!("({}, -)", c.lat_priority),
            });
            vec![
                name.clone(),
                pri,
                format!("{us:.2}"),
                seed(name).map_or("-".into(), |v| format!("{v:.2}")),
            ]
        })
        .collect();
    table(
        &format!(
            "write_lat t_avg, ECN {} on the switch (us, virtual time; seed 001 beside)",
            if ecn { "enabled" } else { "disabled" }
        ),
        &["case", "(lat, bw) priorities", "simulated", "seed 001"],
        &body,
    )
}
