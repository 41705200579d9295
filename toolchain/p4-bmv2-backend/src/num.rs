//! Numbers as BMv2 JSON values: hex strings, masks, two's complement, constant integers.

use num_bigint::BigInt;
use num_traits::{One, Signed, Zero};
use p4_bmv2_json as j;
use p4_bmv2_json::Tv;
use p4_sema::ir::{Expr, ExprKind, Value};

pub(crate) fn hex(v: &BigInt) -> Tv {
    let (sign, bytes) = v.to_bytes_be();
    Tv::Hexstr(j::HexStr {
        negative: sign == num_bigint::Sign::Minus,
        bytes,
    })
}

pub(crate) fn hex_u(v: u64) -> Tv {
    hex(&BigInt::from(v))
}

pub(crate) fn mask(w: u32) -> BigInt {
    (BigInt::one() << w) - 1
}

/// `v` as an unsigned value of `w` bits (two's complement for negative numbers).
pub(crate) fn unsigned(v: &BigInt, w: u32) -> BigInt {
    if v.is_negative() {
        let m = BigInt::one() << w;
        ((v % &m) + &m) % m
    } else if w == 0 {
        BigInt::zero()
    } else {
        v & mask(w)
    }
}

/// The integer value of a constant expression.
pub(crate) fn const_int(e: &Expr) -> Option<BigInt> {
    match &e.kind {
        ExprKind::Const(Value::Int(v)) => Some(v.clone()),
        ExprKind::Const(Value::Bool(b)) => Some(BigInt::from(*b as u8)),
        ExprKind::Const(Value::Error(i)) | ExprKind::Const(Value::EnumMember(_, i)) => {
            Some(BigInt::from(*i))
        }
        ExprKind::Cast(x) => const_int(x),
        _ => None,
    }
}
