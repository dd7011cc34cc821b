// The result cache: a gate with `inputs:` that passed is `cached` on a retry while its inputs,
// its definition and its program are unchanged, and runs again as soon as one changes.

use crate::common;
use std::fs;

use crate::common::{Project, gate, pipeline};
use serde_json::Value;

/// A gate that records each run in `runs-<name>` beside the task, then runs `then`.
fn counted(project: &Project, name: &str, inputs: &str, then: &str) -> String {
    let script = format!("{name}.sh");
    project.root_file(
        &script,
        &format!(
            "echo run >> \"{}/runs-{name}\"\n{then}\n",
            project.path().display()
        ),
    );
    format!(
        "      - {{name: {name}, rule: lint, run: [\"sh\", \"{}\"], inputs: {inputs}}}\n",
        project.path().join(&script).display()
    )
}

fn runs(project: &Project, name: &str) -> usize {
    fs::read_to_string(project.path().join(format!("runs-{name}")))
        .map(|text| text.lines().count())
        .unwrap_or(0)
}

fn outcome(verdict: &Value, name: &str) -> String {
    gate(verdict, name)["outcome"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_passed_gate_is_cached_on_an_unchanged_retry_and_runs_again_when_an_input_changes() {
    let project = Project::new();
    let lint = counted(&project, "lint", "[\"src/**/*.py\"]", "exit 0");
    project.rules(&pipeline(&lint));
    project.file("src/a.py", "x = 1\n").file("notes.txt", "a");

    let (code, verdict) = project.verdict();
    assert_eq!((code, outcome(&verdict, "lint")), (0, "pass".into()));
    let (code, verdict) = project.verdict();
    assert_eq!((code, outcome(&verdict, "lint")), (0, "cached".into()));
    assert_eq!(runs(&project, "lint"), 1);

    // A file outside the inputs does not matter; one inside does.
    project.file("notes.txt", "b");
    assert_eq!(outcome(&project.verdict().1, "lint"), "cached");
    project.file("src/a.py", "x = 2\n");
    assert_eq!(outcome(&project.verdict().1, "lint"), "pass");
    assert_eq!(runs(&project, "lint"), 2);
    // A new file that the globs match, then a removed one.
    project.file("src/b.py", "");
    assert_eq!(outcome(&project.verdict().1, "lint"), "pass");
    fs::remove_file(project.task_dir().join("src/b.py")).unwrap();
    assert_eq!(outcome(&project.verdict().1, "lint"), "pass");
    assert_eq!(outcome(&project.verdict().1, "lint"), "cached");
    assert_eq!(runs(&project, "lint"), 4);

    // The text output says so.
    let output = project.check().output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("cached"), "{text}");
    assert!(output.status.success());
}

#[test]
fn a_retry_runs_only_the_gates_whose_inputs_the_fix_touched() {
    let project = Project::new();
    let lint = counted(&project, "lint", "[\"src/**\"]", "exit 0");
    let test = counted(
        &project,
        "test",
        "[\"tests/**\"]",
        "grep -q fixed tests/t.py",
    );
    project.rules(&pipeline(&format!("{lint}{test}")));
    project
        .file("src/a.py", "code")
        .file("tests/t.py", "broken");

    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    project.file("tests/t.py", "fixed");
    let (code, verdict) = project.verdict();
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(outcome(&verdict, "lint"), "cached");
    assert_eq!(outcome(&verdict, "test"), "pass");
    assert_eq!((runs(&project, "lint"), runs(&project, "test")), (1, 2));
}

#[test]
fn failures_are_never_cached_and_no_cache_runs_everything() {
    let project = Project::new();
    let lint = counted(&project, "lint", "[\"**\"]", "exit 1");
    let ok = counted(&project, "ok", "[\"**\"]", "exit 0");
    project.rules(&pipeline(&format!(
        "{}{ok}",
        lint.replace("}\n", ", on_fail: CONTINUE}\n")
    )));
    project.file("a.txt", "a");
    project.verdict();
    let (_, verdict) = project.verdict();
    assert_eq!(outcome(&verdict, "lint"), "fail");
    assert_eq!(outcome(&verdict, "ok"), "cached");
    assert_eq!(runs(&project, "lint"), 2);

    let mut cmd = project.check();
    cmd.args(["--no-cache", "--format", "json"]);
    let (_, verdict) = common::json_verdict(cmd);
    assert_eq!(outcome(&verdict, "ok"), "pass");
    assert_eq!(runs(&project, "ok"), 2);
}

#[test]
fn a_changed_definition_or_schema_runs_the_gate_again() {
    let project = Project::new();
    project.root_file("s.json", r#"{"type": "object"}"#);
    let lint = counted(&project, "lint", "[\"**\"]", "exit 0");
    let schema = "      - {name: report, rule: schema, schema: s.json, files: [\"r.json\"], inputs: [\"r.json\"]}\n";
    project.rules(&pipeline(&format!("{lint}{schema}")));
    project.file("r.json", "{}");
    project.verdict();
    let (_, verdict) = project.verdict();
    assert_eq!(outcome(&verdict, "lint"), "cached");
    assert_eq!(outcome(&verdict, "report"), "cached");

    // The schema changes: the document no longer validates, and the cache must not hide it.
    project.root_file("s.json", r#"{"type": "array"}"#);
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(outcome(&verdict, "report"), "fail");

    // The gate's own definition changes.
    project.root_file("s.json", r#"{"type": "object"}"#);
    project.rules(&pipeline(&format!(
        "{}{schema}",
        lint.replace("}\n", ", env: {A: b}}\n")
    )));
    let (code, verdict) = project.verdict();
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(outcome(&verdict, "lint"), "pass");
    assert_eq!(runs(&project, "lint"), 2);
}

#[test]
fn an_empty_inputs_list_is_refused() {
    let project = Project::new();
    project.rules(&pipeline(
        "      - {name: lint, rule: lint, run: \"true\", inputs: []}\n",
    ));
    let output = project.check().output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("validator.yaml:6:55:"), "{stderr}");
    assert!(stderr.contains("`inputs:` is empty"), "{stderr}");
}

#[test]
fn a_pass_on_inputs_replaced_during_the_run_is_not_remembered() {
    let project = Project::new();
    // The gate stands in for a worker that swaps good content in while the gate runs and puts
    // the bad content back afterwards: same bytes as before, but the files were replaced.
    let lint = counted(
        &project,
        "lint",
        "[\"f.txt\"]",
        "cp f.txt ../saved; echo good > f.txt; grep -q good f.txt; st=$?; cat ../saved > f.txt; exit $st",
    );
    project.rules(&pipeline(&lint));
    project.file("f.txt", "bad\n");
    assert_eq!(outcome(&project.verdict().1, "lint"), "pass");
    assert_eq!(outcome(&project.verdict().1, "lint"), "pass");
    assert_eq!(runs(&project, "lint"), 2);
}

#[test]
fn a_link_to_a_directory_inside_the_task_turns_the_cache_off() {
    let project = Project::new();
    let lint = counted(
        &project,
        "lint",
        "[\"src/**\"]",
        "grep -q good src/lib/code.txt",
    );
    project.rules(&pipeline(&lint));
    project
        .file("vendor/code.txt", "good\n")
        .file("src/main.txt", "");
    std::os::unix::fs::symlink("../vendor", project.task_dir().join("src/lib")).unwrap();
    assert_eq!(outcome(&project.verdict().1, "lint"), "pass");
    // Edited behind the link: the listing shows vendor/code.txt, which the inputs do not match.
    project.file("vendor/code.txt", "bad\n");
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(outcome(&verdict, "lint"), "fail");
}

#[test]
fn gates_that_judge_more_than_files_refuse_inputs() {
    for rule in ["status", "file-scope"] {
        let project = Project::new();
        project.rules(&pipeline(&format!(
            "      - {{name: g, rule: {rule}, inputs: [\"**\"]}}\n"
        )));
        let output = project.check().output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{rule}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("cannot be cached"), "{rule}: {stderr}");
    }
}
