//! Load-time compilation of what every packet runs: the pipelines' conditions, the actions'
//! stores and jumps, the checksums' conditions and the tables' key layouts, into closures and
//! copies over PHV slots resolved once. A packet then runs no tree walk, no field-table lookup
//! and no per-node dispatch on those paths (`eval.rs` costs all three per node). A pipeline is
//! one list of steps (`Pipeline`): its action calls' steps inlined between its conditionals
//! and tables, the stores of consecutive calls fused.
//!
//! The closures cover values of at most 64 bits over fixed fields, constants, action
//! parameters and fixed validity bits. Everything else (values wider than 64 bits, headers
//! chosen at run time, lookaheads, stack sizes) keeps the interpreter: a closure calls
//! `eval.rs` on that subtree, and primitives other than stores and jumps run through
//! `exec::run_prim`. Each closure follows the interpreter's rule for its node (`eval`,
//! `eval_bool`, `eval_u32`, `exec`'s assignment), so the results are the same.

use crate::eval::{self, Ctx};
use crate::expr::{Arg, Ex, FieldLoc, HRef, Op1, Op2, K};
use crate::program::{FieldInfo, KeyPart, KeySrc, NSlot, Next, Prim, Prog, Slot, TableInfo};
use crate::value::{mask64, sat_cast, sext, two_comp_mod, usat_cast, Arith};
use num_bigint::BigInt;
use std::fmt;

/// An expression evaluated in `i128` (the interpreter's `eval::<i128>`).
pub type IntFn = Box<dyn Fn(&Ctx) -> i128 + Send + Sync>;
/// A condition (the interpreter's `eval_bool`).
pub type BoolFn = Box<dyn Fn(&Ctx) -> bool + Send + Sync>;
type U32Fn = Box<dyn Fn(&Ctx) -> u32 + Send + Sync>;

/// Steps one action execution may take (`_jump` loops are compiler bugs, not packets' fault).
pub const MAX_ACTION_STEPS: usize = 65_536;

/// One step of a compiled action or pipeline: one primitive, a run of narrow stores
/// (`Op::Stores`), or a pipeline's node; jump targets are step indices.
pub enum Op {
    /// `value`, cut to the slot's width, into a narrow slot.
    Store {
        slot: NSlot,
        value: IntFn,
    },
    /// A constant, already masked, into a narrow slot.
    StoreConst {
        slot: NSlot,
        value: u64,
    },
    /// An unsigned narrow field into a narrow slot (`meta.x = hdr.y`, the commonest store).
    StoreField {
        slot: NSlot,
        src: NSlot,
    },
    /// An action parameter into a narrow slot; a parameter given wide runs primitive `prim`.
    StoreParam {
        slot: NSlot,
        param: u32,
        prim: u32,
    },
    /// Consecutive stores of constants, fields and parameters (two or more), each kind a loop
    /// of its own instead of a dispatch per store: the copies first, reading their sources
    /// before the run writes anything, then the constants, then the parameters (`(slot,
    /// param, prim)`, as `StoreParam`). The order is free because `fuse` ends a run before a
    /// store to a slot the run writes and before a copy from one.
    Stores {
        copies: Box<[(NSlot, NSlot)]>,
        consts: Box<[(NSlot, u64)]>,
        params: Box<[(NSlot, u32, u32)]>,
    },
    /// `add_header` / `remove_header` of a fixed header.
    SetValid {
        header: u32,
        valid: bool,
    },
    /// Counts the packet in cell `index` of an indirect counter.
    Count {
        counter: u32,
        index: IntFn,
    },
    /// A register cell into a narrow slot.
    RegisterRead {
        slot: NSlot,
        register: u32,
        index: IntFn,
    },
    /// A narrow value, reduced to `bits` (the register's width, at most 127), into a cell.
    RegisterWrite {
        register: u32,
        index: IntFn,
        value: IntFn,
        bits: u32,
    },
    Jump(usize),
    /// Jumps when the condition is false (`_jump_if_zero`).
    JumpIfFalse(BoolFn, usize),
    /// Runs primitive `i` of the action through the interpreter.
    Prim(u32),
    /// A pipeline's conditional: goes to step `t` when the condition holds, else to `f`.
    Branch {
        cond: BoolFn,
        t: usize,
        f: usize,
    },
    /// Applies table `i`, then goes to the step of the node the table names next.
    Table(u32),
    /// Calls action `i` (no action data) through `exec::run_action`: an action a pipeline does
    /// not inline (`inlinable`).
    Call(u32),
    /// Runs primitive `prim` of action `action` through the interpreter: an inlined call's
    /// `Prim`.
    ActionPrim {
        action: u32,
        prim: u32,
    },
}

