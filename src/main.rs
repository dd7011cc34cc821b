//! The `validator` command line: parse arguments, call the library, print, and map the verdict
//! to an exit code. Nothing here judges anything.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use clap::{Parser, Subcommand, ValueEnum};

use validator::config::graph;
use validator::progress::Progress;
use validator::verdict::sign::{self, KeyFile, KeySource, VerifyError};
use validator::verdict::{feedback, format};
use validator::watch::client;
use validator::{Rules, Signal, Task, Verdict, snapshot, task};

/// Exit code when the validator itself could not judge (bad rules file, bad arguments).
const EXIT_ERROR: u8 = 2;

#[derive(Parser)]
#[command(
    name = "validator",
    version,
    about = "A quality gate that sits outside the worker it judges."
)]
struct Cli {
    /// The rules file [default: ./validator.yaml, then $VALIDATOR_CONFIG]
    #[arg(short, long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// More log output on stderr (-v info, -vv debug); or set VALIDATOR_LOG
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Log format on stderr: text for people, json for containers
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Watch the staging directory and judge every done signal (the sidecar)
    Watch {
        /// Tasks judged in parallel [default: the number of cores]
        #[arg(long, value_name = "N")]
        jobs: Option<usize>,
        /// Poll the file system at this interval instead of using OS notifications (10ms at
        /// least)
        #[arg(long, value_name = "DURATION", value_parser = parse_poll)]
        poll: Option<Duration>,
        /// After SIGTERM, how long running gates may finish before they are killed
        #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "10s")]
        grace: Duration,
        /// Run every gate, even those whose `inputs:` are unchanged since they passed
        #[arg(long)]
        no_cache: bool,
        /// How often the watcher proves it is alive and checks its workers (`status --health`
        /// calls it stale after four missed beats); whole seconds
        #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "15s")]
        heartbeat: Duration,
    },
    /// Write a task's done file atomically, asking the watcher for a run
    Signal {
        task: String,
        #[arg(long, value_enum)]
        status: Option<Status>,
        #[arg(long)]
        summary: Option<String>,
        #[arg(long)]
        reason: Option<String>,
        #[arg(long)]
        agent: Option<String>,
    },
    /// Block until a task has a current verdict, print its feedback; exit code as `check`
    Wait {
        task: String,
        #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "10m")]
        timeout: Duration,
        /// What to print
        #[arg(long, value_enum, default_value_t = Format::Feedback)]
        format: Format,
    },
    /// List tasks: last verdict, whether it is current, attempt, age
    Status {
        #[arg(long, value_enum, default_value_t = StatusFormat::Text)]
        format: StatusFormat,
        /// Instead: whether the watcher for this rules file is alive and making progress; exit
        /// 0 healthy, 1 not (a container HEALTHCHECK or probe), with one line saying why
        #[arg(long)]
        health: bool,
    },
    /// Clear a task's (or an agent hook session's) attempts and circuit breakers after a person
    /// has decided
    Reset {
        /// The task, or a hook session's state name (`hook-…`, as its stop message says)
        #[arg(required_unless_present = "session", conflicts_with = "session")]
        task: Option<String>,
        /// An agent hook session, by the `session_id` the agent sent
        #[arg(long, value_name = "SESSION_ID")]
        session: Option<String>,
        /// With --session: the subagent (`agent_id`) whose attempts to clear
        #[arg(long, value_name = "ID", requires = "session")]
        agent_id: Option<String>,
    },
    /// Run as an agent's stop hook: read its JSON on stdin, judge its `cwd` with its last
    /// message as the done signal, answer in its format. Exit 0 with an answer, 1 (never
    /// blocking) when it cannot judge
    Hook {
        #[arg(value_enum)]
        agent: HookAgent,
        /// The project to judge [default: the agent's project directory
        /// ($CLAUDE_PROJECT_DIR, $GEMINI_PROJECT_DIR), else the git repository the hook runs
        /// in, else its working directory]; never the directory the agent last moved to
        #[arg(long, value_name = "DIR")]
        task_dir: Option<PathBuf>,
        /// The task's name (picks the pipeline and the contract) [default: the project
        /// directory's name]
        #[arg(long, value_name = "NAME")]
        task: Option<String>,
    },
    /// Check a verdict file's signature: exit 0 valid, 1 unsigned or edited, 2 cannot check
    Verify {
        /// The verdict file (`<task>.verdict.json`, or `check --format json` output)
        file: PathBuf,
        /// The key file [default: $VALIDATOR_KEY_FILE, then the rules file's signing_key_file]
        #[arg(long, value_name = "KEYFILE")]
        key: Option<PathBuf>,
    },
    /// Run the pipeline once over a directory; the exit code is the verdict
    Check(CheckArgs),
    /// Write a starter validator.yaml for the project in this directory (and its JSON Schema
    /// beside it, for editors); -c FILE writes it there instead
    Init {
        /// The starter pack [default: detected from Cargo.toml, go.mod, pyproject.toml,
        /// setup.py, requirements.txt, package.json, in that order; else generic]
        #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(validator::init::Kind::NAMES))]
        kind: Option<String>,
        /// Replace an existing rules file
        #[arg(long)]
        force: bool,
    },
    /// Work with the rules file
    Rules {
        #[command(subcommand)]
        command: RulesCommand,
    },
    /// Print a shell completion script (e.g. `validator completions bash > ~/.local/share/bash-completion/completions/validator`)
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Record a task directory's files before its worker starts (the baseline file-scope uses
    /// when the task is not in a git work tree)
    Snapshot {
        /// The task name (its directory is <staging>/<TASK>, or <staging> itself)
        task: String,
        /// Snapshot this directory instead of the task's directory in staging
        #[arg(long, value_name = "DIR")]
        task_dir: Option<PathBuf>,
    },
}

