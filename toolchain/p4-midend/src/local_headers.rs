//! `local-headers`: a header declared without an initialiser is invalid (P4_16 8.22), so every
//! such local (a header, a union's members, a stack's elements, the headers inside a struct)
//! gets `setInvalid()` where it comes into scope: right after its declaration in an action,
//! function, apply block or parser state; for a control's own locals at the start of its apply
//! block, and for a parser's at the start of its `start` state. p4c's front end writes the same
//! calls (its bmv2 JSON has a `remove_header` for each), and the lowering relies on them: a
//! bmv2 header instance keeps its validity until the next packet, so a local that is declared
//! again (a second call of the action, a loop's next iteration) would otherwise still be
//! valid.

use crate::build::{set_invalid, stmt};
use crate::Pass;
use num_bigint::BigInt;
use p4_sema::ir::{DeclId, DeclKind, Expr, ExprKind, Program, Stmt, StmtKind, Type, Value};

pub const PASS: Pass = Pass {
    name: "local-headers",
    about: "local headers, unions and stacks declared without initialiser made invalid where they are declared",
    run,
};

fn run(p: &mut Program) {
    for i in 0..p.decls.len() {
        match &p.decls[i].kind {
            DeclKind::Action { body, .. } | DeclKind::Function { body, .. } => {
                let stmts = in_list(p, body.stmts.clone());
                if let DeclKind::Action { body, .. } | DeclKind::Function { body, .. } =
                    &mut p.decls[i].kind
                {
                    body.stmts = stmts;
                }
            }
            DeclKind::Control { locals, apply, .. } => {
                let mut stmts: Vec<Stmt> =
                    locals.iter().flat_map(|&l| invalidate_decl(p, l)).collect();
                stmts.extend(in_list(p, apply.stmts.clone()));
                if let DeclKind::Control { apply, .. } = &mut p.decls[i].kind {
                    apply.stmts = stmts;
                }
            }
            DeclKind::Parser { locals, states, .. } => {
                let first: Vec<Stmt> = locals.iter().flat_map(|&l| invalidate_decl(p, l)).collect();
                let start = states.iter().copied().find(|&s| p.decl(s).name == "start");
                for s in states.clone() {
                    let DeclKind::State { stmts, .. } = &p.decl(s).kind else {
                        continue;
                    };
                    let mut new = if Some(s) == start {
                        first.clone()
                    } else {
                        Vec::new()
                    };
                    new.extend(in_list(p, stmts.clone()));
                    if let DeclKind::State { stmts, .. } = &mut p.decls[s.0 as usize].kind {
                        *stmts = new;
                    }
                }
            }
            _ => {}
        }
    }
}

/// `stmts` with the invalidations after each declaration, nested blocks included (a
/// declaration's scope is the rest of its own list, so the calls go into that list).
fn in_list(p: &Program, stmts: Vec<Stmt>) -> Vec<Stmt> {
    let mut out = Vec::with_capacity(stmts.len());
    for s in stmts {
        let after = match &s.kind {
            StmtKind::Var(d) => invalidate_decl(p, *d),
            _ => Vec::new(),
        };
        out.push(nested(p, s));
        out.extend(after);
    }
    out
}

fn nested(p: &Program, s: Stmt) -> Stmt {
    let span = s.span;
    let one = |s: Box<Stmt>| Box::new(nested(p, *s));
    let kind = match s.kind {
        StmtKind::If(c, t, e) => StmtKind::If(c, one(t), e.map(one)),
        StmtKind::Block(mut b) => {
            b.stmts = in_list(p, b.stmts);
            StmtKind::Block(b)
        }
        StmtKind::Switch(e, mut cases) => {
            for b in cases.iter_mut().filter_map(|c| c.body.as_mut()) {
                b.stmts = in_list(p, std::mem::take(&mut b.stmts));
            }
            StmtKind::Switch(e, cases)
        }
        StmtKind::For(mut l) => {
            l.body = nested(p, l.body);
            StmtKind::For(l)
        }
        kind => kind,
    };
    stmt(kind, span)
}

/// The `setInvalid()` calls a variable declared without initialiser needs.
fn invalidate_decl(p: &Program, d: DeclId) -> Vec<Stmt> {
    let decl = p.decl(d);
    let DeclKind::Var { ty, init: None } = &decl.kind else {
        return Vec::new();
    };
    let span = decl.span;
    let mut out = Vec::new();
    let var = Expr {
        kind: ExprKind::Ref(d),
        ty: ty.clone(),
        span,
    };
    invalidate(p, var, &mut out);
    out
}

/// `setInvalid()` of every header that `e` is or holds, in field and element order.
fn invalidate(p: &Program, e: Expr, out: &mut Vec<Stmt>) {
    let span = e.span;
    match e.ty.clone() {
        Type::Header(_) => out.push(set_invalid(e)),
        Type::Struct(_) | Type::HeaderUnion(_) => {
            let fields = p.fields(&e.ty).unwrap_or_default().to_vec();
            for (i, f) in fields.into_iter().enumerate() {
                let field = Expr {
                    kind: ExprKind::Field(Box::new(e.clone()), i),
                    ty: f.ty,
                    span,
                };
                invalidate(p, field, out);
            }
        }
        Type::Stack(elem, n) => {
            for k in 0..n {
                let index = Expr {
                    kind: ExprKind::Const(Value::Int(BigInt::from(k))),
                    ty: Type::Bit(32),
                    span,
                };
                let element = Expr {
                    kind: ExprKind::Index(Box::new(e.clone()), Box::new(index)),
                    ty: (*elem).clone(),
                    span,
                };
                invalidate(p, element, out);
            }
        }
        _ => {}
    }
}
