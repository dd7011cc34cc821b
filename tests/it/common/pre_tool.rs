//! A tool call as Claude Code's `PreToolUse` hands it to `validator hook claude`, and whether
//! the answer refuses it: what the tool-time attack suites share.

use serde_json::{Value, json};

use super::{Project, validator};

/// The input Claude Code sends before `tool` runs with `tool_input`.
pub fn input(project: &Project, tool: &str, tool_input: Value) -> Value {
    json!({
        "session_id": "s1",
        "transcript_path": project.path().join("transcript.jsonl"),
        "cwd": project.task_dir(),
        "permission_mode": "acceptEdits",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": "toolu_1",
    })
}

/// The hook's exit code, stdout and stderr for `input`, as `agent`'s hook.
pub fn answer(project: &Project, agent: &str, input: &Value) -> (i32, String, String) {
    let output = validator()
        .arg("-c")
        .arg(project.rules_path())
        .args(["hook", agent])
        .current_dir(project.task_dir())
        .env("CLAUDE_PROJECT_DIR", project.task_dir())
        .write_stdin(input.to_string())
        .output()
        .expect("run validator");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The decision in a Claude Code answer's `stdout` (`allow` when it says nothing, `deny` or
/// `ask`) and its reason.
pub fn decision_of(stdout: &str) -> (String, String) {
    if stdout.trim().is_empty() {
        return ("allow".into(), String::new());
    }
    let answer: Value = serde_json::from_str(stdout).expect("one JSON answer");
    let output = &answer["hookSpecificOutput"];
    // A shell call rewritten to run confined, with no decision: the agent's own rules decide,
    // as when validator says nothing.
    if output["permissionDecision"].is_null() && !output["updatedInput"].is_null() {
        return ("allow".into(), String::new());
    }
    let field = |name: &str| output[name].as_str().unwrap_or_default().to_owned();
    (
        field("permissionDecision"),
        field("permissionDecisionReason"),
    )
}

/// Whether Claude Code refuses the call on this answer; validator always answers.
pub fn refuses(answer: &(i32, String, String)) -> bool {
    let (code, stdout, stderr) = answer;
    assert_eq!(*code, 0, "validator answers, never fails: {stderr}");
    serde_json::from_str::<Value>(stdout)
        .is_ok_and(|v| v["hookSpecificOutput"]["permissionDecision"] == "deny")
}

/// Whether the Bash call running `line` is refused.
pub fn shell_refused(project: &Project, line: &str) -> bool {
    let call = input(
        project,
        "Bash",
        json!({"command": line, "description": "d"}),
    );
    refuses(&answer(project, "claude", &call))
}

/// Each line must be refused before it runs.
pub fn assert_shell_refused(project: &Project, lines: &[&str]) {
    let let_through: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|line| !shell_refused(project, line))
        .collect();
    assert!(
        let_through.is_empty(),
        "let through before they ran: {let_through:#?}"
    );
}

/// Each line is ordinary work, which must run.
pub fn assert_shell_allowed(project: &Project, lines: &[&str]) {
    let refused: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|line| shell_refused(project, line))
        .collect();
    assert!(refused.is_empty(), "refused ordinary work: {refused:#?}");
}
