//! Looking inside a task directory without leaving it: listing files (never following a link
//! out, never descending into `.git`), and opening a file only after checking where it really is.
//! A look made for a gate stops at its [`Deadline`]: the worker chooses how many files there are
//! and how large, and the walk and the reads are where that time goes.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

use walkdir::WalkDir;

use crate::task::Task;
use validator_process::Cancel;

/// When a look inside the task must stop: the gate's deadline, or a supervisor's cancel. Asked
/// between files and between a long read's chunks, so no worker-chosen amount of files or bytes
/// outlasts the gate.
#[derive(Debug, Clone, Copy)]
pub struct Deadline<'a> {
    at: Instant,
    cancel: Option<&'a Cancel>,
}

/// Why a look was stopped before it finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    TimedOut,
    /// The supervisor (the watcher shutting down, a hook's signal) cancelled the run.
    Cancelled,
}

impl<'a> Deadline<'a> {
    pub fn new(at: Instant, cancel: Option<&'a Cancel>) -> Self {
        Deadline { at, cancel }
    }

    /// The instant it passes (for what takes a plain deadline: a command's, git's).
    pub fn at(&self) -> Instant {
        self.at
    }

    pub fn remaining(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }

    /// `Err` once the deadline has passed or the run was cancelled: whatever is left unlooked
    /// at must not count as clean.
    pub fn check(&self) -> Result<(), Stopped> {
        if self.cancel.is_some_and(Cancel::is_cancelled) {
            return Err(Stopped::Cancelled);
        }
        if Instant::now() >= self.at {
            return Err(Stopped::TimedOut);
        }
        Ok(())
    }
}

/// Why a file was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unread {
    /// The deadline passed (or the run was cancelled) before the file was read whole.
    Stopped(Stopped),
    /// The file cannot be read, and why: a link out, not a regular file, an I/O error.
    Refused(String),
}

/// How much of a file is read between two looks at the deadline: large enough that the look
/// costs nothing, small enough that one chunk takes a few milliseconds.
const CHUNK: u64 = 8 * 1024 * 1024;

/// A file found in the task directory.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Path relative to the task directory, `/`-separated, as globs see it.
    pub rel: String,
    pub path: PathBuf,
}

impl Entry {
    /// The file's length (a link's target's), read when asked: listing thousands of files
    /// for a gate that only opens them should not stat each one first.
    pub fn size(&self) -> u64 {
        std::fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0)
    }
}

/// Every file in a task directory, plus the links that were refused.
#[derive(Debug, Default)]
pub struct Listing {
    pub files: Vec<Entry>,
    /// Symlinks that point outside the task directory (or nowhere): reported, never read.
    pub escaping_links: Vec<String>,
    /// Directories the walk could not enter: what is inside them cannot be judged.
    pub unreadable: Vec<String>,
    /// Links to directories inside the task: not entered (no loops), so what they lead to is
    /// listed under its real path only.
    pub linked_dirs: Vec<String>,
    /// FIFOs, sockets and devices: never opened, but there, so a change all the same.
    pub special: Vec<String>,
}

/// Lists the task's files. A symlink whose target is inside the directory counts as the file it
/// names (directories behind links are not entered, so a link loop cannot trap the walk). Only
/// the top-level `.git` is skipped: a `.git` deeper down is the worker's to fill.
pub fn list(task: &Task) -> Listing {
    list_to_depth(task, None)
}

/// As [`list`], going no deeper than `max_depth` levels below the task directory (1: its own
/// files), for a look at a known place that need not walk the whole tree.
pub fn list_to_depth(task: &Task, max_depth: Option<usize>) -> Listing {
    walk(task, max_depth, &|_| false, None).unwrap_or_default()
}

/// As [`list`], not entering the directories `pass_over` names (task paths, without a
/// trailing `/`): those another listing already accounts for; stopped at `deadline`.
pub fn list_passing_over_by(
    task: &Task,
    pass_over: &dyn Fn(&str) -> bool,
    deadline: &Deadline<'_>,
) -> Result<Listing, Stopped> {
    walk(task, None, pass_over, Some(deadline))
}

/// As [`list`] for a gate: stopped at `deadline`, since the worker decides how many names the
/// walk meets. A listing cut short is no listing (`Err`), never the part that was seen.
pub fn list_by(task: &Task, deadline: &Deadline<'_>) -> Result<Listing, Stopped> {
    walk(task, None, &|_| false, Some(deadline))
}

