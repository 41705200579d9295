//! The statements of an STF file, as parsed, before any name is resolved against a program.

use std::fmt;

use crate::pattern::Pattern;
use crate::value::Value;

/// A 1-based line and column in the STF file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Loc {
    pub line: u32,
    pub col: u32,
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// An integer literal as written. `0x`/`0b` literals may have `*` digits (don't care); the
/// digit count matters because STF derives ternary masks and LPM prefixes from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Number {
    pub value: Value,
    /// Bits that were not written as `*`, when some were; `None` when every digit is given.
    pub care: Option<Value>,
    pub digits: u32,
    /// How many of the digits are `*`.
    pub wildcards: u32,
    /// 4 for hex, 1 for binary, 0 for decimal.
    pub bits_per_digit: u32,
    pub text: String,
}

/// The right-hand side of `field:value` in an `add`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyValue {
    /// A number; for ternary and LPM keys its digits decide the mask or prefix, as in p4c.
    Number(Number),
    /// `value/prefix_len`.
    Prefix(Number, u32),
    /// `value&&&mask` (bmv2 CLI syntax).
    Masked(Number, Number),
    /// `low->high` (bmv2 CLI syntax).
    Range(Number, Number),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyMatch {
    pub loc: Loc,
    pub field: String,
    pub value: KeyValue,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionCall {
    pub loc: Loc,
    pub name: String,
    pub args: Vec<(String, Number)>,
}

/// Which entry a `check_counter` reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CounterRef {
    /// An index into an indirect counter array.
    Index(u64),
    /// The direct counter of the entry an `add ... = NAME` named (`$NAME` or `NAME`).
    Entry(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountKind {
    Packets,
    Bytes,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Cmp {
    pub fn holds<T: PartialOrd>(self, left: &T, right: &T) -> bool {
        match self {
            Cmp::Eq => left == right,
            Cmp::Ne => left != right,
            Cmp::Lt => left < right,
            Cmp::Le => left <= right,
            Cmp::Gt => left > right,
            Cmp::Ge => left >= right,
        }
    }

    pub fn symbol(self) -> &'static str {
        match self {
            Cmp::Eq => "==",
            Cmp::Ne => "!=",
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
        }
    }
}

/// One `rate:burst` pair of a meter command (rate in units per microsecond, as bmv2's CLI).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeterRate {
    pub rate: f64,
    pub burst: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum StmtKind {
    /// `add TABLE [PRIORITY] FIELD:VALUE... ACTION(ARG:VALUE, ...) [= NAME]`.
    /// STF priorities follow P4Runtime: the larger number wins.
    Add {
        table: String,
        priority: Option<u32>,
        keys: Vec<KeyMatch>,
        action: ActionCall,
        name: Option<String>,
    },
    /// `setdefault TABLE ACTION(ARGS)`.
    SetDefault {
        table: String,
        action: ActionCall,
    },
    /// `remove all`: delete every entry of every table.
    RemoveAll,
    /// `packet PORT HEX...`.
    Packet {
        port: u32,
        data: Vec<u8>,
    },
    /// `expect PORT [PATTERN]`; without a pattern, any number of packets on PORT is fine.
    Expect {
        port: u32,
        pattern: Option<Pattern>,
    },
    /// `no_packet`: accepted for compatibility; unexpected packets on the test's ports always
    /// fail it.
    NoPacket,
    /// `wait`: let every packet in flight finish.
    Wait,
    /// `check_counter NAME(INDEX|$ENTRY) [packets|bytes OP NUMBER]`; without a condition the
    /// counter must be zero in both packets and bytes.
    CheckCounter {
        counter: String,
        index: CounterRef,
        check: Option<(CountKind, Cmp, u64)>,
    },
    MirroringAdd {
        session: u32,
        port: u32,
    },
    MirroringAddMc {
        session: u32,
        mgrp: u32,
    },
    MirroringDelete {
        session: u32,
    },
    MirroringGet {
        session: u32,
    },
    McMgrpCreate {
        mgrp: u32,
    },
    McNodeCreate {
        rid: u32,
        ports: Vec<u32>,
    },
    McNodeUpdate {
        handle: u32,
        ports: Vec<u32>,
    },
    McNodeAssociate {
        mgrp: u32,
        handle: u32,
    },
    CounterRead {
        counter: String,
        index: u64,
    },
    CounterWrite {
        counter: String,
        index: u64,
        packets: u64,
        bytes: u64,
    },
    /// `register_read NAME INDEX [OP VALUE]`; with a condition it is a checked expectation.
    RegisterRead {
        register: String,
        index: u64,
        check: Option<(Cmp, Value)>,
    },
    RegisterWrite {
        register: String,
        index: u64,
        value: Value,
    },
    RegisterReset {
        register: String,
    },
    /// `meter_set_rates NAME INDEX RATE:BURST...` or, without index,
    /// `meter_array_set_rates NAME RATE:BURST...`.
    MeterSetRates {
        meter: String,
        index: Option<u64>,
        rates: Vec<MeterRate>,
    },
    MeterGetRates {
        meter: String,
        index: u64,
    },
}

/// A statement with where it starts and its source text (for reports).
#[derive(Debug, Clone, PartialEq)]
pub struct Stmt {
    pub loc: Loc,
    pub text: String,
    pub kind: StmtKind,
}
