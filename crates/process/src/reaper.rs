//! What a command leaves behind when it ends. A process group is not enough: a command can
//! `setsid` out of it, and clear its environment so the watcher's mark does not find it. Two
//! things the kernel offers close that:
//!
//! - validator is the subreaper of what it starts (`PR_SET_CHILD_SUBREAPER`, set by the front
//!   end): whatever a command leaves running is re-parented to validator when its parent dies,
//!   so every process validator did not start itself, among its children, was left behind by a
//!   command. After each command ends, those are killed through a pidfd (which names exactly
//!   that process, so a pid reused meanwhile is never hit) and reaped. One that still belongs to
//!   a command that is running is left to it: gates of a `group:` run at once, and one's end must
//!   not take what another is still using (a test's daemon). It belongs to that command if it
//!   carries the command's mark (every front end marks its commands, see
//!   `process::MARK_VAR`), is in the command's process group, or is in the command's cgroup.
//!   One that cleared its environment and left its group, where commands get no cgroup
//!   (`check`, `hook`, a watcher that cannot make one), cannot be told from any other leftover:
//!   it is killed when the next command ends, even one of a sibling gate.
//! - under a watcher, where a cgroup (v2) can be made beside validator's own, each command runs
//!   in a cgroup of its own, and its end kills the whole cgroup (`cgroup.kill`); a watcher that
//!   was killed leaves the cgroups, named by its mark, to the next, which kills them whole.
//!
//! The set of commands running is the one piece of process-wide state here, as being a
//! subreaper is a property of the process: every command is started through
//! [`crate::command`], which registers it before anyone can look for adopted processes.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use nix::libc;

/// The environment variable that marks every process started under a marked [`Cancel`] (every
/// front end's), as `<mark>.<n>` for its n-th command: inherited by all a command starts, it
/// tells which running command a process re-parented to validator belongs to (so one gate's end
/// never kills another's; see `reaper`), lets the next watcher find what this one left running
/// if it was killed without a chance to kill its gates, and a command killed at its deadline
/// what escaped its group ([`kill_marked`]).
pub const MARK_VAR: &str = "VALIDATOR_WATCHER";

/// Commands started and not yet waited for, by pid (each leads a process group of that id).
static RUNNING: Mutex<Option<HashMap<i32, Running>>> = Mutex::new(None);

/// What tells a running command's processes from others.
struct Running {
    mark: Option<String>,
    /// The cgroup it runs in, as `/proc/<pid>/cgroup` names it (`0::<this>`).
    cgroup: Option<String>,
}

/// Held shared while a command is spawned and registered, exclusively while adopted processes
/// are sought, so a command between its fork and its registration is never taken for one.
static SPAWNING: RwLock<()> = RwLock::new(());

/// Whether this process is a subreaper: only then is a child it did not start one a command
/// left (a library user may have children of its own).
static SUBREAPER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes this process the subreaper of what it starts (for the front ends: `watch`, `check`,
/// `hook`). Returns whether the kernel agreed.
pub fn become_subreaper() -> bool {
    // SAFETY: a plain system call on integers.
    let agreed = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 };
    SUBREAPER.store(agreed, std::sync::atomic::Ordering::SeqCst);
    agreed
}

fn running() -> std::sync::MutexGuard<'static, Option<HashMap<i32, Running>>> {
    RUNNING.lock().unwrap_or_else(|p| p.into_inner())
}

