//! `parser-fold`: constant folding after inlining, in parser states. Inlining puts constant
//! arguments where the function had parameters (`parser-inline`), so tests such as `v == 0`
//! become `8w1 == 8w0`; folded, an `if` on a constant keeps only the branch taken, and the
//! lowering makes no parser states for the other. Operators fold with the front end's
//! arithmetic (`p4_sema::eval`), so a folded value is the one the front end would compute.
//! `false && x`, `true || x` and `?:` on a constant drop the operand that would not run.

use crate::build::{block, stmt};
use crate::visit::{expr_mut, locals_mut};
use crate::Pass;
use p4_sema::eval;
use p4_sema::ir::{DeclKind, Expr, ExprKind, Program, Stmt, StmtKind, Type, Value};
use p4_syntax::ast::BinOp;

pub const PASS: Pass = Pass {
    name: "parser-fold",
    about: "parser states: constant expressions folded after inlining, `if` on a constant replaced by the branch taken",
    run,
};

fn run(p: &mut Program) {
    let mut locals = Vec::new();
    for d in &mut p.decls {
        if let DeclKind::State { stmts, .. } = &mut d.kind {
            *stmts = fold_stmts(std::mem::take(stmts));
            stmts
                .iter_mut()
                .for_each(|s| locals_mut(s, &mut |d| locals.push(*d)));
        }
    }
    for d in locals {
        if let DeclKind::Var {
            init: Some(init), ..
        } = &mut p.decls[d.0 as usize].kind
        {
            expr_mut(init, &mut fold);
        }
    }
}

fn fold_stmts(stmts: Vec<Stmt>) -> Vec<Stmt> {
    stmts.into_iter().filter_map(fold_stmt).collect()
}

/// The statement folded; `None` when nothing of it runs.
fn fold_stmt(mut s: Stmt) -> Option<Stmt> {
    let span = s.span;
    match s.kind {
        StmtKind::If(mut c, t, e) => {
            expr_mut(&mut c, &mut fold);
            match c.kind {
                ExprKind::Const(Value::Bool(true)) => fold_stmt(*t),
                ExprKind::Const(Value::Bool(false)) => e.and_then(|e| fold_stmt(*e)),
                _ => {
                    let t = fold_stmt(*t).unwrap_or_else(|| block(Vec::new(), span));
                    let e = e.and_then(|e| fold_stmt(*e)).map(Box::new);
                    Some(stmt(StmtKind::If(c, Box::new(t), e), span))
                }
            }
        }
        StmtKind::Block(mut b) => {
            b.stmts = fold_stmts(b.stmts);
            Some(stmt(StmtKind::Block(b), span))
        }
        StmtKind::Assign(..) | StmtKind::Call(_) | StmtKind::Return(Some(_)) => {
            crate::visit::stmt_exprs_mut(&mut s, &mut fold);
            Some(s)
        }
        _ => Some(s),
    }
}

fn constant(e: &Expr) -> Option<&Value> {
    match &e.kind {
        ExprKind::Const(v) => Some(v),
        _ => None,
    }
}

fn scalar(t: &Type) -> bool {
    matches!(t, Type::Bool | Type::Bit(_) | Type::Int(_) | Type::InfInt)
}

/// Folds `e` when its operands are constants (they are folded first: the walk is inner first).
pub(crate) fn fold(e: &mut Expr) {
    let folded = match &e.kind {
        ExprKind::Unary(op, x) => constant(x).and_then(|v| eval::unary(*op, v, &e.ty).ok()),
        ExprKind::Binary(BinOp::Mask | BinOp::Range, ..) => None,
        ExprKind::Binary(op @ (BinOp::And | BinOp::Or), l, r) => {
            match (constant(l), *op) {
                (Some(Value::Bool(false)), BinOp::And) => Some(Value::Bool(false)),
                (Some(Value::Bool(true)), BinOp::Or) => Some(Value::Bool(true)),
                // `true && r` is `r`, `false || r` too.
                (Some(Value::Bool(_)), _) => {
                    *e = (**r).clone();
                    return;
                }
                _ => None,
            }
        }
        ExprKind::Binary(BinOp::Concat, l, r) => match (constant(l), constant(r)) {
            (Some(a), Some(b)) => eval::concat(a, &l.ty, b, &r.ty, &e.ty).ok(),
            _ => None,
        },
        ExprKind::Binary(op, l, r) => match (constant(l), constant(r)) {
            (Some(a), Some(b)) if scalar(&l.ty) => eval::binary(*op, a, b, &l.ty).ok(),
            _ => None,
        },
        ExprKind::Cast(x) if scalar(&x.ty) && scalar(&e.ty) => {
            constant(x).and_then(|v| eval::cast(v, &x.ty, &e.ty).ok())
        }
        ExprKind::Slice(x, hi, lo) => {
            constant(x).and_then(|v| eval::slice(v, &x.ty, *hi, *lo).ok())
        }
        ExprKind::Ternary(c, a, b) => {
            if let Some(Value::Bool(c)) = constant(c) {
                *e = if *c { (**a).clone() } else { (**b).clone() };
            }
            return;
        }
        _ => None,
    };
    if let Some(v) = folded {
        e.kind = ExprKind::Const(v);
    }
}
