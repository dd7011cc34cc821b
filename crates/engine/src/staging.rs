//! The staging protocol (docs/staging.md): which files are done signals, where a task's
//! directory and verdict live, and when a verdict is current for a signal.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::done::Signal;
use crate::error::Error;
use crate::task;
use crate::verdict::Verdict;

pub const DONE_SUFFIX: &str = ".done";
const VERDICT_SUFFIX: &str = ".verdict.json";
const FEEDBACK_SUFFIX: &str = ".feedback.md";
/// Verdict files are small; one larger than this was not written by validator.
const MAX_VERDICT_BYTES: u64 = 16 * 1024 * 1024;

/// The task a file name signals: `None` if it is not a done file at all, an error if its
/// name is not a valid task name.
pub fn task_of_signal(file_name: &OsStr) -> Option<Result<String, Error>> {
    let name = file_name.to_str()?;
    let task = name.strip_suffix(DONE_SUFFIX)?;
    Some(task::validate_name(task).map(|()| task.to_owned()))
}

pub fn done_path(staging: &Path, task: &str) -> PathBuf {
    staging.join(format!("{task}{DONE_SUFFIX}"))
}

pub fn verdict_path(dir: &Path, task: &str) -> PathBuf {
    dir.join(format!("{task}{VERDICT_SUFFIX}"))
}

pub fn feedback_path(dir: &Path, task: &str) -> PathBuf {
    dir.join(format!("{task}{FEEDBACK_SUFFIX}"))
}

/// The task's directory: `staging/<task>/` if it exists, else `staging/` (single-task mode).
/// A `staging/<task>` that is a symlink is refused: it would make the validator judge whatever
/// directory the worker points it at.
pub fn task_dir(staging: &Path, task: &str) -> Result<PathBuf, String> {
    let own = staging.join(task);
    match own.symlink_metadata() {
        Ok(meta) if meta.file_type().is_symlink() => Err(format!(
            "staging/{task} is a link; a task directory must be a real directory in staging, so it was not followed"
        )),
        Ok(meta) if meta.is_dir() => Ok(own),
        _ => Ok(staging.to_path_buf()),
    }
}

/// Reads the verdict for `task` from `dir`, if there is a readable one.
pub fn read_verdict(dir: &Path, task: &str) -> Option<Verdict> {
    // Only a regular file, and not through a link: a FIFO planted where a verdict belongs would
    // block the reader, a link would have it read another file.
    let bytes = validator_process::files::read(
        &verdict_path(dir, task),
        MAX_VERDICT_BYTES,
        validator_process::files::Links::Refuse,
    )
    .ok()?;
    // A verdict copied from another task (signed or not) answers nothing here.
    serde_json::from_slice(&bytes)
        .ok()
        .filter(|verdict: &Verdict| verdict.task == task)
}

/// The identity a run answers: the body, its mtime (what makes a verdict current) and its
/// ctime (which no worker can set back, so deleting a verdict and `touch -d` cannot replay an
/// attempt). The watcher records it as `judged` in the task's state once it has published.
pub fn signal_key(signal: &Signal) -> Option<String> {
    let info = crate::verdict::SignalInfo::of(signal);
    match (&info.sha256, &info.mtime, signal.changed) {
        (Some(sha), Some(mtime), Some((secs, nanos))) => {
            Some(format!("{sha} {mtime} {secs}.{nanos:09}"))
        }
        _ => None,
    }
}

/// A verdict is current when it answers exactly this signal: same body hash, same mtime.
pub fn is_current(verdict: &Verdict, signal: &Signal) -> bool {
    let info = crate::verdict::SignalInfo::of(signal);
    info.sha256.is_some()
        && verdict.signal.sha256 == info.sha256
        && verdict.signal.mtime == info.mtime
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_directory_that_is_a_link_is_refused() {
        let staging = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::create_dir(staging.path().join("real")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), staging.path().join("linked")).unwrap();
        assert_eq!(
            task_dir(staging.path(), "real").unwrap(),
            staging.path().join("real")
        );
        assert_eq!(task_dir(staging.path(), "single").unwrap(), staging.path());
        assert!(task_dir(staging.path(), "linked").is_err());
    }

    #[test]
    fn done_files_name_their_task() {
        assert_eq!(
            task_of_signal(OsStr::new("svc-auth.done"))
                .unwrap()
                .unwrap(),
            "svc-auth"
        );
        assert!(task_of_signal(OsStr::new("svc-auth.verdict.json")).is_none());
        assert!(task_of_signal(OsStr::new(".hidden.done")).unwrap().is_err());
        assert!(task_of_signal(OsStr::new("a b.done")).unwrap().is_err());
        assert!(task_of_signal(OsStr::new(".done")).unwrap().is_err());
    }
}
