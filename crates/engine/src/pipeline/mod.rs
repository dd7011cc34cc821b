//! Running a pipeline over a task: gates in order, routed by `on_pass` / `on_fail` as in
//! gates.json, under a loop guard (64 runs of gates that already ran) and the run's time budget. The result is a
//! [`Verdict`] value; nothing here prints or writes.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use crate::cache::{self, Cache};
use crate::config::{Pipeline, Route, Rules};
use crate::duration;
use crate::rules::{Context, Deadline, Outcome, file_scope::Listed};
use crate::speculation::{self, BeforeDone, Speculation};
use crate::task::Task;
use crate::verdict::{Decision, GateOutcome, GateReport, SCHEMA, SignalInfo, Verdict};
use validator_process::Cancel;

/// The most times one run may run a gate it already ran before it is judged a loop. A loop
/// repeats gates; a long pipeline does not, so its length is never held against it.
pub const MAX_REPEATS: usize = 64;

/// Hears about each gate as the run goes (the watcher's event log, progress displays).
pub trait Observer: Sync {
    fn gate_started(&self, _task: &Task, _gate: &str) {}
    fn gate_finished(&self, _task: &Task, _report: &GateReport) {}
}

/// What a supervisor adds to a run: a way to cancel it and an observer.
#[derive(Clone, Copy, Default)]
pub struct Supervision<'a> {
    /// Once cancelled, no further gate starts and running commands are killed; the verdict of
    /// a cancelled run must not be published.
    pub cancel: Option<&'a Cancel>,
    pub observer: Option<&'a dyn Observer>,
    /// Where gates with `inputs:` remember their passes; without it every gate runs. The one
    /// thing a run writes, and only through this.
    pub cache: Option<&'a Cache>,
    /// Which gates a person asked for (`check --only/--skip`, `--keep-going`).
    pub selection: Selection<'a>,
    /// Gates running at once across every run that shares them (the watcher's `--jobs`);
    /// without them a group is bounded by its pipeline's `jobs:` alone.
    pub slots: Option<&'a Slots>,
    /// Whether this run records speculative outcomes, or takes them (see [`crate::speculation`]).
    pub speculation: Speculation<'a>,
    /// The tests each `test` gate named as failed in the task's last run, which a gate with
    /// `select:` runs first.
    pub failed_before: Option<&'a std::collections::BTreeMap<String, Vec<String>>>,
}

/// A bound on the gates running at once across runs. A run takes one slot for its own thread
/// before its first gate, waiting for one if need be, and keeps it to its end; a group's other
/// threads borrow a slot per gate, only while one is free and no run is waiting for one, and
/// stop when none is, leaving the rest to the run's own thread. So the bound holds across every
/// run at every moment, a waiting run has the next slot given back, and a group never waits.
#[derive(Debug)]
pub struct Slots {
    limit: usize,
    count: Mutex<Count>,
    freed: Condvar,
}

#[derive(Debug, Default)]
struct Count {
    taken: usize,
    /// Runs waiting for their own slot: a borrower leaves the slots they wait for alone.
    waiting: usize,
}

/// A slot taken from [`Slots`], given back when dropped.
struct Taken<'a>(&'a Slots);

impl Slots {
    pub fn new(limit: usize) -> Self {
        Slots {
            limit: limit.max(1),
            count: Mutex::new(Count::default()),
            freed: Condvar::new(),
        }
    }

    fn count(&self) -> MutexGuard<'_, Count> {
        self.count.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A run's own slot, once one is free. A cancelled run takes none: it starts no gate.
    fn hold(&self, cancel: Option<&Cancel>) -> Option<Taken<'_>> {
        let mut count = self.count();
        count.waiting += 1;
        while count.taken >= self.limit {
            if cancel.is_some_and(Cancel::is_cancelled) {
                count.waiting -= 1;
                return None;
            }
            // Woken when a slot is given back; the timeout only looks at the cancel again.
            count = self
                .freed
                .wait_timeout(count, Duration::from_millis(100))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        count.waiting -= 1;
        count.taken += 1;
        Some(Taken(self))
    }

    /// Whether a run waits for its own slot now (a speculative run holding one gives way).
    pub fn wanted(&self) -> bool {
        self.count().waiting > 0
    }

    /// A slot if one is free now and no run waits for it.
    fn borrow(&self) -> Option<Taken<'_>> {
        let mut count = self.count();
        (count.taken + count.waiting < self.limit).then(|| {
            count.taken += 1;
            Taken(self)
        })
    }
}

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        self.0.count().taken -= 1;
        self.0.freed.notify_all();
    }
}

