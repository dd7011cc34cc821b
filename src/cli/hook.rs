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
use validator::hook::Phase;

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum HookAgent {
    /// Claude Code: Stop, SubagentStop, PreToolUse, PostToolUse, SessionStart, UserPromptSubmit
    Claude,
    /// Codex CLI: Stop, SubagentStop, PreToolUse, PostToolUse, SessionStart, UserPromptSubmit
    Codex,
    /// Gemini CLI: AfterAgent, BeforeTool, AfterTool, SessionStart, BeforeAgent
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

/// `validator hook`: the answer on stdout and exit 0. A stop that cannot be judged (broken
/// rules, a project that cannot be read) is answered too, held as not judged; only input that
/// is no hook's (not JSON, an event the adapter does not answer) is refused with exit 1 and
/// nothing on stdout.
pub(crate) fn hook(
    config: Option<PathBuf>,
    agent: HookAgent,
    task_dir: Option<PathBuf>,
    task: Option<String>,
    deadline: Duration,
) -> ExitCode {
    // What a gate leaves running is re-parented here, to be killed (see `reaper`).
    validator_process::reaper::become_subreaper();
    let agent = validator::hook::Agent::from(agent);
    // Under `validator run` the hook is confined with the agent: the run judges it outside.
    if let Some(relayed) = super::broker::relay(agent.name(), deadline) {
        return relayed;
    }
    let answer_by = validator::hook::AnswerBy::new(Instant::now(), deadline);
    let answered = Arc::new(Mutex::new(false));
    let called = HookCall {
        config,
        agent,
        task_dir,
        task,
        answer_by,
    };
    let result = read_input(agent, answer_by).and_then(|read| match read {
        Received::Input(input) => answer(called, &input, &answered),
        Received::Answered(answer) => Ok(answer),
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

/// What one call of the hook was given on its command line.
struct HookCall {
    config: Option<PathBuf>,
    agent: validator::hook::Agent,
    task_dir: Option<PathBuf>,
    task: Option<String>,
    answer_by: validator::hook::AnswerBy,
}

/// The hook's input, or the answer already due without it.
enum Received {
    Input(Box<validator::hook::Input>),
    Answered(Option<String>),
}

/// Reads and parses the hook's input, by the deadline: an input that does not end by then, or
/// is too long to read whole, is answered as not judged (a stop is refused).
fn read_input(
    agent: validator::hook::Agent,
    answer_by: validator::hook::AnswerBy,
) -> Result<Received> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        bail!(
            "`validator hook {}` reads the agent's hook JSON on stdin\n  help: configure it as the agent's stop hook (see examples/hooks), or pipe a JSON object into it",
            agent.name()
        );
    }
    let input = match read_by(stdin.lock(), answer_by.at, validator::hook::MAX_INPUT)
        .context("cannot read the hook's input from stdin")?
    {
        Bounded::Whole(input) => input,
        // A session's start or a person's prompt is never refused: refusing would drop what
        // the person asked. Only the stop and tool calls are.
        Bounded::TooLong(part) | Bounded::Late(part) if beside_the_work(agent, &part) => {
            eprintln!(
                "validator hook {}: the hook's input was too long or too slow to read whole; nothing is added to the prompt",
                agent.name()
            );
            return Ok(Received::Answered(None));
        }
        // Too long to read whole: never let such a stop through, never read half of it.
        Bounded::TooLong(_) => {
            return Ok(Received::Answered(
                validator::hook::Answer::too_long_to_judge().to_json(agent),
            ));
        }
        Bounded::Late(_) => {
            eprintln!(
                "validator hook {}: the hook's input did not end by its deadline ({}); the stop is refused",
                agent.name(),
                validator::duration::format(answer_by.length)
            );
            return Ok(Received::Answered(
                answer_by.not_judged_in_time(None).to_json(agent),
            ));
        }
    };
    Ok(Received::Input(Box::new(validator::hook::Input::parse(
        agent, &input,
    )?)))
}

/// Whether a partly read input is a session's start or a person's prompt.
fn beside_the_work(agent: validator::hook::Agent, part: &[u8]) -> bool {
    validator::hook::event_of_partial(part).is_some_and(|event| {
        matches!(
            agent.phase(Some(&event)),
            Phase::SessionStart | Phase::Prompt
        )
    })
}

/// What reading a bounded input by a deadline gave (with what arrived, when not whole).
enum Bounded {
    Whole(Vec<u8>),
    TooLong(Vec<u8>),
    Late(Vec<u8>),
}

/// Reads `reader` to its end, at most `limit` bytes, waiting for more only until `until`: the
/// agent's pipe is polled, never read blocking, so a writer that never closes it cannot hold
/// the hook past its deadline (and no thread is started for a call that needs none).
fn read_by(
    mut reader: impl Read + std::os::fd::AsFd,
    until: Instant,
    limit: usize,
) -> std::io::Result<Bounded> {
    let mut input = Vec::new();
    let mut chunk = [0u8; 64 * 1024];
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(Bounded::Late(input));
        }
        if !validator_process::kernel::readable_within(reader.as_fd(), left)? {
            continue;
        }
        let read = match reader.read(&mut chunk) {
            Ok(read) => read,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        if read == 0 {
            return Ok(Bounded::Whole(input));
        }
        input.extend_from_slice(&chunk[..read]);
        if input.len() > limit {
            return Ok(Bounded::TooLong(input));
        }
    }
}

/// Answers one parsed input. A call before a tool runs reads the rules and a few files, and
/// is answered at once; anything that runs commands (a stop, what a tool changed) runs under
/// the stop signals and the hook's deadline.
fn answer(
    call: HookCall,
    input: &validator::hook::Input,
    answered: &Arc<Mutex<bool>>,
) -> Result<Option<String>> {
    let phase = call.agent.phase(input.hook_event_name.as_deref());
    let session = Arc::new(OnceLock::new());
    let counted = OnceLock::new();
    let phase_cell = Arc::new(OnceLock::new());
    let _ = phase_cell.set(phase);
    // Nothing is run before a tool or at session start: answered at once.
    if matches!(phase, Phase::BeforeTool | Phase::SessionStart) {
        let cancel = validator_process::Cancel::one_shot();
        let called = Called {
            cancel: &cancel,
            answer_by: call.answer_by,
            session: &session,
            counted: &counted,
            phase: &phase_cell,
        };
        return hook_answer(call, input, called);
    }
    let cancel = cancel_on_stop_signals()?;
    refuse_at_the_deadline(Deadline {
        agent: call.agent,
        answer_by: call.answer_by,
        cancel: Arc::clone(&cancel),
        answered: Arc::clone(answered),
        session: Arc::clone(&session),
        phase: Arc::clone(&phase_cell),
    });
    let called = Called {
        cancel: &cancel,
        answer_by: call.answer_by,
        session: &session,
        counted: &counted,
        phase: &phase_cell,
    };
    hook_answer(call, input, called)
}

/// What the hook's deadline is kept with.
struct Deadline {
    agent: validator::hook::Agent,
    answer_by: validator::hook::AnswerBy,
    /// Kills the gates' commands.
    cancel: Arc<validator_process::Cancel>,
    /// Set by whoever answers first: the run's end or the deadline.
    answered: Arc<Mutex<bool>>,
    /// The stop being judged, once known: where the deadline's answer is logged.
    session: Arc<OnceLock<validator::hook::SessionLog>>,
    /// When the hook was called, once known: only a stop is refused at the deadline; a tool
    /// call not judged by then is left to the agent's own rules.
    phase: Arc<OnceLock<Phase>>,
}

/// What one call of the hook shares with its deadline.
pub(crate) struct Called<'a> {
    pub cancel: &'a validator_process::Cancel,
    pub answer_by: validator::hook::AnswerBy,
    pub session: &'a OnceLock<validator::hook::SessionLog>,
    /// The stop's attempt, once counted and saved: a call that fails after that is held
    /// without counting it again.
    pub counted: &'a OnceLock<String>,
    pub phase: &'a OnceLock<Phase>,
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
        phase,
    } = deadline;
    std::thread::spawn(move || {
        std::thread::sleep(answer_by.at.saturating_duration_since(Instant::now()));
        let mut said = answered.lock().unwrap_or_else(PoisonError::into_inner);
        if *said {
            return;
        }
        *said = true;
        cancel.cancel();
        if phase
            .get()
            .is_some_and(|phase| phase.before_or_beside_the_stop())
        {
            eprintln!(
                "validator hook {}: the call was not answered by the hook's deadline ({}); the agent goes on as its own rules say",
                agent.name(),
                validator::duration::format(answer_by.length)
            );
            validator_process::reaper::release_cgroups();
            validator_process::reaper::reap_adopted();
            std::process::exit(0);
        }
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
        validator_process::reaper::release_cgroups();
        validator_process::reaper::reap_adopted();
        std::process::exit(0);
    });
}

