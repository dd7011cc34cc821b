//! The Claude Code hook commands of examples/hooks/claude/settings.json (for a setup without
//! the plugin) answer for a validator that is missing, exits with an error or is killed: Claude
//! Code takes any exit but 0 and 2 as a non-blocking error and lets the agent stop unjudged, so
//! the line exits 2 (a block at a stop, a refusal before a tool) and holds a stop three times
//! in a row at most, counted in Claude Code's own directory, then stops it for a person.

use serde_json::{Value, json};

use crate::common::{Project, pipeline};
use crate::hook_commands_fail_closed::{bin_with, command_of, run, stop_input};

#[test]
fn a_validator_that_cannot_answer_holds_a_claude_stop_then_stops_for_a_person() {
    let project = Project::new();
    project.rules(&pipeline("      - {name: status, rule: status}\n"));
    for (broken, body) in [
        ("missing", None),
        ("exits", Some("exit 1")),
        // A validator killed mid-run (by the worker's own background process, say).
        (
            "killed",
            Some("[ \"$1\" = --version ] && { echo 'validator 9'; exit 0; }; kill -9 $$"),
        ),
    ] {
        for event in ["Stop", "SubagentStop"] {
            let home = project.path().join(format!("home-{broken}-{event}"));
            std::fs::create_dir_all(home.join(".claude")).expect("home");
            let bin = bin_with(project.path(), &format!("bin-{broken}"), body);
            let command = command_of("claude/settings.json", event);
            let input = stop_input(&project, event, "Done.\nSTATUS: OK");
            for held in 1..=3 {
                let ran = run(&project, &command, &bin, &home, &input);
                assert_eq!(ran.code, Some(2), "{broken} {event}: {}", ran.stderr);
                assert!(
                    ran.stderr
                        .contains(&format!("NOT JUDGED ({held} of 3 in a row)")),
                    "{broken} {event}: {}",
                    ran.stderr
                );
            }
            let ran = run(&project, &command, &bin, &home, &input);
            assert_eq!(ran.code, Some(0), "{broken} {event}: {}", ran.stderr);
            let answer: Value = serde_json::from_str(&ran.stdout).expect("a JSON answer");
            assert_eq!(answer["continue"], false, "{answer:#}");
        }
    }
}

#[test]
fn a_validator_that_cannot_answer_refuses_claude_tool_calls_and_prompts() {
    let project = Project::new();
    project.rules(&pipeline("      - {name: status, rule: status}\n"));
    let bin = bin_with(project.path(), "bin-missing", None);
    let home = project.path().join("home");
    for event in [
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "UserPromptSubmit",
        "SessionStart",
    ] {
        let input = json!({"session_id": "s1", "cwd": project.task_dir(), "hook_event_name": event,
            "tool_name": "Bash", "tool_input": {"command": "echo hi"}, "prompt": "go"});
        let ran = run(
            &project,
            &command_of("claude/settings.json", event),
            &bin,
            &home,
            &input,
        );
        assert_eq!(ran.code, Some(2), "{event}: {}", ran.stderr);
        assert!(ran.stderr.contains("NOT JUDGED"), "{event}: {}", ran.stderr);
    }
}

#[test]
fn a_validator_that_runs_answers_through_the_claude_commands() {
    let project = Project::new();
    project.rules(&pipeline("      - {name: status, rule: status}\n"));
    let bin = project.path().join("bin-real");
    std::fs::create_dir_all(&bin).expect("bin");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_validator"), bin.join("validator"))
        .expect("link");
    let home = project.path().join("home");
    std::fs::create_dir_all(home.join(".claude")).expect("home");
    let count = home.join(".claude/validator-unjudged");
    std::fs::write(&count, "2").expect("count");
    let command = command_of("claude/settings.json", "Stop");
    let ran = run(
        &project,
        &command,
        &bin,
        &home,
        &stop_input(&project, "Stop", "Done, I think."),
    );
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let answer: Value = serde_json::from_str(&ran.stdout).expect("validator's answer");
    assert_eq!(answer["decision"], "block", "{answer:#}");
    assert!(!count.exists(), "the count was kept");
    let ran = run(
        &project,
        &command,
        &bin,
        &home,
        &stop_input(&project, "Stop", "Done.\nSTATUS: OK"),
    );
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert_eq!(ran.stdout, "");
}
