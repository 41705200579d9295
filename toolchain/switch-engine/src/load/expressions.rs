//! Expressions and their operands: header, union and field references, l-values.

use super::{err, Scope, L, R};
use crate::expr::{Ex, FieldLoc, HRef, Op1, Op2, URef, K};
use num_bigint::BigInt;
use p4_bmv2_json::{Expr, Tv};

impl<'a> L<'a> {
    pub(super) fn href(&self, t: &Tv, path: &str, sc: Scope) -> R<HRef> {
        match t {
            Tv::Header(h) | Tv::Regular(h) => Ok(HRef::Static(self.header(h, path)?)),
            Tv::Expression(e) => self.href_expr(e, path, sc),
            other => err(
                path,
                format!("expected a header, found a {}", other.type_name()),
            ),
        }
    }

    pub(super) fn href_expr(&self, e: &Expr, path: &str, sc: Scope) -> R<HRef> {
        match e {
            Expr::Tv(t) => self.href(t, &format!("{path}.value"), sc),
            Expr::Op(o) => match o.op.as_str() {
                "dereference_header_stack" => {
                    let s = self.stack_of(o.left.as_ref(), &format!("{path}.left"))?;
                    let idx = self.opnd(o.right.as_ref(), &format!("{path}.right"), sc)?;
                    Ok(HRef::Stack(s, Box::new(idx)))
                }
                "access_union_header" => {
                    let u = self.uref_opt(o.left.as_ref(), &format!("{path}.left"), sc)?;
                    let m = self.int_opnd(o.right.as_ref(), &format!("{path}.right"))?;
                    Ok(HRef::UnionMember(u, m))
                }
                other => err(
                    path,
                    format!("operation \"{other}\" does not produce a header"),
                ),
            },
        }
    }

    pub(super) fn uref_opt(&self, t: Option<&Tv>, path: &str, sc: Scope) -> R<URef> {
        match t {
            Some(t) => self.uref(t, path, sc),
            None => err(path, "missing header union operand"),
        }
    }

    pub(super) fn uref(&self, t: &Tv, path: &str, sc: Scope) -> R<URef> {
        match t {
            Tv::HeaderUnion(u) => match self.union_by_name.get(u.as_str()) {
                Some(&u) => Ok(URef::Static(u)),
                None => err(path, format!("unknown header union \"{u}\"")),
            },
            Tv::Expression(e) => match e.as_ref() {
                Expr::Tv(t) => self.uref(t, &format!("{path}.value"), sc),
                Expr::Op(o) if o.op == "dereference_union_stack" => {
                    let s = self.ustack_of(o.left.as_ref(), &format!("{path}.value.left"))?;
                    let idx = self.opnd(o.right.as_ref(), &format!("{path}.value.right"), sc)?;
                    Ok(URef::Stack(s, Box::new(idx)))
                }
                Expr::Op(o) => err(
                    path,
                    format!("operation \"{}\" does not produce a header union", o.op),
                ),
            },
            other => err(
                path,
                format!("expected a header union, found a {}", other.type_name()),
            ),
        }
    }

    pub(super) fn stack_of(&self, t: Option<&Tv>, path: &str) -> R<u32> {
        match t {
            Some(Tv::HeaderStack(s) | Tv::Stack(s)) => match self.stack_by_name.get(s.as_str()) {
                Some(&s) => Ok(s),
                None => err(path, format!("unknown header stack \"{s}\"")),
            },
            Some(other) => err(
                path,
                format!("expected a header stack, found a {}", other.type_name()),
            ),
            None => err(path, "missing header stack operand"),
        }
    }

    pub(super) fn ustack_of(&self, t: Option<&Tv>, path: &str) -> R<u32> {
        match t {
            Some(Tv::HeaderUnionStack(s)) => match self.ustack_by_name.get(s.as_str()) {
                Some(&s) => Ok(s),
                None => err(path, format!("unknown header union stack \"{s}\"")),
            },
            Some(other) => err(
                path,
                format!(
                    "expected a header union stack, found a {}",
                    other.type_name()
                ),
            ),
            None => err(path, "missing header union stack operand"),
        }
    }

