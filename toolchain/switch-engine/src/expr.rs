//! The expression IR: compiled expressions over indices (names are resolved at load time).
//! Their evaluation is `eval.rs`; the loader builds them, the program and the executor hold them.

use num_bigint::BigInt;

pub type HeaderId = u32;
pub type FieldId = u32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op2 {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Shl,
    Shr,
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
    And,
    Or,
    BAnd,
    BOr,
    BXor,
    TwoCompMod,
    SatCast,
    UsatCast,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op1 {
    Not,
    BNot,
    Neg,
    D2b,
    B2d,
}

/// A header chosen at run time (stack element, union member) or at load time.
#[derive(Debug, Clone)]
pub enum HRef {
    Static(HeaderId),
    Stack(u32, Box<Ex>),
    UnionMember(URef, u32),
}

/// A header union chosen at run time or at load time.
#[derive(Debug, Clone)]
pub enum URef {
    Static(u32),
    Stack(u32, Box<Ex>),
}

/// A field: fixed, or at an offset in a header chosen at run time.
#[derive(Debug, Clone)]
pub enum FieldLoc {
    Static(FieldId),
    Dyn(HRef, u32),
}

#[derive(Debug, Clone)]
pub enum K {
    Const(i128),
    ConstBig(BigInt),
    Field(FieldId),
    DynField(HRef, u32),
    Valid(HRef),
    ValidUnion(URef),
    /// Action parameter (`runtime_data` / `local`).
    Param(u32),
    Bin(Op2, Box<Ex>, Box<Ex>),
    Un(Op1, Box<Ex>),
    Cond(Box<Ex>, Box<Ex>, Box<Ex>),
    SizeStack(u32),
    SizeUnionStack(u32),
    /// Parser lookahead relative to the cursor; out of packet reads as 0 (callers check).
    Lookahead {
        offset: i64,
        width: u32,
    },
}

/// An expression node. `wide` marks values that may not fit i128 arithmetic.
#[derive(Debug, Clone)]
pub struct Ex {
    pub k: K,
    pub wide: bool,
}

/// Action data argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arg {
    N(u64),
    W(BigInt),
}