fn hook_answer(
    call: HookCall,
    input: &validator::hook::Input,
    called: Called<'_>,
) -> Result<Option<String>> {
    let agent = call.agent;
    let phase = called.phase.get().copied().unwrap_or(Phase::Stop);
    let named = (call.config.clone(), call.task_dir.clone());
    // A bug that panics must not end the call with main's exit 1, which lets an agent stop
    // unjudged: it is an error like any other here, and a stop is held for it.
    let answered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        answer_input(call.config, agent, call.task_dir, call.task, input, &called)
    }))
    .unwrap_or_else(|_| {
        Err(anyhow::anyhow!(
            "validator failed unexpectedly while judging (the panic above); this is a bug in validator, please report it"
        ))
    });
    match (answered, phase) {
        (Ok(answer), _) => Ok(answer),
        // A tool call validator cannot judge (broken rules, say) is refused, but for a tool
        // that only reads: a worker that breaks its rules file must not turn every tool-time
        // rule off by it. Answered, never failed: an agent shows a failed hook's command line,
        // rules path included, to its model.
        (Err(err), Phase::BeforeTool) => {
            // The details (which name the rules file) go to stderr, for the person's log only.
            eprintln!("validator hook {}: error: {err:#}", agent.name());
            let event = input.hook_event_name.as_deref().unwrap_or_default();
            Ok(validator::hook::tool::not_judged(
                input,
                "validator cannot read its rules (`validator rules check` says why)",
            )
            .to_json(agent, event))
        }
        // After a tool ran nothing is left to refuse: the person is told, the stop judges.
        (Err(err), Phase::AfterTool) => {
            eprintln!("validator hook {}: error: {err:#}", agent.name());
            let event = input.hook_event_name.as_deref().unwrap_or_default();
            Ok(validator::hook::tool::ToolAnswer::Notice(
                "this tool call was not judged: validator cannot read its rules (`validator rules check` says why); the stop will still be judged".into(),
            )
            .to_json(agent, event))
        }
        // No brief and no prompt gates, said to the person; the stop is still judged (or
        // refused) by itself.
        (Err(err), Phase::SessionStart | Phase::Prompt) => {
            eprintln!("validator hook {}: error: {err:#}", agent.name());
            Ok(validator::hook::tool::ToolAnswer::Notice(
                "validator cannot read its rules (`validator rules check` says why), so the agent was given no brief; its stop will still be judged".into(),
            )
            .to_json(agent, input.hook_event_name.as_deref().unwrap_or_default()))
        }
        // Never exit 1 here: an agent stops on it, unjudged, and a worker can break a rules
        // file in its project on purpose. The stop is held, counted, and the person told.
        (Err(err), Phase::Stop) => {
            eprintln!(
                "validator hook {}: error: {err:#}\n  the stop was not let through",
                agent.name()
            );
            let (config, task_dir) = named;
            let counted = called.counted.get().map(String::as_str);
            Ok(not_judged(config, agent, task_dir, input, &err, counted).to_json(agent))
        }
    }
}

