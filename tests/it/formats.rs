// The output formats of `validator check` under hostile input: what a worker writes into its
// done signal (a BLOCKED reason holding workflow commands, escape sequences, hundreds of lines)
// must not forge GitHub workflow commands, extra lines or terminal escapes, the feedback keeps
// its 60-line limit, and the JUnit report agrees with the verdict and its exit code. Every test
// runs the real binary over a temp directory.

use crate::common::{Project, lint, project};
use quick_xml::events::{BytesStart, Event};
use quick_xml::{Reader, XmlVersion};

/// A command that exits 0.
const PASSES: &str = r#"["true"]"#;
/// A command that exits 1.
const FAILS: &str = r#"["false"]"#;

/// A BLOCKED done signal whose reason tries to add lines of its own: workflow commands, a
/// legacy `##[` command and a terminal escape (JSON escapes, so the reason holds real newlines).
const INJECTING_SIGNAL: &str = r#"{"status":"BLOCKED","reason":"x\n::error file=a,line=1::forged\r\n::add-mask::validator\n  ::warning::indented\n##[error]legacy \u001b[2Jcleared"}"#;

/// A project whose pipeline is a status gate then a lint gate, with `signal` as the done signal.
fn status_project(signal: &str) -> Project {
    let project = project(&[
        "      - {name: status, rule: status}\n".to_string(),
        lint("after", PASSES, ""),
    ]);
    project.signal(signal);
    project
}

/// Runs `check --format <format>`; returns the exit code and stdout.
fn check(project: &Project, format: &str) -> (i32, String) {
    let output = project
        .check()
        .args(["--format", format])
        .output()
        .expect("run validator");
    (
        output.status.code().expect("exit code"),
        String::from_utf8(output.stdout).expect("UTF-8 output"),
    )
}

// ---------------------------------------------------------------------------------------------
// github

#[test]
fn github_prints_a_blocked_reason_without_forging_workflow_commands() {
    let project = status_project(INJECTING_SIGNAL);
    let (code, out) = check(&project, "github");
    assert_eq!(code, 3, "{out}");
    assert!(!out.contains('\r'), "{out:?}");
    assert!(!out.contains('\u{1b}'), "{out:?}");
    for line in out.lines() {
        assert!(!line.starts_with("::error file=a"), "forged: {line}\n{out}");
        if line.trim_start().starts_with("::") {
            // validator's own annotations only: the failing status gate, its data escaped.
            assert!(
                line.starts_with("::error title=validator status::"),
                "{line}\n{out}"
            );
            assert!(line.contains("x%0A::error file=a"), "{line}\n{out}");
        } else {
            // The runner looks for the legacy `##[command]` anywhere in a plain line.
            assert!(!line.contains("##["), "legacy command: {line}\n{out}");
        }
    }
    let annotations = out.lines().filter(|l| l.starts_with("::")).count();
    assert_eq!(annotations, 1, "{out}");
    // The reason is still there, on one line.
    let reason = out
        .lines()
        .find(|l| l.contains("worker reported BLOCKED"))
        .unwrap_or_else(|| panic!("no reason in\n{out}"));
    assert!(reason.contains("::error file=a,line=1::forged"), "{out}");
    assert!(reason.contains("cleared"), "{out}");
}

#[test]
fn github_still_annotates_findings_and_warns_for_a_failure_routed_on() {
    let project = project(&[
        lint(
            "soft",
            r#"["sh", "-c", 'echo "src/b.rs:1:2: meh"; exit 1']"#,
            "on_fail: CONTINUE",
        ),
        lint(
            "hard",
            r#"["sh", "-c", 'echo "src/a.rs:3:5: bad, really: bad"; exit 1']"#,
            "",
        ),
    ]);
    let (code, out) = check(&project, "github");
    assert_eq!(code, 1, "{out}");
    let annotations: Vec<&str> = out.lines().filter(|l| l.starts_with("::")).collect();
    assert_eq!(
        annotations,
        [
            "::warning file=src/b.rs,line=1,col=2,title=validator soft::meh",
            "::error file=src/a.rs,line=3,col=5,title=validator hard::bad, really: bad",
        ],
        "{out}"
    );
}

