//! Tool caches: the directories a project's own tools keep between runs (`.pytest_cache`,
//! `__pycache__`, `.ruff_cache`, …), and the record of the files in them that validator's own
//! gates wrote. A test gate's pytest writes `.pytest_cache` on every run; counted as the
//! worker's change, it would fail the next run's `file-scope` for something nobody did.
//!
//! What is left out of "what the worker changed" is exactly what a gate wrote: a file in a
//! tool cache that appeared or changed while a run's programs ran, and which nothing changed
//! since (the same inode, length, modification and change time: the change time is the
//! kernel's, which no worker sets back). A cache the worker made itself, by a name, a
//! `CACHEDIR.TAG` or a `.gitignore` of `*`, is still the worker's change and is judged.
//!
//! The record lives at `<state>/tool-caches/<task>.json`. Where the worker can write the state
//! directory (a hook's project), it could forge entries; an entry only ever leaves out a regular
//! file under one of the cache names below, which the worker's own tests, run by a gate, could
//! write there anyway.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::task::{self, Task};

/// Directories only a tool writes, by the name the tool gives them, and the tool.
pub const DIRECTORIES: &[(&str, &str)] = &[
    (".pytest_cache", "pytest"),
    ("__pycache__", "Python"),
    (".ruff_cache", "ruff"),
    (".mypy_cache", "mypy"),
    (".hypothesis", "Hypothesis"),
    (".nyc_output", "nyc"),
];

/// Files only a tool writes, by their name, and the tool.
pub const FILES: &[(&str, &str)] = &[(".coverage", "coverage.py"), (".eslintcache", "eslint")];

/// Most files recorded for a task: past it the rest are judged as the worker's next time,
/// which is the safe side.
const MAX_RECORDED: usize = 20_000;
/// Largest record read.
const MAX_RECORD_BYTES: u64 = 4 * 1024 * 1024;
const SCHEMA: &str = "validator.tool-caches/v1";

/// Whether `rel`, a task path, lies in a tool cache or is a tool's cache file.
pub fn is_cache(rel: &str) -> bool {
    let mut parts = rel.split('/').peekable();
    while let Some(part) = parts.next() {
        let last = parts.peek().is_none();
        if !last && DIRECTORIES.iter().any(|(name, _)| *name == part) {
            return true;
        }
        if last
            && FILES.iter().any(|(name, _)| {
                part == *name || part.strip_prefix(name).is_some_and(|s| s.starts_with('.'))
            })
        {
            return true;
        }
    }
    false
}

/// A file as it was when recorded: any write, replacement or attribute change since makes a
/// different stamp (the change time moves on every one of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    ino: u64,
    len: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl Stamp {
    /// The stamp of `rel` if it is a regular file reached through no link, else none (a link
    /// or a FIFO in a cache is the worker's change, always judged).
    pub fn of(task: &Task, rel: &str) -> Option<Stamp> {
        let path = task.dir.join(rel);
        let meta = path.symlink_metadata().ok()?;
        if !meta.is_file() || path.canonicalize().ok()? != path {
            return None;
        }
        let nanos = |secs: i64, nsec: i64| i128::from(secs) * 1_000_000_000 + i128::from(nsec);
        Some(Stamp {
            ino: meta.ino(),
            len: meta.len(),
            mtime_ns: nanos(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: nanos(meta.ctime(), meta.ctime_nsec()),
        })
    }
}

/// The tool-cache files validator's gates wrote for a task, as they were then.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    schema: String,
    files: BTreeMap<String, Stamp>,
}

