//! Packets/s of the switch on an L3 program (10,000 /24 LPM routes, a 4-member ECMP action
//! selector on crc16, MAC and TTL rewrite, IPv4 checksum update: `switch-v1model`'s
//! `tests/programs/ecmp.json`) beside the no-op forwarder (`noop.json`) on the same path as the
//! ceiling, all in this run:
//!
//! - **in process**: the dataplane core (ingress, TM, egress, transmit to a port that discards),
//!   without a traffic manager (bmv2's path) and with one shaping 100 Gb/s ports on a simulated
//!   clock (so it measures the switch's work per packet, not the line rate);
//! - **veth** (root): the threaded runtime (the dataplane thread polls the AF_PACKET ports) on
//!   AF_PACKET ports in a network namespace of its own, 64-byte frames sent into h0 and counted
//!   out of h1 by threads of this bench, which share the machine's cores with the switch:
//!   - flood (`l3_pps`, `l3_offered_pps`, ...): one thread sends as fast as it can for
//!     VETH_SECONDS (after a warm-up); `_offered_pps` is what it sent per second, `_pps` what
//!     left h1 per second. Most of the offered frames are dropped, and the sender takes CPU the
//!     switch would otherwise have, so this is the switch under overload beside its generator;
//!   - `zero_loss` (RFC 2544 26.1 throughput): trials of `trial_seconds` at one offered rate from
//!     a paced sender (bursts every `burst_gap_us` on a fixed schedule); a trial passes when
//!     what left h1 (counted until `in_flight_wait_ms` after the last frame sent) is at least
//!     what was sent minus `loss_tolerance`; the rate is bisected between `search_pps` to
//!     `resolution`, `max_trials` at most. `pps` is the highest passing offered rate as the
//!     sender achieved it (not its target); every trial is listed;
//!   - `l3_full_size`/`noop_full_size`: the same search with 1514-byte frames, also in Gb/s
//!     (frame bits), since bmv2's quoted figure (about 1 Gb/s, 80,000 packets/s) is iperf's
//!     full-size frames; `vs_bmv2` divides by bmv2's quoted figure in the same unit (packets/s
//!     for 64-byte frames, Gb/s for full-size ones);
//!   - `pps_per_switch_core` (flood, each trial, best trial): packets out of h1 per CPU-second
//!     (user + system, from schedstat) of the switch's own threads (`switch_threads`: the
//!     runtime's "dataplane", "tx" and "rx N"), and `switch_cores` the CPU-seconds they used per
//!     second: what the switch does per core of its own, whatever the generator takes.
//!
//! `cargo run --release -p p4-switch --example p4-switch-bench -- OUT.json [PACKETS] [VETH_SECONDS]`

mod support;

use p4_switch::clock::{ClockKind, SystemClock};
use p4_switch::core::Core;
use p4_switch::runtime::Runtime;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use switch_ports::{AfPacketPort, Port, Recv, MAX_FRAME};
use switch_v1model::{FieldMatch, Switch, SwitchConfig};

const ROUTES: u32 = 10_000;
const FLOWS: u32 = 4096;

#[derive(Clone, Copy, PartialEq)]
enum Program {
    L3,
    Noop,
}

impl Program {
    fn name(self) -> &'static str {
        match self {
            Program::L3 => "ecmp",
            Program::Noop => "noop",
        }
    }
}

/// The program with its routes: every ECMP member to a port of `member_ports`.
fn switch(program: Program, member_ports: [u8; 4]) -> Result<Switch, String> {
    let path = format!(
        "{}/../switch-v1model/tests/programs/{}.json",
        env!("CARGO_MANIFEST_DIR"),
        program.name()
    );
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    let mut sw =
        Switch::from_json(&text, SwitchConfig::default()).map_err(|e| format!("{path}: {e}"))?;
    if program == Program::Noop {
        return Ok(sw);
    }
    let err = |e: switch_v1model::ApiError| format!("{path}: {e}");
    let mut members = Vec::new();
    for (i, port) in member_ports.into_iter().enumerate() {
        let args = [vec![0, port], vec![0, 0, 0, 0, 0, i as u8 + 1]];
        members.push(
            sw.profile_add_member("ingress.ecmp_ap", "ingress.set_nhop", &args)
                .map_err(err)?,
        );
    }
    let group: Vec<(u32, u32)> = members.iter().map(|&m| (m, 1)).collect();
    sw.profile_set_group("ingress.ecmp_ap", 1, &group)
        .map_err(err)?;
    for i in 0..ROUTES {
        let prefix = (0x0a00_0000 | (i << 8)).to_be_bytes().to_vec();
        let key = vec![FieldMatch::Lpm {
            value: prefix,
            prefix_len: 24,
        }];
        sw.table_add_group_entry("ingress.ipv4_lpm", &key, None, 1)
            .map_err(err)?;
    }
    Ok(sw)
}

