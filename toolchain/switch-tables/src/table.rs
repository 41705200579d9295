use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::TableError;

type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Match kind of one key field (P4_16 `exact`, `lpm`, `ternary`, v1model `range`, `optional`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MatchKind {
    Exact,
    Lpm,
    Ternary,
    Range,
    Optional,
}

/// One key field of a table: its match kind and width in bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeyField {
    pub kind: MatchKind,
    pub width: u32,
}

/// How an entry matches one key field. Every value is big-endian and exactly
/// `width.div_ceil(8)` bytes long, with the bits above the field width zero.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum FieldMatch {
    Exact(Vec<u8>),
    Lpm {
        value: Vec<u8>,
        prefix_len: u32,
    },
    Ternary {
        value: Vec<u8>,
        mask: Vec<u8>,
    },
    /// Both bounds inclusive.
    Range {
        low: Vec<u8>,
        high: Vec<u8>,
    },
    /// `None` matches anything, `Some(v)` only `v`.
    Optional(Option<Vec<u8>>),
}

impl FieldMatch {
    pub fn kind(&self) -> MatchKind {
        match self {
            FieldMatch::Exact(_) => MatchKind::Exact,
            FieldMatch::Lpm { .. } => MatchKind::Lpm,
            FieldMatch::Ternary { .. } => MatchKind::Ternary,
            FieldMatch::Range { .. } => MatchKind::Range,
            FieldMatch::Optional(_) => MatchKind::Optional,
        }
    }
}

/// Identifies an entry for as long as it is installed. Handles are dense slot indices (the
/// lowest free slot is reused first, as bmv2's handle manager does), so callers can keep
/// per-entry state such as direct counters in arrays indexed by `h.0`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct EntryHandle(pub u32);

/// A borrowed view of one installed entry.
#[derive(Debug)]
pub struct EntryRef<'a, V> {
    pub matches: &'a [FieldMatch],
    pub priority: Option<i32>,
    pub value: &'a V,
}

impl<V> Clone for EntryRef<'_, V> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<V> Copy for EntryRef<'_, V> {}

struct Entry<V> {
    matches: Vec<FieldMatch>,
    priority: Option<i32>,
    value: V,
}

#[derive(Clone, Copy)]
struct FieldLayout {
    kind: MatchKind,
    width: u32,
    offset: usize,
    len: usize,
}

/// An entry reduced to what the index needs: the key masked by the entry's mask, the mask,
/// and for LPM tables the prefix length of the LPM field.
struct Compiled {
    value: Box<[u8]>,
    mask: Box<[u8]>,
    prefix_len: u32,
}

/// Lookup structure, chosen from the match kinds as bmv2 and P4Runtime do.
enum Index {
    /// All fields exact: one hash map from key to slot.
    Exact(FastMap<Box<[u8]>, u32>),
    /// Exact fields and one LPM field: one hash map per prefix length, longest first.
    Lpm(Vec<LpmLevel>),
    /// Any ternary, range or optional field: tuple space search, one hash map per distinct
    /// mask, visited in order of the best priority each holds.
    Ternary(TupleSpace),
}

struct LpmLevel {
    prefix_len: u32,
    mask: Box<[u8]>,
    map: FastMap<Box<[u8]>, u32>,
}

#[derive(Default)]
struct TupleSpace {
    groups: Vec<Option<MaskGroup>>,
    free_groups: Vec<usize>,
    by_mask: FastMap<Box<[u8]>, usize>,
    /// Group indices, best priority first.
    order: Vec<usize>,
    /// Key fields of kind range; their mask bytes are zero and each candidate checks them.
    range_fields: Vec<usize>,
}

struct MaskGroup {
    mask: Box<[u8]>,
    /// Masked key -> (priority, slot), best first: higher priority, then lower slot.
    buckets: FastMap<Box<[u8]>, Vec<(i32, u32)>>,
    priorities: BTreeMap<i32, u32>,
    best: i32,
}

/// A match table: entries keyed by `Vec<FieldMatch>` (plus a priority where the table needs
/// one), each holding a `V`, looked up with a packet key.
pub struct Table<V> {
    fields: Vec<FieldLayout>,
    key_len: usize,
    /// Per key byte, the bits that belong to a field (zero above each field's width).
    width_mask: Box<[u8]>,
    /// Some field width is not a multiple of 8, so lookup keys are masked before hashing.
    partial_bytes: bool,
    max_size: usize,
    slots: Vec<Option<Entry<V>>>,
    free: BTreeSet<u32>,
    len: usize,
    index: Index,
}

const INLINE_KEY: usize = 64;

