//! What an agent sends a hook: the event (`Phase`), the JSON read leniently (a lone surrogate
//! a model's text can hold, a number JavaScript wrote), the fields the adapters use (`Input`).

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{Agent, MAX_INPUT, session_key, transcript};
use crate::error::Error;

/// When a hook is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The agent is about to stop: judge the work.
    Stop,
    /// A tool is about to run: judge the call.
    BeforeTool,
    /// A tool ran: look at what it did.
    AfterTool,
    /// The session starts: brief the agent.
    SessionStart,
    /// The person submitted a prompt: keep it, run its gates.
    Prompt,
}

impl Phase {
    /// Whether the answer is context or a verdict on a tool call, which the hook's deadline
    /// leaves to the agent; only a stop is refused when it was not judged in time.
    pub fn before_or_beside_the_stop(self) -> bool {
        self != Phase::Stop
    }
}

/// The JSON with every `\uD800`-`\uDFFF` escape that is not half of a pair replaced by
/// `\uFFFD`. JavaScript's `JSON.stringify` writes a lone surrogate a model's text can hold;
/// serde refuses it, and a refused input would let the agent stop unjudged.
pub(super) fn lone_surrogates_replaced(bytes: &[u8]) -> Cow<'_, [u8]> {
    let hex = |at: usize| -> Option<u16> {
        let digits = std::str::from_utf8(bytes.get(at..at + 4)?).ok()?;
        u16::from_str_radix(digits, 16).ok()
    };
    let escape_at = |at: usize| -> Option<u16> {
        (bytes.get(at) == Some(&b'\\') && bytes.get(at + 1) == Some(&b'u'))
            .then(|| hex(at + 2))
            .flatten()
    };
    let mut out: Option<Vec<u8>> = None;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            if let Some(out) = out.as_mut() {
                out.push(bytes[i]);
            }
            i += 1;
            continue;
        }
        let width = match escape_at(i) {
            Some(0xD800..=0xDBFF)
                if escape_at(i + 6).is_some_and(|low| (0xDC00..=0xDFFF).contains(&low)) =>
            {
                12
            }
            Some(0xD800..=0xDFFF) => {
                out.get_or_insert_with(|| bytes[..i].to_vec())
                    .extend_from_slice(b"\\ufffd");
                i += 6;
                continue;
            }
            Some(_) => 6,
            None => 2,
        };
        let end = (i + width).min(bytes.len());
        if let Some(out) = out.as_mut() {
            out.extend_from_slice(&bytes[i..end]);
        }
        i = end;
    }
    match out {
        Some(out) => Cow::Owned(out),
        None => Cow::Borrowed(bytes),
    }
}

/// An integer as Claude Code reads its variables: a number (`2e0`, `2.0`) truncated, else the
/// leading digits after an optional sign (`3abc` is 3); `None` when there are none.
pub(super) fn js_int(text: &str) -> Option<i64> {
    let text = text.trim();
    if let Ok(number) = text.parse::<f64>()
        && number.is_finite()
    {
        return Some(number.trunc().clamp(i64::MIN as f64, i64::MAX as f64) as i64);
    }
    let (sign, digits) = match text.strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, text.strip_prefix('+').unwrap_or(text)),
    };
    let digits: String = digits
        .chars()
        .take_while(char::is_ascii_digit)
        .take(18)
        .collect();
    digits.parse::<i64>().ok().map(|n| sign * n)
}

/// The event a hook input names at its top level, read from as much of it as arrived: an
/// input too long to read whole, or cut by the deadline, still says what it was about when the
/// agent wrote the event first (as all of them do). Only the top level is read, so an event
/// name in a tool's input or a message is never taken for it.
pub fn event_of_partial(bytes: &[u8]) -> Option<String> {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
    struct TopLevel<'a>(&'a mut Option<String>);
    impl<'de> Visitor<'de> for TopLevel<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a hook's JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                if key == "hook_event_name" {
                    *self.0 = map.next_value::<Option<String>>()?;
                    return Ok(());
                }
                map.next_value::<IgnoredAny>()?;
            }
            Ok(())
        }
    }
    let mut event = None;
    let mut reader = serde_json::Deserializer::from_slice(bytes);
    // Cut short, the input ends in an error once the event has been read, if it came first.
    let _ = reader.deserialize_map(TopLevel(&mut event));
    event
}

