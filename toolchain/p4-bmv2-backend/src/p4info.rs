//! The control-plane model (`p4_p4info::ControlPlane`) of the program, collected while the
//! pipelines are lowered: names as p4c computes them (`MyIngress.ipv4_lpm`, `@name` applied,
//! top-level actions under their own names), in p4c's order (each control's actions in
//! declaration order after the top-level actions its tables use, then its tables and extern
//! instances in declaration order).

use crate::num::const_int;
use crate::{Bind, Ctx, R};
use num_traits::ToPrimitive;
use p4_bmv2_json as j;
use p4_p4info as m;
use p4_sema::ir::{self, DeclId, DeclKind, ExprKind, Type, TypeDeclKind};
use p4_syntax::ast;
use std::collections::{HashMap, HashSet};

#[derive(Default)]
pub(crate) struct Collector {
    model: m::ControlPlane,
    /// Extern instances already declared (by name).
    pub declared: HashSet<String>,
    /// Tables by name, placed in declaration order at the end.
    tables: HashMap<String, m::Table>,
    table_order: Vec<String>,
    actions_seen: HashSet<String>,
    types_seen: HashSet<String>,
    /// Action profiles in p4c's order: each control's declared profiles and its tables'
    /// in-place ones, in declaration order.
    profile_order: Vec<String>,
    /// Declared action profiles and selectors, by name: p4c lists them even when no table
    /// uses them.
    declared_profiles: Vec<(String, DeclId)>,
    /// Top-level extern instances by name, in declaration order.
    top_instances: Vec<String>,
}

fn annotations(annos: &[ast::Annotation]) -> Vec<m::Annotation> {
    let mut out = Vec::new();
    for a in annos {
        let name = a.name.name.as_str();
        match (name, &a.body) {
            ("name", _) => {
                if let Some(s) = a.string_arg() {
                    out.push(m::Annotation::Name(s.to_string()));
                }
            }
            ("id", ast::AnnotationBody::Exprs(es)) => {
                if let Some(ast::ExprKind::Int { value, .. }) = es.first().map(|e| &e.kind) {
                    if let Some(v) = value.to_u64() {
                        out.push(m::Annotation::Id(v));
                    }
                }
            }
            ("brief", _) => out.push(m::Annotation::Brief(a.string_arg().unwrap_or("").into())),
            ("description", _) => out.push(m::Annotation::Description(
                a.string_arg().unwrap_or("").into(),
            )),
            // Annotations that only steer the compiler.
            ("field_list" | "alias" | "metadata" | "match", _) => {}
            (_, ast::AnnotationBody::Structured(body)) => {
                if let Some(body) = structured_body(body) {
                    out.push(m::Annotation::Structured {
                        name: name.to_string(),
                        body,
                    });
                }
            }
            (_, ast::AnnotationBody::Empty) => {
                out.push(m::Annotation::rendered(format!("@{name}")))
            }
            (_, ast::AnnotationBody::Exprs(es)) => {
                let mut args = Vec::new();
                for e in es {
                    match &e.kind {
                        ast::ExprKind::Str(s) => args.push(format!("{s:?}")),
                        ast::ExprKind::Int { value, .. } => args.push(value.to_string()),
                        _ => args.push("...".into()),
                    }
                }
                out.push(m::Annotation::rendered(format!(
                    "@{name}({})",
                    args.join(", ")
                )));
            }
            _ => {}
        }
    }
    out
}

/// A structured annotation's body with its expressions evaluated, as p4c lists it in
/// P4Info; `None` when an expression is not a constant this can evaluate.
fn structured_body(body: &ast::AnnotationBody) -> Option<m::StructuredBody> {
    Some(match body {
        ast::AnnotationBody::Empty => m::StructuredBody::Empty,
        ast::AnnotationBody::Exprs(es) => {
            m::StructuredBody::Expressions(es.iter().map(constant).collect::<Option<_>>()?)
        }
        ast::AnnotationBody::KeyValues(kvs) => m::StructuredBody::KeyValues(
            kvs.iter()
                .map(|(k, v)| Some((k.name.clone(), constant(v)?)))
                .collect::<Option<_>>()?,
        ),
        _ => return None,
    })
}

