//! `side-effects`: in actions, functions and apply blocks, `&&`/`||` with a call on the right
//! and `?:` with a call in a branch become `if`s on a temporary (see `hoist`), so the call runs
//! only when the specification says it does and the lowering needs no jumps inside
//! expressions; a call inside a larger expression (or an `if` condition) is computed into a
//! temporary first, for `inline`, with the operands before it saved. Expressions that apply a
//! table are left to the lowering.

use crate::hoist::{Hoister, Mode};
use crate::visit::control_bodies;
use crate::Pass;
use p4_sema::ir::Program;

pub const PASS: Pass = Pass {
    name: "side-effects",
    about: "actions, functions, apply blocks: `&&`/`||`/`?:` with calls turned into `if`s on temporaries, calls in expressions hoisted in evaluation order",
    run,
};

fn run(p: &mut Program) {
    let mut h = Hoister::new(p, Mode::Control);
    control_bodies(p, |p, stmts, _| h.stmts(p, stmts));
}
