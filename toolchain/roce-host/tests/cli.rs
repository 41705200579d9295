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

/// Options that used to be checked only after the TCP exchange started (the message count of
/// an iteration run, the samples file, options of the other role) fail before any connection:
/// a listener standing in for the server sees none.
#[test]
fn options_are_checked_before_any_connection() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port().to_string();
    let base = ["-d", "lo", "127.0.0.1", "-p", &port, "--time-limit", "2"];
    let missing = std::env::temp_dir().join("roce-host-no-such-dir/samples.csv");
    let cases: [(&str, &[&str], &str); 5] = [
        (
            "write_bw",
            &["-n", "60000000"],
            "at most 50000000 in an iteration run",
        ),
        ("write_bw", &["-q", "0"], "-q/--qps: at least 1"),
        ("write_bw", &["--server"], "--server takes no PEER_IP"),
        (
            "write_lat",
            &["--samples", "/tmp/x.csv"],
            "--samples is for the write_bw client",
        ),
        (
            "write_bw",
            &["--samples", missing.to_str().expect("utf-8 path")],
            "--samples",
        ),
    ];
    for (mode, extra, expect) in cases {
        let args: Vec<&str> = [mode].iter().chain(&base).chain(extra).copied().collect();
        fails_with(&args, expect);
    }
    match listener.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("a client connected before its options were checked: {other:?}"),
    }
}

/// Runs the binary in a fresh network namespace (its own sysfs, gone when the process exits)
/// where d0 holds 10.1.0.1/24, 10.2.0.0/24 is routed via 10.1.0.2 and the default route goes
/// via 10.1.0.254; d0's veth peer swallows whatever is sent.
fn in_routed_netns(args: &[&str]) -> (bool, String) {
    let setup = "mount -t sysfs none /sys && ip link set lo up \
        && ip link add d0 type veth peer name d1 && ip addr add 10.1.0.1/24 dev d0 \
        && ip link set d1 up && ip link set d0 up \
        && ip route add 10.2.0.0/24 via 10.1.0.2 && ip route add default via 10.1.0.254 \
        && exec \"$@\"";
    let out = Command::new("unshare")
        .args(["-n", "-m", "sh", "-c", setup, "sh", BIN])
        .args(args)
        .output()
        .expect("run unshare (root needed)");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn peers_beyond_a_gateway_need_allow_remote() {
    let refused = [
        (
            "10.2.0.5",
            "roce-host: peer 10.2.0.5 is not on a directly connected network (it is reached by \
             route 10.2.0.0/24 via 10.1.0.2 dev d0); give --allow-remote to test across routers\n",
        ),
        (
            "1.2.3.4",
            "roce-host: peer 1.2.3.4 is not on a directly connected network (it is reached by \
             the default route via 10.1.0.254 dev d0); give --allow-remote to test across \
             routers\n",
        ),
    ];
    for (peer, expect) in refused {
        let (ok, err) = in_routed_netns(&["write_bw", "-d", "d0", "10.1.0.9", peer]);
        assert!(!ok);
        assert_eq!(err, expect);
    }
    // An on-link peer, and with --allow-remote a routed one, pass the checks and get as far as
    // the TCP exchange (nobody answers inside the namespace).
    for args in [
        &["10.1.0.9"][..],
        &["10.2.0.5", "--allow-remote"][..],
        &["1.2.3.4", "--allow-remote"][..],
    ] {
        let mut all = vec!["write_bw", "-d", "d0", "--time-limit", "0.3"];
        all.extend_from_slice(args);
        let (ok, err) = in_routed_netns(&all);
        assert!(!ok);
        assert!(
            err.starts_with("roce-host: time limit of 0.3 s reached while connecting to"),
            "{args:?}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}
