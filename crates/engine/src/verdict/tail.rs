//! What of a failing gate's output tail is shown (in the feedback and in `check`'s text): the
//! tail without the lines that carry no failure information, by class, and how many were left
//! out. The classes are passing-test lines (pytest's `PASSED`, TAP's `ok N` and the YAML block
//! after one, `✓` lines, `... ok`, `--- PASS:`), a tape test's `# name` when all under it
//! passed, progress dots, and coverage tables (coverage.py / pytest-cov, istanbul / nyc / c8 /
//! jest). A line that names a failure, an error, an assertion or a `file:line` is never left
//! out, whatever class it looks like; a tail that would be left with nothing is shown whole.
//! The verdict's `output_tail` itself stays what the command wrote (docs/verdict.md).

/// The tail as shown: its lines worth reading, and what was left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown<'t> {
    pub lines: Vec<&'t str>,
    /// How many lines were left out.
    pub left_out: usize,
    /// Which classes of lines were, in the order of [`Class`].
    classes: [bool; 3],
}

/// A class of lines that carries no failure information.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Passing,
    Coverage,
    Progress,
}

impl Class {
    fn index(self) -> usize {
        match self {
            Class::Passing => 0,
            Class::Coverage => 1,
            Class::Progress => 2,
        }
    }
}

impl Shown<'_> {
    /// What was left out, for a person or an agent: `27 lines left out: passing tests,
    /// coverage table`; none when nothing was.
    pub fn note(&self) -> Option<String> {
        if self.left_out == 0 {
            return None;
        }
        let names = ["passing tests", "coverage table", "progress"];
        let what: Vec<&str> = names
            .iter()
            .zip(self.classes)
            .filter_map(|(name, on)| on.then_some(*name))
            .collect();
        let what = match what.is_empty() {
            true => "blank".to_owned(),
            false => what.join(", "),
        };
        Some(format!(
            "{} line{} left out: {what}",
            self.left_out,
            validator_text::plural(self.left_out)
        ))
    }
}

/// `tail` without the lines that say nothing of a failure (see the module's doc).
pub fn worth_reading(tail: &str) -> Shown<'_> {
    let all: Vec<&str> = tail.lines().collect();
    let mut class: Vec<Option<Class>> = classify(&all);
    tape_headers(&all, &mut class);
    let mut lines = Vec::new();
    let mut classes = [false; 3];
    let mut left_out = 0;
    for (i, (line, this)) in all.iter().zip(&class).enumerate() {
        let blank = line.trim().is_empty();
        let after_blank_or_start = lines.last().is_none_or(|l: &&str| l.trim().is_empty());
        let left_out_around =
            i > 0 && class[i - 1].is_some() && class.get(i + 1).is_some_and(Option::is_some);
        match this {
            Some(this) => {
                classes[this.index()] = true;
                left_out += 1;
            }
            // A blank line inside what is left out, or one it leaves next to another, says
            // nothing either.
            None if blank && (left_out_around || after_blank_or_start) && left_out > 0 => {
                left_out += 1;
            }
            None => lines.push(*line),
        }
    }
    while lines.last().is_some_and(|l| l.trim().is_empty()) && left_out > 0 {
        lines.pop();
        left_out += 1;
    }
    // Nothing left to read: what the failure was is not in the tail, and the whole of it is
    // the best clue there is.
    if lines.iter().all(|l| l.trim().is_empty() || l.trim() == "…") {
        return Shown {
            lines: all,
            left_out: 0,
            classes: [false; 3],
        };
    }
    Shown {
        lines,
        left_out,
        classes,
    }
}

/// Each line's class, or none when it is to be shown.
fn classify(all: &[&str]) -> Vec<Option<Class>> {
    let mut class = Vec::with_capacity(all.len());
    // Inside the YAML block TAP puts after an `ok` line (node --test's `duration_ms`).
    let mut passing_block = false;
    for (i, line) in all.iter().enumerate() {
        let trimmed = line.trim();
        let this = if names_a_failure(line) {
            passing_block = false;
            None
        } else if passing_block {
            passing_block = trimmed != "...";
            Some(Class::Passing)
        } else if passing(line) {
            passing_block = tap_ok(line) && all.get(i + 1).is_some_and(|n| n.trim() == "---");
            Some(Class::Passing)
        } else if coverage(line) {
            Some(Class::Coverage)
        } else if progress(line) {
            Some(Class::Progress)
        } else {
            None
        };
        class.push(this);
    }
    class
}

