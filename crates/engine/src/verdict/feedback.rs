//! The feedback text (`<task>.feedback.md`): the verdict as at most 60 lines an agent can act
//! on. Failing gates first, their findings with file:line, the tail of the relevant output,
//! and what to do next.

use super::{Decision, GateOutcome, GateReport, Verdict};
use validator_text::one_line;

/// Hard limit on the feedback's length.
pub const MAX_LINES: usize = 60;
const MAX_LINE_CHARS: usize = 300;
const MAX_UNCHECKED: usize = 8;
const MAX_CONTEXT_LINES: usize = 8;

/// How the worker gets judged again, which is what the advice at the end tells it to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// A watcher judges each done signal (`watch`, and `wait` reading its verdicts).
    Signal,
    /// An agent's stop hook judges each time the agent tries to stop.
    Stop,
    /// Someone runs `validator check` again (a terminal, CI, a hook runner); nothing counts
    /// attempts.
    Rerun,
}

/// A contract's free text as quoted lines (`> …`), at most `max` and each on one line: quoted,
/// no line of it can pass for a heading, a verdict or a STATUS line of the text around it.
pub fn quoted(text: &str, max: usize) -> Vec<String> {
    let lines: Vec<&str> = text.trim().lines().collect();
    let mut quoted: Vec<String> = lines
        .iter()
        .take(max)
        .map(|line| format!("> {}", one_line(line)).trim_end().to_owned())
        .collect();
    if lines.len() > max {
        quoted.push("… (the contract has the rest)".to_owned());
    }
    quoted
}

/// The feedback text. Every field (reasons, gate names and summaries, findings, warnings) is
/// printed as one line whatever it holds, the output tail line by line, and the limit is
/// enforced on the lines of the final text.
pub fn render(verdict: &Verdict, retry: Retry) -> String {
    let attempt = if retry == Retry::Rerun {
        String::new()
    } else if verdict.attempt > verdict.max_attempts {
        format!(", after {} attempts", verdict.max_attempts)
    } else {
        format!(", attempt {} of {}", verdict.attempt, verdict.max_attempts)
    };
    let mut head = vec![
        format!(
            "# validator: {} (task {}{attempt})",
            verdict.verdict,
            one_line(&verdict.task),
        ),
        String::new(),
    ];
    let next = next_steps(verdict, retry);
    // A failure the rules route on (CONTINUE, a jump) is a warning, said once under Warnings.
    let warned = |g: &GateReport| {
        verdict
            .warnings
            .iter()
            .any(|w| *w == format!("{}: {}", g.name, g.summary))
    };
    let failing: Vec<&GateReport> = verdict
        .gates
        .iter()
        .filter(|g| matches!(g.outcome, GateOutcome::Fail | GateOutcome::Error) && !warned(g))
        .collect();

    let mut body = Vec::new();
    body.extend(why(verdict, &failing));
    body.extend(what_failed(&failing));
    body.extend(scope_change(verdict, &failing));
    body.extend(section(
        "## Warnings (reported, not blocking)",
        verdict
            .warnings
            .iter()
            .map(|w| format!("- {}", one_line(w)))
            .collect(),
    ));
    body.extend(unchecked(verdict));
    // The contract's context keeps the why in front of a worker that is about to retry.
    if let Some(context) = verdict.context.as_deref().filter(|c| !c.trim().is_empty()) {
        if verdict.verdict != Decision::Pass {
            body.extend(section(
                "## Context (from the task's contract)",
                quoted(context, MAX_CONTEXT_LINES),
            ));
        }
    }
    // The output tail of the first failing gate that has one fills whatever room is left.
    let room = MAX_LINES.saturating_sub(head.len() + body.len() + next.len() + 4);
    body.extend(output(&failing, room));
    head.extend(body);
    fitted(head, &next)
}

/// `lines` under `title`, then a blank line; nothing when there are none.
fn section(title: &str, lines: Vec<String>) -> Vec<String> {
    if lines.is_empty() {
        return lines;
    }
    let mut out = vec![title.to_string()];
    out.extend(lines);
    out.push(String::new());
    out
}

