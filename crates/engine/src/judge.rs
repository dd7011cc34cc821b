//! Judging one task: the one path `check`, the watcher and the hook adapters share. The
//! contract is looked up and expanded, the circuit breakers are applied, the pipeline runs (or
//! a breaker decides without it), the strikes are counted, the verdict is signed and the
//! contract's violations are logged.
//!
//! What differs between the front ends is said by the caller, never copied: the [`History`] a
//! task keeps across runs (none for `check`; per task for the watcher; per agent session for a
//! hook, see [`Keeper`]), the signing key, the cache, the cancel and the observer. Writing the
//! verdict and the state is the caller's: the watcher publishes (and retries), the hook saves
//! the session and answers, `check` prints.

use std::sync::Arc;

use crate::config::{Pipeline, Rules};
use crate::contract::Contract;
use crate::events::{Breaker, Event, EventLog};
pub use crate::pipeline::Supervision;
use crate::pipeline::{self, Observer};
use crate::speculation::Speculation;
use crate::state::{self, TaskState};
use crate::task::Task;
use crate::verdict::sign;
use crate::verdict::{Decision, GateReport, Verdict};
use validator_process::Cancel;

pub use crate::verdict::sign::Signing;

/// What a run is judged with besides the task.
pub struct Judge<'a> {
    rules: &'a Rules,
    /// Verifies the verdicts a contract's dependencies name, and signs this run's verdict when
    /// the judge is [`Judge::signed`].
    key: &'a Signing,
    sign: bool,
    /// How the front end supervises each run: its cancel, observer, cache, selection, slots and
    /// speculation. The failed tests a `select:` gate runs first come from the history when
    /// there is one.
    supervision: Supervision<'a>,
}

impl<'a> Judge<'a> {
    /// A judge of `rules` whose verdicts are not signed (`key` still verifies the verdicts a
    /// contract's dependencies name).
    pub fn new(rules: &'a Rules, key: &'a Signing, supervision: Supervision<'a>) -> Self {
        Judge {
            rules,
            key,
            sign: false,
            supervision,
        }
    }

    /// The same judge, signing each verdict with the key when there is one.
    pub fn signed(self, sign: bool) -> Self {
        Judge { sign, ..self }
    }
}

/// One task to judge.
pub struct Case<'a> {
    /// The task, its attempt already set (from the history when there is one).
    pub task: Task,
    /// The pipeline to run, or what to answer when there is none for the task.
    pub pipeline: Result<&'a Pipeline, (Decision, String)>,
    /// A reason to fail the task before anything else (the watcher's task directory refused).
    pub refused: Option<String>,
}

/// Whose history it is, which decides the few things the front ends do differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keeper {
    /// A staged task under the watcher: a signal is judged once (a run repeated after a crash
    /// counts nothing again), a breaker's reason names `validator reset <task>`, and each run
    /// is announced with `run_started`.
    Task,
    /// An agent session under a hook: every stop is a new attempt, a BLOCKED verdict holds the
    /// session until a person resets it, and the reset command is in the hook's answer.
    Session,
}

/// What a task remembers between runs: its attempts and breakers, and the event log its runs
/// append to. `check` keeps none.
pub struct History<'a> {
    /// The state's name: the task's, or the hook session's key.
    pub name: String,
    state_dir: std::path::PathBuf,
    pub state: TaskState,
    /// The signal the run answers: the same signal keeps its attempt number.
    identity: Option<String>,
    /// Whether the state file existed when it was read: one gone by the end of the run was
    /// removed by `validator reset`, whose decision then stands.
    existed: bool,
    pub events: &'a EventLog,
    pub agent: Option<String>,
    pub keeper: Keeper,
    /// The task's contract's escalation paths, which a breaker's event names.
    escalation: Option<crate::verdict::Escalation>,
}

impl<'a> History<'a> {
    /// `name`'s history under `rules`, with the attempt for the signal `identity` counted.
    pub fn load(
        rules: &Rules,
        name: &str,
        identity: Option<String>,
        events: &'a EventLog,
        agent: Option<String>,
        keeper: Keeper,
    ) -> Self {
        let existed = state::path(&rules.state, name).exists();
        let mut state = TaskState::load(&rules.state, name);
        state.attempt_for(identity.clone());
        History {
            name: name.to_owned(),
            state_dir: rules.state.clone(),
            state,
            identity,
            existed,
            events,
            agent,
            keeper,
            escalation: None,
        }
    }

