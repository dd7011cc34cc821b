//! `file-scope`: the worker changed only what it was allowed to. "Changed" comes from git
//! (against `base`, untracked files included) in a work tree, else from a baseline taken by
//! `validator snapshot`, else every file in the task directory counts. A declared
//! `files_touched` list is checked against what really changed, in both directions.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

use super::{Context, KeyError, Outcome};
use crate::config::raw::GateSpec;
use crate::globs::PatternSet;
use crate::verdict::Finding;
use crate::{snapshot, taskdir};

pub const KEYS: &[&str] = &["allow", "readonly", "deny", "base"];

#[derive(Debug, Clone)]
pub struct FileScope {
    allow: PatternSet,
    readonly: PatternSet,
    deny: PatternSet,
    base: String,
}

/// Where the list of changed files came from, said in the summary so a reader can trust it.
enum Source {
    Git(String),
    Baseline,
    Everything,
}

impl FileScope {
    pub fn from_spec(spec: &GateSpec) -> Result<Self, KeyError> {
        let base = spec.base.clone().unwrap_or_else(|| "HEAD".into());
        if base.is_empty()
            || base.starts_with('-')
            || base.chars().any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(KeyError::new(
                "base",
                format!("`{base}` is not a git revision"),
                "write a ref such as HEAD, main or origin/main",
            ));
        }
        let list = |globs: &Option<Vec<_>>| PatternSet::new(globs.as_deref().unwrap_or_default());
        Ok(FileScope {
            allow: list(&spec.allow),
            readonly: list(&spec.readonly),
            deny: list(&spec.deny),
            base,
        })
    }

    pub fn run(&self, ctx: &Context<'_>) -> Outcome {
        let (source, changed) = match self.changed(ctx) {
            Ok(found) => found,
            Err(why) => return Outcome::error(why),
        };
        let mut findings = Vec::new();
        for file in &changed {
            let broke = if self.deny.is_match(file) {
                Some("changed, but it is in `deny`".to_string())
            } else if self.readonly.is_match(file) {
                Some("changed, but it is `readonly`".to_string())
            } else if !self.allow.is_empty() && !self.allow.is_match(file) {
                let allow: Vec<&str> = self.allow.patterns().iter().map(|p| p.as_str()).collect();
                Some(format!(
                    "changed, but it is outside `allow` ({})",
                    allow.join(", ")
                ))
            } else {
                None
            };
            if let Some(message) = broke {
                findings.push(Finding::in_file(file, message));
            }
        }
        if let Ok(report) = &ctx.task.signal.report {
            if let Some(declared) = &report.files_touched {
                let declared: BTreeSet<String> = declared
                    .iter()
                    .map(|f| f.trim_start_matches("./").to_owned())
                    .collect();
                for file in changed.difference(&declared) {
                    findings.push(Finding::in_file(
                        file,
                        "changed, but not declared in files_touched",
                    ));
                }
                for file in declared.difference(&changed) {
                    findings.push(Finding::in_file(
                        file,
                        "declared in files_touched, but it did not change",
                    ));
                }
            }
        }
        let from = match &source {
            Source::Git(base) => format!("git, against {base}"),
            Source::Baseline => "the snapshot baseline".into(),
            Source::Everything => "every file: no git and no baseline".into(),
        };
        let count = changed.len();
        let ok = format!(
            "{count} changed file{} in scope ({from})",
            if count == 1 { "" } else { "s" }
        );
        Outcome::from_findings(findings, &ok, |n| {
            format!("{n} scope violations among {count} changed files ({from})")
        })
    }

    fn changed(&self, ctx: &Context<'_>) -> Result<(Source, BTreeSet<String>), String> {
        let task = ctx.task;
        // An explicit baseline wins over git: the coordinator took it on purpose, while a git
        // repository inside the task directory may be the worker's own, committed to hide its
        // changes.
        let changed = if let Some(baseline) = snapshot::load(ctx.state_dir, &task.name)? {
            (Source::Baseline, snapshot::changes(task, &baseline)?)
        } else if inside_git_work_tree(&task.dir) {
            (
                Source::Git(self.base.clone()),
                git_changes(&task.dir, &self.base)?,
            )
        } else {
            (
                Source::Everything,
                taskdir::list(task)
                    .files
                    .into_iter()
                    .map(|e| e.rel)
                    .collect(),
            )
        };
        let (source, mut files) = changed;
        // The validator's own files (state, verdicts, the done file) are never the worker's change.
        files.retain(|rel| !task.is_ignored(rel));
        Ok((source, files))
    }
}

/// Runs git read-only and hardened: the repository may be the worker's, and a repository's
/// own config can name programs (fsmonitor, external diff) that must not run.
fn git<I, S>(dir: &Path, args: I) -> Result<Vec<u8>, String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let output = Command::new("git")
        .arg("--no-optional-locks")
        .args([
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "diff.external=",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|err| format!("cannot run git: {err}"))?;
    if output.status.success() {
        Ok(output.stdout)
    } else {
        Err(String::from_utf8_lossy(&output.stderr).trim().to_owned())
    }
}

fn inside_git_work_tree(dir: &Path) -> bool {
    matches!(git(dir, ["rev-parse", "--is-inside-work-tree"]), Ok(out) if out.starts_with(b"true"))
}

fn git_changes(dir: &Path, base: &str) -> Result<BTreeSet<String>, String> {
    let base_exists = git(
        dir,
        [
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{base}^{{commit}}"),
        ],
    )
    .is_ok();
    let mut files = BTreeSet::new();
    if base_exists {
        let diff = git(
            dir,
            [
                "diff",
                "--name-only",
                "-z",
                "--no-renames",
                "--no-ext-diff",
                "--no-textconv",
                "--relative",
                base,
                "--",
            ],
        )
        .map_err(|err| format!("git diff against {base} failed: {err}"))?;
        files.extend(split_z(&diff));
    } else if base == "HEAD" {
        // A repository without commits: everything it tracks is new.
        let cached = git(dir, ["ls-files", "-z", "--cached"])
            .map_err(|err| format!("git ls-files failed: {err}"))?;
        files.extend(split_z(&cached));
    } else {
        return Err(format!(
            "git has no revision `{base}` here; fix `base:` in the rules file or fetch it"
        ));
    }
    // Only `.gitignore` files in the tree may hide untracked files: a change to one of them is
    // itself visible. `.git/info/exclude` and `core.excludesFile` are not, and a worker can
    // write the first, so `--exclude-standard` is not used.
    let untracked = git(
        dir,
        [
            "ls-files",
            "-z",
            "--others",
            "--exclude-per-directory=.gitignore",
        ],
    )
    .map_err(|err| format!("git ls-files failed: {err}"))?;
    files.extend(split_z(&untracked));
    Ok(files)
}

fn split_z(bytes: &[u8]) -> impl Iterator<Item = String> + '_ {
    bytes
        .split(|&b| b == 0)
        .filter(|name| !name.is_empty())
        .map(|name| String::from_utf8_lossy(name).into_owned())
}
