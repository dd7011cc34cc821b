//! JavaScript's runners, each read where it prints its verdicts: node --test's TAP (`not ok`
//! under its `# Subtest:` path, leaves only) and spec reporter (`✖ failing tests:`), jest's
//! `● Suite › test` headers, vitest's `FAIL  file > suite > test` lines and mocha's numbered
//! failure list. A test's name is its title path joined with ` > `. A suite that could not
//! load (jest's "Test suite failed to run", vitest's failed file) is "could not run".

use super::{Failed, Report, joined};

pub fn read(lines: &[&str], report: &mut Report) {
    if lines.iter().any(|l| l.trim() == "TAP version 13") {
        if lines
            .iter()
            .any(|l| l.trim_start().starts_with("# Subtest: "))
        {
            tap(lines, report);
        } else {
            tape(lines, report);
        }
    }
    node_spec(lines, report);
    jest(lines, report);
    vitest(lines, report);
    mocha(lines, report);
}

/// node --test's TAP: `# Subtest: name` opens a test at its indentation; `not ok N - name` at
/// the same indentation closes it failed. A failure whose YAML says `subtestsFailed` only
/// repeats its children's.
fn tap(lines: &[&str], report: &mut Report) {
    let mut path: Vec<(usize, String)> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let depth = line.len() - trimmed.len();
        if let Some(name) = trimmed.strip_prefix("# Subtest: ") {
            path.retain(|(d, _)| *d < depth);
            path.push((depth, name.to_owned()));
            continue;
        }
        let Some(rest) = trimmed.strip_prefix("not ok ") else {
            continue;
        };
        let Some((_, name)) = rest.split_once(" - ") else {
            continue;
        };
        let name = name.split(" # ").next().unwrap_or(name).trim();
        let yaml: Vec<&str> = lines[i + 1..]
            .iter()
            .copied()
            .take_while(|l| {
                let t = l.trim_start();
                l.len() - t.len() > depth || t.is_empty()
            })
            .collect();
        path.retain(|(d, _)| *d < depth);
        if yaml
            .iter()
            .any(|l| l.contains("failureType: 'subtestsFailed'"))
        {
            continue;
        }
        if is_test_file(name) && path.is_empty() {
            did_not_load(lines, name, report);
            continue;
        }
        let mut titles: Vec<&str> = path.iter().map(|(_, n)| n.as_str()).collect();
        titles.push(name);
        let message = yaml.iter().enumerate().find_map(|(at, l)| {
            let value = l.trim_start().strip_prefix("error: ")?;
            let indent = l.len() - l.trim_start().len();
            if matches!(value.trim(), "|-" | "|" | ">-" | ">") {
                // A block scalar: the lines indented under it.
                return joined(
                    yaml[at + 1..].iter().copied().take_while(|l| {
                        l.trim().is_empty() || l.len() - l.trim_start().len() > indent
                    }),
                    3,
                );
            }
            Some(yaml_scalar(value.trim()))
        });
        let mut test =
            Failed::named(&titles.join(" > ")).because(message.filter(|m| !m.is_empty()));
        if let Some((file, line)) = tap_place(&yaml) {
            test.file = Some(file);
            test.line = Some(line);
        }
        report.add(test);
    }
}

/// A one-line YAML scalar as node's TAP writes it: `'single'` (a quote doubled inside),
/// `"double"` (backslash escapes), or plain.
fn yaml_scalar(value: &str) -> String {
    if let Some(inner) = value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
        return inner.replace("''", "'");
    }
    if let Some(inner) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
        let mut out = String::with_capacity(inner.len());
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            match (c, c == '\\') {
                (_, true) => match chars.next() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some(other) => out.push(other),
                    None => {}
                },
                (c, false) => out.push(c),
            }
        }
        return out;
    }
    value.to_owned()
}

/// Where a node --test failure happened: the first frame of its `stack:` in the test's own
/// files (not node's internals, not node_modules), else the test's `location:`.
fn tap_place(yaml: &[&str]) -> Option<(String, u32)> {
    let stack_frames = yaml
        .iter()
        .skip_while(|l| !l.trim_start().starts_with("stack:"))
        .skip(1)
        .map(|l| l.trim());
    let frame = stack_frames
        .filter_map(frame_place)
        .find(|(file, _)| !file.starts_with("node:") && !file.contains("/node_modules/"));
    frame.or_else(|| {
        yaml.iter()
            .find_map(|l| l.trim_start().strip_prefix("location: "))
            .and_then(|at| frame_place(&yaml_scalar(at.trim())))
    })
}