/// A person's choice of gates for one `check` (never a worker's: `watch` and `hook` run every
/// gate). A gate left out is reported `skipped`, its run going on as if it had passed, and the
/// verdict warns that it did not run.
#[derive(Clone, Copy, Default)]
pub struct Selection<'a> {
    /// Only these gates run (empty: every gate).
    pub only: &'a [String],
    /// These gates do not run.
    pub skip: &'a [String],
    /// A failing gate routed to BLOCK, or an ERROR, does not end the run: the next gate runs,
    /// and the verdict is decided once every gate has had its turn.
    pub keep_going: bool,
    /// Gates with `changed_only` look at every file, not only the changed ones (a CI run over
    /// the whole tree, as pre-commit's `--all-files`).
    pub all_files: bool,
    /// The user's global excludes, read by a `check` that is the user's own (see
    /// [`crate::git::UserExcludes::for_own_run`]).
    pub user_excludes: Option<&'a crate::git::UserExcludes>,
}

impl Selection<'_> {
    fn leaves_out(&self, gate: &str) -> Option<&'static str> {
        if self.skip.iter().any(|name| name == gate) {
            Some("--skip")
        } else if !self.only.is_empty() && !self.only.iter().any(|name| name == gate) {
            Some("--only")
        } else {
            None
        }
    }
}

/// Runs `pipeline` over `task` and decides.
pub fn run(rules: &Rules, pipeline: &Pipeline, task: &Task) -> Verdict {
    run_with(rules, pipeline, task, Supervision::default())
}

/// As [`run`], supervised.
pub fn run_with(
    rules: &Rules,
    pipeline: &Pipeline,
    task: &Task,
    supervision: Supervision<'_>,
) -> Verdict {
    let cancel = supervision.cancel;
    let _own_slot = supervision.slots.and_then(|slots| slots.hold(cancel));
    let started_at = SystemTime::now();
    let started = Instant::now();
    let runner = Runner {
        rules,
        pipeline,
        task,
        supervision,
        deadline: started + rules.defaults.budget,
        listed: Listed::default(),
    };
    let mut run = Run {
        gates: Vec::new(),
        reasons: Vec::new(),
        warnings: Vec::new(),
        errored: false,
    };
    let mut ran = vec![false; pipeline.gates.len()];
    // The gates that ran, in the order they did, with their outcomes.
    let mut order: Vec<(usize, GateOutcome)> = Vec::new();
    let mut repeats = 0;
    let mut next = Some(0);
    // A done signal that cannot be read is the worker's failure whatever the gates are
    // (docs/signal.md): no gate runs on it.
    if let Err(why) = &task.signal.report {
        run.reasons.push(format!("done signal: {why}"));
        next = None;
    } else {
        runner.pin_bases();
    }

    let decision = 'run: loop {
        let Some(index) = next.filter(|&i| i < pipeline.gates.len()) else {
            break if run.errored {
                Decision::Error
            } else if run.reasons.is_empty() {
                Decision::Pass
            } else {
                Decision::Fail
            };
        };
        if ran[index] && repeats == MAX_REPEATS {
            run.reasons.push(format!(
                "loop guard: gates ran {MAX_REPEATS} times again without the run ending (next: `{}`); check the on_pass/on_fail jumps for a cycle (`validator rules check` shows it)",
                pipeline.gates[index].name
            ));
            break Decision::Error;
        }
        if ran[index] {
            repeats += 1;
        }
        if cancel.is_some_and(Cancel::is_cancelled) {
            run.reasons
                .push("cancelled: validator is shutting down".into());
            break Decision::Error;
        }
        // A gate alone, or the group it starts: its gates run at once, and are settled in the
        // order they are written, as if they had run one after another.
        let members = group_at(pipeline, index);
        for at in members.clone() {
            ran[at] = true;
        }
        match run.take(&runner, members, &mut order) {
            Flow::Next(after) => next = after,
            Flow::End(decision) => break 'run decision,
        }
    };

    let decision = match decision {
        Decision::Pass => run.judge_again(&runner, &order),
        other => other,
    };
    runner.record_gate_writes();

    for (gate, _) in pipeline.gates.iter().zip(&ran).filter(|(_, ran)| !**ran) {
        let mut report = skipped(gate);
        report.summary = "not reached".into();
        run.gates.push(report);
    }

    Verdict {
        started_at: crate::timestamp::seconds(started_at),
        duration_ms: millis(started),
        gates: run.gates,
        reasons: run.reasons,
        warnings: run.warnings,
        ..verdict(rules, &pipeline.name, task, decision)
    }
}

/// A verdict on `task` by `pipeline`, with no gate, reason or time yet.
fn verdict(rules: &Rules, pipeline: &str, task: &Task, decision: Decision) -> Verdict {
    Verdict {
        schema: SCHEMA.into(),
        task: task.name.clone(),
        verdict: decision,
        attempt: task.attempt,
        max_attempts: rules.defaults.max_attempts,
        pipeline: pipeline.to_owned(),
        signal: SignalInfo::of(&task.signal),
        started_at: crate::timestamp::seconds(SystemTime::now()),
        duration_ms: 0,
        gates: Vec::new(),
        reasons: Vec::new(),
        warnings: Vec::new(),
        unchecked: unchecked(task),
        context: context(task),
        escalation: task.contract.as_deref().and_then(|c| c.escalation.clone()),
        signature: None,
    }
}

