//! The one-line formats: a finding whole on one line, its location first
//! (`file:line[:col]: message`, `file(line,col): message`, `file:line:col - severity: message`,
//! `file:line CODE message`), with the severity and the tool's code read out of the message
//! wherever the tools put them.

use super::Only;
use crate::Finding;

/// A reader of one one-line shape.
type Shape = fn(&str) -> Option<Finding>;

/// The finding on `line`, if it is one.
pub fn read(line: &str, only: Only) -> Option<Finding> {
    let line = line.trim_end();
    let shapes: [(&str, Shape); 4] = [
        ("paren", paren),
        ("dash", dash),
        ("github", github),
        ("compact", compact),
    ];
    for (name, shape) in shapes {
        if let Some(found) = shape(line).filter(|_| only.allows(name)) {
            return Some(found);
        }
    }
    if let Some((found, shape)) = located(line) {
        return only.allows(shape).then_some(found);
    }
    if !only.allows("gnu") {
        return None;
    }
    // `vet: ./main.go:3:2: ...`, `hadolint:Dockerfile:3 ...`: a tool's name before the location.
    let (word, rest) = line.split_once(':')?;
    if !word.is_empty()
        && word.len() <= 32
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && !looks_like_path(word)
    {
        return located(rest.trim_start()).map(|(found, _)| found);
    }
    None
}

/// Whether a word can be the file part of a location: a path (`src/a.rs`, `a.py`, `./x`) or a
/// file conventionally without an extension (`Dockerfile`, `Makefile`), never a number, a URL,
/// a time or prose.
pub fn looks_like_path(word: &str) -> bool {
    !word.is_empty()
        && !word.contains(char::is_whitespace)
        && !word.contains("://")
        && !word.starts_with('-')
        && !word.chars().all(|c| c.is_ascii_digit() || c == '.')
        && (word.contains('/')
            || word.contains('.') && !word.ends_with('.')
            || word.to_ascii_lowercase().ends_with("file"))
}

