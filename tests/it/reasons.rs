//! The reasons a worker reads: findings read out of real tools' output (the corpus under
//! `tests/corpus/`), the feedback's advice fitting the way the worker is judged again, and
//! output free of terminal control sequences and of backtraces nobody asked for.

use crate::common::{gate, lint, project};

fn feedback(project: &crate::common::Project) -> (i32, String) {
    let output = project
        .check()
        .args(["--format", "feedback"])
        .output()
        .expect("run validator");
    (
        output.status.code().expect("exit code"),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[test]
fn a_check_tells_the_worker_to_fix_not_to_signal_again() {
    let project = project(&[lint(
        "lint",
        r#"["sh", "-c", 'echo "src/a.rs:3:1: bad thing"; exit 1']"#,
        "",
    )]);
    let (code, text) = feedback(&project);
    assert_eq!(code, 1, "{text}");
    assert!(!text.contains("signal done"), "{text}");
    assert!(!text.contains("attempt"), "{text}");
    assert!(text.contains("the same check judges the fix"), "{text}");
}

#[test]
fn a_failure_the_rules_route_on_is_said_once_as_a_warning() {
    let project = project(&[
        lint(
            "soft",
            r#"["sh", "-c", 'echo "src/a.rs:3:1: style nit"; exit 1']"#,
            "on_fail: CONTINUE",
        ),
        lint(
            "hard",
            r#"["sh", "-c", 'echo "src/b.rs:1:1: real bug"; exit 1']"#,
            "",
        ),
    ]);
    let (code, text) = feedback(&project);
    assert_eq!(code, 1, "{text}");
    let failed = text
        .split("## What failed")
        .nth(1)
        .and_then(|rest| rest.split("## ").next())
        .unwrap_or_else(|| panic!("no What failed section:\n{text}"));
    assert!(failed.contains("hard"), "{text}");
    assert!(!failed.contains("soft"), "{text}");
    let warnings = text
        .split("## Warnings")
        .nth(1)
        .unwrap_or_else(|| panic!("no Warnings section:\n{text}"));
    assert!(warnings.contains("soft"), "{text}");
}

#[test]
fn gates_run_without_rust_backtraces_unless_the_gate_asks() {
    let probe = r#"["sh", "-c", 'echo "RUST_BACKTRACE=$RUST_BACKTRACE"; exit 1']"#;
    let project = project(&[
        lint("plain", probe, "on_fail: CONTINUE"),
        lint("asks", probe, "env: {RUST_BACKTRACE: full}"),
    ]);
    let mut cmd = project.check();
    cmd.args(["--format", "json"]).env("RUST_BACKTRACE", "1");
    let (_, verdict) = crate::common::json_verdict(cmd);
    let tail = |name: &str| {
        gate(&verdict, name)["output_tail"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert!(tail("plain").contains("RUST_BACKTRACE=0"), "{verdict:#}");
    assert!(tail("asks").contains("RUST_BACKTRACE=full"), "{verdict:#}");
}

#[test]
fn terminal_control_sequences_of_every_kind_are_stripped() {
    // A colour, rustfmt's charset shift `ESC ( B`, a window title and a hyperlink.
    let project = project(&[lint(
        "lint",
        r#"["printf", '\033[31msrc/a.rs:1:1: red\033(B\033[m \033]0;title\007\033]8;;https://x\033\\link\033]8;;\033\\\n']"#,
        "",
    )]);
    let (_, verdict) = project.verdict();
    let shown = verdict.to_string();
    assert!(!shown.contains("\\u001b"), "{verdict:#}");
    assert!(!shown.contains("(B"), "{verdict:#}");
    let tail = gate(&verdict, "lint")["output_tail"]
        .as_str()
        .unwrap_or_default();
    assert!(tail.contains("red link"), "{verdict:#}");
}

/// A file that CI fetches from a package registry, named by an environment variable; `None`
/// (and the check skipped) on a machine without it, unless `VALIDATOR_TEST_REQUIRE_TOOLS` says
/// every such check must run.
pub fn registry_file(variable: &str, test: &str) -> Option<std::path::PathBuf> {
    match std::env::var_os(variable) {
        Some(path) => Some(path.into()),
        None => {
            assert!(
                std::env::var_os("VALIDATOR_TEST_REQUIRE_TOOLS").is_none(),
                "{test}: ${variable} is not set, and VALIDATOR_TEST_REQUIRE_TOOLS is"
            );
            eprintln!("SKIPPED part of {test}: ${variable} is not set (.ci/run sets it)");
            None
        }
    }
}

#[test]
fn sarif_output_is_a_valid_log_with_a_result_per_finding_at_its_place() {
    let project = project(&[
        lint("silent", r#"["sh", "-c", 'exit 3']"#, "on_fail: CONTINUE"),
        lint(
            "lint",
            r#"["sh", "-c", 'echo "src/a#b.py:3:5: F401 [*] os imported but unused"; echo "src/c.py:1:0: C0114: Missing docstring (missing-module-docstring)"; echo "/etc/passwd:3:1: F999 outside"; exit 1']"#,
            "",
        ),
    ]);
    let output = project
        .check()
        .args(["--format", "sarif"])
        .output()
        .expect("run validator");
    assert_eq!(output.status.code(), Some(1));
    let log: serde_json::Value = serde_json::from_slice(&output.stdout).expect("SARIF is JSON");
    assert_eq!(log["version"], "2.1.0");
    let results = log["runs"][0]["results"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(results.len(), 4, "{log:#}");
    // A path outside the task is no place in the repository: the result is placed at the
    // rules file and names the path in its message.
    assert_eq!(
        results[3]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "validator.yaml"
    );
    assert!(
        results[3]["message"]["text"]
            .to_string()
            .contains("/etc/passwd:3:1")
    );
    // A gate that failed without findings is a result of its own, with its summary, placed at
    // the rules file: code scanning refuses a result without a place.
    assert_eq!(results[0]["ruleId"], "silent");
    assert_eq!(
        results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "validator.yaml"
    );
    let first = &results[1];
    assert_eq!(first["ruleId"], "lint/F401");
    assert_eq!(first["level"], "error");
    let place = &first["locations"][0]["physicalLocation"];
    assert_eq!(place["artifactLocation"]["uri"], "src/a%23b.py");
    assert_eq!(place["region"]["startLine"], 3);
    assert_eq!(place["region"]["startColumn"], 5);
    // pylint counts columns from 0; SARIF from 1, so a column 0 is left out.
    assert!(results[2]["locations"][0]["physicalLocation"]["region"]["startColumn"].is_null());

    let test = "sarif_output_is_a_valid_log_with_a_result_per_finding_at_its_place";
    if let Some(schema) = registry_file("VALIDATOR_TEST_SARIF_SCHEMA", test) {
        let mut schema: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&schema).expect("SARIF schema")).expect("JSON");
        // The published schema's `language` patterns end in a stray `]` that its own
        // meta-schema refuses as a regex; validator never writes `language`, so they go.
        fn drop_language_patterns(value: &mut serde_json::Value) {
            match value {
                serde_json::Value::Object(map) => {
                    if let Some(language) = map
                        .get_mut("language")
                        .and_then(serde_json::Value::as_object_mut)
                    {
                        language.remove("pattern");
                    }
                    map.values_mut().for_each(drop_language_patterns);
                }
                serde_json::Value::Array(items) => {
                    items.iter_mut().for_each(drop_language_patterns)
                }
                _ => {}
            }
        }
        drop_language_patterns(&mut schema);
        let validator = jsonschema::validator_for(&schema).expect("the SARIF schema compiles");
        let errors: Vec<String> = validator.iter_errors(&log).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:#?}\n{log:#}");
        // The schema does judge: a level SARIF does not have is refused.
        let mut broken = log.clone();
        broken["runs"][0]["results"][0]["level"] = "fatal".into();
        assert!(!validator.is_valid(&broken));
    }
}

#[test]
fn a_flood_of_output_is_read_in_one_pass_and_capped() {
    // Over a MiB each of distinct findings and failed tests (the output keeps its last MiB) in
    // shapes that are read in blocks and merged: formatter files, libtest results, go
    // subtests. The reading keeps at most 200 of each and never compares every line with
    // every other.
    let project = project(&[
        lint(
            "fmt",
            r#"["sh", "-c", 'seq 1 120000 | sed "s|.*|Diff in /x/src/f&.rs:1:|"; exit 1']"#,
            "on_fail: CONTINUE",
        ),
        format!(
            "      - {{name: cargo, rule: test, run: {}, on_fail: CONTINUE}}\n",
            r#"["sh", "-c", 'echo "running 60000 tests"; seq 1 60000 | sed "s|.*|test t::case_& ... FAILED|"; echo "test result: FAILED. 0 passed; 60000 failed"; exit 101']"#
        ),
        format!(
            "      - {{name: go, rule: test, run: {}}}\n",
            r#"["sh", "-c", 'seq 1 40000 | sed "s|.*|--- FAIL: TestX/sub_& (0.00s)|"; printf "FAIL\\texample.com/m\\t0.1s\\n"; exit 1']"#
        ),
    ]);
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    let count = |name: &str| {
        gate(&verdict, name)["findings"]
            .as_array()
            .map_or(0, Vec::len)
    };
    assert_eq!(
        (count("fmt"), count("cargo"), count("go")),
        (200, 200, 200),
        "{verdict:#}"
    );
}

#[test]
fn when_the_tests_could_not_run_the_first_lines_of_the_feedback_name_the_cause() {
    // Real runners' output (tests/corpus/tests) replayed by a gate: an import error, a syntax
    // error, a compile error, a module that cannot be found.
    for (case, cause) in [
        (
            "pytest-missing-module",
            "ModuleNotFoundError: No module named 'requests'",
        ),
        ("pytest-syntax-error", "SyntaxError"),
        ("unittest-import-error", "No module named"),
        ("cargo-test-compile-error", "error[E0308]: mismatched types"),
        ("go-test-compile-error", "undefined: Subtract"),
        ("jest-missing-module", "Cannot find module 'axios'"),
        ("maven-compile-error", "incompatible types"),
    ] {
        let output = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/corpus/tests")
            .join(case)
            .join("output.txt");
        let project = project(&[format!(
            "      - {{name: tests, rule: test, run: [\"sh\", \"-c\", 'cat \"$0\"; exit 1', {:?}]}}\n",
            output.display().to_string()
        )]);
        let (code, text) = feedback(&project);
        assert_eq!(code, 1, "{case}: {text}");
        let head: Vec<&str> = text.lines().take(10).collect();
        let head = head.join("\n");
        assert!(head.contains("the tests could not run"), "{case}:\n{text}");
        assert!(
            head.contains(cause),
            "{case}: `{cause}` not in the first lines:\n{text}"
        );
        assert!(!head.contains("tests failed"), "{case}:\n{text}");
    }
}

#[test]
fn a_gate_can_name_the_format_its_tool_prints() {
    let run = r#"["sh", "-c", 'echo "notes.txt:3: see the docs"; echo "error[E0308]: mismatched types"; echo " --> src/main.rs:3:5"; exit 1']"#;
    let project = project(&[lint("lint", run, "")]);
    let (_, verdict) = project.verdict();
    assert_eq!(
        gate(&verdict, "lint")["findings"].as_array().map(Vec::len),
        Some(2)
    );
    let project = project_with_format(run, "rustc");
    let (_, verdict) = project.verdict();
    let found = gate(&verdict, "lint")["findings"].clone();
    assert_eq!(found.as_array().map(Vec::len), Some(1), "{verdict:#}");
    assert_eq!(found[0]["file"], "src/main.rs");
    assert_eq!(found[0]["rule"], "E0308");

    // A format validator does not read is refused where it is written, with the nearest name.
    let project = project_with_format(run, "rustcc");
    let output = crate::common::validator()
        .args(["rules", "check", "-c"])
        .arg(project.rules_path())
        .output()
        .expect("run validator");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no output format named `rustcc`"),
        "{stderr}"
    );
    assert!(stderr.contains("did you mean `rustc`?"), "{stderr}");
}

fn project_with_format(run: &str, format: &str) -> crate::common::Project {
    project(&[lint("lint", run, &format!("format: {format}"))])
}

#[test]
fn floods_shaped_to_make_a_reader_look_back_cost_one_pass() {
    // Shapes an adversarial review found quadratic (each ran for minutes on a MiB): many go
    // packages of failures, a pytest summary repeating one test and one collection error, TAP
    // naming a test file over and over, and go -v results long after their `=== RUN`. Each
    // now reads in one pass: this test takes seconds where those took minutes.
    let shapes = [
        r#"for p in $(seq 1 300); do seq 1 200 | sed "s|.*|--- FAIL: T${p}_& (0.00s)|"; printf "FAIL\tp$p\t0.1s\n"; done"#,
        r#"echo "=== FAILURES ==="; seq 1 30000 | sed "s|.*|____________________ t& ____________________|"; echo "=== short test summary info ==="; seq 1 20000 | sed "s|.*|FAILED a.py::t - x|"; seq 1 20000 | sed "s|.*|ERROR a.py - ImportError: x|""#,
        r#"echo "TAP version 13"; seq 1 60000 | sed "s|.*|not ok & - /t/a.js|""#,
        r#"echo "=== RUN   T"; seq 1 60000 | sed "s|.*|--- FAIL: T (0.00s)|"; printf "FAIL\tp\t1s\n""#,
    ];
    let gates: Vec<String> = shapes
        .iter()
        .enumerate()
        .map(|(i, shape)| {
            format!(
                "      - {{name: t{i}, rule: test, run: {}, on_fail: CONTINUE}}\n",
                serde_json::json!(["sh", "-c", format!("{shape}; exit 1")])
            )
        })
        .collect();
    let project = project(&gates);
    let (code, verdict) = project.verdict();
    assert_eq!(code, 0, "every gate routes on: {verdict:#}");
    for i in 0..shapes.len() {
        assert_eq!(
            gate(&verdict, &format!("t{i}"))["outcome"],
            "fail",
            "{verdict:#}"
        );
    }
}

#[test]
fn a_junit_report_this_run_did_not_write_names_no_test() {
    let project = project(&["      - {name: tests, rule: test, run: [\"sh\", \"-c\", 'echo usage error; exit 4'], junit: report.xml}\n".to_owned()]);
    let stale = "<testsuite><testcase classname=\"auth.Login\" name=\"invented_by_worker\"><failure message=\"x\"/></testcase></testsuite>";
    project.file("report.xml", stale);
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(project.task_dir().join("report.xml"))
        .and_then(|file| file.set_modified(old))
        .expect("age the report");
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    let shown = verdict.to_string();
    assert!(!shown.contains("invented_by_worker"), "{verdict:#}");
    assert!(shown.contains("not written by this run"), "{verdict:#}");
}

#[test]
fn a_lint_gate_reads_the_findings_report_its_tool_writes() {
    // ruff's real SARIF (tests/corpus), written to a file by the gate's command.
    let sarif = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus/findings/ruff-sarif/output.txt");
    let project = project(&[format!(
        "      - {{name: lint, rule: lint, run: {}, report: out/ruff.sarif}}\n",
        serde_json::json!([
            "sh",
            "-c",
            "mkdir -p out && cp \"$0\" out/ruff.sarif && echo 'Found 9 errors.' && exit 1",
            sarif.display().to_string()
        ])
    )]);
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    let found = gate(&verdict, "lint")["findings"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(found.len(), 9, "{verdict:#}");
    assert!(found.iter().any(|f| f["rule"] == "F401"), "{verdict:#}");
}