    /// Whether the state is to be saved: not when `validator reset` removed it during the run,
    /// so the person's decision stands and the next signal is attempt 1.
    pub fn keeps_state(&self) -> bool {
        !self.existed || state::path(&self.state_dir, &self.name).exists()
    }

    /// Saves the state, unless a reset came during the run.
    pub fn save(&mut self) -> Result<(), crate::error::Error> {
        if !self.keeps_state() {
            return Ok(());
        }
        self.state.save(&self.state_dir, &self.name)
    }

    /// The attempt this run is.
    pub fn attempt(&self) -> u32 {
        self.state.attempt
    }

    /// Whether a breaker holds the task: its answer cannot change until a person resets it.
    pub fn is_held(&self) -> bool {
        self.state.escalated.is_some() || self.state.blocked.is_some()
    }

    fn record(&self, event: Event<'_>) {
        self.events
            .record(Some(&self.name), self.agent.as_deref(), event);
    }

    /// Trips a breaker: the task is ESCALATED until a person resets it.
    fn escalate(&mut self, breaker: Breaker, why: &str) {
        self.state.escalated = Some(why.to_owned());
        self.record(Event::Escalated {
            breaker,
            escalation: self.escalation.as_ref(),
            reason: why,
        });
    }

    /// What a person is told to do about a tripped breaker.
    fn after_deciding(&self) -> String {
        match self.keeper {
            Keeper::Task => format!(
                "a person must look; `validator reset {}` after deciding",
                self.name
            ),
            Keeper::Session => "a person must look".to_owned(),
        }
    }
}

/// A judged run, not yet written anywhere.
pub struct Judged {
    pub verdict: Verdict,
    /// Shutdown or a stop signal cancelled the run: the history was not touched, and the
    /// verdict (an ERROR) answers nothing the watcher would publish.
    pub cancelled: bool,
}

