// `validator watch` as a sidecar runs: a real watcher process over a temp directory, done
// signals written beside it, verdicts read back from a verdicts directory outside staging.
// Every test owns its directory and its watcher; a watcher never outlives its test (SIGKILL on
// drop). Waiting is done by polling for a condition, never by sleeping for a guessed time.
// Each behaviour runs twice (`in_both_modes!`): with OS notifications and with the polling
// fallback (`--poll`), which a watcher uses where the OS refuses a watch.

use crate::common;
use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::common::{PATIENCE, Watching, poll, reasons};
use serde_json::Value;
use tempfile::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_validator");

/// A gate that needs `STATUS: OK` in the done signal.
const STATUS: &str = "      - {name: status, rule: status}\n";
/// A gate that needs `out.txt` in the task directory.
const OUT: &str = "      - {name: out, rule: exists, paths: [\"out.txt\"]}\n";
/// How long any single verdict may take to appear before a test gives up.
const VERDICT_TIMEOUT: &str = common::PATIENCE_ARG;

/// A `lint` gate running `script` under `sh -c` (the script is the test's, not a worker's).
fn sh_gate(name: &str, script: &str) -> String {
    format!("      - {{name: {name}, rule: lint, run: [\"sh\", \"-c\", \"{script}\"]}}\n")
}

/// A `lint` gate that runs `first`, then holds until the test creates `release` in the task
/// directory, so the test decides when the run ends (the bound only stops a hung test).
fn held_gate(name: &str, first: &str) -> String {
    sh_gate(
        name,
        &format!(
            "{first} i=0; while [ ! -e release ] && [ $i -lt 2400 ]; do sleep 0.05; i=$((i+1)); done; [ -e release ]"
        ),
    )
}

/// Lets every run of a [`held_gate`] over `task` end.
fn release(w: &Watcher, task: &str) {
    fs::write(w.staging().join(task).join("release"), "").expect("release the gate");
}

/// A rules file with verdicts and state outside staging; `defaults` is a YAML line or empty.
fn rules(defaults: &str, gates: &str) -> String {
    format!(
        "version: 1\nstaging: staging\nverdicts: verdicts\nstate: state\n{defaults}pipelines:\n  - name: main\n    gates:\n{gates}"
    )
}

/// Writes `bytes` to `target` through a temporary file in the same directory and a rename, as
/// `validator signal` does: a watcher never reads half of it.
fn write_atomic(target: &Path, bytes: &[u8]) {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let temp = target
        .parent()
        .expect("parent")
        .join(format!(".test-tmp-{}-{n}", std::process::id()));
    fs::write(&temp, bytes).expect("write temp file");
    fs::rename(&temp, target).expect("rename temp file");
}

/// The hex SHA-256 of a file, by the `sha256sum` program.
fn sha256sum(path: &Path) -> String {
    let output = Command::new("sha256sum")
        .arg(path)
        .output()
        .expect("run sha256sum");
    assert!(output.status.success(), "sha256sum {}", path.display());
    String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .next()
        .expect("a hash")
        .to_owned()
}

/// Whether process `pid` is gone or a zombie (dead, not yet reaped).
fn dead(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
    }
}

/// How a watcher learns of signals: OS notifications (inotify), or the fallback that polls
/// the staging directory (`--poll`, also used where the OS refuses a watch).
#[derive(Debug, Clone, Copy)]
enum Mode {
    Notify,
    Poll,
}

impl Mode {
    fn args(self) -> &'static [&'static str] {
        match self {
            Mode::Notify => &[],
            Mode::Poll => &["--poll", "100ms"],
        }
    }
}

/// Runs each named watcher test (a `fn(Mode)`) twice, as `NAME::notify` and `NAME::poll`: the
/// polling fallback must pass the same tests as notifications.
macro_rules! in_both_modes {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[test]
                fn notify() {
                    super::$name(super::Mode::Notify);
                }

                #[test]
                fn poll() {
                    super::$name(super::Mode::Poll);
                }
            }
        )*
    };
}

in_both_modes!(
    pass_and_fail_verdicts_go_to_the_verdicts_directory,
    attempts_count_retries_and_a_pass_resets_them,
    max_attempts_escalates_and_reset_starts_over,
    the_same_failure_three_times_escalates,
    an_escalated_task_answers_new_signals_without_growing,
    signals_made_while_the_watcher_was_down_are_run_at_start,
    a_crash_mid_gate_reruns_the_signal_as_the_same_attempt,
    bad_done_files_never_stop_the_watcher,
    an_oversized_signal_is_answered_by_its_own_hash,
    an_empty_done_file_is_a_signal,
    done_files_that_are_links_fifos_or_from_before_1970_are_answered,
    a_second_signal_within_the_same_second_is_seen,
    sigterm_when_idle_exits_0,
    sigterm_during_a_slow_gate_kills_it_after_the_grace_period,
    sighup_and_sigquit_stop_the_watcher_as_sigterm_does,
    signals_during_a_run_coalesce_into_one_more_run,
    wait_exit_codes_follow_the_verdict,
    event_ids_increase_in_log_order_with_parallel_runs,
    the_event_log_records_every_step,
    rules_reload_and_a_broken_rules_file_keeps_the_previous_rules,
    staging_removed_and_recreated_is_watched_again,
    a_forged_verdict_beside_the_signal_is_not_trusted,
    deleting_the_verdict_and_backdating_the_signal_is_a_new_attempt,
    hot_reload_works_with_a_relative_rules_path,
    the_watcher_holds_a_task_to_its_contract_and_logs_the_violations,
    a_retry_in_the_watcher_reruns_only_the_gates_whose_inputs_changed,
    the_agent_loop_example_feeds_the_feedback_back_until_the_work_passes,
    the_agent_loop_signals_the_agents_last_message_and_never_runs_it_past_the_breaker,
    watch_says_what_it_watches_and_a_rules_file_saved_in_place_reloads_once_whole,
);

/// A temp project with a rules file, a staging directory and (once started) a watcher.
struct Watcher {
    root: TempDir,
    child: Watching,
    starts: usize,
    mode: Mode,
}

impl Watcher {
    /// A project whose rules file is `yaml`; no watcher runs yet. Each watcher started over it
    /// learns of signals the `mode` way.
    fn new(mode: Mode, yaml: &str) -> Self {
        let root = tempfile::tempdir().expect("temp dir");
        let watcher = Watcher {
            root,
            child: Watching::default(),
            starts: 0,
            mode,
        };
        fs::write(watcher.rules_path(), yaml).expect("write rules");
        fs::create_dir_all(watcher.staging()).expect("staging");
        // Logs go in a subdirectory: the watcher watches the project root (not recursively).
        fs::create_dir_all(watcher.root.path().join("logs")).expect("logs");
        watcher
    }

    /// A project whose rules file is `yaml`, with a watcher started with `args`.
    fn started(mode: Mode, yaml: &str, args: &[&str]) -> Self {
        let mut watcher = Watcher::new(mode, yaml);
        watcher.start(args);
        watcher
    }

    fn path(&self) -> &Path {
        self.root.path()
    }

    fn rules_path(&self) -> PathBuf {
        self.path().join("validator.yaml")
    }

    fn staging(&self) -> PathBuf {
        self.path().join("staging")
    }

    fn verdicts(&self) -> PathBuf {
        self.path().join("verdicts")
    }

    fn state(&self) -> PathBuf {
        self.path().join("state")
    }

    fn done_path(&self, task: &str) -> PathBuf {
        self.staging().join(format!("{task}.done"))
    }

    fn verdict_path(&self, task: &str) -> PathBuf {
        self.verdicts().join(format!("{task}.verdict.json"))
    }

    /// Replaces the rules file atomically (temp file + rename), as a careful operator does.
    fn write_rules(&self, yaml: &str) {
        write_atomic(&self.rules_path(), yaml.as_bytes());
    }

