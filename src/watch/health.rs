//! Whether a watcher is alive and making progress, for `validator status --health` (a
//! container's HEALTHCHECK, a Kubernetes probe). A running watcher holds `<state>/watcher.json`:
//! it records who it is (pid, start, rules file), stays locked (`flock`) for the watcher's
//! lifetime, and its mtime is the heartbeat the main loop touches on a slow timer. A clean exit
//! removes it. The kernel drops the lock when the process dies however it dies, so a record
//! left by `kill -9` reads as a dead watcher, never a live one, even if its pid was reused.
//! The watcher's claim on its state directory is a second lock, on the directory itself: one
//! watcher per state, which is what makes killing a predecessor's orphaned gates safe
//! ([`super::orphans`]). A lock is on the directory the path named when it was taken: deleted
//! (and made again), the path names another, and the watcher no longer holds its state
//! ([`Registration::lost`]); it stops. The name it holds besides ([`super::claim`]) keeps a
//! second watcher off the directory made again until then.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

use super::claim::{Claim, Name, Named, take_name};
use validator::config::Rules;
use validator::error::Error;

pub const FILE_NAME: &str = "watcher.json";

/// How often the main loop touches the heartbeat: `watch --heartbeat`'s default, which clap
/// spells `15s`. Slow on purpose: an idle watcher wakes only for this (a few microseconds, four
/// times a minute).
#[cfg(test)]
const INTERVAL: Duration = Duration::from_secs(15);

/// Heartbeats missed before a live watcher counts as wedged.
const MISSED_BEATS: u64 = 4;

/// A record is small; anything bigger was not written by a watcher.
const MAX_RECORD: u64 = 64 * 1024;

/// The room the record takes from the start, written out so its blocks are the file's.
const RECORD_ROOM: usize = 16 * 1024;

/// Tasks whose unwritten verdict the record names at most (the rest are counted).
const RECORD_UNPUBLISHED: usize = 20;

/// How long a starting watcher retries a lock held by someone else: a health probe holds it
/// for microseconds, another watcher for good.
const LOCK_RETRIES: u32 = 40;
const LOCK_RETRY_PAUSE: Duration = Duration::from_millis(50);

/// What `watcher.json` says about the watcher holding it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Record {
    pub pid: u32,
    pub started_at: String,
    /// The rules file as the watcher was given it, made absolute (not canonical: a Kubernetes
    /// ConfigMap swaps the file behind a symlink, and the watcher follows).
    pub config: PathBuf,
    pub version: String,
    pub heartbeat_secs: u64,
    /// What keeps the watcher from judging although its main loop runs: a worker thread that
    /// is gone or stuck, a verdict it cannot write. Any makes it unhealthy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    /// Tasks judged whose verdict the watcher cannot write (a full or read-only disk), and why;
    /// `status` shows them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unpublished: BTreeMap<String, String>,
    /// What speculative runs cost and gave, as of the last heartbeat; `status` shows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speculation: Option<super::metrics::Tally>,
}

/// The running watcher's claim on its state directory and its record. Dropping it (any return
/// from `watch`) removes the record and releases both locks.
pub struct Registration {
    /// An exclusive `flock` on the state directory itself: what makes this watcher the only
    /// one. Held on the directory, not the record, because a record can be deleted from under
    /// its watcher (`rm state/*`) and a new one created and locked beside it. `None` on a file
    /// system without locks.
    claim: Option<Flock<File>>,
    /// The name that a directory made again at the state's path cannot free (`None` where
    /// there are no such names), so no second watcher claims that one while this one runs.
    _name: Option<Name>,
    /// Whether the path still names the directory claimed: what every thread asks.
    check: Arc<Claim>,
    file: Held,
    path: PathBuf,
    record: Record,
    interval: Duration,
    next_beat: Instant,
}

/// The record's open file: locked, or (on a file system without locks) only open.
enum Held {
    Locked(Flock<File>),
    Unlocked(File),
}

impl Held {
    fn file(&self) -> &File {
        match self {
            Held::Locked(lock) => lock,
            Held::Unlocked(file) => file,
        }
    }
}

