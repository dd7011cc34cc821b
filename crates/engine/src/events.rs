//! The event log (`<state>/events.jsonl`): one JSON object per line, appended, never rewritten.
//! Each event has a sortable unique id, the time, the task, the agent and what happened. A
//! crash can leave a torn last line; readers skip lines that do not parse, and the next writer
//! starts on a fresh line.
//!
//! The log is bounded: once it reaches the rules' `events.max_bytes` the writer that notices
//! renames it to `events.jsonl.1` (shifting the older ones up, dropping what is past `keep`)
//! and starts a new one. Writers in other processes (hooks, `check`) may hold the old file
//! open; rotation happens under a lock on that file, and a writer whose file is no longer the
//! log's reopens it, so no two writers rotate the same file and none goes on appending to a
//! rotated one for long.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::verdict::{Decision, Escalation, GateOutcome, Verdict};

use crate::error::Error;

pub const FILE_NAME: &str = "events.jsonl";

/// The smallest `events.max_bytes`: a rotation per event would be absurd.
pub const MIN_MAX_BYTES: u64 = 4096;
/// The most older logs `events.keep` may ask for.
pub const MAX_KEEP: u32 = 100;

/// How much of the log is kept (the rules file's `events:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// The log is rotated once it holds this many bytes.
    pub max_bytes: u64,
    /// Older logs kept beside it.
    pub keep: u32,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            max_bytes: 32 * 1024 * 1024,
            keep: 3,
        }
    }
}

/// The most of one log `read` reads.
const MAX_READ: u64 = 1024 * 1024 * 1024;

/// The name of the `n`-th older log (`events.jsonl.1` is the newest of them).
pub fn rotated_name(n: u32) -> String {
    format!("{FILE_NAME}.{n}")
}

/// What happened: the line's `event` name and its `details`, as `events.jsonl` holds them
/// (docs/events.md). Fields are in alphabetical order, as the log has always written them.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", content = "details", rename_all = "snake_case")]
pub enum Event<'a> {
    /// The watcher took up a done signal (not logged while a breaker holds the task).
    SignalSeen {
        sha256: Option<&'a str>,
    },
    /// The watcher started a run of the task's pipeline.
    RunStarted {
        attempt: u32,
        pipeline: &'a str,
    },
    GateStarted {
        gate: &'a str,
    },
    GateFinished {
        duration_ms: u64,
        gate: &'a str,
        outcome: GateOutcome,
        summary: &'a str,
    },
    /// The watcher wrote a verdict.
    VerdictWritten {
        attempt: u32,
        duration_ms: u64,
        reasons: &'a [String],
        verdict: Decision,
    },
    /// A circuit breaker tripped: the task waits for a person (reached as its contract says,
    /// where it names escalation paths).
    Escalated {
        breaker: Breaker,
        #[serde(skip_serializing_if = "Option::is_none")]
        escalation: Option<&'a Escalation>,
        reason: &'a str,
    },
    /// A run under a contract ended BLOCKED: a person decides, reached as the contract says.
    Blocked {
        #[serde(skip_serializing_if = "Option::is_none")]
        escalation: Option<&'a Escalation>,
        reason: &'a str,
    },
    /// A run broke its contract: a learning signal for the coordinator.
    ContractViolation {
        attempt: u32,
        detail: &'a str,
        gate: &'a str,
        /// Always `negative`: the decomposition that led here is to be penalised.
        impact: &'static str,
        kind: &'a str,
        /// The run it happened in (the same for each violation of one run).
        run: &'a str,
        /// The contract's `task_id`.
        task_id: &'a str,
    },
    /// What the run after a run that broke its contract did: `fixed`, `repeated` (a
    /// violation of a kind it broke before), `different` (other kinds) or `escalated` (it
    /// ended BLOCKED or ESCALATED).
    ContractFollowup {
        /// The kinds the run before broke.
        after: &'a [String],
        attempt: u32,
        outcome: &'static str,
        run: &'a str,
        task_id: &'a str,
    },
    /// A hook adapter took up an agent's stop.
    HookRun {
        attempt: u32,
        cwd: String,
        event: Option<&'a str>,
        message_bytes_left_out: usize,
        project: String,
        project_from: &'a str,
        sha256: Option<&'a str>,
        stop_hook_active: Option<bool>,
    },
    /// A hook adapter's answer to the agent.
    HookAnswered {
        answer: &'a str,
        attempt: u32,
        reasons: &'a [String],
        verdict: Decision,
    },
    /// A tool call refused before it ran (not an attempt: no breaker of the stop counts it).
    ToolDenied {
        tool: &'a str,
        reason: &'a str,
        /// The same refusal, this many times in a row.
        times: u32,
        /// The agent was stopped too.
        stopped: bool,
    },
    /// What a tool did, told to the agent at once: a change the stop would fail, or the same
    /// tool error again.
    ToolTold {
        tool: &'a str,
        message: &'a str,
    },
    /// A tool call a rule holds for a person waits for `validator approve` or `deny` (the
    /// agent cannot ask its person).
    ApprovalPending {
        agent: &'a str,
        command: &'a str,
        /// Milliseconds since the epoch past which it is no longer answered.
        deadline_ms: u64,
        id: &'a str,
        reason: &'a str,
        tool: &'a str,
    },
    /// A person's answer was taken by the call it covers (`approve`: it runs, as an allowed
    /// call does; `deny`: it is refused with the person's reason), or no one answered in time
    /// (`unanswered`: the call is refused; the request stays open until its deadline).
    ApprovalAnswered {
        decision: &'a str,
        id: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<&'a str>,
    },
    /// A stop the rules do not judge: the agent stopped unjudged.
    HookSkipped {
        event: Option<&'a str>,
        reason: &'a str,
    },
    /// `validator reset` cleared the task's attempts and breakers.
    Reset,
    ConfigReloaded {
        config: String,
    },
    /// Processes a killed watcher's gates left, killed before judging.
    OrphansKilled {
        processes: usize,
    },
    /// Something went wrong outside any verdict.
    Error(Problem),
}

