//! Property test: one million random and mutated packets through every parser state of the
//! parser test program (and the L3 program) without a panic, every parser error path taken.

mod common;

use common::Rng;
use std::collections::BTreeSet;
use switch_v1model::{Output, Switch, SwitchConfig};

fn load(rel: &str) -> Switch {
    let path = format!("{}/tests/{rel}", env!("CARGO_MANIFEST_DIR"));
    Switch::from_json(
        &std::fs::read_to_string(path).unwrap(),
        SwitchConfig::default(),
    )
    .unwrap()
}

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn mutate(rng: &mut Rng, seed: &[u8], buf: &mut Vec<u8>) {
    buf.clear();
    match rng.below(5) {
        0 => {
            let n = rng.below(64);
            buf.extend((0..n).map(|_| rng.next() as u8));
        }
        1 => {
            buf.extend_from_slice(seed);
            let cut = rng.below(seed.len() + 1);
            buf.truncate(cut);
        }
        _ => {
            buf.extend_from_slice(seed);
            for _ in 0..1 + rng.below(3) {
                if buf.is_empty() {
                    break;
                }
                let i = rng.below(buf.len());
                buf[i] ^= 1 << rng.below(8);
            }
            if rng.below(4) == 0 {
                let n = rng.below(8);
                buf.extend((0..n).map(|_| rng.next() as u8));
            }
        }
    }
}

#[test]
fn a_million_mutated_packets_never_panic() {
    const ETH: &str = "000000000001 000000000002";
    let parser_seeds: Vec<Vec<u8>> = [
        "88b5 0101 0201 0300 ffff",
        "88b5 0101 0201 0301 0400",
        "88b6 02 aabb cc",
        "88b6 03 aabbcc dd",
        "88b6 05 1122334455",
        "88b7 2199 0a00 77",
        "88b7 3099 5555",
        "0800 45",
    ]
    .iter()
    .map(|s| hex(&format!("{ETH} {s}")))
    .collect();
    let l3_seeds = [hex(
        "00000000aaaa 000000000bbb 0800 45000014 00000000 40060000 c0a80001 0a010203",
    )];

    let mut parser = load("stf/parser.json");
    parser.parse_vset_add("pvs", &[0x30]).unwrap();
    let mut l3 = load("stf/l3.json");
    l3.table_add(
        "ingress.ipv4_lpm",
        vec![switch_v1model::FieldMatch::Lpm {
            value: vec![10, 0, 0, 0],
            prefix_len: 8,
        }],
        None,
        "ingress.set_nhop",
        &[vec![0, 1], vec![0, 0, 0, 0, 0, 1]],
    )
    .unwrap();

    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let mut buf = Vec::new();
    let mut out: Vec<Output> = Vec::new();
    let mut errors_seen = BTreeSet::new();
    let mut lookahead_seen = false;
    let total = 1_000_000u64;
    for i in 0..total {
        out.clear();
        if i % 4 == 3 {
            let seed = &l3_seeds[0];
            mutate(&mut rng, seed, &mut buf);
            l3.process(0, &buf, i, &mut out);
        } else {
            let seed = &parser_seeds[rng.below(parser_seeds.len())];
            mutate(&mut rng, seed, &mut buf);
            parser.process(rng.below(4) as u32, &buf, i, &mut out);
            for o in &out {
                // Output starts with ethernet and `out` when the Ethernet header parsed.
                if o.data.len() >= 21 && buf.len() >= 14 {
                    errors_seen.insert(u32::from_be_bytes([
                        o.data[14], o.data[15], o.data[16], o.data[17],
                    ]));
                    lookahead_seen |= o.data[18] == 0x30 && o.data[19] == 0x99;
                } else if o.data.len() >= 7 && buf.len() < 14 {
                    errors_seen.insert(u32::from_be_bytes([
                        o.data[0], o.data[1], o.data[2], o.data[3],
                    ]));
                }
            }
        }
    }
    // NoError, PacketTooShort, StackOutOfBounds, HeaderTooShort, BadLen (the program's values).
    for e in [0, 1, 3, 4, 7] {
        assert!(
            errors_seen.contains(&e),
            "parser error {e} never seen: {errors_seen:?}"
        );
    }
    assert!(lookahead_seen, "the value-set state was never reached");
    let (ps, ls) = (parser.stats(), l3.stats());
    assert_eq!(ps.received + ls.received, total);
    assert!(ps.parser_errors > 0 && ls.parser_errors > 0);
    assert!(ls.transmitted > 0);
}

#[test]
fn random_packets_through_every_test_program_never_panic() {
    let mut rng = Rng(0x0dd_ba11_cafe_f00d);
    let mut buf = Vec::new();
    let mut out: Vec<Output> = Vec::new();
    for name in [
        "exprs", "headers", "hashes", "checksum", "externs", "tables", "v1model",
    ] {
        let mut sw = load(&format!("stf/{name}.json"));
        // Install an entry for every action of every keyed table, so every action runs.
        for t in sw.tables() {
            for (i, a) in t.actions.iter().enumerate() {
                let matches: Vec<_> = t
                    .keys
                    .iter()
                    .map(|k| {
                        let mut v = vec![0u8; k.width.div_ceil(8) as usize];
                        if let Some(last) = v.last_mut() {
                            *last = i as u8 + 1;
                        }
                        switch_v1model::FieldMatch::Exact(v)
                    })
                    .collect();
                let all_exact = t
                    .keys
                    .iter()
                    .all(|k| k.match_type == switch_v1model::MatchType::Exact);
                if matches.is_empty() || !all_exact {
                    continue;
                }
                let args: Vec<Vec<u8>> = a
                    .params
                    .iter()
                    .map(|(_, w)| vec![0u8; w.div_ceil(8) as usize])
                    .collect();
                let _ = sw.table_add(&t.name, matches, None, &a.name, &args);
            }
        }
        let _ = sw.mirroring_add(
            5,
            switch_v1model::MirrorSession {
                port: Some(2),
                mgrp: Some(1),
                ..Default::default()
            },
        );
        let _ = sw.mc_mgrp_create(1);
        let n = sw.mc_node_create(1, &[1, 2, 3]);
        let _ = sw.mc_node_associate(1, n);
        for i in 0..50_000u64 {
            buf.clear();
            let len = rng.below(96);
            buf.extend((0..len).map(|_| rng.next() as u8));
            if !buf.is_empty() {
                buf[0] = rng.below(10) as u8;
            }
            out.clear();
            sw.process(rng.below(8) as u32, &buf, i, &mut out);
        }
        assert_eq!(sw.stats().received, 50_000, "{name}");
    }
}