#[derive(clap::Args)]
struct CheckArgs {
    /// The directory to judge
    #[arg(long, value_name = "DIR", default_value = ".")]
    task_dir: PathBuf,
    /// The task's name (picks the pipeline and the snapshot baseline) [default: DIR's name]
    #[arg(long, value_name = "NAME")]
    task: Option<String>,
    /// The done signal's body: a file, or - for standard input
    #[arg(long, value_name = "FILE")]
    signal: Option<PathBuf>,
    /// Run this pipeline instead of the first one whose `tasks` match
    #[arg(long, value_name = "NAME")]
    pipeline: Option<String>,
    /// How to print the verdict
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// The attempt number to record in the verdict
    #[arg(long, default_value_t = 1, value_name = "N")]
    attempt: u32,
    /// Run every gate, even those whose `inputs:` are unchanged since they passed
    #[arg(long)]
    no_cache: bool,
}

#[derive(Subcommand)]
enum RulesCommand {
    /// Validate the rules file without running anything, and print the gate graph
    Check,
    /// Print the rules file's JSON Schema (draft-07), for editors and other tools
    Schema,
}

#[derive(Clone, Copy, ValueEnum)]
enum Status {
    #[value(name = "OK")]
    Ok,
    #[value(name = "BLOCKED")]
    Blocked,
}

#[derive(Clone, Copy, ValueEnum)]
enum HookAgent {
    /// Claude Code: Stop and SubagentStop
    Claude,
    /// Codex CLI: Stop and SubagentStop
    Codex,
    /// Gemini CLI: AfterAgent
    Gemini,
}

impl From<HookAgent> for validator::hook::Agent {
    fn from(agent: HookAgent) -> Self {
        match agent {
            HookAgent::Claude => validator::hook::Agent::Claude,
            HookAgent::Codex => validator::hook::Agent::Codex,
            HookAgent::Gemini => validator::hook::Agent::Gemini,
        }
    }
}

/// Exit code of `validator hook` when it cannot judge. Not 2: agents read exit 2 from a stop
/// hook as "block" (Claude Code, Codex) or "retry" (Gemini CLI), which would trap the agent on
/// a broken setup; any other non-zero code is a non-blocking error to all three.
const EXIT_HOOK_ERROR: u8 = 1;

