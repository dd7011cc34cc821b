//! Naming the tests that failed, and telling a run whose tests failed from one whose tests
//! could not run at all (an import or collection error, a compile error). A user reads "3
//! failed: a, b, c" or "the tests could not run: ModuleNotFoundError: No module named 'x'",
//! not a 1 MiB log.
//!
//! Each runner family's reader looks only where its runner prints its own verdicts (a closing
//! summary where there is one, never a test's captured output), so text a test prints cannot
//! name a test: `libtest` (cargo test, nextest), `python` (pytest, unittest), `go`, `js` (node
//! --test, jest, vitest, mocha, AVA, jasmine, uvu: the runner whose summary comes last),
//! `tap` (any TAP stream, 13, 14 or without a version, and prove), `jvm` (Maven's build),
//! `ruby` (RSpec, minitest, test-unit), `php` (PHPUnit), `cpp` (GoogleTest, ctest, Catch2, and a C or C++
//! build that failed), `lua` (busted), `elixir` (ExUnit), `erlang` (EUnit), `bdd` (cucumber-js,
//! behave) and `shell` (shunit2, and a test script the shell refused); a JUnit report printed to the
//! console is read as one, and a runner none of them knows by its marks ([`marks`]: names
//! that add up to its closing count, or none). Where a runner's closing line counts its failures,
//! names that do not add up to it name none. JUnit XML reports are read by [`from_junit`], and
//! a test a report and the console both name is one test ([`same_test`]).

mod bdd;
mod cpp;
mod elixir;
mod erlang;
mod go;
mod js;
mod jvm;
mod libtest;
mod lua;
mod marks;
mod node;
mod php;
mod python;
mod ruby;
mod shell;
mod tap;

use quick_xml::events::{BytesStart, Event};
use quick_xml::{Reader, XmlVersion};

use super::MAX_FINDINGS;
use crate::Finding;

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
        // Past the cap nothing is kept, so nothing is compared: a flood of names costs a line's
        // reading each, not a search.
        if test.name.trim().is_empty() || self.failed.len() >= MAX_FINDINGS {
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
        self.failed.push(test);
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
    let readers: [fn(&[&str], &mut Report); 13] = [
        libtest::read,
        python::read,
        go::read,
        js::read,
        jvm::read,
        ruby::read,
        php::read,
        cpp::read,
        lua::read,
        elixir::read,
        erlang::read,
        bdd::read,
        shell::read,
    ];
    // Each family reads on its own; of those that name failures, the runner that spoke last is
    // the one that ran the tests: a test's output comes before its runner sums up, so another
    // runner's whole report a test printed is read by that runner's reader, but earlier.
    let mut chosen: Option<(usize, Report)> = None;
    let mut could_not_run: Option<String> = None;
    let mut consider = |report: Report, chosen: &mut Option<(usize, Report)>| {
        if report.failed.is_empty() {
            if could_not_run.is_none() {
                could_not_run = report.could_not_run;
            }
            return;
        }
        let spoke = last_mention(&lines, &report.failed);
        if chosen.as_ref().is_none_or(|(at, _)| spoke > *at) {
            *chosen = Some((spoke, report));
        }
    };
    for read in readers {
        let mut report = Report::default();
        read(&lines, &mut report);
        consider(report, &mut chosen);
    }
    // TAP a test printed inside another runner's run is that test's output: the TAP reader
    // knows what was named and reads only a run nobody else named.
    let mut tap_report = Report::default();
    if let Some((_, named)) = &chosen {
        tap_report.failed = named.failed.clone();
    }
    let named_before = tap_report.failed.len();
    tap::read(&lines, &mut tap_report);
    if tap_report.failed.len() > named_before || chosen.is_none() {
        consider(tap_report, &mut chosen);
    }
    // A runner told to write its JUnit report to the console (`-r junit`, `-j /dev/stdout`,
    // `CMOCKA_MESSAGE_OUTPUT=xml`): the report is its verdict, read as one.
    if chosen.is_none() {
        if let Some(junit) = console_junit(output) {
            consider(
                Report {
                    failed: junit.failed,
                    could_not_run: None,
                },
                &mut chosen,
            );
        }
    }
    // A runner no reader knows: its marks (`[FAIL] name`), if they add up to its count. Not
    // where a reader found the tests could not run: a file's mark is then no test's.
    if chosen.is_none() && could_not_run.is_none() {
        let mut report = Report::default();
        marks::read(&lines, &mut report);
        if !report.failed.is_empty() {
            chosen = Some((0, report));
        }
    }
    match chosen {
        // Named failures mean the tests ran; a cause found beside them was one test's.
        Some((_, report)) => Report {
            could_not_run: None,
            ..report
        },
        None => Report {
            failed: Vec::new(),
            could_not_run,
        },
    }
}

