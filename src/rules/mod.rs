//! The rules a gate can run. Each rule lives in its own file with the same small shape: it reads
//! its keys from the gate's spec (`from_spec`), and `run` looks at the task and returns an
//! [`Outcome`]. Rules never write files or print; adding a rule is one file and one line in
//! [`Rule::from_spec`].

pub mod command;
pub mod dependencies;
pub mod exists;
pub mod findings;
mod git;
#[doc(hidden)]
pub use git::read_listings as read_git_listings;
pub mod review;
pub mod schema;
pub mod scope;
pub mod spec;
pub mod status;
pub mod test_names;

use std::path::Path;
use std::time::Duration;

use crate::rules::spec::{GateSpec, RuleKind};
use crate::task::Task;
use crate::verdict::{Finding, GateOutcome};

/// Most findings one gate keeps; beyond this a verdict would stop being readable.
pub const MAX_FINDINGS: usize = 200;

/// What a rule needs to know about the run it is part of.
pub struct Context<'a> {
    pub task: &'a Task,
    pub gate: &'a str,
    /// The time this gate may take: its own timeout, cut to what is left of the run's budget.
    pub timeout: Duration,
    /// The rules file's state directory (baselines live there).
    pub state_dir: &'a Path,
    /// Set by a supervisor (the watcher) that may stop the run.
    pub cancel: Option<&'a crate::process::Cancel>,
}

/// The result of running a rule once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub outcome: GateOutcome,
    pub summary: String,
    pub findings: Vec<Finding>,
    pub exit_code: Option<i32>,
    pub output_tail: Option<String>,
    /// Set when the worker declared itself blocked: the run ends BLOCKED with this reason.
    pub blocked: Option<String>,
}

impl Outcome {
    fn new(outcome: GateOutcome, summary: impl Into<String>) -> Self {
        Outcome {
            outcome,
            summary: summary.into(),
            findings: Vec::new(),
            exit_code: None,
            output_tail: None,
            blocked: None,
        }
    }

    pub fn pass(summary: impl Into<String>) -> Self {
        Outcome::new(GateOutcome::Pass, summary)
    }

    pub fn fail(summary: impl Into<String>) -> Self {
        Outcome::new(GateOutcome::Fail, summary)
    }

    /// The validator could not judge (missing schema, command not found): not the worker's fault.
    pub fn error(summary: impl Into<String>) -> Self {
        Outcome::new(GateOutcome::Error, summary)
    }

    /// Fails if there are findings, passes with `ok` otherwise.
    pub fn from_findings(
        mut findings: Vec<Finding>,
        ok: &str,
        failed: impl FnOnce(usize) -> String,
    ) -> Self {
        if findings.is_empty() {
            return Outcome::pass(ok);
        }
        let count = findings.len();
        let summary = if count == 1 {
            findings[0].to_string()
        } else {
            failed(count)
        };
        findings.truncate(MAX_FINDINGS);
        Outcome {
            findings,
            ..Outcome::fail(summary)
        }
    }
}

/// A rule's problem with its keys, reported at the key's position in the rules file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError {
    pub key: &'static str,
    pub message: String,
    pub help: String,
}

impl KeyError {
    pub fn new(key: &'static str, message: impl Into<String>, help: impl Into<String>) -> Self {
        KeyError {
            key,
            message: message.into(),
            help: help.into(),
        }
    }

    pub fn missing(key: &'static str, rule: RuleKind, example: &str) -> Self {
        KeyError::new(
            "rule",
            format!("rule `{rule}` needs `{key}:`"),
            format!("add it, for example `{key}: {example}`"),
        )
    }
}

/// What the rules file, its loader, its schema and the gate graph know of a rule, declared in
/// the rule's own file (`ABOUT`) and found through [`Rule::about`]: nothing else lists a rule's
/// keys or its needs.
#[derive(Debug, Clone, Copy)]
pub struct About {
    /// The rule-specific keys it takes.
    pub keys: &'static [&'static str],
    pub required: Required,
    /// Whether `inputs:` may skip it: not for a rule that judges more than files.
    pub cacheable: bool,
    /// Whether the gate graph shows its timeout (the lint and test commands).
    pub shows_timeout: bool,
}

/// The keys a rule cannot go without, as its `from_spec` checks them.
#[derive(Debug, Clone, Copy)]
pub enum Required {
    None,
    /// Each of these.
    All(&'static [&'static str]),
    /// At least one of these.
    AnyOf(&'static [&'static str]),
}

/// A gate's rule with its keys read and checked.
#[derive(Debug, Clone)]
pub enum Rule {
    Exists(exists::Exists),
    Lint(command::Command),
    Test(command::Command),
    Schema(schema::Schema),
    FileScope(scope::FileScope),
    Status(status::Status),
    Dependencies(dependencies::Dependencies),
    Review(review::Review),
}

