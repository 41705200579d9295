//! Mutable walks over statements and expressions (the front end's walkers only read).

use p4_sema::ir::{
    CallTarget, DeclId, DeclKind, Expr, ExprKind, Program, Stmt, StmtKind, SwitchLabel,
};
use p4_syntax::ast::Direction;

/// The operands of `e` in evaluation order, each with whether it is a value that may be saved
/// into a temporary (l-values, receivers and `out` arguments may not).
pub(crate) fn operands_mut(e: &mut Expr) -> Vec<(&mut Expr, bool)> {
    match &mut e.kind {
        ExprKind::Field(b, _) | ExprKind::StackProp(b, _) => vec![(&mut **b, false)],
        ExprKind::Slice(b, _, _) | ExprKind::Unary(_, b) | ExprKind::Cast(b) => {
            vec![(&mut **b, true)]
        }
        ExprKind::Index(a, i) => vec![(&mut **a, false), (&mut **i, true)],
        ExprKind::Binary(_, a, b) => vec![(&mut **a, true), (&mut **b, true)],
        ExprKind::Ternary(c, a, b) => vec![(&mut **c, true), (&mut **a, false), (&mut **b, false)],
        ExprKind::Tuple(items) => items.iter_mut().map(|i| (i, true)).collect(),
        ExprKind::Call(c) => {
            let c = &mut **c;
            let mut out = Vec::new();
            if let CallTarget::Method { receiver, .. }
            | CallTarget::Apply(receiver)
            | CallTarget::Builtin(receiver, _) = &mut c.target
            {
                out.push((receiver, false));
            }
            for (a, prm) in c.args.iter_mut().zip(&c.params) {
                if let Some(a) = a {
                    let value = matches!(prm.dir, None | Some(Direction::In));
                    out.push((a, value));
                }
            }
            out
        }
        ExprKind::Const(_)
        | ExprKind::Ref(_)
        | ExprKind::TableApply(..)
        | ExprKind::DontCare
        | ExprKind::Default => Vec::new(),
    }
}

/// Calls `f` on `e` and every expression inside it, inner before outer.
pub(crate) fn expr_mut(e: &mut Expr, f: &mut dyn FnMut(&mut Expr)) {
    for (o, _) in operands_mut(e) {
        expr_mut(o, f);
    }
    f(e);
}

/// Calls `f` on `s` and every statement nested in it, outer first.
pub(crate) fn stmts_mut(s: &mut Stmt, f: &mut dyn FnMut(&mut Stmt)) {
    f(s);
    match &mut s.kind {
        StmtKind::If(_, t, e) => {
            stmts_mut(t, f);
            if let Some(e) = e {
                stmts_mut(e, f);
            }
        }
        StmtKind::Block(b) => b.stmts.iter_mut().for_each(|s| stmts_mut(s, f)),
        StmtKind::Switch(_, cases) => {
            for b in cases.iter_mut().filter_map(|c| c.body.as_mut()) {
                b.stmts.iter_mut().for_each(|s| stmts_mut(s, f));
            }
        }
        StmtKind::For(l) => {
            l.init.iter_mut().for_each(|s| stmts_mut(s, f));
            l.update.iter_mut().for_each(|s| stmts_mut(s, f));
            stmts_mut(&mut l.body, f);
        }
        _ => {}
    }
}

/// Calls `f` on every expression of `s` and of the statements inside it.
pub(crate) fn stmt_exprs_mut(s: &mut Stmt, f: &mut dyn FnMut(&mut Expr)) {
    stmts_mut(s, &mut |s| match &mut s.kind {
        StmtKind::Assign(l, r) => {
            expr_mut(l, f);
            expr_mut(r, f);
        }
        StmtKind::Call(e) | StmtKind::Return(Some(e)) | StmtKind::If(e, ..) => expr_mut(e, f),
        StmtKind::For(l) => expr_mut(&mut l.cond, f),
        StmtKind::Switch(e, cases) => {
            expr_mut(e, f);
            for c in cases {
                if let SwitchLabel::Value(v) = &mut c.label {
                    expr_mut(v, f);
                }
            }
        }
        _ => {}
    });
}

/// Calls `f` on the declaration of every local variable and constant of `s`, nested ones too.
pub(crate) fn locals_mut(s: &mut Stmt, f: &mut dyn FnMut(&mut DeclId)) {
    stmts_mut(s, &mut |s| {
        if let StmtKind::Var(d) | StmtKind::Const(d) = &mut s.kind {
            f(d);
        }
    });
}

/// Rebuilds `s` bottom up: the statements nested in it first, then `s` itself, each through
/// `f` (so what `f` returns is not visited again).
pub(crate) fn stmts_owned(s: Stmt, f: &mut dyn FnMut(Stmt) -> Stmt) -> Stmt {
    let span = s.span;
    let kind = match s.kind {
        StmtKind::If(c, t, e) => StmtKind::If(
            c,
            Box::new(stmts_owned(*t, f)),
            e.map(|e| Box::new(stmts_owned(*e, f))),
        ),
        StmtKind::Block(mut b) => {
            b.stmts = b.stmts.into_iter().map(|s| stmts_owned(s, f)).collect();
            StmtKind::Block(b)
        }
        StmtKind::Switch(e, mut cases) => {
            for b in cases.iter_mut().filter_map(|c| c.body.as_mut()) {
                b.stmts = std::mem::take(&mut b.stmts)
                    .into_iter()
                    .map(|s| stmts_owned(s, f))
                    .collect();
            }
            StmtKind::Switch(e, cases)
        }
        StmtKind::For(mut l) => {
            let owned = |v: Vec<Stmt>, f: &mut dyn FnMut(Stmt) -> Stmt| {
                v.into_iter().map(|s| stmts_owned(s, f)).collect()
            };
            l.init = owned(std::mem::take(&mut l.init), f);
            l.update = owned(std::mem::take(&mut l.update), f);
            l.body = stmts_owned(l.body, f);
            StmtKind::For(l)
        }
        kind => kind,
    };
    f(Stmt { kind, span })
}

/// Replaces the statements of every action, function and apply block, in declaration order,
/// by what `f` makes of them; `f` is told whether they are an apply block's.
pub(crate) fn control_bodies<F>(p: &mut Program, mut f: F)
where
    F: FnMut(&mut Program, Vec<Stmt>, bool) -> Vec<Stmt>,
{
    for i in 0..p.decls.len() {
        let (DeclKind::Action { body, .. }
        | DeclKind::Function { body, .. }
        | DeclKind::Control { apply: body, .. }) = &p.decls[i].kind
        else {
            continue;
        };
        let apply = matches!(p.decls[i].kind, DeclKind::Control { .. });
        let stmts = f(p, body.stmts.clone(), apply);
        if let DeclKind::Action { body, .. }
        | DeclKind::Function { body, .. }
        | DeclKind::Control { apply: body, .. } = &mut p.decls[i].kind
        {
            body.stmts = stmts;
        }
    }
}
