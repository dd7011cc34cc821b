//! The feedback text (`<task>.feedback.md`): the verdict as at most 60 lines an agent can act
//! on. Failing gates first, their findings with file:line, the tail of the relevant output,
//! and what to do next.

use super::{Decision, GateOutcome, GateReport, Verdict};

/// Hard limit on the feedback's length.
pub const MAX_LINES: usize = 60;
const MAX_LINE_CHARS: usize = 300;

pub fn render(verdict: &Verdict) -> String {
    let mut head = vec![
        format!(
            "# validator: {} (task {}, attempt {} of {})",
            verdict.verdict, verdict.task, verdict.attempt, verdict.max_attempts
        ),
        String::new(),
    ];
    let next = next_steps(verdict);
    let failing: Vec<&GateReport> = verdict
        .gates
        .iter()
        .filter(|g| matches!(g.outcome, GateOutcome::Fail | GateOutcome::Error))
        .collect();

    let mut body = Vec::new();
    // Reasons that only repeat a failing gate's line are said once, under "What failed".
    let repeats = |reason: &String| {
        failing
            .iter()
            .any(|g| *reason == format!("{}: {}", g.name, g.summary))
    };
    let reasons: Vec<&String> = verdict.reasons.iter().filter(|r| !repeats(r)).collect();
    if !reasons.is_empty() {
        body.push("## Why".to_string());
        body.extend(reasons.iter().map(|r| format!("- {r}")));
        body.push(String::new());
    }
    if !failing.is_empty() {
        body.push("## What failed".to_string());
        for gate in &failing {
            body.push(format!("- {} ({}): {}", gate.name, gate.rule, gate.summary));
            let shown = gate.findings.len().min(12);
            body.extend(gate.findings[..shown].iter().map(|f| format!("  - {f}")));
            if gate.findings.len() > shown {
                body.push(format!("  - … and {} more", gate.findings.len() - shown));
            }
        }
        body.push(String::new());
    }
    if !verdict.warnings.is_empty() {
        body.push("## Warnings (reported, not blocking)".to_string());
        body.extend(verdict.warnings.iter().map(|w| format!("- {w}")));
        body.push(String::new());
    }

    // The output tail of the first failing gate that has one fills whatever room is left.
    let room = MAX_LINES.saturating_sub(head.len() + body.len() + next.len() + 4);
    if let Some(gate) = failing.iter().find(|g| g.output_tail.is_some()) {
        if room >= 3 {
            let tail = gate.output_tail.as_deref().unwrap_or_default();
            let lines: Vec<&str> = tail.lines().collect();
            let keep = lines.len().min(room);
            body.push(format!("## Output of `{}` (last {keep} lines)", gate.name));
            body.push("```".to_string());
            body.extend(lines[lines.len() - keep..].iter().map(|l| l.to_string()));
            body.push("```".to_string());
            body.push(String::new());
        }
    }

    let budget = MAX_LINES - next.len();
    head.extend(body);
    if head.len() > budget {
        head.truncate(budget - 1);
        head.push("… (shortened; the verdict file has everything)".to_string());
    }
    head.extend(next);
    let mut text = head
        .into_iter()
        .map(|line| clip(&line))
        .collect::<Vec<_>>()
        .join("\n");
    text.push('\n');
    text
}

fn next_steps(verdict: &Verdict) -> Vec<String> {
    let left = verdict.max_attempts.saturating_sub(verdict.attempt);
    let advice = match verdict.verdict {
        Decision::Pass => "Every gate passed. Nothing to do.".to_string(),
        Decision::Fail => format!(
            "Fix the problems above in the task's files, then signal done again. {left} attempt{} left before a person is called in.",
            if left == 1 { "" } else { "s" }
        ),
        Decision::Error => "The validator could not judge this run: the rules or the tools are at fault, not your work. Report the reasons above to whoever runs validator and stop; a retry will not help.".to_string(),
        Decision::Blocked => "Stop here. The task is BLOCKED and a person decides how it goes on.".to_string(),
        Decision::Escalated => "Stop here. A circuit breaker tripped; a person must look before anything else runs.".to_string(),
    };
    vec!["## What to do next".to_string(), advice]
}

fn clip(line: &str) -> String {
    if line.chars().count() <= MAX_LINE_CHARS {
        return line.to_owned();
    }
    let mut clipped: String = line.chars().take(MAX_LINE_CHARS - 1).collect();
    clipped.push('…');
    clipped
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
            }],
            reasons: vec!["lint: findings".into()],
            warnings: vec![],
        }
    }

    #[test]
    fn names_the_findings_and_what_to_do() {
        let text = render(&verdict(2, 3));
        assert!(text.starts_with("# validator: FAIL (task t, attempt 1 of 3)"));
        assert!(text.contains("  - src/a.rs:2: bad"));
        assert!(text.contains("out 2"));
        assert!(text.contains("2 attempts left"));
    }

    #[test]
    fn never_exceeds_sixty_lines() {
        for (findings, tail) in [(0, 0), (5, 500), (200, 500), (200, 0)] {
            let text = render(&verdict(findings, tail));
            assert!(
                text.lines().count() <= MAX_LINES,
                "{} lines",
                text.lines().count()
            );
            assert!(text.contains("## What to do next"));
        }
    }
}
