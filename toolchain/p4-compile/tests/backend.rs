//! The backend end to end: golden BMv2 JSON and P4Info for `tests/compiler/good/*.p4`
//! (`P4_BLESS=1` rewrites them; a program the backend refuses has its expected `unsupported`
//! diagnostics in `NAME.unsupported`), STF tests of compiled programs run in-process through
//! switch-v1model (`tests/stf/*.stf`, and p4c's own test programs in `tests/stf/p4c/`), P4Info
//! against p4c's for programs of its corpus, a program's own extern function, and the shipped
//! pipeline `p4src/lossless.p4`.

use std::path::{Path, PathBuf};
use std::process::Command;
use switch_v1model::{StfSwitch, Switch, SwitchConfig};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    v.sort();
    v
}

/// Compiles into a fresh directory; returns (success, stderr, json path, p4info path).
fn compile(p4: &Path) -> (bool, String, PathBuf, PathBuf) {
    let stem = p4.file_stem().unwrap().to_string_lossy().to_string();
    let out = std::env::temp_dir().join(format!("p4-backend-test-{}-{stem}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let info = out.join(format!("{stem}.p4info.txtpb"));
    let r = Command::new(env!("CARGO_BIN_EXE_p4-compile"))
        .current_dir(p4.parent().unwrap())
        .args(["--target", "bmv2", "--arch", "v1model", "-o"])
        .arg(&out)
        .arg("--p4runtime-files")
        .arg(&info)
        .arg(p4.file_name().unwrap())
        .output()
        .expect("run p4-compile");
    (
        r.status.success(),
        String::from_utf8_lossy(&r.stderr).into_owned(),
        out.join(format!("{stem}.json")),
        info,
    )
}

fn check_golden(path: &Path, got: &str, failures: &mut Vec<String>) {
    if std::env::var_os("P4_BLESS").is_some() {
        std::fs::write(path, got).unwrap();
    }
    let want = std::fs::read_to_string(path).unwrap_or_default();
    if want != got {
        failures.push(format!(
            "{}: differs from the compiler's output (P4_BLESS=1 to regenerate)",
            path.display()
        ));
    }
}

#[test]
fn golden_json_and_p4info() {
    let dir = root().join("tests/compiler/good");
    let mut failures = Vec::new();
    for p4 in files(&dir, "p4") {
        let (ok, stderr, json, info) = compile(&p4);
        if ok {
            let text = std::fs::read_to_string(&json).unwrap();
            // What we emit must load in our engine.
            if let Err(e) = Switch::from_json(&text, SwitchConfig::default()) {
                failures.push(format!("{}: engine refuses the JSON: {e}", p4.display()));
            }
            check_golden(&p4.with_extension("json"), &text, &mut failures);
            let info_text = std::fs::read_to_string(&info).unwrap();
            check_golden(
                &p4.with_extension("p4info.txtpb"),
                &info_text,
                &mut failures,
            );
        } else {
            assert!(
                stderr.contains("unsupported"),
                "{}:\n{stderr}",
                p4.display()
            );
            check_golden(&p4.with_extension("unsupported"), &stderr, &mut failures);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn stf_tests_of_compiled_programs_pass_in_switch_engine() {
    let mut failures = Vec::new();
    // Ours, then p4c's own test programs (`tests/stf/p4c/README.md` says where from).
    let mut stfs = files(&root().join("tests/stf"), "stf");
    let p4c = files(&root().join("tests/stf/p4c"), "stf");
    assert!(!stfs.is_empty() && !p4c.is_empty());
    stfs.extend(p4c);
    for stf in stfs {
        let mut p4 = stf.with_extension("p4");
        if !p4.exists() {
            p4 = root()
                .join("tests/compiler/good")
                .join(p4.file_name().unwrap());
        }
        let (ok, stderr, json, _) = compile(&p4);
        assert!(ok, "{}:\n{stderr}", p4.display());
        let text = std::fs::read_to_string(&json).unwrap();
        let sw = Switch::from_json(&text, SwitchConfig::default())
            .unwrap_or_else(|e| panic!("{}: {e}", json.display()));
        let mut target = StfSwitch::new(sw);
        match p4_stf::run_stf(&mut target, &stf) {
            Ok(report) if report.success() => {}
            Ok(report) => failures.push(format!("{}:\n{report}", stf.display())),
            Err(e) => failures.push(format!("{}: {e}", stf.display())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn lossless_pipeline_compiles_loads_and_has_p4info() {
    let (ok, stderr, json, info) = compile(&root().join("p4src/lossless.p4"));
    assert!(ok, "{stderr}");
    let text = std::fs::read_to_string(json).unwrap();
    Switch::from_json(&text, SwitchConfig::default()).expect("switch-engine loads lossless.json");
    let info = std::fs::read_to_string(info).unwrap();
    assert!(info.contains("tables {"), "{info}");
}

/// P4Info as p4c writes it, between its front end and its midend, for p4c's own test programs
/// (`tests/p4c-corpus`: the programs and p4c's expected P4Info), compared as messages.
#[test]
fn p4info_is_what_p4cs_front_end_leaves_for_the_control_plane() {
    use p4runtime_proto::p4info::P4Info;
    let corpus = root().join("tests/p4c-corpus");
    let cases = [
        // An action only other actions call is inlined into them and gone.
        "nested_if_else",
        // A top-level action the apply block calls is listed (localized), without parameters.
        "global_action_after_exit",
        "predication_issue",
        // Unused actions are gone.
        "xor_test",
        // An extern function called in a control (`mark_to_drop`) makes an empty `type_info`.
        "verify_disjunction",
        "issue1001-bmv2",
        // An `isValid()` key is named after bmv2's `$valid$` field.
        "table-entries-valid-bmv2",
        // A checksum over a list of constants (folded into one constant list) compiles.
        "issue134-bmv2",
        // `const entries = {}`: const, without initial entries.
        "issue2905-bmv2",
        // An action called only in the never-taken branch of `if (true)` is gone.
        "gauntlet_exit_combination_5-bmv2",
        // A table applied only in the dead branch of `false ? ... : ...` is gone, and so are
        // the actions only it uses.
        "gauntlet_exit_combination_21-bmv2",
        // A digest of a list: p4c names its type `digest_0`.
        "issue430-1-bmv2",
        // `@p4runtime_translation(uri, bit<32>)` and `(uri, string)`.
        "issue2283_1-bmv2",
        // Arrays in a header, `bit<8>[16] arr` and `bit<8> arr[16]`, and `x[L +: W]` slices.
        "array1",
        "array2",
        // v1model 20180101 (p4c's default): no `PortId_t`, so the program may declare one;
        // a struct compared with a struct constant.
        "issue1210",
        // A parser loop extracting into `s[index]`, unrolled (`parser-unroll`).
        "parser-unroll-test1",
    ];
    let mut failures = Vec::new();
    for name in cases {
        let (ok, stderr, _, info) = compile(&corpus.join(format!("p4_16_samples/{name}.p4")));
        assert!(ok, "{name}:\n{stderr}");
        let parse = |path: &Path| -> P4Info {
            let text = std::fs::read_to_string(path).unwrap();
            p4runtime_proto::from_text(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        };
        let expected = corpus.join(format!("expected-p4info/{name}.p4info.txtpb"));
        if parse(&info) != parse(&expected) {
            failures.push(format!("{name}: differs from {}", expected.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A program without `main`: refused, as p4c-bm2-ss refuses it (in its midend), but only after
/// the P4Info is written, which for p4c's such programs (`bitwise-and`, `issue407-2`) is empty.
#[test]
fn program_without_main_is_refused_after_an_empty_p4info() {
    use p4runtime_proto::p4info::P4Info;
    let corpus = root().join("tests/p4c-corpus");
    for name in ["bitwise-and", "issue407-2"] {
        let (ok, stderr, json, info) = compile(&corpus.join(format!("p4_16_samples/{name}.p4")));
        assert!(!ok, "{name} compiled");
        assert!(
            stderr.contains("a program without a `main` package instance"),
            "{stderr}"
        );
        assert!(!json.exists(), "{name}: no BMv2 JSON without main");
        let text = std::fs::read_to_string(&info).expect("P4Info written");
        let ours: P4Info = p4runtime_proto::from_text(&text).unwrap();
        let path = corpus.join(format!("expected-p4info/{name}.p4info.txtpb"));
        let expected: P4Info =
            p4runtime_proto::from_text(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(ours, expected, "{name}");
        assert_eq!(ours, P4Info::default(), "{name}");
    }
}

/// A lone header as the V1Switch headers (issue3394): refused, as p4c-bm2-ss refuses it (in
/// its backend), after the P4Info p4c writes is written.
#[test]
fn headers_not_a_struct_is_refused_after_p4info() {
    use p4runtime_proto::p4info::P4Info;
    let corpus = root().join("tests/p4c-corpus");
    let (ok, stderr, json, info) = compile(&corpus.join("p4_16_samples/issue3394.p4"));
    assert!(!ok, "issue3394 compiled");
    assert!(stderr.contains("the headers must be a struct"), "{stderr}");
    assert!(!json.exists(), "no BMv2 JSON");
    let text = std::fs::read_to_string(&info).expect("P4Info written");
    let ours: P4Info = p4runtime_proto::from_text(&text).unwrap();
    let path = corpus.join("expected-p4info/issue3394.p4info.txtpb");
    let expected: P4Info =
        p4runtime_proto::from_text(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(ours, expected);
}

/// A program's own extern function is a bmv2 primitive of its name with one parameter per
/// argument (as p4c emits it, for a target that registers the function); our engine has no
/// implementation and refuses the JSON naming the primitive.
#[test]
fn user_extern_function_is_a_named_primitive() {
    let (ok, stderr, json, _) = compile(&root().join("tests/compiler/extern/user_extern.p4"));
    assert!(ok, "{stderr}");
    let text = std::fs::read_to_string(&json).unwrap();
    let program = p4_bmv2_json::Program::from_json(&text).expect("valid BMv2 JSON");
    let prim = program
        .actions
        .iter()
        .flat_map(|a| &a.primitives)
        .find(|p| p.op == "my_extern")
        .expect("a my_extern primitive");
    use p4_bmv2_json::{FieldRef, Tv};
    let field = |h: &str, f: &str| Tv::Field(FieldRef(h.into(), f.into()));
    assert_eq!(prim.parameters, vec![field("h", "a"), field("h", "b")]);
    let Err(err) = Switch::from_json(&text, SwitchConfig::default()) else {
        panic!("the engine loaded a program calling my_extern");
    };
    assert!(err.to_string().contains("my_extern"), "{err}");
}

/// Value sets inside tuple keysets (`good/value_set_tuple.p4`): each case matches as P4 says,
/// in order, whatever the value sets hold, and a select nothing matches fails with NoMatch.
#[test]
fn value_sets_in_tuple_keysets_match_in_case_order() {
    let (ok, stderr, json, _) = compile(&root().join("tests/compiler/good/value_set_tuple.p4"));
    assert!(ok, "{stderr}");
    let text = std::fs::read_to_string(&json).unwrap();
    let mut sw = Switch::from_json(&text, SwitchConfig::default()).expect("engine loads it");
    sw.parse_vset_add("P.vs", &[0x05]).unwrap();
    sw.parse_vset_add("P.vs", &[0x10]).unwrap();
    sw.parse_vset_add("P.vs2", &[0x07]).unwrap();
    // (a, b, c) -> the tag the parser sets; 0xee: error.NoMatch.
    sw.parse_vset_add("P.pairs", &[0x07, 0x20]).unwrap();
    let cases: [([u8; 3], u8); 13] = [
        ([0x05, 0x01, 0], 1),    // (vs, 1)
        ([0x10, 0x01, 0], 1),    // (vs, 1) before (0x10, _)
        ([0x10, 0x02, 0], 2),    // in vs, not 1: on to (0x10, _)
        ([0x05, 0x07, 0], 3),    // (vs, vs2)
        ([0x05, 0x02, 0], 4),    // in vs, b in neither: default
        ([0x06, 0x07, 0], 4),    // a in no set: default
        ([0x06, 0x01, 0], 4),    // b matches, a in no set
        ([0x20, 0x20, 0x07], 5), // last: (vs2, 0x20)
        ([0x20, 0x21, 0x07], 0xee),
        ([0x20, 0x20, 0x08], 0xee),
        ([0x20, 0x21, 0x08], 0xee),
        ([0x30, 0x20, 0x07], 5), // (c, b) in pairs
        ([0x30, 0x21, 0x07], 4),
    ];
    for (i, (abc, tag)) in cases.iter().enumerate() {
        let mut out = Vec::new();
        let pkt = [abc[0], abc[1], abc[2], 0];
        sw.process(0, &pkt, i as u64, &mut out);
        assert_eq!(out.len(), 1, "{abc:02x?}: {out:?}");
        assert_eq!(
            out[0].data,
            vec![abc[0], abc[1], abc[2], *tag],
            "{abc:02x?}"
        );
    }
}
