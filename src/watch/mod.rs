//! `validator watch`: the sidecar. It watches the staging directory for done signals, runs each
//! signalled task through the engine on a pool of threads (one run per task at a time; signals
//! that arrive during a run coalesce into one more run), and publishes verdicts atomically. At
//! start it runs every signal without a current verdict, so nothing is lost across a crash,
//! after killing what the gates of a crashed predecessor left running ([`orphans`]).
//!
//! Threads: the main loop owns the scheduler (`scheduler`) and the file watcher
//! (`file_events`) and blocks on one channel (file events, finished runs, shutdown), so an
//! idle watcher costs nothing; `jobs` workers judge tasks; one thread turns SIGTERM, SIGINT,
//! SIGHUP and SIGQUIT into a shutdown message. The main loop also wakes on a slow timer to
//! touch its heartbeat ([`health`]), so a wedged loop shows. With `metrics`, one more thread
//! serves the watcher's numbers and health over HTTP ([`metrics`]).

pub mod claim;
pub mod client;
#[cfg(debug_assertions)]
mod fault;
mod file_events;
pub mod health;
pub mod metrics;
pub mod orphans;
pub mod run;
mod scheduler;
pub mod speculate;
mod workers;

use std::net::SocketAddr;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use notify::EventKind;
use notify::event::ModifyKind;

use file_events::{Fingerprint, Watches, same_file, signals_a_run};
use run::Shared;
use scheduler::{Retries, Scheduler, poll, rescan, task_of};
use validator::config::Rules;
use validator::error::Error;
use validator::events::{Event, Problem};
use validator::pipeline::Observer;
use validator::staging;
use validator::task::Task;
use validator::verdict::{Verdict, sign};

/// How the watcher runs.
pub struct Options {
    pub config: PathBuf,
    /// Tasks judged in parallel.
    pub jobs: usize,
    /// Poll at this interval instead of using OS notifications.
    pub poll: Option<Duration>,
    /// How long running gates may finish after SIGTERM before they are killed.
    pub grace: Duration,
    /// Run every gate, even those whose `inputs:` are unchanged since they passed.
    pub no_cache: bool,
    /// Hears about every gate of every run besides the event log (a terminal's progress line).
    pub observer: Option<Arc<dyn Observer + Send>>,
    /// How often the main loop touches its heartbeat and checks its workers (whole seconds).
    pub heartbeat: Duration,
    /// Told, in a line for a person, what the watcher watches when it starts and each reload of
    /// the rules (the CLI prints them at default verbosity).
    pub say: Option<Notice>,
    /// Serve Prometheus metrics at `/metrics` and the health at `/healthz` on this address
    /// (port 0: one the OS picks, said in the startup lines); none without it.
    pub metrics: Option<SocketAddr>,
}

/// A line for a person (see [`Options::say`]).
pub type Notice = Box<dyn Fn(&str) + Send + Sync>;

/// Called with each published verdict (the CLI prints a line).
pub type Reporter = Box<dyn Fn(&Verdict) + Send + Sync>;

enum Message {
    Fs(notify::Result<notify::Event>),
    /// Polling mode: time to look at the staging directory and the rules file again.
    Tick,
    Finished(String),
    /// The task was judged but its verdict could not be written: try it again later.
    Unpublished(String),
    /// A stop signal arrived: its name.
    Shutdown(&'static str),
}

/// How a watcher ended cleanly: the signal that stopped it and the verdicts it wrote, for the
/// line a person reads at the end (a stop nobody meant, a stray `kill`, says who stopped it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stopped {
    /// The stop signal's name (`SIGTERM`), or none when the loop ended without one.
    pub signal: Option<&'static str>,
    pub verdicts: u64,
}

