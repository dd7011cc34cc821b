//! `validator hook <agent>` on the agents' tool events: a call judged before it runs from the
//! rules and contract the stop is judged by, what a call changed told at once after it ran,
//! repeated refusals and tool errors, and the budgets. The inputs are the shapes the pinned
//! CLIs send (tests/agents/PROTOCOLS.md); tests/agents drives the CLIs themselves.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::{self, Project, validator};

const RULES: &str = r#"version: 1
state: state
defaults:
  strikes: 10
  max_attempts: 10
tools:
  commands:
    - {match: "git push", decision: deny, reason: pushing is for people}
    - {match: "./deploy*", decision: ask}
pipelines:
  - name: main
    gates:
      - {name: scope, rule: file-scope, allow: ["src/**", "tests/**"], readonly: ["src/lock.rs"], deny: ["**/*.pem"]}
"#;

fn project(rules: &str) -> Project {
    let project = Project::new();
    project
        .rules(rules)
        .file("src/lib.rs", "fn a() {}\n")
        .file("src/lock.rs", "// locked\n");
    common::commit_all(&project.task_dir());
    project
}

struct Reply {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Reply {
    fn json(&self) -> Value {
        assert_eq!(self.code, 0, "{}", self.stderr);
        serde_json::from_str(&self.stdout).unwrap_or_else(|err| {
            panic!(
                "not one JSON answer ({err}): {}\n{}",
                self.stdout, self.stderr
            )
        })
    }

    /// Claude Code's and Codex's refusal: the reason.
    fn denied(&self) -> String {
        let answer = self.json();
        let output = &answer["hookSpecificOutput"];
        assert_eq!(output["permissionDecision"], "deny", "{answer:#}");
        output["permissionDecisionReason"]
            .as_str()
            .expect("reason")
            .to_owned()
    }

