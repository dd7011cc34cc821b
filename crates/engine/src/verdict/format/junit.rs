//! JUnit XML for CI test reports, written with quick-xml: one testcase per gate and one for the
//! decision, so a CI report agrees with the exit code; what XML 1.0 cannot hold is dropped.

use std::fmt::Write;
use std::io;

use quick_xml::escape::escape;
use quick_xml::events::attributes::Attribute;
use quick_xml::events::{BytesDecl, BytesText, Event};
use quick_xml::name::QName;

use super::routed_on;
use crate::verdict::{Decision, GateOutcome, GateReport, Verdict};
use validator_text::each_line;

/// JUnit XML: one testsuite; one testcase per gate run, then a testcase named `verdict` that
/// fails (or errs) exactly when the run's decision is not PASS, so a CI report agrees with the
/// exit code. A gate whose failure was routed on is a passing testcase carrying its warning.
pub fn junit(verdict: &Verdict) -> String {
    let cases: Vec<Case<'_>> = verdict
        .gates
        .iter()
        .map(|gate| Case::of(verdict, gate))
        .collect();
    // The decision itself: a broken done signal, the loop guard, the budget or on_pass: BLOCK
    // decide a run without any gate failing.
    let decision = match verdict.verdict {
        Decision::Pass => None,
        Decision::Error => Some("error"),
        Decision::Fail | Decision::Blocked | Decision::Escalated => Some("failure"),
    };
    let count = |element: &str| {
        let gates = cases.iter().filter(|case| **case == Case::Failed(element));
        gates.count() + usize::from(decision == Some(element))
    };
    let skipped = cases
        .iter()
        .filter(|case| matches!(case, Case::Skipped(_)))
        .count();
    let counts = [
        ("tests", verdict.gates.len() + 1),
        ("failures", count("failure")),
        ("errors", count("error")),
        ("skipped", skipped),
    ]
    .map(|(key, n)| (key, n.to_string()));
    let mut out = Xml::new_with_indent(Vec::new(), b' ', 2);
    // Writing to memory cannot fail.
    let _ = out.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)));
    let _ = out
        .create_element("testsuite")
        .with_attribute(attribute(
            "name",
            &format!("validator.{}", verdict.pipeline),
        ))
        .with_attributes(counts.iter().map(|(key, n)| attribute(key, n)))
        .with_attribute(attribute("time", &seconds(verdict.duration_ms)))
        .write_inner_content(|out| {
            for (gate, case) in verdict.gates.iter().zip(&cases) {
                gate_case(out, verdict, gate, case)?;
            }
            verdict_case(out, verdict, decision)
        });
    let mut xml = String::from_utf8_lossy(&out.into_inner()).into_owned();
    xml.push('\n');
    xml
}

type Xml = quick_xml::Writer<Vec<u8>>;

