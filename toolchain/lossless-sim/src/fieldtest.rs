//! Seed 003's "issue in field test" and its two observed phenomena (`kind: fieldtest`), with
//! DCQCN alone (seed 003's ECN marking, no remote PFC), one config case per part:
//!
//! - `latency`: the field test's 9:1 RoCE:TCP 7-to-1 incast, run as seed 003's remote PFC rows
//!   ([`crate::leafspine`]: one message in flight per QP, iperf3 beside it), printed as
//!   perftest's latency line and the congested port's per-queue buffer usage beside the seed's;
//! - `ecn-ratio`: a 7-to-1 incast of perftest write_bw QPs (tx-depth 128), one point per
//!   number of QPs per sender: the share of RoCE packets reaching the receiver CE-marked, over a
//!   window after a warm-up;
//! - `cnp-rate`: a 2-to-1 of one write_bw QP per sender, CNPs sent to sender 1's QP at a fixed
//!   rate (from the receiver, as its NIC's notification point would, through the fabric), one
//!   point per rate: sender 1's DCQCN rate (the reaction point's RC, time-averaged) and
//!   goodput, against the CNPs it took per second.

use crate::error::ExperimentError;
use crate::leafspine::{self, Leafspine, Row};
use crate::net::{Progress, Sim, Stop};
use crate::results::{table, Measurement};
use crate::tally::Cnps;
use crate::traffic::{NicParams, Sender, START_JITTER_NS, TX_DEPTH};
use lossless_wire::rocev2::{build_frame, opcode, Bth, Ext};
use roce_host::perftest::LatReport;
use serde::Deserialize;

/// The fieldtest section of a topology file, quick overrides applied.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldTest {
    pub kind: String,
    pub receiver: String,
    pub senders: Vec<String>,
    pub roce_priority: u8,
    pub tcp_priority: u8,
    /// The TCP hosts' congestion control: "newreno" (default) or "dctcp".
    #[serde(default)]
    pub tcp_cc: Option<String>,
    pub ecn: serde_json::Value,
    pub nic_cnp_interval_ns: Option<u64>,
    pub nic_min_rate_mbps: Option<f64>,
    pub latency: LatencyPart,
    pub ecn_ratio: EcnRatioPart,
    pub cnp_rate: CnpRatePart,
    #[serde(default)]
    pub host_latency_ns: Option<serde_json::Value>,
    #[serde(default)]
    pub quick: Option<serde_json::Value>,
}

