//! Inlining of calls with P4's copy-in/copy-out, shared by `parser-inline` (function calls in
//! parser states) and `inline` (direct calls of actions and functions in actions and
//! functions).
//!
//! `dst = f(a, b);` becomes a block that declares one variable per parameter (initialised
//! from `in`/`inout` arguments left to right; an `out` header starts invalid), a `retval`, the
//! body with the parameters and its locals renamed, the `out`/`inout` variables copied back in
//! parameter order, then `dst = retval`. A `return` that is not the body's last statement sets
//! a `returned` flag that guards everything after it; an `exit` in the body performs the
//! copy-outs of every callee it leaves (innermost first) before it ends the pipeline. Calls
//! inside the inlined body are inlined in turn. A run-time index in an `out`/`inout` argument
//! or the destination is saved into a temporary first, so the copy-out writes the place the
//! argument denoted before the call. Not inlined (the lowering refuses them): generic
//! functions.

use crate::build::{assign, block, bool_const, not, set_invalid, stmt, var_ref};
use crate::hoist::{Hoister, Mode};
use crate::visit::{locals_mut, stmt_exprs_mut, stmts_mut, stmts_owned};
use p4_sema::ir::{
    Call, CallTarget, DeclId, DeclKind, Expr, ExprKind, Program, Stmt, StmtKind, SwitchLabel, Type,
};
use p4_syntax::ast::Direction;
use p4_syntax::Span;
use std::collections::{HashMap, HashSet};

/// P4 has no recursion; this only bounds a malformed program.
const MAX_DEPTH: usize = 64;

/// `stmts` with the calls `h`'s mode inlines replaced by the callees' bodies.
pub(crate) fn inline_stmts(
    p: &mut Program,
    h: &mut Hoister,
    stmts: Vec<Stmt>,
    depth: usize,
) -> Vec<Stmt> {
    let mut out = Vec::new();
    for s in stmts {
        inline_stmt(p, h, s, depth, &mut out);
    }
    out
}

fn inline_stmt(p: &mut Program, h: &mut Hoister, s: Stmt, depth: usize, out: &mut Vec<Stmt>) {
    let span = s.span;
    match s.kind {
        StmtKind::Assign(l, r) if inlinable(&r, h.mode) => {
            match inline_call(p, h, &r, Some(l.clone()), depth) {
                Some(b) => out.push(b),
                None => out.push(stmt(StmtKind::Assign(l, r), span)),
            }
        }
        StmtKind::Call(e) if inlinable(&e, h.mode) => match inline_call(p, h, &e, None, depth) {
            Some(b) => out.push(b),
            None => out.push(stmt(StmtKind::Call(e), span)),
        },
        StmtKind::Var(d) => {
            let init = match &p.decl(d).kind {
                DeclKind::Var {
                    init: Some(init), ..
                } if inlinable(init, h.mode) => Some(init.clone()),
                _ => None,
            };
            out.push(stmt(StmtKind::Var(d), span));
            if let Some(init) = init {
                if let Some(b) = inline_call(p, h, &init, Some(var_ref(p, d, span)), depth) {
                    if let DeclKind::Var { init: slot, .. } = &mut p.decls[d.0 as usize].kind {
                        *slot = None;
                    }
                    out.push(b);
                }
            }
        }
        StmtKind::If(c, t, e) => {
            let t = branch(p, h, *t, depth);
            let e = e.map(|e| Box::new(branch(p, h, *e, depth)));
            out.push(stmt(StmtKind::If(c, Box::new(t), e), span));
        }
        StmtKind::Block(mut b) => {
            b.stmts = inline_stmts(p, h, b.stmts, depth);
            out.push(stmt(StmtKind::Block(b), span));
        }
        StmtKind::Switch(e, mut cases) => {
            for c in &mut cases {
                if let Some(b) = &mut c.body {
                    b.stmts = inline_stmts(p, h, std::mem::take(&mut b.stmts), depth);
                }
            }
            out.push(stmt(StmtKind::Switch(e, cases), span));
        }
        StmtKind::For(mut l) => {
            l.init = inline_stmts(p, h, std::mem::take(&mut l.init), depth);
            l.update = inline_stmts(p, h, std::mem::take(&mut l.update), depth);
            l.body = branch(p, h, l.body, depth);
            out.push(stmt(StmtKind::For(l), span));
        }
        kind => out.push(stmt(kind, span)),
    }
}

