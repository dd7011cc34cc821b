//! `test`: the command's exit code, and when it fails, the failed tests named from what it
//! printed (the runners [`crate::reading::test_names`] knows: cargo test, nextest, pytest,
//! unittest, go test, the Node runners, TAP) and from the JUnit report named by `junit:`, or why
//! the tests could not run. The command runs as every command rule's does
//! ([`super::Command`]).

use std::path::Path;

use super::{Before, Command, Parse, command_rule, read_report, relative_findings};
use crate::reading::test_names;
use crate::rules::{About, Context, MAX_FINDINGS, Outcome, Required};
use crate::text::plural;

/// `test`: the command's failed tests.
#[derive(Debug, Clone)]
pub struct Test(pub(in crate::rules) Command);

command_rule!(
    Test,
    Parse::TestNames,
    About {
        keys: &[
            "run",
            "files",
            "env",
            "cwd",
            "junit",
            "fix",
            "select",
            "changed_only",
            "base",
        ],
        required: Required::All(&["run"]),
        cacheable: true,
        shows_timeout: true,
        starts_programs: true,
        runs_workers_code: true,
    }
);

impl Command {
    /// A failed `test` command's outcome: the failed tests named from its output (and its
    /// `junit:` report), or why the tests could not run.
    pub(super) fn judge_tests(
        &self,
        ctx: &Context<'_>,
        text: &str,
        cwd: &Path,
        before: &Before,
        code: i32,
    ) -> Outcome {
        let program = &self.argv[0];
        let report = test_names::from_output(text);
        let mut failures = report.failed;
        let mut note = String::new();
        if let Some(report) = &self.junit {
            match read_junit(ctx, report, before) {
                Ok(from_report) => {
                    for test in from_report {
                        if !failures
                            .iter()
                            .any(|known| test_names::same_test(&known.name, &test.name))
                        {
                            failures.push(test);
                        }
                    }
                }
                Err(why) => note = format!(" (JUnit report {report}: {why})"),
            }
        }
        if failures.is_empty() {
            if let Some(cause) = report.could_not_run {
                return Outcome::fail(format!("the tests could not run: {cause}{note}"));
            }
        }
        failures.truncate(MAX_FINDINGS);
        let failed_tests = Some(Box::new(failures.iter().map(|f| f.name.clone()).collect()));
        let summary = match failures.len() {
            0 => format!("`{program}` exited with {code}{note}"),
            n => {
                let shown: Vec<&str> = failures.iter().take(5).map(|f| f.name.as_str()).collect();
                let more = if n > 5 {
                    format!(" and {} more", n - 5)
                } else {
                    String::new()
                };
                format!(
                    "{n} test{} failed: {}{more}{note}",
                    plural(n),
                    shown.join(", ")
                )
            }
        };
        let found = failures
            .into_iter()
            .map(test_names::Failed::into_finding)
            .collect();
        Outcome {
            findings: relative_findings(&ctx.task.dir, cwd, found),
            failed_tests,
            ..Outcome::fail(summary)
        }
    }
}

/// The failed tests of the JUnit report the command wrote. A report from before the command
/// started was not written by this run (a worker may leave one in place to name tests), and is
/// not read.
fn read_junit(
    ctx: &Context<'_>,
    report: &str,
    before: &Before,
) -> Result<Vec<test_names::Failed>, String> {
    test_names::from_junit(&read_report(ctx, report, before)?)
}
