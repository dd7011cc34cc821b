//! `validator exec` (each allowed shell call, as the agent hooks rewrite it) and `validator run`
//! (a whole agent): the command is executed in validator's place, confined by the kernel to
//! the writes its task's rules accept ([`validator::confine`]). Its output, exit code,
//! environment and working directory are its own: nothing stands between it and its caller.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use validator::config::tools::Confine;
use validator::confine::Plan;

use super::{config_path, load};

/// What `exec` and `run` are given.
#[derive(Debug, Args)]
pub(crate) struct ConfineArgs {
    /// The call the pre-tool hook recorded (its rules file, task and pipeline), in place of
    /// `-c`, `--task-dir`, `--task` and `--pipeline`
    #[arg(long, value_name = "ID", conflicts_with_all = ["task_dir", "task", "pipeline", "no_pipeline"])]
    call: Option<String>,
    /// The task's directory (default: the current directory)
    #[arg(long, value_name = "DIR")]
    task_dir: Option<PathBuf>,
    /// The task's name, for its contract (default: the directory's name)
    #[arg(long)]
    task: Option<String>,
    /// The pipeline whose `file-scope` gates hold the writes (default: the one the rules pick)
    #[arg(long, conflicts_with = "no_pipeline")]
    pipeline: Option<String>,
    /// Hold the writes to the task's contract alone
    #[arg(long)]
    no_pipeline: bool,
    /// Another directory the command may write (an agent's own state, when `run` does not
    /// know the agent)
    #[arg(long, value_name = "DIR")]
    writable: Vec<PathBuf>,
    /// The command and its arguments
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// Exit code when the command cannot be confined as the rules require: it did not run.
const EXIT_NOT_CONFINED: u8 = 126;
/// Exit code when the command cannot be found.
const EXIT_NOT_FOUND: u8 = 127;

/// Confines this process to the task's plan and executes the command in its place; returns
/// only when it cannot (the command did not run, and stderr says why).
pub(crate) fn exec(
    config: Option<PathBuf>,
    args: ConfineArgs,
    whole_agent: bool,
) -> Result<ExitCode> {
    let verb = if whole_agent { "run" } else { "exec" };
    let refuse = |why: &str| {
        eprintln!("validator {verb}: not run: {why}");
        Ok(ExitCode::from(EXIT_NOT_CONFINED))
    };
    let mut args = args;
    let mut config = config;
    if let Some(id) = &args.call {
        let call = match validator::confine::Call::load(id) {
            Ok(call) => call,
            Err(why) => return refuse(&why),
        };
        config = Some(call.rules);
        args.task_dir = Some(call.task_dir);
        args.task = Some(call.task);
        args.no_pipeline = call.pipeline.is_none();
        args.pipeline = call.pipeline;
    }
    let rules = match config_path(config).and_then(|path| load(&path)) {
        Ok(rules) => rules,
        Err(err) => return refuse(&format!("the rules cannot be read: {err:#}")),
    };
    // A task named without a directory is the one in staging (the sidecar's and the loop's),
    // as `snapshot` finds it; else the current directory.
    let dir = match (args.task_dir, &args.task) {
        (Some(dir), _) => dir,
        (None, Some(task)) => match validator::staging::task_dir(&rules.staging, task) {
            Ok(dir) if dir.is_dir() => dir,
            _ => std::env::current_dir()?,
        },
        (None, None) => std::env::current_dir()?,
    };
    let name = args
        .task
        .unwrap_or_else(|| validator::task::name_from_dir(&dir));
    let pipeline = match (args.no_pipeline, args.pipeline.as_deref()) {
        (true, _) => Some(None),
        (false, Some(named)) => Some(Some(named)),
        (false, None) => None,
    };
    let mut extra = args.writable;
    let mut kept = Vec::new();
    let program = args.command;
    if whole_agent {
        let (state, settings) = agent_state();
        // Made now, as the agent would make them: a directory missing when the rules are built
        // could not be granted, and the agent could not make it then.
        for dir in state.iter().filter(|path| path.extension().is_none()) {
            let _ = std::fs::create_dir_all(dir);
        }
        // OpenCode makes its configuration directory at start, which it then only reads.
        let _ = std::fs::create_dir_all(opencode_config());
        extra.extend(state);
        kept = settings;
    }
    let mode = rules.tools.confine;
    let plan = match Plan::for_rules(&rules, &dir, &name, pipeline, &extra, &kept) {
        Ok(plan) => plan,
        Err(why) if mode == Confine::Off => {
            tracing::debug!("no plan ({why}); confinement is off");
            Plan::default()
        }
        Err(why) => return refuse(&why),
    };
    let tmp = match validator::confine::scratch() {
        Ok(tmp) => tmp,
        Err(why) => return refuse(&why),
    };
    let mut command = std::process::Command::new(&program[0]);
    command
        .args(&program[1..])
        .env("TMPDIR", &tmp)
        .env("TMP", &tmp)
        .env("TEMP", &tmp)
        .env("VALIDATOR_CONFINED", "1")
        .envs(plan.environment());
    if whole_agent {
        return run_agent(command, plan, mode, tmp, &rules, &dir, &name);
    }
    match plan.enter(mode, &tmp) {
        Ok(held) => {
            for why in &held.unheld {
                tracing::debug!("not held: {why}");
            }
        }
        Err(why) => return refuse(&why),
    }
    let err = command.exec();
    eprintln!(
        "validator exec: cannot run {}: {err}",
        validator_text::name(&program[0].to_string_lossy())
    );
    Ok(ExitCode::from(not_run(&err)))
}

fn not_run(err: &std::io::Error) -> u8 {
    if err.kind() == std::io::ErrorKind::NotFound {
        EXIT_NOT_FOUND
    } else {
        EXIT_NOT_CONFINED
    }
}

/// `validator run`: the agent is started confined, and this process stays outside as the
/// broker its hooks are judged by ([`super::broker`]), passing on the signals it is sent and
/// ending with the agent's exit code.
fn run_agent(
    mut command: std::process::Command,
    plan: Plan,
    mode: Confine,
    tmp: PathBuf,
    rules: &validator::Rules,
    dir: &std::path::Path,
    name: &str,
) -> Result<ExitCode> {
    let broker = match super::broker::Broker::bind() {
        Ok(broker) => broker,
        Err(why) => {
            eprintln!("validator run: not run: {why}");
            return Ok(ExitCode::from(EXIT_NOT_CONFINED));
        }
    };
    command.env(super::broker::BROKER_ENV, broker.socket());
    let notes = plan.notes.clone();
    // Confinement is entered in the child between fork and exec; this process has one thread
    // until the agent is started (the broker's start after), which the spawn checks.
    let enter = move || {
        let held = plan.enter(mode, &tmp).map_err(std::io::Error::other)?;
        for (what, why) in held
            .unheld
            .iter()
            .map(|w| ("not held", w))
            .chain(notes.iter().map(|note| ("held by the stop only", note)))
        {
            eprintln!("validator run: {what}: {why}");
        }
        Ok(())
    };
    let mut child = match validator_process::kernel::spawn_with_before_exec(&mut command, enter) {
        Ok(child) => child,
        Err(err) => {
            eprintln!("validator run: not run: {err}");
            return Ok(ExitCode::from(not_run(&err)));
        }
    };
    let judged = super::broker::Judged {
        rules: rules
            .path
            .canonicalize()
            .unwrap_or_else(|_| rules.path.clone()),
        task_dir: dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()),
        task: name.to_owned(),
    };
    broker.serve(judged);
    pass_on_signals(child.id());
    let status = child.wait()?;
    use std::os::unix::process::ExitStatusExt;
    let code = status
        .code()
        .or_else(|| status.signal().map(|signal| 128 + signal))
        .unwrap_or(1);
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}

