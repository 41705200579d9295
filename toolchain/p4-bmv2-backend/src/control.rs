//! Control apply blocks to BMv2 pipelines: a graph of tables and conditionals.
//!
//! Statements are lowered back to front, so each node knows its successor: a run of
//! straight-line statements becomes a hidden table with one hidden action (p4c's `tbl_act`),
//! `if` a conditional, `t.apply()` the table, `if (t.apply().hit)` the table with `__HIT__`/
//! `__MISS__` successors, `switch (t.apply().action_run)` the table with per-action
//! successors; `exit` ends the pipeline. `p4-midend` inlined sub-controls.

use crate::expr::has_table_hit;
use crate::layout::Place;
use crate::num::{const_int, hex, mask, unsigned};
use crate::prims::Body;
use crate::{unsupported, Bind, Ctx, Frame, R};
use num_bigint::BigInt;
use p4_bmv2_json as j;
use p4_bmv2_json::Tv;
use p4_sema::ir::{
    ActionRef, CallTarget, DeclId, DeclKind, Expr, ExprKind, Program, Stmt, StmtKind, SwitchLabel,
    TableField, Type, Value,
};
use p4_syntax::ast::{BinOp, UnOp};
use p4_syntax::Span;
use std::collections::{BTreeMap, HashMap};

type Next = Option<String>;

/// Where a table continues.
enum Succ {
    Plain(Next),
    HitMiss(Next, Next),
    PerAction(HashMap<DeclId, Next>, Next),
}

fn is_straight(p: &Program, s: &Stmt) -> bool {
    match &s.kind {
        StmtKind::Assign(_, r) => !has_table_hit(r),
        StmtKind::Var(d) => match &p.decl(*d).kind {
            DeclKind::Var { init: Some(i), .. } => !has_table_hit(i),
            _ => true,
        },
        StmtKind::Const(_) | StmtKind::Empty => true,
        // A block of straight-line code (an inlined call) joins the run around it.
        StmtKind::Block(b) => b.stmts.iter().all(|s| is_straight(p, s)),
        StmtKind::Call(e) => {
            !matches!(&e.kind, ExprKind::Call(c) if matches!(c.target, CallTarget::Apply(_)))
        }
        // A loop runs inside the hidden action, its `if`s as jumps (p4c's layout for loops
        // it does not unroll).
        StmtKind::For(_) => in_action(p, s),
        _ => false,
    }
}

/// Whether `s` can run inside a hidden action: straight-line code, and `if`s and loops that
/// apply no table and neither exit nor return.
fn in_action(p: &Program, s: &Stmt) -> bool {
    match &s.kind {
        StmtKind::If(c, t, e) => {
            !has_table_hit(c) && in_action(p, t) && e.as_deref().map_or(true, |e| in_action(p, e))
        }
        StmtKind::For(l) => {
            !has_table_hit(&l.cond)
                && l.init.iter().chain(&l.update).all(|s| in_action(p, s))
                && in_action(p, &l.body)
        }
        StmtKind::Block(b) => b.stmts.iter().all(|s| in_action(p, s)),
        StmtKind::Break | StmtKind::Continue => true,
        _ => is_straight(p, s),
    }
}

/// The outermost operands of `e` that apply a table and that `value_node` evaluates as a
/// whole (a hit/miss, `&&`, `||`, `?:`), in evaluation order.
fn hit_operands<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    for c in crate::expr::children(e) {
        if !has_table_hit(c) {
            continue;
        }
        let whole = table_hit(c).is_some()
            || matches!(
                c.kind,
                ExprKind::Ternary(..) | ExprKind::Binary(BinOp::And | BinOp::Or, _, _)
            );
        if whole {
            out.push(c);
        } else {
            hit_operands(c, out);
        }
    }
}

/// `t.apply().hit` (true) / `.miss` (false), possibly negated.
fn table_hit(e: &Expr) -> Option<(DeclId, bool)> {
    match &e.kind {
        ExprKind::TableApply(t, TableField::Hit) => Some((*t, true)),
        ExprKind::TableApply(t, TableField::Miss) => Some((*t, false)),
        ExprKind::Unary(UnOp::Not, x) => table_hit(x).map(|(t, h)| (t, !h)),
        _ => None,
    }
}

