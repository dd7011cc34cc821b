//! `content` and `co-change` through the real binary: what a worker's files may contain, what
//! must change together, and hostile input (patterns that backtrack elsewhere, huge and binary
//! files, links out of the task).

use crate::common::{self, Project, commit_all, gate, git, isolate_git};

fn rules(gates: &str) -> String {
    format!("version: 1\nstate: state\npipelines:\n  - name: main\n    gates:\n{gates}")
}

fn judged(project: &Project) -> (i32, serde_json::Value) {
    let mut cmd = project.check();
    isolate_git(&mut cmd);
    cmd.args(["--format", "json"]);
    common::json_verdict(cmd)
}

fn findings(verdict: &serde_json::Value, name: &str) -> Vec<serde_json::Value> {
    gate(verdict, name)["findings"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// `validator rules check` on `path`: its exit code and what it wrote to stderr.
const NO_DEBUGGER: &str = "      - name: content\n        rule: content\n        files: [\"**/*.py\"]\n        ban:\n          - {pattern: 'breakpoint\\(\\)', message: remove the debugger call}\n          - {pattern: '^<<<<<<< ', message: an unresolved merge conflict}\n";

#[test]
fn a_banned_pattern_is_a_finding_at_its_line_and_column_with_its_message() {
    let project = Project::new();
    project
        .rules(&rules(NO_DEBUGGER))
        .file("app.py", "x = 1\né = 2; breakpoint()\n")
        .file("ok.py", "print('fine')\n")
        .file("notes.txt", "breakpoint()\n");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let found = findings(&verdict, "content");
    assert_eq!(found.len(), 1, "{verdict:#}");
    assert_eq!(found[0]["file"], "app.py");
    assert_eq!(
        (found[0]["line"].as_u64(), found[0]["column"].as_u64()),
        (Some(2), Some(8))
    );
    assert_eq!(found[0]["rule"], "breakpoint\\(\\)");
    let message = found[0]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("remove the debugger call"), "{message}");

    std::fs::write(project.task_dir().join("app.py"), "x = 1\n").expect("fix");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(gate(&verdict, "content")["summary"], "2 files checked");
}

#[test]
fn a_required_pattern_a_file_lacks_is_a_finding_on_the_file() {
    let project = Project::new();
    project
        .rules(&rules(
            "      - name: license\n        rule: content\n        files: [\"src/*.rs\"]\n        require: [{pattern: '\\A// SPDX-License-Identifier: ', message: start with the license line}]\n",
        ))
        .file("src/a.rs", "// SPDX-License-Identifier: MIT\nfn a() {}\n")
        .file("src/b.rs", "fn b() {}\n// SPDX-License-Identifier: MIT\n");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let found = findings(&verdict, "license");
    assert_eq!(found.len(), 1, "{verdict:#}");
    assert_eq!(found[0]["file"], "src/b.rs");
    assert!(found[0]["line"].is_null());
}

#[test]
fn a_pattern_that_backtracks_elsewhere_runs_in_linear_time_on_a_large_file() {
    // `(a+)+$` takes exponential time in a backtracking engine on "aaaa…b"; here the file is a
    // MiB of it, which only a linear-time matcher gets through.
    let project = Project::new();
    project
        .rules(&rules(
            "      - name: content\n        rule: content\n        files: [\"*.txt\"]\n        ban: [{pattern: '(a+)+$'}]\n        max_bytes: 2000000\n",
        ))
        .file("big.txt", &format!("{}b", "a".repeat(1024 * 1024)));
    let (code, verdict) = judged(&project);
    assert_eq!(code, 0, "{verdict:#}");
}

#[test]
fn a_file_too_large_to_read_fails_instead_of_passing_unread() {
    let project = Project::new();
    project
        .rules(&rules(&format!("{NO_DEBUGGER}        max_bytes: 1000\n")))
        .file("big.py", &format!("{}\nbreakpoint()\n", "#".repeat(5000)));
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let message = findings(&verdict, "content")[0]["message"].to_string();
    assert!(message.contains("larger than 1000 bytes"), "{message}");
}

#[test]
fn a_nul_byte_does_not_hide_a_banned_pattern() {
    let project = Project::new();
    project.rules(&rules(NO_DEBUGGER));
    std::fs::write(
        project.task_dir().join("sneaky.py"),
        b"\x00\x01\nbreakpoint()\n",
    )
    .expect("write");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(findings(&verdict, "content")[0]["line"], 2);
}

#[test]
fn a_link_out_of_the_task_is_reported_and_never_read() {
    let project = Project::new();
    project.rules(&rules(NO_DEBUGGER));
    project.root_file("outside/secret.py", "breakpoint()  # the secret\n");
    std::os::unix::fs::symlink(
        project.path().join("outside/secret.py"),
        project.task_dir().join("link.py"),
    )
    .expect("symlink");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let shown = verdict.to_string();
    assert!(
        shown.contains("points outside the task directory"),
        "{verdict:#}"
    );
    assert!(!shown.contains("the secret"), "{verdict:#}");
}

#[test]
fn changed_only_reads_only_what_the_worker_changed() {
    let project = Project::new();
    project
        .rules(&rules(&format!(
            "{NO_DEBUGGER}        changed_only: true\n"
        )))
        .file("old.py", "breakpoint()  # before the worker\n");
    commit_all(&project.task_dir());
    project.file("new.py", "breakpoint()\n");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let found = findings(&verdict, "content");
    assert_eq!(found.len(), 1, "{verdict:#}");
    assert_eq!(found[0]["file"], "new.py");
}

#[test]
fn changed_only_reports_a_link_out_only_when_the_worker_made_it() {
    // A virtualenv the project ignores links its interpreter outside the task: not the
    // worker's change, so not a finding. A link the worker adds is.
    let project = Project::new();
    project
        .rules(&rules(&format!(
            "{NO_DEBUGGER}        changed_only: true\n"
        )))
        .file(".gitignore", ".venv/\n")
        .file("app.py", "x = 1\n");
    project.root_file("outside/python.py", "breakpoint()\n");
    std::fs::create_dir_all(project.task_dir().join(".venv/bin")).expect("mkdir");
    std::os::unix::fs::symlink(
        project.path().join("outside/python.py"),
        project.task_dir().join(".venv/bin/python.py"),
    )
    .expect("symlink");
    commit_all(&project.task_dir());
    let (code, verdict) = judged(&project);
    assert_eq!(code, 0, "{verdict:#}");

    std::os::unix::fs::symlink(
        project.path().join("outside/python.py"),
        project.task_dir().join("new.py"),
    )
    .expect("symlink");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(findings(&verdict, "content")[0]["file"], "new.py");
}

#[test]
fn a_pattern_that_does_not_compile_is_refused_where_it_is_written() {
    let project = Project::new();
    project.rules(&rules(
        "      - name: content\n        rule: content\n        files: [\"*.py\"]\n        ban: [{pattern: 'breakpoint('}]\n",
    ));
    let (code, stderr) = common::rules_check(&project.rules_path());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("validator.yaml:9:"), "{stderr}");
    assert!(
        stderr.contains("pattern `breakpoint(` does not compile: unclosed group"),
        "{stderr}"
    );
}