/// A compiled action.
pub struct Action {
    pub ops: Vec<Op>,
}

/// A control pipeline as one list of steps, in a topological order of its nodes
/// (`Prog::node_order`): a table is a step (`Op::Table`), a conditional a branch, and an
/// action call its action's steps, inlined, so that the calls of p4c's `tbl_act` chains run
/// without a dispatch per node and their consecutive stores fuse into one step. Every jump
/// goes forward, so a packet runs each step at most once.
pub struct Pipeline {
    pub ops: Vec<Op>,
    /// By node kind and index: the step where the node starts (`u32::MAX`: not in this
    /// pipeline), where `Op::Table` goes on.
    tables: Box<[u32]>,
    conds: Box<[u32]>,
    calls: Box<[u32]>,
}

impl Pipeline {
    /// The step where node `n` starts; the end for `Next::End` and nodes of other pipelines.
    #[inline]
    pub fn step(&self, n: Next) -> usize {
        let s = match n {
            Next::End => None,
            Next::Table(t) => self.tables.get(t as usize),
            Next::Cond(c) => self.conds.get(c as usize),
            Next::Call(c) => self.calls.get(c as usize),
        };
        s.map_or(self.ops.len(), |&s| (s as usize).min(self.ops.len()))
    }
}

/// Where one key element's bytes go in a table's key.
pub enum KeyCopy {
    /// A narrow field's low `bytes` bytes, big-endian, masked, at byte `at`.
    Narrow {
        slot: NSlot,
        at: u32,
        bytes: u32,
        mask: u64,
    },
    /// A fixed header's validity byte (masked) at byte `at`.
    Valid { header: u32, at: u32, mask: u8 },
    /// A wide field's `bytes` bytes (at most 16: an IPv6 address) from `Phv::wide` at `off`,
    /// masked, at byte `at`.
    Wide {
        off: u32,
        at: u32,
        bytes: u32,
        mask: u128,
    },
}

/// A table key of fixed fields: its length and element copies. Keys with a varbit, a field
/// over 128 bits or a run-time header (stack element, union member) are built by `exec`'s
/// general path.
pub struct KeyLayout {
    pub len: usize,
    pub copies: Vec<KeyCopy>,
}

/// The compiled program, beside the `Prog` it was made from (indices are the same).
pub struct Code {
    /// By action index: for tables' entries and defaults, and calls a pipeline runs whole.
    pub actions: Vec<Action>,
    /// By pipeline index.
    pub pipelines: Vec<Pipeline>,
    /// By table index; `None` where the general key builder is needed.
    pub keys: Vec<Option<KeyLayout>>,
    /// By checksum index: its `if_cond`.
    pub checksum_conds: Vec<Option<BoolFn>>,
    /// By parser, then state: the transition key's layout when it is made of narrow
    /// unsigned fields (`select(hdr.ethernet.ether_type)`); `None` keeps `exec`'s evaluation.
    pub parser_keys: Vec<Vec<Option<KeyLayout>>>,
}

impl fmt::Debug for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Code")
            .field("actions", &self.actions.len())
            .field("pipelines", &self.pipelines.len())
            .field("keys", &self.keys.len())
            .finish()
    }
}

