use switch_tables::{EntryHandle, FieldMatch, KeyField, MatchKind, Table, TableError};

fn key(kind: MatchKind, width: u32) -> KeyField {
    KeyField { kind, width }
}

fn ipv4(a: u8, b: u8, c: u8, d: u8) -> Vec<u8> {
    vec![a, b, c, d]
}

fn lpm(value: Vec<u8>, prefix_len: u32) -> FieldMatch {
    FieldMatch::Lpm { value, prefix_len }
}

fn tern(value: Vec<u8>, mask: Vec<u8>) -> FieldMatch {
    FieldMatch::Ternary { value, mask }
}

fn range(low: Vec<u8>, high: Vec<u8>) -> FieldMatch {
    FieldMatch::Range { low, high }
}

fn hit<V: Copy>(t: &Table<V>, k: &[u8]) -> Option<V> {
    t.lookup(k).map(|(_, v)| *v)
}

#[test]
fn exact_table_hits_only_equal_keys() {
    let mut t = Table::new(
        vec![key(MatchKind::Exact, 48), key(MatchKind::Exact, 12)],
        8,
    )
    .unwrap();
    assert!(!t.needs_priority());
    assert_eq!(t.key_len(), 8);
    let mac = vec![0, 1, 2, 3, 4, 5];
    let h = t
        .insert(
            &[
                FieldMatch::Exact(mac.clone()),
                FieldMatch::Exact(vec![0x0f, 0xff]),
            ],
            None,
            7,
        )
        .unwrap();
    let mut k = mac.clone();
    k.extend([0x0f, 0xff]);
    assert_eq!(t.lookup(&k), Some((h, &7)));
    // Bits above the 12-bit width are ignored in lookup keys.
    k[6] = 0xff;
    assert_eq!(hit(&t, &k), Some(7));
    k[7] = 0xfe;
    assert_eq!(hit(&t, &k), None);
    // Wrong key length matches nothing.
    assert_eq!(hit(&t, &k[..7]), None);
}

#[test]
fn lpm_longest_prefix_wins_including_default_and_host_routes() {
    let mut t = Table::new(vec![key(MatchKind::Lpm, 32)], 16).unwrap();
    t.insert(&[lpm(ipv4(0, 0, 0, 0), 0)], None, 0).unwrap();
    t.insert(&[lpm(ipv4(10, 0, 0, 0), 8)], None, 8).unwrap();
    t.insert(&[lpm(ipv4(10, 1, 0, 0), 16)], None, 16).unwrap();
    t.insert(&[lpm(ipv4(10, 1, 2, 0), 24)], None, 24).unwrap();
    t.insert(&[lpm(ipv4(10, 1, 2, 3), 32)], None, 32).unwrap();
    assert_eq!(hit(&t, &[10, 1, 2, 3]), Some(32));
    assert_eq!(hit(&t, &[10, 1, 2, 4]), Some(24));
    assert_eq!(hit(&t, &[10, 1, 3, 4]), Some(16));
    assert_eq!(hit(&t, &[10, 2, 3, 4]), Some(8));
    assert_eq!(hit(&t, &[11, 2, 3, 4]), Some(0));
    // Same value, different prefix lengths are different entries.
    t.insert(&[lpm(ipv4(10, 1, 2, 0), 23)], None, 23).unwrap();
    assert_eq!(hit(&t, &[10, 1, 3, 4]), Some(23));
}

#[test]
fn lpm_with_exact_fields_requires_exact_match_on_them() {
    let mut t = Table::new(vec![key(MatchKind::Exact, 16), key(MatchKind::Lpm, 32)], 16).unwrap();
    t.insert(
        &[FieldMatch::Exact(vec![0, 1]), lpm(ipv4(10, 0, 0, 0), 8)],
        None,
        1,
    )
    .unwrap();
    t.insert(
        &[FieldMatch::Exact(vec![0, 2]), lpm(ipv4(10, 1, 0, 0), 16)],
        None,
        2,
    )
    .unwrap();
    assert_eq!(hit(&t, &[0, 1, 10, 1, 1, 1]), Some(1));
    assert_eq!(hit(&t, &[0, 2, 10, 1, 1, 1]), Some(2));
    assert_eq!(hit(&t, &[0, 2, 10, 2, 1, 1]), None);
    assert_eq!(hit(&t, &[0, 3, 10, 1, 1, 1]), None);
}

