//! Expressions to BMv2 expression trees, and l-values to places.
//!
//! BMv2 evaluates integers at infinite precision, so p4c makes P4's wrapping explicit: `bit<W>`
//! arithmetic is followed by `& (2^W-1)`, `int<W>` arithmetic by `two_comp_mod(_, W)`,
//! saturating operators by `usat_cast`/`sat_cast`. Booleans are their own kind of value:
//! stored as `bit<1>`, converted with `b2d` and `d2b`.

use crate::layout::{header_fields, header_member, Place};
use crate::num::{const_int, hex, hex_u, mask};
use crate::prims::Body;
use crate::{unsupported, Bind, Ctx, R};
use p4_bmv2_json as j;
use p4_bmv2_json::Tv;
use p4_sema::ir::{
    Builtin, CallTarget, DeclKind, Expr, ExprKind, StackProp, TableField, Type, TypeDeclKind, Value,
};
use p4_syntax::ast::{BinOp, UnOp};

pub(crate) fn op(o: &str, l: Tv, r: Tv) -> Tv {
    Tv::Expression(Box::new(j::Expr::Op(j::ExprOp {
        op: o.into(),
        left: Some(l),
        right: Some(r),
        cond: None,
    })))
}

pub(crate) fn un(o: &str, r: Tv) -> Tv {
    Tv::Expression(Box::new(j::Expr::Op(j::ExprOp {
        op: o.into(),
        left: None,
        right: Some(r),
        cond: None,
    })))
}

/// `e` as a number (`b2d` of a boolean).
pub(crate) fn b2d(e: Tv) -> Tv {
    un("b2d", e)
}

/// The integer type a value is represented by (serializable enums, new types, enums).
pub(crate) fn repr(ctx: &Ctx, ty: &Type) -> Type {
    match ty {
        Type::SerEnum(_, u) => repr(ctx, u),
        Type::NewType(id) => match &ctx.p.ty(*id).kind {
            TypeDeclKind::NewType(t) => repr(ctx, t),
            _ => ty.clone(),
        },
        Type::Enum(_) | Type::Error => Type::Bit(32),
        _ => ty.clone(),
    }
}

/// Reduces an arithmetic result to the range of its type, as P4 requires.
pub(crate) fn wrap(ctx: &Ctx, e: Tv, ty: &Type) -> Tv {
    match repr(ctx, ty) {
        Type::Bit(w) => op("&", e, hex(&mask(w))),
        Type::Int(w) => op("two_comp_mod", e, hex_u(u64::from(w))),
        _ => e,
    }
}

/// A compile-time value as a type-value object.
pub(crate) fn value_tv(v: &Value, span: p4_syntax::Span) -> R<Tv> {
    Ok(match v {
        Value::Bool(b) => Tv::Bool(*b),
        Value::Int(i) => hex(i),
        Value::Error(i) => hex_u(*i as u64),
        Value::EnumMember(_, i) => hex_u(*i as u64),
        Value::MatchKind(i) => hex_u(*i as u64),
        Value::Str(s) => Tv::String(s.clone()),
        Value::Tuple(_) => return unsupported(span, "a list value in an expression"),
    })
}

/// Whether `e` applies a table for its `hit`/`miss`.
pub(crate) fn has_table_hit(e: &Expr) -> bool {
    let mut found = false;
    walk(e, &mut |x| {
        if matches!(
            x.kind,
            ExprKind::TableApply(_, TableField::Hit | TableField::Miss)
        ) {
            found = true;
        }
    });
    found
}

fn walk(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    f(e);
    for c in children(e) {
        walk(c, f);
    }
}

/// The operands of `e`, in evaluation order.
pub(crate) fn children(e: &Expr) -> Vec<&Expr> {
    match &e.kind {
        ExprKind::Field(b, _)
        | ExprKind::StackProp(b, _)
        | ExprKind::Slice(b, _, _)
        | ExprKind::Unary(_, b)
        | ExprKind::Cast(b) => vec![b],
        ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) => vec![a, b],
        ExprKind::Ternary(a, b, c) => vec![a, b, c],
        ExprKind::Tuple(items) => items.iter().collect(),
        ExprKind::Call(c) => {
            let mut out = Vec::new();
            if let CallTarget::Method { receiver, .. }
            | CallTarget::Apply(receiver)
            | CallTarget::Builtin(receiver, _) = &c.target
            {
                out.push(receiver);
            }
            out.extend(c.args.iter().flatten());
            out
        }
        _ => vec![],
    }
}