/// The gates `index` starts: the gates next to it in its `group:`, or itself alone.
fn group_at(pipeline: &Pipeline, index: usize) -> std::ops::Range<usize> {
    let Some(group) = pipeline.gates[index].group.as_deref() else {
        return index..index + 1;
    };
    let len = pipeline.gates[index..]
        .iter()
        .take_while(|gate| gate.group.as_deref() == Some(group))
        .count();
    index..index + len
}

/// What running one gate came to, before the run routes on it.
enum GateRun {
    /// Left out (`--only`/`--skip`, `only_if`): its report, and the warning it is worth, if any.
    NotRun(GateReport, Option<String>),
    /// Kept from starting by a group's `fail_fast`, because a sibling's failure ends the run.
    /// Settled while the run goes on, it is a failure: a gate that never ran never counts
    /// toward a PASS.
    Stopped(GateReport),
    /// The run's budget was spent before the gate could start.
    OutOfBudget,
    Ran {
        report: GateReport,
        blocked: Option<String>,
        /// `name: summary`, as reasons and warnings quote it.
        line: String,
        /// A pass to remember (the cache key it was taken under), once the run settles it.
        remember: Option<String>,
    },
}

/// Where the run goes after a settled gate.
enum Flow {
    Next(Option<usize>),
    End(Decision),
}

/// What is shared by every gate of one run.
struct Runner<'a> {
    rules: &'a Rules,
    pipeline: &'a Pipeline,
    task: &'a Task,
    supervision: Supervision<'a>,
    deadline: Instant,
    /// What the worker changed, listed once for every gate that asks.
    listed: Listed,
}

/// Which gates of a group have ended, for the gates that wait on them.
struct Ended {
    start: usize,
    ended: Mutex<Vec<bool>>,
    changed: Condvar,
}

impl Ended {
    fn new(members: std::ops::Range<usize>) -> Self {
        Ended {
            start: members.start,
            ended: Mutex::new(vec![false; members.len()]),
            changed: Condvar::new(),
        }
    }

    fn mark(&self, at: usize) {
        let mut ended = self.ended.lock().unwrap_or_else(PoisonError::into_inner);
        ended[at - self.start] = true;
        self.changed.notify_all();
    }

    /// Waits until every gate of `before` that `must` names has ended.
    fn wait_for(&self, before: std::ops::Range<usize>, must: impl Fn(usize) -> bool) {
        let waited: Vec<usize> = before.filter(|&at| must(at)).collect();
        let mut ended = self.ended.lock().unwrap_or_else(PoisonError::into_inner);
        while waited.iter().any(|&at| !ended[at - self.start]) {
            ended = self
                .changed
                .wait(ended)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// Marks its gate ended when dropped.
struct Ending<'a>(&'a Ended, usize);

impl Drop for Ending<'_> {
    fn drop(&mut self) {
        self.0.mark(self.1);
    }
}

/// What the run has found so far.
struct Run {
    gates: Vec<GateReport>,
    reasons: Vec<String>,
    warnings: Vec<String>,
    errored: bool,
}

impl Runner<'_> {
    /// A context for the run's own work between gates (`what` names it in logs): a gate's
    /// default timeout, cut to what is left of the run's budget.
    fn between_gates<'c>(&'c self, what: &'c str) -> Context<'c> {
        Context {
            task: self.task,
            gate: what,
            started: Instant::now(),
            failed_before: None,
            timeout: self
                .rules
                .defaults
                .timeout
                .min(self.deadline.saturating_duration_since(Instant::now())),
            state_dir: &self.rules.state,
            cancel: self.supervision.cancel,
            all_files: self.supervision.selection.all_files,
            user_excludes: self.supervision.selection.user_excludes,
            listed: &self.listed,
        }
    }

    /// Pins every revision the gates count the worker's changes from, before any gate runs:
    /// one that starts a program (a test) may commit, and what it committed must still count.
    fn pin_bases(&self) {
        let bases: std::collections::BTreeSet<&str> = self
            .pipeline
            .gates
            .iter()
            .filter_map(|gate| gate.rule.base())
            .collect();
        if bases.is_empty() {
            return;
        }
        self.listed.pin(
            &self.between_gates("(pinning the base)"),
            bases.iter().copied(),
        );
        self.listed.start(
            &self.between_gates("(listing the changes at the start)"),
            bases,
        );
    }

    /// Records the tool-cache files the run's gates wrote (see [`crate::toolcache`]), so the
    /// next run does not count them as the worker's. A cancelled run records nothing.
    fn record_gate_writes(&self) {
        if self.supervision.cancel.is_some_and(Cancel::is_cancelled) {
            return;
        }
        let ctx = self.between_gates("(recording the tool caches the gates wrote)");
        if let Some(record) = self.listed.gate_written(&ctx) {
            crate::toolcache::save(&self.rules.state, self.task, record);
        }
    }

