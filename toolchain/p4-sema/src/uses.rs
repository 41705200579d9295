//! What p4c's front end leaves for the control plane. p4c writes P4Info between its front end
//! and its midend: calls of actions made inside actions are inlined by then and whatever became
//! unused is removed, but actions called from an apply block stay (with their parameters bound
//! at the call, so without any for the controller). This crate's midend inlines every call,
//! so the backend reads these facts, recorded on the checked program, instead of its output.

use crate::ir::{
    Block, CallTarget, ControlPlaneUses, DeclId, DeclKind, Expr, ExprKind, Program, Stmt, StmtKind,
    Value,
};
use std::collections::HashSet;

pub(crate) fn control_plane_uses(p: &Program) -> ControlPlaneUses {
    let mut out = ControlPlaneUses::default();
    let mut visited = HashSet::new();
    for (i, d) in p.decls.iter().enumerate() {
        let DeclKind::Control { locals, apply, .. } = &d.kind else {
            continue;
        };
        let mut direct = Vec::new();
        let mut extern_called = false;
        calls(p, apply, &mut visited, &mut extern_called, &mut |a| {
            if !direct.contains(&a) {
                direct.push(a);
            }
        });
        live_exprs(p, &apply.stmts, &mut |e| {
            e.for_each(&mut |e| match &e.kind {
                ExprKind::TableApply(t, _) => {
                    out.applied_tables.insert(*t);
                }
                ExprKind::Call(c) => {
                    if let CallTarget::Apply(r) = &c.target {
                        if let ExprKind::Ref(t) = r.kind {
                            out.applied_tables.insert(t);
                        }
                    }
                }
                _ => {}
            })
        });
        let table_actions = locals.iter().flat_map(|&l| match &p.decl(l).kind {
            DeclKind::Table(t) => t
                .actions
                .iter()
                .chain(&t.default_action)
                .map(|r| r.action)
                .collect(),
            _ => Vec::new(),
        });
        let mut kept: Vec<DeclId> = table_actions.chain(direct.iter().copied()).collect();
        // Actions the kept ones call are inlined into them, their extern calls with them.
        while let Some(a) = kept.pop() {
            if let DeclKind::Action { body, .. } = &p.decl(a).kind {
                calls(p, body, &mut visited, &mut extern_called, &mut |b| {
                    kept.push(b)
                });
            }
        }
        out.extern_function_called |= extern_called;
        out.direct_actions.insert(DeclId(i as u32), direct);
    }
    out
}

/// Reports each action `block` calls to `action` and notes extern function calls, looking
/// into the functions it calls (p4c's front end inlines them). `visited` keeps each action
/// and function body to one visit.
fn calls(
    p: &Program,
    block: &Block,
    visited: &mut HashSet<DeclId>,
    extern_called: &mut bool,
    action: &mut dyn FnMut(DeclId),
) {
    let mut functions = Vec::new();
    live_exprs(p, &block.stmts, &mut |e| {
        e.for_each(&mut |e| {
            let ExprKind::Call(c) = &e.kind else { return };
            match c.target {
                CallTarget::Action(a) => action(a),
                CallTarget::ExternFunction(_) => *extern_called = true,
                CallTarget::Function(f) => functions.push(f),
                _ => {}
            }
        })
    });
    for f in functions {
        if visited.insert(f) {
            if let DeclKind::Function { body, .. } = &p.decl(f).kind {
                calls(p, body, visited, extern_called, action);
            }
        }
    }
}

/// Calls `f` on the top-level expressions of the statements p4c's front end keeps: the branch
/// of an `if` on a constant that is never taken is gone (p4c folds it away).
fn live_exprs(p: &Program, stmts: &[Stmt], f: &mut dyn FnMut(&Expr)) {
    for s in stmts {
        match &s.kind {
            StmtKind::Assign(l, r) => {
                f(l);
                f(r);
            }
            StmtKind::Call(e) | StmtKind::Return(Some(e)) => f(e),
            StmtKind::If(c, t, e) => match &c.kind {
                ExprKind::Const(Value::Bool(true)) => live_exprs(p, std::slice::from_ref(t), f),
                ExprKind::Const(Value::Bool(false)) => {
                    live_exprs(p, e.as_deref().map(std::slice::from_ref).unwrap_or(&[]), f)
                }
                _ => {
                    f(c);
                    live_exprs(p, std::slice::from_ref(t), f);
                    live_exprs(p, e.as_deref().map(std::slice::from_ref).unwrap_or(&[]), f);
                }
            },
            StmtKind::Block(b) => live_exprs(p, &b.stmts, f),
            StmtKind::Switch(e, cases) => {
                f(e);
                for c in cases {
                    if let crate::ir::SwitchLabel::Value(v) = &c.label {
                        f(v);
                    }
                    if let Some(b) = &c.body {
                        live_exprs(p, &b.stmts, f);
                    }
                }
            }
            StmtKind::Var(d) => {
                if let DeclKind::Var { init: Some(e), .. } = &p.decl(*d).kind {
                    f(e);
                }
            }
            StmtKind::For(l) => {
                live_exprs(p, &l.init, f);
                f(&l.cond);
                live_exprs(p, &l.update, f);
                live_exprs(p, std::slice::from_ref(&l.body), f);
            }
            StmtKind::Exit
            | StmtKind::Return(None)
            | StmtKind::Empty
            | StmtKind::Const(_)
            | StmtKind::Break
            | StmtKind::Continue => {}
        }
    }
}