/// The field test's incast: one RoCE:TCP mix, message size and QPs per sender.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencyPart {
    pub mix: String,
    pub size: usize,
    pub flows_per_sender: u32,
    /// Messages per QP.
    pub iters: u64,
    /// The sender whose extra QP carries the latency probe (see [`Leafspine::latency_probe`]):
    /// the field test's figure is perftest's report, one message at a time beside the load.
    #[serde(default)]
    pub latency_probe: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EcnRatioPart {
    pub flows_per_sender: Vec<u32>,
    pub size: usize,
    pub warmup_us: u64,
    pub measure_us: u64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CnpRatePart {
    /// Sender 1 (the one CNPs are sent to) and sender 2.
    pub senders: Vec<String>,
    pub cnps_per_s: Vec<u64>,
    pub size: usize,
    pub warmup_us: u64,
    pub measure_us: u64,
}

/// Seed 003's field test output: perftest's latency line (4096 B, 1000 iterations, us) and
/// the congested port's buffer usage (queue, current, peak, average, cells/KB).
const SEED_LAT: (u64, u64, f64, f64, f64, f64) = (4096, 1000, 4028.99, 4697.27, 4691.91, 4691.74);
const SEED_QUEUES: [(u32, &str, &str, &str); 2] = [
    (3, "47/11", "250/62", "39/9"),
    (5, "9709/2427", "47046/11761", "16743/4185"),
];
const SEED_ECN_RATIO: &str =
    "seed 003: the ratio rises with the flows per sender and reaches 100 % at about 5";
const SEED_CNP_RATE: &str = "seed 003: the rate falls as more CNPs are sent per second, and \
     stops falling at the NIC's minimum rate (45 Mb/s)";
/// The reaction point's rate is sampled this often over the measurement window.
const RATE_SAMPLE_NS: u64 = 10_000;
/// Idle time before each point.
const GAP_NS: u64 = 10_000;

impl FieldTest {
    pub fn parse(doc: &serde_json::Value) -> Result<FieldTest, ExperimentError> {
        let ft: FieldTest = serde_json::from_value(doc.clone()).map_err(ExperimentError::Shape)?;
        let ls = ft.leafspine();
        ls.rows()?;
        ls.tcp_params()?;
        if ft.cnp_rate.senders.len() != 2 {
            return Err(ExperimentError::CnpRateSenders);
        }
        for (what, us) in [
            ("ecn_ratio.measure_us", ft.ecn_ratio.measure_us),
            ("cnp_rate.measure_us", ft.cnp_rate.measure_us),
        ] {
            if us == 0 {
                return Err(ExperimentError::NotPositive { field: what });
            }
        }
        Ok(ft)
    }

    /// The latency part as one row of seed 003's remote PFC test (without remote PFC).
    pub fn leafspine(&self) -> Leafspine {
        let l = &self.latency;
        Leafspine {
            kind: "leafspine".into(),
            receiver: self.receiver.clone(),
            senders: self.senders.clone(),
            roce_priority: self.roce_priority,
            tcp_priority: self.tcp_priority,
            tcp_cc: self.tcp_cc.clone(),
            mixes: vec![l.mix.clone()],
            flows_per_sender: vec![l.flows_per_sender],
            sizes: vec![l.size],
            iters: l.iters,
            seconds: 0,
            ecn: self.ecn.clone(),
            sfc_threshold_kmax: 0,
            nic_cnp_interval_ns: self.nic_cnp_interval_ns,
            nic_min_rate_mbps: self.nic_min_rate_mbps,
            host_latency_ns: None,
            latency_probe: l.latency_probe.clone(),
            quick: None,
        }
    }
}

/// What a part gave.
pub struct PartOut {
    pub measurements: Vec<Measurement>,
    pub tables: Vec<String>,
    pub stop: Stop,
}

/// How far a part may run: the command line's `--time-limit` and `--max-events`.
pub struct Limits<'a> {
    pub time_limit: Option<u64>,
    pub max_events: Option<u64>,
    pub progress: &'a mut dyn FnMut(&Progress),
}

impl Limits<'_> {
    /// Runs to `t`; `Some(stop)` when a limit cut the run short.
    fn run_to(&mut self, sim: &mut Sim, t: u64) -> Option<Stop> {
        let until = self.time_limit.map_or(t, |l| l.min(t));
        match sim.run(Some(until), self.max_events, self.progress) {
            Stop::MaxEvents => Some(Stop::MaxEvents),
            _ if until < t => Some(Stop::Reached),
            _ => {
                sim.idle_until(t);
                None
            }
        }
    }
}

/// The receiver's host index and the senders' (`field`: where the senders are listed).
fn hosts(
    sim: &Sim,
    receiver: &str,
    senders: &[String],
    field: &str,
) -> Result<(usize, Vec<usize>), ExperimentError> {
    let host = |field: String, name: &str| {
        sim.host_index(name).ok_or(ExperimentError::UnknownHost {
            field,
            host: name.into(),
        })
    };
    let recv = host("receiver".into(), receiver)?;
    let senders = senders
        .iter()
        .enumerate()
        .map(|(i, s)| host(format!("{field}[{i}]"), s))
        .collect::<Result<_, _>>()?;
    Ok((recv, senders))
}

impl PartOut {
    fn new() -> PartOut {
        PartOut {
            measurements: Vec::new(),
            tables: Vec::new(),
            stop: Stop::Drained,
        }
    }
}

/// Runs the part named by the config case (`latency`, `ecn-ratio`, `cnp-rate`).
pub fn run_part(
    sim: &mut Sim,
    ft: &FieldTest,
    case: &str,
    nic: &NicParams,
    rng: &mut fastrand::Rng,
    limits: &mut Limits,
) -> Result<PartOut, ExperimentError> {
    match case {
        "latency" => latency(sim, ft, nic, rng, limits),
        "ecn-ratio" => ecn_ratio(sim, ft, nic, rng, limits),
        "cnp-rate" => cnp_rate(sim, ft, nic, rng, limits),
        other => Err(ExperimentError::FieldTestPart { case: other.into() }),
    }
}

