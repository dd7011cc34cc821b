//! C and C++ runners. GoogleTest: the `[  FAILED  ] Suite.Name` list under its last `[==========]
//! N tests from M test suites ran.` line, as many as its `N tests, listed below:` line says
//! (`, where GetParam() = …` is not part of the name). ctest: the `NN - name (Failed)` list
//! under its last `NN% tests passed, N tests failed out of M` line, as many as that says; a
//! list of `(Not Run)` only is tests that could not run. Catch2 (v2 and v3 console reporter):
//! the test case of each failure's header (sections not included), named only when there are
//! no more of them than its closing `test cases: … | N failed` line counts, since Catch2 does
//! not capture what a test prints and a test can print a whole header. A compiler's `error:`
//! followed by the build tool's failure (`make: *** … Error 1`, ninja's `FAILED:`) is "could
//! not run", with that error.

use std::collections::HashMap;

use super::{Failed, Report, joined};
use crate::MAX_FINDINGS;

pub fn read(lines: &[&str], report: &mut Report) {
    // The runner whose closing line comes last is the one that ran: ctest's summary follows
    // the GoogleTest or Catch2 output of the tests it ran (`--output-on-failure`), and any
    // runner's follows what its tests printed, a whole summary of another runner's included.
    let gtest = lines.iter().rposition(|l| gtest_closing(l));
    let ctest = lines
        .iter()
        .enumerate()
        .rev()
        .find_map(|(at, l)| Some((at, ctest_closing(l)?)));
    let catch2 = lines.iter().enumerate().rev().find_map(|(at, l)| {
        let ruled = at > 0 && is_rule(lines[at - 1], '=');
        ruled.then(|| Some((at, catch2_closing(l)?))).flatten()
    });
    let last = [gtest, ctest.map(|c| c.0), catch2.map(|c| c.0)]
        .into_iter()
        .flatten()
        .max();
    let mut ctest_said = Ctest::Unread;
    if let Some(at) = gtest.filter(|at| Some(*at) == last) {
        read_gtest(lines, at, report);
    } else if let Some((at, count)) = ctest.filter(|c| Some(c.0) == last) {
        ctest_said = read_ctest(lines, at, count, report);
    } else if let Some((at, count)) = catch2.filter(|c| Some(c.0) == last) {
        read_catch2(lines, at, count, report);
    }
    if ctest_said != Ctest::Named {
        if let Some(cause) = build_error(lines) {
            report.cannot_run(&format!("the build failed: {cause}"));
        } else if let Ctest::NotRun(cause) = ctest_said {
            report.cannot_run(&cause);
        }
    }
}

/// The first number of `text` and what follows it: `12 tests from` → (12, " tests from").
fn leading_number(text: &str) -> Option<(u64, &str)> {
    let end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    Some((text[..end].parse().ok()?, &text[end..]))
}

const GTEST_FAILED: &str = "[  FAILED  ] ";

/// `[==========] 11 tests from 6 test suites ran. (0 ms total)` (`test cases` before 1.10).
fn gtest_closing(line: &str) -> bool {
    line.strip_prefix("[==========] ")
        .and_then(leading_number)
        .is_some_and(|(_, rest)| {
            (rest.starts_with(" test from ") || rest.starts_with(" tests from "))
                && rest.contains(" ran.")
        })
}

fn read_gtest(lines: &[&str], closing: usize, report: &mut Report) {
    let summary = &lines[closing + 1..];
    // `[  FAILED  ] 7 tests, listed below:`, then one line each.
    let listed_at = summary.iter().position(|l| {
        l.strip_prefix(GTEST_FAILED)
            .and_then(leading_number)
            .is_some_and(|(_, rest)| rest.ends_with(", listed below:"))
    });
    let names: Vec<&str> = match listed_at {
        Some(at) => {
            let count = summary[at]
                .strip_prefix(GTEST_FAILED)
                .and_then(leading_number)
                .map_or(0, |(n, _)| n);
            let names: Vec<&str> = summary[at + 1..]
                .iter()
                .map_while(|l| l.strip_prefix(GTEST_FAILED))
                .map(gtest_name)
                .take(MAX_FINDINGS)
                .collect();
            if names.len() as u64 != count.min(MAX_FINDINGS as u64) {
                return;
            }
            names
        }
        None => brief_failures(lines, closing),
    };
    let bodies = gtest_bodies(&lines[..closing], &names);
    for name in names {
        let mut test = Failed::named(name);
        if let Some(body) = bodies.get(name) {
            gtest_failure(body, &mut test);
        }
        report.add(test);
    }
}