/// A tape test's `# name` line is left out when every line under it, up to the next test or
/// the summary, was: the test passed.
fn tape_headers(all: &[&str], class: &mut [Option<Class>]) {
    for i in 0..all.len() {
        if !tape_header(all[i]) || class[i].is_some() || names_a_failure(all[i]) {
            continue;
        }
        let mut next = i + 1;
        while next < all.len() && class[next].is_some() {
            next += 1;
        }
        let passed = next > i + 1 || all.get(next).is_some_and(|l| tape_header(l));
        let ends = match all.get(next) {
            None => true,
            Some(line) => line.trim().is_empty() || tape_header(line) || tap_plan(line),
        };
        if passed && ends {
            class[i] = Some(Class::Passing);
        }
    }
}

/// Whether `line` names a failure, an error, an assertion or a place (`file:line`): never left
/// out.
fn names_a_failure(line: &str) -> bool {
    let lower = line.to_lowercase();
    let words = [
        "fail",
        "error",
        "assert",
        "exception",
        "traceback",
        "panic",
        "not ok",
        "warning",
        "expected",
        "actual",
        "timeout",
        "timed out",
        "crash",
        "abort",
    ];
    words.iter().any(|w| lower.contains(w))
        || line.contains(['✗', '✘', '×', '✕', '✖'])
        || has_place(line)
}

/// `name:12` anywhere in `line`: a file and a line number.
fn has_place(line: &str) -> bool {
    let bytes = line.as_bytes();
    bytes.iter().enumerate().any(|(i, &b)| {
        b == b':'
            && i > 0
            && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_')
            && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)
    })
}

/// A line that says a test passed, in one of the runners' words.
fn passing(line: &str) -> bool {
    let trimmed = line.trim();
    let pytest_verbose = trimmed
        .split_whitespace()
        .next()
        .is_some_and(|id| id.contains("::"))
        && strip_percent(trimmed).ends_with(" PASSED");
    let pytest_summary = trimmed
        .strip_prefix("PASSED ")
        .is_some_and(|rest| !rest.contains(' '));
    let check_mark = ['✓', '✔', '√']
        .iter()
        .any(|mark| trimmed.starts_with(*mark) && trimmed[mark.len_utf8()..].starts_with(' '));
    let dots_ok = trimmed.ends_with(" ... ok");
    let go_pass = trimmed.starts_with("--- PASS: ");
    pytest_verbose || pytest_summary || check_mark || dots_ok || go_pass || tap_ok(line)
}

/// TAP's `ok 3 - name` (any depth of subtests).
fn tap_ok(line: &str) -> bool {
    line.trim_start().strip_prefix("ok ").is_some_and(|rest| {
        rest.split(|c: char| !c.is_ascii_digit())
            .next()
            .is_some_and(|n| !n.is_empty())
    })
}

/// TAP's plan, `1..31`.
fn tap_plan(line: &str) -> bool {
    line.trim()
        .split_once("..")
        .is_some_and(|(a, b)| a == "1" && !b.is_empty() && b.bytes().all(|c| c.is_ascii_digit()))
}

/// tape's `# name` before a test's assertions; not its summary (`# tests 31`, `# pass 30`,
/// `# fail 1`, `# ok`, `# skip`, `# todo`).
fn tape_header(line: &str) -> bool {
    let Some(name) = line.strip_prefix("# ") else {
        return false;
    };
    let first = name.split_whitespace().next().unwrap_or_default();
    !name.trim().is_empty() && !["tests", "pass", "fail", "ok", "skip", "todo"].contains(&first)
}

/// `text` without a trailing `[ 42%]`.
fn strip_percent(text: &str) -> &str {
    let Some(open) = text.rfind('[') else {
        return text;
    };
    let inside = &text[open + 1..];
    let percent = inside
        .strip_suffix("%]")
        .is_some_and(|n| !n.trim().is_empty() && n.trim().bytes().all(|b| b.is_ascii_digit()));
    match percent {
        true => text[..open].trim_end(),
        false => text,
    }
}

/// Progress dots: pytest's `test_a.py ....s..  [ 50%]`, unittest's and RSpec's `.....`, with
/// no `F` or `E` (those name failures) in them.
fn progress(line: &str) -> bool {
    if line.starts_with(char::is_whitespace) {
        return false;
    }
    let text = strip_percent(line.trim_end());
    let dots = match text.rsplit_once(' ') {
        Some((file, dots)) if !file.contains(' ') => dots,
        Some(_) => return false,
        None => text,
    };
    dots.contains('.') && dots.chars().all(|c| matches!(c, '.' | 's' | 'x'))
}