fn latency(
    sim: &mut Sim,
    ft: &FieldTest,
    nic: &NicParams,
    rng: &mut fastrand::Rng,
    limits: &mut Limits,
) -> Result<PartOut, ExperimentError> {
    let ls = ft.leafspine();
    let row: Row = ls.rows()?.remove(0);
    let start = sim.now_ns() + GAP_NS;
    leafspine::clear_counters(sim);
    leafspine::setup_row(sim, &ls, &row, nic, start, rng)?;
    let stop = sim.run(limits.time_limit, limits.max_events, limits.progress);
    let mut m = leafspine::row_results(sim, &ls, &row, false, start);
    m.case = format!(
        "latency {} {}B {}x{}",
        row.mix,
        row.size,
        row.flows,
        ft.senders.len()
    );
    m.params = serde_json::json!({"part": "latency", "roce_tcp": row.mix, "size": row.size,
        "flows": format!("{}x{}", row.flows, ft.senders.len()), "remote_pfc": false,
        "iters": ls.iters});
    let tally = crate::tally::tally(sim);
    let (measured, _) = tally.measured(ls.latency_probe.is_some());
    let lat = LatReport::compute(row.size as u64, &mut measured.to_vec());
    m.values["seed_avg_latency_us"] = SEED_LAT.5.into();
    let (b, n, min, max, typ, avg) = SEED_LAT;
    let line = |who: &str, b: u64, n: u64, v: [f64; 4]| {
        let mut r = vec![who.to_string(), b.to_string(), n.to_string()];
        r.extend(v.iter().map(|x| format!("{x:.2}")));
        r
    };
    let perftest = table(
        &format!(
            "Field test: {} RoCE:TCP, {}x{} QPs, DCQCN alone: perftest's latency (us, virtual \
             time; #iterations: messages per QP here, write_lat's in the seed)",
            row.mix,
            row.flows,
            ft.senders.len()
        ),
        &[
            "",
            "#bytes",
            "#iterations",
            "t_min[usec]",
            "t_max[usec]",
            "t_typical[usec]",
            "t_avg[usec]",
        ],
        &[
            line(
                "simulated",
                row.size as u64,
                ls.iters,
                [
                    lat.t_min_usec,
                    lat.t_max_usec,
                    lat.t_typical_usec,
                    lat.t_avg_usec,
                ],
            ),
            line("seed 003", b, n, [min, max, typ, avg]),
        ],
    );
    println!("{perftest}\n");
    let queues: Vec<Vec<String>> = m.values["receiver_port_queues"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|q| {
            // Whole cells and KB, as the switch prints them.
            let n = |k: &str| q[k].as_f64().unwrap_or(0.0).round() as u64;
            let f = |c: &str, k: &str| format!("{}/{}", n(c), n(k));
            let seed = SEED_QUEUES.iter().find(|s| q["queue"] == s.0);
            let s = |i: usize| seed.map_or("0/0".to_string(), |s| [s.1, s.2, s.3][i].to_string());
            vec![
                q["queue"].to_string(),
                f("current_cells", "current_kb"),
                f("peak_cells", "peak_kb"),
                f("average_cells", "average_kb"),
                s(0),
                s(1),
                s(2),
            ]
        })
        .collect();
    let usage = table(
        "Buffer Usage on each Queue: (cells/KBytes), the receiver's port at the end; seed 003's \
         DUT-Leaf1A beside (its congested queue is 5, RoCE's here is 3)",
        &[
            "QueueIndex",
            "Current",
            "Peak",
            "Average",
            "seed Current",
            "seed Peak",
            "seed Average",
        ],
        &queues,
    );
    println!("{usage}\n");
    Ok(PartOut {
        measurements: vec![m],
        tables: vec![perftest, usage],
        stop,
    })
}

/// An incast of perftest write_bw: `flows` QPs from each sender to the receiver.
struct WriteBw<'a> {
    senders: &'a [usize],
    recv: usize,
    flows: u32,
    size: usize,
}

/// Starts a point [`GAP_NS`] from now, the switches' counters cleared: fresh endpoints on the
/// incast's hosts (QP numbers from `rng`), one write_bw sender per sender host, each starting
/// at the point's start plus a jitter. Returns the start.
fn start_write_bw(sim: &mut Sim, w: &WriteBw, nic: &NicParams, rng: &mut fastrand::Rng) -> u64 {
    let start = sim.now_ns() + GAP_NS;
    leafspine::clear_counters(sim);
    let WriteBw {
        senders,
        recv,
        flows,
        size,
    } = *w;
    for &h in senders.iter().chain([&recv]) {
        let qpn_base = 0x100 + (rng.u32(0..1 << 9) << 14);
        sim.set_nic(h, &NicParams { qpn_base, ..*nic });
    }
    for &s in senders {
        let at = start + rng.u64(0..START_JITTER_NS);
        let mut sender = Sender::new(s, size, u64::MAX, TX_DEPTH, at);
        let (gw, peer_gw) = (sim.hosts[s].gateway_mac, sim.hosts[recv].gateway_mac);
        if let Some((a, b)) = sim.two_nics(s, recv) {
            for _ in 0..flows {
                sender.connect(&mut a.ep, gw, &mut b.ep, peer_gw);
            }
        }
        sim.add_sender(s, sender);
        sim.wake_nic(s, at);
    }
    start
}

