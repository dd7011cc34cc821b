//! Ruby's runners. RSpec: the `rspec ./spec/x_spec.rb:12 # Group nested name` lines of the
//! `Failed examples:` list that follows its closing `N examples, M failures` line, as many as
//! that line counts; an error outside the examples (a spec file that did not load) is "could
//! not run". minitest: the numbered `Failure:`/`Error:` blocks between its last `Finished in`
//! line and its closing `N runs, … failures, … errors` line, numbered in order and as many as
//! that line counts. A test's prints come before both runners' closing lines, so they cannot
//! name a test; a count that does not add up (a name or message printed across lines to look
//! like one of the runner's) names none. test-unit: the `Failure: test_x(Class)` / `Error:
//! test_x(Class): Class: message` blocks, each under a rule of `=`, that it prints as tests fail
//! (so among what tests print) before its last `Finished in` line, taken only when they are as
//! many as its closing `N tests, … failures, … errors, …` line counts: a block a test prints is
//! one more than that. An exception Ruby itself reports (`file:3:in `require': cannot load such
//! file -- x (LoadError)`) where no runner summed up is "could not run".

use super::{Failed, Report, joined};
use crate::MAX_FINDINGS;

pub fn read(lines: &[&str], report: &mut Report) {
    // Whichever closing line comes last is the runner's: another's was printed by a test.
    let rspec = rspec_closing(lines);
    let minitest = minitest_closing(lines);
    let test_unit = test_unit_closing(lines);
    let last = [&rspec, &minitest, &test_unit]
        .iter()
        .filter_map(|c| c.as_ref().map(|(at, _)| *at))
        .max();
    match (rspec, minitest, test_unit) {
        (Some(rspec), _, _) if Some(rspec.0) == last => read_rspec(lines, rspec, report),
        (_, Some(minitest), _) if Some(minitest.0) == last => {
            read_minitest(lines, minitest, report);
        }
        (_, _, Some(test_unit)) => read_test_unit(lines, test_unit, report),
        _ => {
            if let Some(cause) = ruby_exception(lines) {
                report.cannot_run(&cause);
            }
        }
    }
}

/// A closing line's place and its counts.
type Closing<'a> = (usize, Vec<(u64, &'a str)>);

/// RSpec's closing line (`10 examples, 5 failures, 1 pending`, `0 examples, 0 failures, 1
/// error occurred outside of examples`), right under its `Finished in` line.
fn rspec_closing<'a>(lines: &[&'a str]) -> Option<Closing<'a>> {
    lines.iter().enumerate().rev().find_map(|(at, l)| {
        let counted = counts(l, &["example", "failure", "pending", "error"])?;
        let after_finished = at > 0 && lines[at - 1].starts_with("Finished in ");
        (after_finished && counted[0].1 == "example").then_some((at, counted))
    })
}

/// minitest's closing line, `13 runs, 11 assertions, 6 failures, 1 errors, 1 skips`.
fn minitest_closing<'a>(lines: &[&'a str]) -> Option<Closing<'a>> {
    lines.iter().enumerate().rev().find_map(|(at, l)| {
        let counted = counts(l, &["run", "assertion", "failure", "error", "skip"])?;
        (counted.len() == 5 && counted[0].1 == "run").then_some((at, counted))
    })
}

/// test-unit's closing line, `5 tests, 4 assertions, 2 failures, 1 errors, 0 pendings, 0
/// omissions, 0 notifications`.
fn test_unit_closing<'a>(lines: &[&'a str]) -> Option<Closing<'a>> {
    const WORDS: [&str; 7] = [
        "test",
        "assertion",
        "failure",
        "error",
        "pending",
        "omission",
        "notification",
    ];
    lines.iter().enumerate().rev().find_map(|(at, l)| {
        let counted = counts(l, &WORDS)?;
        (counted.len() == WORDS.len() && counted[0].1 == "test").then_some((at, counted))
    })
}

/// The counts of a closing line such as `10 examples, 5 failures, 1 pending` or `13 runs, 11
/// assertions, 6 failures, 1 errors, 1 skips`, each with its word, when every part is one.
fn counts<'a>(line: &'a str, words: &[&str]) -> Option<Vec<(u64, &'a str)>> {
    let mut found = Vec::new();
    for part in line.split(", ") {
        let (number, word) = part.split_once(' ')?;
        let word = word.trim_end_matches('s');
        if !words.iter().any(|w| word.starts_with(w)) {
            return None;
        }
        found.push((number.parse().ok()?, word));
    }
    (!found.is_empty()).then_some(found)
}

