use std::collections::{BTreeMap, BTreeSet};

use crate::entry::{EntryHandle, FieldMatch, KeyField, MatchKind};
use crate::keys::{pack, FastMap, KeyBytes, KeyMap, Mask, Probe, MAX_PACKED_KEY};
use crate::TableError;

/// An installed entry. Its key is kept as compiled (see `Compiled`), not as the
/// `Vec<FieldMatch>` it was given (a vector and one more per field): reads rebuild the
/// matches, which they copy anyway.
struct Entry<V> {
    key: KeyBytes,
    prefix_len: u32,
    /// 0 in tables without priorities (valid priorities are 1 and up).
    priority: i32,
    value: V,
}

#[derive(Clone, Copy, Debug)]
struct FieldLayout {
    kind: MatchKind,
    width: u32,
    offset: usize,
    len: usize,
}

/// An entry reduced to what the index needs, which is also what the table stores: the key
/// masked by the entry's mask (`key_len` bytes); in priority tables then the mask, and each
/// range field's low and high bounds in key order. The prefix length is the LPM field's.
struct Compiled {
    key: KeyBytes,
    prefix_len: u32,
}

/// A lookup key as the table probes with it: the bytes as one big-endian number when they
/// are at most `MAX_PACKED_KEY`, else the bytes.
#[derive(Clone, Copy)]
enum Key<'a> {
    Packed(u128),
    Bytes(&'a [u8]),
}

/// The low `len` bytes of a packed key set (`len` at most 16).
fn len_mask(len: usize) -> u128 {
    u128::MAX >> (128 - 8 * len)
}

/// Lookup structure, chosen from the match kinds as bmv2 and P4Runtime do.
enum Index {
    /// All fields exact: one hash map from key to slot.
    Exact(KeyMap<u32>),
    /// Exact fields and one LPM field: one hash map per prefix length.
    Lpm(LpmIndex),
    /// Any ternary, range or optional field: tuple space search, one hash map per distinct
    /// mask, visited in order of the best priority each holds.
    Ternary(TupleSpace),
}

/// Longest prefix match as one hash map per prefix length of the LPM field. Probing every
/// length from the longest costs up to `width` probes, so tiers of bitmaps say which lengths
/// hold entries under a key's leading bits: the first tier, indexed by the field's leading 16
/// bits, covers lengths 16 and up; the second, indexed by the leading 8 bits, lengths 8 to 15.
/// A lookup probes only the lengths its buckets list, longest first, then the lengths under 8.
struct LpmIndex {
    field: FieldLayout,
    /// Bits below the field in a packed key (keys of at most `MAX_PACKED_KEY` bytes).
    packed_shift: u32,
    /// Indexed by prefix length.
    levels: Vec<Option<LpmLevel>>,
    /// Longest lengths first.
    tiers: Vec<Tier>,
    /// Prefix lengths below the last tier that hold entries, longest first.
    short: Vec<u32>,
}

/// Prefix lengths `bits..=max_len`, bucketed by the field's leading `bits` bits.
struct Tier {
    bits: u32,
    max_len: u32,
    /// `words` u64 per bucket; bit `len - bits` marks length `len`. Flat, so a lookup reads
    /// one cache line. Allocated with the tier's first entry, so small tables stay small.
    lengths: Vec<u64>,
    words: usize,
    /// Entries per bucket and prefix length (`bits..=max_len`), to clear a bit when its last
    /// entry goes: an array per bucket, allocated with the bucket's first entry (a flat array
    /// for every bucket would take 30 MB for an IPv6 field's first tier).
    counts: Vec<Box<[u32]>>,
}

struct LpmLevel {
    mask: Mask,
    map: KeyMap<u32>,
}

struct TupleSpace {
    key_len: usize,
    groups: Vec<Option<MaskGroup>>,
    free_groups: Vec<usize>,
    by_mask: FastMap<Box<[u8]>, usize>,
    /// Group indices, best priority first.
    order: Vec<usize>,
    /// Key fields of kind range; their mask bytes are zero and each candidate checks them.
    range_fields: Vec<usize>,
}

struct MaskGroup {
    mask: Mask,
    /// Masked key -> (priority, slot), best first: higher priority, then lower slot.
    buckets: KeyMap<Vec<(i32, u32)>>,
    priorities: BTreeMap<i32, u32>,
    best: i32,
}