/// The session of a hook input that names none: one made by hand to try the gate.
pub const MANUAL_SESSION: &str = "manual";

fn manual_session() -> String {
    MANUAL_SESSION.to_owned()
}

/// The fields of a stop hook's input that the adapter uses; agents add others, which are ignored.
#[derive(Debug, Clone, Deserialize)]
pub struct Input {
    /// Absent in a hand-made input (seed 001's `{"output": …}`): such calls share the session
    /// [`MANUAL_SESSION`].
    #[serde(default = "manual_session")]
    pub session_id: String,
    /// Where the agent is; absent in a hand-made input. Only logged: never what is judged.
    #[serde(default)]
    pub cwd: PathBuf,
    #[serde(default)]
    pub hook_event_name: Option<String>,
    #[serde(default)]
    pub stop_hook_active: Option<bool>,
    #[serde(default)]
    pub transcript_path: Option<String>,
    /// Claude Code and Codex: the agent's final message.
    #[serde(default)]
    pub last_assistant_message: Option<String>,
    /// A gates.json hook runner's input (seed 001's test): the agent's final message.
    #[serde(default)]
    pub output: Option<String>,
    /// A subagent's id (`SubagentStop`); its attempts are counted apart from its parent's.
    #[serde(default)]
    pub agent_id: Option<String>,
    #[serde(default)]
    pub agent_type: Option<String>,
    /// Gemini CLI: the user's prompt and the agent's answer to it.
    #[serde(default)]
    pub prompt: Option<String>,
    #[serde(default)]
    pub prompt_response: Option<String>,
    /// A tool event's tool (`Write`, `Bash`, `apply_patch`, `write_file`, …) and its input.
    #[serde(default)]
    pub tool_name: Option<String>,
    #[serde(default)]
    pub tool_input: Option<serde_json::Value>,
    /// After a tool ran: what it gave back, and its error when it failed.
    #[serde(default)]
    pub tool_response: Option<serde_json::Value>,
    #[serde(default)]
    pub error: Option<serde_json::Value>,
    /// OpenCode's plugin: the session's tokens so far, from its message events.
    #[serde(default)]
    pub tokens: Option<u64>,
}

impl Input {
    /// Parses what `agent` sent on stdin (at most [`MAX_INPUT`] bytes were meant to be read;
    /// pass one more so an oversized input is recognised).
    pub fn parse(agent: Agent, bytes: &[u8]) -> Result<Input, Error> {
        let refuse = |reason: String| Error::HookInput {
            agent: agent.name(),
            reason,
        };
        if bytes.len() > MAX_INPUT {
            return Err(refuse(format!(
                "the input is over {} MiB",
                MAX_INPUT / 1024 / 1024
            )));
        }
        let bytes = lone_surrogates_replaced(bytes);
        let mut input: Input = serde_json::from_slice(&bytes)
            .map_err(|err| refuse(format!("not the JSON object a stop hook receives: {err}")))?;
        if input.cwd.as_os_str().is_empty() {
            // A hand-made input: the agent starts its hooks where it works.
            input.cwd = std::env::current_dir().unwrap_or_default();
        }
        if input.session_id.trim().is_empty() {
            return Err(refuse("`session_id` is empty".into()));
        }
        if let Some(event) = &input.hook_event_name {
            if !agent.events().contains(&event.as_str()) {
                return Err(refuse(format!(
                    "event `{}` is not one this adapter answers; wire it to {} only",
                    event.chars().take(64).collect::<String>(),
                    agent.events().join(" and ")
                )));
            }
        }
        Ok(input)
    }

