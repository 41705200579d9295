//! `subparser-inline`: every `p.apply(args);` of a parser instance in a parser state replaced
//! by copies of that parser's states (p4c's parser inlining), so the lowering sees one flat
//! parser.
//!
//! The state holding the call is split: it keeps the statements before the call and the
//! copy-in, then goes to the copy of the callee's `start`; a new state `STATE_cont` holds the
//! statements after the call and the original transition, and the copies' `accept` goes there
//! (`reject` stays `reject`). The copies (`INST_STATE`, as p4c names them) follow the calling state, then
//! `STATE_cont`, in the caller's state list. The callee's locals are copied per call as
//! `control-inline` does (value sets under `@name("inst.vs")`); its `in` and directionless
//! parameters are copied in, `out`/`inout` ones and packets are passed by reference (as the
//! lowering did; p4c removes the copies it can prove useless, which differs only if two
//! arguments alias). Calls inside the copies are inlined in turn. A call inside an `if` of a
//! state splits the state at the `if` first: a select on the condition into a state per
//! branch, both going on to a state with the rest (as the lowering splits an `if`).

use crate::control_inline::{
    applied_block, bind, copy_locals, splice_locals, without_blocks, MAX_APPLIES,
};
use crate::hoist::{Hoister, Mode};
use crate::Pass;
use p4_sema::ir::{
    Decl, DeclId, DeclKind, Expr, ExprKind, Param, Program, SelectCase, StateRef, Stmt, StmtKind,
    Transition, Type, Value,
};
use p4_syntax::ast::Direction;
use std::collections::HashMap;

pub const PASS: Pass = Pass {
    name: "subparser-inline",
    about: "sub-parser applies inlined: the calling state split around copies of the sub-parser's states, `in` arguments copied in, others by reference, locals copied per call",
    run,
};

fn run(p: &mut Program) {
    let mut h = Hoister::new(p, Mode::Parser);
    for d in 0..p.decls.len() {
        if matches!(p.decls[d].kind, DeclKind::Parser { .. }) {
            parser(p, &mut h, DeclId(d as u32));
        }
    }
}

/// Statements in order with the blocks (which only scope names) opened.
fn flatten(stmts: Vec<Stmt>, out: &mut Vec<Stmt>) {
    for s in stmts {
        match s.kind {
            StmtKind::Block(b) => flatten(b.stmts, out),
            kind => out.push(Stmt { kind, ..s }),
        }
    }
}

/// Whether `s` applies a parser somewhere inside it.
fn has_call(p: &Program, s: &Stmt) -> bool {
    let mut s = s.clone();
    let mut found = false;
    crate::visit::stmts_mut(&mut s, &mut |s| found |= applied_block(p, s).is_some());
    found
}

/// `S { before; if (c) T else E; after; transition }` as `S { before; transition select (c)
/// { true: S_true; default: S_false; } }`, `S_true { T; transition S_cont; }`, `S_false { E;
/// transition S_cont; }` and `S_cont { after; transition }`, so the call in a branch is at
/// the top of a state (the lowering splits an `if` without a call the same way).
fn split_if(
    p: &mut Program,
    h: &mut Hoister,
    parser: DeclId,
    st: DeclId,
    mut flat: Vec<Stmt>,
    k: usize,
    transition: Transition,
) {
    let after = flat.split_off(k + 1);
    let Some(Stmt {
        kind: StmtKind::If(cond, then, els),
        span,
    }) = flat.pop()
    else {
        return;
    };
    let st_name = p.decl(st).name.clone();
    let mut state = |p: &mut Program, suffix: &str, stmts: Vec<Stmt>, t: Transition| {
        let name = h.temps.name(&format!("{st_name}_{suffix}"));
        new_state(
            p,
            name,
            st,
            DeclKind::State {
                stmts,
                transition: t,
            },
        )
    };
    let cont = state(p, "cont", after, transition);
    let goto = Transition::Direct(StateRef::State(cont));
    let t = state(p, "true", vec![*then], goto.clone());
    let e = state(p, "false", els.map(|e| vec![*e]).unwrap_or_default(), goto);
    let set = Type::Set(Box::new(Type::Bool));
    let case = |keyset: ExprKind, state: DeclId| SelectCase {
        keyset: Expr {
            kind: keyset,
            ty: set.clone(),
            span,
        },
        state: StateRef::State(state),
        span,
    };
    p.decls[st.0 as usize].kind = DeclKind::State {
        stmts: flat,
        transition: Transition::Select {
            exprs: vec![cond],
            cases: vec![
                case(ExprKind::Const(Value::Bool(true)), t),
                case(ExprKind::Default, e),
            ],
            span,
        },
    };
    if let DeclKind::Parser { states, .. } = &mut p.decls[parser.0 as usize].kind {
        let at = states
            .iter()
            .position(|&s| s == st)
            .map_or(states.len(), |i| i + 1);
        states.splice(at..at, [t, e, cont]);
    }
}

fn parser_by_reference(prm: &Param) -> bool {
    matches!(prm.ty, Type::Extern(..)) || matches!(prm.dir, Some(Direction::Out | Direction::InOut))
}

