//! Before virtual time starts: the fabric and config_db.json files from the lab's Python code
//! (`lossless_topo.simcase`), every switch's traffic manager from `lossless-ctl port-config`, and
//! every switch's pipeline and tables from `lossless-ctl load --read-back` over P4Runtime, each
//! switch served on its own loopback port by p4-switch's gRPC server, exactly as in the lab.

use crate::fabric::Fabric;
use crate::net::SimPort;
use p4_switch::core::{Core, CpuSink};
use p4_switch::grpc::GrpcServer;
use p4_switch::pktgen::parse_port_config;
use p4runtime_server::{Dataplane, EngineJob};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use switch_ports::Port;
use switch_tm::ConfigFormat;
use switch_v1model::SwitchConfig;

/// The lab's CPU port and queue count (the lab kit's SwitchProcess, kit/lossless_kit/switch.py).
pub const CPU_PORT: u32 = 255;
pub const PRIORITY_QUEUES: u32 = 8;

/// Where the lab's tools are: a lossless-lab checkout with its venv and compiled pipeline.
#[derive(Debug, Clone)]
pub struct Lab {
    /// The checkout (control/ and topo/ are put on PYTHONPATH, so its own code runs).
    pub root: PathBuf,
    pub python: PathBuf,
    /// p4-compile's output directory: lossless.json and lossless.p4info.txtpb.
    pub pipeline: PathBuf,
}

impl Lab {
    pub fn at(root: &Path) -> Lab {
        Lab {
            root: root.into(),
            python: root.join(".venv/bin/python"),
            pipeline: root.join("build/p4"),
        }
    }

