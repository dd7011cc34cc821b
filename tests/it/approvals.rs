//! A person's approval for agents that cannot ask one: a Codex `PreToolUse` for a command an
//! `ask` rule holds waits for `validator approve` or `validator deny` from another process,
//! refuses when no one answers by the hook's deadline, tells the rules' webhook, and takes no
//! answer the worker could give itself.

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{Project, validator};

const ASK_PUSH: &str =
    "    - {match: \"git push\", decision: ask, reason: a person confirms pushes}\n";

/// A project whose rules hold `git push` for a person; `extra` adds top-level keys.
fn project(confine: &str, extra: &str) -> Project {
    let project = Project::new();
    project.rules(&format!(
        "version: 1\nstate: state\n{extra}tools:\n  confine: {confine}\n  commands:\n{ASK_PUSH}pipelines:\n  - name: main\n    gates:\n      - {{name: s, rule: status}}\n"
    ));
    project
}

/// What Codex sends before its shell runs `line` (tests/agents/PROTOCOLS.md).
fn codex_input(project: &Project, line: &str) -> Value {
    json!({
        "session_id": "01a219fe-0000",
        "turn_id": "01a219fe-0001",
        "transcript_path": project.path().join("rollout.jsonl"),
        "cwd": project.task_dir(),
        "hook_event_name": "PreToolUse",
        "model": "gpt-5.5",
        "permission_mode": "bypassPermissions",
        "tool_name": "Bash",
        "tool_input": {"command": line},
        "tool_use_id": "call_1",
    })
}

/// `validator hook codex` started on `input`, answering by `deadline`.
fn start_hook(project: &Project, input: &Value, deadline: &str) -> Child {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("validator"))
        .arg("-c")
        .arg(project.rules_path())
        .args(["hook", "codex", "--task-dir"])
        .arg(project.task_dir())
        .args(["--deadline", deadline])
        .current_dir(project.task_dir())
        .env_remove("VALIDATOR_CONFIG")
        .env_remove("VALIDATOR_KEY_FILE")
        .env("XDG_STATE_HOME", project.path().join("xdg"))
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start validator hook");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input.to_string().as_bytes()).unwrap();
    drop(stdin);
    child
}

/// The hook's answer: its decision (`allow` for none, or a rewrite Codex runs) and reason.
fn answer_of(child: Child) -> (String, String) {
    let output = child.wait_with_output().expect("hook ends");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    if stdout.trim().is_empty() {
        return ("allow".into(), String::new());
    }
    let answer: Value = serde_json::from_str(&stdout).expect("one JSON answer");
    let out = &answer["hookSpecificOutput"];
    (
        out["permissionDecision"]
            .as_str()
            .unwrap_or_default()
            .into(),
        out["permissionDecisionReason"]
            .as_str()
            .unwrap_or_default()
            .into(),
    )
}

