//! The files a patch names, before it is applied: Codex's `apply_patch` envelope (`*** Add
//! File:`, `*** Update File:`, `*** Delete File:`, `*** Move to:`), unified diffs (`---`/`+++`),
//! context diffs (`***`/`---`), `Index:` lines, and git's headers (`diff --git`, `rename`/`copy`
//! `from`/`to`), with the leading components a `-p N` strips. Every name any header form gives
//! is named, as GNU `patch` and `git apply` each pick among them.
//!
//! The worker writes the patch, so reading it is linear in its size and bounded: a patch that
//! names more than [`MAX_FILES`] files, a name longer than [`MAX_NAME`] bytes, a `diff --git`
//! line whose names split more than [`MAX_SPLITS`] ways, or more than [`MAX_WORK`] bytes of
//! names in all, is too big to judge, and the caller refuses it.

use std::borrow::Cow;
use std::collections::HashSet;

/// Most files one patch may name (as a shell line may hold at most
/// [`crate::shell::MAX_COMMANDS`] commands); a patch naming more is too big to judge.
pub const MAX_FILES: usize = 1_000;

/// Longest name a patch may give, in bytes (Linux's `PATH_MAX`): no file has a longer one.
pub const MAX_NAME: usize = 4_096;

/// Most ways the unquoted names of one `diff --git` line may split when no split names one
/// file twice (each split is named).
pub const MAX_SPLITS: usize = 16;

/// Most lines of a `diff --git` extended header looked at for the names below it (git writes
/// at most eight: modes, similarity, rename or copy, index).
const GIT_EXTENDED_HEADER_LINES: usize = 12;

/// Most bytes of names (repeats counted) one patch may give, so that reading it stays quick.
pub const MAX_WORK: usize = 4 * 1024 * 1024;

/// Every file `text` would create, change, delete or move to, in order, without repeats. A
/// diff's names lose `strip` leading components (`-p1` for `a/` and `b/`); git's `rename` and
/// `copy` headers, written without the prefix, lose one fewer (as `git apply` strips them).
/// The error says why the patch is too big to judge (it is then to be refused).
pub fn files(text: &str, strip: usize) -> Result<Vec<String>, String> {
    let mut found = Found::default();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        // Only a line starting with one of these (or with white space, before an envelope's
        // header) can be a header: the rest are passed over without a look.
        if !line.starts_with(['*', '-', '+', 'I', 'd', 'r', 'c'])
            && !line.starts_with(char::is_whitespace)
        {
            continue;
        }
        let next = lines.peek().copied().unwrap_or_default();
        if let Some(path) = [
            "*** Add File: ",
            "*** Update File: ",
            "*** Delete File: ",
            "*** Move to: ",
        ]
        .iter()
        .find_map(|prefix| line.trim().strip_prefix(prefix))
        {
            found.add(path)?;
        } else if let Some((old, new)) = header_pair(line, next) {
            for name in [old, new] {
                // A name ends at a tab (a timestamp may follow).
                let name = name.split('\t').next().unwrap_or(name);
                if name != "/dev/null" {
                    found.add(stripped(&unquoted(name), strip))?;
                    header_prefixes(name, strip, &mut found)?;
                }
            }
        } else if let Some(name) = line.strip_prefix("Index: ") {
            found.add(stripped(&unquoted(name), strip))?;
        } else if let Some(names) = line.strip_prefix("diff --git ") {
            let named_below = names_below(lines.clone());
            git_header_names(names, strip, named_below, &mut found)?;
        } else if let Some(name) = ["rename from ", "rename to ", "copy from ", "copy to "]
            .iter()
            .find_map(|prefix| line.strip_prefix(prefix))
        {
            found.add(stripped(&unquoted(name), strip.saturating_sub(1)))?;
        }
    }
    Ok(found.names)
}

/// The names found so far, in order, and the bytes of names read.
#[derive(Default)]
struct Found {
    names: Vec<String>,
    seen: HashSet<String>,
    work: usize,
}

