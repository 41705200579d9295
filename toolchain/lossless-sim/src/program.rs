//! Before virtual time starts: the fabric and config_db.json files from the lab's Python code
//! (`lossless_topo.simcase`), every switch's traffic manager from `lossless-ctl port-config`, and
//! every switch's pipeline and tables from `lossless-ctl load --read-back` over P4Runtime, each
//! switch served on its own loopback port by p4-switch's gRPC server, exactly as in the lab.

use crate::fabric::{Fabric, SwitchSpec};
use crate::net::{Sim, SimPort};
use crate::results::Reprogrammed;
use p4_switch::core::{Core, CpuSink};
use p4_switch::grpc::GrpcServer;
use p4_switch::pktgen::parse_port_config;
use p4runtime_server::{Dataplane, EngineJob};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
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

    /// The lab's Python with its control/ and topo/ packages importable.
    pub(crate) fn python(&self) -> Command {
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

/// Runs one of the lab's tools to its end; its output, or its error with what it printed.
pub(crate) fn run(what: String, lab: &Lab, cmd: &mut Command) -> Result<Output, ProgramError> {
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

/// How long one lossless-ctl call may take (the lab's runner allows as long).
const CTL_TIMEOUT: Duration = Duration::from_secs(180);

/// Runs one `lossless-ctl` per switch, all at once (as the lab does), and collects failures;
/// returns each call's standard output, in the calls' order.
fn ctl_all(lab: &Lab, calls: Vec<(String, Vec<String>)>) -> Result<Vec<String>, ProgramError> {
    let mut children = Vec::new();
    for (sw, args) in calls {
        let what = format!("switch {sw}: lossless-ctl {}", args.join(" "));
        let child = lab
            .python()
            .args(["-m", "lossless_ctl.cli"])
            .args(&args)
            // A call that hangs is stopped with SIGABRT, on which Python prints every thread's
            // stack: the hang seen under load (README, Missing) then shows where it waits.
            .env("PYTHONFAULTHANDLER", "1")
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
    let mut outputs = Vec::new();
    let deadline = Instant::now() + CTL_TIMEOUT;
    for (what, mut child) in children {
        // Both pipes drained aside, so that a child blocked writing never stalls the wait.
        let drain = |pipe: Option<Box<dyn Read + Send>>| {
            std::thread::spawn(move || {
                let mut text = Vec::new();
                if let Some(mut p) = pipe {
                    let _ = p.read_to_end(&mut text);
                }
                String::from_utf8_lossy(&text).into_owned()
            })
        };
        let out = drain(
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let err = drain(
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let status = match wait_until(&mut child, deadline) {
            Ok(Some(status)) => Ok(status),
            Ok(None) => {
                abort_with_stacks(&mut child);
                Err(format!("did not finish in {} s", CTL_TIMEOUT.as_secs()))
            }
            Err(e) => Err(e.to_string()),
        };
        let (out, err) = (
            out.join().unwrap_or_default(),
            err.join().unwrap_or_default(),
        );
        match status {
            Ok(s) if s.success() => outputs.push(out),
            Ok(_) => failed.push(format!("{what}:\n{out}{err}")),
            Err(e) => failed.push(format!("{what}: {e}:\n{out}{err}")),
        }
    }
    if failed.is_empty() {
        Ok(outputs)
    } else {
        Err(ProgramError::Tool {
            what: "programming".into(),
            output: failed.join("\n"),
        })
    }
}

/// Stops a hung lossless-ctl: SIGABRT first, so that its faulthandler writes the threads'
/// stacks to the stderr we collect, then SIGKILL if it has not gone within two seconds.
fn abort_with_stacks(child: &mut std::process::Child) {
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: kill(2) on our own child's pid, which we have not reaped yet.
        unsafe { libc::kill(pid, libc::SIGABRT) };
        if let Ok(Some(_)) = wait_until(child, Instant::now() + Duration::from_secs(2)) {
            return;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// `child`'s exit status, polled until `deadline`; None if it is still running then.
fn wait_until(
    child: &mut std::process::Child,
    deadline: Instant,
) -> std::io::Result<Option<std::process::ExitStatus>> {
    loop {
        match child.try_wait()? {
            Some(status) => return Ok(Some(status)),
            None if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            None => return Ok(None),
        }
    }
}

/// A switch's core where its P4Runtime server reaches it: in the slot while virtual time
/// stands still and the controller programs it, in the simulation while time runs.
#[derive(Default)]
struct Slot {
    core: Option<Core>,
    /// Where virtual time stands.
    now_ns: u64,
    /// The server's PacketIn sink, kept so that a core built anew for a later case
    /// ([`reprogram`]) gets it too: the server installs it once, when it starts.
    cpu_sink: Option<Arc<CpuSink>>,
}

/// A sink for one core that passes its PacketIns to the server's.
fn forward(sink: &Arc<CpuSink>) -> CpuSink {
    let sink = sink.clone();
    Box::new(move |frame| sink(frame))
}

/// A simulated switch as its P4Runtime server sees it.
struct Stopped {
    slot: Arc<Mutex<Slot>>,
    engine: SwitchConfig,
    device_id: u64,
}

fn lock(slot: &Mutex<Slot>) -> std::sync::MutexGuard<'_, Slot> {
    slot.lock().unwrap_or_else(|p| p.into_inner())
}

impl Dataplane for Stopped {
    /// Without the core (virtual time running) the job is dropped and its request fails: only
    /// the simulator's own lossless-ctl calls reach the server, while the core is in.
    fn exec(&self, f: EngineJob) {
        if let Some(core) = &mut lock(&self.slot).core {
            f(&mut core.switch);
        }
    }
    fn set_cpu_sink(&self, sink: CpuSink) {
        let sink = Arc::new(sink);
        let mut slot = lock(&self.slot);
        if let Some(core) = &mut slot.core {
            core.set_cpu_sink(forward(&sink));
        }
        slot.cpu_sink = Some(sink);
    }
    /// A PacketOut enters now; what it produces leaves when virtual time goes on.
    fn inject_cpu(&self, frame: Vec<u8>) {
        let mut slot = lock(&self.slot);
        let now = slot.now_ns;
        if let Some(core) = &mut slot.core {
            core.receive(now, CPU_PORT, &frame);
        }
    }
    fn engine_config(&self) -> SwitchConfig {
        self.engine.clone()
    }
    fn device_id(&self) -> u64 {
        self.device_id
    }
}

/// Every switch's P4Runtime server on 127.0.0.1, one port each, kept for the whole run as the
/// lab's switches keep theirs: a reconciling load between cases finds the pipeline and the
/// entries the server holds.
pub struct Servers {
    served: Vec<(Arc<Mutex<Slot>>, GrpcServer)>,
}

impl Servers {
    /// Gives `core` the PacketIn sink of the `i`th switch's server.
    fn install_sink(&self, i: usize, core: &mut Core) {
        let sink = self
            .served
            .get(i)
            .and_then(|(slot, _)| lock(slot).cpu_sink.clone());
        if let Some(sink) = sink {
            core.set_cpu_sink(forward(&sink));
        }
    }

    /// Starts the servers with the cores in (a server installs its CPU sink on its core).
    fn start(fabric: &Fabric, cores: Vec<Core>) -> Result<Servers, ProgramError> {
        let mut served = Vec::new();
        for (s, core) in fabric.switches.iter().zip(cores) {
            let slot = Arc::new(Mutex::new(Slot {
                core: Some(core),
                now_ns: 0,
                cpu_sink: None,
            }));
            let dp = Arc::new(Stopped {
                slot: slot.clone(),
                engine: engine_config(),
                device_id: s.device_id,
            });
            let server =
                GrpcServer::start("127.0.0.1:0", dp).map_err(|source| ProgramError::Grpc {
                    switch: s.name.clone(),
                    source,
                })?;
            served.push((slot, server));
        }
        Ok(Servers { served })
    }

    /// Runs `lossless-ctl load ...` with `extra(switch)`'s arguments against every switch of
    /// `fabric` (the servers' order), all at once, while virtual time stands at `now_ns`;
    /// `cores` (none: those the servers hold) go in for it and come back out with each
    /// call's output.
    fn load(
        &self,
        lab: &Lab,
        fabric: &Fabric,
        dir: &Path,
        cores: Vec<Core>,
        now_ns: u64,
        extra: &dyn Fn(&SwitchSpec) -> Vec<String>,
    ) -> Result<(Vec<Core>, Vec<String>), ProgramError> {
        let mut cores = cores.into_iter();
        for (slot, _) in &self.served {
            let mut slot = lock(slot);
            slot.now_ns = now_ns;
            if let Some(core) = cores.next() {
                slot.core = Some(core);
            }
        }
        let outputs = ctl_all(
            lab,
            fabric
                .switches
                .iter()
                .zip(&self.served)
                .map(|(s, (_, server))| {
                    let mut args: Vec<String> = vec![
                        "load".into(),
                        "--config".into(),
                        dir.join(&s.config_db).display().to_string(),
                        "--switch".into(),
                        server.addr().to_string(),
                        "--pipeline".into(),
                        lab.pipeline.display().to_string(),
                        "--device-id".into(),
                        s.device_id.to_string(),
                        "--no-progress".into(),
                    ];
                    args.extend(extra(s));
                    (s.name.clone(), args)
                })
                .collect(),
        );
        // The cores come out whether or not the controller succeeded.
        let mut back = Vec::new();
        for ((slot, _), s) in self.served.iter().zip(&fabric.switches) {
            back.push(lock(slot).core.take().ok_or_else(|| ProgramError::Switch {
                switch: s.name.clone(),
                message: "its core was not with its P4Runtime server".into(),
            })?);
        }
        Ok((back, outputs?))
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
/// The servers stay up for [`reprogram`].
pub fn program(
    lab: &Lab,
    fabric: &Fabric,
    dir: &Path,
) -> Result<(Vec<Programmed>, Servers), ProgramError> {
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
                    ports_json(dir, &s.name).display().to_string(),
                ];
                (s.name.clone(), args)
            })
            .collect(),
    )?;
    let engine = engine_config();
    let (mut cores, mut numbered_ports) = (Vec::new(), Vec::new());
    for s in &fabric.switches {
        let path = ports_json(dir, &s.name);
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
        cores.push(core);
        numbered_ports.push(numbered);
    }
    let servers = Servers::start(fabric, cores)?;
    let (cores, _) = servers.load(lab, fabric, dir, Vec::new(), 0, &|_| {
        vec!["--read-back".into()]
    })?;
    let mut out = Vec::new();
    for ((s, core), ports) in fabric.switches.iter().zip(cores).zip(numbered_ports) {
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
    Ok((out, servers))
}

fn engine_config() -> SwitchConfig {
    SwitchConfig {
        cpu_port: Some(CPU_PORT),
        priority_queues: PRIORITY_QUEUES,
        ..SwitchConfig::default()
    }
}

/// Reprograms the running switches of `sim` for another case, as the lab's runner does between
/// cases (`Lab.load`): `lossless-ctl load --reconcile --port-config` per switch (here with
/// `--read-back`, which proves the state) at `sim`'s time. Then, where the lab's switch keeps
/// running and only takes each port's new configuration (`PUT /ports/N`), each switch gets a
/// new traffic manager from the case's ports.json (shared buffer, queues, schedulers,
/// watchdog and packet generator from now) around the reprogrammed pipeline, whose registers
/// are reset: nothing of the case before carries into this one. `dir` holds the case's
/// config_db.json files ([`prepare`]).
pub fn reprogram(
    lab: &Lab,
    servers: &Servers,
    fabric: &Fabric,
    dir: &Path,
    sim: &mut Sim,
) -> Result<Vec<Reprogrammed>, ProgramError> {
    let now = sim.now_ns();
    let mut cores = Vec::new();
    for s in &fabric.switches {
        let sw = sim
            .switch_index(&s.name)
            .ok_or_else(|| ProgramError::Switch {
                switch: s.name.clone(),
                message: "not in the simulation".into(),
            })?;
        let placeholder =
            Core::new(None, None, BTreeMap::new(), engine_config(), now).map_err(|e| {
                ProgramError::Switch {
                    switch: s.name.clone(),
                    message: e.to_string(),
                }
            })?;
        let mut core = std::mem::replace(&mut sim.switches[sw].core, placeholder);
        // The pipeline's registers (lossless.p4's buffer accounting, PFC and SFC state: the
        // SFC epoch and dedup filters) start the case at 0 as on a switch just started, so
        // that nothing of the case before carries into it; the lab's running switch keeps
        // them.
        if let Some(engine) = &mut core.switch {
            for name in engine.register_names() {
                engine
                    .register_reset(&name)
                    .map_err(|e| ProgramError::Switch {
                        switch: s.name.clone(),
                        message: format!("register_reset {name}: {e}"),
                    })?;
            }
        }
        cores.push(core);
    }
    let (cores, outputs) = servers.load(lab, fabric, dir, cores, now, &|s| {
        vec![
            "--reconcile".into(),
            "--read-back".into(),
            "--port-config".into(),
            ports_json(dir, &s.name).display().to_string(),
        ]
    })?;
    let mut report = Vec::new();
    for (i, ((s, mut core), ctl_output)) in
        fabric.switches.iter().zip(cores).zip(outputs).enumerate()
    {
        let path = &ports_json(dir, &s.name);
        let read = |p: &Path| {
            std::fs::read_to_string(p).map_err(|e| ProgramError::PortConfig {
                path: p.to_path_buf(),
                message: e.to_string(),
            })
        };
        let text = read(path)?;
        let (tm, pktgen) =
            parse_port_config(&text, ConfigFormat::Json).map_err(|e| ProgramError::PortConfig {
                path: path.clone(),
                message: e.to_string(),
            })?;
        let (mut tm, pktgen) = (tm, pktgen);
        tm.catch_up_ns = 0;
        let sw = sim.switch_index(&s.name).unwrap_or_default();
        let fresh = |e: &dyn std::fmt::Display| ProgramError::PortConfig {
            path: path.clone(),
            message: e.to_string(),
        };
        // A new traffic manager from the case's ports.json (queues, schedulers' state, shared
        // buffer, watchdog from now) around the reprogrammed pipeline.
        let mut fresh_core = Core::new(
            core.switch.take(),
            Some(tm),
            sim.switches[sw].port_map(),
            engine_config(),
            now,
        )
        .map_err(|e| fresh(&e))?;
        fresh_core.defer_transmit();
        fresh_core.set_pktgen(now, pktgen).map_err(|e| fresh(&e))?;
        // The server installed its PacketIn sink on the switch's first core only.
        servers.install_sink(i, &mut fresh_core);
        sim.switches[sw].core = fresh_core;
        let log = format!("{}.reprogram.log", s.name);
        std::fs::write(dir.join(&log), &ctl_output).map_err(|e| ProgramError::PortConfig {
            path: dir.join(&log),
            message: e.to_string(),
        })?;
        report.push(Reprogrammed {
            switch: s.name.clone(),
            pipeline_kept: ctl_output.contains(PIPELINE_KEPT),
            read_back_exact: ctl_output.contains(READ_BACK_EXACT),
            log,
        });
    }
    Ok(report)
}

/// lossless-ctl's lines for a pipeline it did not set again, and for a read-back that matched.
const PIPELINE_KEPT: &str = "pipeline kept: the switch runs this pipeline already";
const READ_BACK_EXACT: &str = "read-back: the switch holds exactly what the config describes";

fn ports_json(dir: &Path, switch: &str) -> PathBuf {
    dir.join(format!("{switch}.ports.json"))
}
