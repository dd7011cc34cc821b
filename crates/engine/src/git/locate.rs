//! Finding the task's repository as git would, and checking it before git is told of it
//! ([`Layout`]): the task directory's own `.git` (its git, common and object directories
//! inside the task, or a registered linked worktree of a repository outside), a `.git` between
//! the task and the top of the worker's area passed over, an operator's repository above that
//! taken as git takes it, and a nested repository's `.git`, held inside the task.

use std::path::{Path, PathBuf};

use crate::changes::Problem;
use crate::task::Task;
use validator_process::files::{self, Links};
use validator_text::name;

/// `.git` files, `commondir` and `gitdir` links are a line; anything longer is not git's.
const MAX_LINK_BYTES: u64 = 4096;

/// The repository git is told to use, as validator found it.
#[derive(Debug, Clone)]
pub(super) struct Layout {
    pub(super) git_dir: PathBuf,
    pub(super) work_tree: PathBuf,
    /// The task directory's path inside the work tree (`sub/dir/`, or empty at its top): git
    /// names paths from the top.
    pub(super) prefix: String,
    /// The work tree's path inside the task directory (`vendor/lib/`, or empty): a nested
    /// repository's paths are given from the task's top.
    pub(super) under: String,
    /// Where git must read outside the task directory: an operator's repository above it,
    /// the main repository of a linked worktree.
    pub(super) outside: Vec<PathBuf>,
    /// Whose refs these are: what the worker may have removed is its failure, what only the
    /// operator can fix is validator's error.
    pub(super) owner: Owner,
}

/// Who holds a repository's refs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Owner {
    /// Its `.git` is in the task: the worker's to change.
    Worker,
    /// Above the task, out of the worker's reach.
    Operator,
}

/// A `.git` resolved: the git directory and the common directory (where objects, refs and
/// config are; the same but for a linked worktree).
pub(super) struct GitDirs {
    pub(super) git_dir: PathBuf,
    common: PathBuf,
}

/// The repository git would use for the task directory, found and checked as the module's
/// documentation says; `None` when there is none.
pub(super) fn locate(task: &Task) -> Result<Option<Layout>, Problem> {
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
pub(crate) fn passed_over_in_worker_area(task: &Task) -> bool {
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
fn worker_repository(task: &Task, dotgit: &Path) -> Result<Layout, Problem> {
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
pub(super) fn nested_layout(dotgit: &Path, allowed: &[PathBuf]) -> Result<GitDirs, String> {
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
