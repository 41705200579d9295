//! Table benchmark: `cargo run --release -p switch-tables --example switch-tables-bench -- OUT.json`.
//! Single-thread lookups per second for route, exact and ACL tables of realistic sizes, and the
//! insert rate of a full IPv4 route table. Keys are generated with a fixed seed. Rates are per
//! second of this thread's CPU time (Linux schedstat), so other load on the machine skews them
//! less than wall time would; elsewhere wall time is used.

use std::hint::black_box;
use std::time::Instant;

/// Nanoseconds this thread has run on a CPU, where Linux reports it.
fn cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// Times `f` in seconds: thread CPU time where available, else wall time.
fn timed(f: impl FnOnce()) -> f64 {
    let (wall, cpu) = (Instant::now(), cpu_ns());
    f();
    match (cpu, cpu_ns()) {
        (Some(a), Some(b)) if b > a => (b - a) as f64 / 1e9,
        _ => wall.elapsed().as_secs_f64(),
    }
}

use fastrand::Rng;
use serde_json::json;
use switch_tables::{FieldMatch, KeyField, MatchKind, Table};

const LOOKUPS: usize = 2_000_000;

fn prefix_mask(bytes: &mut [u8], len: u32) {
    for (i, b) in bytes.iter_mut().enumerate() {
        let start = i as u32 * 8;
        *b &= match len.saturating_sub(start) {
            0 => 0,
            n if n >= 8 => 0xff,
            n => !(0xffu8 >> n),
        };
    }
}

/// Prefix lengths of a full IPv4 table, roughly as in the public BGP table (/24 most common).
fn ipv4_len(rng: &mut Rng) -> u32 {
    match rng.u32(..100) {
        0..=57 => 24,
        58..=67 => 22,
        68..=77 => 23,
        78..=82 => 21,
        83..=87 => 20,
        88..=97 => rng.u32(16..=19),
        98 => rng.u32(8..=15),
        _ => rng.u32(25..=32),
    }
}

fn ipv6_len(rng: &mut Rng) -> u32 {
    match rng.u32(..10) {
        0..=4 => 64,
        5..=7 => 128,
        _ => rng.u32(65..=127),
    }
}

/// A route's value and prefix length.
type Prefix = (Vec<u8>, u32);

/// Installs `n` random routes; returns the table, the prefixes and the insert rate.
fn routes(
    rng: &mut Rng,
    bytes: usize,
    n: usize,
    len: fn(&mut Rng) -> u32,
) -> (Table<u32>, Vec<Prefix>, f64) {
    let mut t = Table::new(
        vec![KeyField {
            kind: MatchKind::Lpm,
            width: bytes as u32 * 8,
        }],
        n + 1,
    )
    .expect("valid key");
    let mut prefixes = Vec::with_capacity(n);
    let mut entries = Vec::with_capacity(n);
    while entries.len() < n {
        let l = len(rng);
        let mut v: Vec<u8> = (0..bytes).map(|_| rng.u8(..)).collect();
        prefix_mask(&mut v, l);
        entries.push((v, l));
    }
    let mut installed = 0usize;
    let secs = timed(|| {
        for (i, (v, l)) in entries.into_iter().enumerate() {
            let m = vec![FieldMatch::Lpm {
                value: v.clone(),
                prefix_len: l,
            }];
            if t.insert(&m, None, i as u32).is_ok() {
                installed += 1;
                prefixes.push((v, l));
            }
        }
    });
    let rate = installed as f64 / secs;
    t.insert(
        &[FieldMatch::Lpm {
            value: vec![0; bytes],
            prefix_len: 0,
        }],
        None,
        u32::MAX,
    )
    .expect("default route");
    (t, prefixes, rate)
}

/// Lookups per second over `keys` (cycled), with the share that hit (1.0 where the table has
/// a default route or a catch-all entry, as the route and ACL tables here do).
fn measure(t: &Table<u32>, keys: &[Vec<u8>]) -> (f64, f64) {
    let mut hits = 0usize;
    let secs = timed(|| {
        for i in 0..LOOKUPS {
            if black_box(t.lookup(black_box(&keys[i % keys.len()]))).is_some() {
                hits += 1;
            }
        }
    });
    (LOOKUPS as f64 / secs, hits as f64 / LOOKUPS as f64)
}

/// Addresses inside installed prefixes (random host bits), plus 10 % random addresses that
/// mostly fall through to short prefixes or the default route.
fn addresses(rng: &mut Rng, prefixes: &[Prefix]) -> Vec<Vec<u8>> {
    (0..65_536)
        .map(|i| {
            let (p, len) = &prefixes[rng.usize(..prefixes.len())];
            let host: Vec<u8> = p.iter().map(|_| rng.u8(..)).collect();
            if i % 10 != 0 {
                let mut net_bits = vec![0xffu8; p.len()];
                prefix_mask(&mut net_bits, *len);
                p.iter()
                    .zip(&net_bits)
                    .zip(&host)
                    .map(|((p, n), h)| p | (h & !n))
                    .collect()
            } else {
                host
            }
        })
        .collect()
}