/// A match table: entries keyed by `Vec<FieldMatch>` (plus a priority where the table needs
/// one), each holding a `V`, looked up with a packet key.
pub struct Table<V> {
    fields: Vec<FieldLayout>,
    key_len: usize,
    /// Per key byte, the bits that belong to a field (zero above each field's width).
    width_mask: Mask,
    max_size: usize,
    /// Bytes of a stored key (see `Compiled`).
    stored_len: usize,
    slots: Vec<Option<Entry<V>>>,
    free: BTreeSet<u32>,
    len: usize,
    index: Index,
}

/// A borrowed view of one installed entry.
#[derive(Debug)]
pub struct EntryRef<'a, V> {
    fields: &'a [FieldLayout],
    key_len: usize,
    key: &'a [u8],
    prefix_len: u32,
    pub priority: Option<i32>,
    pub value: &'a V,
}

impl<V> Clone for EntryRef<'_, V> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<V> Copy for EntryRef<'_, V> {}

impl<V> EntryRef<'_, V> {
    /// The entry's key as it was inserted, rebuilt from the stored form (see `Compiled`).
    pub fn matches(&self) -> Vec<FieldMatch> {
        let (value, rest) = self.key.split_at(self.key_len);
        let mut bounds = rest.get(self.key_len..).unwrap_or_default();
        self.fields
            .iter()
            .map(|l| {
                let at = l.offset..l.offset + l.len;
                let v = value[at.clone()].to_vec();
                match l.kind {
                    MatchKind::Exact => FieldMatch::Exact(v),
                    MatchKind::Lpm => FieldMatch::Lpm {
                        value: v,
                        prefix_len: self.prefix_len,
                    },
                    MatchKind::Ternary => FieldMatch::Ternary {
                        value: v,
                        mask: rest[at].to_vec(),
                    },
                    // An optional field's mask is all of its width or nothing.
                    MatchKind::Optional => {
                        FieldMatch::Optional(rest[at].iter().any(|&b| b != 0).then_some(v))
                    }
                    MatchKind::Range => {
                        let (low, rest) = bounds.split_at(l.len);
                        let (high, rest) = rest.split_at(l.len);
                        bounds = rest;
                        FieldMatch::Range {
                            low: low.to_vec(),
                            high: high.to_vec(),
                        }
                    }
                }
            })
            .collect()
    }
}

/// The P4Runtime priority (larger wins) equivalent to a bmv2 runtime CLI or STF priority
/// (smaller wins): `i32::MAX - p`. Both break ties by the lowest handle, so lookups agree.
/// bmv2 priorities are 0 to `i32::MAX - 1`; others are refused.
pub fn priority_from_bmv2(p: i32) -> Result<i32, TableError> {
    if (0..i32::MAX).contains(&p) {
        Ok(i32::MAX - p)
    } else {
        Err(TableError::InvalidBmv2Priority { priority: p })
    }
}

/// Widest key field accepted. Far above any real header field, low enough that a bogus width
/// in a program cannot make a table allocate gigabytes (an LPM table keeps one slot per
/// prefix length).
pub const MAX_FIELD_WIDTH: u32 = 65_536;

/// Most slots reserved when a table is made (a program may declare a size no table reaches).
const RESERVED_SLOTS: usize = 1 << 20;

fn top_byte_mask(width: u32) -> u8 {
    match width % 8 {
        0 => 0xff,
        r => (1u8 << r) - 1,
    }
}

/// Byte `i` of a mask whose first `keep` bits are set (an LPM prefix after a field's padding).
fn prefix_byte(keep: u32, i: usize) -> u8 {
    match keep.saturating_sub(i as u32 * 8) {
        0 => 0,
        n if n >= 8 => 0xff,
        n => !(0xffu8 >> n),
    }
}

