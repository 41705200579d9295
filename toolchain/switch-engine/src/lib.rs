//! Execution engine of the BMv2 JSON format: a program compiled once, packets run through its
//! parsers, pipelines and deparsers, the stateful externs they update.
//!
//! Pure: no I/O, no threads, no clock (time comes in as microseconds). This is the library
//! half of the split bmv2 makes between `bm_sim` and its targets: the v1model target
//! (`switch-v1model`: the `Switch` driver, the control-plane API, the STF adapter) is built on
//! these modules, so they are public. [`load::load`] compiles a BMv2 JSON program into a
//! [`program::Prog`] (names resolved to indices, expressions to trees over those indices);
//! [`state::Runtime`] is what the control plane changes; [`exec`] runs an [`exec::Pkt`]
//! through a parser, a pipeline, checksums and a deparser.

pub mod compile;
pub mod eval;
pub mod exec;
pub mod expr;
pub mod layout;
pub mod load;
pub mod phv;
pub mod program;
pub mod state;
pub mod value;

pub use p4_bmv2_json::{JsonError as LoadError, MatchType};
pub use state::{CounterValue, Digest, MeterRate};
pub use switch_hash::CrcParams;
pub use switch_tables::{EntryHandle, FieldMatch};
