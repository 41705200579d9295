//! `table-actions`: an action a table invokes with directional arguments bound in its
//! `actions` list (`actions = { a(hdr.x); }`) becomes an action of its own for that table,
//! with only the directionless (control-plane) parameters and the bound arguments copied in and
//! out around the body as `inline` does for a call. The copy keeps the control-plane name
//! (`@name`), so P4Info does not change. The table's default action, entries and the labels of
//! `switch (t.apply().action_run)` use the copy, as the specification requires them to name an
//! action of the list. A `return` left in any action becomes a flag (see `calls`), so the
//! lowering needs no jumps for it.

use crate::calls::{inline_action_args, lower_returns};
use crate::hoist::{Hoister, Mode};
use crate::visit::stmts_mut;
use crate::Pass;
use p4_sema::ir::{
    ActionRef, Block, Decl, DeclId, DeclKind, Expr, Program, StmtKind, SwitchLabel, Type,
};
use p4_syntax::ast::{self, find_annotation};
use std::collections::HashMap;

pub const PASS: Pass = Pass {
    name: "table-actions",
    about: "actions a table binds directional arguments to: one copy per table with the arguments copied in and out, same control-plane name; `return` in actions as a flag",
    run,
};

fn run(p: &mut Program) {
    let mut h = Hoister::new(p, Mode::Control);
    for ctl in 0..p.decls.len() {
        if matches!(p.decls[ctl].kind, DeclKind::Control { .. }) {
            control(p, &mut h, DeclId(ctl as u32));
        }
    }
    for i in 0..p.decls.len() {
        let DeclKind::Action { body, .. } = &p.decls[i].kind else {
            continue;
        };
        let (stmts, span) = (body.stmts.clone(), body.span);
        let stmts = lower_returns(p, &mut h, stmts, None, span);
        if let DeclKind::Action { body, .. } = &mut p.decls[i].kind {
            body.stmts = stmts;
        }
    }
}

fn control(p: &mut Program, h: &mut Hoister, ctl: DeclId) {
    let DeclKind::Control { locals, .. } = &p.decl(ctl).kind else {
        return;
    };
    let mut new_locals = Vec::new();
    // (table, action) to the table's copy, for the `switch` labels of the apply block.
    let mut copies: HashMap<(DeclId, DeclId), DeclId> = HashMap::new();
    for &l in &locals.clone() {
        if let DeclKind::Table(t) = &p.decl(l).kind {
            let mut t = t.clone();
            let mut by_action = HashMap::new();
            for ar in &mut t.actions {
                if let Some(copy) = specialize(p, h, ctl, ar) {
                    new_locals.push(copy);
                    by_action.insert(ar.action, copy);
                    copies.insert((l, ar.action), copy);
                    ar.action = copy;
                    ar.args = Vec::new();
                }
            }
            let refs = t
                .default_action
                .iter_mut()
                .chain(t.entries.iter_mut().map(|e| &mut e.action));
            for ar in refs {
                if let Some(&copy) = by_action.get(&ar.action) {
                    ar.args = directionless_args(p, ar);
                    ar.action = copy;
                }
            }
            if let DeclKind::Table(slot) = &mut p.decls[l.0 as usize].kind {
                *slot = t;
            }
        }
        new_locals.push(l);
    }
    let DeclKind::Control { locals, apply, .. } = &mut p.decls[ctl.0 as usize].kind else {
        return;
    };
    *locals = new_locals;
    for s in &mut apply.stmts {
        stmts_mut(s, &mut |s| {
            if let StmtKind::Switch(e, cases) = &mut s.kind {
                if let Type::ActionEnum(tbl) = e.ty {
                    for c in cases {
                        if let SwitchLabel::Action(a) = &mut c.label {
                            if let Some(&copy) = copies.get(&(tbl, *a)) {
                                *a = copy;
                            }
                        }
                    }
                }
            }
        });
    }
}

/// The arguments of a default action or entry for its directionless parameters.
fn directionless_args(p: &Program, ar: &ActionRef) -> Vec<Option<Expr>> {
    let DeclKind::Action { params, .. } = &p.decl(ar.action).kind else {
        return ar.args.clone();
    };
    params
        .iter()
        .zip(&ar.args)
        .filter(|(prm, _)| prm.dir.is_none())
        .map(|(_, a)| a.clone())
        .collect()
}

/// The copy of `ar`'s action with its directional arguments in place, declared in `ctl`;
/// `None` when the action has no directional parameter (or its arguments are left to the
/// lowering, see `calls`).
fn specialize(p: &mut Program, h: &mut Hoister, ctl: DeclId, ar: &ActionRef) -> Option<DeclId> {
    let orig = p.decl(ar.action).clone();
    let DeclKind::Action { params, body } = &orig.kind else {
        return None;
    };
    if params.iter().all(|prm| prm.dir.is_none()) {
        return None;
    }
    let stmts = inline_action_args(p, h, ar.action, &ar.args, ar.span)?;
    let local = matches!(&p.decl(ctl).kind, DeclKind::Control { locals, .. } if locals.contains(&ar.action));
    // The control-plane name the lowering gave the original: its `@name` or declared name,
    // under the control's prefix only when the action is declared in the control.
    let written = find_annotation(&orig.annotations, "name").and_then(|a| a.string_arg());
    let cp_name = match (written, local) {
        (Some(_), true) => None,
        (None, true) => Some(orig.name.clone()),
        (Some(n), false) if n.starts_with('.') => Some(n.to_string()),
        (Some(n), false) => Some(format!(".{n}")),
        (None, false) => Some(format!(".{}", orig.name)),
    };
    let mut annotations = orig.annotations.clone();
    if let Some(n) = cp_name {
        annotations.retain(|a| a.name.name != "name");
        annotations.insert(0, ast::Annotation::name(&n, ar.span));
    }
    let id = DeclId(p.decls.len() as u32);
    p.decls.push(Decl {
        name: h.temps.name(&orig.name),
        span: orig.span,
        annotations,
        kind: DeclKind::Action {
            params: params.iter().filter(|x| x.dir.is_none()).cloned().collect(),
            body: Block {
                annotations: body.annotations.clone(),
                stmts,
                span: body.span,
            },
        },
    });
    Some(id)
}