impl<V> Table<V> {
    /// A table with these key fields holding at most `max_size` entries. Fails on a field of
    /// 0 or more than `MAX_FIELD_WIDTH` bits and on more than one LPM field (bmv2 refuses
    /// such tables too).
    pub fn new(keys: Vec<KeyField>, max_size: usize) -> Result<Self, TableError> {
        let mut fields = Vec::with_capacity(keys.len());
        let mut offset = 0;
        let mut lpm_field = None;
        let mut width_mask = Vec::new();
        let mut needs_priority = false;
        let mut range_fields = Vec::new();
        for (i, k) in keys.iter().enumerate() {
            if k.width == 0 {
                return Err(TableError::ZeroWidthKey { field: i });
            }
            if k.width > MAX_FIELD_WIDTH {
                return Err(TableError::FieldTooWide {
                    field: i,
                    width: k.width,
                    max: MAX_FIELD_WIDTH,
                });
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
        let stored_len = if needs_priority {
            2 * offset
                + range_fields
                    .iter()
                    .map(|&f: &usize| 2 * fields[f].len)
                    .sum::<usize>()
        } else {
            offset
        };
        let index = if needs_priority {
            Index::Ternary(TupleSpace::new(offset, range_fields))
        } else if let Some(f) = lpm_field {
            Index::Lpm(LpmIndex::new(fields[f], offset))
        } else {
            Index::Exact(KeyMap::new(offset))
        };
        Ok(Table {
            fields,
            key_len: offset,
            width_mask: Mask::new(width_mask.into()),
            max_size,
            stored_len,
            // Room for every entry from the start: growing by doubling copies the slots and
            // touches twice their memory, and first touches of fresh pages were most of a bulk
            // insert's time (p4-switch-p4rt-write-bench). Reserved, not touched: a table's
            // memory still grows with its entries.
            slots: Vec::with_capacity(max_size.min(RESERVED_SLOTS)),
            free: BTreeSet::new(),
            len: 0,
            index,
        })
    }

    /// Clears the bits bmv2's runtime CLI silently drops before adding an entry: bits above
    /// each field's width (a range's high bound above it becomes the largest value), LPM bits
    /// beyond the prefix, ternary value bits outside the mask.
    /// P4Runtime refuses such values (and `insert` does too), so only the CLI and STF paths,
    /// which follow bmv2, call this first. Values of the wrong length are left for `insert`
    /// to report.
    pub fn canonicalize_like_bmv2(&self, matches: &mut [FieldMatch]) {
        for (m, l) in matches.iter_mut().zip(&self.fields) {
            let top = top_byte_mask(l.width);
            let clear_top = |v: &mut Vec<u8>| {
                if v.len() == l.len {
                    v[0] &= top;
                }
            };
            match m {
                FieldMatch::Exact(v) | FieldMatch::Optional(Some(v)) => clear_top(v),
                FieldMatch::Optional(None) => {}
                FieldMatch::Lpm { value, prefix_len } => {
                    clear_top(value);
                    if value.len() == l.len && *prefix_len <= l.width {
                        let keep = l.len as u32 * 8 - l.width + *prefix_len;
                        for (i, b) in value.iter_mut().enumerate() {
                            *b &= prefix_byte(keep, i);
                        }
                    }
                }
                FieldMatch::Ternary { value, mask } => {
                    clear_top(value);
                    clear_top(mask);
                    if value.len() == mask.len() {
                        for (v, k) in value.iter_mut().zip(mask.iter()) {
                            *v &= k;
                        }
                    }
                }
                FieldMatch::Range { low, high } => {
                    clear_top(low);
                    // bmv2 masks only the low bound; a high bound above the width admits
                    // every value, so it becomes the largest one.
                    if high.len() == l.len && high[0] & !top != 0 {
                        high.fill(0xff);
                        high[0] = top;
                    }
                }
            }
        }
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
        matches: &[FieldMatch],
        priority: Option<i32>,
        value: V,
    ) -> Result<EntryHandle, TableError> {
        let compiled = self.compile(matches, priority)?;
        let priority = priority.unwrap_or(0);
        let full = TableError::Full {
            max_size: self.max_size,
        };
        if self.len >= self.max_size {
            return Err(match self.locate(&compiled, priority) {
                Some(existing) => TableError::Duplicate {
                    existing: EntryHandle(existing),
                },
                None => full,
            });
        }
        // Handles are u32 and max_size bounds the slot count.
        let slot = match self.free.first() {
            Some(&s) => s,
            None => u32::try_from(self.slots.len()).map_err(|_| full)?,
        };
        if let Err(existing) = self.index_add(&compiled, priority, slot) {
            return Err(TableError::Duplicate {
                existing: EntryHandle(existing),
            });
        }
        if self.free.first() == Some(&slot) {
            self.free.pop_first();
        } else {
            self.slots.push(None);
        }
        self.slots[slot as usize] = Some(Entry {
            key: compiled.key,
            prefix_len: compiled.prefix_len,
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
        let compiled = Compiled {
            key: entry.key,
            prefix_len: entry.prefix_len,
        };
        self.index_remove(&compiled, entry.priority, h.0);
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
            Index::Lpm(lpm) => *lpm = LpmIndex::new(lpm.field, self.key_len),
            Index::Ternary(ts) => {
                *ts = TupleSpace::new(ts.key_len, std::mem::take(&mut ts.range_fields))
            }
        }
    }

    /// The entry with exactly this key and priority (how P4Runtime MODIFY and DELETE name
    /// entries). An invalid key finds nothing.
    pub fn find(&self, matches: &[FieldMatch], priority: Option<i32>) -> Option<EntryHandle> {
        let compiled = self.compile(matches, priority).ok()?;
        self.locate(&compiled, priority.unwrap_or(0))
            .map(EntryHandle)
    }

    pub fn get(&self, h: EntryHandle) -> Option<EntryRef<'_, V>> {
        match self.slots.get(h.0 as usize) {
            Some(Some(e)) => Some(self.entry_ref(e)),
            _ => None,
        }
    }

    /// Installed entries in handle order.
    pub fn iter(&self) -> impl Iterator<Item = (EntryHandle, EntryRef<'_, V>)> + '_ {
        self.slots.iter().enumerate().filter_map(|(i, s)| {
            s.as_ref()
                .map(|e| (EntryHandle(i as u32), self.entry_ref(e)))
        })
    }

    fn entry_ref<'a>(&'a self, e: &'a Entry<V>) -> EntryRef<'a, V> {
        EntryRef {
            fields: &self.fields,
            key_len: self.key_len,
            key: &e.key,
            prefix_len: e.prefix_len,
            priority: self.needs_priority().then_some(e.priority),
            value: &e.value,
        }
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
        if self.key_len <= MAX_PACKED_KEY {
            return self.lookup_packed(pack(key));
        }
        self.lookup_as(Key::Bytes(key), &mut Probe::bytes(key))
    }

    /// [`Table::lookup`] of a key of at most [`MAX_PACKED_KEY`] bytes given as one big-endian
    /// number (`key_len()` bytes; bits above them are ignored, as are bits above a field's
    /// width): what a packet's fields shift into a register, so the data plane builds no byte
    /// string and the table need not pack one. Longer keys match nothing here.
    pub fn lookup_packed(&self, key: u128) -> Option<(EntryHandle, &V)> {
        if self.key_len > MAX_PACKED_KEY {
            return None;
        }
        let key = key & self.width_mask.packed();
        self.lookup_as(Key::Packed(key), &mut Probe::packed(self.key_len, key))
    }

    fn lookup_as(&self, key: Key<'_>, probe: &mut Probe<'_>) -> Option<(EntryHandle, &V)> {
        let slot = match &self.index {
            Index::Exact(map) => map.probe(probe, &self.width_mask).copied(),
            Index::Lpm(lpm) => lpm.lookup(key, probe),
            Index::Ternary(ts) => self.lookup_ternary(ts, key, probe),
        }?;
        let e = self.slots[slot as usize]
            .as_ref()
            .expect("index points at live slots");
        Some((EntryHandle(slot), &e.value))
    }

    fn lookup_ternary(&self, ts: &TupleSpace, key: Key<'_>, probe: &mut Probe) -> Option<u32> {
        let mut best: Option<(i32, u32)> = None;
        for &g in &ts.order {
            let group = ts.groups[g].as_ref().expect("order lists live groups");
            if best.is_some_and(|(bp, _)| group.best < bp) {
                break;
            }
            // Group masks lie within the field widths, so masking also canonicalizes.
            let Some(bucket) = group.buckets.probe(probe, &group.mask) else {
                continue;
            };
            for &(p, slot) in bucket {
                if best.is_some_and(|(bp, bs)| p < bp || (p == bp && slot > bs)) {
                    break;
                }
                if ts.range_fields.is_empty() || self.ranges_match(&ts.range_fields, slot, key) {
                    best = Some((p, slot));
                    break;
                }
            }
        }
        best.map(|(_, slot)| slot)
    }

    fn ranges_match(&self, range_fields: &[usize], slot: u32, key: Key<'_>) -> bool {
        let e = self.slots[slot as usize]
            .as_ref()
            .expect("index points at live slots");
        let mut bounds = &e.key[2 * self.key_len..];
        range_fields.iter().all(|&f| {
            let l = self.fields[f];
            let (low, rest) = bounds.split_at(l.len);
            let (high, rest) = rest.split_at(l.len);
            bounds = rest;
            match key {
                // Bits above the width are already clear (`lookup_packed`).
                Key::Packed(k) => {
                    let v = (k >> (8 * (self.key_len - l.offset - l.len))) & len_mask(l.len);
                    (pack(low)..=pack(high)).contains(&v)
                }
                Key::Bytes(key) => {
                    let k = &key[l.offset..l.offset + l.len];
                    // Compare as big-endian numbers, ignoring bits above the width.
                    let top = k[0] & top_byte_mask(l.width);
                    (top, &k[1..]) >= (low[0], &low[1..]) && (top, &k[1..]) <= (high[0], &high[1..])
                }
            }
        })
    }

    /// Validates an entry against the key and reduces it to the form the table stores.
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
        let ternary = self.needs_priority();
        let mut key = KeyBytes::zeroed(self.stored_len);
        // Tables without priorities store the value only: their masks follow from the fields
        // (and the prefix length).
        let (value, rest) = key.split_at_mut(self.key_len);
        let (mask, mut bounds) = rest.split_at_mut(if ternary { self.key_len } else { 0 });
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
            let mdst = mask.get_mut(l.offset..l.offset + l.len).unwrap_or_default();
            let full = &self.width_mask.bytes[l.offset..l.offset + l.len];
            match m {
                FieldMatch::Exact(v) | FieldMatch::Optional(Some(v)) => {
                    check(v)?;
                    vdst.copy_from_slice(v);
                    mdst.copy_from_slice(&full[..mdst.len()]);
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
                    let keep = l.len as u32 * 8 - l.width + p;
                    if v.iter()
                        .enumerate()
                        .any(|(i, b)| b & !prefix_byte(keep, i) != 0)
                    {
                        return Err(TableError::BitsBeyondPrefix {
                            field: i,
                            prefix_len: *p,
                        });
                    }
                    vdst.copy_from_slice(v);
                    for (i, (b, f)) in mdst.iter_mut().zip(full).enumerate() {
                        *b = prefix_byte(keep, i) & f;
                    }
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
                    let (dst, rest) = std::mem::take(&mut bounds).split_at_mut(2 * l.len);
                    dst[..l.len].copy_from_slice(low);
                    dst[l.len..].copy_from_slice(high);
                    bounds = rest;
                }
            }
        }
        match (ternary, priority) {
            (true, None) => return Err(TableError::MissingPriority),
            (true, Some(p)) if p < 1 => return Err(TableError::InvalidPriority { priority: p }),
            (false, Some(_)) => return Err(TableError::UnexpectedPriority),
            _ => {}
        }
        Ok(Compiled { key, prefix_len })
    }

    /// The slot holding this exact entry, if any.
    fn locate(&self, c: &Compiled, priority: i32) -> Option<u32> {
        let value = c.value(self.key_len);
        match &self.index {
            Index::Exact(map) => map.get(value).copied(),
            Index::Lpm(lpm) => lpm.level(c.prefix_len)?.map.get(value).copied(),
            Index::Ternary(ts) => {
                let group = ts.groups[*ts.by_mask.get(c.mask(self.key_len))?].as_ref()?;
                group
                    .buckets
                    .get(value)?
                    .iter()
                    .find(|&&(p, s)| {
                        p == priority
                            && self.slots[s as usize]
                                .as_ref()
                                .is_some_and(|e| *e.key == *c.key)
                    })
                    .map(|&(_, s)| s)
            }
        }
    }

    /// Indexes a new entry at `slot`, or gives the slot of the entry with its key. Exact and LPM
    /// tables check and insert in one hash probe.
    fn index_add(&mut self, c: &Compiled, priority: i32, slot: u32) -> Result<(), u32> {
        if matches!(self.index, Index::Ternary(_)) {
            if let Some(existing) = self.locate(c, priority) {
                return Err(existing);
            }
        }
        let value = c.value(self.key_len);
        match &mut self.index {
            Index::Exact(map) => map.insert_new(value, slot),
            Index::Lpm(lpm) => lpm.add(value, c.prefix_len, slot, &self.width_mask.bytes),
            Index::Ternary(ts) => {
                ts.add(value, c.mask(self.key_len), priority, slot);
                Ok(())
            }
        }
    }

    fn index_remove(&mut self, c: &Compiled, priority: i32, slot: u32) {
        let value = c.value(self.key_len);
        match &mut self.index {
            Index::Exact(map) => {
                map.remove(value);
            }
            Index::Lpm(lpm) => lpm.remove(value, c.prefix_len),
            Index::Ternary(ts) => ts.remove(value, c.mask(self.key_len), priority, slot),
        }
    }
}

impl Compiled {
    fn value(&self, key_len: usize) -> &[u8] {
        &self.key[..key_len]
    }

