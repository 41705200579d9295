//! Bad command lines fail with a message naming the option, never a panic.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_roce-host");

fn fails_with(args: &[&str], expect: &str) {
    let out = Command::new(BIN)
        .args(args)
        .output()
        .expect("run roce-host");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} succeeded");
    assert!(err.contains(expect), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
}

#[test]
fn bad_options_are_named() {
    let base = ["write_bw", "-d", "lo"];
    let cases: [(&[&str], &str); 8] = [
        (
            &["--rate", "0"],
            "--rate 0: must be a positive number of Gb/s",
        ),
        (&["--rate", "1e-9"], "below 1 Mb/s"),
        (&["--dcqcn-g", "2"], "--dcqcn-g 2: must be in (0, 1]"),
        (
            &["--timeout-us=-1"],
            "--timeout-us -1: must be a positive number",
        ),
        (&["--time-limit", "inf"], "--time-limit inf"),
        (&["-m", "1000"], "MTU must be 256, 512, 1024, 2048 or 4096"),
        (
            &["--peer-mac", "02:00:zz:00:00:01"],
            "\"zz\" is not a hex octet",
        ),
        (
            &["-s", "4294967296"],
            "messages are at most 2147483648 bytes",
        ),
    ];
    for (extra, expect) in cases {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        fails_with(&args, expect);
    }
    fails_with(
        &["write_bw", "-d", "nosuch0", "127.0.0.1"],
        "/sys/class/net/nosuch0/address",
    );
    fails_with(
        &["write_bw", "-d", "lo", "-q", "5000", "127.0.0.1"],
        "at most 4096 QPs per process",
    );
}
