//! Recursive-descent parser for P4_16 (spec 1.2.x). The parser tracks which names are types in
//! scope, which is how P4 resolves `T x;` (declaration) against `f(x);` (statement) and
//! `(T) e` (cast) against `(e)`. Errors are reported and the parser resynchronises at the
//! innermost list (statements, locals, fields, properties, declarations) so that independent
//! errors are all reported.

use crate::ast::*;
use crate::diag::Diagnostics;
use crate::lexer::{lex, Tok, Token, KEYWORDS};
use crate::source::{SourceMap, Span};
use std::collections::HashSet;

type PResult<T> = Result<T, ()>;

/// Bounds recursion so that hostile input cannot overflow the stack.
const MAX_DEPTH: usize = 96;

/// Words the grammar reserves but also accepts as names where a name is expected.
const CONTEXTUAL: &[&str] = &["apply", "state", "type"];

const TYPE_KEYWORDS: &[&str] = &[
    "bit",
    "int",
    "varbit",
    "bool",
    "error",
    "string",
    "match_kind",
    "void",
    "tuple",
];

pub fn parse(map: &SourceMap, diags: &mut Diagnostics) -> Program {
    let toks = lex(map, diags);
    let mut p = Parser {
        toks,
        pos: 0,
        map,
        diags,
        scopes: vec![HashSet::new()],
        depth: 0,
    };
    p.program()
}

struct Parser<'a> {
    toks: Vec<Token>,
    pos: usize,
    map: &'a SourceMap,
    diags: &'a mut Diagnostics,
    scopes: Vec<HashSet<String>>,
    depth: usize,
}

/// A one-token binary operator and its precedence (p4c's grammar: bitwise operators bind
/// tighter than comparisons); `>>` is two `>` tokens and handled by the caller.
fn operator(p: &str) -> Option<(BinOp, u8)> {
    Some(match p {
        "||" => (BinOp::Or, 1),
        "&&" => (BinOp::And, 2),
        "==" => (BinOp::Eq, 3),
        "!=" => (BinOp::Ne, 3),
        "<" => (BinOp::Lt, 4),
        "<=" => (BinOp::Le, 4),
        ">=" => (BinOp::Ge, 4),
        ">" => (BinOp::Gt, 4),
        "|" => (BinOp::BitOr, 5),
        "^" => (BinOp::BitXor, 6),
        "&" => (BinOp::BitAnd, 7),
        "<<" => (BinOp::Shl, 8),
        "++" => (BinOp::Concat, 9),
        "+" => (BinOp::Add, 9),
        "-" => (BinOp::Sub, 9),
        "|+|" => (BinOp::AddSat, 9),
        "|-|" => (BinOp::SubSat, 9),
        "*" => (BinOp::Mul, 10),
        "/" => (BinOp::Div, 10),
        "%" => (BinOp::Mod, 10),
        _ => return None,
    })
}

/// The l-value `e` with each stack index that calls something replaced by a local computed
/// before it (a `bit<32>` declaration pushed to `temps`, in evaluation order).
fn hoist_indices(e: Expr, temps: &mut Vec<Stmt>) -> Expr {
    let span = e.span;
    let kind = match e.kind {
        ExprKind::Member(b, m) => ExprKind::Member(Box::new(hoist_indices(*b, temps)), m),
        ExprKind::Slice(b, h, l) => ExprKind::Slice(Box::new(hoist_indices(*b, temps)), h, l),
        ExprKind::Index(b, i) => {
            let b = hoist_indices(*b, temps);
            let i = if calls(&i) {
                let name = Ident {
                    name: format!("__index_{}", i.span.lo),
                    span: i.span,
                };
                let width = Expr {
                    kind: ExprKind::Int {
                        value: 32u32.into(),
                        width: None,
                        radix: 10,
                    },
                    span: i.span,
                };
                let ty = Type {
                    kind: TypeKind::Bit(Box::new(width)),
                    span: i.span,
                };
                let init = Expr {
                    kind: ExprKind::Cast(ty.clone(), i.clone()),
                    span: i.span,
                };
                temps.push(Stmt {
                    kind: StmtKind::Var(VarDecl {
                        annotations: Vec::new(),
                        ty,
                        name: name.clone(),
                        init: Some(init),
                    }),
                    span: i.span,
                });
                Box::new(Expr {
                    kind: ExprKind::Path(Path {
                        global: false,
                        name,
                    }),
                    span: i.span,
                })
            } else {
                i
            };
            ExprKind::Index(Box::new(b), i)
        }
        kind => kind,
    };
    Expr { kind, span }
}

fn ex(kind: ExprKind, span: Span) -> Expr {
    Expr { kind, span }
}

fn path(name: &Ident) -> Expr {
    ex(
        ExprKind::Path(Path {
            global: false,
            name: name.clone(),
        }),
        name.span,
    )
}

fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
    let span = a.span.to(b.span);
    ex(ExprKind::Binary(op, Box::new(a), Box::new(b)), span)
}

fn int(v: u32, span: Span) -> Expr {
    ex(
        ExprKind::Int {
            value: v.into(),
            width: None,
            radix: 10,
        },
        span,
    )
}

fn st(kind: StmtKind, span: Span) -> Stmt {
    Stmt { kind, span }
}

fn var(ty: Type, name: &Ident, init: Expr) -> Stmt {
    let span = name.span;
    st(
        StmtKind::Var(VarDecl {
            annotations: Vec::new(),
            ty,
            name: name.clone(),
            init: Some(init),
        }),
        span,
    )
}

fn hidden(what: &str, at: Span) -> Ident {
    Ident {
        name: format!("__for_{what}_{}", at.lo),
        span: at,
    }
}

fn bit32(span: Span) -> Type {
    Type {
        kind: TypeKind::Bit(Box::new(int(32, span))),
        span,
    }
}

/// `for (T x in first .. last) body` as the three-clause form (`Parser::for_stmt`).
fn for_range(
    at: Span,
    annotations: Vec<Annotation>,
    x: VarDecl,
    first: Expr,
    last: Expr,
    body: Stmt,
) -> StmtKind {
    let hi = hidden("last", at);
    let go = hidden("go", at);
    let span = at.to(body.span);
    let bool_ty = Type {
        kind: TypeKind::Bool,
        span: at,
    };
    let xe = path(&x.name);
    let next = st(
        StmtKind::Assign(xe.clone(), bin(BinOp::Add, xe.clone(), int(1, at))),
        at,
    );
    let more = st(
        StmtKind::Assign(path(&go), bin(BinOp::Ne, xe.clone(), path(&hi))),
        at,
    );
    let looped = ForStmt {
        annotations,
        init: vec![var(bool_ty, &go, bin(BinOp::Le, xe, path(&hi)))],
        cond: Some(path(&go)),
        update: vec![more, next],
        body,
    };
    let stmts = vec![
        var(x.ty.clone(), &x.name, first),
        var(x.ty, &hi, last),
        st(StmtKind::For(Box::new(looped)), span),
    ];
    StmtKind::Block(Block {
        annotations: x.annotations,
        stmts,
        span,
    })
}

/// `for (T x in hs) body` over a header stack as the three-clause form (`Parser::for_stmt`).
fn for_stack(
    at: Span,
    annotations: Vec<Annotation>,
    x: VarDecl,
    stack: Expr,
    body: Stmt,
) -> StmtKind {
    let i = hidden("index", at);
    let span = at.to(body.span);
    let size = ex(
        ExprKind::Member(
            Box::new(stack.clone()),
            Ident {
                name: "size".into(),
                span: at,
            },
        ),
        at,
    );
    let elem = ex(ExprKind::Index(Box::new(stack), Box::new(path(&i))), at);
    let body = st(
        StmtKind::Block(Block {
            annotations: x.annotations,
            stmts: vec![var(x.ty, &x.name, elem), body],
            span,
        }),
        span,
    );
    StmtKind::For(Box::new(ForStmt {
        annotations,
        init: vec![var(bit32(at), &i, int(0, at))],
        cond: Some(bin(BinOp::Lt, path(&i), size)),
        update: vec![st(
            StmtKind::Assign(path(&i), bin(BinOp::Add, path(&i), int(1, at))),
            at,
        )],
        body,
    }))
}

/// Whether evaluating the expression (an l-value) calls anything.
fn calls(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Call { .. } => true,
        ExprKind::Member(b, _) | ExprKind::Unary(_, b) | ExprKind::Cast(_, b) => calls(b),
        ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) => calls(a) || calls(b),
        ExprKind::Slice(a, b, c) | ExprKind::Ternary(a, b, c) => calls(a) || calls(b) || calls(c),
        ExprKind::List(es) | ExprKind::Tuple(es) => es.iter().any(calls),
        ExprKind::StructInit(fs) => fs.iter().any(|(_, e)| calls(e)),
        _ => false,
    }
}

fn is_keyword(s: &str) -> bool {
    KEYWORDS.contains(&s)
}

impl<'a> Parser<'a> {
    // ---- token access -------------------------------------------------------------------

    fn peek(&self) -> &Token {
        self.peek_at(0)
    }

    fn peek_at(&self, n: usize) -> &Token {
        let last = self.toks.len() - 1;
        &self.toks[(self.pos + n).min(last)]
    }

