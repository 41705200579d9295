//! A sweep's points merged into `sweep.csv` (one row per point x measurement) and its plots.
//! The same for a local sweep and for points a cluster ran: nothing in the CSV comes from
//! where or when a point ran.

use super::error::SweepError;
use super::plan::{point_dir, read_plan, Plan, PLAN};
use super::spec;
use crate::program::Lab;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The columns every row starts with after the swept addresses.
const POINT: &str = "point";
const CASE: &str = "case";
const MEASUREMENT: &str = "measurement";
/// What the plots draw when the sweep file's `plot.y` names nothing.
const DEFAULT_Y: &[&str] = &["avg_latency_us", "p99_latency_us"];

fn scalar(v: &Value) -> bool {
    !(v.is_object() || v.is_array())
}

/// A CSV field, quoted when it must be (RFC 4180).
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// `name`, or `prefix.name` when the header has it already.
fn unique(header: &[String], prefix: &str, name: &str) -> String {
    if header.iter().any(|h| h == name) {
        format!("{prefix}.{name}")
    } else {
        name.to_string()
    }
}

/// The CSV of the points' results, and its header's parts: (key columns, value columns).
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// What identifies a row: the swept addresses, the case and the measurement's params.
    pub keys: Vec<String>,
    pub values: Vec<String>,
}

/// Rows of `docs` (each point's results.json, in the plan's order). A measurement's `params`
/// and `values` scalars become columns, by name, in the order first met; nested values
/// (per-queue, per-switch) stay in results.json.
pub fn table(plan: &Plan, docs: &[Value]) -> Table {
    let measurements = |d: &Value| d["measurements"].as_array().cloned().unwrap_or_default();
    let names = |member: &str| {
        let mut names: Vec<String> = Vec::new();
        for m in docs.iter().flat_map(measurements) {
            for (k, v) in m[member].as_object().into_iter().flatten() {
                if scalar(v) && !names.contains(k) {
                    names.push(k.clone());
                }
            }
        }
        names
    };
    let (params, values) = (names("params"), names("values"));
    let mut header = vec![POINT.to_string()];
    header.extend(plan.columns.iter().cloned());
    header.extend([CASE.to_string(), MEASUREMENT.to_string()]);
    let mut keys: Vec<String> = header[1..].to_vec();
    keys.retain(|k| k != MEASUREMENT);
    let mut param_cols = Vec::new();
    for p in &params {
        let c = unique(&header, "params", p);
        header.push(c.clone());
        param_cols.push(c);
    }
    keys.extend(param_cols);
    let mut value_cols = Vec::new();
    for v in &values {
        let c = unique(&header, "values", v);
        header.push(c.clone());
        value_cols.push(c);
    }
    let mut rows = Vec::new();
    for (p, doc) in plan.points.iter().zip(docs) {
        for m in measurements(doc) {
            let mut row = vec![p.name.clone()];
            row.extend(plan.columns.iter().map(|c| {
                p.settings
                    .iter()
                    .find(|(a, _)| a == c)
                    .map_or(String::new(), |(_, v)| spec::show(v))
            }));
            row.push(p.case.clone());
            row.push(m["case"].as_str().unwrap_or_default().to_string());
            let cell = |member: &str, k: &String| {
                m[member]
                    .get(k)
                    .filter(|v| scalar(v))
                    .map_or(String::new(), spec::show)
            };
            row.extend(params.iter().map(|k| cell("params", k)));
            row.extend(values.iter().map(|k| cell("values", k)));
            rows.push(row);
        }
    }
    Table {
        header,
        rows,
        keys,
        values: value_cols,
    }
}

impl Table {
    pub fn csv(&self) -> String {
        let line = |cells: &[String]| {
            let mut l = cells.iter().map(|c| field(c)).collect::<Vec<_>>().join(",");
            l.push('\n');
            l
        };
        let mut out = line(&self.header);
        for r in &self.rows {
            out.push_str(&line(r));
        }
        out
    }

    fn column(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name)
    }

    /// Every row has a number in column `name`.
    fn numeric(&self, name: &str) -> bool {
        self.column(name).is_some_and(|i| {
            !self.rows.is_empty() && self.rows.iter().all(|r| r[i].parse::<f64>().is_ok())
        })
    }
}

