//! A bad day for a sidecar: a bug that panics while judging, a worker thread that dies or hangs
//! on a process that will not end. The watcher must contain each, say so where operators look
//! (the verdict, the event log, `status --health`), and go on judging what it can. The faults
//! are injected into the debug build (`VALIDATOR_DEBUG_FAULT`), as no input may cause them.

use std::fs;
use std::time::Duration;

use serde_json::Value;

use crate::common::{PATIENCE, PATIENCE_ARG, poll};
use crate::reliability::harness::Sidecar;

const RULES: &str = "version: 1\nstaging: staging\nverdicts: verdicts\nstate: state\npipelines:\n  - name: main\n    gates:\n      - {name: status, rule: status}\n";

/// `validator wait TASK --format json`: the exit code and the verdict.
fn wait(sidecar: &Sidecar, task: &str) -> (i32, Value) {
    let output = sidecar.cli(&["wait", task, "--timeout", PATIENCE_ARG, "--format", "json"]);
    let verdict = serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "no verdict for {task} ({err}): {output:?}\n{}",
            sidecar.logs()
        )
    });
    (output.status.code().expect("exit code"), verdict)
}

/// Polls `status --health` until it says unhealthy; its line.
fn unhealthy_within(sidecar: &Sidecar, timeout: Duration) -> String {
    let mut line = String::new();
    let turned = poll(timeout, || {
        let output = sidecar.cli(&["status", "--health"]);
        line = String::from_utf8_lossy(&output.stdout).into_owned();
        !output.status.success()
    });
    assert!(
        turned,
        "still healthy after {timeout:?}: {line}\n{}",
        sidecar.logs()
    );
    line
}

fn signal(sidecar: &Sidecar, task: &str, body: &str) {
    let temp = sidecar.staging().join(format!(".{task}.tmp"));
    fs::write(&temp, body).expect("write");
    fs::rename(&temp, sidecar.done_path(task)).expect("rename");
}

#[test]
fn a_panic_while_judging_is_an_error_verdict_and_the_worker_judges_on() {
    let mut sidecar = Sidecar::new(RULES);
    sidecar.start_with(&["--jobs", "1"], &[("VALIDATOR_DEBUG_FAULT", "panic:boom")]);
    signal(&sidecar, "boom", "STATUS: OK\n");
    let (code, verdict) = wait(&sidecar, "boom");
    assert_eq!(code, 2, "{verdict:#}");
    assert!(
        verdict["reasons"]
            .to_string()
            .contains("a bug in validator"),
        "{verdict:#}"
    );
    signal(&sidecar, "fine", "STATUS: OK\n");
    let (code, verdict) = wait(&sidecar, "fine");
    assert_eq!(code, 0, "{verdict:#}");
    let events = sidecar.events();
    assert!(
        events
            .iter()
            .any(|e| e["task"] == "boom" && e["details"]["panic"].is_string()),
        "{events:#?}"
    );
    let health = sidecar.cli(&["status", "--health"]);
    assert!(health.status.success(), "{health:?}");
    assert!(sidecar.running());
}

#[test]
fn a_worker_thread_that_ends_makes_the_watcher_unhealthy() {
    let mut sidecar = Sidecar::new(RULES);
    sidecar.start_with(
        &["--jobs", "2", "--heartbeat", "1s"],
        &[("VALIDATOR_DEBUG_FAULT", "die:gone")],
    );
    signal(&sidecar, "gone", "STATUS: OK\n");
    // The task may be taken again (its done file raised more than one event), by the other
    // worker, which dies of it too.
    let line = unhealthy_within(&sidecar, Duration::from_secs(20));
    assert!(line.contains("of 2 worker threads are gone"), "{line}");
    assert!(sidecar.running());
}

#[test]
fn a_worker_stuck_past_the_budget_makes_the_watcher_unhealthy() {
    let mut sidecar =
        Sidecar::new(&RULES.replace("state: state\n", "state: state\ndefaults: {budget: 1s}\n"));
    sidecar.start_with(
        &["--jobs", "2", "--heartbeat", "1s"],
        &[("VALIDATOR_DEBUG_FAULT", "hang:stuck")],
    );
    signal(&sidecar, "stuck", "STATUS: OK\n");
    let line = unhealthy_within(&sidecar, Duration::from_secs(40));
    assert!(line.contains("judging task `stuck`"), "{line}");
    assert!(line.contains("stuck"), "{line}");
}

