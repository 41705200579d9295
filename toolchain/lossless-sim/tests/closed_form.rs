//! The simulator against closed form: small fabrics programmed by the real controller
//! (lossless-ctl over P4Runtime, from the lab's config_db.json) forwarding through
//! p4src/lossless.p4, with every expected figure worked out here from the link rates,
//! delays and frame sizes, to the nanosecond.
//!
//! Needs what `make test` provides: the venv (.venv) and build/bin/p4-compile.

use lossless_sim::net::{Sim, Stop};
use lossless_sim::program::{self, Lab};
use lossless_sim::tcp::{Addressing, Source, TcpParams};
use lossless_sim::timeline::Timeline;
use lossless_sim::{assemble, pcap, probe};
use lossless_wire::pfc::MacControl;
use std::path::Path;
use std::process::Command;

mod common;
use common::{pipeline, root};

const PIPELINE_NS: u64 = 500;

fn lab() -> Lab {
    let mut lab = Lab::at(&root());
    lab.pipeline = pipeline().to_path_buf();
    lab
}

/// One switch, `hosts` hosts at `rate_mbps`, link i with `delays[i]` ns of propagation. Two
/// configurations: "pfc" (seed 000's tuned buffers, PFC on priorities 3-4) and "nopfc".
fn one_switch(name: &str, rate_mbps: u64, delays: &[u64]) -> serde_json::Value {
    let hosts: Vec<_> = (1..=delays.len())
        .map(|i| serde_json::json!({"name": format!("h{i}"), "switch": "s1", "ip": format!("10.0.{i}.2/24")}))
        .collect();
    let links: Vec<_> = delays
        .iter()
        .enumerate()
        .map(|(i, d)| serde_json::json!({"a": format!("h{}", i + 1), "b": "s1", "rate_mbps": rate_mbps, "delay_ns": d}))
        .collect();
    serde_json::json!({
        "name": name,
        "chip": "trident3",
        "hwsku": "Accton-AS7726-32X",
        "buffer_bytes": 10875072,
        "switches": [{"name": "s1", "front_panel_ports": 32}],
        "hosts": hosts,
        "links": links,
        "experiment": {
            "kind": "incast",
            "receiver": "h1",
            "senders": ["h2"],
            "priority": 3,
            "size": 1024,
            "iters": 1,
            "roce_mtu": 1024,
            "cases": [
                {"name": "pfc", "buffers": "tuned", "pfc": true},
                {"name": "nopfc", "buffers": "tuned", "pfc": false}
            ]
        }
    })
}

