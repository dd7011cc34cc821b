//! A gate as the rules file writes it (`GateSpec`): the rule it runs and every key any rule
//! takes, each value checked where its position is still known. Each rule reads its own keys
//! from here (`from_spec`); the rules file's loader and its JSON Schema (`config::raw`,
//! `config::json_schema`) take the same type, so its doc comments are what an editor shows a user.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::de::{self, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use crate::globs::Pattern;

pub use super::RuleKind;

/// One gate: a rule, its keys, and where the run goes after it.
// Each rule reads the keys it owns from here (`rules::*::from_spec`) and the loader refuses
// keys that belong to other rules; the schema says the same per rule (`config::json_schema`).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GateSpec {
    /// The gate's name: letters, digits, `-`, `_` and `.`, unique in its pipeline.
    #[schemars(regex(pattern = r"^[A-Za-z0-9._-]+$"))]
    pub name: String,
    /// The rule the gate runs.
    pub rule: RuleKind,
    /// Where the run goes when the gate passes (default: CONTINUE).
    pub on_pass: Option<RouteText>,
    /// Where the run goes when the gate fails (default: BLOCK). A failure routed by CONTINUE,
    /// PASS or to a gate is a warning, not a failed verdict.
    pub on_fail: Option<RouteText>,
    /// Longest this gate may run (default: `defaults.timeout`); the whole process group is
    /// killed past it.
    #[serde(default, deserialize_with = "crate::duration::deserialize")]
    #[schemars(schema_with = "crate::duration::schema")]
    pub timeout: Option<Duration>,
    /// Globs of every file the gate reads: once it passed, it is not run again (`cached`) while
    /// these files, the gate and its program are unchanged. Not for status, file-scope, review.
    #[schemars(length(min = 1))]
    pub inputs: Option<Vec<Pattern>>,
    /// Run the gate only when one of these is in the task directory, such as the tool's own
    /// configuration: `[{file: ruff.toml}, {file: pyproject.toml, contains: '^\[tool\.ruff'}]`.
    /// Otherwise the gate is skipped, and its line says what was looked for. The files are the
    /// worker's: protect them with file-scope's `readonly:` where removing one must not turn a
    /// gate off.
    #[schemars(length(min = 1))]
    pub only_if: Option<Vec<PresenceSpec>>,
    /// Skip the gate when one of these is surely in the task directory (read, and matching
    /// its `contains:`), as when another gate already does its work: the node pack's `lint`
    /// where the `test` script runs the linter. What cannot be read counts as absent, and a
    /// change of the worker's to a file it looks at runs the gate. No `key:`.
    #[schemars(length(min = 1))]
    pub unless: Option<Vec<PresenceSpec>>,
    /// Gates next to each other with the same `group` start together (at most the pipeline's
    /// `jobs` at once) and are settled in the order they are written, as if they had run one
    /// after another: the first failure is the one reported first, and the routes are taken
    /// in order. In a group, every gate but the last goes on when it passes (`on_pass:
    /// CONTINUE`), and `on_fail` is BLOCK, CONTINUE or STOP.
    #[schemars(regex(pattern = r"^[A-Za-z0-9._-]+$"))]
    pub group: Option<String>,
    // exists
    /// exists: globs that must each match at least `min_count` files.
    pub paths: Option<Vec<Pattern>>,
    /// exists: globs that must match no file.
    pub forbid: Option<Vec<Pattern>>,
    /// exists: files matching `paths` must not be empty (default: false).
    pub non_empty: Option<bool>,
    /// exists: how many files each `paths` glob must match (default: 1).
    pub min_count: Option<u32>,
    // lint, test, review
    /// lint, test, review: the command, as a list of arguments or a string split like a shell
    /// would (no shell runs). It runs in the task directory (a reviewer, read-only: see
    /// `writable`).
    pub run: Option<Argv>,
    /// lint, test (globs; matches are appended to `run` as arguments, in batches); schema (the
    /// documents to validate); content (the files read).
    pub files: Option<Vec<Pattern>>,
    /// lint, test, review: environment variables added for the command.
    pub env: Option<BTreeMap<String, String>>,
    /// lint, test: the working directory, relative to the task directory.
    pub cwd: Option<String>,
    /// test: a JUnit XML report the command writes (relative to the task directory), read for
    /// failed test names.
    pub junit: Option<String>,
    /// lint: a findings report the command writes (SARIF, checkstyle, rdjson, or any format
    /// of `format:`), relative to the task directory, read after it ends (16 MiB at most; one
    /// this run did not write is not read).
    pub report: Option<String>,
    /// lint, test: the command that fixes what the gate finds (`ruff check --fix`,
    /// `cargo fmt`), as `run` is written: shown with the gate's failure, and run by
    /// `validator check --fix` before judging again.
    pub fix: Option<Argv>,
    /// test: the command that runs just the tests it names, written as `run` is, with one word
    /// that names them: `{tests}` (each failed test's name as an argument of its own, as
    /// pytest and cargo test take them), `{tests_regex}` (one pattern matching each whole name
    /// as go test's `-run` reads one, each `/`-separated level anchored on its own) or `{test_titles_regex}` (one pattern matching any
    /// title of the names, ` > `-separated, at the end of a full name, as jest's, vitest's and
    /// node's `--test-name-pattern` take it). After a run that named failed tests, the next one runs
    /// them first and fails at once if any still fails; a pass still needs the whole suite.
    pub select: Option<Argv>,
    /// lint: the output format to read findings from, for output that auto-detection reads
    /// wrongly (default: auto, every format of docs/reasons.md): gnu, located-space, paren,
    /// dash, rustc, stylish, compact, shellcheck, biome, github, formatter, cargo-json, sarif,
    /// checkstyle, rdjson.
    pub format: Option<String>,
    /// lint: fail when the command prints anything (findings, or output no finding can be read
    /// from) even though it exited 0, for tools that report without failing (`gofmt -l`,
    /// linters that only warn) (default: false).
    pub fail_on_findings: Option<bool>,
    // review
    /// review: several reviewers instead of one `run:`, each `{run, name, env}`; `mode` says
    /// how they decide.
    #[schemars(length(min = 1))]
    pub reviewers: Option<Vec<ReviewerSpec>>,
    /// review: how `reviewers` decide: all (default: every one approves), majority (more than
    /// half approve) or critique (two: the second judges the first's answer, and decides).
    pub mode: Option<Mode>,
    /// review: directories the reviewer may write besides its own scratch directory ($TMPDIR),
    /// such as `["~/.claude"]` where a model CLI keeps its session; relative to the rules
    /// file. Never the task's: an entry that is, holds or lies in the task directory or the
    /// worker's area is an ERROR when the gate runs.
    pub writable: Option<Vec<String>>,
    /// review: the TCP ports the reviewer may connect to (default: [443], HTTPS), or `any`.
    pub network: Option<Network>,
    // schema
    /// schema: the JSON Schema file (relative to the rules file); draft 4 to 2020-12, local
    /// `$ref` only.
    pub schema: Option<PathBuf>,
    /// schema: largest document read, in bytes (default: 10 MiB); content: largest file read
    /// (default: 1 MiB; a larger one fails the gate).
    pub max_bytes: Option<u64>,
    /// schema: assert `format` (`ipv4`, `email`, `date-time`, ...) in every draft, as
    /// check-jsonschema does (default: true); false leaves formats as annotations only. Formats
    /// validator does not know are ignored.
    pub formats: Option<bool>,
    /// schema: the draft a schema without `$schema` is read as: 4, 6, 7, 2019-09 or 2020-12
    /// (default: 2020-12, and its errors then say it was assumed). A `$schema` in the file says
    /// what the file is written in and wins; a `draft:` that names another draft is an error.
    pub draft: Option<Draft>,
    /// schema: URL prefixes mapped to local directories (relative to the rules file), such as
    /// `{"https://example.com/schemas/": "schemas/"}`: a `$ref` under a prefix is read from its
    /// directory, never from outside it. validator never fetches anything: any other remote
    /// `$ref` is an error.
    #[schemars(extend("propertyNames" = {"pattern": "^[Hh][Tt][Tt][Pp][Ss]?://.*/$"}))]
    pub refs: Option<BTreeMap<String, PathBuf>>,
    // content
    /// content: patterns no file matching `files` may contain: `[{pattern, message}]`.
    pub ban: Option<Vec<ContentPattern>>,
    /// content: globs of files `files` matches that are not read (a generated file, the one
    /// module allowed what the others are not).
    pub exclude: Option<Vec<Pattern>>,
    /// content: patterns every file matching `files` must contain: `[{pattern, message}]`.
    pub require: Option<Vec<ContentPattern>>,
    /// content, lint, test: only the files the worker changed count among those `files` matches
    /// (git against `base`, else the baseline; with neither, every file), as pre-commit passes
    /// only staged files; a command gate with none left is skipped, saying so. `check
    /// --all-files` takes the whole project (in git: what it tracks, plus new files it does not
    /// ignore) (default: false).
    pub changed_only: Option<bool>,
    // co-change
    /// co-change: globs of files whose change asks for a change under `then`.
    pub when: Option<Vec<Pattern>>,
    /// co-change: globs of which a file must change too when a `when` file did.
    pub then: Option<Vec<Pattern>>,
    /// co-change: the words after which the worker may say why `then` did not change (in its
    /// done signal or a line its change adds), such as `skip-tests:`. Without it, no skipping.
    pub skip_marker: Option<String>,
    /// co-change: how many words that reason needs (default: 5).
    pub min_reason_words: Option<u32>,
    // file-scope
    /// file-scope: globs a changed file must match (if given).
    pub allow: Option<Vec<Pattern>>,
    /// file-scope: globs no changed file may match (the worker may read, not change, these).
    pub readonly: Option<Vec<Pattern>>,
    /// file-scope: globs no changed file may match.
    pub deny: Option<Vec<Pattern>>,
    /// file-scope, content, lint and test (`changed_only`), co-change: the git ref changes are
    /// counted from (default: HEAD); name the commit the worker started from when it may
    /// commit, or the branch a pull request targets.
    pub base: Option<String>,
    // status
    /// status: STATUS: OK must come with a summary (default: false).
    pub require_summary: Option<bool>,
}

