//! `validator install-hook`: validator as the repository's own git hook (`pre-commit` or
//! `pre-push`), judging what the commit or the push delivers (`check --staged`, `check
//! --pushed`). Another runner's hook is never replaced without `--force`; validator's own is
//! rewritten in place.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::ValueEnum;

use super::Found;

/// The line that marks a hook as validator's, so installing again rewrites it.
const MARKER: &str = "# installed by `validator install-hook`";
/// The most of an existing hook read to tell whose it is.
const MAX_HOOK_BYTES: u64 = 1024 * 1024;

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum GitHook {
    /// Before each commit (skipped by `git commit --no-verify`)
    PreCommit,
    /// Before each push (skipped by `git push --no-verify`)
    PrePush,
}

impl GitHook {
    fn file_name(self) -> &'static str {
        match self {
            GitHook::PreCommit => "pre-commit",
            GitHook::PrePush => "pre-push",
        }
    }
}

/// Writes the hook, or says whose hook is in the way.
pub(crate) fn install_hook(config: Option<&Found>, hook: GitHook, force: bool) -> Result<ExitCode> {
    let here = std::env::current_dir().context("cannot tell the current directory")?;
    let hooks = hooks_dir(&here)?;
    if !force && !inside_the_repository(&here, &hooks) {
        eprintln!(
            "error: git's hooks directory here is {} (core.hooksPath), outside this repository: a hook there runs for every repository that shares it\n  help: `validator install-hook --force` writes it there anyway, or unset core.hooksPath",
            hooks.display()
        );
        return Ok(ExitCode::from(2));
    }
    std::fs::create_dir_all(&hooks).with_context(|| format!("cannot make {}", hooks.display()))?;
    let path = hooks.join(hook.file_name());
    if let Some(existing) = existing_hook(&path)? {
        if !existing.contains(MARKER) && !force {
            eprintln!(
                "error: {} is already a hook{}; validator does not replace it\n  help: `validator install-hook --force` replaces it (keep a copy if you need it), or call `validator check` from that hook",
                path.display(),
                whose(&existing)
                    .map(|who| format!(" ({who}'s)"))
                    .unwrap_or_default()
            );
            return Ok(ExitCode::from(2));
        }
    }
    let script = script(config, hook)?;
    validator::replace::atomically(&path, script.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("cannot make {} executable", path.display()))?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "installed {}: runs `validator check` on what each {} delivers; `--no-verify` skips it once, deleting the file removes it",
        path.display(),
        match hook {
            GitHook::PreCommit => "commit",
            GitHook::PrePush => "push",
        }
    )?;
    Ok(ExitCode::SUCCESS)
}

/// The repository's hooks directory, as git names it (`core.hooksPath`, a worktree's common
/// directory), relative paths taken from `here`.
fn hooks_dir(here: &Path) -> Result<PathBuf> {
    let dir = git_says(here, &["rev-parse", "--git-path", "hooks"])?;
    if dir.is_empty() {
        bail!("git named no hooks directory");
    }
    Ok(here.join(dir))
}

/// What git answers in `here`, trimmed; outside a repository, an error that says so.
fn git_says(here: &Path, args: &[&str]) -> Result<String> {
    let argv: Vec<OsString> = std::iter::once("git")
        .chain(args.iter().copied())
        .map(OsString::from)
        .collect();
    let spec = validator_process::Spec {
        argv: &argv,
        cwd: here,
        env: &[],
        env_remove: &[],
        timeout: Duration::from_secs(10),
        output_cap: 64 * 1024,
        cancel: None,
        separate_stderr: true,
        sandbox: None,
    };
    let finished = validator_process::run(&spec).context("cannot run git")?;
    if finished.exit != validator_process::Exit::Code(0) {
        bail!(
            "{} is not in a git repository: a git hook needs one\n  help: run it in the repository, or `git init` first",
            here.display()
        );
    }
    Ok(String::from_utf8_lossy(&finished.output).trim().to_owned())
}

/// Whether `hooks` lies in the repository at `here`: its work tree or its git directory.
fn inside_the_repository(here: &Path, hooks: &Path) -> bool {
    let hooks = std::path::absolute(hooks).unwrap_or_else(|_| hooks.to_path_buf());
    ["--show-toplevel", "--git-common-dir"]
        .into_iter()
        .filter_map(|question| git_says(here, &["rev-parse", question]).ok())
        .map(|dir| here.join(dir))
        .filter_map(|dir| dir.canonicalize().ok())
        .any(|dir| {
            hooks.starts_with(&dir)
                || hooks
                    .parent()
                    .and_then(|parent| parent.canonicalize().ok())
                    .is_some_and(|parent| parent.starts_with(&dir))
        })
}

/// The hook already at `path`, if there is one; a link or anything but a file is refused.
fn existing_hook(path: &Path) -> Result<Option<String>> {
    match std::fs::symlink_metadata(path) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err).with_context(|| format!("cannot read {}", path.display())),
        Ok(meta) if !meta.file_type().is_file() => bail!(
            "{} is a link or not a file: validator does not replace it\n  help: remove it first if it is not needed",
            path.display()
        ),
        Ok(_) => {
            let bytes = validator_process::files::read(
                path,
                MAX_HOOK_BYTES,
                validator_process::files::Links::Refuse,
            )
            .with_context(|| format!("cannot read {}", path.display()))?;
            Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
        }
    }
}

/// The runner a hook's text names, where it is one of the well-known ones.
fn whose(hook: &str) -> Option<&'static str> {
    [
        ("pre-commit.com", "pre-commit"),
        ("pre_commit", "pre-commit"),
        ("lefthook", "lefthook"),
        ("husky", "husky"),
        ("overcommit", "overcommit"),
    ]
    .into_iter()
    .find(|(mark, _)| hook.contains(mark))
    .map(|(_, who)| who)
}

/// The hook's script: this validator by its path while it is there, else `validator` on PATH;
/// the rules file by its absolute path when one was named.
fn script(config: Option<&Found>, hook: GitHook) -> Result<String> {
    let exe = std::env::current_exe().context("cannot tell where validator is")?;
    let quote = |path: &Path| shell_words::quote(&path.to_string_lossy()).into_owned();
    // Always by its absolute path: git runs a hook from the top of the work tree, where a rules
    // file found from a subdirectory would not be found again.
    let rules = match config {
        Some(found) => {
            let path = found
                .path
                .canonicalize()
                .unwrap_or_else(|_| found.path.clone());
            format!(" -c {}", quote(&path))
        }
        None => String::new(),
    };
    // What is delivered, not the work tree: the index for a commit, the pushed commits for a
    // push (git hands the hook the remote's name and, on standard input, the refs).
    let what = match hook {
        GitHook::PreCommit => "--staged",
        GitHook::PrePush => "--pushed \"$1\"",
    };
    Ok(format!(
        "#!/bin/sh\n{MARKER}: `validator install-hook` rewrites it, deleting the file removes it\nv={}\n[ -x \"$v\" ] || v=validator\nexec \"$v\"{rules} check {what}\n",
        quote(&exe)
    ))
}
