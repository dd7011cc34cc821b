//! The TAP family (node-tap, tape, AVA's `--tap`, bats, Test::More, prove) and the other
//! JavaScript runners (AVA, jasmine, uvu; node --test, jest, vitest and mocha on nested,
//! non-ASCII and `#` names), their real output (`tests/corpus/tests`, recaptured by
//! `capture-js.sh`) replayed by a `test` gate through the binary: the failed tests are named
//! as the runner names them and no line a test printed becomes one; a run that could not
//! start says why.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{gate, project};

/// The corpus cases of these runners (the directories `capture-js.sh` writes).
const CASES: &[&str] = &[
    "node-test-names-tap",
    "node-test-names-spec",
    "jest-names",
    "jest-names-verbose",
    "vitest-names",
    "mocha-names",
    "tap-default",
    "tap-tap",
    "tap-passed",
    "tap-missing-module",
    "ava-default",
    "ava-tap",
    "ava-passed",
    "ava-missing-module",
    "ava-tap-missing-module",
    "jasmine-default",
    "jasmine-passed",
    "jasmine-missing-module",
    "uvu-default",
    "uvu-passed",
    "uvu-missing-module",
    "tape-default",
    "tape-passed",
    "tape-missing-module",
    "bats-default",
    "bats-tap",
    "bats-tap13",
    "bats-passed",
    "bats-missing-helper",
    "bats-syntax-error",
    "prove-default",
    "prove-v",
    "prove-passed",
    "prove-missing-module",
    "testmore-tap",
];

