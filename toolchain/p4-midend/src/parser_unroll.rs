//! `parser-unroll`: a parser that indexes a header stack with a variable
//! (`pkt.extract(hdr.s[i]); i = i + 1;`, a loop through its own states) gets one copy of a
//! state per value its variables have when the state is entered, so that every index is a
//! constant, as p4c's `ParserUnroll` does (bmv2 extracts into a stack by constant index or
//! `next` only). The parser is run symbolically from `start`: a variable assigned a constant
//! (after its known variables are put in) is known until it is assigned something else; the
//! first copy of a state keeps its name, later ones are `NAME1`, `NAME2`, ...; an index that
//! comes out beyond the stack ends the copy with a transition to `stateOutOfBound`, which
//! raises `error.StackOutOfBounds` (bmv2 would too). States no copy reaches are dropped. A
//! parser whose indices do not all become constants, or that would need more than
//! [`MAX_COPIES`] copies of one state, is left as it was (the lowering then refuses it).

use crate::build::{stmt, Temps};
use crate::parser_fold::fold;
use crate::visit::{expr_mut, operands_mut, stmt_exprs_mut, stmts_mut};
use crate::Pass;
use num_bigint::BigInt;
use p4_sema::ir::{
    Call, CallTarget, Decl, DeclId, DeclKind, Expr, ExprKind, Program, SelectCase, StateRef, Stmt,
    StmtKind, Transition, Type, Value,
};
use p4_syntax::ast::Direction;
use p4_syntax::Span;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

pub const PASS: Pass = Pass {
    name: "parser-unroll",
    about: "parsers indexing a header stack with a variable: states copied per value of the variables, so every index is a constant (p4c's ParserUnroll)",
    run,
};

/// Copies of one state at most (a stack of that many elements needs as many).
const MAX_COPIES: usize = 64;

/// The known constants, by variable.
type Env = BTreeMap<DeclId, Value>;

fn run(p: &mut Program) {
    let mut temps = Temps::new(p);
    for i in 0..p.decls.len() {
        let DeclKind::Parser { states, .. } = &p.decls[i].kind else {
            continue;
        };
        let states = states.clone();
        if !states.iter().any(|&s| state_has_variable_index(p, s)) {
            continue;
        }
        if let Some(new) = unroll(p, &mut temps, &states) {
            if let DeclKind::Parser { states, .. } = &mut p.decls[i].kind {
                *states = new;
            }
        }
    }
}

fn state_has_variable_index(p: &Program, s: DeclId) -> bool {
    let DeclKind::State { stmts, transition } = &p.decl(s).kind else {
        return false;
    };
    let mut found = false;
    let mut look = |e: &mut Expr| found |= variable_index(e).is_some();
    for s in stmts {
        stmt_exprs_mut(&mut s.clone(), &mut look);
    }
    if let Transition::Select { exprs, .. } = transition {
        for e in exprs {
            expr_mut(&mut e.clone(), &mut look);
        }
    }
    found
}

/// The size of the stack `e` indexes when its index is not a constant.
fn variable_index(e: &Expr) -> Option<u32> {
    match &e.kind {
        ExprKind::Index(a, i) if !matches!(i.kind, ExprKind::Const(_)) => match &a.ty {
            Type::Stack(elem, n) if matches!(**elem, Type::Header(_) | Type::HeaderUnion(_)) => {
                Some(*n)
            }
            _ => None,
        },
        _ => None,
    }
}

/// One copy of a state to make: the original state and what is known on entry.
struct Visit {
    copy: DeclId,
    orig: DeclId,
    env: Env,
}

struct Unroller<'a> {
    temps: &'a mut Temps,
    /// Per original state, the variables whose values it or a state after it may put into
    /// an index: what its copies are told apart by (`parse_ipv4` after the loop has one copy).
    live: HashMap<DeclId, HashSet<DeclId>>,
    /// Copies by original state and what is known on entry (printed: `Value` has no `Hash`).
    copies: HashMap<(DeclId, String), DeclId>,
    count: HashMap<DeclId, usize>,
    queue: VecDeque<Visit>,
    /// New declarations (copies after the first, `stateOutOfBound`), appended at the end.
    made: Vec<Decl>,
    /// The states in the order they are made (the parser's new `states`).
    order: Vec<DeclId>,
    out_of_bound: Option<DeclId>,
    first_new: u32,
    too_many: bool,
}

