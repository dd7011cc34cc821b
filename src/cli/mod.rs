//! The command line: the arguments (clap), finding the rules file, and one dispatch from a
//! command to its front end; printing a verdict and mapping it to an exit code. Nothing here
//! judges: the library's `judge` does, for every command alike.

mod approvals;
mod brief;
mod broker;
mod check;
mod confine;
mod hook;
mod install_hook;
mod rules;
mod snippet;
mod watch;

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};

use crate::watch::client;
use validator::approvals::Choice;
use validator::verdict::{feedback, format};
use validator::{Rules, Verdict};

use brief::{BriefArgs, brief};
use check::{CheckArgs, check};
use hook::{HookAgent, hook};
use rules::{init, rules_check, rules_schema, snapshot, verify};
use watch::{WatchArgs, health, reset, signal, signal_message, status, wait, watch};

/// Exit code when the validator itself could not judge (bad rules file, bad arguments).
pub(crate) const EXIT_ERROR: u8 = 2;

#[derive(Parser)]
#[command(
    name = "validator",
    version,
    about = "A quality gate that sits outside the worker it judges."
)]
pub(crate) struct Cli {
    /// The rules file [default: $VALIDATOR_CONFIG, then validator.yaml here or above, up to
    /// the repository's top]
    #[arg(short, long, global = true, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// More log output on stderr (-v info, -vv debug); or set VALIDATOR_LOG
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub(crate) verbose: u8,
    /// Log format on stderr: text for people, json for containers
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub(crate) log_format: LogFormat,
    /// Colour: auto (on a terminal, unless NO_COLOR is set; FORCE_COLOR or CLICOLOR_FORCE
    /// turn it on anywhere), always, or never
    #[arg(long, global = true, value_enum, default_value_t = ColorWhen::Auto)]
    pub(crate) color: ColorWhen,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ColorWhen {
    Auto,
    Always,
    Never,
}

/// Decides colour for stdout and stderr once, before anything is printed: `--color`, else the
/// conventions (NO_COLOR wins over FORCE_COLOR and CLICOLOR_FORCE, as no-color.org asks), else
/// whether the stream is a terminal. Returns whether stderr's log lines get colour.
pub(crate) fn init_color(when: ColorWhen) -> bool {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty() && v != "0");
    let choice = match when {
        ColorWhen::Always => anstream::ColorChoice::Always,
        ColorWhen::Never => anstream::ColorChoice::Never,
        ColorWhen::Auto if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) => {
            anstream::ColorChoice::Never
        }
        ColorWhen::Auto if set("FORCE_COLOR") || set("CLICOLOR_FORCE") => {
            anstream::ColorChoice::Always
        }
        ColorWhen::Auto => anstream::ColorChoice::Auto,
    };
    choice.write_global();
    match choice {
        anstream::ColorChoice::Always | anstream::ColorChoice::AlwaysAnsi => true,
        anstream::ColorChoice::Never => false,
        anstream::ColorChoice::Auto => std::io::stderr().is_terminal(),
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Watch the staging directory and judge every done signal (the sidecar)
    Watch(WatchArgs),
    /// Write a task's done file atomically, asking the watcher for a run
    Signal {
        /// The task: its files are in <staging>/<TASK>, its done file becomes <staging>/<TASK>.done
        task: String,
        /// The done signal's body: the worker's last message (its STATUS block), read from this
        /// file or `-` for stdin; its last 1 MiB is kept
        #[arg(long, value_name = "FILE", conflicts_with_all = ["status", "summary", "reason", "agent"])]
        message: Option<PathBuf>,
        /// How the worker ended: a worker that signals is done (OK), unless it says it is stuck
        /// and a person must decide (BLOCKED, with --reason)
        #[arg(long, value_enum, default_value_t = Status::Ok)]
        status: Status,
        /// One line on what was done
        #[arg(long)]
        summary: Option<String>,
        /// Why the worker is BLOCKED
        #[arg(long)]
        reason: Option<String>,
        /// Who did the work (an agent's name), for the event log
        #[arg(long)]
        agent: Option<String>,
    },
    /// Block until a task has a current verdict, print its feedback; exit code as `check`
    Wait {
        /// The task whose verdict to wait for
        task: String,
        /// How long to wait for the verdict before giving up (exit 2)
        #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "10m")]
        timeout: Duration,
        /// What to print
        #[arg(long, value_enum, default_value_t = Format::Feedback)]
        format: Format,
        /// Who acts on the feedback: a worker that signals done itself, or one whose loop
        /// signals for it when it finishes (examples/agent-loop)
        #[arg(long, value_enum, default_value_t = FeedbackFor::Signal)]
        feedback_for: FeedbackFor,
        /// Wait even when no watcher is running (one is starting); by default `wait` says at
        /// once that nothing will answer
        #[arg(long)]
        anyway: bool,
    },
    /// List tasks: last verdict, whether it is current, attempt, age
    Status {
        /// A table for people, or JSON
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
    /// Run as an agent's hook: its JSON on stdin, the answer in its format
    ///
    /// At a stop, judge the agent's project (never the directory the agent moved to) with its
    /// last message as the done signal; before a tool call, judge the call; at session start and
    /// each prompt, give the brief and the prompt's gates as context. Exit 0 with an answer, 1
    /// (never blocking) when it cannot judge.
    Hook {
        /// The agent whose hook input comes on stdin and in whose format to answer
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
        /// When the hook must have answered, under the agent's own hook timeout: the gates
        /// get what is left (as the run's budget), and a stop they do not judge in time is
        /// refused (FAIL), never let through
        #[arg(long, value_name = "DURATION", env = "VALIDATOR_HOOK_DEADLINE",
              value_parser = hook::parse_deadline, default_value = hook::DEFAULT_DEADLINE)]
        deadline: std::time::Duration,
    },
    /// Check a verdict file's signature: exit 0 valid, 1 unsigned or edited, 2 cannot check
    Verify {
        /// The verdict file (`<task>.verdict.json`, or `check --format json` output)
        file: PathBuf,
        /// The key file [default: $VALIDATOR_KEY_FILE, then the rules file's signing_key_file]
        #[arg(long, value_name = "KEYFILE")]
        key: Option<PathBuf>,
    },
    /// List the tool calls waiting for a person's approval (from agents that cannot ask their
    /// person: Codex, Gemini CLI, OpenCode): id, age, agent, command, reason
    Approvals {
        /// A line per call for people, or JSON
        #[arg(long, value_enum, default_value_t = StatusFormat::Text)]
        format: StatusFormat,
    },
    /// Approve a waiting tool call: that one call runs, once, as an allowed call does
    Approve {
        /// The request's id (`validator approvals` lists them)
        id: String,
    },
    /// Refuse a waiting tool call; the agent reads the reason
    Deny {
        /// The request's id (`validator approvals` lists them)
        id: String,
        /// Said to the agent with the refusal
        #[arg(long)]
        reason: Option<String>,
    },
    /// Run the pipeline once over a directory; the exit code is the verdict
    Check(CheckArgs),
    /// Print a task's brief for its worker: its contract, context, escalation, what each gate
    /// checks, and the STATUS block to end with (under 50 lines)
    Brief(BriefArgs),
    /// Write a starter validator.yaml for the project in this directory (and its JSON Schema
    /// beside it, for editors); -c FILE writes it there instead
    Init {
        /// The starter pack [default: detected from Cargo.toml, go.mod, pyproject.toml,
        /// setup.py, requirements.txt, package.json, in that order; else generic]
        #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(crate::init::Kind::NAMES))]
        kind: Option<String>,
        /// Replace an existing rules file
        #[arg(long)]
        force: bool,
        /// Convert this gates.json (a command list, ban_patterns, coverage_rules) instead of
        /// writing a starter pack; what has no equivalent is listed at the top of the result
        #[arg(long, value_name = "FILE", conflicts_with = "kind")]
        from: Option<PathBuf>,
    },
    /// Work with the rules file
    Rules {
        #[command(subcommand)]
        command: RulesCommand,
    },
    /// Print a shell completion script (e.g. `validator completions bash > ~/.local/share/bash-completion/completions/validator`)
    Completions {
        /// The shell to complete for
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
    /// Run a command confined by the kernel to the writes its task's rules accept (the agent
    /// hooks rewrite each allowed shell call to this)
    Exec(confine::ConfineArgs),
    /// Run an agent, and every process it starts, confined to its task's rules (its own state
    /// directories stay writable)
    Run(confine::ConfineArgs),
    /// Install validator as this repository's git hook, as `pre-commit install` does: it runs
    /// `validator check` before each commit (or push)
    InstallHook {
        /// Which git hook
        #[arg(long, value_enum, default_value = "pre-commit")]
        hook: install_hook::GitHook,
        /// Replace another runner's hook (pre-commit's, lefthook's, husky's) that is there
        #[arg(long)]
        force: bool,
    },
}

