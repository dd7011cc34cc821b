//! ExUnit (`mix test`): the `  1) test adds big (CalcTest)` blocks printed as tests fail, read
//! up to the `Finished in` line right above its closing `6 tests, 4 failures` line (the last
//! one). The blocks must be numbered 1, 2, 3… in order and be as many as that line counts, or
//! none is named: a test prints among the blocks, so a block it prints is one the runner's
//! numbering or count contradicts.

use super::{Failed, Report, joined};
use crate::MAX_FINDINGS;

pub fn read(lines: &[&str], report: &mut Report) {
    let Some((closing, failures)) = lines
        .iter()
        .enumerate()
        .rev()
        .find_map(|(at, l)| Some((at, closing_failures(l)?)))
    else {
        return;
    };
    let finished = closing > 0 && lines[closing - 1].starts_with("Finished in ");
    if !finished || failures == 0 {
        return;
    }
    let region = &lines[..closing - 1];
    let mut blocks: Vec<(usize, &str)> = Vec::new();
    for (at, line) in region.iter().enumerate() {
        let Some((number, name)) = block_header(line) else {
            continue;
        };
        if number != blocks.len() as u64 + 1 {
            return;
        }
        blocks.push((at, name));
    }
    if blocks.len() as u64 != failures {
        return;
    }
    let ends: Vec<usize> = blocks
        .iter()
        .skip(1)
        .map(|(at, _)| *at)
        .chain([region.len()])
        .collect();
    for ((at, name), end) in blocks.into_iter().zip(ends).take(MAX_FINDINGS) {
        let body = &region[at + 1..end];
        let mut test = Failed::named(name);
        if let Some((file, line)) = body
            .first()
            .map(|l| l.trim())
            .and_then(|l| l.rsplit_once(':'))
            .filter(|(_, n)| n.parse::<u32>().is_ok())
        {
            test.file = Some(file.to_owned());
            test.line = line.parse().ok();
        }
        let said = body
            .iter()
            .skip(usize::from(test.file.is_some()))
            .copied()
            .take_while(|l| l.trim() != "stacktrace:")
            .filter(|l| !l.trim_start().starts_with("code:"));
        report.add(test.because(joined(said, 3)));
    }
}

/// `  1) test adds big (CalcTest)`: the block's number and the test's name, as ExUnit indents
/// it (two spaces, at the margin of nothing else).
fn block_header(line: &str) -> Option<(u64, &str)> {
    let rest = line.strip_prefix("  ")?;
    let (number, name) = rest.split_once(") ")?;
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // A test's name ends with its module in parentheses.
    (name.ends_with(')') && name.contains(" (")).then_some((number.parse().ok()?, name))
}

/// `6 tests, 4 failures` (`1 doctest, 6 tests, 4 failures, 1 excluded`, `1 test, 1 failure`):
/// the failures, when every part is a count ExUnit prints and tests and failures are there.
fn closing_failures(line: &str) -> Option<u64> {
    let mut failures = None;
    let mut tests = false;
    for part in line.split(", ") {
        let (number, word) = part.split_once(' ')?;
        let number: u64 = number.parse().ok()?;
        match word {
            "test" | "tests" => tests = true,
            "failure" | "failures" => failures = Some(number),
            "doctest" | "doctests" | "property" | "properties" | "excluded" | "skipped"
            | "invalid" => {}
            _ => return None,
        }
    }
    failures.filter(|_| tests)
}

#[cfg(test)]
mod tests {
    use super::super::{from_output, names};

    const EXUNIT: &str = "Compiling 1 file (.ex)\n\n  1) test raises (Nested.MoreTest)\n     test/nested/more_test.exs:4\n     ** (RuntimeError) boom\n     code: raise \"boom\"\n     stacktrace:\n       test/nested/more_test.exs:5: (test)\n\n..\n\n  2) test square größe zählt (CalcTest)\n     test/calc_test.exs:17\n     Assertion with == failed\n     code:  assert Calc.square(2) == 5\n     left:  4\n     right: 5\n     stacktrace:\n       test/calc_test.exs:18: (test)\n\n\nFinished in 0.02 seconds (0.00s async, 0.02s sync)\n4 tests, 2 failures\n\nRandomized with seed 0\n";

    #[test]
    fn exunit_names_its_numbered_blocks() {
        let report = from_output(EXUNIT);
        assert_eq!(
            names(EXUNIT),
            [
                "test raises (Nested.MoreTest)",
                "test square größe zählt (CalcTest)"
            ]
        );
        assert_eq!(report.failed[1].file.as_deref(), Some("test/calc_test.exs"));
        assert_eq!(report.failed[1].line, Some(17));
        assert_eq!(
            report.failed[1].message.as_deref(),
            Some("Assertion with == failed left:  4 right: 5")
        );
    }

    #[test]
    fn exunit_names_none_when_a_test_prints_a_block() {
        // A passing test's print, numbered as the next block would be: one more than counted.
        let forged = EXUNIT.replace("..\n", "..\n  2) test fake (CalcTest)\n");
        assert!(names(&forged).is_empty());
        // A closing line printed by a test is not the last one.
        let early = EXUNIT.replace("..\n", "Finished in 0.01 seconds\n1 tests, 1 failures\n");
        assert_eq!(names(&early).len(), 2);
        // Without a count, nothing.
        let cut = EXUNIT.replace("4 tests, 2 failures\n", "");
        assert!(names(&cut).is_empty());
    }
}