#[derive(Clone, Copy, ValueEnum)]
enum StatusFormat {
    Text,
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    /// For people: a line per gate, findings, the decision
    Text,
    /// The verdict document
    Json,
    /// JUnit XML, one testcase per gate
    Junit,
    /// GitHub Actions annotations
    Github,
    /// The feedback an agent reads (at most 60 lines)
    Feedback,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            // clap exits 2 on a usage error; a mistyped hook command must not block the agent.
            // Any `hook` word counts, as options may come first (`-c FILE hook claude`).
            let hook = std::env::args().skip(1).any(|arg| arg == "hook");
            if hook && err.use_stderr() {
                let _ = err.print();
                return ExitCode::from(EXIT_HOOK_ERROR);
            }
            err.exit()
        }
    };
    init_logging(cli.verbose, cli.log_format);
    let hook = matches!(cli.command, Command::Hook { .. });
    // No input may panic validator; should a bug do so anyway, the exit code still keeps its
    // promise (2: could not judge; 1 for a hook, which must never block an agent by accident)
    // instead of Rust's 101, which no caller expects.
    let ran = std::panic::catch_unwind(|| run(cli));
    // What the gates leave (kept cgroups, processes re-parented here) ends with validator.
    validator::reaper::release_cgroups();
    validator::reaper::reap_adopted();
    match ran {
        Ok(Ok(code)) => code,
        Ok(Err(err)) => {
            eprintln!("error: {err:#}");
            ExitCode::from(EXIT_ERROR)
        }
        Err(_) => {
            eprintln!(
                "error: validator failed unexpectedly (the panic above); this is a bug in validator, please report it"
            );
            ExitCode::from(if hook { EXIT_HOOK_ERROR } else { EXIT_ERROR })
        }
    }
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    validator::duration::parse(text)
}

/// A polling interval: a shorter one would have the watcher busy-loop over the staging
/// directory.
fn parse_poll(text: &str) -> Result<Duration, String> {
    let interval = parse_duration(text)?;
    if interval < Duration::from_millis(10) {
        return Err(format!(
            "`{text}` is too short to poll at; use 10ms or more (without --poll, OS notifications cost nothing while idle)"
        ));
    }
    Ok(interval)
}

