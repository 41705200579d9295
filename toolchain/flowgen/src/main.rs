//! `flowgen`: run a traffic profile, benchmark the schedulers, or sweep active flows (seed 004).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use flowgen::bench::{self, Variant};
use flowgen::gen::NullSink;
use flowgen::profile::{Buckets, Levels, Positive, Profile};
use flowgen::run::{self, Pace, PcapSink, PortSink, RunConfig, SchedChoice, Setup, TxMethod};

#[derive(Parser)]
#[command(
    version,
    about = "Stateful many-flow traffic generator with a timer-wheel scheduler"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum SchedArg {
    /// Hierarchical timer wheel (the profile's `tw` section).
    Tw,
    /// Binary-heap priority queue.
    Pq,
}

#[derive(Subcommand)]
enum Cmd {
    /// Generate the profile's traffic on interfaces, into a pcap file or into the null sink.
    Run(RunArgs),
    /// Check a profile and print what it generates.
    Check {
        #[arg(short = 'f', long)]
        profile: PathBuf,
        #[arg(short = 'm', long, default_value_t = 1.0)]
        multiplier: f64,
    },
    /// Mpps per core of both schedulers at 100, 10k, 1M and 8M active flows (seed profile).
    Bench {
        /// Where the JSON goes.
        #[arg(long, default_value = "results/bench/flowgen.json")]
        out: PathBuf,
        /// Packets measured per point.
        #[arg(long, default_value_t = 20_000_000)]
        packets: u64,
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "100,10000,1000000,8000000"
        )]
        flows: Vec<u64>,
        /// Measure each point this many times and keep the best.
        #[arg(long, default_value_t = 3)]
        repeat: u32,
    },
    /// Seed 004's sweep: active flows from --min to --max in --steps log steps, per variant.
    Sweep {
        /// The base profile (default: the seed's single-flow profile, built in).
        #[arg(short = 'f', long)]
        profile: Option<PathBuf>,
        /// NAME=pq | NAME=tw[:BUCKETSxLEVELS[:USEC]] [@PROFILE]; repeatable.
        #[arg(long = "variant", default_values = ["pq=pq", "tw0=tw", "tw1=tw:16384x2"])]
        variants: Vec<String>,
        #[arg(long, default_value_t = 100)]
        min: u64,
        #[arg(long, default_value_t = 8_000_000)]
        max: u64,
        #[arg(long, default_value_t = 10)]
        steps: u32,
        /// Packets measured per point.
        #[arg(long, default_value_t = 5_000_000)]
        packets: u64,
        #[arg(short = 'm', long, default_value_t = bench::SEED_MULTIPLIER)]
        multiplier: f64,
        /// CSV output (rows appear as points finish).
        #[arg(long)]
        csv: PathBuf,
    },
}