    /// The gates of `members` run: one on this thread, a group on up to its pipeline's `jobs`
    /// threads at once: this one, and others for as long as shared slots are free (see
    /// [`Slots`]). Results in the order of `members`.
    fn steps(&self, members: std::ops::Range<usize>) -> Vec<GateRun> {
        if members.len() == 1 {
            return vec![self.step(members.start, None)];
        }
        let jobs = self.pipeline.jobs.clamp(1, members.len());
        let next = AtomicUsize::new(members.start);
        let failed = AtomicBool::new(false);
        let stop = self.pipeline.fail_fast.then_some(&failed);
        let done: Mutex<Vec<(usize, GateRun)>> = Mutex::new(Vec::new());
        let ended = Ended::new(members.clone());
        let work = |borrowing: bool| {
            loop {
                let slot = match self.supervision.slots {
                    Some(slots) if borrowing => match slots.borrow() {
                        Some(slot) => Some(slot),
                        None => break,
                    },
                    _ => None,
                };
                let at = next.fetch_add(1, Ordering::SeqCst);
                if at >= members.end {
                    break;
                }
                // As the serial run would, it reads what the gates it follows wrote: those
                // started before it (gates are taken in order), so the wait always ends.
                ended.wait_for(members.start..at, |earlier| self.must_follow(earlier, at));
                // Marked ended however the step ends, a panic included, so no sibling waits on.
                let _ending = Ending(&ended, at);
                let step = self.step(at, stop);
                drop(slot);
                if self.ends_the_run(at, &step) {
                    failed.store(true, Ordering::SeqCst);
                }
                done.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push((at, step));
            }
        };
        std::thread::scope(|scope| {
            for _ in 1..jobs {
                scope.spawn(|| work(true));
            }
            // The run's own thread, on its own slot: it works until every gate has started.
            work(false);
        });
        let mut done = done.into_inner().unwrap_or_else(PoisonError::into_inner);
        done.sort_by_key(|(at, _)| *at);
        done.into_iter().map(|(_, step)| step).collect()
    }

    /// The gate's outcome: remembered from the cache, taken from a speculative run, or from
    /// running its rule; and, for a pass under an unchanged key, the key to remember it by.
    fn outcome(&self, gate: &crate::config::Gate, ctx: &Context<'_>) -> (Outcome, Option<String>) {
        let task = self.task;
        let speculable = speculation::speculable(gate);
        if let Speculation::Record(_) = self.supervision.speculation {
            match speculation::before_done(gate) {
                BeforeDone::AsPassed => {
                    return (Outcome::pass("judged at done (the done signal)"), None);
                }
                // An error ends the run whatever the routing: no gate after it runs.
                BeforeDone::Stop => {
                    return (
                        Outcome::error("judged at done: the speculative run ends here"),
                        None,
                    );
                }
                BeforeDone::Record | BeforeDone::Route => {}
            }
        }
        let cache = self.supervision.cache;
        let deadline = ctx.deadline();
        let cache_key = cache.and_then(|_| cache::key(task, &self.pipeline.name, gate, &deadline));
        let cached = match (cache, &cache_key) {
            (Some(cache), Some(key)) => cache.hit(&task.name, &gate.name, &key.content),
            _ => false,
        };
        let speculated = match self.supervision.speculation {
            Speculation::Use(speculated) if speculable && !cached => {
                speculated.take(task, gate, ctx.timeout)
            }
            _ => None,
        };
        let outcome = if cached {
            Outcome {
                outcome: GateOutcome::Cached,
                ..Outcome::pass("passed before; its inputs, definition and tools are unchanged")
            }
        } else if let Some(outcome) = speculated {
            outcome
        } else {
            let outcome = gate.rule.run(ctx);
            if crate::rules::Rule::about(gate.kind()).starts_programs {
                self.listed.forget();
            }
            if let Speculation::Record(speculated) = self.supervision.speculation
                && speculable
            {
                speculated.record(task, gate, &outcome, ctx.started.elapsed());
            }
            outcome
        };
        // The key was taken before the run; a pass is remembered only if the inputs are still
        // what they were, or a worker could pass on files it swapped in during the run and
        // have the pass recorded for the ones it swaps back.
        let remember = match (&cache_key, outcome.outcome) {
            (Some(key), GateOutcome::Pass) => {
                cache::key(task, &self.pipeline.name, gate, &deadline)
                    .filter(|after| key.unchanged_by(after))
                    .map(|_| key.content.clone())
            }
            _ => None,
        };
        (outcome, remember)
    }

