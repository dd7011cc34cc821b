//! The watcher's claim on its state directory as every thread asks after it, and the name that
//! outlives the directory. [`super::health::Registration`] takes two holds: an exclusive
//! `flock` on the directory itself, which two watchers anywhere (another container on the same
//! volume) meet on, and, on Linux, a name that a directory deleted and made again cannot
//! free: an abstract Unix socket named after the state's path and its parent's device. The
//! `flock` is on the directory the path named when it was taken, so without the name a second
//! watcher could claim a directory made again while the first, not having looked yet, judges
//! on. With it the second is refused until the first has noticed and stopped.
//!
//! The first notices through [`Claim::lost`] (one `stat`), which the main loop asks before each
//! message, and each worker before it judges and again just before it publishes: a watcher
//! whose claim is lost judges and publishes nothing more, and its loss is for good.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// What a lost claim is said as, wherever it is noticed.
const LOST: &str = "the state directory was deleted or replaced while this watcher ran, so it no longer holds it (another watcher may hold the new one); it stops rather than judge beside it\n  help: start it again (a supervisor restarts it): it claims the state directory that is there now, or is refused while another watcher holds it";

/// Whether this watcher still holds its state directory, shared by its threads.
#[derive(Debug)]
pub struct Claim {
    state: PathBuf,
    /// The device and inode of the directory claimed (`None`: nothing to compare with).
    claimed: Option<(u64, u64)>,
    /// Set once the path was seen naming another directory, or none: a directory moved back
    /// later may be held by another watcher meanwhile.
    lost: AtomicBool,
}

impl Claim {
    pub(super) fn new(state: &Path, claimed: Option<(u64, u64)>) -> Self {
        Claim {
            state: state.to_path_buf(),
            claimed,
            lost: AtomicBool::new(false),
        }
    }

    /// Why this watcher no longer holds its state directory, if it does not: the directory it
    /// claimed was deleted, or replaced by another (deleted and made again, renamed over). What
    /// it judged then would go to a state nobody sees, or race another watcher's, so it must
    /// stop. An error that says neither (a passing I/O error) is not taken for a loss.
    pub fn lost(&self) -> Option<String> {
        if self.lost.load(Ordering::SeqCst) {
            return Some(LOST.to_owned());
        }
        let claimed = self.claimed?;
        let now = match std::fs::metadata(&self.state) {
            Ok(meta) if meta.is_dir() => {
                use std::os::unix::fs::MetadataExt;
                (meta.dev(), meta.ino())
            }
            Ok(_) => (0, 0),
            Err(err)
                if matches!(
                    err.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                (0, 0)
            }
            Err(_) => return None,
        };
        if now == claimed {
            return None;
        }
        self.lost.store(true, Ordering::SeqCst);
        Some(LOST.to_owned())
    }

    /// Whether the claim still holds: what a worker asks before it judges and before it writes.
    pub fn holds(&self) -> bool {
        self.lost().is_none()
    }
}

/// The name held for a state directory's path while its watcher lives (the kernel lets it go
/// when the process dies, however it dies).
pub(super) struct Name {
    #[cfg(target_os = "linux")]
    _socket: std::os::unix::net::UnixDatagram,
}

/// What an attempt at the name met.
pub(super) enum Named {
    Held(Name),
    /// Another process holds it: a watcher on a directory this path named before.
    Busy,
    /// No such names here (not Linux) or the attempt failed otherwise: the directory's `flock`
    /// alone holds the claim.
    Unsupported,
}

/// Takes the name of `state`, which must exist. It is made of the directory's canonical path
/// and its parent's device, so it is the same for a directory made again at that path, and not
/// for another volume mounted at the same path in another container of the pod.
pub(super) fn take_name(state: &Path) -> Named {
    #[cfg(target_os = "linux")]
    {
        use std::os::linux::net::SocketAddrExt;
        use std::os::unix::net::{SocketAddr, UnixDatagram};
        let Some(name) = name_of(state) else {
            return Named::Unsupported;
        };
        let bound = SocketAddr::from_abstract_name(name.as_bytes())
            .and_then(|addr| UnixDatagram::bind_addr(&addr));
        match bound {
            Ok(socket) => Named::Held(Name { _socket: socket }),
            Err(err) if err.kind() == io::ErrorKind::AddrInUse => Named::Busy,
            Err(err) => {
                tracing::warn!(path = %state.display(), %err, "cannot hold the state directory's name; a second watcher on a state directory made again under this one is not refused");
                Named::Unsupported
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = state;
        Named::Unsupported
    }
}

/// `validator-watch-<digest>` of the state's canonical path and its parent's device.
#[cfg(target_os = "linux")]
fn name_of(state: &Path) -> Option<String> {
    use sha2::{Digest, Sha256};
    use std::os::unix::fs::MetadataExt;
    let state = state.canonicalize().ok()?;
    let parent = state.parent().unwrap_or(&state);
    let device = std::fs::metadata(parent).ok()?.dev();
    let digest = Sha256::new()
        .chain_update(state.as_os_str().as_encoded_bytes())
        .chain_update([0])
        .chain_update(device.to_le_bytes())
        .finalize();
    Some(format!("validator-watch-{}", &format!("{digest:x}")[..32]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_claim_stays_lost_when_the_directory_comes_back() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        std::fs::create_dir(&state).unwrap();
        let meta = std::fs::metadata(&state).unwrap();
        let claim = Claim::new(&state, Some((meta.dev(), meta.ino())));
        assert!(claim.holds());
        std::fs::rename(&state, dir.path().join("away")).unwrap();
        assert!(!claim.holds());
        std::fs::rename(dir.path().join("away"), &state).unwrap();
        assert!(
            claim
                .lost()
                .is_some_and(|why| why.contains("deleted or replaced"))
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_name_outlives_the_directory_and_ends_with_its_holder() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        std::fs::create_dir(&state).unwrap();
        let held = take_name(&state);
        assert!(matches!(held, Named::Held(_)));
        std::fs::remove_dir(&state).unwrap();
        std::fs::create_dir(&state).unwrap();
        assert!(matches!(take_name(&state), Named::Busy));
        drop(held);
        assert!(matches!(take_name(&state), Named::Held(_)));
        let other = dir.path().join("other");
        std::fs::create_dir(&other).unwrap();
        let _held = take_name(&state);
        assert!(matches!(take_name(&other), Named::Held(_)));
    }
}
