// `validator hook claude|codex|gemini` as each agent drives it: the JSON the agent sends on
// stdin, the answer it reads on stdout, the exit code, attempts per session, the breakers, and
// the ready settings in examples/hooks. Every test runs the real binary over a temp directory.

use crate::common;
use std::path::Path;

use crate::common::{Project, lint, pipeline, validator};
use serde_json::{Value, json};

const FAILING: &str = r#"["false"]"#;
const PASSING: &str = r#"["true"]"#;

/// A project whose rules hold `gates` and the given breaker settings.
fn project_with(gates: &str, max_attempts: u32, strikes: u32) -> Project {
    let project = Project::new();
    let rules = pipeline(gates).replacen(
        "pipelines:",
        &format!("defaults:\n  max_attempts: {max_attempts}\n  strikes: {strikes}\npipelines:"),
        1,
    );
    project.rules(&rules);
    project
}

/// What Claude Code (and Codex) send on `Stop`.
pub(crate) fn stop(project: &Project, session: &str, message: &str) -> Value {
    json!({
        "session_id": session,
        "transcript_path": "/home/u/.claude/projects/p/transcript.jsonl",
        "cwd": project.task_dir(),
        "permission_mode": "default",
        "hook_event_name": "Stop",
        "stop_hook_active": false,
        "last_assistant_message": message,
    })
}

/// What Claude Code sends on `SubagentStop`.
pub(crate) fn subagent_stop(
    project: &Project,
    session: &str,
    agent_id: &str,
    message: &str,
) -> Value {
    let mut input = stop(project, session, message);
    input["hook_event_name"] = json!("SubagentStop");
    input["agent_id"] = json!(agent_id);
    input["agent_type"] = json!("general-purpose");
    input["agent_transcript_path"] = json!("/home/u/.claude/projects/p/agent.jsonl");
    input
}

/// What Gemini CLI sends on `AfterAgent`, with the session transcript it keeps: the prompt,
/// then `response` as the model's turn.
pub(crate) fn after_agent(project: &Project, session: &str, response: &str) -> Value {
    let transcript = project.path().join(format!("gemini-{session}.jsonl"));
    let lines = [
        json!({"sessionId": session, "kind": "main"}),
        json!({"id": "1", "type": "user", "content": [{"text": "add a parser"}]}),
        json!({"id": "2", "type": "gemini", "content": response}),
    ];
    let lines: String = lines.iter().map(|line| format!("{line}\n")).collect();
    std::fs::write(&transcript, lines).expect("gemini transcript");
    json!({
        "session_id": session,
        "transcript_path": transcript,
        "cwd": project.task_dir(),
        "hook_event_name": "AfterAgent",
        "timestamp": "2026-11-21T10:00:00Z",
        "prompt": "add a parser",
        "prompt_response": response,
        "stop_hook_active": false,
    })
}