/// The fabric of `topo` programmed for `case`, at virtual time 0.
fn simulate(topo: serde_json::Value, case: &str) -> Sim {
    let name = topo["name"].as_str().unwrap().to_string();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("lossless-sim-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("topology.json");
    std::fs::write(&file, serde_json::to_string_pretty(&topo).unwrap()).unwrap();
    let lab = lab();
    let fabric = program::prepare(&lab, &file, Some(case), false, &dir).unwrap();
    let (switches, _servers) = program::program(&lab, &fabric, &dir).unwrap();
    assemble(&fabric, switches, PIPELINE_NS).unwrap()
}

fn run(sim: &mut Sim, until: Option<u64>) -> Stop {
    sim.run(until, None, &mut |_| {})
}

/// ceil(bits x 1e9 / rate): nanoseconds from first preamble bit to last FCS bit of a frame of
/// `len` bytes without FCS (FCS 4, padded to 64, preamble + SFD 8).
fn frame_ns(len: usize, rate_gbps: u64) -> u64 {
    let bytes = (len as u64 + 4).max(64) + 8;
    (bytes * 8).div_ceil(rate_gbps)
}

#[test]
fn one_message_across_one_switch_at_100g() {
    let mut sim = simulate(one_switch("msg100g", 100_000, &[37, 113]), "pfc");
    let f = probe::frame(&sim, 0, 1, 24, 1024, 7);
    assert_eq!(f.len(), 1098);
    sim.host_send(0, 1_000, f);
    assert_eq!(run(&mut sim, None), Stop::Drained);
    let rx = &sim.hosts[1].rx;
    assert_eq!(rx.len(), 1, "one frame reaches h2");
    // Two hops of 1098 + 4 + 8 bytes at 100 Gb/s: 8880 bits = 88.8 ns -> 89 each.
    assert_eq!(frame_ns(1098, 100), 89);
    let expected = 89 + 37 + PIPELINE_NS + 89 + 113;
    assert_eq!(rx[0].0 - 1_000, expected);
}

#[test]
fn host_latency_is_added_on_the_way_out_and_in() {
    let mut topo = one_switch("hostlat", 100_000, &[37, 113]);
    topo["experiment"]["host_latency_ns"] = serde_json::json!({"h1": 300, "h2": 1352});
    let mut sim = simulate(topo, "pfc");
    let f = probe::frame(&sim, 0, 1, 24, 1024, 7);
    sim.host_send(0, 1_000, f);
    assert_eq!(run(&mut sim, None), Stop::Drained);
    let rx = &sim.hosts[1].rx;
    assert_eq!(rx.len(), 1, "one frame reaches h2");
    // h1's latency out, two hops of 89 ns as above, h2's latency in.
    let expected = 300 + 89 + 37 + PIPELINE_NS + 89 + 113 + 1352;
    assert_eq!(rx[0].0 - 1_000, expected);
}

/// One TCP connection from h1 to h2 carrying `bytes` from time 0, unpaced.
fn tcp_flow(sim: &mut Sim, params: TcpParams, bytes: u64) {
    let addr = Addressing {
        src_mac: [0; 6],
        dst_mac: [0; 6],
        src_ip: [0; 4],
        dst_ip: [0; 4],
        src_port: 40_000,
        dst_port: 5201,
        iss: 0xfff0_0000,
        irs: 12_345,
    };
    sim.connect_tcp(0, 1, addr, params, Source::new(0, None, Some(bytes)));
}

#[test]
fn one_tcp_flow_alone_runs_at_line_rate_minus_headers() {
    // The lab's interfaces carry the port MTU, 9100: MSS 9060. Priority 0 (DSCP 0).
    let mut sim = simulate(one_switch("tcp25g", 25_000, &[100, 100]), "pfc");
    let params = TcpParams::new(9100, 0);
    let mss = params.mss as u64;
    tcp_flow(&mut sim, params, 4000 * mss);
    run(&mut sim, Some(2_000_000));
    let at = |sim: &Sim| {
        let s = sim.hosts[1].tcp[0].stats();
        (s.rx_bytes, s.rx_last_ns.unwrap())
    };
    let (b1, t1) = at(&sim);
    run(&mut sim, Some(8_000_000));
    let (b2, t2) = at(&sim);
    // Each full segment is 9060 + TCP 20 + IPv4 20 + Ethernet 14 + FCS 4 + preamble 8 +
    // gap 12 = 9138 bytes on the line: 73104 bits = 2924.16 ns at 25 Gb/s, back to back
    // from the sender's NIC and again out of the switch. Goodput 25 x 9060 / 9138 Gb/s.
    let k = (b2 - b1) / mss;
    assert_eq!((b2 - b1) % mss, 0);
    assert!(k > 1000, "{k} segments measured");
    let expected_ns = k as f64 * 9138.0 * 8.0 / 25.0;
    assert!(
        ((t2 - t1) as f64 - expected_ns).abs() <= 1.0,
        "{k} segments in {} ns, expected {expected_ns}",
        t2 - t1
    );
    let goodput = (b2 - b1) as f64 * 8.0 / (t2 - t1) as f64;
    assert!(
        (goodput - 25.0 * 9060.0 / 9138.0).abs() < 1e-5,
        "{goodput} Gb/s"
    );
    assert_eq!(run(&mut sim, None), Stop::Finished);
    let s = sim.hosts[0].tcp[0].stats();
    assert_eq!((s.retransmits, s.timeouts), (0, 0));
    assert_eq!(sim.hosts[1].tcp[0].stats().rx_bytes, 4000 * mss);
}

#[test]
fn pause_quanta_at_25g_stop_a_queue_for_their_time() {
    const QUANTA: u16 = 1000;
    // 1000 x 512 bits at 25 Gb/s = 20.48 us.
    const PAUSE_NS: u64 = 1000 * 512 * 1000 / 25_000;
    let d = 50;
    let expect_unpaused = 100 + frame_ns(1098, 25) + d + PIPELINE_NS + frame_ns(1098, 25) + d;
    for paused in [false, true] {
        let mut sim = simulate(one_switch("pause25g", 25_000, &[d, d]), "pfc");
        if paused {
            let xoff = MacControl::pfc_xoff(1 << 3, QUANTA).encode(sim.hosts[0].mac);
            sim.host_send(0, 0, xoff);
        }
        let f = probe::frame(&sim, 1, 0, 24, 1024, 9);
        sim.host_send(1, 100, f);
        run(&mut sim, None);
        let got: Vec<u64> = sim.hosts[0].rx.iter().map(|(t, _)| *t).collect();
        if !paused {
            assert_eq!(got, vec![expect_unpaused]);
            continue;
        }
        // The XOFF (64 bytes + 8 at 25 Gb/s = 23.04 -> 24 ns) acts when its last bit arrives;
        // the queue then holds for exactly the pause and the frame leaves when it ends.
        let pause_start = frame_ns(60, 25) + d;
        assert_eq!(frame_ns(60, 25), 24);
        assert_eq!(got, vec![pause_start + PAUSE_NS + frame_ns(1098, 25) + d]);
        assert_eq!(PAUSE_NS, 20_480);
    }
}

#[test]
fn a_blocked_sender_is_repaused_every_half_pause() {
    // h1 holds the switch's queue 3 toward it with XOFF 0xffff every 1.2 ms; h2 (a plain NIC,
    // which does not stop) sends a burst on priority 3 that puts its PG above the pause point,
    // then nothing. Half a pause of 0xffff quanta at 25G is 65535 x 512 / 25e9 / 2 = 671.0784
    // us, 671 078 ns in whole ns: the controller set the PG's renewal to 670 us (half, in whole
    // us, less one) and the packet generator to fire every 335 539 ns (a quarter), so the
    // renewals come every second firing.
    const HALF_NS: u64 = 65535 * 512 * 1000 / 25_000 / 2;
    const PAUSE_NS: u64 = 65535 * 512 * 1000 / 25_000;
    assert_eq!(HALF_NS, 671_078);
    let mut sim = simulate(one_switch("refresh25g", 25_000, &[50, 50]), "pfc");
    let hold = MacControl::pfc_xoff(1 << 3, 0xffff).encode(sim.hosts[0].mac);
    for k in 0..4 {
        sim.host_send(0, k * 1_200_000, hold.clone());
    }
    stream(&mut sim, 1, 0, 24, 1024, 300);
    let end = 4_000_000;
    run(&mut sim, Some(end));
    let pfc = |sim: &Sim| -> Vec<(u64, u16)> {
        sim.hosts[1]
            .rx
            .iter()
            .filter_map(|(t, f)| match MacControl::decode(f) {
                Ok(Some(MacControl::Pfc { quanta, .. })) => Some((*t, quanta[3])),
                _ => None,
            })
            .collect()
    };
    let held = pfc(&sim);
    assert!(held.iter().all(|&(_, q)| q == 0xffff), "{held:?}");
    assert!(held.len() >= 4, "{held:?}");
    // Each XOFF reaches h2 before the previous one's pause has run out; after the first renewal
    // they come every firing of the packet generator, exactly half a pause apart.
    for w in held.windows(2) {
        assert!(w[1].0 - w[0].0 < PAUSE_NS, "{held:?}");
    }
    for w in held[1..].windows(2) {
        assert_eq!(w[1].0 - w[0].0, HALF_NS, "{held:?}");
    }
    assert!(held.last().unwrap().0 + PAUSE_NS > end);
    // h1 stops pausing: its last XOFF runs out at 3.6 ms + its pause; until then the renewals
    // go on, then the queue drains, the PG falls below XON and h2 gets one XON and no more
    // XOFF; then only timers are left.
    assert_eq!(run(&mut sim, None), Stop::Drained);
    let all = pfc(&sim);
    let (xon_at, xon) = *all.last().unwrap();
    assert_eq!(xon, 0, "{all:?}");
    assert!(xon_at > 3_600_000 + PAUSE_NS, "{all:?}");
    let renewals = &all[held.len() - 1..all.len() - 1];
    assert!(renewals.iter().all(|&(_, q)| q == 0xffff), "{all:?}");
    for w in renewals.windows(2) {
        assert_eq!(w[1].0 - w[0].0, HALF_NS, "{all:?}");
    }
}

/// Sends `count` frames from host `from` to host `to` back to back from t = 0 (the NIC paces
/// them at its line rate).
fn stream(sim: &mut Sim, from: usize, to: usize, dscp: u8, payload: usize, count: u32) {
    for i in 0..count {
        let f = probe::frame(sim, from, to, dscp, payload, (from as u32) << 20 | i);
        sim.host_send(from, 0, f);
    }
}

#[test]
fn dwrr_shares_are_exact() {
    // h1 on priority 3 (queue 3, DWRR weight 15) and h2 on priority 0 (queue 0, weight 14), both
    // at line rate into h3: SONiC's default scheduler of configdb.py, quantum 64 B x weight, so
    // 960 and 896 bytes per round. With 130-byte frames (RoCE payloads are padded to 4 bytes,
    // so frames are 2 mod 4 long) the schedule repeats every 65 rounds: 960 x 65 / 130 = 480
    // frames of h1's and 896 x 65 / 130 = 448 of h2's, 15:14 exactly, in every 928 frames out.
    let mut sim = simulate(one_switch("dwrr", 100_000, &[0, 0, 0]), "nopfc");
    let payload = 130 - 74;
    stream(&mut sim, 0, 2, 24, payload, 8000);
    stream(&mut sim, 1, 2, 0, payload, 8000);
    // Stop while both queues are still backlogged: each sender's 8000 frames take 98.6 us.
    run(&mut sim, Some(95_000));
    assert!(sim.hosts[2].rx.iter().all(|(_, f)| f.len() == 130));
    // The sender of each frame out: IPv4 source 10.0.i.2 has i at byte 14 + 12 + 2.
    let from: Vec<u8> = sim.hosts[2].rx.iter().map(|(_, f)| f[28]).collect();
    const PERIOD: usize = 928;
    let skip = 200; // the start, before both queues are backlogged
    let blocks = (from.len() - skip - PERIOD) / PERIOD;
    assert!(blocks >= 6, "only {} frames out", from.len());
    let count = |block: &[u8], h: u8| block.iter().filter(|&&x| x == h).count();
    let aligned = (0..PERIOD).find(|&o| {
        (0..blocks).all(|b| {
            let block = &from[skip + o + PERIOD * b..skip + o + PERIOD * (b + 1)];
            count(block, 1) == 480 && count(block, 2) == 448
        })
    });
    assert!(
        aligned.is_some(),
        "no {PERIOD}-frame alignment gives 480:448 in every block"
    );
}

#[test]
fn two_to_one_at_line_rate_builds_the_queue_at_the_rate_difference() {
    // 1226-byte frames: 1226 + 4 + 20 = 1250 bytes on the line = exactly 100 ns at 100 Gb/s.
    // Both senders deliver one frame every 100 ns, the port to h3 sends one: the queue grows
    // by one frame per 100 ns.
    let mut sim = simulate(one_switch("twotoone", 100_000, &[0, 0, 0]), "nopfc");
    let payload = 1226 - 74;
    stream(&mut sim, 0, 2, 24, payload, 2000);
    stream(&mut sim, 1, 2, 24, payload, 2000);
    let port_to_h3 = 3;
    let depth = |sim: &Sim| {
        sim.switches[0]
            .core
            .tm()
            .unwrap()
            .queue_depth(port_to_h3, 3)
            .unwrap()
    };
    // Sample between two arrivals (they come at multiples of 100 ns plus a fixed offset).
    run(&mut sim, Some(20_050));
    let a = depth(&sim);
    run(&mut sim, Some(120_050));
    let b = depth(&sim);
    assert_eq!(
        b.packets - a.packets,
        1000,
        "one frame per 100 ns for 100 us"
    );
    assert_eq!(b.bytes - a.bytes, 1000 * 1226);
    let mut frames = 0;
    for h in &sim.hosts[..2] {
        frames += h.rx.len();
    }
    assert_eq!(frames, 0, "nothing comes back to the senders");
}

/// `lossless-sim run` on a one-switch, three-host fabric with no experiment: it sends probes.
fn sim_bin() -> Command {
    let mut topo = one_switch("probes", 100_000, &[0, 0, 0]);
    topo.as_object_mut().unwrap().remove("experiment");
    // One file per call: tests run in parallel.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("lossless-sim-probes-{n}.json"));
    std::fs::write(&file, topo.to_string()).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lossless-sim"));
    cmd.arg("run")
        .arg(file)
        .arg("--lab")
        .arg(root())
        .arg("--pipeline")
        .arg(pipeline());
    cmd
}

fn incast_doc(seed: &str, out: &Path) -> Vec<u8> {
    common::run_ok(
        "incast-16to1",
        &["--quick", "--case", "tuned", "--seed", seed],
        out,
    );
    std::fs::read(out.join("results.json")).unwrap()
}

#[test]
fn one_seed_gives_identical_traffic_results_another_seed_other_ones() {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("lossless-sim-seeds");
    let a = incast_doc("3", &base.join("a"));
    let b = incast_doc("3", &base.join("b"));
    let c = incast_doc("4", &base.join("c"));
    assert_eq!(a, b);
    assert_ne!(
        a, c,
        "the seed changes the senders' start times, hence the results"
    );
}

#[test]
fn one_seed_gives_identical_results() {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("lossless-sim-determinism");
    let mut docs = Vec::new();
    for run in ["a", "b"] {
        let out = base.join(run);
        let status = sim_bin()
            .args(["--seed", "7", "--out"])
            .arg(&out)
            .status()
            .unwrap();
        assert!(status.success());
        docs.push(std::fs::read(out.join("results.json")).unwrap());
    }
    assert_eq!(docs[0], docs[1]);
    let doc: serde_json::Value = serde_json::from_slice(&docs[0]).unwrap();
    assert_eq!(doc["sim"]["rng_seed"], 7);
    assert_eq!(doc["sim"]["partial"], false);
    assert_eq!(doc["measurements"].as_array().unwrap().len(), 6);
}

#[test]
fn max_events_and_time_limit_stop_with_partial_results() {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("lossless-sim-partial");
    for (flag, value) in [("--max-events", "5"), ("--time-limit", "15000")] {
        let out = base.join(flag.trim_start_matches('-'));
        let got = sim_bin()
            .args([flag, value, "--out"])
            .arg(&out)
            .output()
            .unwrap();
        assert_eq!(got.status.code(), Some(3), "{flag}");
        let stderr = String::from_utf8_lossy(&got.stderr);
        assert!(stderr.contains(&format!("stopped at {flag}")), "{stderr}");
        let doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap();
        assert_eq!(doc["sim"]["partial"], true);
        let delivered = doc["measurements"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| !m["values"]["latency_ns"].is_null())
            .count();
        assert!(delivered < 6, "{flag}: a partial run delivered every probe");
    }
}

#[test]
fn bad_topology_is_a_located_error_before_virtual_time() {
    let mut topo = one_switch("badfield", 25_000, &[0, 0]);
    topo["links"][1]["rate_gbps"] = serde_json::json!(25);
    bad_input(topo, "links[1].rate_gbps: unknown field");
    for (latency, message) in [
        (
            serde_json::json!({"h9": 1000}),
            "experiment.host_latency_ns.h9: unknown host 'h9'",
        ),
        (
            serde_json::json!(-5),
            "experiment.host_latency_ns: expected a non-negative integer (ns), got -5",
        ),
        (
            serde_json::json!({"h1": "1us"}),
            "experiment.host_latency_ns.h1: expected a non-negative integer (ns)",
        ),
    ] {
        let mut topo = one_switch("badlatency", 25_000, &[0, 0]);
        topo["experiment"]["host_latency_ns"] = latency;
        bad_input(topo, message);
    }
}

/// `lossless-sim run` on `topo` exits 2 with `message` and writes no results.
fn bad_input(topo: serde_json::Value, message: &str) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("lossless-sim-badinput");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("topology.json");
    std::fs::write(&file, topo.to_string()).unwrap();
    let out = dir.join("out");
    let _ = std::fs::remove_dir_all(&out);
    let got = Command::new(env!("CARGO_BIN_EXE_lossless-sim"))
        .arg("run")
        .arg(&file)
        .arg("--lab")
        .arg(root())
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&got.stderr);
    assert_eq!(got.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(message), "{stderr}");
    assert!(!out.join("results.json").exists());
}

