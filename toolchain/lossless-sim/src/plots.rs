//! The run's PNG plots, drawn by the lab's own plotting module (`lossless_topo.plots`, as
//! `make run` draws them) from the results.json just written: into its directory, and with
//! more than one case each case's into `cases/NAME/`.

use crate::program::{self, Lab, ProgramError};
use std::path::Path;

/// Draws the plots of `results` (a results.json); the PNG files written.
pub fn write(lab: &Lab, results: &Path) -> Result<Vec<String>, ProgramError> {
    let mut cmd = lab.python();
    cmd.args(["-m", "lossless_topo.plots"]).arg(results);
    let out = program::run(
        format!("python -m lossless_topo.plots {}", results.display()),
        lab,
        &mut cmd,
    )?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect())
}
