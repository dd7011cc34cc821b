//! What the reliability tests share: a `validator watch` process over a temp project that the
//! test can start, SIGKILL and restart; a scan of /proc for the processes a gate started
//! (found by a marker in their environment, which every descendant inherits); a small seeded
//! random number generator; and the figures a long run prints.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::Value;
use sha2::{Digest, Sha256};
use tempfile::TempDir;

use crate::common::{Watching, poll};

pub const BIN: &str = env!("CARGO_BIN_EXE_validator");

/// The environment variable the tests' gates carry, so their processes can be found.
pub const MARK_VAR: &str = "RELIABILITY_MARK";

/// A value for [`MARK_VAR`] no other test (or test run) uses.
pub fn unique_mark(what: &str) -> String {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{what}-{}-{nanos}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    )
}

/// Live processes whose environment holds `RELIABILITY_MARK=<mark>`. A zombie (dead, not yet
/// reaped by whoever inherited it) has an empty environment and does not count.
pub fn survivors(mark: &str) -> Vec<u32> {
    let needle = format!("{MARK_VAR}={mark}");
    let mut found = Vec::new();
    for entry in fs::read_dir("/proc").expect("read /proc").flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
        else {
            continue;
        };
        if fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
            environ
                .split(|&b| b == 0)
                .any(|entry| entry == needle.as_bytes())
        }) {
            found.push(pid);
        }
    }
    found
}

/// Waits (up to 10 s, for a loaded machine to deliver the kills) until no process carries
/// `mark`; returns those that still do.
pub fn survivors_after_settling(mark: &str) -> Vec<u32> {
    let mut left = Vec::new();
    poll(Duration::from_secs(10), || {
        left = survivors(mark);
        left.is_empty()
    });
    left
}

