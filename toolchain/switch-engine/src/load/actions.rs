//! Actions (`actions`): primitive calls with their arguments compiled.

use super::{bin, err, un, Scope, L, R};
use crate::expr::{Op1, Op2};
use crate::program::*;
use p4_bmv2_json as j;
use p4_bmv2_json::Tv;
use std::collections::HashMap;

impl<'a> L<'a> {
    pub(super) fn prim(&self, p: &j::Primitive, path: &str, sc: Scope, nprims: usize) -> R<Prim> {
        let ps = &p.parameters;
        let arg = |i: usize| format!("{path}.parameters[{i}]");
        let want = |lo: usize, hi: usize| -> R<()> {
            if ps.len() < lo || ps.len() > hi {
                let n = if lo == hi {
                    format!("{lo}")
                } else {
                    format!("{lo} to {hi}")
                };
                return err(
                    &format!("{path}.parameters"),
                    format!("\"{}\" takes {n} parameters, found {}", p.op, ps.len()),
                );
            }
            Ok(())
        };
        let e = |i: usize| self.expr(&ps[i], &arg(i), sc);
        let lv = |i: usize| self.lval(&ps[i], &arg(i), sc);
        let hr = |i: usize| self.href(&ps[i], &arg(i), sc);
        let named = |i: usize, map: &HashMap<&str, u32>, want_ty: &str| -> R<u32> {
            let name = match &ps[i] {
                Tv::CounterArray(n)
                | Tv::MeterArray(n)
                | Tv::RegisterArray(n)
                | Tv::Calculation(n)
                | Tv::String(n) => n,
                other => {
                    return err(
                        &arg(i),
                        format!("expected a {want_ty}, found a {}", other.type_name()),
                    )
                }
            };
            match map.get(name.as_str()) {
                Some(&v) => Ok(v),
                None => err(&arg(i), format!("unknown {want_ty} \"{name}\"")),
            }
        };
        let jump_target = |i: usize| -> R<usize> {
            let t = self.int_opnd(Some(&ps[i]), &arg(i))? as usize;
            if t > nprims {
                return err(&arg(i), format!("jump target {t} is past the action's end"));
            }
            Ok(t)
        };
        Ok(match p.op.as_str() {
            "assign" => {
                want(2, 2)?;
                Prim::Assign(lv(0)?, e(1)?)
            }
            // P4_14's primitives, in JSON from p4c-bm (bmv2's own test programs).
            "modify_field" => {
                want(2, 3)?;
                let value = match ps.len() {
                    2 => e(1)?,
                    _ => {
                        // dst = (dst & ~mask) | (src & mask)
                        let (dst, src, mask) = (e(0)?, e(1)?, e(2)?);
                        let keep = bin(Op2::BAnd, dst, un(Op1::BNot, mask.clone()));
                        bin(Op2::BOr, keep, bin(Op2::BAnd, src, mask))
                    }
                };
                Prim::Assign(lv(0)?, value)
            }
            "add_to_field" | "subtract_from_field" => {
                want(2, 2)?;
                let op = if p.op == "add_to_field" {
                    Op2::Add
                } else {
                    Op2::Sub
                };
                Prim::Assign(lv(0)?, bin(op, e(0)?, e(1)?))
            }
            "assign_VL" => {
                want(2, 2)?;
                Prim::AssignVl(lv(0)?, lv(1)?)
            }
            "assign_header" => {
                want(2, 2)?;
                Prim::AssignHeader(hr(0)?, hr(1)?)
            }
            "assign_union" => {
                want(2, 2)?;
                Prim::AssignUnion(
                    self.uref(&ps[0], &arg(0), sc)?,
                    self.uref(&ps[1], &arg(1), sc)?,
                )
            }
            "assign_header_stack" => {
                want(2, 2)?;
                Prim::AssignHeaderStack(
                    self.stack_of(Some(&ps[0]), &arg(0))?,
                    self.stack_of(Some(&ps[1]), &arg(1))?,
                )
            }
            "assign_union_stack" => {
                want(2, 2)?;
                Prim::AssignUnionStack(
                    self.ustack_of(Some(&ps[0]), &arg(0))?,
                    self.ustack_of(Some(&ps[1]), &arg(1))?,
                )
            }
            "push" | "pop" => {
                want(2, 2)?;
                let n = e(1)?;
                match &ps[0] {
                    Tv::HeaderUnionStack(_) => {
                        let s = self.ustack_of(Some(&ps[0]), &arg(0))?;
                        if p.op == "push" {
                            Prim::PushUnion(s, n)
                        } else {
                            Prim::PopUnion(s, n)
                        }
                    }
                    _ => {
                        let s = self.stack_of(Some(&ps[0]), &arg(0))?;
                        if p.op == "push" {
                            Prim::Push(s, n)
                        } else {
                            Prim::Pop(s, n)
                        }
                    }
                }
            }
            "add_header" => {
                want(1, 1)?;
                Prim::SetValid(hr(0)?)
            }
            "remove_header" => {
                want(1, 1)?;
                Prim::SetInvalid(hr(0)?)
            }
            "mark_to_drop" | "drop" => {
                want(0, 1)?;
                Prim::MarkToDrop
            }
            "exit" => {
                want(0, 0)?;
                Prim::Exit
            }
            "_jump" => {
                want(1, 1)?;
                Prim::Jump(jump_target(0)?)
            }
            "_jump_if_zero" => {
                want(2, 2)?;
                Prim::JumpIfZero(e(0)?, jump_target(1)?)
            }
            "modify_field_with_hash_based_offset" => {
                want(4, 4)?;
                Prim::HashOffset {
                    dst: lv(0)?,
                    base: e(1)?,
                    calc: named(2, &self.calc_by_name, "calculation")?,
                    size: e(3)?,
                }
            }
            "modify_field_rng_uniform" => {
                want(3, 3)?;
                Prim::RngUniform(lv(0)?, e(1)?, e(2)?)
            }
            "count" => {
                want(2, 2)?;
                Prim::Count(named(0, &self.counter_by_name, "counter array")?, e(1)?)
            }
            "execute_meter" => {
                want(3, 3)?;
                Prim::ExecuteMeter(named(0, &self.meter_by_name, "meter array")?, e(1)?, lv(2)?)
            }
            "register_read" => {
                want(3, 3)?;
                Prim::RegisterRead(
                    lv(0)?,
                    named(1, &self.register_by_name, "register array")?,
                    e(2)?,
                )
            }
            "register_write" => {
                want(3, 3)?;
                Prim::RegisterWrite(
                    named(0, &self.register_by_name, "register array")?,
                    e(1)?,
                    e(2)?,
                )
            }
            "clone_ingress_pkt_to_egress" | "clone_egress_pkt_to_egress" => {
                want(1, 2)?;
                let fl = if ps.len() > 1 { Some(e(1)?) } else { None };
                if p.op == "clone_ingress_pkt_to_egress" {
                    Prim::CloneI2E(e(0)?, fl)
                } else {
                    Prim::CloneE2E(e(0)?, fl)
                }
            }
            "resubmit" | "recirculate" => {
                want(0, 1)?;
                let fl = if ps.is_empty() { None } else { Some(e(0)?) };
                if p.op == "resubmit" {
                    Prim::Resubmit(fl)
                } else {
                    Prim::Recirculate(fl)
                }
            }
            "generate_digest" => {
                want(2, 2)?;
                Prim::Digest(e(1)?)
            }
            "truncate" => {
                want(1, 1)?;
                Prim::Truncate(e(0)?)
            }
            "log_msg" => {
                want(1, 2)?;
                let Tv::String(fmt) = &ps[0] else {
                    return err(&arg(0), "log_msg takes a format string");
                };
                let args = match ps.get(1) {
                    Some(Tv::ParametersVector(v)) => v
                        .iter()
                        .enumerate()
                        .map(|(i, t)| self.expr(t, &format!("{}.value[{i}]", arg(1)), sc))
                        .collect::<R<Vec<_>>>()?,
                    Some(other) => {
                        return err(
                            &arg(1),
                            format!(
                                "expected a parameters_vector, found a {}",
                                other.type_name()
                            ),
                        )
                    }
                    None => Vec::new(),
                };
                Prim::LogMsg(fmt.clone(), args)
            }
            "assert" | "assume" => {
                want(1, 1)?;
                Prim::Assert(e(0)?)
            }
            // Checksum externs p4c may leave in deparsers are handled by `checksums`.
            "update_checksum" | "verify_checksum" | "no_op" => Prim::Nop,
            other => {
                return err(
                    &format!("{path}.op"),
                    format!("unknown primitive \"{other}\""),
                )
            }
        })
    }

    pub(super) fn actions(&mut self) -> R<()> {
        let mut actions = Vec::new();
        for (i, a) in self.j.actions.iter().enumerate() {
            let path = format!("actions[{i}]");
            if self.action_by_id.insert(a.id, i as u32).is_some() {
                return err(
                    &format!("{path}.id"),
                    format!("duplicate action id {}", a.id),
                );
            }
            let params: Vec<(String, u32)> = a
                .runtime_data
                .iter()
                .map(|r| (r.name.clone(), r.bitwidth))
                .collect();
            let sc = Scope {
                params: Some(&params),
                parser: false,
            };
            let prims = a
                .primitives
                .iter()
                .enumerate()
                .map(|(k, p)| {
                    self.prim(
                        p,
                        &format!("{path}.primitives[{k}]"),
                        sc,
                        a.primitives.len(),
                    )
                })
                .collect::<R<Vec<_>>>()?;
            actions.push(ActionInfo {
                name: a.name.clone(),
                json_id: a.id,
                params,
                prims,
            });
        }
        self.p.actions = actions;
        Ok(())
    }

    // ---- parsers -----------------------------------------------------------------------
}
