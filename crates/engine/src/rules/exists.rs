//! `exists`: the outputs the task must produce are there (`paths`, each glob matching at least
//! `min_count` files, non-empty if asked) and the ones it must not leave are not (`forbid`).
//! The walk and the look at each file stop at the gate's deadline: a tree the worker made too
//! large to see in time is a timeout, never a pass on part of it.

use std::path::Path;

use super::{About, Context, KeyError, Outcome, Required, RuleDef};
use crate::globs::PatternSet;
use crate::rules::spec::{GateSpec, RuleKind};
use crate::verdict::Finding;

#[derive(Debug, Clone)]
pub struct Exists {
    paths: PatternSet,
    forbid: PatternSet,
    non_empty: bool,
    min_count: u32,
}

impl RuleDef for Exists {
    const ABOUT: About = About {
        keys: &["paths", "forbid", "non_empty", "min_count"],
        required: Required::AnyOf(&["paths", "forbid"]),
        cacheable: true,
        shows_timeout: false,
        starts_programs: false,
        runs_workers_code: false,
    };

    fn from_spec(spec: &GateSpec, _rules_dir: &Path) -> Result<Self, KeyError> {
        let paths = spec.paths.clone().unwrap_or_default();
        let forbid = spec.forbid.clone().unwrap_or_default();
        if paths.is_empty() && forbid.is_empty() {
            return Err(KeyError::missing(
                "paths",
                RuleKind::Exists,
                "[\"report.json\", \"src/**/*.rs\"]",
            ));
        }
        Ok(Exists {
            paths: PatternSet::new(&paths),
            forbid: PatternSet::new(&forbid),
            non_empty: spec.non_empty.unwrap_or(false),
            min_count: spec.min_count.unwrap_or(1),
        })
    }

    fn run(&self, ctx: &Context<'_>) -> Outcome {
        ctx.in_time(self.judge(ctx))
    }
}

impl Exists {
    fn judge(&self, ctx: &Context<'_>) -> Outcome {
        let deadline = ctx.deadline();
        let listing = match ctx.list_in_time() {
            Ok(listing) => listing,
            Err(timed_out) => return timed_out,
        };
        let mut counts = vec![0u32; self.paths.patterns().len()];
        let mut findings = Vec::new();
        for (looked, entry) in listing.files.iter().enumerate() {
            if let Err(stopped) = deadline.check() {
                let progress = format!("{looked} of {} files looked at", listing.files.len());
                return Outcome::stopped(ctx, stopped, &progress, findings);
            }
            let matched = self.paths.matching(&entry.rel);
            for &index in &matched {
                counts[index] += 1;
            }
            if self.non_empty && !matched.is_empty() && entry.size() == 0 {
                findings.push(Finding::in_file(
                    &entry.rel,
                    "is empty; it must have content",
                ));
            }
            if self.forbid.is_match(&entry.rel) {
                findings.push(Finding::in_file(
                    &entry.rel,
                    "must not be here (forbid); delete it",
                ));
            }
        }
        for (pattern, count) in self.paths.patterns().iter().zip(counts) {
            if count < self.min_count {
                let wanted = if self.min_count == 1 {
                    "no file matches".to_string()
                } else {
                    format!(
                        "{count} files match, at least {} are needed",
                        self.min_count
                    )
                };
                findings.push(Finding::new(format!("`{pattern}`: {wanted}")));
            }
        }
        for dir in &listing.unreadable {
            findings.push(Finding::in_file(
                dir,
                "cannot be read, so what it holds cannot be checked; make it readable",
            ));
        }
        for link in &listing.escaping_links {
            if self.paths.is_match(link) || self.forbid.is_match(link) {
                findings.push(Finding::in_file(
                    link,
                    "is a link that points outside the task directory; it was not followed",
                ));
            }
        }
        Outcome::from_findings(findings, "all outputs present", |n| {
            format!("{n} problem{} with the outputs", validator_text::plural(n))
        })
    }
}
