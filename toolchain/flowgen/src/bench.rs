//! Seed 004's measurement: generator packets per CPU-second against the number of active
//! flows, for each scheduler, into the in-process sink.
//!
//! Each point starts with the flow table already at steady state ([`Generator::prefill`]), so
//! the measured packets all come from a table of the wanted size; only the sending is timed.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::Error;
use crate::gen::NullSink;
use crate::profile::{Buckets, Levels, Positive, Profile, TwConfig};
use crate::run::{self, Pace, RunConfig, SchedChoice, Setup};

/// The seed's profile (`cap2/cur_flow_single.yaml`: one-way UDP flows of ten 64-byte packets).
pub const SEED_PROFILE: &str = include_str!("../profiles/cur_flow_single.yaml");
/// The seed's multiplier (`-m 30000`: 3M new flows per second, 30 Mpps offered).
pub const SEED_MULTIPLIER: f64 = 30_000.0;

/// One measured point.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    pub variant: String,
    pub scheduler: &'static str,
    pub buckets: Option<u32>,
    pub levels: Option<u32>,
    pub bucket_usec: Option<f64>,
    pub active_flows_target: u64,
    pub active_flows: u64,
    pub packets: u64,
    pub cpu_s: f64,
    pub wall_s: f64,
    pub mpps_per_core: f64,
    pub cpu_util: f64,
    pub queue_full: u64,
    /// Flow table and scheduler bytes per active flow.
    pub state_bytes_per_flow: f64,
    /// Resident memory growth while the table filled, per active flow (what the OS saw; 0 when
    /// the allocator could reuse memory an earlier point freed).
    pub rss_bytes_per_flow: f64,
    /// Mpps per core of every repetition; the point reports the best (the run least disturbed
    /// by other work on the machine).
    pub runs_mpps_per_core: Vec<f64>,
}

/// A named scheduler configuration with the profile it runs.
#[derive(Debug, Clone)]
pub struct Variant {
    pub name: String,
    pub sched: SchedChoice,
    pub profile_path: PathBuf,
    pub profile: Profile,
}

impl Variant {
    /// Parses `NAME=pq`, `NAME=tw`, `NAME=tw:BUCKETSxLEVELS[:USEC]`, each optionally followed by
    /// `@PROFILE` (default: `base`). `tw` without a shape uses the profile's `tw` section.
    pub fn parse(spec: &str, base: &(PathBuf, Profile)) -> Result<Variant, Error> {
        let bad = |why: &str| {
            Error::setting(
                format!("variant {spec:?}"),
                format!("{why} (e.g. tw1=tw:16384x2@profile.yaml)"),
            )
        };
        let (name, rest) = spec.split_once('=').ok_or_else(|| bad("missing NAME="))?;
        let (sched, profile) = match rest.split_once('@') {
            Some((s, p)) => {
                let path = PathBuf::from(p);
                let prof = Profile::load(&path)?;
                (s, (path, prof))
            }
            None => (rest, base.clone()),
        };
        let mut parts = sched.split(':');
        let sched = match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some("pq"), None, None, None) => SchedChoice::Heap,
            (Some("tw"), None, None, None) => SchedChoice::Wheel(profile.1.tw),
            (Some("tw"), Some(shape), usec, None) => {
                let (b, l) = shape
                    .split_once('x')
                    .ok_or_else(|| bad("shape is BUCKETSxLEVELS"))?;
                let b: u64 = b.parse().map_err(|_| bad("buckets is not a number"))?;
                let l: u64 = l.parse().map_err(|_| bad("levels is not a number"))?;
                let mut tw = profile.1.tw;
                tw.buckets = Buckets::try_from(b).map_err(|e| bad(&format!("buckets {e}")))?;
                tw.levels = Levels::try_from(l).map_err(|e| bad(&format!("levels {e}")))?;
                if let Some(u) = usec {
                    let u: f64 = u.parse().map_err(|_| bad("bucket time is not a number"))?;
                    tw.bucket_time_usec =
                        Positive::try_from(u).map_err(|e| bad(&format!("bucket time {e}")))?;
                }
                SchedChoice::Wheel(tw)
            }
            _ => return Err(bad("scheduler is pq or tw[:BUCKETSxLEVELS[:USEC]]")),
        };
        Ok(Variant {
            name: name.to_string(),
            sched,
            profile_path: profile.0,
            profile: profile.1,
        })
    }
}

fn rss_bytes() -> u64 {
    // statm's second field is the resident set in pages.
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64;
    pages * page
}