/// As [`list_to_depth`], stopped at `deadline`.
pub fn list_to_depth_by(
    task: &Task,
    max_depth: Option<usize>,
    deadline: &Deadline<'_>,
) -> Result<Listing, Stopped> {
    walk(task, max_depth, &|_| false, Some(deadline))
}

fn walk(
    task: &Task,
    max_depth: Option<usize>,
    pass_over: &dyn Fn(&str) -> bool,
    deadline: Option<&Deadline<'_>>,
) -> Result<Listing, Stopped> {
    let mut listing = Listing::default();
    let mut stopped = None;
    let walker = WalkDir::new(&task.dir)
        .max_depth(max_depth.unwrap_or(usize::MAX))
        .follow_links(false)
        .into_iter()
        .filter_entry(|entry| {
            let git_dir =
                entry.depth() == 1 && entry.file_type().is_dir() && entry.file_name() == ".git";
            let ignored = task.ignore.iter().any(|ignored| entry.path() == ignored);
            let passed_over = entry.file_type().is_dir()
                && relative(&task.dir, entry.path()).is_some_and(|rel| pass_over(&rel));
            !git_dir && !ignored && !passed_over
        })
        // Asked before each name: a clock read and an atomic load, next to a directory read.
        .take_while(|_| match deadline.map(Deadline::check) {
            Some(Err(why)) => {
                stopped = Some(why);
                false
            }
            _ => true,
        });
    for entry in walker {
        let entry = match entry {
            Ok(entry) => entry,
            Err(err) => {
                let at = err
                    .path()
                    .and_then(|p| relative(&task.dir, p))
                    .unwrap_or_else(|| ".".into());
                listing.unreadable.push(at);
                continue;
            }
        };
        let Some(rel) = relative(&task.dir, entry.path()) else {
            continue;
        };
        let file_type = entry.file_type();
        if file_type.is_symlink() {
            match entry.path().canonicalize() {
                Ok(target) if target.starts_with(&task.dir) && target.is_file() => {
                    listing.files.push(Entry {
                        rel,
                        path: entry.path().to_path_buf(),
                    });
                }
                Ok(target) if target.starts_with(&task.dir) => listing.linked_dirs.push(rel),
                _ => listing.escaping_links.push(rel),
            }
        } else if file_type.is_file() {
            listing.files.push(Entry {
                rel,
                path: entry.path().to_path_buf(),
            });
        } else if !file_type.is_dir() {
            listing.special.push(rel);
        }
    }
    if let Some(why) = stopped {
        return Err(why);
    }
    // One sort of the paths found, rather than walkdir's per-directory sort, which takes each
    // entry's name out of its path again on every comparison (a tenth of a 100k-file gate).
    // By the paths' own bytes, not `rel`: two names that are not UTF-8 can read the same once
    // made text, and their order must still not depend on the order the worker made them in
    // (a cache key hashes the files in this order).
    listing.files.sort_unstable_by(|a, b| {
        a.path
            .as_os_str()
            .as_bytes()
            .cmp(b.path.as_os_str().as_bytes())
    });
    for names in [
        &mut listing.escaping_links,
        &mut listing.unreadable,
        &mut listing.linked_dirs,
        &mut listing.special,
    ] {
        names.sort_unstable();
    }
    Ok(listing)
}

fn relative(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    if rel.as_os_str().is_empty() {
        return None;
    }
    // The walk joins each name to its directory, so the path is already `/`-separated with
    // no `.` or doubled separators: its text is the relative name, without re-splitting it
    // into components (a fifth of a 500k-file walk).
    Some(rel.to_string_lossy().into_owned())
}

/// Resolves a relative path written in the rules file or by the worker (`junit:`, `cwd:`,
/// `files_touched`) to a real path inside the task directory, or says why it may not be used.
pub fn resolve_inside(task: &Task, rel: &str) -> Result<PathBuf, String> {
    let path = Path::new(rel);
    if path.components().any(|c| {
        matches!(
            c,
            Component::ParentDir | Component::RootDir | Component::Prefix(_)
        )
    }) {
        return Err(format!("`{rel}` is not a path inside the task directory"));
    }
    let joined = task.dir.join(path);
    let real = joined
        .canonicalize()
        .map_err(|err| format!("`{rel}`: {err}"))?;
    if !real.starts_with(&task.dir) {
        return Err(format!(
            "`{rel}` is a link that points outside the task directory; it was not followed"
        ));
    }
    Ok(real)
}

