//! What a git hook is about to deliver, put in the work tree for the run to judge, and the
//! user's work put back after: pre-commit's stash, done exactly. For a commit, the delivered
//! tree is the index; for a push, the pushed commit's tree. Each file of the task that differs
//! from it (an unstaged edit, a file staged and then changed again, an untracked file the commit
//! leaves out) is moved aside into the repository's git directory, the delivered version is
//! written in its place from git's own objects (no filter, no program of the repository's), and
//! after the run each is put back as it was. A run stopped on the way leaves a plan in the
//! stash, which the next run carries out before anything else, so nothing is lost.
//!
//! Files are compared byte for byte with the blob the index names, never by stat data, which
//! a worker can forge. Every move is made relative to a directory opened without following a
//! link (`openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`), so neither a link in the task
//! nor a planted plan can move a file outside the work tree. A virtual environment (a directory
//! holding `pyvenv.cfg`) and `node_modules` stay where they are: never delivered, they are the
//! tools the gates judge with.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{AT_FDCWD, AtFlags, OFlag, OpenHow, ResolveFlag, openat, openat2, renameat};
use nix::sys::stat::{FileStat, Mode, SFlag, fstatat, mkdirat};
use nix::unistd::{UnlinkatFlags, symlinkat, unlinkat};
use serde::{Deserialize, Serialize};

pub use crate::git::Delivered;
use crate::git::{Repo, TreeEntry};
use crate::task::Task;
use crate::text::one_line;

/// The stash's directory in the repository's git directory.
const STASH: &str = "validator-delivery";
/// The plan in it.
const PLAN: &str = "plan.json";
/// Most bytes of a plan read back.
const MAX_PLAN_BYTES: u64 = 64 * 1024 * 1024;
/// How long listing what differs may take.
const LISTING_TIME: Duration = Duration::from_secs(300);
/// Most bytes of a work-tree file compared with the delivered one; past it, it differs.
const MAX_COMPARED: u64 = 64 * 1024 * 1024;

/// Why what is delivered could not be put in place (nothing is then judged), or the user's work
/// could not all be put back (what was not is in the stash, which the error names).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot tell what is delivered: {0}")]
    CannotTell(String),
    #[error("{0}")]
    Busy(String),
    #[error("cannot put the delivered files in place: {0}")]
    Swap(String),
    #[error(
        "could not put back everything set aside: {why}; what was not put back is in {}",
        stash.display()
    )]
    Restore { why: String, stash: PathBuf },
}

/// The plan a swap follows, written before the first move so a stopped run can be undone.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Plan {
    /// The run that made it, so a live one is never undone under it.
    pid: u32,
    /// The user's paths set aside: the path, and its name in the stash.
    aside: Vec<(String, String)>,
    /// Paths where the delivered version was written.
    written: Vec<String>,
    /// Directories made for them, the outermost first.
    made: Vec<String>,
}

/// The delivered tree in the work tree, until [`Swap::restore`] (or the drop) puts the user's
/// work back.
pub struct Swap {
    work: File,
    stash: PathBuf,
    plan: Plan,
    done: bool,
    /// Untracked paths left in place because they are environments (`.venv`, `node_modules`).
    pub kept_environments: usize,
}

/// What a swap did, for the line that tells the user.
impl Swap {
    pub fn set_aside(&self) -> usize {
        self.plan.aside.len()
    }

    pub fn written(&self) -> usize {
        self.plan.written.len()
    }

    /// Puts the user's work back as it was; what cannot be put back stays in the stash.
    pub fn restore(mut self) -> Result<(), Error> {
        self.done = true;
        undo(&self.work, &self.stash, &self.plan)
    }
}

impl Drop for Swap {
    fn drop(&mut self) {
        if !self.done {
            if let Err(err) = undo(&self.work, &self.stash, &self.plan) {
                eprintln!("validator: {err}");
            }
        }
    }
}

