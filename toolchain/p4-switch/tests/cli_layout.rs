//! Our runtime-CLI tests in bmv2's CLI test layout (`tests/cli_layout/NAME.in`, `NAME.out`, the
//! program `tests/fixtures/NAME.p4`): the built switch and `simple_switch_CLI`, output compared
//! byte for byte per command as bmv2's `run_one_test.py` compares it.

mod common;
use common::cli_layout::{pieces, run_case};
use common::fixture::compile_fixture;
use std::path::Path;

fn run(name: &str) {
    run_json(name, "", compile_fixture(name));
}

/// Runs case `name` on the program `json` (`tag` keeps temporary directories apart).
fn run_json(name: &str, tag: &str, json_text: String) {
    let dir = std::env::temp_dir().join(format!(
        "p4sw-cli-layout-{}-{name}{tag}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join(format!("{name}.json"));
    std::fs::write(&json, json_text).unwrap();
    let r = run_case(
        Path::new(env!("CARGO_BIN_EXE_p4-switch")),
        Path::new(env!("CARGO_BIN_EXE_simple_switch_CLI")),
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli_layout"),
        name,
        &json,
        &[],
    );
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = r {
        panic!("{e}");
    }
}

/// act_prof_* groups and members, table_indirect_* entries, and every dump of them.
#[test]
fn indirect_tables_and_action_profiles() {
    run("cli_indirect");
}

/// The same commands on the program rewritten in the older JSON layout of bmv2's own CLI test
/// programs: tables list actions by name only, and an indirect table names its action profile
/// (`act_prof_name`) and carries its selector, with no `action_profiles` list.
#[test]
fn indirect_tables_from_older_json() {
    let mut j: serde_json::Value = serde_json::from_str(&compile_fixture("cli_indirect")).unwrap();
    for p in j["pipelines"].as_array_mut().unwrap() {
        let profiles = p
            .as_object_mut()
            .unwrap()
            .remove("action_profiles")
            .unwrap();
        for t in p["tables"].as_array_mut().unwrap() {
            let t = t.as_object_mut().unwrap();
            t.remove("action_ids").unwrap();
            if let Some(name) = t.remove("action_profile") {
                let prof = profiles
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|a| a["name"] == name)
                    .unwrap();
                t.insert("selector".into(), prof["selector"].clone());
                t.insert("act_prof_name".into(), name);
            }
        }
    }
    run_json("cli_indirect", "-older", j.to_string());
}

/// table_add/set_default/modify/delete/dump, counters, meters, registers, multicast, errors.
#[test]
fn direct_tables_externs_and_multicast() {
    run("cli_direct");
}

#[test]
fn outputs_are_cut_as_bmv2_cuts_them() {
    let out = "banner\nRuntimeCmd: a\nRuntimeCmd: RuntimeCmd: b\nc\nRuntimeCmd: \n";
    assert_eq!(pieces(out, "RuntimeCmd: "), ["a\n", "", "b\nc\n"]);
    assert_eq!(pieces("????\nx\n????\n????\n", "????\n"), ["x\n", ""]);
    assert!(pieces("no marker", "????\n").is_empty());
}
