//! The compiled program: every name of the JSON resolved to an index once, at load time.

use crate::expr::{Ex, FieldId, FieldLoc, HRef, HeaderId, URef};
use crate::layout::Layout;
use p4_bmv2_json::{MatchType, MeterType};
use std::collections::HashMap;

/// A field of at most 64 bits: `Phv::narrow[i]`, which holds it cut to its width (`mask`).
/// `hdr` is the field's header, which a store marks as written (`Phv::src`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NSlot {
    pub i: u32,
    pub hdr: u32,
    pub mask: u64,
}

/// Where a field's value lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// Fields of at most 64 bits.
    Narrow(NSlot),
    /// Big-endian bytes in `Phv::wide`.
    Wide { off: u32, len: u32 },
    /// Variable-length field: `len` bytes reserved in `Phv::wide`, current width in bits in
    /// `Phv::vl_bits[vl]`. The value is right-aligned in the reserved bytes.
    Varbit { off: u32, len: u32, vl: u32 },
}

#[derive(Debug)]
pub struct HeaderInfo {
    pub metadata: bool,
    pub first_field: FieldId,
    pub nfields: u32,
    /// Bits of the fixed-width fields.
    pub fixed_bits: u32,
    pub varbit: Option<FieldId>,
    /// The header union this header is a member of.
    pub union: Option<u32>,
    /// Its fields' storage, which is contiguous: `Phv::narrow` slots, `Phv::wide` bytes and
    /// its varbit's `Phv::vl_bits` slot, so that zeroing the header is a fill of each.
    pub narrow: std::ops::Range<u32>,
    pub wide: std::ops::Range<u32>,
    pub vl: Option<u32>,
    /// Its fields' offsets, when they are narrow and fixed: extracted and deparsed in one
    /// loop over `narrow` instead of field by field.
    pub layout: Option<Layout>,
}

impl HeaderInfo {
    /// Its `Phv::narrow` slots.
    #[inline]
    pub fn narrow_slots(&self) -> std::ops::Range<usize> {
        self.narrow.start as usize..self.narrow.end as usize
    }
}

#[derive(Debug)]
pub struct FieldInfo {
    pub header: HeaderId,
    pub width: u32,
    pub signed: bool,
    pub slot: Slot,
}

#[derive(Debug)]
pub struct StackInfo {
    pub headers: Vec<HeaderId>,
}

#[derive(Debug)]
pub struct UnionInfo {
    pub headers: Vec<HeaderId>,
}

#[derive(Debug)]
pub struct UnionStackInfo {
    pub unions: Vec<u32>,
}

/// Where an extract writes.
#[derive(Debug, Clone)]
pub enum ExtractTarget {
    Header(HRef),
    Stack(u32),
    UnionStack(u32, u32),
}

#[derive(Debug)]
pub enum ParserOp {
    Extract(ExtractTarget),
    ExtractVl(ExtractTarget, Ex),
    Set(FieldLoc, Ex),
    Verify(Ex, Ex),
    /// Bits to skip.
    Advance(Ex),
    Primitive(Prim),
}

#[derive(Debug)]
pub enum KeyPart {
    /// A value of `width` bits (field, stack field, lookahead or expression).
    Value(Ex, u32),
}

#[derive(Debug)]
pub enum TransMatch {
    Default,
    Value {
        value: Vec<u8>,
        mask: Option<Vec<u8>>,
    },
    Vset {
        vset: u32,
        mask: Option<Vec<u8>>,
    },
}

#[derive(Debug)]
pub struct Transition {
    pub matches: TransMatch,
    pub next: Option<u32>,
}

#[derive(Debug)]
pub struct ParseState {
    pub ops: Vec<ParserOp>,
    pub key: Vec<KeyPart>,
    pub key_bytes: usize,
    pub transitions: Vec<Transition>,
}

#[derive(Debug)]
pub struct ParserInfo {
    pub name: String,
    pub init: Option<u32>,
    pub states: Vec<ParseState>,
}

#[derive(Debug)]
pub struct ParseVsetInfo {
    pub name: String,
    pub bitwidth: u32,
    pub max_size: usize,
    /// Widths of the transition key fields the set is matched against: values come in
    /// compressed (unpadded) and are stored padded per field, like the key.
    pub key_widths: Vec<u32>,
}

#[derive(Debug)]
pub struct DeparserInfo {
    pub order: Vec<HeaderId>,
}