/// What a lock attempt met.
enum Attempt<T> {
    Taken(T),
    /// Someone else holds it.
    Busy,
    /// The file system does not do locks.
    Unsupported(File, Errno),
}

/// Takes an exclusive lock on `open()`'s file, retrying while it is busy: a health probe holds
/// the record for microseconds, and a watcher that was just killed may have been forking a
/// gate, whose child holds copies of its descriptors until it execs.
fn lock_retrying(mut open: impl FnMut() -> io::Result<File>) -> io::Result<Attempt<Flock<File>>> {
    let mut busy = 0;
    loop {
        match Flock::lock(open()?, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => return Ok(Attempt::Taken(lock)),
            Err((_, Errno::EWOULDBLOCK)) => {
                busy += 1;
                if busy >= LOCK_RETRIES {
                    return Ok(Attempt::Busy);
                }
                std::thread::sleep(LOCK_RETRY_PAUSE);
            }
            Err((file, errno)) => return Ok(Attempt::Unsupported(file, errno)),
        }
    }
}

/// Takes the state's name, retrying while it is busy for the same reason [`lock_retrying`]
/// does: a watcher just killed may have been forking a gate.
fn take_name_retrying(state: &Path) -> Named {
    let mut busy = 0;
    loop {
        match take_name(state) {
            Named::Busy if busy + 1 < LOCK_RETRIES => {
                busy += 1;
                std::thread::sleep(LOCK_RETRY_PAUSE);
            }
            named => return named,
        }
    }
}

/// Whether the record is opened to read one that exists, or to write it, made if missing.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Open {
    ToRead,
    ToWrite,
}

/// Opens the record without following a link or blocking on a FIFO planted in its place, and
/// only if it is a regular file.
fn open_record(path: &Path, open: Open) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let create = open == Open::ToWrite;
    let file = OpenOptions::new()
        .read(true)
        .write(create)
        .create(create)
        .truncate(false)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    Ok(file)
}

impl Registration {
    /// Claims the rules' state directory for this watcher: refused while another watcher holds
    /// it (two watchers on one state would count attempts twice and race on verdicts).
    /// `interval` is how often the main loop will beat (whole seconds, at least one).
    pub fn register(rules: &Rules, interval: Duration) -> Result<Self, Error> {
        let interval = Duration::from_secs(interval.as_secs().max(1));
        let record = Record {
            pid: std::process::id(),
            started_at: validator::timestamp::seconds(SystemTime::now()),
            config: std::path::absolute(&rules.path).unwrap_or_else(|_| rules.path.clone()),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            heartbeat_secs: interval.as_secs(),
            problems: Vec::new(),
            unpublished: BTreeMap::new(),
            speculation: None,
        };
        Self::claim(&rules.state, record, interval)
    }