/// The frame size of every figure but one: the smallest Ethernet frame (without FCS).
const SMALL: usize = 64;
/// The full-size frame of a 1500-byte MTU, for the one figure in bits per second: bmv2's quoted
/// rate (about 1 Gb/s, 80,000 packets/s through a simple router) was measured with iperf's
/// full-size frames.
const FULL: usize = 1514;
/// bmv2's quoted simple-router rate, the yardstick.
const BMV2_PPS: f64 = 80_000.0;
const BMV2_GBPS: f64 = 1.0;

/// IPv4/UDP frames of `len` bytes, `FLOWS` flows spread over the routes.
fn frames(len: usize) -> Vec<Vec<u8>> {
    let ip_len = (len - 14) as u16;
    (0..FLOWS)
        .map(|i| {
            let mut p = vec![
                2, 0, 0, 0, 0, 0xaa, 2, 0, 0, 0, 0, 0xbb, 0x08, 0x00, 0x45, 0,
            ];
            p.extend_from_slice(&ip_len.to_be_bytes());
            p.extend_from_slice(&[0, 0, 0, 0, 64, 17, 0, 0]);
            p.extend_from_slice(&(0xc0a8_0000 + i).to_be_bytes());
            p.extend_from_slice(&(0x0a00_0001 | ((i % ROUTES) << 8)).to_be_bytes());
            p.resize(len, 0);
            p
        })
        .collect()
}

/// In process: every frame from port 0 through the core, to ports that discard.
fn in_process(program: Program, tm: bool, packets: u64) -> Result<f64, String> {
    let sw = switch(program, [1, 2, 3, 4])?;
    let ports: BTreeMap<u32, Arc<dyn Port>> = (0..5)
        .map(|p| (p, Arc::new(support::Discard) as Arc<dyn Port>))
        .collect();
    let cfg = tm
        .then(|| {
            let mut text = "buffer: {total_bytes: 12582912, chip: trident3}\nports:\n".to_string();
            for p in 1..5 {
                text.push_str(&format!("  - {{port: {p}, rate_bps: 100000000000}}\n"));
            }
            switch_tm::TmConfig::parse(&text, switch_tm::ConfigFormat::Yaml)
        })
        .transpose()
        .map_err(|e| e.to_string())?;
    let mut core =
        Core::new(Some(sw), cfg, ports, SwitchConfig::default(), 0).map_err(|e| e.to_string())?;
    let frames = frames(SMALL);
    let mut now = 0u64;
    let start = Instant::now();
    for i in 0..packets {
        core.receive(now, 0, &frames[i as usize % frames.len()]);
        if let Some(t) = core.run_due(now) {
            now = now.max(t);
        }
    }
    while let Some(t) = core.run_due(now) {
        now = t;
    }
    let secs = start.elapsed().as_secs_f64();
    let sent: u64 = core.counters().tx_frames.values().sum();
    if sent != packets {
        return Err(format!(
            "{}: sent {sent} of {packets} packets",
            program.name()
        ));
    }
    Ok(packets as f64 / secs)
}