#[derive(Subcommand)]
pub(crate) enum RulesCommand {
    /// Validate the rules file without running anything, and print the gate graph
    Check,
    /// Print which rules-file keys act in which front end (check, watch, each agent's hook,
    /// the agent loop), as docs/keys.md holds it
    Keys,
    /// Print the rules file's JSON Schema (draft-07), for editors and other tools
    Schema {
        /// Print the handoff contracts' schema instead (`contracts/<task>.yaml` or `.json`)
        #[arg(long)]
        contract: bool,
    },
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum FeedbackFor {
    /// The worker signals done itself: "signal done again"
    Signal,
    /// The worker just finishes; a hook or loop judges it: "finish again"
    Finish,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum Status {
    #[value(name = "OK")]
    Ok,
    #[value(name = "BLOCKED")]
    Blocked,
}

impl Status {
    /// As the done signal's STATUS line writes it.
    fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::Blocked => "BLOCKED",
        }
    }
}

impl FeedbackFor {
    /// How the worker is judged again, which the feedback's advice follows.
    fn retry(self) -> validator::verdict::feedback::Retry {
        match self {
            FeedbackFor::Signal => validator::verdict::feedback::Retry::Signal,
            FeedbackFor::Finish => validator::verdict::feedback::Retry::Stop,
        }
    }
}