/// Whether `rel` (relative to the open directory `dir`) names a regular file that lies beneath
/// it, links followed only while they stay beneath: one `openat2` with `RESOLVE_BENEATH`, so a
/// chain of links costs the kernel's bounded walk, not a `readlink` per component. Nothing is
/// opened for reading (`O_PATH`). Where the kernel has no `openat2`, the path is resolved and
/// checked as [`resolve_inside`] does.
pub fn is_file_beneath(dir: &File, dir_path: &Path, rel: &Path) -> bool {
    use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat2};
    let how = OpenHow::new()
        .flags(OFlag::O_PATH | OFlag::O_CLOEXEC)
        .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_MAGICLINKS);
    match openat2(dir, rel, how) {
        Ok(fd) => File::from(fd).metadata().is_ok_and(|m| m.is_file()),
        Err(nix::errno::Errno::ENOSYS) => dir_path.join(rel).canonicalize().is_ok_and(|real| {
            real.starts_with(dir_path) && real.metadata().is_ok_and(|m| m.is_file())
        }),
        Err(_) => false,
    }
}

/// Opens a file for reading only if it really lies inside the task directory, and reads at most
/// `cap` bytes. `Ok(None)` means the file is larger than `cap`; it was not read whole.
pub fn read_capped(task: &Task, path: &Path, cap: u64) -> Result<Option<Vec<u8>>, String> {
    read_opened(task, path, cap, None).map_err(Unread::into_reason)
}

/// As [`read_capped`] for a gate: the read stops at `deadline`, between chunks.
pub fn read_capped_by(
    task: &Task,
    path: &Path,
    cap: u64,
    deadline: &Deadline<'_>,
) -> Result<Option<Vec<u8>>, Unread> {
    read_opened(task, path, cap, Some(deadline))
}

fn read_opened(
    task: &Task,
    path: &Path,
    cap: u64,
    deadline: Option<&Deadline<'_>>,
) -> Result<Option<Vec<u8>>, Unread> {
    let file = open_inside(task, path).map_err(Unread::Refused)?;
    let size = file.metadata().map_or(0, |meta| meta.len());
    read_up_to(file, cap, size, deadline)
}

impl Unread {
    /// Why, in words, for a reader with no deadline (which is never stopped).
    fn into_reason(self) -> String {
        match self {
            Unread::Refused(why) => why,
            Unread::Stopped(Stopped::TimedOut) => "timed out".into(),
            Unread::Stopped(Stopped::Cancelled) => "cancelled".into(),
        }
    }
}

/// Opens `path` if it really lies inside the task directory and is a regular file; the error
/// says why not. The path is resolved first, and the resolved one opened refusing every link
/// (`openat2` with `RESOLVE_NO_SYMLINKS`): a resolved path holds none, so a link met on the way
/// was swapped in by a worker racing the check, and opening through it could read outside.
/// Where the kernel has no `openat2`, the resolved path is opened as it is.
pub fn open_inside(task: &Task, path: &Path) -> Result<File, String> {
    use nix::fcntl::{AT_FDCWD, OFlag, OpenHow, ResolveFlag, openat2};
    let real = path.canonicalize().map_err(|err| err.to_string())?;
    if !real.starts_with(&task.dir) {
        return Err("it points outside the task directory; it was not read".into());
    }
    let how = OpenHow::new()
        .flags(OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC | OFlag::O_NOCTTY)
        .resolve(ResolveFlag::RESOLVE_NO_SYMLINKS | ResolveFlag::RESOLVE_NO_MAGICLINKS);
    let file = match openat2(AT_FDCWD, &real, how) {
        Ok(fd) => File::from(fd),
        Err(nix::errno::Errno::ENOSYS) => {
            return validator_process::files::open(&real, validator_process::files::Links::Refuse)
                .map_err(|err| err.to_string());
        }
        Err(nix::errno::Errno::ELOOP) => {
            return Err("it was replaced by a link while being checked; it was not read".into());
        }
        Err(errno) => return Err(io::Error::from(errno).to_string()),
    };
    match file.metadata() {
        Ok(meta) if meta.is_file() => Ok(file),
        Ok(_) => Err("not a regular file".into()),
        Err(err) => Err(err.to_string()),
    }
}