    /// Whether the worker changed a file `only_if` looks at (or whether it did cannot be told,
    /// in a repository or against a baseline): then what
    /// is missing is the worker's doing, and cannot turn the gate off (a deleted `[tool.ruff]`
    /// must not skip ruff).
    /// Why the gate at `index` is not started: a speculative run stops before a gate judged at
    /// done only, and `fail_fast` after a failure in its group.
    fn stopped_why(&self, index: usize, stop: Option<&AtomicBool>) -> Option<&'static str> {
        if self.stopped_before(index) {
            return Some(
                "not run speculatively: a gate of its group before it is judged at done only",
            );
        }
        stop.is_some_and(|stop| stop.load(Ordering::SeqCst))
            .then_some("not run: another gate of its group failed first (fail_fast)")
    }

    /// `Err` with why when `only_if` or `unless` leaves the gate out; else what `only_if` would
    /// have said had the change not touched what it reads, so a failure says why it ran.
    fn left_out_by_files(
        &self,
        gate: &crate::config::Gate,
        deadline: &Deadline<'_>,
    ) -> Result<Option<String>, String> {
        let mut kept_on = None;
        if let Some(only_if) = &gate.only_if
            && let Some(why) = only_if.unmet_by(self.task, deadline)
        {
            if !self.worker_changed_what(only_if) {
                return Err(why);
            }
            kept_on = Some(why);
        }
        if let Some(unless) = &gate.unless
            && let Some(why) = unless.present_by(self.task, deadline)
            && !self.worker_changed_what(unless)
        {
            return Err(why);
        }
        Ok(kept_on)
    }

    /// Counted from HEAD and from every `base:` the pipeline's gates name (a user who sets the
    /// start commit there, against a worker that commits, means it for this too).
    fn worker_changed_what(&self, only_if: &crate::rules::only_if::OnlyIf) -> bool {
        let ctx = self.between_gates("(only_if)");
        let mut bases: Vec<&str> = vec!["HEAD"];
        for gate in &self.pipeline.gates {
            if let Some(base) = gate.rule.base() {
                if !bases.contains(&base) {
                    bases.push(base);
                }
            }
        }
        bases.into_iter().any(|base| {
            match crate::rules::file_scope::changed(&ctx, base, ctx.started + ctx.timeout) {
                // Without git or a baseline there is no telling what the worker changed: every
                // file "changed", so only what is there decides.
                Ok(changes)
                    if matches!(changes.source, crate::rules::file_scope::Source::Everything) =>
                {
                    false
                }
                Ok(changes) => changes.files.iter().any(|rel| only_if.looks_at(rel)),
                Err(_) => true,
            }
        })
    }

    /// Whether, in a group, the gate at `later` must start after the gate written before it at
    /// `earlier` has ended, for the group to judge as the serial run does (see
    /// [`crate::rules::About`]): when `earlier` may write what `later` reads (it runs the
    /// worker's code, or it runs a program and `later` reads the task itself), and when
    /// `later` runs the worker's code, which could change what `earlier` is still reading.
    fn must_follow(&self, earlier: usize, later: usize) -> bool {
        let about = |at: usize| crate::rules::Rule::about(self.pipeline.gates[at].kind());
        let (earlier, later) = (about(earlier), about(later));
        earlier.runs_workers_code
            || later.runs_workers_code
            || (earlier.starts_programs && !later.starts_programs)
    }

    /// Whether a speculative run stops in the group of the gate at `index` before it: at a
    /// gate written earlier in the group that it cannot judge before done
    /// ([`BeforeDone::Stop`]), whose siblings after it must not run (at done it might have
    /// stopped them, `fail_fast`).
    fn stopped_before(&self, index: usize) -> bool {
        let gates = &self.pipeline.gates;
        let Some(group) = gates[index].group.as_deref() else {
            return false;
        };
        matches!(self.supervision.speculation, Speculation::Record(_))
            && gates[..index]
                .iter()
                .rev()
                .take_while(|gate| gate.group.as_deref() == Some(group))
                .any(|gate| speculation::before_done(gate) == BeforeDone::Stop)
    }

    /// Whether the gate at `index`, having come to `step`, ends the run whatever its siblings
    /// find: only such a failure may keep them from starting (`fail_fast`). A failure routed
    /// on (an advisory gate) does not, nor one `--keep-going` runs past.
    fn ends_the_run(&self, index: usize, step: &GateRun) -> bool {
        let GateRun::Ran {
            report, blocked, ..
        } = step
        else {
            return false;
        };
        let keep_going = self.supervision.selection.keep_going;
        blocked.is_some()
            || match report.outcome {
                GateOutcome::Error => !keep_going,
                GateOutcome::Fail => match self.pipeline.gates[index].on_fail {
                    Route::Block => !keep_going,
                    route => !routes_on(route),
                },
                _ => false,
            }
    }

    /// Runs the gate at `index`, unless it is left out; `stop` set means a gate of its group
    /// failed in a way that ends the run, and `fail_fast` keeps this one from starting.
    fn step(&self, index: usize, stop: Option<&AtomicBool>) -> GateRun {
        self.step_told(index, stop, self.supervision.observer)
    }

    /// As [`Self::step`], telling `observer` (if any) of the gate's start and end.
    fn step_told(
        &self,
        index: usize,
        stop: Option<&AtomicBool>,
        observer: Option<&dyn Observer>,
    ) -> GateRun {
        let gate = &self.pipeline.gates[index];
        let supervision = Supervision {
            observer,
            ..self.supervision
        };
        let not_run = |summary: String, warning: Option<String>| {
            let mut report = skipped(gate);
            report.summary = summary;
            if let Some(observer) = supervision.observer {
                observer.gate_finished(self.task, &report);
            }
            GateRun::NotRun(report, warning)
        };
        if let Some(flag) = supervision.selection.leaves_out(&gate.name) {
            return not_run(
                format!("not run ({flag})"),
                Some(format!("{}: not run ({flag})", gate.name)),
            );
        }
        let run_deadline = Deadline::new(self.deadline, supervision.cancel);
        let kept_on = match self.left_out_by_files(gate, &run_deadline) {
            Ok(kept_on) => kept_on,
            Err(why) => return not_run(why, None),
        };
        if let Some(why) = self.stopped_why(index, stop) {
            let mut report = skipped(gate);
            report.summary = why.into();
            if let Some(observer) = supervision.observer {
                observer.gate_finished(self.task, &report);
            }
            return GateRun::Stopped(report);
        }
        let remaining = self.deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return GateRun::OutOfBudget;
        }
        let task = self.task;
        let ctx = Context {
            task,
            gate: &gate.name,
            timeout: gate
                .timeout
                .unwrap_or(self.rules.defaults.timeout)
                .min(remaining),
            state_dir: &self.rules.state,
            cancel: supervision.cancel,
            all_files: supervision.selection.all_files,
            user_excludes: supervision.selection.user_excludes,
            listed: &self.listed,
            started: Instant::now(),
            failed_before: supervision
                .failed_before
                .and_then(|failed| failed.get(&gate.name))
                .map(Vec::as_slice),
        };
        tracing::debug!(task = %task.name, gate = %gate.name, "gate started");
        if let Some(observer) = supervision.observer {
            observer.gate_started(task, &gate.name);
        }
        let gate_started = Instant::now();
        let (mut outcome, remember) = self.outcome(gate, &ctx);
        if let Some(about) = &gate.about {
            outcome.summary = format!("{about} — {}", outcome.summary);
        }
        if let Some(why) = kept_on.filter(|_| outcome.outcome != GateOutcome::Pass) {
            outcome.summary = format!(
                "{}; it ran though {}, because the change touches a file `only_if` reads (on a push the remote holds none of, every file is the change)",
                outcome.summary,
                why.trim_start_matches("not run: ")
                    .split("; add")
                    .next()
                    .unwrap_or_default()
            );
        }
        tracing::debug!(task = %task.name, gate = %gate.name, outcome = outcome.outcome.as_str(), "gate finished");
        let line = format!("{}: {}", gate.name, outcome.summary);
        let blocked = outcome.blocked.as_deref().map(str::to_owned);
        let failed = outcome.outcome == GateOutcome::Fail;
        let mut report = report(&gate.name, gate.kind().as_str(), gate_started, outcome);
        if failed {
            report.fix = gate.rule.fix().map(shell_words::join);
        }
        if let Some(observer) = supervision.observer {
            observer.gate_finished(task, &report);
        }
        GateRun::Ran {
            report,
            blocked,
            line,
            remember,
        }
    }
}

