//! Per-task state under `<state>/tasks/<task>.json`: the attempt count, the signal that attempt
//! answers (so a run repeated after a crash keeps its number), the recent failure signature
//! for the strikes breaker, and the task's review (`ReviewState`, from its `review` gates'
//! outcomes). Written atomically; survives restarts; `validator reset` clears it.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::Error;
use crate::verdict::{Decision, GateOutcome, Verdict};

/// A task's state is a few hundred bytes; a larger file was not written by validator.
const MAX_STATE_BYTES: u64 = 64 * 1024;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskState {
    /// The attempt number of `signal`: attempts since the last PASS or reset.
    pub attempt: u32,
    /// The signal (sha256, mtime) the current attempt answers.
    pub signal: Option<String>,
    /// The signal whose outcome was last counted (strikes, last verdict), so a run repeated
    /// after a crash is not counted twice.
    pub judged: Option<String>,
    /// The last failure's signature and how many runs in a row ended with it.
    pub signature: Option<String>,
    pub strikes: u32,
    /// Set when a breaker tripped: every signal is ESCALATED until a person resets the task.
    pub escalated: Option<String>,
    pub last_verdict: Option<Decision>,
    pub updated_at: Option<String>,
    /// Set when the worker reported BLOCKED to a hook adapter: the session is held (every later
    /// call lets the agent stop) until a person resets it. The watcher re-judges each signal
    /// instead, so it leaves this unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked: Option<String>,
    /// The drift breaker's memory: the last failed run's answer and patch, sketched, and how
    /// many failed runs in a row were alike.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<Drifting>,
    /// Where the task's review stands, when its pipeline has a `review` gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewState>,
    /// The tests each `test` gate's runner named as failed in the last run that ran it, by
    /// gate: a gate with `select:` runs them first next time.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failed_tests: BTreeMap<String, Vec<String>>,
    /// When the current series of attempts began (seconds since the epoch): its first signal
    /// after a PASS or reset, which the watcher's `max_time` counts from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<u64>,
}

/// Failed tests remembered per gate, and the characters of each name: the state file must
/// stay well under its cap (see [`MAX_REVIEW_ISSUES`]).
const MAX_FAILED_TESTS: usize = 50;
const MAX_TEST_NAME_CHARS: usize = 500;
/// The bytes all gates' failed tests may take in the file, as JSON writes them: a name's
/// characters may be four bytes each (or six, escaped), and a contract may add any number of
/// test gates, so no cap per name or per gate bounds the whole.
const MAX_FAILED_TEST_BYTES: usize = 16 * 1024;

/// Issues a review state keeps, and the characters of each (the verdict holds them all): the
/// state file must stay well under its cap, or it would be read as damaged and the task's
/// attempts start afresh.
const MAX_REVIEW_ISSUES: usize = 20;
const MAX_ISSUE_CHARS: usize = 200;

/// A task's review, as seed 000's review state: who reviews it, where it stands, what the
/// last answered review found and how many reviews have answered. Recorded by the judge from
/// the `review` gates' outcomes when a run ends (rules write nothing), so it reads `pending`,
/// `approved` or `rejected`; a review still running is not recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewState {
    pub status: ReviewStatus,
    /// The reviewers of the pipeline's `review` gates, by name.
    pub reviewers: Vec<String>,
    /// The issues of the last review that answered, each on one line (at most 20, each cut to
    /// 200 characters).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub issues: Vec<String>,
    /// Reviews that answered (approved or rejected) since the state was created.
    pub attempts: u32,
    pub created_at: String,
    pub updated_at: String,
}

/// Where a review stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewStatus {
    /// No reviewer has answered for this work: the review gate was not reached, was skipped,
    /// or could not judge (ERROR).
    Pending,
    Approved,
    Rejected,
}

impl ReviewStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewStatus::Pending => "pending",
            ReviewStatus::Approved => "approved",
            ReviewStatus::Rejected => "rejected",
        }
    }
}

/// See [`TaskState::drift`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Drifting {
    pub last: crate::shingles::Sketch,
    pub alike: u32,
}

/// The bytes `text` takes as a JSON string.
fn json_bytes(text: &str) -> usize {
    serde_json::to_string(text).map_or(usize::MAX, |json| json.len())
}