/// A line of a coverage report: its banner, its header, a row, a rule, or where it wrote the
/// report.
fn coverage(line: &str) -> bool {
    let trimmed = line.trim();
    coverage_banner(trimmed)
        || coverage_py_header(trimmed)
        || coverage_py_row(trimmed)
        || istanbul_header(trimmed)
        || istanbul_row(trimmed)
        || rule(trimmed)
        || written(trimmed)
}

/// pytest-cov's `==== tests coverage ====` and `____ coverage: platform linux, … ____`.
fn coverage_banner(trimmed: &str) -> bool {
    let inner = trimmed.trim_matches(['=', '-', '_']).trim();
    inner.len() < trimmed.len()
        && (inner == "tests coverage" || inner.starts_with("coverage: platform "))
}

/// coverage.py's `Name  Stmts  Miss  Cover  Missing` (with `Branch BrPart` under --cov-branch).
fn coverage_py_header(trimmed: &str) -> bool {
    let words: Vec<&str> = trimmed.split_whitespace().collect();
    matches!(
        words.as_slice(),
        ["Name", "Stmts", "Miss", "Cover"]
            | ["Name", "Stmts", "Miss", "Cover", "Missing"]
            | ["Name", "Stmts", "Miss", "Branch", "BrPart", "Cover"]
            | [
                "Name", "Stmts", "Miss", "Branch", "BrPart", "Cover", "Missing"
            ]
    )
}

/// coverage.py's `calc.py  10  4  60%  5, 11-13` and its `TOTAL` row.
fn coverage_py_row(trimmed: &str) -> bool {
    let words: Vec<&str> = trimmed.split_whitespace().collect();
    // The name comes first: a `%` word first is no row.
    let Some(cover) = words
        .iter()
        .position(|w| w.ends_with('%'))
        .filter(|&at| at > 0)
    else {
        return false;
    };
    let numbers = &words[1..cover];
    let percent = words[cover].trim_end_matches('%');
    (numbers.len() == 2 || numbers.len() == 4)
        && numbers
            .iter()
            .all(|n| n.bytes().all(|b| b.is_ascii_digit()))
        && is_number(percent)
        && words[cover + 1..].iter().all(|w| line_ranges(w))
}

/// istanbul's `File | % Stmts | % Branch | % Funcs | % Lines | Uncovered Line #s`.
fn istanbul_header(trimmed: &str) -> bool {
    trimmed.starts_with("File") && trimmed.contains("| % Stmts")
}

/// istanbul's `calc.js | 62.5 | 0 | 66.66 | 60 | 4-5` (and `All files`).
fn istanbul_row(trimmed: &str) -> bool {
    let cells: Vec<&str> = trimmed.split('|').map(str::trim).collect();
    cells.len() == 6
        && !cells[0].is_empty()
        && cells[1..5].iter().all(|c| is_number(c))
        && line_ranges(cells[5])
}

/// A table's rule: `-----|------`, `=======`, `+----+` (ten or more dashes or equals signs,
/// nothing else but `|`, `+`, `:` and spaces).
fn rule(trimmed: &str) -> bool {
    trimmed.chars().filter(|c| matches!(c, '-' | '=')).count() >= 10
        && trimmed
            .chars()
            .all(|c| matches!(c, '-' | '=' | '|' | '+' | ':' | ' '))
}

/// coverage.py's `Coverage HTML written to dir htmlcov` (and XML, JSON, LCOV).
fn written(trimmed: &str) -> bool {
    trimmed.starts_with("Coverage ") && trimmed.contains(" written to ")
}

fn is_number(text: &str) -> bool {
    !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && text.bytes().filter(|b| *b == b'.').count() <= 1
}

