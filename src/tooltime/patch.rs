//! The files a patch names, before it is applied: Codex's `apply_patch` envelope (`*** Add
//! File:`, `*** Update File:`, `*** Delete File:`, `*** Move to:`) and unified diffs (`---`,
//! `+++`, `diff --git`), with the leading components a `-p N` strips.

/// Every file `text` would create, change, delete or move to, in order, without repeats. A
/// unified diff's names lose `strip` leading components (`-p1` for `a/` and `b/`).
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
        } else if let (Some(old), Some(new)) = (
            line.strip_prefix("--- "),
            lines.get(at + 1).and_then(|next| next.strip_prefix("+++ ")),
        ) {
            // A header is a `---` line right above a `+++` one; inside a hunk, a removed line
            // may start with `--` too. A name ends at a tab (a timestamp may follow).
            for name in [old, new] {
                let name = name.split('\t').next().unwrap_or(name);
                if name != "/dev/null" {
                    add(&stripped(unquoted(name), strip));
                }
            }
        } else if let Some(names) = line.strip_prefix("diff --git ") {
            for name in names.split(' ').filter(|n| !n.is_empty()) {
                add(&stripped(unquoted(name), strip));
            }
        }
    }
    found
}

/// A name git quoted (`"a/sp ace"`) as written inside the quotes; escapes are left as they are,
/// which at worst names a file that is not there.
fn unquoted(name: &str) -> &str {
    name.strip_prefix('"')
        .and_then(|n| n.strip_suffix('"'))
        .unwrap_or(name)
}

fn stripped(name: &str, strip: usize) -> String {
    let mut parts = name.split('/');
    for _ in 0..strip {
        parts.next();
    }
    parts.collect::<Vec<_>>().join("/")
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
}