/// An ARP request from host `from` for its gateway, built field by field (RFC 826).
fn arp_request(sim: &Sim, from: usize, gateway: std::net::Ipv4Addr) -> Vec<u8> {
    let h = &sim.hosts[from];
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&h.mac);
    f.extend_from_slice(&[0x08, 0x06]);
    f.extend_from_slice(&[0, 1, 0x08, 0x00, 6, 4, 0, 1]);
    f.extend_from_slice(&h.mac);
    f.extend_from_slice(&h.ip.octets());
    f.extend_from_slice(&[0; 6]);
    f.extend_from_slice(&gateway.octets());
    f.resize(60, 0);
    f
}

#[test]
fn packet_ins_reach_the_server_in_a_case_after_the_first() {
    // lossless.p4 punts ARP to the CPU port; the switch hands it to its P4Runtime server's
    // sink (counted in cpu_packet_in) or, with no sink, counts an unknown egress port.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("lossless-sim-packetin");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("topology.json");
    let topo = one_switch("packetin", 100_000, &[0, 0]);
    std::fs::write(&file, topo.to_string()).unwrap();
    let lab = lab();
    let fabric = program::prepare(&lab, &file, Some("pfc"), false, &dir).unwrap();
    let gateway = fabric.hosts[0].gateway;
    let (switches, servers) = program::program(&lab, &fabric, &dir).unwrap();
    let mut sim = assemble(&fabric, switches, PIPELINE_NS).unwrap();
    let punted = |sim: &Sim| {
        let c = sim.switches[0].core.counters();
        (c.cpu_packet_in, c.unknown_egress_port)
    };
    let arp = arp_request(&sim, 0, gateway);
    sim.host_send(0, 0, arp.clone());
    run(&mut sim, Some(100_000));
    assert_eq!(punted(&sim), (1, 0), "first case");
    // The second case, as `run` reprograms it: a new core around the reprogrammed pipeline.
    let next = dir.join("cases/nopfc");
    let second = program::prepare(&lab, &file, Some("nopfc"), false, &next).unwrap();
    program::reprogram(&lab, &servers, &second, &next, &mut sim).unwrap();
    sim.start_pktgens();
    let now = sim.now_ns();
    sim.host_send(0, now, arp);
    run(&mut sim, Some(now + 100_000));
    assert_eq!(punted(&sim), (1, 0), "second case (its core counts from 0)");
}

