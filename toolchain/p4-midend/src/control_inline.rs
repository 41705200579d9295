//! `control-inline`: every `c.apply(args);` of a control instance replaced by the control's
//! apply block, so the lowering sees one flat control per V1Switch block (p4c's
//! `InlineControlFlow`).
//!
//! Per apply site the callee's locals (variables, tables, actions, extern instances, its own
//! control instances) are copied into the caller, named `INST_NAME` and annotated with their
//! hierarchical control-plane name `@name("inst.name")` (an absolute `@name(".x")` stays), so
//! that P4Info and BMv2 JSON name them as before (`MyIngress.inst.t`). Its parameters are
//! copied in and out as for a call (see `calls`): one caller-local variable per `in`,
//! directionless, `out` or `inout` parameter, assigned from the argument before the body and
//! copied back after it in parameter order; an `inout` header, struct, union or stack and an
//! extern (or packet) argument are passed as the argument itself, by reference, as the lowering
//! did (p4c removes those copies when it can prove them useless). Constructor arguments
//! (constants, instances) take the place of the constructor parameters. The copied variables'
//! initialisers become assignments at the apply site, after the copy-in. A `return` in the
//! body becomes the `returned` flag; an `exit` performs the copy-outs of every control it
//! leaves first, in the body and in the copied actions. Controls applied inside the copy are
//! inlined in turn. The actions the callee's apply block calls directly are recorded as the
//! caller's (`control_plane_uses`), so P4Info still lists them.

use crate::build::{assign, block, var_ref};
use crate::calls::{copy_out_before_exit, lower_returns, pin_indices, rename_locals, subst_expr};
use crate::hoist::{Hoister, Mode};
use crate::visit::stmts_owned;
use crate::Pass;
use p4_sema::ir::{
    CallTarget, DeclId, DeclKind, Expr, ExprKind, Param, Program, Stmt, StmtKind, Type,
    TypeDeclKind,
};
use p4_syntax::ast::{self, find_annotation, Direction};
use p4_syntax::Span;
use std::collections::HashMap;

pub const PASS: Pass = Pass {
    name: "control-inline",
    about: "sub-control applies inlined: parameters copied in and out (inout headers and structs by reference), locals copied per apply under hierarchical @names, `return` as a flag, `exit` after the copy-outs",
    run,
};

/// P4 has no recursion; this bounds a malformed program (sub-parser inlining too).
pub(crate) const MAX_APPLIES: usize = 4096;

fn run(p: &mut Program) {
    let mut h = Hoister::new(p, Mode::Control);
    for ctl in 0..p.decls.len() {
        if matches!(p.decls[ctl].kind, DeclKind::Control { .. }) {
            control(p, &mut h, DeclId(ctl as u32));
        }
    }
}

/// Inlines every control apply of `ctl`'s apply block, the copies' own included.
fn control(p: &mut Program, h: &mut Hoister, ctl: DeclId) {
    for _ in 0..MAX_APPLIES {
        let DeclKind::Control { apply, .. } = &p.decl(ctl).kind else {
            return;
        };
        let mut stmts = apply.stmts.clone();
        let mut done = false;
        stmts = stmts
            .into_iter()
            .map(|s| {
                stmts_owned(s, &mut |s| {
                    if done {
                        return s;
                    }
                    match applied_block(p, &s) {
                        Some((inst, callee, args)) => {
                            done = true;
                            inline_apply(p, h, ctl, inst, callee, &args, s.span)
                        }
                        None => s,
                    }
                })
            })
            .collect();
        if !done {
            break;
        }
        if let DeclKind::Control { apply, .. } = &mut p.decls[ctl.0 as usize].kind {
            apply.stmts = stmts;
        }
    }
    if let DeclKind::Control { locals, .. } = &p.decl(ctl).kind {
        let kept = without_blocks(p, locals);
        if let DeclKind::Control { locals, .. } = &mut p.decls[ctl.0 as usize].kind {
            *locals = kept;
        }
    }
}

pub(crate) fn applied_block(p: &Program, s: &Stmt) -> Option<(DeclId, DeclId, Vec<Option<Expr>>)> {
    let StmtKind::Call(e) = &s.kind else {
        return None;
    };
    let ExprKind::Call(c) = &e.kind else {
        return None;
    };
    let CallTarget::Apply(recv) = &c.target else {
        return None;
    };
    let ExprKind::Ref(inst) = recv.kind else {
        return None;
    };
    let DeclKind::Instance {
        ty: Type::Control(t, _) | Type::Parser(t, _),
        ..
    } = &p.decl(inst).kind
    else {
        return None;
    };
    match &p.ty(*t).kind {
        TypeDeclKind::Block {
            implementation: Some(callee),
            ..
        } => Some((inst, *callee, c.args.clone())),
        _ => None,
    }
}

/// `locals` without control and parser instances: those are applied only through their
/// copies once inlined.
pub(crate) fn without_blocks(p: &Program, locals: &[DeclId]) -> Vec<DeclId> {
    locals
        .iter()
        .copied()
        .filter(|l| {
            !matches!(
                p.decl(*l).kind,
                DeclKind::Instance {
                    ty: Type::Control(..) | Type::Parser(..),
                    ..
                }
            )
        })
        .collect()
}

