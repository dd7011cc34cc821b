//! A program word not known before it runs, bounded where its value can be: the rule that tells
//! `"$VIRTUAL_ENV/bin/python"` (some program named `python`) from `$c` (any command at all).
//!
//! A word in program position whose value validator cannot read is judged as the program its
//! value is bounded to, when every value it can take runs a program of one known name:
//! - a path whose last part is literal, with every expansion before it either in double quotes
//!   or a plain `$NAME` / `${NAME}` the line itself gives no value (one from the environment
//!   the agent's shell was started with): `"$VIRTUAL_ENV/bin/python"`, `"$(go env GOPATH)/bin/x"`;
//! - a program looked up by name: `$(which python3)`, `$(command -v python3)`, `$(type -P x)`;
//! - a default: `${PYTHON:-python3}` is `$PYTHON` from the environment when it holds one plain
//!   path, else `python3`, when the line itself gives `PYTHON` no value;
//! - a variable alone (`$SHELL`, `"$EDITOR"`) the line gives no value, whose value in the
//!   environment validator was started with (the agent's, which its shell inherits) is a plain
//!   path.
//!
//! Anything else (`$c`, `$(printf …)`, `{git,push}`, an unquoted `$(…)/x` whose output may be
//! split into several words, a variable the line sets) may expand into a whole command line:
//! it is judged as any command.

use std::collections::HashSet;

/// The variable names a line gives a value to, as far as its text shows: every name written
/// other than right after `$` or `${` (`c=…`, `read c`, `for c in`, `export c`, `printf -v c`).
/// Conservative: a name that only looks set counts as set.
pub(super) struct Named(HashSet<String>);

