// Review 30: attacks on the hook's session start, prompt and plan-compliance changes (the
// brief at SessionStart, the person's prompt kept and its gates.json gates run by keyword,
// STATUS on every subagent stop, seed 001's `{"output": …}` input). The holes it found are fixed; each
// test failed on the code it was found in. The rest is what held.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{Value, json};

use crate::common::{Project, lint, pipeline, validator};
use crate::hooks::{Reply, hook, run_hook_with, stop, subagent_stop};

/// A validator.yaml project judged by `gates`, with `extra` top-level keys.
fn project(gates: &str, extra: &str) -> Project {
    let project = Project::new();
    project.rules(&pipeline(gates).replacen("pipelines:", &format!("{extra}pipelines:"), 1));
    project
}

fn prompt(project: &Project, session: &str, text: &str) -> Value {
    json!({
        "session_id": session,
        "cwd": project.task_dir(),
        "hook_event_name": "UserPromptSubmit",
        "prompt": text,
    })
}

/// Writes a gates.json beside the task and returns its path.
fn gates_json(project: &Project, file: &Value) -> PathBuf {
    let path = project.path().join("gates.json");
    std::fs::write(&path, file.to_string()).expect("write gates.json");
    path
}

fn in_project(project: &Project) -> impl FnOnce(&mut assert_cmd::Command) + '_ {
    move |command: &mut assert_cmd::Command| {
        command.env("CLAUDE_PROJECT_DIR", project.task_dir());
    }
}