    pub(super) fn int_opnd(&self, t: Option<&Tv>, path: &str) -> R<u32> {
        match t {
            Some(Tv::Int(v)) if *v >= 0 => Ok(*v as u32),
            Some(Tv::Hexstr(h)) => match h.to_i128() {
                Some(v) if (0..=i128::from(u32::MAX)).contains(&v) => Ok(v as u32),
                _ => err(path, "offset out of range"),
            },
            _ => err(path, "expected a non-negative integer offset"),
        }
    }

    pub(super) fn opnd(&self, t: Option<&Tv>, path: &str, sc: Scope) -> R<Ex> {
        match t {
            Some(t) => self.expr(t, path, sc),
            None => err(path, "missing operand"),
        }
    }

    pub(super) fn last_of_stack(s: u32) -> Ex {
        Ex {
            k: K::Bin(
                Op2::Sub,
                Box::new(Ex {
                    k: K::SizeStack(s),
                    wide: false,
                }),
                Box::new(Ex {
                    k: K::Const(1),
                    wide: false,
                }),
            ),
            wide: false,
        }
    }

    pub(super) fn field_ex(&self, f: u32) -> Ex {
        Ex {
            k: K::Field(f),
            wide: self.p.fields[f as usize].width > 64,
        }
    }

    pub(super) fn dyn_field_ex(&self, h: HRef, off: u32, width: u32) -> Ex {
        Ex {
            k: K::DynField(h, off),
            wide: width > 64,
        }
    }

    /// Width of field `off` of header(s) reachable through `h` (stack elements share a type).
    pub(super) fn href_field_width(&self, h: &HRef, off: u32) -> Option<u32> {
        let header = match h {
            HRef::Static(h) => *h,
            HRef::Stack(s, _) => *self.p.stacks[*s as usize].headers.first()?,
            HRef::UnionMember(u, m) => {
                let u = match u {
                    URef::Static(u) => *u,
                    URef::Stack(s, _) => *self.p.union_stacks[*s as usize].unions.first()?,
                };
                *self.p.unions[u as usize].headers.get(*m as usize)?
            }
        };
        let info = &self.p.headers[header as usize];
        (off < info.nfields).then(|| self.p.fields[(info.first_field + off) as usize].width)
    }

    pub(super) fn stack_field_offset(&self, s: u32, field: &str, path: &str) -> R<u32> {
        let Some(&h) = self.p.stacks[s as usize].headers.first() else {
            return err(path, "empty header stack");
        };
        match self.field_index[h as usize].get(field) {
            Some(&o) => Ok(o),
            None => err(path, format!("stack elements have no field \"{field}\"")),
        }
    }

