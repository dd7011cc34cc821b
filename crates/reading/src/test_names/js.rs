//! JavaScript's runners that print a report of their own (TAP is read in `tap`), each read
//! where it prints its verdicts: node --test's spec reporter (`✖ failing tests:`), jest's
//! `● Suite › test` headers, vitest's `FAIL  file > suite > test` lines, mocha's numbered
//! failure list, AVA's closing failure block, jasmine's `Failures:` list and uvu's `FAIL`
//! blocks. A test's name is its title path joined with ` > ` (jasmine prints only its full
//! name, the titles joined by spaces; AVA its own `file › title`). A suite that could not load
//! (jest's "Test suite failed to run", vitest's failed file, mocha's "Exception during run",
//! AVA's uncaught exception, node's own crash report for the runners that print nothing
//! else) is "could not run".
//!
//! Which runner printed the output is read from its closing summary, the last one in the
//! output: a test runs, and prints, before its runner sums up, so another runner's summary a
//! test printed comes earlier and does not make its lines read as that runner's.

use super::node::{is_test_file, load_error};
use super::{Failed, Report, joined};

/// A JavaScript runner, known by its closing summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Runner {
    NodeSpec,
    Jest,
    Vitest,
    Mocha,
    Ava,
    Jasmine,
    Uvu,
}

pub fn read(lines: &[&str], report: &mut Report) {
    match lines.iter().rev().find_map(|l| closer(l)) {
        Some(Runner::NodeSpec) => node_spec(lines, report),
        Some(Runner::Jest) => jest(lines, report),
        Some(Runner::Vitest) => vitest(lines, report),
        Some(Runner::Mocha) => mocha(lines, report),
        Some(Runner::Ava) => ava(lines, report),
        Some(Runner::Jasmine) => jasmine(lines, report),
        Some(Runner::Uvu) => uvu(lines, report),
        // A runner that stopped before it could sum up.
        None => crashed(lines, report),
    }
}

/// The runner whose closing summary `line` is a line of.
fn closer(line: &str) -> Option<Runner> {
    let text = line.trim();
    let words: Vec<&str> = text.split_whitespace().take(4).collect();
    let count = words.first().is_some_and(|w| w.parse::<u64>().is_ok());
    let runner = match words.as_slice() {
        ["ℹ", "duration_ms", ..] if line.starts_with('ℹ') => Runner::NodeSpec,
        ["Test", "Suites:", ..] | ["Tests:", ..] if !line.starts_with(' ') => Runner::Jest,
        ["Test", "Files", ..] | ["Tests", ..]
            if text.starts_with("Test Files  ") || text.starts_with("Tests  ") =>
        {
            Runner::Vitest
        }
        [_, "passing" | "failing" | "pending", ..] if count => Runner::Mocha,
        [
            _,
            "test" | "tests",
            "failed" | "passed" | "skipped" | "todo",
            ..,
        ]
        | [_, "known", "failure" | "failures", ..]
        | [_, "uncaught", "exception" | "exceptions", ..]
        | [_, "unhandled", "rejection" | "rejections", ..]
            if count && line.starts_with("  ") =>
        {
            Runner::Ava
        }
        [
            _,
            "spec," | "specs,",
            _,
            "failure" | "failures" | "failure," | "failures,",
            ..,
        ] if count && !line.starts_with(' ') => Runner::Jasmine,
        ["Total:", n, ..] if n.parse::<u64>().is_ok() && line.starts_with("  ") => Runner::Uvu,
        _ => return None,
    };
    Some(runner)
}

