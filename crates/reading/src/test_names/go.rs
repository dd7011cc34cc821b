//! `go test` and gotestsum. Plain and `-v` output (`--- FAIL: TestX/sub (0.00s)`, with its
//! duration; under `-v` only for a test a `=== RUN` line started, and never in a package that
//! ended `ok`, so a test printing the words is not taken for one), `-json` (its `fail` events,
//! read only when the output is go's JSON stream: a JSON line in plain output is something a
//! test printed), and gotestsum's `=== FAIL: pkg TestX (0.00s)`. A failed subtest is named,
//! not also the parent that failed only through it. A package that did not build is "could
//! not run", with the compiler's first error.
//!
//! One case stays ambiguous, as it is for go's own tools (test2json, gotestsum): in plain
//! output a test of a failing package that prints a `--- FAIL: X (0.00s)` line of its own.

use serde_json::Value;

use super::{Failed, Report};
use crate::MAX_FINDINGS;

pub fn read(lines: &[&str], report: &mut Report) {
    if !lines.iter().any(|l| is_go(l)) {
        return;
    }
    // `go test -json` speaks JSON from its first line (bar a build's errors); in plain output
    // a JSON line is something a test printed, after go's own first line.
    let json = lines
        .iter()
        .find(|l| is_event(l) || is_plain_marker(l))
        .is_some_and(|l| is_event(l));
    let mut failed = if json {
        from_json(lines)
    } else {
        from_text(lines)
    };
    // A parent fails with its subtest; the subtest is the failure.
    let parents: std::collections::HashSet<String> = failed
        .iter()
        .flat_map(|f| {
            let name = f.name.as_str();
            name.match_indices('/')
                .map(move |(at, _)| name[..at].to_owned())
        })
        .collect();
    failed.retain(|f| !parents.contains(&f.name));
    for test in failed {
        report.add(test);
    }
    if let Some(cause) = build_failure(lines) {
        report.cannot_run(&cause);
    }
}

/// A line only go's tools print: a package's result, a JSON event, `=== RUN`, gotestsum's.
fn is_go(line: &str) -> bool {
    line.starts_with("ok  \t")
        || line.starts_with("FAIL\t")
        || line.starts_with("=== RUN   ")
        || line.starts_with("=== FAIL: ")
        || line.starts_with("DONE ") && line.contains(" tests")
        || is_event(line)
}

/// One of go's own lines in plain output.
fn is_plain_marker(line: &str) -> bool {
    line.starts_with("=== RUN   ")
        || line.trim_start().starts_with("--- FAIL: ")
        || line.starts_with("ok  \t")
        || line.starts_with("FAIL\t")
}

fn is_event(line: &str) -> bool {
    line.starts_with('{') && line.contains("\"Action\"") && line.contains("\"Package\"")
}

fn from_json(lines: &[&str]) -> Vec<Failed> {
    let mut failed: Vec<Failed> = Vec::new();
    // A test go started has a `run` event; test2json also turns a `--- FAIL:` line a test
    // printed into `fail` events, for a test that never ran.
    let mut ran: std::collections::HashSet<String> = std::collections::HashSet::new();
    // A test's first logged line, from its output events (they come before its fail event).
    let mut logged_by: Vec<(String, (String, u32, String))> = Vec::new();
    for line in lines.iter().filter(|l| is_event(l)) {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let text = |key: &str| event.get(key).and_then(Value::as_str);
        let Some(test) = text("Test") else {
            continue;
        };
        match text("Action") {
            Some("run") if ran.len() < 100_000 => {
                ran.insert(test.to_owned());
            }
            Some("fail") if failed.len() < MAX_FINDINGS && ran.contains(test) => {
                let mut found = Failed::named(test);
                if let Some((_, (file, number, message))) =
                    logged_by.iter().find(|(name, _)| name == test)
                {
                    found.file = Some(file.clone());
                    found.line = Some(*number);
                    found.message = Some(super::clip(message));
                }
                failed.push(found);
            }
            Some("output")
                if logged_by.len() < MAX_FINDINGS
                    && !logged_by.iter().any(|(name, _)| name == test) =>
            {
                if let Some(log) = logged(text("Output").unwrap_or_default()) {
                    logged_by.push((test.to_owned(), log));
                }
            }
            _ => {}
        }
    }
    failed
}

