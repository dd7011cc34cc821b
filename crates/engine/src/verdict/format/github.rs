//! GitHub Actions: workflow commands that annotate findings on the pull request, and the job
//! summary in Markdown; nothing a worker or a tool wrote can issue a command.

use std::fmt::Write;

use super::{human_ms, routed_on};
use crate::verdict::{Decision, Finding, GateOutcome, GateReport, Verdict};
use validator_text::{each_line, one_line};

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
/// so it reads as text in a cell, never as Markdown or HTML. The attempt is said only where
/// attempts are `counted` (not by `check` alone).
pub fn job_summary(verdict: &Verdict, counted: bool) -> String {
    let mut out = String::new();
    let mark = match verdict.verdict {
        Decision::Pass => "✅",
        Decision::Fail => "❌",
        _ => "⚠️",
    };
    let attempt = match counted {
        true => format!(", attempt {}/{}", verdict.attempt, verdict.max_attempts),
        false => String::new(),
    };
    let _ = writeln!(
        out,
        "### {mark} validator: {} — task {}, pipeline {}{attempt}\n",
        verdict.verdict,
        md(&verdict.task),
        md(&verdict.pipeline),
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
pub(super) fn github_plain(text: &str) -> String {
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
pub(super) fn annotation_properties(finding: &Finding, title: &str) -> String {
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

/// Whether GitHub can be given `file` as it is: a name [`validator_text::name`] leaves unquoted.
fn placeable(file: &str) -> bool {
    matches!(validator_text::name(file), std::borrow::Cow::Borrowed(_))
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
pub(super) fn data(text: &str) -> String {
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
