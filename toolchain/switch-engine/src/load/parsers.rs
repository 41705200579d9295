//! Parsers (`parsers`, `parse_vsets`) and the parser error codes (`errors`).

use super::{err, Scope, L, R};
use crate::expr::{Ex, Op2, K};
use crate::program::*;
use p4_bmv2_json as j;
use p4_bmv2_json::{ParserOpKind, ParserParam, Tv};
use std::collections::HashMap;

impl<'a> L<'a> {
    pub(super) fn errors(&mut self) {
        let mut by_name: HashMap<&str, u32> = HashMap::new();
        for (name, v) in &self.j.errors {
            by_name.insert(name, *v as u32);
            self.p.error_names.insert(*v as u32, name.clone());
        }
        // Core errors the program does not declare get fresh values, as bmv2 does.
        let mut next = self
            .j
            .errors
            .iter()
            .map(|(_, v)| *v as u32 + 1)
            .max()
            .unwrap_or(1);
        let mut core = |name: &str, names: &mut HashMap<u32, String>| -> u32 {
            match by_name.get(name) {
                Some(&v) => v,
                None => {
                    next += 1;
                    names.insert(next - 1, name.to_string());
                    next - 1
                }
            }
        };
        let names = &mut self.p.error_names;
        let no_error = by_name.get("NoError").copied().unwrap_or(0);
        self.p.errors = CoreErrors {
            no_error,
            packet_too_short: core("PacketTooShort", names),
            stack_out_of_bounds: core("StackOutOfBounds", names),
            header_too_short: core("HeaderTooShort", names),
            parser_timeout: core("ParserTimeout", names),
            parser_invalid_argument: core("ParserInvalidArgument", names),
        };
    }

    pub(super) fn extract_target(
        &self,
        t: &ParserParam,
        path: &str,
        sc: Scope,
    ) -> R<ExtractTarget> {
        match t {
            ParserParam::Tv(Tv::Stack(s)) => Ok(ExtractTarget::Stack(
                self.stack_of(Some(&Tv::Stack(s.clone())), path)?,
            )),
            ParserParam::Tv(Tv::UnionStack(s, m)) => {
                let us = self.ustack_of(Some(&Tv::HeaderUnionStack(s.clone())), path)?;
                match self.ustack_type_members[us as usize]
                    .iter()
                    .position(|n| n == m)
                {
                    Some(m) => Ok(ExtractTarget::UnionStack(us, m as u32)),
                    None => err(path, format!("union stack \"{s}\" has no member \"{m}\"")),
                }
            }
            ParserParam::Tv(t) => Ok(ExtractTarget::Header(self.href(t, path, sc)?)),
            ParserParam::Primitive(_) => err(path, "expected an extract target"),
        }
    }