fn case_dir(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus/tests")
        .join(case)
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A `test` gate per case that prints the case's output and exits as the runner did.
fn replay(cases: &[&str]) -> Value {
    let gates: Vec<String> = cases
        .iter()
        .enumerate()
        .map(|(i, case)| {
            let code = read_json(&case_dir(case).join("meta.json"))["exit_code"]
                .as_i64()
                .expect("exit_code");
            let output = case_dir(case).join("output.txt");
            format!(
                "      - {{name: t{i}, rule: test, run: {}, on_fail: CONTINUE}}\n",
                serde_json::json!([
                    "sh",
                    "-c",
                    format!("cat \"$0\"; exit {code}"),
                    output.display().to_string()
                ])
            )
        })
        .collect();
    let (_, verdict) = project(&gates).verdict();
    verdict
}

#[test]
fn each_runner_s_failed_tests_are_named_as_it_names_them_and_no_printed_line_is_one() {
    let verdict = replay(CASES);
    let mut problems = Vec::new();
    for (i, case) in CASES.iter().enumerate() {
        let truth = read_json(&case_dir(case).join("truth.json"));
        if truth["outcome"] != "failed" {
            continue;
        }
        let expected: Vec<&str> = truth["failed"]
            .as_array()
            .expect("failed")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let found = gate(&verdict, &format!("t{i}"));
        let messages: Vec<&str> = found["findings"]
            .as_array()
            .map(|f| f.iter().filter_map(|f| f["message"].as_str()).collect())
            .unwrap_or_default();
        let named = |name: &str| {
            let said = format!("test failed: {name}");
            move |m: &&str| *m == said || m.starts_with(&format!("{said}: "))
        };
        for name in &expected {
            if !messages.iter().any(named(name)) {
                problems.push(format!("{case}: `{name}` not named in {messages:?}"));
            }
        }
        for message in &messages {
            if !expected.iter().any(|name| named(name)(message)) {
                problems.push(format!("{case}: `{message}` is not a failed test"));
            }
        }
        let summary = found["summary"].as_str().unwrap_or_default();
        if summary.contains("could not run") {
            problems.push(format!("{case}: tests failed, but `{summary}`"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_run_that_could_not_start_says_why_in_the_runner_s_words() {
    let verdict = replay(CASES);
    let mut problems = Vec::new();
    for (i, case) in CASES.iter().enumerate() {
        let truth = read_json(&case_dir(case).join("truth.json"));
        if truth["outcome"] != "could_not_run" {
            continue;
        }
        let cause = truth["cause"].as_str().expect("cause");
        // The truth's cause up to its first note in parentheses, in the runner's words.
        let said = cause.split(" (").next().unwrap_or(cause);
        let found = gate(&verdict, &format!("t{i}"));
        let summary = found["summary"].as_str().unwrap_or_default();
        if !summary.starts_with("the tests could not run: ") || !summary.contains(said) {
            problems.push(format!("{case}: `{summary}` does not say `{said}`"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_run_whose_only_failures_a_test_printed_names_none() {
    // bats counts the `not ok 7 - fake` a passing test wrote to fd 3 and exits 1: the run
    // failed, no test did, and nothing could not run.
    let verdict = replay(&["bats-passed"]);
    let found = gate(&verdict, "t0");
    assert_eq!(found["outcome"], "fail", "{found:#}");
    assert_eq!(
        found["findings"].as_array().map_or(0, Vec::len),
        0,
        "{found:#}"
    );
    let summary = found["summary"].as_str().unwrap_or_default();
    assert!(summary.contains("exited with 1"), "{summary}");
}

#[test]
fn floods_of_tap_and_of_runner_summaries_cost_one_pass() {
    // Shapes that would make a TAP or runner reader look back or compare every line with
    // every other: points all numbered alike, subtests opened and closed over and over, an
    // unclosed YAML block, prove diagnostics nested and never claimed, uvu progress lines,
    // AVA rules, jasmine entries, and long titles nested deep over many failures (each name is
    // cut, not a copy of the whole path). Each is read in one pass (seconds, not minutes).
    let shapes = [
        r##"echo "TAP version 13"; seq 1 60000 | sed "s|.*|not ok 1 - same|"; echo "1..60000""##,
        r##"echo "TAP version 14"; for i in $(seq 1 3000); do echo "# Subtest: s$i"; echo "    not ok 1 - x"; echo "    1..1"; echo "not ok $i - s$i"; done; echo "1..3000""##,
        r##"echo "TAP version 13"; echo "not ok 1 - a"; echo "  ---"; seq 1 60000 | sed "s|.*|    not ok & - fake|"; echo "1..1""##,
        r##"seq 1 30000 | sed "s|.*|        #   Failed test 'x&'\n        #   at t/a.t line &.|"; printf "Test Summary Report\n-------------------\nt/a.t (Wstat: 256 Tests: 9 Failed: 1)\n  Failed tests:  1\nResult: FAIL\n""##,
        r##"seq 1 40000 | sed "s|.*| s  ✘   (0 / 1)\n  FAIL  s  \"t&\"|"; printf "  Total:     40000\n  Passed:    0\n""##,
        r##"seq 1 40000 | sed "s|.*|  ─\n\n  heading &\n|"; echo "  ─"; echo "  40000 tests failed""##,
        r##"echo "Failures:"; seq 1 40000 | sed "s|.*|&) spec &\n  Message:\n    x|"; echo "40000 specs, 40000 failures""##,
        r##"N=$(printf 'n%.0s' $(seq 1 4000)); echo "TAP version 14"; ind=""; for d in $(seq 1 60); do echo "$ind# Subtest: $N"; ind="$ind    "; done; for i in $(seq 1 1500); do echo "${ind}not ok $i - x$i"; done; echo "${ind}1..1500"; for d in $(seq 1 60); do ind="${ind#    }"; echo "${ind}not ok 1 - $N"; echo "${ind}1..1"; done"##,
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
    let (code, verdict) = project(&gates).verdict();
    assert_eq!(code, 0, "every gate routes on: {verdict:#}");
    for i in 0..shapes.len() {
        let found = gate(&verdict, &format!("t{i}"));
        assert_eq!(found["outcome"], "fail", "{found:#}");
        assert!(
            found["findings"].as_array().map_or(0, Vec::len) <= 200,
            "{found:#}"
        );
    }
}
