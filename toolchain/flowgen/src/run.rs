//! Running a generator: outputs, the clock driver, live counters and the result record.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;
use switch_ports::pcap::{self, PcapWriter};
use switch_ports::{AfPacketPort, Port, PortError};

use crate::error::Error;
use crate::gen::{self, Generator, Sink};
use crate::profile::{Profile, TwConfig};
use crate::ring::TxRing;
use crate::sched::{HeapScheduler, Scheduler, TimerWheel};
use crate::template::Template;

/// Which scheduler orders the flows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SchedChoice {
    /// Binary heap (the baseline).
    Heap,
    /// Hierarchical timer wheel.
    Wheel(TwConfig),
}

impl SchedChoice {
    pub fn name(&self) -> &'static str {
        match self {
            SchedChoice::Heap => "pq",
            SchedChoice::Wheel(_) => "tw",
        }
    }
}

/// How generator time moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Pace {
    /// As fast as the CPU allows: measures the generator (sink, pcap file).
    Max,
    /// With the wall clock: what a wire needs.
    Realtime,
}

/// How frames go out on an interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TxMethod {
    /// A `PACKET_TX_RING` (TPACKET_V2): one `send()` per batch of frames.
    Ring,
    /// One `send()` per frame on a plain AF_PACKET socket.
    Plain,
}

/// Ring slots per interface when not told otherwise (8 MiB with 2 KiB slots).
pub const DEFAULT_RING_SLOTS: u32 = 4096;

enum Tx {
    Ring(TxRing),
    Plain(AfPacketPort),
}

/// Sends on Linux interfaces, one per port pair, through AF_PACKET sockets.
pub struct PortSink {
    ports: Vec<Tx>,
}

impl PortSink {
    /// Opens every interface; fails with one line naming the interface and the cause. With
    /// `TxMethod::Ring`, an interface whose ring cannot be set up falls back to plain sends and
    /// says so in one line on stderr.
    pub fn open(ifaces: &[String], method: TxMethod, ring_slots: u32) -> Result<Self, Error> {
        let plain = |i: &String| AfPacketPort::open(i).map(Tx::Plain).map_err(Error::from);
        let ports = ifaces
            .iter()
            .map(|i| match method {
                TxMethod::Plain => plain(i),
                TxMethod::Ring => match TxRing::open(i, ring_slots) {
                    Ok(r) => Ok(Tx::Ring(r)),
                    Err(e) => {
                        let port = plain(i)?;
                        eprintln!("flowgen: TX ring unavailable ({e}); {i} sends one frame per send()");
                        Ok(port)
                    }
                },
            })
            .collect::<Result<_, _>>()?;
        Ok(PortSink { ports })
    }

    /// The method each interface ended up with.
    pub fn methods(&self) -> Vec<TxMethod> {
        self.ports
            .iter()
            .map(|p| match p {
                Tx::Ring(_) => TxMethod::Ring,
                Tx::Plain(_) => TxMethod::Plain,
            })
            .collect()
    }
}