/// Uncovered lines as reports list them: `5, 11-13`, `4-5`, `12->14`, or none.
fn line_ranges(text: &str) -> bool {
    text.bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b',' | b'-' | b'>' | b' '))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pytest_passed_lines_and_the_coverage_table_are_left_out() {
        let tail = "test_calc.py::test_add_0 PASSED                                          [  3%]\n\
test_calc.py::test_divide FAILED                                         [100%]\n\
\n\
=================================== FAILURES ===================================\n\
E       assert 3 == 3.5\n\
test_calc.py:94: AssertionError\n\
================================ tests coverage ================================\n\
_______________ coverage: platform linux, python 3.11.7-final-0 ________________\n\
\n\
Name      Stmts   Miss  Cover   Missing\n\
---------------------------------------\n\
calc.py      10      4    60%   5, 11-13\n\
---------------------------------------\n\
TOTAL        10      4    60%\n\
=========================== short test summary info ============================\n\
FAILED test_calc.py::test_divide - assert 3 == 3.5\n\
========================= 1 failed, 30 passed in 0.46s =========================\n";
        let shown = worth_reading(tail);
        assert_eq!(
            shown.lines,
            [
                "test_calc.py::test_divide FAILED                                         [100%]",
                "",
                "=================================== FAILURES ===================================",
                "E       assert 3 == 3.5",
                "test_calc.py:94: AssertionError",
                "=========================== short test summary info ============================",
                "FAILED test_calc.py::test_divide - assert 3 == 3.5",
                "========================= 1 failed, 30 passed in 0.46s =========================",
            ]
        );
        assert_eq!(
            shown.note().as_deref(),
            Some("9 lines left out: passing tests, coverage table")
        );
    }

    #[test]
    fn a_line_that_names_a_failure_or_a_place_is_kept_whatever_it_looks_like() {
        for line in [
            "test_x.py::test_error_path PASSED  [ 50%]",
            "ok 3 handles a failure",
            "test_x.py ....F..  [ 50%]",
            "src/a.rs:12 ... ok",
            "calc.py  10  4  60%  error",
            "not ok 4 should be equal",
        ] {
            let tail = format!("{line}\nFAILED x\n");
            assert_eq!(worth_reading(&tail).lines, [line, "FAILED x"], "{line}");
        }
    }

    #[test]
    fn tape_passing_tests_and_nyc_go_the_failing_test_stays() {
        let tail = "# add 1\nok 1 should be strictly equal\nok 2 still fine\n# divide\nnot ok 3 should be strictly equal\n  ---\n    operator: equal\n    at: Test.<anonymous> (/t/test.js:77:5)\n  ...\n# more 0\nok 4 should be strictly equal\n\n1..4\n# tests 4\n# pass  3\n# fail  1\n\n----------|---------|----------|---------|---------|-------------------\nFile      | % Stmts | % Branch | % Funcs | % Lines | Uncovered Line #s \n----------|---------|----------|---------|---------|-------------------\nAll files |    62.5 |        0 |   66.66 |      60 |                   \n calc.js  |    62.5 |        0 |   66.66 |      60 | 4-5               \n----------|---------|----------|---------|---------|-------------------\n";
        let shown = worth_reading(tail);
        assert_eq!(
            shown.lines,
            [
                "# divide",
                "not ok 3 should be strictly equal",
                "  ---",
                "    operator: equal",
                "    at: Test.<anonymous> (/t/test.js:77:5)",
                "  ...",
                "",
                "1..4",
                "# tests 4",
                "# pass  3",
                "# fail  1",
            ]
        );
        assert_eq!(shown.left_out, 12);
    }

    #[test]
    fn node_tests_yaml_after_an_ok_goes_with_it() {
        let tail = "ok 1 - adds\n  ---\n  duration_ms: 0.5\n  ...\nnot ok 2 - divides\n  ---\n  duration_ms: 0.7\n  failureType: 'testCodeFailure'\n  ...\n";
        let shown = worth_reading(tail);
        assert_eq!(shown.lines[0], "not ok 2 - divides");
        assert_eq!(shown.lines.len(), 5);
        assert_eq!(shown.left_out, 4);
    }

    #[test]
    fn odd_lines_are_judged_without_a_panic() {
        let odd = "50%\n%\n| | | | | |\n[\n[%]\n# \n#\nok \nok\n✓\n:\n:1\n... ok\n1..\n..\n";
        let shown = worth_reading(odd);
        assert!(shown.lines.contains(&"50%"), "{shown:?}");
        assert!(shown.lines.contains(&":1"), "{shown:?}");
    }

    #[test]
    fn a_tail_of_nothing_but_passing_lines_is_shown_whole() {
        let tail = "ok 1 a\nok 2 b\n";
        let shown = worth_reading(tail);
        assert_eq!(shown.lines, ["ok 1 a", "ok 2 b"]);
        assert_eq!(shown.note(), None);
    }

    #[test]
    fn other_runners_passing_lines_and_dots() {
        let tail = "test tests::adds ... ok\ntest_adds (t.T.test_adds) ... ok\n  ✓ adds (2 ms)\n--- PASS: TestAdd (0.00s)\n......s..\ntest_a.py ....  [ 40%]\nPASSED test_a.py::test_b\nthe end\n";
        let shown = worth_reading(tail);
        assert_eq!(shown.lines, ["the end"]);
        assert_eq!(
            shown.note().as_deref(),
            Some("7 lines left out: passing tests, progress")
        );
    }
}
