//! What a run's timelines are drawn from: every switch's queue depths, buffer use and PFC
//! frames, sampled on a grid of virtual time and written into results.json's `stats` in the
//! lab's schema (`lossless_topo.results.StatsSample`: `t`, `switch`, `stats` with
//! `ports[].queues[]`), so that `lossless_topo.plots` draws them as it draws the lab's polls.
//!
//! Sampling adds no event: before the simulator handles an event at `t` it samples the grid
//! points before `t`, when the fabric is as it was at each of them. An idle stretch (no event
//! for many grid points, e.g. between two cases) is recorded by its first and last grid point
//! only, which hold the same state.

use lossless_wire::pfc::MacControl;
use p4_switch::core::Core;
use std::collections::{BTreeMap, BTreeSet};

/// One reading of one switch's traffic-manager statistics; `t` in virtual seconds.
#[derive(Debug, serde::Serialize)]
pub struct StatsSample {
    pub t: f64,
    pub switch: String,
    pub stats: serde_json::Value,
}

/// Rounds (one sample of every switch) kept at most per case: when full, the case's rounds off
/// the doubled grid are dropped and sampling goes on at the doubled interval, so a long case
/// keeps its whole timeline at a coarser step (the lab's `StatsPoller` does the same with its
/// polls).
pub const MAX_ROUNDS: usize = 500;
/// Ports written: the `DEEPEST_PORTS` whose queues were deepest and the `PFC_PORTS` that sent,
/// received or were held by the most PFC frames; a leaf-spine has hundreds of ports.
pub const DEEPEST_PORTS: usize = 8;
pub const PFC_PORTS: usize = 8;

/// PFC frames one port sent and received, per priority: XOFF (quanta > 0) and XON (quanta 0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PfcCounts {
    pub xoff_tx: [u32; 8],
    pub xon_tx: [u32; 8],
    pub xoff_rx: [u32; 8],
    pub xon_rx: [u32; 8],
}

impl PfcCounts {
    fn total(&self) -> u64 {
        [self.xoff_tx, self.xon_tx, self.xoff_rx, self.xon_rx]
            .iter()
            .flatten()
            .map(|&n| u64::from(n))
            .sum()
    }
}

#[derive(Debug, Clone)]
struct QueueSample {
    queue: usize,
    depth_bytes: u64,
    depth_cells: u64,
    paused: bool,
}

/// A port is kept in a sample when it holds something, is paused or has PFC counts.
#[derive(Debug, Clone)]
struct PortSample {
    port: u32,
    used_cells: u64,
    pfc: PfcCounts,
    /// Queues that hold a byte or are paused.
    queues: Vec<QueueSample>,
}

#[derive(Debug, Clone, Default)]
struct SwitchSample {
    cell_bytes: u32,
    total_cells: u64,
    used_cells: u64,
    ports: Vec<PortSample>,
}

struct Round {
    t_ns: u64,
    switches: Vec<SwitchSample>,
}

pub struct Timeline {
    /// The grid asked for.
    base_ns: u64,
    interval_ns: u64,
    /// The current case's first round.
    case_first: usize,
    /// The next grid point to sample (a multiple of `interval_ns`).
    next_ns: u64,
    rounds: Vec<Round>,
    /// Per switch and port, the PFC frames counted so far in the case.
    pfc: Vec<BTreeMap<u32, PfcCounts>>,
}

impl Timeline {
    /// Samples every `interval_ns` (> 0) of virtual time from 0, `switches` switches.
    pub fn new(interval_ns: u64, switches: usize) -> Timeline {
        Timeline {
            base_ns: interval_ns.max(1),
            interval_ns: interval_ns.max(1),
            case_first: 0,
            next_ns: 0,
            rounds: Vec::new(),
            pfc: vec![BTreeMap::new(); switches],
        }
    }

    /// A case starts at `now_ns`: PFC frames are counted from 0 again, and its rounds are
    /// sampled on the grid asked for, up to [`MAX_ROUNDS`] of their own, whatever the cases
    /// before took.
    pub fn start_case(&mut self, now_ns: u64) {
        self.pfc.iter_mut().for_each(BTreeMap::clear);
        self.interval_ns = self.base_ns;
        self.next_ns = now_ns.next_multiple_of(self.base_ns);
        self.case_first = self.rounds.len();
    }

