//! git over the worker's repository, for `file-scope` and the reviewer's patch. The repository
//! is the worker's (its config, attributes, index, refs), so:
//!
//! - validator finds it, never git: a `.git` in the task directory must be a repository git
//!   can read whose git directory (and common directory, and borrowed objects) lie inside the
//!   task, unless it is a registered linked worktree of a repository outside; one above the
//!   worker's reach is the operator's. git is then told exactly which (`GIT_DIR`,
//!   `GIT_WORK_TREE`), so `core.worktree` or `core.bare` cannot point it elsewhere and a `.git`
//!   git would skip never hands the task to an enclosing repository;
//! - the worker's index is never asked what changed: its entries and stat data are the
//!   worker's to forge (an edited file's entry given back the base's blob id). validator keeps
//!   an index of its own for each repository and base ([`Private`]), read from the base's tree
//!   outside the task and refreshed by git itself, whose stat data vouches for a file only as
//!   git recorded it (and never within the second it was recorded in: see [`parse::racy_entries`]);
//!   the work tree is compared with it. Which untracked files an ignore rule may hide is
//!   decided by the base's committed `.gitignore` files alone, wherever the rule that hid one
//!   lives (the task, a directory above it, `.git/info/exclude`);
//! - git runs with no system or user config, the repository's programs (filters, textconv, diff
//!   drivers, hooks, fsmonitor) switched off, no fetching, no submodule recursion, under the
//!   gate's deadline, and inside a Landlock sandbox ([`crate::sandbox`]) that lets it read the
//!   task and the system's libraries, execute only itself and write nothing but validator's
//!   own index of the repository, so what a worker racing these checks configures still cannot
//!   run or read elsewhere;
//! - nested repositories (gitlinks of the base) are looked into by validator itself, each with
//!   a hardened git and a private index of its own.
//!
//! Here is [`Repo`], what the rules call (open the task's repository, pin a base, what changed
//! against it, the base's files, the patch), and how one look at the work tree becomes the
//! change set. The rest is a file per part of the above: [`locate`] finds and checks the
//! repository, [`run`] runs git hardened, [`private_index`] keeps validator's index of each
//! base, [`ignore_rules`] decides what an ignore rule may hide, and [`parse`] reads what git
//! prints and writes.

mod delivery;
mod ignore_rules;
mod locate;
mod parse;
mod private_index;
mod run;
mod user_excludes;

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::changes::{Changes, Patch, Problem, Source};
use crate::task::Task;
use crate::taskdir;
use crate::verdict::Finding;
use locate::{Layout, Owner, locate, nested_layout};
use parse::{Index, Status, split_z};
use private_index::Private;
use run::{Listing, git_program};
use validator_process::Cancel;
use validator_process::sandbox::Sandbox;

pub use delivery::{Delivered, TreeEntry};
pub(crate) use locate::passed_over_in_worker_area;
#[doc(hidden)]
pub use parse::read_listings;
pub use user_excludes::UserExcludes;

/// The least a patch is read to before it is cut.
const PATCH_READ_MIN: usize = 4 * 1024 * 1024;
/// Nested repositories looked into below the task's own; deeper, every file counts as changed.
const MAX_NESTING: u32 = 4;

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
    /// The base's committed `.gitignore` files (paths from the top, contents), when something
    /// was ignored and they could be read.
    pub ignore_rules: Option<Vec<(String, Vec<u8>)>>,
}

/// A repository of the task, ready to run hardened git in.
pub(crate) struct Repo<'a> {
    task: &'a Task,
    /// Set by a supervisor (the watcher) that may stop the run: git is stopped with it.
    cancel: Option<&'a Cancel>,
    layout: Layout,
    /// Each filter or diff driver program the repository configures, by its config name as
    /// git printed it (raw bytes: a subsection may hold anything), to be set empty.
    neutralised: Vec<OsString>,
    sandbox: Option<Sandbox>,
    git: PathBuf,
    /// Every git run ends by then: the gate's deadline covers all of them, not each.
    deadline: Instant,
    depth: u32,
    /// Where validator keeps its private indexes (see [`Private`]): a directory of its state,
    /// outside the task, or one of this run's own.
    indexes: PathBuf,
    /// The index a git hook was handed, read instead of the repository's own (see
    /// [`Repo::reading_index`]).
    user_index: Option<PathBuf>,
    /// The user's global excludes, in a run that is the user's own (`validator check` by a
    /// person): they may hide files as the committed `.gitignore` files do.
    user_excludes: Option<&'a UserExcludes>,
}