impl Code {
    pub fn new(prog: &Prog) -> Code {
        Code {
            actions: prog
                .actions
                .iter()
                .map(|a| {
                    let ops = a.prims.iter().enumerate().map(|(i, p)| op(prog, i, p));
                    Action {
                        ops: fuse(ops.collect(), &[]).0,
                    }
                })
                .collect(),
            pipelines: prog
                .pipelines
                .iter()
                .map(|p| pipeline(prog, p.init))
                .collect(),
            keys: prog.tables.iter().map(|t| key_layout(prog, t)).collect(),
            checksum_conds: prog
                .checksums
                .iter()
                .map(|c| c.cond.as_ref().map(|e| boolean(prog, e)))
                .collect(),
            parser_keys: prog
                .parsers
                .iter()
                .map(|p| {
                    p.states
                        .iter()
                        .map(|s| select_layout(prog, &s.key))
                        .collect()
                })
                .collect(),
        }
    }
}

/// A parser state's select key of narrow unsigned fields: each part's value masked to the
/// part's width, in its `width.div_ceil(8)` low bytes, as `exec::key_bytes` builds it.
fn select_layout(prog: &Prog, parts: &[KeyPart]) -> Option<KeyLayout> {
    let mut at = 0u32;
    let mut copies = Vec::with_capacity(parts.len());
    for KeyPart::Value(e, w) in parts {
        let slot = narrow_unsigned(prog, e).filter(|_| *w <= 64 && !e.wide)?;
        let bytes = w.div_ceil(8);
        copies.push(KeyCopy::Narrow {
            slot,
            at,
            bytes,
            mask: mask64(*w),
        });
        at += bytes;
    }
    Some(KeyLayout {
        len: at as usize,
        copies,
    })
}

fn op(prog: &Prog, i: usize, p: &Prim) -> Op {
    match p {
        Prim::Assign(FieldLoc::Static(f), e) => {
            let info = &prog.fields[*f as usize];
            let Slot::Narrow(slot) = info.slot else {
                return Op::Prim(i as u32);
            };
            match &e.k {
                K::Const(v) => Op::StoreConst {
                    slot,
                    value: (*v as u64) & slot.mask,
                },
                K::Param(param) => Op::StoreParam {
                    slot,
                    param: *param,
                    prim: i as u32,
                },
                _ => match narrow_unsigned(prog, e) {
                    Some(src) => Op::StoreField { slot, src },
                    None if !e.wide => Op::Store {
                        slot,
                        value: int(prog, e),
                    },
                    None => Op::Prim(i as u32),
                },
            }
        }
        Prim::SetValid(HRef::Static(h)) => Op::SetValid {
            header: *h,
            valid: true,
        },
        Prim::SetInvalid(HRef::Static(h)) => Op::SetValid {
            header: *h,
            valid: false,
        },
        Prim::Count(counter, idx) if !idx.wide => Op::Count {
            counter: *counter,
            index: int(prog, idx),
        },
        Prim::RegisterRead(FieldLoc::Static(f), register, idx) if !idx.wide => {
            let info = &prog.fields[*f as usize];
            match info.slot {
                Slot::Narrow(slot) => Op::RegisterRead {
                    slot,
                    register: *register,
                    index: int(prog, idx),
                },
                _ => Op::Prim(i as u32),
            }
        }
        Prim::RegisterWrite(register, idx, val) if !idx.wide && !val.wide => Op::RegisterWrite {
            register: *register,
            index: int(prog, idx),
            value: int(prog, val),
            bits: prog.registers[*register as usize].width.min(127),
        },
        Prim::Jump(t) => Op::Jump(*t),
        Prim::JumpIfZero(c, t) => Op::JumpIfFalse(boolean(prog, c), *t),
        _ => Op::Prim(i as u32),
    }
}

/// A narrow store's slot, and the slot it copies from.
fn store_slots(op: &Op) -> Option<(NSlot, Option<NSlot>)> {
    match *op {
        Op::StoreConst { slot, .. } | Op::StoreParam { slot, .. } => Some((slot, None)),
        Op::StoreField { slot, src } => Some((slot, Some(src))),
        _ => None,
    }
}