    fn bump(&mut self) -> Token {
        let t = self.peek().clone();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn prev_span(&self) -> Span {
        if self.pos == 0 {
            self.peek().span
        } else {
            self.toks[self.pos - 1].span
        }
    }

    fn at(&self, p: &str) -> bool {
        self.peek().is_punct(p)
    }

    fn at_kw(&self, k: &str) -> bool {
        self.peek().is_ident(k)
    }

    fn at_eof(&self) -> bool {
        self.peek().tok == Tok::Eof
    }

    fn eat(&mut self, p: &str) -> bool {
        if self.at(p) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn eat_kw(&mut self, k: &str) -> bool {
        if self.at_kw(k) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn error<T>(&mut self, span: Span, msg: impl Into<String>) -> PResult<T> {
        self.diags.error(span, msg);
        Err(())
    }

    fn expected<T>(&mut self, what: &str) -> PResult<T> {
        let t = self.peek().clone();
        self.error(
            t.span,
            format!("syntax error: expected {what}, found {}", t.describe()),
        )
    }

    fn expect(&mut self, p: &str) -> PResult<Span> {
        if self.at(p) {
            Ok(self.bump().span)
        } else {
            self.expected(&format!("'{p}'"))
        }
    }

    fn expect_kw(&mut self, k: &str) -> PResult<Span> {
        if self.at_kw(k) {
            Ok(self.bump().span)
        } else {
            self.expected(&format!("'{k}'"))
        }
    }

    fn ident_at(&self, n: usize) -> Option<&str> {
        match &self.peek_at(n).tok {
            Tok::Ident(s) => Some(s),
            _ => None,
        }
    }

    /// A name that may be declared or referenced: any non-keyword word, or a contextual keyword.
    fn is_name_at(&self, n: usize) -> bool {
        matches!(self.ident_at(n), Some(s) if !is_keyword(s) || CONTEXTUAL.contains(&s))
    }

    fn name(&mut self) -> PResult<Ident> {
        if self.is_name_at(0) {
            let t = self.bump();
            if let Tok::Ident(name) = t.tok {
                return Ok(Ident { name, span: t.span });
            }
        }
        self.expected("a name")
    }

    /// After `.`, any word names a member (`t.apply`, `hdr.type`).
    fn member_name(&mut self) -> PResult<Ident> {
        if let Tok::Ident(name) = &self.peek().tok {
            let name = name.clone();
            let span = self.bump().span;
            return Ok(Ident { name, span });
        }
        self.expected("a member name")
    }

    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            let span = self.peek().span;
            self.depth -= 1;
            return self.error(span, "nesting too deep");
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    // ---- type names -----------------------------------------------------------------------

    fn is_type_name(&self, s: &str) -> bool {
        self.scopes.iter().any(|sc| sc.contains(s))
    }

    fn declare_type(&mut self, name: &str) {
        self.scopes[0].insert(name.to_string());
    }

    fn with_scope<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<T> {
        self.scopes.push(HashSet::new());
        let r = f(self);
        self.scopes.pop();
        r
    }

    /// Whether a type starts here (a type keyword or a type name in scope).
    fn at_type_start(&self) -> bool {
        match self.ident_at(0) {
            Some(s) if TYPE_KEYWORDS.contains(&s) => true,
            Some(s) => self.is_type_name(s),
            None => self.at(".") && matches!(self.ident_at(1), Some(s) if self.is_type_name(s)),
        }
    }

    // ---- recovery ---------------------------------------------------------------------------

    /// Skips to the end of the broken item: past a `;` or a `{...}` group at this level, or up
    /// to (not past) the `}` that closes the enclosing list.
    fn recover(&mut self) {
        let mut depth = 0usize;
        loop {
            let t = self.peek().clone();
            match &t.tok {
                Tok::Eof => return,
                Tok::Punct("{") => depth += 1,
                Tok::Punct("}") => {
                    if depth == 0 {
                        return;
                    }
                    depth -= 1;
                    if depth == 0 {
                        self.bump();
                        // A `{...}` group ends an item unless `;` or `else` follows directly.
                        if !self.at(";") && !self.at_kw("else") {
                            return;
                        }
                        continue;
                    }
                }
                Tok::Punct(";") if depth == 0 => {
                    self.bump();
                    return;
                }
                _ => {}
            }
            self.bump();
        }
    }

    /// Parses items until `}` (consumed) with recovery after each broken item.
    fn list_until_close<T>(
        &mut self,
        open: Span,
        mut item: impl FnMut(&mut Self) -> PResult<Option<T>>,
    ) -> PResult<Vec<T>> {
        let mut out = Vec::new();
        loop {
            if self.eat("}") {
                return Ok(out);
            }
            if self.at_eof() {
                return self.error(open, "'{' is never closed");
            }
            let before = self.pos;
            match item(self) {
                Ok(Some(x)) => out.push(x),
                Ok(None) => {}
                Err(()) => {
                    self.recover();
                    if self.pos == before && !self.at("}") {
                        self.bump();
                    }
                }
            }
        }
    }

    // ---- program and declarations ---------------------------------------------------------

    fn program(&mut self) -> Program {
        let mut decls = Vec::new();
        while !self.at_eof() {
            let before = self.pos;
            match self.declaration() {
                Ok(Some(d)) => decls.push(d),
                Ok(None) => {}
                Err(()) => {
                    self.recover();
                    // A stray `}` at top level: report once and skip it.
                    if self.at("}") {
                        let span = self.bump().span;
                        self.diags
                            .error(span, "syntax error: unexpected '}' at top level");
                    }
                    if self.pos == before {
                        self.bump();
                    }
                }
            }
        }
        Program { decls }
    }

    fn annotations(&mut self) -> PResult<Vec<Annotation>> {
        let mut out = Vec::new();
        while self.at("@") {
            let at = self.bump().span;
            let name = self.member_name()?;
            let (body, end) = if self.at("(") || self.at("[") {
                let close = if self.at("(") { ")" } else { "]" };
                let open = self.bump().span;
                let start = self.pos;
                let mut depth = 0usize;
                loop {
                    let t = self.peek().clone();
                    match &t.tok {
                        Tok::Eof => return self.error(open, "annotation body is never closed"),
                        Tok::Punct(p) if (*p == "(" || *p == "[") => depth += 1,
                        Tok::Punct(p) if (*p == ")" || *p == "]") && depth > 0 => depth -= 1,
                        Tok::Punct(p) if *p == close && depth == 0 => break,
                        _ => {}
                    }
                    self.bump();
                }
                let inner = self.toks[start..self.pos].to_vec();
                let end = self.bump().span;
                let text = self
                    .map
                    .snippet(Span::new(open.hi as usize, end.lo as usize));
                (self.annotation_body(inner, text.trim(), close == ")"), end)
            } else {
                (AnnotationBody::Empty, name.span)
            };
            out.push(Annotation {
                name,
                body,
                span: at.to(end),
            });
        }
        Ok(out)
    }

    /// Annotation bodies are parsed as expressions or `k = v` pairs; anything else is kept as
    /// text (annotations are free-form in P4). A `[...]` body (a structured annotation) is
    /// parsed the same way and marked structured.
    fn annotation_body(&mut self, inner: Vec<Token>, text: &str, parens: bool) -> AnnotationBody {
        if !parens {
            let body = self.annotation_body(inner, text, true);
            return AnnotationBody::Structured(Box::new(body));
        }
        if inner.is_empty() {
            return AnnotationBody::Empty;
        }
        let mut toks = inner;
        let eof_at = toks.last().map(|t| t.span.hi).unwrap_or(0) as usize;
        toks.push(Token {
            tok: Tok::Eof,
            span: Span::new(eof_at, eof_at),
        });
        let mut scratch = Diagnostics::default();
        let mut sub = Parser {
            toks,
            pos: 0,
            map: self.map,
            diags: &mut scratch,
            scopes: vec![HashSet::new()],
            depth: 0,
        };
        let kv = sub.is_name_at(0) && sub.peek_at(1).is_punct("=");
        let result = if kv {
            sub.comma_list(|p| {
                let k = p.name()?;
                p.expect("=")?;
                Ok((k, p.expr()?))
            })
            .map(AnnotationBody::KeyValues)
        } else {
            sub.comma_list(|p| p.expr()).map(AnnotationBody::Exprs)
        };
        match result {
            Ok(body) if sub.at_eof() && !scratch.has_errors() => body,
            _ => AnnotationBody::Unparsed(text.to_string()),
        }
    }

    fn comma_list<T>(&mut self, mut f: impl FnMut(&mut Self) -> PResult<T>) -> PResult<Vec<T>> {
        let mut out = vec![f(self)?];
        while self.eat(",") {
            out.push(f(self)?);
        }
        Ok(out)
    }

    fn declaration(&mut self) -> PResult<Option<Decl>> {
        let start = self.peek().span;
        let annos = self.annotations()?;
        if self.eat(";") {
            return Ok(None);
        }
        let kw = self.ident_at(0).unwrap_or("").to_string();
        let next_is_brace = self.peek_at(1).is_punct("{");
        let kind = match kw.as_str() {
            "const" => DeclKind::Const(self.const_decl(annos)?),
            "header" | "struct" | "header_union" => self.struct_decl(annos)?,
            "enum" => self.enum_decl(annos)?,
            "error" if next_is_brace => {
                self.bump();
                DeclKind::Error(self.name_list()?)
            }
            "match_kind" if next_is_brace => {
                self.bump();
                DeclKind::MatchKind(self.name_list()?)
            }
            "typedef" | "type" if !self.peek_at(1).is_punct("(") => self.typedef_decl(annos)?,
            "extern" => self.extern_decl(annos)?,
            "action" => DeclKind::Action(self.action_decl(annos)?),
            "parser" => self.parser_decl(annos, start)?,
            "control" => self.control_decl(annos, start)?,
            "package" => {
                self.bump();
                let ty = self.with_scope(|p| p.type_decl_header(annos))?;
                self.expect(";")?;
                DeclKind::PackageType(ty)
            }
            "table" => DeclKind::Table(self.table_decl(annos)?),
            "value_set" => DeclKind::ValueSet(self.value_set_decl(annos)?),
            _ => self.typed_declaration(annos)?,
        };
        Ok(Some(Decl {
            kind,
            span: start.to(self.prev_span()),
        }))
    }

    /// Declarations that start with a type: functions, instantiations and variables.
    fn typed_declaration(&mut self, annos: Vec<Annotation>) -> PResult<DeclKind> {
        // An unknown name followed by a name is a type we have not seen (reported by the
        // type checker), or a generic function's return type before its type parameters.
        if !(self.at_type_start() || (self.is_name_at(0) && self.is_name_at(1))) {
            return self.expected("a declaration");
        }
        self.with_scope(|p| {
            let ty = p.type_ref()?;
            if p.at("(") {
                let args = p.arguments()?;
                let name = p.name()?;
                let body = if p.eat("=") {
                    let open = p.expect("{")?;
                    p.list_until_close(open, |p| p.declaration())?
                } else {
                    Vec::new()
                };
                p.expect(";")?;
                return Ok(DeclKind::Instantiation(Instantiation {
                    annotations: annos,
                    ty,
                    args,
                    name,
                    body,
                }));
            }
            let name = p.name()?;
            if p.at("(") || p.at("<") {
                let type_params = p.type_params()?;
                let params = p.params()?;
                let proto = FunctionProto {
                    annotations: annos,
                    abstract_: false,
                    ret: Some(ty),
                    name,
                    type_params,
                    params,
                };
                let body = p.block(Vec::new())?;
                return Ok(DeclKind::Function(FunctionDecl { proto, body }));
            }
            let init = if p.eat("=") { Some(p.expr()?) } else { None };
            p.expect(";")?;
            Ok(DeclKind::Var(VarDecl {
                annotations: annos,
                ty,
                name,
                init,
            }))
        })
    }

    fn const_decl(&mut self, annos: Vec<Annotation>) -> PResult<ConstDecl> {
        self.expect_kw("const")?;
        let ty = self.type_ref()?;
        let name = self.name()?;
        self.expect("=")?;
        let value = self.expr()?;
        self.expect(";")?;
        Ok(ConstDecl {
            annotations: annos,
            ty,
            name,
            value,
        })
    }

    fn name_list(&mut self) -> PResult<Vec<Ident>> {
        self.expect("{")?;
        let names = if self.at("}") {
            Vec::new()
        } else {
            self.comma_list(|p| p.name())?
        };
        self.eat(",");
        self.expect("}")?;
        Ok(names)
    }

    fn struct_decl(&mut self, annos: Vec<Annotation>) -> PResult<DeclKind> {
        let kind = match self.bump().tok {
            Tok::Ident(s) if s == "header" => StructKind::Header,
            Tok::Ident(s) if s == "header_union" => StructKind::HeaderUnion,
            _ => StructKind::Struct,
        };
        let name = self.name()?;
        self.declare_type(&name.name);
        self.with_scope(|p| {
            let type_params = p.type_params()?;
            let open = p.expect("{")?;
            let fields = p.list_until_close(open, |p| {
                let annotations = p.annotations()?;
                let mut ty = p.type_ref()?;
                let name = p.name()?;
                // The C-style array declarator, `bit<8> arr[16];`, is `bit<8>[16] arr;`.
                while p.at("[") {
                    p.bump();
                    let size = p.expr()?;
                    p.expect("]")?;
                    ty = Type {
                        span: ty.span.to(p.prev_span()),
                        kind: TypeKind::Stack(Box::new(ty), Box::new(size)),
                    };
                }
                p.expect(";")?;
                Ok(Some(Field {
                    annotations,
                    ty,
                    name,
                }))
            })?;
            Ok(DeclKind::Struct(StructDecl {
                annotations: annos,
                kind,
                name,
                type_params,
                fields,
            }))
        })
    }

    fn enum_decl(&mut self, annos: Vec<Annotation>) -> PResult<DeclKind> {
        self.expect_kw("enum")?;
        let repr = if self.at_type_start() && !self.peek_at(1).is_punct("{") {
            Some(self.type_ref()?)
        } else {
            None
        };
        let name = self.name()?;
        self.declare_type(&name.name);
        self.expect("{")?;
        let mut members = Vec::new();
        while !self.at("}") {
            let m = self.name()?;
            let v = if self.eat("=") {
                Some(self.expr()?)
            } else {
                None
            };
            members.push((m, v));
            if !self.eat(",") {
                break;
            }
        }
        self.expect("}")?;
        Ok(DeclKind::Enum(EnumDecl {
            annotations: annos,
            repr,
            name,
            members,
        }))
    }

    fn typedef_decl(&mut self, annos: Vec<Annotation>) -> PResult<DeclKind> {
        let new_type = self.bump().is_ident("type");
        let ty = self.type_ref()?;
        let name = self.name()?;
        self.declare_type(&name.name);
        self.expect(";")?;
        Ok(DeclKind::Typedef(TypedefDecl {
            annotations: annos,
            new_type,
            ty,
            name,
        }))
    }

    /// Whether the balanced `<...>` starting `from` tokens ahead is followed by `tok`.
    fn angle_group_followed_by(&self, from: usize, tok: &str) -> bool {
        let mut depth = 0usize;
        let mut n = from;
        loop {
            let t = self.peek_at(n);
            match &t.tok {
                Tok::Eof | Tok::Punct(";") | Tok::Punct("{") if depth > 0 => return false,
                Tok::Punct("<") => depth += 1,
                Tok::Punct(">") => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return self.peek_at(n + 1).is_punct(tok);
                    }
                }
                _ if depth == 0 => return false,
                _ => {}
            }
            n += 1;
        }
    }

    fn extern_decl(&mut self, annos: Vec<Annotation>) -> PResult<DeclKind> {
        self.expect_kw("extern")?;
        let is_object = self.is_name_at(0)
            && (self.peek_at(1).is_punct("{")
                || (self.peek_at(1).is_punct("<") && self.angle_group_followed_by(1, "{")));
        if !is_object {
            let proto = self.with_scope(|p| p.function_proto(annos, false))?;
            self.expect(";")?;
            return Ok(DeclKind::ExternFunction(proto));
        }
        let name = self.name()?;
        self.declare_type(&name.name);
        self.with_scope(|p| {
            let type_params = p.type_params()?;
            let open = p.expect("{")?;
            let ext_name = name.name.clone();
            let methods = p.list_until_close(open, |p| {
                let annotations = p.annotations()?;
                let abstract_ = p.eat_kw("abstract");
                let ctor = p.at_kw(&ext_name) && p.peek_at(1).is_punct("(");
                let proto = p.with_scope(|p| {
                    if ctor {
                        let name = p.name()?;
                        let params = p.params()?;
                        Ok(FunctionProto {
                            annotations,
                            abstract_,
                            ret: None,
                            name,
                            type_params: Vec::new(),
                            params,
                        })
                    } else {
                        p.function_proto(annotations, abstract_)
                    }
                })?;
                p.expect(";")?;
                Ok(Some(proto))
            })?;
            Ok(DeclKind::Extern(ExternDecl {
                annotations: annos,
                name,
                type_params,
                methods,
            }))
        })
    }

    /// `RetType name<T...>(params)`; the caller opened the scope for the type parameters.
    fn function_proto(
        &mut self,
        annotations: Vec<Annotation>,
        abstract_: bool,
    ) -> PResult<FunctionProto> {
        let ret = self.type_ref()?;
        let name = self.name()?;
        let type_params = self.type_params()?;
        let params = self.params()?;
        Ok(FunctionProto {
            annotations,
            abstract_,
            ret: Some(ret),
            name,
            type_params,
            params,
        })
    }

    fn action_decl(&mut self, annos: Vec<Annotation>) -> PResult<ActionDecl> {
        self.expect_kw("action")?;
        let name = self.name()?;
        let params = self.params()?;
        let body = self.block(Vec::new())?;
        Ok(ActionDecl {
            annotations: annos,
            name,
            params,
            body,
        })
    }

    /// `Name<T...>(params)` of parser, control and package types.
    fn type_decl_header(&mut self, annos: Vec<Annotation>) -> PResult<TypeDecl> {
        let name = self.name()?;
        self.declare_type(&name.name);
        let type_params = self.type_params()?;
        let params = self.params()?;
        Ok(TypeDecl {
            annotations: annos,
            name,
            type_params,
            params,
        })
    }

    fn parser_decl(&mut self, annos: Vec<Annotation>, start: Span) -> PResult<DeclKind> {
        self.expect_kw("parser")?;
        self.with_scope(|p| {
            let ty = p.type_decl_header(annos)?;
            if p.eat(";") {
                return Ok(DeclKind::ParserType(ty));
            }
            let ctor_params = if p.at("(") { p.params()? } else { Vec::new() };
            let open = p.expect("{")?;
            let mut locals = Vec::new();
            let mut states = Vec::new();
            p.list_until_close(open, |p| {
                let item_start = p.peek().span;
                let annotations = p.annotations()?;
                if p.at_kw("state") && p.is_name_at(1) {
                    states.push(p.parser_state(annotations, item_start)?);
                } else if let Some(d) = p.local_decl(annotations, item_start)? {
                    locals.push(d);
                }
                Ok(Some(()))
            })?;
            Ok(DeclKind::Parser(ParserDecl {
                ty,
                ctor_params,
                locals,
                states,
                span: start.to(p.prev_span()),
            }))
        })
    }

    /// Locals of parsers and controls: the declaration forms with annotations already read.
    fn local_decl(&mut self, annos: Vec<Annotation>, start: Span) -> PResult<Option<Decl>> {
        if self.eat(";") {
            return Ok(None);
        }
        let kind = if self.at_kw("const") {
            DeclKind::Const(self.const_decl(annos)?)
        } else if self.at_kw("action") {
            DeclKind::Action(self.action_decl(annos)?)
        } else if self.at_kw("table") {
            DeclKind::Table(self.table_decl(annos)?)
        } else if self.at_kw("value_set") {
            DeclKind::ValueSet(self.value_set_decl(annos)?)
        } else {
            self.typed_declaration(annos)?
        };
        Ok(Some(Decl {
            kind,
            span: start.to(self.prev_span()),
        }))
    }

    fn parser_state(&mut self, annos: Vec<Annotation>, start: Span) -> PResult<ParserState> {
        self.expect_kw("state")?;
        let name = self.name()?;
        let open = self.expect("{")?;
        let mut stmts = Vec::new();
        let mut transition = None;
        self.list_until_close(open, |p| {
            if p.at_kw("transition") {
                if transition.is_some() {
                    let span = p.peek().span;
                    return p.error(span, "a state has one transition, at its end");
                }
                transition = Some(p.transition()?);
            } else if transition.is_some() {
                return p.expected("'}' after the transition");
            } else {
                stmts.push(p.statement()?);
            }
            Ok(Some(()))
        })?;
        Ok(ParserState {
            annotations: annos,
            name,
            stmts,
            transition,
            span: start.to(self.prev_span()),
        })
    }

    fn transition(&mut self) -> PResult<Transition> {
        self.expect_kw("transition")?;
        if !self.at_kw("select") {
            let name = self.name()?;
            self.expect(";")?;
            return Ok(Transition::Direct(name));
        }
        let start = self.bump().span;
        self.expect("(")?;
        // `select()` with no expression is valid (p4c's grammar); only `default` or `_` match.
        let exprs = if self.at(")") {
            Vec::new()
        } else {
            self.comma_list(|p| p.expr())?
        };
        self.expect(")")?;
        let open = self.expect("{")?;
        let cases = self.list_until_close(open, |p| {
            let case_start = p.peek().span;
            let keyset = p.keyset()?;
            p.expect(":")?;
            let state = p.name()?;
            p.expect(";")?;
            Ok(Some(SelectCase {
                keyset,
                state,
                span: case_start.to(p.prev_span()),
            }))
        })?;
        self.eat(";");
        Ok(Transition::Select {
            exprs,
            cases,
            span: start.to(self.prev_span()),
        })
    }

    fn keyset(&mut self) -> PResult<Expr> {
        if self.at("(") {
            let start = self.bump().span;
            let items = self.comma_list(|p| p.simple_keyset())?;
            let end = self.expect(")")?;
            return Ok(Expr {
                kind: ExprKind::Tuple(items),
                span: start.to(end),
            });
        }
        self.simple_keyset()
    }

    fn simple_keyset(&mut self) -> PResult<Expr> {
        if self.at_kw("default") || self.at_kw("_") {
            let t = self.bump();
            let kind = if t.is_ident("default") {
                ExprKind::Default
            } else {
                ExprKind::DontCare
            };
            return Ok(Expr { kind, span: t.span });
        }
        let e = self.expr()?;
        let op = if self.eat("&&&") {
            BinOp::Mask
        } else if self.eat("..") {
            BinOp::Range
        } else {
            return Ok(e);
        };
        let r = self.expr()?;
        let span = e.span.to(r.span);
        Ok(Expr {
            kind: ExprKind::Binary(op, Box::new(e), Box::new(r)),
            span,
        })
    }

    fn control_decl(&mut self, annos: Vec<Annotation>, start: Span) -> PResult<DeclKind> {
        self.expect_kw("control")?;
        self.with_scope(|p| {
            let ty = p.type_decl_header(annos)?;
            if p.eat(";") {
                return Ok(DeclKind::ControlType(ty));
            }
            let ctor_params = if p.at("(") { p.params()? } else { Vec::new() };
            let open = p.expect("{")?;
            let mut locals = Vec::new();
            let mut apply = None;
            p.list_until_close(open, |p| {
                let item_start = p.peek().span;
                let annotations = p.annotations()?;
                if p.at_kw("apply") && p.peek_at(1).is_punct("{") {
                    p.bump();
                    let b = p.block(annotations)?;
                    if apply.is_some() {
                        return p.error(item_start, "a control has one apply block");
                    }
                    apply = Some(b);
                } else if let Some(d) = p.local_decl(annotations, item_start)? {
                    locals.push(d);
                }
                Ok(Some(()))
            })?;
            let span = start.to(p.prev_span());
            let apply = match apply {
                Some(a) => a,
                None => return p.error(ty.name.span, "control has no apply block"),
            };
            Ok(DeclKind::Control(ControlDecl {
                ty,
                ctor_params,
                locals,
                apply,
                span,
            }))
        })
    }

    fn value_set_decl(&mut self, annos: Vec<Annotation>) -> PResult<ValueSetDecl> {
        self.expect_kw("value_set")?;
        self.expect("<")?;
        let elem = self.type_ref()?;
        self.expect(">")?;
        self.expect("(")?;
        let size = self.expr()?;
        self.expect(")")?;
        let name = self.name()?;
        self.expect(";")?;
        Ok(ValueSetDecl {
            annotations: annos,
            elem,
            size,
            name,
        })
    }

    fn table_decl(&mut self, annos: Vec<Annotation>) -> PResult<TableDecl> {
        self.expect_kw("table")?;
        let name = self.name()?;
        // Older P4_16 programs (and p4c, which still parses them) write `table t() { ... }`.
        if self.eat("(") {
            self.expect(")")?;
        }
        let open = self.expect("{")?;
        let props = self.list_until_close(open, |p| p.table_property().map(Some))?;
        Ok(TableDecl {
            annotations: annos,
            name,
            props,
        })
    }

    fn table_property(&mut self) -> PResult<TableProperty> {
        let start = self.peek().span;
        let annotations = self.annotations()?;
        let is_const = self.eat_kw("const");
        let name = self.member_name()?;
        self.expect("=")?;
        let kind = match name.name.as_str() {
            "key" => {
                let open = self.expect("{")?;
                TablePropKind::Key(self.list_until_close(open, |p| {
                    let expr = p.expr()?;
                    p.expect(":")?;
                    let match_kind = p.name()?;
                    let annotations = p.annotations()?;
                    p.expect(";")?;
                    Ok(Some(KeyElement {
                        annotations,
                        expr,
                        match_kind,
                    }))
                })?)
            }
            "actions" => {
                let open = self.expect("{")?;
                TablePropKind::Actions(self.list_until_close(open, |p| {
                    let annotations = p.annotations()?;
                    let r = p.action_ref(annotations)?;
                    p.expect(";")?;
                    Ok(Some(r))
                })?)
            }
            "entries" => {
                let open = self.expect("{")?;
                TablePropKind::Entries(self.list_until_close(open, |p| p.entry().map(Some))?)
            }
            "default_action" => {
                let r = self.action_ref(Vec::new())?;
                self.expect(";")?;
                TablePropKind::DefaultAction(r)
            }
            _ => {
                let e = self.expr()?;
                self.expect(";")?;
                TablePropKind::Other(e)
            }
        };
        Ok(TableProperty {
            annotations,
            is_const,
            name,
            kind,
            span: start.to(self.prev_span()),
        })
    }

    fn entry(&mut self) -> PResult<Entry> {
        let start = self.peek().span;
        let mut annotations = self.annotations()?;
        let is_const = self.eat_kw("const");
        let priority = if self.at_kw("priority") && self.peek_at(1).is_punct("=") {
            self.bump();
            self.bump();
            let e = self.expr()?;
            self.expect(":")?;
            Some(e)
        } else {
            None
        };
        let keyset = self.keyset()?;
        self.expect(":")?;
        let action = self.action_ref(Vec::new())?;
        annotations.extend(self.annotations()?);
        self.expect(";")?;
        Ok(Entry {
            annotations,
            is_const,
            priority,
            keyset,
            action,
            span: start.to(self.prev_span()),
        })
    }

    fn action_ref(&mut self, annotations: Vec<Annotation>) -> PResult<ActionRef> {
        let start = self.peek().span;
        let global = self.eat(".");
        let name = self.name()?;
        let args = if self.at("(") {
            Some(self.arguments()?)
        } else {
            None
        };
        Ok(ActionRef {
            annotations,
            name: Path { global, name },
            args,
            span: start.to(self.prev_span()),
        })
    }

    // ---- types and parameters -----------------------------------------------------------------

    fn type_params(&mut self) -> PResult<Vec<Ident>> {
        if !self.eat("<") {
            return Ok(Vec::new());
        }
        let names = self.comma_list(|p| p.name())?;
        self.expect(">")?;
        for n in &names {
            let top = self.scopes.len() - 1;
            self.scopes[top].insert(n.name.clone());
        }
        Ok(names)
    }

    fn params(&mut self) -> PResult<Vec<Param>> {
        self.expect("(")?;
        if self.eat(")") {
            return Ok(Vec::new());
        }
        let params = self.comma_list(|p| {
            let annotations = p.annotations()?;
            let direction = if p.eat_kw("in") {
                Some(Direction::In)
            } else if p.eat_kw("out") {
                Some(Direction::Out)
            } else if p.eat_kw("inout") {
                Some(Direction::InOut)
            } else {
                None
            };
            let ty = p.type_ref()?;
            let name = p.name()?;
            let default = if p.eat("=") { Some(p.expr()?) } else { None };
            Ok(Param {
                annotations,
                direction,
                ty,
                name,
                default,
            })
        })?;
        self.expect(")")?;
        Ok(params)
    }

    fn type_ref(&mut self) -> PResult<Type> {
        self.enter()?;
        let r = self.type_ref_inner();
        self.leave();
        r
    }

    fn type_ref_inner(&mut self) -> PResult<Type> {
        let start = self.peek().span;
        let word = self.ident_at(0).map(str::to_string);
        let kind = match word.as_deref() {
            Some("bool") => self.simple_type(TypeKind::Bool),
            Some("error") => self.simple_type(TypeKind::Error),
            Some("string") => self.simple_type(TypeKind::String),
            Some("match_kind") => self.simple_type(TypeKind::MatchKind),
            Some("void") => self.simple_type(TypeKind::Void),
            Some("_") => self.simple_type(TypeKind::DontCare),
            Some("bit") | Some("int") | Some("varbit") => {
                let w = word.unwrap_or_default();
                let kw = self.bump().span;
                if !self.at("<") {
                    match w.as_str() {
                        "bit" => TypeKind::Bit(Box::new(Expr {
                            kind: ExprKind::Int {
                                value: 1u32.into(),
                                width: None,
                                radix: 10,
                            },
                            span: kw,
                        })),
                        "int" => TypeKind::InfInt,
                        _ => return self.expected("'<' after varbit"),
                    }
                } else {
                    self.bump();
                    let width = self.width_expr()?;
                    self.expect(">")?;
                    let width = Box::new(width);
                    match w.as_str() {
                        "bit" => TypeKind::Bit(width),
                        "int" => TypeKind::Int(width),
                        _ => TypeKind::Varbit(width),
                    }
                }
            }
            Some("tuple") => {
                self.bump();
                self.expect("<")?;
                let items = if self.at(">") {
                    Vec::new()
                } else {
                    self.comma_list(|p| p.type_ref())?
                };
                self.expect(">")?;
                TypeKind::Tuple(items)
            }
            _ => {
                let global = self.eat(".");
                let name = self.name()?;
                let path = Path { global, name };
                if self.at("<") {
                    self.bump();
                    let args = self.comma_list(|p| p.type_ref())?;
                    self.expect(">")?;
                    TypeKind::Specialized(path, args)
                } else {
                    TypeKind::Name(path)
                }
            }
        };
        let mut ty = Type {
            kind,
            span: start.to(self.prev_span()),
        };
        while self.at("[") {
            self.bump();
            let size = self.expr()?;
            self.expect("]")?;
            ty = Type {
                kind: TypeKind::Stack(Box::new(ty), Box::new(size)),
                span: start.to(self.prev_span()),
            };
        }
        Ok(ty)
    }

    fn simple_type(&mut self, k: TypeKind) -> TypeKind {
        self.bump();
        k
    }

    /// `bit<8>`, `bit<(W)>`, and (leniently) `bit<W>` with a constant name.
    fn width_expr(&mut self) -> PResult<Expr> {
        let t = self.peek().clone();
        match &t.tok {
            Tok::Int(value, width, radix) => {
                self.bump();
                Ok(Expr {
                    kind: ExprKind::Int {
                        value: value.clone(),
                        width: *width,
                        radix: *radix,
                    },
                    span: t.span,
                })
            }
            Tok::Punct("(") => {
                self.bump();
                let e = self.expr()?;
                self.expect(")")?;
                Ok(e)
            }
            _ if self.is_name_at(0) => {
                let name = self.name()?;
                let span = name.span;
                Ok(Expr {
                    kind: ExprKind::Path(Path {
                        global: false,
                        name,
                    }),
                    span,
                })
            }
            _ => self.expected("a width"),
        }
    }

    // ---- statements -----------------------------------------------------------------------------

    fn block(&mut self, annotations: Vec<Annotation>) -> PResult<Block> {
        let open = self.expect("{")?;
        let stmts = self.list_until_close(open, |p| p.statement().map(Some))?;
        Ok(Block {
            annotations,
            stmts,
            span: open.to(self.prev_span()),
        })
    }

    fn statement(&mut self) -> PResult<Stmt> {
        self.enter()?;
        let r = self.statement_inner();
        self.leave();
        r
    }

    fn statement_inner(&mut self) -> PResult<Stmt> {
        let start = self.peek().span;
        let annos = self.annotations()?;
        let word = self.ident_at(0).map(str::to_string);
        let kind = match word.as_deref() {
            _ if self.at("{") => StmtKind::Block(self.block(annos)?),
            _ if self.at(";") => {
                self.bump();
                StmtKind::Empty
            }
            Some("if") => {
                self.bump();
                self.expect("(")?;
                let c = self.expr()?;
                self.expect(")")?;
                let t = self.statement()?;
                let e = if self.eat_kw("else") {
                    Some(Box::new(self.statement()?))
                } else {
                    None
                };
                StmtKind::If(c, Box::new(t), e)
            }
            Some("switch") => {
                self.bump();
                self.expect("(")?;
                let e = self.expr()?;
                self.expect(")")?;
                let open = self.expect("{")?;
                let cases = self.list_until_close(open, |p| {
                    let case_start = p.peek().span;
                    let label = if p.at_kw("default") {
                        Expr {
                            kind: ExprKind::Default,
                            span: p.bump().span,
                        }
                    } else {
                        p.expr()?
                    };
                    p.expect(":")?;
                    let body = if p.at("{") {
                        Some(p.block(Vec::new())?)
                    } else {
                        None
                    };
                    Ok(Some(SwitchCase {
                        label,
                        body,
                        span: case_start.to(p.prev_span()),
                    }))
                })?;
                StmtKind::Switch(e, cases)
            }
            Some("exit") => {
                self.bump();
                self.expect(";")?;
                StmtKind::Exit
            }
            Some("return") => {
                self.bump();
                let e = if self.at(";") {
                    None
                } else {
                    Some(self.expr()?)
                };
                self.expect(";")?;
                StmtKind::Return(e)
            }
            Some("const") => StmtKind::Const(self.const_decl(annos)?),
            Some("for") if self.peek_at(1).is_punct("(") => self.for_stmt(annos)?,
            Some(w @ ("break" | "continue")) if self.peek_at(1).is_punct(";") => {
                let kind = if w == "break" {
                    StmtKind::Break
                } else {
                    StmtKind::Continue
                };
                self.bump();
                self.bump();
                kind
            }
            _ => {
                let kind = self.simple_stmt(annos)?;
                self.expect(";")?;
                kind
            }
        };
        Ok(Stmt {
            kind,
            span: start.to(self.prev_span()),
        })
    }

    /// A declaration, assignment or call statement without its `;` (also the init and update
    /// parts of a `for`).
    fn simple_stmt(&mut self, annos: Vec<Annotation>) -> PResult<StmtKind> {
        if self.starts_var_decl() {
            let ty = self.type_ref()?;
            let name = self.name()?;
            let init = if self.eat("=") {
                Some(self.expr()?)
            } else {
                None
            };
            return Ok(StmtKind::Var(VarDecl {
                annotations: annos,
                ty,
                name,
                init,
            }));
        }
        let lhs = self.expr()?;
        let kind = if self.eat("=") {
            let rhs = self.expr()?;
            StmtKind::Assign(lhs, rhs)
        } else if let Some((op, ntoks)) = self.compound_assign() {
            // `a op= b` is `a = a op b` with `a` evaluated once: indices that call
            // something are computed first into locals, `{ bit<32> i = e; a[i] = a[i]
            // op b; }`, so that `a` itself calls nothing and may be read twice.
            let at = self.peek().span;
            for _ in 0..ntoks {
                self.bump();
            }
            let mut temps = Vec::new();
            let lhs = hoist_indices(lhs, &mut temps);
            if calls(&lhs) {
                return self.error(
                    at,
                    "unsupported: a compound assignment to a location that calls something",
                );
            }
            let rhs = self.expr()?;
            let span = lhs.span.to(rhs.span);
            let value = Expr {
                kind: ExprKind::Binary(op, Box::new(lhs.clone()), Box::new(rhs)),
                span,
            };
            let assign = StmtKind::Assign(lhs, value);
            if temps.is_empty() {
                assign
            } else {
                temps.push(Stmt { kind: assign, span });
                StmtKind::Block(Block {
                    annotations: Vec::new(),
                    stmts: temps,
                    span,
                })
            }
        } else if matches!(lhs.kind, ExprKind::Call { .. }) {
            StmtKind::Call(lhs)
        } else {
            return self.expected("'=' or a call");
        };
        Ok(kind)
    }

    /// `for (init; cond; update) body` and `for (T x in collection) body` (P4_16 1.2.5). The
    /// `in` forms are written as the three-clause form: `for (T x in lo .. hi)` (both ends
    /// included, `hi` evaluated once) as `{ T x = lo; T hi' = hi; for (bool go = x <= hi'; go;
    /// go = x != hi', x = x + 1) body }`, which also ends when `hi` is the type's largest
    /// value; `for (T x in hs)` over a header stack as `for (bit<32> i = 0; i < hs.size;
    /// i = i + 1) { T x = hs[i]; body }`.
    fn for_stmt(&mut self, annotations: Vec<Annotation>) -> PResult<StmtKind> {
        let at = self.bump().span;
        self.expect("(")?;
        let save = self.pos;
        let is_in = self.speculate(|p| {
            p.annotations()?;
            if !p.starts_var_decl() {
                return Err(());
            }
            p.type_ref()?;
            p.name()?;
            if p.at_kw("in") {
                Ok(())
            } else {
                Err(())
            }
        });
        self.pos = save;
        if is_in {
            let annos = self.annotations()?;
            let ty = self.type_ref()?;
            let name = self.name()?;
            self.bump();
            let first = self.expr()?;
            let last = if self.eat("..") {
                Some(self.expr()?)
            } else {
                None
            };
            self.expect(")")?;
            let body = self.statement()?;
            let var = VarDecl {
                annotations: annos,
                ty,
                name,
                init: None,
            };
            return Ok(match last {
                Some(last) => for_range(at, annotations, var, first, last, body),
                None => for_stack(at, annotations, var, first, body),
            });
        }
        let init = self.for_clauses(";")?;
        self.expect(";")?;
        let cond = if self.at(";") {
            None
        } else {
            Some(self.expr()?)
        };
        self.expect(";")?;
        let update = self.for_clauses(")")?;
        self.expect(")")?;
        let body = self.statement()?;
        Ok(StmtKind::For(Box::new(ForStmt {
            annotations,
            init,
            cond,
            update,
            body,
        })))
    }

    /// The comma-separated statements of a `for`'s init or update part, up to `end`.
    fn for_clauses(&mut self, end: &str) -> PResult<Vec<Stmt>> {
        let mut out = Vec::new();
        if self.at(end) {
            return Ok(out);
        }
        loop {
            let start = self.peek().span;
            let annos = self.annotations()?;
            let kind = self.simple_stmt(annos)?;
            out.push(Stmt {
                kind,
                span: start.to(self.prev_span()),
            });
            if !self.eat(",") {
                return Ok(out);
            }
        }
    }

    /// `T x ...` at statement start: a type (keyword or type name not used as an expression
    /// head) or an unknown name directly followed by another name.
    fn starts_var_decl(&self) -> bool {
        let Some(w) = self.ident_at(0) else {
            return self.at(".") && self.at_type_start() && self.is_name_at(2);
        };
        let next = self.peek_at(1);
        if w == "error" {
            return self.is_name_at(1);
        }
        if TYPE_KEYWORDS.contains(&w) {
            return true;
        }
        if self.is_type_name(w) {
            return !next.is_punct(".") && !next.is_punct("(");
        }
        self.is_name_at(0) && self.is_name_at(1)
    }

    // ---- expressions ------------------------------------------------------------------------------

    fn expr(&mut self) -> PResult<Expr> {
        self.enter()?;
        let r = self.ternary();
        self.leave();
        r
    }

    fn ternary(&mut self) -> PResult<Expr> {
        let c = self.binary(1)?;
        if !self.eat("?") {
            return Ok(c);
        }
        let t = self.expr()?;
        self.expect(":")?;
        let e = self.expr()?;
        let span = c.span.to(e.span);
        Ok(Expr {
            kind: ExprKind::Ternary(Box::new(c), Box::new(t), Box::new(e)),
            span,
        })
    }

    /// The binary operator here, its precedence (p4c's grammar: bitwise operators bind tighter
    /// than comparisons) and how many tokens it spans.
    fn binop(&self) -> Option<(BinOp, u8, usize)> {
        let t = self.peek();
        let Tok::Punct(p) = t.tok else {
            return None;
        };
        if p == ">" {
            let n = self.peek_at(1);
            if n.is_punct(">") && n.span.lo == t.span.hi {
                return (!self.compound_follows(2)).then_some((BinOp::Shr, 8, 2));
            }
            // `a >>= b` lexes as `>` `>=`.
            if n.is_punct(">=") && n.span.lo == t.span.hi {
                return None;
            }
        }
        let (op, prec) = operator(p)?;
        // `a += b`: the operator of a compound assignment, not of an expression.
        if self.compound_follows(1) {
            return None;
        }
        Some((op, prec, 1))
    }

    /// Whether an `=` directly follows the `ntoks` tokens of an operator here (`+=`, `>>=`).
    fn compound_follows(&self, ntoks: usize) -> bool {
        let last = self.peek_at(ntoks - 1);
        let next = self.peek_at(ntoks);
        next.is_punct("=") && next.span.lo == last.span.hi
    }

    /// `op=` of a compound assignment (P4_16 1.2.4): its operator and how many tokens it spans,
    /// `=` included.
    fn compound_assign(&self) -> Option<(BinOp, usize)> {
        let t = self.peek();
        let Tok::Punct(p) = t.tok else {
            return None;
        };
        let next = self.peek_at(1);
        let (op, ntoks) = match p {
            ">" if next.is_punct(">=") && next.span.lo == t.span.hi => {
                return Some((BinOp::Shr, 2))
            }
            ">" if next.is_punct(">") && next.span.lo == t.span.hi => (BinOp::Shr, 2),
            _ => match operator(p)? {
                (
                    op @ (BinOp::Shl
                    | BinOp::Add
                    | BinOp::Sub
                    | BinOp::Mul
                    | BinOp::Div
                    | BinOp::Mod
                    | BinOp::BitAnd
                    | BinOp::BitOr
                    | BinOp::BitXor
                    | BinOp::AddSat
                    | BinOp::SubSat),
                    _,
                ) => (op, 1),
                _ => return None,
            },
        };
        self.compound_follows(ntoks).then_some((op, ntoks + 1))
    }

    fn binary(&mut self, min_prec: u8) -> PResult<Expr> {
        let mut lhs = self.unary()?;
        while let Some((op, prec, ntoks)) = self.binop() {
            if prec < min_prec {
                break;
            }
            for _ in 0..ntoks {
                self.bump();
            }
            self.enter()?;
            let rhs = self.binary(prec + 1);
            self.leave();
            let rhs = rhs?;
            let span = lhs.span.to(rhs.span);
            lhs = Expr {
                kind: ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)),
                span,
            };
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> PResult<Expr> {
        let start = self.peek().span;
        let op = match self.peek().tok {
            Tok::Punct("!") => Some(UnOp::Not),
            Tok::Punct("~") => Some(UnOp::BitNot),
            Tok::Punct("-") => Some(UnOp::Neg),
            Tok::Punct("+") => Some(UnOp::Plus),
            _ => None,
        };
        if let Some(op) = op {
            self.bump();
            self.enter()?;
            let e = self.unary();
            self.leave();
            let e = e?;
            let span = start.to(e.span);
            return Ok(Expr {
                kind: ExprKind::Unary(op, Box::new(e)),
                span,
            });
        }
        if self.at("(") && self.cast_ahead() {
            self.bump();
            let ty = self.type_ref()?;
            self.expect(")")?;
            self.enter()?;
            let e = self.unary();
            self.leave();
            let e = e?;
            let span = start.to(e.span);
            return Ok(Expr {
                kind: ExprKind::Cast(ty, Box::new(e)),
                span,
            });
        }
        self.postfix()
    }

    /// `(` type `)` starts a cast; decided by a trial parse with errors discarded.
    fn cast_ahead(&mut self) -> bool {
        let save = self.pos;
        self.bump();
        if !self.at_type_start() {
            self.pos = save;
            return false;
        }
        let ok = self.speculate(|p| {
            p.type_ref()?;
            if p.at(")") {
                Ok(())
            } else {
                Err(())
            }
        });
        self.pos = save;
        ok
    }

    /// Runs a trial parse; its errors are dropped. Leaves the position where the trial ended.
    fn speculate(&mut self, f: impl FnOnce(&mut Self) -> PResult<()>) -> bool {
        let saved = std::mem::take(self.diags);
        let depth = self.depth;
        let ok = f(self).is_ok() && !self.diags.has_errors();
        *self.diags = saved;
        self.depth = depth;
        ok
    }

    fn postfix(&mut self) -> PResult<Expr> {
        let mut e = self.primary()?;
        loop {
            if self.at(".") {
                self.bump();
                let m = self.member_name()?;
                let span = e.span.to(m.span);
                e = Expr {
                    kind: ExprKind::Member(Box::new(e), m),
                    span,
                };
            } else if self.at("[") {
                self.bump();
                let i = self.expr()?;
                if self.eat("+:") {
                    // `e[L +: W]`: the W bits from L up, `e[L + W - 1 : L]`.
                    let w = self.expr()?;
                    let end = self.expect("]")?;
                    let span = e.span.to(end);
                    let bin = |op, a: Expr, b: Expr| Expr {
                        span: a.span.to(b.span),
                        kind: ExprKind::Binary(op, Box::new(a), Box::new(b)),
                    };
                    let one = Expr {
                        span: w.span,
                        kind: ExprKind::Int {
                            value: 1u32.into(),
                            width: None,
                            radix: 10,
                        },
                    };
                    let hi = bin(BinOp::Sub, bin(BinOp::Add, i.clone(), w), one);
                    e = Expr {
                        kind: ExprKind::Slice(Box::new(e), Box::new(hi), Box::new(i)),
                        span,
                    };
                } else if self.eat(":") {
                    let lo = self.expr()?;
                    let end = self.expect("]")?;
                    let span = e.span.to(end);
                    e = Expr {
                        kind: ExprKind::Slice(Box::new(e), Box::new(i), Box::new(lo)),
                        span,
                    };
                } else {
                    let end = self.expect("]")?;
                    let span = e.span.to(end);
                    e = Expr {
                        kind: ExprKind::Index(Box::new(e), Box::new(i)),
                        span,
                    };
                }
            } else if self.at("(") {
                let args = self.arguments()?;
                let span = e.span.to(self.prev_span());
                e = Expr {
                    kind: ExprKind::Call {
                        callee: Box::new(e),
                        type_args: Vec::new(),
                        args,
                    },
                    span,
                };
            } else if self.at("<") && self.generic_call_ahead(&e) {
                self.bump();
                let type_args = self.comma_list(|p| p.type_ref())?;
                self.expect(">")?;
                let args = self.arguments()?;
                let span = e.span.to(self.prev_span());
                e = Expr {
                    kind: ExprKind::Call {
                        callee: Box::new(e),
                        type_args,
                        args,
                    },
                    span,
                };
            } else {
                return Ok(e);
            }
        }
    }

    /// `f<T>(...)` against `a < b`: a trial parse of type arguments followed by `(`.
    fn generic_call_ahead(&mut self, callee: &Expr) -> bool {
        if !matches!(callee.kind, ExprKind::Path(_) | ExprKind::Member(..)) {
            return false;
        }
        let save = self.pos;
        self.bump();
        let typeish = self.at_type_start() || self.at_kw("_");
        let ok = typeish
            && self.speculate(|p| {
                p.comma_list(|p| p.type_ref())?;
                p.expect(">")?;
                if p.at("(") {
                    Ok(())
                } else {
                    Err(())
                }
            });
        self.pos = save;
        ok
    }

    fn arguments(&mut self) -> PResult<Vec<Argument>> {
        self.expect("(")?;
        if self.eat(")") {
            return Ok(Vec::new());
        }
        let args = self.comma_list(|p| {
            let name = if p.is_name_at(0) && p.peek_at(1).is_punct("=") {
                let n = p.name()?;
                p.bump();
                Some(n)
            } else {
                None
            };
            let value = if p.at_kw("_") {
                Expr {
                    kind: ExprKind::DontCare,
                    span: p.bump().span,
                }
            } else {
                p.expr()?
            };
            Ok(Argument { name, value })
        })?;
        self.expect(")")?;
        Ok(args)
    }

    fn primary(&mut self) -> PResult<Expr> {
        let t = self.peek().clone();
        let kind = match &t.tok {
            Tok::Int(value, width, radix) => {
                self.bump();
                ExprKind::Int {
                    value: value.clone(),
                    width: *width,
                    radix: *radix,
                }
            }
            Tok::Str(s) => {
                self.bump();
                ExprKind::Str(s.clone())
            }
            Tok::Ident(w) if w == "true" || w == "false" => {
                self.bump();
                ExprKind::Bool(w == "true")
            }
            Tok::Ident(w) if w == "_" => {
                self.bump();
                ExprKind::DontCare
            }
            Tok::Ident(w) if w == "default" => {
                self.bump();
                ExprKind::Default
            }
            Tok::Ident(w) if TYPE_KEYWORDS.contains(&w.as_str()) => {
                ExprKind::TypeExpr(self.type_ref()?)
            }
            Tok::Ident(_) if self.is_name_at(0) => ExprKind::Path(Path {
                global: false,
                name: self.name()?,
            }),
            Tok::Punct(".") => {
                self.bump();
                ExprKind::Path(Path {
                    global: true,
                    name: self.name()?,
                })
            }
            Tok::Punct("(") => {
                self.bump();
                let e = self.expr()?;
                self.expect(")")?;
                return Ok(Expr {
                    kind: e.kind,
                    span: t.span.to(self.prev_span()),
                });
            }
            Tok::Punct("{") => {
                self.bump();
                let kind = if self.is_name_at(0) && self.peek_at(1).is_punct("=") {
                    let fields = self.comma_list(|p| {
                        let n = p.name()?;
                        p.expect("=")?;
                        Ok((n, p.expr()?))
                    })?;
                    ExprKind::StructInit(fields)
                } else if self.at("}") {
                    ExprKind::List(Vec::new())
                } else {
                    ExprKind::List(self.comma_list(|p| p.expr())?)
                };
                self.eat(",");
                self.expect("}")?;
                kind
            }
            _ => return self.expected("an expression"),
        };
        Ok(Expr {
            kind,
            span: t.span.to(self.prev_span()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(src: &str) -> (Program, Diagnostics) {
        let map = SourceMap::new("t.p4", src.to_string());
        let mut d = Diagnostics::default();
        let p = parse(&map, &mut d);
        (p, d)
    }

    /// Fully parenthesised form of an expression, to check precedence and disambiguation.
    fn show(e: &Expr) -> String {
        match &e.kind {
            ExprKind::Int { value, .. } => value.to_string(),
            ExprKind::Bool(b) => b.to_string(),
            ExprKind::Path(p) => p.name.name.clone(),
            ExprKind::Member(b, m) => format!("{}.{}", show(b), m.name),
            ExprKind::Binary(op, a, b) => format!("({} {} {})", show(a), op.symbol(), show(b)),
            ExprKind::Unary(op, a) => format!("({op:?} {})", show(a)),
            ExprKind::Cast(t, a) => format!("(cast {:?} {})", t.kind, show(a)).replace('\n', ""),
            ExprKind::Call {
                callee,
                type_args,
                args,
            } => format!(
                "{}<{}>({})",
                show(callee),
                type_args.len(),
                args.iter()
                    .map(|a| show(&a.value))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            ExprKind::Slice(a, h, l) => format!("{}[{}:{}]", show(a), show(h), show(l)),
            ExprKind::Index(a, i) => format!("{}[{}]", show(a), show(i)),
            ExprKind::Ternary(c, t, f) => format!("({} ? {} : {})", show(c), show(t), show(f)),
            other => format!("{other:?}"),
        }
    }

    fn const_value(src: &str) -> String {
        let (p, d) = program(src);
        assert!(!d.has_errors(), "{:?}", d.items());
        match &p.decls.last().unwrap().kind {
            DeclKind::Const(c) => show(&c.value),
            other => panic!("{other:?}"),
        }
    }

    /// The statements of the program's last declaration, an action, as `l = r`.
    fn action_assignments(src: &str) -> Vec<String> {
        let (p, d) = program(src);
        assert!(!d.has_errors(), "{:?}", d.items());
        let DeclKind::Action(a) = &p.decls.last().unwrap().kind else {
            panic!("not an action");
        };
        a.body
            .stmts
            .iter()
            .map(|s| match &s.kind {
                StmtKind::Assign(l, r) => format!("{} = {}", show(l), show(r)),
                other => format!("{other:?}"),
            })
            .collect()
    }

    /// The program's last declaration, an action, with its only statement a `for`.
    fn action_loop(src: &str) -> ForStmt {
        let (p, d) = program(src);
        assert!(!d.has_errors(), "{:?}", d.items());
        let DeclKind::Action(a) = &p.decls.last().unwrap().kind else {
            panic!("not an action");
        };
        let found = a.body.stmts.iter().find_map(|s| match &s.kind {
            StmtKind::For(f) => Some((**f).clone()),
            StmtKind::Block(b) => b.stmts.iter().find_map(|s| match &s.kind {
                StmtKind::For(f) => Some((**f).clone()),
                _ => None,
            }),
            _ => None,
        });
        found.unwrap_or_else(|| panic!("no loop in {:?}", a.body))
    }

    fn clauses(stmts: &[Stmt]) -> Vec<String> {
        stmts
            .iter()
            .map(|s| match &s.kind {
                StmtKind::Assign(l, r) => format!("{} = {}", show(l), show(r)),
                StmtKind::Var(v) => format!("{} = {}", v.name.name, show(v.init.as_ref().unwrap())),
                StmtKind::Call(e) => show(e),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn three_clause_for_keeps_every_clause() {
        let f = action_loop(
            "action a() { for (bit<8> v = 0, bit<16> x = 1; v < n; v = v + 1, x = x << 1) \
             { if (v == 2) { continue; } if (v == 5) { break; } } }",
        );
        assert_eq!(clauses(&f.init), ["v = 0", "x = 1"]);
        assert_eq!(show(f.cond.as_ref().unwrap()), "(v < n)");
        assert_eq!(clauses(&f.update), ["v = (v + 1)", "x = (x << 1)"]);
        let StmtKind::Block(b) = &f.body.kind else {
            panic!("{:?}", f.body);
        };
        let kinds: Vec<_> = b
            .stmts
            .iter()
            .map(|s| match &s.kind {
                StmtKind::If(_, t, _) => match &t.kind {
                    StmtKind::Block(b) => format!("{:?}", b.stmts[0].kind),
                    k => format!("{k:?}"),
                },
                k => format!("{k:?}"),
            })
            .collect();
        assert_eq!(kinds, ["Continue", "Break"]);
        // Every part may be empty; `j -= 1` is an update too.
        let f = action_loop("action a() { for (;;) { } for (; i < 20;) { } }");
        assert!(f.init.is_empty() && f.cond.is_none() && f.update.is_empty());
        let f = action_loop("action a() { for (bit<32> j = 10; j != 0; j -= 1) { } }");
        assert_eq!(clauses(&f.update), ["j = (j - 1)"]);
    }

    #[test]
    fn for_in_a_range_counts_up_to_the_last_value_included() {
        // `hi` once, then a flag that is false after the pass with x == hi, so a range that
        // ends at the type's largest value ends too.
        let (p, d) = program("action a() { for (bit<8> i in 8w1 .. 42) { f(i); } }");
        assert!(!d.has_errors(), "{:?}", d.items());
        let DeclKind::Action(a) = &p.decls[0].kind else {
            panic!("not an action");
        };
        let StmtKind::Block(b) = &a.body.stmts[0].kind else {
            panic!("{:?}", a.body.stmts[0]);
        };
        assert_eq!(clauses(&b.stmts[..2]), ["i = 1", "__for_last_13 = 42"]);
        let StmtKind::For(f) = &b.stmts[2].kind else {
            panic!("{:?}", b.stmts[2]);
        };
        assert_eq!(clauses(&f.init), ["__for_go_13 = (i <= __for_last_13)"]);
        assert_eq!(show(f.cond.as_ref().unwrap()), "__for_go_13");
        assert_eq!(
            clauses(&f.update),
            ["__for_go_13 = (i != __for_last_13)", "i = (i + 1)"]
        );
    }

    #[test]
    fn for_in_a_stack_indexes_each_element() {
        let f = action_loop("action a() { for (t2 v in hdrs.stack) { f(v); } }");
        assert_eq!(clauses(&f.init), ["__for_index_13 = 0"]);
        assert_eq!(
            show(f.cond.as_ref().unwrap()),
            "(__for_index_13 < hdrs.stack.size)"
        );
        let StmtKind::Block(b) = &f.body.kind else {
            panic!("{:?}", f.body);
        };
        assert_eq!(clauses(&b.stmts[..1]), ["v = hdrs.stack[__for_index_13]"]);
    }

    #[test]
    fn compound_assignment_is_an_assignment_of_the_operation() {
        let src = "action a() { x += y * 2; x -= 1; x *= 3; x /= 4; x %= 8; x &= m; x |= m; \
                   x ^= m; x <<= 1; x >>= 2; x |+|= 9; x |-|= 9; x = x >= 2; x = x >> 1; }";
        assert_eq!(
            action_assignments(src),
            [
                "x = (x + (y * 2))",
                "x = (x - 1)",
                "x = (x * 3)",
                "x = (x / 4)",
                "x = (x % 8)",
                "x = (x & m)",
                "x = (x | m)",
                "x = (x ^ m)",
                "x = (x << 1)",
                "x = (x >> 2)",
                "x = (x |+| 9)",
                "x = (x |-| 9)",
                "x = (x >= 2)",
                "x = (x >> 1)",
            ]
        );
        // An index that calls something is computed once, into a local, before the assignment.
        let (p, d) = program("action a() { h[f()].x += 1; }");
        assert!(!d.has_errors(), "{:?}", d.items());
        let DeclKind::Action(a) = &p.decls[0].kind else {
            panic!("not an action");
        };
        let StmtKind::Block(b) = &a.body.stmts[0].kind else {
            panic!("{:?}", a.body.stmts[0]);
        };
        let [Stmt {
            kind: StmtKind::Var(v),
            ..
        }, Stmt {
            kind: StmtKind::Assign(l, r),
            ..
        }] = b.stmts.as_slice()
        else {
            panic!("{b:?}");
        };
        let i = &v.name.name;
        assert!(
            matches!(&v.init.as_ref().unwrap().kind,
                ExprKind::Cast(t, e) if matches!(t.kind, TypeKind::Bit(_))
                    && matches!(e.kind, ExprKind::Call { .. })),
            "{v:?}"
        );
        assert_eq!(show(l), format!("h[{i}].x"));
        assert_eq!(show(r), format!("(h[{i}].x + 1)"));
        // Any other call in the location would run twice: refused, saying where.
        let (_, d) = program("action a() { f().x += 1; }");
        let items = format!("{:?}", d.items());
        assert!(
            items.contains("compound assignment to a location that calls"),
            "{items}"
        );
    }

    #[test]
    fn precedence_follows_p4c() {
        assert_eq!(
            const_value("const bit<8> x = 1 + 2 * 3 & 4 == 5 || a && b;"),
            "((((1 + (2 * 3)) & 4) == 5) || (a && b))"
        );
        assert_eq!(
            const_value("const bit<8> x = a >> 2 << 1 ++ b;"),
            "((a >> 2) << (1 ++ b))"
        );
        assert_eq!(
            const_value("const bit<8> x = c ? 1 : d ? 2 : 3;"),
            "(c ? 1 : (d ? 2 : 3))"
        );
        assert_eq!(const_value("const bit<8> x = -a[7:4];"), "(Neg a[7:4])");
    }

    #[test]
    fn casts_generic_calls_and_comparisons_are_told_apart() {
        let src = "typedef bit<8> T; const bool x = (T)(a) < b; const bit<8> y = (a) + f<T>(b);";
        let (p, d) = program(src);
        assert!(!d.has_errors(), "{:?}", d.items());
        let vals: Vec<String> = p
            .decls
            .iter()
            .filter_map(|d| match &d.kind {
                DeclKind::Const(c) => Some(show(&c.value)),
                _ => None,
            })
            .collect();
        assert!(vals[0].starts_with("((cast Name"), "{}", vals[0]);
        assert!(vals[0].ends_with("< b)"), "{}", vals[0]);
        assert_eq!(vals[1], "(a + f<1>(b))");
        assert_eq!(
            const_value("const bool z = a < b && c > d;"),
            "((a < b) && (c > d))"
        );
    }

    #[test]
    fn type_names_start_declarations_other_names_start_statements() {
        let src = "header h_t { bit<8> f; }
            control C() { apply { h_t h; f(h); x = 1; unknown_t u; h.f = 2; } }";
        let (p, d) = program(src);
        assert!(!d.has_errors(), "{:?}", d.items());
        let DeclKind::Control(c) = &p.decls[1].kind else {
            panic!()
        };
        let kinds: Vec<&str> = c
            .apply
            .stmts
            .iter()
            .map(|s| match s.kind {
                StmtKind::Var(_) => "var",
                StmtKind::Call(_) => "call",
                StmtKind::Assign(..) => "assign",
                _ => "other",
            })
            .collect();
        assert_eq!(kinds, vec!["var", "call", "assign", "var", "assign"]);
    }

    #[test]
    fn independent_errors_are_all_reported() {
        let src = "control C() {
            action a() { x = ; y = 1 }
            apply { if (x { } z = 3 $; }
        }
        const bit<8> ok = 1;
        struct { }";
        let (p, d) = program(src);
        let msgs: Vec<&str> = d.items().iter().map(|x| x.message.as_str()).collect();
        assert_eq!(d.error_count(), 5, "{msgs:?}");
        assert!(p
            .decls
            .iter()
            .any(|x| x.name().is_some_and(|n| n.name == "ok")));
    }

    #[test]
    fn table_properties_and_entries() {
        let src = "control C() {
            table t {
                key = { a : exact @name(\"k\"); }
                actions = { @defaultonly NoAction; b(1); }
                const entries = { priority = 2 : (1, _) : b(3); 4 &&& 5 : NoAction(); }
                size = 10;
                const default_action = NoAction;
            }
            apply { }
        }";
        let (p, d) = program(src);
        assert!(!d.has_errors(), "{:?}", d.items());
        let DeclKind::Control(c) = &p.decls[0].kind else {
            panic!()
        };
        let DeclKind::Table(t) = &c.locals[0].kind else {
            panic!()
        };
        let names: Vec<&str> = t.props.iter().map(|p| p.name.name.as_str()).collect();
        assert_eq!(
            names,
            vec!["key", "actions", "entries", "size", "default_action"]
        );
        let TablePropKind::Entries(es) = &t.props[2].kind else {
            panic!()
        };
        assert!(es[0].priority.is_some() && t.props[2].is_const);
        assert!(matches!(es[0].keyset.kind, ExprKind::Tuple(ref v) if v.len() == 2));
        let TablePropKind::Key(k) = &t.props[0].kind else {
            panic!()
        };
        assert_eq!(
            find_annotation(&k[0].annotations, "name")
                .unwrap()
                .string_arg(),
            Some("k")
        );
    }
}
