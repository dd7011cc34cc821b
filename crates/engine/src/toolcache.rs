//! Tool caches: the directories a project's own tools keep between runs (`.pytest_cache`,
//! `.ruff_cache`, …). A cache is read back by the tool that wrote it (ruff skips a file its cache
//! says is clean, pytest's `--lf` runs what its cache says failed, Python runs the bytecode in
//! `__pycache__`), so one a worker planted can hide what a gate would find.
//!
//! So the gates' own tools keep their caches in a fresh directory of validator's for each
//! command ([`scratch`], put in its environment by [`environment`]): no gate reads a cache from
//! the task, or one an earlier run's tools (and the worker's code they ran) left, and none
//! writes one into the task. For a tool that cannot be told where, what its gate writes into a cache
//! during a run is not the worker's change in that run (see `rules::scope`); across runs only
//! where validator keeps a record the worker cannot write: `<state>/tool-caches/<task>.json`,
//! with the state directory out of the worker's reach, each file's inode, length, modification
//! and change time (the change time is the kernel's, which no worker sets back). A cache the
//! worker made or changed (by a name, a `CACHEDIR.TAG`, a `.gitignore` of `*`) is judged.
//! `__pycache__` is no such cache: its bytecode is run in place of the source.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::task::Task;

/// Directories only a tool writes, by the name the tool gives them, and the tool.
pub const DIRECTORIES: &[(&str, &str)] = &[
    (".pytest_cache", "pytest"),
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

/// Whether the state directory lies out of the worker's reach (see
/// [`Task::worker_may_write`]). Only there is a record of validator's worth keeping.
pub fn out_of_reach(state_dir: &Path, task: &Task) -> bool {
    !task.worker_may_write(state_dir)
}

/// A fresh directory for one command's tool caches, removed when dropped. Fresh for every
/// command: a cache a gate's tool kept between runs would be one the worker's code, run by a
/// test gate with validator's rights, could write for the next run's tools to trust.
/// None when none can be made outside the task (a `TMPDIR` inside it): the tools then keep
/// their own, as they would without validator.
pub fn scratch(task: &Task) -> Option<tempfile::TempDir> {
    let dir = tempfile::Builder::new()
        .prefix("validator-caches-")
        .tempdir()
        .ok()?;
    let real = dir.path().canonicalize().ok()?;
    (!real.starts_with(&task.dir) && !real.starts_with(&task.worker_area)).then_some(dir)
}

/// What a gate's command gets in its environment so its tools keep their caches in `home`:
/// Python's bytecode, pytest's cache (added to the `PYTEST_ADDOPTS` validator was given), ruff's
/// and mypy's. A gate's own `env:` comes after, and wins.
pub fn environment(home: &Path) -> Vec<(OsString, OsString)> {
    let mut addopts = std::env::var_os("PYTEST_ADDOPTS").unwrap_or_default();
    if !addopts.is_empty() {
        addopts.push(" ");
    }
    addopts.push(format!(
        "-o {}",
        shell_words::quote(&format!("cache_dir={}", home.join("pytest").display()))
    ));
    vec![
        ("PYTHONPYCACHEPREFIX".into(), home.join("python").into()),
        ("PYTEST_ADDOPTS".into(), addopts),
        ("RUFF_CACHE_DIR".into(), home.join("ruff").into()),
        ("MYPY_CACHE_DIR".into(), home.join("mypy").into()),
    ]
}

/// The record for `task`. Anything unreadable (none yet, a link or a FIFO in its place, a
/// damaged file) records nothing: every cache file counts as the worker's, the safe side; and
/// a state directory the worker can write holds no record at all.
pub fn load(state_dir: &Path, task: &Task) -> Record {
    if !out_of_reach(state_dir, task) {
        return Record::default();
    }
    validator_process::files::read(
        &path(state_dir, &task.name),
        MAX_RECORD_BYTES,
        validator_process::files::Links::Refuse,
    )
    .ok()
    .and_then(|bytes| serde_json::from_slice::<Record>(&bytes).ok())
    .filter(|record| record.schema == SCHEMA)
    .unwrap_or_default()
}

/// Replaces the record for `task`, where the worker cannot write it (else nothing is kept). An
/// empty record where none was is not written. A record that cannot be written costs a scope
/// failure on a cache later, which says what to do; the failure is logged.
pub fn save(state_dir: &Path, task: &Task, mut record: Record) {
    let target = path(state_dir, &task.name);
    if !out_of_reach(state_dir, task) || (record.is_empty() && !target.exists()) {
        return;
    }
    record.schema = SCHEMA.into();
    let text = serde_json::to_vec(&record).unwrap_or_default();
    let written = target
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .map_err(|err| err.to_string())
        .and_then(|()| {
            crate::replace::without_sync(&target, &text).map_err(|err| format!("{err:#}"))
        });
    if let Err(err) = written {
        tracing::warn!(task = %task.name, %err, "cannot record the tool caches the gates wrote");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_names_are_path_components_not_substrings() {
        for cached in [
            ".pytest_cache/v/cache/nodeids",
            ".coverage",
            "sub/.coverage.host.1234.567",
            ".eslintcache",
            ".nyc_output/processinfo/index.json",
        ] {
            assert!(is_cache(cached), "{cached}");
        }
        for judged in [
            ".pytest_cache",
            "src/pkg/__pycache__/mod.cpython-312.pyc",
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
        save(state.path(), &task, record.clone());
        let loaded = load(state.path(), &task);
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
        std::fs::create_dir(dir.path().join(".ruff_cache")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", dir.path().join(".ruff_cache/x")).unwrap();
        assert_eq!(Stamp::of(&task, ".ruff_cache/x"), None);
        assert_eq!(Stamp::of(&task, ".ruff_cache/gone"), None);
    }

    #[test]
    fn an_empty_record_leaves_no_state_behind() {
        let dir = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let task = Task::new("t", dir.path()).unwrap();
        save(state.path(), &task, Record::default());
        assert!(!state.path().join("tool-caches").exists());
    }

    #[test]
    fn a_state_directory_the_worker_can_write_keeps_no_record_and_no_cache() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".pytest_cache")).unwrap();
        std::fs::write(dir.path().join(".pytest_cache/a"), "x").unwrap();
        let task = Task::new("t", dir.path()).unwrap();
        let state = dir.path().join(".validator");
        let mut record = Record::default();
        record.extend([(
            ".pytest_cache/a".to_string(),
            Stamp::of(&task, ".pytest_cache/a").unwrap(),
        )]);
        save(&state, &task, record);
        assert!(!state.exists());
        assert!(load(&state, &task).is_empty());
    }
}
