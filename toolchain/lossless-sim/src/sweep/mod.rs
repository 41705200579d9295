//! `lossless-sim sweep` and `lossless-sim collect` (README.md, "Sweep"): a grid of settings
//! over a topology, its experiment and its switches' config_db.json, each point one `run` of
//! this binary in its own process (single-threaded, deterministic for its seed), points in
//! parallel; or, for a cluster, the points' inputs and a Slurm array or Kubernetes indexed Job
//! whose tasks each run one point, merged afterwards by `collect` into the same sweep.csv.

pub mod collect;
pub mod emit;
pub mod spec;

use crate::program::{self, Lab};
use serde::{Deserialize, Serialize};
use serde_json::Value;
pub use spec::{Sweep, SweepError};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

#[derive(clap::Args)]
pub struct SweepArgs {
    /// The sweep file (README.md, "Sweep"); not with --point.
    sweep: Option<PathBuf>,
    /// Points run at once (default: the machine's cores); with --emit, the array's or Job's
    /// parallelism.
    #[arg(short = 'j', long)]
    jobs: Option<usize>,
    /// Output directory: plan.json, points/NAME/ (topology.json, run.log, results.json),
    /// sweep.csv and plots/.
    #[arg(long, default_value = "results/sweep")]
    out: PathBuf,
    /// The experiment's quick overrides (as the sweep file's `"quick": true`).
    #[arg(long)]
    quick: bool,
    /// Every point's --seed (default: the sweep file's `seed`, else 1).
    #[arg(long)]
    seed: Option<u64>,
    /// Write the points and a Slurm job array (sweep.sbatch) or a Kubernetes indexed Job
    /// (sweep-job.yaml) instead of running them here.
    #[arg(long, value_enum)]
    emit: Option<Emit>,
    /// Run point I of the sweep planned in --out (what each emitted task does).
    #[arg(long, value_name = "I")]
    point: Option<usize>,
    /// The container image of the Kubernetes Job's pods (--emit k8s).
    #[arg(long, default_value = "lossless-lab:latest")]
    image: String,
    /// The PersistentVolumeClaim holding --out, mounted at the same path in every pod
    /// (--emit k8s).
    #[arg(long, default_value = "lossless-sweep")]
    pvc: String,
    /// The lossless-lab checkout (as `run --lab`); emitted tasks use it at the same path.
    #[arg(long, default_value = ".")]
    lab: PathBuf,
    /// The compiled pipeline directory (default: LAB/build/p4).
    #[arg(long)]
    pipeline: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Emit {
    Slurm,
    K8s,
}

#[derive(clap::Args)]
pub struct CollectArgs {
    /// A sweep's output directory (its plan.json and points/).
    dir: PathBuf,
    /// The lossless-lab checkout whose venv draws the plots.
    #[arg(long, default_value = ".")]
    lab: PathBuf,
}

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
}

impl Point {
    fn describe(&self) -> String {
        let mut parts: Vec<String> = self
            .settings
            .iter()
            .map(|(a, v)| format!("{a}={}", spec::show(v)))
            .collect();
        parts.push(format!("case {}", self.case));
        parts.join(", ")
    }
}

const PLAN: &str = "plan.json";

fn point_dir(dir: &Path, name: &str) -> PathBuf {
    dir.join("points").join(name)
}

fn write_json(path: &Path, value: &impl Serialize) -> Result<(), SweepError> {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| SweepError::file(path, e))?;
    text.push('\n');
    std::fs::write(path, text).map_err(|e| SweepError::file(path, e))
}

pub fn read_plan(dir: &Path) -> Result<Plan, SweepError> {
    let path = dir.join(PLAN);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| SweepError::file(&path, format!("{e} (not a sweep's output directory?)")))?;
    serde_json::from_str(&text).map_err(|e| SweepError::file(&path, e))
}

