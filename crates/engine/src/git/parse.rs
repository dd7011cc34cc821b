//! Reading what git prints and writes for validator: what `status --porcelain=v2 -z` lists
//! ([`Status`]), what `ls-files -z -s` says of an index ([`Index`]), what `cat-file --batch`
//! prints, and the entries of validator's private index file that git recorded too recently to
//! trust ([`racy_entries`]). git prints what the worker named its files, so any bytes may reach
//! these readers; [`read_listings`] runs them for the fuzzer.

use std::collections::BTreeMap;

use super::Repo;

/// What `git status --porcelain=v2 -z` lists against validator's private index of the base,
/// as paths relative to the task directory.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Status {
    /// Files of the base that differ in the work tree: edited, removed, replaced. (Whether
    /// HEAD differs from the base, status's first column, says nothing of the work tree.)
    pub(super) changed: Vec<String>,
    pub(super) untracked: Vec<String>,
    /// Ignored files, and ignored directories (ending in `/`) whose contents git did not list.
    pub(super) ignored: Vec<String>,
}

impl Status {
    pub(super) fn parse(bytes: &[u8], repo: &Repo<'_>) -> Status {
        Self::parse_with(bytes, |path| repo.in_task(path))
    }

    pub(super) fn parse_with(bytes: &[u8], in_task: impl Fn(&str) -> Option<String>) -> Status {
        let mut status = Status::default();
        let mut records = bytes.split(|&b| b == 0).filter(|r| !r.is_empty());
        while let Some(record) = records.next() {
            let record = String::from_utf8_lossy(record);
            // The number of space-separated fields before the path, by record kind.
            let (list, fields) = match record.as_bytes()[0] {
                b'1' => {
                    let worktree = record.split(' ').nth(1).and_then(|xy| xy.chars().nth(1));
                    if worktree == Some('.') {
                        continue;
                    }
                    (&mut status.changed, 8)
                }
                // Neither renames nor conflicts come from an index read from one tree; were
                // they there, both paths would count.
                b'2' => {
                    if let Some(from) = records.next() {
                        let from = String::from_utf8_lossy(from);
                        status.changed.extend(in_task(&from));
                    }
                    (&mut status.changed, 9)
                }
                b'u' => (&mut status.changed, 10),
                b'?' => (&mut status.untracked, 1),
                b'!' => (&mut status.ignored, 1),
                _ => continue,
            };
            if let Some(path) = record.splitn(fields + 1, ' ').nth(fields) {
                list.extend(in_task(path));
            }
        }
        status
    }
}

/// What `git ls-files -z -s --full-name` says of validator's private index of the base: its
/// files, and its gitlinks (nested repositories) with the commit each records.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Index {
    /// Every path the index holds.
    pub(super) tracked: Vec<String>,
    pub(super) gitlinks: BTreeMap<String, String>,
}

impl Index {
    pub(super) fn parse(bytes: &[u8], repo: &Repo<'_>) -> Index {
        Self::parse_with(bytes, |path| repo.in_task(path))
    }

    /// Records are `<mode> <object> <stage>\t<path>`.
    fn parse_with(bytes: &[u8], in_task: impl Fn(&str) -> Option<String>) -> Index {
        let mut index = Index::default();
        for record in split_z(bytes) {
            let Some((fields, path)) = record.split_once('\t') else {
                continue;
            };
            let Some(path) = in_task(path) else { continue };
            if index.tracked.last() != Some(&path) {
                index.tracked.push(path.clone());
            }
            let mut fields = fields.split(' ');
            if let (Some("160000"), Some(object)) = (fields.next(), fields.next()) {
                index.gitlinks.insert(path, object.to_owned());
            }
        }
        index
    }
}

