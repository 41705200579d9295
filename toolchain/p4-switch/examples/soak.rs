//! `make soak` (issue 19): 60 s of switch time through p4-switch's `Core` (the engine running
//! p4src's `lossless.p4`, programmed as `tests/lossless_pipeline.rs` does, and switch-tm) on a
//! simulated clock. Two senders on ports 1 and 2 send lossless traffic (DSCP 3, PG 3, queue 3)
//! at line rate to port 3, an incast of 2:1, and honour the PFC frames the switch sends them.
//! Every 5 s the peer of port 3 storms: it sends PFC XOFF for priority 3 every 10 ms for 1 s,
//! so that the PFC watchdog (detection 200 ms, restoration 400 ms, action drop) detects the
//! storm and flushes the queue.
//!
//! A storm window runs from the first XOFF of a storm until the storm is over and the watchdog
//! has restored the queue. Every lossless frame offered that is neither forwarded nor queued
//! is lost (in the traffic manager or in the pipeline); losses are sampled every millisecond
//! and counted inside or outside the windows. At the end, with the traffic stopped, every
//! occupancy register of the pipeline must be 0.
//!
//! `cargo run --release -p p4-switch --example p4-switch-soak`: prints a summary and
//! `lossless drops outside storms: N`, `occupancy at end: N bytes`; exits 1 when either is not 0.

// Shared with the tests, which use all of it; the soak compiles one program.
#[allow(dead_code)]
#[path = "../tests/common/fixture.rs"]
mod fixture;
#[path = "../tests/common/lossless.rs"]
mod lossless;

use lossless_wire::pfc::MacControl;
use p4_switch::core::Core;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use switch_ports::{Port, PortError, Recv};
use switch_tm::{wire_bytes, ConfigFormat, DropReason, PfcwdEventKind, TmConfig};

const MS: u64 = 1_000_000;
const S: u64 = 1_000 * MS;
const SENDERS: [u32; 2] = [1, 2];
const UPLINK: u32 = 3;
/// The lossless priority: DSCP, PG and queue.
const LOSSLESS: usize = 3;
/// Every link's rate; a pause quantum is 512 bit times at it.
const RATE_BPS: u64 = 100_000_000;
const FRAME: usize = 1000;
const DURATION: u64 = 60 * S;
const STORM_EVERY: u64 = 5 * S;
const STORM_LEN: u64 = S;
const STORM_XOFF_EVERY: u64 = 10 * MS;
/// After the traffic stops, the time the switch is left to drain before occupancy is read.
const DRAIN: u64 = S;
/// The resolution of the windows' accounting.
const SAMPLE: u64 = MS;

const TM_CONFIG: &str = "buffer: {total_bytes: 4194304}\npfcwd_poll_interval_ms: 100\nports:\n  \
    - {port: 1, rate_bps: 100000000}\n  - {port: 2, rate_bps: 100000000}\n  \
    - {port: 3, rate_bps: 100000000, pfc_enable: [3], pfc_to_queue: {3: 3}, \
    pfcwd: {detection_time_ms: 200, restoration_time_ms: 400, action: drop}}\n";

/// The far end of a link: counts the data frames the switch sends it and keeps its MAC control
/// frames for the sender to act on.
struct Peer {
    name: String,
    data: AtomicU64,
    control: Mutex<Vec<Vec<u8>>>,
}

impl Port for Peer {
    fn name(&self) -> &str {
        &self.name
    }
    fn send(&self, frame: &[u8]) -> Result<(), PortError> {
        if matches!(MacControl::decode(frame), Ok(Some(_))) {
            self.control
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(frame.to_vec());
        } else {
            self.data.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }
    fn recv(&self, _buf: &mut [u8], _t: Duration) -> Result<Recv, PortError> {
        Ok(Recv::Closed)
    }
}

/// A RoCEv2-like sender at line rate that honours PFC for the lossless priority.
struct Sender {
    port: u32,
    peer: Arc<Peer>,
    next_ns: u64,
    paused_until: u64,
    seq: u16,
    sent: u64,
    xoff: u64,
    xon: u64,
}

impl Sender {
    fn due(&self) -> u64 {
        self.next_ns.max(self.paused_until)
    }

