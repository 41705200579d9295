//! The built binary: SIGTERM exits 0; `--use-files` reads pcap input and writes pcap output.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use switch_ports::pcap::{create_file, read_file};

const BIN: &str = env!("CARGO_BIN_EXE_p4-switch");

fn program() -> String {
    format!(
        "{}/../switch-v1model/tests/stf/l3.json",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn wait_exit(child: &mut std::process::Child) -> std::process::ExitStatus {
    let t = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if t.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            panic!("the switch did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn sigterm(child: &std::process::Child) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
}

#[test]
fn sigterm_exits_zero() {
    let mut child = Command::new(BIN)
        .args([
            "--no-p4",
            "--stats-addr",
            "127.0.0.1:0",
            "--thrift-port",
            "0",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The banner comes after the signal handlers are installed.
    let mut banner = String::new();
    let stderr = child.stderr.take().unwrap();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stderr), &mut banner).unwrap();
    assert!(banner.starts_with("p4-switch running"), "{banner}");
    // The P4Runtime server listens on the address it reports.
    let grpc = banner
        .split("P4Runtime on ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .expect("banner names the P4Runtime address");
    std::net::TcpStream::connect(grpc).expect("P4Runtime port accepts connections");
    sigterm(&child);
    assert_eq!(wait_exit(&mut child).code(), Some(0));
}

#[test]
fn bad_command_lines_fail_with_a_message() {
    for args in [
        vec!["--no-p4", "-i", "1"],
        vec!["/nonexistent.json"],
        vec!["--no-p4", "--priority-queues", "9"],
        vec![],
    ] {
        let out = Command::new(BIN).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).starts_with("error: "),
            "{args:?}"
        );
    }
}

#[test]
fn use_files_pcap_in_pcap_out() {
    let dir = std::env::temp_dir().join(format!("p4switch-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p0 = dir.join("p0");
    let p1 = dir.join("p1");
    // Port 1 receives three ARP frames; l3.json sends non-IPv4 to port 0.
    let mut w = create_file(&dir.join("p1_in.pcap")).unwrap();
    let mut sent = Vec::new();
    for i in 0..3u8 {
        let mut f = vec![i; 60];
        f[12] = 0x08;
        f[13] = 0x06;
        w.write(Duration::from_secs(u64::from(i)), &f).unwrap();
        sent.push(f);
    }
    drop(w);
    drop(create_file(&dir.join("p0_in.pcap")).unwrap());
    let mut child = Command::new(BIN)
        .arg(program())
        .args(["--use-files", "0", "--stats-addr", "127.0.0.1:0"])
        .args(["--grpc-server-addr", "127.0.0.1:0"])
        .arg("-i")
        .arg(format!("0@{}", p0.display()))
        .arg("-i")
        .arg(format!("1@{}", p1.display()))
        .spawn()
        .unwrap();
    let out = dir.join("p0_out.pcap");
    let t = Instant::now();
    while read_file(&out).map_or(0, |r| r.len()) < 3 && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    sigterm(&child);
    assert_eq!(wait_exit(&mut child).code(), Some(0));
    let got: Vec<Vec<u8>> = read_file(&out)
        .unwrap()
        .into_iter()
        .map(|r| r.data)
        .collect();
    assert_eq!(got, sent);
    assert!(read_file(&dir.join("p1_out.pcap")).unwrap().is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}
