//! Failed tests named by a runner nobody tuned to, read as a person reads it: a line that marks
//! one test failed (`[FAIL] calc::add: (0.00s)`, `[  FAILED  ] test_add`, `Failure in
//! test_calc.T.test_add`, ` FAIL  test_ward:4 add works  33%`, `test_add ... [FAIL]`, `====
//! add-1 FAILED`, `  1) calc adds:`), and a closing line that counts the failures (`Failing: 2`,
//! `FAILED (failures=2)`, `2 of 3 tests failed`, `Failed 2`).
//!
//! Read only when no runner's own reader named anything, and only when the names add up to the
//! count: a line a test printed that looks like a mark makes the names disagree with the count,
//! and then none is named (a name lost, none invented).

use super::{Failed, Report, same_test};
use crate::MAX_FINDINGS;

/// Longest name taken from a mark.
const MAX_NAME_CHARS: usize = 300;

/// Words that say tests failed, beside their count.
const FAIL_WORDS: &[&str] = &[
    "fail", "failed", "failing", "failure", "failures", "failed:",
];

/// How near the end the closing count must be, in lines that say something: a runner sums up
/// last (a line or two of timing after it), so a count a test printed earlier is not taken.
const MAX_LINES_AFTER_COUNT: usize = 3;

pub fn read(lines: &[&str], report: &mut Report) {
    let Some((count, at)) = lines
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, line)| !line.trim().is_empty())
        .take(MAX_LINES_AFTER_COUNT + 1)
        .find_map(|(at, line)| counted(line).map(|count| (count, at)))
    else {
        return;
    };
    let lines = &lines[..at];
    if count == 0 || count > MAX_FINDINGS {
        return;
    }
    let mut names: Vec<String> = Vec::new();
    for line in lines {
        if counted(line).is_some() {
            continue;
        }
        let Some(name) = marked(line.trim()) else {
            continue;
        };
        match names.iter_mut().find(|known| is_same(known, &name)) {
            // `==== add-1 adds FAILED` then `==== add-1 FAILED`: the id alone is the name a
            // runner is asked to run.
            Some(known) if name.len() < known.len() => *known = name,
            Some(_) => {}
            None => names.push(name),
        }
        if names.len() > count {
            return;
        }
    }
    if names.len() != count {
        return;
    }
    for name in names {
        report.add(Failed::named(&name));
    }
}

/// Whether two marks name one test: the same words, or the words of one opening the other's.
fn is_same(a: &str, b: &str) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    same_test(a, b)
        || long
            .strip_prefix(short)
            .is_some_and(|rest| rest.starts_with(' '))
}

/// The number of failed tests a closing line counts: `2 failures`, `Failing: 2`,
/// `failures=2`, `2 FAILED TEST(S)`, `Failed<TAB>2`, `2 of 3 tests failed`. A number after the
/// word only past a `:`, `=` or tab (`1 failing, 2 passing` counts 1).
fn counted(line: &str) -> Option<usize> {
    let lower = line.to_ascii_lowercase();
    // Each word with the separator before it.
    let mut words: Vec<(&str, &str)> = Vec::new();
    let mut rest = lower.as_str();
    loop {
        let start = rest
            .find(|c: char| c.is_ascii_alphanumeric())
            .unwrap_or(rest.len());
        if start == rest.len() {
            break;
        }
        let (gap, tail) = rest.split_at(start);
        // `add-1` is a name, not a count.
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')))
            .unwrap_or(tail.len());
        words.push((gap, tail[..end].trim_end_matches('.')));
        rest = &tail[end..];
    }
    let number = |w: &str| w.parse::<usize>().ok().filter(|_| w.len() <= 6);
    let is_fail = |w: &str| FAIL_WORDS.contains(&w);
    // `Skipped 0 Failed 1`: the word's own number, after it, comes first.
    let after = words.windows(2).find_map(|pair| {
        let ((_, word), (gap, n)) = (pair[0], pair[1]);
        (is_fail(word) && gap.contains([':', '=', '\t', ']']))
            .then(|| number(n))
            .flatten()
    });
    if after.is_some() {
        return after;
    }
    for (i, pair) in words.windows(2).enumerate() {
        let ((_, first), (gap, second)) = (pair[0], pair[1]);
        if let (Some(n), true) = (number(first), is_fail(second)) {
            if gap.trim().is_empty() {
                return Some(n);
            }
        }
        // `2 of 3 tests failed`
        if let (Some(n), "of") = (number(first), second) {
            let rest = &words[i + 2..];
            if rest.len() >= 3 && number(rest[0].1).is_some() && is_fail(rest[2].1) {
                return Some(n);
            }
        }
    }
    None
}