impl Record {
    /// Whether `rel` is as a gate left it.
    pub fn holds(&self, rel: &str, stamp: &Stamp) -> bool {
        self.files.get(rel) == Some(stamp)
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Adds what a gate wrote, up to the cap.
    pub fn extend(&mut self, written: impl IntoIterator<Item = (String, Stamp)>) {
        for (rel, stamp) in written {
            if self.files.len() >= MAX_RECORDED && !self.files.contains_key(&rel) {
                tracing::warn!(
                    "more than {MAX_RECORDED} files written into tool caches; the rest count as the worker's next time"
                );
                return;
            }
            self.files.insert(rel, stamp);
        }
    }
}

fn path(state_dir: &Path, task: &str) -> PathBuf {
    state_dir.join("tool-caches").join(format!("{task}.json"))
}

/// The record's own path as a task path would name it (its directory resolved, the file
/// itself not), so a listing of the task can leave it out: it is validator's file, not a
/// change of the worker's, where the state directory lies inside the task (`check`).
pub fn record_path(state_dir: &Path, task: &str) -> PathBuf {
    let record = path(state_dir, task);
    match (record.parent().map(Path::canonicalize), record.file_name()) {
        (Some(Ok(dir)), Some(name)) => dir.join(name),
        _ => record,
    }
}

/// The record for `task`. Anything unreadable (none yet, a link or a FIFO in its place, a
/// damaged file) records nothing: every cache file counts as the worker's, the safe side.
pub fn load(state_dir: &Path, task: &str) -> Record {
    if task::validate_name(task).is_err() {
        return Record::default();
    }
    crate::files::read(
        &path(state_dir, task),
        MAX_RECORD_BYTES,
        crate::files::Links::Refuse,
    )
    .ok()
    .and_then(|bytes| serde_json::from_slice::<Record>(&bytes).ok())
    .filter(|record| record.schema == SCHEMA)
    .unwrap_or_default()
}

/// Replaces the record for `task`. An empty record where none was is not written, so a run
/// whose gates write no cache leaves no state behind. A record that cannot be written costs a
/// scope failure on a cache later, which says what to do; the failure is logged.
pub fn save(state_dir: &Path, task: &str, mut record: Record) {
    let target = path(state_dir, task);
    if task::validate_name(task).is_err() || (record.is_empty() && !target.exists()) {
        return;
    }
    record.schema = SCHEMA.into();
    let text = serde_json::to_vec(&record).unwrap_or_default();
    let written = target
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .map_err(|err| err.to_string())
        .and_then(|()| {
            crate::atomic::replace_unsynced(&target, &text).map_err(|err| format!("{err:#}"))
        });
    if let Err(err) = written {
        tracing::warn!(task, %err, "cannot record the tool caches the gates wrote");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_names_are_path_components_not_substrings() {
        for cached in [
            ".pytest_cache/v/cache/nodeids",
            "src/pkg/__pycache__/mod.cpython-312.pyc",
            ".coverage",
            "sub/.coverage.host.1234.567",
            ".eslintcache",
            ".nyc_output/processinfo/index.json",
        ] {
            assert!(is_cache(cached), "{cached}");
        }
        for judged in [
            ".pytest_cache",
            "__pycache__",
            "src/my.pytest_cache/x",
            "coverage.py",
            ".coveragerc",
            "src/pytest_cache/x",
            "README.md",
        ] {
            assert!(!is_cache(judged), "{judged}");
        }
    }

    #[test]
    fn a_stamp_changes_with_every_write_and_the_record_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let task = Task::new("t", dir.path()).unwrap();
        std::fs::create_dir(dir.path().join(".pytest_cache")).unwrap();
        std::fs::write(dir.path().join(".pytest_cache/a"), "one").unwrap();
        let stamp = Stamp::of(&task, ".pytest_cache/a").unwrap();
        let mut record = Record::default();
        record.extend([(".pytest_cache/a".to_string(), stamp)]);
        save(state.path(), "t", record);
        let loaded = load(state.path(), "t");
        assert!(loaded.holds(".pytest_cache/a", &stamp));

        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(dir.path().join(".pytest_cache/a"), "two").unwrap();
        let after = Stamp::of(&task, ".pytest_cache/a").unwrap();
        assert!(!loaded.holds(".pytest_cache/a", &after));
    }

    #[test]
    fn links_and_missing_files_have_no_stamp() {
        let dir = tempfile::tempdir().unwrap();
        let task = Task::new("t", dir.path()).unwrap();
        std::fs::create_dir(dir.path().join("__pycache__")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", dir.path().join("__pycache__/x")).unwrap();
        assert_eq!(Stamp::of(&task, "__pycache__/x"), None);
        assert_eq!(Stamp::of(&task, "__pycache__/gone"), None);
    }

    #[test]
    fn an_empty_record_leaves_no_state_behind() {
        let state = tempfile::tempdir().unwrap();
        save(state.path(), "t", Record::default());
        assert!(!state.path().join("tool-caches").exists());
    }
}
