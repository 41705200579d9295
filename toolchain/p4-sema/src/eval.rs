//! Constant folding with P4's arithmetic: `bit<W>` wraps modulo 2^W, `int<W>` wraps in two's
//! complement, `int` is exact. Errors are [`EvalError`]s for the caller to place at a span.

use crate::ir::{Type, Value};
use num_bigint::BigInt;
use num_traits::{One, Signed, ToPrimitive, Zero};
use p4_syntax::ast::{BinOp, UnOp};
use std::fmt;

/// Arbitrary-precision shifts stay below this so that a constant cannot exhaust memory; widths
/// are limited to 2^16 bits anyway.
const MAX_INT_SHIFT: u32 = 1 << 20;

/// `value` reduced to the range of `ty`; unchanged for types without a width.
pub fn wrap(value: BigInt, ty: &Type) -> BigInt {
    match ty {
        Type::Bit(w) => {
            let m = BigInt::one() << *w;
            let r = value % &m;
            if r.is_negative() {
                r + m
            } else {
                r
            }
        }
        Type::Int(w) => {
            if *w == 0 {
                return BigInt::zero();
            }
            let m = BigInt::one() << *w;
            let half = BigInt::one() << (*w - 1);
            let mut r = value % &m;
            if r.is_negative() {
                r += &m;
            }
            if r >= half {
                r - m
            } else {
                r
            }
        }
        Type::SerEnum(_, u) => wrap(value, u),
        _ => value,
    }
}

/// Whether `value` is representable in `ty` without wrapping.
pub fn fits(value: &BigInt, ty: &Type) -> bool {
    wrap(value.clone(), ty) == *value
}

/// Why a constant expression could not be folded; the checker reports it at the expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvalError {
    /// An operand of the wrong kind (the checker's types make this a compiler bug).
    NotInteger,
    NotBoolean,
    DivisionByZero,
    /// `/` or `%` with a negative operand: `x op y`.
    NegativeDivision {
        op: BinOp,
        x: BigInt,
        y: BigInt,
    },
    /// `|+|`/`|-|` on a type without a width.
    SaturatingNeedsWidth,
    /// `++` with an operand without a width.
    ConcatNeedsWidth,
    NegativeShift(BigInt),
    /// A shift of an `int` by more than the folder allows.
    ShiftTooLarge(BigInt),
    /// An operator the folder does not evaluate on values.
    NotFoldable(BinOp),
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            EvalError::NotInteger => write!(f, "expected an integer value"),
            EvalError::NotBoolean => write!(f, "expected a boolean value"),
            EvalError::DivisionByZero => write!(f, "division by zero"),
            EvalError::NegativeDivision { op, x, y } => write!(
                f,
                "'{}' is only defined on non-negative values: {x} {} {y}",
                op.symbol(),
                op.symbol()
            ),
            EvalError::SaturatingNeedsWidth => {
                write!(f, "saturating arithmetic needs a fixed-width type")
            }
            EvalError::ConcatNeedsWidth => write!(f, "'++' needs fixed-width operands"),
            EvalError::NegativeShift(y) => write!(f, "negative shift amount {y}"),
            EvalError::ShiftTooLarge(y) => write!(f, "shift amount {y} too large for an int"),
            EvalError::NotFoldable(op) => write!(f, "'{}' cannot be folded here", op.symbol()),
        }
    }
}

impl std::error::Error for EvalError {}

type R<T> = Result<T, EvalError>;

fn int(v: &Value) -> R<&BigInt> {
    match v {
        Value::Int(i) => Ok(i),
        _ => Err(EvalError::NotInteger),
    }
}

fn boolean(v: &Value) -> R<bool> {
    match v {
        Value::Bool(b) => Ok(*b),
        _ => Err(EvalError::NotBoolean),
    }
}

/// The bits of a value of `ty` as a non-negative number (two's complement for `int<W>`).
fn unsigned(v: &BigInt, ty: &Type) -> BigInt {
    match ty {
        Type::Int(w) => wrap(v.clone(), &Type::Bit(*w)),
        _ => v.clone(),
    }
}

pub fn unary(op: UnOp, v: &Value, ty: &Type) -> R<Value> {
    Ok(match op {
        UnOp::Not => Value::Bool(!boolean(v)?),
        UnOp::Plus => v.clone(),
        UnOp::Neg => Value::Int(wrap(-int(v)?.clone(), ty)),
        UnOp::BitNot => Value::Int(wrap(-int(v)?.clone() - 1, ty)),
    })
}

