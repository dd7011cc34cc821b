//! Speculative runs: a task's gates run while its worker is still writing its answer, so the
//! verdict is ready when it says done. What this module owns is the guarantee that makes that
//! safe: a speculative outcome stands for a gate only where a run at done would give the same.
//!
//! - Which gates: those the cache may reuse that start a program (`lint`, `test`) and do not
//!   judge the change (`changed_only`). The gates that read the done signal or the change set
//!   (`status`, `file-scope`, `content`, a review) always run at done; they are cheap.
//! - On what: the whole task directory, every entry's name, type, inode, size, modification and
//!   change time ([`TreeStamp`]). The change time is the kernel's, which no worker sets back; a
//!   stamp is *settled* only when its newest change is older than [`SETTLE`] before it was
//!   taken, so a write in the same tick of the file system's clock cannot hide behind an equal
//!   time. The stamp is taken before the run, after it and at done with every regular file's
//!   bytes too (times miss a write through a mapping whose page is already dirty): a run whose
//!   tree moved under it (a write during the run, a test that changes its own inputs) is never
//!   used. A task with a link out of it, or more than [`MAX_CONTENT_BYTES`] in its files, is
//!   not speculated on.
//! - For whom: the same task, attempt (its commands see `VALIDATOR_ATTEMPT`), rules (the same
//!   loaded rules, so the same environment and definitions), contract (as written) and, per
//!   gate, the same definition and program (path, size, modification time), and a run that
//!   took no longer than the gate may take at done.
//!
//! The front end (the watcher) decides when to speculate and cancels a run whose inputs
//! changed; the pipeline records outcomes in a [`Speculated`] and takes them from one.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

use crate::config::Gate;
use crate::rules::{Outcome, Rule};
use crate::task::Task;
use crate::verdict::GateOutcome;

/// How much older than the stamp its newest change must be, on a file system that keeps
/// nanoseconds: well past the kernel clock's tick (a jiffy), so a later write moves a time.
pub const SETTLE: Duration = Duration::from_millis(100);
/// The same on a file system that keeps whole seconds (no change time has nanoseconds): two
/// writes within one second share a time there.
pub const SETTLE_COARSE: Duration = Duration::from_millis(2500);
/// Most entries stamped; a larger tree is not speculated on (its stamp is no cheap look).
pub const MAX_ENTRIES: usize = 200_000;
/// Most bytes of the task's files read for a stamp of their contents; a task whose files hold
/// more is not speculated on (its contents are no cheap look either).
pub const MAX_CONTENT_BYTES: u64 = 256 * 1024 * 1024;

/// Every entry of a task directory as the kernel describes it, hashed; and, for the stamps a
/// speculative outcome is judged by, every regular file's bytes.
///
/// The times alone cannot say a file is unchanged: a write through a shared mapping whose page
/// is already dirty moves neither time (the kernel sets them at the first write fault only),
/// so a worker could change a file after a speculative run, its stamp as before. The quiet
/// check (every half `quiet`) looks at the entries alone; the stamps before a run, after it
/// and at done read the contents too ([`TreeStamp::with_contents`]).
///
/// A link that leaves the task (or cannot be resolved) makes no stamp: what a gate reads
/// through it is no entry of the task's, and a run at done may read something else there (the
/// cache refuses such a key for the same reason).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeStamp {
    digest: [u8; 32],
    /// The files' bytes, hashed, in the walk's order; `None` when not read.
    contents: Option<[u8; 32]>,
    /// Whether the newest change time is older than [`SETTLE`] (or [`SETTLE_COARSE`]) before
    /// the stamp was taken.
    settled: bool,
}

impl TreeStamp {
    /// The stamp of `task`'s directory (its protocol files left out), its entries only; `None`
    /// when it cannot be taken whole: an unreadable directory, more than [`MAX_ENTRIES`]
    /// entries, a link out of the task.
    pub fn of(task: &Task, unstamped: &Unstamped<'_>) -> Option<TreeStamp> {
        Self::take(task, unstamped, false)
    }

    /// The stamp of `task`'s directory with its files' contents; `None` as [`Self::of`], and
    /// for a file that cannot be read or files over [`MAX_CONTENT_BYTES`].
    pub fn with_contents(task: &Task, unstamped: &Unstamped<'_>) -> Option<TreeStamp> {
        Self::take(task, unstamped, true)
    }