    fn claim(state: &Path, record: Record, interval: Duration) -> Result<Self, Error> {
        let path = state.join(FILE_NAME);
        let write_err = |source| Error::Write {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(state).map_err(write_err)?;
        let dir_err = |source| Error::Write {
            path: state.to_path_buf(),
            source,
        };
        let (claim, claimed) = match lock_retrying(|| File::open(state)).map_err(dir_err)? {
            Attempt::Taken(lock) => {
                let claimed = identity(&lock);
                (Some(lock), claimed)
            }
            Attempt::Busy => {
                let holder = open_record(&path, Open::ToRead)
                    .ok()
                    .and_then(|file| read_record(&file))
                    .map(|r| {
                        format!(
                            " (pid {}, rules file {}, started {})",
                            r.pid,
                            r.config.display(),
                            r.started_at
                        )
                    })
                    .unwrap_or_default();
                return Err(Error::Watch {
                    path: state.to_path_buf(),
                    message: format!(
                        "another `validator watch`{holder} is running with this state directory\n  help: stop it first, or give each rules file its own `state:` directory"
                    ),
                });
            }
            Attempt::Unsupported(dir, errno) => {
                tracing::warn!(path = %state.display(), %errno, "cannot lock the state directory (a file system without locks?); a second watcher on it will not be refused, orphaned gates of a killed watcher will not be killed, and health checks fall back to the pid");
                (None, identity(&dir))
            }
        };
        let name = match take_name_retrying(state) {
            Named::Held(name) => Some(name),
            Named::Unsupported => None,
            Named::Busy => {
                return Err(Error::Watch {
                    path: state.to_path_buf(),
                    message: "another `validator watch` still runs on the state directory this path named before it was deleted or replaced; it stops when it notices (at its next message, run or heartbeat), and until then this one is refused\n  help: start this one again once that one has stopped (a supervisor's restart does)".to_owned(),
                });
            }
        };
        let mut registration = Registration {
            claim,
            _name: name,
            check: Arc::new(Claim::new(state, claimed)),
            file: open_locked_record(&path).map_err(write_err)?,
            path: path.clone(),
            record,
            interval,
            next_beat: Instant::now() + interval,
        };
        registration.write_record().map_err(write_err)?;
        Ok(registration)
    }

    /// Writes the record over the old one in place, padded with spaces (JSON whitespace) to
    /// [`RECORD_ROOM`] or the file's length: the file keeps the disk blocks it was given at
    /// start, so on a full disk the watcher can still say what is wrong.
    fn write_record(&mut self) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        let mut text = serde_json::to_string_pretty(&self.record).unwrap_or_default() + "\n";
        let file = self.file.file();
        let room = file.metadata()?.len().max(RECORD_ROOM as u64) as usize;
        if text.len() < room {
            text.push_str(&" ".repeat(room - text.len()));
        }
        file.write_all_at(text.as_bytes(), 0)?;
        if (text.len() as u64) < file.metadata()?.len() {
            file.set_len(text.len() as u64)?;
        }
        Ok(())
    }

    /// Says in the record what keeps the watcher from judging (empty: nothing), so that
    /// `status --health` reports it; written only when it changed.
    pub fn report(
        &mut self,
        problems: Vec<String>,
        unpublished: BTreeMap<String, String>,
        speculation: Option<super::metrics::Tally>,
    ) {
        if problems == self.record.problems
            && unpublished == self.record.unpublished
            && speculation == self.record.speculation
        {
            return;
        }
        self.record.speculation = speculation;
        for problem in problems
            .iter()
            .filter(|p| !self.record.problems.contains(p))
        {
            tracing::error!("{problem}");
        }
        self.record.problems = problems;
        let more = unpublished.len().saturating_sub(RECORD_UNPUBLISHED);
        self.record.unpublished = unpublished.into_iter().take(RECORD_UNPUBLISHED).collect();
        if more > 0 {
            self.record
                .problems
                .push(format!("{more} more tasks' verdicts are not written"));
        }
        if let Err(err) = self.write_record() {
            tracing::warn!(path = %self.path.display(), %err, "cannot write the watcher record");
        }
    }

    /// Whether the state directory is locked to this watcher alone (not on a file system
    /// without locks), so what carries its mark can only be a dead predecessor's.
    pub fn exclusive(&self) -> bool {
        self.claim.is_some()
    }

    /// How long the main loop may block before the next heartbeat is due.
    pub fn until_due(&self) -> Duration {
        self.next_beat.saturating_duration_since(Instant::now())
    }

    /// Whether the heartbeat is due: one clock read, cheap enough for every message.
    pub fn due(&self) -> bool {
        Instant::now() >= self.next_beat
    }

    /// Why this watcher no longer holds its state directory, if it does not ([`Claim::lost`]).
    /// One `stat`: cheap enough for every message the main loop takes.
    pub fn lost(&self) -> Option<String> {
        self.check.lost()
    }

    /// The claim as the other threads ask after it: each worker before it judges and before it
    /// publishes.
    pub fn shared_claim(&self) -> Arc<Claim> {
        Arc::clone(&self.check)
    }

    /// Whether the record names `task` among the verdicts not written: a verdict written since
    /// is then said at once, not at the next heartbeat.
    pub fn reports_unpublished(&self, task: &str) -> bool {
        self.record.unpublished.contains_key(task)
    }

