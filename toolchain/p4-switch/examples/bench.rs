//! Packets/s of the switch on an L3 program (10,000 /24 LPM routes, a 4-member ECMP action
//! selector on crc16, MAC and TTL rewrite, IPv4 checksum update: `switch-engine`'s
//! `tests/programs/ecmp.json`) beside the no-op forwarder (`noop.json`) on the same path as the
//! ceiling, all in this run:
//!
//! - **in process**: the dataplane core (ingress, TM, egress, transmit to a port that discards),
//!   without a traffic manager (bmv2's path) and with one shaping 100 Gb/s ports on a simulated
//!   clock (so it measures the switch's work per packet, not the line rate);
//! - **veth** (root): the threaded runtime (a receive thread per port, the dataplane thread) on
//!   AF_PACKET ports in a network namespace of its own: one thread floods 64-byte frames into
//!   h0, another counts what leaves through h1; packets/s are the frames counted per second.
//!
//! `cargo run --release -p p4-switch --example p4-switch-bench -- OUT.json [PACKETS] [VETH_SECONDS]`

mod support;

use p4_switch::core::Core;
use p4_switch::runtime::{Clock, ClockKind, Runtime};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use switch_engine::{FieldMatch, Switch, SwitchConfig};
use switch_ports::{AfPacketPort, Port, Recv, MAX_FRAME};

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
        "{}/../switch-engine/tests/programs/{}.json",
        env!("CARGO_MANIFEST_DIR"),
        program.name()
    );
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    let mut sw =
        Switch::from_json(&text, SwitchConfig::default()).map_err(|e| format!("{path}: {e}"))?;
    if program == Program::Noop {
        return Ok(sw);
    }
    let err = |e: switch_engine::ApiError| format!("{path}: {e}");
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
        sw.table_add_group_entry("ingress.ipv4_lpm", key, None, 1)
            .map_err(err)?;
    }
    Ok(sw)
}

/// 64-byte IPv4/UDP frames of `FLOWS` flows spread over the routes.
fn frames() -> Vec<Vec<u8>> {
    (0..FLOWS)
        .map(|i| {
            let mut p = vec![2, 0, 0, 0, 0, 0xaa, 2, 0, 0, 0, 0, 0xbb, 0x08, 0x00];
            p.extend_from_slice(&[0x45, 0, 0, 50, 0, 0, 0, 0, 64, 17, 0, 0]);
            p.extend_from_slice(&(0xc0a8_0000 + i).to_be_bytes());
            p.extend_from_slice(&(0x0a00_0001 | ((i % ROUTES) << 8)).to_be_bytes());
            p.resize(64, 0);
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
    let frames = frames();
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

/// Through veths: (frames offered into h0 per second, frames out of h1 per second).
fn veth(program: Program, secs: f64) -> Result<(f64, f64), String> {
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
    let rt = Runtime::start(core, ports, Duration::ZERO, Clock::new(ClockKind::Real), 0)
        .map_err(|e| e.to_string())?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let sender = std::thread::spawn(move || {
        let frames = frames();
        let mut n = 0u64;
        while !flag.load(Ordering::Relaxed) {
            // ENOBUFS when the veth's queue is full: the frame is lost, as on a real link.
            let _ = h0.send(&frames[n as usize % frames.len()]);
            n += 1;
        }
        n
    });
    // Count after a warm-up, so that the figure is the steady state.
    std::thread::sleep(Duration::from_millis(200));
    let mut buf = vec![0u8; MAX_FRAME];
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let start = Instant::now();
    let mut got = 0u64;
    while Instant::now() < deadline {
        if let Ok(Recv::Frame(n)) = h1.recv(&mut buf, Duration::from_millis(10)) {
            if n >= 34 && buf[12..14] == [0x08, 0x00] && buf[26..28] == [0xc0, 0xa8] {
                got += 1;
            }
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let offered = sender.join().map_err(|_| "the sender panicked")?;
    rt.shutdown();
    let sent_secs = elapsed + 0.2;
    Ok((offered as f64 / sent_secs, got as f64 / elapsed))
}

fn run(packets: u64, veth_secs: f64) -> Result<Value, String> {
    let mut doc = json!({
        "bench": "p4-switch",
        "program": "switch-engine/tests/programs/ecmp.json: 10000 /24 LPM routes, 4-member ECMP selector (crc16), MAC + TTL rewrite, IPv4 checksum",
        "baseline": "switch-engine/tests/programs/noop.json: every packet to port 1",
        "frame_bytes": 64,
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
        let (l3_offered, l3) = veth(Program::L3, veth_secs)?;
        let (noop_offered, noop) = veth(Program::Noop, veth_secs)?;
        json!({
            "seconds": veth_secs,
            "l3_pps": l3.round(),
            "l3_offered_pps": l3_offered.round(),
            "noop_pps": noop.round(),
            "noop_offered_pps": noop_offered.round(),
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