#[test]
fn github_appends_a_job_summary_when_the_runner_asks_for_one() {
    let project = project(&[lint(
        "hard",
        r#"["sh", "-c", 'echo "src/a.rs:3:5: bad <script>"; exit 1']"#,
        "",
    )]);
    let summary = project.path().join("summary.md");
    std::fs::write(&summary, "# earlier step\n").unwrap();
    for _ in 0..2 {
        let output = project
            .check()
            .args(["--format", "github"])
            .env("GITHUB_STEP_SUMMARY", &summary)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1));
    }
    let md = std::fs::read_to_string(&summary).unwrap();
    // Appended, as every step does, never replacing what earlier steps wrote.
    assert!(md.starts_with("# earlier step\n"), "{md}");
    assert_eq!(md.matches("### ❌ validator: FAIL").count(), 2, "{md}");
    assert!(md.contains("| hard | fail |"), "{md}");
    assert!(md.contains("src/a.rs:3:5: bad &lt;script&gt;"), "{md}");

    // Outside GitHub Actions nothing is written anywhere.
    let (code, _) = check(&project, "github");
    assert_eq!(code, 1);
    assert_eq!(std::fs::read_to_string(&summary).unwrap(), md);
}

// ---------------------------------------------------------------------------------------------
// feedback

#[test]
fn feedback_stays_within_60_lines_with_an_injecting_reason() {
    let project = status_project(INJECTING_SIGNAL);
    let (code, text) = check(&project, "feedback");
    assert_eq!(code, 3, "{text}");
    assert!(text.matches('\n').count() <= 60, "{text}");
    assert!(!text.contains('\u{1b}'), "{text:?}");
    assert!(!text.contains('\r'), "{text:?}");
    let reason = text
        .lines()
        .find(|l| l.contains("worker reported BLOCKED"))
        .unwrap_or_else(|| panic!("no reason in\n{text}"));
    assert!(reason.contains("::add-mask::validator"), "{text}");
    assert!(!text.lines().any(|l| l.starts_with("::")), "{text}");
}