/// Merges the points of the sweep in `dir` into `dir/sweep.csv` and draws `dir/plots/`;
/// returns what it wrote. Every point must have its results.json.
pub fn collect(dir: &Path, lab: &Lab) -> Result<Vec<PathBuf>, SweepError> {
    let plan = read_plan(dir)?;
    let mut docs = Vec::new();
    let mut missing = Vec::new();
    for p in &plan.points {
        let path = point_dir(dir, &p.name).join("results.json");
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                docs.push(serde_json::from_str(&text).map_err(|e| SweepError::json(&path, e))?)
            }
            Err(_) => missing.push(p.name.clone()),
        }
    }
    if !missing.is_empty() {
        return Err(SweepError::NoResults {
            dir: dir.join("points"),
            missing,
            total: plan.points.len(),
        });
    }
    let t = table(&plan, &docs);
    let csv = dir.join("sweep.csv");
    std::fs::write(&csv, t.csv()).map_err(|e| SweepError::io(&csv, e))?;
    let mut written = vec![csv.clone()];
    written.extend(plots(&plan, &t, &csv, &dir.join("plots"), lab)?);
    Ok(written)
}

/// `lossless_topo.plots.sweep` draws each y against the swept x, one line per combination of
/// the other keys that vary. x: the sweep file's `plot.x`, else the first swept address whose
/// values are all numbers; y: its `plot.y`, else the average and p99 latency where measured.
fn plots(
    plan: &Plan,
    t: &Table,
    csv: &Path,
    out: &Path,
    lab: &Lab,
) -> Result<Vec<PathBuf>, SweepError> {
    let x = match &plan.plot.x {
        Some(x) => Some(x.clone()),
        None => plan.columns.iter().find(|c| t.numeric(c)).cloned(),
    };
    let Some(x) = x else {
        eprintln!("lossless-sim: no swept address has numbers to plot against; no plots");
        return Ok(Vec::new());
    };
    let ys: Vec<String> = if plan.plot.y.is_empty() {
        DEFAULT_Y
            .iter()
            .filter(|y| t.numeric(y))
            .map(|y| y.to_string())
            .collect()
    } else {
        for y in &plan.plot.y {
            if !t.values.contains(y) {
                return Err(SweepError::NotMeasured {
                    plan: csv.with_file_name(PLAN),
                    y: y.clone(),
                    have: t.values.clone(),
                });
            }
        }
        plan.plot.y.clone()
    };
    if ys.is_empty() {
        return Ok(Vec::new());
    }
    std::fs::create_dir_all(out).map_err(|e| SweepError::io(out, e))?;
    let script = "import sys\n\
        from pathlib import Path\n\
        from lossless_topo.plots import sweep\n\
        a = sys.argv[1:]\n\
        for p in sweep(Path(a[0]), Path(a[1]), a[2], a[3].split(','), a[4:]):\n    print(p)\n";
    let got = lab
        .python()
        .arg("-c")
        .arg(script)
        .arg(csv)
        .arg(out)
        .arg(&x)
        .arg(ys.join(","))
        .args(&t.keys)
        .output()
        .map_err(|e| SweepError::io(&lab.python, e))?;
    if !got.status.success() {
        return Err(SweepError::Plots {
            dir: out.into(),
            stderr: String::from_utf8_lossy(&got.stderr).trim_end().into(),
        });
    }
    Ok(String::from_utf8_lossy(&got.stdout)
        .lines()
        .map(PathBuf::from)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::plan::Point;
    use serde_json::json;

    #[test]
    fn one_row_per_measurement_with_settings_params_and_scalar_values() {
        let plan = Plan {
            columns: vec![
                "links.rate_mbps".into(),
                "config_db.SFC|GLOBAL|dedup".into(),
            ],
            plot: Default::default(),
            points: vec![Point {
                name: "0000".into(),
                case: "sfc=on".into(),
                seed: 1,
                settings: vec![("links.rate_mbps".into(), json!(25000))],
                run_args: Vec::new(),
            }],
        };
        let doc = json!({"measurements": [
            {"case": "9:1 4096 8x7", "params": {"roce_tcp": "9:1", "size": 4096},
             "values": {"avg_latency_us": 1.5, "queues": [1, 2], "case": "a,\"b\""}},
            {"case": "x", "params": {"flows": "256x7"}, "values": {"avg_latency_us": 2}},
        ]});
        let t = table(&plan, &[doc]);
        assert_eq!(
            t.csv(),
            "point,links.rate_mbps,config_db.SFC|GLOBAL|dedup,case,measurement,roce_tcp,size,flows,avg_latency_us,values.case\n\
             0000,25000,,sfc=on,9:1 4096 8x7,9:1,4096,,1.5,\"a,\"\"b\"\"\"\n\
             0000,25000,,sfc=on,x,,,256x7,2,\n"
        );
        assert_eq!(
            t.keys,
            [
                "links.rate_mbps",
                "config_db.SFC|GLOBAL|dedup",
                "case",
                "roce_tcp",
                "size",
                "flows"
            ]
        );
        assert!(t.numeric("avg_latency_us"));
        assert!(!t.numeric("flows"));
    }
}
