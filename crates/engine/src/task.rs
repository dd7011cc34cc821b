//! A task: the name, the directory holding the worker's output, the attempt number and the
//! done signal that asked for this run. Everything a rule may look at comes through here.

use std::path::{Path, PathBuf};

use crate::done::Signal;
use crate::error::Error;

/// A task's handoff contract as its readers need it: a reviewer, and the verdict's `unchecked`
/// criteria and `context`.
#[derive(Debug, Clone, Default)]
pub struct Handoff {
    pub path: PathBuf,
    /// The contract as written.
    pub source: String,
    /// The success criteria no gate checks: a person must.
    pub unchecked: Vec<String>,
    /// The contract's context as text: as written, or its labelled fields one per line.
    pub context: Option<String>,
    /// Whom the worker turns to when stuck, and how it asks for a wider scope.
    pub escalation: Option<crate::verdict::Escalation>,
}

/// One unit of work to judge.
#[derive(Debug, Clone)]
pub struct Task {
    pub name: String,
    /// Canonical path of the task directory; every path a rule touches stays below it.
    pub dir: PathBuf,
    pub attempt: u32,
    pub signal: Signal,
    /// Paths inside `dir` that belong to the validator or the protocol (the done file, the state
    /// and verdict directories, the task's own verdict and feedback files), each exactly: rules
    /// treat them as if they were not there. Never a pattern, which a worker's own file could
    /// be named to match.
    pub ignore: Vec<PathBuf>,
    /// What the coordinator's handoff contract for this task says to those who read the
    /// verdict or review the work, if there is a contract.
    pub contract: Option<std::sync::Arc<Handoff>>,
    /// The highest directory the worker writes: the task directory, or the staging directory
    /// holding it under `watch` (the worker writes its done file there). A repository found in
    /// it is the worker's, never the operator's.
    pub worker_area: PathBuf,
    /// What the person who set the task asked for, in their own words, where the front end
    /// knows it (the prompts a hook saw the user submit): the ground truth a reviewer starts
    /// from, never the worker's summary of it.
    pub request: Option<String>,
    /// What is delivered is counted from here instead of HEAD (a push: the commit the remote
    /// already has), for every gate whose `base` is HEAD.
    pub since: Option<Since>,
}

/// The commit a push's changes are counted from, and how the summary names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Since {
    /// `None`: the remote has none of the pushed history, so every file is new.
    pub commit: Option<String>,
    pub shown: String,
    /// The pushed commit: its committed ignore rules say which untracked files are not the
    /// push's (none of them is delivered).
    pub delivered: String,
}

impl Task {
    /// A task over `dir`, which must exist. The attempt starts at 1 and there is no signal.
    pub fn new(name: impl Into<String>, dir: &Path) -> Result<Self, Error> {
        let name = name.into();
        validate_name(&name)?;
        let dir = dir
            .canonicalize()
            .ok()
            .filter(|d| d.is_dir())
            .ok_or_else(|| Error::TaskDir {
                path: dir.to_path_buf(),
            })?;
        Ok(Task {
            name,
            worker_area: dir.clone(),
            dir,
            attempt: 1,
            signal: Signal::none(),
            ignore: Vec::new(),
            contract: None,
            request: None,
            since: None,
        })
    }

    pub fn with_signal(mut self, signal: Signal) -> Self {
        self.signal = signal;
        self
    }

    pub fn with_attempt(mut self, attempt: u32) -> Self {
        self.attempt = attempt.max(1);
        self
    }

    pub fn with_request(mut self, request: Option<String>) -> Self {
        self.request = request;
        self
    }

    pub fn with_since(mut self, since: Option<Since>) -> Self {
        self.since = since;
        self
    }

    pub fn with_contract(mut self, contract: Option<Handoff>) -> Self {
        self.contract = contract.map(std::sync::Arc::new);
        self
    }

    /// The worker also writes `area`, a directory holding the task directory (staging).
    pub fn with_worker_area(mut self, area: &Path) -> Self {
        if let Ok(area) = area.canonicalize() {
            if self.dir.starts_with(&area) {
                self.worker_area = area;
            }
        }
        self
    }

    /// Whether `path` (which need not exist) lies where the worker writes: the task directory
    /// or the area around it, as resolved, or on the way there: a name inside the task (a
    /// link the worker made, to anywhere) is the worker's to point elsewhere.
    pub fn worker_may_write(&self, path: &Path) -> bool {
        let inside = |p: &Path| p.starts_with(&self.worker_area) || p.starts_with(&self.dir);
        let Ok(path) = std::path::absolute(path) else {
            return true;
        };
        path.canonicalize().is_ok_and(|real| inside(&real))
            || path.ancestors().any(|at| {
                match (at.parent().map(Path::canonicalize), at.file_name()) {
                    (Some(Ok(parent)), Some(name)) => inside(&parent.join(name)),
                    _ => false,
                }
            })
    }

    /// Whether rules must not see `rel` (a `/`-separated path inside the task directory).
    pub fn is_ignored(&self, rel: &str) -> bool {
        let path = self.dir.join(rel);
        self.ignore.iter().any(|ignored| path.starts_with(ignored))
    }

    /// Hides `path` (a file or directory, which need not exist yet) from the rules if it lies
    /// inside the task directory: that exact path, never what a link put there points at (a
    /// link at a verdict's path must not hide the worker's files).
    pub fn ignoring(mut self, path: &Path) -> Self {
        let exact = match (path.parent().map(Path::canonicalize), path.file_name()) {
            (Some(Ok(dir)), Some(name)) => dir.join(name),
            _ => path.to_path_buf(),
        };
        if exact.starts_with(&self.dir) && exact != self.dir {
            self.ignore.push(exact);
        }
        self
    }
}

/// Checks a task name against the staging protocol: `[A-Za-z0-9._-]{1,128}`, no leading `.`.
pub fn validate_name(name: &str) -> Result<(), Error> {
    let reason = if name.is_empty() {
        Some("it is empty")
    } else if name.len() > 128 {
        Some("it is longer than 128 characters")
    } else if name.starts_with('.') {
        Some("it starts with `.`")
    } else if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        Some("it has a character other than A-Z a-z 0-9 . _ -")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(Error::TaskName {
            name: name.chars().take(160).collect(),
            reason,
        }),
        None => Ok(()),
    }
}

/// A valid task name made from any directory name, for one-shot runs over arbitrary directories.
pub fn name_from_dir(dir: &Path) -> String {
    let raw = dir
        .canonicalize()
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let cleaned: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(128)
        .collect();
    let cleaned = cleaned.trim_start_matches('.').to_owned();
    if cleaned.is_empty() {
        "task".into()
    } else {
        cleaned
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_names_follow_the_protocol() {
        for good in ["svc-auth", "a", "task_3.v2", &"x".repeat(128)] {
            assert!(validate_name(good).is_ok(), "{good}");
        }
        for bad in ["", ".hidden", "a/b", "a b", "$(x)", &"x".repeat(129), "é"] {
            assert!(validate_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn directory_names_become_valid_task_names() {
        assert_eq!(name_from_dir(Path::new("/")), "task");
        let dir = tempfile::Builder::new()
            .prefix(".my task$")
            .tempdir()
            .unwrap();
        let name = name_from_dir(dir.path());
        assert!(validate_name(&name).is_ok(), "{name}");
    }
}
