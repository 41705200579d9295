//! Deparsers (`deparsers`).

use super::{L, R};
use crate::program::*;

impl<'a> L<'a> {
    pub(super) fn deparsers(&mut self) -> R<()> {
        for (i, d) in self.j.deparsers.iter().enumerate() {
            let order = d
                .order
                .iter()
                .enumerate()
                .map(|(k, h)| self.header(h, &format!("deparsers[{i}].order[{k}]")))
                .collect::<R<Vec<_>>>()?;
            self.p.deparsers.push(DeparserInfo { order });
        }
        Ok(())
    }

    // ---- pipelines ---------------------------------------------------------------------
}