fn init_logging(verbose: u8, format: LogFormat) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("VALIDATOR_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false);
    match format {
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
        LogFormat::Json => builder.json().init(),
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    // `verify` needs a key, not a rules file: it must work where only the key is at hand.
    // Completions describe the command line itself.
    let command = match cli.command {
        Command::Verify { file, key } => return verify(cli.config, &file, key),
        Command::Completions { shell } => return completions(shell),
        Command::Hook {
            agent,
            task_dir,
            task,
        } => {
            validator::reaper::become_subreaper();
            return Ok(hook(cli.config, agent, task_dir, task));
        }
        Command::Rules {
            command: RulesCommand::Schema,
        } => return rules_schema(),
        Command::Init { kind, force } => return init(cli.config, kind.as_deref(), force),
        // Every way of being unhealthy (no rules file included) must exit 1, not 2: container
        // runtimes reserve 2.
        Command::Status {
            health: true,
            format,
        } => return Ok(health(cli.config, format)),
        command => command,
    };
    let config = config_path(cli.config)?;
    if matches!(command, Command::Check(_) | Command::Watch { .. }) {
        // What a gate leaves running is re-parented here, to be killed (see `reaper`).
        validator::reaper::become_subreaper();
    }
    match command {
        Command::Verify { file, key } => verify(Some(config), &file, key),
        Command::Completions { shell } => completions(shell),
        Command::Check(args) => check(&config, args),
        Command::Rules {
            command: RulesCommand::Check,
        } => rules_check(&config),
        Command::Rules {
            command: RulesCommand::Schema,
        } => rules_schema(),
        Command::Init { kind, force } => init(Some(config), kind.as_deref(), force),
        Command::Snapshot { task, task_dir } => snapshot(&config, &task, task_dir),
        Command::Watch {
            jobs,
            poll,
            grace,
            no_cache,
            heartbeat,
        } => watch(
            config,
            WatchArgs {
                jobs,
                poll,
                grace,
                no_cache,
                heartbeat,
            },
        ),
        Command::Signal {
            task,
            status,
            summary,
            reason,
            agent,
        } => {
            let rules = load(&config)?;
            let body = client::SignalBody {
                agent,
                status: status.map(|s| match s {
                    Status::Ok => "OK".to_owned(),
                    Status::Blocked => "BLOCKED".to_owned(),
                }),
                summary,
                reason,
            };
            let path = client::signal(&rules, &task, &body)?;
            println!("signalled {task}: {}", path.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Wait {
            task,
            timeout,
            format,
        } => {
            let rules = load(&config)?;
            let key = sign::configured_key(rules.key_named())?;
            match client::wait(&rules, &task, timeout, key.as_ref())? {
                Some(verdict) => print_verdict(&verdict, format),
                None => bail!(
                    "no current verdict for {task} after {}\n  help: is `validator watch` running with this rules file, and has the task signalled done?",
                    validator::duration::format(timeout)
                ),
            }
        }
        Command::Status { format, .. } => status(&config, format),
        Command::Hook {
            agent,
            task_dir,
            task,
        } => Ok(hook(Some(config), agent, task_dir, task)),
        Command::Reset {
            task,
            session,
            agent_id,
        } => {
            let rules = load(&config)?;
            let task = match (task, session) {
                (Some(task), _) => task,
                (None, Some(session)) => {
                    validator::hook::session_key(&session, agent_id.as_deref())
                }
                (None, None) => bail!("name a task, or --session SESSION_ID"),
            };
            task::validate_name(&task)?;
            let cleared = validator::state::TaskState::reset(&rules.state, &task)?;
            if let Ok(log) = validator::events::EventLog::open(&rules.state, rules.events) {
                log.record(Some(&task), None, validator::events::Event::Reset);
            }
            match cleared {
                true => println!(
                    "reset {task}: attempts and circuit breakers cleared; its next signal is attempt 1"
                ),
                false => println!("reset {task}: nothing to clear"),
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `validator hook`: the answer on stdout and exit 0, or the problem on stderr and exit 1 with
/// nothing on stdout, so a broken setup never blocks the agent by accident.
fn hook(
    config: Option<PathBuf>,
    agent: HookAgent,
    task_dir: Option<PathBuf>,
    task: Option<String>,
) -> ExitCode {
    let agent = validator::hook::Agent::from(agent);
    let answered = hook_answer(config, agent, task_dir, task).and_then(|answer| {
        if let Some(line) = answer {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{line}")
                .and_then(|()| out.flush())
                .context("cannot write the answer to stdout")?;
        }
        Ok(())
    });
    match answered {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("validator hook {}: error: {err:#}", agent.name());
            ExitCode::from(EXIT_HOOK_ERROR)
        }
    }
}

fn hook_answer(
    config: Option<PathBuf>,
    agent: validator::hook::Agent,
    task_dir: Option<PathBuf>,
    task: Option<String>,
) -> Result<Option<String>> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        bail!(
            "`validator hook {}` reads the agent's hook JSON on stdin\n  help: configure it as the agent's stop hook (see examples/hooks), or pipe a JSON object into it",
            agent.name()
        );
    }
    let mut input = Vec::new();
    stdin
        .lock()
        .take(validator::hook::MAX_INPUT as u64 + 1)
        .read_to_end(&mut input)
        .context("cannot read the hook's input from stdin")?;
    if input.len() > validator::hook::MAX_INPUT {
        // Too long to read whole: never let such a stop through, never read half of it.
        return Ok(validator::hook::Answer::too_long_to_judge().to_json(agent));
    }
    let input = validator::hook::Input::parse(agent, &input)?;
    // The rules file is found as everywhere else: `-c`, `./validator.yaml`, `$VALIDATOR_CONFIG`.
    // Agents start hooks in the project directory, which the agent can write, so the examples
    // pass `-c` with an absolute path outside it; the input's `cwd` is never searched.
    let rules = load(&config_path(config)?)?;
    let cwd = std::env::current_dir().context("cannot tell the hook's working directory")?;
    let project =
        validator::hook::Project::locate(agent, task_dir, task, |var| std::env::var_os(var), &cwd);
    let cancel = cancel_on_stop_signals()?;
    let judgement = validator::hook::judge(&rules, agent, &input, &project, Some(&cancel))?;
    Ok(judgement.answer.to_json(agent))
}

fn completions(shell: clap_complete::Shell) -> Result<ExitCode> {
    let mut command = <Cli as clap::CommandFactory>::command();
    clap_complete::generate(shell, &mut command, "validator", &mut std::io::stdout());
    Ok(ExitCode::SUCCESS)
}

/// `-c`, else `./validator.yaml`, else `$VALIDATOR_CONFIG`.
fn config_path(flag: Option<PathBuf>) -> Result<PathBuf> {
    if let Some(path) = flag {
        return Ok(path);
    }
    let local = PathBuf::from("validator.yaml");
    if local.exists() {
        return Ok(local);
    }
    match std::env::var_os("VALIDATOR_CONFIG") {
        Some(path) if !path.is_empty() => Ok(PathBuf::from(path)),
        _ => bail!(
            "no rules file: ./validator.yaml does not exist\n  help: pass -c FILE, or set VALIDATOR_CONFIG"
        ),
    }
}

fn load(config: &Path) -> Result<Rules> {
    Ok(Rules::load(config)?)
}

fn check(config: &Path, args: CheckArgs) -> Result<ExitCode> {
    let rules = load(config)?;
    let name = args
        .task
        .clone()
        .unwrap_or_else(|| task::name_from_dir(&args.task_dir));
    // The state and verdict directories are not hidden from the rules here: inside a task
    // directory they are the worker's to write, so the rules must see them.
    let mut task = Task::new(name, &args.task_dir)?.with_attempt(args.attempt);
    if let Some(signal) = &args.signal {
        task = task.ignoring(signal).with_signal(read_signal(signal)?);
    }
    let pipeline = rules.pipeline_for(&task.name, args.pipeline.as_deref())?;
    // Only the JSON document carries a signature; a key that is named but unreadable stops
    // the run before any gate, never a silently unsigned verdict.
    let sign = matches!(args.format, Format::Json);
    let key = match sign {
        true => Ok(sign::configured_key(rules.key_named())?.map(Arc::new)),
        false => validator::judge::signing(&rules),
    };
    let cache = (!args.no_cache).then(|| validator::cache::Cache::new(&rules.state));
    // Dropped (the line erased) before the verdict is printed.
    let progress = terminal_progress(false);
    let cancel = cancel_on_stop_signals()?;
    let judge = validator::judge::Judge {
        rules: &rules,
        key: &key,
        sign,
        cache: cache.as_ref(),
        cancel: Some(&cancel),
        observer: progress
            .as_deref()
            .map(|p| p as &dyn validator::pipeline::Observer),
    };
    let case = validator::judge::Case {
        task,
        pipeline: Ok(pipeline),
        refused: None,
    };
    let verdict = judge.judge(case, None).verdict;
    drop(progress);
    print_verdict(&verdict, args.format)
}

/// A way to stop the gates of a one-shot run (`check`, `hook`) when the process is asked to end
/// (SIGTERM from a CI runner or an agent's hook timeout, SIGINT, SIGHUP from a closed terminal,
/// SIGQUIT): the running command's group and cgroup are killed and the run ends as ERROR,
/// instead of validator dying and leaving its gate running.
fn cancel_on_stop_signals() -> Result<Arc<validator::process::Cancel>> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
    let cancel = Arc::new(validator::process::Cancel::default());
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP, SIGQUIT])
        .context("cannot install the handler of SIGTERM, SIGINT, SIGHUP and SIGQUIT")?;
    let cancelled = Arc::clone(&cancel);
    std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            cancelled.cancel();
        }
    });
    Ok(cancel)
}