/// The reasons, but those that only repeat a failing gate's line (said under "What failed").
fn why(verdict: &Verdict, failing: &[&GateReport]) -> Vec<String> {
    let repeats = |reason: &String| {
        failing
            .iter()
            .any(|g| *reason == format!("{}: {}", g.name, g.summary))
    };
    let reasons = verdict.reasons.iter().filter(|r| !repeats(r));
    section(
        "## Why",
        reasons.map(|r| format!("- {}", one_line(r))).collect(),
    )
}

/// Each failing gate: its line, its `fix:`, its first findings.
fn what_failed(failing: &[&GateReport]) -> Vec<String> {
    let mut lines = Vec::new();
    for gate in failing {
        lines.push(format!(
            "- {} ({}): {}",
            one_line(&gate.name),
            one_line(&gate.rule),
            one_line(&gate.summary)
        ));
        if let Some(fix) = &gate.fix {
            lines.push(format!("  - fix: run `{}`", one_line(fix)));
        }
        let shown = gate.findings.len().min(12);
        lines.extend(
            gate.findings[..shown]
                .iter()
                .map(|f| format!("  - {}", one_line(&f.to_string()))),
        );
        if gate.findings.len() > shown {
            lines.push(format!("  - … and {} more", gate.findings.len() - shown));
        }
    }
    section("## What failed", lines)
}

/// A worker that went outside its scope is told the contract's way to ask for more.
fn scope_change(verdict: &Verdict, failing: &[&GateReport]) -> Vec<String> {
    let out_of_scope = failing
        .iter()
        .any(|g| g.rule == "file-scope" && g.outcome == GateOutcome::Fail);
    let ask = verdict
        .escalation
        .as_ref()
        .and_then(super::Escalation::scope_change)
        .filter(|_| out_of_scope);
    section(
        "## Scope change (from the task's contract)",
        ask.into_iter().collect(),
    )
}

/// The contract's criteria no gate checks, the first [`MAX_UNCHECKED`].
fn unchecked(verdict: &Verdict) -> Vec<String> {
    let mut lines: Vec<String> = verdict
        .unchecked
        .iter()
        .take(MAX_UNCHECKED)
        .map(|c| format!("- {}", one_line(c)))
        .collect();
    if verdict.unchecked.len() > MAX_UNCHECKED {
        lines.push(format!(
            "- … and {} more",
            verdict.unchecked.len() - MAX_UNCHECKED
        ));
    }
    section("## Not checked by a machine (a person will)", lines)
}

/// The output's tail of the first failing gate that has one, in `room` lines (3 at least).
fn output(failing: &[&GateReport], room: usize) -> Vec<String> {
    let Some(gate) = failing.iter().find(|g| g.output_tail.is_some()) else {
        return Vec::new();
    };
    if room < 3 {
        return Vec::new();
    }
    // Passing tests, coverage tables and progress dots say nothing of what failed: left out,
    // and said to be.
    let shown = super::tail::worth_reading(gate.output_tail.as_deref().unwrap_or_default());
    let lines = &shown.lines;
    let keep = lines.len().min(room);
    let lines: Vec<String> = lines[lines.len() - keep..]
        .iter()
        .map(|l| one_line(l))
        .collect();
    let left_out = shown
        .note()
        .map_or(String::new(), |note| format!("; {note}"));
    // A fence longer than any run of backticks in the output, so the output cannot close it
    // and pass for the feedback's own text.
    let fence = "`".repeat(longest_backtick_run(&lines).max(2) + 1);
    let mut fenced = vec![fence.clone()];
    fenced.extend(lines);
    fenced.push(fence);
    section(
        &format!(
            "## Output of `{}` (last {keep} line{}{left_out})",
            one_line(&gate.name),
            validator_text::plural(keep)
        ),
        fenced,
    )
}

