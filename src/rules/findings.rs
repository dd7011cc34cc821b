//! Reading findings out of a linter's output: `file:line[:col]: message` lines (gcc, eslint
//! unix format, ruff, mypy, shellcheck gcc format, go vet...) and rustc/clippy's
//! `error: message` + `--> file:line:col` pairs.

use crate::verdict::Finding;

/// Removes ANSI escape sequences, which colourful tools emit even into pipes.
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// Finds every finding in `output` (already capped in size by the process runner).
pub fn parse(output: &str) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut pending_header: Option<String> = None;
    for line in output.lines() {
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix("--> ") {
            if let (Some(header), Some((file, line_no, col, _))) =
                (pending_header.take(), split_location(rest.trim()))
            {
                findings.push(Finding {
                    file: Some(file.to_owned()),
                    line: Some(line_no),
                    column: col,
                    message: header,
                    breach: None,
                });
            }
            continue;
        }
        if let Some(header) = rustc_header(trimmed) {
            pending_header = Some(header);
            continue;
        }
        if let Some((file, line_no, col, message)) = split_location(line.trim_end()) {
            if let Some(message) = message.filter(|m| !m.is_empty()) {
                findings.push(Finding {
                    file: Some(file.to_owned()),
                    line: Some(line_no),
                    column: col,
                    message: message.to_owned(),
                    breach: None,
                });
            }
        }
    }
    findings
}

/// `error[E0308]: mismatched types` / `warning: unused variable` as rustc and clippy print them.
fn rustc_header(line: &str) -> Option<String> {
    let (kind, message) = line.split_once(": ")?;
    let base = kind.split('[').next()?;
    if !matches!(base, "error" | "warning") || message.is_empty() {
        return None;
    }
    // The closing summary lines are not findings.
    if message.starts_with("aborting due to")
        || message.contains("generated") && message.contains("warning")
    {
        return None;
    }
    Some(format!("{kind}: {message}"))
}

/// Splits `file:line[:col][: message]`. The file part must look like a path, not a URL or a
/// timestamp, and the line must be a positive number.
fn split_location(text: &str) -> Option<(&str, u32, Option<u32>, Option<&str>)> {
    let mut parts = text.splitn(4, ':');
    let file = parts.next()?;
    if file.is_empty()
        || file.starts_with(char::is_whitespace)
        || file.contains(char::is_whitespace) && !file.contains('/')
        || file.ends_with(char::is_whitespace)
        || file.chars().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let line_no: u32 = parts.next()?.parse().ok().filter(|&n| n > 0)?;
    let third = parts.next();
    let fourth = parts.next();
    match third {
        None => Some((file, line_no, None, None)),
        Some(third) => match third.parse::<u32>() {
            Ok(col) => Some((file, line_no, Some(col), fourth.map(str::trim))),
            Err(_) => {
                let message = match fourth {
                    Some(rest) => &text[text.len() - rest.len() - third.len() - 1..],
                    None => third,
                };
                Some((file, line_no, None, Some(message.trim())))
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_file_line_col_message() {
        let found = parse(
            "src/auth.rs:12:5: unused variable `x`\nlib.py:3: E302 expected 2 blank lines\nnoise\n",
        );
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].location().as_deref(), Some("src/auth.rs:12:5"));
        assert_eq!(found[0].message, "unused variable `x`");
        assert_eq!(found[1].location().as_deref(), Some("lib.py:3"));
        assert_eq!(found[1].message, "E302 expected 2 blank lines");
    }

    #[test]
    fn reads_rustc_and_clippy_blocks() {
        let out = "warning: unused variable: `x`\n --> src/main.rs:2:9\n  |\n2 |     let x = 1;\n\nerror: aborting due to 1 previous error\n";
        let found = parse(out);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].location().as_deref(), Some("src/main.rs:2:9"));
        assert_eq!(found[0].message, "warning: unused variable: `x`");
    }

    #[test]
    fn ignores_urls_times_and_prose() {
        assert!(
            parse("see https://example.com:443/x\n12:30:01 started\nerror: something broke\n")
                .is_empty()
        );
    }

    #[test]
    fn message_may_contain_colons() {
        let found = parse("a.c:1: error: expected ';'\n");
        assert_eq!(found[0].message, "error: expected ';'");
    }

    #[test]
    fn strips_colour() {
        assert_eq!(strip_ansi("\u{1b}[1;31merror\u{1b}[0m: x"), "error: x");
    }
}