/// Bytes of the UDP payload carrying the tag of the run a frame belongs to (0 for the flood, the
/// trial's number in the search); neither program rewrites them, so frames of one trial still
/// leaving the switch during the next are not counted in it.
const TAG: std::ops::Range<usize> = 42..46;
/// The flood runs this long before counting starts, so that its figure is the steady state.
const WARM_UP: Duration = Duration::from_millis(200);
/// Zero-loss search: the length of a trial at one offered rate.
const TRIAL: Duration = Duration::from_secs(1);
/// A trial passes when at most this fraction of the frames sent is missing at h1.
const LOSS_TOLERANCE: f64 = 0.001;
/// After a trial's last frame, counting goes on this long for the frames still in the switch.
const IN_FLIGHT: Duration = Duration::from_millis(50);
/// Offered rates the search starts between, in packets/s.
const SEARCH_PPS: (f64, f64) = (10_000.0, 1_000_000.0);
/// The search stops when the lowest failing rate is within this fraction of the highest passing.
const RESOLUTION: f64 = 0.03;
/// Trials per program at most (a bisection over SEARCH_PPS to RESOLUTION takes 9).
const MAX_TRIALS: usize = 12;
/// Gap between the paced sender's bursts: long enough for a sleep to end on time, short enough
/// that a burst (rate × gap frames) is a small part of what the socket buffers hold.
const BURST_GAP: Duration = Duration::from_micros(250);

/// Whether `frame` is one of the bench's tagged `tag`; anything else leaving h1 is not counted.
fn ours(frame: &[u8], tag: u32) -> bool {
    frame.len() >= TAG.end
        && frame[12..14] == [0x08, 0x00]
        && frame[26..28] == [0xc0, 0xa8]
        && frame[TAG] == tag.to_be_bytes()
}

/// What a sender did. `frames` counts the frames the kernel refused (`refused`, ENOBUFS: its
/// queue toward the switch's port was full) as sent: they were offered and lost, as on a link.
struct Sent {
    frames: u64,
    refused: u64,
    secs: f64,
}

/// Sends the bench's frames tagged `tag` into `port` for `length`: as fast as one thread can
/// (`pps` None), or at `pps` in bursts every `BURST_GAP` on a schedule fixed at the start, so
/// that a late wake-up is made up by the next burst instead of lowering the rate.
fn send(port: &dyn Port, tag: u32, pps: Option<f64>, length: Duration, frame_len: usize) -> Sent {
    // Sleeps end within a microsecond of their deadline instead of the default 50 µs slack.
    // SAFETY: PR_SET_TIMERSLACK takes one integer and changes only the calling thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    let mut frames = frames(frame_len);
    for f in &mut frames {
        f[TAG].copy_from_slice(&tag.to_be_bytes());
    }
    // Unpaced, the clock is read once per 64 frames.
    let burst = pps.map_or(64, |r| (r * BURST_GAP.as_secs_f64()).ceil() as u64);
    let start = Instant::now();
    let (mut n, mut refused) = (0u64, 0u64);
    loop {
        let now = Instant::now();
        if now >= start + length {
            break;
        }
        if let Some(r) = pps {
            let due = start + Duration::from_secs_f64(n as f64 / r);
            if due > now {
                std::thread::sleep(due - now);
                continue;
            }
        }
        for _ in 0..burst {
            if port.send(&frames[n as usize % frames.len()]).is_err() {
                refused += 1;
            }
            n += 1;
        }
    }
    Sent {
        frames: n,
        refused,
        secs: start.elapsed().as_secs_f64(),
    }
}

/// `send` on a thread of its own, named so that it is never taken for one of the switch's.
fn spawn_sender<'s, 'p: 's>(
    scope: &'s std::thread::Scope<'s, 'p>,
    port: &'p dyn Port,
    tag: u32,
    pps: Option<f64>,
    length: Duration,
    frame_len: usize,
) -> Result<std::thread::ScopedJoinHandle<'s, Sent>, String> {
    std::thread::Builder::new()
        .name("bench send".into())
        .spawn_scoped(scope, move || send(port, tag, pps, length, frame_len))
        .map_err(|e| format!("start the sender: {e}"))
}

/// The bench's frames tagged `tag` received on `port` until `done` says so.
fn count(port: &dyn Port, tag: u32, mut done: impl FnMut() -> bool) -> u64 {
    let mut buf = vec![0u8; MAX_FRAME];
    let mut n = 0;
    while !done() {
        if let Ok(Recv::Frame(len)) = port.recv(&mut buf, Duration::from_millis(10)) {
            n += u64::from(ours(&buf[..len], tag));
        }
    }
    n
}