impl GateSpec {
    /// A gate with no keys but its name and rule, for gates made outside the rules file
    /// (a contract's success criteria).
    pub fn new(name: String, rule: RuleKind) -> Self {
        GateSpec {
            name,
            rule,
            on_pass: None,
            on_fail: None,
            timeout: None,
            inputs: None,
            only_if: None,
            unless: None,
            group: None,
            paths: None,
            forbid: None,
            non_empty: None,
            min_count: None,
            run: None,
            files: None,
            env: None,
            cwd: None,
            junit: None,
            format: None,
            fail_on_findings: None,
            fix: None,
            select: None,
            report: None,
            schema: None,
            max_bytes: None,
            formats: None,
            draft: None,
            refs: None,
            ban: None,
            exclude: None,
            require: None,
            changed_only: None,
            when: None,
            then: None,
            skip_marker: None,
            min_reason_words: None,
            allow: None,
            readonly: None,
            deny: None,
            base: None,
            require_summary: None,
            reviewers: None,
            mode: None,
            writable: None,
            network: None,
        }
    }

    /// The rule-specific keys this gate sets, to refuse the ones its rule does not take.
    pub fn rule_keys(&self) -> Vec<&'static str> {
        // Derived from the type itself: a key added to a rule is found here without a list.
        let Ok(serde_json::Value::Object(set)) = serde_json::to_value(self) else {
            return Vec::new();
        };
        let mut keys: Vec<&'static str> = Vec::new();
        for &kind in RuleKind::ALL {
            for key in crate::rules::Rule::keys(kind) {
                if !keys.contains(key) && set.get(*key).is_some_and(|value| !value.is_null()) {
                    keys.push(key);
                }
            }
        }
        keys
    }
}

