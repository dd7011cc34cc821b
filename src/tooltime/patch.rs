//! The files a patch names, before it is applied: Codex's `apply_patch` envelope (`*** Add
//! File:`, `*** Update File:`, `*** Delete File:`, `*** Move to:`), unified diffs (`---`/`+++`),
//! context diffs (`***`/`---`), `Index:` lines, and git's headers (`diff --git`, `rename`/`copy`
//! `from`/`to`), with the leading components a `-p N` strips. Every name any header form gives
//! is named, as GNU `patch` and `git apply` each pick among them.

/// Every file `text` would create, change, delete or move to, in order, without repeats. A
/// diff's names lose `strip` leading components (`-p1` for `a/` and `b/`); git's `rename` and
/// `copy` headers, written without the prefix, lose one fewer (as `git apply` strips them).
pub fn files(text: &str, strip: usize) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut add = |path: &str| {
        let path = path.trim();
        if !path.is_empty() && path != "/dev/null" && !found.iter().any(|f| f == path) {
            found.push(path.to_owned());
        }
    };
    let lines: Vec<&str> = text.lines().collect();
    for (at, line) in lines.iter().enumerate() {
        let next = lines.get(at + 1).copied().unwrap_or_default();
        if let Some(path) = [
            "*** Add File: ",
            "*** Update File: ",
            "*** Delete File: ",
            "*** Move to: ",
        ]
        .iter()
        .find_map(|prefix| line.trim().strip_prefix(prefix))
        {
            add(path);
        } else if let Some((old, new)) = header_pair(line, next) {
            for name in [old, new] {
                // A name ends at a tab (a timestamp may follow).
                let name = name.split('\t').next().unwrap_or(name);
                if name != "/dev/null" {
                    add(&stripped(&unquoted(name), strip));
                }
            }
        } else if let Some(name) = line.strip_prefix("Index: ") {
            add(&stripped(&unquoted(name), strip));
        } else if let Some(names) = line.strip_prefix("diff --git ") {
            for name in git_header_names(names, strip) {
                add(&name);
            }
        } else if let Some(name) = ["rename from ", "rename to ", "copy from ", "copy to "]
            .iter()
            .find_map(|prefix| line.strip_prefix(prefix))
        {
            add(&stripped(&unquoted(name), strip.saturating_sub(1)));
        }
    }
    found
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

/// The names of a `diff --git` line. Unquoted names may hold spaces: git takes the split
/// whose two halves name the same file; every split is named when none does, as the other
/// headers then decide.
fn git_header_names(names: &str, strip: usize) -> Vec<String> {
    if let Some((first, rest)) = quoted_prefix(names) {
        return vec![
            stripped(&first, strip),
            stripped(&unquoted(rest.trim()), strip),
        ];
    }
    let splits: Vec<(&str, &str)> = names
        .match_indices(' ')
        .map(|(at, _)| (&names[..at], &names[at + 1..]))
        .collect();
    for (old, new) in &splits {
        if !new.starts_with('"') && stripped(old, strip) == stripped(new, strip) {
            return vec![stripped(old, strip)];
        }
    }
    splits
        .iter()
        .flat_map(|(old, new)| [stripped(old, strip), stripped(&unquoted(new), strip)])
        .collect()
}

/// A leading quoted name and what follows it.
fn quoted_prefix(text: &str) -> Option<(String, &str)> {
    let inner = text.strip_prefix('"')?;
    let mut escaped = false;
    for (at, c) in inner.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return Some((unquoted(&text[..at + 2]), &inner[at + 1..])),
            _ => {}
        }
    }
    None
}

