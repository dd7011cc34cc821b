//! Agent hook adapters (`validator hook claude|codex|gemini`): the same gate, run from inside an
//! agent's own stop hook instead of a staging directory.
//!
//! The agent sends one JSON object on stdin when it is about to stop (Claude Code `Stop` and
//! `SubagentStop`, Codex `Stop` and `SubagentStop`, Gemini CLI `AfterAgent`). The adapter judges
//! the project ([`Project`]: the directory the hook command names, else the agent's project
//! directory, else the repository the hook runs in), never a directory the agent moved to,
//! with the agent's last message as the done signal's body, and answers in the agent's own
//! format:
//!
//! | verdict | answer (stdout, exit 0) |
//! |---|---|
//! | PASS | nothing: the agent stops |
//! | FAIL | `{"decision": "block", "reason": <feedback>}` (Gemini: `"deny"`): the agent goes on with the feedback as its next instruction |
//! | ERROR | a block, as FAIL's, whose reason says the stop could not be judged; the person is told too (`systemMessage` where the agent shows one to its person, and stderr) |
//! | BLOCKED, ESCALATED | `{"continue": false, "stopReason": …, "systemMessage": …}`: the agent stops and a person is told why and how to reset |
//!
//! An ERROR is never a free stop: what validator could not judge may be the worker's doing (a
//! file that leaves the reviewer without an answer, a package it deleted, a rules file it
//! broke), so it holds the stop as a FAIL does and counts as an attempt and a strike. The
//! breakers bound it: the same ERROR `strikes` stops in a row, or attempt `max_attempts + 1`,
//! ends the session ESCALATED, a person told. A stop the hook cannot judge at all (its rules
//! file does not load, the project cannot be read) is held the same way ([`not_judged`]),
//! counted in the session's state where the rules would keep it.
//!
//! ```text
//! {"session_id": "abc", "cwd": "/work/svc", "hook_event_name": "Stop",
//!  "stop_hook_active": false, "last_assistant_message": "Done.\nSTATUS: OK"}
//!   ──► state `hook-<sha256(session)[..16]>` ──► breakers ──► pipeline over /work/svc ──► answer
//! ```
//!
//! Attempts and the circuit breakers are kept per session (`session_id`, plus `agent_id` for a
//! subagent) in the rules' state directory, under a hashed name no agent string can steer. That
//! is what bounds the block loop: a blocked agent that stops again is the next attempt, attempt
//! `max_attempts + 1` or the same failure `strikes` times in a row is ESCALATED, and once a
//! session is ESCALATED or BLOCKED every later call lets the agent stop until
//! `validator reset hook-…` clears it. `stop_hook_active` is therefore only logged: honouring it
//! (never blocking twice in a row) would allow one retry where the rules allow `max_attempts`.
//!
//! Rules that bind hook events to pipelines (a gates.json's `hooks`) choose by the stop's event,
//! and a stop they run nothing for (no hook for the event, a subagent type not in
//! `enabled_agents`) lets the agent stop unjudged, counting no attempt.
//!
//! An agent kills a hook that outlasts its own hook timeout and goes on as if the hook had let
//! it stop. So the hook answers by its own deadline ([`AnswerBy`]), set under the agent's: the
//! gates get what is left of it (less a reserve for the answer) as the run's budget, and a run
//! cut by it is a FAIL that says the gates did not finish in time, counted as any failure
//! (attempts, strikes), so a stop that times out every time ends ESCALATED, not in a loop. The
//! attempt is saved before the gates run, so even an answer the front end had to give without
//! the run (the gates still running at the deadline itself) counts.

mod approval;
mod held;
mod input;
mod project;
pub mod prompt;
pub mod session;
pub mod tool;
mod transcript;
mod usage;

use std::borrow::Cow;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::json;
use sha2::{Digest, Sha256};

use crate::cache::Cache;
use crate::config::{Pipeline, Rules};
use crate::done::Signal;
use crate::error::Error;
use crate::events::{Event, EventLog};
use crate::judge::{Case, History, Judge, Keeper};
use crate::pipeline;
use crate::task::Task;
use crate::verdict::{Decision, Verdict, feedback};

pub use held::{Unjudged, not_judged};
use input::js_int;
pub use input::{Input, MANUAL_SESSION, Phase, event_of_partial};
pub use project::Project;

/// Largest hook input read and parsed. A last message longer than a done signal's cap is judged
/// by its end (where its STATUS block is); an input past this is answered with a block that
/// says why, never half-parsed and never let through.
pub const MAX_INPUT: usize = 16 * 1024 * 1024;

