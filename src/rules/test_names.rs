//! Naming the tests that failed, from the output of cargo test, cargo nextest, pytest and
//! go test, and from JUnit XML reports. A user reads "3 failed: a, b, c", not a 1 MiB log.

use std::collections::BTreeSet;

use quick_xml::events::{BytesStart, Event};
use quick_xml::{Reader, XmlVersion};

use super::MAX_FINDINGS;
use crate::verdict::Finding;

/// A failed test: its name and, when the runner says, the file it lives in and why it failed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Failed {
    pub name: String,
    pub file: Option<String>,
    pub message: Option<String>,
}

impl Failed {
    fn named(name: &str) -> Self {
        Failed {
            name: name.to_owned(),
            file: None,
            message: None,
        }
    }

    pub fn into_finding(self) -> Finding {
        let message = match self.message {
            Some(why) => format!("test failed: {}: {why}", self.name),
            None => format!("test failed: {}", self.name),
        };
        Finding {
            file: self.file,
            ..Finding::new(message)
        }
    }
}

/// Failed tests found in a runner's console output, in order, without repeats.
pub fn from_output(output: &str) -> Vec<Failed> {
    let mut seen = BTreeSet::new();
    let mut failed = Vec::new();
    for line in output.lines() {
        if failed.len() >= MAX_FINDINGS {
            break;
        }
        if let Some(test) = parse_line(line.trim()) {
            if seen.insert(test.name.clone()) {
                failed.push(test);
            }
        }
    }
    failed
}

fn parse_line(line: &str) -> Option<Failed> {
    // cargo test: `test tests::parses ... FAILED`
    if let Some(rest) = line.strip_prefix("test ") {
        if let Some(name) = rest.strip_suffix(" ... FAILED") {
            let name = name.trim();
            return (!name.is_empty()).then(|| Failed::named(name));
        }
        return None;
    }
    // go test: `--- FAIL: TestParse/empty (0.00s)`
    if let Some(rest) = line.strip_prefix("--- FAIL: ") {
        let name = rest.split(" (").next()?.trim();
        return (!name.is_empty()).then(|| Failed::named(name));
    }
    // python -m unittest: `FAIL: test_divide (test_calc.TestCalc.test_divide)` (also ERROR:)
    for status in ["FAIL: ", "ERROR: "] {
        if let Some(rest) = line.strip_prefix(status) {
            let name = match rest
                .split_once(" (")
                .and_then(|(short, full)| Some((short, full.strip_suffix(')')?)))
            {
                // Python 3.11+ prints the full id in the parentheses; older ones the class.
                Some((short, full)) if full.ends_with(short) => full.to_owned(),
                Some((short, class)) => format!("{class}.{short}"),
                None => rest.to_owned(),
            };
            return (!name.is_empty() && !name.contains(' ')).then(|| Failed::named(&name));
        }
    }
    // nextest: `FAIL [   0.004s] (3/10) crate::bin tests::parses` (also TIMEOUT, SIGSEGV...)
    for status in ["FAIL [", "TIMEOUT [", "SIGSEGV [", "SIGABRT [", "SIGKILL ["] {
        if let Some(rest) = line.strip_prefix(status) {
            let after = rest.split_once(']')?.1.trim();
            let after = match after.strip_prefix('(') {
                Some(counted) => counted.split_once(')')?.1.trim(),
                None => after,
            };
            let name = after.rsplit(' ').next()?;
            return (!name.is_empty()).then(|| Failed::named(name));
        }
    }
    // pytest summary: `FAILED tests/test_x.py::test_y - AssertionError: ...` (and ERROR)
    for status in ["FAILED ", "ERROR "] {
        if let Some(rest) = line.strip_prefix(status) {
            let (node, why) = match rest.split_once(" - ") {
                Some((node, why)) => (node.trim(), Some(why.trim().to_owned())),
                None => (rest.trim(), None),
            };
            if node.contains("::") || node.ends_with(".py") {
                return Some(pytest_node(node, why));
            }
        }
    }
    // pytest -v: `tests/test_x.py::test_y FAILED [ 50%]`
    for status in [" FAILED", " ERROR"] {
        if let Some((node, _)) = line.split_once(status) {
            if node.contains("::") && !node.contains(' ') {
                return Some(pytest_node(node, None));
            }
        }
    }
    None
}

fn pytest_node(node: &str, message: Option<String>) -> Failed {
    let file = node
        .split("::")
        .next()
        .filter(|f| f.ends_with(".py"))
        .map(str::to_owned);
    Failed {
        name: node.to_owned(),
        file,
        message,
    }
}

