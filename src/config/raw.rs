//! The rules file as serde reads it: every key the format knows, nothing else
//! (`deny_unknown_fields` everywhere), each value checked where its position is still known.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::de::{self, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use crate::globs::Pattern;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRules {
    pub version: u32,
    pub staging: Option<PathBuf>,
    pub verdicts: Option<PathBuf>,
    pub state: Option<PathBuf>,
    pub contracts: Option<PathBuf>,
    #[serde(default)]
    pub defaults: RawDefaults,
    pub signing_key_file: Option<PathBuf>,
    pub pipelines: Vec<RawPipeline>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDefaults {
    #[serde(default, deserialize_with = "super::duration::deserialize")]
    pub timeout: Option<Duration>,
    pub max_attempts: Option<u32>,
    pub strikes: Option<u32>,
    #[serde(default, deserialize_with = "super::duration::deserialize")]
    pub budget: Option<Duration>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPipeline {
    pub name: String,
    pub tasks: Option<Vec<TaskGlob>>,
    pub gates: Vec<GateSpec>,
}

/// A task-name glob (`svc-*`); matched against the name, not a path.
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub struct TaskGlob(pub String);

/// The rule a gate runs, as named in the rules file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RuleKind {
    Exists,
    Lint,
    Test,
    Schema,
    Review,
    FileScope,
    Status,
    /// A contract's `dependencies_completed`; added by the contract, never written in a rules file.
    #[serde(skip_deserializing)]
    Dependencies,
}

impl RuleKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RuleKind::Exists => "exists",
            RuleKind::Lint => "lint",
            RuleKind::Test => "test",
            RuleKind::Schema => "schema",
            RuleKind::Review => "review",
            RuleKind::FileScope => "file-scope",
            RuleKind::Status => "status",
            RuleKind::Dependencies => "dependencies",
        }
    }
}

impl fmt::Display for RuleKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One gate exactly as written. Each rule reads the keys it owns from here
/// (`rules::*::from_spec`) and the loader refuses keys that belong to other rules.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GateSpec {
    pub name: String,
    pub rule: RuleKind,
    pub on_pass: Option<RouteText>,
    pub on_fail: Option<RouteText>,
    #[serde(default, deserialize_with = "super::duration::deserialize")]
    pub timeout: Option<Duration>,
    pub inputs: Option<Vec<Pattern>>,
    // exists
    pub paths: Option<Vec<Pattern>>,
    pub forbid: Option<Vec<Pattern>>,
    pub non_empty: Option<bool>,
    pub min_count: Option<u32>,
    // lint, test, review
    pub run: Option<Argv>,
    pub files: Option<Vec<Pattern>>,
    pub env: Option<BTreeMap<String, String>>,
    pub cwd: Option<String>,
    pub junit: Option<String>,
    // schema
    pub schema: Option<PathBuf>,
    pub max_bytes: Option<u64>,
    // file-scope
    pub allow: Option<Vec<Pattern>>,
    pub readonly: Option<Vec<Pattern>>,
    pub deny: Option<Vec<Pattern>>,
    pub base: Option<String>,
    // status
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
            paths: None,
            forbid: None,
            non_empty: None,
            min_count: None,
            run: None,
            files: None,
            env: None,
            cwd: None,
            junit: None,
            schema: None,
            max_bytes: None,
            allow: None,
            readonly: None,
            deny: None,
            base: None,
            require_summary: None,
        }
    }

    /// The rule-specific keys this gate sets, to refuse the ones its rule does not take.
    pub fn rule_keys(&self) -> Vec<&'static str> {
        let set = [
            ("paths", self.paths.is_some()),
            ("forbid", self.forbid.is_some()),
            ("non_empty", self.non_empty.is_some()),
            ("min_count", self.min_count.is_some()),
            ("run", self.run.is_some()),
            ("files", self.files.is_some()),
            ("env", self.env.is_some()),
            ("cwd", self.cwd.is_some()),
            ("junit", self.junit.is_some()),
            ("schema", self.schema.is_some()),
            ("max_bytes", self.max_bytes.is_some()),
            ("allow", self.allow.is_some()),
            ("readonly", self.readonly.is_some()),
            ("deny", self.deny.is_some()),
            ("base", self.base.is_some()),
            ("require_summary", self.require_summary.is_some()),
        ];
        set.into_iter()
            .filter(|(_, on)| *on)
            .map(|(key, _)| key)
            .collect()
    }
}

/// `on_pass` / `on_fail` as written; resolved against the gate names after parsing.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(transparent)]
pub struct RouteText(pub String);

/// A command: an argv list, or a string split the way a shell would split it (no shell runs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Argv(pub Vec<String>);

impl<'de> Deserialize<'de> for Argv {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ArgvVisitor)
    }
}

struct ArgvVisitor;

impl<'de> Visitor<'de> for ArgvVisitor {
    type Value = Argv;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a command: a string such as `cargo test --quiet`, or a list such as [\"cargo\", \"test\"]")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Argv, E> {
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