/// Runs the readers of git's listings over `bytes` as if git had printed it (paths under
/// `task/` being the task's), and the reader of the indexes git writes for validator, for the
/// fuzzer: git prints what the worker named its files, so any bytes may reach them. Returns
/// every path they read.
#[doc(hidden)]
pub fn read_listings(bytes: &[u8]) -> Vec<String> {
    let in_task = |path: &str| {
        path.strip_prefix("task/")
            .filter(|rel| !rel.is_empty())
            .map(str::to_owned)
    };
    let status = Status::parse_with(bytes, in_task);
    let index = Index::parse_with(bytes, in_task);
    let racy = [20, 32]
        .into_iter()
        .filter_map(|hash_len| racy_entries(bytes, hash_len, 0))
        .flat_map(|input| split_z(&input).collect::<Vec<_>>());
    status
        .changed
        .into_iter()
        .chain(status.untracked)
        .chain(status.ignored)
        .chain(index.tracked)
        .chain(index.gitlinks.into_keys())
        .chain(racy)
        .collect()
}

/// The entries of an index (version 2 or 3, as git writes validator's private ones) whose
/// ctime is `since` (seconds) or later, as `git update-index -z --index-info` takes them to
/// reset their stat data. git compares whole seconds of ctime (unless built to compare
/// nanoseconds), and a worker sets mtime as it likes: a file git hashed and recorded in a
/// second could be changed again within that second, keep its size and mtime, and look
/// unchanged to the next run. Its entry reset, the next run hashes it again. `None` when the
/// bytes are not such an index.
pub(super) fn racy_entries(bytes: &[u8], hash_len: usize, since: u64) -> Option<Vec<u8>> {
    let word = |at: usize| -> Option<u32> {
        Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
    };
    if bytes.get(..4)? != b"DIRC" {
        return None;
    }
    let version = word(4)?;
    if !(2..=3).contains(&version) {
        return None;
    }
    let count = word(8)?;
    let mut racy = Vec::new();
    let mut at = 12usize;
    for _ in 0..count {
        let flags_at = at.checked_add(40 + hash_len)?;
        let flags = u16::from_be_bytes(bytes.get(flags_at..flags_at + 2)?.try_into().ok()?);
        let mut name_at = flags_at + 2;
        if flags & 0x4000 != 0 {
            if version < 3 {
                return None;
            }
            name_at += 2;
        }
        let name_len = match usize::from(flags & 0x0fff) {
            0x0fff => bytes.get(name_at..)?.iter().position(|&b| b == 0)?,
            len => len,
        };
        let path = bytes.get(name_at..name_at.checked_add(name_len)?)?;
        let ctime = u64::from(word(at)?);
        if ctime != 0 && ctime >= since {
            let mode = word(at + 24)?;
            let oid: String = bytes
                .get(at + 40..flags_at)?
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            racy.extend_from_slice(format!("{mode:o} {oid}\t").as_bytes());
            racy.extend_from_slice(path);
            racy.push(0);
        }
        at = ((name_at - at) + name_len + 8) / 8 * 8 + at;
    }
    Some(racy)
}

/// The contents `git cat-file --batch` printed for `count` objects, in order (`<oid> <type>
/// <size>\n<content>\n` each), or `None` if any is missing or the output is not that shape.
pub(super) fn batch_contents(output: &[u8], count: usize) -> Option<Vec<&[u8]>> {
    let mut rest = output;
    let mut contents = Vec::with_capacity(count);
    for _ in 0..count {
        let header_end = rest.iter().position(|&b| b == b'\n')?;
        let header = std::str::from_utf8(&rest[..header_end]).ok()?;
        let size: usize = header.rsplit(' ').next()?.parse().ok()?;
        let start = header_end + 1;
        let content = rest.get(start..start.checked_add(size)?)?;
        contents.push(content);
        rest = rest.get(start + size + 1..)?;
    }
    Some(contents)
}

