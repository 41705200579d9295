//! Building blocks of rewritten IR: temporaries with names no declaration uses, references,
//! assignments and blocks.

use p4_sema::ir::{
    Block, Builtin, Call, CallTarget, Decl, DeclId, DeclKind, Expr, ExprKind, Program, Stmt,
    StmtKind, Type, Value,
};
use p4_syntax::ast::UnOp;
use p4_syntax::Span;
use std::collections::HashSet;

/// Makes declarations whose names clash with no other name in the program, so that the
/// program still prints as P4 that checks (`tmp`, `tmp_0`, `tmp_1`, ...).
pub(crate) struct Temps {
    used: HashSet<String>,
}

impl Temps {
    pub fn new(p: &Program) -> Temps {
        let used = p
            .decls
            .iter()
            .map(|d| d.name.clone())
            .chain(p.types.iter().map(|t| t.name.clone()))
            .collect();
        Temps { used }
    }

    pub fn name(&mut self, base: &str) -> String {
        let mut name = base.to_string();
        let mut n = 0;
        while self.used.contains(&name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        self.used.insert(name.clone());
        name
    }

    /// A new local variable `ty base = init;` and the statement declaring it.
    pub fn var(
        &mut self,
        p: &mut Program,
        base: &str,
        ty: &Type,
        init: Option<Expr>,
        span: Span,
    ) -> (DeclId, Stmt) {
        let name = self.name(base);
        let id = DeclId(p.decls.len() as u32);
        p.decls.push(Decl {
            name,
            span,
            annotations: Vec::new(),
            kind: DeclKind::Var {
                ty: ty.clone(),
                init,
            },
        });
        (id, stmt(StmtKind::Var(id), span))
    }
}

pub(crate) fn stmt(kind: StmtKind, span: Span) -> Stmt {
    Stmt { kind, span }
}

/// A reference to a variable, typed as declared.
pub(crate) fn var_ref(p: &Program, id: DeclId, span: Span) -> Expr {
    let ty = match &p.decl(id).kind {
        DeclKind::Var { ty, .. } => ty.clone(),
        _ => Type::Unknown,
    };
    Expr {
        kind: ExprKind::Ref(id),
        ty,
        span,
    }
}

pub(crate) fn assign(dst: Expr, src: Expr) -> Stmt {
    let span = src.span;
    stmt(StmtKind::Assign(dst, src), span)
}

pub(crate) fn not(e: Expr) -> Expr {
    Expr {
        span: e.span,
        ty: Type::Bool,
        kind: ExprKind::Unary(UnOp::Not, Box::new(e)),
    }
}

pub(crate) fn block(stmts: Vec<Stmt>, span: Span) -> Stmt {
    stmt(
        StmtKind::Block(Block {
            annotations: Vec::new(),
            stmts,
            span,
        }),
        span,
    )
}

pub(crate) fn bool_const(b: bool, span: Span) -> Expr {
    Expr {
        kind: ExprKind::Const(Value::Bool(b)),
        ty: Type::Bool,
        span,
    }
}

/// `h.setInvalid();`
pub(crate) fn set_invalid(h: Expr) -> Stmt {
    let span = h.span;
    let call = Call {
        target: CallTarget::Builtin(h, Builtin::SetInvalid),
        type_args: Vec::new(),
        args: Vec::new(),
        params: Vec::new(),
    };
    let e = Expr {
        kind: ExprKind::Call(Box::new(call)),
        ty: Type::Void,
        span,
    };
    stmt(StmtKind::Call(e), span)
}
