//! The general reader: output no known format claims, read as a person reads it. A location is
//! any `path:line[:col]`, `path(line,col)`, `path, line N` or `line N … path` whose path names a
//! real file of the task (asked of [`Files`]); a file named alone on a line heads the
//! `line:col message` rows under it; a location with no words of its own (a snippet frame's
//! `╭─[path:3:5]`, `Location: path:3`) takes its message from the block it frames. A location
//! whose file does not exist is never a finding: that is what keeps this reader from inventing
//! any, whatever a worker's files make a tool print.

use super::lines::{self, described, is_severity, number};
use crate::Finding;

/// Whether a path as a tool printed it (relative to the directory the tool ran in, or
/// absolute) names a regular file of the task. Implementations need not remember answers or
/// bound their number: [`Known`] does both.
pub trait Files {
    fn is_file(&self, path: &str) -> bool;

    /// The directories (from where the tool ran) the tool was given to check: a tool that
    /// names files relative to the directory it was given (`djlint templates` printing
    /// `index.html`) names them under one of these.
    fn given_dirs(&self) -> &[String] {
        &[]
    }
}

/// Knows no file: the general reader finds nothing (for callers with no task at hand).
pub struct NoFiles;

impl Files for NoFiles {
    fn is_file(&self, _: &str) -> bool {
        false
    }
}

/// Most distinct paths asked of the file system for one output: a hostile output naming a
/// million paths costs this many lookups, then is read as naming no file.
const MAX_LOOKUPS: usize = 4096;

/// Paths tried on one line (each location's path, grown word by word over spaces).
const MAX_TRIES_PER_LINE: usize = 24;

/// Words a path holding spaces may span.
const MAX_PATH_WORDS: usize = 6;

/// The longest all of one output's lookups may take together: a task whose links make each
/// lookup slow (a deep chain of them) cannot hold a verdict back; past it every path is read as
/// naming no file.
const MAX_LOOKUP_TIME: std::time::Duration = std::time::Duration::from_secs(2);

/// [`Files`] asked once per path, at most [`MAX_LOOKUPS`] times and for at most
/// [`MAX_LOOKUP_TIME`].
pub struct Known<'a> {
    files: &'a dyn Files,
    answers: std::collections::HashMap<String, bool>,
    spent: std::time::Duration,
}

impl<'a> Known<'a> {
    pub fn new(files: &'a dyn Files) -> Self {
        Known {
            files,
            answers: std::collections::HashMap::new(),
            spent: std::time::Duration::ZERO,
        }
    }

    /// The file `path` names, as the task names it from where the tool ran: `path` itself, or
    /// `path` under one of the directories the tool was given (a relative path only).
    fn find(&mut self, path: &str) -> Option<String> {
        if self.is_file(path) {
            return Some(path.to_owned());
        }
        if path.starts_with('/') {
            return None;
        }
        let files = self.files;
        files
            .given_dirs()
            .iter()
            .map(|dir| format!("{}/{path}", dir.trim_end_matches('/')))
            .find(|under| self.is_file(under))
    }

    fn is_file(&mut self, path: &str) -> bool {
        let path = path.strip_prefix("file://").unwrap_or(path);
        if path.trim().is_empty()
            || path.contains("://")
            || path.len() > 4096
            || path.contains('\0')
        {
            return false;
        }
        if let Some(&known) = self.answers.get(path) {
            return known;
        }
        if self.answers.len() >= MAX_LOOKUPS || self.spent >= MAX_LOOKUP_TIME {
            return false;
        }
        let started = std::time::Instant::now();
        let answer = self.files.is_file(path);
        self.spent += started.elapsed();
        self.answers.insert(path.to_owned(), answer);
        answer
    }
}

/// One line's location: the file, line and column, and the byte range of the line it took.
struct Place {
    file: String,
    line: u32,
    column: Option<u32>,
    start: usize,
    end: usize,
}

/// What the reader remembers of the lines before.
#[derive(Default)]
struct Context {
    /// A file named alone on a line, heading the rows under it, and whether a row was read.
    group: Option<(String, bool)>,
    /// A blank line came since the heading: only a row that says it is a line (`Line 3:`)
    /// goes on under it, as tools that space their blocks print them.
    paused: bool,
    /// A row under this heading said `Line N`: the tool labels its lines, so a bare number
    /// under it (a table's issue count) is no line.
    labeled: bool,
    /// Inside a stack trace (`goroutine 1 [running]:`, `Traceback (most recent call last):`)
    /// until its blank line: its locations are where a program crashed, not findings.
    trace: bool,
    /// Lines that said what a finding is (its own line, or the header a frame took): a frame
    /// under one of them again is a related span of the same diagnostic.
    taken: std::collections::HashSet<usize>,
}

/// How far above a frame its diagnostic's header may be.
const MAX_HEADER_DISTANCE: usize = 16;

/// How long a finding's message may grow by the notes folded into it.
const MAX_NOTES_CHARS: usize = 400;