/// A run of stores being gathered by `fuse`.
#[derive(Default)]
struct Run {
    copies: Vec<(NSlot, NSlot)>,
    consts: Vec<(NSlot, u64)>,
    params: Vec<(NSlot, u32, u32)>,
}

impl Run {
    fn is_empty(&self) -> bool {
        self.copies.is_empty() && self.consts.is_empty() && self.params.is_empty()
    }

    /// Adds `op` when it is a store; else gives it back.
    fn add(&mut self, op: Op) -> Option<Op> {
        match op {
            Op::StoreConst { slot, value } => self.consts.push((slot, value)),
            Op::StoreField { slot, src } => self.copies.push((slot, src)),
            Op::StoreParam { slot, param, prim } => self.params.push((slot, param, prim)),
            _ => return Some(op),
        }
        None
    }

    /// The run as one step; a single store stays the step it was.
    fn finish(self) -> Op {
        match (&self.copies[..], &self.consts[..], &self.params[..]) {
            (&[(slot, src)], [], []) => Op::StoreField { slot, src },
            ([], &[(slot, value)], []) => Op::StoreConst { slot, value },
            ([], [], &[(slot, param, prim)]) => Op::StoreParam { slot, param, prim },
            _ => Op::Stores {
                copies: self.copies.into(),
                consts: self.consts.into(),
                params: self.params.into(),
            },
        }
    }
}

/// Joins runs of consecutive stores into one step each (`Op::Stores`): most of an action's
/// steps are stores, and a dispatch per step mispredicted on most of them. A run ends before a
/// store to a slot it writes and before a copy from one (its copies read before its writes),
/// and a jump target or an `entries` position starts a step of its own. `ops`' jump targets
/// are positions in `ops`; the steps' are steps. Also returns the step of each position (past
/// the last, the end).
fn fuse(ops: Vec<Op>, entries: &[usize]) -> (Vec<Op>, Vec<u32>) {
    let n = ops.len();
    let mut target = vec![false; n];
    let mut mark = |t: usize| {
        if let Some(x) = target.get_mut(t) {
            *x = true;
        }
    };
    for op in &ops {
        match *op {
            Op::Jump(t) | Op::JumpIfFalse(_, t) => mark(t),
            Op::Branch { t, f, .. } => {
                mark(t);
                mark(f);
            }
            _ => {}
        }
    }
    entries.iter().for_each(|&e| mark(e));
    // The steps first, so that each jump is renumbered as it is moved.
    let mut step_of = Vec::with_capacity(n + 1);
    let (mut steps, mut written) = (0u32, Vec::new());
    for (i, op) in ops.iter().enumerate() {
        let store = store_slots(op);
        let joins = store.is_some_and(|(dst, src)| {
            let w = |s: NSlot| written.contains(&s.i);
            !target[i] && !written.is_empty() && !w(dst) && !src.is_some_and(w)
        });
        if !joins && !written.is_empty() {
            steps += 1;
            written.clear();
        }
        step_of.push(steps);
        match store {
            Some((dst, _)) => written.push(dst.i),
            None => steps += 1,
        }
    }
    step_of.push(steps + u32::from(!written.is_empty()));
    let step = |t: usize| step_of[t.min(n)] as usize;
    let mut out = Vec::with_capacity(step(n));
    let mut run = Run::default();
    for (i, op) in ops.into_iter().enumerate() {
        if !run.is_empty() && step_of[i] as usize != out.len() {
            out.push(std::mem::take(&mut run).finish());
        }
        let op = match op {
            Op::Jump(t) => Op::Jump(step(t)),
            Op::JumpIfFalse(c, t) => Op::JumpIfFalse(c, step(t)),
            Op::Branch { cond, t, f } => Op::Branch {
                cond,
                t: step(t),
                f: step(f),
            },
            op => op,
        };
        if let Some(op) = run.add(op) {
            out.push(op);
        }
    }
    if !run.is_empty() {
        out.push(run.finish());
    }
    (out, step_of)
}