/// A compile-time constant of a structured annotation: a string, a boolean or an integer,
/// with arithmetic, comparisons and logic folded (`5+6` is 11, `1==2` false).
fn constant(e: &ast::Expr) -> Option<m::AnnotationValue> {
    use ast::{BinOp as B, ExprKind as K, UnOp as U};
    use m::AnnotationValue::{Bool, Int, String as Str};
    Some(match &e.kind {
        K::Str(t) => Str(t.clone()),
        K::Bool(b) => Bool(*b),
        K::Int { value, .. } => Int(value.to_i64()?),
        K::Unary(op, x) => match (op, constant(x)?) {
            (U::Neg, Int(v)) => Int(v.checked_neg()?),
            (U::Plus, Int(v)) => Int(v),
            (U::BitNot, Int(v)) => Int(!v),
            (U::Not, Bool(b)) => Bool(!b),
            _ => return None,
        },
        K::Binary(op, a, b) => match (constant(a)?, constant(b)?) {
            (Int(x), Int(y)) => match op {
                B::Add => Int(x.checked_add(y)?),
                B::Sub => Int(x.checked_sub(y)?),
                B::Mul => Int(x.checked_mul(y)?),
                B::Div => Int(x.checked_div(y)?),
                B::Mod => Int(x.checked_rem(y)?),
                B::Shl => Int(x.checked_shl(u32::try_from(y).ok()?)?),
                B::Shr => Int(x.checked_shr(u32::try_from(y).ok()?)?),
                B::BitAnd => Int(x & y),
                B::BitOr => Int(x | y),
                B::BitXor => Int(x ^ y),
                B::Eq => Bool(x == y),
                B::Ne => Bool(x != y),
                B::Lt => Bool(x < y),
                B::Le => Bool(x <= y),
                B::Gt => Bool(x > y),
                B::Ge => Bool(x >= y),
                _ => return None,
            },
            (Bool(x), Bool(y)) => match op {
                B::And => Bool(x && y),
                B::Or => Bool(x || y),
                B::Eq => Bool(x == y),
                B::Ne => Bool(x != y),
                _ => return None,
            },
            (Str(x), Str(y)) => match op {
                B::Eq => Bool(x == y),
                B::Ne => Bool(x != y),
                _ => return None,
            },
            _ => return None,
        },
        _ => return None,
    })
}

/// `@p4runtime_translation("uri", N | bit<N> | string)`: how the controller sees a `type`.
fn translation(a: &ast::Annotation) -> Option<m::Translation> {
    let ast::AnnotationBody::Exprs(es) = &a.body else {
        return None;
    };
    let [uri, sdn] = es.as_slice() else {
        return None;
    };
    let ast::ExprKind::Str(uri) = &uri.kind else {
        return None;
    };
    let int = |e: &ast::Expr| match &e.kind {
        ast::ExprKind::Int { value, .. } => value.to_u32(),
        _ => None,
    };
    let sdn = match &sdn.kind {
        ast::ExprKind::TypeExpr(t) => match &t.kind {
            ast::TypeKind::String => m::SdnType::String,
            ast::TypeKind::Bit(w) => m::SdnType::Bitwidth(int(w)?),
            _ => return None,
        },
        ast::ExprKind::Path(p) if p.name.name == "string" => m::SdnType::String,
        _ => m::SdnType::Bitwidth(int(sdn)?),
    };
    Some(m::Translation {
        uri: uri.clone(),
        sdn,
    })
}

/// The `key = value` pairs of an annotation (`@pkginfo(name = "x", ...)`).
fn key_values<'a>(
    annos: &'a [ast::Annotation],
    name: &'a str,
) -> impl Iterator<Item = (&'a str, &'a ast::Expr)> {
    annos
        .iter()
        .filter(move |a| a.name.name == name)
        .flat_map(|a| match &a.body {
            ast::AnnotationBody::KeyValues(kvs) => kvs.as_slice(),
            _ => &[],
        })
        .map(|(k, v)| (k.name.as_str(), v))
}

