//! `content`: what the files matching `files` may and must contain. A `ban` pattern found in a
//! file is a finding at its line and column, with the rule's message; a `require` pattern a
//! file lacks is a finding on the file. With `changed_only`, only the files the worker changed
//! (as `file-scope` counts them: git, else the baseline) are read.
//!
//! Patterns are regular expressions of the `regex` crate, whose matching time is linear in the
//! text whatever the pattern (no backtracking), with the compiled size capped: checked when the
//! rules load (syntax and size), compiled for matching when first matched. Files are the worker's: read only inside the task directory, regular
//! files only, as bytes (a NUL byte does not hide a banned pattern), and a file past
//! `max_bytes` fails the gate rather than going unread. The walk and the reads stop at the
//! gate's deadline, which is then a timeout: a thousand links to one large file cannot keep it
//! reading past its time, nor pass on the files it got through.

pub use crate::rules::spec::ContentPattern;
use std::path::Path;
use std::sync::OnceLock;
use validator_reading::Finding as Found;

use regex::bytes::{Regex, RegexBuilder};

use super::{About, Context, KeyError, MAX_FINDINGS, Outcome, Required, RuleDef, file_scope};
use crate::globs::PatternSet;
use crate::rules::spec::GateSpec;
use crate::taskdir;
use crate::verdict::Finding;
use validator_text::one_line;

/// Default largest file read: 1 MiB. Source files are smaller; a larger one fails the gate
/// (raise `max_bytes`, or narrow `files`), never passes unread.
const DEFAULT_MAX_BYTES: u64 = 1024 * 1024;
/// The largest compiled pattern: far past any pattern a person writes, short of one built to
/// exhaust memory.
const MAX_PATTERN_SIZE: usize = 1024 * 1024;
/// Longest excerpt of a matched line in a finding.
const MAX_EXCERPT_CHARS: usize = 120;

#[derive(Debug, Clone)]
struct Check {
    regex: Pattern,
    pattern: String,
    message: String,
}

#[derive(Debug, Clone)]
pub struct Content {
    files: PatternSet,
    exclude: PatternSet,
    ban: Vec<Check>,
    require: Vec<Check>,
    changed_only: bool,
    /// What `changed_only` counts changes from (default: HEAD).
    base: String,
    max_bytes: u64,
}

impl RuleDef for Content {
    /// Not cacheable: with `changed_only` it judges the change, not the files alone, and
    /// reading with a linear-time matcher costs no more than the cache's own hashing.
    const ABOUT: About = About {
        keys: &[
            "files",
            "exclude",
            "ban",
            "require",
            "changed_only",
            "base",
            "max_bytes",
        ],
        required: Required::All(&["files"]),
        cacheable: false,
        shows_timeout: false,
        starts_programs: false,
        runs_workers_code: false,
    };

    fn from_spec(spec: &GateSpec, _rules_dir: &Path) -> Result<Self, KeyError> {
        let Some(files) = spec.files.as_deref().filter(|f| !f.is_empty()) else {
            return Err(KeyError::missing("files", spec.rule, "[\"src/**/*.py\"]"));
        };
        let compile = |key: &'static str, patterns: &Option<Vec<ContentPattern>>| {
            patterns
                .iter()
                .flatten()
                .map(|written| compile(key, written))
                .collect::<Result<Vec<Check>, KeyError>>()
        };
        let ban = compile("ban", &spec.ban)?;
        let require = compile("require", &spec.require)?;
        if ban.is_empty() && require.is_empty() {
            return Err(KeyError::new(
                "rule",
                "rule `content` needs `ban:` or `require:`",
                "add, for example, `ban: [{pattern: 'breakpoint\\(\\)', message: remove debugger calls}]`",
            ));
        }
        Ok(Content {
            files: PatternSet::new(files),
            exclude: PatternSet::new(spec.exclude.as_deref().unwrap_or_default()),
            ban,
            require,
            changed_only: spec.changed_only.unwrap_or(false),
            base: file_scope::checked_base(spec)?,
            max_bytes: spec.max_bytes.unwrap_or(DEFAULT_MAX_BYTES),
        })
    }

    fn base(&self) -> Option<&str> {
        self.changed_only.then_some(self.base.as_str())
    }

    fn run(&self, ctx: &Context<'_>) -> Outcome {
        ctx.in_time(self.judge(ctx))
    }
}