    /// The agent's last message: the done signal's body (empty when the agent sent none, or
    /// when it cannot be known: see [`Input::signal`]). For Gemini CLI it is the last model
    /// turn of its transcript (its `prompt_response` joins the answers before a deny with the
    /// retry), else `prompt_response`. A message longer than a done signal may be is cut to
    /// its end, where an agent's STATUS block is; the second value says how many bytes were
    /// left out.
    pub fn message(&self, agent: Agent) -> (Cow<'_, str>, usize) {
        self.final_message(agent).unwrap_or((Cow::Borrowed(""), 0))
    }

    /// The done signal the stop judges: the agent's last message parsed, and how many bytes of
    /// it were left out. When that message cannot be known (Gemini CLI's transcript cannot be
    /// read, or holds no model turn) the signal's report is why, which the `status` gate fails
    /// with: the hook input's `prompt_response` may carry a STATUS a deny already answered.
    pub fn signal(&self, agent: Agent) -> (crate::done::Signal, usize) {
        match self.final_message(agent) {
            Ok((message, left_out)) => (
                crate::done::Signal::from_bytes(message.as_bytes(), None),
                left_out,
            ),
            Err(why) => {
                let mut signal = crate::done::Signal::from_bytes(b"", None);
                signal.report = Err(why);
                (signal, 0)
            }
        }
    }

    fn final_message(&self, agent: Agent) -> Result<(Cow<'_, str>, usize), String> {
        let message: Cow<'_, str> = match (agent, self.transcript_path.as_deref()) {
            (Agent::Claude | Agent::Codex | Agent::Opencode, _) => Cow::Borrowed(
                self.last_assistant_message
                    .as_deref()
                    .or(self.output.as_deref())
                    .unwrap_or_default(),
            ),
            // No transcript named (the CLI sends one with every AfterAgent): the input's own
            // answer is all there is.
            (Agent::Gemini, None | Some("")) => {
                Cow::Borrowed(self.prompt_response.as_deref().unwrap_or_default())
            }
            (Agent::Gemini, Some(path)) => {
                Cow::Owned(transcript::last_model_turn(Path::new(path)).map_err(|why| {
                    format!(
                        "the agent's last message cannot be known from its transcript {}: {why}; \
                         the hook input's prompt_response is not judged instead, as it may hold \
                         a STATUS from before a deny",
                        validator_text::name(path)
                    )
                })?)
            }
        };
        Ok(match message {
            Cow::Borrowed(text) => {
                let (tail, start) = validator_text::last_bytes(text, crate::done::MAX_BODY);
                (Cow::Borrowed(tail), start)
            }
            Cow::Owned(text) => {
                let (tail, start) = validator_text::last_bytes(&text, crate::done::MAX_BODY);
                (Cow::Owned(tail.to_owned()), start)
            }
        })
    }

    /// Whether this is a subagent stopping (Claude Code's and Codex's `SubagentStop`).
    pub fn is_subagent_stop(&self) -> bool {
        self.stop_event() == "SubagentStop"
    }

    /// The stop event this input is, as a gates.json names it: the one it names (Gemini CLI's
    /// `AfterAgent` is a `Stop`), else, for a hand-made input, `SubagentStop` when it names a
    /// subagent or carries a hook runner's `output` (seed 001 tests its SubagentStop gate with
    /// `{"output": "STATUS: …"}`, so that is what such an input tries), else `Stop`.
    pub fn stop_event(&self) -> &str {
        match self.hook_event_name.as_deref() {
            Some("AfterAgent") => "Stop",
            Some(event) => event,
            None if self.subagent().is_some() || self.output.is_some() => "SubagentStop",
            None => "Stop",
        }
    }

    /// The subagent's id, if this is a subagent stopping.
    pub(super) fn subagent(&self) -> Option<&str> {
        self.agent_id.as_deref().filter(|id| !id.is_empty())
    }

    /// The state name attempts are counted under; see [`session_key`].
    pub fn session_key(&self) -> String {
        session_key(&self.session_id, self.subagent())
    }

    /// Who stopped, as the event log names it: the agent, or `agent/type` for a subagent.
    pub fn agent_name(&self, agent: Agent) -> String {
        match (&self.agent_type, self.subagent()) {
            (Some(kind), Some(_)) => format!("{}/{}", agent.name(), kind),
            _ => agent.name().to_owned(),
        }
    }
}
