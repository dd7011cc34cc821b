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
