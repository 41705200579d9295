//! The parser: states to BMv2 parse states, select keysets to value/mask transitions.
//!
//! Ranges in keysets are expanded into value/mask pairs (p4c's `ReplaceSelectRange`), `_` and
//! `default` mask their part out, value sets become `parse_vset` transitions. Each key part
//! occupies whole bytes of the transition value, as bmv2 concatenates them.

use crate::body::{const_int, Body};
use crate::expr::{hex, mask, unsigned};
use crate::{unsupported, Bind, Ctx, R};
use num_bigint::BigInt;
use num_traits::{One, Zero};
use p4_bmv2_json as j;
use p4_bmv2_json::Tv;
use p4_sema::ir::{DeclId, DeclKind, Expr, ExprKind, StateRef, Transition, Value};
use p4_syntax::ast::BinOp;

/// One key part of a keyset row: value and mask at the part's width.
type Part = (BigInt, BigInt);

impl Ctx<'_> {
    pub fn lower_parser(&mut self, d: DeclId) -> R<()> {
        let p = self.p;
        let DeclKind::Parser { states, locals, .. } = &p.decl(d).kind else {
            return unsupported(p.decl(d).span, "not a parser");
        };
        for &l in locals {
            match &p.decl(l).kind {
                DeclKind::ValueSet { elem, size } => {
                    let name = self.cp_name(&self.frame.prefix.clone(), l);
                    let w = p.width_of(elem).unwrap_or(0) as u32;
                    let id = self.json.parse_vsets.len() as i64;
                    self.json.parse_vsets.push(j::ParseVset {
                        name: name.clone(),
                        id,
                        compressed_bitwidth: w,
                        max_size: Some(*size as u32),
                    });
                    self.frame.env.insert(l, Bind::Named(name.clone()));
                    crate::p4info::value_set(self, &name, l);
                }
                DeclKind::Var { .. } => {
                    let pl = self.local_place(l)?;
                    self.frame.env.insert(l, Bind::Place(pl));
                }
                DeclKind::Instance { .. } => {
                    return unsupported(p.decl(l).span, "an instance inside a parser");
                }
                _ => {}
            }
        }
        let mut out = Vec::new();
        for &s in states {
            let decl = p.decl(s);
            let DeclKind::State { stmts, transition } = &decl.kind else {
                continue;
            };
            let mut b = Body::new(true);
            self.stmts(&mut b, stmts)?;
            let mut parser_ops = Vec::new();
            for prim in b.finish() {
                let (kind, params) = match prim.op.as_str() {
                    "extract" => (j::ParserOpKind::Extract, prim.parameters),
                    "extract_VL" => (j::ParserOpKind::ExtractVl, prim.parameters),
                    "verify" => (j::ParserOpKind::Verify, prim.parameters),
                    "advance" => (j::ParserOpKind::Advance, prim.parameters),
                    "assign" => (j::ParserOpKind::Set, prim.parameters),
                    _ => {
                        parser_ops.push(j::ParserOp {
                            op: j::ParserOpKind::Primitive,
                            parameters: vec![j::ParserParam::Primitive(prim)],
                        });
                        continue;
                    }
                };
                parser_ops.push(j::ParserOp {
                    op: kind,
                    parameters: params.into_iter().map(j::ParserParam::Tv).collect(),
                });
            }
            let (transition_key, transitions) = self.transitions(transition)?;
            out.push(j::ParseState {
                name: decl.name.clone(),
                id: out.len() as i64,
                parser_ops,
                transition_key,
                transitions,
            });
        }
        self.json.parsers.push(j::Parser {
            name: "parser".into(),
            id: 0,
            init_state: Some("start".into()),
            parse_states: out,
        });
        Ok(())
    }

    fn state_name(&self, s: &StateRef) -> Option<String> {
        match s {
            StateRef::Accept | StateRef::Reject => None,
            StateRef::State(d) => Some(self.p.decl(*d).name.clone()),
        }
    }

    fn transitions(&mut self, t: &Transition) -> R<(Vec<Tv>, Vec<j::Transition>)> {
        match t {
            Transition::Direct(s) => Ok((
                vec![],
                vec![j::Transition {
                    kind: j::TransitionKind::Default,
                    next_state: self.state_name(s),
                }],
            )),
            Transition::Select { exprs, cases, .. } => {
                let mut key = Vec::new();
                let mut widths = Vec::new();
                let mut scratch = Body::new(true);
                for e in exprs {
                    let tv = self.rv(&mut scratch, e)?;
                    if !scratch.prims.is_empty() {
                        return unsupported(e.span, "a select key with side effects");
                    }
                    let tv = if e.ty == p4_sema::ir::Type::Bool {
                        crate::expr::b2d(tv)
                    } else {
                        tv
                    };
                    key.push(tv);
                    widths.push(
                        self.p
                            .width_of(&crate::expr::repr(self, &e.ty))
                            .unwrap_or(0) as u32,
                    );
                }
                let mut out = Vec::new();
                for c in cases {
                    let next_state = self.state_name(&c.state);
                    // Value sets.
                    if let ExprKind::Ref(d) = &c.keyset.kind {
                        if let Some(Bind::Named(n)) = self.frame.env.get(d) {
                            out.push(j::Transition {
                                kind: j::TransitionKind::ParseVset {
                                    name: n.clone(),
                                    mask: None,
                                },
                                next_state,
                            });
                            continue;
                        }
                    }
                    let items: Vec<Expr> = match &c.keyset.kind {
                        ExprKind::Tuple(items) if widths.len() > 1 => items.clone(),
                        ExprKind::Const(Value::Tuple(vs)) if widths.len() > 1 => vs
                            .iter()
                            .map(|v| Expr {
                                kind: ExprKind::Const(v.clone()),
                                ty: p4_sema::ir::Type::InfInt,
                                span: c.keyset.span,
                            })
                            .collect(),
                        ExprKind::Default | ExprKind::DontCare => {
                            vec![c.keyset.clone(); widths.len()]
                        }
                        _ => vec![c.keyset.clone()],
                    };
                    if items.len() != widths.len() {
                        return unsupported(c.keyset.span, "a keyset of this shape");
                    }
                    let mut rows: Vec<Vec<Part>> = vec![vec![]];
                    for (it, w) in items.iter().zip(&widths) {
                        let alts = keyset_parts(it, *w)?;
                        let mut next_rows = Vec::new();
                        for r in &rows {
                            for a in &alts {
                                let mut r2 = r.clone();
                                r2.push(a.clone());
                                next_rows.push(r2);
                            }
                        }
                        rows = next_rows;
                    }
                    for row in rows {
                        out.push(j::Transition {
                            kind: row_kind(&row, &widths),
                            next_state: next_state.clone(),
                        });
                    }
                }
                Ok((key, out))
            }
        }
    }
}

