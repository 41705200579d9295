//! The parser: states to BMv2 parse states, select keysets to value/mask transitions.
//!
//! Ranges in keysets are expanded into value/mask pairs (p4c's `ReplaceSelectRange`), `_` and
//! `default` mask their part out, value sets become `parse_vset` transitions. Each key part
//! occupies whole bytes of the transition value, as bmv2 concatenates them.

use crate::num::{const_int, hex, mask, unsigned};
use crate::prims::Body;
use crate::{unsupported, Bind, Ctx, R};
use num_bigint::BigInt;
use num_traits::{One, Zero};
use p4_bmv2_json as j;
use p4_bmv2_json::Tv;
use p4_sema::ir::{
    CallTarget, DeclId, DeclKind, Expr, ExprKind, SelectCase, StateRef, Stmt, StmtKind, Transition,
    Value,
};
use p4_syntax::ast::BinOp;

/// What ends a state: the parser's transition, or a jump to a state made while lowering.
enum Tail<'a> {
    Ir(&'a Transition),
    Goto(String),
}

fn flatten(stmts: &[Stmt], out: &mut Vec<Stmt>) {
    for s in stmts {
        match &s.kind {
            StmtKind::Block(b) => flatten(&b.stmts, out),
            _ => out.push(s.clone()),
        }
    }
}

/// `p.apply(args);` of a parser instance.
fn applies_parser(s: &Stmt) -> bool {
    let StmtKind::Call(e) = &s.kind else {
        return false;
    };
    matches!(&e.kind, ExprKind::Call(c)
        if matches!(&c.target, CallTarget::Apply(r) if matches!(r.ty, p4_sema::ir::Type::Parser(..))))
}

/// Primitives of a parser state as parser ops (`extract`, `set`, `verify`, ... or `primitive`).
fn parser_ops(b: Body) -> Vec<j::ParserOp> {
    let mut ops = Vec::new();
    for prim in b.finish() {
        let kind = match prim.op.as_str() {
            "extract" => j::ParserOpKind::Extract,
            "extract_VL" => j::ParserOpKind::ExtractVl,
            "verify" => j::ParserOpKind::Verify,
            "advance" => j::ParserOpKind::Advance,
            "assign" => j::ParserOpKind::Set,
            _ => {
                ops.push(j::ParserOp {
                    op: j::ParserOpKind::Primitive,
                    parameters: vec![j::ParserParam::Primitive(prim)],
                });
                continue;
            }
        };
        ops.push(j::ParserOp {
            op: kind,
            parameters: prim
                .parameters
                .into_iter()
                .map(j::ParserParam::Tv)
                .collect(),
        });
    }
    ops
}

/// One key part of a keyset row: value and mask at the part's width.
type Part = (BigInt, BigInt);

