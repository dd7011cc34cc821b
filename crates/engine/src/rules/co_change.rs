//! `co-change`: when the worker changed files matching `when`, it must also have changed files
//! matching `then` (tests beside the code, docs beside an API, a changelog entry), unless it
//! says why not: `skip_marker` followed by a reason of at least `min_reason_words` words, in its
//! done signal or in a line its change adds. What changed is counted as `file-scope` counts it
//! (git against HEAD, else the baseline). Past the gate's deadline it is a timeout, never a
//! pass nor a failure said on what it had no time to see.

use std::path::Path;

use super::{
    About, Context, Deadline, KeyError, MAX_FINDINGS, Outcome, Required, RuleDef, Stopped,
    file_scope,
};
use crate::globs::PatternSet;
use crate::rules::spec::GateSpec;
use crate::verdict::Finding;
use validator_text::one_line;

/// The reason a skip needs by default, in words: enough to say why, not just "skip".
const DEFAULT_REASON_WORDS: u32 = 5;
/// How much of the patch is searched for a skip marker.
const MAX_PATCH_BYTES: usize = 1024 * 1024;

#[derive(Debug, Clone)]
pub struct CoChange {
    /// What changes are counted from (default: HEAD).
    base: String,
    when: PatternSet,
    then: PatternSet,
    skip_marker: Option<String>,
    min_reason_words: u32,
}

impl RuleDef for CoChange {
    /// Not cacheable: it judges the change and the done signal.
    const ABOUT: About = About {
        keys: &["when", "then", "skip_marker", "min_reason_words", "base"],
        required: Required::All(&["when", "then"]),
        cacheable: false,
        shows_timeout: false,
        starts_programs: false,
        runs_workers_code: false,
    };

    fn from_spec(spec: &GateSpec, _rules_dir: &Path) -> Result<Self, KeyError> {
        let Some(when) = spec.when.as_deref().filter(|w| !w.is_empty()) else {
            return Err(KeyError::missing("when", spec.rule, "[\"src/**/*.py\"]"));
        };
        let Some(then) = spec.then.as_deref().filter(|t| !t.is_empty()) else {
            return Err(KeyError::missing("then", spec.rule, "[\"tests/**/*.py\"]"));
        };
        if let Some(marker) = &spec.skip_marker {
            if marker.trim().is_empty() || marker.contains('\n') {
                return Err(KeyError::new(
                    "skip_marker",
                    "`skip_marker` is empty or spans lines",
                    "write a word or two on one line, such as `skip-tests:`",
                ));
            }
        }
        Ok(CoChange {
            base: file_scope::checked_base(spec)?,
            when: PatternSet::new(when),
            then: PatternSet::new(then),
            skip_marker: spec.skip_marker.as_ref().map(|m| m.trim().to_owned()),
            min_reason_words: spec.min_reason_words.unwrap_or(DEFAULT_REASON_WORDS),
        })
    }

    fn base(&self) -> Option<&str> {
        Some(&self.base)
    }

    fn run(&self, ctx: &Context<'_>) -> Outcome {
        ctx.in_time(self.judge(ctx))
    }
}

