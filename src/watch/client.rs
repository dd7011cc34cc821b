//! What the other commands read from (or write for) a watcher: `signal` writes a done file,
//! `wait` blocks until a task's verdict is current, `status` lists tasks. They read only the
//! verdicts directory, never a verdict file a worker could have written elsewhere, and with a
//! signing key they trust only a verdict whose signature verifies.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use notify::{RecursiveMode, Watcher};
use serde::Serialize;

use validator::config::Rules;
use validator::done::Signal;
use validator::error::Error;
use validator::state::TaskState;
use validator::verdict::sign::{self, SigningKey, VerifyError};
use validator::verdict::{Decision, Verdict};
use validator::{staging, task};

/// What `validator signal` puts in the done file.
#[derive(Debug, Default, Serialize)]
pub struct SignalBody {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Writes `<staging>/<task>.done` atomically (a watcher never reads half of it). An empty
/// body when nothing was said; JSON otherwise.
pub fn signal(rules: &Rules, task: &str, body: &SignalBody) -> Result<std::path::PathBuf, Error> {
    task::validate_name(task)?;
    let text = if body.agent.is_none()
        && body.status.is_none()
        && body.summary.is_none()
        && body.reason.is_none()
    {
        String::new()
    } else {
        serde_json::to_string(body).unwrap_or_default() + "\n"
    };
    let path = staging::done_path(&rules.staging, task);
    validator::replace::durably(&path, text.as_bytes())?;
    Ok(path)
}

/// Writes `<staging>/<task>.done` with `text` as its body, as a worker's last message.
pub fn signal_text(rules: &Rules, task: &str, text: &str) -> Result<std::path::PathBuf, Error> {
    task::validate_name(task)?;
    let path = staging::done_path(&rules.staging, task);
    validator::replace::durably(&path, text.as_bytes())?;
    Ok(path)
}

/// Blocks until `task` has a verdict that answers its current done signal, or `timeout` passes.
/// With a key, a current verdict that does not verify ends the wait with
/// [`Error::Unverified`]: it is never returned as if the watcher had written it.
pub fn wait(
    rules: &Rules,
    task: &str,
    timeout: Duration,
    key: Option<&SigningKey>,
) -> Result<Option<Verdict>, Error> {
    task::validate_name(task)?;
    let deadline = Instant::now() + timeout;
    let (tx, rx) = mpsc::channel();
    // Notifications wake the wait early; the periodic check covers file systems without them.
    let mut watcher = notify::recommended_watcher(move |_| {
        let _ = tx.send(());
    })
    .ok();
    if let Some(watcher) = watcher.as_mut() {
        let _ = std::fs::create_dir_all(&rules.verdicts);
        let _ = watcher.watch(&rules.verdicts, RecursiveMode::NonRecursive);
    }
    loop {
        if let Some(verdict) = current_verdict(rules, task, key)? {
            return Ok(Some(verdict));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(None);
        }
        let _ = rx.recv_timeout(left.min(Duration::from_millis(500)));
    }
}

/// The task's verdict, if it answers the done file as it is now. With a key, such a verdict
/// whose signature does not verify is an error that names the file and why.
pub fn current_verdict(
    rules: &Rules,
    task: &str,
    key: Option<&SigningKey>,
) -> Result<Option<Verdict>, Error> {
    let Some(read) = read_verdict(rules, task, key) else {
        return Ok(None);
    };
    if !is_current(rules, task, &read.verdict) {
        return Ok(None);
    }
    match read.signature {
        Some(Err(why)) => Err(Error::Unverified {
            path: staging::verdict_path(&rules.verdicts, task),
            why: why.to_string(),
        }),
        _ => Ok(Some(read.verdict)),
    }
}

/// A verdict file as read, and (with a key) how its signature checked out.
struct Read {
    verdict: Verdict,
    signature: Option<Result<(), VerifyError>>,
}

/// Reads the task's verdict once, so the bytes verified are the bytes parsed.
fn read_verdict(rules: &Rules, task: &str, key: Option<&SigningKey>) -> Option<Read> {
    let document = sign::read_document(
        &staging::verdict_path(&rules.verdicts, task),
        validator_process::files::Links::Refuse,
    )
    .ok()?;
    // A document holding a key twice reads as one verdict to one reader and another to the
    // next. Without a key it is no verdict; with one it is read (as serde_json reads it, the
    // last of each key) only to be refused with the reason its check gives.
    let verdict: Verdict = match sign::parse_strict(&document) {
        Ok(value) => serde_json::from_value(value).ok()?,
        Err(VerifyError::DuplicateKey { .. }) if key.is_some() => {
            serde_json::from_value(serde_json::from_str(&document).ok()?).ok()?
        }
        Err(_) => return None,
    };
    // A verdict copied from another task, however well signed, answers nothing here: the
    // signature covers the document, not the file name it sits under.
    if verdict.task != task {
        return None;
    }
    Some(Read {
        verdict,
        signature: key.map(|key| sign::verify(&document, key)),
    })
}

fn is_current(rules: &Rules, task: &str, verdict: &Verdict) -> bool {
    Signal::read(&staging::done_path(&rules.staging, task))
        .is_ok_and(|signal| staging::is_current(verdict, &signal))
}

/// How a verdict's signature checked out, in `validator status` (only with a key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SignatureCheck {
    Valid,
    /// No signature at all.
    Unsigned,
    /// Edited after signing, signed with another key, not a signature, or in a document that
    /// holds a key twice.
    Invalid,
}