impl Ctx<'_> {
    pub fn lower_parser(&mut self, d: DeclId) -> R<()> {
        let mut out = Vec::new();
        self.parser_states(d, &mut out)?;
        for (i, st) in out.iter_mut().enumerate() {
            st.id = i as i64;
        }
        self.json.parsers.push(j::Parser {
            name: "parser".into(),
            id: 0,
            init_state: Some("start".into()),
            parse_states: out,
        });
        Ok(())
    }

    /// The states of the parser (`p4-midend`'s `subparser-inline` inlined its sub-parsers).
    fn parser_states(&mut self, d: DeclId, out: &mut Vec<j::ParseState>) -> R<()> {
        let p = self.p;
        let DeclKind::Parser { states, locals, .. } = &p.decl(d).kind else {
            return unsupported(p.decl(d).span, "not a parser");
        };
        for &l in locals {
            match &p.decl(l).kind {
                DeclKind::ValueSet { elem, size } => {
                    let Some(Bind::Named(name)) = self.frame.env.get(&l).cloned() else {
                        return unsupported(p.decl(l).span, "a value set outside its parser");
                    };
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
                    return unsupported(p.decl(l).span, "this instance inside a parser");
                }
                _ => {}
            }
        }
        for &s in states {
            let decl = p.decl(s);
            let DeclKind::State { stmts, transition } = &decl.kind else {
                continue;
            };
            self.state(decl.name.clone(), stmts, Tail::Ir(transition), out)?;
        }
        Ok(())
    }

    /// One state; an `if` splits it: the statements before it, a state per branch, then a
    /// continuation state with the rest.
    fn state(
        &mut self,
        name: String,
        stmts: &[Stmt],
        tail: Tail,
        out: &mut Vec<j::ParseState>,
    ) -> R<()> {
        // Flatten blocks first: they only scope names.
        let mut flat = Vec::new();
        flatten(stmts, &mut flat);
        let stmts = &flat[..];
        let call = stmts
            .iter()
            .position(|s| matches!(s.kind, StmtKind::If(..)) || applies_parser(s));
        let before = &stmts[..call.unwrap_or(stmts.len())];
        let mut b = Body::new(true);
        self.stmts(&mut b, before)?;
        let Some(k) = call else {
            let (transition_key, transitions) = match tail {
                Tail::Ir(t) => self.transitions(&mut b, t, &name, out)?,
                Tail::Goto(n) => (
                    vec![],
                    vec![j::Transition {
                        kind: j::TransitionKind::Default,
                        next_state: Some(n),
                    }],
                ),
            };
            out.push(j::ParseState {
                name,
                id: 0,
                parser_ops: parser_ops(b),
                transition_key,
                transitions,
            });
            return Ok(());
        };
        if let StmtKind::If(cond, then, els) = &stmts[k].kind {
            // `if` in a state: a select on the condition into one state per branch, both
            // continuing with the rest of the state.
            let mut scratch = Body::new(true);
            let cv = self.rv(&mut scratch, cond)?;
            if !scratch.prims.is_empty() {
                return unsupported(cond.span, "a condition with side effects in a parser");
            }
            let cont = self.fresh(&format!("{name}_cont"));
            let tn = self.fresh(&format!("{name}_true"));
            let en = self.fresh(&format!("{name}_false"));
            out.push(j::ParseState {
                name,
                id: 0,
                parser_ops: parser_ops(b),
                transition_key: vec![crate::expr::b2d(cv)],
                transitions: vec![
                    j::Transition {
                        kind: j::TransitionKind::Hexstr {
                            value: j::HexStr {
                                negative: false,
                                bytes: vec![1],
                            },
                            mask: None,
                        },
                        next_state: Some(tn.clone()),
                    },
                    j::Transition {
                        kind: j::TransitionKind::Default,
                        next_state: Some(en.clone()),
                    },
                ],
            });
            self.state(
                tn,
                std::slice::from_ref(then),
                Tail::Goto(cont.clone()),
                out,
            )?;
            let els: Vec<Stmt> = els.iter().map(|e| (**e).clone()).collect();
            self.state(en, &els, Tail::Goto(cont.clone()), out)?;
            return self.state(cont, &stmts[k + 1..], tail, out);
        }
        // `p4-midend`'s `subparser-inline` inlines the calls it finds outside `if`s.
        unsupported(
            stmts[k].span,
            "apply() of a parser inside an `if` of a state",
        )
    }

    fn state_name(&self, s: &StateRef) -> Option<String> {
        match s {
            StateRef::Accept | StateRef::Reject => None,
            StateRef::State(d) => Some(self.p.decl(*d).name.clone()),
        }
    }

    /// The key and transitions of a state named `state`, whose body `b` gets the temporaries of
    /// computed key parts; a value set inside a tuple keyset adds states to `out` (see
    /// `select_cases`).
    fn transitions(
        &mut self,
        b: &mut Body,
        t: &Transition,
        state: &str,
        out: &mut Vec<j::ParseState>,
    ) -> R<(Vec<Tv>, Vec<j::Transition>)> {
        match t {
            Transition::Direct(s) => Ok((
                vec![],
                vec![j::Transition {
                    kind: j::TransitionKind::Default,
                    next_state: self.state_name(s),
                }],
            )),
            Transition::Select { exprs, cases, span } => {
                let mut key = Vec::new();
                let mut widths = Vec::new();
                let mut scratch = Body::new(true);
                for e in exprs {
                    let tv = self.rv(&mut scratch, e)?;
                    if !scratch.prims.is_empty() {
                        return unsupported(e.span, "a select key with side effects");
                    }
                    let constant = matches!(
                        tv,
                        Tv::Bool(_) | Tv::Hexstr(_) | Tv::SizedHexstr { .. } | Tv::Int(_)
                    );
                    let tv = if constant {
                        // A constant key (`select(test)` with a constructor argument `false`)
                        // is a field too: bmv2's loader takes fields, not values, as keys.
                        self.field_of(b, e)?
                    } else if e.ty == p4_sema::ir::Type::Bool {
                        crate::expr::b2d(tv)
                    } else if matches!(tv, Tv::Expression(_)) {
                        // A computed key (a slice, arithmetic) goes through a temporary set in
                        // this state, as p4c does: bmv2 takes a key part's width from a field.
                        self.field_of(b, e)?
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
                let sel = Select {
                    key: &key,
                    widths: &widths,
                    state,
                    span: *span,
                };
                let trans = self.select_cases(&sel, cases, out)?;
                Ok((key, trans))
            }
        }
    }

    /// The transitions of `cases`, in order. bmv2 looks a value set up with the whole select
    /// key, so a value set that is one part of a tuple keyset, `(vs, 1)`, is checked in
    /// states of its own: the transition for that case goes to a state keyed on that part alone,
    /// whose hit continues (one state per value set of the tuple) to a state with the case's
    /// other parts followed by the later cases, and whose miss goes to a state with only the
    /// later cases. Those states have no operations, so they see the same key values.
    fn select_cases(
        &mut self,
        sel: &Select,
        cases: &[SelectCase],
        out: &mut Vec<j::ParseState>,
    ) -> R<Vec<j::Transition>> {
        let mut trans = Vec::new();
        for (i, c) in cases.iter().enumerate() {
            let next_state = self.state_name(&c.state);
            if let Some(n) = self.value_set_name(&c.keyset) {
                trans.push(j::Transition {
                    kind: j::TransitionKind::ParseVset {
                        name: n,
                        mask: None,
                    },
                    next_state,
                });
                continue;
            }
            let mut items: Vec<Expr> = match &c.keyset.kind {
                ExprKind::Tuple(items) if sel.widths.len() > 1 => items.clone(),
                ExprKind::Const(Value::Tuple(vs)) if sel.widths.len() > 1 => vs
                    .iter()
                    .map(|v| Expr {
                        kind: ExprKind::Const(v.clone()),
                        ty: p4_sema::ir::Type::InfInt,
                        span: c.keyset.span,
                    })
                    .collect(),
                ExprKind::Default | ExprKind::DontCare => {
                    vec![c.keyset.clone(); sel.widths.len()]
                }
                _ => vec![c.keyset.clone()],
            };
            if items.len() != sel.widths.len() {
                return unsupported(c.keyset.span, "a keyset of this shape");
            }
            let mut sets = Vec::new();
            for (k, it) in items.iter_mut().enumerate() {
                if let Some(n) = self.value_set_name(it) {
                    sets.push((k, n));
                    it.kind = ExprKind::DontCare;
                }
            }
            if !sets.is_empty() {
                let rest = &cases[i + 1..];
                let miss = self.fresh(&format!("{}_vset_miss", sel.state));
                let mut later = self.select_cases(sel, rest, out)?;
                out.push(j::ParseState {
                    name: miss.clone(),
                    id: 0,
                    parser_ops: vec![],
                    transition_key: sel.key.to_vec(),
                    transitions: later.clone(),
                });
                let hit = self.fresh(&format!("{}_vset_hit", sel.state));
                let mut hit_trans = Vec::new();
                for row in rows(&items, sel.widths)? {
                    hit_trans.push(j::Transition {
                        kind: row_kind(&row, sel.widths),
                        next_state: next_state.clone(),
                    });
                }
                // `later` ends in a default (the later cases', or NoMatch's).
                hit_trans.append(&mut later);
                out.push(j::ParseState {
                    name: hit.clone(),
                    id: 0,
                    parser_ops: vec![],
                    transition_key: sel.key.to_vec(),
                    transitions: hit_trans,
                });
                // The checks, last first: each hit goes on to the next value set.
                let mut on_hit = hit;
                for (k, n) in sets.into_iter().rev() {
                    let check = self.fresh(&format!("{}_vset", sel.state));
                    out.push(j::ParseState {
                        name: check.clone(),
                        id: 0,
                        parser_ops: vec![],
                        transition_key: vec![sel.key[k].clone()],
                        transitions: vec![
                            j::Transition {
                                kind: j::TransitionKind::ParseVset {
                                    name: n,
                                    mask: None,
                                },
                                next_state: Some(on_hit),
                            },
                            j::Transition {
                                kind: j::TransitionKind::Default,
                                next_state: Some(miss.clone()),
                            },
                        ],
                    });
                    on_hit = check;
                }
                trans.push(j::Transition {
                    kind: j::TransitionKind::Default,
                    next_state: Some(on_hit),
                });
                return Ok(trans);
            }
            for row in rows(&items, sel.widths)? {
                trans.push(j::Transition {
                    kind: row_kind(&row, sel.widths),
                    next_state: next_state.clone(),
                });
            }
        }
        // No case matched and none is `default`: the P4 spec's error.NoMatch. bmv2 would
        // accept instead, so p4c (HandleNoMatch) adds this default to a state that raises it.
        if !trans
            .iter()
            .any(|t| matches!(t.kind, j::TransitionKind::Default))
        {
            let state = self.no_match_state(sel.span, out)?;
            trans.push(j::Transition {
                kind: j::TransitionKind::Default,
                next_state: Some(state),
            });
        }
        Ok(trans)
    }

    /// The state raising error.NoMatch, made on first use (one per parser, as p4c's).
    fn no_match_state(&mut self, span: p4_syntax::Span, out: &mut Vec<j::ParseState>) -> R<String> {
        if let Some(n) = &self.no_match_state {
            return Ok(n.clone());
        }
        let name = self.fresh("noMatch");
        let mut b = Body::new(true);
        self.no_match(&mut b, span)?;
        out.push(j::ParseState {
            name: name.clone(),
            id: 0,
            parser_ops: parser_ops(b),
            transition_key: vec![],
            transitions: vec![j::Transition {
                kind: j::TransitionKind::Default,
                next_state: None,
            }],
        });
        self.no_match_state = Some(name.clone());
        Ok(name)
    }

    /// The parser value set a keyset (part) names, by its control-plane name.
    fn value_set_name(&self, e: &Expr) -> Option<String> {
        match &e.kind {
            ExprKind::Ref(d) => match self.frame.env.get(d) {
                Some(Bind::Named(n)) => Some(n.clone()),
                _ => None,
            },
            _ => None,
        }
    }

    /// `verify(false, error.NoMatch)`: what a select does when no case matches.
    fn no_match(&mut self, b: &mut Body, span: p4_syntax::Span) -> R<()> {
        let Some(i) = self.p.errors.iter().position(|e| e == "NoMatch") else {
            return unsupported(span, "a select without error.NoMatch declared");
        };
        let cond = Expr {
            kind: ExprKind::Const(Value::Bool(false)),
            ty: p4_sema::ir::Type::Bool,
            span,
        };
        let err = Expr {
            kind: ExprKind::Const(Value::Error(i)),
            ty: p4_sema::ir::Type::Error,
            span,
        };
        let c = self.rv(b, &cond)?;
        let e = self.rv(b, &err)?;
        b.push("verify", vec![c, e]);
        Ok(())
    }
}

/// The select a state's cases are lowered for.
struct Select<'a> {
    key: &'a [Tv],
    widths: &'a [u32],
    state: &'a str,
    span: p4_syntax::Span,
}

/// The value/mask rows of a keyset: one per combination of its parts' alternatives.
fn rows(items: &[Expr], widths: &[u32]) -> R<Vec<Vec<Part>>> {
    let mut rows: Vec<Vec<Part>> = vec![vec![]];
    for (it, w) in items.iter().zip(widths) {
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
    Ok(rows)
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
