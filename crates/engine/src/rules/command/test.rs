//! `test`: the command's exit code, and when it fails, the failed tests named from what it
//! printed (the runners [`validator_reading::test_names`] knows: cargo test, nextest, pytest,
//! unittest, go test, the Node runners, TAP) and from the JUnit report named by `junit:`, or why
//! the tests could not run. The command runs as every command rule's does
//! ([`super::Command`]).

use std::path::Path;

use super::{Before, Command, Parse, command_rule, read_report, relative_findings};
use crate::rules::{About, Context, MAX_FINDINGS, Outcome, Required};
use validator_reading::test_names;
use validator_text::plural;

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
        if let Some(path) = &self.junit {
            let junit = read_junit(ctx, path, before);
            merge(&mut failures, junit.failed.clone());
            if let Some(why) = junit.note() {
                note = format!(" (JUnit report {path}: {why})");
            }
        }
        if failures.is_empty() {
            if let Some(cause) = report.could_not_run {
                return Outcome::fail(format!("the tests could not run: {cause}{note}"));
            }
            let unnamed = unnamed_failures(&self.argv, self.junit.is_some());
            return Outcome::fail(format!("`{program}` exited with {code}{note}; {unnamed}"));
        }
        named_failures(ctx, cwd, failures, "", &note)
    }

    /// A `test` command that exited 0: a pass, unless its `junit:` report names failed tests
    /// (a runner made to exit 0 over its failures) or cannot be read, which is no pass either:
    /// what the report would have said is not known.
    pub(super) fn judge_passed_tests(
        &self,
        ctx: &Context<'_>,
        cwd: &Path,
        before: &Before,
    ) -> Outcome {
        let Some(path) = &self.junit else {
            return Outcome::pass("tests passed");
        };
        let program = &self.argv[0];
        let junit = read_junit(ctx, path, before);
        let note = junit
            .note()
            .map(|why| format!(" (JUnit report {path}: {why})"))
            .unwrap_or_default();
        if !junit.failed.is_empty() {
            let head = format!("`{program}` exited with 0, but its JUnit report names ");
            return named_failures(ctx, cwd, junit.failed, &head, &note);
        }
        match &junit.unread {
            Some(why) => Outcome::fail(format!(
                "`{program}` exited with 0, but its JUnit report {path} cannot be read ({why}); a report that cannot be read does not pass"
            )),
            None => Outcome::pass(format!("tests passed{note}")),
        }
    }
}

/// Runners known by a word of their command, and the option that makes each write a report
/// validator reads (TAP on the console, or JUnit XML that `junit:` names).
const MACHINE_REPORTS: &[(&str, &str)] = &[
    ("pytest", "`--junitxml=report.xml` and `junit: report.xml`"),
    ("py.test", "`--junitxml=report.xml` and `junit: report.xml`"),
    (
        "jest",
        "`--reporters=default --reporters=jest-junit` (the jest-junit package) and `junit: junit.xml`",
    ),
    (
        "vitest",
        "`--reporter=junit --outputFile=report.xml` and `junit: report.xml`",
    ),
    ("mocha", "`--reporter tap`"),
    ("ava", "`--tap`"),
    ("tap", "`--reporter=tap`"),
    ("node", "`--test-reporter=tap` (with `--test`)"),
    ("go", "`-v` (or `go test -json`)"),
    (
        "gotestsum",
        "`--junitfile report.xml` and `junit: report.xml`",
    ),
    (
        "cargo",
        "`nextest` with a `[profile.default.junit]` path and `junit:` naming it",
    ),
    (
        "phpunit",
        "`--log-junit report.xml` and `junit: report.xml`",
    ),
    ("pest", "`--log-junit report.xml` and `junit: report.xml`"),
    (
        "rspec",
        "`--format RspecJunitFormatter --out report.xml` (rspec_junit_formatter) and `junit: report.xml`",
    ),
    (
        "jasmine",
        "a JUnit reporter (jasmine-reporters) and `junit:` naming its file",
    ),
    ("lab", "`-r junit -o report.xml` and `junit: report.xml`"),
    ("bats", "`--formatter tap`"),
    ("busted", "`-o TAP`"),
    (
        "ctest",
        "`--output-junit report.xml` and `junit: report.xml`",
    ),
    (
        "dotnet",
        "`--logger \"junit;LogFilePath=report.xml\"` (JunitXml.TestLogger) and `junit: report.xml`",
    ),
    ("green", "`-j report.xml` and `junit: report.xml`"),
    (
        "nose2",
        "`--plugin nose2.plugins.junitxml --junit-xml` and `junit: nose2-junit.xml`",
    ),
    (
        "mvn",
        "`junit:` naming a Surefire report (`target/surefire-reports/TEST-*.xml`)",
    ),
];

