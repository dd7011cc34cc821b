//! busted (Lua), its terminal output handlers (`plainTerminal`, the default off a terminal, and
//! `utfTerminal`): after its last `4 successes / 4 failures / 1 error / 1 pending : 0.01
//! seconds` line, one block per failure and error, `Failure -> spec/x_spec.lua @ 8` (`→` in
//! utfTerminal) then the test's full name (its `describe`s and its `it`, joined by spaces),
//! then the message. What a test prints comes before that line. The blocks must be as many as
//! the line counts, or none is named (a message printed to look like a block). An error with
//! no test's place (`Error -> spec/x_spec.lua:5: unexpected symbol near '='`, then the file) is
//! a spec file that did not load: "could not run".

use super::{Failed, Report, joined};
use crate::MAX_FINDINGS;

pub fn read(lines: &[&str], report: &mut Report) {
    let Some((closing, expected)) = lines
        .iter()
        .enumerate()
        .rev()
        .find_map(|(at, l)| Some((at, closing_count(l)?)))
    else {
        return;
    };
    let region = &lines[closing + 1..];
    let blocks: Vec<(usize, &str, bool)> = region
        .iter()
        .enumerate()
        .filter_map(|(at, l)| {
            let (kind, rest) = block_header(l)?;
            (kind != "Pending").then_some((at, rest, kind == "Error"))
        })
        .collect();
    if blocks.len() as u64 != expected {
        return;
    }
    let mut cause: Option<String> = None;
    for (at, header, _error) in blocks.into_iter().take(MAX_FINDINGS) {
        let name = region.get(at + 1).map_or("", |l| l.trim());
        match header.rsplit_once(" @ ") {
            Some((file, line)) => {
                let said = region[(at + 2).min(region.len())..]
                    .iter()
                    .copied()
                    .take_while(|l| !l.is_empty() && block_header(l).is_none());
                let test = Failed {
                    file: Some(file.to_owned()),
                    line: line.parse().ok(),
                    ..Failed::named(name)
                };
                report.add(test.because(joined(said, 4)));
            }
            // No test's place: the error is the header (a file that did not load, an error
            // in a `describe` body), and the line under it names the file or the block.
            None => {
                cause.get_or_insert_with(|| header.trim().to_owned());
            }
        }
    }
    if let Some(cause) = cause {
        report.cannot_run(&cause);
    }
}

/// `4 successes / 4 failures / 1 error / 1 pending : 0.010518 seconds`: failures and errors.
fn closing_count(line: &str) -> Option<u64> {
    let (counts, time) = line.split_once(" : ")?;
    if !time.ends_with(" seconds") {
        return None;
    }
    let parts: Vec<&str> = counts.split(" / ").collect();
    let [successes, failures, errors, pending] = parts.as_slice() else {
        return None;
    };
    let count = |part: &str, word: &str| -> Option<u64> {
        let (n, w) = part.split_once(' ')?;
        w.starts_with(word).then_some(n.parse().ok()?)
    };
    count(successes, "success")?;
    count(pending, "pending")?;
    Some(count(failures, "failure")? + count(errors, "error")?)
}

/// `Failure -> spec/x_spec.lua @ 8`, `Error → …`, `Pending -> …`: the kind and the rest.
fn block_header(line: &str) -> Option<(&str, &str)> {
    ["Failure", "Error", "Pending"].iter().find_map(|kind| {
        let rest = line.strip_prefix(kind)?;
        let rest = rest
            .strip_prefix(" -> ")
            .or_else(|| rest.strip_prefix(" → "))?;
        Some((*kind, rest))
    })
}

#[cfg(test)]
mod tests {
    use super::super::{from_output, names};

    const BUSTED: &str = "+-+*Failure -> spec/fake_spec.lua @ 1\nprinted by a test\n\n2 successes / 1 failure / 1 error / 1 pending : 0.010518 seconds\n\nPending -> spec/calc_spec.lua @ 34\ncalc is pending\n\nFailure -> spec/calc_spec.lua @ 8\ncalc nested::context adds wrong\nspec/calc_spec.lua:9: Expected objects to be equal.\nPassed in:\n(number) 4\n\nError → spec/calc_spec.lua @ 12\ncalc divides by zero\n./src/calc.lua:6: division by zero\n";

    #[test]
    fn busted_names_the_blocks_after_its_closing_line() {
        let report = from_output(BUSTED);
        assert_eq!(
            names(BUSTED),
            ["calc nested::context adds wrong", "calc divides by zero"]
        );
        assert_eq!(report.failed[0].file.as_deref(), Some("spec/calc_spec.lua"));
        assert_eq!(report.failed[0].line, Some(8));
        assert_eq!(
            report.failed[0].message.as_deref(),
            Some("spec/calc_spec.lua:9: Expected objects to be equal. Passed in: (number) 4")
        );
    }

    #[test]
    fn busted_names_none_when_a_message_holds_a_block() {
        let out = BUSTED.replace(
            "(number) 4\n",
            "(number) 4\nFailure -> spec/fake_spec.lua @ 2\nfake\n",
        );
        assert!(names(&out).is_empty());
    }

    #[test]
    fn a_spec_file_that_did_not_load_is_tests_that_could_not_run() {
        let out = "*+\n1 success / 0 failures / 1 error / 0 pending : 0.000324 seconds\n\nError -> spec/client_spec.lua:5: unexpected symbol near '='\nspec/client_spec.lua\n";
        let report = from_output(out);
        assert!(report.failed.is_empty());
        assert_eq!(
            report.could_not_run.as_deref(),
            Some("spec/client_spec.lua:5: unexpected symbol near '='")
        );
    }
}