const TESTS_WITH_CODE: &str = "      - name: tests-too\n        rule: co-change\n        when: [\"src/**\"]\n        then: [\"tests/**\"]\n        skip_marker: \"skip-tests:\"\n";

fn co_change_repo() -> Project {
    let project = Project::new();
    project
        .rules(&rules(TESTS_WITH_CODE))
        .file("src/lib.py", "def f(): return 1\n")
        .file("tests/test_lib.py", "def test_f(): pass\n");
    commit_all(&project.task_dir());
    project
}

#[test]
fn code_changed_without_its_tests_fails_and_says_what_to_add() {
    let project = co_change_repo();
    project.file("src/lib.py", "def f(): return 2\n");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let summary = gate(&verdict, "tests-too")["summary"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(summary.contains("tests/**"), "{summary}");
    assert!(summary.contains("skip-tests:"), "{summary}");
    assert_eq!(findings(&verdict, "tests-too")[0]["file"], "src/lib.py");

    project.file("tests/test_lib.py", "def test_f(): assert f() == 2\n");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 0, "{verdict:#}");
}

#[test]
fn deleting_the_tests_is_not_changing_them() {
    let project = co_change_repo();
    project.file("src/lib.py", "def f(): return 2\n");
    std::fs::remove_file(project.task_dir().join("tests/test_lib.py")).expect("delete");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
}