/// Held while one command is spawned; [`Spawning::started`] registers it.
pub struct Spawning(#[allow(dead_code)] std::sync::RwLockReadGuard<'static, ()>);

/// Whether this process ever started a command: a subreaper adopts only its descendants, so
/// one that started none has nothing to reap (and a tool hook's answer skips the look).
static EVER_SPAWNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

impl Spawning {
    pub fn begin() -> Spawning {
        EVER_SPAWNED.store(true, std::sync::atomic::Ordering::SeqCst);
        Spawning(SPAWNING.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// Registers the command that was just spawned as `pid`, carrying `mark`, in `cgroup`.
    pub fn started(self, pid: i32, mark: Option<&str>, cgroup: Option<&Cgroup>) {
        running().get_or_insert_with(HashMap::new).insert(
            pid,
            Running {
                mark: mark.map(str::to_owned),
                cgroup: cgroup.map(|cgroup| cgroup.membership.clone()),
            },
        );
    }
}

/// The command `pid` has been waited for.
pub fn finished(pid: i32) {
    if let Some(map) = running().as_mut() {
        map.remove(&pid);
    }
}

/// Kills and reaps every child of this process that it did not start itself (so: what a
/// command left behind, re-parented here), except those that belong to a command still
/// running ([`Owners`]). Returns how many there were. Cheap when there are none: one read per
/// thread.
pub fn reap_adopted() -> usize {
    if !SUBREAPER.load(std::sync::atomic::Ordering::SeqCst)
        || !EVER_SPAWNED.load(std::sync::atomic::Ordering::SeqCst)
    {
        return 0;
    }
    let _exclusive = SPAWNING.write().unwrap_or_else(|p| p.into_inner());
    let own = std::process::id() as i32;
    let mut reaped = 0;
    // Killing one re-parents its own children here: look again until none are left (bounded,
    // for a tree that forks as fast as it is killed).
    for _ in 0..100 {
        let owners = Owners::now();
        let adopted: Vec<i32> = children(own)
            .into_iter()
            .filter(|pid| !owners.started.contains(pid))
            .filter(|pid| !owners.own(*pid))
            .collect();
        if adopted.is_empty() {
            break;
        }
        for pid in adopted {
            if kill_and_reap(pid, own) {
                reaped += 1;
            }
        }
    }
    reaped
}

/// What the commands running now are told by: their pids (which are their process groups'
/// ids), their marks, their cgroups.
struct Owners {
    started: Vec<i32>,
    marks: Vec<String>,
    cgroups: Vec<String>,
}

impl Owners {
    fn now() -> Owners {
        let guard = running();
        let commands = guard.iter().flat_map(HashMap::iter);
        Owners {
            started: commands.clone().map(|(pid, _)| *pid).collect(),
            marks: commands
                .clone()
                .filter_map(|(_, command)| command.mark.clone())
                .collect(),
            cgroups: commands
                .filter_map(|(_, command)| command.cgroup.clone())
                .collect(),
        }
    }

    /// Whether process `pid` belongs to a running command: it carries the command's mark (or
    /// one made under it), is in its process group (a process cannot join a group of another
    /// session, and commands never leave validator's), or is in its cgroup (or one below).
    fn own(&self, pid: i32) -> bool {
        if self.started.is_empty() {
            return false;
        }
        stat_field(pid, 2).is_some_and(|group| self.started.contains(&group))
            || carries_a_mark_of(pid, &self.marks)
            || in_a_cgroup_of(pid, &self.cgroups)
    }
}

/// Whether process `pid` is in one of `cgroups` or below one (`/proc/<pid>/cgroup`'s `0::` line).
fn in_a_cgroup_of(pid: i32, cgroups: &[String]) -> bool {
    if cgroups.is_empty() {
        return false;
    }
    let Ok(membership) = std::fs::read_to_string(format!("/proc/{pid}/cgroup")) else {
        return false;
    };
    membership
        .lines()
        .filter_map(|line| line.strip_prefix("0::"))
        .any(|path| cgroups.iter().any(|cgroup| is_in_or_below(path, cgroup)))
}

/// Whether the cgroup `path` is `cgroup` or one below it.
fn is_in_or_below(path: &str, cgroup: &str) -> bool {
    path.strip_prefix(cgroup)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// The children of process `pid`, from each of its threads' `children` list (or, on a kernel
/// without those, from every process's parent).
fn children(pid: i32) -> Vec<i32> {
    let mut found = Vec::new();
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task"));
    let mut listed = false;
    for task in tasks.into_iter().flatten().flatten() {
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            listed = true;
            found.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok()),
            );
        }
    }
    if !listed {
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(child) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
                continue;
            };
            if parent_of(child) == Some(pid) {
                found.push(child);
            }
        }
    }
    found.sort_unstable();
    found.dedup();
    found
}

/// The parent of `pid`.
/// The parent of process `pid`, from `/proc/<pid>/stat`.
pub(crate) fn parent_of(pid: i32) -> Option<i32> {
    stat_field(pid, 1)
}

/// The `n`-th number after the command's name in `/proc/<pid>/stat` ("pid (comm) state ppid
/// pgrp ...": 1 is the parent, 2 the process group).
fn stat_field(pid: i32, n: usize) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, after_comm) = stat.rsplit_once(')')?;
    after_comm.split_whitespace().nth(n)?.parse().ok()
}

/// Whether `pid`'s environment carries one of `marks` (`VALIDATOR_WATCHER=<mark>`), or a mark
/// made under one (`<mark>.…`: what a validator run as that command marks its own commands
/// with, see `process::one_shot_mark`).
pub(crate) fn carries_a_mark_of(pid: i32, marks: &[String]) -> bool {
    if marks.is_empty() {
        return false;
    }
    let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let prefix = format!("{MARK_VAR}=");
    environ.split(|&b| b == 0).any(|entry| {
        entry
            .strip_prefix(prefix.as_bytes())
            .is_some_and(|value| marks.iter().any(|mark| is_under(value, mark.as_bytes())))
    })
}

