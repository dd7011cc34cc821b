//! The verdict for each audience: `text` for people at a terminal, `json` (the verdict document
//! itself), `junit` for CI test reports (one testcase per gate and one for the decision), and
//! `github` workflow commands that annotate findings on the pull request.
//!
//! Names, summaries, findings and reasons come from the task, its done signal and the tools the
//! gates ran, so they are untrusted: every such field is printed as exactly one line (see
//! [`crate::text::one_line`]), or a body on its own lines ([`crate::text::each_line`]), so no
//! control, bidirectional or other invisible character reaches a reader raw, and then escaped
//! for where it lands.

use std::fmt::Write;
use std::io;

use anstyle::{AnsiColor, Style};
use quick_xml::escape::escape;
use quick_xml::events::attributes::Attribute;
use quick_xml::events::{BytesDecl, BytesText, Event};
use quick_xml::name::QName;

use super::{Decision, Finding, GateOutcome, GateReport, Verdict};
use crate::text::{each_line, one_line};

const FINDINGS_SHOWN: usize = 10;
const TAIL_SHOWN: usize = 12;

/// Text for a person. Styles are always emitted; the caller's stream strips them when the
/// output is not a terminal or NO_COLOR is set. Every field is one line without ESC, so only
/// the styles added here reach the terminal.
pub fn text(verdict: &Verdict) -> String {
    let width = name_width(verdict.gates.iter().map(|g| g.name.as_str()));
    let mut out = text_header(
        &verdict.task,
        &verdict.pipeline,
        verdict.attempt,
        verdict.max_attempts,
    );
    for gate in &verdict.gates {
        out.push_str(&gate_text(gate, width));
    }
    out.push_str(&text_footer(verdict));
    out
}

/// The first line of [`text`]: what is judged. Printed before the run when gates stream.
pub fn text_header(task: &str, pipeline: &str, attempt: u32, max_attempts: u32) -> String {
    let bold = Style::new().bold();
    format!(
        "{bold}validator{bold:#} task {} · pipeline {} · attempt {attempt}/{max_attempts}\n",
        one_line(task),
        one_line(pipeline),
    )
}

/// The column gate names are padded to, from the names as they will be printed.
pub fn name_width<'a>(names: impl IntoIterator<Item = &'a str>) -> usize {
    names
        .into_iter()
        .map(|name| one_line(name).chars().count())
        .max()
        .unwrap_or(0)
}

/// One gate's lines of [`text`]: its result and, when it failed, its fix, findings and the
/// output's tail. Printed as each gate finishes when gates stream.
pub fn gate_text(gate: &GateReport, width: usize) -> String {
    let bold = Style::new().bold();
    let dim = Style::new().dimmed();
    let mut out = String::new();
    let name = one_line(&gate.name);
    let (mark, style) = match gate.outcome {
        GateOutcome::Pass => ("✓", AnsiColor::Green.on_default()),
        GateOutcome::Cached => ("✓", AnsiColor::Green.on_default()),
        GateOutcome::Fail => ("✗", AnsiColor::Red.on_default()),
        GateOutcome::Error => ("!", AnsiColor::Magenta.on_default()),
        GateOutcome::Skipped => ("·", dim),
    };
    let time = if gate.outcome == GateOutcome::Skipped {
        String::new()
    } else {
        human_ms(gate.duration_ms)
    };
    let _ = writeln!(
        out,
        "  {style}{mark} {name:<width$}  {:<7}{style:#} {dim}{time:>7}{dim:#}  {}",
        gate.outcome.as_str(),
        one_line(&gate.summary)
    );
    if matches!(gate.outcome, GateOutcome::Fail | GateOutcome::Error) {
        if let Some(fix) = &gate.fix {
            let _ = writeln!(out, "      fix: {bold}{}{bold:#}", one_line(fix));
        }
        for finding in gate.findings.iter().take(FINDINGS_SHOWN) {
            let _ = writeln!(out, "      {}", one_line(&finding.to_string()));
        }
        if gate.findings.len() > FINDINGS_SHOWN {
            let _ = writeln!(
                out,
                "      {dim}… and {} more{dim:#}",
                gate.findings.len() - FINDINGS_SHOWN
            );
        }
        // Findings without a line (failed tests, a bare exit code) say what but not why;
        // the output's tail does.
        if gate.findings.iter().all(|f| f.line.is_none()) {
            if let Some(tail) = &gate.output_tail {
                let lines: Vec<&str> = tail.lines().collect();
                for line in &lines[lines.len().saturating_sub(TAIL_SHOWN)..] {
                    let _ = writeln!(out, "      {dim}│{dim:#} {}", one_line(line));
                }
            }
        }
    }
    out
}