/// A JUnit report the runner printed: from its first line that opens one (`<?xml`,
/// `<testsuites`, `<testsuite`) at the margin, if it names failed cases.
fn console_junit(output: &str) -> Option<Junit> {
    let mut offset = 0;
    for line in output.split_inclusive('\n') {
        if ["<?xml", "<testsuites", "<testsuite "]
            .iter()
            .any(|open| line.starts_with(open))
        {
            let junit = from_junit(&output[offset..]);
            return (!junit.failed.is_empty()).then_some(junit);
        }
        offset += line.len();
    }
    None
}

/// The last line that names one of `failed` (the first few, by their whole name or its last
/// part: `a > b > c` is printed `a › b › c`, `pkg.Class.test` as `test (pkg.Class)`).
fn last_mention(lines: &[&str], failed: &[Failed]) -> usize {
    let keys: Vec<&str> = failed
        .iter()
        .take(8)
        .flat_map(|f| {
            let name = f.name.as_str();
            let last = [" > ", " › ", "::", "."]
                .iter()
                .filter_map(|sep| name.rsplit_once(sep).map(|(_, last)| last))
                .min_by_key(|last| last.len())
                .filter(|last| last.len() >= 4);
            [Some(name), last]
        })
        .flatten()
        .collect();
    lines
        .iter()
        .rposition(|line| keys.iter().any(|key| line.contains(key)))
        .unwrap_or(0)
}

/// Whether two names are one test as two reporters write it: `tests/test_a.py::T::test_b` and
/// `tests.test_a.T::test_b`, `math > adds` and `math adds`, `pkg::TestX/sub` and `TestX/sub`:
/// the words of the shorter name end the longer one.
pub fn same_test(a: &str, b: &str) -> bool {
    // A name with no words (`───`, found by the fuzzer) is the same only as itself.
    if a == b {
        return true;
    }
    let mut compared = 0;
    for (x, y) in name_words(a).zip(name_words(b)) {
        if x != y {
            return false;
        }
        compared += 1;
    }
    compared > 0
}

/// A test name's words, last first, without the separators reporters disagree on (spaces,
/// `/`, `.`, `:`, `>`, `›`, `\`, `#`). Any other character is part of a word: names that
/// differ in it (`test_cmp[<]`, `test_cmp[>]`, two parameters a report writes as `&lt;` and
/// `&gt;`) are two tests, never one.
fn name_words(name: &str) -> impl Iterator<Item = &str> {
    name.rsplit(|c: char| {
        c.is_whitespace() || matches!(c, '/' | '.' | ':' | '>' | '›' | '\\' | '#')
    })
    .filter(|w| !w.is_empty() && *w != "py")
}

/// `text` cut to [`MAX_MESSAGE_CHARS`] on a character boundary.
fn clip(text: &str) -> String {
    validator_text::clip(text, MAX_MESSAGE_CHARS)
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

/// What a JUnit XML report says failed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Junit {
    /// Each failed test case once, in the report's order: a case whose name reads as nothing
    /// is named by its place ([`unnamed`]), so no failure is lost to its name.
    pub failed: Vec<Failed>,
    /// It declares a document type, whose entities were never expanded.
    pub dtd: bool,
    /// Why the report could not be read to its end; the failures before that point are kept.
    pub unread: Option<String>,
}

