//! Untrusted text made safe for where it lands: on one line (a feedback line, a log line, a
//! table cell), and names (file names, paths, link targets) that a person or a model reads
//! as what they are, never as structure of the document around them. Also the one
//! did-you-mean every error message uses, and the one plural `s`.

#![forbid(unsafe_code)]

use std::borrow::Cow;

/// What a URI's path may hold as it is: the unreserved characters (RFC 3986) and `/`.
const URI_PATH: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/');

/// A path's bytes as a URI's path: every byte but the unreserved ones and `/` as `%XX`.
pub fn uri_path(bytes: &[u8]) -> String {
    percent_encoding::percent_encode(bytes, URI_PATH).to_string()
}

/// A URI's path as bytes, its `%XX` escapes decoded; a `%` that starts no escape is kept.
pub fn uri_path_bytes(text: &str) -> Vec<u8> {
    percent_encoding::percent_decode_str(text).collect()
}

/// The `s` a count's noun takes in English: "1 file", "2 files".
pub fn plural<N: PartialEq + From<u8>>(n: N) -> &'static str {
    if n == N::from(1) { "" } else { "s" }
}

/// `text` as one line of plain text: each run of line breaks becomes ` ⏎ ` (leading and trailing
/// ones are dropped), and every other character is [`shown`]. Nothing in the result can start
/// another line or a terminal escape sequence, reorder what follows, or hide anything.
pub fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut line_break = false;
    for c in text.chars() {
        if is_line_break(c) {
            line_break = true;
            continue;
        }
        if std::mem::take(&mut line_break) && !out.is_empty() {
            out.push_str(" ⏎ ");
        }
        shown(&mut out, c);
    }
    out
}

/// Text of many lines (an output's tail, a report's body) kept on its lines, each as
/// [`one_line`] makes a field: every kind of line break (`\r\n`, `\r`, NEL, LS, PS, ...)
/// becomes `\n`, and every other character is [`shown`].
pub fn each_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            // `\r\n` is one break: the `\n` makes it.
            '\r' if chars.peek() == Some(&'\n') => {}
            c if is_line_break(c) => out.push('\n'),
            c => shown(&mut out, c),
        }
    }
    out
}

fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// Pushes `c` as a reader may see it: ESC is dropped; every other control character (C0, DEL,
/// C1 such as U+009B, an 8-bit CSI) becomes a space; a run of invisible characters
/// ([`ignorable`]: bidirectional controls such as U+202E, zero-width characters, tags that
/// smuggle text to a model) becomes one U+FFFD, which shows that something was there without
/// letting it reorder or hide what is around it.
fn shown(out: &mut String, c: char) {
    match c {
        '\u{1b}' => {}
        c if c.is_control() => out.push(' '),
        c if ignorable(c) => {
            if !out.ends_with('\u{FFFD}') {
                out.push('\u{FFFD}');
            }
        }
        c => out.push(c),
    }
}

/// Whether `c` is out of place in a name a person or a model reads: a control character, an
/// invisible one ([`ignorable`]) or a line or paragraph separator. [`name`] quotes a name that
/// holds one, with the character escaped.
pub fn unusual(c: char) -> bool {
    c.is_control() || ignorable(c) || matches!(c, '\u{2028}' | '\u{2029}')
}