/// A key-sized scratch buffer on the stack for the usual keys, on the heap for long ones,
/// so lookups do not allocate.
struct Scratch {
    inline: [u8; INLINE_KEY],
    heap: Vec<u8>,
    len: usize,
}

impl Scratch {
    fn new(len: usize) -> Self {
        Scratch {
            inline: [0; INLINE_KEY],
            heap: if len > INLINE_KEY {
                vec![0; len]
            } else {
                Vec::new()
            },
            len,
        }
    }

    fn masked(&mut self, key: &[u8], mask: &[u8]) -> &[u8] {
        let buf = if self.len > INLINE_KEY {
            &mut self.heap[..]
        } else {
            &mut self.inline[..self.len]
        };
        for ((b, k), m) in buf.iter_mut().zip(key).zip(mask) {
            *b = k & m;
        }
        buf
    }
}

fn top_byte_mask(width: u32) -> u8 {
    match width % 8 {
        0 => 0xff,
        r => (1u8 << r) - 1,
    }
}

impl<V> Table<V> {
    /// A table with these key fields holding at most `max_size` entries. Fails on a 0-bit
    /// field and on more than one LPM field (bmv2 refuses those tables too).
    pub fn new(keys: Vec<KeyField>, max_size: usize) -> Result<Self, TableError> {
        let mut fields = Vec::with_capacity(keys.len());
        let mut offset = 0;
        let mut lpm_field = None;
        let mut width_mask = Vec::new();
        let mut partial_bytes = false;
        let mut needs_priority = false;
        let mut range_fields = Vec::new();
        for (i, k) in keys.iter().enumerate() {
            if k.width == 0 {
                return Err(TableError::ZeroWidthKey { field: i });
            }
            match k.kind {
                MatchKind::Lpm => {
                    if let Some(first) = lpm_field {
                        return Err(TableError::MultipleLpm { first, second: i });
                    }
                    lpm_field = Some(i);
                }
                MatchKind::Ternary | MatchKind::Optional => needs_priority = true,
                MatchKind::Range => {
                    needs_priority = true;
                    range_fields.push(i);
                }
                MatchKind::Exact => {}
            }
            let len = k.width.div_ceil(8) as usize;
            partial_bytes |= k.width % 8 != 0;
            width_mask.push(top_byte_mask(k.width));
            width_mask.extend(std::iter::repeat(0xff).take(len - 1));
            fields.push(FieldLayout {
                kind: k.kind,
                width: k.width,
                offset,
                len,
            });
            offset += len;
        }
        let index = if needs_priority {
            Index::Ternary(TupleSpace {
                range_fields,
                ..TupleSpace::default()
            })
        } else if lpm_field.is_some() {
            Index::Lpm(Vec::new())
        } else {
            Index::Exact(FastMap::default())
        };
        Ok(Table {
            fields,
            key_len: offset,
            width_mask: width_mask.into(),
            partial_bytes,
            max_size,
            slots: Vec::new(),
            free: BTreeSet::new(),
            len: 0,
            index,
        })
    }

    /// Whether entries carry a priority (the table has a ternary, range or optional field).
    pub fn needs_priority(&self) -> bool {
        matches!(self.index, Index::Ternary(_))
    }

    /// Length in bytes of a lookup key: each field's `width.div_ceil(8)` bytes, concatenated.
    pub fn key_len(&self) -> usize {
        self.key_len
    }