/// Measures `variant` holding `active` flows for `packets` packets at `multiplier`.
pub fn measure(
    variant: &Variant,
    active: u64,
    packets: u64,
    multiplier: f64,
) -> Result<Point, Error> {
    let setup = Setup {
        profile_path: variant.profile_path.clone(),
        profile: variant.profile.clone(),
        sched: variant.sched,
        multiplier,
        active_flows: Some(active),
        prefill: true,
        pairs: 1,
        seed: 1,
    };
    let cfg = RunConfig {
        duration_ns: u64::MAX / 2,
        pace: Pace::Max,
        max_packets: Some(packets),
        progress: false,
    };
    let rss0 = rss_bytes();
    let mut rss_grown = 0u64;
    let mut sink = RssProbe {
        at: rss0,
        grown: &mut rss_grown,
        checked: false,
    };
    let report = run::run(&setup, &mut sink, &cfg)?;
    let m = report.measurement;
    let tw = match variant.sched {
        SchedChoice::Wheel(tw) => Some(tw),
        SchedChoice::Heap => None,
    };
    Ok(Point {
        variant: variant.name.clone(),
        scheduler: variant.sched.name(),
        buckets: tw.map(|t| t.buckets.0),
        levels: tw.map(|t| t.levels.0),
        bucket_usec: tw.map(|t| t.bucket_time_usec.0),
        active_flows_target: active,
        active_flows: m.active_flows,
        packets: m.packets,
        cpu_s: m.cpu_s,
        wall_s: m.wall_s,
        mpps_per_core: m.mpps_per_core,
        cpu_util: m.cpu_util,
        queue_full: m.queue_full,
        state_bytes_per_flow: m.state_bytes_per_flow,
        rss_bytes_per_flow: rss_grown as f64 / m.active_flows.max(1) as f64,
        runs_mpps_per_core: vec![m.mpps_per_core],
    })
}

/// The best of several measurements of one point, with every run's rate.
fn best_of(runs: Vec<Point>) -> Option<Point> {
    let rates: Vec<f64> = runs.iter().map(|p| p.mpps_per_core).collect();
    // The allocator reuses what an earlier run freed, so only the largest growth tells.
    let rss = runs
        .iter()
        .map(|p| p.rss_bytes_per_flow)
        .fold(0.0, f64::max);
    let mut best = runs
        .into_iter()
        .max_by(|a, b| a.mpps_per_core.total_cmp(&b.mpps_per_core))?;
    best.runs_mpps_per_core = rates;
    best.rss_bytes_per_flow = rss;
    Some(best)
}

/// The null sink, noting on the first packet how much resident memory the prefilled table took.
struct RssProbe<'a> {
    at: u64,
    grown: &'a mut u64,
    checked: bool,
}

impl crate::gen::Sink for RssProbe<'_> {
    fn send(&mut self, pair: usize, frame: &[u8], t: u64) -> Result<bool, Error> {
        if !self.checked {
            self.checked = true;
            *self.grown = rss_bytes().saturating_sub(self.at);
        }
        NullSink.send(pair, frame, t)
    }
}

/// Seed 004's points: `min` to `max` in `steps` logarithmic steps (steps + 1 points), floored
/// as the seed's script does.
pub fn log_points(min: u64, max: u64, steps: u32) -> Vec<u64> {
    let factor = ((max as f64 / min as f64).ln() / steps as f64).exp();
    let mut v = min as f64;
    (0..=steps)
        .map(|_| {
            let p = v.floor() as u64;
            v *= factor;
            p
        })
        .collect()
}

/// The CSV columns of a sweep.
pub const CSV_HEADER: &str = "variant,scheduler,buckets,levels,bucket_usec,active_flows_target,active_flows,mpps_per_core,cpu_util,queue_full,packets,cpu_s,state_bytes_per_flow,rss_bytes_per_flow";

pub fn csv_row(p: &Point) -> String {
    let opt = |v: Option<String>| v.unwrap_or_default();
    format!(
        "{},{},{},{},{},{},{},{:.4},{:.4},{},{},{:.4},{:.1},{:.1}",
        p.variant,
        p.scheduler,
        opt(p.buckets.map(|b| b.to_string())),
        opt(p.levels.map(|l| l.to_string())),
        opt(p.bucket_usec.map(|u| u.to_string())),
        p.active_flows_target,
        p.active_flows,
        p.mpps_per_core,
        p.cpu_util,
        p.queue_full,
        p.packets,
        p.cpu_s,
        p.state_bytes_per_flow,
        p.rss_bytes_per_flow
    )
}

/// Runs every variant at every point, appending CSV rows to `out` as they are measured.
pub fn sweep(
    variants: &[Variant],
    points: &[u64],
    packets: u64,
    multiplier: f64,
    out: &mut dyn Write,
    mut progress: impl FnMut(&Point),
) -> Result<Vec<Point>, Error> {
    let err = |e| Error::os("sweep CSV", "write", e);
    writeln!(out, "{CSV_HEADER}").map_err(err)?;
    let mut all = Vec::new();
    for v in variants {
        for &n in points {
            let p = measure(v, n, packets, multiplier)?;
            writeln!(out, "{}", csv_row(&p)).map_err(err)?;
            out.flush().map_err(err)?;
            progress(&p);
            all.push(p);
        }
    }
    Ok(all)
}