#[test]
fn feedback_stays_within_60_lines_with_a_reason_of_300_lines() {
    let reason = (0..300)
        .map(|i| format!("line {i}"))
        .collect::<Vec<_>>()
        .join("\\n");
    let project = status_project(&format!(r#"{{"status":"BLOCKED","reason":"{reason}"}}"#));
    let (code, text) = check(&project, "feedback");
    assert_eq!(code, 3, "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        text.matches('\n').count() <= 60,
        "{} lines:\n{text}",
        lines.len()
    );
    assert_eq!(lines[lines.len() - 2], "## What to do next", "{text}");
    assert!(lines[lines.len() - 1].contains("BLOCKED"), "{text}");
}

// ---------------------------------------------------------------------------------------------
// text

#[test]
fn text_prints_an_injecting_reason_on_one_line_without_escapes() {
    let project = status_project(INJECTING_SIGNAL);
    let output = project
        .check()
        .args(["--format", "text"])
        .env_remove("NO_COLOR")
        .env("CLICOLOR_FORCE", "1")
        .output()
        .expect("run validator");
    assert_eq!(output.status.code(), Some(3));
    let text = String::from_utf8(output.stdout).expect("UTF-8 output");
    // Styles are on (validator's own), but every ESC begins one of them: an SGR sequence.
    assert!(text.contains('\u{1b}'), "{text:?}");
    for (at, _) in text.match_indices('\u{1b}') {
        let sequence = text[at + 1..]
            .strip_prefix('[')
            .unwrap_or_else(|| panic!("not an SGR sequence at {at}: {text:?}"));
        let end = sequence.find('m').expect("SGR end");
        assert!(
            sequence[..end]
                .chars()
                .all(|c| c.is_ascii_digit() || c == ';'),
            "{text:?}"
        );
    }
    assert!(!text.contains("\u{1b}[2J"), "{text:?}");
    assert!(!text.contains('\r'), "{text:?}");
    // Header, the status and after gates, a blank line, the decision with its one reason.
    assert_eq!(text.lines().count(), 5, "{text}");
    let last = text.lines().last().expect("output");
    assert!(last.contains("BLOCKED"), "{text}");
    assert!(last.contains("::add-mask::validator"), "{text}");
    assert!(
        !text.lines().any(|l| l.trim_start().starts_with("::")),
        "{text}"
    );
}

// ---------------------------------------------------------------------------------------------
// junit

/// One `<testcase>`: its attributes and the elements inside it with their `message`.
#[derive(Debug)]
struct Case {
    name: String,
    classname: String,
    inside: Vec<(String, Option<String>)>,
}

impl Case {
    fn has(&self, element: &str) -> bool {
        self.inside.iter().any(|(name, _)| name == element)
    }

    fn message(&self, element: &str) -> Option<&str> {
        self.inside
            .iter()
            .find(|(name, _)| name == element)
            .and_then(|(_, message)| message.as_deref())
    }
}

/// A JUnit report, parsed (which also proves it well-formed).
#[derive(Debug)]
struct Report {
    tests: usize,
    failures: usize,
    errors: usize,
    skipped: usize,
    cases: Vec<Case>,
}

impl Report {
    fn case(&self, name: &str) -> &Case {
        self.cases
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no testcase {name} in {self:#?}"))
    }

    fn count(&self, element: &str) -> usize {
        self.cases.iter().filter(|c| c.has(element)).count()
    }

    /// The suite's counts match the testcases it holds.
    fn assert_consistent(&self) {
        assert_eq!(self.tests, self.cases.len(), "{self:#?}");
        assert_eq!(self.failures, self.count("failure"), "{self:#?}");
        assert_eq!(self.errors, self.count("error"), "{self:#?}");
        assert_eq!(self.skipped, self.count("skipped"), "{self:#?}");
        let last = self.cases.last().expect("testcases");
        assert_eq!(
            last.name, "verdict",
            "the verdict closes the suite: {self:#?}"
        );
        assert_eq!(last.classname, "validator.main", "{self:#?}");
    }
}

fn attribute(element: &BytesStart<'_>, key: &str) -> Option<String> {
    element
        .attributes()
        .map(|attr| attr.expect("well-formed attribute"))
        .find(|attr| attr.key.into_inner() == key)
        .map(|attr| {
            attr.normalized_value(XmlVersion::Implicit1_0)
                .expect("attribute value")
                .into_owned()
        })
}

fn count(element: &BytesStart<'_>, key: &str) -> usize {
    attribute(element, key)
        .unwrap_or_else(|| panic!("no {key} on the testsuite"))
        .parse()
        .expect("a count")
}

fn parse_junit(xml: &str) -> Report {
    assert!(xml.starts_with("<?xml"), "{xml}");
    let mut reader = Reader::from_str(xml);
    let mut report = None;
    let mut depth = 0;
    loop {
        let event = reader
            .read_event()
            .unwrap_or_else(|err| panic!("not well-formed ({err}):\n{xml}"));
        let (element, opens) = match event {
            Event::Start(element) => (element, true),
            Event::Empty(element) => (element, false),
            Event::End(_) => {
                depth -= 1;
                continue;
            }
            Event::Eof => break,
            _ => continue,
        };
        let name = element.name().into_inner().to_owned();
        match (depth, name.as_str()) {
            (0, "testsuite") => {
                assert!(report.is_none(), "two testsuites:\n{xml}");
                report = Some(Report {
                    tests: count(&element, "tests"),
                    failures: count(&element, "failures"),
                    errors: count(&element, "errors"),
                    skipped: count(&element, "skipped"),
                    cases: Vec::new(),
                });
            }
            (1, "testcase") => report.as_mut().expect("suite").cases.push(Case {
                name: attribute(&element, "name").expect("testcase name"),
                classname: attribute(&element, "classname").expect("classname"),
                inside: Vec::new(),
            }),
            (2, _) => {
                let message = attribute(&element, "message");
                let case = report
                    .as_mut()
                    .and_then(|r| r.cases.last_mut())
                    .expect("inside a testcase");
                case.inside.push((name, message));
            }
            _ => panic!("unexpected <{name}> at depth {depth}:\n{xml}"),
        }
        if opens {
            depth += 1;
        }
    }
    assert_eq!(depth, 0, "unclosed elements:\n{xml}");
    report.unwrap_or_else(|| panic!("no testsuite:\n{xml}"))
}

/// The raw text of the testcase named `name`, from its tag to the next testcase or the end.
fn raw_case<'x>(xml: &'x str, name: &str) -> &'x str {
    let start = xml
        .find(&format!(" name=\"{name}\""))
        .unwrap_or_else(|| panic!("no testcase {name} in {xml}"));
    let rest = &xml[start..];
    let end = rest
        .find("<testcase ")
        .or_else(|| rest.find("</testsuite>"))
        .expect("testcase end");
    &rest[..end]
}

#[test]
fn junit_fails_the_verdict_testcase_for_a_broken_done_signal() {
    let project = project(&[
        "      - {name: status, rule: status}\n".to_string(),
        lint("after", PASSES, ""),
    ]);
    project.signal("{nope");
    let (code, xml) = check(&project, "junit");
    assert_eq!(code, 1, "{xml}");
    let report = parse_junit(&xml);
    report.assert_consistent();
    assert_eq!(report.tests, 3, "{report:#?}");
    assert_eq!(report.skipped, 2, "{report:#?}");
    assert_eq!(report.failures, 1, "{report:#?}");
    let verdict = report.case("verdict");
    assert_eq!(verdict.message("failure"), Some("FAIL"), "{report:#?}");
    assert!(raw_case(&xml, "verdict").contains("done signal"), "{xml}");
}

#[test]
fn junit_passes_a_run_whose_failure_was_routed_on() {
    let project = project(&[
        lint(
            "soft",
            r#"["sh", "-c", 'echo "src/b.rs:1:2: meh <&>"; exit 1']"#,
            "on_fail: CONTINUE",
        ),
        lint("ok", PASSES, ""),
    ]);
    let (code, xml) = check(&project, "junit");
    assert_eq!(code, 0, "{xml}");
    let report = parse_junit(&xml);
    report.assert_consistent();
    assert!(xml.contains("failures=\"0\""), "{xml}");
    assert!(xml.contains("errors=\"0\""), "{xml}");
    assert_eq!(report.tests, 3, "{report:#?}");
    let soft = report.case("soft");
    assert!(soft.has("system-out"), "{report:#?}");
    assert!(!soft.has("failure"), "{report:#?}");
    let raw = raw_case(&xml, "soft");
    assert!(raw.contains("warning: soft: "), "{xml}");
    assert!(raw.contains("meh &lt;&amp;&gt;"), "{xml}");
    assert!(report.case("verdict").inside.is_empty(), "{report:#?}");
}

#[test]
fn junit_errs_the_verdict_testcase_when_the_loop_guard_stops_the_run() {
    let project = project(&[lint("a", PASSES, ""), lint("b", FAILS, "on_fail: a")]);
    let (code, xml) = check(&project, "junit");
    assert_eq!(code, 2, "{xml}");
    let report = parse_junit(&xml);
    report.assert_consistent();
    assert_eq!(
        report.tests, 67,
        "each gate once, 64 runs again, and the verdict: {report:#?}"
    );
    // b's 33 failures were routed on (to a): warnings, not failures.
    assert_eq!(report.failures, 0, "{report:#?}");
    assert_eq!(report.errors, 1, "{report:#?}");
    let verdict = report.case("verdict");
    assert_eq!(verdict.message("error"), Some("ERROR"), "{report:#?}");
    assert!(raw_case(&xml, "verdict").contains("loop guard"), "{xml}");
}

#[test]
fn junit_fails_the_verdict_testcase_for_on_pass_block() {
    let project = project(&[lint("a", PASSES, "on_pass: BLOCK"), lint("b", PASSES, "")]);
    let (code, xml) = check(&project, "junit");
    assert_eq!(code, 1, "{xml}");
    let report = parse_junit(&xml);
    report.assert_consistent();
    assert_eq!(report.failures, 1, "{report:#?}");
    assert_eq!(report.case("verdict").message("failure"), Some("FAIL"));
    assert!(
        raw_case(&xml, "verdict").contains("a: routed to BLOCK after passing"),
        "{xml}"
    );
}

#[test]
fn junit_fails_both_the_gate_and_the_verdict_for_a_blocking_failure() {
    let project = project(&[lint("bad", FAILS, ""), lint("later", PASSES, "")]);
    let (code, xml) = check(&project, "junit");
    assert_eq!(code, 1, "{xml}");
    let report = parse_junit(&xml);
    report.assert_consistent();
    assert_eq!(report.failures, 2, "{report:#?}");
    assert!(report.case("bad").has("failure"), "{report:#?}");
    assert!(report.case("later").has("skipped"), "{report:#?}");
}

#[test]
fn junit_stays_well_formed_with_an_injecting_blocked_reason() {
    let project = status_project(INJECTING_SIGNAL);
    let (code, xml) = check(&project, "junit");
    assert_eq!(code, 3, "{xml}");
    let report = parse_junit(&xml);
    report.assert_consistent();
    assert_eq!(report.case("verdict").message("failure"), Some("BLOCKED"));
    assert!(!xml.contains('\u{1b}'), "{xml:?}");
}