/// The agents whose stop hooks `validator hook` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    Claude,
    Codex,
    Gemini,
    /// OpenCode has no blocking stop hook: its plugin (examples/hooks/opencode) sends this
    /// adapter a Claude-shaped input when a session goes idle and sends a block's reason back
    /// into the session.
    Opencode,
}

/// Claude Code's own limit of stop-hook blocks in a row: it accepts this many (8 unless the
/// variable says) and ends the turn by itself at the next.
const CLAUDE_BLOCK_CAP_VAR: &str = "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP";
const CLAUDE_BLOCKS_ACCEPTED: u32 = 8;

impl Agent {
    /// How many blocks in a row the agent accepts before it ends the turn by itself at the
    /// next stop, where it has such a limit. The variable is read from the hook's environment,
    /// which the agent passes on from its own, and read as Claude Code reads it (a number in
    /// scientific notation, else the leading digits as JavaScript's `parseInt`); 0 or less is
    /// no limit. Whoever sets it can only make the breaker trip sooner.
    pub fn blocks_accepted(self) -> Option<u32> {
        match self {
            Agent::Claude => match std::env::var(CLAUDE_BLOCK_CAP_VAR) {
                Ok(text) => match js_int(&text) {
                    Some(n) if n <= 0 => None,
                    Some(n) => Some(u32::try_from(n).unwrap_or(u32::MAX)),
                    None => Some(CLAUDE_BLOCKS_ACCEPTED),
                },
                Err(_) => Some(CLAUDE_BLOCKS_ACCEPTED),
            },
            Agent::Codex | Agent::Gemini | Agent::Opencode => None,
        }
    }

    fn display_name(self) -> &'static str {
        match self {
            Agent::Claude => "Claude Code",
            Agent::Codex => "Codex CLI",
            Agent::Gemini => "Gemini CLI",
            Agent::Opencode => "OpenCode",
        }
    }

    /// The name on the command line (`validator hook claude`).
    pub fn name(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
            Agent::Opencode => "opencode",
        }
    }

    /// The events whose answer format this adapter speaks. Wired to any other event, an
    /// answer would mean something else, so such input is refused.
    pub fn events(self) -> &'static [&'static str] {
        match self {
            Agent::Claude => &[
                "Stop",
                "SubagentStop",
                "PreToolUse",
                "PostToolUse",
                "PostToolUseFailure",
                "SessionStart",
                "UserPromptSubmit",
            ],
            Agent::Codex => &[
                "Stop",
                "SubagentStop",
                "PreToolUse",
                "PostToolUse",
                "SessionStart",
                "UserPromptSubmit",
            ],
            Agent::Gemini => &[
                "AfterAgent",
                "BeforeTool",
                "AfterTool",
                "SessionStart",
                "BeforeAgent",
            ],
            Agent::Opencode => &["session.idle", "tool.execute.before", "tool.execute.after"],
        }
    }

    /// When in the agent's work `event` comes (an event the adapter answers).
    pub fn phase(self, event: Option<&str>) -> Phase {
        match event {
            Some("PreToolUse" | "BeforeTool" | "tool.execute.before") => Phase::BeforeTool,
            Some("PostToolUse" | "PostToolUseFailure" | "AfterTool" | "tool.execute.after") => {
                Phase::AfterTool
            }
            Some("SessionStart") => Phase::SessionStart,
            Some("UserPromptSubmit" | "BeforeAgent") => Phase::Prompt,
            _ => Phase::Stop,
        }
    }

    /// The variables the agent sets for its hooks to name the project it works on, in the
    /// order they are trusted (Gemini CLI sets Claude Code's too).
    pub fn project_dir_vars(self) -> &'static [&'static str] {
        match self {
            Agent::Claude => &["CLAUDE_PROJECT_DIR"],
            Agent::Codex => &["CODEX_PROJECT_DIR", "CLAUDE_PROJECT_DIR"],
            Agent::Gemini => &["GEMINI_PROJECT_DIR", "CLAUDE_PROJECT_DIR"],
            Agent::Opencode => &[],
        }
    }

    /// The `decision` that sends the agent back to work.
    fn block_word(self) -> &'static str {
        match self {
            Agent::Claude | Agent::Codex | Agent::Opencode => "block",
            Agent::Gemini => "deny",
        }
    }
}