/// A name as git and GNU patch read it: one in double quotes has its C escapes decoded
/// (`\t`, `\"`, `\\`, octal bytes such as `\056`), so an escaped name is the file it names.
fn unquoted(name: &str) -> String {
    let Some(inner) = name.strip_prefix('"').and_then(|n| n.strip_suffix('"')) else {
        return name.to_owned();
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
    String::from_utf8_lossy(&bytes).into_owned()
}

/// `name` without its first `strip` components, a run of slashes ending each (as GNU patch
/// counts them).
fn stripped(name: &str, strip: usize) -> String {
    let mut rest = name;
    for _ in 0..strip {
        let Some(at) = rest.find('/') else {
            return rest.to_owned();
        };
        rest = rest[at..].trim_start_matches('/');
    }
    rest.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_apply_patch_envelope_names_every_file_it_touches() {
        let patch = "*** Begin Patch\n*** Add File: docs/new.md\n+x\n*** Update File: src/a.rs\n*** Move to: src/b.rs\n@@\n-a\n+b\n*** Delete File: old.txt\n*** End Patch\n";
        assert_eq!(
            files(patch, 0),
            ["docs/new.md", "src/a.rs", "src/b.rs", "old.txt"]
        );
    }

    #[test]
    fn a_unified_diff_names_its_files_with_the_prefix_stripped() {
        let diff = "diff --git a/src/x.rs b/src/x.rs\n--- a/src/x.rs\n+++ b/src/x.rs\n@@ -1,2 +1 @@\n-a\n--- not a header\n+b\n--- /dev/null\n+++ b/new.txt\t2026-01-01\n";
        assert_eq!(files(diff, 1), ["src/x.rs", "new.txt"]);
        assert_eq!(files(diff, 0), ["a/src/x.rs", "b/src/x.rs", "b/new.txt"]);
    }

    #[test]
    fn a_context_diff_and_index_lines_name_their_files() {
        let diff = "Index: src/idx.rs\n===\n*** a/src/old.rs\t2026-01-01\n--- b/src/new.rs\t2026-01-01\n***************\n*** 0 ****\n--- 1 ----\n+ x\n";
        assert_eq!(files(diff, 1), ["idx.rs", "src/old.rs", "src/new.rs"]);
        assert_eq!(
            files(diff, 0),
            ["src/idx.rs", "a/src/old.rs", "b/src/new.rs"]
        );
        // `+++` over `---` is a header too.
        assert_eq!(files("+++ b/x\n--- a/y\n", 1), ["x", "y"]);
    }

    #[test]
    fn git_rename_and_copy_headers_are_stripped_one_less() {
        let diff = "diff --git a/src/a.rs b/src/a.rs\nsimilarity index 100%\nrename from src/a.rs\nrename to src/key.pem\ndiff --git a/x b/x\ncopy from x\ncopy to lib/y\n";
        // As `git apply -p1` (its default) and `-p2` do.
        assert_eq!(files(diff, 1), ["src/a.rs", "src/key.pem", "x", "lib/y"]);
        assert_eq!(files(diff, 2), ["a.rs", "key.pem", "x", "y"]);
        assert_eq!(
            files(diff, 0),
            [
                "a/src/a.rs",
                "b/src/a.rs",
                "src/a.rs",
                "src/key.pem",
                "a/x",
                "b/x",
                "x",
                "lib/y"
            ]
        );
    }

    #[test]
    fn quoted_names_are_decoded_and_names_with_spaces_are_found() {
        let diff = "diff --git \"a/src/lock\\056rs\" \"b/src/t\\303\\251\\\"q\"\n";
        assert_eq!(files(diff, 1), ["src/lock.rs", "src/t\u{e9}\"q"]);
        assert_eq!(
            files("diff --git a/sp ace.rs b/sp ace.rs\n", 1),
            ["sp ace.rs"]
        );
        assert_eq!(files("+++ \"b/x\\ty\"\n--- /dev/null\n", 1), ["x\ty"]);
    }

    #[test]
    fn a_strip_counts_runs_of_slashes_as_one() {
        assert_eq!(stripped("a//src/x.rs", 1), "src/x.rs");
        assert_eq!(stripped("a//src/x.rs", 2), "x.rs");
        assert_eq!(stripped("/etc/x", 1), "etc/x");
        // Fewer components than the strip: what is left is still named.
        assert_eq!(stripped("a/x", 5), "x");
    }
}
