//! `file-scope`: the worker changed only what it was allowed to. "Changed" comes from a
//! baseline taken by `validator snapshot` before the worker started, else from git (against
//! `base`, untracked files included) in a work tree, else every file in the task directory
//! counts. A declared `files_touched` list is checked against what really changed, in both
//! directions. The task directory, its `.git` included, is the worker's: git runs hardened
//! and under the gate's deadline, and the tricks that would hide a change from it (ignore
//! files, index flags, nested repositories) are detected.
//!
//! The same listing, and the patch git shows for it, serve the `review` rule through
//! [`changed`] and [`diff`]; it is found one way only, here.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fmt;
use std::path::Path;
use std::time::Instant;

use super::{Context, KeyError, Outcome};
use crate::config::raw::GateSpec;
use crate::globs::{Pattern, PatternSet};
use crate::process::{self, Exit, SpawnError};
use crate::verdict::Finding;

/// What `git rev-parse --local-env-vars` lists (but `GIT_NO_REPLACE_OBJECTS`, which is set):
/// variables that point git at another repository, index or object store. Under a git hook (pre-commit, lefthook) validator's environment holds
/// the enclosing repository's; the task's git must find its own.
const REPOSITORY_VARS: &[&str] = &[
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_OBJECT_DIRECTORY",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE",
    "GIT_REPLACE_REF_BASE",
    "GIT_PREFIX",
    "GIT_INTERNAL_SUPER_PREFIX",
    "GIT_SHALLOW_FILE",
    "GIT_COMMON_DIR",
    "GIT_EXTERNAL_DIFF",
];
use crate::{snapshot, taskdir};

pub const KEYS: &[&str] = &["allow", "readonly", "deny", "base"];

const READONLY: &str = "`readonly`";
const OUTSIDE: &str = "outside `allow`";
const UNDECLARED: &str = "changed, but not declared in files_touched";
const UNCHANGED: &str = "declared in files_touched, but it did not change";

/// The kind of scope violation a finding of this rule reports, for the `contract_violation`
/// event: `scope`, `readonly` or `undeclared change`. `None` for findings about how the
/// changes were found.
pub fn violation_kind(finding: &Finding) -> Option<&'static str> {
    let message = finding.message.as_str();
    if message == UNDECLARED || message == UNCHANGED {
        Some("undeclared change")
    } else if message.ends_with(READONLY) {
        Some("readonly")
    } else if message.contains(OUTSIDE) || message.ends_with("in `deny`") {
        Some("scope")
    } else {
        None
    }
}

/// Most bytes of path listings read from git.
const GIT_OUTPUT_CAP: usize = 64 * 1024 * 1024;

#[derive(Debug, Clone)]
pub struct FileScope {
    allow: PatternSet,
    readonly: PatternSet,
    deny: PatternSet,
    base: String,
}

/// Where the list of changed files came from, said in the summary so a reader can trust it.
pub(crate) enum Source {
    Git(String),
    Baseline,
    Everything,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Git(base) => write!(f, "git, against {base}"),
            Source::Baseline => f.write_str("the snapshot baseline"),
            Source::Everything => f.write_str("every file: no git and no baseline"),
        }
    }
}

/// Why the changes could not be listed: the validator's problem (ERROR) or the worker's (FAIL,
/// e.g. a repository it broke).
pub(crate) enum Problem {
    Judge(String),
    Worker(String),
}

/// The changed files, and findings about how they were found (hidden changes, refused links).
pub(crate) struct Changes {
    pub source: Source,
    pub files: BTreeSet<String>,
    pub findings: Vec<Finding>,
    pub note: Option<&'static str>,
}

/// What git shows of the tracked files' changes against a base, cut to a size.
pub(crate) struct Patch {
    pub text: String,
    /// Bytes of the patch that were left out.
    pub cut: u64,
    /// The patch was too large to read whole, so `text` does not start at its beginning.
    pub from_middle: bool,
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

    /// A gate that holds a contract's file lists when the pipeline has no `file-scope` gate.
    pub fn from_contract(owned: &[Pattern], readonly: &[Pattern]) -> FileScope {
        FileScope {
            allow: PatternSet::new(owned),
            readonly: PatternSet::new(readonly),
            deny: PatternSet::new(&[]),
            base: "HEAD".into(),
        }
    }

