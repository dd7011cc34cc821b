//! A guard in front of the YAML parser: flow collections (`[…]`, `{…}`) nested very deep make
//! it take quadratic time, so untrusted YAML (done signals, schema documents) is measured first
//! in one linear pass and refused past a depth limit.

use std::fmt;

pub mod locate;
pub mod scalar;

/// The deepest nesting of YAML flow collections (`[…]`, `{…}`) handed to the YAML parser, whose
/// time grows with the square of that depth (a 1 MiB `[[[…]]]` would take hours). The parser
/// refuses anything nested deeper than 128 levels anyway, after reading all of it.
pub const MAX_FLOW_DEPTH: usize = 128;

/// A YAML text whose flow collections may nest deeper than [`MAX_FLOW_DEPTH`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooDeep {
    /// The line (from 1) where the limit was passed.
    pub line: usize,
}

impl fmt::Display for TooDeep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "its `[`/`{{` collections nest more than {MAX_FLOW_DEPTH} deep (line {}); it was not parsed",
            self.line
        )
    }
}

/// Checks, in one linear pass, that the flow collections of a YAML text nest at most
/// [`MAX_FLOW_DEPTH`] deep, so that the (quadratic) YAML parser may be given it. Used for
/// done signals and for the `schema` rule's YAML documents.
///
/// The depth found is never less than the one the parser would reach. Brackets inside quoted
/// scalars, comments and tags do not count for the parser, and telling those apart needs the
/// whole YAML grammar (`it's [` opens no quote, `'it''s'` is one quote, `a 'b` may be one
/// plain scalar). So every reading that may be the parser's is followed at once: at each `'`,
/// `"`, `#` or `!` that could start a quote, a comment or a tag, both "it does" and "it does
/// not" go on, each with the deepest depth that reaches it, and the deepest reading counts. A
/// quoted string that leaves a `[` open may therefore count as one level (128 of them are
/// needed to refuse a document); where a quote or comment can only be one unless the parser is
/// outside every collection (after `[`, `{`, `,`, `]`, `}` or `: `), the other reading is in a
/// scalar outside every collection, where nothing counts until it may have ended.
pub fn check_flow_depth(text: &[u8]) -> Result<(), TooDeep> {
    // Fast path: the depth can never exceed the number of opening brackets.
    if text.iter().filter(|&&b| b == b'[' || b == b'{').count() <= MAX_FLOW_DEPTH {
        return Ok(());
    }
    let mut readings: Readings = [None; MODES];
    readings[OUT] = Some(0);
    let mut before = Before {
        prev: None,
        last_solid: None,
        spaced: false,
    };
    let mut line = 1;
    for &byte in text {
        // Most bytes change no reading: skip the work for them.
        let quiet = QUIET[usize::from(byte)]
            && readings[SINGLE_END].is_none()
            && readings[DOUBLE_ESCAPE].is_none()
            && readings[TAG].is_none();
        if !quiet {
            if byte == b'\n' {
                line += 1;
            }
            readings = step(&readings, byte, &before);
            if readings
                .iter()
                .flatten()
                .any(|&depth| depth > MAX_FLOW_DEPTH)
            {
                return Err(TooDeep { line });
            }
        }
        before.read(byte);
    }
    Ok(())
}

// The modes of a reading: where the parser may be.
const OUT: usize = 0; // outside quotes, comments and tags
const SINGLE: usize = 1; // in a '…' scalar
const SINGLE_END: usize = 2; // just after a ' in a '…' scalar: '' or the end
const DOUBLE: usize = 3; // in a "…" scalar
const DOUBLE_ESCAPE: usize = 4; // just after a \ in a "…" scalar
const COMMENT: usize = 5; // in a # comment
const TAG: usize = 6; // in a !tag
const PLAIN: usize = 7; // outside every collection, in a plain or block scalar
const MODES: usize = 8;
/// The readings: for each mode, the deepest flow level a reading in it may be at.
type Readings = [Option<usize>; MODES];

/// The bytes that change no reading but those just after a `'` or `\` in a quote, or in a
/// tag.
const QUIET: [bool; 256] = {
    let mut quiet = [false; 256];
    let mut byte = 0;
    while byte < 0x80 {
        quiet[byte] = true;
        byte += 1;
    }
    let mut i = 0;
    let loud = b"[]{}'\"#!\\:,\r\n";
    while i < loud.len() {
        quiet[loud[i] as usize] = false;
        i += 1;
    }
    quiet
};