    /// Spawns `validator watch -c <rules> ARGS` and waits until it says it is watching.
    fn start(&mut self, args: &[&str]) {
        self.starts += 1;
        let (stdout, stderr) = self.log_paths(self.starts);
        let child = Command::new(BIN)
            .arg("watch")
            .arg("-c")
            .arg(self.rules_path())
            .args(args)
            .args(self.mode.args())
            .current_dir(self.path())
            .env_remove("VALIDATOR_CONFIG")
            .env("VALIDATOR_LOG", "info")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(fs::File::create(stdout).expect("stdout log"))
            .stderr(fs::File::create(&stderr).expect("stderr log"))
            .spawn()
            .expect("spawn validator watch");
        self.child.set(child);
        let ready = poll(PATIENCE, || {
            fs::read_to_string(&stderr).is_ok_and(|log| log.contains("watching"))
        });
        if !ready {
            panic!(
                "the watcher did not start within {PATIENCE:?}\n{}",
                self.logs()
            );
        }
    }

    fn log_paths(&self, start: usize) -> (PathBuf, PathBuf) {
        let logs = self.path().join("logs");
        (
            logs.join(format!("watch-{start}.stdout")),
            logs.join(format!("watch-{start}.stderr")),
        )
    }

    /// Everything every watcher of this project printed, for failure messages.
    fn logs(&self) -> String {
        let mut text = String::new();
        for start in 1..=self.starts {
            let (stdout, stderr) = self.log_paths(start);
            text += &format!(
                "--- watcher {start} stdout ---\n{}\n--- watcher {start} stderr ---\n{}\n",
                fs::read_to_string(stdout).unwrap_or_default(),
                fs::read_to_string(stderr).unwrap_or_default()
            );
        }
        text
    }

    /// The stderr of every watcher of this project.
    fn stderr(&self) -> String {
        (1..=self.starts)
            .map(|start| fs::read_to_string(self.log_paths(start).1).unwrap_or_default())
            .collect()
    }

    fn running(&mut self) -> bool {
        self.child.running()
    }

    fn kill9(&mut self) {
        self.child.kill9()
    }

    fn sigterm(&mut self, timeout: Duration) -> Option<ExitStatus> {
        self.child.sigterm(timeout)
    }

    /// Creates `staging/<task>/` with `files` (relative path, content).
    fn task(&self, task: &str, files: &[(&str, &str)]) {
        let dir = self.staging().join(task);
        fs::create_dir_all(&dir).expect("task dir");
        for (rel, content) in files {
            fs::write(dir.join(rel), content).expect("task file");
        }
    }

    /// Writes the task's done file atomically with `body`.
    fn signal(&self, task: &str, body: &str) {
        write_atomic(&self.done_path(task), body.as_bytes());
    }

    /// Runs `validator -c <rules> ARGS` in the project directory.
    fn cli(&self, args: &[&str]) -> Output {
        common::cli(self.path(), &self.rules_path(), args)
    }

    /// `validator wait TASK --format json`: the exit code and the current verdict. The verdict
    /// must answer the done file as it is now (its hash, checked here by `sha256sum` too).
    fn wait_verdict(&self, task: &str) -> (i32, Value) {
        let (code, verdict) = self.wait_unchecked(task);
        assert_eq!(
            verdict["signal"]["sha256"].as_str(),
            Some(sha256sum(&self.done_path(task)).as_str()),
            "the verdict of {task} does not answer its done file: {verdict:#}"
        );
        (code, verdict)
    }

    /// Polls `verdicts/<task>.verdict.json` every 20 ms until it parses and its `signal.sha256`
    /// is the hash of the done file (for tests whose done bodies are all different).
    fn poll_verdict(&self, task: &str, timeout: Duration) -> Value {
        let sha = sha256sum(&self.done_path(task));
        let mut verdict = Value::Null;
        let found = poll(timeout, || {
            verdict = fs::read(self.verdict_path(task))
                .ok()
                .and_then(|bytes| serde_json::from_slice(&bytes).ok())
                .unwrap_or(Value::Null);
            verdict["signal"]["sha256"] == sha.as_str()
        });
        assert!(
            found,
            "no current verdict for {task} within {timeout:?}; last: {verdict}\n{}",
            self.logs()
        );
        verdict
    }

    /// `validator wait TASK --format json` without checking the hash independently.
    fn wait_unchecked(&self, task: &str) -> (i32, Value) {
        let output = self.cli(&[
            "wait",
            task,
            "--timeout",
            VERDICT_TIMEOUT,
            "--format",
            "json",
        ]);
        let verdict: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
            panic!(
                "no current verdict for {task} ({err}); wait exited {:?}\nstdout:\n{}\nstderr:\n{}\n{}",
                output.status.code(),
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr),
                self.logs()
            )
        });
        assert_eq!(verdict["task"], task, "{verdict:#}");
        (output.status.code().expect("exit code"), verdict)
    }

    /// Signals `task` with `body` and waits for the verdict that answers it.
    fn judge(&self, task: &str, body: &str) -> (i32, Value) {
        self.signal(task, body);
        self.wait_verdict(task)
    }

    /// Every event in `state/events.jsonl`; every line must be a JSON object.
    fn events(&self) -> Vec<Value> {
        let text = fs::read_to_string(self.state().join("events.jsonl")).unwrap_or_default();
        text.lines()
            .filter(|line| !line.trim().is_empty())
            .map(|line| {
                serde_json::from_str(line)
                    .unwrap_or_else(|err| panic!("event line is not JSON ({err}): {line}"))
            })
            .collect()
    }

    /// The events named `event` for `task`.
    fn events_of(&self, task: &str, event: &str) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|e| e["task"] == task && e["event"] == event)
            .collect()
    }

    /// Waits until an event matching `pred` is in the log.
    fn wait_event(&self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let mut found = None;
        poll(PATIENCE, || {
            found = self.events().into_iter().find(|e| pred(e));
            found.is_some()
        });
        found.unwrap_or_else(|| {
            panic!(
                "no {what} event within {PATIENCE:?}; events:\n{}\n{}",
                self.events()
                    .iter()
                    .map(Value::to_string)
                    .collect::<Vec<_>>()
                    .join("\n"),
                self.logs()
            )
        })
    }

    /// `validator status --format json`.
    fn status(&self) -> Vec<Value> {
        let output = self.cli(&["status", "--format", "json"]);
        assert!(output.status.success(), "{output:?}");
        let status: Value = serde_json::from_slice(&output.stdout).expect("status JSON");
        status.as_array().expect("a list of tasks").clone()
    }

    /// Waits until each of `tasks` has a current verdict (by `validator status`); returns them.
    fn wait_all_current(&self, tasks: &[String], timeout: Duration) -> Vec<Value> {
        let deadline = Instant::now() + timeout;
        let verdicts = self.verdicts();
        let without_verdict = || -> Vec<&String> {
            tasks
                .iter()
                .filter(|t| !verdicts.join(format!("{t}.verdict.json")).exists())
                .collect()
        };
        if !poll(timeout, || without_verdict().is_empty()) {
            let missing = without_verdict();
            let sizes: Vec<_> = missing
                .iter()
                .take(10)
                .map(|t| (t, fs::metadata(self.done_path(t)).map(|m| m.len()).ok()))
                .collect();
            panic!(
                "{} of {} tasks have no verdict after {timeout:?}; e.g. (task, done file size) {sizes:?}\n{}",
                missing.len(),
                tasks.len(),
                self.logs()
            );
        }
        let mut last = Vec::new();
        let not_current = |last: &[Value]| common::not_current(tasks, last);
        let current = poll(deadline.saturating_duration_since(Instant::now()), || {
            last = self.status();
            not_current(&last).is_empty()
        });
        if !current {
            let stale = not_current(&last);
            panic!(
                "{} of {} tasks have a verdict but not a current one after {timeout:?}; e.g. {:?}\n{}",
                stale.len(),
                tasks.len(),
                &stale[..stale.len().min(10)],
                self.logs()
            );
        }
        last.retain(|s| tasks.iter().any(|t| s["task"] == t.as_str()));
        last
    }

    /// Every file and directory under `dir`, relative, sorted.
    fn listing(dir: &Path) -> Vec<String> {
        fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
            for entry in fs::read_dir(dir).expect("read dir").flatten() {
                let path = entry.path();
                out.push(
                    path.strip_prefix(base)
                        .expect("prefix")
                        .display()
                        .to_string(),
                );
                if path.is_dir() {
                    walk(base, &path, out);
                }
            }
        }
        let mut out = Vec::new();
        walk(dir, dir, &mut out);
        out.sort();
        out
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.kill9();
    }
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i:03}")).collect()
}

