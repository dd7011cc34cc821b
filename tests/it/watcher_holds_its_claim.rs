//! One watcher per state directory, even when the directory is deleted and made again under a
//! running watcher: a second one is refused until the first has noticed and stopped, and the
//! first judges and publishes nothing once the directory it claimed is gone. And `status`
//! tells what is on disk: a verdict written is never reported as not written.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::{self, Watching, poll};

const BIN: &str = env!("CARGO_BIN_EXE_validator");
/// How long a condition may take to come true on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(60);

/// A project directory whose watchers a test starts into `Watching` slots. The state directory
/// lies outside it, and every path in the rules is absolute, so that a copy of the rules file
/// elsewhere (`other/validator.yaml`) names the same directories: a watcher started with it
/// sends the first no event (it wakes on any in its rules file's directory, and then looks).
struct Project {
    root: tempfile::TempDir,
    elsewhere: tempfile::TempDir,
    starts: usize,
}

impl Project {
    fn new(gate: &str) -> Self {
        let root = tempfile::tempdir().expect("temp dir");
        let elsewhere = tempfile::tempdir().expect("temp dir");
        let (at, state) = (root.path().display(), elsewhere.path().join("state"));
        let rules = format!(
            "version: 1\nstaging: {at}/staging\nverdicts: {at}/verdicts\nstate: {}\nspeculate: false\npipelines:\n  - name: main\n    gates:\n      - {gate}\n",
            state.display()
        );
        for dir in ["staging/t", "logs", "other"] {
            fs::create_dir_all(root.path().join(dir)).expect("mkdir");
        }
        fs::write(root.path().join("validator.yaml"), &rules).expect("rules");
        fs::write(root.path().join("other/validator.yaml"), &rules).expect("rules");
        Project {
            root,
            elsewhere,
            starts: 0,
        }
    }

    fn path(&self) -> &Path {
        self.root.path()
    }

    fn state(&self) -> PathBuf {
        self.elsewhere.path().join("state")
    }

    fn watch(&mut self) -> (Command, usize) {
        self.watch_with("validator.yaml")
    }

    fn watch_with(&mut self, rules: &str) -> (Command, usize) {
        self.starts += 1;
        let log = self
            .path()
            .join(format!("logs/watch-{}.stderr", self.starts));
        let mut command = Command::new(BIN);
        command
            .args(["watch", "--jobs", "1", "--heartbeat", "120s", "-c"])
            .arg(self.path().join(rules))
            .current_dir(self.path())
            .env_remove("VALIDATOR_CONFIG")
            .env_remove("VALIDATOR_KEY_FILE")
            .env("VALIDATOR_LOG", "info")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(log).expect("stderr log"));
        (command, self.starts)
    }

    /// Starts a watcher into `slot` and waits until it says it is watching.
    fn start(&mut self, slot: &mut Watching) {
        let (mut command, start) = self.watch();
        slot.set(command.spawn().expect("spawn validator watch"));
        let ready = poll(PATIENCE, || self.stderr(start).contains("watching"));
        assert!(ready, "watcher {start} did not start:\n{}", self.logs());
    }

    fn stderr(&self, start: usize) -> String {
        fs::read_to_string(self.path().join(format!("logs/watch-{start}.stderr")))
            .unwrap_or_default()
    }

    fn logs(&self) -> String {
        (1..=self.starts)
            .map(|s| format!("--- watcher {s} ---\n{}", self.stderr(s)))
            .collect()
    }

    fn cli(&self, args: &[&str]) -> Output {
        common::cli(self.path(), &self.path().join("validator.yaml"), args)
    }

    fn signal(&self) {
        let out = self.cli(&["signal", "t", "--status", "OK"]);
        assert!(out.status.success(), "{out:?}");
    }

    fn verdict(&self) -> PathBuf {
        self.path().join("verdicts/t.verdict.json")
    }

    /// `status --format json`'s line for task `t`.
    fn status_of_t(&self) -> Value {
        let out = self.cli(&["status", "--format", "json"]);
        assert!(out.status.success(), "{out:?}");
        let tasks: Value = serde_json::from_slice(&out.stdout).expect("status JSON");
        tasks
            .as_array()
            .and_then(|tasks| tasks.iter().find(|t| t["task"] == "t").cloned())
            .unwrap_or(Value::Null)
    }

    /// Deletes the state directory and makes it again, as `rm -rf state && mkdir state` does.
    fn remake_state(&self) {
        fs::remove_dir_all(self.state()).expect("delete the state directory");
        fs::create_dir(self.state()).expect("make it again");
    }
}

