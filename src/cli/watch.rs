//! `validator watch` and `validator status`: the sidecar, and what it says of itself.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::watch::client;
use validator::verdict::{feedback, sign};
use validator::{Verdict, task};

use super::check::terminal_progress;
use super::{
    Format, StatusFormat, config_path, human_age, load, parse_duration, parse_metrics_addr,
    parse_poll, print_verdict,
};
use crate::progress::Labels;

/// `validator watch`'s options.
#[derive(clap::Args)]
pub(crate) struct WatchArgs {
    /// Tasks judged in parallel [default: the number of cores]
    #[arg(long, value_name = "N")]
    pub(crate) jobs: Option<usize>,
    /// Poll the file system at this interval instead of using OS notifications (10ms at
    /// least)
    #[arg(long, value_name = "DURATION", value_parser = parse_poll)]
    pub(crate) poll: Option<Duration>,
    /// After SIGTERM, how long running gates may finish before they are killed
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "10s")]
    pub(crate) grace: Duration,
    /// Run every gate, even those whose `inputs:` are unchanged since they passed
    #[arg(long)]
    pub(crate) no_cache: bool,
    /// How often the watcher proves it is alive and checks its workers (`status --health`
    /// calls it stale after four missed beats); whole seconds
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "15s")]
    pub(crate) heartbeat: Duration,
    /// Serve Prometheus metrics at /metrics and the health check at /healthz over HTTP on
    /// this address: 127.0.0.1:9464 for this host only, 0.0.0.0:9464 for a pod's probes
    /// and scrapes (port 0: any free port, printed at start); off without it
    #[arg(long, value_name = "IP:PORT", value_parser = parse_metrics_addr)]
    pub(crate) metrics_addr: Option<std::net::SocketAddr>,
}

