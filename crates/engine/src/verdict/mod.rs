//! The verdict: the document a run produces (docs/verdict.md), the feedback text an agent
//! reads, and the output formats. Types here are plain data; `feedback` and `format` render them.

pub mod feedback;
pub mod format;
pub mod sarif;
pub mod sign;
pub mod tail;
pub mod terminal;
pub mod write;

use std::fmt;

use serde::{Deserialize, Serialize};

/// The `schema` value of every verdict document.
pub const SCHEMA: &str = "validator.verdict/v1";

/// What a run decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Decision {
    Pass,
    Fail,
    Error,
    Blocked,
    Escalated,
}

impl Decision {
    /// The exit code `validator check` ends with (docs/verdict.md).
    pub fn exit_code(self) -> i32 {
        match self {
            Decision::Pass => 0,
            Decision::Fail => 1,
            Decision::Error => 2,
            Decision::Blocked => 3,
            Decision::Escalated => 4,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Pass => "PASS",
            Decision::Fail => "FAIL",
            Decision::Error => "ERROR",
            Decision::Blocked => "BLOCKED",
            Decision::Escalated => "ESCALATED",
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `pad`, so a width (`{:<9}`) lines the watcher's verdict lines up.
        f.pad(self.as_str())
    }
}

/// How one gate execution ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GateOutcome {
    Pass,
    Fail,
    Skipped,
    Cached,
    Error,
}

impl GateOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            GateOutcome::Pass => "pass",
            GateOutcome::Fail => "fail",
            GateOutcome::Skipped => "skipped",
            GateOutcome::Cached => "cached",
            GateOutcome::Error => "error",
        }
    }
}

/// The kind of breach a finding reports, where its rule knows one: what a coordinator's
/// `contract_violation` event names. Kept with the finding in memory, not in the verdict
/// document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Breach {
    /// A change outside what the task may change (outside `allow`, or in `deny`).
    Scope,
    /// A change to a `readonly` file.
    Readonly,
    /// A change the worker did not declare in `files_touched`, or a declared one that did not
    /// happen.
    Undeclared,
}

impl Breach {
    pub fn as_str(self) -> &'static str {
        match self {
            Breach::Scope => "scope",
            Breach::Readonly => "readonly",
            Breach::Undeclared => "undeclared change",
        }
    }
}

/// Something a gate found, as precise as the tool that found it allowed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    /// As the tool said it (`error`, `warning`, `note`, ...), lower case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<String>,
    /// The tool's code for what it found (`F401`, `E0308`, `clippy::needless_return`, `SC2086`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    pub message: String,
    #[serde(skip)]
    pub breach: Option<Breach>,
}

impl Finding {
    pub fn new(message: impl Into<String>) -> Self {
        Finding {
            file: None,
            line: None,
            column: None,
            severity: None,
            rule: None,
            message: message.into(),
            breach: None,
        }
    }

    /// A finding at `file:line[:column]`, as a tool reported it.
    pub fn at(
        file: impl Into<String>,
        line: u32,
        column: Option<u32>,
        message: impl Into<String>,
    ) -> Self {
        Finding {
            file: Some(file.into()),
            line: Some(line),
            column,
            ..Finding::new(message)
        }
    }

    /// The message with its severity and rule, as a line reads best: `error: msg [E0308]`.
    pub fn text(&self) -> String {
        validator_reading::finding::text(
            self.severity.as_deref(),
            &self.message,
            self.rule.as_deref(),
        )
    }

    pub fn breaching(self, breach: Breach) -> Self {
        Finding {
            breach: Some(breach),
            ..self
        }
    }

    pub fn in_file(file: impl Into<String>, message: impl Into<String>) -> Self {
        Finding {
            file: Some(file.into()),
            ..Finding::new(message)
        }
    }

    /// `file:line:col`, with whatever parts are known; the file quoted when it is not plain.
    pub fn location(&self) -> Option<String> {
        validator_reading::finding::location(self.file.as_deref(), self.line, self.column)
    }
}

/// A tool's finding, as the verdict carries it: no breach of its own.
impl From<validator_reading::Finding> for Finding {
    fn from(found: validator_reading::Finding) -> Self {
        let validator_reading::Finding {
            file,
            line,
            column,
            severity,
            rule,
            message,
        } = found;
        Finding {
            file,
            line,
            column,
            severity,
            rule,
            message,
            breach: None,
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.location() {
            Some(at) => write!(f, "{at}: {}", self.text()),
            None => f.write_str(&self.text()),
        }
    }
}

/// One gate's entry in the verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateReport {
    pub name: String,
    pub rule: String,
    pub outcome: GateOutcome,
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub summary: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tail: Option<String>,
    /// The command the rules name to fix what this gate found (`fix:`), when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// What the gate counted as the worker's changes (`file-scope`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_files: Option<ChangedFiles>,
    /// The tests a `test` gate's runner named as failed, as it names them (what `select:`
    /// runs first next time).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_tests: Vec<String>,
}

