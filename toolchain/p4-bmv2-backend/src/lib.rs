//! Lowering of a checked v1model program (`p4_sema::ir`) to BMv2 JSON (`p4_bmv2_json`), as
//! p4c's `p4c-bm2-ss` does, and to the control-plane model that `p4-p4info` turns into P4Info.
//!
//! The passes, in the order [`compile`] runs them (each in its own module):
//! 1. `layout`: the V1Switch package's parameters become header instances (`hdr.ipv4` →
//!    `ipv4`), the `scalars` metadata header (`meta.x` → `scalars.userMetadata.x`, locals) and
//!    `standard_metadata`; every P4 l-value maps to a [`layout::Place`].
//! 2. `parser`: parser states to parse states (`p4-midend` inlined sub-parsers); `extract`, `lookahead`, `advance`, `verify`,
//!    assignments; select keysets to value/mask transitions (ranges expanded into masks as
//!    p4c's `ReplaceSelectRange` does), value sets.
//! 3. `control`: each control's apply block to a graph of tables and conditionals; straight-
//!    line code between them becomes hidden one-action tables (p4c's `tbl_act`), `hit`/`miss`
//!    and `switch (t.apply().action_run)` become `next_tables`, `return` jumps to the
//!    control's continuation, `exit` ends it (`p4-midend` inlined sub-controls).
//! 4. `body`: statements to primitives (`p4-midend` inlined the calls of actions and
//!    functions and lowered `return`), `if` inside actions as `_jump_if_zero`, v1model externs
//!    as bmv2 primitives.
//! 5. `expr`: expressions to bmv2 expression trees with p4c's wrapping (`& mask` after `bit<W>`
//!    arithmetic, `two_comp_mod` for `int<W>`), `b2d`/`d2b` between bool and bits.
//! 6. `checksum` and `deparser`: verify/compute controls to `checksums` and `calculations`,
//!    the deparser's `emit` calls to its header order.
//! 7. `p4info`: the control-plane model with p4c's names (`MyIngress.ipv4_lpm`, `@name`).
//! 8. `shape`: p4c's JSON shapes where real bmv2's loader requires them (wrapped expression
//!    parameters, `local` action data in expressions, padded metadata, no `lookahead` operands).
//!
//!
//! Below them, `prims` collects one body's primitives (jumps and their labels) and `num` makes
//! numbers into BMv2 values; no module imports one that
//! imports it back (`body` calls into `expr` for values, `expr` reaches calls through `Ctx`).
//!
//! Anything outside this subset is an `unsupported` error at its source location.

mod body;
mod checksum;
mod control;
mod expr;
mod layout;
mod num;
mod p4info;
mod parser;
mod prims;
mod shape;

use p4_bmv2_json as j;
use p4_sema::ir::{self, DeclId, DeclKind, ExprKind, Type, TypeDeclKind};
use p4_syntax::{Diagnostics, SourceMap, Span};
use std::collections::HashMap;

/// What a successful compilation produces.
pub struct Output {
    pub json: j::Program,
    pub control_plane: p4_p4info::ControlPlane,
}

/// A program the lowering refused (its errors are in the diagnostics). `control_plane` is the
/// whole control-plane model when only statements and blocks were refused, as p4c-bm2-ss
/// still writes P4Info for a program its backend refuses; `None` when lowering stopped early.
pub struct Refused {
    pub control_plane: Option<Box<p4_p4info::ControlPlane>>,
}

/// A construct the backend cannot lower; reported as `unsupported: WHAT` at the span.
#[derive(Debug, Clone)]
pub(crate) struct Unsupported {
    pub span: Span,
    pub what: String,
}

pub(crate) type R<T> = Result<T, Unsupported>;

pub(crate) fn unsupported<T>(span: Span, what: impl Into<String>) -> R<T> {
    Err(Unsupported {
        span,
        what: what.into(),
    })
}

/// The six blocks of `V1Switch`, in parameter order.
const V1SWITCH_BLOCKS: usize = 6;