    /// The mask, in priority tables (others do not store it).
    fn mask(&self, key_len: usize) -> &[u8] {
        &self.key[key_len..2 * key_len]
    }
}

impl LpmIndex {
    fn new(field: FieldLayout, key_len: usize) -> Self {
        let mut tiers = Vec::new();
        let mut max_len = field.width;
        for bits in [16, 8] {
            let bits = bits.min(max_len);
            if tiers.last().is_some_and(|t: &Tier| t.bits == bits) {
                break;
            }
            tiers.push(Tier {
                bits,
                max_len,
                lengths: Vec::new(),
                words: (max_len - bits + 1).div_ceil(64) as usize,
                counts: Vec::new(),
            });
            if bits == 0 {
                break;
            }
            max_len = bits - 1;
        }
        LpmIndex {
            field,
            packed_shift: 8 * key_len.saturating_sub(field.offset + field.len) as u32,
            levels: (0..=field.width).map(|_| None).collect(),
            tiers,
            short: Vec::new(),
        }
    }

    fn level(&self, prefix_len: u32) -> Option<&LpmLevel> {
        self.levels.get(prefix_len as usize)?.as_ref()
    }

    /// The leading `bits` (at most 16) bits of the LPM field in a key or an entry's value.
    fn bucket(&self, key: &[u8], bits: u32) -> usize {
        let f = &self.field;
        let bytes = &key[f.offset..f.offset + f.len.min(3)];
        let v = bytes.iter().fold(0u32, |a, &b| (a << 8) | u32::from(b));
        let pad = f.len as u32 * 8 - f.width;
        let shift = bytes.len() as u32 * 8 - pad - bits;
        ((v >> shift) & ((1 << bits) - 1)) as usize
    }

