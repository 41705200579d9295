//! Match tables and action profiles of `p4-switch`: pure data structures with P4Runtime and
//! bmv2 semantics. See README.md for the design and what is covered.

mod entry;
mod error;
mod keys;
mod profile;
mod table;

pub use entry::{EntryHandle, FieldMatch, KeyField, MatchKind};
pub use error::{ProfileError, TableError};
pub use keys::MAX_PACKED_KEY;
pub use profile::{ActionProfile, GroupMember};
pub use table::{priority_from_bmv2, EntryRef, Table, MAX_FIELD_WIDTH};