fn count_of(counts: &[(u64, &str)], word: &str) -> u64 {
    counts
        .iter()
        .find(|(_, w)| w.starts_with(word))
        .map_or(0, |(n, _)| *n)
}

/// The `Failed examples:` list under RSpec's closing line.
fn read_rspec(lines: &[&str], (at, counted): Closing<'_>, report: &mut Report) {
    let failures = count_of(&counted, "failure");
    if failures == 0 {
        if count_of(&counted, "error") > 0 {
            report.cannot_run(&rspec_load_error(&lines[..at]));
        }
        return;
    }
    let mut listed: Vec<(&str, &str)> = Vec::new();
    let mut rest = lines[at + 1..].iter().skip_while(|l| l.is_empty());
    if rest.next() != Some(&"Failed examples:") {
        return;
    }
    for line in rest.skip_while(|l| l.is_empty()) {
        // `rspec ./spec/a\ b_spec.rb:3 # name`: a path's spaces and `#` are escaped, so the
        // first ` # ` ends it.
        let Some((place, name)) = line
            .strip_prefix("rspec ")
            .and_then(|l| l.split_once(" # "))
        else {
            break;
        };
        if listed.len() >= MAX_FINDINGS {
            break;
        }
        listed.push((place, name));
    }
    if listed.len() as u64 != failures.min(MAX_FINDINGS as u64) {
        return;
    }
    let messages = rspec_messages(&lines[..at.saturating_sub(1)]);
    for (place, name) in listed {
        let mut test = Failed::named(name.trim());
        let place = place.trim_start_matches("./");
        match place.rsplit_once(':') {
            Some((file, line)) if line.parse::<u32>().is_ok() => {
                test.file = Some(file.to_owned());
                test.line = line.parse().ok();
            }
            // `./spec/x_spec.rb[1:4:2]`: an example among others on one line.
            _ => test.file = place.split('[').next().map(str::to_owned),
        }
        if let Some((_, message)) = messages.iter().find(|(n, _)| *n == test.name) {
            test.message = message.clone();
        }
        report.add(test);
    }
}

/// Each `  1) Group name` block of RSpec's last `Failures:` section, with what it says (the
/// expectation, without the code line and the backtrace).
fn rspec_messages<'a>(lines: &[&'a str]) -> Vec<(&'a str, Option<String>)> {
    let Some(start) = lines.iter().rposition(|l| *l == "Failures:") else {
        return Vec::new();
    };
    let mut blocks: Vec<(&str, usize)> = Vec::new();
    for (at, line) in lines.iter().enumerate().skip(start + 1) {
        let name = line.strip_prefix("  ").and_then(numbered);
        if let Some(name) = name.filter(|_| blocks.len() < MAX_FINDINGS) {
            blocks.push((name, at));
        }
    }
    let ends: Vec<usize> = blocks
        .iter()
        .skip(1)
        .map(|(_, at)| *at)
        .chain([lines.len()])
        .collect();
    blocks
        .iter()
        .zip(ends)
        .map(|((name, at), end)| {
            let said = lines[at + 1..end].iter().map(|l| l.trim()).filter(|l| {
                !l.starts_with("Failure/Error:")
                    && !l.starts_with("# ")
                    && !l.starts_with("(compared using")
            });
            (*name, joined(said, 3).map(|m| super::clip(&m)))
        })
        .collect()
}

/// `3) rest` (a block's number, unindented): the rest.
fn numbered(line: &str) -> Option<&str> {
    let (number, rest) = line.split_once(") ")?;
    (!number.is_empty() && number.bytes().all(|b| b.is_ascii_digit())).then_some(rest)
}

/// RSpec's `An error occurred while loading ./spec/x_spec.rb.` block: the exception's class
/// (`LoadError:`) and its indented message.
fn rspec_load_error(lines: &[&str]) -> String {
    let Some(start) = lines
        .iter()
        .rposition(|l| l.starts_with("An error occurred "))
    else {
        return "an error occurred outside of examples".to_owned();
    };
    let what = lines[start]
        .split(". - Did you mean?")
        .next()
        .unwrap_or_default()
        .trim_end_matches('.');
    let block = &lines[start + 1..];
    let class = block.iter().position(|l| {
        l.strip_suffix(':').is_some_and(|c| {
            c.starts_with(|ch: char| ch.is_ascii_uppercase())
                && c.chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == ':')
        })
    });
    let Some(class) = class else {
        return what.to_owned();
    };
    let message = joined(
        block[class + 1..]
            .iter()
            .copied()
            .take_while(|l| l.starts_with("  ")),
        2,
    )
    .unwrap_or_default();
    format!("{} {message} ({what})", block[class])
}