/// node --test's spec reporter: its closing `✖ failing tests:` list repeats each failure's
/// line (title and duration) without its suites, so the failures are the body's `✖` lines
/// that the list repeats, named with the `▶ suite` lines above them; a line a test printed
/// is not in the list. A todo test is listed too, marked `# reason` after its duration: it
/// is not a failure.
fn node_spec(lines: &[&str], report: &mut Report) {
    let Some(start) = lines.iter().rposition(|l| l.trim() == "✖ failing tests:") else {
        return;
    };
    let listed: std::collections::HashSet<&str> = lines[start + 1..]
        .iter()
        .map(|l| l.trim())
        .filter(|l| l.starts_with("✖ "))
        .collect();
    let mut path: Vec<(usize, String)> = Vec::new();
    for (i, line) in lines[..start].iter().enumerate() {
        let trimmed = line.trim_start();
        let depth = line.len() - trimmed.len();
        if let Some(suite) = trimmed.strip_prefix("▶ ") {
            path.retain(|(d, _)| *d < depth);
            path.push((depth, timed(suite).0.to_owned()));
            continue;
        }
        let Some(test) = trimmed.strip_prefix("✖ ") else {
            continue;
        };
        path.retain(|(d, _)| *d < depth);
        if !listed.contains(trimmed.trim_end()) {
            continue;
        }
        let (title, todo) = timed(test);
        if todo {
            continue;
        }
        if is_test_file(title) && path.is_empty() {
            did_not_load(lines, title, report);
            continue;
        }
        let mut titles: Vec<&str> = path.iter().map(|(_, n)| n.as_str()).collect();
        titles.push(title);
        let message = joined(
            lines[i + 1..]
                .iter()
                .copied()
                .take_while(|l| l.len() - l.trim_start().len() > depth)
                .filter(|l| !l.trim_start().starts_with("at "))
                .take(3),
            3,
        );
        report.add(Failed::named(&super::node::path_name(&titles)).because(message));
    }
}

/// A test file that failed before any of its tests: the tests could not run, with the error
/// it failed with. The first cause is kept, so the output is searched for it once.
fn did_not_load(lines: &[&str], file: &str, report: &mut Report) {
    if report.could_not_run.is_none() {
        report.cannot_run(&load_error(lines).unwrap_or_else(|| format!("{file} did not load")));
    }
}

/// A spec line's title without its duration, and whether a `# reason` follows the duration
/// (node marks a todo or skipped test so): `adds (1.2ms)` → (`adds`, false), `later (0.2ms) #
/// not written yet` → (`later`, true).
fn timed(text: &str) -> (&str, bool) {
    let text = text.trim();
    let Some(close) = text.rfind("ms)") else {
        return (text, false);
    };
    let Some(open) = text[..close].rfind(" (") else {
        return (text, false);
    };
    let duration = &text[open + 2..close];
    if duration.is_empty() || !duration.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return (text, false);
    }
    (
        text[..open].trim(),
        text[close + 3..].trim_start().starts_with('#'),
    )
}

/// jest: `  ● math › subtracts` heads each failure's details; `● Test suite failed to run`
/// heads a file that could not load.
fn jest(lines: &[&str], report: &mut Report) {
    for (i, line) in lines.iter().enumerate() {
        let Some(title) = line.strip_prefix("  ● ") else {
            continue;
        };
        // jest's heading over a test file's console output, not a test.
        if title.trim() == "Console" {
            continue;
        }
        let details = lines[i + 1..].iter().copied().take_while(|l| {
            !l.starts_with("  ● ") && !l.starts_with("FAIL ") && !l.starts_with("PASS ")
        });
        if title.trim() == "Test suite failed to run" {
            let cause = joined(details.take(6), 2);
            report.cannot_run(cause.as_deref().unwrap_or("a test suite failed to run"));
            continue;
        }
        let message = joined(
            details
                .filter(|l| !l.trim_start().starts_with("at "))
                .take(4),
            3,
        );
        report.add(Failed::named(&title.replace(" › ", " > ")).because(message));
    }
}