/// Reads the lines not `claimed` by a known format into `found` (the known formats' findings,
/// each with the index of its line; kept in the order of the lines), and says how many lines
/// that read as a diagnostic (a severity word) gave no finding.
///
/// A location indented under a finding (tsc's related information, a note naming another
/// place) is part of that finding, and a location with no words of its own at a place already
/// found (a summary's `2  src/a.ts:2`) is that finding again.
pub fn read(
    lines: &[&str],
    claimed: &[bool],
    found: &mut Vec<(usize, Finding)>,
    known: &mut Known<'_>,
) -> usize {
    let mut unread = Vec::new();
    let mut context = Context::default();
    let known_found = found.len();
    let mut next_known = 0;
    // Where findings are, to know a bare location already found without a search.
    type Place = (Option<String>, Option<u32>);
    let mut lines_found: std::collections::HashSet<Place> = found
        .iter()
        .map(|(_, f)| (f.file.clone(), f.line))
        .collect();
    // The finding the lines below may be notes of (its position in `found`) and its indent.
    let mut last: Option<(usize, usize)> = None;
    for (index, line) in lines.iter().enumerate() {
        while next_known < known_found && found[next_known].0 <= index {
            last = Some((next_known, indent_of(lines[found[next_known].0])));
            next_known += 1;
        }
        let trimmed = line.trim();
        if trimmed.is_empty() {
            context.trace = false;
            // A blank line ends a file's rows (a summary or another tool's lines follow),
            // unless a row labelled as a line comes next.
            context.paused = context.group.is_some();
            continue;
        }
        if starts_trace(trimmed) {
            context.trace = true;
        }
        if context.trace {
            continue;
        }
        if std::mem::take(&mut context.paused) && labeled_line(trimmed).is_none() {
            context.group = None;
        }
        if claimed.get(index).copied().unwrap_or(false) {
            // A known format's file heading still heads rows that format cannot read.
            context.group = group_heading(trimmed, line.starts_with(char::is_whitespace), known)
                .map(|file| (file, false));
            context.labeled = false;
            continue;
        }
        let indent = indent_of(line);
        let Some((finding, kind)) = read_line(lines, index, claimed, &mut context, known) else {
            if is_diagnostic(trimmed) {
                unread.push(index);
            }
            if indent == 0 && has_letters(trimmed) && !is_snippet(trimmed) {
                last = None;
            }
            continue;
        };
        let bare = kind == Kind::Bare;
        if let Some((at, _)) = last.filter(|(_, under)| indent > *under && kind != Kind::Row) {
            let message = &mut found[at].1.message;
            if message.len() < MAX_NOTES_CHARS {
                message.push_str("; ");
                message.push_str(trimmed);
            }
            continue;
        }
        let place = (finding.file.clone(), finding.line);
        // A bare location without a column at a line already found is a summary's row.
        if bare && finding.column.is_none() && lines_found.contains(&place) {
            continue;
        }
        lines_found.insert(place);
        last = Some((found.len(), indent));
        found.push((index, polished(finding)));
    }
    if found.len() > known_found {
        found.sort_by_key(|(index, _)| *index);
    }
    // A header a frame below it took was read after all.
    unread.retain(|index| !context.taken.contains(index));
    unread.len()
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// A line of source quoted under a finding: its number, then the code (`8 const x = 1;`,
/// `1 │ let x`).
fn is_snippet(line: &str) -> bool {
    number(line).is_some_and(|(_, rest)| rest.starts_with([' ', '│', '|']))
}

/// How a finding was read: a location on its line, a bare one whose message came from a header
/// above it, or a row under a file heading (never a note of the row above it).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Located,
    Bare,
    Row,
}

/// The finding on line `index`, if it is one, and how it was read.
fn read_line(
    lines: &[&str],
    index: usize,
    claimed: &[bool],
    context: &mut Context,
    known: &mut Known<'_>,
) -> Option<(Finding, Kind)> {
    let line = lines[index];
    let trimmed = line.trim();
    let indented = line.len() != line.trim_start().len();
    if is_stack_frame(trimmed) {
        return None;
    }
    // A line of quoted source (`12 | code`, `1 const x = "a.py:3"`) names places only in the
    // code it quotes; under a file heading it may still be a row.
    let place = if is_snippet(trimmed) {
        None
    } else {
        locate(trimmed, known)
    };
    if let Some(place) = place {
        context.group = None;
        let before = &trimmed[..place.start];
        let after = &trimmed[place.end..];
        if is_stack_frame_after(after) || is_log_stamp(before) || is_summary(before) {
            return None;
        }
        let finding = Finding::at(place.file, place.line, place.column, "");
        let under = lines
            .get(index + 1)
            .filter(|n| indent_of(n) > indent_of(line))
            .and_then(|n| words_of(n.trim()));
        if let Some(text) = words_of(after) {
            context.taken.insert(index);
            // `path:7 in function `load`:` over an indented message: the message is the
            // line under it, said where.
            if let (true, Some(message)) = (after.trim_end().ends_with(':'), under) {
                let within = text;
                let mut finding = described(finding, message);
                finding.message = format!("{} ({})", finding.message, within.trim());
                return Some((with_severity_of(finding, before), Kind::Located));
            }
            return Some((
                with_severity_of(described(finding, text), before),
                Kind::Located,
            ));
        }
        if let Some(text) = words_of(before).filter(|t| !is_label(t)) {
            context.taken.insert(index);
            return Some((described(finding, trim_preposition(text)), Kind::Located));
        }
        return bare_location(lines, index, claimed, context, finding, under);
    }
    if let Some(finding) = group_row(trimmed, indented, lines.get(index + 1), context) {
        return Some((finding, Kind::Row));
    }
    // Under a file heading, a sentence that says where (`… on line 3 at column 16`).
    if let (Some((file, rows)), Some((at, end, line_no, column))) = (
        context.group.as_mut(),
        // Not a table's continuation (`|   | … on line 2.`): a sentence of its own.
        line_phrase(trimmed)
            .filter(|(_, end, _, _)| !has_letters(&trimmed[*end..]) && !trimmed.starts_with('|')),
    ) {
        let message = format!("{} {}", &trimmed[..at], &trimmed[end..]);
        if let Some(text) = words_of(trim_preposition(message.trim())) {
            *rows = true;
            // `1: warning at line 1, col 1` over `Don't use IDs in selectors.`: a row that says
            // only its severity has its message on the line under it.
            let text = match lines.get(index + 1).map(|n| n.trim()) {
                Some(next) if only_severity(text) && lines::location(next).is_none() => {
                    words_of(next).map_or(text.to_owned(), |m| format!("{text}: {m}"))
                }
                _ => text.to_owned(),
            };
            let finding = described(Finding::at(file.clone(), line_no, column, ""), &text);
            return Some((finding, Kind::Row));
        }
    }
    if let Some(file) = group_heading(trimmed, indented, known) {
        context.group = Some((file, false));
        context.labeled = false;
        return None;
    }
    None
}

