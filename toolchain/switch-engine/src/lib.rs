//! Execution engine of the BMv2 JSON format with simple_switch (v1model) semantics.
//!
//! Pure: no I/O, no threads, no clock (time comes in as microseconds). [`Switch::from_json`]
//! compiles a program once (names resolved to indices, expressions to trees over those
//! indices); [`Switch::ingress`] and [`Switch::egress`] run packets with a traffic manager in
//! between, [`Switch::process`] runs them through an in-engine FIFO. The control-plane API is
//! on [`Switch`] too (tables, action profiles, counters, registers, meters, mirroring, PRE).

mod api;
mod eval;
mod exec;
mod expr;
mod load;
mod phv;
mod program;
mod state;
mod switch;
mod value;

pub use api::{
    ActionDesc, ApiError, EntryAction, EntryDesc, ErrorCode, GroupMembers, KeyDesc, McGroupDesc,
    TableDesc,
};
pub use p4_bmv2_json::{JsonError as LoadError, MatchType};
pub use state::{CounterValue, Digest, MeterRate};
pub use switch::{
    instance_type, EgressJob, MirrorSession, Output, QueueMeta, Stats, Switch, SwitchConfig,
    DROP_PORT,
};
pub use switch_hash::CrcParams;
pub use switch_tables::{EntryHandle, FieldMatch};

mod stf;
pub use stf::StfSwitch;