#[test]
fn lpm_on_odd_width_field() {
    // 12-bit field: prefix bits count from the field's most significant bit.
    let mut t = Table::new(vec![key(MatchKind::Lpm, 12)], 4).unwrap();
    t.insert(&[lpm(vec![0x0a, 0x00], 4)], None, 4).unwrap();
    t.insert(&[lpm(vec![0x0a, 0xb0], 8)], None, 8).unwrap();
    t.insert(&[lpm(vec![0x0f, 0xff], 12)], None, 12).unwrap();
    assert_eq!(hit(&t, &[0x0a, 0xbc]), Some(8));
    assert_eq!(hit(&t, &[0x0a, 0xcc]), Some(4));
    assert_eq!(hit(&t, &[0x0f, 0xff]), Some(12));
    assert_eq!(hit(&t, &[0xff, 0xff]), Some(12));
    assert_eq!(hit(&t, &[0x0b, 0xcc]), None);
    assert_eq!(
        t.insert(&[lpm(vec![0x0a, 0x10], 4)], None, 0),
        Err(TableError::BitsBeyondPrefix {
            field: 0,
            prefix_len: 4
        })
    );
}

#[test]
fn ternary_highest_priority_wins_with_overlapping_masks() {
    let mut t = Table::new(vec![key(MatchKind::Ternary, 16)], 16).unwrap();
    assert!(t.needs_priority());
    let low = t
        .insert(&[tern(vec![0, 0], vec![0, 0])], Some(1), "any")
        .unwrap();
    t.insert(&[tern(vec![0x12, 0], vec![0xff, 0])], Some(10), "12xx")
        .unwrap();
    t.insert(&[tern(vec![0, 0x34], vec![0, 0xff])], Some(20), "xx34")
        .unwrap();
    assert_eq!(hit(&t, &[0x12, 0x34]), Some("xx34"));
    assert_eq!(hit(&t, &[0x12, 0x35]), Some("12xx"));
    assert_eq!(hit(&t, &[0x13, 0x35]), Some("any"));
    // A more specific mask does not beat a higher priority.
    t.insert(
        &[tern(vec![0x12, 0x34], vec![0xff, 0xff])],
        Some(5),
        "exact",
    )
    .unwrap();
    assert_eq!(hit(&t, &[0x12, 0x34]), Some("xx34"));
    // Same key with another priority is a distinct entry.
    let other = t
        .insert(&[tern(vec![0, 0], vec![0, 0])], Some(2), "any2")
        .unwrap();
    assert_ne!(other, low);
    assert_eq!(hit(&t, &[0x99, 0x99]), Some("any2"));
    assert_eq!(t.find(&[tern(vec![0, 0], vec![0, 0])], Some(1)), Some(low));
}

#[test]
fn equal_priorities_resolve_to_the_lowest_handle() {
    let mut t = Table::new(vec![key(MatchKind::Ternary, 8)], 16).unwrap();
    let a = t
        .insert(&[tern(vec![0x10], vec![0xf0])], Some(5), 'a')
        .unwrap();
    let b = t
        .insert(&[tern(vec![0x01], vec![0x0f])], Some(5), 'b')
        .unwrap();
    assert!(a < b);
    assert_eq!(hit(&t, &[0x11]), Some('a'));
    t.delete(a).unwrap();
    assert_eq!(hit(&t, &[0x11]), Some('b'));
    // The freed lower handle is reused, and wins the tie again.
    let c = t
        .insert(&[tern(vec![0x11], vec![0xff])], Some(5), 'c')
        .unwrap();
    assert_eq!(c, a);
    assert_eq!(hit(&t, &[0x11]), Some('c'));
}