/// Puts `delivered` in the task's work tree, comparing against git's HEAD. `excludes` are the
/// user's own ignore patterns (their global excludes file), which keep an untracked file in
/// place as git would; `keep` are validator's own paths (its state, the rules file), never
/// moved.
pub fn swap_in(
    task: &Task,
    state_dir: &Path,
    delivered: &Delivered,
    excludes: &[String],
    keep: &[PathBuf],
) -> Result<Swap, Error> {
    let cannot = Error::CannotTell;
    let indexes = tempfile::tempdir().map_err(|err| cannot(err.to_string()))?;
    let deadline = Instant::now() + LISTING_TIME;
    let repo = Repo::open(task, None, deadline, indexes.path())
        .map_err(|problem| cannot(problem.into_reason()))?
        .ok_or_else(|| cannot("the directory is not in a git repository".into()))?;
    let stash = repo.git_dir().join(STASH);
    let work = open_dir(AT_FDCWD, &task.dir)
        .map_err(|err| cannot(format!("cannot open {}: {err}", task.dir.display())))?;
    let work = File::from(work);
    put_back_leftover(&work, &stash)?;

    let (target, left_out) = repo.delivered_entries(delivered).map_err(cannot)?;
    let head = match repo.has_commit("HEAD") {
        true => repo.tree_entries("HEAD").map_err(cannot)?,
        false => BTreeMap::new(),
    };
    let candidates = candidates(task, state_dir, &target, &head)?;
    let keep: Vec<PathBuf> = keep
        .iter()
        .map(|path| path.canonicalize().unwrap_or_else(|_| path.clone()))
        .collect();
    // validator's own paths, and any directory holding one, stay where they are.
    let own = |path: &str| {
        let at = task.dir.join(path);
        task.ignore
            .iter()
            .chain(&keep)
            .any(|own| own.starts_with(&at) || at.starts_with(own))
    };
    let mut swap = Swap {
        work,
        stash,
        plan: Plan {
            pid: std::process::id(),
            ..Plan::default()
        },
        done: false,
        kept_environments: 0,
    };
    let mut writes = Vec::new();
    // A nested repository is its own: what it holds is not swapped.
    let nested = |path: &String| {
        [target.get(path), head.get(path)]
            .into_iter()
            .flatten()
            .any(|entry| entry.mode == "160000")
    };
    let wanted = candidates
        .into_iter()
        .filter(|path| !own(path) && !nested(path));
    let wanted: Vec<(&String, Option<&TreeEntry>)> =
        wanted.map(|path| (path, target.get(path))).collect();
    let oids: Vec<&str> = wanted
        .iter()
        .filter_map(|(_, entry)| entry.map(|e| e.oid.as_str()))
        .collect();
    let mut blobs = repo.blobs(&oids).map_err(cannot)?.into_iter();
    for (path, entry) in wanted {
        let here =
            look(&swap.work, path).map_err(|err| cannot(format!("{}: {err}", one_line(path))))?;
        match entry {
            Some(entry) => {
                let blob = blobs
                    .next()
                    .ok_or_else(|| cannot("git printed fewer files than asked".into()))?;
                if here.as_ref().is_some_and(|here| here.holds(entry, &blob)) {
                    continue;
                }
                if here.is_some() {
                    swap.plan.aside.push((path.clone(), String::new()));
                }
                writes.push((path.clone(), entry.mode.clone(), blob));
            }
            None if here.is_some() => swap.plan.aside.push((path.clone(), String::new())),
            None => {}
        }
    }
    for path in left_out
        .into_iter()
        .chain(repo.untracked(excludes).map_err(cannot)?)
    {
        let path = path.trim_end_matches('/').to_owned();
        if own(&path) || swap.plan.aside.iter().any(|(aside, _)| *aside == path) {
            continue;
        }
        if is_environment(&task.dir, &path) {
            swap.kept_environments += 1;
            continue;
        }
        swap.plan.aside.push((path, String::new()));
    }
    for (n, (_, name)) in swap.plan.aside.iter_mut().enumerate() {
        *name = n.to_string();
    }
    carry_out(&mut swap, writes)?;
    Ok(swap)
}

/// The tracked paths where the work tree may differ from what is delivered: where it differs
/// from HEAD, as git tells it through validator's own index, and where the delivered tree does.
fn candidates<'t>(
    task: &Task,
    state_dir: &Path,
    target: &'t BTreeMap<String, TreeEntry>,
    head: &'t BTreeMap<String, TreeEntry>,
) -> Result<BTreeSet<&'t String>, Error> {
    let plain = Task {
        since: None,
        ..task.clone()
    };
    let differs_from_head =
        crate::rules::file_scope::changed_in_git(&plain, state_dir, LISTING_TIME)
            .map_err(Error::CannotTell)?;
    let mut candidates: BTreeSet<&String> = BTreeSet::new();
    for path in differs_from_head {
        if let Some((key, _)) = target.get_key_value(&path).or(head.get_key_value(&path)) {
            candidates.insert(key);
        }
    }
    for path in target.keys().chain(head.keys()) {
        if target.get(path) != head.get(path) {
            candidates.insert(path);
        }
    }
    Ok(candidates)
}