/// Failed test cases in a JUnit XML report: `<testcase>` elements holding `<failure>` or `<error>`.
pub fn from_junit(xml: &str) -> Result<Vec<Failed>, String> {
    let mut reader = Reader::from_str(xml);
    let mut current: Option<Failed> = None;
    let mut failed = Vec::new();
    loop {
        let event = reader.read_event().map_err(|err| {
            format!(
                "not valid JUnit XML at byte {}: {err}",
                reader.buffer_position()
            )
        })?;
        match event {
            Event::Start(element) if element.local_name().as_ref() == "testcase" => {
                current = Some(testcase(&element));
            }
            Event::Start(element) | Event::Empty(element)
                if matches!(element.local_name().as_ref(), "failure" | "error") =>
            {
                if let Some(mut test) = current.take() {
                    test.message = attribute(&element, "message").filter(|m| !m.is_empty());
                    if failed.len() < MAX_FINDINGS {
                        failed.push(test);
                    }
                }
            }
            Event::End(element) if element.local_name().as_ref() == "testcase" => current = None,
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(failed)
}

fn testcase(element: &BytesStart<'_>) -> Failed {
    let name = attribute(element, "name").unwrap_or_default();
    let name = match attribute(element, "classname").filter(|c| !c.is_empty()) {
        Some(class) => format!("{class}::{name}"),
        None => name,
    };
    Failed {
        name,
        file: attribute(element, "file"),
        message: None,
    }
}

pub(super) fn attribute(element: &BytesStart<'_>, key: &str) -> Option<String> {
    element
        .attributes()
        .flatten()
        .find(|attr| attr.key.local_name().as_ref() == key)
        .and_then(|attr| {
            attr.normalized_value(XmlVersion::Implicit1_0)
                .ok()
                .map(|v| v.into_owned())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(output: &str) -> Vec<String> {
        from_output(output).into_iter().map(|f| f.name).collect()
    }

    #[test]
    fn cargo_test() {
        let out = "running 3 tests\ntest a::ok ... ok\ntest a::broken ... FAILED\ntest b::also ... FAILED\n\nfailures:\n    a::broken\n";
        assert_eq!(names(out), ["a::broken", "b::also"]);
    }

    #[test]
    fn a_failed_line_without_a_name_names_no_test() {
        // Found by the test_names fuzz target: an empty name made a "test failed: " finding.
        assert!(names("test   ... FAILED\ntest  ... FAILED\n").is_empty());
    }

    #[test]
    fn nextest_old_and_new_formats() {
        let out = "        FAIL [   0.004s] mycrate tests::broken\n        FAIL [   0.010s] (2/9) mycrate::bin/tool cli::exits\n     TIMEOUT [  60.001s] mycrate slow::one\n        FAIL [   0.004s] mycrate tests::broken\n";
        assert_eq!(names(out), ["tests::broken", "cli::exits", "slow::one"]);
    }

    #[test]
    fn pytest_summary_and_verbose() {
        let out = "tests/test_a.py::test_one FAILED                [ 50%]\n=== short test summary info ===\nFAILED tests/test_a.py::test_one - assert 1 == 2\nERROR tests/test_b.py::test_two - ImportError\n";
        let found = from_output(out);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].name, "tests/test_a.py::test_one");
        assert_eq!(found[0].file.as_deref(), Some("tests/test_a.py"));
        assert_eq!(found[1].message.as_deref(), Some("ImportError"));
    }

    #[test]
    fn python_unittest() {
        let out = "======\nFAIL: test_divide (test_calc.TestCalc.test_divide)\n------\nERROR: test_load (test_io.TestIo.test_load)\nFAIL: test_old_style (test_calc.TestCalc)\n";
        assert_eq!(
            names(out),
            [
                "test_calc.TestCalc.test_divide",
                "test_io.TestIo.test_load",
                "test_calc.TestCalc.test_old_style"
            ]
        );
    }

    #[test]
    fn go_test() {
        let out = "=== RUN   TestParse\n--- FAIL: TestParse (0.00s)\n    --- FAIL: TestParse/empty (0.00s)\nFAIL\nFAIL\texample.com/pkg\t0.003s\n";
        assert_eq!(names(out), ["TestParse", "TestParse/empty"]);
    }

    #[test]
    fn junit_reports() {
        let xml = r#"<?xml version="1.0"?>
<testsuites><testsuite name="s">
  <testcase classname="auth.Login" name="rejects &amp; logs" file="tests/auth.py"><failure message="expected 401">trace</failure></testcase>
  <testcase classname="auth.Login" name="accepts"/>
  <testcase name="crashes"><error/></testcase>
</testsuite></testsuites>"#;
        let found = from_junit(xml).unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].name, "auth.Login::rejects & logs");
        assert_eq!(found[0].file.as_deref(), Some("tests/auth.py"));
        assert_eq!(found[0].message.as_deref(), Some("expected 401"));
        assert_eq!(found[1].name, "crashes");
        assert!(from_junit("<testsuite><testcase").is_err());
    }
}