/// `/proc/<pid>/cmdline` of each, for failure messages.
pub fn describe(pids: &[u32]) -> String {
    pids.iter()
        .map(|pid| {
            let cmdline = fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
                .unwrap_or_default();
            let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            format!(
                "{pid}: {cmdline} [{}]",
                stat.rsplit_once(')')
                    .map_or("", |(_, rest)| rest.trim())
                    .chars()
                    .take(40)
                    .collect::<String>()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Processes with `path` open.
pub fn holders(path: &Path) -> Vec<u32> {
    let Ok(target) = path.canonicalize() else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in fs::read_dir("/proc").expect("read /proc").flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let fds = fs::read_dir(entry.path().join("fd"))
            .into_iter()
            .flatten()
            .flatten();
        if fds
            .into_iter()
            .any(|fd| fs::read_link(fd.path()).is_ok_and(|l| l == target))
        {
            found.push(pid);
        }
    }
    found
}

/// Kills whatever carries `mark` when dropped, so a failing test leaves nothing running.
pub struct MarkGuard(pub String);

impl Drop for MarkGuard {
    fn drop(&mut self) {
        for pid in survivors(&self.0) {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

/// xorshift64*: enough randomness to pick moments and tasks, and replayable from its seed.
pub struct Rng(u64);

impl Rng {
    /// Seeded from `$env_var` if set (to replay a failure), else from the clock. The seed is
    /// printed, and a failing test shows it.
    pub fn from_env(env_var: &str) -> (Self, u64) {
        let seed = std::env::var(env_var)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64)
            })
            .max(1);
        eprintln!("{env_var}={seed}");
        (Rng(seed), seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    pub fn millis(&mut self, max: u64) -> Duration {
        Duration::from_millis(self.below(max + 1))
    }
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// A temp project (rules file, staging, verdicts and state outside staging) and at most one
/// `validator watch` over it, SIGKILLed when the value is dropped.
pub struct Sidecar {
    root: TempDir,
    child: Watching,
    starts: usize,
}

impl Sidecar {
    pub fn new(rules: &str) -> Self {
        let root = tempfile::tempdir().expect("temp dir");
        let sidecar = Sidecar {
            root,
            child: Watching::default(),
            starts: 0,
        };
        fs::write(sidecar.rules_path(), rules).expect("write rules");
        fs::create_dir_all(sidecar.staging()).expect("staging");
        // A subdirectory: the watcher watches the rules file's directory for hot reload.
        fs::create_dir_all(sidecar.path().join("logs")).expect("logs");
        sidecar
    }

    pub fn path(&self) -> &Path {
        self.root.path()
    }

    pub fn rules_path(&self) -> PathBuf {
        self.path().join("validator.yaml")
    }

    pub fn staging(&self) -> PathBuf {
        self.path().join("staging")
    }

    pub fn verdicts(&self) -> PathBuf {
        self.path().join("verdicts")
    }

    pub fn state(&self) -> PathBuf {
        self.path().join("state")
    }

    pub fn done_path(&self, task: &str) -> PathBuf {
        self.staging().join(format!("{task}.done"))
    }

    pub fn verdict_path(&self, task: &str) -> PathBuf {
        self.verdicts().join(format!("{task}.verdict.json"))
    }

    /// Creates `staging/<task>/` with `files` (relative path, content).
    pub fn task(&self, task: &str, files: &[(&str, &str)]) {
        let dir = self.staging().join(task);
        fs::create_dir_all(&dir).expect("task dir");
        for (rel, content) in files {
            fs::write(dir.join(rel), content).expect("task file");
        }
    }

    /// Spawns `validator watch -c <rules> ARGS` without waiting for it to be ready.
    pub fn spawn(&mut self, args: &[&str]) {
        self.spawn_with(args, &[]);
    }

    /// As [`Sidecar::spawn`], with `env` added to the watcher's environment.
    pub fn spawn_with(&mut self, args: &[&str], env: &[(&str, &str)]) {
        self.starts += 1;
        let (stdout, stderr) = self.log_paths(self.starts);
        let child = Command::new(BIN)
            .arg("watch")
            .arg("-c")
            .arg(self.rules_path())
            .args(args)
            .current_dir(self.path())
            .env_remove("VALIDATOR_CONFIG")
            .env("VALIDATOR_LOG", "info")
            .env("NO_COLOR", "1")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(fs::File::create(stdout).expect("stdout log"))
            .stderr(fs::File::create(stderr).expect("stderr log"))
            .spawn()
            .expect("spawn validator watch");
        self.child.set(child);
    }

    /// Spawns the watcher and waits until it says it is watching.
    pub fn start(&mut self, args: &[&str]) {
        self.start_with(args, &[]);
    }

    /// As [`Sidecar::start`], with `env` added to the watcher's environment.
    pub fn start_with(&mut self, args: &[&str], env: &[(&str, &str)]) {
        self.spawn_with(args, env);
        let stderr = self.log_paths(self.starts).1;
        let ready = poll(crate::common::PATIENCE, || {
            fs::read_to_string(&stderr).is_ok_and(|log| log.contains("watching"))
        });
        assert!(
            ready,
            "the watcher did not start in time\n{}\nprocesses holding {}:\n{}",
            self.logs(),
            self.state().join("watcher.json").display(),
            describe(&holders(&self.state().join("watcher.json")))
        );
    }

    fn log_paths(&self, start: usize) -> (PathBuf, PathBuf) {
        let logs = self.path().join("logs");
        (
            logs.join(format!("watch-{start}.stdout")),
            logs.join(format!("watch-{start}.stderr")),
        )
    }

    /// The last three watchers' output (tails), for failure messages.
    pub fn logs(&self) -> String {
        let mut text = String::new();
        for start in self.starts.saturating_sub(3) + 1..=self.starts {
            let (stdout, stderr) = self.log_paths(start);
            let tail = |path: PathBuf| {
                let text = fs::read_to_string(path).unwrap_or_default();
                let lines: Vec<&str> = text.lines().collect();
                lines[lines.len().saturating_sub(40)..].join("\n")
            };
            text += &format!(
                "--- watcher {start} stdout (tail) ---\n{}\n--- watcher {start} stderr (tail) ---\n{}\n",
                tail(stdout),
                tail(stderr)
            );
        }
        text
    }

    /// Every watcher's standard error.
    pub fn stderr(&self) -> String {
        (1..=self.starts)
            .map(|start| fs::read_to_string(self.log_paths(start).1).unwrap_or_default())
            .collect()
    }

    pub fn pid(&self) -> u32 {
        self.child.pid()
    }

    pub fn running(&mut self) -> bool {
        self.child.running()
    }

    pub fn kill9(&mut self) {
        self.child.kill9()
    }

    pub fn sigterm(&mut self, timeout: Duration) -> Option<ExitStatus> {
        self.child.sigterm(timeout)
    }

    /// Runs `validator -c <rules> ARGS`.
    pub fn cli(&self, args: &[&str]) -> Output {
        crate::common::cli(self.path(), &self.rules_path(), args)
    }

    /// `validator status --format json`.
    pub fn status(&self) -> Vec<Value> {
        let output = self.cli(&["status", "--format", "json"]);
        assert!(output.status.success(), "{output:?}");
        let status: Value = serde_json::from_slice(&output.stdout).expect("status JSON");
        status.as_array().expect("a list of tasks").clone()
    }

    /// Waits until `validator status` lists exactly `tasks`, each with a current verdict.
    pub fn wait_current(&self, tasks: &BTreeSet<String>, timeout: Duration, context: &str) {
        let mut last = Vec::new();
        let stale = |last: &[Value]| crate::common::not_current(tasks, last);
        let current = poll(timeout, || {
            last = self.status();
            stale(&last).is_empty()
        });
        let listed: BTreeSet<String> = last
            .iter()
            .filter_map(|s| s["task"].as_str().map(str::to_owned))
            .collect();
        if !current {
            let stale = stale(&last);
            panic!(
                "{context}: {} of {} signals have no current verdict after {timeout:?}, e.g. {:?}\n{}",
                stale.len(),
                tasks.len(),
                &stale[..stale.len().min(10)],
                self.logs()
            );
        }
        assert_eq!(&listed, tasks, "{context}: `status` lists other tasks");
    }

    /// Every line of `state/events.jsonl`, each of which must be a JSON event.
    pub fn events(&self) -> Vec<Value> {
        let text = fs::read_to_string(self.state().join("events.jsonl")).unwrap_or_default();
        text.lines()
            .filter(|line| !line.is_empty())
            .map(|line| {
                let event: Value = serde_json::from_str(line)
                    .unwrap_or_else(|err| panic!("an event line is not JSON ({err}): {line}"));
                for key in ["id", "time", "event"] {
                    assert!(event[key].is_string(), "an event without {key}: {line}");
                }
                event
            })
            .collect()
    }

    /// `/proc/<watcher>/io`'s `rchar`: the bytes the watcher has read so far, by any call.
    pub fn bytes_read(&self) -> u64 {
        let io = fs::read_to_string(format!("/proc/{}/io", self.pid())).expect("read /proc/PID/io");
        io.lines()
            .find_map(|line| line.strip_prefix("rchar: "))
            .and_then(|n| n.trim().parse().ok())
            .expect("rchar in /proc/PID/io")
    }
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// The ids of `events` increase in log order: the log is appended in order, across restarts.
pub fn assert_ids_increase(events: &[Value]) {
    for pair in events.windows(2) {
        let (a, b) = (pair[0]["id"].as_str(), pair[1]["id"].as_str());
        assert!(
            a < b,
            "event ids do not increase:\n{}\n{}",
            pair[0],
            pair[1]
        );
    }
}