/// CPU time of the switch's own threads: the runtime names them "dataplane", "tx" and "rx N"; the
/// bench's sender and counter are other threads of this process and are left out.
struct SwitchCpu(BTreeMap<String, (String, u64)>);

impl SwitchCpu {
    fn now() -> Result<SwitchCpu, String> {
        let tasks = "/proc/self/task";
        let dir = std::fs::read_dir(tasks).map_err(|e| format!("{tasks}: {e}"))?;
        let mut threads = BTreeMap::new();
        for entry in dir {
            let path = entry.map_err(|e| format!("{tasks}: {e}"))?.path();
            // A thread that ended since the listing has no files left: it is simply not counted.
            let Ok(comm) = std::fs::read_to_string(path.join("comm")) else {
                continue;
            };
            let name = comm.trim_end();
            if !(name.starts_with("dataplane") || name.starts_with("rx ") || name == "tx") {
                continue;
            }
            // schedstat's first field: nanoseconds on a CPU, user and system time together.
            let Ok(stat) = std::fs::read_to_string(path.join("schedstat")) else {
                continue;
            };
            let ns = stat
                .split_whitespace()
                .next()
                .and_then(|f| f.parse().ok())
                .ok_or_else(|| format!("{}: no run time in {stat:?}", path.display()))?;
            let tid = path.file_name().unwrap_or_default().to_string_lossy();
            threads.insert(tid.into_owned(), (name.to_string(), ns));
        }
        if threads.is_empty() {
            return Err(format!(
                "{tasks}: no switch thread (\"dataplane\", \"tx\", \"rx N\") to measure"
            ));
        }
        Ok(SwitchCpu(threads))
    }

    /// CPU seconds of the switch's threads since `self` (threads started since counted whole),
    /// and their names.
    fn since(&self) -> Result<(f64, Vec<String>), String> {
        let now = SwitchCpu::now()?;
        let ns: u64 = now
            .0
            .iter()
            .map(|(tid, (_, ns))| {
                ns.saturating_sub(self.0.get(tid).map_or(0, |(_, before)| *before))
            })
            .sum();
        let names = now.0.into_values().map(|(name, _)| name).collect();
        Ok((ns as f64 / 1e9, names))
    }
}

/// The flood: one thread sends into h0 as fast as it can, the calling one counts what leaves h1.
struct Flood {
    offered_pps: f64,
    pps: f64,
    pps_per_switch_core: f64,
    switch_cores: f64,
    switch_threads: Vec<String>,
}

fn flood(h0: &dyn Port, h1: &dyn Port, length: Duration) -> Result<Flood, String> {
    std::thread::scope(|s| {
        let sender = spawn_sender(s, h0, 0, None, WARM_UP + length, SMALL)?;
        let warm = Instant::now() + WARM_UP;
        // Read, not only wait: frames of the warm-up left in h1's buffer would count as later.
        count(h1, 0, || Instant::now() >= warm);
        let cpu = SwitchCpu::now()?;
        let start = Instant::now();
        let got = count(h1, 0, || sender.is_finished());
        let secs = start.elapsed().as_secs_f64();
        let (cpu_secs, switch_threads) = cpu.since()?;
        let sent = sender.join().map_err(|_| "the sender panicked")?;
        Ok(Flood {
            offered_pps: sent.frames as f64 / sent.secs,
            pps: got as f64 / secs,
            pps_per_switch_core: got as f64 / cpu_secs,
            switch_cores: cpu_secs / secs,
            switch_threads,
        })
    })
}

