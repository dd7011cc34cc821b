//! Running git on the worker's repository, hardened: the settings on every command line that
//! switch off whatever of the repository's would run a program, fetch, recurse into a
//! submodule or hide a change ([`HARDENING`]), an environment with no system or user config
//! and none of an enclosing git's repository variables, the repository's filter and diff
//! programs set to nothing, the gate's deadline and its supervisor's cancel, and a sandbox. An
//! [`Invocation`] says on which repository, work tree and index git runs, from where.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;

use super::Repo;
use validator_process::sandbox::Sandbox;
use validator_process::{self as process, Exit, SpawnError};

/// Most bytes of path listings read from git.
pub(super) const OUTPUT_CAP: usize = 64 * 1024 * 1024;

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
    // An index whose entries git takes as unchanged without looking (`core.ignoreStat` marks
    // them so), or that leaves files out (sparse) or its entries in another file (split).
    "-c",
    "core.ignoreStat=false",
    "-c",
    "core.sparseCheckout=false",
    "-c",
    "index.sparse=false",
    "-c",
    "core.splitIndex=false",
    // validator reads back the private indexes git writes (see `racy_entries`).
    "-c",
    "index.version=2",
    "-c",
    "core.sharedRepository=false",
    // No ignore file but the task's and the repository's; which of them may hide a file is
    // decided apart, by the base's committed rules.
    "-c",
    "core.excludesFile=/dev/null",
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

/// How one git command runs: on which repository, work tree and index, from where, in which
/// sandbox.
pub(super) struct Invocation<'r> {
    pub(super) git_dir: &'r Path,
    pub(super) work_tree: &'r Path,
    pub(super) cwd: PathBuf,
    /// validator's private index (`GIT_INDEX_FILE`), which git may rewrite; without one, the
    /// repository's own, which git only reads.
    pub(super) index: Option<&'r Path>,
    /// Without a private index, the index git reads instead of the repository's own: the one
    /// git hands a hook (`git commit -a` and `git commit <path>` commit a temporary one).
    pub(super) reads_index: Option<&'r Path>,
    pub(super) sandbox: Option<&'r Sandbox>,
}

impl Repo<'_> {
    /// git in the repository, as validator found it, with its own index (read only).
    pub(super) fn own(&self) -> Invocation<'_> {
        Invocation {
            git_dir: &self.layout.git_dir,
            work_tree: &self.layout.work_tree,
            cwd: self.task.dir.join(&self.layout.under),
            index: None,
            reads_index: self.user_index.as_deref(),
            sandbox: self.sandbox.as_ref(),
        }
    }

    pub(super) fn run(&self, args: &[&str]) -> Result<Vec<u8>, String> {
        self.listing(self.own(), args)
    }

    /// Runs git as `how` says; its whole standard output, if it exits 0 within
    /// [`OUTPUT_CAP`].
    pub(super) fn listing(&self, how: Invocation<'_>, args: &[&str]) -> Result<Vec<u8>, String> {
        let done = self.run_as(how, args, OUTPUT_CAP, None)?;
        if done.dropped > 0 {
            return Err(format!(
                "git listed more than {} MiB of paths",
                OUTPUT_CAP / 1024 / 1024
            ));
        }
        Ok(done.output)
    }

    /// Runs git as `how` says, with `input` on its standard input; its standard output's
    /// tail up to `cap` bytes, if it exits 0.
    pub(super) fn run_as(
        &self,
        how: Invocation<'_>,
        args: &[&str],
        cap: usize,
        input: Option<&[u8]>,
    ) -> Result<process::Finished, String> {
        let mut argv: Vec<OsString> = vec![self.git.clone().into()];
        // git takes no lock on an index it only reads: the worker's is never written.
        if how.index.is_none() {
            argv.push("--no-optional-locks".into());
        }
        argv.extend(HARDENING.iter().map(OsString::from));
        argv.extend(args.iter().map(OsString::from));
        let mut env: Vec<(OsString, OsString)> = vec![
            ("GIT_DIR".into(), how.git_dir.into()),
            ("GIT_WORK_TREE".into(), how.work_tree.into()),
            // No config but the repository's own (whose programs are switched off above):
            // what git sees does not depend on whoever runs validator.
            ("GIT_CONFIG_NOSYSTEM".into(), "1".into()),
            ("GIT_CONFIG_GLOBAL".into(), "/dev/null".into()),
            ("GIT_ATTR_NOSYSTEM".into(), "1".into()),
            ("GIT_TERMINAL_PROMPT".into(), "0".into()),
            // Settings passed down from an enclosing git (a hook's `git -c`) are not the task's.
            ("GIT_CONFIG_PARAMETERS".into(), "".into()),
            ("GIT_NO_LAZY_FETCH".into(), "1".into()),
            ("GIT_ALLOW_PROTOCOL".into(), "none".into()),
            ("GIT_NO_REPLACE_OBJECTS".into(), "1".into()),
        ];
        match how.index {
            // git refreshes validator's index as it compares: what it hashed, it need not hash
            // again next time.
            Some(index) => env.push(("GIT_INDEX_FILE".into(), index.into())),
            None => {
                env.push(("GIT_OPTIONAL_LOCKS".into(), "0".into()));
                if let Some(index) = how.reads_index {
                    env.push(("GIT_INDEX_FILE".into(), index.into()));
                }
            }
        }
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
        let spec = process::Spec {
            argv: &argv,
            cwd: &how.cwd,
            env: &env,
            env_remove: REPOSITORY_VARS,
            timeout: self.deadline.saturating_duration_since(Instant::now()),
            output_cap: cap,
            cancel: self.cancel,
            separate_stderr: true,
            sandbox: how.sandbox,
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
}

/// What a git listing printed, or why git could not list.
pub(super) type Listing = Result<Vec<u8>, String>;

/// The `git` on validator's PATH, found once.
pub(super) fn git_program() -> Option<PathBuf> {
    static GIT: OnceLock<Option<PathBuf>> = OnceLock::new();
    GIT.get_or_init(|| validator_process::on_path(&"git".into(), &[]).map(PathBuf::from))
        .clone()
}