fn print_verdict(verdict: &Verdict, format: Format) -> Result<ExitCode> {
    let rendered = match format {
        Format::Text => format::text(verdict),
        Format::Json => verdict.to_json() + "\n",
        Format::Junit => format::junit(verdict),
        Format::Github => format::github(verdict),
        Format::Feedback => feedback::render(verdict),
    };
    let mut out = anstream::stdout();
    out.write_all(rendered.as_bytes())
        .and_then(|()| out.flush())
        .context("cannot write the verdict to stdout")?;
    if matches!(format, Format::Github) {
        append_job_summary(verdict);
    }
    Ok(ExitCode::from(verdict.verdict.exit_code() as u8))
}

/// In GitHub Actions, `$GITHUB_STEP_SUMMARY` names a file whose Markdown becomes the job's
/// summary page; steps append to it. A summary that cannot be written is logged: the verdict
/// and the exit code are what the job relies on.
fn append_job_summary(verdict: &Verdict) {
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) else {
        return;
    };
    let written = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&path)
        .and_then(|mut file| file.write_all(format::job_summary(verdict).as_bytes()));
    if let Err(err) = written {
        tracing::warn!(path = %PathBuf::from(path).display(), %err, "cannot write the job summary");
    }
}

/// `validator watch`'s options.
struct WatchArgs {
    jobs: Option<usize>,
    poll: Option<Duration>,
    grace: Duration,
    no_cache: bool,
    heartbeat: Duration,
}

