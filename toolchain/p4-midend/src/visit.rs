//! Mutable walks over statements and expressions (the front end's walkers only read).

use p4_sema::ir::{CallTarget, Expr, ExprKind, Stmt, StmtKind, SwitchLabel};

/// Calls `f` on `e` and every expression inside it, inner before outer.
pub(crate) fn expr_mut(e: &mut Expr, f: &mut dyn FnMut(&mut Expr)) {
    match &mut e.kind {
        ExprKind::Const(_)
        | ExprKind::Ref(_)
        | ExprKind::TableApply(..)
        | ExprKind::DontCare
        | ExprKind::Default => {}
        ExprKind::Field(b, _)
        | ExprKind::StackProp(b, _)
        | ExprKind::Slice(b, _, _)
        | ExprKind::Unary(_, b)
        | ExprKind::Cast(b) => expr_mut(b, f),
        ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) => {
            expr_mut(a, f);
            expr_mut(b, f);
        }
        ExprKind::Ternary(a, b, c) => {
            expr_mut(a, f);
            expr_mut(b, f);
            expr_mut(c, f);
        }
        ExprKind::Tuple(items) => items.iter_mut().for_each(|i| expr_mut(i, f)),
        ExprKind::Call(c) => {
            if let CallTarget::Method { receiver, .. }
            | CallTarget::Apply(receiver)
            | CallTarget::Builtin(receiver, _) = &mut c.target
            {
                expr_mut(receiver, f);
            }
            c.args.iter_mut().flatten().for_each(|a| expr_mut(a, f));
        }
    }
    f(e);
}

/// Calls `f` on every expression of `s` and of the statements inside it.
pub(crate) fn stmt_exprs_mut(s: &mut Stmt, f: &mut dyn FnMut(&mut Expr)) {
    match &mut s.kind {
        StmtKind::Assign(l, r) => {
            expr_mut(l, f);
            expr_mut(r, f);
        }
        StmtKind::Call(e) | StmtKind::Return(Some(e)) => expr_mut(e, f),
        StmtKind::If(c, t, e) => {
            expr_mut(c, f);
            stmt_exprs_mut(t, f);
            if let Some(e) = e {
                stmt_exprs_mut(e, f);
            }
        }
        StmtKind::Block(b) => b.stmts.iter_mut().for_each(|s| stmt_exprs_mut(s, f)),
        StmtKind::Switch(e, cases) => {
            expr_mut(e, f);
            for c in cases {
                if let SwitchLabel::Value(v) = &mut c.label {
                    expr_mut(v, f);
                }
                if let Some(b) = &mut c.body {
                    b.stmts.iter_mut().for_each(|s| stmt_exprs_mut(s, f));
                }
            }
        }
        StmtKind::Exit
        | StmtKind::Return(None)
        | StmtKind::Empty
        | StmtKind::Var(_)
        | StmtKind::Const(_) => {}
    }
}