/// Whether a pipeline inlines a call of action `a`: it takes no parameters (a call has no
/// action data) and its jumps go forward, so that it runs at most one step per primitive
/// (within `MAX_ACTION_STEPS`, which `exec::run_action` enforces on the others).
fn inlinable(prog: &Prog, a: u32) -> bool {
    let action = &prog.actions[a as usize];
    action.params.is_empty()
        && action.prims.len() <= MAX_ACTION_STEPS
        && action.prims.iter().enumerate().all(|(i, p)| match p {
            Prim::Jump(t) | Prim::JumpIfZero(_, t) => *t > i,
            _ => true,
        })
}

/// Pipeline `init` as one list of steps (`Pipeline`). The loader refuses a control graph with
/// a cycle, which has no topological order; this lays out none of it.
fn pipeline(prog: &Prog, init: Next) -> Pipeline {
    let order = prog.node_order(init).unwrap_or_default();
    let (nt, nc, na) = (prog.tables.len(), prog.conds.len(), prog.calls.len());
    let mut start = (vec![u32::MAX; nt], vec![u32::MAX; nc], vec![u32::MAX; na]);
    // Where a call's steps are followed by a jump to its next node: not the node after it.
    let falls_through =
        |k: usize, next: Next| order.get(k + 1).copied().unwrap_or(Next::End) == next;
    let mut at = 0u32;
    for (k, &n) in order.iter().enumerate() {
        at += match n {
            Next::Table(t) => {
                start.0[t as usize] = at;
                1
            }
            Next::Cond(c) => {
                start.1[c as usize] = at;
                1
            }
            Next::Call(c) => {
                start.2[c as usize] = at;
                let ci = &prog.calls[c as usize];
                let body = match inlinable(prog, ci.action) {
                    true => prog.actions[ci.action as usize].prims.len() as u32,
                    false => 1,
                };
                body + u32::from(!falls_through(k, ci.next))
            }
            Next::End => 0,
        };
    }
    let pos = |n: Next| -> usize {
        let s = match n {
            Next::Table(t) => start.0[t as usize],
            Next::Cond(c) => start.1[c as usize],
            Next::Call(c) => start.2[c as usize],
            Next::End => at,
        };
        s as usize
    };
    let mut ops = Vec::with_capacity(at as usize);
    let mut entries = Vec::new();
    for (k, &n) in order.iter().enumerate() {
        match n {
            Next::Table(t) => {
                ops.push(Op::Table(t));
                entries.extend(prog.successors(n).into_iter().map(pos));
            }
            Next::Cond(c) => {
                let ci = &prog.conds[c as usize];
                ops.push(Op::Branch {
                    cond: boolean(prog, &ci.expr),
                    t: pos(ci.t),
                    f: pos(ci.f),
                });
            }
            Next::Call(c) => {
                let ci = &prog.calls[c as usize];
                let a = ci.action;
                if inlinable(prog, a) {
                    let prims = &prog.actions[a as usize].prims;
                    let base = ops.len();
                    // A jump past the last primitive ends the action: the call's next node.
                    let to = |t: usize| base + t.min(prims.len());
                    for (i, p) in prims.iter().enumerate() {
                        ops.push(match op(prog, i, p) {
                            Op::Jump(t) => Op::Jump(to(t)),
                            Op::JumpIfFalse(cond, t) => Op::JumpIfFalse(cond, to(t)),
                            Op::Prim(prim) | Op::StoreParam { prim, .. } => {
                                Op::ActionPrim { action: a, prim }
                            }
                            op => op,
                        });
                    }
                } else {
                    ops.push(Op::Call(a));
                }
                if !falls_through(k, ci.next) {
                    ops.push(Op::Jump(pos(ci.next)));
                }
            }
            Next::End => {}
        }
    }
    let (ops, step_of) = fuse(ops, &entries);
    let steps = |v: Vec<u32>| -> Box<[u32]> {
        v.into_iter()
            .map(|s| match s {
                u32::MAX => s,
                s => step_of[s as usize],
            })
            .collect()
    };
    Pipeline {
        ops,
        tables: steps(start.0),
        conds: steps(start.1),
        calls: steps(start.2),
    }
}

