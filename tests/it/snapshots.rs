// What a user reads, whole: the feedback a worker gets for a FAIL, `check`'s text and JSON
// verdicts, and `rules check`'s errors, each snapshotted from the real binary on a real
// temporary project. The `contains(` assertions elsewhere say one fact each; these say what
// the rest of the page looks like, so a changed word, line or order shows in review. A
// changed output fails the test and, under CI (`CI=true`), writes nothing: accept a change
// with `INSTA_UPDATE=always cargo test --test it snapshots::` and read the diff.

use std::path::Path;
use std::process::Output;

use crate::common::{PATIENCE, Project, Watching, commit_all, lint, pipeline, poll, validator};
use crate::hooks::{hook, stop};

/// A linter outside the task (so the worker cannot edit it) that prints one finding as
/// ruff and flake8 do, and fails.
const LINT_SCRIPT: &str =
    "printf 'calc.py:2:5: F841 local variable `x` is assigned to but never used\\n'\nexit 1\n";

/// A calculator whose `divide` multiplies, and its two tests: one passes, one fails.
const CALC: &str =
    "def add(a, b):\n    x = 1\n    return a + b\n\n\ndef divide(a, b):\n    return a * b\n";
const TEST_CALC: &str = "import unittest\n\nimport calc\n\n\nclass TestCalc(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(calc.add(1, 2), 3)\n\n    def test_divide(self):\n        self.assertEqual(calc.divide(6, 3), 2)\n";

/// A report schema that names its draft, as an operator writes one.
const REPORT_SCHEMA: &str = r#"{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["summary", "tests_passed"],
  "properties": {
    "summary": {"type": "string"},
    "tests_passed": {"type": "boolean"}
  }
}"#;

/// The filters that leave only what a run always prints: the project's temporary path,
/// clock times, durations, signatures and a signal's time. Bound for the calling test.
fn settings(project: &Path) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    let root = regex::escape(&project.display().to_string());
    settings.add_filter(&root, "[project]");
    // Other temporary paths (a scratch directory of validator's, a tool's).
    settings.add_filter(r"/tmp/\.tmp[A-Za-z0-9]+", "[tmp]");
    settings.add_filter(r#""(started_at|mtime)": "[^"]*""#, r#""$1": "[time]""#);
    settings.add_filter(r#""duration_ms": \d+"#, r#""duration_ms": "[ms]""#);
    // A gate's time in the text, right-aligned in its column: the padding goes with it.
    settings.add_filter(r" +\d+(?:ms|\.\ds)\b", " [time]");
    settings.add_filter(r"\bin \d+\.\d+s\b", "in [time]");
    settings.add_filter(r"hmac-sha256:[0-9a-f]{64}", "hmac-sha256:[signature]");
    settings
}

/// What a command showed: its exit code, then stdout and stderr, each only when not empty.
fn shown(output: &Output) -> String {
    let mut text = format!("exit: {}\n", output.status.code().unwrap_or(-1));
    for (name, bytes) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
        if !bytes.is_empty() {
            text.push_str(&format!("--- {name}\n{}", String::from_utf8_lossy(bytes)));
        }
    }
    text
}

/// `check` over `project` with `args` (a format), as a user runs it from the project.
fn check(project: &Project, args: &[&str]) -> Output {
    project
        .check()
        .args(args)
        .current_dir(project.path())
        .env_remove("VALIDATOR_KEY_FILE")
        .output()
        .expect("run validator check")
}