    fn tier_of(&self, len: u32) -> Option<usize> {
        self.tiers
            .iter()
            .position(|t| (t.bits..=t.max_len).contains(&len))
    }

    /// [`LpmIndex::bucket`] of a packed key.
    fn bucket_packed(&self, key: u128, bits: u32) -> usize {
        // Below 128: the field lies within the key's 128 bits, and only a 1-bit field has a
        // 0-bit tier.
        let v = key >> (self.packed_shift + self.field.width - bits);
        (v as u32 & ((1 << bits) - 1)) as usize
    }

    fn lookup(&self, key: Key<'_>, probe: &mut Probe) -> Option<u32> {
        let hit = |len: u32, probe: &mut Probe| {
            let level = self.level(len).expect("listed lengths have levels");
            level.map.probe(probe, &level.mask).copied()
        };
        for t in &self.tiers {
            if t.lengths.is_empty() {
                continue;
            }
            let b = match key {
                Key::Packed(k) => self.bucket_packed(k, t.bits),
                Key::Bytes(k) => self.bucket(k, t.bits),
            };
            let at = b * t.words;
            for (w, &word) in t.lengths[at..at + t.words].iter().enumerate().rev() {
                let mut bits = word;
                while bits != 0 {
                    let bit = 63 - bits.leading_zeros();
                    bits &= !(1 << bit);
                    if let Some(slot) = hit(t.bits + w as u32 * 64 + bit, probe) {
                        return Some(slot);
                    }
                }
            }
        }
        self.short.iter().find_map(|&len| hit(len, probe))
    }

