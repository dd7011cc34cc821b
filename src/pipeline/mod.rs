//! Running a pipeline over a task: gates in order, routed by `on_pass` / `on_fail` as in
//! gates.json, under a loop guard (64 runs of gates that already ran) and the run's time budget. The result is a
//! [`Verdict`] value; nothing here prints or writes.

use std::time::{Instant, SystemTime};

use crate::cache::{self, Cache};
use crate::config::{Pipeline, Route, Rules};
use crate::duration;
use crate::process::Cancel;
use crate::rules::{Context, Outcome};
use crate::task::Task;
use crate::verdict::{Decision, GateOutcome, GateReport, SCHEMA, SignalInfo, Verdict};

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
    let started_at = SystemTime::now();
    let started = Instant::now();
    let deadline = started + rules.defaults.budget;
    let mut gates: Vec<GateReport> = Vec::new();
    let mut ran = vec![false; pipeline.gates.len()];
    let mut repeats = 0;
    let mut reasons = Vec::new();
    let mut warnings = Vec::new();
    let mut next = Some(0);
    let selection = supervision.selection;
    let mut errored = false;
    // A done signal that cannot be read is the worker's failure whatever the gates are
    // (docs/signal.md): no gate runs on it.
    if let Err(why) = &task.signal.report {
        reasons.push(format!("done signal: {why}"));
        next = None;
    }

    let decision = loop {
        let Some(index) = next.filter(|&i| i < pipeline.gates.len()) else {
            break if errored {
                Decision::Error
            } else if reasons.is_empty() {
                Decision::Pass
            } else {
                Decision::Fail
            };
        };
        if ran[index] && repeats == MAX_REPEATS {
            reasons.push(format!(
                "loop guard: gates ran {MAX_REPEATS} times again without the run ending (next: `{}`); check the on_pass/on_fail jumps for a cycle (`validator rules check` shows it)",
                pipeline.gates[index].name
            ));
            break Decision::Error;
        }
        if ran[index] {
            repeats += 1;
        }
        if cancel.is_some_and(Cancel::is_cancelled) {
            reasons.push("cancelled: validator is shutting down".into());
            break Decision::Error;
        }
        let gate = &pipeline.gates[index];
        if let Some(flag) = selection.leaves_out(&gate.name) {
            warnings.push(format!("{}: not run ({flag})", gate.name));
            ran[index] = true;
            let mut report = skipped(gate);
            report.summary = format!("not run ({flag})");
            gates.push(report);
            if let (Some(observer), Some(finished)) = (supervision.observer, gates.last()) {
                observer.gate_finished(task, finished);
            }
            next = follow(gate.on_pass, index);
            continue;
        }
        if let Some(why) = gate
            .only_if
            .as_ref()
            .and_then(|only_if| only_if.unmet(task))
        {
            ran[index] = true;
            let mut report = skipped(gate);
            report.summary = why;
            gates.push(report);
            if let (Some(observer), Some(finished)) = (supervision.observer, gates.last()) {
                observer.gate_finished(task, finished);
            }
            next = follow(gate.on_pass, index);
            continue;
        }
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            reasons.push(format!(
                "the run's budget of {} ran out before gate `{}`",
                duration::format(rules.defaults.budget),
                gate.name
            ));
            break Decision::Fail;
        }
        let ctx = Context {
            task,
            gate: &gate.name,
            timeout: gate
                .timeout
                .unwrap_or(rules.defaults.timeout)
                .min(remaining),
            state_dir: &rules.state,
            cancel,
            all_files: selection.all_files,
        };
        tracing::debug!(task = %task.name, gate = %gate.name, "gate started");
        if let Some(observer) = supervision.observer {
            observer.gate_started(task, &gate.name);
        }
        let gate_started = Instant::now();
        let cache_key = supervision
            .cache
            .and_then(|_| cache::key(task, &pipeline.name, gate));
        let cached = match (supervision.cache, &cache_key) {
            (Some(cache), Some(key)) => cache.hit(&task.name, &gate.name, &key.content),
            _ => false,
        };
        let mut outcome = if cached {
            Outcome {
                outcome: GateOutcome::Cached,
                ..Outcome::pass("passed before; its inputs, definition and tools are unchanged")
            }
        } else {
            gate.rule.run(&ctx)
        };
        // The key was taken before the run; a pass is remembered only if the inputs are still
        // what they were, or a worker could pass on files it swapped in during the run and
        // have the pass recorded for the ones it swaps back.
        if let (Some(cache), Some(key), GateOutcome::Pass) =
            (supervision.cache, &cache_key, outcome.outcome)
        {
            if cache::key(task, &pipeline.name, gate).is_some_and(|after| key.unchanged_by(&after))
            {
                cache.store(&task.name, &gate.name, &key.content);
            }
        }
        if let Some(about) = &gate.about {
            outcome.summary = format!("{about} — {}", outcome.summary);
        }
        tracing::debug!(task = %task.name, gate = %gate.name, outcome = outcome.outcome.as_str(), "gate finished");
        ran[index] = true;
        let line = format!("{}: {}", gate.name, outcome.summary);
        let blocked = outcome.blocked.clone();
        let result = outcome.outcome;
        let mut gate_report = report(&gate.name, gate.kind().as_str(), gate_started, outcome);
        if result == GateOutcome::Fail {
            gate_report.fix = gate.rule.fix().map(shell_words::join);
        }
        gates.push(gate_report);
        if let (Some(observer), Some(finished)) = (supervision.observer, gates.last()) {
            observer.gate_finished(task, finished);
        }

        if result != GateOutcome::Pass && Instant::now() >= deadline {
            reasons.push(format!(
                "the run's budget of {} ran out during gate `{}` ({})",
                duration::format(rules.defaults.budget),
                gate.name,
                line
            ));
            break Decision::Fail;
        }
        if let Some(reason) = blocked {
            reasons.push(format!("{}: {reason}", gate.name));
            break Decision::Blocked;
        }
        let route = match result {
            GateOutcome::Error if selection.keep_going => {
                reasons.push(line);
                errored = true;
                next = Some(index + 1);
                continue;
            }
            GateOutcome::Error => {
                reasons.push(line);
                break Decision::Error;
            }
            GateOutcome::Fail => {
                if matches!(gate.on_fail, Route::Continue | Route::Goto(_) | Route::Pass) {
                    warnings.push(line.clone());
                }
                gate.on_fail
            }
            _ => gate.on_pass,
        };
        match route {
            Route::Continue => next = Some(index + 1),
            Route::Goto(target) => next = Some(target),
            Route::Pass => break Decision::Pass,
            Route::Block => {
                reasons.push(if result == GateOutcome::Fail {
                    line
                } else {
                    format!("{}: routed to BLOCK after passing", gate.name)
                });
                if selection.keep_going {
                    next = Some(index + 1);
                    continue;
                }
                break Decision::Fail;
            }
            Route::Stop => {
                reasons.push(format!("{line} (routed to STOP; a person decides)"));
                break Decision::Blocked;
            }
        }
    };

    for (gate, _) in pipeline.gates.iter().zip(&ran).filter(|(_, ran)| !**ran) {
        let mut report = skipped(gate);
        report.summary = "not reached".into();
        gates.push(report);
    }

    Verdict {
        schema: SCHEMA.into(),
        task: task.name.clone(),
        verdict: decision,
        attempt: task.attempt,
        max_attempts: rules.defaults.max_attempts,
        pipeline: pipeline.name.clone(),
        signal: SignalInfo::of(&task.signal),
        started_at: crate::timestamp::seconds(started_at),
        duration_ms: millis(started),
        gates,
        reasons,
        warnings,
        unchecked: unchecked(task),
        context: context(task),
        signature: None,
    }
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
        schema: SCHEMA.into(),
        task: task.name.clone(),
        verdict: decision,
        attempt: task.attempt,
        max_attempts: rules.defaults.max_attempts,
        pipeline: pipeline.map(|p| p.name.clone()).unwrap_or_default(),
        signal: SignalInfo::of(&task.signal),
        started_at: crate::timestamp::seconds(SystemTime::now()),
        duration_ms: 0,
        gates: pipeline
            .map(|p| p.gates.iter().map(skipped).collect())
            .unwrap_or_default(),
        reasons: vec![reason],
        warnings: Vec::new(),
        unchecked: unchecked(task),
        context: context(task),
        signature: None,
    }
}

fn report(name: &str, rule: &str, started: Instant, outcome: Outcome) -> GateReport {
    GateReport {
        name: name.into(),
        rule: rule.into(),
        outcome: outcome.outcome,
        duration_ms: millis(started),
        exit_code: outcome.exit_code,
        summary: outcome.summary,
        findings: outcome.findings,
        output_tail: outcome.output_tail,
        fix: None,
    }
}

fn millis(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}
