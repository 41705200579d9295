//! The last pass: the JSON's shapes where bmv2's loader accepts only p4c's
//! (behavioral-model docs/JSON_format.md; what real p4c writes in tests/p4c-corpus/real-p4c/).
//! Our switch reads both forms; real bmv2 refuses ours at load:
//! - a primitive's expression parameter (and a parser `set` source, an `extract_VL` length) is a
//!   type-value object around the expression, `{"type": "expression", "value": {"type":
//!   "expression", "value": {"op": ...}}}`: bmv2 builds the parameter from the inner object,
//!   so a bare `{"op": ...}` there is "Invalid 'type' in expression". A header-valued
//!   `dereference_*` stays bare, as p4c writes it; a `set` from a `stack_field` is wrapped too;
//! - action data inside an expression is `local` (`runtime_data` only as a whole parameter);
//! - a metadata header type is a whole number of bytes (bmv2 asserts it): p4c appends a
//!   `_padding` field;
//! - `lookahead` is not an expression operand: it is set into a scalar first, as p4c does.

use p4_bmv2_json as j;
use p4_bmv2_json::{Expr, FieldDecl, FieldRef, FieldWidth, ParserOpKind, ParserParam, Tv};

pub(crate) fn conform(p: &mut j::Program) {
    hoist_lookaheads(p);
    for a in &mut p.actions {
        for prim in &mut a.primitives {
            for t in &mut prim.parameters {
                locals(t, false);
                wrap_expression(t);
            }
        }
    }
    for state in p.parsers.iter_mut().flat_map(|p| &mut p.parse_states) {
        for op in &mut state.parser_ops {
            match (op.op, op.parameters.get_mut(1)) {
                // bmv2 sets from a field, hexstr, lookahead or expression only.
                (ParserOpKind::Set, Some(ParserParam::Tv(t @ Tv::StackField(..)))) => wrap(t),
                (ParserOpKind::Set, Some(ParserParam::Tv(t))) => wrap_expression(t),
                (ParserOpKind::ExtractVl, Some(ParserParam::Tv(t))) => wrap(t),
                (ParserOpKind::Primitive, _) => {
                    for pp in &mut op.parameters {
                        if let ParserParam::Primitive(prim) = pp {
                            prim.parameters.iter_mut().for_each(wrap_expression);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    pad_metadata(p);
}

fn wrap(t: &mut Tv) {
    if !matches!(t, Tv::Expression(e) if matches!(**e, Expr::Tv(_))) {
        let inner = std::mem::replace(t, Tv::Int(0));
        *t = Tv::Expression(Box::new(Expr::Tv(inner)));
    }
}

/// Wraps a bare operation; other type-value objects stay as they are.
fn wrap_expression(t: &mut Tv) {
    if let Tv::Expression(e) = t {
        if let Expr::Op(o) = e.as_ref() {
            if !o.op.starts_with("dereference_") {
                wrap(t);
            }
        }
    }
}

fn locals(t: &mut Tv, in_expression: bool) {
    match t {
        Tv::RuntimeData(i) if in_expression => *t = Tv::Local(*i),
        Tv::Expression(e) => match e.as_mut() {
            Expr::Op(o) => {
                for x in [&mut o.left, &mut o.right, &mut o.cond]
                    .into_iter()
                    .flatten()
                {
                    locals(x, true);
                }
            }
            Expr::Tv(x) => locals(x, in_expression),
        },
        _ => {}
    }
}

/// Replaces each `lookahead` below `t` (itself included unless `top_ok`) with what `scalar`
/// returns for it.
fn lookaheads(t: &mut Tv, top_ok: bool, scalar: &mut impl FnMut(i64, u32) -> Tv) {
    match t {
        Tv::Lookahead { offset, bitwidth } if !top_ok => *t = scalar(*offset, *bitwidth),
        Tv::Expression(e) => match e.as_mut() {
            Expr::Op(o) => {
                for x in [&mut o.left, &mut o.right, &mut o.cond]
                    .into_iter()
                    .flatten()
                {
                    lookaheads(x, false, scalar);
                }
            }
            Expr::Tv(x) => lookaheads(x, false, scalar),
        },
        _ => {}
    }
}

/// Each `lookahead` other than a `set` source becomes a scalar field set from it just before
/// the op that reads it (no extract in between, so it peeks at the same bits).
fn hoist_lookaheads(p: &mut j::Program) {
    let Some(scalars) = p.headers.iter().find(|h| h.metadata && h.name == "scalars") else {
        return;
    };
    let (header, ty_name) = (scalars.name.clone(), scalars.header_type.clone());
    let Some(ty) = p.header_types.iter_mut().find(|t| t.name == ty_name) else {
        return;
    };
    for state in p.parsers.iter_mut().flat_map(|p| &mut p.parse_states) {
        let mut ops = Vec::with_capacity(state.parser_ops.len());
        for mut op in std::mem::take(&mut state.parser_ops) {
            let mut sets = Vec::new();
            let mut scalar = |offset: i64, bitwidth: u32| {
                let name = unique(&ty.fields, "lookahead_tmp");
                ty.fields.push(FieldDecl {
                    name: name.clone(),
                    width: FieldWidth::Bits(bitwidth),
                    signed: false,
                });
                let field = Tv::Field(FieldRef(header.clone(), name));
                sets.push(j::ParserOp {
                    op: ParserOpKind::Set,
                    parameters: vec![
                        ParserParam::Tv(field.clone()),
                        ParserParam::Tv(Tv::Lookahead { offset, bitwidth }),
                    ],
                });
                field
            };
            let is_set = op.op == ParserOpKind::Set;
            for (i, pp) in op.parameters.iter_mut().enumerate() {
                match pp {
                    ParserParam::Tv(t) => lookaheads(t, is_set && i == 1, &mut scalar),
                    ParserParam::Primitive(prim) => {
                        for t in &mut prim.parameters {
                            lookaheads(t, false, &mut scalar);
                        }
                    }
                }
            }
            ops.append(&mut sets);
            ops.push(op);
        }
        state.parser_ops = ops;
    }
}

/// `base`, or `base_N` if the type has a field of that name.
fn unique(fields: &[FieldDecl], base: &str) -> String {
    let taken = |n: &str| fields.iter().any(|f| f.name == n);
    if !taken(base) {
        return base.to_string();
    }
    (0..)
        .map(|i| format!("{base}_{i}"))
        .find(|n| !taken(n))
        .unwrap_or_default()
}

/// Pads every header type that only metadata instances use to a whole number of bytes; a
/// packet header's width is the program's (bmv2 refuses one that is not whole bytes).
fn pad_metadata(p: &mut j::Program) {
    for ty in &mut p.header_types {
        let packet = p
            .headers
            .iter()
            .any(|h| h.header_type == ty.name && !h.metadata);
        let bits: Option<u32> = ty
            .fields
            .iter()
            .map(|f| match f.width {
                FieldWidth::Bits(b) => Some(b),
                FieldWidth::Variable => None,
            })
            .sum();
        match bits {
            Some(bits) if !packet && bits % 8 != 0 => {
                let name = unique(&ty.fields, "_padding");
                ty.fields.push(FieldDecl {
                    name,
                    width: FieldWidth::Bits(8 - bits % 8),
                    signed: false,
                });
            }
            _ => {}
        }
    }
}
