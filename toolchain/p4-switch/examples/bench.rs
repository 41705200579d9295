//! Packets/s through the dataplane core (ingress, TM, egress, transmit to a port that discards)
//! with the traffic manager shaping a 100 Gb/s port, beside the same without a traffic manager.
//! `cargo run --release -p p4-switch --example p4-switch-bench -- OUT.json [PACKETS]`
//!
//! The TM run uses a simulated clock advanced to each next event, so it measures the switch's
//! work per packet, not the line rate. Queue 0 only: the test programs do not set
//! `standard_metadata.priority`.

use p4_switch::core::Core;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;
use switch_engine::{Switch, SwitchConfig};
use switch_ports::{Port, PortError, Recv};

struct Discard;

impl Port for Discard {
    fn name(&self) -> &str {
        "discard"
    }
    fn send(&self, _frame: &[u8]) -> Result<(), PortError> {
        Ok(())
    }
    fn recv(&self, _buf: &mut [u8], _t: std::time::Duration) -> Result<Recv, PortError> {
        Ok(Recv::Closed)
    }
}

fn run(tm: bool, packets: u64) -> Result<f64, String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../switch-engine/tests/stf/l3.json"
    );
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let sw = Switch::from_json(&text, SwitchConfig::default()).map_err(|e| e.to_string())?;
    let mut ports: BTreeMap<u32, Arc<dyn Port>> = BTreeMap::new();
    ports.insert(0, Arc::new(Discard));
    ports.insert(1, Arc::new(Discard));
    let cfg = tm
        .then(|| {
            switch_tm::TmConfig::parse(
                "buffer: {total_bytes: 12582912, chip: trident3}\nports:\n  - {port: 0, rate_bps: 100000000000}\n",
                switch_tm::ConfigFormat::Yaml,
            )
        })
        .transpose()
        .map_err(|e| e.to_string())?;
    let mut core =
        Core::new(Some(sw), cfg, ports, SwitchConfig::default(), 0).map_err(|e| e.to_string())?;
    let mut frame = vec![0u8; 64];
    frame[12] = 0x08;
    frame[13] = 0x06;
    let mut now = 0u64;
    let start = Instant::now();
    for i in 0..packets {
        frame[0] = i as u8;
        core.receive(now, 1, &frame);
        if let Some(t) = core.run_due(now) {
            now = now.max(t);
        }
    }
    while let Some(t) = core.run_due(now) {
        now = t;
    }
    let secs = start.elapsed().as_secs_f64();
    let sent: u64 = core.counters().tx_frames.values().sum();
    if sent != packets {
        return Err(format!("sent {sent} of {packets} packets"));
    }
    Ok(packets as f64 / secs)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(out) = args.next() else {
        eprintln!("usage: bench OUT.json [PACKETS]");
        std::process::exit(2);
    };
    let packets = args
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2_000_000u64);
    let result = run(false, packets).and_then(|no_tm| Ok((no_tm, run(true, packets)?)));
    match result {
        Ok((no_tm, with_tm)) => {
            let doc = serde_json::json!({
                "program": "switch-engine/tests/stf/l3.json (non-IPv4 path)",
                "frame_bytes": 64,
                "packets": packets,
                "pps_without_tm": no_tm.round(),
                "pps_with_tm_100g_port": with_tm.round(),
            });
            let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
            println!("{text}");
            if let Err(e) = std::fs::write(&out, text) {
                eprintln!("{out}: {e}");
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprintln!("bench: {e}");
            std::process::exit(1);
        }
    }
}