/// `1: warning`, `ERROR`: a severity and a counter, nothing that says what is wrong.
fn only_severity(text: &str) -> bool {
    let mut words = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && !w.bytes().all(|b| b.is_ascii_digit()));
    words.next().is_some_and(is_severity) && words.next().is_none()
}

/// How far past a bare location the message under its quoted source may be.
const MAX_QUOTE_LINES: usize = 12;

/// Whether the lines from `at` quote source: a snippet row (`> 1| code`, `2 | code`), or a line
/// with a caret line under it (`  return a;` over `         ^`).
fn quotes_source(lines: &[&str], at: usize) -> bool {
    let Some(first) = lines.get(at).map(|l| l.trim()) else {
        return false;
    };
    is_snippet(first.trim_start_matches('>').trim_start())
        || lines.get(at + 1).is_some_and(|n| is_caret(n.trim()))
}

/// A caret line marking a column: `^`, `^^^`, `-----^`, `~~~^`.
fn is_caret(trimmed: &str) -> bool {
    trimmed.contains('^') && trimmed.chars().all(|c| matches!(c, '^' | '-' | '~' | ' '))
}

/// The message a bare location's quoted source is followed by: the first line at the margin
/// that is neither quote nor caret, within a few lines, if it says something and is no location
/// of its own.
fn message_after_quote<'a>(lines: &[&'a str], index: usize) -> Option<&'a str> {
    for (at, line) in lines
        .iter()
        .enumerate()
        .skip(index + 1)
        .take(MAX_QUOTE_LINES)
    {
        let trimmed = line.trim();
        let over_caret = lines.get(at + 1).is_some_and(|n| is_caret(n.trim()));
        if trimmed.is_empty()
            || line.starts_with(char::is_whitespace)
            || is_caret(trimmed)
            || over_caret
        {
            continue;
        }
        if lines::location(trimmed).is_some() || is_snippet(trimmed) {
            return None;
        }
        return words_of(trimmed);
    }
    None
}

/// `ERROR: 1:1   rule  message`: a row that opens with a severity, then a line and column.
fn is_severity_row(trimmed: &str) -> bool {
    trimmed
        .split_once(": ")
        .filter(|(word, _)| is_severity(word))
        .and_then(|(_, rest)| number(rest))
        .is_some_and(|(_, rest)| rest.starts_with(':'))
}

/// `Line 3: text`, `Line: 3`, `Ln 3`: a row that says it is a line, and its number and text.
fn labeled_line(trimmed: &str) -> Option<(u32, &str)> {
    let rest = strip_label(trimmed);
    if rest.len() == trimmed.len() || !trimmed[..1].eq_ignore_ascii_case("l") {
        return None;
    }
    let (line_no, after) = number(rest)?;
    if !(after.is_empty() || after.starts_with([':', ' ', ','])) {
        return None;
    }
    Some((line_no, after.trim_start_matches([':', ' ', ','])))
}

/// A location with no words of its own on its line (`page.pug:1:5`), read by what is around
/// it: rows under it, the message after the source it quotes, the line under it, or the header
/// of the block it frames.
fn bare_location(
    lines: &[&str],
    index: usize,
    claimed: &[bool],
    context: &mut Context,
    finding: Finding,
    under: Option<&str>,
) -> Option<(Finding, Kind)> {
    let indented = lines[index].starts_with(char::is_whitespace);
    // A bare location over rows of its own (`app.ts:1:1` over `ERROR: 1:1  rule  msg`) heads
    // them: the rows are the findings.
    if !indented
        && lines
            .get(index + 1)
            .is_some_and(|n| is_severity_row(n.trim()))
    {
        context.group = Some((finding.file.unwrap_or_default(), false));
        context.labeled = false;
        return None;
    }
    // A bare location over the source it quotes (`> 1| code`, a line with a caret under
    // it): the message is the first line at the margin after the quote.
    if !indented && quotes_source(lines, index + 1) {
        return message_after_quote(lines, index)
            .map(|text| (described(finding, text), Kind::Located));
    }
    // A bare location: the line under it says what it is (a two-line form), or the header
    // of the block it frames does.
    if let Some(text) = under.filter(|_| !indented) {
        return Some((described(finding, text), Kind::Located));
    }
    match header_above(lines, index, claimed) {
        Some(at) if context.taken.contains(&at) => None,
        Some(at) => {
            context.taken.insert(at);
            Some((described(finding, lines[at].trim()), Kind::Bare))
        }
        None => Some((finding, Kind::Bare)),
    }
}

/// The header of the block a frame on line `index` belongs to: the nearest line above it, in
/// its block, less indented than it, that says something and is not quoted source.
fn header_above(lines: &[&str], index: usize, claimed: &[bool]) -> Option<usize> {
    let indent = indent_of(lines[index]);
    for at in (index.saturating_sub(MAX_HEADER_DISTANCE)..index).rev() {
        let line = lines[at];
        if line.trim().is_empty() || claimed.get(at).copied().unwrap_or(false) {
            return None;
        }
        if indent_of(line) < indent && has_letters(line) && !is_snippet(line.trim()) {
            return Some(at);
        }
    }
    None
}

