//! Moving side effects out of expressions into statements of their own, in P4's evaluation
//! order (the machinery of `parser-side-effects` and `side-effects`).
//!
//! - `a && f(x)` becomes `bool t = a; if (t) { t = f(x); }` and `t` (`||` tests `!t`), so the
//!   right operand runs only when the spec says it does; `c ? f(x) : y` likewise.
//! - A function call inside a larger expression (in controls also an extern method call with a
//!   value) becomes `T t = f(x);` before it, for `parser-inline`/`inline` to take; a call that
//!   is a whole statement or a whole right side stays.
//! - Operands evaluated before a hoisted one are saved into temporaries first when they read
//!   anything that could change (`x + f(x)`), so left-to-right order survives.
//!
//! Statements with nothing to hoist are left exactly as they were.

use crate::build::{assign, block, bool_const, not, stmt, var_ref, Temps};
use crate::visit::operands_mut;
use p4_sema::ir::{CallTarget, DeclId, DeclKind, Expr, ExprKind, Program, Stmt, StmtKind, Type};
use p4_syntax::ast::BinOp;
use p4_syntax::Span;
use std::collections::HashSet;

/// Where the statements run.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Parser states.
    Parser,
    /// Actions, functions and apply blocks. Expressions that apply a table are left to the
    /// lowering, which evaluates `hit`/`miss` operands as graph nodes.
    Control,
}

/// Whether `e` holds something to move out: a short-circuit or conditional operator with a
/// call where it may not run, or a call with a value and side effects.
fn needs(e: &Expr, mode: Mode) -> bool {
    let mut found = false;
    let mut table = false;
    e.for_each(&mut |x| {
        found |= match &x.kind {
            ExprKind::Binary(BinOp::And | BinOp::Or, _, r) => r.has_call(),
            ExprKind::Ternary(_, a, b) => a.has_call() || b.has_call(),
            ExprKind::Call(_) => is_value_call(x, mode),
            _ => false,
        };
        table |= matches!(x.kind, ExprKind::TableApply(..));
    });
    found && !(mode == Mode::Control && table)
}

/// A call whose value an expression uses and that may have side effects: of a function, and
/// in controls of an extern method that returns something. (A parser's `lookahead` is left in
/// place: the lowering reads the bits ahead where it stands.)
fn is_value_call(e: &Expr, mode: Mode) -> bool {
    match &e.kind {
        ExprKind::Call(c) => match c.target {
            CallTarget::Function(_) => true,
            CallTarget::Method { .. } => mode == Mode::Control && e.ty != Type::Void,
            _ => false,
        },
        _ => false,
    }
}

pub(crate) fn is_function_call(e: &Expr) -> bool {
    matches!(&e.kind, ExprKind::Call(c) if matches!(c.target, CallTarget::Function(_)))
}

/// Hoists side effects out of statements.
pub(crate) struct Hoister {
    pub temps: Temps,
    pub mode: Mode,
    /// Temporaries made here: reading one later gives the value it was given.
    mine: HashSet<DeclId>,
}

impl Hoister {
    pub fn new(p: &Program, mode: Mode) -> Hoister {
        Hoister {
            temps: Temps::new(p),
            mode,
            mine: HashSet::new(),
        }
    }

    pub fn needs(&self, e: &Expr) -> bool {
        needs(e, self.mode)
    }

    pub fn stmts(&mut self, p: &mut Program, stmts: Vec<Stmt>) -> Vec<Stmt> {
        let mut out = Vec::new();
        for s in stmts {
            self.stmt(p, s, &mut out);
        }
        out
    }

    fn stmt(&mut self, p: &mut Program, s: Stmt, out: &mut Vec<Stmt>) {
        let span = s.span;
        match s.kind {
            StmtKind::Assign(l, r) if self.needs(&l) || self.needs(&r) => {
                // The left side first: a call in an index of it runs before the right side.
                let l = self.hoist(p, l, out);
                let r = self.whole(p, r, out);
                out.push(stmt(StmtKind::Assign(l, r), span));
            }
            StmtKind::Call(e) if self.needs(&e) => {
                let e = self.whole(p, e, out);
                out.push(stmt(StmtKind::Call(e), span));
            }
            StmtKind::Var(d) => {
                if let DeclKind::Var {
                    init: Some(init), ..
                } = &p.decl(d).kind
                {
                    if self.needs(init) {
                        let init = self.whole(p, init.clone(), out);
                        if let DeclKind::Var { init: slot, .. } = &mut p.decls[d.0 as usize].kind {
                            *slot = Some(init);
                        }
                    }
                }
                out.push(stmt(StmtKind::Var(d), span));
            }
            StmtKind::If(c, t, e) => {
                let c = self.hoist(p, c, out);
                let t = self.branch(p, *t);
                let e = e.map(|e| Box::new(self.branch(p, *e)));
                out.push(stmt(StmtKind::If(c, Box::new(t), e), span));
            }
            StmtKind::Block(mut b) => {
                b.stmts = self.stmts(p, b.stmts);
                out.push(stmt(StmtKind::Block(b), span));
            }
            StmtKind::Return(Some(e)) if self.needs(&e) => {
                let e = self.whole(p, e, out);
                out.push(stmt(StmtKind::Return(Some(e)), span));
            }
            StmtKind::Switch(e, mut cases) => {
                let e = self.hoist(p, e, out);
                for c in &mut cases {
                    if let Some(b) = &mut c.body {
                        b.stmts = self.stmts(p, std::mem::take(&mut b.stmts));
                    }
                }
                out.push(stmt(StmtKind::Switch(e, cases), span));
            }
            StmtKind::For(mut l) => {
                // What the init and update parts hoist stays in them, so runs as often.
                l.init = self.stmts(p, std::mem::take(&mut l.init));
                l.update = self.stmts(p, std::mem::take(&mut l.update));
                let body = self.branch(p, l.body);
                l.body = if self.needs(&l.cond) {
                    // Tested at the top of each iteration instead: `for (init; true; update)
                    // { T t = f(); if (!c) break; body }`; `continue` still runs the update
                    // and then this test.
                    let cond = std::mem::replace(&mut l.cond, bool_const(true, span));
                    let mut pre = Vec::new();
                    let c = self.hoist(p, cond, &mut pre);
                    let brk = stmt(StmtKind::Break, span);
                    pre.push(stmt(StmtKind::If(not(c), Box::new(brk), None), span));
                    pre.push(body);
                    block(pre, span)
                } else {
                    body
                };
                out.push(stmt(StmtKind::For(l), span));
            }
            kind => out.push(stmt(kind, span)),
        }
    }