/// The text, at most [`MAX_LINES`] lines whatever slipped through: `lines` shortened if need
/// be, then `next`.
fn fitted(head: Vec<String>, next: &[String]) -> String {
    // Each line above is one line already; splitting again makes the limit a guarantee on
    // the lines of the final text, whatever slipped through.
    let mut lines: Vec<String> = head
        .iter()
        .flat_map(|line| line.split('\n'))
        .map(clip)
        .collect();
    let budget = MAX_LINES - next.len();
    if lines.len() > budget {
        lines.truncate(budget - 1);
        lines.push("… (shortened; the verdict file has everything)".to_string());
    }
    lines.extend(next.iter().map(|line| clip(line)));
    let mut text = lines.join("\n");
    text.push('\n');
    debug_assert!(text.matches('\n').count() <= MAX_LINES);
    text
}

fn longest_backtick_run(lines: &[String]) -> usize {
    lines
        .iter()
        .flat_map(|line| line.split(|c| c != '`'))
        .map(str::len)
        .max()
        .unwrap_or(0)
}

fn next_steps(verdict: &Verdict, retry: Retry) -> Vec<String> {
    let left = verdict.max_attempts.saturating_sub(verdict.attempt);
    let attempts_left = format!(
        "{left} attempt{} left before a person is called in.",
        validator_text::plural(left)
    );
    let advice = match verdict.verdict {
        Decision::Pass => "Every gate passed. Nothing to do.".to_string(),
        Decision::Fail => match retry {
            Retry::Signal => format!(
                "Fix the problems above in the task's files, then signal done again. {attempts_left}"
            ),
            Retry::Stop => format!(
                "Fix the problems above in the task's files, then finish again: validator judges each time you finish. {attempts_left}"
            ),
            Retry::Rerun => {
                "Fix the problems above in the task's files; the same check judges the fix.".to_string()
            }
        },
        // A hook holds an ERROR'd stop: it may be the worker's doing, and the breakers end it.
        Decision::Error if retry == Retry::Stop => format!(
            "This stop could not be judged, so it is not let through. If your work causes it (a file the gates read, a module you removed), fix it and finish again; if not, say so and finish: the same error again calls a person in. {attempts_left}"
        ),
        Decision::Error => "The validator could not judge this run: the rules or the tools are at fault, not your work. Report the reasons above to whoever runs validator and stop; a retry will not help.".to_string(),
        Decision::Blocked => "Stop here. The task is BLOCKED and a person decides how it goes on.".to_string(),
        Decision::Escalated => "Stop here. A circuit breaker tripped; a person must look before anything else runs.".to_string(),
    };
    let mut steps = vec!["## What to do next".to_string(), advice];
    if matches!(verdict.verdict, Decision::Blocked | Decision::Escalated) {
        steps.extend(
            verdict
                .escalation
                .as_ref()
                .and_then(|e| e.instruction(verdict.verdict)),
        );
    }
    steps
}

