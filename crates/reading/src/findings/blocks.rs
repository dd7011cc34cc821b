//! The formats that spread a finding over several lines, read by one pass that remembers what
//! the lines before said: a header waiting for its `-->` (rustc, clippy, ruff), the file an
//! eslint or yamllint list is under, shellcheck's block waiting for its caret, biome's header
//! waiting for its message. Lines that are none of these are tried as one-line findings.

use super::lines::{self, is_code, looks_like_path};
use super::{Only, structured};
use crate::Finding;

/// How long a finding's message may grow by the notes folded into it.
const MAX_FOLDED_CHARS: usize = 400;

/// The severity and code a header line announced, with its message.
struct Header {
    severity: Option<String>,
    rule: Option<String>,
    message: String,
}

#[derive(Default)]
pub struct Scanner {
    found: Vec<Finding>,
    /// A rustc-style header waiting for its `-->` on the next line.
    header: Option<Header>,
    /// The finding a rustc-style block made last, which its `= note:` lines may name.
    block: Option<usize>,
    /// Whether that block still runs: no blank line since its `-->`, so a `note:`, `help:` or
    /// `info:` line (with its own `-->`) is a part of it.
    block_open: bool,
    /// Whether the finding made last showed its source with a caret under it (gcc, clang,
    /// cppcheck): the `file:line:col: note:` lines after it explain it.
    caret_shown: bool,
    /// The file an eslint-stylish or yamllint list is under.
    list_file: Option<String>,
    /// shellcheck: the file and line of `In file line N:`, and the source line under it.
    shellcheck: Option<(String, u32, Option<String>)>,
    /// biome: a header's location and rule, waiting for its message.
    biome: Option<(String, Option<u32>, Option<u32>, String)>,
    /// The files a formatter already named (one finding a file).
    formatted: std::collections::HashSet<Option<String>>,
    /// The formats read.
    only: Only,
}

impl Scanner {
    /// The findings of `lines`, each with the index of the line it was read at, and which
    /// lines a known format took (a finding's, or one inside a block it is reading).
    pub fn scan(lines: &[&str], only: Only) -> (Vec<(usize, Finding)>, Vec<bool>) {
        let mut scanner = Scanner {
            only,
            ..Scanner::default()
        };
        let mut at = Vec::new();
        let mut claimed = Vec::with_capacity(lines.len());
        // A rustc or shellcheck block runs from its location to the next blank line.
        let mut in_block = false;
        // A header waiting for its location: the line is the header's only if one follows.
        let mut waiting: Option<usize> = None;
        for (index, line) in lines.iter().enumerate() {
            let before = scanner.state();
            let block_before = scanner.block_mark();
            scanner.line(line.trim_end());
            at.resize(scanner.found.len(), index);
            let block_now = scanner.block_mark();
            if line.trim().is_empty() {
                in_block = false;
            } else if block_now != block_before && (block_now.0.is_some() || block_now.1.is_some())
            {
                in_block = true;
            }
            if let Some(header) = waiting.take() {
                if scanner.found.len() == before.0 {
                    claimed[header] = false;
                }
            }
            // Every line but a header's location drops a waiting header, so a header now
            // waiting is this line.
            if scanner.header.is_some() {
                waiting = Some(index);
            }
            claimed.push(
                scanner.state() != before
                    || in_block
                    || scanner.header.is_some()
                    || scanner.biome.is_some(),
            );
        }
        (at.into_iter().zip(scanner.found).collect(), claimed)
    }

    /// What a line can change: a finding added or grown, a block or list begun or ended.
    fn state(&self) -> (usize, usize, bool, bool, Option<u64>) {
        let last = self.found.last();
        (
            self.found.len(),
            last.map_or(0, |f| f.message.len() + usize::from(f.rule.is_some())),
            self.shellcheck.is_some(),
            self.biome.is_some(),
            self.list_file.as_deref().map(|file| {
                use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
                BuildHasherDefault::<DefaultHasher>::default().hash_one(file)
            }),
        )
    }

