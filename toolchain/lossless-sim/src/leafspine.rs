//! Seed 003's remote PFC test (`kind: leafspine`): a 7-to-1 incast of RoCE (DCQCN on, one
//! message in flight per QP, iterated) beside TCP (iperf3 at its share of the line) in another
//! queue, over the experiment's mixes, message sizes and flows per sender. One run is one
//! config case (`sfc=off` / `sfc=on`, the lab's `configdb.case_variants`); its rows run one
//! after another, each on fresh endpoints and connections, the fabric drained between them.
//!
//! What a mix means is the lab runner's (`topo/lossless_topo/experiments.py`): RoCE:TCP `r:t`
//! gives TCP `t / (r + t)` of the receiver's line rate, split evenly over the senders' iperf3
//! clients (`-b`); RoCE is not limited, its QPs post again as each message completes. The
//! latency is perftest's per message (completion minus post). Without `latency_probe` it is
//! averaged over every message of every sender's QPs, as the lab averages its `--samples`
//! files. With it (seed 003's reading, README.md): those QPs are the background load and the
//! row's latency is that of one more QP on the probe host, one message in flight, posting again
//! as each completes until the load is done; the load's own average is reported beside it.

use crate::error::ExperimentError;
use crate::net::Sim;
use crate::results::{table, Measurement};
use crate::tally::{tally, Tally};
use crate::tcp::{Addressing, Source, TcpParams};
use crate::traffic::{NicParams, Sender, START_JITTER_NS};
use roce_host::perftest::LatReport;
use serde::Deserialize;

/// The leafspine section of a topology file, quick overrides applied.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Leafspine {
    pub kind: String,
    pub receiver: String,
    pub senders: Vec<String>,
    pub roce_priority: u8,
    pub tcp_priority: u8,
    /// The TCP hosts' congestion control: "newreno" (default) or "dctcp" (RFC 8257).
    #[serde(default)]
    pub tcp_cc: Option<String>,
    pub mixes: Vec<String>,
    pub flows_per_sender: Vec<u32>,
    pub sizes: Vec<usize>,
    /// Messages per QP.
    pub iters: u64,
    /// The lab's iperf3 duration; here TCP runs from [`TCP_LEAD_NS`] before RoCE until RoCE
    /// is done.
    pub seconds: u64,
    pub ecn: serde_json::Value,
    pub sfc_threshold_kmax: u64,
    /// The NICs' minimum CNP interval and per-flow DCQCN floor (seed 003: 1 us, 45 Mb/s);
    /// the command line's `--cnp-interval-ns` / `--min-rate-mbps` override them.
    pub nic_cnp_interval_ns: Option<u64>,
    pub nic_min_rate_mbps: Option<f64>,
    #[serde(default)]
    pub host_latency_ns: Option<serde_json::Value>,
    /// The sender whose extra QP carries the latency probe; `None`: the latency is the flows'.
    #[serde(default)]
    pub latency_probe: Option<String>,
    #[serde(default)]
    pub quick: Option<serde_json::Value>,
}

/// One row: RoCE:TCP mix, message size, QPs per sender.
#[derive(Debug, Clone)]
pub struct Row {
    pub mix: String,
    pub roce: u64,
    pub tcp: u64,
    pub size: usize,
    pub flows: u32,
}

/// iperf3 starts this long before RoCE, so TCP is flowing when the measured messages are.
pub const TCP_LEAD_NS: u64 = 200_000;
/// Virtual time after a row for what is still queued to leave the fabric (32 MB at 25G is
/// about 10 ms).
pub const DRAIN_NS: u64 = 20_000_000;
/// The lab's interfaces carry the switches' port MTU (configdb.PORT_MTU): TCP's MSS is 9060.
pub const HOST_MTU: usize = 9100;
/// iperf3's first server port (the lab's runner: one server per sender from 5201).
const IPERF_PORT: u16 = 5201;
/// roce-host's RoCE DSCP within a priority (the lab's runner: priority x 8 + 2).
pub const DSCP_IN_PRIORITY: u8 = 2;