    pub fn run(&self, ctx: &Context<'_>) -> Outcome {
        let Changes {
            source,
            files: changed,
            mut findings,
            note,
        } = match changed(ctx, &self.base, Instant::now() + ctx.timeout) {
            Ok(found) => found,
            Err(Problem::Judge(why)) => return Outcome::error(why),
            Err(Problem::Worker(why)) => return Outcome::fail(why),
        };
        for file in &changed {
            let broke = if self.deny.is_match(file) {
                Some("changed, but it is in `deny`".to_string())
            } else if self.readonly.is_match(file) {
                Some(format!("changed, but it is {READONLY}"))
            } else if !self.allow.is_empty() && !self.allow.is_match(file) {
                let allow: Vec<&str> = self.allow.patterns().iter().map(|p| p.as_str()).collect();
                Some(format!(
                    "changed, but it is {OUTSIDE} ({})",
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
                    findings.push(Finding::in_file(file, UNDECLARED));
                }
                for file in declared.difference(&changed) {
                    findings.push(Finding::in_file(file, UNCHANGED));
                }
            }
        }
        let from = match note {
            Some(note) => format!("{source}; {note}"),
            None => source.to_string(),
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
}

/// What the worker changed in the task directory: from the snapshot baseline, else git against
/// `base` (untracked files included), else every file; the validator's own files left out.
/// Any git it runs is hardened and ends by `deadline`.
pub(crate) fn changed(
    ctx: &Context<'_>,
    base: &str,
    deadline: Instant,
) -> Result<Changes, Problem> {
    let task = ctx.task;
    let mut note = None;
    // A baseline the worker could have written is no baseline.
    let state_inside_task = normalized(ctx.state_dir).starts_with(&task.dir);
    let baseline = if state_inside_task {
        if snapshot::path(ctx.state_dir, &task.name).exists() {
            note =
                Some("a baseline inside the task directory was ignored: move `state:` out of it");
        }
        None
    } else {
        snapshot::load(ctx.state_dir, &task.name).map_err(Problem::Judge)?
    };
    let mut changes = if let Some(baseline) = baseline {
        // An explicit baseline wins over git: the coordinator took it on purpose, while a
        // repository inside the task directory may be the worker's own.
        let files = snapshot::changes(task, &baseline).map_err(Problem::Worker)?;
        let findings = listing_problems(&taskdir::list(task));
        Changes {
            source: Source::Baseline,
            files,
            findings,
            note,
        }
    } else if let Some(git) = Git::open(ctx, deadline) {
        git.changes(base, note)?
    } else {
        let listing = taskdir::list(task);
        let findings = listing_problems(&listing);
        let files = listing.files.into_iter().map(|e| e.rel).collect();
        Changes {
            source: Source::Everything,
            files,
            findings,
            note,
        }
    };
    // The validator's own files (state, verdicts, the done file) are never the worker's change.
    changes.files.retain(|rel| !task.is_ignored(rel));
    Ok(changes)
}

/// The patch of the tracked files against `base`, its head kept up to `cap` bytes; `Ok(None)`
/// outside a git work tree or when `base` is not a commit. Hardened like every git run here:
/// no external diff, no textconv, no filter program of the repository's runs.
pub(crate) fn diff(
    ctx: &Context<'_>,
    base: &str,
    deadline: Instant,
    cap: usize,
) -> Result<Option<Patch>, String> {
    let Some(git) = Git::open(ctx, deadline) else {
        return Ok(None);
    };
    if !git.has_commit(base) {
        return Ok(None);
    }
    // Read past the cap so a cut is known and the head can be kept; the runner keeps a tail.
    let read_cap = cap.saturating_mul(4).max(PATCH_READ_MIN);
    let done = git.run_capped(
        &[
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--no-renames",
            "--relative",
            base,
            "--",
        ],
        read_cap,
    )?;
    let mut bytes = done.output;
    // Past the read cap only the runner's tail survived: what is shown then starts mid-patch.
    let from_middle = done.dropped > 0;
    let mut cut = done.dropped;
    if bytes.len() > cap {
        cut += (bytes.len() - cap) as u64;
        bytes.truncate(cap);
    }
    // A cut may split a character: the lossy decoding marks it.
    let text = String::from_utf8_lossy(&bytes).into_owned();
    Ok(Some(Patch {
        text,
        cut,
        from_middle,
    }))
}

/// The least a patch is read to before it is cut.
const PATCH_READ_MIN: usize = 4 * 1024 * 1024;

fn normalized(path: &Path) -> std::path::PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// What a listing could not see or refused to follow: each is a finding, never silence.
fn listing_problems(listing: &taskdir::Listing) -> Vec<Finding> {
    let unreadable = listing.unreadable.iter().map(|dir| {
        Finding::in_file(
            dir,
            "cannot be read, so its changes cannot be seen; make it readable",
        )
    });
    let links = listing
        .escaping_links
        .iter()
        .map(|link| Finding::in_file(link, "is a link that points outside the task directory"));
    unreadable.chain(links).collect()
}

/// git, run read-only over the worker's repository: under the gate's deadline and process
/// group, with hooks, fsmonitor, external diff and every configured filter or textconv
/// program switched off (the repository's config is the worker's to write).
struct Git<'a> {
    ctx: &'a Context<'a>,
    neutralised: Vec<String>,
    /// The task directory's path inside the work tree (`sub/dir/`, or empty at its top):
    /// status names paths from the top.
    prefix: String,
    /// Every git run ends by then: the gate's deadline covers all of them, not each.
    deadline: Instant,
}

impl<'a> Git<'a> {
    /// `None` when the task directory is not in a git work tree (or git is not installed).
    fn open(ctx: &'a Context<'a>, deadline: Instant) -> Option<Self> {
        let mut git = Git {
            ctx,
            neutralised: Vec::new(),
            prefix: String::new(),
            deadline,
        };
        let out = git
            .run(&["rev-parse", "--is-inside-work-tree", "--show-prefix"])
            .ok()?;
        let mut lines = out.split(|&b| b == b'\n');
        if lines.next() != Some(b"true") {
            return None;
        }
        git.prefix = String::from_utf8_lossy(lines.next().unwrap_or_default()).into_owned();
        // Reading config runs nothing; what it names must not run either.
        let pattern = r"^(filter|diff)\..*\.(clean|smudge|process|textconv|command)$";
        if let Ok(names) = git.run(&["config", "--name-only", "-z", "--get-regexp", pattern]) {
            git.neutralised = split_z(&names).map(|name| format!("{name}=")).collect();
        }
        Some(git)
    }

    fn run(&self, args: &[&str]) -> Result<Vec<u8>, String> {
        let done = self.run_capped(args, GIT_OUTPUT_CAP)?;
        if done.dropped > 0 {
            return Err(format!(
                "git listed more than {} MiB of paths",
                GIT_OUTPUT_CAP / 1024 / 1024
            ));
        }
        Ok(done.output)
    }

    /// Runs git; its standard output's tail up to `cap` bytes, if it exits 0.
    fn run_capped(&self, args: &[&str], cap: usize) -> Result<process::Finished, String> {
        let hardening = [
            "git",
            "--no-optional-locks",
            // A replacement ref (`git replace <base> HEAD`) would make the base look like the
            // worker's own commit.
            "--no-replace-objects",
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "diff.external=",
            // The untracked cache trusts directory mtimes, which the worker can set back.
            "-c",
            "core.untrackedCache=false",
            // Settings under which git would not see a change: an edit that keeps size and
            // mtime, a name that differs in case only, a mode or line-ending change.
            "-c",
            "core.trustctime=true",
            "-c",
            "core.checkStat=default",
            "-c",
            "core.ignorecase=false",
            "-c",
            "core.fileMode=true",
            "-c",
            "core.symlinks=true",
            "-c",
            "core.autocrlf=false",
            // A promisor remote would fetch a missing object, running the repository's
            // `core.sshCommand` (or any transport): no network, no program.
            "-c",
            "core.sshCommand=",
            "-c",
            "protocol.allow=never",
        ];
        let mut argv: Vec<OsString> = hardening.iter().map(OsString::from).collect();
        for setting in &self.neutralised {
            argv.push("-c".into());
            argv.push(setting.into());
        }
        argv.extend(args.iter().map(OsString::from));
        // Settings passed down from an enclosing git (a hook's `git -c`) are not the task's.
        let env = [
            ("GIT_TERMINAL_PROMPT".into(), "0".into()),
            ("GIT_OPTIONAL_LOCKS".into(), "0".into()),
            ("GIT_CONFIG_PARAMETERS".into(), "".into()),
            ("GIT_CONFIG_COUNT".into(), "0".into()),
            ("GIT_NO_LAZY_FETCH".into(), "1".into()),
            ("GIT_ALLOW_PROTOCOL".into(), "none".into()),
            ("GIT_NO_REPLACE_OBJECTS".into(), "1".into()),
        ];
        let spec = process::Spec {
            argv: &argv,
            cwd: &self.ctx.task.dir,
            env: &env,
            env_remove: REPOSITORY_VARS,
            timeout: self.deadline.saturating_duration_since(Instant::now()),
            output_cap: cap,
            cancel: self.ctx.cancel,
            separate_stderr: true,
        };
        let done = process::run(&spec).map_err(|err| match err {
            SpawnError::NotFound(_) => "git is not installed".to_string(),
            other => other.to_string(),
        })?;
        match done.exit {
            Exit::Code(0) => Ok(done),
            Exit::TimedOut => Err("git did not finish within the gate's timeout".into()),
            _ => Err(String::from_utf8_lossy(&done.errors).trim().to_owned()),
        }
    }

    /// One `git status` walk lists the tracked changes against HEAD, the untracked files and
    /// the ignored ones; the index flags are read beside it, on another core. Only when some
    /// file is ignored does more git run, to tell what only a committed `.gitignore` hides.
    fn changes(&self, base: &str, note: Option<&'static str>) -> Result<Changes, Problem> {
        let worker = |what: &'static str| {
            move |err: String| {
                Problem::Worker(format!(
                    "git cannot read the task's repository ({what}): {err}"
                ))
            }
        };
        let (status, flagged) = std::thread::scope(|scope| {
            let flagged = scope.spawn(|| self.run(&["ls-files", "-z", "-v"]));
            let status = self.run(&[
                "status",
                "--porcelain=v2",
                "-z",
                "--untracked-files=all",
                "--ignored=matching",
                "--no-renames",
                "--ignore-submodules=none",
                "--",
                ".",
            ]);
            let flagged = flagged
                .join()
                .unwrap_or_else(|_| Err("the index listing stopped".into()));
            (status, flagged)
        });
        let status = Status::parse(&status.map_err(worker("status"))?, &self.prefix);
        let mut files = BTreeSet::new();
        if base == "HEAD" {
            // In a repository without commits, everything it tracks is new: status says so.
            files.extend(status.tracked.iter().cloned());
        } else if self.has_commit(base) {
            let diff = self
                .run(&[
                    "diff",
                    "--name-only",
                    "-z",
                    "--no-renames",
                    "--no-ext-diff",
                    "--no-textconv",
                    "--ignore-submodules=none",
                    "--relative",
                    base,
                    "--",
                ])
                .map_err(worker("diff"))?;
            files.extend(split_z(&diff));
        } else {
            return Err(Problem::Judge(format!(
                "git has no revision `{base}` here; fix `base:` in the rules file or fetch it"
            )));
        }
        let mut findings = Vec::new();
        // Index flags make git skip a file's changes; a worker may have set them.
        for entry in split_z(&flagged.map_err(worker("ls-files -v"))?) {
            if let Some((tag, path)) = entry.split_once(' ') {
                if tag == "S" || tag.chars().all(|c| c.is_ascii_lowercase()) {
                    findings.push(Finding::in_file(path, "has git's assume-unchanged or skip-worktree flag set, which hides its changes; clear it"));
                }
            }
        }
        let untracked = if status.ignored.is_empty() {
            status.untracked
        } else {
            let mut changed = files
                .iter()
                .chain(&status.tracked)
                .chain(&status.untracked)
                .chain(&status.ignored);
            self.untracked_behind_ignores(changed.any(|f| is_gitignore(f)))
                .map_err(worker("ls-files"))?
        };
        let mut nested = Vec::new();
        for path in untracked {
            // A directory entry is a repository nested in the task: git does not look inside.
            match path.strip_suffix('/') {
                Some(dir) => nested.push(format!("{dir}/")),
                None => {
                    files.insert(path);
                }
            }
        }
        // A gitlink (a repository staged or committed as a submodule) is a directory too, and
        // git's view of it is one commit id: its files are what changed.
        for path in &files {
            let at = self.ctx.task.dir.join(path);
            if std::fs::symlink_metadata(&at).is_ok_and(|meta| meta.is_dir()) {
                nested.push(format!("{path}/"));
            }
        }
        if !nested.is_empty() {
            for entry in taskdir::list(self.ctx.task).files {
                if nested.iter().any(|dir| entry.rel.starts_with(dir.as_str())) {
                    files.insert(entry.rel);
                }
            }
        }
        for file in &files {
            if is_escaping_link(self.ctx.task, file) {
                findings.push(Finding::in_file(
                    file,
                    "is a link that points outside the task directory",
                ));
            }
        }
        Ok(Changes {
            source: Source::Git(base.to_owned()),
            files,
            findings,
            note,
        })
    }

    /// The untracked files when git ignores some: only committed, unchanged `.gitignore` files
    /// may hide one (not `.git/info/exclude` nor the global excludes, which status obeys). A
    /// new or edited `.gitignore` anywhere, even one that ignores itself or hides behind
    /// another ignore file, makes every untracked file count.
    fn untracked_behind_ignores(&self, ignore_file_changed: bool) -> Result<Vec<String>, String> {
        if !ignore_file_changed {
            let ignored_gitignores = self.run(&[
                "ls-files",
                "-z",
                "--others",
                "--ignored",
                "--exclude-per-directory=.gitignore",
                "--",
                ":(glob)**/.gitignore",
            ])?;
            if ignored_gitignores.is_empty() {
                let listed = self.run(&[
                    "ls-files",
                    "-z",
                    "--others",
                    "--exclude-per-directory=.gitignore",
                ])?;
                let listed: Vec<String> = split_z(&listed).collect();
                // A new `.gitignore` only `.git/info/exclude` kept out of status's sight.
                if !listed.iter().any(|f| is_gitignore(f)) {
                    return Ok(listed);
                }
            }
        }
        let everything = self.run(&["ls-files", "-z", "--others"])?;
        Ok(split_z(&everything).collect())
    }
}

/// What `git status --porcelain=v2 -z` lists, as paths relative to the task directory.
#[derive(Debug, Default, PartialEq)]
struct Status {
    /// Tracked files that differ from HEAD (staged or not; every staged file before a commit).
    tracked: Vec<String>,
    untracked: Vec<String>,
    /// Ignored files, and ignored directories (ending in `/`) whose contents git did not list.
    ignored: Vec<String>,
}

impl Status {
    fn parse(bytes: &[u8], prefix: &str) -> Status {
        let mut status = Status::default();
        let mut records = bytes.split(|&b| b == 0).filter(|r| !r.is_empty());
        while let Some(record) = records.next() {
            let record = String::from_utf8_lossy(record);
            // The number of space-separated fields before the path, by record kind.
            let (list, fields) = match record.as_bytes()[0] {
                b'1' => (&mut status.tracked, 8),
                // A rename's record is followed by its original path: both changed.
                b'2' => {
                    if let Some(from) = records.next() {
                        let from = String::from_utf8_lossy(from);
                        status.tracked.extend(inside(&from, prefix));
                    }
                    (&mut status.tracked, 9)
                }
                b'u' => (&mut status.tracked, 10),
                b'?' => (&mut status.untracked, 1),
                b'!' => (&mut status.ignored, 1),
                _ => continue,
            };
            if let Some(path) = record.splitn(fields + 1, ' ').nth(fields) {
                list.extend(inside(path, prefix));
            }
        }
        status
    }
}

/// `path` (from the top of the work tree) relative to the task directory, if it is inside.
fn inside(path: &str, prefix: &str) -> Option<String> {
    path.strip_prefix(prefix)
        .filter(|rel| !rel.is_empty())
        .map(str::to_owned)
}

impl Git<'_> {
    fn has_commit(&self, base: &str) -> bool {
        self.run(&[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{base}^{{commit}}"),
        ])
        .is_ok()
    }
}

