//! P4Info as p4c generates it (`control-plane/p4RuntimeSerializer.cpp`, v1model arch handler):
//! a program's control-plane objects ([`ControlPlane`]) in, `p4.config.v1.P4Info` out, with
//! p4c's ids, aliases, field ids, ordering, annotations and `type_info`, so that a controller
//! written against p4c's P4Info works unchanged.

mod generate;
mod ids;
pub mod model;
mod types;

pub use generate::generate;
pub use ids::{jenkins_one_at_a_time, Kind};
pub use model::*;
pub use types::bytestring;

use p4runtime_proto::p4info::P4Info;

/// What can make a program's P4Info impossible; every variant names the declaration at fault so
/// the compiler can point at its source location. Messages follow p4c's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum P4InfoError {
    #[error("{name}: @id has the wrong 8-bit prefix ({id:#010x}; {kind} ids have prefix {expected_prefix:#04x})")]
    WrongIdPrefix {
        kind: &'static str,
        name: String,
        id: u32,
        expected_prefix: u32,
    },
    #[error("{name}: @id {id} is assigned to multiple declarations")]
    DuplicateId { name: String, id: u32 },
    #[error("{name}: @id {id} should be an unsigned 32-bit integer")]
    IdNotUnsigned32 { name: String, id: u64 },
    #[error("No available id to represent {kind} {name} in P4Runtime")]
    NoIdLeft { kind: &'static str, name: String },
    #[error("Name '{name}' is used for multiple {kind} objects in the P4Info message")]
    DuplicateName { kind: &'static str, name: String },
    #[error("{owner}: {field}: 0 is not a valid @id value")]
    ZeroFieldId { owner: String, field: String },
    #[error("{owner}: {field}: @id {id} is used multiple times")]
    DuplicateFieldId {
        owner: String,
        field: String,
        id: u64,
    },
    #[error("Table '{table}' has an action reference ('{action}') which is annotated with both '@tableonly' and '@defaultonly'")]
    ConflictingScope { table: String, action: String },
    #[error("{owner}: refers to unknown {kind} '{name}'")]
    UnknownReference {
        owner: String,
        kind: &'static str,
        name: String,
    },
    #[error("{owner}: default action {action} takes {expected} arguments, {given} given")]
    DefaultActionArity {
        owner: String,
        action: String,
        expected: usize,
        given: usize,
    },
    #[error("unknown type '{name}'")]
    UnknownType { name: String },
    #[error("{name}: {what}")]
    UnsupportedType { name: String, what: &'static str },
    #[error("Action parameter {action}.{param} has a type which is not bit<>, int<>, bool, type or serializable enum")]
    BadParamType { action: String, param: String },
    #[error("{name}: size {size} does not fit in 32 bits")]
    SizeTooLarge { name: String, size: i64 },
}

impl P4InfoError {
    /// The declaration (fully qualified name) the error is about.
    pub fn entity(&self) -> &str {
        match self {
            P4InfoError::WrongIdPrefix { name, .. }
            | P4InfoError::DuplicateId { name, .. }
            | P4InfoError::IdNotUnsigned32 { name, .. }
            | P4InfoError::NoIdLeft { name, .. }
            | P4InfoError::DuplicateName { name, .. }
            | P4InfoError::UnknownType { name }
            | P4InfoError::UnsupportedType { name, .. }
            | P4InfoError::SizeTooLarge { name, .. } => name,
            P4InfoError::ZeroFieldId { owner, .. }
            | P4InfoError::DuplicateFieldId { owner, .. }
            | P4InfoError::UnknownReference { owner, .. }
            | P4InfoError::DefaultActionArity { owner, .. } => owner,
            P4InfoError::ConflictingScope { table, .. } => table,
            P4InfoError::BadParamType { action, .. } => action,
        }
    }
}

/// The two comment lines p4c writes at the top of a `.p4info.txtpb` file.
pub const TXTPB_HEADER: &str =
    "# proto-file: p4/config/v1/p4info.proto\n# proto-message: p4.config.v1.P4Info\n\n";

/// P4Info as p4c writes `--p4runtime-files X.p4info.txtpb`: the two comment lines, a blank
/// line, then the text format.
pub fn to_txtpb(info: &P4Info) -> String {
    let mut out = String::from(TXTPB_HEADER);
    out.push_str(&p4runtime_proto::to_text(info));
    out
}