/// Ends a point: the hosts as new, the fabric drained.
fn end_point(sim: &mut Sim) {
    sim.reset_hosts();
    sim.drain(leafspine::DRAIN_NS);
}

/// Latency (us) of the messages `host`'s senders completed in `[from, to)`.
fn window_latencies(sim: &Sim, host: usize, from: u64, to: u64) -> Vec<u64> {
    let nic = sim.hosts[host].nic.as_ref();
    nic.into_iter()
        .flat_map(|n| &n.senders)
        .flat_map(|s| s.completed_ns.iter().zip(&s.latency_ns))
        .filter(|(&c, _)| c >= from && c < to)
        .map(|(_, &l)| l)
        .collect()
}

/// The counters a point's window is the difference of: the receiver's, the CNPs every host
/// took and sent, the PFC frames sent.
#[derive(Default, Clone, Copy)]
struct RxSnap {
    data: u64,
    ce: u64,
    payload: u64,
    cnps: Cnps,
    pauses: u64,
}

fn rx_snap(sim: &Sim, recv: usize) -> RxSnap {
    let (data, ce, payload) = sim.hosts[recv].nic.as_ref().map_or((0, 0, 0), |n| {
        let c = n.ep.counters();
        (c.rx_data_pkts, c.rx_ce_marked, c.rx_payload_bytes)
    });
    RxSnap {
        data,
        ce,
        payload,
        cnps: Cnps::of(sim),
        pauses: leafspine::pauses_tx(sim),
    }
}

fn ecn_ratio(
    sim: &mut Sim,
    ft: &FieldTest,
    nic: &NicParams,
    rng: &mut fastrand::Rng,
    limits: &mut Limits,
) -> Result<PartOut, ExperimentError> {
    let part = &ft.ecn_ratio;
    let (recv, senders) = hosts(sim, &ft.receiver, &ft.senders, "senders")?;
    let ls = ft.leafspine();
    let (warm, window) = (part.warmup_us * 1000, part.measure_us * 1000);
    let mut out = PartOut::new();
    let mut rows = Vec::new();
    for &flows in &part.flows_per_sender {
        let w = WriteBw {
            senders: &senders,
            recv,
            flows,
            size: part.size,
        };
        let start = start_write_bw(sim, &w, nic, rng);
        if let Some(s) = limits.run_to(sim, start + warm) {
            out.stop = s;
            break;
        }
        leafspine::clear_counters(sim);
        let a = rx_snap(sim, recv);
        if let Some(s) = limits.run_to(sim, start + warm + window) {
            out.stop = s;
            break;
        }
        let b = rx_snap(sim, recv);
        let data = b.data - a.data;
        let ce = b.ce - a.ce;
        let ratio = if data > 0 {
            ce as f64 / data as f64
        } else {
            0.0
        };
        let secs = window as f64 / 1e9;
        let cnps = b.cnps.since(a.cnps);
        let mut lat: Vec<u64> = senders
            .iter()
            .flat_map(|&s| window_latencies(sim, s, start + warm, start + warm + window))
            .collect();
        let rep = LatReport::compute(part.size as u64, &mut lat.clone());
        lat.sort_unstable();
        let queues = leafspine::queue_usage(sim, &ls);
        let roce_q = queues
            .iter()
            .find(|q| q["queue"] == u64::from(ft.roce_priority))
            .cloned()
            .unwrap_or_default();
        let flows_s = format!("{flows}x{}", senders.len());
        let mut m = Measurement {
            case: format!("ecn-ratio {flows_s}"),
            params: serde_json::json!({"part": "ecn-ratio", "flows_per_sender": flows,
                "flows": flows_s, "size": part.size, "tx_depth": TX_DEPTH,
                "remote_pfc": false, "warmup_us": part.warmup_us, "measure_us": part.measure_us}),
            values: serde_json::json!({
                "ecn_mark_ratio": ratio,
                "ecn_marked": ce,
                "roce_packets_received": data,
                "cnps_per_s": cnps.rx as f64 / secs,
                "roce_goodput_mbps": (b.payload - a.payload) as f64 * 8.0 / secs / 1e6,
                "pauses_tx": b.pauses - a.pauses,
                "avg_latency_us": rep.t_avg_usec,
                "p99_latency_us": rep.p99_usec,
                "messages_completed": lat.len(),
                "receiver_port_queues": queues,
            }),
            latency_us: Vec::new(),
            throughput: serde_json::Map::new(),
        };
        cnps.fill(&mut m.values);
        eprintln!(
            "lossless-sim: ecn-ratio {flows_s}: {:.1} % of {data} RoCE packets CE-marked",
            ratio * 100.0
        );
        rows.push(vec![
            flows.to_string(),
            flows_s,
            format!("{:.1}", ratio * 100.0),
            format!("{:.0}", roce_q["average_kb"].as_f64().unwrap_or(0.0)),
            roce_q["peak_kb"].to_string(),
            format!("{:.0}", m.values["cnps_per_s"].as_f64().unwrap_or(0.0)),
            format!(
                "{:.0}",
                m.values["roce_goodput_mbps"].as_f64().unwrap_or(0.0)
            ),
            (b.pauses - a.pauses).to_string(),
            format!("{:.1}", rep.t_avg_usec),
        ]);
        out.measurements.push(m);
        end_point(sim);
    }
    let t = table(
        &format!(
            "ECN mark ratio against flows per sender, {}-to-1 write_bw incast, {} B, DCQCN \
             alone ({SEED_ECN_RATIO})",
            senders.len(),
            part.size
        ),
        &[
            "flows per sender",
            "flows",
            "ECN mark ratio (%)",
            "RoCE queue avg KB",
            "peak KB",
            "CNPs/s",
            "RoCE Mb/s",
            "pauses",
            "avg latency us",
        ],
        &rows,
    );
    println!("{t}\n");
    out.tables.push(t);
    Ok(out)
}

