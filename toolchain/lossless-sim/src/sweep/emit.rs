//! A planned sweep as work for an existing cluster: a Slurm job array or a Kubernetes indexed
//! Job whose task I runs `lossless-sim sweep --point I --out DIR`. The cluster's nodes see
//! DIR, the lab checkout and this binary at the same paths (a shared filesystem, or a volume
//! and an image that hold them there); `lossless-sim collect DIR` merges the results.

use super::error::SweepError;
use super::plan::Tools;
use std::path::{Path, PathBuf};

/// `text` as one word for sh.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

fn task_command(dir: &Path, tools: &Tools, index: &str) -> String {
    format!(
        "{} sweep --point \"{index}\" --out {} --lab {} --pipeline {}",
        quote(&tools.exe.to_string_lossy()),
        quote(&dir.to_string_lossy()),
        quote(&tools.lab.to_string_lossy()),
        quote(&tools.pipeline.to_string_lossy()),
    )
}

fn write(path: PathBuf, text: &str) -> Result<PathBuf, SweepError> {
    std::fs::write(&path, text).map_err(|e| SweepError::io(&path, e))?;
    Ok(path)
}

/// `DIR/sweep.sbatch`: an array of `points` tasks (at most `jobs` at once when given), one CPU
/// each, logs in `DIR/logs/`.
pub fn slurm(
    dir: &Path,
    tools: &Tools,
    points: usize,
    jobs: Option<usize>,
) -> Result<PathBuf, SweepError> {
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).map_err(|e| SweepError::io(&logs, e))?;
    let throttle = jobs.map_or(String::new(), |j| format!("%{j}"));
    let text = format!(
        "#!/bin/sh\n\
         #SBATCH --job-name=lossless-sweep\n\
         #SBATCH --array=0-{last}{throttle}\n\
         #SBATCH --ntasks=1\n\
         #SBATCH --cpus-per-task=1\n\
         #SBATCH --output={logs}/%a.out\n\
         # One point of the sweep planned in {dir} per task (lossless-sim sweep --emit slurm).\n\
         exec {command}\n",
        last = points.saturating_sub(1),
        logs = logs.display(),
        dir = dir.display(),
        command = task_command(dir, tools, "$SLURM_ARRAY_TASK_ID"),
    );
    write(dir.join("sweep.sbatch"), &text)
}

/// `DIR/sweep-job.yaml`: an indexed Job of `points` completions (`jobs` pods at once, else
/// all), one CPU each, DIR mounted from the PersistentVolumeClaim `pvc` at its own path.
pub fn k8s(
    dir: &Path,
    tools: &Tools,
    points: usize,
    jobs: Option<usize>,
    image: &str,
    pvc: &str,
) -> Result<PathBuf, SweepError> {
    let json = |s: &str| serde_json::Value::from(s).to_string();
    let text = format!(
        "# One point of the sweep planned in {dir} per index (lossless-sim sweep --emit k8s).\n\
         apiVersion: batch/v1\n\
         kind: Job\n\
         metadata:\n  name: lossless-sweep\n\
         spec:\n  completionMode: Indexed\n  completions: {points}\n  parallelism: {parallelism}\n\
         \x20 backoffLimit: 0\n\
         \x20 template:\n    spec:\n      restartPolicy: Never\n      containers:\n\
         \x20       - name: point\n          image: {image}\n\
         \x20         command: [\"/bin/sh\", \"-c\", {command}]\n\
         \x20         resources:\n            requests: {{cpu: \"1\"}}\n            limits: {{cpu: \"1\"}}\n\
         \x20         volumeMounts:\n            - name: sweep\n              mountPath: {mount}\n\
         \x20     volumes:\n        - name: sweep\n          persistentVolumeClaim:\n            claimName: {pvc}\n",
        dir = dir.display(),
        parallelism = jobs.unwrap_or(points),
        image = json(image),
        command = json(&format!(
            "exec {}",
            task_command(dir, tools, "$JOB_COMPLETION_INDEX")
        )),
        mount = json(&dir.to_string_lossy()),
        pvc = json(pvc),
    );
    write(dir.join("sweep-job.yaml"), &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_survive_quotes() {
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
    }
}
