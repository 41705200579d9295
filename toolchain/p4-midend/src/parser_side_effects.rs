//! `parser-side-effects`: side effects in parser states moved out of expressions into
//! statements of their own, in P4's evaluation order (see `hoist`), so that the BMv2 lowering,
//! whose parser states have no jumps, sees `if`s (states selected on the condition) and
//! function calls only as whole statements (inlined by `parser-inline`).

use crate::hoist::{Hoister, Mode};
use crate::Pass;
use p4_sema::ir::{DeclKind, Program, Transition};

pub const PASS: Pass = Pass {
    name: "parser-side-effects",
    about: "parser states: `&&`/`||`/`?:` with calls and nested function calls hoisted into statements, in evaluation order",
    run,
};

fn run(p: &mut Program) {
    let mut h = Hoister::new(p, Mode::Parser);
    for i in 0..p.decls.len() {
        let DeclKind::State { stmts, transition } = &p.decls[i].kind else {
            continue;
        };
        let (stmts, mut transition) = (stmts.clone(), transition.clone());
        let mut out = h.stmts(p, stmts);
        if let Transition::Select { exprs, span, .. } = &mut transition {
            if exprs.iter().any(|e| h.needs(e)) {
                let items = std::mem::take(exprs);
                *exprs = h.list(p, items, *span, &mut out);
            }
        }
        p.decls[i].kind = DeclKind::State {
            stmts: out,
            transition,
        };
    }
}
