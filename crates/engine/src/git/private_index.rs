//! validator's own index of a repository at a base ([`Private`]), which git compares the work
//! tree with in place of the worker's: read from the base's tree and kept outside the task, a
//! copy for each use (so runs side by side never share a file git is writing), published for
//! the next run with its racy entries reset, and the indexes no run uses any more swept away.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use super::Repo;
use super::parse::racy_entries;
use super::run::{Invocation, OUTPUT_CAP};
use crate::changes::Problem;
use validator_process::files::{self, Links};
use validator_process::sandbox::Sandbox;
use validator_text::name;

/// Largest private index read back (about 2.5 million files); a larger one is not kept.
const MAX_INDEX_BYTES: u64 = 256 * 1024 * 1024;
/// A private index of a base no run has used for this long is removed when another is made,
/// and so is a run's leftover copy (a git killed at its deadline leaves one).
const STALE: Duration = Duration::from_secs(60 * 60);
/// Any private index no run has used for this long (its task gone, say) is removed when
/// another is made.
const ABANDONED: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// validator's own index of a repository at a base (see the module doc): read from the base's
/// tree, kept in `<indexes>/<task>-<repository>-<base>/index` and refreshed by git as it
/// compares. Each use works on a copy of its own (a hard link until git rewrites it), which
/// [`Repo::keep`] publishes: runs side by side never share a file git is writing, and what is
/// published has had its racy entries reset.
pub(super) struct Private {
    pub(super) dir: PathBuf,
    work: PathBuf,
    /// `work` began as the published index (else git read it from the base's tree).
    pub(super) from_published: bool,
    /// The published index `work` is a hard link to (device, inode), if it is.
    linked: Option<(u64, u64)>,
    /// Reads the task, writes only in `dir`.
    sandbox: Option<Sandbox>,
    /// When this use began: stat data git records from a second before it on is racy.
    since: SystemTime,
    /// Bytes of an object id in the index (SHA-1 or SHA-256 repositories).
    hash_len: usize,
}

impl Drop for Private {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.work);
    }
}

impl Repo<'_> {
    /// git in the repository with validator's private index `private` in place of its own.
    pub(super) fn with<'r>(&'r self, private: &'r Private) -> Invocation<'r> {
        Invocation {
            index: Some(&private.work),
            sandbox: private.sandbox.as_ref(),
            ..self.own()
        }
    }

    /// validator's private index of this repository at `base` (`None`: no commit yet, an empty
    /// tree), ready for this use: the published one linked, or read from the base's tree.
    pub(super) fn private(&self, base: Option<&str>) -> Result<Private, Problem> {
        let since = SystemTime::now();
        let cannot = |what: &str, err: &dyn std::fmt::Display| {
            Problem::Judge(format!(
                "validator cannot keep its index of the task's repository in {} ({what}): {err}",
                name(&self.indexes.to_string_lossy())
            ))
        };
        let family = format!(
            "{}-{}-",
            self.task.name,
            short_hash(self.layout.git_dir.as_os_str().as_encoded_bytes())
        );
        let dir = self.indexes.join(format!(
            "{family}{}",
            short_hash(base.unwrap_or("(unborn)").as_bytes())
        ));
        let made = match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => true,
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => false,
            Err(err) => return Err(cannot("making its directory", &err)),
        };
        if !dir.symlink_metadata().is_ok_and(|meta| meta.is_dir()) {
            return Err(cannot("its directory", &"not a directory"));
        }
        sweep(&dir, &self.indexes, &family, made);
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let work = dir.join(format!(
            "index.{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_file(&work);
        let published = dir.join("index");
        let copied = match std::fs::hard_link(&published, &work) {
            Ok(()) => true,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => false,
            // A file system without hard links: a copy does as well.
            Err(_) => std::fs::copy(&published, &work).is_ok(),
        };
        let meta = work.symlink_metadata().ok().filter(|meta| meta.is_file());
        let from_published = copied && meta.is_some();
        let linked = meta
            .filter(|_| from_published)
            .map(|meta| (meta.dev(), meta.ino()))
            .filter(|&id| {
                published
                    .symlink_metadata()
                    .is_ok_and(|meta| (meta.dev(), meta.ino()) == id)
            });
        let mut readable = vec![self.task.dir.clone()];
        readable.extend(self.layout.outside.iter().cloned());
        let sandbox = Sandbox::reading_and_writing(&self.git, &readable, Some(&dir))
            .map_err(|why| Problem::Judge(format!("cannot sandbox git: {why}")))?;
        let private = Private {
            dir,
            work,
            from_published,
            linked,
            sandbox,
            since,
            hash_len: base.map_or(20, |oid| oid.len() / 2),
        };
        if !private.from_published {
            let _ = std::fs::remove_file(&private.work);
            let args: &[&str] = match base {
                Some(oid) => &["read-tree", oid],
                None => &["read-tree", "--empty"],
            };
            self.run_as(self.with(&private), args, OUTPUT_CAP, None)
                .map_err(|err| {
                    Problem::Worker(format!(
                        "git cannot read the task's repository (read-tree): {err}"
                    ))
                })?;
        }
        Ok(private)
    }

    /// Publishes `private` for the runs after this one, if git rewrote it (it records the stat
    /// data of what it hashed), with its racy entries reset first ([`racy_entries`]). Whatever
    /// fails leaves the index published before in place.
    pub(super) fn keep(&self, private: Private) {
        let Ok(meta) = private.work.symlink_metadata() else {
            return;
        };
        if !meta.is_file() || private.linked == Some((meta.dev(), meta.ino())) {
            return;
        }
        let Ok(bytes) = files::read(&private.work, MAX_INDEX_BYTES, Links::Refuse) else {
            return;
        };
        let since = private
            .since
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |age| age.as_secs())
            .saturating_sub(1);
        let Some(racy) = racy_entries(&bytes, private.hash_len, since) else {
            return;
        };
        if !racy.is_empty()
            && self
                .run_as(
                    self.with(&private),
                    &["update-index", "-z", "--index-info"],
                    OUTPUT_CAP,
                    Some(&racy),
                )
                .is_err()
        {
            return;
        }
        let _ = std::fs::rename(&private.work, private.dir.join("index"));
    }
}

/// Removes what uses of private indexes left behind: in `dir`, copies older than [`STALE`] (a
/// git killed at its deadline leaves its copy and lock); in `home`, when `dir` is new, this
/// repository's indexes of other bases (`family`) no run has used for as long, and any index
/// unused for [`ABANDONED`]. `dir` is marked used.
fn sweep(dir: &Path, home: &Path, family: &str, made: bool) {
    let older_than = |path: &Path, limit: Duration| {
        path.symlink_metadata()
            .and_then(|meta| meta.modified())
            .is_ok_and(|time| time.elapsed().is_ok_and(|age| age > limit))
    };
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_name() != "index" && older_than(&entry.path(), STALE) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    if made {
        if let Ok(entries) = std::fs::read_dir(home) {
            for entry in entries.flatten() {
                let path = entry.path();
                let ours = entry.file_name().to_string_lossy().starts_with(family);
                let limit = if ours { STALE } else { ABANDONED };
                if path != dir && older_than(&path, limit) {
                    let _ = std::fs::remove_dir_all(&path);
                }
            }
        }
    }
    let _ = std::fs::File::open(dir).and_then(|handle| handle.set_modified(SystemTime::now()));
}

/// Sixteen hex digits of `bytes`' SHA-256: a name for a repository or base.
fn short_hash(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
