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
    // The pipeline we ship must pass the same checks.
    let files = good_programs();
    assert!(files.len() > 1);
    let mut failures = Vec::new();
    for f in &files {
        let (ok, stderr) = compile(f.parent().unwrap(), f, &["--check-only"]);
        if !ok || !stderr.is_empty() {
            failures.push(format!("{}:\n{stderr}", f.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn good_programs() -> Vec<PathBuf> {
    let mut files = p4_files(&tests_dir().join("good"));
    files.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../p4src/lossless.p4"));
    files
}

/// `--dump-ir` prints the checked program as P4; checking that text again must print the same
/// text (names, folded constants, inferred types and implicit casts all survive).
#[test]
fn dumped_ir_is_p4_that_checks_to_itself() {
    let tmp = std::env::temp_dir().join(format!("p4-sema-dump-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let mut failures = Vec::new();
    for f in good_programs() {
        let dump = |dir: &Path, file: &Path| {
            Command::new(env!("CARGO_BIN_EXE_p4-compile"))
                .current_dir(dir)
                .args(["--target", "bmv2", "--arch", "v1model", "--dump-ir"])
                .arg(file)
                .output()
                .expect("run p4-compile")
        };
        let first = dump(f.parent().unwrap(), &f);
        assert!(
            first.status.success(),
            "{}",
            String::from_utf8_lossy(&first.stderr)
        );
        let copy = tmp.join("dump.p4");
        std::fs::write(&copy, &first.stdout).unwrap();
        let second = dump(&tmp, &copy);
        if !second.status.success() || second.stdout != first.stdout {
            failures.push(format!(
                "{}:\n{}",
                f.display(),
                String::from_utf8_lossy(&second.stderr)
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
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

fn p4_compile(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_p4-compile"))
        .current_dir(dir)
        .args(["--target", "bmv2", "--arch", "v1model"])
        .args(args)
        .output()
        .expect("run p4-compile")
}

fn short_circuit_program() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/stf/parser_short_circuit.p4")
}

fn ctor_args_program() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/stf/ctor_args.p4")
}

fn control_short_circuit_program() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/stf/short_circuit.p4")
}

/// The pass names in the order the driver runs them, from `--list-passes`.
fn pass_names() -> Vec<String> {
    let out = p4_compile(&tests_dir(), &["--list-passes"]);
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split_whitespace().next().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn list_passes_names_the_pipeline_in_order() {
    assert_eq!(
        pass_names(),
        [
            "parse",
            "check",
            "local-headers",
            "control-locals",
            "subparser-inline",
            "side-effects",
            "parser-side-effects",
            "parser-inline",
            "parser-fold",
            "parser-unroll",
            "inline",
            "table-actions",
            "control-inline",
            "union-stack-index",
            "bmv2"
        ]
    );
}

/// `--dump-after PASS` prints P4 after every pass that works on the typed IR, and that P4 parses
/// and checks again; the passes with no P4 program after them (parse, bmv2) and unknown names
/// are refused with a message.
#[test]
fn dump_after_each_pass_is_p4_that_checks_again() {
    let tmp = std::env::temp_dir().join(format!("p4-dump-after-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let mut programs = good_programs();
    programs.push(short_circuit_program());
    programs.push(control_short_circuit_program());
    programs.push(ctor_args_program());
    let mut failures = Vec::new();
    for pass in pass_names() {
        for f in &programs {
            let out = p4_compile(
                f.parent().unwrap(),
                &["--dump-after", &pass, f.to_str().unwrap()],
            );
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            if pass == "parse" || pass == "bmv2" {
                assert!(!out.status.success());
                assert!(
                    stderr.contains("not a pass after which the program is P4"),
                    "{stderr}"
                );
                continue;
            }
            assert!(
                out.status.success(),
                "{} after {pass}: {stderr}",
                f.display()
            );
            let copy = tmp.join("dump.p4");
            std::fs::write(&copy, &out.stdout).unwrap();
            let again = p4_compile(&tmp, &["--check-only", "dump.p4"]);
            if !again.status.success() {
                failures.push(format!(
                    "{} after {pass}:\n{}",
                    f.display(),
                    String::from_utf8_lossy(&again.stderr)
                ));
            }
        }
    }
    let out = p4_compile(&tests_dir(), &["--dump-after", "nosuch", "x.p4"]);
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: --dump-after nosuch: not a pass after which the program is P4 (see --list-passes)\n"
    );
    let _ = std::fs::remove_dir_all(&tmp);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// What the parser passes leave for the lowering: after `parser-side-effects` the call on the
/// right of `&&` runs under an `if` on the left operand; after `parser-inline` no function is
/// called from the parser any more. `side-effects` does the same in actions and apply blocks.
#[test]
fn parser_passes_hoist_then_inline_the_calls() {
    let f = short_circuit_program();
    let dump = |pass: &str| {
        let out = p4_compile(
            f.parent().unwrap(),
            &["--dump-after", pass, f.to_str().unwrap()],
        );
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let start = text.find("parser P(").expect("parser P");
        text[start..]
            .split("\ncontrol ")
            .next()
            .unwrap()
            .to_string()
    };
    let checked = dump("check");
    assert!(
        checked.contains("bool r1 = ((hdr.h.a == 8w1) && count(n, hdr.h.b));"),
        "{checked}"
    );
    let hoisted = dump("parser-side-effects");
    assert!(hoisted.contains("bool tmp = (hdr.h.a == 8w1);\n        if (tmp) {\n            tmp = count(n, hdr.h.b);"), "{hoisted}");
    assert!(hoisted.contains("if (!(tmp_0)) {"), "{hoisted}");
    let inlined = dump("parser-inline");
    assert!(!inlined.contains("count("), "{inlined}");
    assert!(inlined.contains("if (!(returned)) {"), "{inlined}");
    // `count(k, 1)`: the constant argument is used in place and `if (1 == 0)` folds away.
    assert!(inlined.contains("if ((8w1 == 8w0)) {"), "{inlined}");
    let folded = dump("parser-fold");
    assert!(!folded.contains("(8w1 == 8w0)"), "{folded}");
    assert_eq!(
        folded.matches("if ((v_").count(),
        inlined.matches("if ((v_").count(),
        "only the constant test is gone"
    );
    let f = control_short_circuit_program();
    let out = p4_compile(
        f.parent().unwrap(),
        &["--dump-after", "side-effects", f.to_str().unwrap()],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("bool tmp = (hdr.h.a == 8w1);\n        if (tmp) {\n            tmp = count(n, hdr.h.b);"),
        "{text}"
    );
    assert!(
        text.contains("if (!(tmp_0)) {\n            tmp_0 = count(n2, hdr.h.b);"),
        "{text}"
    );
}

/// `control-inline` leaves no apply of a control: each apply site has its own copies of the
/// callee's table and action under the hierarchical control-plane name, the constructor
/// argument in place of its parameter, and the argument copied in and out.
#[test]
fn control_inline_copies_the_callee_per_apply() {
    let f = ctor_args_program();
    let out = p4_compile(
        f.parent().unwrap(),
        &["--dump-after", "control-inline", f.to_str().unwrap()],
    );
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let start = text.find("control I(").expect("control I");
    let ingress = text[start..].split("\ncontrol ").next().unwrap();
    assert!(!ingress.contains(".apply(hdr"), "{ingress}");
    assert!(!ingress.contains("Add("), "{ingress}");
    for name in ["add1.t", "add1.add", "add16.t", "add16.add"] {
        assert!(
            ingress.contains(&format!("@name(\"{name}\")")),
            "{name}: {ingress}"
        );
    }
    assert!(ingress.contains("+ 8w16"), "{ingress}");
    assert!(ingress.contains("hdr.h.b = "), "copy-out: {ingress}");
}
