//! A tool call validator cannot judge, because its rules file or the task's contract cannot be
//! read, is refused with the reason in each agent's words: a worker that breaks its rules file
//! or contract must not turn every tool-time rule off by it. A tool that only reads still runs.

use serde_json::json;

use crate::common::Project;
use crate::common::pre_tool::{answer, input, refuses};

const BROKEN: &str = "version: 1\npipelines:\n  - name: main\n    gates:\n      - {name: x, rule: exists, pathz: [a]}\n";

fn project(rules: &str) -> Project {
    let project = Project::new();
    project.rules(rules).file("src/lib.rs", "fn a() {}\n");
    project
}

#[test]
fn a_shell_or_write_call_under_unreadable_rules_is_refused_with_the_reason() {
    let project = project(BROKEN);
    let rules = project.rules_path().to_string_lossy().into_owned();
    let shell = input(&project, "Bash", json!({"command": "git status"}));
    let write = input(
        &project,
        "Write",
        json!({"file_path": project.task_dir().join("src/lib.rs"), "content": "x"}),
    );
    for call in [shell, write] {
        let reply = answer(&project, "claude", &call);
        assert!(refuses(&reply), "{reply:?}");
        assert!(reply.1.contains("cannot read its rules"), "{}", reply.1);
        assert!(
            !reply.1.contains(&rules),
            "the rules path stays out: {}",
            reply.1
        );
    }
}

#[test]
fn each_agent_is_told_in_its_own_words_that_the_call_is_refused() {
    let project = project(BROKEN);
    for (agent, tool, event) in [
        ("gemini", "run_shell_command", "BeforeTool"),
        ("codex", "Bash", "PreToolUse"),
    ] {
        let mut call = input(&project, tool, json!({"command": "git status"}));
        call["hook_event_name"] = json!(event);
        let (code, stdout, stderr) = answer(&project, agent, &call);
        assert_eq!(code, 0, "{stderr}");
        assert!(stdout.contains("deny"), "{agent}: {stdout}");
        assert!(stdout.contains("cannot be judged"), "{agent}: {stdout}");
    }
}

#[test]
fn a_read_under_unreadable_rules_is_left_to_the_agent() {
    let project = project(BROKEN);
    let call = input(
        &project,
        "Read",
        json!({"file_path": project.task_dir().join("src/lib.rs")}),
    );
    let reply = answer(&project, "claude", &call);
    assert!(!refuses(&reply), "{reply:?}");
    assert!(reply.1.contains("not judged"), "{}", reply.1);
}

#[test]
fn a_shell_call_whose_contract_cannot_be_read_is_refused() {
    let project = project(
        "version: 1\nstate: state\ncontracts: contracts\npipelines:\n  - name: main\n    gates:\n      - {name: scope, rule: file-scope, allow: [\"**\"]}\n",
    );
    project.root_file("contracts/task.yaml", "files_owned: [unclosed\n");
    let call = input(&project, "Bash", json!({"command": "touch src/new.rs"}));
    let reply = answer(&project, "claude", &call);
    assert!(refuses(&reply), "{reply:?}");
    assert!(reply.1.contains("contract"), "{}", reply.1);
}
