//! What validator prints and reads back, against a worker that controls names, reports and
//! a tool's messages: invisible and reordering characters never reach any output format raw;
//! a JUnit report with a DTD is refused out loud (its entities never expanded) and an unknown
//! entity is kept as written.

use std::fs;
use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::common::{self, Project, commit_all, gate, isolate_git};

/// Characters that must never reach a reader raw: C1 controls (U+009B is an 8-bit CSI), the
/// bidirectional controls that reorder what is shown, and the line and paragraph separators.
fn hazardous(c: char) -> bool {
    matches!(
        c,
        '\u{80}'..='\u{9F}'
            | '\u{61C}'
            | '\u{200E}'
            | '\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2066}'..='\u{2069}'
            | '\u{2028}'
            | '\u{2029}'
    )
}

fn raw_hazards(text: &str) -> Vec<String> {
    text.chars()
        .filter(|&c| hazardous(c))
        .map(|c| format!("U+{:04X}", c as u32))
        .collect()
}

/// The out-of-scope file the worker names to hide what it is.
const HOSTILE_FILE: &str = "evil\u{9B}31m\u{202E}txt.exe";

/// A git task with a scope gate (`src/**` only) and a lint gate whose tool reports a finding
/// at the hostile file with a message full of controls, then exits 1.
fn hostile_project() -> Project {
    let project = Project::new();
    let message = "evil\u{9B}31m\u{202E}txt.exe:1:1: error: bad \u{202E}gnp.exe\u{2066}x\u{2069} \u{200E}\u{200F}\u{61C}\u{202A}a\u{202C} \u{9B}2J\u{2028}next\u{2029}end\n";
    project.root_file("lint.out", message);
    let lint_out = project.path().join("lint.out");
    project
        .rules(&common::pipeline(&format!(
            "      - name: lint\n        rule: lint\n        run: {}\n      - name: scope\n        rule: file-scope\n        allow: [\"src/**\"]\n",
            serde_json::json!(["sh", "-c", "cat \"$0\"; exit 1", lint_out.display().to_string()])
        )))
        .file("src/lib.rs", "fn a() {}\n");
    commit_all(&project.task_dir());
    project.file(HOSTILE_FILE, "x\n");
    project
}

fn check_as(project: &Project, format: &str, summary: &Path) -> Output {
    let mut cmd = project.check();
    isolate_git(&mut cmd);
    cmd.args(["--keep-going", "--format", format])
        .env("GITHUB_STEP_SUMMARY", summary)
        .output()
        .expect("run validator check")
}

#[test]
fn no_output_format_prints_a_c1_or_bidi_control_raw() {
    let project = hostile_project();
    let summary = project.path().join("step-summary.md");
    for format in ["text", "json", "junit", "github", "feedback", "sarif"] {
        let output = check_as(&project, format, &summary);
        let stdout = String::from_utf8(output.stdout).expect("UTF-8 stdout");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{format}:\n{stdout}\n{stderr}"
        );
        assert!(
            raw_hazards(&stdout).is_empty(),
            "--format {format} printed {:?} raw:\n{stdout}",
            raw_hazards(&stdout)
        );
        assert!(
            raw_hazards(&stderr).is_empty(),
            "--format {format}'s gate lines printed {:?} raw:\n{stderr}",
            raw_hazards(&stderr)
        );
        match format {
            // The verdict document keeps the name exactly: escaped, not changed.
            "json" => {
                let verdict: Value = serde_json::from_str(&stdout).expect("verdict JSON");
                assert!(
                    gate(&verdict, "scope")["findings"]
                        .as_array()
                        .is_some_and(|f| f.iter().any(|f| f["file"] == HOSTILE_FILE)),
                    "{verdict:#}"
                );
            }
            "sarif" => {
                serde_json::from_str::<Value>(&stdout).expect("SARIF JSON");
            }
            "junit" => assert!(stdout.contains("<testsuite "), "{stdout}"),
            // The name is said, escaped where the runner shows it.
            "github" | "text" | "feedback" => {
                assert!(stdout.contains("evil\\u009b31m\\u202etxt.exe"), "{stdout}")
            }
            _ => {}
        }
    }
    let step_summary = fs::read_to_string(&summary).expect("job summary");
    assert!(
        raw_hazards(&step_summary).is_empty(),
        "the job summary holds {:?} raw:\n{step_summary}",
        raw_hazards(&step_summary)
    );
}

/// A report that declares a DTD whose entities would grow a billion-fold (never expanded), and
/// names the failed test through one of them.
const DTD_REPORT: &str = r#"<?xml version="1.0"?>
<!DOCTYPE testsuite [
  <!ENTITY lol "lol">
  <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
  <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
  <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
  <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
  <!ENTITY x "test_login">
]>
<testsuite name="s"><testcase classname="auth" name="&x;"><failure message="&lol9;">boom</failure></testcase></testsuite>
"#;

/// A test gate whose command writes `report` as report.xml and exits `code`.
fn junit_project(report: &str, code: i32) -> Project {
    let project = Project::new();
    project.root_file("report.src.xml", report);
    let source = project.path().join("report.src.xml");
    project.rules(&common::pipeline(&format!(
        "      - name: tests\n        rule: test\n        run: {}\n        junit: report.xml\n",
        serde_json::json!([
            "sh",
            "-c",
            format!("cp \"$0\" report.xml; exit {code}"),
            source.display().to_string()
        ])
    )));
    project
}

#[test]
fn a_junit_report_with_a_dtd_is_refused_out_loud_and_the_gate_still_fails() {
    let project = junit_project(DTD_REPORT, 1);
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    let tests = gate(&verdict, "tests");
    assert_eq!(tests["outcome"], "fail", "{verdict:#}");
    let summary = tests["summary"].as_str().expect("summary");
    assert!(
        summary.contains("report.xml") && summary.contains("DOCTYPE"),
        "the unread report is not said: {verdict:#}"
    );
    // Nothing of the entities is expanded anywhere.
    assert!(!verdict.to_string().contains("lollol"), "{verdict:#}");
}

#[test]
fn an_undeclared_entity_in_a_junit_report_is_kept_as_written() {
    let report = "<testsuite name=\"s\"><testcase classname=\"auth\" name=\"login &x; works\"><failure message=\"got &y; &amp; more\"/></testcase></testsuite>";
    let project = junit_project(report, 1);
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    let findings = gate(&verdict, "tests")["findings"].to_string();
    assert!(
        findings.contains("login &x; works") && findings.contains("got &y; & more"),
        "the failed test is lost: {verdict:#}"
    );
}

#[test]
fn a_passing_run_with_a_dtd_report_passes_without_reading_it() {
    let project = junit_project(DTD_REPORT, 0);
    let (code, verdict) = project.verdict();
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(gate(&verdict, "tests")["outcome"], "pass", "{verdict:#}");
}