impl Run {
    /// Takes the gate at `index`'s step into the run, and says where the run goes next.
    fn settle(&mut self, runner: &Runner<'_>, index: usize, step: GateRun) -> Flow {
        let gate = &runner.pipeline.gates[index];
        let rules = runner.rules;
        let selection = runner.supervision.selection;
        let (report, blocked, line, remember) = match step {
            GateRun::NotRun(report, warning) => {
                self.gates.push(report);
                self.warnings.extend(warning);
                return Flow::Next(follow(gate.on_pass, index));
            }
            GateRun::Stopped(report) => {
                self.gates.push(report);
                self.reasons.push(format!(
                    "{}: did not run (fail_fast), and the run did not end before it",
                    gate.name
                ));
                return Flow::End(Decision::Fail);
            }
            GateRun::OutOfBudget => {
                self.reasons.push(format!(
                    "the run's budget of {} ran out before gate `{}`",
                    duration::format(rules.defaults.budget),
                    gate.name
                ));
                return Flow::End(Decision::Fail);
            }
            GateRun::Ran {
                report,
                blocked,
                line,
                remember,
            } => (report, blocked, line, remember),
        };
        if let (Some(cache), Some(key)) = (runner.supervision.cache, remember) {
            cache.store(&runner.task.name, &gate.name, &key);
        }
        let result = report.outcome;
        self.gates.push(report);

        if result != GateOutcome::Pass && Instant::now() >= runner.deadline {
            self.reasons.push(format!(
                "the run's budget of {} ran out during gate `{}` ({})",
                duration::format(rules.defaults.budget),
                gate.name,
                line
            ));
            return Flow::End(Decision::Fail);
        }
        if let Some(reason) = blocked {
            self.reasons.push(format!("{}: {reason}", gate.name));
            return Flow::End(Decision::Blocked);
        }
        let route = match result {
            GateOutcome::Error if selection.keep_going => {
                self.reasons.push(line);
                self.errored = true;
                return Flow::Next(Some(index + 1));
            }
            GateOutcome::Error => {
                self.reasons.push(line);
                return Flow::End(Decision::Error);
            }
            GateOutcome::Fail => {
                if routes_on(gate.on_fail) {
                    self.warnings.push(line.clone());
                }
                gate.on_fail
            }
            _ => gate.on_pass,
        };
        match route {
            Route::Continue => Flow::Next(Some(index + 1)),
            Route::Goto(target) => Flow::Next(Some(target)),
            Route::Pass => Flow::End(Decision::Pass),
            Route::Block => {
                self.reasons.push(if result == GateOutcome::Fail {
                    line
                } else {
                    format!("{}: routed to BLOCK after passing", gate.name)
                });
                if selection.keep_going {
                    return Flow::Next(Some(index + 1));
                }
                Flow::End(Decision::Fail)
            }
            Route::Stop => {
                self.reasons
                    .push(format!("{line} (routed to STOP; a person decides)"));
                Flow::End(Decision::Blocked)
            }
        }
    }

