//! git over the worker's repository, for `file-scope` and the reviewer's patch. The repository
//! is the worker's (its config, attributes, index, refs), so:
//!
//! - validator finds it, never git: a `.git` in the task directory must be a repository git
//!   can read whose git directory (and common directory, and borrowed objects) lie inside the
//!   task, unless it is a registered linked worktree of a repository outside; one above the
//!   worker's reach is the operator's. git is then told exactly which (`GIT_DIR`,
//!   `GIT_WORK_TREE`), so `core.worktree` or `core.bare` cannot point it elsewhere and a `.git`
//!   git would skip never hands the task to an enclosing repository;
//! - git runs with no system or user config, the repository's programs (filters, textconv, diff
//!   drivers, hooks, fsmonitor) switched off, no fetching, no submodule recursion, under the
//!   gate's deadline, and inside a Landlock sandbox ([`crate::sandbox`]) that lets it read the
//!   task and the system's libraries, execute only itself and write nothing, so what a worker
//!   racing these checks configures still cannot run or read elsewhere;
//! - nested repositories (gitlinks, staged or committed) are looked into by validator itself,
//!   each with a hardened git of its own.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;

use super::Context;
use super::scope::{Changes, Patch, Problem, Source};
use crate::files::{self, Links};
use crate::process::{self, Exit, SpawnError};
use crate::sandbox::Sandbox;
use crate::taskdir;
use crate::text::name;
use crate::verdict::Finding;

/// Most bytes of path listings read from git.
const OUTPUT_CAP: usize = 64 * 1024 * 1024;
/// The least a patch is read to before it is cut.
const PATCH_READ_MIN: usize = 4 * 1024 * 1024;
/// Nested repositories looked into below the task's own; deeper, every file counts as changed.
const MAX_NESTING: u32 = 4;
/// `.git` files, `commondir` and `gitdir` links are a line; anything longer is not git's.
const MAX_LINK_BYTES: u64 = 4096;

/// What `git rev-parse --local-env-vars` lists (but `GIT_NO_REPLACE_OBJECTS`, which is set):
/// variables that point git at another repository, index or object store. Under a git hook
/// (pre-commit, lefthook) validator's environment holds the enclosing repository's; git here
/// is told its own.
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
    "GIT_CONFIG_SYSTEM",
];

/// Settings on every git command line: each turns off something of the repository's that
/// would run a program, fetch, recurse into a submodule, or hide a change.
const HARDENING: &[&str] = &[
    "--no-optional-locks",
    // The work tree is the one validator names (`GIT_WORK_TREE`), whatever the repository says.
    "-c",
    "core.bare=false",
    // A replacement ref (`git replace <base> HEAD`) would make the base look like the
    // worker's own commit.
    "--no-replace-objects",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.pager=cat",
    "-c",
    "diff.external=",
    // The untracked cache trusts directory mtimes, which the worker can set back.
    "-c",
    "core.untrackedCache=false",
    // Settings under which git would not see a change: an edit that keeps size and mtime, a
    // name that differs in case only, a mode or line-ending change.
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
    // Nested repositories are looked into by validator, never by git running in them.
    "-c",
    "submodule.recurse=false",
    "-c",
    "diff.submodule=short",
    "-c",
    "diff.ignoreSubmodules=all",
    "-c",
    "status.submoduleSummary=false",
];

/// The repository git is told to use, as validator found it.
#[derive(Debug, Clone)]
struct Layout {
    git_dir: PathBuf,
    work_tree: PathBuf,
    /// The task directory's path inside the work tree (`sub/dir/`, or empty at its top): git
    /// names paths from the top.
    prefix: String,
    /// The work tree's path inside the task directory (`vendor/lib/`, or empty): a nested
    /// repository's paths are given from the task's top.
    under: String,
    /// Where git must read outside the task directory: an operator's repository above it,
    /// the main repository of a linked worktree.
    outside: Vec<PathBuf>,
    /// Whose refs these are: what the worker may have removed is its failure, what only the
    /// operator can fix is validator's error.
    owner: Owner,
}

/// Who holds a repository's refs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    /// Its `.git` is in the task: the worker's to change.
    Worker,
    /// Above the task, out of the worker's reach.
    Operator,
}

/// What a `base:` named when the run started. Pinned once per run, so a commit or a moved ref
/// during the run (a test may commit) changes nothing the gates compare against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pinned {
    Commit(String),
    /// `HEAD` of a repository with no commit yet: everything it holds is new.
    Unborn,
    /// No such revision.
    Missing,
}

/// What git's listings account for besides the changes: files it lists (tracked, untracked,
/// ignored) and directories it holds whole (each repository's `.git`). A file validator's own
/// walk finds outside both is one git could not see.
#[derive(Debug, Default)]
pub(crate) struct Accounted {
    pub files: BTreeSet<String>,
    pub dirs: BTreeSet<String>,
    /// Directories git reported ignored (task paths ending in `/`).
    pub ignored_dirs: Vec<String>,
}

/// A `.git` resolved: the git directory and the common directory (where objects, refs and
/// config are; the same but for a linked worktree).
struct GitDirs {
    git_dir: PathBuf,
    common: PathBuf,
}

/// A repository of the task, ready to run hardened git in.
pub(crate) struct Repo<'a> {
    ctx: &'a Context<'a>,
    layout: Layout,
    /// Each filter or diff driver program the repository configures, by its config name as
    /// git printed it (raw bytes: a subsection may hold anything), to be set empty.
    neutralised: Vec<OsString>,
    sandbox: Option<Sandbox>,
    git: PathBuf,
    /// Every git run ends by then: the gate's deadline covers all of them, not each.
    deadline: Instant,
    depth: u32,
}

impl<'a> Repo<'a> {
    /// The task's repository: `Ok(None)` when there is none (the task is not in a work tree),
    /// [`Problem::Worker`] when the worker's `.git` is not one validator may use (it says why),
    /// [`Problem::Judge`] when validator cannot judge it (git not installed, a repository in
    /// a directory every worker writes).
    pub fn open(ctx: &'a Context<'a>, deadline: Instant) -> Result<Option<Self>, Problem> {
        match locate(ctx.task)? {
            Some(layout) => Repo::at(ctx, layout, deadline, 0).map(Some),
            None => Ok(None),
        }
    }

