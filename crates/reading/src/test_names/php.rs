//! PHPUnit: the `1) Class::testName` blocks of its `There were N failures:` and `There was 1
//! error:` sections, between its last `Time: …, Memory: …` line and its closing `Tests: N,
//! Assertions: N, Errors: N, Failures: N.` line. A test's echoed output comes before the
//! `Time:` line; each section's blocks must be numbered 1 to N in order and the sections must
//! add up to the closing line's counts, or none is named (a message printed to look like a
//! block). A data-set test is named with its data set's label, not its values:
//! `Class::testSquare with data set #1`, `… with data set "named"`, as PHPUnit's JUnit log
//! names it. A fatal PHP error before PHPUnit summed up (a test file that does not parse) is
//! "could not run".

use super::{Failed, Report, joined};
use crate::MAX_FINDINGS;

pub fn read(lines: &[&str], report: &mut Report) {
    // The last closing line is PHPUnit's, `OK (3 tests, 3 assertions)` included: a test may
    // print one of either before it.
    let passed = |l: &str| l.starts_with("OK (") && l.ends_with(')') && l.contains(" test");
    let Some(closing) = lines
        .iter()
        .rposition(|l| closing_counts(l).is_some() || passed(l))
    else {
        if let Some(cause) = fatal_error(lines) {
            report.cannot_run(&cause);
        }
        return;
    };
    let Some(counts) = closing_counts(lines[closing]) else {
        return;
    };
    let Some(start) = lines[..closing]
        .iter()
        .rposition(|l| l.starts_with("Time: ") && l.contains(", Memory: "))
    else {
        return;
    };
    if let Some(blocks) = sections(&lines[start + 1..closing], counts) {
        for block in blocks.into_iter().take(MAX_FINDINGS) {
            report.add(block_test(block));
        }
    }
}

/// `Tests: 10, Assertions: 8, Errors: 1, Failures: 4, Skipped: 1.`: the errors and failures.
fn closing_counts(line: &str) -> Option<(u64, u64)> {
    let rest = line.strip_prefix("Tests: ")?.strip_suffix('.')?;
    let (mut errors, mut failures) = (0, 0);
    for (at, part) in rest.split(", ").enumerate() {
        let (word, number) = match at {
            0 => ("Tests", part),
            _ => part.split_once(": ")?,
        };
        let number: u64 = number.parse().ok()?;
        match word {
            "Errors" => errors = number,
            "Failures" => failures = number,
            _ if word.chars().all(|c| c.is_ascii_alphabetic() || c == ' ') => {}
            _ => return None,
        }
    }
    Some((errors, failures))
}

/// The blocks of the errors' and failures' sections, each from its `1) name` line to the next;
/// None when a section's numbering or size, or the sections' sum, is not PHPUnit's.
fn sections<'a>(
    region: &'a [&'a str],
    (errors, failures): (u64, u64),
) -> Option<Vec<&'a [&'a str]>> {
    let mut blocks = Vec::new();
    let (mut seen_errors, mut seen_failures) = (0, 0);
    let mut at = 0;
    while at < region.len() {
        let Some((size, named)) = section_header(region[at]) else {
            at += 1;
            continue;
        };
        let end = region[at + 1..]
            .iter()
            .position(|l| *l == "--" || section_header(l).is_some())
            .map_or(region.len(), |p| at + 1 + p);
        let body = &region[at + 1..end];
        let starts: Vec<usize> = body
            .iter()
            .enumerate()
            .filter(|(_, l)| numbered(l).is_some())
            .map(|(i, _)| i)
            .collect();
        let in_turn = starts
            .iter()
            .enumerate()
            .all(|(i, &s)| numbered(body[s]).is_some_and(|(n, _)| n == i as u64 + 1));
        if !in_turn || starts.len() as u64 != size {
            return None;
        }
        match named {
            Some(true) => seen_errors += size,
            Some(false) => seen_failures += size,
            None => {}
        }
        if named.is_some() {
            let ends = starts.iter().skip(1).copied().chain([body.len()]);
            for (s, e) in starts.iter().zip(ends) {
                blocks.push(&body[*s..e]);
            }
        }
        at = end;
    }
    (seen_errors == errors && seen_failures == failures).then_some(blocks)
}

/// `There were 4 failures:`, `There was 1 error:`, `There was 1 risky test:`: the number of
/// blocks, and whether they are errors (Some(true)), failures (Some(false)) or neither.
fn section_header(line: &str) -> Option<(u64, Option<bool>)> {
    let rest = line
        .strip_prefix("There was ")
        .or_else(|| line.strip_prefix("There were "))?
        .strip_suffix(':')?;
    let (number, kind) = rest.split_once(' ')?;
    let named = match kind {
        "error" | "errors" => Some(true),
        "failure" | "failures" => Some(false),
        _ => None,
    };
    Some((number.parse().ok()?, named))
}

/// `3) rest`, unindented: its number and the rest.
fn numbered(line: &str) -> Option<(u64, &str)> {
    let (number, rest) = line.split_once(") ")?;
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((number.parse().ok()?, rest))
}

