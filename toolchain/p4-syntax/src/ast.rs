//! The syntax tree. Every node keeps the span it came from so that later passes can report
//! errors at the user's source.

use crate::source::Span;
use num_bigint::BigUint;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// A name as written, optionally with the leading `.` that names the top-level scope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Path {
    pub global: bool,
    pub name: Ident,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Annotation {
    pub name: Ident,
    pub body: AnnotationBody,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum AnnotationBody {
    Empty,
    Exprs(Vec<Expr>),
    KeyValues(Vec<(Ident, Expr)>),
    /// A body that is not an expression list: kept as its source text.
    Unparsed(String),
    /// A structured annotation, `@name[...]`: its body parsed as for `@name(...)`.
    Structured(Box<AnnotationBody>),
}

impl Annotation {
    /// `@name("text")`: the control-plane name the compiler gives what it copies or names
    /// (a leading `.` makes it absolute).
    pub fn name(text: &str, span: Span) -> Annotation {
        Annotation {
            name: Ident {
                name: "name".into(),
                span,
            },
            body: AnnotationBody::Exprs(vec![Expr {
                kind: ExprKind::Str(text.into()),
                span,
            }]),
            span,
        }
    }

    /// The string argument of annotations like `@name("x")`.
    pub fn string_arg(&self) -> Option<&str> {
        match &self.body {
            AnnotationBody::Exprs(e) if e.len() == 1 => match &e[0].kind {
                ExprKind::Str(s) => Some(s),
                _ => None,
            },
            _ => None,
        }
    }
}

pub fn find_annotation<'a>(annos: &'a [Annotation], name: &str) -> Option<&'a Annotation> {
    annos.iter().find(|a| a.name.name == name)
}

