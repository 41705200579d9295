//! `lossless-sim sweep` end to end: a 4-point sweep (seed 001's prio-2to1, quick, at 25G and
//! 100G, both ECN cases) run here with -j 2 (its 100G ecn=off point the same as a plain run
//! of the topology), then emitted as a Slurm job array and run by a
//! single-node Slurm cluster made from Debian's munge, slurmctld and slurmd (started and
//! stopped here, with their own slurm.conf and munge key in a scratch directory); `collect`
//! must turn the cluster's points into the very sweep.csv the local run wrote.
//!
//! Needs what `make test` provides: root, the venv, build/bin/p4-compile and `make deps`'s
//! munge, slurmctld, slurmd and slurm-client.

use std::io::Read;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

mod common;
use common::{pipeline, root, run_ok};

const SWEEP: &str = r#"{
  "topology": "prio-2to1",
  "quick": true,
  "set": {"experiment.lat_iters": 200},
  "grid": {"links.rate_mbps": [25000, 100000]}
}
"#;
/// How long the cluster may take for the four points (each a few seconds).
const SLURM_TIMEOUT: Duration = Duration::from_secs(300);

fn sim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_lossless-sim"))
}

fn ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn sweep(file: &Path, out: &Path, extra: &[&str]) -> String {
    ok(sim()
        .arg("sweep")
        .arg(file)
        .args(extra)
        .arg("--out")
        .arg(out)
        .arg("--lab")
        .arg(root())
        .arg("--pipeline")
        .arg(pipeline()))
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// munged, slurmctld and slurmd on this machine, stopped (by their pid files) when dropped.
struct Cluster {
    dir: PathBuf,
    conf: PathBuf,
    pid_files: Vec<PathBuf>,
}

impl Cluster {
    fn start(dir: &Path) -> Cluster {
        assert_eq!(
            unsafe { libc::geteuid() },
            0,
            "the Slurm test runs slurmd as root (as make test does)"
        );
        for tool in [
            "/usr/sbin/munged",
            "/usr/sbin/slurmctld",
            "/usr/sbin/slurmd",
        ] {
            assert!(
                Path::new(tool).exists(),
                "{tool} missing: `make deps` installs munge, slurmctld, slurmd and slurm-client"
            );
        }
        let _ = std::fs::remove_dir_all(dir);
        let munge = dir.join("munge");
        for d in ["munge", "state", "spool", "log"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(&munge, std::fs::Permissions::from_mode(0o700)).unwrap();
        let key = munge.join("munge.key");
        let mut random = [0u8; 1024];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut random))
            .expect("/dev/urandom");
        std::fs::write(&key, random).unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o400)).unwrap();
        let socket = munge.join("munge.socket");
        let mut cluster = Cluster {
            dir: dir.into(),
            conf: dir.join("slurm.conf"),
            pid_files: Vec::new(),
        };
        let munge_pid = munge.join("munged.pid");
        ok(Command::new("/usr/sbin/munged")
            .arg("--force")
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--key-file={}", key.display()))
            .arg(format!("--pid-file={}", munge_pid.display()))
            .arg(format!("--log-file={}", munge.join("munged.log").display()))
            .arg(format!(
                "--seed-file={}",
                munge.join("munged.seed").display()
            )));
        cluster.pid_files.push(munge_pid);
        let host = ok(Command::new("hostname").arg("-s")).trim().to_string();
        let d = dir.display();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        // proctrack/linuxproc and task/none: no cgroups, which this container does not give.
        let conf = format!(
            "ClusterName=losslesssweep\n\
             SlurmctldHost={host}(127.0.0.1)\n\
             SlurmctldPort={ctld}\n\
             SlurmdPort={slurmd}\n\
             SlurmUser=root\n\
             SlurmdUser=root\n\
             AuthType=auth/munge\n\
             CredType=cred/munge\n\
             AuthInfo=socket={socket}\n\
             StateSaveLocation={d}/state\n\
             SlurmdSpoolDir={d}/spool\n\
             SlurmctldPidFile={d}/slurmctld.pid\n\
             SlurmdPidFile={d}/slurmd.pid\n\
             SlurmctldLogFile={d}/log/slurmctld.log\n\
             SlurmdLogFile={d}/log/slurmd.log\n\
             ProctrackType=proctrack/linuxproc\n\
             TaskPlugin=task/none\n\
             JobAcctGatherType=jobacct_gather/none\n\
             AccountingStorageType=accounting_storage/none\n\
             SchedulerType=sched/builtin\n\
             SelectType=select/cons_tres\n\
             SelectTypeParameters=CR_CPU\n\
             MpiDefault=none\n\
             ReturnToService=2\n\
             NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN\n\
             PartitionName=sweep Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n",
            ctld = free_port(),
            slurmd = free_port(),
            socket = socket.display(),
        );
        std::fs::write(&cluster.conf, conf).unwrap();
        ok(cluster.cmd("/usr/sbin/slurmctld").arg("-i"));
        cluster.pid_files.push(dir.join("slurmctld.pid"));
        ok(&mut cluster.cmd("/usr/sbin/slurmd"));
        cluster.pid_files.push(dir.join("slurmd.pid"));
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let state = cluster.cmd("sinfo").args(["-h", "-o", "%t"]).output();
            if state.is_ok_and(|s| String::from_utf8_lossy(&s.stdout).trim() == "idle") {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the node did not come up: {}",
                cluster.logs()
            );
            std::thread::sleep(Duration::from_millis(500));
        }
        cluster
    }

    fn cmd(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("SLURM_CONF", &self.conf);
        c
    }

    fn logs(&self) -> String {
        ["slurmctld.log", "slurmd.log"]
            .iter()
            .map(|f| {
                let text =
                    std::fs::read_to_string(self.dir.join("log").join(f)).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(20).collect();
                format!(
                    "{f}:\n{}",
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Submits `script`, waits for every task of its array to leave the queue.
    fn run_array(&self, script: &Path) -> String {
        let id = ok(self.cmd("sbatch").arg("--parsable").arg(script))
            .trim()
            .to_string();
        let deadline = Instant::now() + SLURM_TIMEOUT;
        loop {
            let queued = ok(self.cmd("squeue").args(["-h", "-j", &id]));
            if queued.trim().is_empty() {
                return id;
            }
            if Instant::now() > deadline {
                let _ = self.cmd("scancel").arg(&id).status();
                panic!(
                    "job {id} still queued after {SLURM_TIMEOUT:?}:\n{queued}\n{}",
                    self.logs()
                );
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // slurmd, slurmctld, then munged: the reverse of their start.
        for f in self.pid_files.iter().rev() {
            let Some(pid) = std::fs::read_to_string(f)
                .ok()
                .and_then(|p| p.trim().parse::<i32>().ok())
            else {
                continue;
            };
            unsafe { libc::kill(pid, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(10);
            while unsafe { libc::kill(pid, 0) } == 0 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

#[test]
fn a_slurm_array_gives_the_local_sweeps_csv_byte_for_byte() {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("lossless-sim-sweep-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let file = tmp.join("prio.json");
    std::fs::write(&file, SWEEP).unwrap();

    let local = tmp.join("local");
    sweep(&file, &local, &["-j", "2"]);
    let csv = std::fs::read_to_string(local.join("sweep.csv")).expect("sweep.csv");
    let lines: Vec<&str> = csv.lines().collect();
    // 2 rates x 2 ECN cases, each with seed 001's three rows.
    assert_eq!(lines.len(), 1 + 12, "{csv}");
    assert!(lines[0].starts_with("point,links.rate_mbps,case,measurement,"));
    let col = |name: &str| {
        lines[0]
            .split(',')
            .position(|c| c == name)
            .unwrap_or_else(|| panic!("no {name}: {}", lines[0]))
    };
    let (rate, case, lat) = (
        col("links.rate_mbps"),
        col("measurement"),
        col("lat_t_avg_us_nominal"),
    );
    let row = |r: &str, c: &str| -> f64 {
        let cells = lines
            .iter()
            .map(|l| l.split(',').collect::<Vec<_>>())
            .find(|cells| cells[rate] == r && cells[case] == c)
            .unwrap_or_else(|| panic!("no row {r} {c}: {csv}"));
        cells[lat].parse().unwrap()
    };
    // Each point ran at its own rate: write_lat's frames take 4x as long on a 25G line, and
    // write_bw beside it on its priority costs more at 25G than at 100G.
    assert!(row("25000", "baseline ecn=on") > row("100000", "baseline ecn=on"));
    assert!(
        row("25000", "same ecn=off") - row("25000", "baseline ecn=off")
            > row("100000", "same ecn=off") - row("100000", "baseline ecn=off")
    );
    let config = std::fs::read_to_string(local.join("points/0000/config/s1.config_db.json"))
        .expect("point 0000's config_db.json");
    assert!(config.contains("\"speed\": \"25000\""), "{config}");
    assert!(local.join("plots/sweep_p99_latency_us.png").is_file());
    // The 100G ecn=off point is the topology as it is (quick, the set value is quick's): a
    // plain run of it gives that point's measurements.
    let plain = run_ok(
        "prio-2to1",
        &["--quick", "--case", "ecn=off"],
        &tmp.join("plain"),
    );
    let point: serde_json::Value = serde_json::from_slice(
        &std::fs::read(local.join("points/0003/results.json")).expect("point 0003"),
    )
    .unwrap();
    assert_eq!(point["sim"]["case"], "ecn=off");
    assert_eq!(point["measurements"], plain["measurements"]);

    let cluster = Cluster::start(&tmp.join("cluster"));
    let emitted = tmp.join("slurm");
    sweep(&file, &emitted, &["--emit", "slurm"]);
    let script = emitted.join("sweep.sbatch");
    assert!(std::fs::read_to_string(&script)
        .unwrap()
        .contains("#SBATCH --array=0-3\n"));
    // Nothing ran yet: collect has no points to merge.
    assert!(!sim()
        .arg("collect")
        .arg(&emitted)
        .arg("--lab")
        .arg(root())
        .status()
        .unwrap()
        .success());
    let job = cluster.run_array(&script);
    for i in 0..4 {
        let log = emitted.join(format!("logs/{i}.out"));
        assert!(
            log.is_file(),
            "job {job}: task {i} left no {}",
            log.display()
        );
    }
    ok(sim().arg("collect").arg(&emitted).arg("--lab").arg(root()));
    drop(cluster);
    let from_slurm = std::fs::read_to_string(emitted.join("sweep.csv")).expect("sweep.csv");
    assert_eq!(from_slurm, csv);
    assert!(emitted.join("plots/sweep_p99_latency_us.png").is_file());
}

#[test]
fn bad_sweep_files_fail_at_their_json_path_before_anything_runs() {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("lossless-sim-sweep-bad-{}", std::process::id()));
    let cases: &[(&str, &str)] = &[
        (
            r#"{"topology": "prio-2to1", "grid": {"#,
            "bad.json(1:35): EOF while parsing an object\n",
        ),
        (
            r#"{"topology": "prio-2to1", "gird": {}}"#,
            "bad.json: gird: unknown field (known: topology,",
        ),
        (
            r#"{"topology": "prio-2to1", "grid": {"links.rate_mbps": 25000}}"#,
            r#"bad.json: grid."links.rate_mbps": expected a non-empty array of values"#,
        ),
        (
            r#"{"topology": "prio-2to1", "grid": {"experiment.ecn.nosuch.x": [1]}}"#,
            r#"bad.json: grid."experiment.ecn.nosuch.x"[0]: experiment.ecn.nosuch: no such field"#,
        ),
        (
            r#"{"topology": "prio-2to1", "points": [{"case": 3}]}"#,
            "bad.json: points[0].case: expected a case name",
        ),
        (
            r#"{"topology": "prio-2to1", "grid": {"run.seed": [1]}}"#,
            r#"bad.json: grid."run.seed"[0]: run.seed: not an option of run a sweep sets (known: pipeline_latency_ns,"#,
        ),
        (
            r#"{"topology": "prio-2to1", "set": {"run.pipeline_latency_ns": 0.5}}"#,
            r#"bad.json: set."run.pipeline_latency_ns": --pipeline-latency-ns: expected a non-negative integer"#,
        ),
        (
            r#"{"topology": "prio-2to1", "plot": {"x": "links.rate_mbps"}}"#,
            "bad.json: plot.x: 'links.rate_mbps' is not swept",
        ),
        // What only the lab's code knows, found by it for the point before any point runs.
        (
            r#"{"topology": "prio-2to1", "grid": {"links.rate_gbps": [25]}}"#,
            "links[0].rate_gbps: unknown field",
        ),
        (
            r#"{"topology": "prio-2to1", "grid": {"config_db.WRED_PROFILE|*|green_max": [1]}}"#,
            r#"config_db."WRED_PROFILE|*|green_max": WRED_PROFILE has no field 'green_max'"#,
        ),
        (
            r#"{"topology": "prio-2to1", "cases": ["ecn=maybe"]}"#,
            "--case ecn=maybe: no such case (have: ecn=on, ecn=off)",
        ),
    ];
    for (i, (text, message)) in cases.iter().enumerate() {
        let dir = tmp.join(i.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("bad.json");
        std::fs::write(&file, text).unwrap();
        let out = dir.join("out");
        let got = sim()
            .arg("sweep")
            .arg(&file)
            .arg("--out")
            .arg(&out)
            .arg("--lab")
            .arg(root())
            .arg("--pipeline")
            .arg(pipeline())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&got.stderr);
        assert_eq!(got.status.code(), Some(2), "{text}: {stderr}");
        assert!(stderr.contains(message), "{text}: {stderr}");
        if message.contains("rate_gbps") {
            assert!(stderr.contains("point 0000 (links.rate_gbps=25, case ecn=on)"));
        }
        let ran = std::fs::read_dir(out.join("points"))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|p| p.path().join("run.log").exists())
            .count();
        assert_eq!(ran, 0, "{text}: a point ran");
    }
}

/// `run.pipeline_latency_ns` reaches each point's `run`: with one switch between write_lat's
/// hosts, 1000 ns more pipeline latency is exactly 1.000 us more of its one-way latency alone.
#[test]
fn a_run_option_swept_moves_write_lat_alone_by_exactly_its_step() {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("lossless-sim-sweep-runflag");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let file = tmp.join("runflag.json");
    std::fs::write(
        &file,
        r#"{"topology": "prio-2to1", "quick": true, "cases": ["ecn=on"],
            "grid": {"run.pipeline_latency_ns": [500, 1500]}}"#,
    )
    .unwrap();
    let out = tmp.join("out");
    sweep(&file, &out, &["-j", "2"]);
    let alone = |point: &str| -> f64 {
        let doc: serde_json::Value = serde_json::from_slice(
            &std::fs::read(out.join("points").join(point).join("results.json")).unwrap(),
        )
        .unwrap();
        let m = doc["measurements"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["params"]["name"] == "baseline")
            .unwrap();
        m["values"]["lat_t_avg_us_nominal"].as_f64().unwrap()
    };
    let step = alone("0001") - alone("0000");
    assert!((step - 1.0).abs() < 1e-6, "{step}");
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    assert!(
        csv.starts_with("point,run.pipeline_latency_ns,case,"),
        "{csv}"
    );
}
