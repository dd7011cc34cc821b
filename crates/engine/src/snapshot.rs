//! Baselines: what a task directory held before its worker started (`validator snapshot`), so
//! `file-scope` can tell what the worker changed where there is no git. A baseline is only ever
//! taken on request; one taken after the worker began would hide its changes.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::Error;
use crate::task::Task;
use crate::taskdir;

const SCHEMA: &str = "validator.baseline/v1";
/// The largest baseline read: half a million files fit in a fifth of it.
const MAX_BASELINE_BYTES: u64 = 256 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Baseline {
    pub schema: String,
    pub task: String,
    pub taken_at: String,
    pub files: BTreeMap<String, FileState>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileState {
    pub size: u64,
    pub sha256: String,
}

/// Where the baseline of `task` lives under the state directory.
pub fn path(state_dir: &Path, task: &str) -> PathBuf {
    state_dir.join("baselines").join(format!("{task}.json"))
}

/// Records every file of the task directory, and writes it atomically under `state_dir`.
pub fn take(task: &Task, state_dir: &Path) -> Result<(PathBuf, Baseline), Error> {
    let mut files = BTreeMap::new();
    for entry in taskdir::list(task).files {
        let sha256 = hash_file(task, &entry.path).map_err(|source| Error::Read {
            path: entry.path.clone(),
            source,
        })?;
        let size = entry.size();
        files.insert(entry.rel, FileState { size, sha256 });
    }
    let baseline = Baseline {
        schema: SCHEMA.into(),
        task: task.name.clone(),
        taken_at: crate::timestamp::seconds(SystemTime::now()),
        files,
    };
    let target = path(state_dir, &task.name);
    crate::replace::durably(
        &target,
        &serde_json::to_vec_pretty(&baseline).unwrap_or_default(),
    )?;
    Ok((target, baseline))
}

/// The baseline for `task`, if one was taken. A baseline that does not parse is an error: a
/// silent fallback would judge the task against nothing.
pub fn load(state_dir: &Path, task: &str) -> Result<Option<Baseline>, String> {
    let file = path(state_dir, task);
    let bytes = match validator_process::files::read(
        &file,
        MAX_BASELINE_BYTES,
        validator_process::files::Links::Refuse,
    ) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(format!("cannot read baseline {}: {err}", file.display())),
    };
    serde_json::from_slice(&bytes).map(Some).map_err(|err| {
        format!("baseline {} is damaged ({err}); take it again with `validator snapshot {task}` before the worker starts", file.display())
    })
}

/// Why a comparison with a baseline has no answer.
#[derive(Debug)]
pub enum Unjudged {
    /// Its deadline passed (or its run was cancelled) first: the worker decides how many files
    /// and how large, so past it there is no answer rather than part of one.
    Stopped(taskdir::Stopped),
    Unreadable(String),
}

/// Files added, removed or changed in the task directory since `baseline`, by `deadline`.
pub fn changes(
    task: &Task,
    baseline: &Baseline,
    deadline: &taskdir::Deadline<'_>,
) -> Result<BTreeSet<String>, Unjudged> {
    let mut changed = BTreeSet::new();
    let mut present = BTreeSet::new();
    let listing = taskdir::list_by(task, deadline).map_err(Unjudged::Stopped)?;
    // A FIFO, socket or device has no content to compare, and a baseline holds none: it is
    // there, so it counts.
    changed.extend(listing.special);
    for entry in listing.files {
        deadline.check().map_err(Unjudged::Stopped)?;
        present.insert(entry.rel.clone());
        let same = match baseline.files.get(&entry.rel) {
            Some(before) if before.size == entry.size() => {
                hash_file(task, &entry.path).map_err(|err| {
                    Unjudged::Unreadable(format!("cannot read {}: {err}", entry.rel))
                })? == before.sha256
            }
            _ => false,
        };
        if !same {
            changed.insert(entry.rel);
        }
    }
    changed.extend(
        baseline
            .files
            .keys()
            .filter(|rel| !present.contains(*rel))
            .cloned(),
    );
    Ok(changed)
}

/// A listed file's SHA-256, opened the checked way: a FIFO swapped in would block the read.
fn hash_file(task: &Task, path: &Path) -> io::Result<String> {
    let mut file = taskdir::open_inside(task, path).map_err(io::Error::other)?;
    let mut hasher = Sha256::new();
    io::copy(&mut file, &mut hasher)?;
    Ok(format!("{:x}", hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sees_added_removed_and_edited_files() {
        let dir = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("keep"), "same").unwrap();
        std::fs::write(dir.path().join("edit"), "before").unwrap();
        std::fs::write(dir.path().join("gone"), "x").unwrap();
        let task = Task::new("t", dir.path()).unwrap();
        let (_, baseline) = take(&task, state.path()).unwrap();
        assert_eq!(load(state.path(), "t").unwrap(), Some(baseline.clone()));

        std::fs::write(dir.path().join("edit"), "after!").unwrap();
        std::fs::remove_file(dir.path().join("gone")).unwrap();
        std::fs::write(dir.path().join("new"), "n").unwrap();
        let far = taskdir::Deadline::new(
            std::time::Instant::now() + std::time::Duration::from_secs(60),
            None,
        );
        let changed: Vec<_> = changes(&task, &baseline, &far)
            .unwrap()
            .into_iter()
            .collect();
        assert_eq!(changed, ["edit", "gone", "new"]);
    }
}
