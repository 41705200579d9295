//! A sweep planned into its output directory: `plan.json` (its points, in order) and each
//! point's `points/NNNN/topology.json`, checked by the lab's own code before any point runs;
//! and where the points' runs find the lab and this binary.

use super::error::SweepError;
use super::spec::{self, Sweep};
use crate::program::{self, Lab};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// `DIR/plan.json`: the points of a sweep, in order; point I's inputs are in `points/NAME/`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Plan {
    /// The swept addresses, the CSV's first columns after `point`.
    pub columns: Vec<String>,
    pub plot: spec::Plot,
    pub points: Vec<Point>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Point {
    /// Its directory under `points/`.
    pub name: String,
    /// The config case it runs (`run --case`).
    pub case: String,
    pub seed: u64,
    /// The swept addresses it sets, with their values.
    pub settings: Vec<(String, Value)>,
    /// `run`'s own options for it (`run.FLAG` settings, shared and its own).
    #[serde(default)]
    pub run_args: Vec<String>,
}

impl Point {
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = self
            .settings
            .iter()
            .map(|(a, v)| format!("{a}={}", spec::show(v)))
            .collect();
        parts.push(format!("case {}", self.case));
        parts.join(", ")
    }
}

pub const PLAN: &str = "plan.json";

pub fn point_dir(dir: &Path, name: &str) -> PathBuf {
    dir.join("points").join(name)
}

pub fn write_json(path: &Path, value: &impl Serialize) -> Result<(), SweepError> {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| SweepError::json(path, e))?;
    text.push('\n');
    std::fs::write(path, text).map_err(|e| SweepError::io(path, e))
}

pub fn read_plan(dir: &Path) -> Result<Plan, SweepError> {
    let path = dir.join(PLAN);
    let text = std::fs::read_to_string(&path).map_err(|source| SweepError::NoPlan {
        path: path.clone(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|e| SweepError::json(&path, e))
}

/// Runs `f(0..count)` on `jobs` threads; results in index order.
pub fn parallel<R: Send>(jobs: usize, count: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<R>>> = Mutex::new((0..count).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs.clamp(1, count.max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    break;
                }
                let r = f(i);
                out.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            });
        }
    });
    out.into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.expect("every index ran"))
        .collect()
}

/// Writes every point's topology.json and plan.json into `dir`, and has the lab's own code
/// (`lossless_topo.simcase`, as `run` does) check each point's topology and config_db
/// settings for its case, so that a bad setting stops the sweep before any point runs.
pub fn plan(
    sweep: &Sweep,
    dir: &Path,
    lab: &Lab,
    seed: u64,
    jobs: usize,
) -> Result<Plan, SweepError> {
    let cases = if sweep.cases.is_empty() {
        // The experiment's cases, from its unswept topology.
        let scratch = dir.join("points").join("base");
        std::fs::create_dir_all(&scratch).map_err(|e| SweepError::io(&scratch, e))?;
        let topo = scratch.join("topology.json");
        write_json(&topo, &sweep.base)?;
        let fabric =
            program::prepare(lab, &topo, None, false, &scratch).map_err(|e| SweepError::At {
                file: sweep.file.clone(),
                path: "topology".into(),
                source: Box::new(SweepError::Program(Box::new(e))),
            })?;
        let _ = std::fs::remove_dir_all(&scratch);
        fabric.cases
    } else {
        sweep.cases.clone()
    };
    let mut points = Vec::new();
    for setting in &sweep.settings {
        let topology = sweep.topology(&setting.values);
        let own = if setting.cases.is_empty() {
            &cases
        } else {
            &setting.cases
        };
        for case in own {
            let name = format!("{:04}", points.len());
            let pd = point_dir(dir, &name);
            std::fs::create_dir_all(&pd).map_err(|e| SweepError::io(&pd, e))?;
            // What an earlier sweep into this directory left must not be collected as this one's.
            let _ = std::fs::remove_file(pd.join("results.json"));
            write_json(&pd.join("topology.json"), &topology)?;
            points.push(Point {
                name,
                case: case.clone(),
                seed,
                settings: setting.values.clone(),
                run_args: sweep.run_args(&setting.values),
            });
        }
    }
    let checks = parallel(jobs, points.len(), |i| {
        let p = &points[i];
        let pd = point_dir(dir, &p.name);
        program::prepare(lab, &pd.join("topology.json"), Some(&p.case), false, &pd)
    });
    for (p, check) in points.iter().zip(checks) {
        if let Err(e) = check {
            return Err(SweepError::Point {
                file: sweep.file.clone(),
                point: p.name.clone(),
                settings: p.describe(),
                source: Box::new(e),
            });
        }
    }
    let plan = Plan {
        columns: sweep.columns.clone(),
        plot: sweep.plot.clone(),
        points,
    };
    write_json(&dir.join(PLAN), &plan)?;
    Ok(plan)
}

/// Where the points' runs find the lab and this binary; absolute, so that emitted tasks
/// running elsewhere (a cluster sharing the filesystem) find them too.
#[derive(Debug, Clone)]
pub struct Tools {
    pub exe: PathBuf,
    pub lab: PathBuf,
    pub pipeline: PathBuf,
}

impl Tools {
    pub fn new(lab: &Path, pipeline: Option<&Path>) -> Result<Tools, SweepError> {
        let abs = |p: &Path| std::fs::canonicalize(p).map_err(|e| SweepError::io(p, e));
        let exe = std::env::current_exe().map_err(SweepError::CurrentExe)?;
        let lab = abs(lab)?;
        let pipeline = match pipeline {
            Some(p) => abs(p)?,
            None => lab.join("build/p4"),
        };
        Ok(Tools { exe, lab, pipeline })
    }

    pub fn lab(&self) -> Lab {
        let mut lab = Lab::at(&self.lab);
        lab.pipeline = self.pipeline.clone();
        lab
    }
}
