//! Name resolution and checking of declarations and statements; expressions are in `expr.rs`.
//! One pass in source order, as P4 requires declaration before use (parser states excepted).

use crate::eval;
use crate::ir::*;
use num_bigint::BigInt;
use num_traits::ToPrimitive;
use p4_syntax::ast::{self, Direction};
use p4_syntax::{Diagnostics, Span};
use std::collections::HashMap;

/// What a name denotes in a scope.
#[derive(Clone, Debug)]
pub(crate) enum Entity {
    /// A type without type parameters, or a typedef (already resolved).
    Type(Type),
    /// A generic struct/header, extern, or parser/control/package type: needs type arguments
    /// or inference.
    Generic(TypeId),
    /// Values; extern functions and functions may be overloaded by arity.
    Value(DeclId),
}

#[derive(Default)]
pub(crate) struct Scope {
    names: HashMap<String, Vec<Entity>>,
}

/// Where the statements being checked are.
#[derive(Clone, Debug, Default)]
pub(crate) struct Ctx {
    pub in_parser: bool,
    pub in_control: bool,
    pub in_action: bool,
    /// `Some` inside a function body: its return type.
    pub fn_ret: Option<Type>,
    /// Parser states by name, for transitions.
    pub states: HashMap<String, DeclId>,
    /// Checking the expression of a `switch` (where `action_run` may appear).
    pub switch_expr: bool,
    /// The instances `C.apply()` made in the parser or control being checked, for its locals.
    pub direct_instances: Vec<DeclId>,
    /// How many loops the statement being checked is in (`break` and `continue` need one).
    pub loops: usize,
}

pub(crate) struct Checker<'d> {
    pub p: Program,
    pub d: &'d mut Diagnostics,
    pub scopes: Vec<Scope>,
    pub ctx: Ctx,
    /// Specialisations of generic structs and headers.
    spec_cache: HashMap<(TypeId, Vec<Type>), TypeId>,
    /// What each specialisation specialises: the generic type and its arguments.
    spec_origin: HashMap<TypeId, (TypeId, Vec<Type>)>,
}

pub(crate) fn dir_name(d: Option<Direction>) -> &'static str {
    match d {
        Some(Direction::In) => "in",
        Some(Direction::Out) => "out",
        Some(Direction::InOut) => "inout",
        None => "directionless",
    }
}

impl<'d> Checker<'d> {
    pub fn new(d: &'d mut Diagnostics) -> Self {
        Checker {
            p: Program::default(),
            d,
            scopes: vec![Scope::default()],
            ctx: Ctx::default(),
            spec_cache: HashMap::new(),
            spec_origin: HashMap::new(),
        }
    }

    // ----- arenas and scopes -----

    pub fn add_type(&mut self, t: TypeDecl) -> TypeId {
        self.p.types.push(t);
        TypeId(self.p.types.len() as u32 - 1)
    }

    pub fn add_decl(&mut self, d: Decl) -> DeclId {
        self.p.decls.push(d);
        DeclId(self.p.decls.len() as u32 - 1)
    }

    pub fn push(&mut self) {
        self.scopes.push(Scope::default());
    }

    pub fn pop(&mut self) {
        self.scopes.pop();
    }

    fn overloadable(&self, e: &Entity) -> Option<usize> {
        match e {
            Entity::Value(id) => match &self.p.decl(*id).kind {
                DeclKind::ExternFunction(m) => Some(m.params.len()),
                DeclKind::Function { params, .. } => Some(params.len()),
                _ => None,
            },
            _ => None,
        }
    }

    /// Declares `name` in the innermost scope; a second declaration of a name in the same scope
    /// is an error unless both are functions with different numbers of parameters.
    pub fn declare(&mut self, name: &ast::Ident, e: Entity) {
        let arity = self.overloadable(&e);
        let clash = match self.scopes.last().and_then(|s| s.names.get(&name.name)) {
            Some(prev) => prev.iter().any(|p| {
                arity.is_none() || self.overloadable(p).map_or(true, |a| Some(a) == arity)
            }),
            None => false,
        };
        if clash {
            self.d.error(
                name.span,
                format!("duplicate declaration of '{}'", name.name),
            );
            return;
        }
        if let Some(s) = self.scopes.last_mut() {
            s.names.entry(name.name.clone()).or_default().push(e);
        }
    }