#[test]
fn a_change_elsewhere_asks_for_nothing() {
    let project = co_change_repo();
    project.file("README.md", "docs\n");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 0, "{verdict:#}");
}

#[test]
fn a_reason_after_the_skip_marker_lets_it_pass_only_with_enough_words() {
    let project = co_change_repo();
    project.file("src/lib.py", "def f(): return 2\n");
    project.signal("STATUS: OK\nskip-tests: too short\n");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    project.signal("STATUS: OK\nskip-tests: only a comment changed, behaviour is the same\n");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 0, "{verdict:#}");
    assert!(
        gate(&verdict, "tests-too")["summary"]
            .to_string()
            .contains("only a comment changed"),
        "{verdict:#}"
    );
}

#[test]
fn co_change_without_a_way_to_see_changes_cannot_judge() {
    let project = Project::new();
    project
        .rules(&rules(TESTS_WITH_CODE))
        .file("src/lib.py", "x\n")
        .file("tests/test_lib.py", "y\n");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 2, "{verdict:#}");
    assert!(verdict.to_string().contains("git work tree"), "{verdict:#}");
}

#[test]
fn a_gate_names_its_fix_and_check_fix_runs_it_before_judging_again() {
    let project = Project::new();
    project
        .rules(&rules(
            "      - name: format\n        rule: lint\n        run: [\"sh\", \"-c\", 'grep -q tidy style.txt || { echo \"style.txt:1:1: not tidy\"; exit 1; }']\n        fix: [\"sh\", \"-c\", 'echo tidy > style.txt']\n",
        ))
        .file("style.txt", "messy\n");
    let output = project
        .check()
        .args(["--format", "feedback"])
        .output()
        .expect("run validator");
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.contains("fix: run `sh -c 'echo tidy > style.txt'`"),
        "{text}"
    );

    let output = project
        .check()
        .args(["--fix", "--format", "json"])
        .output()
        .expect("run validator");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("fixed `format`"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(project.task_dir().join("style.txt")).expect("read"),
        "tidy\n"
    );
}

#[test]
fn a_gates_json_of_another_format_is_named_for_what_it_is_not_picked_apart() {
    // The shapes other runners read from .claude/gates.json: not typos to remove.
    for (source, says) in [
        (
            r#"{"gates": [{"name": "lint", "run": "make lint", "timeout": 600}]}"#,
            "another runner's format (1 command validator can convert)",
        ),
        (
            r#"{"gates": [["test", ["npm", "test"]]], "timeout": 600}"#,
            "another runner's format (1 command validator",
        ),
        (
            r#"{"ban_patterns": [{"pattern": "Math\\.random", "globs": ["src/**"], "message": "x"}]}"#,
            "(1 ban pattern validator can convert)",
        ),
        (
            r#"{"coverage_rules": [{"when_changed": ["src/**"], "require_changed": ["tests/**"]}]}"#,
            "(1 co-change rule validator can convert)",
        ),
        (
            r#"{"verify": [{"command": "pnpm exec tsc", "label": "typecheck"}]}"#,
            "(1 command validator can convert)",
        ),
        (
            r#"{"code_review": {"status": "pass"}}"#,
            "not a gate file validator reads: nothing in it became a gate",
        ),
    ] {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("gates.json");
        std::fs::write(&path, source).expect("write");
        let (code, stderr) = common::rules_check(&path);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains(says), "{source}: {stderr}");
        assert!(!stderr.contains("remove it"), "{source}: {stderr}");
        assert!(stderr.contains("init --from"), "{source}: {stderr}");
    }
}