    /// Adds a prefix (`value` of length `len`) at `slot`, or gives the slot of the entry with
    /// the same prefix. `width_mask` is the table's: a new level's mask is made from it.
    fn add(&mut self, value: &[u8], len: u32, slot: u32, width_mask: &[u8]) -> Result<(), u32> {
        let tier = self.tier_of(len);
        match self.levels[len as usize].as_mut() {
            Some(level) => level.map.insert_new(value, slot)?,
            None => {
                let mut map = KeyMap::new(value.len());
                map.insert_new(value, slot)?;
                let f = &self.field;
                let mut mask: Box<[u8]> = width_mask.into();
                let keep = f.len as u32 * 8 - f.width + len;
                // The padding above the field's width stays clear, as in `width_mask`.
                for (i, b) in mask[f.offset..f.offset + f.len].iter_mut().enumerate() {
                    *b &= prefix_byte(keep, i);
                }
                self.levels[len as usize] = Some(LpmLevel {
                    mask: Mask::new(mask),
                    map,
                });
                if tier.is_none() {
                    let at = self.short.partition_point(|&l| l > len);
                    self.short.insert(at, len);
                }
            }
        }
        if let Some(i) = tier {
            let b = self.bucket(value, self.tiers[i].bits);
            let t = &mut self.tiers[i];
            if t.lengths.is_empty() {
                t.lengths = vec![0; t.words << t.bits];
                t.counts = (0..1usize << t.bits).map(|_| Box::default()).collect();
            }
            let bit = (len - t.bits) as usize;
            let counts = &mut t.counts[b];
            if counts.is_empty() {
                *counts = vec![0; (t.max_len - t.bits + 1) as usize].into();
            }
            counts[bit] += 1;
            t.lengths[b * t.words + bit / 64] |= 1 << (bit % 64);
        }
        Ok(())
    }