/// The state name of a session (or of one subagent in it): `hook-` and 16 hex digits of a
/// SHA-256. Hashed because session ids are the agent's strings: a valid task name whatever
/// they hold, and nothing a person pastes into a shell to reset it.
pub fn session_key(session_id: &str, agent_id: Option<&str>) -> String {
    let mut hasher = Sha256::new();
    hasher.update(session_id.as_bytes());
    if let Some(agent_id) = agent_id.filter(|id| !id.is_empty()) {
        hasher.update(b"\0");
        hasher.update(agent_id.as_bytes());
    }
    format!("hook-{}", &format!("{:x}", hasher.finalize())[..16])
}

/// When the hook must have answered: `length` after it started, under the agent's own hook
/// timeout.
#[derive(Debug, Clone, Copy)]
pub struct AnswerBy {
    pub at: Instant,
    pub length: Duration,
}

impl AnswerBy {
    pub fn new(started: Instant, length: Duration) -> Self {
        AnswerBy {
            at: started + length,
            length,
        }
    }

    /// When the gates must be done: the deadline less a fifth of it (5 s at most) for what
    /// follows the run (the session's state, the event log, the answer).
    pub fn gates_by(&self) -> Instant {
        self.at - (self.length / 5).min(Duration::from_secs(5))
    }

    /// Why a stop was refused for want of time, in the words the agent and its person read.
    pub fn reason(&self) -> String {
        format!(
            "the gates did not finish within the hook's deadline of {} (`--deadline`, kept under the agent's own hook timeout), so this stop is not let through; if it happens every time, a person makes the gates faster or raises both",
            crate::duration::format(self.length)
        )
    }

    /// The answer given when the run could not be waited for: a FAIL's block, never a pass.
    pub fn not_judged_in_time(&self, session: Option<&SessionLog>) -> Answer {
        let reason = self.reason();
        if let Some(session) = session {
            session.record_refusal(&reason);
        }
        Answer::Block {
            reason: format!("# validator: not judged in time\n\n- {reason}\n"),
        }
    }
}

/// Where a stop is recorded, for an answer the front end gives without the run's end (at the
/// deadline): logged as the run's own answer would be.
#[derive(Debug, Clone)]
pub struct SessionLog {
    state: PathBuf,
    events: crate::events::Retention,
    key: String,
    agent: String,
}

impl SessionLog {
    pub fn of(rules: &Rules, agent: Agent, input: &Input) -> SessionLog {
        SessionLog {
            state: rules.state.clone(),
            events: rules.events,
            key: input.session_key(),
            agent: input.agent_name(agent),
        }
    }

    fn record_refusal(&self, reason: &str) {
        let Ok(events) = EventLog::open(&self.state, self.events) else {
            return;
        };
        // The attempt was saved before the gates ran.
        let attempt = crate::state::TaskState::load(&self.state, &self.key).attempt;
        events.record(
            Some(&self.key),
            Some(&self.agent),
            Event::HookAnswered {
                answer: "block",
                attempt,
                reasons: &[reason.to_owned()],
                verdict: Decision::Fail,
            },
        );
    }
}

/// What the adapter tells the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// PASS: say nothing; the agent stops.
    Pass,
    /// FAIL: send the agent back to work with this feedback.
    Block { reason: String },
    /// BLOCKED or ESCALATED: the agent must stop and a person decides.
    Stop {
        stop_reason: String,
        system_message: String,
    },
    /// ERROR, or a stop not judged at all: send the agent back with `reason`, and tell the
    /// person `system_message` (where the agent shows one; stderr always).
    Hold {
        reason: String,
        system_message: String,
    },
}

impl Answer {
    /// The answer to a stop whose input is too long to read whole ([`MAX_INPUT`]).
    pub fn too_long_to_judge() -> Answer {
        Answer::Block {
            reason: format!(
                "validator could not judge this stop: the hook's input is over {} MiB, so your last message was not read. End with a short message whose last lines are the STATUS block (STATUS: OK, or STATUS: BLOCKED and REASON: ...).",
                MAX_INPUT / 1024 / 1024
            ),
        }
    }

    /// The JSON line to print on stdout, or `None` for PASS. Only fields every one of the three
    /// agents documents for its stop event are used (Codex refuses unknown ones).
    pub fn to_json(&self, agent: Agent) -> Option<String> {
        let value = match self {
            Answer::Pass => return None,
            Answer::Block { reason } => json!({"decision": agent.block_word(), "reason": reason}),
            Answer::Stop {
                stop_reason,
                system_message,
            } => {
                json!({"continue": false, "stopReason": stop_reason, "systemMessage": system_message})
            }
            Answer::Hold {
                reason,
                system_message,
            } => match agent {
                // Both document `systemMessage` beside a stop's decision, shown to the person.
                Agent::Claude | Agent::Gemini => json!({
                    "decision": agent.block_word(),
                    "reason": reason,
                    "systemMessage": system_message,
                }),
                // Exactly FAIL's fields: Codex drops an answer with one it does not take, and
                // OpenCode's plugin reads only these; the person reads stderr.
                Agent::Codex | Agent::Opencode => {
                    json!({"decision": agent.block_word(), "reason": reason})
                }
            },
        };
        Some(value.to_string())
    }