impl Sink for PortSink {
    fn send(&mut self, pair: usize, frame: &[u8], _t: u64) -> Result<bool, Error> {
        let Some(port) = self.ports.get_mut(pair) else {
            return Err(Error::unusable(
                format!("port pair {pair}"),
                "no interface for it",
            ));
        };
        let port = match port {
            Tx::Ring(r) => return r.send(frame),
            Tx::Plain(p) => p,
        };
        match port.send(frame) {
            Ok(()) => Ok(true),
            Err(PortError::Io { source, .. })
                if matches!(source.raw_os_error(), Some(libc::ENOBUFS | libc::EAGAIN)) =>
            {
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }

    fn flush(&mut self) -> Result<(), Error> {
        for p in &mut self.ports {
            if let Tx::Ring(r) = p {
                r.flush()?;
            }
        }
        Ok(())
    }

    fn dropped(&self) -> u64 {
        self.ports
            .iter()
            .map(|p| match p {
                Tx::Ring(r) => r.dropped(),
                Tx::Plain(_) => 0,
            })
            .sum()
    }
}

/// Writes frames into a pcap file stamped with their generator time.
pub struct PcapSink {
    path: PathBuf,
    writer: PcapWriter<BufWriter<std::fs::File>>,
}

impl PcapSink {
    pub fn create(path: &Path) -> Result<Self, Error> {
        let writer = pcap::create_file(path).map_err(|e| Error::file(path, "create", e))?;
        Ok(PcapSink {
            path: path.to_path_buf(),
            writer,
        })
    }
}

impl Sink for PcapSink {
    fn send(&mut self, _pair: usize, frame: &[u8], t: u64) -> Result<bool, Error> {
        self.writer
            .write(Duration::from_nanos(t), frame)
            .map_err(|e| Error::file(&self.path, "write", e))?;
        Ok(true)
    }
}

/// One line of live counters (once per wall-clock second).
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    /// Wall-clock seconds since the run started.
    pub t: f64,
    pub tx_pps: f64,
    /// Frame bits per second (Ethernet header to payload; no FCS, preamble or gap).
    pub tx_bps: f64,
    pub active_flows: u64,
    /// Generator thread CPU time over wall time in the interval (1.0 = one core).
    pub cpu_util: f64,
    /// Total queue-full events so far.
    pub queue_full: u64,
}

/// What a run did.
#[derive(Debug, Clone, Serialize)]
pub struct Measurement {
    /// Generator time covered, seconds.
    pub generator_s: f64,
    pub wall_s: f64,
    /// CPU time of the generator thread, seconds.
    pub cpu_s: f64,
    pub packets: u64,
    pub bytes: u64,
    pub flows_started: u64,
    pub flows_ended: u64,
    pub active_flows: u64,
    pub queue_full: u64,
    /// Of `packets`, frames the output accepted but lost further on (a TX ring's frame that the
    /// interface's queue refused).
    pub tx_dropped: u64,
    pub tx_pps: f64,
    pub tx_bps: f64,
    pub cpu_util: f64,
    /// Packets per CPU-second of the generator thread, millions.
    pub mpps_per_core: f64,
    /// Flow table and scheduler bytes divided by the active flows at the end.
    pub state_bytes_per_flow: f64,
    pub samples: Vec<Sample>,
}

/// How long and how a run goes.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Generator time to cover.
    pub duration_ns: u64,
    pub pace: Pace,
    /// Stop once this many packets went out.
    pub max_packets: Option<u64>,
    /// Print a progress line per second on stderr.
    pub progress: bool,
}

/// CPU time consumed by the calling thread.
pub fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec that we own.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn si(v: f64) -> String {
    match v {
        v if v >= 1e9 => format!("{:.2} G", v / 1e9),
        v if v >= 1e6 => format!("{:.2} M", v / 1e6),
        v if v >= 1e3 => format!("{:.2} k", v / 1e3),
        v => format!("{v:.0} "),
    }
}