    fn remove(&mut self, value: &[u8], len: u32) {
        let Some(level) = self.levels[len as usize].as_mut() else {
            return;
        };
        level.map.remove(value);
        if level.map.is_empty() {
            self.levels[len as usize] = None;
            self.short.retain(|&l| l != len);
        }
        if let Some(i) = self.tier_of(len) {
            let b = self.bucket(value, self.tiers[i].bits);
            let t = &mut self.tiers[i];
            let bit = (len - t.bits) as usize;
            if let Some(n) = t.counts.get_mut(b).and_then(|c| c.get_mut(bit)) {
                *n -= 1;
                if *n == 0 {
                    t.lengths[b * t.words + bit / 64] &= !(1 << (bit % 64));
                }
            }
        }
    }
}

impl TupleSpace {
    fn new(key_len: usize, range_fields: Vec<usize>) -> Self {
        TupleSpace {
            key_len,
            groups: Vec::new(),
            free_groups: Vec::new(),
            by_mask: FastMap::default(),
            order: Vec::new(),
            range_fields,
        }
    }

    fn add(&mut self, value: &[u8], mask: &[u8], priority: i32, slot: u32) {
        let g = match self.by_mask.get(mask) {
            Some(&g) => g,
            None => {
                let group = MaskGroup {
                    mask: Mask::new(mask.into()),
                    buckets: KeyMap::new(self.key_len),
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
                self.by_mask.insert(mask.into(), g);
                g
            }
        };
        let group = self.groups[g].as_mut().expect("by_mask lists live groups");
        let bucket = group.buckets.get_or_insert_with(value, Vec::new);
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

    fn remove(&mut self, value: &[u8], mask: &[u8], priority: i32, slot: u32) {
        let Some(&g) = self.by_mask.get(mask) else {
            return;
        };
        let group = self.groups[g].as_mut().expect("by_mask lists live groups");
        if let Some(bucket) = group.buckets.get_mut(value) {
            bucket.retain(|&(_, s)| s != slot);
            if bucket.is_empty() {
                group.buckets.remove(value);
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
                self.by_mask.remove(mask);
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
