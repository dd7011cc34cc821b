//! The verdict for each audience: `text` for people at a terminal, `json` (the verdict document
//! itself), `junit` for CI test reports (one testcase per gate and one for the decision), and
//! `github` workflow commands that annotate findings on the pull request.
//!
//! Names, summaries, findings and reasons come from the task, its done signal and the tools the
//! gates ran, so they are untrusted: every such field is printed as exactly one line (see
//! [`validator_text::one_line`]), or a body on its own lines ([`validator_text::each_line`]), so no
//! control, bidirectional or other invisible character reaches a reader raw, and then escaped
//! for where it lands.

use std::fmt::Write;

use anstyle::{AnsiColor, Style};

use super::{Decision, GateOutcome, GateReport, Verdict};
use validator_text::one_line;

mod github;
mod junit;

pub use github::{github, job_summary};
pub use junit::junit;

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
        Some((verdict.attempt, verdict.max_attempts)),
    );
    for gate in &verdict.gates {
        out.push_str(&gate_text(gate, width));
    }
    out.push_str(&text_footer(verdict));
    out
}

/// The first line of [`text`]: what is judged, and which attempt of how many where attempts
/// are counted (`check` alone counts none: an attempt there would be a number nothing keeps).
/// Printed before the run when gates stream.
pub fn text_header(task: &str, pipeline: &str, attempts: Option<(u32, u32)>) -> String {
    let bold = Style::new().bold();
    let attempt = attempts.map_or(String::new(), |(attempt, max)| {
        format!(" · attempt {attempt}/{max}")
    });
    format!(
        "{bold}validator{bold:#} task {} · pipeline {}{attempt}\n",
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
                // Without the lines that say nothing of the failure (passing tests, coverage
                // tables, progress), and how many those were.
                let shown = super::tail::worth_reading(tail);
                let lines = &shown.lines;
                for line in &lines[lines.len().saturating_sub(TAIL_SHOWN)..] {
                    let _ = writeln!(out, "      {dim}│{dim:#} {}", one_line(line));
                }
                if let Some(note) = shown.note() {
                    let _ = writeln!(out, "      {dim}│ … {note}{dim:#}");
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
        validator_text::plural(changed.count)
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
                validator_text::plural(ran),
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

pub(super) fn human_ms(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms}ms")
    } else {
        format!("{:.1}s", ms as f64 / 1000.0)
    }
}

/// The warning under which `gate`'s failure was routed on (`on_fail: CONTINUE`, a jump, PASS),
/// if it was: the run records such a failure as `name: summary` in `verdict.warnings`.
pub(super) fn routed_on<'v>(verdict: &'v Verdict, gate: &GateReport) -> Option<&'v str> {
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

#[cfg(test)]
mod tests {
    use super::github::{annotation_properties, data, github_plain};
    use super::junit::xml_holds;
    use super::*;
    use crate::verdict::Finding;
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
            failed_tests: Vec::new(),
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
                || validator_text::unusual(c) && !c.is_ascii()
        };
        for (format, out) in [
            ("text", text(&v)),
            ("junit", junit(&v)),
            ("github", github(&v)),
            ("summary", job_summary(&v, true)),
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
        let md = job_summary(&v, true);
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