impl Judge<'_> {
    /// Judges `case`, counting it in `history` when there is one.
    pub fn judge(&self, case: Case<'_>, mut history: Option<&mut History<'_>>) -> Judged {
        let rules = self.rules;
        let Case {
            task,
            pipeline,
            refused,
        } = case;
        let (contract, contract_error) = match crate::contract::Contract::for_task(
            rules, &task.name,
        ) {
            // The worker could write what it is held to: no contract can be trusted there.
            Ok(Some(contract)) if task.worker_may_write(&contract.path) => (
                None,
                Some(format!(
                    "the contract {} lies where the worker writes ({}); keep contracts outside it (`contracts:` in the rules file)",
                    contract.path.display(),
                    task.worker_area.display()
                )),
            ),
            Ok(contract) => (contract, None),
            Err(err) => (None, Some(format!("{err:#}"))),
        };
        let task = task.with_contract(contract.as_ref().map(Contract::handoff));
        // A task a person already holds has nothing new to tell the coordinator.
        let held = history.as_deref().is_some_and(History::is_held);
        if let Some(history) = history.as_deref_mut() {
            history.escalation = contract.as_ref().and_then(|c| c.escalation.clone());
        }
        let reviewers = pipeline.as_ref().map(|p| reviewers(p)).unwrap_or_default();

        // Reasons to decide without running any gate, in order of precedence.
        let precluded = if let Some(why) = refused {
            Some((Decision::Fail, why))
        } else if let Some(why) = contract_error {
            // The coordinator's contract is broken: the task cannot be judged against it.
            Some((Decision::Error, why))
        } else if let Some(history) = history.as_deref_mut() {
            breakers(history, &rules.defaults)
        } else {
            None
        };
        let mut verdict = match (precluded, pipeline) {
            (Some((decision, why)), pipeline) => {
                pipeline::decide_without_running(rules, pipeline.ok(), &task, decision, why)
            }
            (None, Ok(pipeline)) => {
                self.run(pipeline, &task, contract.as_ref(), history.as_deref())
            }
            (None, Err((decision, why))) => {
                pipeline::decide_without_running(rules, None, &task, decision, why)
            }
        };
        // A cancelled run was not the worker's doing: it counts nothing and logs nothing. In
        // a hook it may well be: the gates' commands are the worker's code and can signal
        // validator, and an ERROR there would let the agent stop. So there it is a failure
        // that counts, and the breakers bound it.
        let mut cancelled = self.supervision.cancel.is_some_and(Cancel::is_cancelled);
        if cancelled
            && history
                .as_deref()
                .is_some_and(|h| h.keeper == Keeper::Session)
        {
            verdict.verdict = Decision::Fail;
            verdict.reasons = vec![
                "validator was stopped by a signal before it finished judging this stop (a command of the gates may have sent it), so the stop is not let through".into(),
            ];
            cancelled = false;
        }
        if !cancelled {
            if let Some(history) = history.as_deref_mut() {
                let counted_now = history.state.judged != history.identity;
                history.state.record_failed_tests(&verdict);
                count(history, &mut verdict, rules.defaults.strikes);
                if counted_now {
                    history.state.record_review(reviewers, &verdict);
                }
                // After the strikes, which win a tie: the same failure is the plainer reason.
                if verdict.verdict == Decision::Fail && counted_now {
                    drift(history, &mut verdict, rules, &task);
                }
            }
            // A speculative run's verdict answers no signal: it teaches the coordinator nothing.
            let speculative = matches!(self.supervision.speculation, Speculation::Record(_));
            if let Some(contract) = contract.as_ref().filter(|_| !held && !speculative) {
                log_contract(rules, &verdict, contract, history.as_deref());
            }
        }
        if let (true, Ok(Some(key))) = (self.sign, self.key) {
            sign::sign(&mut verdict, key);
        }
        Judged { verdict, cancelled }
    }

    /// Runs `pipeline` (with the task's contract's gates added) over `task`.
    fn run(
        &self,
        pipeline: &Pipeline,
        task: &Task,
        contract: Option<&Contract>,
        history: Option<&History<'_>>,
    ) -> Verdict {
        let rules = self.rules;
        let expanded = match contract {
            None => None,
            Some(contract) => match contract.expand(pipeline, rules, self.key) {
                Ok(expanded) => Some(expanded),
                Err(why) => {
                    let why = format!("contract {}: {why}", contract.path.display());
                    return pipeline::decide_without_running(
                        rules,
                        Some(pipeline),
                        task,
                        Decision::Error,
                        why,
                    );
                }
            },
        };
        let pipeline = expanded.as_ref().unwrap_or(pipeline);
        if let Some(history) = history.filter(|h| h.keeper == Keeper::Task) {
            history.record(Event::RunStarted {
                attempt: history.attempt(),
                pipeline: &pipeline.name,
            });
        }
        let logged = history.map(|history| GateEvents {
            history,
            also: self.supervision.observer,
        });
        let observer = match &logged {
            Some(logged) => Some(logged as &dyn Observer),
            None => self.supervision.observer,
        };
        let supervision = Supervision {
            observer,
            failed_before: history
                .map(|history| &history.state.failed_tests)
                .or(self.supervision.failed_before),
            ..self.supervision
        };
        pipeline::run_with(rules, pipeline, task, supervision)
    }
}