/// Runs until SIGTERM or SIGINT, then finishes or cancels the running gates within the grace
/// period and returns which signal stopped it and how many verdicts it wrote.
pub fn watch(mut options: Options, report: Reporter) -> Result<Stopped, Error> {
    // Events name absolute paths; so must the rules file, or hot reload never matches it.
    options.config = std::path::absolute(&options.config).unwrap_or(options.config);
    let (rules, key) = rules_and_key(&options.config)?;
    // First: from the moment the watcher can be seen (its record), SIGTERM must mean a clean
    // stop, never the default death. One that comes early waits in the channel for the loop.
    let (tx, rx) = mpsc::channel();
    spawn_signal_thread(tx.clone())?;
    // Before any work: a second watcher on the same state is refused here. Dropped (the record
    // removed) on every way out of this function.
    let mut heartbeat = health::Registration::register(&rules, options.heartbeat)?;
    let mark = orphans::Mark::for_state(&rules.state);
    let shared = Arc::new(
        Shared::new(
            rules,
            key,
            !options.no_cache,
            mark.as_str(),
            options.jobs,
            heartbeat.shared_claim(),
        )?
        .observed_by(options.observer.clone()),
    );
    let server = serve_metrics(options.metrics, &shared)?;
    kill_orphans(
        &mark,
        &heartbeat,
        &shared,
        "killed gate processes left running by a watcher that did not shut down cleanly",
    );
    warn_about_layout(&shared.rules());
    remove_stale_temp_files(&shared.rules());
    announce(&options, &shared.rules(), server.as_ref());

    let stopping = Arc::new(AtomicBool::new(false));
    let (jobs, pool) = start_workers(options.jobs, &shared, report, &tx, &stopping);
    let rules_of = Arc::clone(&shared);
    speculate::start(speculate::Sources {
        speculator: Arc::clone(&shared.speculator),
        rules: Box::new(move || rules_of.rules()),
        mark: shared.cancel.mark().map(str::to_owned),
        slots: Arc::clone(&shared.slots),
    });
    let mut main = MainLoop::start(&options, &shared, &pool, &mut heartbeat, jobs, &tx)?;
    let lost = main.run(&rx);
    let stopped_by = main.stopped_by;
    main.stop(&rx, &stopping, lost.is_some());
    drop(tx);
    pool.join();
    validator_process::reaper::release_cgroups();
    // Every gate has ended; what still carries the mark left its gate's group (setsid).
    kill_orphans(
        &mark,
        &heartbeat,
        &shared,
        "killed processes that left their gate's process group",
    );
    // The port is closed before the record goes: a probe never hears a watcher that is gone.
    drop(server);
    match lost {
        Some(message) => Err(Error::Watch {
            path: shared.rules().state.clone(),
            message,
        }),
        None => Ok(Stopped {
            signal: stopped_by,
            verdicts: shared.metrics.published_total(),
        }),
    }
}

/// The rules the watcher starts with, the key they name, and their staging directory made.
fn rules_and_key(config: &Path) -> Result<(Rules, Option<sign::SigningKey>), Error> {
    let rules = Rules::load(config)?;
    // A key that is named but unusable stops the start: publishing unsigned verdicts that every
    // reader holding the key refuses would only look like a gate.
    let key = sign::configured_key(rules.key_named())?;
    std::fs::create_dir_all(&rules.staging).map_err(|source| Error::Write {
        path: rules.staging.clone(),
        source,
    })?;
    if let Some(key) = &key {
        tracing::info!(key = %key.path().display(), "verdicts are signed (HMAC-SHA256)");
    }
    Ok((rules, key))
}

/// The metrics server, when `--metrics-addr` asks for one. Started after the claim (a second
/// watcher is refused for that, not for the port), before any work: a port that cannot be
/// bound stops the start.
fn serve_metrics(
    addr: Option<SocketAddr>,
    shared: &Arc<Shared>,
) -> Result<Option<metrics::http::Server>, Error> {
    shared.metrics.count_approvals(&shared.rules().state);
    let server = match addr {
        Some(addr) => Some(metrics::http::Server::start(
            addr,
            Arc::clone(&shared.metrics),
            Box::new({
                let shared = Arc::clone(shared);
                // The judgement of `status --health`, made the same way on the same record; a
                // watcher that lost its state directory is not the one the record speaks of.
                move || match shared.claim.lost() {
                    Some(why) => health::Health::unhealthy(why),
                    None => health::check(&shared.rules()),
                }
            }),
            approvals_endpoint(addr, shared)?,
        )?),
        None => None,
    };
    Ok(server)
}

/// `POST /approvals/…` on the metrics port, when the rules name a token file: a token file
/// that is named but cannot be read (or is empty) stops the start, as a key does.
fn approvals_endpoint(
    addr: SocketAddr,
    shared: &Arc<Shared>,
) -> Result<Option<metrics::approve::Endpoint>, Error> {
    let rules = shared.rules();
    let Some(file) = rules.hook.approvals.token_file.as_deref() else {
        return Ok(None);
    };
    let refused = |reason: String| Error::Metrics {
        addr,
        reason: format!(
            "the approvals token file {} cannot be used: {reason}",
            file.display()
        ),
        help: "fix `hook.approvals.token_file` (a file holding a secret, such as `openssl rand -hex 32`), or remove it to serve no approvals",
    };
    let bytes = validator_process::files::read(file, 4096, validator_process::files::Links::Follow)
        .map_err(|err| refused(err.to_string()))?;
    let token = bytes.trim_ascii().to_vec();
    if token.is_empty() {
        return Err(refused("it is empty".into()));
    }
    Ok(Some(metrics::approve::Endpoint {
        token,
        state: rules.state.clone(),
        key: Box::new({
            let shared = Arc::clone(shared);
            move || shared.config().1
        }),
    }))
}

