//! EUnit (Erlang), plain and `verbose`: the `calc_tests: add_big_test...*failed*` lines (a
//! test's description and its `*failed*` or `*timed out*` verdict, indented under `verbose`),
//! read above its closing `  Failed: 3.  Skipped: 0.  Passed: 2.` line (the last one, under a
//! rule of `=`), taken only when they are as many as it counts failed. EUnit captures what a
//! test prints and shows it quoted (`output:<<"…">>`), and a line a test still gets out is one
//! more than the count, so then none is named.

use super::{Failed, Report, joined};
use crate::MAX_FINDINGS;

pub fn read(lines: &[&str], report: &mut Report) {
    let Some((closing, failed)) = lines
        .iter()
        .enumerate()
        .rev()
        .find_map(|(at, l)| Some((at, closing_failed(l)?)))
    else {
        return;
    };
    let ruled = closing > 0 && is_rule(lines[closing - 1]);
    if !ruled || failed == 0 {
        return;
    }
    let region = &lines[..closing - 1];
    let verdicts: Vec<(usize, &str)> = region
        .iter()
        .enumerate()
        .filter_map(|(at, l)| {
            let name = l
                .strip_suffix("...*failed*")
                .or_else(|| l.strip_suffix("...*timed out*"))?;
            Some((at, name.trim()))
        })
        .collect();
    if verdicts.len() as u64 != failed {
        return;
    }
    for (at, name) in verdicts.into_iter().take(MAX_FINDINGS) {
        let mut test = Failed::named(name);
        let body = region[at + 1..]
            .iter()
            .copied()
            .take_while(|l| !l.is_empty());
        let mut said = Vec::new();
        for line in body {
            // `in function calc_tests:add_big_test/0 (test/calc_tests.erl, line 6)`: the place.
            if let Some(place) = line
                .strip_prefix("in function ")
                .and_then(|l| l.rsplit_once(" ("))
                .and_then(|(_, p)| p.strip_suffix(')'))
                .and_then(|p| p.split_once(", line "))
            {
                test.file = Some(place.0.to_owned());
                test.line = place.1.parse().ok();
            } else if line.starts_with("**") || !said.is_empty() {
                if line.trim_start().starts_with("output:") {
                    break;
                }
                said.push(line);
            }
        }
        report.add(test.because(joined(said, 6)));
    }
}

/// `  Failed: 3.  Skipped: 0.  Passed: 2.`: the failed.
fn closing_failed(line: &str) -> Option<u64> {
    let rest = line.strip_prefix("  Failed: ")?;
    let (failed, rest) = rest.split_once(".  Skipped: ")?;
    let (skipped, rest) = rest.split_once(".  Passed: ")?;
    let passed = rest.strip_suffix('.')?;
    skipped.parse::<u64>().ok()?;
    passed.parse::<u64>().ok()?;
    failed.parse().ok()
}

fn is_rule(line: &str) -> bool {
    line.len() >= 20 && line.bytes().all(|b| b == b'=')
}

#[cfg(test)]
mod tests {
    use super::super::{from_output, names};

    const EUNIT: &str = "======================== EUnit ========================\nmodule 'calc_tests'\n  calc_tests: add_test...ok\n  calc_tests: add_big_test...*failed*\nin function calc_tests:add_big_test/0 (test/calc_tests.erl, line 6)\nin call from eunit_test:run_testfun/1 (eunit_test.erl, line 71)\n**error:{assertEqual,[{module,calc_tests},\n              {expected,201},\n              {value,202}]}\n  output:<<\"calc_tests: fake...*failed*\">>\n\n  calc_tests:9: -square_test_/0-fun-3- (gr\u{fffd}\u{fffd}e)...*failed*\nin function calc_tests:'-square_test_/0-fun-3-'/0 (test/calc_tests.erl, line 9)\n**error:boom\n  output:<<\"\">>\n\n  [done in 0.016 s]\n=======================================================\n  Failed: 2.  Skipped: 0.  Passed: 2.\n";

    #[test]
    fn eunit_names_its_failed_verdicts() {
        let report = from_output(EUNIT);
        assert_eq!(
            names(EUNIT),
            [
                "calc_tests: add_big_test",
                "calc_tests:9: -square_test_/0-fun-3- (gr\u{fffd}\u{fffd}e)"
            ]
        );
        assert_eq!(
            report.failed[0].file.as_deref(),
            Some("test/calc_tests.erl")
        );
        assert_eq!(report.failed[0].line, Some(6));
        assert_eq!(
            report.failed[0].message.as_deref(),
            Some("**error:{assertEqual,[{module,calc_tests}, {expected,201}, {value,202}]}")
        );
    }

    #[test]
    fn eunit_names_none_when_a_test_prints_a_verdict() {
        let forged = EUNIT.replace(
            "  calc_tests: add_test...ok\n",
            "  calc_tests: add_test...ok\ncalc_tests: fake_test...*failed*\n",
        );
        assert!(names(&forged).is_empty());
        let no_rule = EUNIT.replace(
            "=======================================================\n",
            "",
        );
        assert!(names(&no_rule).is_empty());
    }
}