/// A call the inliner takes in `mode`: of a function, and in controls of an action too.
fn inlinable(e: &Expr, mode: Mode) -> bool {
    matches!(&e.kind, ExprKind::Call(c) if match c.target {
        CallTarget::Function(_) => true,
        CallTarget::Action(_) => mode == Mode::Control,
        _ => false,
    })
}

fn branch(p: &mut Program, h: &mut Hoister, s: Stmt, depth: usize) -> Stmt {
    let span = s.span;
    let mut v = inline_stmts(p, h, vec![s], depth);
    match v.len() {
        1 => v.remove(0),
        _ => block(v, span),
    }
}

/// The run-time indices of the l-value `e` saved into temporaries declared in `out`, so that
/// `e` denotes the same place after a call that changes what they read.
pub(crate) fn pin_indices(p: &mut Program, h: &mut Hoister, e: &mut Expr, out: &mut Vec<Stmt>) {
    match &mut e.kind {
        ExprKind::Field(b, _) | ExprKind::Slice(b, _, _) | ExprKind::StackProp(b, _) => {
            pin_indices(p, h, b, out)
        }
        ExprKind::Index(b, i) => {
            pin_indices(p, h, b, out);
            if !matches!(i.kind, ExprKind::Const(_)) {
                let (v, s) = h.temps.var(p, "index", &i.ty, Some((**i).clone()), i.span);
                out.push(s);
                **i = var_ref(p, v, i.span);
            }
        }
        _ => {}
    }
}

/// The statements replacing `dst = call` (or the call statement), or `None` when the call is
/// left to the lowering.
fn inline_call(
    p: &mut Program,
    h: &mut Hoister,
    e: &Expr,
    dst: Option<Expr>,
    depth: usize,
) -> Option<Stmt> {
    inline_call_keeping(p, h, e, dst, depth, &HashSet::new())
}

/// The body of `action` with its directional parameters bound to `args` (one per directional
/// parameter, in order) as a call would bind them; its directionless parameters stay
/// parameters. `None` when the call would be left to the lowering.
pub(crate) fn inline_action_args(
    p: &mut Program,
    h: &mut Hoister,
    action: DeclId,
    args: &[Option<Expr>],
    span: Span,
) -> Option<Vec<Stmt>> {
    let DeclKind::Action { params, .. } = &p.decl(action).kind else {
        return None;
    };
    let params = params.clone();
    let mut bound = args.iter();
    let call = Call {
        target: CallTarget::Action(action),
        type_args: Vec::new(),
        args: params
            .iter()
            .map(|prm| prm.dir.and_then(|_| bound.next().cloned().flatten()))
            .collect(),
        params: params.clone(),
    };
    let keep = params
        .iter()
        .filter(|prm| prm.dir.is_none())
        .map(|prm| prm.decl)
        .collect();
    let e = Expr {
        kind: ExprKind::Call(Box::new(call)),
        ty: Type::Void,
        span,
    };
    match inline_call_keeping(p, h, &e, None, 0, &keep)?.kind {
        StmtKind::Block(b) => Some(b.stmts),
        _ => None,
    }
}