/// Says what the watcher watches (to a person, when asked) and where it serves its metrics.
fn announce(options: &Options, rules: &Rules, server: Option<&metrics::http::Server>) {
    if let Some(say) = &options.say {
        say(&format!(
            "watching {} for <task>.done signals; rules {} ({} pipeline{}), verdicts in {}, state in {}, {} task{} at a time",
            rules.staging.display(),
            options.config.display(),
            rules.pipelines.len(),
            validator_text::plural(rules.pipelines.len()),
            rules.verdicts.display(),
            rules.state.display(),
            options.jobs,
            validator_text::plural(options.jobs),
        ));
        if let Some(server) = server {
            say(&format!(
                "metrics on http://{0}/metrics, health on http://{0}/healthz",
                server.addr()
            ));
        }
    }
    if let Some(server) = server {
        tracing::info!(addr = %server.addr(), "serving metrics and health over HTTP");
    }
}

/// The `jobs` workers, and the sender the scheduler hands them tasks through.
fn start_workers(
    jobs: usize,
    shared: &Arc<Shared>,
    report: Reporter,
    done: &Sender<Message>,
    stopping: &Arc<AtomicBool>,
) -> (Sender<String>, workers::Pool) {
    let (jobs_tx, jobs_rx) = mpsc::channel::<String>();
    let pool = workers::Pool::start(
        jobs,
        &Arc::new(workers::Context {
            shared: Arc::clone(shared),
            report: Arc::new(report),
            jobs: Arc::new(Mutex::new(jobs_rx)),
            done: done.clone(),
            stopping: Arc::clone(stopping),
        }),
    );
    (jobs_tx, pool)
}

/// What the main loop ties together: the file events and the rules they may reload, the
/// scheduler they feed, the retries of verdicts not yet written, and the heartbeat that says
/// the loop is alive.
struct MainLoop<'a> {
    options: &'a Options,
    shared: &'a Shared,
    pool: &'a workers::Pool,
    heartbeat: &'a mut health::Registration,
    watches: Watches,
    scheduler: Scheduler,
    retries: Retries,
    /// Polling mode: a tick waits in the channel (the ticker sends no other until it is read).
    tick_pending: Arc<AtomicBool>,
    /// The stop signal that ended the loop.
    stopped_by: Option<&'static str>,
}

impl<'a> MainLoop<'a> {
    /// Watches the files and asks for a run of every signal already in staging.
    fn start(
        options: &'a Options,
        shared: &'a Shared,
        pool: &'a workers::Pool,
        heartbeat: &'a mut health::Registration,
        jobs: Sender<String>,
        tx: &Sender<Message>,
    ) -> Result<Self, Error> {
        let tick_pending = Arc::new(AtomicBool::new(false));
        let watches = Watches::start(options, tx.clone(), &shared.rules(), &tick_pending)?;
        let mut scheduler = Scheduler::new(jobs, Arc::clone(&shared.metrics));
        rescan(shared, &mut scheduler);
        tracing::info!(staging = %shared.rules().staging.display(), jobs = options.jobs, "watching");
        Ok(MainLoop {
            options,
            shared,
            pool,
            heartbeat,
            watches,
            scheduler,
            retries: Retries::default(),
            tick_pending,
            stopped_by: None,
        })
    }

    /// Takes messages until a shutdown (or the channel's end); why the claim on the state
    /// directory was lost, if that is what ended it.
    fn run(&mut self, rx: &Receiver<Message>) -> Option<String> {
        loop {
            let wake = self.heartbeat.until_due().min(self.retries.until_due());
            let message = match rx.recv_timeout(wake) {
                Ok(message) => Some(message),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return None,
            };
            // Before anything is judged for this message: a watcher whose state directory was
            // deleted (and perhaps made again, and claimed by another) holds nothing any more.
            if let Some(why) = self.heartbeat.lost() {
                tracing::error!(state = %self.shared.rules().state.display(), "{why}");
                return Some(why);
            }
            // Also between messages: a flood of events must not starve the heartbeat.
            if self.heartbeat.due() {
                self.beat();
            }
            let shared = self.shared;
            for task in self.retries.due(|task| shared.is_unpublished(task)) {
                self.scheduler.request(task);
            }
            let Some(message) = message else { continue };
            if self.handle(message).is_break() {
                return None;
            }
        }
    }

