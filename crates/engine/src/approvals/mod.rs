//! A person's approval of one tool call, for agents that cannot ask their person: the request
//! the pre-tool hook records (`<state>/approvals/<id>.json`), the answer `validator approve` or
//! `validator deny` writes beside it (`<id>.answer`), and the checks that make the answer the
//! person's. [`webhook`] tells someone a request is waiting.
//!
//! The answer is trusted only as validator wrote it: a regular file reached through no link,
//! written after the request, naming the request's id and the SHA-256 of its exact tool input,
//! and, with a signing key, carrying the key's HMAC over all of that (a confined worker can
//! neither read the key nor write the state directory). An answer covers its one request,
//! once: the hook removes both when it takes it.

pub mod webhook;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::verdict::sign::SigningKey;

/// The directory of requests and answers under the state directory.
pub const DIR: &str = "approvals";
/// A request or an answer is a few lines; a larger file was not written by validator.
const MAX_RECORD_BYTES: u64 = 1024 * 1024;

/// Why a request or an answer cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    #[error("`{0}` names no approval request (ids are letters and digits)")]
    BadId(String),
    #[error("no approval request `{0}` is waiting (it was answered, or it expired)")]
    NotFound(String),
    #[error("the approval request {path} cannot be read: {reason}")]
    Unreadable { path: PathBuf, reason: String },
    #[error(
        "the approval request `{0}` is not one validator wrote (its signature does not verify)"
    )]
    Forged(String),
    #[error("the answer to `{id}` is not one validator wrote: {why}")]
    AnswerRefused { id: String, why: String },
    #[error("cannot write {path}: {reason}")]
    Write { path: PathBuf, reason: String },
}

/// What a person said.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Choice {
    Approve,
    Deny,
}

impl Choice {
    pub fn as_str(self) -> &'static str {
        match self {
            Choice::Approve => "approve",
            Choice::Deny => "deny",
        }
    }
}

/// A call waiting for a person, as the hook recorded it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Letters and digits, random: names the files and `validator approve ID`.
    pub id: String,
    pub session: String,
    pub agent: String,
    pub tool: String,
    /// The tool's input exactly as the agent sent it: what an approval lets run.
    pub input: Value,
    /// The command line (or the input as text), for a person to read.
    pub command: String,
    /// Why the rules ask a person.
    pub reason: String,
    /// Milliseconds since the epoch.
    pub created_ms: u64,
    /// Past it the request is no longer answered.
    pub deadline_ms: u64,
    /// With a signing key: its HMAC over the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// What a new request says; the store adds its id, times and signature.
#[derive(Debug, Clone)]
pub struct Draft<'a> {
    pub session: &'a str,
    pub agent: &'a str,
    pub tool: &'a str,
    pub input: &'a Value,
    pub command: &'a str,
    pub reason: &'a str,
    /// How long the request stays open.
    pub open_for: Duration,
}

/// A person's answer, as `validator approve` and `validator deny` write it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    pub id: String,
    pub decision: Choice,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The SHA-256 of the request's exact tool input: the answer covers that call only.
    pub input_sha256: String,
    pub answered_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

fn now_ms() -> u64 {
    millis(SystemTime::now())
}

fn millis(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The SHA-256 of a tool input, as an answer names it.
pub fn input_sha256(input: &Value) -> String {
    format!("{:x}", Sha256::digest(input.to_string().as_bytes()))
}

/// Whether `id` could name a request (and so a file of the directory, never a path).
fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.chars().all(|c| c.is_ascii_alphanumeric())
}

/// `value` without its `signature` member, as signed.
fn unsigned<T: Serialize>(record: &T) -> Value {
    let mut value = serde_json::to_value(record).unwrap_or(Value::Null);
    if let Some(fields) = value.as_object_mut() {
        fields.remove("signature");
    }
    value
}

fn signed_by<T: Serialize>(record: &T, signature: Option<&str>, key: Option<&SigningKey>) -> bool {
    match key {
        None => true,
        Some(key) => signature.is_some_and(|signature| key.signed(&unsigned(record), signature)),
    }
}

impl Request {
    /// How long it has waited.
    pub fn age(&self) -> Duration {
        Duration::from_millis(now_ms().saturating_sub(self.created_ms))
    }

