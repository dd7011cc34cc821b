//! A `test` run that exits 0 does not pass on a JUnit report that says something failed in a
//! way the case-by-case reading misses: a `<failure>` or `<error>` outside any `<testcase>`
//! (a suite's setup), one after a nested case closed, or a suite whose `failures`/`errors`
//! counts are more than the failures it names.

use crate::common::{self, Project, gate};

fn judged_exiting_zero(report: &str) -> (i32, serde_json::Value) {
    let project = Project::new();
    project.root_file("report.src.xml", report);
    let source = project.path().join("report.src.xml");
    project.rules(&common::pipeline(&format!(
        "      - name: tests\n        rule: test\n        run: {}\n        junit: report.xml\n",
        serde_json::json!([
            "sh",
            "-c",
            "cp \"$0\" report.xml; exit 0",
            source.display().to_string()
        ])
    )));
    let (code, verdict) = project.verdict();
    (code, gate(&verdict, "tests").clone())
}

#[test]
fn a_failure_outside_any_test_case_fails_the_run() {
    let report = r#"<testsuite name="s" tests="1"><testcase classname="s" name="ok"/><error message="suite setup failed">boom</error></testsuite>"#;
    let (code, tests) = judged_exiting_zero(report);
    assert_eq!(
        (code, tests["outcome"].as_str()),
        (1, Some("fail")),
        "{tests:#}"
    );
}

#[test]
fn a_failure_after_a_nested_case_closed_is_its_outer_cases() {
    let report = r#"<testsuite name="s"><testcase classname="s" name="outer"><testcase classname="s" name="inner"></testcase><failure message="outer failed"/></testcase></testsuite>"#;
    let (code, tests) = judged_exiting_zero(report);
    assert_eq!(
        (code, tests["outcome"].as_str()),
        (1, Some("fail")),
        "{tests:#}"
    );
    assert!(tests.to_string().contains("outer"), "{tests:#}");
}

#[test]
fn a_suite_counting_more_failures_than_it_names_fails_the_run() {
    let report = r#"<testsuites tests="2" failures="2" errors="0"><testsuite name="s" tests="2" failures="2"><testcase classname="s" name="a"/><testcase classname="s" name="b"/></testsuite></testsuites>"#;
    let (code, tests) = judged_exiting_zero(report);
    assert_eq!(
        (code, tests["outcome"].as_str()),
        (1, Some("fail")),
        "{tests:#}"
    );
    let huge = r#"<testsuite name="s" tests="1" failures="99999999999999999999999"><testcase classname="s" name="a"/></testsuite>"#;
    let (code, tests) = judged_exiting_zero(huge);
    assert_eq!(
        (code, tests["outcome"].as_str()),
        (1, Some("fail")),
        "{tests:#}"
    );
    let errors = r#"<testsuite name="s" tests="1" errors="1"><testcase classname="s" name="a"/></testsuite>"#;
    let (code, tests) = judged_exiting_zero(errors);
    assert_eq!(
        (code, tests["outcome"].as_str()),
        (1, Some("fail")),
        "{tests:#}"
    );
}

#[test]
fn a_report_whose_counts_match_its_cases_still_passes() {
    let report = r#"<testsuites tests="2" failures="0" errors="0"><testsuite name="s" tests="2" failures="0" errors="0" skipped="1"><testcase classname="s" name="a"/><testcase classname="s" name="b"><skipped/></testcase></testsuite></testsuites>"#;
    let (code, tests) = judged_exiting_zero(report);
    assert_eq!(
        (code, tests["outcome"].as_str()),
        (0, Some("pass")),
        "{tests:#}"
    );
}
