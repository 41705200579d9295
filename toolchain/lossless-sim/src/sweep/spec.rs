//! A sweep file (README.md, "Sweep"): the topology, the settings every point shares, a grid of
//! settings whose cartesian product gives points, and explicit points. A setting's address is
//! a JSON path into the topology file (`links.rate_mbps`, `experiment.ecn.kmax`,
//! `links[8].delay_ns`; a name applied to an array sets it in every element), or
//! `config_db.TABLE|KEY|FIELD`, which lands in the topology's `config_db` object and is written
//! over every switch's generated config_db.json (KEY a glob: `SFC|*|3-4|threshold`), or
//! `run.FLAG`, one of `run`'s own options for the point (`run.pipeline_latency_ns`).

use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

pub use super::error::SweepError;

/// One step of a JSON path: a member name, optionally indexed (`links[3]`).
#[derive(Debug, Clone, PartialEq)]
struct Step {
    name: String,
    index: Option<usize>,
}

/// Where a setting goes in the topology document.
#[derive(Debug, Clone, PartialEq)]
enum Address {
    /// `config_db.TABLE|KEY|FIELD`: one key of the topology's `config_db` object.
    ConfigDb(String),
    /// `run.FLAG`: one of `run`'s options, given on the point's command line.
    Run(&'static RunFlag),
    Path(Vec<Step>),
}

const CONFIG_DB: &str = "config_db";

/// One of `run`'s options a sweep may set: its address name, its flag, and whether it takes
/// any non-negative number (else a non-negative integer).
#[derive(Debug, PartialEq)]
pub struct RunFlag {
    name: &'static str,
    flag: &'static str,
    real: bool,
}

const RUN_FLAGS: &[RunFlag] = &[
    RunFlag {
        name: "pipeline_latency_ns",
        flag: "--pipeline-latency-ns",
        real: false,
    },
    RunFlag {
        name: "cnp_interval_ns",
        flag: "--cnp-interval-ns",
        real: false,
    },
    RunFlag {
        name: "min_rate_mbps",
        flag: "--min-rate-mbps",
        real: true,
    },
];

impl RunFlag {
    /// The flag and its value as `run` takes them, or why the value does not fit.
    fn args(&'static self, value: &Value) -> Result<[String; 2], SweepError> {
        let fits = if self.real {
            value.as_f64().is_some_and(|v| v >= 0.0)
        } else {
            value.as_u64().is_some()
        };
        if !fits {
            return Err(SweepError::RunValue {
                flag: self.flag,
                expected: if self.real {
                    "a non-negative number"
                } else {
                    "a non-negative integer"
                },
            });
        }
        Ok([self.flag.to_string(), value.to_string()])
    }
}

fn parse_address(text: &str) -> Result<Address, SweepError> {
    if let Some(rest) = text.strip_prefix("config_db.") {
        let parts: Vec<&str> = rest.split('|').collect();
        if parts.len() < 3 || parts.iter().any(|p| p.is_empty()) {
            return Err(SweepError::ConfigDbKey {
                address: text.into(),
            });
        }
        return Ok(Address::ConfigDb(rest.to_string()));
    }
    if let Some(name) = text.strip_prefix("run.") {
        return RUN_FLAGS
            .iter()
            .find(|f| f.name == name)
            .map(Address::Run)
            .ok_or_else(|| SweepError::RunFlag {
                name: name.into(),
                known: RUN_FLAGS.iter().map(|f| f.name).collect(),
            });
    }
    let mut steps = Vec::new();
    for part in text.split('.') {
        let (name, index) = match part.split_once('[') {
            Some((name, idx)) => {
                let idx = idx
                    .strip_suffix(']')
                    .and_then(|i| i.parse::<usize>().ok())
                    .ok_or_else(|| SweepError::Index { step: part.into() })?;
                (name, Some(idx))
            }
            None => (part, None),
        };
        if name.is_empty() {
            return Err(SweepError::EmptyName {
                address: text.into(),
            });
        }
        steps.push(Step {
            name: name.into(),
            index,
        });
    }
    if steps.len() == 1 && steps[0].name == CONFIG_DB {
        return Err(SweepError::ConfigDbAlone);
    }
    Ok(Address::Path(steps))
}

/// Sets `value` at `steps` under `at`. A name met on an array applies to every element; the
/// last name may be new (the topology's own checks reject a field it does not know).
fn set_path(cur: &mut Value, steps: &[Step], value: &Value, at: &str) -> Result<(), SweepError> {
    if let Value::Array(items) = cur {
        if items.is_empty() {
            return Err(SweepError::EmptyArray { at: at.into() });
        }
        for (i, item) in items.iter_mut().enumerate() {
            set_path(item, steps, value, &format!("{at}[{i}]"))?;
        }
        return Ok(());
    }
    let Value::Object(obj) = cur else {
        return Err(SweepError::NotObject { at: at.into() });
    };
    let step = &steps[0];
    let here = if at.is_empty() {
        step.name.clone()
    } else {
        format!("{at}.{}", step.name)
    };
    if steps.len() == 1 && step.index.is_none() {
        obj.insert(step.name.clone(), value.clone());
        return Ok(());
    }
    let child = obj
        .get_mut(&step.name)
        .ok_or_else(|| SweepError::NoField { at: here.clone() })?;
    let (child, here) = match step.index {
        Some(i) => {
            let len = child.as_array().map_or(0, Vec::len);
            let el = child
                .as_array_mut()
                .and_then(|a| a.get_mut(i))
                .ok_or_else(|| SweepError::NoElement {
                    at: here.clone(),
                    index: i,
                    len,
                })?;
            (el, format!("{here}[{i}]"))
        }
        None => (child, here),
    };
    if steps.len() == 1 {
        *child = value.clone();
        return Ok(());
    }
    set_path(child, &steps[1..], value, &here)
}

fn apply(doc: &mut Value, address: &Address, value: &Value) -> Result<(), SweepError> {
    match address {
        Address::ConfigDb(key) => {
            if !(value.is_string() || value.is_number() || value.is_boolean()) {
                return Err(SweepError::ConfigDbValue);
            }
            let obj = doc.as_object_mut().ok_or(SweepError::TopologyNotObject)?;
            let table = obj
                .entry(CONFIG_DB)
                .or_insert_with(|| Value::Object(Map::new()));
            let table = table.as_object_mut().ok_or(SweepError::ConfigDbNotObject)?;
            table.insert(key.clone(), value.clone());
            Ok(())
        }
        // Not in the topology: checked here, given to `run` by [`Sweep::run_args`].
        Address::Run(flag) => flag.args(value).map(|_| ()),
        Address::Path(steps) => set_path(doc, steps, value, ""),
    }
}

/// A sweep file, parsed and checked against its topology.
#[derive(Debug, Clone)]
pub struct Sweep {
    pub file: PathBuf,
    /// The topology document with the shared settings applied (and `--quick`'s overrides merged
    /// into its experiment, so that a swept experiment field is not overridden by them).
    pub base: Value,
    /// The shared settings of `run`'s own options (`run.FLAG`), which the topology does not hold.
    pub set_run: Vec<(String, Value)>,
    /// The config cases every point runs (empty: every case of its experiment).
    pub cases: Vec<String>,
    pub seed: Option<u64>,
    /// Each grid or explicit point's settings, in order: the grid's cartesian product (the last
    /// address varying fastest) and then the explicit points.
    pub settings: Vec<Setting>,
    /// The swept addresses (grid, then those only explicit points set): the CSV's columns.
    pub columns: Vec<String>,
    pub plot: Plot,
}

/// One point of the grid, or an explicit point, before it is run for each of its cases.
#[derive(Debug, Clone)]
pub struct Setting {
    pub values: Vec<(String, Value)>,
    /// An explicit point's own `case` (empty: the sweep's cases).
    pub cases: Vec<String>,
}

/// What the sweep's plots draw: each `y` against the swept address `x`.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plot {
    pub x: Option<String>,
    #[serde(default)]
    pub y: Vec<String>,
}