fn unit(s: &str) -> m::Unit {
    match s {
        "bytes" => m::Unit::Bytes,
        "packets_and_bytes" => m::Unit::PacketsAndBytes,
        _ => m::Unit::Packets,
    }
}

impl Collector {
    pub fn begin(&mut self, p: &ir::Program, main: DeclId) {
        self.model.arch = "v1model".into();
        let annos = &p.decl(main).annotations;
        let package = &mut self.model.package;
        package.annotations = annotations(annos)
            .into_iter()
            .filter(|a| !matches!(a, m::Annotation::Name(_)))
            .collect();
        for (key, value) in key_values(annos, "pkginfo") {
            let ast::ExprKind::Str(text) = &value.kind else {
                continue;
            };
            let slot = match key {
                "name" => &mut package.name,
                "version" => &mut package.version,
                "organization" => &mut package.organization,
                "contact" => &mut package.contact,
                "url" => &mut package.url,
                "arch" => &mut package.arch,
                _ => continue,
            };
            *slot = Some(text.clone());
        }
        package.platform_properties = key_values(annos, "platform_property")
            .filter_map(|(key, value)| match &value.kind {
                ast::ExprKind::Int { value, .. } => Some((key.to_string(), value.to_i32()?)),
                _ => None,
            })
            .collect();
        self.model.errors = p.errors.clone();
        // p4c meets top-level extern instances before it descends from `main` into the
        // controls: they come first, in declaration order.
        for &d in &p.top {
            if let DeclKind::Instance {
                ty: Type::Extern(..),
                ..
            } = &p.decl(d).kind
            {
                let name = match ast::find_annotation(&p.decl(d).annotations, "name")
                    .and_then(|a| a.string_arg())
                {
                    Some(n) => n.trim_start_matches('.').to_string(),
                    None => p.decl(d).name.clone(),
                };
                self.top_instances.push(name.clone());
                self.profile_order.push(name);
            }
        }
    }

    /// The control-plane type of a P4 type; named types are described in `types`.
    fn ty(&mut self, p: &ir::Program, t: &Type) -> m::P4Type {
        match t {
            Type::Bool => m::P4Type::Bool,
            Type::Bit(w) => m::P4Type::Bit(*w),
            Type::Int(w) => m::P4Type::Int(*w),
            Type::Varbit(w) => m::P4Type::Varbit(*w),
            Type::Error => m::P4Type::Error,
            Type::Tuple(ts) => m::P4Type::Tuple(ts.iter().map(|t| self.ty(p, t)).collect()),
            Type::Stack(e, n) => {
                let element = match &**e {
                    Type::Header(id) | Type::HeaderUnion(id) => {
                        self.ty(p, e);
                        p.ty(*id).name.clone()
                    }
                    _ => String::new(),
                };
                m::P4Type::Stack { element, size: *n }
            }
            Type::Header(id)
            | Type::Struct(id)
            | Type::HeaderUnion(id)
            | Type::Enum(id)
            | Type::SerEnum(id, _)
            | Type::NewType(id) => {
                let name = p.ty(*id).name.clone();
                if self.types_seen.insert(name.clone()) {
                    let decl = self.type_decl(p, t, &name);
                    if let Some(d) = decl {
                        self.model.types.push(d);
                    }
                }
                m::P4Type::Named(name)
            }
            _ => m::P4Type::Bit(0),
        }
    }