/// The reviewers of the pipeline's `review` gates, each named once, for the review state.
fn reviewers(pipeline: &Pipeline) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for gate in &pipeline.gates {
        if let crate::rules::Rule::Review(review) = &gate.rule {
            for name in review.reviewer_names() {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
    }
    names
}

/// The breakers that decide before a run: a task a person must look at stays held, an
/// attempt past `max_attempts` escalates it, and so does a staged task past `max_time` since
/// its first attempt (a hook session counts `max_time` from its first call, in `hook::usage`).
fn breakers(
    history: &mut History<'_>,
    defaults: &crate::config::Defaults,
) -> Option<(Decision, String)> {
    let max_attempts = defaults.max_attempts;
    if let Some(why) = history.state.escalated.clone() {
        return Some((Decision::Escalated, why));
    }
    if let Some(why) = history.state.blocked.clone() {
        return Some((Decision::Blocked, why));
    }
    let attempt = history.attempt();
    if attempt <= max_attempts {
        return over_time(history, defaults.max_time);
    }
    let why = format!(
        "attempt {attempt} is over max_attempts ({max_attempts}): {}",
        history.after_deciding()
    );
    history.escalate(Breaker::MaxAttempts, &why);
    Some((Decision::Escalated, why))
}

/// The watcher's `max_time`: a staged task whose series of attempts began longer ago than it
/// is ESCALATED before its next run.
fn over_time(
    history: &mut History<'_>,
    max_time: Option<std::time::Duration>,
) -> Option<(Decision, String)> {
    let max = max_time.filter(|_| history.keeper == Keeper::Task)?;
    let ran = history.state.running_for()?;
    if ran <= max {
        return None;
    }
    let why = format!(
        "the task has run {} since its first attempt (max_time {}): {}",
        crate::duration::format(ran),
        crate::duration::format(max),
        history.after_deciding()
    );
    history.escalate(Breaker::Budget, &why);
    Some((Decision::Escalated, why))
}

/// The drift breaker, on a failed run: the worker's answer and its patch compared with the
/// last failed run's. `drift.stops` alike in a row is ESCALATED; the one before it is told
/// "you are repeating yourself" in the reasons it reads.
fn drift(history: &mut History<'_>, verdict: &mut Verdict, rules: &Rules, task: &Task) {
    let limit = rules.defaults.drift;
    if limit.stops == 0 {
        return;
    }
    let mut text = String::from_utf8_lossy(task.signal.body()).into_owned();
    text.push('\n');
    text.push_str(&crate::rules::file_scope::patch_text(task, &rules.state));
    let sketch = crate::shingles::Sketch::of(&text);
    let alike = match &history.state.drift {
        Some(last) if last.last.similarity(&sketch) >= limit.similarity => last.alike + 1,
        _ => 1,
    };
    history.state.drift = Some(crate::state::Drifting {
        last: sketch,
        alike,
    });
    if alike >= limit.stops && history.state.escalated.is_none() {
        let why = format!(
            "the same answer and the same changes {alike} times in a row: {}",
            history.after_deciding()
        );
        history.escalate(Breaker::Drift, &why);
        verdict.verdict = Decision::Escalated;
        verdict.reasons.push(why);
    } else if alike >= 2 && alike + 1 == limit.stops {
        verdict.reasons.push(format!(
            "you are repeating yourself ({alike} answers and changes alike in a row): try a different approach"
        ));
    }
}

/// Counts the verdict in the history, once per signal: the strikes breaker (the same failure
/// `strikes` runs in a row escalates; in a session an ERROR too), a PASS clearing the strikes,
/// a session's BLOCKED held.
fn count(history: &mut History<'_>, verdict: &mut Verdict, strikes: u32) {
    if history.state.judged == history.identity {
        return;
    }
    match verdict.verdict {
        // Under a hook an ERROR holds the stop as a FAIL does (it may be the worker's doing),
        // so it is counted as one: the same ERROR `strikes` stops in a row is ESCALATED.
        Decision::Fail | Decision::Error
            if verdict.verdict == Decision::Fail || history.keeper == Keeper::Session =>
        {
            let so_far = history.state.strike(verdict);
            if so_far >= strikes {
                let why = format!(
                    "the same failure {so_far} times in a row: {}",
                    history.after_deciding()
                );
                history.escalate(Breaker::Strikes, &why);
                verdict.verdict = Decision::Escalated;
                verdict.reasons.push(why);
            }
        }
        Decision::Pass => {
            history.state.strikes = 0;
            history.state.signature = None;
            history.state.drift = None;
        }
        Decision::Blocked
            if history.keeper == Keeper::Session && history.state.blocked.is_none() =>
        {
            history.state.blocked = Some(
                verdict
                    .reasons
                    .first()
                    .cloned()
                    .unwrap_or_else(|| "the worker reported BLOCKED".into()),
            );
        }
        _ => {}
    }
    history.state.last_verdict = Some(verdict.verdict);
    history.state.judged = history.identity.clone();
}

/// `contract_violation` events a run writes of each kind.
const VIOLATIONS_TOLD_PER_KIND: usize = 3;

/// How far back in the event log a run looks for the violations of the run before it.
const FOLLOWUP_LOOKBACK: u64 = 1024 * 1024;

/// A coordinator learns from a run under a contract wherever it happened: its violations,
/// what it did after the run before broke the contract, and a BLOCKED end with whom to turn
/// to. They go to the history's log, or (for `check`) to the rules' event log, opened only
/// when there is something to say.
fn log_contract(
    rules: &Rules,
    verdict: &Verdict,
    contract: &Contract,
    history: Option<&History<'_>>,
) {
    let violations = crate::contract::violations(verdict);
    let name = history.map_or(verdict.task.as_str(), |h| h.name.as_str());
    let before = violated_last(rules, name);
    let followup = crate::contract::followup(&before, verdict, &violations);
    let blocked = verdict.verdict == Decision::Blocked;
    if violations.is_empty() && followup.is_none() && !blocked {
        return;
    }
    let id = run_id();
    let run = crate::contract::Run {
        task_id: &contract.task_id,
        attempt: verdict.attempt,
        id: &id,
    };
    let mut events = Vec::new();
    if let Some(outcome) = followup {
        events.push(Event::ContractFollowup {
            after: &before,
            attempt: verdict.attempt,
            outcome,
            run: &id,
            task_id: &contract.task_id,
        });
    }
    if blocked {
        events.push(Event::Blocked {
            escalation: contract.escalation.as_ref(),
            reason: verdict.reasons.first().map_or("", String::as_str),
        });
    }
    // A few of each kind say what broke; hundreds of files out of scope would only push every
    // other task's history out of the log's window the follow-ups read.
    let mut told: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    events.extend(
        violations
            .iter()
            .filter(|violation| {
                let count = told.entry(violation.kind).or_default();
                *count += 1;
                *count <= VIOLATIONS_TOLD_PER_KIND
            })
            .map(|violation| violation.event(run)),
    );
    if let Some(history) = history {
        events.into_iter().for_each(|event| history.record(event));
        return;
    }
    match EventLog::open(&rules.state, rules.events) {
        Ok(log) => {
            for event in events {
                log.record(Some(&verdict.task), verdict.signal.agent.as_deref(), event);
            }
        }
        Err(err) => tracing::warn!("contract events not logged: {err:#}"),
    }
}

/// The kinds of contract violation the runs of `name` left standing since it last kept its
/// contract (a `fixed` follow-up), in the log's last MiB: a worker that alternates two
/// violations repeats both. Empty when the last run kept the contract.
fn violated_last(rules: &Rules, name: &str) -> Vec<String> {
    let lines = crate::events::read_tail(&rules.state, FOLLOWUP_LOOKBACK).unwrap_or_default();
    let ours = lines.iter().rev().filter(|line| {
        line.task.as_deref() == Some(name)
            && matches!(
                line.event.as_str(),
                "contract_violation" | "contract_followup"
            )
    });
    if ours
        .clone()
        .next()
        .is_none_or(|l| l.event != "contract_violation")
    {
        return Vec::new();
    }
    let mut kinds: Vec<String> = ours
        .take_while(|l| !(l.event == "contract_followup" && l.details["outcome"] == "fixed"))
        .filter(|l| l.event == "contract_violation")
        .filter_map(|l| l.details["kind"].as_str().map(str::to_owned))
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

/// An id for one run's events, unlike another's: the time in nanoseconds and the process.
fn run_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{nanos:x}-{}", std::process::id())
}

/// Writes `gate_started` / `gate_finished` events as the run goes, and tells the front end's
/// own observer too.
struct GateEvents<'a, 'h> {
    history: &'a History<'h>,
    also: Option<&'a dyn Observer>,
}

impl Observer for GateEvents<'_, '_> {
    fn gate_started(&self, task: &Task, gate: &str) {
        self.history.record(Event::GateStarted { gate });
        if let Some(also) = self.also {
            also.gate_started(task, gate);
        }
    }

    fn gate_finished(&self, task: &Task, report: &GateReport) {
        if let Some(also) = self.also {
            also.gate_finished(task, report);
        }
        self.history.record(Event::GateFinished {
            duration_ms: report.duration_ms,
            gate: &report.name,
            outcome: report.outcome,
            summary: &report.summary,
        });
    }
}

/// The signing key the rules configure, read for a run (see [`Signing`]).
pub fn signing(rules: &Rules) -> Signing {
    sign::configured_key(rules.key_named())
        .map(|key| key.map(Arc::new))
        .map_err(|err| format!("{err:#}"))
}
