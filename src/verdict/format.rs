//! The verdict for each audience: `text` for people at a terminal, `json` (the verdict document
//! itself), `junit` for CI test reports (one testcase per gate), and `github` workflow commands
//! that annotate findings on the pull request.

use std::fmt::Write;

use anstyle::{AnsiColor, Style};

use super::{Decision, Finding, GateOutcome, Verdict};

const FINDINGS_SHOWN: usize = 10;
const TAIL_SHOWN: usize = 12;

/// Text for a person. Styles are always emitted; the caller's stream strips them when the
/// output is not a terminal or NO_COLOR is set.
pub fn text(verdict: &Verdict) -> String {
    let bold = Style::new().bold();
    let dim = Style::new().dimmed();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{bold}validator{bold:#} task {} · pipeline {} · attempt {}/{}",
        verdict.task, verdict.pipeline, verdict.attempt, verdict.max_attempts
    );
    let width = verdict
        .gates
        .iter()
        .map(|g| g.name.len())
        .max()
        .unwrap_or(0);
    for gate in &verdict.gates {
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
            "  {style}{mark} {:<width$}  {:<7}{style:#} {dim}{time:>7}{dim:#}  {}",
            gate.name,
            gate.outcome.as_str(),
            gate.summary
        );
        if matches!(gate.outcome, GateOutcome::Fail | GateOutcome::Error) {
            for finding in gate.findings.iter().take(FINDINGS_SHOWN) {
                let _ = writeln!(out, "      {finding}");
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
                        let _ = writeln!(out, "      {dim}│{dim:#} {line}");
                    }
                }
            }
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
            let _ = writeln!(out, "  {first}");
            for reason in &verdict.reasons[1..] {
                let _ = writeln!(out, "      {reason}");
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
                if ran == 1 { "" } else { "s" },
                human_ms(verdict.duration_ms)
            );
        }
    }
    let warn = AnsiColor::Yellow.on_default();
    for warning in &verdict.warnings {
        let _ = writeln!(out, "{warn}warning{warn:#}: {warning}");
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

/// JUnit XML: one testsuite, one testcase per gate.
pub fn junit(verdict: &Verdict) -> String {
    let count = |outcome: GateOutcome| {
        verdict
            .gates
            .iter()
            .filter(|g| g.outcome == outcome)
            .count()
    };
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuite name=\"validator.{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{:.3}\">",
        xml(&verdict.pipeline),
        verdict.gates.len(),
        count(GateOutcome::Fail),
        count(GateOutcome::Error),
        count(GateOutcome::Skipped),
        verdict.duration_ms as f64 / 1000.0
    );
    for gate in &verdict.gates {
        let _ = write!(
            out,
            "  <testcase classname=\"validator.{}.{}\" name=\"{}\" time=\"{:.3}\"",
            xml(&verdict.pipeline),
            xml(&gate.rule),
            xml(&gate.name),
            gate.duration_ms as f64 / 1000.0
        );
        let element = match gate.outcome {
            GateOutcome::Fail => Some("failure"),
            GateOutcome::Error => Some("error"),
            _ => None,
        };
        match (element, gate.outcome) {
            (Some(element), _) => {
                let mut body = String::new();
                for finding in &gate.findings {
                    let _ = writeln!(body, "{finding}");
                }
                if let Some(tail) = &gate.output_tail {
                    let _ = writeln!(body, "{tail}");
                }
                let _ = writeln!(
                    out,
                    ">\n    <{element} message=\"{}\">{}</{element}>\n  </testcase>",
                    xml(&gate.summary),
                    xml(&body)
                );
            }
            (None, GateOutcome::Skipped) => {
                let _ = writeln!(
                    out,
                    ">\n    <skipped message=\"not reached\"/>\n  </testcase>"
                );
            }
            _ => {
                let _ = writeln!(out, "/>");
            }
        }
    }
    out.push_str("</testsuite>\n");
    out
}

/// Escapes text for XML, dropping characters XML 1.0 cannot hold at all.
fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

/// GitHub Actions workflow commands: an annotation per finding (or per failing gate without
/// findings), then the decision as a plain line.
pub fn github(verdict: &Verdict) -> String {
    let mut out = String::new();
    let warned: Vec<&str> = verdict
        .warnings
        .iter()
        .filter_map(|w| w.split(':').next())
        .collect();
    for gate in &verdict.gates {
        let level = match gate.outcome {
            GateOutcome::Fail if warned.contains(&gate.name.as_str()) => "warning",
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
                data(&finding.message)
            );
        }
    }
    let _ = writeln!(
        out,
        "validator: {} ({} / {})",
        verdict.verdict, verdict.task, verdict.pipeline
    );
    for reason in &verdict.reasons {
        let _ = writeln!(out, "  {reason}");
    }
    out
}

fn annotation_properties(finding: &Finding, title: &str) -> String {
    let mut props = Vec::new();
    if let Some(file) = &finding.file {
        props.push(format!("file={}", property(file)));
        if let Some(line) = finding.line {
            props.push(format!("line={line}"));
        }
        if let Some(col) = finding.column {
            props.push(format!("col={col}"));
        }
    }
    props.push(format!("title={}", property(title)));
    props.join(",")
}

fn data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn property(text: &str) -> String {
    data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_escapes_markup_and_drops_control_characters() {
        assert_eq!(
            xml("<a & \"b\">\u{1b}[0m"),
            "&lt;a &amp; &quot;b&quot;&gt;[0m"
        );
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
}
