//! The midend of `p4-compile`: passes from the typed IR (`p4_sema::ir`) to the typed IR, one
//! module each, that rewrite what P4 allows into what the BMv2 lowering can express. Every
//! pass leaves a program that prints as P4 and checks again (`p4-compile --dump-after PASS`).
//!
//! The order the passes run in is `p4-compile`'s pass list; each names itself here through a
//! [`Pass`] constant.

mod build;
pub mod parser_inline;
pub mod parser_side_effects;
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