/// The first location on `line` whose file exists.
fn locate(line: &str, known: &mut Known<'_>) -> Option<Place> {
    let mut tries = 0;
    let bytes = line.as_bytes();
    for (at, &byte) in bytes.iter().enumerate() {
        if tries >= MAX_TRIES_PER_LINE {
            return None;
        }
        // `path: line 3`, `"path", line 3`: the path ends before its separator.
        let worded = |at| after_line_word(line, at).map(|place| (place, at));
        let place = match byte {
            b':' => after_colon(line, at)
                .or_else(|| after_field(line, at))
                .map(|place| (place, at))
                .or_else(|| worded(at)),
            b'(' => after_paren(line, at).map(|place| (place, at)),
            b'[' => after_bracket(line, at).map(|place| (place, at)),
            // Only where a run of separators starts: each run is looked past once.
            b',' | b' ' if at == 0 || !matches!(bytes[at - 1], b',' | b' ' | b':') => worded(at),
            _ => continue,
        };
        let Some(((line_no, column, end), at)) = place else {
            continue;
        };
        let path_end = match bytes[at] {
            b'(' | b'[' => at,
            b':' if end > at && bytes[at + 1].is_ascii_digit() => at,
            _ => at - (line[..at].len() - line[..at].trim_end_matches([',', ' ', '"']).len()),
        };
        for start in path_starts(line, path_end) {
            tries += 1;
            let file = unquoted(&line[start..path_end]);
            let file = file.strip_prefix("file://").unwrap_or(file);
            if let Some(file) = known.find(file).filter(|f| !in_dependencies(f)) {
                return Some(Place {
                    file,
                    line: line_no,
                    column,
                    start,
                    end,
                });
            }
            if tries >= MAX_TRIES_PER_LINE {
                return None;
            }
        }
    }
    line_word_then_path(line, known)
}

/// `:12` or `:12:5` (not `:12.5`, a version or a time with fractions).
fn after_colon(line: &str, colon: usize) -> Option<(u32, Option<u32>, usize)> {
    let rest = &line[colon + 1..];
    let (line_no, after) = number(rest)?;
    let (column, after) = match after.strip_prefix(':').and_then(number) {
        Some((column, after)) => (Some(column), after),
        None => (None, after),
    };
    if after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '.' && after.len() > 1) {
        return None;
    }
    Some((line_no, column, line.len() - after.len()))
}

/// `:name:12:` (`file:function:line:`, darglint): a field between the path and the line, a
/// word of a name's characters; only with the colon after the line, so prose does not take it.
fn after_field(line: &str, colon: usize) -> Option<(u32, Option<u32>, usize)> {
    let rest = &line[colon + 1..];
    let (field, rest) = rest.split_once(':')?;
    let is_name = |c: char| c.is_alphanumeric() || matches!(c, '_' | '.' | '$' | '<' | '>' | '-');
    if field.is_empty()
        || field.len() > 64
        || !field.starts_with(|c: char| c.is_alphabetic() || c == '_' || c == '<')
        || !field.chars().all(is_name)
    {
        return None;
    }
    let (line_no, after) = number(rest)?;
    let (column, after) = match after.strip_prefix(':').and_then(number) {
        Some((column, after)) => (Some(column), after),
        None => (None, after),
    };
    after
        .starts_with(':')
        .then(|| (line_no, column, line.len() - after.len()))
}

/// `[12]`, `[12, 5]`, `[12:5]` (tslint's `app.ts[1, 10]`).
fn after_bracket(line: &str, open: usize) -> Option<(u32, Option<u32>, usize)> {
    let rest = &line[open + 1..];
    let (line_no, after) = number(rest)?;
    let (column, after) = match after
        .strip_prefix([',', ':'])
        .map(str::trim_start)
        .and_then(number)
    {
        Some((column, after)) => (Some(column), after),
        None => (None, after),
    };
    let after = after.strip_prefix(']')?;
    Some((line_no, column, line.len() - after.len()))
}

/// `(12)`, `(12,5)`, `(12:5)`.
fn after_paren(line: &str, open: usize) -> Option<(u32, Option<u32>, usize)> {
    let rest = &line[open + 1..];
    let (line_no, after) = number(rest)?;
    let (column, after) = match after.strip_prefix([',', ':']).and_then(number) {
        Some((column, after)) => (Some(column), after),
        None => (None, after),
    };
    let after = after.strip_prefix(')')?;
    Some((line_no, column, line.len() - after.len()))
}

/// `, line 12`, ` line 12, column 5`, `: line 12, col 5` right after a path.
fn after_line_word(line: &str, at: usize) -> Option<(u32, Option<u32>, usize)> {
    let rest = line[at..].trim_start_matches([',', ':', ' ']);
    let rest = strip_word(rest, "line")?;
    let (line_no, after) = number(rest.trim_start())?;
    let (column, after) = column_after(after);
    Some((line_no, column, line.len() - after.len()))
}

/// `, column 5`, `, col 5`, `:5` after a line number.
fn column_after(text: &str) -> (Option<u32>, &str) {
    let rest = text.trim_start_matches([',', ' ']);
    let rest = strip_word(rest, "at").map_or(rest, str::trim_start);
    let rest = strip_word(rest, "column")
        .or_else(|| strip_word(rest, "col"))
        .map(str::trim_start)
        .or_else(|| text.strip_prefix(':'));
    match rest.and_then(number) {
        Some((column, after)) => (Some(column), after),
        None => (None, text),
    }
}

/// `text` after `word` (any case) and a space.
fn strip_word<'t>(text: &'t str, word: &str) -> Option<&'t str> {
    let head = text.get(..word.len())?;
    let rest = &text[word.len()..];
    (head.eq_ignore_ascii_case(word) && rest.starts_with(' ')).then_some(rest)
}

