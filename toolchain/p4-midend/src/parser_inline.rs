//! `parser-inline`: calls of functions in parser states replaced by the function's body, with
//! P4's copy-in/copy-out, and `return` lowered to assignments (see `calls`). Side effects
//! inside the body are ordered by `parser-side-effects` first.

use crate::calls::inline_stmts;
use crate::hoist::{Hoister, Mode};
use crate::Pass;
use p4_sema::ir::{DeclKind, Program};

pub const PASS: Pass = Pass {
    name: "parser-inline",
    about: "parser states: function calls inlined with copy-in/copy-out, `return` as assignments and a flag",
    run,
};

fn run(p: &mut Program) {
    let mut h = Hoister::new(p, Mode::Parser);
    for i in 0..p.decls.len() {
        let DeclKind::State { stmts, .. } = &p.decls[i].kind else {
            continue;
        };
        let stmts = inline_stmts(p, &mut h, stmts.clone(), 0);
        if let DeclKind::State { stmts: slot, .. } = &mut p.decls[i].kind {
            *slot = stmts;
        }
    }
}