    pub(super) fn expr(&self, t: &Tv, path: &str, sc: Scope) -> R<Ex> {
        let c = |v: i128| Ex {
            k: K::Const(v),
            wide: false,
        };
        Ok(match t {
            Tv::Field(f) if f.1 == "$valid$" => Ex {
                k: K::Valid(HRef::Static(self.header(&f.0, path)?)),
                wide: false,
            },
            Tv::Field(f) => self.field_ex(self.field_ref(f, path)?),
            Tv::Hexstr(h) | Tv::SizedHexstr { value: h, .. } => {
                let bits = h.significant_bits();
                match h.to_i128() {
                    Some(v) if bits <= 64 => c(v),
                    _ => {
                        let mag = BigInt::from_bytes_be(num_bigint::Sign::Plus, &h.bytes);
                        Ex {
                            k: K::ConstBig(if h.negative { -mag } else { mag }),
                            wide: true,
                        }
                    }
                }
            }
            Tv::Bool(b) => c(i128::from(*b)),
            Tv::Int(v) => c(i128::from(*v)),
            Tv::Local(i) | Tv::RuntimeData(i) => match sc.params {
                Some(ps) => match ps.get(*i as usize) {
                    Some((_, w)) => Ex {
                        k: K::Param(*i),
                        wide: *w > 64,
                    },
                    None => {
                        return err(
                            path,
                            format!("action has {} parameters, no parameter {i}", ps.len()),
                        )
                    }
                },
                None => return err(path, "action parameters are only available inside actions"),
            },
            Tv::StackField(s, f) => {
                let s = self.stack_of(Some(&Tv::HeaderStack(s.clone())), path)?;
                let off = self.stack_field_offset(s, f, path)?;
                let h = HRef::Stack(s, Box::new(Self::last_of_stack(s)));
                let w = self.href_field_width(&h, off).unwrap_or(0);
                self.dyn_field_ex(h, off, w)
            }
            Tv::UnionStackField(s, member, f) => {
                let us = self.ustack_of(Some(&Tv::HeaderUnionStack(s.clone())), path)?;
                let m = self.ustack_type_members[us as usize]
                    .iter()
                    .position(|n| n == member);
                let Some(m) = m else {
                    return err(
                        path,
                        format!("union stack \"{s}\" has no member \"{member}\""),
                    );
                };
                let last = Ex {
                    k: K::Bin(
                        Op2::Sub,
                        Box::new(Ex {
                            k: K::SizeUnionStack(us),
                            wide: false,
                        }),
                        Box::new(c(1)),
                    ),
                    wide: false,
                };
                let h = HRef::UnionMember(URef::Stack(us, Box::new(last)), m as u32);
                let first_union = self.p.union_stacks[us as usize].unions.first().copied();
                let header =
                    first_union.and_then(|u| self.p.unions[u as usize].headers.get(m).copied());
                let Some(header) = header else {
                    return err(path, "empty header union stack");
                };
                let Some(&off) = self.field_index[header as usize].get(f.as_str()) else {
                    return err(path, format!("member \"{member}\" has no field \"{f}\""));
                };
                let w = self.href_field_width(&h, off).unwrap_or(0);
                self.dyn_field_ex(h, off, w)
            }
            Tv::Lookahead { offset, bitwidth } => {
                if !sc.parser {
                    return err(path, "lookahead is only available in parsers");
                }
                Ex {
                    k: K::Lookahead {
                        offset: *offset,
                        width: *bitwidth,
                    },
                    wide: *bitwidth > 64,
                }
            }
            Tv::Expression(e) => self.expr_of(e, &format!("{path}.value"), sc)?,
            other => {
                return err(
                    path,
                    format!("a {} cannot be used as a value", other.type_name()),
                )
            }
        })
    }