/// What a gate counted as the worker's changes, so a reader can hold its count against
/// `git status`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangedFiles {
    /// How many files; `files` holds the first [`ChangedFiles::LISTED`] of them, sorted.
    pub count: usize,
    pub files: Vec<String>,
    /// Files in tool caches left out because validator's own gates wrote them (the first
    /// [`ChangedFiles::LISTED`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
}

impl ChangedFiles {
    pub const LISTED: usize = 1000;

    pub fn new<'a>(
        files: impl ExactSizeIterator<Item = &'a String>,
        left_out: impl Iterator<Item = &'a String>,
    ) -> Self {
        ChangedFiles {
            count: files.len(),
            files: files.take(Self::LISTED).cloned().collect(),
            left_out: left_out.take(Self::LISTED).cloned().collect(),
        }
    }
}

/// The done signal a verdict answers; `sha256` and `mtime` make the verdict current.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignalInfo {
    pub sha256: Option<String>,
    pub mtime: Option<String>,
    pub agent: Option<String>,
    pub status: Option<String>,
}

impl SignalInfo {
    /// The signal section of the verdict: what makes it current, and what the worker said of itself.
    pub fn of(signal: &crate::done::Signal) -> SignalInfo {
        let report = signal.report.as_ref().ok();
        SignalInfo {
            sha256: signal.sha256.clone(),
            mtime: signal.mtime.map(crate::timestamp::nanos),
            agent: report.and_then(|r| r.agent.clone()),
            status: report.and_then(|r| r.status.clone()),
        }
    }
}

/// A contract's escalation paths (the seed's WorkerHandoff `escalation`): who a worker that
/// is stuck turns to, and the protocol for asking to change its scope. Operator text, shown
/// to workers and people on one line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Escalation {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_contact: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope_change_protocol: Option<String>,
}

impl Escalation {
    /// What a BLOCKED or ESCALATED verdict tells the worker to do, on one line:
    /// `STATUS: BLOCKED — escalate to coordinator: swarmmail_send(…)`.
    pub fn instruction(&self, decision: Decision) -> Option<String> {
        let contact = self
            .blocked_contact
            .as_deref()
            .map(validator_text::one_line);
        let protocol = self
            .scope_change_protocol
            .as_deref()
            .map(validator_text::one_line);
        let how = match (contact, protocol) {
            (Some(contact), Some(protocol)) => format!("escalate to {contact}: {protocol}"),
            (Some(contact), None) => format!("escalate to {contact}"),
            (None, Some(protocol)) => format!("escalate: {protocol}"),
            (None, None) => return None,
        };
        Some(format!("STATUS: {decision} — {how}"))
    }

    /// What a worker that needs a file outside its scope is told: ask, do not edit.
    pub fn scope_change(&self) -> Option<String> {
        let protocol = validator_text::one_line(self.scope_change_protocol.as_deref()?);
        let to = self
            .blocked_contact
            .as_deref()
            .map(|contact| format!(" (to {})", validator_text::one_line(contact)))
            .unwrap_or_default();
        Some(format!(
            "A file outside your scope needs the scope-change protocol, not an edit: undo the change and ask with {protocol}{to}."
        ))
    }
}

/// The verdict document (`<task>.verdict.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    pub schema: String,
    pub task: String,
    pub verdict: Decision,
    pub attempt: u32,
    pub max_attempts: u32,
    pub pipeline: String,
    pub signal: SignalInfo,
    pub started_at: String,
    pub duration_ms: u64,
    pub gates: Vec<GateReport>,
    pub reasons: Vec<String>,
    pub warnings: Vec<String>,
    /// The contract's success criteria no machine checked: a person must.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unchecked: Vec<String>,
    /// The contract's `context`: why the task exists, kept in front of the worker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// The contract's `escalation`: whom a stuck worker turns to, and how it asks for a file
    /// outside its scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation: Option<Escalation>,
    /// `hmac-sha256:<hex>` over the rest of the document, when a signing key is configured
    /// ([`sign`]). Last, so a reader sees it after what it covers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

impl Verdict {
    /// The verdict document, every string exactly as it is, with no control, bidirectional or
    /// invisible character raw in its bytes ([`validator_text::json_inert`]): a person reads it in
    /// a terminal or a CI log.
    pub fn to_json(&self) -> String {
        // A struct of strings, numbers and vectors always serialises.
        let json = serde_json::to_string_pretty(self).unwrap_or_default();
        validator_text::json_inert(&json).into_owned()
    }
}
