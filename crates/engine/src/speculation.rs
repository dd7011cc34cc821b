//! Speculative runs: a task's gates run while its worker is still writing its answer, so the
//! verdict is ready when it says done. What this module owns is the guarantee that makes that
//! safe: a speculative outcome stands for a gate only where a run at done would give the same,
//! and a speculative run runs no command a run at done would not.
//!
//! - Which outcomes: those of the gates the cache may reuse that start a program (`lint`,
//!   `test`) and do not judge the change (`changed_only`). The gates that read the done signal
//!   or the change set (`status`, `file-scope`, `content`, a review) always run at done.
//! - In what order ([`before_done`]): the pipeline's. A speculative run routes as a run at done
//!   would: the gates validator judges in itself and the `changed_only` commands run to route
//!   on, `status` (the worker's own word) is taken as passed, and a `review` ends the run; so a
//!   file the scope gate refuses is never run by a test gate after it.
//! - On what: the whole task directory but validator's protocol files, every entry's name,
//!   type, inode, size, modification and change time, every directory's times too
//!   ([`TreeStamp`]). The change time is the kernel's, which no worker sets back; a stamp is
//!   *settled* only when its newest change is older than [`SETTLE`] before it was taken, so a
//!   write in the same tick of the file system's clock cannot hide behind an equal time. The
//!   stamp is taken before the run, after it and at done with every input's bytes too (times
//!   miss a write through a mapping whose page is already dirty): a run whose inputs moved
//!   under it (a write during the run, a test that changes its own inputs) is never used. The
//!   paths `speculate.ignore` names are where the gates' tools write: the run may change them,
//!   nothing may after it. A task with a link out of it, or more than [`MAX_CONTENT_BYTES`] in
//!   its inputs, or more than [`MAX_ENTRIES`] entries, is not speculated on.
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
use crate::rules::{Outcome, Rule, RuleKind};
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
/// Nothing in the task is passed over (but validator's own protocol files): a test gate runs
/// the worker's code, which may read any file, a tool cache's or a build's output as much as a
/// source. The tree has two regions ([`Written`]): the paths the rules name in
/// `speculate.ignore`, where the gates' tools write (a build's `target`, a coverage report),
/// and the rest, the inputs. An outcome stands for the inputs as they were when its run
/// started and for the whole tree as the run left it: between the run's start and its end only
/// the written region may move (the run's own writes); from its end to done nothing may.
///
/// Each directory's times are stamped too: a file that comes and goes between two looks
/// leaves none of its own, only its directory's, so an input directory's times may not move
/// during the run at all: a run that makes `coverage/` is not used, the next one is (a tool
/// that replaces an entry at the top on every run, coverage.py's `.coverage`, gets none).
///
/// The times alone cannot say a file is unchanged: a write through a shared mapping whose page
/// is already dirty moves neither time (the kernel sets them at the first write fault only),
/// so a worker could change a file after a speculative run, its stamp as before. The quiet
/// check (every half `quiet`) looks at the entries alone; the stamps before a run, after it
/// and at done read the inputs' contents too ([`TreeStamp::with_contents`]). The written
/// region's bytes are not read (a build's output is gigabytes): its entries' metadata is
/// stamped, and the stamp after a run is taken only once its newest change is settled, so a
/// later write moves a time.
///
/// A link that leaves the task (or cannot be resolved) makes no stamp: what a gate reads
/// through it is no entry of the task's, and a run at done may read something else there (the
/// cache refuses such a key for the same reason). Nor does a link into the written region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeStamp {
    /// The inputs' entries: names, types, inodes, sizes and times (directories without times).
    inputs: [u8; 32],
    /// Each input directory's modification and change times, in the walk's order.
    dirs: Vec<[i128; 2]>,
    /// The written region's entries, directories' times included.
    written: [u8; 32],
    /// The inputs' bytes, hashed, in the walk's order; `None` when not read.
    contents: Option<[u8; 32]>,
    /// Whether the inputs' newest change is older than [`SETTLE`] (or [`SETTLE_COARSE`])
    /// before the stamp was taken.
    settled: bool,
    /// The same for the written region.
    written_settled: bool,
}

/// The newest change a walk met in a region, and whether the file system keeps nanoseconds.
#[derive(Default)]
struct Newest {
    at: Option<i128>,
    fine: bool,
}