// ---------------------------------------------------------------------------------------------
// 1. PASS and FAIL; feedback; nothing written into staging.

fn pass_and_fail_verdicts_go_to_the_verdicts_directory(mode: Mode) {
    let w = Watcher::started(mode, &rules("", &format!("{STATUS}{OUT}")), &[]);
    w.task("t1", &[("out.txt", "done")]);
    w.task("t2", &[("notes.txt", "no out.txt here")]);

    let (code, pass) = w.judge("t1", "STATUS: OK\n");
    assert_eq!(
        (code, pass["verdict"].as_str()),
        (0, Some("PASS")),
        "{pass:#}"
    );
    assert_eq!(pass["schema"], "validator.verdict/v1");
    assert_eq!(pass["attempt"], 1);

    let (code, fail) = w.judge("t2", "STATUS: OK\n");
    assert_eq!(
        (code, fail["verdict"].as_str()),
        (1, Some("FAIL")),
        "{fail:#}"
    );
    assert!(reasons(&fail).contains("out"), "{fail:#}");

    for task in ["t1", "t2"] {
        let feedback = w.verdicts().join(format!("{task}.feedback.md"));
        let text = fs::read_to_string(&feedback)
            .unwrap_or_else(|err| panic!("{}: {err}", feedback.display()));
        assert!(!text.trim().is_empty(), "empty feedback for {task}");
        assert!(
            text.lines().count() <= 60,
            "feedback for {task} has {} lines",
            text.lines().count()
        );
        let on_disk: Value =
            serde_json::from_slice(&fs::read(w.verdict_path(task)).expect("verdict file"))
                .expect("verdict JSON");
        assert_eq!(on_disk["task"], task);
    }
    assert!(fail_feedback_names_the_gate(&w, "t2"));

    assert_eq!(
        Watcher::listing(&w.staging()),
        [
            "t1",
            "t1.done",
            "t1/out.txt",
            "t2",
            "t2.done",
            "t2/notes.txt"
        ],
        "the watcher wrote into staging"
    );
    assert_eq!(
        Watcher::listing(&w.verdicts()),
        [
            "t1.feedback.md",
            "t1.verdict.json",
            "t2.feedback.md",
            "t2.verdict.json"
        ]
    );
}

fn fail_feedback_names_the_gate(w: &Watcher, task: &str) -> bool {
    fs::read_to_string(w.verdicts().join(format!("{task}.feedback.md")))
        .is_ok_and(|text| text.contains("FAIL") && text.contains("out"))
}

// ---------------------------------------------------------------------------------------------
// 2. Attempts count up per signal and start again after a PASS.

fn attempts_count_retries_and_a_pass_resets_them(mode: Mode) {
    let w = Watcher::started(
        mode,
        &rules("defaults: {max_attempts: 5, strikes: 100}\n", OUT),
        &[],
    );
    w.task("t", &[]);

    let (code, v) = w.judge("t", "STATUS: OK\nSUMMARY: first\n");
    assert_eq!(
        (code, v["verdict"].as_str(), v["attempt"].as_u64()),
        (1, Some("FAIL"), Some(1))
    );

    // The same body again, later: a touch asks for a new run.
    std::thread::sleep(Duration::from_millis(20));
    let (code, v) = w.judge("t", "STATUS: OK\nSUMMARY: first\n");
    assert_eq!(
        (code, v["verdict"].as_str(), v["attempt"].as_u64()),
        (1, Some("FAIL"), Some(2)),
        "{v:#}"
    );

    let (code, v) = w.judge("t", "STATUS: OK\nSUMMARY: third\n");
    assert_eq!(
        (v["verdict"].as_str(), v["attempt"].as_u64()),
        (Some("FAIL"), Some(3))
    );
    assert_eq!(code, 1);

    w.task("t", &[("out.txt", "fixed")]);
    let (code, v) = w.judge("t", "STATUS: OK\nSUMMARY: fixed\n");
    assert_eq!(
        (code, v["verdict"].as_str(), v["attempt"].as_u64()),
        (0, Some("PASS"), Some(4)),
        "{v:#}"
    );

    fs::remove_file(w.staging().join("t/out.txt")).unwrap();
    let (code, v) = w.judge("t", "STATUS: OK\nSUMMARY: broke it again\n");
    assert_eq!(
        (code, v["verdict"].as_str(), v["attempt"].as_u64()),
        (1, Some("FAIL"), Some(1)),
        "a PASS resets the attempts: {v:#}"
    );
}

// ---------------------------------------------------------------------------------------------
// 3. and 4. Circuit breakers.

fn max_attempts_escalates_and_reset_starts_over(mode: Mode) {
    let w = Watcher::started(
        mode,
        &rules(
            "defaults: {max_attempts: 2, strikes: 100}\n",
            "      - {name: files, rule: exists, paths: [\"a.txt\", \"b.txt\", \"c.txt\"]}\n",
        ),
        &[],
    );
    let dir = w.staging().join("t");
    w.task("t", &[("a.txt", "a")]);
    let (code, v1) = w.judge("t", "try 1");
    assert_eq!((code, v1["attempt"].as_u64()), (1, Some(1)), "{v1:#}");

    fs::remove_file(dir.join("a.txt")).unwrap();
    w.task("t", &[("b.txt", "b")]);
    let (code, v2) = w.judge("t", "try 2");
    assert_eq!((code, v2["attempt"].as_u64()), (1, Some(2)), "{v2:#}");
    assert_ne!(
        v1["gates"][0]["findings"], v2["gates"][0]["findings"],
        "the failures should differ"
    );

    fs::remove_file(dir.join("b.txt")).unwrap();
    w.task("t", &[("c.txt", "c")]);
    let (code, v3) = w.judge("t", "try 3");
    assert_eq!(
        (code, v3["verdict"].as_str(), v3["attempt"].as_u64()),
        (4, Some("ESCALATED"), Some(3)),
        "{v3:#}"
    );
    assert!(reasons(&v3).contains("max_attempts"), "{v3:#}");
    assert!(!w.events_of("t", "escalated").is_empty());

    let reset = w.cli(&["reset", "t"]);
    assert!(reset.status.success(), "{reset:?}");
    w.task("t", &[("a.txt", "a"), ("b.txt", "b")]);
    let (code, v4) = w.judge("t", "after reset");
    assert_eq!(
        (code, v4["verdict"].as_str(), v4["attempt"].as_u64()),
        (0, Some("PASS"), Some(1)),
        "after a reset the next signal runs again as attempt 1: {v4:#}"
    );
}

fn the_same_failure_three_times_escalates(mode: Mode) {
    let w = Watcher::started(
        mode,
        &rules("defaults: {max_attempts: 10, strikes: 3}\n", OUT),
        &[],
    );
    w.task("t", &[]);
    for attempt in 1..=2 {
        let (code, v) = w.judge("t", &format!("try {attempt}"));
        assert_eq!(
            (code, v["verdict"].as_str(), v["attempt"].as_u64()),
            (1, Some("FAIL"), Some(attempt)),
            "{v:#}"
        );
    }
    let (code, v) = w.judge("t", "try 3");
    assert_eq!(
        (code, v["verdict"].as_str(), v["attempt"].as_u64()),
        (4, Some("ESCALATED"), Some(3)),
        "{v:#}"
    );
    let escalated = w.events_of("t", "escalated");
    assert_eq!(escalated.len(), 1, "{escalated:?}");
    assert_eq!(escalated[0]["details"]["breaker"], "strikes");
}

// ---------------------------------------------------------------------------------------------
// 5. and 6. Nothing is lost across a restart or a crash.

