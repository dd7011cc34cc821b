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
//! nor a planted plan can move a file outside the work tree. An untracked file stays in place
//! only where a committed `.gitignore` (or the user's own global excludes, in their own run)
//! hides it, as `.venv/` and `node_modules/` usually are: no name of its own keeps it there.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
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
use validator_text::one_line;

/// The stash's directory in the repository's git directory.
const STASH: &str = "validator-delivery";
/// The lock one run at a time holds, beside it.
const LOCK: &str = "validator-delivery.lock";
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
    /// The user's paths set aside: the path, and its name in the stash.
    aside: Vec<(String, String)>,
    /// Paths where the delivered version was written, with the SHA-256 of what was written: a
    /// path that holds anything else since (the user's new work after a stopped run) is kept.
    written: Vec<(String, String)>,
    /// Directories made for them, the outermost first.
    made: Vec<String>,
    /// Directories left empty by what was set aside, removed (git delivers no empty
    /// directory, and Python imports one as a package), with their modes; the innermost first.
    #[serde(default)]
    emptied: Vec<(String, u32)>,
}

/// The delivered tree in the work tree, until [`Swap::restore`] (or the drop) puts the user's
/// work back.
pub struct Swap {
    work: File,
    stash: PathBuf,
    plan: Plan,
    done: bool,
    /// What the user should hear before the run (a stopped run's plan carried out).
    pub notes: Vec<String>,
    /// Held for the swap's life: one run at a time puts what is delivered in place.
    _lock: nix::fcntl::Flock<File>,
    /// What was delivered when the run started, to tell a gate that changed it (`git add` in a
    /// test) from none; with the task and the index it was read from.
    delivered: Option<(Task, BTreeMap<String, TreeEntry>, Option<PathBuf>)>,
}

/// What a swap did, for the line that tells the user.
impl Swap {
    pub fn set_aside(&self) -> usize {
        self.plan.aside.len()
    }

    /// The paths set aside, for the line that says so.
    pub fn set_aside_paths(&self) -> impl Iterator<Item = &str> {
        self.plan.aside.iter().map(|(path, _)| path.as_str())
    }

    pub fn written(&self) -> usize {
        self.plan.written.len()
    }

    /// Puts the user's work back as it was; what cannot be put back stays in the stash. A
    /// commit's index that changed during the run (a gate staged a file) is refused: what git
    /// would commit now was not what was judged.
    /// `Ok` holds what the user should hear (a file kept beside its path).
    pub fn restore(mut self) -> Result<Vec<String>, Error> {
        self.done = true;
        let mut notes = Vec::new();
        if !self.plan.aside.is_empty() {
            // The kernel stamps files with a clock that moves a tick at a time (up to 10 ms): past
            // one, a file put back is surely newer than the last one a gate built.
            std::thread::sleep(Duration::from_millis(12));
        }
        undo(&self.work, &self.stash, &self.plan, true, &mut notes)?;
        let Some((task, judged, index)) = &self.delivered else {
            return Ok(notes);
        };
        let now = open_repo(task, index.as_deref()).and_then(|(repo, _)| {
            repo.delivered_entries(&Delivered::Index)
                .map_err(Error::CannotTell)
        })?;
        if &now.0 != judged {
            return Err(Error::CannotTell(
                "the index changed while the gates ran (one of them staged a file): what git would commit now is not what was judged; look at `git status` and commit again".into(),
            ));
        }
        Ok(notes)
    }
}

