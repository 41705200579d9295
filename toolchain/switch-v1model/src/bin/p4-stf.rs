//! `p4-stf [--priority-queues N] PROG.json|PROG.p4 TEST.stf...`: runs p4c STF tests against the
//! in-process engine, each on a freshly loaded switch, printing one PASS/FAIL line per
//! expectation and `N passed, N failed` per test. Exit status 0 iff every test passes, 1 if an
//! expectation failed, 2 if a test could not run. `--priority-queues` is simple_switch's option
//! (queues per port; `standard_metadata.priority` at or above it drops the packet). A `.p4`
//! program is compiled first with `$P4C` (default: the `p4-compile` next to this binary, else
//! `p4-compile` from PATH), called as p4c is: `$P4C --target bmv2 --arch v1model -o DIR
//! PROG.p4`, which writes `DIR/PROG.json`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use switch_v1model::{StfSwitch, Switch, SwitchConfig};

const USAGE: &str = "usage: p4-stf [--priority-queues N] PROG.json|PROG.p4 TEST.stf...";

struct Args {
    config: SwitchConfig,
    prog: String,
    tests: Vec<String>,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut config = SwitchConfig::default();
    let mut positional = Vec::new();
    while let Some(a) = args.next() {
        if a == "--priority-queues" {
            let n = args.next().ok_or("--priority-queues needs a number")?;
            config.priority_queues = n
                .parse()
                .ok()
                .filter(|&q| (1..=32).contains(&q))
                .ok_or_else(|| format!("--priority-queues {n}: not a number from 1 to 32"))?;
        } else if a.starts_with("--") {
            return Err(format!("unknown option {a}"));
        } else {
            positional.push(a);
        }
    }
    let mut positional = positional.into_iter();
    let prog = positional.next().ok_or("no program given")?;
    let tests: Vec<String> = positional.collect();
    if tests.is_empty() {
        return Err("no STF test given".to_string());
    }
    Ok(Args {
        config,
        prog,
        tests,
    })
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("p4-stf: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let prog = &args.prog;
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
    let mut status = 0u8;
    for test in &args.tests {
        let switch = match Switch::from_json(&text, args.config.clone()) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("p4-stf: {prog}: {e}");
                return ExitCode::from(2);
            }
        };
        let mut target = StfSwitch::new(switch);
        match p4_stf::run_stf(&mut target, Path::new(test)) {
            Ok(report) => {
                print!("{report}");
                if !report.success() {
                    status = status.max(1);
                }
            }
            Err(e) => {
                eprintln!("p4-stf: {e}");
                status = 2;
            }
        }
    }
    ExitCode::from(status)
}

/// `$P4C`, else the `p4-compile` installed beside this binary (`make build` puts both in
/// build/bin, which need not be on PATH), else `p4-compile` from PATH.
fn compiler() -> PathBuf {
    if let Some(c) = std::env::var_os("P4C") {
        return PathBuf::from(c);
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join("p4-compile")))
        .filter(|c| c.is_file())
        .unwrap_or_else(|| PathBuf::from("p4-compile"))
}

fn compile(p4: &Path) -> Result<PathBuf, String> {
    let compiler = compiler();
    let compiler_name = compiler.display();
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
        .map_err(|e| format!("cannot run {compiler_name} (set P4C): {e}"))?;
    if !status.success() {
        return Err(format!("{compiler_name} failed ({status})"));
    }
    let json = dir.join(format!("{stem}.json"));
    if !json.exists() {
        return Err(format!("{compiler_name} wrote no {}", json.display()));
    }
    Ok(json)
}

#[cfg(test)]
mod tests {
    use super::parse_args;

    fn parse(args: &[&str]) -> Result<super::Args, String> {
        parse_args(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn options_and_several_tests() {
        let a = parse(&["--priority-queues", "8", "p.json", "a.stf", "b.stf"]).unwrap();
        assert_eq!(a.config.priority_queues, 8);
        assert_eq!(a.prog, "p.json");
        assert_eq!(a.tests, ["a.stf", "b.stf"]);
        // simple_switch's default: one queue per port.
        assert_eq!(
            parse(&["p.json", "a.stf"]).unwrap().config.priority_queues,
            1
        );
    }

    #[test]
    fn bad_command_lines_say_why() {
        let err = |args: &[&str]| parse(args).err().unwrap();
        assert_eq!(err(&["p.json"]), "no STF test given");
        assert_eq!(err(&[]), "no program given");
        assert_eq!(
            err(&["--verbose", "p.json", "a.stf"]),
            "unknown option --verbose"
        );
        assert_eq!(
            err(&["p.json", "a.stf", "--priority-queues"]),
            "--priority-queues needs a number"
        );
        assert_eq!(
            err(&["--priority-queues", "0", "p.json", "a.stf"]),
            "--priority-queues 0: not a number from 1 to 32"
        );
    }
}