/// What `reset` clears: the task named, or the hook session's (and its subagent's) record.
fn reset_target(
    task: Option<String>,
    session: Option<String>,
    agent_id: Option<String>,
) -> Result<String> {
    match (task, session) {
        (Some(task), _) => Ok(task),
        (None, Some(session)) => Ok(validator::hook::session_key(&session, agent_id.as_deref())),
        (None, None) => bail!("name a task, or --session SESSION_ID"),
    }
}

/// Exit code of `validator hook` when it cannot judge. Not 2: agents read exit 2 from a stop
/// hook as "block" (Claude Code, Codex) or "retry" (Gemini CLI), which would trap the agent on
/// a broken setup; any other non-zero code is a non-blocking error to all three.
pub(crate) const EXIT_HOOK_ERROR: u8 = 1;

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum StatusFormat {
    Text,
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum Format {
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
    /// SARIF 2.1.0, for code scanning (a result per finding)
    Sarif,
}

pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    validator::duration::parse(text)
}

/// The address `watch --metrics-addr` listens on: an IP address and a port, no host name (a
/// name could resolve to an address nobody meant to expose).
pub(crate) fn parse_metrics_addr(text: &str) -> Result<std::net::SocketAddr, String> {
    text.parse().map_err(|_| {
        format!(
            "`{text}` is not an IP address and port; use 127.0.0.1:9464 (this host only), 0.0.0.0:9464 (every interface, as a pod's probes need) or [::]:9464"
        )
    })
}

/// A polling interval: a shorter one would have the watcher busy-loop over the staging
/// directory.
pub(crate) fn parse_poll(text: &str) -> Result<Duration, String> {
    let interval = parse_duration(text)?;
    if interval < Duration::from_millis(10) {
        return Err(format!(
            "`{text}` is too short to poll at; use 10ms or more (without --poll, OS notifications cost nothing while idle)"
        ));
    }
    Ok(interval)
}

pub(crate) fn init_logging(verbose: u8, format: LogFormat, ansi: bool) {
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
        LogFormat::Text => builder.with_ansi(ansi).init(),
        LogFormat::Json => builder.json().init(),
    }
}