fn seconds_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

pub fn path(state_dir: &Path, task: &str) -> PathBuf {
    state_dir.join("tasks").join(format!("{task}.json"))
}

impl TaskState {
    /// The attempt number for a run answering `signal`: the same signal keeps its number (a
    /// run repeated after a crash); a new one counts up, from 1 after a PASS. A task a breaker
    /// holds (ESCALATED, or BLOCKED in a hook session) counts no more attempts: its answer
    /// cannot change until a person resets it.
    pub fn attempt_for(&mut self, signal: Option<String>) -> u32 {
        let held = self.escalated.is_some() || self.blocked.is_some();
        if self.signal != signal && !held {
            let fresh = self.last_verdict == Some(Decision::Pass) || self.attempt == 0;
            self.attempt = if fresh { 1 } else { self.attempt + 1 };
            if fresh || self.started.is_none() {
                self.started = Some(seconds_now());
            }
            self.signal = signal;
        }
        self.attempt
    }

    /// How long the current series of attempts has run, if it is known when it began.
    pub fn running_for(&self) -> Option<std::time::Duration> {
        let started = self.started?;
        Some(std::time::Duration::from_secs(
            seconds_now().saturating_sub(started),
        ))
    }

    /// Remembers the tests each `test` gate that ran named as failed, and forgets them for one
    /// that passed; a gate that did not run keeps what it had.
    pub fn record_failed_tests(&mut self, verdict: &Verdict) {
        for gate in verdict.gates.iter().filter(|gate| gate.rule == "test") {
            match gate.outcome {
                GateOutcome::Pass | GateOutcome::Cached => {
                    self.failed_tests.remove(&gate.name);
                }
                GateOutcome::Fail | GateOutcome::Error => {
                    let names: Vec<String> = gate
                        .failed_tests
                        .iter()
                        .filter(|name| name.chars().count() <= MAX_TEST_NAME_CHARS)
                        .take(MAX_FAILED_TESTS)
                        .cloned()
                        .collect();
                    if names.is_empty() {
                        self.failed_tests.remove(&gate.name);
                    } else {
                        self.failed_tests.insert(gate.name.clone(), names);
                    }
                }
                GateOutcome::Skipped => {}
            }
        }
        let mut left = MAX_FAILED_TEST_BYTES;
        for names in self.failed_tests.values_mut() {
            let kept = names
                .iter()
                .take_while(|name| match left.checked_sub(json_bytes(name)) {
                    Some(rest) => {
                        left = rest;
                        true
                    }
                    None => {
                        left = 0;
                        false
                    }
                })
                .count();
            names.truncate(kept);
        }
        self.failed_tests.retain(|_, names| !names.is_empty());
    }

    /// Counts a FAIL for the strikes breaker: one more strike if it fails the same way as the
    /// last failure, else the first of a new series. Returns the strikes so far.
    pub fn strike(&mut self, verdict: &Verdict) -> u32 {
        let signature = failure_signature(verdict);
        self.strikes = if self.signature.as_deref() == Some(signature.as_str()) {
            self.strikes + 1
        } else {
            1
        };
        self.signature = Some(signature);
        self.strikes
    }

    /// Records the outcome of the run's `review` gates (whose reviewers are `reviewers`): a
    /// rejection by any is `rejected`, approval by every one that is in the verdict is
    /// `approved`, anything else (not reached, skipped, ERROR) `pending`. A pipeline without a
    /// review gate leaves the state as it is.
    pub fn record_review(&mut self, reviewers: Vec<String>, verdict: &Verdict) {
        let gates: Vec<&crate::verdict::GateReport> = verdict
            .gates
            .iter()
            .filter(|gate| gate.rule == "review")
            .collect();
        if reviewers.is_empty() && gates.is_empty() {
            return;
        }
        let status = if gates.iter().any(|g| g.outcome == GateOutcome::Fail) {
            ReviewStatus::Rejected
        } else if !gates.is_empty() && gates.iter().all(|g| g.outcome == GateOutcome::Pass) {
            ReviewStatus::Approved
        } else {
            ReviewStatus::Pending
        };
        let issues = match status {
            ReviewStatus::Pending => Vec::new(),
            _ => gates
                .iter()
                .flat_map(|gate| &gate.findings)
                .take(MAX_REVIEW_ISSUES)
                .map(|finding| {
                    validator_text::clip(
                        &validator_text::one_line(&finding.to_string()),
                        MAX_ISSUE_CHARS,
                    )
                })
                .collect(),
        };
        let now = crate::timestamp::seconds(std::time::SystemTime::now());
        let previous = self.review.take();
        let answered = u32::from(status != ReviewStatus::Pending);
        self.review = Some(ReviewState {
            status,
            reviewers,
            issues,
            attempts: previous.as_ref().map_or(0, |p| p.attempts) + answered,
            created_at: previous.map_or_else(|| now.clone(), |p| p.created_at),
            updated_at: now,
        });
    }