    pub fn lookup(&self, path: &ast::Path) -> Option<&[Entity]> {
        if path.global {
            return self
                .scopes
                .first()?
                .names
                .get(&path.name.name)
                .map(|v| v.as_slice());
        }
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.names.get(&path.name.name))
            .map(|v| v.as_slice())
    }

    pub fn lookup_name(&self, name: &str) -> Option<&[Entity]> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.names.get(name))
            .map(|v| v.as_slice())
    }

    // ----- types -----

    pub fn new_type_var(&mut self, name: &ast::Ident) -> TypeVar {
        self.p.type_vars.push(name.name.clone());
        let v = TypeVar(self.p.type_vars.len() as u32 - 1);
        self.declare(name, Entity::Type(Type::Var(v)));
        v
    }

    /// A compile-time known non-negative integer (widths, sizes, indices).
    pub fn const_u64(&mut self, e: &ast::Expr, what: &str) -> Option<u64> {
        let x = self.expr(e);
        match &x.kind {
            ExprKind::Const(Value::Int(v)) => match v.to_u64() {
                Some(n) => Some(n),
                None => {
                    self.d.error(
                        e.span,
                        format!("{what} must be a non-negative integer, not {v}"),
                    );
                    None
                }
            },
            _ if x.ty == Type::Unknown => None,
            _ => {
                self.d.error(
                    e.span,
                    format!("{what} must be a compile-time known integer"),
                );
                None
            }
        }
    }

    fn width(&mut self, e: &ast::Expr, signed: bool) -> Option<u32> {
        let w = self.const_u64(e, "a width")?;
        let min = if signed { 1 } else { 0 };
        match u32::try_from(w) {
            Ok(w) if w >= min && w <= 1 << 16 => Some(w),
            _ => {
                self.d.error(e.span, format!("invalid width {w}"));
                None
            }
        }
    }

    pub fn resolve_type(&mut self, t: &ast::Type) -> Type {
        use ast::TypeKind as K;
        match &t.kind {
            K::Bool => Type::Bool,
            K::Error => Type::Error,
            K::MatchKind => Type::MatchKind,
            K::String => Type::String,
            K::Void => Type::Void,
            K::DontCare => Type::DontCare,
            K::InfInt => Type::InfInt,
            K::Bit(e) => self.width(e, false).map_or(Type::Unknown, Type::Bit),
            K::Int(e) => self.width(e, true).map_or(Type::Unknown, Type::Int),
            K::Varbit(e) => self.width(e, false).map_or(Type::Unknown, Type::Varbit),
            K::Stack(elem, size) => {
                let elem = self.resolve_type(elem);
                let n = self.const_u64(size, "a header stack size");
                // Header stacks, and arrays of other data (P4_16 1.2.5's `T[N]`, `bit<8>[16]`).
                if matches!(
                    elem,
                    Type::Void
                        | Type::String
                        | Type::Extern(..)
                        | Type::Parser(..)
                        | Type::Control(..)
                        | Type::Package(..)
                        | Type::Table(_)
                ) {
                    self.d.error(
                        t.span,
                        format!("an array of {} elements", self.p.show(&elem)),
                    );
                    return Type::Unknown;
                }
                match n.and_then(|n| u32::try_from(n).ok()) {
                    Some(n) => Type::Stack(Box::new(elem), n),
                    None => Type::Unknown,
                }
            }
            K::Tuple(ts) => Type::Tuple(ts.iter().map(|t| self.resolve_type(t)).collect()),
            K::List(_) => {
                self.d.unsupported(t.span, "list<T> types");
                Type::Unknown
            }
            K::Name(path) => match self.lookup(path).and_then(|v| v.first()).cloned() {
                Some(Entity::Type(ty)) => ty,
                Some(Entity::Generic(id)) => {
                    // Generic externs and blocks may leave their parameters to inference.
                    match self.generic_type(id, Vec::new(), t.span) {
                        Some(ty) => ty,
                        None => Type::Unknown,
                    }
                }
                Some(Entity::Value(_)) => {
                    self.d.error(
                        path.name.span,
                        format!("'{}' is not a type", path.name.name),
                    );
                    Type::Unknown
                }
                None => {
                    self.d.error(
                        path.name.span,
                        format!("undeclared type '{}'", path.name.name),
                    );
                    Type::Unknown
                }
            },
            K::Specialized(path, args) => {
                let args: Vec<Type> = args.iter().map(|a| self.resolve_type(a)).collect();
                match self.lookup(path).and_then(|v| v.first()).cloned() {
                    Some(Entity::Generic(id)) => {
                        self.generic_type(id, args, t.span).unwrap_or(Type::Unknown)
                    }
                    Some(_) => {
                        self.d.error(
                            path.name.span,
                            format!("'{}' has no type parameters", path.name.name),
                        );
                        Type::Unknown
                    }
                    None => {
                        self.d.error(
                            path.name.span,
                            format!("undeclared type '{}'", path.name.name),
                        );
                        Type::Unknown
                    }
                }
            }
        }
    }

    /// `t` with `sub` applied, also inside the generic structs and headers it names: a field
    /// `standard_t<T> s;` of `struct headers_t<T>` is `standard_t<bit<8>>` in
    /// `headers_t<bit<8>>`.
    fn respecialize(&mut self, t: &Type, sub: &Subst, span: Span) -> Type {
        match t {
            Type::Header(sid) | Type::Struct(sid) | Type::HeaderUnion(sid) => {
                match self.spec_origin.get(sid).cloned() {
                    Some((generic, args)) if args.iter().any(has_vars) => {
                        let args = args.iter().map(|a| subst(a, sub)).collect();
                        self.generic_type(generic, args, span)
                            .unwrap_or_else(|| t.clone())
                    }
                    _ => t.clone(),
                }
            }
            Type::Stack(e, n) => Type::Stack(Box::new(self.respecialize(e, sub, span)), *n),
            _ => subst(t, sub),
        }
    }

    /// A generic type applied to `args`; externs and blocks accept fewer arguments (the rest
    /// are inferred at each use), structs need all of them.
    fn generic_type(&mut self, id: TypeId, args: Vec<Type>, span: Span) -> Option<Type> {
        let name = self.p.ty(id).name.clone();
        match self.p.ty(id).kind.clone() {
            TypeDeclKind::Generic {
                type_params,
                kind,
                fields,
            } => {
                if args.len() != type_params.len() {
                    self.d.error(
                        span,
                        format!(
                            "'{name}' takes {} type arguments, not {}",
                            type_params.len(),
                            args.len()
                        ),
                    );
                    return None;
                }
                let key = (id, args.clone());
                let sid = match self.spec_cache.get(&key) {
                    Some(s) => *s,
                    None => {
                        let sub: Subst = type_params.iter().copied().zip(args.clone()).collect();
                        let fields: Vec<Field> = fields
                            .iter()
                            .map(|f| Field {
                                ty: self.respecialize(&f.ty, &sub, span),
                                ..f.clone()
                            })
                            .collect();
                        let shown: Vec<String> = args.iter().map(|a| self.p.show(a)).collect();
                        let decl = self.p.ty(id).clone();
                        let k = match kind {
                            ast::StructKind::Struct => TypeDeclKind::Struct(fields),
                            ast::StructKind::Header => TypeDeclKind::Header(fields),
                            ast::StructKind::HeaderUnion => TypeDeclKind::HeaderUnion(fields),
                        };
                        let sid = self.add_type(TypeDecl {
                            name: format!("{name}<{}>", shown.join(", ")),
                            span: decl.span,
                            annotations: decl.annotations,
                            kind: k,
                        });
                        self.spec_cache.insert(key, sid);
                        self.spec_origin.insert(sid, (id, args));
                        sid
                    }
                };
                Some(match kind {
                    ast::StructKind::Struct => Type::Struct(sid),
                    ast::StructKind::Header => Type::Header(sid),
                    ast::StructKind::HeaderUnion => Type::HeaderUnion(sid),
                })
            }
            TypeDeclKind::Extern { type_params, .. } | TypeDeclKind::Block { type_params, .. } => {
                if args.len() > type_params.len() {
                    self.d.error(
                        span,
                        format!(
                            "'{name}' takes {} type arguments, not {}",
                            type_params.len(),
                            args.len()
                        ),
                    );
                    return None;
                }
                let mut full = args;
                for v in type_params.iter().skip(full.len()) {
                    full.push(Type::Var(*v));
                }
                Some(match &self.p.ty(id).kind {
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
                })
            }
            _ => None,
        }
    }

    pub fn params(&mut self, ps: &[ast::Param], declare: bool) -> Vec<Param> {
        let mut out = Vec::new();
        for p in ps {
            let ty = self.resolve_type(&p.ty);
            let optional = ast::find_annotation(&p.annotations, "optional").is_some();
            let default = p
                .default
                .as_ref()
                .map(|e| self.expr_as(e, &ty, "a default value"));
            if let Some(d) = &p.default {
                if matches!(p.direction, Some(Direction::Out) | Some(Direction::InOut)) {
                    self.d.error(
                        d.span,
                        format!(
                            "{} parameter '{}' cannot have a default value",
                            dir_name(p.direction),
                            p.name.name
                        ),
                    );
                } else if optional {
                    self.d.error(
                        d.span,
                        format!(
                            "optional parameter '{}' cannot have a default value",
                            p.name.name
                        ),
                    );
                }
            }
            let param = Param {
                decl: DeclId(0),
                name: p.name.name.clone(),
                dir: p.direction,
                ty,
                optional,
                default,
            };
            let id = self.add_decl(Decl {
                name: p.name.name.clone(),
                span: p.name.span,
                annotations: p.annotations.clone(),
                kind: DeclKind::Param(param.clone()),
            });
            if declare {
                self.declare(&p.name, Entity::Value(id));
            }
            out.push(Param { decl: id, ..param });
        }
        out
    }

    // ----- declarations -----

    pub fn program(&mut self, prog: &ast::Program) {
        for d in &prog.decls {
            if let Some(id) = self.decl(d, true) {
                self.p.top.push(id);
            }
        }
        if let Some([Entity::Value(id)]) = self.lookup_name("main") {
            let id = *id;
            if let DeclKind::Instance {
                ty: Type::Package(..),
                ..
            } = self.p.decl(id).kind
            {
                self.p.main = Some(id);
            }
        }
    }

    /// Checks a declaration and declares its name; returns the value declaration it made.
    pub fn decl(&mut self, d: &ast::Decl, top: bool) -> Option<DeclId> {
        use ast::DeclKind as K;
        match &d.kind {
            K::Const(c) => Some(self.const_decl(c)),
            K::Var(v) => {
                if top {
                    self.d
                        .error(d.span, "variables cannot be declared at the top level");
                }
                Some(self.var_decl(v))
            }
            K::Struct(s) => {
                self.struct_decl(s);
                None
            }
            K::Enum(e) => {
                self.enum_decl(e);
                None
            }
            K::Error(ms) => {
                for m in ms {
                    if self.p.errors.contains(&m.name) {
                        self.d
                            .error(m.span, format!("duplicate error member '{}'", m.name));
                    } else {
                        self.p.errors.push(m.name.clone());
                    }
                }
                None
            }
            K::MatchKind(ms) => {
                for m in ms {
                    if self.p.match_kinds.contains(&m.name) {
                        self.d
                            .error(m.span, format!("duplicate match_kind '{}'", m.name));
                        continue;
                    }
                    // Match kinds are also top-level names (values of type match_kind).
                    let id = self.add_decl(Decl {
                        name: m.name.clone(),
                        span: m.span,
                        annotations: Vec::new(),
                        kind: DeclKind::Const {
                            ty: Type::MatchKind,
                            value: Value::MatchKind(self.p.match_kinds.len()),
                        },
                    });
                    self.p.match_kinds.push(m.name.clone());
                    self.declare(m, Entity::Value(id));
                }
                None
            }
            K::Typedef(t) => {
                let ty = self.resolve_type(&t.ty);
                if t.new_type {
                    let ok = matches!(
                        ty,
                        Type::Bit(_)
                            | Type::Int(_)
                            | Type::Bool
                            | Type::NewType(_)
                            | Type::SerEnum(..)
                            | Type::Unknown
                    );
                    if !ok {
                        self.d.error(
                            t.ty.span,
                            format!("'type' cannot be applied to {}", self.p.show(&ty)),
                        );
                    }
                    let id = self.add_type(TypeDecl {
                        name: t.name.name.clone(),
                        span: t.name.span,
                        annotations: t.annotations.clone(),
                        kind: TypeDeclKind::NewType(ty),
                    });
                    self.declare(&t.name, Entity::Type(Type::NewType(id)));
                } else {
                    self.declare(&t.name, Entity::Type(ty));
                }
                None
            }
            K::Extern(e) => {
                self.extern_decl(e);
                None
            }
            K::ExternFunction(f) => {
                self.push();
                let tps: Vec<TypeVar> =
                    f.type_params.iter().map(|t| self.new_type_var(t)).collect();
                let m = self.method(f, tps);
                self.pop();
                let id = self.add_decl(Decl {
                    name: f.name.name.clone(),
                    span: f.name.span,
                    annotations: f.annotations.clone(),
                    kind: DeclKind::ExternFunction(m),
                });
                self.declare(&f.name, Entity::Value(id));
                Some(id)
            }
            K::Function(f) => Some(self.function_decl(f)),
            K::Action(a) => Some(self.action_decl(a)),
            K::ParserType(t) | K::ControlType(t) | K::PackageType(t) => {
                let kind = match &d.kind {
                    K::ParserType(_) => BlockKind::Parser,
                    K::ControlType(_) => BlockKind::Control,
                    _ => BlockKind::Package,
                };
                self.push();
                let tps: Vec<TypeVar> =
                    t.type_params.iter().map(|v| self.new_type_var(v)).collect();
                if kind == BlockKind::Package {
                    self.directionless(&t.params, "package");
                }
                let ps = self.params(&t.params, false);
                self.pop();
                let (params, ctor_params) = if kind == BlockKind::Package {
                    (Vec::new(), ps)
                } else {
                    (ps, Vec::new())
                };
                let id = self.add_type(TypeDecl {
                    name: t.name.name.clone(),
                    span: t.name.span,
                    annotations: t.annotations.clone(),
                    kind: TypeDeclKind::Block {
                        kind,
                        type_params: tps.clone(),
                        params,
                        ctor_params,
                        implementation: None,
                    },
                });
                if tps.is_empty() {
                    let ty = match kind {
                        BlockKind::Parser => Type::Parser(id, Vec::new()),
                        BlockKind::Control => Type::Control(id, Vec::new()),
                        BlockKind::Package => Type::Package(id, Vec::new()),
                    };
                    self.declare(&t.name, Entity::Type(ty));
                } else {
                    self.declare(&t.name, Entity::Generic(id));
                }
                None
            }
            K::Parser(p) => Some(self.parser_decl(p)),
            K::Control(c) => Some(self.control_decl(c)),
            K::Instantiation(i) => Some(self.instantiation(i, d.span, top)),
            K::ValueSet(v) => {
                if !self.ctx.in_parser {
                    self.d
                        .error(d.span, "value_set can only be declared in a parser");
                }
                let elem = self.resolve_type(&v.elem);
                let size = self.const_u64(&v.size, "a value_set size").unwrap_or(0);
                let id = self.add_decl(Decl {
                    name: v.name.name.clone(),
                    span: v.name.span,
                    annotations: v.annotations.clone(),
                    kind: DeclKind::ValueSet { elem, size },
                });
                self.declare(&v.name, Entity::Value(id));
                Some(id)
            }
            K::Table(t) => {
                if !self.ctx.in_control {
                    self.d
                        .error(t.name.span, "tables can only be declared in a control");
                }
                Some(self.table_decl(t))
            }
        }
    }

    pub fn const_decl(&mut self, c: &ast::ConstDecl) -> DeclId {
        let ty = self.resolve_type(&c.ty);
        let e = self.expr_as(&c.value, &ty, "the constant");
        let value = match e.kind {
            ExprKind::Const(v) => v,
            _ => {
                if e.ty != Type::Unknown && ty != Type::Unknown {
                    self.d.error(
                        c.value.span,
                        format!(
                            "'{}' must be initialised with a compile-time known value",
                            c.name.name
                        ),
                    );
                }
                Value::Bool(false)
            }
        };
        let id = self.add_decl(Decl {
            name: c.name.name.clone(),
            span: c.name.span,
            annotations: c.annotations.clone(),
            kind: DeclKind::Const { ty, value },
        });
        self.declare(&c.name, Entity::Value(id));
        id
    }

    pub fn var_decl(&mut self, v: &ast::VarDecl) -> DeclId {
        let ty = self.resolve_type(&v.ty);
        match ty {
            Type::InfInt | Type::String | Type::Void => {
                self.d.error(
                    v.ty.span,
                    format!("variables cannot have type {}", self.p.show(&ty)),
                );
            }
            Type::Extern(..) | Type::Parser(..) | Type::Control(..) | Type::Package(..) => {
                self.d.error(
                    v.ty.span,
                    format!(
                        "cannot declare variables of type {} (use an instantiation)",
                        self.p.show(&ty)
                    ),
                );
            }
            _ => {}
        }
        let init = v
            .init
            .as_ref()
            .map(|e| self.expr_as(e, &ty, "the initialiser"));
        let id = self.add_decl(Decl {
            name: v.name.name.clone(),
            span: v.name.span,
            annotations: v.annotations.clone(),
            kind: DeclKind::Var { ty, init },
        });
        self.declare(&v.name, Entity::Value(id));
        id
    }

    fn fields(&mut self, fs: &[ast::Field], kind: ast::StructKind, owner: &str) -> Vec<Field> {
        let mut out: Vec<Field> = Vec::new();
        let mut varbits = 0;
        for f in fs {
            let ty = self.resolve_type(&f.ty);
            if out.iter().any(|o| o.name == f.name.name) {
                self.d.error(
                    f.name.span,
                    format!("duplicate field '{}' in '{owner}'", f.name.name),
                );
                continue;
            }
            let ok = match kind {
                ast::StructKind::Header => {
                    if matches!(ty, Type::Varbit(_)) {
                        varbits += 1;
                    }
                    self.header_field_ok(&ty)
                }
                ast::StructKind::HeaderUnion => {
                    matches!(ty, Type::Header(_) | Type::Unknown | Type::Var(_))
                }
                ast::StructKind::Struct => !matches!(
                    ty,
                    Type::InfInt
                        | Type::String
                        | Type::Void
                        | Type::Extern(..)
                        | Type::Parser(..)
                        | Type::Control(..)
                        | Type::Package(..)
                ),
            };
            if !ok {
                self.d.error(
                    f.ty.span,
                    format!(
                        "field '{}' of '{owner}' cannot have type {}",
                        f.name.name,
                        self.p.show(&ty)
                    ),
                );
            }
            if varbits > 1 {
                self.d.error(
                    f.ty.span,
                    format!("header '{owner}' has more than one varbit field"),
                );
                varbits = 1;
            }
            out.push(Field {
                name: f.name.name.clone(),
                ty,
                annotations: f.annotations.clone(),
                span: f.name.span,
            });
        }
        out
    }

    fn header_field_ok(&self, ty: &Type) -> bool {
        match ty {
            Type::Bit(_) | Type::Int(_) | Type::Varbit(_) | Type::Bool | Type::Unknown => true,
            Type::Var(_) => true,
            Type::SerEnum(..) => true,
            Type::NewType(id) => match &self.p.ty(*id).kind {
                TypeDeclKind::NewType(t) => self.header_field_ok(t),
                _ => false,
            },
            Type::Struct(_) => self
                .p
                .fields(ty)
                .is_some_and(|fs| fs.iter().all(|f| self.header_field_ok(&f.ty))),
            // An array of such fields (P4_16 1.2.5), not a header stack.
            Type::Stack(e, _) => !matches!(**e, Type::Varbit(_)) && self.header_field_ok(e),
            _ => false,
        }
    }

    fn struct_decl(&mut self, s: &ast::StructDecl) {
        self.push();
        let tps: Vec<TypeVar> = s.type_params.iter().map(|t| self.new_type_var(t)).collect();
        let fields = self.fields(&s.fields, s.kind, &s.name.name);
        self.pop();
        let kind = if !tps.is_empty() {
            TypeDeclKind::Generic {
                type_params: tps.clone(),
                kind: s.kind,
                fields,
            }
        } else {
            match s.kind {
                ast::StructKind::Struct => TypeDeclKind::Struct(fields),
                ast::StructKind::Header => TypeDeclKind::Header(fields),
                ast::StructKind::HeaderUnion => TypeDeclKind::HeaderUnion(fields),
            }
        };
        let id = self.add_type(TypeDecl {
            name: s.name.name.clone(),
            span: s.name.span,
            annotations: s.annotations.clone(),
            kind,
        });
        let e = if !tps.is_empty() {
            Entity::Generic(id)
        } else {
            Entity::Type(match s.kind {
                ast::StructKind::Struct => Type::Struct(id),
                ast::StructKind::Header => Type::Header(id),
                ast::StructKind::HeaderUnion => Type::HeaderUnion(id),
            })
        };
        self.declare(&s.name, e);
    }

    fn enum_decl(&mut self, e: &ast::EnumDecl) {
        let mut names: Vec<String> = Vec::new();
        for (m, _) in &e.members {
            if names.contains(&m.name) {
                self.d.error(
                    m.span,
                    format!("duplicate member '{}' in enum '{}'", m.name, e.name.name),
                );
            }
            names.push(m.name.clone());
        }
        let (kind, ty) = match &e.repr {
            None => (TypeDeclKind::Enum(names), None),
            Some(r) => {
                let u = self.resolve_type(r);
                if !matches!(u, Type::Bit(_) | Type::Int(_) | Type::Unknown) {
                    self.d.error(
                        r.span,
                        format!(
                            "a serializable enum needs a bit<W> or int<W> type, not {}",
                            self.p.show(&u)
                        ),
                    );
                }
                let mut members = Vec::new();
                for (m, v) in &e.members {
                    let value = match v {
                        Some(v) => {
                            let x = self.expr(v);
                            match (&x.kind, &x.ty) {
                                (ExprKind::Const(Value::Int(i)), t)
                                    if *t == u || *t == Type::InfInt =>
                                {
                                    if !eval::fits(i, &u) && u != Type::Unknown {
                                        self.d.error(
                                            v.span,
                                            format!(
                                                "value {i} does not fit in {}",
                                                self.p.show(&u)
                                            ),
                                        );
                                    }
                                    eval::wrap(i.clone(), &u)
                                }
                                _ if x.ty == Type::Unknown => BigInt::from(0),
                                _ => {
                                    self.d.error(
                                        v.span,
                                        format!(
                                            "enum member '{}' needs a compile-time known value of type {}",
                                            m.name,
                                            self.p.show(&u)
                                        ),
                                    );
                                    BigInt::from(0)
                                }
                            }
                        }
                        None => {
                            self.d.error(
                                m.span,
                                format!(
                                    "member '{}' of serializable enum '{}' needs a value",
                                    m.name, e.name.name
                                ),
                            );
                            BigInt::from(0)
                        }
                    };
                    members.push((m.name.clone(), value));
                }
                (
                    TypeDeclKind::SerEnum {
                        underlying: u.clone(),
                        members,
                    },
                    Some(u),
                )
            }
        };
        let id = self.add_type(TypeDecl {
            name: e.name.name.clone(),
            span: e.name.span,
            annotations: e.annotations.clone(),
            kind,
        });
        let t = match ty {
            None => Type::Enum(id),
            Some(u) => Type::SerEnum(id, Box::new(u)),
        };
        self.declare(&e.name, Entity::Type(t));
    }

    fn method(&mut self, f: &ast::FunctionProto, type_params: Vec<TypeVar>) -> Method {
        let ret = f.ret.as_ref().map(|r| self.resolve_type(r));
        self.push();
        let params = self.params(&f.params, false);
        self.pop();
        self.check_duplicate_params(&f.params);
        Method {
            name: f.name.name.clone(),
            annotations: f.annotations.clone(),
            type_params,
            ret,
            params,
            abstract_: f.abstract_,
            span: f.name.span,
        }
    }

    /// Constructor parameters (of externs, parsers, controls and packages) have no direction.
    fn directionless(&mut self, ps: &[ast::Param], what: &str) {
        for p in ps.iter().filter(|p| p.direction.is_some()) {
            self.d.error(
                p.name.span,
                format!("{what} parameter '{}' cannot have a direction", p.name.name),
            );
        }
    }

    fn check_duplicate_params(&mut self, ps: &[ast::Param]) {
        for (i, p) in ps.iter().enumerate() {
            if ps[..i].iter().any(|q| q.name.name == p.name.name) {
                self.d.error(
                    p.name.span,
                    format!("duplicate parameter '{}'", p.name.name),
                );
            }
        }
    }

    fn extern_decl(&mut self, e: &ast::ExternDecl) {
        // Declared first so that methods can mention the extern's own type.
        let id = self.add_type(TypeDecl {
            name: e.name.name.clone(),
            span: e.name.span,
            annotations: e.annotations.clone(),
            kind: TypeDeclKind::Extern {
                type_params: Vec::new(),
                ctors: Vec::new(),
                methods: Vec::new(),
            },
        });
        self.push();
        let tps: Vec<TypeVar> = e.type_params.iter().map(|t| self.new_type_var(t)).collect();
        if let Some(TypeDecl {
            kind: TypeDeclKind::Extern { type_params, .. },
            ..
        }) = self.p.types.get_mut(id.0 as usize)
        {
            *type_params = tps.clone();
        }
        let mut ctors = Vec::new();
        let mut methods: Vec<Method> = Vec::new();
        for m in &e.methods {
            self.push();
            let mtps: Vec<TypeVar> = m.type_params.iter().map(|t| self.new_type_var(t)).collect();
            let method = self.method(m, mtps);
            self.pop();
            if m.ret.is_none() {
                self.directionless(&m.params, "constructor");
                if m.name.name != e.name.name {
                    self.d.error(
                        m.name.span,
                        format!(
                            "constructor '{}' must be named '{}'",
                            m.name.name, e.name.name
                        ),
                    );
                }
                ctors.push(method);
            } else {
                if methods
                    .iter()
                    .any(|o| o.name == method.name && o.params.len() == method.params.len())
                {
                    self.d.error(
                        m.name.span,
                        format!(
                            "duplicate method '{}' with {} parameters",
                            m.name.name,
                            m.params.len()
                        ),
                    );
                }
                methods.push(method);
            }
        }
        self.pop();
        if let Some(TypeDecl {
            kind:
                TypeDeclKind::Extern {
                    ctors: c,
                    methods: ms,
                    ..
                },
            ..
        }) = self.p.types.get_mut(id.0 as usize)
        {
            *c = ctors;
            *ms = methods;
        }
        if tps.is_empty() {
            self.declare(&e.name, Entity::Type(Type::Extern(id, Vec::new())));
        } else {
            self.declare(&e.name, Entity::Generic(id));
        }
    }

    fn function_decl(&mut self, f: &ast::FunctionDecl) -> DeclId {
        self.push();
        let tps: Vec<TypeVar> = f
            .proto
            .type_params
            .iter()
            .map(|t| self.new_type_var(t))
            .collect();
        let ret = f
            .proto
            .ret
            .as_ref()
            .map(|r| self.resolve_type(r))
            .unwrap_or(Type::Void);
        self.check_duplicate_params(&f.proto.params);
        let params = self.params(&f.proto.params, true);
        // Declared before the body so that the id exists; recursion is rejected below.
        let id = self.add_decl(Decl {
            name: f.proto.name.name.clone(),
            span: f.proto.name.span,
            annotations: f.proto.annotations.clone(),
            kind: DeclKind::Function {
                type_params: tps.clone(),
                ret: ret.clone(),
                params: params.clone(),
                body: Block {
                    annotations: Vec::new(),
                    stmts: Vec::new(),
                    span: f.body.span,
                },
            },
        });
        let saved = std::mem::take(&mut self.ctx);
        self.ctx.fn_ret = Some(ret.clone());
        let body = self.block(&f.body, true);
        self.ctx = saved;
        self.pop();
        if ret != Type::Void && ret != Type::Unknown && !always_returns(&body.stmts) {
            self.d.error(
                f.proto.name.span,
                format!(
                    "function '{}' does not return a value on every path",
                    f.proto.name.name
                ),
            );
        }
        if let Some(Decl {
            kind: DeclKind::Function { body: b, .. },
            ..
        }) = self.p.decls.get_mut(id.0 as usize)
        {
            *b = body;
        }
        self.declare(&f.proto.name, Entity::Value(id));
        id
    }

    fn action_decl(&mut self, a: &ast::ActionDecl) -> DeclId {
        self.push();
        self.check_duplicate_params(&a.params);
        let mut seen_directionless = false;
        for p in &a.params {
            if p.direction.is_none() {
                seen_directionless = true;
            } else if seen_directionless {
                self.d.error(
                    p.name.span,
                    "directional action parameters must come before directionless ones",
                );
            }
        }
        let params = self.params(&a.params, true);
        self.p.action_params.extend(params.iter().map(|p| p.decl));
        let saved_action = self.ctx.in_action;
        self.ctx.in_action = true;
        let body = self.block(&a.body, true);
        self.ctx.in_action = saved_action;
        self.pop();
        let id = self.add_decl(Decl {
            name: a.name.name.clone(),
            span: a.name.span,
            annotations: a.annotations.clone(),
            kind: DeclKind::Action { params, body },
        });
        self.declare(&a.name, Entity::Value(id));
        id
    }

    fn block_type(
        &mut self,
        t: &ast::TypeDecl,
        kind: BlockKind,
        ctor: &[ast::Param],
    ) -> (TypeId, Vec<Param>, Vec<Param>) {
        if !t.type_params.is_empty() {
            self.d.unsupported(
                t.name.span,
                "type parameters on a parser or control implementation",
            );
        }
        self.check_duplicate_params(&t.params);
        self.directionless(ctor, "constructor");
        let params = self.params(&t.params, true);
        let ctor_params = self.params(ctor, true);
        let id = self.add_type(TypeDecl {
            name: t.name.name.clone(),
            span: t.name.span,
            annotations: t.annotations.clone(),
            kind: TypeDeclKind::Block {
                kind,
                type_params: Vec::new(),
                params: params.clone(),
                ctor_params: ctor_params.clone(),
                implementation: None,
            },
        });
        (id, params, ctor_params)
    }

    fn set_implementation(&mut self, ty: TypeId, decl: DeclId) {
        if let Some(TypeDecl {
            kind: TypeDeclKind::Block { implementation, .. },
            ..
        }) = self.p.types.get_mut(ty.0 as usize)
        {
            *implementation = Some(decl);
        }
    }

    fn parser_decl(&mut self, p: &ast::ParserDecl) -> DeclId {
        self.push();
        let (ty, params, ctor_params) = self.block_type(&p.ty, BlockKind::Parser, &p.ctor_params);
        let saved = std::mem::take(&mut self.ctx);
        self.ctx.in_parser = true;
        let mut locals = Vec::new();
        for l in &p.locals {
            if let Some(id) = self.decl(l, false) {
                locals.push(id);
            }
        }
        // States may be referenced before their declaration.
        let mut states = Vec::new();
        for s in &p.states {
            if matches!(s.name.name.as_str(), "accept" | "reject") {
                self.d.error(
                    s.name.span,
                    format!(
                        "state '{}' is predefined and cannot be declared",
                        s.name.name
                    ),
                );
                continue;
            }
            if self.ctx.states.contains_key(&s.name.name) {
                self.d
                    .error(s.name.span, format!("duplicate state '{}'", s.name.name));
                continue;
            }
            let id = self.add_decl(Decl {
                name: s.name.name.clone(),
                span: s.name.span,
                annotations: s.annotations.clone(),
                kind: DeclKind::State {
                    stmts: Vec::new(),
                    transition: Transition::Direct(StateRef::Reject),
                },
            });
            self.ctx.states.insert(s.name.name.clone(), id);
            states.push((id, s));
        }
        if !self.ctx.states.contains_key("start") {
            self.d.error(
                p.ty.name.span,
                format!("parser '{}' has no 'start' state", p.ty.name.name),
            );
        }
        for (id, s) in &states {
            self.push();
            let stmts: Vec<Stmt> = s.stmts.iter().map(|st| self.stmt(st)).collect();
            let transition = match &s.transition {
                None => Transition::Direct(StateRef::Reject),
                Some(t) => self.transition(t),
            };
            self.pop();
            if let Some(Decl {
                kind:
                    DeclKind::State {
                        stmts: a,
                        transition: b,
                    },
                ..
            }) = self.p.decls.get_mut(id.0 as usize)
            {
                *a = stmts;
                *b = transition;
            }
        }
        locals.append(&mut self.ctx.direct_instances);
        self.ctx = saved;
        self.pop();
        let id = self.add_decl(Decl {
            name: p.ty.name.name.clone(),
            span: p.ty.name.span,
            annotations: p.ty.annotations.clone(),
            kind: DeclKind::Parser {
                ty,
                params,
                ctor_params,
                locals,
                states: states.iter().map(|(id, _)| *id).collect(),
            },
        });
        self.set_implementation(ty, id);
        self.declare(&p.ty.name, Entity::Type(Type::Parser(ty, Vec::new())));
        id
    }

    fn state_ref(&mut self, name: &ast::Ident) -> StateRef {
        match name.name.as_str() {
            "accept" => StateRef::Accept,
            "reject" => StateRef::Reject,
            n => match self.ctx.states.get(n) {
                Some(id) => StateRef::State(*id),
                None => {
                    self.d
                        .error(name.span, format!("undeclared state '{}'", name.name));
                    StateRef::Reject
                }
            },
        }
    }

    fn transition(&mut self, t: &ast::Transition) -> Transition {
        match t {
            ast::Transition::Direct(n) => Transition::Direct(self.state_ref(n)),
            ast::Transition::Select { exprs, cases, span } => {
                let exprs: Vec<Expr> = exprs.iter().map(|e| self.expr(e)).collect();
                for e in &exprs {
                    // p4c's validateSelectTypes: bits, enums, serializable enums and booleans.
                    let selectable = matches!(
                        e.ty,
                        Type::Bit(_)
                            | Type::Int(_)
                            | Type::Bool
                            | Type::Enum(_)
                            | Type::SerEnum(..)
                            | Type::Unknown
                    );
                    if !selectable {
                        self.d.error(
                            e.span,
                            format!("cannot select on a value of type {}", self.p.show(&e.ty)),
                        );
                    }
                }
                let tys: Vec<Type> = exprs.iter().map(|e| e.ty.clone()).collect();
                let cases = cases
                    .iter()
                    .map(|c| SelectCase {
                        keyset: self.keyset_for(&c.keyset, &tys, None),
                        state: self.state_ref(&c.state),
                        span: c.span,
                    })
                    .collect();
                Transition::Select {
                    exprs,
                    cases,
                    span: *span,
                }
            }
        }
    }

    /// Types that can be matched in select expressions and table keys.
    pub fn keyable(&self, t: &Type) -> bool {
        match t {
            Type::Bit(_)
            | Type::Int(_)
            | Type::Bool
            | Type::Error
            | Type::Enum(_)
            | Type::SerEnum(..)
            | Type::Unknown
            | Type::Varbit(_) => true,
            Type::NewType(id) => match &self.p.ty(*id).kind {
                TypeDeclKind::NewType(u) => self.keyable(u),
                _ => false,
            },
            _ => false,
        }
    }

    fn control_decl(&mut self, c: &ast::ControlDecl) -> DeclId {
        self.push();
        let (ty, params, ctor_params) = self.block_type(&c.ty, BlockKind::Control, &c.ctor_params);
        let saved = std::mem::take(&mut self.ctx);
        self.ctx.in_control = true;
        let mut locals = Vec::new();
        for l in &c.locals {
            if matches!(
                l.kind,
                ast::DeclKind::Function(_) | ast::DeclKind::Struct(_) | ast::DeclKind::Extern(_)
            ) {
                self.d
                    .error(l.span, "this declaration is not allowed inside a control");
                continue;
            }
            if let Some(id) = self.decl(l, false) {
                locals.push(id);
            }
        }
        let apply = self.block(&c.apply, false);
        locals.append(&mut self.ctx.direct_instances);
        self.ctx = saved;
        self.pop();
        let id = self.add_decl(Decl {
            name: c.ty.name.name.clone(),
            span: c.ty.name.span,
            annotations: c.ty.annotations.clone(),
            kind: DeclKind::Control {
                ty,
                params,
                ctor_params,
                locals,
                apply,
            },
        });
        self.set_implementation(ty, id);
        self.declare(&c.ty.name, Entity::Type(Type::Control(ty, Vec::new())));
        id
    }

    fn instantiation(&mut self, i: &ast::Instantiation, span: Span, top: bool) -> DeclId {
        let ty = self.resolve_type(&i.ty);
        let (ty, args) = self.construct(&ty, &i.args, i.ty.span);
        match &ty {
            Type::Package(..) if !top => {
                self.d
                    .error(span, "packages can only be instantiated at the top level");
            }
            Type::Parser(..) | Type::Control(..) if top => {
                self.d.error(
                    span,
                    "parsers and controls can only be instantiated inside parsers, controls or packages",
                );
            }
            Type::Control(..) if self.ctx.in_parser => {
                self.d
                    .error(span, "a control cannot be instantiated in a parser");
            }
            Type::Parser(..) if self.ctx.in_control => {
                self.d
                    .error(span, "a parser cannot be instantiated in a control");
            }
            _ => {}
        }
        let methods = self.abstract_methods(&ty, i);
        let via_typedef = matches!(i.ty.kind, ast::TypeKind::Name(_))
            && matches!(&ty, Type::Extern(_, targs) if !targs.is_empty());
        let id = self.add_decl(Decl {
            name: i.name.name.clone(),
            span: i.name.span,
            annotations: i.annotations.clone(),
            kind: DeclKind::Instance {
                ty,
                args,
                methods,
                via_typedef,
            },
        });
        self.declare(&i.name, Entity::Value(id));
        id
    }

    /// The bodies given for an extern's abstract methods, checked against their signatures.
    fn abstract_methods(&mut self, ty: &Type, i: &ast::Instantiation) -> Vec<DeclId> {
        let (abstracts, sub) = match ty {
            Type::Extern(id, args) => match &self.p.ty(*id).kind {
                TypeDeclKind::Extern {
                    type_params,
                    methods,
                    ..
                } => {
                    let sub: Subst = type_params.iter().copied().zip(args.clone()).collect();
                    let ms: Vec<Method> = methods.iter().filter(|m| m.abstract_).cloned().collect();
                    (ms, sub)
                }
                _ => (Vec::new(), Subst::new()),
            },
            _ => (Vec::new(), Subst::new()),
        };
        let mut out = Vec::new();
        let mut implemented = Vec::new();
        for d in &i.body {
            let ast::DeclKind::Function(f) = &d.kind else {
                self.d.error(
                    d.span,
                    "only abstract method implementations may appear here",
                );
                continue;
            };
            let Some(m) = abstracts.iter().find(|m| m.name == f.proto.name.name) else {
                self.d.error(
                    f.proto.name.span,
                    format!(
                        "'{}' is not an abstract method of this extern",
                        f.proto.name.name
                    ),
                );
                continue;
            };
            self.push();
            let fid = self.function_decl(f);
            self.pop();
            if let DeclKind::Function { ret, params, .. } = &self.p.decl(fid).kind {
                let want_ret = subst(m.ret.as_ref().unwrap_or(&Type::Void), &sub);
                let same = *ret == want_ret
                    && params.len() == m.params.len()
                    && params
                        .iter()
                        .zip(&m.params)
                        .all(|(a, b)| a.dir == b.dir && a.ty == subst(&b.ty, &sub));
                if !same {
                    self.d.error(
                        f.proto.name.span,
                        format!(
                            "'{}' does not match the abstract method's signature",
                            m.name
                        ),
                    );
                }
            }
            implemented.push(m.name.clone());
            out.push(fid);
        }
        for m in &abstracts {
            if !implemented.contains(&m.name) {
                self.d.error(
                    i.name.span,
                    format!("abstract method '{}' is not implemented", m.name),
                );
            }
        }
        out
    }

    fn table_decl(&mut self, t: &ast::TableDecl) -> DeclId {
        let mut table = Table {
            key: Vec::new(),
            actions: Vec::new(),
            default_action: None,
            default_action_const: false,
            entries: Vec::new(),
            entries_const: false,
            size: None,
            props: Vec::new(),
        };
        let mut seen: Vec<&str> = Vec::new();
        let mut entries = None;
        let mut default = None;
        for p in &t.props {
            if seen.contains(&p.name.name.as_str()) {
                self.d.error(
                    p.name.span,
                    format!("duplicate table property '{}'", p.name.name),
                );
                continue;
            }
            seen.push(&p.name.name);
            match &p.kind {
                ast::TablePropKind::Key(ks) => {
                    for k in ks {
                        let expr = self.expr(&k.expr);
                        if !self.keyable(&expr.ty) {
                            self.d.error(
                                k.expr.span,
                                format!("a table key cannot have type {}", self.p.show(&expr.ty)),
                            );
                        }
                        if !self.p.match_kinds.contains(&k.match_kind.name) {
                            self.d.error(
                                k.match_kind.span,
                                format!("unknown match kind '{}'", k.match_kind.name),
                            );
                        }
                        let mut annotations = k.annotations.clone();
                        // p4c names a key that is not a field after the expression as written
                        // (constants in their source base).
                        if ast::find_annotation(&annotations, "name").is_none()
                            && key_text(&self.p, &expr).is_none()
                        {
                            if let Some(text) = key_source_text(&k.expr) {
                                annotations.insert(0, ast::Annotation::name(&text, k.expr.span));
                            }
                        }
                        table.key.push(KeyElement {
                            annotations,
                            expr,
                            match_kind: k.match_kind.name.clone(),
                            span: k.expr.span,
                        });
                    }
                }
                ast::TablePropKind::Actions(refs) => {
                    for r in refs {
                        if let Some(a) = self.action_ref(r, true) {
                            if table.actions.iter().any(|x| x.action == a.action) {
                                self.d.error(
                                    r.span,
                                    format!(
                                        "action '{}' appears twice in the actions list",
                                        r.name.name.name
                                    ),
                                );
                            }
                            table.actions.push(a);
                        }
                    }
                }
                ast::TablePropKind::DefaultAction(r) => {
                    default = Some(r);
                    table.default_action_const = p.is_const;
                }
                ast::TablePropKind::Entries(es) => {
                    entries = Some(es);
                    table.entries_const = p.is_const;
                }
                ast::TablePropKind::Other(e) => {
                    if p.name.name == "size" {
                        table.size = self.const_u64(e, "the table size");
                        continue;
                    }
                    let value = self.expr(e);
                    self.table_property(&p.name.name, &value);
                    table.props.push(TableProp {
                        name: p.name.name.clone(),
                        is_const: p.is_const,
                        annotations: p.annotations.clone(),
                        value,
                        span: p.span,
                    });
                }
            }
        }
        if !seen.contains(&"actions") {
            self.d.error(
                t.name.span,
                format!("table '{}' has no actions property", t.name.name),
            );
        }
        if let Some(r) = default {
            table.default_action = self.listed_action(r, &table, t, "default action");
            if let Some(a) = &table.default_action {
                if self.list_annotation(&table, a.action, "tableonly") {
                    self.d.error(
                        r.span,
                        format!(
                            "'{}' is @tableonly and cannot be the default action",
                            r.name.name.name
                        ),
                    );
                }
            }
        }
        if let (Some(es), true) = (entries, table.key.is_empty()) {
            if let Some(e) = es.first() {
                self.d
                    .error(e.span, "entries cannot be given for a table without a key");
            }
        } else if let Some(es) = entries {
            let key_types: Vec<Type> = table.key.iter().map(|k| k.expr.ty.clone()).collect();
            let kinds: Vec<String> = table.key.iter().map(|k| k.match_kind.clone()).collect();
            for e in es {
                let keyset = self.keyset_for(&e.keyset, &key_types, Some(&kinds));
                let keys = match keyset.kind {
                    ExprKind::Tuple(items) if key_types.len() != 1 => items,
                    _ => vec![keyset],
                };
                let priority = e
                    .priority
                    .as_ref()
                    .and_then(|p| self.const_u64(p, "an entry priority"));
                let action = self.listed_action(&e.action, &table, t, "entry action");
                if let Some(a) = &action {
                    if self.list_annotation(&table, a.action, "defaultonly") {
                        self.d.error(
                            e.action.span,
                            format!(
                                "'{}' is @defaultonly and cannot be used in entries",
                                e.action.name.name.name
                            ),
                        );
                    }
                }
                if let Some(action) = action {
                    table.entries.push(Entry {
                        annotations: e.annotations.clone(),
                        is_const: e.is_const || table.entries_const,
                        priority,
                        keys,
                        action,
                        span: e.span,
                    });
                }
            }
        }
        let id = self.add_decl(Decl {
            name: t.name.name.clone(),
            span: t.name.span,
            annotations: t.annotations.clone(),
            kind: DeclKind::Table(table),
        });
        self.declare(&t.name, Entity::Value(id));
        id
    }

    /// The properties BMv2 targets know: `implementation` names an action profile or selector
    /// instance, `counters`/`meters` a direct counter/meter instance, the timeouts a bool
    /// constant. Others (architecture-specific) are kept as typed expressions.
    fn table_property(&mut self, name: &str, value: &Expr) {
        if value.ty == Type::Unknown {
            return;
        }
        let instance_of = |me: &Self, wanted: &[&str]| match (&value.kind, &value.ty) {
            (ExprKind::Ref(_), Type::Extern(id, _)) => wanted.contains(&me.p.ty(*id).name.as_str()),
            _ => false,
        };
        // `implementation = action_selector(...)` constructs the profile in the table.
        let constructed = |me: &Self, wanted: &[&str]| match (&value.kind, &value.ty) {
            (ExprKind::Call(c), Type::Extern(id, _)) => {
                matches!(c.target, CallTarget::Construct(_))
                    && wanted.contains(&me.p.ty(*id).name.as_str())
            }
            _ => false,
        };
        let profiles = ["action_profile", "action_selector"];
        let problem = match name {
            "implementation" if !instance_of(self, &profiles) && !constructed(self, &profiles) => {
                Some("an action_profile or action_selector instance or constructor call")
            }
            "counters" if !instance_of(self, &["direct_counter"]) => {
                Some("a direct_counter instance")
            }
            "meters" if !instance_of(self, &["direct_meter"]) => Some("a direct_meter instance"),
            "support_timeout" | "idle_timeout"
                if !(value.ty == Type::Bool && matches!(value.kind, ExprKind::Const(_))) =>
            {
                Some("the constant true or false")
            }
            _ => None,
        };
        if let Some(wanted) = problem {
            self.d.error(
                value.span,
                format!("table property '{name}' must be {wanted}"),
            );
        }
    }

    /// Whether the action's element in the actions list carries the annotation `@<name>`.
    fn list_annotation(&self, table: &Table, action: DeclId, name: &str) -> bool {
        table
            .actions
            .iter()
            .filter(|a| a.action == action)
            .any(|a| ast::find_annotation(&a.annotations, name).is_some())
    }

    /// An action reference in `default_action` or an entry: the action must be in the actions
    /// list and every parameter gets an argument.
    fn listed_action(
        &mut self,
        r: &ast::ActionRef,
        table: &Table,
        t: &ast::TableDecl,
        what: &str,
    ) -> Option<ActionRef> {
        let a = self.action_ref(r, false)?;
        let Some(listed) = table.actions.iter().find(|x| x.action == a.action) else {
            self.d.error(
                r.span,
                format!(
                    "{what} '{}' is not in the actions list of table '{}'",
                    r.name.name.name, t.name.name
                ),
            );
            return None;
        };
        // Directional arguments are fixed by the actions list; repeating them must not
        // change them.
        let directional = match &self.p.decl(a.action).kind {
            DeclKind::Action { params, .. } => params.iter().filter(|p| p.dir.is_some()).count(),
            _ => 0,
        };
        for (given, fixed) in a.args.iter().take(directional).zip(&listed.args) {
            if let (Some(g), Some(f)) = (given, fixed) {
                if !same_expr(g, f) {
                    self.d.error(
                        g.span,
                        "this argument must be the same as in the table's actions list",
                    );
                }
            }
        }
        Some(a)
    }

    /// Resolves an action reference. In an actions list (`in_list`) arguments bind the
    /// directional parameters only; elsewhere they bind all parameters.
    fn action_ref(&mut self, r: &ast::ActionRef, in_list: bool) -> Option<ActionRef> {
        let action = match self.lookup(&r.name) {
            Some([Entity::Value(id)])
                if matches!(self.p.decl(*id).kind, DeclKind::Action { .. }) =>
            {
                *id
            }
            Some(_) => {
                self.d.error(
                    r.name.name.span,
                    format!("'{}' is not an action", r.name.name.name),
                );
                return None;
            }
            None => {
                self.d.error(
                    r.name.name.span,
                    format!("undeclared action '{}'", r.name.name.name),
                );
                return None;
            }
        };
        let DeclKind::Action { params, .. } = &self.p.decl(action).kind else {
            return None;
        };
        let params = params.clone();
        let bound: Vec<Param> = if in_list {
            params.iter().filter(|p| p.dir.is_some()).cloned().collect()
        } else {
            params.clone()
        };
        let args = match &r.args {
            None if bound.is_empty() => Vec::new(),
            None => {
                self.d.error(
                    r.span,
                    format!("action '{}' needs arguments here", r.name.name.name),
                );
                return None;
            }
            Some(args) => {
                let c = self.call_args(&bound, &[], args, r.span, Subst::new());
                if !in_list {
                    let data = c.args.iter().zip(&bound).filter(|(_, p)| p.dir.is_none());
                    for a in data.filter_map(|(a, _)| a.as_ref()) {
                        if !self.p.is_compile_time_known(a) && a.ty != Type::Unknown {
                            self.d
                                .error(a.span, "action data here must be compile-time known");
                        }
                    }
                }
                c.args
            }
        };
        Some(ActionRef {
            annotations: r.annotations.clone(),
            action,
            args,
            span: r.span,
        })
    }

    // ----- statements -----

    pub fn block(&mut self, b: &ast::Block, scope: bool) -> Block {
        if scope {
            self.push();
        }
        let stmts = b.stmts.iter().map(|s| self.stmt(s)).collect();
        if scope {
            self.pop();
        }
        Block {
            annotations: b.annotations.clone(),
            stmts,
            span: b.span,
        }
    }

    pub fn stmt(&mut self, s: &ast::Stmt) -> Stmt {
        use ast::StmtKind as K;
        let kind = match &s.kind {
            K::Assign(l, r) => {
                let lhs = self.expr(l);
                self.require_lvalue(&lhs, "the target of an assignment");
                let rhs = self.expr_as(r, &lhs.ty, "the assigned value");
                StmtKind::Assign(lhs, rhs)
            }
            K::Call(e) => {
                let x = self.expr(e);
                match x.kind {
                    // A `static_assert` call, already checked: nothing is left to run.
                    ExprKind::Const(Value::Bool(true))
                        if matches!(e.kind, ast::ExprKind::Call { .. }) =>
                    {
                        StmtKind::Block(Block {
                            annotations: Vec::new(),
                            stmts: Vec::new(),
                            span: s.span,
                        })
                    }
                    ExprKind::Call(_) => StmtKind::Call(x),
                    _ => {
                        if x.ty != Type::Unknown {
                            self.d.error(e.span, "this expression is not a statement");
                        }
                        StmtKind::Call(x)
                    }
                }
            }
            K::If(c, t, e) => {
                let c = self.expr_as(c, &Type::Bool, "the condition");
                self.push();
                let t = self.stmt(t);
                self.pop();
                let e = e.as_ref().map(|e| {
                    self.push();
                    let x = self.stmt(e);
                    self.pop();
                    Box::new(x)
                });
                StmtKind::If(c, Box::new(t), e)
            }
            K::Block(b) => StmtKind::Block(self.block(b, true)),
            K::Exit => {
                if self.ctx.in_parser {
                    self.d.error(s.span, "'exit' cannot be used in a parser");
                } else if self.ctx.fn_ret.is_some() {
                    self.d.error(s.span, "'exit' cannot be used in a function");
                }
                StmtKind::Exit
            }
            K::Return(e) => {
                if self.ctx.in_parser {
                    self.d.error(s.span, "'return' cannot be used in a parser");
                }
                match (&self.ctx.fn_ret.clone(), e) {
                    (Some(Type::Void) | None, Some(e)) => {
                        self.d.error(e.span, "this return cannot have a value");
                        StmtKind::Return(None)
                    }
                    (Some(t), None) if *t != Type::Void && *t != Type::Unknown => {
                        self.d.error(
                            s.span,
                            format!("return needs a value of type {}", self.p.show(t)),
                        );
                        StmtKind::Return(None)
                    }
                    (Some(t), Some(e)) => {
                        StmtKind::Return(Some(self.expr_as(e, t, "the returned value")))
                    }
                    _ => StmtKind::Return(None),
                }
            }
            K::Switch(e, cases) => self.switch(e, cases),
            K::Empty => StmtKind::Empty,
            K::Var(v) => StmtKind::Var(self.var_decl(v)),
            K::Const(c) => StmtKind::Const(self.const_decl(c)),
            K::For(f) => self.for_loop(f, s.span),
            K::Break | K::Continue => {
                let brk = matches!(s.kind, K::Break);
                if self.ctx.loops == 0 {
                    let word = if brk { "break" } else { "continue" };
                    self.d
                        .error(s.span, format!("'{word}' can only be used inside a loop"));
                }
                if brk {
                    StmtKind::Break
                } else {
                    StmtKind::Continue
                }
            }
        };
        Stmt { kind, span: s.span }
    }

    fn for_loop(&mut self, f: &ast::ForStmt, span: Span) -> StmtKind {
        self.push();
        let init = f.init.iter().map(|s| self.stmt(s)).collect();
        let cond = match &f.cond {
            Some(c) => self.expr_as(c, &Type::Bool, "the loop condition"),
            None => Expr {
                kind: ExprKind::Const(Value::Bool(true)),
                ty: Type::Bool,
                span,
            },
        };
        let update = f.update.iter().map(|s| self.stmt(s)).collect();
        self.ctx.loops += 1;
        self.push();
        let body = self.stmt(&f.body);
        self.pop();
        self.ctx.loops -= 1;
        self.pop();
        StmtKind::For(Box::new(ForLoop {
            init,
            cond,
            update,
            body,
        }))
    }

    fn switch(&mut self, e: &ast::Expr, cases: &[ast::SwitchCase]) -> StmtKind {
        self.ctx.switch_expr = true;
        let x = self.expr(e);
        self.ctx.switch_expr = false;
        let table = match x.ty {
            Type::ActionEnum(t) => Some(t),
            _ => None,
        };
        if table.is_none() {
            let ok = matches!(
                x.ty,
                Type::Bit(_)
                    | Type::Int(_)
                    | Type::Enum(_)
                    | Type::SerEnum(..)
                    | Type::Error
                    | Type::Unknown
            );
            if !ok {
                self.d.error(
                    e.span,
                    format!("cannot switch on a value of type {}", self.p.show(&x.ty)),
                );
            }
        }
        let mut out: Vec<SwitchCase> = Vec::new();
        for (i, c) in cases.iter().enumerate() {
            let label = match (&c.label.kind, table) {
                (ast::ExprKind::Default, _) => {
                    if i + 1 != cases.len() {
                        self.d
                            .error(c.label.span, "'default' must be the last switch label");
                    }
                    SwitchLabel::Default
                }
                (ast::ExprKind::Path(p), Some(t)) => {
                    let listed = match &self.p.decl(t).kind {
                        DeclKind::Table(tb) => tb
                            .actions
                            .iter()
                            .map(|a| a.action)
                            .find(|a| self.p.decl(*a).name == p.name.name),
                        _ => None,
                    };
                    match listed {
                        Some(a) => SwitchLabel::Action(a),
                        None => {
                            self.d.error(
                                c.label.span,
                                format!(
                                    "'{}' is not an action of table '{}'",
                                    p.name.name,
                                    self.p.decl(t).name
                                ),
                            );
                            SwitchLabel::Default
                        }
                    }
                }
                (_, Some(_)) => {
                    self.d.error(
                        c.label.span,
                        "switch labels on action_run must be action names",
                    );
                    SwitchLabel::Default
                }
                (_, None) => {
                    let v = self.expr_as(&c.label, &x.ty, "a switch label");
                    if !self.p.is_compile_time_known(&v) && v.ty != Type::Unknown {
                        self.d
                            .error(c.label.span, "switch labels must be compile-time known");
                    }
                    SwitchLabel::Value(v)
                }
            };
            let dup = out.iter().any(|o| match (&o.label, &label) {
                (SwitchLabel::Action(a), SwitchLabel::Action(b)) => a == b,
                (SwitchLabel::Value(a), SwitchLabel::Value(b)) => match (&a.kind, &b.kind) {
                    (ExprKind::Const(x), ExprKind::Const(y)) => x == y,
                    _ => false,
                },
                _ => false,
            });
            if dup {
                self.d.error(c.label.span, "duplicate switch label");
            }
            let body = c.body.as_ref().map(|b| self.block(b, true));
            out.push(SwitchCase {
                label,
                body,
                span: c.span,
            });
        }
        StmtKind::Switch(x, out)
    }
}