/// What came before the byte being read.
struct Before {
    /// The previous byte.
    prev: Option<u8>,
    /// The last byte that is not a space, tab or line break.
    last_solid: Option<u8>,
    /// Whether spaces or line breaks follow `last_solid`.
    spaced: bool,
}

impl Before {
    /// `byte` has been read.
    fn read(&mut self, byte: u8) {
        self.prev = Some(byte);
        if matches!(byte, b' ' | b'\t' | b'\r' | b'\n') {
            self.spaced = true;
        } else {
            self.last_solid = Some(byte);
            self.spaced = false;
        }
    }
    /// A quote, comment or tag can start here: after a space or a line break (also NEL,
    /// LS, PS, and a BOM: any non-ASCII byte counts), an indicator or a closing quote.
    fn boundary(&self) -> bool {
        self.prev
            .is_none_or(|p| p <= b' ' || p >= 0x80 || b"[]{},?:'\"".contains(&p))
    }
    /// A quote here starts one unless the parser is outside every flow collection (in a
    /// plain scalar `a: x, 'y`, or a block scalar): no plain scalar in a collection holds
    /// `[`, `{`, `,`, `]`, `}` or `: `.
    fn quote_starts(&self) -> bool {
        match self.last_solid {
            None => true,
            Some(b'[' | b'{' | b',' | b']' | b'}') => true,
            Some(b':') => self.spaced,
            Some(_) => false,
        }
    }
    /// Likewise for a `#`, which in a collection starts a comment after a space.
    fn comment_starts(&self) -> bool {
        self.prev.is_none_or(|p| {
            matches!(
                p,
                b' ' | b'\t' | b'\r' | b'\n' | b'[' | b'{' | b',' | b']' | b'}'
            )
        })
    }
}

/// The readings after `byte`, from those before it.
fn step(readings: &Readings, byte: u8, before: &Before) -> Readings {
    let mut next: Readings = [None; MODES];
    for (mode, depth) in readings.iter().enumerate() {
        let Some(depth) = *depth else { continue };
        match mode {
            OUT => outside(&mut next, depth, byte, before),
            SINGLE if byte == b'\'' => put(&mut next, SINGLE_END, depth),
            SINGLE => put(&mut next, SINGLE, depth),
            // '' is a quote inside the scalar; anything else follows its end.
            SINGLE_END if byte == b'\'' => put(&mut next, SINGLE, depth),
            SINGLE_END => outside(&mut next, depth, byte, before),
            DOUBLE => match byte {
                b'\\' => put(&mut next, DOUBLE_ESCAPE, depth),
                b'"' => put(&mut next, OUT, depth),
                _ => put(&mut next, DOUBLE, depth),
            },
            DOUBLE_ESCAPE => put(&mut next, DOUBLE, depth),
            COMMENT => match byte {
                b'\n' | b'\r' => put(&mut next, OUT, depth),
                // Maybe part of a NEL, LS or PS line break.
                0x80.. => {
                    put(&mut next, COMMENT, depth);
                    put(&mut next, OUT, depth);
                }
                _ => put(&mut next, COMMENT, depth),
            },
            // Such a scalar may end at a line break, `: ` or ` #`; until then nothing in it
            // counts. (Line breaks also end a directive and continue a block scalar.)
            PLAIN => {
                put(&mut next, PLAIN, 0);
                match byte {
                    b'\n' | b'\r' | b':' | 0x80.. => put(&mut next, OUT, 0),
                    b'#' if before.comment_starts() => put(&mut next, COMMENT, 0),
                    _ => {}
                }
            }
            _ => {
                // TAG: `,`, `[`, `]` may belong to it or end it.
                if is_tag_byte(byte) || matches!(byte, b',' | b'[' | b']') {
                    put(&mut next, TAG, depth);
                }
                if !is_tag_byte(byte) {
                    outside(&mut next, depth, byte, before);
                }
            }
        }
    }
    next
}

fn put(next: &mut Readings, mode: usize, depth: usize) {
    next[mode] = next[mode].max(Some(depth));
}