impl SignatureCheck {
    fn of(check: &Result<(), VerifyError>) -> Self {
        match check {
            Ok(()) => SignatureCheck::Valid,
            Err(VerifyError::Unsigned) => SignatureCheck::Unsigned,
            Err(_) => SignatureCheck::Invalid,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SignatureCheck::Valid => "valid",
            SignatureCheck::Unsigned => "unsigned",
            SignatureCheck::Invalid => "invalid",
        }
    }
}

/// One line of `validator status`.
#[derive(Debug, Serialize)]
pub struct TaskStatus {
    pub task: String,
    pub verdict: Option<Decision>,
    /// Whether the verdict answers the done file as it is now (false: a run is due or under way,
    /// or, with a key, the verdict's signature does not verify).
    pub current: bool,
    /// An agent hook session: `verdict` is its state's last decision (the hook writes no
    /// verdict file), and `current` does not apply (there is no done file to answer).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub hook_session: bool,
    /// With a signing key: whether the verdict's signature verifies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<SignatureCheck>,
    pub attempt: u32,
    pub max_attempts: u32,
    /// Seconds since the last verdict's run started (a hook session's: since its state was
    /// last written).
    pub age_secs: Option<u64>,
    pub escalated: Option<String>,
    /// The running watcher judged the task but cannot write its verdict: why (the OS's reason).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unpublished: Option<String>,
    /// Where the task's review stands (its pipeline has a `review` gate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review: Option<validator::state::ReviewState>,
}

/// Whether `task` names an agent hook session's state (`hook-` and 16 hex digits, as
/// [`validator::hook::session_key`] makes it) with no done file: the hook writes no verdict file,
/// so its state's decision is the session's last word.
fn is_hook_session(rules: &Rules, task: &str) -> bool {
    let hex = task.strip_prefix("hook-").unwrap_or_default();
    hex.len() == 16
        && hex.bytes().all(|b| b.is_ascii_hexdigit())
        && !staging::done_path(&rules.staging, task).exists()
}

/// The decision a hook session's next stop starts from: a tripped breaker holds it escalated
/// whatever the last run said.
fn hook_decision(state: &TaskState) -> Option<Decision> {
    match state.escalated {
        Some(_) => Some(Decision::Escalated),
        None => state.last_verdict,
    }
}

/// Every task that has a done signal, a verdict or state. With a key, a verdict is current only
/// if its signature verifies.
pub fn status(rules: &Rules, key: Option<&SigningKey>) -> Vec<TaskStatus> {
    let mut names = BTreeSet::new();
    let mut collect = |dir: &Path, suffix: &str| {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(task) = name.strip_suffix(suffix) {
                if task::validate_name(task).is_ok() {
                    names.insert(task.to_owned());
                }
            }
        }
    };
    collect(&rules.staging, staging::DONE_SUFFIX);
    collect(&rules.verdicts, ".verdict.json");
    collect(&rules.state.join("tasks"), ".json");
    let mut unpublished = super::health::unpublished(rules);
    names.extend(unpublished.keys().cloned());
    names
        .into_iter()
        .map(|task| {
            let read = read_verdict(rules, &task, key);
            let signature = read
                .as_ref()
                .and_then(|r| r.signature.as_ref())
                .map(SignatureCheck::of);
            let verdict = read.map(|r| r.verdict);
            let state = TaskState::load(&rules.state, &task);
            let hook_session = verdict.is_none() && is_hook_session(rules, &task);
            let age_secs = verdict
                .as_ref()
                .map(|v| v.started_at.as_str())
                .or(state.updated_at.as_deref().filter(|_| hook_session))
                .and_then(|at| humantime::parse_rfc3339(at).ok())
                .and_then(|t| SystemTime::now().duration_since(t).ok())
                .map(|d| d.as_secs());
            let current = verdict
                .as_ref()
                .is_some_and(|v| is_current(rules, &task, v))
                && signature.is_none_or(|s| s == SignatureCheck::Valid);
            // The watcher's record says what it could not write as of its last word; the
            // verdict on disk is the truth: one that answers the signal has been written.
            let unpublished = unpublished.remove(&task).filter(|_| !current);
            TaskStatus {
                current,
                signature,
                verdict: match &verdict {
                    Some(v) => Some(v.verdict),
                    None if hook_session => hook_decision(&state),
                    None => None,
                },
                hook_session,
                attempt: verdict.as_ref().map_or(state.attempt, |v| v.attempt),
                max_attempts: rules.defaults.max_attempts,
                age_secs,
                escalated: state.escalated,
                unpublished,
                review: state.review,
                task,
            }
        })
        .collect()
}