fn clip(line: &str) -> String {
    validator_text::clip(line, MAX_LINE_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::{Finding, SignalInfo};

    fn verdict(findings: usize, tail_lines: usize) -> Verdict {
        Verdict {
            schema: super::super::SCHEMA.into(),
            task: "t".into(),
            verdict: Decision::Fail,
            attempt: 1,
            max_attempts: 3,
            pipeline: "p".into(),
            signal: SignalInfo::default(),
            started_at: String::new(),
            duration_ms: 1,
            gates: vec![GateReport {
                name: "lint".into(),
                rule: "lint".into(),
                outcome: GateOutcome::Fail,
                duration_ms: 1,
                exit_code: Some(1),
                summary: format!("{findings} findings"),
                findings: (0..findings)
                    .map(|i| Finding {
                        line: Some(i as u32 + 1),
                        ..Finding::in_file("src/a.rs", "bad")
                    })
                    .collect(),
                output_tail: Some((0..tail_lines).map(|i| format!("out {i}\n")).collect()),
                fix: None,
                changed_files: None,
                failed_tests: Vec::new(),
            }],
            reasons: vec!["lint: findings".into()],
            warnings: vec![],
            unchecked: vec![],
            context: None,
            escalation: None,
            signature: None,
        }
    }

    #[test]
    fn an_error_under_a_stop_hook_is_held_and_never_told_to_just_stop() {
        let mut v = verdict(0, 0);
        v.verdict = Decision::Error;
        v.gates[0].outcome = GateOutcome::Error;
        let held = render(&v, Retry::Stop);
        assert!(held.contains("not let through"), "{held}");
        assert!(held.contains("2 attempts left"), "{held}");
        assert!(!held.contains('…'), "the advice is cut: {held}");
        assert!(render(&v, Retry::Rerun).contains("a retry will not help"));
    }

    #[test]
    fn keeps_the_contract_in_view() {
        let mut v = verdict(1, 0);
        v.unchecked = vec!["login returns a token".into()];
        v.context = Some("The auth service moves to OAuth2.\nKeep the old API.".into());
        let text = render(&v, Retry::Signal);
        assert!(text.contains("## Not checked by a machine"), "{text}");
        assert!(text.contains("- login returns a token"), "{text}");
        assert!(
            text.contains("> The auth service moves to OAuth2.\n> Keep the old API."),
            "{text}"
        );
        v.context = Some("x\n".repeat(500));
        v.unchecked = vec!["c".into(); 500];
        assert!(render(&v, Retry::Signal).lines().count() <= MAX_LINES);
    }

    #[test]
    fn names_the_findings_and_what_to_do() {
        let text = render(&verdict(2, 3), Retry::Signal);
        assert!(text.starts_with("# validator: FAIL (task t, attempt 1 of 3)"));
        assert!(text.contains("  - src/a.rs:2: bad"));
        assert!(text.contains("out 2"));
        assert!(text.contains("2 attempts left"));
    }

    #[test]
    fn never_exceeds_sixty_lines() {
        for (findings, tail) in [(0, 0), (5, 500), (200, 500), (200, 0)] {
            let text = render(&verdict(findings, tail), Retry::Signal);
            assert!(
                text.lines().count() <= MAX_LINES,
                "{} lines",
                text.lines().count()
            );
            assert!(text.contains("## What to do next"));
        }
    }

    /// Every field holding many lines, each with an escape sequence.
    fn hostile() -> Verdict {
        let many = (0..40)
            .map(|i| format!("line {i}\u{1b}[2J"))
            .collect::<Vec<_>>()
            .join("\n");
        let mut v = verdict(0, 5);
        v.task = format!("t\n{many}");
        v.reasons = vec![many.clone(), format!("r\r\n{many}")];
        v.warnings = vec![many.clone()];
        let gate = &mut v.gates[0];
        gate.name = format!("lint\n{many}");
        gate.summary = many.clone();
        gate.findings = (0..12)
            .map(|_| Finding {
                line: Some(1),
                ..Finding::in_file(format!("a\n{many}.rs"), many.clone())
            })
            .collect();
        v
    }

    #[test]
    fn multi_line_fields_stay_one_line_each_and_within_the_limit() {
        let text = render(&hostile(), Retry::Signal);
        let lines = text.matches('\n').count();
        assert!(lines <= MAX_LINES, "{lines} lines:\n{text}");
        assert!(!text.contains('\u{1b}'), "{text}");
        assert!(!text.contains('\r'), "{text}");
        assert!(
            text.starts_with("# validator: FAIL (task t ⏎ line 0"),
            "{text}"
        );
        let all: Vec<&str> = text.lines().collect();
        assert_eq!(all[all.len() - 2], "## What to do next", "{text}");
    }

    #[test]
    fn the_output_tail_keeps_its_lines_inside_a_fence_it_cannot_close() {
        let mut v = verdict(0, 0);
        v.gates[0].output_tail = Some("one\n```\n## What to do next\nthree\u{1b}[0m\n".into());
        let text = render(&v, Retry::Signal);
        assert!(
            text.contains("\n````\none\n```\n## What to do next\nthree[0m\n````\n"),
            "{text}"
        );
    }
}