fn key_layout(prog: &Prog, t: &TableInfo) -> Option<KeyLayout> {
    let mut at = 0u32;
    let mut copies = Vec::with_capacity(t.keys.len());
    for k in &t.keys {
        // The element's mask over its `n` bytes as one number: given bytes from the first.
        let mask = |n: u32| -> u128 {
            (0..n as usize).fold(0u128, |acc, i| {
                let b = k
                    .mask
                    .as_ref()
                    .and_then(|m| m.get(i))
                    .copied()
                    .unwrap_or(0xff);
                (acc << 8) | u128::from(b)
            })
        };
        match &k.src {
            KeySrc::Field(FieldLoc::Static(f)) => {
                let info = &prog.fields[*f as usize];
                match info.slot {
                    Slot::Narrow(slot) => {
                        let bytes = info.width.div_ceil(8);
                        copies.push(KeyCopy::Narrow {
                            slot,
                            at,
                            bytes,
                            mask: mask(bytes) as u64,
                        });
                        at += bytes;
                    }
                    Slot::Wide { off, len } if len <= 16 => {
                        copies.push(KeyCopy::Wide {
                            off,
                            at,
                            bytes: len,
                            mask: mask(len),
                        });
                        at += len;
                    }
                    _ => return None,
                }
            }
            KeySrc::Valid(HRef::Static(h)) => {
                copies.push(KeyCopy::Valid {
                    header: *h,
                    at,
                    mask: mask(1) as u8,
                });
                at += 1;
            }
            _ => return None,
        }
    }
    Some(KeyLayout {
        len: at as usize,
        copies,
    })
}

/// A narrow unsigned field's slot: the commonest operand, read without a closure call.
fn narrow_unsigned(prog: &Prog, e: &Ex) -> Option<NSlot> {
    let K::Field(f) = e.k else {
        return None;
    };
    match prog.fields[f as usize] {
        FieldInfo {
            slot: Slot::Narrow(s),
            signed: false,
            ..
        } => Some(s),
        _ => None,
    }
}

fn constant(e: &Ex) -> Option<i128> {
    match e.k {
        K::Const(v) => Some(v),
        _ => None,
    }
}

/// The interpreter on a subtree the closures do not cover.
fn interpreted(e: &Ex) -> IntFn {
    let e = e.clone();
    Box::new(move |c| eval::eval::<i128>(c, &e))
}

