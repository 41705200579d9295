//! The v1model target of `switch-engine`, as bmv2's `simple_switch` is the v1model target of
//! `bm_sim`.
//!
//! [`Switch::from_json`] loads a program; [`Switch::ingress`] and [`Switch::egress`] run
//! packets with a traffic manager in between, [`Switch::process`] runs them through an
//! in-engine FIFO (instance types, clones, resubmit, recirculate, multicast through the PRE,
//! drop rules). The control-plane API is on [`Switch`] too (tables, action profiles, counters,
//! registers, meters, mirroring, PRE). [`StfSwitch`] runs p4c STF tests on it (`p4-stf`).

mod action_data;
mod api;
mod error;
mod stf;
mod switch;

pub use api::{
    ActionDesc, EntryAction, EntryDesc, GroupMembers, KeyDesc, McGroupDesc, TableAction, TableDesc,
};
pub use error::{ApiError, ErrorCode};
pub use stf::StfSwitch;
pub use switch::{
    instance_type, EgressJob, MirrorSession, Output, QueueMeta, Stats, Switch, SwitchConfig,
    DROP_PORT,
};
pub use switch_engine::{
    CounterValue, CrcParams, Digest, EntryHandle, FieldMatch, LoadError, MatchType, MeterRate,
};