/// The name `d` is given in the control plane, relative to its block: its `@name`, else its
/// declared name.
fn written_name(p: &Program, d: DeclId) -> String {
    let decl = p.decl(d);
    find_annotation(&decl.annotations, "name")
        .and_then(|a| a.string_arg())
        .map_or_else(|| decl.name.clone(), str::to_string)
}

/// The control-plane name of `d` inside instance `inst` as `@name` writes it relative to the
/// caller: `inst.name`, or `@name(".x")` as it is.
fn hierarchical(p: &Program, inst: DeclId, d: DeclId) -> String {
    let base = written_name(p, d);
    if base.starts_with('.') {
        base
    } else {
        format!("{}.{base}", written_name(p, inst))
    }
}

pub(crate) fn is_by_reference(ty: &Type) -> bool {
    matches!(
        ty,
        Type::Struct(_) | Type::Header(_) | Type::Stack(..) | Type::HeaderUnion(_)
    )
}

/// What one apply site binds: the callee's parameters and constructor parameters renamed
/// (`map`) or replaced by the caller's expressions (`by_ref`), the copy-in and copy-out
/// assignments and the caller-local variables they use.
pub(crate) struct Binding {
    pub map: HashMap<DeclId, DeclId>,
    pub by_ref: HashMap<DeclId, Expr>,
    pub copy_in: Vec<Stmt>,
    pub copy_out: Vec<Stmt>,
    pub locals: Vec<DeclId>,
}

/// Binds the parameters of `inst`'s block to `args`: constructor parameters to the
/// instance's arguments, a parameter `by_reference` accepts to its argument (a run-time index
/// saved first), any other to a new variable copied in (unless `out`) and out (`out`/`inout`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn bind(
    p: &mut Program,
    h: &mut Hoister,
    inst: DeclId,
    ctor_params: &[Param],
    params: &[Param],
    args: &[Option<Expr>],
    span: Span,
    by_reference: fn(&Param) -> bool,
) -> Binding {
    let mut b = Binding {
        map: HashMap::new(),
        by_ref: HashMap::new(),
        copy_in: Vec::new(),
        copy_out: Vec::new(),
        locals: Vec::new(),
    };
    if let DeclKind::Instance { args, .. } = &p.decl(inst).kind {
        for (prm, a) in ctor_params.iter().zip(args) {
            if let Some(a) = a {
                b.by_ref.insert(prm.decl, a.clone());
            }
        }
    }
    for (prm, a) in params.iter().zip(args) {
        let Some(mut a) = a.clone() else {
            continue;
        };
        if matches!(prm.dir, Some(Direction::Out | Direction::InOut)) {
            pin_indices(p, h, &mut a, &mut b.copy_in);
        }
        // An `int` parameter has no storage: its argument, a constant, is used in place.
        if by_reference(prm) || prm.ty == Type::InfInt {
            b.by_ref.insert(prm.decl, a);
            continue;
        }
        let (v, _) = h.temps.var(p, &prm.name, &prm.ty, None, span);
        b.locals.push(v);
        if prm.dir != Some(Direction::Out) {
            b.copy_in.push(assign(var_ref(p, v, a.span), a.clone()));
        }
        if matches!(prm.dir, Some(Direction::Out | Direction::InOut)) {
            b.copy_out.push(assign(a, var_ref(p, v, span)));
        }
        b.map.insert(prm.decl, v);
    }
    b
}

/// Copies of the block's `locals` for instance `inst`, named `INST_NAME`, with their
/// hierarchical `@name`; the copied variables' initialisers are appended to `b.copy_in`
/// (they run at the apply site) and the copies to `b.locals`.
pub(crate) fn copy_locals(
    p: &mut Program,
    h: &mut Hoister,
    inst: DeclId,
    locals: &[DeclId],
    b: &mut Binding,
) {
    let inst_name = p.decl(inst).name.clone();
    let mut copies = Vec::new();
    for &l in locals {
        let mut decl = p.decl(l).clone();
        decl.name = h.temps.name(&format!("{inst_name}_{}", decl.name));
        if !matches!(decl.kind, DeclKind::Var { .. } | DeclKind::Const { .. }) {
            let name = hierarchical(p, inst, l);
            decl.annotations.retain(|a| a.name.name != "name");
            decl.annotations
                .insert(0, ast::Annotation::name(&name, decl.span));
        }
        let id = DeclId(p.decls.len() as u32);
        p.decls.push(decl);
        b.map.insert(l, id);
        copies.push(id);
    }
    for &id in &copies {
        copy_local(p, h, id, &mut b.map, &b.by_ref, &b.copy_out);
        if let DeclKind::Var {
            init: init @ Some(_),
            ..
        } = &mut p.decls[id.0 as usize].kind
        {
            let init = init.take().expect("matched Some");
            b.copy_in.push(assign(var_ref(p, id, init.span), init));
        }
    }
    b.locals.extend(copies);
}