/// `a op b` where `a` and `b` already have the operand type `ty` (for shifts, `a` has `ty` and
/// `b` is a non-negative amount); the result has `ty`, or `bool` for comparisons.
pub fn binary(op: BinOp, a: &Value, b: &Value, ty: &Type) -> R<Value> {
    use BinOp::*;
    if matches!(op, And | Or) {
        let (x, y) = (boolean(a)?, boolean(b)?);
        return Ok(Value::Bool(if op == And { x && y } else { x || y }));
    }
    if matches!(op, Eq | Ne) {
        let same = a == b;
        return Ok(Value::Bool(if op == Eq { same } else { !same }));
    }
    let (x, y) = (int(a)?, int(b)?);
    let r = match op {
        Add => x + y,
        Sub => x - y,
        Mul => x * y,
        Div | Mod => {
            if y.is_zero() {
                return Err(EvalError::DivisionByZero);
            }
            if x.is_negative() || y.is_negative() {
                return Err(EvalError::NegativeDivision {
                    op,
                    x: x.clone(),
                    y: y.clone(),
                });
            }
            if op == Div {
                x / y
            } else {
                x % y
            }
        }
        AddSat | SubSat => {
            let r = if op == AddSat { x + y } else { x - y };
            let (lo, hi) = match ty {
                Type::Bit(w) => (BigInt::zero(), (BigInt::one() << *w) - 1),
                Type::Int(w) if *w > 0 => (
                    -(BigInt::one() << (*w - 1)),
                    (BigInt::one() << (*w - 1)) - 1,
                ),
                _ => return Err(EvalError::SaturatingNeedsWidth),
            };
            return Ok(Value::Int(r.clamp(lo, hi)));
        }
        Shl | Shr => {
            if y.is_negative() {
                return Err(EvalError::NegativeShift(y.clone()));
            }
            // Shifting a fixed-width value by its width or more leaves only sign or zero bits.
            let amount = match (y.to_u32(), ty) {
                (Some(n), Type::InfInt) if n > MAX_INT_SHIFT => {
                    return Err(EvalError::ShiftTooLarge(y.clone()))
                }
                (Some(n), _) => n,
                (None, Type::InfInt) => return Err(EvalError::ShiftTooLarge(y.clone())),
                (None, _) => u32::MAX,
            };
            let limit = match ty {
                Type::Bit(w) | Type::Int(w) => *w,
                _ => u32::MAX,
            };
            if op == Shl {
                if amount >= limit && limit != u32::MAX {
                    BigInt::zero()
                } else {
                    x << amount
                }
            } else if amount >= limit && limit != u32::MAX {
                if x.is_negative() {
                    -BigInt::one()
                } else {
                    BigInt::zero()
                }
            } else {
                // BigInt's `>>` rounds towards negative infinity: an arithmetic shift.
                x >> amount
            }
        }
        Lt => return Ok(Value::Bool(x < y)),
        Le => return Ok(Value::Bool(x <= y)),
        Gt => return Ok(Value::Bool(x > y)),
        Ge => return Ok(Value::Bool(x >= y)),
        // BigInt's bitwise operators use two's complement, as `int<W>` does.
        BitAnd => x & y,
        BitOr => x | y,
        BitXor => x ^ y,
        Concat | Mask | Range | And | Or | Eq | Ne => return Err(EvalError::NotFoldable(op)),
    };
    Ok(Value::Int(wrap(r, ty)))
}

/// `a ++ b`: the result type has the left operand's signedness and the sum of widths.
pub fn concat(a: &Value, a_ty: &Type, b: &Value, b_ty: &Type, result: &Type) -> R<Value> {
    let wb = match b_ty {
        Type::Bit(w) | Type::Int(w) => *w,
        _ => return Err(EvalError::ConcatNeedsWidth),
    };
    let r = (unsigned(int(a)?, a_ty) << wb) | unsigned(int(b)?, b_ty);
    Ok(Value::Int(wrap(r, result)))
}

/// `v[hi:lo]` of a value of type `ty`; the result is `bit<hi-lo+1>`.
pub fn slice(v: &Value, ty: &Type, hi: u32, lo: u32) -> R<Value> {
    let bits = unsigned(int(v)?, ty) >> lo;
    Ok(Value::Int(wrap(bits, &Type::Bit(hi - lo + 1))))
}