    /// Touches the heartbeat; a record that was deleted or replaced is written again where
    /// health checks look (the claim on the directory never lapsed). Nothing once the claim is
    /// [`lost`](Self::lost): the record there is another watcher's to write.
    pub fn beat(&mut self) {
        self.next_beat = Instant::now() + self.interval;
        if self.lost().is_some() {
            return;
        }
        if !is_at(self.file.file(), &self.path) {
            match open_locked_record(&self.path) {
                Ok(file) => {
                    self.file = file;
                    match self.write_record() {
                        Ok(()) => {
                            tracing::info!(path = %self.path.display(), "watcher record written again")
                        }
                        Err(err) => {
                            tracing::warn!(path = %self.path.display(), %err, "cannot write the watcher record")
                        }
                    }
                }
                Err(err) => {
                    tracing::warn!(path = %self.path.display(), %err, "cannot write the watcher record again; health checks will report no watcher")
                }
            }
            return;
        }
        if let Err(err) = self.file.file().set_modified(SystemTime::now()) {
            tracing::warn!(path = %self.path.display(), %err, "cannot touch the heartbeat; health checks will report the watcher as wedged");
        }
    }
}

/// Creates (or takes over) the record at `path` and locks it for this watcher's lifetime.
/// Under the directory claim, the only other holder is a health probe, for microseconds.
fn open_locked_record(path: &Path) -> io::Result<Held> {
    loop {
        match lock_retrying(|| open_record(path, Open::ToWrite))? {
            // A watcher exiting cleanly removes the path after we opened it: the lock we hold
            // is then on a file nobody can find. Open the path again.
            Attempt::Taken(lock) if is_at(&lock, path) => return Ok(Held::Locked(lock)),
            Attempt::Taken(_) => continue,
            Attempt::Busy => {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    "the record stays locked by another process",
                ));
            }
            Attempt::Unsupported(file, _) => return Ok(Held::Unlocked(file)),
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // Removed while still locked, and only if the path is still ours.
        if is_at(self.file.file(), &self.path) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The device and inode of what `file` has open.
fn identity(file: &File) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    file.metadata().ok().map(|meta| (meta.dev(), meta.ino()))
}

/// Whether `path` names the very file `file` has open.
fn is_at(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(open), Ok(named)) => open.ino() == named.ino() && open.dev() == named.dev(),
        _ => false,
    }
}

fn read_record(mut file: &File) -> Option<Record> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.take(MAX_RECORD).read_to_string(&mut text).ok()?;
    serde_json::from_str(&text).ok()
}

/// The answer of `validator status --health`.
#[derive(Debug, Serialize)]
pub struct Health {
    pub healthy: bool,
    /// One line: what runs, or why it is not healthy.
    pub message: String,
    /// The record's path, when the rules file could be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watcher: Option<Record>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heartbeat_age_secs: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stale_after_secs: Option<u64>,
    /// What the kernel holds of the agents' commands on this machine (`tools.confine`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confinement: Option<String>,
}

impl Health {
    /// Not healthy, for `message` (made one line).
    pub fn unhealthy(message: impl AsRef<str>) -> Self {
        Health {
            healthy: false,
            message: one_line(message.as_ref()),
            record: None,
            watcher: None,
            heartbeat_age_secs: None,
            stale_after_secs: None,
            confinement: None,
        }
    }
}

/// Health of the watcher for the rules file at `config`. Reads the rules file once and the
/// record; never writes, never waits. A rules file that cannot be read is unhealthy too: the
/// watcher could not (re)start with it.
pub fn check_config(config: &Path) -> Health {
    match Rules::load(config) {
        Ok(rules) => {
            let mut health = check(&rules);
            let machine = validator::confine::Machine::probe();
            let mode = rules.tools.confine;
            if mode == validator::config::tools::Confine::Required
                && machine.landlock < validator::confine::ABI_NEEDED
            {
                health.healthy = false;
                health.message = format!("{}; {}", health.message, machine.describe(mode));
            }
            health.confinement = Some(machine.describe(mode));
            health
        }
        Err(err) => {
            let mut message = err.to_string();
            let mut source = std::error::Error::source(&err);
            while let Some(cause) = source {
                message = format!("{message}: {cause}");
                source = cause.source();
            }
            Health::unhealthy(message)
        }
    }
}