impl Content {
    fn judge(&self, ctx: &Context<'_>) -> Outcome {
        let deadline = ctx.deadline();
        let listing = match ctx.list_in_time() {
            Ok(listing) => listing,
            Err(timed_out) => return timed_out,
        };
        let mut findings = Vec::new();
        let changed = if self.changed_only {
            match file_scope::considered(ctx, &self.base, deadline.at()) {
                Ok(changes) => {
                    // What the listing could not see (a directory it could not read, a link
                    // out): what could not be seen is not clean either.
                    findings.extend(changes.findings);
                    Some(changes.files)
                }
                Err(problem) => return problem.outcome(ctx),
            }
        } else {
            None
        };
        findings.extend(self.unread_places(&listing, changed.as_ref()));
        let reader = taskdir::Reader::new(ctx.task);
        let matching: Vec<&taskdir::Entry> = listing
            .files
            .iter()
            .filter(|e| {
                self.files.is_match(&e.rel)
                    && !self.exclude.is_match(&e.rel)
                    && changed.as_ref().is_none_or(|c| c.contains(&e.rel))
            })
            .collect();
        let mut read = 0usize;
        for entry in &matching {
            if findings.len() >= MAX_FINDINGS {
                break;
            }
            let progress = || format!("{read} of {} files read", matching.len());
            if let Err(stopped) = deadline.check() {
                return Outcome::stopped(ctx, stopped, &progress(), findings);
            }
            let bytes = match reader.read_capped_by(&entry.path, self.max_bytes, &deadline) {
                Ok(Some(bytes)) => bytes,
                Err(taskdir::Unread::Stopped(stopped)) => {
                    return Outcome::stopped(ctx, stopped, &progress(), findings);
                }
                Ok(None) => {
                    findings.push(Finding::in_file(
                        &entry.rel,
                        format!(
                            "is larger than {} bytes, so it was not checked; narrow `files:` or raise `max_bytes:`",
                            self.max_bytes
                        ),
                    ));
                    continue;
                }
                Err(taskdir::Unread::Refused(why)) => {
                    findings.push(Finding::in_file(
                        &entry.rel,
                        format!("cannot be read: {why}"),
                    ));
                    continue;
                }
            };
            read += 1;
            self.check(&entry.rel, &bytes, &mut findings);
        }
        let scope = if self.changed_only { "changed " } else { "" };
        Outcome::from_findings(
            findings,
            &format!("{read} {scope}file{} checked", validator_text::plural(read)),
            |n| format!("{n} content problems"),
        )
    }

    /// What the listing could not or would not read, where a matching file could hide: a link
    /// out of the task, a link to a directory inside it (its files are listed under their own
    /// path), a directory that cannot be read. Each fails the gate: unread is not clean. With
    /// `changed_only`, a link counts only if it is a change (a virtualenv's links to its
    /// interpreter are not the worker's).
    fn unread_places(
        &self,
        listing: &taskdir::Listing,
        changed: Option<&std::collections::BTreeSet<String>>,
    ) -> Vec<Finding> {
        let hidden = |paths: &[String], why: &str| -> Vec<Finding> {
            paths
                .iter()
                .filter(|path| self.could_hold_matches(path))
                .filter(|path| changed.is_none_or(|c| c.contains(*path)))
                .map(|path| Finding::in_file(path, why))
                .collect::<Vec<_>>()
        };
        let mut findings = hidden(
            &listing.escaping_links,
            "is a link that points outside the task directory; it was not read",
        );
        findings.extend(hidden(
            &listing.linked_dirs,
            "is a link to a directory; its files were not read under this name, so `files:` may miss them",
        ));
        findings.extend(
            listing
                .unreadable
                .iter()
                .filter(|path| self.could_hold_matches(path))
                .map(|path| {
                    Finding::in_file(
                        path,
                        "cannot be read, so the files in it were not checked; make it readable",
                    )
                }),
        );
        findings
    }

