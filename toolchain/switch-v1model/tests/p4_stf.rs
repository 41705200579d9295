//! The `p4-stf` binary compiles a `.p4` with the `p4-compile` installed beside it before one on
//! PATH (issue 20: `build/bin/p4-stf x.p4 x.stf` must work without build/bin on PATH), and
//! `$P4C` overrides both. The compilers here are test doubles: one copies `tests/stf/l3.json`
//! to where p4c's command line says, the other fails, so which one ran shows in the result.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

fn stf_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/stf")
}

fn script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `DIR/bin/p4-stf` (a copy of the binary), `DIR/path/p4-compile` (fails), `DIR/l3.p4`; with
/// `beside`, `DIR/bin/p4-compile` (writes l3.json as p4c would); and the guard that holds the
/// file's other tests until the caller is done.
fn setup(name: &str, beside: bool) -> (PathBuf, MutexGuard<'static, ()>) {
    // One test at a time: a test's fork inherits the file another is writing, and exec of that
    // file then fails with ETXTBSY ("Text file busy"; seen under load).
    static ONE: Mutex<()> = Mutex::new(());
    let guard = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!("p4-stf-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    std::fs::create_dir_all(dir.join("path")).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_p4-stf"), dir.join("bin/p4-stf")).unwrap();
    std::fs::write(dir.join("l3.p4"), "").unwrap();
    script(&dir.join("path/p4-compile"), "exit 3");
    if beside {
        let json = stf_dir().join("l3.json");
        script(
            &dir.join("bin/p4-compile"),
            &format!(
                "while [ $# -gt 1 ]; do [ \"$1\" = -o ] && out=$2; shift; done\n\
                 cp '{}' \"$out/$(basename \"$1\" .p4).json\"",
                json.display()
            ),
        );
    }
    (dir, guard)
}

fn run(dir: &Path, p4c: Option<&Path>) -> Output {
    let mut cmd = Command::new(dir.join("bin/p4-stf"));
    cmd.arg(dir.join("l3.p4"))
        .arg(stf_dir().join("l3.stf"))
        .env(
            "PATH",
            format!("{}:/usr/bin:/bin", dir.join("path").display()),
        )
        .env_remove("P4C");
    if let Some(c) = p4c {
        cmd.env("P4C", c);
    }
    cmd.output().unwrap()
}

#[test]
fn the_compiler_beside_the_binary_comes_before_path() {
    let (dir, _one) = setup("beside", true);
    let out = run(&dir, None);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn without_one_beside_it_the_compiler_on_path_runs() {
    let (dir, _one) = setup("path", false);
    let out = run(&dir, None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    // Exit status 3 is the failing double's: found on PATH, by its bare name.
    assert!(
        stderr.contains("p4-compile failed (exit status: 3)"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn p4c_in_the_environment_comes_first() {
    let (dir, _one) = setup("env", true);
    let failing = dir.join("path/p4-compile");
    let out = run(&dir, Some(&failing));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("{} failed (exit status: 3)", failing.display())),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