/// Cores are reported to two decimals: finer is noise on a shared machine.
fn two_places(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// One trial of the zero-loss search at `pps`, its `frame_len`-byte frames tagged `tag`.
fn trial(
    h0: &dyn Port,
    h1: &dyn Port,
    tag: u32,
    pps: f64,
    frame_len: usize,
) -> Result<Value, String> {
    settle(h1);
    let (cpu, start) = (SwitchCpu::now()?, Instant::now());
    let (sent, got) = std::thread::scope(|s| {
        let sender = spawn_sender(s, h0, tag, Some(pps), TRIAL, frame_len)?;
        let mut until = None;
        let got = count(h1, tag, || match until {
            Some(t) => Instant::now() >= t,
            None => {
                if sender.is_finished() {
                    until = Some(Instant::now() + IN_FLIGHT);
                }
                false
            }
        });
        let sent = sender.join().map_err(|_| "the sender panicked")?;
        Ok::<_, String>((sent, got))
    })?;
    let (cpu_secs, _) = cpu.since()?;
    let secs = start.elapsed().as_secs_f64();
    Ok(json!({
        "target_pps": pps.round(),
        "offered_pps": (sent.frames as f64 / sent.secs).round(),
        "sent": sent.frames,
        "refused_by_kernel": sent.refused,
        "received": got,
        "pass": got as f64 >= sent.frames as f64 * (1.0 - LOSS_TOLERANCE),
        "pps_per_switch_core": (got as f64 / cpu_secs).round(),
        "switch_cores": two_places(cpu_secs / secs),
    }))
}

/// Waits until nothing has left the switch for `IN_FLIGHT` (a second at most), so that one
/// trial's backlog does not load the next.
fn settle(h1: &dyn Port) {
    let mut buf = vec![0u8; MAX_FRAME];
    let give_up = Instant::now() + Duration::from_secs(1);
    while Instant::now() < give_up && matches!(h1.recv(&mut buf, IN_FLIGHT), Ok(Recv::Frame(_))) {}
}

/// RFC 2544 (26.1) throughput, with a loss tolerance: bisects the offered rate (geometrically)
/// between `SEARCH_PPS` until the pass/fail bounds are `RESOLUTION` apart or `MAX_TRIALS` ran.
/// The figure is the highest offered rate (as achieved, not as targeted) of a passing trial.
/// Trials are tagged from `first_tag` on, so that two searches on one switch stay apart.
fn zero_loss(
    h0: &dyn Port,
    h1: &dyn Port,
    frame_len: usize,
    first_tag: u32,
) -> Result<Value, String> {
    let (mut passed, mut failed) = SEARCH_PPS;
    let mut rate = passed;
    let mut trials = Vec::new();
    while trials.len() < MAX_TRIALS {
        let t = trial(h0, h1, first_tag + trials.len() as u32, rate, frame_len)?;
        let pass = t["pass"] == true;
        trials.push(t);
        if pass {
            passed = rate;
        } else if trials.len() == 1 {
            // Even the lowest rate loses frames: there is nothing to search between.
            break;
        } else {
            failed = rate;
        }
        if failed / passed <= 1.0 + RESOLUTION {
            break;
        }
        rate = (passed * failed).sqrt();
    }
    let best = trials.iter().filter(|t| t["pass"] == true).max_by(|a, b| {
        let pps = |t: &Value| t["offered_pps"].as_f64().unwrap_or(0.0);
        pps(a).total_cmp(&pps(b))
    });
    let pps = best.and_then(|t| t["offered_pps"].as_f64());
    let gbps = pps.map(|p| two_places(p * frame_len as f64 * 8.0 / 1e9));
    Ok(json!({
        "frame_bytes": frame_len,
        "pps": pps,
        "gbps": gbps,
        // bmv2's figure in the same unit: packets/s for small frames, bits/s for full-size.
        "vs_bmv2": if frame_len == FULL {
            gbps.map(|g| two_places(g / BMV2_GBPS))
        } else {
            pps.map(|p| two_places(p / BMV2_PPS))
        },
        "pps_per_switch_core": best.map(|t| t["pps_per_switch_core"].clone()),
        "switch_cores": best.map(|t| t["switch_cores"].clone()),
        "trials": trials,
    }))
}

/// Through veths, on one runtime for `program`: the flood for `flood_length`, then the search
/// with 64-byte frames and with full-size ones.
fn veth(program: Program, flood_length: Duration) -> Result<(Flood, Value, Value), String> {
    let ns = netns_test_support::Netns::new("p4swb");
    ns.veth("s0", "h0", None);
    ns.veth("s1", "h1", None);
    let open = |names: [&'static str; 4]| {
        ns.run(move || -> Result<Vec<Arc<AfPacketPort>>, String> {
            names
                .iter()
                .map(|n| {
                    AfPacketPort::open(n)
                        .map(Arc::new)
                        .map_err(|e| e.to_string())
                })
                .collect()
        })
    };
    let p = open(["s0", "s1", "h0", "h1"])?;
    let (s0, s1, h0, h1) = (p[0].clone(), p[1].clone(), p[2].clone(), p[3].clone());
    let ports: Vec<(u32, Arc<dyn Port>)> = vec![(0, s0), (1, s1)];
    let core = Core::new(
        Some(switch(program, [1; 4])?),
        None,
        ports.iter().cloned().collect(),
        SwitchConfig::default(),
        0,
    )
    .map_err(|e| e.to_string())?;
    let rt = Runtime::start(
        core,
        ports,
        Duration::ZERO,
        SystemClock::new(ClockKind::Real),
        0,
    )
    .map_err(|e| e.to_string())?;
    let measured = flood(&*h0, &*h1, flood_length)
        .and_then(|f| {
            let small = zero_loss(&*h0, &*h1, SMALL, 1)?;
            Ok((
                f,
                small,
                zero_loss(&*h0, &*h1, FULL, 1 + MAX_TRIALS as u32)?,
            ))
        })
        .map_err(|e| format!("{}: {e}", program.name()));
    rt.shutdown();
    measured
}

fn run(packets: u64, veth_secs: f64) -> Result<Value, String> {
    let mut doc = json!({
        "bench": "p4-switch",
        "program": "switch-v1model/tests/programs/ecmp.json: 10000 /24 LPM routes, 4-member ECMP selector (crc16), MAC + TTL rewrite, IPv4 checksum",
        "baseline": "switch-v1model/tests/programs/noop.json: every packet to port 1",
        "frame_bytes": SMALL,
        "flows": FLOWS,
        "in_process": {
            "packets": packets,
            "l3_pps_without_tm": in_process(Program::L3, false, packets)?.round(),
            "l3_pps_with_tm_100g": in_process(Program::L3, true, packets)?.round(),
            "noop_pps_without_tm": in_process(Program::Noop, false, packets)?.round(),
            "noop_pps_with_tm_100g": in_process(Program::Noop, true, packets)?.round(),
        },
    });
    // SAFETY: geteuid has no preconditions.
    doc["veth"] = if unsafe { libc::geteuid() } == 0 {
        let flood_length = Duration::from_secs_f64(veth_secs);
        let (l3, l3_search, l3_full) = veth(Program::L3, flood_length)?;
        let (noop, noop_search, noop_full) = veth(Program::Noop, flood_length)?;
        json!({
            "seconds": veth_secs,
            "l3_pps": l3.pps.round(),
            "l3_offered_pps": l3.offered_pps.round(),
            "l3_pps_per_switch_core": l3.pps_per_switch_core.round(),
            "l3_switch_cores": two_places(l3.switch_cores),
            "noop_pps": noop.pps.round(),
            "noop_offered_pps": noop.offered_pps.round(),
            "noop_pps_per_switch_core": noop.pps_per_switch_core.round(),
            "noop_switch_cores": two_places(noop.switch_cores),
            "switch_threads": l3.switch_threads,
            "zero_loss": {
                "trial_seconds": TRIAL.as_secs_f64(),
                "loss_tolerance": LOSS_TOLERANCE,
                "in_flight_wait_ms": IN_FLIGHT.as_millis(),
                "search_pps": [SEARCH_PPS.0, SEARCH_PPS.1],
                "resolution": RESOLUTION,
                "max_trials": MAX_TRIALS,
                "burst_gap_us": BURST_GAP.as_micros(),
                "bmv2_quoted": {"pps": BMV2_PPS, "gbps": BMV2_GBPS},
                "l3": l3_search,
                "noop": noop_search,
                "l3_full_size": l3_full,
                "noop_full_size": noop_full,
            },
        })
    } else {
        json!({"not_measured": "needs root (network namespace, AF_PACKET)"})
    };
    Ok(doc)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(out) = args.next() else {
        eprintln!("usage: p4-switch-bench OUT.json [PACKETS] [VETH_SECONDS]");
        std::process::exit(2);
    };
    let packets = args
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000u64);
    let veth_secs = args.next().and_then(|n| n.parse().ok()).unwrap_or(2.0);
    support::finish("p4-switch-bench", &out, run(packets, veth_secs));
}
