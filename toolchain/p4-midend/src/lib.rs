//! The midend of `p4-compile`: passes from the typed IR (`p4_sema::ir`) to the typed IR, one
//! module each, that rewrite what P4 allows into what the BMv2 lowering can express. Every
//! pass leaves a program that prints as P4 and checks again (`p4-compile --dump-after PASS`).
//!
//! [`PASSES`] is the order they run in; `p4-compile`'s pass list puts the front end before it
//! and the BMv2 lowering, which expects its output, after it.

mod build;
mod calls;
pub mod control_inline;
pub mod control_locals;
mod hoist;
pub mod inline;
pub mod local_headers;
pub mod parser_fold;
pub mod parser_inline;
pub mod parser_side_effects;
pub mod parser_unroll;
pub mod side_effects;
pub mod subparser_inline;
pub mod table_actions;
pub mod union_stack_index;
mod visit;

use p4_sema::ir::Program;

/// A named IR-to-IR pass.
#[derive(Clone, Copy)]
pub struct Pass {
    /// The name `--dump-after` and `--list-passes` use.
    pub name: &'static str,
    /// One line on what the pass does.
    pub about: &'static str,
    pub run: fn(&mut Program),
}

/// The midend's passes in the order they run. `local-headers` runs first, so that the
/// invalidations it adds are copied with the bodies the other passes inline. `subparser-inline` runs first so that the
/// parser passes see the copies of sub-parsers' states with their constructor arguments in
/// place. `side-effects` runs before the parser passes so that the function bodies
/// `parser-inline` copies have their own side effects ordered already. `control-inline` runs
/// last: an `exit` in a sub-control's body or actions then already has the copy-outs of the
/// actions it leaves before it, and the control's copy-outs go after those.
/// `union-stack-index` runs after it, so that it sees inlined sub-controls' statements too.
/// `parser-unroll` runs after `parser-fold`, whose constants it starts from.
pub const PASSES: &[Pass] = &[
    local_headers::PASS,
    control_locals::PASS,
    subparser_inline::PASS,
    side_effects::PASS,
    parser_side_effects::PASS,
    parser_inline::PASS,
    parser_fold::PASS,
    parser_unroll::PASS,
    inline::PASS,
    table_actions::PASS,
    control_inline::PASS,
    union_stack_index::PASS,
];

/// Runs every pass of [`PASSES`] in order.
pub fn run(p: &mut Program) {
    for pass in PASSES {
        (pass.run)(p);
    }
}