/// Seed 003's average latency (us): (remote PFC, size, flows per sender, mix).
const SEED003_US: &[(bool, usize, u32, &str, f64)] = &[
    (false, 1024, 8, "9:1", 7.99),
    (false, 1024, 8, "7:3", 16.99),
    (false, 1024, 8, "5:5", 6.38),
    (false, 1024, 8, "3:7", 10.26),
    (false, 1024, 8, "1:9", 50.17),
    (false, 1024, 256, "9:1", 708.31),
    (false, 1024, 256, "7:3", 919.01),
    (false, 1024, 256, "5:5", 1301.85),
    (false, 1024, 256, "3:7", 2182.31),
    (false, 1024, 256, "1:9", 6616.12),
    (false, 4096, 8, "9:1", 10.99),
    (false, 4096, 8, "7:3", 13.86),
    (false, 4096, 8, "5:5", 13.56),
    (false, 4096, 8, "3:7", 18.51),
    (false, 4096, 8, "1:9", 7067.3),
    (false, 4096, 256, "9:1", 759.36),
    (false, 4096, 256, "7:3", 995.37),
    (false, 4096, 256, "5:5", 1402.04),
    (false, 4096, 256, "3:7", 2359.13),
    (false, 4096, 256, "1:9", 7100.04),
    (true, 1024, 8, "9:1", 13.51),
    (true, 1024, 8, "7:3", 9.14),
    (true, 1024, 8, "5:5", 7.36),
    (true, 1024, 8, "3:7", 8.9),
    (true, 1024, 8, "1:9", 43.16),
    (true, 1024, 256, "9:1", 160.6),
    (true, 1024, 256, "7:3", 148.32),
    (true, 1024, 256, "5:5", 144.64),
    (true, 1024, 256, "3:7", 62.3),
    (true, 1024, 256, "1:9", 182.67),
    (true, 4096, 8, "9:1", 14.21),
    (true, 4096, 8, "7:3", 12.46),
    (true, 4096, 8, "5:5", 14.72),
    (true, 4096, 8, "3:7", 14.33),
    (true, 4096, 8, "1:9", 58.74),
    (true, 4096, 256, "9:1", 89.1),
    (true, 4096, 256, "7:3", 117.85),
    (true, 4096, 256, "5:5", 118.03),
    (true, 4096, 256, "3:7", 80.98),
    (true, 4096, 256, "1:9", 664.01),
];

pub fn seed_us(remote_pfc: bool, row: &Row) -> Option<f64> {
    SEED003_US
        .iter()
        .find(|s| s.0 == remote_pfc && s.1 == row.size && s.2 == row.flows && s.3 == row.mix)
        .map(|s| s.4)
}

impl Leafspine {
    pub fn parse(doc: &serde_json::Value) -> Result<Leafspine, ExperimentError> {
        let ls: Leafspine = serde_json::from_value(doc.clone()).map_err(ExperimentError::Shape)?;
        ls.rows()?;
        ls.tcp_params()?;
        Ok(ls)
    }

    /// The TCP hosts' parameters: the lab's port MTU, the TCP priority's DSCP, `tcp_cc`.
    pub fn tcp_params(&self) -> Result<TcpParams, ExperimentError> {
        let p = TcpParams::new(HOST_MTU, self.tcp_priority * 8);
        match self.tcp_cc.as_deref() {
            None | Some("newreno") => Ok(p),
            Some("dctcp") => Ok(p.with_dctcp()),
            Some(other) => Err(ExperimentError::CongestionControl { name: other.into() }),
        }
    }

