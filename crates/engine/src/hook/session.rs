//! What an agent session remembers between its tool calls: when it began (for `max_time`), the
//! tokens its usage records count and how far each record was read (for `max_tokens`), and
//! per agent (the session's own, or a subagent) the refusal and the tool error it keeps
//! repeating and the breaches it has already been told of. One file per session,
//! `<state>/sessions/<key>.json`, read and written under a lock on `<key>.lock`: an agent may
//! run several tool hooks at once.
//!
//! The record may lie where the worker can write (the python pack keeps the state in the
//! project's `.validator`), so one that exists but cannot be read back (damaged, a link, not a
//! regular file, past its cap) is not taken for a fresh start, which would give the worker its
//! budgets back: the session is held until a person resets it ([`Held::unreadable`]). Only a
//! record that does not exist starts fresh.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

/// A session's record is small (its prompts at most 64 KiB, escaped at most six times that);
/// one larger was not written by validator.
const MAX_SESSION_BYTES: u64 = 1024 * 1024;
/// The usage source that holds what records dropped from a record cut to fit had counted
/// (no record has this name: records are absolute paths).
const DROPPED: &str = "(dropped records)";
/// Breaches remembered per agent as told; past it the oldest are forgotten (and may be told
/// again, which is harmless).
const MAX_TOLD: usize = 256;
/// Longest a tool hook waits for another of the same session to finish with the record.
const LOCK_WAIT: Duration = Duration::from_secs(3);

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Session {
    /// Unix seconds of the session's first hook call.
    pub first_seen: Option<u64>,
    pub usage: Usage,
    pub agents: BTreeMap<String, Memory>,
    /// The prompts the person submitted, the first and the latest (`prompt.rs`).
    pub prompts: Vec<String>,
    /// The agent was given the task's brief.
    pub briefed: bool,
}

/// The tokens a session's usage records count, and how far each was read.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Usage {
    pub total: u64,
    pub sources: BTreeMap<String, Source>,
}

/// How far one usage record (a transcript, a rollout file) was read, and what it counted.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct Source {
    /// Bytes read so far (a record that only grows is read from here on).
    pub offset: u64,
    /// The tokens counted from it so far.
    pub counted: u64,
    /// The message ids counted last (a message's lines repeat its usage).
    pub recent: Vec<String>,
    /// Which file was read (`st_dev`, `st_ino`): another file put in its place, even of the
    /// same length, is not the record read so far.
    pub file: Option<(u64, u64)>,
    /// A digest of the bytes just before `offset`: the same file rewritten where it was read is
    /// not the record read so far either.
    pub tail: Option<String>,
    /// The record the hook's input names (not a subagent's): never dropped to fit, as it is
    /// remembered from the first look on.
    pub main: bool,
}

impl Source {
    /// The main record, looked for and not yet read.
    pub fn main() -> Source {
        Source {
            main: true,
            ..Source::default()
        }
    }
}

/// What one agent of the session keeps repeating, and what it was told.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Memory {
    pub refusal: Option<Repeat>,
    pub tool_error: Option<Repeat>,
    pub told: Vec<String>,
}

/// Something that happened `times` times in a row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repeat {
    pub signature: String,
    pub times: u32,
}

impl Memory {
    /// Counts `signature` as the latest of `what`: one more if it repeats the last, else 1.
    pub fn repeat(what: &mut Option<Repeat>, signature: String) -> u32 {
        let times = match what {
            // `times` may come from a state file: at its ceiling it stays there.
            Some(last) if last.signature == signature => last.times.saturating_add(1),
            _ => 1,
        };
        *what = Some(Repeat { signature, times });
        times
    }

    /// Whether `breach` is new to this agent (and remembers it).
    pub fn first_time(&mut self, breach: &str) -> bool {
        if self.told.iter().any(|told| told == breach) {
            return false;
        }
        if self.told.len() == MAX_TOLD {
            self.told.remove(0);
        }
        self.told.push(breach.to_owned());
        true
    }
}

