//! Gates in a `group:` run at the same time and are settled as if they had run in order,
//! through the real binary. No test here times anything: that gates overlap is shown by gates
//! that can only finish if the other is running.

use std::time::Duration;

use serde_json::Value;

use crate::common::{self, Project};

/// A gate that marks `mine` and waits (up to 20 s) for `theirs`, then exits with `code`.
fn meeting(name: &str, mine: &str, theirs: &str, code: u8, extra: &str) -> String {
    format!(
        "      - {{name: {name}, rule: lint, run: [sh, -c, 'touch {mine}; i=0; while [ ! -e {theirs} ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; [ -e {theirs} ] || exit 9; exit {code}'], group: checks{extra}}}\n"
    )
}

fn judged(project: &Project) -> (i32, Value) {
    let mut cmd = project.check();
    cmd.args(["--format", "json"]);
    common::json_verdict(cmd)
}

fn outcomes(verdict: &Value) -> Vec<(String, String)> {
    verdict["gates"]
        .as_array()
        .expect("gates")
        .iter()
        .map(|g| {
            (
                g["name"].as_str().unwrap_or_default().to_owned(),
                g["outcome"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_groups_gates_run_at_the_same_time() {
    let project = Project::new();
    project.rules(&common::pipeline(&format!(
        "{}{}      - {{name: after, rule: lint, run: [\"true\"]}}\n",
        meeting("a", "a.mark", "b.mark", 0, ""),
        meeting("b", "b.mark", "a.mark", 0, ""),
    )));
    let (code, verdict) = judged(&project);
    // In order, `a` would wait for `b` forever (exit 9): both passed, so they overlapped.
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(
        outcomes(&verdict),
        [
            ("a".into(), "pass".into()),
            ("b".into(), "pass".into()),
            ("after".into(), "pass".into())
        ]
    );
}

#[test]
fn the_first_failure_in_written_order_is_reported_first_whichever_finished_first() {
    // `b` fails at once; `a` fails only once `b` has marked, so it finishes last.
    let project = Project::new();
    project.rules(&common::pipeline(&format!(
        "{}      - {{name: b, rule: lint, run: [sh, -c, 'touch b.mark; exit 1'], group: checks}}\n      - {{name: after, rule: lint, run: [\"true\"]}}\n",
        meeting("a", "a.mark", "b.mark", 1, ""),
    )));
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let reasons: Vec<&str> = verdict["reasons"]
        .as_array()
        .expect("reasons")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(reasons[0].starts_with("a: "), "{reasons:?}");
    assert!(reasons[1].starts_with("b: "), "{reasons:?}");
    // The run ended at `a` (BLOCK): what comes after the group did not run.
    assert_eq!(outcomes(&verdict)[2], ("after".into(), "skipped".into()));
}

#[test]
fn routes_are_taken_in_order_a_failure_routed_on_is_a_warning() {
    let project = Project::new();
    project.rules(&common::pipeline(
        "      - {name: a, rule: lint, run: [\"false\"], group: checks, on_fail: CONTINUE}\n      - {name: b, rule: lint, run: [\"true\"], group: checks}\n      - {name: after, rule: lint, run: [\"true\"]}\n",
    ));
    let (code, verdict) = judged(&project);
    assert_eq!(code, 0, "{verdict:#}");
    assert!(
        verdict["warnings"].to_string().contains("a: "),
        "{verdict:#}"
    );
    assert_eq!(outcomes(&verdict)[2], ("after".into(), "pass".into()));

    // STOP in a group ends the run BLOCKED, for a person.
    project.rules(&common::pipeline(
        "      - {name: a, rule: lint, run: [\"false\"], group: checks, on_fail: STOP}\n      - {name: b, rule: lint, run: [\"true\"], group: checks}\n",
    ));
    let (code, verdict) = judged(&project);
    assert_eq!((code, verdict["verdict"].as_str()), (3, Some("BLOCKED")));
}

#[test]
fn a_failing_gate_leaves_its_siblings_running_unless_fail_fast() {
    let gates = "      - {name: a, rule: lint, run: [\"false\"], group: checks}\n      - {name: b, rule: lint, run: [\"true\"], group: checks}\n";
    let project = Project::new();
    // One at a time, so `b` starts only after `a` failed.
    project.rules(&format!(
        "version: 1\nstate: state\npipelines:\n  - name: main\n    jobs: 1\n    gates:\n{gates}"
    ));
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1);
    assert_eq!(outcomes(&verdict)[1], ("b".into(), "pass".into()));
    project.rules(&format!(
        "version: 1\nstate: state\npipelines:\n  - name: main\n    jobs: 1\n    fail_fast: true\n    gates:\n{gates}"
    ));
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1);
    assert_eq!(outcomes(&verdict)[1], ("b".into(), "skipped".into()));
    assert!(
        verdict["gates"][1]["summary"]
            .to_string()
            .contains("fail_fast"),
        "{verdict:#}"
    );
}

#[test]
fn a_gates_timeout_holds_in_a_group() {
    let project = Project::new();
    project.rules(&common::pipeline(
        "      - {name: slow, rule: lint, run: [sleep, \"30\"], group: checks, timeout: 1s}\n      - {name: quick, rule: lint, run: [\"true\"], group: checks}\n",
    ));
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert!(
        verdict["gates"][0]["summary"]
            .to_string()
            .contains("timed out"),
        "{verdict:#}"
    );
    assert_eq!(outcomes(&verdict)[1], ("quick".into(), "pass".into()));
}

#[test]
fn sigterm_stops_every_gate_of_a_running_group() {
    let project = Project::new();
    let task = project.task_dir();
    project.rules(&common::pipeline(
        "      - {name: a, rule: lint, run: [sh, -c, 'touch a.mark; sleep 60'], group: checks}\n      - {name: b, rule: lint, run: [sh, -c, 'touch b.mark; sleep 60'], group: checks}\n",
    ));
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_validator"))
        .arg("check")
        .arg("-c")
        .arg(project.rules_path())
        .arg("--task-dir")
        .arg(&task)
        .args(["--format", "json", "--quiet"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let both = common::poll(Duration::from_secs(20), || {
        task.join("a.mark").exists() && task.join("b.mark").exists()
    });
    assert!(both, "both gates started");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("SIGTERM");
    let output = child.wait_with_output().expect("wait");
    let verdict: Value = serde_json::from_slice(&output.stdout).expect("a verdict");
    assert_eq!(verdict["verdict"], "ERROR", "{verdict:#}");
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn a_group_that_could_not_be_settled_in_order_is_refused_where_it_is_written() {
    let refused = |gates: &str, says: &str| {
        let project = Project::new();
        project.rules(&common::pipeline(gates));
        let (code, stderr) = common::rules_check(&project.rules_path());
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains(says), "{says}: {stderr}");
    };
    refused(
        "      - {name: a, rule: lint, run: [\"true\"], group: g}\n      - {name: x, rule: lint, run: [\"true\"]}\n      - {name: b, rule: lint, run: [\"true\"], group: g}\n",
        "group `g` is split",
    );
    refused(
        "      - {name: a, rule: lint, run: [\"true\"], group: g, on_pass: PASS}\n      - {name: b, rule: lint, run: [\"true\"], group: g}\n",
        "run with it whatever it routes to",
    );
    refused(
        "      - {name: a, rule: lint, run: [\"true\"], group: g, on_fail: b}\n      - {name: b, rule: lint, run: [\"true\"], group: g}\n",
        "not jump",
    );
    refused(
        "      - {name: x, rule: lint, run: [\"true\"], on_fail: b}\n      - {name: a, rule: lint, run: [\"true\"], group: g}\n      - {name: b, rule: lint, run: [\"true\"], group: g}\n",
        "jumps into the middle of group `g`",
    );
}

#[test]
fn an_advisory_failure_does_not_keep_a_blocking_sibling_from_running() {
    // `advice` fails but is routed on; `blocking` fails and ends the run. One at a time, so
    // `blocking` starts after `advice` failed: serially the run FAILs, and so must the group.
    let project = Project::new();
    project.rules(
        "version: 1\nstate: state\npipelines:\n  - name: main\n    jobs: 1\n    fail_fast: true\n    gates:\n      - {name: advice, rule: lint, run: [\"false\"], group: checks, on_fail: CONTINUE}\n      - {name: blocking, rule: lint, run: [\"false\"], group: checks}\n",
    );
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(outcomes(&verdict)[1], ("blocking".into(), "fail".into()));
}

#[test]
fn a_gate_reading_what_an_earlier_sibling_writes_judges_as_the_serial_run() {
    // The test writes a file that the gates written after it in the group would catch: run
    // one after another they see it, so they must in the group too.
    let writer = "      - {name: test, rule: test, group: checks, run: [sh, -c, 'sleep 1; echo \"os.system(1)\" > bad.py']}\n";
    let content = "      - {name: banned, rule: content, group: checks, files: [\"**/*.py\"], ban: [{pattern: 'os\\.system', message: no shelling out}], on_fail: CONTINUE}\n";
    let lint = "      - {name: lint, rule: lint, group: checks, run: [sh, -c, '! grep -rl os.system .']}\n";
    let project = Project::new();
    project.rules(&format!(
        "version: 1\nstate: state\npipelines:\n  - name: main\n    jobs: 3\n    gates:\n{writer}{content}{lint}"
    ));
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(
        outcomes(&verdict),
        [
            ("test".into(), "pass".into()),
            ("banned".into(), "fail".into()),
            ("lint".into(), "fail".into())
        ]
    );
}

#[test]
fn linters_of_one_group_still_run_at_once() {
    // Two lint gates wait for nothing of each other: each passes only if it sees the other
    // running.
    let meet = |name: &str, mine: &str, theirs: &str| {
        format!(
            "      - {{name: {name}, rule: lint, group: checks, run: [sh, -c, 'touch {mine}; i=0; while [ ! -e {theirs} ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; [ -e {theirs} ]']}}\n"
        )
    };
    let project = Project::new();
    project.rules(&format!(
        "version: 1\nstate: state\npipelines:\n  - name: main\n    jobs: 2\n    gates:\n{}{}",
        meet("a", "a.mark", "b.mark"),
        meet("b", "b.mark", "a.mark")
    ));
    let (code, verdict) = judged(&project);
    assert_eq!(code, 0, "{verdict:#}");
}