    /// The rows in the lab's order (size, then flows, then mix).
    pub fn rows(&self) -> Result<Vec<Row>, ExperimentError> {
        let mut rows = Vec::new();
        for &size in &self.sizes {
            for &flows in &self.flows_per_sender {
                for (i, mix) in self.mixes.iter().enumerate() {
                    let bad = || ExperimentError::Mix {
                        index: i,
                        mix: mix.clone(),
                    };
                    let (r, t) = mix.split_once(':').ok_or_else(bad)?;
                    let (roce, tcp) = (
                        r.trim().parse().map_err(|_| bad())?,
                        t.trim().parse().map_err(|_| bad())?,
                    );
                    if roce + tcp == 0u64 {
                        return Err(bad());
                    }
                    rows.push(Row {
                        mix: mix.clone(),
                        roce,
                        tcp,
                        size,
                        flows,
                    });
                }
            }
        }
        Ok(rows)
    }
}

/// PFC frames since the row started, per switch that sent them, counted where they arrived
/// (switch ports; host NICs are the row's own).
pub fn pauses_by_sender(sim: &Sim) -> serde_json::Map<String, serde_json::Value> {
    pause_frames(sim).0
}

/// Every PFC frame sent since the row started, by switches and hosts alike.
pub fn pauses_tx(sim: &Sim) -> u64 {
    pauses_by_sender(sim)
        .values()
        .filter_map(|v| v.as_u64())
        .sum()
}

/// PFC frames since the row started: per switch that sent them, and per switch or host that
/// received them. Both are counted at the receiving ports, so a frame is in each map once.
fn pause_frames(
    sim: &Sim,
) -> (
    serde_json::Map<String, serde_json::Value>,
    serde_json::Map<String, serde_json::Value>,
) {
    let now = sim.now_ns();
    let mut sent = std::collections::BTreeMap::<String, u64>::new();
    let mut received = std::collections::BTreeMap::<String, u64>::new();
    for (i, sw) in sim.switches.iter().enumerate() {
        let Some(tm) = sw.core.tm() else { continue };
        for p in &tm.stats(now).ports {
            let n = p.pfc_rx.iter().sum::<u64>() + p.pause_rx;
            if let Some(from) = sim.switch_peer(i, p.port) {
                *sent.entry(from).or_default() += n;
            }
            *received.entry(sw.name.clone()).or_default() += n;
        }
    }
    for (h, host) in sim.hosts.iter().enumerate() {
        let (Some(nic), Some((s, _))) = (&host.nic, sim.host_attachment(h)) else {
            continue;
        };
        let n = nic.ep.pause_counters().rx_pfc_frames;
        *sent.entry(sim.switches[s].name.clone()).or_default() += n;
        *received.entry(host.name.clone()).or_default() += n;
    }
    let nonzero = |m: std::collections::BTreeMap<String, u64>| {
        m.into_iter()
            .filter(|(_, n)| *n > 0)
            .map(|(k, n)| (k, n.into()))
            .collect()
    };
    (nonzero(sent), nonzero(received))
}

/// The receiver's port on its switch (the incast's congestion point): per queue, Current,
/// Peak and Average since the row started, in cells and KB, as seed 003 prints it.
pub fn queue_usage(sim: &Sim, ls: &Leafspine) -> Vec<serde_json::Value> {
    let now = sim.now_ns();
    let Some((s, port)) = sim
        .host_index(&ls.receiver)
        .and_then(|h| sim.host_attachment(h))
    else {
        return Vec::new();
    };
    let Some(tm) = sim.switches[s].core.tm() else {
        return Vec::new();
    };
    let stats = tm.stats(now);
    let Some(p) = stats.ports.iter().find(|p| p.port == port) else {
        return Vec::new();
    };
    p.queues
        .iter()
        .map(|q| {
            serde_json::json!({
                "queue": q.queue,
                "current_cells": q.depth_cells, "current_kb": q.depth_bytes / 1024,
                "peak_cells": q.peak_cells, "peak_kb": q.peak_bytes / 1024,
                "average_cells": q.avg_cells.round(), "average_kb": (q.avg_bytes / 1024.0).round(),
            })
        })
        .collect()
}

