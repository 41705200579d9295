//! The typed IR: the program after name resolution, type checking and constant folding.
//!
//! Declarations live in two arenas: `Program::types` (every named type: headers, structs,
//! enums, externs, parser/control/package types, `type` new types) and `Program::decls` (every
//! named value: constants, variables, parameters, actions, functions, parsers, controls,
//! instances, tables, value sets, parser states). References are indices into them, so a pass
//! can rewrite bodies without breaking links. Every expression carries its canonical type.

use num_bigint::BigInt;
use p4_syntax::ast::{Annotation, Direction};
use p4_syntax::Span;
use std::collections::{HashMap, HashSet};
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TypeId(pub u32);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeclId(pub u32);

/// A type parameter of a generic declaration; unique in the whole program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TypeVar(pub u32);

/// A canonical type: typedefs are gone, widths are numbers, generic structs are specialised.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    Bool,
    Error,
    MatchKind,
    String,
    Void,
    /// `int`: arbitrary precision, compile-time only.
    InfInt,
    Bit(u32),
    Int(u32),
    /// `varbit<W>`: W is the maximum width.
    Varbit(u32),
    Header(TypeId),
    Struct(TypeId),
    HeaderUnion(TypeId),
    Stack(Box<Type>, u32),
    Enum(TypeId),
    /// A serializable enum and its underlying `bit<W>`/`int<W>`.
    SerEnum(TypeId, Box<Type>),
    /// `type T NewType;`: distinct from `T` (P4Runtime's `type_info` needs it).
    NewType(TypeId),
    Tuple(Vec<Type>),
    Extern(TypeId, Vec<Type>),
    /// Parser, control and package types with their type arguments (missing ones stay `Var`).
    Parser(TypeId, Vec<Type>),
    Control(TypeId, Vec<Type>),
    Package(TypeId, Vec<Type>),
    /// A type parameter, only inside the generic declaration that binds it.
    Var(TypeVar),
    /// A table, as the receiver of `apply()`.
    Table(DeclId),
    /// The result of `table.apply()`: `hit`, `miss`, `action_run`.
    TableApply(DeclId),
    /// `t.apply().action_run`: values are the table's actions.
    ActionEnum(DeclId),
    /// Keysets in `select` cases and table entries (`default`, `_`, masks, ranges).
    Set(Box<Type>),
    /// `_` as an argument or keyset; matches any type.
    DontCare,
    /// After an error: accepted everywhere so that one mistake reports once.
    Unknown,
}

impl Type {
    /// Headers, structs, unions, stacks and tuples: values with members.
    pub fn is_aggregate(&self) -> bool {
        matches!(
            self,
            Type::Header(_)
                | Type::Struct(_)
                | Type::HeaderUnion(_)
                | Type::Stack(..)
                | Type::Tuple(_)
        )
    }

    /// Numbers: `bit<W>`, `int<W>` and `int`.
    pub fn is_integral(&self) -> bool {
        matches!(self, Type::Bit(_) | Type::Int(_) | Type::InfInt)
    }
}

/// Parameter of a callable (action, function, method, parser/control/package).
#[derive(Clone, Debug)]
pub struct Param {
    pub decl: DeclId,
    pub name: String,
    /// `None`: directionless (action data from the control plane, or constructor params).
    pub dir: Option<Direction>,
    pub ty: Type,
    /// `@optional`: may be omitted.
    pub optional: bool,
    pub default: Option<Expr>,
}