#[test]
fn what_the_worker_committed_counts_from_the_base_the_rules_name() {
    let project = Project::new();
    project
        .rules(&rules(&format!(
            "{NO_DEBUGGER}        changed_only: true\n        base: start\n"
        )))
        .file("a.py", "x = 1\n");
    commit_all(&project.task_dir());
    git(&project.task_dir(), &["tag", "start"]);
    project.file("a.py", "breakpoint()\n");
    git(
        &project.task_dir(),
        &["commit", "-q", "-am", "the worker's"],
    );
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(findings(&verdict, "content")[0]["file"], "a.py");
}

#[test]
fn a_change_git_was_told_to_hide_is_not_clean() {
    let project = Project::new();
    project
        .rules(&rules(&format!(
            "{NO_DEBUGGER}        changed_only: true\n"
        )))
        .file("a.py", "x = 1\n");
    commit_all(&project.task_dir());
    git(
        &project.task_dir(),
        &["update-index", "--skip-worktree", "a.py"],
    );
    project.file("a.py", "breakpoint()\n");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
}

#[test]
fn a_link_out_where_matching_files_could_lie_is_reported() {
    let project = Project::new();
    project.rules(&rules(
        "      - name: content\n        rule: content\n        files: [\"src/**/*.py\"]\n        ban: [{pattern: 'breakpoint'}]\n",
    ));
    project.root_file("outside/a.py", "breakpoint()\n");
    std::os::unix::fs::symlink(
        project.path().join("outside"),
        project.task_dir().join("src"),
    )
    .expect("symlink");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(findings(&verdict, "content")[0]["file"], "src");
}

#[test]
fn an_emptied_test_or_a_reason_of_invisible_words_answers_nothing() {
    let project = co_change_repo();
    project.file("src/lib.py", "def f(): return 2\n");
    project.file("tests/test_lib.py", "");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "emptied: {verdict:#}");
    project.file("tests/test_lib.py", "def test_f(): pass\n");
    git(
        &project.task_dir(),
        &["checkout", "-q", "tests/test_lib.py"],
    );
    project.signal("STATUS: OK\nskip-tests: \u{200b} \u{200b} \u{200b} \u{200b} \u{200b}\n");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "invisible words: {verdict:#}");
}

#[test]
fn a_report_left_in_place_before_the_run_is_not_read_whatever_its_time() {
    let project = Project::new();
    project.rules(&rules(
        "      - name: tests\n        rule: test\n        run: [\"sh\", \"-c\", \"echo '=== short test summary info ==='; echo 'FAILED tests/test_real.py::test_real - assert 1 == 2'; exit 1\"]\n        junit: junit.xml\n",
    ));
    project.file(
        "junit.xml",
        "<testsuite><testcase classname=\"t\" name=\"planted\"><failure message=\"x\"/></testcase></testsuite>",
    );
    let future = std::time::SystemTime::now() + std::time::Duration::from_secs(3600 * 24 * 365);
    std::fs::File::options()
        .write(true)
        .open(project.task_dir().join("junit.xml"))
        .and_then(|file| file.set_modified(future))
        .expect("date the report");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let summary = gate(&verdict, "tests")["summary"].to_string();
    assert!(summary.contains("test_real"), "{summary}");
    assert!(!summary.contains("planted"), "{summary}");
}

#[test]
fn a_fix_that_fails_says_so_with_what_it_said() {
    let project = Project::new();
    project.rules(&rules(
        "      - name: lint\n        rule: lint\n        run: [\"sh\", \"-c\", 'echo \"a.py:1:1: bad\"; exit 1']\n        fix: [\"sh\", \"-c\", 'echo cannot fix this; exit 3']\n",
    ));
    let output = project
        .check()
        .args(["--fix", "--format", "json"])
        .output()
        .expect("run validator");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("the fix of `lint` failed"), "{stderr}");
    assert!(stderr.contains("exited with 3"), "{stderr}");
    assert!(stderr.contains("cannot fix this"), "{stderr}");
}