/// Zeroes every switch's counters and watermarks (SONiC clear), so a row's figures are its
/// own.
pub fn clear_counters(sim: &mut Sim) {
    let now = sim.now_ns();
    for s in &mut sim.switches {
        s.core.clear(now);
    }
}

/// Sets up one row from `start_ns`: fresh endpoints on every host (QP numbers from `rng`, so
/// their UDP source ports and ECMP paths follow `--seed`), `flows` QPs per sender to the
/// receiver at depth 1, the latency probe's QP (depth 1, as long as they run) on its sender,
/// and one iperf3-like TCP connection per sender at its share of the line, started
/// [`TCP_LEAD_NS`] before RoCE.
pub fn setup_row(
    sim: &mut Sim,
    ls: &Leafspine,
    row: &Row,
    nic: &NicParams,
    start_ns: u64,
    rng: &mut fastrand::Rng,
) -> Result<(), ExperimentError> {
    let host = |field: String, name: &str| {
        sim.host_index(name).ok_or(ExperimentError::UnknownHost {
            field,
            host: name.into(),
        })
    };
    let recv = host("receiver".into(), &ls.receiver)?;
    let mut senders = Vec::new();
    for (i, s) in ls.senders.iter().enumerate() {
        let h = host(format!("senders[{i}]"), s)?;
        if h == recv || senders.contains(&h) {
            return Err(ExperimentError::SenderRepeated {
                index: i,
                host: s.clone(),
            });
        }
        senders.push(h);
    }
    let probe = match &ls.latency_probe {
        None => None,
        Some(p) => {
            let h = host("latency_probe".into(), p)?;
            if !senders.contains(&h) {
                return Err(ExperimentError::ProbeNotSender { host: p.clone() });
            }
            Some(h)
        }
    };
    let rate = sim
        .host_link(recv)
        .map(|l| l.rate_bps)
        .ok_or(ExperimentError::ReceiverUnlinked)?;
    for &h in senders.iter().chain([&recv]) {
        // QP numbers in steps of 2^14 keep each host's range apart and its ports spread.
        let qpn_base = 0x100 + (rng.u32(0..1 << 9) << 14);
        sim.set_nic(h, &NicParams { qpn_base, ..*nic });
        sim.hosts[h].tcp.clear();
    }
    let roce_start = start_ns + TCP_LEAD_NS;
    let tcp_rate = rate as u128 * u128::from(row.tcp) / u128::from(row.roce + row.tcp);
    let per_sender = (tcp_rate / senders.len() as u128) as u64;
    let tcp = ls.tcp_params()?;
    for (i, &s) in senders.iter().enumerate() {
        let start = roce_start + rng.u64(0..START_JITTER_NS);
        let mut sender = Sender::new(s, row.size, ls.iters, 1, start);
        let (gw, peer_gw) = (sim.hosts[s].gateway_mac, sim.hosts[recv].gateway_mac);
        if let Some((a, b)) = sim.two_nics(s, recv) {
            for _ in 0..row.flows {
                sender.connect(&mut a.ep, gw, &mut b.ep, peer_gw);
            }
        }
        sim.add_sender(s, sender);
        if probe == Some(s) {
            let mut p = Sender::new(s, row.size, u64::MAX, 1, start);
            p.background = true;
            p.probe = true;
            if let Some((a, b)) = sim.two_nics(s, recv) {
                p.connect(&mut a.ep, gw, &mut b.ep, peer_gw);
            }
            sim.add_sender(s, p);
        }
        sim.wake_nic(s, start);
        if per_sender > 0 {
            let addr = Addressing {
                src_mac: [0; 6],
                dst_mac: [0; 6],
                src_ip: [0; 4],
                dst_ip: [0; 4],
                src_port: rng.u16(32_768..61_000),
                dst_port: IPERF_PORT + i as u16,
                iss: rng.u32(..),
                irs: rng.u32(..),
            };
            let mut src = Source::new(start_ns, Some(per_sender), None);
            src.background = true;
            sim.connect_tcp(s, recv, addr, tcp, src);
        }
    }
    Ok(())
}