/// `inline_call`, with the parameters in `keep` left as they are (not copied in or renamed).
fn inline_call_keeping(
    p: &mut Program,
    h: &mut Hoister,
    e: &Expr,
    dst: Option<Expr>,
    depth: usize,
    keep: &HashSet<DeclId>,
) -> Option<Stmt> {
    let ExprKind::Call(c) = &e.kind else {
        return None;
    };
    let (type_params, ret, body) = match (&c.target, &p.decl(callee(c)?).kind) {
        (
            CallTarget::Function(_),
            DeclKind::Function {
                type_params,
                ret,
                body,
                ..
            },
        ) => (type_params.as_slice(), ret.clone(), body),
        (CallTarget::Action(_), DeclKind::Action { body, .. }) if h.mode == Mode::Control => {
            (&[][..], Type::Void, body)
        }
        _ => return None,
    };
    let outs_called = c
        .params
        .iter()
        .zip(&c.args)
        .any(|(prm, a)| match (prm.dir, a) {
            (Some(Direction::Out | Direction::InOut), Some(a)) => a.has_call(),
            _ => false,
        });
    if !type_params.is_empty()
        || depth > MAX_DEPTH
        || outs_called
        || dst.as_ref().is_some_and(Expr::has_call)
    {
        return None;
    }
    let body = body.stmts.clone();
    let mut c: Call = (**c).clone();
    let span = e.span;
    let mut map = HashMap::new();
    let mut stmts = Vec::new();
    // The places copied back to are the ones the arguments denote before the call.
    for (prm, a) in c.params.iter().zip(&mut c.args) {
        if let (Some(Direction::Out | Direction::InOut), Some(a)) = (prm.dir, a) {
            pin_indices(p, h, a, &mut stmts);
        }
    }
    let dst = dst.map(|mut d| {
        pin_indices(p, h, &mut d, &mut stmts);
        d
    });
    let mut copy_out: Vec<Stmt> = Vec::new();
    let mut body = body;
    let written = written(&mut body);
    let mut consts = HashMap::new();
    for (prm, a) in c.params.iter().zip(c.args) {
        if keep.contains(&prm.decl) {
            continue;
        }
        let a = a.filter(|a| !matches!(a.kind, ExprKind::DontCare));
        if let Some(
            a @ Expr {
                kind: ExprKind::Const(_),
                ..
            },
        ) = &a
        {
            // A constant the body only reads: used in place, for `parser-fold`. Not an
            // aggregate: the lowering takes no member of a constant list.
            if matches!(prm.dir, None | Some(Direction::In))
                && !prm.ty.is_aggregate()
                && !written.contains(&prm.decl)
            {
                consts.insert(prm.decl, a.clone());
                continue;
            }
        }
        let init = match prm.dir {
            Some(Direction::Out) => None,
            _ => a.clone(),
        };
        let (v, s) = h.temps.var(p, &prm.name, &prm.ty, init, span);
        stmts.push(s);
        if prm.dir == Some(Direction::Out) && matches!(prm.ty, Type::Header(_)) {
            stmts.push(set_invalid(var_ref(p, v, span)));
        }
        if let (Some(Direction::Out | Direction::InOut), Some(a)) = (prm.dir, a) {
            copy_out.push(assign(a, var_ref(p, v, span)));
        }
        map.insert(prm.decl, v);
    }
    let retval = (ret != Type::Void).then(|| {
        let (v, s) = h.temps.var(p, "retval", &ret, None, span);
        stmts.push(s);
        v
    });
    let body = rename_locals(p, h, body, &mut map, &consts);
    stmts.extend(lower_returns(p, h, body, retval, span));
    stmts.extend(copy_out.iter().cloned());
    if let (Some(d), Some(r)) = (dst, retval) {
        stmts.push(assign(d, var_ref(p, r, span)));
    }
    let stmts = h.stmts(p, stmts);
    let mut stmts = inline_stmts(p, h, stmts, depth + 1);
    if !copy_out.is_empty() {
        stmts = stmts
            .into_iter()
            .map(|s| copy_out_before_exit(s, &copy_out))
            .collect();
    }
    Some(block(stmts, span))
}

fn callee(c: &Call) -> Option<DeclId> {
    match c.target {
        CallTarget::Function(d) | CallTarget::Action(d) => Some(d),
        _ => None,
    }
}

/// Every `exit` in `s` preceded by `copy_out`: leaving the pipeline still copies the callee's
/// `out`/`inout` arguments back, as the specification says. An `exit` of a callee inlined
/// inside this one already has that callee's copy-outs before it, so the innermost run first.
pub(crate) fn copy_out_before_exit(s: Stmt, copy_out: &[Stmt]) -> Stmt {
    stmts_owned(s, &mut |s| match s.kind {
        StmtKind::Exit => {
            let mut v = copy_out.to_vec();
            v.push(s.clone());
            block(v, s.span)
        }
        _ => s,
    })
}

/// The variable an l-value is part of.
fn root(e: &Expr) -> Option<DeclId> {
    match &e.kind {
        ExprKind::Ref(d) => Some(*d),
        ExprKind::Field(b, _)
        | ExprKind::Index(b, _)
        | ExprKind::Slice(b, _, _)
        | ExprKind::StackProp(b, _) => root(b),
        _ => None,
    }
}