/// Whether a live watcher holds `rules`' state directory (it holds its record locked while it
/// runs); `Err` says why not, for a caller about to wait on one.
pub fn alive(rules: &Rules) -> Result<(), String> {
    let path = rules.state.join(FILE_NAME);
    let file = match open_record(&path, Open::ToRead) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            return Err(format!(
                "no watcher is running for {} ({} does not exist)",
                rules.path.display(),
                path.display()
            ));
        }
        Err(err) => return Err(format!("cannot read {}: {err}", path.display())),
    };
    match Flock::lock(file, FlockArg::LockSharedNonblock) {
        Err((_, Errno::EWOULDBLOCK)) => Ok(()),
        _ => Err(format!(
            "no watcher is running for {} (the one that wrote {} has ended)",
            rules.path.display(),
            path.display()
        )),
    }
}

/// The tasks whose verdict the live watcher of `rules` cannot write, and why (empty when no
/// watcher holds the record, or all is written).
pub fn unpublished(rules: &Rules) -> BTreeMap<String, String> {
    live_record(rules)
        .map(|r| r.unpublished)
        .unwrap_or_default()
}

/// What the running watcher's speculative runs cost and gave, as of its last heartbeat.
pub fn speculation(rules: &Rules) -> Option<super::metrics::Tally> {
    live_record(rules).and_then(|r| r.speculation)
}

/// The record of the watcher running on `rules`' state, if one runs.
fn live_record(rules: &Rules) -> Option<Record> {
    let file = open_record(&rules.state.join(FILE_NAME), Open::ToRead).ok()?;
    let record = read_record(&file);
    match Flock::lock(file, FlockArg::LockSharedNonblock) {
        // Held: the watcher that wrote it lives.
        Err((_, Errno::EWOULDBLOCK)) => record,
        _ => None,
    }
}

/// Health of the watcher for `rules`.
pub fn check(rules: &Rules) -> Health {
    let path = rules.state.join(FILE_NAME);
    let mut health = inspect(rules, &path);
    health.record = Some(path);
    health
}

fn inspect(rules: &Rules, path: &Path) -> Health {
    let file = match open_record(path, Open::ToRead) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            return Health::unhealthy(format!(
                "no watcher is running for {} ({} does not exist)",
                rules.path.display(),
                path.display()
            ));
        }
        Err(err) => {
            return Health::unhealthy(format!("cannot read {}: {err}", path.display()));
        }
    };
    let record = read_record(&file);
    let modified = file.metadata().and_then(|m| m.modified());
    let alive = match Flock::lock(file, FlockArg::LockSharedNonblock) {
        Err((_, Errno::EWOULDBLOCK)) => true,
        // Nobody holds it: the watcher that wrote it died without removing it. Our lock goes
        // with the file at the end of this arm.
        Ok(_) => false,
        Err(_) => record.as_ref().is_some_and(|r| pid_alive(r.pid)),
    };
    let who = record
        .as_ref()
        .map(|r| format!("pid {}, started {}", r.pid, r.started_at))
        .unwrap_or_else(|| "unknown pid".to_owned());
    if !alive {
        return Health {
            watcher: record,
            ..Health::unhealthy(format!(
                "the watcher ({who}) is gone without a clean exit (killed or crashed); {} is stale",
                path.display()
            ))
        };
    }
    // Locked but not yet written: a watcher in its first moments.
    let Some(record) = record else {
        return Health {
            healthy: true,
            message: format!("a watcher is starting ({})", path.display()),
            record: None,
            watcher: None,
            heartbeat_age_secs: None,
            stale_after_secs: None,
            confinement: None,
        };
    };
    live_watcher(rules, record, &who, modified)
}