/// Structural equality of checked expressions, ignoring spans.
fn same_expr(a: &Expr, b: &Expr) -> bool {
    use ExprKind as K;
    a.ty == b.ty
        && match (&a.kind, &b.kind) {
            (K::Const(x), K::Const(y)) => x == y,
            (K::Ref(x), K::Ref(y)) => x == y,
            (K::Field(x, i), K::Field(y, j)) => i == j && same_expr(x, y),
            (K::Index(x, i), K::Index(y, j)) => same_expr(x, y) && same_expr(i, j),
            (K::StackProp(x, p), K::StackProp(y, q)) => p == q && same_expr(x, y),
            (K::Slice(x, h, l), K::Slice(y, g, m)) => h == g && l == m && same_expr(x, y),
            (K::Cast(x), K::Cast(y)) | (K::Unary(_, x), K::Unary(_, y)) => {
                same_kind(&a.kind, &b.kind) && same_expr(x, y)
            }
            (K::Binary(o, x1, x2), K::Binary(p, y1, y2)) => {
                o == p && same_expr(x1, y1) && same_expr(x2, y2)
            }
            _ => false,
        }
}

fn same_kind(a: &ExprKind, b: &ExprKind) -> bool {
    match (a, b) {
        (ExprKind::Unary(x, _), ExprKind::Unary(y, _)) => x == y,
        _ => std::mem::discriminant(a) == std::mem::discriminant(b),
    }
}