/// The one session record under the project's state, as JSON, and its path.
fn session_record(project: &Project, session: &str) -> (PathBuf, Value) {
    let dir = project.path().join("state/sessions");
    let key = session_key(session);
    let path = dir.join(format!("{key}.json"));
    let text = std::fs::read(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    (
        path,
        serde_json::from_slice(&text).expect("a session record"),
    )
}

/// `hook::session_key(session, None)`, as the hook names a session's record.
fn session_key(session: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = format!("{:x}", Sha256::digest(session.as_bytes()));
    format!("hook-{}", &digest[..16])
}

/// Moves the session's start back to 1970, keeping the rest of the record as validator wrote it
/// (the session has run for a long time, without a test waiting for it).
fn began_long_ago(path: &Path, mut record: Value) {
    record["first_seen"] = json!(1);
    std::fs::write(path, serde_json::to_vec(&record).expect("json")).expect("write record");
}

/// A prompt of `MAX_PROMPT_CHARS` characters that JSON escapes to six bytes each.
fn escaped_prompt() -> String {
    "\u{1}".repeat(8 * 1024)
}

// ---------------------------------------------------------------------------------------------
// Holes
// ---------------------------------------------------------------------------------------------

#[test]

fn a_keyword_gates_follow_up_runs_for_a_prompt_without_the_keyword() {
    let project = Project::new();
    let rules = gates_json(
        &project,
        &json!({
            "gates": {
                "deploy-check": {"command": "true", "keywords": ["deploy"], "on_pass": "release-check"},
                "release-check": {"command": "touch ran-release-check", "keywords": ["release"]},
                "done": {"command": "true"}
            },
            "hooks": {
                "UserPromptSubmit": {"gates": ["deploy-check"]},
                "Stop": {"gates": ["done"]}
            }
        }),
    );
    let reply = run_hook_with(
        &rules,
        "claude",
        prompt(&project, "s", "fix the typo in the README").to_string(),
        in_project(&project),
    );
    assert_eq!(reply.code, 0, "{}", reply.stderr);
    // The prompt holds neither `deploy` nor `release`: no gate of the prompt's hook may run.
    assert!(
        !project.task_dir().join("ran-release-check").exists(),
        "a gate ran for a prompt without its words: {}",
        reply.stdout
    );
    assert!(!reply.stdout.contains("release-check"), "{}", reply.stdout);
}

#[test]

fn a_status_gate_behind_a_fast_pass_lets_a_subagent_stop_without_status() {
    // The status gate is written, but the first gate's PASS ends the run before it.
    let project = project(
        &format!(
            "{}      - {{name: own-status, rule: status}}\n",
            lint("lint", r#"["true"]"#, "on_pass: PASS")
        ),
        "",
    );
    let reply = hook(
        &project,
        "claude",
        &subagent_stop(&project, "s", "a1", "Implemented it."),
    );
    let reason = reply.blocked("block");
    assert!(reason.contains("STATUS"), "{reason}");
}

#[test]
fn an_oversized_prompt_is_not_blocked() {
    let project = project(&lint("lint", r#"["true"]"#, ""), "");
    let mut input = prompt(&project, "s", "");
    input["prompt"] = json!("x".repeat(17 * 1024 * 1024));
    let reply = hook(&project, "claude", &input);
    assert_eq!(reply.code, 0, "{}", reply.stderr);
    assert!(
        !reply.stdout.contains("\"decision\""),
        "the person's prompt was blocked: {}",
        &reply.stdout[..reply.stdout.len().min(300)]
    );
}

#[test]
fn a_prompt_input_that_never_ends_is_not_blocked() {
    let project = project(&lint("lint", r#"["true"]"#, ""), "");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("validator"))
        .arg("-c")
        .arg(project.rules_path())
        .args(["hook", "claude", "--deadline", "2s"])
        .current_dir(project.task_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start validator");
    let mut stdin = child.stdin.take().expect("stdin");
    // The start of a UserPromptSubmit input, and the pipe held open.
    stdin
        .write_all(
            br#"{"session_id": "s", "hook_event_name": "UserPromptSubmit", "prompt": "add a"#,
        )
        .expect("write");
    stdin.flush().expect("flush");
    let output = child
        .wait_with_output()
        .expect("the hook ends by its deadline");
    drop(stdin);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        !stdout.contains("\"decision\""),
        "the person's prompt was blocked: {stdout}"
    );
}

#[test]

fn a_session_record_past_its_read_cap_does_not_reset_max_time() {
    let project = project(
        &lint("lint", r#"["true"]"#, ""),
        "defaults:\n  max_time: 1h\n",
    );
    for _ in 0..8 {
        let reply = hook(
            &project,
            "claude",
            &prompt(&project, "s", &escaped_prompt()),
        );
        assert_eq!(reply.code, 0, "{}", reply.stderr);
    }
    // A tool call by a subagent whose id (the agent CLI's string) escapes to 720 KB.
    let tool = json!({
        "session_id": "s",
        "cwd": project.task_dir(),
        "hook_event_name": "PreToolUse",
        "agent_id": "\u{1}".repeat(120_000),
        "tool_name": "Read",
        "tool_input": {"file_path": "README.md"},
    });
    let reply = hook(&project, "claude", &tool);
    assert_eq!(reply.code, 0, "{}", reply.stderr);
    let (path, record) = session_record(&project, "s");
    began_long_ago(&path, record);
    // The session has run since 1970: its stop is ESCALATED by max_time.
    let stopped = hook(&project, "claude", &stop(&project, "s", "STATUS: OK")).stopped();
    assert!(stopped.contains("max_time"), "{stopped}");
}

// ---------------------------------------------------------------------------------------------
// What held
// ---------------------------------------------------------------------------------------------

#[test]
fn prompts_at_their_cap_keep_the_session_record_readable() {
    let project = project(
        &lint("lint", r#"["true"]"#, ""),
        "defaults:\n  max_time: 1h\n",
    );
    for _ in 0..9 {
        let reply = hook(
            &project,
            "claude",
            &prompt(&project, "s", &escaped_prompt()),
        );
        assert_eq!(reply.code, 0, "{}", reply.stderr);
    }
    let (path, record) = session_record(&project, "s");
    assert_eq!(record["prompts"].as_array().map(Vec::len), Some(8));
    began_long_ago(&path, record);
    let stopped = hook(&project, "claude", &stop(&project, "s", "STATUS: OK")).stopped();
    assert!(stopped.contains("max_time"), "{stopped}");
}

#[test]
fn a_message_that_wraps_its_status_in_json_does_not_dodge_the_status_gate() {
    let project = project("      - {name: own-status, rule: status}\n", "");
    for (i, message) in [
        // A report's own status (null) wins over the `output` field's.
        r#"{"output": "STATUS: OK", "status": null}"#,
        // Unwrapped once, never twice.
        r#"{"output": "{\"output\": \"STATUS: OK\"}"}"#,
        r#"{"last_assistant_message": "{\"prompt_response\": \"STATUS: OK\"}"}"#,
        // A stream whose final message is a hook input.
        "{\"type\":\"result\",\"result\":\"{\\\"output\\\": \\\"STATUS: OK\\\"}\"}\n",
    ]
    .into_iter()
    .enumerate()
    {
        let reply = hook(
            &project,
            "claude",
            &stop(&project, &format!("w{i}"), message),
        );
        let answer = reply.json();
        assert_eq!(answer["decision"], "block", "{message}: {answer:#}");
    }
}

#[test]
fn plan_compliance_holds_subagent_stops_however_they_are_named() {
    let project = project(&lint("lint", r#"["true"]"#, ""), "");
    // An empty agent id is still a subagent's stop.
    let reply = hook(
        &project,
        "claude",
        &subagent_stop(&project, "s1", "", "Implemented it."),
    );
    assert!(reply.blocked("block").contains("STATUS"));
    // No event, an agent id: a subagent stop for Codex too.
    let mut input = subagent_stop(&project, "s2", "a1", "Implemented it.");
    input
        .as_object_mut()
        .expect("object")
        .remove("hook_event_name");
    let reply = hook(&project, "codex", &input);
    assert!(reply.blocked("block").contains("STATUS"));
    // A gates.json that binds no pipeline for this subagent type still checks STATUS.
    let rules = gates_json(
        &project,
        &json!({
            "gates": {"check": {"command": "true"}},
            "hooks": {"SubagentStop": {"gates": ["check"], "enabled_agents": ["reviewer"]}}
        }),
    );
    let reply = run_hook_with(
        &rules,
        "claude",
        subagent_stop(&project, "s3", "a1", "Implemented it.").to_string(),
        in_project(&project),
    );
    assert!(reply.blocked("block").contains("STATUS"));
}

#[test]
fn odd_prompt_and_session_start_inputs_never_block_the_person() {
    let project = project(&lint("lint", r#"["true"]"#, ""), "");
    // `prompt` not a string: refused (exit 1, nothing the agent reads), never a block.
    let mut input = prompt(&project, "s", "");
    input["prompt"] = json!(["not", "text"]);
    let reply: Reply = hook(&project, "claude", &input);
    reply.refused();
    // `prompt` absent: nothing kept, the brief given.
    let mut input = prompt(&project, "s", "");
    input.as_object_mut().expect("object").remove("prompt");
    let reply = hook(&project, "claude", &input);
    assert_eq!(reply.code, 0, "{}", reply.stderr);
    assert!(!reply.stdout.contains("\"decision\""), "{}", reply.stdout);
    // OpenCode has no session start: refused, not judged as a stop.
    let start =
        json!({"session_id": "o", "hook_event_name": "SessionStart", "cwd": project.task_dir()});
    hook(&project, "opencode", &start).refused();
    // A session start for a project no pipeline matches: no brief, no block.
    let other = Project::new();
    other.rules(&pipeline(&lint("lint", r#"["true"]"#, "")).replace(
        "  - name: main\n",
        "  - name: main\n    tasks: [\"elsewhere\"]\n",
    ));
    let start =
        json!({"session_id": "n", "hook_event_name": "SessionStart", "cwd": other.task_dir()});
    let reply = hook(&other, "claude", &start);
    assert_eq!(
        (reply.code, reply.stdout.as_str()),
        (0, ""),
        "{}",
        reply.stderr
    );
}

#[test]
fn a_gates_json_gate_name_with_a_hash_is_refused() {
    // `runs_for` reads `name#2` as a copy of `name`; a name of one's own cannot hold `#`.
    let project = Project::new();
    let rules = gates_json(
        &project,
        &json!({
            "gates": {"check#fast": {"command": "true", "keywords": ["zzz"]}, "check": {"command": "true"}},
            "hooks": {"UserPromptSubmit": {"gates": ["check#fast"]}, "Stop": {"gates": ["check"]}}
        }),
    );
    let output = validator()
        .arg("-c")
        .arg(&rules)
        .args(["rules", "check"])
        .output()
        .expect("run validator");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("check#fast"), "{stderr}");
}