impl Found {
    /// Names `path` (trimmed; not when empty or `/dev/null`); the error says why the patch is
    /// too big to judge.
    fn add(&mut self, path: &str) -> Result<(), String> {
        let path = path.trim();
        if path.is_empty() || path == "/dev/null" {
            return Ok(());
        }
        if path.len() > MAX_NAME {
            return Err(format!("it names a file longer than {MAX_NAME} bytes"));
        }
        self.work += path.len();
        if self.work > MAX_WORK {
            return Err(format!(
                "it gives more than {} MiB of file names",
                MAX_WORK / (1024 * 1024)
            ));
        }
        if self.seen.contains(path) {
            return Ok(());
        }
        if self.names.len() == MAX_FILES {
            return Err(format!("it names more than {MAX_FILES} files"));
        }
        self.seen.insert(path.to_owned());
        self.names.push(path.to_owned());
        Ok(())
    }
}

/// The old and new names of a two-line file header: unified (`---` over `+++`, either way
/// round) or context (`***` over `---`). Inside a hunk a removed line may start with `--`, so
/// a header is only a pair; a context hunk's own `*** 1,2 ****` / `--- 1,2 ----` is not one.
fn header_pair<'t>(line: &'t str, next: &'t str) -> Option<(&'t str, &'t str)> {
    let pairs = [("--- ", "+++ "), ("+++ ", "--- "), ("*** ", "--- ")];
    let (old, new) = pairs.iter().find_map(|(first, second)| {
        Some((line.strip_prefix(first)?, next.strip_prefix(second)?))
    })?;
    let hunk_range = old.ends_with(" ****") && new.ends_with(" ----");
    (!hunk_range).then_some((old, new))
}

/// The other readings of an unquoted `---`/`+++` name with spaces: GNU patch ends it at its
/// first space, `git apply` before a timestamp, so each part before a space is named too (at
/// most [`MAX_SPLITS`] of them: past it the patch is too big to judge).
fn header_prefixes(name: &str, strip: usize, found: &mut Found) -> Result<(), String> {
    if name.starts_with('"') {
        return Ok(());
    }
    for (n, (space, _)) in name.match_indices(' ').enumerate() {
        if n == MAX_SPLITS {
            return Err(format!(
                "a file header of it splits more than {MAX_SPLITS} ways"
            ));
        }
        let prefix = &name[..space];
        if !prefix.is_empty() && prefix != "/dev/null" {
            found.add(stripped(prefix, strip))?;
        }
    }
    Ok(())
}

/// The names of a `diff --git` line. Unquoted names may hold spaces: git takes the split
/// whose two halves name the same file; every split is named when none does, as the other
/// headers then decide. Each split is looked at in constant time (where its halves start once
/// stripped is read off the line's runs of slashes), and only halves of equal length are
/// compared, so a line of many spaces costs no more than its length.
fn git_header_names(
    names: &str,
    strip: usize,
    named_below: bool,
    found: &mut Found,
) -> Result<(), String> {
    if let Some((first, rest)) = quoted_prefix(names) {
        found.add(stripped(&first, strip))?;
        return found.add(stripped(&unquoted(rest.trim()), strip));
    }
    // Where each run of slashes ends: a name loses its components up to the end of its
    // `strip`th run (or of its last, when it has fewer), as [`stripped`] reads it.
    let mut ends: Vec<usize> = Vec::new();
    let bytes = names.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'/' {
            while at < bytes.len() && bytes[at] == b'/' {
                at += 1;
            }
            ends.push(at);
        } else {
            at += 1;
        }
    }
    let start = |runs: &[usize], from: usize| -> usize {
        match strip.min(runs.len()) {
            0 => from,
            taken => runs[taken - 1],
        }
    };
    let spaces: Vec<usize> = names.match_indices(' ').map(|(at, _)| at).collect();
    let mut before = 0; // runs of slashes ending before the space
    let mut compared = 0;
    for &space in &spaces {
        while before < ends.len() && ends[before] <= space {
            before += 1;
        }
        let old = &names[start(&ends[..before], 0)..space];
        let new = &names[start(&ends[before..], space + 1)..];
        if old.len() != new.len() || names[space + 1..].starts_with('"') {
            continue;
        }
        if old.len() > MAX_NAME {
            return Err(format!("it names a file longer than {MAX_NAME} bytes"));
        }
        compared += 1;
        if compared > MAX_SPLITS {
            return Err(format!(
                "a `diff --git` line of it splits more than {MAX_SPLITS} ways"
            ));
        }
        if old == new {
            return found.add(old);
        }
    }
    if named_below {
        // git takes the names from the headers that follow (each named where it is read).
        return Ok(());
    }
    if spaces.len() > MAX_SPLITS {
        return Err(format!(
            "a `diff --git` line of it splits more than {MAX_SPLITS} ways"
        ));
    }
    for &space in &spaces {
        found.add(stripped(&names[..space], strip))?;
        let new = &names[space + 1..];
        if new.len() > 4 * MAX_NAME + 2 {
            return Err(format!("it names a file longer than {MAX_NAME} bytes"));
        }
        found.add(stripped(&unquoted(new), strip))?;
    }
    Ok(())
}

