//! A command's output as a terminal shows it, for a gate's `output_tail`: its escape
//! sequences (colours, titles, links, charset shifts) taken out, since they are how the text
//! looked, not what it said; every other character kept, controls among them (a NUL, a BEL),
//! so nothing the command wrote is silently joined or lost. Where the tail lands escapes them
//! (the verdict's JSON through `text::json_inert`, the text formats through `text::one_line`).

/// `output` without its escape sequences (ESC and C1 `CSI`/`OSC`/`DCS` introduced), every
/// other character as written.
pub fn shown(output: &str) -> String {
    let mut out = String::with_capacity(output.len());
    let mut chars = output.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                Some('[') => control_sequence(&mut chars),
                Some(']' | 'P' | 'X' | '^' | '_') => string_sequence(&mut chars),
                // `ESC ( B` and the like: intermediates, then one final character.
                Some(' '..='/') => {
                    while chars.next_if(|c| matches!(c, ' '..='/')).is_some() {}
                    chars.next();
                }
                // `ESC c`, `ESC =`: one character; anything else ends the sequence.
                Some(_) | None => {}
            },
            '\u{9b}' => control_sequence(&mut chars),
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => string_sequence(&mut chars),
            c => out.push(c),
        }
    }
    out
}

/// The rest of a `CSI`: parameters and intermediates, then its final character.
fn control_sequence(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while chars.next_if(|c| matches!(c, ' '..='?')).is_some() {}
    chars.next_if(|c| matches!(c, '@'..='~'));
}

/// The rest of an `OSC` (or `DCS`, `SOS`, `PM`, `APC`): up to its BEL or string terminator.
fn string_sequence(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => return,
            '\u{1b}' => {
                chars.next_if_eq(&'\\');
                return;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_go_and_every_other_control_stays() {
        assert_eq!(
            shown("\u{1b}[1;31merror\u{1b}[0m: x\0y\u{7}z"),
            "error: x\0y\u{7}z"
        );
        assert_eq!(shown("\u{1b}(Bplain\u{1b}[m"), "plain");
        assert_eq!(
            shown("\u{1b}]8;;https://x\u{1b}\\link\u{1b}]8;;\u{1b}\\ \u{1b}]0;title\u{7}end"),
            "link end"
        );
        assert_eq!(shown("a\u{9b}31mb\u{85}c"), "ab\u{85}c");
        assert_eq!(shown("cut \u{1b}["), "cut ");
        assert_eq!(shown("\u{1b}"), "");
    }
}