    /// Which rustc or shellcheck block is open, if one is.
    fn block_mark(&self) -> (Option<usize>, Option<(usize, u32)>) {
        (
            self.block,
            self.shellcheck.as_ref().map(|s| (s.0.len(), s.1)),
        )
    }

    fn push(&mut self, finding: Finding) {
        self.found.push(finding);
        self.block_open = false;
        self.caret_shown = false;
    }

    /// Adds a note's text to the message of the finding it explains, so it is said with it and
    /// not counted again; a message grows only so far.
    fn fold_into(finding: &mut Finding, note: &str) {
        let note = note.trim();
        if !note.is_empty() && finding.message.len() < MAX_FOLDED_CHARS {
            finding.message.push_str("; ");
            finding.message.push_str(note);
        }
    }

    fn line(&mut self, line: &str) {
        let trimmed = line.trim_start();
        let indented = trimmed.len() != line.len();
        if self.block_line(trimmed) {
            return;
        }
        if self.explains(line, trimmed) {
            return;
        }
        if let Some(found) = structured::json_line(trimmed, self.only) {
            self.found.extend(found);
            return;
        }
        if let Some(header) = header(line).filter(|_| self.only.allows("rustc")) {
            self.header = Some(header);
            self.block = None;
            self.block_open = false;
            return;
        }
        if let Some(found) = self
            .shellcheck_line(line)
            .filter(|_| self.only.allows("shellcheck"))
        {
            self.push(found);
            return;
        }
        if let Some(found) = self.biome_line(line).filter(|_| self.only.allows("biome")) {
            self.push(found);
            return;
        }
        if let Some(found) = formatter(trimmed).filter(|_| self.only.allows("formatter")) {
            // One finding a file, at its first difference: the fix is one command.
            if self.formatted.insert(found.file.clone()) {
                self.push(found);
            }
            return;
        }
        if indented {
            if let (Some(file), Some(found), true) = (
                &self.list_file,
                list_row(trimmed),
                self.only.allows("stylish"),
            ) {
                let found = Finding {
                    file: Some(file.clone()),
                    ..found
                };
                self.push(found);
                return;
            }
        }
        if let Some(found) = lines::read(line, self.only) {
            self.one_line(found);
            return;
        }
        let heading = trimmed.strip_suffix(':').unwrap_or(trimmed);
        // A location alone (`page.pug:1:5` over its snippet) is no file heading: the general
        // reader reads it with the message its block gives.
        if !indented && looks_like_path(heading) && lines::location(heading).is_none() {
            self.list_file = Some(heading.to_owned());
            return;
        }
        if indented {
            self.trailing_rule(trimmed);
        }
    }

    /// A block's location line or its note, read into the block: whether `trimmed` was one.
    fn block_line(&mut self, trimmed: &str) -> bool {
        // A header's location: ` --> file:line:col` (rustc, ruff) or `┌─ file:line:col`.
        if let Some(location) = trimmed
            .strip_prefix("--> ")
            .or_else(|| trimmed.strip_prefix("┌─ "))
        {
            if let (Some(header), Some(found)) =
                (self.header.take(), framed_location(location.trim()))
            {
                let finding = Finding {
                    message: header.message,
                    ..found
                }
                .with_severity(header.severity.as_deref())
                .with_rule(header.rule.as_deref());
                self.block = Some(self.found.len());
                self.push(finding);
                self.block_open = true;
            }
            return true;
        }
        self.header = None;
        let Some(rule) = block_note(trimmed) else {
            return false;
        };
        if let Some(finding) = self.block.and_then(|index| self.found.get_mut(index)) {
            if finding.rule.is_none() {
                finding.rule = Some(rule);
            }
        }
        true
    }

