//! A rules-file error as a person reads it best: the line `file:line:col: message` editors
//! jump to, then the offending line of the file with a caret under the place, then the help.

use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};

use validator::error::ConfigError;

/// The error drawn with its line of the file, or `None` when there is no place to show (no
/// line, the file unreadable or changed since, a line a terminal cannot show as it is).
pub(crate) fn render(err: &ConfigError) -> Option<String> {
    let line_number = err.line?;
    let source = validator_process::files::read_text(
        &err.file,
        validator::config::MAX_RULES_BYTES,
        validator_process::files::Links::Follow,
    )
    .ok()?;
    let index = line_number.checked_sub(1)?;
    // The line the loader counted to: a gates.json's positions are serde_json's.
    let line = if validator::config::lines_end_at_lf_only(&err.file, &source) {
        source
            .split('\n')
            .map(|line| line.strip_suffix('\r').unwrap_or(line))
            .nth(index)?
    } else {
        yaml_lines(&source).nth(index)?
    };
    // Only what a terminal shows as written: a control character could move the cursor, and a
    // line or paragraph separator break the line where the caret's count does not.
    if line
        .chars()
        .any(|c| (c.is_control() && c != '\t') || matches!(c, '\u{2028}' | '\u{2029}'))
        || line.len() > 500
    {
        return None;
    }
    let span = span(line, err.column.unwrap_or(1));
    let title = format!("{}:{line_number}", err.file.display())
        + &err.column.map(|c| format!(":{c}")).unwrap_or_default()
        + ": "
        + &err.message;
    let mut report = vec![
        Level::ERROR.primary_title(title).element(
            Snippet::source(line)
                .line_start(line_number)
                .annotation(AnnotationKind::Primary.span(span)),
        ),
    ];
    if let Some(help) = &err.help {
        report.push(Group::with_title(Level::HELP.secondary_title(help)));
    }
    Some(Renderer::styled().render(&report).to_string())
}

/// The lines of `source` as YAML counts them (the line and column of an error are YAML's):
/// broken at LF, CRLF, a lone CR, NEL, LS and PS alike.
fn yaml_lines(source: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(source);
    std::iter::from_fn(move || {
        let text = rest?;
        match text
            .char_indices()
            .find(|&(_, c)| matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}'))
        {
            Some((at, c)) => {
                let after = at + c.len_utf8();
                let after = match (c, text[after..].starts_with('\n')) {
                    ('\r', true) => after + 1,
                    _ => after,
                };
                rest = Some(&text[after..]);
                Some(&text[..at])
            }
            None => {
                rest = None;
                (!text.is_empty()).then_some(text)
            }
        }
    })
}

/// The bytes of `line` the caret goes under: from `column` (1-based, in characters) to the end
/// of the word there (a key, a value), at least one character.
fn span(line: &str, column: usize) -> std::ops::Range<usize> {
    let start = line
        .char_indices()
        .nth(column.saturating_sub(1))
        .map_or(line.len(), |(at, _)| at);
    let word = line[start..]
        .char_indices()
        .find(|&(_, c)| c.is_whitespace() || matches!(c, ',' | ']' | '}' | ':' | '#'))
        .map_or(line.len() - start, |(at, _)| at);
    let end = match word {
        0 => line[start..]
            .chars()
            .next()
            .map_or(start, |c| start + c.len_utf8()),
        n => start + n,
    };
    start..end
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(source: &str, line: usize, column: usize) -> (tempfile::TempDir, ConfigError) {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("validator.yaml");
        std::fs::write(&file, source).expect("write");
        let err = ConfigError {
            file,
            line: Some(line),
            column: Some(column),
            message: "unknown field `on_fial`".into(),
            help: Some("did you mean `on_fail`?".into()),
        };
        (dir, err)
    }

    fn plain(text: &str) -> String {
        anstream::adapter::strip_str(text).to_string()
    }

    #[test]
    fn the_line_is_shown_with_a_caret_under_the_word_and_the_help_after() {
        let (_dir, err) = error("version: 1\ngates:\n  - on_fial: BLOCK\n", 3, 5);
        let text = plain(&render(&err).expect("rendered"));
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("error: "), "{text}");
        assert!(
            lines[0].ends_with("validator.yaml:3:5: unknown field `on_fial`"),
            "{text}"
        );
        let shown = lines
            .iter()
            .position(|l| l.contains("- on_fial: BLOCK"))
            .expect("line");
        assert!(lines[shown].starts_with("3 |"), "{text}");
        let caret = lines[shown + 1];
        assert_eq!(caret.find('^'), lines[shown].find("on_fial"), "{text}");
        assert_eq!(caret.matches('^').count(), "on_fial".len(), "{text}");
        assert!(text.contains("help: did you mean `on_fail`?"), "{text}");
    }

    #[test]
    fn no_snippet_without_a_line_or_for_a_line_a_terminal_would_misread() {
        let (_dir, err) = error("a: \u{1b}[2Jb\n", 1, 1);
        assert_eq!(render(&err), None);
        let (_dir, err) = error("a: 1\n", 9, 1);
        assert_eq!(render(&err), None);
        let (_dir, mut err) = error("a: 1\n", 1, 1);
        err.line = None;
        assert_eq!(render(&err), None);
    }

    #[test]
    fn lines_are_counted_as_yaml_counts_them() {
        let source = "a # c\rb\r\nc\u{2028}d\u{85}e\nf";
        let lines: Vec<&str> = yaml_lines(source).collect();
        assert_eq!(lines, ["a # c", "b", "c", "d", "e", "f"]);
        let (_dir, err) = error("version: 1 # c\rstate: st\n  - on_fial: x\n", 3, 5);
        let text = plain(&render(&err).expect("rendered"));
        assert!(text.contains("3 |   - on_fial: x"), "{text}");
    }

    #[test]
    fn a_column_past_the_end_of_a_multibyte_line_still_renders() {
        let (_dir, err) = error("név: ő\n", 1, 40);
        assert!(render(&err).is_some());
        let (_dir, err) = error("név: ő\n", 1, 6);
        let text = plain(&render(&err).expect("rendered"));
        assert!(text.contains('^'), "{text}");
    }
}
