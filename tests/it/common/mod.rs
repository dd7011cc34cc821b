//! A small builder for integration tests: a temporary project with a rules file, a task
//! directory and a done signal, and the real `validator` binary run over it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;
use tempfile::TempDir;

pub mod pre_tool;

pub struct Project {
    pub root: TempDir,
}

/// A rules file with one pipeline named `main` holding `gates` (YAML list items, indented 6).
pub fn pipeline(gates: &str) -> String {
    format!("version: 1\nstate: state\npipelines:\n  - name: main\n    gates:\n{gates}")
}

impl Project {
    pub fn new() -> Self {
        let root = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(root.path().join("task")).expect("task dir");
        Project { root }
    }

    pub fn path(&self) -> &Path {
        self.root.path()
    }

    pub fn task_dir(&self) -> PathBuf {
        self.root.path().join("task")
    }

    pub fn rules_path(&self) -> PathBuf {
        self.root.path().join("validator.yaml")
    }

    /// Writes the rules file.
    pub fn rules(&self, yaml: &str) -> &Self {
        std::fs::write(self.rules_path(), yaml).expect("write rules");
        self
    }

    /// Writes a file relative to the project root (schemas, scripts).
    pub fn root_file(&self, rel: &str, content: &str) -> &Self {
        let path = self.root.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write");
        self
    }

    /// Writes a file in the task directory.
    pub fn file(&self, rel: &str, content: &str) -> &Self {
        let path = self.task_dir().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write");
        self
    }

    /// Writes the done signal (`task.done` beside the task directory).
    pub fn signal(&self, body: &str) -> &Self {
        std::fs::write(self.signal_path(), body).expect("write signal");
        self
    }

    pub fn signal_path(&self) -> PathBuf {
        self.root.path().join("task.done")
    }

    /// `validator check` over the task, with the signal if one was written.
    pub fn check(&self) -> Command {
        let mut cmd = validator();
        cmd.arg("check")
            .arg("-c")
            .arg(self.rules_path())
            .arg("--task-dir")
            .arg(self.task_dir());
        if self.signal_path().exists() {
            cmd.arg("--signal").arg(self.signal_path());
        }
        cmd
    }

    /// Runs `check --format json` and returns the exit code and the verdict document.
    pub fn verdict(&self) -> (i32, Value) {
        let mut cmd = self.check();
        cmd.args(["--format", "json"]);
        json_verdict(cmd)
    }
}

/// The real binary, with a clean environment for logging.
pub fn validator() -> Command {
    let mut cmd = Command::cargo_bin("validator").expect("binary");
    cmd.env_remove("VALIDATOR_CONFIG")
        .env_remove("VALIDATOR_LOG")
        .env("NO_COLOR", "1");
    cmd
}

/// The gate entry named `name` in a verdict.
pub fn gate<'v>(verdict: &'v Value, name: &str) -> &'v Value {
    verdict["gates"]
        .as_array()
        .and_then(|gates| gates.iter().find(|g| g["name"] == name))
        .unwrap_or_else(|| panic!("no gate {name} in {verdict:#}"))
}

/// Runs a prepared `validator` command (which must print JSON) and returns exit code and verdict.
pub fn json_verdict(mut cmd: Command) -> (i32, Value) {
    let output = cmd.output().expect("run validator");
    let code = output.status.code().expect("exit code");
    let verdict: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "stdout is not a verdict ({err}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (code, verdict)
}

/// A `lint` gate as one YAML list item; `extra` adds keys such as `on_fail: CONTINUE`.
pub fn lint(name: &str, run: &str, extra: &str) -> String {
    let extra = if extra.is_empty() {
        String::new()
    } else {
        format!(", {extra}")
    };
    format!("      - {{name: {name}, rule: lint, run: {run}{extra}}}\n")
}

/// A project whose one pipeline holds `gates`.
pub fn project(gates: &[String]) -> Project {
    let project = Project::new();
    project.rules(&pipeline(&gates.concat()));
    project
}

/// Removes the git variables a parent git process (a hook, a CI step) may have set, so git in
/// a test sees only the repository the test made.
pub fn isolate_git(cmd: &mut Command) {
    for var in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_CEILING_DIRECTORIES",
    ] {
        cmd.env_remove(var);
    }
}

/// Makes `dir` a repository of its own with everything in it committed.
pub fn commit_all(dir: &Path) {
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "base"]);
}

/// Runs git in `dir` with a fixed identity and no system or user configuration.
pub fn git(dir: &Path, args: &[&str]) {
    assert!(git_succeeds(dir, args), "git {args:?} failed");
}