    /// Counts `frame`, sent (`tx`) or received by switch `sw` on `port`, if it is PFC.
    pub fn frame(&mut self, sw: usize, port: u32, tx: bool, frame: &[u8]) {
        let Ok(Some(MacControl::Pfc {
            class_enable,
            quanta,
        })) = MacControl::decode(frame)
        else {
            return;
        };
        let Some(ports) = self.pfc.get_mut(sw) else {
            return;
        };
        let c = ports.entry(port).or_default();
        for (p, &q) in quanta.iter().enumerate() {
            if class_enable & (1 << p) == 0 {
                continue;
            }
            let n = match (tx, q > 0) {
                (true, true) => &mut c.xoff_tx[p],
                (true, false) => &mut c.xon_tx[p],
                (false, true) => &mut c.xoff_rx[p],
                (false, false) => &mut c.xon_rx[p],
            };
            *n += 1;
        }
    }

    /// Samples the grid points before `t_ns`, the time of the next event: until then the
    /// fabric stays as it is. `cores` lists the switches' cores in the simulation's order.
    pub fn before<'a, I: Iterator<Item = &'a Core>>(&mut self, t_ns: u64, cores: impl Fn() -> I) {
        if t_ns <= self.next_ns {
            return;
        }
        // The last grid point before t.
        let last = (t_ns - 1) / self.interval_ns * self.interval_ns;
        self.sample(self.next_ns, cores());
        if last > self.next_ns {
            self.sample(last, cores());
        }
        self.next_ns = last + self.interval_ns;
        while self.rounds.len() - self.case_first >= MAX_ROUNDS {
            self.interval_ns *= 2;
            let step = self.interval_ns;
            let mut case = self.rounds.split_off(self.case_first);
            case.retain(|r| r.t_ns % step == 0);
            self.rounds.append(&mut case);
            self.next_ns = self.next_ns.next_multiple_of(step);
        }
    }