/// Whether the extended header below a `diff --git` line names its files (`rename`/`copy`
/// lines, or a `---`/`+++` pair), as git then reads them from there; only the few lines of
/// that header are looked at.
fn names_below(mut below: std::iter::Peekable<std::str::Lines<'_>>) -> bool {
    for _ in 0..GIT_EXTENDED_HEADER_LINES {
        let Some(line) = below.next() else {
            return false;
        };
        if line.starts_with("diff --git ") || line.starts_with("@@") {
            return false;
        }
        let next = below.peek().copied().unwrap_or_default();
        if ["rename from ", "rename to ", "copy from ", "copy to "]
            .iter()
            .any(|prefix| line.starts_with(prefix))
            || (line.starts_with("--- ") && next.starts_with("+++ "))
        {
            return true;
        }
    }
    false
}

/// A leading quoted name and what follows it.
fn quoted_prefix(text: &str) -> Option<(String, &str)> {
    let inner = text.strip_prefix('"')?;
    let mut escaped = false;
    for (at, c) in inner.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return Some((unquoted(&text[..at + 2]).into_owned(), &inner[at + 1..])),
            _ => {}
        }
    }
    None
}

/// A name as git and GNU patch read it: one in double quotes has its C escapes decoded
/// (`\t`, `\"`, `\\`, octal bytes such as `\056`), so an escaped name is the file it names.
fn unquoted(name: &str) -> Cow<'_, str> {
    let Some(inner) = name.strip_prefix('"').and_then(|n| n.strip_suffix('"')) else {
        return Cow::Borrowed(name);
    };
    let mut bytes = Vec::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut buffer = [0; 4];
            bytes.extend_from_slice(c.encode_utf8(&mut buffer).as_bytes());
            continue;
        }
        match chars.next() {
            Some(digit @ '0'..='7') => {
                let mut value = digit.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|d| d.to_digit(8)) {
                        Some(more) => {
                            value = value * 8 + more;
                            chars.next();
                        }
                        None => break,
                    }
                }
                bytes.push(u8::try_from(value & 0xff).unwrap_or(u8::MAX));
            }
            Some(other) => {
                let decoded = match other {
                    'a' => '\u{7}',
                    'b' => '\u{8}',
                    't' => '\t',
                    'n' => '\n',
                    'v' => '\u{b}',
                    'f' => '\u{c}',
                    'r' => '\r',
                    other => other,
                };
                let mut buffer = [0; 4];
                bytes.extend_from_slice(decoded.encode_utf8(&mut buffer).as_bytes());
            }
            None => bytes.push(b'\\'),
        }
    }
    Cow::Owned(String::from_utf8_lossy(&bytes).into_owned())
}