/// `file:line:column` at the end of a stack frame (`fn (file:1:2)` or `file:1:2`).
fn frame_place(frame: &str) -> Option<(String, u32)> {
    let place = frame
        .rsplit_once('(')
        .map_or(frame, |(_, p)| p)
        .trim_end_matches(')');
    let mut parts = place.rsplitn(3, ':');
    let (_column, line, file) = (parts.next()?, parts.next()?, parts.next()?);
    let line = line.parse::<u32>().ok()?;
    (!file.is_empty()).then(|| (file.trim_start_matches("file://").to_owned(), line))
}

/// tape's TAP (and TAP without `# Subtest:` nesting): a `# title` comment opens a test, its
/// assertions follow as `ok`/`not ok N message`; a test with a `not ok` failed, once, under its
/// title, with its first failed assertion and where it was.
fn tape(lines: &[&str], report: &mut Report) {
    let mut title: Option<&str> = None;
    let mut failed_here = false;
    for (i, line) in lines.iter().enumerate() {
        if let Some(comment) = line.strip_prefix("# ") {
            let word = comment.split_whitespace().next().unwrap_or_default();
            // tape's closing counts are not tests.
            if !(matches!(word, "tests" | "pass" | "fail" | "ok" | "skip" | "todo")
                && comment
                    .split_whitespace()
                    .nth(1)
                    .is_none_or(|n| n.parse::<u64>().is_ok()))
            {
                title = Some(comment.trim());
                failed_here = false;
            }
            continue;
        }
        let Some(rest) = line.strip_prefix("not ok ") else {
            continue;
        };
        if failed_here {
            continue;
        }
        let assertion = rest
            .split_once(' ')
            .map_or("", |(_, text)| text.split(" # ").next().unwrap_or(text))
            .trim();
        let name = title.unwrap_or(assertion);
        let yaml = lines[i + 1..]
            .iter()
            .take_while(|l| l.starts_with("  ") || l.trim().is_empty());
        let mut test = Failed::named(name).because(Some(assertion.to_owned()));
        // `at: Test.<anonymous> (/path/test/x.js:24:4)`
        if let Some((file, line)) = yaml
            .filter_map(|l| l.trim_start().strip_prefix("at: "))
            .next()
            .and_then(frame_place)
        {
            test.file = Some(file);
            test.line = Some(line);
        }
        report.add(test);
        failed_here = true;
    }
}

/// node --test's spec reporter: its closing `✖ failing tests:` list repeats each failure's
/// line (title and duration) without its suites, so the failures are the body's `✖` lines
/// that the list repeats, named with the `▶ suite` lines above them; a line a test printed
/// is not in the list.
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
            path.push((depth, without_time(suite).to_owned()));
            continue;
        }
        let Some(test) = trimmed.strip_prefix("✖ ") else {
            continue;
        };
        path.retain(|(d, _)| *d < depth);
        if !listed.contains(trimmed.trim_end()) {
            continue;
        }
        let title = without_time(test);
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
        report.add(Failed::named(&titles.join(" > ")).because(message));
    }
}

/// A failing entry named by a test file's path: the file itself failed, before any test.
fn is_test_file(title: &str) -> bool {
    title.starts_with('/')
        && [".js", ".mjs", ".cjs", ".ts", ".mts", ".cts"]
            .iter()
            .any(|ext| title.ends_with(ext))
}

/// A test file that failed before any of its tests: the tests could not run, with the error
/// it failed with. The first cause is kept, so the output is searched for it once.
fn did_not_load(lines: &[&str], file: &str, report: &mut Report) {
    if report.could_not_run.is_none() {
        report.cannot_run(&load_error(lines).unwrap_or_else(|| format!("{file} did not load")));
    }
}

/// The error a test file failed to load with (`Error: Cannot find module 'x'`), as node
/// printed it (in TAP, as a `# ` comment).
fn load_error(lines: &[&str]) -> Option<String> {
    lines.iter().find_map(|l| {
        let text = l.trim_start().trim_start_matches("# ").trim();
        let (kind, _) = text.split_once(": ")?;
        (kind.ends_with("Error") && !kind.contains(' ')).then(|| text.to_owned())
    })
}

/// `adds (1.2ms)` → `adds`.
fn without_time(text: &str) -> &str {
    match text.rsplit_once(" (") {
        Some((name, time)) if time.ends_with("ms)") || time.ends_with("s)") => name.trim(),
        _ => text.trim(),
    }
}