/// Health of a watcher that holds its record (`who` it is): whether it runs these rules,
/// whether it reported problems, and how old its heartbeat (the record's `modified` time) is.
fn live_watcher(
    rules: &Rules,
    record: Record,
    who: &str,
    modified: io::Result<SystemTime>,
) -> Health {
    if !same_rules_file(&record.config, &rules.path) {
        return Health {
            watcher: Some(record.clone()),
            ..Health::unhealthy(format!(
                "the watcher using {} (pid {}) runs the rules file {}, not {}",
                rules.state.display(),
                record.pid,
                record.config.display(),
                rules.path.display()
            ))
        };
    }
    if !record.problems.is_empty() {
        return Health {
            watcher: Some(record.clone()),
            ..Health::unhealthy(format!(
                "the watcher ({who}) is running but cannot judge as it should: {}",
                record.problems.join("; ")
            ))
        };
    }
    let stale_after = record.heartbeat_secs.max(1) * MISSED_BEATS;
    // A clock set back makes the heartbeat look younger, never stale.
    let age = modified.ok().map(|m| {
        SystemTime::now()
            .duration_since(m)
            .unwrap_or_default()
            .as_secs()
    });
    let mut health = Health {
        healthy: true,
        message: String::new(),
        record: None,
        heartbeat_age_secs: age,
        stale_after_secs: Some(stale_after),
        confinement: None,
        watcher: None,
    };
    health.message = match age {
        Some(age) if age > stale_after => {
            health.healthy = false;
            format!(
                "the watcher ({who}) is running but its main loop has not made progress for {age}s (heartbeat every {}s, stale after {stale_after}s)",
                record.heartbeat_secs
            )
        }
        Some(age) => format!(
            "watcher {who}, rules file {}, heartbeat {age}s ago",
            record.config.display()
        ),
        None => format!(
            "watcher {who}, rules file {}, heartbeat age unknown",
            record.config.display()
        ),
    };
    health.watcher = Some(record);
    health
}

/// The same rules file, by absolute path (what the watcher recorded), else by what the paths
/// resolve to.
fn same_rules_file(recorded: &Path, ours: &Path) -> bool {
    let absolute = std::path::absolute(ours).unwrap_or_else(|_| ours.to_path_buf());
    absolute == recorded
        || matches!(
            (recorded.canonicalize(), ours.canonicalize()),
            (Ok(a), Ok(b)) if a == b
        )
}

/// Whether a process with this pid exists and is not a zombie. Only for file systems without
/// locks: a pid can be reused, a lock cannot outlive its holder.
fn pid_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    if nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_err() {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
        // No /proc (macOS): kill said it exists.
        Err(_) => true,
    }
}