/// As [`git`], saying whether it succeeded (a commit a hook may refuse).
pub fn git_succeeds(dir: &Path, args: &[&str]) -> bool {
    std::process::Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .status()
        .expect("run git")
        .success()
}

/// A verdict's reasons, one per line.
pub fn reasons(verdict: &Value) -> String {
    verdict["reasons"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// Copies a directory tree (an example) into `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read example") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

/// How long a test waits on a watcher before it gives up: it only stops a hung test, and a
/// passing run never waits it out. A watcher's start and each verdict it publishes wait on
/// the disk (the record written, the state, the feedback and the verdict each flushed with
/// fsync, then their directory). On a disk shared with other jobs, one fsync was measured
/// waiting 20 s behind their writeback (a probe doing only a write, an fsync, a rename and a
/// directory fsync saw 19.7 to 20.0 s several times while other builds wrote), so a bound of
/// 10 or 20 s is within reach of one such stall, and this is several.
pub const PATIENCE: std::time::Duration = std::time::Duration::from_secs(120);
/// [`PATIENCE`] as `validator wait --timeout` takes it.
pub const PATIENCE_ARG: &str = "120s";

/// Polls `cond` every 20 ms until it holds; false once `timeout` passed.
pub fn poll(timeout: std::time::Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A watcher process a test started, or none. Tests that crash and restart watchers take one
/// down with `kill9` or `sigterm` and start the next into the same slot.
#[derive(Default)]
pub struct Watching(Option<std::process::Child>);

impl Watching {
    pub fn set(&mut self, child: std::process::Child) {
        assert!(self.0.is_none(), "a watcher is already running");
        self.0 = Some(child);
    }

    pub fn pid(&self) -> u32 {
        self.0.as_ref().expect("a running watcher").id()
    }

    /// Whether the watcher process is still running.
    pub fn running(&mut self) -> bool {
        self.0
            .as_mut()
            .is_some_and(|child| child.try_wait().expect("try_wait").is_none())
    }

    /// The exit status once the watcher has exited on its own (it is then no longer held).
    pub fn try_wait(&mut self) -> Option<std::process::ExitStatus> {
        let exit = self.0.as_mut()?.try_wait().expect("try_wait");
        if exit.is_some() {
            self.0 = None;
        }
        exit
    }

    /// SIGKILL, as a crash, an OOM kill or `docker kill` would.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Sends SIGTERM and waits up to `timeout` for the watcher to exit; `None` if it did not.
    pub fn sigterm(&mut self, timeout: std::time::Duration) -> Option<std::process::ExitStatus> {
        self.stop_with("TERM", timeout)
    }

    /// Sends the signal `name` (`TERM`, `HUP`, ...) and waits up to `timeout` for the watcher
    /// to exit; `None` if it did not.
    pub fn stop_with(
        &mut self,
        name: &str,
        timeout: std::time::Duration,
    ) -> Option<std::process::ExitStatus> {
        let status = std::process::Command::new("kill")
            .args([&format!("-{name}"), &self.pid().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{name} failed");
        let child = self.0.as_mut().expect("a running watcher");
        let mut exit = None;
        poll(timeout, || {
            exit = child.try_wait().expect("try_wait");
            exit.is_some()
        });
        if exit.is_some() {
            self.0 = None;
        }
        exit
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// Which of `tasks` the task list of `validator status --format json` does not show with a
/// current verdict.
pub fn not_current<'a>(
    tasks: impl IntoIterator<Item = &'a String>,
    status: &[Value],
) -> Vec<String> {
    tasks
        .into_iter()
        .filter(|task| {
            !status
                .iter()
                .any(|s| s["task"] == task.as_str() && s["current"] == true)
        })
        .cloned()
        .collect()
}

/// Runs `validator -c <rules> ARGS` in `dir`, with nothing of the caller's validator settings.
pub fn cli(dir: &Path, rules: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_validator"))
        .arg("-c")
        .arg(rules)
        .args(args)
        .current_dir(dir)
        .env_remove("VALIDATOR_CONFIG")
        .env_remove("VALIDATOR_LOG")
        .env("NO_COLOR", "1")
        .output()
        .expect("run validator")
}

/// `validator rules check -c RULES`: the exit code and stderr.
pub fn rules_check(rules: &Path) -> (Option<i32>, String) {
    let output = validator()
        .args(["rules", "check", "-c"])
        .arg(rules)
        .output()
        .expect("run validator");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}
