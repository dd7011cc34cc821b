//! The rules file as serde reads it: every key the format knows, nothing else
//! (`deny_unknown_fields` everywhere), each value checked where its position is still known.
//!
//! The same types derive the JSON Schema that `validator rules schema` prints (see
//! `config::json_schema`), so their doc comments are what an editor shows a user: they describe the
//! keys for the person writing the file.

use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

/// A validator rules file (`validator.yaml`): where the staging protocol's files live, the
/// defaults, and the pipelines of gates. Relative paths are relative to this file's directory.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "validator rules file")]
pub struct RawRules {
    /// The format's version; write `1`.
    #[schemars(extend("const" = 1))]
    pub version: u32,
    /// The directory `validator watch` watches for `<task>/` directories and `<task>.done`
    /// signals (default: `staging`).
    pub staging: Option<PathBuf>,
    /// Where verdicts are written (default: the staging directory). Point it outside staging so
    /// a worker cannot forge its verdict.
    pub verdicts: Option<PathBuf>,
    /// Attempts, circuit breakers, events.jsonl, baselines and the result cache (default:
    /// `.validator`). Keep it where the worker cannot write.
    pub state: Option<PathBuf>,
    /// A directory of `<task>.yaml` handoff contracts written by whoever hands out the work
    /// (never inside staging).
    pub contracts: Option<PathBuf>,
    /// Timeouts, budget and circuit breakers for every pipeline.
    #[serde(default)]
    pub defaults: RawDefaults,
    /// A key file (its bytes, whitespace trimmed): every verdict is signed with HMAC-SHA256.
    /// `$VALIDATOR_KEY_FILE` wins over it.
    pub signing_key_file: Option<PathBuf>,
    /// How much of the event log (`<state>/events.jsonl`) is kept.
    #[serde(default)]
    pub events: RawEvents,
    /// What agents' tool calls may do, judged before each runs (`validator hook` on the
    /// agents' pre-tool events). File writes are held to the same `file-scope` gates and
    /// contract as the stop; this section adds commands.
    pub tools: Option<super::tools::RawTools>,
    /// What `validator hook` does beside judging stops and tool calls.
    #[serde(default)]
    pub hook: RawHook,
    /// Speculative runs (`validator watch`): once a task's files have been quiet for `quiet`,
    /// its `lint` and `test` gates run in the background at the lowest priority, and at done
    /// their outcomes stand if the files are exactly as they saw them (default: on, `quiet:
    /// 1s`; `false` turns them off).
    pub speculate: Option<RawSpeculate>,
    /// The pipelines; a task runs the first one whose `tasks` globs match its name.
    #[schemars(length(min = 1))]
    pub pipelines: Vec<RawPipeline>,
}

/// Timeouts, budget and circuit breakers for every pipeline.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawDefaults {
    /// Longest a gate may run unless it sets its own `timeout` (default: 10m).
    #[serde(default, deserialize_with = "crate::duration::deserialize")]
    #[schemars(schema_with = "crate::duration::schema")]
    pub timeout: Option<Duration>,
    /// Circuit breaker (`watch`, `hook`): attempt `max_attempts + 1` is ESCALATED to a person
    /// instead of run (default: 3).
    pub max_attempts: Option<u32>,
    /// Circuit breaker (`watch`, `hook`): the same failure this many times in a row is
    /// ESCALATED (default: 3).
    pub strikes: Option<u32>,
    /// Longest a whole run may take; past it the run ends as FAIL (default: 30m).
    #[serde(default, deserialize_with = "crate::duration::deserialize")]
    #[schemars(schema_with = "crate::duration::schema")]
    pub budget: Option<Duration>,
    /// Budget breaker (`hook`): past this many tokens in an agent session, as the agent's own
    /// usage records count them (its subagents' included), it is ESCALATED (default: none).
    /// `watch` and the agent loop have no usage records and cannot count it (`rules check`
    /// says so).
    #[schemars(range(min = 1))]
    pub max_tokens: Option<u64>,
    /// Budget breaker (`hook`, `watch`): past this long since the session's first hook call,
    /// or a staged task's first attempt, it is ESCALATED (default: none).
    #[serde(default, deserialize_with = "crate::duration::deserialize")]
    #[schemars(schema_with = "crate::duration::schema")]
    pub max_time: Option<Duration>,
    /// Drift breaker (`hook`): the same answer and the same patch, stop after stop.
    pub drift: Option<RawDrift>,
    /// Tool-error breaker (`hook`): the same tool, arguments and error this many times in a
    /// row tells the agent to change approach (default: 3; 0: never).
    pub tool_strikes: Option<u32>,
}

/// When stops count as the same: their last message and patch, compared by shingles after
/// case, whitespace and numbers are taken out.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawDrift {
    /// This many failed stops in a row that are the same is ESCALATED; the one before is told
    /// "you are repeating yourself: try a different approach" (default: `strikes`; 0: never).
    pub stops: Option<u32>,
    /// How alike two stops must be to count as the same, from 0 to 1 (default: 0.9).
    #[schemars(range(min = 0.0, max = 1.0))]
    pub similarity: Option<f64>,
}