#[derive(Clone, Debug, PartialEq)]
pub struct Type {
    pub kind: TypeKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum TypeKind {
    Bool,
    Error,
    MatchKind,
    String,
    Void,
    /// `_` in type argument position.
    DontCare,
    /// `int`: arbitrary precision.
    InfInt,
    Bit(Box<Expr>),
    Int(Box<Expr>),
    Varbit(Box<Expr>),
    Name(Path),
    Specialized(Path, Vec<Type>),
    Stack(Box<Type>, Box<Expr>),
    Tuple(Vec<Type>),
    List(Box<Type>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Not,
    BitNot,
    Neg,
    Plus,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Mul,
    Div,
    Mod,
    Add,
    Sub,
    AddSat,
    SubSat,
    Shl,
    Shr,
    Le,
    Ge,
    Lt,
    Gt,
    Eq,
    Ne,
    BitAnd,
    BitXor,
    BitOr,
    And,
    Or,
    Concat,
    /// `&&&` in keysets.
    Mask,
    /// `..` in keysets.
    Range,
}

impl UnOp {
    pub fn symbol(self) -> &'static str {
        match self {
            UnOp::Not => "!",
            UnOp::BitNot => "~",
            UnOp::Neg => "-",
            UnOp::Plus => "+",
        }
    }
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        use BinOp::*;
        match self {
            Mul => "*",
            Div => "/",
            Mod => "%",
            Add => "+",
            Sub => "-",
            AddSat => "|+|",
            SubSat => "|-|",
            Shl => "<<",
            Shr => ">>",
            Le => "<=",
            Ge => ">=",
            Lt => "<",
            Gt => ">",
            Eq => "==",
            Ne => "!=",
            BitAnd => "&",
            BitXor => "^",
            BitOr => "|",
            And => "&&",
            Or => "||",
            Concat => "++",
            Mask => "&&&",
            Range => "..",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Bool(bool),
    Int {
        value: BigUint,
        width: Option<(u32, bool)>,
        /// The base it was written in (2, 8, 10 or 16): p4c prints it back that way in the
        /// control-plane names of keys.
        radix: u32,
    },
    Str(String),
    Path(Path),
    Member(Box<Expr>, Ident),
    Index(Box<Expr>, Box<Expr>),
    /// `e[hi:lo]`.
    Slice(Box<Expr>, Box<Expr>, Box<Expr>),
    Call {
        callee: Box<Expr>,
        type_args: Vec<Type>,
        args: Vec<Argument>,
    },
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Ternary(Box<Expr>, Box<Expr>, Box<Expr>),
    Cast(Type, Box<Expr>),
    /// `{ a, b }`.
    List(Vec<Expr>),
    /// `{ f = a, g = b }`.
    StructInit(Vec<(Ident, Expr)>),
    /// `(a, b)` in keysets and select heads.
    Tuple(Vec<Expr>),
    /// The keyset `default`.
    Default,
    /// `_`: a don't-care keyset or an ignored out argument.
    DontCare,
    /// A type where an expression may stand: `bit<8>.minSizeInBits`, `error.X` heads.
    TypeExpr(Type),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Argument {
    /// `name = value` arguments.
    pub name: Option<Ident>,
    pub value: Expr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    In,
    Out,
    InOut,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub annotations: Vec<Annotation>,
    pub direction: Option<Direction>,
    pub ty: Type,
    pub name: Ident,
    pub default: Option<Expr>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    Assign(Expr, Expr),
    /// A method or function call used as a statement.
    Call(Expr),
    If(Expr, Box<Stmt>, Option<Box<Stmt>>),
    Block(Block),
    Exit,
    Return(Option<Expr>),
    Switch(Expr, Vec<SwitchCase>),
    Empty,
    Var(VarDecl),
    Const(ConstDecl),
    For(Box<ForStmt>),
    Break,
    Continue,
}

/// `for (init; cond; update) body` (P4_16 1.2.5); the parser writes the `for (T x in ...)`
/// forms this way too.
#[derive(Clone, Debug, PartialEq)]
pub struct ForStmt {
    pub annotations: Vec<Annotation>,
    pub init: Vec<Stmt>,
    /// `None`: no condition (loops until `break`).
    pub cond: Option<Expr>,
    pub update: Vec<Stmt>,
    pub body: Stmt,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    pub annotations: Vec<Annotation>,
    pub stmts: Vec<Stmt>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SwitchCase {
    /// An action name, `default`, or (for switches on values) an expression.
    pub label: Expr,
    /// `None` for a label that falls through to the next.
    pub body: Option<Block>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct VarDecl {
    pub annotations: Vec<Annotation>,
    pub ty: Type,
    pub name: Ident,
    pub init: Option<Expr>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ConstDecl {
    pub annotations: Vec<Annotation>,
    pub ty: Type,
    pub name: Ident,
    pub value: Expr,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    pub annotations: Vec<Annotation>,
    pub ty: Type,
    pub name: Ident,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StructKind {
    Struct,
    Header,
    HeaderUnion,
}

#[derive(Clone, Debug, PartialEq)]
pub struct StructDecl {
    pub annotations: Vec<Annotation>,
    pub kind: StructKind,
    pub name: Ident,
    pub type_params: Vec<Ident>,
    pub fields: Vec<Field>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct EnumDecl {
    pub annotations: Vec<Annotation>,
    /// The representation type of a serializable enum.
    pub repr: Option<Type>,
    pub name: Ident,
    pub members: Vec<(Ident, Option<Expr>)>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TypedefDecl {
    pub annotations: Vec<Annotation>,
    /// `type` introduces a new type; `typedef` only another name.
    pub new_type: bool,
    pub ty: Type,
    pub name: Ident,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FunctionProto {
    pub annotations: Vec<Annotation>,
    pub abstract_: bool,
    /// `None` for extern constructors.
    pub ret: Option<Type>,
    pub name: Ident,
    pub type_params: Vec<Ident>,
    pub params: Vec<Param>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ExternDecl {
    pub annotations: Vec<Annotation>,
    pub name: Ident,
    pub type_params: Vec<Ident>,
    pub methods: Vec<FunctionProto>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FunctionDecl {
    pub proto: FunctionProto,
    pub body: Block,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ActionDecl {
    pub annotations: Vec<Annotation>,
    pub name: Ident,
    pub params: Vec<Param>,
    pub body: Block,
}

/// The signature shared by parser, control and package types and their implementations.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeDecl {
    pub annotations: Vec<Annotation>,
    pub name: Ident,
    pub type_params: Vec<Ident>,
    pub params: Vec<Param>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ParserDecl {
    pub ty: TypeDecl,
    pub ctor_params: Vec<Param>,
    pub locals: Vec<Decl>,
    pub states: Vec<ParserState>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ParserState {
    pub annotations: Vec<Annotation>,
    pub name: Ident,
    pub stmts: Vec<Stmt>,
    pub transition: Option<Transition>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Transition {
    Direct(Ident),
    Select {
        exprs: Vec<Expr>,
        cases: Vec<SelectCase>,
        span: Span,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct SelectCase {
    pub keyset: Expr,
    pub state: Ident,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ControlDecl {
    pub ty: TypeDecl,
    pub ctor_params: Vec<Param>,
    pub locals: Vec<Decl>,
    pub apply: Block,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Instantiation {
    pub annotations: Vec<Annotation>,
    pub ty: Type,
    pub args: Vec<Argument>,
    pub name: Ident,
    /// Implementations of abstract methods: `Type(args) name = { ... };`.
    pub body: Vec<Decl>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ValueSetDecl {
    pub annotations: Vec<Annotation>,
    pub elem: Type,
    pub size: Expr,
    pub name: Ident,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TableDecl {
    pub annotations: Vec<Annotation>,
    pub name: Ident,
    pub props: Vec<TableProperty>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct KeyElement {
    pub annotations: Vec<Annotation>,
    pub expr: Expr,
    pub match_kind: Ident,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ActionRef {
    pub annotations: Vec<Annotation>,
    pub name: Path,
    /// `None` when written without parentheses.
    pub args: Option<Vec<Argument>>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub annotations: Vec<Annotation>,
    pub is_const: bool,
    pub priority: Option<Expr>,
    pub keyset: Expr,
    pub action: ActionRef,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum TablePropKind {
    Key(Vec<KeyElement>),
    Actions(Vec<ActionRef>),
    Entries(Vec<Entry>),
    DefaultAction(ActionRef),
    Other(Expr),
}

#[derive(Clone, Debug, PartialEq)]
pub struct TableProperty {
    pub annotations: Vec<Annotation>,
    pub is_const: bool,
    pub name: Ident,
    pub kind: TablePropKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Decl {
    pub kind: DeclKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum DeclKind {
    Const(ConstDecl),
    Var(VarDecl),
    Struct(StructDecl),
    Enum(EnumDecl),
    Error(Vec<Ident>),
    MatchKind(Vec<Ident>),
    Typedef(TypedefDecl),
    Extern(ExternDecl),
    ExternFunction(FunctionProto),
    Function(FunctionDecl),
    Action(ActionDecl),
    ParserType(TypeDecl),
    ControlType(TypeDecl),
    PackageType(TypeDecl),
    Parser(ParserDecl),
    Control(ControlDecl),
    Instantiation(Instantiation),
    ValueSet(ValueSetDecl),
    Table(TableDecl),
}

impl Decl {
    /// The declared name, for declarations that have one.
    pub fn name(&self) -> Option<&Ident> {
        use DeclKind::*;
        Some(match &self.kind {
            Const(d) => &d.name,
            Var(d) => &d.name,
            Struct(d) => &d.name,
            Enum(d) => &d.name,
            Typedef(d) => &d.name,
            Extern(d) => &d.name,
            ExternFunction(d) => &d.name,
            Function(d) => &d.proto.name,
            Action(d) => &d.name,
            ParserType(d) | ControlType(d) | PackageType(d) => &d.name,
            Parser(d) => &d.ty.name,
            Control(d) => &d.ty.name,
            Instantiation(d) => &d.name,
            ValueSet(d) => &d.name,
            Table(d) => &d.name,
            Error(_) | MatchKind(_) => return None,
        })
    }
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct Program {
    pub decls: Vec<Decl>,
}