impl Ctx<'_> {
    pub fn lower_pipeline(&mut self, d: DeclId, name: &str) -> R<()> {
        let DeclKind::Control { apply, .. } = &self.p.decl(d).kind else {
            return unsupported(
                self.p.decl(d).span,
                "V1Switch's ingress/egress must be controls",
            );
        };
        self.pipe = j::Pipeline {
            name: name.into(),
            id: self.json.pipelines.len() as i64,
            ..j::Pipeline::default()
        };
        self.declare_locals(d)?;
        let entry = self.lower_block(&apply.stmts, None, None)?;
        self.pipe.init_table = self.local_inits(d, entry)?;
        let pipe = std::mem::take(&mut self.pipe);
        self.json.pipelines.push(pipe);
        Ok(())
    }

    /// Emits the control's extern instances (p4c emits them whether used or not).
    fn declare_locals(&mut self, d: DeclId) -> R<()> {
        if let DeclKind::Control { locals, .. } = &self.p.decl(d).kind {
            for &l in locals {
                if let Some(Bind::Named(n)) = self.frame.env.get(&l).cloned() {
                    self.declare_instance(&n, l)?;
                }
            }
            crate::p4info::control(self, d);
        }
        Ok(())
    }

    /// Initialisers of a control's local variables run before its apply block.
    fn local_inits(&mut self, d: DeclId, entry: Next) -> R<Next> {
        let DeclKind::Control { locals, .. } = &self.p.decl(d).kind else {
            return Ok(entry);
        };
        let mut b = Body::new(false);
        for &l in locals {
            if let (
                DeclKind::Var {
                    init: Some(init), ..
                },
                Some(Bind::Place(pl)),
            ) = (&self.p.decl(l).kind, self.frame.env.get(&l).cloned())
            {
                b.at.get_or_insert(self.p.decl(l).span);
                self.assign_expr(&mut b, &pl, init)?;
            }
        }
        self.action_node(b, entry)
    }

    fn lower_block(&mut self, stmts: &[Stmt], k: Next, ret: Next) -> R<Next> {
        let mut next = k;
        let mut pending: Vec<&Stmt> = Vec::new();
        // Locals are visible in later statements, which are lowered first.
        for s in stmts {
            self.bind_locals(s)?;
        }
        for s in stmts.iter().rev() {
            if is_straight(self.p, s) {
                pending.push(s);
                continue;
            }
            next = self.flush(&mut pending, next)?;
            // A statement the lowering refuses (here or in `flush`) is reported and left out,
            // so that every refusal is reported and the control's tables are still collected.
            next = match self.lower_ctl(s, next.clone(), ret.clone()) {
                Ok(n) => n,
                Err(u) => {
                    self.errors.push(u);
                    next
                }
            };
        }
        self.flush(&mut pending, next)
    }

    fn bind_locals(&mut self, s: &Stmt) -> R<()> {
        match &s.kind {
            StmtKind::Var(d) if !self.frame.env.contains_key(d) => {
                let pl = self.local_place(*d)?;
                self.frame.env.insert(*d, Bind::Place(pl));
            }
            StmtKind::Block(b) => {
                for s in &b.stmts {
                    self.bind_locals(s)?;
                }
            }
            StmtKind::If(_, t, e) => {
                self.bind_locals(t)?;
                if let Some(e) = e {
                    self.bind_locals(e)?;
                }
            }
            StmtKind::Switch(_, cases) => {
                for c in cases {
                    if let Some(b) = &c.body {
                        for s in &b.stmts {
                            self.bind_locals(s)?;
                        }
                    }
                }
            }
            StmtKind::For(l) => {
                for s in l.init.iter().chain(&l.update) {
                    self.bind_locals(s)?;
                }
                self.bind_locals(&l.body)?;
            }
            _ => {}
        }
        Ok(())
    }

    /// Straight-line statements (collected back to front) as a hidden action and table.
    fn flush(&mut self, pending: &mut Vec<&Stmt>, next: Next) -> R<Next> {
        if pending.is_empty() {
            return Ok(next);
        }
        let mut b = Body::new(false);
        while let Some(s) = pending.pop() {
            if let Err(u) = self.stmt(&mut b, s) {
                self.errors.push(u);
            }
        }
        self.action_node(b, next)
    }

    /// A hidden table running `b`'s primitives, then `next`.
    fn action_node(&mut self, b: Body, next: Next) -> R<Next> {
        // p4c names a hidden action after the file and line of its first statement
        // (`forloopbmv2l99` for line 99 of forloop-bmv2.p4), which keeps STF's table names,
        // matched by suffix, from also matching it.
        let base = match b.at {
            Some(at) => {
                let loc = self.map.locate(at.lo);
                let stem = std::path::Path::new(&loc.file)
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let stem: String = stem.chars().filter(char::is_ascii_alphanumeric).collect();
                format!("{stem}l{}", loc.line)
            }
            None => "act".to_string(),
        };
        let prims = b.finish();
        if prims.is_empty() {
            return Ok(next);
        }
        let act = self.fresh(&base);
        let id = self.json.actions.len() as i64;
        self.json.actions.push(j::Action {
            name: act.clone(),
            id,
            runtime_data: vec![],
            primitives: prims,
        });
        let tname = self.fresh(&format!("tbl_{act}"));
        let mut next_tables = BTreeMap::new();
        next_tables.insert(act.clone(), next.clone());
        self.pipe.tables.push(j::Table {
            name: tname.clone(),
            id: self.table_id(),
            key: vec![],
            match_type: j::MatchType::Exact,
            kind: j::TableType::Simple,
            action_profile: None,
            act_prof_name: None,
            selector: None,
            max_size: 1024,
            with_counters: false,
            support_timeout: false,
            direct_meters: None,
            action_ids: vec![id],
            actions: vec![act],
            base_default_next: next,
            next_tables,
            default_entry: Some(j::DefaultEntry {
                action_id: id,
                action_const: true,
                action_data: vec![],
                action_entry_const: true,
            }),
            entries: vec![],
            source_info: None,
        });
        Ok(Some(tname))
    }

    fn table_id(&self) -> i64 {
        self.json
            .pipelines
            .iter()
            .map(|p| p.tables.len())
            .sum::<usize>() as i64
            + self.pipe.tables.len() as i64
    }

    fn lower_ctl(&mut self, s: &Stmt, k: Next, ret: Next) -> R<Next> {
        match &s.kind {
            StmtKind::Block(b) => self.lower_block(&b.stmts, k, ret),
            // `p4-midend`'s `control-inline` put the copy-outs of the controls it leaves first.
            StmtKind::Exit => Ok(None),
            StmtKind::Return(_) => Ok(ret),
            StmtKind::If(c, t, e) => {
                let tn = self.lower_block(std::slice::from_ref(t), k.clone(), ret.clone())?;
                let en = match e {
                    Some(e) => self.lower_block(std::slice::from_ref(e), k.clone(), ret.clone())?,
                    None => k.clone(),
                };
                if let Some((tbl, hit)) = table_hit(c) {
                    let (h, m) = if hit { (tn, en) } else { (en, tn) };
                    return self.table_node(tbl, s.span, Succ::HitMiss(h, m));
                }
                if has_table_hit(c) {
                    let tmp = self.scalar("cond", &Type::Bool, c.span)?;
                    let cond = self.read(&tmp, c.span)?;
                    let node = self.cond_node(cond, tn, en);
                    return self.value_node(c, &tmp, node);
                }
                let mut pre = Body::new(false);
                // A call in the condition arrives hoisted before the `if` (`p4-midend`).
                let cond = self.rv(&mut pre, c)?;
                let node = self.cond_node(cond, tn, en);
                self.action_node(pre, node)
            }
            // Reached only when the value applies a table (`is_straight`).
            StmtKind::Assign(l, r) => {
                let mut pre = Body::new(false);
                let dst = self.place(&mut pre, l)?;
                let node = self.value_node(r, &dst, k)?;
                self.action_node(pre, node)
            }
            StmtKind::Var(d) => {
                let (
                    DeclKind::Var {
                        init: Some(init), ..
                    },
                    Some(Bind::Place(dst)),
                ) = (&self.p.decl(*d).kind, self.frame.env.get(d).cloned())
                else {
                    return unsupported(s.span, "this declaration");
                };
                self.value_node(init, &dst, k)
            }
            StmtKind::Switch(e, cases) => {
                let ExprKind::TableApply(tbl, TableField::ActionRun) = &e.kind else {
                    return self.value_switch(e, cases, k, ret);
                };
                let mut targets: HashMap<DeclId, Next> = HashMap::new();
                let mut default = k.clone();
                let mut following: Next = k.clone();
                for c in cases.iter().rev() {
                    let target = match &c.body {
                        Some(b) => self.lower_block(&b.stmts, k.clone(), ret.clone())?,
                        None => following.clone(),
                    };
                    match &c.label {
                        SwitchLabel::Action(a) => {
                            targets.insert(*a, target.clone());
                        }
                        SwitchLabel::Default => default = target.clone(),
                        SwitchLabel::Value(v) => {
                            return unsupported(v.span, "a value label in a switch on action_run")
                        }
                    }
                    following = target;
                }
                self.table_node(*tbl, s.span, Succ::PerAction(targets, default))
            }
            StmtKind::Call(e) => {
                let ExprKind::Call(c) = &e.kind else {
                    return unsupported(e.span, "this statement");
                };
                let CallTarget::Apply(recv) = &c.target else {
                    return unsupported(e.span, "this call");
                };
                match &recv.ty {
                    Type::Table(t) => self.table_node(*t, e.span, Succ::Plain(k)),
                    // `p4-midend`'s `control-inline` inlines the applies of control instances.
                    Type::Control(..) => unsupported(e.span, "apply() of this control"),
                    _ => unsupported(e.span, "apply() of this value"),
                }
            }
            StmtKind::For(_) => unsupported(
                s.span,
                "a loop in an apply block that applies a table, exits or returns",
            ),
            _ => unsupported(s.span, "this statement in an apply block"),
        }
    }

    /// A conditional node on `cond`.
    fn cond_node(&mut self, cond: Tv, true_next: Next, false_next: Next) -> Next {
        let name = self.fresh("node");
        let id = self
            .json
            .pipelines
            .iter()
            .map(|p| p.conditionals.len())
            .sum::<usize>()
            + self.pipe.conditionals.len();
        self.pipe.conditionals.push(j::Conditional {
            name: name.clone(),
            id: id as i64,
            expression: cond,
            true_next,
            false_next,
            source_info: None,
        });
        Some(name)
    }

    /// Nodes computing `dst = e` then continuing at `k`, where `e` applies tables for their
    /// `hit`/`miss` (as p4c's `SideEffectOrdering` does): `&&`, `||` and `?:` become
    /// conditionals so that a table is applied only when the operator evaluates that operand.
    fn value_node(&mut self, e: &Expr, dst: &Place, k: Next) -> R<Next> {
        if !has_table_hit(e) {
            let mut b = Body::new(false);
            self.assign_expr(&mut b, dst, e)?;
            return self.action_node(b, k);
        }
        if let Some((tbl, hit)) = table_hit(e) {
            let t = self.const_node(dst, hit, e.span, k.clone())?;
            let f = self.const_node(dst, !hit, e.span, k)?;
            return self.table_node(tbl, e.span, Succ::HitMiss(t, f));
        }
        match &e.kind {
            ExprKind::Binary(op @ (BinOp::And | BinOp::Or), a, b) => {
                // The left operand decides alone when it is false (`&&`) or true (`||`).
                let tmp = self.scalar("cond", &Type::Bool, a.span)?;
                let done = {
                    let mut bd = Body::new(false);
                    let v = self.read(&tmp, e.span)?;
                    self.assign_tv(&mut bd, dst, v, e.span)?;
                    self.action_node(bd, k)?
                };
                let rest = self.value_node(b, &tmp, done.clone())?;
                let cond = self.read(&tmp, a.span)?;
                let node = if *op == BinOp::And {
                    self.cond_node(cond, rest, done)
                } else {
                    self.cond_node(cond, done, rest)
                };
                self.value_node(a, &tmp, node)
            }
            ExprKind::Ternary(c, x, y) => {
                let tmp = self.scalar("cond", &Type::Bool, c.span)?;
                let xn = self.value_node(x, dst, k.clone())?;
                let yn = self.value_node(y, dst, k)?;
                let cond = self.read(&tmp, c.span)?;
                let node = self.cond_node(cond, xn, yn);
                self.value_node(c, &tmp, node)
            }
            _ => {
                // Operands that apply a table are computed first (into temporaries), then
                // the expression; other operands must not have side effects to reorder.
                let mut subs = Vec::new();
                hit_operands(e, &mut subs);
                let mut rest_has_call = false;
                crate::expr::children(e).iter().for_each(|c| {
                    if !has_table_hit(c) && c.has_call() {
                        rest_has_call = true;
                    }
                });
                if rest_has_call || subs.is_empty() {
                    return unsupported(
                        e.span,
                        "a table's hit/miss beside other side effects in an expression",
                    );
                }
                let mut temps = Vec::new();
                for sub in &subs {
                    temps.push(self.scalar("tmp", &crate::expr::repr(self, &sub.ty), sub.span)?);
                }
                for (sub, t) in subs.iter().zip(&temps) {
                    self.hoisted.insert(*sub as *const Expr, t.clone());
                }
                let mut b = Body::new(false);
                let r = self.assign_expr(&mut b, dst, e);
                for sub in &subs {
                    self.hoisted.remove(&(*sub as *const Expr));
                }
                r?;
                let mut next = self.action_node(b, k)?;
                for (sub, t) in subs.iter().zip(&temps).rev() {
                    next = self.value_node(sub, t, next)?;
                }
                Ok(next)
            }
        }
    }

    /// A hidden action setting the boolean `dst` to `v`, then `k`.
    fn const_node(&mut self, dst: &Place, v: bool, span: Span, k: Next) -> R<Next> {
        let mut b = Body::new(false);
        let e = Expr {
            kind: ExprKind::Const(Value::Bool(v)),
            ty: Type::Bool,
            span,
        };
        self.assign_expr(&mut b, dst, &e)?;
        self.action_node(b, k)
    }

    /// `switch` on a value: a chain of conditionals, first label first; labels without a body
    /// share the next body.
    fn value_switch(
        &mut self,
        e: &Expr,
        cases: &[p4_sema::ir::SwitchCase],
        k: Next,
        ret: Next,
    ) -> R<Next> {
        let mut pre = Body::new(false);
        let tmp = self.scalar("switch", &crate::expr::repr(self, &e.ty), e.span)?;
        self.assign_expr(&mut pre, &tmp, e)?;
        let key = self.read(&tmp, e.span)?;
        let mut targets = Vec::new();
        let mut following = k.clone();
        for c in cases.iter().rev() {
            let target = match &c.body {
                Some(b) => self.lower_block(&b.stmts, k.clone(), ret.clone())?,
                None => following.clone(),
            };
            targets.push((&c.label, target.clone()));
            following = target;
        }
        let mut next = targets
            .iter()
            .find(|(l, _)| matches!(l, SwitchLabel::Default))
            .map_or(k, |(_, t)| t.clone());
        for (label, target) in targets {
            let SwitchLabel::Value(v) = label else {
                continue;
            };
            let mut scratch = Body::new(false);
            let vv = self.rv(&mut scratch, v)?;
            next = self.cond_node(crate::expr::op("==", key.clone(), vv), target, next);
        }
        self.action_node(pre, next)
    }

    /// The JSON action for an action of a table (emitted once per control instance): its
    /// directionless parameters are action data; `p4-midend`'s `table-actions` made an action
    /// of its own for each binding of directional ones.
    fn table_action(&mut self, d: DeclId, span: Span) -> R<(String, i64)> {
        let name = match self.frame.env.get(&d) {
            Some(Bind::Named(n)) => n.clone(),
            _ => self.cp_name("", d),
        };
        let key = format!("{name}#{}", d.0);
        if let Some(v) = self.action_keys.get(&key) {
            return Ok(v.clone());
        }
        let DeclKind::Action { params, body } = &self.p.decl(d).kind else {
            return unsupported(span, "not an action");
        };
        let mut runtime_data = Vec::new();
        let mut saved = Vec::new();
        for prm in params {
            if prm.dir.is_some() {
                return unsupported(
                    span,
                    "a directional argument the midend leaves (see p4-midend's README)",
                );
            }
            let Some((j::FieldWidth::Bits(w), _)) = crate::layout::scalar_width(self, &prm.ty)
            else {
                return unsupported(span, "an action parameter of this type");
            };
            let i = runtime_data.len() as u32;
            runtime_data.push(j::RuntimeData {
                name: prm.name.clone(),
                bitwidth: w,
            });
            let tv = if prm.ty == Type::Bool {
                crate::expr::un("d2b", Tv::RuntimeData(i))
            } else {
                Tv::RuntimeData(i)
            };
            saved.push((prm.decl, self.frame.env.get(&prm.decl).cloned()));
            self.frame.env.insert(prm.decl, Bind::Value(tv));
        }
        let mut b = Body::new(false);
        let r = self.stmts(&mut b, &body.stmts);
        for (dcl, old) in saved {
            match old {
                Some(o) => self.frame.env.insert(dcl, o),
                None => self.frame.env.remove(&dcl),
            };
        }
        r?;
        let id = self.json.actions.len() as i64;
        // Every copy keeps the control-plane name, as in p4c's JSON (ids tell them apart): the
        // STF runner and P4Runtime find a table's action by that name.
        self.json.actions.push(j::Action {
            name: name.clone(),
            id,
            runtime_data,
            primitives: b.finish(),
        });
        crate::p4info::action(self, &name, d, true);
        self.action_keys.insert(key, (name.clone(), id));
        Ok((name, id))
    }

    fn table_node(&mut self, t: DeclId, span: Span, succ: Succ) -> R<Next> {
        let p = self.p;
        let DeclKind::Table(tbl) = &p.decl(t).kind else {
            return unsupported(span, "not a table");
        };
        let name = match self.frame.env.get(&t) {
            Some(Bind::Named(n)) => n.clone(),
            _ => return unsupported(span, "a table outside its control"),
        };
        let mut pre = Body::new(false);
        let mut keys = Vec::new();
        let mut selector_input = Vec::new();
        let mut widths = Vec::new();
        for k in &tbl.key {
            let (target, kmask) = self.key_target(&mut pre, &k.expr)?;
            if k.match_kind == "selector" {
                if let j::KeyTarget::Field(f) = target {
                    selector_input.push(Tv::Field(f));
                }
                continue;
            }
            let mt: j::MatchType = match k.match_kind.parse() {
                Ok(m) => m,
                Err(_) => return unsupported(k.span, format!("match kind `{}`", k.match_kind)),
            };
            widths.push(
                p.width_of(&crate::expr::repr(self, &k.expr.ty))
                    .unwrap_or(1) as u32,
            );
            keys.push(j::TableKey {
                match_type: mt,
                name: Some(k.control_plane_name(p)),
                target,
                mask: kmask,
            });
        }
        let match_type = table_match_type(&keys);
        // Actions.
        let mut action_ids = Vec::new();
        let mut actions = Vec::new();
        let mut by_decl: HashMap<DeclId, String> = HashMap::new();
        for ar in &tbl.actions {
            let (n, id) = self.table_action(ar.action, ar.span)?;
            by_decl.insert(ar.action, n.clone());
            action_ids.push(id);
            actions.push(n);
        }
        let default_ref = match &tbl.default_action {
            Some(a) => Some(a.clone()),
            None => self.no_action(span),
        };
        let default_entry = match &default_ref {
            Some(ar) => {
                let (n, id) = self.table_action(ar.action, ar.span)?;
                if !actions.contains(&n) {
                    by_decl.insert(ar.action, n.clone());
                    action_ids.push(id);
                    actions.push(n);
                }
                Some(j::DefaultEntry {
                    action_id: id,
                    action_const: tbl.default_action_const,
                    action_data: self.action_data(ar)?,
                    action_entry_const: tbl.default_action_const,
                })
            }
            None => None,
        };
        let mut entries = Vec::new();
        let explicit = tbl.entries.iter().any(|e| e.priority.is_some());
        let max_prio = tbl
            .entries
            .iter()
            .filter_map(|e| e.priority)
            .max()
            .unwrap_or(0);
        let mut last = 0u64;
        for (i, en) in tbl.entries.iter().enumerate() {
            let mut match_key = Vec::new();
            for ((kexpr, key), w) in en.keys.iter().zip(&keys).zip(&widths) {
                match_key.push(entry_key(key.match_type, kexpr, *w)?);
            }
            let (_, aid) = self.table_action(en.action.action, en.action.span)?;
            let priority = if explicit {
                let pr = en.priority.unwrap_or(last + 1);
                last = pr;
                Some((max_prio.max(pr) + 1 - pr) as i64)
            } else {
                // p4c's `@priority(N)` on an entry is bmv2's priority as written (the smallest
                // wins); the others keep their position.
                Some(priority_annotation(&en.annotations).unwrap_or(i as i64 + 1))
            };
            entries.push(j::ConstEntry {
                match_key,
                action_entry: j::ActionEntry {
                    action_id: aid,
                    action_data: self.action_data(&en.action)?,
                },
                priority,
            });
        }
        let mut next_tables = BTreeMap::new();
        let base_default_next = match &succ {
            Succ::Plain(k) => {
                for a in &actions {
                    next_tables.insert(a.clone(), k.clone());
                }
                k.clone()
            }
            Succ::HitMiss(h, m) => {
                next_tables.insert("__HIT__".into(), h.clone());
                next_tables.insert("__MISS__".into(), m.clone());
                m.clone()
            }
            Succ::PerAction(map, default) => {
                for (d, n) in &by_decl {
                    next_tables.insert(n.clone(), map.get(d).cloned().unwrap_or(default.clone()));
                }
                default.clone()
            }
        };
        let mut table = j::Table {
            name: name.clone(),
            id: self.table_id(),
            key: keys,
            match_type,
            kind: j::TableType::Simple,
            action_profile: None,
            act_prof_name: None,
            selector: None,
            max_size: tbl.size.unwrap_or(1024) as u32,
            with_counters: false,
            support_timeout: false,
            direct_meters: None,
            action_ids,
            actions,
            base_default_next,
            next_tables,
            default_entry,
            entries,
            source_info: None,
        };
        for prop in &tbl.props {
            self.table_prop(&mut table, prop, &selector_input)?;
        }
        crate::p4info::table(self, t, &name, &table);
        self.pipe.tables.push(table);
        self.action_node(pre, Some(name))
    }

    fn no_action(&self, span: Span) -> Option<ActionRef> {
        let p = self.p;
        p.top
            .iter()
            .find(|d| {
                p.decl(**d).name == "NoAction"
                    && matches!(p.decl(**d).kind, DeclKind::Action { .. })
            })
            .map(|d| ActionRef {
                annotations: vec![],
                action: *d,
                args: vec![],
                span,
            })
    }

    /// Action data of a default action or entry: its directionless arguments.
    fn action_data(&self, ar: &ActionRef) -> R<Vec<j::HexStr>> {
        let DeclKind::Action { params, .. } = &self.p.decl(ar.action).kind else {
            return Ok(vec![]);
        };
        let mut out = Vec::new();
        for (prm, a) in params.iter().zip(&ar.args) {
            if prm.dir.is_some() {
                continue;
            }
            let Some(a) = a else {
                return unsupported(ar.span, "an omitted action argument");
            };
            let Some(v) = const_int(a) else {
                return unsupported(a.span, "action data that is not a constant");
            };
            let w = self
                .p
                .width_of(&crate::expr::repr(self, &prm.ty))
                .unwrap_or(1) as u32;
            let Tv::Hexstr(h) = hex(&unsigned(&v, w)) else {
                unreachable!("hex makes a hexstr")
            };
            out.push(h);
        }
        Ok(out)
    }

    /// A table key's target: a field, a field with a mask (slices), `$valid$` (isValid), or a
    /// temporary computed before the table.
    fn key_target(&mut self, pre: &mut Body, e: &Expr) -> R<(j::KeyTarget, Option<j::HexStr>)> {
        if let ExprKind::Call(c) = &e.kind {
            if let CallTarget::Builtin(recv, p4_sema::ir::Builtin::IsValid) = &c.target {
                if let Ok(Place::Header { name, .. }) = self.place(pre, recv) {
                    return Ok((
                        j::KeyTarget::Field(j::FieldRef(name, "$valid$".into())),
                        None,
                    ));
                }
            }
        }
        if matches!(
            e.kind,
            ExprKind::Ref(_) | ExprKind::Field(..) | ExprKind::Index(..)
        ) {
            if let Ok(Place::Scalar { h, f, ty }) = self.place(pre, e) {
                if ty != Type::Bool {
                    return Ok((j::KeyTarget::Field(j::FieldRef(h, f)), None));
                }
            }
        }
        let tmp = self.scalar("key", &crate::expr::repr(self, &e.ty), e.span)?;
        self.assign_expr(pre, &tmp, e)?;
        let Place::Scalar { h, f, .. } = tmp else {
            return unsupported(e.span, "this key");
        };
        Ok((j::KeyTarget::Field(j::FieldRef(h, f)), None))
    }

    fn table_prop(
        &mut self,
        table: &mut j::Table,
        prop: &p4_sema::ir::TableProp,
        selector_input: &[Tv],
    ) -> R<()> {
        let inst = match &prop.value.kind {
            ExprKind::Ref(d) => match self.frame.env.get(d) {
                Some(Bind::Named(n)) => Some((n.clone(), *d)),
                _ => Some((self.cp_name("", *d), *d)),
            },
            _ => None,
        };
        match prop.name.as_str() {
            "implementation" => {
                // A declared instance, or one constructed in the property (p4c names that one
                // by the property's `@name`; without one we use the table's name).
                let (n, annos, in_place, tid, args) = match (inst, &prop.value.kind) {
                    (Some((n, d)), _) => match &self.p.decl(d).kind {
                        DeclKind::Instance {
                            ty: Type::Extern(tid, _),
                            args,
                            ..
                        } => (n, &self.p.decl(d).annotations, false, *tid, args),
                        _ => return unsupported(prop.span, "this implementation"),
                    },
                    (None, ExprKind::Call(c)) => match &c.target {
                        CallTarget::Construct(Type::Extern(tid, _)) => {
                            let n = crate::p4info::in_place_name(prop, &table.name);
                            (n, &prop.annotations, true, *tid, &c.args)
                        }
                        _ => return unsupported(prop.span, "this implementation"),
                    },
                    _ => return unsupported(prop.span, "this implementation"),
                };
                let tname = self.p.ty(tid).name.clone();
                let size_arg = if tname == "action_selector" { 1 } else { 0 };
                let size = args
                    .get(size_arg)
                    .and_then(|a| a.as_ref())
                    .and_then(const_int)
                    .and_then(|v| u32::try_from(v).ok())
                    .unwrap_or(0);
                let selector = if tname == "action_selector" {
                    let algo = match args.first() {
                        Some(Some(a)) => self.enum_member(a)?,
                        _ => return unsupported(prop.span, "an action selector without algorithm"),
                    };
                    Some(j::Selector {
                        algo,
                        input: selector_input.to_vec(),
                    })
                } else {
                    None
                };
                table.kind = if selector.is_some() {
                    j::TableType::IndirectWs
                } else {
                    j::TableType::Indirect
                };
                table.action_profile = Some(n.clone());
                // Indirect tables have no default entry data of their own in bmv2.
                if !self.pipe.action_profiles.iter().any(|a| a.name == n) {
                    let id = self
                        .json
                        .pipelines
                        .iter()
                        .map(|p| p.action_profiles.len())
                        .sum::<usize>()
                        + self.pipe.action_profiles.len();
                    self.pipe.action_profiles.push(j::ActionProfile {
                        name: n.clone(),
                        id: id as i64,
                        max_size: size,
                        selector: selector.clone(),
                    });
                    let annos = annos.clone();
                    crate::p4info::profile(self, &n, &annos, in_place, selector.is_some(), size);
                }
            }
            "counters" => {
                let Some((n, d)) = inst else {
                    return unsupported(prop.span, "a counter constructed in the table");
                };
                table.with_counters = true;
                let id = self.json.counter_arrays.len() as i64;
                self.json.counter_arrays.push(j::CounterArray {
                    name: n.clone(),
                    id,
                    size: table.max_size,
                    is_direct: true,
                    binding: Some(table.name.clone()),
                });
                crate::p4info::direct(self, &n, d, &table.name, false);
            }
            "meters" => {
                let Some((n, d)) = inst else {
                    return unsupported(prop.span, "a meter constructed in the table");
                };
                table.direct_meters = Some(n.clone());
                let unit = match &self.p.decl(d).kind {
                    DeclKind::Instance { args, .. } => match args.first() {
                        Some(Some(a)) => self.enum_member(a)?,
                        _ => String::new(),
                    },
                    _ => String::new(),
                };
                let id = self.json.meter_arrays.len() as i64;
                self.json.meter_arrays.push(j::MeterArray {
                    name: n.clone(),
                    id,
                    kind: if unit == "bytes" {
                        j::MeterType::Bytes
                    } else {
                        j::MeterType::Packets
                    },
                    rate_count: 2,
                    size: table.max_size,
                    is_direct: true,
                    binding: Some(table.name.clone()),
                    result_target: None,
                });
                crate::p4info::direct(self, &n, d, &table.name, true);
            }
            "support_timeout" => {
                table.support_timeout = matches!(
                    prop.value.kind,
                    ExprKind::Const(p4_sema::ir::Value::Bool(true))
                );
            }
            _ => {}
        }
        Ok(())
    }

    /// Direct meters learn where their color goes from the `read` calls in actions.
    pub fn finish_meters(&mut self) {
        for m in &mut self.json.meter_arrays {
            if m.is_direct {
                m.result_target = self.meter_targets.get(&m.name).cloned();
            }
        }
    }

    #[allow(dead_code)]
    fn frame(&self) -> &Frame {
        &self.frame
    }
}

