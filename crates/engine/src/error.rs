//! The library's error type: every failure that stops the validator from judging, carried as a
//! value with its context (file, line, column, the fix) and rendered once, at the edge. An
//! underlying I/O error is the `source`, not part of the message, so the edge's error chain
//! shows it once.

use std::fmt;
use std::path::PathBuf;

/// Anything that keeps the engine from producing a verdict at all.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("task directory {} does not exist or is not a directory\n  help: pass --task-dir with the directory the worker wrote its output to", path.display())]
    TaskDir { path: PathBuf },
    #[error("no pipeline in {} matches task `{task}`\n  help: add a pipeline without `tasks:`, widen a `tasks:` glob, or pass --pipeline NAME (pipelines: {available})", file.display())]
    NoPipeline {
        file: PathBuf,
        task: String,
        available: String,
    },
    #[error("no pipeline named `{name}` in {}\n  help: use one of: {available}", file.display())]
    UnknownPipeline {
        file: PathBuf,
        name: String,
        available: String,
    },
    #[error("cannot watch {}: {message}", path.display())]
    Watch { path: PathBuf, message: String },
    #[error("cannot serve metrics on {addr} (--metrics-addr): {reason}\n  help: {help}")]
    Metrics {
        addr: std::net::SocketAddr,
        reason: String,
        help: &'static str,
    },
    #[error("cannot install the handler of SIGTERM, SIGINT, SIGHUP and SIGQUIT")]
    Signals(#[source] std::io::Error),
    /// `named_by` says where the key file was named, `help` what to change there.
    #[error("cannot use the signing key {} ({named_by}): {reason}\n  help: {help}", path.display())]
    SigningKey {
        path: PathBuf,
        named_by: String,
        help: String,
        reason: String,
    },
    #[error("refusing the verdict {}: {why}\n  help: only a verdict the watcher signed with this key is trusted; make sure the watcher and this command use the same key ($VALIDATOR_KEY_FILE, or `signing_key_file:` in the rules file), then signal the task again for a fresh verdict", path.display())]
    Unverified { path: PathBuf, why: String },
    #[error(
        "invalid task name `{name}`: {reason}\n  help: task names are 1-128 characters of A-Z a-z 0-9 . _ - and do not start with `.`"
    )]
    TaskName { name: String, reason: &'static str },
    #[error(
        "cannot use the {agent} hook's input: {reason}\n  help: run `validator hook {agent}` as the agent's stop hook (examples/hooks), which sends its JSON on stdin; nothing was judged and the agent was not blocked"
    )]
    HookInput { agent: &'static str, reason: String },
}

/// A problem in a rules file, positioned where the user has to look.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
    pub help: Option<String>,
}

impl std::error::Error for ConfigError {}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        write!(f, ": {}", self.message)?;
        if let Some(help) = &self.help {
            write!(f, "\n  help: {help}")?;
        }
        Ok(())
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `err` with its causes, as one string: "cannot write x: No space left on device (os error
/// 28)". Where the error is logged rather than shown at the edge, the cause (the OS's reason)
/// is what a person acts on.
pub fn with_causes(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(next) = cause {
        text = format!("{text}: {next}");
        cause = next.source();
    }
    text
}