    /// Does what one message asks; `Break` when it asks the watcher to stop.
    fn handle(&mut self, message: Message) -> ControlFlow<()> {
        let shared = self.shared;
        match message {
            Message::Fs(Ok(event)) if event.need_rescan() => {
                // The OS dropped events (its queue overflowed): look at everything again.
                tracing::warn!(
                    "file events were lost (notification queue overflow); rescanning staging"
                );
                shared.events.record(
                    None,
                    None,
                    Event::Error(Problem::Watcher("event queue overflow; rescanned".into())),
                );
                rescan(shared, &mut self.scheduler);
            }
            Message::Fs(Ok(event)) => on_fs_event(
                &event,
                self.options,
                shared,
                &mut self.watches,
                &mut self.scheduler,
            ),
            Message::Fs(Err(err)) => {
                tracing::error!(%err, "file watcher error");
                shared
                    .events
                    .record(None, None, Event::Error(Problem::Watcher(err.to_string())));
            }
            Message::Tick => {
                self.tick_pending.store(false, Ordering::SeqCst);
                if self.watches.rules_changed(&self.options.config) {
                    reload(self.options, shared, &mut self.watches, &mut self.scheduler);
                }
                poll(shared, &mut self.scheduler);
            }
            Message::Finished(task) => {
                // A verdict the record says is not written may just have been: said now, not
                // at the next heartbeat.
                if self.heartbeat.reports_unpublished(&task) && !shared.is_unpublished(&task) {
                    self.report_problems();
                }
                self.scheduler.finished(&task);
            }
            Message::Unpublished(task) => {
                self.retries.failed(task);
                self.report_problems();
            }
            Message::Shutdown(signal) => {
                self.stopped_by = Some(signal);
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    }

    fn beat(&mut self) {
        self.heartbeat.beat();
        self.report_problems();
    }

    /// Tells the heartbeat's record what keeps the watcher from judging as it should: workers
    /// gone or stuck, verdicts not written.
    fn report_problems(&mut self) {
        let unpublished = self.shared.unpublished_reasons();
        let mut problems = self
            .pool
            .problems(stuck_after(&self.shared.rules(), self.options.heartbeat));
        if let Some((task, why)) = unpublished.iter().next() {
            let others = match unpublished.len() - 1 {
                0 => String::new(),
                n => format!(" (and {n} other tasks')"),
            };
            problems.push(format!("the verdict of task `{task}`{others} is {why}"));
        }
        let tally = self.shared.metrics.speculative.tally();
        let speculation = (tally.started > 0).then_some(tally);
        self.heartbeat.report(problems, unpublished, speculation);
    }

    /// Stops watching and dispatching, then waits `--grace` for the running tasks, beating
    /// all the while, and cancels what is still running after it. Runs under a lost claim
    /// publish nothing: cancelled now, not after a grace.
    fn stop(self, rx: &Receiver<Message>, stopping: &AtomicBool, lost: bool) {
        let MainLoop {
            options,
            shared,
            heartbeat,
            watches,
            mut scheduler,
            ..
        } = self;
        tracing::info!("shutting down");
        drop(watches);
        stopping.store(true, Ordering::SeqCst);
        shared.speculator.stop();
        scheduler.close();
        if lost {
            shared.cancel.cancel();
        }
        let deadline = Instant::now() + options.grace;
        while !scheduler.running.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            let received = rx.recv_timeout(left.min(heartbeat.until_due()));
            // A long --grace must not read as a wedged watcher.
            if heartbeat.due() {
                heartbeat.beat();
            }
            match received {
                Ok(Message::Finished(task)) => {
                    scheduler.running.remove(&task);
                }
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) if !left.is_zero() => {}
                Err(RecvTimeoutError::Timeout) => {
                    tracing::warn!(
                        running = scheduler.running.len(),
                        "grace period over; killing running gates"
                    );
                    shared.cancel.cancel();
                    break;
                }
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
    }
}

/// How long a worker may be on one task before it counts as stuck: the run's budget (no gate
/// starts after it, and each gate's deadline is cut to it), plus room for what follows the
/// last gate (killing its processes, draining their output, publishing) and two heartbeats.
fn stuck_after(rules: &Rules, heartbeat: Duration) -> Duration {
    rules.defaults.budget + (2 * heartbeat).max(Duration::from_secs(10))
}

/// Kills what this state directory's gates left running: at start, what a crashed watcher's
/// gates would otherwise go on doing in the task directories the restarted runs use; at the
/// end, processes that left their gate's group.
fn kill_orphans(mark: &orphans::Mark, claim: &health::Registration, shared: &Shared, what: &str) {
    let killed = mark.kill_orphans(claim);
    if killed > 0 {
        tracing::warn!(killed, "{what}");
        shared
            .events
            .record(None, None, Event::OrphansKilled { processes: killed });
    }
}

fn on_fs_event(
    event: &notify::Event,
    options: &Options,
    shared: &Shared,
    watches: &mut Watches,
    scheduler: &mut Scheduler,
) {
    let rules = shared.rules();
    for path in &event.paths {
        if same_file(path, &options.config) {
            // A save is several events (create, write, close, rename): one reload for what
            // they leave, not one each.
            if !matches!(event.kind, EventKind::Access(_) | EventKind::Remove(_))
                && watches.rules_changed(&options.config)
            {
                reload(options, shared, watches, scheduler);
            }
        } else if path.parent() == Some(rules.staging.as_path()) {
            if signals_a_run(&event.kind, path) {
                if let Some(task) = task_of(shared, scheduler, path) {
                    scheduler.request(task);
                }
            }
        } else if path == &rules.staging
            && matches!(
                event.kind,
                EventKind::Create(_) | EventKind::Modify(ModifyKind::Name(_))
            )
        {
            tracing::info!(staging = %rules.staging.display(), "staging directory is back; watching it again");
            watches.watch_staging(&rules.staging);
            rescan(shared, scheduler);
        } else if path.parent() == options.config.parent()
            && !matches!(event.kind, EventKind::Access(_))
            && watches.rules_changed(&options.config)
        {
            // The rules file is a link whose target was swapped (a Kubernetes ConfigMap
            // renames `..data`): no event names the file itself, but what it reads changed.
            reload(options, shared, watches, scheduler);
        }
    }
}

fn reload(options: &Options, shared: &Shared, watches: &mut Watches, scheduler: &mut Scheduler) {
    // The key is read again with the rules: they may name another one. A key that cannot be
    // read keeps the previous rules and key in force, as a broken rules file does.
    // An editor that saves in place (truncate, then write) fires an event before the file is
    // whole: wait for it to settle (unchanged for a moment, two seconds at most), so a save is
    // one reload and never an error about half a file.
    let settle_until = std::time::Instant::now() + Duration::from_secs(2);
    let mut seen = Fingerprint::of(&options.config);
    loop {
        std::thread::sleep(Duration::from_millis(150));
        let now = Fingerprint::of(&options.config);
        if now == seen || std::time::Instant::now() >= settle_until {
            break;
        }
        seen = now;
    }
    // Taken before reading: a change made while reading is then noticed next time.
    watches.rules_seen = Fingerprint::of(&options.config);
    let loaded = Rules::load(&options.config).and_then(|rules| {
        let key = sign::configured_key(rules.key_named())?;
        Ok((rules, key))
    });
    let current_state = shared.rules().state.clone();
    let loaded = loaded.and_then(|(rules, key)| {
        // The state directory is what this watcher holds (one watcher per state) and what its
        // gates' mark is derived from; moving it under a running watcher would let a second
        // watcher claim the old one and kill this one's gates.
        if rules.state != current_state {
            return Err(Error::Watch {
                path: rules.path.clone(),
                message: format!(
                    "`state:` changed to {} while the watcher holds {}\n  help: restart the watcher to move its state directory",
                    rules.state.display(),
                    current_state.display()
                ),
            });
        }
        Ok((rules, key))
    });
    match loaded {
        Ok((rules, key)) => {
            let old_staging = shared.rules().staging.clone();
            let new_staging = rules.staging.clone();
            shared.events.retain(rules.events);
            shared.replace_rules(rules, key);
            tracing::info!(config = %options.config.display(), "rules reloaded");
            if let Some(say) = &options.say {
                say(&format!("rules reloaded from {}", options.config.display()));
            }
            warn_about_layout(&shared.rules());
            shared.events.record(
                None,
                None,
                Event::ConfigReloaded {
                    config: options.config.display().to_string(),
                },
            );
            if new_staging != old_staging {
                let _ = std::fs::create_dir_all(&new_staging);
                watches.watch_staging(&new_staging);
                rescan(shared, scheduler);
            }
        }
        Err(err) => {
            tracing::error!("rules file not reloaded, keeping the previous rules: {err}");
            shared
                .events
                .record(None, None, Event::Error(Problem::Config(err.to_string())));
        }
    }
}

/// Temporary files of atomic writes interrupted by a crash, in the directories only the
/// validator writes (never staging, where `validator signal` may be writing right now).
fn remove_stale_temp_files(rules: &Rules) {
    for dir in [rules.verdicts.clone(), rules.state.join("tasks")] {
        if dir == rules.staging {
            continue;
        }
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            if entry
                .file_name()
                .to_string_lossy()
                .starts_with(validator::replace::TEMP_PREFIX)
            {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// Turns the signals that ask a process to end into a clean shutdown: SIGTERM (a container
/// stop), SIGINT (Ctrl-C), SIGHUP (the terminal closed) and SIGQUIT (Ctrl-\). By default the
/// last two kill the watcher outright and leave its gates running.
fn spawn_signal_thread(tx: Sender<Message>) -> Result<(), Error> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP, SIGQUIT])
        .map_err(Error::Signals)?;
    thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            // Said, so a watcher that stops when nobody meant it to (a stray `kill`) says why.
            let name = signal_hook::low_level::signal_name(signal).unwrap_or("a stop signal");
            tracing::info!(signal = name, "stop signal received");
            let _ = tx.send(Message::Shutdown(name));
        }
    });
    Ok(())
}

