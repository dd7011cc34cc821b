//! `status`: the worker must say how it ended. STATUS: OK passes, STATUS: BLOCKED ends the run
//! BLOCKED with the worker's reason (a person decides), no status fails. A run with no done
//! signal at all (`check` without `--signal`: CI, pre-commit) has no worker report to read, and
//! the gate is skipped; whether a signal is read is the caller's choice, never the worker's.

use std::path::Path;

use super::{About, Context, KeyError, Outcome, Required, RuleDef};
use crate::done::Declared;
use crate::rules::spec::GateSpec;
use crate::verdict::GateOutcome;

#[derive(Debug, Clone, Default)]
pub struct Status {
    require_summary: bool,
}

impl RuleDef for Status {
    /// Not cacheable: it judges the done signal.
    const ABOUT: About = About {
        keys: &["require_summary"],
        required: Required::None,
        cacheable: false,
        shows_timeout: false,
        starts_programs: false,
        runs_workers_code: false,
    };

    fn from_spec(spec: &GateSpec, _rules_dir: &Path) -> Result<Self, KeyError> {
        Ok(Status {
            require_summary: spec.require_summary.unwrap_or(false),
        })
    }

    fn run(&self, ctx: &Context<'_>) -> Outcome {
        if ctx.task.signal.sha256.is_none() {
            return Outcome {
                outcome: GateOutcome::Skipped,
                ..Outcome::pass(
                    "no done signal to read (pass --signal FILE to judge a worker's report)",
                )
            };
        }
        let report = match &ctx.task.signal.report {
            Ok(report) => report,
            Err(why) => return Outcome::fail(why.clone()),
        };
        match report.declared() {
            Declared::Ok => {
                if self.require_summary
                    && report
                        .summary
                        .as_deref()
                        .is_none_or(|s| s.trim().is_empty())
                {
                    Outcome::fail(
                        "STATUS: OK without a summary; add `SUMMARY: <what was done>` to the done signal",
                    )
                } else {
                    Outcome::pass("STATUS: OK")
                }
            }
            Declared::Blocked => {
                let reason = report
                    .reason
                    .clone()
                    .unwrap_or_else(|| "no reason given".into());
                Outcome {
                    blocked: Some(format!("worker reported BLOCKED: {reason}").into()),
                    ..Outcome::fail(format!("STATUS: BLOCKED: {reason}"))
                }
            }
            Declared::Missing => Outcome::fail(
                "no STATUS in the done signal; the worker must end with `STATUS: OK` (or `STATUS: BLOCKED` and `REASON: ...`)",
            ),
            Declared::Other(other) => Outcome::fail(format!(
                "STATUS: {other} is not a status; report `STATUS: OK` or `STATUS: BLOCKED`"
            )),
        }
    }
}
