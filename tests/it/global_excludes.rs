//! The user's global excludes (`core.excludesFile`, `~/.config/git/ignore` by default) through
//! the real binary, with HOME a temporary directory: they hide files in a `validator check` the
//! user runs, never where a worker could have written them (a worker's report, an agent's
//! shell, an agent hook); and a Python virtualenv no committed rule ignores is one finding that
//! says what line to commit, never its files to fix.

use std::path::Path;

use serde_json::Value;

use crate::common::{self, Project, commit_all, gate, isolate_git};
use crate::hooks::{run_hook_with, stop};

/// Variables an agent's shell or validator's own confinement sets: removed, so the test
/// process's own environment (perhaps an agent's) does not decide.
const MARKERS: &[&str] = &[
    "VALIDATOR_CONFINED",
    "VALIDATOR_WATCHER",
    "VALIDATOR_BROKER",
    "VALIDATOR_TASK",
    "CLAUDECODE",
    "CLAUDE_CODE_ENTRYPOINT",
    "GEMINI_CLI",
    "CODEX_SANDBOX",
    "CODEX_SANDBOX_NETWORK_DISABLED",
    "CODEX_THREAD_ID",
    "OPENCODE",
];

/// A committed repository with a scope gate denying `*.pem`, a new `build/ca.pem` nothing
/// committed ignores, and a home directory whose global excludes list `build/`.
fn project() -> Project {
    let project = Project::new();
    project
        .rules(&common::pipeline(
            "      - name: scope\n        rule: file-scope\n        deny: [\"**/*.pem\"]\n",
        ))
        .file("src/lib.py", "x = 1\n")
        .file(".gitignore", "__pycache__/\n");
    commit_all(&project.task_dir());
    project
        .file("build/ca.pem", "-----BEGIN CERTIFICATE-----\n")
        .root_file("home/.config/git/ignore", "build/\n");
    project
}

fn home(project: &Project) -> std::path::PathBuf {
    project.path().join("home")
}

/// `validator check --format json` with HOME the project's own and no agent's markers, as a
/// person runs it; `adjust` adds to it.
fn check(project: &Project, adjust: impl FnOnce(&mut assert_cmd::Command)) -> (i32, Value) {
    let mut cmd = project.check();
    isolate_git(&mut cmd);
    cmd.env("HOME", home(project))
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("GIT_CONFIG_GLOBAL")
        .args(["--format", "json"]);
    for var in MARKERS {
        cmd.env_remove(var);
    }
    adjust(&mut cmd);
    common::json_verdict(cmd)
}

fn scope(verdict: &Value) -> String {
    gate(verdict, "scope").to_string()
}

#[test]
fn the_users_own_check_honours_the_global_excludes_and_says_so() {
    let project = project();
    let (code, verdict) = check(&project, |_| {});
    assert_eq!(code, 0, "{verdict:#}");
    let summary = gate(&verdict, "scope")["summary"].to_string();
    assert!(summary.contains("global excludes"), "{summary}");
}

#[test]
fn without_them_the_same_file_fails() {
    let project = project();
    std::fs::remove_file(home(&project).join(".config/git/ignore")).expect("remove");
    let (code, verdict) = check(&project, |_| {});
    assert_eq!(code, 1, "{verdict:#}");
    assert!(scope(&verdict).contains("build/ca.pem"), "{verdict:#}");
}

#[test]
fn the_excludes_file_core_excludes_file_names_is_the_one_read() {
    let project = project();
    std::fs::remove_file(home(&project).join(".config/git/ignore")).expect("remove");
    project
        .root_file("home/my-ignores", "build/\n")
        .root_file("home/.gitconfig", "[core]\n\texcludesFile = ~/my-ignores\n");
    let (code, verdict) = check(&project, |_| {});
    assert_eq!(code, 0, "{verdict:#}");
}

#[test]
fn a_check_of_a_workers_report_does_not_read_them() {
    let project = project();
    project.signal("STATUS: OK\n");
    let (code, verdict) = check(&project, |_| {});
    assert_eq!(code, 1, "{verdict:#}");
    assert!(scope(&verdict).contains("build/ca.pem"), "{verdict:#}");
}

#[test]
fn a_check_in_an_agents_shell_or_under_confinement_does_not_read_them() {
    for var in [
        "CLAUDECODE",
        "VALIDATOR_CONFINED",
        "GEMINI_CLI",
        "VALIDATOR_TASK",
    ] {
        let project = project();
        let (code, verdict) = check(&project, |cmd| {
            cmd.env(var, "1");
        });
        assert_eq!(code, 1, "{var}: {verdict:#}");
        assert!(
            scope(&verdict).contains("build/ca.pem"),
            "{var}: {verdict:#}"
        );
    }
}

#[test]
fn the_agent_hook_never_reads_them() {
    let project = project();
    let input = stop(&project, "s1", "done");
    let reply = run_hook_with(&project.rules_path(), "claude", input.to_string(), |cmd| {
        cmd.env("HOME", home(&project))
            .env_remove("XDG_CONFIG_HOME");
        for var in MARKERS {
            cmd.env_remove(var);
        }
        isolate_git(cmd);
    });
    let reason = reply.blocked("block");
    assert!(reason.contains("build/ca.pem"), "{reason}");
}

/// A virtualenv in `.venv/` (its `pyvenv.cfg`, an interpreter link out of the task, pip's
/// certificates) that nothing committed ignores.
fn with_virtualenv(project: &Project) {
    project.file(".venv/pyvenv.cfg", "home = /usr/bin\n").file(
        ".venv/lib/python3/site-packages/pip/_vendor/certifi/cacert.pem",
        "-----BEGIN CERTIFICATE-----\n",
    );
    let bin = project.task_dir().join(".venv/bin");
    std::fs::create_dir_all(&bin).expect("bin");
    std::os::unix::fs::symlink(Path::new("/usr/bin/env"), bin.join("python")).expect("link");
}

#[test]
fn a_virtualenv_no_committed_rule_ignores_is_one_finding_naming_the_line_to_commit() {
    let project = project();
    with_virtualenv(&project);
    let (code, verdict) = check(&project, |cmd| {
        cmd.env("CLAUDECODE", "1");
    });
    assert_eq!(code, 1, "{verdict:#}");
    let findings = gate(&verdict, "scope")["findings"]
        .as_array()
        .expect("findings")
        .clone();
    let venv: Vec<&Value> = findings
        .iter()
        .filter(|f| f["file"].as_str().is_some_and(|f| f.starts_with(".venv")))
        .collect();
    assert_eq!(venv.len(), 1, "{findings:#?}");
    assert_eq!(venv[0]["file"], ".venv/", "{findings:#?}");
    let message = venv[0]["message"].as_str().expect("message");
    assert!(message.contains("`/.venv/`"), "{message}");
    assert!(message.contains(".gitignore"), "{message}");
    assert!(message.contains("do not edit or delete it"), "{message}");
    // The rest of the change set is still judged.
    assert!(scope(&verdict).contains("build/ca.pem"), "{verdict:#}");
}

#[test]
fn a_virtualenv_the_users_global_excludes_list_passes_the_users_own_check() {
    let project = project();
    with_virtualenv(&project);
    std::fs::write(
        home(&project).join(".config/git/ignore"),
        "build/\n.venv/\n",
    )
    .expect("excludes");
    let (code, verdict) = check(&project, |_| {});
    assert_eq!(code, 0, "{verdict:#}");
}