/// A worker that can write its own rules or forge its own verdicts defeats the gate. Each
/// warning names the path, what a worker could do, and the fix.
fn warn_about_layout(rules: &Rules) {
    let staging = resolved(&rules.staging);
    let inside = |path: &Path| resolved(path).starts_with(&staging);
    // The key in force, wherever it was named (the environment wins over the rules file).
    let key_file = validator::verdict::sign::KeyFile::configured(rules.key_named()).map(|k| k.path);
    let risks = [
        (
            Some(&rules.path),
            "the rules file",
            "a worker could rewrite its own rules",
            "move the rules file outside staging",
        ),
        (
            Some(&rules.verdicts),
            "the verdicts directory",
            "a worker could forge, edit or replay its verdicts (a signing key detects edits, not an old signed verdict put back)",
            "set `verdicts:` to a directory outside staging",
        ),
        (
            rules.contracts.as_ref(),
            "the contracts directory",
            "a worker could rewrite its own contract (the files it owns, its success criteria)",
            "set `contracts:` to a directory outside staging",
        ),
        (
            Some(&rules.state),
            "the state directory",
            "a worker could reset its own attempts and circuit breakers, or plant cached passes",
            "set `state:` to a directory outside staging",
        ),
        (
            key_file.as_ref(),
            "the signing key",
            "a worker could read it and sign verdicts of its own",
            "keep the key outside staging, readable only by validator",
        ),
    ];
    for (path, what, why, fix) in risks {
        let Some(path) = path else { continue };
        if inside(path) {
            tracing::warn!(
                path = %path.display(),
                staging = %rules.staging.display(),
                "{what} is inside staging: {why}; {fix}"
            );
        }
    }
}

/// `path` with every existing part canonicalized (symlinks resolved), and the parts that do
/// not exist yet appended as written: a directory the watcher creates later still compares.
fn resolved(path: &Path) -> PathBuf {
    let mut missing = Vec::new();
    let mut existing = path;
    loop {
        if let Ok(real) = existing.canonicalize() {
            return missing
                .iter()
                .rev()
                .fold(real, |path, part| path.join(part));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name.to_os_string());
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// Hides the protocol's own files from the rules, each by its exact path: the state and
/// verdict directories, the task's done file and, when verdicts are written into the task's
/// directory (single-task mode), its verdict and feedback files. Nothing by a name's shape: a
/// worker's `key.verdict.json` is the worker's file.
fn protocol_ignored(task: Task, rules: &Rules, name: &str) -> Task {
    task.ignoring(&rules.state)
        .ignoring(&rules.verdicts)
        .ignoring(&staging::done_path(&rules.staging, name))
        .ignoring(&staging::verdict_path(&rules.verdicts, name))
        .ignoring(&staging::feedback_path(&rules.verdicts, name))
}