    fn branch(&mut self, p: &mut Program, s: Stmt) -> Stmt {
        let span = s.span;
        let mut v = Vec::new();
        self.stmt(p, s, &mut v);
        match v.len() {
            1 => v.remove(0),
            _ => block(v, span),
        }
    }

    /// The whole expression of a statement: a function call stays for the inliner, with its
    /// arguments hoisted.
    fn whole(&mut self, p: &mut Program, e: Expr, out: &mut Vec<Stmt>) -> Expr {
        if is_function_call(&e) {
            self.operands(p, e, out)
        } else {
            self.hoist(p, e, out)
        }
    }

    /// Select keys: evaluated left to right like the operands of one expression.
    pub fn list(
        &mut self,
        p: &mut Program,
        items: Vec<Expr>,
        span: Span,
        out: &mut Vec<Stmt>,
    ) -> Vec<Expr> {
        let ty = Type::Tuple(items.iter().map(|e| e.ty.clone()).collect());
        let tuple = Expr {
            kind: ExprKind::Tuple(items),
            ty,
            span,
        };
        match self.operands(p, tuple, out).kind {
            ExprKind::Tuple(items) => items,
            _ => unreachable!("operands keeps the expression's kind"),
        }
    }

    fn temp(
        &mut self,
        p: &mut Program,
        ty: &Type,
        init: Option<Expr>,
        span: Span,
        out: &mut Vec<Stmt>,
    ) -> DeclId {
        let (id, s) = self.temps.var(p, "tmp", ty, init, span);
        out.push(s);
        self.mine.insert(id);
        id
    }

    fn hoist(&mut self, p: &mut Program, e: Expr, out: &mut Vec<Stmt>) -> Expr {
        if !self.needs(&e) {
            return e;
        }
        let (span, ty) = (e.span, e.ty.clone());
        match e.kind {
            ExprKind::Binary(o @ (BinOp::And | BinOp::Or), l, r) if r.has_call() => {
                let l = self.hoist(p, *l, out);
                let t = self.temp(p, &Type::Bool, Some(l), span, out);
                let mut then = Vec::new();
                let r = self.whole(p, *r, &mut then);
                then.push(assign(var_ref(p, t, span), r));
                let cond = match o {
                    BinOp::And => var_ref(p, t, span),
                    _ => not(var_ref(p, t, span)),
                };
                out.push(stmt(
                    StmtKind::If(cond, Box::new(block(then, span)), None),
                    span,
                ));
                var_ref(p, t, span)
            }
            ExprKind::Ternary(c, a, b) if a.has_call() || b.has_call() => {
                let c = self.hoist(p, *c, out);
                let t = self.temp(p, &ty, None, span, out);
                let then = self.arm(p, t, *a);
                let els = self.arm(p, t, *b);
                out.push(stmt(
                    StmtKind::If(c, Box::new(then), Some(Box::new(els))),
                    span,
                ));
                var_ref(p, t, span)
            }
            kind => {
                let e = self.operands(
                    p,
                    Expr {
                        kind,
                        ty: ty.clone(),
                        span,
                    },
                    out,
                );
                if is_value_call(&e, self.mode) {
                    let t = self.temp(p, &ty, Some(e), span, out);
                    var_ref(p, t, span)
                } else {
                    e
                }
            }
        }
    }

    /// One branch of `?:`: its value into `t`.
    fn arm(&mut self, p: &mut Program, t: DeclId, e: Expr) -> Stmt {
        let span = e.span;
        let mut v = Vec::new();
        let e = self.whole(p, e, &mut v);
        v.push(assign(var_ref(p, t, span), e));
        block(v, span)
    }

    /// Hoists inside each operand in order; operands before the last one that hoists anything
    /// are saved first unless their value cannot change.
    fn operands(&mut self, p: &mut Program, mut e: Expr, out: &mut Vec<Stmt>) -> Expr {
        let span = e.span;
        let ops = operands_mut(&mut e);
        let Some(last) = ops.iter().rposition(|(o, _)| needs(o, self.mode)) else {
            return e;
        };
        for (i, (o, value)) in ops.into_iter().enumerate() {
            let placeholder = Expr {
                kind: ExprKind::DontCare,
                ty: Type::DontCare,
                span,
            };
            let x = std::mem::replace(o, placeholder);
            let x = self.hoist(p, x, out);
            *o = if i < last && value && !self.stable(&x) {
                let t = self.temp(p, &x.ty.clone(), Some(x), span, out);
                var_ref(p, t, span)
            } else {
                x
            };
        }
        e
    }

    fn stable(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Const(_) => true,
            ExprKind::Ref(d) => self.mine.contains(d),
            _ => false,
        }
    }
}