impl Junit {
    /// What a reader of the gate must know of how the report was read, if anything.
    pub fn note(&self) -> Option<String> {
        let dtd = self.dtd.then_some(
            "it declares a document type (`<!DOCTYPE`), which JUnit reports do not; its entities were not expanded, so names using them are as written",
        );
        match (dtd, &self.unread) {
            (None, None) => None,
            (Some(dtd), None) => Some(dtd.to_owned()),
            (None, Some(why)) => Some(why.clone()),
            (Some(dtd), Some(why)) => Some(format!("{dtd}; {why}")),
        }
    }
}

/// The stand-in name of the `n`-th failed case (from 1) whose name reads as nothing.
pub fn unnamed(n: usize) -> String {
    format!("<unnamed test case {n} of the JUnit report>")
}

/// Whether `name` is a stand-in of [`unnamed`], which no runner can be asked to run.
pub fn is_unnamed(name: &str) -> bool {
    name.starts_with("<unnamed test case ") && name.ends_with(" of the JUnit report>")
}

/// Failed test cases in a JUnit XML report: `<testcase>` elements holding `<failure>` or
/// `<error>`, each named as its runner names it on the console (see [`junit_name`]). pytest's
/// stand-in case for a module it could not collect is not a test.
///
/// Entities are never expanded: a document type declaration is passed over (said in
/// [`Junit::note`]), and a reference to an entity that is not one of XML's five is kept as
/// written ([`attribute`]), so a name is never emptied, grown or made another's. What cannot
/// be read ends the reading, keeping what came before ([`Junit::unread`]).
pub fn from_junit(xml: &str) -> Junit {
    let mut reader = Reader::from_str(xml);
    let mut reading = Reading::default();
    loop {
        let event = match reader.read_event() {
            Ok(event) => event,
            Err(err) => {
                reading.report.unread = Some(format!(
                    "not valid XML past byte {}, where it stopped being read: {err}",
                    reader.buffer_position()
                ));
                break;
            }
        };
        if reading.read(&event) {
            break;
        }
    }
    reading.finish()
}

/// Where a reading of a JUnit report has come to.
#[derive(Default)]
struct Reading {
    /// The `<testcase>`s open, innermost last; `None` once one is counted failed.
    cases: Vec<Option<(Failed, Case)>>,
    suites: Vec<String>,
    root: Option<String>,
    report: Junit,
    unnamed_cases: usize,
    depth: usize,
    /// Every `<failure>` and `<error>` element met, wherever it stands.
    failure_elements: u64,
    /// The most failures and errors one `<testsuite>` or `<testsuites>` says it holds.
    declared: u64,
}

impl Reading {
    /// Takes in one event; whether the reading ends at it.
    fn read(&mut self, event: &Event<'_>) -> bool {
        let opens = matches!(event, Event::Start(_));
        match event {
            Event::Start(_) => self.depth += 1,
            Event::End(_) => self.depth = self.depth.saturating_sub(1),
            _ => {}
        }
        match event {
            Event::DocType(_) => self.report.dtd = true,
            Event::Start(element) | Event::Empty(element)
                if matches!(element.local_name().as_ref(), "testsuites" | "testsuite") =>
            {
                self.suite(
                    element,
                    opens && element.local_name().as_ref() == "testsuite",
                );
            }
            Event::End(element) if element.local_name().as_ref() == "testsuite" => {
                self.suites.pop();
            }
            Event::Start(element) if element.local_name().as_ref() == "testcase" => {
                let case = Case {
                    classname: attribute(element, "classname").unwrap_or_default(),
                    // PHPUnit writes the class as PHP names it (`App\Tests\CalcTest`) in
                    // `class`, and with dots for `\` in `classname`.
                    php_class: attribute(element, "class"),
                    name: attribute(element, "name").unwrap_or_default(),
                };
                let root = self.root.as_deref().unwrap_or("");
                let test = Failed {
                    file: attribute(element, "file").filter(|f| !f.is_empty()),
                    ..Failed::named(&junit_name(root, &self.suites, &case))
                };
                self.cases.push(Some((test, case)));
            }
            Event::Start(element) | Event::Empty(element)
                if matches!(element.local_name().as_ref(), "failure" | "error") =>
            {
                self.failure(element);
            }
            Event::End(element) if element.local_name().as_ref() == "testcase" => {
                self.cases.pop();
            }
            Event::Eof => {
                // A report cut short (its runner killed while writing) or none at all says
                // nothing of the tests it did not reach.
                if self.root.is_none() {
                    self.report.unread = Some("it holds no `<testsuite>` or `<testsuites>`".into());
                } else if self.depth > 0 {
                    self.report.unread =
                        Some("it ends inside an element, so it was cut short".into());
                }
                return true;
            }
            _ => {}
        }
        false
    }

