//! Where a sweep went wrong, located: the sweep file and the JSON path in it (a setting's
//! address problems nest under that path), a point, or a file the sweep reads or writes.

use crate::program::ProgramError;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// A member of the sweep file, by its JSON path there.
    #[error("{file}: {path}: {source}")]
    At {
        file: PathBuf,
        path: String,
        source: Box<SweepError>,
    },
    /// The sweep file is not JSON (serde_json's position given as `file(line:col)`).
    #[error("{}({}:{}): {}", file.display(), source.line(), source.column(), without_position(source))]
    Syntax {
        file: PathBuf,
        source: serde_json::Error,
    },
    #[error("{file}: expected an object")]
    NotAnObject { file: PathBuf },

    // What is wrong with a member of the sweep file (under `At`).
    #[error("unknown field (known: {})", known.join(", "))]
    UnknownField { known: &'static [&'static str] },
    /// The member's shape, as the sweep file's format wants it.
    #[error("{0}")]
    Shape(&'static str),
    #[error("{path}: {source}")]
    TopologyRead {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}({}:{}): {source}", path.display(), source.line(), source.column())]
    TopologySyntax {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{source} (expected {{\"x\": ADDRESS, \"y\": [VALUE, ...]}})")]
    Plot { source: serde_json::Error },
    #[error("'{x}' is not swept (swept: {})", swept.join(", "))]
    NotSwept { x: String, swept: Vec<String> },
    /// The lab's code rejected the unswept topology.
    #[error(transparent)]
    Program(Box<ProgramError>),

    // A setting's address, and where it leads in the topology (under `At`).
    #[error("expected config_db.TABLE|KEY|FIELD (KEY may be a glob)")]
    ConfigDbKey { address: String },
    #[error("expected config_db.TABLE|KEY|FIELD")]
    ConfigDbAlone,
    #[error("'{step}': expected NAME[INDEX]")]
    Index { step: String },
    #[error("'{address}': empty name (expected a JSON path such as links.rate_mbps)")]
    EmptyName { address: String },
    #[error("{at}: an empty array")]
    EmptyArray { at: String },
    #[error("{at}: not an object")]
    NotObject { at: String },
    #[error("{at}: no such field in the topology")]
    NoField { at: String },
    #[error("{at}[{index}]: no such element (it has {len})")]
    NoElement {
        at: String,
        index: usize,
        len: usize,
    },
    #[error("a config_db value is a string, number or boolean")]
    ConfigDbValue,
    #[error("run.{name}: not an option of run a sweep sets (known: {})", known.join(", "))]
    RunFlag {
        name: String,
        known: Vec<&'static str>,
    },
    #[error("{flag}: expected {expected}")]
    RunValue {
        flag: &'static str,
        expected: &'static str,
    },
    #[error("the topology is not an object")]
    TopologyNotObject,
    #[error("config_db: the topology's is not an object")]
    ConfigDbNotObject,

    /// A point's topology or config_db settings, rejected by the lab's code for its case.
    #[error("{file}: point {point} ({settings}): {source}")]
    Point {
        file: PathBuf,
        point: String,
        settings: String,
        source: Box<ProgramError>,
    },
    #[error("--point {index}: {plan} has {count} points (0-{})", count.saturating_sub(1))]
    NoSuchPoint {
        plan: PathBuf,
        index: usize,
        count: usize,
    },
    #[error("point {point} ({settings}): lossless-sim run: {status}, see {log}")]
    PointFailed {
        point: String,
        settings: String,
        status: ExitStatus,
        log: PathBuf,
    },

    // Files the sweep reads and writes.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{path}: {source} (not a sweep's output directory?)")]
    NoPlan {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{dir}: {} of {total} points have no results.json (not run, or failed: see their run.log): {}",
        missing.len(),
        missing.join(", ")
    )]
    NoResults {
        dir: PathBuf,
        missing: Vec<String>,
        total: usize,
    },
    #[error("{plan}: plot.y: '{y}' is not a measured value (have: {})", have.join(", "))]
    NotMeasured {
        plan: PathBuf,
        y: String,
        have: Vec<String>,
    },
    #[error("{dir}: lossless_topo.plots.sweep failed:\n{stderr}")]
    Plots { dir: PathBuf, stderr: String },
    #[error("{0}")]
    Usage(&'static str),
    #[error("{0}")]
    CurrentExe(std::io::Error),
}

impl SweepError {
    pub fn io(path: &Path, source: std::io::Error) -> SweepError {
        SweepError::Io {
            path: path.into(),
            source,
        }
    }

    pub fn json(path: &Path, source: serde_json::Error) -> SweepError {
        SweepError::Json {
            path: path.into(),
            source,
        }
    }
}

/// serde_json's message without its " at line L column C", which `Syntax` gives as `(L:C)`.
fn without_position(e: &serde_json::Error) -> String {
    let what = e.to_string();
    what.split(" at line ").next().unwrap_or(&what).to_string()
}
