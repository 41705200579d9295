use crate::entry::{EntryHandle, MatchKind};

/// Why a table operation was refused. Field indices count from 0 in key order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    #[error("key field {field}: width 0 is not a valid match field width")]
    ZeroWidthKey { field: usize },
    #[error("key field {field}: width {width} exceeds the maximum of {max} bits")]
    FieldTooWide { field: usize, width: u32, max: u32 },
    #[error("key fields {first} and {second} are both LPM; a table takes at most one (bmv2)")]
    MultipleLpm { first: usize, second: usize },
    #[error("table is full ({max_size} entries)")]
    Full { max_size: usize },
    #[error("an entry with this key and priority already exists (handle {})", existing.0)]
    Duplicate { existing: EntryHandle },
    #[error("expected {expected} key fields, got {got}")]
    WrongFieldCount { expected: usize, got: usize },
    #[error(
        "key field {field}: the table declares match kind {expected:?}, the entry gives {got:?}"
    )]
    WrongMatchKind {
        field: usize,
        expected: MatchKind,
        got: MatchKind,
    },
    #[error("key field {field}: value has {got} bytes, a {width}-bit field takes {expected}")]
    BadWidth {
        field: usize,
        width: u32,
        expected: usize,
        got: usize,
    },
    #[error("key field {field}: value has bits set above the field width of {width} bits")]
    NonCanonical { field: usize, width: u32 },
    #[error(
        "key field {field}: prefix length {prefix_len} exceeds the field width of {width} bits"
    )]
    PrefixTooLong {
        field: usize,
        prefix_len: u32,
        width: u32,
    },
    #[error("key field {field}: value has bits set beyond the /{prefix_len} prefix")]
    BitsBeyondPrefix { field: usize, prefix_len: u32 },
    #[error("key field {field}: ternary value has bits set outside the mask")]
    ValueOutsideMask { field: usize },
    #[error("key field {field}: range low bound is above the high bound")]
    RangeInverted { field: usize },
    #[error("the table has ternary, range or optional fields, so entries need a priority")]
    MissingPriority,
    #[error("the table has only exact and at most one LPM field, so entries take no priority")]
    UnexpectedPriority,
    #[error("priority {priority} is invalid: P4Runtime priorities are 1 to 2147483647")]
    InvalidPriority { priority: i32 },
    #[error("bmv2 priority {priority} is invalid: bmv2 priorities are 0 to 2147483646")]
    InvalidBmv2Priority { priority: i32 },
    #[error("no entry with handle {}", .0 .0)]
    InvalidHandle(EntryHandle),
}

/// Why an action-profile operation was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfileError {
    #[error("member {0} already exists")]
    DuplicateMember(u32),
    #[error("member {0} does not exist")]
    UnknownMember(u32),
    #[error("member {member} is still in group {group}")]
    MemberInUse { member: u32, group: u32 },
    #[error("the action profile is full ({max} members)")]
    MembersFull { max: usize },
    #[error("group {0} already exists")]
    DuplicateGroup(u32),
    #[error("group {0} does not exist")]
    UnknownGroup(u32),
    #[error("the action profile is full ({max} groups)")]
    GroupsFull { max: usize },
    #[error("group {group}: member {member} is listed twice")]
    MemberListedTwice { group: u32, member: u32 },
    #[error("group {group}: member {member} has weight 0; weights are at least 1")]
    ZeroWeight { group: u32, member: u32 },
    #[error("group {group}: total weight {size} exceeds the maximum group size {max}")]
    GroupTooLarge { group: u32, size: u64, max: usize },
}