    /// What the person is to read besides the agent, on stderr: a held stop's message.
    pub fn for_the_person(&self) -> Option<&str> {
        match self {
            Answer::Hold { system_message, .. } => Some(system_message),
            Answer::Pass | Answer::Block { .. } | Answer::Stop { .. } => None,
        }
    }

    fn word(&self) -> &'static str {
        match self {
            Answer::Pass => "pass",
            Answer::Block { .. } => "block",
            Answer::Stop { .. } => "stop",
            Answer::Hold { .. } => "block",
        }
    }
}

/// A judged stop: the verdict, the session's state name and the answer.
#[derive(Debug)]
pub struct Judgement {
    pub session: String,
    pub verdict: Verdict,
    pub answer: Answer,
}

/// Judges one stop of `agent`: counts the attempt, applies the breakers as the watcher does,
/// runs the pipeline over the project as `check` does, saves the session's state and logs
/// events.
///
/// The task is named as the hook command says, else after the project's directory (as `check`
/// names it), so `tasks:` globs and contracts pick pipelines the same way for both; the session
/// key names the state and the events. A stop no pipeline matches is a FAIL that blocks (the
/// breakers end it): it is never let through unjudged.
///
/// `counted` is given the attempt's identity once it is saved, so that a call that fails after
/// that (a panic in the gates' run) is held without counting the same stop twice.
pub fn judge(
    rules: &Rules,
    agent: Agent,
    input: &Input,
    project: &Project,
    cancel: Option<&validator_process::Cancel>,
    answer_by: AnswerBy,
    counted: &std::sync::OnceLock<String>,
) -> Result<Judgement, Error> {
    let Limits {
        rules,
        accepted,
        cut,
    } = Limits::of(rules, agent, answer_by);
    let rules = rules.as_ref();
    let session = input.session_key();
    let agent_name = input.agent_name(agent);
    // Plan compliance holds every subagent stop, whatever pipeline its event runs, or none.
    let plan_compliance = rules.hook.subagent_status && input.is_subagent_stop();
    let bound = match bound_pipeline(rules, input) {
        Ok(bound) => Some(bound),
        Err(why) if plan_compliance => {
            let why = format!("{why}; plan compliance alone judges it");
            log_skip(rules, input, &session, &agent_name, &why);
            None
        }
        Err(why) => return unjudged(rules, input, project, session, &agent_name, why),
    };
    // The budget breakers: past `max_time` or `max_tokens`, the session is ESCALATED before
    // anything runs.
    check_budgets(rules, agent, input);
    // The agent's answer matters more than the history: a log that cannot be opened (a full or
    // read-only disk) drops events, and a state that cannot be saved is said on stderr.
    let events = EventLog::open_or_discard(&rules.state, rules.events);
    let (signal, left_out) = input.signal(agent);
    let stop = Stop {
        input,
        project,
        signal: &signal,
        left_out,
    };
    let (mut history, saved) = count(rules, &session, &events, agent_name, &stop);
    if let Some(identity) = history.state.signal.clone().filter(|_| saved) {
        let _ = counted.set(identity);
    }

    // The state directory is the adapter's own (it writes there on every call); when it lies
    // inside the agent's directory the rules must not count it as the agent's work.
    // The stop's message is the agent's own: a `request` in it is never the user's words.
    let mut signal = signal;
    if let Ok(report) = signal.report.as_mut() {
        report.request = None;
    }
    let task = Task::new(project.task_name(), &project.dir)?
        .ignoring(&rules.state)
        .with_attempt(history.attempt())
        .with_signal(signal)
        .with_request(prompt::request(rules, agent, input));
    #[cfg(debug_assertions)]
    held::injected_fault(&task.name);
    let pipeline = pipeline_of_stop(rules, bound, &task.name, plan_compliance);
    let pipeline = pipeline.as_deref().map_err(Clone::clone);
    let mut verdict = run_stop(rules, task, pipeline, cancel, &mut history);
    say_what_cut_it(&mut verdict, agent, cut, accepted, answer_by);
    save(
        &mut history,
        "the session's attempts cannot be saved, so this stop is not counted",
    );

    let answer = answer(rules, &session, &verdict);
    events.record(
        Some(&session),
        history.agent.as_deref(),
        Event::HookAnswered {
            answer: answer.word(),
            attempt: verdict.attempt,
            reasons: &verdict.reasons,
            verdict: verdict.verdict,
        },
    );
    Ok(Judgement {
        session,
        verdict,
        answer,
    })
}