/// The answer to a stop that could not be judged: held (stopped for a person once the session's
/// attempts are spent), counted where the rules keep the session's state, or would by default.
fn not_judged(
    config: Option<PathBuf>,
    agent: validator::hook::Agent,
    task_dir: Option<PathBuf>,
    input: &validator::hook::Input,
    err: &anyhow::Error,
    counted: Option<&str>,
) -> validator::hook::Answer {
    let found = config_path(config).ok();
    let rules = found.as_deref().and_then(|path| load(path).ok());
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let project =
        validator::hook::Project::locate(agent, task_dir, None, |var| std::env::var_os(var), &cwd);
    let found = found.map(|path| path.canonicalize().unwrap_or(path));
    // A rules file inside the agent's project is the worker's to break, and `.validator`
    // beside it the worker's to wipe: its path and error are the agent's to read, but the
    // count is not kept there. A rules file outside it is the person's: its path and its
    // error are theirs to read, not the model's.
    let in_reach = found.as_deref().is_none_or(|path| {
        project
            .dir
            .canonicalize()
            .is_ok_and(|dir| path.starts_with(dir))
    });
    let state = match (&rules, &found) {
        (Some(rules), _) => rules.state.clone(),
        // A rules file out of the worker's reach that does not load: its state directory, by
        // default, is out of reach too.
        (None, Some(path)) if !in_reach => path
            .parent()
            .filter(|dir| !dir.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."))
            .join(".validator"),
        // No rules file anywhere (one the worker removed, say), or one in the project that
        // does not load (one the worker broke): the count is kept in the user's state
        // directory, out of the project, where a `.validator` the worker resets would let
        // each stop be the first. A reset there only holds the agent longer.
        (None, _) => validator::state::user_dir().unwrap_or_else(|| project.dir.join(".validator")),
    };
    // The reset named clears this count: `validator reset` with a rules file that does not
    // load, or whose state is elsewhere, would not.
    let counted_beside_rules = rules.is_some() || !in_reach;
    let for_agent = if rules.is_some() || in_reach {
        format!("{err:#}")
    } else {
        "validator cannot read its rules file, which lies outside your project: a person must fix it".to_owned()
    };
    let answer = validator::hook::not_judged(
        input,
        &validator::hook::Unjudged {
            state: &state,
            max_attempts: rules.as_ref().map_or_else(
                || validator::config::Defaults::default().max_attempts,
                |rules| rules.defaults.max_attempts,
            ),
            rules: found.as_deref().filter(|_| counted_beside_rules),
            for_agent,
            for_person: format!("{err:#}"),
            counted,
        },
    );
    if let Some(message) = answer.for_the_person() {
        eprintln!("validator hook {}: {message}", agent.name());
    }
    answer
}

fn answer_input(
    config: Option<PathBuf>,
    agent: validator::hook::Agent,
    task_dir: Option<PathBuf>,
    task: Option<String>,
    input: &validator::hook::Input,
    called: &Called<'_>,
) -> Result<Option<String>> {
    // The rules file is found as everywhere else: `-c`, `$VALIDATOR_CONFIG`, a `validator.yaml`.
    // Agents start hooks in the project directory, which the agent can write, so the examples
    // pass `-c` with an absolute path outside it; the input's `cwd` is never searched.
    let rules = load(&config_path(config)?)?;
    let _ = called
        .session
        .set(validator::hook::SessionLog::of(&rules, agent, input));
    let cwd = std::env::current_dir().context("cannot tell the hook's working directory")?;
    let project =
        validator::hook::Project::locate(agent, task_dir, task, |var| std::env::var_os(var), &cwd);
    let event = input.hook_event_name.as_deref().unwrap_or_default();
    Ok(match called.phase.get().copied().unwrap_or(Phase::Stop) {
        Phase::BeforeTool => {
            validator::hook::tool::before(&rules, agent, input, &project, called.answer_by)
                .to_json(agent, event)
        }
        Phase::AfterTool => {
            validator::hook::tool::after(&rules, agent, input, &project, called.answer_by)
                .to_json(agent, event)
        }
        Phase::SessionStart => {
            validator::hook::prompt::session_start(&rules, input, &project).to_json(event)
        }
        Phase::Prompt => validator::hook::prompt::prompt(
            &rules,
            agent,
            input,
            &project,
            Some(called.cancel),
            called.answer_by,
        )
        .to_json(event),
        Phase::Stop => {
            let answer = validator::hook::judge(
                &rules,
                agent,
                input,
                &project,
                Some(called.cancel),
                called.answer_by,
                called.counted,
            )?
            .answer;
            if let Some(message) = answer.for_the_person() {
                eprintln!("validator hook {}: {message}", agent.name());
            }
            answer.to_json(agent)
        }
    })
}