impl Drop for Swap {
    fn drop(&mut self) {
        if !self.done {
            // Only where the run ended early; what could not be put back stays in the stash,
            // which the next run carries out first.
            if let Err(err) = undo(&self.work, &self.stash, &self.plan, true, &mut Vec::new()) {
                tracing::error!("{err}");
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
    rules_file: &Path,
) -> Result<Swap, Error> {
    let cannot = Error::CannotTell;
    // HEAD as it is: the push's `since` counts changes for the gates, not here.
    let plain = Task {
        since: None,
        ..task.clone()
    };
    let index = match delivered {
        Delivered::Index => hook_index(),
        Delivered::Commit(_) => None,
    };
    let (repo, _indexes) = open_repo(&plain, index.as_deref())?;
    let stash = repo.git_dir().join(STASH);
    let lock = lock(&repo.git_dir().join(LOCK))?;
    let work = open_dir(AT_FDCWD, &task.dir)
        .map_err(|err| cannot(format!("cannot open {}: {err}", task.dir.display())))?;
    let work = File::from(work);
    let mut notes = Vec::new();
    put_back_leftover(&work, &stash, &mut notes)?;

    let (target, left_out) = repo.delivered_entries(delivered).map_err(cannot)?;
    let head = match repo.has_commit("HEAD") {
        true => repo.tree_entries("HEAD").map_err(cannot)?,
        false => BTreeMap::new(),
    };
    refuse_nested_changes(&target, &head)?;
    let differs = crate::rules::file_scope::changed_in_git(&plain, state_dir, LISTING_TIME)
        .map_err(cannot)?;
    let every: Vec<&String> = target.keys().collect();
    let converted = repo.converted(&every).map_err(cannot)?;
    let candidates = candidates(&differs, &converted, &target, &head);
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
        plan: Plan::default(),
        done: false,
        notes,
        _lock: lock,
        delivered: matches!(delivered, Delivered::Index)
            .then(|| (plain.clone(), target.clone(), index.clone())),
    };
    let rules_path = rules_file
        .canonicalize()
        .unwrap_or_else(|_| rules_file.to_path_buf());
    let wanted: Vec<(&String, Option<&TreeEntry>)> = candidates
        .into_iter()
        .filter(|path| !own(path) || task.dir.join(path) == rules_path)
        .map(|path| (path, target.get(path)))
        .collect();
    let writes = compare(&repo, &swap.work, wanted, &mut swap.plan.aside)?;
    refuse_changed_rules(task, rules_file, &swap.plan.aside, &writes, delivered)?;
    // What the commit leaves out: untracked files no committed rule hides (nor the user's
    // own excludes), and the entries `git add -N` made.
    let tracked = |path: &String| target.contains_key(path) || head.contains_key(path);
    let untracked: Vec<&String> = differs.iter().filter(|path| !tracked(path)).collect();
    let mut hidden = repo.ignored_by(excludes, &untracked).map_err(cannot)?;
    // A first commit has no committed rules yet but the ones it brings (`.venv/` in the
    // `.gitignore` it adds): those say what it leaves out.
    if head.is_empty() {
        let rules = delivered_ignore_rules(&repo, &target)?;
        hidden.extend(repo.hidden_by_delivered(&rules, &untracked));
    }
    for path in untracked.into_iter().cloned().chain(left_out) {
        if own(&path) || hidden.contains(&path) || swap.plan.aside.iter().any(|(a, _)| *a == path) {
            continue;
        }
        swap.plan.aside.push((path, String::new()));
    }
    number_plan(&mut swap.plan, &writes)?;
    carry_out(&mut swap, writes)?;
    Ok(swap)
}

/// Refuses a name that is not UTF-8 (it could not be set aside exactly), then orders what is
/// set aside deepest first (a directory goes after what was inside it, and comes back before)
/// and names each in the stash.
fn number_plan(plan: &mut Plan, writes: &[(String, String, Vec<u8>)]) -> Result<(), Error> {
    if let Some(odd) = plan
        .aside
        .iter()
        .map(|(p, _)| p)
        .chain(writes.iter().map(|(p, ..)| p))
        .find(|p| p.contains('\u{FFFD}'))
    {
        return Err(Error::CannotTell(format!(
            "the file name {} is not UTF-8, and validator cannot set it aside exactly",
            one_line(odd)
        )));
    }
    plan.aside
        .sort_by_key(|(path, _)| std::cmp::Reverse(path.matches('/').count()));
    for (n, (_, name)) in plan.aside.iter_mut().enumerate() {
        *name = n.to_string();
    }
    Ok(())
}

/// Each wanted path's delivered version against the work tree's, byte for byte: the ones that
/// differ are set aside (into `aside`) and the delivered versions to write are returned.
fn compare(
    repo: &Repo<'_>,
    work: &File,
    wanted: Vec<(&String, Option<&TreeEntry>)>,
    aside: &mut Vec<(String, String)>,
) -> Result<Vec<(String, String, Vec<u8>)>, Error> {
    let cannot = Error::CannotTell;
    let oids: Vec<&str> = wanted
        .iter()
        .filter_map(|(_, entry)| entry.map(|e| e.oid.as_str()))
        .collect();
    let mut blobs = repo.blobs(&oids).map_err(cannot)?.into_iter();
    let mut writes = Vec::new();
    for (path, entry) in wanted {
        let here = look(work, path).map_err(|err| cannot(format!("{}: {err}", one_line(path))))?;
        match entry {
            Some(entry) => {
                let blob = blobs
                    .next()
                    .ok_or_else(|| cannot("git printed fewer files than asked".into()))?;
                if here.as_ref().is_some_and(|here| here.holds(entry, &blob)) {
                    continue;
                }
                if here.is_some() {
                    aside.push((path.clone(), String::new()));
                }
                writes.push((path.clone(), entry.mode.clone(), blob));
            }
            None if here.is_some() => aside.push((path.clone(), String::new())),
            None => {}
        }
    }
    Ok(writes)
}

/// The delivered tree's `.gitignore` files: paths from the top, contents.
fn delivered_ignore_rules(
    repo: &Repo<'_>,
    target: &BTreeMap<String, TreeEntry>,
) -> Result<Vec<(String, Vec<u8>)>, Error> {
    let entries: Vec<(&String, &TreeEntry)> = target
        .iter()
        .filter(|(path, entry)| {
            path.rsplit('/').next() == Some(".gitignore") && entry.mode.starts_with("1006")
        })
        .collect();
    let oids: Vec<&str> = entries
        .iter()
        .map(|(_, entry)| entry.oid.as_str())
        .collect();
    let blobs = repo.blobs(&oids).map_err(Error::CannotTell)?;
    Ok(entries
        .into_iter()
        .zip(blobs)
        .map(|((path, _), blob)| (repo.path_from_top(path), blob))
        .collect())
}

/// A rules file whose work-tree copy is not the delivered one is refused, as pre-commit refuses
/// an unstaged config: the rules were read from the work tree, and would judge the commit with
/// rules it does not carry.
fn refuse_changed_rules(
    task: &Task,
    rules_file: &Path,
    aside: &[(String, String)],
    writes: &[(String, String, Vec<u8>)],
    delivered: &Delivered,
) -> Result<(), Error> {
    let rules_path = rules_file
        .canonicalize()
        .unwrap_or_else(|_| rules_file.to_path_buf());
    let changed = aside
        .iter()
        .map(|(path, _)| path)
        .chain(writes.iter().map(|(path, ..)| path))
        .find(|path| task.dir.join(path) == rules_path);
    let Some(path) = changed else {
        return Ok(());
    };
    Err(Error::CannotTell(match delivered {
        Delivered::Index => format!(
            "the rules file {} has changes that are not staged, and would judge the commit with rules it does not carry: `git add {}` to commit them, or `git stash --keep-index` them first",
            one_line(path),
            one_line(path)
        ),
        Delivered::Commit(_) => format!(
            "the rules file {} in the work tree is not the one pushed, and would judge the push with rules it does not carry: commit it or set the change aside, then push",
            one_line(path)
        ),
    }))
}

/// The task's repository, reading `index` (a hook's) for its own.
fn open_repo<'t>(
    task: &'t Task,
    index: Option<&Path>,
) -> Result<(Repo<'t>, tempfile::TempDir), Error> {
    let cannot = Error::CannotTell;
    let indexes = tempfile::tempdir().map_err(|err| cannot(err.to_string()))?;
    let deadline = Instant::now() + LISTING_TIME;
    let mut repo = Repo::open(task, None, deadline, indexes.path(), None)
        .map_err(|problem| cannot(problem.into_reason()))?
        .ok_or_else(|| cannot("the directory is not in a git repository".into()))?;
    if let Some(index) = index {
        repo = repo.reading_index(index).map_err(cannot)?;
    }
    Ok((repo, indexes))
}

/// Takes the lock on the stash, or says another run holds it.
fn lock(path: &Path) -> Result<nix::fcntl::Flock<File>, Error> {
    use nix::fcntl::{Flock, FlockArg};
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK).bits())
        .open(path)
        .map_err(|err| Error::Swap(format!("cannot open {}: {err}", path.display())))?;
    if !file.metadata().is_ok_and(|meta| meta.is_file()) {
        return Err(Error::Swap(format!(
            "{} is not a regular file; remove it",
            path.display()
        )));
    }
    Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|(_, _)| {
        Error::Busy(format!(
            "another `validator check` is judging what is delivered in this repository (it holds {}); wait for it to finish",
            path.display()
        ))
    })
}