impl Newest {
    fn saw(&mut self, meta: &std::fs::Metadata) -> [i128; 2] {
        let changed = i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec());
        let modified = i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
        self.at = Some(self.at.unwrap_or(i128::MIN).max(changed).max(modified));
        self.fine |= meta.ctime_nsec() != 0;
        [modified, changed]
    }

    fn settled(&self, taken: i128) -> bool {
        let settle = if self.fine { SETTLE } else { SETTLE_COARSE };
        self.at
            .is_none_or(|at| at < taken - settle.as_nanos() as i128)
    }
}

impl TreeStamp {
    /// The stamp of `task`'s directory (its protocol files left out), its entries only; `None`
    /// when it cannot be taken whole: an unreadable directory, more than [`MAX_ENTRIES`]
    /// entries, a link out of the task or into the written region.
    pub fn of(task: &Task, written: &Written<'_>) -> Option<TreeStamp> {
        Self::take(task, written, false)
    }

    /// The stamp of `task`'s directory with its inputs' contents; `None` as [`Self::of`], and
    /// for a file that cannot be read or inputs over [`MAX_CONTENT_BYTES`].
    pub fn with_contents(task: &Task, written: &Written<'_>) -> Option<TreeStamp> {
        Self::take(task, written, true)
    }

    /// As [`Self::with_contents`], once the written region's newest change is settled
    /// (waiting [`SETTLE_COARSE`] at most, looking at the entries alone meanwhile): the stamp
    /// after a run, which done is held to. `None` for a region still changing.
    pub fn settled_with_contents(task: &Task, written: &Written<'_>) -> Option<TreeStamp> {
        let looks = SETTLE_COARSE.as_millis() / SETTLE.as_millis();
        for _ in 0..looks {
            if Self::of(task, written)?.written_settled {
                break;
            }
            std::thread::sleep(SETTLE);
        }
        Self::with_contents(task, written).filter(|stamp| stamp.written_settled)
    }

    fn take(task: &Task, written: &Written<'_>, read: bool) -> Option<TreeStamp> {
        let taken = nanos(SystemTime::now());
        let mut inputs = Sha256::new();
        let mut outputs = Sha256::new();
        let mut dirs = Vec::new();
        let mut contents = read.then(|| (Sha256::new(), MAX_CONTENT_BYTES));
        let (mut newest, mut newest_written) = (Newest::default(), Newest::default());
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
            if meta.file_type().is_symlink() && !links_inside(task, written, entry.path()) {
                return None;
            }
            let rel = entry.path().strip_prefix(&task.dir).ok()?;
            let name = rel.as_os_str().as_encoded_bytes();
            let in_written = written.covers_path(task, entry.path());
            let (hash, seen) = if in_written {
                (&mut outputs, &mut newest_written)
            } else {
                (&mut inputs, &mut newest)
            };
            hash.update((name.len() as u64).to_le_bytes());
            hash.update(name);
            let numbers: [u128; 3] = [meta.mode().into(), meta.ino().into(), meta.size().into()];
            let times = seen.saw(&meta);
            if meta.is_dir() && !in_written {
                // Its size and times move when an entry comes or goes; they are judged apart.
                hash.update(numbers[0].to_le_bytes());
                hash.update(numbers[1].to_le_bytes());
                dirs.push(times);
                continue;
            }
            for number in numbers {
                hash.update(number.to_le_bytes());
            }
            for time in times {
                hash.update(time.to_le_bytes());
            }
            if let Some((contents, left)) = contents.as_mut()
                && meta.is_file()
                && !in_written
            {
                contents.update((name.len() as u64).to_le_bytes());
                contents.update(name);
                *left = hash_file(task, entry.path(), contents, *left)?;
            }
        }
        Some(TreeStamp {
            inputs: inputs.finalize().into(),
            dirs,
            written: outputs.finalize().into(),
            contents: contents.map(|(contents, _)| contents.finalize().into()),
            settled: newest.settled(taken),
            written_settled: newest_written.settled(taken),
        })
    }

    pub fn settled(&self) -> bool {
        self.settled
    }

    /// Whether `later` shows the same tree, the changes in it old enough to trust.
    pub fn same_settled(&self, later: &TreeStamp) -> bool {
        self.settled && self.same_entries(later)
    }

    /// Whether `other` describes the same inputs (settled or not): the same entries, and each
    /// directory's times the same. Even where the run made or replaced an entry of the written
    /// region (`coverage/`, `.coverage`): a file that came and went beside it leaves nothing
    /// else, so such a run is not used, and the next one, which finds the entry there, is.
    pub fn same_entries(&self, other: &TreeStamp) -> bool {
        self.inputs == other.inputs && self.dirs == other.dirs
    }

    /// Whether `other` describes the same inputs holding the same bytes: both stamps read
    /// the contents ([`Self::with_contents`]). What a run may leave changed of the tree.
    pub fn same_files(&self, other: &TreeStamp) -> bool {
        self.same_entries(other) && self.contents.is_some() && self.contents == other.contents
    }

    /// Whether `other` is the very same tree: every entry of both regions, every directory's
    /// times and the inputs' bytes. What done must find of the tree a run left.
    pub fn same_tree(&self, other: &TreeStamp) -> bool {
        self.same_files(other) && self.dirs == other.dirs && self.written == other.written
    }
}