/// A file name without a directory or an extension: letters first, then letters, digits, `-`
/// and `_`.
fn is_bare_name(word: &str) -> bool {
    word.len() <= 64
        && word.starts_with(|c: char| c.is_ascii_alphabetic())
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// A bare location, `file:line[:col]`, as a block's `-->` line gives it.
pub fn location(text: &str) -> Option<Finding> {
    let (file, rest) = text.split_once(':')?;
    if !looks_like_path(file) {
        return None;
    }
    let (line_no, rest) = number(rest)?;
    let (column, rest) = match rest.strip_prefix(':').and_then(number) {
        Some((column, after)) => (Some(column), after),
        None => (None, rest),
    };
    (line_no > 0 && rest.is_empty()).then(|| Finding::at(file, line_no, column, ""))
}

/// `file:line[:col]` then `: message` (gcc and most linters) or ` CODE message` (markdownlint,
/// hadolint).
fn located(line: &str) -> Option<(Finding, &'static str)> {
    let (file, rest) = line.split_once(':')?;
    // A script without an extension (`bzdiff`) is a file too, but only in the fullest shape:
    // `name:line:col: severity-or-code ...`, which prose and timestamps never take.
    let bare = !looks_like_path(file);
    if bare && !is_bare_name(file) {
        return None;
    }
    let (line_no, rest) = number(rest)?;
    if line_no == 0 {
        return None;
    }
    let (column, rest) = match rest.strip_prefix(':').and_then(number) {
        Some((column, after)) => (Some(column), after),
        None => (None, rest),
    };
    if bare {
        let message = rest.strip_prefix(':').map(str::trim)?;
        let first = message.split_whitespace().next().unwrap_or_default();
        if column.is_none()
            || severity_word(message).is_none() && !is_code(first.trim_end_matches(':'))
        {
            return None;
        }
    }
    let (message, shape) = if let Some(message) = rest.strip_prefix(':') {
        (message.trim(), "gnu")
    } else if let Some(message) = rest.strip_prefix(' ') {
        // Without the colon only a code may follow, so prose such as `a.py:3 was changed`
        // is not taken for a finding.
        let message = message.trim();
        let after_severity = severity_word(message).map_or(message, |(_, after)| after);
        if !is_code(after_severity.split_whitespace().next().unwrap_or_default()) {
            return None;
        }
        (message, "located-space")
    } else {
        return None;
    };
    if message.is_empty() {
        return None;
    }
    Some((
        described(Finding::at(file, line_no, column, ""), message),
        shape,
    ))
}

/// `file(line,col): error TS2322: message` (tsc, MSBuild-style tools).
fn paren(line: &str) -> Option<Finding> {
    let open = line.find('(')?;
    let file = &line[..open];
    if !looks_like_path(file) {
        return None;
    }
    let close = line[open..].find("):")? + open;
    let (line_no, column) = line[open + 1..close].split_once(',')?;
    let line_no: u32 = line_no.trim().parse().ok().filter(|&n| n > 0)?;
    let column: u32 = column.trim().parse().ok()?;
    let message = line[close + 2..].trim();
    (!message.is_empty()).then(|| described(Finding::at(file, line_no, Some(column), ""), message))
}

/// `file:line:col - error TS2322: message` (tsc --pretty) and `  file:line:col - error: message
/// (reportX)` (pyright), indented or not.
fn dash(line: &str) -> Option<Finding> {
    let (location, message) = line.trim_start().split_once(" - ")?;
    let (file, rest) = location.split_once(':')?;
    if !looks_like_path(file) {
        return None;
    }
    let (line_no, rest) = number(rest)?;
    let (column, rest) = number(rest.strip_prefix(':')?)?;
    if !rest.is_empty() || line_no == 0 {
        return None;
    }
    // Only with a severity: a dash is common in prose.
    severity_word(message.trim())?;
    Some(described(
        Finding::at(file, line_no, Some(column), ""),
        message.trim(),
    ))
}

/// A positive decimal number at the start of `text`, and what follows it.
/// The number `text` starts with (at most nine digits) and what follows it; 0 is a number
/// (cpplint's `file:0:` is the whole file, which `tidy` makes a finding without a line).
pub(super) fn number(text: &str) -> Option<(u32, &str)> {
    let digits = text.len() - text.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 || digits > 9 {
        return None;
    }
    Some((text[..digits].parse().ok()?, &text[digits..]))
}

/// Fills in the severity, the code and the message from the text after a location, wherever
/// the tool put them: `error: msg`, `[error] msg (rule)`, `E302 msg`, `C0114: msg (symbol)`,
/// `DL3008 warning: msg`, `error TS2322: msg`, `error[rule] msg`, `C: Layout/Cop: msg`,
/// `(W211) msg`, `B404[bandit]: LOW: msg`, `error - msg (Sniff.Code)`, `msg  [code]`,
/// `msg [Error/no-unused-vars]`, `msg (rule) [error]`, `msg  [category] [4]`, `msg (SA4006)`.
pub fn described(mut finding: Finding, text: &str) -> Finding {
    let mut text = text.trim();
    let mut severity: Option<&str> = None;
    let mut rule: Option<String> = None;
    // `[error] msg` (yamllint -f parsable), `[F401] msg` (ruff's pylint format),
    // `[C0114(missing-module-docstring), obj] msg` (pylint parseable), `[document-start] msg`.
    if let Some(rest) = text.strip_prefix('[') {
        if let Some((inside, after)) = rest.split_once(']') {
            let word = inside.split(['(', ',']).next().unwrap_or_default().trim();
            if is_severity(word) {
                severity = Some(word);
                text = after.trim_start();
            } else if is_code(word) || is_rule_name(word) {
                rule = Some(word.to_owned());
                text = after.trim_start();
            }
        }
    }
    if severity.is_none() {
        if let Some((word, code, after)) = severity_with_code(text) {
            // ty's concise format: `error[unresolved-reference] msg`.
            severity = Some(word);
            rule = rule.or(Some(code.to_owned()));
            text = after;
        } else if let Some((word, after)) = severity_word(text).or_else(|| severity_letter(text)) {
            severity = Some(word);
            text = after;
        }
    }
    // `error - msg` (phpcs emacs), after the severity.
    if severity.is_some() {
        text = text.strip_prefix("- ").unwrap_or(text);
    }
    text = without_fix_mark(text);
    // A leading code: `E302 msg`, `C0114: msg`, `TS2322: msg`, `DL3008 warning: msg`,
    // `Layout/SpaceAfterComma: msg`, `(W211) msg`, `B404[bandit]: LOW: msg`.
    if rule.is_none() {
        if let Some((code, after)) = leading_code(text) {
            rule = Some(code.to_owned());
            text = after;
            if severity.is_none() {
                if let Some((word, after)) = severity_word(text).or_else(|| level_word(text)) {
                    severity = Some(word);
                    text = after;
                }
            }
        }
    }
    text = without_fix_mark(text);
    if rule.is_none() {
        // stylelint's unix format: `msg (rule) [error]`, the severity after the rule.
        if let Some((message, word)) = trailing_code(text).filter(|(_, word)| is_severity(word)) {
            severity = severity.or(Some(word));
            text = message;
        }
        // cpplint: `msg  [readability/casting] [4]`, its confidence last.
        text = without_trailing_number(text);
        if let Some((message, code)) = trailing_code(text) {
            text = message;
            if let Some((level, code)) = code.split_once('/').filter(|(l, _)| is_severity(l)) {
                severity = severity.or(Some(level));
                rule = Some(code.to_owned());
            } else {
                rule = Some(code.to_owned());
            }
        }
    }
    // markdownlint's `MD022/blanks-around-headings`: the code is the rule.
    let rule = rule.map(|r| match r.split_once('/') {
        Some((code, _)) if is_code(code) => code.to_owned(),
        _ => r,
    });
    finding.message = text.trim().to_owned();
    finding.with_severity(severity).with_rule(rule.as_deref())
}

/// The marks tools put before a message they can fix: ruff's `[*]`, rubocop's `[Correctable]`.
fn without_fix_mark(text: &str) -> &str {
    text.strip_prefix("[*] ")
        .or_else(|| text.strip_prefix("[Correctable] "))
        .unwrap_or(text)
}

/// The code a message starts with, and the message after it: `E302 msg`, `C0114: msg`,
/// `Layout/SpaceAfterComma: msg` (rubocop's cops, only with their colon), `(W211) msg`
/// (luacheck), `B404[bandit]: msg` (bandit's custom format).
fn leading_code(text: &str) -> Option<(&str, &str)> {
    let first = text.split_whitespace().next()?;
    let after = text[first.len()..].trim_start();
    let bare = first.trim_end_matches(':');
    if is_code(bare) {
        return Some((bare, after));
    }
    if let Some(code) = first.strip_prefix('(').and_then(|w| w.strip_suffix(')')) {
        return is_code(code).then_some((code, after));
    }
    if let Some(code) = first
        .strip_suffix("]:")
        .and_then(|w| w.split_once('['))
        .map(|(code, _)| code)
    {
        return is_code(code).then_some((code, after));
    }
    let cop = first.strip_suffix(':')?;
    let mut parts = cop.split('/');
    let named = parts.clone().count() >= 2
        && parts.all(|part| {
            part.starts_with(|c: char| c.is_ascii_uppercase())
                && part.chars().all(|c| c.is_ascii_alphanumeric())
        });
    named.then_some((cop, after))
}

/// `error[rule] msg` or `error[rule]: msg`: a severity word with its rule in brackets.
fn severity_with_code(text: &str) -> Option<(&str, &str, &str)> {
    let (word, rest) = text.split_once('[')?;
    if !is_severity(word) {
        return None;
    }
    let (code, after) = rest.split_once(']')?;
    let after = after.strip_prefix(':').unwrap_or(after);
    let wordlike = !code.is_empty()
        && code
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '/' | '.'));
    (wordlike && after.starts_with(' ')).then(|| (word, code, after.trim_start()))
}