    fn type_decl(&mut self, p: &ir::Program, t: &Type, name: &str) -> Option<m::TypeDecl> {
        let id = match t {
            Type::Header(id)
            | Type::Struct(id)
            | Type::HeaderUnion(id)
            | Type::Enum(id)
            | Type::SerEnum(id, _)
            | Type::NewType(id) => *id,
            _ => return None,
        };
        let name = name.to_string();
        Some(match &p.ty(id).kind {
            TypeDeclKind::Struct(fs) => m::TypeDecl::Struct {
                name,
                fields: fs
                    .iter()
                    .map(|f| (f.name.clone(), self.ty(p, &f.ty)))
                    .collect(),
            },
            TypeDeclKind::Header(_) => m::TypeDecl::Header {
                name,
                fields: self.header_fields(p, id),
            },
            TypeDeclKind::HeaderUnion(fs) => m::TypeDecl::HeaderUnion {
                name,
                members: fs
                    .iter()
                    .map(|f| {
                        self.ty(p, &f.ty);
                        (f.name.clone(), p.show(&f.ty))
                    })
                    .collect(),
            },
            TypeDeclKind::Enum(ms) => m::TypeDecl::Enum {
                name,
                members: ms.clone(),
            },
            TypeDeclKind::SerEnum {
                underlying,
                members,
            } => m::TypeDecl::SerializableEnum {
                name,
                width: p.width_of(underlying).unwrap_or(0) as u32,
                members: members
                    .iter()
                    .map(|(n, v)| (n.clone(), v.to_u128().unwrap_or(0)))
                    .collect(),
            },
            TypeDeclKind::NewType(u) => {
                let annos = &p.ty(id).annotations;
                m::TypeDecl::NewType {
                    name,
                    underlying: self.ty(p, u),
                    translation: ast::find_annotation(annos, "p4runtime_translation")
                        .and_then(translation),
                    annotations: annotations(annos),
                }
            }
            _ => return None,
        })
    }

    /// A header's fields as the control plane sees them: a struct-typed field's leaves take
    /// its place, named by their path (`s.f8`, p4c's `FlattenHeader`).
    fn header_fields(&mut self, p: &ir::Program, id: ir::TypeId) -> Vec<(String, m::P4Type)> {
        let mut out = Vec::new();
        for f in p.fields(&Type::Header(id)).unwrap_or_default() {
            self.leaves(p, &f.ty, f.name.clone(), &mut out);
        }
        out
    }

    fn leaves(
        &mut self,
        p: &ir::Program,
        t: &Type,
        path: String,
        out: &mut Vec<(String, m::P4Type)>,
    ) {
        match (t, p.fields(t)) {
            (Type::Struct(_), Some(fs)) => {
                for f in fs {
                    self.leaves(p, &f.ty, format!("{path}.{}", f.name), out);
                }
            }
            _ => {
                let ty = self.ty(p, t);
                out.push((path, ty));
            }
        }
    }

    pub fn register(&mut self, p: &ir::Program, name: &str, d: DeclId, elem: &Type, size: u64) {
        let ty = self.ty(p, elem);
        self.model.registers.push(m::Register {
            name: name.into(),
            annotations: annotations(&p.decl(d).annotations),
            ty,
            size: size as i64,
            index_type: None,
        });
    }

    pub fn counter(&mut self, p: &ir::Program, name: &str, d: DeclId, u: &str, size: u64) {
        self.model.counters.push(m::Indexed {
            name: name.into(),
            annotations: annotations(&p.decl(d).annotations),
            unit: unit(u),
            size: size as i64,
            index_type: None,
        });
    }

    pub fn meter(&mut self, p: &ir::Program, name: &str, d: DeclId, u: &str, size: u64) {
        self.model.meters.push(m::Indexed {
            name: name.into(),
            annotations: annotations(&p.decl(d).annotations),
            unit: unit(u),
            size: size as i64,
            index_type: None,
        });
    }

    pub fn digest(&mut self, p: &ir::Program, name: String, t: &Type) {
        let ty = self.ty(p, t);
        if !self.model.digests.iter().any(|d| d.name == name) {
            self.model.digests.push(m::Digest { name, ty });
        }
    }

    pub fn take_model(&mut self) -> m::ControlPlane {
        std::mem::take(&mut self.model)
    }
}

/// The extern types of v1model.p4 and core.p4 that a control can instantiate.
const V1MODEL_EXTERNS: &[&str] = &[
    "counter",
    "direct_counter",
    "meter",
    "direct_meter",
    "register",
    "action_profile",
    "action_selector",
    "Checksum16",
];