impl Rule {
    /// The registry: each rule's declaration.
    pub fn about(kind: RuleKind) -> &'static About {
        match kind {
            RuleKind::Exists => &exists::ABOUT,
            RuleKind::Lint => &command::LINT,
            RuleKind::Test => &command::TEST,
            RuleKind::Schema => &schema::ABOUT,
            RuleKind::FileScope => &scope::ABOUT,
            RuleKind::Status => &status::ABOUT,
            RuleKind::Review => &review::ABOUT,
            RuleKind::Dependencies => &dependencies::ABOUT,
        }
    }

    /// The rule-specific keys each rule takes.
    pub fn keys(kind: RuleKind) -> &'static [&'static str] {
        Rule::about(kind).keys
    }

    /// Reads the rule's keys from a gate. `rules_dir` anchors paths written in the rules file.
    pub fn from_spec(spec: &GateSpec, rules_dir: &Path) -> Result<Rule, KeyError> {
        let allowed = Rule::keys(spec.rule);
        if let Some(stray) = spec
            .rule_keys()
            .into_iter()
            .find(|key| !allowed.contains(key))
        {
            return Err(KeyError::new(
                stray,
                format!("`{stray}` is not a key of rule `{}`", spec.rule),
                format!(
                    "remove it; rule `{}` takes: {}",
                    spec.rule,
                    if allowed.is_empty() {
                        "no keys of its own".into()
                    } else {
                        allowed.join(", ")
                    }
                ),
            ));
        }
        Ok(match spec.rule {
            RuleKind::Exists => Rule::Exists(exists::Exists::from_spec(spec)?),
            RuleKind::Lint => Rule::Lint(command::Command::from_spec(spec)?),
            RuleKind::Test => Rule::Test(command::Command::from_spec(spec)?),
            RuleKind::Schema => Rule::Schema(schema::Schema::from_spec(spec, rules_dir)?),
            RuleKind::FileScope => Rule::FileScope(scope::FileScope::from_spec(spec)?),
            RuleKind::Status => Rule::Status(status::Status::from_spec(spec)),
            RuleKind::Dependencies => {
                return Err(KeyError::new(
                    "rule",
                    "rule `dependencies` comes from a contract's `dependencies_completed`",
                    "list the tasks under `dependencies_completed:` in contracts/<task>.yaml",
                ));
            }
            RuleKind::Review => Rule::Review(review::Review::from_spec(spec, rules_dir)?),
        })
    }

    pub fn kind(&self) -> RuleKind {
        match self {
            Rule::Exists(_) => RuleKind::Exists,
            Rule::Lint(_) => RuleKind::Lint,
            Rule::Test(_) => RuleKind::Test,
            Rule::Schema(_) => RuleKind::Schema,
            Rule::FileScope(_) => RuleKind::FileScope,
            Rule::Status(_) => RuleKind::Status,
            Rule::Dependencies(_) => RuleKind::Dependencies,
            Rule::Review(_) => RuleKind::Review,
        }
    }

    /// Problems visible without running anything (a schema that does not compile, a program
    /// that is not on PATH), for `validator rules check`.
    pub fn preflight(&self) -> Option<String> {
        match self {
            Rule::Lint(rule) | Rule::Test(rule) => rule.preflight(),
            Rule::Schema(rule) => rule.preflight(),
            Rule::Review(rule) => rule.preflight(),
            Rule::Exists(_) | Rule::FileScope(_) | Rule::Status(_) | Rule::Dependencies(_) => None,
        }
    }

    pub fn run(&self, ctx: &Context<'_>) -> Outcome {
        match self {
            Rule::Exists(rule) => rule.run(ctx),
            Rule::Lint(rule) => rule.run(ctx, command::Parse::Findings),
            Rule::Test(rule) => rule.run(ctx, command::Parse::TestNames),
            Rule::Schema(rule) => rule.run(ctx),
            Rule::FileScope(rule) => rule.run(ctx),
            Rule::Status(rule) => rule.run(ctx),
            Rule::Review(rule) => rule.run(ctx),
            Rule::Dependencies(rule) => rule.run(ctx),
        }
    }
}

impl Rule {
    /// Files outside the task that decide the outcome as much as the gate's keys (a schema):
    /// part of the gate's cache key.
    pub fn definition_files(&self) -> Vec<&Path> {
        match self {
            Rule::Schema(rule) => vec![rule.schema_path()],
            _ => Vec::new(),
        }
    }

    /// The program a command gate runs over `task`, as it is started (a bare name is looked up
    /// on PATH), whose identity is part of its cache key.
    pub fn program(&self, task: &Task) -> Option<std::path::PathBuf> {
        match self {
            Rule::Lint(rule) | Rule::Test(rule) => rule.program(task),
            Rule::Review(rule) => Some(rule.program().to_path_buf()),
            _ => None,
        }
    }
}