/// rubocop's `C: msg`: the letter of a severity, with its colon.
fn severity_letter(text: &str) -> Option<(&'static str, &str)> {
    let mut chars = text.chars();
    let word = match chars.next()? {
        'C' => "convention",
        'W' => "warning",
        'E' => "error",
        'F' => "fatal",
        'R' => "refactor",
        'I' => "info",
        _ => return None,
    };
    let rest = chars.as_str().strip_prefix(": ")?;
    Some((word, rest.trim_start()))
}

/// `LOW: msg` (bandit's custom format): a level word, only with its colon.
fn level_word(text: &str) -> Option<(&str, &str)> {
    let (word, rest) = text.split_once(": ")?;
    matches!(
        word.to_ascii_lowercase().as_str(),
        "low" | "medium" | "high" | "critical"
    )
    .then(|| (word, rest.trim_start()))
}

/// `msg [4]` → `msg`: a number in brackets at the end (cpplint's confidence) is not the code.
fn without_trailing_number(text: &str) -> &str {
    text.strip_suffix(']')
        .and_then(|t| t.rsplit_once('['))
        .filter(|(message, n)| {
            !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) && !message.trim().is_empty()
        })
        .map_or(text, |(message, _)| message.trim_end())
}

/// A rule's name as tools write it in brackets: `document-start`, `truthy`.
fn is_rule_name(word: &str) -> bool {
    word.len() > 2
        && word.starts_with(|c: char| c.is_ascii_lowercase())
        && word
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// A GitHub Actions workflow command, as ruff, biome and yamllint print them for CI:
/// `::error title=..,file=..,line=1,col=8::message` (`%0A` and the like escaped).
fn github(line: &str) -> Option<Finding> {
    let rest = line.strip_prefix("::")?;
    let (command, rest) = rest.split_once(' ')?;
    if !matches!(command, "error" | "warning" | "notice") {
        return None;
    }
    let (properties, message) = rest.split_once("::")?;
    let unescape = |text: &str| {
        text.replace("%0A", " ")
            .replace("%0D", "")
            .replace("%3A", ":")
            .replace("%2C", ",")
            .replace("%25", "%")
    };
    let mut file = None;
    let mut line_no = None;
    let mut column = None;
    let mut title = None;
    for property in properties.split(',') {
        let Some((key, value)) = property.split_once('=') else {
            continue;
        };
        match key {
            "file" => file = Some(unescape(value)),
            "line" => line_no = value.parse::<u32>().ok().filter(|&n| n > 0),
            "col" => column = value.parse::<u32>().ok(),
            "title" => title = Some(unescape(value)),
            _ => {}
        }
    }
    let file = file.filter(|f| !f.trim().is_empty())?;
    let message = unescape(message);
    let message = message.split("  help:").next().unwrap_or(&message).trim();
    // The message may repeat the place: `app.py:1:8: F401 ...` (ruff), `1:1 [rule] ...`
    // (yamllint).
    if let Some((inner, _)) = located(message) {
        let finding = Finding {
            file: Some(file),
            line: line_no.or(inner.line),
            column: column.or(inner.column),
            ..inner
        };
        return Some(titled(finding, title.as_deref()).with_severity(Some(command)));
    }
    let message = message
        .split_once(' ')
        .filter(|(at, _)| at.split(':').all(|n| n.parse::<u32>().is_ok()))
        .map_or(message, |(_, rest)| rest);
    let mut finding = described(Finding::new(""), message);
    finding.file = Some(file);
    finding.line = line_no;
    finding.column = column;
    Some(titled(finding, title.as_deref()).with_severity(Some(command)))
}

/// A GitHub annotation's finding with the rule its `title=` names, when its message named none:
/// `ruff (F401)` and `ty (unresolved-reference)` name it in parentheses, `lint/style/useConst`
/// and `eslint(no-unused-vars)` (oxlint) are it whole. A message that starts by repeating the
/// rule (`unresolved-reference: Name ...`) is the rest.
fn titled(mut finding: Finding, title: Option<&str>) -> Finding {
    let title = title.unwrap_or_default().trim();
    if finding.rule.is_some() || title.is_empty() {
        return finding;
    }
    let rule = if title.contains(char::is_whitespace) {
        match trailing_code(title) {
            Some((_, code)) => code,
            None => return finding,
        }
    } else {
        title
    };
    if let Some(rest) = finding
        .message
        .strip_prefix(rule)
        .and_then(|rest| rest.strip_prefix(": "))
    {
        finding.message = rest.trim_start().to_owned();
    }
    finding.with_rule(Some(rule))
}

/// eslint's compact format: `file: line 1, col 7, Error - message (rule)`.
fn compact(line: &str) -> Option<Finding> {
    let (file, rest) = line.split_once(": line ")?;
    if !looks_like_path(file) {
        return None;
    }
    let (line_no, rest) = number(rest)?;
    let rest = rest.strip_prefix(", col ")?;
    let (column, rest) = number(rest)?;
    let rest = rest.strip_prefix(", ")?;
    let (severity, message) = rest.split_once(" - ")?;
    if !is_severity(severity) || line_no == 0 {
        return None;
    }
    Some(described(
        Finding::at(file, line_no, Some(column), ""),
        &format!("{severity}: {message}"),
    ))
}

/// `error: rest`, `warning rest` (a severity word, with or without its colon) at the start.
fn severity_word(text: &str) -> Option<(&str, &str)> {
    let end = text
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(text.len());
    let word = &text[..end];
    if !is_severity(word) {
        return None;
    }
    let rest = &text[end..];
    let rest = rest.strip_prefix(':').unwrap_or(rest);
    // `error TS2322: ...` keeps its code for the caller; `errors found` is prose.
    if !(rest.is_empty() || rest.starts_with(' ')) {
        return None;
    }
    Some((word, rest.trim_start()))
}

pub(super) fn is_severity(word: &str) -> bool {
    matches!(
        word.to_ascii_lowercase().as_str(),
        "error"
            | "warning"
            | "warn"
            | "info"
            | "information"
            | "note"
            | "hint"
            | "style"
            | "fatal"
            | "convention"
            | "refactor"
    )
}

/// A tool's code for a check: letters then digits (`F401`, `E0308`, `SC2086`, `DL3008`,
/// `TS2322`, `C0114`), with an optional `/alias` (markdownlint's `MD022/blanks-around-headings`).
pub fn is_code(word: &str) -> bool {
    let head = word.split('/').next().unwrap_or_default();
    let letters = head.len()
        - head
            .trim_start_matches(|c: char| c.is_ascii_uppercase())
            .len();
    let digits = &head[letters..];
    (1..=4).contains(&letters)
        && (2..=5).contains(&digits.len())
        && digits.chars().all(|c| c.is_ascii_digit())
        && word[head.len()..]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '-' | '_'))
}

