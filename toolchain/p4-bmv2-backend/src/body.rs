//! Straight-line code to BMv2 primitives: statements of actions, of code between tables in
//! apply blocks, and of parser states.
//!
//! `p4-midend` has inlined action and function calls (with copy-in/copy-out), turned `return`
//! into a flag and given every action a table invokes its own copy without directional
//! parameters, so what is left here are assignments, `if` (as `_jump_if_zero`), loops (a
//! `_jump_if_zero` test, the body, the update and a `_jump` back, as p4c writes them), `exit`
//! (bmv2's `exit`, after the copy-outs of the sub-controls being inlined) and extern calls
//! (v1model externs as bmv2 primitives).

use crate::expr::{b2d, dyn_header, op, repr, value_tv};
use crate::layout::{header_fields, header_member, Place};
use crate::num::{hex, hex_u, mask, unsigned};
use crate::prims::{Body, LoopLabels};
use crate::{unsupported, Bind, Ctx, R};
use p4_bmv2_json as j;
use p4_bmv2_json::Tv;
use p4_sema::ir::{
    Builtin, Call, CallTarget, DeclId, DeclKind, Expr, ExprKind, Stmt, StmtKind, Type,
    TypeDeclKind, Value,
};
use p4_syntax::ast::Direction;
use p4_syntax::Span;

