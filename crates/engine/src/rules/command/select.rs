//! `select:`, a `test` gate's way to run just the tests it names: after a run that named
//! failed tests, the next run first runs those, and fails at once with their reasons if any
//! still fails. Anything else (they pass, the runner names none of them, it could not start)
//! runs the whole suite as always, so a pass always comes from the whole suite.
//!
//! The names come from the runner's output, which the worker's code writes: a name is passed
//! only as an argument (never through a shell), one that reads as an option (a leading `-`, or
//! `@`, which pytest and other runners read as a file of more arguments) or holds a control
//! character is left out, and at most [`MAX_SELECTED`] are run. A run fails at
//! once only when the runner names one of the selected tests failed again, so a name a worker
//! forged into its output can cost a rerun, never a verdict.

use super::{Before, Command, tail};
use crate::rules::{Context, KeyError, Outcome};
use validator_process::Exit;
use validator_reading::{findings, test_names};
use validator_text::plural;

/// The words that name the selected tests in `select:`.
const EACH: &str = "{tests}";
const WHOLE_REGEX: &str = "{tests_regex}";
const TITLE_REGEX: &str = "{test_titles_regex}";

/// Most tests run first; past them the whole suite says the rest.
pub const MAX_SELECTED: usize = 50;
/// Longest name passed to a runner.
const MAX_NAME_CHARS: usize = 500;

/// Checks a `select:` command: a program, and exactly one word naming the tests.
pub fn check(argv: &[String]) -> Result<(), KeyError> {
    let named = argv
        .iter()
        .skip(1)
        .map(|word| {
            usize::from(word == EACH)
                + word.matches(WHOLE_REGEX).count()
                + word.matches(TITLE_REGEX).count()
        })
        .sum::<usize>();
    let misplaced = argv.iter().any(|word| word != EACH && word.contains(EACH));
    if argv.is_empty() || named != 1 || misplaced {
        return Err(KeyError::new(
            "select",
            "`select:` must name the tests once, with `{tests}` as a word of its own, or `{tests_regex}` or `{test_titles_regex}` in a word",
            "e.g. `select: python3 -m pytest {tests}`, `select: go test ./... -run {tests_regex}`, `select: npm test -- --test-name-pattern={test_titles_regex}`",
        ));
    }
    Ok(())
}

/// The names fit to pass to a runner.
fn usable(failed: &[String]) -> Vec<&str> {
    failed
        .iter()
        .map(String::as_str)
        .filter(|name| {
            !name.is_empty()
                && !name.starts_with(['-', '@'])
                && name.chars().count() <= MAX_NAME_CHARS
                && !name.chars().any(char::is_control)
        })
        .take(MAX_SELECTED)
        .collect()
}

/// `select` with its naming word replaced by `names`.
fn expand(select: &[String], names: &[&str]) -> Vec<String> {
    // go test's `-run` splits its pattern at each `/` outside parentheses and matches each
    // part against one level of a test's name (`TestSub/bad_case`): so each level is anchored
    // on its own, and the names are alternatives at the top.
    let whole = names
        .iter()
        .map(|name| {
            name.split('/')
                .map(|level| format!("^{}$", escape(level)))
                .collect::<Vec<_>>()
                .join("/")
        })
        .collect::<Vec<_>>()
        .join("|");
    // Every title of each name, not only its last: node runs a subtest only when its parent
    // test matches too (a `describe` title can only add tests whose full name ends with it).
    let mut titles: Vec<String> = Vec::new();
    for title in names.iter().flat_map(|name| name.split(" > ")) {
        let title = escape(title);
        if !titles.contains(&title) {
            titles.push(title);
        }
    }
    let titles = format!("(?:{})$", titles.join("|"));
    let mut argv = Vec::with_capacity(select.len() + names.len());
    for word in select {
        if word == EACH {
            argv.extend(names.iter().map(|name| (*name).to_owned()));
        } else {
            argv.push(
                word.replace(WHOLE_REGEX, &whole)
                    .replace(TITLE_REGEX, &titles),
            );
        }
    }
    argv
}