/// `eval::<i128>`'s rule for each node.
pub fn int(prog: &Prog, e: &Ex) -> IntFn {
    match &e.k {
        K::Const(v) => {
            let v = *v;
            Box::new(move |_| v)
        }
        K::Field(f) => {
            let info = &prog.fields[*f as usize];
            match (info.slot, info.signed) {
                (Slot::Narrow(s), false) => Box::new(move |c| i128::from(c.phv.n(s))),
                (Slot::Narrow(s), true) => {
                    let w = info.width;
                    Box::new(move |c| sext(c.phv.n(s), w))
                }
                _ => interpreted(e),
            }
        }
        K::Param(p) => {
            let p = *p;
            Box::new(move |c| eval::read_param::<i128>(c, p))
        }
        K::Valid(_) | K::ValidUnion(_) => as_int(boolean(prog, e)),
        K::Bin(op, a, b) => match op {
            Op2::Eq | Op2::Ne | Op2::Gt | Op2::Ge | Op2::Lt | Op2::Le | Op2::And | Op2::Or => {
                as_int(boolean(prog, e))
            }
            Op2::Shl | Op2::Shr | Op2::TwoCompMod | Op2::SatCast | Op2::UsatCast => {
                let (x, n) = (int(prog, a), u32_of(prog, b));
                match op {
                    Op2::Shl => Box::new(move |c| x(c).shl(n(c))),
                    Op2::Shr => Box::new(move |c| x(c).shr(n(c))),
                    Op2::TwoCompMod => Box::new(move |c| two_comp_mod(x(c), n(c))),
                    Op2::SatCast => Box::new(move |c| sat_cast(x(c), n(c))),
                    _ => Box::new(move |c| usat_cast(x(c), n(c))),
                }
            }
            _ => arith(prog, *op, a, b),
        },
        K::Un(op, a) => match op {
            Op1::BNot => {
                let x = int(prog, a);
                Box::new(move |c| x(c).not())
            }
            Op1::Neg => {
                let x = int(prog, a);
                Box::new(move |c| x(c).neg())
            }
            Op1::Not | Op1::D2b | Op1::B2d => {
                let (x, inv) = (boolean(prog, a), *op == Op1::Not);
                Box::new(move |c| i128::from(x(c) ^ inv))
            }
        },
        K::Cond(k, a, b) => {
            let (k, x, y) = (boolean(prog, k), int(prog, a), int(prog, b));
            Box::new(move |c| if k(c) { x(c) } else { y(c) })
        }
        K::ConstBig(_)
        | K::DynField(..)
        | K::SizeStack(_)
        | K::SizeUnionStack(_)
        | K::Lookahead { .. } => interpreted(e),
    }
}

fn as_int(b: BoolFn) -> IntFn {
    Box::new(move |c| i128::from(b(c)))
}

/// Two-operand arithmetic; a constant right operand (`x + 1`, `x & 0xff`) is folded in, and
/// a field with a constant (`hdr.ipv4.ttl - 1`) reads its slot in the same closure.
fn arith(prog: &Prog, op: Op2, a: &Ex, b: &Ex) -> IntFn {
    match (narrow_unsigned(prog, a), constant(b)) {
        (Some(s), Some(k)) => return with_constant(op, move |c| i128::from(c.phv.n(s)), k),
        (None, Some(k)) => return with_constant(op, int(prog, a), k),
        _ => {}
    }
    let x = int(prog, a);
    let y = int(prog, b);
    match op {
        Op2::Add => Box::new(move |c| x(c).add(y(c))),
        Op2::Sub => Box::new(move |c| x(c).sub(y(c))),
        Op2::BAnd => Box::new(move |c| x(c).and(y(c))),
        Op2::BOr => Box::new(move |c| x(c).or(y(c))),
        Op2::BXor => Box::new(move |c| x(c).xor(y(c))),
        Op2::Mul => Box::new(move |c| x(c).mul(y(c))),
        Op2::Div => Box::new(move |c| x(c).div(y(c))),
        _ => Box::new(move |c| x(c).rem(y(c))),
    }
}

/// `x op k` for one of `arith`'s operators.
fn with_constant<F>(op: Op2, x: F, k: i128) -> IntFn
where
    F: Fn(&Ctx) -> i128 + Send + Sync + 'static,
{
    match op {
        Op2::Add => Box::new(move |c| x(c).add(k)),
        Op2::Sub => Box::new(move |c| x(c).sub(k)),
        Op2::BAnd => Box::new(move |c| x(c).and(k)),
        Op2::BOr => Box::new(move |c| x(c).or(k)),
        Op2::BXor => Box::new(move |c| x(c).xor(k)),
        Op2::Mul => Box::new(move |c| x(c).mul(k)),
        Op2::Div => Box::new(move |c| x(c).div(k)),
        _ => Box::new(move |c| x(c).rem(k)),
    }
}

/// `eval_u32`'s rule: a wide operand is evaluated in `BigInt`.
fn u32_of(prog: &Prog, e: &Ex) -> U32Fn {
    if e.wide {
        let e = e.clone();
        return Box::new(move |c| eval::eval_u32(c, &e));
    }
    if let Some(k) = constant(e) {
        let k = k.to_u32_sat();
        return Box::new(move |_| k);
    }
    let x = int(prog, e);
    Box::new(move |c| x(c).to_u32_sat())
}

