//! Malformed entries and keys (wrong lengths, kinds, prefix lengths, priorities) come back as
//! errors or misses, never as panics, and leave the table consistent.

use fastrand::Rng;
use switch_tables::{FieldMatch, KeyField, MatchKind, Table};

const KINDS: [MatchKind; 5] = [
    MatchKind::Exact,
    MatchKind::Lpm,
    MatchKind::Ternary,
    MatchKind::Range,
    MatchKind::Optional,
];

fn bytes(rng: &mut Rng) -> Vec<u8> {
    (0..rng.usize(0..5)).map(|_| rng.u8(..)).collect()
}

fn random_match(rng: &mut Rng) -> FieldMatch {
    match rng.u8(0..6) {
        0 => FieldMatch::Exact(bytes(rng)),
        1 => FieldMatch::Lpm {
            value: bytes(rng),
            prefix_len: rng.u32(0..40),
        },
        2 => FieldMatch::Ternary {
            value: bytes(rng),
            mask: bytes(rng),
        },
        3 => FieldMatch::Range {
            low: bytes(rng),
            high: bytes(rng),
        },
        4 => FieldMatch::Optional(None),
        _ => FieldMatch::Optional(Some(bytes(rng))),
    }
}

#[test]
fn random_garbage_never_panics() {
    let mut rng = Rng::with_seed(99);
    let mut accepted = 0;
    for _ in 0..300 {
        let keys: Vec<KeyField> = (0..rng.usize(0..4))
            .map(|_| KeyField {
                kind: KINDS[rng.usize(..KINDS.len())],
                width: rng.u32(0..34),
            })
            .collect();
        let Ok(mut t) = Table::new(keys, 16) else {
            continue;
        };
        for _ in 0..200 {
            let mut ms: Vec<FieldMatch> = (0..rng.usize(0..4))
                .map(|_| random_match(&mut rng))
                .collect();
            let priority = match rng.u8(0..3) {
                0 => None,
                1 => Some(rng.i32(..)),
                _ => Some(rng.i32(1..10)),
            };
            if rng.bool() {
                t.canonicalize_like_bmv2(&mut ms);
            }
            let found = t.find(&ms, priority);
            match t.insert(&ms, priority, ()) {
                Ok(h) => {
                    accepted += 1;
                    assert_eq!(found, None);
                    assert_eq!(t.find(&ms, priority), Some(h));
                    if rng.bool() {
                        t.delete(h).unwrap();
                    }
                }
                Err(e) => assert!(!e.to_string().is_empty()),
            }
            let key = bytes(&mut rng);
            let _ = t.lookup(&key);
            let full: Vec<u8> = (0..t.key_len()).map(|_| rng.u8(..)).collect();
            let _ = t.lookup(&full);
        }
        assert_eq!(t.len(), t.iter().count());
    }
    // The generator must produce valid entries too, or this tests only the error paths.
    assert!(accepted > 100, "only {accepted} entries accepted");
}