impl<'a> Event<'a> {
    pub fn verdict_written(verdict: &'a Verdict) -> Self {
        Event::VerdictWritten {
            attempt: verdict.attempt,
            duration_ms: verdict.duration_ms,
            reasons: &verdict.reasons,
            verdict: verdict.verdict,
        }
    }
}

/// The circuit breaker that tripped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Breaker {
    MaxAttempts,
    Strikes,
    /// The same answer and patch, stop after stop.
    Drift,
    /// Past `max_tokens` or `max_time`.
    Budget,
}

/// What an `error` event's details say, by where it came from.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Problem {
    /// Judging a task failed.
    Error(String),
    /// Judging a task panicked (a bug in validator).
    Panic(String),
    /// The file watcher failed or overflowed.
    Watcher(String),
    /// The rules file was not reloaded.
    Config(String),
    /// A verdict could not be written.
    Unpublished(String),
    /// A done file could not be read.
    #[serde(untagged)]
    Unreadable { error: String, path: String },
}

/// One line of the log, as read back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Line {
    pub id: String,
    pub time: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    pub event: String,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub details: Value,
}

/// One line of the log, as written.
#[derive(Serialize)]
struct Written<'a> {
    id: String,
    time: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    task: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    agent: Option<&'a str>,
    #[serde(flatten)]
    event: Event<'a>,
}

/// An open event log, shared by the watcher's threads.
#[derive(Debug)]
pub struct EventLog {
    path: PathBuf,
    /// The file, the last id written (nanoseconds since the epoch) and how much is kept.
    /// `None` for a log that could not be opened (see [`EventLog::open_or_discard`]).
    file: Mutex<(Option<File>, u128, Retention)>,
}

