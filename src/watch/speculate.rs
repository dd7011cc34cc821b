//! The watcher's speculative runs (what makes one safe to use is [`validator::speculation`]'s): a
//! thread looks at each task directory in staging; once one has been left alone for the rules'
//! `speculate.quiet` and its stamp is settled, it runs the task's pipeline in the background
//! ([`Speculation::Record`]: in the pipeline's order, the `lint` and `test` outcomes kept,
//! their commands at the lowest CPU and I/O priority). A change to the task's files cancels
//! the run (its commands' groups killed). At done, [`Speculator::claim`] gives the run's
//! outcomes to the real run when the task's inputs are exactly as the run saw them as it
//! started and the whole tree is as it left it, under the same rules and attempt, waiting for
//! one still running on those files; anything else runs as without speculation.
//!
//! Bounds: one speculative run at a time across the watcher, and none while the real runs fill
//! `--jobs`; none on a task being judged, or held by a breaker, or whose files are as its last
//! verdict judged them. What it costs is counted ([`Counts`]: runs started, used, cancelled,
//! discarded, and CPU seconds), for the metrics and `status`.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use validator::config::Rules;
use validator::judge::{Case, Judge};
use validator::pipeline::Slots;
use validator::speculation::{Speculated, Speculation, TreeStamp, Written};
use validator::state::TaskState;
use validator::task::{self, Task};
use validator_process::Cancel;

use super::metrics::Counts;

/// Most task directories looked at in one pass over staging.
const MAX_TASKS: usize = 10_000;

/// How a speculative run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum End {
    Running,
    /// It ran to its end; the task's stamps with their contents as it started and when it
    /// ended (`None`: one could not be taken, or the entries had moved since the look).
    Ran(Option<Box<(TreeStamp, TreeStamp)>>),
    Cancelled,
}

/// One speculative run over one task.
pub struct Run {
    /// The task's stamp (its entries) when the run was decided on.
    stamp: TreeStamp,
    attempt: u32,
    rules: Arc<Rules>,
    cancel: Cancel,
    pub outcomes: Speculated,
    end: Mutex<End>,
}

impl Run {
    fn end(&self) -> MutexGuard<'_, End> {
        self.end.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A task directory as the speculator last saw it.
struct Watched {
    seen: TreeStamp,
    since: Instant,
    run: Option<Arc<Run>>,
    /// The stamp the task's last real run left: its verdict already says what these files are.
    judged: Option<TreeStamp>,
    /// Speculative runs in a row that were not used (cancelled or discarded): each doubles the
    /// quiet time the next waits for, so a suite that writes into its own task (whose runs can
    /// never be used) costs a few runs, not one per quiet time.
    wasted: u32,
}

#[derive(Default)]
struct Tasks {
    by_name: HashMap<String, Watched>,
    /// Tasks a real run is judging (or about to): never speculated on meanwhile.
    judging: HashSet<String>,
    /// Whether a speculative run is going on.
    running: bool,
}

/// The watcher's speculation: its state, shared by the speculator thread, the runs it starts
/// and the workers that claim their outcomes.
pub struct Speculator {
    tasks: Mutex<Tasks>,
    ended: Condvar,
    numbered: AtomicU64,
    stopped: AtomicBool,
    jobs: usize,
    counts: Arc<Counts>,
}

impl Speculator {
    /// `counts` are the metrics' (see [`super::metrics::Metrics`]).
    pub fn new(jobs: usize, counts: Arc<Counts>) -> Self {
        Speculator {
            tasks: Mutex::default(),
            ended: Condvar::new(),
            numbered: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
            jobs: jobs.max(1),
            counts,
        }
    }