/// A CNP for `to_qpn` on host `to`, from host `from` (its QP `from_qpn`), as roce-host's
/// notification point builds it.
fn cnp_frame(sim: &Sim, from: usize, from_qpn: u32, to: usize, to_qpn: u32, dscp: u8) -> Vec<u8> {
    let l3 = crate::probe::l3_header(sim, from, to, dscp, from_qpn);
    let bth = Bth {
        becn: true,
        ..Bth::new(opcode::CNP, to_qpn, 0)
    };
    let mut out = Vec::new();
    build_frame(&mut out, &l3, &bth, &Ext::CnpPad, &[]);
    out
}

fn cnp_rate(
    sim: &mut Sim,
    ft: &FieldTest,
    nic: &NicParams,
    rng: &mut fastrand::Rng,
    limits: &mut Limits,
) -> Result<PartOut, ExperimentError> {
    let part = &ft.cnp_rate;
    let (recv, senders) = hosts(sim, &ft.receiver, &part.senders, "cnp_rate.senders")?;
    let (warm, window) = (part.warmup_us * 1000, part.measure_us * 1000);
    let mut out = PartOut::new();
    let mut rows = Vec::new();
    for &rate in &part.cnps_per_s {
        let w = WriteBw {
            senders: &senders,
            recv,
            flows: 1,
            size: part.size,
        };
        let start = start_write_bw(sim, &w, nic, rng);
        let qpn = |h: usize| sim.hosts[h].nic.as_ref().and_then(|n| n.ep.qpns().next());
        let (Some(s1_qpn), Some(r_qpn)) = (qpn(senders[0]), qpn(recv)) else {
            return Err(ExperimentError::Connect { what: "cnp_rate" });
        };
        let end = start + warm + window;
        // The CNPs sent inside the window: beside the notification points' own, what the
        // reaction points take in it.
        let mut injected = 0u64;
        if rate > 0 {
            let cnp_dscp = sim.hosts[recv]
                .nic
                .as_ref()
                .map_or(48, |n| n.ep.config().cnp_dscp);
            let frame = cnp_frame(sim, recv, r_qpn, senders[0], s1_qpn, cnp_dscp);
            let mut k = 0u64;
            loop {
                let t = start + (k as u128 * 1_000_000_000 / u128::from(rate)) as u64;
                if t >= end {
                    break;
                }
                sim.host_send(recv, t, frame.clone());
                injected += u64::from(t >= start + warm);
                k += 1;
            }
        }
        if let Some(s) = limits.run_to(sim, start + warm) {
            out.stop = s;
            break;
        }
        let ep = |sim: &Sim, h: usize| {
            sim.hosts[h].nic.as_ref().map_or((0, f64::NAN), |n| {
                let rc =
                    n.ep.qpns()
                        .next()
                        .and_then(|q| n.ep.reaction_point(q))
                        .map_or(f64::NAN, |rp| rp.rate_bps());
                (n.ep.counters().rx_cnps, rc)
            })
        };
        let cnps_before = ep(sim, senders[0]).0;
        let a = rx_snap(sim, recv);
        let mut rc_samples = Vec::new();
        let mut stopped = None;
        let mut t = start + warm;
        while t < end {
            t = (t + RATE_SAMPLE_NS).min(end);
            if let Some(s) = limits.run_to(sim, t) {
                stopped = Some(s);
                break;
            }
            rc_samples.push(ep(sim, senders[0]).1);
        }
        if let Some(s) = stopped {
            out.stop = s;
            break;
        }
        let (cnps_after, rc_end) = ep(sim, senders[0]);
        let b = rx_snap(sim, recv);
        let secs = window as f64 / 1e9;
        let goodput = |h: usize| {
            let n = window_latencies(sim, h, start + warm, end).len();
            (n * part.size) as f64 * 8.0 / secs / 1e6
        };
        let rc_avg = rc_samples.iter().sum::<f64>() / rc_samples.len().max(1) as f64;
        let rc_min = rc_samples.iter().copied().fold(f64::INFINITY, f64::min);
        let rc_max = rc_samples.iter().copied().fold(0.0, f64::max);
        let sender1_cnps = cnps_after - cnps_before;
        let mut lat = window_latencies(sim, senders[0], start + warm, end);
        let rep = LatReport::compute(part.size as u64, &mut lat);
        let mut m = Measurement {
            case: format!("cnp-rate {rate}/s"),
            params: serde_json::json!({"part": "cnp-rate", "cnps_per_s": rate,
                "senders": part.senders, "size": part.size, "tx_depth": TX_DEPTH,
                "remote_pfc": false, "warmup_us": part.warmup_us, "measure_us": part.measure_us}),
            values: serde_json::json!({
                "cnps_injected": injected,
                "sender1_cnps_rx_per_s": sender1_cnps as f64 / secs,
                "rate_mbps_avg": rc_avg / 1e6,
                "rate_mbps_min": rc_min / 1e6,
                "rate_mbps_max": rc_max / 1e6,
                "rate_mbps_end": rc_end / 1e6,
                "min_rate_mbps": nic.min_rate_bps / 1e6,
                "goodput_mbps": goodput(senders[0]),
                "other_goodput_mbps": goodput(senders[1]),
                "avg_latency_us": rep.t_avg_usec,
                "p99_latency_us": rep.p99_usec,
                "pauses_tx": b.pauses - a.pauses,
                "ecn_marked": b.ce - a.ce,
            }),
            latency_us: Vec::new(),
            throughput: serde_json::Map::new(),
        };
        b.cnps.since(a.cnps).fill(&mut m.values);
        eprintln!(
            "lossless-sim: cnp-rate {rate}/s: sender 1 at {:.1} Mb/s (DCQCN rate, average)",
            rc_avg / 1e6
        );
        rows.push(vec![
            rate.to_string(),
            format!("{:.0}", sender1_cnps as f64 / secs),
            format!("{:.2}", rc_avg / 1e6),
            format!("{:.2}", rc_min / 1e6),
            format!("{:.1}", m.values["goodput_mbps"].as_f64().unwrap_or(0.0)),
            format!(
                "{:.0}",
                m.values["other_goodput_mbps"].as_f64().unwrap_or(0.0)
            ),
        ]);
        out.measurements.push(m);
        end_point(sim);
    }
    let t = table(
        &format!(
            "Flow rate against CNPs per second, 2-to-1 ({} and {} to {}), {} B write_bw, CNPs \
             sent to {}'s QP ({SEED_CNP_RATE})",
            part.senders[0], part.senders[1], ft.receiver, part.size, part.senders[0]
        ),
        &[
            "CNPs sent/s",
            "sender 1's CNPs taken/s (all)",
            "sender 1 DCQCN rate Mb/s (avg)",
            "min",
            "sender 1 goodput Mb/s",
            "sender 2 goodput Mb/s",
        ],
        &rows,
    );
    println!("{t}\n");
    out.tables.push(t);
    Ok(out)
}
