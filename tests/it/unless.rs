//! `unless:` through the real binary: a gate is skipped when a file surely says another gate
//! does its work (the node pack's `lint` where the `test` script lints), runs when the file
//! says nothing of it or cannot be read, and runs when the worker changed the file.

use crate::common::{self, Project, commit_all, gate, git, isolate_git, pipeline};

const LINTS: &str =
    "{\"scripts\": {\"lint\": \"eslint .\", \"test\": \"npm run lint && npm run unit\"}}\n";
const TESTS_ONLY: &str = "{\"scripts\": {\"lint\": \"eslint .\", \"test\": \"tape test/*.js\"}}\n";

/// A project whose `lint` gate fails when it runs, unless package.json's test script lints.
fn project(package: &str) -> Project {
    let project = Project::new();
    project.rules(&pipeline(
        "      - name: lint\n        rule: lint\n        run: [\"false\"]\n        unless:\n          - {file: package.json, contains: '\"test\"\\s*:\\s*\"[^\"]*\\bnpm run lint\\b'}\n",
    ));
    project.file("package.json", package);
    project
}

fn judged(project: &Project) -> (i32, serde_json::Value) {
    let mut cmd = project.check();
    isolate_git(&mut cmd);
    cmd.args(["--format", "json"]);
    common::json_verdict(cmd)
}

#[test]
fn a_gate_whose_work_another_gate_does_is_skipped_and_says_why() {
    let project = project(LINTS);
    let (code, verdict) = judged(&project);
    assert_eq!(code, 0, "{verdict:#}");
    let lint = gate(&verdict, "lint");
    assert_eq!(lint["outcome"], "skipped", "{verdict:#}");
    let summary = lint["summary"].as_str().expect("summary");
    assert!(summary.contains("`package.json` containing"), "{summary}");
    assert!(
        summary.contains("(`unless:`), so another gate does its work"),
        "{summary}"
    );
}

#[test]
fn a_gate_runs_where_the_file_does_not_say_so() {
    let project = project(TESTS_ONLY);
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(gate(&verdict, "lint")["outcome"], "fail", "{verdict:#}");
}

#[test]
fn a_file_too_large_to_read_lets_the_gate_run() {
    let mut big = String::from(LINTS);
    big.push_str(&" ".repeat(1024 * 1024 + 1));
    let project = project(&big);
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
}

#[test]
fn the_workers_change_to_the_file_cannot_turn_the_gate_off() {
    let project = project(TESTS_ONLY);
    commit_all(&project.task_dir());
    project.file("package.json", LINTS);
    git(&project.task_dir(), &["status", "--short"]);
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(gate(&verdict, "lint")["outcome"], "fail", "{verdict:#}");
}

#[test]
fn unless_takes_no_key() {
    let project = Project::new();
    project.rules(&pipeline(
        "      - name: lint\n        rule: lint\n        run: [\"true\"]\n        unless: [{file: package.json, key: scripts.test}]\n",
    ));
    let (code, text) = common::rules_check(&project.rules_path());
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("`unless:` has `key:`"), "{text}");
}