/// Compiles a checked program read from `map` (which names hidden actions after their source
/// lines); every problem goes to `diags`.
pub fn compile(
    p: &ir::Program,
    map: &SourceMap,
    diags: &mut Diagnostics,
) -> Result<Output, Refused> {
    let mut cx = Ctx::new(p, map);
    let finished = match cx.run() {
        Ok(()) => true,
        Err(u) => {
            cx.errors.push(u);
            false
        }
    };
    for u in &cx.errors {
        diags.unsupported(u.span, &u.what);
    }
    if !cx.errors.is_empty() {
        return Err(Refused {
            control_plane: (finished && cx.cp_whole).then(|| Box::new(cx.cp.take_model())),
        });
    }
    let control_plane = cx.cp.take_model();
    shape::conform(&mut cx.json);
    Ok(Output {
        json: cx.json,
        control_plane,
    })
}

/// How a name in the P4 program is bound while lowering.
#[derive(Clone, Debug)]
pub(crate) enum Bind {
    Place(layout::Place),
    /// A value: action data (`runtime_data`), a constructor argument, a constant.
    Value(j::Tv),
    /// `packet_in` / `packet_out` parameters.
    Packet,
    /// An extern, table, control or parser instance, by its full control-plane name.
    Named(String),
}

/// The parser or control being lowered: what its names are bound to.
#[derive(Clone, Debug, Default)]
pub(crate) struct Frame {
    pub env: HashMap<DeclId, Bind>,
}

pub(crate) struct Ctx<'p> {
    pub p: &'p ir::Program,
    pub map: &'p SourceMap,
    pub json: j::Program,
    pub cp: p4info::Collector,
    pub errors: Vec<Unsupported>,
    pub lay: layout::Layout,
    pub frame: Frame,
    /// Emitted actions by control-plane name and declaration.
    pub action_keys: HashMap<String, (String, i64)>,
    pub names: HashMap<String, u32>,
    /// Field lists for `@field_list(N)` indices, by N.
    pub field_lists: HashMap<u64, i64>,
    /// Learn lists by the digest's data type name.
    pub learn_lists: HashMap<String, i64>,
    /// The list types of digests, in order: the N of their names (`tuple_N`, `digest_N`).
    pub tuple_digests: Vec<String>,
    /// `direct_meter.read(out r)` destinations, by meter name.
    pub meter_targets: HashMap<String, j::FieldRef>,
    /// The pipeline being built.
    pub pipe: j::Pipeline,
    /// The standard_metadata parameter's type.
    pub std_meta: Option<ir::TypeId>,
    /// Subexpressions (by address in the program) already computed into a place: operands
    /// that apply a table, evaluated by graph nodes before the rest of their expression.
    pub hoisted: HashMap<*const ir::Expr, layout::Place>,
    /// The parser's state that raises error.NoMatch, once a select without `default` needs it.
    pub no_match_state: Option<String>,
    /// Whether the control-plane model is whole: no block that holds control-plane objects
    /// (parser, ingress, egress) was left unfinished by a refusal.
    pub cp_whole: bool,
}

impl<'p> Ctx<'p> {
    fn new(p: &'p ir::Program, map: &'p SourceMap) -> Self {
        Ctx {
            p,
            map,
            json: j::Program::default(),
            cp: p4info::Collector::default(),
            errors: Vec::new(),
            lay: layout::Layout::default(),
            frame: Frame::default(),
            action_keys: HashMap::new(),
            names: HashMap::new(),
            field_lists: HashMap::new(),
            learn_lists: HashMap::new(),
            tuple_digests: Vec::new(),
            meter_targets: HashMap::new(),
            pipe: j::Pipeline::default(),
            std_meta: None,
            hoisted: HashMap::new(),
            no_match_state: None,
            cp_whole: true,
        }
    }

