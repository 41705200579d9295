//! `inline`: in actions, functions and apply blocks, direct calls of actions and functions replaced by the
//! callee's body with P4's copy-in/copy-out (see `calls`): `return` becomes assignments and a
//! flag, `exit` performs the copy-outs of the callees it leaves first. Actions that tables
//! invoke stay actions. A `switch` on a value inside them becomes a chain of `if`s on a copy
//! of the value, so the lowering needs no jumps for it.

use crate::build::{block, stmt, var_ref};
use crate::calls::inline_stmts;
use crate::hoist::{Hoister, Mode};
use crate::visit::{control_bodies, stmts_owned};
use crate::Pass;
use p4_sema::ir::{Expr, ExprKind, Program, Stmt, StmtKind, SwitchCase, SwitchLabel, Type};
use p4_syntax::ast::BinOp;
use p4_syntax::Span;

pub const PASS: Pass = Pass {
    name: "inline",
    about: "actions, functions: direct action and function calls inlined with copy-in/copy-out, `return` as a flag, `exit` after the copy-outs; `switch` as `if`s",
    run,
};

fn run(p: &mut Program) {
    let mut h = Hoister::new(p, Mode::Control);
    control_bodies(p, |p, stmts, apply| {
        let stmts = inline_stmts(p, &mut h, stmts, 0);
        // An apply block's `switch` is the lowering's: a graph of conditionals.
        if apply {
            return stmts;
        }
        stmts
            .into_iter()
            .map(|s| stmts_owned(s, &mut |s| switch_as_ifs(p, &mut h, s)))
            .collect()
    });
}

/// `switch (e) { 1: {A} 2: 3: {B} default: {C} }` as
/// `T sw = e; if (sw == 1) {A} else if (sw == 2 || sw == 3) {B} else {C}`: the value is
/// evaluated once, the first matching label wins, labels without a body share the next one's.
fn switch_as_ifs(p: &mut Program, h: &mut Hoister, s: Stmt) -> Stmt {
    let span = s.span;
    let StmtKind::Switch(e, cases) = s.kind else {
        return s;
    };
    if matches!(e.kind, ExprKind::TableApply(..)) {
        return stmt(StmtKind::Switch(e, cases), span);
    }
    let ty = e.ty.clone();
    let (sw, decl) = h.temps.var(p, "sw", &ty, Some(e), span);
    let mut groups: Vec<(Option<Expr>, Stmt)> = Vec::new();
    let mut cond: Option<Expr> = None;
    let mut default = false;
    for SwitchCase { label, body, span } in cases {
        match label {
            SwitchLabel::Value(v) => {
                let test = binary(BinOp::Eq, var_ref(p, sw, v.span), v);
                cond = Some(match cond {
                    Some(c) => binary(BinOp::Or, c, test),
                    None => test,
                });
            }
            SwitchLabel::Default | SwitchLabel::Action(_) => default = true,
        }
        let Some(body) = body else { continue };
        let body = stmt(StmtKind::Block(body), span);
        // A group with `default` matches whatever is left; later groups cannot run.
        groups.push((if default { None } else { cond.take() }, body));
        if default {
            break;
        }
    }
    let mut chain: Option<Stmt> = None;
    for (c, body) in groups.into_iter().rev() {
        chain = Some(match c {
            None => body,
            Some(c) => stmt(StmtKind::If(c, Box::new(body), chain.map(Box::new)), span),
        });
    }
    block(vec![decl].into_iter().chain(chain).collect(), span)
}

fn binary(op: BinOp, a: Expr, b: Expr) -> Expr {
    let span: Span = a.span;
    Expr {
        kind: ExprKind::Binary(op, Box::new(a), Box::new(b)),
        ty: Type::Bool,
        span,
    }
}
