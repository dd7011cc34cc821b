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
//!   time. The stamp is taken before the run and again after it: a run whose tree moved under
//!   it (a write during the run, a test that changes its own inputs) is never used.
//! - For whom: the same task, attempt (its commands see `VALIDATOR_ATTEMPT`), rules (the same
//!   loaded rules, so the same environment and definitions) and, per gate, the same definition
//!   and program (path, size, modification time), and a run that took no longer than the gate
//!   may take at done.
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

/// Every entry of a task directory as the kernel describes it, hashed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeStamp {
    digest: [u8; 32],
    /// Whether the newest change time is older than [`SETTLE`] (or [`SETTLE_COARSE`]) before
    /// the stamp was taken.
    settled: bool,
}

impl TreeStamp {
    /// The stamp of `task`'s directory (its protocol files left out), or `None` when it cannot
    /// be taken whole: an unreadable directory, more than [`MAX_ENTRIES`] entries.
    pub fn of(task: &Task) -> Option<TreeStamp> {
        let taken = nanos(SystemTime::now());
        let mut hash = Sha256::new();
        let mut newest = i128::MIN;
        let mut fine = false;
        let walker = walkdir::WalkDir::new(&task.dir)
            .follow_links(false)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|entry| !task.ignore.iter().any(|ignored| entry.path() == ignored));
        for (count, entry) in walker.enumerate() {
            if count >= MAX_ENTRIES {
                return None;
            }
            let entry = entry.ok()?;
            let meta = entry.metadata().ok()?;
            let rel = entry.path().strip_prefix(&task.dir).ok()?;
            let name = rel.as_os_str().as_encoded_bytes();
            hash.update((name.len() as u64).to_le_bytes());
            hash.update(name);
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
        }
        let settle = if fine { SETTLE } else { SETTLE_COARSE };
        Some(TreeStamp {
            digest: hash.finalize().into(),
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
            program: program(task, gate),
            outcome: outcome.clone(),
            took,
        };
        self.lock().insert(gate.name.clone(), kept);
    }

    /// The outcome recorded for `gate`, if it was judged under the same definition and program
    /// and took no longer than `timeout`, what the gate may take now.
    pub fn take(&self, task: &Task, gate: &Gate, timeout: Duration) -> Option<Outcome> {
        let kept = self.lock().get(&gate.name).cloned()?;
        (kept.definition == gate.definition
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
    fn a_stamp_moves_with_any_write_and_settles_only_when_old() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("a.py"), "x = 1\n").expect("write");
        let first = TreeStamp::of(&task(dir.path())).expect("stamp");
        assert!(!first.settled(), "a file written just now is not settled");
        assert!(!first.same_settled(&first));
        std::fs::write(dir.path().join("a.py"), "x = 2\n").expect("write");
        let second = TreeStamp::of(&task(dir.path())).expect("stamp");
        assert_ne!(first, second);
        std::fs::write(dir.path().join("b.py"), "").expect("write");
        assert_ne!(second, TreeStamp::of(&task(dir.path())).expect("stamp"));
    }
}