    pub fn max_size(&self) -> usize {
        self.max_size
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds an entry. Priorities follow P4Runtime: tables with ternary, range or optional
    /// fields need one in 1..=i32::MAX and a larger number wins; other tables take none.
    pub fn insert(
        &mut self,
        matches: Vec<FieldMatch>,
        priority: Option<i32>,
        value: V,
    ) -> Result<EntryHandle, TableError> {
        let compiled = self.compile(&matches, priority)?;
        if let Some(existing) = self.locate(&compiled, &matches, priority) {
            return Err(TableError::Duplicate {
                existing: EntryHandle(existing),
            });
        }
        if self.len >= self.max_size {
            return Err(TableError::Full {
                max_size: self.max_size,
            });
        }
        let slot = match self.free.pop_first() {
            Some(s) => s,
            None => {
                // Handles are u32 and max_size bounds the slot count.
                let s = u32::try_from(self.slots.len()).map_err(|_| TableError::Full {
                    max_size: self.max_size,
                })?;
                self.slots.push(None);
                s
            }
        };
        self.index_add(compiled, priority.unwrap_or(0), slot);
        self.slots[slot as usize] = Some(Entry {
            matches,
            priority,
            value,
        });
        self.len += 1;
        Ok(EntryHandle(slot))
    }

    /// Replaces the value of an entry, keeping its handle and key.
    pub fn modify(&mut self, h: EntryHandle, value: V) -> Result<(), TableError> {
        match self.slots.get_mut(h.0 as usize) {
            Some(Some(e)) => {
                e.value = value;
                Ok(())
            }
            _ => Err(TableError::InvalidHandle(h)),
        }
    }

    /// Mutable access to an entry's value.
    pub fn value_mut(&mut self, h: EntryHandle) -> Option<&mut V> {
        match self.slots.get_mut(h.0 as usize) {
            Some(Some(e)) => Some(&mut e.value),
            _ => None,
        }
    }

    /// Removes an entry and returns its value; the handle becomes free for reuse.
    pub fn delete(&mut self, h: EntryHandle) -> Result<V, TableError> {
        let entry = match self.slots.get_mut(h.0 as usize) {
            Some(slot @ Some(_)) => slot.take(),
            _ => None,
        }
        .ok_or(TableError::InvalidHandle(h))?;
        let compiled = self
            .compile(&entry.matches, entry.priority)
            .expect("installed entries were validated on insert");
        self.index_remove(&compiled, entry.priority.unwrap_or(0), h.0);
        self.free.insert(h.0);
        self.len -= 1;
        Ok(entry.value)
    }

    /// Removes every entry and frees every handle.
    pub fn clear(&mut self) {
        self.slots.clear();
        self.free.clear();
        self.len = 0;
        match &mut self.index {
            Index::Exact(m) => m.clear(),
            Index::Lpm(levels) => levels.clear(),
            Index::Ternary(ts) => {
                let range_fields = std::mem::take(&mut ts.range_fields);
                *ts = TupleSpace {
                    range_fields,
                    ..TupleSpace::default()
                };
            }
        }
    }

    /// The entry with exactly this key and priority (how P4Runtime MODIFY and DELETE name
    /// entries). An invalid key finds nothing.
    pub fn find(&self, matches: &[FieldMatch], priority: Option<i32>) -> Option<EntryHandle> {
        let compiled = self.compile(matches, priority).ok()?;
        self.locate(&compiled, matches, priority).map(EntryHandle)
    }

    pub fn get(&self, h: EntryHandle) -> Option<EntryRef<'_, V>> {
        match self.slots.get(h.0 as usize) {
            Some(Some(e)) => Some(EntryRef {
                matches: &e.matches,
                priority: e.priority,
                value: &e.value,
            }),
            _ => None,
        }
    }