/// `Squares/SquareTest.Squares/1, where GetParam() = (3, 10)`: the name without its parameter.
fn gtest_name(listed: &str) -> &str {
    listed.split(", where ").next().unwrap_or(listed).trim()
}

/// `--gtest_brief=1` prints no list, only each failure's `[  FAILED  ] name (0 ms)` line, and
/// no `[ RUN ]` lines to tell them from a line a test printed: they are named when as many as
/// the tests that ran less those that passed or were skipped.
fn brief_failures<'a>(lines: &[&'a str], closing: usize) -> Vec<&'a str> {
    let number_after = |line: &str, prefix: &str| -> u64 {
        line.strip_prefix(prefix)
            .and_then(leading_number)
            .map_or(0, |(n, _)| n)
    };
    let ran = number_after(lines[closing], "[==========] ");
    let summary = &lines[closing + 1..];
    let passed = summary.iter().find_map(|l| l.strip_prefix("[  PASSED  ] "));
    let Some(passed) = passed.and_then(leading_number).map(|(n, _)| n) else {
        return Vec::new();
    };
    let skipped = summary
        .iter()
        .find(|l| l.starts_with("[  SKIPPED ] "))
        .map_or(0, |l| number_after(l, "[  SKIPPED ] "));
    let failed = ran.saturating_sub(passed + skipped);
    let mut names: Vec<&str> = Vec::new();
    for line in &lines[..closing] {
        let Some(rest) = line.strip_prefix(GTEST_FAILED) else {
            continue;
        };
        let Some((name, _)) = rest.strip_suffix(" ms)").and_then(|r| r.rsplit_once(" (")) else {
            continue;
        };
        let name = gtest_name(name);
        if !names.contains(&name) {
            if names.len() as u64 >= failed.min(MAX_FINDINGS as u64) {
                return Vec::new();
            }
            names.push(name);
        }
    }
    if names.len() as u64 != failed.min(MAX_FINDINGS as u64) {
        return Vec::new();
    }
    names
}