    fn take(task: &Task, unstamped: &Unstamped<'_>, read: bool) -> Option<TreeStamp> {
        let taken = nanos(SystemTime::now());
        let mut hash = Sha256::new();
        let mut contents = read.then(|| (Sha256::new(), MAX_CONTENT_BYTES));
        let mut newest = i128::MIN;
        let mut fine = false;
        let walker = walkdir::WalkDir::new(&task.dir)
            .follow_links(false)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|entry| {
                !task.ignore.iter().any(|ignored| entry.path() == ignored)
                    && !unstamped.covers_path(task, entry.path())
            });
        for (count, entry) in walker.enumerate() {
            if count >= MAX_ENTRIES {
                return None;
            }
            let entry = entry.ok()?;
            let meta = entry.metadata().ok()?;
            if meta.file_type().is_symlink() && !links_inside(task, unstamped, entry.path()) {
                return None;
            }
            let rel = entry.path().strip_prefix(&task.dir).ok()?;
            let name = rel.as_os_str().as_encoded_bytes();
            hash.update((name.len() as u64).to_le_bytes());
            hash.update(name);
            if meta.is_dir() {
                // A directory's entries are stamped each on its own: its times and size, which
                // move when a passed-over entry in it comes or goes, would add nothing else.
                let numbers: [u128; 2] = [meta.mode().into(), meta.ino().into()];
                for number in numbers {
                    hash.update(number.to_le_bytes());
                }
                continue;
            }
            let changed = i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec());
            let modified = i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
            newest = newest.max(changed).max(modified);
            fine |= meta.ctime_nsec() != 0;
            let numbers: [u128; 3] = [meta.mode().into(), meta.ino().into(), meta.size().into()];
            for number in numbers {
                hash.update(number.to_le_bytes());
            }
            hash.update(changed.to_le_bytes());
            hash.update(modified.to_le_bytes());
            if let Some((contents, left)) = contents.as_mut()
                && meta.is_file()
            {
                contents.update((name.len() as u64).to_le_bytes());
                contents.update(name);
                *left = hash_file(task, entry.path(), contents, *left)?;
            }
        }
        let settle = if fine { SETTLE } else { SETTLE_COARSE };
        Some(TreeStamp {
            digest: hash.finalize().into(),
            contents: contents.map(|(contents, _)| contents.finalize().into()),
            settled: newest < taken - settle.as_nanos() as i128,
        })
    }

    pub fn settled(&self) -> bool {
        self.settled
    }

    /// Whether `later` shows the same tree, the changes in it old enough to trust.
    pub fn same_settled(&self, later: &TreeStamp) -> bool {
        self.settled && self.same_entries(later)
    }

    /// Whether `other` describes the same entries (settled or not).
    pub fn same_entries(&self, other: &TreeStamp) -> bool {
        self.digest == other.digest
    }

    /// Whether `other` describes the same entries holding the same bytes: both stamps read
    /// the contents ([`Self::with_contents`]).
    pub fn same_files(&self, other: &TreeStamp) -> bool {
        self.same_entries(other) && self.contents.is_some() && self.contents == other.contents
    }
}

/// Whether the link at `path` ends at an entry of the task that a stamp covers: inside the
/// task directory, none of its protocol files, nothing passed over.
fn links_inside(task: &Task, unstamped: &Unstamped<'_>, path: &std::path::Path) -> bool {
    std::fs::canonicalize(path).is_ok_and(|real| {
        real.starts_with(&task.dir)
            && !task.ignore.iter().any(|ignored| real.starts_with(ignored))
            && !real
                .ancestors()
                .take_while(|at| *at != task.dir)
                .any(|at| unstamped.covers_path(task, at))
    })
}

/// What a stamp passes over: the tools' own caches ([`crate::toolcache`]: what a tool writes
/// there is read back only by that tool, and never the worker's work), and the paths the rules
/// file names in `speculate.ignore` (what the gates' tools write and nothing reads: `coverage`,
/// `target`), so a run that writes only there is not told from one that changed nothing.
#[derive(Debug, Clone, Copy)]
pub struct Unstamped<'a> {
    pub ignore: &'a [String],
}

impl Unstamped<'_> {
    /// Whether `rel`, a `/`-separated task path, is passed over.
    pub fn covers(&self, rel: &str) -> bool {
        crate::toolcache::is_cache(rel)
            || self.ignore.iter().any(|path| {
                rel.strip_prefix(path.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            })
    }

    fn covers_path(&self, task: &Task, path: &std::path::Path) -> bool {
        path.strip_prefix(&task.dir)
            .ok()
            .and_then(std::path::Path::to_str)
            .is_some_and(|rel| !rel.is_empty() && self.covers(rel))
    }
}

/// Feeds the bytes of the regular file at `path`, beneath the task, to `contents`, at most
/// `left` of them; what is left after it, or `None` past that or when it cannot be read.
fn hash_file(task: &Task, path: &std::path::Path, contents: &mut Sha256, left: u64) -> Option<u64> {
    use std::io::Read;
    let file = crate::taskdir::open_inside(task, path).ok()?;
    let mut limited = file.take(left.saturating_add(1));
    let mut buffer = vec![0u8; 64 * 1024];
    let mut read = 0u64;
    loop {
        let n = match limited.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return None,
        };
        contents.update(&buffer[..n]);
        read += n as u64;
    }
    contents.update(read.to_le_bytes());
    left.checked_sub(read)
}

fn nanos(time: SystemTime) -> i128 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(since) => since.as_nanos() as i128,
        Err(before) => -(before.duration().as_nanos() as i128),
    }
}

