//! `validator hook`: the agent's stop hook, answering in the agent's format; never blocking the
//! agent by accident, and never so late that the agent's own hook timeout lets it stop: by
//! `--deadline` the hook has answered, from the run's end or, should the run still not have
//! ended, by refusing the stop itself.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::check::cancel_on_stop_signals;
use clap::ValueEnum;

use super::{EXIT_HOOK_ERROR, config_path, load};

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum HookAgent {
    /// Claude Code: Stop and SubagentStop
    Claude,
    /// Codex CLI: Stop and SubagentStop
    Codex,
    /// Gemini CLI: AfterAgent
    Gemini,
    /// OpenCode, through the plugin in examples/hooks/opencode: session.idle
    Opencode,
}

impl From<HookAgent> for validator::hook::Agent {
    fn from(agent: HookAgent) -> Self {
        match agent {
            HookAgent::Claude => validator::hook::Agent::Claude,
            HookAgent::Codex => validator::hook::Agent::Codex,
            HookAgent::Gemini => validator::hook::Agent::Gemini,
            HookAgent::Opencode => validator::hook::Agent::Opencode,
        }
    }
}

/// `--deadline`'s default: under the shortest stop-hook timeout an agent has by default
/// (Gemini CLI's 60 s; Claude Code's and Codex CLI's are 600 s), with room for the agent to
/// start the hook and read its answer.
pub(crate) const DEFAULT_DEADLINE: &str = "50s";

/// `--deadline`: a duration, and not zero (no answer could come in time).
pub(crate) fn parse_deadline(text: &str) -> Result<Duration, String> {
    let deadline = super::parse_duration(text)?;
    if deadline.is_zero() {
        return Err("a deadline of 0 leaves no time to judge; give the time the hook may take, under the agent's own hook timeout".into());
    }
    Ok(deadline)
}

/// `validator hook`: the answer on stdout and exit 0, or the problem on stderr and exit 1 with
/// nothing on stdout, so a broken setup never blocks the agent by accident.
pub(crate) fn hook(
    config: Option<PathBuf>,
    agent: HookAgent,
    task_dir: Option<PathBuf>,
    task: Option<String>,
    deadline: Duration,
) -> ExitCode {
    let agent = validator::hook::Agent::from(agent);
    let answer_by = validator::hook::AnswerBy::new(Instant::now(), deadline);
    let answered = Arc::new(Mutex::new(false));
    let session = Arc::new(OnceLock::new());
    let result = cancel_on_stop_signals().and_then(|cancel| {
        refuse_at_the_deadline(Deadline {
            agent,
            answer_by,
            cancel: Arc::clone(&cancel),
            answered: Arc::clone(&answered),
            session: Arc::clone(&session),
        });
        hook_answer(config, agent, task_dir, task, &cancel, answer_by, &session)
    });
    let mut said = answered.lock().unwrap_or_else(PoisonError::into_inner);
    if *said {
        // The deadline came first, and its refusal is the answer.
        return ExitCode::SUCCESS;
    }
    *said = true;
    let printed = result.and_then(|answer| {
        if let Some(line) = answer {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{line}")
                .and_then(|()| out.flush())
                .context("cannot write the answer to stdout")?;
        }
        Ok(())
    });
    match printed {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("validator hook {}: error: {err:#}", agent.name());
            ExitCode::from(EXIT_HOOK_ERROR)
        }
    }
}

/// What the hook's deadline is kept with.
struct Deadline {
    agent: validator::hook::Agent,
    answer_by: validator::hook::AnswerBy,
    /// Kills the gates' commands.
    cancel: Arc<validator::process::Cancel>,
    /// Set by whoever answers first: the run's end or the deadline.
    answered: Arc<Mutex<bool>>,
    /// The stop being judged, once known: where the deadline's answer is logged.
    session: Arc<OnceLock<validator::hook::Session>>,
}

/// At the deadline, if no answer has been given: the gates' commands are killed and the stop
/// is refused as not judged in time, and validator exits. Every gate ends at the run's budget,
/// which the hook cuts to its deadline, well before this; it is what holds if one does not.
fn refuse_at_the_deadline(deadline: Deadline) {
    let Deadline {
        agent,
        answer_by,
        cancel,
        answered,
        session,
    } = deadline;
    std::thread::spawn(move || {
        std::thread::sleep(answer_by.at.saturating_duration_since(Instant::now()));
        let mut said = answered.lock().unwrap_or_else(PoisonError::into_inner);
        if *said {
            return;
        }
        *said = true;
        cancel.cancel();
        eprintln!(
            "validator hook {}: the gates were still running at the hook's deadline ({}); they were stopped and the stop refused",
            agent.name(),
            validator::duration::format(answer_by.length)
        );
        if let Some(line) = answer_by.not_judged_in_time(session.get()).to_json(agent) {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}").and_then(|()| out.flush());
        }
        // What main does on the way out, as the gates' own ends will not come.
        validator::reaper::release_cgroups();
        validator::reaper::reap_adopted();
        std::process::exit(0);
    });
}

pub(crate) fn hook_answer(
    config: Option<PathBuf>,
    agent: validator::hook::Agent,
    task_dir: Option<PathBuf>,
    task: Option<String>,
    cancel: &validator::process::Cancel,
    answer_by: validator::hook::AnswerBy,
    session: &OnceLock<validator::hook::Session>,
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
    let _ = session.set(validator::hook::Session::of(&rules, agent, &input));
    let cwd = std::env::current_dir().context("cannot tell the hook's working directory")?;
    let project =
        validator::hook::Project::locate(agent, task_dir, task, |var| std::env::var_os(var), &cwd);
    let judgement =
        validator::hook::judge(&rules, agent, &input, &project, Some(cancel), answer_by)?;
    Ok(judgement.answer.to_json(agent))
}
