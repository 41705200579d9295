//! Packets per second of the engine in process, no I/O: an L3 program (LPM + ECMP action
//! selector + MAC/TTL rewrite + IPv4 checksum) beside a no-op forwarder as the ceiling.
//!
//! `--packets N` runs each case for N packets instead of SECONDS: a fixed amount of work, for an
//! instruction count per packet under callgrind (`Switch::process`, `ingress`, `egress`).
//!
//! `cargo run --release -p switch-v1model --example switch-v1model-bench -- OUT.json
//! [SECONDS | --packets N]`

use std::time::{Duration, Instant};
use switch_v1model::{FieldMatch, Output, QueueMeta, Switch, SwitchConfig};

fn load(rel: &str) -> Switch {
    let path = format!("{}/tests/{rel}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    Switch::from_json(&text, SwitchConfig::default()).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn ipv4(src: u32, dst: u32) -> Vec<u8> {
    let mut p = vec![0, 0, 0, 0, 0xaa, 0xaa, 0, 0, 0, 0, 0x0b, 0xbb, 0x08, 0x00];
    p.extend_from_slice(&[0x45, 0, 0, 46, 0, 0, 0, 0, 64, 17, 0, 0]);
    p.extend_from_slice(&src.to_be_bytes());
    p.extend_from_slice(&dst.to_be_bytes());
    p.resize(64, 0);
    p
}

/// How long each case runs.
#[derive(Clone, Copy)]
enum Limit {
    Secs(f64),
    Packets(u64),
}

/// Runs `f` over the packets until the limit; returns packets per second and the count.
fn measure(limit: Limit, packets: &[Vec<u8>], mut f: impl FnMut(&[u8], u64)) -> (f64, u64) {
    let start = Instant::now();
    let mut n = 0u64;
    match limit {
        Limit::Secs(secs) => {
            let limit = Duration::from_secs_f64(secs);
            while start.elapsed() < limit {
                for p in packets {
                    f(p, n);
                    n += 1;
                }
            }
        }
        Limit::Packets(count) => {
            for p in packets.iter().cycle().take(count as usize) {
                f(p, n);
                n += 1;
            }
        }
    }
    (n as f64 / start.elapsed().as_secs_f64(), n)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = || -> ! {
        eprintln!("usage: bench OUT.json [SECONDS | --packets N]");
        std::process::exit(2);
    };
    let (out_path, limit) = match args.as_slice() {
        [out] => (out, Limit::Secs(2.0)),
        [out, flag, n] if flag == "--packets" => match n.parse() {
            Ok(n) => (out, Limit::Packets(n)),
            Err(_) => usage(),
        },
        [out, secs] => match secs.parse() {
            Ok(s) => (out, Limit::Secs(s)),
            Err(_) => usage(),
        },
        _ => usage(),
    };

    let mut l3 = load("programs/ecmp.json");
    let mut members = Vec::new();
    for port in 1u8..=4 {
        members.push(
            l3.profile_add_member(
                "ingress.ecmp_ap",
                "ingress.set_nhop",
                &[vec![0, port], vec![0, 0, 0, 0, 0, port]],
            )
            .unwrap(),
        );
    }
    let group: Vec<(u32, u32)> = members.iter().map(|&m| (m, 1)).collect();
    l3.profile_set_group("ingress.ecmp_ap", 1, &group).unwrap();
    let routes = 10_000u32;
    for i in 0..routes {
        let prefix = (0x0a00_0000 | (i << 8)).to_be_bytes().to_vec();
        l3.table_add_group_entry(
            "ingress.ipv4_lpm",
            &[FieldMatch::Lpm {
                value: prefix,
                prefix_len: 24,
            }],
            None,
            1,
        )
        .unwrap();
    }
    let packets: Vec<Vec<u8>> = (0..4096u32)
        .map(|i| ipv4(0xc0a8_0000 + i, 0x0a00_0001 | ((i % routes) << 8)))
        .collect();

    let mut out: Vec<Output> = Vec::with_capacity(16);
    let (l3_pps, l3_n) = measure(limit, &packets, |p, t| {
        l3.process(0, p, t, &mut out);
        for o in out.drain(..) {
            l3.recycle_buffer(o.data);
        }
    });
    assert_eq!(
        l3.stats().transmitted,
        l3_n,
        "every L3 packet must be forwarded"
    );

    let mut jobs = Vec::with_capacity(16);
    let mut more = Vec::new();
    let (split_pps, _) = measure(limit, &packets, |p, t| {
        l3.ingress(0, p, t, &mut jobs);
        for j in jobs.drain(..) {
            if let Some(o) = l3.egress(j, QueueMeta::default(), t, &mut more) {
                l3.recycle_buffer(o.data);
            }
        }
    });

    let mut noop = load("programs/noop.json");
    let (noop_pps, _) = measure(limit, &packets, |p, t| {
        noop.process(0, p, t, &mut out);
        for o in out.drain(..) {
            noop.recycle_buffer(o.data);
        }
    });

    let case_limit = match limit {
        Limit::Secs(s) => format!("\"seconds_per_case\": {s}"),
        Limit::Packets(n) => format!("\"packets_per_case\": {n}"),
    };
    let json = format!(
        "{{\n  \"bench\": \"switch-v1model in-process\",\n  \"packet_bytes\": 64,\n  \"l3_routes\": {routes},\n  \"ecmp_members\": 4,\n  \"l3_process_pps\": {l3_pps:.0},\n  \"l3_ingress_egress_pps\": {split_pps:.0},\n  \"noop_process_pps\": {noop_pps:.0},\n  {case_limit}\n}}\n"
    );
    print!("{json}");
    if let Err(e) = std::fs::write(out_path, json) {
        eprintln!("bench: {out_path}: {e}");
        std::process::exit(1);
    }
}