    /// Whether a file matching `files` could lie at `path` or below it: the path itself, or a
    /// file under it named as each glob's last segment would name one.
    fn could_hold_matches(&self, path: &str) -> bool {
        if self.files.is_match(path) {
            return true;
        }
        self.files.patterns().iter().any(|pattern| {
            let last = pattern.as_str().rsplit('/').next().unwrap_or_default();
            // `*.py` → `_.py`, `*.{js,ts}` → `_.js`, `[ab]c` → `_c`: one name the glob takes.
            let mut name = String::new();
            let mut chars = last.chars().peekable();
            while let Some(c) = chars.next() {
                match c {
                    '*' | '?' => name.push('_'),
                    '[' => {
                        name.push('_');
                        for c in chars.by_ref() {
                            if c == ']' {
                                break;
                            }
                        }
                    }
                    '{' => {
                        let inner: String = chars.by_ref().take_while(|&c| c != '}').collect();
                        name.push_str(inner.split(',').next().unwrap_or_default());
                    }
                    c => name.push(c),
                }
            }
            let name = if name.is_empty() {
                "_".to_owned()
            } else {
                name
            };
            self.files.is_match(&format!("{path}/{name}"))
                || self.files.is_match(&format!("{path}/_/{name}"))
        })
    }

    fn check(&self, rel: &str, bytes: &[u8], findings: &mut Vec<Finding>) {
        for check in self.ban.iter().chain(&self.require) {
            if let Err(why) = check.regex.regex() {
                findings.push(
                    Found::in_file(rel, why)
                        .with_rule(Some(&check.pattern))
                        .into(),
                );
                return;
            }
        }
        for check in &self.ban {
            let Ok(regex) = check.regex.regex() else {
                continue;
            };
            // Matches come in order: lines are counted once over the file, not per match.
            let mut counted = (0usize, 1usize);
            for found in regex.find_iter(bytes) {
                if findings.len() >= MAX_FINDINGS {
                    return;
                }
                let (upto, lines) = counted;
                let line = lines
                    + bytes[upto..found.start()]
                        .iter()
                        .filter(|&&b| b == b'\n')
                        .count();
                counted = (found.start(), line);
                let (column, text) = place(bytes, found.start());
                findings.push(
                    Found {
                        line: Some(u32::try_from(line).unwrap_or(u32::MAX)),
                        column: Some(column),
                        ..Found::in_file(rel, format!("{}: `{text}`", check.message))
                    }
                    .with_rule(Some(&check.pattern))
                    .into(),
                );
            }
        }
        for check in &self.require {
            if findings.len() >= MAX_FINDINGS {
                return;
            }
            if !check.regex.regex().is_ok_and(|regex| regex.is_match(bytes)) {
                findings.push(
                    Found::in_file(rel, format!("{} (nothing matches it)", check.message))
                        .with_rule(Some(&check.pattern))
                        .into(),
                );
            }
        }
    }
}

/// A pattern of the rules file (`ban`, `require`, `only_if`'s `contains`) as every such pattern
/// is read: `^` and `$` at each line (CR or CRLF ends too), size-limited. Its syntax and size
/// are checked when the rules load; the matcher (literal prefilters, DFAs) is built when first
/// matched, as a tool hook loads every gate to judge one call and building them was most of
/// its cost.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    text: String,
    compiled: OnceLock<Result<Regex, String>>,
}

impl Pattern {
    /// The pattern `text`, checked; the error says why in one line.
    pub(crate) fn new(key: &'static str, text: &str) -> Result<Pattern, KeyError> {
        check_pattern(text).map_err(|why| pattern_error(key, text, &why))?;
        Ok(Pattern {
            text: text.to_owned(),
            compiled: OnceLock::new(),
        })
    }