/// A change to a nested repository (a gitlink) cannot be put in place: validator checks none
/// out.
fn refuse_nested_changes(
    target: &BTreeMap<String, TreeEntry>,
    head: &BTreeMap<String, TreeEntry>,
) -> Result<(), Error> {
    let gitlink = |entry: Option<&TreeEntry>| entry.is_some_and(|e| e.mode == "160000");
    for path in target.keys().chain(head.keys()) {
        let (delivered, now) = (target.get(path), head.get(path));
        if (gitlink(delivered) || gitlink(now)) && delivered != now {
            return Err(Error::CannotTell(format!(
                "it changes the nested repository {}, which validator does not check out, so the delivered tree cannot be put in place to judge",
                one_line(path)
            )));
        }
    }
    Ok(())
}

/// The tracked paths where the work tree may differ from what is delivered: where it differs
/// from HEAD, as git tells it through validator's own index, and where the delivered tree does.
/// A nested repository's path is left as it is (an unchanged gitlink).
fn candidates<'t>(
    differs_from_head: &BTreeSet<String>,
    converted: &BTreeSet<String>,
    target: &'t BTreeMap<String, TreeEntry>,
    head: &'t BTreeMap<String, TreeEntry>,
) -> BTreeSet<&'t String> {
    let mut candidates: BTreeSet<&String> = BTreeSet::new();
    for path in differs_from_head {
        if let Some((key, _)) = target.get_key_value(path).or(head.get_key_value(path)) {
            candidates.insert(key);
        }
    }
    for path in target.keys().chain(head.keys()) {
        // git compares a converted file (ident, text, eol) converted: its bytes may differ.
        if target.get(path) != head.get(path) || converted.contains(path) {
            candidates.insert(path);
        }
    }
    let gitlink = |path: &&String| {
        target
            .get(*path)
            .or(head.get(*path))
            .is_some_and(|e| e.mode == "160000")
    };
    candidates.retain(|path| !gitlink(path));
    candidates
}