    fn tasks(&self) -> MutexGuard<'_, Tasks> {
        self.tasks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// At done, before `task` (its attempt set) is judged under `rules`: no speculation on it
    /// until [`Self::release`]; and the run whose outcomes the real run may take, if one saw
    /// exactly these files (one still running on them is waited for, until `until`).
    pub fn claim(&self, task: &Task, rules: &Arc<Rules>, until: Instant) -> Option<Arc<Run>> {
        let mut tasks = self.tasks();
        tasks.judging.insert(task.name.clone());
        let run = tasks
            .by_name
            .get_mut(&task.name)
            .and_then(|watched| watched.run.take())?;
        drop(tasks);
        let now = TreeStamp::with_contents(task, &written(rules));
        let same_inputs = Arc::ptr_eq(&run.rules, rules)
            && run.attempt == task.attempt
            && now.as_ref().is_some_and(|now| run.stamp.same_settled(now));
        if !same_inputs {
            self.cancel(&run);
            if let Some(watched) = self.tasks().by_name.get_mut(&task.name) {
                watched.wasted += 1;
            }
            return None;
        }
        let mut end = run.end();
        if *end == End::Running {
            // The real run waits for it: it must not wait behind everything else.
            run.cancel.to_foreground();
        }
        while *end == End::Running {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            end = self
                .ended
                .wait_timeout(end, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        // The bytes too, not only the times: a write through a mapping moves no time. The
        // inputs as the run started; the whole tree, what it wrote included, as it ended.
        let untouched = match (&*end, &now) {
            (End::Ran(Some(stamps)), Some(now)) => {
                let (before, after) = &**stamps;
                before.same_files(now) && after.same_tree(now)
            }
            _ => false,
        };
        drop(end);
        if let Some(watched) = self.tasks().by_name.get_mut(&task.name) {
            watched.wasted = if untouched { 0 } else { watched.wasted + 1 };
        }
        if untouched {
            self.counts.used.fetch_add(1, Ordering::Relaxed);
            Some(run)
        } else {
            self.cancel(&run);
            None
        }
    }

    /// After the real run of `task`: speculation on it may start again once its files change
    /// from what the run left.
    pub fn release(&self, task: &Task, rules: &Rules) {
        let judged = TreeStamp::of(task, &written(rules));
        let mut tasks = self.tasks();
        tasks.judging.remove(&task.name);
        if let Some(watched) = tasks.by_name.get_mut(&task.name) {
            watched.judged = judged;
        }
    }

    /// A run not to be used: cancelled if it still runs (counted so), else discarded.
    fn cancel(&self, run: &Run) {
        let end = run.end();
        if *end == End::Running {
            run.cancel.cancel();
            self.counts.cancelled.fetch_add(1, Ordering::Relaxed);
        } else {
            self.counts.discarded.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Cancels the speculative run going on, if any: a run at done waits for the slot it holds.
    fn give_way(&self) {
        let mut tasks = self.tasks();
        for watched in tasks.by_name.values_mut() {
            let running = watched
                .run
                .as_ref()
                .is_some_and(|run| *run.end() == End::Running);
            if running && let Some(run) = watched.run.take() {
                self.cancel(&run);
            }
        }
    }

    /// Stops speculating for good (the watcher is shutting down): the run going on is killed.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        let mut tasks = self.tasks();
        for watched in tasks.by_name.values_mut() {
            if let Some(run) = watched.run.take() {
                run.cancel.cancel();
            }
        }
    }
}

/// What the speculator thread works from: the watcher's speculator, its rules as they are
/// now (a reload swaps them), and the mark its commands carry, under which each run's is made.
pub struct Sources {
    pub speculator: Arc<Speculator>,
    pub rules: Box<dyn Fn() -> Arc<Rules> + Send + Sync>,
    pub mark: Option<String>,
    /// The watcher's `--jobs` slots: a speculative run holds one like any run (its group
    /// borrowing more only while free), and gives it back when a run at done waits for one.
    pub slots: Arc<Slots>,
}

/// Starts the speculator thread; it ends when the watcher stops ([`Speculator::stop`]).
pub fn start(sources: Sources) {
    let sources = Arc::new(sources);
    let started = std::thread::Builder::new()
        .name("speculator".into())
        .spawn(move || {
            validator_process::lower_this_thread(19);
            look_until_stopped(&sources);
        });
    if let Err(err) = started {
        tracing::warn!(%err, "cannot start the speculator thread; every run starts at done");
    }
}

fn look_until_stopped(sources: &Arc<Sources>) {
    let speculator = &sources.speculator;
    while !speculator.stopped.load(Ordering::SeqCst) {
        let rules = (sources.rules)();
        let looked = Instant::now();
        if rules.speculate.on {
            // A panic here must never take the watcher's judging with it; it only ends
            // speculation, which the runs at done do without.
            let pass = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                look_once(sources, &rules);
            }));
            if pass.is_err() {
                tracing::error!("the speculator failed; runs start at done from now on");
                return;
            }
        }
        // Half the quiet time between looks, and never more than a tenth of the time looking:
        // a large staging costs the machine no more than that.
        let pause = (rules.speculate.quiet / 2)
            .max(looked.elapsed() * 10)
            .clamp(Duration::from_millis(50), Duration::from_secs(30));
        std::thread::sleep(pause);
    }
}

/// One look at every task directory in staging.
fn look_once(sources: &Arc<Sources>, rules: &Arc<Rules>) {
    if sources.slots.wanted() {
        sources.speculator.give_way();
    }
    let Ok(entries) = std::fs::read_dir(&rules.staging) else {
        return;
    };
    let mut present = HashSet::new();
    for entry in entries.flatten().take(MAX_TASKS) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
        if !is_dir || task::validate_name(&name).is_err() {
            continue;
        }
        present.insert(name.clone());
        look_at(sources, rules, &name);
    }
    sources
        .speculator
        .tasks()
        .by_name
        .retain(|name, _| present.contains(name));
}