impl Session {
    /// The record as written, made to fit [`MAX_SESSION_BYTES`] first: a record past it would
    /// be read back as damaged and start the session's budgets over. What goes is what matters
    /// least: the breaches told (at worst told again), then the person's later prompts, then
    /// what agents keep repeating; when, usage and the first prompt stay.
    fn fitted(&mut self) -> Vec<u8> {
        loop {
            let bytes = serde_json::to_vec(self).unwrap_or_default();
            if bytes.len() as u64 <= MAX_SESSION_BYTES {
                return bytes;
            }
            if let Some(memory) = self
                .agents
                .values_mut()
                .filter(|memory| !memory.told.is_empty())
                .max_by_key(|memory| memory.told.len())
            {
                let keep = memory.told.len() / 2;
                memory.told.drain(..memory.told.len() - keep);
            } else if self.prompts.len() > 1 {
                self.prompts.truncate(1);
            } else if !self.agents.is_empty() {
                self.agents.clear();
            } else if self
                .usage
                .sources
                .values()
                .any(|source| !source.recent.is_empty())
            {
                // A message met again is counted again: over, never under.
                for source in self.usage.sources.values_mut() {
                    source.recent.clear();
                }
            } else if let droppables @ 2.. = self
                .usage
                .sources
                .iter()
                .filter(|(k, s)| droppable(k, s))
                .count()
            {
                // Where to read each on is lost, never what it counted: the total is the sum
                // of the sources, so the dropped ones' tokens are kept as one more (should a
                // dropped record be read again from its start, it counts twice: over, never
                // under). The main record is kept: it is known from its first look on.
                let keep = droppables / 2;
                let drop: Vec<String> = self
                    .usage
                    .sources
                    .iter()
                    .filter(|(key, source)| droppable(key, source))
                    .skip(keep)
                    .map(|(key, _)| key.clone())
                    .collect();
                let mut dropped = Source::default();
                for key in drop {
                    if let Some(source) = self.usage.sources.remove(&key) {
                        dropped.counted = dropped.counted.saturating_add(source.counted);
                    }
                }
                let kept = self.usage.sources.entry(DROPPED.into()).or_default();
                kept.counted = kept.counted.saturating_add(dropped.counted);
            } else {
                // Nothing counted is ever dropped: should the record still not fit, it is read
                // back as past its cap, and the session is held for a person.
                self.prompts.clear();
                return serde_json::to_vec(self).unwrap_or_default();
            }
        }
    }
}

/// Whether a usage source may be merged into [`DROPPED`] to make the record fit.
fn droppable(key: &str, source: &Source) -> bool {
    key != DROPPED && !source.main
}

/// A session's record, held locked from [`Held::open`] to [`Held::save`] (or drop).
pub struct Held {
    path: PathBuf,
    _lock: Option<Flock<std::fs::File>>,
    pub session: Session,
    /// The record as read: one the call did not change is not written again.
    read: Vec<u8>,
    /// Why the record there is cannot be read back, if it cannot: the session's budgets cannot
    /// be counted, and the record is left as it is for a person to look at.
    pub unreadable: Option<String>,
}