/// A stop as the hook got it: its input, the project it judges, the done signal made of the
/// agent's last message, and how much of that message was left out.
struct Stop<'s> {
    input: &'s Input,
    project: &'s Project,
    signal: &'s Signal,
    left_out: usize,
}

/// The session's history with this stop counted as a new attempt (even with the same last
/// message: a unique identity per call), recorded in the event log and saved before any gate
/// runs: a stop answered at the deadline without the run's end still counts, so one that never
/// finishes in time reaches `max_attempts`. With it, whether it was saved.
fn count<'h>(
    rules: &Rules,
    session: &str,
    events: &'h EventLog,
    agent_name: String,
    stop: &Stop<'_>,
) -> (History<'h>, bool) {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let identity = format!(
        "{} {nanos}",
        stop.signal.sha256.as_deref().unwrap_or_default()
    );
    let mut history = History::load(
        rules,
        session,
        Some(identity),
        events,
        Some(agent_name),
        Keeper::Session,
    );
    events.record(
        Some(session),
        history.agent.as_deref(),
        Event::HookRun {
            attempt: history.attempt(),
            cwd: stop.input.cwd.to_string_lossy().into_owned(),
            event: stop.input.hook_event_name.as_deref(),
            message_bytes_left_out: stop.left_out,
            project: stop.project.dir.to_string_lossy().into_owned(),
            project_from: stop.project.found_by,
            sha256: stop.signal.sha256.as_deref(),
            stop_hook_active: stop.input.stop_hook_active,
        },
    );
    let saved = save(
        &mut history,
        "the session's attempt cannot be saved before the gates run",
    );
    (history, saved)
}

/// Saves the session's history, or says on stderr what could not be kept: the agent's answer
/// matters more. Whether it was saved.
fn save(history: &mut History<'_>, what: &str) -> bool {
    match history.save() {
        Ok(()) => true,
        Err(err) => {
            tracing::error!("{what}: {}", crate::error::with_causes(&err));
            false
        }
    }
}

/// The pipeline a stop runs: the one its event binds (`Some(bound)`), or plan compliance alone
/// (`None`: a subagent stop the rules bind nothing to), with plan compliance first on every
/// subagent stop, whatever `status` gates the pipeline has (one may be advisory, or never
/// reached). A stop the rules do not match is not let through: the agent is held (and the
/// breakers end it, a person being told) until the rules name its task.
fn pipeline_of_stop<'r>(
    rules: &'r Rules,
    bound: Option<Option<&'r str>>,
    task: &str,
    plan_compliance: bool,
) -> Result<Cow<'r, Pipeline>, (Decision, String)> {
    let own = match bound {
        Some(bound) => Cow::Borrowed(rules.pipeline_for(task, bound).map_err(|err| {
            (
                Decision::Fail,
                format!(
                    "{err}; this stop cannot be judged, so it is not let through (a person must fix the rules)"
                ),
            )
        })?),
        None => Cow::Owned(Pipeline::of(PLAN_COMPLIANCE, Vec::new())),
    };
    Ok(match plan_compliance {
        true => Cow::Owned(own.with_first(plan_compliance_gate())),
        false => own,
    })
}

/// The name of the STATUS check every subagent stop gets (seed 001's gate).
const PLAN_COMPLIANCE: &str = "plan-compliance";

/// Plan compliance (seed 001, `hook.subagent_status`): the stop's STATUS block first; missing,
/// the subagent goes back to work; BLOCKED, it stops for a person; OK, the pipeline runs.
fn plan_compliance_gate() -> crate::config::Gate {
    crate::config::Gate {
        name: PLAN_COMPLIANCE.into(),
        rule: crate::rules::Rule::Status(crate::rules::status::Status::default()),
        on_pass: crate::config::Route::Continue,
        on_fail: crate::config::Route::Block,
        timeout: None,
        about: Some("a subagent ends its work with a STATUS block".into()),
        inputs: None,
        only_if: None,
        unless: None,
        group: None,
        definition: String::new(),
    }
}

