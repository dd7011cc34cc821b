//! Replacing a file, durably and atomically (`replace::durably`, `atomically`, `without_sync`): write a temporary file in the same directory, flush it,
//! rename it over the target, flush the directory. A reader sees the old file or the new one.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use crate::error::Error;

/// Temporary files start with this, so watchers and listings can tell them apart.
pub const TEMP_PREFIX: &str = ".validator-";

/// Replaces `target` with `bytes` atomically and durably.
pub fn durably(target: &Path, bytes: &[u8]) -> Result<(), Error> {
    atomically(target, bytes)?;
    sync_dir(target.parent().unwrap_or(Path::new(".")))
}

/// Flushes a directory's entries: renames into it are durable once this returns.
pub fn sync_dir(dir: &Path) -> Result<(), Error> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|source| Error::Write {
            path: dir.to_path_buf(),
            source,
        })
}

/// Replaces `target` atomically; durable once its directory is synced ([`sync_dir`]), so
/// several files in one directory can share one directory flush.
pub fn atomically(target: &Path, bytes: &[u8]) -> Result<(), Error> {
    replace_with(target, bytes, Flush::File)
}

/// Replaces `target` atomically without flushing it to the disk: it survives a crash of the
/// process (the page cache does), not necessarily a power loss. For state that a lost update
/// only makes slightly stale.
pub fn without_sync(target: &Path, bytes: &[u8]) -> Result<(), Error> {
    replace_with(target, bytes, Flush::Nothing)
}

/// Whether the temporary file is flushed to the disk before the rename.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flush {
    File,
    Nothing,
}

fn replace_with(target: &Path, bytes: &[u8], flush: Flush) -> Result<(), Error> {
    let write_err = |source| Error::Write {
        path: target.to_path_buf(),
        source,
    };
    let dir = target.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(write_err)?;
    // Temporary files default to 0600; what validator publishes is for others to read (a
    // worker reading its verdict, a sidecar under another user). Set at creation, so no
    // metadata change follows the flush.
    use std::os::unix::fs::PermissionsExt;
    let mut temp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(0o644))
        .tempfile_in(dir)
        .map_err(write_err)?;
    temp.write_all(bytes).map_err(write_err)?;
    if flush == Flush::File {
        temp.as_file().sync_data().map_err(write_err)?;
    }
    temp.persist(target).map_err(|err| write_err(err.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("a.verdict.json");
        durably(&target, b"one").unwrap();
        durably(&target, b"two").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