fn watch(config: PathBuf, args: WatchArgs) -> Result<ExitCode> {
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    let progress = terminal_progress(true);
    let options = validator::watch::Options {
        config,
        jobs,
        poll: args.poll,
        grace: args.grace,
        no_cache: args.no_cache,
        heartbeat: args.heartbeat,
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
    validator::watch::watch(options, report)?;
    Ok(ExitCode::SUCCESS)
}

/// A status line for gates that take longer than a second, only when stdout is a terminal
/// that can redraw a line: pipes, files and CI logs get the verdict alone.
fn terminal_progress(with_task: bool) -> Option<Arc<Progress>> {
    let stdout = std::io::stdout();
    let dumb = std::env::var_os("TERM").is_some_and(|term| term == "dumb");
    if !stdout.is_terminal() || dumb {
        return None;
    }
    let width = terminal_size::terminal_size_of(&stdout).map_or(80, |(width, _)| width.0);
    Some(Arc::new(Progress::new(
        Box::new(stdout),
        usize::from(width),
        with_task,
    )))
}

fn status(config: &Path, format: StatusFormat) -> Result<ExitCode> {
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
                let current = if task.current { "yes" } else { "no" };
                let attempt = format!("{}/{}", task.attempt, task.max_attempts);
                let signature = signature_column(task.signature.map_or("-", |s| s.as_str()));
                writeln!(
                    out,
                    "{:<width$}  {verdict:<9}  {current:<7}  {attempt:>7}  {age:>8}{signature}",
                    task.task
                )?;
            }
            for task in tasks.iter().filter(|t| t.unpublished.is_some()) {
                let why = task.unpublished.as_deref().unwrap_or_default();
                writeln!(
                    out,
                    "{}: judged, but the verdict is {}",
                    task.task,
                    validator::text::one_line(why)
                )?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `validator status --health`: one line (or the JSON details) on stdout; exit 0 when the
/// watcher is healthy, 1 otherwise.
fn health(config: Option<PathBuf>, format: StatusFormat) -> ExitCode {
    use validator::watch::health::{Health, check_config};
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

/// `validator verify`: the key from `--key`, else `$VALIDATOR_KEY_FILE`, else the rules file's
/// `signing_key_file:` (a rules file is looked for only then, and need not exist).
fn verify(config: Option<PathBuf>, file: &Path, key: Option<PathBuf>) -> Result<ExitCode> {
    let key_file = match key {
        Some(path) => Some(KeyFile {
            path,
            source: KeySource::Flag,
        }),
        // Without a rules file, only $VALIDATOR_KEY_FILE can name the key; a rules file is
        // looked for only when it does not.
        None => match KeyFile::configured(None) {
            Some(from_env) => Some(from_env),
            None => {
                let rules = match config_path(config) {
                    Ok(path) => Some(load(&path)?),
                    Err(_) => None,
                };
                KeyFile::configured(rules.as_ref().and_then(Rules::key_named))
            }
        },
    };
    let Some(key_file) = key_file else {
        bail!(
            "no signing key to check {} with\n  help: pass --key KEYFILE, set {}, or set `signing_key_file:` in the rules file (-c FILE); the key must be the one the watcher signs with",
            file.display(),
            sign::KEY_FILE_ENV
        );
    };
    let key = key_file.read()?;
    let document = sign::read_document(file, validator::files::Links::Follow).map_err(|err| {
        anyhow!(
            "cannot read the verdict {}: {err}\n  help: pass the path of a <task>.verdict.json file",
            file.display()
        )
    })?;
    match sign::verify(&document, &key) {
        Ok(()) => {
            let value: serde_json::Value = serde_json::from_str(&document)?;
            let field = |name: &str| value[name].as_str().unwrap_or("?").to_owned();
            println!(
                "{}: task {}, verdict {}: signature valid",
                file.display(),
                field("task"),
                field("verdict")
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(why @ (VerifyError::Unsigned | VerifyError::Mismatch)) => {
            eprintln!(
                "{}: {why}\n  help: do not trust this verdict (checked with the key in {}; the watcher must sign with the same key)",
                file.display(),
                key.path().display()
            );
            Ok(ExitCode::from(1))
        }
        Err(why @ VerifyError::Malformed(_)) => bail!(
            "{}: {why}\n  help: pass a verdict document written by validator",
            file.display()
        ),
    }
}

fn human_age(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

fn read_signal(path: &Path) -> Result<Signal> {
    if path == Path::new("-") {
        let mut body = Vec::new();
        std::io::stdin()
            .take(validator::signal::MAX_BODY as u64 + 1)
            .read_to_end(&mut body)
            .context("cannot read the done signal from standard input")?;
        return Ok(Signal::from_bytes(&body, None));
    }
    Ok(Signal::read(path)?)
}

fn rules_check(config: &Path) -> Result<ExitCode> {
    let rules = load(config)?;
    let mut out = anstream::stdout();
    let mut warnings = Vec::new();
    for pipeline in &rules.pipelines {
        writeln!(out, "{}", graph::render(pipeline, rules.defaults.timeout))?;
        warnings.extend(graph::warnings(pipeline));
    }
    print_hooks_and_notes(&mut out, &rules)?;
    let warn = anstyle::AnsiColor::Yellow.on_default();
    for warning in &warnings {
        writeln!(out, "{warn}warning{warn:#}: {warning}")?;
    }
    let gates: usize = rules.pipelines.iter().map(|p| p.gates.len()).sum();
    writeln!(
        out,
        "{}: valid, {} pipeline{}, {gates} gates, {} warning{}",
        config.display(),
        rules.pipelines.len(),
        if rules.pipelines.len() == 1 { "" } else { "s" },
        warnings.len(),
        if warnings.len() == 1 { "" } else { "s" },
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Which pipeline answers which agent hook event (a gates.json's `hooks`), and what the
/// loader accepted without running it.
fn print_hooks_and_notes(out: &mut impl Write, rules: &Rules) -> Result<()> {
    for binding in &rules.hooks {
        let agents = match binding.agents.as_slice() {
            [] => String::new(),
            agents => format!(" (agent types: {})", agents.join(", ")),
        };
        writeln!(
            out,
            "hook {} runs pipeline {}{agents}",
            binding.event, binding.pipeline
        )?;
    }
    for note in &rules.notes {
        writeln!(out, "note: {note}")?;
    }
    Ok(())
}

/// `validator init`: writes the rules file `-c` names, else ./validator.yaml, for the project
/// in the current directory.
fn init(config: Option<PathBuf>, kind: Option<&str>, force: bool) -> Result<ExitCode> {
    let rules = config.unwrap_or_else(|| PathBuf::from(validator::init::RULES_FILE));
    let kind = kind.and_then(validator::init::Kind::from_name);
    let written = validator::init::init(Path::new("."), &rules, kind, force)?;
    print!("{written}");
    Ok(ExitCode::SUCCESS)
}

/// `validator rules schema`: needs no rules file, it describes them.
fn rules_schema() -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    out.write_all(validator::config::schema::rules_schema_text().as_bytes())
        .and_then(|()| out.flush())
        .context("cannot write the schema to stdout")?;
    Ok(ExitCode::SUCCESS)
}

fn snapshot(config: &Path, name: &str, task_dir: Option<PathBuf>) -> Result<ExitCode> {
    let rules = load(config)?;
    task::validate_name(name)?;
    let dir = match task_dir {
        Some(dir) => dir,
        None => validator::staging::task_dir(&rules.staging, name).map_err(anyhow::Error::msg)?,
    };
    let task = Task::new(name, &dir)?
        .ignoring(&rules.state)
        .ignoring(&rules.verdicts);
    let (path, baseline) = snapshot::take(&task, &rules.state)?;
    println!(
        "baseline of {name}: {} files in {} -> {}",
        baseline.files.len(),
        task.dir.display(),
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}
