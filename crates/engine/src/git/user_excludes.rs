//! The user's global excludes (`core.excludesFile`, by default `~/.config/git/ignore`), and when
//! they may hide files from the count of changes: only in a run that is the user's own, never
//! where a worker could have written them (under `watch`, an agent hook, `validator run`, a
//! confined call, an agent's shell, or a gate's command).

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::run::git_program;
use validator_process::{self as process, Exit};

/// The most of the excludes file that is read; past it, none of it counts.
const MAX_BYTES: u64 = 1024 * 1024;

/// Variables whose presence says the run is not the user's own: a worker's (validator's own
/// confinement, a watcher's or a gate's command, the broker) or an agent's shell (Claude Code,
/// Gemini CLI, Codex, OpenCode set these in the commands they run).
const NOT_THE_USERS: &[&str] = &[
    "VALIDATOR_CONFINED",
    "VALIDATOR_WATCHER",
    "VALIDATOR_BROKER",
    "VALIDATOR_TASK",
    "CLAUDECODE",
    "CLAUDE_CODE_ENTRYPOINT",
    "GEMINI_CLI",
    "CODEX_SANDBOX",
    "CODEX_SANDBOX_NETWORK_DISABLED",
    "CODEX_THREAD_ID",
    "OPENCODE",
];

/// The user's global excludes, as `git status` in the user's own shell reads them.
#[derive(Debug, Clone)]
pub struct UserExcludes {
    /// The file they were read from.
    pub path: PathBuf,
    pub rules: Vec<u8>,
}

impl UserExcludes {
    /// The user's global excludes, for a `validator check` of `task_dir` a person runs: `None`
    /// when it judges a worker's report (`worker_report`: `--signal`, `--request`) or a task in
    /// `staging` (where workers write), when the environment says the run is an agent's or a
    /// worker's (see [`NOT_THE_USERS`]), or when there are none. Only `validator check` asks;
    /// `watch`, the agent hooks and `validator run` never read them.
    pub fn for_own_check(
        staging: &Path,
        task_dir: &Path,
        worker_report: bool,
    ) -> Option<UserExcludes> {
        if worker_report {
            return None;
        }
        // A staging directory that is not there holds no task.
        let task = task_dir.canonicalize().ok()?;
        if let Ok(staging) = staging.canonicalize() {
            if task.starts_with(&staging) {
                return None;
            }
        }
        if let Some(var) = NOT_THE_USERS
            .iter()
            .find(|var| std::env::var_os(var).is_some())
        {
            tracing::debug!("the user's global excludes are not read: {var} is set");
            return None;
        }
        let path = configured().or_else(default_path)?;
        let rules = read_capped(&path)?;
        Some(UserExcludes { path, rules })
    }

    /// The path as it is shown: `~/…` under the home directory.
    pub fn shown(&self) -> String {
        match std::env::var_os("HOME")
            .map(PathBuf::from)
            .and_then(|home| self.path.strip_prefix(&home).ok().map(Path::to_path_buf))
        {
            Some(rel) => format!("~/{}", rel.display()),
            None => self.path.display().to_string(),
        }
    }
}

/// `core.excludesFile` from the user's global config, as git resolves it (`~` expanded). Only
/// config is read: no program runs.
fn configured() -> Option<PathBuf> {
    let git = git_program()?;
    let argv: Vec<OsString> = vec![
        git.into(),
        "config".into(),
        "--global".into(),
        "--includes".into(),
        "--path".into(),
        "--get".into(),
        "core.excludesFile".into(),
    ];
    let env: Vec<(OsString, OsString)> = vec![("GIT_CONFIG_NOSYSTEM".into(), "1".into())];
    let spec = process::Spec {
        argv: &argv,
        cwd: Path::new("/"),
        env: &env,
        env_remove: &["GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_DIR"],
        timeout: Duration::from_secs(5),
        output_cap: 64 * 1024,
        cancel: None,
        separate_stderr: true,
        sandbox: None,
    };
    let done = process::run(&spec).ok()?;
    if done.exit != Exit::Code(0) {
        return None;
    }
    let text = String::from_utf8(done.output).ok()?;
    let path = text.trim_end_matches('\n');
    (!path.is_empty()).then(|| PathBuf::from(path))
}

/// git's default: `$XDG_CONFIG_HOME/git/ignore`, else `$HOME/.config/git/ignore`.
fn default_path() -> Option<PathBuf> {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))?;
    Some(config.join("git").join("ignore"))
}

/// The file's contents, if it is a regular file within [`MAX_BYTES`].
fn read_capped(path: &Path) -> Option<Vec<u8>> {
    let file = std::fs::File::open(path).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > MAX_BYTES {
        return None;
    }
    let mut rules = Vec::new();
    file.take(MAX_BYTES).read_to_end(&mut rules).ok()?;
    (!rules.is_empty()).then_some(rules)
}