/// The end of [`text`], after the gates: what no machine checked, the decision and why, and
/// the warnings.
/// The line before a group's gates, whose lines follow in the order they finish.
pub fn group_text(group: &str, size: usize) -> String {
    let dim = Style::new().dimmed();
    format!(
        "  {dim}┄ group {}: {size} gates at once, each shown as it finishes{dim:#}\n",
        one_line(group)
    )
}

/// The files a gate counted as the worker's changes, one a line under its own (`check -v`),
/// so the count can be held against `git status`: the first 50, then how many more.
pub fn changed_text(gate: &GateReport) -> String {
    const SHOWN: usize = 50;
    let dim = Style::new().dimmed();
    let mut out = String::new();
    let Some(changed) = &gate.changed_files else {
        return out;
    };
    let _ = writeln!(
        out,
        "      {dim}counted as changed: {} file{}{dim:#}",
        changed.count,
        crate::text::plural(changed.count)
    );
    for file in changed.files.iter().take(SHOWN) {
        let _ = writeln!(out, "        {}", one_line(file));
    }
    if changed.count > SHOWN {
        let _ = writeln!(
            out,
            "        {dim}… and {} more (the JSON verdict lists {}){dim:#}",
            changed.count - SHOWN,
            changed.files.len()
        );
    }
    if !changed.left_out.is_empty() {
        let _ = writeln!(
            out,
            "      {dim}left out, written into tool caches by validator's own gates: {}{dim:#}",
            changed.left_out.len()
        );
        for file in changed.left_out.iter().take(SHOWN) {
            let _ = writeln!(out, "        {}", one_line(file));
        }
    }
    out
}

pub fn text_footer(verdict: &Verdict) -> String {
    let dim = Style::new().dimmed();
    let mut out = String::new();
    if !verdict.unchecked.is_empty() {
        let _ = writeln!(
            out,
            "  {dim}not checked by a machine (a person must):{dim:#}"
        );
        for criterion in &verdict.unchecked {
            let _ = writeln!(out, "    {dim}?{dim:#} {}", one_line(criterion));
        }
    }
    let decision_style = match verdict.verdict {
        Decision::Pass => AnsiColor::Green.on_default().bold(),
        Decision::Fail => AnsiColor::Red.on_default().bold(),
        _ => AnsiColor::Yellow.on_default().bold(),
    };
    let _ = writeln!(out);
    let _ = write!(out, "{decision_style}{}{decision_style:#}", verdict.verdict);
    match verdict.reasons.first() {
        Some(first) => {
            let _ = writeln!(out, "  {}", one_line(first));
            for reason in &verdict.reasons[1..] {
                let _ = writeln!(out, "      {}", one_line(reason));
            }
        }
        None => {
            let ran = verdict
                .gates
                .iter()
                .filter(|g| g.outcome != GateOutcome::Skipped)
                .count();
            let _ = writeln!(
                out,
                "  {ran} gate{} ran in {}",
                crate::text::plural(ran),
                human_ms(verdict.duration_ms)
            );
        }
    }
    let warn = AnsiColor::Yellow.on_default();
    for warning in &verdict.warnings {
        let _ = writeln!(out, "{warn}warning{warn:#}: {}", one_line(warning));
    }
    out
}

fn human_ms(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms}ms")
    } else {
        format!("{:.1}s", ms as f64 / 1000.0)
    }
}