/// The task `name` as a run at done would judge it, with the attempt its next done signal gets;
/// `None` when a breaker holds it (its next answer runs nothing).
fn next_task(rules: &Rules, name: &str) -> Option<Task> {
    let mut state = TaskState::load(&rules.state, name);
    if state.escalated.is_some() || state.blocked.is_some() {
        return None;
    }
    let attempt = state.attempt_for(Some(format!("speculative {}", state.attempt)));
    let dir = validator::staging::task_dir(&rules.staging, name).ok()?;
    let task = Task::new(name, &dir).ok()?;
    Some(
        super::protocol_ignored(task, rules, name)
            .with_worker_area(&rules.staging)
            .with_attempt(attempt),
    )
}

/// Looks at one task: a change cancels its run; quiet long enough, it gets one.
fn look_at(sources: &Arc<Sources>, rules: &Arc<Rules>, name: &str) {
    let speculator = &sources.speculator;
    if speculator.tasks().judging.contains(name) {
        return;
    }
    let Some(task) = next_task(rules, name) else {
        return;
    };
    let Some(stamp) = TreeStamp::of(&task, &written(rules)) else {
        return;
    };
    let mut tasks = speculator.tasks();
    if tasks.judging.contains(name) {
        return;
    }
    let busy = tasks.judging.len();
    let running = tasks.running;
    let watched = tasks
        .by_name
        .entry(name.to_owned())
        .or_insert_with(|| Watched {
            seen: stamp.clone(),
            since: Instant::now(),
            run: None,
            judged: None,
            wasted: 0,
        });
    if !watched.seen.same_entries(&stamp) {
        watched.seen = stamp;
        watched.since = Instant::now();
        if let Some(run) = watched.run.take() {
            speculator.cancel(&run);
            watched.wasted += 1;
        }
        return;
    }
    let backoff = 1u32 << watched.wasted.min(6);
    let quiet = watched.since.elapsed() >= rules.speculate.quiet.saturating_mul(backoff);
    let known = watched
        .run
        .as_ref()
        .is_some_and(|run| run.stamp.same_entries(&stamp))
        || watched
            .judged
            .as_ref()
            .is_some_and(|judged| judged.same_entries(&stamp));
    if !quiet || !stamp.settled() || known || running || busy >= speculator.jobs {
        return;
    }
    let n = speculator.numbered.fetch_add(1, Ordering::Relaxed);
    let mark = match &sources.mark {
        Some(mark) => format!("{mark}.s{n}"),
        None => format!("s{n}"),
    };
    let run = Arc::new(Run {
        stamp,
        attempt: task.attempt,
        rules: Arc::clone(rules),
        cancel: Cancel::background(mark),
        outcomes: Speculated::default(),
        end: Mutex::new(End::Running),
    });
    if let Some(old) = watched.run.replace(Arc::clone(&run)) {
        speculator.cancel(&old);
    }
    tasks.running = true;
    drop(tasks);
    speculator.counts.started.fetch_add(1, Ordering::Relaxed);
    let speculator = Arc::clone(speculator);
    let slots = Arc::clone(&sources.slots);
    let spawned = std::thread::Builder::new()
        .name(format!("speculating {name}"))
        .spawn(move || speculate(&speculator, &run, task, &slots));
    if spawned.is_err() {
        sources.speculator.tasks().running = false;
    }
}

/// Runs the task's pipeline speculatively and records how it ended.
fn speculate(speculator: &Speculator, run: &Run, task: Task, slots: &Slots) {
    validator_process::lower_this_thread(19);
    let cpu = validator_process::kernel::cpu_micros_of_thread_and_children();
    let rules = &run.rules;
    // What the outcomes are outcomes of: the files' bytes as the run starts, on the entries the
    // look saw (moved since, there is nothing to run on).
    let before = TreeStamp::with_contents(&task, &written(rules))
        .filter(|before| before.same_entries(&run.stamp));
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if before.is_none() {
            return;
        }
        if let Ok(pipeline) = rules.pipeline_for(&task.name, None) {
            let key = validator::judge::signing(rules);
            let supervision = validator::pipeline::Supervision {
                cancel: Some(&run.cancel),
                slots: Some(slots),
                speculation: Speculation::Record(&run.outcomes),
                ..Default::default()
            };
            let judge = Judge::new(rules, &key, supervision);
            let case = Case {
                task: task.clone(),
                pipeline: Ok(pipeline),
                refused: None,
            };
            judge.judge(case, None);
        }
    }));
    let end = if ran.is_err() || run.cancel.is_cancelled() {
        End::Cancelled
    } else {
        End::Ran(
            before
                .zip(TreeStamp::settled_with_contents(&task, &written(rules)))
                .map(Box::new),
        )
    };
    let spent = validator_process::kernel::cpu_micros_of_thread_and_children().saturating_sub(cpu);
    speculator
        .counts
        .cpu_micros
        .fetch_add(spent, Ordering::Relaxed);
    *run.end() = end;
    speculator.tasks().running = false;
    speculator.ended.notify_all();
}

/// Where the rules say the gates' tools write.
fn written(rules: &Rules) -> Written<'_> {
    Written {
        ignore: &rules.speculate.ignore,
    }
}