/// Whether a gate's outcome may be taken from a speculative run: it runs a program over the
/// task's files alone, so the same files, definition and program give the same outcome.
pub fn speculable(gate: &Gate) -> bool {
    let about = Rule::about(gate.kind());
    about.cacheable && about.starts_programs && gate.rule.base().is_none()
}

/// One gate's outcome from a speculative run, with what it was judged under.
#[derive(Debug, Clone)]
struct Kept {
    definition: String,
    /// The task's contract as written, which may hold the gate (a criterion) or route to it.
    contract: Option<String>,
    program: Option<String>,
    outcome: Outcome,
    took: Duration,
}

/// The outcomes a speculative run recorded, by gate.
#[derive(Debug, Default)]
pub struct Speculated {
    kept: Mutex<HashMap<String, Kept>>,
}

impl Speculated {
    /// Records what `gate` came to in a speculative run over `task`. Only an outcome the gate's
    /// command reached by itself is kept (a pass, or a failure it exited with): a timeout, a
    /// kill or a cancel says nothing about the files.
    pub fn record(&self, task: &Task, gate: &Gate, outcome: &Outcome, took: Duration) {
        let reached = match outcome.outcome {
            GateOutcome::Pass => true,
            GateOutcome::Fail => outcome.exit_code.is_some(),
            _ => false,
        };
        if !reached {
            return;
        }
        let kept = Kept {
            definition: gate.definition.clone(),
            contract: contract(task),
            program: program(task, gate),
            outcome: outcome.clone(),
            took,
        };
        self.lock().insert(gate.name.clone(), kept);
    }

    /// The outcome recorded for `gate`, if it was judged under the same definition, contract
    /// and program and took no longer than `timeout`, what the gate may take now.
    pub fn take(&self, task: &Task, gate: &Gate, timeout: Duration) -> Option<Outcome> {
        let kept = self.lock().get(&gate.name).cloned()?;
        (kept.definition == gate.definition
            && kept.contract == contract(task)
            && kept.took <= timeout
            && kept.program == program(task, gate))
        .then_some(kept.outcome)
    }

    /// How many gates' outcomes are kept.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Kept>> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The task's contract as written, as the cache keys it.
fn contract(task: &Task) -> Option<String> {
    task.contract.as_ref().map(|handoff| handoff.source.clone())
}

/// The program a gate starts, as the cache identifies it (path, size, modification time; the
/// content of one inside the task): a tool upgraded between the run and done is another tool.
fn program(task: &Task, gate: &Gate) -> Option<String> {
    let program = gate.rule.program(task)?;
    let deadline =
        crate::taskdir::Deadline::new(std::time::Instant::now() + Duration::from_secs(30), None);
    crate::cache::program_identity(&program, task, &deadline)
}

/// What a run does with speculation.
#[derive(Clone, Copy, Default)]
pub enum Speculation<'a> {
    /// Every gate runs (`check`, the hook, a watcher with `speculate: false`).
    #[default]
    Off,
    /// A speculative run: the speculable gates run and their outcomes are recorded here; the
    /// others are not run (taken as passed, to route on), and its verdict is never published.
    Record(&'a Speculated),
    /// A run at done whose task is as a speculative run saw it: the speculable gates' outcomes
    /// are taken from here where they match.
    Use(&'a Speculated),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(dir: &std::path::Path) -> Task {
        Task::new("t", dir).expect("task")
    }

    #[test]
    fn what_a_stamp_passes_over_is_the_tools_caches_and_the_paths_named() {
        let ignore = ["coverage".to_owned(), "out/x.json".to_owned()];
        let unstamped = Unstamped { ignore: &ignore };
        for rel in [
            "coverage",
            "coverage/tmp/a.json",
            "out/x.json",
            ".pytest_cache/v",
            "a/.coverage",
        ] {
            assert!(unstamped.covers(rel), "{rel}");
        }
        for rel in [
            "coverage2",
            "src/coverage.py",
            "out/x.json2",
            "out",
            "src/a.py",
        ] {
            assert!(!unstamped.covers(rel), "{rel}");
        }
    }

    #[test]
    fn a_stamp_moves_with_any_write_and_settles_only_when_old() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("a.py"), "x = 1\n").expect("write");
        let first = TreeStamp::of(&task(dir.path()), &Unstamped { ignore: &[] }).expect("stamp");
        assert!(!first.settled(), "a file written just now is not settled");
        assert!(!first.same_settled(&first));
        std::fs::write(dir.path().join("a.py"), "x = 2\n").expect("write");
        let second = TreeStamp::of(&task(dir.path()), &Unstamped { ignore: &[] }).expect("stamp");
        assert_ne!(first, second);
        std::fs::write(dir.path().join("b.py"), "").expect("write");
        assert_ne!(
            second,
            TreeStamp::of(&task(dir.path()), &Unstamped { ignore: &[] }).expect("stamp")
        );
    }
}