    fn at(
        ctx: &'a Context<'a>,
        layout: Layout,
        deadline: Instant,
        depth: u32,
    ) -> Result<Self, Problem> {
        let git = git_program().ok_or_else(|| {
            Problem::Judge(
                "git is not installed, and the task is in a git repository: install git where validator runs (or take a `validator snapshot` before the worker starts)".into(),
            )
        })?;
        let mut readable = vec![ctx.task.dir.clone()];
        readable.extend(layout.outside.iter().cloned());
        let sandbox = Sandbox::reading(&git, &readable)
            .map_err(|why| Problem::Judge(format!("cannot sandbox git: {why}")))?;
        let mut repo = Repo {
            ctx,
            layout,
            neutralised: Vec::new(),
            sandbox,
            git,
            deadline,
            depth,
        };
        // Reading config runs nothing; what it names must not run either.
        let pattern = r"^(filter|diff)\..*\.(clean|smudge|process|textconv|command)$";
        if let Ok(names) = repo.run(&["config", "--name-only", "-z", "--get-regexp", pattern]) {
            repo.neutralised = names
                .split(|&b| b == 0)
                .filter(|name| !name.is_empty())
                .map(|name| OsString::from_vec(name.to_vec()))
                .collect();
        }
        Ok(repo)
    }

    fn run(&self, args: &[&str]) -> Result<Vec<u8>, String> {
        let done = self.run_capped(args, OUTPUT_CAP)?;
        if done.dropped > 0 {
            return Err(format!(
                "git listed more than {} MiB of paths",
                OUTPUT_CAP / 1024 / 1024
            ));
        }
        Ok(done.output)
    }

    /// Runs git; its standard output's tail up to `cap` bytes, if it exits 0.
    fn run_capped(&self, args: &[&str], cap: usize) -> Result<process::Finished, String> {
        self.run_fed(args, cap, None)
    }

    /// As [`Self::run_capped`], with `input` on git's standard input.
    fn run_fed(
        &self,
        args: &[&str],
        cap: usize,
        input: Option<&[u8]>,
    ) -> Result<process::Finished, String> {
        self.run_in(args, cap, input, None)
    }

    /// As [`Self::run_fed`]; with `elsewhere`, git works on that work tree (from its top, in
    /// a sandbox that may read it) instead of the task's, with the task's repository.
    fn run_in(
        &self,
        args: &[&str],
        cap: usize,
        input: Option<&[u8]>,
        elsewhere: Option<(&Path, Option<&Sandbox>)>,
    ) -> Result<process::Finished, String> {
        let mut argv: Vec<OsString> = vec![self.git.clone().into()];
        argv.extend(HARDENING.iter().map(OsString::from));
        argv.extend(args.iter().map(OsString::from));
        let mut env: Vec<(OsString, OsString)> = vec![
            ("GIT_DIR".into(), self.layout.git_dir.clone().into()),
            (
                "GIT_WORK_TREE".into(),
                elsewhere
                    .map_or(self.layout.work_tree.as_path(), |(tree, _)| tree)
                    .into(),
            ),
            // No config but the repository's own (whose programs are switched off above):
            // what git sees does not depend on whoever runs validator.
            ("GIT_CONFIG_NOSYSTEM".into(), "1".into()),
            ("GIT_CONFIG_GLOBAL".into(), "/dev/null".into()),
            ("GIT_ATTR_NOSYSTEM".into(), "1".into()),
            ("GIT_TERMINAL_PROMPT".into(), "0".into()),
            ("GIT_OPTIONAL_LOCKS".into(), "0".into()),
            // Settings passed down from an enclosing git (a hook's `git -c`) are not the task's.
            ("GIT_CONFIG_PARAMETERS".into(), "".into()),
            ("GIT_NO_LAZY_FETCH".into(), "1".into()),
            ("GIT_ALLOW_PROTOCOL".into(), "none".into()),
            ("GIT_NO_REPLACE_OBJECTS".into(), "1".into()),
        ];
        // The repository's programs, each set to nothing. Not as `-c name=`: git splits that at
        // the first `=`, and a driver named `a=b` would keep its program. The variables take the
        // name whole. (Replacing an enclosing git's `GIT_CONFIG_COUNT` settings too.)
        env.push((
            "GIT_CONFIG_COUNT".into(),
            self.neutralised.len().to_string().into(),
        ));
        for (n, name) in self.neutralised.iter().enumerate() {
            env.push((format!("GIT_CONFIG_KEY_{n}").into(), name.clone()));
            env.push((format!("GIT_CONFIG_VALUE_{n}").into(), OsString::new()));
        }
        let cwd = match elsewhere {
            Some((tree, _)) => tree.to_path_buf(),
            None => self.ctx.task.dir.join(&self.layout.under),
        };
        let spec = process::Spec {
            argv: &argv,
            cwd: &cwd,
            env: &env,
            env_remove: REPOSITORY_VARS,
            timeout: self.deadline.saturating_duration_since(Instant::now()),
            output_cap: cap,
            cancel: self.ctx.cancel,
            separate_stderr: true,
            sandbox: match elsewhere {
                Some((_, sandbox)) => sandbox,
                None => self.sandbox.as_ref(),
            },
        };
        let ran = match input {
            Some(input) => process::run_with_input(&spec, input),
            None => process::run(&spec),
        };
        let done = ran.map_err(|err| match err {
            SpawnError::NotFound(_) => "git is not installed".to_string(),
            other => other.to_string(),
        })?;
        match done.exit {
            Exit::Code(0) => Ok(done),
            Exit::TimedOut => Err("git did not finish within the gate's timeout".into()),
            _ => Err(String::from_utf8_lossy(&done.errors).trim().to_owned()),
        }
    }

    /// A path git printed (from the top of the work tree) as a path in the task directory, if
    /// it is inside the task.
    fn in_task(&self, path: &str) -> Option<String> {
        path.strip_prefix(self.layout.prefix.as_str())
            .filter(|rel| !rel.is_empty())
            .map(|rel| format!("{}{rel}", self.layout.under))
    }

    pub fn has_commit(&self, base: &str) -> bool {
        matches!(self.pin(base), Ok(Pinned::Commit(_)))
    }