/// The variables and parameters `stmts` may write: assigned, or passed as `out`/`inout`.
fn written(stmts: &mut [Stmt]) -> HashSet<DeclId> {
    let mut out = HashSet::new();
    for s in stmts.iter_mut() {
        stmts_mut(s, &mut |s| {
            if let StmtKind::Assign(l, _) = &s.kind {
                out.extend(root(l));
            }
        });
        stmt_exprs_mut(s, &mut |e| {
            if let ExprKind::Call(c) = &e.kind {
                for (prm, a) in c.params.iter().zip(&c.args) {
                    if matches!(prm.dir, Some(Direction::Out | Direction::InOut)) {
                        out.extend(a.as_ref().and_then(root));
                    }
                }
            }
        });
    }
    out
}

/// The body's own declarations copied under fresh names (each inlined copy has its own), and
/// every reference to a parameter or local renamed through `map` (or replaced by its
/// expression in `consts`); see [`subst_expr`].
pub(crate) fn rename_locals(
    p: &mut Program,
    h: &mut Hoister,
    mut stmts: Vec<Stmt>,
    map: &mut HashMap<DeclId, DeclId>,
    consts: &HashMap<DeclId, Expr>,
) -> Vec<Stmt> {
    let mut locals = Vec::new();
    for s in &mut stmts {
        locals_mut(s, &mut |d| locals.push(*d));
    }
    for d in locals {
        let mut decl = p.decl(d).clone();
        decl.name = h.temps.name(&decl.name);
        let id = DeclId(p.decls.len() as u32);
        p.decls.push(decl);
        map.insert(d, id);
    }
    for s in &mut stmts {
        locals_mut(s, &mut |d| {
            if let Some(n) = map.get(d) {
                *d = *n;
            }
        });
        stmt_exprs_mut(s, &mut |e| subst_expr(e, map, consts));
        stmts_mut(s, &mut |s| {
            if let StmtKind::Switch(_, cases) = &mut s.kind {
                for c in cases {
                    if let SwitchLabel::Action(a) = &mut c.label {
                        *a = map.get(a).copied().unwrap_or(*a);
                    }
                }
            }
        });
    }
    for &id in map.values() {
        if let DeclKind::Var {
            init: Some(init), ..
        } = &mut p.decls[id.0 as usize].kind
        {
            crate::visit::expr_mut(init, &mut |e| subst_expr(e, map, consts));
        }
    }
    stmts
}

/// `e` with every declaration in `map` (variables, parameters, and for an inlined control its
/// tables and actions, in references, table applies, action calls and types) renamed, and every
/// reference to one in `consts` replaced by that expression.
pub(crate) fn subst_expr(
    e: &mut Expr,
    map: &HashMap<DeclId, DeclId>,
    consts: &HashMap<DeclId, Expr>,
) {
    let id = |d: &mut DeclId| *d = map.get(d).copied().unwrap_or(*d);
    crate::visit::expr_mut(e, &mut |e| {
        match &mut e.ty {
            Type::Table(d) | Type::TableApply(d) | Type::ActionEnum(d) => id(d),
            _ => {}
        }
        match &mut e.kind {
            ExprKind::Ref(d) => {
                if let Some(n) = map.get(d) {
                    *d = *n;
                } else if let Some(c) = consts.get(d) {
                    *e = Expr {
                        span: e.span,
                        ..c.clone()
                    };
                }
            }
            ExprKind::TableApply(d, _) => id(d),
            ExprKind::Call(c) => {
                if let CallTarget::Action(d) = &mut c.target {
                    id(d)
                }
            }
            _ => {}
        }
    });
}

fn has_return(s: &Stmt) -> bool {
    match &s.kind {
        StmtKind::Return(_) => true,
        StmtKind::If(_, t, e) => has_return(t) || e.as_deref().is_some_and(has_return),
        StmtKind::Block(b) => b.stmts.iter().any(has_return),
        StmtKind::For(l) => has_return(&l.body),
        StmtKind::Switch(_, cases) => cases
            .iter()
            .filter_map(|c| c.body.as_ref())
            .any(|b| b.stmts.iter().any(has_return)),
        _ => false,
    }
}