/// Explicit or implicit cast of a constant between scalar types (the checker has already
/// decided that the cast is legal).
pub fn cast(v: &Value, from: &Type, to: &Type) -> R<Value> {
    Ok(match (v, to) {
        (Value::Bool(b), Type::Bit(_) | Type::Int(_) | Type::InfInt) => {
            Value::Int(if *b { BigInt::one() } else { BigInt::zero() })
        }
        (Value::Int(i), Type::Bool) => Value::Bool(!unsigned(i, from).is_zero()),
        // Changing signedness keeps the bits; changing width keeps the low bits of the two's
        // complement representation (spec 8.11.1): both are a wrap into the target type.
        (Value::Int(i), _) => Value::Int(wrap(i.clone(), to)),
        _ => v.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i(v: i64) -> Value {
        Value::Int(BigInt::from(v))
    }

    #[test]
    fn bit_arithmetic_wraps_modulo_two_to_the_width() {
        // Spec 8.6: bit<W> operations are modulo 2^W.
        assert_eq!(binary(BinOp::Add, &i(250), &i(10), &Type::Bit(8)), Ok(i(4)));
        assert_eq!(binary(BinOp::Sub, &i(1), &i(2), &Type::Bit(8)), Ok(i(255)));
        assert_eq!(binary(BinOp::Mul, &i(16), &i(17), &Type::Bit(8)), Ok(i(16)));
        assert_eq!(unary(UnOp::Neg, &i(1), &Type::Bit(4)), Ok(i(15)));
        assert_eq!(unary(UnOp::BitNot, &i(0x0f), &Type::Bit(8)), Ok(i(0xf0)));
    }

    #[test]
    fn signed_arithmetic_wraps_in_twos_complement() {
        assert_eq!(
            binary(BinOp::Add, &i(127), &i(1), &Type::Int(8)),
            Ok(i(-128))
        );
        assert_eq!(unary(UnOp::Neg, &i(-128), &Type::Int(8)), Ok(i(-128)));
        assert_eq!(unary(UnOp::BitNot, &i(0), &Type::Int(8)), Ok(i(-1)));
        assert_eq!(binary(BinOp::Shr, &i(-8), &i(1), &Type::Int(8)), Ok(i(-4)));
        assert_eq!(binary(BinOp::Shr, &i(-8), &i(9), &Type::Int(8)), Ok(i(-1)));
    }

    #[test]
    fn infinite_precision_is_exact_and_division_needs_positive_operands() {
        let big = binary(BinOp::Shl, &i(1), &i(70), &Type::InfInt).unwrap();
        assert_eq!(big, Value::Int(BigInt::one() << 70u32));
        assert_eq!(binary(BinOp::Div, &i(7), &i(2), &Type::InfInt), Ok(i(3)));
        assert!(binary(BinOp::Div, &i(-7), &i(2), &Type::InfInt).is_err());
        assert!(binary(BinOp::Mod, &i(7), &i(0), &Type::Bit(8)).is_err());
    }

    #[test]
    fn saturating_arithmetic_clamps() {
        assert_eq!(
            binary(BinOp::AddSat, &i(250), &i(10), &Type::Bit(8)),
            Ok(i(255))
        );
        assert_eq!(binary(BinOp::SubSat, &i(1), &i(2), &Type::Bit(8)), Ok(i(0)));
        assert_eq!(
            binary(BinOp::SubSat, &i(-100), &i(100), &Type::Int(8)),
            Ok(i(-128))
        );
        assert_eq!(
            binary(BinOp::AddSat, &i(100), &i(100), &Type::Int(8)),
            Ok(i(127))
        );
    }

    #[test]
    fn shifts_past_the_width_give_zero() {
        assert_eq!(binary(BinOp::Shl, &i(1), &i(8), &Type::Bit(8)), Ok(i(0)));
        assert_eq!(binary(BinOp::Shl, &i(3), &i(7), &Type::Bit(8)), Ok(i(128)));
        assert_eq!(
            binary(BinOp::Shr, &i(0x80), &i(100), &Type::Bit(8)),
            Ok(i(0))
        );
    }

    #[test]
    fn concat_and_slice_work_on_bits() {
        let r = concat(
            &i(0xab),
            &Type::Bit(8),
            &i(-1),
            &Type::Int(4),
            &Type::Bit(12),
        );
        assert_eq!(r, Ok(i(0xabf)));
        assert_eq!(slice(&i(0xabcd), &Type::Bit(16), 11, 4), Ok(i(0xbc)));
        assert_eq!(slice(&i(-1), &Type::Int(8), 7, 7), Ok(i(1)));
    }

    #[test]
    fn casts_keep_low_bits_and_reinterpret_sign() {
        // Spec 8.11.1: int<W> -> bit<W> keeps the bits; narrowing truncates.
        assert_eq!(cast(&i(-1), &Type::Int(8), &Type::Bit(8)), Ok(i(255)));
        assert_eq!(cast(&i(255), &Type::Bit(8), &Type::Int(8)), Ok(i(-1)));
        assert_eq!(cast(&i(0x1ff), &Type::Bit(9), &Type::Bit(8)), Ok(i(0xff)));
        assert_eq!(cast(&i(-1), &Type::Int(8), &Type::Int(16)), Ok(i(-1)));
        assert_eq!(cast(&i(300), &Type::InfInt, &Type::Bit(8)), Ok(i(44)));
        assert_eq!(
            cast(&Value::Bool(true), &Type::Bool, &Type::Bit(1)),
            Ok(i(1))
        );
        assert_eq!(
            cast(&i(1), &Type::Bit(1), &Type::Bool),
            Ok(Value::Bool(true))
        );
        assert!(fits(&BigInt::from(255), &Type::Bit(8)));
        assert!(!fits(&BigInt::from(256), &Type::Bit(8)));
        assert!(!fits(&BigInt::from(128), &Type::Int(8)));
    }
}