    /// Installed entries in handle order.
    pub fn iter(&self) -> impl Iterator<Item = (EntryHandle, EntryRef<'_, V>)> + '_ {
        self.slots.iter().enumerate().filter_map(|(i, s)| {
            s.as_ref().map(|e| {
                (
                    EntryHandle(i as u32),
                    EntryRef {
                        matches: &e.matches,
                        priority: e.priority,
                        value: &e.value,
                    },
                )
            })
        })
    }

    /// The entry matching a packet key: each field's bytes (`width.div_ceil(8)`, big-endian)
    /// concatenated in key order; bits above a field's width are ignored. A key of the wrong
    /// length matches nothing. Exact tables: the equal key. LPM tables: the longest prefix.
    /// Priority tables: the highest priority; among equal priorities, the lowest handle
    /// (bmv2 keeps the first best entry it meets in handle order).
    pub fn lookup(&self, key: &[u8]) -> Option<(EntryHandle, &V)> {
        if key.len() != self.key_len {
            return None;
        }
        let slot = match &self.index {
            Index::Exact(map) => {
                if self.partial_bytes {
                    let mut s = Scratch::new(self.key_len);
                    map.get(s.masked(key, &self.width_mask)).copied()
                } else {
                    map.get(key).copied()
                }
            }
            Index::Lpm(levels) => {
                let mut s = Scratch::new(self.key_len);
                levels
                    .iter()
                    .find_map(|l| l.map.get(s.masked(key, &l.mask)).copied())
            }
            Index::Ternary(ts) => self.lookup_ternary(ts, key),
        }?;
        let e = self.slots[slot as usize]
            .as_ref()
            .expect("index points at live slots");
        Some((EntryHandle(slot), &e.value))
    }

    fn lookup_ternary(&self, ts: &TupleSpace, key: &[u8]) -> Option<u32> {
        let mut canon = Scratch::new(self.key_len);
        let canon = canon.masked(key, &self.width_mask);
        let mut s = Scratch::new(self.key_len);
        let mut best: Option<(i32, u32)> = None;
        for &g in &ts.order {
            let group = ts.groups[g].as_ref().expect("order lists live groups");
            if best.is_some_and(|(bp, _)| group.best < bp) {
                break;
            }
            let Some(bucket) = group.buckets.get(s.masked(canon, &group.mask)) else {
                continue;
            };
            for &(p, slot) in bucket {
                if best.is_some_and(|(bp, bs)| p < bp || (p == bp && slot > bs)) {
                    break;
                }
                if ts.range_fields.is_empty() || self.ranges_match(&ts.range_fields, slot, canon) {
                    best = Some((p, slot));
                    break;
                }
            }
        }
        best.map(|(_, slot)| slot)
    }

    fn ranges_match(&self, range_fields: &[usize], slot: u32, key: &[u8]) -> bool {
        let e = self.slots[slot as usize]
            .as_ref()
            .expect("index points at live slots");
        range_fields.iter().all(|&f| {
            let l = self.fields[f];
            let k = &key[l.offset..l.offset + l.len];
            match &e.matches[f] {
                FieldMatch::Range { low, high } => low.as_slice() <= k && k <= high.as_slice(),
                _ => unreachable!("range fields hold range matches"),
            }
        })
    }

    /// Validates an entry against the key and reduces it to value/mask form.
    fn compile(
        &self,
        matches: &[FieldMatch],
        priority: Option<i32>,
    ) -> Result<Compiled, TableError> {
        if matches.len() != self.fields.len() {
            return Err(TableError::WrongFieldCount {
                expected: self.fields.len(),
                got: matches.len(),
            });
        }
        let mut value = vec![0u8; self.key_len];
        let mut mask = vec![0u8; self.key_len];
        let mut prefix_len = 0;
        for (i, (m, l)) in matches.iter().zip(&self.fields).enumerate() {
            if m.kind() != l.kind {
                return Err(TableError::WrongMatchKind {
                    field: i,
                    expected: l.kind,
                    got: m.kind(),
                });
            }
            let check = |v: &[u8]| -> Result<(), TableError> {
                if v.len() != l.len {
                    return Err(TableError::BadWidth {
                        field: i,
                        width: l.width,
                        expected: l.len,
                        got: v.len(),
                    });
                }
                if v[0] & !top_byte_mask(l.width) != 0 {
                    return Err(TableError::NonCanonical {
                        field: i,
                        width: l.width,
                    });
                }
                Ok(())
            };
            let vdst = &mut value[l.offset..l.offset + l.len];
            let mdst = &mut mask[l.offset..l.offset + l.len];
            let full = &self.width_mask[l.offset..l.offset + l.len];
            match m {
                FieldMatch::Exact(v) | FieldMatch::Optional(Some(v)) => {
                    check(v)?;
                    vdst.copy_from_slice(v);
                    mdst.copy_from_slice(full);
                }
                FieldMatch::Optional(None) => {}
                FieldMatch::Lpm {
                    value: v,
                    prefix_len: p,
                } => {
                    check(v)?;
                    if *p > l.width {
                        return Err(TableError::PrefixTooLong {
                            field: i,
                            prefix_len: *p,
                            width: l.width,
                        });
                    }
                    let pad = l.len as u32 * 8 - l.width;
                    for bit in pad..pad + p {
                        mdst[(bit / 8) as usize] |= 0x80 >> (bit % 8);
                    }
                    if v.iter().zip(mdst.iter()).any(|(v, m)| v & !m != 0) {
                        return Err(TableError::BitsBeyondPrefix {
                            field: i,
                            prefix_len: *p,
                        });
                    }
                    vdst.copy_from_slice(v);
                    prefix_len = *p;
                }
                FieldMatch::Ternary { value: v, mask: k } => {
                    check(v)?;
                    check(k)?;
                    if v.iter().zip(k).any(|(v, k)| v & !k != 0) {
                        return Err(TableError::ValueOutsideMask { field: i });
                    }
                    vdst.copy_from_slice(v);
                    mdst.copy_from_slice(k);
                }
                FieldMatch::Range { low, high } => {
                    check(low)?;
                    check(high)?;
                    if low > high {
                        return Err(TableError::RangeInverted { field: i });
                    }
                }
            }
        }
        match (self.needs_priority(), priority) {
            (true, None) => return Err(TableError::MissingPriority),
            (true, Some(p)) if p < 1 => return Err(TableError::InvalidPriority { priority: p }),
            (false, Some(_)) => return Err(TableError::UnexpectedPriority),
            _ => {}
        }
        Ok(Compiled {
            value: value.into(),
            mask: mask.into(),
            prefix_len,
        })
    }

    /// The slot holding this exact entry, if any.
    fn locate(&self, c: &Compiled, matches: &[FieldMatch], priority: Option<i32>) -> Option<u32> {
        match &self.index {
            Index::Exact(map) => map.get(&c.value).copied(),
            Index::Lpm(levels) => levels
                .iter()
                .find(|l| l.prefix_len == c.prefix_len)
                .and_then(|l| l.map.get(&c.value).copied()),
            Index::Ternary(ts) => {
                let group = ts.groups[*ts.by_mask.get(&c.mask)?].as_ref()?;
                group
                    .buckets
                    .get(&c.value)?
                    .iter()
                    .find(|&&(p, s)| {
                        Some(p) == priority
                            && self.slots[s as usize]
                                .as_ref()
                                .is_some_and(|e| e.matches == matches)
                    })
                    .map(|&(_, s)| s)
            }
        }
    }

    fn index_add(&mut self, c: Compiled, priority: i32, slot: u32) {
        match &mut self.index {
            Index::Exact(map) => {
                map.insert(c.value, slot);
            }
            Index::Lpm(levels) => {
                let at = match levels.binary_search_by(|l| c.prefix_len.cmp(&l.prefix_len)) {
                    Ok(at) => at,
                    Err(at) => {
                        levels.insert(
                            at,
                            LpmLevel {
                                prefix_len: c.prefix_len,
                                mask: c.mask,
                                map: FastMap::default(),
                            },
                        );
                        at
                    }
                };
                levels[at].map.insert(c.value, slot);
            }
            Index::Ternary(ts) => ts.add(c, priority, slot),
        }
    }

    fn index_remove(&mut self, c: &Compiled, priority: i32, slot: u32) {
        match &mut self.index {
            Index::Exact(map) => {
                map.remove(&c.value);
            }
            Index::Lpm(levels) => {
                if let Ok(at) = levels.binary_search_by(|l| c.prefix_len.cmp(&l.prefix_len)) {
                    levels[at].map.remove(&c.value);
                    if levels[at].map.is_empty() {
                        levels.remove(at);
                    }
                }
            }
            Index::Ternary(ts) => ts.remove(c, priority, slot),
        }
    }
}

impl TupleSpace {
    fn add(&mut self, c: Compiled, priority: i32, slot: u32) {
        let g = match self.by_mask.get(&c.mask) {
            Some(&g) => g,
            None => {
                let group = MaskGroup {
                    mask: c.mask.clone(),
                    buckets: FastMap::default(),
                    priorities: BTreeMap::new(),
                    best: priority,
                };
                let g = match self.free_groups.pop() {
                    Some(g) => {
                        self.groups[g] = Some(group);
                        g
                    }
                    None => {
                        self.groups.push(Some(group));
                        self.groups.len() - 1
                    }
                };
                self.by_mask.insert(c.mask, g);
                g
            }
        };
        let group = self.groups[g].as_mut().expect("by_mask lists live groups");
        let bucket = group.buckets.entry(c.value).or_default();
        let at = bucket.partition_point(|&(p, s)| p > priority || (p == priority && s < slot));
        bucket.insert(at, (priority, slot));
        *group.priorities.entry(priority).or_insert(0) += 1;
        group.best = *group
            .priorities
            .last_key_value()
            .expect("just counted one")
            .0;
        self.reorder(g);
    }