/// vitest: ` FAIL  src/a.test.ts > suite > test` in its failure list under `⎯ Failed Tests
/// N ⎯`, ` FAIL  src/a.test.ts [ src/a.test.ts ]` for a file that could not run under `⎯
/// Failed Suites N ⎯`. A test's output comes earlier (and may hold such lines): each list is
/// the last of its kind, and holds the number of entries its heading says.
fn vitest(lines: &[&str], report: &mut Report) {
    for kind in [" Failed Suites ", " Failed Tests "] {
        let Some((start, count)) = lines.iter().enumerate().rev().find_map(|(at, l)| {
            let rest = l.strip_prefix('⎯')?.trim_start_matches('⎯').trim_start();
            let n = rest
                .strip_prefix(kind.trim_start())?
                .split(' ')
                .next()?
                .parse::<usize>()
                .ok()?;
            Some((at, n))
        }) else {
            continue;
        };
        let entries = lines[start + 1..]
            .iter()
            .enumerate()
            .take_while(|(_, l)| !(l.starts_with('⎯') && l.contains(" Failed ")))
            .filter_map(|(at, l)| {
                Some((start + 1 + at, l.trim_start().strip_prefix("FAIL ")?.trim()))
            })
            .take(count);
        for (at, rest) in entries {
            let message = joined(
                lines[at + 1..]
                    .iter()
                    .copied()
                    .take_while(|l| !l.trim_start().starts_with("FAIL ") && !l.contains('⎯'))
                    .take(8),
                2,
            );
            if rest.ends_with(']') {
                report.cannot_run(&format!(
                    "{}: {}",
                    rest.split(" [").next().unwrap_or(rest),
                    message.as_deref().unwrap_or("the file could not run")
                ));
                continue;
            }
            if let Some((_file, titles)) = rest.split_once(" > ") {
                report.add(Failed::named(titles).because(message));
            }
        }
    }
}