/// The value/mask alternatives of one keyset part.
fn keyset_parts(e: &Expr, w: u32) -> R<Vec<Part>> {
    let full = mask(w);
    Ok(match &e.kind {
        ExprKind::DontCare | ExprKind::Default => vec![(BigInt::zero(), BigInt::zero())],
        ExprKind::Binary(BinOp::Mask, v, m) => match (const_int(v), const_int(m)) {
            (Some(v), Some(m)) => {
                let m = unsigned(&m, w);
                vec![(unsigned(&v, w) & &m, m)]
            }
            _ => return unsupported(e.span, "a mask that is not constant"),
        },
        ExprKind::Binary(BinOp::Range, lo, hi) => match (const_int(lo), const_int(hi)) {
            (Some(lo), Some(hi)) => range_to_masks(&unsigned(&lo, w), &unsigned(&hi, w), w),
            _ => return unsupported(e.span, "a range that is not constant"),
        },
        _ => match const_int(e) {
            Some(v) => vec![(unsigned(&v, w), full)],
            None => return unsupported(e.span, "a keyset that is not constant"),
        },
    })
}

/// Covers [lo, hi] with aligned power-of-two blocks, each a value/mask pair.
fn range_to_masks(lo: &BigInt, hi: &BigInt, w: u32) -> Vec<Part> {
    let mut out = Vec::new();
    let mut cur = lo.clone();
    let full = mask(w);
    while &cur <= hi {
        // The largest block starting at `cur` that stays within [cur, hi].
        let mut size = 0u32;
        while size < w {
            let block = BigInt::one() << (size + 1);
            if (&cur % &block) != BigInt::zero() || &cur + &block - 1 > *hi {
                break;
            }
            size += 1;
        }
        let m = &full ^ (mask(size));
        out.push((cur.clone(), m));
        cur += BigInt::one() << size;
    }
    out
}

fn row_kind(row: &[Part], widths: &[u32]) -> j::TransitionKind {
    if row.iter().all(|(_, m)| m.is_zero()) {
        return j::TransitionKind::Default;
    }
    let all_exact = row.iter().zip(widths).all(|((_, m), w)| *m == mask(*w));
    let mut value = Vec::new();
    let mut maskb = Vec::new();
    for ((v, m), w) in row.iter().zip(widths) {
        let n = w.div_ceil(8) as usize;
        value.extend(bytes(v, n));
        maskb.extend(bytes(m, n));
    }
    j::TransitionKind::Hexstr {
        value: j::HexStr {
            negative: false,
            bytes: value,
        },
        mask: if all_exact {
            None
        } else {
            Some(j::HexStr {
                negative: false,
                bytes: maskb,
            })
        },
    }
}

fn bytes(v: &BigInt, n: usize) -> Vec<u8> {
    match hex(v) {
        Tv::Hexstr(h) => h.to_width_bytes(n),
        _ => vec![0; n],
    }
}
