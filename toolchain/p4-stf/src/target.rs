//! What a switch implements to be driven by an STF test.
//!
//! The runner resolves STF names (full name or unique suffix, `hdr$0` for `hdr[0]`, `.valid` for
//! `$valid$`), fills in unspecified keys, derives ternary masks and LPM prefixes, checks widths,
//! and hands the switch fully resolved entries; a target only executes.

use crate::ast::MeterRate;
use crate::value::Value;

/// Match kinds of the BMv2 JSON format (`match_type` of a table key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchKind {
    Exact,
    Lpm,
    Ternary,
    Range,
    Optional,
    /// P4_14 header validity (`valid`): a 1-bit exact match.
    Valid,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyInfo {
    /// The key's name as in the JSON (`name`, else the dotted `target`), e.g. `hdr.ipv4.dstAddr`.
    pub name: String,
    pub kind: MatchKind,
    pub width: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionInfo {
    /// Full name, e.g. `ingress.set_port`.
    pub name: String,
    /// Runtime parameters in order: name and width in bits.
    pub params: Vec<(String, u32)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableInfo {
    /// Full name, e.g. `ingress.ipv4_lpm`.
    pub name: String,
    pub keys: Vec<KeyInfo>,
    pub actions: Vec<ActionInfo>,
}

/// One key field of a resolved entry; byte strings are big-endian, `width.div_ceil(8)` long.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    Range {
        low: Vec<u8>,
        high: Vec<u8>,
    },
    /// `None` matches anything.
    Optional(Option<Vec<u8>>),
}

/// A table entry ready to install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Full table name.
    pub table: String,
    /// One per table key, in the table's key order.
    pub matches: Vec<FieldMatch>,
    /// As written in the STF, where the larger number wins (P4Runtime's convention). bmv2's
    /// CLI wants the opposite; p4c's runner passes it `10000 - priority`.
    pub priority: Option<u32>,
    /// Full action name.
    pub action: String,
    /// One per action parameter, in order, each `width.div_ceil(8)` bytes.
    pub args: Vec<Vec<u8>>,
}

/// An entry the target installed, for direct counters (`check_counter c($NAME)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EntryHandle(pub u64);

/// Which cell of a counter to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CounterCell {
    /// Index into an indirect counter array.
    Index(u64),
    /// The direct counter attached to an installed entry.
    Entry { table: String, handle: EntryHandle },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CounterValue {
    pub packets: u64,
    pub bytes: u64,
}

/// A packet the switch transmitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputPacket {
    pub port: u32,
    pub data: Vec<u8>,
}

/// A name an STF statement uses that the program does not resolve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("no {what} named '{wanted}'")]
    Missing { what: String, wanted: String },
    #[error("{what} name '{wanted}' is ambiguous: {}", candidates.join(", "))]
    Ambiguous {
        what: String,
        wanted: String,
        candidates: Vec<String>,
    },
}

/// Why a target could not do what a statement asks; the runner reports it at the statement.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// An optional feature the target does not implement (the STF command's name).
    #[error("{0} is not supported by this target")]
    Unsupported(&'static str),
    /// A register, counter or meter name the target does not resolve.
    #[error(transparent)]
    Name(#[from] NameError),
    /// The target's own error: its control plane refused the request.
    #[error(transparent)]
    Target(Box<dyn std::error::Error + Send + Sync>),
}

impl TargetError {
    /// Wraps the target's own error, keeping its type as the source.
    pub fn target(e: impl std::error::Error + Send + Sync + 'static) -> TargetError {
        TargetError::Target(Box::new(e))
    }
}

pub type TargetResult<T> = Result<T, TargetError>;

fn unsupported<T>(what: &'static str) -> TargetResult<T> {
    Err(TargetError::Unsupported(what))
}

/// A switch under test. Optional features default to "not supported", so a target implements
/// what it has; an STF that uses a missing feature fails at that statement.
///
/// Register, counter and meter names arrive as written in the STF; resolve them as bmv2's CLI
/// does (full name or unique suffix; [`crate::resolve_name`] does that).
pub trait StfTarget {
    /// Every table of the program (all pipelines), read once before the test runs.
    fn tables(&self) -> Vec<TableInfo>;

    fn add_entry(&mut self, entry: &Entry) -> TargetResult<EntryHandle>;

    /// Sets a table's default action; `args` as in [`Entry::args`].
    fn set_default(&mut self, table: &str, action: &str, args: &[Vec<u8>]) -> TargetResult<()>;

    /// `remove all`: delete every entry of every table.
    fn clear_tables(&mut self) -> TargetResult<()> {
        unsupported("remove all")
    }

    /// Injects a packet on an ingress port.
    fn send_packet(&mut self, port: u32, data: &[u8]) -> TargetResult<()>;

    /// Finishes every packet in flight (recirculations, resubmissions, clones and multicast
    /// copies included) and returns the packets transmitted since the previous call, in
    /// transmission order.
    fn wait_idle(&mut self) -> TargetResult<Vec<OutputPacket>>;

    fn mirroring_add(&mut self, _session: u32, _port: u32) -> TargetResult<()> {
        unsupported("mirroring_add")
    }
    fn mirroring_add_mc(&mut self, _session: u32, _mgrp: u32) -> TargetResult<()> {
        unsupported("mirroring_add_mc")
    }
    fn mirroring_delete(&mut self, _session: u32) -> TargetResult<()> {
        unsupported("mirroring_delete")
    }
    /// A description of the session for the report.
    fn mirroring_get(&mut self, _session: u32) -> TargetResult<String> {
        unsupported("mirroring_get")
    }

    fn mc_mgrp_create(&mut self, _mgrp: u32) -> TargetResult<()> {
        unsupported("mc_mgrp_create")
    }
    /// Creates a replication node; handles must be 0, 1, 2, ... in creation order, as bmv2
    /// assigns them, because STF files name nodes by those numbers.
    fn mc_node_create(&mut self, _rid: u32, _ports: &[u32]) -> TargetResult<u32> {
        unsupported("mc_node_create")
    }
    fn mc_node_update(&mut self, _handle: u32, _ports: &[u32]) -> TargetResult<()> {
        unsupported("mc_node_update")
    }
    fn mc_node_associate(&mut self, _mgrp: u32, _handle: u32) -> TargetResult<()> {
        unsupported("mc_node_associate")
    }

    fn register_read(&mut self, _register: &str, _index: u64) -> TargetResult<Value> {
        unsupported("register_read")
    }
    fn register_write(&mut self, _register: &str, _index: u64, _value: &Value) -> TargetResult<()> {
        unsupported("register_write")
    }
    fn register_reset(&mut self, _register: &str) -> TargetResult<()> {
        unsupported("register_reset")
    }

    fn counter_read(&mut self, _counter: &str, _cell: &CounterCell) -> TargetResult<CounterValue> {
        unsupported("counter_read")
    }
    fn counter_write(
        &mut self,
        _counter: &str,
        _index: u64,
        _value: CounterValue,
    ) -> TargetResult<()> {
        unsupported("counter_write")
    }

    /// `index` is `None` for every cell of the array (`meter_array_set_rates`).
    fn meter_set_rates(
        &mut self,
        _meter: &str,
        _index: Option<u64>,
        _rates: &[MeterRate],
    ) -> TargetResult<()> {
        unsupported("meter rates")
    }
    fn meter_get_rates(&mut self, _meter: &str, _index: u64) -> TargetResult<Vec<MeterRate>> {
        unsupported("meter_get_rates")
    }
}
