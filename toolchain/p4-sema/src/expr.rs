//! Expressions: typing, implicit casts, constant folding, calls with generic inference,
//! l-values and keysets.

use crate::check::{dir_name, has_vars, subst, Checker, Entity, Subst};
use crate::eval;
use crate::ir::*;
use num_bigint::BigInt;
use num_traits::{ToPrimitive, Zero};
use p4_syntax::ast::{self, BinOp, Direction, UnOp};
use p4_syntax::Span;

/// A checked argument list: one entry per parameter, and the inferred type arguments.
pub(crate) struct CallArgs {
    pub args: Vec<Option<Expr>>,
    pub params: Vec<Param>,
    pub sub: Subst,
}

fn unknown(span: Span) -> Expr {
    Expr {
        kind: ExprKind::DontCare,
        ty: Type::Unknown,
        span,
    }
}

fn constant(v: Value, ty: Type, span: Span) -> Expr {
    Expr {
        kind: ExprKind::Const(v),
        ty,
        span,
    }
}

/// `x / 2^k` as `x >> k`, `x % 2^k` as `x & (2^k - 1)`, `0 / x` and `0 % x` as 0 (with `x`
/// still evaluated when it calls something), for unsigned `ty`: p4c's strength reduction,
/// which leaves no run-time division for the target. `None` for any other division.
fn divide_by_shifting(op: BinOp, x: &Expr, y: &Expr, ty: &Type, span: Span) -> Option<Expr> {
    let bin = |op, a: Expr, b: Expr| Expr {
        kind: ExprKind::Binary(op, Box::new(a), Box::new(b)),
        ty: ty.clone(),
        span,
    };
    let zero = || constant(Value::Int(BigInt::from(0)), ty.clone(), span);
    if let Some(Value::Int(v)) = const_of(x) {
        if v.sign() != num_bigint::Sign::NoSign {
            return None;
        }
        // The divisor's side effects stay; its value does not matter (0 / 0 is 0 in p4c too).
        return Some(if y.has_call() {
            bin(BinOp::BitAnd, y.clone(), zero())
        } else {
            zero()
        });
    }
    let Some(Value::Int(v)) = const_of(y) else {
        return None;
    };
    if v.sign() != num_bigint::Sign::Plus || v.magnitude().count_ones() != 1 {
        return None;
    }
    let k = v.trailing_zeros().unwrap_or(0);
    Some(match op {
        BinOp::Div if k == 0 => x.clone(),
        BinOp::Div => {
            let amount = constant(Value::Int(BigInt::from(k)), Type::InfInt, span);
            bin(BinOp::Shr, x.clone(), amount)
        }
        _ => {
            let mask = constant(Value::Int(v - 1u32), ty.clone(), span);
            bin(BinOp::BitAnd, x.clone(), mask)
        }
    })
}

fn const_of(e: &Expr) -> Option<&Value> {
    match &e.kind {
        ExprKind::Const(v) => Some(v),
        _ => None,
    }
}

fn contains_infint(t: &Type) -> bool {
    match t {
        Type::InfInt => true,
        Type::Tuple(ts) => ts.iter().any(contains_infint),
        _ => false,
    }
}

const SIZE_METHODS: &[&str] = &[
    "minSizeInBits",
    "minSizeInBytes",
    "maxSizeInBits",
    "maxSizeInBytes",
];