/// minitest's blocks, after the last `Finished in` line before its closing line.
fn read_minitest(lines: &[&str], (at, counted): Closing<'_>, report: &mut Report) {
    let expected = count_of(&counted, "failure") + count_of(&counted, "error");
    if expected == 0 {
        return;
    }
    let Some(start) = lines[..at]
        .iter()
        .rposition(|l| l.starts_with("Finished in "))
    else {
        return;
    };
    let region = &lines[start + 1..at];
    // Blocks are numbered from 1 in order (skips among them under `-v`); a number out of turn
    // was printed by a test.
    let mut blocks: Vec<usize> = Vec::new();
    let mut next = 1;
    for (offset, line) in region.iter().enumerate() {
        let Some(label) = numbered(line.trim_start()) else {
            continue;
        };
        let number = line.trim_start().split(')').next().unwrap_or_default();
        if !line.starts_with(' ') || number != next.to_string() {
            return;
        }
        next += 1;
        if matches!(label, "Failure:" | "Error:") {
            blocks.push(offset);
        }
    }
    if blocks.len() as u64 != expected {
        return;
    }
    for offset in blocks.into_iter().take(MAX_FINDINGS) {
        if let Some(test) = minitest_block(&region[offset + 1..]) {
            report.add(test);
        }
    }
}

/// One block after its `  1) Failure:` line: `Class#test_name [file:line]:` (a failure) or
/// `Class#test_name:` (an error), then what it says.
fn minitest_block(block: &[&str]) -> Option<Failed> {
    let header = block.first()?.strip_suffix(':')?;
    let (name, place) = match header.strip_suffix(']').and_then(|h| h.rsplit_once(" [")) {
        Some((name, place)) => (name, Some(place)),
        None => (header, None),
    };
    let mut test = Failed::named(name);
    if let Some((file, line)) = place.and_then(|p| p.rsplit_once(':')) {
        test.file = Some(file.to_owned());
        test.line = line.parse().ok();
    }
    let said = block[1..].iter().copied().take_while(|l| !l.is_empty());
    Some(test.because(joined(said, 3)))
}

/// test-unit's `Failure: test_x(Class)` and `Error: test_x(Class): Class: message` blocks,
/// each right under a rule of `=` and before its last `Finished in` line (it prints them as
/// tests fail, among what tests print), as many as its closing line counts.
fn read_test_unit(lines: &[&str], (at, counted): Closing<'_>, report: &mut Report) {
    let expected = count_of(&counted, "failure") + count_of(&counted, "error");
    if expected == 0 {
        return;
    }
    let Some(finished) = lines[..at]
        .iter()
        .rposition(|l| l.starts_with("Finished in "))
    else {
        return;
    };
    let region = &lines[..finished];
    let mut blocks: Vec<(usize, Failed)> = Vec::new();
    for (offset, pair) in region.windows(2).enumerate() {
        if !is_rule(pair[0]) {
            continue;
        }
        let test = if let Some(name) = pair[1].strip_prefix("Failure: ") {
            Failed::named(name)
        } else if let Some(rest) = pair[1].strip_prefix("Error: ") {
            let (name, said) = split_error(rest);
            Failed::named(name).because(said.map(str::to_owned))
        } else {
            continue;
        };
        blocks.push((offset + 1, test));
    }
    if blocks.len() as u64 != expected {
        return;
    }
    for (header, mut test) in blocks.into_iter().take(MAX_FINDINGS) {
        let body = region[header + 1..]
            .iter()
            .copied()
            .take_while(|l| !is_rule(l));
        let mut said = Vec::new();
        for line in body {
            // `test/x.rb:10:in `test_x'`: the place; then the source it quotes (`  => 10:`).
            if test.file.is_none()
                && let Some((file, rest)) = line.split_once(":in ")
                && let Some((file, number)) = file.rsplit_once(':')
                && let Ok(number) = number.parse::<u32>()
                && rest.starts_with(['`', '\''])
            {
                test.file = Some(file.to_owned());
                test.line = Some(number);
                continue;
            }
            let quoted = line.trim_start().trim_start_matches("=>").trim_start();
            let source = quoted
                .split_once(':')
                .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            if !source && !line.starts_with("diff:") {
                said.push(line);
            }
            if line.starts_with("diff:") {
                break;
            }
        }
        if test.message.is_none() {
            test = test.because(joined(said, 3));
        }
        report.add(test);
    }
}