    /// pyright puts its rule at the end of a message's last continuation line.
    fn trailing_rule(&mut self, trimmed: &str) {
        let Some(last) = self.found.last_mut().filter(|f| f.rule.is_none()) else {
            return;
        };
        if let Some(rule) = trimmed
            .strip_suffix(')')
            .and_then(|t| t.rsplit_once(" ("))
            .map(|(_, rule)| rule)
            .filter(|rule| rule.starts_with("report") && !rule.contains(' '))
        {
            last.rule = Some(rule.to_owned());
        }
    }

    /// Whether `line` is a part of what was said before it rather than anything of its own: a
    /// blank line (which ends a list and a block), a caret under a finding's source, a block's
    /// sub-diagnostic (rustc's `note:`/`help:`, ty's `info:`, each maybe with a `-->` of its
    /// own), which is said with the finding above it.
    fn explains(&mut self, line: &str, trimmed: &str) -> bool {
        if trimmed.is_empty() {
            self.list_file = None;
            self.block_open = false;
            self.caret_shown = false;
            return true;
        }
        if is_caret_line(trimmed) {
            self.caret_shown = !self.found.is_empty();
            return true;
        }
        let Some(note) = sub_diagnostic(line).filter(|_| self.block_open) else {
            return false;
        };
        if let Some(finding) = self.block.and_then(|i| self.found.get_mut(i)) {
            Self::fold_into(finding, note);
        }
        true
    }

    /// A one-line finding, or a note on the one before it. A note without a code of its own is
    /// part of the finding before it when it is at that very place (mypy's hints, its overload
    /// listings) or follows the source that finding showed with its caret (gcc's, clang-tidy's
    /// and cppcheck's notes, wherever they point): said with it, not counted again. A note with
    /// its code (shellcheck's) is a finding of its own, and so is a note alone (mypy's
    /// `reveal_type`).
    fn one_line(&mut self, found: Finding) {
        self.block = None;
        self.block_open = false;
        let caret_shown = self.caret_shown;
        if let Some(last) = self.found.last_mut().filter(|last| {
            is_note(found.severity.as_deref())
                && found.rule.is_none()
                && !is_note(last.severity.as_deref())
                && (caret_shown
                    || last.file == found.file
                        && last.line == found.line
                        && last.column == found.column)
        }) {
            Self::fold_into(last, &found.message);
            return;
        }
        self.push(found);
    }

    /// shellcheck's default: `In s.sh line 3:`, the source line, then one or more
    /// `^-- SC2086 (info): message` lines whose caret marks the column.
    fn shellcheck_line(&mut self, line: &str) -> Option<Finding> {
        if let Some(rest) = line.strip_prefix("In ") {
            if let Some((file, number)) = rest
                .strip_suffix(':')
                .and_then(|rest| rest.rsplit_once(" line "))
            {
                if let Ok(number) = number.parse::<u32>() {
                    self.shellcheck = Some((file.to_owned(), number, None));
                    return None;
                }
            }
        }
        let (file, number, source) = self.shellcheck.as_mut()?;
        let caret = line.find('^');
        let marker = caret.map(|at| &line[at..]);
        let Some(marker) = marker.filter(|m| m.starts_with("^-") || m.starts_with("^ ")) else {
            if source.is_none() {
                *source = Some(line.to_owned());
            }
            return None;
        };
        let text = marker.trim_start_matches(['^', '-']).trim_start();
        let (code, rest) = text.split_once(' ')?;
        if !is_code(code) {
            return None;
        }
        let (severity, message) = rest
            .strip_prefix('(')
            .and_then(|r| r.split_once("):"))
            .map_or((None, rest), |(s, m)| (Some(s), m));
        let column = caret.and_then(|at| u32::try_from(line[..at].chars().count() + 1).ok());
        Some(
            Finding::at(file.clone(), *number, column, message.trim())
                .with_severity(severity)
                .with_rule(Some(code)),
        )
    }