/// The parser's new states, or `None` when it cannot be unrolled.
fn unroll(p: &mut Program, temps: &mut Temps, states: &[DeclId]) -> Option<Vec<DeclId>> {
    let start = *states.iter().find(|&&s| p.decl(s).name == "start")?;
    let mut u = Unroller {
        temps,
        live: live_variables(p, states),
        copies: HashMap::new(),
        count: HashMap::new(),
        queue: VecDeque::new(),
        made: Vec::new(),
        order: Vec::new(),
        out_of_bound: None,
        first_new: p.decls.len() as u32,
        too_many: false,
    };
    u.target(p, start, Env::new());
    let mut bodies: Vec<(DeclId, Vec<Stmt>, Transition)> = Vec::new();
    while let Some(v) = u.queue.pop_front() {
        let (stmts, transition) = u.state(p, &v)?;
        if u.too_many {
            return None;
        }
        bodies.push((v.copy, stmts, transition));
    }
    // Commit: the first copies overwrite their originals, the others are new declarations.
    p.decls.extend(u.made);
    for (copy, stmts, transition) in bodies {
        p.decls[copy.0 as usize].kind = DeclKind::State { stmts, transition };
    }
    Some(u.order)
}

impl Unroller<'_> {
    /// The copy of `orig` entered with `env`, made (and queued) when new.
    fn target(&mut self, p: &Program, orig: DeclId, mut env: Env) -> DeclId {
        let live = self.live.get(&orig);
        env.retain(|d, _| live.is_some_and(|l| l.contains(d)));
        let key = (orig, format!("{env:?}"));
        if let Some(&c) = self.copies.get(&key) {
            return c;
        }
        let n = self.count.entry(orig).or_insert(0);
        *n += 1;
        if *n > MAX_COPIES {
            self.too_many = true;
        }
        let copy = if *n == 1 {
            orig
        } else {
            let decl = p.decl(orig);
            let name = self.temps.name(&format!("{}{}", decl.name, *n - 1));
            self.new_state(decl.annotations.clone(), name, decl.span)
        };
        self.copies.insert(key, copy);
        self.order.push(copy);
        self.queue.push_back(Visit { copy, orig, env });
        copy
    }

    fn new_state(
        &mut self,
        annotations: Vec<p4_syntax::ast::Annotation>,
        name: String,
        span: Span,
    ) -> DeclId {
        let id = DeclId(self.first_new + self.made.len() as u32);
        self.made.push(Decl {
            name,
            span,
            annotations: annotations
                .into_iter()
                .filter(|a| a.name.name != "name")
                .collect(),
            kind: DeclKind::State {
                stmts: Vec::new(),
                transition: Transition::Direct(StateRef::Reject),
            },
        });
        id
    }

    /// The state that raises `error.StackOutOfBounds`.
    fn out_of_bound(&mut self, p: &Program, span: Span) -> Option<DeclId> {
        if let Some(s) = self.out_of_bound {
            return Some(s);
        }
        let name = self.temps.name("stateOutOfBound");
        let s = self.new_state(Vec::new(), name, span);
        let DeclKind::State { stmts, .. } = &mut self.made.last_mut()?.kind else {
            return None;
        };
        stmts.push(verify_false(p, "StackOutOfBounds", span)?);
        self.order.push(s);
        self.out_of_bound = Some(s);
        Some(s)
    }

    /// The statements and transition of one copy; `None` when an index stays variable.
    fn state(&mut self, p: &Program, v: &Visit) -> Option<(Vec<Stmt>, Transition)> {
        let DeclKind::State { stmts, transition } = &p.decl(v.orig).kind else {
            return None;
        };
        let mut env = v.env.clone();
        let mut out = Vec::new();
        for s in stmts {
            let mut s = s.clone();
            match constant_indices(p, &mut s, &env)? {
                Indices::InRange => {}
                Indices::OutOfRange => {
                    let oob = self.out_of_bound(p, s.span)?;
                    return Some((out, Transition::Direct(StateRef::State(oob))));
                }
            }
            learn(p, &s, &mut env);
            out.push(s);
        }
        let transition = match transition.clone() {
            Transition::Direct(StateRef::State(t)) => {
                Transition::Direct(StateRef::State(self.target(p, t, env)))
            }
            Transition::Direct(r) => Transition::Direct(r),
            Transition::Select {
                mut exprs,
                cases,
                span,
            } => {
                for e in &mut exprs {
                    let mut probe = stmt(StmtKind::Call(e.clone()), span);
                    match constant_indices(p, &mut probe, &env)? {
                        Indices::InRange => {}
                        Indices::OutOfRange => {
                            let oob = self.out_of_bound(p, span)?;
                            return Some((out, Transition::Direct(StateRef::State(oob))));
                        }
                    }
                    if let StmtKind::Call(x) = probe.kind {
                        *e = x;
                    }
                }
                let cases = cases
                    .into_iter()
                    .map(|c| SelectCase {
                        state: match c.state {
                            StateRef::State(t) => StateRef::State(self.target(p, t, env.clone())),
                            r => r,
                        },
                        ..c
                    })
                    .collect();
                Transition::Select { exprs, cases, span }
            }
        };
        Some((out, transition))
    }
}