/// The test a line marks failed, if it marks one.
fn marked(line: &str) -> Option<String> {
    let line = line.trim_start_matches(['=', '-', '*', ' ']);
    let name = first_mark(line)
        .or_else(|| last_mark(line))
        .or_else(|| numbered(line))?;
    cleaned(name)
}

/// `[FAIL] name`, `[  FAILED  ] name`, `FAIL name`, `Failure in [test] name`.
fn first_mark(line: &str) -> Option<&str> {
    if let Some(rest) = line.strip_prefix('[') {
        let (mark, name) = rest.split_once(']')?;
        return is_mark(mark.trim()).then_some(name);
    }
    if let Some(rest) = line.strip_prefix("Failure in ") {
        return Some(rest.strip_prefix("test ").unwrap_or(rest));
    }
    let (mark, name) = line.split_once(' ')?;
    (mark == "FAIL" || mark == "FAILED").then_some(name)
}

/// `name ... [FAIL]`, `name FAILED`.
fn last_mark(line: &str) -> Option<&str> {
    let (name, mark) = line.trim_end().rsplit_once(' ')?;
    let mark = mark
        .strip_prefix('[')
        .and_then(|m| m.strip_suffix(']'))
        .unwrap_or(mark);
    (mark == "FAIL" || mark == "FAILED").then_some(name)
}

/// `1) calc adds:`: a numbered failure, its name closed by a colon.
fn numbered(line: &str) -> Option<&str> {
    let (number, rest) = line.split_once(") ")?;
    if number.is_empty() || number.len() > 6 || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    rest.strip_suffix(':')
}

fn is_mark(word: &str) -> bool {
    matches!(word, "FAIL" | "FAILED" | "FAILURE")
}

/// A mark's name without what a runner prints around it: dots leading to the mark, a
/// duration (`(0.00s)`), a progress percentage, a closing colon.
fn cleaned(name: &str) -> Option<String> {
    let mut name = name.trim();
    loop {
        let before = name.len();
        name = name.trim_end_matches(['.', ':', ' ', '\t']);
        if let Some((head, time)) = name.strip_suffix(')').and_then(|n| n.rsplit_once('(')) {
            if is_time(time) {
                name = head;
            }
        }
        if let Some((head, percent)) = name.rsplit_once(' ') {
            if percent
                .strip_suffix('%')
                .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            {
                name = head;
            }
        }
        if name.len() == before {
            break;
        }
    }
    let name = name.trim();
    (!name.is_empty() && name.len() <= MAX_NAME_CHARS && name.chars().any(char::is_alphabetic))
        .then(|| name.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// `0.00s`, `12 ms`: a number and a unit of time.
fn is_time(text: &str) -> bool {
    let text = text.trim();
    let digits = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    digits > 0 && matches!(text[digits..].trim(), "s" | "ms" | "sec" | "us" | "µs")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(output: &str) -> Vec<String> {
        let lines: Vec<&str> = output.lines().collect();
        let mut report = Report::default();
        read(&lines, &mut report);
        report.failed.into_iter().map(|f| f.name).collect()
    }

    #[test]
    fn marks_that_add_up_to_the_count() {
        assert_eq!(
            names(
                "[FAIL] calc::add: (0.00s)\n[FAIL] calc::mul: (0.01s)\n[====] Synthesis: Tested: 3 | Passing: 1 | Failing: 2 | Crashing: 0\n"
            ),
            ["calc::add", "calc::mul"]
        );
        assert_eq!(
            names(
                "==== add-1 adds FAILED\n==== add-1 FAILED\ncalc.test:\tTotal\t2\tPassed\t1\tSkipped\t0\tFailed\t1\n"
            ),
            ["add-1"]
        );
        assert_eq!(
            names(
                "    test_add ...        [FAIL]\n    test_sub ...   [OK]\nFAILED (failures=1, successes=1)\n"
            ),
            ["test_add"]
        );
        assert_eq!(
            names("  1) calc adds:\n\n      boom\n\n1 of 3 tests failed\n"),
            ["calc adds"]
        );
    }

    #[test]
    fn marks_that_do_not_add_up_name_none() {
        // A test printed a line shaped like a mark: three names, two failures.
        assert!(names("[FAIL] a\nFAIL fake from a test\n[FAIL] b\nFailing: 2\n").is_empty());
        assert!(names("[FAIL] a\n").is_empty());
        assert!(names("[FAIL] a\nno failures\n").is_empty());
    }
}
