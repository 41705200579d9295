//! Randomized comparison of `Table::lookup` and `Table::lookup_packed` with a linear scan that
//! applies the matching rules field by field, over thousands of inserts, deletes and lookups
//! per table kind. Field widths stay below 64 bits so the oracle can work on `u64`.

use fastrand::Rng;
use switch_tables::{
    EntryHandle, FieldMatch, KeyField, MatchKind, Table, TableError, MAX_PACKED_KEY,
};

fn nbytes(width: u32) -> usize {
    width.div_ceil(8) as usize
}

fn to_bytes(v: u64, width: u32) -> Vec<u8> {
    let n = nbytes(width);
    v.to_be_bytes()[8 - n..].to_vec()
}

fn from_bytes(b: &[u8]) -> u64 {
    b.iter().fold(0, |acc, &x| (acc << 8) | u64::from(x))
}

fn field_mask(width: u32) -> u64 {
    (1u64 << width) - 1
}

/// The bits of a field's first byte above its width.
fn above_width(width: u32) -> u8 {
    match width % 8 {
        0 => 0,
        r => !((1u8 << r) - 1),
    }
}

fn prefix_mask(width: u32, len: u32) -> u64 {
    if len == 0 {
        0
    } else {
        field_mask(width) & !((1u64 << (width - len)) - 1)
    }
}

/// A value from a small space, so that random keys often hit.
fn small_value(rng: &mut Rng, width: u32) -> u64 {
    let v = rng.u64(..) & field_mask(width);
    // On wide fields keep 16 distinct values: the two top and the two bottom bits vary.
    if width > 6 {
        v & (0b11 | (0b11 << (width - 2)))
    } else {
        v
    }
}

fn random_match(rng: &mut Rng, k: &KeyField) -> FieldMatch {
    let w = k.width;
    match k.kind {
        MatchKind::Exact => FieldMatch::Exact(to_bytes(small_value(rng, w), w)),
        MatchKind::Lpm => {
            let len = rng.u32(0..=w);
            FieldMatch::Lpm {
                value: to_bytes(small_value(rng, w) & prefix_mask(w, len), w),
                prefix_len: len,
            }
        }
        MatchKind::Ternary => {
            // A handful of masks, as ACLs have.
            let masks = [
                0,
                field_mask(w),
                prefix_mask(w, w / 2),
                0b1010_0101 & field_mask(w),
            ];
            let mask = masks[rng.usize(..masks.len())];
            FieldMatch::Ternary {
                value: to_bytes(small_value(rng, w) & mask, w),
                mask: to_bytes(mask, w),
            }
        }
        MatchKind::Range => {
            let a = small_value(rng, w);
            let b = small_value(rng, w);
            FieldMatch::Range {
                low: to_bytes(a.min(b), w),
                high: to_bytes(a.max(b), w),
            }
        }
        MatchKind::Optional => {
            if rng.bool() {
                FieldMatch::Optional(None)
            } else {
                FieldMatch::Optional(Some(to_bytes(small_value(rng, w), w)))
            }
        }
    }
}

fn field_matches(m: &FieldMatch, k: &KeyField, key: u64) -> bool {
    let w = k.width;
    match m {
        FieldMatch::Exact(v) => from_bytes(v) == key,
        FieldMatch::Lpm { value, prefix_len } => {
            key & prefix_mask(w, *prefix_len) == from_bytes(value)
        }
        FieldMatch::Ternary { value, mask } => key & from_bytes(mask) == from_bytes(value),
        FieldMatch::Range { low, high } => (from_bytes(low)..=from_bytes(high)).contains(&key),
        FieldMatch::Optional(None) => true,
        FieldMatch::Optional(Some(v)) => from_bytes(v) == key,
    }
}

struct Oracle {
    keys: Vec<KeyField>,
    entries: Vec<(EntryHandle, Vec<FieldMatch>, Option<i32>, u32)>,
}

impl Oracle {
    fn lookup(&self, fields: &[u64]) -> Option<(EntryHandle, u32)> {
        let matching = self.entries.iter().filter(|(_, ms, _, _)| {
            ms.iter()
                .zip(&self.keys)
                .zip(fields)
                .all(|((m, k), &f)| field_matches(m, k, f))
        });
        let rank = |(h, ms, p, _): &&(EntryHandle, Vec<FieldMatch>, Option<i32>, u32)| {
            let prefix: u32 = ms
                .iter()
                .map(|m| match m {
                    FieldMatch::Lpm { prefix_len, .. } => *prefix_len,
                    _ => 0,
                })
                .sum();
            match p {
                // Highest priority, then lowest handle.
                Some(p) => (i64::from(*p), i64::from(u32::MAX - h.0)),
                None => (i64::from(prefix), 0),
            }
        };
        matching.max_by_key(rank).map(|(h, _, _, v)| (*h, *v))
    }
}