/// Sets the user's paths aside and writes the delivered ones, the plan saved before each
/// stage; on any failure, undoes what was done.
fn carry_out(swap: &mut Swap, writes: Vec<(String, String, Vec<u8>)>) -> Result<(), Error> {
    if swap.plan.aside.is_empty() && writes.is_empty() {
        return Ok(());
    }
    let failed = |swap: &mut Swap, why: String| {
        swap.done = true;
        match undo(&swap.work, &swap.stash, &swap.plan) {
            Ok(()) => Error::Swap(why),
            Err(err) => err,
        }
    };
    std::fs::create_dir(&swap.stash)
        .map_err(|err| Error::Swap(format!("cannot make {}: {err}", swap.stash.display())))?;
    swap.plan.written = writes.iter().map(|(path, ..)| path.clone()).collect();
    if let Err(why) = save(&swap.stash, &swap.plan) {
        return Err(failed(swap, why));
    }
    let stash = match open_dir(AT_FDCWD, &swap.stash) {
        Ok(stash) => stash,
        Err(err) => return Err(failed(swap, err.to_string())),
    };
    for (path, name) in &swap.plan.aside {
        let moved = parent_of(&swap.work, path).and_then(|(dir, leaf)| {
            renameat(&dir, leaf.as_os_str(), &stash, name.as_str())
                .map_err(|err| format!("cannot set {} aside: {err}", one_line(path)))
        });
        if let Err(why) = moved {
            return Err(failed(swap, why));
        }
    }
    for (path, mode, blob) in writes {
        if let Err(why) = write(&swap.work, &path, &mode, &blob, &mut swap.plan.made) {
            return Err(failed(swap, why));
        }
    }
    if let Err(why) = save(&swap.stash, &swap.plan) {
        return Err(failed(swap, why));
    }
    Ok(())
}

/// What the work tree holds at a path, looked at without following a link.
enum Here {
    File { executable: bool, bytes: Vec<u8> },
    Link(Vec<u8>),
    Other,
}

impl Here {
    /// Whether this is exactly what `entry` (whose blob is `blob`) delivers.
    fn holds(&self, entry: &TreeEntry, blob: &[u8]) -> bool {
        match (self, entry.mode.as_str()) {
            (Here::File { executable, bytes }, "100644" | "100755") => {
                *executable == (entry.mode == "100755") && bytes == blob
            }
            (Here::Link(target), "120000") => target == blob,
            _ => false,
        }
    }
}

/// What is at `path` in the work tree, `None` if nothing is (or a directory on the way is
/// missing). A file is read whole: it is compared with the delivered one.
fn look(work: &File, path: &str) -> Result<Option<Here>, String> {
    let (dir, leaf) = match parent_of(work, path) {
        Ok(found) => found,
        Err(_) if missing_on_the_way(work, path) => return Ok(None),
        Err(why) => return Err(why),
    };
    let stat = match fstatat(&dir, leaf.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(stat) => stat,
        Err(Errno::ENOENT) => return Ok(None),
        Err(err) => return Err(err.to_string()),
    };
    let kind = SFlag::from_bits_truncate(stat.st_mode & SFlag::S_IFMT.bits());
    if kind == SFlag::S_IFLNK {
        let target = nix::fcntl::readlinkat(&dir, leaf.as_os_str()).map_err(|e| e.to_string())?;
        return Ok(Some(Here::Link(target.into_vec())));
    }
    if kind != SFlag::S_IFREG {
        return Ok(Some(Here::Other));
    }
    let fd = openat(
        &dir,
        leaf.as_os_str(),
        OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|err| err.to_string())?;
    let mut bytes = Vec::new();
    File::from(fd)
        .take(MAX_COMPARED)
        .read_to_end(&mut bytes)
        .map_err(|err| err.to_string())?;
    Ok(Some(Here::File {
        executable: executable(&stat),
        bytes,
    }))
}

