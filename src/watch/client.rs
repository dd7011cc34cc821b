//! What the other commands read from (or write for) a watcher: `signal` writes a done file,
//! `wait` blocks until a task's verdict is current, `status` lists tasks. They read only the
//! verdicts directory, never a verdict file a worker could have written elsewhere.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use notify::{RecursiveMode, Watcher};
use serde::Serialize;

use super::state::TaskState;
use crate::config::Rules;
use crate::error::Error;
use crate::signal::Signal;
use crate::verdict::{Decision, Verdict};
use crate::{staging, task};

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
    crate::atomic::write(&path, text.as_bytes())?;
    Ok(path)
}

/// Blocks until `task` has a verdict that answers its current done signal, or `timeout` passes.
pub fn wait(rules: &Rules, task: &str, timeout: Duration) -> Result<Option<Verdict>, Error> {
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
        if let Some(verdict) = current_verdict(rules, task) {
            return Ok(Some(verdict));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(None);
        }
        let _ = rx.recv_timeout(left.min(Duration::from_millis(500)));
    }
}

/// The task's verdict, if it answers the done file as it is now.
pub fn current_verdict(rules: &Rules, task: &str) -> Option<Verdict> {
    let signal = Signal::read(&staging::done_path(&rules.staging, task)).ok()?;
    staging::read_verdict(&rules.verdicts, task)
        .filter(|verdict| staging::is_current(verdict, &signal))
}

/// One line of `validator status`.
#[derive(Debug, Serialize)]
pub struct TaskStatus {
    pub task: String,
    pub verdict: Option<Decision>,
    /// Whether the verdict answers the done file as it is now (false: a run is due or under way).
    pub current: bool,
    pub attempt: u32,
    pub max_attempts: u32,
    /// Seconds since the last verdict's run started.
    pub age_secs: Option<u64>,
    pub escalated: Option<String>,
}

/// Every task that has a done signal, a verdict or state.
pub fn status(rules: &Rules) -> Vec<TaskStatus> {
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
    names
        .into_iter()
        .map(|task| {
            let verdict = staging::read_verdict(&rules.verdicts, &task);
            let state = TaskState::load(&rules.state, &task);
            let age_secs = verdict
                .as_ref()
                .and_then(|v| humantime::parse_rfc3339(&v.started_at).ok())
                .and_then(|t| SystemTime::now().duration_since(t).ok())
                .map(|d| d.as_secs());
            TaskStatus {
                current: current_verdict(rules, &task).is_some(),
                verdict: verdict.as_ref().map(|v| v.verdict),
                attempt: verdict.as_ref().map_or(state.attempt, |v| v.attempt),
                max_attempts: rules.defaults.max_attempts,
                age_secs,
                escalated: state.escalated,
                task,
            }
        })
        .collect()
}