impl Named {
    pub(super) fn of(line: &str) -> Named {
        let bytes = line.as_bytes();
        let mut names = HashSet::new();
        let mut at = 0;
        while at < bytes.len() {
            let starts = bytes[at].is_ascii_alphabetic() || bytes[at] == b'_';
            let continues =
                at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
            if !starts || continues {
                at += 1;
                continue;
            }
            let end = bytes[at..]
                .iter()
                .position(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
                .map_or(bytes.len(), |len| at + len);
            let before = &bytes[..at];
            let expanded = before.ends_with(b"$")
                || before.ends_with(b"${")
                || before.ends_with(b"${!")
                || before.ends_with(b"${#");
            if !expanded {
                names.insert(line[at..end].to_owned());
            }
            at = end;
        }
        Named(names)
    }

    fn sets(&self, name: &str) -> bool {
        self.0.contains(name)
    }
}

/// The name of the program the word `raw` (as written) runs, when its value is bounded to one.
pub(super) fn bound(raw: &str, named: &Named) -> Option<String> {
    let quoted = raw
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .filter(|inner| !inner.contains('"'));
    let inner = quoted.unwrap_or(raw);
    if let Some(name) = looked_up(inner)
        .or_else(|| defaulted(inner, named))
        .or_else(|| from_environment(inner, named))
    {
        return Some(name);
    }
    path_tail(raw, named)
}

fn is_plain_name(text: &str) -> bool {
    !text.is_empty()
        && text != "."
        && text != ".."
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._+-".contains(c))
}

fn is_identifier(text: &str) -> bool {
    text.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `$(which NAME)`, `$(command -v NAME)`, `$(type -P NAME)`, or in backquotes.
fn looked_up(text: &str) -> Option<String> {
    let inner = text
        .strip_prefix("$(")
        .and_then(|t| t.strip_suffix(')'))
        .or_else(|| text.strip_prefix('`').and_then(|t| t.strip_suffix('`')))?;
    let words: Vec<&str> = inner.split_whitespace().collect();
    let name = match words.as_slice() {
        ["which", name] | ["command", "-v", name] | ["type", "-P", name] => *name,
        _ => return None,
    };
    is_plain_name(name).then(|| name.to_owned())
}

/// `${NAME:-DEFAULT}` (or `-`, `:=`, `=`), for a `NAME` the line gives no value.
fn defaulted(text: &str, named: &Named) -> Option<String> {
    let inner = text.strip_prefix("${")?.strip_suffix('}')?;
    let split = inner.find([':', '-', '='])?;
    let (variable, rest) = inner.split_at(split);
    let default = ["-", ":-", "=", ":="]
        .iter()
        .find_map(|op| rest.strip_prefix(op))?;
    if !is_identifier(variable) || named.sets(variable) {
        return None;
    }
    let from_environment = std::env::var(variable).ok();
    // `${V-x}` of a `V` set but empty is nothing: the word goes, and the next is the program.
    if !rest.starts_with(':') && from_environment.as_deref() == Some("") {
        return None;
    }
    let from_environment = from_environment.filter(|v| !v.is_empty());
    let value = from_environment.as_deref().unwrap_or(default);
    plain_path_name(value)
}

/// `$NAME` or `${NAME}` alone, for a `NAME` the line gives no value and the environment holds
/// a plain path (`$SHELL`, `$EDITOR`); unset, it would be nothing, and the next word the program.
fn from_environment(text: &str, named: &Named) -> Option<String> {
    let variable = text.strip_prefix('$')?;
    let variable = variable
        .strip_prefix('{')
        .and_then(|v| v.strip_suffix('}'))
        .unwrap_or(variable);
    if !is_identifier(variable) || named.sets(variable) {
        return None;
    }
    plain_path_name(&std::env::var(variable).ok()?)
}

/// The last part of `value` when it is a path of plain characters.
fn plain_path_name(value: &str) -> Option<String> {
    let name = value.rsplit('/').next().unwrap_or(value);
    let plain_path = value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._+-/".contains(c));
    (plain_path && is_plain_name(name)).then(|| name.to_owned())
}

/// A path whose last part is literal and whose expansions before it cannot split it into
/// several words.
fn path_tail(raw: &str, named: &Named) -> Option<String> {
    let slash = last_top_level_slash(raw)?;
    let tail: String = raw[slash + 1..]
        .chars()
        .filter(|c| *c != '"' && *c != '\'')
        .collect();
    if !is_plain_name(&tail) || raw[slash + 1..].contains(['$', '`', '\\']) {
        return None;
    }
    head_cannot_split(&raw[..slash], named).then_some(tail)
}

/// The last `/` outside every expansion and brace of `raw`.
fn last_top_level_slash(raw: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_single = false;
    let mut in_backquote = false;
    let mut last = None;
    for (at, c) in raw.char_indices() {
        match c {
            '\'' if !in_backquote => in_single = !in_single,
            '`' if !in_single => in_backquote = !in_backquote,
            '(' | '{' if !in_single => depth += 1,
            ')' | '}' if !in_single => depth = depth.saturating_sub(1),
            '/' if depth == 0 && !in_backquote => last = Some(at),
            _ => {}
        }
    }
    last
}

/// Whether every expansion in `head` is in double quotes or a plain variable the line does not
/// set: an unquoted substitution's output, or a set variable's value, may be a whole command.
fn head_cannot_split(head: &str, named: &Named) -> bool {
    let bytes = head.as_bytes();
    let mut in_double = false;
    let mut in_single = false;
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'\'' if !in_double => in_single = !in_single,
            b'"' if !in_single => in_double = !in_double,
            b'\\' if !in_single => at += 1,
            b'`' if !in_single && !in_double => return false,
            b'$' if !in_single && !in_double => {
                let rest = &head[at + 1..];
                let (variable, len) = match rest.strip_prefix('{') {
                    Some(braced) => match braced.find('}') {
                        Some(end) => (&braced[..end], end + 2),
                        None => return false,
                    },
                    None => {
                        let end = rest
                            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                            .unwrap_or(rest.len());
                        (&rest[..end], end)
                    }
                };
                if !is_identifier(variable) || named.sets(variable) {
                    return false;
                }
                at += len;
            }
            _ => {}
        }
        at += 1;
    }
    // The word's quotes may close in its last part: the shell read the word whole.
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_word_whose_name_is_bounded_is_judged_by_that_name() {
        for (word, name) in [
            ("\"$VIRTUAL_ENV/bin/python\"", "python"),
            ("$VIRTUAL_ENV/bin/python", "python"),
            ("${VIRTUAL_ENV}/bin/pytest", "pytest"),
            ("$(which python3)", "python3"),
            ("`command -v ruff`", "ruff"),
            // SURELY_UNSET_BY_ANY_TEST is not in the environment: the default is the program.
            ("${SURELY_UNSET_BY_ANY_TEST:-python3}", "python3"),
        ] {
            assert_eq!(
                bound(word, &Named::of(word)).as_deref(),
                Some(name),
                "{word}"
            );
        }
        let word = "\"$(go env GOPATH)/bin/tool\"";
        assert_eq!(bound(word, &Named::of(word)).as_deref(), Some("tool"));
        if let Some(home) = std::env::var("HOME").ok().and_then(|h| plain_path_name(&h)) {
            assert_eq!(bound("\"$HOME\"", &Named::of("\"$HOME\"")), Some(home));
            assert_eq!(bound("$HOME", &Named::of("HOME=x; $HOME")), None);
        }
    }

    #[test]
    fn a_program_word_that_may_be_a_whole_command_is_not_bounded() {
        for (word, line) in [
            ("$c", "$c"),
            ("$c", "c='git push'; $c"),
            ("$c", "read -r c <<<x; $c"),
            ("$(printf 'git pu%s' sh)", "$(printf 'git pu%s' sh)"),
            ("$(echo git push)/x", "$(echo git push)/x"),
            ("$c/git", "c=/usr/bin; $c/git push"),
            ("{git,pu\"\"sh}", "{git,pu\"\"sh}"),
            ("{rm,-rf,src}", "{rm,-rf,src}"),
            ("${c:-git}", "${c:-git} push; c=x"),
            ("$(which $x)", "$(which $x)"),
            ("\"$X/bin/$Y\"", "\"$X/bin/$Y\""),
        ] {
            assert_eq!(bound(word, &Named::of(line)), None, "{line}");
        }
    }
}