    /// A name unique among those made with the same base: `base`, `base_0`, `base_1`, ...
    pub fn fresh(&mut self, base: &str) -> String {
        let n = self.names.entry(base.to_string()).or_insert(0);
        let name = if *n == 0 {
            base.to_string()
        } else {
            format!("{base}_{}", *n - 1)
        };
        *n += 1;
        name
    }

    /// Runs the passes over `main`'s six blocks.
    fn run(&mut self) -> R<()> {
        let p = self.p;
        let Some(main) = p.main else {
            return unsupported(
                Span::default(),
                "a program without a `main` package instance",
            );
        };
        let main_decl = p.decl(main);
        let DeclKind::Instance { args, .. } = &main_decl.kind else {
            return unsupported(main_decl.span, "`main` is not a package instance");
        };
        let pkg_name = match &main_decl.kind {
            DeclKind::Instance {
                ty: Type::Package(id, _),
                ..
            } => p.ty(*id).name.clone(),
            _ => String::new(),
        };
        if pkg_name != "V1Switch" || args.len() != V1SWITCH_BLOCKS {
            return unsupported(
                main_decl.span,
                format!("package `{pkg_name}` (only v1model's V1Switch)"),
            );
        }
        let mut blocks = Vec::new();
        let mut binds = Vec::new();
        for a in args {
            let Some(a) = a else {
                return unsupported(main_decl.span, "an omitted V1Switch argument");
            };
            let block = self.block_of(a)?;
            binds.push(self.top_binds(a, block)?);
            blocks.push(block);
        }
        self.cp.begin(p, main);
        self.layout_roots(&blocks)?;
        self.json.errors = p
            .errors
            .iter()
            .enumerate()
            .map(|(i, e)| (e.clone(), i as i64))
            .collect();
        // Parser, verify checksum, ingress, egress, compute checksum, deparser. A block the
        // lowering refuses is reported and the others are still lowered, so that every
        // refusal is reported and the control-plane model is whole.
        for (i, block) in blocks.iter().enumerate() {
            self.enter_block(*block, &binds[i])?;
            let lowered = match i {
                0 => self.lower_parser(*block),
                1 | 4 => self.lower_checksums(*block, i == 1),
                2 => self.lower_pipeline(*block, "ingress"),
                3 => self.lower_pipeline(*block, "egress"),
                _ => self.lower_deparser(*block),
            };
            if let Err(u) = lowered {
                self.errors.push(u);
                // The checksum controls and the deparser hold no control-plane object.
                self.cp_whole &= matches!(i, 1 | 4 | 5);
            }
        }
        self.finish_layout();
        self.finish_meters();
        self.json.program = None;
        self.json.meta = Some(j::Meta {
            version: vec![2, 23],
            compiler: Some("lossless-lab p4-compile".into()),
        });
        p4info::finish(self)?;
        Ok(())
    }

    /// The parser/control declaration a V1Switch argument instantiates.
    fn block_of(&self, e: &ir::Expr) -> R<DeclId> {
        let ty = match &e.kind {
            ExprKind::Call(c) => match &c.target {
                ir::CallTarget::Construct(t) => t.clone(),
                _ => e.ty.clone(),
            },
            ExprKind::Ref(d) => match &self.p.decl(*d).kind {
                DeclKind::Instance { ty, .. } => ty.clone(),
                _ => e.ty.clone(),
            },
            _ => e.ty.clone(),
        };
        if let Type::Parser(id, _) | Type::Control(id, _) = ty {
            if let TypeDeclKind::Block {
                implementation: Some(d),
                ..
            } = &self.p.ty(id).kind
            {
                return Ok(*d);
            }
        }
        unsupported(
            e.span,
            "a V1Switch argument that is not a parser or control instance",
        )
    }