    /// biome: `src/a.js:1:7 lint/correctness/noUnusedVariables  FIXABLE  ━━━━`, then the
    /// message on a line of its own under a severity mark (`✖`, `⚠`, `ℹ`, `×`, `!`, `i`).
    fn biome_line(&mut self, line: &str) -> Option<Finding> {
        if line.contains("━━━") && !line.starts_with(char::is_whitespace) {
            let mut words = line.split_whitespace();
            let location = words.next()?;
            let category = words.next()?;
            let (file, at) = match location.split_once(':') {
                Some((file, at)) => (file, Some(at)),
                None => (location, None),
            };
            if !looks_like_path(file) || category.starts_with('━') {
                self.biome = None;
                return None;
            }
            let (line_no, column) = match at.map(|at| at.split_once(':')) {
                Some(Some((l, c))) => (l.parse().ok(), c.parse().ok()),
                _ => (None, None),
            };
            self.biome = Some((file.to_owned(), line_no, column, category.to_owned()));
            return None;
        }
        let (file, line_no, column, category) = self.biome.as_ref()?;
        let text = line.trim_start();
        let mut chars = text.chars();
        let severity = match chars.next()? {
            '✖' | '×' => "error",
            '⚠' | '!' => "warning",
            'ℹ' | 'i' => "info",
            _ => return None,
        };
        let message = chars.as_str();
        if !message.starts_with(' ') {
            return None;
        }
        let finding = Finding {
            file: Some(file.clone()),
            line: *line_no,
            column: *column,
            ..Finding::new(message.trim())
        }
        .with_severity(Some(severity))
        .with_rule(Some(category));
        self.biome = None;
        Some(finding)
    }
}

/// The location a `-->` frame points at: `file:line[:col]` to the end of the line, where the
/// marker leaves no doubt, so the file may hold spaces (`--> my dir/a b.py:1:8`).
fn framed_location(text: &str) -> Option<Finding> {
    if let Some(found) = lines::location(text) {
        return Some(found);
    }
    let numbers = |s: &str| !s.is_empty() && s.len() <= 9 && s.bytes().all(|b| b.is_ascii_digit());
    let (head, last) = text.rsplit_once(':')?;
    let (file, line, column) = match head.rsplit_once(':') {
        Some((file, line)) if numbers(line) => (file, line, Some(last)),
        _ => (head, last, None),
    };
    if !numbers(line) || column.is_some_and(|c| !numbers(c)) || file.trim() != file {
        return None;
    }
    if !lines::looks_like_path(&file.replace(' ', "_")) {
        return None;
    }
    let line: u32 = line.parse().ok().filter(|n| *n > 0)?;
    let column = column.and_then(|c| c.parse().ok());
    Some(Finding::at(file, line, column, ""))
}

/// A rustc-style header: `error[E0308]: msg`, `warning: msg`, ruff's `F401 [*] msg`,
/// `invalid-syntax: msg`; never cargo's summaries (`aborting due to`, `generated 3 warnings`).
fn header(line: &str) -> Option<Header> {
    if line.starts_with(char::is_whitespace) {
        return None;
    }
    if let Some((kind, message)) = line.split_once(": ") {
        let (severity, code) = match kind.split_once('[') {
            Some((severity, code)) => (severity, code.strip_suffix(']')),
            None => (kind, None),
        };
        // ruff names a finding by its rule where rustc puts the level: `unformatted: ...`,
        // `invalid-syntax: ...`. (`note:` and `help:` are parts of the finding above.)
        if is_rule_word(severity) && code.is_none() && !message.is_empty() {
            return Some(Header {
                severity: None,
                rule: Some(severity.to_owned()),
                message: message.to_owned(),
            });
        }
        if matches!(severity, "error" | "warning") && !message.is_empty() {
            if message.starts_with("aborting due to")
                || message.starts_with("could not compile")
                || message.contains("generated") && message.contains("warning")
                || message.starts_with("build failed")
            {
                return None;
            }
            return Some(Header {
                severity: Some(severity.to_owned()),
                rule: code.map(str::to_owned),
                message: message.to_owned(),
            });
        }
    }
    // ruff: `F401 [*] `os` imported but unused`
    let (code, message) = line.split_once(' ')?;
    is_code(code).then(|| Header {
        severity: None,
        rule: Some(code.to_owned()),
        message: message
            .strip_prefix("[*] ")
            .unwrap_or(message)
            .trim()
            .to_owned(),
    })
}