/// How much of the event log is kept: once `events.jsonl` reaches `max_bytes` it becomes
/// `events.jsonl.1` (the one before becomes `.2`, and so on), and only `keep` such older files
/// are kept.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawEvents {
    /// The size at which the log is rotated, in bytes (default: 33554432, 32 MiB; at least
    /// 4096).
    #[schemars(range(min = 4096))]
    pub max_bytes: Option<u64>,
    /// Older logs kept beside it (default: 3; at most 100); 0 keeps none.
    #[schemars(range(max = 100))]
    pub keep: Option<u32>,
}

/// `speculate:` as written: on or off, or its settings.
#[derive(Debug, JsonSchema)]
#[serde(untagged)]
pub enum RawSpeculate {
    On(bool),
    Settings(RawSpeculateSettings),
}

/// Read by hand rather than as an untagged enum, so a wrong value is told where it is and what
/// to write instead (an untagged enum's error says neither).
impl<'de> Deserialize<'de> for RawSpeculate {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = RawSpeculate;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("`false`, `true` or `{quiet: 1s}`")
            }

            fn visit_bool<E: serde::de::Error>(self, on: bool) -> Result<RawSpeculate, E> {
                Ok(RawSpeculate::On(on))
            }

            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                map: M,
            ) -> Result<RawSpeculate, M::Error> {
                let settings =
                    Deserialize::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(RawSpeculate::Settings(settings))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// `speculate:`'s settings.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawSpeculateSettings {
    /// How long the task's files must be left alone before a speculative run starts
    /// (default: 1s).
    #[serde(default, deserialize_with = "crate::duration::deserialize")]
    #[schemars(schema_with = "crate::duration::schema")]
    pub quiet: Option<Duration>,
    /// Task paths (directories or files, no globs) the gates' tools write and nothing reads,
    /// which a speculative run may write and still be used: `[coverage]`, `[target]`.
    pub ignore: Option<Vec<String>>,
}

/// What `validator hook` does beside judging stops and tool calls.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawHook {
    /// Plan compliance (seed 001): every subagent stop must end with a STATUS block; one
    /// without is sent back to work, `STATUS: BLOCKED` stops it for a person, before any gate
    /// of the pipeline runs (default: `required`; `off` leaves STATUS to the pipeline's own
    /// `status` gates).
    pub subagent_status: Option<SubagentStatus>,
    /// At session start (or the session's first prompt, where session start is not wired) the
    /// agent is given the task's brief: its contract, what the gates check, the STATUS block
    /// to end with (default: true).
    pub brief: Option<bool>,
    /// A person's approval for a command a `tools.commands` rule asks one for, where the agent
    /// cannot ask its person (Codex, Gemini CLI, OpenCode; Claude Code with `claude: wait`):
    /// the call waits, under the hook's deadline, for `validator approve ID` or `validator deny
    /// ID`, and a webhook may tell someone.
    #[serde(default)]
    pub approvals: RawApprovals,
}

/// `hook.approvals`: how a person is asked for a call a rule holds for one.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawApprovals {
    /// An `http://` or `https://` URL that gets a JSON POST for each new request (a Slack-style
    /// `text`, with `id`, `command`, `reason`, `agent`, `session` and how to answer); `https`
    /// needs `curl` on the PATH. A failure is logged, never fatal.
    pub webhook: Option<String>,
    /// How long a request stays open for a person to answer (default: 10m); an answer that
    /// comes after the hook stopped waiting is taken by the same call made again in the session.
    #[serde(default, deserialize_with = "crate::duration::deserialize")]
    #[schemars(schema_with = "crate::duration::schema")]
    pub timeout: Option<Duration>,
    /// Claude Code: `ask` (default: its own prompt asks its person) or `wait` (as the other
    /// agents: for a headless `claude -p`, which refuses an ask).
    pub claude: Option<ClaudeApprovals>,
    /// A file holding a secret token (whitespace trimmed): with it, `validator watch
    /// --metrics-addr` also accepts `POST /approvals/ID/approve` and `/deny` carrying
    /// `Authorization: Bearer <token>`. Keep it where the worker cannot read it.
    pub token_file: Option<PathBuf>,
}

/// How Claude Code's calls that need a person's approval are asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ClaudeApprovals {
    Ask,
    Wait,
}

/// Whether a subagent's stop must carry a STATUS block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SubagentStatus {
    Required,
    Off,
}

/// A named list of gates run in order, routed by `on_pass` and `on_fail`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawPipeline {
    /// The pipeline's name (`check --pipeline NAME` picks it); unique in the file.
    pub name: String,
    /// Task-name globs such as `svc-*`: the pipeline runs for the tasks they match. Without
    /// it, every task.
    pub tasks: Option<Vec<TaskGlob>>,
    /// The gates, run from the first; each routes to the next by `on_pass` and `on_fail`.
    #[schemars(length(min = 1))]
    pub gates: Vec<GateSpec>,
    /// Most gates of a `group:` running at once (default: the number of cores).
    #[schemars(range(min = 1))]
    pub jobs: Option<u32>,
    /// A gate of a group that fails keeps the gates of its group that have not started from
    /// starting (they are reported not run); the ones running finish (default: false).
    pub fail_fast: Option<bool>,
}

/// A task-name glob such as `svc-*`, matched against the task's name.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct TaskGlob(pub String);

pub use crate::rules::spec::{Argv, GateSpec, RouteText, RuleKind};