    fn send(&mut self, core: &mut Core, now: u64) {
        let src = [10, self.port as u8, 0, 2];
        let frame = lossless::udp(FRAME, self.seq, LOSSLESS as u8, src, [10, 3, 0, 1]);
        core.receive(now, self.port, &frame);
        self.seq = self.seq.wrapping_add(1);
        self.sent += 1;
        self.next_ns = now + wire_bytes(FRAME as u32) * 8 * S / RATE_BPS;
    }

    /// Acts on the PFC frames the switch sent since the last call, as received at `now`.
    fn hear(&mut self, now: u64) {
        let frames =
            std::mem::take(&mut *self.peer.control.lock().unwrap_or_else(|e| e.into_inner()));
        for f in frames {
            let Ok(Some(MacControl::Pfc {
                class_enable,
                quanta,
            })) = MacControl::decode(&f)
            else {
                continue;
            };
            if class_enable & 1 << LOSSLESS == 0 {
                continue;
            }
            let q = u64::from(quanta[LOSSLESS]);
            if q == 0 {
                self.xon += 1;
            } else {
                self.xoff += 1;
            }
            self.paused_until = now + q * 512 * S / RATE_BPS;
        }
    }
}

fn storming(now: u64) -> bool {
    (STORM_EVERY..DURATION).contains(&now) && now % STORM_EVERY < STORM_LEN
}

#[derive(Default)]
struct Tally {
    storms: u64,
    storm_xoff: u64,
    detected: u64,
    restored: u64,
    lost_in_storms: u64,
    lost_outside: u64,
    lost_seen: u64,
    window_open: bool,
}

fn main() {
    let started = Instant::now();
    let peers: BTreeMap<u32, Arc<Peer>> = SENDERS
        .iter()
        .chain([&UPLINK])
        .map(|&p| {
            let peer = Peer {
                name: format!("peer{p}"),
                data: AtomicU64::new(0),
                control: Mutex::new(Vec::new()),
            };
            (p, Arc::new(peer))
        })
        .collect();
    let ports = peers
        .iter()
        .map(|(&p, peer)| (p, Arc::clone(peer) as Arc<dyn Port>))
        .collect();
    let tm = TmConfig::parse(TM_CONFIG, ConfigFormat::Yaml).unwrap_or_else(|e| fail(&e));
    let sw = lossless::switch(&SENDERS, UPLINK);
    let mut core =
        Core::new(Some(sw), Some(tm), ports, lossless::engine(), 0).unwrap_or_else(|e| fail(&e));
    let mut senders: Vec<Sender> = SENDERS
        .iter()
        .map(|&port| Sender {
            port,
            peer: Arc::clone(&peers[&port]),
            next_ns: 0,
            paused_until: 0,
            seq: 0,
            sent: 0,
            xoff: 0,
            xon: 0,
        })
        .collect();
    let storm_xoff = MacControl::pfc_xoff(1 << LOSSLESS, 0xffff).encode([2, 0, 0, 0, 3, 1]);
    let mut t = Tally::default();
    let (mut now, mut next_storm_xoff, mut next_sample) = (0, 0, SAMPLE);
    let end = DURATION + DRAIN;
    while now < end {
        if now == next_storm_xoff {
            if storming(now) {
                if now % STORM_EVERY == 0 {
                    t.storms += 1;
                }
                core.receive(now, UPLINK, &storm_xoff);
                t.storm_xoff += 1;
            }
            next_storm_xoff += STORM_XOFF_EVERY;
        }
        for s in senders
            .iter_mut()
            .filter(|s| s.due() <= now && now < DURATION)
        {
            s.send(&mut core, now);
        }
        // What was received now may be due now: the switch runs at every step.
        let next_core = core.run_due(now);
        for s in &mut senders {
            s.hear(now);
        }
        if now == next_sample {
            sample(&mut core, &senders, &peers, now, &mut t);
            next_sample += SAMPLE;
        }
        let sending = senders.iter().map(Sender::due).filter(|&d| d < DURATION);
        now = sending
            .chain(next_core)
            .chain([next_storm_xoff, next_sample])
            .min()
            .unwrap_or(end)
            .max(now + 1)
            .min(end);
    }
    sample(&mut core, &senders, &peers, end, &mut t);
    report(&mut core, &senders, &peers, &t, started.elapsed(), end);
}

/// Lossless frames lost so far: offered, less forwarded and still queued.
fn lost(core: &Core, senders: &[Sender], peers: &BTreeMap<u32, Arc<Peer>>) -> u64 {
    let offered: u64 = senders.iter().map(|s| s.sent).sum();
    let forwarded = peers[&UPLINK].data.load(Ordering::Relaxed);
    let queued = core
        .tm()
        .and_then(|tm| tm.queue_depth(UPLINK, LOSSLESS))
        .map_or(0, |d| u64::from(d.packets));
    offered - forwarded - queued
}

/// Counts the losses since the last sample in or out of a storm window, and follows the
/// watchdog's events.
fn sample(
    core: &mut Core,
    senders: &[Sender],
    peers: &BTreeMap<u32, Arc<Peer>>,
    now: u64,
    t: &mut Tally,
) {
    let events = core
        .tm_mut()
        .map(|tm| tm.take_pfcwd_events())
        .unwrap_or_default();
    for e in events
        .iter()
        .filter(|e| e.port == UPLINK && e.queue == LOSSLESS)
    {
        match e.kind {
            PfcwdEventKind::StormDetected => t.detected += 1,
            PfcwdEventKind::StormRestored => t.restored += 1,
        }
    }
    // The window is open while the peer storms and until the watchdog has restored the queue.
    let open = storming(now) || storming(now.saturating_sub(1)) || t.detected > t.restored;
    let total = lost(core, senders, peers);
    let new = total - t.lost_seen;
    t.lost_seen = total;
    // A loss in the sample that opens or closes a window is the window's.
    if open || t.window_open {
        t.lost_in_storms += new;
    } else {
        t.lost_outside += new;
    }
    t.window_open = open;
}

fn report(
    core: &mut Core,
    senders: &[Sender],
    peers: &BTreeMap<u32, Arc<Peer>>,
    t: &Tally,
    wall: Duration,
    end: u64,
) {
    let occ = core.pipeline_occupancy().unwrap_or_else(|| {
        fail(&"the pipeline has no occupancy registers (pg_bytes, queue_bytes, shared_pool_used)")
    });
    let pg: u64 = occ.pg_bytes.values().flatten().sum();
    let queue: u64 = occ.queue_bytes.values().flatten().sum();
    let occupancy = pg + queue + occ.shared_pool_used;
    let stats = core.tm().map(|tm| tm.stats(end));
    let (watchdog_drops, tm_drops, used_cells) = stats.map_or((0, 0, 0), |s| {
        let q = s.ports.iter().map(|p| &p.queues[LOSSLESS].drops);
        let wd = q.clone().map(|d| d.get(DropReason::PfcWatchdog)).sum();
        (wd, q.map(|d| d.total()).sum::<u64>(), s.buffer.used_cells)
    });
    let offered: u64 = senders.iter().map(|s| s.sent).sum();
    println!(
        "soak: {} s of switch time ({:.1} s wall), {} senders -> port {UPLINK} at {} Mb/s, \
         {FRAME}-byte frames on priority {LOSSLESS}",
        DURATION / S,
        wall.as_secs_f64(),
        senders.len(),
        RATE_BPS / 1_000_000
    );
    println!(
        "storms: {} ({} XOFF from port {UPLINK}'s peer); watchdog: {} detected, {} restored",
        t.storms, t.storm_xoff, t.detected, t.restored
    );
    println!(
        "lossless frames: {offered} offered, {} forwarded, {} lost in storm windows \
         ({watchdog_drops} by the watchdog, {} in the traffic manager in all)",
        peers[&UPLINK].data.load(Ordering::Relaxed),
        t.lost_in_storms,
        tm_drops
    );
    println!(
        "pauses toward the senders: {} XOFF, {} XON",
        senders.iter().map(|s| s.xoff).sum::<u64>(),
        senders.iter().map(|s| s.xon).sum::<u64>()
    );
    println!(
        "occupancy registers at end: pg_bytes {pg}, queue_bytes {queue}, shared_pool_used {}; \
         switch-tm buffer {used_cells} cells",
        occ.shared_pool_used
    );
    println!("lossless drops outside storms: {}", t.lost_outside);
    println!("occupancy at end: {occupancy} bytes");
    if t.lost_outside != 0 || occupancy != 0 {
        std::process::exit(1);
    }
}

fn fail(e: &dyn std::fmt::Display) -> ! {
    eprintln!("p4-switch-soak: {e}");
    std::process::exit(1);
}
