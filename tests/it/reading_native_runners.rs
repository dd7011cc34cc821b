//! The `test` rule over the native runners' real output (`tests/corpus/tests/`, captured by
//! `capture-native.sh`): RSpec, minitest, PHPUnit, GoogleTest, ctest, Catch2, busted and
//! `cargo test -q` across binaries, each through a gate of the real binary. Every fixture has
//! a passing test that prints failure lines of every runner, its own runner's whole summary
//! among them: none of those may be named.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{gate, project};

fn case_dir(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus/tests")
        .join(case)
}

/// The failed tests a case's truth lists.
fn truth(case: &str) -> Vec<String> {
    let text = std::fs::read_to_string(case_dir(case).join("truth.json")).expect("truth.json");
    let truth: Value = serde_json::from_str(&text).expect("truth is JSON");
    truth["failed"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n.as_str().map(str::to_owned))
        .collect()
}

/// One verdict over a `test` gate per case, each printing the case's captured output and
/// exiting 1, as a failed run of that runner does.
fn judge(cases: &[&str]) -> Value {
    let gates: Vec<String> = cases
        .iter()
        .map(|case| {
            let output = case_dir(case).join("output.txt");
            format!(
                "      - {{name: {case}, rule: test, run: {}, on_fail: CONTINUE}}\n",
                serde_json::json!([
                    "sh",
                    "-c",
                    "cat \"$0\"; exit 1",
                    output.display().to_string()
                ])
            )
        })
        .collect();
    let (code, verdict) = project(&gates).verdict();
    assert_eq!(code, 0, "every gate routes on: {verdict:#}");
    verdict
}