/// The timeline's samples of switch 0 (`s1`) recorded so far, up to the present.
fn timeline(sim: &mut Sim) -> Vec<serde_json::Value> {
    sim.sample_now();
    let tl = sim.timeline.as_ref().expect("a timeline");
    tl.samples(&["s1".to_string()])
        .into_iter()
        .map(|s| {
            assert_eq!(s.switch, "s1");
            assert_eq!(s.t, s.stats["time_ns"].as_u64().unwrap() as f64 / 1e9);
            s.stats
        })
        .collect()
}

/// Switch port `port` in a timeline sample (null when it was not written).
fn port_of(sample: &serde_json::Value, port: u32) -> &serde_json::Value {
    sample["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["port"] == port)
        .unwrap_or(&serde_json::Value::Null)
}

#[test]
fn timeline_of_a_two_to_one_grows_at_the_rate_difference() {
    // As two_to_one_at_line_rate_...: one 1226-byte frame (100 ns on the line) more in the
    // queue to h3 every 100 ns, so 10 more every 1 us sample, in bytes and in cells.
    let mut sim = simulate(one_switch("tl2to1", 100_000, &[0, 0, 0]), "nopfc");
    sim.timeline = Some(Timeline::new(1_000, 1));
    let payload = 1226 - 74;
    stream(&mut sim, 0, 2, 24, payload, 2000);
    stream(&mut sim, 1, 2, 24, payload, 2000);
    run(&mut sim, Some(120_500));
    let samples = timeline(&mut sim);
    let times: Vec<u64> = samples
        .iter()
        .map(|s| s["time_ns"].as_u64().unwrap())
        .collect();
    assert_eq!(times, (0..=120).map(|k| k * 1_000).collect::<Vec<_>>());
    let cell = samples[0]["buffer"]["cell_bytes"].as_u64().unwrap();
    let frame_cells = 1226u64.div_ceil(cell);
    let depth = |s: &serde_json::Value| {
        let q = &port_of(s, 3)["queues"];
        let q3 = q.as_array().unwrap().iter().find(|q| q["queue"] == 3);
        (
            q3.map_or(0, |q| q["depth_bytes"].as_u64().unwrap()),
            q3.map_or(0, |q| q["depth_cells"].as_u64().unwrap()),
            port_of(s, 3)["used_cells"].as_u64().unwrap(),
            s["buffer"]["used_cells"].as_u64().unwrap(),
        )
    };
    for w in samples[20..].windows(2) {
        let (a, b) = (depth(&w[0]), depth(&w[1]));
        assert_eq!(b.0 - a.0, 10 * 1226, "{a:?} -> {b:?}");
        assert_eq!(b.1 - a.1, 10 * frame_cells, "{a:?} -> {b:?}");
        assert_eq!(b.2 - a.2, 10 * frame_cells, "port's buffer {a:?} -> {b:?}");
        assert_eq!(
            b.3 - a.3,
            10 * frame_cells,
            "switch's buffer {a:?} -> {b:?}"
        );
    }
    assert!(samples.iter().all(|s| !port_of(s, 3)["queues"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|q| q["paused"] == true)));
}

#[test]
fn pause_timeline_follows_the_xoff_received() {
    // h1's XOFF for priority 3, 1000 quanta at 25G (20.48 us), reaches the switch at 24 + 50
    // ns: queue 3 of port 1 is paused at every 1 us sample in [74, 74 + 20 480) and no other,
    // and port 1 has counted one XOFF received from 74 on.
    const PAUSE_NS: u64 = 20_480;
    let d = 50;
    let mut sim = simulate(one_switch("tlpause25g", 25_000, &[d, d]), "pfc");
    sim.timeline = Some(Timeline::new(1_000, 1));
    let xoff = MacControl::pfc_xoff(1 << 3, 1000).encode(sim.hosts[0].mac);
    sim.host_send(0, 0, xoff);
    let f = probe::frame(&sim, 1, 0, 24, 1024, 9);
    sim.host_send(1, 100, f);
    run(&mut sim, Some(40_000));
    let arrival = frame_ns(60, 25) + d;
    let samples = timeline(&mut sim);
    let paused_samples = samples.iter().filter(|s| {
        port_of(s, 1)["queues"]
            .as_array()
            .is_some_and(|q| q.iter().any(|q| q["queue"] == 3 && q["paused"] == true))
    });
    assert!(paused_samples.count() >= 2);
    for s in &samples {
        let t = s["time_ns"].as_u64().unwrap();
        let port = port_of(s, 1);
        let paused = port["queues"]
            .as_array()
            .is_some_and(|q| q.iter().any(|q| q["queue"] == 3 && q["paused"] == true));
        assert_eq!(paused, (arrival..arrival + PAUSE_NS).contains(&t), "at {t}");
        // Counts are left out while 0, ports while they hold nothing.
        let count = |k: &str| port[k][3].as_u64().unwrap_or(0);
        assert_eq!(count("pfc_xoff_rx"), u64::from(t >= arrival), "at {t}");
        assert_eq!(
            (count("pfc_xon_rx"), count("pfc_xoff_tx")),
            (0, 0),
            "at {t}"
        );
    }
}

#[test]
fn pfc_timeline_counts_the_frames_the_hosts_receive() {
    // Two plain NICs (they do not stop) at 100G into one port on priority 3 with PFC: the
    // switch sends XOFF to both, renews it, and XON once the queue has drained. The timeline's
    // XOFF/XON sent per port at every 1 us sample is the number of PFC frames of that kind the
    // host behind the port received, counted by when they were sent (arrival - 6 ns on the
    // line, no propagation).
    let mut sim = simulate(one_switch("tlpfc", 100_000, &[0, 0, 0]), "pfc");
    sim.timeline = Some(Timeline::new(1_000, 1));
    let payload = 1226 - 74;
    stream(&mut sim, 0, 2, 24, payload, 2000);
    stream(&mut sim, 1, 2, 24, payload, 2000);
    run(&mut sim, Some(3_000_000));
    let samples = timeline(&mut sim);
    assert_eq!(frame_ns(60, 100), 6);
    for host in 0..2 {
        let port = host as u32 + 1;
        let sent: Vec<(u64, bool)> = sim.hosts[host]
            .rx
            .iter()
            .filter_map(|(t, f)| match MacControl::decode(f) {
                Ok(Some(MacControl::Pfc {
                    class_enable,
                    quanta,
                })) => {
                    assert_eq!(class_enable, 1 << 3);
                    Some((t - 6, quanta[3] > 0))
                }
                _ => None,
            })
            .collect();
        let xoffs = sent.iter().filter(|s| s.1).count();
        assert!(xoffs >= 2, "h{}: {sent:?}", host + 1);
        assert!(!sent.last().unwrap().1, "the last is an XON: {sent:?}");
        for s in &samples {
            let t = s["time_ns"].as_u64().unwrap();
            let p = port_of(s, port);
            let count = |xoff: bool| sent.iter().filter(|&&(at, x)| at <= t && x == xoff).count();
            let got = |k: &str| p[k][3].as_u64().unwrap_or(0) as usize;
            assert_eq!(got("pfc_xoff_tx"), count(true), "port {port} at {t}");
            assert_eq!(got("pfc_xon_tx"), count(false), "port {port} at {t}");
        }
    }
}

#[test]
fn pcap_files_carry_the_frames_at_their_virtual_times() {
    // One frame h1 -> h2 across one switch at 100G (as one_message_across_one_switch_at_100g):
    // sent at 1000, its last bit reaches port 1 after 89 + 37 ns, it leaves port 2 after the
    // pipeline's 500 ns; stamped in ns (magic 0xa1b23c4d), cut to 128 bytes.
    let mut sim = simulate(one_switch("pcap100g", 100_000, &[37, 113]), "pfc");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("lossless-sim-pcap");
    let _ = std::fs::remove_dir_all(&dir);
    let ports = vec![("s1".to_string(), vec![1, 2])];
    let chosen = pcap::select("s1:1,s1", &ports).unwrap();
    assert_eq!(chosen, vec![(0, 1), (0, 2)]);
    let names = ["s1".to_string()];
    sim.capture = Some(pcap::Capture::create(&dir, &names, &chosen, PIPELINE_NS).unwrap());
    let f = probe::frame(&sim, 0, 1, 24, 1024, 7);
    sim.host_send(0, 1_000, f.clone());
    run(&mut sim, Some(100_000));
    let files = sim.capture.take().unwrap().finish().unwrap();
    assert_eq!(
        files,
        vec![dir.join("s1-port1.pcap"), dir.join("s1-port2.pcap")]
    );
    let read = |name: &str| {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        assert_eq!(
            u32::from_le_bytes(bytes[..4].try_into().unwrap()),
            0xa1b2_3c4d
        );
        let mut r = pcap_file::pcap::PcapReader::new(&bytes[..]).unwrap();
        let mut out = Vec::new();
        while let Some(p) = r.next_packet() {
            let p = p.unwrap();
            out.push((p.timestamp.as_nanos() as u64, p.orig_len, p.data.to_vec()));
        }
        out
    };
    let rx = read("s1-port1.pcap");
    let out_frame = &sim.hosts[1].rx[0].1;
    assert_eq!(rx, vec![(1_000 + 89 + 37, 1098, f[..128].to_vec())]);
    let tx = read("s1-port2.pcap");
    assert_eq!(
        tx,
        vec![(
            1_000 + 89 + 37 + PIPELINE_NS,
            1098,
            out_frame[..128].to_vec()
        )]
    );
    assert_eq!(sim.hosts[1].rx[0].0, tx[0].0 + 89 + 113);
    let bad = pcap::select("s1:9", &ports).unwrap_err().to_string();
    assert_eq!(bad, "--pcap s1:9: 's1:9': s1 has no port 9");
    let bad = pcap::select("s2", &ports).unwrap_err().to_string();
    assert_eq!(bad, "--pcap s2: 's2': no switch 's2'");
}

#[test]
fn a_run_writes_results_plots_and_pcaps() {
    // seed 000's incast, quick, its three cases (default, tuned, pfc): the lab's plotting
    // module draws the latency CDF of all and each case's timelines apart.
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("lossless-sim-outputs");
    let _ = std::fs::remove_dir_all(&out);
    let doc = common::run_ok(
        "incast-16to1",
        &["--quick", "--pcap", "s1:1", "--sample-us", "5"],
        &out,
    );
    let png = |p: &Path| {
        let bytes = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{}", p.display());
    };
    png(&out.join("latency_cdf.png"));
    let cases = doc["sim"]["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 3);
    for case in cases {
        let dir = out.join("cases").join(case["name"].as_str().unwrap());
        for name in ["latency_cdf", "queues_pfc", "buffer", "queue_usage"] {
            png(&dir.join(format!("{name}.png")));
        }
        assert_eq!(case["measurements"], 1);
    }
    // PFC fires only with the tuned profile (the first case).
    png(&out.join("cases/tuned/pfc_frames.png"));
    assert!(!out.join("cases/default/pfc_frames.png").exists());
    // The timeline: 5 us apart (or a multiple, once coarsened); between its samples, each
    // case's end (the traffic manager's full statistics, with their counting window).
    let stats = doc["stats"].as_array().unwrap();
    let times: Vec<u64> = stats
        .iter()
        .filter(|s| s["stats"]["since_ns"].is_null())
        .filter_map(|s| s["stats"]["time_ns"].as_u64())
        .collect();
    assert!(times.len() > 100, "{} samples", times.len());
    assert!(times.windows(2).all(|w| w[0] <= w[1]));
    assert!(times.iter().all(|t| t % 5_000 == 0));
    let bytes = std::fs::read(out.join("pcap/s1-port1.pcap")).unwrap();
    assert!(bytes.len() > 24 + 16, "frames captured on s1 port 1");
}