/// Inlines the calls in `parser`'s states until none is left.
fn parser(p: &mut Program, h: &mut Hoister, parser: DeclId) {
    'again: for _ in 0..MAX_APPLIES {
        let DeclKind::Parser { states, .. } = &p.decl(parser).kind else {
            return;
        };
        for &st in &states.clone() {
            let DeclKind::State { stmts, transition } = &p.decl(st).kind else {
                continue;
            };
            let mut flat = Vec::new();
            flatten(stmts.clone(), &mut flat);
            let transition = transition.clone();
            let Some(k) = flat.iter().position(|s| applied_block(p, s).is_some()) else {
                // A call inside an `if`: the state is split at the `if` first.
                if let Some(k) = flat.iter().position(|s| has_call(p, s)) {
                    split_if(p, h, parser, st, flat, k, transition);
                    continue 'again;
                }
                continue;
            };
            let (inst, callee, args) = applied_block(p, &flat[k]).expect("found above");
            let span = flat[k].span;
            let after = flat.split_off(k + 1);
            flat.pop();
            let call = Call {
                inst,
                callee,
                args,
                span,
            };
            inline_call(p, h, parser, st, flat, after, transition, &call);
            continue 'again;
        }
        break;
    }
    if let DeclKind::Parser { locals, .. } = &p.decl(parser).kind {
        let kept = without_blocks(p, locals);
        if let DeclKind::Parser { locals, .. } = &mut p.decls[parser.0 as usize].kind {
            *locals = kept;
        }
    }
}

/// One call of a sub-parser: its instance and parser, and the arguments.
struct Call {
    inst: DeclId,
    callee: DeclId,
    args: Vec<Option<Expr>>,
    span: p4_syntax::Span,
}

fn new_state(p: &mut Program, name: String, like: DeclId, kind: DeclKind) -> DeclId {
    let d = Decl {
        name,
        span: p.decl(like).span,
        annotations: Vec::new(),
        kind,
    };
    let id = DeclId(p.decls.len() as u32);
    p.decls.push(d);
    id
}

/// Splits state `st` (`before`, the call, `after`, then `transition`) around copies of
/// `callee`'s states.
#[allow(clippy::too_many_arguments)]
fn inline_call(
    p: &mut Program,
    h: &mut Hoister,
    parser: DeclId,
    st: DeclId,
    before: Vec<Stmt>,
    after: Vec<Stmt>,
    transition: Transition,
    call: &Call,
) {
    let Call {
        inst,
        callee,
        ref args,
        span,
    } = *call;
    let DeclKind::Parser {
        params,
        ctor_params,
        locals,
        states,
        ..
    } = p.decl(callee).kind.clone()
    else {
        return;
    };
    let mut b = bind(
        p,
        h,
        inst,
        &ctor_params,
        &params,
        args,
        span,
        parser_by_reference,
    );
    copy_locals(p, h, inst, &locals, &mut b);
    // The continuation, then the copies of the callee's states, named after the instance
    // (`inst_start`, as p4c names them).
    let st_name = p.decl(st).name.clone();
    let cont = new_state(
        p,
        h.temps.name(&format!("{st_name}_cont")),
        st,
        DeclKind::State {
            stmts: Vec::new(),
            transition,
        },
    );
    let inst_name = p.decl(inst).name.clone();
    let mut copies = HashMap::new();
    let mut order = Vec::new();
    for &s in &states {
        let name = h.temps.name(&format!("{inst_name}_{}", p.decl(s).name));
        let kind = p.decl(s).kind.clone();
        let id = new_state(p, name, s, kind);
        copies.insert(s, id);
        order.push(id);
    }
    let target = |r: StateRef| match r {
        StateRef::Accept => StateRef::State(cont),
        StateRef::Reject => StateRef::Reject,
        StateRef::State(s) => StateRef::State(copies.get(&s).copied().unwrap_or(s)),
    };
    for &id in &order {
        let DeclKind::State {
            stmts,
            mut transition,
        } = p.decl(id).kind.clone()
        else {
            continue;
        };
        let stmts = crate::calls::rename_locals(p, h, stmts, &mut b.map, &b.by_ref);
        match &mut transition {
            Transition::Direct(r) => *r = target(*r),
            Transition::Select { exprs, cases, .. } => {
                for e in exprs.iter_mut() {
                    crate::calls::subst_expr(e, &b.map, &b.by_ref);
                }
                for c in cases {
                    crate::calls::subst_expr(&mut c.keyset, &b.map, &b.by_ref);
                    c.state = target(c.state);
                }
            }
        }
        p.decls[id.0 as usize].kind = DeclKind::State { stmts, transition };
    }
    let start = states
        .iter()
        .find(|s| p.decl(**s).name == "start")
        .and_then(|s| copies.get(s).copied());
    let mut head = before;
    head.append(&mut b.copy_in);
    let mut tail = std::mem::take(&mut b.copy_out);
    tail.extend(after);
    p.decls[st.0 as usize].kind = DeclKind::State {
        stmts: head,
        transition: Transition::Direct(start.map_or(StateRef::Reject, StateRef::State)),
    };
    if let DeclKind::State { stmts, .. } = &mut p.decls[cont.0 as usize].kind {
        *stmts = tail;
    }
    if let DeclKind::Parser { locals, states, .. } = &mut p.decls[parser.0 as usize].kind {
        splice_locals(locals, inst, b.locals);
        let at = states
            .iter()
            .position(|&s| s == st)
            .map_or(states.len(), |i| i + 1);
        order.push(cont);
        states.splice(at..at, order);
    }
}
