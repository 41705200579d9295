//! Primitives being collected for one action, state or hidden action, with jumps whose
//! labels are patched at the end (`if` and loops in an action).

use crate::num::hex_u;
use p4_bmv2_json as j;
use p4_bmv2_json::Tv;
use p4_syntax::Span;

/// Primitives being collected, with labels for jumps.
#[derive(Default)]
pub(crate) struct Body {
    pub prims: Vec<j::Primitive>,
    labels: Vec<Option<usize>>,
    /// (primitive, parameter, label) to patch once labels are placed.
    fixups: Vec<(usize, usize, usize)>,
    pub parser: bool,
    /// The loops being lowered, innermost last: where `continue` and `break` jump.
    pub loops: Vec<LoopLabels>,
    /// Where the first statement lowered into it is (a hidden action is named after its line).
    pub at: Option<Span>,
}

#[derive(Clone, Copy)]
pub(crate) struct LoopLabels {
    pub next: usize,
    pub end: usize,
}

impl Body {
    pub fn new(parser: bool) -> Body {
        Body {
            parser,
            ..Body::default()
        }
    }

    pub fn push(&mut self, op: &str, parameters: Vec<Tv>) {
        self.prims.push(j::Primitive {
            op: op.into(),
            parameters,
            source_info: None,
        });
    }

    pub fn new_label(&mut self) -> usize {
        self.labels.push(None);
        self.labels.len() - 1
    }

    pub fn place_label(&mut self, l: usize) {
        self.labels[l] = Some(self.prims.len());
    }

    pub fn jump(&mut self, l: usize) {
        self.fixups.push((self.prims.len(), 0, l));
        self.push("_jump", vec![Tv::Int(0)]);
    }

    pub fn jump_if_zero(&mut self, cond: Tv, l: usize) {
        self.fixups.push((self.prims.len(), 1, l));
        self.push("_jump_if_zero", vec![cond, Tv::Int(0)]);
    }

    /// The primitives with jump targets resolved.
    pub fn finish(mut self) -> Vec<j::Primitive> {
        for (pi, arg, l) in std::mem::take(&mut self.fixups) {
            let target = self.labels[l].unwrap_or(self.prims.len());
            self.prims[pi].parameters[arg] = hex_u(target as u64);
        }
        self.prims
    }
}