/// `return e` as `retval = e`. When the only `return` ends the body (or there is none) that is
/// all; otherwise a
/// `returned` flag is set and every statement after one that may return runs under
/// `if (!returned)`.
pub(crate) fn lower_returns(
    p: &mut Program,
    h: &mut Hoister,
    mut body: Vec<Stmt>,
    retval: Option<DeclId>,
    span: Span,
) -> Vec<Stmt> {
    let last_only = match body.split_last() {
        Some((last, rest)) => {
            !rest.iter().any(has_return)
                && (matches!(last.kind, StmtKind::Return(_)) || !has_return(last))
        }
        None => true,
    };
    if last_only {
        if let Some(Stmt {
            kind: StmtKind::Return(v),
            span,
        }) = body.last().cloned()
        {
            body.pop();
            if let (Some(v), Some(r)) = (v, retval) {
                body.push(assign(var_ref(p, r, span), v));
            }
        }
        return body;
    }
    let (flag, decl) = h.temps.var(
        p,
        "returned",
        &Type::Bool,
        Some(bool_const(false, span)),
        span,
    );
    let mut out = vec![decl];
    out.extend(guard(p, body, retval, flag, false));
    out
}

/// `stmts` with their `return`s lowered and what follows one guarded by the flag; `in_loop`:
/// they are in a loop's body, which a `return` leaves with `break` (and an inner loop that
/// returned is left by the `break` after it).
fn guard(
    p: &Program,
    stmts: Vec<Stmt>,
    retval: Option<DeclId>,
    flag: DeclId,
    in_loop: bool,
) -> Vec<Stmt> {
    let mut out = Vec::new();
    let mut it = stmts.into_iter();
    while let Some(s) = it.next() {
        if !has_return(&s) {
            out.push(s);
            continue;
        }
        let span = s.span;
        let inner_loop = matches!(s.kind, StmtKind::For(_));
        out.push(lower_return_stmt(p, s, retval, flag, in_loop));
        if in_loop && inner_loop {
            let brk = stmt(StmtKind::Break, span);
            out.push(stmt(
                StmtKind::If(var_ref(p, flag, span), Box::new(brk), None),
                span,
            ));
        }
        let rest = guard(p, it.collect(), retval, flag, in_loop);
        if !rest.is_empty() {
            let cond = not(var_ref(p, flag, span));
            out.push(stmt(
                StmtKind::If(cond, Box::new(block(rest, span)), None),
                span,
            ));
        }
        break;
    }
    out
}

fn lower_return_stmt(
    p: &Program,
    s: Stmt,
    retval: Option<DeclId>,
    flag: DeclId,
    in_loop: bool,
) -> Stmt {
    let span = s.span;
    match s.kind {
        StmtKind::Return(v) => {
            let mut v: Vec<Stmt> = match (v, retval) {
                (Some(v), Some(r)) => vec![assign(var_ref(p, r, span), v)],
                _ => Vec::new(),
            };
            v.push(assign(var_ref(p, flag, span), bool_const(true, span)));
            if in_loop {
                v.push(stmt(StmtKind::Break, span));
            }
            block(v, span)
        }
        StmtKind::If(c, t, e) => {
            let t = lower_return_stmt(p, *t, retval, flag, in_loop);
            let e = e.map(|e| Box::new(lower_return_stmt(p, *e, retval, flag, in_loop)));
            stmt(StmtKind::If(c, Box::new(t), e), span)
        }
        StmtKind::Block(mut b) => {
            b.stmts = guard(p, b.stmts, retval, flag, in_loop);
            stmt(StmtKind::Block(b), span)
        }
        StmtKind::For(mut l) => {
            l.body = lower_return_stmt(p, l.body, retval, flag, true);
            stmt(StmtKind::For(l), span)
        }
        StmtKind::Switch(e, mut cases) => {
            for c in &mut cases {
                if let Some(b) = &mut c.body {
                    b.stmts = guard(p, std::mem::take(&mut b.stmts), retval, flag, in_loop);
                }
            }
            stmt(StmtKind::Switch(e, cases), span)
        }
        kind => stmt(kind, span),
    }
}