/// Drives `gen` from `origin_ns` for the configured time, sampling counters every second.
pub fn drive<S: Scheduler, K: Sink>(
    gen: &mut Generator<S>,
    sink: &mut K,
    origin_ns: u64,
    cfg: &RunConfig,
) -> Result<Measurement, Error> {
    let end = origin_ns.saturating_add(cfg.duration_ns);
    let offered_pps: f64 = gen
        .templates()
        .iter()
        .map(|t| t.cps * t.packets.len() as f64)
        .sum();
    // Max pace advances in steps worth a few thousand packets between clock reads.
    let step = ((4096.0 / offered_pps.max(1.0)) * 1e9).clamp(1_000.0, 1e8) as u64;
    let wall0 = Instant::now();
    let cpu0 = thread_cpu();
    let mut last = (wall0, cpu0, gen.counters());
    let mut next_sample = wall0 + Duration::from_secs(1);
    let mut samples = Vec::new();
    let mut vt = origin_ns;
    loop {
        let before = gen.counters().packets;
        vt = match cfg.pace {
            Pace::Max => vt.saturating_add(step).min(end),
            Pace::Realtime => {
                (origin_ns + wall0.elapsed().as_nanos().min(u64::MAX as u128) as u64).min(end)
            }
        };
        gen.advance(vt, sink)?;
        sink.flush()?;
        let c = gen.counters();
        let now = Instant::now();
        if now >= next_sample {
            let cpu = thread_cpu();
            let dt = now.duration_since(last.0).as_secs_f64();
            let s = Sample {
                t: now.duration_since(wall0).as_secs_f64(),
                tx_pps: (c.packets - last.2.packets) as f64 / dt,
                tx_bps: (c.bytes - last.2.bytes) as f64 * 8.0 / dt,
                active_flows: gen.active_flows() as u64,
                cpu_util: (cpu - last.1).as_secs_f64() / dt,
                queue_full: c.queue_full,
            };
            if cfg.progress {
                let done = (vt - origin_ns) as f64 / cfg.duration_ns.max(1) as f64;
                let bar = (done * 20.0) as usize;
                eprintln!(
                    "[{:<20}] {:>3.0}% t={:.0}s tx {}pps {}b/s active {} cpu {:.0}% queue-full {}",
                    "#".repeat(bar.min(20)),
                    done * 100.0,
                    s.t,
                    si(s.tx_pps),
                    si(s.tx_bps),
                    s.active_flows,
                    s.cpu_util * 100.0,
                    s.queue_full
                );
            }
            samples.push(s);
            last = (now, cpu, c);
            next_sample = now + Duration::from_secs(1);
        }
        if vt >= end || cfg.max_packets.is_some_and(|m| c.packets >= m) {
            break;
        }
        if cfg.pace == Pace::Realtime && c.packets == before {
            std::thread::sleep(Duration::from_micros(20));
        }
    }
    let wall = wall0.elapsed().as_secs_f64();
    let cpu = (thread_cpu() - cpu0).as_secs_f64();
    let c = gen.counters();
    let tx_dropped = sink.dropped();
    let active = gen.active_flows() as u64;
    Ok(Measurement {
        generator_s: (vt - origin_ns) as f64 / 1e9,
        wall_s: wall,
        cpu_s: cpu,
        packets: c.packets,
        bytes: c.bytes,
        flows_started: c.flows_started,
        flows_ended: c.flows_ended,
        active_flows: active,
        queue_full: c.queue_full,
        tx_dropped,
        tx_pps: c.packets as f64 / wall.max(1e-9),
        tx_bps: c.bytes as f64 * 8.0 / wall.max(1e-9),
        cpu_util: cpu / wall.max(1e-9),
        mpps_per_core: c.packets as f64 / cpu.max(1e-9) / 1e6,
        state_bytes_per_flow: gen.state_bytes() as f64 / active.max(1) as f64,
        samples,
    })
}

/// What to generate: the profile and the knobs the command line adds.
#[derive(Debug, Clone)]
pub struct Setup {
    pub profile_path: PathBuf,
    pub profile: Profile,
    pub sched: SchedChoice,
    pub multiplier: f64,
    pub active_flows: Option<u64>,
    /// Start with the table already at steady state.
    pub prefill: bool,
    pub pairs: u32,
    pub seed: u64,
}

/// The result file of `flowgen run`.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub profile: String,
    pub scheduler: &'static str,
    pub tw_buckets: Option<u32>,
    pub tw_levels: Option<u32>,
    pub tw_bucket_usec: Option<f64>,
    pub multiplier: f64,
    pub active_flows_target: Option<u64>,
    /// Factor applied to every gap to hold the target (1 without `--active-flows`).
    pub gap_scale: f64,
    pub clients: u32,
    pub pace: Pace,
    /// Per interface, how it sent (empty for the sink and pcap files).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tx_methods: Vec<TxMethod>,
    #[serde(flatten)]
    pub measurement: Measurement,
}