fn from_text(lines: &[&str]) -> Vec<Failed> {
    let verbose = lines.iter().any(|l| l.starts_with("=== RUN   "));
    let mut started: std::collections::HashSet<&str> = std::collections::HashSet::new();
    // Under -v, a test's first logged line, from its `=== RUN` to its result: read as the lines
    // go by, so each line is looked at once.
    let mut running: Option<&str> = None;
    let mut logs: std::collections::HashMap<&str, (String, u32, String)> =
        std::collections::HashMap::new();
    let mut failed: Vec<Failed> = Vec::new();
    // Failures of the package being read, kept once its result line says FAIL.
    let mut pending: Vec<Failed> = Vec::new();
    let keep = |failed: &mut Vec<Failed>, pending: &mut Vec<Failed>| {
        let room = (2 * MAX_FINDINGS).saturating_sub(failed.len());
        failed.extend(pending.drain(..).take(room));
    };
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        if let Some(name) = trimmed.strip_prefix("=== RUN   ") {
            let name = name.trim();
            if started.len() < 100_000 {
                started.insert(name);
            }
            running = Some(name);
            continue;
        }
        if line.starts_with("ok  \t") {
            pending.clear();
            continue;
        }
        if line.starts_with("FAIL\t") {
            keep(&mut failed, &mut pending);
            continue;
        }
        // gotestsum: `=== FAIL: pkg TestX (0.00s)`
        if let Some(rest) = line.strip_prefix("=== FAIL: ") {
            if let Some(name) = rest
                .split_once(' ')
                .and_then(|(_, test)| with_duration(test))
            {
                if pending.len() < MAX_FINDINGS {
                    pending.push(Failed::named(name));
                }
            }
            continue;
        }
        let Some(name) = trimmed.strip_prefix("--- FAIL: ").and_then(with_duration) else {
            if let (Some(test), Some(log)) = (running, logged(trimmed)) {
                if logs.len() < 100_000 {
                    logs.entry(test).or_insert(log);
                }
            }
            continue;
        };
        if verbose && !started.contains(name) {
            continue;
        }
        let mut test = Failed::named(name);
        if let Some((file, number, message)) = logs.get(name) {
            test.file = Some(file.clone());
            test.line = Some(*number);
            test.message = Some(super::clip(message));
        } else {
            // Plain output prints a test's log after its result, indented under it.
            let depth = line.len() - trimmed.len();
            for detail in lines[i + 1..].iter().take(64) {
                let inner = detail.trim_start();
                if detail.len() - inner.len() <= depth || inner.starts_with("--- ") {
                    break;
                }
                if let Some((file, number, message)) = logged(inner) {
                    test.file = Some(file);
                    test.line = Some(number);
                    test.message = Some(super::clip(&message));
                    break;
                }
            }
        }
        if pending.len() < MAX_FINDINGS {
            pending.push(test);
        }
    }
    // Output cut before its package's result line (or gotestsum's, which has none): kept.
    keep(&mut failed, &mut pending);
    failed
}

/// `TestX/sub (0.00s)` → `TestX/sub`: the duration go prints on its own result lines.
fn with_duration(text: &str) -> Option<&str> {
    let (name, duration) = text.rsplit_once(" (")?;
    let seconds = duration.strip_suffix("s)")?;
    (seconds.parse::<f64>().is_ok() && !name.trim().is_empty()).then(|| name.trim())
}