/// `name` without its first `strip` components, a run of slashes ending each (as GNU patch
/// counts them).
fn stripped(name: &str, strip: usize) -> &str {
    let mut rest = name;
    for _ in 0..strip {
        let Some(at) = rest.find('/') else {
            return rest;
        };
        rest = rest[at..].trim_start_matches('/');
    }
    rest
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str, strip: usize) -> Vec<String> {
        files(text, strip).expect("a patch small enough to judge")
    }

    fn too_big(text: &str, strip: usize) -> String {
        files(text, strip).expect_err("a patch too big to judge")
    }

    #[test]
    fn an_apply_patch_envelope_names_every_file_it_touches() {
        let patch = "*** Begin Patch\n*** Add File: docs/new.md\n+x\n*** Update File: src/a.rs\n*** Move to: src/b.rs\n@@\n-a\n+b\n*** Delete File: old.txt\n*** End Patch\n";
        assert_eq!(
            names(patch, 0),
            ["docs/new.md", "src/a.rs", "src/b.rs", "old.txt"]
        );
    }

    #[test]
    fn a_unified_diff_names_its_files_with_the_prefix_stripped() {
        let diff = "diff --git a/src/x.rs b/src/x.rs\n--- a/src/x.rs\n+++ b/src/x.rs\n@@ -1,2 +1 @@\n-a\n--- not a header\n+b\n--- /dev/null\n+++ b/new.txt\t2026-01-01\n";
        assert_eq!(names(diff, 1), ["src/x.rs", "new.txt"]);
        assert_eq!(names(diff, 0), ["a/src/x.rs", "b/src/x.rs", "b/new.txt"]);
    }

    #[test]
    fn a_context_diff_and_index_lines_name_their_files() {
        let diff = "Index: src/idx.rs\n===\n*** a/src/old.rs\t2026-01-01\n--- b/src/new.rs\t2026-01-01\n***************\n*** 0 ****\n--- 1 ----\n+ x\n";
        assert_eq!(names(diff, 1), ["idx.rs", "src/old.rs", "src/new.rs"]);
        assert_eq!(
            names(diff, 0),
            ["src/idx.rs", "a/src/old.rs", "b/src/new.rs"]
        );
        // `+++` over `---` is a header too.
        assert_eq!(names("+++ b/x\n--- a/y\n", 1), ["x", "y"]);
    }

    #[test]
    fn git_rename_and_copy_headers_are_stripped_one_less() {
        let diff = "diff --git a/src/a.rs b/src/a.rs\nsimilarity index 100%\nrename from src/a.rs\nrename to src/key.pem\ndiff --git a/x b/x\ncopy from x\ncopy to lib/y\n";
        // As `git apply -p1` (its default) and `-p2` do.
        assert_eq!(names(diff, 1), ["src/a.rs", "src/key.pem", "x", "lib/y"]);
        assert_eq!(names(diff, 2), ["a.rs", "key.pem", "x", "y"]);
        // With `-p0` no split of the `diff --git` lines names one file twice: git takes the
        // names from the `rename` and `copy` lines alone.
        assert_eq!(names(diff, 0), ["src/a.rs", "src/key.pem", "x", "lib/y"]);
    }

    #[test]
    fn quoted_names_are_decoded_and_names_with_spaces_are_found() {
        let diff = "diff --git \"a/src/lock\\056rs\" \"b/src/t\\303\\251\\\"q\"\n";
        assert_eq!(names(diff, 1), ["src/lock.rs", "src/t\u{e9}\"q"]);
        assert_eq!(
            names("diff --git a/sp ace.rs b/sp ace.rs\n", 1),
            ["sp ace.rs"]
        );
        assert_eq!(names("+++ \"b/x\\ty\"\n--- /dev/null\n", 1), ["x\ty"]);
    }

    #[test]
    fn a_strip_counts_runs_of_slashes_as_one() {
        assert_eq!(stripped("a//src/x.rs", 1), "src/x.rs");
        assert_eq!(stripped("a//src/x.rs", 2), "x.rs");
        assert_eq!(stripped("/etc/x", 1), "etc/x");
        // Fewer components than the strip: what is left is still named.
        assert_eq!(stripped("a/x", 5), "x");
    }

    #[test]
    fn a_patch_naming_more_than_its_cap_of_files_is_too_big_to_judge() {
        let envelope = |count: usize| {
            let mut patch = String::from("*** Begin Patch\n");
            for k in 0..count {
                patch.push_str(&format!("*** Add File: src/d{}/f{k}.rs\n+x\n", k % 50));
            }
            patch + "*** End Patch\n"
        };
        assert_eq!(names(&envelope(MAX_FILES), 0).len(), MAX_FILES);
        // Repeats are named once and do not count.
        let repeated = envelope(MAX_FILES) + &envelope(MAX_FILES);
        assert_eq!(names(&repeated, 0).len(), MAX_FILES);
        assert!(too_big(&envelope(MAX_FILES + 1), 0).contains("more than 1000 files"));
        assert!(too_big(&envelope(200_000), 0).contains("more than 1000 files"));
        let diffs: String = (0..=MAX_FILES)
            .map(|k| format!("--- a/f{k}\n+++ b/f{k}\n"))
            .collect();
        assert!(too_big(&diffs, 1).contains("files"));
    }

    #[test]
    fn a_diff_git_line_of_many_spaces_is_read_without_a_name_per_space() {
        // As many spaces as a 256 KiB line holds: no split names one file twice, and naming
        // every split would be too many.
        let line = format!("diff --git {}\n", "a ".repeat(128 * 1024));
        assert!(too_big(&line, 1).contains("splits more than"));
        assert!(too_big(&line, 0).contains("splits more than"));
        // Names with spaces are still found where the halves match, however many spaces.
        let spaced = "x y ".repeat(20);
        let line = format!("diff --git a/{spaced}.rs b/{spaced}.rs\n");
        assert_eq!(names(&line, 1), [format!("{spaced}.rs")]);
        let line = format!("diff --git {spaced}.rs {spaced}.rs\n");
        assert_eq!(names(&line, 0), [format!("{spaced}.rs")]);
        // A few splits, none matching: each is named, as before.
        assert_eq!(
            names("diff --git a/x b/y z\n", 1),
            ["x", "y z", "x b/y", "z"]
        );
        // A name longer than any file's is too big to judge.
        let long = "n".repeat(MAX_NAME + 1);
        assert!(too_big(&format!("diff --git a/{long} b/{long}\n"), 1).contains("longer than"));
        assert!(too_big(&format!("+++ b/{long}\n--- /dev/null\n"), 1).contains("longer than"));
    }

    #[test]
    fn the_split_read_off_runs_of_slashes_is_the_one_stripping_each_half_finds() {
        for line in [
            "a/b c/b",
            "a//x y b//x y",
            "x y",
            "a/ b/",
            "/x /x",
            "p/q/r s/t/q/r s/t",
            "a b c a b c",
            "a/b c\"d b/b c\"d",
        ] {
            for strip in 0..4 {
                // The reading of old: a name per split, two strings built for each.
                let splits: Vec<(&str, &str)> = line
                    .match_indices(' ')
                    .map(|(at, _)| (&line[..at], &line[at + 1..]))
                    .collect();
                let expected: Vec<String> = match splits.iter().find(|(old, new)| {
                    !new.starts_with('"') && stripped(old, strip) == stripped(new, strip)
                }) {
                    Some((old, _)) => vec![stripped(old, strip).to_owned()],
                    None => splits
                        .iter()
                        .flat_map(|(old, new)| {
                            [stripped(old, strip), stripped(&unquoted(new), strip)]
                                .map(str::to_owned)
                        })
                        .collect(),
                };
                let mut wanted = Found::default();
                for name in &expected {
                    wanted.add(name).expect("readable");
                }
                let mut found = Found::default();
                git_header_names(line, strip, false, &mut found).expect("readable");
                assert_eq!(found.names, wanted.names, "{line} -p{strip}");
            }
        }
    }

    #[test]
    fn a_patch_of_many_lines_that_name_nothing_is_read_in_one_pass() {
        let mut patch = String::from("*** Begin Patch\n*** Add File: src/a.rs\n");
        patch.push_str(&"+\n".repeat(1_000_000));
        patch.push_str("*** End Patch\n");
        assert_eq!(names(&patch, 0), ["src/a.rs"]);
    }
}