/// Loads the templates of `setup`, scaled for its active-flow target.
pub fn load_templates(setup: &Setup) -> Result<(Vec<Template>, f64), Error> {
    let dir = setup
        .profile_path
        .parent()
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let g = &setup.profile.generator;
    let file = setup.profile_path.display().to_string();
    let mut templates = setup
        .profile
        .cap_info
        .iter()
        .enumerate()
        .map(|(i, c)| {
            Template::load(
                c,
                &dir,
                setup.multiplier,
                (g.tcp_aging.0, g.udp_aging.0),
                &format!("{file}: cap_info[{i}]"),
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    if templates.len() > u16::MAX as usize {
        return Err(Error::template(
            format!("{file}: cap_info"),
            "at most 65535 templates",
        ));
    }
    let scale = match setup.active_flows {
        Some(n) => gen::scale_to_active_flows(&mut templates, n)?,
        None => 1.0,
    };
    Ok((templates, scale))
}

/// Runs `setup` into `sink` and reports.
pub fn run<K: Sink>(setup: &Setup, sink: &mut K, cfg: &RunConfig) -> Result<Report, Error> {
    let (templates, gap_scale) = load_templates(setup)?;
    let g = &setup.profile.generator;
    let (measurement, clients) = match setup.sched {
        SchedChoice::Heap => {
            let cap = gen::steady_active_flows(&templates).min((1u64 << 24) as f64) as usize;
            let gen = Generator::new(
                HeapScheduler::with_capacity(cap),
                templates,
                g,
                setup.pairs,
                setup.seed,
                0,
            );
            go(gen, sink, setup.prefill, cfg)?
        }
        SchedChoice::Wheel(tw) => {
            let wheel = TimerWheel::new(tw.buckets.0, tw.levels.0, tw.bucket_ns());
            let gen = Generator::new(wheel, templates, g, setup.pairs, setup.seed, 0);
            go(gen, sink, setup.prefill, cfg)?
        }
    };
    let tw = match setup.sched {
        SchedChoice::Wheel(tw) => Some(tw),
        SchedChoice::Heap => None,
    };
    Ok(Report {
        profile: setup.profile_path.display().to_string(),
        scheduler: setup.sched.name(),
        tw_buckets: tw.map(|t| t.buckets.0),
        tw_levels: tw.map(|t| t.levels.0),
        tw_bucket_usec: tw.map(|t| t.bucket_time_usec.0),
        multiplier: setup.multiplier,
        active_flows_target: setup.active_flows,
        gap_scale,
        clients,
        pace: cfg.pace,
        tx_methods: Vec::new(),
        measurement,
    })
}

fn go<S: Scheduler, K: Sink>(
    mut gen: Generator<S>,
    sink: &mut K,
    prefill: bool,
    cfg: &RunConfig,
) -> Result<(Measurement, u32), Error> {
    if prefill {
        gen.prefill();
    }
    let m = drive(&mut gen, sink, 0, cfg)?;
    Ok((m, gen.addresses().clients()))
}

/// Writes the per-second samples as CSV.
pub fn write_samples_csv(path: &Path, samples: &[Sample]) -> Result<(), Error> {
    let err = |e: std::io::Error| Error::file(path, "write", e);
    let mut f = BufWriter::new(std::fs::File::create(path).map_err(err)?);
    writeln!(f, "t,tx_pps,tx_bps,active_flows,cpu_util,queue_full").map_err(err)?;
    for s in samples {
        writeln!(
            f,
            "{:.3},{:.0},{:.0},{},{:.4},{}",
            s.t, s.tx_pps, s.tx_bps, s.active_flows, s.cpu_util, s.queue_full
        )
        .map_err(err)?;
    }
    f.flush().map_err(err)
}

/// Writes `value` as pretty JSON, creating the parent directory.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), Error> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| Error::file(dir, "create directory", e))?;
    }
    let text =
        serde_json::to_string_pretty(value).map_err(|e| Error::file(path, "encode", e.into()))?;
    std::fs::write(path, text + "\n").map_err(|e| Error::file(path, "write", e))
}
