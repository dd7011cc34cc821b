//! What the Node.js runners' outputs share, read by both the JS runners' family and TAP's
//! (node-tap and the node test runner print TAP): a test's path as one name, the place a
//! stack frame names, a file name that is a test file, and a module that failed to load.

/// Longest name made of a path, in bytes: a long title nested over many failures would
/// otherwise be copied whole into each of them.
pub(super) const MAX_NAME_BYTES: usize = 2048;

/// A test's path joined with ` > `, cut at [`MAX_NAME_BYTES`] (on a character boundary) with
/// no more of the path read than that.
pub(super) fn path_name<S: AsRef<str>>(parts: &[S]) -> String {
    let mut name = String::new();
    for part in parts {
        if !name.is_empty() {
            name.push_str(" > ");
        }
        let part = part.as_ref();
        let mut end = MAX_NAME_BYTES.saturating_sub(name.len()).min(part.len());
        while !part.is_char_boundary(end) {
            end -= 1;
        }
        name.push_str(&part[..end]);
        if end < part.len() {
            break;
        }
    }
    name
}

/// `file:line:column` at the end of a stack frame (`fn (file:1:2)` or `file:1:2`), `file://`
/// taken off.
pub(super) fn frame_place(frame: &str) -> Option<(String, u32)> {
    let place = frame
        .rsplit_once('(')
        .map_or(frame, |(_, p)| p)
        .trim_end_matches(')');
    let mut parts = place.rsplitn(3, ':');
    let (_column, line, file) = (parts.next()?, parts.next()?, parts.next()?);
    let line = line.parse::<u32>().ok()?;
    (!file.is_empty()).then(|| (file.trim_start_matches("file://").to_owned(), line))
}

/// A failing entry named by a test file's path: the file itself failed, before any test.
pub(super) fn is_test_file(title: &str) -> bool {
    title.starts_with('/')
        && [".js", ".mjs", ".cjs", ".ts", ".mts", ".cts"]
            .iter()
            .any(|ext| title.ends_with(ext))
}

/// The error a test file failed to load with (`Error: Cannot find module 'x'`), as node
/// printed it (in TAP, as a `# ` comment).
pub(super) fn load_error(lines: &[&str]) -> Option<String> {
    lines.iter().find_map(|l| {
        let text = l.trim_start().trim_start_matches("# ").trim();
        let (kind, _) = text.split_once(": ")?;
        (kind.ends_with("Error") && !kind.contains(' ')).then(|| text.to_owned())
    })
}