/// `ctl`'s locals with `new` where `inst` is declared.
pub(crate) fn splice_locals(locals: &mut Vec<DeclId>, inst: DeclId, new: Vec<DeclId>) {
    let at = locals
        .iter()
        .position(|&l| l == inst)
        .unwrap_or(locals.len());
    locals.splice(at..at, new);
}

/// A control's parameters passed by reference: externs and packets, `inout` aggregates.
fn control_by_reference(prm: &Param) -> bool {
    matches!(prm.ty, Type::Extern(..))
        || (prm.dir == Some(Direction::InOut) && is_by_reference(&prm.ty))
}

/// The statements replacing `inst.apply(args);` in `ctl`; the callee's locals are copied into
/// `ctl`'s, where `inst` is declared.
fn inline_apply(
    p: &mut Program,
    h: &mut Hoister,
    ctl: DeclId,
    inst: DeclId,
    callee: DeclId,
    args: &[Option<Expr>],
    span: Span,
) -> Stmt {
    let DeclKind::Control {
        params,
        ctor_params,
        locals,
        apply,
        ..
    } = p.decl(callee).kind.clone()
    else {
        return block(Vec::new(), span);
    };
    let mut b = bind(
        p,
        h,
        inst,
        &ctor_params,
        &params,
        args,
        span,
        control_by_reference,
    );
    copy_locals(p, h, inst, &locals, &mut b);
    let mut stmts = std::mem::take(&mut b.copy_in);
    let body = rename_locals(p, h, apply.stmts, &mut b.map, &b.by_ref);
    stmts.extend(lower_returns(p, h, body, None, span));
    stmts.extend(b.copy_out.iter().cloned());
    let stmts: Vec<Stmt> = if b.copy_out.is_empty() {
        stmts
    } else {
        stmts
            .into_iter()
            .map(|s| copy_out_before_exit(s, &b.copy_out))
            .collect()
    };
    // The callee's directly called actions are the caller's now, as their copies.
    let direct: Vec<DeclId> = p
        .control_plane_uses
        .direct_actions
        .get(&callee)
        .map(|v| {
            v.iter()
                .map(|a| b.map.get(a).copied().unwrap_or(*a))
                .collect()
        })
        .unwrap_or_default();
    if !direct.is_empty() {
        p.control_plane_uses
            .direct_actions
            .entry(ctl)
            .or_default()
            .extend(direct);
    }
    // The callee's applied tables are applied through their copies (P4Info lists only the
    // actions of applied tables).
    let applied: Vec<DeclId> = b
        .map
        .iter()
        .filter(|(orig, _)| p.control_plane_uses.applied_tables.contains(orig))
        .map(|(_, copy)| *copy)
        .collect();
    p.control_plane_uses.applied_tables.extend(applied);
    if let DeclKind::Control { locals, .. } = &mut p.decls[ctl.0 as usize].kind {
        splice_locals(locals, inst, b.locals);
    }
    block(stmts, span)
}

/// Substitutes the callee's parameters and locals inside the copied local `id`; an action's
/// `exit` performs the control's copy-outs first.
fn copy_local(
    p: &mut Program,
    h: &mut Hoister,
    id: DeclId,
    map: &mut HashMap<DeclId, DeclId>,
    by_ref: &HashMap<DeclId, Expr>,
    copy_out: &[Stmt],
) {
    let mut kind = p.decl(id).kind.clone();
    if let DeclKind::Action { body, .. } = &mut kind {
        let stmts = rename_locals(p, h, std::mem::take(&mut body.stmts), map, by_ref);
        body.stmts = if copy_out.is_empty() {
            stmts
        } else {
            stmts
                .into_iter()
                .map(|s| copy_out_before_exit(s, copy_out))
                .collect()
        };
    }
    // A key is named after its expression as the callee wrote it, before substitution.
    if let DeclKind::Table(t) = &mut kind {
        for k in &mut t.key {
            if find_annotation(&k.annotations, "name").is_none() {
                let name = k.control_plane_name(p);
                k.annotations
                    .insert(0, ast::Annotation::name(&name, k.span));
            }
        }
    }
    let map = &*map;
    let mut sub = |e: &mut Expr| subst_expr(e, map, by_ref);
    match &mut kind {
        DeclKind::Var { init: Some(e), .. } => sub(e),
        DeclKind::Instance { args, .. } => args.iter_mut().flatten().for_each(sub),
        DeclKind::Table(t) => {
            for k in &mut t.key {
                sub(&mut k.expr);
            }
            let refs = t
                .actions
                .iter_mut()
                .chain(t.default_action.iter_mut())
                .chain(t.entries.iter_mut().map(|e| &mut e.action));
            for ar in refs {
                ar.action = map.get(&ar.action).copied().unwrap_or(ar.action);
                ar.args.iter_mut().flatten().for_each(&mut sub);
            }
            for e in &mut t.entries {
                e.keys.iter_mut().for_each(&mut sub);
            }
            for prop in &mut t.props {
                sub(&mut prop.value);
            }
        }
        _ => {}
    }
    p.decls[id.0 as usize].kind = kind;
}