/// Whether every path through `stmts` ends in `return` or `exit`.
fn always_returns(stmts: &[Stmt]) -> bool {
    stmts.iter().any(|s| match &s.kind {
        StmtKind::Return(_) | StmtKind::Exit => true,
        StmtKind::Block(b) => always_returns(&b.stmts),
        // A loop's body may not run at all.
        StmtKind::For(_) => false,
        StmtKind::If(_, t, Some(e)) => {
            always_returns(std::slice::from_ref(t)) && always_returns(std::slice::from_ref(e))
        }
        _ => false,
    })
}

pub(crate) type Subst = HashMap<TypeVar, Type>;

/// `t` with bound type variables replaced.
pub(crate) fn subst(t: &Type, s: &Subst) -> Type {
    match t {
        Type::Var(v) => match s.get(v) {
            Some(Type::Var(w)) if w == v => t.clone(),
            Some(b) => subst(b, s),
            None => t.clone(),
        },
        Type::Stack(e, n) => Type::Stack(Box::new(subst(e, s)), *n),
        Type::Tuple(ts) => Type::Tuple(ts.iter().map(|t| subst(t, s)).collect()),
        Type::Extern(id, a) => Type::Extern(*id, a.iter().map(|t| subst(t, s)).collect()),
        Type::Parser(id, a) => Type::Parser(*id, a.iter().map(|t| subst(t, s)).collect()),
        Type::Control(id, a) => Type::Control(*id, a.iter().map(|t| subst(t, s)).collect()),
        Type::Package(id, a) => Type::Package(*id, a.iter().map(|t| subst(t, s)).collect()),
        Type::Set(e) => Type::Set(Box::new(subst(e, s))),
        _ => t.clone(),
    }
}