impl<'a> Repo<'a> {
    /// The task's repository: `Ok(None)` when there is none (the task is not in a work tree),
    /// [`Problem::Worker`] when the worker's `.git` is not one validator may use (it says why),
    /// [`Problem::Judge`] when validator cannot judge it (git not installed, a repository in
    /// a directory every worker writes). Its private indexes are kept in `indexes`.
    pub fn open(
        task: &'a Task,
        cancel: Option<&'a Cancel>,
        deadline: Instant,
        indexes: &Path,
        user_excludes: Option<&'a UserExcludes>,
    ) -> Result<Option<Self>, Problem> {
        match locate(task)? {
            Some(layout) => Repo::at(task, cancel, layout, deadline, 0, indexes).map(|repo| {
                Some(Repo {
                    user_excludes,
                    ..repo
                })
            }),
            None => Ok(None),
        }
    }

    fn at(
        task: &'a Task,
        cancel: Option<&'a Cancel>,
        layout: Layout,
        deadline: Instant,
        depth: u32,
        indexes: &Path,
    ) -> Result<Self, Problem> {
        let git = git_program().ok_or_else(|| {
            Problem::Judge(
                "git is not installed, and the task is in a git repository: install git where validator runs (or take a `validator snapshot` before the worker starts)".into(),
            )
        })?;
        let mut readable = vec![task.dir.clone()];
        readable.extend(layout.outside.iter().cloned());
        let sandbox = Sandbox::reading(&git, &readable)
            .map_err(|why| Problem::Judge(format!("cannot sandbox git: {why}")))?;
        let mut repo = Repo {
            task,
            cancel,
            layout,
            neutralised: Vec::new(),
            sandbox,
            git,
            deadline,
            depth,
            indexes: indexes.to_path_buf(),
            user_index: None,
            user_excludes: None,
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

    /// Reads `index` where it reads the repository's own index: the temporary one git hands a
    /// pre-commit hook for `git commit -a` (`$GIT_INDEX_FILE`), which is what that commit
    /// writes. Refused unless it lies in the repository's git directory.
    pub fn reading_index(mut self, index: &Path) -> Result<Self, String> {
        let real = index
            .canonicalize()
            .map_err(|err| format!("the index git named ({}): {err}", index.display()))?;
        let git_dir = self
            .layout
            .git_dir
            .canonicalize()
            .unwrap_or_else(|_| self.layout.git_dir.clone());
        let common = self
            .run(&["rev-parse", "--git-common-dir"])
            .ok()
            .map(|out| {
                let out = String::from_utf8_lossy(&out).trim().to_owned();
                self.task.dir.join(&self.layout.under).join(out)
            });
        let inside = |dir: &Path| dir.canonicalize().is_ok_and(|dir| real.starts_with(dir));
        if !(real.starts_with(&git_dir) || common.as_deref().is_some_and(inside)) {
            return Err(format!(
                "the index git named ({}) is not in the repository's git directory; it was not read",
                index.display()
            ));
        }
        self.user_index = Some(real);
        Ok(self)
    }

    /// The repository's git directory, as validator found it.
    pub fn git_dir(&self) -> &Path {
        &self.layout.git_dir
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
        // A push is counted from what the remote holds, not from HEAD, which holds it all.
        if let (Some(since), "HEAD", 0) = (&self.task.since, base, self.depth) {
            return Ok(match &since.commit {
                Some(commit) => Pinned::Commit(commit.clone()),
                None => Pinned::Unborn,
            });
        }
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
    /// what else git accounts for: one `git status` walk comparing the work tree with
    /// validator's private index of `base` (the base's files that differ, untracked and
    /// ignored files), with that index listed beside it (the base's files and gitlinks); more
    /// git only when something is ignored, and one repository of its own for each nested
    /// repository the base records.
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
        let oid = match base {
            Pinned::Commit(oid) => Some(oid.as_str()),
            Pinned::Unborn => None,
            Pinned::Missing => return Err(self.missing_base(shown)),
        };
        let (private, status, index) = self.looked(oid)?;
        let status = Status::parse(&status.map_err(worker("status"))?, self);
        let index = Index::parse(&index.map_err(worker("ls-files"))?, self);

        let mut accounted = self.accounted_for(&index, &status);
        let mut files: BTreeSet<String> = status.changed.into_iter().collect();
        let mut untracked = status.untracked;
        if !status.ignored.is_empty() {
            let behind = self
                .behind_ignores(&private, &status.ignored)
                .map_err(worker("ls-files"))?;
            untracked.extend(behind.counted);
            accounted.files.extend(behind.seen);
            // A directory the committed rules ignore whole (`target/`, `.venv/` with a `pip
            // install -e` checkout in it) is the project's, not the worker's change: git
            // accounts for it whole.
            accounted.dirs.extend(behind.hidden_dirs);
            accounted.ignore_rules = behind.rules;
        }
        self.keep(private);
        let mut every_file_under = Vec::new();
        for path in untracked {
            // A directory entry is a repository nested in the task the base does not record:
            // git does not look inside, and all it holds is new.
            match path.strip_suffix('/') {
                Some(dir) => every_file_under.push(format!("{dir}/")),
                None => {
                    files.insert(path);
                }
            }
        }
        let mut findings = Vec::new();
        for (path, base_commit) in index.gitlinks {
            let at = self.task.dir.join(&path);
            if !at.symlink_metadata().is_ok_and(|meta| meta.is_dir()) {
                // Removed, or replaced by a file or a link: the path itself changed.
                files.insert(path);
                continue;
            }
            match self.nested(&path, &base_commit) {
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
        files.extend(self.files_under(&every_file_under)?);
        let shown = match (&self.task.since, shown, self.depth) {
            (Some(since), "HEAD", 0) => since.shown.as_str(),
            _ => shown,
        };
        let changes = Changes {
            source: Source::Git(shown.to_owned()),
            files,
            findings,
            note,
            gate_written: Default::default(),
        };
        Ok((changes, accounted))
    }

    /// validator's private index of `base` and git's first look at the work tree through it
    /// (status, and the index's files). An index git cannot read (validator's state damaged, a
    /// git that writes another format) is made again from the base, once.
    fn looked(&self, base: Option<&str>) -> Result<(Private, Listing, Listing), Problem> {
        let mut private = self.private(base)?;
        let (mut status, mut index) = self.first_look(&private);
        if (status.is_err() || index.is_err()) && private.from_published {
            let _ = std::fs::remove_file(private.dir.join("index"));
            private = self.private(base)?;
            (status, index) = self.first_look(&private);
        }
        Ok((private, status, index))
    }

    /// Every file the task holds under `dirs` (each ending in `/`): what a nested repository
    /// git does not look inside holds, all of it new.
    fn files_under(&self, dirs: &[String]) -> Result<Vec<String>, Problem> {
        if dirs.is_empty() {
            return Ok(Vec::new());
        }
        let by = taskdir::Deadline::new(self.deadline, self.cancel);
        let listing = taskdir::list_by(self.task, &by).map_err(Problem::Stopped)?;
        Ok(listing
            .files
            .into_iter()
            .map(|entry| entry.rel)
            .filter(|rel| dirs.iter().any(|dir| rel.starts_with(dir.as_str())))
            .collect())
    }

    /// What git's first listings account for: the base's files, the untracked and ignored
    /// paths, the repository's own `.git` (whole).
    fn accounted_for(&self, index: &Index, status: &Status) -> Accounted {
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
        accounted
    }

    /// `git status` of the work tree against the private index `private`, and the index's
    /// own listing beside it.
    fn first_look(&self, private: &Private) -> (Listing, Listing) {
        // The user's excludes, copied where the sandboxed git may read them.
        let excludes = match self.user_excludes {
            Some(user) => match excludes_copy(&private.dir, &user.rules) {
                Ok(copy) => Some(copy),
                Err(err) => {
                    return (
                        Err(format!("cannot copy the user's excludes: {err}")),
                        Ok(Vec::new()),
                    );
                }
            },
            None => None,
        };
        let excludes_setting = excludes
            .as_ref()
            .map(|copy| format!("core.excludesFile={}", copy.path().display()));
        let mut status_args: Vec<&str> = Vec::new();
        if let Some(setting) = &excludes_setting {
            status_args.extend(["-c", setting.as_str()]);
        }
        std::thread::scope(|scope| {
            let index = scope.spawn(|| {
                self.listing(self.with(private), &["ls-files", "-z", "-s", "--full-name"])
            });
            status_args.extend([
                "status",
                "--porcelain=v2",
                "-z",
                "--untracked-files=all",
                "--ignored=matching",
                "--no-renames",
                "--ignore-submodules=all",
                "--",
                ".",
            ]);
            let status = self.listing(self.with(private), &status_args);
            let stopped = || "the listing stopped".to_owned();
            (status, index.join().unwrap_or_else(|_| Err(stopped())))
        })
    }

    /// What changed inside the nested repository at `path` (task-relative) since `base_commit`
    /// (the commit its gitlink records in the base), or why that cannot be told, in which case
    /// everything in it counts as changed.
    fn nested(&self, path: &str, base_commit: &str) -> Nested {
        let dir = self.task.dir.join(path);
        let dotgit = dir.join(".git");
        if dotgit.symlink_metadata().is_err() {
            // Not checked out (an empty directory, usually), or replaced by plain files.
            return Nested::Unknown(None);
        }
        if self.depth >= MAX_NESTING {
            return Nested::Unknown(None);
        }
        let mut allowed = vec![self.task.dir.clone()];
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
        let repo = match Repo::at(
            self.task,
            self.cancel,
            layout,
            self.deadline,
            self.depth + 1,
            &self.indexes,
        ) {
            Ok(repo) => Repo {
                user_excludes: self.user_excludes,
                ..repo
            },
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

    /// A task path as git names it, from the top of the work tree.
    fn top_path(&self, task_path: &str) -> String {
        let rel = task_path
            .strip_prefix(self.layout.under.as_str())
            .unwrap_or(task_path);
        format!("{}{rel}", self.layout.prefix)
    }

    /// The files of `base` in the task (task paths), as validator's private index of it has
    /// them.
    pub fn tracked(&self, base: &Pinned) -> Result<Vec<String>, String> {
        let private = match base {
            Pinned::Commit(oid) => self.private(Some(oid)),
            Pinned::Unborn => self.private(None),
            Pinned::Missing => return Err("the base is not in the task's repository".into()),
        }
        .map_err(Problem::into_reason)?;
        let listed = self.listing(self.with(&private), &["ls-files", "-z", "--full-name"]);
        self.keep(private);
        Ok(split_z(&listed?)
            .filter_map(|path| self.in_task(&path))
            .collect())
    }

    /// The patch of the base's files against `base`, its head kept up to `cap` bytes;
    /// `Ok(None)` when `base` is not a commit. The work tree is compared through validator's
    /// private index, never the worker's. No external diff, no textconv, no filter program of
    /// the repository's runs, and submodules are a line each, never their patch.
    pub fn patch(&self, base: &Pinned, cap: usize) -> Result<Option<Patch>, String> {
        let Pinned::Commit(base) = base else {
            return Ok(None);
        };
        let private = self.private(Some(base)).map_err(Problem::into_reason)?;
        // Read past the cap so a cut is known and the head can be kept; the runner keeps a tail.
        let read_cap = cap.saturating_mul(4).max(PATCH_READ_MIN);
        let done = self.run_as(
            self.with(&private),
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
            None,
        );
        self.keep(private);
        let done = done?;
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

/// `rules` in a file of its own in `dir` (validator's index directory, which git's sandbox
/// reads), removed when dropped.
fn excludes_copy(dir: &Path, rules: &[u8]) -> std::io::Result<tempfile::NamedTempFile> {
    use std::io::Write;
    let mut copy = tempfile::Builder::new()
        .prefix("excludes-")
        .tempfile_in(dir)?;
    copy.write_all(rules)?;
    copy.flush()?;
    Ok(copy)
}

/// What a nested repository's changes are.
enum Nested {
    Changed(Changes, Accounted),
    /// Not known: everything in it counts as changed; the reason, if it is worth a finding.
    Unknown(Option<String>),
}
