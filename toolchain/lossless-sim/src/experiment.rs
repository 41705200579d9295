//! The topology's experiment on the simulated fabric: its hosts' traffic, and its results as the
//! lab reports them. So far seed 000's incast (`kind: incast`); the other kinds run the probes
//! (README.md, Missing).

use crate::fabric::Fabric;
use crate::net::Sim;
use crate::results::{table, Measurement};
use crate::traffic::{NicParams, Sender};
use roce_host::perftest::LatReport;
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
}

/// perftest's default tx-depth (WRITEs in flight per QP), as the lab's write_bw runs.
pub const TX_DEPTH: u32 = 128;

#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    #[error("experiment: {0}")]
    Parse(String),
    #[error("experiment.{field}: unknown host '{host}'")]
    UnknownHost { field: String, host: String },
}

/// What the run does.
pub enum Plan {
    Probes,
    Incast(Incast),
}

impl Plan {
    pub fn of(fabric: &Fabric) -> Result<Plan, ExperimentError> {
        match fabric.experiment.get("kind").and_then(|k| k.as_str()) {
            Some("incast") => {
                let mut doc = fabric.experiment.clone();
                if let Some(o) = doc.as_object_mut() {
                    // The lab's fields this traffic does not use.
                    for k in ["kind", "cases", "quick"] {
                        o.remove(k);
                    }
                }
                let inc: Incast = serde_json::from_value(doc)
                    .map_err(|e| ExperimentError::Parse(e.to_string()))?;
                Ok(Plan::Incast(inc))
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

/// Gives every host of the incast roce-host's endpoint and each sender one QP to the receiver.
pub fn setup_incast(
    sim: &mut Sim,
    inc: &Incast,
    nic: &NicParams,
    start_ns: u64,
) -> Result<(), ExperimentError> {
    let recv = host(sim, "receiver".into(), &inc.receiver)?;
    let mut senders = Vec::new();
    for (i, s) in inc.senders.iter().enumerate() {
        let h = host(sim, format!("senders[{i}]"), s)?;
        if h == recv || senders.contains(&h) {
            return Err(ExperimentError::Parse(format!(
                "senders[{i}]: '{s}' is the receiver or listed twice"
            )));
        }
        senders.push(h);
    }
    for &h in senders.iter().chain([&recv]) {
        sim.add_nic(h, nic);
    }
    for &s in &senders {
        let mut sender = Sender::new(s, inc.size, inc.iters, TX_DEPTH, start_ns);
        let (gw, peer_gw) = (sim.hosts[s].gateway_mac, sim.hosts[recv].gateway_mac);
        if let Some((a, b)) = sim.two_nics(s, recv) {
            sender.connect(&mut a.ep, gw, &mut b.ep, peer_gw);
        }
        sim.add_sender(s, sender);
        sim.wake_nic(s, start_ns);
    }
    Ok(())
}

/// The incast's measurement and table: perftest bandwidth per sender, message latency, what
/// PFC did and what was dropped on the lossless priority.
pub fn incast_results(sim: &Sim, inc: &Incast, case: &str) -> (Measurement, String) {
    let now = sim.now_ns();
    let prio = inc.priority as usize;
    let mut rows = Vec::new();
    let mut latencies: Vec<u64> = Vec::new();
    let (mut posted, mut completed, mut failed) = (0usize, 0usize, 0u64);
    for h in &sim.hosts {
        let Some(nic) = &h.nic else { continue };
        for s in &nic.senders {
            let bw = s.report();
            posted += s.posted_ns.len();
            completed += s.completed_ns.len();
            failed += s.failed;
            latencies.extend(&s.latency_ns);
            rows.push(vec![
                h.name.clone(),
                s.completed_ns.len().to_string(),
                format!("{:.2}", bw.bw_average_gbps),
            ]);
        }
    }
    let xoff_rx: u64 = sim
        .hosts
        .iter()
        .filter_map(|h| h.nic.as_ref())
        .map(|n| n.ep.pause_counters().rx_pfc_xoff[prio])
        .sum();
    let mut tm_drops = 0;
    for s in &sim.switches {
        if let Some(tm) = s.core.tm() {
            let st = tm.stats(now);
            for p in &st.ports {
                tm_drops += p.queues.get(prio).map_or(0, |q| q.drops.total());
            }
        }
    }
    let pipeline_drops: u64 = sim
        .switches
        .iter()
        .map(|s| s.core.engine_stats().dropped_ingress)
        .sum();
    let mut lat_us: Vec<u64> = latencies.clone();
    let lat = LatReport::compute(inc.size as u64, &mut lat_us);
    let m = Measurement {
        case: case.to_string(),
        params: serde_json::json!({"case": case, "size": inc.size, "iters": inc.iters,
            "senders": inc.senders.len(), "tx_depth": TX_DEPTH}),
        values: serde_json::json!({
            "messages_posted": posted,
            "messages_completed": completed,
            "qps_failed": failed,
            "pfc_xoff_rx": xoff_rx,
            "drops_lossless_tm": tm_drops,
            "drops_pipeline": pipeline_drops,
            "avg_latency_us": lat.t_avg_usec,
            "p99_latency_us": lat.p99_usec,
        }),
        latency_us: latencies.iter().map(|&l| l as f64 / 1000.0).collect(),
        throughput: serde_json::Map::new(),
    };
    let mut text = table(
        &format!(
            "Incast {}:1, {} B messages, case {case}: write_bw per sender (virtual time)",
            inc.senders.len(),
            inc.size
        ),
        &["sender", "messages", "BW average [Gb/s]"],
        &rows,
    );
    text.push_str(&format!(
        "\nmessage latency avg {:.2} us, p99 {:.2} us; XOFF received by hosts {xoff_rx}; \
         drops: pipeline {pipeline_drops}, traffic manager (priority {prio}) {tm_drops}; \
         QPs failed {failed}",
        lat.t_avg_usec, lat.p99_usec
    ));
    (m, text)
}
