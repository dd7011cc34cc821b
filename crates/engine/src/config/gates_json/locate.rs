//! Finds where a node of a gates.json file starts, for errors found after parsing (a route to a
//! gate that does not exist, a gate with no command). serde_json keeps no positions once it has
//! built a value, so this walks the text the way the parser did. It is only given text serde_json
//! has already accepted, and it never recurses, so no input can make it loop or overflow.
//!
//! JSON is YAML flow syntax, but the YAML locator ([`crate::yaml::locate`]) cannot stand in for
//! this one: its parser ends a line at a lone CR, NEL, LS or PS, where serde_json (whose own
//! errors give the file's other positions) ends one only at LF, so a raw U+2028 in a string
//! moves every later line by one; and it refuses text serde_json accepts (a raw DEL or C1
//! control in a string, a `\ud83d\ude00` escape, a key longer than 1024 characters or whose
//! `:` is on the next line, a tab before the document), which would leave an error there with
//! no position at all.

use std::borrow::Cow;

/// One step of a path into the document: an object key or an array index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// Where a position points on the node a path ends at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aim {
    /// At the last step's key (a gate's name rather than its body).
    Key,
    /// At the value.
    Value,
}

/// The 1-based line and column (in characters) where the node at `path` starts, or its key
/// (`aim`).
pub fn locate(source: &str, path: &[Step<'_>], aim: Aim) -> Option<(usize, usize)> {
    let offset = Scanner {
        text: source.as_bytes(),
        pos: 0,
    }
    .find(path, aim)?;
    let before = source.get(..offset)?;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Some((
        before.matches('\n').count() + 1,
        before[line_start..].chars().count() + 1,
    ))
}

struct Scanner<'s> {
    text: &'s [u8],
    pos: usize,
}

impl<'s> Scanner<'s> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    /// Skips `byte` (after whitespace) if it is next.
    fn eat(&mut self, byte: u8) -> bool {
        self.skip_whitespace();
        let found = self.peek() == Some(byte);
        if found {
            self.pos += 1;
        }
        found
    }

    /// The byte offset of the node at `path`, walking from the start of the document.
    fn find(&mut self, mut path: &[Step<'_>], aim: Aim) -> Option<usize> {
        loop {
            self.skip_whitespace();
            let Some((step, rest)) = path.split_first() else {
                return Some(self.pos);
            };
            match *step {
                Step::Key(wanted) => {
                    if !self.eat(b'{') {
                        return None;
                    }
                    loop {
                        self.skip_whitespace();
                        let key_at = self.pos;
                        let name = self.string()?;
                        if !self.eat(b':') {
                            return None;
                        }
                        if name == wanted {
                            if rest.is_empty() && aim == Aim::Key {
                                return Some(key_at);
                            }
                            break;
                        }
                        self.skip_value()?;
                        if !self.eat(b',') {
                            return None;
                        }
                    }
                }
                Step::Index(wanted) => {
                    if !self.eat(b'[') {
                        return None;
                    }
                    for _ in 0..wanted {
                        self.skip_value()?;
                        if !self.eat(b',') {
                            return None;
                        }
                    }
                    self.skip_whitespace();
                    if self.peek() == Some(b']') {
                        return None;
                    }
                }
            }
            path = rest;
        }
    }

    /// A string's text, unescaped; the scanner must be at its opening quote.
    fn string(&mut self) -> Option<Cow<'s, str>> {
        if self.peek() != Some(b'"') {
            return None;
        }
        let open = self.pos;
        self.pos += 1;
        loop {
            match self.peek()? {
                b'\\' => self.pos += 2,
                b'"' => break,
                _ => self.pos += 1,
            }
        }
        self.pos += 1;
        let text: &'s [u8] = self.text;
        let quoted = &text[open..self.pos];
        let inner = &quoted[1..quoted.len() - 1];
        if inner.contains(&b'\\') {
            serde_json::from_slice::<String>(quoted)
                .ok()
                .map(Cow::Owned)
        } else {
            std::str::from_utf8(inner).ok().map(Cow::Borrowed)
        }
    }

    /// Skips one value of any kind, nested ones by counting brackets outside strings.
    fn skip_value(&mut self) -> Option<()> {
        self.skip_whitespace();
        match self.peek()? {
            b'"' => {
                self.string()?;
            }
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.pos += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.pos += 1;
                }
            }
            _ => {
                while self.peek().is_some_and(|b| {
                    !matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                }) {
                    self.pos += 1;
                }
            }
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "{\n  \"gates\": {\n    \"a\\u0062\": {\"command\": \"x }\", \"n\": [1, {\"k\": 2}]},\n    \"check\": {\n      \"on_fail\": \"lnit\"\n    }\n  },\n  \"hooks\": {\"Stop\": {\"gates\": [\"ab\",  \"zz\"]}}\n}\n";

    #[test]
    fn finds_values_keys_and_array_items() {
        let fail = [Step::Key("gates"), Step::Key("check"), Step::Key("on_fail")];
        assert_eq!(locate(DOC, &fail, Aim::Value), Some((5, 18)));
        assert_eq!(locate(DOC, &fail[..2], Aim::Key), Some((4, 5)));
        let item = [
            Step::Key("hooks"),
            Step::Key("Stop"),
            Step::Key("gates"),
            Step::Index(1),
        ];
        assert_eq!(locate(DOC, &item, Aim::Value), Some((8, 39)));
    }

    #[test]
    fn escaped_keys_match_their_text() {
        assert_eq!(
            locate(DOC, &[Step::Key("gates"), Step::Key("ab")], Aim::Key),
            Some((3, 5))
        );
    }

    #[test]
    fn missing_nodes_have_no_position() {
        assert_eq!(locate(DOC, &[Step::Key("nope")], Aim::Value), None);
        let past_end = [
            Step::Key("hooks"),
            Step::Key("Stop"),
            Step::Key("gates"),
            Step::Index(2),
        ];
        assert_eq!(locate(DOC, &past_end, Aim::Value), None);
        assert_eq!(
            locate(DOC, &[Step::Key("gates"), Step::Index(0)], Aim::Value),
            None
        );
    }

    #[test]
    fn lines_end_at_lf_only_as_serde_json_counts_them() {
        let item = [
            Step::Key("hooks"),
            Step::Key("Stop"),
            Step::Key("gates"),
            Step::Index(1),
        ];
        // What a YAML parser would place a line lower, or refuse.
        for before in ["\u{2028}", "\u{85}", "\u{7f}", "\\ud83d\\ude00"] {
            let doc = DOC.replace("x }", &format!("x {before} }}"));
            assert!(
                serde_json::from_str::<serde_json::Value>(&doc).is_ok(),
                "{doc}"
            );
            assert_eq!(locate(&doc, &item, Aim::Value), Some((8, 39)), "{doc:?}");
        }
        // Lines that end at a lone CR are one line.
        assert_eq!(
            locate(&DOC.replace('\n', "\r"), &item, Aim::Value),
            Some((1, 159))
        );
    }
}