    /// Let through: no opinion (the agent's own rules decide), or for a shell call the same
    /// call rewritten to run confined (`validator exec`), which the agent's rules still judge.
    fn allowed(&self) {
        assert_eq!(self.code, 0, "{}", self.stderr);
        if self.stdout.is_empty() {
            return;
        }
        let answer = self.json();
        let output = &answer["hookSpecificOutput"];
        let rewritten = [
            &output["updatedInput"]["command"],
            &output["tool_input"]["command"],
            &answer["args"]["command"],
        ]
        .into_iter()
        .find_map(Value::as_str)
        .unwrap_or_else(|| panic!("neither silent nor a rewrite: {answer:#}"));
        assert!(rewritten.contains(" exec --call "), "{rewritten}");
        assert!(
            output["permissionDecision"].is_null() || output["permissionDecision"] == "allow",
            "{answer:#}"
        );
    }
}

fn hook(project: &Project, agent: &str, input: &Value) -> Reply {
    let output = validator()
        .arg("-c")
        .arg(project.rules_path())
        .args(["hook", agent])
        .current_dir(project.task_dir())
        .env("CLAUDE_PROJECT_DIR", project.task_dir())
        .write_stdin(input.to_string())
        .output()
        .expect("run validator");
    Reply {
        code: output.status.code().expect("exit code"),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

use crate::common::pre_tool::input as pre;

fn post(project: &Project, tool: &str, tool_input: Value, response: Value) -> Value {
    let mut input = pre(project, tool, tool_input);
    input["hook_event_name"] = json!("PostToolUse");
    input["tool_response"] = response;
    input
}

fn write(project: &Project, path: &str) -> Value {
    let file = if Path::new(path).is_absolute() {
        path.to_owned()
    } else {
        project.task_dir().join(path).to_string_lossy().into_owned()
    };
    pre(project, "Write", json!({"file_path": file, "content": "x"}))
}

fn bash(project: &Project, command: &str) -> Value {
    pre(
        project,
        "Bash",
        json!({"command": command, "description": "d"}),
    )
}

#[test]
fn a_write_is_allowed_exactly_where_the_stop_would_allow_it() {
    let project = project(RULES);
    hook(&project, "claude", &write(&project, "src/new.rs")).allowed();
    let why = hook(&project, "claude", &write(&project, "notes/out.txt")).denied();
    assert!(
        why.contains("notes/out.txt")
            && why.contains("src/**, tests/**")
            && why.contains("`scope`"),
        "{why}"
    );
    assert!(!why.contains('\n'), "one line: {why}");
    assert!(
        hook(&project, "claude", &write(&project, "src/lock.rs"))
            .denied()
            .contains("readonly")
    );
    assert!(
        hook(&project, "claude", &write(&project, "src/key.pem"))
            .denied()
            .contains("deny")
    );
    assert!(
        hook(&project, "claude", &write(&project, "/etc/passwd"))
            .denied()
            .contains("outside the task")
    );
    // A parent that is a link out of the task leaves it too.
    let outside = tempfile::tempdir().expect("temp dir");
    std::os::unix::fs::symlink(outside.path(), project.task_dir().join("src/out")).expect("link");
    assert!(
        hook(&project, "claude", &write(&project, "src/out/x.rs"))
            .denied()
            .contains("outside the task")
    );
    // An edit is a write; so is a patch naming the file.
    let edit = pre(
        &project,
        "Edit",
        json!({"file_path": project.task_dir().join("src/lock.rs"), "old_string": "a", "new_string": "b"}),
    );
    assert!(
        hook(&project, "claude", &edit)
            .denied()
            .contains("readonly")
    );
    let patch = pre(
        &project,
        "apply_patch",
        json!({"command": "*** Begin Patch\n*** Add File: secrets/id.pem\n+k\n*** End Patch\n"}),
    );
    assert!(
        hook(&project, "codex", &patch)
            .denied()
            .contains("secrets/id.pem")
    );
}

#[test]
fn a_contract_holds_tool_calls_to_the_files_it_owns() {
    let project = project(
        "version: 1\nstate: state\ncontracts: contracts\npipelines:\n  - name: main\n    gates:\n      - {name: status, rule: status}\n",
    );
    project.root_file(
        "contracts/task.yaml",
        "task_id: task\nfiles_owned: [\"src/**\"]\nfiles_readonly: [\"src/lock.rs\"]\n",
    );
    hook(&project, "claude", &write(&project, "src/ok.rs")).allowed();
    assert!(
        hook(&project, "claude", &write(&project, "docs/x.md"))
            .denied()
            .contains("contract.scope")
    );
    assert!(
        hook(&project, "claude", &write(&project, "src/lock.rs"))
            .denied()
            .contains("readonly")
    );
}

#[test]
fn shell_commands_are_held_to_the_rules_and_to_what_they_visibly_write() {
    let project = project(RULES);
    let why = hook(
        &project,
        "claude",
        &bash(&project, "git add -A && git push origin main"),
    )
    .denied();
    assert!(
        why.contains("git push") && why.contains("pushing is for people"),
        "{why}"
    );
    assert!(
        hook(&project, "claude", &bash(&project, "echo hi > notes.txt"))
            .denied()
            .contains("notes.txt")
    );
    assert!(
        hook(
            &project,
            "claude",
            &bash(&project, "sed -i s/a/b/ src/lock.rs")
        )
        .denied()
        .contains("readonly")
    );
    assert!(
        hook(
            &project,
            "claude",
            &bash(&project, "cat <<EOF > docs/a.md\nx\nEOF")
        )
        .denied()
        .contains("docs/a.md")
    );
    hook(
        &project,
        "claude",
        &bash(&project, "cargo test && echo ok > src/out.txt"),
    )
    .allowed();
    // `ask`: Claude Code asks a person; Gemini CLI cannot, so the call waits for a person's
    // `validator approve` (tests/it/approvals.rs); with none by the deadline it is refused.
    let asked = hook(&project, "claude", &bash(&project, "./deploy.sh prod")).json();
    assert_eq!(
        asked["hookSpecificOutput"]["permissionDecision"], "ask",
        "{asked:#}"
    );
    let mut gemini = bash(&project, "./deploy.sh prod");
    gemini["hook_event_name"] = json!("BeforeTool");
    gemini["tool_name"] = json!("run_shell_command");
    let output = validator()
        .arg("-c")
        .arg(project.rules_path())
        .args(["hook", "gemini", "--deadline", "2s"])
        .current_dir(project.task_dir())
        .write_stdin(gemini.to_string())
        .output()
        .expect("run validator");
    let refused: Value = serde_json::from_slice(&output.stdout).expect("one JSON answer");
    assert_eq!(refused["decision"], "deny", "{refused:#}");
    assert!(
        refused["reason"]
            .as_str()
            .is_some_and(|r| r.contains("no one approved") && r.contains("a person runs it")),
        "{refused:#}"
    );
}

#[test]
fn a_write_no_one_could_see_coming_is_told_at_once_and_the_stop_still_fails() {
    let project = project(RULES);
    let command = "python3 -c \"open('notes.txt','w').write('x')\"";
    hook(&project, "claude", &bash(&project, command)).allowed();
    std::fs::write(project.task_dir().join("notes.txt"), "x").expect("the command's write");
    let answer = hook(
        &project,
        "claude",
        &post(
            &project,
            "Bash",
            json!({"command": command}),
            json!({"stdout": "", "stderr": "", "interrupted": false}),
        ),
    )
    .json();
    let told = answer["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .expect("context for the model")
        .to_owned();
    assert!(
        answer.get("decision").is_none(),
        "the tool's output stays: {answer:#}"
    );
    assert!(
        told.contains("notes.txt") && told.contains("undo"),
        "{answer:#}"
    );
    // Told once: the next tool's answer does not repeat it.
    hook(
        &project,
        "claude",
        &post(
            &project,
            "Bash",
            json!({"command": "ls"}),
            json!({"stdout": "", "stderr": ""}),
        ),
    )
    .allowed();
    // The stop fails on it all the same.
    let stop = json!({
        "session_id": "s1", "cwd": project.task_dir(), "hook_event_name": "Stop",
        "last_assistant_message": "Done.\nSTATUS: OK",
    });
    let answer = hook(&project, "claude", &stop).json();
    assert_eq!(answer["decision"], "block", "{answer:#}");
    assert!(
        answer["reason"]
            .as_str()
            .is_some_and(|r| r.contains("notes.txt"))
    );
}

#[test]
fn the_same_refusal_again_and_again_stops_the_agent_and_never_counts_as_an_attempt() {
    let project = project(&RULES.replace("tools:\n", "tools:\n  stop_after: 3\n"));
    for _ in 0..2 {
        hook(&project, "claude", &write(&project, "notes.txt")).denied();
    }
    let third = hook(&project, "claude", &write(&project, "notes.txt")).json();
    assert_eq!(third["continue"], false, "{third:#}");
    assert_eq!(third["hookSpecificOutput"]["permissionDecision"], "deny");
    let events: Vec<Value> = std::fs::read_to_string(project.path().join("state/events.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|e: &Value| e["event"] == "tool_denied")
        .collect();
    assert_eq!(events.len(), 3);
    assert_eq!(events[2]["details"]["times"], 3);
    // The stop's attempts are untouched: its first stop is attempt 1.
    let stop = json!({
        "session_id": "s1", "cwd": project.task_dir(), "hook_event_name": "Stop",
        "last_assistant_message": "Done.\nSTATUS: OK",
    });
    hook(&project, "claude", &stop);
    let state: Value = serde_json::from_slice(
        &std::fs::read(project.path().join(format!(
            "state/tasks/{}.json",
            validator::hook::session_key("s1", None)
        )))
        .expect("session state"),
    )
    .expect("json");
    assert_eq!(state["attempt"], 1, "{state:#}");
    // Codex drops an answer with a field it does not know, deny and all: it is only refused.
    let mut codex = write(&project, "notes.txt");
    codex["session_id"] = json!("s2");
    for _ in 0..3 {
        let answer = hook(&project, "codex", &codex).json();
        assert!(answer.get("continue").is_none(), "{answer:#}");
        assert_eq!(answer["hookSpecificOutput"]["permissionDecision"], "deny");
    }
}

#[test]
fn the_same_tool_error_three_times_tells_the_agent_to_change_approach() {
    let project = project(RULES);
    let failed = || {
        post(
            &project,
            "Bash",
            json!({"command": "cargo build"}),
            json!({"stdout": "", "stderr": "error[E0425]: cannot find value `x` (took 1.2s)", "exit_code": 101}),
        )
    };
    for _ in 0..2 {
        hook(&project, "claude", &failed()).allowed();
    }
    let third = hook(&project, "claude", &failed()).json();
    assert!(
        third["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .is_some_and(
                |r| r.contains("STOP. Same error 3 times. Use a different tool or approach.")
            ),
        "{third:#}"
    );
}

#[test]
fn past_max_tokens_the_agent_is_stopped_and_its_stop_escalated() {
    let project = project(&RULES.replace("defaults:\n", "defaults:\n  max_tokens: 3000\n"));
    let transcript = project.path().join("transcript.jsonl");
    let line = |id: &str| {
        format!(
            "{{\"type\":\"assistant\",\"message\":{{\"id\":\"{id}\",\"usage\":{{\"input_tokens\":1000,\"cache_creation_input_tokens\":30,\"cache_read_input_tokens\":200,\"output_tokens\":50}}}}}}\n"
        )
    };
    std::fs::write(&transcript, line("m1") + &line("m1") + &line("m2")).expect("transcript");
    hook(&project, "claude", &write(&project, "src/a.rs")).allowed();
    std::fs::write(
        &transcript,
        line("m1") + &line("m1") + &line("m2") + &line("m3"),
    )
    .expect("transcript");
    let answer = hook(&project, "claude", &write(&project, "src/a.rs")).json();
    assert_eq!(answer["continue"], false, "{answer:#}");
    let reason = answer["hookSpecificOutput"]["permissionDecisionReason"].to_string();
    assert!(
        reason.contains("3840 tokens used (max_tokens 3000)"),
        "{reason}"
    );
    let stop = json!({
        "session_id": "s1", "cwd": project.task_dir(), "hook_event_name": "Stop",
        "transcript_path": transcript, "last_assistant_message": "Done.\nSTATUS: OK",
    });
    let answer = hook(&project, "claude", &stop).json();
    assert_eq!(answer["continue"], false, "{answer:#}");
    assert!(
        answer["stopReason"]
            .as_str()
            .is_some_and(|r| r.contains("ESCALATED"))
    );
}

#[test]
fn gemini_and_opencode_refuse_in_their_own_words() {
    let project = project(RULES);
    let mut input = write(&project, "notes.txt");
    input["hook_event_name"] = json!("BeforeTool");
    input["tool_name"] = json!("write_file");
    let answer = hook(&project, "gemini", &input).json();
    assert_eq!(answer["decision"], "deny", "{answer:#}");
    assert!(
        answer["reason"]
            .as_str()
            .is_some_and(|r| r.contains("notes.txt"))
    );
    input["hook_event_name"] = json!("tool.execute.before");
    input["tool_name"] = json!("write");
    input["tool_input"] = json!({"filePath": project.task_dir().join("notes.txt")});
    let answer = hook(&project, "opencode", &input).json();
    assert_eq!(answer["decision"], "deny", "{answer:#}");
}

#[test]
fn broken_rules_refuse_a_write_and_never_show_the_rules_path() {
    let project = project(
        "version: 1\npipelines:\n  - name: main\n    gates:\n      - {name: x, rule: exists, pathz: [a]}\n",
    );
    let reply = hook(&project, "claude", &write(&project, "notes.txt"));
    let answer = reply.json();
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecision"], "deny",
        "{answer:#}"
    );
    let rules = project.rules_path().to_string_lossy().into_owned();
    assert!(!reply.stdout.contains(&rules), "{}", reply.stdout);
}

#[test]
fn a_patch_whose_headers_are_indented_is_read_as_codex_reads_it() {
    // Codex's apply_patch trims each header line: an indented `*** Add File:` still adds it.
    let project = project(RULES);
    let patch = pre(
        &project,
        "apply_patch",
        json!({"command": "*** Begin Patch\n  *** Add File: notes/padded.txt\n+x\n*** End Patch\n"}),
    );
    assert!(
        hook(&project, "codex", &patch)
            .denied()
            .contains("notes/padded.txt")
    );
}