impl Ctx<'_> {
    /// Reads a scalar place.
    pub fn read(&self, pl: &Place, span: p4_syntax::Span) -> R<Tv> {
        match pl {
            Place::Scalar { h, f, ty } => {
                let t = Tv::Field(j::FieldRef(h.clone(), f.clone()));
                Ok(if *ty == Type::Bool { un("d2b", t) } else { t })
            }
            Place::LastField { stack, f, ty } => {
                let t = Tv::StackField(stack.clone(), f.clone());
                Ok(if *ty == Type::Bool { un("d2b", t) } else { t })
            }
            Place::DynField { tv, ty } => Ok(if *ty == Type::Bool {
                un("d2b", tv.clone())
            } else {
                tv.clone()
            }),
            Place::Slice(base, hi, lo) => {
                let v = self.read(base, span)?;
                Ok(slice(v, *hi, *lo))
            }
            _ => unsupported(span, "a header or struct where a number is expected"),
        }
    }

    /// The place an l-value (or an aggregate r-value) denotes.
    pub fn place(&mut self, b: &mut Body, e: &Expr) -> R<Place> {
        match &e.kind {
            ExprKind::Ref(d) => match self.frame.env.get(d) {
                Some(Bind::Place(p)) => Ok(p.clone()),
                _ => unsupported(e.span, format!("`{}` here", self.p.decl(*d).name)),
            },
            ExprKind::Field(base, i) => {
                let bp = self.place(b, base)?;
                self.field_place(bp, *i, e)
            }
            ExprKind::Index(s, i) => {
                let sp = self.place(b, s)?;
                if let (Place::Struct { fields }, Some(k)) = (&sp, const_int(i)) {
                    return match usize::try_from(k).ok().and_then(|k| fields.get(k)) {
                        Some(f) => Ok(f.clone()),
                        None => unsupported(e.span, "a tuple index out of range"),
                    };
                }
                if let Place::UnionStack { name, elem, size } = sp {
                    // Only a constant index: bmv2 has no run-time index into union stacks.
                    return match const_int(i).and_then(|k| u32::try_from(k).ok()) {
                        Some(k) if k < size => Ok(Place::Union {
                            name: format!("{name}[{k}]"),
                            ty: elem,
                        }),
                        Some(_) => unsupported(e.span, "a stack index out of bounds"),
                        None => {
                            unsupported(e.span, "a run-time index into a stack of header unions")
                        }
                    };
                }
                let Place::Stack { name, elem, size } = sp else {
                    return unsupported(e.span, "indexing this value");
                };
                match &i.kind {
                    ExprKind::Const(Value::Int(v)) => {
                        let k: u32 = match u32::try_from(v.clone()) {
                            Ok(k) if k < size => k,
                            _ => return unsupported(e.span, "a stack index out of bounds"),
                        };
                        Ok(Place::Header {
                            name: format!("{name}[{k}]"),
                            ty: elem,
                        })
                    }
                    _ => {
                        let index = self.rv(b, i)?;
                        Ok(Place::DynHeader {
                            stack: name,
                            elem,
                            index,
                        })
                    }
                }
            }
            ExprKind::StackProp(s, prop) => {
                let sp = self.place(b, s)?;
                if let (Place::UnionStack { name, elem, .. }, StackProp::Next) = (&sp, prop) {
                    return Ok(Place::UnionStackNext {
                        name: name.clone(),
                        elem: *elem,
                    });
                }
                let Place::Stack { name, elem, .. } = sp else {
                    return unsupported(e.span, "next/last of this value");
                };
                match prop {
                    StackProp::Next => Ok(Place::StackNext { name }),
                    StackProp::Last => Ok(Place::StackLast { name, elem }),
                    StackProp::LastIndex => unsupported(e.span, "lastIndex as an l-value"),
                }
            }
            ExprKind::Slice(base, hi, lo) => {
                let bp = self.place(b, base)?;
                // `x[7:4][3:0]` is `x[7:4]`: bit positions relative to the outer slice.
                match bp {
                    Place::Slice(inner, _, ilo) => Ok(Place::Slice(inner, ilo + *hi, ilo + *lo)),
                    bp => Ok(Place::Slice(Box::new(bp), *hi, *lo)),
                }
            }
            ExprKind::Call(_) => unsupported(e.span, "this call as a storage location"),
            _ => unsupported(e.span, "this expression as a storage location"),
        }
    }

    fn field_place(&self, bp: Place, i: usize, e: &Expr) -> R<Place> {
        let field = |ty: p4_sema::ir::TypeId| {
            self.p
                .fields(&Type::Header(ty))
                .or_else(|| self.p.fields(&Type::HeaderUnion(ty)))
                .and_then(|fs| fs.get(i))
                .cloned()
        };
        match bp {
            Place::Struct { fields, .. } => match fields.get(i) {
                Some(p) => Ok(p.clone()),
                None => unsupported(e.span, "a struct field"),
            },
            Place::Header { name, ty } => {
                let leaf = |_, f, ty| Place::Scalar {
                    h: name.clone(),
                    f,
                    ty,
                };
                match header_member(self.p, ty, i, leaf) {
                    Some(pl) => Ok(pl),
                    None => unsupported(e.span, "a header field"),
                }
            }
            Place::Union { name, ty } => match field(ty) {
                Some(f) => match f.ty {
                    Type::Header(h) => Ok(Place::Header {
                        name: format!("{name}.{}", f.name),
                        ty: h,
                    }),
                    _ => unsupported(e.span, "a union member"),
                },
                None => unsupported(e.span, "a union member"),
            },
            Place::UnionStackNext { name, elem } => match field(elem) {
                Some(f) => Ok(Place::UnionStackNextMember {
                    stack: name,
                    member: f.name,
                }),
                None => unsupported(e.span, "a union member"),
            },
            Place::DynHeader { stack, elem, index } => {
                let h = dyn_header(stack, index);
                // `access_field` counts the fields of the flattened header.
                let leaf = |k: usize, _, ty| Place::DynField {
                    tv: op("access_field", h.clone(), Tv::Int(k as i64)),
                    ty,
                };
                match header_member(self.p, elem, i, leaf) {
                    Some(pl) => Ok(pl),
                    None => unsupported(e.span, "a header field"),
                }
            }
            Place::StackLast { name, elem } => {
                let leaf = |_, f, ty| Place::LastField {
                    stack: name.clone(),
                    f,
                    ty,
                };
                match header_member(self.p, elem, i, leaf) {
                    Some(pl) => Ok(pl),
                    None => unsupported(e.span, "a field of stack.last"),
                }
            }
            _ => unsupported(e.span, "a field of this value"),
        }
    }

    /// An r-value; boolean expressions stay boolean (`d2b` of stored bits).
    pub fn rv(&mut self, b: &mut Body, e: &Expr) -> R<Tv> {
        if let Some(pl) = self.hoisted.get(&(e as *const Expr)).cloned() {
            return self.read(&pl, e.span);
        }
        match &e.kind {
            ExprKind::Const(v) => value_tv(v, e.span),
            ExprKind::Ref(d) => {
                if let DeclKind::Const { value, .. } = &self.p.decl(*d).kind {
                    return value_tv(value, e.span);
                }
                match self.frame.env.get(d) {
                    Some(Bind::Value(tv)) => Ok(tv.clone()),
                    Some(Bind::Place(p)) => {
                        let p = p.clone();
                        self.read(&p, e.span)
                    }
                    _ => unsupported(e.span, format!("`{}` as a value", self.p.decl(*d).name)),
                }
            }
            ExprKind::Field(base, i) if is_lookahead(self, base) => {
                // A field of `pkt.lookahead<H>()`: peek at just that field's bits.
                let fields = self.p.fields(&base.ty).unwrap_or_default();
                let mut offset = 0i64;
                for f in fields.iter().take(*i) {
                    offset += self.p.width_of(&f.ty).unwrap_or(0) as i64;
                }
                match fields
                    .get(*i)
                    .and_then(|f| self.p.width_of(&repr(self, &f.ty)))
                {
                    Some(w) => Ok(Tv::Lookahead {
                        offset,
                        bitwidth: w as u32,
                    }),
                    None => unsupported(e.span, "a lookahead field of this type"),
                }
            }
            ExprKind::Field(..) | ExprKind::Index(..) => {
                let p = self.place(b, e)?;
                self.read(&p, e.span)
            }
            ExprKind::StackProp(_, StackProp::Next | StackProp::Last) => {
                unsupported(e.span, "stack.next/last as a number")
            }
            ExprKind::StackProp(s, StackProp::LastIndex) => {
                let sp = self.place(b, s)?;
                let Place::Stack { name, .. } = sp else {
                    return unsupported(e.span, "lastIndex of this value");
                };
                Ok(un("last_stack_index", Tv::HeaderStack(name)))
            }
            ExprKind::Slice(base, hi, lo) => {
                let v = self.rv(b, base)?;
                Ok(slice(v, *hi, *lo))
            }
            ExprKind::Unary(o, a) => {
                let v = self.rv(b, a)?;
                Ok(match o {
                    UnOp::Not => un("not", v),
                    UnOp::BitNot => wrap(self, un("~", v), &e.ty),
                    UnOp::Neg => wrap(self, un("-", v), &e.ty),
                    UnOp::Plus => v,
                })
            }
            ExprKind::Binary(o, l, r) => self.binary(b, *o, l, r, e),
            ExprKind::Ternary(c, t, f) => {
                if t.has_call() || f.has_call() {
                    // p4-midend's `side-effects`/`parser-side-effects` make these `if`s.
                    return unsupported(e.span, "a call inside a branch of `?:` here");
                }
                let c = self.rv(b, c)?;
                let t = self.rv(b, t)?;
                let f = self.rv(b, f)?;
                Ok(Tv::Expression(Box::new(j::Expr::Op(j::ExprOp {
                    op: "?".into(),
                    left: Some(t),
                    right: Some(f),
                    cond: Some(c),
                }))))
            }
            ExprKind::Cast(x) => {
                let v = self.rv(b, x)?;
                Ok(self.cast(v, &x.ty, &e.ty))
            }
            ExprKind::Call(c) => match &c.target {
                CallTarget::Builtin(recv, Builtin::IsValid) => {
                    let p = self.place(b, recv)?;
                    match p {
                        Place::Header { name, .. } => Ok(un("valid", Tv::Header(name))),
                        Place::Union { name, .. } => Ok(un("valid_union", Tv::HeaderUnion(name))),
                        Place::DynHeader { .. } => {
                            // bmv2's `valid` takes a header: test the element the index picks.
                            let tmp = self.scalar("tmp", &Type::Bool, e.span)?;
                            self.assign_tv(b, &tmp, Tv::Bool(false), e.span)?;
                            self.per_element(b, &p, e.span, |cx, b, h| match h {
                                Place::Header { name, .. } => {
                                    cx.assign_tv(b, &tmp, un("valid", Tv::Header(name)), e.span)
                                }
                                _ => Ok(()),
                            })?;
                            self.read(&tmp, e.span)
                        }
                        _ => unsupported(e.span, "isValid of this value"),
                    }
                }
                _ => {
                    // Calls with results: extern methods (the midend inlined functions).
                    match self.call(b, c, e)? {
                        Some(tv) => Ok(tv),
                        None => unsupported(e.span, "a call without a value used as a value"),
                    }
                }
            },
            ExprKind::TableApply(..) => unsupported(
                e.span,
                "table hit/miss inside an expression (only `if (t.apply().hit)`)",
            ),
            ExprKind::Tuple(_) => unsupported(e.span, "a list where a number is expected"),
            ExprKind::DontCare | ExprKind::Default => unsupported(e.span, "`_` or `default` here"),
        }
    }

    fn binary(&mut self, b: &mut Body, o: BinOp, l: &Expr, r: &Expr, e: &Expr) -> R<Tv> {
        if matches!(o, BinOp::Eq | BinOp::Ne)
            && matches!(
                l.ty,
                Type::Header(_) | Type::Struct(_) | Type::HeaderUnion(_) | Type::Stack(..)
            )
        {
            if let Some(eq) = self.eq_struct_value(b, l, r, e)? {
                return Ok(if o == BinOp::Eq { eq } else { un("not", eq) });
            }
            let (pa, pb) = (self.place(b, l)?, self.place(b, r)?);
            let eq = self.eq_places(&pa, &pb, e.span)?;
            return Ok(if o == BinOp::Eq { eq } else { un("not", eq) });
        }
        if matches!(o, BinOp::And | BinOp::Or) && r.has_call() {
            // p4-midend's `side-effects`/`parser-side-effects` make these `if`s.
            return unsupported(r.span, "a call on the right of && or || here");
        }
        // Calls with side effects arrive hoisted (`p4-midend`'s `side-effects`), with the
        // operands before them saved: left to right is the order read here.
        let lv = self.rv(b, l)?;
        let rv = self.rv(b, r)?;
        let ty = repr(self, &e.ty);
        Ok(match o {
            BinOp::Add => wrap(self, op("+", lv, rv), &ty),
            BinOp::Sub => wrap(self, op("-", lv, rv), &ty),
            BinOp::Mul => wrap(self, op("*", lv, rv), &ty),
            BinOp::Div => op("/", lv, rv),
            BinOp::Mod => op("%", lv, rv),
            BinOp::Shl => wrap(self, op("<<", lv, rv), &ty),
            BinOp::Shr => op(">>", lv, rv),
            BinOp::AddSat | BinOp::SubSat => {
                let inner = op(if o == BinOp::AddSat { "+" } else { "-" }, lv, rv);
                match ty {
                    Type::Bit(w) => op("usat_cast", inner, hex_u(u64::from(w))),
                    Type::Int(w) => op("sat_cast", inner, hex_u(u64::from(w))),
                    _ => return unsupported(e.span, "saturating arithmetic on this type"),
                }
            }
            BinOp::Le => op("<=", lv, rv),
            BinOp::Ge => op(">=", lv, rv),
            BinOp::Lt => op("<", lv, rv),
            BinOp::Gt => op(">", lv, rv),
            BinOp::Eq | BinOp::Ne => {
                let name = if o == BinOp::Eq { "==" } else { "!=" };
                op(name, lv, rv)
            }
            BinOp::BitAnd => op("&", lv, rv),
            BinOp::BitOr => op("|", lv, rv),
            BinOp::BitXor => op("^", lv, rv),
            BinOp::And => op("and", lv, rv),
            BinOp::Or => op("or", lv, rv),
            BinOp::Concat => {
                let Some(wr) = self.p.width_of(&r.ty) else {
                    return unsupported(e.span, "++ of this type");
                };
                let wr = wr as u32;
                let rmasked = match repr(self, &r.ty) {
                    Type::Int(_) => op("&", rv, hex(&mask(wr))),
                    _ => rv,
                };
                wrap(
                    self,
                    op("|", op("<<", lv, hex_u(u64::from(wr))), rmasked),
                    &ty,
                )
            }
            BinOp::Mask | BinOp::Range => {
                return unsupported(e.span, "a keyset expression here");
            }
        })
    }

    /// A struct compared with a struct value (`meta.port == { 9w192 }`, a constant or a list
    /// expression, on either side): field by field, as p4c compares them; `None` when both
    /// sides are storage.
    fn eq_struct_value(&mut self, b: &mut Body, l: &Expr, r: &Expr, e: &Expr) -> R<Option<Tv>> {
        let value = |x: &Expr| -> Option<Vec<Expr>> {
            let fields = self.p.fields(&x.ty)?;
            match &x.kind {
                ExprKind::Const(Value::Tuple(vs)) if vs.len() == fields.len() => Some(
                    vs.iter()
                        .zip(fields)
                        .map(|(v, f)| Expr {
                            kind: ExprKind::Const(v.clone()),
                            ty: f.ty.clone(),
                            span: x.span,
                        })
                        .collect(),
                ),
                ExprKind::Tuple(items) if items.len() == fields.len() => Some(items.clone()),
                _ => None,
            }
        };
        if !matches!(l.ty, Type::Struct(_)) {
            return Ok(None);
        }
        let (place, parts) = match (value(l), value(r)) {
            (_, Some(parts)) => (l, parts),
            (Some(parts), None) => (r, parts),
            (None, None) => return Ok(None),
        };
        let mut out: Option<Tv> = None;
        for (i, part) in parts.iter().enumerate() {
            let field = Expr {
                kind: ExprKind::Field(Box::new(place.clone()), i),
                ty: part.ty.clone(),
                span: place.span,
            };
            let eq = self.binary(b, BinOp::Eq, &field, part, e)?;
            out = Some(match out {
                Some(acc) => op("and", acc, eq),
                None => eq,
            });
        }
        Ok(Some(out.unwrap_or(Tv::Bool(true))))
    }

    /// Aggregate equality: headers are equal when both are invalid, or both valid with equal
    /// fields; structs and stacks member by member.
    fn eq_places(&mut self, a: &Place, b: &Place, span: p4_syntax::Span) -> R<Tv> {
        let all = |parts: Vec<Tv>| {
            parts
                .into_iter()
                .reduce(|x, y| op("and", x, y))
                .unwrap_or(Tv::Bool(true))
        };
        Ok(match (a, b) {
            (Place::Header { name: na, ty }, Place::Header { name: nb, .. }) => {
                let va = un("valid", Tv::Header(na.clone()));
                let vb = un("valid", Tv::Header(nb.clone()));
                let mut fields = Vec::new();
                for (f, _) in header_fields(self.p, *ty) {
                    fields.push(op(
                        "==",
                        Tv::Field(j::FieldRef(na.clone(), f.clone())),
                        Tv::Field(j::FieldRef(nb.clone(), f)),
                    ));
                }
                op(
                    "and",
                    op("==", va.clone(), vb),
                    op("or", un("not", va), all(fields)),
                )
            }
            (Place::Struct { fields: fa }, Place::Struct { fields: fb }) => {
                let mut parts = Vec::new();
                for (x, y) in fa.iter().zip(fb) {
                    parts.push(self.eq_places(x, y, span)?);
                }
                all(parts)
            }
            (
                Place::Stack {
                    name: na,
                    elem,
                    size,
                },
                Place::Stack { name: nb, .. },
            ) => {
                let mut parts = Vec::new();
                for i in 0..*size {
                    let x = Place::Header {
                        name: format!("{na}[{i}]"),
                        ty: *elem,
                    };
                    let y = Place::Header {
                        name: format!("{nb}[{i}]"),
                        ty: *elem,
                    };
                    parts.push(self.eq_places(&x, &y, span)?);
                }
                all(parts)
            }
            _ => {
                let (x, y) = (self.read(a, span)?, self.read(b, span)?);
                op("==", x, y)
            }
        })
    }

    /// Converts a value between P4 types.
    pub fn cast(&self, v: Tv, from: &Type, to: &Type) -> Tv {
        let (f, t) = (repr(self, from), repr(self, to));
        match (&f, &t) {
            (Type::Bool, Type::Bool) => v,
            (Type::Bool, _) => wrap(self, b2d(v), &t),
            (_, Type::Bool) => un("d2b", v),
            (Type::Bit(a), Type::Bit(b2)) if a <= b2 => v,
            (Type::InfInt, _) => wrap(self, v, &t),
            (_, Type::Bit(_)) | (_, Type::Int(_)) if f != t => wrap(self, v, &t),
            _ => v,
        }
    }
}