    pub fn expired(&self) -> bool {
        now_ms() >= self.deadline_ms
    }

    /// What is left of its time to be answered.
    pub fn left(&self) -> Duration {
        Duration::from_millis(self.deadline_ms.saturating_sub(now_ms()))
    }
}

/// The requests and answers of one state directory.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    pub fn new(state: &Path) -> Store {
        Store {
            dir: state.join(DIR),
        }
    }

    fn request_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    fn answer_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.answer"))
    }

    /// Records a new request under a fresh random id.
    pub fn create(
        &self,
        draft: &Draft<'_>,
        key: Option<&SigningKey>,
    ) -> Result<Request, ApprovalError> {
        let cannot = |err: &dyn std::fmt::Display| ApprovalError::Write {
            path: self.dir.clone(),
            reason: err.to_string(),
        };
        std::fs::create_dir_all(&self.dir).map_err(|err| cannot(&err))?;
        // The name is taken first (created exclusively), so no two requests share an id.
        let file = tempfile::Builder::new()
            .prefix("")
            .suffix(".json")
            .rand_bytes(20)
            .tempfile_in(&self.dir)
            .map_err(|err| cannot(&err))?;
        let id = file
            .path()
            .file_stem()
            .and_then(|stem| stem.to_str())
            .filter(|id| valid_id(id))
            .map(str::to_owned)
            .ok_or_else(|| cannot(&"a random name that is not letters and digits"))?;
        let created_ms = now_ms();
        let open_ms = u64::try_from(draft.open_for.as_millis()).unwrap_or(u64::MAX);
        let mut request = Request {
            id,
            session: draft.session.to_owned(),
            agent: draft.agent.to_owned(),
            tool: draft.tool.to_owned(),
            input: draft.input.clone(),
            command: draft.command.to_owned(),
            reason: draft.reason.to_owned(),
            created_ms,
            deadline_ms: created_ms.saturating_add(open_ms),
            signature: None,
        };
        request.signature = key.map(|key| key.sign_value(&unsigned(&request)));
        let text = serde_json::to_vec_pretty(&request).map_err(|err| cannot(&err))?;
        let (mut file, path) = file.keep().map_err(|err| cannot(&err))?;
        std::io::Write::write_all(&mut file, &text)
            .and_then(|()| file.sync_all())
            .map_err(|err| ApprovalError::Write {
                path,
                reason: err.to_string(),
            })?;
        Ok(request)
    }

    /// The request `id` names, as validator wrote it (with a key, signed by it).
    pub fn load(&self, id: &str, key: Option<&SigningKey>) -> Result<Request, ApprovalError> {
        if !valid_id(id) {
            return Err(ApprovalError::BadId(validator_text::one_line(id)));
        }
        let path = self.request_path(id);
        let bytes = match validator_process::files::read(
            &path,
            MAX_RECORD_BYTES,
            validator_process::files::Links::Refuse,
        ) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Err(ApprovalError::NotFound(id.to_owned()));
            }
            Err(err) => {
                return Err(ApprovalError::Unreadable {
                    path,
                    reason: err.to_string(),
                });
            }
        };
        let request: Request =
            serde_json::from_slice(&bytes).map_err(|err| ApprovalError::Unreadable {
                path: path.clone(),
                reason: err.to_string(),
            })?;
        if request.id != id {
            return Err(ApprovalError::Unreadable {
                path,
                reason: "it names another request".into(),
            });
        }
        if !signed_by(&request, request.signature.as_deref(), key) {
            return Err(ApprovalError::Forged(id.to_owned()));
        }
        Ok(request)
    }

    /// The requests still open, oldest first; an expired one (and its answer) is removed, and
    /// one that is not validator's (damaged, unsigned under a key) is left out.
    pub fn pending(&self, key: Option<&SigningKey>) -> Vec<Request> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut requests: Vec<Request> = entries
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name();
                let id = name.to_str()?.strip_suffix(".json")?;
                valid_id(id).then(|| id.to_owned())
            })
            .filter_map(|id| self.load(&id, key).ok())
            .filter(|request| {
                if request.expired() {
                    self.remove(&request.id);
                    return false;
                }
                true
            })
            .collect();
        requests.sort_by_key(|request| request.created_ms);
        requests
    }

    /// How many requests are open (for the watcher's gauge): read, never pruned.
    pub fn count_pending(&self) -> usize {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        entries
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name();
                let id = name.to_str()?.strip_suffix(".json")?.to_owned();
                valid_id(&id).then_some(id)
            })
            .filter_map(|id| self.load(&id, None).ok())
            .filter(|request| !request.expired())
            .count()
    }

    /// An open request for the very same call of the same session and agent: the call made
    /// again waits on it (and takes an answer given after the first wait ended).
    pub fn same(&self, draft: &Draft<'_>, key: Option<&SigningKey>) -> Option<Request> {
        self.pending(key).into_iter().find(|request| {
            request.session == draft.session
                && request.agent == draft.agent
                && request.tool == draft.tool
                && &request.input == draft.input
        })
    }

    /// Writes a person's answer to the open request `id`.
    pub fn answer(
        &self,
        id: &str,
        decision: Choice,
        reason: Option<&str>,
        key: Option<&SigningKey>,
    ) -> Result<Request, ApprovalError> {
        let request = self.load(id, key)?;
        if request.expired() {
            self.remove(id);
            return Err(ApprovalError::NotFound(id.to_owned()));
        }
        let mut answer = Answer {
            id: request.id.clone(),
            decision,
            reason: reason.map(validator_text::one_line),
            input_sha256: input_sha256(&request.input),
            answered_ms: now_ms().max(request.created_ms),
            signature: None,
        };
        answer.signature = key.map(|key| key.sign_value(&unsigned(&answer)));
        let path = self.answer_path(id);
        let text = serde_json::to_vec_pretty(&answer).map_err(|err| ApprovalError::Write {
            path: path.clone(),
            reason: err.to_string(),
        })?;
        crate::replace::durably(&path, &text).map_err(|err| ApprovalError::Write {
            path,
            reason: crate::error::with_causes(&err),
        })?;
        Ok(request)
    }

    /// The answer to `request`, if one was written and it is the person's: `Ok(None)` while
    /// none is there; an error for one validator did not write (a link, not a regular file,
    /// older than the request, for another request or call, or not signed by the key).
    pub fn answer_of(
        &self,
        request: &Request,
        key: Option<&SigningKey>,
    ) -> Result<Option<Answer>, ApprovalError> {
        let refused = |why: String| ApprovalError::AnswerRefused {
            id: request.id.clone(),
            why,
        };
        let path = self.answer_path(&request.id);
        let file =
            match validator_process::files::open(&path, validator_process::files::Links::Refuse) {
                Ok(file) => file,
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(err) => return Err(refused(err.to_string())),
            };
        let meta = file.metadata().map_err(|err| refused(err.to_string()))?;
        // A file's time comes from the kernel's coarse clock, a tick (up to 10 ms) behind the
        // one the request was stamped with: one written within a tick of it counts as after it
        // (an answer names the request's random id, which did not exist before it).
        const CLOCK_TICK_MS: u64 = 20;
        let written = meta.modified().map(millis).unwrap_or(0);
        if written.saturating_add(CLOCK_TICK_MS) < request.created_ms {
            return Err(refused("it was written before the request".into()));
        }
        let mut bytes = Vec::new();
        file.take(MAX_RECORD_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|err| refused(err.to_string()))?;
        if bytes.len() as u64 > MAX_RECORD_BYTES {
            return Err(refused("it is too large".into()));
        }
        let answer: Answer =
            serde_json::from_slice(&bytes).map_err(|err| refused(err.to_string()))?;
        if answer.id != request.id {
            return Err(refused("it answers another request".into()));
        }
        if answer.input_sha256 != input_sha256(&request.input) {
            return Err(refused("it answers another call".into()));
        }
        if answer.answered_ms < request.created_ms {
            return Err(refused("it says it was given before the request".into()));
        }
        if !signed_by(&answer, answer.signature.as_deref(), key) {
            return Err(refused("its signature does not verify".into()));
        }
        Ok(Some(answer))
    }

    /// Whether the request `id` is still there (not taken, not pruned).
    pub fn is_open(&self, id: &str) -> bool {
        valid_id(id) && std::fs::symlink_metadata(self.request_path(id)).is_ok()
    }

    /// Takes a request and its answer away: the answer is spent, or the request is over.
    pub fn remove(&self, id: &str) {
        if valid_id(id) {
            let _ = std::fs::remove_file(self.answer_path(id));
            let _ = std::fs::remove_file(self.request_path(id));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn draft(input: &Value) -> Draft<'_> {
        Draft {
            session: "s1",
            agent: "codex",
            tool: "Bash",
            input,
            command: "git push",
            reason: "a person confirms pushes",
            open_for: Duration::from_secs(600),
        }
    }

    fn key(dir: &Path) -> SigningKey {
        let path = dir.join("key");
        std::fs::write(&path, "0123456789abcdef0123456789abcdef").unwrap();
        crate::verdict::sign::KeyFile {
            path,
            source: crate::verdict::sign::KeySource::Flag,
        }
        .read()
        .unwrap()
    }

    #[test]
    fn an_answer_is_taken_once_for_its_own_call() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let input = json!({"command": "git push"});
        let request = store.create(&draft(&input), None).unwrap();
        assert!(valid_id(&request.id));
        assert_eq!(store.pending(None), vec![request.clone()]);
        assert!(store.answer_of(&request, None).unwrap().is_none());
        store
            .answer(&request.id, Choice::Deny, Some("not\ntoday"), None)
            .unwrap();
        let answer = store.answer_of(&request, None).unwrap().unwrap();
        assert_eq!(answer.decision, Choice::Deny);
        // Said to the agent on one line.
        assert_eq!(
            answer.reason,
            Some(validator_text::one_line("not\ntoday")).filter(|r| !r.contains('\n'))
        );
        store.remove(&request.id);
        assert!(store.pending(None).is_empty());
        assert!(matches!(
            store.answer(&request.id, Choice::Approve, None, None),
            Err(ApprovalError::NotFound(_))
        ));
    }

    #[test]
    fn an_answer_for_another_call_or_through_a_link_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let input = json!({"command": "git push"});
        let request = store.create(&draft(&input), None).unwrap();
        let other = Request {
            input: json!({"command": "git push --force"}),
            ..request.clone()
        };
        store
            .answer(&request.id, Choice::Approve, None, None)
            .unwrap();
        assert!(store.answer_of(&other, None).is_err());
        let path = store.answer_path(&request.id);
        let real = dir.path().join("elsewhere");
        std::fs::rename(&path, &real).unwrap();
        std::os::unix::fs::symlink(&real, &path).unwrap();
        assert!(store.answer_of(&request, None).is_err());
    }

    #[test]
    fn with_a_key_only_signed_records_count() {
        let dir = tempfile::tempdir().unwrap();
        let key = key(dir.path());
        let store = Store::new(dir.path());
        let input = json!({"command": "git push"});
        let request = store.create(&draft(&input), Some(&key)).unwrap();
        // An answer written without the key (as a worker would) is refused.
        let forged = Answer {
            id: request.id.clone(),
            decision: Choice::Approve,
            reason: None,
            input_sha256: input_sha256(&input),
            answered_ms: now_ms(),
            signature: None,
        };
        std::fs::write(
            store.answer_path(&request.id),
            serde_json::to_vec(&forged).unwrap(),
        )
        .unwrap();
        assert!(store.answer_of(&request, Some(&key)).is_err());
        store
            .answer(&request.id, Choice::Approve, None, Some(&key))
            .unwrap();
        assert!(store.answer_of(&request, Some(&key)).unwrap().is_some());
        // A request planted without the key is neither listed nor answered.
        let planted = Request {
            id: "planted1".into(),
            signature: None,
            ..request.clone()
        };
        std::fs::write(
            store.request_path("planted1"),
            serde_json::to_vec(&planted).unwrap(),
        )
        .unwrap();
        assert_eq!(store.pending(Some(&key)).len(), 1);
        assert!(matches!(
            store.answer("planted1", Choice::Approve, None, Some(&key)),
            Err(ApprovalError::Forged(_))
        ));
    }

    #[test]
    fn ids_are_never_paths() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        for id in ["", "../x", "a/b", "a.json"] {
            assert!(matches!(store.load(id, None), Err(ApprovalError::BadId(_))));
        }
    }
}
