//! A runner for p4c's STF ("simple test framework") files against any switch.
//!
//! ```text
//! add ipv4_lpm hdr.ipv4.dstAddr:0x0a000000/8 ingress.set_port(port:2)
//! packet 0 000000000002 000000000001 0800 4500...
//! expect 2 000000000002 ************ 0800 4500... $
//! ```
//!
//! [`parse`] turns the text into [`Stmt`]s with locations; [`run_stf`] drives a [`StfTarget`]
//! (the switch), matches the packets it transmits against the expectations, port by port and in
//! order, and returns a [`Report`] that prints one PASS/FAIL line per expectation (with a packet
//! diff on failure) and ends with `N passed, N failed`.

mod ast;
mod parse;
mod pattern;
mod resolve;
mod runner;
mod target;
mod value;

pub use ast::{
    ActionCall, Cmp, CountKind, CounterRef, KeyMatch, KeyValue, Loc, MeterRate, Number, Stmt,
    StmtKind,
};
pub use parse::{parse, Diagnostic};
pub use pattern::{render_diff, Mismatch, Pattern};
pub use resolve::resolve_name;
pub use runner::{run_stf, run_stf_source, run_stmts, Item, Report, Status, StfError};
pub use target::{
    ActionInfo, CounterCell, CounterValue, Entry, EntryHandle, FieldMatch, KeyInfo, MatchKind,
    NameError, OutputPacket, StfTarget, TableInfo, TargetError, TargetResult,
};
pub use value::Value;