/// The actions of a control the control plane sees, as p4c's front end leaves them: those
/// its tables use and those its apply block calls (top-level ones first, p4c localizes them),
/// not those only other actions call (inlined into them) nor unused ones.
pub(crate) fn control(cx: &mut Ctx, d: DeclId) {
    let p = cx.p;
    let DeclKind::Control { locals, .. } = &p.decl(d).kind else {
        return;
    };
    // Top-level actions used by the control's tables come first (p4c localizes them), and so
    // do `p4-midend`'s copies of them (locals with a top-level action's control-plane name).
    let top_names: HashSet<String> = p
        .top
        .iter()
        .filter(|d| matches!(p.decl(**d).kind, DeclKind::Action { .. }))
        .map(|d| cx.cp_name("", *d))
        .collect();
    let top_level = |a: DeclId| {
        !locals.contains(&a)
            || ast::find_annotation(&p.decl(a).annotations, "name")
                .and_then(|n| n.string_arg())
                .and_then(|n| n.strip_prefix('.'))
                .is_some_and(|n| top_names.contains(n))
    };
    let mut in_tables = Vec::new();
    for &l in locals {
        if !p.control_plane_uses.applied_tables.contains(&l) {
            continue;
        }
        if let DeclKind::Table(t) = &p.decl(l).kind {
            in_tables.extend(t.actions.iter().map(|a| a.action));
            if t.default_action.is_none() {
                in_tables.extend(
                    p.top
                        .iter()
                        .copied()
                        .find(|x| p.decl(*x).name == "NoAction"),
                );
            }
        }
    }
    let uses = &p.control_plane_uses;
    let own_extern = locals.iter().any(|&l| match &p.decl(l).kind {
        DeclKind::Instance {
            ty: Type::Extern(id, _),
            ..
        } => !V1MODEL_EXTERNS.contains(&p.ty(*id).name.as_str()),
        _ => false,
    });
    if uses.extern_function_called || own_extern {
        cx.cp.model.extern_type_info = true;
    }
    let direct = uses.direct_actions.get(&d).map_or(&[][..], Vec::as_slice);
    // A directly called action's arguments are bound at its call: it has no parameters left.
    let with_params = |a: &DeclId| in_tables.contains(a);
    for a in in_tables.iter().chain(direct) {
        if top_level(*a) {
            let n = cx.cp_name("", *a);
            action(cx, &n, *a, with_params(a));
        }
    }
    // By control-plane name, so that an action `p4-midend` copied per table binding is listed
    // where the original is declared (p4c's order), not where its copies were appended.
    let named = |set: &[DeclId]| -> HashSet<String> {
        set.iter()
            .filter_map(|a| match cx.frame.env.get(a) {
                Some(Bind::Named(n)) => Some(n.clone()),
                _ => None,
            })
            .collect()
    };
    let (table_names, direct_names) = (named(&in_tables), named(direct));
    for &l in locals {
        match (&p.decl(l).kind, cx.frame.env.get(&l).cloned()) {
            (DeclKind::Action { .. }, Some(Bind::Named(n)))
                if table_names.contains(&n) || direct_names.contains(&n) =>
            {
                let params = table_names.contains(&n);
                action(cx, &n, l, params)
            }
            (DeclKind::Table(t), Some(Bind::Named(n))) => {
                if let Some(profile) = in_place_profile(t, &n) {
                    cx.cp.profile_order.push(profile);
                }
                cx.cp.table_order.push(n)
            }
            (
                DeclKind::Instance {
                    ty: Type::Extern(id, _),
                    ..
                },
                Some(Bind::Named(n)),
            ) if matches!(
                p.ty(*id).name.as_str(),
                "action_profile" | "action_selector"
            ) =>
            {
                cx.cp.profile_order.push(n.clone());
                cx.cp.declared_profiles.push((n, l));
            }
            _ => {}
        }
    }
}

