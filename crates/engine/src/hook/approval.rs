//! A tool call a rule holds for a person (`decision: ask`), where the agent cannot ask its
//! person (Codex, Gemini CLI, OpenCode; Claude Code under `hook.approvals.claude: wait`): the
//! call is recorded as a request ([`crate::approvals`]), a webhook is told, and the hook waits
//! under its own deadline for `validator approve ID` or `validator deny ID`. An approval lets
//! that one call run as an allowed call does (confined, where shell calls are); a denial, or no
//! answer in time, refuses it, saying why.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Agent, AnswerBy, Input};
use crate::approvals::{Choice, Draft, Request, Store};
use crate::config::Rules;
use crate::events::{Event, EventLog};
use crate::tool_policy::{Action, Permission};

/// How often the request is looked at for an answer: a person's answer is taken within this,
/// and the wait costs a stat and an open five times a second.
const POLL: Duration = Duration::from_millis(200);
/// Longest the webhook may take; it is told from a thread of its own, so the wait does not
/// wait on it.
const WEBHOOK_WITHIN: Duration = Duration::from_secs(5);
/// The most of a command a webhook's `text` shows (the whole is in its `command`).
const TEXT_COMMAND_CHARS: usize = 400;

/// Whether an ask is held for `validator approve` rather than asked of the agent's person.
pub(super) fn waits(rules: &Rules, agent: Agent) -> bool {
    agent != Agent::Claude || rules.hook.approvals.claude_waits
}

/// What one wait is about.
pub(super) struct Asked<'a> {
    pub rules: &'a Rules,
    pub agent: Agent,
    pub input: &'a Input,
    /// The tool, and its input exactly as the agent sent it.
    pub tool: &'a str,
    pub tool_input: &'a Value,
    pub action: &'a Action,
    /// Why the rules ask a person.
    pub why: &'a str,
    pub answer_by: AnswerBy,
}

/// Holds the call until a person answers or the hook must answer: `Allow` for an approval,
/// `Deny` (saying why) for a denial, for no answer in time, or when no request can be kept.
pub(super) fn hold(asked: &Asked<'_>) -> Permission {
    let rules = asked.rules;
    let key = match crate::verdict::sign::configured_key(rules.key_named()) {
        Ok(key) => key,
        Err(err) => {
            tracing::error!("{}", crate::error::with_causes(&err));
            return Permission::Deny(format!(
                "this call needs a person's approval ({}), and validator cannot read its signing key, so no approval could be trusted; a person must run it",
                asked.why
            ));
        }
    };
    let store = Store::new(&rules.state);
    let command = match asked.action {
        Action::Shell(line) => line.clone(),
        _ => asked.tool_input.to_string(),
    };
    let session = asked.input.session_key();
    let agent = asked.input.agent_name(asked.agent);
    let draft = Draft {
        session: &session,
        agent: &agent,
        tool: asked.tool,
        input: asked.tool_input,
        command: &command,
        reason: asked.why,
        open_for: rules.hook.approvals.timeout,
    };
    let events = EventLog::open_or_discard(&rules.state, rules.events);
    let request = match store.same(&draft, key.as_ref()) {
        Some(request) => request,
        None => match store.create(&draft, key.as_ref()) {
            Ok(request) => {
                events.record(
                    Some(&session),
                    Some(&agent),
                    Event::ApprovalPending {
                        agent: &agent,
                        command: &command,
                        deadline_ms: request.deadline_ms,
                        id: &request.id,
                        reason: asked.why,
                        tool: asked.tool,
                    },
                );
                tell_webhook(rules, &request);
                request
            }
            Err(err) => {
                tracing::error!("{err}");
                return Permission::Deny(format!(
                    "this call needs a person's approval ({}), and validator cannot record the request; a person must run it",
                    asked.why
                ));
            }
        },
    };
    let decision = wait(&store, &request, key.as_ref(), asked);
    let (word, reason) = match &decision {
        Some((Choice::Approve, _)) => ("approve", None),
        Some((Choice::Deny, reason)) => ("deny", reason.as_deref()),
        None => ("unanswered", None),
    };
    events.record(
        Some(&session),
        Some(&agent),
        Event::ApprovalAnswered {
            decision: word,
            id: &request.id,
            reason,
        },
    );
    match decision {
        Some((Choice::Approve, _)) => Permission::Allow,
        Some((Choice::Deny, reason)) => Permission::Deny(match reason {
            Some(reason) if !reason.is_empty() => {
                format!("a person refused this call: {reason}")
            }
            _ => format!("a person refused this call ({})", asked.why),
        }),
        None => Permission::Deny(no_one_approved(asked, &request)),
    }
}