    fn suite(&mut self, element: &BytesStart<'_>, opens: bool) {
        let name = attribute(element, "name").unwrap_or_default();
        if self.root.is_none() {
            self.root = Some(name.clone());
        }
        if opens && self.suites.len() < 64 {
            self.suites.push(name);
        }
        // A count that is no number says nothing; one that is, is a floor on what failed (one
        // past u64 counts as the most there is, not as none).
        let count = |key| {
            attribute(element, key).map_or(0, |n| {
                let n = n.trim();
                let digits = !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
                n.parse::<u64>()
                    .unwrap_or(if digits { u64::MAX } else { 0 })
            })
        };
        self.declared = self
            .declared
            .max(count("failures").saturating_add(count("errors")));
    }

    /// A `<failure>` or `<error>`: its innermost open case failed; outside any case (a suite's
    /// setup, a report written around the reader), a failure all the same, named by its place.
    fn failure(&mut self, element: &BytesStart<'_>) {
        self.failure_elements = self.failure_elements.saturating_add(1);
        let message = attribute(element, "message");
        let test = match self.cases.last_mut() {
            Some(open) => match open.take() {
                Some((test, case)) => {
                    let collection = case.classname.is_empty()
                        && message.as_deref() == Some("collection failure");
                    if collection {
                        return;
                    }
                    test
                }
                // That case is counted already.
                None => return,
            },
            None => Failed::named(""),
        };
        self.push(test, message);
    }

    fn push(&mut self, mut test: Failed, message: Option<String>) {
        if self.report.failed.len() >= MAX_FINDINGS {
            return;
        }
        // `::` alone is an empty class and an empty name joined.
        if test.name.chars().all(|c| c.is_whitespace() || c == ':') {
            self.unnamed_cases += 1;
            test.name = unnamed(self.unnamed_cases);
        }
        self.report.failed.push(test.because(message));
    }

    fn finish(mut self) -> Junit {
        // Go's reporters fail a parent with its subtest; the subtest is the failure.
        let names: Vec<String> = self.report.failed.iter().map(|f| f.name.clone()).collect();
        self.report.failed.retain(|f| {
            !names
                .iter()
                .any(|other| other.starts_with(&format!("{}/", f.name)))
        });
        // A suite that counts more failures than the report holds lost some: which, and
        // whether they were the worker's to hide, cannot be told.
        if self.declared > self.failure_elements && self.report.unread.is_none() {
            self.report.unread = Some(format!(
                "a suite in it counts {} failures and errors, but it holds {} `<failure>` or `<error>` elements",
                self.declared, self.failure_elements
            ));
        }
        self.report
    }
}

/// A `<testcase>` as written.
struct Case {
    classname: String,
    name: String,
    php_class: Option<String>,
}