    /// The task's state; a missing file is a fresh task. A damaged file is treated as fresh too,
    /// with a warning: refusing to judge would block the worker forever.
    pub fn load(state_dir: &Path, task: &str) -> Self {
        let file = path(state_dir, task);
        match validator_process::files::read(&file, MAX_STATE_BYTES, validator_process::files::Links::Refuse) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|err| {
                tracing::warn!(path = %file.display(), %err, "task state is damaged; starting the task afresh");
                TaskState::default()
            }),
            Err(err) if err.kind() == io::ErrorKind::NotFound => TaskState::default(),
            Err(err) => {
                tracing::warn!(path = %file.display(), %err, "cannot read task state; starting the task afresh");
                TaskState::default()
            }
        }
    }

    pub fn save(&mut self, state_dir: &Path, task: &str) -> Result<(), Error> {
        self.updated_at = Some(crate::timestamp::seconds(std::time::SystemTime::now()));
        let bytes = self.fitted();
        // A crash keeps the page cache, so this survives `kill -9`; only a power loss could lose
        // the last update, which makes an attempt count one short, never a verdict wrong.
        crate::replace::without_sync(&path(state_dir, task), &bytes)
    }

    /// The state as the file holds it, always under the cap [`Self::load`] reads to: a file
    /// over it would be read as damaged and the task start afresh, its attempts and breakers
    /// forgotten. What only helps the next run (the failed tests, the review's issues) goes
    /// first, so what holds the worker never does.
    fn fitted(&mut self) -> Vec<u8> {
        let fits = |state: &TaskState| {
            let bytes = serde_json::to_vec_pretty(state).unwrap_or_default();
            (bytes.len() as u64 <= MAX_STATE_BYTES).then_some(bytes)
        };
        if let Some(bytes) = fits(self) {
            return bytes;
        }
        tracing::warn!("task state over its cap; the failed tests and review issues are dropped");
        self.failed_tests.clear();
        if let Some(review) = self.review.as_mut() {
            review.issues.clear();
        }
        fits(self).unwrap_or_else(|| {
            self.drift = None;
            serde_json::to_vec_pretty(self).unwrap_or_default()
        })
    }

    /// Clears the task (after a person has decided). Returns whether there was anything to clear.
    pub fn reset(state_dir: &Path, task: &str) -> Result<bool, Error> {
        let file = path(state_dir, task);
        match std::fs::remove_file(&file) {
            Ok(()) => Ok(true),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(Error::Write { path: file, source }),
        }
    }
}

/// What makes two failures "the same": the failing gates and their findings, with numbers,
/// hex ids and temporary paths taken out so timestamps and temp dirs do not make them differ.
pub fn failure_signature(verdict: &Verdict) -> String {
    let mut hasher = Sha256::new();
    for gate in verdict
        .gates
        .iter()
        .filter(|g| matches!(g.outcome, GateOutcome::Fail | GateOutcome::Error))
    {
        hasher.update(gate.name.as_bytes());
        hasher.update(b"\0");
        hasher.update(normalise(&gate.summary).as_bytes());
        for finding in &gate.findings {
            // The file is kept as written: a failure that moves to another file is another
            // failure. Line numbers and the message's numbers may drift between equal failures.
            hasher.update(b"\0");
            hasher.update(finding.file.as_deref().unwrap_or_default().as_bytes());
            hasher.update(b"\0");
            hasher.update(normalise(&finding.message).as_bytes());
        }
        hasher.update(b"\n");
    }
    for reason in &verdict.reasons {
        hasher.update(normalise(reason).as_bytes());
    }
    format!("{:x}", hasher.finalize())[..16].to_owned()
}