/// The person's answer to `request`, taken (the request and its answer removed), or `None`
/// when none came before the hook must answer (or the request went: expired, or the same call
/// elsewhere took its answer).
fn wait(
    store: &Store,
    request: &Request,
    key: Option<&crate::verdict::sign::SigningKey>,
    asked: &Asked<'_>,
) -> Option<(Choice, Option<String>)> {
    let until = asked
        .answer_by
        .gates_by()
        .min(Instant::now() + request.left());
    let mut warned = false;
    loop {
        match store.answer_of(request, key) {
            Ok(Some(answer)) => {
                store.remove(&request.id);
                return Some((answer.decision, answer.reason));
            }
            Ok(None) => {}
            // Not the person's (a link, a forgery): it answers nothing; the person may still.
            Err(err) if !warned => {
                tracing::warn!("{err}; still waiting for a person's answer");
                warned = true;
            }
            Err(_) => {}
        }
        if !store.is_open(&request.id) {
            return None;
        }
        let now = Instant::now();
        if now >= until {
            return None;
        }
        std::thread::sleep(POLL.min(until - now));
    }
}

/// Why a call no one answered in time is refused, with what the agent can do.
fn no_one_approved(asked: &Asked<'_>, request: &Request) -> String {
    let waited = crate::duration::format(Duration::from_secs(request.age().as_secs().max(1)));
    if request.expired() {
        return format!(
            "no one approved this call within {waited} ({}); the request expired: ask again or a person runs it",
            asked.why
        );
    }
    format!(
        "no one approved this call within {waited} ({}); a person was asked (request {}) and may still answer for {}: ask again (the same call takes their answer) or a person runs it",
        asked.why,
        request.id,
        crate::duration::format(Duration::from_secs(request.left().as_secs().max(1)))
    )
}

/// Tells the rules' webhook of a new request, from a thread of its own; a failure is logged.
fn tell_webhook(rules: &Rules, request: &Request) {
    let Some(url) = rules.hook.approvals.webhook.clone() else {
        return;
    };
    let body = webhook_body(rules, request);
    let spawned = std::thread::Builder::new()
        .name("approval-webhook".into())
        .spawn(move || {
            if let Err(err) = crate::approvals::webhook::notify(&url, &body, WEBHOOK_WITHIN) {
                tracing::warn!("the approval webhook was not told: {err}");
            }
        });
    if let Err(err) = spawned {
        tracing::warn!("the approval webhook was not told: {err}");
    }
}

/// The webhook's JSON: a Slack-style `text` for a person, and the request's fields for a tool.
/// Text for Slack's markup that makes nothing of its own: its control characters escaped.
fn slack_plain(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// `text` as one code span that no character of it can end.
fn slack_code(text: &str) -> String {
    format!("`{}`", slack_plain(text).replace('`', "ˋ"))
}

fn webhook_body(rules: &Rules, request: &Request) -> Value {
    let rules_file = rules
        .path
        .canonicalize()
        .unwrap_or_else(|_| rules.path.clone());
    let config = shell_words::quote(&rules_file.to_string_lossy()).into_owned();
    let approve = format!("validator -c {config} approve {}", request.id);
    let deny = format!("validator -c {config} deny {} --reason 'why'", request.id);
    let command = validator_text::one_line(&request.command);
    let chars = command.chars().count();
    // The command is the worker's text: it must not close the code span or make a link of
    // its own in the person's chat, and what is clipped is said.
    let shown = if chars > TEXT_COMMAND_CHARS {
        let head: String = command.chars().take(TEXT_COMMAND_CHARS / 2).collect();
        let tail: String = command
            .chars()
            .skip(chars - TEXT_COMMAND_CHARS / 2)
            .collect();
        format!(
            "{} … ({} characters not shown: `validator approvals` has all) … {}",
            slack_code(&head),
            chars - TEXT_COMMAND_CHARS,
            slack_code(&tail)
        )
    } else {
        slack_code(&command)
    };
    let text = format!(
        "validator: {} asks a person to approve {shown} ({}). Approve: `{approve}`; deny: `{deny}`. Open for {}.",
        slack_plain(&validator_text::one_line(&request.agent)),
        slack_plain(&validator_text::one_line(&request.reason)),
        crate::duration::format(request.left()),
    );
    json!({
        "text": text,
        "id": request.id,
        "command": request.command,
        "reason": request.reason,
        "agent": request.agent,
        "session": request.session,
        "tool": request.tool,
        "approve": approve,
        "deny": deny,
        "deadline_ms": request.deadline_ms,
    })
}