/// Whether the mark `value` is `mark` or one made under it (`<mark>.…`).
fn is_under(value: &[u8], mark: &[u8]) -> bool {
    value
        .strip_prefix(mark)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(b"."))
}

/// Kills the process `pid` if it is still a child of `own`, through a pidfd, and reaps it.
fn kill_and_reap(pid: i32, own: i32) -> bool {
    // SAFETY: plain system calls; the descriptor is owned once the call returns it.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        // A kernel before 5.3: by pid, checked just before.
        if parent_of(pid) != Some(own) {
            return false;
        }
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::SIGKILL);
        let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None);
        return true;
    }
    // SAFETY: `fd` was just returned by pidfd_open and is owned here alone.
    let pidfd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    // The pidfd names the process that had `pid` when it was opened; if that is no longer our
    // child, the pid was reused and is none of ours.
    if parent_of(pid) != Some(own) {
        return false;
    }
    // SAFETY: a system call on an open pidfd.
    unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            libc::SIGKILL,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        );
    }
    let _ = nix::sys::wait::waitid(
        nix::sys::wait::Id::PIDFd(std::os::fd::AsFd::as_fd(&pidfd)),
        nix::sys::wait::WaitPidFlag::WEXITED,
    );
    true
}

// -------------------------------------------------------------------------------------------
// A cgroup per command
// -------------------------------------------------------------------------------------------

/// The cgroup (v2) validator runs in, if it may make cgroups in it.
struct OwnCgroup {
    dir: PathBuf,
    /// As `/proc/<pid>/cgroup` names it: the path below the hierarchy's root.
    path: String,
}

/// Validator's cgroup, found once.
fn own_cgroup() -> Option<&'static OwnCgroup> {
    static OWN: OnceLock<Option<OwnCgroup>> = OnceLock::new();
    OWN.get_or_init(|| {
        #[cfg(debug_assertions)]
        if std::env::var_os("VALIDATOR_DEBUG_NO_CGROUPS").is_some() {
            return None;
        }
        let mount = cgroup2_mount()?;
        let membership = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let path = membership
            .lines()
            .find_map(|line| line.strip_prefix("0::"))?;
        let dir = mount.join(path.trim_start_matches('/'));
        // Commands can be moved into a cgroup made here only if it is writable and has no
        // controller in `cgroup.subtree_control` that would forbid processes beside them.
        let probe = dir.join(format!("validator-probe-{}", std::process::id()));
        std::fs::create_dir(&probe).ok()?;
        let kill_file = probe.join("cgroup.kill").exists();
        let _ = std::fs::remove_dir(&probe);
        kill_file.then(|| OwnCgroup {
            dir,
            path: path.trim_end_matches('/').to_owned(),
        })
    })
    .as_ref()
}

/// Where the cgroup2 hierarchy is mounted (`/sys/fs/cgroup`, or beside v1 on a hybrid system).
fn cgroup2_mount() -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mounts.lines().find_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        (after.split_whitespace().next() == Some("cgroup2"))
            .then(|| before.split_whitespace().nth(4).map(PathBuf::from))
            .flatten()
    })
}

/// A cgroup one command runs in: made before it starts, killed and removed when it ends.
pub struct Cgroup {
    dir: PathBuf,
    /// `cgroup.procs`, open for the child to write itself into between fork and exec.
    procs: File,
    /// As `/proc/<pid>/cgroup` names it (`0::<this>`).
    membership: String,
}

/// Cgroups whose command ended, emptied, kept for the next command (making and removing one
/// costs a quarter of a millisecond): each with the prefix of its name.
static POOL: Mutex<Vec<(String, Cgroup)>> = Mutex::new(Vec::new());

fn pool() -> std::sync::MutexGuard<'static, Vec<(String, Cgroup)>> {
    POOL.lock().unwrap_or_else(|p| p.into_inner())
}

impl Cgroup {
    /// An empty cgroup beside validator's, named `<prefix>-<n>`: one a command before left, or
    /// a new one; `None` where none can be made.
    pub fn new(prefix: &str) -> Option<Cgroup> {
        let own = own_cgroup()?;
        {
            let mut pool = pool();
            if let Some(at) = pool.iter().position(|(kept, _)| kept == prefix) {
                return Some(pool.swap_remove(at).1);
            }
        }
        static NUMBER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NUMBER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("{prefix}-{n}");
        let dir = own.dir.join(&name);
        std::fs::create_dir(&dir).ok()?;
        match std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.procs"))
        {
            Ok(procs) => Some(Cgroup {
                dir,
                procs,
                membership: format!("{}/{name}", own.path),
            }),
            Err(_) => {
                let _ = std::fs::remove_dir(&dir);
                None
            }
        }
    }