/// `on_pass` / `on_fail` as written; resolved against the gate names after parsing.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(transparent)]
pub struct RouteText(pub String);

impl JsonSchema for RouteText {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Route".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "CONTINUE (the next gate), BLOCK (stop: FAIL), PASS (stop: PASS), STOP (stop: BLOCKED, a person decides), or the name of a gate to jump to.",
            "anyOf": [
                {"enum": ["CONTINUE", "BLOCK", "PASS", "STOP"]},
                {"type": "string", "pattern": "^[A-Za-z0-9._-]+$"}
            ]
        })
    }
}

/// A command: an argv list, or a string split the way a shell would split it (no shell runs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Argv(pub Vec<String>);

impl JsonSchema for Argv {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Command".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A command: a list of arguments such as [\"cargo\", \"test\"], or a string such as `cargo test --quiet`, split like a shell would (no shell runs).",
            "anyOf": [
                {"type": "string", "pattern": "\\S"},
                {"type": "array", "items": {"type": "string"}, "minItems": 1}
            ]
        })
    }
}

impl<'de> Deserialize<'de> for Argv {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ArgvVisitor)
    }
}

/// The first shell operator, redirection, substitution or variable outside quotes in a
/// command string (`&&`, `|`, `;`, `>`, `$HOME`, `$(…)`, a backquote), as a shell reads quotes
/// and backslashes; `None` when it is plain words.
fn shell_syntax(text: &str) -> Option<String> {
    let mut chars = text.char_indices().peekable();
    let mut quote: Option<char> = None;
    while let Some((at, c)) = chars.next() {
        match (quote, c) {
            (Some('\''), '\'') => quote = None,
            (Some('\''), _) => {}
            (Some('"'), '"') => quote = None,
            (Some('"') | None, '\\') => {
                chars.next();
            }
            (Some('"'), '$' | '`') => return Some(operator(text, at)),
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '|' | '&' | ';' | '<' | '>' | '$' | '`' | '(' | ')') => {
                return Some(operator(text, at));
            }
            (None, _) => {}
        }
    }
    None
}