/// test-unit's rule above and below a block: a line of `=` only.
fn is_rule(line: &str) -> bool {
    line.len() >= 20 && line.bytes().all(|b| b == b'=')
}

/// `test_raises(CalcTest): ArgumentError: boom`: the name (up to the `): ` that an exception's
/// class follows) and the exception.
fn split_error(rest: &str) -> (&str, Option<&str>) {
    let mut from = 0;
    while let Some(found) = rest[from..].find("): ") {
        let end = from + found + 1;
        let after = &rest[end + 2..];
        let class = after.split([':', ' ']).next().unwrap_or_default();
        let is_class = class.starts_with(|c: char| c.is_ascii_uppercase())
            && class.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if is_class {
            return (&rest[..end], Some(after));
        }
        from = end;
    }
    (rest, None)
}

/// Ruby's report of an exception nothing rescued: `path:3:in `require': cannot load such file
/// -- x (LoadError)` (Ruby 3.4 quotes `'require'`), then its `\tfrom` lines. The first one.
fn ruby_exception(lines: &[&str]) -> Option<String> {
    lines.iter().enumerate().find_map(|(at, line)| {
        let (place, rest) = line.split_once(":in ")?;
        let rest = rest.strip_prefix(['`', '\''])?;
        let (_, said) = rest.split_once("': ")?;
        let (message, class) = said.strip_suffix(')')?.rsplit_once(" (")?;
        let is_class = class.starts_with(|c: char| c.is_ascii_uppercase())
            && class
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
        let ruby = place.contains(".rb:")
            || lines
                .get(at + 1)
                .is_some_and(|next| next.starts_with("\tfrom "));
        (is_class && ruby).then(|| format!("{class}: {message}"))
    })
}

#[cfg(test)]
mod tests {
    use super::super::{from_output, names};

    const RSPEC: &str = "..F\nrspec ./spec/fake_spec.rb:1 # printed by a test\n\nFailures:\n\n  1) Calc adds wrong\n     Failure/Error: expect(Calc.add(2, 2)).to eq(5)\n\n       expected: 5\n            got: 4\n\n       (compared using ==)\n     # ./spec/calc_spec.rb:11:in `block (2 levels)'\n\nFinished in 0.01 seconds (files took 0.06 seconds to load)\n3 examples, 1 failure\n\nFailed examples:\n\nrspec ./spec/calc_spec.rb:10 # Calc adds wrong\n\n";

    #[test]
    fn rspec_names_the_examples_of_its_closing_list() {
        let report = from_output(RSPEC);
        assert_eq!(names(RSPEC), ["Calc adds wrong"]);
        let test = &report.failed[0];
        assert_eq!(test.file.as_deref(), Some("spec/calc_spec.rb"));
        assert_eq!(test.line, Some(10));
        assert_eq!(test.message.as_deref(), Some("expected: 5 got: 4"));
    }

    #[test]
    fn rspec_names_none_when_its_list_does_not_add_up() {
        // A description printed across two lines adds a line the count does not have.
        let out = RSPEC.replace(
            "rspec ./spec/calc_spec.rb:10 # Calc adds wrong\n",
            "rspec ./spec/calc_spec.rb:10 # Calc adds wrong\nrspec ./spec/fake_spec.rb:1 # fake\n",
        );
        assert!(names(&out).is_empty());
        assert!(from_output(&out).could_not_run.is_none());
    }

    #[test]
    fn an_rspec_load_error_is_tests_that_could_not_run() {
        let out = "\nAn error occurred while loading ./spec/client_spec.rb.\nFailure/Error: require \"faraday\"\n\nLoadError:\n  cannot load such file -- faraday\n# ./spec/client_spec.rb:3:in `<top (required)>'\n\n\nFinished in 0.00004 seconds (files took 0.11 seconds to load)\n0 examples, 0 failures, 1 error occurred outside of examples\n\n";
        let report = from_output(out);
        assert!(report.failed.is_empty());
        assert_eq!(
            report.could_not_run.as_deref(),
            Some(
                "LoadError: cannot load such file -- faraday (An error occurred while loading ./spec/client_spec.rb)"
            )
        );
    }