pub(crate) fn action(cx: &mut Ctx, name: &str, d: DeclId, with_params: bool) {
    if !cx.cp.actions_seen.insert(name.to_string()) {
        return;
    }
    let p = cx.p;
    let DeclKind::Action { params, .. } = &p.decl(d).kind else {
        return;
    };
    let mut ps = Vec::new();
    for prm in params.iter().filter(|x| with_params && x.dir.is_none()) {
        let ty = cx.cp.ty(p, &prm.ty);
        let annos = &p.decl(prm.decl).annotations;
        ps.push(m::Param {
            // The controller knows a parameter by its `@name`, as p4c names it.
            name: ast::find_annotation(annos, "name")
                .and_then(|a| a.string_arg())
                .unwrap_or(&prm.name)
                .to_string(),
            ty,
            annotations: annotations(annos),
        });
    }
    cx.cp.model.actions.push(m::Action {
        name: name.to_string(),
        annotations: annotations(&p.decl(d).annotations),
        params: ps,
    });
}

fn match_kind(name: &str) -> m::MatchKind {
    match name {
        "exact" => m::MatchKind::Exact,
        "lpm" => m::MatchKind::Lpm,
        "ternary" => m::MatchKind::Ternary,
        "range" => m::MatchKind::Range,
        "optional" => m::MatchKind::Optional,
        "selector" => m::MatchKind::Selector,
        o => m::MatchKind::Other(o.into()),
    }
}

pub(crate) fn table(cx: &mut Ctx, t: DeclId, name: &str, jt: &j::Table) {
    let p = cx.p;
    let DeclKind::Table(tbl) = &p.decl(t).kind else {
        return;
    };
    let mut match_fields = Vec::new();
    for k in &tbl.key {
        let kind = match_kind(&k.match_kind);
        let ty = cx.cp.ty(p, &k.expr.ty);
        match_fields.push(m::MatchField {
            name: k.control_plane_name(p),
            ty,
            kind,
            annotations: annotations(&k.annotations)
                .into_iter()
                .filter(|a| !matches!(a, m::Annotation::Name(_)))
                .collect(),
        });
    }
    let aname = |cx: &Ctx, d: DeclId| match cx.frame.env.get(&d) {
        Some(Bind::Named(n)) => n.clone(),
        _ => cx.cp_name("", d),
    };
    let mut actions: Vec<m::ActionRef> = tbl
        .actions
        .iter()
        .map(|a| m::ActionRef {
            action: aname(cx, a.action),
            annotations: annotations(&a.annotations),
        })
        .collect();
    let default_action = match &tbl.default_action {
        Some(ar) => {
            let DeclKind::Action { params, .. } = &p.decl(ar.action).kind else {
                return;
            };
            let mut arguments = Vec::new();
            for (prm, a) in params.iter().zip(&ar.args) {
                if prm.dir.is_some() {
                    continue;
                }
                let w = p.width_of(&crate::expr::repr(cx, &prm.ty)).unwrap_or(1) as u32;
                let v = a.as_ref().and_then(const_int).unwrap_or_default();
                let v = crate::num::unsigned(&v, w).to_u128().unwrap_or(0);
                arguments.push(m::bytestring(v, w));
            }
            Some(m::DefaultAction {
                action: aname(cx, ar.action),
                arguments,
                is_const: tbl.default_action_const,
            })
        }
        None => {
            // p4c adds `@defaultonly NoAction` only when the list does not have it already.
            if !actions.iter().any(|a| a.action == "NoAction") {
                actions.push(m::ActionRef {
                    action: "NoAction".into(),
                    annotations: vec![m::Annotation::rendered("@defaultonly")],
                });
            }
            Some(m::DefaultAction {
                action: "NoAction".into(),
                arguments: vec![],
                is_const: false,
            })
        }
    };
    let entries = match (tbl.entries_const, tbl.entries.is_empty()) {
        (true, true) => m::Entries::ConstEmpty,
        (true, false) => m::Entries::Const,
        (false, true) => m::Entries::None,
        (false, false) => m::Entries::Initial,
    };
    cx.cp.tables.insert(
        name.to_string(),
        m::Table {
            name: name.to_string(),
            annotations: annotations(&p.decl(t).annotations),
            match_fields,
            actions,
            default_action,
            implementation: jt.action_profile.clone(),
            direct_counter: jt
                .with_counters
                .then(|| direct_name(tbl, cx, "counters"))
                .flatten(),
            direct_meter: jt.direct_meters.clone(),
            size: tbl.size.map(|s| s as i64),
            supports_timeout: jt.support_timeout,
            entries,
        },
    );
}