/// Per state, the variables read by its stack indices or by what it assigns to variables,
/// and those of the states after it (to a fixed point: parsers loop).
fn live_variables(p: &Program, states: &[DeclId]) -> HashMap<DeclId, HashSet<DeclId>> {
    let mut own: HashMap<DeclId, HashSet<DeclId>> = HashMap::new();
    let mut next: HashMap<DeclId, Vec<DeclId>> = HashMap::new();
    for &s in states {
        let DeclKind::State { stmts, transition } = &p.decl(s).kind else {
            continue;
        };
        let mut reads = HashSet::new();
        let mut exprs: Vec<Expr> = Vec::new();
        for st in stmts {
            let mut st = st.clone();
            stmts_mut(&mut st, &mut |x| match &x.kind {
                StmtKind::Assign(l, r) if matches!(l.kind, ExprKind::Ref(_)) => {
                    exprs.push(r.clone())
                }
                StmtKind::Var(d) => {
                    if let DeclKind::Var { init: Some(i), .. } = &p.decl(*d).kind {
                        exprs.push(i.clone());
                    }
                }
                _ => {}
            });
            stmt_exprs_mut(&mut st, &mut |e| {
                if let ExprKind::Index(_, i) = &e.kind {
                    if variable_index(e).is_some() {
                        exprs.push((**i).clone());
                    }
                }
            });
        }
        let targets = match transition {
            Transition::Direct(StateRef::State(t)) => vec![*t],
            Transition::Direct(_) => Vec::new(),
            Transition::Select {
                exprs: keys, cases, ..
            } => {
                for k in keys {
                    expr_mut(&mut k.clone(), &mut |e| {
                        if let ExprKind::Index(_, i) = &e.kind {
                            if variable_index(e).is_some() {
                                exprs.push((**i).clone());
                            }
                        }
                    });
                }
                cases
                    .iter()
                    .filter_map(|c| match c.state {
                        StateRef::State(t) => Some(t),
                        _ => None,
                    })
                    .collect()
            }
        };
        for mut e in exprs {
            expr_mut(&mut e, &mut |x| {
                if let ExprKind::Ref(d) = x.kind {
                    if matches!(p.decl(d).kind, DeclKind::Var { .. }) {
                        reads.insert(d);
                    }
                }
            });
        }
        own.insert(s, reads);
        next.insert(s, targets);
    }
    let mut live = own.clone();
    loop {
        let mut changed = false;
        for &s in states {
            let add: Vec<DeclId> = next
                .get(&s)
                .into_iter()
                .flatten()
                .flat_map(|t| live.get(t).cloned().unwrap_or_default())
                .collect();
            let set = live.entry(s).or_default();
            for d in add {
                changed |= set.insert(d);
            }
        }
        if !changed {
            return live;
        }
    }
}

enum Indices {
    InRange,
    OutOfRange,
}

