//! Where the main loop hears of files: the OS's notifications on the directories under watch
//! ([`Watches`]), or a ticker when polling; what an event on a done file means (whether it is
//! whole: [`signals_a_run`]) and whether it names the rules file ([`same_file`]); and a file's
//! [`Fingerprint`], by which a rescan and a reload tell one version of a file from another.

use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::Sender;
use std::thread;
use std::time::Duration;

use notify::event::{AccessKind, AccessMode, ModifyKind, RenameMode};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use validator::config::Rules;
use validator::error::Error;

use super::{Message, Options};

/// Identifies one version of a file: a rewrite, a rename over it or a touch changes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Fingerprint {
    inode: u64,
    len: u64,
    mtime: (i64, i64),
}

impl Fingerprint {
    /// The file a path leads to, through links: the rules file may be a link whose target is
    /// swapped (a Kubernetes ConfigMap).
    pub(super) fn of(path: &Path) -> Option<Self> {
        path.metadata().ok().map(|meta| Self::from_metadata(&meta))
    }

    /// The entry itself, never through a link: a done file that is a link is a signal of its
    /// own (refused when judged), whatever it points to.
    pub(super) fn of_entry(path: &Path) -> Option<Self> {
        path.symlink_metadata()
            .ok()
            .map(|meta| Self::from_metadata(&meta))
    }

    fn from_metadata(meta: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        Fingerprint {
            inode: meta.ino(),
            len: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
        }
    }
}

/// Events that mean a done file is complete: closed after writing, renamed into place,
/// touched, or hard-linked in; or an entry that is whole once made (a link, a FIFO, a
/// directory: refused when judged, but answered). A plain create of a regular file or a write
/// is not: the writer is still at work, and reading now would judge half a signal (and spend
/// an attempt on it).
pub(super) fn signals_a_run(kind: &EventKind, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Modify(ModifyKind::Name(RenameMode::From)) => false,
        EventKind::Modify(ModifyKind::Name(_) | ModifyKind::Metadata(_)) => true,
        EventKind::Create(_) => path
            .symlink_metadata()
            .is_ok_and(|m| m.nlink() > 1 || !m.file_type().is_file()),
        _ => false,
    }
}

pub(super) fn same_file(a: &Path, b: &Path) -> bool {
    a == b
        || (a.file_name() == b.file_name()
            && a.parent().and_then(|p| p.canonicalize().ok())
                == b.parent().and_then(|p| p.canonicalize().ok()))
}

/// The directories under watch: staging (signals), its parent (staging removed and created
/// again) and the rules file's directory (hot reload). When polling (asked for, or because the
/// OS refused a watch) there is no watcher: a ticker asks for a rescan at each interval, which
/// compares inodes, sizes and nanosecond mtimes, so it misses nothing a notification would see.
pub(super) struct Watches {
    watcher: Option<Box<dyn Watcher + Send>>,
    pub(super) rules_seen: Option<Fingerprint>,
}

impl Watches {
    pub(super) fn start(
        options: &Options,
        tx: Sender<Message>,
        rules: &Rules,
        tick_pending: &Arc<std::sync::atomic::AtomicBool>,
    ) -> Result<Self, Error> {
        let rules_seen = Fingerprint::of(&options.config);
        if let Some(interval) = options.poll {
            tracing::info!(interval = %validator::duration::format(interval), "polling the staging directory");
            spawn_ticker(tx, interval, Arc::clone(tick_pending));
            return Ok(Watches {
                watcher: None,
                rules_seen,
            });
        }
        let mut dirs = vec![rules.staging.clone()];
        for extra in [rules.staging.parent(), options.config.parent()]
            .into_iter()
            .flatten()
        {
            let extra = if extra.as_os_str().is_empty() {
                Path::new(".")
            } else {
                extra
            };
            if !dirs.iter().any(|d| d == extra) {
                dirs.push(extra.to_path_buf());
            }
        }
        let events = tx.clone();
        let native = RecommendedWatcher::new(
            move |event| {
                let _ = events.send(Message::Fs(event));
            },
            notify::Config::default(),
        )
        .and_then(|mut watcher| {
            // Staging must be watched; the others only add staging re-creation and hot reload.
            watcher.watch(&dirs[0], RecursiveMode::NonRecursive)?;
            for dir in &dirs[1..] {
                if let Err(err) = watcher.watch(dir, RecursiveMode::NonRecursive) {
                    tracing::warn!(dir = %dir.display(), %err, "cannot watch directory");
                }
            }
            Ok(watcher)
        });
        match native {
            Ok(watcher) => Ok(Watches {
                watcher: Some(Box::new(watcher)),
                rules_seen,
            }),
            Err(err) => {
                tracing::warn!(%err, "the OS refused a file watch (inotify limit or a network file system?); polling every second instead");
                spawn_ticker(tx, Duration::from_secs(1), Arc::clone(tick_pending));
                Ok(Watches {
                    watcher: None,
                    rules_seen,
                })
            }
        }
    }

    /// Whether the rules file changed since the last look (or the last reload).
    pub(super) fn rules_changed(&mut self, config: &Path) -> bool {
        let now = Fingerprint::of(config);
        now.is_some() && std::mem::replace(&mut self.rules_seen, now) != now
    }

    pub(super) fn watch_staging(&mut self, staging: &Path) {
        let Some(watcher) = self.watcher.as_mut() else {
            return;
        };
        let _ = watcher.unwatch(staging);
        if let Err(err) = watcher.watch(staging, RecursiveMode::NonRecursive) {
            tracing::warn!(dir = %staging.display(), %err, "cannot watch the staging directory");
        }
    }
}

/// Asks for a rescan every `interval`, but never queues a tick while the last one is still
/// waiting: a rescan slower than the interval must not pile up work (or delay shutdown).
fn spawn_ticker(
    tx: Sender<Message>,
    interval: Duration,
    pending: Arc<std::sync::atomic::AtomicBool>,
) {
    use std::sync::atomic::Ordering;
    thread::spawn(move || {
        loop {
            if !pending.swap(true, Ordering::SeqCst) && tx.send(Message::Tick).is_err() {
                return;
            }
            thread::sleep(interval);
        }
    });
}
