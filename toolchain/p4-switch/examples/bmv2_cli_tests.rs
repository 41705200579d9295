//! Runs one runtime-CLI test in bmv2's layout against p4-switch, with the arguments of bmv2's
//! `targets/simple_switch/tests/CLI_tests/run_one_test.py`:
//!
//! `bmv2_cli_tests TESTDATA_DIR NAME JSON [CLI args...]` (JSON relative to TESTDATA_DIR)
//!
//! Exit 0 when every command's output matches `NAME.out`, 4 (with the difference on stderr)
//! when one does not, 2 on bad arguments. The switch and CLI binaries are `$P4_SWITCH` and
//! `$P4_SWITCH_CLI`, else `p4-switch` and `simple_switch_CLI` next to this example's directory
//! (`target/release/`).

#[path = "../tests/common/cli_layout.rs"]
mod cli_layout;

use std::path::PathBuf;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, name, json, cli_args @ ..] = args.as_slice() else {
        eprintln!("usage: bmv2_cli_tests TESTDATA_DIR NAME JSON [CLI args...]");
        std::process::exit(2);
    };
    let bin_dir = std::env::current_exe()
        .ok()
        .and_then(|e| Some(e.parent()?.parent()?.to_path_buf()))
        .unwrap_or_default();
    let bin = |var: &str, name: &str| {
        std::env::var_os(var).map_or_else(|| bin_dir.join(name), PathBuf::from)
    };
    let dir = PathBuf::from(dir);
    match cli_layout::run_case(
        &bin("P4_SWITCH", "p4-switch"),
        &bin("P4_SWITCH_CLI", "simple_switch_CLI"),
        &dir,
        name,
        &dir.join(json),
        cli_args,
    ) {
        Ok(()) => println!("{name}: PASS"),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(4);
        }
    }
}