pub(crate) fn run(cli: Cli) -> Result<ExitCode> {
    // Some commands need no rules file: `verify` needs a key (it must work where only the key
    // is at hand), completions describe the command line, a hook and `status --health` find
    // theirs themselves (a missing one is their answer, not an error).
    let config = || config_path(cli.config.clone());
    match cli.command {
        Command::Verify { file, key } => verify(cli.config, &file, key),
        Command::Completions { shell } => completions(shell),
        Command::Hook {
            agent,
            task_dir,
            task,
            deadline,
        } => Ok(hook(cli.config, agent, task_dir, task, deadline)),
        Command::Rules { command } => match command {
            RulesCommand::Schema { contract } => rules_schema(contract),
            RulesCommand::Check => rules_check(&find_config(cli.config.clone())?),
            RulesCommand::Keys => rules::rules_keys(),
        },
        Command::Init { kind, force, from } => match from {
            Some(from) => rules::init_from(cli.config, &from, force),
            None => init(cli.config, kind.as_deref(), force),
        },
        // Every way of being unhealthy (no rules file included) must exit 1, not 2: container
        // runtimes reserve 2.
        Command::Status {
            health: true,
            format,
        } => Ok(health(cli.config, format)),
        Command::Status { format, .. } => status(&config()?, format),
        Command::Approvals { format } => approvals::list(&config()?, format),
        Command::Approve { id } => approvals::answer(&config()?, &id, Choice::Approve, None),
        Command::Deny { id, reason } => approvals::answer(&config()?, &id, Choice::Deny, reason),
        Command::Brief(args) => brief(&find_config(cli.config.clone())?, args),
        Command::Check(args) => {
            let config = find_config(cli.config.clone())?;
            // What a gate leaves running is re-parented here, to be killed (see `reaper`).
            validator_process::reaper::become_subreaper();
            check(&config, args, cli.verbose > 0)
        }
        Command::Watch(args) => {
            let config = config()?;
            validator_process::reaper::become_subreaper();
            watch(config, args)
        }
        Command::Snapshot { task, task_dir } => snapshot(&config()?, &task, task_dir),
        Command::Exec(args) => confine::exec(cli.config, args, false),
        Command::Run(args) => confine::exec(cli.config, args, true),
        Command::InstallHook { hook, force } => {
            // The rules file is named in the hook only when the user named it.
            let found = cli
                .config
                .clone()
                .map(|_| find_config(cli.config.clone()))
                .transpose()?;
            install_hook::install_hook(found.as_ref(), hook, force)
        }
        Command::Signal {
            task,
            message: Some(message),
            ..
        } => signal_message(&config()?, &task, &message),
        Command::Signal {
            task,
            message: None,
            status,
            summary,
            reason,
            agent,
        } => {
            let body = client::SignalBody {
                agent,
                status: Some(status.as_str().to_owned()),
                summary,
                reason,
            };
            signal(&config()?, &task, &body)
        }
        Command::Wait {
            task,
            timeout,
            format,
            feedback_for,
            anyway,
        } => wait(
            &config()?,
            &task,
            timeout,
            format,
            feedback_for.retry(),
            anyway,
        ),
        Command::Reset {
            task,
            session,
            agent_id,
        } => reset(&config()?, &reset_target(task, session, agent_id)?),
    }
}

/// The command line as clap parses it, with what does not apply to a command hidden from its
/// help: `completions` reads no rules file, so `-c` is not offered there.
pub(crate) fn command() -> clap::Command {
    // A subcommand's own argument of a global's name keeps the global out of it.
    <Cli as clap::CommandFactory>::command().mut_subcommand("completions", |completions| {
        completions.arg(
            clap::Arg::new("config")
                .short('c')
                .long("config")
                .value_name("FILE")
                .hide(true),
        )
    })
}

/// Parses the process's arguments into [`Cli`].
pub(crate) fn parse() -> Result<Cli, clap::Error> {
    let matches = command().try_get_matches()?;
    <Cli as clap::FromArgMatches>::from_arg_matches(&matches)
}

pub(crate) fn completions(shell: clap_complete::Shell) -> Result<ExitCode> {
    let mut command = command();
    clap_complete::generate(shell, &mut command, "validator", &mut std::io::stdout());
    Ok(ExitCode::SUCCESS)
}

/// `-c`, else `$VALIDATOR_CONFIG`, else a `validator.yaml` found from here up to the
/// repository's top.
pub(crate) fn config_path(flag: Option<PathBuf>) -> Result<PathBuf> {
    find_config(flag).map(|found| found.path)
}

/// A rules file and how it was found.
pub(crate) struct Found {
    pub(crate) path: PathBuf,
    /// Found by looking upward from the current directory (not named by `-c` or
    /// `VALIDATOR_CONFIG`).
    pub(crate) discovered: bool,
}

impl Found {
    /// The directory `check` judges when none is named: the project the rules file was found
    /// in (as git works from a subdirectory), or the current directory when the file was named.
    pub(crate) fn project_dir(&self) -> PathBuf {
        match self.path.parent() {
            Some(dir) if self.discovered && !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => PathBuf::from("."),
        }
    }
}