/// JSON text (as serde_json writes it) with every [`unusual`] character beyond ASCII, and DEL,
/// written as a `\u` escape: the same document to every JSON reader, strings exactly as they
/// were, while its bytes hold nothing a terminal, a log viewer or a diff takes for a control or
/// a reordering. serde_json escapes C0 controls itself; outside strings JSON is ASCII, so every
/// character replaced lies inside a string.
pub fn json_inert(json: &str) -> Cow<'_, str> {
    let escaped = |c: char| c == '\u{7f}' || (!c.is_ascii() && unusual(c));
    if !json.chars().any(escaped) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if escaped(c) {
            push_utf16_escape(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `c` as JSON's `\uXXXX` escape (a surrogate pair beyond the BMP).
fn push_utf16_escape(out: &mut String, c: char) {
    let mut units = [0u16; 2];
    for unit in c.encode_utf16(&mut units) {
        out.push_str(&format!("\\u{unit:04x}"));
    }
}

/// The end of `text` that fits in `max_bytes`, never splitting a character, and how many
/// bytes were left out before it: a message's STATUS block, an output's last lines.
pub fn last_bytes(text: &str, max_bytes: usize) -> (&str, usize) {
    let mut start = text.len().saturating_sub(max_bytes);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    (&text[start..], start)
}

/// `text` cut to `max_chars` characters, the last of them `…` when anything was cut; never
/// splits a character.
pub fn clip(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    let mut clipped: String = text.chars().take(max_chars.saturating_sub(1)).collect();
    clipped.push('…');
    clipped
}

/// Unicode's default-ignorable code points and its other format characters: invisible, or drawn
/// around text rather than as text, and skipped by culture-aware matching, so `#\u{AD}#[` could
/// still read as `##[`.
pub fn ignorable(c: char) -> bool {
    matches!(
        c,
        '\u{AD}'
            | '\u{34F}'
            | '\u{61C}'
            | '\u{115F}'..='\u{1160}'
            | '\u{17B4}'..='\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF0}'..='\u{FFFB}'
            // The other format characters (Unicode's Cf): prefixed number signs, annotation
            // marks and scribal controls a renderer may draw around text or hide.
            | '\u{600}'..='\u{605}'
            | '\u{6DD}'
            | '\u{70F}'
            | '\u{890}'..='\u{891}'
            | '\u{8E2}'
            | '\u{110BD}'
            | '\u{110CD}'
            | '\u{13430}'..='\u{1343F}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

/// A name (a file name, a path, a link target) for a document a person or a model reads: as it
/// is when it is ordinary text on one line, else quoted as a JSON string, so that a line
/// break, a control or an invisible character in it is shown escaped and cannot start a line
/// (a heading, an "APPROVED" of its own) or hide what follows. A name that starts with a
/// quote is quoted too, so a quoted name always means an unusual one.
pub fn name(text: &str) -> Cow<'_, str> {
    if !text.is_empty()
        && !text.starts_with(['"', ' '])
        && !text.ends_with(' ')
        && !text.chars().any(unusual)
    {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if unusual(c) => push_utf16_escape(&mut out, c),
            c => out.push(c),
        }
    }
    out.push('"');
    Cow::Owned(out)
}

/// The candidate a mistyped `typed` most likely meant, if one is close enough: a
/// transposition or one wrong letter (`rnu` for `run`, `lnit` for `lint`), another case, or a
/// near spelling of a longer word.
pub fn closest<'c>(typed: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    candidates
        .into_iter()
        .map(|candidate| {
            let edits = strsim::osa_distance(typed, candidate);
            let near = candidate.eq_ignore_ascii_case(typed)
                || (edits <= 1 && typed.chars().count() >= 2)
                || (edits <= 2 && typed.chars().count() >= 6)
                || strsim::jaro_winkler(typed, candidate) > 0.8;
            (
                candidate,
                near,
                edits,
                strsim::jaro_winkler(typed, candidate),
            )
        })
        .filter(|(_, near, _, _)| *near)
        .min_by(|a, b| a.2.cmp(&b.2).then(b.3.total_cmp(&a.3)))
        .map(|(candidate, ..)| candidate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_collapses_breaks_and_drops_escapes() {
        assert_eq!(one_line("a\r\nb\n\nc\n"), "a ⏎ b ⏎ c");
        assert_eq!(one_line("\nlead\u{2028}x"), "lead ⏎ x");
        assert_eq!(
            one_line("\u{1b}[31mred\u{1b}[0m\tend\u{7}"),
            "[31mred[0m end "
        );
        assert_eq!(one_line("plain text"), "plain text");
    }

    #[test]
    fn invisible_and_control_characters_cannot_reorder_or_hide_a_line() {
        assert_eq!(
            one_line("a\u{202E}b\u{2066}\u{2069}c\u{9B}31m\u{200E}\u{200F}\u{61C}d"),
            "a\u{FFFD}b\u{FFFD}c 31m\u{FFFD}d"
        );
        assert_eq!(one_line("tag\u{E0001}\u{E0041}\u{E007F}s"), "tag\u{FFFD}s");
        assert_eq!(
            each_line("a\r\nb\rc\u{2028}d\u{202E}\u{85}e\u{1b}[0m\tf"),
            "a\nb\nc\nd\u{FFFD}\ne[0m f"
        );
        for text in [
            "\u{9B}2J",
            "\u{202E}\u{2066}\u{200E}\u{61C}\u{2028}\u{2029}\u{7f}",
        ] {
            for shown in [one_line(text), each_line(text)] {
                assert!(!shown.chars().any(|c| c != '\n' && unusual(c)), "{shown:?}");
            }
        }
    }

    #[test]
    fn json_made_inert_reads_back_the_same() {
        let value = serde_json::json!({"file": "evil\u{9B}31m\u{202E}txt.exe", "tag": "\u{E0041}", "del": "\u{7f}", "ok": "café ✓"});
        let json = serde_json::to_string_pretty(&value).unwrap();
        let inert = json_inert(&json);
        assert!(
            !inert
                .chars()
                .any(|c| !c.is_ascii() && unusual(c) || c == '\u{7f}'),
            "{inert}"
        );
        assert!(inert.contains("evil\\u009b31m\\u202etxt.exe"), "{inert}");
        assert!(inert.contains("\\udb40\\udc41"), "{inert}");
        assert!(inert.contains("café ✓"), "{inert}");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&inert).unwrap(),
            value
        );
        assert!(matches!(json_inert("{\"a\": \"b\"}"), Cow::Borrowed(_)));
    }

    #[test]
    fn ordinary_names_stay_as_they_are_and_others_are_quoted_on_one_line() {
        for plain in ["src/lib.rs", "a b/c d.py", "café.md", "-flag", "x\"y"] {
            assert_eq!(name(plain), plain);
        }
        assert_eq!(name("a\n## APPROVED"), "\"a\\n## APPROVED\"");
        assert_eq!(name("tab\there"), "\"tab\\there\"");
        assert_eq!(name("\"quoted\""), "\"\\\"quoted\\\"\"");
        assert_eq!(name("rtl\u{202E}txt.exe"), "\"rtl\\u202etxt.exe\"");
        assert_eq!(name(""), "\"\"");
        assert_eq!(name(" lead"), "\" lead\"");
        for hostile in ["a\nb", "a\u{2028}b", "a\rb", "a\u{1b}[2Jb", "a\u{85}b"] {
            let shown = name(hostile);
            assert!(
                !shown.contains(['\n', '\r', '\u{1b}', '\u{2028}', '\u{85}']),
                "{shown:?}"
            );
            // What is shown reads back as the name, as JSON.
            assert_eq!(serde_json::from_str::<String>(&shown).unwrap(), hostile);
        }
    }

    #[test]
    fn a_typo_finds_the_word_it_meant_and_nothing_far_off() {
        let keys = ["run", "files", "rule", "timeout", "on_fail"];
        assert_eq!(super::closest("rnu", keys), Some("run"));
        assert_eq!(super::closest("fiels", keys), Some("files"));
        assert_eq!(super::closest("on_fial", keys), Some("on_fail"));
        assert_eq!(super::closest("TIMEOUT", keys), Some("timeout"));
        assert_eq!(super::closest("banana", keys), None);
        assert_eq!(super::closest("x", keys), None);
    }
}