/// One byte read outside quotes, comments and tags, by a reading at `depth`.
fn outside(next: &mut Readings, depth: usize, byte: u8, before: &Before) {
    let boundary = before.boundary();
    match byte {
        b'[' | b'{' => put(next, OUT, depth + 1),
        b']' | b'}' => put(next, OUT, depth.saturating_sub(1)),
        // Not a quote or comment here only in a scalar outside every collection.
        b'\'' | b'"' if boundary && before.quote_starts() => put(next, PLAIN, 0),
        b'#' if before.comment_starts() => put(next, PLAIN, 0),
        _ => put(next, OUT, depth),
    }
    if boundary {
        match byte {
            b'\'' => put(next, SINGLE, depth),
            b'"' => put(next, DOUBLE, depth),
            b'#' => put(next, COMMENT, depth),
            b'!' => put(next, TAG, depth),
            _ => {}
        }
    }
}

/// Bytes that may continue a tag (a URI), also `<`, `>` of a verbatim `!<…>`, and `#`
/// (which would be an error).
fn is_tag_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"-_;/?:@&=+$.%!~*'()<>#".contains(&byte)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::done::{Declared, MAX_BODY, parse};

    #[test]
    fn deep_flow_nesting_is_refused_before_parsing() {
        let depth = MAX_FLOW_DEPTH;
        let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        // Both are refused by the linear check (it names its limit) before any parser runs.
        let bomb = format!("status: {}", nested(MAX_BODY / 2 - 8));
        let why = parse(&bomb).unwrap_err();
        assert!(why.contains(&format!("more than {depth} deep")), "{why}");
        assert!(why.contains("`status:`"), "{why}");
        // Without a report key it is prose: kept, but not parsed either.
        let prose = format!("a: {}", nested(MAX_BODY / 2 - 8));
        assert_eq!(parse(&prose).unwrap().declared(), Declared::Missing);

        assert_eq!(check_flow_depth(nested(depth).as_bytes()), Ok(()));
        assert_eq!(
            check_flow_depth(nested(depth + 1).as_bytes()),
            Err(TooDeep { line: 1 })
        );
        let mappings = format!("{}{}", "{a: ".repeat(depth + 1), "}".repeat(depth + 1));
        assert!(check_flow_depth(mappings.as_bytes()).is_err());
        let lines = format!("x:\n{}", "[\n".repeat(depth + 1));
        assert_eq!(
            check_flow_depth(lines.as_bytes()),
            Err(TooDeep { line: depth + 2 })
        );
    }

    #[test]
    fn brackets_in_quotes_comments_and_tags_cannot_hide_depth() {
        let deep = |chunk: &str| format!("a: {}", chunk.repeat(2 * MAX_FLOW_DEPTH));
        for hidden in [
            // Closing brackets inside quoted scalars do not close anything.
            deep(r#"[[["]]]", "#),
            deep("[[['a]]]', "),
            deep("[[['it''s]]]', "),
            deep(r#"[[["\"]]]", "#),
            // Nor in comments, nor in tags.
            deep("[[[ # ]]]\n"),
            deep("[[[[]#]]]\n, "),
            deep("[[[ !<t]]]> x, "),
            // An apostrophe in a plain scalar opens no quote that would hide what follows.
            format!("a: x '\nb: {}\nc: '", "[[['a]]]', ".repeat(100)),
            format!("a: x \"\nb: {}\nc: \"", "[[[\"a]]]\", ".repeat(100)),
            format!("a: x #\nb: {}", "[[[ #]]]\n".repeat(100)),
        ] {
            // Each of these nests past the limit for the YAML parser.
            assert!(
                check_flow_depth(hidden.as_bytes()).is_err(),
                "not refused: {}",
                &hidden[..80]
            );
        }
    }

    #[test]
    fn ordinary_documents_pass_the_depth_check() {
        let strings = format!(
            "files_touched: [{}]\n",
            r#""app/[id]/page.tsx", 'it''s {x}', "a\"[b]\"", "#.repeat(1000)
        );
        let prose = "summary: it's [done] {really} # see [1]\n".repeat(1000);
        let flow = format!("a: {}\n", "[1, {b: [2, \"]\"]}], ".repeat(1000));
        for text in [strings, prose, flow] {
            assert_eq!(check_flow_depth(text.as_bytes()), Ok(()), "{}", &text[..80]);
        }
    }
}