fn executable(stat: &FileStat) -> bool {
    stat.st_mode & 0o100 != 0
}

/// Whether a directory on the way to `path` is not there (so nothing is at `path`).
fn missing_on_the_way(work: &File, path: &str) -> bool {
    let Some((parent, _)) = path.rsplit_once('/') else {
        return false;
    };
    matches!(
        openat2(work, parent, beneath(OFlag::O_PATH | OFlag::O_DIRECTORY)),
        Err(Errno::ENOENT | Errno::ENOTDIR)
    )
}

/// Writes the delivered version of `path`: a file with its mode, or a link. Directories on the
/// way that are missing are made, and recorded in `made`.
fn write(
    work: &File,
    path: &str,
    mode: &str,
    blob: &[u8],
    made: &mut Vec<String>,
) -> Result<(), String> {
    let mut at = String::new();
    for part in path
        .split('/')
        .collect::<Vec<_>>()
        .split_last()
        .map_or(&[][..], |(_, d)| d)
    {
        if !at.is_empty() {
            at.push('/');
        }
        at.push_str(part);
        match openat2(
            work,
            at.as_str(),
            beneath(OFlag::O_PATH | OFlag::O_DIRECTORY),
        ) {
            Ok(_) => continue,
            Err(Errno::ENOENT) => {}
            Err(err) => {
                return Err(format!(
                    "cannot write {}: {err} at {}",
                    one_line(path),
                    one_line(&at)
                ));
            }
        }
        let (dir, leaf) = parent_of(work, &at)?;
        mkdirat(&dir, leaf.as_os_str(), Mode::from_bits_truncate(0o755))
            .map_err(|err| format!("cannot make {}: {err}", one_line(&at)))?;
        made.push(at.clone());
    }
    let (dir, leaf) = parent_of(work, path)?;
    if mode == "120000" {
        let target = OsString::from_vec(blob.to_vec());
        return symlinkat(target.as_os_str(), &dir, leaf.as_os_str())
            .map_err(|err| format!("cannot write {}: {err}", one_line(path)));
    }
    let fd = openat(
        &dir,
        leaf.as_os_str(),
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(0o644),
    )
    .map_err(|err| format!("cannot write {}: {err}", one_line(path)))?;
    let mut file = File::from(fd);
    file.write_all(blob)
        .map_err(|err| format!("cannot write {}: {err}", one_line(path)))?;
    if mode == "100755" {
        file.set_permissions(std::fs::Permissions::from_mode(0o755))
            .map_err(|err| format!("cannot write {}: {err}", one_line(path)))?;
    }
    Ok(())
}

/// Removes what was written, the directories made for it, and puts back what was set aside
/// (whatever a gate left in its place is discarded, as pre-commit does); the stash goes once
/// it is empty.
fn undo(work: &File, stash: &Path, plan: &Plan) -> Result<(), Error> {
    let stash_dir = match open_dir(AT_FDCWD, stash) {
        Ok(dir) => Some(dir),
        Err(Errno::ENOENT) => None,
        Err(err) => {
            return Err(Error::Restore {
                why: err.to_string(),
                stash: stash.to_path_buf(),
            });
        }
    };
    let in_stash = |name: &str| {
        stash_dir
            .as_ref()
            .is_some_and(|dir| fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW).is_ok())
    };
    let mut failures = Vec::new();
    let aside: BTreeMap<&str, &str> = plan
        .aside
        .iter()
        .map(|(path, name)| (path.as_str(), name.as_str()))
        .collect();
    for path in &plan.written {
        // A path whose own file never reached the stash was not swapped yet: it is the user's.
        if aside.get(path.as_str()).is_some_and(|name| !in_stash(name)) {
            continue;
        }
        if let Err(why) = remove(work, path) {
            failures.push(why);
        }
    }
    for dir in plan.made.iter().rev() {
        if let Ok((parent, leaf)) = parent_of(work, dir) {
            let _ = unlinkat(&parent, leaf.as_os_str(), UnlinkatFlags::RemoveDir);
        }
    }
    if let Some(stash_dir) = &stash_dir {
        // The last set aside first: a directory goes back before what was inside it.
        for (path, name) in plan.aside.iter().rev() {
            if !in_stash(name) {
                continue;
            }
            let back = remove(work, path)
                .and_then(|()| parent_of(work, path))
                .and_then(|(dir, leaf)| {
                    renameat(stash_dir, name.as_str(), &dir, leaf.as_os_str())
                        .map_err(|err| format!("{}: {err}", one_line(path)))
                });
            if let Err(why) = back {
                failures.push(why);
            }
        }
    }
    if !failures.is_empty() {
        return Err(Error::Restore {
            why: failures.join("; "),
            stash: stash.to_path_buf(),
        });
    }
    if stash_dir.is_some() {
        let _ = std::fs::remove_file(stash.join(PLAN));
        std::fs::remove_dir(stash).map_err(|err| Error::Restore {
            why: format!("the stash is not empty ({err})"),
            stash: stash.to_path_buf(),
        })?;
    }
    Ok(())
}

