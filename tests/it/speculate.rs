//! The verdict ready at done: a retry runs the tests that failed first (`select:`), and the
//! watcher's speculative runs, whose outcomes stand only for exactly the files they saw.

use std::path::Path;

use crate::common::{Project, pipeline};
use crate::hooks::{hook, stop};

/// A pytest project whose `test_slow` notes each run of it in `log` (outside the task), and
/// whose `test_fast` fails until it is fixed.
fn pytest_project(log: &Path) -> Project {
    let gate = format!(
        "      - name: test\n        rule: test\n        run: python3 -m pytest -q -p no:randomly\n        select: python3 -m pytest -q -p no:randomly {{tests}}\n        env: {{RUN_LOG: \"{}\"}}\n",
        log.display()
    );
    let project = Project::new();
    project.rules(&pipeline(&gate));
    project
        .file(
            "test_fast.py",
            "def test_fast():\n    assert 1 + 1 == 3\n\n\ndef test_other():\n    assert True\n",
        )
        .file(
            "test_slow.py",
            "import os\n\n\ndef test_slow():\n    with open(os.environ['RUN_LOG'], 'a') as log:\n        log.write('slow\\n')\n",
        );
    project
}

fn slow_runs(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .count()
}

#[test]
fn a_retry_runs_the_tests_that_failed_first_and_a_pass_still_needs_the_whole_suite() {
    if !crate::starter::tools_present(
        "a_retry_runs_the_tests_that_failed_first_and_a_pass_still_needs_the_whole_suite",
        &[&["python3", "-m", "pytest", "--version"]],
    ) {
        return;
    }
    let scratch = tempfile::tempdir().expect("tempdir");
    let log = scratch.path().join("runs.log");
    let project = pytest_project(&log);

    let first = hook(&project, "claude", &stop(&project, "s1", "Done.")).blocked("block");
    assert!(first.contains("test_fast"), "{first}");
    assert_eq!(slow_runs(&log), 1, "the first run is the whole suite");

    // Still failing: the retry runs test_fast alone and fails at once.
    project.file(
        "test_fast.py",
        "def test_fast():\n    assert 2 + 2 == 5\n\n\ndef test_other():\n    assert True\n",
    );
    let second = hook(&project, "claude", &stop(&project, "s1", "Fixed.")).blocked("block");
    assert!(second.contains("test_fast"), "{second}");
    assert!(second.contains("run first"), "{second}");
    assert_eq!(slow_runs(&log), 1, "only the failed test ran: {second}");

    // Fixed: the failed test passes alone, and the whole suite must pass too.
    project.file("test_fast.py", "def test_fast():\n    assert 2 + 2 == 4\n");
    hook(&project, "claude", &stop(&project, "s1", "Fixed now.")).passed();
    assert_eq!(slow_runs(&log), 2, "a pass comes from the whole suite");
}

#[test]
fn a_failure_elsewhere_is_found_by_the_whole_suite_after_the_failed_tests_pass() {
    if !crate::starter::tools_present(
        "a_failure_elsewhere_is_found_by_the_whole_suite_after_the_failed_tests_pass",
        &[&["python3", "-m", "pytest", "--version"]],
    ) {
        return;
    }
    let scratch = tempfile::tempdir().expect("tempdir");
    let log = scratch.path().join("runs.log");
    let project = pytest_project(&log);
    hook(&project, "claude", &stop(&project, "s1", "Done.")).blocked("block");
    // test_fast fixed, test_other broken: the selection passes, the whole suite fails.
    project.file(
        "test_fast.py",
        "def test_fast():\n    assert True\n\n\ndef test_other():\n    assert False\n",
    );
    let reason = hook(&project, "claude", &stop(&project, "s1", "Fixed.")).blocked("block");
    assert!(reason.contains("test_other"), "{reason}");
    assert!(!reason.contains("run first"), "{reason}");
    assert_eq!(slow_runs(&log), 2);
}

/// A watcher over one task, `t`, whose `test` gate runs `script` (`LOG` in it standing for a
/// log outside staging), with `extra` at the rules file's top level.
fn sidecar(extra: &str, script: &str) -> Sidecar {
    let rules = format!(
        "version: 1\nstaging: staging\nverdicts: verdicts\nstate: state\n{extra}pipelines:\n  - name: p\n    gates:\n      - {{name: status, rule: status}}\n      - name: test\n        rule: test\n        run: [sh, -c, {script:?}]\n"
    );
    Sidecar::new(&rules).spawn()
}

/// A watcher over `staging/t`, its rules written by the test; files may be laid before it
/// starts (`Sidecar::new`, then `spawn`).
pub(crate) struct Sidecar {
    root: tempfile::TempDir,
    child: crate::common::Watching,
}