pub(crate) struct Reply {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Reply {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|err| {
            panic!(
                "stdout is not one JSON answer ({err}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }

    /// A FAIL answer: `decision` is `word`, `reason` the feedback; returns the reason.
    pub(crate) fn blocked(&self, word: &str) -> String {
        assert_eq!(self.code, 0, "{}", self.stderr);
        let answer = self.json();
        assert_eq!(answer["decision"], word, "{answer:#}");
        assert!(answer.get("continue").is_none(), "{answer:#}");
        answer["reason"].as_str().expect("reason").to_owned()
    }

    /// A "let the agent stop" answer (BLOCKED, ESCALATED): `continue: false` and no decision;
    /// returns the stop reason.
    pub(crate) fn stopped(&self) -> String {
        assert_eq!(self.code, 0, "{}", self.stderr);
        let answer = self.json();
        assert!(answer.get("decision").is_none(), "{answer:#}");
        assert_eq!(answer["continue"], false, "{answer:#}");
        assert!(answer["systemMessage"].is_string(), "{answer:#}");
        answer["stopReason"]
            .as_str()
            .expect("stopReason")
            .to_owned()
    }

    pub(crate) fn passed(&self) {
        assert_eq!(self.code, 0, "{}", self.stderr);
        assert_eq!(self.stdout, "", "PASS answers nothing");
    }

    /// Refused: exit 1 (never 2, which agents read as "block"), nothing on stdout.
    pub(crate) fn refused(&self) -> &str {
        assert_eq!(
            self.code, 1,
            "stdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        assert_eq!(self.stdout, "", "nothing may reach the agent");
        assert!(self.stderr.contains("error"), "{}", self.stderr);
        &self.stderr
    }
}

/// Runs the hook as an agent would, in the project directory (`rules`' directory's `task`),
/// without an agent's project variables unless a test sets them.
pub(crate) fn run_hook(rules: &Path, agent: &str, stdin: impl Into<Vec<u8>>) -> Reply {
    run_hook_with(rules, agent, stdin, |_| {})
}

pub(crate) fn run_hook_with(
    rules: &Path,
    agent: &str,
    stdin: impl Into<Vec<u8>>,
    adjust: impl FnOnce(&mut assert_cmd::Command),
) -> Reply {
    let mut command = validator();
    command
        .arg("-c")
        .arg(rules)
        .args(["hook", agent])
        .current_dir(rules.parent().expect("the rules' directory").join("task"));
    for var in [
        "CLAUDE_PROJECT_DIR",
        "GEMINI_PROJECT_DIR",
        "CODEX_PROJECT_DIR",
    ] {
        command.env_remove(var);
    }
    adjust(&mut command);
    let output = command.write_stdin(stdin).output().expect("run validator");
    Reply {
        code: output.status.code().expect("exit code"),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

pub(crate) fn hook(project: &Project, agent: &str, input: &Value) -> Reply {
    run_hook(&project.rules_path(), agent, input.to_string())
}

fn reset(project: &Project, args: &[&str]) -> String {
    let output = validator()
        .arg("-c")
        .arg(project.rules_path())
        .arg("reset")
        .args(args)
        .output()
        .expect("run validator");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The `reset` command a stop answer names: everything after "run: ".
fn reset_command(stop_reason: &str) -> String {
    stop_reason
        .rsplit_once("run: ")
        .map(|(_, command)| command.trim().to_owned())
        .unwrap_or_else(|| panic!("no reset command in {stop_reason}"))
}

pub(crate) fn events(project: &Project) -> Vec<Value> {
    std::fs::read_to_string(project.path().join("state/events.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

#[test]
fn claude_stop_with_a_failing_gate_blocks_with_the_feedback() {
    let project = project_with(&lint("lint", FAILING, ""), 3, 3);
    let reason = hook(&project, "claude", &stop(&project, "s1", "All done.")).blocked("block");
    assert!(
        reason.starts_with("# validator: FAIL (task task, attempt 1 of 3)"),
        "{reason}"
    );
    assert!(reason.contains("- lint (lint)"), "{reason}");
    assert!(reason.lines().count() <= 60, "{reason}");

    let names: Vec<String> = events(&project)
        .iter()
        .map(|e| e["event"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        names,
        ["hook_run", "gate_started", "gate_finished", "hook_answered"]
    );
}

#[test]
fn claude_stop_with_passing_gates_answers_nothing() {
    let project = project_with(&lint("lint", PASSING, ""), 3, 3);
    hook(&project, "claude", &stop(&project, "s1", "All done.")).passed();
}

#[test]
fn the_last_message_is_the_done_signal() {
    let project = project_with("      - {name: status, rule: status}\n", 3, 3);
    let reason = hook(
        &project,
        "claude",
        &stop(&project, "s1", "I changed the parser."),
    )
    .blocked("block");
    assert!(reason.contains("status"), "{reason}");
    let message = "I changed the parser and its tests.\n\nSTATUS: OK\n";
    hook(&project, "claude", &stop(&project, "s1", message)).passed();
    hook(&project, "gemini", &after_agent(&project, "g1", message)).passed();
    // Missing message: an empty body, which has no STATUS.
    let mut input = stop(&project, "s2", "");
    input
        .as_object_mut()
        .expect("object")
        .remove("last_assistant_message");
    hook(&project, "codex", &input).blocked("block");
}

#[test]
fn codex_answers_as_claude_does() {
    let project = project_with(&lint("lint", FAILING, ""), 3, 3);
    let reason = hook(&project, "codex", &stop(&project, "c1", "done")).blocked("block");
    assert!(reason.contains("# validator: FAIL"), "{reason}");
    std::fs::write(project.rules_path(), pipeline(&lint("lint", PASSING, ""))).expect("rules");
    hook(&project, "codex", &stop(&project, "c1", "done")).passed();
}

#[test]
fn gemini_denies_with_the_feedback() {
    let project = project_with(&lint("lint", FAILING, ""), 3, 3);
    let reason = hook(&project, "gemini", &after_agent(&project, "g1", "done")).blocked("deny");
    assert!(reason.contains("# validator: FAIL"), "{reason}");
}

#[test]
fn gemini_is_judged_on_its_last_turn_not_on_every_answer_since_the_prompt() {
    // Gemini CLI 0.61's `prompt_response` joins the answers before a deny with the retry; its
    // transcript says where the retry starts.
    let project = project_with("      - {name: status, rule: status}\n", 5, 5);
    let transcript = project.path().join("session.jsonl");
    std::fs::write(
        &transcript,
        concat!(
            "{\"sessionId\": \"g\", \"kind\": \"main\"}\n",
            "{\"id\": \"1\", \"type\": \"user\", \"content\": [{\"text\": \"add a parser\"}]}\n",
            "{\"id\": \"2\", \"type\": \"gemini\", \"content\": \"Done.\\nSTATUS: OK\"}\n",
            "{\"id\": \"3\", \"type\": \"user\", \"content\": [{\"text\": \"# validator: FAIL\"}]}\n",
            "{\"id\": \"4\", \"type\": \"gemini\", \"content\": \"Fixed the parser.\"}\n",
        ),
    )
    .expect("transcript");
    let mut input = after_agent(&project, "g2", "Done.\nSTATUS: OK\nFixed the parser.");
    input["transcript_path"] = json!(transcript);
    let reason = hook(&project, "gemini", &input).blocked("deny");
    assert!(reason.contains("STATUS"), "{reason}");

    // Without a transcript to read, the last turn cannot be known: the input's own answer,
    // which holds the STATUS from before the deny, is not judged instead.
    input["transcript_path"] = json!(project.path().join("missing.jsonl"));
    let reason = hook(&project, "gemini", &input).blocked("deny");
    assert!(reason.contains("cannot be known"), "{reason}");
}

#[test]
fn opencode_idle_sessions_are_judged_as_stops_with_the_plugins_input() {
    // What examples/hooks/opencode/validator.js sends when a session goes idle.
    let project = project_with(&lint("lint", FAILING, ""), 1, 9);
    let idle = json!({
        "session_id": "ses_1",
        "cwd": project.task_dir(),
        "hook_event_name": "session.idle",
        "last_assistant_message": "Done.\nSTATUS: OK",
    });
    let reason = hook(&project, "opencode", &idle).blocked("block");
    assert!(reason.contains("# validator: FAIL"), "{reason}");
    assert!(
        hook(&project, "opencode", &idle)
            .stopped()
            .contains("ESCALATED")
    );
    // Wired to a Claude Code event, it refuses rather than answer in another agent's terms.
    let mut stop = idle.clone();
    stop["hook_event_name"] = json!("Stop");
    assert_eq!(hook(&project, "opencode", &stop).code, 1);

    let plugin = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/hooks/opencode/validator.js"),
    )
    .expect("the plugin");
    for expected in [
        "\"hook\", \"opencode\"",
        "session.idle",
        ".prompt({ path: { id: sessionID }",
    ] {
        assert!(plugin.contains(expected), "{expected}");
    }
}

#[test]
fn a_gate_that_signals_validator_does_not_let_the_agent_stop() {
    // The gates' commands are the worker's code: one that sends validator SIGTERM must not turn
    // the stop into an ERROR, which lets the agent stop. It is a failure, and it counts.
    let project = project_with(
        &lint("tests", r#"["sh", "-c", "kill -TERM $PPID; sleep 5"]"#, ""),
        1,
        9,
    );
    let reason = hook(&project, "claude", &stop(&project, "s1", "done")).blocked("block");
    assert!(reason.contains("stopped by a signal"), "{reason}");
    assert!(
        hook(&project, "claude", &stop(&project, "s1", "done"))
            .stopped()
            .contains("ESCALATED")
    );
}

#[test]
fn a_subagent_counts_its_attempts_apart_from_its_session() {
    let project = project_with(&lint("lint", FAILING, ""), 2, 9);
    let parent = |n: u32| {
        let reason = hook(&project, "claude", &stop(&project, "s1", "done")).blocked("block");
        assert!(reason.contains(&format!("attempt {n} of 2")), "{reason}");
    };
    let child = |id: &str, n: u32| {
        let reason = hook(
            &project,
            "claude",
            &subagent_stop(&project, "s1", id, "done"),
        )
        .blocked("block");
        assert!(reason.contains(&format!("attempt {n} of 2")), "{reason}");
    };
    parent(1);
    child("agent-a", 1);
    child("agent-a", 2);
    child("agent-b", 1);
    parent(2);
    // agent-a is out of attempts; its parent and sibling are not affected by it.
    hook(
        &project,
        "claude",
        &subagent_stop(&project, "s1", "agent-a", "done"),
    )
    .stopped();
    child("agent-b", 2);
}

#[test]
fn past_max_attempts_the_agent_is_let_stop_and_told_how_to_reset() {
    let project = project_with(&lint("lint", FAILING, ""), 2, 9);
    for _ in 0..2 {
        hook(&project, "claude", &stop(&project, "s1", "done")).blocked("block");
    }
    let reason = hook(&project, "claude", &stop(&project, "s1", "done")).stopped();
    assert!(reason.contains("ESCALATED"), "{reason}");
    assert!(reason.contains("max_attempts"), "{reason}");
    let command = reset_command(&reason);
    assert!(command.starts_with("validator -c "), "{command}");
    assert!(command.contains(" reset hook-"), "{command}");

    // Still stopped, however often the agent stops again, and for Gemini too.
    for _ in 0..3 {
        hook(&project, "claude", &stop(&project, "s1", "done")).stopped();
    }
    let escalated = events(&project)
        .iter()
        .filter(|e| e["event"] == "escalated")
        .count();
    assert_eq!(escalated, 1);

    // The command in the message, run as a person would, clears the session.
    let name = command.rsplit(' ').next().expect("name");
    assert!(reset(&project, &[name]).contains("cleared"));
    let reason = hook(&project, "claude", &stop(&project, "s1", "done")).blocked("block");
    assert!(reason.contains("attempt 1 of 2"), "{reason}");
}

#[test]
fn claude_codes_own_block_limit_trips_the_breaker_before_the_agent_gives_up() {
    // Claude Code ends a turn by itself after 9 blocks in a row (or its variable's number):
    // the breaker must answer first, or the agent stops with the task FAIL and no reset advice.
    let project = project_with(&lint("lint", FAILING, ""), 20, 30);
    let claude = |session: &str, cap: Option<&str>| {
        run_hook_with(
            &project.rules_path(),
            "claude",
            stop(&project, session, "done").to_string(),
            |command| {
                command.env_remove("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP");
                if let Some(cap) = cap {
                    command.env("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", cap);
                }
            },
        )
    };
    for _ in 0..8 {
        claude("s1", None).blocked("block");
    }
    let reason = claude("s1", None).stopped();
    assert!(reason.contains("ESCALATED"), "{reason}");
    assert!(
        reason.contains("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP"),
        "{reason}"
    );
    // The variable says how many blocks it accepts, read as Claude Code reads it ("4.0" is 4).
    for _ in 0..4 {
        claude("s2", Some("4.0")).blocked("block");
    }
    assert!(claude("s2", Some("4.0")).stopped().contains("ESCALATED"));
    // 0 is no limit of its own: the rules' max_attempts holds.
    for _ in 0..12 {
        claude("s4", Some("0")).blocked("block");
    }
    // Codex has no such limit: its agent gets every attempt the rules allow.
    for _ in 0..12 {
        hook(&project, "codex", &stop(&project, "s3", "done")).blocked("block");
    }

    let output = validator()
        .args(["rules", "check", "-c"])
        .arg(project.rules_path())
        .env_remove("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP")
        .output()
        .expect("run validator");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("Claude Code ends a turn by itself after 8 stop-hook blocks")
            && stdout.contains("trips at stop 9"),
        "{stdout}"
    );
}

#[test]
fn reset_by_session_id_clears_a_session_and_a_subagent() {
    let project = project_with(&lint("lint", FAILING, ""), 1, 9);
    hook(&project, "claude", &stop(&project, "sess-9", "done")).blocked("block");
    hook(&project, "claude", &stop(&project, "sess-9", "done")).stopped();
    hook(
        &project,
        "claude",
        &subagent_stop(&project, "sess-9", "ag", "done"),
    )
    .blocked("block");
    hook(
        &project,
        "claude",
        &subagent_stop(&project, "sess-9", "ag", "done"),
    )
    .stopped();

    assert!(reset(&project, &["--session", "sess-9"]).contains("cleared"));
    hook(&project, "claude", &stop(&project, "sess-9", "done")).blocked("block");
    // The subagent is its own session: still stopped until reset by its id.
    hook(
        &project,
        "claude",
        &subagent_stop(&project, "sess-9", "ag", "done"),
    )
    .stopped();
    assert!(reset(&project, &["--session", "sess-9", "--agent-id", "ag"]).contains("cleared"));
    hook(
        &project,
        "claude",
        &subagent_stop(&project, "sess-9", "ag", "done"),
    )
    .blocked("block");
}

#[test]
fn the_same_failure_strikes_times_escalates() {
    let project = project_with(&lint("lint", FAILING, ""), 10, 2);
    hook(&project, "claude", &stop(&project, "s1", "done")).blocked("block");
    let reason = hook(&project, "claude", &stop(&project, "s1", "done")).stopped();
    assert!(
        reason.contains("the same failure 2 times in a row"),
        "{reason}"
    );
    hook(&project, "gemini", &after_agent(&project, "s1", "done")).stopped();
}

#[test]
fn a_pass_starts_the_count_again() {
    let project = project_with("      - {name: status, rule: status}\n", 2, 2);
    hook(&project, "claude", &stop(&project, "s1", "done")).blocked("block");
    hook(&project, "claude", &stop(&project, "s1", "STATUS: OK")).passed();
    let reason = hook(&project, "claude", &stop(&project, "s1", "done")).blocked("block");
    assert!(reason.contains("attempt 1 of 2"), "{reason}");
}

#[test]
fn a_worker_that_reports_blocked_is_let_stop_and_stays_stopped() {
    let project = project_with("      - {name: status, rule: status}\n", 3, 3);
    let message =
        "I cannot go on.\n\nSTATUS: BLOCKED\nREASON: the plan says JWT, the service uses OAuth2\n";
    let reason = hook(&project, "claude", &stop(&project, "s1", message)).stopped();
    assert!(reason.contains("BLOCKED"), "{reason}");
    assert!(reason.contains(" reset hook-"), "{reason}");
    // Even a message that would pass does not resume the session before a person resets it.
    let reason = hook(&project, "claude", &stop(&project, "s1", "STATUS: OK")).stopped();
    assert!(reason.contains("BLOCKED"), "{reason}");
    reset(&project, &["--session", "s1"]);
    hook(&project, "claude", &stop(&project, "s1", "STATUS: OK")).passed();
}

#[test]
fn an_error_verdict_holds_the_stop_and_tells_the_person() {
    // The command does not exist: maybe the rules' fault, maybe not; never a free stop.
    let project = project_with(&lint("lint", r#"["validator-no-such-tool"]"#, ""), 3, 3);
    let inputs = [
        ("claude", "block", stop(&project, "s1", "done")),
        ("gemini", "deny", after_agent(&project, "g1", "done")),
    ];
    for (agent, word, input) in &inputs {
        let reply = hook(&project, agent, input);
        let reason = reply.blocked(word);
        assert!(reason.contains("ERROR"), "{reason}");
        let message = reply.json()["systemMessage"]
            .as_str()
            .expect("systemMessage")
            .to_owned();
        assert!(message.contains("ERROR"), "{message}");
    }
}

#[test]
fn unparseable_input_is_refused_without_blocking() {
    let project = project_with(&lint("lint", FAILING, ""), 3, 3);
    let rules = project.rules_path();
    for agent in ["claude", "codex", "gemini"] {
        run_hook(&rules, agent, "not json").refused();
        run_hook(&rules, agent, "").refused();
        run_hook(&rules, agent, "[1, 2]").refused();
    }
    // Fields empty or of the wrong type (a missing session is a hand-made input's: judged).
    run_hook(&rules, "claude", r#"{"session_id": " ", "cwd": "/"}"#).refused();
    run_hook(&rules, "claude", r#"{"session_id": 7, "cwd": "/"}"#).refused();
    // Wired to an event it does not answer, an answer would mean something else.
    let mut input = stop(&project, "s1", "done");
    input["hook_event_name"] = json!("Notification");
    assert!(
        hook(&project, "claude", &input)
            .refused()
            .contains("Stop and SubagentStop and PreToolUse")
    );
    let stderr = hook(&project, "gemini", &stop(&project, "s1", "done"))
        .refused()
        .to_owned();
    assert!(stderr.contains("AfterAgent"), "{stderr}");
    // Nothing was judged.
    assert!(events(&project).is_empty());
}

#[test]
fn a_missing_rules_file_holds_the_stop_and_bad_arguments_never_block() {
    let project = Project::new();
    let input = stop(&project, "s1", "done").to_string();
    // No rules: the stop cannot be judged, so it is not let through.
    let reason = run_hook(&project.rules_path(), "claude", input.clone()).blocked("block");
    assert!(reason.contains("could not be judged"), "{reason}");

    // With no rules file anywhere, the count is kept in the user's state directory: this
    // test's own, so no earlier run's count stops this session.
    let output = validator()
        .current_dir(project.path())
        .env_remove("VALIDATOR_CONFIG")
        .env("XDG_STATE_HOME", project.path().join("user-state"))
        .args(["hook", "claude"])
        .write_stdin(input.clone())
        .output()
        .expect("run validator");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stdout).contains(r#""decision":"block""#));

    for args in [
        &["hook", "claud"][..],
        &["-c", "/x/validator.yaml", "hook", "claud"],
        &["-c", "/x/validator.yaml", "hook"],
        &["hook", "claude", "--no-such-flag"],
    ] {
        let output = validator()
            .args(args)
            .write_stdin(input.clone())
            .output()
            .expect("run validator");
        assert_eq!(output.status.code(), Some(1), "{args:?}: {output:?}");
        assert!(output.stdout.is_empty());
    }
}

#[test]
fn the_example_settings_name_the_adapter() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/hooks");
    let command_of = |file: &str, event: &str| -> String {
        let text = std::fs::read_to_string(examples.join(file)).expect("example");
        let settings: Value =
            serde_json::from_str(&text).unwrap_or_else(|err| panic!("{file} is not JSON: {err}"));
        settings["hooks"][event][0]["hooks"][0]["command"]
            .as_str()
            .unwrap_or_else(|| panic!("no {event} command hook in {file}"))
            .to_owned()
    };
    for (file, event, agent) in [
        ("claude/settings.json", "Stop", "claude"),
        ("claude/settings.json", "SubagentStop", "claude"),
        ("claude/settings.json", "PreToolUse", "claude"),
        ("claude/settings.json", "PostToolUse", "claude"),
        ("claude/settings.json", "PostToolUseFailure", "claude"),
        ("codex/hooks.json", "Stop", "codex"),
        ("codex/hooks.json", "SubagentStop", "codex"),
        ("codex/hooks.json", "PreToolUse", "codex"),
        ("codex/hooks.json", "PostToolUse", "codex"),
        ("gemini/settings.json", "AfterAgent", "gemini"),
        ("gemini/settings.json", "BeforeTool", "gemini"),
        ("gemini/settings.json", "AfterTool", "gemini"),
    ] {
        let command = command_of(file, event);
        let words: Vec<&str> = command.split_whitespace().collect();
        // Each wraps it in a shell line that answers for a validator that cannot run
        // (tests/it/hook_commands_fail_closed.rs, claude_hook_commands_fail_closed.rs).
        let at = words
            .windows(2)
            .position(|pair| pair == ["validator", "hook"])
            .unwrap_or_else(|| panic!("{file} {event}: no `validator hook` in {command}"));
        assert_eq!(words.get(at + 2), Some(&agent), "{command}");
        // The rules file is named by VALIDATOR_CONFIG in the agent's environment: Claude Code
        // shows a blocking hook's command line to its model, and no path may reach it.
        assert!(
            !words.contains(&"-c")
                && !command.contains(".yaml")
                && !command.contains("gates.json")
                && !command.contains("VALIDATOR_CONFIG"),
            "{file}: no rules path on the command line: {command}"
        );
    }

    // The example rules file is valid.
    let output = validator()
        .arg("-c")
        .arg(examples.join("validator.yaml"))
        .args(["rules", "check"])
        .output()
        .expect("run validator");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
}

#[test]
fn the_example_rules_judge_what_an_agent_sends() {
    // The example's own rules over a task with a passing test command: the STATUS block in the
    // agent's last message decides.
    let project = Project::new();
    let rules = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/hooks/validator.yaml"),
    )
    .expect("example rules")
    .replace("cargo test --quiet", r#""true""#)
    .replace(
        r#"["cargo", "clippy", "--all-targets", "--", "-D", "warnings"]"#,
        r#"["true"]"#,
    );
    project.rules(&rules);
    // The example holds the session to `max_tokens`, counted from the transcript the agent
    // names: one there is (one that is not cannot be counted, and escalates).
    let transcript = project.path().join("transcript.jsonl");
    std::fs::write(&transcript, "").expect("transcript");
    let stop_saying = |message: &str| {
        let mut input = stop(&project, "s1", message);
        input["transcript_path"] = json!(transcript);
        input
    };
    hook(&project, "claude", &stop_saying("Finished.")).blocked("block");
    hook(&project, "claude", &stop_saying("Finished.\nSTATUS: OK")).passed();
    assert!(project.path().join(".validator/events.jsonl").exists());
}

// ---------------------------------------------------------------------------------------------
// The project, never the directory the agent moved to

/// A project whose pipeline and contract name the task `task` (the project directory), with a
/// gate that fails, and a subdirectory the agent can move to.
fn project_bound_to_its_task() -> Project {
    let project = Project::new();
    project
        .rules("version: 1\nstate: state\ncontracts: contracts\npipelines:\n  - name: main\n    tasks: [\"task\"]\n    gates:\n      - {name: lint, rule: lint, run: [\"false\"]}\n")
        .root_file("contracts/task.yaml", "task_id: task\nfiles_readonly: [\"Cargo.lock\"]\n")
        .file("sub/notes.txt", "x\n");
    project
}

#[test]
fn a_stop_from_a_subdirectory_judges_the_project() {
    let project = project_bound_to_its_task();
    let mut input = stop(&project, "s1", "done");
    input["cwd"] = json!(project.task_dir().join("sub"));
    // As Claude Code runs it: its project directory in the environment, the hook wherever.
    let reply = run_hook_with(&project.rules_path(), "claude", input.to_string(), |cmd| {
        cmd.env("CLAUDE_PROJECT_DIR", project.task_dir())
            .current_dir(project.task_dir().join("sub"));
    });
    let reason = reply.blocked("block");
    assert!(reason.contains("(task task, attempt 1"), "{reason}");
    // Without the variable, the repository the hook runs in is the project.
    common::git(&project.task_dir(), &["init", "-q"]);
    let reply = run_hook_with(&project.rules_path(), "codex", input.to_string(), |cmd| {
        cmd.current_dir(project.task_dir().join("sub"));
    });
    assert!(reply.blocked("block").contains("(task task, attempt 2"));
}

#[test]
fn the_hook_command_can_name_the_task_and_its_directory() {
    let project = project_bound_to_its_task();
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let input = stop(&project, "s1", "done");
    let reply = run_hook_with(&project.rules_path(), "claude", input.to_string(), |cmd| {
        cmd.arg("--task-dir")
            .arg(project.task_dir())
            .args(["--task", "task"])
            .env("CLAUDE_PROJECT_DIR", elsewhere.path())
            .current_dir(elsewhere.path());
    });
    assert!(reply.blocked("block").contains("(task task, attempt 1"));
}

#[test]
fn a_stop_no_pipeline_matches_is_blocked_not_let_through() {
    let project = project_bound_to_its_task();
    let reply = run_hook_with(
        &project.rules_path(),
        "claude",
        stop(&project, "s1", "done").to_string(),
        |cmd| {
            cmd.args(["--task", "other"]);
        },
    );
    let reason = reply.blocked("block");
    assert!(reason.contains("no pipeline"), "{reason}");
}

#[test]
fn a_last_message_past_the_signal_cap_is_judged_by_its_end() {
    let project = project_with("      - {name: status, rule: status}\n", 3, 3);
    let long = format!("{}\n\nSTATUS: OK\n", "words ".repeat(400_000));
    hook(&project, "claude", &stop(&project, "s1", &long)).passed();
    let long = format!(
        "{}\n\nSTATUS: BLOCKED\nREASON: stuck\n",
        "words ".repeat(400_000)
    );
    let reason = hook(&project, "claude", &stop(&project, "s2", &long)).stopped();
    assert!(reason.contains("stuck"), "{reason}");
}

#[test]
fn an_input_too_long_to_read_blocks_with_a_short_reason() {
    let project = project_with(&lint("lint", PASSING, ""), 3, 3);
    let huge = "x".repeat(17 * 1024 * 1024);
    let reason = hook(&project, "claude", &stop(&project, "s1", &huge)).blocked("block");
    assert!(reason.contains("over 16 MiB"), "{reason}");
    assert!(reason.lines().count() < 5, "{reason}");
}

#[test]
fn a_state_directory_that_cannot_be_written_still_gets_the_agent_its_answer() {
    let project = project_with(&lint("lint", FAILING, ""), 3, 3);
    // A file where the state directory belongs, as a full or read-only disk would refuse it.
    std::fs::write(project.path().join("state"), "in the way").expect("block state");
    let reply = hook(&project, "claude", &stop(&project, "s1", "done"));
    reply.blocked("block");
    assert!(reply.stderr.contains("cannot"), "{}", reply.stderr);
}

/// A project directory whose name is not UTF-8 is judged and logged (lossily), never a panic
/// that leaves the agent's stop unjudged.
#[test]
fn a_project_directory_named_in_invalid_utf8_is_judged() {
    use std::os::unix::ffi::OsStrExt;
    let project = project_with("      - {name: status, rule: status}\n", 3, 3);
    let odd = project
        .path()
        .join(std::ffi::OsStr::from_bytes(b"proj\xff"));
    std::fs::create_dir(&odd).expect("odd directory");
    let input = stop(&project, "s1", "done\nSTATUS: OK");
    let reply = run_hook_with(&project.rules_path(), "claude", input.to_string(), |cmd| {
        cmd.env("CLAUDE_PROJECT_DIR", &odd);
    });
    reply.passed();
    let ran = events(&project)
        .into_iter()
        .find(|event| event["event"] == "hook_run")
        .expect("a hook_run event");
    assert!(
        ran["details"]["project"]
            .as_str()
            .is_some_and(|dir| dir.ends_with("proj\u{fffd}")),
        "{ran}"
    );
}

#[test]
fn the_same_answer_and_changes_stop_after_stop_is_told_then_escalated() {
    // Strikes out of reach, so only the drift breaker can end it.
    let drifting = |project: &Project| {
        let rules = std::fs::read_to_string(project.rules_path()).expect("rules");
        project.rules(&rules.replacen(
            "  strikes: 20\n",
            "  strikes: 20\n  drift: {stops: 3}\n",
            1,
        ));
    };
    let project = project_with(&lint("lint", FAILING, ""), 20, 20);
    drifting(&project);
    project.file("src/a.rs", "fn a() {}\n");
    common::commit_all(&project.task_dir());
    project.file("src/a.rs", "fn a() { 1 }\n");
    let say = |n: u32| format!("Fixed it in {n} places, tests pass now.\nSTATUS: OK");
    let first = hook(&project, "claude", &stop(&project, "s", &say(1))).blocked("block");
    assert!(!first.contains("repeating yourself"), "{first}");
    // Numbers and case do not make the second different.
    let second = hook(
        &project,
        "claude",
        &stop(&project, "s", &say(2).to_uppercase()),
    )
    .blocked("block");
    assert!(second.contains("you are repeating yourself"), "{second}");
    let third = hook(&project, "claude", &stop(&project, "s", &say(3))).stopped();
    assert!(
        third.contains("ESCALATED") && third.contains("the same answer"),
        "{third}"
    );
    assert!(
        events(&project)
            .iter()
            .any(|e| e["event"] == "escalated" && e["details"]["breaker"] == "drift"),
        "{:#?}",
        events(&project)
    );

    // A different approach starts over.
    let project = project_with(&lint("lint", FAILING, ""), 20, 20);
    drifting(&project);
    hook(&project, "claude", &stop(&project, "t", &say(1))).blocked("block");
    hook(&project, "claude", &stop(&project, "t", &say(1))).blocked("block");
    let other = hook(
        &project,
        "claude",
        &stop(
            &project,
            "t",
            "I rewrote the parser from scratch with a table.\nSTATUS: OK",
        ),
    )
    .blocked("block");
    assert!(!other.contains("repeating yourself"), "{other}");
}

#[test]
fn an_agent_clis_json_output_is_judged_by_its_final_message() {
    // The real captures of each pinned CLI's machine-readable output (tests/corpus/agent-streams):
    // as a done signal, the agent's final message is what the status gate reads.
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/agent-streams");
    for cli in ["claude", "codex", "gemini", "opencode"] {
        for run in ["pass", "fail"] {
            let project = Project::new();
            project.rules(&pipeline("      - {name: status, rule: status}\n"));
            let stream = std::fs::read_to_string(corpus.join(format!("{cli}-{run}.jsonl")))
                .expect("capture");
            project.signal(&stream);
            let (code, verdict) = project.verdict();
            assert_eq!(code, 0, "{cli}-{run}: {verdict:#}");
            assert_eq!(verdict["gates"][0]["summary"], "STATUS: OK", "{cli}-{run}");
        }
    }
    // A stream no agent writes is a FAIL that says what it is.
    let project = Project::new();
    project.rules(&pipeline("      - {name: status, rule: status}\n"));
    project.signal("{\"event\": \"start\"}\n{\"event\": \"end\"}\n");
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    assert!(
        common::reasons(&verdict).contains("from no agent validator reads"),
        "{verdict:#}"
    );
}
