//! Evaluation of compiled expressions (`expr.rs`): reads the packet state through indices only.

use crate::expr::{Arg, Ex, FieldId, FieldLoc, HRef, HeaderId, Op1, Op2, URef, K};
use crate::phv::Phv;
use crate::program::{Prog, Slot};
use crate::value::{sat_cast, sext, two_comp_mod, usat_cast, Arith};
use num_bigint::BigInt;
use std::cmp::Ordering;

/// What an expression can read.
pub struct Ctx<'a> {
    pub prog: &'a Prog,
    pub phv: &'a Phv,
    pub args: &'a [Arg],
    /// Packet bytes and parse cursor (bytes), for lookahead.
    pub data: &'a [u8],
    pub cursor: usize,
}

impl Ctx<'_> {
    pub fn header(&self, h: &HRef) -> Option<HeaderId> {
        match h {
            HRef::Static(id) => Some(*id),
            HRef::Stack(s, idx) => {
                let i = eval_u32(self, idx);
                self.prog.stacks[*s as usize]
                    .headers
                    .get(i as usize)
                    .copied()
            }
            HRef::UnionMember(u, m) => {
                let u = self.union(u)?;
                self.prog.unions[u as usize]
                    .headers
                    .get(*m as usize)
                    .copied()
            }
        }
    }

    pub fn union(&self, u: &URef) -> Option<u32> {
        match u {
            URef::Static(id) => Some(*id),
            URef::Stack(s, idx) => {
                let i = eval_u32(self, idx);
                self.prog.union_stacks[*s as usize]
                    .unions
                    .get(i as usize)
                    .copied()
            }
        }
    }

    pub fn field(&self, f: &FieldLoc) -> Option<FieldId> {
        match f {
            FieldLoc::Static(id) => Some(*id),
            FieldLoc::Dyn(h, off) => self.dyn_field(h, *off),
        }
    }

    /// Field `off` of the header `h` designates now.
    pub fn dyn_field(&self, h: &HRef, off: u32) -> Option<FieldId> {
        let h = self.header(h)?;
        let info = &self.prog.headers[h as usize];
        (off < info.nfields).then_some(info.first_field + off)
    }
}

fn read_field<N: Arith>(ctx: &Ctx, f: FieldId) -> N {
    let info = &ctx.prog.fields[f as usize];
    match info.slot {
        Slot::Narrow(s) => {
            let v = ctx.phv.n(s);
            N::from_i128(if info.signed {
                sext(v, info.width)
            } else {
                i128::from(v)
            })
        }
        Slot::Wide { off, len } | Slot::Varbit { off, len, .. } => N::from_be_bytes(
            &ctx.phv.wide[off as usize..(off + len) as usize],
            info.signed,
        ),
    }
}

pub fn read_param<N: Arith>(ctx: &Ctx, i: u32) -> N {
    match ctx.args.get(i as usize) {
        Some(Arg::N(v)) => N::from_i128(i128::from(*v)),
        Some(Arg::W(b)) => N::from_be_bytes(&b.to_signed_bytes_be(), true),
        None => N::from_i128(0),
    }
}

fn lookahead(ctx: &Ctx, offset: i64, width: u32) -> BigInt {
    let start = ctx.cursor as i64 * 8 + offset;
    let total = ctx.data.len() as i64 * 8;
    if start < 0 || start + i64::from(width) > total {
        return BigInt::from(0);
    }
    let mut out = vec![0u8; width.div_ceil(8) as usize];
    crate::value::get_wide(ctx.data, start as usize, width, &mut out);
    BigInt::from_bytes_be(num_bigint::Sign::Plus, &out)
}

fn lookahead_small(ctx: &Ctx, offset: i64, width: u32) -> i128 {
    let start = ctx.cursor as i64 * 8 + offset;
    let total = ctx.data.len() as i64 * 8;
    if width > 64 || start < 0 || start + i64::from(width) > total {
        return 0;
    }
    i128::from(crate::value::get_bits(ctx.data, start as usize, width))
}

pub fn eval_u32(ctx: &Ctx, e: &Ex) -> u32 {
    if e.wide {
        eval::<BigInt>(ctx, e).to_u32_sat()
    } else {
        eval::<i128>(ctx, e).to_u32_sat()
    }
}

pub fn eval_u64(ctx: &Ctx, e: &Ex) -> u64 {
    if e.wide {
        eval::<BigInt>(ctx, e).low_u64()
    } else {
        eval::<i128>(ctx, e).low_u64()
    }
}

fn cmp_children(ctx: &Ctx, a: &Ex, b: &Ex) -> Ordering {
    if a.wide || b.wide {
        Arith::cmp(&eval::<BigInt>(ctx, a), &eval::<BigInt>(ctx, b))
    } else {
        Arith::cmp(&eval::<i128>(ctx, a), &eval::<i128>(ctx, b))
    }
}

