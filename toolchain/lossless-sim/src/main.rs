//! `lossless-sim run TOPOLOGY.json`: program the topology's switches with the real controller,
//! then run it in virtual time and write results.json (README.md); `sweep` and `collect`:
//! grids of runs (`lossless_sim::sweep`).

use clap::{Parser, Subcommand};
use lossless_sim::error::ExperimentError;
use lossless_sim::experiment::{
    incast_results, prio_case_results, prio_table, setup_incast, setup_prio_case, Plan,
};
use lossless_sim::net::{Progress, Stop};
use lossless_sim::program::{self, Lab, ProgramError};
use lossless_sim::results::{table, CaseInfo, Measurement, Results, SimInfo};
use lossless_sim::timeline::{StatsSample, Timeline};
use lossless_sim::traffic::NicParams;
use lossless_sim::{
    assemble, fieldtest, leafspine, pcap, plots, probe, BuildError, DEFAULT_PIPELINE_NS,
};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Parser)]
#[command(
    name = "lossless-sim",
    about = "The lab's fabric in virtual time, at nominal rates"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Program every switch of TOPOLOGY with lossless-ctl, then simulate it.
    Run(RunArgs),
    /// Run a grid of runs over topology, experiment and config_db settings (or emit it for a
    /// Slurm or Kubernetes cluster); sweep.csv and plots.
    Sweep(lossless_sim::sweep::SweepArgs),
    /// Merge the points of a sweep's directory into its sweep.csv and plots.
    Collect(lossless_sim::sweep::CollectArgs),
}

#[derive(clap::Args)]
struct RunArgs {
    /// A topology file (topo/lossless_topo/topologies/*.json) or the name of one.
    topology: PathBuf,
    /// The experiment's quick overrides.
    #[arg(long)]
    quick: bool,
    /// The experiment case whose config_db.json the switches get (default: the first).
    #[arg(long)]
    case: Option<String>,
    /// Seed of every random choice of the simulation: the senders' start jitter, QP numbers
    /// (hence UDP source ports and ECMP paths), TCP ports and sequence numbers, and the
    /// switches' `random` extern (WRED/ECN marking).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output directory (results.json, fabric.json, config/, ports.json files).
    #[arg(long, default_value = "results/sim")]
    out: PathBuf,
    /// Stop after this many events; the results are marked partial.
    #[arg(long)]
    max_events: Option<u64>,
    /// Stop at this virtual time (ns); the results are marked partial.
    #[arg(long, value_name = "NS")]
    time_limit: Option<u64>,
    /// Nanoseconds a frame spends in a switch's pipeline.
    #[arg(long, default_value_t = DEFAULT_PIPELINE_NS)]
    pipeline_latency_ns: u64,
    /// The NICs' minimum interval between two CNPs for one QP (default: the experiment's
    /// `nic_cnp_interval_ns`, else the DCQCN paper's 50 000; seed 003's NICs: 1000).
    #[arg(long, value_name = "NS")]
    cnp_interval_ns: Option<u64>,
    /// The NICs' per-flow minimum rate under DCQCN (default: the experiment's
    /// `nic_min_rate_mbps`, else 1; seed 003's NICs: 45).
    #[arg(long, value_name = "MBPS")]
    min_rate_mbps: Option<f64>,
    /// The lossless-lab checkout whose .venv, control/, topo/ and build/p4 are used.
    #[arg(long, default_value = ".")]
    lab: PathBuf,
    /// The compiled pipeline directory (default: LAB/build/p4).
    #[arg(long)]
    pipeline: Option<PathBuf>,
    /// Sample the switches' queues, buffers and PFC frames every this many microseconds of
    /// virtual time, into results.json's `stats` (each case's grid coarsens past 500 samples).
    #[arg(long, value_name = "US", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    sample_us: u64,
    /// Capture switch ports into OUT/pcap/SWITCH-portN.pcap, stamped with virtual time:
    /// `all`, or a comma-separated list of SWITCH and SWITCH:PORT.
    #[arg(long, value_name = "PORTS")]
    pcap: Option<String>,
    /// Write no PNG plots (they come from the lab's lossless_topo.plots).
    #[arg(long)]
    no_plots: bool,
}