#[test]
fn init_from_converts_other_runners_gates_json_into_rules_that_load() {
    let dir = tempfile::tempdir().expect("temp dir");
    let from = dir.path().join("gates.json");
    std::fs::write(
        &from,
        r#"{
  "gates": [{"name": "Unit tests", "run": "make test", "timeout": 900}, {"name": "lint", "command": "make lint"}],
  "ban_patterns": [
    {"pattern": "Math\\.random\\(\\)", "globs": ["src/engine/**"], "message": "the engine is deterministic"},
    {"pattern": "force(?!-with-lease)", "globs": ["src/**"], "message": "look-around"}
  ],
  "coverage_rules": [{"when_changed": ["src/**"], "require_changed": ["tests/**"], "or_explicit_skip": "// no-test-impact: <at least 6 word reason>"}],
  "forbidden_bash": ["--no-verify"]
}"#,
    )
    .expect("write");
    let rules = dir.path().join("validator.yaml");
    let output = common::validator()
        .arg("-c")
        .arg(&rules)
        .args(["init", "--from"])
        .arg(&from)
        .output()
        .expect("run validator");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("not carried over: `forbidden_bash`"),
        "{stdout}"
    );
    assert!(stdout.contains("look-around"), "{stdout}");
    let text = std::fs::read_to_string(&rules).expect("written");
    assert!(
        text.starts_with("# validator rules converted from a gates.json"),
        "{text}"
    );
    for expected in [
        "name: unit-tests\n        rule: test",
        "timeout: 900s",
        "name: lint\n        rule: lint",
        "rule: content",
        "rule: co-change",
        "skip_marker: \"// no-test-impact:\"",
        "min_reason_words: 6",
    ] {
        assert!(text.contains(expected), "`{expected}` not in:\n{text}");
    }
    let (code, stderr) = common::rules_check(&rules);
    assert_eq!(code, Some(0), "{stderr}");

    // The hook runner's own dialect is written out as `check` reads it; an existing file stays.
    std::fs::write(
        &from,
        r#"{"gates": {"plan-compliance": {"description": "How it ended"},
                      "check": {"command": "make lint", "on_pass": "test"},
                      "test": {"command": "make test", "on_fail": "STOP"}},
            "hooks": {"SubagentStop": {"enabled_agents": ["code-agent"], "gates": ["plan-compliance", "check"]},
                      "PostToolUse": {"gates": ["check"]}}}"#,
    )
    .expect("write");
    let output = common::validator()
        .arg("-c")
        .arg(&rules)
        .args(["init", "--from"])
        .arg(&from)
        .output()
        .expect("run validator");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--force"));
    let output = common::validator()
        .arg("-c")
        .arg(&rules)
        .args(["init", "--force", "--from"])
        .arg(&from)
        .output()
        .expect("run validator");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("[\"code-agent\"]"), "{stdout}");
    assert!(stdout.contains("PostToolUse"), "{stdout}");
    let text = std::fs::read_to_string(&rules).expect("written");
    for expected in [
        "# How it ended\n      - name: plan-compliance\n        rule: \"status\"",
        "run: [\"make\",\"lint\"]\n        on_pass: test",
        "name: test\n        rule: \"test\"\n        run: [\"make\",\"test\"]\n        on_fail: STOP",
    ] {
        assert!(text.contains(expected), "`{expected}` not in:\n{text}");
    }
    let (code, stderr) = common::rules_check(&rules);
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn an_excluded_file_is_not_read() {
    let project = Project::new();
    project
        .rules(&rules(
            "      - name: content\n        rule: content\n        files: [\"src/**\"]\n        exclude: [\"src/clock.js\"]\n        ban: [{pattern: 'Date\\.now\\(\\)', message: time comes from the simulation clock}]\n",
        ))
        .file("src/clock.js", "export const now = () => Date.now();\n")
        .file("src/sim.js", "export const t = 0;\n");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 0, "{verdict:#}");
    project.file("src/sim.js", "export const t = Date.now();\n");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(findings(&verdict, "content")[0]["file"], "src/sim.js");
}