fn run(keys: Vec<KeyField>, seed: u64, entries: usize, rounds: usize) {
    let mut rng = Rng::with_seed(seed);
    let mut t = Table::new(keys.clone(), entries).unwrap();
    let needs_priority = t.needs_priority();
    let mut o = Oracle {
        keys: keys.clone(),
        entries: Vec::new(),
    };
    let mut next_value = 0u32;
    let mut lookups = 0;
    let mut packed_lookups = 0;
    let mut hits = 0;
    for _ in 0..rounds {
        // Mostly inserts until near full, then a mix with deletes.
        if !o.entries.is_empty() && (o.entries.len() >= entries * 9 / 10 || rng.u8(..4) == 0) {
            let i = rng.usize(..o.entries.len());
            let (h, ms, p, v) = o.entries.swap_remove(i);
            assert_eq!(t.find(&ms, p), Some(h));
            assert_eq!(t.delete(h), Ok(v));
            assert_eq!(t.find(&ms, p), None);
        } else {
            let ms: Vec<FieldMatch> = keys.iter().map(|k| random_match(&mut rng, k)).collect();
            let p = needs_priority.then(|| rng.i32(1..=8));
            let v = next_value;
            next_value += 1;
            let existing = o
                .entries
                .iter()
                .find(|(_, m, q, _)| *m == ms && *q == p)
                .map(|e| e.0);
            match t.insert(&ms, p, v) {
                Ok(h) => {
                    assert_eq!(existing, None);
                    assert!(
                        o.entries.iter().all(|e| e.0 != h),
                        "handle {h:?} reused while live"
                    );
                    o.entries.push((h, ms, p, v));
                }
                Err(TableError::Duplicate { existing: h }) => assert_eq!(existing, Some(h)),
                Err(e) => panic!("unexpected error {e}"),
            }
        }
        assert_eq!(t.len(), o.entries.len());
        for _ in 0..4 {
            let fields: Vec<u64> = keys
                .iter()
                .map(|k| small_value(&mut rng, k.width))
                .collect();
            let key: Vec<u8> = keys
                .iter()
                .zip(&fields)
                .flat_map(|(k, &f)| to_bytes(f, k.width))
                .collect();
            let got = t.lookup(&key).map(|(h, v)| (h, *v));
            let want = o.lookup(&fields);
            assert_eq!(got, want, "key {key:02x?}");
            // Bits above each field's width are not part of the key.
            let mut junk = key.clone();
            let mut at = 0;
            for k in &keys {
                junk[at] |= rng.u8(..) & above_width(k.width);
                at += nbytes(k.width);
            }
            let got = t.lookup(&junk).map(|(h, v)| (h, *v));
            assert_eq!(got, want, "key {junk:02x?}");
            if key.len() <= MAX_PACKED_KEY {
                // The key as one number, with bits above it set too (ignored as well).
                let above = if key.len() < 16 {
                    rng.u128(..) << (8 * key.len())
                } else {
                    0
                };
                let packed = junk.iter().fold(0u128, |a, &b| (a << 8) | u128::from(b)) | above;
                let got = t.lookup_packed(packed).map(|(h, v)| (h, *v));
                assert_eq!(got, want, "packed key {packed:#x}");
                packed_lookups += 1;
            } else {
                assert_eq!(t.lookup_packed(0), None, "a long key is never packed");
            }
            lookups += 1;
            hits += usize::from(want.is_some());
        }
    }
    // The test is only meaningful if lookups both hit and miss.
    assert!(
        hits > lookups / 10 && hits < lookups,
        "{hits} hits of {lookups}"
    );
    let key_len: usize = keys.iter().map(|k| nbytes(k.width)).sum();
    assert_eq!(packed_lookups > 0, key_len <= MAX_PACKED_KEY);
}

fn k(kind: MatchKind, width: u32) -> KeyField {
    KeyField { kind, width }
}

#[test]
fn exact_matches_oracle() {
    run(
        vec![k(MatchKind::Exact, 7), k(MatchKind::Exact, 12)],
        1,
        2000,
        6000,
    );
}

#[test]
fn lpm_matches_oracle() {
    run(
        vec![k(MatchKind::Exact, 2), k(MatchKind::Lpm, 20)],
        2,
        2000,
        6000,
    );
}

#[test]
fn ternary_matches_oracle() {
    run(
        vec![k(MatchKind::Ternary, 10), k(MatchKind::Ternary, 8)],
        3,
        1500,
        5000,
    );
}

#[test]
fn range_matches_oracle() {
    run(
        vec![k(MatchKind::Range, 16), k(MatchKind::Exact, 2)],
        4,
        1500,
        5000,
    );
}

#[test]
fn mixed_priority_table_matches_oracle() {
    run(
        vec![
            k(MatchKind::Lpm, 12),
            k(MatchKind::Ternary, 8),
            k(MatchKind::Range, 9),
            k(MatchKind::Optional, 3),
            k(MatchKind::Exact, 1),
        ],
        5,
        1500,
        5000,
    );
}

#[test]
fn narrow_lpm_after_exact_matches_oracle() {
    // LPM narrower than the 16 bucket bits, placed before an exact field.
    run(
        vec![k(MatchKind::Lpm, 12), k(MatchKind::Exact, 3)],
        6,
        1500,
        5000,
    );
}

#[test]
fn lpm_fields_of_one_to_eight_bits_match_oracle() {
    for (i, width) in [1, 5, 8].into_iter().enumerate() {
        run(
            vec![k(MatchKind::Exact, 3), k(MatchKind::Lpm, width)],
            20 + i as u64,
            200,
            3000,
        );
    }
}

#[test]
fn long_keys_match_oracle() {
    // Keys over 16 bytes take the byte-slice maps instead of packed u128 keys.
    run(
        vec![
            k(MatchKind::Exact, 60),
            k(MatchKind::Exact, 40),
            k(MatchKind::Lpm, 60),
        ],
        7,
        1500,
        5000,
    );
    run(
        vec![
            k(MatchKind::Ternary, 60),
            k(MatchKind::Range, 60),
            k(MatchKind::Optional, 20),
        ],
        8,
        1500,
        5000,
    );
}

#[test]
fn mid_length_keys_match_oracle() {
    // Keys of 9 to 16 bytes are packed into u128 (up to 8 bytes: u64).
    run(
        vec![k(MatchKind::Exact, 60), k(MatchKind::Lpm, 20)],
        9,
        1500,
        5000,
    );
    run(
        vec![
            k(MatchKind::Ternary, 60),
            k(MatchKind::Range, 16),
            k(MatchKind::Exact, 2),
        ],
        10,
        1500,
        5000,
    );
}