/// A primitive call with its arguments compiled.
#[derive(Debug)]
pub enum Prim {
    Assign(FieldLoc, Ex),
    AssignVl(FieldLoc, FieldLoc),
    AssignHeader(HRef, HRef),
    AssignUnion(URef, URef),
    AssignHeaderStack(u32, u32),
    AssignUnionStack(u32, u32),
    Push(u32, Ex),
    Pop(u32, Ex),
    PushUnion(u32, Ex),
    PopUnion(u32, Ex),
    SetValid(HRef),
    SetInvalid(HRef),
    MarkToDrop,
    Exit,
    Jump(usize),
    JumpIfZero(Ex, usize),
    HashOffset {
        dst: FieldLoc,
        base: Ex,
        calc: u32,
        size: Ex,
    },
    RngUniform(FieldLoc, Ex, Ex),
    Count(u32, Ex),
    ExecuteMeter(u32, Ex, FieldLoc),
    RegisterRead(FieldLoc, u32, Ex),
    RegisterWrite(u32, Ex, Ex),
    CloneI2E(Ex, Option<Ex>),
    CloneE2E(Ex, Option<Ex>),
    Resubmit(Option<Ex>),
    Recirculate(Option<Ex>),
    Digest(Ex),
    Truncate(Ex),
    LogMsg(String, Vec<Ex>),
    Assert(Ex),
    /// Direct meter/counter reads are done by the table; this reads a direct meter's colour.
    Nop,
}

#[derive(Debug)]
pub struct ActionInfo {
    pub name: String,
    pub json_id: i64,
    pub params: Vec<(String, u32)>,
    pub prims: Vec<Prim>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    Table(u32),
    Cond(u32),
    Call(u32),
    End,
}

#[derive(Debug)]
pub enum KeySrc {
    Field(FieldLoc),
    Valid(HRef),
}

#[derive(Debug)]
pub struct KeyElem {
    pub name: String,
    /// The key as bmv2's runtime CLI names it: the target joined with dots, `HEADER_valid`
    /// for validity keys.
    pub target_name: String,
    pub src: KeySrc,
    pub kind: MatchType,
    pub width: u32,
    pub mask: Option<Vec<u8>>,
}

#[derive(Debug)]
pub struct TableInfo {
    pub name: String,
    pub keys: Vec<KeyElem>,
    pub profile: Option<u32>,
    pub max_size: usize,
    pub actions: Vec<u32>,
    /// Next node after each action the table names a next node for (actions not listed go to
    /// `base_default_next`). Every table applied reads it: a table's few pairs share a cache
    /// line, where a vector indexed by action number spread them over up to a kilobyte per
    /// table and missed the cache in the simulator, whose frames evict the pipeline's data.
    pub next_by_action: Vec<(u32, Next)>,
    pub hit_miss: Option<(Next, Next)>,
    pub base_default_next: Next,
    pub default_action_const: bool,
    pub default_entry_const: bool,
    pub immutable_entries: bool,
    pub direct_counter: Option<u32>,
    pub direct_meter: Option<u32>,
    /// JSON `support_timeout`: entries record hits for idle-timeout polling.
    pub support_timeout: bool,
}

impl TableInfo {
    /// Where the pipeline goes after running `action` (without `__HIT__`/`__MISS__` nodes).
    #[inline]
    pub fn next_of(&self, action: u32) -> Next {
        self.next_by_action
            .iter()
            .find(|(a, _)| *a == action)
            .map_or(self.base_default_next, |&(_, n)| n)
    }
}

#[derive(Debug)]
pub struct ProfileInfo {
    pub name: String,
    pub max_size: usize,
    pub selector: Option<u32>,
}

#[derive(Debug)]
pub struct CondInfo {
    pub expr: Ex,
    pub t: Next,
    pub f: Next,
}

#[derive(Debug)]
pub struct CallInfo {
    pub action: u32,
    pub next: Next,
}

#[derive(Debug)]
pub struct PipelineInfo {
    pub name: String,
    pub init: Next,
}

#[derive(Debug)]
pub enum CalcInput {
    Field(FieldId),
    Header(HeaderId),
    Const { value: Vec<u8>, bits: u32 },
    Payload,
}

#[derive(Debug)]
pub struct CalcInfo {
    pub algo: switch_hash::Algorithm,
    pub inputs: Vec<CalcInput>,
}

#[derive(Debug)]
pub struct ChecksumInfo {
    pub target: FieldId,
    pub calc: u32,
    pub update: bool,
    pub verify: bool,
    pub cond: Option<Ex>,
}

#[derive(Debug)]
pub struct CounterInfo {
    pub name: String,
    pub size: usize,
    pub direct: Option<u32>,
}

#[derive(Debug)]
pub struct MeterInfo {
    pub name: String,
    pub size: usize,
    pub kind: MeterType,
    pub rate_count: usize,
    pub direct: Option<u32>,
    pub result: Option<FieldId>,
}

#[derive(Debug)]
pub struct RegisterInfo {
    pub name: String,
    pub size: usize,
    pub width: u32,
}

#[derive(Debug)]
pub struct ListInfo {
    pub name: String,
    pub fields: Vec<FieldId>,
}

