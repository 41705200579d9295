//! The compiler's pass list, in the order the driver runs it: the one place that says what
//! runs when (the midend's own order is `p4_midend::PASSES`). `p4-compile --list-passes` prints it; `--dump-after NAME` prints the program as
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

/// Front end, the midend's passes in `p4_midend::PASSES` order, lowering.
pub fn passes() -> Vec<Step> {
    let front = [
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
    ];
    let midend = p4_midend::PASSES.iter().map(|p| Step {
        name: p.name,
        about: p.about,
        stage: Stage::Midend(p.run),
    });
    let lower = Step {
        name: "bmv2",
        about: "lowering to BMv2 JSON and the P4Info model",
        stage: Stage::Lower,
    };
    front.into_iter().chain(midend).chain([lower]).collect()
}

/// Whether the program can be printed as P4 after the pass: it produces the typed IR.
pub fn dumpable(name: &str) -> bool {
    passes()
        .iter()
        .any(|s| s.name == name && matches!(s.stage, Stage::Check | Stage::Midend(_)))
}

/// `--list-passes`: one line per pass, name and what it does.
pub fn listing() -> String {
    let steps = passes();
    let width = steps.iter().map(|s| s.name.len()).max().unwrap_or(0);
    steps
        .iter()
        .map(|s| format!("{:width$}  {}\n", s.name, s.about))
        .collect()
}
