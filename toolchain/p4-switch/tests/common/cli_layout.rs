//! Runs runtime-CLI tests laid out as bmv2's `targets/simple_switch/tests/CLI_tests`: a switch
//! started on a JSON, `NAME.in` piped into `simple_switch_CLI`, its output cut at each
//! `RuntimeCmd: ` prompt and compared piece by piece with `NAME.out` cut at its `????` lines.
//! Shared by our own tests (`tests/cli_layout.rs`) and the `bmv2_cli_tests` example, which runs
//! bmv2's own directory.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

const PROMPT: &str = "RuntimeCmd: ";
const SEPARATOR: &str = "????\n";

/// The pieces bmv2's `run_one_test.py` compares: what lies between two consecutive `marker`s
/// (text before the first and after the last is not compared).
pub fn pieces<'a>(text: &'a str, marker: &str) -> Vec<&'a str> {
    let mut parts: Vec<&str> = text.split(marker).collect();
    if parts.len() < 2 {
        return Vec::new();
    }
    parts.pop();
    parts.remove(0);
    parts
}

/// Starts `switch` on `json`, pipes `DIR/NAME.in` into `cli` (with `cli_args`), and compares
/// the output with `DIR/NAME.out`. `Err` describes the first difference.
pub fn run_case(
    switch: &Path,
    cli: &Path,
    dir: &Path,
    name: &str,
    json: &Path,
    cli_args: &[String],
) -> Result<(), String> {
    let commands = dir.join(format!("{name}.in"));
    let expected_path = dir.join(format!("{name}.out"));
    let expected = std::fs::read_to_string(&expected_path)
        .map_err(|e| format!("{}: {e}", expected_path.display()))?;
    let mut sw = Command::new(switch)
        .arg(json)
        .args(["--thrift-port", "0", "--stats-addr", "127.0.0.1:0"])
        .args(["--grpc-server-addr", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {e}", switch.display()))?;
    let result = (|| {
        let mut stderr = BufReader::new(sw.stderr.take().ok_or("switch stderr")?);
        // The banner names the CLI port once the switch listens; a failed start ends stderr.
        let mut banner = String::new();
        let port = loop {
            banner.clear();
            if stderr.read_line(&mut banner).map_err(|e| e.to_string())? == 0 {
                return Err(format!("{}: the switch did not start", json.display()));
            }
            if let Some(addr) = banner.split("runtime CLI on ").nth(1) {
                break addr
                    .trim()
                    .rsplit(':')
                    .next()
                    .unwrap_or_default()
                    .to_string();
            }
        };
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut stderr, &mut std::io::sink());
        });
        let input =
            std::fs::File::open(&commands).map_err(|e| format!("{}: {e}", commands.display()))?;
        let out = Command::new(cli)
            .args(["--thrift-port", &port])
            .args(cli_args)
            .stdin(input)
            .output()
            .map_err(|e| format!("{}: {e}", cli.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{name}: {} exited with {}: {}",
                cli.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let text = text.find(PROMPT).map_or("", |i| &text[i..]);
        compare(name, &pieces(text, PROMPT), &pieces(&expected, SEPARATOR))
    })();
    let _ = sw.kill();
    let _ = sw.wait();
    result
}

fn compare(name: &str, got: &[&str], want: &[&str]) -> Result<(), String> {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if g != w {
            return Err(format!(
                "{name}: output of command {} differs\n--- expected\n{w}--- got\n{g}---",
                i + 1
            ));
        }
    }
    if got.len() != want.len() {
        return Err(format!(
            "{name}: {} outputs, expected {}",
            got.len(),
            want.len()
        ));
    }
    Ok(())
}