/// `line 12[, column 5]` somewhere, and a file named elsewhere on the line (`Unused variable at
/// line 3, column 5 in src/a.py`).
fn line_word_then_path(line: &str, known: &mut Known<'_>) -> Option<Place> {
    let (at, end, line_no, column) = line_phrase(line)?;
    let mut tries = 0;
    for (start, word) in words_with_offsets(line) {
        if (at..end).contains(&start) {
            continue;
        }
        let file = unquoted(word.trim_end_matches([',', ':', ';', '.', ')']));
        if file.is_empty() || !lines::looks_like_path(file) {
            continue;
        }
        tries += 1;
        if tries > MAX_TRIES_PER_LINE {
            return None;
        }
        if known.is_file(file) {
            // The message is what is left: the location phrase and the path taken out.
            let (first, second) = if start < at {
                ((start, start + word.len()), (at, end))
            } else {
                ((at, end), (start, start + word.len()))
            };
            return Some(Place {
                file: file.to_owned(),
                line: line_no,
                column,
                start: first.0,
                end: first.1.max(if second.0.saturating_sub(first.1) <= 4 {
                    second.1
                } else {
                    first.1
                }),
            });
        }
    }
    None
}

/// `line 12[, column 5]` (`line 3 at column 16`) as a word of the line: where the phrase starts
/// and ends, the line and the column.
fn line_phrase(line: &str) -> Option<(usize, usize, u32, Option<u32>)> {
    let lower = line.to_ascii_lowercase();
    let (at, line_no, after) = lower
        .match_indices("line ")
        .filter(|(at, _)| *at == 0 || !lower.as_bytes()[at - 1].is_ascii_alphanumeric())
        .find_map(|(at, _)| number(&line[at + 5..]).map(|(n, after)| (at, n, after)))?;
    if after.starts_with(|c: char| c.is_alphanumeric()) {
        return None;
    }
    let (column, after) = column_after(after);
    Some((at, line.len() - after.len(), line_no, column))
}

/// Where the path ending at `end` may start: the word before it, then that word with the words
/// before it (a path holding spaces), longest last.
fn path_starts(line: &str, end: usize) -> Vec<usize> {
    let head = &line[..end];
    let mut starts = Vec::new();
    let mut cut = head.len();
    for _ in 0..MAX_PATH_WORDS {
        let start = head[..cut].rfind(' ').map_or(0, |space| space + 1);
        let start = start + leading_marks(&head[start..end]);
        if start < end {
            starts.push(start);
        }
        match head[..cut].rfind(' ') {
            Some(space) => cut = space,
            None => break,
        }
        if cut == 0 {
            break;
        }
    }
    starts
}

/// Bytes of marks that open a path without being part of it: `(`, `[`, quotes, a frame's
/// `╭─[`; a path starts with a letter, a digit, `.`, `/`, `_` or `~`.
fn leading_marks(word: &str) -> usize {
    word.len()
        - word
            .trim_start_matches(|c: char| {
                !(c.is_alphanumeric() || matches!(c, '.' | '/' | '_' | '~'))
            })
            .len()
}

/// A path as written between quotes.
fn unquoted(path: &str) -> &str {
    let path = path.trim_end_matches(['"', '\'', '`']);
    path.trim_start_matches(['"', '\'', '`'])
}

fn words_with_offsets(line: &str) -> impl Iterator<Item = (usize, &str)> {
    line.split(' ')
        .scan(0, |offset, word| {
            let start = *offset;
            *offset += word.len() + 1;
            Some((start, word))
        })
        .filter(|(_, word)| !word.is_empty())
        .map(|(start, word)| {
            let marks = leading_marks(word);
            (start + marks, &word[marks..])
        })
}