    /// The compiled matcher, or why it cannot be built (the load's check makes that a limit
    /// the matcher's own engines hit, which a gate reports rather than passes).
    pub(crate) fn regex(&self) -> Result<&Regex, String> {
        self.compiled
            .get_or_init(|| {
                RegexBuilder::new(&self.text)
                    .multi_line(true)
                    // `^` and `$` at a CR or CRLF line end too: a file with CR line ends runs
                    // the same.
                    .crlf(true)
                    .size_limit(MAX_PATTERN_SIZE)
                    .dfa_size_limit(MAX_PATTERN_SIZE)
                    .build()
                    .map_err(|err| last_line(&err.to_string()))
            })
            .as_ref()
            .map_err(|why| {
                format!(
                    "pattern `{}` cannot be matched: {why}",
                    one_line(&self.text)
                )
            })
    }
}

/// What the `regex` crate would refuse in `pattern`, found without building its matcher: the
/// syntax (parsed as a bytes regex parses it) and the compiled size (its NFA, under the same
/// limit).
fn check_pattern(pattern: &str) -> Result<(), String> {
    use regex_automata::nfa::thompson;
    let hir = regex_syntax::ParserBuilder::new()
        .multi_line(true)
        .crlf(true)
        .utf8(false)
        .build()
        .parse(pattern)
        .map_err(|err| last_line(&err.to_string()))?;
    // The matcher builds the NFA both ways (the reverse one finds where a match starts).
    for reverse in [false, true] {
        thompson::Compiler::new()
            .configure(
                thompson::Config::new()
                    .utf8(false)
                    .reverse(reverse)
                    .which_captures(if reverse {
                        thompson::WhichCaptures::None
                    } else {
                        thompson::WhichCaptures::All
                    })
                    .nfa_size_limit(Some(MAX_PATTERN_SIZE)),
            )
            .build_from_hir(&hir)
            .map_err(|err| last_line(&err.to_string()))?;
    }
    Ok(())
}

/// The regex crates draw the pattern with a caret over lines; their last line says why.
fn last_line(text: &str) -> String {
    let why = text
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("invalid");
    why.trim_start_matches("error: ").to_owned()
}

fn pattern_error(key: &'static str, pattern: &str, why: &str) -> KeyError {
    KeyError::new(
        key,
        format!(
            "pattern `{}` does not compile: {}",
            one_line(pattern),
            one_line(why)
        ),
        "write a regular expression in Rust's regex syntax (no look-around or back-references); escape `(`, `.` and `*` meant literally",
    )
}

fn compile(key: &'static str, written: &ContentPattern) -> Result<Check, KeyError> {
    Ok(Check {
        regex: Pattern::new(key, &written.pattern)?,
        pattern: written.pattern.clone(),
        message: written
            .message
            .clone()
            .unwrap_or_else(|| format!("matches `{}`", written.pattern)),
    })
}

/// The 1-based column (in characters) of byte `offset`, and its line, one line, clipped.
fn place(bytes: &[u8], offset: usize) -> (u32, String) {
    let before = &bytes[..offset];
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let line_end = bytes[offset..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |i| offset + i);
    // A line of megabytes is read only around the match.
    let from = line_start.max(offset.saturating_sub(4 * MAX_EXCERPT_CHARS));
    let to = line_end.min(offset + 4 * MAX_EXCERPT_CHARS);
    let column = String::from_utf8_lossy(&bytes[line_start..offset])
        .chars()
        .count()
        + 1;
    let text = String::from_utf8_lossy(&bytes[from..to]);
    let excerpt = validator_text::clip(&one_line(text.trim()), MAX_EXCERPT_CHARS);
    (
        u32::try_from(column).unwrap_or(u32::MAX),
        excerpt.replace('`', "'"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_lines_and_characters() {
        let text = "é first\nsecond é breakpoint()\n";
        let at = text.find("breakpoint").unwrap_or_default();
        let (column, excerpt) = place(text.as_bytes(), at);
        assert_eq!(column, 10);
        assert_eq!(excerpt, "second é breakpoint()");
    }

    #[test]
    fn a_pattern_that_would_compile_huge_is_refused() {
        let written = ContentPattern {
            pattern: "\\w{1000}\\w{1000}\\w{1000}".into(),
            message: None,
        };
        assert!(compile("ban", &written).is_err());
    }
}