/// The output of each named test: from its last `[ RUN      ] name` line to the next line of
/// GoogleTest's, read once.
fn gtest_bodies<'a>(lines: &'a [&'a str], names: &[&str]) -> HashMap<String, &'a [&'a str]> {
    let wanted: std::collections::HashSet<&str> = names.iter().copied().collect();
    let mut bodies = HashMap::new();
    let mut open: Option<(&str, usize)> = None;
    for (at, line) in lines.iter().enumerate() {
        if let Some(name) = line.strip_prefix("[ RUN      ] ") {
            open = wanted.get(name.trim()).map(|name| (*name, at + 1));
        } else if line.starts_with(GTEST_FAILED) || line.starts_with("[       OK ] ") {
            if let Some((name, start)) = open.take() {
                bodies.insert(name.to_owned(), &lines[start..at]);
            }
        }
    }
    bodies
}

/// `path/x_test.cc:10: Failure` and the lines under it.
fn gtest_failure(body: &[&str], test: &mut Failed) {
    let Some(at) = body.iter().position(|l| l.ends_with(": Failure")) else {
        return;
    };
    let place = body[at].trim_end_matches(": Failure");
    if let Some((file, line)) = place.rsplit_once(':') {
        if let Ok(line) = line.parse() {
            test.file = Some(file.to_owned());
            test.line = Some(line);
        }
    }
    test.message = joined(body[at + 1..].iter().copied(), 4).map(|m| super::clip(&m));
}

/// What ctest's list said.
#[derive(Debug, PartialEq, Eq)]
enum Ctest {
    /// No ctest summary, or a list that does not add up.
    Unread,
    /// Tests were named.
    Named,
    /// Every test listed was `(Not Run)`: why, in ctest's words.
    NotRun(String),
}

/// `38% tests passed, 8 tests failed out of 13`: the number failed.
fn ctest_closing(line: &str) -> Option<u64> {
    let (_, rest) = leading_number(line)?;
    let rest = rest.strip_prefix("% tests passed, ")?;
    let (failed, rest) = leading_number(rest)?;
    (rest.starts_with(" tests failed out of ") || rest.starts_with(" test failed out of "))
        .then_some(failed)
}

fn read_ctest(lines: &[&str], closing: usize, count: u64, report: &mut Report) -> Ctest {
    let summary = &lines[closing + 1..];
    let Some(list) = summary
        .iter()
        .position(|l| *l == "The following tests FAILED:")
    else {
        return Ctest::Unread;
    };
    let entries: Vec<(&str, &str)> = summary[list + 1..]
        .iter()
        .map_while(|l| ctest_entry(l))
        .take(MAX_FINDINGS)
        .collect();
    if entries.is_empty() || entries.len() as u64 != count.min(MAX_FINDINGS as u64) {
        return Ctest::Unread;
    }
    if entries.iter().all(|(_, status)| *status == "Not Run") {
        let unable = lines[..closing].iter().find(|l| {
            l.starts_with("Unable to find executable") || l.contains("Could not find executable")
        });
        let names: Vec<&str> = entries.iter().map(|(name, _)| *name).collect();
        return Ctest::NotRun(match unable {
            Some(said) => format!("ctest could not run {}: {}", names.join(", "), said.trim()),
            None => format!("ctest could not run {}", names.join(", ")),
        });
    }
    for (name, status) in entries {
        let test = Failed::named(name);
        // `Failed` is every failed test's; a crash, a timeout or a test not run says more.
        let why = (status != "Failed").then(|| status.to_owned());
        report.add(test.because(why));
    }
    Ctest::Named
}

/// `\t 11 - Squares/SquareTest.Squares/(3, 10) (Failed)`: the name and the status.
fn ctest_entry(line: &str) -> Option<(&str, &str)> {
    let (_, rest) = leading_number(line.trim_start())?;
    let rest = rest.strip_prefix(" - ")?;
    let (name, status) = rest.strip_suffix(')')?.rsplit_once(" (")?;
    (!name.trim().is_empty()).then_some((name.trim(), status))
}

/// `test cases:  9 | 2 passed | 7 failed` under a rule of `=`: the number failed (none when
/// Catch2 says `All tests passed`).
fn catch2_closing(line: &str) -> Option<u64> {
    if line.starts_with("All tests passed") {
        return Some(0);
    }
    let rest = line.strip_prefix("test cases:")?;
    rest.split(" | ")
        .skip(1)
        .find_map(|part| {
            let (n, word) = leading_number(part.trim())?;
            (word == " failed").then_some(n)
        })
        .or(Some(0))
}

fn is_rule(line: &str, c: char) -> bool {
    line.len() >= 40 && line.chars().all(|x| x == c)
}

fn read_catch2(lines: &[&str], closing: usize, count: u64, report: &mut Report) {
    if count == 0 {
        return;
    }
    let mut found: Vec<Failed> = Vec::new();
    let mut distinct: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut at = 0;
    while at < closing {
        let Some((test, next)) = catch2_header(&lines[..closing], at) else {
            at += 1;
            continue;
        };
        if distinct.insert(test.name.clone()) {
            if distinct.len() as u64 > count {
                // More tests than Catch2 counts failed: some header was printed by a test.
                return;
            }
            if found.len() < MAX_FINDINGS {
                found.push(test);
            }
        }
        at = next;
    }
    for test in found {
        report.add(test);
    }
}

/// A failure's header at `at`: a rule of `-`, the test case's name (wrapped lines joined;
/// indented lines under it are sections), a rule of `-`, the test's place, a rule of `.`; then
/// its first failure, `path:line: FAILED:` and what it says. The test and the line after it.
fn catch2_header(lines: &[&str], at: usize) -> Option<(Failed, usize)> {
    if !is_rule(lines[at], '-') {
        return None;
    }
    let close = at
        + 1
        + lines
            .get(at + 1..)?
            .iter()
            .take(64)
            .position(|l| is_rule(l, '-'))?;
    let dots = close + 2;
    if close == at + 1 || !lines.get(dots).is_some_and(|l| is_rule(l, '.')) {
        return None;
    }
    let title = &lines[at + 1..close];
    // A long name wraps at the same indent (after `: ` when it has one); sections are indented.
    let wrap_indent = title[0].find(": ").map_or(0, |p| p + 2);
    let mut name = title[0].trim().to_owned();
    for line in &title[1..] {
        let indent = line.len() - line.trim_start().len();
        if indent == 0 || indent == wrap_indent && indent != 2 {
            name.push(' ');
            name.push_str(line.trim());
        } else {
            break;
        }
    }
    let mut test = Failed::named(&name);
    let rest = &lines[dots + 1..];
    if let Some(failed) = rest.iter().take(4).position(|l| l.ends_with(": FAILED:")) {
        let place = rest[failed].trim_end_matches(": FAILED:");
        if let Some((file, line)) = place.rsplit_once(':') {
            if let Ok(line) = line.parse() {
                test.file = Some(file.to_owned());
                test.line = Some(line);
            }
        }
        let said = rest[failed + 1..]
            .iter()
            .copied()
            .take_while(|l| !l.is_empty());
        test.message = joined(said, 4).map(|m| super::clip(&m));
    }
    Some((test, dots + 1))
}

/// The first compiler error of a build the build tool then reported failed:
/// `src/x.cpp:7:39: error: ‘f’ was not declared in this scope`, then `gmake[2]: *** […] Error
/// 1` (or ninja's `FAILED:` / `ninja: build stopped`). A linker's `undefined reference` counts.
fn build_error(lines: &[&str]) -> Option<String> {
    let failed_at = lines.iter().rposition(|l| {
        let make = l
            .split_once(": *** ")
            .is_some_and(|(tool, rest)| tool.contains("make") && rest.contains("Error "));
        make || l.starts_with("FAILED: ") || l.starts_with("ninja: build stopped")
    })?;
    lines[..failed_at].iter().find_map(|line| {
        let (place, said) = line
            .split_once(": error: ")
            .or_else(|| line.split_once(": fatal error: "))
            .or_else(|| line.split_once(": undefined reference to "))?;
        let source = place.split(':').next().unwrap_or_default();
        let compiled = [
            ".c", ".cc", ".cpp", ".cxx", ".c++", ".h", ".hh", ".hpp", ".hxx", ".ipp", ".inl", ".m",
            ".mm", ".cu", ".o",
        ]
        .iter()
        .any(|ext| source.ends_with(ext));
        compiled.then(|| format!("{place}: error: {said}"))
    })
}

#[cfg(test)]
mod tests {
    use super::super::{from_output, names};

    const GTEST: &str = "[==========] Running 3 tests from 2 test suites.\n[ RUN      ] Calc.AddsWrong\n/p/calc_test.cpp:10: Failure\nExpected equality of these values:\n  5\n  add(2, 2)\n    Which is: 4\n[  FAILED  ] Calc.AddsWrong (0 ms)\n[ RUN      ] Fake.Prints\n[==========] 1 test from 1 test suite ran. (0 ms total)\n[  FAILED  ] 1 test, listed below:\n[  FAILED  ] Fake.printed\n[       OK ] Fake.Prints (0 ms)\n[ RUN      ] Squares/SquareTest.Squares/1\n[  FAILED  ] Squares/SquareTest.Squares/1, where GetParam() = (3, 10) (0 ms)\n[==========] 3 tests from 2 test suites ran. (0 ms total)\n[  PASSED  ] 1 test.\n[  FAILED  ] 2 tests, listed below:\n[  FAILED  ] Calc.AddsWrong\n[  FAILED  ] Squares/SquareTest.Squares/1, where GetParam() = (3, 10)\n\n 2 FAILED TESTS\n";

    #[test]
    fn gtest_names_the_list_under_its_last_summary() {
        let report = from_output(GTEST);
        assert_eq!(
            names(GTEST),
            ["Calc.AddsWrong", "Squares/SquareTest.Squares/1"]
        );
        let first = &report.failed[0];
        assert_eq!(first.file.as_deref(), Some("/p/calc_test.cpp"));
        assert_eq!(first.line, Some(10));
        assert_eq!(
            first.message.as_deref(),
            Some("Expected equality of these values: 5 add(2, 2) Which is: 4")
        );
        let short = GTEST.replace(
            "[  FAILED  ] 2 tests, listed",
            "[  FAILED  ] 3 tests, listed",
        );
        assert!(names(&short).is_empty());
    }

    const CTEST: &str = "      Start  2: Calc.AddsWrong\n 2/3 Test  #2: Calc.AddsWrong ....***Failed    0.00 sec\nThe following tests FAILED:\n\t  9 - printed (Failed)\n\n33% tests passed, 2 tests failed out of 3\n\nTotal Test time (real) =   0.05 sec\n\nThe following tests did not run:\n\t  5 - Calc.NotYet (Disabled)\n\nThe following tests FAILED:\n\t  2 - Calc.AddsWrong (Failed)\n\t 13 - script check: a.b::c #1 (SEGFAULT)\nErrors while running CTest\n";

    #[test]
    fn ctest_names_the_list_under_its_last_summary() {
        let report = from_output(CTEST);
        assert_eq!(names(CTEST), ["Calc.AddsWrong", "script check: a.b::c #1"]);
        assert_eq!(report.failed[0].message, None);
        assert_eq!(report.failed[1].message.as_deref(), Some("SEGFAULT"));
    }

    #[test]
    fn a_build_that_failed_is_tests_that_could_not_run() {
        let out = "[ 50%] Building CXX object CMakeFiles/t.dir/t.cpp.o\n/p/t.cpp:7:39: error: ‘multiply’ was not declared in this scope\n    7 | TEST(Calc, M) { EXPECT_EQ(6, multiply(2, 3)); }\ngmake[2]: *** [CMakeFiles/t.dir/build.make:76: CMakeFiles/t.dir/t.cpp.o] Error 1\ngmake: *** [Makefile:101: all] Error 2\n";
        let report = from_output(out);
        assert!(report.failed.is_empty());
        assert_eq!(
            report.could_not_run.as_deref(),
            Some(
                "the build failed: /p/t.cpp:7:39: error: ‘multiply’ was not declared in this scope"
            )
        );
        let not_built = "Unable to find executable: t_NOT_BUILT\n1/1 Test #1: t_NOT_BUILT ...***Not Run   0.00 sec\n\n0% tests passed, 1 tests failed out of 1\n\nThe following tests FAILED:\n\t  1 - t_NOT_BUILT (Not Run)\n";
        assert_eq!(
            from_output(not_built).could_not_run.as_deref(),
            Some("ctest could not run t_NOT_BUILT: Unable to find executable: t_NOT_BUILT")
        );
    }

    fn catch2(headers: &[&str], failed: u32) -> String {
        let dashes = "-".repeat(79);
        let dots = ".".repeat(79);
        let mut out = String::from("Randomness seeded to: 1\n\n");
        for header in headers {
            out.push_str(&format!(
                "{dashes}\n{header}\n{dashes}\n/p/t.cpp:8\n{dots}\n\n/p/t.cpp:9: FAILED:\n  CHECK( add(2, 2) == 5 )\nwith expansion:\n  4 == 5\n\n"
            ));
        }
        out.push_str(&format!(
            "{}\ntest cases: 5 | {} passed | {failed} failed\n",
            "=".repeat(79),
            5 - failed
        ));
        out
    }

    #[test]
    fn catch2_names_each_failing_test_case_once() {
        let out = catch2(
            &["adds wrong", "nested\n  outer\n  inner", "nested\n  other"],
            2,
        );
        let report = from_output(&out);
        assert_eq!(names(&out), ["adds wrong", "nested"]);
        assert_eq!(report.failed[0].line, Some(9));
        assert_eq!(
            report.failed[0].message.as_deref(),
            Some("CHECK( add(2, 2) == 5 ) with expansion: 4 == 5")
        );
    }

    #[test]
    fn catch2_names_none_when_more_fail_than_it_counts() {
        let out = catch2(&["adds wrong", "printed by a test"], 1);
        assert!(names(&out).is_empty());
        assert!(from_output(&out).could_not_run.is_none());
    }
}
