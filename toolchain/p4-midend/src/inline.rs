//! `inline`: in actions and functions, direct calls of actions and functions replaced by the
//! callee's body with P4's copy-in/copy-out (see `calls`): `return` becomes assignments and a
//! flag, `exit` performs the copy-outs of the callees it leaves first. Actions that tables
//! invoke stay actions.

use crate::calls::inline_stmts;
use crate::hoist::{Hoister, Mode};
use crate::Pass;
use p4_sema::ir::{DeclKind, Program};

pub const PASS: Pass = Pass {
    name: "inline",
    about: "actions, functions: direct action and function calls inlined with copy-in/copy-out, `return` as a flag, `exit` after the copy-outs",
    run,
};

fn run(p: &mut Program) {
    let mut h = Hoister::new(p, Mode::Control);
    for i in 0..p.decls.len() {
        let (DeclKind::Action { body, .. } | DeclKind::Function { body, .. }) = &p.decls[i].kind
        else {
            continue;
        };
        let stmts = inline_stmts(p, &mut h, body.stmts.clone(), 0);
        if let DeclKind::Action { body, .. } | DeclKind::Function { body, .. } =
            &mut p.decls[i].kind
        {
            body.stmts = stmts;
        }
    }
}