/// Sets the user's paths aside and writes the delivered ones, the plan saved before each
/// step that leaves something to undo; on any failure, undoes what was done.
fn carry_out(swap: &mut Swap, writes: Vec<(String, String, Vec<u8>)>) -> Result<(), Error> {
    if swap.plan.aside.is_empty() && writes.is_empty() {
        return Ok(());
    }
    let failed = |swap: &mut Swap, why: String| {
        swap.done = true;
        match undo(&swap.work, &swap.stash, &swap.plan, true, &mut Vec::new()) {
            Ok(()) => Error::Swap(why),
            Err(err) => err,
        }
    };
    std::fs::create_dir(&swap.stash)
        .map_err(|err| Error::Swap(format!("cannot make {}: {err}", swap.stash.display())))?;
    swap.plan.written = writes
        .iter()
        .map(|(path, _, blob)| (path.clone(), digest(blob)))
        .collect();
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
    empty_out(&swap.work, &mut swap.plan);
    if let Err(why) = save(&swap.stash, &swap.plan) {
        return Err(failed(swap, why));
    }
    for (path, mode, blob) in writes {
        let made_before = swap.plan.made.len();
        let written = write(&swap.work, &path, &mode, &blob, &mut swap.plan.made);
        // A directory made is in the plan before anything is written into it.
        let saved = match swap.plan.made.len() > made_before {
            true => save(&swap.stash, &swap.plan),
            false => Ok(()),
        };
        if let Err(why) = written.and(saved) {
            return Err(failed(swap, why));
        }
    }
    Ok(())
}