/// The bench file: every point and the timer wheel's rate at the largest table relative to the
/// smallest.
#[derive(Debug, Serialize)]
pub struct BenchReport {
    pub profile: &'static str,
    pub multiplier: f64,
    pub packets_per_point: u64,
    pub repeat: u32,
    pub points: Vec<Point>,
    /// Timer wheel Mpps/core at the most flows over at the fewest (seed 004: should be >= 0.8).
    pub tw_ratio_max_to_min_flows: f64,
    pub pq_ratio_max_to_min_flows: f64,
}

/// The seed profile with the given scheduler.
pub fn seed_variant(name: &str, sched_tw: Option<TwConfig>) -> Result<Variant, Error> {
    let path = PathBuf::from("profiles/cur_flow_single.yaml");
    let profile = Profile::parse(SEED_PROFILE, Path::new(&path))?;
    Ok(Variant {
        name: name.to_string(),
        sched: match sched_tw {
            Some(tw) => SchedChoice::Wheel(tw),
            None => SchedChoice::Heap,
        },
        profile_path: path,
        profile,
    })
}

/// `flowgen bench`: both schedulers at each of `flows`, seed profile, best of `repeat`.
pub fn bench(
    flows: &[u64],
    packets: u64,
    repeat: u32,
    mut progress: impl FnMut(&Point),
) -> Result<BenchReport, Error> {
    let tw = seed_variant("tw", None)?.profile.tw;
    let variants = [seed_variant("pq", None)?, seed_variant("tw", Some(tw))?];
    // Repetitions go round all the points rather than one point at a time: on a shared machine
    // the load changes over the minutes a bench takes, and each point's best run should come
    // from the same stretch of time as the others', or the ratios measure the load.
    let mut runs: Vec<Vec<Point>> = (0..flows.len() * variants.len())
        .map(|_| Vec::new())
        .collect();
    for _ in 0..repeat.max(1) {
        for (i, &n) in flows.iter().enumerate() {
            for (j, v) in variants.iter().enumerate() {
                let p = measure(v, n, packets, SEED_MULTIPLIER)?;
                progress(&p);
                runs[i * variants.len() + j].push(p);
            }
        }
    }
    let points = runs
        .into_iter()
        .map(|r| best_of(r).ok_or_else(|| Error::setting("--repeat", "no measurement")))
        .collect::<Result<Vec<_>, _>>()?;
    let ratio = |sched: &str| {
        let of = |n: Option<&u64>| {
            points
                .iter()
                .find(|p| p.scheduler == sched && Some(&p.active_flows_target) == n)
                .map(|p| p.mpps_per_core)
        };
        match (of(flows.iter().max()), of(flows.iter().min())) {
            (Some(hi), Some(lo)) if lo > 0.0 => hi / lo,
            _ => 0.0,
        }
    };
    Ok(BenchReport {
        profile: "profiles/cur_flow_single.yaml",
        multiplier: SEED_MULTIPLIER,
        packets_per_point: packets,
        repeat,
        tw_ratio_max_to_min_flows: ratio("tw"),
        pq_ratio_max_to_min_flows: ratio("pq"),
        points,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_points_match_the_seed_script() {
        // The seed's loop: 11 points from 100 growing by (8M/100)^(1/10), floored.
        let p = log_points(100, 8_000_000, 10);
        assert_eq!(p.len(), 11);
        assert_eq!(p[0], 100);
        assert!(p[10] >= 7_999_990 && p[10] <= 8_000_000);
        let factor = (80_000f64).powf(0.1);
        assert_eq!(p[1], (100.0 * factor).floor() as u64);
        assert!(p.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn variant_specs() {
        let base = seed_variant("x", None).unwrap();
        let b = (base.profile_path.clone(), base.profile.clone());
        let v = Variant::parse("tw1=tw:16384x2", &b).unwrap();
        match v.sched {
            SchedChoice::Wheel(tw) => {
                assert_eq!((tw.buckets.0, tw.levels.0), (16384, 2));
                assert_eq!(tw.bucket_time_usec.0, 20.0);
            }
            SchedChoice::Heap => panic!("expected a wheel"),
        }
        assert_eq!(
            Variant::parse("pq=pq", &b).unwrap().sched,
            SchedChoice::Heap
        );
        let e = Variant::parse("x=tw:1000x2", &b).unwrap_err().to_string();
        assert!(e.contains("power of two"), "{e}");
        assert!(Variant::parse("nonsense", &b).is_err());
    }

    #[test]
    fn a_small_point_measures_the_table_it_asked_for() {
        let v = seed_variant("tw", Some(TwConfig::default())).unwrap();
        let p = measure(&v, 5_000, 200_000, SEED_MULTIPLIER).unwrap();
        assert!(p.packets >= 200_000);
        // Prefill puts the table at steady state; quantization leaves it within a few flows.
        let err = (p.active_flows as f64 - 5_000.0).abs() / 5_000.0;
        assert!(err < 0.02, "active {} for 5000", p.active_flows);
        assert!(p.mpps_per_core > 0.0);
    }
}