fn signals_made_while_the_watcher_was_down_are_run_at_start(mode: Mode) {
    let mut w = Watcher::new(mode, &rules("", &format!("{STATUS}{OUT}")));
    let tasks = names("t", 5);
    for task in &tasks {
        w.task(task, &[("out.txt", "x")]);
        w.signal(task, "STATUS: OK\n");
    }
    w.start(&[]);
    for task in &tasks {
        let (code, v) = w.wait_verdict(task);
        assert_eq!((code, v["verdict"].as_str()), (0, Some("PASS")), "{v:#}");
    }
    assert_eq!(Watcher::listing(&w.verdicts()).len(), 10);
}

fn a_crash_mid_gate_reruns_the_signal_as_the_same_attempt(mode: Mode) {
    let mut w = Watcher::started(
        mode,
        &rules("", &format!("{OUT}{}", held_gate("slow", "echo $$ > pid;"))),
        &[],
    );
    w.task("t", &[("out.txt", "x")]);
    w.signal("t", "STATUS: OK\n");
    // The gate is running once it has written its pid.
    let pid_file = w.staging().join("t/pid");
    let mut pid = None;
    let running = poll(PATIENCE, || {
        pid = fs::read_to_string(&pid_file)
            .ok()
            .and_then(|p| p.trim().parse::<i32>().ok());
        pid.is_some()
    });
    assert!(running, "the slow gate never started\n{}", w.logs());
    w.kill9();
    assert!(
        !w.verdict_path("t").exists(),
        "no verdict before the gate ended"
    );
    // The orphaned gate (its own process group) is no longer anyone's: do not let it linger.
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", pid.unwrap())])
        .status();

    release(&w, "t");
    w.start(&[]);
    let (code, v) = w.wait_verdict("t");
    assert_eq!(
        (code, v["verdict"].as_str(), v["attempt"].as_u64()),
        (0, Some("PASS"), Some(1)),
        "{v:#}"
    );
    let on_disk: Value =
        serde_json::from_slice(&fs::read(w.verdict_path("t")).unwrap()).expect("verdict parses");
    assert_eq!(on_disk, v);
    w.wait_event("verdict_written", |e| {
        e["task"] == "t" && e["event"] == "verdict_written"
    });
    assert_eq!(w.events_of("t", "verdict_written").len(), 1);
    let runs = w.events_of("t", "run_started");
    assert_eq!(
        runs.len(),
        2,
        "one run before the crash, one after: {runs:?}"
    );
    assert!(
        runs.iter().all(|r| r["details"]["attempt"] == 1),
        "{runs:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// 7. A burst of signals.

fn burst(n: usize, args: &[&str], bound: Duration) {
    let mut w = Watcher::new(Mode::Notify, &rules("", &format!("{STATUS}{OUT}")));
    let tasks = names("t", n);
    for task in &tasks {
        w.task(task, &[("out.txt", "x")]);
    }
    w.start(args);
    // As fast as possible, and as a worker would: straight into the done file.
    for task in &tasks {
        fs::write(w.done_path(task), "STATUS: OK\n").expect("done file");
    }
    let statuses = w.wait_all_current(&tasks, bound);
    assert_eq!(statuses.len(), n);
    let not_pass: Vec<_> = statuses
        .iter()
        .filter(|s| s["verdict"] != "PASS")
        .take(5)
        .collect();
    assert!(not_pass.is_empty(), "{not_pass:?}");
    assert!(w.running(), "{}", w.logs());
    let errors: Vec<_> = w
        .events()
        .into_iter()
        .filter(|e| e["event"] == "error")
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn a_burst_of_500_signals_gets_500_current_verdicts() {
    burst(500, &["--jobs", "2"], Duration::from_secs(60));
}

#[test]
fn polling_a_burst_of_100_signals() {
    burst(
        100,
        &["--jobs", "2", "--poll", "100ms"],
        Duration::from_secs(30),
    );
}

// ---------------------------------------------------------------------------------------------
// 8. Untrusted done files.

fn bad_done_files_never_stop_the_watcher(mode: Mode) {
    let mut w = Watcher::started(mode, &rules("", &format!("{STATUS}{OUT}")), &[]);
    for task in ["broken", "big", "good"] {
        w.task(task, &[("out.txt", "x")]);
    }
    fs::write(w.staging().join("bad name.done"), "STATUS: OK\n").unwrap();
    fs::write(w.staging().join(".hidden.done"), "STATUS: OK\n").unwrap();
    w.signal("broken", "{nope");
    let mut big = "STATUS: OK\n".to_owned();
    big.push_str(&"x".repeat(2 * 1024 * 1024));
    w.signal("big", &big);

    let (code, broken) = w.wait_verdict("broken");
    assert_eq!(
        (code, broken["verdict"].as_str()),
        (1, Some("FAIL")),
        "{broken:#}"
    );
    assert!(reasons(&broken).contains("JSON"), "{broken:#}");

    // The hash is checked on its own in `an_oversized_signal_is_answered_by_its_own_hash`.
    let (code, big) = w.wait_unchecked("big");
    assert_eq!(
        (code, big["verdict"].as_str()),
        (1, Some("FAIL")),
        "{big:#}"
    );
    assert!(
        reasons(&big).contains("KiB"),
        "the verdict says why: {big:#}"
    );

    assert!(w.running(), "{}", w.logs());
    let (code, good) = w.judge("good", "STATUS: OK\n");
    assert_eq!(
        (code, good["verdict"].as_str()),
        (0, Some("PASS")),
        "{good:#}"
    );

    let bad = w.wait_event("error for `bad name.done`", |e| {
        e["event"] == "error"
            && e["details"]["path"]
                .as_str()
                .is_some_and(|p| p.ends_with("bad name.done"))
    });
    assert!(bad["task"].is_null(), "{bad}");
    let verdicts = Watcher::listing(&w.verdicts());
    assert!(
        verdicts.iter().all(|f| ["broken.", "big.", "good."]
            .iter()
            .any(|t| f.starts_with(t))),
        "no verdict for a bad task name: {verdicts:?}"
    );
    assert!(w.running(), "{}", w.logs());
}

/// docs/staging.md and docs/verdict.md: a verdict is current when its `signal.sha256` matches the done file; that is
/// the SHA-256 of the file a client hashes, however long it is.
fn an_oversized_signal_is_answered_by_its_own_hash(mode: Mode) {
    let w = Watcher::started(mode, &rules("", OUT), &[]);
    w.task("big", &[("out.txt", "x")]);
    w.signal("big", &"y".repeat(2 * 1024 * 1024));
    let (code, verdict) = w.wait_verdict("big");
    assert_eq!(code, 1, "{verdict:#}");
}

/// docs/staging.md and docs/signal.md: the done file may be empty (`touch staging/t.done`).
fn an_empty_done_file_is_a_signal(mode: Mode) {
    let w = Watcher::started(mode, &rules("", OUT), &[]);
    w.task("t", &[("out.txt", "x")]);
    fs::File::create(w.done_path("t")).expect("create an empty done file");
    let v = w.poll_verdict("t", PATIENCE);
    assert_eq!(v["verdict"], "PASS", "{v:#}");
}

/// A done file that is a link (to the signing key, say) is not followed, a FIFO is not waited
/// on, and one dated before 1970 is judged like any other: each gets a verdict that `wait`
/// finds current, and the watcher judges on.
fn done_files_that_are_links_fifos_or_from_before_1970_are_answered(mode: Mode) {
    let mut w = Watcher::started(mode, &rules("", STATUS), &["--jobs", "1"]);
    let secret = w.path().join("key");
    fs::write(&secret, "STATUS: OK\nTOP-SECRET\n").expect("secret");
    std::os::unix::fs::symlink(&secret, w.done_path("linked")).expect("link");
    let made = Command::new("mkfifo")
        .arg(w.done_path("fifo"))
        .status()
        .expect("mkfifo");
    assert!(made.success());
    for (task, why) in [
        ("linked", "links are not followed"),
        ("fifo", "a FIFO, not a regular file"),
    ] {
        let (code, verdict) = w.wait_unchecked(task);
        assert_eq!(code, 1, "{task}: {verdict:#}");
        assert!(reasons(&verdict).contains(why), "{task}: {verdict:#}");
        assert!(!verdict.to_string().contains("TOP-SECRET"), "{verdict:#}");
    }
    w.signal("old", "STATUS: OK\n");
    let old = std::time::UNIX_EPOCH - Duration::from_secs(10 * 365 * 86_400);
    fs::File::options()
        .write(true)
        .open(w.done_path("old"))
        .and_then(|file| file.set_modified(old))
        .expect("backdate");
    let (code, verdict) = w.wait_verdict("old");
    assert_eq!(code, 0, "{verdict:#}");
    assert!(
        verdict["signal"]["mtime"]
            .as_str()
            .is_some_and(|t| t.starts_with("1960-")),
        "{verdict:#}"
    );
    assert_eq!(w.status().len(), 3);
    assert!(w.running(), "{}", w.logs());
    let health = w.cli(&["status", "--health"]);
    assert!(health.status.success(), "{health:?}");
}

/// A worker that keeps touching the done file of a task a breaker holds gets the same answer
/// each time, for its new signal, but counts no attempt and adds nothing to the event log.
fn an_escalated_task_answers_new_signals_without_growing(mode: Mode) {
    let w = Watcher::started(mode, &rules("defaults: {max_attempts: 1}\n", OUT), &[]);
    w.task("t", &[]);
    assert_eq!(w.judge("t", "first\n").0, 1);
    let (code, verdict) = w.judge("t", "second\n");
    assert_eq!(code, 4, "{verdict:#}");
    // The escalating run's last event follows its verdict file: count the log once it landed.
    w.wait_event("verdict_written ESCALATED", |e| {
        e["task"] == "t"
            && e["event"] == "verdict_written"
            && e["details"]["verdict"] == "ESCALATED"
    });
    let logged = w.events().len();
    for i in 0..20 {
        let (code, verdict) = w.judge("t", &format!("again {i}\n"));
        assert_eq!(code, 4, "{verdict:#}");
        assert_eq!(verdict["attempt"], 2, "{verdict:#}");
    }
    assert_eq!(w.events().len(), logged, "the event log grew");
}

/// docs/staging.md: writing the done file again asks for a new run, however soon after the last one.
/// The two signals here are given modification times within the same second, as two quick
/// writes have.
fn a_second_signal_within_the_same_second_is_seen(mode: Mode) {
    let w = Watcher::started(mode, &rules("", OUT), &[]);
    w.task("t", &[]);
    let second = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        - 60;
    let at = |millis: u64| {
        std::time::UNIX_EPOCH + Duration::from_secs(second) + Duration::from_millis(millis)
    };
    let signal_at = |body: &str, mtime| {
        let temp = w.staging().join(".test-tmp-signal");
        fs::write(&temp, body).unwrap();
        fs::File::options()
            .write(true)
            .open(&temp)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        fs::rename(&temp, w.done_path("t")).unwrap();
    };

    signal_at("first", at(100));
    let v = w.poll_verdict("t", PATIENCE);
    assert_eq!(
        (v["verdict"].as_str(), v["attempt"].as_u64()),
        (Some("FAIL"), Some(1))
    );

    w.task("t", &[("out.txt", "fixed")]);
    signal_at("second", at(600));
    let v = w.poll_verdict("t", PATIENCE);
    assert_eq!(
        (v["verdict"].as_str(), v["attempt"].as_u64()),
        (Some("PASS"), Some(2)),
        "{v:#}"
    );
}

// ---------------------------------------------------------------------------------------------
// 9. SIGTERM.

fn sigterm_when_idle_exits_0(mode: Mode) {
    let mut w = Watcher::started(mode, &rules("", OUT), &[]);
    let status = w.sigterm(PATIENCE);
    let status =
        status.unwrap_or_else(|| panic!("still running {PATIENCE:?} after SIGTERM\n{}", w.logs()));
    assert_eq!(status.code(), Some(0), "{status:?}\n{}", w.logs());
}

fn sigterm_during_a_slow_gate_kills_it_after_the_grace_period(mode: Mode) {
    a_stop_signal_during_a_slow_gate_kills_it_after_the_grace_period(mode, "TERM");
}

/// A closed terminal (SIGHUP) or Ctrl-\ (SIGQUIT) must not kill the watcher outright and leave
/// its gate running: it stops as on SIGTERM.
fn sighup_and_sigquit_stop_the_watcher_as_sigterm_does(mode: Mode) {
    a_stop_signal_during_a_slow_gate_kills_it_after_the_grace_period(mode, "HUP");
    a_stop_signal_during_a_slow_gate_kills_it_after_the_grace_period(mode, "QUIT");
}

fn a_stop_signal_during_a_slow_gate_kills_it_after_the_grace_period(mode: Mode, signal: &str) {
    let mut w = Watcher::started(
        mode,
        &rules(
            "",
            &sh_gate(
                "slow",
                "echo $$ > sh.pid; sleep 30 & echo $! > sleep.pid.tmp; mv sleep.pid.tmp sleep.pid; wait",
            ),
        ),
        &["--grace", "500ms"],
    );
    w.task("t", &[]);
    w.signal("t", "STATUS: OK\n");
    let sleep_pid = w.staging().join("t/sleep.pid");
    assert!(
        poll(PATIENCE, || sleep_pid.exists()),
        "the gate never started\n{}",
        w.logs()
    );
    let pid = |file: &str| -> u32 {
        fs::read_to_string(w.staging().join("t").join(file))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let (sh, sleep) = (pid("sh.pid"), pid("sleep.pid"));

    // The gate sleeps for 30 s; the watcher ends after its grace of 500 ms by killing it.
    let status = w.child.stop_with(signal, PATIENCE);
    let status = status
        .unwrap_or_else(|| panic!("still running {PATIENCE:?} after SIG{signal}\n{}", w.logs()));
    assert_eq!(
        (status.code(), status.signal()),
        (Some(0), None),
        "{}",
        w.logs()
    );
    // A watcher that stops says which signal stopped it, so a stop nobody meant is traced.
    assert!(
        w.stderr()
            .contains(&format!("stop signal received signal=\"SIG{signal}\"")),
        "{}",
        w.logs()
    );
    assert!(
        poll(PATIENCE, || dead(sh) && dead(sleep)),
        "the gate outlived the watcher: sh {sh} dead {}, sleep {sleep} dead {}",
        dead(sh),
        dead(sleep)
    );
    assert!(
        !w.verdict_path("t").exists(),
        "a cancelled run publishes nothing"
    );
}

// ---------------------------------------------------------------------------------------------
// 10. Coalescing.

fn signals_during_a_run_coalesce_into_one_more_run(mode: Mode) {
    let w = Watcher::started(mode, &rules("", &held_gate("slow", "")), &[]);
    w.task("t", &[]);
    w.signal("t", "signal 0");
    w.wait_event("run_started", |e| {
        e["task"] == "t" && e["event"] == "run_started"
    });
    // The first run holds until every later signal is written, however slowly they come.
    for i in 1..=10 {
        w.signal("t", &format!("signal {i}"));
    }
    release(&w, "t");
    let (code, v) = w.wait_verdict("t");
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(
        fs::read_to_string(w.done_path("t")).unwrap(),
        "signal 10",
        "the verdict answers the last write"
    );
    // The event follows the verdict file; let it land.
    assert!(
        poll(PATIENCE, || w.events_of("t", "verdict_written").len() >= 2),
        "{}",
        w.logs()
    );
    let runs = w.events_of("t", "run_started");
    assert_eq!(
        runs.len(),
        2,
        "the first run and exactly one coalesced run: {runs:?}"
    );
    assert_eq!(w.events_of("t", "verdict_written").len(), 2);
}

// ---------------------------------------------------------------------------------------------
// 11. `wait` exit codes.

fn wait_exit_codes_follow_the_verdict(mode: Mode) {
    let w = Watcher::started(
        mode,
        &rules(
            "defaults: {max_attempts: 1, strikes: 100}\n",
            &format!("{STATUS}{OUT}"),
        ),
        &[],
    );
    w.task("pass", &[("out.txt", "x")]);
    w.task("fail", &[]);
    w.task("blocked", &[("out.txt", "x")]);
    w.task("escalated", &[]);

    let (code, v) = w.judge("pass", "STATUS: OK\n");
    assert_eq!((code, v["verdict"].as_str()), (0, Some("PASS")));
    let (code, v) = w.judge("fail", "STATUS: OK\n");
    assert_eq!((code, v["verdict"].as_str()), (1, Some("FAIL")));
    let (code, v) = w.judge("blocked", "STATUS: BLOCKED\nREASON: the plan is wrong\n");
    assert_eq!((code, v["verdict"].as_str()), (3, Some("BLOCKED")), "{v:#}");
    let (code, v) = w.judge("escalated", "STATUS: OK\n");
    assert_eq!((code, v["verdict"].as_str()), (1, Some("FAIL")));
    let (code, v) = w.judge("escalated", "STATUS: OK\nSUMMARY: again\n");
    assert_eq!(
        (code, v["verdict"].as_str()),
        (4, Some("ESCALATED")),
        "{v:#}"
    );

    // The default format is the feedback text, with the same exit code.
    let output = w.cli(&["wait", "fail", "--timeout", "5s"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stdout).contains("FAIL"));
}

#[test]
fn wait_says_at_once_that_no_watcher_runs_and_waits_anyway_when_asked() {
    let w = Watcher::new(Mode::Notify, &rules("", OUT));
    let signal = w.cli(&["signal", "t", "--status", "OK", "--summary", "done"]);
    assert!(signal.status.success(), "{signal:?}");
    let body: Value =
        serde_json::from_slice(&fs::read(w.done_path("t")).unwrap()).expect("a JSON body");
    assert_eq!(body["status"], "OK");

    // No watcher holds the state directory: said at once, not after the ten-minute default.
    let output = w.cli(&["wait", "t"]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(output.stdout.is_empty(), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no watcher is running"), "{stderr}");
    assert!(stderr.contains("--anyway"), "{stderr}");

    // --anyway waits out its timeout (a clock cannot make that flake); anything past a minute
    // would be a hang.
    let started = Instant::now();
    let output = w.cli(&["wait", "t", "--timeout", "500ms", "--anyway"]);
    let elapsed = started.elapsed();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no current verdict for t"), "{stderr}");
    assert!(
        elapsed >= Duration::from_millis(500) && elapsed < Duration::from_secs(60),
        "{elapsed:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// 12. The event log.

fn assert_ids_increase(events: &[Value]) {
    for pair in events.windows(2) {
        let (a, b) = (pair[0]["id"].as_str(), pair[1]["id"].as_str());
        assert!(
            a < b,
            "event ids do not increase in the log:\n{}\n{}",
            pair[0],
            pair[1]
        );
    }
}

/// docs/events.md: ids are sortable; the log is appended in order, so reading it in order must read
/// the ids in order too, even with several runs writing at once.
fn event_ids_increase_in_log_order_with_parallel_runs(mode: Mode) {
    let mut w = Watcher::new(mode, &rules("", &format!("{STATUS}{OUT}")));
    let tasks = names("t", 200);
    for task in &tasks {
        w.task(task, &[("out.txt", "x")]);
        w.signal(task, "STATUS: OK\n");
    }
    w.start(&["--jobs", "4"]);
    w.wait_all_current(&tasks, Duration::from_secs(60));
    assert_ids_increase(&w.events());
}

fn the_event_log_records_every_step(mode: Mode) {
    let w = Watcher::started(mode, &rules("", &format!("{STATUS}{OUT}")), &[]);
    w.task("t", &[("out.txt", "x")]);
    let output = w.cli(&["signal", "t", "--status", "OK", "--agent", "claude"]);
    assert!(output.status.success(), "{output:?}");
    let (code, _) = w.wait_verdict("t");
    assert_eq!(code, 0);
    w.wait_event("verdict_written", |e| {
        e["task"] == "t" && e["event"] == "verdict_written"
    });

    let events = w.events();
    for event in &events {
        for key in ["id", "time", "event"] {
            assert!(event[key].is_string(), "no {key}: {event}");
        }
    }
    assert_ids_increase(&events);
    for name in [
        "signal_seen",
        "run_started",
        "gate_started",
        "gate_finished",
        "verdict_written",
    ] {
        let found = w.events_of("t", name);
        assert!(!found.is_empty(), "no {name} event: {events:?}");
        assert!(found.iter().all(|e| e["agent"] == "claude"), "{found:?}");
    }
    assert_eq!(w.events_of("t", "gate_started").len(), 2);
    assert_eq!(w.events_of("t", "gate_finished").len(), 2);
}

// ---------------------------------------------------------------------------------------------
// 13. Hot reload.

fn rules_reload_and_a_broken_rules_file_keeps_the_previous_rules(mode: Mode) {
    let mut w = Watcher::started(mode, &rules("", STATUS), &[]);
    w.task("t", &[]);
    let (code, v) = w.judge("t", "STATUS: OK\nSUMMARY: one\n");
    assert_eq!((code, v["verdict"].as_str()), (0, Some("PASS")), "{v:#}");

    w.write_rules(&rules(
        "",
        &format!("{STATUS}      - {{name: needs, rule: exists, paths: [\"missing.txt\"]}}\n"),
    ));
    w.wait_event("config_reloaded", |e| e["event"] == "config_reloaded");
    let (code, v) = w.judge("t", "STATUS: OK\nSUMMARY: two\n");
    assert_eq!((code, v["verdict"].as_str()), (1, Some("FAIL")), "{v:#}");
    assert!(reasons(&v).contains("missing.txt"), "{v:#}");

    w.write_rules(&rules("", "      - {name: s, rule: no-such-rule}\n"));
    w.wait_event("error about the rules file", |e| {
        e["event"] == "error" && !e["details"]["config"].is_null()
    });
    assert!(w.stderr().contains("ERROR"), "{}", w.logs());
    assert!(w.running(), "{}", w.logs());
    // `validator wait` itself refuses the broken rules file: read the verdict directly.
    w.signal("t", "STATUS: OK\nSUMMARY: three\n");
    let v = w.poll_verdict("t", PATIENCE);
    assert_eq!(
        v["verdict"].as_str(),
        Some("FAIL"),
        "still judged by the previous rules: {v:#}"
    );
    assert!(reasons(&v).contains("missing.txt"), "{v:#}");

    // The state directory is the watcher's claim: a reload cannot move it from under it.
    w.write_rules(&rules("", STATUS).replace("state: state\n", "state: moved\n"));
    w.wait_event("a refused move of the state directory", |e| {
        e["event"] == "error"
            && e["details"]["config"]
                .as_str()
                .is_some_and(|m| m.contains("restart the watcher"))
    });
    assert!(w.running(), "{}", w.logs());
    assert!(!w.path().join("moved").exists());
}

// ---------------------------------------------------------------------------------------------
// 14. Staging removed and created again.

fn staging_removed_and_recreated_is_watched_again(mode: Mode) {
    let w = Watcher::started(mode, &rules("", OUT), &[]);
    w.task("t1", &[("out.txt", "x")]);
    let (code, _) = w.judge("t1", "one");
    assert_eq!(code, 0);

    fs::remove_dir_all(w.staging()).unwrap();
    fs::create_dir(w.staging()).unwrap();
    w.task("t2", &[("out.txt", "x")]);
    let (code, v) = w.judge("t2", "two");
    assert_eq!((code, v["verdict"].as_str()), (0, Some("PASS")), "{v:#}");

    // And it keeps watching it.
    w.task("t3", &[("out.txt", "x")]);
    let (code, _) = w.judge("t3", "three");
    assert_eq!(code, 0);
}

// ---------------------------------------------------------------------------------------------
// Found in review: forged or replayed signals, and a relative rules path.

/// Polls the file until it parses as a verdict satisfying `pred`.
fn poll_file(path: &Path, timeout: Duration, pred: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    let ok = poll(timeout, || {
        last = fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or(Value::Null);
        pred(&last)
    });
    assert!(ok, "no matching verdict in {}: {last:#}", path.display());
    last
}

fn a_forged_verdict_beside_the_signal_is_not_trusted(mode: Mode) {
    // The default layout: verdicts go to staging, where the worker writes too.
    let yaml = format!(
        "version: 1\nstaging: staging\nstate: state\npipelines:\n  - name: main\n    gates:\n{OUT}"
    );
    let mut w = Watcher::new(mode, &yaml);
    w.task("t", &[]);
    let prepared = w.path().join("t.done");
    fs::write(&prepared, "STATUS: OK\n").expect("signal");
    let status = Command::new("touch")
        .args(["-d", "@1700000000"])
        .arg(&prepared)
        .status()
        .expect("touch");
    assert!(status.success());
    let forged = serde_json::json!({
        "schema": "validator.verdict/v1", "task": "t", "verdict": "PASS", "attempt": 1, "max_attempts": 3,
        "pipeline": "main", "started_at": "2023-11-14T22:13:20Z", "duration_ms": 0, "gates": [], "reasons": [], "warnings": [],
        "signal": {"sha256": sha256sum(&prepared), "mtime": "2023-11-14T22:13:20.000000000Z", "agent": null, "status": "OK"}
    });
    fs::write(w.staging().join("t.verdict.json"), forged.to_string()).expect("forge");
    fs::rename(&prepared, w.done_path("t")).expect("move signal in");
    w.start(&[]);
    let verdict = poll_file(&w.staging().join("t.verdict.json"), PATIENCE, |v| {
        v["verdict"] == "FAIL"
    });
    assert_eq!(verdict["attempt"], 1, "{verdict:#}");
}

fn deleting_the_verdict_and_backdating_the_signal_is_a_new_attempt(mode: Mode) {
    let w = Watcher::started(
        mode,
        &rules("defaults: {max_attempts: 1, strikes: 100}\n", OUT),
        &[],
    );
    w.task("t", &[]);
    let (code, first) = w.judge("t", "STATUS: OK\n");
    assert_eq!((code, first["attempt"].as_u64()), (1, Some(1)), "{first:#}");
    let mtime = fs::metadata(w.done_path("t"))
        .expect("done")
        .modified()
        .expect("mtime");
    fs::remove_file(w.verdict_path("t")).expect("delete verdict");
    let stamp = format!(
        "@{}",
        mtime
            .duration_since(std::time::UNIX_EPOCH)
            .expect("epoch")
            .as_secs_f64()
    );
    let status = Command::new("touch")
        .args(["-d", &stamp])
        .arg(w.done_path("t"))
        .status()
        .expect("touch");
    assert!(status.success());
    let verdict = poll_file(&w.verdict_path("t"), PATIENCE, |v| v.is_object());
    assert_eq!(verdict["verdict"], "ESCALATED", "{verdict:#}");
    assert_eq!(verdict["attempt"], 2, "{verdict:#}");
}

fn hot_reload_works_with_a_relative_rules_path(mode: Mode) {
    let w = Watcher::new(mode, &rules("", "      - {name: status, rule: status}\n"));
    let stderr = fs::File::create(w.path().join("logs/relative.err")).expect("log");
    let mut child = Command::new(BIN)
        .current_dir(w.path())
        .args(["watch", "-c", "validator.yaml"])
        .args(mode.args())
        .env("NO_COLOR", "1")
        .env("VALIDATOR_LOG", "info")
        .stdout(std::process::Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("watch");
    let started = poll(PATIENCE, || {
        fs::read_to_string(w.path().join("logs/relative.err")).is_ok_and(|l| l.contains("watching"))
    });
    assert!(started, "the watcher did not start");
    w.write_rules(&rules("", OUT));
    let reloaded = poll(PATIENCE, || {
        !w.events_of("", "config_reloaded").is_empty()
            || w.events().iter().any(|e| e["event"] == "config_reloaded")
    });
    w.task("t", &[]);
    w.signal("t", "STATUS: OK\n");
    let verdict = poll_file(&w.verdict_path("t"), PATIENCE, |v| v.is_object());
    let _ = child.kill();
    let _ = child.wait();
    assert!(reloaded, "no config_reloaded event");
    assert_eq!(
        verdict["verdict"], "FAIL",
        "the new rules were not used: {verdict:#}"
    );
}

fn the_watcher_holds_a_task_to_its_contract_and_logs_the_violations(mode: Mode) {
    let w = Watcher::started(
        mode,
        &rules("", STATUS).replace("state: state\n", "state: state\ncontracts: contracts\n"),
        &[],
    );
    fs::create_dir_all(w.path().join("contracts")).expect("contracts dir");
    fs::write(
        w.path().join("contracts/svc.yaml"),
        "task_id: svc\nsuccess_criteria: [\"File exists: out.txt\", \"the API is documented\"]\ndependencies_completed: [base]\n",
    )
    .expect("contract");
    w.task("base", &[]);
    w.task("svc", &[]);
    w.signal("svc", "STATUS: OK\n");
    let (code, verdict) = w.wait_verdict("svc");
    assert_eq!(code, 1, "{verdict:#}");
    assert!(
        reasons(&verdict).contains("base: not signalled done and no verdict"),
        "{verdict:#}"
    );

    w.signal("base", "STATUS: OK\n");
    assert_eq!(w.wait_verdict("base").0, 0);
    w.task("svc", &[("out.txt", "done")]);
    w.signal("svc", "STATUS: OK\nagain\n");
    let (code, verdict) = w.wait_verdict("svc");
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(verdict["unchecked"][0], "the API is documented");

    let log = fs::read_to_string(w.state().join("events.jsonl")).expect("event log");
    let violations: Vec<Value> = log
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["event"] == "contract_violation")
        .collect();
    assert_eq!(violations.len(), 1, "{log}");
    assert_eq!(violations[0]["details"]["kind"], "dependency");
    assert_eq!(violations[0]["task"], "svc");
}

fn a_retry_in_the_watcher_reruns_only_the_gates_whose_inputs_changed(mode: Mode) {
    let w = Watcher::new(mode, "");
    let count = |name: &str| {
        format!(
            "      - {{name: {name}, rule: lint, run: [\"sh\", \"-c\", \"echo run >> {}/runs-{name}; test -f {name}.ok\"], inputs: [\"{name}.*\"]}}\n",
            w.path().display()
        )
    };
    w.write_rules(&rules("", &format!("{}{}", count("a"), count("b"))));
    let mut w = w;
    w.start(&[]);
    w.task("svc", &[("a.ok", "")]);
    w.signal("svc", "first\n");
    assert_eq!(w.wait_verdict("svc").0, 1);
    w.task("svc", &[("b.ok", "")]);
    w.signal("svc", "second\n");
    let (code, verdict) = w.wait_verdict("svc");
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(verdict["gates"][0]["outcome"], "cached", "{verdict:#}");
    assert_eq!(verdict["gates"][1]["outcome"], "pass", "{verdict:#}");
    let runs = |name: &str| {
        fs::read_to_string(w.path().join(format!("runs-{name}")))
            .map(|text| text.lines().count())
            .unwrap_or(0)
    };
    assert_eq!((runs("a"), runs("b")), (1, 2));
}

fn watch_says_what_it_watches_and_a_rules_file_saved_in_place_reloads_once_whole(mode: Mode) {
    let w = Watcher::started(mode, &rules("", STATUS), &[]);
    w.task("t", &[]);
    let (code, _) = w.judge("t", "STATUS: OK\n");
    assert_eq!(code, 0);
    assert!(
        w.logs().contains("watching ") && w.logs().contains("for <task>.done signals"),
        "{}",
        w.logs()
    );
    // An editor that saves in place: the file is empty, then half written, then whole.
    let text = rules("", &format!("{STATUS}{}", sh_gate("more", "true")));
    let mut file = fs::File::create(w.rules_path()).expect("truncate");
    use std::io::Write as _;
    file.write_all(&text.as_bytes()[..text.len() / 2])
        .and_then(|()| file.flush())
        .expect("half");
    std::thread::sleep(Duration::from_millis(40));
    file.write_all(&text.as_bytes()[text.len() / 2..])
        .expect("rest");
    drop(file);
    w.wait_event("config_reloaded", |e| e["event"] == "config_reloaded");
    assert!(w.logs().contains("rules reloaded from"), "{}", w.logs());
    // The save's several events (create, writes, close) are one reload; a second would come
    // within the settle time of the first.
    std::thread::sleep(Duration::from_millis(1000));
    let reloads = w
        .events()
        .into_iter()
        .filter(|e| e["event"] == "config_reloaded")
        .count();
    assert_eq!(reloads, 1, "{}", w.logs());
    let errors: Vec<Value> = w
        .events()
        .into_iter()
        .filter(|e| e["event"] == "error")
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\n{}", w.logs());
}

/// `examples/agent-loop/run.sh svc sh AGENT` against the watcher's rules.
fn agent_loop(w: &Watcher, agent: &Path) -> std::process::Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/agent-loop/run.sh");
    Command::new("sh")
        .arg(&script)
        .args(["svc", "sh"])
        .arg(agent)
        .env("VALIDATOR", BIN)
        .env(
            "VALIDATOR_FLAGS",
            format!("-c {}", w.rules_path().display()),
        )
        .env("WAIT_TIMEOUT", VERDICT_TIMEOUT)
        .env("NO_COLOR", "1")
        // The fake agent keeps its tally outside its task, which a confined agent cannot.
        .env("VALIDATOR_CONFINE", "off")
        .output()
        .expect("run the loop")
}

fn the_agent_loop_example_feeds_the_feedback_back_until_the_work_passes(mode: Mode) {
    let w = Watcher::started(
        mode,
        &rules("", &sh_gate("good", "grep -q good out.txt")),
        &[],
    );
    w.task("svc", &[]);
    // A fake agent: bad work at first, fixed once it is told what failed.
    let agent = w.path().join("agent.sh");
    fs::write(
        &agent,
        format!(
            "echo run >> {root}/agent-runs\ncat > {root}/agent-stdin\nif grep -q 'validator: FAIL' {root}/agent-stdin; then echo good > {dir}/out.txt; else echo bad > {dir}/out.txt; fi\n",
            root = w.path().display(),
            dir = w.staging().join("svc").display()
        ),
    )
    .expect("agent");
    let output = agent_loop(&w, &agent);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}\n{stderr}\n{}",
        w.logs()
    );
    assert!(stdout.contains("svc: PASS"), "{stdout}");
    let runs = fs::read_to_string(w.path().join("agent-runs")).expect("runs");
    assert_eq!(runs.lines().count(), 2, "{stderr}");
    let fed = fs::read_to_string(w.path().join("agent-stdin")).expect("stdin");
    assert!(
        fed.contains("good"),
        "the feedback names the failing gate: {fed}"
    );
}

fn the_agent_loop_signals_the_agents_last_message_and_never_runs_it_past_the_breaker(mode: Mode) {
    let w = Watcher::started(
        mode,
        &rules(
            "defaults: {max_attempts: 2, strikes: 9}\n",
            &format!("{STATUS}{}", sh_gate("good", "grep -q good out.txt")),
        ),
        &[],
    );
    w.task("svc", &[]);
    let loop_with = |agent_script: &str| {
        let agent = w.path().join("agent.sh");
        fs::write(&agent, agent_script).expect("agent");
        agent_loop(&w, &agent)
    };
    let root = w.path().display().to_string();
    let dir = w.staging().join("svc").display().to_string();
    // Its last message, written where the loop says, carries the STATUS block; the feedback
    // tells it to finish again, not to signal.
    let output = loop_with(&format!(
        "echo \"$VALIDATOR_LOOP_ATTEMPT\" >> {root}/attempts\ncat > {root}/fed\nif [ \"$VALIDATOR_LOOP_ATTEMPT\" = 2 ]; then echo good > {dir}/out.txt; fi\nprintf 'Did it.\\nSTATUS: OK\\n' > \"$VALIDATOR_LAST_MESSAGE\"\necho chatter\n"
    ));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}\n{}", w.logs());
    assert_eq!(
        fs::read_to_string(w.path().join("attempts")).expect("attempts"),
        "1\n2\n"
    );
    let fed = fs::read_to_string(w.path().join("fed")).expect("fed");
    assert!(fed.contains("finish again"), "{fed}");
    assert!(!fed.contains("signal done"), "{fed}");

    // Never fixed: two attempts, then the breaker, with no third run of the agent.
    fs::remove_file(w.staging().join("svc/out.txt")).expect("unfix");
    fs::remove_file(w.path().join("attempts")).expect("reset attempts");
    common::validator()
        .arg("-c")
        .arg(w.rules_path())
        .args(["reset", "svc"])
        .assert()
        .success();
    let output = loop_with(&format!(
        "echo \"$VALIDATOR_LOOP_ATTEMPT\" >> {root}/attempts\necho 'Nothing to do.'; echo 'STATUS: OK'\n"
    ));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(4), "{stderr}\n{}", w.logs());
    assert_eq!(
        fs::read_to_string(w.path().join("attempts")).expect("attempts"),
        "1\n2\n"
    );
}

/// Under `watch` every worker writes the staging directory (its done file goes there), so a
/// repository there is nobody's to trust, and no worker may break another task's judging with
/// one: it is passed over (here, with no repository above, every file counts), and the summary
/// says so.
#[test]
fn a_repository_over_the_whole_staging_directory_is_passed_over() {
    let w = Watcher::started(
        Mode::Notify,
        &rules("", "      - {name: scope, rule: file-scope}\n"),
        &[],
    );
    w.task("t", &[("a.txt", "a")]);
    common::commit_all(&w.staging());
    let (code, verdict) = w.judge("t", "STATUS: OK\n");
    assert_eq!(code, 0, "{verdict:#}");
    let summary = verdict["gates"][0]["summary"].to_string();
    assert!(
        summary.contains("every file") && summary.contains("was passed over"),
        "{verdict:#}"
    );
}

#[test]
fn watch_jobs_bounds_every_gate_running_at_once_a_groups_across_tasks_included() {
    // Each gate marks itself running in a directory the tasks share, counts the marks, and
    // fails when more than `--jobs 2` run at once. Four tasks with a group of three gates that
    // may each take three threads: only the watcher's bound keeps it to two.
    let w = Watcher::new(Mode::Notify, "");
    let running = w.path().join("running");
    fs::create_dir_all(&running).expect("running dir");
    let gate = |name: &str| {
        format!(
            "      - {{name: {name}, rule: lint, group: checks, run: [sh, -c, 'm={}/$$; touch $m; n=$(ls {} | wc -l); sleep 0.3; rm $m; echo \"$n at once\"; [ $n -le 2 ]']}}\n",
            running.display(),
            running.display()
        )
    };
    w.write_rules(&format!(
        "version: 1\nstaging: staging\nverdicts: verdicts\nstate: state\npipelines:\n  - name: main\n    jobs: 3\n    gates:\n{}{}{}",
        gate("a"),
        gate("b"),
        gate("c")
    ));
    let tasks = names("t", 4);
    for task in &tasks {
        w.task(task, &[]);
        w.signal(task, "STATUS: OK\n");
    }
    let mut w = w;
    w.start(&["--jobs", "2"]);
    for task in &tasks {
        let (code, verdict) = w.wait_verdict(task);
        assert_eq!(code, 0, "{task}: {verdict:#}\n{}", w.logs());
    }
}

#[test]
fn a_group_under_watch_runs_its_gates_together_while_slots_are_free() {
    // Two gates that can only pass if each sees the other running: one task alone under
    // `--jobs 2` has a free slot for its group.
    let meet = |name: &str, mine: &str, theirs: &str| {
        format!(
            "      - {{name: {name}, rule: lint, group: checks, run: [sh, -c, 'touch {mine}; i=0; while [ ! -e {theirs} ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; [ -e {theirs} ]']}}\n"
        )
    };
    let w = Watcher::started(
        Mode::Notify,
        &rules(
            "",
            &format!(
                "{}{}",
                meet("a", "a.mark", "b.mark"),
                meet("b", "b.mark", "a.mark")
            ),
        ),
        &["--jobs", "2"],
    );
    w.task("t", &[]);
    w.signal("t", "STATUS: OK\n");
    let (code, verdict) = w.wait_verdict("t");
    assert_eq!(code, 0, "{verdict:#}\n{}", w.logs());
}