/// A name as a pattern that matches it literally in RE2 (go), JavaScript and Rust regexes:
/// only the characters special in all of them are escaped (an escaped letter means something
/// else in each).
fn escape(name: &str) -> String {
    let mut escaped = String::with_capacity(name.len());
    for c in name.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

/// The option npm said it did not know (`npm warn Unknown cli config "--test-name-pattern"`,
/// as npm says of an option after a script's own `npm run x` that no `--` passes on), if the
/// output holds one: the `select:` filter went to npm, not the runner. Only ever a note on a
/// run that failed anyway: the worker's code may print it.
fn ignored_option(output: &str) -> Option<&str> {
    let (_, rest) = output.split_once("Unknown cli config \"")?;
    let option = rest.split('"').next()?;
    (option.starts_with("--") && option.len() <= 100 && !option.contains(char::is_control))
        .then_some(option)
}

impl Command {
    /// Runs just the tests the last run named as failed: the gate's outcome when one of them
    /// fails again, `None` when the whole suite must say (they pass, the runner names none of
    /// them, it did not run to its end).
    pub(super) fn still_failing(
        &self,
        ctx: &Context<'_>,
        select: &[String],
        failed: &[String],
    ) -> Option<Outcome> {
        let names = usable(failed);
        if names.is_empty() {
            return None;
        }
        let task = ctx.task;
        let before = Before::take(ctx, [&self.junit]);
        let cwd = self.working_dir(task).ok()?;
        let caches = crate::toolcache::scratch(task);
        let argv = expand(select, &names);
        let (base, env) = self
            .launch(task, caches.as_ref().map(|d| d.path()), &cwd, &argv)
            .ok()?;
        let deadline = ctx.started + ctx.timeout;
        let ran = self
            .run_batches(ctx, &cwd, &base, &env, &[Vec::new()], deadline)
            .ok()?;
        let code = match ran.exit {
            Exit::Code(code) if code != 0 => code,
            _ => return None,
        };
        let output = String::from_utf8_lossy(&ran.output);
        let text = findings::strip_ansi(&output);
        let mut outcome = self.judge_tests(ctx, &text, &cwd, &before, code);
        let again = outcome
            .failed_tests
            .iter()
            .flat_map(|names| names.iter())
            .filter(|found| names.iter().any(|name| test_names::same_test(name, found)))
            .count();
        if again == 0 {
            return None;
        }
        let shown = shell_words::join(&argv);
        let shown = validator_text::clip(&validator_text::one_line(&shown), 200);
        outcome.summary = match ignored_option(&text) {
            // The filter never reached the runner: what ran was the whole suite, and a
            // `select:` that cannot filter costs a whole run on every retry.
            Some(option) => format!(
                "{} (`select:` did not filter: npm says `Unknown cli config \"{option}\"`, so `{shown}` ran the whole suite; name the runner the script runs in `select:`, e.g. `select: npx --no-install <runner> {option}=...`, or a script that passes it on)",
                outcome.summary,
            ),
            None => format!(
                "{} (run first, as the last run's failed test{}: `{shown}`; the whole suite runs once {} pass)",
                outcome.summary,
                plural(names.len()),
                if names.len() == 1 { "it does" } else { "they" },
            ),
        };
        // A selected test the run did not name may not have run at all (a pattern that missed
        // it): it stays among the failed, to be run first again, until the whole suite says.
        let mut failed_now = outcome
            .failed_tests
            .take()
            .map(|names| *names)
            .unwrap_or_default();
        for name in &names {
            if !failed_now
                .iter()
                .any(|found| test_names::same_test(name, found))
            {
                failed_now.push((*name).to_owned());
            }
        }
        outcome.failed_tests = Some(Box::new(failed_now));
        outcome.exit_code = Some(code);
        outcome.output_tail = tail(&crate::verdict::terminal::shown(&output), ran.dropped);
        Some(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn an_option_npm_did_not_pass_on_is_read_from_its_warning() {
        let said = "> x@1 test\n> npm run unit\nnpm warn Unknown cli config \"--test-name-pattern\". This will stop working in the next major version of npm.\n";
        assert_eq!(ignored_option(said), Some("--test-name-pattern"));
        assert_eq!(ignored_option("all 3 tests failed\n"), None);
        assert_eq!(ignored_option("Unknown cli config \"registry\""), None);
    }

    #[test]
    fn a_select_names_the_tests_exactly_once() {
        assert!(check(&words("pytest {tests}")).is_ok());
        assert!(
            check(&words(
                "npm test -- --test-name-pattern={test_titles_regex}"
            ))
            .is_ok()
        );
        assert!(check(&words("pytest")).is_err());
        assert!(check(&words("pytest {tests} {tests}")).is_err());
        assert!(check(&words("pytest x{tests}")).is_err());
        assert!(check(&words("{tests}")).is_err());
    }

    #[test]
    fn names_become_arguments_or_one_literal_pattern() {
        let names = ["tests/test_a.py::test_x[1-2]", "math > adds (1+1)"];
        assert_eq!(
            expand(&words("pytest -q {tests}"), &names),
            ["pytest", "-q", names[0], names[1]]
        );
        assert_eq!(
            expand(
                &words("go test -run {tests_regex}"),
                &["TestA", "TestSub/bad_case", "TestB(x)"]
            ),
            [
                "go",
                "test",
                "-run",
                r"^TestA$|^TestSub$/^bad_case$|^TestB\(x\)$"
            ]
        );
        assert_eq!(
            expand(&words("x -t={test_titles_regex}"), &names[1..]),
            ["x", r"-t=(?:math|adds \(1\+1\))$"]
        );
    }

    #[test]
    fn names_that_read_as_options_or_hold_controls_are_left_out() {
        let failed = [
            "--basetemp=/".to_owned(),
            "@args::x".to_owned(),
            "a\nb".to_owned(),
            "ok".to_owned(),
        ];
        assert_eq!(usable(&failed), ["ok"]);
    }
}