/// Puts the known constants into the stack indices of `s`; `None` when one stays variable.
fn constant_indices(p: &Program, s: &mut Stmt, env: &Env) -> Option<Indices> {
    let mut variable = false;
    let mut out_of_range = false;
    stmt_exprs_mut(s, &mut |e| {
        let Some(n) = variable_index(e) else {
            return;
        };
        let ExprKind::Index(_, i) = &mut e.kind else {
            return;
        };
        let mut k = (**i).clone();
        substitute(p, &mut k, env);
        match &k.kind {
            ExprKind::Const(Value::Int(v)) => {
                if *v < BigInt::from(0) || *v >= BigInt::from(n) {
                    out_of_range = true;
                }
                **i = k;
            }
            _ => variable = true,
        }
    });
    if out_of_range {
        return Some(Indices::OutOfRange);
    }
    (!variable).then_some(Indices::InRange)
}

/// `e` with the known variables replaced by their values, folded.
fn substitute(p: &Program, e: &mut Expr, env: &Env) {
    expr_mut(e, &mut |x| {
        if let ExprKind::Ref(d) = x.kind {
            if let (Some(v), DeclKind::Var { .. }) = (env.get(&d), &p.decl(d).kind) {
                x.kind = ExprKind::Const(v.clone());
            }
        }
        fold(x);
    });
}

/// What `s` tells about the variables: a constant assigned is known, anything else written
/// (in a nested statement, as an `out` argument) is not.
fn learn(p: &Program, s: &Stmt, env: &mut Env) {
    match &s.kind {
        StmtKind::Assign(l, r) => {
            if let ExprKind::Ref(d) = l.kind {
                let mut r = r.clone();
                substitute(p, &mut r, env);
                match r.kind {
                    ExprKind::Const(v @ (Value::Int(_) | Value::Bool(_))) => {
                        env.insert(d, v);
                    }
                    _ => {
                        env.remove(&d);
                    }
                }
                return;
            }
        }
        StmtKind::Var(d) => {
            if let DeclKind::Var {
                init: Some(init), ..
            } = &p.decl(*d).kind
            {
                let mut init = init.clone();
                substitute(p, &mut init, env);
                if let ExprKind::Const(v @ (Value::Int(_) | Value::Bool(_))) = init.kind {
                    env.insert(*d, v);
                    return;
                }
            }
            env.remove(d);
            return;
        }
        _ => {}
    }
    forget_written(&mut s.clone(), env);
}

/// Forgets every variable `s` (nested statements included) may write.
fn forget_written(s: &mut Stmt, env: &mut Env) {
    let mut written = Vec::new();
    stmts_mut(s, &mut |s| match &mut s.kind {
        StmtKind::Assign(l, _) => written.extend(root(l)),
        StmtKind::Var(d) => written.push(*d),
        _ => {}
    });
    stmt_exprs_mut(s, &mut |e| {
        if let ExprKind::Call(c) = &e.kind {
            for (a, prm) in c.args.iter().zip(&c.params) {
                if let (Some(a), Some(Direction::Out | Direction::InOut)) = (a, prm.dir) {
                    written.extend(root(a));
                }
            }
        }
    });
    for d in written {
        env.remove(&d);
    }
}

fn root(e: &Expr) -> Option<DeclId> {
    match &e.kind {
        ExprKind::Ref(d) => Some(*d),
        _ => operands_mut(&mut e.clone())
            .into_iter()
            .next()
            .and_then(|(b, _)| root(b)),
    }
}

/// `verify(false, error.NAME);` with core.p4's `verify`.
fn verify_false(p: &Program, error: &str, span: Span) -> Option<Stmt> {
    let (d, params) = p
        .decls
        .iter()
        .enumerate()
        .find_map(|(i, d)| match &d.kind {
            DeclKind::ExternFunction(m) if m.name == "verify" => {
                Some((DeclId(i as u32), m.params.clone()))
            }
            _ => None,
        })?;
    let e = p.errors.iter().position(|x| x == error)?;
    let konst = |v, ty| Expr {
        kind: ExprKind::Const(v),
        ty,
        span,
    };
    let call = Call {
        target: CallTarget::ExternFunction(d),
        type_args: Vec::new(),
        args: vec![
            Some(konst(Value::Bool(false), Type::Bool)),
            Some(konst(Value::Error(e), Type::Error)),
        ],
        params,
    };
    let e = Expr {
        kind: ExprKind::Call(Box::new(call)),
        ty: Type::Void,
        span,
    };
    Some(stmt(StmtKind::Call(e), span))
}