/// The row's measurement: perftest latency of the probe's messages (or, without a probe, of
/// every RoCE message) and of the flows' beside it, what the fabric and the hosts' mechanisms
/// did during it, and TCP's goodput.
pub fn row_results(
    sim: &Sim,
    ls: &Leafspine,
    row: &Row,
    remote_pfc: bool,
    start_ns: u64,
) -> Measurement {
    let (pauses, pauses_rx) = pause_frames(sim);
    // Every CNP a sender took is one the receiver's notification point sent.
    let t = tally(sim);
    let Tally {
        posted,
        completed,
        failed,
        latency_ns: ref latencies,
        wire_latency_ns: ref wire,
        last_completion,
        retx,
        ..
    } = t;
    let mut tcp_bytes = 0;
    let (mut tcp_retx, mut tcp_timeouts, mut tcp_ce, mut tcp_reductions) = (0, 0, 0, 0);
    for c in sim.hosts.iter().flat_map(|h| &h.tcp) {
        let s = c.stats();
        tcp_bytes += s.rx_bytes;
        tcp_retx += s.retransmits;
        tcp_timeouts += s.timeouts;
        tcp_ce += s.rx_ce;
        tcp_reductions += s.ecn_reductions;
    }
    let queues = queue_usage(sim, ls);
    // The congested port's queue of a priority (its queue, by the lab's DSCP_TO_TC_MAP), KB.
    let queue_kb = |prio: u8, k: &str| {
        queues
            .iter()
            .find(|q| q["queue"] == u64::from(prio))
            .and_then(|q| q[k].as_f64())
    };
    let span = last_completion.saturating_sub(start_ns);
    let tcp_mbps = if span > 0 {
        tcp_bytes as f64 * 8.0 * 1e3 / span as f64
    } else {
        0.0
    };
    let mean_us = |v: &[u64]| {
        if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<u64>() as f64 / v.len() as f64 / 1000.0
        }
    };
    let report = |v: &[u64]| LatReport::compute(row.size as u64, &mut v.to_vec());
    let flows_lat = report(latencies);
    let wire_lat = report(wire);
    let (measured, measured_wire) = t.measured(ls.latency_probe.is_some());
    let lat = report(measured);
    let flows = format!("{}x{}", row.flows, ls.senders.len());
    let mut values = serde_json::json!({
            "latency_from": if ls.latency_probe.is_some() { "probe" } else { "flows" },
            "p50_latency_us": lat.t_typical_usec,
            "latency_samples": measured.len(),
            "avg_wire_latency_us": mean_us(measured_wire),
            "p99_wire_latency_us": report(measured_wire).p99_usec,
            "flows_avg_latency_us": mean_us(latencies),
            "flows_p99_latency_us": flows_lat.p99_usec,
            "flows_avg_wire_latency_us": mean_us(wire),
            "flows_p99_wire_latency_us": wire_lat.p99_usec,
            // The packet generator's PFC refresh packets the pipeline drops by design are not
            // traffic lost.
            "drops_pipeline": sim.switches.iter().map(|s| {
                let e = s.core.engine_stats();
                (e.dropped_ingress + e.dropped_egress).saturating_sub(s.core.counters().pktgen_dropped)
            }).sum::<u64>(),
            "drops_tm": sim.switches.iter().filter_map(|s| s.core.tm()).map(|tm| {
                tm.stats(sim.now_ns()).ports.iter().map(|p| {
                    p.queues.iter().map(|q| q.drops.total()).sum::<u64>()
                }).sum::<u64>()
            }).sum::<u64>(),
            "pauses_tx_by_switch": pauses,
            "pauses_rx_by_node": pauses_rx,
            "receiver_port_queues": queues,
            "roce_queue_avg_kb": queue_kb(ls.roce_priority, "average_kb"),
            "tcp_queue_avg_kb": queue_kb(ls.tcp_priority, "average_kb"),
            "tcp_queue_peak_kb": queue_kb(ls.tcp_priority, "peak_kb"),
            // TCP segments that arrived CE-marked, and the senders' window reductions for them
            // (TCP is ECN-capable only with DCTCP, `tcp_cc`).
            "tcp_ce_marked": tcp_ce,
            "tcp_ecn_reductions": tcp_reductions,
            "tcp_throughput_mbps": tcp_mbps,
            "tcp_retransmits": tcp_retx,
            "tcp_timeouts": tcp_timeouts,
            "messages_posted": posted,
            "messages_completed": completed,
            "retransmissions": retx,
            "qps_failed": failed,
            "duration_us": span as f64 / 1000.0,
            "seed_avg_latency_us": seed_us(remote_pfc, row),
    });
    // avg_latency_us, p99_latency_us, pauses_tx, cnps and ecn_marked (CE-marked RoCE packets
    // the receiver took; the row's endpoints are fresh) by the route every experiment takes.
    t.fill_common(&mut values, &lat, pauses_tx(sim));
    Measurement {
        case: format!(
            "sfc={} {} {}B {flows}",
            if remote_pfc { "on" } else { "off" },
            row.mix,
            row.size
        ),
        params: serde_json::json!({"roce_tcp": row.mix, "size": row.size, "flows": flows,
            "remote_pfc": remote_pfc, "iters": ls.iters}),
        values,
        latency_us: measured.iter().map(|&l| l as f64 / 1000.0).collect(),
        throughput: serde_json::Map::new(),
    }
}