#[derive(clap::Args)]
struct RunArgs {
    /// The traffic profile (YAML).
    #[arg(short = 'f', long)]
    profile: PathBuf,
    /// Send on this interface (AF_PACKET, needs CAP_NET_RAW); repeat for more port pairs.
    #[arg(short = 'i', long = "iface")]
    ifaces: Vec<String>,
    /// How frames go out on interfaces: a PACKET_MMAP TX ring (falls back to plain sends when
    /// the ring cannot be set up) or one send() per frame.
    #[arg(long, value_enum, default_value_t = TxMethod::Ring)]
    tx: TxMethod,
    /// Frame slots of each interface's TX ring.
    #[arg(long, default_value_t = run::DEFAULT_RING_SLOTS)]
    tx_ring_slots: u32,
    /// Discard frames in-process (measures the generator).
    #[arg(long, conflicts_with_all = ["ifaces", "pcap_out"])]
    sink: bool,
    /// Port pairs the sink stands for.
    #[arg(long, default_value_t = 1, requires = "sink")]
    sink_pairs: u32,
    /// Write frames to a pcap file, stamped with their generator time.
    #[arg(long, conflicts_with = "ifaces")]
    pcap_out: Option<PathBuf>,
    #[arg(short = 's', long, value_enum, default_value_t = SchedArg::Tw)]
    scheduler: SchedArg,
    #[arg(long)]
    tw_buckets: Option<u64>,
    #[arg(long)]
    tw_levels: Option<u64>,
    #[arg(long)]
    tw_bucket_usec: Option<f64>,
    /// Multiplies every template's cps (TRex -m).
    #[arg(short = 'm', long, default_value_t = 1.0)]
    multiplier: f64,
    /// Seconds of traffic (default: the profile's duration).
    #[arg(short = 'd', long)]
    duration: Option<f64>,
    /// Hold about N flows active by stretching the flows' gaps (TRex --active-flows).
    #[arg(long)]
    active_flows: Option<u64>,
    /// Start with the flow table at steady state instead of ramping up.
    #[arg(long)]
    prefill: bool,
    /// Default: realtime on interfaces, max into the sink or a pcap file.
    #[arg(long, value_enum)]
    pace: Option<Pace>,
    #[arg(long)]
    max_packets: Option<u64>,
    /// Seed of the random address distribution.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Result file (JSON).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Per-second counters (CSV).
    #[arg(long)]
    csv: Option<PathBuf>,
    /// No progress lines.
    #[arg(short = 'q', long)]
    quiet: bool,
}

/// Library errors (`flowgen::Error`) and the command line's own, printed as one line.
type CliResult = Result<(), Box<dyn std::error::Error>>;

fn positive(name: &str, v: f64) -> Result<f64, String> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(format!("{name} must be greater than 0, got {v}"))
    }
}

fn cmd_run(a: RunArgs) -> CliResult {
    let profile = Profile::load(&a.profile)?;
    let sched = match a.scheduler {
        SchedArg::Pq => SchedChoice::Heap,
        SchedArg::Tw => {
            let mut tw = profile.tw;
            if let Some(b) = a.tw_buckets {
                tw.buckets = Buckets::try_from(b).map_err(|e| format!("--tw-buckets {e}"))?;
            }
            if let Some(l) = a.tw_levels {
                tw.levels = Levels::try_from(l).map_err(|e| format!("--tw-levels {e}"))?;
            }
            if let Some(u) = a.tw_bucket_usec {
                tw.bucket_time_usec =
                    Positive::try_from(u).map_err(|e| format!("--tw-bucket-usec {e}"))?;
            }
            SchedChoice::Wheel(tw)
        }
    };
    let duration = positive("--duration", a.duration.unwrap_or(profile.duration.0))?;
    let pairs = if a.ifaces.is_empty() {
        a.sink_pairs
    } else {
        a.ifaces.len() as u32
    };
    if !(1..=256).contains(&pairs) {
        return Err(format!("1 to 256 port pairs, got {pairs}").into());
    }
    let setup = Setup {
        profile_path: a.profile.clone(),
        profile,
        sched,
        multiplier: positive("--multiplier", a.multiplier)?,
        active_flows: a.active_flows,
        prefill: a.prefill,
        pairs,
        seed: a.seed,
    };
    let cfg = |default_pace| RunConfig {
        duration_ns: (duration * 1e9).min(u64::MAX as f64 / 2.0) as u64,
        pace: a.pace.unwrap_or(default_pace),
        max_packets: a.max_packets,
        progress: !a.quiet,
    };
    let report = if !a.ifaces.is_empty() {
        let mut sink = PortSink::open(&a.ifaces, a.tx, a.tx_ring_slots)?;
        let mut report = run::run(&setup, &mut sink, &cfg(Pace::Realtime))?;
        report.tx_methods = sink.methods();
        report
    } else if let Some(path) = &a.pcap_out {
        let mut sink = PcapSink::create(path)?;
        run::run(&setup, &mut sink, &cfg(Pace::Max))?
    } else if a.sink {
        run::run(&setup, &mut NullSink, &cfg(Pace::Max))?
    } else {
        return Err("choose an output: --iface IFACE, --pcap-out FILE or --sink".into());
    };
    let m = &report.measurement;
    eprintln!(
        "{} packets, {} flows started, {} ended, {} active, {:.3} Mpps per core, {} queue-full",
        m.packets, m.flows_started, m.flows_ended, m.active_flows, m.mpps_per_core, m.queue_full
    );
    if let Some(path) = &a.json {
        run::write_json(path, &report)?;
    }
    if let Some(path) = &a.csv {
        run::write_samples_csv(path, &m.samples)?;
    }
    Ok(())
}