impl CoChange {
    fn judge(&self, ctx: &Context<'_>) -> Outcome {
        let deadline = ctx.deadline();
        let changes = match file_scope::changed(ctx, &self.base, deadline.at()) {
            Ok(changes) => changes,
            Err(problem) => return problem.outcome(ctx),
        };
        // Without git or a baseline every file counts as changed, and the rule would pass
        // whenever a `then` file exists: it cannot judge, and says what it needs.
        if matches!(changes.source, file_scope::Source::Everything) {
            return Outcome::error(
                "co-change needs to know what the worker changed: run it in a git work tree, or take a baseline with `validator snapshot TASK` before the worker starts",
            );
        }
        // What could not be seen could be a change under `when`: the gate cannot pass over it.
        if !changes.findings.is_empty() {
            return Outcome::from_findings(changes.findings, "", |n| {
                format!("{n} changes cannot be seen, so co-change cannot be judged")
            });
        }
        let stopped = |stopped, doing: &str| Outcome::stopped(ctx, stopped, doing, Vec::new());
        let triggered = match matching(&self.when, &changes.files, &deadline) {
            Ok(triggered) => triggered,
            Err(why) => return stopped(why, "matching the changes against `when`"),
        };
        if triggered.is_empty() {
            return Outcome::pass(format!("no change matches `when: [{}]`", self.when_globs()));
        }
        // A deleted file is a change, but not the one asked for: deleting the tests does not
        // test the code.
        // Only a regular, non-empty file counts, outside any repository's own `.git`: emptying
        // a test, putting a directory or a link in its place, or a nested repository's
        // internals are no test.
        let answers = match matching(&self.then, &changes.files, &deadline) {
            Ok(answers) => answers,
            Err(why) => return stopped(why, "matching the changes against `then`"),
        };
        let answered = answers.iter().any(|f| {
            !f.split('/').any(|part| part == ".git")
                && std::fs::symlink_metadata(ctx.task.dir.join(f))
                    .is_ok_and(|meta| meta.is_file() && meta.len() > 0)
        });
        if answered {
            return Outcome::pass(format!(
                "{} changed with files matching `then: [{}]`",
                triggered.len(),
                self.then_globs()
            ));
        }
        if let Some(reason) = self.skip_reason(ctx, &deadline) {
            return Outcome::pass(format!("skipped by the worker: {}", one_line(&reason)));
        }
        // The patch may have held the reason, had there been time to read it.
        if let Err(why) = deadline.check() {
            return stopped(why, "looking for a skip reason in the patch");
        }
        let how = match &self.skip_marker {
            Some(marker) => format!(
                "; change a file matching `then: [{}]`, or say why not: `{marker} <reason of at least {} words>` in the done signal",
                self.then_globs(),
                self.min_reason_words
            ),
            None => format!("; change a file matching `then: [{}]`", self.then_globs()),
        };
        let findings: Vec<Finding> = triggered
            .iter()
            .take(MAX_FINDINGS)
            .map(|file| {
                Finding::in_file(
                    file.as_str(),
                    format!(
                        "changed, and nothing matching `then: [{}]` was",
                        self.then_globs()
                    ),
                )
            })
            .collect();
        Outcome {
            findings,
            ..Outcome::fail(format!(
                "{} file{} matching `when: [{}]` changed without a change matching `then: [{}]`{how}",
                triggered.len(),
                validator_text::plural(triggered.len()),
                self.when_globs(),
                self.then_globs()
            ))
        }
    }
}

impl CoChange {
    fn when_globs(&self) -> String {
        globs(&self.when)
    }

    fn then_globs(&self) -> String {
        globs(&self.then)
    }

    /// The reason after the skip marker, in the done signal or a line the change adds, if it
    /// has enough words.
    fn skip_reason(&self, ctx: &Context<'_>, deadline: &Deadline<'_>) -> Option<String> {
        let marker = self.skip_marker.as_deref()?;
        let signal = String::from_utf8_lossy(ctx.task.signal.body()).into_owned();
        let patch = file_scope::diff(ctx, &self.base, deadline.at(), MAX_PATCH_BYTES)
            .ok()
            .flatten()
            .map(|patch| patch.text)
            .unwrap_or_default();
        let added = patch
            .lines()
            .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
            .map(|l| &l[1..]);
        signal
            .lines()
            .chain(added)
            .filter_map(|line| line.split_once(marker).map(|(_, reason)| reason.trim()))
            .find(|reason| {
                // A word has a letter or a digit: invisible characters are no reason.
                reason
                    .split_whitespace()
                    .filter(|word| word.chars().any(char::is_alphanumeric))
                    .count()
                    >= self.min_reason_words as usize
            })
            .map(|reason| {
                reason
                    .chars()
                    .filter(|c| !validator_text::ignorable(*c) && !is_bidi_control(*c))
                    .collect()
            })
    }
}

/// The changed files `set` matches, looked at until `deadline`: a change set may hold as many
/// files as the worker made.
fn matching<'f>(
    set: &PatternSet,
    files: &'f std::collections::BTreeSet<String>,
    deadline: &Deadline<'_>,
) -> Result<Vec<&'f String>, Stopped> {
    let mut matched = Vec::new();
    for file in files {
        deadline.check()?;
        if set.is_match(file) {
            matched.push(file);
        }
    }
    Ok(matched)
}

/// The characters that reorder text on screen (U+202A..E, U+2066..9): a reason shown to a
/// person reads as written.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

fn globs(set: &PatternSet) -> String {
    set.patterns()
        .iter()
        .map(|p| p.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