    /// The control-plane name of a declaration inside the current frame: `@name("x")` →
    /// `prefix.x`, `@name(".x")` → `x`, else `prefix.name`.
    pub fn cp_name(&self, prefix: &str, d: DeclId) -> String {
        let decl = self.p.decl(d);
        let base = match p4_syntax::ast::find_annotation(&decl.annotations, "name")
            .and_then(|a| a.string_arg())
        {
            Some(n) if n.starts_with('.') => return n[1..].to_string(),
            Some(n) => n.to_string(),
            None => decl.name.clone(),
        };
        if prefix.is_empty() {
            base
        } else {
            format!("{prefix}.{base}")
        }
    }

    /// Bindings of a parser or control instance's constructor parameters to its arguments,
    /// evaluated in the current frame: compile-time constants, or instances passed by name.
    fn ctor_binds(&mut self, inst: DeclId, block: DeclId) -> R<Vec<(DeclId, Bind)>> {
        match &self.p.decl(inst).kind {
            DeclKind::Instance { args, .. } => self.bind_ctor_args(block, args),
            _ => Ok(Vec::new()),
        }
    }

    /// Bindings of the constructor parameters of a V1Switch argument: `P(false)` binds them
    /// like an instance declaration does.
    fn top_binds(&mut self, a: &ir::Expr, block: DeclId) -> R<Vec<(DeclId, Bind)>> {
        match &a.kind {
            ExprKind::Call(c) if matches!(c.target, ir::CallTarget::Construct(_)) => {
                self.bind_ctor_args(block, &c.args)
            }
            ExprKind::Ref(d) => self.ctor_binds(*d, block),
            _ => Ok(Vec::new()),
        }
    }

    /// `block`'s constructor parameters bound to `args`, evaluated in the current frame.
    fn bind_ctor_args(
        &mut self,
        block: DeclId,
        args: &[Option<ir::Expr>],
    ) -> R<Vec<(DeclId, Bind)>> {
        let (DeclKind::Parser { ctor_params, .. } | DeclKind::Control { ctor_params, .. }) =
            &self.p.decl(block).kind
        else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for (prm, a) in ctor_params.iter().zip(args) {
            let Some(a) = a else { continue };
            let bind = match &a.kind {
                ExprKind::Const(v) => Bind::Value(expr::value_tv(v, a.span)?),
                ExprKind::Ref(d) => match self.frame.env.get(d) {
                    Some(b @ (Bind::Named(_) | Bind::Value(_))) => b.clone(),
                    _ => return unsupported(a.span, "this constructor argument"),
                },
                _ => return unsupported(a.span, "this constructor argument"),
            };
            out.push((prm.decl, bind));
        }
        Ok(out)
    }

    /// Starts lowering a parser or control: binds its parameters to the layout's roots and its
    /// local instances, tables and actions to their names under the block's name; `bound`:
    /// its constructor parameters, bound by the V1Switch argument that instantiates it.
    fn enter_block(&mut self, d: DeclId, bound: &[(DeclId, Bind)]) -> R<()> {
        let decl = self.p.decl(d);
        let (params, locals) = match &decl.kind {
            DeclKind::Parser { params, locals, .. } | DeclKind::Control { params, locals, .. } => {
                (params, locals)
            }
            _ => return unsupported(decl.span, "not a parser or control"),
        };
        // A package argument is named after its type; p4c ignores a `@name` on the type.
        let prefix = decl.name.clone();
        self.frame = Frame::default();
        for (id, b) in bound {
            self.frame.env.insert(*id, b.clone());
        }
        for prm in params {
            let b = self.root_binding(&prm.ty, prm.decl)?;
            self.frame.env.insert(prm.decl, b);
        }
        for &l in locals {
            let name = self.cp_name(&prefix, l);
            match &self.p.decl(l).kind {
                DeclKind::Var { .. } => {
                    let pl = self.local_place(l)?;
                    self.frame.env.insert(l, Bind::Place(pl));
                }
                DeclKind::Instance { .. }
                | DeclKind::Table(_)
                | DeclKind::Action { .. }
                | DeclKind::ValueSet { .. } => {
                    self.frame.env.insert(l, Bind::Named(name));
                }
                _ => {}
            }
        }
        Ok(())
    }
}