#[test]
fn range_bounds_are_inclusive() {
    let mut t = Table::new(vec![key(MatchKind::Range, 16), key(MatchKind::Exact, 8)], 8).unwrap();
    t.insert(
        &[
            range(vec![0x04, 0x00], vec![0x04, 0xff]),
            FieldMatch::Exact(vec![6]),
        ],
        Some(1),
        "tcp-1024..1279",
    )
    .unwrap();
    t.insert(
        &[
            range(vec![0x04, 0xff], vec![0x05, 0x00]),
            FieldMatch::Exact(vec![6]),
        ],
        Some(2),
        "tcp-1279..1280",
    )
    .unwrap();
    assert_eq!(hit(&t, &[0x03, 0xff, 6]), None);
    assert_eq!(hit(&t, &[0x04, 0x00, 6]), Some("tcp-1024..1279"));
    assert_eq!(hit(&t, &[0x04, 0xff, 6]), Some("tcp-1279..1280"));
    assert_eq!(hit(&t, &[0x05, 0x00, 6]), Some("tcp-1279..1280"));
    assert_eq!(hit(&t, &[0x05, 0x01, 6]), None);
    assert_eq!(hit(&t, &[0x04, 0x00, 17]), None);
    // A single-value range.
    t.insert(
        &[range(vec![0, 53], vec![0, 53]), FieldMatch::Exact(vec![17])],
        Some(1),
        "dns",
    )
    .unwrap();
    assert_eq!(hit(&t, &[0, 53, 17]), Some("dns"));
    assert_eq!(hit(&t, &[0, 54, 17]), None);
}

#[test]
fn optional_none_is_a_wildcard() {
    let mut t = Table::new(
        vec![key(MatchKind::Optional, 9), key(MatchKind::Exact, 8)],
        8,
    )
    .unwrap();
    assert!(t.needs_priority());
    t.insert(
        &[FieldMatch::Optional(None), FieldMatch::Exact(vec![1])],
        Some(1),
        "any-port",
    )
    .unwrap();
    t.insert(
        &[
            FieldMatch::Optional(Some(vec![1, 0x02])),
            FieldMatch::Exact(vec![1]),
        ],
        Some(2),
        "port-258",
    )
    .unwrap();
    assert_eq!(hit(&t, &[1, 0x02, 1]), Some("port-258"));
    assert_eq!(hit(&t, &[0, 0x02, 1]), Some("any-port"));
    assert_eq!(hit(&t, &[0, 0x02, 2]), None);
}

#[test]
fn lpm_in_a_priority_table_acts_as_a_mask() {
    let mut t = Table::new(vec![key(MatchKind::Lpm, 32), key(MatchKind::Ternary, 8)], 8).unwrap();
    assert!(t.needs_priority());
    t.insert(
        &[lpm(ipv4(10, 0, 0, 0), 8), tern(vec![0], vec![0])],
        Some(10),
        "10/8",
    )
    .unwrap();
    t.insert(
        &[lpm(ipv4(10, 1, 0, 0), 16), tern(vec![0], vec![0])],
        Some(5),
        "10.1/16",
    )
    .unwrap();
    // Priority, not prefix length, decides.
    assert_eq!(hit(&t, &[10, 1, 1, 1, 0]), Some("10/8"));
}

