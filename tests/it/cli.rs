// The `validator` command line as a user drives it: chaining and the decision it leads to, the
// exit codes of `check`, every output format, refused input, pipeline selection, `rules check`,
// `snapshot` and the run's time budget. Every test runs the real binary over a temp directory.

use crate::common;
use std::path::Path;

use crate::common::{Project, gate, lint, pipeline, project, validator};
use assert_cmd::Command;
use serde_json::Value;

/// A command that exits 0.
const PASSES: &str = r#"["true"]"#;
/// A command that exits 1.
const FAILS: &str = r#"["false"]"#;

/// Runs `cmd`, expecting one JSON verdict on stdout; returns the exit code and the verdict.
fn json_verdict(cmd: &mut Command) -> (i32, Value) {
    let output = cmd
        .args(["--format", "json"])
        .output()
        .expect("run validator");
    let verdict = serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "stdout is not a verdict ({err}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (output.status.code().expect("exit code"), verdict)
}

/// Runs `cmd`, expecting it to refuse with exit code 2, nothing on stdout and a message on
/// stderr; returns the message.
fn refused(cmd: &mut Command) -> String {
    let output = cmd.output().expect("run validator");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(2),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.is_empty(), "nothing should be judged:\n{stdout}");
    assert!(stderr.contains("error"), "{stderr}");
    stderr
}

/// `check` over a project whose rules file is `yaml`, expecting the rules to be refused.
fn refused_rules(yaml: &str) -> (String, String) {
    let project = Project::new();
    project.rules(yaml);
    let stderr = refused(&mut project.check());
    (stderr, project.rules_path().display().to_string())
}

fn stdout_of(cmd: &mut Command) -> (i32, String) {
    let output = cmd.output().expect("run validator");
    (
        output.status.code().expect("exit code"),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

fn outcome<'v>(verdict: &'v Value, name: &str) -> &'v str {
    gate(verdict, name)["outcome"].as_str().expect("outcome")
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
        .iter()
        .map(|v| v.as_str().expect("string"))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Chaining

#[test]
fn gates_continue_on_pass_by_default_and_the_run_passes_at_the_end() {
    let project = project(&[lint("a", PASSES, ""), lint("b", PASSES, "")]);
    let (code, verdict) = project.verdict();
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(verdict["verdict"], "PASS");
    assert_eq!(outcome(&verdict, "a"), "pass");
    assert_eq!(outcome(&verdict, "b"), "pass");
    assert!(strings(&verdict["reasons"]).is_empty(), "{verdict:#}");
    assert!(strings(&verdict["warnings"]).is_empty(), "{verdict:#}");
}

#[test]
fn a_failure_blocks_by_default_and_later_gates_are_skipped() {
    let project = project(&[
        lint("a", PASSES, ""),
        lint("b", FAILS, ""),
        lint("c", PASSES, ""),
    ]);
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(verdict["verdict"], "FAIL");
    assert_eq!(outcome(&verdict, "a"), "pass");
    assert_eq!(outcome(&verdict, "b"), "fail");
    assert_eq!(outcome(&verdict, "c"), "skipped");
    let reasons = strings(&verdict["reasons"]);
    assert!(reasons.iter().any(|r| r.starts_with("b:")), "{reasons:?}");
}

#[test]
fn on_fail_continue_passes_with_the_failure_as_a_warning() {
    let project = project(&[lint("a", FAILS, "on_fail: CONTINUE"), lint("b", PASSES, "")]);
    let (code, verdict) = project.verdict();
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(verdict["verdict"], "PASS");
    assert_eq!(outcome(&verdict, "a"), "fail");
    assert_eq!(outcome(&verdict, "b"), "pass");
    let warnings = strings(&verdict["warnings"]);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].starts_with("a:"), "{warnings:?}");
    assert!(strings(&verdict["reasons"]).is_empty(), "{verdict:#}");
}

#[test]
fn on_fail_naming_a_gate_jumps_over_the_gates_between() {
    let project = project(&[
        lint("a", FAILS, "on_fail: c"),
        lint("b", FAILS, ""),
        lint("c", PASSES, ""),
    ]);
    let (code, verdict) = project.verdict();
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(verdict["verdict"], "PASS");
    assert_eq!(outcome(&verdict, "a"), "fail");
    assert_eq!(outcome(&verdict, "b"), "skipped");
    assert_eq!(outcome(&verdict, "c"), "pass");
    let warnings = strings(&verdict["warnings"]);
    assert!(warnings.iter().any(|w| w.starts_with("a:")), "{warnings:?}");
}

#[test]
fn on_pass_pass_ends_the_run_early_with_pass() {
    let project = project(&[lint("a", PASSES, "on_pass: PASS"), lint("b", FAILS, "")]);
    let (code, verdict) = project.verdict();
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(verdict["verdict"], "PASS");
    assert_eq!(outcome(&verdict, "a"), "pass");
    assert_eq!(outcome(&verdict, "b"), "skipped");
}

#[test]
fn on_fail_pass_ends_the_run_passing_with_the_failure_as_a_warning() {
    let project = project(&[lint("a", FAILS, "on_fail: PASS"), lint("b", FAILS, "")]);
    let (code, verdict) = project.verdict();
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(verdict["verdict"], "PASS");
    assert_eq!(outcome(&verdict, "b"), "skipped");
    let warnings = strings(&verdict["warnings"]);
    assert!(warnings.iter().any(|w| w.starts_with("a:")), "{warnings:?}");
}

#[test]
fn on_pass_block_fails_the_run_after_a_passing_gate() {
    let project = project(&[lint("a", PASSES, "on_pass: BLOCK"), lint("b", PASSES, "")]);
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(verdict["verdict"], "FAIL");
    assert_eq!(outcome(&verdict, "a"), "pass");
    assert_eq!(outcome(&verdict, "b"), "skipped");
    assert!(!strings(&verdict["reasons"]).is_empty(), "{verdict:#}");
}

#[test]
fn on_fail_stop_ends_blocked_with_exit_code_3() {
    let project = project(&[lint("a", FAILS, "on_fail: STOP"), lint("b", PASSES, "")]);
    let (code, verdict) = project.verdict();
    assert_eq!(code, 3, "{verdict:#}");
    assert_eq!(verdict["verdict"], "BLOCKED");
    assert_eq!(outcome(&verdict, "a"), "fail");
    assert_eq!(outcome(&verdict, "b"), "skipped");
    let reasons = strings(&verdict["reasons"]);
    assert!(reasons.iter().any(|r| r.contains("STOP")), "{reasons:?}");
}

#[test]
fn on_pass_stop_also_ends_blocked() {
    let project = project(&[lint("a", PASSES, "on_pass: STOP"), lint("b", PASSES, "")]);
    let (code, verdict) = project.verdict();
    assert_eq!(code, 3, "{verdict:#}");
    assert_eq!(verdict["verdict"], "BLOCKED");
    assert_eq!(outcome(&verdict, "a"), "pass");
    assert_eq!(outcome(&verdict, "b"), "skipped");
}