/// A row under a file heading: `12:5  message`, `12  message`, `line 12, col 5: message`,
/// `L:  12 | P:   5 | CODE | message`, ` 12 | ERROR | message` (a table).
fn group_row(
    line: &str,
    indented: bool,
    next: Option<&&str>,
    context: &mut Context,
) -> Option<Finding> {
    let (file, rows) = context.group.as_mut()?;
    // `Line 3: FROM ubuntu`, `Line: 2` over its message: the tool labels its lines.
    if let Some((line_no, text)) = labeled_line(line) {
        context.labeled = true;
        let text = words_of(text).or_else(|| {
            next.filter(|n| indent_of(n) > 0 && labeled_line(n.trim()).is_none())
                .and_then(|n| words_of(n.trim()))
        })?;
        *rows = true;
        return Some(described(
            Finding::at(file.clone(), line_no, None, ""),
            text,
        ));
    }
    if context.labeled {
        return None;
    }
    let (severity_first, code, line) = row_prefix(line);
    let (line_no, after) = number(strip_label(line))?;
    let (column, after) = match after
        .trim_start_matches([' ', '\t'])
        .strip_prefix([':', ',', '.', '|'])
        .map(|rest| strip_label(rest.trim_start()))
        .and_then(number)
    {
        Some((column, rest)) => (Some(column), rest),
        None => (None, after),
    };
    // A range's end (`3:39-3:48`, `3:39-48`) says no more than its start.
    let after = match after.strip_prefix('-').and_then(number) {
        Some((_, rest)) => rest
            .strip_prefix(':')
            .and_then(number)
            .map_or(rest, |(_, rest)| rest),
        None => after,
    };
    // Without a column only an indented row is one: `3 problems` at the margin is prose.
    if column.is_none() && !indented {
        return None;
    }
    if !after.starts_with([' ', '\t', ':', '|', ',']) {
        return None;
    }
    let mut text = after.trim_start_matches([' ', '\t', ':', ',']);
    // A table's cells before the message: a severity, a code.
    let (mut severity, mut rule) = (severity_first, code.map(str::to_owned));
    while let Some(rest) = text.strip_prefix('|') {
        let (cell, rest) = rest.split_once('|').unwrap_or((rest, ""));
        let cell = cell.trim();
        if is_severity(cell) && severity.is_none() {
            severity = Some(cell.to_ascii_lowercase());
        } else if lines::is_code(cell) && rule.is_none() {
            rule = Some(cell.to_owned());
        } else {
            text = cell;
            break;
        }
        text = rest.trim_start();
    }
    let mut text = text.trim_start();
    // `ERROR: 1:1   no-var-keyword  Forbidden 'var'`: the rule, set apart, before the message.
    if let Some((first, rest)) = text.split_once("  ").filter(|_| severity.is_some()) {
        let rule_like = first.len() > 2
            && first
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-/@._".contains(c));
        if rule_like && rule.is_none() && has_letters(rest) {
            rule = Some(first.to_owned());
            text = rest.trim_start();
        }
    }
    let text = text.strip_prefix("[x]").unwrap_or(text).trim_start();
    let text = text.strip_prefix("[ ]").unwrap_or(text);
    // A row that quotes the source, with a caret line under it that says what is wrong there
    // (`L7 |<div id="a" id="b">` over `     ^ Duplicate attribute (attr-no-duplication)`).
    let caret = next
        .map(|n| n.trim())
        .and_then(|n| n.strip_prefix('^'))
        .and_then(words_of);
    let text = caret.or_else(|| words_of(text))?;
    *rows = true;
    let finding = described(Finding::at(file.clone(), line_no, column, ""), text);
    let finding = match severity {
        Some(severity) if finding.severity.is_none() => finding.with_severity(Some(&severity)),
        _ => finding,
    };
    Some(match rule {
        Some(rule) if finding.rule.is_none() => finding.with_rule(Some(&rule)),
        _ => finding,
    })
}

/// What a row may say before its place: a severity (`ERROR: 1:1 …`), a code (`H005 1:0 …`) or
/// a kind's letter (`F 17:0 name - C`), and the row after them.
fn row_prefix(line: &str) -> (Option<String>, Option<&str>, &str) {
    let (severity, line) = match line.split_once(": ") {
        Some((word, rest)) if is_severity(word) => (Some(word.to_ascii_lowercase()), rest),
        _ => (None, line),
    };
    let (code, line) = match line.split_once(' ') {
        Some((code, rest)) if lines::is_code(code) => (Some(code), rest.trim_start()),
        Some((kind, rest)) if kind.len() == 1 && kind.bytes().all(|b| b.is_ascii_uppercase()) => {
            (None, rest.trim_start())
        }
        _ => (None, line),
    };
    (severity, code, line)
}

/// The text after a label that says a number follows: `L:`, `Line`, `Ln`, `P:`, `Pos`, `C:`,
/// `Col`, `Column` (any case).
fn strip_label(text: &str) -> &str {
    let word_end = text
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(text.len());
    let word = text[..word_end].to_ascii_lowercase();
    if !matches!(
        word.as_str(),
        "l" | "ln" | "line" | "p" | "pos" | "c" | "col" | "column"
    ) {
        return text;
    }
    let rest = text[word_end..].trim_start_matches([':', '.']).trim_start();
    if rest.starts_with(|c: char| c.is_ascii_digit()) {
        rest
    } else {
        text
    }
}

/// A line that names one existing file and nothing else of substance: `src/a.py`,
/// `src/a.py:`, `FILE: /abs/src/a.php`, `--- src/a.py ---`, `src/a.py (3 problems)`.
fn group_heading(line: &str, indented: bool, known: &mut Known<'_>) -> Option<String> {
    if indented && !line.contains('/') {
        return None;
    }
    // A line that holds a location (`a.py:3`) or a sentence is not a heading: nothing to ask.
    let has_location = line
        .as_bytes()
        .windows(2)
        .any(|w| w[0] == b':' && w[1].is_ascii_digit());
    if has_location || line.split_whitespace().count() > 8 {
        return None;
    }
    let bare = line
        .trim_matches(|c: char| c == '-' || c == '=' || c == '>' || c == '<' || c == ' ')
        .trim_end_matches(':');
    let bare = match bare.split_once(": ").or_else(|| bare.split_once(' ')) {
        Some((label, rest)) if is_label(label) && has_letters(label) => rest.trim(),
        _ => bare,
    };
    let bare = match bare.rsplit_once(" (") {
        Some((path, count)) if count.ends_with(')') => path,
        _ => bare,
    };
    let bare = unquoted(bare);
    if lines::looks_like_path(bare) || bare.contains(' ') && bare.contains('.') {
        if let Some(file) = known.find(bare) {
            return Some(file);
        }
    }
    // `== [path] FAIL`, `"path" (3 issues)`: a bracketed or quoted path among a few words.
    let inner = ['[', '"', '\'', '`'].iter().find_map(|open| {
        let close = if *open == '[' { ']' } else { *open };
        let (_, rest) = line.split_once(*open)?;
        let (inner, after) = rest.split_once(close)?;
        (after.split_whitespace().count() <= 3).then_some(inner)
    })?;
    (lines::looks_like_path(inner) || inner.contains(' ') && inner.contains('.'))
        .then(|| known.find(inner))
        .flatten()
}