    fn remove(&mut self, c: &Compiled, priority: i32, slot: u32) {
        let Some(&g) = self.by_mask.get(&c.mask) else {
            return;
        };
        let group = self.groups[g].as_mut().expect("by_mask lists live groups");
        if let Some(bucket) = group.buckets.get_mut(&c.value) {
            bucket.retain(|&(_, s)| s != slot);
            if bucket.is_empty() {
                group.buckets.remove(&c.value);
            }
        }
        if let Some(n) = group.priorities.get_mut(&priority) {
            *n -= 1;
            if *n == 0 {
                group.priorities.remove(&priority);
            }
        }
        self.order.retain(|&o| o != g);
        match group.priorities.last_key_value() {
            Some((&best, _)) => {
                group.best = best;
                self.reorder(g);
            }
            None => {
                self.groups[g] = None;
                self.by_mask.remove(&c.mask);
                self.free_groups.push(g);
            }
        }
    }

    /// Puts group `g` at its place in `order` (best priority first).
    fn reorder(&mut self, g: usize) {
        self.order.retain(|&o| o != g);
        let best = |o: usize| self.groups[o].as_ref().map_or(i32::MIN, |x| x.best);
        let gb = best(g);
        let at = self.order.partition_point(|&o| best(o) >= gb);
        self.order.insert(at, g);
    }
}