    fn python(&self) -> Command {
        let mut cmd = Command::new(&self.python);
        let paths = [self.root.join("control"), self.root.join("topo")];
        let mut joined = std::env::join_paths(paths).unwrap_or_default();
        if let Some(old) = std::env::var_os("PYTHONPATH") {
            joined.push(":");
            joined.push(old);
        }
        cmd.env("PYTHONPATH", joined);
        cmd.stdin(Stdio::null());
        cmd
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ProgramError {
    #[error("{what}: cannot run {python}: {source}")]
    Spawn {
        what: String,
        python: PathBuf,
        source: std::io::Error,
    },
    #[error("{what} failed:\n{output}")]
    Tool { what: String, output: String },
    #[error("{path}: {message}")]
    PortConfig { path: PathBuf, message: String },
    #[error("switch {switch}: {message}")]
    Switch { switch: String, message: String },
    #[error("switch {switch}: {source}")]
    Grpc {
        switch: String,
        source: p4_switch::error::ServerError,
    },
    #[error(transparent)]
    Fabric(#[from] crate::fabric::FabricError),
}

fn run(what: String, lab: &Lab, cmd: &mut Command) -> Result<Output, ProgramError> {
    let out = cmd.output().map_err(|source| ProgramError::Spawn {
        what: what.clone(),
        python: lab.python.clone(),
        source,
    })?;
    if out.status.success() {
        return Ok(out);
    }
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Err(ProgramError::Tool {
        what,
        output: text.trim_end().to_string(),
    })
}

/// Writes `out/fabric.json` and the case's config_db.json files; returns the fabric.
pub fn prepare(
    lab: &Lab,
    topology: &Path,
    case: Option<&str>,
    quick: bool,
    out: &Path,
) -> Result<Fabric, ProgramError> {
    let mut cmd = lab.python();
    cmd.args(["-m", "lossless_topo.simcase"])
        .arg(topology)
        .arg("--out")
        .arg(out);
    if let Some(c) = case {
        cmd.args(["--case", c]);
    }
    if quick {
        cmd.arg("--quick");
    }
    run(format!("{}", topology.display()), lab, &mut cmd)?;
    Ok(Fabric::load(&out.join("fabric.json"))?)
}

/// Runs one `lossless-ctl` per switch, all at once (as the lab does), and collects failures.
fn ctl_all(lab: &Lab, calls: Vec<(String, Vec<String>)>) -> Result<(), ProgramError> {
    let mut children = Vec::new();
    for (sw, args) in calls {
        let what = format!("switch {sw}: lossless-ctl {}", args.join(" "));
        let child = lab
            .python()
            .args(["-m", "lossless_ctl.cli"])
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| ProgramError::Spawn {
                what: what.clone(),
                python: lab.python.clone(),
                source,
            })?;
        children.push((what, child));
    }
    let mut failed = Vec::new();
    for (what, child) in children {
        match child.wait_with_output() {
            Ok(out) if out.status.success() => {}
            Ok(out) => failed.push(format!(
                "{what}:\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )),
            Err(e) => failed.push(format!("{what}: {e}")),
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(ProgramError::Tool {
            what: "programming".into(),
            output: failed.join("\n"),
        })
    }
}

/// A simulated switch as the P4Runtime server sees it while virtual time stands still.
struct Stopped {
    core: Arc<Mutex<Core>>,
    engine: SwitchConfig,
    device_id: u64,
}

fn lock(core: &Mutex<Core>) -> std::sync::MutexGuard<'_, Core> {
    core.lock().unwrap_or_else(|p| p.into_inner())
}

impl Dataplane for Stopped {
    fn exec(&self, f: EngineJob) {
        f(&mut lock(&self.core).switch);
    }
    fn set_cpu_sink(&self, sink: CpuSink) {
        lock(&self.core).set_cpu_sink(sink);
    }
    /// A PacketOut enters at virtual time 0; what it produces leaves when the run starts.
    fn inject_cpu(&self, frame: Vec<u8>) {
        lock(&self.core).receive(0, CPU_PORT, &frame);
    }
    fn engine_config(&self) -> SwitchConfig {
        self.engine.clone()
    }
    fn device_id(&self) -> u64 {
        self.device_id
    }
}

/// A switch ready to run: its core, programmed, and its ports by number.
pub struct Programmed {
    pub name: String,
    /// Transmits deferred ([`Core::defer_transmit`]) to `ports`.
    pub core: Core,
    pub ports: Vec<(Arc<dyn Port>, u32)>,
}

/// Builds every switch of `fabric` (in `dir`, where `prepare` wrote it) with its traffic
/// manager, serves each on 127.0.0.1 and programs it with `lossless-ctl load --read-back`.
pub fn program(lab: &Lab, fabric: &Fabric, dir: &Path) -> Result<Vec<Programmed>, ProgramError> {
    let ports_json = |sw: &str| dir.join(format!("{sw}.ports.json"));
    ctl_all(
        lab,
        fabric
            .switches
            .iter()
            .map(|s| {
                let args = vec![
                    "port-config".into(),
                    "--config".into(),
                    dir.join(&s.config_db).display().to_string(),
                    "-o".into(),
                    ports_json(&s.name).display().to_string(),
                ];
                (s.name.clone(), args)
            })
            .collect(),
    )?;
    let engine = SwitchConfig {
        cpu_port: Some(CPU_PORT),
        priority_queues: PRIORITY_QUEUES,
        ..SwitchConfig::default()
    };
    let mut served = Vec::new();
    for s in &fabric.switches {
        let path = ports_json(&s.name);
        let text = std::fs::read_to_string(&path).map_err(|e| ProgramError::PortConfig {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let (mut tm, pktgen) =
            parse_port_config(&text, ConfigFormat::Json).map_err(|e| ProgramError::PortConfig {
                path: path.clone(),
                message: e.to_string(),
            })?;
        // The real-time switch lets a late wake-up start a frame in the past; virtual time is
        // never late.
        tm.catch_up_ns = 0;
        let ports: BTreeMap<u32, Arc<dyn Port>> = fabric
            .links
            .iter()
            .flat_map(|l| [&l.a, &l.b])
            .filter(|e| e.node == s.name)
            .map(|e| {
                let port: Arc<dyn Port> =
                    Arc::new(SimPort::new(format!("{}-eth{}", s.name, e.port)));
                (e.port, port)
            })
            .collect();
        let numbered = ports.iter().map(|(&n, p)| (p.clone(), n)).collect();
        let mut core = Core::new(None, Some(tm), ports, engine.clone(), 0).map_err(|e| {
            ProgramError::PortConfig {
                path: path.clone(),
                message: e.to_string(),
            }
        })?;
        core.defer_transmit();
        core.set_pktgen(0, pktgen)
            .map_err(|e| ProgramError::PortConfig {
                path: path.clone(),
                message: e.to_string(),
            })?;
        let core = Arc::new(Mutex::new(core));
        let dp = Arc::new(Stopped {
            core: core.clone(),
            engine: engine.clone(),
            device_id: s.device_id,
        });
        let server = GrpcServer::start("127.0.0.1:0", dp).map_err(|source| ProgramError::Grpc {
            switch: s.name.clone(),
            source,
        })?;
        served.push((s, core, numbered, server));
    }
    ctl_all(
        lab,
        served
            .iter()
            .map(|(s, _, _, server)| {
                let args = vec![
                    "load".into(),
                    "--config".into(),
                    dir.join(&s.config_db).display().to_string(),
                    "--switch".into(),
                    server.addr().to_string(),
                    "--pipeline".into(),
                    lab.pipeline.display().to_string(),
                    "--device-id".into(),
                    s.device_id.to_string(),
                    "--read-back".into(),
                    "--no-progress".into(),
                ];
                (s.name.clone(), args)
            })
            .collect(),
    )?;
    let mut out = Vec::new();
    for (s, core, ports, server) in served {
        // Stopping the server drops its hold on the switch.
        drop(server);
        let core = Arc::try_unwrap(core)
            .map_err(|_| ProgramError::Switch {
                switch: s.name.clone(),
                message: "the P4Runtime server still holds the switch after stopping".into(),
            })?
            .into_inner()
            .unwrap_or_else(|p| p.into_inner());
        if core.switch.is_none() {
            return Err(ProgramError::Switch {
                switch: s.name.clone(),
                message: "lossless-ctl load left no pipeline".into(),
            });
        }
        out.push(Programmed {
            name: s.name.clone(),
            core,
            ports,
        });
    }
    Ok(out)
}
