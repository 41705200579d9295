//! The typed IR printed as P4 (`p4-compile --dump-ir`): names resolved, implicit casts and
//! literal widths written out, constants folded, arguments in parameter order. Meant for
//! reading what the front end understood, like p4c's `--top4`.

use crate::ir::*;
use p4_syntax::ast::{self, AnnotationBody, Direction};
use std::fmt::Write;

pub fn to_p4(p: &Program) -> String {
    let mut w = Printer {
        p,
        out: String::new(),
        indent: 0,
    };
    w.program();
    w.out
}

struct Printer<'a> {
    p: &'a Program,
    out: String,
    indent: usize,
}

fn annotation_arg(e: &ast::Expr) -> String {
    match &e.kind {
        ast::ExprKind::Str(s) => format!("{s:?}"),
        ast::ExprKind::Int { value, .. } => value.to_string(),
        ast::ExprKind::Bool(b) => b.to_string(),
        ast::ExprKind::Path(p) => p.name.name.clone(),
        _ => "...".to_string(),
    }
}

/// An annotation's body as written: `(args)`, `[k=v, ...]` for key-value pairs and
/// structured annotations, nothing when empty.
fn annotation_body(body: &AnnotationBody) -> String {
    match body {
        AnnotationBody::Empty => String::new(),
        AnnotationBody::Exprs(es) => {
            let args: Vec<String> = es.iter().map(annotation_arg).collect();
            format!("({})", args.join(", "))
        }
        AnnotationBody::KeyValues(kvs) => {
            let args: Vec<String> = kvs
                .iter()
                .map(|(k, v)| format!("{}={}", k.name, annotation_arg(v)))
                .collect();
            format!("[{}]", args.join(", "))
        }
        AnnotationBody::Unparsed(t) => format!("({t})"),
        AnnotationBody::Structured(inner) => {
            let text = annotation_body(inner);
            let items = text
                .strip_prefix(['(', '['])
                .and_then(|t| t.strip_suffix([')', ']']));
            format!("[{}]", items.unwrap_or(&text))
        }
    }
}

