//! A `test` gate's `junit:` report never loses a failure and never lets a run pass that it
//! cannot vouch for: names that differ only in entity references are two tests, a case whose
//! name reads as nothing is still counted, a report that breaks off keeps what came before, a
//! document type is passed over without expanding its entities, and a run that exits 0 fails
//! when its report names failures or cannot be read.

use serde_json::Value;

use crate::common::{self, Project, gate};

/// A test gate whose command writes `report` (when given) as report.xml, prints nothing a
/// runner reader would take, and exits `code`.
fn project(report: Option<&str>, code: i32) -> Project {
    let project = Project::new();
    let copy = match report {
        Some(report) => {
            project.root_file("report.src.xml", report);
            format!("cp \"$0\" report.xml; exit {code}")
        }
        None => format!("exit {code}"),
    };
    let source = project.path().join("report.src.xml");
    project.rules(&common::pipeline(&format!(
        "      - name: tests\n        rule: test\n        run: {}\n        junit: report.xml\n",
        serde_json::json!(["sh", "-c", copy, source.display().to_string()])
    )));
    project
}

fn judged(report: Option<&str>, code: i32) -> (i32, Value) {
    let (exit, verdict) = project(report, code).verdict();
    let tests = gate(&verdict, "tests").clone();
    (exit, tests)
}

fn failed_tests(gate: &Value) -> Vec<String> {
    gate["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["message"].as_str().map(str::to_owned))
        .collect()
}

/// pytest --junitxml, with parameters that only entity references tell apart.
const PYTEST: &str = r#"<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" failures="3" skipped="0" tests="3"><testcase classname="tests.test_ops" name="test_cmp[&lt;]" time="0.001"><failure message="assert False">x</failure></testcase><testcase classname="tests.test_ops" name="test_cmp[&gt;]" time="0.001"><failure message="assert False">y</failure></testcase><testcase classname="tests.test_ops" name="test_cmp[&#38;]" time="0.001"><failure message="assert False">z</failure></testcase></testsuite></testsuites>"#;

#[test]
fn names_that_differ_only_in_entity_references_are_each_a_failed_test() {
    let (code, tests) = judged(Some(PYTEST), 1);
    assert_eq!(code, 1, "{tests:#}");
    let failed = failed_tests(&tests);
    assert_eq!(failed.len(), 3, "{tests:#}");
    for name in ["test_cmp[<]", "test_cmp[>]", "test_cmp[&]"] {
        assert!(
            failed
                .iter()
                .any(|m| m.contains(&format!("tests/test_ops.py::{name}"))),
            "{name}: {tests:#}"
        );
    }
    assert!(
        tests["summary"]
            .as_str()
            .unwrap_or_default()
            .starts_with("3 tests failed"),
        "{tests:#}"
    );
}

#[test]
fn a_failed_case_whose_name_is_emptied_is_still_counted() {
    // jest-junit and go-junit-report shapes, the names made blank by character references.
    let report = r#"<testsuites name="jest tests"><testsuite name="math"><testcase classname="" name="&#32;"><failure message="boom"/></testcase></testsuite><testsuite name="pkg"><testcase classname="pkg" name="TestOk"><failure message="bad"/></testcase></testsuite></testsuites>"#;
    let (code, tests) = judged(Some(report), 1);
    assert_eq!(code, 1, "{tests:#}");
    let failed = failed_tests(&tests);
    assert_eq!(failed.len(), 2, "{tests:#}");
    assert!(
        failed.iter().any(|m| m.contains("unnamed test case 1")),
        "{tests:#}"
    );
    // A stand-in is never handed to a runner as a test to run again.
    let again = tests["failed_tests"].to_string();
    assert!(!again.contains("unnamed"), "{tests:#}");
}

#[test]
fn a_dtd_is_passed_over_and_its_entities_never_expanded() {
    // Surefire's shape under a document type whose entities would grow without bound.
    let report = r#"<?xml version="1.0"?><!DOCTYPE testsuite [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><testsuite name="com.x.CalcTest"><testcase classname="com.x.CalcTest" name="adds&c;"><failure message="&c;"/></testcase><testcase classname="com.x.CalcTest" name="adds&b;"><failure/></testcase></testsuite>"#;
    for exit in [1, 0] {
        let (code, tests) = judged(Some(report), exit);
        assert_eq!(code, 1, "exit {exit}: {tests:#}");
        let failed = failed_tests(&tests);
        assert_eq!(failed.len(), 2, "exit {exit}: {tests:#}");
        assert!(
            failed.iter().any(|m| m.contains("com.x.CalcTest.adds&c;")),
            "{tests:#}"
        );
        let summary = tests["summary"].as_str().unwrap_or_default();
        assert!(summary.contains("DOCTYPE"), "{tests:#}");
        assert!(
            !tests.to_string().contains("aaaaaaaaaaaaaaaaaaaa"),
            "{tests:#}"
        );
    }
}

#[test]
fn a_report_that_breaks_off_keeps_the_failures_before_it() {
    let report = r#"<testsuite name="pkg"><testcase classname="pkg" name="TestA"><failure message="a"/></testcase><testcase classname="pkg" name="TestB"></failure>"#;
    let (code, tests) = judged(Some(report), 1);
    assert_eq!(code, 1, "{tests:#}");
    assert!(
        failed_tests(&tests)
            .iter()
            .any(|m| m.contains("pkg::TestA")),
        "{tests:#}"
    );
    assert!(
        tests["summary"]
            .as_str()
            .unwrap_or_default()
            .contains("not valid XML"),
        "{tests:#}"
    );
}

#[test]
fn a_run_that_exits_zero_passes_only_on_a_report_it_can_read_that_names_no_failure() {
    let clean = r#"<testsuite name="s"><testcase classname="s" name="ok"/></testsuite>"#;
    let (code, tests) = judged(Some(clean), 0);
    assert_eq!(
        (code, tests["outcome"].as_str()),
        (0, Some("pass")),
        "{tests:#}"
    );

    let (code, tests) = judged(Some(PYTEST), 0);
    assert_eq!(code, 1, "{tests:#}");
    assert!(
        tests["summary"]
            .as_str()
            .unwrap_or_default()
            .contains("exited with 0, but its JUnit report names 3 tests failed"),
        "{tests:#}"
    );

    for (report, why) in [
        (
            Some("<testsuite name=\"s\"><testcase name=\"x\">"),
            "cannot be read",
        ),
        (None, "cannot be read"),
    ] {
        let (code, tests) = judged(report, 0);
        assert_eq!(code, 1, "{tests:#}");
        let summary = tests["summary"].as_str().unwrap_or_default();
        assert!(
            summary.contains(why) && summary.contains("report.xml"),
            "{tests:#}"
        );
    }
}
