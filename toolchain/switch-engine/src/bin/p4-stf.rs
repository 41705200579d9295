//! `p4-stf PROG.json TEST.stf`: runs a p4c STF test against the in-process engine, printing
//! one PASS/FAIL line per expectation and `N passed, N failed`. Exit status 0 iff all pass.

use std::process::ExitCode;
use switch_engine::{StfSwitch, Switch, SwitchConfig};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [prog, test] = args.as_slice() else {
        eprintln!("usage: p4-stf PROG.json TEST.stf");
        return ExitCode::from(2);
    };
    if prog.ends_with(".p4") {
        eprintln!("p4-stf: {prog}: compile it first (p4-compile) and pass the BMv2 JSON");
        return ExitCode::from(2);
    }
    let text = match std::fs::read_to_string(prog) {
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
            println!("{report}");
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
