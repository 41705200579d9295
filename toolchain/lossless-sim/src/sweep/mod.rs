//! `lossless-sim sweep` and `lossless-sim collect` (README.md, "Sweep"): a grid of settings
//! over a topology, its experiment and its switches' config_db.json, each point one `run` of
//! this binary in its own process (single-threaded, deterministic for its seed), points in
//! parallel; or, for a cluster, the points' inputs and a Slurm array or Kubernetes indexed Job
//! whose tasks each run one point, merged afterwards by `collect` into the same sweep.csv.

pub mod collect;
pub mod emit;
pub mod error;
pub mod plan;
pub mod spec;

use crate::program::Lab;
pub use error::SweepError;
use plan::{parallel, plan, point_dir, read_plan, Plan, Tools, PLAN};
pub use spec::Sweep;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
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

/// Runs point `i` of the plan in `dir`: `lossless-sim run` in a process of its own, its output
/// in `points/NAME/run.log`, its results in `points/NAME/results.json`.
pub fn run_point(dir: &Path, plan: &Plan, i: usize, tools: &Tools) -> Result<(), SweepError> {
    let p = plan.points.get(i).ok_or_else(|| SweepError::NoSuchPoint {
        plan: dir.join(PLAN),
        index: i,
        count: plan.points.len(),
    })?;
    let pd = point_dir(dir, &p.name);
    let log_path = pd.join("run.log");
    let log = std::fs::File::create(&log_path).map_err(|e| SweepError::io(&log_path, e))?;
    let err = log.try_clone().map_err(|e| SweepError::io(&log_path, e))?;
    let status = Command::new(&tools.exe)
        .arg("run")
        .arg(pd.join("topology.json"))
        .args(["--case", &p.case, "--seed", &p.seed.to_string(), "--out"])
        .arg(&pd)
        .arg("--lab")
        .arg(&tools.lab)
        .arg("--pipeline")
        .arg(&tools.pipeline)
        // The sweep draws its own plots from sweep.csv; a point's would cost seconds each.
        .arg("--no-plots")
        .args(&p.run_args)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err)
        .status()
        .map_err(|e| SweepError::io(&tools.exe, e))?;
    if status.success() {
        Ok(())
    } else {
        Err(SweepError::PointFailed {
            point: p.name.clone(),
            settings: p.describe(),
            status,
            log: log_path,
        })
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
                "--point I runs a point of the sweep planned in --out: no SWEEP file, no --emit",
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
        .ok_or_else(|| SweepError::Usage("give a sweep file (or --point I --out DIR)"))?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let jobs = args.jobs.unwrap_or(cores).max(1);
    let lab = tools.lab();
    let sweep = spec::load(
        file,
        &lab.root.join("topo/lossless_topo/topologies"),
        args.quick,
    )?;
    std::fs::create_dir_all(&args.out).map_err(|e| SweepError::io(&args.out, e))?;
    let out = std::fs::canonicalize(&args.out).map_err(|e| SweepError::io(&args.out, e))?;
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
    let failed: Vec<SweepError> = results.into_iter().filter_map(Result::err).collect();
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