pub fn eval_bool(ctx: &Ctx, e: &Ex) -> bool {
    match &e.k {
        K::Bin(op, a, b) => match op {
            Op2::And => eval_bool(ctx, a) && eval_bool(ctx, b),
            Op2::Or => eval_bool(ctx, a) || eval_bool(ctx, b),
            Op2::Eq => cmp_children(ctx, a, b) == Ordering::Equal,
            Op2::Ne => cmp_children(ctx, a, b) != Ordering::Equal,
            Op2::Gt => cmp_children(ctx, a, b) == Ordering::Greater,
            Op2::Ge => cmp_children(ctx, a, b) != Ordering::Less,
            Op2::Lt => cmp_children(ctx, a, b) == Ordering::Less,
            Op2::Le => cmp_children(ctx, a, b) != Ordering::Greater,
            _ => !eval_any_zero(ctx, e),
        },
        K::Un(Op1::Not, a) => !eval_bool(ctx, a),
        K::Un(Op1::D2b, a) => !eval_any_zero(ctx, a),
        K::Valid(h) => ctx.header(h).is_some_and(|h| ctx.phv.valid[h as usize]),
        K::ValidUnion(u) => ctx.union(u).is_some_and(|u| {
            ctx.prog.unions[u as usize]
                .headers
                .iter()
                .any(|&h| ctx.phv.valid[h as usize])
        }),
        K::Cond(c, a, b) => {
            if eval_bool(ctx, c) {
                eval_bool(ctx, a)
            } else {
                eval_bool(ctx, b)
            }
        }
        _ => !eval_any_zero(ctx, e),
    }
}

fn eval_any_zero(ctx: &Ctx, e: &Ex) -> bool {
    if e.wide {
        Arith::is_zero(&eval::<BigInt>(ctx, e))
    } else {
        eval::<i128>(ctx, e) == 0
    }
}

pub fn eval<N: Arith>(ctx: &Ctx, e: &Ex) -> N {
    match &e.k {
        K::Const(v) => N::from_i128(*v),
        K::ConstBig(b) => N::from_be_bytes(&b.to_signed_bytes_be(), true),
        K::Field(f) => read_field(ctx, *f),
        K::DynField(h, off) => match ctx.dyn_field(h, *off) {
            Some(f) => read_field(ctx, f),
            None => N::from_i128(0),
        },
        K::Param(i) => read_param(ctx, *i),
        K::Valid(_) | K::ValidUnion(_) => N::from_bool(eval_bool(ctx, e)),
        K::Bin(op, a, b) => {
            let x = || eval::<N>(ctx, a);
            let y = || eval::<N>(ctx, b);
            match op {
                Op2::Add => x().add(y()),
                Op2::Sub => x().sub(y()),
                Op2::Mul => x().mul(y()),
                Op2::Div => x().div(y()),
                Op2::Mod => x().rem(y()),
                Op2::Shl => x().shl(eval_u32(ctx, b)),
                Op2::Shr => x().shr(eval_u32(ctx, b)),
                Op2::BAnd => x().and(y()),
                Op2::BOr => x().or(y()),
                Op2::BXor => x().xor(y()),
                Op2::TwoCompMod => two_comp_mod(x(), eval_u32(ctx, b)),
                Op2::SatCast => sat_cast(x(), eval_u32(ctx, b)),
                Op2::UsatCast => usat_cast(x(), eval_u32(ctx, b)),
                Op2::Eq | Op2::Ne | Op2::Gt | Op2::Ge | Op2::Lt | Op2::Le | Op2::And | Op2::Or => {
                    N::from_bool(eval_bool(ctx, e))
                }
            }
        }
        K::Un(op, a) => match op {
            Op1::BNot => eval::<N>(ctx, a).not(),
            Op1::Neg => eval::<N>(ctx, a).neg(),
            Op1::Not | Op1::D2b | Op1::B2d => N::from_bool(eval_bool(ctx, a) ^ (*op == Op1::Not)),
        },
        K::Cond(c, a, b) => {
            if eval_bool(ctx, c) {
                eval(ctx, a)
            } else {
                eval(ctx, b)
            }
        }
        K::SizeStack(s) => N::from_i128(i128::from(ctx.phv.stack_next[*s as usize])),
        K::SizeUnionStack(s) => N::from_i128(i128::from(ctx.phv.ustack_next[*s as usize])),
        K::Lookahead { offset, width } => {
            if *width <= 64 {
                N::from_i128(lookahead_small(ctx, *offset, *width))
            } else {
                let b = lookahead(ctx, *offset, *width);
                N::from_be_bytes(&b.to_signed_bytes_be(), true)
            }
        }
    }
}
