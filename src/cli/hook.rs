//! `validator hook`: the agent's stop hook, answering in the agent's format; never blocking the
//! agent by accident.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use super::check::cancel_on_stop_signals;
use clap::ValueEnum;

use super::{EXIT_HOOK_ERROR, config_path, load};
use validator::hook::Phase;

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

/// `validator hook`: the answer on stdout and exit 0, or the problem on stderr and exit 1 with
/// nothing on stdout, so a broken setup never blocks the agent by accident.
pub(crate) fn hook(
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

pub(crate) fn hook_answer(
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
    let phase = agent.phase(input.hook_event_name.as_deref());
    let answered = answer_input(config, agent, task_dir, task, &input, phase);
    match (answered, phase) {
        (Ok(answer), _) => Ok(answer),
        // A tool call validator cannot judge (broken rules, say) is left to the agent's own
        // permission rules, and the person told why: the stop stays the backstop. Answered,
        // never failed: an agent shows a failed hook's command line, rules path included, to
        // its model.
        (Err(err), Phase::BeforeTool | Phase::AfterTool) => {
            // The details (which name the rules file) go to stderr, for the person's log only.
            eprintln!("validator hook {}: error: {err:#}", agent.name());
            let event = input.hook_event_name.as_deref().unwrap_or_default();
            Ok(validator::hook::tool::ToolAnswer::Notice(
                "this tool call was not judged: validator cannot read its rules (`validator rules check` says why); the stop will still be judged".into(),
            )
            .to_json(agent, event))
        }
        (Err(err), Phase::Stop) => Err(err),
    }
}

fn answer_input(
    config: Option<PathBuf>,
    agent: validator::hook::Agent,
    task_dir: Option<PathBuf>,
    task: Option<String>,
    input: &validator::hook::Input,
    phase: Phase,
) -> Result<Option<String>> {
    // The rules file is found as everywhere else: `-c`, `./validator.yaml`, `$VALIDATOR_CONFIG`.
    // Agents start hooks in the project directory, which the agent can write, so the examples
    // pass `-c` with an absolute path outside it; the input's `cwd` is never searched.
    let rules = load(&config_path(config)?)?;
    let cwd = std::env::current_dir().context("cannot tell the hook's working directory")?;
    let project =
        validator::hook::Project::locate(agent, task_dir, task, |var| std::env::var_os(var), &cwd);
    let event = input.hook_event_name.as_deref().unwrap_or_default();
    Ok(match phase {
        Phase::BeforeTool => {
            validator::hook::tool::before(&rules, agent, input, &project).to_json(agent, event)
        }
        Phase::AfterTool => {
            validator::hook::tool::after(&rules, agent, input, &project).to_json(agent, event)
        }
        Phase::Stop => {
            let cancel = cancel_on_stop_signals()?;
            validator::hook::judge(&rules, agent, input, &project, Some(&cancel))?
                .answer
                .to_json(agent)
        }
    })
}