pub(crate) fn has_vars(t: &Type) -> bool {
    match t {
        Type::Var(_) => true,
        Type::Stack(e, _) | Type::Set(e) => has_vars(e),
        Type::Tuple(ts)
        | Type::Extern(_, ts)
        | Type::Parser(_, ts)
        | Type::Control(_, ts)
        | Type::Package(_, ts) => ts.iter().any(has_vars),
        _ => false,
    }
}

/// A key expression as p4c prints it in the control-plane name of a key: operands separated
/// by their operator, constants in the base they were written in; `None` for forms p4c's
/// printing is not known for.
fn key_source_text(e: &ast::Expr) -> Option<String> {
    use ast::ExprKind as K;
    Some(match &e.kind {
        K::Path(p) => p.name.name.clone(),
        K::Member(b, m) => format!("{}.{}", key_source_text(b)?, m.name),
        K::Index(b, i) => format!("{}[{}]", key_source_text(b)?, key_source_text(i)?),
        K::Slice(b, h, l) => format!(
            "{}[{}:{}]",
            key_source_text(b)?,
            key_source_text(h)?,
            key_source_text(l)?
        ),
        K::Int { value, radix, .. } => match radix {
            16 => format!("0x{}", value.to_str_radix(16)),
            8 => format!("0o{}", value.to_str_radix(8)),
            2 => format!("0b{}", value.to_str_radix(2)),
            _ => value.to_string(),
        },
        K::Bool(b) => b.to_string(),
        K::Unary(op, x) => format!("{}{}", op.symbol(), key_source_text(x)?),
        K::Binary(op, a, b) => format!(
            "{} {} {}",
            key_source_text(a)?,
            op.symbol(),
            key_source_text(b)?
        ),
        _ => return None,
    })
}