fn direct_name(tbl: &ir::Table, cx: &Ctx, prop: &str) -> Option<String> {
    let pr = tbl.props.iter().find(|x| x.name == prop)?;
    match &pr.value.kind {
        ExprKind::Ref(d) => match cx.frame.env.get(d) {
            Some(Bind::Named(n)) => Some(n.clone()),
            _ => Some(cx.cp_name("", *d)),
        },
        _ => None,
    }
}

/// The name of the action profile a table constructs in its `implementation` property:
/// the property's `@name`, else the table's.
pub(crate) fn in_place_name(prop: &ir::TableProp, table: &str) -> String {
    ast::find_annotation(&prop.annotations, "name")
        .and_then(|a| a.string_arg())
        .map(|n| n.strip_prefix('.').unwrap_or(n).to_string())
        .unwrap_or_else(|| table.to_string())
}

/// The action profile a table constructs in its `implementation` property, if any.
fn in_place_profile(t: &ir::Table, table: &str) -> Option<String> {
    let prop = t.props.iter().find(|x| x.name == "implementation")?;
    matches!(prop.value.kind, ExprKind::Call(_)).then(|| in_place_name(prop, table))
}

/// An integer annotation argument (`@max_group_size(200)`).
fn int_annotation(annos: &[ast::Annotation], name: &str) -> Option<i32> {
    match &ast::find_annotation(annos, name)?.body {
        ast::AnnotationBody::Exprs(es) => match es.first().map(|e| &e.kind) {
            Some(ast::ExprKind::Int { value, .. }) => value.to_i32(),
            _ => None,
        },
        _ => None,
    }
}

pub(crate) fn profile(
    cx: &mut Ctx,
    name: &str,
    annos: &[p4_syntax::ast::Annotation],
    in_place: bool,
    with_selector: bool,
    size: u32,
) {
    let semantics = ast::find_annotation(annos, "selector_size_semantics")
        .and_then(|a| a.string_arg())
        .and_then(|s| match s {
            "sum_of_weights" => Some(m::SelectorSizeSemantics::SumOfWeights),
            "sum_of_members" => Some(m::SelectorSizeSemantics::SumOfMembers {
                max_member_weight: int_annotation(annos, "max_member_weight"),
            }),
            _ => None,
        });
    cx.cp.model.action_profiles.push(m::ActionProfile {
        name: name.into(),
        annotations: annotations(annos),
        with_selector,
        size: i64::from(size),
        max_group_size: int_annotation(annos, "max_group_size"),
        selector_size_semantics: semantics,
        in_place,
    });
}

pub(crate) fn direct(cx: &mut Ctx, name: &str, d: DeclId, _table: &str, meter: bool) {
    let decl = cx.p.decl(d);
    let u = match &decl.kind {
        DeclKind::Instance { args, .. } => match args.first() {
            Some(Some(a)) => cx.enum_member(a).unwrap_or_default(),
            _ => String::new(),
        },
        _ => String::new(),
    };
    let dd = m::Direct {
        name: name.into(),
        annotations: annotations(&decl.annotations),
        unit: unit(&u),
        in_place: false,
    };
    if meter {
        cx.cp.model.direct_meters.push(dd);
    } else {
        cx.cp.model.direct_counters.push(dd);
    }
}