const FIELDS: &[&str] = &[
    "topology", "quick", "seed", "cases", "set", "grid", "points", "plot",
];

/// An explicit point's member naming its config cases rather than a setting.
const CASE: &str = "case";
const CASES_EXPECTED: &str = "expected a case name or a non-empty array of them";

fn case_list(v: &Value) -> Option<Vec<String>> {
    match v {
        Value::String(s) => Some(vec![s.clone()]),
        Value::Array(a) if !a.is_empty() => {
            a.iter().map(|c| c.as_str().map(String::from)).collect()
        }
        _ => None,
    }
}

/// `"grid"."links.rate_mbps"`-style path of a setting in the sweep file.
fn member(section: &str, address: &str) -> String {
    format!("{section}.\"{address}\"")
}

/// Reads and checks a sweep file: its shape, the topology it names (a path relative to the
/// sweep file, or the name of one of `topologies`' files), and every setting's address and
/// value against that topology, before anything runs.
pub fn load(file: &Path, topologies: &Path, quick: bool) -> Result<Sweep, SweepError> {
    let text = std::fs::read_to_string(file).map_err(|e| SweepError::io(file, e))?;
    let doc: Value = serde_json::from_str(&text).map_err(|source| SweepError::Syntax {
        file: file.into(),
        source,
    })?;
    let at = |path: &str, source: SweepError| SweepError::At {
        file: file.into(),
        path: path.into(),
        source: Box::new(source),
    };
    let obj = doc
        .as_object()
        .ok_or_else(|| SweepError::NotAnObject { file: file.into() })?;
    for key in obj.keys() {
        if !FIELDS.contains(&key.as_str()) {
            return Err(at(key, SweepError::UnknownField { known: FIELDS }));
        }
    }
    let name = obj
        .get("topology")
        .and_then(Value::as_str)
        .ok_or_else(|| at("topology", SweepError::Shape("missing, or not a string")))?;
    let relative = file.parent().unwrap_or(Path::new(".")).join(name);
    let topo_path = if relative.is_file() {
        relative
    } else if !name.contains('/') && !name.ends_with(".json") {
        topologies.join(name).with_extension("json")
    } else {
        relative
    };
    let topo_text = std::fs::read_to_string(&topo_path).map_err(|source| {
        let path = topo_path.clone();
        at("topology", SweepError::TopologyRead { path, source })
    })?;
    let mut base: Value = serde_json::from_str(&topo_text).map_err(|source| {
        let path = topo_path.clone();
        at("topology", SweepError::TopologySyntax { path, source })
    })?;
    let quick = quick
        || match obj.get("quick") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(at("quick", SweepError::Shape("expected true or false"))),
        };
    if quick {
        merge_quick(&mut base);
    }
    let seed = match obj.get("seed") {
        None => None,
        Some(v) => Some(
            v.as_u64()
                .ok_or_else(|| at("seed", SweepError::Shape("expected a non-negative integer")))?,
        ),
    };
    let cases = match obj.get("cases") {
        None => Vec::new(),
        Some(v) => case_list(v).ok_or_else(|| at("cases", SweepError::Shape(CASES_EXPECTED)))?,
    };
    let section = |key: &str| -> Result<Map<String, Value>, SweepError> {
        match obj.get(key) {
            None => Ok(Map::new()),
            Some(Value::Object(m)) => Ok(m.clone()),
            Some(_) => Err(at(
                key,
                SweepError::Shape("expected an object of address: value"),
            )),
        }
    };
    // Each address checked by setting its first value in a copy of the topology.
    let check =
        |base: &Value, path: String, address: &str, value: &Value| -> Result<(), SweepError> {
            let a = parse_address(address).map_err(|m| at(&path, m))?;
            apply(&mut base.clone(), &a, value).map_err(|m| at(&path, m))
        };
    let mut set_run = Vec::new();
    for (address, value) in section("set")? {
        let path = member("set", &address);
        let a = parse_address(&address).map_err(|m| at(&path, m))?;
        apply(&mut base, &a, &value).map_err(|m| at(&path, m))?;
        if matches!(a, Address::Run(_)) {
            set_run.push((address, value));
        }
    }
    let mut columns = Vec::new();
    let mut grid: Vec<(String, Vec<Value>)> = Vec::new();
    for (address, values) in section("grid")? {
        let path = member("grid", &address);
        let values = values.as_array().filter(|v| !v.is_empty()).ok_or_else(|| {
            at(
                &path,
                SweepError::Shape("expected a non-empty array of values"),
            )
        })?;
        for (i, v) in values.iter().enumerate() {
            check(&base, format!("{path}[{i}]"), &address, v)?;
        }
        columns.push(address.clone());
        grid.push((address, values.clone()));
    }
    let mut settings: Vec<Setting> = vec![Setting {
        values: Vec::new(),
        cases: Vec::new(),
    }];
    if grid.is_empty() && obj.contains_key("points") {
        settings.clear();
    }
    for (address, values) in &grid {
        settings = settings
            .into_iter()
            .flat_map(|s| {
                values.iter().map(move |v| {
                    let mut s = s.clone();
                    s.values.push((address.clone(), v.clone()));
                    s
                })
            })
            .collect();
    }
    if let Some(points) = obj.get("points") {
        let points = points
            .as_array()
            .ok_or_else(|| at("points", SweepError::Shape("expected an array of objects")))?;
        for (i, p) in points.iter().enumerate() {
            let p = p.as_object().ok_or_else(|| {
                at(
                    &format!("points[{i}]"),
                    SweepError::Shape("expected an object"),
                )
            })?;
            let mut s = Setting {
                values: Vec::new(),
                cases: Vec::new(),
            };
            for (address, value) in p {
                if address == CASE {
                    s.cases = case_list(value).ok_or_else(|| {
                        at(
                            &format!("points[{i}].case"),
                            SweepError::Shape(CASES_EXPECTED),
                        )
                    })?;
                    continue;
                }
                check(&base, format!("points[{i}].\"{address}\""), address, value)?;
                if !columns.contains(address) {
                    columns.push(address.clone());
                }
                s.values.push((address.clone(), value.clone()));
            }
            settings.push(s);
        }
    }
    let plot: Plot = match obj.get("plot") {
        None => Plot::default(),
        Some(p) => serde_json::from_value(p.clone())
            .map_err(|source| at("plot", SweepError::Plot { source }))?,
    };
    if let Some(x) = &plot.x {
        if !columns.contains(x) {
            return Err(at(
                "plot.x",
                SweepError::NotSwept {
                    x: x.clone(),
                    swept: columns,
                },
            ));
        }
    }
    Ok(Sweep {
        file: file.into(),
        base,
        set_run,
        cases,
        seed,
        settings,
        columns,
        plot,
    })
}