/// A JUnit test case named as its runner names it on the console, from the conventions of the
/// reporters that write JUnit: pytest (`tests.test_a.TestC` + `test_b` →
/// `tests/test_a.py::TestC::test_b`), Surefire (`com.x.CalcTest` + `adds` →
/// `com.x.CalcTest.adds`), node --test (nested `<testsuite>`s → `suite > test`), vitest
/// (`suite > test` already), go's reporters and nextest (the name alone: the package or binary
/// is not part of it), mocha's xunit (the suite titles joined by spaces, read as a path),
/// PHPUnit (`App\Tests\CalcTest` + `testAdds` → `App\Tests\CalcTest::testAdds`); any other
/// as `classname::name`.
fn junit_name(root: &str, suites: &[String], case: &Case) -> String {
    let (class, name) = (case.classname.as_str(), case.name.as_str());
    if let Some(php_class) = case.php_class.as_deref().filter(|c| !c.is_empty()) {
        return format!("{php_class}::{name}");
    }
    if root == "pytest tests" || suites.first().is_some_and(|s| s == "pytest") {
        let parts: Vec<&str> = class.split('.').filter(|p| !p.is_empty()).collect();
        let module_end = parts
            .iter()
            .position(|p| p.starts_with(|c: char| c.is_ascii_uppercase()))
            .unwrap_or(parts.len());
        if module_end == 0 {
            return name.to_owned();
        }
        let mut node = format!("{}.py", parts[..module_end].join("/"));
        for class in &parts[module_end..] {
            node.push_str("::");
            node.push_str(class);
        }
        return format!("{node}::{name}");
    }
    if name.contains(" > ") || class.is_empty() && suites.len() <= 1 {
        return name.to_owned();
    }
    if class == "test" && !suites.is_empty() {
        // node --test: the suites a test is nested in are its title path.
        let mut path: Vec<&str> = suites.iter().map(String::as_str).collect();
        path.push(name);
        return path.join(" > ");
    }
    if class.contains('/') || name.contains("::") {
        return name.to_owned();
    }
    if root == "Mocha Tests" {
        let mut path: Vec<&str> = class.split(' ').filter(|w| !w.is_empty()).collect();
        path.push(name);
        return path.join(" > ");
    }
    let java = class.contains('.')
        && class
            .rsplit('.')
            .next()
            .is_some_and(|last| last.starts_with(|c: char| c.is_ascii_uppercase()))
        && !class.contains(' ');
    if java {
        return format!("{class}.{name}");
    }
    if class == name {
        return name.to_owned();
    }
    format!("{class}::{name}")
}

/// An attribute's value, normalised as XML 1.0 says. A reference to an entity that is not one
/// of XML's five (which only a DTD could declare, and none is read) is kept as written, `&x;`,
/// rather than losing the value: an empty test name would lose the failure it names.
pub(crate) fn attribute(element: &BytesStart<'_>, key: &str) -> Option<String> {
    element
        .attributes()
        .flatten()
        .find(|attr| attr.key.local_name().as_ref() == key)
        .map(
            |attr| match attr.normalized_value(XmlVersion::Implicit1_0) {
                Ok(value) => value.into_owned(),
                Err(_) => unknown_entities_kept(&attr.value),
            },
        )
}