pub(crate) const PATIENCE: std::time::Duration = std::time::Duration::from_secs(60);

impl Sidecar {
    /// The directories and `validator.yaml`, `rules` with `LOG` standing for the log's path and
    /// `ROOT` for the root's.
    pub(crate) fn new(rules: &str) -> Sidecar {
        let root = tempfile::tempdir().expect("tempdir");
        let rules = rules
            .replace("LOG", &root.path().join("runs.log").display().to_string())
            .replace("ROOT", &root.path().display().to_string());
        std::fs::write(root.path().join("validator.yaml"), rules).expect("rules");
        for dir in ["staging/t", "logs", "outside", "contracts"] {
            std::fs::create_dir_all(root.path().join(dir)).expect("dir");
        }
        Sidecar {
            root,
            child: crate::common::Watching::default(),
        }
    }

    pub(crate) fn spawn(mut self) -> Sidecar {
        let stderr = self.path("logs/watch.stderr");
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_validator"))
            .args(["watch", "--heartbeat", "1s", "-c"])
            .arg(self.path("validator.yaml"))
            .current_dir(self.root.path())
            .env_remove("VALIDATOR_CONFIG")
            .env("VALIDATOR_LOG", "info")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&stderr).expect("stderr"))
            .spawn()
            .expect("spawn validator watch");
        self.child.set(child);
        assert!(crate::common::poll(PATIENCE, || {
            std::fs::read_to_string(&stderr).is_ok_and(|log| log.contains("watching"))
        }));
        self
    }

    pub(crate) fn path(&self, rel: &str) -> std::path::PathBuf {
        self.root.path().join(rel)
    }

    pub(crate) fn task(&self, rel: &str) -> std::path::PathBuf {
        self.path("staging/t").join(rel)
    }

    fn write(&self, rel: &str, text: &str) {
        std::fs::write(self.task(rel), text).expect("write task file");
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.path("runs.log")).unwrap_or_default()
    }

    pub(crate) fn wait_for_log(&self, line: &str, times: usize) {
        let seen = crate::common::poll(PATIENCE, || {
            self.log().lines().filter(|l| *l == line).count() >= times
        });
        assert!(seen, "no `{line}` ×{times} in the log:\n{}", self.log());
    }

    /// Writes the done signal and waits for the verdict that answers it.
    pub(crate) fn done(&self) -> serde_json::Value {
        let before = std::fs::read(self.path("verdicts/t.verdict.json")).ok();
        std::fs::write(self.path("staging/t.done"), "STATUS: OK\n").expect("done");
        let mut verdict = serde_json::Value::Null;
        let answered = crate::common::poll(PATIENCE, || {
            let now = std::fs::read(self.path("verdicts/t.verdict.json")).ok();
            if now.is_none() || now == before {
                return false;
            }
            verdict = serde_json::from_slice(&now.unwrap_or_default()).unwrap_or_default();
            true
        });
        assert!(answered, "no verdict; log:\n{}", self.log());
        verdict
    }

    fn status(&self) -> String {
        let output = crate::common::validator()
            .args(["status", "-c"])
            .arg(self.path("validator.yaml"))
            .output()
            .expect("status");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        self.child.kill9();
    }
}

const CHECKS_APP: &str =
    "echo \"start $(cat app.txt)\" >> LOG; sleep 1; echo end >> LOG; grep -qx good app.txt";

#[test]
fn a_quiet_task_is_judged_before_done_and_the_verdict_at_done_runs_nothing_again() {
    let sidecar = sidecar("speculate: {quiet: 200ms}\n", CHECKS_APP);
    sidecar.write("app.txt", "good\n");
    sidecar.wait_for_log("end", 1);
    let verdict = sidecar.done();
    assert_eq!(verdict["verdict"], "PASS", "{verdict:#}");
    assert_eq!(
        sidecar.log(),
        "start good\nend\n",
        "the gate ran once, before done"
    );
    let shown = crate::common::poll(PATIENCE, || sidecar.status().contains("1 used at done"));
    assert!(shown, "{}", sidecar.status());
}

#[test]
fn a_failure_found_before_done_is_the_verdict_at_done() {
    let sidecar = sidecar("speculate: {quiet: 200ms}\n", CHECKS_APP);
    sidecar.write("app.txt", "bad\n");
    sidecar.wait_for_log("end", 1);
    let verdict = sidecar.done();
    assert_eq!(verdict["verdict"], "FAIL", "{verdict:#}");
    assert_eq!(sidecar.log(), "start bad\nend\n");
}