/// An error's lines as one line: a health check's answer is read as one.
fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(dir: &Path) -> Rules {
        let path = dir.join("validator.yaml");
        std::fs::write(
            &path,
            "version: 1\nstate: state\npipelines:\n  - name: main\n    gates:\n      - {name: s, rule: status}\n",
        )
        .unwrap();
        Rules::load(&path).unwrap()
    }

    #[test]
    fn registered_is_healthy_and_dropped_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let rules = rules(dir.path());
        assert!(!check(&rules).healthy);
        let registration = Registration::register(&rules, INTERVAL).unwrap();
        let health = check(&rules);
        assert!(health.healthy, "{health:?}");
        assert_eq!(health.watcher.unwrap().pid, std::process::id());
        drop(registration);
        assert!(!rules.state.join(FILE_NAME).exists());
        assert!(check(&rules).message.starts_with("no watcher is running"));
    }

    #[test]
    fn a_second_registration_is_refused_while_the_first_holds() {
        let dir = tempfile::tempdir().unwrap();
        let rules = rules(dir.path());
        let _first = Registration::register(&rules, INTERVAL).unwrap();
        let err = Registration::register(&rules, INTERVAL)
            .err()
            .expect("refused");
        assert!(
            err.to_string().contains("another `validator watch`"),
            "{err}"
        );
    }

    #[test]
    fn a_deleted_record_does_not_let_a_second_watcher_in() {
        let dir = tempfile::tempdir().unwrap();
        let rules = rules(dir.path());
        let mut first = Registration::register(&rules, INTERVAL).unwrap();
        std::fs::remove_file(rules.state.join(FILE_NAME)).unwrap();
        let err = Registration::register(&rules, INTERVAL)
            .err()
            .expect("refused");
        assert!(
            err.to_string().contains("another `validator watch`"),
            "{err}"
        );
        assert!(first.exclusive());
        first.beat();
        let health = check(&rules);
        assert!(health.healthy, "{health:?}");
    }

    #[test]
    fn a_state_directory_deleted_or_made_again_is_a_lost_claim() {
        let dir = tempfile::tempdir().unwrap();
        let rules = rules(dir.path());
        let mut first = Registration::register(&rules, INTERVAL).unwrap();
        assert_eq!(first.lost(), None);
        std::fs::remove_dir_all(&rules.state).unwrap();
        assert!(first.lost().is_some());
        std::fs::create_dir(&rules.state).unwrap();
        let lost = first.lost().expect("lost");
        assert!(lost.contains("deleted or replaced"), "{lost}");
        // It writes no record into the directory it does not hold.
        first.beat();
        assert!(!rules.state.join(FILE_NAME).exists());
        // Nor does a second watcher claim the directory made again while the first lives.
        let refused = Registration::register(&rules, INTERVAL)
            .err()
            .expect("refused");
        assert!(refused.to_string().contains("still runs"), "{refused}");
        drop(first);
        let second = Registration::register(&rules, INTERVAL).unwrap();
        assert_eq!(second.lost(), None);
        assert!(check(&rules).healthy, "{:?}", check(&rules));
    }

    #[test]
    fn a_link_or_fifo_in_place_of_the_record_is_neither_followed_nor_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let rules = rules(dir.path());
        std::fs::create_dir_all(&rules.state).unwrap();
        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, "keep me").unwrap();
        std::os::unix::fs::symlink(&victim, rules.state.join(FILE_NAME)).unwrap();
        assert!(!check(&rules).healthy);
        assert!(Registration::register(&rules, INTERVAL).is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");

        std::fs::remove_file(rules.state.join(FILE_NAME)).unwrap();
        nix::unistd::mkfifo(&rules.state.join(FILE_NAME), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let health = check(&rules);
        assert!(!health.healthy);
        assert!(health.message.contains("not a regular file"), "{health:?}");
    }

    #[test]
    fn an_unlocked_record_is_a_dead_watcher() {
        let dir = tempfile::tempdir().unwrap();
        let rules = rules(dir.path());
        let registration = Registration::register(&rules, INTERVAL).unwrap();
        let text = std::fs::read(rules.state.join(FILE_NAME)).unwrap();
        drop(registration);
        // What `kill -9` leaves: the record, and no lock.
        std::fs::write(rules.state.join(FILE_NAME), text).unwrap();
        let health = check(&rules);
        assert!(!health.healthy);
        assert!(
            health.message.contains("gone without a clean exit"),
            "{health:?}"
        );
    }

    #[test]
    fn an_old_heartbeat_is_a_wedged_watcher() {
        let dir = tempfile::tempdir().unwrap();
        let rules = rules(dir.path());
        let _registration = Registration::register(&rules, INTERVAL).unwrap();
        let record = File::options()
            .write(true)
            .open(rules.state.join(FILE_NAME))
            .unwrap();
        record
            .set_modified(SystemTime::now() - Duration::from_secs(600))
            .unwrap();
        let health = check(&rules);
        assert!(!health.healthy);
        assert!(
            health.message.contains("has not made progress"),
            "{health:?}"
        );
    }

    #[test]
    fn another_rules_file_on_the_same_state_is_not_this_watcher() {
        let dir = tempfile::tempdir().unwrap();
        let rules = rules(dir.path());
        let _registration = Registration::register(&rules, INTERVAL).unwrap();
        let other = dir.path().join("other.yaml");
        std::fs::copy(&rules.path, &other).unwrap();
        let health = check_config(&other);
        assert!(!health.healthy);
        assert!(health.message.contains("runs the rules file"), "{health:?}");
    }

    #[test]
    fn errors_become_one_line() {
        assert_eq!(one_line("a: b\n  help: c\n"), "a: b; help: c");
    }
}
