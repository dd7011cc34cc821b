//! The event log (`<state>/events.jsonl`): one JSON object per line, appended, never rewritten.
//! Each event has a sortable unique id, the time, the task, the agent and what happened. A
//! crash can leave a torn last line; readers skip lines that do not parse, and the next writer
//! starts on a fresh line.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::Error;

pub const FILE_NAME: &str = "events.jsonl";

/// One line of the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
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

/// An open event log, shared by the watcher's threads.
#[derive(Debug)]
pub struct EventLog {
    path: PathBuf,
    /// The file and the last id written (nanoseconds since the epoch).
    file: Mutex<(File, u128)>,
}

impl EventLog {
    pub fn open(state_dir: &Path) -> Result<Self, Error> {
        let path = state_dir.join(FILE_NAME);
        let write_err = |source| Error::Write {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(state_dir).map_err(write_err)?;
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(&path)
            .map_err(write_err)?;
        if !ends_with_newline(&mut file).map_err(write_err)? {
            file.write_all(b"\n").map_err(write_err)?;
        }
        Ok(EventLog {
            path,
            file: Mutex::new((file, 0)),
        })
    }

    /// Appends an event. A log that cannot be written is reported on stderr, never fatal: the
    /// verdicts matter more than the history.
    pub fn record(&self, task: Option<&str>, agent: Option<&str>, event: &str, details: Value) {
        let mut log = self.file.lock().unwrap_or_else(|p| p.into_inner());
        // The id is taken under the lock, so ids increase in file order; a clock that steps
        // back cannot make them repeat.
        let now = SystemTime::now();
        let nanos = now
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
            .max(log.1 + 1);
        log.1 = nanos;
        let line = Event {
            id: format!("{nanos:024x}"),
            time: crate::timestamp::millis(now),
            task: task.map(str::to_owned),
            agent: agent.map(str::to_owned),
            event: event.to_owned(),
            details,
        };
        let mut text = serde_json::to_string(&line).unwrap_or_default();
        text.push('\n');
        // One write per line, so a crash tears at most the last line.
        if let Err(err) = log.0.write_all(text.as_bytes()) {
            tracing::error!(path = %self.path.display(), %err, "cannot append to the event log");
        }
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

/// Reads every whole event in the log, skipping lines that do not parse (a torn last line).
pub fn read(state_dir: &Path) -> io::Result<Vec<Event>> {
    let file = match File::open(state_dir.join(FILE_NAME)) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(err),
    };
    let mut events = Vec::new();
    for line in BufReader::new(file).split(b'\n') {
        if let Ok(event) = serde_json::from_slice::<Event>(&line?) {
            events.push(event);
        }
    }
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_read_back_in_order_and_a_torn_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let log = EventLog::open(dir.path()).unwrap();
        log.record(Some("a"), None, "signal_seen", Value::Null);
        log.record(
            Some("a"),
            Some("claude"),
            "verdict_written",
            serde_json::json!({"verdict": "PASS"}),
        );
        drop(log);
        // A crash mid-write.
        let mut file = OpenOptions::new()
            .append(true)
            .open(dir.path().join(FILE_NAME))
            .unwrap();
        file.write_all(b"{\"id\": \"torn").unwrap();
        let log = EventLog::open(dir.path()).unwrap();
        log.record(Some("b"), None, "signal_seen", Value::Null);

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
}
