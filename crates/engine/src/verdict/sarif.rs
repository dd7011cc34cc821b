//! The verdict as SARIF 2.1.0 (`check --format sarif`), the log code scanning reads
//! (`github/codeql-action/upload-sarif`): a result per finding, at its file and line when the
//! tool said them, and a result per failing gate that found nothing more precise. Everything in
//! it comes from the worker's files and tools and is only ever data: serde writes every string,
//! texts a viewer renders are made inert first ([`validator_text::each_line`]), and no control,
//! bidirectional or invisible character is left raw in the log ([`validator_text::json_inert`]).

use serde_json::{Value, json};

use super::{Finding, GateOutcome, GateReport, Verdict};
use validator_text::{each_line, json_inert, one_line};

/// The SARIF log of `verdict`. Code scanning refuses a result without a place in the
/// repository, so what has none (a gate that failed without findings, a finding without a
/// file, or at a path outside the task) is placed at line 1 of `anchor`, the rules file as the
/// repository names it, and says its own place in its message. So is a finding whose file name
/// holds a control or invisible character: a viewer would show the name's characters raw,
/// where the message shows it quoted and escaped ([`validator_text::name`]).
pub fn sarif(verdict: &Verdict, anchor: &str) -> String {
    let mut results = Vec::new();
    let mut rules: Vec<String> = Vec::new();
    for gate in &verdict.gates {
        let failed = matches!(gate.outcome, GateOutcome::Fail | GateOutcome::Error);
        for finding in &gate.findings {
            results.push(result(gate, finding, failed, &mut rules, anchor));
        }
        if failed && gate.findings.is_empty() {
            results.push(result(
                gate,
                &Finding::new(&gate.summary),
                failed,
                &mut rules,
                anchor,
            ));
        }
    }
    let rules: Vec<Value> = rules
        .iter()
        .map(|id| json!({"id": id, "name": id}))
        .collect();
    let log = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "validator",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "automationDetails": {"id": format!("validator/{}/", one_line(&verdict.pipeline))},
            "results": results,
        }],
    });
    let mut text = json_inert(&serde_json::to_string_pretty(&log).unwrap_or_default()).into_owned();
    text.push('\n');
    text
}

/// One result. Its rule is the tool's code under the gate's name (`lint/F401`), or the gate's
/// name, so code scanning groups alike findings; its level is the tool's severity where it
/// said one, else the gate's outcome.
fn result(
    gate: &GateReport,
    finding: &Finding,
    failed: bool,
    rules: &mut Vec<String>,
    anchor: &str,
) -> Value {
    let rule = one_line(&match &finding.rule {
        Some(code) => format!("{}/{code}", gate.name),
        None => gate.name.clone(),
    });
    let index = match rules.iter().position(|r| *r == rule) {
        Some(index) => index,
        None => {
            rules.push(rule.clone());
            rules.len() - 1
        }
    };
    let level = match finding.severity.as_deref() {
        Some("error" | "fatal") => "error",
        Some("warning" | "warn") => "warning",
        Some(_) => "note",
        None if failed => "error",
        None => "warning",
    };
    // A place in the repository: a relative path that stays inside it, shown as it is.
    let inside = finding.file.as_deref().filter(|file| {
        !file.starts_with('/')
            && !file.split('/').any(|part| part == "..")
            && matches!(validator_text::name(file), std::borrow::Cow::Borrowed(_))
    });
    let message = match (&finding.file, inside) {
        (Some(_), None) => format!("{}: {finding}", gate.name),
        _ => format!("{}: {}", gate.name, finding.text()),
    };
    let (uri, line, column) = match inside {
        Some(file) => (file, finding.line.filter(|&l| l > 0), finding.column),
        None => (anchor, Some(1), None),
    };
    let mut region = json!({});
    if let Some(line) = line {
        region["startLine"] = json!(line);
        if let Some(column) = column.filter(|&c| c > 0) {
            region["startColumn"] = json!(column);
        }
    }
    let mut location = json!({
        "physicalLocation": {"artifactLocation": {"uri": uri_reference(uri), "uriBaseId": "%SRCROOT%"}}
    });
    if line.is_some() {
        location["physicalLocation"]["region"] = region;
    }
    json!({
        "ruleId": rule,
        "ruleIndex": index,
        "level": level,
        "message": {"text": each_line(&message)},
        "locations": [location],
    })
}

/// A relative file name as a URI reference: every byte but unreserved ones and `/`
/// percent-encoded, so spaces, `#`, `?` and `%` in a worker's file names stay part of the name.
fn uri_reference(file: &str) -> String {
    validator_text::uri_path(file.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_name_with_controls_is_told_in_the_message_not_placed() {
        let finding = Finding {
            line: Some(3),
            ..Finding::in_file("a\u{202E}b.rs", "bad \u{9B}2J \u{2066}x")
        };
        let gate = GateReport {
            name: "lint".into(),
            rule: "lint".into(),
            outcome: GateOutcome::Fail,
            duration_ms: 1,
            exit_code: Some(1),
            summary: "1 finding".into(),
            findings: vec![finding.clone()],
            output_tail: None,
            fix: None,
            changed_files: None,
            failed_tests: Vec::new(),
        };
        let value = result(&gate, &finding, true, &mut Vec::new(), "validator.yaml");
        assert_eq!(
            value["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "validator.yaml"
        );
        assert_eq!(
            value["message"]["text"],
            "lint: \"a\\u202eb.rs\":3: bad  2J \u{FFFD}x"
        );
    }

    #[test]
    fn file_names_are_uri_references() {
        assert_eq!(uri_reference("src/a b#1?.rs"), "src/a%20b%231%3F.rs");
        assert_eq!(uri_reference("é.py"), "%C3%A9.py");
    }
}