fn messages(gate: &Value) -> Vec<String> {
    gate["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["message"].as_str().map(str::to_owned))
        .collect()
}

fn summary(gate: &Value) -> &str {
    gate["summary"].as_str().unwrap_or_default()
}

#[test]
fn each_native_runner_names_its_failed_tests_and_none_a_test_printed() {
    let cases = [
        "rspec-progress",
        "rspec-documentation",
        "minitest-rake",
        "minitest-verbose",
        "phpunit-default",
        "gtest-default",
        "gtest-brief",
        "gtest-color",
        "ctest-default",
        "ctest-output-on-failure",
        "catch2-default",
        "catch2-v2",
        "busted-default",
        "busted-utf",
        "cargo-test-quiet-no-fail-fast",
    ];
    let verdict = judge(&cases);
    for case in cases {
        let test = gate(&verdict, case);
        let said = messages(test);
        let expected = truth(case);
        assert_eq!(said.len(), expected.len(), "{case}: {test:#}");
        for name in &expected {
            let named = format!("test failed: {name}");
            assert!(
                said.iter()
                    .any(|m| m == &named || m.starts_with(&format!("{named}: "))),
                "{case}: `{name}` not named: {test:#}"
            );
        }
        let shown = format!("{} {}", summary(test), said.join(" "));
        assert!(
            !shown.contains("Fake") && !shown.contains("fake"),
            "{case}: {test:#}"
        );
        assert!(
            summary(test).starts_with(&format!("{} test", expected.len())),
            "{case}: {test:#}"
        );
    }
}

#[test]
fn a_run_that_failed_otherwise_names_no_test_its_tests_printed() {
    // The passing runs' output (only the test printing other runners' failures and its own
    // runner's whole summary), read as if the run had failed; and two runs where a passing
    // test prints a whole failure of its own runner's beside a real one, which the console
    // cannot tell apart (Catch2; GoogleTest's `--gtest_brief`): none is named there.
    let cases = [
        "rspec-passed",
        "minitest-passed",
        "phpunit-passed",
        "gtest-passed",
        "ctest-passed",
        "catch2-passed",
        "catch2-hostile-passed",
        "busted-passed",
        "catch2-hostile",
        "gtest-brief-hostile",
    ];
    let verdict = judge(&cases);
    for case in cases {
        let test = gate(&verdict, case);
        assert_eq!(test["outcome"], "fail", "{case}: {test:#}");
        assert!(messages(test).is_empty(), "{case}: {test:#}");
        assert!(
            summary(test).starts_with("`sh` exited with 1; its output names no failed test"),
            "{case}: {test:#}"
        );
    }
}

#[test]
fn a_native_runner_that_could_not_run_says_why() {
    let cases = [
        (
            "rspec-load-error",
            "LoadError: cannot load such file -- faraday",
        ),
        (
            "minitest-load-error",
            "LoadError: cannot load such file -- faraday",
        ),
        (
            "phpunit-parse-error",
            "ParseError: syntax error, unexpected variable \"$this\"",
        ),
        (
            "ctest-compile-error",
            "error: ‘multiply’ was not declared in this scope",
        ),
        (
            "ctest-not-built",
            "error: ‘multiply’ was not declared in this scope",
        ),
        (
            "busted-syntax-error",
            "spec/client_spec.lua:5: unexpected symbol near '='",
        ),
    ];
    let names: Vec<&str> = cases.iter().map(|(case, _)| *case).collect();
    let verdict = judge(&names);
    for (case, cause) in cases {
        let test = gate(&verdict, case);
        assert!(messages(test).is_empty(), "{case}: {test:#}");
        let said = summary(test);
        assert!(
            said.starts_with("the tests could not run: ") && said.contains(cause),
            "{case}: {test:#}"
        );
    }
}

#[test]
fn floods_of_each_native_format_read_in_one_pass() {
    // Ten megabytes of each shape a reader could look back over: many closing lines, blocks,
    // headers and list lines. A reader that looks back per line runs for hours on these;
    // read in one pass, this test takes seconds.
    use validator_reading::test_names::from_output;
    const SIZE: usize = 10 * 1024 * 1024;
    let flood = |unit: &str, tail: &str| {
        let mut text = unit.repeat(SIZE / unit.len());
        text.push_str(tail);
        text
    };
    // Each unit with its own number: names that are all different.
    let numbered = |unit: &dyn Fn(usize) -> String, tail: &str| {
        let mut text = String::with_capacity(SIZE + tail.len());
        let mut i = 0;
        while text.len() < SIZE {
            text.push_str(&unit(i));
            i += 1;
        }
        text.push_str(tail);
        text
    };
    let dashes = "-".repeat(79);
    let dots = ".".repeat(79);
    let shapes = [
        flood("Finished in 0.1 seconds\n1 example, 1 failure\n", ""),
        flood(
            "rspec ./spec/a_spec.rb:1 # a\n",
            "Finished in 1 seconds\n1 example, 1 failure\n\nFailed examples:\n\n",
        ),
        flood(
            "Finished in 0.1s, 1 runs/s.\n  1) Failure:\nA#test_a [a.rb:1]:\n",
            "1 runs, 1 assertions, 1 failures, 0 errors, 0 skips\n",
        ),
        flood(
            "Time: 00:00.001, Memory: 4.00 MB\nThere was 1 failure:\n\n1) A::testA\n",
            "Tests: 1, Assertions: 1, Failures: 1.\n",
        ),
        flood(
            "[  FAILED  ] A.b (0 ms)\n[ RUN      ] A.b\n",
            "[==========] 1 test from 1 test suite ran. (0 ms total)\n[  PASSED  ] 0 tests.\n",
        ),
        flood("[  FAILED  ] A.b\n", ""),
        flood(
            "\t  1 - a (Failed)\nThe following tests FAILED:\n",
            "0% tests passed, 1 tests failed out of 1\n",
        ),
        flood(
            &format!("{dashes}\n{dashes}\n{dashes}\nt.cpp:1\n{dots}\n"),
            &format!(
                "{}\ntest cases: 1 | 0 passed | 99999999 failed\n",
                "=".repeat(79)
            ),
        ),
        numbered(
            &|i| format!("{dashes}\nname {i}\n{dashes}\nt.cpp:1\n{dots}\n"),
            &format!(
                "{}\ntest cases: 1 | 0 passed | 99999999 failed\n",
                "=".repeat(79)
            ),
        ),
        numbered(
            &|i| format!("[  FAILED  ] A.b{i} (0 ms)\n"),
            "[==========] 99999999 tests from 1 test suite ran. (0 ms total)\n[  PASSED  ] 0 tests.\n",
        ),
        numbered(
            &|i| format!("  {}) Failure:\nA#test_{i} [a.rb:1]:\n", i + 1),
            "99999999 runs, 1 assertions, 99999999 failures, 0 errors, 0 skips\n",
        )
        .replacen("  1)", "Finished in 0.1s\n  1)", 1),
        flood("Failure -> spec/a_spec.lua @ 1\na\n", "").replacen(
            "Failure",
            "0 successes / 9999999 failures / 0 errors / 0 pending : 0.1 seconds\nFailure",
            1,
        ),
        flood(
            "running 1 test\ntest result: FAILED. 0 passed; 1 failed;\n\n",
            "",
        ),
        flood("a.cpp:1:1: error: x\n", "make: *** [all] Error 2\n"),
        flood("x:1:in `require': y (LoadError)\n", ""),
        flood("PHP Fatal error:  Uncaught Error: x\n", ""),
    ];
    for shape in &shapes {
        let report = from_output(shape);
        assert!(report.failed.len() <= validator_reading::MAX_FINDINGS);
    }
}

#[test]
fn a_phpunit_junit_log_names_tests_by_their_php_class() {
    // PHPUnit's real log (phpunit-junit), written by the gate's command; the console names
    // nothing, so the names are the log's.
    let log = case_dir("phpunit-junit").join("junit.xml");
    let gates = [format!(
        "      - {{name: tests, rule: test, run: {}, junit: junit.xml}}\n",
        serde_json::json!([
            "sh",
            "-c",
            "cp \"$0\" junit.xml && echo 'FAILURES!' && exit 2",
            log.display().to_string()
        ])
    )];
    let (code, verdict) = project(&gates).verdict();
    assert_eq!(code, 1, "{verdict:#}");
    let test = gate(&verdict, "tests");
    let said = messages(test);
    assert_eq!(said.len(), 5, "{test:#}");
    for name in truth("phpunit-junit") {
        assert!(
            said.iter()
                .any(|m| m.starts_with(&format!("test failed: {name}"))),
            "`{name}` not named: {test:#}"
        );
    }
}

/// A `test` gate per (name, shell script), each run once in one verdict.
fn scripted(scripts: &[(&str, &str)]) -> Value {
    let gates: Vec<String> = scripts
        .iter()
        .map(|(name, script)| {
            format!(
                "      - {{name: {name}, rule: test, run: {}, on_fail: CONTINUE}}\n",
                serde_json::json!(["sh", "-c", script])
            )
        })
        .collect();
    project(&gates).verdict().1
}

#[test]
fn a_runner_nobody_tuned_to_is_named_by_marks_that_add_up_to_its_count() {
    let verdict = scripted(&[
        (
            "bracketed",
            "printf '[----] t.c:3: Assertion Failed\\n[FAIL] calc::add: (0.00s)\\n[FAIL] calc::mul: (0.01s)\\n[====] Synthesis: Tested: 3 | Passing: 1 | Failing: 2\\n'; exit 1",
        ),
        (
            "trailing",
            "printf '==== add-1 adds FAILED\\n---- Result was:\\n2\\n==== add-1 FAILED\\nall.tcl:\\tTotal\\t2\\tPassed\\t1\\tSkipped\\t0\\tFailed\\t1\\n'; exit 1",
        ),
        (
            "junit_on_the_console",
            "printf '<?xml version=\"1.0\"?>\\n<testsuites><testsuite name=\"calc\"><testcase name=\"test_add\"><failure>0x2 != 0x3</failure></testcase><testcase name=\"test_sub\"/></testsuite></testsuites>\\n'; exit 2",
        ),
        // A line a test printed, shaped like a mark: the names no longer add up, none is named.
        (
            "planted",
            "printf '[FAIL] calc::add\\n[FAIL] planted by a test\\n[====] Synthesis: Failing: 1\\n'; exit 1",
        ),
    ]);
    let names = |name: &str| -> Vec<String> {
        gate(&verdict, name)["failed_tests"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|n| n.as_str().map(str::to_owned))
            .collect()
    };
    assert_eq!(
        names("bracketed"),
        ["calc::add", "calc::mul"],
        "{verdict:#}"
    );
    assert_eq!(names("trailing"), ["add-1"], "{verdict:#}");
    assert_eq!(names("junit_on_the_console"), ["test_add"], "{verdict:#}");
    assert!(names("planted").is_empty(), "{verdict:#}");
    assert!(
        summary(gate(&verdict, "planted")).contains("names no failed test"),
        "{verdict:#}"
    );
}

#[test]
fn a_run_that_names_no_test_is_told_its_runners_machine_report() {
    let verdict = scripted(&[
        ("pytest", "exit 1; pytest -q"),
        ("vitest", "exit 1; npx vitest run"),
        ("node", "exit 1; node --test"),
        ("unknown", "exit 1; ./run-my-tests"),
    ]);
    let said = |name: &str| summary(gate(&verdict, name)).to_owned();
    assert!(
        said("pytest").contains("`--junitxml=report.xml`"),
        "{verdict:#}"
    );
    assert!(said("vitest").contains("`--reporter=junit"), "{verdict:#}");
    assert!(
        said("node").contains("`--test-reporter=tap`"),
        "{verdict:#}"
    );
    let unknown = said("unknown");
    assert!(
        unknown.starts_with("`sh` exited with 1; its output names no failed test")
            && unknown.contains("`junit:`"),
        "{verdict:#}"
    );
}