    fn sample<'a>(&mut self, t_ns: u64, cores: impl Iterator<Item = &'a Core>) {
        let switches = cores
            .enumerate()
            .map(|(i, core)| {
                let Some(tm) = core.tm() else {
                    return SwitchSample::default();
                };
                let stats = tm.stats(t_ns);
                let pfc = self.pfc.get(i);
                let ports = stats
                    .ports
                    .iter()
                    .filter_map(|p| {
                        let counts = pfc
                            .and_then(|m| m.get(&p.port))
                            .copied()
                            .unwrap_or_default();
                        let queues: Vec<QueueSample> = p
                            .queues
                            .iter()
                            .filter(|q| q.depth_bytes > 0 || q.paused)
                            .map(|q| QueueSample {
                                queue: q.queue,
                                depth_bytes: q.depth_bytes,
                                depth_cells: q.depth_cells,
                                paused: q.paused,
                            })
                            .collect();
                        let kept = !queues.is_empty() || p.used_cells > 0 || counts.total() > 0;
                        kept.then_some(PortSample {
                            port: p.port,
                            used_cells: p.used_cells,
                            pfc: counts,
                            queues,
                        })
                    })
                    .collect();
                SwitchSample {
                    cell_bytes: stats.buffer.cell_bytes,
                    total_cells: stats.buffer.total_cells,
                    used_cells: stats.buffer.used_cells,
                    ports,
                }
            })
            .collect();
        self.rounds.push(Round { t_ns, switches });
    }

    /// The ports worth drawing, by switch index: the deepest queues' and the busiest in PFC,
    /// each with the queues that ever held a byte or were paused.
    fn congested(&self) -> BTreeMap<(usize, u32), BTreeSet<usize>> {
        #[derive(Default)]
        struct Seen {
            peak_bytes: u64,
            pfc_frames: u64,
            paused_samples: u64,
            queues: BTreeSet<usize>,
        }
        let mut seen: BTreeMap<(usize, u32), Seen> = BTreeMap::new();
        for r in &self.rounds {
            for (sw, s) in r.switches.iter().enumerate() {
                for p in &s.ports {
                    let e = seen.entry((sw, p.port)).or_default();
                    let depth = p.queues.iter().map(|q| q.depth_bytes).max().unwrap_or(0);
                    e.peak_bytes = e.peak_bytes.max(depth);
                    e.pfc_frames = e.pfc_frames.max(p.pfc.total());
                    e.paused_samples += p.queues.iter().filter(|q| q.paused).count() as u64;
                    e.queues.extend(p.queues.iter().map(|q| q.queue));
                }
            }
        }
        let top = |key: &dyn Fn(&Seen) -> u64, n: usize| {
            let mut ranked: Vec<_> = seen.iter().filter(|(_, v)| key(v) > 0).collect();
            ranked.sort_by_key(|(k, v)| (std::cmp::Reverse(key(v)), **k));
            ranked
                .into_iter()
                .take(n)
                .map(|(k, _)| *k)
                .collect::<Vec<_>>()
        };
        let mut keep = top(&|v| v.peak_bytes, DEEPEST_PORTS);
        keep.extend(top(&|v| v.pfc_frames + v.paused_samples, PFC_PORTS));
        keep.into_iter()
            .map(|k| (k, seen[&k].queues.clone()))
            .collect()
    }

    /// The timeline in the lab's `stats` schema: one sample per switch per round, `t` in
    /// virtual seconds (`time_ns` exact), the buffer of every switch and the congested ports
    /// ([`DEEPEST_PORTS`], [`PFC_PORTS`]) with their PFC frames so far (`pfc_xoff_tx`,
    /// `pfc_xon_tx`, `pfc_xoff_rx`, `pfc_xon_rx`, per priority; left out while all are 0) and
    /// their queues (`depth_bytes`, `depth_cells`, `paused`). A port or queue is left out of a
    /// sample where it held nothing, there and in the samples either side: a line drawn
    /// through the samples is then as exact as one through all of them, and an idle port of a
    /// long run costs nothing.
    pub fn samples(&self, names: &[String]) -> Vec<StatsSample> {
        let keep = self.congested();
        let n = self.rounds.len();
        let port_at = |i: usize, sw: usize, port: u32| {
            self.rounds[i]
                .switches
                .get(sw)
                .and_then(|s| s.ports.iter().find(|p| p.port == port))
        };
        let held = |i: usize, sw: usize, port: u32, queue: usize| {
            port_at(i, sw, port).is_some_and(|p| p.queues.iter().any(|q| q.queue == queue))
        };
        // Whether round i or one beside it has something.
        let near = |i: usize, f: &dyn Fn(usize) -> bool| {
            (i > 0 && f(i - 1)) || f(i) || (i + 1 < n && f(i + 1))
        };
        let mut out = Vec::new();
        for (i, r) in self.rounds.iter().enumerate() {
            for (sw, (s, name)) in r.switches.iter().zip(names).enumerate() {
                let ports: Vec<serde_json::Value> = keep
                    .range((sw, 0)..=(sw, u32::MAX))
                    .filter(|(&(_, port), _)| near(i, &|j| port_at(j, sw, port).is_some()))
                    .map(|(&(_, port), queues)| {
                        let p = s.ports.iter().find(|p| p.port == port);
                        let pfc = p.map(|p| p.pfc).unwrap_or_default();
                        let queues: Vec<serde_json::Value> = queues
                            .iter()
                            .filter(|&&queue| near(i, &|j| held(j, sw, port, queue)))
                            .map(|&queue| {
                                let q = p.and_then(|p| p.queues.iter().find(|q| q.queue == queue));
                                serde_json::json!({
                                    "queue": queue,
                                    "depth_bytes": q.map_or(0, |q| q.depth_bytes),
                                    "depth_cells": q.map_or(0, |q| q.depth_cells),
                                    "paused": q.is_some_and(|q| q.paused),
                                })
                            })
                            .collect();
                        let mut entry = serde_json::json!({
                            "port": port,
                            "used_cells": p.map_or(0, |p| p.used_cells),
                            "queues": queues,
                        });
                        // Most ports never see PFC: their counts are left out (zero).
                        if pfc != PfcCounts::default() {
                            entry["pfc_xoff_tx"] = serde_json::json!(pfc.xoff_tx);
                            entry["pfc_xon_tx"] = serde_json::json!(pfc.xon_tx);
                            entry["pfc_xoff_rx"] = serde_json::json!(pfc.xoff_rx);
                            entry["pfc_xon_rx"] = serde_json::json!(pfc.xon_rx);
                        }
                        entry
                    })
                    .collect();
                out.push(StatsSample {
                    t: r.t_ns as f64 / 1e9,
                    switch: name.clone(),
                    stats: serde_json::json!({
                        "time_ns": r.t_ns,
                        "buffer": {
                            "cell_bytes": s.cell_bytes,
                            "total_cells": s.total_cells,
                            "used_cells": s.used_cells,
                        },
                        "ports": ports,
                    }),
                });
            }
        }
        out
    }
}