impl EventLog {
    pub fn open(state_dir: &Path, retention: Retention) -> Result<Self, Error> {
        let path = state_dir.join(FILE_NAME);
        std::fs::create_dir_all(state_dir).map_err(|source| Error::Write {
            path: path.clone(),
            source,
        })?;
        let file = open_for_append(&path).map_err(|source| Error::Write {
            path: path.clone(),
            source,
        })?;
        Ok(EventLog {
            path,
            file: Mutex::new((Some(file), 0, retention)),
        })
    }

    /// The log, or, where it cannot be opened (a full or read-only disk), one that drops what
    /// is recorded, saying so once: for a hook, whose answer to the agent matters more than
    /// the history.
    pub fn open_or_discard(state_dir: &Path, retention: Retention) -> Self {
        EventLog::open(state_dir, retention).unwrap_or_else(|err| {
            tracing::error!(
                "the event log cannot be opened, so nothing of this run is logged: {}",
                crate::error::with_causes(&err)
            );
            EventLog {
                path: state_dir.join(FILE_NAME),
                file: Mutex::new((None, 0, retention)),
            }
        })
    }

    /// How much is kept from now on (the rules were reloaded).
    pub fn retain(&self, retention: Retention) {
        self.file.lock().unwrap_or_else(|p| p.into_inner()).2 = retention;
    }

    /// Appends an event. A log that cannot be written is reported on stderr, never fatal: the
    /// verdicts matter more than the history.
    pub fn record(&self, task: Option<&str>, agent: Option<&str>, event: Event<'_>) {
        let mut guard = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let (file, last_id, retention) = &mut *guard;
        let Some(log) = file.as_mut() else {
            return;
        };
        // The id is taken under the lock, so ids increase in file order; a clock that steps
        // back cannot make them repeat.
        let now = SystemTime::now();
        let nanos = now
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
            .max(*last_id + 1);
        *last_id = nanos;
        let line = Written {
            id: format!("{nanos:024x}"),
            time: crate::timestamp::millis(now),
            task,
            agent,
            event,
        };
        // Read by people (`tail`, `jq`) and by tools that show it: the worker's invisible and
        // bidirectional characters are `\u` escapes, as in every verdict.
        let mut text =
            validator_text::json_inert(&serde_json::to_string(&line).unwrap_or_default())
                .into_owned();
        text.push('\n');
        // One write per line, so a crash tears at most the last line.
        if let Err(err) = log.write_all(text.as_bytes()) {
            tracing::error!(path = %self.path.display(), %err, "cannot append to the event log");
        }
        let full = log
            .metadata()
            .is_ok_and(|meta| meta.len() >= retention.max_bytes);
        if full {
            match self.rotate(log, *retention) {
                Ok(reopened) => *log = reopened,
                Err(err) => {
                    tracing::error!(path = %self.path.display(), %err, "cannot rotate the event log")
                }
            }
        }
    }

    /// Rotates the log `current` (this writer's open file) if it is still the log and still
    /// full, under an exclusive lock on it; returns the log to append to from now on.
    fn rotate(&self, current: &File, retention: Retention) -> io::Result<File> {
        let _locked = Flock::lock(current.try_clone()?, FlockArg::LockExclusive)
            .map_err(|(_, errno)| io::Error::from(errno))?;
        let still_ours = is_at(current, &self.path);
        if still_ours && current.metadata()?.len() >= retention.max_bytes {
            let dir = self.path.parent().unwrap_or(Path::new("."));
            let keep = retention.keep;
            if keep == 0 {
                std::fs::remove_file(&self.path)?;
            } else {
                let _ = std::fs::remove_file(dir.join(rotated_name(keep)));
                for n in (1..keep).rev() {
                    match std::fs::rename(dir.join(rotated_name(n)), dir.join(rotated_name(n + 1)))
                    {
                        Err(err) if err.kind() != io::ErrorKind::NotFound => return Err(err),
                        _ => {}
                    }
                }
                std::fs::rename(&self.path, dir.join(rotated_name(1)))?;
            }
        }
        // Whoever rotated, the log is now a new file at the path.
        open_for_append(&self.path)
    }
}