/// Removes a file or link at `path` (a gate's, or validator's own write); a directory there is
/// refused, never emptied.
fn remove(work: &File, path: &str) -> Result<(), String> {
    let (dir, leaf) = match parent_of(work, path) {
        Ok(found) => found,
        Err(_) if missing_on_the_way(work, path) => return Ok(()),
        Err(why) => return Err(why),
    };
    match unlinkat(&dir, leaf.as_os_str(), UnlinkatFlags::NoRemoveDir) {
        Ok(()) | Err(Errno::ENOENT) => Ok(()),
        Err(err) => Err(format!("cannot clear {}: {err}", one_line(path))),
    }
}

/// Carries out the plan a stopped run left, before anything else; refused while that run is
/// alive.
fn put_back_leftover(work: &File, stash: &Path) -> Result<(), Error> {
    if stash.symlink_metadata().is_err() {
        return Ok(());
    }
    let plan_path = stash.join(PLAN);
    let plan: Plan =
        match crate::files::read(&plan_path, MAX_PLAN_BYTES, crate::files::Links::Refuse) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|err| Error::Restore {
                why: format!("its plan cannot be read ({err})"),
                stash: stash.to_path_buf(),
            })?,
            // A stash made but no plan saved yet: nothing was moved.
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Plan::default(),
            Err(err) => {
                return Err(Error::Restore {
                    why: format!("its plan cannot be read ({err})"),
                    stash: stash.to_path_buf(),
                });
            }
        };
    if plan.pid != 0 && plan.pid != std::process::id() && alive(plan.pid) {
        return Err(Error::Busy(format!(
            "another `validator check` (process {}) has put what is delivered in place here; wait for it to finish",
            plan.pid
        )));
    }
    let safe = |path: &str| {
        !path.is_empty()
            && !path.starts_with('/')
            && path
                .split('/')
                .all(|part| !part.is_empty() && part != "." && part != "..")
    };
    let names_ok = plan.aside.iter().all(|(path, name)| {
        safe(path) && !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit())
    });
    if !names_ok || !plan.written.iter().chain(&plan.made).all(|path| safe(path)) {
        return Err(Error::Restore {
            why: "its plan names a path outside the work tree; it was not followed".into(),
            stash: stash.to_path_buf(),
        });
    }
    undo(work, stash, &plan)?;
    eprintln!(
        "validator: put back {} files a stopped run had set aside in {}",
        plan.aside.len(),
        stash.display()
    );
    Ok(())
}

/// Whether process `pid` is running.
fn alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

fn save(stash: &Path, plan: &Plan) -> Result<(), String> {
    let bytes = serde_json::to_vec(plan).map_err(|err| err.to_string())?;
    crate::replace::durably(&stash.join(PLAN), &bytes)
        .map_err(|err| format!("cannot save the plan in {}: {err}", stash.display()))
}

/// Whether the untracked `path` is, or lies in, an environment the gates run their tools from.
fn is_environment(task_dir: &Path, path: &str) -> bool {
    let mut at = task_dir.to_path_buf();
    for part in path.split('/') {
        at.push(part);
        if part == "node_modules" || at.join("pyvenv.cfg").is_file() {
            return true;
        }
    }
    false
}