/// A block: `1) App\Tests\CalcTest::testAddsWrong`, what it says, then the trace's
/// `/path/CalcTest.php:19` lines (the last is in the test).
fn block_test(block: &[&str]) -> Failed {
    let name = block
        .first()
        .and_then(|l| numbered(l))
        .map_or("", |(_, rest)| data_set_label(rest.trim()));
    let mut test = Failed::named(name);
    let body = block.get(1..).unwrap_or_default();
    let place = body.iter().rev().find_map(|l| {
        let (file, line) = l.trim().rsplit_once(':')?;
        (file.ends_with(".php") && !file.contains(' ')).then_some((file, line.parse().ok()?))
    });
    if let Some((file, line)) = place {
        test.file = Some(file.to_owned());
        test.line = Some(line);
    }
    let said = body
        .iter()
        .copied()
        .filter(|l| !(l.ends_with(char::is_numeric) && l.contains(".php:")));
    test.because(joined(said, 3))
}

/// The name without the data set's values: `testSquare with data set #1 (3, 10)` →
/// `testSquare with data set #1`, `… with data set "a b" (4, 17)` → `… with data set "a b"`.
fn data_set_label(name: &str) -> &str {
    const DATA_SET: &str = " with data set ";
    let Some(at) = name.find(DATA_SET) else {
        return name;
    };
    let label_at = at + DATA_SET.len();
    let label = &name[label_at..];
    let end = if let Some(number) = label.strip_prefix('#') {
        1 + number
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(number.len())
    } else if let Some(quoted) = label.strip_prefix('"') {
        match quoted.find("\" (") {
            Some(close) => close + 2,
            None => label.len(),
        }
    } else {
        label.len()
    };
    &name[..label_at + end]
}

/// PHP's own fatal error before PHPUnit summed up: `PHP Fatal error:  Uncaught ParseError:
/// syntax error, … in /p/tests/XTest.php:14`, `PHP Parse error:  syntax error, … on line 14`.
fn fatal_error(lines: &[&str]) -> Option<String> {
    lines.iter().find_map(|line| {
        let line = line.strip_prefix("PHP ").unwrap_or(line);
        let (kind, said) = ["Fatal error:", "Parse error:"]
            .iter()
            .find_map(|kind| Some((*kind, line.strip_prefix(kind)?.trim())))?;
        let said = said.split_whitespace().collect::<Vec<_>>().join(" ");
        Some(match said.strip_prefix("Uncaught ") {
            Some(exception) => exception.to_owned(),
            None => format!("{kind} {said}"),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::super::{from_output, names};

    const PHPUNIT: &str = "PHPUnit 9.6.7 by Sebastian Bergmann and contributors.\n\n.FE.                                                    4 / 4 (100%)1) Fake::testFake\n\nTime: 00:00.004, Memory: 6.00 MB\n\nThere was 1 error:\n\n1) App\\CalcTest::testDividesByZero\nDivisionByZeroError: Division by zero\n\n/p/src/Calc.php:21\n/p/tests/CalcTest.php:24\n\n--\n\nThere were 2 failures:\n\n1) App\\CalcTest::testAddsWrong\ntwo plus two\nFailed asserting that 4 is identical to 5.\n\n/p/tests/CalcTest.php:19\n\n2) App\\CalcTest::testSquare with data set \"a b::c\" (4, 17)\nFailed asserting that 16 is identical to 17.\n\n/p/tests/CalcTest.php:32\n\nERRORS!\nTests: 4, Assertions: 3, Errors: 1, Failures: 2.\n";

    #[test]
    fn phpunit_names_the_blocks_of_its_sections() {
        let report = from_output(PHPUNIT);
        assert_eq!(
            names(PHPUNIT),
            [
                "App\\CalcTest::testDividesByZero",
                "App\\CalcTest::testAddsWrong",
                "App\\CalcTest::testSquare with data set \"a b::c\""
            ]
        );
        let error = &report.failed[0];
        assert_eq!(error.file.as_deref(), Some("/p/tests/CalcTest.php"));
        assert_eq!(error.line, Some(24));
        assert_eq!(
            error.message.as_deref(),
            Some("DivisionByZeroError: Division by zero")
        );
        assert_eq!(
            report.failed[1].message.as_deref(),
            Some("two plus two Failed asserting that 4 is identical to 5.")
        );
    }

    #[test]
    fn phpunit_names_none_when_a_message_holds_a_block() {
        let out = PHPUNIT.replace("two plus two\n", "two plus two\n\n2) Fake::testFake\n");
        assert!(names(&out).is_empty());
        let out = PHPUNIT.replace("Failures: 2.", "Failures: 3.");
        assert!(names(&out).is_empty());
    }

    #[test]
    fn a_run_that_passed_names_none_a_test_printed() {
        let out =
            format!("{PHPUNIT}\n\nTime: 00:00.017, Memory: 4.00 MB\n\nOK (1 test, 1 assertion)\n");
        assert!(names(&out).is_empty());
    }

    #[test]
    fn data_sets_are_named_by_their_label() {
        for (printed, name) in [
            ("T::t with data set #12 (3, 10)", "T::t with data set #12"),
            ("T::t with data set \"x\" (1)", "T::t with data set \"x\""),
            ("T::t", "T::t"),
        ] {
            assert_eq!(super::data_set_label(printed), name);
        }
    }

    #[test]
    fn a_php_parse_error_is_tests_that_could_not_run() {
        let out = "PHP Fatal error:  Uncaught ParseError: syntax error, unexpected variable \"$this\" in /p/tests/ClientTest.php:14\nStack trace:\n#0 /usr/share/php/PHPUnit/Util/FileLoader.php(49): PHPUnit\\Util\\FileLoader::load()\n";
        assert_eq!(
            from_output(out).could_not_run.as_deref(),
            Some(
                "ParseError: syntax error, unexpected variable \"$this\" in /p/tests/ClientTest.php:14"
            )
        );
    }
}