    /// The descriptor the child writes `0` to, joining the cgroup ([`join`]).
    pub fn procs_fd(&self) -> i32 {
        self.procs.as_raw_fd()
    }
}

/// A command's cgroup, once the command ended: everything in it is killed, and it is kept for
/// the next command once empty ([`release_cgroups`] removes the kept ones).
pub fn finish(cgroup: Cgroup, prefix: &str) {
    if empty_out(&cgroup.dir) {
        pool().push((prefix.to_owned(), cgroup));
    }
}

/// Dropped without [`finish`] (the command never started, or the pool is let go): everything
/// in the cgroup is killed, and the cgroup removed.
impl Drop for Cgroup {
    fn drop(&mut self) {
        kill_cgroup(&self.dir);
    }
}

/// Removes the cgroups kept for later commands (at the end of `check`, `hook`, `watch`).
pub fn release_cgroups() {
    let kept = std::mem::take(&mut *pool());
    drop(kept);
}

/// The prefix of a command's cgroup's name: `validator-<mark>`, so the next watcher finds what
/// a killed one left (`validator-<pid>` for a command without a mark).
pub fn cgroup_prefix(run_mark: Option<&str>) -> String {
    match run_mark.and_then(|mark| mark.rsplit_once('.')) {
        Some((mark, _)) => format!("validator-{mark}"),
        None => format!("validator-{}", std::process::id()),
    }
}

/// Writes `0` (the writer itself) to `cgroup.procs`. Called in the child between fork and
/// exec: one system call.
pub fn join(procs: i32) -> io::Result<()> {
    // SAFETY: a write of one static byte to an open descriptor.
    let written = unsafe { libc::write(procs, b"0".as_ptr().cast(), 1) };
    if written == 1 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn kill_cgroup(dir: &Path) {
    empty_out(dir);
    let _ = std::fs::remove_dir(dir);
}

/// Kills everything in the cgroup at `dir` and waits (two seconds at most) until it is empty;
/// says whether it is.
fn empty_out(dir: &Path) -> bool {
    let populated = || {
        std::fs::read_to_string(dir.join("cgroup.events"))
            .map(|events| events.lines().any(|line| line == "populated 1"))
            .unwrap_or(false)
    };
    if !populated() {
        return true;
    }
    let _ = std::fs::write(dir.join("cgroup.kill"), "1");
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        if !populated() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    false
}

/// Kills the cgroups a killed watcher left, named `<prefix>-…` beside validator's own;
/// returns how many processes were in them.
pub fn kill_left_cgroups(prefix: &str) -> usize {
    let Some(own) = own_cgroup() else {
        return 0;
    };
    let mut killed = 0;
    for entry in std::fs::read_dir(&own.dir).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('-'))
        {
            killed += std::fs::read_to_string(entry.path().join("cgroup.procs"))
                .map(|procs| procs.lines().count())
                .unwrap_or(0);
            kill_cgroup(&entry.path());
        }
    }
    killed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_covers_itself_and_the_marks_made_under_it_only() {
        assert!(is_under(b"m.3", b"m.3"));
        assert!(is_under(b"m.3.123-ab.0", b"m.3"));
        assert!(!is_under(b"m.30", b"m.3"));
        assert!(!is_under(b"m", b"m.3"));
        assert!(!is_under(b"xm.3", b"m.3"));
    }

    #[test]
    fn a_cgroup_holds_its_own_processes_and_those_of_the_cgroups_below_it() {
        assert!(is_in_or_below("/a/validator-m-1", "/a/validator-m-1"));
        assert!(is_in_or_below(
            "/a/validator-m-1/made-by-it",
            "/a/validator-m-1"
        ));
        assert!(!is_in_or_below("/a/validator-m-10", "/a/validator-m-1"));
        assert!(!is_in_or_below("/a", "/a/validator-m-1"));
    }

    #[test]
    fn the_process_group_of_this_process_is_read_from_proc() {
        assert_eq!(
            stat_field(std::process::id() as i32, 2),
            Some(nix::unistd::getpgrp().as_raw())
        );
    }

    #[test]
    fn the_parent_of_this_process_is_read_from_proc() {
        assert_eq!(
            parent_of(std::process::id() as i32),
            Some(std::os::unix::process::parent_id() as i32)
        );
    }
}