/// What a failed run whose output names no failed test is told: that it named none, and the
/// option of the runner its command names that would let validator name them.
fn unnamed_failures(argv: &[String], has_junit: bool) -> String {
    if has_junit {
        return "neither its output nor its JUnit report names a failed test".to_owned();
    }
    // The command's words, a shell line's too (`sh -c "pytest -q"`), each by its file name.
    let words: Vec<&str> = argv
        .iter()
        .flat_map(|arg| arg.split(|c: char| c.is_whitespace() || ";&|()'\"".contains(c)))
        .map(|word| word.rsplit('/').next().unwrap_or(word))
        .take(64)
        .collect();
    // `node` runs tests only as `node --test`.
    let testing_node = words.contains(&"--test");
    let known = words.iter().find_map(|word| {
        MACHINE_REPORTS
            .iter()
            .find(|(runner, _)| runner == word && (*runner != "node" || testing_node))
    });
    match known {
        Some((runner, option)) => format!(
            "its output names no failed test validator can read; run `{runner}` with {option} to have them named"
        ),
        None => "its output names no failed test validator can read (a runner's TAP output, or a JUnit report named by `junit:`, lets it name them)".to_owned(),
    }
}

/// The report's failed tests added to those the console named: each matched to at most one
/// console name (two cases of a report are two tests, however alike their names).
fn merge(failures: &mut Vec<test_names::Failed>, from_report: Vec<test_names::Failed>) {
    let console = failures.len();
    let mut matched = vec![false; console];
    for test in from_report {
        let known = (0..console)
            .find(|&i| !matched[i] && test_names::same_test(&failures[i].name, &test.name));
        match known {
            Some(i) => matched[i] = true,
            None => failures.push(test),
        }
    }
}

/// A FAIL naming `failures` (at least one): `head` before the count, `note` after the names.
fn named_failures(
    ctx: &Context<'_>,
    cwd: &Path,
    mut failures: Vec<test_names::Failed>,
    head: &str,
    note: &str,
) -> Outcome {
    failures.truncate(MAX_FINDINGS);
    // A stand-in for a case with no name is counted and shown, never handed to a runner.
    let failed_tests = Some(Box::new(
        failures
            .iter()
            .map(|f| f.name.clone())
            .filter(|name| !test_names::is_unnamed(name))
            .collect(),
    ));
    let n = failures.len();
    let shown: Vec<&str> = failures.iter().take(5).map(|f| f.name.as_str()).collect();
    let more = if n > 5 {
        format!(" and {} more", n - 5)
    } else {
        String::new()
    };
    let summary = format!(
        "{head}{n} test{} failed: {}{more}{note}",
        plural(n),
        shown.join(", ")
    );
    let found = failures
        .into_iter()
        .map(|failed| failed.into_finding().into())
        .collect();
    Outcome {
        findings: relative_findings(&ctx.task.dir, cwd, found),
        failed_tests,
        ..Outcome::fail(summary)
    }
}

/// The JUnit report the command wrote, read. A report from before the command started was
/// not written by this run (a worker may leave one in place to name tests), and is not read:
/// it is [`test_names::Junit::unread`], as is one that cannot be read at all.
fn read_junit(ctx: &Context<'_>, report: &str, before: &Before) -> test_names::Junit {
    match read_report(ctx, report, before) {
        Ok(xml) => test_names::from_junit(&xml),
        Err(why) => test_names::Junit {
            unread: Some(why),
            ..test_names::Junit::default()
        },
    }
}