/// jest: `  ● math › subtracts` heads each failure's details; `● Test suite failed to run`
/// heads a file that could not load.
fn jest(lines: &[&str], report: &mut Report) {
    if !lines
        .iter()
        .any(|l| l.starts_with("FAIL ") || l.starts_with("PASS ") || l.starts_with("Tests:"))
    {
        return;
    }
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

/// vitest: ` FAIL  src/a.test.ts > suite > test` in its failure list (after `Failed Tests`),
/// ` FAIL  src/a.test.ts [ src/a.test.ts ]` for a file that could not run.
fn vitest(lines: &[&str], report: &mut Report) {
    let Some(start) = lines
        .iter()
        .position(|l| l.contains("Failed Tests ") || l.contains("Failed Suites "))
    else {
        return;
    };
    for (i, line) in lines[start..].iter().enumerate() {
        let Some(rest) = line.trim_start().strip_prefix("FAIL ") else {
            continue;
        };
        let rest = rest.trim();
        let after = &lines[start + i + 1..];
        let message = joined(
            after
                .iter()
                .copied()
                .take_while(|l| !l.trim_start().starts_with("FAIL ") && !l.contains('⎯')),
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
        let Some((_file, titles)) = rest.split_once(" > ") else {
            continue;
        };
        report.add(Failed::named(titles).because(message));
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
        // mocha aborts before any test when a file fails to load.
        if let Some(cause) = lines
            .iter()
            .find_map(|l| l.trim_start().strip_prefix("Exception during run: "))
        {
            report.cannot_run(cause);
        }
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
        report.add(Failed::named(&titles.join(" > ")).because(message));
        i = j;
    }
}

#[cfg(test)]
mod tests {
    use super::super::{from_output, names};
    use super::yaml_scalar;

    #[test]
    fn node_tap_keeps_the_assertions_quotes_and_places_it_at_the_failing_line() {
        // node 22's TAP for a failed `assert.equal` (fastify-error's own test, a bug put in).
        let out = "TAP version 13\n# Subtest: FastifyError.toString returns code\nnot ok 7 - FastifyError.toString returns code\n  ---\n  duration_ms: 0.5\n  location: '/p/test/index.test.js:171:1'\n  failureType: 'testCodeFailure'\n  error: \"'FastifyError [CODE] - foo' == 'FastifyError [CODE]: foo'\"\n  code: 'ERR_ASSERTION'\n  stack: |-\n    assert.<computed> [as equal] (node:internal/test_runner/test:242:18)\n    TestContext.<anonymous> (/p/test/index.test.js:175:5)\n    Test.runInAsyncScope (node:async_hooks:206:9)\n  ...\n1..1\n";
        let report = from_output(out);
        let failed = &report.failed[0];
        assert_eq!(
            failed.message.as_deref(),
            Some("'FastifyError [CODE] - foo' == 'FastifyError [CODE]: foo'")
        );
        assert_eq!(
            (failed.file.as_deref(), failed.line),
            (Some("/p/test/index.test.js"), Some(175))
        );
        // Without a stack, the test's own location.
        let no_stack = out.replace("  stack: |-\n    assert.<computed> [as equal] (node:internal/test_runner/test:242:18)\n    TestContext.<anonymous> (/p/test/index.test.js:175:5)\n    Test.runInAsyncScope (node:async_hooks:206:9)\n", "");
        assert_eq!(from_output(&no_stack).failed[0].line, Some(171));
    }

    #[test]
    fn a_yaml_scalar_loses_only_its_own_quotes() {
        assert_eq!(yaml_scalar("'it''s'"), "it's");
        assert_eq!(yaml_scalar("\"say \\\"hi\\\"\""), "say \"hi\"");
        assert_eq!(yaml_scalar("plain"), "plain");
    }

    #[test]
    fn node_tap_names_leaves_under_their_suites() {
        let out = "TAP version 13\n# not ok 1 - printed by a test\n# Subtest: math\n    # Subtest: adds\n    ok 1 - adds\n      ---\n      ...\n    # Subtest: subtracts\n    not ok 2 - subtracts\n      ---\n      failureType: 'testCodeFailure'\n      error: 'Expected values to be strictly equal'\n      ...\n    1..2\nnot ok 1 - math\n  ---\n  failureType: 'subtestsFailed'\n  ...\n";
        let report = from_output(out);
        assert_eq!(names(out), ["math > subtracts"]);
        assert_eq!(
            report.failed[0].message.as_deref(),
            Some("Expected values to be strictly equal")
        );
    }

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
}