/// `--quick`: the experiment's `quick` overrides merged into it, as the lab does at run time.
fn merge_quick(topology: &mut Value) {
    let Some(exp) = topology
        .get_mut("experiment")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    if let Some(Value::Object(quick)) = exp.remove("quick") {
        exp.extend(quick);
    }
}

impl Sweep {
    /// The topology document of one grid or explicit point.
    pub fn topology(&self, settings: &[(String, Value)]) -> Value {
        let mut doc = self.base.clone();
        for (address, value) in settings {
            // Every address and value was applied to the base on load.
            let _ = apply(
                &mut doc,
                &parse_address(address).expect("checked on load"),
                value,
            );
        }
        doc
    }

    /// `run`'s own options for one point: the shared ones, then the point's (a later flag
    /// wins in `run`'s parser).
    pub fn run_args(&self, settings: &[(String, Value)]) -> Vec<String> {
        self.set_run
            .iter()
            .chain(settings)
            .filter_map(|(address, value)| match parse_address(address) {
                // Every address and value was checked on load.
                Ok(Address::Run(flag)) => flag.args(value).ok(),
                _ => None,
            })
            .flatten()
            .collect()
    }
}

/// A setting's value as the CSV and the messages print it: strings bare, the rest as JSON.
pub fn show(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        v => v.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn topo() -> Value {
        json!({"links": [{"rate_mbps": 1}, {"rate_mbps": 2}], "experiment": {"ecn": {"kmax": 3}}})
    }

    #[test]
    fn a_name_on_an_array_sets_every_element_and_an_index_one() {
        let mut doc = topo();
        apply(
            &mut doc,
            &parse_address("links.rate_mbps").unwrap(),
            &json!(7),
        )
        .unwrap();
        assert_eq!(doc["links"], json!([{"rate_mbps": 7}, {"rate_mbps": 7}]));
        apply(
            &mut doc,
            &parse_address("links[1].rate_mbps").unwrap(),
            &json!(9),
        )
        .unwrap();
        assert_eq!(doc["links"], json!([{"rate_mbps": 7}, {"rate_mbps": 9}]));
        apply(
            &mut doc,
            &parse_address("experiment.ecn.kmax").unwrap(),
            &json!(5),
        )
        .unwrap();
        assert_eq!(doc["experiment"]["ecn"]["kmax"], json!(5));
    }

    #[test]
    fn config_db_addresses_keep_dots_and_pipes_in_one_key() {
        let mut doc = topo();
        let a = parse_address("config_db.INTERFACE|Ethernet0|10.0.1.1/24|x").unwrap();
        apply(&mut doc, &a, &json!("1")).unwrap();
        assert_eq!(
            doc["config_db"]["INTERFACE|Ethernet0|10.0.1.1/24|x"],
            json!("1")
        );
        assert!(parse_address("config_db.SFC|threshold").is_err());
        assert!(parse_address("config_db").is_err());
        assert!(apply(&mut doc, &a, &json!([1])).is_err());
    }

    #[test]
    fn run_addresses_are_run_options_not_topology_fields() {
        let mut doc = topo();
        let before = doc.clone();
        let p = parse_address("run.pipeline_latency_ns").unwrap();
        apply(&mut doc, &p, &json!(800)).unwrap();
        assert_eq!(doc, before);
        for bad in [json!(-1), json!(1.5), json!("800")] {
            let e = apply(&mut doc, &p, &bad).unwrap_err().to_string();
            assert_eq!(e, "--pipeline-latency-ns: expected a non-negative integer");
        }
        let m = parse_address("run.min_rate_mbps").unwrap();
        apply(&mut doc, &m, &json!(45.5)).unwrap();
        assert!(apply(&mut doc, &m, &json!(-45)).is_err());
        let e = parse_address("run.seed").unwrap_err().to_string();
        assert_eq!(
            e,
            "run.seed: not an option of run a sweep sets \
             (known: pipeline_latency_ns, cnp_interval_ns, min_rate_mbps)"
        );
        let sweep = Sweep {
            file: "s.json".into(),
            base: doc,
            set_run: vec![("run.cnp_interval_ns".into(), json!(1000))],
            cases: Vec::new(),
            seed: None,
            settings: Vec::new(),
            columns: Vec::new(),
            plot: Plot::default(),
        };
        let point = [
            ("run.pipeline_latency_ns".to_string(), json!(800)),
            ("links.rate_mbps".to_string(), json!(5)),
            ("run.min_rate_mbps".to_string(), json!(45.5)),
        ];
        assert_eq!(
            sweep.run_args(&point),
            [
                "--cnp-interval-ns",
                "1000",
                "--pipeline-latency-ns",
                "800",
                "--min-rate-mbps",
                "45.5"
            ]
        );
    }

    #[test]
    fn paths_that_lead_nowhere_say_where() {
        let mut doc = topo();
        let err = |addr: &str| apply(&mut doc.clone(), &parse_address(addr).unwrap(), &json!(1));
        assert_eq!(
            err("experiment.nosuch.kmax").unwrap_err().to_string(),
            "experiment.nosuch: no such field in the topology"
        );
        assert_eq!(
            err("links[5].rate_mbps").unwrap_err().to_string(),
            "links[5]: no such element (it has 2)"
        );
        assert_eq!(
            err("links.rate_mbps.x").unwrap_err().to_string(),
            "links[0].rate_mbps: not an object"
        );
        assert!(parse_address("links[x].rate_mbps").is_err());
        assert!(parse_address("links..rate_mbps").is_err());
        apply(&mut doc, &parse_address("buffer_bytes").unwrap(), &json!(1)).unwrap();
    }
}