#[test]
fn a_write_while_the_speculative_run_runs_is_never_passed() {
    let sidecar = sidecar("speculate: {quiet: 200ms}\n", CHECKS_APP);
    sidecar.write("app.txt", "good\n");
    sidecar.wait_for_log("start good", 1);
    sidecar.write("app.txt", "bad!\n");
    let verdict = sidecar.done();
    assert_eq!(verdict["verdict"], "FAIL", "{verdict:#}\n{}", sidecar.log());
}

#[test]
fn a_write_between_the_speculative_run_and_done_is_judged() {
    let sidecar = sidecar("speculate: {quiet: 200ms}\n", CHECKS_APP);
    sidecar.write("app.txt", "good\n");
    sidecar.wait_for_log("end", 1);
    // Same length, same second: only the change time tells.
    sidecar.write("app.txt", "evil\n");
    let verdict = sidecar.done();
    assert_eq!(verdict["verdict"], "FAIL", "{verdict:#}\n{}", sidecar.log());
}

#[test]
fn a_test_that_rewrites_its_own_inputs_is_judged_again_at_done() {
    let script = "echo \"start $(cat app.txt)\" >> LOG; grep -qx good app.txt; r=$?; echo bad > app.txt; echo end >> LOG; exit $r";
    let sidecar = sidecar("speculate: {quiet: 200ms}\n", script);
    sidecar.write("app.txt", "good\n");
    sidecar.wait_for_log("end", 1);
    let verdict = sidecar.done();
    assert_eq!(verdict["verdict"], "FAIL", "{verdict:#}\n{}", sidecar.log());
}

#[test]
fn speculate_false_runs_nothing_before_done() {
    let sidecar = sidecar("speculate: false\n", CHECKS_APP);
    sidecar.write("app.txt", "good\n");
    // Ten times the quiet time a speculative run would have waited.
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert_eq!(sidecar.log(), "");
    let verdict = sidecar.done();
    assert_eq!(verdict["verdict"], "PASS", "{verdict:#}");
    assert_eq!(sidecar.log(), "start good\nend\n");
}

#[test]
fn a_wrong_speculate_value_is_told_where_and_what_to_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rules = dir.path().join("validator.yaml");
    for (value, says) in [
        ("maybe", "expected `false`, `true` or `{quiet: 1s}`"),
        ("{quite: 1s}", "did you mean `quiet`?"),
        ("{quiet: soon}", "is not a duration"),
    ] {
        std::fs::write(
            &rules,
            format!("version: 1\nspeculate: {value}\npipelines:\n  - name: p\n    gates:\n      - {{name: s, rule: status}}\n"),
        )
        .expect("rules");
        let (code, text) = crate::common::rules_check(&rules);
        assert_eq!(code, Some(2), "{text}");
        assert!(text.contains("validator.yaml:2:"), "{text}");
        assert!(text.contains(says), "{text}");
    }
}

#[test]
fn a_run_that_writes_only_where_the_rules_say_nothing_reads_is_still_used() {
    let script = "echo \"start $(cat app.txt)\" >> LOG; mkdir -p coverage/tmp; date +%s%N > coverage/tmp/$$.json; echo end >> LOG; grep -qx good app.txt";
    let sidecar = sidecar("speculate: {quiet: 200ms, ignore: [coverage]}\n", script);
    sidecar.write("app.txt", "good\n");
    // The first run makes coverage/, which moves the task's own times: a file could have come
    // and gone beside it unseen, so that run is not used; the next finds coverage/ there.
    sidecar.wait_for_log("end", 2);
    let verdict = sidecar.done();
    assert_eq!(verdict["verdict"], "PASS", "{verdict:#}");
    assert_eq!(
        sidecar.log(),
        "start good\nend\nstart good\nend\n",
        "the second run used, not run again"
    );
}

#[test]
fn a_link_into_a_path_passed_over_is_never_speculated_on() {
    let script = "echo \"start $(cat app.txt)\" >> LOG; echo end >> LOG; grep -qx good app.txt";
    let sidecar = sidecar("speculate: {quiet: 200ms, ignore: [coverage]}\n", script);
    std::fs::create_dir_all(sidecar.path("staging/t/coverage")).expect("coverage");
    sidecar.write("coverage/real.txt", "good\n");
    std::os::unix::fs::symlink("coverage/real.txt", sidecar.path("staging/t/app.txt"))
        .expect("link");
    std::thread::sleep(std::time::Duration::from_secs(2));
    sidecar.write("coverage/real.txt", "bad\n");
    let verdict = sidecar.done();
    assert_eq!(verdict["verdict"], "FAIL", "{verdict:#}\n{}", sidecar.log());
}