pub(super) fn split_z(bytes: &[u8]) -> impl Iterator<Item = String> + '_ {
    bytes
        .split(|&b| b == 0)
        .filter(|name| !name.is_empty())
        .map(|name| String::from_utf8_lossy(name).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn under_task(prefix: &'static str) -> impl Fn(&str) -> Option<String> {
        move |path: &str| {
            path.strip_prefix(prefix)
                .filter(|rel| !rel.is_empty())
                .map(str::to_owned)
        }
    }

    #[test]
    fn status_records_are_read_by_kind_and_cut_to_the_task_directory() {
        let out = b"1 .M N... 100644 100644 100644 aaa bbb task/a file.rs\0\
            1 M. N... 100644 100644 100644 aaa bbb task/only in head\0\
            1 D. N... 100644 000000 000000 aaa 000 task/head has it\0\
            1 .D N... 100644 100644 000000 aaa aaa task/removed\0\
            2 R. N... 100644 100644 100644 aaa bbb R100 task/new\0task/old\0\
            u UU N... 100644 100644 100644 100644 aaa bbb ccc task/both\0\
            1 .M N... 000000 100644 100644 000 aaa other/x\0\
            ? task/untracked\0\
            ! task/target/\0";
        let status = Status::parse_with(out, under_task("task/"));
        // The first column compares HEAD with the base: nothing of the work tree.
        assert_eq!(
            status.changed,
            ["a file.rs", "removed", "old", "new", "both"]
        );
        assert_eq!(status.untracked, ["untracked"]);
        assert_eq!(status.ignored, ["target/"]);
        assert_eq!(
            Status::parse_with(b"? x\0", under_task("")).untracked,
            ["x"]
        );
    }

    #[test]
    fn the_index_listing_gives_the_files_and_gitlinks() {
        let out = b"100644 aaa 0\ttask/a.rs\x00160000 ddd 0\ttask/vendor/lib\x00160000 eee 0\telsewhere/lib\0";
        let index = Index::parse_with(out, under_task("task/"));
        assert_eq!(index.tracked, ["a.rs", "vendor/lib"]);
        assert_eq!(
            index.gitlinks,
            BTreeMap::from([("vendor/lib".to_owned(), "ddd".to_owned())])
        );
    }

    /// An index entry as git writes it: stat data, object id, flags, name, padding.
    fn entry(ctime: u32, mode: u32, oid: u8, path: &[u8], extended: bool) -> Vec<u8> {
        let mut bytes = Vec::new();
        bytes.extend(ctime.to_be_bytes());
        bytes.extend([0; 20]);
        bytes.extend(mode.to_be_bytes());
        bytes.extend([0; 12]);
        bytes.extend([oid; 20]);
        let flags =
            u16::try_from(path.len().min(0xfff)).unwrap() | if extended { 0x4000 } else { 0 };
        bytes.extend(flags.to_be_bytes());
        if extended {
            bytes.extend([0, 0]);
        }
        bytes.extend(path);
        let padded = (bytes.len() + 8) / 8 * 8;
        bytes.resize(padded, 0);
        bytes
    }

    fn index_of(version: u32, entries: &[Vec<u8>]) -> Vec<u8> {
        let mut bytes = b"DIRC".to_vec();
        bytes.extend(version.to_be_bytes());
        bytes.extend(u32::try_from(entries.len()).unwrap().to_be_bytes());
        for entry in entries {
            bytes.extend(entry);
        }
        bytes.extend([0; 20]);
        bytes
    }

    #[test]
    fn racy_entries_are_those_recorded_from_a_second_before_the_use_on() {
        let long = vec![b'x'; 5000];
        let index = index_of(
            2,
            &[
                entry(100, 0o100644, 0xaa, b"old.rs", false),
                entry(0, 0o100644, 0xbb, b"never hashed", false),
                entry(200, 0o100755, 0xcc, b"racy.sh", false),
                entry(300, 0o100644, 0xdd, &long, false),
            ],
        );
        let racy = racy_entries(&index, 20, 200).unwrap();
        let mut expected = format!("100755 {}\tracy.sh\0", "cc".repeat(20)).into_bytes();
        expected.extend(format!("100644 {}\t", "dd".repeat(20)).as_bytes());
        expected.extend(&long);
        expected.push(0);
        assert_eq!(racy, expected);
        assert_eq!(racy_entries(&index, 20, 1000).unwrap(), b"");
        // Version 3 may hold extended flags; version 2 may not.
        let extended = [entry(500, 0o100644, 0xee, b"a", true)];
        assert!(racy_entries(&index_of(3, &extended), 20, 0).is_some_and(|r| !r.is_empty()));
        assert_eq!(racy_entries(&index_of(2, &extended), 20, 0), None);
        // Not an index, another version, or cut short: none.
        assert_eq!(racy_entries(b"DIRX", 20, 0), None);
        assert_eq!(racy_entries(&index_of(4, &[]), 20, 0), None);
        assert_eq!(racy_entries(&index[..index.len() / 2], 20, 0), None);
    }
}
