//! `union-stack-index`: a statement that names an element of a stack of header unions by a
//! run-time index (`u[i].h1.setValid();`, `u[1] = u[i];`) becomes one copy per element, each
//! guarded by `i == k`, as p4c's `HSIndexSimplifier` expands it: bmv2 can index header stacks
//! at run time but not stacks of unions. An index out of range matches no copy, so the
//! statement does nothing. An index with a call in it is left for the lowering to refuse
//! (`side-effects` has already saved indices whose evaluation order matters).

use crate::build::stmt;
use crate::visit::{operands_mut, stmts_owned};
use crate::Pass;
use num_bigint::BigInt;
use p4_sema::ir::{DeclKind, Expr, ExprKind, Program, Stmt, StmtKind, Type, Value};
use p4_syntax::ast::BinOp;

pub const PASS: Pass = Pass {
    name: "union-stack-index",
    about: "statements with a run-time index into a stack of header unions: one copy per element, guarded by the index",
    run,
};

fn run(p: &mut Program) {
    for i in 0..p.decls.len() {
        let stmts = match &p.decls[i].kind {
            DeclKind::Action { body, .. }
            | DeclKind::Function { body, .. }
            | DeclKind::Control { apply: body, .. } => body.stmts.clone(),
            DeclKind::State { stmts, .. } => stmts.clone(),
            _ => continue,
        };
        let stmts: Vec<Stmt> = stmts
            .into_iter()
            .map(|s| stmts_owned(s, &mut expand))
            .collect();
        match &mut p.decls[i].kind {
            DeclKind::Action { body, .. }
            | DeclKind::Function { body, .. }
            | DeclKind::Control { apply: body, .. } => body.stmts = stmts,
            DeclKind::State { stmts: slot, .. } => *slot = stmts,
            _ => {}
        }
    }
}

/// `s`, or the chain of guarded copies it becomes (their own run-time indices expanded too).
fn expand(s: Stmt) -> Stmt {
    if !matches!(s.kind, StmtKind::Assign(..) | StmtKind::Call(_)) {
        return s;
    }
    let mut probe = s.clone();
    let Some((index, size)) = first_dynamic_index(&mut probe).map(|(i, n)| (i.clone(), n)) else {
        return s;
    };
    let width = match &index.ty {
        Type::Bit(w) | Type::Int(w) => Some(*w),
        _ => None,
    };
    let mut chain: Option<Box<Stmt>> = None;
    for k in (0..size).rev() {
        // An element the index type cannot reach needs no copy.
        if width.is_some_and(|w| w < 32 && k >= 1u32 << w) {
            continue;
        }
        let konst = Expr {
            kind: ExprKind::Const(Value::Int(BigInt::from(k))),
            ty: index.ty.clone(),
            span: index.span,
        };
        let mut copy = s.clone();
        if let Some((slot, _)) = first_dynamic_index(&mut copy) {
            *slot = konst.clone();
        }
        let guard = Expr {
            kind: ExprKind::Binary(BinOp::Eq, Box::new(index.clone()), Box::new(konst)),
            ty: Type::Bool,
            span: index.span,
        };
        let then = Box::new(expand(copy));
        chain = Some(Box::new(stmt(StmtKind::If(guard, then, chain), s.span)));
    }
    chain.map_or_else(|| stmt(StmtKind::Empty, s.span), |c| *c)
}

/// The first run-time index (outer operands first) into a stack of header unions in `s`,
/// with the stack's size.
fn first_dynamic_index(s: &mut Stmt) -> Option<(&mut Expr, u32)> {
    let roots: Vec<&mut Expr> = match &mut s.kind {
        StmtKind::Assign(l, r) => vec![l, r],
        StmtKind::Call(e) => vec![e],
        _ => Vec::new(),
    };
    roots.into_iter().find_map(find)
}

fn find(e: &mut Expr) -> Option<(&mut Expr, u32)> {
    let target = match &e.kind {
        ExprKind::Index(a, i) if !matches!(i.kind, ExprKind::Const(_)) && !i.has_call() => {
            match &a.ty {
                Type::Stack(elem, n) if matches!(**elem, Type::HeaderUnion(_)) => Some(*n),
                _ => None,
            }
        }
        _ => None,
    };
    if let Some(n) = target {
        return match &mut e.kind {
            ExprKind::Index(_, i) => Some((&mut **i, n)),
            _ => None,
        };
    }
    operands_mut(e).into_iter().find_map(|(o, _)| find(o))
}