    /// Runs the gates of `members` (one, or a group) and settles them in written order: where
    /// the run goes next, or how it ended. `order` gets each gate that ran, with its outcome.
    fn take(
        &mut self,
        runner: &Runner<'_>,
        members: std::ops::Range<usize>,
        order: &mut Vec<(usize, GateOutcome)>,
    ) -> Flow {
        let steps = runner.steps(members.clone());
        let mut ended = None;
        let mut next = Flow::Next(Some(members.end));
        for (at, step) in members.zip(steps) {
            if let GateRun::Ran { report, .. } = &step {
                order.push((at, report.outcome));
            }
            match ended {
                // The run ended at an earlier gate of the group; this one ran all the same, and
                // what it found is kept (a failure after the first is a reason too).
                Some(_) => self.after_the_end(&runner.pipeline.gates[at], step),
                None => match self.settle(runner, at, step) {
                    Flow::End(decision) => ended = Some(decision),
                    flow => next = flow,
                },
            }
        }
        ended.map_or(next, Flow::End)
    }

    /// Before a PASS: the gates that judge the task in-process and passed before a program
    /// ran (a test runs the worker's code, which may write anything) are run again on the task
    /// as it is now, so nothing written after them escapes them. What fails now fails the run.
    fn judge_again(&mut self, runner: &Runner<'_>, order: &[(usize, GateOutcome)]) -> Decision {
        let about = |at: usize| crate::rules::Rule::about(runner.pipeline.gates[at].kind());
        let Some(last_program) = order.iter().rposition(|(at, _)| about(*at).starts_programs)
        else {
            return Decision::Pass;
        };
        let mut again: Vec<usize> = order[..last_program]
            .iter()
            .filter(|(at, outcome)| {
                !about(*at).starts_programs
                    && matches!(outcome, GateOutcome::Pass | GateOutcome::Cached)
            })
            .map(|(at, _)| *at)
            .collect();
        again.dedup();
        if again.is_empty() {
            return Decision::Pass;
        }
        runner.listed.forget();
        let mut decision = Decision::Pass;
        for at in again {
            let gate = &runner.pipeline.gates[at];
            // Not told to the observers: the gate's line was shown; only a failure now changes
            // what the run says.
            let (report, line) = match runner.step_told(at, None, None) {
                GateRun::Ran { report, line, .. } => (report, line),
                GateRun::OutOfBudget => {
                    self.reasons.push(format!(
                        "the run's budget of {} ran out before gate `{}` could be judged again after the programs that ran after it",
                        duration::format(runner.rules.defaults.budget),
                        gate.name
                    ));
                    return Decision::Fail;
                }
                GateRun::NotRun(..) | GateRun::Stopped(_) => continue,
            };
            let outcome = report.outcome;
            if matches!(outcome, GateOutcome::Fail | GateOutcome::Error) {
                self.reasons.push(format!(
                    "{line} (judged again after the programs that ran after it)"
                ));
                decision = if outcome == GateOutcome::Error || decision == Decision::Error {
                    Decision::Error
                } else {
                    Decision::Fail
                };
                // The verdict shows what the gate finds now.
                if let Some(shown) = self.gates.iter_mut().rev().find(|g| g.name == gate.name) {
                    *shown = report;
                }
            }
        }
        decision
    }

    /// A gate of a group that ran although the run ended at an earlier one: reported as it
    /// ran, its failure a reason after the first (or a warning, if routed on).
    fn after_the_end(&mut self, gate: &crate::config::Gate, step: GateRun) {
        match step {
            GateRun::Ran { report, line, .. } => {
                match report.outcome {
                    GateOutcome::Fail if routes_on(gate.on_fail) => self.warnings.push(line),
                    GateOutcome::Fail | GateOutcome::Error => self.reasons.push(line),
                    _ => {}
                }
                self.gates.push(report);
            }
            GateRun::NotRun(report, warning) => {
                self.gates.push(report);
                self.warnings.extend(warning);
            }
            GateRun::Stopped(report) => self.gates.push(report),
            GateRun::OutOfBudget => {
                let mut report = skipped(gate);
                report.summary = "not run: the run's budget ran out".into();
                self.gates.push(report);
            }
        }
    }
}

