//! Judging one signalled task for the watcher: skip it if its verdict is already current,
//! count the attempt, apply the circuit breakers, run the engine, and publish the verdict, the
//! state and the events. Everything here is safe to repeat after a crash: a signal keeps its
//! attempt number until it has a current verdict.

use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Instant, SystemTime};

use validator::speculation::Speculation;

use validator::cache::Cache;
use validator::config::Rules;
use validator::done::Signal;
use validator::error::Error;
use validator::events::{Event, EventLog, Problem};
use validator::judge::{Case, History, Judge, Keeper};
use validator::pipeline::{self, Observer, Slots};
use validator::staging;
use validator::state::TaskState;
use validator::task::Task;
use validator::verdict::sign::{self, SigningKey};
use validator::verdict::{Decision, GateReport, Verdict, write};
use validator_process::Cancel;

use super::claim::Claim;
use super::metrics::{Metrics, Trip};
use super::speculate::Speculator;

/// What the watcher's threads share.
pub struct Shared {
    /// The rules and the signing key they configure, swapped together on reload so a run never
    /// signs with a key the rules it ran under did not name.
    config: RwLock<(Arc<Rules>, Option<Arc<SigningKey>>)>,
    pub events: EventLog,
    pub cancel: Cancel,
    /// Whether gates with `inputs:` may be skipped as `cached`.
    use_cache: bool,
    observer: Option<Arc<dyn Observer + Send>>,
    /// Verdicts judged but not yet written (a full or read-only disk), by task: published when
    /// the task is tried again, without running its gates again.
    unpublished: Mutex<BTreeMap<String, Unpublished>>,
    /// What the watcher counts as it judges (`watch --metrics-addr` serves it).
    pub metrics: Arc<Metrics>,
    /// `--jobs` bounds every gate the watcher runs at once, a group's across tasks included.
    pub slots: Arc<Slots>,
    /// The speculative runs, whose outcomes a run at done may take.
    pub speculator: Arc<Speculator>,
    /// Whether this watcher still holds its state directory: nothing is judged or published
    /// once it does not.
    pub claim: Arc<Claim>,
}

/// A judged run whose state or verdict could not be written.
struct Unpublished {
    /// The signal it answers: a new signal makes it moot.
    key: Option<String>,
    state: TaskState,
    verdict: Verdict,
    /// Whether the state is to be saved (not when a `validator reset` came during the run).
    save_state: bool,
    since: SystemTime,
    /// The last failure, with the OS's reason.
    error: String,
    /// Whether a circuit breaker tripped in the run that decided it (for the metrics).
    trip: Trip,
}

/// How answering a task's done signal ended.
#[derive(Debug)]
pub enum Answered {
    /// The done file is gone.
    NoSignal,
    /// The verdict on disk already answers this signal.
    AlreadyCurrent,
    /// Shutdown interrupted the run; nothing was published.
    Cancelled,
    /// The watcher no longer holds its state directory: nothing was judged, or what was judged
    /// was not published.
    ClaimLost,
    Published(Box<Verdict>),
    /// Judged, but the state or the verdict could not be written (the reason, with the OS's):
    /// kept to be written when the task is tried again.
    Unpublished(String),
}

impl Shared {
    /// `mark` marks every process the runs start (see `orphans`).
    /// `jobs` bounds the gates running at once, across tasks. `claim` is the watcher's on the
    /// state directory.
    pub fn new(
        rules: Rules,
        key: Option<SigningKey>,
        use_cache: bool,
        mark: &str,
        jobs: usize,
        claim: Arc<Claim>,
    ) -> Result<Self, Error> {
        let events = EventLog::open(&rules.state, rules.events)?;
        let metrics = Arc::new(Metrics::default());
        Ok(Shared {
            speculator: Arc::new(Speculator::new(jobs, Arc::clone(&metrics.speculative))),
            config: RwLock::new((Arc::new(rules), key.map(Arc::new))),
            events,
            cancel: Cancel::marked(mark.to_owned()),
            use_cache,
            observer: None,
            unpublished: Mutex::new(BTreeMap::new()),
            metrics,
            slots: Arc::new(Slots::new(jobs)),
            claim,
        })
    }

    /// Tells `observer` about every gate too, besides the event log.
    pub fn observed_by(self, observer: Option<Arc<dyn Observer + Send>>) -> Self {
        Shared { observer, ..self }
    }

    /// The rules in force now; a reload affects the runs that start after it.
    pub fn rules(&self) -> Arc<Rules> {
        self.config().0
    }