/// The open directory holding `path` and its last name; no link is followed on the way.
fn parent_of(work: &File, path: &str) -> Result<(OwnedFd, PathBuf), String> {
    let (parent, leaf) = match path.rsplit_once('/') {
        Some((parent, leaf)) => (parent, leaf),
        None => (".", path),
    };
    if leaf.is_empty() || leaf == "." || leaf == ".." {
        return Err(format!("{} is not a path in the work tree", one_line(path)));
    }
    let dir =
        openat2(work, parent, beneath(OFlag::O_PATH | OFlag::O_DIRECTORY)).map_err(|err| {
            format!(
                "{}: {err} (a link on the way is never followed)",
                one_line(path)
            )
        })?;
    Ok((dir, PathBuf::from(leaf)))
}

fn open_dir<Fd: AsFd>(at: Fd, path: &Path) -> nix::Result<OwnedFd> {
    openat(
        at,
        path,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
}

fn beneath(flags: OFlag) -> OpenHow {
    OpenHow::new()
        .flags(flags | OFlag::O_CLOEXEC)
        .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_SYMLINKS)
}

/// One ref a push sends: what is judged, and where its changes are counted from.
#[derive(Debug, Clone)]
pub struct Pushed {
    pub local_ref: String,
    pub commit: String,
    pub since: crate::task::Since,
    /// How many commits the remote does not have yet, when that was counted.
    pub new_commits: Option<usize>,
}

/// The refs a push sends, from the lines git gives a pre-push hook on its standard input
/// (`<local ref> <local oid> <remote ref> <remote oid>`) and the remote's name (the hook's
/// first argument). A deleted ref delivers nothing; a ref the remote has (and a new branch
/// whose commits it holds already) is counted from what the remote holds: the last commit both
/// share (a force push), or, for a new branch, the parent of its first commit the remote has no
/// ref to (every file, when there is none).
pub fn pushed(task: &Task, remote: &str, lines: &str) -> Result<Vec<Pushed>, Error> {
    let cannot = Error::CannotTell;
    let indexes = tempfile::tempdir().map_err(|err| cannot(err.to_string()))?;
    let deadline = Instant::now() + LISTING_TIME;
    let repo = Repo::open(task, None, deadline, indexes.path())
        .map_err(|problem| cannot(problem.into_reason()))?
        .ok_or_else(|| cannot("the directory is not in a git repository".into()))?;
    let mut refs = Vec::new();
    for line in lines.lines().filter(|line| !line.trim().is_empty()) {
        let words: Vec<&str> = line.split_whitespace().collect();
        let [local_ref, local, remote_ref, remote_oid] = words[..] else {
            return Err(cannot(format!(
                "git's pre-push line `{}` is not `<local ref> <local oid> <remote ref> <remote oid>`",
                one_line(line)
            )));
        };
        if ![local, remote_oid].iter().all(|oid| is_oid(oid)) {
            return Err(cannot(format!(
                "git's pre-push line `{}` names no object ids",
                one_line(line)
            )));
        }
        if is_zero(local) {
            continue;
        }
        let short = |oid: &str| oid.chars().take(12).collect::<String>();
        let known = !is_zero(remote_oid) && repo.has_object(remote_oid);
        let (since, new_commits) = if known {
            let base = repo.merge_base(remote_oid, local).map_err(cannot)?;
            let shown = format!(
                "{} on {remote} ({})",
                one_line(remote_ref),
                short(remote_oid)
            );
            (
                crate::task::Since {
                    commit: base,
                    shown,
                },
                None,
            )
        } else {
            let new = repo.not_on_remote(local, remote).map_err(cannot)?;
            let Some((_, parents)) = new.first() else {
                continue;
            };
            let shown = match parents.first() {
                Some(parent) => format!("what {remote} already has ({})", short(parent)),
                None => format!("nothing: {remote} has none of this history"),
            };
            let since = crate::task::Since {
                commit: parents.first().cloned(),
                shown,
            };
            (since, Some(new.len()))
        };
        refs.push(Pushed {
            local_ref: local_ref.to_owned(),
            commit: local.to_owned(),
            since,
            new_commits,
        });
    }
    Ok(refs)
}

fn is_oid(word: &str) -> bool {
    matches!(word.len(), 40 | 64) && word.bytes().all(|b| b.is_ascii_hexdigit())
}

fn is_zero(oid: &str) -> bool {
    oid.bytes().all(|b| b == b'0')
}
