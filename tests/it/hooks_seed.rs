// The design documents' hook examples as written (issue 30): seed 001's plan compliance on
// every subagent stop and its own test input, the person's prompt kept and its gates run at
// UserPromptSubmit (a gates.json's keywords, the runner's `commands` built-in), and the brief
// at session start. Every test drives the real binary over a temp directory.

use serde_json::{Value, json};

use crate::common::{Project, lint, pipeline, validator};
use crate::hooks::{hook, run_hook, stop, subagent_stop};

/// A project judged by `gates`, with `extra` top-level rules keys.
fn project(gates: &str, extra: &str) -> Project {
    let project = Project::new();
    project.rules(&pipeline(gates).replacen("pipelines:", &format!("{extra}pipelines:"), 1));
    project
}

/// What Claude Code sends on `UserPromptSubmit`.
fn prompt(project: &Project, session: &str, text: &str) -> Value {
    json!({
        "session_id": session,
        "transcript_path": "/home/u/.claude/projects/p/transcript.jsonl",
        "cwd": project.task_dir(),
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": text,
    })
}

/// The `additionalContext` of a context answer to `event`.
fn context(reply: &crate::hooks::Reply, event: &str) -> String {
    assert_eq!(reply.code, 0, "{}", reply.stderr);
    let answer = reply.json();
    assert_eq!(
        answer["hookSpecificOutput"]["hookEventName"], event,
        "{answer:#}"
    );
    assert!(
        answer.get("decision").is_none(),
        "a prompt is never blocked: {answer:#}"
    );
    answer["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .expect("additionalContext")
        .to_owned()
}

#[test]
fn seed_001s_own_test_input_is_judged_as_a_stop() {
    let project = project("      - {name: plan, rule: status}\n", "");
    let rules = project.rules_path();
    // The seed pipes `{"output": ...}` with no session, no cwd and no event.
    run_hook(
        &rules,
        "claude",
        r#"{"output": "STATUS: OK\nTask complete"}"#,
    )
    .passed();
    let stopped = run_hook(
        &rules,
        "claude",
        r#"{"output": "STATUS: BLOCKED\nREASON: Plan approach won't work"}"#,
    )
    .stopped();
    assert!(stopped.contains("Plan approach won't work"), "{stopped}");
    // A BLOCKED session stays stopped until reset; the missing STATUS is a new session's.
    let project = crate::hooks_seed::project("      - {name: plan, rule: status}\n", "");
    let reason = run_hook(
        &project.rules_path(),
        "claude",
        r#"{"output": "Task complete"}"#,
    )
    .blocked("block");
    assert!(reason.contains("no STATUS"), "{reason}");
}

#[test]
fn seed_001s_test_input_saved_as_a_done_signal_reads_its_status() {
    let project = project("      - {name: plan, rule: status}\n", "");
    project.root_file("done.json", r#"{"output": "STATUS: OK\nTask complete"}"#);
    let output = validator()
        .arg("-c")
        .arg(project.rules_path())
        .args(["check", "--task-dir"])
        .arg(project.task_dir())
        .arg("--signal")
        .arg(project.path().join("done.json"))
        .output()
        .expect("run validator");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("STATUS: OK"), "{stdout}");
}

#[test]
fn a_subagent_stop_without_status_is_sent_back_by_default() {
    // No `status` gate: plan compliance is built in for subagent stops.
    let project = project(&lint("lint", r#"["true"]"#, ""), "");
    let reason = hook(
        &project,
        "claude",
        &subagent_stop(&project, "s", "a1", "Implemented it."),
    )
    .blocked("block");
    assert!(
        reason.contains("plan-compliance") && reason.contains("no STATUS"),
        "{reason}"
    );
    hook(
        &project,
        "claude",
        &subagent_stop(&project, "s", "a1", "Done.\nSTATUS: OK"),
    )
    .passed();
    // STATUS: BLOCKED stops the subagent for a person (the dispatcher decides).
    let stopped = hook(
        &project,
        "claude",
        &subagent_stop(
            &project,
            "s",
            "a2",
            "STATUS: BLOCKED\nREASON: plan says JWT, service uses OAuth2",
        ),
    )
    .stopped();
    assert!(stopped.contains("plan says JWT"), "{stopped}");
    // The main agent talks to a person: its stop needs no STATUS unless the rules say so.
    hook(&project, "claude", &stop(&project, "s", "Implemented it.")).passed();
    // Codex has subagent stops too.
    let reason = hook(
        &project,
        "codex",
        &subagent_stop(&project, "s2", "a1", "Implemented it."),
    )
    .blocked("block");
    assert!(reason.contains("no STATUS"), "{reason}");
}

#[test]
fn plan_compliance_is_turned_off_explicitly_and_not_doubled() {
    let project = project(
        &lint("lint", r#"["true"]"#, ""),
        "hook:\n  subagent_status: off\n",
    );
    hook(
        &project,
        "claude",
        &subagent_stop(&project, "s", "a1", "Implemented it."),
    )
    .passed();
    // A pipeline with its own status gate reads STATUS once, under its own name.
    let project = project_with_status();
    let reason = hook(
        &project,
        "claude",
        &subagent_stop(&project, "s", "a1", "Implemented it."),
    )
    .blocked("block");
    assert!(
        reason.contains("own-status") && !reason.contains("plan-compliance"),
        "{reason}"
    );
    // A misspelt setting is refused with its place.
    let project = crate::hooks_seed::project(
        &lint("lint", r#"["true"]"#, ""),
        "hook:\n  subagent_status: no\n",
    );
    let output = validator()
        .arg("-c")
        .arg(project.rules_path())
        .args(["rules", "check"])
        .output()
        .expect("run validator");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("subagent_status"), "{stderr}");
}

fn project_with_status() -> Project {
    project("      - {name: own-status, rule: status}\n", "")
}

/// A gates.json whose UserPromptSubmit hook runs `check` when the prompt says so, and lists the
/// runner's `commands` built-in.
fn prompt_gates(project: &Project) -> std::path::PathBuf {
    let path = project.path().join("gates.json");
    let file = json!({
        "gates": {
            "check": {"command": "test -f checked", "keywords": ["check", "lint it"]},
            "always": {"command": "true"},
            "done": {"command": "test -f built"}
        },
        "hooks": {
            "UserPromptSubmit": {"gates": ["commands", "check", "always"]},
            "Stop": {"gates": ["done"]}
        }
    });
    std::fs::write(&path, file.to_string()).expect("write gates.json");
    path
}

#[test]
fn a_prompt_runs_the_gates_whose_keywords_it_holds_and_says_what_they_found() {
    let project = Project::new();
    let rules = prompt_gates(&project);
    let env = |command: &mut assert_cmd::Command| {
        command.env("CLAUDE_PROJECT_DIR", project.task_dir());
    };
    let ask = |text: &str| {
        crate::hooks::run_hook_with(
            &rules,
            "claude",
            prompt(&project, "s", text).to_string(),
            env,
        )
    };
    // "Check" as a word, in any case: `check` runs, fails, and the agent is told so.
    let said = context(&ask("Please Check the parser."), "UserPromptSubmit");
    assert!(said.contains("`check`") && said.contains("FAIL"), "{said}");
    assert!(said.contains("check (lint)"), "{said}");
    // A keyword inside another word is not the word; the gate without keywords still runs.
    let said = context(&ask("rechecking is not asked for"), "UserPromptSubmit");
    assert!(
        !said.contains("`check`") && said.contains("`always`"),
        "{said}"
    );
    // A phrase keyword, and a passing run.
    project.file("checked", "");
    let said = context(&ask("lint it please"), "UserPromptSubmit");
    assert!(said.contains("PASS"), "{said}");
    // The Stop hook still runs its own gates only.
    let reply = crate::hooks::run_hook_with(
        &rules,
        "claude",
        stop(&project, "s", "done").to_string(),
        env,
    );
    let reason = reply.blocked("block");
    assert!(
        reason.contains("done") && !reason.contains("`check`"),
        "{reason}"
    );
    // `rules check` shows the prompt's pipeline, and no keyword note for a prompt-only gate.
    let output = validator()
        .arg("-c")
        .arg(&rules)
        .args(["rules", "check"])
        .output()
        .expect("run validator");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("pipeline UserPromptSubmit"), "{stdout}");
    assert!(!stdout.contains("`keywords` filters"), "{stdout}");
}

#[test]
fn a_prompt_hook_lists_only_gates_it_can_run() {
    let project = Project::new();
    let path = project.path().join("gates.json");
    let file = json!({
        "gates": {"check": {"command": "true"}},
        "hooks": {"UserPromptSubmit": {"gates": ["plan-compliance"]}, "Stop": {"gates": ["check"]}}
    });
    std::fs::write(&path, file.to_string()).expect("write");
    let output = validator()
        .arg("-c")
        .arg(&path)
        .args(["rules", "check"])
        .output()
        .expect("run validator");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("a prompt has none"), "{stderr}");
}

#[test]
fn gemini_before_agent_is_a_prompt() {
    let project = Project::new();
    let rules = prompt_gates(&project);
    let input = json!({
        "session_id": "g",
        "cwd": project.task_dir(),
        "hook_event_name": "BeforeAgent",
        "prompt": "check it",
    });
    let reply = crate::hooks::run_hook_with(&rules, "gemini", input.to_string(), |command| {
        command.env("GEMINI_PROJECT_DIR", project.task_dir());
    });
    let said = context(&reply, "BeforeAgent");
    assert!(said.contains("`check`"), "{said}");
}

#[test]
fn the_session_starts_with_the_tasks_brief_once() {
    let project = project(&lint("lint", r#"["true"]"#, ""), "");
    let start = json!({
        "session_id": "s",
        "cwd": project.task_dir(),
        "hook_event_name": "SessionStart",
        "source": "startup",
    });
    let brief = context(&hook(&project, "claude", &start), "SessionStart");
    // What the gates check and the STATUS block the worker must end with.
    assert!(brief.contains("lint"), "{brief}");
    assert!(brief.contains("STATUS: OK"), "{brief}");
    assert!(brief.lines().count() < 50, "{brief}");
    // Told once: the first prompt adds nothing more.
    let reply = hook(&project, "claude", &prompt(&project, "s", "add a parser"));
    assert_eq!(
        (reply.code, reply.stdout.as_str()),
        (0, ""),
        "{}",
        reply.stderr
    );
    // A session that had no SessionStart hook gets it with its first prompt, then not again.
    let first = context(
        &hook(&project, "codex", &prompt(&project, "t", "add a parser")),
        "UserPromptSubmit",
    );
    assert!(first.contains("STATUS: OK"), "{first}");
    let reply = hook(&project, "codex", &prompt(&project, "t", "and a test"));
    assert_eq!(reply.stdout, "", "{}", reply.stderr);
    // `hook.brief: false` gives none.
    let quiet =
        crate::hooks_seed::project(&lint("lint", r#"["true"]"#, ""), "hook:\n  brief: false\n");
    let reply = hook(&quiet, "claude", &start);
    assert_eq!(
        (reply.code, reply.stdout.as_str()),
        (0, ""),
        "{}",
        reply.stderr
    );
}
