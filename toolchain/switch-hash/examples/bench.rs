//! Hash benchmark: `cargo run --release -p switch-hash --example switch-hash-bench -- OUT.json`.
//! Calls per second of each v1model algorithm on a 13-byte 5-tuple (ECMP), a 20-byte IPv4
//! header (checksum) and a 1500-byte payload, per second of thread CPU time where Linux
//! reports it (wall time elsewhere).

use std::hint::black_box;
use std::time::Instant;

use serde_json::{json, Map, Value};
use switch_hash::{Algorithm, RandomSource};

fn cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

fn timed(f: impl FnOnce()) -> f64 {
    let (wall, cpu) = (Instant::now(), cpu_ns());
    f();
    match (cpu, cpu_ns()) {
        (Some(a), Some(b)) if b > a => (b - a) as f64 / 1e9,
        _ => wall.elapsed().as_secs_f64(),
    }
}

fn main() {
    let out = std::env::args().nth(1);
    let r = RandomSource::new(3);
    let input = |n: usize| -> Vec<u8> { (0..n).map(|_| r.next() as u8).collect() };
    let sizes = [
        ("5tuple_13B", input(13)),
        ("ipv4_header_20B", input(20)),
        ("payload_1500B", input(1500)),
    ];
    let mut result = Map::new();
    for name in [
        "crc16",
        "crc32",
        "crc16_custom",
        "crc32_custom",
        "csum16",
        "xor16",
        "identity",
    ] {
        let algo = Algorithm::from_bmv2_name(name).expect("registered name");
        let mut per_size = Map::new();
        for (label, data) in &sizes {
            let calls = (20_000_000 / data.len()).max(10_000);
            let secs = timed(|| {
                for _ in 0..calls {
                    black_box(algo.compute(black_box(data)));
                }
            });
            per_size.insert(label.to_string(), json!((calls as f64 / secs).round()));
        }
        result.insert(name.to_string(), Value::Object(per_size));
    }
    let text =
        serde_json::to_string_pretty(&json!({ "calls_per_s": result })).expect("serializable");
    println!("{text}");
    if let Some(path) = out {
        if let Err(e) = std::fs::write(&path, text + "\n") {
            eprintln!("bench: cannot write {path}: {e}");
            std::process::exit(1);
        }
    }
}