/// `x_test.go:12: got 1, want 2` as `go test` prints a test's log, indented.
fn logged(text: &str) -> Option<(String, u32, String)> {
    let text = text.trim();
    let (file, rest) = text.split_once(':')?;
    if !file.ends_with(".go") || file.contains(' ') {
        return None;
    }
    let (number, message) = rest.split_once(": ")?;
    Some((
        file.to_owned(),
        number.parse().ok()?,
        message.trim().to_owned(),
    ))
}

/// `FAIL pkg [build failed]` (also inside gotestsum's and test2json's complaints): the first
/// compiler error after a `# pkg` line, or under gotestsum's `=== Errors`.
fn build_failure(lines: &[&str]) -> Option<String> {
    if !lines.iter().any(|l| {
        l.contains("FAIL") && (l.ends_with("[build failed]") || l.ends_with("[setup failed]"))
    }) {
        return None;
    }
    let error = lines
        .iter()
        .enumerate()
        .find(|(_, l)| l.starts_with("# ") || l.starts_with("=== Errors"))
        .and_then(|(i, _)| lines.get(i + 1))
        .map(|l| l.trim())
        .filter(|l| !l.is_empty());
    Some(match error {
        Some(error) => format!("the build failed: {error}"),
        None => "the package did not build".to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::super::{from_output, names};

    #[test]
    fn plain_output_names_the_leaf_with_its_log() {
        let out = "--- FAIL: TestParse (0.00s)\n    --- FAIL: TestParse/empty (0.00s)\n        parse_test.go:12: got 1, want 2\n--- FAIL: TestFake\n--- FAIL: TestOther (0.01s)\n    other_test.go:3: bad\nFAIL\nFAIL\texample.com/pkg\t0.003s\n--- FAIL: TestPrinted (0.00s)\nok  \texample.com/fine\t0.001s\n";
        let report = from_output(out);
        assert_eq!(names(out), ["TestParse/empty", "TestOther"]);
        assert_eq!(report.failed[0].line, Some(12));
        assert_eq!(report.failed[0].message.as_deref(), Some("got 1, want 2"));
    }

    #[test]
    fn verbose_output_names_only_tests_that_ran() {
        let out = "=== RUN   TestA\n--- FAIL: TestA (0.00s)\n=== RUN   TestPrinter\n--- FAIL: TestFake (0.00s)\n--- PASS: TestPrinter (0.00s)\nFAIL\texample.com/m\t0.01s\n";
        assert_eq!(names(out), ["TestA"]);
    }

    #[test]
    fn json_events_name_the_failures() {
        let out = r#"{"Action":"run","Package":"m","Test":"TestA"}
{"Action":"output","Package":"m","Test":"TestA","Output":"    a_test.go:7: nope\n"}
{"Action":"output","Package":"m","Test":"TestA","Output":"--- FAIL: TestFake (0.00s)\n"}
{"Action":"fail","Package":"m","Test":"TestFake","Elapsed":0}
{"Action":"fail","Package":"m","Test":"TestA","Elapsed":0}
{"Action":"fail","Package":"m","Elapsed":0}
"#;
        let report = from_output(out);
        assert_eq!(names(out), ["TestA"]);
        assert_eq!(report.failed[0].message.as_deref(), Some("nope"));
    }

    #[test]
    fn a_json_line_in_plain_output_is_only_printed_text() {
        let out = "--- FAIL: TestA (0.00s)\n{\"Action\":\"fail\",\"Package\":\"m\",\"Test\":\"TestFakeJSON\"}\nFAIL\texample.com/m\t0.01s\n";
        assert_eq!(names(out), ["TestA"]);
    }

    #[test]
    fn a_build_failure_is_tests_that_could_not_run() {
        let out = "# example.com/m [example.com/m.test]\n./m.go:5:2: undefined: y\nFAIL\texample.com/m [build failed]\nFAIL\n";
        let report = from_output(out);
        assert!(report.failed.is_empty());
        assert_eq!(
            report.could_not_run.as_deref(),
            Some("the build failed: ./m.go:5:2: undefined: y")
        );
    }
}