pub(crate) fn find_config(flag: Option<PathBuf>) -> Result<Found> {
    // The operator's choice first: a flag, then the environment (a sidecar's or a hook's
    // setting), and only then a file found where the command runs, which a worker may write.
    let named = |path: PathBuf| Found {
        path,
        discovered: false,
    };
    if let Some(path) = flag {
        return Ok(named(path));
    }
    if let Some(path) = std::env::var_os("VALIDATOR_CONFIG").filter(|p| !p.is_empty()) {
        return Ok(named(PathBuf::from(path)));
    }
    if let Some(path) = discover(&std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))) {
        return Ok(Found {
            path,
            discovered: true,
        });
    }
    bail!(
        "no rules file: no validator.yaml here or in a directory above it up to the repository root\n  help: pass -c FILE, set VALIDATOR_CONFIG, or write one with `validator init`"
    )
}

/// `validator.yaml` in `cwd` or, inside a git repository, in a directory above it up to the
/// repository's top (as git finds its config); outside a repository only `cwd` is looked in.
/// Found in `cwd` itself it is named relatively, as it always was.
fn discover(cwd: &Path) -> Option<PathBuf> {
    if cwd.join(crate::init::RULES_FILE).is_file() {
        return Some(PathBuf::from(crate::init::RULES_FILE));
    }
    let top = cwd.ancestors().find(|dir| dir.join(".git").exists())?;
    cwd.ancestors()
        .skip(1)
        .take_while(|dir| dir.starts_with(top))
        .map(|dir| dir.join(crate::init::RULES_FILE))
        .find(|candidate| candidate.is_file())
}

/// Prints the error that ended the command on stderr: a rules-file error with its line and a
/// caret, any other as `error: ` and its causes.
pub(crate) fn print_error(err: &anyhow::Error) {
    let config = err
        .chain()
        .find_map(|cause| match cause.downcast_ref::<validator::Error>() {
            Some(validator::Error::Config(config)) => Some(config),
            _ => cause.downcast_ref::<validator::error::ConfigError>(),
        });
    // Only when the rules file's error is the whole story: context around it would be lost.
    match config
        .filter(|_| err.chain().count() == 1)
        .and_then(snippet::render)
    {
        Some(drawn) => {
            let _ = writeln!(anstream::stderr(), "{drawn}");
        }
        None => eprintln!("error: {err:#}"),
    }
}

pub(crate) fn load(config: &Path) -> Result<Rules> {
    Ok(Rules::load(config)?)
}

/// Prints a verdict in `format`; `retry` says how the worker is judged again, for the
/// feedback's advice. `check` alone counts no attempts (unless told one with `--attempt`), so
/// under [`feedback::Retry::Rerun`] the attempt is said only when `attempt_given`.
pub(crate) fn print_verdict(
    verdict: &Verdict,
    format: Format,
    retry: feedback::Retry,
    attempt_given: bool,
    rules_file: &Path,
) -> Result<ExitCode> {
    let counted = attempt_given || retry != feedback::Retry::Rerun;
    let rendered = match format {
        Format::Text => format::text(verdict),
        Format::Json => verdict.to_json() + "\n",
        Format::Junit => format::junit(verdict),
        Format::Github => format::github(verdict),
        Format::Feedback => feedback::render(verdict, retry),
        Format::Sarif => validator::verdict::sarif::sarif(verdict, &sarif_anchor(rules_file)),
    };
    let mut out = anstream::stdout();
    out.write_all(rendered.as_bytes())
        .and_then(|()| out.flush())
        .context("cannot write the verdict to stdout")?;
    if matches!(format, Format::Github) {
        append_job_summary(verdict, counted);
    }
    Ok(ExitCode::from(verdict.verdict.exit_code() as u8))
}

/// The rules file as the repository names it (relative to where validator runs, which CI
/// sets to the repository's root), or its file name: where SARIF places results that have no
/// place of their own.
fn sarif_anchor(rules_file: &Path) -> String {
    let relative = std::env::current_dir()
        .ok()
        .and_then(|here| {
            let absolute = rules_file.canonicalize().ok()?;
            absolute
                .strip_prefix(here.canonicalize().ok()?)
                .ok()
                .map(Path::to_path_buf)
        })
        .or_else(|| rules_file.file_name().map(std::path::PathBuf::from));
    relative.map_or_else(
        || "validator.yaml".to_owned(),
        |p| p.to_string_lossy().into_owned(),
    )
}

