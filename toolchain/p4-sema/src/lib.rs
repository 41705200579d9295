//! The semantic front end of `p4-compile`: name resolution, type checking and inference and
//! constant folding over the `p4_syntax` AST, producing the typed IR in [`ir`].

mod check;
pub mod eval;
mod expr;
pub mod ir;

use p4_syntax::{ast, Diagnostics};

/// Checks a parsed program. Reports every independent error in `diags` and returns the typed
/// program only when there were none (warnings do not count).
pub fn check(program: &ast::Program, diags: &mut Diagnostics) -> Option<ir::Program> {
    let before = diags.error_count();
    let mut c = check::Checker::new(diags);
    c.program(program);
    let p = c.p;
    if diags.error_count() > before {
        None
    } else {
        Some(p)
    }
}