pub(crate) fn watch(config: PathBuf, args: WatchArgs) -> Result<ExitCode> {
    // What the file asks of a watcher (or the loop around it) that it cannot do, said once at
    // the start; a file that does not load is the watcher's own to report.
    if let Ok(rules) = validator::Rules::load(&config) {
        use validator::config::keys::FrontEnd;
        for warning in rules.unhonoured(&[FrontEnd::Watch, FrontEnd::Loop]) {
            eprintln!("warning: {warning}");
        }
    }
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    let progress = terminal_progress(Labels::TaskAndGate);
    let options = crate::watch::Options {
        config,
        jobs,
        poll: args.poll,
        grace: args.grace,
        no_cache: args.no_cache,
        heartbeat: args.heartbeat,
        metrics: args.metrics_addr,
        say: Some(Box::new({
            let progress = progress.clone();
            move |line: &str| {
                let now = validator::timestamp::seconds(std::time::SystemTime::now());
                let print = || {
                    let mut out = anstream::stdout();
                    let _ = writeln!(out, "{now} {line}");
                };
                match &progress {
                    Some(progress) => progress.suspend(print),
                    None => print(),
                }
            }
        })),
        observer: progress
            .clone()
            .map(|p| p as Arc<dyn validator::pipeline::Observer + Send>),
    };
    let report = Box::new(move |verdict: &Verdict| {
        let now = validator::timestamp::seconds(std::time::SystemTime::now());
        let why = verdict
            .reasons
            .first()
            .map(|r| format!("  {r}"))
            .unwrap_or_default();
        let line = format!(
            "{now} {:<9} {} (attempt {}/{}){why}",
            verdict.verdict, verdict.task, verdict.attempt, verdict.max_attempts
        );
        let print = || {
            let mut out = anstream::stdout();
            let _ = writeln!(out, "{line}");
        };
        match &progress {
            Some(progress) => progress.suspend(print),
            None => print(),
        }
    });
    let stopped = crate::watch::watch(options, report)?;
    // One line on stderr, as daemons end: who stopped the watcher (a stray `kill` is seen),
    // and what it did.
    let why = stopped
        .signal
        .map_or(String::new(), |signal| format!(" ({signal})"));
    let verdicts = stopped.verdicts;
    let noun = if verdicts == 1 { "verdict" } else { "verdicts" };
    eprintln!("validator watch: stopped{why}; {verdicts} {noun} written");
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn status(config: &Path, format: StatusFormat) -> Result<ExitCode> {
    let rules = load(config)?;
    let key = sign::configured_key(rules.key_named())?;
    let tasks = client::status(&rules, key.as_ref());
    let mut out = anstream::stdout();
    match format {
        StatusFormat::Json => writeln!(out, "{}", serde_json::to_string_pretty(&tasks)?)?,
        StatusFormat::Text if tasks.is_empty() => {
            writeln!(out, "no tasks in {}", rules.staging.display())?
        }
        StatusFormat::Text => {
            let width = tasks.iter().map(|t| t.task.len()).max().unwrap_or(4).max(4);
            // The signature column appears only when a key is configured.
            let signature_column = |text: &str| match key {
                Some(_) => format!("  {text}"),
                None => String::new(),
            };
            writeln!(
                out,
                "{:<width$}  {:<9}  {:<7}  {:>7}  {:>8}{}",
                "TASK",
                "VERDICT",
                "CURRENT",
                "ATTEMPT",
                "AGE",
                signature_column("SIGNATURE")
            )?;
            for task in &tasks {
                let verdict = task.verdict.map_or("-", |v| v.as_str());
                let age = task.age_secs.map_or("-".to_owned(), human_age);
                let current = match (task.hook_session, task.current) {
                    (true, _) => "-",
                    (false, true) => "yes",
                    (false, false) => "no",
                };
                let attempt = format!("{}/{}", task.attempt, task.max_attempts);
                let signature = signature_column(task.signature.map_or("-", |s| s.as_str()));
                writeln!(
                    out,
                    "{:<width$}  {verdict:<9}  {current:<7}  {attempt:>7}  {age:>8}{signature}",
                    task.task
                )?;
            }
            print_reviews(&mut out, &tasks)?;
            if let Some(tally) = crate::watch::health::speculation(&rules) {
                writeln!(
                    out,
                    "speculative runs: {} started, {} used at done, {} cancelled, {} discarded; {:.1} CPU seconds",
                    tally.started,
                    tally.used,
                    tally.cancelled,
                    tally.discarded,
                    tally.cpu_ms as f64 / 1000.0
                )?;
            }
            for task in tasks.iter().filter(|t| t.unpublished.is_some()) {
                let why = task.unpublished.as_deref().unwrap_or_default();
                writeln!(
                    out,
                    "{}: judged, but the verdict is {}",
                    task.task,
                    validator_text::one_line(why)
                )?;
            }
        }
    }
    if matches!(format, StatusFormat::Text) {
        print_contract_violations(&mut out, &rules.state)?;
        let machine = validator::confine::Machine::probe();
        writeln!(out, "{}", machine.describe(rules.tools.confine))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Per contract (`task_id`), from the event log: how many runs broke it, in which kinds, and
/// what the runs after them did. Nothing when no run broke a contract.
fn print_contract_violations(out: &mut impl Write, state: &Path) -> Result<()> {
    use std::collections::{BTreeMap, BTreeSet};
    #[derive(Default)]
    struct Broken {
        runs: BTreeSet<String>,
        kinds: BTreeMap<String, usize>,
        after: BTreeMap<String, usize>,
    }
    let lines = validator::events::read(state).unwrap_or_default();
    let mut contracts: BTreeMap<String, Broken> = BTreeMap::new();
    for line in &lines {
        let text = |key: &str| line.details[key].as_str().map(validator_text::one_line);
        let Some(task_id) = text("task_id") else {
            continue;
        };
        let entry = contracts.entry(task_id).or_default();
        match line.event.as_str() {
            "contract_violation" => {
                // A line from before runs were named is a run of its own.
                entry
                    .runs
                    .insert(text("run").unwrap_or_else(|| line.id.clone()));
                *entry
                    .kinds
                    .entry(text("kind").unwrap_or_default())
                    .or_default() += 1;
            }
            "contract_followup" => {
                *entry
                    .after
                    .entry(text("outcome").unwrap_or_default())
                    .or_default() += 1;
            }
            _ => {}
        }
    }
    contracts.retain(|_, broken| !broken.runs.is_empty());
    if contracts.is_empty() {
        return Ok(());
    }
    let counts = |map: &BTreeMap<String, usize>| {
        let listed: Vec<String> = map.iter().map(|(k, n)| format!("{k} {n}")).collect();
        if listed.is_empty() {
            "-".to_owned()
        } else {
            listed.join(", ")
        }
    };
    let width = contracts.keys().map(String::len).max().unwrap_or(8).max(8);
    writeln!(out)?;
    writeln!(
        out,
        "{:<width$}  {:>11}  {:<30}  AFTERWARDS",
        "CONTRACT", "RUNS BROKEN", "KINDS"
    )?;
    for (task_id, broken) in &contracts {
        writeln!(
            out,
            "{task_id:<width$}  {:>11}  {:<30}  {}",
            broken.runs.len(),
            counts(&broken.kinds),
            counts(&broken.after)
        )?;
    }
    Ok(())
}

/// A line for each task with a review state: where it stands, by whom, after how many
/// reviews, with how many issues.
fn print_reviews(out: &mut impl Write, tasks: &[client::TaskStatus]) -> Result<()> {
    for task in tasks {
        let Some(review) = &task.review else {
            continue;
        };
        let issues = match review.issues.len() {
            0 => String::new(),
            1 => ", 1 issue".to_owned(),
            n => format!(", {n} issues"),
        };
        writeln!(
            out,
            "{}: review {} by {} ({} answered{issues}; updated {})",
            task.task,
            review.status.as_str(),
            validator_text::one_line(&review.reviewers.join(", ")),
            review.attempts,
            review.updated_at
        )?;
    }
    Ok(())
}

/// `validator status --health`: one line (or the JSON details) on stdout; exit 0 when the
/// watcher is healthy, 1 otherwise.
pub(crate) fn health(config: Option<PathBuf>, format: StatusFormat) -> ExitCode {
    use crate::watch::health::{Health, check_config};
    let health = match config_path(config) {
        Ok(config) => check_config(&config),
        Err(err) => Health::unhealthy(format!("{err:#}")),
    };
    let line = match format {
        StatusFormat::Json => serde_json::to_string_pretty(&health).unwrap_or_default(),
        StatusFormat::Text if health.healthy => format!("healthy: {}", health.message),
        StatusFormat::Text => format!("unhealthy: {}", health.message),
    };
    let mut out = std::io::stdout().lock();
    let printed = writeln!(out, "{line}").and_then(|()| out.flush());
    match (health.healthy, printed) {
        (true, Ok(())) => ExitCode::SUCCESS,
        _ => ExitCode::from(1),
    }
}

/// `validator signal`: the done file, written atomically.
pub(crate) fn signal(config: &Path, task: &str, body: &client::SignalBody) -> Result<ExitCode> {
    let rules = load(config)?;
    let path = client::signal(&rules, task, body)?;
    println!("signalled {task}: {}", path.display());
    Ok(ExitCode::SUCCESS)
}

/// `validator signal --message FILE`: the worker's last message as the done signal's body, cut
/// to its end (where its STATUS block is) as the hook adapters cut one.
pub(crate) fn signal_message(config: &Path, task: &str, message: &Path) -> Result<ExitCode> {
    let rules = load(config)?;
    let bytes = if message == Path::new("-") {
        tail(std::io::stdin().lock()).context("cannot read the message from stdin")?
    } else {
        validator_process::files::open(message, validator_process::files::Links::Follow)
            .and_then(|mut file| {
                // Only the end is kept: start there, and read no further than it was long, so
                // a file that something keeps growing still ends.
                use std::io::{Seek, SeekFrom};
                let len = file.metadata()?.len();
                let keep = validator::done::MAX_BODY as u64;
                file.seek(SeekFrom::Start(len.saturating_sub(keep)))?;
                tail(file.take(keep))
            })
            .with_context(|| format!("cannot read the message from {}", message.display()))?
    };
    let text = String::from_utf8_lossy(&bytes);
    let (message, _) = validator_text::last_bytes(&text, validator::done::MAX_BODY);
    let path = client::signal_text(&rules, task, message)?;
    println!("signalled {task}: {}", path.display());
    Ok(ExitCode::SUCCESS)
}

/// The last [`validator::done::MAX_BODY`] bytes of `reader`, however much it holds.
fn tail(mut reader: impl Read) -> std::io::Result<Vec<u8>> {
    let keep = validator::done::MAX_BODY;
    let mut kept = Vec::with_capacity(keep);
    let mut chunk = vec![0; 64 * 1024];
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => return Ok(kept),
            Ok(n) => n,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        kept.extend_from_slice(&chunk[..n]);
        if kept.len() > 2 * keep {
            kept.drain(..kept.len() - keep);
        }
    }
}

/// `validator wait`: the current verdict once there is one, printed as `check` prints it.
pub(crate) fn wait(
    config: &Path,
    task: &str,
    timeout: Duration,
    format: Format,
    retry: feedback::Retry,
    anyway: bool,
) -> Result<ExitCode> {
    let rules = load(config)?;
    let key = sign::configured_key(rules.key_named())?;
    // Without a watcher nothing will answer: say so at once rather than at the timeout, unless
    // a verdict is already there or the caller knows one is starting.
    let timeout = match (anyway, crate::watch::health::alive(&rules)) {
        (false, Err(why)) => match client::wait(&rules, task, Duration::ZERO, key.as_ref())? {
            Some(verdict) => return print_verdict(&verdict, format, retry, true, config),
            None => bail!(
                "{why}, so nothing will answer {task}'s signal\n  help: start `validator -c {} watch`, or pass --anyway to wait for one that is starting",
                config.display()
            ),
        },
        _ => timeout,
    };
    match client::wait(&rules, task, timeout, key.as_ref())? {
        Some(verdict) => print_verdict(&verdict, format, retry, true, config),
        None => bail!(
            "no current verdict for {task} after {}\n  help: is `validator watch` running with this rules file, and has the task signalled done?",
            validator::duration::format(timeout)
        ),
    }
}

/// `validator reset`: a person has decided; the task's (or session's) next signal is attempt 1.
pub(crate) fn reset(config: &Path, task: &str) -> Result<ExitCode> {
    let rules = load(config)?;
    task::validate_name(task)?;
    let cleared = validator::state::TaskState::reset(&rules.state, task)?;
    // A hook session's budgets and tool-time memory start over with it.
    validator::hook::session::Held::remove(&rules.state, task);
    if let Ok(log) = validator::events::EventLog::open(&rules.state, rules.events) {
        log.record(Some(task), None, validator::events::Event::Reset);
    }
    match cleared {
        true => println!(
            "reset {task}: attempts and circuit breakers cleared; its next signal is attempt 1"
        ),
        false => println!("reset {task}: nothing to clear"),
    }
    Ok(ExitCode::SUCCESS)
}