/// Probes: RoCE priority 3 (DSCP 24), 1 KB, one every 10 us so that none meets another.
const PROBE_DSCP: u8 = 24;
const PROBE_PAYLOAD: usize = 1024;
const PROBE_GAP_NS: u64 = 10_000;
/// Idle virtual time between two cases of one run.
const CASE_GAP_NS: u64 = 10_000;
/// A case after the first starts at a multiple of this virtual time: the pipeline's
/// microsecond timestamps (ingress_global_timestamp, which lossless.p4's PFC refresh and SFC
/// epochs compare) then fall as they do from 0 in a run of that case alone.
const CASE_ALIGN_NS: u64 = 1_000_000_000;
/// roce-host's default RoCE MTU (the lab's write_lat and write_bw run with it).
const ROCE_MTU: usize = 1024;
/// Wall-clock seconds between two progress lines.
const PROGRESS_S: f64 = 2.0;

fn main() -> ExitCode {
    let args = match Cli::parse().command {
        Command::Run(args) => args,
        Command::Sweep(args) => return lossless_sim::sweep::main(&args),
        Command::Collect(args) => return lossless_sim::sweep::collect_main(&args),
    };
    match run(&args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("lossless-sim: {e}");
            ExitCode::from(2)
        }
    }
}

/// Why a run stopped before its results were written (printed after `lossless-sim: `).
#[derive(Debug, thiserror::Error)]
enum RunError {
    #[error(transparent)]
    Program(#[from] ProgramError),
    #[error(transparent)]
    Build(#[from] BuildError),
    #[error(transparent)]
    Experiment(#[from] ExperimentError),
    #[error(transparent)]
    Pcap(#[from] lossless_sim::pcap::PcapError),
    #[error("{}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What one config case of a run gave.
struct CaseOut {
    measurements: Vec<Measurement>,
    tables: Vec<String>,
    stop: Stop,
    /// Probes not delivered.
    lost: Vec<String>,
}

impl CaseOut {
    fn partial(&self) -> bool {
        matches!(self.stop, Stop::MaxEvents | Stop::Reached)
    }
}

fn run(args: &RunArgs) -> Result<ExitCode, RunError> {
    let mut lab = Lab::at(&args.lab);
    if let Some(p) = &args.pipeline {
        lab.pipeline = p.clone();
    }
    let topology = resolve_topology(&lab, &args.topology);
    let fabric = program::prepare(&lab, &topology, args.case.as_deref(), args.quick, &args.out)?;
    // Without --case every case of the experiment, in the order the lab's runner loads them.
    let cases = match &args.case {
        Some(c) => vec![c.clone()],
        None => fabric.cases.clone(),
    };
    eprintln!(
        "lossless-sim: {} case {}: programming {} switches with lossless-ctl",
        fabric.topology,
        fabric.case,
        fabric.switches.len()
    );
    let (switches, servers) = program::program(&lab, &fabric, &args.out)?;
    let mut sim = assemble(&fabric, switches, args.pipeline_latency_ns)?;
    let names: Vec<String> = sim.switches.iter().map(|s| s.name.clone()).collect();
    sim.timeline = Some(Timeline::new(args.sample_us * 1000, names.len()));
    if let Some(spec) = &args.pcap {
        let ports: Vec<(String, Vec<u32>)> = sim
            .switches
            .iter()
            .map(|s| (s.name.clone(), s.port_map().keys().copied().collect()))
            .collect();
        let chosen = pcap::select(spec, &ports)?;
        let capture = pcap::Capture::create(
            &args.out.join("pcap"),
            &names,
            &chosen,
            args.pipeline_latency_ns,
        )?;
        sim.capture = Some(capture);
    }
    let plan = Plan::of(&fabric)?;
    let mut measurements = Vec::new();
    let mut tables = Vec::new();
    let mut lost = Vec::new();
    let mut infos = Vec::new();
    // Every switch's traffic manager at the end of each case (Current/Peak/Average).
    let mut ends = Vec::new();
    let mut stop = Stop::Drained;
    for (i, case) in cases.iter().enumerate() {
        let mut reprogrammed = Vec::new();
        let mut fabric = fabric.clone();
        if i > 0 {
            sim.drain(leafspine::DRAIN_NS);
            sim.reset_hosts();
            sim.idle_until(sim.now_ns().next_multiple_of(CASE_ALIGN_NS));
            let next = args.out.join("cases").join(case);
            fabric = program::prepare(&lab, &topology, Some(case), args.quick, &next)?;
            eprintln!(
                "lossless-sim: case {case}: reprogramming {} switches with lossless-ctl load --reconcile at virtual {:.3} ms",
                fabric.switches.len(),
                sim.now_ns() as f64 / 1e6
            );
            reprogrammed = program::reprogram(&lab, &servers, &fabric, &next, &mut sim)?;
            sim.start_pktgens();
        }
        let start_ns = sim.now_ns();
        if let Some(tl) = &mut sim.timeline {
            tl.start_case(start_ns);
        }
        let out = run_case(&mut sim, &plan, &fabric, args)?;
        ends.extend(tm_stats(&sim));
        infos.push(CaseInfo {
            name: case.clone(),
            start_ns,
            end_ns: sim.now_ns(),
            reprogrammed,
            measurements: out.measurements.len(),
        });
        measurements.extend(out.measurements);
        tables.extend(out.tables);
        lost.extend(out.lost);
        stop = out.stop;
        if matches!(stop, Stop::MaxEvents | Stop::Reached) {
            break;
        }
    }
    let partial = matches!(stop, Stop::MaxEvents | Stop::Reached);
    match stop {
        Stop::MaxEvents => eprintln!(
            "lossless-sim: stopped at --max-events {} (virtual time {} ns); writing what there is, marked partial",
            sim.events(),
            sim.now_ns()
        ),
        Stop::Reached => eprintln!(
            "lossless-sim: stopped at --time-limit {} ns ({} events); writing what there is, marked partial",
            sim.now_ns(),
            sim.events()
        ),
        Stop::Drained | Stop::Finished => {}
    }
    let now = sim.now_ns();
    sim.sample_now();
    let mut stats = sim
        .timeline
        .as_ref()
        .map_or_else(Vec::new, |tl| tl.samples(&names));
    stats.extend(ends);
    // In time order, each case's end after the timeline's samples up to it.
    stats.sort_by(|a, b| a.t.total_cmp(&b.t));
    // An output that could not be written fails the run (exit 1) after results.json.
    let mut failed = false;
    if let Some(capture) = sim.capture.take() {
        match capture.finish() {
            Ok(files) => eprintln!(
                "lossless-sim: wrote {} capture files in {}",
                files.len(),
                args.out.join("pcap").display()
            ),
            Err(e) => {
                eprintln!("lossless-sim: {e}");
                failed = true;
            }
        }
    }
    let nominal = fabric.links.iter().map(|l| l.rate_mbps).max().unwrap_or(0);
    let results = Results {
        topology: fabric.topology.clone(),
        experiment: fabric.experiment["kind"]
            .as_str()
            .unwrap_or("none")
            .to_string(),
        seed: fabric.seed.clone(),
        scale: serde_json::json!({"factor": 1, "nominal_mbps": nominal, "lab_mbps": nominal}),
        switch: "lossless-sim (p4-switch core)".into(),
        missing_features: Vec::new(),
        measurements,
        stats,
        tables,
        sim: SimInfo {
            rng_seed: args.seed,
            case: cases.join(","),
            cases: infos,
            pipeline_latency_ns: args.pipeline_latency_ns,
            partial,
            stop,
            events: sim.events(),
            virtual_time_ns: now,
        },
    };
    let path = results.write(&args.out).map_err(|source| RunError::Write {
        path: args.out.join("results.json"),
        source,
    })?;
    eprintln!("lossless-sim: wrote {}", path.display());
    if !args.no_plots {
        match plots::write(&lab, &path) {
            Ok(pngs) => eprintln!("lossless-sim: plots: {}", pngs.join(", ")),
            Err(e) => {
                eprintln!("lossless-sim: {e}");
                failed = true;
            }
        }
    }
    if partial {
        return Ok(ExitCode::from(3));
    }
    if failed {
        return Ok(ExitCode::from(1));
    }
    if !lost.is_empty() {
        eprintln!("lossless-sim: not delivered: {}", lost.join(", "));
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// Every switch's traffic-manager statistics now, as results.json's `stats` hold them.
fn tm_stats(sim: &lossless_sim::net::Sim) -> Vec<StatsSample> {
    let now = sim.now_ns();
    sim.switches
        .iter()
        .filter_map(|s| {
            let tm = s.core.tm()?;
            Some(StatsSample {
                t: now as f64 / 1e9,
                switch: s.name.clone(),
                stats: serde_json::to_value(tm.stats(now)).ok()?,
            })
        })
        .collect()
}

/// The NICs' parameters: the command line's, else the experiment's, else roce-host's.
fn nic_params(args: &RunArgs, plan: &Plan, mtu: usize, dscp: u8) -> NicParams {
    let (exp_cnp, exp_floor) = match plan {
        Plan::Leafspine(ls) => (ls.nic_cnp_interval_ns, ls.nic_min_rate_mbps),
        Plan::FieldTest(ft) => (ft.nic_cnp_interval_ns, ft.nic_min_rate_mbps),
        _ => (None, None),
    };
    let d = NicParams::new(mtu, dscp);
    NicParams {
        cnp_interval_ns: args
            .cnp_interval_ns
            .or(exp_cnp)
            .unwrap_or(d.cnp_interval_ns),
        min_rate_bps: args
            .min_rate_mbps
            .or(exp_floor)
            .map_or(d.min_rate_bps, |m| m * 1e6),
        ..d
    }
}

/// Runs the experiment's traffic for `fabric.case` on the switches as programmed for it, from
/// the simulation's present time: the switches' counters cleared and their `random` externs
/// seeded, every random choice of the traffic drawn afresh from `--seed`, so that a case gives
/// what it gives in a run of its own.
fn run_case(
    sim: &mut lossless_sim::net::Sim,
    plan: &Plan,
    fabric: &lossless_sim::fabric::Fabric,
    args: &RunArgs,
) -> Result<CaseOut, RunError> {
    let nic = |mtu: usize, dscp: u8| nic_params(args, plan, mtu, dscp);
    leafspine::clear_counters(sim);
    for (i, s) in sim.switches.iter_mut().enumerate() {
        s.core.seed_random(args.seed.wrapping_add(i as u64));
    }
    let mut rng = fastrand::Rng::with_seed(args.seed);
    let case_start = sim.now_ns();
    let mut probes = Vec::new();
    match plan {
        // Their rows run one after another below.
        Plan::Prio(_) | Plan::Leafspine(_) | Plan::FieldTest(_) => {}
        Plan::Probes => {
            probes = probe::all_pairs(sim, case_start, PROBE_GAP_NS, PROBE_DSCP, PROBE_PAYLOAD);
        }
        Plan::Incast(inc) => {
            setup_incast(
                sim,
                inc,
                &nic(inc.roce_mtu, inc.priority * 8),
                case_start,
                &mut rng,
            )?;
        }
    }
    let end_ns = args
        .time_limit
        .or((!probes.is_empty()).then(|| case_start + PROBE_GAP_NS * probes.len() as u64));
    let wall = Instant::now();
    let mut last = 0.0;
    let mut progress = |p: &Progress| {
        let s = wall.elapsed().as_secs_f64();
        if s - last < PROGRESS_S {
            return;
        }
        last = s;
        let eta = end_ns.map_or(String::new(), |end| {
            let done = p.now_ns.saturating_sub(case_start).max(1) as f64;
            let left = end.saturating_sub(p.now_ns) as f64 / done;
            format!(", ETA {:.0} s", s * left)
        });
        eprintln!(
            "lossless-sim: {}: virtual {:.3} ms, {:.0} events/s{eta}",
            fabric.case,
            p.now_ns as f64 / 1e6,
            p.events as f64 / s
        );
    };
    let mut out = CaseOut {
        measurements: Vec::new(),
        tables: Vec::new(),
        stop: Stop::Drained,
        lost: Vec::new(),
    };
    if let Plan::FieldTest(ft) = plan {
        let roce = nic(ROCE_MTU, ft.roce_priority * 8 + leafspine::DSCP_IN_PRIORITY);
        let mut limits = fieldtest::Limits {
            time_limit: args.time_limit,
            max_events: args.max_events,
            progress: &mut progress,
        };
        let part = fieldtest::run_part(sim, ft, &fabric.case, &roce, &mut rng, &mut limits)?;
        out.measurements = part.measurements;
        out.tables = part.tables;
        out.stop = part.stop;
        return Ok(out);
    }
    if let Plan::Leafspine(ls) = plan {
        let remote_pfc = fabric.case == "sfc=on";
        let roce = nic(ROCE_MTU, ls.roce_priority * 8 + leafspine::DSCP_IN_PRIORITY);
        let mut rows = Vec::new();
        for row in ls.rows()? {
            let start = sim.now_ns() + CASE_GAP_NS;
            leafspine::clear_counters(sim);
            leafspine::setup_row(sim, ls, &row, &roce, start, &mut rng)?;
            out.stop = sim.run(args.time_limit, args.max_events, &mut progress);
            let m = leafspine::row_results(sim, ls, &row, remote_pfc, start);
            let fig = leafspine::RowFigures::of(row, &m);
            eprintln!(
                "lossless-sim: {}: {:.2} us (seed {}; flows {:.2}), virtual {:.3} ms",
                m.case,
                fig.avg,
                m.values["seed_avg_latency_us"],
                fig.flows_avg,
                sim.now_ns() as f64 / 1e6
            );
            out.measurements.push(m);
            rows.push(fig);
            if out.partial() {
                break;
            }
            sim.drain(leafspine::DRAIN_NS);
        }
        for t in leafspine::tables(remote_pfc, &rows, ls.senders.len()) {
            println!("{t}\n");
            out.tables.push(t);
        }
        // The last row's congested port, as the lab prints it at the end.
        let last = out.measurements.last().map(|m: &Measurement| &m.values);
        let usage: Vec<Vec<String>> = last
            .and_then(|v| v["receiver_port_queues"].as_array())
            .into_iter()
            .flatten()
            .map(|q| {
                let f = |c: &str, k: &str| format!("{}/{}", q[c], q[k]);
                vec![
                    q["queue"].to_string(),
                    f("current_cells", "current_kb"),
                    f("peak_cells", "peak_kb"),
                    f("average_cells", "average_kb"),
                ]
            })
            .collect();
        let t = table(
            &format!(
                "Buffer Usage on each Queue: (cells/KBytes), the receiver's port, last row, {}",
                fabric.case
            ),
            &["QueueIndex", "Current", "Peak", "Average"],
            &usage,
        );
        println!("{t}");
        out.tables.push(t);
        return Ok(out);
    }
    if let Plan::Prio(prio) = plan {
        let ecn = fabric.case == "ecn=on";
        let mut rows = Vec::new();
        for case in &prio.cases {
            let start = sim.now_ns() + CASE_GAP_NS;
            // Each row's pauses are its own, as the leaf-spine rows' are.
            leafspine::clear_counters(sim);
            setup_prio_case(sim, prio, case, &nic(ROCE_MTU, 0), start)?;
            out.stop = sim.run(args.time_limit, args.max_events, &mut progress);
            if out.partial() {
                break;
            }
            let m = prio_case_results(sim, prio, case, ecn);
            let avg = m.values["lat_t_avg_us_nominal"].as_f64().unwrap_or(0.0);
            rows.push((case.name.clone(), avg));
            out.measurements.push(m);
        }
        let t = prio_table(prio, ecn, &rows);
        println!("{t}");
        out.tables.push(t);
        return Ok(out);
    }
    out.stop = sim.run(args.time_limit, args.max_events, &mut progress);
    if let Plan::Incast(inc) = plan {
        let (m, t) = incast_results(sim, inc, &fabric.case);
        println!("{t}");
        out.measurements.push(m);
        out.tables.push(t);
    }
    if !probes.is_empty() {
        let arrivals = probe::arrivals(sim, &probes);
        let mut rows = Vec::new();
        for (p, at) in probes.iter().zip(&arrivals) {
            let latency = at.map(|t| t - p.sent_ns);
            if latency.is_none() {
                out.lost.push(format!("{} -> {}", p.from, p.to));
            }
            rows.push(vec![
                p.from.clone(),
                p.to.clone(),
                latency.map_or("-".into(), |l| l.to_string()),
            ]);
            out.measurements.push(Measurement {
                case: format!("probe {} -> {}", p.from, p.to),
                params: serde_json::json!(p),
                values: serde_json::json!({
                    "latency_ns": latency,
                    "latency_us": latency.map(|l| l as f64 / 1000.0),
                }),
                latency_us: latency.map(|l| l as f64 / 1000.0).into_iter().collect(),
                throughput: serde_json::Map::new(),
            });
        }
        let probe_table = table(
            &format!(
                "One {}-byte frame on an idle fabric, host to host (ns, virtual time)",
                probes.first().map_or(0, |p| p.bytes)
            ),
            &["from", "to", "latency_ns"],
            &rows,
        );
        println!("{probe_table}");
        out.tables.push(probe_table);
    }
    Ok(out)
}

/// A bare name is one of the lab's topologies, as `make run TOPO=...` takes them.
fn resolve_topology(lab: &Lab, topology: &std::path::Path) -> PathBuf {
    if topology.extension().is_none() && !topology.exists() {
        return lab
            .root
            .join("topo/lossless_topo/topologies")
            .join(topology)
            .with_extension("json");
    }
    topology.to_path_buf()
}