/// A row's figures in the printed tables (us).
pub struct RowFigures {
    pub row: Row,
    /// The row's latency (the probe's, or the flows' without one) and its part from the wire.
    pub avg: f64,
    pub wire: f64,
    /// The flows' own perftest average.
    pub flows_avg: f64,
}

impl RowFigures {
    pub fn of(row: Row, m: &Measurement) -> RowFigures {
        let v = |k: &str| m.values[k].as_f64().unwrap_or(0.0);
        RowFigures {
            row,
            avg: v("avg_latency_us"),
            wire: v("avg_wire_latency_us"),
            flows_avg: v("flows_avg_latency_us"),
        }
    }
}

/// Seed 003's tables for one remote PFC setting: one per (size, flows), the seed's figure
/// beside each simulated one.
pub fn tables(remote_pfc: bool, rows: &[RowFigures], senders: usize) -> Vec<String> {
    let mut keys: Vec<(usize, u32)> = rows.iter().map(|f| (f.row.size, f.row.flows)).collect();
    keys.dedup();
    keys.iter()
        .map(|&(size, flows)| {
            let body: Vec<Vec<String>> = rows
                .iter()
                .filter(|f| f.row.size == size && f.row.flows == flows)
                .map(|f| {
                    let r = &f.row;
                    vec![
                        r.mix.clone(),
                        format!("{:.2}", r.size as f64),
                        format!("{}*{senders}", r.flows),
                        format!("{:.2}", f.avg),
                        seed_us(remote_pfc, r).map_or("-".into(), |v| format!("{v}")),
                        format!("{:.2}", f.wire),
                        format!("{:.2}", f.flows_avg),
                    ]
                })
                .collect();
            table(
                &format!(
                    "{} Remote PFC (us, virtual time; seed 003 beside)",
                    if remote_pfc { "With" } else { "Without" }
                ),
                &[
                    "roce:tcp",
                    "Size(B)",
                    "Flow number",
                    "Avg Latency",
                    "seed 003",
                    "Avg from wire",
                    "Flows' avg",
                ],
                &body,
            )
        })
        .collect()
}