/// Whether the link at `path` ends at an entry of the task that a stamp covers: inside the
/// task directory, none of its protocol files, nothing in the written region (whose bytes are
/// not read).
fn links_inside(task: &Task, written: &Written<'_>, path: &std::path::Path) -> bool {
    std::fs::canonicalize(path).is_ok_and(|real| {
        real.starts_with(&task.dir)
            && !task.ignore.iter().any(|ignored| real.starts_with(ignored))
            && !real
                .ancestors()
                .take_while(|at| *at != task.dir)
                .any(|at| written.covers_path(task, at))
    })
}

/// Where the gates' tools write: the paths the rules file names in `speculate.ignore`
/// (`coverage`, `target`). Stamped like the rest, but a run may change them (see
/// [`TreeStamp`]).
#[derive(Debug, Clone, Copy)]
pub struct Written<'a> {
    pub ignore: &'a [String],
}

impl Written<'_> {
    /// Whether `rel`, a `/`-separated task path, lies in the written region.
    pub fn covers(&self, rel: &str) -> bool {
        self.ignore.iter().any(|path| {
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

/// What a speculative run does with a gate it reaches. It keeps the pipeline's order: it
/// takes only a route that a run at done could take on the same files with some done signal,
/// so it never runs a command that such a run would not (the worker's `conftest.py` that the
/// scope gate refuses first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BeforeDone {
    /// Run, and its outcome kept for done ([`speculable`]).
    Record,
    /// Run, to route on as a run at done would, its outcome not kept: the gates that judge
    /// the files in validator itself (`exists`, `file-scope`, `content`, `schema`,
    /// `co-change`, a contract's), pure functions of the stamped files and validator's own
    /// base and state, and the commands over the changed files only (`changed_only`). They read
    /// the signal the run has, none, which only makes them stricter (a `co-change` skip marker
    /// is in the signal).
    Route,
    /// Taken as passed: the `status` gate judges the worker's own word, which the worker may
    /// make anything, so the route it passes to is one a run at done can take.
    AsPassed,
    /// Not run, and the speculative run ends here, before any gate after it: a `review` (an
    /// agent, judging more than the files, at a model's cost) cannot be judged before done,
    /// and what follows it at done depends on it.
    Stop,
}

/// What a speculative run does with `gate`.
pub fn before_done(gate: &Gate) -> BeforeDone {
    match gate.kind() {
        RuleKind::Status => BeforeDone::AsPassed,
        RuleKind::Review => BeforeDone::Stop,
        _ if speculable(gate) => BeforeDone::Record,
        _ => BeforeDone::Route,
    }
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
    fn a_speculative_run_keeps_lint_and_test_routes_past_the_signal_and_stops_at_a_review() {
        let source = "version: 1\npipelines:\n  - name: p\n    gates:\n      - {name: status, rule: status}\n      - {name: scope, rule: file-scope}\n      - {name: changed, rule: lint, run: [true], files: [\"*.py\"], changed_only: true}\n      - {name: lint, rule: lint, run: [true]}\n      - {name: review, rule: review, run: [true]}\n      - {name: test, rule: test, run: [true]}\n";
        let rules =
            crate::config::Rules::parse(std::path::Path::new("v.yaml"), source).expect("rules");
        let seen: Vec<BeforeDone> = rules.pipelines[0].gates.iter().map(before_done).collect();
        use BeforeDone::{AsPassed, Record, Route, Stop};
        assert_eq!(seen, [AsPassed, Route, Route, Record, Stop, Record]);
    }

    fn stamp(dir: &std::path::Path, ignore: &[String]) -> TreeStamp {
        TreeStamp::with_contents(&task(dir), &Written { ignore }).expect("stamp")
    }

    #[test]
    fn the_written_region_is_the_paths_named_and_nothing_else() {
        let ignore = ["coverage".to_owned(), "out/x.json".to_owned()];
        let written = Written { ignore: &ignore };
        for rel in ["coverage", "coverage/tmp/a.json", "out/x.json"] {
            assert!(written.covers(rel), "{rel}");
        }
        for rel in [
            "coverage2",
            "src/coverage.py",
            "out/x.json2",
            "out",
            ".pytest_cache/v",
            "a/.coverage",
        ] {
            assert!(!written.covers(rel), "{rel}");
        }
    }

    #[test]
    fn a_tool_cache_is_an_input_like_any_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("src/.pytest_cache")).expect("dir");
        std::fs::write(dir.path().join("src/.pytest_cache/v"), "one").expect("write");
        let first = stamp(dir.path(), &[]);
        std::fs::write(dir.path().join("src/.pytest_cache/v"), "two").expect("write");
        assert!(!first.same_files(&stamp(dir.path(), &[])));
    }

    #[test]
    fn the_written_region_may_move_during_a_run_but_not_after_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ignore = ["target".to_owned()];
        std::fs::write(dir.path().join("a.rs"), "fn main() {}\n").expect("write");
        std::fs::create_dir(dir.path().join("target")).expect("dir");
        std::thread::sleep(SETTLE);
        let before = stamp(dir.path(), &ignore);
        // The run writes in its output directory.
        std::fs::create_dir_all(dir.path().join("target/out")).expect("dir");
        std::fs::write(dir.path().join("target/out/gen.rs"), "good").expect("write");
        std::thread::sleep(SETTLE);
        let after = stamp(dir.path(), &ignore);
        assert!(before.same_files(&after), "the run's own writes");
        assert!(!before.same_tree(&after));
        assert!(after.same_tree(&stamp(dir.path(), &ignore)));
        // A write of the same length in the same tick of the clock would move no time: the
        // stamp after a run is taken settled (`settled_with_contents`).
        std::thread::sleep(SETTLE);
        std::fs::write(dir.path().join("target/out/gen.rs"), "evil").expect("write");
        assert!(
            !after.same_tree(&stamp(dir.path(), &ignore)),
            "a write after it"
        );
    }

    #[test]
    fn a_file_that_came_and_went_moves_its_directorys_times() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("src")).expect("dir");
        std::fs::write(dir.path().join("src/a.py"), "x = 1\n").expect("write");
        let first = stamp(dir.path(), &[]);
        std::thread::sleep(SETTLE);
        std::fs::write(dir.path().join("src/conftest.py"), "").expect("write");
        std::fs::remove_file(dir.path().join("src/conftest.py")).expect("remove");
        let second = stamp(dir.path(), &[]);
        assert!(!first.same_entries(&second) && !first.same_tree(&second));
    }

    #[test]
    fn a_file_that_came_and_went_beside_a_replaced_written_entry_is_seen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ignore = [".coverage".to_owned()];
        std::fs::write(dir.path().join("test_a.py"), "def test(): assert 0\n").expect("write");
        std::fs::write(dir.path().join(".coverage"), "old").expect("write");
        let before = stamp(dir.path(), &ignore);
        std::thread::sleep(SETTLE);
        // During the run: the worker's conftest.py, read by the tests, then gone; coverage.py
        // replaces its data file, as it does on every run.
        std::fs::write(dir.path().join("conftest.py"), "pass everything").expect("write");
        std::fs::remove_file(dir.path().join("conftest.py")).expect("remove");
        std::fs::write(dir.path().join("tmp-cov"), "new").expect("write");
        std::fs::rename(dir.path().join("tmp-cov"), dir.path().join(".coverage")).expect("mv");
        let after = stamp(dir.path(), &ignore);
        assert!(
            !before.same_files(&after),
            "the run read a file the final tree lacks"
        );
    }

    #[test]
    fn a_stamp_moves_with_any_write_and_settles_only_when_old() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("a.py"), "x = 1\n").expect("write");
        let first = TreeStamp::of(&task(dir.path()), &Written { ignore: &[] }).expect("stamp");
        assert!(!first.settled(), "a file written just now is not settled");
        assert!(!first.same_settled(&first));
        std::fs::write(dir.path().join("a.py"), "x = 2\n").expect("write");
        let second = TreeStamp::of(&task(dir.path()), &Written { ignore: &[] }).expect("stamp");
        assert_ne!(first, second);
        std::fs::write(dir.path().join("b.py"), "").expect("write");
        assert_ne!(
            second,
            TreeStamp::of(&task(dir.path()), &Written { ignore: &[] }).expect("stamp")
        );
    }
}
