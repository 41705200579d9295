//! The compiler's pass list, in the order the driver runs it: the one place that says what
//! runs when. `p4-compile --list-passes` prints it; `--dump-after NAME` prints the program as
//! P4 after any pass from `check` on that works on the typed IR.

use p4_sema::ir;

pub enum Stage {
    /// Preprocessed text to the AST (`p4-syntax`).
    Parse,
    /// AST to the typed IR (`p4-sema`).
    Check,
    /// Typed IR to typed IR (`p4-midend`).
    Midend(fn(&mut ir::Program)),
    /// Typed IR to BMv2 JSON and the P4Info model (`p4-bmv2-backend`).
    Lower,
}

pub struct Step {
    pub name: &'static str,
    pub about: &'static str,
    pub stage: Stage,
}

const fn midend(p: p4_midend::Pass) -> Step {
    Step {
        name: p.name,
        about: p.about,
        stage: Stage::Midend(p.run),
    }
}

pub const PASSES: &[Step] = &[
    Step {
        name: "parse",
        about: "lexing and parsing of the preprocessed program",
        stage: Stage::Parse,
    },
    Step {
        name: "check",
        about: "name resolution, type checking and inference, constant folding; the typed IR",
        stage: Stage::Check,
    },
    midend(p4_midend::parser_side_effects::PASS),
    midend(p4_midend::parser_inline::PASS),
    Step {
        name: "bmv2",
        about: "lowering to BMv2 JSON and the P4Info model",
        stage: Stage::Lower,
    },
];

/// Whether the program can be printed as P4 after the pass: it produces the typed IR.
pub fn dumpable(name: &str) -> bool {
    PASSES
        .iter()
        .any(|s| s.name == name && matches!(s.stage, Stage::Check | Stage::Midend(_)))
}

/// `--list-passes`: one line per pass, name and what it does.
pub fn listing() -> String {
    let width = PASSES.iter().map(|s| s.name.len()).max().unwrap_or(0);
    PASSES
        .iter()
        .map(|s| format!("{:width$}  {}\n", s.name, s.about))
        .collect()
}