fn cmd_check(path: PathBuf, multiplier: f64) -> CliResult {
    let profile = Profile::load(&path)?;
    let setup = Setup {
        profile_path: path.clone(),
        profile,
        sched: SchedChoice::Heap,
        multiplier: positive("--multiplier", multiplier)?,
        active_flows: None,
        prefill: false,
        pairs: 1,
        seed: 1,
    };
    let (templates, _) = run::load_templates(&setup)?;
    println!("{}: ok", path.display());
    for (i, t) in templates.iter().enumerate() {
        println!(
            "  cap_info[{i}] {}: {} packets, {} bytes per flow, {} cps, lasts {:.6} s",
            t.name,
            t.packets.len(),
            t.bytes_per_flow(),
            t.cps,
            t.span_ns() as f64 / 1e9
        );
    }
    println!(
        "  offered {:.3} Gb/s, {:.0} flows active in steady state",
        flowgen::gen::offered_gbps(&templates),
        flowgen::gen::steady_active_flows(&templates)
    );
    Ok(())
}

fn print_point(p: &bench::Point) {
    eprintln!(
        "{:<6} {:>9} flows: {:>7.3} Mpps/core ({} packets, {:.1} B/flow state, {:.1} B/flow RSS)",
        p.variant,
        p.active_flows,
        p.mpps_per_core,
        p.packets,
        p.state_bytes_per_flow,
        p.rss_bytes_per_flow
    );
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::Run(a) => cmd_run(a),
        Cmd::Check {
            profile,
            multiplier,
        } => cmd_check(profile, multiplier),
        Cmd::Bench {
            out,
            packets,
            flows,
            repeat,
        } => (|| -> CliResult {
            let r = bench::bench(&flows, packets, repeat, print_point)?;
            run::write_json(&out, &r)?;
            eprintln!(
                "tw at {} flows: {:.0}% of its rate at {} flows; pq: {:.0}%; written to {}",
                flows.iter().max().unwrap_or(&0),
                r.tw_ratio_max_to_min_flows * 100.0,
                flows.iter().min().unwrap_or(&0),
                r.pq_ratio_max_to_min_flows * 100.0,
                out.display()
            );
            Ok(())
        })(),
        Cmd::Sweep {
            profile,
            variants,
            min,
            max,
            steps,
            packets,
            multiplier,
            csv,
        } => (|| -> CliResult {
            if min == 0 || max < min || steps == 0 {
                return Err(format!(
                    "need 0 < --min <= --max and --steps > 0, got {min}, {max}, {steps}"
                )
                .into());
            }
            let base = match profile {
                Some(p) => {
                    let prof = Profile::load(&p)?;
                    (p, prof)
                }
                None => {
                    let v = bench::seed_variant("seed", None)?;
                    (v.profile_path, v.profile)
                }
            };
            let variants = variants
                .iter()
                .map(|s| Variant::parse(s, &base))
                .collect::<Result<Vec<_>, _>>()?;
            let points = bench::log_points(min, max, steps);
            let mut out =
                std::fs::File::create(&csv).map_err(|e| format!("{}: {e}", csv.display()))?;
            bench::sweep(
                &variants,
                &points,
                packets,
                positive("--multiplier", multiplier)?,
                &mut out,
                print_point,
            )?;
            out.flush().map_err(|e| format!("{}: {e}", csv.display()))?;
            Ok(())
        })(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("flowgen: error: {e}");
            ExitCode::FAILURE
        }
    }
}