/// `raw` (an attribute's value as written) with XML's predefined entities and character
/// references resolved, any other reference kept as written, and line breaks and tabs made
/// spaces, as attribute normalisation makes them.
fn unknown_entities_kept(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = rest.find(['&', '\r', '\n', '\t']) {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if let Some(after) = rest.strip_prefix("\r\n") {
            out.push(' ');
            rest = after;
            continue;
        }
        if !rest.starts_with('&') {
            out.push(' ');
            rest = &rest[1..];
            continue;
        }
        // A reference is short: looking further would make a value of many `&` quadratic.
        let resolved = rest
            .bytes()
            .take(32)
            .position(|b| b == b';')
            .and_then(|end| Some((resolve_reference(&rest[1..end])?, end)));
        match resolved {
            Some((c, end)) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The character a reference (`amp`, `#38`, `#x26`) stands for, for XML's own references only.
fn resolve_reference(name: &str) -> Option<char> {
    let code = match name {
        "lt" => return Some('<'),
        "gt" => return Some('>'),
        "amp" => return Some('&'),
        "apos" => return Some('\''),
        "quot" => return Some('"'),
        _ => match name.strip_prefix("#x") {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => name.strip_prefix('#')?.parse().ok()?,
        },
    };
    char::from_u32(code).filter(|&c| c != '\0')
}

/// The names of the failed tests `output` reports, for the runners' tests.
#[cfg(test)]
fn names(output: &str) -> Vec<String> {
    from_output(output)
        .failed
        .into_iter()
        .map(|f| f.name)
        .collect()
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
        let found = from_junit(xml).failed;
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].name, "auth.Login.rejects & logs");
        assert_eq!(found[0].file.as_deref(), Some("tests/auth.py"));
        assert_eq!(found[0].message.as_deref(), Some("expected 401"));
        assert_eq!(found[1].name, "crashes");
        assert!(from_junit("<testsuite><testcase").unread.is_some());
        let phpunit = r#"<testsuite name="App\Tests\CalcTest"><testcase name="testSquare with data set &quot;a::b&quot;" class="App\Tests\CalcTest" classname="App.Tests.CalcTest"><failure type="X">f</failure></testcase></testsuite>"#;
        assert_eq!(
            from_junit(phpunit).failed[0].name,
            "App\\Tests\\CalcTest::testSquare with data set \"a::b\""
        );
    }

    #[test]
    fn a_report_with_a_dtd_is_read_without_expanding_and_an_unknown_entity_kept_as_written() {
        let dtd = r#"<?xml version="1.0"?><!DOCTYPE testsuite [<!ENTITY x "y">]><testsuite><testcase name="&x;"><failure/></testcase></testsuite>"#;
        let read = from_junit(dtd);
        assert!(read.dtd && read.unread.is_none());
        assert!(read.note().is_some_and(|n| n.contains("DOCTYPE")));
        assert_eq!(read.failed[0].name, "&x;");
        let xml = r#"<testsuite><testcase classname="c" name="a &x; &amp; &#x41;&#66;	b&#0;&"><failure message="&nbsp;why"/></testcase></testsuite>"#;
        let found = from_junit(xml).failed;
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].name, "c::a &x; & AB b&#0;&");
        assert_eq!(found[0].message.as_deref(), Some("&nbsp;why"));
    }

    #[test]
    fn names_that_differ_only_in_entities_stay_two_tests() {
        // pytest --junitxml writes `test_cmp[<]` and `test_cmp[>]` with entities.
        let xml = r#"<testsuites><testsuite name="pytest"><testcase classname="tests.test_ops" name="test_cmp[&lt;]"><failure message="a"/></testcase><testcase classname="tests.test_ops" name="test_cmp[&gt;]"><failure message="b"/></testcase><testcase classname="tests.test_ops" name="test_cmp[&#60;&#60;]"><failure/></testcase></testsuite></testsuites>"#;
        let names: Vec<String> = from_junit(xml).failed.into_iter().map(|f| f.name).collect();
        assert_eq!(
            names,
            [
                "tests/test_ops.py::test_cmp[<]",
                "tests/test_ops.py::test_cmp[>]",
                "tests/test_ops.py::test_cmp[<<]"
            ]
        );
        assert!(!same_test(&names[0], &names[1]));
        assert!(!same_test(&names[0], &names[2]));
        let mut console = Report::default();
        for name in &names {
            console.add(Failed::named(name));
        }
        assert_eq!(console.failed.len(), 3);
    }

    #[test]
    fn a_failed_case_whose_name_reads_as_nothing_is_still_counted() {
        // jest-junit, surefire and go-junit-report shapes, each name emptied by a reference.
        let xml = r#"<testsuites name="jest tests"><testsuite name="math"><testcase classname="" name=""><failure>x</failure></testcase><testcase classname="&#32;" name="&#32;&#9;"><error/></testcase><testcase classname="com.x.CalcTest" name="adds"><failure/></testcase></testsuite></testsuites>"#;
        let read = from_junit(xml);
        assert_eq!(read.failed.len(), 3, "{read:?}");
        assert!(is_unnamed(&read.failed[0].name) && is_unnamed(&read.failed[1].name));
        assert_ne!(read.failed[0].name, read.failed[1].name);
        assert_eq!(read.failed[2].name, "com.x.CalcTest.adds");
    }

    #[test]
    fn a_report_that_breaks_off_keeps_the_failures_before_it() {
        let xml = r#"<testsuite name="pkg"><testcase classname="pkg" name="TestA"><failure message="a"/></testcase><testcase classname="pkg" name="TestB"><failure message="b"></error></testcase>"#;
        let read = from_junit(xml);
        let names: Vec<&str> = read.failed.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["pkg::TestA", "pkg::TestB"]);
        assert!(
            read.unread
                .as_deref()
                .is_some_and(|why| why.contains("not valid XML"))
        );
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