/// A finding's message as the general reader found it, with what a person would read out of
/// it: a leading severity mark (`✖`, `⚠`, `!`), a label (`>> Issue:`), a leading rule
/// (`[B404:blacklist]`, `eslint(no-unused-vars):`), a trailing rule set apart by spaces
/// (`Unknown property "colr"   property-no-unknown`), and runs of spaces made one.
fn polished(mut finding: Finding) -> Finding {
    let mut text = finding.message.trim();
    let mut severity = None;
    let mut rule = None;
    if let Some((mark, rest)) = text.split_once(' ') {
        severity = match mark {
            "✖" | "×" | "✘" | "❌" => Some("error"),
            "⚠" | "!" | "⚠️" => Some("warning"),
            "ℹ" | "i" => Some("info"),
            _ => None,
        };
        if severity.is_some() {
            text = rest.trim_start();
        }
    }
    text = text.trim_start_matches(['>', ' ']);
    if let Some((label, rest)) = text.split_once(": ") {
        if matches!(
            label.to_ascii_lowercase().as_str(),
            "issue" | "problem" | "finding" | "violation" | "diagnostic"
        ) {
            text = rest.trim_start();
        }
    }
    if let Some((inside, rest)) = text.strip_prefix('[').and_then(|t| t.split_once(']')) {
        let code = inside
            .split([':', ',', '('])
            .next()
            .unwrap_or_default()
            .trim();
        if lines::is_code(code) {
            rule = Some(code.to_owned());
            text = rest.trim_start();
        }
    }
    if rule.is_none() {
        if let Some((first, rest)) = text.split_once(": ") {
            if first.ends_with(')') && first.contains('(') && !first.contains(' ') {
                rule = Some(first.to_owned());
                text = rest.trim_start();
            }
        }
    }
    let mut message = text.to_owned();
    if rule.is_none() && finding.rule.is_none() {
        if let Some((head, last)) = message.rsplit_once("  ") {
            let last = last.trim();
            let rule_like = last.len() > 2
                && last
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-/@._".contains(c));
            if rule_like && has_letters(head) {
                rule = Some(last.to_owned());
                message = head.trim_end().to_owned();
            }
        }
    }
    finding.message = message.split_whitespace().collect::<Vec<_>>().join(" ");
    if finding.severity.is_none() {
        finding = finding.with_severity(severity);
    }
    if finding.rule.is_none() {
        finding = finding.with_rule(rule.as_deref());
    }
    finding
}

/// `Location`, `File`, `at`, `in`, `-->`: a word that only says a location follows.
fn is_label(text: &str) -> bool {
    let word = text.trim().trim_end_matches(':').to_ascii_lowercase();
    matches!(
        word.as_str(),
        "location" | "file" | "at" | "in" | "path" | "source" | "where" | "loc" | "from"
    ) || text.chars().all(|c| !c.is_alphanumeric())
}

/// `… at`, `… in`: a preposition the location completed.
fn trim_preposition(text: &str) -> &str {
    for word in [" at", " in", " on", " from", " of"] {
        if let Some(rest) = text.strip_suffix(word) {
            return rest.trim_end();
        }
    }
    text
}

/// The text with its separators trimmed, if it says something (has a letter).
fn words_of(text: &str) -> Option<&str> {
    let text = text
        .trim()
        .trim_start_matches([':', '-', '—', ',', '|', ']', ')', '>', ' ', '\t'])
        .trim_end_matches([':', '-', '—', ',', '|', '[', '(', '<', ' ']);
    has_letters(text).then_some(text.trim())
}

fn has_letters(text: &str) -> bool {
    text.chars().any(char::is_alphabetic)
}

/// A severity said before the location: `[ERROR] src/a.py:3: msg`, `WARN src/a.py:3 msg`.
fn with_severity_of(finding: Finding, before: &str) -> Finding {
    if finding.severity.is_some() {
        return finding;
    }
    let word = before
        .split(|c: char| !c.is_ascii_alphabetic())
        .find(|w| !w.is_empty() && is_severity(w));
    match word {
        Some(word) => finding.with_severity(Some(&word.to_ascii_lowercase())),
        None => finding,
    }
}

/// A frame of a stack trace or traceback: where a crashed program was, not a finding.
fn is_stack_frame(line: &str) -> bool {
    // `at fn (path:1:2)`, `at path:1:2`, `at async file:///x.mjs:3:9` (JavaScript, Java)
    let at_frame = line.strip_prefix("at ").is_some_and(|rest| {
        rest.ends_with(')')
            || rest
                .rsplit_once(':')
                .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    });
    // `#0 /x/Runner.php(4): Runner->check()`, `#1 0x55d in main a.c:3` (PHP, gdb)
    let numbered_frame = line
        .strip_prefix('#')
        .and_then(|rest| rest.split_once(' '))
        .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    at_frame
        || numbered_frame
        || line.starts_with("File \"") && line.contains(", in ")
        || line.starts_with("from ") && line.contains(":in ")
        || line.contains(":in `")
        || line.contains(":in '")
        || line.starts_with("thrown in ")
}

/// The line that opens a stack trace or traceback.
fn starts_trace(line: &str) -> bool {
    line.starts_with("goroutine ") && line.ends_with("]:")
        || line.starts_with("Traceback (most recent call last)")
        || line == "Stack trace:"
        || line == "stack backtrace:"
        || line.starts_with("Exception in thread ")
}