impl Checker<'_> {
    /// `e` with the type it has on its own (integer literals are `int`).
    pub fn expr(&mut self, e: &ast::Expr) -> Expr {
        use ast::ExprKind as K;
        let span = e.span;
        match &e.kind {
            K::Bool(b) => constant(Value::Bool(*b), Type::Bool, span),
            K::Int { value, width, .. } => {
                let v = BigInt::from(value.clone());
                match width {
                    None => constant(Value::Int(v), Type::InfInt, span),
                    Some((w, signed)) => {
                        let ty = if *signed {
                            Type::Int(*w)
                        } else {
                            Type::Bit(*w)
                        };
                        if *w == 0 && *signed {
                            self.d.error(span, "int<0> literals are not allowed");
                            return unknown(span);
                        }
                        if !eval::fits(&v, &ty) {
                            self.d.warning(
                                span,
                                format!(
                                    "value {v} does not fit in {}; it is truncated",
                                    self.p.show(&ty)
                                ),
                            );
                        }
                        let v = eval::wrap(v, &ty);
                        constant(Value::Int(v), ty, span)
                    }
                }
            }
            K::Str(s) => constant(Value::Str(s.clone()), Type::String, span),
            K::Path(p) => self.path_expr(p, span),
            K::Member(base, m) => self.member(base, m, span),
            K::Index(base, idx) => self.index(base, idx, span),
            K::Slice(base, hi, lo) => self.slice(base, hi, lo, span),
            K::Call {
                callee,
                type_args,
                args,
            } => self.call(callee, type_args, args, span),
            K::Unary(op, a) => self.unary(*op, a, span),
            K::Binary(op, a, b) => self.binary(*op, a, b, span),
            K::Ternary(c, a, b) => self.ternary(c, a, b, span),
            K::Cast(t, x) => {
                let to = self.resolve_type(t);
                self.cast(&to, x, span)
            }
            K::List(items) => {
                let items: Vec<Expr> = items.iter().map(|i| self.expr(i)).collect();
                let ty = Type::Tuple(items.iter().map(|i| i.ty.clone()).collect());
                self.tuple_value(items, ty, span)
            }
            K::StructInit(_) => {
                self.d.error(
                    span,
                    "a structure initializer needs a known target type here (assign it or cast it)",
                );
                unknown(span)
            }
            K::Tuple(_) | K::Default => {
                self.d.error(
                    span,
                    "keysets can only appear in select cases and table entries",
                );
                unknown(span)
            }
            K::DontCare => {
                self.d
                    .error(span, "'_' can only be an out argument or a keyset");
                unknown(span)
            }
            K::TypeExpr(_) => {
                self.d.error(span, "a type cannot be used as a value");
                unknown(span)
            }
        }
    }

    /// A list of values: constant when all items are.
    fn tuple_value(&mut self, items: Vec<Expr>, ty: Type, span: Span) -> Expr {
        let consts: Option<Vec<Value>> = items.iter().map(|i| const_of(i).cloned()).collect();
        match consts {
            Some(vs) if !items.is_empty() => constant(Value::Tuple(vs), ty, span),
            _ => Expr {
                kind: ExprKind::Tuple(items),
                ty,
                span,
            },
        }
    }

    /// `e` converted to `ty`: integer literals take the width, lists and structure
    /// initializers become struct/header/tuple values.
    pub fn expr_as(&mut self, e: &ast::Expr, ty: &Type, what: &str) -> Expr {
        match (&e.kind, ty) {
            (ast::ExprKind::StructInit(inits), Type::Struct(_) | Type::Header(_)) => {
                let fields = self.p.fields(ty).map(|f| f.to_vec()).unwrap_or_default();
                let mut items: Vec<Option<Expr>> = vec![None; fields.len()];
                for (n, v) in inits {
                    match fields.iter().position(|f| f.name == n.name) {
                        Some(i) => {
                            if items[i].is_some() {
                                self.d.error(
                                    n.span,
                                    format!("field '{}' is initialised twice", n.name),
                                );
                            }
                            let fty = fields[i].ty.clone();
                            items[i] = Some(self.expr_as(v, &fty, "the field"));
                        }
                        None => {
                            self.d.error(
                                n.span,
                                format!("{} has no field '{}'", self.p.show(ty), n.name),
                            );
                        }
                    }
                }
                let mut out = Vec::new();
                for (f, it) in fields.iter().zip(items) {
                    match it {
                        Some(x) => out.push(x),
                        None => {
                            self.d.error(
                                e.span,
                                format!(
                                    "field '{}' of {} is not initialised",
                                    f.name,
                                    self.p.show(ty)
                                ),
                            );
                            return unknown(e.span);
                        }
                    }
                }
                self.tuple_value(out, ty.clone(), e.span)
            }
            (ast::ExprKind::List(items), Type::Struct(_) | Type::Header(_) | Type::Tuple(_)) => {
                let tys: Vec<Type> = match ty {
                    Type::Tuple(ts) => ts.clone(),
                    _ => self
                        .p
                        .fields(ty)
                        .map(|f| f.iter().map(|f| f.ty.clone()).collect())
                        .unwrap_or_default(),
                };
                if tys.len() != items.len() {
                    self.d.error(
                        e.span,
                        format!(
                            "{} has {} fields, but the list has {} values",
                            self.p.show(ty),
                            tys.len(),
                            items.len()
                        ),
                    );
                    return unknown(e.span);
                }
                let out = items
                    .iter()
                    .zip(&tys)
                    .map(|(i, t)| self.expr_as(i, t, what))
                    .collect();
                self.tuple_value(out, ty.clone(), e.span)
            }
            _ => {
                let x = self.expr(e);
                self.coerce(x, ty, what)
            }
        }
    }

    /// Implicit conversion of a checked expression to `ty`, or a type error.
    pub fn coerce(&mut self, x: Expr, ty: &Type, what: &str) -> Expr {
        if x.ty == *ty || x.ty == Type::Unknown || matches!(ty, Type::Unknown | Type::DontCare) {
            return x;
        }
        match (&x.ty, ty) {
            (Type::InfInt, Type::Bit(_) | Type::Int(_)) => {
                if let Some(Value::Int(v)) = const_of(&x) {
                    if !eval::fits(v, ty) {
                        self.d.warning(
                            x.span,
                            format!(
                                "value {v} does not fit in {}; it is truncated",
                                self.p.show(ty)
                            ),
                        );
                    }
                    return constant(Value::Int(eval::wrap(v.clone(), ty)), ty.clone(), x.span);
                }
                return self.cast_node(x, ty);
            }
            (Type::SerEnum(_, u), _) if **u == *ty => return self.cast_node(x, ty),
            // Parser and control implementations match declared types by signature.
            (Type::Parser(..), Type::Parser(..)) | (Type::Control(..), Type::Control(..)) => {
                let mut sub = Subst::new();
                if unify(ty, &x.ty, &mut sub, &self.p) {
                    return x;
                }
            }
            (Type::Tuple(from), Type::Tuple(_) | Type::Struct(_) | Type::Header(_)) => {
                let tys: Vec<Type> = match ty {
                    Type::Tuple(ts) => ts.clone(),
                    _ => self
                        .p
                        .fields(ty)
                        .map(|f| f.iter().map(|f| f.ty.clone()).collect())
                        .unwrap_or_default(),
                };
                if tys.len() == from.len() {
                    let items = match x.kind {
                        ExprKind::Tuple(items) => items,
                        ExprKind::Const(Value::Tuple(vs)) => vs
                            .into_iter()
                            .zip(from.iter())
                            .map(|(v, t)| constant(v, t.clone(), x.span))
                            .collect(),
                        _ => {
                            return self.mismatch(x, ty, what);
                        }
                    };
                    let out = items
                        .into_iter()
                        .zip(&tys)
                        .map(|(i, t)| self.coerce(i, t, what))
                        .collect();
                    return self.tuple_value(out, ty.clone(), x.span);
                }
            }
            _ => {}
        }
        self.mismatch(x, ty, what)
    }

    fn mismatch(&mut self, x: Expr, ty: &Type, what: &str) -> Expr {
        self.d.error(
            x.span,
            format!(
                "type mismatch: {what} must have type {}, not {}",
                self.p.show(ty),
                self.p.show(&x.ty)
            ),
        );
        unknown(x.span)
    }

    /// An explicit conversion node, folded when the operand is constant.
    fn cast_node(&mut self, x: Expr, ty: &Type) -> Expr {
        if let Some(v) = const_of(&x) {
            let from = self.underlying(&x.ty);
            let to = self.underlying(ty);
            if let Ok(v) = eval::cast(v, &from, &to) {
                return constant(v, ty.clone(), x.span);
            }
        }
        let span = x.span;
        Expr {
            kind: ExprKind::Cast(Box::new(x)),
            ty: ty.clone(),
            span,
        }
    }

    /// A serializable enum value cast to its underlying type; other values unchanged.
    fn as_underlying(&mut self, x: Expr) -> Expr {
        match &x.ty {
            Type::SerEnum(_, u) => {
                let u = (**u).clone();
                self.cast_node(x, &u)
            }
            _ => x,
        }
    }

    /// The representation of serializable enums and new types.
    pub fn underlying(&self, t: &Type) -> Type {
        match t {
            Type::SerEnum(_, u) => (**u).clone(),
            Type::NewType(id) => match &self.p.ty(*id).kind {
                TypeDeclKind::NewType(u) => self.underlying(u),
                _ => t.clone(),
            },
            _ => t.clone(),
        }
    }

    fn path_expr(&mut self, p: &ast::Path, span: Span) -> Expr {
        let ents = match self.lookup(p) {
            Some(e) => e.to_vec(),
            None => {
                self.d
                    .error(p.name.span, format!("undeclared name '{}'", p.name.name));
                return unknown(span);
            }
        };
        let Some(Entity::Value(id)) = ents.first() else {
            self.d.error(
                p.name.span,
                format!("'{}' is a type, not a value", p.name.name),
            );
            return unknown(span);
        };
        let id = *id;
        let ty = match &self.p.decl(id).kind {
            DeclKind::Const { ty, value } => return constant(value.clone(), ty.clone(), span),
            DeclKind::Var { ty, .. } => ty.clone(),
            DeclKind::Param(p) => p.ty.clone(),
            DeclKind::Instance { ty, .. } => ty.clone(),
            DeclKind::Table(_) => Type::Table(id),
            DeclKind::ValueSet { elem, .. } => Type::Set(Box::new(elem.clone())),
            _ => {
                self.d.error(
                    p.name.span,
                    format!("'{}' cannot be used as a value here", p.name.name),
                );
                return unknown(span);
            }
        };
        Expr {
            kind: ExprKind::Ref(id),
            ty,
            span,
        }
    }

    /// `base` when it names a type (`Plain.B`, `error.X`, `bit<8>.minSizeInBits`).
    fn type_of_base(&mut self, base: &ast::Expr) -> Option<Type> {
        match &base.kind {
            ast::ExprKind::TypeExpr(t) => Some(self.resolve_type(t)),
            ast::ExprKind::Path(p) => match self.lookup(p)?.first()?.clone() {
                Entity::Type(t) => Some(t),
                Entity::Generic(_) => {
                    self.d.error(
                        p.name.span,
                        format!("'{}' needs type arguments here", p.name.name),
                    );
                    Some(Type::Unknown)
                }
                Entity::Value(_) => None,
            },
            _ => None,
        }
    }

    fn member(&mut self, base: &ast::Expr, m: &ast::Ident, span: Span) -> Expr {
        if let Some(t) = self.type_of_base(base) {
            return self.type_member(&t, m, span);
        }
        let x = self.expr(base);
        let name = m.name.as_str();
        match &x.ty {
            Type::Unknown => unknown(span),
            Type::Struct(_) | Type::Header(_) | Type::HeaderUnion(_) => {
                let fields = self.p.fields(&x.ty).unwrap_or(&[]);
                match fields.iter().position(|f| f.name == name) {
                    Some(i) => {
                        let ty = fields[i].ty.clone();
                        if let Some(Value::Tuple(vs)) = const_of(&x) {
                            if let Some(v) = vs.get(i) {
                                return constant(v.clone(), ty, span);
                            }
                        }
                        Expr {
                            kind: ExprKind::Field(Box::new(x), i),
                            ty,
                            span,
                        }
                    }
                    None => {
                        if matches!(name, "isValid" | "setValid" | "setInvalid") {
                            self.d
                                .error(m.span, format!("'{name}' is a method: call it with ()"));
                        } else {
                            self.d.error(
                                m.span,
                                format!("{} has no field '{name}'", self.p.show(&x.ty)),
                            );
                        }
                        unknown(span)
                    }
                }
            }
            Type::Stack(elem, n) => {
                let prop = match name {
                    "size" => {
                        return constant(Value::Int(BigInt::from(*n)), Type::Bit(32), span);
                    }
                    "next" => StackProp::Next,
                    "last" => StackProp::Last,
                    "lastIndex" => StackProp::LastIndex,
                    _ => {
                        self.d
                            .error(m.span, format!("header stacks have no member '{name}'"));
                        return unknown(span);
                    }
                };
                if !self.ctx.in_parser {
                    self.d.error(
                        m.span,
                        format!("'{name}' of a header stack can only be used in a parser"),
                    );
                }
                let ty = if prop == StackProp::LastIndex {
                    Type::Bit(32)
                } else {
                    (**elem).clone()
                };
                Expr {
                    kind: ExprKind::StackProp(Box::new(x), prop),
                    ty,
                    span,
                }
            }
            Type::TableApply(t) => {
                let t = *t;
                let (field, ty) = match name {
                    "hit" => (TableField::Hit, Type::Bool),
                    "miss" => (TableField::Miss, Type::Bool),
                    "action_run" => {
                        if !self.ctx.switch_expr {
                            self.d.error(
                                m.span,
                                "'action_run' can only be the expression of a switch statement",
                            );
                        }
                        (TableField::ActionRun, Type::ActionEnum(t))
                    }
                    _ => {
                        self.d.error(
                            m.span,
                            format!("the result of apply() has no member '{name}' (use hit, miss or action_run)"),
                        );
                        return unknown(span);
                    }
                };
                Expr {
                    kind: ExprKind::TableApply(t, field),
                    ty,
                    span,
                }
            }
            other => {
                let shown = self.p.show(other);
                self.d
                    .error(m.span, format!("{shown} has no member '{name}'"));
                unknown(span)
            }
        }
    }

    fn type_member(&mut self, t: &Type, m: &ast::Ident, span: Span) -> Expr {
        let name = m.name.as_str();
        match t {
            Type::Unknown => unknown(span),
            Type::Error => match self.p.errors.iter().position(|e| e == name) {
                Some(i) => constant(Value::Error(i), Type::Error, span),
                None => {
                    self.d
                        .error(m.span, format!("undeclared error 'error.{name}'"));
                    unknown(span)
                }
            },
            Type::Enum(id) => {
                let found = match &self.p.ty(*id).kind {
                    TypeDeclKind::Enum(ms) => ms.iter().position(|x| x == name),
                    _ => None,
                };
                match found {
                    Some(i) => constant(Value::EnumMember(*id, i), t.clone(), span),
                    None => {
                        let shown = self.p.show(t);
                        self.d
                            .error(m.span, format!("enum {shown} has no member '{name}'"));
                        unknown(span)
                    }
                }
            }
            Type::SerEnum(id, _) => {
                let found = match &self.p.ty(*id).kind {
                    TypeDeclKind::SerEnum { members, .. } => members
                        .iter()
                        .find(|(n, _)| n == name)
                        .map(|(_, v)| v.clone()),
                    _ => None,
                };
                match found {
                    Some(v) => constant(Value::Int(v), t.clone(), span),
                    None => {
                        let shown = self.p.show(t);
                        self.d
                            .error(m.span, format!("enum {shown} has no member '{name}'"));
                        unknown(span)
                    }
                }
            }
            _ => {
                let shown = self.p.show(t);
                self.d
                    .error(m.span, format!("type {shown} has no member '{name}'"));
                unknown(span)
            }
        }
    }

    fn index(&mut self, base: &ast::Expr, idx: &ast::Expr, span: Span) -> Expr {
        let x = self.expr(base);
        let i = self.expr(idx);
        match &x.ty {
            Type::Unknown => unknown(span),
            Type::Stack(elem, n) => {
                let elem = (**elem).clone();
                let n = *n;
                match (&i.ty, const_of(&i)) {
                    (_, Some(Value::Int(v))) => {
                        if v.to_u32().map_or(true, |k| k >= n) {
                            self.d.error(
                                idx.span,
                                format!("index {v} is out of bounds for a stack of size {n}"),
                            );
                        }
                    }
                    (Type::Bit(_) | Type::Int(_) | Type::SerEnum(..) | Type::Unknown, _) => {}
                    (t, _) => {
                        let shown = self.p.show(t);
                        self.d.error(
                            idx.span,
                            format!("a stack index must be an integer, not {shown}"),
                        );
                        return unknown(span);
                    }
                }
                let i = if i.ty == Type::InfInt {
                    self.coerce(i, &Type::Bit(32), "the index")
                } else {
                    i
                };
                Expr {
                    kind: ExprKind::Index(Box::new(x), Box::new(i)),
                    ty: elem,
                    span,
                }
            }
            Type::Tuple(ts) => {
                let ts = ts.clone();
                match const_of(&i) {
                    Some(Value::Int(v)) => {
                        match v.to_usize().and_then(|k| ts.get(k).map(|t| (k, t))) {
                            Some((k, t)) => {
                                if let Some(Value::Tuple(vs)) = const_of(&x) {
                                    if let Some(v) = vs.get(k) {
                                        return constant(v.clone(), t.clone(), span);
                                    }
                                }
                                let i = self.coerce(i, &Type::Bit(32), "the index");
                                Expr {
                                    kind: ExprKind::Index(Box::new(x), Box::new(i)),
                                    ty: t.clone(),
                                    span,
                                }
                            }
                            None => {
                                self.d.error(
                                    idx.span,
                                    format!("index {v} is out of bounds for this tuple"),
                                );
                                unknown(span)
                            }
                        }
                    }
                    _ => {
                        self.d
                            .error(idx.span, "tuples can only be indexed with a constant");
                        unknown(span)
                    }
                }
            }
            t => {
                let shown = self.p.show(t);
                self.d.error(
                    base.span,
                    format!("a value of type {shown} cannot be indexed"),
                );
                unknown(span)
            }
        }
    }

    fn slice(&mut self, base: &ast::Expr, hi: &ast::Expr, lo: &ast::Expr, span: Span) -> Expr {
        let x = self.expr(base);
        let h = self.const_u64(hi, "a slice bound");
        let l = self.const_u64(lo, "a slice bound");
        let w = match self.underlying(&x.ty) {
            Type::Bit(w) | Type::Int(w) => w,
            Type::Unknown => return unknown(span),
            t => {
                let shown = self.p.show(&t);
                self.d
                    .error(base.span, format!("cannot slice a value of type {shown}"));
                return unknown(span);
            }
        };
        let (Some(h), Some(l)) = (h, l) else {
            return unknown(span);
        };
        if h < l {
            self.d.error(
                hi.span,
                format!("slice [{h}:{l}]: the high bound is below the low bound"),
            );
            return unknown(span);
        }
        if h >= u64::from(w) {
            self.d.error(
                hi.span,
                format!("slice [{h}:{l}] is out of range for a {w}-bit value"),
            );
            return unknown(span);
        }
        let (h, l) = (h as u32, l as u32);
        let ty = Type::Bit(h - l + 1);
        if let Some(v) = const_of(&x) {
            let from = self.underlying(&x.ty);
            if let Ok(v) = eval::slice(v, &from, h, l) {
                return constant(v, ty, span);
            }
        }
        Expr {
            kind: ExprKind::Slice(Box::new(x), h, l),
            ty,
            span,
        }
    }

    fn unary(&mut self, op: UnOp, a: &ast::Expr, span: Span) -> Expr {
        let x = self.expr(a);
        let ok = match op {
            UnOp::Not => matches!(x.ty, Type::Bool),
            UnOp::BitNot => matches!(x.ty, Type::Bit(_) | Type::Int(_)),
            UnOp::Neg | UnOp::Plus => matches!(x.ty, Type::Bit(_) | Type::Int(_) | Type::InfInt),
        };
        if x.ty == Type::Unknown {
            return unknown(span);
        }
        if !ok {
            let sym = op.symbol();
            let shown = self.p.show(&x.ty);
            let hint = if x.ty == Type::InfInt {
                " (give the value a width)"
            } else {
                ""
            };
            self.d.error(
                span,
                format!("'{sym}' cannot be applied to a value of type {shown}{hint}"),
            );
            return unknown(span);
        }
        let ty = x.ty.clone();
        if let Some(v) = const_of(&x) {
            if let Ok(v) = eval::unary(op, v, &ty) {
                return constant(v, ty, span);
            }
        }
        Expr {
            kind: ExprKind::Unary(op, Box::new(x)),
            ty,
            span,
        }
    }

    /// Brings two numeric operands to one type (literals take the other's width).
    fn unify_operands(
        &mut self,
        op: BinOp,
        a: Expr,
        b: Expr,
        span: Span,
    ) -> Option<(Expr, Expr, Type)> {
        // Arithmetic works on a serializable enum's underlying type.
        let (a, b) = if matches!(op, BinOp::Eq | BinOp::Ne) {
            (a, b)
        } else {
            (self.as_underlying(a), self.as_underlying(b))
        };
        let (a, b) = match (&a.ty, &b.ty) {
            (Type::SerEnum(_, u), t) if **u == *t || *t == Type::InfInt => {
                let u = (**u).clone();
                (self.cast_node(a, &u), b)
            }
            (t, Type::SerEnum(_, u)) if **u == *t || *t == Type::InfInt => {
                let u = (**u).clone();
                (a, self.cast_node(b, &u))
            }
            _ => (a, b),
        };
        if a.ty == Type::Unknown || b.ty == Type::Unknown {
            return None;
        }
        if a.ty == b.ty {
            let t = a.ty.clone();
            return Some((a, b, t));
        }
        match (&a.ty, &b.ty) {
            (Type::InfInt, Type::Bit(_) | Type::Int(_)) => {
                let t = b.ty.clone();
                let a = self.coerce(a, &t, "the operand");
                Some((a, b, t))
            }
            (Type::Bit(_) | Type::Int(_), Type::InfInt) => {
                let t = a.ty.clone();
                let b = self.coerce(b, &t, "the operand");
                Some((a, b, t))
            }
            _ => {
                let (sa, sb) = (self.p.show(&a.ty), self.p.show(&b.ty));
                self.d.error(
                    span,
                    format!(
                        "'{}' needs operands of the same type, not {sa} and {sb} (cast one of them)",
                        op.symbol()
                    ),
                );
                None
            }
        }
    }

    fn binary(&mut self, op: BinOp, a: &ast::Expr, b: &ast::Expr, span: Span) -> Expr {
        use BinOp::*;
        let bin = |kind_op: BinOp, x: Expr, y: Expr, ty: Type| Expr {
            kind: ExprKind::Binary(kind_op, Box::new(x), Box::new(y)),
            ty,
            span,
        };
        match op {
            Mask | Range => {
                self.d.error(
                    span,
                    format!("'{}' can only be used in keysets", op.symbol()),
                );
                unknown(span)
            }
            And | Or => {
                let x = self.expr_as(a, &Type::Bool, "the operand");
                let y = self.expr_as(b, &Type::Bool, "the operand");
                if x.ty == Type::Unknown || y.ty == Type::Unknown {
                    return unknown(span);
                }
                if let (Some(u), Some(v)) = (const_of(&x), const_of(&y)) {
                    if let Ok(r) = eval::binary(op, u, v, &Type::Bool) {
                        return constant(r, Type::Bool, span);
                    }
                }
                bin(op, x, y, Type::Bool)
            }
            Eq | Ne => {
                let x = self.expr(a);
                let y = self.expr(b);
                let (x, y) = match (&x.ty, &y.ty) {
                    (Type::InfInt, _)
                    | (_, Type::InfInt)
                    | (Type::SerEnum(..), _)
                    | (_, Type::SerEnum(..))
                        if x.ty != y.ty =>
                    {
                        match self.unify_operands(op, x, y, span) {
                            Some((x, y, _)) => (x, y),
                            None => return unknown(span),
                        }
                    }
                    (Type::Tuple(_), Type::Struct(_) | Type::Header(_)) => {
                        let t = y.ty.clone();
                        (self.coerce(x, &t, "the operand"), y)
                    }
                    (Type::Struct(_) | Type::Header(_), Type::Tuple(_)) => {
                        let t = x.ty.clone();
                        let y = self.coerce(y, &t, "the operand");
                        (x, y)
                    }
                    _ => (x, y),
                };
                if x.ty == Type::Unknown || y.ty == Type::Unknown {
                    return unknown(span);
                }
                if x.ty != y.ty {
                    let (sa, sb) = (self.p.show(&x.ty), self.p.show(&y.ty));
                    self.d.error(
                        span,
                        format!("cannot compare values of types {sa} and {sb}"),
                    );
                    return unknown(span);
                }
                if matches!(
                    x.ty,
                    Type::Extern(..)
                        | Type::Parser(..)
                        | Type::Control(..)
                        | Type::Package(..)
                        | Type::Table(_)
                        | Type::Void
                ) {
                    let shown = self.p.show(&x.ty);
                    self.d
                        .error(span, format!("values of type {shown} cannot be compared"));
                    return unknown(span);
                }
                if let (Some(u), Some(v)) = (const_of(&x), const_of(&y)) {
                    if let Ok(r) = eval::binary(op, u, v, &x.ty) {
                        return constant(r, Type::Bool, span);
                    }
                }
                bin(op, x, y, Type::Bool)
            }
            Shl | Shr => {
                let x = self.expr(a);
                let x = self.as_underlying(x);
                let y = self.expr(b);
                if x.ty == Type::Unknown || y.ty == Type::Unknown {
                    return unknown(span);
                }
                if !matches!(x.ty, Type::Bit(_) | Type::Int(_) | Type::InfInt) {
                    let shown = self.p.show(&x.ty);
                    self.d
                        .error(a.span, format!("cannot shift a value of type {shown}"));
                    return unknown(span);
                }
                match (&y.ty, const_of(&y)) {
                    (Type::InfInt, Some(Value::Int(v))) if v.sign() == num_bigint::Sign::Minus => {
                        self.d.error(b.span, format!("negative shift amount {v}"));
                        return unknown(span);
                    }
                    (Type::InfInt | Type::Int(_), Some(Value::Int(v)))
                        if v.sign() == num_bigint::Sign::Minus =>
                    {
                        self.d.error(b.span, format!("negative shift amount {v}"));
                        return unknown(span);
                    }
                    // A constant amount is a number whatever its type (p4c makes it unsigned).
                    (Type::InfInt | Type::Int(_), Some(_)) | (Type::Bit(_), _) => {}
                    (Type::InfInt, None) | (Type::Int(_), None) => {
                        self.d.error(
                            b.span,
                            "the shift amount must be an unsigned bit<W> value or a non-negative constant",
                        );
                        return unknown(span);
                    }
                    (t, _) => {
                        let shown = self.p.show(t);
                        self.d
                            .error(b.span, format!("cannot shift by a value of type {shown}"));
                        return unknown(span);
                    }
                }
                if x.ty == Type::InfInt && const_of(&y).is_none() {
                    self.d.error(
                        a.span,
                        "shifting an int by a non-constant amount: give the left operand a width",
                    );
                    return unknown(span);
                }
                if let (Type::Bit(w) | Type::Int(w), Some(Value::Int(v))) = (&x.ty, const_of(&y)) {
                    if *v >= BigInt::from(*w) {
                        let shown = self.p.show(&x.ty);
                        self.d.warning(
                            b.span,
                            format!(
                                "shifting a {shown} value by {v} bits always gives {}",
                                if op == Shl { "0" } else { "0 or -1" }
                            ),
                        );
                    }
                }
                let ty = x.ty.clone();
                if let (Some(u), Some(v)) = (const_of(&x), const_of(&y)) {
                    match eval::binary(op, u, v, &ty) {
                        Ok(r) => return constant(r, ty, span),
                        Err(e) => {
                            self.d.error(span, e.to_string());
                            return unknown(span);
                        }
                    }
                }
                bin(op, x, y, ty)
            }
            Concat => {
                let x = self.expr(a);
                let y = self.expr(b);
                let wa = match self.underlying(&x.ty) {
                    Type::Bit(w) | Type::Int(w) => w,
                    Type::Unknown => return unknown(span),
                    t => {
                        let shown = self.p.show(&t);
                        self.d.error(
                            a.span,
                            format!("'++' needs bit<W> or int<W> operands, not {shown} (give literals a width)"),
                        );
                        return unknown(span);
                    }
                };
                let wb = match self.underlying(&y.ty) {
                    Type::Bit(w) | Type::Int(w) => w,
                    Type::Unknown => return unknown(span),
                    t => {
                        let shown = self.p.show(&t);
                        self.d.error(
                            b.span,
                            format!("'++' needs bit<W> or int<W> operands, not {shown} (give literals a width)"),
                        );
                        return unknown(span);
                    }
                };
                let ty = match self.underlying(&x.ty) {
                    Type::Int(_) => Type::Int(wa + wb),
                    _ => Type::Bit(wa + wb),
                };
                if let (Some(u), Some(v)) = (const_of(&x), const_of(&y)) {
                    let (ta, tb) = (self.underlying(&x.ty), self.underlying(&y.ty));
                    if let Ok(r) = eval::concat(u, &ta, v, &tb, &ty) {
                        return constant(r, ty, span);
                    }
                }
                bin(op, x, y, ty)
            }
            _ => {
                let x = self.expr(a);
                let y = self.expr(b);
                let Some((x, y, ty)) = self.unify_operands(op, x, y, span) else {
                    return unknown(span);
                };
                let ok = match op {
                    AddSat | SubSat => matches!(ty, Type::Bit(_) | Type::Int(_)),
                    _ => matches!(ty, Type::Bit(_) | Type::Int(_) | Type::InfInt),
                };
                if !ok {
                    let shown = self.p.show(&ty);
                    let hint = if ty == Type::InfInt {
                        " (give the values a width)"
                    } else {
                        ""
                    };
                    self.d.error(
                        span,
                        format!(
                            "'{}' cannot be applied to values of type {shown}{hint}",
                            op.symbol()
                        ),
                    );
                    return unknown(span);
                }
                let consts = (const_of(&x).cloned(), const_of(&y).cloned());
                if matches!(op, Div | Mod) && matches!(ty, Type::Int(_)) {
                    self.d.error(
                        span,
                        format!("'{}' is not defined on signed values", op.symbol()),
                    );
                    return unknown(span);
                }
                if let (Some(u), Some(v)) = consts {
                    match eval::binary(op, &u, &v, &ty) {
                        Ok(r) => {
                            let rty = if matches!(op, Lt | Le | Gt | Ge) {
                                Type::Bool
                            } else {
                                ty
                            };
                            return constant(r, rty, span);
                        }
                        Err(e) => {
                            self.d.error(span, e.to_string());
                            return unknown(span);
                        }
                    }
                }
                if let (Div | Mod, Type::Bit(_)) = (op, &ty) {
                    if let Some(e) = divide_by_shifting(op, &x, &y, &ty, span) {
                        return e;
                    }
                }
                if matches!(op, Div | Mod) {
                    // p4c evaluates '/' and '%' at compile time only, after its strength
                    // reduction (above); targets have no divider.
                    self.d.error(
                        span,
                        format!(
                            "'{}' could not be evaluated at compile time (its operands must be constants)",
                            op.symbol()
                        ),
                    );
                    return unknown(span);
                }
                let rty = if matches!(op, Lt | Le | Gt | Ge) {
                    Type::Bool
                } else {
                    ty
                };
                bin(op, x, y, rty)
            }
        }
    }

    fn ternary(&mut self, c: &ast::Expr, a: &ast::Expr, b: &ast::Expr, span: Span) -> Expr {
        let c = self.expr_as(c, &Type::Bool, "the condition");
        let x = self.expr(a);
        let y = self.expr(b);
        if x.ty == Type::InfInt && y.ty == Type::InfInt {
            // p4c requires a width even when the condition is constant.
            self.d.error(
                span,
                "the width of '?:' cannot be inferred: give at least one of the values a width",
            );
            return unknown(span);
        }
        let (x, y, ty) = if x.ty == y.ty {
            let t = x.ty.clone();
            (x, y, t)
        } else if x.ty == Type::Unknown || y.ty == Type::Unknown {
            return unknown(span);
        } else if x.ty.is_integral() && y.ty.is_integral() {
            match self.unify_operands(BinOp::Eq, x, y, span) {
                Some(r) => r,
                None => return unknown(span),
            }
        } else {
            let (sa, sb) = (self.p.show(&x.ty), self.p.show(&y.ty));
            self.d.error(
                span,
                format!("the branches of '?:' have different types {sa} and {sb}"),
            );
            return unknown(span);
        };
        if c.ty == Type::Unknown {
            return unknown(span);
        }
        // A constant condition selects its branch; the other is never evaluated (p4c's
        // constant folding drops it, and with it a table applied only there).
        if let Some(Value::Bool(v)) = const_of(&c) {
            return if *v { x } else { y };
        }
        Expr {
            kind: ExprKind::Ternary(Box::new(c), Box::new(x), Box::new(y)),
            ty,
            span,
        }
    }

    /// Whether an explicit cast from `from` to `to` is legal (spec 8.11 as p4c implements it).
    fn can_cast(&self, from: &Type, to: &Type) -> bool {
        if from == to {
            return true;
        }
        match (from, to) {
            // Width changes keep the signedness; p4c allows them in one step.
            (Type::Bit(_), Type::Bit(_)) | (Type::Int(_), Type::Int(_)) => true,
            (Type::Bit(a), Type::Int(b)) | (Type::Int(a), Type::Bit(b)) => a == b,
            (Type::Bit(1), Type::Bool) | (Type::Bool, Type::Bit(1)) => true,
            (Type::InfInt, Type::Bit(_) | Type::Int(_) | Type::Bool) => true,
            (Type::Bit(_) | Type::Int(_), Type::InfInt) => true,
            (_, Type::SerEnum(_, u)) => {
                **u == *from
                    || *from == Type::InfInt
                    || self.can_cast(from, u) && from.is_integral()
            }
            (Type::SerEnum(_, u), _) => self.can_cast(u, to),
            // A `type` casts to and from the type it was declared over, also when that is
            // another `type` (`type foo_t bar_t;`).
            (_, Type::NewType(id)) if matches!(&self.p.ty(*id).kind, TypeDeclKind::NewType(u) if u == from) => {
                true
            }
            (Type::NewType(id), _) if matches!(&self.p.ty(*id).kind, TypeDeclKind::NewType(u) if u == to) => {
                true
            }
            (_, Type::NewType(_)) => {
                let u = self.underlying(to);
                u == *from || (*from == Type::InfInt && u.is_integral())
            }
            (Type::NewType(_), _) => {
                let u = self.underlying(from);
                u == *to || self.can_cast(&u, to)
            }
            _ => false,
        }
    }

    fn cast(&mut self, to: &Type, x: &ast::Expr, span: Span) -> Expr {
        if matches!(to, Type::Struct(_) | Type::Header(_) | Type::Tuple(_))
            && matches!(
                x.kind,
                ast::ExprKind::List(_) | ast::ExprKind::StructInit(_)
            )
        {
            let mut e = self.expr_as(x, to, "the cast value");
            e.span = span;
            return e;
        }
        let e = self.expr(x);
        if e.ty == Type::Unknown || *to == Type::Unknown {
            return unknown(span);
        }
        if e.ty == Type::InfInt && *to == Type::Bool {
            match const_of(&e) {
                Some(Value::Int(v)) if v.is_zero() || *v == BigInt::from(1) => {}
                _ => {
                    self.d
                        .error(span, "only the constants 0 and 1 can be cast to bool");
                    return unknown(span);
                }
            }
        }
        if !self.can_cast(&e.ty, to) {
            let (sa, sb) = (self.p.show(&e.ty), self.p.show(to));
            self.d.error(span, format!("cannot cast from {sa} to {sb}"));
            return unknown(span);
        }
        let mut r = self.cast_node(e, to);
        r.span = span;
        r
    }

    // ----- l-values -----

    pub fn require_lvalue(&mut self, x: &Expr, what: &str) {
        if x.ty == Type::Unknown {
            return;
        }
        if let Err(reason) = self.lvalue(x) {
            self.d
                .error(x.span, format!("{what} must be an l-value: {reason}"));
        }
    }

    fn lvalue(&self, x: &Expr) -> Result<(), String> {
        match &x.kind {
            ExprKind::Ref(id) => {
                let d = self.p.decl(*id);
                match &d.kind {
                    DeclKind::Var { .. } => Ok(()),
                    DeclKind::Param(p) => match p.dir {
                        Some(Direction::Out) | Some(Direction::InOut) => Ok(()),
                        d => Err(format!(
                            "'{}' is {} parameter",
                            p.name,
                            match d {
                                Some(Direction::In) => "an 'in'",
                                _ => "a directionless",
                            }
                        )),
                    },
                    _ => Err(format!("'{}' is not a variable", d.name)),
                }
            }
            ExprKind::Field(b, _) | ExprKind::Index(b, _) | ExprKind::Slice(b, _, _) => {
                self.lvalue(b)
            }
            ExprKind::StackProp(b, StackProp::Next) => self.lvalue(b),
            ExprKind::Const(_) => Err("it is a constant".to_string()),
            _ => Err("it is a computed value".to_string()),
        }
    }

    // ----- keysets -----

    /// A keyset against the types of a select's expressions or a table's keys; `kinds` are the
    /// keys' match kinds (table entries only).
    pub fn keyset_for(&mut self, e: &ast::Expr, tys: &[Type], kinds: Option<&[String]>) -> Expr {
        let set_ty = Type::Set(Box::new(if tys.len() == 1 {
            tys[0].clone()
        } else {
            Type::Tuple(tys.to_vec())
        }));
        match &e.kind {
            ast::ExprKind::Default | ast::ExprKind::DontCare => Expr {
                kind: if matches!(e.kind, ast::ExprKind::Default) {
                    ExprKind::Default
                } else {
                    ExprKind::DontCare
                },
                ty: set_ty,
                span: e.span,
            },
            // p4c also takes a list `{a, b}` (`{x}` for one key) where a tuple keyset stands.
            ast::ExprKind::Tuple(items) | ast::ExprKind::List(items)
                if tys.len() != 1 || items.len() == 1 =>
            {
                if items.len() != tys.len() {
                    self.d.error(
                        e.span,
                        format!(
                            "the keyset has {} value{}, but {} {} expected",
                            items.len(),
                            if items.len() == 1 { "" } else { "s" },
                            tys.len(),
                            if tys.len() == 1 { "is" } else { "are" }
                        ),
                    );
                    return unknown(e.span);
                }
                let out: Vec<Expr> = items
                    .iter()
                    .enumerate()
                    .map(|(i, it)| self.simple_keyset(it, &tys[i], kinds.and_then(|k| k.get(i))))
                    .collect();
                if tys.len() == 1 {
                    return out.into_iter().next().unwrap_or_else(|| unknown(e.span));
                }
                Expr {
                    kind: ExprKind::Tuple(out),
                    ty: set_ty,
                    span: e.span,
                }
            }
            _ if tys.len() == 1 => self.simple_keyset(e, &tys[0], kinds.and_then(|k| k.first())),
            _ => {
                // A value set over a struct of all the selected fields.
                if let ast::ExprKind::Path(_) = e.kind {
                    let x = self.expr(e);
                    if let Type::Set(elem) = &x.ty {
                        // p4c matches a struct element type field by field.
                        let fields: Vec<Type> = match &**elem {
                            Type::Tuple(ts) => ts.clone(),
                            t => self
                                .p
                                .fields(t)
                                .map(|fs| fs.iter().map(|f| f.ty.clone()).collect())
                                .unwrap_or_default(),
                        };
                        if fields != tys {
                            let shown = self.p.show(elem);
                            self.d.error(
                                e.span,
                                format!("value_set of {shown} does not match the selected values"),
                            );
                        }
                        return Expr { ty: set_ty, ..x };
                    }
                    if x.ty == Type::Unknown {
                        return x;
                    }
                }
                self.d.error(
                    e.span,
                    format!(
                        "a keyset for {} values must be a tuple '( ... )', default or _",
                        tys.len()
                    ),
                );
                unknown(e.span)
            }
        }
    }

    fn simple_keyset(&mut self, e: &ast::Expr, ty: &Type, kind: Option<&String>) -> Expr {
        let set = Type::Set(Box::new(ty.clone()));
        match &e.kind {
            ast::ExprKind::Default | ast::ExprKind::DontCare => Expr {
                kind: if matches!(e.kind, ast::ExprKind::Default) {
                    ExprKind::Default
                } else {
                    ExprKind::DontCare
                },
                ty: set,
                span: e.span,
            },
            ast::ExprKind::Binary(op @ (BinOp::Mask | BinOp::Range), a, b) => {
                if let Some(k) = kind {
                    let ok = match op {
                        BinOp::Mask => matches!(k.as_str(), "ternary" | "lpm" | "optional"),
                        _ => k == "range",
                    };
                    if !ok {
                        let needs = match op {
                            BinOp::Mask => "a ternary, lpm or optional key",
                            _ => "a range key",
                        };
                        self.d.error(
                            e.span,
                            format!("'{}' needs {needs}, and this key is {k}", op.symbol()),
                        );
                    }
                }
                let x = self.mask_operand(a, ty);
                let y = self.mask_operand(b, ty);
                Expr {
                    kind: ExprKind::Binary(*op, Box::new(x), Box::new(y)),
                    ty: set,
                    span: e.span,
                }
            }
            ast::ExprKind::Path(p)
                if matches!(self.lookup(p).and_then(|v| v.first()),
                    Some(Entity::Value(id)) if matches!(self.p.decl(*id).kind, DeclKind::ValueSet { .. })) =>
            {
                let x = self.expr(e);
                if let Type::Set(elem) = &x.ty {
                    // A struct of one field matches a value of that field's type (p4c).
                    let one_field = matches!(elem.as_ref(), Type::Struct(_))
                        && matches!(self.p.fields(elem), Some([f]) if f.ty == *ty);
                    if **elem != *ty && !one_field {
                        let (sa, sb) = (self.p.show(elem), self.p.show(ty));
                        self.d.error(
                            e.span,
                            format!("value_set of {sa} cannot match a value of type {sb}"),
                        );
                    }
                }
                Expr { ty: set, ..x }
            }
            _ => {
                let x = self.keyset_value(e, ty);
                Expr { ty: set, ..x }
            }
        }
    }

    /// An operand of `&&&` or `..`: for a serializable enum key, an integer literal is a value
    /// of its underlying type (p4c: `MyEnum.A &&& 0xff00`), kept as the enum's representation.
    fn mask_operand(&mut self, e: &ast::Expr, ty: &Type) -> Expr {
        match (ty, &e.kind) {
            (Type::SerEnum(_, underlying), ast::ExprKind::Int { .. }) => {
                let x = self.keyset_value(e, underlying);
                Expr {
                    ty: ty.clone(),
                    ..x
                }
            }
            _ => self.keyset_value(e, ty),
        }
    }

    fn keyset_value(&mut self, e: &ast::Expr, ty: &Type) -> Expr {
        let x = self.expr_as(e, ty, "the keyset value");
        if !self.p.is_compile_time_known(&x) && x.ty != Type::Unknown {
            self.d
                .error(e.span, "keyset values must be compile-time known");
        }
        x
    }

    // ----- calls -----

    fn call(
        &mut self,
        callee: &ast::Expr,
        targs: &[ast::Type],
        args: &[ast::Argument],
        span: Span,
    ) -> Expr {
        let targs: Vec<Type> = targs.iter().map(|t| self.resolve_type(t)).collect();
        match &callee.kind {
            ast::ExprKind::Path(p) => {
                let Some(ents) = self.lookup(p).map(|e| e.to_vec()) else {
                    self.d
                        .error(p.name.span, format!("undeclared name '{}'", p.name.name));
                    for a in args {
                        self.expr(&a.value);
                    }
                    return unknown(span);
                };
                match ents.first() {
                    Some(Entity::Type(t)) => {
                        let t = t.clone();
                        let (ty, args) = self.construct(&t, args, span);
                        Expr {
                            kind: ExprKind::Call(Box::new(Call {
                                target: CallTarget::Construct(ty.clone()),
                                type_args: Vec::new(),
                                args,
                                params: Vec::new(),
                            })),
                            ty,
                            span,
                        }
                    }
                    Some(Entity::Generic(id)) => {
                        let id = *id;
                        let t = match self.p.ty(id).kind.clone() {
                            TypeDeclKind::Extern { type_params, .. }
                            | TypeDeclKind::Block { type_params, .. } => {
                                let mut full = targs.clone();
                                for v in type_params.iter().skip(full.len()) {
                                    full.push(Type::Var(*v));
                                }
                                match &self.p.ty(id).kind {
                                    TypeDeclKind::Block {
                                        kind: BlockKind::Parser,
                                        ..
                                    } => Type::Parser(id, full),
                                    TypeDeclKind::Block {
                                        kind: BlockKind::Control,
                                        ..
                                    } => Type::Control(id, full),
                                    TypeDeclKind::Block { .. } => Type::Package(id, full),
                                    _ => Type::Extern(id, full),
                                }
                            }
                            _ => {
                                self.d.error(
                                    p.name.span,
                                    format!("'{}' cannot be called", p.name.name),
                                );
                                return unknown(span);
                            }
                        };
                        let (ty, args) = self.construct(&t, args, span);
                        Expr {
                            kind: ExprKind::Call(Box::new(Call {
                                target: CallTarget::Construct(ty.clone()),
                                type_args: Vec::new(),
                                args,
                                params: Vec::new(),
                            })),
                            ty,
                            span,
                        }
                    }
                    Some(Entity::Value(_)) => {
                        let ids: Vec<DeclId> = ents
                            .iter()
                            .filter_map(|e| match e {
                                Entity::Value(id) => Some(*id),
                                _ => None,
                            })
                            .collect();
                        self.call_decl(&p.name, &ids, targs, args, span)
                    }
                    None => unknown(span),
                }
            }
            ast::ExprKind::Member(base, m) => self.method_call(base, m, targs, args, span),
            _ => {
                self.d
                    .error(callee.span, "this expression cannot be called");
                unknown(span)
            }
        }
    }

    /// Picks the overload whose parameters fit the arguments' number and names.
    fn pick_overload<'a>(
        &self,
        cands: &'a [(DeclId, Vec<Param>)],
        args: &[ast::Argument],
    ) -> Option<&'a (DeclId, Vec<Param>)> {
        cands.iter().find(|(_, ps)| {
            if args.iter().any(|a| a.name.is_some()) {
                args.iter().all(|a| {
                    a.name
                        .as_ref()
                        .is_some_and(|n| ps.iter().any(|p| p.name == n.name))
                }) && ps.iter().all(|p| {
                    p.optional
                        || p.default.is_some()
                        || args
                            .iter()
                            .any(|a| a.name.as_ref().is_some_and(|n| n.name == p.name))
                })
            } else {
                let required = ps
                    .iter()
                    .filter(|p| !p.optional && p.default.is_none())
                    .count();
                args.len() >= required && args.len() <= ps.len()
            }
        })
    }

    fn call_decl(
        &mut self,
        name: &ast::Ident,
        ids: &[DeclId],
        targs: Vec<Type>,
        args: &[ast::Argument],
        span: Span,
    ) -> Expr {
        let cands: Vec<(DeclId, Vec<Param>)> = ids
            .iter()
            .filter_map(|id| match &self.p.decl(*id).kind {
                DeclKind::Action { params, .. } => Some((*id, params.clone())),
                DeclKind::Function { params, .. } => Some((*id, params.clone())),
                DeclKind::ExternFunction(m) => Some((*id, m.params.clone())),
                _ => None,
            })
            .collect();
        if cands.is_empty() {
            self.d.error(
                name.span,
                format!("'{}' is not a function or action", name.name),
            );
            return unknown(span);
        }
        let (id, params) = match self.pick_overload(&cands, args) {
            Some(c) => c.clone(),
            None if cands.len() == 1 => cands[0].clone(),
            None => {
                self.d.error(
                    span,
                    format!(
                        "no declaration of '{}' takes {} arguments",
                        name.name,
                        args.len()
                    ),
                );
                return unknown(span);
            }
        };
        let (target, tps, ret) = match &self.p.decl(id).kind {
            DeclKind::Action { .. } => {
                if self.ctx.in_parser {
                    self.d.error(span, "actions cannot be called from a parser");
                } else if self.ctx.fn_ret.is_some() {
                    self.d.error(span, "functions cannot call actions");
                }
                (CallTarget::Action(id), Vec::new(), Type::Void)
            }
            DeclKind::Function {
                type_params, ret, ..
            } => (CallTarget::Function(id), type_params.clone(), ret.clone()),
            DeclKind::ExternFunction(m) => {
                if m.name == "verify" && !self.ctx.in_parser {
                    self.d.error(span, "verify may only be invoked in parsers");
                }
                (
                    CallTarget::ExternFunction(id),
                    m.type_params.clone(),
                    m.ret.clone().unwrap_or(Type::Void),
                )
            }
            _ => return unknown(span),
        };
        let x = self.finish_call(
            target,
            &tps,
            targs,
            Subst::new(),
            &params,
            ret,
            args,
            span,
            &name.name,
        );
        if name.name == "static_assert"
            && matches!(self.p.decl(id).kind, DeclKind::ExternFunction(_))
        {
            return self.static_assert(x);
        }
        x
    }

    /// `static_assert(check[, message])`, as p4c's front end does it: an error when `check` is
    /// false, and the call becomes the constant `true`.
    fn static_assert(&mut self, x: Expr) -> Expr {
        if let ExprKind::Call(c) = &x.kind {
            match c.args.first() {
                Some(Some(Expr {
                    kind: ExprKind::Const(Value::Bool(false)),
                    ..
                })) => {
                    let message = match c.args.get(1) {
                        Some(Some(Expr {
                            kind: ExprKind::Const(Value::Str(m)),
                            ..
                        })) => format!(": {m}"),
                        _ => String::new(),
                    };
                    self.d
                        .error(x.span, format!("static_assert failed{message}"));
                }
                Some(Some(Expr {
                    kind: ExprKind::Const(Value::Bool(true)),
                    ..
                })) => {}
                Some(Some(e)) if e.ty != Type::Unknown => {
                    self.d.error(
                        e.span,
                        "static_assert needs a condition known at compile time",
                    );
                }
                _ => {}
            }
        }
        Expr {
            kind: ExprKind::Const(Value::Bool(true)),
            ty: Type::Bool,
            span: x.span,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn finish_call(
        &mut self,
        target: CallTarget,
        tps: &[TypeVar],
        targs: Vec<Type>,
        mut sub: Subst,
        params: &[Param],
        ret: Type,
        args: &[ast::Argument],
        span: Span,
        name: &str,
    ) -> Expr {
        if !targs.is_empty() {
            if targs.len() != tps.len() {
                self.d.error(
                    span,
                    format!(
                        "'{name}' takes {} type arguments, not {}",
                        tps.len(),
                        targs.len()
                    ),
                );
                return unknown(span);
            }
            for (v, t) in tps.iter().zip(targs) {
                if t != Type::DontCare {
                    sub.insert(*v, t);
                }
            }
        }
        let c = self.call_args(params, tps, args, span, sub);
        let type_args: Vec<Type> = tps.iter().map(|v| subst(&Type::Var(*v), &c.sub)).collect();
        let ret = subst(&ret, &c.sub);
        Expr {
            kind: ExprKind::Call(Box::new(Call {
                target,
                type_args,
                args: c.args,
                params: c.params,
            })),
            ty: ret,
            span,
        }
    }

    /// The instance a direct invocation `C.apply(...)` applies: `@name("C") C() C_inst;` in
    /// the enclosing parser or control (p4c's `InstantiateDirectCalls`), so control-plane
    /// names are `MyIngress.C.t`.
    fn direct_instance(&mut self, ty: &Type, span: Span) -> Expr {
        let (ty, args) = self.construct(ty, &[], span);
        let (Type::Control(id, _) | Type::Parser(id, _)) = &ty else {
            return unknown(span);
        };
        let base = self.p.ty(*id).name.clone();
        let n = self.ctx.direct_instances.len();
        let name = if n == 0 {
            format!("{base}_inst")
        } else {
            format!("{base}_inst_{n}")
        };
        let annotation = ast::Annotation::name(&base, span);
        let inst = self.add_decl(Decl {
            name,
            span,
            annotations: vec![annotation],
            kind: DeclKind::Instance {
                ty: ty.clone(),
                args,
                methods: Vec::new(),
                via_typedef: false,
            },
        });
        self.ctx.direct_instances.push(inst);
        Expr {
            kind: ExprKind::Ref(inst),
            ty,
            span,
        }
    }

    fn method_call(
        &mut self,
        base: &ast::Expr,
        m: &ast::Ident,
        targs: Vec<Type>,
        args: &[ast::Argument],
        span: Span,
    ) -> Expr {
        let name = m.name.as_str();
        if SIZE_METHODS.contains(&name) {
            let ty = match self.type_of_base(base) {
                Some(t) => t,
                None => self.expr(base).ty,
            };
            if !args.is_empty() {
                self.d.error(span, format!("'{name}' takes no arguments"));
            }
            if ty == Type::Unknown {
                return unknown(span);
            }
            let bits = match self.p.width_of(&ty) {
                Some(b) => b,
                None => {
                    let shown = self.p.show(&ty);
                    self.d
                        .error(span, format!("'{name}' is not defined for type {shown}"));
                    return unknown(span);
                }
            };
            // Varbit fields count as empty in the minimum and full in the maximum.
            let min_bits = bits - self.varbit_bits(&ty);
            let v = match name {
                "minSizeInBits" => min_bits,
                "minSizeInBytes" => min_bits.div_ceil(8),
                "maxSizeInBits" => bits,
                _ => bits.div_ceil(8),
            };
            return constant(Value::Int(BigInt::from(v)), Type::InfInt, span);
        }
        let recv = match self.type_of_base(base) {
            None => self.expr(base),
            // p4c's direct invocation: `C.apply(...)` applies an instance made for the call.
            Some(t @ (Type::Control(..) | Type::Parser(..))) if name == "apply" => {
                self.direct_instance(&t, base.span)
            }
            Some(_) => {
                self.d
                    .error(m.span, format!("'{name}' cannot be called on a type"));
                return unknown(span);
            }
        };
        let call = |target: CallTarget, ty: Type| Expr {
            kind: ExprKind::Call(Box::new(Call {
                target,
                type_args: Vec::new(),
                args: Vec::new(),
                params: Vec::new(),
            })),
            ty,
            span,
        };
        match (&recv.ty, name) {
            (Type::Unknown, _) => {
                for a in args {
                    self.expr(&a.value);
                }
                unknown(span)
            }
            (Type::Header(_) | Type::HeaderUnion(_), "isValid")
            | (Type::Header(_), "setValid" | "setInvalid") => {
                if !args.is_empty() {
                    self.d.error(span, format!("'{name}' takes no arguments"));
                }
                let (b, ty) = match name {
                    "isValid" => (Builtin::IsValid, Type::Bool),
                    "setValid" => (Builtin::SetValid, Type::Void),
                    _ => (Builtin::SetInvalid, Type::Void),
                };
                if b != Builtin::IsValid {
                    self.require_lvalue(&recv, &format!("the header whose {name}() is called"));
                }
                call(CallTarget::Builtin(recv, b), ty)
            }
            (Type::Stack(..), "push_front" | "pop_front") => {
                let b = if name == "push_front" {
                    Builtin::PushFront
                } else {
                    Builtin::PopFront
                };
                self.require_lvalue(&recv, &format!("the stack whose {name}() is called"));
                if self.ctx.in_parser {
                    self.d
                        .error(m.span, format!("'{name}' cannot be used in a parser"));
                }
                if args.len() != 1 {
                    self.d.error(span, format!("'{name}' takes one argument"));
                    return unknown(span);
                }
                let count = self.expr(&args[0].value);
                let count = match const_of(&count) {
                    Some(Value::Int(v)) if v.sign() != num_bigint::Sign::Minus => {
                        constant(Value::Int(v.clone()), Type::InfInt, count.span)
                    }
                    _ => {
                        self.d.error(
                            args[0].value.span,
                            format!("the argument of '{name}' must be a non-negative constant"),
                        );
                        return unknown(span);
                    }
                };
                Expr {
                    kind: ExprKind::Call(Box::new(Call {
                        target: CallTarget::Builtin(recv, b),
                        type_args: Vec::new(),
                        args: vec![Some(count)],
                        params: Vec::new(),
                    })),
                    ty: Type::Void,
                    span,
                }
            }
            (Type::Extern(id, eargs), _) => {
                let (id, eargs) = (*id, eargs.clone());
                let TypeDeclKind::Extern {
                    type_params,
                    methods,
                    ..
                } = self.p.ty(id).kind.clone()
                else {
                    return unknown(span);
                };
                let cands: Vec<(DeclId, Vec<Param>)> = methods
                    .iter()
                    .enumerate()
                    .filter(|(_, x)| x.name == name)
                    .map(|(i, x)| (DeclId(i as u32), x.params.clone()))
                    .collect();
                if cands.is_empty() {
                    let ename = self.p.ty(id).name.clone();
                    self.d
                        .error(m.span, format!("extern '{ename}' has no method '{name}'"));
                    for a in args {
                        self.expr(&a.value);
                    }
                    return unknown(span);
                }
                let index = match self.pick_overload(&cands, args) {
                    Some((i, _)) => i.0 as usize,
                    None if cands.len() == 1 => cands[0].0 .0 as usize,
                    None => {
                        self.d.error(
                            span,
                            format!("no method '{name}' takes {} arguments", args.len()),
                        );
                        return unknown(span);
                    }
                };
                let method = methods[index].clone();
                let mut sub = Subst::new();
                for (v, t) in type_params.iter().zip(eargs) {
                    if t != Type::Var(*v) && t != Type::DontCare {
                        sub.insert(*v, t);
                    }
                }
                self.finish_call(
                    CallTarget::Method {
                        receiver: recv,
                        extern_ty: id,
                        index,
                    },
                    &method.type_params,
                    targs,
                    sub,
                    &method.params,
                    method.ret.clone().unwrap_or(Type::Void),
                    args,
                    span,
                    name,
                )
            }
            (Type::Parser(id, bargs) | Type::Control(id, bargs), "apply") => {
                let (id, bargs) = (*id, bargs.clone());
                let is_parser = matches!(recv.ty, Type::Parser(..));
                if is_parser && !self.ctx.in_parser {
                    self.d
                        .error(span, "a parser can only be applied from a parser state");
                }
                if !is_parser
                    && (!self.ctx.in_control || self.ctx.in_action || self.ctx.fn_ret.is_some())
                {
                    self.d.error(
                        span,
                        "a control can only be applied from a control's apply block",
                    );
                }
                let TypeDeclKind::Block {
                    type_params,
                    params,
                    ..
                } = self.p.ty(id).kind.clone()
                else {
                    return unknown(span);
                };
                let sub: Subst = type_params.iter().copied().zip(bargs).collect();
                self.finish_call(
                    CallTarget::Apply(recv),
                    &[],
                    targs,
                    sub,
                    &params,
                    Type::Void,
                    args,
                    span,
                    "apply",
                )
            }
            (Type::Table(t), "apply") => {
                let t = *t;
                if !args.is_empty() {
                    self.d.error(span, "a table's apply() takes no arguments");
                }
                if !self.ctx.in_control || self.ctx.in_action || self.ctx.fn_ret.is_some() {
                    self.d.error(
                        span,
                        "a table can only be applied from a control's apply block",
                    );
                }
                call(CallTarget::Apply(recv), Type::TableApply(t))
            }
            (t, _) => {
                let shown = self.p.show(t);
                self.d
                    .error(m.span, format!("{shown} has no method '{name}'"));
                for a in args {
                    self.expr(&a.value);
                }
                unknown(span)
            }
        }
    }

    /// Total maximum width of varbit fields of a header (or struct of headers).
    fn varbit_bits(&self, ty: &Type) -> u64 {
        match ty {
            Type::Varbit(w) => u64::from(*w),
            Type::Header(_) | Type::Struct(_) => self
                .p
                .fields(ty)
                .map(|fs| fs.iter().map(|f| self.varbit_bits(&f.ty)).sum())
                .unwrap_or(0),
            Type::Stack(e, n) => self.varbit_bits(e) * u64::from(*n),
            _ => 0,
        }
    }

    /// Checks constructor arguments of an extern, parser, control or package type; infers the
    /// type's missing type arguments from them.
    pub fn construct(
        &mut self,
        ty: &Type,
        args: &[ast::Argument],
        span: Span,
    ) -> (Type, Vec<Option<Expr>>) {
        let (id, targs) = match ty {
            Type::Extern(id, a)
            | Type::Parser(id, a)
            | Type::Control(id, a)
            | Type::Package(id, a) => (*id, a.clone()),
            Type::Unknown => {
                for a in args {
                    self.expr(&a.value);
                }
                return (Type::Unknown, Vec::new());
            }
            t => {
                let shown = self.p.show(t);
                self.d.error(
                    span,
                    format!("values of type {shown} cannot be instantiated"),
                );
                return (Type::Unknown, Vec::new());
            }
        };
        let name = self.p.ty(id).name.clone();
        let (type_params, params) = match self.p.ty(id).kind.clone() {
            TypeDeclKind::Extern {
                type_params, ctors, ..
            } => {
                let cands: Vec<(DeclId, Vec<Param>)> = ctors
                    .iter()
                    .enumerate()
                    .map(|(i, c)| (DeclId(i as u32), c.params.clone()))
                    .collect();
                match self.pick_overload(&cands, args) {
                    Some((_, ps)) => (type_params, ps.clone()),
                    None => {
                        self.d.error(
                            span,
                            format!("no constructor of '{name}' takes {} arguments", args.len()),
                        );
                        return (Type::Unknown, Vec::new());
                    }
                }
            }
            TypeDeclKind::Block {
                type_params,
                ctor_params,
                implementation,
                ..
            } => {
                if implementation.is_none() && !matches!(ty, Type::Package(..)) {
                    self.d.error(
                        span,
                        format!(
                            "'{name}' is a type without implementation and cannot be instantiated"
                        ),
                    );
                    return (Type::Unknown, Vec::new());
                }
                (type_params, ctor_params)
            }
            _ => return (Type::Unknown, Vec::new()),
        };
        let mut sub = Subst::new();
        for (v, t) in type_params.iter().zip(targs) {
            if t != Type::Var(*v) && t != Type::DontCare {
                sub.insert(*v, t);
            }
        }
        let c = self.call_args(&params, &[], args, span, sub);
        for a in c.args.iter().flatten() {
            if a.ty != Type::Unknown && !self.p.is_compile_time_known(a) {
                self.d
                    .error(a.span, "constructor arguments must be compile-time known");
            }
        }
        let full: Vec<Type> = type_params
            .iter()
            .map(|v| subst(&Type::Var(*v), &c.sub))
            .collect();
        if matches!(ty, Type::Package(..)) {
            for (v, t) in type_params.iter().zip(&full) {
                if has_vars(t) {
                    let vn = self
                        .p
                        .type_vars
                        .get(v.0 as usize)
                        .cloned()
                        .unwrap_or_default();
                    self.d.error(
                        span,
                        format!("cannot infer type argument '{vn}' of package '{name}'"),
                    );
                }
            }
        }
        let out = match ty {
            Type::Extern(..) => Type::Extern(id, full),
            Type::Parser(..) => Type::Parser(id, full),
            Type::Control(..) => Type::Control(id, full),
            _ => Type::Package(id, full),
        };
        (out, c.args)
    }

    /// Matches arguments to parameters (by position or by name), checks directions and types,
    /// infers type variables (first from typed arguments, then integer literals take the
    /// inferred widths) and fills in default values.
    pub fn call_args(
        &mut self,
        params: &[Param],
        tps: &[TypeVar],
        args: &[ast::Argument],
        span: Span,
        mut sub: Subst,
    ) -> CallArgs {
        let mut matched: Vec<Option<&ast::Argument>> = vec![None; params.len()];
        let named = args.iter().any(|a| a.name.is_some());
        if let Some(a) = args.iter().find(|a| a.name.is_none()).filter(|_| named) {
            self.d.error(
                a.value.span,
                "named and positional arguments cannot be mixed",
            );
            for a in args {
                self.expr(&a.value);
            }
            return CallArgs {
                args: vec![None; params.len()],
                params: params.to_vec(),
                sub,
            };
        }
        if named {
            for a in args {
                let Some(n) = &a.name else {
                    continue;
                };
                match params.iter().position(|p| p.name == n.name) {
                    Some(i) if matched[i].is_some() => {
                        self.d
                            .error(n.span, format!("argument '{}' is given twice", n.name));
                    }
                    Some(i) => matched[i] = Some(a),
                    None => {
                        self.d
                            .error(n.span, format!("there is no parameter named '{}'", n.name));
                    }
                }
            }
        } else {
            if args.len() > params.len() {
                self.d.error(
                    args[params.len()].value.span,
                    format!(
                        "too many arguments: expected {}, got {}",
                        params.len(),
                        args.len()
                    ),
                );
            }
            for (i, a) in args.iter().enumerate().take(params.len()) {
                matched[i] = Some(a);
            }
        }
        let mut out: Vec<Option<Expr>> = vec![None; params.len()];
        let mut pending: Vec<(usize, Expr)> = Vec::new();
        for (i, p) in params.iter().enumerate() {
            let Some(a) = matched[i] else {
                if let Some(d) = &p.default {
                    out[i] = Some(d.clone());
                } else if !p.optional {
                    self.d
                        .error(span, format!("missing argument for parameter '{}'", p.name));
                }
                continue;
            };
            let outish = matches!(p.dir, Some(Direction::Out) | Some(Direction::InOut));
            let ty = subst(&p.ty, &sub);
            if let ast::ExprKind::DontCare = a.value.kind {
                if p.dir != Some(Direction::Out) {
                    self.d.error(
                        a.value.span,
                        format!(
                            "'_' can only be passed to an out parameter, and '{}' is {}",
                            p.name,
                            dir_name(p.dir)
                        ),
                    );
                }
                out[i] = Some(Expr {
                    kind: ExprKind::DontCare,
                    ty: ty.clone(),
                    span: a.value.span,
                });
                continue;
            }
            if !has_vars(&ty) && !outish {
                out[i] = Some(self.expr_as(&a.value, &ty, &format!("argument '{}'", p.name)));
                continue;
            }
            let x = self.expr(&a.value);
            if outish {
                self.require_lvalue(
                    &x,
                    &format!(
                        "the argument for {} parameter '{}'",
                        dir_name(p.dir),
                        p.name
                    ),
                );
            }
            if x.ty == Type::Unknown {
                out[i] = Some(x);
                continue;
            }
            if has_vars(&ty) {
                if contains_infint(&x.ty) && !outish {
                    pending.push((i, x));
                    continue;
                }
                if !unify(&ty, &x.ty, &mut sub, &self.p) {
                    let x = self.mismatch(x, &ty, &format!("argument '{}'", p.name));
                    out[i] = Some(x);
                    continue;
                }
                out[i] = Some(x);
            } else if x.ty != ty {
                let x = self.mismatch(
                    x,
                    &ty,
                    &format!(
                        "the argument for {} parameter '{}'",
                        dir_name(p.dir),
                        p.name
                    ),
                );
                out[i] = Some(x);
            } else {
                out[i] = Some(x);
            }
        }
        for (i, x) in pending {
            let p = &params[i];
            let ty = subst(&p.ty, &sub);
            if has_vars(&ty) {
                // Type parameters of the callee itself must be inferable; those left open by
                // an extern instance (`register<bit<32>>` has no index type) accept `int`.
                let own = match &ty {
                    Type::Var(v) => tps.contains(v),
                    _ => true,
                };
                if own {
                    self.d.error(
                        x.span,
                        format!(
                            "cannot infer a width for the type of parameter '{}' from an integer literal: give it a width (e.g. 32w0)",
                            p.name
                        ),
                    );
                    out[i] = Some(unknown(x.span));
                    continue;
                }
                unify(&ty, &x.ty, &mut sub, &self.p);
                out[i] = Some(x);
            } else {
                out[i] = Some(self.coerce(x, &ty, &format!("argument '{}'", p.name)));
            }
        }
        // Type variables used only by omitted optional parameters stay don't-care (p4c).
        for (p, a) in params.iter().zip(&out) {
            if a.is_none() && p.optional {
                if let Type::Var(v) = p.ty {
                    sub.entry(v).or_insert(Type::DontCare);
                }
            }
        }
        for v in tps {
            if !sub.contains_key(v) {
                let vn = self
                    .p
                    .type_vars
                    .get(v.0 as usize)
                    .cloned()
                    .unwrap_or_default();
                if !out.iter().flatten().any(|x| x.ty == Type::Unknown) {
                    self.d
                        .error(span, format!("cannot infer type argument '{vn}'"));
                }
            }
        }
        let params = params
            .iter()
            .map(|p| Param {
                ty: subst(&p.ty, &sub),
                ..p.clone()
            })
            .collect();
        CallArgs {
            args: out,
            params,
            sub,
        }
    }
}

/// Binds type variables of `want` so that it equals `got`; parser and control types match by
/// signature (an implementation matches the declared type of a package parameter).
pub(crate) fn unify(want: &Type, got: &Type, sub: &mut Subst, p: &Program) -> bool {
    match (want, got) {
        (_, Type::Unknown) | (Type::Unknown, _) | (Type::DontCare, _) => true,
        (Type::Var(v), _) => match sub.get(v).cloned() {
            Some(Type::Var(w)) if w == *v && !mentions(got, *v, sub) => {
                sub.insert(*v, got.clone());
                true
            }
            Some(Type::Var(w)) if w == *v => *got == Type::Var(*v),
            Some(b) => unify(&b, got, sub, p),
            None if *got == Type::Var(*v) => true,
            // A variable bound to a type containing itself would make substitution endless.
            None if mentions(got, *v, sub) => false,
            None => {
                sub.insert(*v, got.clone());
                true
            }
        },
        (Type::Stack(a, n), Type::Stack(b, m)) => n == m && unify(a, b, sub, p),
        (Type::Tuple(a), Type::Tuple(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| unify(x, y, sub, p))
        }
        (Type::Extern(a, xs), Type::Extern(b, ys)) => {
            a == b && xs.iter().zip(ys).all(|(x, y)| unify(x, y, sub, p))
        }
        (Type::Parser(a, xs), Type::Parser(b, ys))
        | (Type::Control(a, xs), Type::Control(b, ys)) => {
            if a == b {
                return xs.iter().zip(ys).all(|(x, y)| unify(x, y, sub, p));
            }
            let (Some(pa), Some(pb)) = (block_params(p, *a, xs), block_params(p, *b, ys)) else {
                return false;
            };
            pa.len() == pb.len()
                && pa
                    .iter()
                    .zip(&pb)
                    .all(|(x, y)| dir_fits(x.dir, y.dir) && unify(&x.ty, &y.ty, sub, p))
        }
        (Type::Package(a, xs), Type::Package(b, ys)) => {
            a == b && xs.iter().zip(ys).all(|(x, y)| unify(x, y, sub, p))
        }
        _ => want == got,
    }
}

/// Whether a block parameter of direction `got` implements one declared `want`: the same
/// direction, or `in` for `inout` (the block only reads it; p4c's test programs pass
/// `control vrfy(in H h, inout M m)` as V1Switch's `VerifyChecksum`).
fn dir_fits(want: Option<Direction>, got: Option<Direction>) -> bool {
    want == got || (want == Some(Direction::InOut) && got == Some(Direction::In))
}

/// Whether `t` (with `sub` applied) contains the type variable `v`.
fn mentions(t: &Type, v: TypeVar, sub: &Subst) -> bool {
    match t {
        Type::Var(w) if *w == v => true,
        Type::Var(w) => match sub.get(w) {
            Some(Type::Var(x)) if x == w => false,
            Some(b) => mentions(b, v, sub),
            None => false,
        },
        Type::Stack(e, _) | Type::Set(e) => mentions(e, v, sub),
        Type::Tuple(ts)
        | Type::Extern(_, ts)
        | Type::Parser(_, ts)
        | Type::Control(_, ts)
        | Type::Package(_, ts) => ts.iter().any(|t| mentions(t, v, sub)),
        _ => false,
    }
}

fn block_params(p: &Program, id: TypeId, args: &[Type]) -> Option<Vec<Param>> {
    match &p.ty(id).kind {
        TypeDeclKind::Block {
            type_params,
            params,
            ..
        } => {
            let s: Subst = type_params
                .iter()
                .copied()
                .zip(args.iter().cloned())
                .collect();
            Some(
                params
                    .iter()
                    .map(|x| Param {
                        ty: subst(&x.ty, &s),
                        ..x.clone()
                    })
                    .collect(),
            )
        }
        _ => None,
    }
}