    /// The commit `base` names now; an error only when git could not answer.
    pub fn pin(&self, base: &str) -> Result<Pinned, String> {
        let revision = format!("{base}^{{commit}}");
        match self.run(&[
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            &revision,
        ]) {
            Ok(oid) => Ok(Pinned::Commit(
                String::from_utf8_lossy(&oid).trim().to_owned(),
            )),
            // `--quiet` says nothing of a revision that is not there; anything said is trouble.
            Err(said) if !said.is_empty() => Err(said),
            Err(_) if base == "HEAD" && self.run(&["symbolic-ref", "--quiet", "HEAD"]).is_ok() => {
                Ok(Pinned::Unborn)
            }
            Err(_) => Ok(Pinned::Missing),
        }
    }

    /// Why `base` cannot be compared with, as the repository's owner must hear it.
    pub fn missing_base(&self, base: &str) -> Problem {
        match self.layout.owner {
            Owner::Worker => Problem::Worker(format!(
                "the base `{base}` is not in the task's repository (it was removed, or never made): changes cannot be counted without it; restore it"
            )),
            Owner::Operator => Problem::Judge(format!(
                "git has no revision `{base}` here; fix `base:` in the rules file or fetch it"
            )),
        }
    }

    /// What changed in this repository's part of the task against `base` (named `shown`), and
    /// what else git accounts for: one `git status` walk (tracked changes against HEAD,
    /// untracked and ignored files), with the index (every tracked file, flags that hide
    /// changes, gitlinks) and the index against `base` read beside it; more git only when
    /// something is ignored or `base` is no longer HEAD, and one repository of its own for
    /// each nested repository.
    pub fn changes(
        &self,
        shown: &str,
        base: &Pinned,
        note: Option<&'static str>,
    ) -> Result<(Changes, Accounted), Problem> {
        let worker = |what: &'static str| {
            move |err: String| {
                Problem::Worker(format!(
                    "git cannot read the task's repository ({what}): {err}"
                ))
            }
        };
        let base_commit = match base {
            Pinned::Commit(oid) => Some(oid.as_str()),
            Pinned::Unborn => None,
            Pinned::Missing => return Err(self.missing_base(shown)),
        };
        let (status, index, against_base) = std::thread::scope(|scope| {
            let index = scope.spawn(|| self.run(&["ls-files", "-z", "-s", "-v", "--full-name"]));
            let against_base = scope.spawn(|| match base_commit {
                Some(oid) => self
                    .run(&[
                        "diff-index",
                        "--cached",
                        "--raw",
                        "-z",
                        "--no-renames",
                        "--ignore-submodules=none",
                        oid,
                        "--",
                        ".",
                    ])
                    .map(Some),
                None => Ok(None),
            });
            let status = self.run(&[
                "status",
                "--porcelain=v2",
                "-z",
                "--branch",
                "--untracked-files=all",
                "--ignored=matching",
                "--no-renames",
                "--ignore-submodules=all",
                "--",
                ".",
            ]);
            let stopped = || "the listing stopped".to_owned();
            (
                status,
                index.join().unwrap_or_else(|_| Err(stopped())),
                against_base.join().unwrap_or_else(|_| Err(stopped())),
            )
        });
        let status = Status::parse(&status.map_err(worker("status"))?, self);
        let index = Index::parse(&index.map_err(worker("ls-files"))?, self);
        let against_base = match against_base.map_err(worker("diff-index"))? {
            Some(raw) => Raw::parse(&raw, self),
            None => Vec::new(),
        };

        let mut accounted = Accounted::default();
        accounted.files.extend(index.tracked.iter().cloned());
        accounted.files.extend(status.untracked.iter().cloned());
        accounted.files.extend(status.ignored.iter().cloned());
        accounted
            .ignored_dirs
            .extend(status.ignored.iter().filter(|p| p.ends_with('/')).cloned());
        let own_git = format!("{}.git", self.layout.under);
        accounted.files.insert(own_git.clone());
        accounted.dirs.insert(own_git);

        let mut files = BTreeSet::new();
        match (base_commit, status.head.as_deref()) {
            // Still the HEAD status compared with: what it lists is the answer. (In a
            // repository without commits, everything it tracks is new: status says so.)
            (Some(oid), Some(head)) if oid == head => files.extend(status.tracked.iter().cloned()),
            (None, None) => files.extend(status.tracked.iter().cloned()),
            // No commit when the run started, one now: everything tracked is new since.
            (None, Some(_)) => {
                files.extend(status.tracked.iter().cloned());
                files.extend(index.tracked.iter().cloned());
            }
            (Some(oid), _) => {
                let diff = self
                    .run(&[
                        "diff",
                        "--name-only",
                        "-z",
                        "--no-renames",
                        "--no-ext-diff",
                        "--no-textconv",
                        "--ignore-submodules=all",
                        oid,
                        "--",
                        ".",
                    ])
                    .map_err(worker("diff"))?;
                files.extend(split_z(&diff).filter_map(|path| self.in_task(&path)));
            }
        }
        let mut findings: Vec<Finding> = index
            .hidden
            .iter()
            .map(|path| Finding::in_file(path, "has git's assume-unchanged or skip-worktree flag set, which hides its changes; clear it"))
            .collect();

        let untracked = if status.ignored.is_empty() {
            status.untracked
        } else {
            // Tracked ignore files the worker changed (untracked ones are listed below).
            let edited: Vec<&String> = files
                .iter()
                .chain(&status.tracked)
                .filter(|f| is_gitignore(f))
                .collect();
            let (counted, every) = self
                .untracked_behind_ignores(&edited)
                .map_err(worker("ls-files"))?;
            // A repository inside a directory the committed rules ignore (`pip install -e
            // git+…` checks out into `.venv/src/`) is listed as a directory, and is the
            // project's, not the worker's change: git accounts for it whole.
            for dir in every
                .iter()
                .filter(|f| f.ends_with('/') && !counted.contains(*f))
            {
                accounted.dirs.insert(dir.trim_end_matches('/').to_owned());
            }
            accounted.files.extend(every);
            counted
        };
        let mut every_file_under = Vec::new();
        for path in untracked {
            // A directory entry is a repository nested in the task, not staged: git does not
            // look inside, and all it holds is new.
            match path.strip_suffix('/') {
                Some(dir) => every_file_under.push(format!("{dir}/")),
                None => {
                    files.insert(path);
                }
            }
        }