impl Held {
    /// The record of `key` under `state`, locked; a fresh one if there is none. One that is
    /// there but cannot be read back is [`Held::unreadable`], with a fresh record in its
    /// place for this call only (it is never saved over the one there). A lock held past
    /// [`LOCK_WAIT`], or one that cannot be taken, makes the record unreadable too: what this
    /// call counted could be lost to another's, so its budgets cannot be counted.
    pub fn open(state: &Path, key: &str) -> Held {
        let dir = state.join("sessions");
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join(format!("{key}.json"));
        let lock = lock(&dir.join(format!("{key}.lock")));
        let unlocked = lock.is_none().then(|| {
            format!(
                "the session's record cannot be locked (another hook call of the session has held it for more than {} s, or its lock file {} cannot be opened), so its budgets cannot be counted by this call",
                LOCK_WAIT.as_secs(),
                validator_text::name(&dir.join(format!("{key}.lock")).to_string_lossy())
            )
        });
        let (session, read, unreadable) = match read_back(&path) {
            Ok(Some((session, read))) => (session, read, None),
            Ok(None) => (Session::default(), Vec::new(), None),
            Err(why) => {
                tracing::warn!(path = %path.display(), %why, "a session's record cannot be read back");
                let shown = validator_text::name(&path.to_string_lossy()).to_string();
                let why = format!(
                    "the session's record {shown} cannot be read back ({why}), so its budgets \
                     (max_time, max_tokens, repeated refusals and tool errors) cannot be counted; a \
                     person looks at it, then runs `validator reset {key}` (with `-c` the rules \
                     file) to start the session over"
                );
                (Session::default(), Vec::new(), Some(why))
            }
        };
        Held {
            path,
            _lock: lock,
            session,
            read,
            unreadable: unreadable.or(unlocked),
        }
    }

    /// When the session began: its first hook call (this one, if it is the first).
    pub fn began(&mut self) -> u64 {
        *self.session.first_seen.get_or_insert_with(now)
    }

    /// What `agent` keeps repeating. A name past 128 bytes (the agent's string) is kept as its
    /// first characters and a hash of the whole, so no name can fill the record.
    pub fn memory(&mut self, agent: &str) -> &mut Memory {
        let key = if agent.len() <= 128 {
            agent.to_owned()
        } else {
            use sha2::{Digest, Sha256};
            let start: String = agent.chars().take(16).collect();
            format!("{start}…{:x}", Sha256::digest(agent.as_bytes()))
        };
        self.session.agents.entry(key).or_default()
    }

    pub fn save(mut self) {
        if self.unreadable.is_some() {
            // Written over, the record the worker damaged would be a fresh start next call.
            return;
        }
        let bytes = self.session.fitted();
        if bytes == self.read {
            return;
        }
        if let Err(err) = crate::replace::without_sync(&self.path, &bytes) {
            tracing::warn!("a session's record cannot be saved: {err}");
        }
    }

    /// Forgets the session (`validator reset`).
    pub fn remove(state: &Path, key: &str) {
        let dir = state.join("sessions");
        for file in [format!("{key}.json"), format!("{key}.lock")] {
            let _ = std::fs::remove_file(dir.join(file));
        }
    }
}

/// The record at `path` and its bytes; `None` if there is none. Anything else that is not a
/// record validator wrote (a link, no regular file, past its cap, empty, not its JSON) is
/// `Err`, with why.
fn read_back(path: &Path) -> Result<Option<(Session, Vec<u8>)>, String> {
    match std::fs::symlink_metadata(path) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err.to_string()),
        Ok(_) => {}
    }
    let read = validator_process::files::read(
        path,
        MAX_SESSION_BYTES,
        validator_process::files::Links::Refuse,
    )
    .map_err(|err| err.to_string())?;
    // `save` never writes an empty record (`{}` at least), and replaces it whole.
    if read.is_empty() {
        return Err("it is empty".into());
    }
    let session = serde_json::from_slice(&read).map_err(|err| format!("it is damaged: {err}"))?;
    Ok(Some((session, read)))
}

fn lock(path: &Path) -> Option<Flock<std::fs::File>> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let waited = Instant::now();
    let mut file = file;
    loop {
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(locked) => return Some(locked),
            Err((back, _)) if waited.elapsed() < LOCK_WAIT => {
                file = back;
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(_) => {
                tracing::warn!(path = %path.display(), "a session's record stayed locked");
                return None;
            }
        }
    }
}