    pub(super) fn expr_of(&self, e: &Expr, path: &str, sc: Scope) -> R<Ex> {
        let o = match e {
            Expr::Tv(t) => return self.expr(t, path, sc),
            Expr::Op(o) => o,
        };
        let lp = format!("{path}.left");
        let rp = format!("{path}.right");
        let bin = |op: Op2| -> R<Ex> {
            let a = self.opnd(o.left.as_ref(), &lp, sc)?;
            let b = self.opnd(o.right.as_ref(), &rp, sc)?;
            let wide = match op {
                Op2::Eq | Op2::Ne | Op2::Gt | Op2::Ge | Op2::Lt | Op2::Le | Op2::And | Op2::Or => {
                    false
                }
                Op2::Shl | Op2::Shr | Op2::TwoCompMod | Op2::SatCast | Op2::UsatCast => a.wide,
                _ => a.wide || b.wide,
            };
            Ok(Ex {
                k: K::Bin(op, Box::new(a), Box::new(b)),
                wide,
            })
        };
        let un = |op: Op1| -> R<Ex> {
            let a = self.opnd(o.right.as_ref(), &rp, sc)?;
            let wide = matches!(op, Op1::BNot | Op1::Neg) && a.wide;
            Ok(Ex {
                k: K::Un(op, Box::new(a)),
                wide,
            })
        };
        let narrow = |k: K| Ex { k, wide: false };
        match o.op.as_str() {
            "+" => bin(Op2::Add),
            "-" if o.left.is_none() => un(Op1::Neg),
            "-" => bin(Op2::Sub),
            "*" => bin(Op2::Mul),
            "/" => bin(Op2::Div),
            "%" => bin(Op2::Mod),
            "<<" => bin(Op2::Shl),
            ">>" => bin(Op2::Shr),
            "==" => bin(Op2::Eq),
            "!=" => bin(Op2::Ne),
            ">" => bin(Op2::Gt),
            ">=" => bin(Op2::Ge),
            "<" => bin(Op2::Lt),
            "<=" => bin(Op2::Le),
            "and" => bin(Op2::And),
            "or" => bin(Op2::Or),
            "&" => bin(Op2::BAnd),
            "|" => bin(Op2::BOr),
            "^" => bin(Op2::BXor),
            "two_comp_mod" => bin(Op2::TwoCompMod),
            "sat_cast" => bin(Op2::SatCast),
            "usat_cast" => bin(Op2::UsatCast),
            "not" => un(Op1::Not),
            "~" => un(Op1::BNot),
            "d2b" => un(Op1::D2b),
            "b2d" => un(Op1::B2d),
            "valid" => {
                let h = match &o.right {
                    Some(t) => self.href(t, &rp, sc)?,
                    None => return err(&rp, "missing header operand"),
                };
                Ok(narrow(K::Valid(h)))
            }
            "valid_union" => Ok(narrow(K::ValidUnion(self.uref_opt(
                o.right.as_ref(),
                &rp,
                sc,
            )?))),
            "?" => {
                let c = self.opnd(o.cond.as_ref(), &format!("{path}.cond"), sc)?;
                let a = self.opnd(o.left.as_ref(), &lp, sc)?;
                let b = self.opnd(o.right.as_ref(), &rp, sc)?;
                let wide = a.wide || b.wide;
                Ok(Ex {
                    k: K::Cond(Box::new(c), Box::new(a), Box::new(b)),
                    wide,
                })
            }
            "last_stack_index" => {
                let s = self.stack_of(o.right.as_ref().or(o.left.as_ref()), &rp)?;
                Ok(narrow(Self::last_of_stack(s).k))
            }
            "size_stack" => {
                let s = self.stack_of(o.right.as_ref().or(o.left.as_ref()), &rp)?;
                Ok(narrow(K::SizeStack(s)))
            }
            "access_field" => {
                let h = match &o.left {
                    Some(t) => self.href(t, &lp, sc)?,
                    None => return err(&lp, "missing header operand"),
                };
                let off = self.int_opnd(o.right.as_ref(), &rp)?;
                let Some(w) = self.href_field_width(&h, off) else {
                    return err(&rp, format!("field offset {off} is out of range"));
                };
                Ok(match h {
                    HRef::Static(h) => self.field_ex(self.p.headers[h as usize].first_field + off),
                    h => self.dyn_field_ex(h, off, w),
                })
            }
            "dereference_header_stack" | "dereference_union_stack" | "access_union_header" => {
                err(path, format!("\"{}\" produces a header, not a value", o.op))
            }
            other => err(
                &format!("{path}.op"),
                format!("unknown expression op \"{other}\""),
            ),
        }
    }

    /// A writable field.
    pub(super) fn lval(&self, t: &Tv, path: &str, sc: Scope) -> R<FieldLoc> {
        match t {
            Tv::Field(f) if f.1 == "$valid$" => err(path, "$valid$ is read-only"),
            Tv::Field(f) => Ok(FieldLoc::Static(self.field_ref(f, path)?)),
            Tv::StackField(..) | Tv::UnionStackField(..) => match self.expr(t, path, sc)?.k {
                K::DynField(h, off) => Ok(FieldLoc::Dyn(h, off)),
                K::Field(f) => Ok(FieldLoc::Static(f)),
                _ => err(path, "not a field"),
            },
            Tv::Expression(e) => match e.as_ref() {
                Expr::Tv(t) => self.lval(t, &format!("{path}.value"), sc),
                Expr::Op(o) if o.op == "access_field" => {
                    match self.expr_of(e, &format!("{path}.value"), sc)?.k {
                        K::DynField(h, off) => Ok(FieldLoc::Dyn(h, off)),
                        K::Field(f) => Ok(FieldLoc::Static(f)),
                        _ => err(path, "not a field"),
                    }
                }
                Expr::Op(o) => err(path, format!("\"{}\" is not a writable field", o.op)),
            },
            other => err(
                path,
                format!("expected a field to write, found a {}", other.type_name()),
            ),
        }
    }

    // ---- primitives --------------------------------------------------------------------
}