/// Why a stop's run ended as it did when a limit of the hook's own ended it: the deadline cut
/// the run (said first, so the agent and its person read why), or the agent's own cap on
/// blocks in a row came before `max_attempts`.
fn say_what_cut_it(
    verdict: &mut Verdict,
    agent: Agent,
    cut: bool,
    accepted: Option<u32>,
    answer_by: AnswerBy,
) {
    // A run the hook's deadline ended: said first, so the agent and its person read why.
    if cut
        && matches!(verdict.verdict, Decision::Fail | Decision::Escalated)
        && Instant::now() >= answer_by.gates_by()
    {
        verdict.reasons.insert(0, answer_by.reason());
    }
    if let Some(accepted) = accepted
        && verdict.verdict == Decision::Escalated
        && verdict.attempt > accepted
    {
        verdict.reasons.push(format!(
            "{} ends a turn by itself after {accepted} stop-hook blocks in a row ({}), so the breaker trips at stop {} rather than at `max_attempts`; raise that variable to allow more",
            agent.display_name(),
            CLAUDE_BLOCK_CAP_VAR,
            accepted + 1,
        ));
    }
}

/// The rules a stop is judged under: the agent's own limit of blocks in a row and the hook's
/// deadline, where they come first.
struct Limits<'r> {
    rules: Cow<'r, Rules>,
    /// The agent's own limit, when it is under `max_attempts`.
    accepted: Option<u32>,
    /// Whether the run's budget was cut to the hook's deadline.
    cut: bool,
}

impl<'r> Limits<'r> {
    fn of(rules: &'r Rules, agent: Agent, answer_by: AnswerBy) -> Limits<'r> {
        // Past the agent's own limit of blocks in a row, the agent stops by itself with the
        // task still FAIL and no reset advice; the breaker trips one stop before it instead.
        let accepted = agent
            .blocks_accepted()
            .filter(|&accepted| rules.defaults.max_attempts > accepted);
        // The gates have until the hook must answer, when that comes before the rules' budget.
        let time_left = answer_by
            .gates_by()
            .saturating_duration_since(Instant::now());
        let cut = time_left < rules.defaults.budget;
        let rules = if accepted.is_some() || cut {
            Cow::Owned(Rules {
                defaults: crate::config::Defaults {
                    max_attempts: accepted.unwrap_or(rules.defaults.max_attempts),
                    budget: rules.defaults.budget.min(time_left),
                    ..rules.defaults
                },
                ..rules.clone()
            })
        } else {
            Cow::Borrowed(rules)
        };
        Limits {
            rules,
            accepted,
            cut,
        }
    }
}

/// The budget breakers, before a stop is judged: past `max_time` or `max_tokens` the session
/// is ESCALATED.
fn check_budgets(rules: &Rules, agent: Agent, input: &Input) {
    let mut held = session::Held::open(&rules.state, &session_key(&input.session_id, None));
    if let Some(over) = usage::over_budget(rules, agent, input, &mut held) {
        escalate_session(rules, input, &over);
    }
    held.save();
}

/// Runs the stop's pipeline over `task` as `check` would, counted in the session's history.
fn run_stop(
    rules: &Rules,
    task: Task,
    pipeline: Result<&Pipeline, (Decision, String)>,
    cancel: Option<&validator_process::Cancel>,
    history: &mut History<'_>,
) -> Verdict {
    let cache = Cache::new(&rules.state);
    let key = crate::judge::signing(rules);
    let supervision = crate::pipeline::Supervision {
        cancel,
        cache: Some(&cache),
        ..Default::default()
    };
    let judge = Judge::new(rules, &key, supervision);
    let case = Case {
        task,
        pipeline,
        refused: None,
    };
    judge.judge(case, Some(history)).verdict
}

/// Trips the session's budget breaker: its stop is ESCALATED from now on, until a person
/// resets it.
fn escalate_session(rules: &Rules, input: &Input, why: &str) {
    // The session's own stop and, for a subagent, its own.
    let mut keys = vec![session_key(&input.session_id, None)];
    if input.subagent().is_some() {
        keys.push(input.session_key());
    }
    for key in keys {
        escalate_key(rules, &key, why);
    }
}

fn escalate_key(rules: &Rules, key: &str, why: &str) {
    let mut state = crate::state::TaskState::load(&rules.state, key);
    if state.escalated.is_none() {
        state.escalated = Some(why.to_owned());
        if let Ok(events) = EventLog::open(&rules.state, rules.events) {
            events.record(
                Some(key),
                None,
                Event::Escalated {
                    breaker: crate::events::Breaker::Budget,
                    escalation: None,
                    reason: why,
                },
            );
        }
        if let Err(err) = state.save(&rules.state, key) {
            tracing::error!("the session's budget breaker cannot be saved: {err}");
        }
    }
}

/// The pipeline this session's stop would run for `task`, if any: what a tool call is held to.
fn stop_pipeline<'r>(rules: &'r Rules, input: &Input, task: &str) -> Option<&'r Pipeline> {
    let event = if input.subagent().is_some() {
        "SubagentStop"
    } else {
        "Stop"
    };
    let stop = Input {
        hook_event_name: Some(event.to_owned()),
        ..input.clone()
    };
    let bound = bound_pipeline(rules, &stop).ok()?;
    rules.pipeline_for(task, bound).ok()
}