        // Gitlinks: in the index (whose commit the base has, unless the index against the base
        // says otherwise), or changed between the base and the index.
        let mut gitlinks: BTreeMap<String, Option<String>> = index
            .gitlinks
            .into_iter()
            .map(|(path, commit)| (path, Some(commit)))
            .collect();
        for change in against_base.into_iter().filter(|change| change.gitlink) {
            files.insert(change.path.clone());
            gitlinks.insert(change.path, change.base_gitlink);
        }
        for (path, base_commit) in gitlinks {
            let at = self.ctx.task.dir.join(&path);
            if !at.symlink_metadata().is_ok_and(|meta| meta.is_dir()) {
                // Removed, or replaced by a file or a link: the path itself changed.
                files.insert(path);
                continue;
            }
            match self.nested(&path, base_commit.as_deref()) {
                Nested::Changed(inner, inner_accounted) => {
                    files.extend(inner.files);
                    findings.extend(inner.findings);
                    accounted.files.extend(inner_accounted.files);
                    accounted.dirs.extend(inner_accounted.dirs);
                    accounted.ignored_dirs.extend(inner_accounted.ignored_dirs);
                }
                Nested::Unknown(why) => {
                    if let Some(why) = why {
                        findings.push(Finding::in_file(&path, why));
                    }
                    every_file_under.push(format!("{path}/"));
                }
            }
        }
        if !every_file_under.is_empty() {
            let by = taskdir::Deadline::new(self.deadline, self.ctx.cancel);
            let listing = taskdir::list_by(self.ctx.task, &by).map_err(Problem::Stopped)?;
            for entry in listing.files {
                if every_file_under
                    .iter()
                    .any(|dir| entry.rel.starts_with(dir.as_str()))
                {
                    files.insert(entry.rel);
                }
            }
        }
        let changes = Changes {
            source: Source::Git(shown.to_owned()),
            files,
            findings,
            note,
        };
        Ok((changes, accounted))
    }

    /// What changed inside the nested repository at `path` (task-relative) since `base_commit`
    /// (the commit its gitlink records in the base), or why that cannot be told, in which case
    /// everything in it counts as changed.
    fn nested(&self, path: &str, base_commit: Option<&str>) -> Nested {
        let dir = self.ctx.task.dir.join(path);
        let dotgit = dir.join(".git");
        if dotgit.symlink_metadata().is_err() {
            // Not checked out (an empty directory, usually), or replaced by plain files.
            return Nested::Unknown(None);
        }
        if self.depth >= MAX_NESTING {
            return Nested::Unknown(None);
        }
        let Some(base_commit) = base_commit else {
            return Nested::Unknown(None);
        };
        let mut allowed = vec![self.ctx.task.dir.clone()];
        allowed.extend(self.layout.outside.iter().cloned());
        let layout = match nested_layout(&dotgit, &allowed) {
            Ok(dirs) => Layout {
                git_dir: dirs.git_dir,
                work_tree: dir.clone(),
                prefix: String::new(),
                under: format!("{path}/"),
                outside: self.layout.outside.clone(),
                owner: Owner::Worker,
            },
            Err(why) => return Nested::Unknown(Some(why)),
        };
        let repo = match Repo::at(self.ctx, layout, self.deadline, self.depth + 1) {
            Ok(repo) => repo,
            Err(problem) => return Nested::Unknown(Some(problem.into_reason())),
        };
        if !repo.has_commit(base_commit) {
            return Nested::Unknown(None);
        }
        match repo.changes(base_commit, &Pinned::Commit(base_commit.to_owned()), None) {
            Ok((changes, accounted)) => Nested::Changed(changes, accounted),
            Err(problem) => Nested::Unknown(Some(problem.into_reason())),
        }
    }

    /// The untracked files when git ignores some: only committed, unchanged `.gitignore` files
    /// may hide one (not `.git/info/exclude` nor the global excludes, which status obeys).
    /// `edited` (task paths) are the tracked ignore files the worker changed.
    ///
    /// With no ignore file written or edited, git's own listing is the answer. Otherwise the
    /// files only the listing hides, under a directory holding such an ignore file, are asked
    /// about again: placed, empty, in a scratch tree beside the committed ignore files alone,
    /// where git's own walk says which of them those rules hide. So a tool's `.gitignore` inside
    /// a directory the project ignores (`.venv/`) changes nothing, and a worker's hides nothing.
    /// Also returns every untracked file git sees, ignored or not (task paths).
    fn untracked_behind_ignores(
        &self,
        edited: &[&String],
    ) -> Result<(Vec<String>, Vec<String>), String> {
        // Paths from the work tree's top, as git gives them with `--full-name`.
        let listed = |args: &[&str]| -> Result<Vec<String>, String> {
            Ok(split_z(&self.run(args)?).collect())
        };
        let every = listed(&["ls-files", "-z", "--full-name", "--others"])?;
        let visible: BTreeSet<String> = listed(&[
            "ls-files",
            "-z",
            "--full-name",
            "--others",
            "--exclude-per-directory=.gitignore",
        ])?
        .into_iter()
        .collect();
        let from_top = |task_path: &String| {
            let rel = task_path
                .strip_prefix(self.layout.under.as_str())
                .unwrap_or(task_path);
            format!("{}{rel}", self.layout.prefix)
        };
        let untrusted: Vec<String> = every
            .iter()
            .filter(|f| is_gitignore(f))
            .cloned()
            .chain(edited.iter().map(|f| from_top(f)))
            .map(|ignore_file| {
                ignore_file
                    .strip_suffix(".gitignore")
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect();
        let under_untrusted = |f: &str| untrusted.iter().any(|dir| f.starts_with(dir.as_str()));
        let suspects: Vec<&String> = every
            .iter()
            .filter(|f| !visible.contains(*f) && under_untrusted(f))
            .collect();
        let mut counted: BTreeSet<String> = visible.iter().cloned().collect();
        if !suspects.is_empty() {
            counted.extend(self.hidden_by_committed_rules_not(&suspects, edited)?);
        }
        let counted = every
            .iter()
            .filter(|f| counted.contains(*f))
            .filter_map(|f| self.in_task(f))
            .collect();
        let every = every.iter().filter_map(|f| self.in_task(f)).collect();
        Ok((counted, every))
    }

    /// Of `dirs` (task paths ending in `/`), those the committed `.gitignore` files hide, as
    /// [`Self::hidden_by_committed_rules_not`] tells; `changed` says which ignore files the
    /// worker edited. When that cannot be told, none.
    pub fn hidden_by_committed_rules(
        &self,
        dirs: &[&String],
        changed: &BTreeSet<String>,
    ) -> Vec<String> {
        let from_top: Vec<String> = dirs
            .iter()
            .map(|dir| {
                let rel = dir.strip_prefix(self.layout.under.as_str()).unwrap_or(dir);
                format!("{}{rel}", self.layout.prefix)
            })
            .collect();
        let edited: Vec<&String> = changed.iter().filter(|f| is_gitignore(f)).collect();
        let suspects: Vec<&String> = from_top.iter().collect();
        let Ok(shown) = self.hidden_by_committed_rules_not(&suspects, &edited) else {
            return Vec::new();
        };
        dirs.iter()
            .zip(&from_top)
            .filter(|(_, top)| !shown.contains(top))
            .map(|(dir, _)| (*dir).clone())
            .collect()
    }

    /// Of `suspects` (paths from the top: files, or `dir/` for a nested repository), those the
    /// committed `.gitignore` files do not hide, as git's own walk says: in a scratch work tree
    /// holding each committed ignore file (from the index, unless the worker edited it:
    /// `edited`, task paths) and an empty stand-in for each suspect. Past
    /// [`MAX_SUSPECTS`], or if the tree cannot be made, every suspect counts.
    fn hidden_by_committed_rules_not(
        &self,
        suspects: &[&String],
        edited: &[&String],
    ) -> Result<Vec<String>, String> {
        let all = || suspects.iter().map(|s| (*s).clone()).collect();
        if suspects.len() > MAX_SUSPECTS {
            return Ok(all());
        }
        let Ok(scratch) = tempfile::Builder::new()
            .prefix("validator-ignore-")
            .tempdir()
        else {
            return Ok(all());
        };
        let tree = scratch.path();
        let edited: BTreeSet<String> = edited
            .iter()
            .map(|f| {
                let rel = f.strip_prefix(self.layout.under.as_str()).unwrap_or(f);
                format!("{}{rel}", self.layout.prefix)
            })
            .collect();
        // The committed ignore files: their blobs, by path, from the index.
        let staged = self.run(&[
            "ls-files",
            "-z",
            "-s",
            "--full-name",
            "--",
            ":(top,glob)**/.gitignore",
        ])?;
        let mut blobs: Vec<(String, String)> = Vec::new();
        for entry in split_z(&staged) {
            // `<mode> <oid> <stage>\t<path>`
            let Some((meta, path)) = entry.split_once('\t') else {
                continue;
            };
            let mut fields = meta.split(' ');
            let (Some("100644" | "100755"), Some(oid)) = (fields.next(), fields.next()) else {
                continue;
            };
            if is_gitignore(path) && !edited.contains(path) {
                blobs.push((path.to_owned(), oid.to_owned()));
            }
        }
        let made = (|| -> std::io::Result<bool> {
            if !blobs.is_empty() {
                let input: String = blobs.iter().map(|(_, oid)| format!("{oid}\n")).collect();
                let Ok(done) =
                    self.run_fed(&["cat-file", "--batch"], OUTPUT_CAP, Some(input.as_bytes()))
                else {
                    return Ok(false);
                };
                let Some(contents) = batch_contents(&done.output, blobs.len()) else {
                    return Ok(false);
                };
                for ((path, _), content) in blobs.iter().zip(contents) {
                    let Some(at) = scratch_path(tree, path) else {
                        return Ok(false);
                    };
                    if let Some(dir) = at.parent() {
                        std::fs::create_dir_all(dir)?;
                    }
                    std::fs::write(at, content)?;
                }
            }
            for suspect in suspects {
                let (path, stand_in) = match suspect.strip_suffix('/') {
                    Some(dir) => (format!("{dir}/{STAND_IN}"), true),
                    None => ((*suspect).clone(), false),
                };
                let Some(at) = scratch_path(tree, &path) else {
                    return Ok(false);
                };
                if let Some(dir) = at.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                if !(stand_in && at.exists()) {
                    std::fs::File::create(at)?;
                }
            }
            Ok(true)
        })();
        if !matches!(made, Ok(true)) {
            return Ok(all());
        }
        let mut readable = vec![self.ctx.task.dir.clone(), tree.to_path_buf()];
        readable.extend(self.layout.outside.iter().cloned());
        let Ok(sandbox) = Sandbox::reading(&self.git, &readable) else {
            return Ok(all());
        };
        let args = [
            "ls-files",
            "-z",
            "--full-name",
            "--others",
            "--exclude-per-directory=.gitignore",
        ];
        let shown = match self.run_in(&args, OUTPUT_CAP, None, Some((tree, sandbox.as_ref()))) {
            Ok(done) => done.output,
            Err(_) => return Ok(all()),
        };
        let shown: BTreeSet<String> = split_z(&shown).collect();
        Ok(suspects
            .iter()
            .filter(|suspect| match suspect.strip_suffix('/') {
                Some(dir) => shown.contains(&format!("{dir}/{STAND_IN}")),
                None => shown.contains(suspect.as_str()),
            })
            .map(|s| (*s).clone())
            .collect())
    }

    /// The files git tracks in the task (task paths), as the index has them.
    pub fn tracked(&self) -> Result<Vec<String>, String> {
        Ok(split_z(&self.run(&["ls-files", "-z", "--full-name"])?)
            .filter_map(|path| self.in_task(&path))
            .collect())
    }

    /// The patch of the tracked files against `base`, its head kept up to `cap` bytes;
    /// `Ok(None)` when `base` is not a commit. No external diff, no textconv, no filter
    /// program of the repository's runs, and submodules are a line each, never their patch.
    pub fn patch(&self, base: &Pinned, cap: usize) -> Result<Option<Patch>, String> {
        let Pinned::Commit(base) = base else {
            return Ok(None);
        };
        // Read past the cap so a cut is known and the head can be kept; the runner keeps a tail.
        let read_cap = cap.saturating_mul(4).max(PATCH_READ_MIN);
        let done = self.run_capped(
            &[
                "diff",
                "--no-color",
                "--no-ext-diff",
                "--no-textconv",
                "--no-renames",
                "--ignore-submodules=all",
                "--submodule=short",
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
}

/// What a nested repository's changes are.
enum Nested {
    Changed(Changes, Accounted),
    /// Not known: everything in it counts as changed; the reason, if it is worth a finding.
    Unknown(Option<String>),
}

/// The `git` on validator's PATH, found once.
fn git_program() -> Option<PathBuf> {
    static GIT: OnceLock<Option<PathBuf>> = OnceLock::new();
    GIT.get_or_init(|| crate::process::on_path(&"git".into(), &[]).map(PathBuf::from))
        .clone()
}

// -------------------------------------------------------------------------------------------
// Finding the repository
// -------------------------------------------------------------------------------------------

/// The repository git would use for the task directory, found and checked as the module's
/// documentation says; `None` when there is none.
fn locate(task: &crate::task::Task) -> Result<Option<Layout>, Problem> {
    use std::os::unix::fs::MetadataExt;
    let ceilings = ceiling_directories();
    let across_devices = std::env::var("GIT_DISCOVERY_ACROSS_FILESYSTEM")
        .is_ok_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"));
    let device = task.dir.metadata().map(|m| m.dev()).ok();
    let mut dir = task.dir.clone();
    loop {
        let dotgit = dir.join(".git");
        if dotgit.symlink_metadata().is_ok() {
            if dir == task.dir {
                return worker_repository(task, &dotgit).map(Some);
            }
            // Between the task and the top of the worker's area (staging, which every worker
            // writes), a `.git` is any worker's, so no task's: passed over, as a worker may
            // break its own judging, never another task's (what it hides from a repository
            // above, the walk of the task finds). Above the worker's reach, the operator's
            // repository is taken as git takes it (one git would not read is passed over, as
            // git passes it over).
            let operators = !dir.starts_with(&task.worker_area);
            if let Some(dirs) = operators.then(|| resolve_git_dir(&dotgit).ok()).flatten() {
                let prefix = task
                    .dir
                    .strip_prefix(&dir)
                    .map(|rel| format!("{}/", rel.to_string_lossy()))
                    .unwrap_or_default();
                return Ok(Some(Layout {
                    git_dir: dirs.git_dir.clone(),
                    work_tree: dir.clone(),
                    prefix,
                    under: String::new(),
                    outside: vec![dir, dirs.git_dir, dirs.common],
                    owner: Owner::Operator,
                }));
            }
        }
        let Some(parent) = dir.parent().map(Path::to_path_buf) else {
            return Ok(None);
        };
        let other_device =
            device.is_some_and(|device| parent.metadata().map(|m| m.dev()).ok() != Some(device));
        if ceilings.contains(&parent) || (other_device && !across_devices) {
            return Ok(None);
        }
        dir = parent;
    }
}

/// Whether a `.git` between the task directory and the top of the worker's area was passed
/// over (see [`locate`]): said in the summary, so an operator who made staging a repository
/// learns why it is not used.
pub(crate) fn passed_over_in_worker_area(task: &crate::task::Task) -> bool {
    task.dir
        .ancestors()
        .skip(1)
        .take_while(|dir| dir.starts_with(&task.worker_area))
        .any(|dir| dir.join(".git").symlink_metadata().is_ok())
}

/// `GIT_CEILING_DIRECTORIES` (the operator's): directories discovery does not go up into.
fn ceiling_directories() -> Vec<PathBuf> {
    std::env::var_os("GIT_CEILING_DIRECTORIES")
        .map(|dirs| {
            std::env::split_paths(&dirs)
                .filter_map(|dir| dir.canonicalize().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The task directory's own `.git`: a repository git can read, held inside the task (or a
/// registered linked worktree of one outside), borrowing no objects from outside.
fn worker_repository(task: &crate::task::Task, dotgit: &Path) -> Result<Layout, Problem> {
    let dirs = resolve_git_dir(dotgit).map_err(Problem::Worker)?;
    let inside = |path: &Path| path.starts_with(&task.dir);
    let outside = if inside(&dirs.git_dir) && inside(&dirs.common) {
        Vec::new()
    } else if is_linked_worktree(&dirs.git_dir, dotgit) {
        vec![dirs.git_dir.clone(), dirs.common.clone()]
    } else {
        return Err(Problem::Worker(format!(
            "the task's `.git` leads to {}, outside the task directory: git would judge the task against another repository. A task holds its repository inside it (or is a linked worktree `git worktree add` made), or has none",
            name(&dirs.git_dir.to_string_lossy())
        )));
    };
    let mut allowed = vec![task.dir.clone()];
    allowed.extend(outside.iter().cloned());
    check_borrowed_objects(&dirs.common, &allowed).map_err(Problem::Worker)?;
    Ok(Layout {
        git_dir: dirs.git_dir,
        work_tree: task.dir.clone(),
        prefix: String::new(),
        under: String::new(),
        outside,
        owner: Owner::Worker,
    })
}

/// A nested repository's `.git`, whose directories must lie in `allowed`.
fn nested_layout(dotgit: &Path, allowed: &[PathBuf]) -> Result<GitDirs, String> {
    let dirs = resolve_git_dir(dotgit)?;
    let within = |path: &Path| allowed.iter().any(|root| path.starts_with(root));
    if !within(&dirs.git_dir) || !within(&dirs.common) {
        return Err(format!(
            "is a repository whose `.git` leads to {}, outside the task directory; its changes cannot be told, so all of it counts as changed",
            name(&dirs.git_dir.to_string_lossy())
        ));
    }
    check_borrowed_objects(&dirs.common, allowed)?;
    Ok(dirs)
}

/// Resolves a `.git` (a directory, a `gitdir: PATH` file, or a link) to its git and common
/// directories, and checks that git would take them for a repository. The error says why not.
fn resolve_git_dir(dotgit: &Path) -> Result<GitDirs, String> {
    let holder = dotgit.parent().unwrap_or(Path::new("/"));
    let shown = name(&dotgit.to_string_lossy()).into_owned();
    let meta = dotgit
        .symlink_metadata()
        .map_err(|err| format!("{shown}: {err}"))?;
    let named = if meta.is_file() {
        let text = files::read_text(dotgit, MAX_LINK_BYTES, Links::Refuse)
            .map_err(|err| format!("{shown} cannot be read: {err}"))?;
        let Some(target) = text.strip_prefix("gitdir:").map(str::trim) else {
            return Err(format!(
                "{shown} is a file that does not say `gitdir: PATH`, so it is no repository git can read"
            ));
        };
        holder.join(target)
    } else if meta.is_dir() || meta.file_type().is_symlink() {
        dotgit.to_path_buf()
    } else {
        return Err(format!(
            "{shown} is neither a directory nor a `gitdir:` file"
        ));
    };
    let git_dir = named.canonicalize().map_err(|err| {
        format!(
            "{shown} leads to {}, which cannot be opened: {err}",
            name(&named.to_string_lossy())
        )
    })?;
    let common = match files::read_text(&git_dir.join("commondir"), MAX_LINK_BYTES, Links::Refuse) {
        Ok(text) => git_dir
            .join(text.trim())
            .canonicalize()
            .map_err(|err| format!("{shown}: its common directory cannot be opened: {err}"))?,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => git_dir.clone(),
        Err(err) => return Err(format!("{shown}: its `commondir` cannot be read: {err}")),
    };
    let has = |path: &Path, dir: bool| {
        path.symlink_metadata()
            .is_ok_and(|meta| !dir || meta.is_dir())
    };
    if !has(&git_dir.join("HEAD"), false)
        || !has(&common.join("objects"), true)
        || !has(&common.join("refs"), true)
    {
        return Err(format!(
            "{shown} is not a repository git can read (it lacks HEAD, objects or refs): repair it or remove it"
        ));
    }
    Ok(GitDirs { git_dir, common })
}

/// Whether `git_dir` is a linked worktree's (`git worktree add`) that names `dotgit` as its
/// own: the main repository records each of its worktrees, which a worker cannot make it do
/// for a repository it cannot write.
fn is_linked_worktree(git_dir: &Path, dotgit: &Path) -> bool {
    let Ok(text) = files::read_text(&git_dir.join("gitdir"), MAX_LINK_BYTES, Links::Refuse) else {
        return false;
    };
    let recorded = Path::new(text.trim()).canonicalize();
    let ours = dotgit.canonicalize();
    matches!((recorded, ours), (Ok(a), Ok(b)) if a == b)
}

/// The object directories `common` borrows from (`objects/info/alternates`, and theirs, as
/// deep as git follows them) must lie in `allowed`: objects from elsewhere would let a patch
/// show another repository's files.
fn check_borrowed_objects(common: &Path, allowed: &[PathBuf]) -> Result<(), String> {
    let mut pending = vec![(common.join("objects"), 0)];
    while let Some((objects, depth)) = pending.pop() {
        let list = objects.join("info").join("alternates");
        let text = match files::read_text(&list, 64 * 1024, Links::Refuse) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            Err(err) => return Err(format!("objects/info/alternates cannot be read: {err}")),
        };
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let borrowed = objects.join(line);
            let real = borrowed.canonicalize().unwrap_or(borrowed);
            if !allowed.iter().any(|root| real.starts_with(root)) {
                return Err(format!(
                    "the repository borrows objects from {}, outside the task directory (objects/info/alternates): remove it",
                    name(&real.to_string_lossy())
                ));
            }
            // git follows alternates five deep.
            if depth < 5 {
                pending.push((real, depth + 1));
            }
        }
    }
    Ok(())
}

// -------------------------------------------------------------------------------------------
// Reading git's listings
// -------------------------------------------------------------------------------------------

/// What `git status --porcelain=v2 -z` lists, as paths relative to the task directory.
#[derive(Debug, Default, PartialEq)]
struct Status {
    /// Tracked files that differ from HEAD (staged or not; every staged file before a commit).
    tracked: Vec<String>,
    untracked: Vec<String>,
    /// Ignored files, and ignored directories (ending in `/`) whose contents git did not list.
    ignored: Vec<String>,
    /// The commit HEAD names as status compared with it (`None` before the first commit).
    head: Option<String>,
}

impl Status {
    fn parse(bytes: &[u8], repo: &Repo<'_>) -> Status {
        Self::parse_with(bytes, |path| repo.in_task(path))
    }

    fn parse_with(bytes: &[u8], in_task: impl Fn(&str) -> Option<String>) -> Status {
        let mut status = Status::default();
        let mut records = bytes.split(|&b| b == 0).filter(|r| !r.is_empty());
        while let Some(record) = records.next() {
            let record = String::from_utf8_lossy(record);
            if let Some(oid) = record.strip_prefix("# branch.oid ") {
                status.head = (oid != "(initial)").then(|| oid.to_owned());
                continue;
            }
            // The number of space-separated fields before the path, by record kind.
            let (list, fields) = match record.as_bytes()[0] {
                b'1' => (&mut status.tracked, 8),
                // A rename's record is followed by its original path: both changed.
                b'2' => {
                    if let Some(from) = records.next() {
                        let from = String::from_utf8_lossy(from);
                        status.tracked.extend(in_task(&from));
                    }
                    (&mut status.tracked, 9)
                }
                b'u' => (&mut status.tracked, 10),
                b'?' => (&mut status.untracked, 1),
                b'!' => (&mut status.ignored, 1),
                _ => continue,
            };
            if let Some(path) = record.splitn(fields + 1, ' ').nth(fields) {
                list.extend(in_task(path));
            }
        }
        status
    }
}

/// What `git ls-files -z -s -v --full-name` says of the index: files whose flags hide their
/// changes, and gitlinks (nested repositories) with the commit each records.
#[derive(Debug, Default, PartialEq)]
struct Index {
    /// Every path the index holds.
    tracked: Vec<String>,
    hidden: Vec<String>,
    gitlinks: BTreeMap<String, String>,
}

impl Index {
    fn parse(bytes: &[u8], repo: &Repo<'_>) -> Index {
        Self::parse_with(bytes, |path| repo.in_task(path))
    }

    /// Records are `<tag> <mode> <object> <stage>\t<path>`.
    fn parse_with(bytes: &[u8], in_task: impl Fn(&str) -> Option<String>) -> Index {
        let mut index = Index::default();
        for record in split_z(bytes) {
            let Some((fields, path)) = record.split_once('\t') else {
                continue;
            };
            let Some(path) = in_task(path) else { continue };
            if index.tracked.last() != Some(&path) {
                index.tracked.push(path.clone());
            }
            let mut fields = fields.split(' ');
            let (Some(tag), Some(mode), Some(object)) =
                (fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            // Index flags make git skip a file's changes; a worker may have set them.
            if (tag == "S" || tag.chars().all(|c| c.is_ascii_lowercase()))
                && !index.hidden.contains(&path)
            {
                index.hidden.push(path.clone());
            }
            if mode == "160000" {
                index.gitlinks.insert(path, object.to_owned());
            }
        }
        index
    }
}

/// One entry of `git diff-index --cached --raw -z`: the index against the base.
#[derive(Debug, PartialEq)]
struct Raw {
    path: String,
    /// Either side is a gitlink.
    gitlink: bool,
    /// The commit the base's gitlink records, when the base has one at this path.
    base_gitlink: Option<String>,
}

impl Raw {
    fn parse(bytes: &[u8], repo: &Repo<'_>) -> Vec<Raw> {
        Self::parse_with(bytes, |path| repo.in_task(path))
    }

    /// Records are `:<old mode> <new mode> <old object> <new object> <status>\0<path>\0`.
    fn parse_with(bytes: &[u8], in_task: impl Fn(&str) -> Option<String>) -> Vec<Raw> {
        let mut entries = Vec::new();
        let mut records = split_z(bytes);
        while let Some(meta) = records.next() {
            let Some(path) = records.next() else { break };
            let Some(path) = in_task(&path) else { continue };
            let fields: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
            let [old_mode, new_mode, old_object, ..] = fields[..] else {
                continue;
            };
            entries.push(Raw {
                path,
                gitlink: old_mode == "160000" || new_mode == "160000",
                base_gitlink: (old_mode == "160000").then(|| old_object.to_owned()),
            });
        }
        entries
    }
}

/// Runs the three readers of git's listings over `bytes` as if git had printed it (paths under
/// `task/` being the task's), for the fuzzer: git prints what the worker named its files, so
/// any bytes may reach them. Returns every path they read.
#[doc(hidden)]
pub fn read_listings(bytes: &[u8]) -> Vec<String> {
    let in_task = |path: &str| {
        path.strip_prefix("task/")
            .filter(|rel| !rel.is_empty())
            .map(str::to_owned)
    };
    let status = Status::parse_with(bytes, in_task);
    let index = Index::parse_with(bytes, in_task);
    let raw = Raw::parse_with(bytes, in_task);
    status
        .tracked
        .into_iter()
        .chain(status.untracked)
        .chain(status.ignored)
        .chain(index.hidden)
        .chain(index.gitlinks.into_keys())
        .chain(raw.into_iter().map(|change| change.path))
        .collect()
}

fn is_gitignore(path: &str) -> bool {
    path == ".gitignore" || path.ends_with("/.gitignore")
}

/// Most files only the listing hides that are asked about again; past it, they all count.
const MAX_SUSPECTS: usize = 200_000;

/// The empty file standing in for a nested repository's directory in the scratch tree.
const STAND_IN: &str = ".validator-stand-in";

/// `path` (from a git listing, `/`-separated) under `tree`, or `None` for one that is not a
/// plain relative path.
fn scratch_path(tree: &Path, path: &str) -> Option<PathBuf> {
    let mut at = tree.to_path_buf();
    for part in path.split('/') {
        if matches!(part, "" | "." | "..") {
            return None;
        }
        at.push(part);
    }
    Some(at)
}

/// The contents `git cat-file --batch` printed for `count` objects, in order (`<oid> <type>
/// <size>\n<content>\n` each), or `None` if any is missing or the output is not that shape.
fn batch_contents(output: &[u8], count: usize) -> Option<Vec<&[u8]>> {
    let mut rest = output;
    let mut contents = Vec::with_capacity(count);
    for _ in 0..count {
        let header_end = rest.iter().position(|&b| b == b'\n')?;
        let header = std::str::from_utf8(&rest[..header_end]).ok()?;
        let size: usize = header.rsplit(' ').next()?.parse().ok()?;
        let start = header_end + 1;
        let content = rest.get(start..start.checked_add(size)?)?;
        contents.push(content);
        rest = rest.get(start + size + 1..)?;
    }
    Some(contents)
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

    fn under_task(prefix: &'static str) -> impl Fn(&str) -> Option<String> {
        move |path: &str| {
            path.strip_prefix(prefix)
                .filter(|rel| !rel.is_empty())
                .map(str::to_owned)
        }
    }

    #[test]
    fn status_records_are_read_by_kind_and_cut_to_the_task_directory() {
        let out = b"# branch.oid (initial)\0\
            1 .M N... 100644 100644 100644 aaa bbb task/a file.rs\0\
            2 R. N... 100644 100644 100644 aaa bbb R100 task/new\0task/old\0\
            u UU N... 100644 100644 100644 100644 aaa bbb ccc task/both\0\
            1 A. N... 000000 100644 100644 000 aaa other/x\0\
            ? task/untracked\0\
            ! task/target/\0";
        let status = Status::parse_with(out, under_task("task/"));
        assert_eq!(status.tracked, ["a file.rs", "old", "new", "both"]);
        assert_eq!(status.untracked, ["untracked"]);
        assert_eq!(status.ignored, ["target/"]);
        assert_eq!(
            Status::parse_with(b"? x\0", under_task("")).untracked,
            ["x"]
        );
    }

    #[test]
    fn the_index_listing_gives_hidden_files_and_gitlinks() {
        let out = b"H 100644 aaa 0\ttask/a.rs\0h 100644 bbb 0\ttask/hidden.rs\0S 100644 ccc 0\ttask/sparse.rs\0H 160000 ddd 0\ttask/vendor/lib\0H 160000 eee 0\telsewhere/lib\0";
        let index = Index::parse_with(out, under_task("task/"));
        assert_eq!(index.hidden, ["hidden.rs", "sparse.rs"]);
        assert_eq!(
            index.gitlinks,
            BTreeMap::from([("vendor/lib".to_owned(), "ddd".to_owned())])
        );
    }

    #[test]
    fn the_raw_diff_says_which_gitlinks_the_base_had() {
        let out = b":160000 160000 aaa bbb M\0task/sub\0:160000 000000 ccc 000 D\0task/gone\0:000000 160000 000 ddd A\0task/new\0:100644 100644 eee fff M\0task/a.rs\0";
        let raw = Raw::parse_with(out, under_task("task/"));
        let gitlinks: Vec<(&str, Option<&str>)> = raw
            .iter()
            .filter(|r| r.gitlink)
            .map(|r| (r.path.as_str(), r.base_gitlink.as_deref()))
            .collect();
        assert_eq!(
            gitlinks,
            [("sub", Some("aaa")), ("gone", Some("ccc")), ("new", None)]
        );
        assert_eq!(raw.len(), 4);
    }
}