pub(crate) fn value_set(cx: &mut Ctx, name: &str, d: DeclId) {
    let decl = cx.p.decl(d);
    if let DeclKind::ValueSet { elem, size } = &decl.kind {
        let element = match elem {
            Type::Struct(_) => m::ValueSetElement::Struct(
                cx.p.fields(elem)
                    .unwrap_or_default()
                    .iter()
                    .map(|f| m::ValueSetField {
                        name: f.name.clone(),
                        width: cx.p.width_of(&f.ty).unwrap_or(0) as u32,
                        // p4c shows a field's `@match(kind)` to the controller, though bmv2
                        // matches value sets exactly.
                        kind: f
                            .annotations
                            .iter()
                            .filter(|a| a.name.name == "match")
                            .find_map(|a| match &a.body {
                                ast::AnnotationBody::Exprs(es) => match es.first().map(|e| &e.kind)
                                {
                                    Some(ast::ExprKind::Path(p)) => Some(match_kind(&p.name.name)),
                                    _ => None,
                                },
                                _ => None,
                            }),
                        annotations: annotations(&f.annotations),
                    })
                    .collect(),
            ),
            _ => m::ValueSetElement::Bits(cx.p.width_of(elem).unwrap_or(0) as u32),
        };
        cx.cp.model.value_sets.push(m::ValueSet {
            name: name.into(),
            annotations: annotations(&decl.annotations),
            size: *size as i32,
            element,
        });
    }
}

/// Places tables in declaration order and adds the controller headers.
pub(crate) fn finish(cx: &mut Ctx) -> R<()> {
    let order = std::mem::take(&mut cx.cp.table_order);
    for n in order {
        if let Some(t) = cx.cp.tables.remove(&n) {
            cx.cp.model.tables.push(t);
        }
    }
    // Declared profiles that no table uses are still listed; then p4c's order.
    let p = cx.p;
    for (n, d) in std::mem::take(&mut cx.cp.declared_profiles) {
        if cx.cp.model.action_profiles.iter().any(|a| a.name == n) {
            continue;
        }
        let DeclKind::Instance {
            ty: Type::Extern(id, _),
            args,
            ..
        } = &p.decl(d).kind
        else {
            continue;
        };
        let selector = p.ty(*id).name == "action_selector";
        let size = args
            .get(usize::from(selector))
            .and_then(|a| a.as_ref())
            .and_then(const_int)
            .and_then(|v| u32::try_from(v).ok())
            .unwrap_or(0);
        profile(cx, &n, &p.decl(d).annotations, false, selector, size);
    }
    let order = std::mem::take(&mut cx.cp.profile_order);
    let position = |name: &str| order.iter().position(|n| n == name).unwrap_or(usize::MAX);
    cx.cp
        .model
        .action_profiles
        .sort_by_key(|a| position(&a.name));
    // The other instances are listed where the lowering met them, top-level ones first.
    let top = std::mem::take(&mut cx.cp.top_instances);
    let position = |name: &str| top.iter().position(|n| n == name).unwrap_or(usize::MAX);
    let model = &mut cx.cp.model;
    model.counters.sort_by_key(|c| position(&c.name));
    model.meters.sort_by_key(|c| position(&c.name));
    model.registers.sort_by_key(|c| position(&c.name));
    for (i, t) in p.types.iter().enumerate() {
        let Some(a) = ast::find_annotation(&t.annotations, "controller_header") else {
            continue;
        };
        let TypeDeclKind::Header(fields) = &t.kind else {
            continue;
        };
        let id = ir::TypeId(i as u32);
        let ps = cx
            .cp
            .header_fields(p, id)
            .into_iter()
            .map(|(name, ty)| {
                // A flattened leaf (`s.f`) has no declaration of its own to annotate.
                let annos = fields
                    .iter()
                    .find(|f| f.name == name)
                    .map(|f| annotations(&f.annotations))
                    .unwrap_or_default();
                m::Param {
                    name,
                    ty,
                    annotations: annos,
                }
            })
            .collect();
        cx.cp.model.controller_headers.push(m::ControllerHeader {
            type_name: t.name.clone(),
            controller_name: a.string_arg().unwrap_or_default().to_string(),
            annotations: annotations(&t.annotations),
            fields: ps,
        });
    }
    Ok(())
}
