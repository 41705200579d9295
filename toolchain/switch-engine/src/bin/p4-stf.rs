//! `p4-stf PROG.json|PROG.p4 TEST.stf`: runs a p4c STF test against the in-process engine,
//! printing one PASS/FAIL line per expectation and `N passed, N failed`. Exit status 0 iff all
//! pass, 1 if an expectation failed, 2 if the test could not run. A `.p4` program is compiled
//! first with `$P4C` (default `p4-compile`), called as p4c is: `$P4C --target bmv2 --arch
//! v1model -o DIR PROG.p4`, which writes `DIR/PROG.json`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use switch_engine::{StfSwitch, Switch, SwitchConfig};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [prog, test] = args.as_slice() else {
        eprintln!("usage: p4-stf PROG.json TEST.stf");
        return ExitCode::from(2);
    };
    let json_path = if prog.ends_with(".p4") {
        match compile(Path::new(prog)) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("p4-stf: {prog}: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        PathBuf::from(prog)
    };
    let text = match std::fs::read_to_string(&json_path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("p4-stf: {prog}: {e}");
            return ExitCode::from(2);
        }
    };
    let switch = match Switch::from_json(&text, SwitchConfig::default()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("p4-stf: {prog}: {e}");
            return ExitCode::from(2);
        }
    };
    let mut target = StfSwitch::new(switch);
    match p4_stf::run_stf(&mut target, std::path::Path::new(test)) {
        Ok(report) => {
            print!("{report}");
            if report.success() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("p4-stf: {e}");
            ExitCode::from(2)
        }
    }
}

fn compile(p4: &Path) -> Result<PathBuf, String> {
    let compiler = std::env::var("P4C").unwrap_or_else(|_| "p4-compile".to_string());
    let stem = p4
        .file_stem()
        .ok_or("not a file name")?
        .to_string_lossy()
        .to_string();
    let dir = std::env::temp_dir().join(format!("p4-stf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let status = Command::new(&compiler)
        .args(["--target", "bmv2", "--arch", "v1model", "-o"])
        .arg(&dir)
        .arg(p4)
        .status()
        .map_err(|e| format!("cannot run {compiler} (set P4C): {e}"))?;
    if !status.success() {
        return Err(format!("{compiler} failed ({status})"));
    }
    let json = dir.join(format!("{stem}.json"));
    if !json.exists() {
        return Err(format!("{compiler} wrote no {}", json.display()));
    }
    Ok(json)
}