/// mocha: after `N failing`, each `  1) suite` whose title runs over lines to one ending in
/// `:`, then the error.
fn mocha(lines: &[&str], report: &mut Report) {
    // The last such line is mocha's own; a test may print one before it.
    let Some(start) = lines.iter().rposition(|l| {
        let t = l.trim();
        t.ends_with(" failing")
            && t.split(' ')
                .next()
                .is_some_and(|n| n.parse::<u32>().is_ok())
    }) else {
        return;
    };
    let mut i = start + 1;
    while i < lines.len() {
        let trimmed = lines[i].trim_start();
        let numbered = trimmed
            .split_once(") ")
            .filter(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
        let Some((_, first)) = numbered else {
            i += 1;
            continue;
        };
        let mut titles = vec![first.trim().trim_end_matches(':').to_owned()];
        let mut j = i + 1;
        if !first.trim_end().ends_with(':') {
            while j < lines.len() {
                let title = lines[j].trim();
                j += 1;
                if title.is_empty() {
                    break;
                }
                titles.push(title.trim_end_matches(':').to_owned());
                if title.ends_with(':') {
                    break;
                }
            }
        }
        let message = joined(
            lines[j..]
                .iter()
                .copied()
                .take_while(|l| !l.trim_start().starts_with("at ") && !l.trim().is_empty()),
            2,
        );
        report.add(Failed::named(&super::node::path_name(&titles)).because(message));
        i = j;
    }
}

/// AVA's default reporter: after the run, its failures again between two `─` rules, each
/// headed by its title (`file › title`) after two blank lines (or the opening rule and one),
/// then `N tests failed` under the closing rule. A test's output is printed live, before the
/// first rule; the block's headings are taken when there are as many as AVA counts failed.
/// A file that crashed is `Uncaught exception in file` and the error.
fn ava(lines: &[&str], report: &mut Report) {
    let rule = |l: &&str| l.trim() == "─";
    let Some(end) = lines.iter().rposition(rule) else {
        return;
    };
    let failed = lines[end + 1..].iter().find_map(|l| {
        match l.split_whitespace().collect::<Vec<_>>().as_slice() {
            [n, "test" | "tests", "failed"] => n.parse::<usize>().ok(),
            _ => None,
        }
    });
    if let (Some(failed), Some(start)) = (failed, lines[..end].iter().rposition(rule)) {
        let headings: Vec<usize> = (start + 1..end)
            .filter(|&at| {
                let line = lines[at];
                line.starts_with("  ")
                    && !line.starts_with("   ")
                    && lines[at - 1].is_empty()
                    && (at - 1 == start + 1 || lines[at - 2].is_empty())
            })
            .collect();
        if headings.len() == failed {
            for (k, &at) in headings.iter().enumerate() {
                let body = &lines[at + 1..headings.get(k + 1).copied().unwrap_or(end)];
                report.add(ava_failure(lines[at].trim(), body));
            }
        }
    }
    for (at, line) in lines[..end].iter().enumerate() {
        if line.trim_start().starts_with("Uncaught exception in ") {
            let error = lines[at + 1..]
                .iter()
                .map(|l| l.trim())
                .find(|l| !l.is_empty());
            report.cannot_run(error.unwrap_or(line.trim()));
        }
    }
}

/// One failure of AVA's closing block: its title, its place (`test/a.test.js:8`, the line
/// after the title) and the first lines of what it says, the source excerpt left out.
fn ava_failure(title: &str, body: &[&str]) -> Failed {
    let mut texts = body
        .iter()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .map(|l| l.trim());
    let place = texts.clone().next().and_then(|first| {
        let (file, line) = first.rsplit_once(':')?;
        Some((file.to_owned(), line.parse::<u32>().ok()?))
    });
    if place.is_some() {
        texts.next();
    }
    let message = joined(texts.filter(|l| !l.starts_with("› ")), 3);
    let mut test = Failed::named(title).because(message);
    if let Some((file, line)) = place {
        test.file = Some(file);
        test.line = Some(line);
    }
    test
}

/// jasmine: `Failures:` then `1) full name` / `  Message:` / `    …` / `  Stack:` for each
/// failed spec, numbered from 1, then `N specs, M failures`. A spec's output is printed while
/// it runs, before the list; the list is the last, and taken when it holds M entries.
fn jasmine(lines: &[&str], report: &mut Report) {
    let Some(end) = lines
        .iter()
        .rposition(|l| closer(l) == Some(Runner::Jasmine))
    else {
        return;
    };
    let Some(failed) = lines[end]
        .split(", ")
        .nth(1)
        .and_then(|f| f.split(' ').next())
        .and_then(|n| n.parse::<usize>().ok())
    else {
        return;
    };
    let Some(start) = lines[..end].iter().rposition(|l| *l == "Failures:") else {
        return;
    };
    let mut entries = Vec::new();
    for at in start + 1..end {
        let Some((number, name)) = lines[at].split_once(") ") else {
            continue;
        };
        if number.parse::<usize>().ok() == Some(entries.len() + 1)
            && lines.get(at + 1).is_some_and(|l| l.trim() == "Message:")
        {
            entries.push((at, name.trim()));
        }
    }
    if entries.len() != failed {
        return;
    }
    for (at, name) in entries {
        let body = lines[at + 2..end]
            .iter()
            .copied()
            .take_while(|l| l.starts_with(' ') && l.trim() != "Stack:");
        let mut test = Failed::named(name).because(joined(body, 2));
        let place = lines[at + 2..end]
            .iter()
            .take_while(|l| l.starts_with(' ') || l.is_empty())
            .filter_map(|l| super::node::frame_place(l.trim().strip_prefix("at ")?))
            .find(|(file, _)| !file.contains("/node_modules/") && !file.starts_with('<'));
        if let Some((file, line)) = place {
            test.file = Some(file);
            test.line = Some(line);
        }
        report.add(test);
    }
}

/// uvu: each suite's progress line ends `(passed / total)`, its failures follow it as
/// `FAIL  suite  "test"` blocks, and `Total:` and `Passed:` close the run. A test prints while
/// its suite runs, before that suite's progress line ends: a suite's failures are the first
/// `total - passed` blocks after its progress line, and all are taken when they add up to
/// `Total - Passed`.
fn uvu(lines: &[&str], report: &mut Report) {
    let Some(end) = lines.iter().rposition(|l| closer(l) == Some(Runner::Uvu)) else {
        return;
    };
    let number = |l: &str, key: &str| l.trim().strip_prefix(key)?.trim().parse::<u64>().ok();
    let total = number(lines[end], "Total:");
    let passed = lines[end + 1..].iter().find_map(|l| number(l, "Passed:"));
    let (Some(total), Some(passed)) = (total, passed) else {
        return;
    };
    let mut found = Vec::new();
    let mut counted = 0u64;
    let mut at = 0;
    while at < end {
        let Some((ok, of)) = progress(lines[at]) else {
            at += 1;
            continue;
        };
        let failed = of.saturating_sub(ok);
        counted = counted.saturating_add(failed);
        at += 1;
        let mut taken = 0;
        while at < end && taken < failed && progress(lines[at]).is_none() {
            if let Some(name) = uvu_failure(lines[at]) {
                found.push((at, name));
                taken += 1;
            }
            at += 1;
        }
    }
    if counted != total.saturating_sub(passed) || found.len() as u64 != counted {
        return;
    }
    for (at, name) in found {
        let body = lines[at + 1..end]
            .iter()
            .copied()
            .take_while(|l| uvu_failure(l).is_none() && progress(l).is_none());
        let mut test = Failed::named(&name).because(joined(
            body.clone().filter(|l| !l.trim_start().starts_with("at ")),
            1,
        ));
        let place = body
            .filter_map(|l| super::node::frame_place(l.trim().strip_prefix("at ")?))
            .find(|(file, _)| !file.contains("/node_modules/") && !file.starts_with("node:"));
        if let Some((file, line)) = place {
            test.file = Some(file);
            test.line = Some(line);
        }
        report.add(test);
    }
}

/// uvu's progress line's `(passed / total)`.
fn progress(line: &str) -> Option<(u64, u64)> {
    let (_, counts) = line.trim_end().strip_suffix(')')?.rsplit_once('(')?;
    let (ok, of) = counts.split_once(" / ")?;
    let (ok, of) = (ok.trim().parse().ok()?, of.trim().parse().ok()?);
    (ok <= of).then_some((ok, of))
}

/// `FAIL  suite  "test"` (`FAIL  "test"` outside a suite) → `suite > test`.
fn uvu_failure(line: &str) -> Option<String> {
    let rest = line.trim().strip_prefix("FAIL ")?.trim_start();
    let rest = rest.strip_suffix('"')?;
    if let Some(test) = rest.strip_prefix('"') {
        return Some(test.to_owned());
    }
    let (suite, test) = rest.split_once("  \"")?;
    Some(format!("{} > {test}", suite.trim()))
}

/// A runner that stopped before its summary: mocha's `Exception during run: …`, or node's own
/// report of the error that killed it (`Error: Cannot find module 'x'` at the margin, then
/// `Require stack:` or the stack), as jasmine, uvu and tape leave it when a test file does not
/// load.
fn crashed(lines: &[&str], report: &mut Report) {
    if let Some(cause) = lines
        .iter()
        .find_map(|l| l.trim_start().strip_prefix("Exception during run: "))
    {
        report.cannot_run(cause);
        return;
    }
    let error = lines.windows(2).find_map(|pair| {
        let (line, next) = (pair[0], pair[1]);
        let (kind, _) = line.split_once(": ")?;
        let kind = kind.split(" [").next()?;
        let named = !kind.is_empty()
            && kind.bytes().all(|b| b.is_ascii_alphanumeric())
            && (kind.ends_with("Error") || kind.ends_with("Exception"));
        (named && (next == "Require stack:" || next.starts_with("    at "))).then_some(line)
    });
    if let Some(error) = error {
        report.cannot_run(error);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{from_output, names};

    #[test]
    fn jest_names_its_failure_headers() {
        let out = "FAIL ./sum.test.js\n  math\n    ✕ subtracts (3 ms)\n\n  ● math › subtracts\n\n    expect(received).toBe(expected)\n\n      at Object.<anonymous> (sum.test.js:5:20)\n\nTests:       1 failed, 1 passed, 2 total\n";
        assert_eq!(names(out), ["math > subtracts"]);
    }

    #[test]
    fn mocha_names_its_failure_list() {
        let out = "  math\n    ✔ adds\n    1) subtracts\n\n  1 passing (5ms)\n  1 failing\n\n  1) math\n       subtracts:\n     AssertionError: expected 1 to equal 2\n      at Context.<anonymous> (test.js:5:10)\n";
        assert_eq!(names(out), ["math > subtracts"]);
    }

    #[test]
    fn the_last_runner_summary_decides_whose_lines_are_read() {
        // node --test's spec output, where a test printed jest's failure header and summary
        // before node's own summary.
        let out = "  ● fake › fails\nTests:       1 failed, 1 total\n✔ prints (1.2ms)\n✖ real (0.5ms)\n  Error: boom\nℹ tests 2\nℹ fail 1\nℹ duration_ms 20.5\n\n✖ failing tests:\n\ntest at a.test.js:3:1\n✖ real (0.5ms)\n  Error: boom\n";
        assert_eq!(names(out), ["real"]);
    }

    #[test]
    fn a_node_spec_todo_is_listed_failing_but_is_not_a_failure() {
        let out = "✖ later (6.2ms) # not written yet\n✖ hash # in name (0.2ms)\nℹ duration_ms 20\n\n✖ failing tests:\n\n✖ later (6.2ms) # not written yet\n✖ hash # in name (0.2ms)\n";
        assert_eq!(names(out), ["hash # in name"]);
    }

    #[test]
    fn ava_names_its_closing_block_when_it_counts_as_many() {
        let out = "\n  ✘ [fail]: hostile › fake Error thrown in test\n  1 test failed\n  ✘ [fail]: names › adds Error\n  ─\n\n  names › adds\n\n  test/names.test.js:8\n\n   8:   t.is(1, 2);\n\n  Difference (- actual, + expected):\n\n  - 1\n  + 2\n\n  ─\n\n  1 test failed\n";
        let report = from_output(out);
        assert_eq!(names(out), ["names › adds"]);
        assert_eq!(report.failed[0].line, Some(8));
        let uncaught = "\n  Uncaught exception in test/a.test.js\n\n  Error: Cannot find module 'axios'\n\n  ✘ test/a.test.js exited with a non-zero exit code: 1\n  ─\n\n  1 uncaught exception\n";
        assert_eq!(
            from_output(uncaught).could_not_run.as_deref(),
            Some("Error: Cannot find module 'axios'")
        );
    }

    #[test]
    fn jasmine_names_its_last_failures_list() {
        let out = "Started\nFailures:\n1) fake fails\n  Message:\n    Expected true to be false.\n1 spec, 1 failure\n.F\n\nFailures:\n1) outer inner deep fails\n  Message:\n    Expected false to be true.\n  Stack:\n        at UserContext.<anonymous> (/p/spec/aSpec.js:18:21)\n\n2 specs, 1 failure\nFinished in 0.01 seconds\n";
        let report = from_output(out);
        assert_eq!(names(out), ["outer inner deep fails"]);
        assert_eq!(report.failed[0].line, Some(18));
    }

    #[test]
    fn uvu_takes_each_suites_failures_after_its_progress_line() {
        let out = "hostile.js\nFAIL  fake  \"fails\"\n  Total:     1\n  Passed:    0\n•   (1 / 1)\nnames.js\n math  • ✘   (1 / 2)\n\n  FAIL  math  \"adds\"\n    Expected values to be strictly equal:  (is)\n    at Object.handler (/p/tests/names.js:7:10)\n\n\n  Total:     3\n  Passed:    2\n  Duration:  3ms\n";
        let report = from_output(out);
        assert_eq!(names(out), ["math > adds"]);
        assert_eq!(report.failed[0].line, Some(7));
    }

    #[test]
    fn vitest_reads_the_last_failure_list_as_long_as_its_heading_says() {
        let out = "stdout | test/h.test.js > prints\n⎯⎯⎯ Failed Tests 1 ⎯⎯⎯\n FAIL  test/a.test.js > fake\n\n⎯⎯⎯ Failed Tests 2 ⎯⎯⎯\n\n FAIL  test/a.test.js > math > adds\nAssertionError: expected 1 to be 2\n⎯⎯⎯[1/2]⎯\n\n FAIL  test/a.test.js > top\nError: boom\n⎯⎯⎯[2/2]⎯\n\n Test Files  1 failed (1)\n      Tests  2 failed (2)\n";
        assert_eq!(names(out), ["math > adds", "top"]);
    }

    #[test]
    fn a_runner_that_crashed_before_its_summary_could_not_run() {
        let out = "node:internal/modules/cjs/loader:1210\n  throw err;\n  ^\n\nError: Cannot find module 'axios'\nRequire stack:\n- /p/spec/aSpec.js\n";
        assert_eq!(
            from_output(out).could_not_run.as_deref(),
            Some("Error: Cannot find module 'axios'")
        );
    }
}
