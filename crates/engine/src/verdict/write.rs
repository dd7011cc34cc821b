//! The only place a verdict reaches the disk. Each file is written to a temporary file in the
//! same directory, flushed, renamed over the old one and the directory flushed, so a reader sees
//! the previous verdict or the new one, never a part, even across a crash.

use std::path::Path;

use super::{Verdict, feedback};
use crate::error::Error;
use crate::replace;
use crate::staging;

/// Writes `<task>.feedback.md`, then `<task>.verdict.json` into `dir`. The verdict goes last:
/// it is what makes the run's answer current, so its feedback is already there when it appears.
pub fn write(dir: &Path, verdict: &Verdict) -> Result<(), Error> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    let feedback_path = staging::feedback_path(dir, &verdict.task);
    replace::atomically(
        &feedback_path,
        feedback::render(verdict, feedback::Retry::Signal).as_bytes(),
    )?;
    let mut json = verdict.to_json();
    json.push('\n');
    replace::atomically(&staging::verdict_path(dir, &verdict.task), json.as_bytes())?;
    replace::sync_dir(dir)
}