/// Runs `f(0..count)` on `jobs` threads; results in index order.
fn parallel<R: Send>(jobs: usize, count: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
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
        std::fs::create_dir_all(&scratch).map_err(|e| SweepError::file(&scratch, e))?;
        let topo = scratch.join("topology.json");
        write_json(&topo, &sweep.base)?;
        let fabric =
            program::prepare(lab, &topo, None, false, &scratch).map_err(|e| SweepError::At {
                file: sweep.file.clone(),
                path: "topology".into(),
                message: e.to_string(),
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
            std::fs::create_dir_all(&pd).map_err(|e| SweepError::file(&pd, e))?;
            // What an earlier sweep into this directory left must not be collected as this one's.
            let _ = std::fs::remove_file(pd.join("results.json"));
            write_json(&pd.join("topology.json"), &topology)?;
            points.push(Point {
                name,
                case: case.clone(),
                seed,
                settings: setting.values.clone(),
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
                message: e.to_string(),
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
    fn new(lab: &Path, pipeline: Option<&Path>) -> Result<Tools, SweepError> {
        let abs = |p: &Path| std::fs::canonicalize(p).map_err(|e| SweepError::file(p, e));
        let exe = std::env::current_exe().map_err(|e| SweepError::Usage(e.to_string()))?;
        let lab = abs(lab)?;
        let pipeline = match pipeline {
            Some(p) => abs(p)?,
            None => lab.join("build/p4"),
        };
        Ok(Tools { exe, lab, pipeline })
    }

    fn lab(&self) -> Lab {
        let mut lab = Lab::at(&self.lab);
        lab.pipeline = self.pipeline.clone();
        lab
    }
}

/// Runs point `i` of the plan in `dir`: `lossless-sim run` in a process of its own, its output
/// in `points/NAME/run.log`, its results in `points/NAME/results.json`.
pub fn run_point(dir: &Path, plan: &Plan, i: usize, tools: &Tools) -> Result<(), String> {
    let p = plan.points.get(i).ok_or_else(|| {
        format!(
            "--point {i}: {} has {} points (0-{})",
            dir.join(PLAN).display(),
            plan.points.len(),
            plan.points.len().saturating_sub(1)
        )
    })?;
    let pd = point_dir(dir, &p.name);
    let log_path = pd.join("run.log");
    let log =
        std::fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let err = log
        .try_clone()
        .map_err(|e| format!("{}: {e}", log_path.display()))?;
    let status = Command::new(&tools.exe)
        .arg("run")
        .arg(pd.join("topology.json"))
        .args(["--case", &p.case, "--seed", &p.seed.to_string(), "--out"])
        .arg(&pd)
        .arg("--lab")
        .arg(&tools.lab)
        .arg("--pipeline")
        .arg(&tools.pipeline)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err)
        .status()
        .map_err(|e| format!("{}: {e}", tools.exe.display()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "point {} ({}): lossless-sim run: {status}, see {}",
            p.name,
            p.describe(),
            log_path.display()
        ))
    }
}

pub fn main(args: &SweepArgs) -> ExitCode {
    match sweep(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("lossless-sim sweep: {e}");
            ExitCode::from(2)
        }
    }
}

fn sweep(args: &SweepArgs) -> Result<ExitCode, SweepError> {
    let tools = Tools::new(&args.lab, args.pipeline.as_deref())?;
    if let Some(i) = args.point {
        if args.sweep.is_some() || args.emit.is_some() {
            return Err(SweepError::Usage(
                "--point I runs a point of the sweep planned in --out: no SWEEP file, no --emit"
                    .into(),
            ));
        }
        let plan = read_plan(&args.out)?;
        return Ok(match run_point(&args.out, &plan, i, &tools) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("lossless-sim sweep: {e}");
                ExitCode::from(1)
            }
        });
    }
    let file = args
        .sweep
        .as_deref()
        .ok_or_else(|| SweepError::Usage("give a sweep file (or --point I --out DIR)".into()))?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let jobs = args.jobs.unwrap_or(cores).max(1);
    let lab = tools.lab();
    let sweep = spec::load(
        file,
        &lab.root.join("topo/lossless_topo/topologies"),
        args.quick,
    )?;
    std::fs::create_dir_all(&args.out).map_err(|e| SweepError::file(&args.out, e))?;
    let out = std::fs::canonicalize(&args.out).map_err(|e| SweepError::file(&args.out, e))?;
    let seed = args.seed.or(sweep.seed).unwrap_or(1);
    let plan = plan(&sweep, &out, &lab, seed, jobs)?;
    let n = plan.points.len();
    eprintln!(
        "lossless-sim sweep: {n} points planned in {}",
        out.display()
    );
    if let Some(kind) = args.emit {
        let script = match kind {
            Emit::Slurm => emit::slurm(&out, &tools, n, args.jobs)?,
            Emit::K8s => emit::k8s(&out, &tools, n, args.jobs, &args.image, &args.pvc)?,
        };
        let submit = match kind {
            Emit::Slurm => "sbatch",
            Emit::K8s => "kubectl apply -f",
        };
        eprintln!(
            "lossless-sim sweep: wrote {}; run it with `{submit} {}`, then `lossless-sim collect {}`",
            script.display(),
            script.display(),
            out.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let done = AtomicUsize::new(0);
    let results = parallel(jobs, n, |i| {
        let wall = Instant::now();
        let r = run_point(&out, &plan, i, &tools);
        let k = done.fetch_add(1, Ordering::Relaxed) + 1;
        eprintln!(
            "lossless-sim sweep: [{k}/{n}] point {} ({}): {} in {:.1} s",
            plan.points[i].name,
            plan.points[i].describe(),
            if r.is_ok() { "done" } else { "FAILED" },
            wall.elapsed().as_secs_f64()
        );
        r
    });
    let failed: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    for f in &failed {
        eprintln!("lossless-sim sweep: {f}");
    }
    if !failed.is_empty() {
        return Ok(ExitCode::from(1));
    }
    let written = collect::collect(&out, &lab)?;
    for w in written {
        eprintln!("lossless-sim sweep: wrote {}", w.display());
    }
    Ok(ExitCode::SUCCESS)
}

pub fn collect_main(args: &CollectArgs) -> ExitCode {
    let lab = match std::fs::canonicalize(&args.lab) {
        Ok(root) => Lab::at(&root),
        Err(e) => {
            eprintln!("lossless-sim collect: {}: {e}", args.lab.display());
            return ExitCode::from(2);
        }
    };
    match collect::collect(&args.dir, &lab) {
        Ok(written) => {
            for w in written {
                eprintln!("lossless-sim collect: wrote {}", w.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("lossless-sim collect: {e}");
            ExitCode::from(1)
        }
    }
}