#[test]
fn every_validation_error() {
    use TableError::*;
    assert_eq!(
        Table::<()>::new(vec![key(MatchKind::Exact, 0)], 1).err(),
        Some(ZeroWidthKey { field: 0 })
    );
    assert_eq!(
        Table::<()>::new(
            vec![key(MatchKind::Exact, 8), key(MatchKind::Lpm, u32::MAX)],
            1
        )
        .err(),
        Some(FieldTooWide {
            field: 1,
            width: u32::MAX,
            max: switch_tables::MAX_FIELD_WIDTH
        })
    );
    assert_eq!(
        Table::<()>::new(
            vec![
                key(MatchKind::Lpm, 8),
                key(MatchKind::Exact, 8),
                key(MatchKind::Lpm, 8)
            ],
            1
        )
        .err(),
        Some(MultipleLpm {
            first: 0,
            second: 2
        })
    );

    let mut ex = Table::new(vec![key(MatchKind::Exact, 8), key(MatchKind::Exact, 12)], 1).unwrap();
    let ok = || {
        vec![
            FieldMatch::Exact(vec![1]),
            FieldMatch::Exact(vec![0x0f, 0xff]),
        ]
    };
    assert_eq!(
        ex.insert(&[FieldMatch::Exact(vec![1])], None, ()),
        Err(WrongFieldCount {
            expected: 2,
            got: 1
        })
    );
    assert_eq!(
        ex.insert(
            &[FieldMatch::Exact(vec![1]), FieldMatch::Exact(vec![1])],
            None,
            ()
        ),
        Err(BadWidth {
            field: 1,
            width: 12,
            expected: 2,
            got: 1
        })
    );
    assert_eq!(
        ex.insert(
            &[FieldMatch::Exact(vec![1]), FieldMatch::Exact(vec![0x10, 0])],
            None,
            ()
        ),
        Err(NonCanonical {
            field: 1,
            width: 12
        })
    );
    assert_eq!(
        ex.insert(&[FieldMatch::Exact(vec![1]), lpm(vec![0, 0], 0)], None, ()),
        Err(WrongMatchKind {
            field: 1,
            expected: MatchKind::Exact,
            got: MatchKind::Lpm
        })
    );
    assert_eq!(ex.insert(&ok(), Some(1), ()), Err(UnexpectedPriority));
    let h = ex.insert(&ok(), None, ()).unwrap();
    assert_eq!(ex.insert(&ok(), None, ()), Err(Duplicate { existing: h }));
    assert_eq!(
        ex.insert(
            &[FieldMatch::Exact(vec![2]), FieldMatch::Exact(vec![0, 0])],
            None,
            ()
        ),
        Err(Full { max_size: 1 })
    );
    assert_eq!(
        ex.modify(EntryHandle(5), ()),
        Err(InvalidHandle(EntryHandle(5)))
    );
    assert_eq!(
        ex.delete(EntryHandle(1)),
        Err(InvalidHandle(EntryHandle(1)))
    );
    ex.delete(h).unwrap();
    assert_eq!(ex.delete(h), Err(InvalidHandle(h)));

    let mut lp = Table::new(vec![key(MatchKind::Lpm, 32)], 4).unwrap();
    assert_eq!(
        lp.insert(&[lpm(ipv4(10, 0, 0, 0), 33)], None, ()),
        Err(PrefixTooLong {
            field: 0,
            prefix_len: 33,
            width: 32
        })
    );
    assert_eq!(
        lp.insert(&[lpm(ipv4(10, 0, 0, 1), 24)], None, ()),
        Err(BitsBeyondPrefix {
            field: 0,
            prefix_len: 24
        })
    );

    let mut te = Table::new(
        vec![key(MatchKind::Ternary, 8), key(MatchKind::Range, 8)],
        4,
    )
    .unwrap();
    let r = || range(vec![1], vec![2]);
    assert_eq!(
        te.insert(&[tern(vec![3], vec![1]), r()], Some(1), ()),
        Err(ValueOutsideMask { field: 0 })
    );
    assert_eq!(
        te.insert(
            &[tern(vec![1], vec![1]), range(vec![3], vec![2])],
            Some(1),
            ()
        ),
        Err(RangeInverted { field: 1 })
    );
    assert_eq!(
        te.insert(&[tern(vec![1], vec![1]), r()], None, ()),
        Err(MissingPriority)
    );
    assert_eq!(
        te.insert(&[tern(vec![1], vec![1]), r()], Some(0), ()),
        Err(InvalidPriority { priority: 0 })
    );
    assert_eq!(
        te.insert(&[tern(vec![1], vec![1]), r()], Some(-3), ()),
        Err(InvalidPriority { priority: -3 })
    );
    // Errors name the field in their message.
    assert!(ValueOutsideMask { field: 3 }
        .to_string()
        .contains("key field 3"));
}