fn normalise(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in
        text.split_inclusive(|c: char| c.is_whitespace() || c == '\'' || c == '"' || c == '`')
    {
        if ["/tmp/", "/var/folders/", "/private/tmp/"]
            .iter()
            .any(|tmp| word.contains(tmp))
        {
            out.push_str("<tmp>");
            continue;
        }
        let mut last_digit = false;
        for c in word.chars() {
            if c.is_ascii_digit() {
                if !last_digit {
                    out.push('#');
                }
                last_digit = true;
            } else {
                out.push(c);
                last_digit = false;
            }
        }
    }
    out
}

/// The user's own state directory for validator (`$XDG_STATE_HOME/validator`, else
/// `~/.local/state/validator`), when the environment names an absolute one: out of a worker's
/// reach where its processes are confined, and in no project.
pub fn user_dir() -> Option<PathBuf> {
    let absolute = |var: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
    };
    absolute("XDG_STATE_HOME")
        .or_else(|| absolute("HOME").map(|home| home.join(".local/state")))
        .map(|dir| dir.join("validator"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_ignore_times_numbers_and_temp_paths() {
        assert_eq!(
            normalise("took 1532ms in /tmp/.tmpAbC12/x.rs"),
            normalise("took 87ms in /tmp/.tmpZZZ/y.rs")
        );
        assert_ne!(normalise("lint failed"), normalise("test failed"));
    }

    #[test]
    fn a_review_state_stays_far_under_the_state_files_cap() {
        use crate::verdict::{Finding, GateReport};
        let mut verdict: Verdict = serde_json::from_value(serde_json::json!({
            "schema": "1", "task": "t", "verdict": "FAIL", "attempt": 1, "max_attempts": 3,
            "pipeline": "p", "started_at": "2026-01-01T00:00:00Z", "duration_ms": 0,
            "gates": [], "reasons": [], "warnings": [],
            "signal": {"sha256": null, "mtime": null, "agent": null, "status": null}
        }))
        .unwrap_or_else(|err| panic!("{err}"));
        verdict.gates.push(GateReport {
            name: "review".into(),
            rule: "review".into(),
            outcome: GateOutcome::Fail,
            duration_ms: 0,
            exit_code: None,
            summary: String::new(),
            findings: vec![Finding::new("\u{10FFFF}".repeat(100_000)); 500],
            output_tail: None,
            fix: None,
            changed_files: None,
            failed_tests: Vec::new(),
        });
        let mut state = TaskState::default();
        state.record_review(vec!["r".into()], &verdict);
        let bytes = serde_json::to_vec_pretty(&state).unwrap();
        assert!(
            bytes.len() < MAX_STATE_BYTES as usize / 2,
            "{}",
            bytes.len()
        );
    }

    #[test]
    fn failed_tests_of_any_number_of_gates_never_swell_the_file_past_its_cap() {
        let dir = tempfile::tempdir().unwrap();
        let name = "\u{1D538}".repeat(MAX_TEST_NAME_CHARS - 10);
        let mut state = TaskState {
            strikes: 2,
            escalated: Some("strikes".into()),
            ..TaskState::default()
        };
        for gate in 0..40 {
            let names = (0..MAX_FAILED_TESTS)
                .map(|n| format!("{n}{name}"))
                .collect();
            state
                .failed_tests
                .insert(format!("contract.criterion-{gate}"), names);
        }
        state.save(dir.path(), "t").unwrap();
        let loaded = TaskState::load(dir.path(), "t");
        assert_eq!(loaded.escalated.as_deref(), Some("strikes"));
        assert_eq!(loaded.strikes, 2);
    }

    #[test]
    fn state_round_trips_and_resets() {
        let dir = tempfile::tempdir().unwrap();
        let mut state = TaskState {
            attempt: 2,
            strikes: 1,
            ..TaskState::default()
        };
        state.save(dir.path(), "t").unwrap();
        assert_eq!(TaskState::load(dir.path(), "t").attempt, 2);
        assert!(TaskState::reset(dir.path(), "t").unwrap());
        assert_eq!(TaskState::load(dir.path(), "t"), TaskState::default());
        assert!(!TaskState::reset(dir.path(), "t").unwrap());
    }
}