/// The arguments of an action reference that bind directional parameters (tables list only
/// those; defaults and entries give all).
/// bmv2's table-level match type: range, else ternary, else lpm, else exact.
fn table_match_type(keys: &[j::TableKey]) -> j::MatchType {
    use j::MatchType as M;
    let has = |m: M| keys.iter().any(|k| k.match_type == m);
    if has(M::Range) {
        M::Range
    } else if has(M::Ternary) || has(M::Optional) {
        M::Ternary
    } else if has(M::Lpm) {
        M::Lpm
    } else {
        M::Exact
    }
}

fn hexstr(v: &BigInt, w: u32) -> j::HexStr {
    match hex(&unsigned(v, w)) {
        Tv::Hexstr(h) => h,
        _ => j::HexStr::default(),
    }
}

/// One key of a const entry.
fn entry_key(mt: j::MatchType, e: &Expr, w: u32) -> R<j::EntryKey> {
    use j::MatchType as M;
    let mut k = j::EntryKey {
        match_type: mt,
        key: None,
        mask: None,
        prefix_length: None,
        start: None,
        end: None,
    };
    let full = mask(w);
    let (value, m): (BigInt, BigInt) = match &e.kind {
        ExprKind::DontCare | ExprKind::Default => (BigInt::from(0), BigInt::from(0)),
        ExprKind::Binary(BinOp::Mask, v, m) => match (const_int(v), const_int(m)) {
            (Some(v), Some(m)) => (v, m),
            _ => return unsupported(e.span, "a mask that is not constant"),
        },
        ExprKind::Binary(BinOp::Range, lo, hi) => match (const_int(lo), const_int(hi)) {
            (Some(lo), Some(hi)) => {
                if mt != M::Range {
                    return unsupported(e.span, "a range on a key that is not `range`");
                }
                k.start = Some(hexstr(&lo, w));
                k.end = Some(hexstr(&hi, w));
                return Ok(k);
            }
            _ => return unsupported(e.span, "a range that is not constant"),
        },
        _ => match const_int(e) {
            Some(v) => (v, full.clone()),
            None => return unsupported(e.span, "an entry key that is not constant"),
        },
    };
    match mt {
        M::Exact | M::Valid => k.key = Some(j::EntryKeyValue::Hex(hexstr(&value, w))),
        M::Lpm => {
            k.key = Some(j::EntryKeyValue::Hex(hexstr(&(&value & &m), w)));
            k.prefix_length = Some(m.to_biguint().map_or(0, |u| u.count_ones()) as u32);
        }
        M::Ternary | M::Optional => {
            k.match_type = M::Ternary;
            k.key = Some(j::EntryKeyValue::Hex(hexstr(&(&value & &m), w)));
            k.mask = Some(hexstr(&m, w));
        }
        M::Range => {
            if m == BigInt::from(0) {
                k.start = Some(hexstr(&BigInt::from(0), w));
                k.end = Some(hexstr(&full, w));
            } else {
                k.start = Some(hexstr(&value, w));
                k.end = Some(hexstr(&value, w));
            }
        }
    }
    Ok(k)
}

/// `@priority(N)` of a const entry.
fn priority_annotation(annotations: &[p4_syntax::ast::Annotation]) -> Option<i64> {
    use num_traits::ToPrimitive;
    use p4_syntax::ast::{find_annotation, AnnotationBody, ExprKind};
    let a = find_annotation(annotations, "priority")?;
    let AnnotationBody::Exprs(es) = &a.body else {
        return None;
    };
    match &es.first()?.kind {
        ExprKind::Int { value, .. } => value.to_i64(),
        _ => None,
    }
}
