//! A sed script read command by command, as GNU sed reads it, for one question: does it only
//! edit the stream, or can it run a program (`e`, `s///e`) or write a file (`w`, `W`,
//! `s///w`)? A command this reader does not know, or text it cannot follow, answers "it can".

use std::iter::Peekable;
use std::str::Chars;

/// Whether `script` neither runs a program nor writes a file.
pub(crate) fn only_edits(script: &str) -> bool {
    let mut chars = script.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace() || *c == ';').is_some() {}
        if chars.peek().is_none() {
            return true;
        }
        if !address(&mut chars) {
            return false;
        }
        if chars.next_if_eq(&',').is_some() && !address(&mut chars) {
            return false;
        }
        while chars.next_if(|c| c.is_whitespace() || *c == '!').is_some() {}
        let Some(command) = chars.next() else {
            return true;
        };
        let followed = match command {
            '{' | '}' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x'
            | 'z' | 'F' => true,
            // Text: to the end of the line, a backslash-newline going on.
            'a' | 'i' | 'c' => {
                to_line_end(&mut chars);
                true
            }
            // A comment or a file name: to the end of the line, a backslash included.
            '#' | 'r' | 'R' => {
                while chars.next_if(|c| *c != '\n').is_some() {}
                true
            }
            // A label, a version or a number: to a `;` or whitespace (GNU sed ends them at
            // either, and what follows whitespace is read as a command).
            ':' | 'b' | 't' | 'T' | 'v' | 'q' | 'Q' | 'l' | 'L' => {
                while chars
                    .next_if(|c| !matches!(c, ';' | '}') && !c.is_whitespace())
                    .is_some()
                {}
                true
            }
            's' => substitution(&mut chars),
            'y' => {
                let Some(delimiter) = chars.next() else {
                    return false;
                };
                part(&mut chars, delimiter, Brackets::Plain)
                    && part(&mut chars, delimiter, Brackets::Plain)
            }
            // `e`, `w`, `W`, and anything unknown.
            _ => false,
        };
        if !followed {
            return false;
        }
    }
}

/// Skips a line address (`12`, `$`, `1~2`, `/re/I`, `\%re%`); false if it cannot be read.
fn address(chars: &mut Peekable<Chars<'_>>) -> bool {
    match chars.peek() {
        Some('$') => {
            chars.next();
        }
        Some(c) if c.is_ascii_digit() || *c == '+' || *c == '~' => {
            while chars
                .next_if(|c| c.is_ascii_digit() || *c == '~' || *c == '+')
                .is_some()
            {}
        }
        Some('/') => {
            chars.next();
            if !part(chars, '/', Brackets::Hold) {
                return false;
            }
            while chars.next_if(|c| matches!(c, 'I' | 'M')).is_some() {}
        }
        Some('\\') => {
            chars.next();
            let Some(delimiter) = chars.next() else {
                return false;
            };
            if !part(chars, delimiter, Brackets::Hold) {
                return false;
            }
            while chars.next_if(|c| matches!(c, 'I' | 'M')).is_some() {}
        }
        _ => {}
    }
    true
}

/// `s/re/replacement/flags`: false if a flag runs or writes (`e`, `w`), or is not known.
fn substitution(chars: &mut Peekable<Chars<'_>>) -> bool {
    let Some(delimiter) = chars.next() else {
        return false;
    };
    if delimiter == '\n'
        || delimiter == '\\'
        || !part(chars, delimiter, Brackets::Hold)
        || !part(chars, delimiter, Brackets::Plain)
    {
        return false;
    }
    while let Some(&flag) = chars.peek() {
        if matches!(flag, ';' | '\n' | '}') || flag.is_whitespace() {
            return true;
        }
        if !(flag.is_ascii_digit() || matches!(flag, 'g' | 'p' | 'i' | 'I' | 'm' | 'M')) {
            return false;
        }
        chars.next();
    }
    true
}

/// Whether a `[` opens a bracket expression in a part: in a regular expression it does (and a
/// delimiter inside does not end the part, as in GNU sed); in a replacement or `y`'s lists it
/// is a plain character.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Brackets {
    Hold,
    Plain,
}

/// Up to and past an unescaped `delimiter`; false if it never comes.
fn part(chars: &mut Peekable<Chars<'_>>, delimiter: char, brackets: Brackets) -> bool {
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '[' if brackets == Brackets::Hold => {
                // `[]…]` and `[^]…]` hold a `]` first; `[:alpha:]` nests.
                chars.next_if_eq(&'^');
                chars.next_if_eq(&']');
                while let Some(c) = chars.next() {
                    if c == '[' && chars.next_if(|c| matches!(c, ':' | '.' | '=')).is_some() {
                        while let Some(c) = chars.next() {
                            if matches!(c, ':' | '.' | '=') && chars.next_if_eq(&']').is_some() {
                                break;
                            }
                        }
                    } else if c == ']' {
                        break;
                    }
                }
            }
            c if c == delimiter => return true,
            _ => {}
        }
    }
    false
}

fn to_line_end(chars: &mut Peekable<Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '\n' => return,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_only() {
        for script in [
            "s/a/b/g",
            "s/[/]/x/",
            "1,3d;$p",
            "/^#/d; s|x|y|2p",
            "/start/,/end/{s/a/b/;p}",
            "y/abc/xyz/",
            "10q",
            "s/we/ew/",
            "a\\\nwrite this",
        ] {
            assert!(only_edits(script), "{script}");
        }
    }

    #[test]
    fn runs_or_writes() {
        for script in [
            "e touch ../p",
            "1e touch ../p",
            "s/x/touch ..\\/p/e",
            "s/x/y/w ../p",
            "s/x/y/gw out",
            "w ../p",
            "/x/W out",
            "p;w out",
            "s/[/]/x/w ../p",
            "{w out\n}",
            "q;w out",
            ":a;w out",
            "ba;e touch p",
            "s/x/[/\nw ../p\ns/y/]/",
            "y/[/x/\nw ../p\ny/]/z/",
            "b x w ../p\n:x",
            ":x w ../p",
            "v 4.2 w ../p",
            "#x\\\nw ../p",
            "1r f\\\nw ../p",
            "s/a",
            "K",
        ] {
            assert!(!only_edits(script), "{script}");
        }
    }
}
