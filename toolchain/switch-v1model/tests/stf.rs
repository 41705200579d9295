//! Runs every `tests/stf/NAME.stf` against `tests/stf/NAME.json` (a hand-written BMv2 JSON
//! program; several STF files may share one program as `NAME.json` + `NAME-case.stf`).

use std::path::{Path, PathBuf};
use switch_v1model::{StfSwitch, Switch, SwitchConfig};

fn program_for(stf: &Path) -> PathBuf {
    let stem = stf.file_stem().unwrap().to_string_lossy().to_string();
    let base = stem.split('-').next().unwrap().to_string();
    stf.with_file_name(format!("{base}.json"))
}

#[test]
fn stf_files_pass() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/stf");
    let mut stfs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "stf"))
        .collect();
    stfs.sort();
    assert!(
        stfs.len() >= 5,
        "expected the STF suite, found {}",
        stfs.len()
    );
    let mut failures = Vec::new();
    for stf in &stfs {
        let json = program_for(stf);
        let text = std::fs::read_to_string(&json).unwrap();
        let switch = Switch::from_json(&text, SwitchConfig::default())
            .unwrap_or_else(|e| panic!("{}: {e}", json.display()));
        let mut target = StfSwitch::new(switch);
        let report = p4_stf::run_stf(&mut target, stf).unwrap();
        println!("{report}");
        if !report.success() || report.passed() == 0 {
            failures.push(stf.display().to_string());
        }
    }
    assert!(failures.is_empty(), "failing STF files: {failures:?}");
}