#[test]
fn find_get_iter_modify_clear() {
    let mut t = Table::new(vec![key(MatchKind::Lpm, 32)], 8).unwrap();
    let a = t.insert(&[lpm(ipv4(10, 0, 0, 0), 8)], None, 1).unwrap();
    let b = t.insert(&[lpm(ipv4(10, 0, 0, 0), 16)], None, 2).unwrap();
    assert_eq!(t.find(&[lpm(ipv4(10, 0, 0, 0), 8)], None), Some(a));
    assert_eq!(t.find(&[lpm(ipv4(10, 0, 0, 0), 16)], None), Some(b));
    assert_eq!(t.find(&[lpm(ipv4(10, 0, 0, 0), 24)], None), None);
    assert_eq!(t.find(&[lpm(ipv4(10, 0, 0, 0), 40)], None), None);
    let e = t.get(b).unwrap();
    assert_eq!(e.matches(), [lpm(ipv4(10, 0, 0, 0), 16)]);
    assert_eq!(e.priority, None);
    assert_eq!(*e.value, 2);
    t.modify(b, 20).unwrap();
    assert_eq!(hit(&t, &[10, 0, 1, 1]), Some(20));
    *t.value_mut(a).unwrap() = 10;
    let all: Vec<(EntryHandle, i32)> = t.iter().map(|(h, e)| (h, *e.value)).collect();
    assert_eq!(all, vec![(a, 10), (b, 20)]);
    assert_eq!(t.len(), 2);
    t.clear();
    assert!(t.is_empty());
    assert_eq!(hit(&t, &[10, 0, 1, 1]), None);
    assert_eq!(
        t.insert(&[lpm(ipv4(10, 0, 0, 0), 8)], None, 3),
        Ok(EntryHandle(0))
    );
}

/// Entries read back exactly as inserted, for every match kind, at widths that are and are not
/// whole bytes, short keys and keys too long to store inline, and after a delete and a reuse.
#[test]
fn entries_read_back_as_inserted() {
    let mut t = Table::new(
        vec![
            key(MatchKind::Exact, 9),
            key(MatchKind::Lpm, 20),
            key(MatchKind::Ternary, 12),
            key(MatchKind::Range, 16),
            key(MatchKind::Optional, 3),
            key(MatchKind::Range, 7),
            key(MatchKind::Exact, 128),
        ],
        8,
    )
    .unwrap();
    let addr = |b: u8| [vec![0xfd; 15], vec![b]].concat();
    let entries = [
        (
            vec![
                FieldMatch::Exact(vec![1, 0xff]),
                lpm(vec![0x0a, 0xbc, 0xd0], 16),
                tern(vec![0x01, 0x20], vec![0x0f, 0xf0]),
                range(vec![0, 80], vec![0x1f, 0x90]),
                FieldMatch::Optional(Some(vec![5])),
                range(vec![3], vec![0x7f]),
                FieldMatch::Exact(addr(1)),
            ],
            10,
        ),
        (
            vec![
                FieldMatch::Exact(vec![0, 7]),
                lpm(vec![0, 0, 0], 0),
                tern(vec![0, 0], vec![0, 0]),
                range(vec![0, 0], vec![0xff, 0xff]),
                FieldMatch::Optional(None),
                range(vec![9], vec![9]),
                FieldMatch::Exact(addr(2)),
            ],
            3,
        ),
        (
            vec![
                FieldMatch::Exact(vec![0, 7]),
                lpm(vec![0x0f, 0xff, 0xff], 20),
                tern(vec![0x0f, 0xff], vec![0x0f, 0xff]),
                range(vec![1, 2], vec![3, 4]),
                FieldMatch::Optional(Some(vec![0])),
                range(vec![0], vec![0]),
                FieldMatch::Exact(addr(3)),
            ],
            3,
        ),
    ];
    let hs: Vec<EntryHandle> = entries
        .iter()
        .map(|(m, p)| t.insert(m, Some(*p), *p).unwrap())
        .collect();
    let read = |t: &Table<i32>| -> Vec<(Vec<FieldMatch>, Option<i32>)> {
        t.iter().map(|(_, e)| (e.matches(), e.priority)).collect()
    };
    let want: Vec<(Vec<FieldMatch>, Option<i32>)> =
        entries.iter().map(|(m, p)| (m.clone(), Some(*p))).collect();
    assert_eq!(read(&t), want);
    for ((m, p), h) in entries.iter().zip(&hs) {
        assert_eq!(t.find(m, Some(*p)), Some(*h));
        assert_eq!(t.get(*h).unwrap().matches(), *m);
    }
    t.delete(hs[0]).unwrap();
    assert_eq!(t.find(&entries[0].0, Some(10)), None);
    assert_eq!(t.insert(&entries[0].0, Some(10), 10), Ok(hs[0]));
    assert_eq!(read(&t), want);

    // An LPM table stores the value alone: the prefix length comes back with it.
    let mut l = Table::new(vec![key(MatchKind::Exact, 16), key(MatchKind::Lpm, 32)], 4).unwrap();
    let m = [FieldMatch::Exact(vec![0, 3]), lpm(ipv4(10, 1, 0, 0), 16)];
    let h = l.insert(&m, None, 0).unwrap();
    assert_eq!(l.get(h).unwrap().matches(), m);
    assert_eq!(l.get(h).unwrap().priority, None);
}