    pub(super) fn ptv<'b>(&self, ps: &'b [ParserParam], i: usize, path: &str) -> R<&'b Tv> {
        match ps.get(i) {
            Some(ParserParam::Tv(t)) => Ok(t),
            Some(ParserParam::Primitive(_)) => err(
                &format!("{path}.parameters[{i}]"),
                "expected a type-value object",
            ),
            None => err(
                &format!("{path}.parameters"),
                format!("missing parameter {i}"),
            ),
        }
    }

    pub(super) fn parser_op(&self, op: &j::ParserOp, path: &str) -> R<ParserOp> {
        let sc = Scope {
            params: None,
            parser: true,
        };
        let ps = &op.parameters;
        let arg = |i: usize| format!("{path}.parameters[{i}]");
        let count = |n: usize| -> R<()> {
            if ps.len() != n {
                return err(
                    &format!("{path}.parameters"),
                    format!("\"{}\" takes {n} parameters, found {}", op.op, ps.len()),
                );
            }
            Ok(())
        };
        Ok(match op.op {
            ParserOpKind::Extract => {
                count(1)?;
                ParserOp::Extract(self.extract_target(&ps[0], &arg(0), sc)?)
            }
            ParserOpKind::ExtractVl => {
                count(2)?;
                ParserOp::ExtractVl(
                    self.extract_target(&ps[0], &arg(0), sc)?,
                    self.expr(self.ptv(ps, 1, path)?, &arg(1), sc)?,
                )
            }
            ParserOpKind::Set => {
                count(2)?;
                ParserOp::Set(
                    self.lval(self.ptv(ps, 0, path)?, &arg(0), sc)?,
                    self.expr(self.ptv(ps, 1, path)?, &arg(1), sc)?,
                )
            }
            ParserOpKind::Verify => {
                count(2)?;
                ParserOp::Verify(
                    self.expr(self.ptv(ps, 0, path)?, &arg(0), sc)?,
                    self.expr(self.ptv(ps, 1, path)?, &arg(1), sc)?,
                )
            }
            ParserOpKind::Shift => {
                count(1)?;
                let bytes = self.expr(self.ptv(ps, 0, path)?, &arg(0), sc)?;
                ParserOp::Advance(Ex {
                    k: K::Bin(
                        Op2::Mul,
                        Box::new(bytes),
                        Box::new(Ex {
                            k: K::Const(8),
                            wide: false,
                        }),
                    ),
                    wide: false,
                })
            }
            ParserOpKind::Advance => {
                count(1)?;
                ParserOp::Advance(self.expr(self.ptv(ps, 0, path)?, &arg(0), sc)?)
            }
            ParserOpKind::Primitive => {
                count(1)?;
                match &ps[0] {
                    ParserParam::Primitive(p) => {
                        ParserOp::Primitive(self.prim(p, &arg(0), sc, 1)?)
                    }
                    ParserParam::Tv(_) => return err(&arg(0), "expected a primitive call"),
                }
            }
        })
    }

    pub(super) fn key_part(&self, t: &Tv, path: &str) -> R<(Ex, Option<u32>)> {
        let sc = Scope {
            params: None,
            parser: true,
        };
        let ex = self.expr(t, path, sc)?;
        let width = match (&ex.k, t) {
            (K::Field(f), _) => Some(self.p.fields[*f as usize].width),
            (K::Valid(_), _) => Some(1),
            (K::DynField(h, off), _) => self.href_field_width(h, *off),
            (K::Lookahead { width, .. }, _) => Some(*width),
            _ => None,
        };
        Ok((ex, width))
    }

    pub(super) fn parsers(&mut self) -> R<()> {
        let mut parsers = Vec::new();
        let mut vset_widths = Vec::new();
        for (pi, p) in self.j.parsers.iter().enumerate() {
            let ppath = format!("parsers[{pi}]");
            let by_name: HashMap<&str, u32> = p
                .parse_states
                .iter()
                .enumerate()
                .map(|(i, s)| (s.name.as_str(), i as u32))
                .collect();
            let state_ref = |name: &Option<String>, path: &str| -> R<Option<u32>> {
                match name {
                    None => Ok(None),
                    Some(n) => match by_name.get(n.as_str()) {
                        Some(&s) => Ok(Some(s)),
                        None => err(path, format!("unknown parse state \"{n}\"")),
                    },
                }
            };
            let init = state_ref(&p.init_state, &format!("{ppath}.init_state"))?;
            let mut states = Vec::new();
            for (si, s) in p.parse_states.iter().enumerate() {
                let spath = format!("{ppath}.parse_states[{si}]");
                let ops = s
                    .parser_ops
                    .iter()
                    .enumerate()
                    .map(|(k, op)| self.parser_op(op, &format!("{spath}.parser_ops[{k}]")))
                    .collect::<R<Vec<_>>>()?;
                let mut parts = Vec::new();
                for (k, t) in s.transition_key.iter().enumerate() {
                    parts.push(self.key_part(t, &format!("{spath}.transition_key[{k}]"))?);
                }
                // An expression key part takes the bytes the transition values leave for it.
                let known: usize = parts
                    .iter()
                    .filter_map(|(_, w)| w.map(|w| w.div_ceil(8) as usize))
                    .sum();
                let unknown = parts.iter().filter(|(_, w)| w.is_none()).count();
                let value_len = s.transitions.iter().find_map(|t| match &t.kind {
                    j::TransitionKind::Hexstr { value, .. } => Some(value.bytes.len()),
                    _ => None,
                });
                // Without a value, a value set tells it: its width is the key's, unpadded.
                let known_bits: u32 = parts.iter().filter_map(|(_, w)| *w).sum();
                let vset_bits = s.transitions.iter().find_map(|t| match &t.kind {
                    j::TransitionKind::ParseVset { name, .. } => self
                        .vset_by_name
                        .get(name.as_str())
                        .map(|&v| self.p.vsets[v as usize].bitwidth),
                    _ => None,
                });
                let mut key = Vec::new();
                for (k, (ex, w)) in parts.into_iter().enumerate() {
                    let w = match (w, unknown, value_len, vset_bits) {
                        (Some(w), _, _, _) => w,
                        (None, 1, Some(total), _) if total >= known => ((total - known) * 8) as u32,
                        (None, 1, None, Some(bits)) if bits > known_bits => bits - known_bits,
                        _ => {
                            return err(
                                &format!("{spath}.transition_key[{k}]"),
                                "cannot tell the width of this key expression",
                            )
                        }
                    };
                    key.push(KeyPart::Value(ex, w));
                }
                let key_bytes: usize = key
                    .iter()
                    .map(|KeyPart::Value(_, w)| w.div_ceil(8) as usize)
                    .sum();
                let mut transitions = Vec::new();
                for (k, t) in s.transitions.iter().enumerate() {
                    let tpath = format!("{spath}.transitions[{k}]");
                    let mask_of =
                        |m: &Option<j::HexStr>| m.as_ref().map(|m| m.to_width_bytes(key_bytes));
                    let matches = match &t.kind {
                        j::TransitionKind::Default => TransMatch::Default,
                        j::TransitionKind::Hexstr { value, mask } => TransMatch::Value {
                            value: value.to_width_bytes(key_bytes),
                            mask: mask_of(mask),
                        },
                        j::TransitionKind::ParseVset { name, mask } => {
                            match self.vset_by_name.get(name.as_str()) {
                                Some(&v) => TransMatch::Vset {
                                    vset: v,
                                    mask: mask_of(mask),
                                },
                                None => {
                                    return err(
                                        &format!("{tpath}.value"),
                                        format!("unknown parse value set \"{name}\""),
                                    )
                                }
                            }
                        }
                    };
                    transitions.push(Transition {
                        matches,
                        next: state_ref(&t.next_state, &format!("{tpath}.next_state"))?,
                    });
                }
                for t in &transitions {
                    if let TransMatch::Vset { vset, .. } = t.matches {
                        let widths: Vec<u32> = key.iter().map(|KeyPart::Value(_, w)| *w).collect();
                        vset_widths.push((vset, widths));
                    }
                }
                states.push(ParseState {
                    ops,
                    key,
                    key_bytes,
                    transitions,
                });
            }
            parsers.push(ParserInfo {
                name: p.name.clone(),
                init,
                states,
            });
        }
        self.p.parsers = parsers;
        for (v, widths) in vset_widths {
            self.p.vsets[v as usize].key_widths = widths;
        }
        Ok(())
    }
}