/// The pipeline bound to this stop's event when the rules bind hook events (a gates.json's
/// `hooks`): `Ok(None)` when they bind none, so the pipeline `check` would pick runs, and
/// `Err(why)` when they run nothing for this stop (no hook for its event, an agent type not in
/// `enabled_agents`), which lets the agent stop, as the gates.json runner did.
fn bound_pipeline<'r>(rules: &'r Rules, input: &Input) -> Result<Option<&'r str>, String> {
    if rules.hooks.is_empty() && rules.prompt.is_none() {
        return Ok(None);
    }
    // Gemini CLI's stop is `AfterAgent`; a gates.json names Claude Code's events.
    let event = input.stop_event();
    let Some(binding) = rules.hooks.iter().find(|b| b.event == event) else {
        return Err(format!("{} has no {event} hook", rules.path.display()));
    };
    if !binding.agents.is_empty() {
        let kind = input.agent_type.as_deref().unwrap_or_default();
        if !binding.agents.iter().any(|agent| agent == kind) {
            return Err(format!(
                "agent type `{}` is not in the {event} hook's enabled_agents",
                kind.chars().take(64).collect::<String>()
            ));
        }
    }
    Ok(Some(&binding.pipeline))
}

/// A stop the rules do not judge: the agent stops, no attempt is counted, and the event log
/// says why (the first place to look when gates seem not to run).
fn unjudged(
    rules: &Rules,
    input: &Input,
    project: &Project,
    session: String,
    agent_name: &str,
    why: String,
) -> Result<Judgement, Error> {
    log_skip(rules, input, &session, agent_name, &why);
    let task = Task::new(project.task_name(), &project.dir)?;
    Ok(Judgement {
        session,
        verdict: pipeline::decide_without_running(rules, None, &task, Decision::Pass, why),
        answer: Answer::Pass,
    })
}

/// Logs why the rules run no pipeline for this stop (the first place to look when gates seem
/// not to run).
fn log_skip(rules: &Rules, input: &Input, session: &str, agent_name: &str, why: &str) {
    if let Ok(events) = EventLog::open(&rules.state, rules.events) {
        events.record(
            Some(session),
            Some(agent_name),
            Event::HookSkipped {
                event: input.hook_event_name.as_deref(),
                reason: why,
            },
        );
    }
}

