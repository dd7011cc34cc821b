//! `lint`: the command's exit code, and the findings read from what it printed (`file:line[:col]:
//! message` lines, rustc-style blocks, SARIF, checkstyle and the other formats of
//! [`validator_reading::findings`], or those `format:` names) and from the `report:` it wrote;
//! errors are listed first, and with `fail_on_findings` output that names no finding fails too.
//! The command runs as every command rule's does ([`super::Command`]).

use std::path::Path;

use super::{Before, Command, Parse, TaskFiles, command_rule, read_report, relative_findings};
use crate::rules::{About, Context, MAX_FINDINGS, Outcome, Required};
use crate::verdict::Finding;
use validator_reading::findings;
use validator_text::plural;

/// `lint`: the command's findings.
#[derive(Debug, Clone)]
pub struct Lint(pub(in crate::rules) Command);

command_rule!(
    Lint,
    Parse::Findings,
    About {
        keys: &[
            "run",
            "files",
            "env",
            "cwd",
            "format",
            "report",
            "fix",
            "fail_on_findings",
            "changed_only",
            "base",
        ],
        required: Required::All(&["run"]),
        cacheable: true,
        shows_timeout: true,
        starts_programs: true,
        runs_workers_code: false,
    }
);

impl Command {
    /// A `lint` command's outcome: its exit, and the findings read from its output (and its
    /// `report:`).
    pub(super) fn judge_findings(
        &self,
        ctx: &Context<'_>,
        text: &str,
        cwd: &Path,
        before: &Before,
        failed: bool,
        code: i32,
    ) -> Outcome {
        let program = &self.argv[0];
        let files = TaskFiles::new(&ctx.task.dir, cwd, &self.argv);
        let read = findings::read(text, self.format, &files);
        let mut found = read.findings;
        let mut note = String::new();
        if let Some(report) = &self.report {
            match read_report(ctx, report, before) {
                Ok(document) => {
                    found.extend(findings::read(&document, self.format, &files).findings);
                    findings::dedup(&mut found);
                }
                Err(why) => note = format!(" (report {report}: {why})"),
            }
        }
        let found = found.into_iter().map(Finding::from).collect();
        let mut found = relative_findings(&ctx.task.dir, cwd, found);
        // What fails the gate first: an error is not to be hidden behind a tool's warnings.
        found.sort_by_key(|f| severity_rank(f.severity.as_deref()));
        let errors = found
            .iter()
            .filter(|f| severity_rank(f.severity.as_deref()) == 0)
            .count();
        // With `fail_on_findings` the tool's silence is the pass: output that names no
        // finding validator can read (a file name with a space, a line of another
        // shape) fails too, rather than passing unread.
        let printed = self.fail_on_findings && !failed && !text.trim().is_empty();
        let failed = failed || printed;
        let summary = match (found.len(), failed) {
            (0, true) if printed => format!(
                "`{program}` printed output, and `fail_on_findings` wants none; no finding could be read from it"
            ),
            (0, true) if text.trim().is_empty() => {
                format!("`{program}` exited with {code}")
            }
            // Said for whoever writes the rules: a format validator reads names the
            // findings instead of leaving the worker the output's tail.
            (0, true) => format!(
                "`{program}` exited with {code}; no finding could be read from its output (an option for `file:line:col: message`, SARIF or checkstyle output lets validator list them)"
            ),
            // A clean exit over lines that read as warnings is not called clean.
            (0, false) if read.unread > 0 => format!(
                "exit 0; {} line{} not read as findings",
                read.unread,
                plural(read.unread)
            ),
            (0, false) => "clean".to_string(),
            // The tool passed the files: what it printed it did not fail them for.
            (n, false) => format!(
                "exit 0; {n} finding{} it did not fail on, in {}",
                plural(n),
                files_of(&found)
            ),
            (n, _) if errors > 0 && errors < n => format!(
                "{n} findings ({errors} error{}) in {}",
                plural(errors),
                files_of(&found)
            ),
            (n, _) => format!("{n} finding{} in {}", plural(n), files_of(&found)),
        } + &note;
        found.truncate(MAX_FINDINGS);
        Outcome {
            findings: found,
            ..if failed {
                Outcome::fail(summary)
            } else {
                Outcome::pass(summary)
            }
        }
    }
}

/// Where a finding of this severity is listed: errors first, the rest in the tool's order.
fn severity_rank(severity: Option<&str>) -> u8 {
    match severity {
        Some("error" | "fatal" | "critical" | "failure" | "blocker") => 0,
        _ => 1,
    }
}

fn files_of(found: &[Finding]) -> String {
    let mut files: Vec<std::borrow::Cow<'_, str>> = found
        .iter()
        .filter_map(|f| f.file.as_deref().map(validator_text::name))
        .collect();
    files.dedup();
    files.sort_unstable();
    files.dedup();
    match files.len() {
        0 => "the output".into(),
        1..=3 => files.join(", "),
        n => format!("{} and {} more files", files[..3].join(", "), n - 3),
    }
}