impl Ctx<'_> {
    /// Lowers `stmts` into `b`. A statement the lowering refuses is reported and the next one
    /// lowered, so that every refusal is reported (the program is refused as a whole).
    pub fn stmts(&mut self, b: &mut Body, stmts: &[Stmt]) -> R<()> {
        for s in stmts {
            if let Err(u) = self.stmt(b, s) {
                self.errors.push(u);
            }
        }
        Ok(())
    }

    pub fn stmt(&mut self, b: &mut Body, s: &Stmt) -> R<()> {
        b.at.get_or_insert(s.span);
        match &s.kind {
            StmtKind::Assign(l, r) => {
                let pl = self.place(b, l)?;
                self.assign_expr(b, &pl, r)
            }
            StmtKind::Call(e) => match &e.kind {
                ExprKind::Call(c) => self.call(b, c, e).map(|_| ()),
                _ => unsupported(e.span, "this statement"),
            },
            StmtKind::If(c, t, el) => {
                if b.parser {
                    return unsupported(s.span, "`if` in a parser state");
                }
                let cv = self.rv(b, c)?;
                let else_l = b.new_label();
                b.jump_if_zero(b2d(cv), else_l);
                self.stmt(b, t)?;
                match el {
                    Some(el) => {
                        let end = b.new_label();
                        b.jump(end);
                        b.place_label(else_l);
                        self.stmt(b, el)?;
                        b.place_label(end);
                    }
                    None => b.place_label(else_l),
                }
                Ok(())
            }
            StmtKind::Block(bl) => self.stmts(b, &bl.stmts),
            StmtKind::Exit => {
                if b.parser {
                    return unsupported(s.span, "`exit` in a parser");
                }
                b.push("exit", vec![]);
                Ok(())
            }
            // `p4-midend` turns a `return` in an action or inlined function into a flag.
            StmtKind::Return(_) => unsupported(s.span, "`return` here"),
            // `p4-midend`'s `inline` turns a `switch` in an action or function into `if`s.
            StmtKind::Switch(..) => unsupported(s.span, "`switch` here"),
            StmtKind::Empty | StmtKind::Const(_) => Ok(()),
            StmtKind::For(l) => {
                if b.parser {
                    return unsupported(s.span, "a loop in a parser state");
                }
                // p4c's layout: init, test, body, update, jump back to the test.
                self.stmts(b, &l.init)?;
                let test = b.new_label();
                let labels = LoopLabels {
                    next: b.new_label(),
                    end: b.new_label(),
                };
                b.place_label(test);
                if !matches!(l.cond.kind, ExprKind::Const(Value::Bool(true))) {
                    let cv = self.rv(b, &l.cond)?;
                    b.jump_if_zero(b2d(cv), labels.end);
                }
                b.loops.push(labels);
                self.stmt(b, &l.body)?;
                b.loops.pop();
                b.place_label(labels.next);
                self.stmts(b, &l.update)?;
                b.jump(test);
                b.place_label(labels.end);
                Ok(())
            }
            StmtKind::Break | StmtKind::Continue => {
                let Some(labels) = b.loops.last().copied() else {
                    return unsupported(s.span, "`break` or `continue` outside a loop");
                };
                let to = match s.kind {
                    StmtKind::Break => labels.end,
                    _ => labels.next,
                };
                b.jump(to);
                Ok(())
            }
            StmtKind::Var(d) => {
                // A control's locals are bound before its statements are lowered (back to
                // front, `lower_block`), so later statements already name that place.
                let pl = match self.frame.env.get(d) {
                    Some(Bind::Place(pl)) => pl.clone(),
                    _ => {
                        let pl = self.local_place(*d)?;
                        self.frame.env.insert(*d, Bind::Place(pl.clone()));
                        pl
                    }
                };
                if let DeclKind::Var {
                    init: Some(init), ..
                } = &self.p.decl(*d).kind
                {
                    self.assign_expr(b, &pl, init)?;
                }
                Ok(())
            }
        }
    }

    /// `dst = rhs` for any type.
    pub fn assign_expr(&mut self, b: &mut Body, dst: &Place, rhs: &Expr) -> R<()> {
        match dst {
            // A varbit is copied from another varbit's place (`assign_VL`): bmv2 has no
            // expressions of variable width.
            Place::Scalar {
                ty: Type::Varbit(_),
                ..
            } => {
                let src = self.place(b, rhs)?;
                self.copy(b, dst, &src, rhs.span)
            }
            Place::Scalar { .. }
            | Place::Slice(..)
            | Place::LastField { .. }
            | Place::DynField { .. } => {
                let v = self.rv(b, rhs)?;
                self.assign_tv(b, dst, v, rhs.span)
            }
            _ => match &rhs.kind {
                ExprKind::Tuple(items) => {
                    if let Place::Header { name, .. } = dst {
                        b.push("add_header", vec![Tv::Header(name.clone())]);
                    }
                    for (i, item) in items.iter().enumerate() {
                        let fp = self.member(dst, i, rhs.span)?;
                        self.assign_expr(b, &fp, item)?;
                    }
                    Ok(())
                }
                ExprKind::Const(Value::Tuple(vals)) => {
                    if let Place::Header { name, .. } = dst {
                        b.push("add_header", vec![Tv::Header(name.clone())]);
                    }
                    for (i, v) in vals.iter().enumerate() {
                        let fp = self.member(dst, i, rhs.span)?;
                        if let Value::Tuple(_) = v {
                            // A nested struct or header value.
                            let inner = Expr {
                                kind: ExprKind::Const(v.clone()),
                                ty: rhs.ty.clone(),
                                span: rhs.span,
                            };
                            self.assign_expr(b, &fp, &inner)?;
                            continue;
                        }
                        let tv = value_tv(v, rhs.span)?;
                        self.assign_tv(b, &fp, tv, rhs.span)?;
                    }
                    Ok(())
                }
                _ if crate::expr::is_lookahead(self, rhs) => {
                    let mut offset = 0;
                    self.lookahead_into(b, dst, &mut offset, rhs.span)
                }
                _ => {
                    let src = self.place(b, rhs)?;
                    self.copy(b, dst, &src, rhs.span)
                }
            },
        }
    }

    /// `dst = pkt.lookahead<T>()` for a header, struct or stack: each scalar from its bits
    /// ahead, starting `offset` bits on, in field order (headers made valid first).
    fn lookahead_into(&mut self, b: &mut Body, dst: &Place, offset: &mut i64, span: Span) -> R<()> {
        match dst {
            Place::Header { name, ty } => {
                b.push("add_header", vec![Tv::Header(name.clone())]);
                for (f, fty) in header_fields(self.p, *ty) {
                    let Some(w) = self.p.width_of(&repr(self, &fty)) else {
                        return unsupported(span, "lookahead of a header with varbit fields");
                    };
                    let la = Tv::Lookahead {
                        offset: *offset,
                        bitwidth: w as u32,
                    };
                    b.push("assign", vec![Tv::Field(j::FieldRef(name.clone(), f)), la]);
                    *offset += w as i64;
                }
                Ok(())
            }
            Place::Struct { fields } => {
                for f in fields {
                    self.lookahead_into(b, f, offset, span)?;
                }
                Ok(())
            }
            Place::Stack { name, elem, size } => {
                for i in 0..*size {
                    let h = Place::Header {
                        name: format!("{name}[{i}]"),
                        ty: *elem,
                    };
                    self.lookahead_into(b, &h, offset, span)?;
                }
                Ok(())
            }
            Place::Scalar { ty, .. } => {
                let Some(w) = self.p.width_of(&repr(self, ty)) else {
                    return unsupported(span, "lookahead into this value");
                };
                let la = Tv::Lookahead {
                    offset: *offset,
                    bitwidth: w as u32,
                };
                *offset += w as i64;
                self.assign_tv(b, dst, la, span)
            }
            _ => unsupported(span, "lookahead into this value"),
        }
    }

    /// The `log_msg` format of a header or struct value, `(f1:{},f2:{})` (nested ones in
    /// parentheses too), with its fields' values appended to `vs`.
    fn log_fields(&mut self, pl: &Place, ty: &Type, vs: &mut Vec<Tv>, span: Span) -> R<String> {
        let Some(fields) = self.p.fields(ty) else {
            let v = self.read(pl, span)?;
            vs.push(if *ty == Type::Bool { b2d(v) } else { v });
            return Ok("{}".into());
        };
        let mut parts = Vec::new();
        for (i, f) in fields.iter().enumerate() {
            let member = self.member(pl, i, span)?;
            parts.push(format!(
                "{}:{}",
                f.name,
                self.log_fields(&member, &f.ty, vs, span)?
            ));
        }
        Ok(format!("({})", parts.join(",")))
    }

    /// Field `i` of a struct or header place.
    fn member(&self, pl: &Place, i: usize, span: Span) -> R<Place> {
        match pl {
            Place::Struct { fields, .. } => fields
                .get(i)
                .cloned()
                .ok_or(())
                .or_else(|_| unsupported(span, "a struct field")),
            Place::Header { name, ty } => {
                let leaf = |_, f, ty| Place::Scalar {
                    h: name.clone(),
                    f,
                    ty,
                };
                match header_member(self.p, *ty, i, leaf) {
                    Some(pl) => Ok(pl),
                    None => unsupported(span, "a header field"),
                }
            }
            _ => unsupported(span, "a list assigned to this value"),
        }
    }

    /// `f` on the element of a stack chosen at run time (`s[i]`): one guarded call per
    /// element, as p4c's `HSIndexSimplifier` expands it (an index out of range does nothing).
    pub(crate) fn per_element(
        &mut self,
        b: &mut Body,
        dynamic: &Place,
        span: Span,
        mut f: impl FnMut(&mut Self, &mut Body, Place) -> R<()>,
    ) -> R<()> {
        let Place::DynHeader { stack, elem, index } = dynamic else {
            return unsupported(span, "this stack element");
        };
        if b.parser {
            return unsupported(span, "a stack element chosen at run time, in a parser");
        }
        let size = self
            .json
            .header_stacks
            .iter()
            .find(|s| &s.name == stack)
            .and_then(|s| s.size)
            .unwrap_or(0);
        let end = b.new_label();
        for k in 0..size {
            let next = b.new_label();
            b.jump_if_zero(b2d(op("==", index.clone(), hex_u(k.into()))), next);
            let element = Place::Header {
                name: format!("{stack}[{k}]"),
                ty: *elem,
            };
            f(self, b, element)?;
            b.jump(end);
            b.place_label(next);
        }
        b.place_label(end);
        Ok(())
    }

    /// `dst = src` between places of the same type.
    pub fn copy(&mut self, b: &mut Body, dst: &Place, src: &Place, span: Span) -> R<()> {
        match (dst, src) {
            (Place::DynHeader { .. }, _) => {
                self.per_element(b, dst, span, |cx, b, d| cx.copy(b, &d, src, span))
            }
            (Place::Header { .. }, Place::DynHeader { .. }) => {
                self.per_element(b, src, span, |cx, b, s| cx.copy(b, dst, &s, span))
            }
            (Place::Header { name, ty }, Place::StackLast { name: stack, .. }) => {
                // `.last` is valid wherever it may be read: the header becomes valid with its
                // fields (a parser can take no branch to pick the element).
                b.push("add_header", vec![Tv::Header(name.clone())]);
                for (f, fty) in header_fields(self.p, *ty) {
                    let last = Place::LastField {
                        stack: stack.clone(),
                        f: f.clone(),
                        ty: fty.clone(),
                    };
                    let v = self.read(&last, span)?;
                    let to = Place::Scalar {
                        h: name.clone(),
                        f,
                        ty: fty,
                    };
                    self.assign_tv(b, &to, v, span)?;
                }
                Ok(())
            }
            (Place::Header { name: d, .. }, Place::Header { name: s, .. }) => {
                b.push(
                    "assign_header",
                    vec![Tv::Header(d.clone()), Tv::Header(s.clone())],
                );
                Ok(())
            }
            (Place::Stack { name: d, .. }, Place::Stack { name: s, .. }) => {
                b.push(
                    "assign_header_stack",
                    vec![Tv::HeaderStack(d.clone()), Tv::HeaderStack(s.clone())],
                );
                Ok(())
            }
            (
                Place::UnionStack {
                    name: d,
                    elem,
                    size,
                },
                Place::UnionStack { name: s, .. },
            ) => {
                for k in 0..*size {
                    let element = |name: &String| Place::Union {
                        name: format!("{name}[{k}]"),
                        ty: *elem,
                    };
                    self.copy(b, &element(d), &element(s), span)?;
                }
                Ok(())
            }
            (Place::Union { name: d, .. }, Place::Union { name: s, .. }) => {
                b.push(
                    "assign_union",
                    vec![Tv::HeaderUnion(d.clone()), Tv::HeaderUnion(s.clone())],
                );
                Ok(())
            }
            (Place::Struct { fields: d, .. }, Place::Struct { fields: s, .. }) => {
                for (d, s) in d.iter().zip(s) {
                    self.copy(b, d, s, span)?;
                }
                Ok(())
            }
            (
                Place::Scalar {
                    h,
                    f,
                    ty: Type::Varbit(_),
                },
                Place::Scalar { h: sh, f: sf, .. },
            ) => {
                b.push(
                    "assign_VL",
                    vec![
                        Tv::Field(j::FieldRef(h.clone(), f.clone())),
                        Tv::Field(j::FieldRef(sh.clone(), sf.clone())),
                    ],
                );
                Ok(())
            }
            _ => {
                let v = self.read(src, span)?;
                self.assign_tv(b, dst, v, span)
            }
        }
    }

    /// Stores a number (or a boolean into a `bool` field).
    pub fn assign_tv(&mut self, b: &mut Body, dst: &Place, v: Tv, span: Span) -> R<()> {
        match dst {
            Place::Scalar { h, f, ty } => {
                if matches!(ty, Type::Varbit(_)) {
                    return unsupported(span, "assigning a computed value to a varbit field");
                }
                let v = if *ty == Type::Bool { b2d(v) } else { v };
                b.push(
                    "assign",
                    vec![Tv::Field(j::FieldRef(h.clone(), f.clone())), v],
                );
                Ok(())
            }
            Place::DynField { tv, ty } => {
                let v = if *ty == Type::Bool { b2d(v) } else { v };
                b.push("assign", vec![tv.clone(), v]);
                Ok(())
            }
            Place::Slice(base, hi, lo) => {
                let Place::Scalar { ty, .. } = &**base else {
                    return unsupported(span, "a slice of this value");
                };
                let Some(w) = self.p.width_of(ty) else {
                    return unsupported(span, "a slice of this type");
                };
                let field_mask = mask(hi - lo + 1) << *lo;
                let keep = mask(w as u32) ^ &field_mask;
                let cur = self.read(base, span)?;
                let new = op(
                    "|",
                    op("&", cur, hex(&keep)),
                    op("&", op("<<", v, hex_u(u64::from(*lo))), hex(&field_mask)),
                );
                self.assign_tv(b, base, new, span)
            }
            _ => unsupported(span, "assigning to this value"),
        }
    }

    /// Lowers a call; returns its value for calls that have one.
    pub fn call(&mut self, b: &mut Body, c: &Call, e: &Expr) -> R<Option<Tv>> {
        match &c.target {
            // `p4-midend` inlines every action and function call it can.
            CallTarget::Action(_) | CallTarget::Function(_) => unsupported(
                e.span,
                "this call (the midend leaves it: see p4-midend's README)",
            ),
            CallTarget::ExternFunction(d) => {
                let name = self.p.decl(*d).name.clone();
                self.extern_fn(b, &name, c, e).map(|_| None)
            }
            CallTarget::Method {
                receiver,
                extern_ty,
                index,
            } => {
                let tdecl = self.p.ty(*extern_ty);
                let TypeDeclKind::Extern { methods, .. } = &tdecl.kind else {
                    return unsupported(e.span, "a method of this type");
                };
                let mname = methods
                    .get(*index)
                    .map(|m| m.name.clone())
                    .unwrap_or_default();
                let tname = tdecl.name.clone();
                self.method(b, receiver, &tname, &mname, c, e)
            }
            CallTarget::Builtin(recv, bi) => {
                let pl = self.place(b, recv)?;
                match (bi, &pl) {
                    (Builtin::SetValid, Place::Header { name, .. }) => {
                        b.push("add_header", vec![Tv::Header(name.clone())])
                    }
                    (Builtin::SetInvalid, Place::Header { name, .. }) => {
                        b.push("remove_header", vec![Tv::Header(name.clone())])
                    }
                    // bmv2 takes a header-valued expression here, as p4c writes it.
                    (
                        Builtin::SetValid | Builtin::SetInvalid,
                        Place::DynHeader { stack, index, .. },
                    ) => {
                        let o = if *bi == Builtin::SetValid {
                            "add_header"
                        } else {
                            "remove_header"
                        };
                        b.push(o, vec![dyn_header(stack.clone(), index.clone())]);
                    }
                    (Builtin::PushFront | Builtin::PopFront, Place::Stack { name, .. }) => {
                        let n = match c.args.first() {
                            Some(Some(a)) => self.rv(b, a)?,
                            _ => hex_u(1),
                        };
                        let o = if *bi == Builtin::PushFront {
                            "push"
                        } else {
                            "pop"
                        };
                        b.push(o, vec![Tv::HeaderStack(name.clone()), n]);
                    }
                    (Builtin::IsValid, _) => {
                        let v = self.rv(b, e)?;
                        return Ok(Some(v));
                    }
                    _ => return unsupported(e.span, "this operation on this value"),
                }
                Ok(None)
            }
            CallTarget::Apply(_) => {
                unsupported(e.span, "apply() inside an action, function or expression")
            }
            CallTarget::Construct(_) => unsupported(e.span, "a constructor call here"),
        }
    }

    /// A field reference for an `out` argument of a primitive (a temporary when the argument
    /// is not a plain field; copied back by the caller through `finish_out`).
    fn out_field(&mut self, b: &mut Body, a: &Expr) -> R<(Tv, Option<(Place, Place)>)> {
        let pl = self.place(b, a)?;
        match &pl {
            Place::Scalar { h, f, ty } if *ty != Type::Bool => {
                Ok((Tv::Field(j::FieldRef(h.clone(), f.clone())), None))
            }
            _ => {
                let tmp = self.scalar("tmp", &repr(self, &a.ty), a.span)?;
                let Place::Scalar { h, f, .. } = &tmp else {
                    return unsupported(a.span, "this out argument");
                };
                let tv = Tv::Field(j::FieldRef(h.clone(), f.clone()));
                Ok((tv, Some((pl, tmp))))
            }
        }
    }

    fn finish_out(&mut self, b: &mut Body, back: Option<(Place, Place)>, span: Span) -> R<()> {
        if let Some((dst, tmp)) = back {
            let v = self.read(&tmp, span)?;
            let v = match &dst {
                Place::Scalar { ty: Type::Bool, .. } => crate::expr::un("d2b", v),
                _ => v,
            };
            self.assign_tv(b, &dst, v, span)?;
        }
        Ok(())
    }

    fn arg<'a>(&self, c: &'a Call, i: usize, e: &Expr) -> R<&'a Expr> {
        match c.args.get(i) {
            Some(Some(a)) => Ok(a),
            _ => unsupported(e.span, "a call with an omitted argument"),
        }
    }

    /// The name of a enum member constant (`HashAlgorithm.crc16` → `crc16`).
    pub fn enum_member(&self, e: &Expr) -> R<String> {
        if let ExprKind::Const(Value::EnumMember(t, i)) = &e.kind {
            if let TypeDeclKind::Enum(members) = &self.p.ty(*t).kind {
                if let Some(m) = members.get(*i) {
                    return Ok(m.clone());
                }
            }
        }
        unsupported(e.span, "an enum argument that is not a constant")
    }

    fn extern_fn(&mut self, b: &mut Body, name: &str, c: &Call, e: &Expr) -> R<()> {
        match name {
            "mark_to_drop" => b.push("mark_to_drop", vec![Tv::Header("standard_metadata".into())]),
            "hash" => {
                let algo = self.enum_member(self.arg(c, 1, e)?)?;
                let calc = self.calculation(Some(b), &algo, self.arg(c, 3, e)?, false)?;
                let base = self.rv(b, self.arg(c, 2, e)?)?;
                let max = self.rv(b, self.arg(c, 4, e)?)?;
                let (dst, back) = self.out_field(b, self.arg(c, 0, e)?)?;
                b.push(
                    "modify_field_with_hash_based_offset",
                    vec![dst, base, Tv::Calculation(calc), max],
                );
                self.finish_out(b, back, e.span)?;
            }
            "random" => {
                let lo = self.rv(b, self.arg(c, 1, e)?)?;
                let hi = self.rv(b, self.arg(c, 2, e)?)?;
                let (dst, back) = self.out_field(b, self.arg(c, 0, e)?)?;
                b.push("modify_field_rng_uniform", vec![dst, lo, hi]);
                self.finish_out(b, back, e.span)?;
            }
            "clone" | "clone3" | "clone_preserving_field_list" => {
                let kind = self.enum_member(self.arg(c, 0, e)?)?;
                let session = self.rv(b, self.arg(c, 1, e)?)?;
                let fl = if name == "clone_preserving_field_list" {
                    self.field_list(self.arg(c, 2, e)?)?
                } else if name == "clone3" {
                    self.data_field_list(b, self.arg(c, 2, e)?)?
                } else {
                    0
                };
                let o = if kind == "I2E" {
                    "clone_ingress_pkt_to_egress"
                } else {
                    "clone_egress_pkt_to_egress"
                };
                b.push(o, vec![session, hex_u(fl as u64)]);
            }
            "resubmit" | "recirculate" => {
                let fl = self.data_field_list(b, self.arg(c, 0, e)?)?;
                b.push(name, vec![hex_u(fl as u64)]);
            }
            "resubmit_preserving_field_list" | "recirculate_preserving_field_list" => {
                let fl = self.field_list(self.arg(c, 0, e)?)?;
                let o = if name.starts_with("resubmit") {
                    "resubmit"
                } else {
                    "recirculate"
                };
                b.push(o, vec![hex_u(fl as u64)]);
            }
            "digest" => {
                let receiver = self.rv(b, self.arg(c, 0, e)?)?;
                let data = self.arg(c, 1, e)?;
                let id = self.learn_list(b, c, data)?;
                b.push("generate_digest", vec![receiver, hex_u(id as u64)]);
            }
            "truncate" => {
                let n = self.rv(b, self.arg(c, 0, e)?)?;
                b.push("truncate", vec![n]);
            }
            "log_msg" => {
                let ExprKind::Const(Value::Str(fmt)) = &self.arg(c, 0, e)?.kind else {
                    return unsupported(e.span, "log_msg with a format that is not a string");
                };
                let mut params = vec![Tv::String(fmt.clone())];
                if let Some(Some(data)) = c.args.get(1) {
                    let items = list_items(data);
                    // A header or struct prints as `(f1:{},f2:{})` in place of its `{}`, its
                    // fields as the values, as p4c expands it.
                    let mut vs = Vec::new();
                    let mut parts = fmt.split("{}");
                    let mut text = parts.next().unwrap_or_default().to_string();
                    for it in &items {
                        if matches!(it.ty, Type::Header(_) | Type::Struct(_)) {
                            let pl = self.place(b, it)?;
                            text += &self.log_fields(&pl, &it.ty, &mut vs, it.span)?;
                        } else {
                            let v = self.rv(b, it)?;
                            vs.push(if it.ty == Type::Bool { b2d(v) } else { v });
                            text += "{}";
                        }
                        match parts.next() {
                            Some(rest) => text += rest,
                            None => break,
                        }
                    }
                    for rest in parts {
                        text += "{}";
                        text += rest;
                    }
                    params[0] = Tv::String(text);
                    params.push(Tv::ParametersVector(vs));
                }
                b.push("log_msg", params);
            }
            "assert" | "assume" => {
                let v = self.rv(b, self.arg(c, 0, e)?)?;
                b.push(name, vec![v]);
            }
            "verify" if b.parser => {
                let v = self.rv(b, self.arg(c, 0, e)?)?;
                let err = self.rv(b, self.arg(c, 1, e)?)?;
                b.push("verify", vec![v, err]);
            }
            "verify_checksum"
            | "update_checksum"
            | "verify_checksum_with_payload"
            | "update_checksum_with_payload"
            | "verify" => return unsupported(e.span, format!("the extern `{name}` here")),
            // A program's own extern function: a primitive of that name, as p4c emits it
            // (bmv2 runs it when registered with BM_REGISTER_EXTERN_FUNCTION).
            _ => {
                if e.ty != Type::Void {
                    return unsupported(e.span, "an extern function that returns a value");
                }
                let mut params = Vec::new();
                let mut backs = Vec::new();
                for (prm, a) in c.params.iter().zip(&c.args) {
                    let Some(a) = a else {
                        return unsupported(e.span, "a call with an omitted argument");
                    };
                    match prm.dir {
                        Some(dir @ (Direction::Out | Direction::InOut)) => {
                            let (tv, back) = self.out_field(b, a)?;
                            if let (Direction::InOut, Some((dst, tmp))) = (dir, &back) {
                                self.copy(b, tmp, dst, a.span)?;
                            }
                            params.push(tv);
                            backs.push(back);
                        }
                        _ => {
                            let v = self.rv(b, a)?;
                            params.push(if a.ty == Type::Bool { b2d(v) } else { v });
                        }
                    }
                }
                b.push(name, params);
                for back in backs {
                    self.finish_out(b, back, e.span)?;
                }
            }
        }
        Ok(())
    }

    /// The instance name a method receiver refers to.
    fn receiver_name(&mut self, recv: &Expr) -> R<String> {
        if let ExprKind::Ref(d) = &recv.kind {
            match self.frame.env.get(d) {
                Some(Bind::Named(n)) => return Ok(n.clone()),
                Some(_) => {}
                None => {
                    if let DeclKind::Instance { .. } = self.p.decl(*d).kind {
                        let n = self.cp_name("", *d);
                        self.declare_instance(&n, *d)?;
                        return Ok(n);
                    }
                }
            }
        }
        unsupported(recv.span, "a method call on this receiver")
    }

    fn method(
        &mut self,
        b: &mut Body,
        recv: &Expr,
        tname: &str,
        mname: &str,
        c: &Call,
        e: &Expr,
    ) -> R<Option<Tv>> {
        if tname == "packet_in" {
            if !b.parser {
                return unsupported(e.span, "packet_in methods outside a parser");
            }
            match mname {
                "extract" => {
                    let arg = self.arg(c, 0, e)?;
                    // `extract<H>(_)`: into a header nobody reads (p4c's RemoveDontcareArgs).
                    let target = if matches!(arg.kind, ExprKind::DontCare) {
                        let ty = c.type_args.first().cloned().unwrap_or(Type::Void);
                        self.fresh_place("tmp", &ty, arg.span)?
                    } else {
                        self.place(b, arg)?
                    };
                    let t = match target {
                        Place::Header { name, .. } => Tv::Regular(name),
                        Place::StackNext { name, .. } => Tv::Stack(name),
                        Place::UnionStackNextMember { stack, member } => {
                            Tv::UnionStack(stack, member)
                        }
                        _ => return unsupported(e.span, "extracting into this value"),
                    };
                    match c.args.get(1) {
                        Some(Some(len)) => {
                            let l = self.rv(b, len)?;
                            b.push("extract_VL", vec![t, l]);
                        }
                        _ => b.push("extract", vec![t]),
                    }
                    return Ok(None);
                }
                "lookahead" => {
                    let ty = c.type_args.first().cloned().unwrap_or(Type::Void);
                    return match repr(self, &ty) {
                        Type::Bit(w) => Ok(Some(Tv::Lookahead {
                            offset: 0,
                            bitwidth: w,
                        })),
                        // A struct or header looked at only for its length (the parser
                        // fails with PacketTooShort when the packet is shorter): p4c reads it
                        // into a scratch field; its value is not available here.
                        t => match self.p.width_of(&t) {
                            Some(w) if w > 0 && e.ty != Type::Void => {
                                let w = w as u32;
                                let tmp = self.fresh_place("tmp", &Type::Bit(w), e.span)?;
                                let look = Tv::Lookahead {
                                    offset: 0,
                                    bitwidth: w,
                                };
                                self.assign_tv(b, &tmp, look, e.span)?;
                                Ok(None)
                            }
                            _ => unsupported(e.span, "lookahead of a type other than bit<W>"),
                        },
                    };
                }
                "advance" => {
                    let n = self.rv(b, self.arg(c, 0, e)?)?;
                    b.push("advance", vec![n]);
                    return Ok(None);
                }
                _ => return unsupported(e.span, format!("packet_in.{mname}")),
            }
        }
        let name = self.receiver_name(recv)?;
        match (tname, mname) {
            ("register", "read") => {
                let idx = self.rv(b, self.arg(c, 1, e)?)?;
                let (dst, back) = self.out_field(b, self.arg(c, 0, e)?)?;
                b.push("register_read", vec![dst, Tv::RegisterArray(name), idx]);
                self.finish_out(b, back, e.span)?;
            }
            ("register", "write") => {
                let idx = self.rv(b, self.arg(c, 0, e)?)?;
                let a = self.arg(c, 1, e)?;
                let v = self.rv(b, a)?;
                let v = if a.ty == Type::Bool { b2d(v) } else { v };
                b.push("register_write", vec![Tv::RegisterArray(name), idx, v]);
            }
            ("counter", "count") => {
                let idx = self.rv(b, self.arg(c, 0, e)?)?;
                b.push("count", vec![Tv::CounterArray(name), idx]);
            }
            ("direct_counter", "count") => {}
            ("meter", "execute_meter") => {
                let idx = self.rv(b, self.arg(c, 0, e)?)?;
                let (dst, back) = self.out_field(b, self.arg(c, 1, e)?)?;
                b.push("execute_meter", vec![Tv::MeterArray(name), idx, dst]);
                self.finish_out(b, back, e.span)?;
            }
            ("direct_meter", "read") => {
                let pl = self.place(b, self.arg(c, 0, e)?)?;
                let Place::Scalar { h, f, .. } = pl else {
                    return unsupported(e.span, "direct_meter.read into this value");
                };
                self.meter_targets.insert(name, j::FieldRef(h, f));
            }
            _ => return unsupported(e.span, format!("{tname}.{mname}")),
        }
        Ok(None)
    }

    /// The id of the field list of `@field_list(N)` user-metadata fields (0 when none).
    fn field_list(&mut self, idx: &Expr) -> R<i64> {
        let ExprKind::Const(Value::Int(n)) = &idx.kind else {
            return unsupported(idx.span, "a field list index that is not a constant");
        };
        let n = u64::try_from(n.clone()).unwrap_or(u64::MAX);
        if let Some(id) = self.field_lists.get(&n) {
            return Ok(*id);
        }
        let mut elements = Vec::new();
        if let Some(m) = self.lay.meta_ty {
            if let Some(root) = self.lay.roots.get(&m).cloned() {
                self.collect_field_list(m, &root, n, &mut elements);
            }
        }
        let id = self.json.field_lists.len() as i64 + 1;
        self.json.field_lists.push(j::FieldList {
            name: format!("field_list{n}"),
            id,
            elements,
        });
        self.field_lists.insert(n, id);
        Ok(id)
    }

    /// The field list of the deprecated `clone3`/`resubmit`/`recirculate` data argument (a
    /// list or struct of metadata fields, p4c's `fl`): one new list per call.
    fn data_field_list(&mut self, b: &mut Body, data: &Expr) -> R<i64> {
        let items: Vec<&Expr> = match &data.kind {
            ExprKind::Tuple(items) => items.iter().collect(),
            _ => vec![data],
        };
        let mut elements = Vec::new();
        for it in items {
            let pl = self.place(b, it)?;
            Self::preserved_fields(&pl, it.span, &mut elements)?;
        }
        let id = self.json.field_lists.len() as i64 + 1;
        let name = self.fresh("fl");
        self.json
            .field_lists
            .push(j::FieldList { name, id, elements });
        Ok(id)
    }

    fn preserved_fields(pl: &Place, span: Span, out: &mut Vec<Tv>) -> R<()> {
        match pl {
            Place::Scalar { h, f, .. } => out.push(Tv::Field(j::FieldRef(h.clone(), f.clone()))),
            Place::Struct { fields } => {
                for f in fields {
                    Self::preserved_fields(f, span, out)?;
                }
            }
            _ => return unsupported(span, "preserving this value (only metadata fields)"),
        }
        Ok(())
    }

    fn collect_field_list(&self, ty: p4_sema::ir::TypeId, pl: &Place, n: u64, out: &mut Vec<Tv>) {
        let Place::Struct { fields: places, .. } = pl else {
            return;
        };
        let fields = self.p.fields(&Type::Struct(ty)).unwrap_or_default();
        for (f, fp) in fields.iter().zip(places) {
            let listed = f.annotations.iter().any(|a| {
                a.name.name == "field_list"
                    && matches!(&a.body, p4_syntax::ast::AnnotationBody::Exprs(es)
                        if es.iter().any(|x| matches!(&x.kind,
                            p4_syntax::ast::ExprKind::Int { value, .. } if *value == num_bigint::BigUint::from(n))))
            });
            match (fp, &f.ty) {
                (Place::Struct { .. }, Type::Struct(t)) => self.collect_field_list(*t, fp, n, out),
                (Place::Scalar { h, f, .. }, _) if listed => {
                    out.push(Tv::Field(j::FieldRef(h.clone(), f.clone())))
                }
                _ => {}
            }
        }
    }

    /// The learn list of a `digest<T>(receiver, data)` call: one per `T`; fields that are not
    /// plain fields are copied into temporaries first.
    fn learn_list(&mut self, b: &mut Body, c: &Call, data: &Expr) -> R<i64> {
        let (tname, digest_name) = match c.type_args.first() {
            Some(Type::Struct(t)) | Some(Type::Header(t)) => {
                let name = self.p.ty(*t).name.clone();
                (name.clone(), name)
            }
            // p4c gives a list's type a name, `tuple_N` in the JSON and `digest_N` in P4Info.
            Some(t @ Type::Tuple(_)) => {
                let shown = self.p.show(t);
                let k = match self.tuple_digests.iter().position(|x| *x == shown) {
                    Some(k) => k,
                    None => {
                        self.tuple_digests.push(shown);
                        self.tuple_digests.len() - 1
                    }
                };
                (format!("tuple_{k}"), format!("digest_{k}"))
            }
            _ => return unsupported(data.span, "digest data that is not a struct or list"),
        };
        let mut elements = Vec::new();
        match &data.kind {
            ExprKind::Tuple(items) => {
                for it in items {
                    elements.push(self.field_of(b, it)?);
                }
            }
            _ => {
                let pl = self.place(b, data)?;
                self.scalar_fields(&pl, &mut elements, data.span)?;
            }
        }
        if let Some(t) = c.type_args.first() {
            self.cp.digest(self.p, digest_name, t);
        }
        if let Some(id) = self.learn_lists.get(&tname) {
            let idx = (*id - 1) as usize;
            // The same digest type from another call: its fields must be the same.
            if self.json.learn_lists[idx].elements != elements {
                self.json.learn_lists[idx].elements = elements;
            }
            return Ok(*id);
        }
        let id = self.json.learn_lists.len() as i64 + 1;
        self.json.learn_lists.push(j::LearnList {
            name: tname.clone(),
            id,
            elements,
        });
        self.learn_lists.insert(tname, id);
        Ok(id)
    }

    /// A field holding the value of `e` (a temporary for computed values).
    pub fn field_of(&mut self, b: &mut Body, e: &Expr) -> R<Tv> {
        if matches!(e.kind, ExprKind::Ref(_) | ExprKind::Field(..)) {
            if let Ok(Place::Scalar { h, f, .. }) = self.place(b, e) {
                return Ok(Tv::Field(j::FieldRef(h, f)));
            }
        }
        let tmp = self.scalar("tmp", &e.ty, e.span)?;
        self.assign_expr(b, &tmp, e)?;
        let Place::Scalar { h, f, .. } = tmp else {
            return unsupported(e.span, "this value");
        };
        Ok(Tv::Field(j::FieldRef(h, f)))
    }

    /// Every scalar field under a place, in order (invalid headers are skipped by bmv2).
    pub fn scalar_fields(&self, pl: &Place, out: &mut Vec<Tv>, span: Span) -> R<()> {
        match pl {
            Place::Scalar { h, f, .. } => out.push(Tv::Field(j::FieldRef(h.clone(), f.clone()))),
            Place::Header { name, ty } => {
                for (f, _) in header_fields(self.p, *ty) {
                    out.push(Tv::Field(j::FieldRef(name.clone(), f)));
                }
            }
            Place::Struct { fields, .. } => {
                for f in fields {
                    self.scalar_fields(f, out, span)?;
                }
            }
            Place::Stack { name, elem, size } => {
                for i in 0..*size {
                    let h = Place::Header {
                        name: format!("{name}[{i}]"),
                        ty: *elem,
                    };
                    self.scalar_fields(&h, out, span)?;
                }
            }
            _ => return unsupported(span, "this value in a field list"),
        }
        Ok(())
    }

    /// A calculation over `data` with `algo` (hashes and checksums); returns its name.
    pub fn calculation(
        &mut self,
        mut b: Option<&mut Body>,
        algo: &str,
        data: &Expr,
        payload: bool,
    ) -> R<String> {
        let items = list_items(data);
        let mut input = Vec::new();
        for it in &items {
            match &it.kind {
                ExprKind::Const(Value::Int(v)) => {
                    let w = self.p.width_of(&it.ty).unwrap_or(0) as u32;
                    let Tv::Hexstr(value) = hex(&unsigned(v, w)) else {
                        unreachable!("hex makes a hexstr")
                    };
                    input.push(Tv::SizedHexstr { value, bitwidth: w });
                }
                _ => {
                    let pl = match b.as_deref_mut() {
                        Some(b) => {
                            if matches!(
                                it.kind,
                                ExprKind::Ref(_) | ExprKind::Field(..) | ExprKind::Index(..)
                            ) {
                                self.place(b, it)?
                            } else {
                                let tmp = self.fresh_place("tmp", &it.ty, it.span)?;
                                self.assign_expr(b, &tmp, it)?;
                                tmp
                            }
                        }
                        None => {
                            let mut scratch = Body::new(false);
                            let pl = self.place(&mut scratch, it)?;
                            if !scratch.prims.is_empty() {
                                return unsupported(it.span, "a computed value in a checksum");
                            }
                            pl
                        }
                    };
                    self.scalar_fields(&pl, &mut input, it.span)?;
                }
            }
        }
        if payload {
            input.push(Tv::Payload);
        }
        let name = self.fresh("calc");
        let id = self.json.calculations.len() as i64;
        self.json.calculations.push(j::Calculation {
            name: name.clone(),
            id,
            algo: algo.to_string(),
            input,
        });
        Ok(name)
    }

    /// Declares the BMv2 object of an extern instance (register, counter, meter, ...).
    pub fn declare_instance(&mut self, name: &str, d: DeclId) -> R<()> {
        let decl = self.p.decl(d);
        let DeclKind::Instance {
            ty,
            args,
            via_typedef,
            ..
        } = &decl.kind
        else {
            return Ok(());
        };
        let Type::Extern(tid, targs) = ty else {
            return Ok(());
        };
        if !self.cp.declared.insert(name.to_string()) {
            return Ok(());
        }
        let tname = self.p.ty(*tid).name.clone();
        let int_arg = |i: usize| -> u64 {
            match args.get(i) {
                Some(Some(Expr {
                    kind: ExprKind::Const(Value::Int(v)),
                    ..
                })) => u64::try_from(v.clone()).unwrap_or(0),
                _ => 0,
            }
        };
        let enums: Vec<String> = (0..3)
            .map(|i| match args.get(i) {
                Some(Some(a)) => self.enum_member(a).unwrap_or_default(),
                _ => String::new(),
            })
            .collect();
        let enum_arg = |i: usize| -> String { enums.get(i).cloned().unwrap_or_default() };
        match tname.as_str() {
            "register" => {
                let elem = targs.first().cloned().unwrap_or(Type::Bit(32));
                let Some(w) = self.p.width_of(&repr(self, &elem)) else {
                    return unsupported(decl.span, "a register of this element type");
                };
                let id = self.json.register_arrays.len() as i64;
                self.json.register_arrays.push(j::RegisterArray {
                    name: name.to_string(),
                    id,
                    size: int_arg(0) as u32,
                    bitwidth: w as u32,
                });
                if !via_typedef {
                    self.cp.register(self.p, name, d, &elem, int_arg(0));
                }
            }
            "counter" => {
                let id = self.json.counter_arrays.len() as i64;
                self.json.counter_arrays.push(j::CounterArray {
                    name: name.to_string(),
                    id,
                    size: int_arg(0) as u32,
                    is_direct: false,
                    binding: None,
                });
                self.cp.counter(self.p, name, d, &enum_arg(1), int_arg(0));
            }
            "meter" => {
                let id = self.json.meter_arrays.len() as i64;
                let unit = enum_arg(1);
                self.json.meter_arrays.push(j::MeterArray {
                    name: name.to_string(),
                    id,
                    kind: if unit == "bytes" {
                        j::MeterType::Bytes
                    } else {
                        j::MeterType::Packets
                    },
                    rate_count: 2,
                    size: int_arg(0) as u32,
                    is_direct: false,
                    binding: None,
                    result_target: None,
                });
                self.cp.meter(self.p, name, d, &unit, int_arg(0));
            }
            // Direct resources and profiles are declared with the table that uses them.
            _ => {
                self.cp.declared.remove(name);
            }
        }
        Ok(())
    }
}

/// The elements of a list argument (`{a, b}`; a list of constants is folded into one constant
/// of tuple type), or the argument itself.
fn list_items(data: &Expr) -> Vec<Expr> {
    match (&data.kind, &data.ty) {
        (ExprKind::Tuple(items), _) => items.clone(),
        (ExprKind::Const(Value::Tuple(vs)), Type::Tuple(ts)) if vs.len() == ts.len() => vs
            .iter()
            .zip(ts)
            .map(|(v, t)| Expr {
                kind: ExprKind::Const(v.clone()),
                ty: t.clone(),
                span: data.span,
            })
            .collect(),
        _ => vec![data.clone()],
    }
}
