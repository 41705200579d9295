//! `control-locals`: calls outside a control's apply block moved into it, so that
//! `side-effects` and `inline` see them. A table key with a call (`f(): exact`, or
//! `t2.apply().hit: exact`, which applies `t2` first) becomes a
//! control-local variable, assigned the key's expression before each statement that applies
//! the table (when the specification evaluates it); the key keeps its control-plane name. The
//! initialisers of control-local variables, from the first one with a call on, become
//! assignments at the start of the apply block, in declaration order (they ran before it).

use crate::build::{assign, block, var_ref, Temps};
use crate::hoist::is_function_call;
use crate::visit::stmts_owned;
use crate::Pass;
use p4_sema::ir::{CallTarget, DeclId, DeclKind, Expr, ExprKind, Program, Stmt, StmtKind};
use std::collections::HashMap;

pub const PASS: Pass = Pass {
    name: "control-locals",
    about: "calls in table keys and control-local initialisers moved into the apply block (before each apply of the table, at its start)",
    run,
};

fn run(p: &mut Program) {
    let mut temps = Temps::new(p);
    for ctl in 0..p.decls.len() {
        if matches!(p.decls[ctl].kind, DeclKind::Control { .. }) {
            control(p, &mut temps, DeclId(ctl as u32));
        }
    }
}

/// Whether `e` calls a function or applies a table (the lowering evaluates extern method
/// calls where they stand, and a table's `hit`/`miss` only as a statement's value).
fn has_call(e: &Expr) -> bool {
    let mut found = false;
    e.for_each(&mut |x| found |= is_function_call(x) || matches!(x.kind, ExprKind::TableApply(..)));
    found
}

fn control(p: &mut Program, temps: &mut Temps, ctl: DeclId) {
    let DeclKind::Control { locals, .. } = &p.decl(ctl).kind else {
        return;
    };
    let mut new_locals = Vec::new();
    // Per table, the key assignments to make before it is applied.
    let mut keys: HashMap<DeclId, Vec<Stmt>> = HashMap::new();
    let mut inits = Vec::new();
    for &l in &locals.clone() {
        match &p.decl(l).kind {
            DeclKind::Table(t) if t.key.iter().any(|k| has_call(&k.expr)) => {
                let mut t = t.clone();
                for k in &mut t.key {
                    if !has_call(&k.expr) {
                        continue;
                    }
                    let span = k.expr.span;
                    let (v, _) = temps.var(p, "key", &k.expr.ty, None, span);
                    new_locals.push(v);
                    let e = std::mem::replace(&mut k.expr, var_ref(p, v, span));
                    keys.entry(l)
                        .or_default()
                        .push(assign(var_ref(p, v, span), e));
                }
                if let DeclKind::Table(slot) = &mut p.decls[l.0 as usize].kind {
                    *slot = t;
                }
            }
            DeclKind::Var {
                init: Some(init), ..
            } if !inits.is_empty() || has_call(init) => {
                let init = init.clone();
                inits.push(assign(var_ref(p, l, init.span), init));
                if let DeclKind::Var { init, .. } = &mut p.decls[l.0 as usize].kind {
                    *init = None;
                }
            }
            _ => {}
        }
        new_locals.push(l);
    }
    let DeclKind::Control { locals, apply, .. } = &mut p.decls[ctl.0 as usize].kind else {
        return;
    };
    *locals = new_locals;
    let stmts = std::mem::take(&mut apply.stmts);
    let stmts = stmts
        .into_iter()
        .map(|s| stmts_owned(s, &mut |s| before_apply(s, &keys)))
        .collect::<Vec<_>>();
    apply.stmts = inits.into_iter().chain(stmts).collect();
}

/// `s` preceded by the key assignments of the tables its own expressions apply.
fn before_apply(s: Stmt, keys: &HashMap<DeclId, Vec<Stmt>>) -> Stmt {
    if keys.is_empty() {
        return s;
    }
    let own: Vec<&Expr> = match &s.kind {
        StmtKind::Assign(l, r) => vec![l, r],
        StmtKind::Call(e) | StmtKind::If(e, ..) | StmtKind::Switch(e, _) => vec![e],
        StmtKind::Return(Some(e)) => vec![e],
        _ => Vec::new(),
    };
    let mut tables = Vec::new();
    for e in own {
        e.for_each(&mut |x| match &x.kind {
            ExprKind::TableApply(t, _) => tables.push(*t),
            ExprKind::Call(c) => {
                if let CallTarget::Apply(r) = &c.target {
                    if let ExprKind::Ref(t) = r.kind {
                        tables.push(t);
                    }
                }
            }
            _ => {}
        });
    }
    let pre: Vec<Stmt> = tables
        .iter()
        .filter_map(|t| keys.get(t))
        .flatten()
        .cloned()
        .collect();
    if pre.is_empty() {
        return s;
    }
    let span = s.span;
    block(pre.into_iter().chain([s]).collect(), span)
}