/// Waits for the watcher in `slot` to exit on its own; its exit code.
fn exited(slot: &mut Watching, project: &Project) -> i32 {
    let mut status = None;
    poll(PATIENCE, || {
        status = slot.try_wait();
        status.is_some()
    });
    let status = status.unwrap_or_else(|| panic!("the watcher went on:\n{}", project.logs()));
    status.code().unwrap_or(-1)
}

#[test]
fn a_second_watcher_is_refused_while_the_first_runs_on_a_state_directory_made_again() {
    let mut project = Project::new("{name: status, rule: status}");
    let mut first = Watching::default();
    project.start(&mut first);
    project.remake_state();
    // The first has not looked yet; its lock is on the deleted directory, and the new one is
    // free to lock. The second must not judge beside it all the same.
    let (mut second, start) = project.watch_with("other/validator.yaml");
    let refused = second.output().expect("run validator watch");
    assert!(!refused.status.success(), "{}", project.logs());
    let said = project.stderr(start);
    assert!(
        said.contains("still runs on the state directory this path named before"),
        "{said}"
    );
    assert!(first.running(), "{}", project.logs());

    // A signal wakes the first: it finds its directory gone, stops, and judges nothing.
    project.signal();
    assert_eq!(exited(&mut first, &project), 2, "{}", project.logs());
    assert!(
        project.stderr(1).contains("deleted or replaced"),
        "{}",
        project.logs()
    );
    assert!(!project.verdict().exists(), "{}", project.logs());

    // Now a watcher claims the directory that is there, and judges the signal.
    let mut third = Watching::default();
    project.start(&mut third);
    let waited = project.cli(&["wait", "t", "--timeout", "60s", "--format", "json"]);
    assert_eq!(
        waited.status.code(),
        Some(0),
        "{waited:?}\n{}",
        project.logs()
    );
}

#[test]
fn a_watcher_whose_state_directory_is_made_again_during_a_run_publishes_nothing_of_it() {
    // The gate says it started (in the task, where no event reaches the watcher), then takes
    // long enough for the directory to be made again.
    let mut project =
        Project::new(r#"{name: slow, rule: lint, run: ["sh", "-c", "touch started; sleep 3"]}"#);
    let mut watcher = Watching::default();
    project.start(&mut watcher);
    project.signal();
    let started = poll(PATIENCE, || {
        project.path().join("staging/t/started").exists()
    });
    assert!(started, "the gate never ran:\n{}", project.logs());
    project.remake_state();
    // Whichever notices first, the worker at its publish or the main loop at a message, the
    // run publishes nothing.
    assert_eq!(exited(&mut watcher, &project), 2, "{}", project.logs());
    assert!(
        !project.verdict().exists(),
        "published a verdict judged on a state directory it no longer held:\n{}",
        project.logs()
    );
    assert!(
        !project.state().join("tasks").exists(),
        "wrote its state into a directory it never claimed:\n{}",
        project.logs()
    );
    assert!(
        project.stderr(1).contains("deleted or replaced"),
        "{}",
        project.logs()
    );
}

#[test]
fn status_says_a_verdict_is_written_as_soon_as_it_is_not_at_the_next_heartbeat() {
    let mut project = Project::new("{name: status, rule: status}");
    // A file where the verdicts directory belongs: every write there fails, as on a full or
    // read-only disk (which a test running as root cannot make of a directory's mode).
    fs::write(project.path().join("verdicts"), "in the way").expect("block verdicts");
    let mut watcher = Watching::default();
    project.start(&mut watcher);
    project.signal();
    let reported = poll(PATIENCE, || {
        project.status_of_t()["unpublished"].is_string()
    });
    assert!(reported, "{}\n{}", project.status_of_t(), project.logs());

    fs::remove_file(project.path().join("verdicts")).expect("unblock");
    let written = poll(PATIENCE, || project.verdict().exists());
    assert!(written, "never written:\n{}", project.logs());
    // The heartbeat is two minutes away: what status says now comes from the verdict itself.
    let t = project.status_of_t();
    assert!(t["unpublished"].is_null(), "{t}");
    assert_eq!(t["current"], true, "{t}");
    let text = project.cli(&["status"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(!text.contains("not written"), "{text}");
    let healthy = poll(Duration::from_secs(30), || {
        project.cli(&["status", "--health"]).status.success()
    });
    assert!(
        healthy,
        "{:?}\n{}",
        project.cli(&["status", "--health"]),
        project.logs()
    );
    assert!(watcher.running());
}