fn is_gitignore(path: &str) -> bool {
    path == ".gitignore" || path.ends_with("/.gitignore")
}

fn is_escaping_link(task: &crate::task::Task, rel: &str) -> bool {
    let path = task.dir.join(rel);
    path.symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
        && !path
            .canonicalize()
            .is_ok_and(|target| target.starts_with(&task.dir))
}

fn split_z(bytes: &[u8]) -> impl Iterator<Item = String> + '_ {
    bytes
        .split(|&b| b == 0)
        .filter(|name| !name.is_empty())
        .map(|name| String::from_utf8_lossy(name).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_records_are_read_by_kind_and_cut_to_the_task_directory() {
        let out = b"# branch.oid (initial)\0\
            1 .M N... 100644 100644 100644 aaa bbb task/a file.rs\0\
            2 R. N... 100644 100644 100644 aaa bbb R100 task/new\0task/old\0\
            u UU N... 100644 100644 100644 100644 aaa bbb ccc task/both\0\
            1 A. N... 000000 100644 100644 000 aaa other/x\0\
            ? task/untracked\0\
            ! task/target/\0";
        let status = Status::parse(out, "task/");
        assert_eq!(status.tracked, ["a file.rs", "old", "new", "both"]);
        assert_eq!(status.untracked, ["untracked"]);
        assert_eq!(status.ignored, ["target/"]);
        assert_eq!(Status::parse(b"? x\0", "").untracked, ["x"]);
    }
}