/// Unix seconds now.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_survives_between_calls_and_counts_repeats() {
        let state = tempfile::tempdir().unwrap();
        let mut held = Held::open(state.path(), "hook-1");
        let began = held.began();
        let memory = held.memory("");
        assert_eq!(Memory::repeat(&mut memory.refusal, "a".into()), 1);
        assert_eq!(Memory::repeat(&mut memory.refusal, "a".into()), 2);
        assert!(memory.first_time("x"));
        held.save();
        let mut again = Held::open(state.path(), "hook-1");
        assert_eq!(again.began(), began);
        let memory = again.memory("");
        assert_eq!(Memory::repeat(&mut memory.refusal, "a".into()), 3);
        assert_eq!(Memory::repeat(&mut memory.refusal, "b".into()), 1);
        assert!(!memory.first_time("x"));
    }

    #[test]
    fn a_record_past_its_cap_is_cut_to_fit_keeping_when_and_how_much() {
        let state = tempfile::tempdir().unwrap();
        let mut held = Held::open(state.path(), "hook-2");
        let began = held.began();
        held.session.usage.total = 42;
        // Characters JSON writes as six bytes each.
        let long = "\u{1}".repeat(60_000);
        held.session.prompts = vec!["first".into(), long.clone(), long.clone()];
        held.memory(&long).told = vec![long.clone(); 4];
        held.save();
        let bytes = std::fs::read(state.path().join("sessions/hook-2.json")).unwrap();
        assert!(bytes.len() as u64 <= MAX_SESSION_BYTES, "{}", bytes.len());
        let mut again = Held::open(state.path(), "hook-2");
        assert!(again.unreadable.is_none(), "{:?}", again.unreadable);
        assert_eq!(again.began(), began);
        assert_eq!(again.session.usage.total, 42);
        assert_eq!(
            again.session.prompts.first().map(String::as_str),
            Some("first")
        );
    }

    #[test]
    fn a_record_there_but_unreadable_is_said_and_never_saved_over() {
        let state = tempfile::tempdir().unwrap();
        let fresh = Held::open(state.path(), "hook-3");
        assert!(fresh.unreadable.is_none());
        fresh.save();
        let path = state.path().join("sessions/hook-3.json");
        std::fs::write(&path, vec![b' '; MAX_SESSION_BYTES as usize + 1]).unwrap();
        let mut held = Held::open(state.path(), "hook-3");
        let why = held.unreadable.clone().unwrap();
        assert!(why.contains("validator reset hook-3"), "{why}");
        held.began();
        held.save();
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            MAX_SESSION_BYTES + 1
        );
    }

    #[test]
    fn a_record_another_call_keeps_locked_cannot_be_counted_and_is_not_saved() {
        let state = tempfile::tempdir().unwrap();
        let first = Held::open(state.path(), "s");
        assert!(first.unreadable.is_none());
        let second = Held::open(state.path(), "s");
        let why = second.unreadable.clone().unwrap();
        assert!(why.contains("cannot be locked"), "{why}");
        second.save();
        drop(first);
        assert!(Held::open(state.path(), "s").unreadable.is_none());
    }

    #[test]
    fn a_record_cut_to_fit_keeps_every_token_its_dropped_sources_counted() {
        let mut session = Session::default();
        for i in 0..2000 {
            session.usage.sources.insert(
                format!("/{}{i}", "r".repeat(600)),
                Source {
                    counted: 3,
                    ..Source::default()
                },
            );
        }
        let bytes = session.fitted();
        assert!(bytes.len() as u64 <= MAX_SESSION_BYTES);
        let sum: u64 = session.usage.sources.values().map(|s| s.counted).sum();
        assert_eq!(sum, 6000);
        assert!(session.usage.sources.len() < 2000);
    }

    #[test]
    fn a_repeat_count_from_a_state_file_stays_at_its_ceiling() {
        let mut last = Some(Repeat {
            signature: "a".into(),
            times: u32::MAX,
        });
        assert_eq!(Memory::repeat(&mut last, "a".into()), u32::MAX);
    }
}