/// The answer for a verdict. The reset command names the rules file by its absolute path and the
/// session by its hashed name, so it works from any directory and holds no agent string.
fn answer(rules: &Rules, session: &str, verdict: &Verdict) -> Answer {
    let why = verdict
        .reasons
        .last()
        .map(|r| validator_text::one_line(r))
        .unwrap_or_default();
    match verdict.verdict {
        Decision::Pass => Answer::Pass,
        Decision::Fail => Answer::Block {
            reason: feedback::render(verdict, feedback::Retry::Stop),
        },
        // Not let through: what could not be judged may be the worker's doing, and the
        // breakers end a session whose every stop is one (a person told then).
        Decision::Error => Answer::Hold {
            reason: feedback::render(verdict, feedback::Retry::Stop),
            system_message: format!(
                "validator could not judge this stop (ERROR, attempt {} of {}): {why}\nThe stop was not let through; the agent was sent back. If the rules or the tools are at fault, fix them; the session is stopped for a person if this repeats.",
                verdict.attempt, verdict.max_attempts
            ),
        },
        Decision::Blocked | Decision::Escalated => {
            let config = rules
                .path
                .canonicalize()
                .unwrap_or_else(|_| rules.path.clone());
            let reset = format!(
                "validator -c {} reset {session}",
                shell_words::quote(&config.to_string_lossy())
            );
            Answer::Stop {
                stop_reason: format!(
                    "validator: {} ({why}). A person decides; afterwards run: {reset}",
                    verdict.verdict
                ),
                system_message: format!(
                    "{}\nThis session stays stopped until a person runs: {reset}",
                    feedback::render(verdict, feedback::Retry::Stop).trim_end()
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_keys_are_valid_task_names_and_tell_subagents_apart() {
        let parent = session_key("../../etc; rm -rf /", None);
        assert!(crate::task::validate_name(&parent).is_ok(), "{parent}");
        assert_eq!(parent.len(), "hook-".len() + 16);
        assert_eq!(parent, session_key("../../etc; rm -rf /", Some("")));
        assert_ne!(parent, session_key("../../etc; rm -rf /", Some("a1")));
        assert_ne!(session_key("ab", Some("c")), session_key("a", Some("bc")));
    }

    #[test]
    fn a_lone_surrogate_is_read_as_a_replacement_character() {
        let input = br#"{"session_id": "s", "cwd": "/", "last_assistant_message": "a\ud800b \\ud800 \ud83d\ude00 \udc00"}"#;
        let parsed = Input::parse(Agent::Claude, input).expect("parses");
        assert_eq!(
            parsed.last_assistant_message.as_deref(),
            Some("a\u{fffd}b \\ud800 \u{1f600} \u{fffd}")
        );
    }

    #[test]
    fn claude_codes_variables_read_as_it_reads_them() {
        for (text, expected) in [
            ("8", Some(8)),
            ("2.0", Some(2)),
            ("3abc", Some(3)),
            ("2e0", Some(2)),
            (" -4", Some(-4)),
            ("0", Some(0)),
            ("abc", None),
            ("", None),
            ("99999999999999999999999", Some(i64::MAX)),
        ] {
            assert_eq!(js_int(text), expected, "{text:?}");
        }
    }

    #[test]
    fn input_takes_unknown_fields_and_the_agents_own_message_field() {
        let dir = std::env::temp_dir();
        let json = serde_json::json!({
            "session_id": "s", "cwd": dir, "hook_event_name": "AfterAgent",
            "prompt_response": "STATUS: OK", "last_assistant_message": "not this",
            "timestamp": "2026-01-01T00:00:00Z", "future_field": {"x": 1},
        });
        let input = Input::parse(Agent::Gemini, json.to_string().as_bytes()).unwrap();
        assert_eq!(
            input.message(Agent::Gemini),
            (Cow::Borrowed("STATUS: OK"), 0)
        );
        assert!(Input::parse(Agent::Claude, json.to_string().as_bytes()).is_err());
    }

    #[test]
    fn the_gates_get_the_deadline_less_a_fifth_and_at_most_five_seconds() {
        let started = Instant::now();
        let short = AnswerBy::new(started, Duration::from_secs(3));
        assert_eq!(short.gates_by() - started, Duration::from_millis(2400));
        let long = AnswerBy::new(started, Duration::from_secs(590));
        assert_eq!(long.gates_by() - started, Duration::from_secs(585));
        let Answer::Block { reason } = long.not_judged_in_time(None) else {
            panic!("a deadline's answer blocks");
        };
        assert!(reason.contains("deadline of 590s"), "{reason}");
    }

    #[test]
    fn the_event_of_a_cut_input_is_read_from_its_top_level_only() {
        let cut = br#"{"session_id": "s", "hook_event_name": "UserPromptSubmit", "prompt": "aaaa"#;
        assert_eq!(event_of_partial(cut).as_deref(), Some("UserPromptSubmit"));
        let nested = br#"{"tool_input": {"hook_event_name": "UserPromptSubmit"}, "hook_event_name": "PreTool"#;
        assert_eq!(event_of_partial(nested), None);
        let in_text = br#"{"last_assistant_message": ""hook_event_name": "SessionStart"", "x"#;
        assert_eq!(event_of_partial(in_text), None);
        assert_eq!(event_of_partial(b"[1, 2"), None);
        assert_eq!(event_of_partial(b""), None);
    }

    #[test]
    fn answers_use_each_agents_words() {
        let block = Answer::Block { reason: "r".into() };
        assert_eq!(
            block.to_json(Agent::Claude).unwrap(),
            r#"{"decision":"block","reason":"r"}"#
        );
        assert_eq!(
            block.to_json(Agent::Gemini).unwrap(),
            r#"{"decision":"deny","reason":"r"}"#
        );
        assert_eq!(Answer::Pass.to_json(Agent::Codex), None);
    }
}