/// The operator starting at byte `at`: its run of operator characters, or `$` and the name or
/// bracket after it.
fn operator(text: &str, at: usize) -> String {
    let rest = &text[at..];
    let len = if rest.starts_with("$(") || rest.starts_with("${") {
        2
    } else if let Some(name) = rest.strip_prefix('$') {
        1 + name
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .map(char::len_utf8)
            .sum::<usize>()
    } else {
        rest.chars()
            .take_while(|c| matches!(c, '|' | '&' | ';' | '<' | '>'))
            .map(char::len_utf8)
            .sum::<usize>()
            .max(1)
    };
    rest[..len.min(rest.len())].to_owned()
}

struct ArgvVisitor;

impl<'de> Visitor<'de> for ArgvVisitor {
    type Value = Argv;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a command: a string such as `cargo test --quiet`, or a list such as [\"cargo\", \"test\"]")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Argv, E> {
        // No shell runs the string: `&&`, a pipe or `$X` would reach the program as words and
        // the gate fail on the project's account, so they are refused where they are written.
        if let Some(syntax) = shell_syntax(text) {
            return Err(E::custom(format!(
                "`{syntax}` in `{text}` is shell syntax, and no shell runs a `run:` string (it is split into words, and `{syntax}` would reach the program as one); write `run: [sh, -c, {}]` to run it in a shell, or one gate per command",
                serde_json::Value::String(text.to_owned())
            )));
        }
        let words = shell_words::split(text).map_err(|err| {
            E::custom(format!(
                "cannot split `{text}` into words ({err}); close the quote, or write the command as a list"
            ))
        })?;
        non_empty(words)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Argv, A::Error> {
        let mut words = Vec::new();
        while let Some(word) = seq.next_element::<String>()? {
            words.push(word);
        }
        non_empty(words)
    }
}

fn non_empty<E: de::Error>(words: Vec<String>) -> Result<Argv, E> {
    match words.first() {
        Some(program) if !program.is_empty() => Ok(Argv(words)),
        _ => Err(E::custom("the command is empty; name the program to run")),
    }
}

// The keys a rule owns, as written: defined here so a gate as written depends on no rule, and
// each rule gives its own the behaviour it needs (their impls live with the rule).

/// One thing whose presence lets the gate run, as the rules file writes it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PresenceSpec {
    /// A glob of files in the task directory, such as `ruff.toml` or `.eslintrc*`.
    pub file: Pattern,
    /// A regular expression one of those files must contain (`^` and `$` match at each
    /// line), such as `^\[flake8\]` for setup.cfg. A file past 1 MiB is not read, and counts
    /// as containing it.
    pub contains: Option<String>,
    /// A key one of those files must have, read as JSON (`.json`) or TOML (`.toml`), its
    /// tables joined with `.`: `scripts.test` in package.json, `tool.ruff` in pyproject.toml
    /// (however the TOML writes it: `[tool.ruff.lint]`, dotted keys, quotes). A file that is
    /// neither, past 1 MiB, or that does not parse counts as having it.
    pub key: Option<String>,
}

/// A pattern as the rules file writes it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContentPattern {
    /// A regular expression (Rust `regex` syntax: no look-around or back-references, so
    /// matching is linear). `(?i)` ignores case; `^` and `$` match at each line.
    pub pattern: String,
    /// Why, for the worker: shown with each finding (default: the pattern).
    pub message: Option<String>,
}

/// One reviewer of several.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewerSpec {
    /// The reviewer's name in the verdict (its issues are labelled with it) and the review
    /// state (default: its program's file name).
    #[schemars(regex(pattern = r"^[A-Za-z0-9._-]+$"))]
    pub name: Option<String>,
    /// The reviewer, as `run:` is written for one: it reads the context on stdin and prints
    /// APPROVED or REJECTED, then its issues.
    pub run: Argv,
    /// Environment variables added for this reviewer (over the gate's `env:`).
    pub env: Option<BTreeMap<String, String>>,
}

/// How several reviewers decide.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Every reviewer must approve (they run at once); one that cannot answer makes the gate
    /// ERROR.
    #[default]
    All,
    /// More than half of the reviewers must approve (they run at once); a reviewer that cannot
    /// answer casts no vote, and the gate is ERROR only when its vote could have made the
    /// majority.
    Majority,
    /// Two reviewers, one after the other: the second reads the first's answer with the
    /// context, says whether each issue holds (and adds its own), and its verdict is the gate's.
    Critique,
}

/// `network:` as written: the TCP ports a reviewer may connect to, or any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Network {
    Any,
    Ports(Vec<u16>),
}

/// A JSON Schema draft, as `draft:` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Draft {
    Draft4,
    Draft6,
    Draft7,
    Draft201909,
    Draft202012,
}