/// Sends the agent the signals that would have ended it had it been started alone.
fn pass_on_signals(pid: u32) {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP, SIGQUIT])
    else {
        return;
    };
    let Ok(pid) = i32::try_from(pid) else { return };
    std::thread::spawn(move || {
        for signal in signals.forever() {
            if let Ok(signal) = nix::sys::signal::Signal::try_from(signal) {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal);
            }
        }
    });
}

/// OpenCode's configuration directory (its settings and plugins: never writable).
fn opencode_config() -> PathBuf {
    std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))
        .unwrap_or_default()
        .join("opencode")
}

/// The agent CLIs' own state, writable under `validator run` (each where it keeps it: an agent
/// run through a wrapper script is not known by its program's name), and the files in it that
/// choose what the agent runs (its settings, hooks, rules, plugins), kept read-only so the
/// agent cannot unhook validator or leave itself a program to run later.
fn agent_state() -> (Vec<PathBuf>, Vec<PathBuf>) {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let home = var("HOME").unwrap_or_default();
    let xdg = |name: &str, fallback: &str| var(name).unwrap_or_else(|| home.join(fallback));
    let claude = var("CLAUDE_CONFIG_DIR").unwrap_or_else(|| home.join(".claude"));
    let codex = var("CODEX_HOME").unwrap_or_else(|| home.join(".codex"));
    let gemini = var("GEMINI_CLI_HOME")
        .map(|dir| dir.join(".gemini"))
        .unwrap_or_else(|| home.join(".gemini"));
    let mut writable = vec![
        claude.clone(),
        home.join(".claude.json"),
        codex.clone(),
        gemini.clone(),
    ];
    // OpenCode's configuration (and its plugins) is not among them: it only reads it.
    writable.extend(
        ["XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"]
            .iter()
            .zip([".local/share", ".local/state", ".cache"])
            .map(|(var, fallback)| xdg(var, fallback).join("opencode")),
    );
    let kept = [
        claude.join("settings.json"),
        claude.join("settings.local.json"),
        claude.join("plugins"),
        claude.join("hooks"),
        codex.join("config.toml"),
        codex.join("hooks.json"),
        codex.join("rules"),
        gemini.join("settings.json"),
        gemini.join("policies"),
        gemini.join("extensions"),
    ]
    .into_iter()
    .collect();
    (writable, kept)
}
