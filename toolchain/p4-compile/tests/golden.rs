//! Golden tests over `tests/compiler`: every `good/*.p4` compiles cleanly, every `bad/*.p4`
//! fails with exactly the diagnostics in its `.expected` file. Set `P4_BLESS=1` to rewrite the
//! expected files from the compiler's current output (then review the diff).

use std::path::{Path, PathBuf};
use std::process::Command;

fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/compiler")
}

fn p4_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "p4"))
        .collect();
    v.sort();
    v
}

fn compile(dir: &Path, file: &Path, extra: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_p4-compile"))
        .current_dir(dir)
        .args(["--target", "bmv2", "--arch", "v1model"])
        .args(extra)
        .arg(file.file_name().unwrap())
        .output()
        .expect("run p4-compile");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn good_programs_check_without_diagnostics() {
    let dir = tests_dir().join("good");
    let mut files = p4_files(&dir);
    assert!(!files.is_empty());
    // The pipeline we ship must pass the same checks.
    files.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../p4src/lossless.p4"));
    let mut failures = Vec::new();
    for f in &files {
        let (ok, stderr) = compile(f.parent().unwrap(), f, &["--check-only"]);
        if !ok || !stderr.is_empty() {
            failures.push(format!("{}:\n{stderr}", f.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn bad_programs_report_the_expected_diagnostics() {
    let dir = tests_dir().join("bad");
    let files = p4_files(&dir);
    assert!(!files.is_empty());
    let bless = std::env::var_os("P4_BLESS").is_some();
    let mut failures = Vec::new();
    for f in &files {
        let (ok, stderr) = compile(&dir, f, &[]);
        let expected_path = f.with_extension("expected");
        if bless {
            std::fs::write(&expected_path, &stderr).unwrap();
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if ok {
            failures.push(format!("{}: compiled without error", f.display()));
        } else if stderr != expected {
            failures.push(format!(
                "{}:\n--- expected\n{expected}--- got\n{stderr}",
                f.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn missing_input_and_bad_options_fail_with_a_message() {
    let dir = tests_dir();
    let (ok, stderr) = compile(&dir, Path::new("no-such-file.p4"), &[]);
    assert!(!ok);
    assert_eq!(stderr, "error: no-such-file.p4: no such file\n");
    let out = Command::new(env!("CARGO_BIN_EXE_p4-compile"))
        .args(["--arch", "tna", "x.p4"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unsupported architecture 'tna'"));
}