/// Fields simple_switch reads or writes itself (`None` when the program lacks them).
#[derive(Debug, Default)]
pub struct Intrinsics {
    pub ingress_port: Option<FieldId>,
    pub egress_spec: Option<FieldId>,
    pub egress_port: Option<FieldId>,
    pub instance_type: Option<FieldId>,
    pub packet_length: Option<FieldId>,
    pub checksum_error: Option<FieldId>,
    pub parser_error: Option<FieldId>,
    pub priority: Option<FieldId>,
    pub ingress_global_timestamp: Option<FieldId>,
    pub egress_global_timestamp: Option<FieldId>,
    pub mcast_grp: Option<FieldId>,
    pub egress_rid: Option<FieldId>,
    pub enq_timestamp: Option<FieldId>,
    pub enq_qdepth: Option<FieldId>,
    pub deq_timedelta: Option<FieldId>,
    pub deq_qdepth: Option<FieldId>,
    pub qid: Option<FieldId>,
}

/// The parser error codes bmv2 raises itself.
#[derive(Debug, Default, Clone, Copy)]
pub struct CoreErrors {
    /// `NoError`'s value (p4c usually gives 0, but any value is allowed).
    pub no_error: u32,
    pub packet_too_short: u32,
    pub stack_out_of_bounds: u32,
    pub header_too_short: u32,
    pub parser_timeout: u32,
    pub parser_invalid_argument: u32,
}

#[derive(Debug, Default)]
pub struct Prog {
    pub headers: Vec<HeaderInfo>,
    pub fields: Vec<FieldInfo>,
    pub stacks: Vec<StackInfo>,
    pub unions: Vec<UnionInfo>,
    pub union_stacks: Vec<UnionStackInfo>,
    pub narrow_slots: u32,
    pub wide_bytes: u32,
    pub varbit_slots: u32,
    pub parsers: Vec<ParserInfo>,
    pub vsets: Vec<ParseVsetInfo>,
    pub deparsers: Vec<DeparserInfo>,
    pub actions: Vec<ActionInfo>,
    pub tables: Vec<TableInfo>,
    pub profiles: Vec<ProfileInfo>,
    pub conds: Vec<CondInfo>,
    pub calls: Vec<CallInfo>,
    pub pipelines: Vec<PipelineInfo>,
    pub calcs: Vec<CalcInfo>,
    /// Names of the JSON's calculations (the first entries of `calcs`; selectors follow).
    pub calc_names: Vec<String>,
    pub checksums: Vec<ChecksumInfo>,
    pub counters: Vec<CounterInfo>,
    pub meters: Vec<MeterInfo>,
    pub registers: Vec<RegisterInfo>,
    /// By JSON id.
    pub field_lists: HashMap<i64, ListInfo>,
    pub learn_lists: HashMap<i64, ListInfo>,
    pub intr: Intrinsics,
    pub errors: CoreErrors,
    /// Error names by value, for logs.
    pub error_names: HashMap<u32, String>,
}

impl Prog {
    /// The nodes node `n` may go to next (a table's for every action and hit or miss).
    pub fn successors(&self, n: Next) -> Vec<Next> {
        match n {
            Next::End => Vec::new(),
            Next::Table(t) => {
                let ti = &self.tables[t as usize];
                let mut out: Vec<Next> = ti.next_by_action.iter().map(|&(_, n)| n).collect();
                if let Some((hit, miss)) = ti.hit_miss {
                    out.extend([hit, miss]);
                }
                out.push(ti.base_default_next);
                out
            }
            Next::Cond(c) => {
                let ci = &self.conds[c as usize];
                vec![ci.t, ci.f]
            }
            Next::Call(c) => vec![self.calls[c as usize].next],
        }
    }

    /// The nodes reachable from `init`, each before every node it may go to (a topological
    /// order, depth first: a node with one successor not reached otherwise comes right before
    /// it). `Err(n)`: node `n` leads back to itself.
    pub fn node_order(&self, init: Next) -> Result<Vec<Next>, Next> {
        let (nt, nc) = (self.tables.len(), self.conds.len());
        let id = |n: Next| match n {
            Next::Table(t) => Some(t as usize),
            Next::Cond(c) => Some(nt + c as usize),
            Next::Call(c) => Some(nt + nc + c as usize),
            Next::End => None,
        };
        // 1: on the current path, 2: done.
        let mut state = vec![0u8; nt + nc + self.calls.len()];
        let mut post = Vec::new();
        let mut path: Vec<(Next, Vec<Next>)> = Vec::new();
        if let Some(i) = id(init) {
            state[i] = 1;
            path.push((init, self.successors(init)));
        }
        while let Some((n, succ)) = path.last_mut() {
            let n = *n;
            let Some(s) = succ.pop() else {
                if let Some(i) = id(n) {
                    state[i] = 2;
                }
                post.push(n);
                path.pop();
                continue;
            };
            match id(s).map(|j| (j, state[j])) {
                Some((j, 0)) => {
                    state[j] = 1;
                    path.push((s, self.successors(s)));
                }
                Some((_, 1)) => return Err(s),
                _ => {}
            }
        }
        post.reverse();
        Ok(post)
    }
}