/// Whether a failure routed this way lets the run go on (a warning, an advisory gate).
fn routes_on(on_fail: Route) -> bool {
    matches!(on_fail, Route::Continue | Route::Goto(_) | Route::Pass)
}

fn unchecked(task: &Task) -> Vec<String> {
    task.contract
        .as_deref()
        .map(|c| c.unchecked.clone())
        .unwrap_or_default()
}

fn context(task: &Task) -> Option<String> {
    task.contract.as_deref().and_then(|c| c.context.clone())
}

/// Where a gate that did not run sends the run: its `on_pass` jump, else the next gate. A
/// route that would end the run (PASS, BLOCK, STOP) is not taken: a gate that did not run
/// must not decide the run, least of all more leniently than it would have.
fn follow(on_pass: Route, index: usize) -> Option<usize> {
    match on_pass {
        Route::Goto(target) => Some(target),
        Route::Continue | Route::Pass | Route::Block | Route::Stop => Some(index + 1),
    }
}

fn skipped(gate: &crate::config::Gate) -> GateReport {
    GateReport {
        name: gate.name.clone(),
        rule: gate.kind().as_str().into(),
        outcome: GateOutcome::Skipped,
        duration_ms: 0,
        exit_code: None,
        summary: String::new(),
        findings: Vec::new(),
        output_tail: None,
        fix: None,
        changed_files: None,
        failed_tests: Vec::new(),
    }
}

/// A verdict reached without running any gate (a tripped circuit breaker, no pipeline for the
/// task): every gate of `pipeline`, if there is one, is reported skipped.
pub fn decide_without_running(
    rules: &Rules,
    pipeline: Option<&Pipeline>,
    task: &Task,
    decision: Decision,
    reason: String,
) -> Verdict {
    Verdict {
        gates: pipeline
            .map(|p| p.gates.iter().map(skipped).collect())
            .unwrap_or_default(),
        reasons: vec![reason],
        ..verdict(
            rules,
            pipeline.map_or("", |p| p.name.as_str()),
            task,
            decision,
        )
    }
}

fn report(name: &str, rule: &str, started: Instant, outcome: Outcome) -> GateReport {
    GateReport {
        name: name.into(),
        rule: rule.into(),
        outcome: outcome.outcome,
        duration_ms: millis(started).saturating_add(u64::from(outcome.spent_before_ms)),
        exit_code: outcome.exit_code,
        summary: outcome.summary,
        findings: outcome.findings,
        output_tail: outcome.output_tail,
        fix: None,
        changed_files: outcome.changed_files.map(|changed| *changed),
        failed_tests: outcome.failed_tests.map(|names| *names).unwrap_or_default(),
    }
}

fn millis(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::Slots;
    use validator_process::Cancel;

    #[test]
    fn slots_are_lent_only_while_free_and_come_back_when_dropped() {
        let slots = Slots::new(3);
        let own = slots.hold(None);
        let borrowed = slots.borrow();
        assert!(borrowed.is_some());
        let other = slots.hold(None);
        // Three taken: nothing more to borrow until one comes back.
        assert!(slots.borrow().is_none());
        drop(borrowed);
        assert!(slots.borrow().is_some());
        drop((own, other));
        assert_eq!(slots.count().taken, 0);
    }

    #[test]
    fn a_run_waits_for_a_borrowed_slot_to_come_back() {
        let slots = Slots::new(1);
        let borrowed = slots.borrow();
        std::thread::scope(|scope| {
            let waiting = scope.spawn(|| slots.hold(None).is_some());
            std::thread::sleep(std::time::Duration::from_millis(50));
            drop(borrowed);
            assert_eq!(waiting.join().ok(), Some(true));
        });
    }

    #[test]
    fn a_slot_given_back_goes_to_a_waiting_run_not_to_a_borrower() {
        let slots = Slots::new(2);
        let _own = slots.hold(None);
        let borrowed = slots.borrow();
        let (release, released) = std::sync::mpsc::channel::<()>();
        std::thread::scope(|scope| {
            // The waiting run keeps its slot until told, so the check below sees it held.
            let slots = &slots;
            let waiting = scope.spawn(move || {
                let held = slots.hold(None);
                let _ = released.recv();
                held.is_some()
            });
            while slots.count().waiting == 0 {
                std::thread::yield_now();
            }
            drop(borrowed);
            // Whether or not the waiting run has woken yet, the slot is not lent again.
            assert!(slots.borrow().is_none());
            let _ = release.send(());
            assert_eq!(waiting.join().ok(), Some(true));
        });
    }

    #[test]
    fn cancelled_runs_stop_waiting() {
        let slots = Slots::new(1);
        let _held = slots.hold(None);
        let cancel = Cancel::default();
        cancel.cancel();
        assert!(slots.hold(Some(&cancel)).is_none());
    }
}