/// `message [code]` or `message (code)` at the end, where the code is one word of a check's
/// name (`[assignment]`, `(missing-module-docstring)`, `[SC2086]`, `(SA4006)`, `(unused)`).
fn trailing_code(text: &str) -> Option<(&str, &str)> {
    let (open, close) = match text.chars().last()? {
        ']' => ('[', ']'),
        ')' => ('(', ')'),
        _ => return None,
    };
    let start = text.rfind(open)?;
    let code = &text[start + 1..text.len() - close.len_utf8()];
    let message = text[..start].trim_end();
    // In brackets a rule may carry its plugin in parentheses: `[Warning/eslint(no-unused-vars)]`.
    let parenthesised = |c: char| close == ']' && matches!(c, '(' | ')');
    let wordlike = !code.is_empty()
        && code.len() <= 100
        && code.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(c, '-' | '_' | '/' | '.' | ':')
                || parenthesised(c)
        })
        && code.chars().any(|c| c.is_ascii_alphabetic());
    (wordlike && !message.is_empty()).then_some((message, code))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// file, line, column, severity, rule, message
    type Read<'a> = (
        &'a str,
        u32,
        Option<u32>,
        Option<&'a str>,
        Option<&'a str>,
        &'a str,
    );

    fn read_all(
        line: &str,
    ) -> (
        String,
        u32,
        Option<u32>,
        Option<String>,
        Option<String>,
        String,
    ) {
        let f = read(line, Only::default()).unwrap_or_else(|| panic!("no finding in {line:?}"));
        (
            f.file.unwrap_or_default(),
            f.line.unwrap_or_default(),
            f.column,
            f.severity,
            f.rule,
            f.message,
        )
    }

    #[test]
    #[expect(
        clippy::too_many_lines,
        reason = "a table of each tool's line, read top to bottom"
    )]
    fn reads_each_tools_one_line_shape() {
        let cases: &[(&str, Read<'_>)] = &[
            (
                "a.py:1:8: F401 [*] `os` imported but unused",
                (
                    "a.py",
                    1,
                    Some(8),
                    None,
                    Some("F401"),
                    "`os` imported but unused",
                ),
            ),
            (
                "a.py:3: error: Incompatible types (got \"str\")  [assignment]",
                (
                    "a.py",
                    3,
                    None,
                    Some("error"),
                    Some("assignment"),
                    "Incompatible types (got \"str\")",
                ),
            ),
            (
                "a.py:1:0: C0114: Missing module docstring (missing-module-docstring)",
                (
                    "a.py",
                    1,
                    Some(0),
                    None,
                    Some("C0114"),
                    "Missing module docstring (missing-module-docstring)",
                ),
            ),
            (
                "s.sh:3:6: note: Double quote to prevent globbing. [SC2086]",
                (
                    "s.sh",
                    3,
                    Some(6),
                    Some("note"),
                    Some("SC2086"),
                    "Double quote to prevent globbing.",
                ),
            ),
            (
                "a.yaml:3:1: [error] wrong indentation (indentation)",
                (
                    "a.yaml",
                    3,
                    Some(1),
                    Some("error"),
                    Some("indentation"),
                    "wrong indentation",
                ),
            ),
            (
                "/t/a.js:1:7: 'x' is unused. [Error/no-unused-vars]",
                (
                    "/t/a.js",
                    1,
                    Some(7),
                    Some("error"),
                    Some("no-unused-vars"),
                    "'x' is unused.",
                ),
            ),
            (
                "src/a.ts(3,7): error TS2322: Type 'string' is not assignable.",
                (
                    "src/a.ts",
                    3,
                    Some(7),
                    Some("error"),
                    Some("TS2322"),
                    "Type 'string' is not assignable.",
                ),
            ),
            (
                "src/a.ts:3:7 - error TS2322: Type 'string'.",
                (
                    "src/a.ts",
                    3,
                    Some(7),
                    Some("error"),
                    Some("TS2322"),
                    "Type 'string'.",
                ),
            ),
            (
                "  /t/a.py:3:5 - error: Type is wrong (reportAssignmentType)",
                (
                    "/t/a.py",
                    3,
                    Some(5),
                    Some("error"),
                    Some("reportAssignmentType"),
                    "Type is wrong",
                ),
            ),
            (
                "README.md:3 MD022/blanks-around-headings Headings should be surrounded",
                (
                    "README.md",
                    3,
                    None,
                    None,
                    Some("MD022"),
                    "Headings should be surrounded",
                ),
            ),
            (
                "Dockerfile:3 DL3008 warning: Pin versions in apt get install.",
                (
                    "Dockerfile",
                    3,
                    None,
                    Some("warning"),
                    Some("DL3008"),
                    "Pin versions in apt get install.",
                ),
            ),
            (
                "vet: ./main.go:5:2: x declared and not used",
                (
                    "./main.go",
                    5,
                    Some(2),
                    None,
                    None,
                    "x declared and not used",
                ),
            ),
            (
                "bzdiff:16:6: note: Use $(...) notation instead of legacy backticks. [SC2006]",
                (
                    "bzdiff",
                    16,
                    Some(6),
                    Some("note"),
                    Some("SC2006"),
                    "Use $(...) notation instead of legacy backticks.",
                ),
            ),
            (
                "main.go:5:2: this value of x is never used (SA4006)",
                (
                    "main.go",
                    5,
                    Some(2),
                    None,
                    Some("SA4006"),
                    "this value of x is never used",
                ),
            ),
            (
                "app.rb:9:20: C: [Correctable] Layout/SpaceBeforeSemicolon: Space found before semicolon.",
                (
                    "app.rb",
                    9,
                    Some(20),
                    Some("convention"),
                    Some("Layout/SpaceBeforeSemicolon"),
                    "Space found before semicolon.",
                ),
            ),
            (
                "app.py:17:16: error[unresolved-reference] Name `x` used when not defined",
                (
                    "app.py",
                    17,
                    Some(16),
                    Some("error"),
                    Some("unresolved-reference"),
                    "Name `x` used when not defined",
                ),
            ),
            (
                "/t/a.css:3:3: Unknown property \"colr\" (property-no-unknown) [error]",
                (
                    "/t/a.css",
                    3,
                    Some(3),
                    Some("error"),
                    Some("property-no-unknown"),
                    "Unknown property \"colr\"",
                ),
            ),
            (
                "src/a.js:6:9: 'empty' is never used. [Warning/eslint(no-unused-vars)]",
                (
                    "src/a.js",
                    6,
                    Some(9),
                    Some("warning"),
                    Some("eslint(no-unused-vars)"),
                    "'empty' is never used.",
                ),
            ),
            (
                "/t/a.php:3:20: error - Expected 1 space; 0 found (Squiz.Functions.FunctionDeclarationArgumentSpacing.NoSpaceBeforeArg)",
                (
                    "/t/a.php",
                    3,
                    Some(20),
                    Some("error"),
                    Some("Squiz.Functions.FunctionDeclarationArgumentSpacing.NoSpaceBeforeArg"),
                    "Expected 1 space; 0 found",
                ),
            ),
            (
                "main.lua:1:7: (W211) unused variable 'unused'",
                (
                    "main.lua",
                    1,
                    Some(7),
                    None,
                    Some("W211"),
                    "unused variable 'unused'",
                ),
            ),
            (
                "/t/app.py:7: B602[bandit]: HIGH: subprocess call with shell=True identified.",
                (
                    "/t/app.py",
                    7,
                    None,
                    Some("high"),
                    Some("B602"),
                    "subprocess call with shell=True identified.",
                ),
            ),
            (
                "src/a.cpp:9:  Using C-style cast.  [readability/casting] [4]",
                (
                    "src/a.cpp",
                    9,
                    None,
                    None,
                    Some("readability/casting"),
                    "Using C-style cast.",
                ),
            ),
        ];
        for (line, want) in cases {
            let got = read_all(line);
            assert_eq!(
                (
                    got.0.as_str(),
                    got.1,
                    got.2,
                    got.3.as_deref(),
                    got.4.as_deref(),
                    got.5.as_str()
                ),
                *want,
                "{line}"
            );
        }
    }

    #[test]
    fn github_annotations_take_their_rule_from_the_title() {
        let cases = [
            // oxlint: the title is the rule whole.
            (
                "::warning file=src/a.js,line=5,col=3,title=eslint(no-debugger)::src/a.js:5:3: `debugger` is not allowed",
                "eslint(no-debugger)",
                "`debugger` is not allowed",
            ),
            // ty: the rule in parentheses, repeated at the start of the message.
            (
                "::error title=ty (unresolved-reference),file=/t/app.py,line=17,col=16::app.py:17:16: unresolved-reference: Name `x` used",
                "unresolved-reference",
                "Name `x` used",
            ),
            // zizmor: a place of its own in the message, a bare rule as the title.
            (
                "::error file=.github/workflows/ci.yml,line=3,title=dangerous-triggers::ci.yml:3: insecure trigger",
                "dangerous-triggers",
                "insecure trigger",
            ),
        ];
        for (line, rule, message) in cases {
            let found = read(line, Only::default()).unwrap_or_else(|| panic!("{line}"));
            assert_eq!(found.rule.as_deref(), Some(rule), "{line}");
            assert_eq!(found.message, message, "{line}");
        }
    }

    #[test]
    fn prose_times_and_urls_are_not_findings() {
        for line in [
            "see https://example.com:443/x",
            "12:30:01 started",
            "1.2:3 ratio",
            "a.py:3 was changed yesterday",
            "Found 3 errors in 1 file (checked 1 source file)",
            "note: 1 - error: x",
            "error: something broke",
            "Started:12:30: the build",
            "step:3: done",
        ] {
            assert!(read(line, Only::default()).is_none(), "{line}");
        }
    }
}