/// Removes the directories the paths set aside left empty, innermost first, each recorded.
fn empty_out(work: &File, plan: &mut Plan) {
    let mut parents: Vec<String> = plan
        .aside
        .iter()
        .flat_map(|(path, _)| {
            let mut dirs = Vec::new();
            let mut at = path.as_str();
            while let Some((parent, _)) = at.rsplit_once('/') {
                dirs.push(parent.to_owned());
                at = parent;
            }
            dirs
        })
        .collect();
    parents.sort_by_key(|dir| std::cmp::Reverse(dir.matches('/').count()));
    parents.dedup();
    for dir in parents {
        let Ok((parent, leaf)) = parent_of(work, &dir) else {
            continue;
        };
        let Ok(stat) = fstatat(&parent, leaf.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW) else {
            continue;
        };
        if unlinkat(&parent, leaf.as_os_str(), UnlinkatFlags::RemoveDir).is_ok() {
            plan.emptied.push((dir, stat.st_mode & 0o7777));
        }
    }
}

fn digest(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    format!("{:x}", Sha256::digest(bytes))
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

/// Removes what was written, the directories made for it, and puts back what was set aside.
/// What a gate left in a path's place is discarded, as pre-commit does; anything else found
/// there (the user's work since a stopped run) is kept beside it as `<path>.validator-kept`
/// and said. The stash goes once it is empty.
fn undo(
    work: &File,
    stash: &Path,
    plan: &Plan,
    live: bool,
    notes: &mut Vec<String>,
) -> Result<(), Error> {
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
    for (path, written) in &plan.written {
        // A path whose own file never reached the stash was not swapped yet: it is the user's.
        if aside.get(path.as_str()).is_some_and(|name| !in_stash(name)) {
            continue;
        }
        match holds(work, path, written) {
            // A gate's rewrite during the run is discarded; after a stopped run, what is there
            // may be the user's new work.
            Ok(Some(same)) if same || live => {
                if let Err(why) = remove(work, path) {
                    failures.push(why);
                }
            }
            Ok(Some(_)) => {
                if let Err(why) = keep_beside(work, path, notes) {
                    failures.push(why);
                }
            }
            Ok(None) => {}
            Err(why) => failures.push(why),
        }
    }
    for dir in plan.made.iter().rev() {
        if let Ok((parent, leaf)) = parent_of(work, dir) {
            let _ = unlinkat(&parent, leaf.as_os_str(), UnlinkatFlags::RemoveDir);
        }
    }
    remake_emptied(work, &plan.emptied);
    if let Some(stash_dir) = &stash_dir {
        // In the reverse order: a directory goes back before what was inside it.
        for (path, name) in plan.aside.iter().rev() {
            if !in_stash(name) {
                continue;
            }
            let cleared = match look(work, path) {
                Ok(None) => Ok(()),
                // What a gate made there during the run goes, as its rewrites do.
                Ok(Some(_)) if live => remove(work, path),
                Ok(Some(_)) => keep_beside(work, path, notes),
                Err(why) => Err(why),
            };
            let back = cleared
                .and_then(|()| parent_of(work, path))
                .and_then(|(dir, leaf)| {
                    renameat(stash_dir, name.as_str(), &dir, leaf.as_os_str())
                        .map_err(|err| format!("{}: {err}", one_line(path)))?;
                    touch(&dir, &leaf);
                    Ok(())
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

/// Makes again the directories the paths set aside had left empty, outermost first, with
/// their modes (mkdir takes the umask off and never sets setgid, so the mode is put back).
fn remake_emptied(work: &File, emptied: &[(String, u32)]) {
    for (dir, mode) in emptied.iter().rev() {
        if let Ok((parent, leaf)) = parent_of(work, dir) {
            let mode = Mode::from_bits_truncate(*mode);
            if mkdirat(&parent, leaf.as_os_str(), mode).is_ok() {
                let _ = nix::sys::stat::fchmodat(
                    &parent,
                    leaf.as_os_str(),
                    mode,
                    nix::sys::stat::FchmodatFlags::FollowSymlink,
                );
            }
        }
    }
}

/// Marks a path put back as modified now: newer than anything the gates built from the
/// delivered version, so make, cargo and their kind build again from the user's.
fn touch(dir: &OwnedFd, leaf: &Path) {
    let now = nix::sys::time::TimeSpec::UTIME_NOW;
    let _ = nix::sys::stat::utimensat(
        dir,
        leaf.as_os_str(),
        &now,
        &now,
        nix::sys::stat::UtimensatFlags::NoFollowSymlink,
    );
}

/// Whether `path` holds exactly what validator wrote there (`digest`); `None` when nothing is
/// there.
fn holds(work: &File, path: &str, written: &str) -> Result<Option<bool>, String> {
    Ok(look(work, path)?.map(|here| match here {
        Here::File { bytes, .. } => digest(&bytes) == written,
        Here::Link(target) => digest(&target) == written,
        Here::Other => false,
    }))
}

/// Moves what is at `path` to `<path>.validator-kept` (numbered past one that exists), saying
/// so: it is the user's, or no one's, but never validator's to delete.
fn keep_beside(work: &File, path: &str, notes: &mut Vec<String>) -> Result<(), String> {
    let (dir, leaf) = parent_of(work, path)?;
    for n in 0..100 {
        let kept = match n {
            0 => format!("{}.validator-kept", leaf.display()),
            n => format!("{}.validator-kept-{n}", leaf.display()),
        };
        match fstatat(&dir, kept.as_str(), AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(_) => continue,
            Err(Errno::ENOENT) => {}
            Err(err) => return Err(format!("{}: {err}", one_line(path))),
        }
        renameat(&dir, leaf.as_os_str(), &dir, kept.as_str())
            .map_err(|err| format!("cannot keep {}: {err}", one_line(path)))?;
        notes.push(format!(
            "{} changed while what is delivered was in its place; it is kept as {}",
            one_line(path),
            one_line(&kept)
        ));
        return Ok(());
    }
    Err(format!(
        "cannot keep {}: too many kept copies",
        one_line(path)
    ))
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
fn put_back_leftover(work: &File, stash: &Path, notes: &mut Vec<String>) -> Result<(), Error> {
    if stash.symlink_metadata().is_err() {
        return Ok(());
    }
    let plan_path = stash.join(PLAN);
    let plan: Plan = match validator_process::files::read(
        &plan_path,
        MAX_PLAN_BYTES,
        validator_process::files::Links::Refuse,
    ) {
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
    let written = plan.written.iter().map(|(path, _)| path);
    let emptied = plan.emptied.iter().map(|(path, _)| path);
    if !names_ok
        || !written
            .chain(&plan.made)
            .chain(emptied)
            .all(|path| safe(path))
    {
        return Err(Error::Restore {
            why: "its plan names a path outside the work tree; it was not followed".into(),
            stash: stash.to_path_buf(),
        });
    }
    undo(work, stash, &plan, false, notes)?;
    notes.push(format!(
        "put back {} files a stopped run had set aside in {}",
        plan.aside.len(),
        stash.display()
    ));
    Ok(())
}

/// The index git hands a pre-commit hook (`$GIT_INDEX_FILE`, relative to where the hook runs):
/// `git commit -a` and `git commit <path>` commit a temporary one, not `.git/index`.
fn hook_index() -> Option<PathBuf> {
    let index = PathBuf::from(std::env::var_os("GIT_INDEX_FILE").filter(|v| !v.is_empty())?);
    match index.is_absolute() {
        true => Some(index),
        false => std::env::current_dir().ok().map(|dir| dir.join(index)),
    }
}

fn save(stash: &Path, plan: &Plan) -> Result<(), String> {
    let bytes = serde_json::to_vec(plan).map_err(|err| err.to_string())?;
    crate::replace::durably(&stash.join(PLAN), &bytes)
        .map_err(|err| format!("cannot save the plan in {}: {err}", stash.display()))
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
    let repo = Repo::open(task, None, deadline, indexes.path(), None)
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
            let since = crate::task::Since {
                commit: base,
                shown,
                delivered: local.to_owned(),
            };
            (since, None)
        } else {
            let new = repo.not_on_remote(local, remote).map_err(cannot)?;
            let since = match new.first() {
                Some((_, parents)) => crate::task::Since {
                    commit: parents.first().cloned(),
                    shown: match parents.first() {
                        Some(parent) => format!("what {remote} already has ({})", short(parent)),
                        None => format!("nothing: {remote} has none of this history"),
                    },
                    delivered: local.to_owned(),
                },
                // Every commit is on a ref of the remote's, by this repository's own refs,
                // which anyone who can run git may move: the whole tree counts, never none.
                None => crate::task::Since {
                    commit: None,
                    shown: format!(
                        "nothing: a new ref on {remote} whose commits its refs here already hold, so every file counts"
                    ),
                    delivered: local.to_owned(),
                },
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