    const MINITEST: &str = "# Running:\n\n.F.E\n\nFinished in 0.004224s, 3077.9685 runs/s, 2604.4349 assertions/s.\n\n  1) Failure:\nCalcTest#test_with space::a.b#c [test/calc_test.rb:30]:\nnamed oddly\n\n  2) Error:\nCalcTest#test_divides_by_zero:\nZeroDivisionError: divided by 0\n    lib/calc.rb:7:in `/'\n\n4 runs, 3 assertions, 1 failures, 1 errors, 0 skips\n";

    #[test]
    fn minitest_names_its_numbered_blocks() {
        let report = from_output(MINITEST);
        assert_eq!(
            names(MINITEST),
            [
                "CalcTest#test_with space::a.b#c",
                "CalcTest#test_divides_by_zero"
            ]
        );
        assert_eq!(report.failed[0].file.as_deref(), Some("test/calc_test.rb"));
        assert_eq!(report.failed[0].line, Some(30));
        assert_eq!(report.failed[0].message.as_deref(), Some("named oddly"));
        assert_eq!(
            report.failed[1].message.as_deref(),
            Some("ZeroDivisionError: divided by 0 lib/calc.rb:7:in `/'")
        );
    }

    #[test]
    fn minitest_names_none_when_a_block_is_out_of_turn() {
        // A message that prints a block of its own: two blocks numbered 2.
        let out = MINITEST.replace(
            "named oddly\n",
            "named oddly\n\n  2) Failure:\nFake#test_fake [x.rb:1]:\nfake\n",
        );
        assert!(names(&out).is_empty());
    }

    const TEST_UNIT: &str = "Loaded suite test/nested/test_calc\nStarted\n.F\n===============================================================================\nFailure: test_adds_big(CalcTest)\ntest/nested/test_calc.rb:10:in `test_adds_big'\n      9:   def test_adds_big\n  => 10:     assert_equal 201, Calc.add(200, 1)\n     11:   end\n<201> expected but was\n<202>\n\ndiff:\n? 201\n===============================================================================\nE\n===============================================================================\nError: test_raises(CalcTest): ArgumentError: boom\ntest/nested/test_calc.rb:24:in `test_raises'\n===============================================================================\nF\n===============================================================================\nFailure: test: größe zählt(CalcTest::square)\ntest/nested/test_calc.rb:15:in `block (2 levels) in <class:CalcTest>'\n<9> expected but was\n<-9>\n===============================================================================\n.\nFinished in 0.016072886 seconds.\n-------------------------------------------------------------------------------\n5 tests, 4 assertions, 2 failures, 1 errors, 0 pendings, 0 omissions, 0 notifications\n40% passed\n";

    #[test]
    fn test_unit_names_its_blocks() {
        let report = from_output(TEST_UNIT);
        assert_eq!(
            names(TEST_UNIT),
            [
                "test_adds_big(CalcTest)",
                "test_raises(CalcTest)",
                "test: größe zählt(CalcTest::square)"
            ]
        );
        let first = &report.failed[0];
        assert_eq!(first.file.as_deref(), Some("test/nested/test_calc.rb"));
        assert_eq!(first.line, Some(10));
        assert_eq!(
            first.message.as_deref(),
            Some("<201> expected but was <202>")
        );
        assert_eq!(
            report.failed[1].message.as_deref(),
            Some("ArgumentError: boom")
        );
    }

    #[test]
    fn test_unit_names_none_when_a_test_prints_a_block() {
        let rule = "=".repeat(79);
        let forged = TEST_UNIT.replacen(
            "Started\n",
            &format!("Started\n{rule}\nFailure: test_fake(CalcTest)\n{rule}\n"),
            1,
        );
        assert!(names(&forged).is_empty());
        // An error whose name holds `): ` ends where an exception's class follows.
        let odd = TEST_UNIT.replace(
            "Error: test_raises(CalcTest): ArgumentError",
            "Error: test: a): b(CalcTest): ArgumentError",
        );
        assert!(names(&odd).contains(&"test: a): b(CalcTest)".to_owned()));
    }

    #[test]
    fn a_ruby_load_error_before_any_test_is_tests_that_could_not_run() {
        let out = "<internal:/usr/lib/ruby/kernel_require.rb>:85:in `require': cannot load such file -- faraday (LoadError)\n\tfrom /t/test/client_test.rb:4:in `<top (required)>'\nrake aborted!\n";
        assert_eq!(
            from_output(out).could_not_run.as_deref(),
            Some("LoadError: cannot load such file -- faraday")
        );
    }
}