/// In GitHub Actions, `$GITHUB_STEP_SUMMARY` names a file whose Markdown becomes the job's
/// summary page; steps append to it. A summary that cannot be written is logged: the verdict
/// and the exit code are what the job relies on.
pub(crate) fn append_job_summary(verdict: &Verdict, counted: bool) {
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) else {
        return;
    };
    let written = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&path)
        .and_then(|mut file| file.write_all(format::job_summary(verdict, counted).as_bytes()));
    if let Err(err) = written {
        tracing::warn!(path = %PathBuf::from(path).display(), %err, "cannot write the job summary");
    }
}

pub(crate) fn human_age(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every option and argument of every command says what it is for in `--help`.
    #[test]
    fn every_argument_has_help() {
        fn walk(command: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in command.get_arguments() {
                let id = arg.get_id().as_str();
                if arg.get_help().is_none() && !matches!(id, "help" | "version") {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in command.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&super::Cli::command(), "validator", &mut missing);
        assert!(missing.is_empty(), "no help text: {missing:?}");
    }

    /// Every `validator …` command the README and docs/ show (a `$ validator` line, or a code
    /// span that is a whole command, placeholders aside) parses as the command line is defined:
    /// a renamed option or command cannot leave a line behind that no longer runs.
    #[test]
    fn every_command_the_docs_show_parses() {
        let mut pages = vec![(
            "README.md".to_owned(),
            include_str!("../../README.md").to_owned(),
        )];
        for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/docs")).expect("docs")
        {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|e| e == "md") {
                let text = std::fs::read_to_string(&path).expect("read page");
                pages.push((path.display().to_string(), text));
            }
        }
        let mut shown = Vec::new();
        for (page, text) in &pages {
            for line in text.lines() {
                if let Some(command) = line.trim_start().strip_prefix("$ validator ") {
                    shown.push((page.as_str(), command.to_owned(), true));
                }
            }
            for span in text.split('`').skip(1).step_by(2) {
                if let Some(command) = span.strip_prefix("validator ") {
                    shown.push((page.as_str(), command.to_owned(), false));
                }
            }
        }
        let mut parsed = 0;
        let mut broken = Vec::new();
        for (page, command, run) in shown {
            // A shell's own syntax ends the command; a placeholder or a choice is not a command.
            let command = command
                .split(['|', '&', '#', '>', ';'])
                .next()
                .unwrap_or_default()
                .trim()
                .trim_end_matches('\\')
                .trim();
            // A usage line (`[--task T]`, `<task>`, `FILE`) is not a command as typed: its
            // failure to parse says nothing; a command with a value such as `OK` still counts.
            let usage = command.contains(['[', '<', '…', '{', '$', '(', '*'])
                || command.split_whitespace().any(|w| {
                    w.chars().filter(char::is_ascii_alphabetic).count() > 1
                        && !w.chars().any(|c| c.is_ascii_lowercase())
                });
            let Ok(words) = shell_words::split(command) else {
                continue;
            };
            let argv = std::iter::once("validator".to_owned()).chain(words);
            match super::command().try_get_matches_from(argv) {
                Ok(_) => parsed += 1,
                Err(err) if err.kind() == clap::error::ErrorKind::DisplayHelp => parsed += 1,
                Err(err) if err.kind() == clap::error::ErrorKind::DisplayVersion => parsed += 1,
                Err(_) if usage => {}
                // A command named in prose (`validator hook`) rather than run.
                Err(err)
                    if !run && err.kind() == clap::error::ErrorKind::MissingRequiredArgument => {}
                Err(err) => broken.push(format!("{page}: `validator {command}`: {}", err.kind())),
            }
        }
        assert!(
            broken.is_empty(),
            "commands the docs show that do not parse:\n{}",
            broken.join("\n")
        );
        assert!(parsed >= 75, "only {parsed} commands found in the docs");
    }

    /// `-c` is offered wherever a rules file is read, and not on `completions`, which reads
    /// none; it is still accepted there, as a global option given first would be.
    #[test]
    fn completions_does_not_offer_the_rules_file_option() {
        let mut command = super::command();
        command.build();
        let offers = |name: &str| {
            let sub = command.find_subcommand(name).expect("subcommand");
            sub.get_arguments()
                .any(|arg| arg.get_id() == "config" && !arg.is_hide_set())
        };
        assert!(!offers("completions"));
        assert!(offers("check") && offers("watch"));
        let parsed =
            super::command().try_get_matches_from(["validator", "-c", "x", "completions", "bash"]);
        assert!(parsed.is_ok());
    }
}
