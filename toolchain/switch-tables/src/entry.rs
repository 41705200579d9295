//! What a table entry is made of, shared by the tables and their errors.

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

/// Identifies an entry for as long as it is installed. Handles are dense slot indices below
/// the table's `max_size` (the lowest free slot is reused first, as bmv2's handle manager
/// does), so callers can keep per-entry state such as direct counters in arrays of
/// `max_size` indexed by `h.0`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct EntryHandle(pub u32);
