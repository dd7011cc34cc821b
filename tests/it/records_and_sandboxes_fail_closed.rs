//! What validator cannot count or keep out fails closed: a contract that owns no file lets no
//! file change (at the stop and before a tool runs); the agent's usage records that cannot be
//! read, or past what is read, escalate the session instead of counting as no tokens; and a
//! reviewer reads nothing of validator's own (its key, its state, its rules directory) and
//! changes no file's flags.

use std::path::Path;

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