/// Opens (or creates) the log for appending, never through a link, and starts it on a fresh
/// line if a crash tore the last one.
fn open_for_append(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    if !ends_with_newline(&mut file)? {
        file.write_all(b"\n")?;
    }
    Ok(file)
}

/// Whether `path` names the very file `file` has open.
fn is_at(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(open), Ok(named)) => open.ino() == named.ino() && open.dev() == named.dev(),
        _ => false,
    }
}

fn ends_with_newline(file: &mut File) -> io::Result<bool> {
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(true);
    }
    file.seek(SeekFrom::Start(len - 1))?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last)?;
    Ok(last[0] == b'\n')
}

/// Reads the whole events among the last `max_bytes` of the log (the first line there is
/// skipped as cut unless it starts the file), skipping lines that do not parse.
pub fn read_tail(state_dir: &Path, max_bytes: u64) -> io::Result<Vec<Line>> {
    let mut file = match validator_process::files::open(
        &state_dir.join(FILE_NAME),
        validator_process::files::Links::Refuse,
    ) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(err),
    };
    let len = file.metadata()?.len();
    let start = len.saturating_sub(max_bytes);
    file.seek(SeekFrom::Start(start))?;
    let mut lines = BufReader::new(file.take(max_bytes)).split(b'\n');
    if start > 0 {
        lines.next();
    }
    let mut events = Vec::new();
    for line in lines {
        if let Ok(event) = serde_json::from_slice::<Line>(&line?) {
            events.push(event);
        }
    }
    Ok(events)
}