    /// The rules in force now and the key that signs the verdicts of runs under them.
    pub fn config(&self) -> (Arc<Rules>, Option<Arc<SigningKey>>) {
        self.config
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn replace_rules(&self, rules: Rules, key: Option<SigningKey>) {
        *self.config.write().unwrap_or_else(|p| p.into_inner()) =
            (Arc::new(rules), key.map(Arc::new));
    }

    /// Whether the watcher still holds its state directory. Once it does not, every running
    /// gate is cancelled too: what they would find is judged by no one.
    pub fn holds_claim(&self) -> bool {
        let holds = self.claim.holds();
        if !holds {
            self.cancel.cancel();
        }
        holds
    }

    fn unpublished(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Unpublished>> {
        self.unpublished.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `task` has a judged verdict waiting to be written.
    pub fn is_unpublished(&self, task: &str) -> bool {
        self.unpublished().contains_key(task)
    }

    /// Each task whose verdict waits to be written, and why it could not be, for
    /// `status` and `status --health`.
    pub fn unpublished_reasons(&self) -> BTreeMap<String, String> {
        self.unpublished()
            .iter()
            .map(|(task, waiting)| {
                (
                    task.clone(),
                    format!(
                        "not written since {}: {}",
                        validator::timestamp::seconds(waiting.since),
                        waiting.error
                    ),
                )
            })
            .collect()
    }
}

/// Answers `task`'s done signal: judges it if it has no current verdict, and publishes.
pub fn answer(shared: &Shared, name: &str) -> Result<Answered, Error> {
    if !shared.holds_claim() {
        return Ok(Answered::ClaimLost);
    }
    let (rules, signing) = shared.config();
    let done = staging::done_path(&rules.staging, name);
    let signal = match Signal::read(&done) {
        Ok(signal) => signal,
        Err(Error::Read { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            return Ok(Answered::NoSignal);
        }
        Err(err) => return Err(err),
    };
    let key = staging::signal_key(&signal);
    // A verdict judged for this very signal and not written yet: write it, do not judge again.
    let waiting = shared.unpublished().remove(name);
    if let Some(waiting) = waiting.filter(|waiting| waiting.key == key) {
        return Ok(publish(shared, &rules, name, waiting));
    }
    let agent = signal.report.as_ref().ok().and_then(|r| r.agent.clone());
    // Nothing is saved before the run: a crash mid-run leaves the state as it was, so the
    // repeated run computes the same attempt number.
    let mut history = History::load(
        &rules,
        name,
        key.clone(),
        &shared.events,
        agent.clone(),
        Keeper::Task,
    );
    if history.state.judged == key && published_for(&rules, name, &signal, signing.as_deref()) {
        return Ok(Answered::AlreadyCurrent);
    }
    // A task a breaker holds gives each new signal the same answer until a person resets it:
    // the verdict is written for the signal (so `wait` returns), but no attempt is counted and
    // nothing is logged, so a worker touching its done file cannot grow the state or the log.
    let held = history.is_held();
    if !held {
        shared.events.record(
            Some(name),
            agent.as_deref(),
            Event::SignalSeen {
                sha256: signal.sha256.as_deref(),
            },
        );
    }

    let task_dir = staging::task_dir(&rules.staging, name);
    let refused = task_dir.as_ref().err().cloned();
    let task_dir = task_dir.unwrap_or_else(|_| rules.staging.clone());
    let task = super::protocol_ignored(Task::new(name, &task_dir)?, &rules, name)
        .with_worker_area(&rules.staging)
        .with_attempt(history.attempt())
        .with_signal(signal);
    let pipeline = rules
        .pipeline_for(name, None)
        .map_err(|err| (Decision::Error, err.to_string()));
    let speculating = rules.speculate.on && refused.is_none() && !held;
    let speculated = speculating
        .then(|| {
            shared
                .speculator
                .claim(&task, &rules, Instant::now() + rules.defaults.budget)
        })
        .flatten();
    let judged_task = task.clone();
    let case = Case {
        task,
        pipeline,
        refused,
    };
    let outcomes = speculated.as_deref().map(|run| &run.outcomes);
    let judged = run(shared, &rules, signing, case, &mut history, outcomes);
    if speculating {
        shared.speculator.release(&judged_task, &rules);
    }
    if judged.cancelled {
        return Ok(Answered::Cancelled);
    }
    // A held task's answer is ESCALATED too; only a breaker tripping now is an escalation.
    let trip = match judged.verdict.verdict == Decision::Escalated && !held {
        true => Trip::Now,
        false => Trip::NotNow,
    };
    let judged = Unpublished {
        key,
        save_state: history.keeps_state(),
        state: history.state,
        verdict: judged.verdict,
        since: SystemTime::now(),
        error: String::new(),
        trip,
    };
    let published = publish(shared, &rules, name, judged);
    if let (Answered::Published(verdict), false) = (&published, held) {
        shared.events.record(
            Some(name),
            agent.as_deref(),
            Event::verdict_written(verdict),
        );
    }
    Ok(published)
}

/// Whether the verdict on file answers `signal` and is this watcher's own: a verdict file alone
/// could be forged where the worker can write (verdicts inside staging), so with a key it must
/// also still carry a valid signature; one edited since (or signed with an old key) is judged
/// and published again, with the same attempt number.
fn published_for(rules: &Rules, name: &str, signal: &Signal, signing: Option<&SigningKey>) -> bool {
    staging::read_verdict(&rules.verdicts, name)
        .is_some_and(|verdict| staging::is_current(&verdict, signal))
        && signing.is_none_or(|signing| {
            sign::read_document(
                &staging::verdict_path(&rules.verdicts, name),
                validator_process::files::Links::Refuse,
            )
            .is_ok_and(|document| sign::verify(&document, signing).is_ok())
        })
}

/// Judges `case` as the watcher does: signed, cached where asked, under its cancel, observed
/// by its metrics, bounded by its slots.
fn run(
    shared: &Shared,
    rules: &Rules,
    signing: Option<Arc<SigningKey>>,
    case: Case<'_>,
    history: &mut History<'_>,
    speculated: Option<&validator::speculation::Speculated>,
) -> validator::judge::Judged {
    let cache = shared.use_cache.then(|| Cache::new(&rules.state));
    let key_read = Ok(signing);
    let observers = Observers {
        metrics: &shared.metrics,
        also: shared.observer.as_deref().map(|o| o as &dyn Observer),
    };
    let supervision = validator::judge::Supervision {
        cancel: Some(&shared.cancel),
        observer: Some(&observers),
        cache: cache.as_ref(),
        slots: Some(&*shared.slots),
        speculation: speculated.map_or(Speculation::Off, Speculation::Use),
        ..Default::default()
    };
    let judge = Judge::new(rules, &key_read, supervision).signed(true);
    judge.judge(case, Some(history))
}

/// Writes a judged run: the state first (a crash between the two re-runs the signal, whose
/// verdict is not current, with the same attempt and without counting it twice), then the
/// verdict. What cannot be written (a full or read-only disk) is kept, with the OS's reason, to
/// be written when the task is tried again; nothing judged is lost.
fn publish(shared: &Shared, rules: &Rules, name: &str, mut judged: Unpublished) -> Answered {
    // Asked last, just before the writes: the run may have lasted minutes, and a state
    // directory made again meanwhile is another watcher's to write.
    if !shared.holds_claim() {
        return Answered::ClaimLost;
    }
    let written = if judged.save_state {
        judged.state.save(&rules.state, name)
    } else {
        Ok(())
    }
    .and_then(|()| write::write(&rules.verdicts, &judged.verdict));
    match written {
        Ok(()) => {
            shared
                .metrics
                .published(judged.verdict.verdict, judged.trip);
            Answered::Published(Box::new(judged.verdict))
        }
        Err(err) => {
            judged.error = validator::error::with_causes(&err);
            let reason = judged.error.clone();
            shared.events.record(
                Some(name),
                None,
                Event::Error(Problem::Unpublished(reason.clone())),
            );
            shared.unpublished().insert(name.to_owned(), judged);
            Answered::Unpublished(reason)
        }
    }
}

/// Publishes an ERROR verdict with `why` for `name`'s current done signal without running
/// anything, signed as any other: the answer to a run that could not finish (it panicked).
/// The task's state is left as it was, so its next run is the same attempt. `None` when the
/// task has no done file any more.
pub fn publish_error(shared: &Shared, name: &str, why: String) -> Result<Option<Verdict>, Error> {
    if !shared.holds_claim() {
        return Ok(None);
    }
    let (rules, signing) = shared.config();
    let signal = match Signal::read(&staging::done_path(&rules.staging, name)) {
        Ok(signal) => signal,
        Err(Error::Read { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            return Ok(None);
        }
        Err(err) => return Err(err),
    };
    let attempt = TaskState::load(&rules.state, name).attempt_for(staging::signal_key(&signal));
    let dir = staging::task_dir(&rules.staging, name).unwrap_or_else(|_| rules.staging.clone());
    let task = Task::new(name, &dir)?
        .with_attempt(attempt)
        .with_signal(signal);
    let pipeline = rules.pipeline_for(name, None).ok();
    let mut verdict =
        pipeline::decide_without_running(&rules, pipeline, &task, Decision::Error, why);
    if let Some(signing) = &signing {
        sign::sign(&mut verdict, signing);
    }
    write::write(&rules.verdicts, &verdict)?;
    shared.metrics.published(verdict.verdict, Trip::NotNow);
    shared
        .events
        .record(Some(name), None, Event::verdict_written(&verdict));
    Ok(Some(verdict))
}

/// The watcher's metrics hear about every gate, and so does the front end's own observer.
struct Observers<'a> {
    metrics: &'a Metrics,
    also: Option<&'a dyn Observer>,
}

impl Observer for Observers<'_> {
    fn gate_started(&self, task: &Task, gate: &str) {
        self.metrics.gate_started(task, gate);
        if let Some(also) = self.also {
            also.gate_started(task, gate);
        }
    }

    fn gate_finished(&self, task: &Task, report: &GateReport) {
        self.metrics.gate_finished(task, report);
        if let Some(also) = self.also {
            also.gate_finished(task, report);
        }
    }
}
