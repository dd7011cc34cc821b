//! Shell tests. shunit2: each test's name on a line of its own as it starts, then an `ASSERT:`
//! line per failed assertion and `shunit2:ERROR testX() returned non-zero return code.` when it
//! returns non-zero; read above its closing `Ran 4 tests.` and `FAILED (failures=4)` lines (the
//! last ones). A test prints among those lines, so they are taken only when the names are as
//! many as `Ran` counts and the assertion and error lines as many as `failures=` counts: a
//! line a test prints to look like one is one more, and then none is named.
//!
//! A test file the shell refused (dash's `calc_test.sh: 6: Syntax error: Bad function name`,
//! bash's `calc_test.sh: line 6: syntax error near unexpected token`) is tests that could not
//! run, read only from the output's last lines: the shell stops there, and a run whose tests
//! ran ends with its runner's summary, not with the shell's error.

use super::{Failed, Report};
use crate::MAX_FINDINGS;

pub fn read(lines: &[&str], report: &mut Report) {
    if let Some(failed) = lines.iter().rposition(|l| failures_count(l).is_some()) {
        read_shunit2(lines, failed, report);
        return;
    }
    if let Some(cause) = shell_syntax_error(lines) {
        report.cannot_run(&cause);
    }
}

fn read_shunit2(lines: &[&str], closing: usize, report: &mut Report) {
    let Some(failures) = failures_count(lines[closing]).filter(|n| *n > 0) else {
        return;
    };
    let Some(ran_at) = lines[..closing].iter().rposition(|l| !l.is_empty()) else {
        return;
    };
    let Some(ran) = lines[ran_at]
        .strip_prefix("Ran ")
        .and_then(|l| {
            l.strip_suffix(" tests.")
                .or_else(|| l.strip_suffix(" test."))
        })
        .and_then(|n| n.parse::<u64>().ok())
    else {
        return;
    };
    let mut tests: Vec<(&str, bool)> = Vec::new();
    let mut marks = 0u64;
    for line in &lines[..ran_at] {
        if is_test_name(line) {
            tests.push((line, false));
        } else if line.starts_with("ASSERT:") || is_return_error(line) {
            marks += 1;
            let Some(current) = tests.last_mut() else {
                return;
            };
            current.1 = true;
        }
    }
    if tests.len() as u64 != ran || marks != failures {
        return;
    }
    for (name, _) in tests.into_iter().filter(|t| t.1).take(MAX_FINDINGS) {
        report.add(Failed::named(name));
    }
}

/// `FAILED (failures=4)` (`FAILED (failures=2,skipped=1)`): the failures.
fn failures_count(line: &str) -> Option<u64> {
    let counts = line.strip_prefix("FAILED (")?.strip_suffix(')')?;
    counts
        .split(',')
        .find_map(|c| c.strip_prefix("failures="))?
        .parse()
        .ok()
}

/// A name shunit2 runs as a test: a shell function whose name starts with `test`.
fn is_test_name(line: &str) -> bool {
    line.starts_with("test")
        && line
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `shunit2:ERROR testX() returned non-zero return code.`
fn is_return_error(line: &str) -> bool {
    line.strip_prefix("shunit2:ERROR ")
        .is_some_and(|l| l.ends_with("() returned non-zero return code."))
}

/// Most lines a shell's refusal of a script takes (bash's error and its quote of the code, a
/// runner's line or two around them).
const MAX_REFUSAL_LINES: usize = 4;

/// The shell's refusal of a script, when it is what the output ends with: dash's `path: 6:
/// Syntax error: …` as the last line, or bash's `path: line 6: syntax error …` as the last line
/// or the one before it (bash then quotes the code, `path: line 6: `code'`).
fn shell_syntax_error(lines: &[&str]) -> Option<String> {
    // The shell's refusal is all a script that never ran prints; a longer output ran something,
    // and a test of it may have printed such a line.
    if lines.iter().filter(|l| !l.trim().is_empty()).count() > MAX_REFUSAL_LINES {
        return None;
    }
    let mut last = lines.iter().rev().filter(|l| !l.trim().is_empty());
    let final_line = *last.next()?;
    if dash_error(final_line).is_some() {
        return Some(final_line.to_owned());
    }
    let candidates = [Some(final_line), last.next().copied()];
    candidates.into_iter().flatten().find_map(|line| {
        let (_, said) = bash_error(line)?;
        said.starts_with("syntax error").then(|| line.to_owned())
    })
}

/// `path: 6: Syntax error: …` (dash): the place and what it says.
fn dash_error(line: &str) -> Option<(&str, &str)> {
    let (place, rest) = line.split_once(": ")?;
    let (number, said) = rest.split_once(": ")?;
    let numbered = !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit());
    (numbered && !place.is_empty() && said.starts_with("Syntax error: ")).then_some((place, said))
}

/// `path: line 6: …` (bash): the place and what it says.
fn bash_error(line: &str) -> Option<(&str, &str)> {
    let (place, rest) = line.split_once(": line ")?;
    let (number, said) = rest.split_once(": ")?;
    let numbered = !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit());
    (numbered && !place.is_empty()).then_some((place, said))
}

#[cfg(test)]
mod tests {
    use super::super::{from_output, names};

    const SHUNIT2: &str = "testAdds\ntestAddsBig\nASSERT:add big expected:<201> but was:<202>\nshunit2:ERROR testAddsBig() returned non-zero return code.\ntestSquareTwo\ntestFails\nASSERT:deliberate failure\n\nRan 4 tests.\n\nFAILED (failures=3)\n";

    #[test]
    fn shunit2_names_the_tests_its_assertions_failed_in() {
        assert_eq!(names(SHUNIT2), ["testAddsBig", "testFails"]);
        assert!(from_output(SHUNIT2).could_not_run.is_none());
    }

    #[test]
    fn shunit2_names_none_when_a_test_prints_a_name_or_an_assertion() {
        // A passing test that prints another test's name: five names where four ran.
        let name = SHUNIT2.replace("testSquareTwo\n", "testSquareTwo\ntestAdds\n");
        assert!(names(&name).is_empty());
        let assert = SHUNIT2.replace("testSquareTwo\n", "testSquareTwo\nASSERT:fake\n");
        assert!(names(&assert).is_empty());
    }

    #[test]
    fn a_script_the_shell_refused_is_tests_that_could_not_run() {
        let dash = "tests/nested/calc_test.sh: 6: Syntax error: Bad function name\n";
        assert_eq!(
            from_output(dash).could_not_run.as_deref(),
            Some("tests/nested/calc_test.sh: 6: Syntax error: Bad function name")
        );
        let bash = "t.sh: line 6: syntax error near unexpected token `('\nt.sh: line 6: `f( ) {'\n";
        assert_eq!(
            from_output(bash).could_not_run.as_deref(),
            Some("t.sh: line 6: syntax error near unexpected token `('")
        );
    }

    #[test]
    fn a_syntax_error_a_test_printed_before_its_runner_summed_up_is_not_the_cause() {
        let printed = "t.sh: 6: Syntax error: Bad function name\ntestA\n\nRan 1 test.\n\nOK\n";
        assert!(from_output(printed).could_not_run.is_none());
        let shunit2 = SHUNIT2.replace("testFails\n", "testFails\nt.sh: 6: Syntax error: x\n");
        assert!(from_output(&shunit2).could_not_run.is_none());
    }
}
