//! `go test`: plain and `-v` (`--- FAIL: TestX/sub (0.00s)`, with its duration, so a test
//! printing the words is not taken for one) and `-json` (`"Action":"fail"` events). A failed
//! subtest is named, not also the parent that failed only through it. A package that did not
//! build is "could not run", with the compiler's first error.

use serde_json::Value;

use super::{Failed, Report};

pub fn read(lines: &[&str], report: &mut Report) {
    let mut failed: Vec<Failed> = Vec::new();
    let mut json = false;
    let mut build_failed = false;
    let mut build_errors: Vec<String> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.starts_with('{') && line.contains("\"Action\"") {
            let Ok(event) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            json = true;
            let action = event.get("Action").and_then(Value::as_str);
            let test = event.get("Test").and_then(Value::as_str);
            let output = event.get("Output").and_then(Value::as_str).unwrap_or("");
            match (action, test) {
                (Some("fail"), Some(test)) => failed.push(Failed::named(test)),
                (Some("output"), Some(test)) => {
                    if let Some(known) = failed.iter_mut().find(|f| f.name == test) {
                        why(output, known);
                    } else if let Some((file, number, message)) = logged(output) {
                        // Output comes before the fail event: keep it for the test.
                        failed.push(Failed {
                            file: Some(file),
                            line: Some(number),
                            message: Some(message),
                            ..Failed::named(&format!("\u{0}{test}"))
                        });
                    }
                }
                (Some("build-output"), _) => build_errors.push(output.trim().to_owned()),
                (Some("output"), None) if output.contains("[build failed]") => {
                    build_failed = true;
                }
                _ => {}
            }
            continue;
        }
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix("--- FAIL: ") {
            if let Some((name, duration)) = rest.rsplit_once(" (") {
                if duration.ends_with("s)") && !name.trim().is_empty() {
                    let mut test = Failed::named(name.trim());
                    let depth = line.len() - trimmed.len();
                    for detail in &lines[i + 1..] {
                        let inner = detail.trim_start();
                        if detail.len() - inner.len() <= depth || inner.starts_with("--- ") {
                            break;
                        }
                        if why(inner, &mut test) {
                            break;
                        }
                    }
                    failed.push(test);
                }
            }
        } else if (trimmed.starts_with("FAIL\t") || trimmed.starts_with("FAIL "))
            && (trimmed.ends_with("[build failed]") || trimmed.ends_with("[setup failed]"))
        {
            build_failed = true;
        } else if trimmed.starts_with("# ") {
            if let Some(next) = lines.get(i + 1) {
                build_errors.push(next.trim().to_owned());
            }
        }
    }
    // Output gathered before a test's fail event, under a marked name, goes to that test.
    let (early, mut failed): (Vec<Failed>, Vec<Failed>) = failed
        .into_iter()
        .partition(|f| f.name.starts_with('\u{0}'));
    for note in early {
        let name = &note.name[1..];
        if let Some(test) = failed
            .iter_mut()
            .find(|f| f.name == name && f.message.is_none())
        {
            test.file = note.file;
            test.line = note.line;
            test.message = note.message;
        }
    }
    // A parent fails with its subtest; the subtest is the failure.
    let names: Vec<String> = failed.iter().map(|f| f.name.clone()).collect();
    failed.retain(|f| {
        !names
            .iter()
            .any(|other| other.starts_with(&format!("{}/", f.name)))
    });
    let _ = json;
    for test in failed {
        report.add(test);
    }
    if build_failed {
        let cause = build_errors
            .iter()
            .find(|l| !l.is_empty() && !l.starts_with('#'))
            .map_or("the package did not build".to_owned(), |l| {
                format!("the build failed: {l}")
            });
        report.cannot_run(&cause);
    }
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

/// Fills in a test's first logged failure; true once it has one.
fn why(text: &str, test: &mut Failed) -> bool {
    if test.message.is_some() {
        return true;
    }
    match logged(text) {
        Some((file, number, message)) => {
            test.file = Some(file);
            test.line = Some(number);
            test.message = Some(super::clip(&message));
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::super::from_output;

    fn names(output: &str) -> Vec<String> {
        from_output(output)
            .failed
            .into_iter()
            .map(|f| f.name)
            .collect()
    }

    #[test]
    fn plain_and_verbose_name_the_leaf_with_its_log() {
        let out = "=== RUN   TestParse\n--- FAIL: TestParse (0.00s)\n    --- FAIL: TestParse/empty (0.00s)\n        parse_test.go:12: got 1, want 2\n--- FAIL: TestFake\n--- FAIL: TestOther (0.01s)\n    other_test.go:3: bad\nFAIL\nFAIL\texample.com/pkg\t0.003s\n";
        let report = from_output(out);
        assert_eq!(names(out), ["TestParse/empty", "TestOther"]);
        assert_eq!(report.failed[0].line, Some(12));
        assert_eq!(report.failed[0].message.as_deref(), Some("got 1, want 2"));
    }

    #[test]
    fn json_events_name_the_failures() {
        let out = r#"{"Action":"run","Package":"m","Test":"TestA"}
{"Action":"output","Package":"m","Test":"TestA","Output":"    a_test.go:7: nope\n"}
{"Action":"output","Package":"m","Test":"TestA","Output":"--- FAIL: TestFake (0.00s)\n"}
{"Action":"fail","Package":"m","Test":"TestA","Elapsed":0}
{"Action":"fail","Package":"m","Elapsed":0}
"#;
        let report = from_output(out);
        assert_eq!(names(out), ["TestA"]);
        assert_eq!(report.failed[0].message.as_deref(), Some("nope"));
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