#[derive(Clone, Debug)]
pub struct Field {
    pub name: String,
    pub ty: Type,
    pub annotations: Vec<Annotation>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Method {
    pub name: String,
    pub annotations: Vec<Annotation>,
    pub type_params: Vec<TypeVar>,
    /// `None` for constructors.
    pub ret: Option<Type>,
    pub params: Vec<Param>,
    pub abstract_: bool,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct TypeDecl {
    pub name: String,
    pub span: Span,
    pub annotations: Vec<Annotation>,
    pub kind: TypeDeclKind,
}

#[derive(Clone, Debug)]
pub enum TypeDeclKind {
    Header(Vec<Field>),
    Struct(Vec<Field>),
    HeaderUnion(Vec<Field>),
    /// A generic struct/header as declared; uses name `Specialized` copies instead.
    Generic {
        type_params: Vec<TypeVar>,
        kind: p4_syntax::ast::StructKind,
        fields: Vec<Field>,
    },
    Enum(Vec<String>),
    SerEnum {
        underlying: Type,
        /// Member values, already folded and wrapped to the underlying width.
        members: Vec<(String, BigInt)>,
    },
    NewType(Type),
    Extern {
        type_params: Vec<TypeVar>,
        ctors: Vec<Method>,
        methods: Vec<Method>,
    },
    /// Parser, control and package types, declared or implied by an implementation
    /// (then `implementation` is its `DeclId`).
    Block {
        kind: BlockKind,
        type_params: Vec<TypeVar>,
        params: Vec<Param>,
        ctor_params: Vec<Param>,
        implementation: Option<DeclId>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockKind {
    Parser,
    Control,
    Package,
}

#[derive(Clone, Debug)]
pub struct Decl {
    pub name: String,
    pub span: Span,
    pub annotations: Vec<Annotation>,
    pub kind: DeclKind,
}

#[derive(Clone, Debug)]
pub enum DeclKind {
    /// Compile-time constant: always folded.
    Const {
        ty: Type,
        value: Value,
    },
    Var {
        ty: Type,
        init: Option<Expr>,
    },
    Param(Param),
    Action {
        params: Vec<Param>,
        body: Block,
    },
    Function {
        type_params: Vec<TypeVar>,
        ret: Type,
        params: Vec<Param>,
        body: Block,
    },
    /// An extern function, one decl per overload.
    ExternFunction(Method),
    Parser {
        ty: TypeId,
        params: Vec<Param>,
        ctor_params: Vec<Param>,
        locals: Vec<DeclId>,
        states: Vec<DeclId>,
    },
    State {
        stmts: Vec<Stmt>,
        transition: Transition,
    },
    Control {
        ty: TypeId,
        params: Vec<Param>,
        ctor_params: Vec<Param>,
        locals: Vec<DeclId>,
        apply: Block,
    },
    /// `T(args) name;` of an extern, parser, control or package.
    Instance {
        ty: Type,
        args: Vec<Option<Expr>>,
        /// Bodies of abstract methods given with the instantiation.
        methods: Vec<DeclId>,
        /// Declared through a `typedef` of a specialized extern (`typedef register<T> R;
        /// R(n) r;`): p4c's P4Info, which reads the declaration's own type, leaves it out.
        via_typedef: bool,
    },
    Table(Table),
    ValueSet {
        elem: Type,
        size: u64,
    },
}

#[derive(Clone, Debug)]
pub enum Transition {
    /// `accept`, `reject` or a state of the parser.
    Direct(StateRef),
    Select {
        exprs: Vec<Expr>,
        cases: Vec<SelectCase>,
        span: Span,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateRef {
    Accept,
    Reject,
    State(DeclId),
}

#[derive(Clone, Debug)]
pub struct SelectCase {
    /// Of type `Set(tuple of the select's types)` or `Set(T)` for one expression.
    pub keyset: Expr,
    pub state: StateRef,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Table {
    pub key: Vec<KeyElement>,
    pub actions: Vec<ActionRef>,
    pub default_action: Option<ActionRef>,
    pub default_action_const: bool,
    pub entries: Vec<Entry>,
    pub entries_const: bool,
    pub size: Option<u64>,
    /// Every other property (`implementation`, `counters`, `meters`, `support_timeout`, ...).
    pub props: Vec<TableProp>,
}

#[derive(Clone, Debug)]
pub struct KeyElement {
    pub annotations: Vec<Annotation>,
    pub expr: Expr,
    pub match_kind: String,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct ActionRef {
    pub annotations: Vec<Annotation>,
    pub action: DeclId,
    /// Arguments for the action's directional parameters in `actions`; for all parameters in
    /// `default_action` and entries. `None` for an omitted optional argument.
    pub args: Vec<Option<Expr>>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Entry {
    pub annotations: Vec<Annotation>,
    pub is_const: bool,
    pub priority: Option<u64>,
    /// One keyset expression per key element, already cast to the key's types.
    pub keys: Vec<Expr>,
    pub action: ActionRef,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct TableProp {
    pub name: String,
    pub is_const: bool,
    pub annotations: Vec<Annotation>,
    pub value: Expr,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Block {
    pub annotations: Vec<Annotation>,
    pub stmts: Vec<Stmt>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum StmtKind {
    /// The right side has the left side's type (implicit casts made explicit).
    Assign(Expr, Expr),
    /// A call of type `void` or whose result is discarded.
    Call(Expr),
    If(Expr, Box<Stmt>, Option<Box<Stmt>>),
    Block(Block),
    Exit,
    Return(Option<Expr>),
    Switch(Expr, Vec<SwitchCase>),
    Empty,
    /// A local variable (its `DeclKind::Var` holds type and initialiser).
    Var(DeclId),
    /// A local constant (folded; uses refer to its value directly).
    Const(DeclId),
    /// `for (init; cond; update) body` (P4_16 1.2.5; the `for (T x in ...)` forms arrive
    /// written this way).
    For(Box<ForLoop>),
    /// Leaves the innermost loop.
    Break,
    /// Goes on with the innermost loop's update.
    Continue,
}

#[derive(Clone, Debug)]
pub struct ForLoop {
    /// Declarations and assignments before the first test; their names are the loop's.
    pub init: Vec<Stmt>,
    /// Tested before each iteration (`true` when the source has none).
    pub cond: Expr,
    /// Run after each iteration, and where `continue` goes.
    pub update: Vec<Stmt>,
    pub body: Stmt,
}

#[derive(Clone, Debug)]
pub struct SwitchCase {
    pub label: SwitchLabel,
    /// `None`: falls through to the next case.
    pub body: Option<Block>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum SwitchLabel {
    Action(DeclId),
    Value(Expr),
    Default,
}

/// A folded compile-time value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Bool(bool),
    /// An integer of the expression's type, already wrapped to its width.
    Int(BigInt),
    Str(String),
    /// `error.X`: index into `Program::errors`.
    Error(usize),
    MatchKind(usize),
    /// Member index of an enum without representation (serializable enums fold to `Int`).
    EnumMember(TypeId, usize),
    /// Struct, header, tuple and list values.
    Tuple(Vec<Value>),
}

#[derive(Clone, Debug)]
pub struct Expr {
    pub kind: ExprKind,
    pub ty: Type,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StackProp {
    Next,
    Last,
    LastIndex,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableField {
    Hit,
    Miss,
    ActionRun,
}

#[derive(Clone, Debug)]
pub enum ExprKind {
    /// Folded constants, including `sizeInBits`, `size` of stacks and enum members.
    Const(Value),
    /// A variable, parameter, instance, table, value set or action.
    Ref(DeclId),
    /// A field of a struct, header or union, by index.
    Field(Box<Expr>, usize),
    Index(Box<Expr>, Box<Expr>),
    StackProp(Box<Expr>, StackProp),
    /// `e[hi:lo]` with constant bounds.
    Slice(Box<Expr>, u32, u32),
    Unary(p4_syntax::ast::UnOp, Box<Expr>),
    /// Operands already have the operator's operand types (literals cast); for shifts the
    /// right operand keeps its own type.
    Binary(p4_syntax::ast::BinOp, Box<Expr>, Box<Expr>),
    Ternary(Box<Expr>, Box<Expr>, Box<Expr>),
    Cast(Box<Expr>),
    /// A tuple, list, or struct/header value in field order.
    Tuple(Vec<Expr>),
    Call(Box<Call>),
    TableApply(DeclId, TableField),
    /// `_` argument or keyset.
    DontCare,
    /// The `default` keyset.
    Default,
}

#[derive(Clone, Debug)]
pub struct Call {
    pub target: CallTarget,
    /// Type arguments after inference, one per type parameter of the callee.
    pub type_args: Vec<Type>,
    /// One per parameter of the callee, in declaration order; `None` for an omitted
    /// `@optional` argument. Defaults are filled in.
    pub args: Vec<Option<Expr>>,
    /// The callee's parameters with type arguments substituted.
    pub params: Vec<Param>,
}

#[derive(Clone, Debug)]
pub enum CallTarget {
    Action(DeclId),
    Function(DeclId),
    ExternFunction(DeclId),
    /// Method `index` of the extern type of `receiver` (abstract methods included).
    Method {
        receiver: Expr,
        extern_ty: TypeId,
        index: usize,
    },
    /// `apply` of a parser, control (instance or parameter) or table.
    Apply(Expr),
    Builtin(Expr, Builtin),
    /// Constructor call `T(args)` as an argument of an instantiation.
    Construct(Type),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Builtin {
    IsValid,
    SetValid,
    SetInvalid,
    PushFront,
    PopFront,
}

#[derive(Clone, Debug, Default)]
pub struct Program {
    pub types: Vec<TypeDecl>,
    pub decls: Vec<Decl>,
    /// Top-level declarations in source order.
    pub top: Vec<DeclId>,
    /// All `error` members in declaration order (`error.NoError` is 0 when core.p4 is included).
    pub errors: Vec<String>,
    pub match_kinds: Vec<String>,
    /// Parameters of actions (directionless ones are action data, not compile-time known).
    pub action_params: HashSet<DeclId>,
    /// Names of type parameters, indexed by `TypeVar`.
    pub type_vars: Vec<String>,
    /// The `main` package instance.
    pub main: Option<DeclId>,
    /// What the control plane sees of the checked program (set by [`crate::check`], before
    /// the midend rewrites it).
    pub control_plane_uses: ControlPlaneUses,
}

impl Program {
    pub fn ty(&self, id: TypeId) -> &TypeDecl {
        &self.types[id.0 as usize]
    }

    pub fn decl(&self, id: DeclId) -> &Decl {
        &self.decls[id.0 as usize]
    }

    /// Fields of a struct, header or union type.
    pub fn fields(&self, ty: &Type) -> Option<&[Field]> {
        match ty {
            Type::Header(id) | Type::Struct(id) | Type::HeaderUnion(id) => match &self.ty(*id).kind
            {
                TypeDeclKind::Header(f)
                | TypeDeclKind::Struct(f)
                | TypeDeclKind::HeaderUnion(f) => Some(f),
                _ => None,
            },
            _ => None,
        }
    }

    /// Width in bits of a fixed-width type (`sizeInBits`); varbit fields count their maximum.
    pub fn width_of(&self, ty: &Type) -> Option<u64> {
        Some(match ty {
            Type::Bool => 1,
            Type::Bit(w) | Type::Int(w) | Type::Varbit(w) => u64::from(*w),
            Type::SerEnum(_, u) => return self.width_of(u),
            Type::NewType(id) => match &self.ty(*id).kind {
                TypeDeclKind::NewType(t) => return self.width_of(t),
                _ => return None,
            },
            Type::Stack(e, n) => self.width_of(e)? * u64::from(*n),
            Type::Header(_) | Type::Struct(_) => {
                let mut sum = 0;
                for f in self.fields(ty)? {
                    sum += self.width_of(&f.ty)?;
                }
                sum
            }
            Type::HeaderUnion(_) => {
                let mut max = 0;
                for f in self.fields(ty)? {
                    max = max.max(self.width_of(&f.ty)?);
                }
                max
            }
            Type::Tuple(ts) => {
                let mut sum = 0;
                for t in ts {
                    sum += self.width_of(t)?;
                }
                sum
            }
            _ => return None,
        })
    }

    /// Whether the value is known when the program is instantiated: folded constants,
    /// instances, constructor calls, directionless parameters of parsers and controls (their
    /// constructor parameters), and operations on those. Action data (directionless action
    /// parameters) is not: it comes from the control plane.
    pub fn is_compile_time_known(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Const(_) | ExprKind::DontCare | ExprKind::Default => true,
            ExprKind::Call(c) => matches!(c.target, CallTarget::Construct(_)),
            ExprKind::Ref(id) => match &self.decl(*id).kind {
                DeclKind::Instance { .. } => true,
                DeclKind::Param(p) => p.dir.is_none() && !self.action_params.contains(id),
                _ => false,
            },
            ExprKind::Tuple(items) => items.iter().all(|i| self.is_compile_time_known(i)),
            ExprKind::Cast(x) | ExprKind::Unary(_, x) | ExprKind::Field(x, _) => {
                self.is_compile_time_known(x)
            }
            ExprKind::Binary(_, a, b) => {
                self.is_compile_time_known(a) && self.is_compile_time_known(b)
            }
            _ => false,
        }
    }

    /// The type as a P4 programmer writes it, for diagnostics.
    pub fn show(&self, ty: &Type) -> String {
        ShowType(self, ty).to_string()
    }
}

struct ShowType<'a>(&'a Program, &'a Type);

impl fmt::Display for ShowType<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.0;
        let list = |f: &mut fmt::Formatter<'_>, ts: &[Type]| -> fmt::Result {
            for (i, t) in ts.iter().enumerate() {
                if i > 0 {
                    write!(f, ", ")?;
                }
                write!(f, "{}", ShowType(p, t))?;
            }
            Ok(())
        };
        match self.1 {
            Type::Bool => write!(f, "bool"),
            Type::Error => write!(f, "error"),
            Type::MatchKind => write!(f, "match_kind"),
            Type::String => write!(f, "string"),
            Type::Void => write!(f, "void"),
            Type::InfInt => write!(f, "int"),
            Type::Bit(w) => write!(f, "bit<{w}>"),
            Type::Int(w) => write!(f, "int<{w}>"),
            Type::Varbit(w) => write!(f, "varbit<{w}>"),
            Type::Header(id)
            | Type::Struct(id)
            | Type::HeaderUnion(id)
            | Type::Enum(id)
            | Type::SerEnum(id, _)
            | Type::NewType(id) => write!(f, "{}", p.ty(*id).name),
            Type::Stack(e, n) => write!(f, "{}[{n}]", ShowType(p, e)),
            Type::Tuple(ts) => {
                write!(f, "tuple<")?;
                list(f, ts)?;
                write!(f, ">")
            }
            Type::Extern(id, args)
            | Type::Parser(id, args)
            | Type::Control(id, args)
            | Type::Package(id, args) => {
                write!(f, "{}", p.ty(*id).name)?;
                if !args.is_empty() {
                    write!(f, "<")?;
                    list(f, args)?;
                    write!(f, ">")?;
                }
                Ok(())
            }
            Type::Var(v) => match p.type_vars.get(v.0 as usize) {
                Some(n) => write!(f, "{n}"),
                None => write!(f, "T{}", v.0),
            },
            Type::Table(d) => write!(f, "table {}", p.decl(*d).name),
            Type::TableApply(d) => write!(f, "{}.apply_result", p.decl(*d).name),
            Type::ActionEnum(d) => write!(f, "{}.action_list", p.decl(*d).name),
            Type::Set(t) => write!(f, "set<{}>", ShowType(p, t)),
            Type::DontCare => write!(f, "_"),
            Type::Unknown => write!(f, "<error>"),
        }
    }
}

impl Expr {
    /// Calls `f` on this expression and every operand inside it, outer before inner.
    pub fn for_each(&self, f: &mut dyn FnMut(&Expr)) {
        walk_expr(self, f);
    }

    /// Whether evaluating the expression calls anything other than `isValid()` (so may have
    /// side effects, and its place in the evaluation order matters).
    pub fn has_call(&self) -> bool {
        let mut found = false;
        walk_expr(self, &mut |x| {
            if let ExprKind::Call(c) = &x.kind {
                found |= !matches!(c.target, CallTarget::Builtin(_, Builtin::IsValid));
            }
        });
        found
    }
}

impl KeyElement {
    /// The key's control-plane name: its `@name`, else the expression as p4c prints it
    /// (`p4_sema::check` names the keys that are not references, slices or `isValid()`).
    pub fn control_plane_name(&self, p: &Program) -> String {
        if let Some(n) =
            p4_syntax::ast::find_annotation(&self.annotations, "name").and_then(|a| a.string_arg())
        {
            return n.to_string();
        }
        key_text(p, &self.expr).unwrap_or_else(|| "expr".into())
    }
}

/// The name of a key that is a reference, a field, a slice or `isValid()` of one; `None` for
/// other expressions.
pub(crate) fn key_text(p: &Program, e: &Expr) -> Option<String> {
    Some(match &e.kind {
        ExprKind::Ref(d) => p.decl(*d).name.clone(),
        ExprKind::Field(b, i) => {
            let base = key_text(p, b)?;
            let Some(f) = p.fields(&b.ty).and_then(|fs| fs.get(*i)) else {
                return Some(format!("{base}."));
            };
            // A struct field's `@name` renames it; with a leading `.` it is the whole name.
            match p4_syntax::ast::find_annotation(&f.annotations, "name")
                .and_then(|a| a.string_arg())
            {
                Some(n) if n.starts_with('.') => n[1..].to_string(),
                Some(n) => format!("{base}.{n}"),
                None => format!("{base}.{}", f.name),
            }
        }
        ExprKind::Index(b, i) => format!("{}[{}]", key_text(p, b)?, key_text(p, i)?),
        ExprKind::Slice(b, h, l) => format!("{}[{h}:{l}]", key_text(p, b)?),
        ExprKind::Const(Value::Int(v)) => v.to_string(),
        ExprKind::Cast(x) => key_text(p, x)?,
        ExprKind::Call(c) => match &c.target {
            // p4c names a validity key after the `$valid$` field bmv2 matches on.
            CallTarget::Builtin(r, Builtin::IsValid) => format!("{}.$valid$", key_text(p, r)?),
            _ => return None,
        },
        _ => return None,
    })
}

impl Program {
    /// Calls `f` on every expression of the program, outer expressions before their operands.
    /// Local variables are visited through their declarations, not their statements.
    pub fn for_each_expr(&self, f: &mut dyn FnMut(&Expr)) {
        for d in &self.decls {
            match &d.kind {
                DeclKind::Const { .. } | DeclKind::ValueSet { .. } => {}
                DeclKind::Var { init, .. } => init.iter().for_each(|e| walk_expr(e, f)),
                DeclKind::Param(p) => p.default.iter().for_each(|e| walk_expr(e, f)),
                DeclKind::Action { body, .. }
                | DeclKind::Function { body, .. }
                | DeclKind::Control { apply: body, .. } => walk_block(body, f),
                DeclKind::ExternFunction(_) | DeclKind::Parser { .. } => {}
                DeclKind::State { stmts, transition } => {
                    stmts.iter().for_each(|s| walk_stmt(s, f));
                    if let Transition::Select { exprs, cases, .. } = transition {
                        exprs.iter().for_each(|e| walk_expr(e, f));
                        cases.iter().for_each(|c| walk_expr(&c.keyset, f));
                    }
                }
                DeclKind::Instance { args, .. } => {
                    args.iter().flatten().for_each(|e| walk_expr(e, f))
                }
                DeclKind::Table(t) => {
                    t.key.iter().for_each(|k| walk_expr(&k.expr, f));
                    let refs = t
                        .actions
                        .iter()
                        .chain(&t.default_action)
                        .chain(t.entries.iter().map(|e| &e.action));
                    for r in refs {
                        r.args.iter().flatten().for_each(|e| walk_expr(e, f));
                    }
                    for e in &t.entries {
                        e.keys.iter().for_each(|k| walk_expr(k, f));
                    }
                    t.props.iter().for_each(|p| walk_expr(&p.value, f));
                }
            }
        }
    }
}

fn walk_block(b: &Block, f: &mut dyn FnMut(&Expr)) {
    b.stmts.iter().for_each(|s| walk_stmt(s, f));
}

fn walk_stmt(s: &Stmt, f: &mut dyn FnMut(&Expr)) {
    match &s.kind {
        StmtKind::Assign(l, r) => {
            walk_expr(l, f);
            walk_expr(r, f);
        }
        StmtKind::Call(e) | StmtKind::Return(Some(e)) => walk_expr(e, f),
        StmtKind::If(c, t, e) => {
            walk_expr(c, f);
            walk_stmt(t, f);
            if let Some(e) = e {
                walk_stmt(e, f);
            }
        }
        StmtKind::Block(b) => walk_block(b, f),
        StmtKind::Switch(e, cases) => {
            walk_expr(e, f);
            for c in cases {
                if let SwitchLabel::Value(v) = &c.label {
                    walk_expr(v, f);
                }
                if let Some(b) = &c.body {
                    walk_block(b, f);
                }
            }
        }
        StmtKind::For(l) => {
            l.init.iter().for_each(|s| walk_stmt(s, f));
            walk_expr(&l.cond, f);
            l.update.iter().for_each(|s| walk_stmt(s, f));
            walk_stmt(&l.body, f);
        }
        StmtKind::Exit
        | StmtKind::Return(None)
        | StmtKind::Empty
        | StmtKind::Var(_)
        | StmtKind::Const(_)
        | StmtKind::Break
        | StmtKind::Continue => {}
    }
}

fn walk_expr(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    f(e);
    match &e.kind {
        ExprKind::Const(_)
        | ExprKind::Ref(_)
        | ExprKind::TableApply(..)
        | ExprKind::DontCare
        | ExprKind::Default => {}
        ExprKind::Field(b, _)
        | ExprKind::StackProp(b, _)
        | ExprKind::Slice(b, _, _)
        | ExprKind::Unary(_, b)
        | ExprKind::Cast(b) => walk_expr(b, f),
        ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) => {
            walk_expr(a, f);
            walk_expr(b, f);
        }
        ExprKind::Ternary(a, b, c) => {
            walk_expr(a, f);
            walk_expr(b, f);
            walk_expr(c, f);
        }
        ExprKind::Tuple(items) => items.iter().for_each(|i| walk_expr(i, f)),
        ExprKind::Call(c) => {
            match &c.target {
                CallTarget::Method { receiver, .. }
                | CallTarget::Apply(receiver)
                | CallTarget::Builtin(receiver, _) => walk_expr(receiver, f),
                CallTarget::Action(_)
                | CallTarget::Function(_)
                | CallTarget::ExternFunction(_)
                | CallTarget::Construct(_) => {}
            }
            c.args.iter().flatten().for_each(|a| walk_expr(a, f));
        }
    }
}

/// What p4c's front end leaves for the control plane, recorded on the checked program
/// (computed by `uses`).
#[derive(Clone, Debug, Default)]
pub struct ControlPlaneUses {
    /// Per control, the actions its apply block calls directly, in the order of the calls.
    pub direct_actions: HashMap<DeclId, Vec<DeclId>>,
    /// Whether a control's apply block, or an action the control plane keeps (or one it
    /// calls), calls an extern function: p4c's v1model handler then creates `type_info`.
    pub extern_function_called: bool,
    /// The tables some live statement applies: p4c's front end removes the others ("table is
    /// not used; removing"), and with them the actions only they use.
    pub applied_tables: HashSet<DeclId>,
}