/// Reads every whole event in the log, skipping lines that do not parse (a torn last line).
pub fn read(state_dir: &Path) -> io::Result<Vec<Line>> {
    let file = match validator_process::files::open(
        &state_dir.join(FILE_NAME),
        validator_process::files::Links::Refuse,
    ) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(err),
    };
    let mut events = Vec::new();
    // The log is bounded by its retention; a planted file is bounded here.
    for line in BufReader::new(file.take(MAX_READ)).split(b'\n') {
        if let Ok(event) = serde_json::from_slice::<Line>(&line?) {
            events.push(event);
        }
    }
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The typed events write the lines the log has always held: the names and detail keys
    /// that readers (people, `jq`, dashboards) rely on.
    #[test]
    fn events_are_written_as_their_names_and_details() {
        let json = |event: Event<'_>| {
            let mut value = serde_json::to_value(Written {
                id: String::new(),
                time: String::new(),
                task: None,
                agent: None,
                event,
            })
            .unwrap();
            let object = value.as_object_mut().unwrap();
            object.remove("id");
            object.remove("time");
            value
        };
        assert_eq!(
            json(Event::GateFinished {
                duration_ms: 5,
                gate: "lint",
                outcome: GateOutcome::Fail,
                summary: "2 findings",
            }),
            serde_json::json!({"event": "gate_finished", "details": {"gate": "lint", "outcome": "fail", "duration_ms": 5, "summary": "2 findings"}})
        );
        assert_eq!(json(Event::Reset), serde_json::json!({"event": "reset"}));
        let escalation = Escalation {
            blocked_contact: Some("coordinator".into()),
            scope_change_protocol: None,
        };
        assert_eq!(
            json(Event::Escalated {
                breaker: Breaker::Strikes,
                escalation: Some(&escalation),
                reason: "r"
            }),
            serde_json::json!({"event": "escalated", "details": {"breaker": "strikes", "escalation": {"blocked_contact": "coordinator"}, "reason": "r"}})
        );
        assert_eq!(
            json(Event::Escalated {
                breaker: Breaker::MaxAttempts,
                escalation: None,
                reason: "r"
            }),
            serde_json::json!({"event": "escalated", "details": {"breaker": "max_attempts", "reason": "r"}})
        );
        assert_eq!(
            json(Event::Error(Problem::Panic("p".into()))),
            serde_json::json!({"event": "error", "details": {"panic": "p"}})
        );
        assert_eq!(
            json(Event::Error(Problem::Unreadable {
                error: "e".into(),
                path: "x".into()
            })),
            serde_json::json!({"event": "error", "details": {"error": "e", "path": "x"}})
        );
        assert_eq!(
            json(Event::SignalSeen { sha256: None }),
            serde_json::json!({"event": "signal_seen", "details": {"sha256": null}})
        );
    }

    #[test]
    fn events_read_back_in_order_and_a_torn_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let log = EventLog::open(dir.path(), Retention::default()).unwrap();
        log.record(Some("a"), None, Event::SignalSeen { sha256: None });
        log.record(
            Some("a"),
            Some("claude"),
            Event::VerdictWritten {
                attempt: 1,
                duration_ms: 0,
                reasons: &[],
                verdict: Decision::Pass,
            },
        );
        drop(log);
        // A crash mid-write.
        let mut file = OpenOptions::new()
            .append(true)
            .open(dir.path().join(FILE_NAME))
            .unwrap();
        file.write_all(b"{\"id\": \"torn").unwrap();
        let log = EventLog::open(dir.path(), Retention::default()).unwrap();
        log.record(Some("b"), None, Event::SignalSeen { sha256: None });

        let events = read(dir.path()).unwrap();
        let names: Vec<_> = events
            .iter()
            .map(|e| (e.task.as_deref().unwrap(), e.event.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("a", "signal_seen"),
                ("a", "verdict_written"),
                ("b", "signal_seen")
            ]
        );
        assert!(events[0].id < events[1].id && events[1].id < events[2].id);
    }

    fn lines_in(dir: &Path, name: &str) -> usize {
        std::fs::read_to_string(dir.join(name))
            .map(|text| text.lines().filter(|l| !l.is_empty()).count())
            .unwrap_or(0)
    }

    #[test]
    fn the_log_rotates_at_its_cap_and_keeps_what_it_is_told() {
        let dir = tempfile::tempdir().unwrap();
        let small = Retention {
            max_bytes: MIN_MAX_BYTES,
            keep: 2,
        };
        let log = EventLog::open(dir.path(), small).unwrap();
        for i in 0..400 {
            log.record(
                Some("t"),
                None,
                Event::RunStarted {
                    attempt: i,
                    pipeline: "p",
                },
            );
        }
        let log_size = std::fs::metadata(dir.path().join(FILE_NAME)).unwrap().len();
        assert!(log_size < MIN_MAX_BYTES, "{log_size}");
        for kept in [rotated_name(1), rotated_name(2)] {
            assert!(lines_in(dir.path(), &kept) > 0, "{kept}");
        }
        assert!(!dir.path().join(rotated_name(3)).exists());
        // The newest event is in the log, whole.
        assert_eq!(
            read(dir.path()).unwrap().last().unwrap().details["attempt"],
            399
        );
    }

    #[test]
    fn writers_that_each_rotate_lose_no_event() {
        let dir = tempfile::tempdir().unwrap();
        let roomy = Retention {
            max_bytes: MIN_MAX_BYTES,
            keep: MAX_KEEP,
        };
        // Two logs on one directory, as a watcher and a hook process have.
        let (one, two) = (
            EventLog::open(dir.path(), roomy).unwrap(),
            EventLog::open(dir.path(), roomy).unwrap(),
        );
        std::thread::scope(|scope| {
            for log in [&one, &two] {
                scope.spawn(move || {
                    for i in 0..300 {
                        log.record(
                            Some("t"),
                            None,
                            Event::RunStarted {
                                attempt: i,
                                pipeline: "p",
                            },
                        );
                    }
                });
            }
        });
        let total: usize = std::iter::once(FILE_NAME.to_owned())
            .chain((1..=MAX_KEEP).map(rotated_name))
            .map(|name| lines_in(dir.path(), &name))
            .sum();
        assert_eq!(total, 600);
    }
}
