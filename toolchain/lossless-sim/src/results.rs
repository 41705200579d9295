//! results.json in the lab's schema (topo/README.md, `lossless_topo.results.Results`), with a
//! `sim` member for what only a simulation has. Nothing in it depends on the wall clock, so one
//! seed gives one file, byte for byte.

use crate::timeline::StatsSample;
use serde::Serialize;
use std::path::{Path, PathBuf};

#[derive(Debug, Serialize)]
pub struct Measurement {
    pub case: String,
    pub params: serde_json::Value,
    pub values: serde_json::Value,
    pub latency_us: Vec<f64>,
    pub throughput: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Serialize)]
pub struct SimInfo {
    /// `--seed`.
    pub rng_seed: u64,
    /// The config cases run, in order, joined by commas.
    pub case: String,
    pub cases: Vec<CaseInfo>,
    pub pipeline_latency_ns: u64,
    /// The run stopped at --max-events or --time-limit: everything here covers only part of it.
    pub partial: bool,
    pub stop: crate::net::Stop,
    pub events: u64,
    pub virtual_time_ns: u64,
}

/// One config case of a run: its stretch of virtual time and, for every case after the first,
/// how each switch was reprogrammed for it.
#[derive(Debug, Serialize)]
pub struct CaseInfo {
    pub name: String,
    pub start_ns: u64,
    pub end_ns: u64,
    pub reprogrammed: Vec<Reprogrammed>,
    /// How many of results.json's measurements, in order, are this case's.
    pub measurements: usize,
}

#[derive(Debug, Serialize)]
pub struct Results {
    pub topology: String,
    pub experiment: String,
    pub seed: String,
    pub scale: serde_json::Value,
    pub switch: String,
    pub missing_features: Vec<String>,
    pub measurements: Vec<Measurement>,
    pub stats: Vec<StatsSample>,
    pub tables: Vec<String>,
    pub sim: SimInfo,
}

impl Results {
    pub fn write(&self, dir: &Path) -> std::io::Result<PathBuf> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("results.json");
        let mut text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        text.push('\n');
        std::fs::write(&path, text)?;
        Ok(path)
    }
}

/// A plain text table as the lab prints them (`lossless_topo.results.table`).
pub fn table(title: &str, header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let line = |cells: Vec<&str>| {
        cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let mut out = vec![title.to_string(), line(header.to_vec())];
    out.extend(
        rows.iter()
            .map(|r| line(r.iter().map(String::as_str).collect())),
    );
    out.join("\n")
}

/// How one switch was reprogrammed for a case, from what `lossless-ctl load --reconcile
/// --read-back` printed. The whole output, which has wall-clock timings, goes to `log` in the
/// case's directory, so that results.json stays a function of the inputs.
#[derive(Debug, Clone, Serialize)]
pub struct Reprogrammed {
    pub switch: String,
    /// The switch already ran this pipeline, so reconcile wrote only the difference.
    pub pipeline_kept: bool,
    /// Read-back found exactly what the case's config_db.json describes.
    pub read_back_exact: bool,
    pub log: String,
}