/// Reads at most `cap` bytes. `size`, the regular file's length from the `fstat` just made
/// (0 if unknown), sizes the buffer, and a file up to a chunk long that gives exactly that many
/// bytes in one read is taken as read whole: a read of a regular file comes up short only at its
/// end, so the usual second read, which would return 0, is saved. A file that grew since still
/// cannot give more than `cap`. A longer file is read a chunk at a time, `deadline` asked
/// before each.
fn read_up_to(
    mut file: File,
    cap: u64,
    size: u64,
    deadline: Option<&Deadline<'_>>,
) -> Result<Option<Vec<u8>>, Unread> {
    stop_at(deadline)?;
    if size > 0 && size <= cap && size <= CHUNK {
        let mut bytes = vec![
            0;
            usize::try_from(size)
                .unwrap_or(usize::MAX)
                .saturating_add(1)
        ];
        let first = file
            .read(&mut bytes)
            .map_err(|err| Unread::Refused(err.to_string()))?;
        if first as u64 == size {
            bytes.truncate(first);
            return Ok(Some(bytes));
        }
        bytes.truncate(first);
        return finish_reading(file, cap, bytes, deadline);
    }
    let room = usize::try_from(size.min(cap).saturating_add(1)).unwrap_or(usize::MAX);
    finish_reading(file, cap, Vec::with_capacity(room), deadline)
}

/// Reads the rest of `file` after `bytes`, up to one byte past `cap` in all, a chunk at a time.
fn finish_reading(
    mut file: File,
    cap: u64,
    mut bytes: Vec<u8>,
    deadline: Option<&Deadline<'_>>,
) -> Result<Option<Vec<u8>>, Unread> {
    let limit = cap.saturating_add(1);
    loop {
        let left = limit.saturating_sub(bytes.len() as u64);
        if left == 0 {
            break;
        }
        stop_at(deadline)?;
        let want = left.min(CHUNK);
        let got = (&mut file)
            .take(want)
            .read_to_end(&mut bytes)
            .map_err(|err: io::Error| Unread::Refused(err.to_string()))?;
        if (got as u64) < want {
            break;
        }
    }
    if bytes.len() as u64 > cap {
        return Ok(None);
    }
    Ok(Some(bytes))
}

fn stop_at(deadline: Option<&Deadline<'_>>) -> Result<(), Unread> {
    deadline.map_or(Ok(()), |deadline| deadline.check().map_err(Unread::Stopped))
}

/// Reads many files of one task directory, held open: each file is opened relative to it with
/// `openat2(RESOLVE_BENEATH)`, one system call that the kernel refuses to resolve outside the
/// directory (no `..` or link out, absolute or relative), where canonicalising first costs a
/// call per path component. What it refuses, or a kernel without `openat2`, goes the checked
/// way of [`read_capped`], which gives the reason.
pub struct Reader<'a> {
    task: &'a Task,
    dir: Option<std::os::fd::OwnedFd>,
}

impl<'a> Reader<'a> {
    pub fn new(task: &'a Task) -> Self {
        use nix::fcntl::{OFlag, open};
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        let dir = open(&task.dir, flags, nix::sys::stat::Mode::empty()).ok();
        Reader { task, dir }
    }

    /// As [`read_capped`] for `path`, a file found in the task directory, with no deadline
    /// (the unit tests' reading; every gate reads by its deadline).
    #[cfg(test)]
    pub fn read_capped(&self, path: &Path, cap: u64) -> Result<Option<Vec<u8>>, String> {
        self.read(path, cap, None).map_err(Unread::into_reason)
    }

    /// As [`Reader::read_capped`] for a gate: the read stops at `deadline`, between chunks.
    pub fn read_capped_by(
        &self,
        path: &Path,
        cap: u64,
        deadline: &Deadline<'_>,
    ) -> Result<Option<Vec<u8>>, Unread> {
        self.read(path, cap, Some(deadline))
    }

    fn read(
        &self,
        path: &Path,
        cap: u64,
        deadline: Option<&Deadline<'_>>,
    ) -> Result<Option<Vec<u8>>, Unread> {
        match self.open_beneath(path) {
            Some(Ok((file, size))) => read_up_to(file, cap, size, deadline),
            Some(Err(not_regular)) => Err(Unread::Refused(not_regular.to_string())),
            None => read_opened(self.task, path, cap, deadline),
        }
    }