fn main() {
    let out = std::env::args().nth(1);
    let mut rng = Rng::with_seed(0x5eed);

    let (v4, v4_prefixes, v4_insert) = routes(&mut rng, 4, 200_000, ipv4_len);
    let v4_keys = addresses(&mut rng, &v4_prefixes);
    let (v4_rate, v4_hit) = measure(&v4, &v4_keys);

    let (v6, v6_prefixes, v6_insert) = routes(&mut rng, 16, 65_000, ipv6_len);
    let v6_keys = addresses(&mut rng, &v6_prefixes);
    let (v6_rate, v6_hit) = measure(&v6, &v6_keys);

    // 32k exact entries: (MAC, VLAN) -> port.
    let mut ex = Table::new(
        vec![
            KeyField {
                kind: MatchKind::Exact,
                width: 48,
            },
            KeyField {
                kind: MatchKind::Exact,
                width: 12,
            },
        ],
        32_768,
    )
    .expect("valid key");
    let mut ex_keys = Vec::new();
    while ex.len() < 32_768 {
        let mac: Vec<u8> = (0..6).map(|_| rng.u8(..)).collect();
        let vlan = vec![rng.u8(..16), rng.u8(..)];
        let mut k = mac.clone();
        k.extend(&vlan);
        if ex
            .insert(
                &[FieldMatch::Exact(mac), FieldMatch::Exact(vlan)],
                None,
                ex.len() as u32,
            )
            .is_ok()
        {
            ex_keys.push(k);
        }
    }
    let (ex_rate, ex_hit) = measure(&ex, &ex_keys);

    // 1k ACL entries over a 5-tuple with 16 distinct masks.
    let widths = [32u32, 32, 8, 16, 16];
    let mut acl = Table::new(
        widths
            .iter()
            .map(|&width| KeyField {
                kind: MatchKind::Ternary,
                width,
            })
            .collect(),
        1024,
    )
    .expect("valid key");
    let masks: Vec<Vec<Vec<u8>>> = (0..16u32)
        .map(|m| {
            widths
                .iter()
                .enumerate()
                .map(|(f, &w)| {
                    let n = (w / 8) as usize;
                    // Bit f of m: field matched (prefix of varying length) or wildcarded.
                    if m & (1 << (f % 4)) != 0 || (f == 4 && m >= 8) {
                        let mut v = vec![0xff; n];
                        prefix_mask(&mut v, w - (m % 3) * 8);
                        v
                    } else {
                        vec![0; n]
                    }
                })
                .collect()
        })
        .collect();
    let mut acl_values: Vec<Vec<Vec<u8>>> = Vec::new();
    while acl.len() < 1024 {
        let mask = &masks[rng.usize(..masks.len())];
        let value: Vec<Vec<u8>> = mask
            .iter()
            .map(|m| m.iter().map(|b| b & rng.u8(..)).collect())
            .collect();
        let ms: Vec<FieldMatch> = value
            .iter()
            .zip(mask)
            .map(|(v, m)| FieldMatch::Ternary {
                value: v.clone(),
                mask: m.clone(),
            })
            .collect();
        if acl
            .insert(&ms, Some(rng.i32(1..=1000)), acl.len() as u32)
            .is_ok()
        {
            acl_values.push(value);
        }
    }
    let acl_keys: Vec<Vec<u8>> = (0..65_536)
        .map(|i| {
            if i % 2 == 0 {
                let v = &acl_values[rng.usize(..acl_values.len())];
                let mut k: Vec<u8> = v.concat();
                for b in &mut k {
                    *b |= rng.u8(..) & rng.u8(..) & rng.u8(..);
                }
                k
            } else {
                (0..13).map(|_| rng.u8(..)).collect()
            }
        })
        .collect();
    let (acl_rate, acl_hit) = measure(&acl, &acl_keys);

    let result = json!({
        "lookups_per_s": {
            "ipv4_lpm_200k": v4_rate.round(),
            "ipv6_lpm_65k": v6_rate.round(),
            "exact_32k": ex_rate.round(),
            "ternary_1k_16_masks": acl_rate.round(),
        },
        "hit_ratio": {
            "ipv4_lpm_200k": v4_hit,
            "ipv6_lpm_65k": v6_hit,
            "exact_32k": ex_hit,
            "ternary_1k_16_masks": acl_hit,
        },
        "inserts_per_s": {
            "ipv4_lpm_200k": v4_insert.round(),
            "ipv6_lpm_65k": v6_insert.round(),
        },
        "entries": {
            "ipv4_lpm": v4.len(),
            "ipv6_lpm": v6.len(),
            "exact": ex.len(),
            "ternary": acl.len(),
        },
        "lookups_per_measurement": LOOKUPS,
    });
    let text = serde_json::to_string_pretty(&result).expect("serializable");
    println!("{text}");
    if let Some(path) = out {
        if let Err(e) = std::fs::write(&path, text + "\n") {
            eprintln!("bench: cannot write {path}: {e}");
            std::process::exit(1);
        }
    }
}