/// `validator approvals --format json`.
fn pending(project: &Project) -> Vec<Value> {
    let output = validator()
        .arg("-c")
        .arg(project.rules_path())
        .args(["approvals", "--format", "json"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice(&output.stdout).expect("a JSON list")
}

/// The id of the request the hook recorded, once it is there (bounded, not timed).
fn request_id(project: &Project) -> String {
    let started = Instant::now();
    loop {
        if let Some(request) = pending(project).first() {
            return request["id"].as_str().unwrap().to_owned();
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no request was recorded"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn person(project: &Project, args: &[&str]) -> assert_cmd::assert::Assert {
    validator()
        .arg("-c")
        .arg(project.rules_path())
        .args(args)
        .assert()
}

#[test]
fn a_held_call_runs_once_a_person_approves_it_and_only_once() {
    let project = project("best-effort", "");
    let input = codex_input(&project, "git push");
    let hook = start_hook(&project, &input, "50s");
    let id = request_id(&project);
    person(&project, &["approve", &id]).success();
    let (decision, _) = answer_of(hook);
    // Answered as an allowed call: nothing (Codex runs it), or its rewrite to run confined.
    assert!(decision == "allow", "{decision}");
    assert!(pending(&project).is_empty(), "the answer is spent");
    // The approval covered that call once: the same call again waits anew.
    let again = start_hook(&project, &input, "2s");
    let (decision, reason) = answer_of(again);
    assert_eq!(decision, "deny");
    assert!(reason.contains("no one approved"), "{reason}");
}

#[test]
fn a_persons_denial_refuses_the_call_with_their_reason() {
    let project = project("off", "");
    let hook = start_hook(&project, &codex_input(&project, "git push"), "50s");
    let id = request_id(&project);
    person(
        &project,
        &["deny", &id, "--reason", "release freeze until Monday"],
    )
    .success();
    let (decision, reason) = answer_of(hook);
    assert_eq!(decision, "deny");
    assert!(
        reason.contains("a person refused this call: release freeze until Monday"),
        "{reason}"
    );
    let log = std::fs::read_to_string(project.path().join("state/events.jsonl")).unwrap();
    assert!(log.contains("\"event\":\"approval_pending\""), "{log}");
    assert!(
        log.contains("\"event\":\"approval_answered\"") && log.contains("\"decision\":\"deny\""),
        "{log}"
    );
}

#[test]
fn no_answer_by_the_deadline_refuses_and_the_request_stays_listed() {
    let project = project("off", "");
    let hook = start_hook(
        &project,
        &codex_input(&project, "git push origin main"),
        "2s",
    );
    let (decision, reason) = answer_of(hook);
    assert_eq!(decision, "deny");
    assert!(
        reason.contains("no one approved this call within") && reason.contains("ask again"),
        "{reason}"
    );
    let listed = pending(&project);
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["command"], "git push origin main");
    assert_eq!(listed[0]["agent"], "codex");
    let text = person(&project, &["approvals"]).success();
    let text = String::from_utf8_lossy(&text.get_output().stdout).into_owned();
    assert!(
        text.contains("codex") && text.contains("git push origin main"),
        "{text}"
    );
    // An answer given after the wait ended is taken by the same call made again.
    let id = listed[0]["id"].as_str().unwrap();
    person(&project, &["approve", id]).success();
    let again = start_hook(
        &project,
        &codex_input(&project, "git push origin main"),
        "2s",
    );
    assert_eq!(answer_of(again).0, "allow");
}

#[test]
fn a_worker_running_validator_approve_through_the_hook_is_refused() {
    let project = project("off", "");
    for line in [
        "validator approve abc123",
        "/usr/bin/env validator -c ../validator.yaml deny abc123",
    ] {
        let hook = start_hook(&project, &codex_input(&project, line), "5s");
        let (decision, reason) = answer_of(hook);
        assert_eq!(decision, "deny", "{line}");
        assert!(reason.contains("a person's to give"), "{reason}");
    }
}

/// An answer the worker wrote itself into the state directory (here inside the project, with
/// confinement off): with a signing key it is not validator's and approves nothing; a link is
/// never taken.
#[test]
fn an_answer_the_worker_writes_into_the_state_does_not_approve() {
    let project = project("off", "signing_key_file: key\n");
    project.root_file("key", "0123456789abcdef0123456789abcdef\n");
    let input = codex_input(&project, "git push");
    let hook = start_hook(&project, &input, "3s");
    let id = request_id(&project);
    let forged = json!({
        "id": id,
        "decision": "approve",
        "input_sha256": validator::approvals::input_sha256(&input["tool_input"]),
        "answered_ms": 4_000_000_000_000u64,
    });
    let answers = project.path().join("state/approvals");
    std::fs::write(answers.join(format!("{id}.answer")), forged.to_string()).unwrap();
    let (decision, reason) = answer_of(hook);
    assert_eq!(decision, "deny");
    assert!(reason.contains("no one approved"), "{reason}");
}

#[test]
fn without_a_key_a_linked_answer_is_refused_and_a_written_one_is_the_hole_confinement_closes() {
    let project = project("off", "");
    let input = codex_input(&project, "git push");
    let forged = |id: &str| {
        json!({
            "id": id,
            "decision": "approve",
            "input_sha256": validator::approvals::input_sha256(&input["tool_input"]),
            "answered_ms": 4_000_000_000_000u64,
        })
        .to_string()
    };
    let answers = project.path().join("state/approvals");
    // A link in the answer's place is not followed.
    let hook = start_hook(&project, &input, "3s");
    let id = request_id(&project);
    let elsewhere = project.path().join("elsewhere.json");
    std::fs::write(&elsewhere, forged(&id)).unwrap();
    std::os::unix::fs::symlink(&elsewhere, answers.join(format!("{id}.answer"))).unwrap();
    assert_eq!(answer_of(hook).0, "deny");
    // What does not hold without a key: a worker that can write the state directory (no
    // confinement, the state in its reach) can write a well-formed answer. docs/rules-file.md
    // says so; the key or confinement closes it.
    std::fs::remove_file(answers.join(format!("{id}.answer"))).unwrap();
    let hook = start_hook(&project, &input, "50s");
    let id = request_id(&project);
    std::fs::write(answers.join(format!("{id}.answer")), forged(&id)).unwrap();
    assert_eq!(answer_of(hook).0, "allow");
}

#[test]
fn the_webhook_is_told_of_a_new_request() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        // The head, then as many bytes as its Content-Length says.
        loop {
            let text = String::from_utf8_lossy(&got).into_owned();
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("Content-Length: "))
                    .and_then(|n| n.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                if body.len() >= length {
                    stream.write_all(b"HTTP/1.1 200 OK\r\n\r\nok").unwrap();
                    return (head.to_owned(), body.to_owned());
                }
            }
            let n = stream.read(&mut buf).unwrap();
            assert!(n > 0, "the request ended early: {text}");
            got.extend_from_slice(&buf[..n]);
        }
    });
    let project = project(
        "off",
        &format!(
            "hook:\n  approvals: {{webhook: \"http://127.0.0.1:{port}/hook\", timeout: 10m}}\n"
        ),
    );
    let hook = start_hook(&project, &codex_input(&project, "git push"), "50s");
    let (head, body) = server.join().unwrap();
    let id = request_id(&project);
    person(&project, &["deny", &id]).success();
    assert_eq!(answer_of(hook).0, "deny");
    assert!(head.starts_with("POST /hook HTTP/1.1"), "{head}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["id"], id.as_str());
    assert_eq!(body["command"], "git push");
    assert_eq!(body["agent"], "codex");
    let text = body["text"].as_str().unwrap();
    assert!(
        text.contains("git push") && text.contains(&format!("approve {id}")),
        "{text}"
    );
}