#[test]
fn the_event_log_is_rotated_at_its_cap_and_keeps_what_the_rules_say() {
    let mut sidecar = Sidecar::new(&RULES.replace(
        "state: state\n",
        "state: state\nevents: {max_bytes: 4096, keep: 2}\n",
    ));
    sidecar.start(&["--jobs", "1"]);
    for i in 0..30 {
        signal(&sidecar, "t", &format!("STATUS: OK\nSUMMARY: run {i}\n"));
        assert_eq!(wait(&sidecar, "t").0, 0);
    }
    // A verdict is written before its `verdict_written` event is appended, and the log is
    // rotated only after that append: until the watcher has exited, the last append may be
    // in the log and its rotation still to come.
    let stopped = sidecar.sigterm(PATIENCE);
    assert_eq!(
        stopped.and_then(|s| s.code()),
        Some(0),
        "{}",
        sidecar.logs()
    );
    let state = sidecar.state();
    let size = |name: &str| fs::metadata(state.join(name)).map(|m| m.len()).ok();
    assert!(
        size("events.jsonl").is_some_and(|n| n < 4096),
        "{:?}",
        size("events.jsonl")
    );
    assert!(size("events.jsonl.1").is_some() && size("events.jsonl.2").is_some());
    assert!(
        size("events.jsonl.3").is_none(),
        "more logs kept than asked for"
    );
    for name in ["events.jsonl", "events.jsonl.1", "events.jsonl.2"] {
        let text = fs::read_to_string(state.join(name)).expect("read");
        for line in text.lines().filter(|l| !l.is_empty()) {
            serde_json::from_str::<Value>(line)
                .unwrap_or_else(|err| panic!("{name}: a line is not JSON ({err}): {line}"));
        }
    }
}

#[test]
fn a_fifo_in_place_of_the_rules_file_does_not_stall_the_watcher() {
    let mut sidecar = Sidecar::new(RULES);
    sidecar.start(&["--jobs", "1", "--heartbeat", "1s"]);
    // Swapped in by a rename, as a reload would see any new rules file.
    let fifo = sidecar.path().join("rules.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    fs::rename(&fifo, sidecar.rules_path()).expect("swap in the FIFO");
    let refused = poll(PATIENCE, || {
        sidecar
            .events()
            .iter()
            .any(|e| e["event"] == "error" && e["details"]["config"].is_string())
    });
    assert!(refused, "no error event for the reload\n{}", sidecar.logs());
    // The main loop and the workers go on with the rules they had (read the verdict file:
    // `wait` itself needs a rules file).
    signal(&sidecar, "t", "STATUS: OK\n");
    let passed = poll(PATIENCE, || {
        fs::read(sidecar.verdict_path("t"))
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
            .is_some_and(|verdict| verdict["verdict"] == "PASS")
    });
    assert!(passed, "no verdict after the FIFO\n{}", sidecar.logs());
    assert!(sidecar.running());
}

#[test]
fn links_planted_among_validators_own_files_are_not_followed() {
    let mut sidecar = Sidecar::new(&RULES.replace(
        "state: state\n",
        "state: state\ndefaults: {max_attempts: 5}\n",
    ));
    // Another task's state, escalated: a link to it in place of `t`'s must not carry it over.
    let tasks = sidecar.state().join("tasks");
    fs::create_dir_all(&tasks).expect("mkdir");
    fs::write(
        tasks.join("other.json"),
        r#"{"attempt": 99, "signal": null, "judged": null, "signature": null, "strikes": 0, "escalated": "by a link", "last_verdict": "ESCALATED", "updated_at": null}"#,
    )
    .expect("state");
    std::os::unix::fs::symlink(tasks.join("other.json"), tasks.join("t.json")).expect("link");
    sidecar.start(&["--jobs", "1"]);
    signal(&sidecar, "t", "STATUS: OK\n");
    let (code, verdict) = wait(&sidecar, "t");
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(verdict["attempt"], 1, "{verdict:#}");
}

#[test]
fn a_verdict_that_cannot_be_written_is_kept_reported_and_written_when_it_can() {
    // The gate counts its runs beside the task: a verdict written later is not judged again.
    let mut sidecar = Sidecar::new(
        "version: 1\nstaging: staging\nverdicts: verdicts\nstate: state\npipelines:\n  - name: main\n    gates:\n      - {name: count, rule: lint, run: [\"sh\", \"-c\", \"echo run >> ../../runs\"]}\n",
    );
    // A file where the verdicts directory belongs: every write there fails, as on a full or
    // read-only disk (which a test running as root cannot make of a directory's mode).
    fs::write(sidecar.verdicts(), "in the way").expect("block the verdicts directory");
    sidecar.task("t", &[]);
    sidecar.start(&["--jobs", "1", "--heartbeat", "1s"]);
    signal(&sidecar, "t", "STATUS: OK\n");

    let line = unhealthy_within(&sidecar, Duration::from_secs(20));
    assert!(
        line.contains("task `t`") && line.contains("not written"),
        "{line}"
    );
    assert!(line.contains("os error"), "the OS's reason: {line}");
    let status = sidecar.status();
    let t = status.iter().find(|s| s["task"] == "t").expect("t listed");
    assert!(
        t["unpublished"]
            .as_str()
            .is_some_and(|why| why.contains("os error")),
        "{t}"
    );
    assert!(
        sidecar
            .events()
            .iter()
            .any(|e| e["task"] == "t" && e["details"]["unpublished"].is_string()),
        "an error event"
    );

    // Space comes back: the verdict is written without another signal or run.
    fs::remove_file(sidecar.verdicts()).expect("unblock");
    let written = poll(Duration::from_secs(30), || {
        sidecar.verdict_path("t").exists()
    });
    assert!(written, "never written\n{}", sidecar.logs());
    let healthy = poll(PATIENCE, || {
        sidecar.cli(&["status", "--health"]).status.success()
    });
    assert!(healthy, "still unhealthy\n{}", sidecar.logs());
    let runs = fs::read_to_string(sidecar.path().join("runs")).unwrap_or_default();
    assert_eq!(runs.lines().count(), 1, "the gate ran again");
}