/// `eval_bool`'s rule for each node.
pub fn boolean(prog: &Prog, e: &Ex) -> BoolFn {
    match &e.k {
        K::Bin(op, a, b) => match op {
            Op2::And => {
                let (x, y) = (boolean(prog, a), boolean(prog, b));
                Box::new(move |c| x(c) && y(c))
            }
            Op2::Or => {
                let (x, y) = (boolean(prog, a), boolean(prog, b));
                Box::new(move |c| x(c) || y(c))
            }
            Op2::Eq | Op2::Ne | Op2::Gt | Op2::Ge | Op2::Lt | Op2::Le => {
                if a.wide || b.wide {
                    let e = e.clone();
                    Box::new(move |c| eval::eval_bool(c, &e))
                } else {
                    compare(prog, *op, a, b)
                }
            }
            _ => nonzero(prog, e),
        },
        K::Un(Op1::Not, a) => {
            let x = boolean(prog, a);
            Box::new(move |c| !x(c))
        }
        K::Un(Op1::D2b, a) => nonzero(prog, a),
        K::Valid(HRef::Static(h)) => {
            let h = *h as usize;
            Box::new(move |c| c.phv.valid[h])
        }
        K::Valid(_) | K::ValidUnion(_) => {
            let e = e.clone();
            Box::new(move |c| eval::eval_bool(c, &e))
        }
        K::Cond(k, a, b) => {
            let (k, x, y) = (boolean(prog, k), boolean(prog, a), boolean(prog, b));
            Box::new(move |c| if k(c) { x(c) } else { y(c) })
        }
        _ => nonzero(prog, e),
    }
}

/// A comparison of two narrow values; a field against a constant (most of a pipeline's
/// conditions) reads the slot directly.
fn compare(prog: &Prog, op: Op2, a: &Ex, b: &Ex) -> BoolFn {
    if let (Some(s), Some(k)) = (narrow_unsigned(prog, a), constant(b)) {
        return match op {
            Op2::Eq => Box::new(move |c| i128::from(c.phv.n(s)) == k),
            Op2::Ne => Box::new(move |c| i128::from(c.phv.n(s)) != k),
            Op2::Gt => Box::new(move |c| i128::from(c.phv.n(s)) > k),
            Op2::Ge => Box::new(move |c| i128::from(c.phv.n(s)) >= k),
            Op2::Lt => Box::new(move |c| i128::from(c.phv.n(s)) < k),
            _ => Box::new(move |c| i128::from(c.phv.n(s)) <= k),
        };
    }
    let (x, y) = (int(prog, a), int(prog, b));
    match op {
        Op2::Eq => Box::new(move |c| x(c) == y(c)),
        Op2::Ne => Box::new(move |c| x(c) != y(c)),
        Op2::Gt => Box::new(move |c| x(c) > y(c)),
        Op2::Ge => Box::new(move |c| x(c) >= y(c)),
        Op2::Lt => Box::new(move |c| x(c) < y(c)),
        _ => Box::new(move |c| x(c) <= y(c)),
    }
}

/// True when the value is not zero (`eval_any_zero`'s negation).
fn nonzero(prog: &Prog, e: &Ex) -> BoolFn {
    if e.wide {
        let e = e.clone();
        return Box::new(move |c| !Arith::is_zero(&eval::eval::<BigInt>(c, &e)));
    }
    let x = int(prog, e);
    Box::new(move |c| x(c) != 0)
}

/// An action parameter as a narrow store takes it (`None` when it came in wide).
#[inline]
pub fn narrow_arg(args: &[Arg], p: u32) -> Option<u64> {
    match args.get(p as usize) {
        Some(Arg::N(v)) => Some(*v),
        _ => None,
    }
}
