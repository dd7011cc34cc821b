//! Reading files that someone other than validator may write (the rules file on reload, state,
//! verdicts, baselines, the cache, contracts, schemas, keys): only a regular file is read,
//! never by waiting on a FIFO or reading a device without end, never past a cap, and, for the
//! files validator keeps for itself, never through a link planted in their place.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// Whether a link at the path itself is followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// A file someone points validator at and may well be a link (the rules file in a
    /// Kubernetes ConfigMap, a mounted secret as the key).
    Follow,
    /// A file validator wrote itself (state, verdicts, cache, baselines): a link in its place
    /// was put there by someone else, to make validator read another file.
    Refuse,
}

/// Opens `path` for reading if it is a regular file. The check is made on the opened
/// descriptor, so the file cannot be swapped between the check and the read; opening does not
/// block on a FIFO (`O_NONBLOCK`), and with [`Links::Refuse`] a link fails to open (`ELOOP`).
pub fn open(path: &Path, links: Links) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut flags = nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY;
    if links == Links::Refuse {
        flags |= nix::libc::O_NOFOLLOW;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .map_err(|err| match err.raw_os_error() {
            Some(nix::libc::ELOOP) if links == Links::Refuse => io::Error::new(
                io::ErrorKind::InvalidInput,
                "it is a link, which is not followed here",
            ),
            _ => err,
        })?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(file)
}

/// Reads all of `path` (see [`open`]) if it holds at most `cap` bytes; a larger file is an
/// error that says so, never a silently shortened read.
pub fn read(path: &Path, cap: u64, links: Links) -> io::Result<Vec<u8>> {
    let file = open(path, links)?;
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("it is larger than {}", size(cap)),
        ));
    }
    Ok(bytes)
}

/// As [`read`], as UTF-8 text.
pub fn read_text(path: &Path, cap: u64, links: Links) -> io::Result<String> {
    String::from_utf8(read(path, cap, links)?)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "it is not UTF-8 text"))
}

/// `cap` in the unit people write it in.
fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1024 * 1024 && b % (1024 * 1024) == 0 => format!("{} MiB", b / 1024 / 1024),
        b if b >= 1024 && b % 1024 == 0 => format!("{} KiB", b / 1024),
        b => format!("{b} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_within_the_cap_are_read_and_links_only_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("state.json");
        std::fs::write(&file, "{}").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();

        assert_eq!(read(&file, 2, Links::Refuse).unwrap(), b"{}");
        assert_eq!(read(&link, 2, Links::Follow).unwrap(), b"{}");
        let refused = read(&link, 2, Links::Refuse).unwrap_err();
        assert!(refused.to_string().contains("link"), "{refused}");
        assert!(read(&fifo, 2, Links::Follow).is_err());
        assert!(read(Path::new("/dev/zero"), 2, Links::Follow).is_err());
        assert!(read(dir.path(), 2, Links::Follow).is_err());
        let large = read(&file, 1, Links::Refuse).unwrap_err();
        assert!(large.to_string().contains("larger than 1 bytes"), "{large}");
    }
}