/// The feedback `check --format feedback` prints for a project whose one gate fails: what a
/// worker reads (the gates' progress lines go to stderr, left out).
fn feedback(project: &Project) -> String {
    let output = check(project, &["--format", "feedback"]);
    assert_eq!(output.status.code(), Some(1), "{}", shown(&output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A project holding the calculator, its tests and the linter, with `gates` as its pipeline.
fn calculator(gates: &str) -> Project {
    let project = Project::new();
    project
        .rules(&pipeline(gates))
        .root_file("lint.sh", LINT_SCRIPT)
        .file("calc.py", CALC)
        .file("test_calc.py", TEST_CALC);
    project
}

const LINT_GATE: &str = "      - {name: lint, rule: lint, run: [sh, ../lint.sh]}\n";
const TEST_GATE: &str = "      - {name: test, rule: test, run: [python3, -m, unittest, --verbose], env: {PYTHONDONTWRITEBYTECODE: \"1\"}}\n";

#[test]
fn feedback_for_a_lint_finding() {
    let project = calculator(LINT_GATE);
    let _bound = settings(project.path()).bind_to_scope();
    insta::assert_snapshot!(feedback(&project));
}

#[test]
fn feedback_for_a_failed_test_names_it() {
    let project = calculator(TEST_GATE);
    let _bound = settings(project.path()).bind_to_scope();
    insta::assert_snapshot!(feedback(&project));
}

#[test]
fn feedback_for_a_missing_file() {
    let project = calculator(
        "      - {name: outputs, rule: exists, paths: [calc.py, test_calc.py, report.json]}\n",
    );
    let _bound = settings(project.path()).bind_to_scope();
    insta::assert_snapshot!(feedback(&project));
}

#[test]
fn feedback_for_a_report_against_its_schema() {
    let project = calculator(
        "      - {name: report, rule: schema, schema: report.schema.json, files: [report.json]}\n",
    );
    project
        .root_file("report.schema.json", REPORT_SCHEMA)
        .file("report.json", r#"{"summary": 3}"#);
    let _bound = settings(project.path()).bind_to_scope();
    insta::assert_snapshot!(feedback(&project));
}

#[test]
fn feedback_for_a_file_out_of_scope() {
    let project = calculator("      - {name: scope, rule: file-scope, allow: [\"*.py\"]}\n");
    commit_all(&project.task_dir());
    project
        .file("calc.py", &CALC.replace("a * b", "a / b"))
        .file("notes/plan.md", "what I did\n");
    let _bound = settings(project.path()).bind_to_scope();
    insta::assert_snapshot!(feedback(&project));
}

/// The block an agent's stop hook answers: the same feedback, worded for a worker that is
/// judged each time it finishes, with the attempts it has left.
#[test]
fn feedback_a_stop_hook_gives_back() {
    let project = calculator(LINT_GATE);
    let _bound = settings(project.path()).bind_to_scope();
    let reason = hook(&project, "claude", &stop(&project, "s1", "All done.")).blocked("block");
    insta::assert_snapshot!(reason);
}

/// The feedback file the watcher writes beside the verdict, worded for a worker that
/// signals done again.
#[test]
fn feedback_file_the_watcher_writes() {
    let project = Project::new();
    project
        .rules(&format!(
            "version: 1\nstaging: staging\nverdicts: verdicts\nstate: state\npipelines:\n  - name: main\n    gates:\n{}",
            lint("lint", "[sh, ../../lint.sh]", "")
        ))
        .root_file("lint.sh", LINT_SCRIPT)
        .root_file("staging/calc/calc.py", CALC);
    let mut watcher = Watching::default();
    watcher.set(
        std::process::Command::new(env!("CARGO_BIN_EXE_validator"))
            .args(["watch", "-c", "validator.yaml"])
            .current_dir(project.path())
            .env_remove("VALIDATOR_CONFIG")
            .env_remove("VALIDATOR_LOG")
            .env_remove("VALIDATOR_KEY_FILE")
            .env("NO_COLOR", "1")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn validator watch"),
    );
    project.root_file("staging/calc.done", "STATUS: OK\n");
    // The feedback is written before the verdict: once the verdict is there, it is whole.
    let verdicts = project.path().join("verdicts");
    assert!(
        poll(PATIENCE, || verdicts.join("calc.verdict.json").exists()),
        "no verdict"
    );
    let text = std::fs::read_to_string(verdicts.join("calc.feedback.md")).expect("feedback");
    watcher.sigterm(PATIENCE);
    let _bound = settings(project.path()).bind_to_scope();
    insta::assert_snapshot!(text);
}

/// A pipeline whose gates all pass over the calculator with `divide` fixed, and a signal.
fn passing() -> Project {
    let project = calculator(&format!(
        "      - {{name: status, rule: status}}\n      - {{name: outputs, rule: exists, paths: [calc.py, test_calc.py]}}\n{TEST_GATE}"
    ));
    project
        .file("calc.py", &CALC.replace("a * b", "a / b"))
        .signal("Divide fixed, tests pass.\n\nSTATUS: OK\n");
    project
}

/// A pipeline with a failure routed on (a warning), one that blocks, and a gate after it
/// that never runs.
fn failing() -> Project {
    let project = calculator(&format!(
        "{}{TEST_GATE}      - {{name: outputs, rule: exists, paths: [calc.py]}}\n",
        lint("lint", "[sh, ../lint.sh]", "on_fail: CONTINUE")
    ));
    project.signal("STATUS: OK\n");
    project
}

#[test]
fn text_verdict_pass() {
    let project = passing();
    let _bound = settings(project.path()).bind_to_scope();
    insta::assert_snapshot!(shown(&check(&project, &[])));
}

#[test]
fn text_verdict_fail() {
    let project = failing();
    let _bound = settings(project.path()).bind_to_scope();
    insta::assert_snapshot!(shown(&check(&project, &[])));
}

/// The worker said it is blocked: a person decides, and the text says why.
#[test]
fn text_verdict_blocked() {
    let project = passing();
    project.signal(
        "STATUS: BLOCKED\nREASON: the spec says integer division, the tests say true division\n",
    );
    let _bound = settings(project.path()).bind_to_scope();
    insta::assert_snapshot!(shown(&check(&project, &[])));
}

/// A program that is not there is validator's failure to judge, not the worker's: ERROR.
#[test]
fn text_verdict_error() {
    let project = calculator(&lint("lint", "[no-such-linter-anywhere, .]", ""));
    let _bound = settings(project.path()).bind_to_scope();
    insta::assert_snapshot!(shown(&check(&project, &[])));
}

#[test]
fn json_verdict_pass() {
    let project = passing();
    let _bound = settings(project.path()).bind_to_scope();
    insta::assert_snapshot!(shown(&check(&project, &["--format", "json"])));
}

#[test]
fn json_verdict_fail() {
    let project = failing();
    let _bound = settings(project.path()).bind_to_scope();
    insta::assert_snapshot!(shown(&check(&project, &["--format", "json"])));
}

/// With a key, the document carries its signature (its value filtered: it signs the time).
#[test]
fn json_verdict_signed() {
    let project = passing();
    project.root_file("verdict.key", "a key of the operator's\n");
    let output = project
        .check()
        .args(["--format", "json", "--quiet"])
        .current_dir(project.path())
        .env("VALIDATOR_KEY_FILE", project.path().join("verdict.key"))
        .output()
        .expect("run validator check");
    let _bound = settings(project.path()).bind_to_scope();
    insta::assert_snapshot!(shown(&output));
}

/// Snapshots, as `name`, `rules check` over `rules` (the rules file's text), run from its
/// directory as a user does, so the file is named as the user named it.
fn rules_check(name: &str, rules: &str) {
    let project = Project::new();
    project.rules(rules);
    let output = validator()
        .args(["rules", "check", "-c", "validator.yaml"])
        .current_dir(project.path())
        .output()
        .expect("run validator rules check");
    let _bound = settings(project.path()).bind_to_scope();
    insta::assert_snapshot!(name, shown(&output));
}

#[test]
fn rules_check_unknown_key_says_did_you_mean() {
    let rules = pipeline(&lint("lint", "[sh, ../lint.sh]", "timout: 5s"));
    rules_check("rules_check_unknown_key_says_did_you_mean", &rules);
}

#[test]
fn rules_check_a_value_of_the_wrong_type() {
    let rules =
        pipeline("      - {name: outputs, rule: exists, paths: [calc.py], non_empty: maybe}\n");
    rules_check("rules_check_a_value_of_the_wrong_type", &rules);
}

#[test]
fn rules_check_a_glob_that_does_not_compile() {
    let rules = pipeline("      - {name: outputs, rule: exists, paths: [\"src/[a-z.py\"]}\n");
    rules_check("rules_check_a_glob_that_does_not_compile", &rules);
}

#[test]
fn rules_check_an_unreachable_gate() {
    let rules = pipeline(&format!(
        "{}{}",
        lint("lint", "[sh, ../lint.sh]", "on_pass: PASS"),
        lint("types", "[sh, ../types.sh]", "")
    ));
    rules_check("rules_check_an_unreachable_gate", &rules);
}

#[test]
fn rules_check_shell_syntax_in_run() {
    let rules = pipeline("      - {name: lint, rule: lint, run: \"ruff check . && mypy .\"}\n");
    rules_check("rules_check_shell_syntax_in_run", &rules);
}

#[test]
fn rules_check_a_program_not_on_path() {
    let rules = pipeline(&lint("lint", "[no-such-linter-anywhere, .]", ""));
    rules_check("rules_check_a_program_not_on_path", &rules);
}

#[test]
fn rules_check_a_file_that_is_not_yaml() {
    let rules =
        "version: 1\npipelines:\n  - name: main\n    gates:\n      - {name: lint, rule: lint\n";
    rules_check("rules_check_a_file_that_is_not_yaml", rules);
}