    /// The opened file and its length if it is inside the directory; an error if it is there but not a regular
    /// file; `None` when the fast way cannot tell.
    fn open_beneath(&self, path: &Path) -> Option<io::Result<(File, u64)>> {
        use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat2};
        let dir = self.dir.as_ref()?;
        let rel = path.strip_prefix(&self.task.dir).ok()?;
        let how = OpenHow::new()
            .flags(OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC | OFlag::O_NOCTTY)
            .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_MAGICLINKS);
        let file = File::from(openat2(dir, rel, how).ok()?);
        Some(match file.metadata() {
            Ok(meta) if meta.is_file() => Ok((file, meta.len())),
            Ok(_) => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file",
            )),
            Err(err) => Err(err),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_look_stops_at_its_deadline_or_its_cancel_and_a_long_read_reads_whole_within_it() {
        let dir = tempfile::tempdir().unwrap();
        // Past a chunk and not a multiple of one, so the last chunk is short.
        let long: Vec<u8> = (0..CHUNK * 2 + 12_345).map(|n| (n % 251) as u8).collect();
        std::fs::write(dir.path().join("long"), &long).unwrap();
        let task = Task::new("t", dir.path()).unwrap();
        let path = dir.path().join("long");
        let later = Deadline::new(Instant::now() + Duration::from_secs(600), None);
        let passed = Deadline::new(Instant::now(), None);

        assert_eq!(list_by(&task, &later).unwrap().files.len(), 1);
        assert_eq!(list_by(&task, &passed).err(), Some(Stopped::TimedOut));
        let reader = Reader::new(&task);
        let whole = Ok(Some(long.clone()));
        assert_eq!(reader.read_capped_by(&path, u64::MAX, &later), whole);
        assert_eq!(read_capped_by(&task, &path, u64::MAX, &later), whole);
        assert_eq!(
            read_capped(&task, &path, long.len() as u64),
            Ok(Some(long.clone()))
        );
        assert_eq!(read_capped(&task, &path, long.len() as u64 - 1), Ok(None));
        assert_eq!(
            reader.read_capped_by(&path, u64::MAX, &passed),
            Err(Unread::Stopped(Stopped::TimedOut))
        );

        let cancel = Cancel::default();
        let cancelled = Deadline::new(Instant::now() + Duration::from_secs(600), Some(&cancel));
        assert!(cancelled.check().is_ok());
        cancel.cancel();
        assert_eq!(cancelled.check(), Err(Stopped::Cancelled));
        assert_eq!(
            list_to_depth_by(&task, Some(1), &cancelled).err(),
            Some(Stopped::Cancelled)
        );
    }

    #[test]
    fn lists_files_and_refuses_links_that_leave() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/.git")).unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".git/config"), "x").unwrap();
        std::fs::write(dir.path().join("src/a.rs"), "fn a() {}").unwrap();
        symlink(outside.path().join("secret"), dir.path().join("leak")).unwrap();
        symlink(dir.path().join("src/a.rs"), dir.path().join("alias.rs")).unwrap();
        symlink(dir.path(), dir.path().join("loop")).unwrap();
        let task = Task::new("t", dir.path()).unwrap();

        let listing = list(&task);
        let names: Vec<_> = listing.files.iter().map(|e| e.rel.as_str()).collect();
        assert_eq!(names, ["alias.rs", "src/a.rs"]);
        assert_eq!(listing.escaping_links, ["leak"]);
        assert!(resolve_inside(&task, "leak").is_err());
        assert!(resolve_inside(&task, "../x").is_err());
        assert!(read_capped(&task, &dir.path().join("leak"), 10).is_err());
        assert_eq!(
            read_capped(&task, &dir.path().join("src/a.rs"), 3),
            Ok(None)
        );

        // The held-open reader agrees, whether its fast way or the checked one answers.
        std::fs::create_dir_all(dir.path().join("sub")).unwrap();
        symlink("../src/a.rs", dir.path().join("sub/rel.rs")).unwrap();
        symlink(
            "../../../../../../../../etc/hostname",
            dir.path().join("sub/up"),
        )
        .unwrap();
        nix::unistd::mkfifo(&dir.path().join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let reader = Reader::new(&task);
        let a = Ok(Some(b"fn a() {}".to_vec()));
        for name in ["src/a.rs", "alias.rs", "sub/rel.rs"] {
            assert_eq!(reader.read_capped(&dir.path().join(name), 100), a, "{name}");
        }
        assert_eq!(
            reader.read_capped(&dir.path().join("src/a.rs"), 3),
            Ok(None)
        );
        for refused in ["leak", "sub/up", "fifo", "missing"] {
            assert!(
                reader.read_capped(&dir.path().join(refused), 100).is_err(),
                "{refused}"
            );
        }
    }
}
