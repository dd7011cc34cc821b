//! Naming the tests that failed, and telling a run whose tests failed from one whose tests
//! could not run at all (an import or collection error, a compile error). A user reads "3
//! failed: a, b, c" or "the tests could not run: ModuleNotFoundError: No module named 'x'",
//! not a 1 MiB log.
//!
//! Each runner's reader (`libtest`: cargo test and nextest; `python`: pytest and unittest;
//! `go`; `js`: node --test, jest, vitest, mocha) looks only where its runner prints its own
//! verdicts (a closing summary where there is one, never a test's captured output), so text a
//! test prints cannot name a test. JUnit XML reports are read by [`from_junit`], and a test a
//! report and the console both name is one test ([`same_test`]).

mod go;
mod js;
mod libtest;
mod python;

use quick_xml::events::{BytesStart, Event};
use quick_xml::{Reader, XmlVersion};

use super::MAX_FINDINGS;
use crate::verdict::Finding;

/// Longest message kept for one failed test: the assertion or panic, not its backtrace.
const MAX_MESSAGE_CHARS: usize = 400;

/// A failed test: its name and, when the runner says, where it failed and why.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Failed {
    pub name: String,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub message: Option<String>,
}

impl Failed {
    pub fn named(name: &str) -> Self {
        Failed {
            name: name.to_owned(),
            file: None,
            line: None,
            message: None,
        }
    }

    fn because(mut self, message: Option<String>) -> Self {
        self.message = message.map(|m| clip(m.trim())).filter(|m| !m.is_empty());
        self
    }

    pub fn into_finding(self) -> Finding {
        let message = match self.message {
            Some(why) => format!("test failed: {}: {why}", self.name),
            None => format!("test failed: {}", self.name),
        };
        Finding {
            file: self.file,
            line: self.line,
            ..Finding::new(message)
        }
    }
}

/// What a runner's output says of a run that failed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// The failed tests, in the order the runner named them, each once.
    pub failed: Vec<Failed>,
    /// Set when the tests could not run (nothing to name): the cause, in the runner's words.
    pub could_not_run: Option<String>,
}

impl Report {
    /// Adds a failed test unless it is known already (its message or place fills in what the
    /// first sighting lacked).
    pub fn add(&mut self, test: Failed) {
        if test.name.trim().is_empty() {
            return;
        }
        if let Some(known) = self
            .failed
            .iter_mut()
            .find(|k| same_test(&k.name, &test.name))
        {
            if known.message.is_none() {
                known.message = test.message;
            }
            if known.file.is_none() {
                known.file = test.file;
                known.line = test.line;
            }
            return;
        }
        if self.failed.len() < MAX_FINDINGS {
            self.failed.push(test);
        }
    }

    /// The first cause found wins: the runner prints the root cause before what follows it.
    pub fn cannot_run(&mut self, cause: &str) {
        let cause = clip(cause.trim());
        if self.could_not_run.is_none() && !cause.is_empty() {
            self.could_not_run = Some(cause);
        }
    }
}

/// Reads a runner's console output.
pub fn from_output(output: &str) -> Report {
    let lines: Vec<&str> = output.lines().map(str::trim_end).collect();
    let mut report = Report::default();
    libtest::read(&lines, &mut report);
    python::read(&lines, &mut report);
    go::read(&lines, &mut report);
    js::read(&lines, &mut report);
    // Named failures mean the tests ran; a cause found beside them was one test's.
    if !report.failed.is_empty() {
        report.could_not_run = None;
    }
    report
}

/// Whether two names are one test as two reporters write it: `tests/test_a.py::T::test_b` and
/// `tests.test_a.T::test_b`, `math > adds` and `math adds`, `pkg::TestX/sub` and `TestX/sub`:
/// the words of the shorter name end the longer one.
pub fn same_test(a: &str, b: &str) -> bool {
    let words = |name: &str| -> Vec<String> {
        name.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
            .filter(|w| !w.is_empty() && *w != "py")
            .map(str::to_owned)
            .collect()
    };
    let (a, b) = (words(a), words(b));
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    !short.is_empty() && long.ends_with(&short)
}

/// `text` cut to [`MAX_MESSAGE_CHARS`] on a character boundary.
fn clip(text: &str) -> String {
    if text.chars().count() <= MAX_MESSAGE_CHARS {
        return text.to_owned();
    }
    let mut clipped: String = text.chars().take(MAX_MESSAGE_CHARS - 1).collect();
    clipped.push('…');
    clipped
}

/// The lines of a block (a failure's own section) joined for a one-line message: the first
/// `max` non-empty lines, trimmed.
fn joined<'a>(lines: impl IntoIterator<Item = &'a str>, max: usize) -> Option<String> {
    let kept: Vec<&str> = lines
        .into_iter()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(max)
        .collect();
    (!kept.is_empty()).then(|| kept.join(" "))
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
                if let Some(test) = current.take() {
                    let test = test.because(attribute(&element, "message"));
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
        file: attribute(element, "file").filter(|f| !f.is_empty()),
        ..Failed::named(&name)
    }
}

pub(crate) fn attribute(element: &BytesStart<'_>, key: &str) -> Option<String> {
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

    #[test]
    fn one_test_named_two_ways_is_one_test() {
        assert!(same_test(
            "tests/test_a.py::TestA::test_b[1]",
            "tests.test_a.TestA::test_b[1]"
        ));
        assert!(same_test("math > adds", "math adds"));
        assert!(same_test("example.com/pkg::TestX/sub", "TestX/sub"));
        assert!(!same_test("tests::adds", "tests::adds_more"));
        assert!(!same_test("", "x"));
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

    #[test]
    fn a_failed_line_without_a_name_names_no_test() {
        // Found by the test_names fuzz target: an empty name made a "test failed: " finding.
        assert!(
            from_output("test   ... FAILED\ntest  ... FAILED\n")
                .failed
                .is_empty()
        );
    }
}