#[test]
fn a_jump_back_that_loops_ends_in_error_after_64_repeated_gate_runs() {
    let project = project(&[lint("a", PASSES, ""), lint("b", FAILS, "on_fail: a")]);
    let (code, verdict) = project.verdict();
    assert_eq!(code, 2, "{verdict:#}");
    assert_eq!(verdict["verdict"], "ERROR");
    let reasons = strings(&verdict["reasons"]);
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("loop guard") && r.contains("64")),
        "{reasons:?}"
    );
    let gates = verdict["gates"].as_array().expect("gates");
    let ran = gates.iter().filter(|g| g["outcome"] != "skipped").count();
    assert_eq!(ran, 2 + 64, "{verdict:#}");
}

#[test]
fn a_worker_reporting_blocked_ends_the_run_blocked_with_its_reason() {
    let project = Project::new();
    project
        .rules(&pipeline(&format!(
            "      - {{name: status, rule: status}}\n{}",
            lint("after", PASSES, "")
        )))
        .signal("STATUS: BLOCKED\nREASON: the plan says JWT\n");
    let (code, verdict) = project.verdict();
    assert_eq!(code, 3, "{verdict:#}");
    assert_eq!(verdict["verdict"], "BLOCKED");
    assert_eq!(outcome(&verdict, "after"), "skipped");
    let reasons = strings(&verdict["reasons"]);
    assert!(
        reasons.iter().any(|r| r.contains("the plan says JWT")),
        "{reasons:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Exit codes of `check` (the default text format)

#[test]
fn check_exit_codes_follow_the_verdict() {
    let cases = [
        (0, pipeline(&lint("a", PASSES, ""))),
        (1, pipeline(&lint("a", FAILS, ""))),
        (
            2,
            pipeline(&lint("a", r#"["/nonexistent/validator-test-tool"]"#, "")),
        ),
        (3, pipeline(&lint("a", FAILS, "on_fail: STOP"))),
    ];
    for (expected, rules) in cases {
        let project = Project::new();
        project.rules(&rules);
        let (code, text) = stdout_of(&mut project.check());
        assert_eq!(code, expected, "{rules}\n{text}");
    }
}

#[test]
fn a_status_gate_fails_without_a_status_and_passes_with_ok() {
    let project = Project::new();
    project.rules(&pipeline("      - {name: status, rule: status}\n"));
    project.signal("all done\n");
    let (code, verdict) = project.verdict();
    assert_eq!((code, verdict["verdict"].as_str()), (1, Some("FAIL")));
    project.signal("STATUS: OK\n");
    let (code, verdict) = project.verdict();
    assert_eq!((code, verdict["verdict"].as_str()), (0, Some("PASS")));
}

#[test]
fn a_signal_on_standard_input_is_read_and_hashed() {
    let project = Project::new();
    project.rules(&pipeline("      - {name: status, rule: status}\n"));
    let body = "STATUS: OK\n";
    project.root_file("body", body);
    let (code, verdict) = json_verdict(project.check().args(["--signal", "-"]).write_stdin(body));
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(verdict["signal"]["status"], "OK");
    assert_eq!(
        verdict["signal"]["sha256"],
        sha256sum(&project.path().join("body"))
    );
}

// ---------------------------------------------------------------------------------------------
// Formats

#[test]
fn json_prints_one_verdict_document_with_every_field() {
    let project = Project::new();
    project
        .rules(&pipeline(&format!(
            "      - {{name: status, rule: status}}\n{}",
            lint("a", PASSES, "")
        )))
        .signal(r#"{"agent":"claude","status":"OK"}"#);
    let output = project
        .check()
        .args(["--format", "json", "--attempt", "2"])
        .output()
        .expect("run validator");
    assert_eq!(output.status.code(), Some(0));
    let documents: Vec<Value> = serde_json::Deserializer::from_slice(&output.stdout)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .expect("stdout is JSON");
    assert_eq!(documents.len(), 1, "{documents:#?}");
    let verdict = &documents[0];

    let expected_keys = [
        "schema",
        "task",
        "verdict",
        "attempt",
        "max_attempts",
        "pipeline",
        "signal",
        "started_at",
        "duration_ms",
        "gates",
        "reasons",
        "warnings",
    ];
    for key in expected_keys {
        assert!(verdict.get(key).is_some(), "no `{key}` in {verdict:#}");
    }
    assert_eq!(verdict["schema"], "validator.verdict/v1");
    assert_eq!(verdict["task"], "task");
    assert_eq!(verdict["verdict"], "PASS");
    assert_eq!(verdict["attempt"], 2);
    assert_eq!(verdict["max_attempts"], 3);
    assert_eq!(verdict["pipeline"], "main");
    let started_at = verdict["started_at"].as_str().expect("started_at");
    assert!(
        started_at.len() == "2026-11-21T10:00:00Z".len() && started_at.ends_with('Z'),
        "{started_at}"
    );
    assert!(verdict["duration_ms"].is_u64(), "{verdict:#}");
    assert!(verdict["reasons"].is_array() && verdict["warnings"].is_array());

    let signal = &verdict["signal"];
    assert_eq!(signal["sha256"], sha256sum(&project.signal_path()));
    assert_eq!(signal["agent"], "claude");
    assert_eq!(signal["status"], "OK");
    let mtime = signal["mtime"].as_str().expect("signal.mtime");
    assert!(
        mtime.starts_with(&utc_mtime_seconds(&project.signal_path())) && mtime.ends_with('Z'),
        "{mtime}"
    );

    let gates = verdict["gates"].as_array().expect("gates");
    assert_eq!(gates.len(), 2);
    for gate in gates {
        for key in ["name", "rule", "outcome", "duration_ms"] {
            assert!(gate.get(key).is_some(), "no `{key}` in {gate:#}");
        }
    }
    assert_eq!(gate(verdict, "status")["rule"], "status");
    assert_eq!(gate(verdict, "a")["rule"], "lint");
    assert_eq!(gate(verdict, "a")["exit_code"], 0);
}

/// `sha256sum FILE`'s hex digest.
fn sha256sum(path: &Path) -> String {
    let output = std::process::Command::new("sha256sum")
        .arg(path)
        .output()
        .expect("run sha256sum");
    assert!(output.status.success());
    String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .next()
        .expect("digest")
        .to_owned()
}

/// The file's modification time to the second, in UTC, as `date` prints it: `YYYY-MM-DDTHH:MM:SS`.
fn utc_mtime_seconds(path: &Path) -> String {
    let output = std::process::Command::new("date")
        .env("TZ", "UTC")
        .arg("-r")
        .arg(path)
        .arg("+%Y-%m-%dT%H:%M:%S")
        .output()
        .expect("run date");
    assert!(output.status.success());
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

#[test]
fn junit_is_well_formed_with_a_testcase_per_gate_and_escaped_output() {
    let project = project(&[
        lint("ok", PASSES, ""),
        lint("bad", r#"["sh", "-c", 'echo "x <&> y"; exit 1']"#, ""),
        lint("later", PASSES, ""),
    ]);
    let (code, xml) = stdout_of(project.check().args(["--format", "junit"]));
    assert_eq!(code, 1, "{xml}");
    assert!(xml.starts_with("<?xml"), "{xml}");
    assert_well_formed_xml(&xml);
    assert_eq!(xml.matches("<testsuite ").count(), 1, "{xml}");
    // One testcase per gate, plus the `verdict` testcase that carries the decision.
    assert_eq!(xml.matches("<testcase ").count(), 4, "{xml}");
    assert_eq!(xml.matches("<failure ").count(), 2, "{xml}");
    for name in ["ok", "bad", "later"] {
        assert!(xml.contains(&format!("name=\"{name}\"")), "{xml}");
    }
    let bad = xml
        .split("<testcase ")
        .find(|case| case.contains("name=\"bad\""))
        .expect("testcase bad");
    assert!(bad.contains("<failure "), "{bad}");
    assert!(bad.contains("x &lt;&amp;&gt; y"), "{bad}");
    assert!(!xml.contains("<&>"), "{xml}");
}

/// A small well-formedness check: one root element, tags nest and close, attribute values are
/// quoted, and `&` only begins a predefined entity or a character reference.
fn assert_well_formed_xml(xml: &str) {
    fn check_text(text: &str, xml: &str) {
        assert!(!text.contains('<'), "stray `<` in {xml}");
        for (at, _) in text.match_indices('&') {
            let entity = &text[at + 1..];
            let name = &entity[..entity
                .find(';')
                .unwrap_or_else(|| panic!("bad `&` in {xml}"))];
            let ok = matches!(name, "amp" | "lt" | "gt" | "quot" | "apos")
                || name.strip_prefix("#x").is_some_and(|hex| {
                    !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit())
                })
                || name
                    .strip_prefix('#')
                    .is_some_and(|dec| !dec.is_empty() && dec.chars().all(|c| c.is_ascii_digit()));
            assert!(ok, "bad entity `&{name};` in {xml}");
        }
    }
    let mut stack: Vec<&str> = Vec::new();
    let mut roots = 0;
    let mut rest = xml;
    while let Some(open) = rest.find('<') {
        let text = &rest[..open];
        check_text(text, xml);
        assert!(
            !stack.is_empty() || text.trim().is_empty(),
            "text outside the root element in {xml}"
        );
        let after = &rest[open + 1..];
        let close = after
            .find('>')
            .unwrap_or_else(|| panic!("unclosed tag in {xml}"));
        let tag = &after[..close];
        rest = &after[close + 1..];
        if let Some(declaration) = tag.strip_prefix('?') {
            assert!(declaration.ends_with('?'), "bad declaration in {xml}");
            assert!(roots == 0, "declaration after the root in {xml}");
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop(), Some(name.trim()), "mismatched close in {xml}");
            continue;
        }
        let (body, empty) = match tag.strip_suffix('/') {
            Some(body) => (body, true),
            None => (tag, false),
        };
        let name = body.split_whitespace().next().expect("tag name");
        let mut attributes = body[name.len()..].trim_start();
        while !attributes.is_empty() {
            let (key, value) = attributes
                .split_once("=\"")
                .unwrap_or_else(|| panic!("unquoted attribute in <{tag}>"));
            assert!(
                !key.is_empty() && !key.contains(char::is_whitespace),
                "bad attribute name in <{tag}>"
            );
            let end = value
                .find('"')
                .unwrap_or_else(|| panic!("open quote in <{tag}>"));
            check_text(&value[..end], xml);
            attributes = value[end + 1..].trim_start();
        }
        if stack.is_empty() {
            roots += 1;
        }
        if !empty {
            stack.push(name);
        }
    }
    check_text(rest, xml);
    assert!(rest.trim().is_empty(), "text after the root in {xml}");
    assert!(stack.is_empty(), "unclosed elements {stack:?} in {xml}");
    assert_eq!(roots, 1, "not exactly one root element in {xml}");
}

#[test]
fn github_prints_an_error_annotation_per_lint_finding() {
    let project = project(&[lint(
        "lint",
        r#"["sh", "-c", 'echo "src/a.rs:3:5: bad thing"; exit 1']"#,
        "",
    )]);
    let (code, out) = stdout_of(project.check().args(["--format", "github"]));
    assert_eq!(code, 1, "{out}");
    let annotations: Vec<&str> = out.lines().filter(|l| l.starts_with("::")).collect();
    assert_eq!(
        annotations,
        ["::error file=src/a.rs,line=3,col=5,title=validator lint::bad thing"],
        "{out}"
    );
}

#[test]
fn github_annotates_a_failure_routed_on_as_a_warning() {
    let project = project(&[lint(
        "soft",
        r#"["sh", "-c", 'echo "src/b.rs:1:2: meh"; exit 1']"#,
        "on_fail: CONTINUE",
    )]);
    let (code, out) = stdout_of(project.check().args(["--format", "github"]));
    assert_eq!(code, 0, "{out}");
    assert!(
        out.lines()
            .any(|l| l == "::warning file=src/b.rs,line=1,col=2,title=validator soft::meh"),
        "{out}"
    );
    assert!(!out.contains("::error"), "{out}");
}

#[test]
fn text_names_each_gate_and_ends_with_the_decision() {
    let project = project(&[
        lint("first-gate", PASSES, ""),
        lint("second-gate", FAILS, ""),
        lint("third-gate", PASSES, ""),
    ]);
    let (code, text) = stdout_of(&mut project.check());
    assert_eq!(code, 1, "{text}");
    for name in ["first-gate", "second-gate", "third-gate"] {
        assert!(
            text.lines().any(|l| l.contains(name)),
            "{name} missing:\n{text}"
        );
    }
    let last = text.lines().last().expect("output");
    assert!(last.starts_with("FAIL"), "{text}");

    let project = project_passing();
    let (code, text) = stdout_of(&mut project.check());
    assert_eq!(code, 0, "{text}");
    assert!(
        text.lines().last().expect("output").starts_with("PASS"),
        "{text}"
    );
}

fn project_passing() -> Project {
    project(&[lint("a", PASSES, "")])
}

#[test]
fn text_has_no_ansi_escapes_when_no_color_is_set() {
    let gates = [lint("a", PASSES, ""), lint("b", FAILS, "")];
    let project = project(&gates);
    // CLICOLOR_FORCE would turn colour on for a pipe; NO_COLOR still wins.
    let (_, text) = stdout_of(project.check().env("CLICOLOR_FORCE", "1"));
    assert!(!text.contains('\u{1b}'), "{text:?}");
    // The same run with colour forced and NO_COLOR unset does style, so the check above means
    // something.
    let (_, coloured) = stdout_of(
        project
            .check()
            .env_remove("NO_COLOR")
            .env("CLICOLOR_FORCE", "1"),
    );
    assert!(coloured.contains('\u{1b}'), "{coloured:?}");
}

#[test]
fn feedback_stays_within_60_lines_with_500_findings_and_ends_with_what_to_do() {
    let project = project(&[lint(
        "lint",
        r#"["sh", "-c", 'for i in $(seq 1 500); do echo "src/a.rs:$i:1: bad thing $i"; done; exit 1']"#,
        "",
    )]);
    let (code, text) = stdout_of(project.check().args(["--format", "feedback"]));
    assert_eq!(code, 1, "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() <= 60, "{} lines:\n{text}", lines.len());
    assert!(lines[0].contains("FAIL"), "{text}");
    assert!(text.contains("src/a.rs:1:1: bad thing 1"), "{text}");
    let next = lines
        .iter()
        .position(|l| *l == "## What to do next")
        .unwrap_or_else(|| panic!("no next steps:\n{text}"));
    assert_eq!(
        next,
        lines.len() - 2,
        "the next steps close the text:\n{text}"
    );
}

// ---------------------------------------------------------------------------------------------
// Refused input: exit code 2 and a message that names the problem

#[test]
fn a_missing_rules_file_is_refused() {
    let project = Project::new();
    let stderr = refused(
        validator()
            .args(["check", "-c", "/nonexistent.yaml", "--task-dir"])
            .arg(project.task_dir()),
    );
    assert!(stderr.contains("/nonexistent.yaml"), "{stderr}");
    assert!(stderr.contains("No such file or directory"), "{stderr}");
}

#[test]
fn without_c_local_file_or_validator_config_there_is_no_rules_file() {
    let empty = tempfile::tempdir().expect("temp dir");
    let stderr = refused(
        validator()
            .current_dir(empty.path())
            .args(["check", "--task-dir", "."]),
    );
    assert!(stderr.contains("no rules file"), "{stderr}");
    assert!(stderr.contains("validator.yaml"), "{stderr}");
    assert!(stderr.contains("VALIDATOR_CONFIG"), "{stderr}");
}

#[test]
fn validator_config_is_used_when_there_is_no_local_rules_file() {
    let project = project_passing();
    let empty = tempfile::tempdir().expect("temp dir");
    let (code, verdict) = json_verdict(
        validator()
            .current_dir(empty.path())
            .env("VALIDATOR_CONFIG", project.rules_path())
            .arg("check")
            .arg("--task-dir")
            .arg(project.task_dir()),
    );
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(verdict["verdict"], "PASS");
}

#[test]
fn c_wins_over_validator_config_which_wins_over_a_local_rules_file() {
    // A hook or sidecar sets VALIDATOR_CONFIG; a validator.yaml where the command runs may be
    // the worker's.
    let local = project(&[lint("local", PASSES, "")]);
    let from_env = project(&[lint("from_env", PASSES, "")]);
    let from_flag = project(&[lint("from_flag", PASSES, "")]);
    let run = |env: bool, flag: bool| {
        let mut cmd = validator();
        cmd.current_dir(local.path())
            .arg("check")
            .arg("--task-dir")
            .arg(local.task_dir());
        if env {
            cmd.env("VALIDATOR_CONFIG", from_env.rules_path());
        }
        if flag {
            cmd.arg("-c").arg(from_flag.rules_path());
        }
        json_verdict(&mut cmd).1
    };
    assert_eq!(run(false, false)["gates"][0]["name"], "local");
    assert_eq!(run(true, false)["gates"][0]["name"], "from_env");
    assert_eq!(run(true, true)["gates"][0]["name"], "from_flag");
}

#[test]
fn the_rules_file_is_found_upward_to_the_repository_root_and_no_further() {
    let root = tempfile::tempdir().expect("temp dir");
    let repo = root.path().join("repo");
    std::fs::create_dir_all(repo.join("src/deep")).expect("mkdir");
    common::git(&repo, &["init", "-q"]);
    let gates = lint("from_root", PASSES, "");
    std::fs::write(repo.join("validator.yaml"), common::pipeline(&gates)).expect("rules");
    let (code, verdict) = json_verdict(validator().current_dir(repo.join("src/deep")).args([
        "check",
        "--task-dir",
        ".",
    ]));
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(verdict["gates"][0]["name"], "from_root");

    // Without --task-dir, the project judged is the one the rules file was found in (as git
    // works from a subdirectory), not the subdirectory.
    std::fs::write(
        repo.join("validator.yaml"),
        common::pipeline("      - {name: top, rule: exists, paths: [src/deep/here.txt]}\n"),
    )
    .expect("rules");
    std::fs::write(repo.join("src/deep/here.txt"), "x\n").expect("write");
    let (code, verdict) = json_verdict(validator().current_dir(repo.join("src/deep")).arg("check"));
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(verdict["task"], "repo");

    // Above the repository's top it is not looked for.
    std::fs::rename(
        repo.join("validator.yaml"),
        root.path().join("validator.yaml"),
    )
    .expect("move");
    let stderr =
        refused(
            validator()
                .current_dir(repo.join("src/deep"))
                .args(["check", "--task-dir", "."]),
        );
    assert!(stderr.contains("no rules file"), "{stderr}");
}

#[test]
fn an_unknown_format_is_refused() {
    let project = project_passing();
    let stderr = refused(project.check().args(["--format", "yaml"]));
    assert!(stderr.contains("yaml"), "{stderr}");
    assert!(stderr.contains("--format"), "{stderr}");
}

#[test]
fn a_task_dir_that_does_not_exist_is_refused() {
    let project = project_passing();
    let missing = project.path().join("no-such-dir");
    let stderr = refused(
        validator()
            .arg("check")
            .arg("-c")
            .arg(project.rules_path())
            .arg("--task-dir")
            .arg(&missing),
    );
    assert!(stderr.contains("no-such-dir"), "{stderr}");
    assert!(stderr.contains("does not exist"), "{stderr}");
}

#[test]
fn a_signal_file_that_does_not_exist_is_refused() {
    let project = project_passing();
    let stderr = refused(
        project
            .check()
            .arg("--signal")
            .arg("/nonexistent/task.done"),
    );
    assert!(stderr.contains("/nonexistent/task.done"), "{stderr}");
}

#[test]
fn a_file_that_cannot_be_read_is_reported_with_the_os_reason_once() {
    let project = project_passing();
    let rules = refused(validator().args(["check", "-c", "/nonexistent.yaml"]));
    let signal = refused(
        project
            .check()
            .arg("--signal")
            .arg("/nonexistent/task.done"),
    );
    for stderr in [rules, signal] {
        assert_eq!(
            stderr.matches("No such file or directory").count(),
            1,
            "{stderr}"
        );
    }
}

#[test]
fn a_glob_that_does_not_compile_is_positioned_in_the_rules_file() {
    let (stderr, rules) = refused_rules(&pipeline(
        "      - name: outputs\n        rule: exists\n        paths: [\"src/[\"]\n",
    ));
    // `paths:` is on line 8; the bad glob, the list's first item, starts at column 17.
    assert!(stderr.contains(&format!("{rules}:8:17")), "{stderr}");
    assert!(stderr.contains("does not compile"), "{stderr}");
    // The line itself, numbered, with a caret under the glob.
    let lines: Vec<&str> = stderr.lines().collect();
    let shown = lines
        .iter()
        .position(|l| l.starts_with("8 |") && l.ends_with("paths: [\"src/[\"]"))
        .unwrap_or_else(|| panic!("the offending line is shown:\n{stderr}"));
    let caret = lines[shown + 1];
    assert_eq!(caret.find('^'), lines[shown].find("\"src/["), "{stderr}");
}

#[test]
fn an_unknown_key_is_positioned_with_a_suggestion() {
    let (stderr, rules) = refused_rules(&pipeline(
        "      - name: a\n        rule: lint\n        run: [\"true\"]\n        on_fial: CONTINUE\n",
    ));
    assert!(stderr.contains(&format!("{rules}:9:")), "{stderr}");
    assert!(stderr.contains("on_fial"), "{stderr}");
    assert!(stderr.contains("did you mean `on_fail`?"), "{stderr}");
}

#[test]
fn a_jump_to_a_gate_that_does_not_exist_is_refused() {
    let (stderr, rules) = refused_rules(&pipeline(&lint("a", FAILS, "on_fail: nowhere")));
    assert!(stderr.contains(&format!("{rules}:6:")), "{stderr}");
    assert!(stderr.contains("no gate named `nowhere`"), "{stderr}");
}

#[test]
fn a_duplicate_gate_name_is_refused() {
    let (stderr, rules) = refused_rules(&pipeline(
        &[lint("same", PASSES, ""), lint("same", PASSES, "")].concat(),
    ));
    assert!(stderr.contains(&format!("{rules}:7:")), "{stderr}");
    assert!(stderr.contains("a second gate is named `same`"), "{stderr}");
}

#[test]
fn an_unsupported_version_is_refused() {
    let (stderr, rules) =
        refused_rules(&pipeline(&lint("a", PASSES, "")).replace("version: 1", "version: 2"));
    assert!(stderr.contains(&format!("{rules}:1:")), "{stderr}");
    assert!(stderr.contains("version 2 is not supported"), "{stderr}");
    assert!(stderr.contains("version: 1"), "{stderr}");
}

#[test]
fn a_bad_duration_is_refused() {
    let (stderr, rules) = refused_rules(&pipeline(&lint("a", PASSES, "timeout: 10 minutes")));
    assert!(stderr.contains(&format!("{rules}:6:")), "{stderr}");
    assert!(stderr.contains("10 minutes"), "{stderr}");
    assert!(stderr.contains("duration"), "{stderr}");
}

#[test]
fn an_unknown_rule_is_refused_with_the_known_rules() {
    let (stderr, rules) = refused_rules(&pipeline(
        "      - name: a\n        rule: lnit\n        run: [\"true\"]\n",
    ));
    assert!(stderr.contains(&format!("{rules}:7:")), "{stderr}");
    assert!(stderr.contains("lnit"), "{stderr}");
    assert!(stderr.contains("lint"), "{stderr}");
}

#[test]
fn an_unknown_pipeline_name_is_refused() {
    let project = project_passing();
    let stderr = refused(project.check().args(["--pipeline", "nosuch"]));
    assert!(stderr.contains("no pipeline named `nosuch`"), "{stderr}");
    assert!(stderr.contains("main"), "{stderr}");
}

#[test]
fn a_task_no_pipeline_matches_is_refused() {
    let project = Project::new();
    project.rules(&format!(
        "version: 1\npipelines:\n  - name: svc\n    tasks: [\"svc-*\"]\n    gates:\n{}",
        lint("a", PASSES, "")
    ));
    let stderr = refused(&mut project.check());
    assert!(stderr.contains("no pipeline"), "{stderr}");
    assert!(stderr.contains("matches task `task`"), "{stderr}");
}

// ---------------------------------------------------------------------------------------------
// Pipeline selection

#[test]
fn the_task_directory_name_picks_the_first_matching_pipeline_and_pipeline_overrides() {
    let root = tempfile::tempdir().expect("temp dir");
    let rules = root.path().join("validator.yaml");
    let one = |name: &str, tasks: &str| {
        format!(
            "  - name: {name}\n{tasks}    gates:\n{}",
            lint("g", PASSES, "")
        )
    };
    std::fs::write(
        &rules,
        format!(
            "version: 1\nstate: state\npipelines:\n{}{}{}{}",
            one("web", "    tasks: [\"web-*\"]\n"),
            one("svc", "    tasks: [\"svc-*\"]\n"),
            one("auth", "    tasks: [\"*-auth\"]\n"),
            one("rest", ""),
        ),
    )
    .expect("write rules");
    for dir in ["svc-auth", "misc"] {
        std::fs::create_dir(root.path().join(dir)).expect("task dir");
    }
    let check = |dir: &str, named: Option<&str>| {
        let mut cmd = validator();
        cmd.arg("check")
            .arg("-c")
            .arg(&rules)
            .arg("--task-dir")
            .arg(root.path().join(dir));
        if let Some(name) = named {
            cmd.args(["--pipeline", name]);
        }
        let (code, verdict) = json_verdict(&mut cmd);
        assert_eq!(code, 0, "{verdict:#}");
        verdict
    };

    let verdict = check("svc-auth", None);
    assert_eq!(verdict["task"], "svc-auth");
    assert_eq!(verdict["pipeline"], "svc");
    assert_eq!(check("misc", None)["pipeline"], "rest");
    assert_eq!(check("svc-auth", Some("auth"))["pipeline"], "auth");
    assert_eq!(check("svc-auth", Some("web"))["pipeline"], "web");
}

// ---------------------------------------------------------------------------------------------
// `rules check`

#[test]
fn rules_check_prints_the_gate_graph() {
    let project = project(&[
        lint("a", PASSES, "on_fail: c"),
        lint("b", PASSES, "on_pass: PASS"),
        lint("c", PASSES, "on_fail: STOP"),
    ]);
    let (code, out) = stdout_of(
        validator()
            .args(["rules", "check", "-c"])
            .arg(project.rules_path()),
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("pipeline main"), "{out}");
    let line = |name: &str| {
        out.lines()
            .find(|l| l.contains(&format!(". {name} ")))
            .unwrap_or_else(|| panic!("no line for gate {name}:\n{out}"))
            .to_owned()
    };
    assert!(line("a").contains("pass -> b, fail -> c"), "{out}");
    assert!(line("b").contains("pass -> PASS, fail -> BLOCK"), "{out}");
    assert!(
        line("c").contains("pass -> end (PASS), fail -> STOP"),
        "{out}"
    );
    assert!(!out.contains("warning:"), "{out}");
    assert!(
        out.contains("valid, 1 pipeline, 3 gates, 0 warnings"),
        "{out}"
    );
}

#[test]
fn rules_check_warns_about_unreachable_gates_and_cycles() {
    let project = project(&[
        lint("a", PASSES, "on_pass: PASS, on_fail: c"),
        lint("b", PASSES, ""),
        lint("c", PASSES, "on_fail: a"),
    ]);
    let (code, out) = stdout_of(
        validator()
            .args(["rules", "check", "-c"])
            .arg(project.rules_path()),
    );
    assert_eq!(code, 0, "{out}");
    let warnings: Vec<&str> = out.lines().filter(|l| l.contains("warning")).collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("`b`") && w.contains("unreachable")),
        "{out}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("cycle") && w.contains("a -> c -> a")),
        "{out}"
    );
}

#[test]
fn rules_check_runs_nothing() {
    let project = Project::new();
    let marker = project.path().join("ran");
    project.rules(&pipeline(&lint(
        "touch",
        &format!(r#"["touch", "{}"]"#, marker.display()),
        "",
    )));
    let (code, out) = stdout_of(
        validator()
            .args(["rules", "check", "-c"])
            .arg(project.rules_path()),
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("touch"), "{out}");
    assert!(!marker.exists(), "rules check ran a gate's command");
    // The same gate does run under `check`, so the marker means what it says.
    let (code, _) = stdout_of(&mut project.check());
    assert_eq!(code, 0);
    assert!(marker.exists());
}

#[test]
fn rules_check_refuses_an_invalid_file() {
    let project = Project::new();
    project.rules(&pipeline(&lint("a", PASSES, "on_fial: BLOCK")));
    let stderr = refused(
        validator()
            .args(["rules", "check", "-c"])
            .arg(project.rules_path()),
    );
    assert!(stderr.contains("on_fial"), "{stderr}");
}

// ---------------------------------------------------------------------------------------------
// `snapshot`

#[test]
fn snapshot_writes_the_baseline_under_the_state_directory() {
    let project = project_passing();
    project
        .file("src/a.rs", "fn a() {}\n")
        .file("README", "hello\n");
    let (code, out) = stdout_of(
        validator()
            .args(["snapshot", "svc-auth", "-c"])
            .arg(project.rules_path())
            .arg("--task-dir")
            .arg(project.task_dir()),
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("2 files"), "{out}");
    let baseline = project.path().join("state/baselines/svc-auth.json");
    let saved: Value =
        serde_json::from_slice(&std::fs::read(&baseline).expect("baseline written")).expect("JSON");
    assert_eq!(saved["task"], "svc-auth");
    let files = saved["files"].as_object().expect("files");
    let mut names: Vec<&str> = files.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, ["README", "src/a.rs"], "{saved:#}");
}

#[test]
fn snapshot_refuses_an_invalid_task_name() {
    let project = project_passing();
    let stderr = refused(
        validator()
            .args(["snapshot", "../x", "-c"])
            .arg(project.rules_path())
            .arg("--task-dir")
            .arg(project.task_dir()),
    );
    assert!(stderr.contains("invalid task name"), "{stderr}");
    assert!(!project.path().join("x.json").exists());
    assert!(!project.path().join("state/x.json").exists());
}

// ---------------------------------------------------------------------------------------------
// The run's budget

#[test]
fn a_run_past_its_budget_fails() {
    let project = Project::new();
    project.rules(
        &pipeline(&format!(
            "{}{}",
            lint("one", r#"["sleep", "2"]"#, ""),
            lint("two", r#"["sleep", "2"]"#, "")
        ))
        .replace("pipelines:", "defaults: {budget: 1s}\npipelines:"),
    );
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(verdict["verdict"], "FAIL");
    let reasons = strings(&verdict["reasons"]);
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("budget") || r.contains("timed out")),
        "{reasons:?}"
    );
}

#[test]
fn the_budget_stops_a_run_that_continues_past_a_timeout() {
    let project = Project::new();
    project.rules(
        &pipeline(&format!(
            "{}{}",
            lint("one", r#"["sleep", "2"]"#, "on_fail: CONTINUE"),
            lint("two", r#"["sleep", "2"]"#, "")
        ))
        .replace("pipelines:", "defaults: {budget: 1s}\npipelines:"),
    );
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(verdict["verdict"], "FAIL");
    assert_eq!(outcome(&verdict, "one"), "fail");
    // The budget cut the first gate's deadline to what was left of it: under the second it
    // has, not the gate's ten minutes.
    let summary = gate(&verdict, "one")["summary"]
        .as_str()
        .unwrap_or_default();
    assert!(
        summary.contains("timed out after") && summary.contains("ms;"),
        "{verdict:#}"
    );
    assert_eq!(outcome(&verdict, "two"), "skipped");
    let reasons = strings(&verdict["reasons"]);
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("budget of 1s ran out during gate `one`")),
        "{reasons:?}"
    );
}

#[test]
fn completions_need_no_rules_file_and_cover_every_command() {
    let dir = tempfile::tempdir().expect("temp dir");
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let output = common::validator()
            .current_dir(dir.path())
            .args(["completions", shell])
            .output()
            .expect("run");
        assert!(output.status.success(), "{shell}");
        let script = String::from_utf8_lossy(&output.stdout);
        for command in ["check", "watch", "wait", "verify", "snapshot"] {
            assert!(script.contains(command), "{shell} lacks {command}");
        }
    }
    common::validator()
        .args(["completions", "tcsh"])
        .assert()
        .code(2);
}

#[test]
fn a_poll_interval_too_short_to_poll_at_is_refused() {
    let project = common::Project::new();
    project.rules(&common::pipeline("      - {name: status, rule: status}\n"));
    for interval in ["0s", "1ms"] {
        common::validator()
            .arg("-c")
            .arg(project.rules_path())
            .args(["watch", "--poll", interval])
            .timeout(std::time::Duration::from_secs(20))
            .assert()
            .code(2)
            .stderr(predicates::str::contains("too short to poll at"));
    }
}

#[test]
fn a_rules_file_past_the_size_cap_is_refused_not_read_shortened() {
    let project = Project::new();
    // A valid rules file, padded with comments past 4 MiB, then a broken gate: read shortened,
    // the file would load without it.
    let mut yaml = pipeline("      - {name: status, rule: status}\n");
    yaml.push_str(&"# padding\n".repeat(420_000));
    yaml.push_str("      - {name: broken, rule: no-such-rule}\n");
    project.rules(&yaml);
    validator()
        .arg("-c")
        .arg(project.rules_path())
        .args(["rules", "check"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("larger than 4 MiB"));
}

#[test]
fn a_worker_that_signals_is_done_unless_it_says_blocked() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("validator.yaml"),
        common::pipeline("      - {name: status, rule: status}\n"),
    )
    .expect("rules");
    std::fs::create_dir_all(dir.path().join("staging/t")).expect("task");
    let judged = |args: &[&str]| {
        validator()
            .current_dir(dir.path())
            .args(["signal", "t"])
            .args(args)
            .assert()
            .success();
        json_verdict(validator().current_dir(dir.path()).args([
            "check",
            "--task-dir",
            "staging/t",
            "--signal",
            "staging/t.done",
        ]))
    };
    let (code, verdict) = judged(&[]);
    assert_eq!(
        (code, verdict["verdict"].as_str()),
        (0, Some("PASS")),
        "{verdict:#}"
    );
    let (code, verdict) = judged(&["--status", "BLOCKED", "--reason", "the API key is missing"]);
    assert_eq!(
        (code, verdict["verdict"].as_str()),
        (3, Some("BLOCKED")),
        "{verdict:#}"
    );
}

#[test]
fn a_reader_that_closed_the_pipe_ends_the_output_quietly() {
    // `validator rules schema | head -1`: as cat ends, with the status of a SIGPIPE, no error.
    let project = project_passing();
    for args in [
        &["rules", "schema"][..],
        &["rules", "check"],
        &["check", "--quiet", "--format", "json"],
        &["check"],
    ] {
        let (reader, writer) = os_pipe::pipe().expect("pipe");
        drop(reader);
        let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin("validator"));
        command
            .arg("-c")
            .arg(project.rules_path())
            .args(args)
            .stdout(writer)
            .stderr(std::process::Stdio::piped());
        if args[0] == "check" {
            command.arg("--task-dir").arg(project.task_dir());
        }
        let output = command.output().expect("run validator");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(141), "{args:?}: {stderr}");
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
}

#[test]
fn colour_follows_the_flag_then_no_color_then_force_color_then_the_terminal() {
    let project = project(&[lint("lint", FAILS, "")]);
    let coloured = |flag: Option<&str>, env: &[(&str, &str)]| {
        let mut cmd = project.check();
        cmd.env_remove("NO_COLOR")
            .env_remove("FORCE_COLOR")
            .env_remove("CLICOLOR_FORCE")
            .args(["--format", "text"]);
        if let Some(when) = flag {
            cmd.args(["--color", when]);
        }
        for (name, value) in env {
            cmd.env(name, value);
        }
        let output = cmd.output().expect("run validator");
        String::from_utf8_lossy(&output.stdout).contains('\u{1b}')
    };
    // stdout is a pipe here: no colour unless asked for.
    assert!(!coloured(None, &[]));
    assert!(coloured(Some("always"), &[]));
    assert!(coloured(None, &[("FORCE_COLOR", "1")]));
    assert!(coloured(None, &[("CLICOLOR_FORCE", "1")]));
    assert!(!coloured(None, &[("FORCE_COLOR", "1"), ("NO_COLOR", "1")]));
    assert!(!coloured(Some("never"), &[("FORCE_COLOR", "1")]));
    assert!(coloured(Some("always"), &[("NO_COLOR", "1")]));
}

#[test]
fn only_skip_and_keep_going_choose_what_check_runs() {
    let project = project(&[
        lint("first", FAILS, ""),
        lint("second", FAILS, ""),
        lint("third", PASSES, ""),
    ]);
    let names = |verdict: &serde_json::Value| -> Vec<(String, String)> {
        verdict["gates"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|g| {
                (
                    g["name"].as_str().unwrap_or_default().to_owned(),
                    g["outcome"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    };
    let judged = |args: &[&str], env: Option<&str>| {
        let mut cmd = project.check();
        cmd.args(args).env_remove("VALIDATOR_SKIP");
        if let Some(skip) = env {
            cmd.env("VALIDATOR_SKIP", skip);
        }
        json_verdict(&mut cmd)
    };
    // By default the first failure ends the run.
    let (code, verdict) = judged(&[], None);
    assert_eq!(code, 1);
    assert_eq!(names(&verdict)[1], ("second".into(), "skipped".into()));
    // --keep-going runs them all and reports both failures; the verdict is the same.
    let (code, verdict) = judged(&["--keep-going"], None);
    assert_eq!(code, 1);
    let outcomes: Vec<String> = names(&verdict).into_iter().map(|(_, o)| o).collect();
    assert_eq!(outcomes, ["fail", "fail", "pass"], "{verdict:#}");
    // Skipped gates are said to have not run, in the warnings too.
    let (code, verdict) = judged(&[], Some("first,second"));
    assert_eq!(code, 0, "{verdict:#}");
    assert!(
        verdict["warnings"]
            .to_string()
            .contains("first: not run (--skip)"),
        "{verdict:#}"
    );
    let (code, verdict) = judged(&["--only", "third"], None);
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(names(&verdict)[0], ("first".into(), "skipped".into()));
    // A name the pipeline does not have is refused, with the names it has.
    let stderr = refused(project.check().args(["--skip", "thrid"]));
    assert!(stderr.contains("did you mean `third`?"), "{stderr}");
}

#[test]
fn a_gate_that_does_not_run_never_ends_the_run_whatever_its_on_pass_says() {
    // A gate skipped by `only_if` (or --skip) goes on to the next gate: its PASS, BLOCK or STOP
    // route is not taken, so a failing gate after it still fails the run.
    for route in ["PASS", "BLOCK", "STOP"] {
        let project = Project::new();
        project.rules(&common::pipeline(&format!(
            "      - {{name: absent, rule: lint, run: [\"true\"], only_if: [{{file: no-such-file}}], on_pass: {route}}}\n      - {{name: test, rule: lint, run: [\"false\"]}}\n"
        )));
        let (code, verdict) = json_verdict(&mut project.check());
        assert_eq!(code, 1, "on_pass: {route}: {verdict:#}");
        assert_eq!(common::gate(&verdict, "absent")["outcome"], "skipped");
        assert_eq!(common::gate(&verdict, "test")["outcome"], "fail");
    }
}

#[test]
fn fail_on_findings_fails_on_any_output_even_one_it_cannot_read() {
    // gofmt -l exits 0 and names the files it would change; a name with a space is no path
    // validator reads, and must not pass for that.
    let gate = |output: &str| {
        format!(
            "      - {{name: format, rule: lint, run: [printf, '{output}'], fail_on_findings: true}}\n"
        )
    };
    let project = Project::new();
    project.rules(&common::pipeline(&gate("zz z.go\\n")));
    let (code, verdict) = json_verdict(&mut project.check());
    assert_eq!(code, 1, "{verdict:#}");
    assert!(
        common::gate(&verdict, "format")["summary"]
            .to_string()
            .contains("fail_on_findings"),
        "{verdict:#}"
    );
    project.rules(&common::pipeline(&gate("main.go\\n")));
    let (code, verdict) = json_verdict(&mut project.check());
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(
        common::gate(&verdict, "format")["findings"][0]["file"],
        "main.go"
    );
    project.rules(&common::pipeline(&gate("")));
    let (code, verdict) = json_verdict(&mut project.check());
    assert_eq!(code, 0, "{verdict:#}");
}

#[test]
fn changed_only_passes_a_linter_the_changed_files_and_all_files_passes_it_every_one() {
    // The "linter" prints the files it was given, one a line, and fails on any named bad*.
    let project = Project::new();
    project
        .rules(&common::pipeline(
            "      - {name: lint, rule: lint, run: [sh, -c, 'for f; do echo \"$f:1: seen\"; case $f in *bad*) exit 1;; esac; done', sh], files: [\"**/*.py\"], changed_only: true}\n",
        ))
        .file("a.py", "a = 1\n")
        .file("bad_old.py", "b = 1\n");
    let dir = project.task_dir();
    common::commit_all(&dir);
    let judged = |extra: &[&str]| {
        let mut cmd = project.check();
        common::isolate_git(&mut cmd);
        cmd.args(extra);
        json_verdict(&mut cmd)
    };
    // Nothing changed: nothing to lint, said so (the committed bad_old.py is not the change's).
    let (code, verdict) = judged(&[]);
    assert_eq!(code, 0, "{verdict:#}");
    let lint = common::gate(&verdict, "lint");
    assert_eq!(lint["outcome"], "skipped");
    assert!(
        lint["summary"]
            .to_string()
            .contains("no changed file matches"),
        "{lint}"
    );
    // One file changed, one added: exactly those are passed.
    project.file("a.py", "a = 2\n").file("new.py", "n = 1\n");
    let (code, verdict) = judged(&[]);
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(
        files_found(&verdict, "lint"),
        ["a.py", "new.py"],
        "{verdict:#}"
    );
    // --all-files: the whole project as git sees it, the old bad one included; not what the
    // committed rules ignore.
    project
        .file(".gitignore", "build/\n")
        .file("build/bad_generated.py", "g = 1\n");
    common::git(&dir, &["add", ".gitignore"]);
    common::git(&dir, &["commit", "-q", "-m", "ignore build"]);
    let (code, verdict) = judged(&["--all-files"]);
    assert_eq!(code, 1, "{verdict:#}");
    let shown = verdict.to_string();
    assert!(
        shown.contains("bad_old.py") && !shown.contains("bad_generated"),
        "{verdict:#}"
    );
    // `changed_only` without `files:` is refused where it is written.
    project.rules(&common::pipeline(
        "      - {name: lint, rule: lint, run: [\"true\"], changed_only: true}\n",
    ));
    let stderr = refused(&mut project.check());
    assert!(
        stderr.contains("`changed_only` picks among the files of `files:`"),
        "{stderr}"
    );
}

#[test]
fn a_run_lists_what_the_worker_changed_once_for_every_gate_that_asks() {
    // file-scope, a changed-only content gate and a changed-only linter all need the change
    // set: git is asked for it once, and each sees the same.
    let project = Project::new();
    project
        .rules(&common::pipeline(
            r#"      - {name: scope, rule: file-scope, deny: ["secret/**"]}
      - {name: bans, rule: content, files: ["**/*.py"], ban: [{pattern: breakpoint}], changed_only: true}
      - {name: lint, rule: lint, run: [sh, -c, 'for f; do echo "$f:1: seen"; done', sh], files: ["**/*.py"], changed_only: true}
"#,
        ))
        .file("a.py", "a = 1\n")
        .file("old.py", "o = 1\n");
    let dir = project.task_dir();
    common::commit_all(&dir);
    project.file("a.py", "a = 2\n").file("new.py", "n = 1\n");
    for (extra, linted) in [
        (&[][..], &["a.py", "new.py"][..]),
        (&["--all-files"][..], &["a.py", "new.py", "old.py"][..]),
    ] {
        let (code, verdict, stderr) = judged_with_log(&project, extra);
        assert_eq!(code, Some(0), "{verdict:#}\n{stderr}");
        // Once for the gates before the linter, and once more to judge them again after it
        // ran (a program may write files): never once per gate.
        assert_eq!(
            stderr.matches("listing what the worker changed").count(),
            2,
            "{extra:?}: {stderr}"
        );
        assert_eq!(
            files_found(&verdict, "lint"),
            linted,
            "{extra:?}: {verdict:#}"
        );
        assert!(
            common::gate(&verdict, "scope")["summary"]
                .to_string()
                .contains("2 changed files"),
            "{verdict:#}"
        );
    }
}

#[test]
fn gates_after_a_command_see_what_it_changed() {
    // A test runs the worker's code, which may write files: a file-scope gate after it (a
    // contract's scope, say) lists anew and sees the file the tests wrote.
    let project = Project::new();
    project
        .rules(&common::pipeline(
            r#"      - {name: scope, rule: file-scope, readonly: ["config/**"]}
      - {name: test, rule: test, run: [sh, -c, 'echo "safe: false" > config/prod.yaml']}
      - {name: scope-after, rule: file-scope, readonly: ["config/**"]}
"#,
        ))
        .file("config/prod.yaml", "safe: true\n");
    let dir = project.task_dir();
    common::commit_all(&dir);
    let (code, verdict, stderr) = judged_with_log(&project, &[]);
    assert_eq!(code, Some(1), "{verdict:#}\n{stderr}");
    assert_eq!(common::gate(&verdict, "scope")["outcome"], "pass");
    let after = common::gate(&verdict, "scope-after");
    assert_eq!(after["outcome"], "fail", "{verdict:#}");
    assert_eq!(
        after["findings"][0]["file"], "config/prod.yaml",
        "{verdict:#}"
    );
    assert_eq!(
        stderr.matches("listing what the worker changed").count(),
        2,
        "{stderr}"
    );
}

/// `check --format json EXTRA` with validator's debug log: (exit code, verdict, stderr).
fn judged_with_log(project: &Project, extra: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let mut cmd = project.check();
    common::isolate_git(&mut cmd);
    cmd.args(["--format", "json"])
        .args(extra)
        .env("VALIDATOR_LOG", "validator=debug");
    let output = cmd.output().expect("run validator");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let verdict = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("no JSON verdict ({err}): {stderr}"));
    (output.status.code(), verdict, stderr)
}

#[test]
fn changed_only_outside_git_counts_from_the_snapshot_baseline() {
    let project = Project::new();
    project
        .rules(&common::pipeline(
            "      - {name: lint, rule: lint, run: [sh, -c, 'for f; do echo \"$f:1: seen\"; done', sh], files: [\"**/*.py\"], changed_only: true}\n",
        ))
        .file("old.py", "o = 1\n")
        .file("same.py", "s = 1\n");
    // The task is named `task` (its directory's name); the baseline is taken before the work.
    validator()
        .args(["snapshot", "task", "-c"])
        .arg(project.rules_path())
        .arg("--task-dir")
        .arg(project.task_dir())
        .assert()
        .success();
    project.file("old.py", "o = 2\n").file("new.py", "n = 1\n");
    let (code, verdict) = json_verdict(&mut project.check());
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(
        files_found(&verdict, "lint"),
        ["new.py", "old.py"],
        "{verdict:#}"
    );
}

/// The files of `gate`'s findings, in order.
fn files_found<'v>(verdict: &'v serde_json::Value, gate: &str) -> Vec<&'v str> {
    common::gate(verdict, gate)["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["file"].as_str())
        .collect()
}

#[test]
fn rules_check_fails_on_what_check_would_end_in_error() {
    let project = project(&[lint("lint", r#"["no-such-linter-anywhere"]"#, "")]);
    let output = validator()
        .args(["rules", "check", "-c"])
        .arg(project.rules_path())
        .output()
        .expect("run validator");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(2), "{stdout}");
    assert!(
        stdout.contains(
            "error: pipeline `main`: gate `lint`: command `no-such-linter-anywhere` is not on PATH"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("1 problem that `check` would end in ERROR here"),
        "{stdout}"
    );
    let (code, verdict) = json_verdict(&mut project.check());
    assert_eq!(
        (code, verdict["verdict"].as_str()),
        (2, Some("ERROR")),
        "{verdict:#}"
    );
}

#[test]
fn a_transposed_key_gets_did_you_mean() {
    let dir = tempfile::tempdir().expect("temp dir");
    let rules = dir.path().join("validator.yaml");
    std::fs::write(
        &rules,
        common::pipeline("      - {name: t, rule: test, rnu: [\"true\"]}\n"),
    )
    .expect("rules");
    let (code, stderr) = common::rules_check(&rules);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("did you mean `run`?"), "{stderr}");
}