impl Printer<'_> {
    fn line(&mut self, s: &str) {
        for _ in 0..self.indent {
            self.out.push_str("    ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    fn annotations(&self, annos: &[ast::Annotation]) -> String {
        let mut s = String::new();
        for a in annos {
            let _ = write!(s, "@{}{} ", a.name.name, annotation_body(&a.body));
        }
        s
    }

    fn ty(&self, t: &Type) -> String {
        self.p.show(t)
    }

    fn tparams(&self, vs: &[TypeVar]) -> String {
        if vs.is_empty() {
            return String::new();
        }
        let v: Vec<String> = vs.iter().map(|v| self.ty(&Type::Var(*v))).collect();
        format!("<{}>", v.join(", "))
    }

    fn params(&self, ps: &[Param]) -> String {
        let v: Vec<String> = ps
            .iter()
            .map(|x| {
                let dir = match x.dir {
                    Some(Direction::In) => "in ",
                    Some(Direction::Out) => "out ",
                    Some(Direction::InOut) => "inout ",
                    None => "",
                };
                let opt = if x.optional { "@optional " } else { "" };
                let def = x
                    .default
                    .as_ref()
                    .map(|d| format!(" = {}", self.expr(d)))
                    .unwrap_or_default();
                format!("{opt}{dir}{} {}{def}", self.ty(&x.ty), x.name)
            })
            .collect();
        v.join(", ")
    }

    fn value(&self, v: &Value, ty: &Type) -> String {
        match (v, ty) {
            (_, Type::Set(inner)) => self.value(v, inner),
            (_, Type::NewType(id)) => match &self.p.ty(*id).kind {
                TypeDeclKind::NewType(u) => {
                    format!("({}){}", self.p.ty(*id).name, self.value(v, u))
                }
                _ => "?".to_string(),
            },
            (Value::Bool(b), _) => b.to_string(),
            (Value::Int(i), Type::Bit(w)) => format!("{w}w{i}"),
            (Value::Int(i), Type::Int(w)) if i.sign() == num_bigint::Sign::Minus => {
                format!("-{w}s{}", -i)
            }
            (Value::Int(i), Type::Int(w)) => format!("{w}s{i}"),
            (Value::Int(i), Type::SerEnum(id, _)) => match &self.p.ty(*id).kind {
                TypeDeclKind::SerEnum { members, .. } => members
                    .iter()
                    .find(|(_, m)| m == i)
                    .map(|(n, _)| format!("{}.{n}", self.p.ty(*id).name))
                    .unwrap_or_else(|| format!("({}){i}", self.p.ty(*id).name)),
                _ => i.to_string(),
            },
            (Value::Int(i), _) => i.to_string(),
            (Value::Str(s), _) => format!("{s:?}"),
            (Value::Error(i), _) => format!("error.{}", self.p.errors.get(*i).map_or("?", |s| s)),
            (Value::MatchKind(i), _) => self.p.match_kinds.get(*i).cloned().unwrap_or_default(),
            (Value::EnumMember(id, i), _) => match &self.p.ty(*id).kind {
                TypeDeclKind::Enum(ms) => {
                    format!("{}.{}", self.p.ty(*id).name, ms.get(*i).map_or("?", |s| s))
                }
                _ => "?".to_string(),
            },
            (Value::Tuple(vs), _) => {
                let tys: Vec<Type> = match ty {
                    Type::Tuple(ts) => ts.clone(),
                    _ => self
                        .p
                        .fields(ty)
                        .map(|f| f.iter().map(|f| f.ty.clone()).collect())
                        .unwrap_or_default(),
                };
                let items: Vec<String> = vs
                    .iter()
                    .enumerate()
                    .map(|(i, v)| self.value(v, tys.get(i).unwrap_or(&Type::InfInt)))
                    .collect();
                format!("{{ {} }}", items.join(", "))
            }
        }
    }

    fn expr(&self, e: &Expr) -> String {
        match &e.kind {
            ExprKind::Const(v) => self.value(v, &e.ty),
            ExprKind::Ref(id) => self.p.decl(*id).name.clone(),
            ExprKind::Field(b, i) => {
                let name = self
                    .p
                    .fields(&b.ty)
                    .and_then(|f| f.get(*i))
                    .map_or("?".to_string(), |f| f.name.clone());
                format!("{}.{name}", self.expr(b))
            }
            ExprKind::Index(b, i) => format!("{}[{}]", self.expr(b), self.expr(i)),
            ExprKind::StackProp(b, p) => {
                let n = match p {
                    StackProp::Next => "next",
                    StackProp::Last => "last",
                    StackProp::LastIndex => "lastIndex",
                };
                format!("{}.{n}", self.expr(b))
            }
            ExprKind::Slice(b, h, l) => format!("{}[{h}:{l}]", self.expr(b)),
            ExprKind::Unary(op, x) => format!("{}({})", op.symbol(), self.expr(x)),
            ExprKind::Binary(op, a, b) => {
                format!("({} {} {})", self.expr(a), op.symbol(), self.expr(b))
            }
            ExprKind::Ternary(c, a, b) => {
                format!("({} ? {} : {})", self.expr(c), self.expr(a), self.expr(b))
            }
            ExprKind::Cast(x) => format!("({}){}", self.ty(&e.ty), self.expr(x)),
            ExprKind::Tuple(items) => {
                let v: Vec<String> = items.iter().map(|i| self.expr(i)).collect();
                format!("{{ {} }}", v.join(", "))
            }
            ExprKind::TableApply(t, f) => {
                let f = match f {
                    TableField::Hit => "hit",
                    TableField::Miss => "miss",
                    TableField::ActionRun => "action_run",
                };
                format!("{}.apply().{f}", self.p.decl(*t).name)
            }
            ExprKind::DontCare => "_".to_string(),
            ExprKind::Default => "default".to_string(),
            ExprKind::Call(c) => self.call(c),
        }
    }

    /// Keysets: tuples in parentheses, masks and ranges without them.
    fn keyset(&self, e: &Expr) -> String {
        match &e.kind {
            ExprKind::Tuple(items) => {
                let v: Vec<String> = items.iter().map(|i| self.keyset(i)).collect();
                format!("({})", v.join(", "))
            }
            ExprKind::Binary(op @ (ast::BinOp::Mask | ast::BinOp::Range), a, b) => {
                format!("{} {} {}", self.expr(a), op.symbol(), self.expr(b))
            }
            _ => self.expr(e),
        }
    }

    /// Arguments in parameter order; omitted optional ones are left out (they come last in
    /// every signature we have, so positions stay right).
    fn args(&self, args: &[Option<Expr>]) -> String {
        let v: Vec<String> = args.iter().flatten().map(|a| self.expr(a)).collect();
        v.join(", ")
    }

    fn call(&self, c: &Call) -> String {
        let targs = if c.type_args.is_empty() {
            String::new()
        } else {
            let v: Vec<String> = c.type_args.iter().map(|t| self.ty(t)).collect();
            format!("<{}>", v.join(", "))
        };
        let args = self.args(&c.args);
        match &c.target {
            CallTarget::Action(d) | CallTarget::Function(d) | CallTarget::ExternFunction(d) => {
                format!("{}{targs}({args})", self.p.decl(*d).name)
            }
            CallTarget::Method {
                receiver,
                extern_ty,
                index,
            } => {
                let name = match &self.p.ty(*extern_ty).kind {
                    TypeDeclKind::Extern { methods, .. } => methods
                        .get(*index)
                        .map_or("?".to_string(), |m| m.name.clone()),
                    _ => "?".to_string(),
                };
                format!("{}.{name}{targs}({args})", self.expr(receiver))
            }
            CallTarget::Apply(r) => format!("{}.apply({args})", self.expr(r)),
            CallTarget::Builtin(r, b) => {
                let n = match b {
                    Builtin::IsValid => "isValid",
                    Builtin::SetValid => "setValid",
                    Builtin::SetInvalid => "setInvalid",
                    Builtin::PushFront => "push_front",
                    Builtin::PopFront => "pop_front",
                };
                format!("{}.{n}({args})", self.expr(r))
            }
            CallTarget::Construct(t) => format!("{}({args})", self.ty(t)),
        }
    }

    fn block(&mut self, b: &Block) {
        for s in &b.stmts {
            self.stmt(s);
        }
    }

    fn braced(&mut self, head: &str, b: &Block) {
        self.line(&format!("{head}{{"));
        self.indent += 1;
        self.block(b);
        self.indent -= 1;
        self.line("}");
    }

    fn stmt(&mut self, s: &Stmt) {
        match &s.kind {
            StmtKind::Assign(l, r) => {
                let t = format!("{} = {};", self.expr(l), self.expr(r));
                self.line(&t);
            }
            StmtKind::Call(e) => {
                let t = format!("{};", self.expr(e));
                self.line(&t);
            }
            StmtKind::If(c, t, e) => {
                let head = format!("if ({}) {{", self.expr(c));
                self.line(&head);
                self.branch(t);
                if let Some(e) = e {
                    self.line("} else {");
                    self.branch(e);
                }
                self.line("}");
            }
            StmtKind::Block(b) => self.braced("", b),
            StmtKind::Exit => self.line("exit;"),
            StmtKind::Return(None) => self.line("return;"),
            StmtKind::Return(Some(e)) => {
                let t = format!("return {};", self.expr(e));
                self.line(&t);
            }
            StmtKind::Switch(e, cases) => {
                let head = format!("switch ({}) {{", self.expr(e));
                self.line(&head);
                self.indent += 1;
                for c in cases {
                    let label = match &c.label {
                        SwitchLabel::Action(a) => self.p.decl(*a).name.clone(),
                        SwitchLabel::Value(v) => self.expr(v),
                        SwitchLabel::Default => "default".to_string(),
                    };
                    match &c.body {
                        Some(b) => self.braced(&format!("{label}: "), b),
                        None => self.line(&format!("{label}:")),
                    }
                }
                self.indent -= 1;
                self.line("}");
            }
            StmtKind::Empty => self.line(";"),
            StmtKind::Var(id) | StmtKind::Const(id) => self.decl(*id),
            StmtKind::Break => self.line("break;"),
            StmtKind::Continue => self.line("continue;"),
            // The init part before the loop in a block of its own, which scopes it the same.
            StmtKind::For(l) => {
                self.line("{");
                self.indent += 1;
                for s in &l.init {
                    self.stmt(s);
                }
                let mut update = Vec::new();
                for s in &l.update {
                    self.clause(s, &mut update);
                }
                let head = format!("for (; {}; {}) {{", self.expr(&l.cond), update.join(", "));
                self.line(&head);
                self.branch(&l.body);
                self.line("}");
                self.indent -= 1;
                self.line("}");
            }
        }
    }

    /// A statement of a loop's update part as the comma-separated clauses P4 writes there
    /// (the front end only puts assignments and calls there; the midend may add locals for
    /// hoisted calls).
    fn clause(&self, s: &Stmt, out: &mut Vec<String>) {
        match &s.kind {
            StmtKind::Assign(l, r) => out.push(format!("{} = {}", self.expr(l), self.expr(r))),
            StmtKind::Call(e) => out.push(self.expr(e)),
            StmtKind::Block(b) => b.stmts.iter().for_each(|s| self.clause(s, out)),
            StmtKind::Var(id) => {
                let d = self.p.decl(*id);
                if let DeclKind::Var { ty, init } = &d.kind {
                    let init = init
                        .as_ref()
                        .map(|e| format!(" = {}", self.expr(e)))
                        .unwrap_or_default();
                    out.push(format!("{} {}{init}", self.ty(ty), d.name));
                }
            }
            _ => {}
        }
    }

    /// The body of an `if` branch, without a second pair of braces for a block.
    fn branch(&mut self, s: &Stmt) {
        self.indent += 1;
        match &s.kind {
            StmtKind::Block(b) => self.block(b),
            _ => self.stmt(s),
        }
        self.indent -= 1;
    }

    fn action_ref(&self, r: &ActionRef) -> String {
        format!(
            "{}{}({})",
            self.annotations(&r.annotations),
            self.p.decl(r.action).name,
            self.args(&r.args)
        )
    }

    fn decl(&mut self, id: DeclId) {
        let d = self.p.decl(id);
        let annos = self.annotations(&d.annotations);
        let name = d.name.clone();
        match &d.kind {
            DeclKind::Const { ty, value } => {
                let t = format!(
                    "{annos}const {} {name} = {};",
                    self.ty(ty),
                    self.value(value, ty)
                );
                self.line(&t);
            }
            DeclKind::Var { ty, init } => {
                let init = init
                    .as_ref()
                    .map(|e| format!(" = {}", self.expr(e)))
                    .unwrap_or_default();
                let t = format!("{annos}{} {name}{init};", self.ty(ty));
                self.line(&t);
            }
            DeclKind::Param(_) | DeclKind::State { .. } => {}
            DeclKind::Action { params, body } => {
                let head = format!("{annos}action {name}({}) ", self.params(params));
                self.braced(&head, body);
            }
            DeclKind::Function {
                ret,
                params,
                body,
                type_params,
            } => {
                let tps = self.tparams(type_params);
                let head = format!(
                    "{annos}{} {name}{tps}({}) ",
                    self.ty(ret),
                    self.params(params)
                );
                self.braced(&head, body);
            }
            DeclKind::ExternFunction(m) => {
                let ret = m.ret.as_ref().map_or("void".to_string(), |t| self.ty(t));
                let tps = self.tparams(&m.type_params);
                let t = format!(
                    "{annos}extern {ret} {name}{tps}({});",
                    self.params(&m.params)
                );
                self.line(&t);
            }
            DeclKind::Parser {
                params,
                ctor_params,
                locals,
                states,
                ..
            } => {
                let ctor = if ctor_params.is_empty() {
                    String::new()
                } else {
                    format!("({})", self.params(ctor_params))
                };
                let head = format!("{annos}parser {name}({}){ctor} {{", self.params(params));
                self.line(&head);
                self.indent += 1;
                for l in locals {
                    self.decl(*l);
                }
                for s in states {
                    self.state(*s);
                }
                self.indent -= 1;
                self.line("}");
            }
            DeclKind::Control {
                params,
                ctor_params,
                locals,
                apply,
                ..
            } => {
                let ctor = if ctor_params.is_empty() {
                    String::new()
                } else {
                    format!("({})", self.params(ctor_params))
                };
                let head = format!("{annos}control {name}({}){ctor} {{", self.params(params));
                self.line(&head);
                self.indent += 1;
                for l in locals {
                    self.decl(*l);
                }
                self.braced("apply ", apply);
                self.indent -= 1;
                self.line("}");
            }
            DeclKind::Instance {
                ty, args, methods, ..
            } => {
                // Type arguments left to inference per call (`register<bit<32>>`) stay unwritten.
                let shown = match ty {
                    Type::Extern(id, targs) => {
                        let given: Vec<String> = targs
                            .iter()
                            .take_while(|t| !matches!(t, Type::Var(_)))
                            .map(|t| self.ty(t))
                            .collect();
                        let name = &self.p.ty(*id).name;
                        if given.is_empty() {
                            name.clone()
                        } else {
                            format!("{name}<{}>", given.join(", "))
                        }
                    }
                    t => self.ty(t),
                };
                let t = format!("{annos}{shown}({}) {name}", self.args(args));
                if methods.is_empty() {
                    self.line(&format!("{t};"));
                } else {
                    self.line(&format!("{t} = {{"));
                    self.indent += 1;
                    for m in methods {
                        self.decl(*m);
                    }
                    self.indent -= 1;
                    self.line("};");
                }
            }
            DeclKind::Table(t) => {
                self.line(&format!("{annos}table {name} {{"));
                self.indent += 1;
                if !t.key.is_empty() {
                    self.line("key = {");
                    self.indent += 1;
                    for k in &t.key {
                        let s = format!(
                            "{}: {}{};",
                            self.expr(&k.expr),
                            k.match_kind,
                            format!(" {}", self.annotations(&k.annotations)).trim_end()
                        );
                        self.line(&s);
                    }
                    self.indent -= 1;
                    self.line("}");
                }
                let actions: Vec<String> = t.actions.iter().map(|a| self.action_ref(a)).collect();
                self.line(&format!("actions = {{ {}; }}", actions.join("; ")));
                if let Some(d) = &t.default_action {
                    let c = if t.default_action_const { "const " } else { "" };
                    let s = format!("{c}default_action = {};", self.action_ref(d));
                    self.line(&s);
                }
                if !t.entries.is_empty() {
                    let c = if t.entries_const { "const " } else { "" };
                    self.line(&format!("{c}entries = {{"));
                    self.indent += 1;
                    for e in &t.entries {
                        let keys: Vec<String> = e.keys.iter().map(|k| self.keyset(k)).collect();
                        let prio = e
                            .priority
                            .map(|p| format!("priority={p}: "))
                            .unwrap_or_default();
                        let s = format!(
                            "{prio}({}) : {};",
                            keys.join(", "),
                            self.action_ref(&e.action)
                        );
                        self.line(&s);
                    }
                    self.indent -= 1;
                    self.line("}");
                }
                if let Some(n) = t.size {
                    self.line(&format!("size = {n};"));
                }
                for prop in &t.props {
                    let c = if prop.is_const { "const " } else { "" };
                    let s = format!("{c}{} = {};", prop.name, self.expr(&prop.value));
                    self.line(&s);
                }
                self.indent -= 1;
                self.line("}");
            }
            DeclKind::ValueSet { elem, size } => {
                let t = format!("{annos}value_set<{}>({size}) {name};", self.ty(elem));
                self.line(&t);
            }
        }
    }

    fn state_name(&self, s: &StateRef) -> String {
        match s {
            StateRef::Accept => "accept".to_string(),
            StateRef::Reject => "reject".to_string(),
            StateRef::State(id) => self.p.decl(*id).name.clone(),
        }
    }

    fn state(&mut self, id: DeclId) {
        let d = self.p.decl(id);
        let DeclKind::State { stmts, transition } = &d.kind else {
            return;
        };
        self.line(&format!(
            "{}state {} {{",
            self.annotations(&d.annotations),
            d.name
        ));
        self.indent += 1;
        for s in stmts {
            self.stmt(s);
        }
        match transition {
            Transition::Direct(s) => {
                let t = format!("transition {};", self.state_name(s));
                self.line(&t);
            }
            Transition::Select { exprs, cases, .. } => {
                let v: Vec<String> = exprs.iter().map(|e| self.expr(e)).collect();
                self.line(&format!("transition select({}) {{", v.join(", ")));
                self.indent += 1;
                for c in cases {
                    let t = format!("{}: {};", self.keyset(&c.keyset), self.state_name(&c.state));
                    self.line(&t);
                }
                self.indent -= 1;
                self.line("}");
            }
        }
        self.indent -= 1;
        self.line("}");
    }

    fn type_decl(&mut self, t: &TypeDecl) {
        let annos = self.annotations(&t.annotations);
        let fields = |kw: &str, fs: &[Field], me: &mut Self| {
            me.line(&format!("{annos}{kw} {} {{", t.name));
            me.indent += 1;
            for f in fs {
                let s = format!(
                    "{}{} {};",
                    me.annotations(&f.annotations),
                    me.ty(&f.ty),
                    f.name
                );
                me.line(&s);
            }
            me.indent -= 1;
            me.line("}");
        };
        // Specialisations of generic structs (named `S<args>`) are written as uses of the
        // generic declaration, which is printed instead.
        if t.name.contains('<') {
            return;
        }
        match &t.kind {
            TypeDeclKind::Header(fs) => fields("header", fs, self),
            TypeDeclKind::Struct(fs) => fields("struct", fs, self),
            TypeDeclKind::HeaderUnion(fs) => fields("header_union", fs, self),
            TypeDeclKind::Generic {
                type_params,
                kind,
                fields: fs,
            } => {
                let kw = match kind {
                    ast::StructKind::Struct => "struct",
                    ast::StructKind::Header => "header",
                    ast::StructKind::HeaderUnion => "header_union",
                };
                let generic = TypeDecl {
                    name: format!("{}{}", t.name, self.tparams(type_params)),
                    ..t.clone()
                };
                let fs = fs.clone();
                let annos = self.annotations(&generic.annotations);
                self.line(&format!("{annos}{kw} {} {{", generic.name));
                self.indent += 1;
                for f in &fs {
                    let s = format!(
                        "{}{} {};",
                        self.annotations(&f.annotations),
                        self.ty(&f.ty),
                        f.name
                    );
                    self.line(&s);
                }
                self.indent -= 1;
                self.line("}");
            }
            TypeDeclKind::Enum(ms) => {
                self.line(&format!("{annos}enum {} {{ {} }}", t.name, ms.join(", ")));
            }
            TypeDeclKind::SerEnum {
                underlying,
                members,
            } => {
                let ms: Vec<String> = members.iter().map(|(n, v)| format!("{n} = {v}")).collect();
                let s = format!(
                    "{annos}enum {} {} {{ {} }}",
                    self.ty(underlying),
                    t.name,
                    ms.join(", ")
                );
                self.line(&s);
            }
            TypeDeclKind::NewType(u) => {
                let s = format!("{annos}type {} {};", self.ty(u), t.name);
                self.line(&s);
            }
            TypeDeclKind::Extern {
                methods,
                ctors,
                type_params,
            } => {
                let tps = self.tparams(type_params);
                self.line(&format!("{annos}extern {}{tps} {{", t.name));
                self.indent += 1;
                for m in ctors {
                    let s = format!("{}({});", t.name, self.params(&m.params));
                    self.line(&s);
                }
                for m in methods {
                    let ret = m.ret.as_ref().map_or("void".to_string(), |r| self.ty(r));
                    let a = if m.abstract_ { "abstract " } else { "" };
                    let tps = self.tparams(&m.type_params);
                    let s = format!("{a}{ret} {}{tps}({});", m.name, self.params(&m.params));
                    self.line(&s);
                }
                self.indent -= 1;
                self.line("}");
            }
            TypeDeclKind::Block {
                kind,
                params,
                ctor_params,
                implementation: None,
                type_params,
            } => {
                let tps = self.tparams(type_params);
                let (kw, ps) = match kind {
                    BlockKind::Parser => ("parser", params),
                    BlockKind::Control => ("control", params),
                    BlockKind::Package => ("package", ctor_params),
                };
                let s = format!("{annos}{kw} {}{tps}({});", t.name, self.params(ps));
                self.line(&s);
            }
            TypeDeclKind::Block { .. } => {}
        }
    }

    fn program(&mut self) {
        if !self.p.errors.is_empty() {
            let s = format!("error {{ {} }}", self.p.errors.join(", "));
            self.line(&s);
        }
        if !self.p.match_kinds.is_empty() {
            let s = format!("match_kind {{ {} }}", self.p.match_kinds.join(", "));
            self.line(&s);
        }
        for t in &self.p.types {
            self.type_decl(t);
        }
        for id in self.p.top.clone() {
            self.decl(id);
        }
    }
}