pub(crate) fn slice(v: Tv, hi: u32, lo: u32) -> Tv {
    let shifted = if lo == 0 {
        v
    } else {
        op(">>", v, hex_u(u64::from(lo)))
    };
    op("&", shifted, hex(&mask(hi - lo + 1)))
}

/// `pkt.lookahead<T>()`.
pub(crate) fn is_lookahead(ctx: &Ctx, e: &Expr) -> bool {
    let ExprKind::Call(c) = &e.kind else {
        return false;
    };
    let CallTarget::Method {
        extern_ty, index, ..
    } = &c.target
    else {
        return false;
    };
    match &ctx.p.ty(*extern_ty).kind {
        TypeDeclKind::Extern { methods, .. } => {
            ctx.p.ty(*extern_ty).name == "packet_in"
                && methods.get(*index).is_some_and(|m| m.name == "lookahead")
        }
        _ => false,
    }
}

/// `stack[index]` with an index known only at run time, as a header-valued expression.
pub(crate) fn dyn_header(stack: String, index: Tv) -> Tv {
    Tv::Expression(Box::new(j::Expr::Op(j::ExprOp {
        op: "dereference_header_stack".into(),
        left: Some(Tv::HeaderStack(stack)),
        right: Some(index),
        cond: None,
    })))
}
