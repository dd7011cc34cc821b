//! What validator cannot count or keep out fails closed: a contract that owns no file lets no
//! file change (at the stop and before a tool runs); the agent's usage records that cannot be
//! read, or past what is read, escalate the session instead of counting as no tokens; and a
//! reviewer reads nothing of validator's own (its key, its state, its rules directory) and
//! changes no file's flags.

use serde_json::{Value, json};

use crate::common::pre_tool::{answer, input as pre, refuses};
use crate::common::{self, Project, gate, pipeline};

// ---------------------------------------------------------------------------------------------
// A contract that owns no file
// ---------------------------------------------------------------------------------------------

/// A project with a committed `src/lib.rs`, judged by a status gate and `contract`.
fn contracted(contract: &str) -> Project {
    let project = Project::new();
    project
        .rules(&pipeline("      - {name: status, rule: status}\n").replace(
            "state: state\n",
            "state: state\ncontracts: contracts\n",
        ))
        .root_file("contracts/task.yaml", contract)
        .file("src/lib.rs", "fn a() {}\n")
        .file("README.md", "old\n");
    common::commit_all(&project.task_dir());
    project
}

fn scope_messages(verdict: &Value) -> String {
    gate(verdict, "contract.scope")["findings"]
        .as_array()
        .map(|found| {
            found
                .iter()
                .map(|f| format!("{}: {}\n", f["file"], f["message"]))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_contract_owning_no_file_lets_no_file_change_at_the_stop() {
    let project = contracted("task_id: task\nfiles_owned: []\n");
    project
        .file("src/lib.rs", "fn b() {}\n")
        .signal("STATUS: OK\n");
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(gate(&verdict, "contract.scope")["outcome"], "fail");
    let found = scope_messages(&verdict);
    assert!(
        found.contains("src/lib.rs") && found.contains("owns no file"),
        "{found}"
    );

    // The envelope shape says the same.
    let project = contracted("contract:\n  task_id: task\n  files_owned: []\n");
    project.file("README.md", "new\n").signal("STATUS: OK\n");
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    assert!(scope_messages(&verdict).contains("owns no file"));
}

#[test]
fn a_contract_that_leaves_files_owned_out_limits_only_its_readonly_files() {
    let project = contracted("task_id: task\nfiles_readonly: [\"README.md\"]\n");
    project
        .file("src/lib.rs", "fn b() {}\n")
        .file("src/new.rs", "fn c() {}\n")
        .signal("STATUS: OK\n");
    let (code, verdict) = project.verdict();
    assert_eq!(code, 0, "{verdict:#}");
    project.file("README.md", "new\n");
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    assert!(scope_messages(&verdict).contains("`readonly`"));

    // `files_owned: null` is the key left out.
    let project = contracted("task_id: task\nfiles_owned: null\n");
    project
        .file("src/lib.rs", "fn b() {}\n")
        .signal("STATUS: OK\n");
    let (code, verdict) = project.verdict();
    assert_eq!(code, 0, "{verdict:#}");
}

fn write(project: &Project, rel: &str) -> Value {
    let file = project.task_dir().join(rel);
    pre(project, "Write", json!({"file_path": file, "content": "x"}))
}

#[test]
fn a_contract_owning_no_file_refuses_every_write_before_it_runs() {
    let project = contracted("task_id: task\nfiles_owned: []\n");
    for rel in ["src/lib.rs", "README.md", "new.txt"] {
        let said = answer(&project, "claude", &write(&project, rel));
        assert!(refuses(&said), "{rel}: {said:?}");
        assert!(said.1.contains("owns no file"), "{said:?}");
    }
    let line = pre(
        &project,
        "Bash",
        json!({"command": "echo x > notes.txt", "description": "d"}),
    );
    assert!(refuses(&answer(&project, "claude", &line)));

    let open = contracted("task_id: task\nfiles_readonly: [\"README.md\"]\n");
    assert!(!refuses(&answer(&open, "claude", &write(&open, "src/lib.rs"))));
    assert!(refuses(&answer(&open, "claude", &write(&open, "README.md"))));
}

// ---------------------------------------------------------------------------------------------
// The agent's usage records, against max_tokens
// ---------------------------------------------------------------------------------------------

/// A project whose session may use 3000 tokens, with the transcript Claude Code names.
fn budgeted() -> Project {
    let project = Project::new();
    project
        .rules(&pipeline("      - {name: status, rule: status}\n").replace(
            "state: state\n",
            "state: state\ndefaults:\n  max_tokens: 3000\n",
        ))
        .file("src/lib.rs", "fn a() {}\n");
    common::commit_all(&project.task_dir());
    project
}

/// One assistant message of Claude Code's transcript, `tokens` in all.
fn message(id: &str, tokens: u64) -> String {
    format!(
        "{{\"type\":\"assistant\",\"message\":{{\"id\":\"{id}\",\"usage\":{{\"input_tokens\":{tokens},\"output_tokens\":0}}}}}}\n"
    )
}

/// The answer to a Write before it runs: whether it was refused, and what was said.
fn tool_call(project: &Project) -> (bool, String) {
    let said = answer(project, "claude", &write(project, "src/lib.rs"));
    (refuses(&said), said.1)
}

#[test]
fn a_transcript_swapped_for_a_link_escalates_instead_of_counting_nothing() {
    let project = budgeted();
    let transcript = project.path().join("transcript.jsonl");
    std::fs::write(&transcript, message("m1", 1000)).expect("transcript");
    let (refused, said) = tool_call(&project);
    assert!(!refused, "under max_tokens: {said}");

    let elsewhere = project.path().join("elsewhere.jsonl");
    std::fs::write(&elsewhere, message("m1", 1000) + &message("m2", 5000)).expect("copy");
    std::fs::remove_file(&transcript).expect("rm");
    std::os::unix::fs::symlink(&elsewhere, &transcript).expect("link");
    let (refused, said) = tool_call(&project);
    assert!(refused, "{said}");
    assert!(said.contains("cannot be counted") && said.contains("link"), "{said}");
    assert!(said.contains("ESCALATED"), "{said}");

    // Gone, it cannot be counted either.
    let project = budgeted();
    let (refused, said) = tool_call(&project);
    assert!(refused && said.contains("cannot be counted"), "{said}");
}

#[test]
fn decoy_subagent_transcripts_cannot_hide_a_real_subagents_tokens() {
    let project = budgeted();
    std::fs::write(project.path().join("transcript.jsonl"), message("m1", 10)).expect("main");
    let subagents = project.path().join("transcript/subagents");
    std::fs::create_dir_all(&subagents).expect("subagents");
    for i in 0..64 {
        std::fs::write(subagents.join(format!("agent-{i:03}.jsonl")), "").expect("decoy");
    }
    std::fs::write(subagents.join("agent-zzz.jsonl"), message("s1", 5000)).expect("real");
    let (refused, said) = tool_call(&project);
    assert!(refused, "{said}");
    assert!(said.contains("5010 tokens used (max_tokens 3000)"), "{said}");

    // So many that they are past what is counted: the session's tokens cannot be told.
    let project = budgeted();
    std::fs::write(project.path().join("transcript.jsonl"), message("m1", 10)).expect("main");
    let subagents = project.path().join("transcript/subagents");
    std::fs::create_dir_all(&subagents).expect("subagents");
    for i in 0..300 {
        std::fs::write(subagents.join(format!("agent-{i:03}.jsonl")), "").expect("decoy");
    }
    let (refused, said) = tool_call(&project);
    assert!(refused, "{said}");
    assert!(said.contains("cannot be counted") && said.contains("subagent"), "{said}");
}
