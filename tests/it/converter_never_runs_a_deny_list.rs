//! `init --from` never turns into a gate a command the file lists under a key that does not
//! say it is a check to run: a deny list of commands (`forbidden_bash`) becomes `tools.commands`
//! deny rules, and every other key that holds commands (unknown, or named as a permission) is
//! listed as not carried over, its commands never run.

use std::path::Path;

use crate::common::{self, Project, pre_tool};

/// `init --from FROM` writing the project's rules file: the exit code and stdout.
fn convert(project: &Project, from: &Path) -> (Option<i32>, String) {
    let output = common::validator()
        .arg("-c")
        .arg(project.rules_path())
        .args(["init", "--from"])
        .arg(from)
        .output()
        .expect("run validator");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[test]
fn commands_the_agent_must_not_run_become_deny_rules_and_never_gates() {
    let project = Project::new();
    let canary = project.path().join("canary");
    std::fs::create_dir_all(&canary).expect("canary dir");
    let ran = |n: u32| format!("touch {}/{n}", canary.display());
    let from = project.path().join("gates.json");
    let gates = serde_json::json!({
        "lint": "true --lint",
        "forbidden_bash": ["git push --force", "rm -rf /", ran(1), "--no-verify", "git push --force(?!-with-lease)"],
        "deny_commands": [{"pattern": ran(2), "reason": "it writes the canary"}],
        "never_run": ran(3),
        "backend": [ran(4), ran(5)],
        "dangerous_tests": ran(6),
        "forbidden": [{"command": ran(7)}],
        "deny": {"command": ran(8)},
        "gates": [
            {"name": "ok", "run": "true"},
            {"name": "push", "command": ran(9), "action": "deny"},
            {"name": "allowed-only", "command": ran(10), "allowed": false}
        ],
        "commands": {"deny": ran(11), "test": "true --test", "blocked": [ran(12)]},
        "require_run": [{"command": "true --required"}]
    });
    std::fs::write(&from, gates.to_string()).expect("write gates.json");
    let (code, stdout) = convert(&project, &from);
    assert_eq!(code, Some(0), "{stdout}");
    let (code, stderr) = common::rules_check(&project.rules_path());
    assert_eq!(code, Some(0), "{stderr}");

    // Every key whose commands did not become gates is named in what `init --from` prints.
    for key in [
        "`forbidden_bash`",
        "`deny_commands`",
        "`never_run`",
        "`backend`",
        "`dangerous_tests`",
        "`forbidden`",
        "`deny`",
        "gate `push`",
        "gate `allowed-only`",
        "`blocked`",
        "`forbidden_bash`: the entry `git push --force(?!-with-lease)` reads as a regular expression",
    ] {
        assert!(
            stdout.contains(&format!("not carried over: {key}")),
            "{key} not reported:\n{stdout}"
        );
    }
    let yaml = std::fs::read_to_string(project.rules_path()).expect("written");
    for run in yaml.lines().filter(|l| l.trim_start().starts_with("run:")) {
        assert!(
            !run.contains("canary") && !run.contains("push") && !run.contains("rm "),
            "a listed command became a gate: {run}\n{yaml}"
        );
    }
    for gate in ["name: lint", "name: ok", "name: test", "true --required"] {
        assert!(yaml.contains(gate), "{gate} not converted:\n{yaml}");
    }

    // The gates that were carried over run, and none of the listed commands does.
    let (code, verdict) = project.verdict();
    assert_eq!(verdict["verdict"], "PASS", "{verdict}");
    assert_eq!(code, 0);
    let written: Vec<_> = std::fs::read_dir(&canary)
        .expect("canary dir")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert!(written.is_empty(), "listed commands ran: {written:?}");

    // The deny list is enforced where validator sees the agent's commands: before they run.
    pre_tool::assert_shell_refused(
        &project,
        &[
            "git push --force origin main",
            "rm -rf /",
            "git commit --no-verify -m x",
            &ran(1),
            &ran(2),
        ],
    );
    pre_tool::assert_shell_allowed(&project, &["git push origin main", "ls"]);
}

#[test]
fn a_file_whose_only_commands_sit_under_unknown_keys_converts_to_nothing() {
    let project = Project::new();
    let from = project.path().join("gates.json");
    std::fs::write(
        &from,
        r#"{"backend": ["rm -rf build", "git clean -fdx"], "blockedCommands": ["curl evil.sh"]}"#,
    )
    .expect("write gates.json");
    let output = common::validator()
        .arg("-c")
        .arg(project.rules_path())
        .args(["init", "--from"])
        .arg(&from)
        .output()
        .expect("run validator");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("nothing in it became a gate"), "{stderr}");
    assert!(stderr.contains("`backend`"), "{stderr}");
    assert!(!project.rules_path().exists());
}