/// The warning under which `gate`'s failure was routed on (`on_fail: CONTINUE`, a jump, PASS),
/// if it was: the run records such a failure as `name: summary` in `verdict.warnings`.
fn routed_on<'v>(verdict: &'v Verdict, gate: &GateReport) -> Option<&'v str> {
    if gate.outcome != GateOutcome::Fail {
        return None;
    }
    let line = format!("{}: {}", gate.name, gate.summary);
    let prefix = format!("{}:", gate.name);
    verdict
        .warnings
        .iter()
        .find(|w| **w == line)
        .or_else(|| verdict.warnings.iter().find(|w| w.starts_with(&prefix)))
        .map(String::as_str)
}

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
fn xml_holds(c: char) -> bool {
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

/// GitHub Actions workflow commands: an annotation per finding (or per failing gate without
/// findings), then the decision and its reasons as plain lines. Every line printed is one line:
/// annotation properties and data are escaped ([`property`], [`data`]), and plain text goes
/// through [`github_plain`], so nothing a worker or a tool wrote can issue a command.
pub fn github(verdict: &Verdict) -> String {
    let mut out = String::new();
    for gate in &verdict.gates {
        let level = match gate.outcome {
            GateOutcome::Fail if routed_on(verdict, gate).is_some() => "warning",
            GateOutcome::Fail | GateOutcome::Error => "error",
            _ => continue,
        };
        let title = format!("validator {}", gate.name);
        if gate.findings.is_empty() {
            let _ = writeln!(
                out,
                "::{level} title={}::{}",
                property(&title),
                data(&gate.summary)
            );
        }
        for finding in &gate.findings {
            let _ = writeln!(
                out,
                "::{level} {}::{}",
                annotation_properties(finding, &title),
                data(&annotation_message(finding))
            );
        }
    }
    let _ = writeln!(
        out,
        "{}",
        github_plain(&format!(
            "validator: {} ({} / {})",
            verdict.verdict, verdict.task, verdict.pipeline
        ))
    );
    for reason in &verdict.reasons {
        let _ = writeln!(out, "{}", github_plain(&format!("  {reason}")));
    }
    out
}

/// Most findings listed in a job summary; the annotations and the verdict file have all.
const SUMMARY_FINDINGS: usize = 50;

/// A GitHub Actions job summary (Markdown for `$GITHUB_STEP_SUMMARY`): the decision, a table of
/// gates, the reasons, and the findings of failing gates. Everything a worker wrote is escaped
/// so it reads as text in a cell, never as Markdown or HTML.
pub fn job_summary(verdict: &Verdict) -> String {
    let mut out = String::new();
    let mark = match verdict.verdict {
        Decision::Pass => "✅",
        Decision::Fail => "❌",
        _ => "⚠️",
    };
    let _ = writeln!(
        out,
        "### {mark} validator: {} — task {}, pipeline {}, attempt {}/{}\n",
        verdict.verdict,
        md(&verdict.task),
        md(&verdict.pipeline),
        verdict.attempt,
        verdict.max_attempts
    );
    let _ = writeln!(
        out,
        "| gate | outcome | time | summary |\n|---|---|---:|---|"
    );
    for gate in &verdict.gates {
        let time = match gate.outcome {
            GateOutcome::Skipped => String::new(),
            _ => human_ms(gate.duration_ms),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {time} | {} |",
            md(&gate.name),
            gate.outcome.as_str(),
            md(&gate.summary)
        );
    }
    if !verdict.reasons.is_empty() {
        let _ = writeln!(out, "\n**Why**\n");
        for reason in &verdict.reasons {
            let _ = writeln!(out, "- {}", md(reason));
        }
    }
    let findings: Vec<(&GateReport, &Finding)> = verdict
        .gates
        .iter()
        .filter(|g| matches!(g.outcome, GateOutcome::Fail | GateOutcome::Error))
        .flat_map(|g| g.findings.iter().map(move |f| (g, f)))
        .collect();
    if !findings.is_empty() {
        let _ = writeln!(out, "\n**Findings**\n");
        for (gate, finding) in findings.iter().take(SUMMARY_FINDINGS) {
            let _ = writeln!(out, "- {}: {}", md(&gate.name), md(&finding.to_string()));
        }
        if findings.len() > SUMMARY_FINDINGS {
            let _ = writeln!(
                out,
                "- … and {} more (see the annotations)",
                findings.len() - SUMMARY_FINDINGS
            );
        }
    }
    if !verdict.unchecked.is_empty() {
        let _ = writeln!(out, "\n**Not checked by a machine**\n");
        for criterion in &verdict.unchecked {
            let _ = writeln!(out, "- {}", md(criterion));
        }
    }
    out.push('\n');
    out
}

/// Text as inert Markdown on one line: HTML and Markdown punctuation escaped, table pipes too.
fn md(text: &str) -> String {
    let line = one_line(text);
    let mut out = String::with_capacity(line.len());
    for c in line.chars().take(300) {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '#' | '!' | '~' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// A plain (non-command) line for the GitHub runner's log that the runner cannot take for a
/// workflow command: [`one_line`] (which leaves no invisible character to split a prefix), not
/// starting with `::` once the leading whitespace the runner trims is gone, and without the
/// legacy `##[command]` prefix, which the runner looks for anywhere in a line.
fn github_plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in one_line(text).chars() {
        if c == '[' && out.ends_with("##") {
            out.push(' ');
        }
        out.push(c);
    }
    let indent = out.len() - out.trim_start().len();
    if out[indent..].starts_with("::") {
        out.insert(indent + 1, ' ');
    }
    out
}

/// A finding's annotation properties. The `file` property must be the path as it is in the
/// repository for GitHub to place the annotation, and the runner unescapes nothing in it but
/// `%`, line breaks, `:` and `,`: a name holding a control or invisible character is not given
/// there (raw, it would reach the log and the pull request's view), and the annotation's message
/// names it instead ([`annotation_message`]), quoted and escaped.
fn annotation_properties(finding: &Finding, title: &str) -> String {
    let mut props = Vec::new();
    if let Some(file) = finding.file.as_deref().filter(|&file| placeable(file)) {
        props.push(format!("file={}", property(file)));
        if let Some(line) = finding.line {
            props.push(format!("line={line}"));
        }
        // GitHub counts columns from 1; a tool counting from 0 (pylint) gives no column.
        if let Some(col) = finding.column.filter(|&c| c > 0) {
            props.push(format!("col={col}"));
        }
    }
    props.push(format!("title={}", property(title)));
    props.join(",")
}

/// Whether GitHub can be given `file` as it is: a name [`crate::text::name`] leaves unquoted.
fn placeable(file: &str) -> bool {
    matches!(crate::text::name(file), std::borrow::Cow::Borrowed(_))
}

/// A finding's annotation message: its text, and its place too when the annotation cannot
/// carry it ([`annotation_properties`]).
fn annotation_message(finding: &Finding) -> String {
    match &finding.file {
        Some(file) if !placeable(file) => finding.to_string(),
        _ => finding.text(),
    }
}

/// A workflow command's message: on its lines ([`each_line`]), escaped as the runner unescapes.
fn data(text: &str) -> String {
    each_line(text)
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow command's property: one line ([`one_line`]), escaped as the runner unescapes.
fn property(text: &str) -> String {
    one_line(text)
        .replace('%', "%25")
        .replace(':', "%3A")
        .replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::{SCHEMA, SignalInfo};

    fn gate(name: &str, outcome: GateOutcome, summary: &str) -> GateReport {
        GateReport {
            name: name.into(),
            rule: "lint".into(),
            outcome,
            duration_ms: 5,
            exit_code: None,
            summary: summary.into(),
            findings: Vec::new(),
            output_tail: None,
            fix: None,
            changed_files: None,
        }
    }

    fn verdict(decision: Decision, gates: Vec<GateReport>, reasons: &[&str]) -> Verdict {
        Verdict {
            schema: SCHEMA.into(),
            task: "t".into(),
            verdict: decision,
            attempt: 1,
            max_attempts: 3,
            pipeline: "p".into(),
            signal: SignalInfo::default(),
            started_at: String::new(),
            duration_ms: 10,
            gates,
            reasons: reasons.iter().map(|r| r.to_string()).collect(),
            warnings: Vec::new(),
            unchecked: Vec::new(),
            context: None,
            escalation: None,
            signature: None,
        }
    }

    /// The testcase named `name`, from its opening tag to the next one.
    fn case<'x>(xml: &'x str, name: &str) -> &'x str {
        xml.split("<testcase ")
            .find(|c| c.contains(&format!("name=\"{name}\"")))
            .unwrap_or_else(|| panic!("no testcase {name} in {xml}"))
    }

    fn attribute<'x>(xml: &'x str, key: &str) -> &'x str {
        let start = xml.find(&format!(" {key}=\"")).expect("attribute") + key.len() + 3;
        let len = xml[start..].find('"').expect("closing quote");
        &xml[start..start + len]
    }

    const INJECTED: &str = "x\n::error file=a,line=1::forged\r\n::add-mask::validator\n";

    #[test]
    fn junit_escapes_markup_and_drops_what_xml_cannot_hold() {
        let mut failing = gate("<a & \"b\">\u{1b}[0m", GateOutcome::Fail, "");
        // C0 controls, DEL and C1 become spaces, ESC and the noncharacters U+FFFE and U+FFFF
        // go; line breaks of every kind are `\n`, in attributes too (where a reader takes
        // them for spaces).
        failing.summary = "a\u{0}b\u{7}c\u{1b}[0md\u{7f}e\u{9b}f\u{fffe}g\u{ffff}h\r\ni".into();
        failing.output_tail = Some("x\ty\r\nz\u{b}w\u{85}v\u{2028}u\ru&<\"'>\u{1f}".into());
        let out = junit(&verdict(Decision::Fail, vec![failing], &["r\u{c}\u{0}s"]));
        let case = case(&out, "&lt;a &amp; &quot;b&quot;&gt;[0m");
        assert!(
            case.contains(
                "<failure message=\"a b c[0md e fgh\ni\">x y\nz\nw\nv\nu\nu&amp;&lt;&quot;&apos;&gt; \n</failure>"
            ),
            "{out}"
        );
        assert!(out.contains(">r\n s\n</failure>"), "{out}");
        assert!(out.chars().all(xml_holds), "{out:?}");
        let mut reader = quick_xml::Reader::from_str(&out);
        loop {
            match reader.read_event() {
                Ok(quick_xml::events::Event::Eof) => break,
                Ok(_) => {}
                Err(err) => panic!("{err}: {out}"),
            }
        }
    }

    #[test]
    fn github_escapes_properties_and_data() {
        let finding = Finding {
            line: Some(3),
            column: Some(4),
            ..Finding::in_file("src/a,b:c.rs", "50% done\nnext")
        };
        assert_eq!(
            annotation_properties(&finding, "validator lint"),
            "file=src/a%2Cb%3Ac.rs,line=3,col=4,title=validator lint"
        );
        assert_eq!(data("50% done\nnext"), "50%25 done%0Anext");
    }

    #[test]
    fn no_format_lets_a_control_or_bidi_character_through() {
        let hostile = "evil\u{9B}31m\u{202E}txt.exe";
        let mut failing = gate("lint\u{2066}", GateOutcome::Fail, "bad \u{202E}x\u{2069}");
        failing.findings = vec![Finding {
            line: Some(2),
            ..Finding::in_file(hostile, "msg \u{200F}\u{61C}\u{9B}2J\nnext\u{2028}line")
        }];
        failing.output_tail = Some("tail \u{202D}x\u{85}y\n".into());
        let v = verdict(Decision::Fail, vec![failing], &["r \u{202E}1"]);
        let raw = |c: char| {
            c.is_control() && !matches!(c, '\n' | '\u{1b}')
                || crate::text::unusual(c) && !c.is_ascii()
        };
        for (format, out) in [
            ("text", text(&v)),
            ("junit", junit(&v)),
            ("github", github(&v)),
            ("summary", job_summary(&v)),
        ] {
            assert!(!out.chars().any(raw), "{format}: {out:?}");
        }
        let annotations = github(&v);
        let line = annotations.lines().next().unwrap_or_default();
        assert!(
            line.starts_with(
                "::error title=validator lint\u{FFFD}::\"evil\\u009b31m\\u202etxt.exe\":2: msg"
            ),
            "{annotations}"
        );
        assert!(!line.contains("file="), "{annotations}");
    }

    #[test]
    fn github_prints_one_line_per_reason_and_no_forged_command() {
        let mut v = verdict(
            Decision::Blocked,
            vec![gate(
                "status",
                GateOutcome::Fail,
                &format!("STATUS: BLOCKED: {INJECTED}"),
            )],
            &[
                &format!("status: worker reported BLOCKED: {INJECTED}"),
                "::warning::starts like a command",
                "a ##[error]legacy and #\u{AD}#[add-mask]hidden",
            ],
        );
        v.task = "task\n::error::in the name".into();
        let out = github(&v);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 5, "{out}");
        assert!(
            lines[0].starts_with("::error title=validator status::"),
            "{out}"
        );
        for line in &lines[1..] {
            assert!(!line.trim_start().starts_with("::"), "{out}");
            assert!(!line.contains("##["), "{out}");
        }
        assert!(
            lines[2].contains("x ⏎ ::error file=a,line=1::forged"),
            "{out}"
        );
    }

    #[test]
    fn github_plain_neutralises_command_prefixes() {
        assert_eq!(github_plain("  ::error::x"), "  : :error::x");
        assert_eq!(github_plain("\u{200B}::x"), "\u{FFFD}::x");
        assert_eq!(github_plain("a ###[b]"), "a ### [b]");
        assert_eq!(github_plain("#\u{AD}#[x]"), "#\u{FFFD}#[x]");
        assert_eq!(
            github_plain("validator: PASS (t / p)"),
            "validator: PASS (t / p)"
        );
    }

    #[test]
    fn github_warns_for_routed_failures_even_when_names_hold_colons() {
        let mut v = verdict(
            Decision::Pass,
            vec![gate("lint:strict", GateOutcome::Fail, "2 findings")],
            &[],
        );
        v.warnings = vec!["lint:strict: 2 findings".into()];
        assert!(github(&v).starts_with("::warning "), "{}", github(&v));
    }

    #[test]
    fn text_keeps_every_field_on_its_line_without_escapes() {
        let mut failing = gate("bad\nname", GateOutcome::Fail, "sum\nmary\u{1b}[2J");
        failing.findings = vec![Finding::in_file("a\nb.rs", "msg\u{1b}]0;title\u{7}\nmore")];
        failing.output_tail = Some("one\u{1b}[31m\ntwo\r\n".into());
        let mut v = verdict(Decision::Fail, vec![failing], &["r1\nforged", "r2"]);
        v.warnings = vec!["w\nx".into()];
        let out = text(&v);
        let plain = anstream::adapter::strip_str(&out).to_string();
        assert_eq!(plain.lines().count(), 9, "{plain}");
        // Only styles validator adds reach the terminal: each ESC begins one of them.
        for (at, _) in out.match_indices('\u{1b}') {
            assert!(out[at..].starts_with("\u{1b}["), "{out:?}");
            let styled = &out[at + 2..];
            let end = styled.find('m').expect("SGR");
            assert!(
                styled[..end]
                    .chars()
                    .all(|c| c.is_ascii_digit() || c == ';'),
                "{out:?}"
            );
        }
        assert!(plain.contains("bad ⏎ name"), "{plain}");
        assert!(plain.contains("FAIL  r1 ⏎ forged"), "{plain}");
    }

    #[test]
    fn job_summary_is_a_table_that_a_worker_cannot_mark_up() {
        let mut failing = gate("lint", GateOutcome::Fail, "1 finding | <b>x</b>");
        failing.findings = vec![Finding::in_file(
            "a.rs",
            "[click](http://x) ![i](y) `code`\nnext",
        )];
        let v = verdict(
            Decision::Fail,
            vec![failing, gate("test", GateOutcome::Skipped, "")],
            &["lint: 1 finding"],
        );
        let md = job_summary(&v);
        assert!(md.starts_with("### ❌ validator: FAIL"), "{md}");
        assert!(md.contains("| lint | fail |"), "{md}");
        assert!(md.contains("| test | skipped |  |"), "{md}");
        assert!(md.contains("1 finding \\| &lt;b&gt;x&lt;/b&gt;"), "{md}");
        assert!(
            md.contains("\\[click\\](http://x) \\!\\[i\\](y) \\`code\\`"),
            "{md}"
        );
        assert!(!md.contains("<b>"), "{md}");
    }

    #[test]
    fn junit_has_a_verdict_testcase_that_agrees_with_the_decision() {
        for (decision, element) in [
            (Decision::Fail, Some("failure")),
            (Decision::Blocked, Some("failure")),
            (Decision::Escalated, Some("failure")),
            (Decision::Error, Some("error")),
            (Decision::Pass, None),
        ] {
            let v = verdict(
                decision,
                vec![gate("a", GateOutcome::Skipped, "")],
                &["first <reason>", "second"],
            );
            let out = junit(&v);
            let verdict_case = case(&out, "verdict");
            assert!(verdict_case.contains("classname=\"validator.p\""), "{out}");
            match element {
                Some(element) => {
                    assert!(
                        verdict_case.contains(&format!("<{element} message=\"{decision}\"")),
                        "{out}"
                    );
                    assert!(
                        verdict_case.contains("first &lt;reason&gt;\nsecond"),
                        "{out}"
                    );
                }
                None => assert!(
                    !verdict_case.contains("<failure") && !verdict_case.contains("<error"),
                    "{out}"
                ),
            }
            assert_eq!(attribute(&out, "tests"), "2", "{out}");
            assert_eq!(attribute(&out, "skipped"), "1", "{out}");
            let failures = usize::from(element == Some("failure"));
            let errors = usize::from(element == Some("error"));
            assert_eq!(attribute(&out, "failures"), failures.to_string(), "{out}");
            assert_eq!(attribute(&out, "errors"), errors.to_string(), "{out}");
            assert_eq!(out.matches("<failure ").count(), failures, "{out}");
            assert_eq!(out.matches("<error ").count(), errors, "{out}");
        }
    }

    #[test]
    fn junit_reports_a_failure_routed_on_as_a_passing_testcase_with_its_warning() {
        let mut v = verdict(
            Decision::Pass,
            vec![
                gate("soft", GateOutcome::Fail, "1 finding"),
                gate("ok", GateOutcome::Pass, "fine"),
            ],
            &[],
        );
        v.warnings = vec!["soft: 1 finding".into()];
        let out = junit(&v);
        assert_eq!(attribute(&out, "tests"), "3", "{out}");
        assert_eq!(attribute(&out, "failures"), "0", "{out}");
        assert_eq!(attribute(&out, "errors"), "0", "{out}");
        let soft = case(&out, "soft");
        assert!(
            soft.contains("<system-out>warning: soft: 1 finding"),
            "{out}"
        );
        assert!(!out.contains("<failure"), "{out}");
    }

    #[test]
    fn junit_counts_failed_and_errored_gates_and_the_verdict() {
        let v = verdict(
            Decision::Error,
            vec![
                gate("a", GateOutcome::Fail, "bad"),
                gate("b", GateOutcome::Error, "broken"),
                gate("c", GateOutcome::Cached, "cached"),
            ],
            &["b: broken"],
        );
        let out = junit(&v);
        assert_eq!(attribute(&out, "tests"), "4", "{out}");
        assert_eq!(attribute(&out, "failures"), "1", "{out}");
        assert_eq!(attribute(&out, "errors"), "2", "{out}");
        assert_eq!(out.matches("<testcase ").count(), 4, "{out}");
    }

    #[test]
    fn junit_writes_each_kind_of_testcase_in_one_layout() {
        let mut routed = gate("soft", GateOutcome::Fail, "1 finding");
        routed.findings = vec![Finding {
            line: Some(3),
            ..Finding::in_file("src/a.rs", "unused <T>")
        }];
        let mut failing = gate("tests", GateOutcome::Fail, "2 failed");
        failing.rule = "test".into();
        failing.output_tail = Some("FAILED a::b\nFAILED a::c".into());
        let mut v = verdict(
            Decision::Fail,
            vec![
                gate("fmt", GateOutcome::Pass, "clean"),
                routed,
                failing,
                gate("review", GateOutcome::Error, "reviewer timed out"),
                gate("cached", GateOutcome::Cached, "cached"),
                gate("later", GateOutcome::Skipped, ""),
            ],
            &["tests: 2 failed", "review: reviewer timed out"],
        );
        v.warnings = vec!["soft: 1 finding".into()];
        let expected = r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="validator.p" tests="7" failures="2" errors="1" skipped="1" time="0.010">
  <testcase classname="validator.p.lint" name="fmt" time="0.005"/>
  <testcase classname="validator.p.lint" name="soft" time="0.005">
    <system-out>warning: soft: 1 finding
src/a.rs:3: unused &lt;T&gt;
</system-out>
  </testcase>
  <testcase classname="validator.p.test" name="tests" time="0.005">
    <failure message="2 failed">FAILED a::b
FAILED a::c
</failure>
  </testcase>
  <testcase classname="validator.p.lint" name="review" time="0.005">
    <error message="reviewer timed out"></error>
  </testcase>
  <testcase classname="validator.p.lint" name="cached" time="0.005"/>
  <testcase classname="validator.p.lint" name="later" time="0.005">
    <skipped message="not reached"/>
  </testcase>
  <testcase classname="validator.p" name="verdict" time="0.000">
    <failure message="FAIL" type="FAIL">tests: 2 failed
review: reviewer timed out
</failure>
  </testcase>
</testsuite>
"#;
        assert_eq!(junit(&v), expected);
    }
}
