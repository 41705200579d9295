//! The stats and port-configuration endpoint, scraped over HTTP on an ephemeral port.

mod common;
use common::*;
use p4_switch::clock::{ClockKind, SystemClock};
use p4_switch::core::Core;
use p4_switch::http::StatsServer;
use p4_switch::runtime::Runtime;
use std::time::{Duration, Instant};
use switch_ports::Port;
use switch_v1model::SwitchConfig;

fn wait_for(mut f: impl FnMut() -> Result<(), String>) {
    let t = Instant::now();
    while let Err(last) = f() {
        assert!(t.elapsed() < Duration::from_secs(10), "timed out: {last}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn metrics_stats_clear_and_port_configuration() {
    let (ports, host) = ports(&[0, 1]);
    let cfg = switch_tm::TmConfig::parse(
        "buffer: {total_bytes: 1048576}\nports:\n  - {port: 0, rate_bps: 1000000000}\n",
        switch_tm::ConfigFormat::Yaml,
    )
    .unwrap();
    let core = Core::new(
        Some(switch("l3")),
        Some(cfg),
        ports.clone(),
        SwitchConfig::default(),
        0,
    )
    .unwrap();
    let rt = Runtime::start(
        core,
        ports.into_iter().collect(),
        Duration::ZERO,
        SystemClock::new(ClockKind::Real),
        0,
    )
    .unwrap();
    let server = StatsServer::start("127.0.0.1:0", rt.handle()).unwrap();
    let addr = server.addr().to_string();
    for i in 0..20u8 {
        host[&1].send(&frame(100, i)).unwrap();
    }
    // A truncated IPv4 header takes the parser-error path, is counted, and (as in
    // simple_switch) goes on through ingress with egress_spec 0: 21 frames out of port 0.
    host[&1].send(&ipv4_frame([10, 0, 0, 1])[..20]).unwrap();
    wait_for(|| {
        let (_, m) = request(&addr, "GET", "/metrics", "");
        if m.contains("p4switch_port_tx_frames_total{port=\"0\"} 21") {
            Ok(())
        } else {
            Err(m)
        }
    });
    let (status, m) = request(&addr, "GET", "/metrics", "");
    assert_eq!(status, 200);
    assert!(m.contains("p4switch_parser_errors_total 1"), "{m}");
    assert!(m.contains("lossless_tm_"), "{m}");
    let (status, j) = request(&addr, "GET", "/stats", "");
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&j).unwrap();
    assert_eq!(v["engine"]["parser_errors"], 1);
    assert_eq!(v["switch"]["tx_frames"]["0"], 21);
    assert!(v["tm"].is_object());
    let tm_tx = |v: &serde_json::Value| v["tm"]["ports"][0]["tx_packets"].clone();
    assert_eq!(tm_tx(&v), 21);

    // A scoped clear leaves the other groups counting.
    let (status, _) = request(&addr, "POST", "/clear?scope=pfc,watermarks", "");
    assert_eq!(status, 200);
    let (_, j) = request(&addr, "GET", "/stats", "");
    let v: serde_json::Value = serde_json::from_str(&j).unwrap();
    assert_eq!(v["engine"]["parser_errors"], 1);
    assert_eq!(v["switch"]["tx_frames"]["0"], 21);
    assert_eq!(tm_tx(&v), 21);
    let (status, _) = request(&addr, "POST", "/clear?scope=ports", "");
    assert_eq!(status, 200);
    let (_, j) = request(&addr, "GET", "/stats", "");
    let v: serde_json::Value = serde_json::from_str(&j).unwrap();
    assert_eq!(v["engine"]["parser_errors"], 0);
    assert_eq!(tm_tx(&v), 0);
    let (status, body) = request(&addr, "POST", "/clear?scope=ports,everything", "");
    assert_eq!(status, 400);
    assert!(
        body.contains("unknown clear scope \"everything\""),
        "{body}"
    );

    let (status, _) = request(&addr, "POST", "/clear", "");
    assert_eq!(status, 200);
    let (_, j) = request(&addr, "GET", "/stats", "");
    let v: serde_json::Value = serde_json::from_str(&j).unwrap();
    assert_eq!(v["engine"]["parser_errors"], 0);
    assert_eq!(
        v["switch"]["tx_frames"].as_object().map(|m| m.len()),
        Some(0)
    );

    let (status, body) = request(
        &addr,
        "PUT",
        "/ports/0",
        "{\"rate_bps\": 25000000000, \"mtu\": 9100}",
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = request(&addr, "GET", "/ports/0", "");
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["rate_bps"], 25_000_000_000u64);
    assert_eq!(v["mtu"], 9100);
    let (status, body) = request(&addr, "PUT", "/ports/0", "rate_bps: 0\n");
    assert_eq!(status, 400);
    assert!(body.contains("rate_bps"), "{body}");
    let (status, body) = request(&addr, "PUT", "/ports/0", "port: 3\nrate_bps: 1000\n");
    assert_eq!(status, 400);
    assert!(body.contains("differs"), "{body}");
    let (status, _) = request(&addr, "GET", "/ports/x", "");
    assert_eq!(status, 404);
    let (status, body) = request(&addr, "GET", "/ports", "");
    assert_eq!(status, 200);
    assert!(body.contains("25000000000"), "{body}");
    // JSON as the controller sends it: pfc_to_queue's keys are strings.
    let (status, body) = request(
        &addr,
        "PUT",
        "/ports/0",
        "{\"port\": 0, \"rate_bps\": 1000000000, \"pfc_enable\": [3], \"pfc_to_queue\": {\"3\": 5}}",
    );
    assert_eq!(status, 200, "{body}");
    let (_, body) = request(&addr, "GET", "/ports/0", "");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["pfc_to_queue"]["3"], 5, "{body}");
    rt.shutdown();
    drop(server);
}