/// What a gate's testcase holds.
#[derive(Debug, PartialEq, Eq)]
enum Case<'v> {
    Passed,
    /// A failure the run routed on, with the warning it was recorded under.
    RoutedOn(&'v str),
    /// `failure` or `error`.
    Failed(&'v str),
    /// Why the gate was not run.
    Skipped(&'v str),
}

impl<'v> Case<'v> {
    fn of(verdict: &'v Verdict, gate: &'v GateReport) -> Self {
        match (gate.outcome, routed_on(verdict, gate)) {
            (GateOutcome::Fail, Some(warning)) => Case::RoutedOn(warning),
            (GateOutcome::Fail, None) => Case::Failed("failure"),
            (GateOutcome::Error, _) => Case::Failed("error"),
            (GateOutcome::Skipped, _) => Case::Skipped(match gate.summary.as_str() {
                "" => "not reached",
                summary => summary,
            }),
            _ => Case::Passed,
        }
    }
}

fn gate_case(
    out: &mut Xml,
    verdict: &Verdict,
    gate: &GateReport,
    case: &Case<'_>,
) -> io::Result<()> {
    let classname = format!("validator.{}.{}", verdict.pipeline, gate.rule);
    let testcase = out.create_element("testcase").with_attributes([
        attribute("classname", &classname),
        attribute("name", &gate.name),
        attribute("time", &seconds(gate.duration_ms)),
    ]);
    match case {
        Case::Passed => testcase.write_empty(),
        Case::RoutedOn(warning) => testcase.write_inner_content(|out| {
            let body = format!("warning: {warning}\n{}", gate_details(gate));
            element(out, "system-out", &[], Some(&body))
        }),
        Case::Failed(name) => testcase.write_inner_content(|out| {
            let message = [("message", gate.summary.as_str())];
            element(out, name, &message, Some(&gate_details(gate)))
        }),
        Case::Skipped(why) => {
            testcase.write_inner_content(|out| element(out, "skipped", &[("message", why)], None))
        }
    }
    .map(drop)
}

/// The testcase of the decision. It takes no time of its own (the suite's time is the run's).
fn verdict_case(out: &mut Xml, verdict: &Verdict, decision: Option<&str>) -> io::Result<()> {
    let testcase = out.create_element("testcase").with_attributes([
        attribute("classname", &format!("validator.{}", verdict.pipeline)),
        attribute("name", "verdict"),
        attribute("time", "0.000"),
    ]);
    let Some(name) = decision else {
        return testcase.write_empty().map(drop);
    };
    let decided = verdict.verdict.to_string();
    let reasons: String = verdict.reasons.iter().map(|r| format!("{r}\n")).collect();
    testcase
        .write_inner_content(|out| {
            let attributes = [("message", decided.as_str()), ("type", decided.as_str())];
            element(out, name, &attributes, Some(&reasons))
        })
        .map(drop)
}

/// `<name attributes…>body</name>`, or `<name attributes…/>` without a body.
fn element(
    out: &mut Xml,
    name: &str,
    attributes: &[(&str, &str)],
    body: Option<&str>,
) -> io::Result<()> {
    let element = out
        .create_element(name)
        .with_attributes(attributes.iter().map(|(key, value)| attribute(key, value)));
    match body {
        Some(body) => element.write_text_content(BytesText::new(&xml_text(body))),
        None => element.write_empty(),
    }
    .map(drop)
}

/// An attribute as [`xml_text`], escaped by quick-xml as text is. (Its attribute escaping
/// would write a line break as `&#10;`, which a reader keeps; this report has always written
/// it raw, which a reader takes for a space.)
fn attribute<'a>(key: &'a str, value: &str) -> Attribute<'a> {
    Attribute {
        key: QName(key),
        value: escape(xml_text(value)),
    }
}

/// Text for XML, before quick-xml escapes it: on its lines as [`each_line`] keeps them (XML 1.0
/// cannot hold most C0 controls; a JUnit viewer would render C1 and bidirectional ones),
/// without the noncharacters XML 1.0 forbids.
fn xml_text(text: &str) -> String {
    each_line(text).chars().filter(|&c| xml_holds(c)).collect()
}

/// Whether XML 1.0 can hold `c` (its `Char`, but for surrogates, which no `char` is).
pub(super) fn xml_holds(c: char) -> bool {
    !matches!(
        c,
        '\0'..='\u{8}' | '\u{B}' | '\u{C}' | '\u{E}'..='\u{1F}' | '\u{FFFE}' | '\u{FFFF}'
    )
}

fn seconds(ms: u64) -> String {
    format!("{:.3}", ms as f64 / 1000.0)
}

/// A gate's findings, then its output's tail.
fn gate_details(gate: &GateReport) -> String {
    let mut body = String::new();
    for finding in &gate.findings {
        let _ = writeln!(body, "{finding}");
    }
    if let Some(tail) = &gate.output_tail {
        let _ = writeln!(body, "{tail}");
    }
    body
}