/// What follows a location in a frame of a Go panic's stack: `+0x86`.
fn is_stack_frame_after(after: &str) -> bool {
    after
        .trim()
        .strip_prefix("+0x")
        .is_some_and(|hex| hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A timestamp alone before the location (`2026/11/27 04:53:23 main.go:14: …`): the tool's own
/// log line, naming its own source, not a finding in the task.
fn is_log_stamp(before: &str) -> bool {
    let before = before.trim();
    !before.is_empty()
        && before.bytes().any(|b| b.is_ascii_digit())
        && before
            .bytes()
            .all(|b| b.is_ascii_digit() || b" /:-.TZ+,".contains(&b))
}

/// A summary's words before the location (`Found 2 errors in the same file, starting at:`).
fn is_summary(before: &str) -> bool {
    let lower = before.to_ascii_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    words.windows(2).any(|pair| {
        pair[0].bytes().all(|b| b.is_ascii_digit())
            && ["error", "warning", "problem", "issue", "finding"]
                .iter()
                .any(|w| pair[1].starts_with(w))
    })
}

/// A path inside a project's dependencies (`node_modules/`, `site-packages/`, `vendor/`):
/// what a crashing tool's trace walks through, never the worker's to fix.
fn in_dependencies(path: &str) -> bool {
    path.split('/').any(|part| {
        matches!(
            part,
            "node_modules" | "site-packages" | "dist-packages" | ".venv" | "vendor" | ".tox"
        )
    })
}

/// A line a person would read as a diagnostic: a severity word that is not a count (`3
/// errors`, `no warnings`, `Errors: 0`), as a summary line says it.
pub fn is_diagnostic(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let is_count = |word: Option<&&str>| {
        word.is_some_and(|w| *w == "no" || w.bytes().all(|b| b.is_ascii_digit()))
    };
    // A command line echoed (`> eslint --max-warnings 0 .`, `cargo clippy -- -D warnings`)
    // names options, not problems.
    let options = line.split_whitespace().any(|w| {
        w.starts_with('-')
            && w.len() > 1
            && w[1..].starts_with(|c: char| c.is_alphabetic() || c == '-')
    });
    if options || line.trim_start().starts_with(['>', '$', '+']) {
        return false;
    }
    words.iter().enumerate().any(|(i, word)| {
        matches!(
            *word,
            "error" | "errors" | "warning" | "warnings" | "warn" | "fatal"
        ) && !is_count(i.checked_sub(1).and_then(|i| words.get(i)))
            && !is_count(words.get(i + 1))
            && !words[i.saturating_sub(3)..i].contains(&"no")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The files of a pretend task.
    struct Task(&'static [&'static str]);

    impl Files for Task {
        fn is_file(&self, path: &str) -> bool {
            self.0.contains(&path.trim_start_matches("./"))
        }
    }

    fn shown(output: &str, files: &'static [&'static str]) -> Vec<String> {
        let lines: Vec<&str> = output.lines().collect();
        let task = Task(files);
        let mut known = Known::new(&task);
        let mut found = Vec::new();
        read(&lines, &[], &mut found, &mut known);
        found.into_iter().map(|(_, f)| f.to_string()).collect()
    }

    #[test]
    fn a_location_inside_a_sentence() {
        assert_eq!(
            shown(
                "[ERROR] src/a.py:3: bad thing\nUnused variable 'x' at line 4, column 5 in src/a.py\nsrc/a.py: line 7, col 2, Missing semicolon.\n",
                &["src/a.py"]
            ),
            [
                "src/a.py:3: error: bad thing",
                "src/a.py:4:5: Unused variable 'x'",
                "src/a.py:7:2: Missing semicolon."
            ]
        );
    }

    #[test]
    fn a_file_that_does_not_exist_is_never_a_finding() {
        assert!(
            shown(
                "[ERROR] src/fake.py:3: bad thing\nsrc/fake.py\n  3:1 error x\n",
                &["src/a.py"]
            )
            .is_empty()
        );
    }

    #[test]
    fn rows_under_a_file_heading() {
        assert_eq!(
            shown(
                "src/a.py\n  3:5  error  Missing semicolon  semi\n  9:1  warning  Too long\n\n2 problems\n",
                &["src/a.py"]
            ),
            [
                "src/a.py:3:5: error: Missing semicolon [semi]",
                "src/a.py:9:1: warning: Too long"
            ]
        );
        assert_eq!(
            shown(
                "FILE: /t/src/a.php\n-----\nFOUND 1 ERROR\n-----\n 2 | ERROR | [x] Missing doc comment\n-----\n",
                &["/t/src/a.php"]
            ),
            ["/t/src/a.php:2: error: Missing doc comment"]
        );
    }

    #[test]
    fn a_frame_takes_its_message_from_the_block() {
        assert_eq!(
            shown(
                "  × Expected a semicolon\n   ╭─[src/a.ts:1:5]\n 1 │ let x = 1 let y\n   ╰────\n\n>> Issue: [B602] shell=True\n   Severity: High\n   Location: ./a.py:5:0\n",
                &["src/a.ts", "a.py"]
            ),
            [
                "src/a.ts:1:5: error: Expected a semicolon",
                "./a.py:5:0: shell=True [B602]"
            ]
        );
    }

    #[test]
    fn a_path_holding_spaces() {
        assert_eq!(
            shown("my dir/a b.py:1:8: F401 unused\n", &["my dir/a b.py"]),
            ["my dir/a b.py:1:8: unused [F401]"]
        );
    }

    #[test]
    fn counts_are_not_diagnostics() {
        for summary in [
            "Found 0 errors.",
            "3 errors, 0 warnings",
            "No errors found",
            "Errors: 0, Warnings: 0",
            "All checks passed!",
            "Success: no issues found in 3 source files",
        ] {
            assert!(!is_diagnostic(summary), "{summary}");
        }
        for warning in [
            "WARNING: something looks off",
            "warning: unused x",
            "error in a.c",
        ] {
            assert!(is_diagnostic(warning), "{warning}");
        }
    }

    #[test]
    fn stack_frames_are_not_findings() {
        assert!(
            shown(
                "    at Object.<anonymous> (src/a.js:3:5)\n  File \"a.py\", line 3, in <module>\n",
                &["src/a.js", "a.py"]
            )
            .is_empty()
        );
    }
}