#[test]
fn delete_frees_the_handle_for_reuse_and_removes_the_match() {
    let mut t = Table::new(vec![key(MatchKind::Exact, 16)], 3).unwrap();
    let hs: Vec<EntryHandle> = (0u8..3)
        .map(|i| t.insert(&[FieldMatch::Exact(vec![0, i])], None, i).unwrap())
        .collect();
    assert_eq!(hs, vec![EntryHandle(0), EntryHandle(1), EntryHandle(2)]);
    assert_eq!(t.delete(hs[1]), Ok(1));
    assert_eq!(hit(&t, &[0, 1]), None);
    assert_eq!(t.find(&[FieldMatch::Exact(vec![0, 1])], None), None);
    let h = t.insert(&[FieldMatch::Exact(vec![0, 9])], None, 9).unwrap();
    assert_eq!(h, EntryHandle(1));
    assert_eq!(t.lookup(&[0, 9]), Some((h, &9)));
    assert!(t.get(h).is_some());
}

#[test]
fn keyless_table_holds_one_entry() {
    let mut t = Table::new(vec![], 4).unwrap();
    let h = t.insert(&[], None, 'x').unwrap();
    assert_eq!(t.lookup(&[]), Some((h, &'x')));
    assert_eq!(
        t.insert(&[], None, 'y'),
        Err(TableError::Duplicate { existing: h })
    );
}

#[test]
fn bmv2_cli_values_are_canonicalized_as_bmv2_does() {
    let t = Table::<()>::new(
        vec![
            key(MatchKind::Lpm, 32),
            key(MatchKind::Ternary, 12),
            key(MatchKind::Exact, 4),
            key(MatchKind::Range, 9),
        ],
        4,
    )
    .unwrap();
    let mut ms = vec![
        lpm(ipv4(10, 1, 2, 3), 12),
        tern(vec![0xff, 0xff], vec![0xf0, 0x0f]),
        FieldMatch::Exact(vec![0xf5]),
        range(vec![0xff, 0x01], vec![0x02, 0x00]),
    ];
    t.canonicalize_like_bmv2(&mut ms);
    assert_eq!(
        ms,
        vec![
            lpm(ipv4(10, 0, 0, 0), 12),
            tern(vec![0x00, 0x0f], vec![0x00, 0x0f]),
            FieldMatch::Exact(vec![0x05]),
            range(vec![0x01, 0x01], vec![0x01, 0xff]),
        ]
    );
    // Lengths that do not fit are left for insert to report.
    let mut bad = vec![lpm(vec![10], 8)];
    t.canonicalize_like_bmv2(&mut bad);
    assert_eq!(bad, vec![lpm(vec![10], 8)]);
}

#[test]
fn bmv2_priorities_convert_so_that_smaller_wins() {
    use switch_tables::priority_from_bmv2;
    let mut t = Table::new(vec![key(MatchKind::Ternary, 8)], 4).unwrap();
    // bmv2: priority 1 beats priority 10.
    t.insert(
        &[tern(vec![0], vec![0])],
        Some(priority_from_bmv2(10).unwrap()),
        "ten",
    )
    .unwrap();
    t.insert(
        &[tern(vec![0], vec![0])],
        Some(priority_from_bmv2(1).unwrap()),
        "one",
    )
    .unwrap();
    assert_eq!(hit(&t, &[7]), Some("one"));
    assert_eq!(priority_from_bmv2(0), Ok(i32::MAX));
    assert_eq!(priority_from_bmv2(i32::MAX - 1), Ok(1));
    for p in [-1, i32::MAX] {
        assert_eq!(
            priority_from_bmv2(p),
            Err(TableError::InvalidBmv2Priority { priority: p })
        );
    }
}