/// A rule's name written where rustc writes the level: lower case words joined by `-`.
fn is_rule_word(word: &str) -> bool {
    !matches!(word, "error" | "warning" | "note" | "help" | "info")
        && word.len() > 2
        && word.starts_with(|c: char| c.is_ascii_lowercase())
        && word
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Whether a severity is one of the words tools give the lines that explain a finding.
fn is_note(severity: Option<&str>) -> bool {
    matches!(severity, Some("note" | "help"))
}

/// A source line's marker under the code a finding points at: `^`, `~~~^~~~`, `^~~~~`.
fn is_caret_line(trimmed: &str) -> bool {
    trimmed.starts_with(['^', '~']) && trimmed.chars().all(|c| matches!(c, '^' | '~' | ' '))
}

/// The text of a sub-diagnostic line at the start of a line: `note: ...`, `help: ...`,
/// `info: ...`.
fn sub_diagnostic(line: &str) -> Option<&str> {
    ["note: ", "help: ", "info: "]
        .iter()
        .find_map(|label| line.strip_prefix(label))
}

/// The lint a rustc block's notes name: `= note: `#[warn(unused_variables)]` on by default`,
/// `= help: ... index.html#needless_return` (clippy).
fn block_note(line: &str) -> Option<String> {
    let note = line.strip_prefix("= ")?;
    if let Some(start) = note.find("#[") {
        let inner = &note[start + 2..];
        let (_, name) = inner.split_once('(')?;
        let name = name.split(')').next()?;
        return Some(name.to_owned());
    }
    if note.contains("rust-clippy") {
        let (_, lint) = note.rsplit_once('#')?;
        return Some(format!("clippy::{lint}"));
    }
    None
}

/// eslint's and yamllint's rows under a file: `1:7  error  'x' is unused  no-unused-vars`,
/// `3:1       error    wrong indentation  (indentation)`.
fn list_row(text: &str) -> Option<Finding> {
    let (at, rest) = text.split_once(char::is_whitespace)?;
    let (line_no, column) = at.split_once(':')?;
    let line_no: u32 = line_no.parse().ok().filter(|&n| n > 0)?;
    let column: u32 = column.parse().ok()?;
    let rest = rest.trim_start();
    let (severity, rest) = rest.split_once(char::is_whitespace)?;
    if is_code(severity) {
        // ruff's grouped format: `1:8  F401 [*] message` under `file:`.
        let message = rest.trim();
        let message = message.strip_prefix("[*] ").unwrap_or(message);
        return Some(Finding::at("", line_no, Some(column), message).with_rule(Some(severity)));
    }
    if !matches!(severity, "error" | "warning" | "info") {
        return None;
    }
    let rest = rest.trim();
    // eslint puts the rule last, after two or more spaces; yamllint in parentheses.
    let (message, rule) = match rest.rsplit_once("  ") {
        Some((message, rule))
            if !rule.trim().contains(char::is_whitespace) && !message.trim().is_empty() =>
        {
            (message.trim(), Some(rule.trim().trim_matches(['(', ')'])))
        }
        _ => (rest, None),
    };
    Some(
        Finding::at("", line_no, Some(column), message)
            .with_severity(Some(severity))
            .with_rule(rule),
    )
}

/// A file a formatter's check mode says it would change, with the command that fixes it.
fn formatter(line: &str) -> Option<Finding> {
    let (file, fix) = if let Some(file) = line.strip_prefix("Would reformat: ") {
        (file, "ruff format")
    } else if let Some(file) = line.strip_prefix("would reformat ") {
        (file, "black")
    } else if let Some(rest) = line.strip_prefix("Diff in ") {
        // cargo fmt --check: `Diff in /abs/src/main.rs:3:` or `Diff in /abs/src/main.rs at line 3:`
        let rest = rest.trim_end_matches(':');
        let (file, at) = match rest.split_once(" at line ") {
            Some((file, at)) => (file, at),
            None => rest
                .rsplit_once(':')
                .filter(|(_, n)| n.chars().all(|c| c.is_ascii_digit()))
                .unwrap_or((rest, "")),
        };
        let file = file.trim();
        let line_no = at.trim().parse::<u32>().ok().filter(|&n| n > 0);
        return (looks_like_path(file)).then(|| Finding {
            line: line_no,
            ..Finding::in_file(file, "is not formatted; run `cargo fmt` to fix it")
                .with_rule(Some("format"))
        });
    } else if let Some(file) = line.strip_prefix("[warn] ") {
        // prettier --check; its closing line is not a file.
        if file.contains(' ') {
            return None;
        }
        (file, "prettier --write")
    } else {
        return None;
    };
    let file = file.trim();
    looks_like_path(file).then(|| {
        Finding::in_file(file, format!("is not formatted; run `{fix}` to fix it"))
            .with_rule(Some("format"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(output: &str) -> Vec<String> {
        let lines: Vec<&str> = output.lines().collect();
        Scanner::scan(&lines, Only::default())
            .0
            .iter()
            .map(|(_, f)| f.to_string())
            .collect()
    }

    #[test]
    fn a_frame_points_at_a_file_holding_spaces() {
        assert_eq!(
            shown("F401 [*] `os` imported but unused\n --> my dir/a b.py:1:8\n  |\n"),
            ["my dir/a b.py:1:8: `os` imported but unused [F401]"]
        );
    }

    #[test]
    fn ruff_full_reads_as_a_header_over_its_location() {
        let out = "F401 [*] `os` imported but unused\n --> a.py:1:8\n  |\n1 | import os\n  |        ^^\n  |\nhelp: Remove unused import: `os`\n\nFound 1 error.\n";
        assert_eq!(
            shown(out),
            ["a.py:1:8: `os` imported but unused; Remove unused import: `os` [F401]"]
        );
    }

    #[test]
    fn a_note_with_its_own_location_is_not_another_finding() {
        let out = "error[E0061]: takes 1 argument\n --> src/main.rs:4:5\n  |\nnote: function defined here\n --> src/main.rs:1:4\n";
        assert_eq!(
            shown(out),
            ["src/main.rs:4:5: error: takes 1 argument; function defined here [E0061]"]
        );
    }

    #[test]
    fn notes_after_a_finding_and_its_caret_are_part_of_it() {
        // cppcheck: a finding, its source and caret, then notes that point elsewhere.
        let out = "src/a.c:10:12: error: Buffer is accessed out of bounds: p [bufferAccessOutOfBounds]\n    strcpy(p, \"hello\");\n           ^\nsrc/a.c:9:13: note: Assign p, buffer with size 10\n    char *p = malloc(10);\n            ^\nsrc/a.c:10:12: note: Buffer overrun\n    strcpy(p, \"hello\");\n           ^~~~\nsrc/a.c:11:9: style: Unused variable: x [unusedVariable]\n";
        assert_eq!(
            shown(out),
            [
                "src/a.c:10:12: error: Buffer is accessed out of bounds: p; Assign p, buffer with size 10; Buffer overrun [bufferAccessOutOfBounds]",
                "src/a.c:11:9: style: Unused variable: x [unusedVariable]",
            ]
        );
    }

    #[test]
    fn a_note_alone_or_with_its_own_code_is_a_finding() {
        // mypy's `reveal_type` note follows another file's error with no source shown;
        // shellcheck's info-level checks are notes with codes.
        let out = "app.py:7: error: Incompatible types  [assignment]\npkg/util.py:16: note: Revealed type is \"list[str]\"\ns.sh:3:6: warning: Quote this. [SC2086]\ns.sh:3:6: note: Double quote to prevent globbing. [SC2086]\n";
        assert_eq!(shown(out).len(), 4, "{:?}", shown(out));
    }

    #[test]
    fn a_blocks_sub_diagnostic_with_its_own_place_is_part_of_it() {
        // ty: an `info:` with a `-->` into the Python environment; a blank line ends the block.
        let out = "error[missing-argument]: No argument for `Loader`\n --> job.py:5:12\n  |\n5 |     yaml.load(f)\n  |     ^^^^^^^^^\ninfo: Parameter declared here\n  --> /venv/yaml/__init__.py:74:18\n   |\n\nnote: a note of the run, not of the finding\n";
        assert_eq!(
            shown(out),
            [
                "job.py:5:12: error: No argument for `Loader`; Parameter declared here [missing-argument]"
            ]
        );
    }

    #[test]
    fn clippy_names_its_lint() {
        let out = "warning: unneeded `return` statement\n --> src/lib.rs:2:5\n  |\n  = help: for further information visit https://rust-lang.github.io/rust-clippy/master/index.html#needless_return\n  = note: `#[warn(clippy::needless_return)]` on by default\n";
        assert_eq!(
            shown(out),
            ["src/lib.rs:2:5: warning: unneeded `return` statement [clippy::needless_return]"]
        );
    }

    #[test]
    fn eslint_stylish_and_yamllint_rows_take_their_file() {
        let out = "\n/t/src/a.js\n  1:7  error    'x' is assigned a value but never used  no-unused-vars\n  2:1  warning  Unexpected console statement             no-console\n\n✖ 2 problems (1 error, 1 warning)\n\na.yaml\n  3:1       error    wrong indentation: expected 2 but found 4  (indentation)\n";
        assert_eq!(
            shown(out),
            [
                "/t/src/a.js:1:7: error: 'x' is assigned a value but never used [no-unused-vars]",
                "/t/src/a.js:2:1: warning: Unexpected console statement [no-console]",
                "a.yaml:3:1: error: wrong indentation: expected 2 but found 4 [indentation]",
            ]
        );
    }

    #[test]
    fn shellcheck_blocks_read_the_caret_as_the_column() {
        let out = "\nIn s.sh line 3:\necho $1 $2\n     ^-- SC2086 (info): Double quote to prevent globbing.\n        ^-- SC2086 (info): Double quote again.\n\nDid you mean:\necho \"$1\"\n";
        assert_eq!(
            shown(out),
            [
                "s.sh:3:6: info: Double quote to prevent globbing. [SC2086]",
                "s.sh:3:9: info: Double quote again. [SC2086]",
            ]
        );
    }

    #[test]
    fn biome_headers_take_the_message_under_them() {
        let out = "src/a.js:1:7 lint/correctness/noUnusedVariables  FIXABLE  ━━━━━━━━━━\n\n  ✖ This variable is unused.\n\n  > 1 │ let x = 1;\n";
        assert_eq!(
            shown(out),
            ["src/a.js:1:7: error: This variable is unused. [lint/correctness/noUnusedVariables]"]
        );
    }

    #[test]
    fn formatters_name_each_file_and_the_fix() {
        let out = "Diff in /t/src/main.rs:1:\n-fn main(){}\nDiff in /t/src/main.rs at line 5:\nWould reformat: a.py\n[warn] src/b.js\n[warn] Code style issues found in the above file. Run Prettier with --write to fix.\n";
        let found = shown(out);
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!(
            found[0],
            "/t/src/main.rs:1: is not formatted; run `cargo fmt` to fix it [format]"
        );
    }
}
