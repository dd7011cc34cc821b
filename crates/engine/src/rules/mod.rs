//! The rules a gate can run. Each rule lives in its own file with the same small shape: it reads
//! its keys from the gate's spec (`from_spec`), and `run` looks at the task and returns an
//! [`Outcome`]. Rules never write files or print.
//!
//! Adding a rule is its file (a type implementing [`RuleDef`]: its `About`, `from_spec`, `run`)
//! and one line in the `registry!` below, which writes `RuleKind`, `Rule` and every match over
//! them. A rule that takes a key no rule takes yet also declares it as a field of
//! [`spec::GateSpec`], the one type the loader, the positions of its errors and the JSON Schema
//! come from; which rule owns the key is said only in the rule's `About`.
//!
//! A rule's file is named as its `rule:` kind (`file-scope` is [`file_scope`], which also lists
//! what the worker changed for every rule that asks); `lint` and `test` are [`command::lint`]
//! and [`command::test`], beside the command both run ([`command`]). Besides the rules, only
//! what every gate has: [`spec`] (a gate as written) and [`only_if`] (any gate's `only_if:`).

pub mod co_change;
pub mod command;
pub mod content;
pub mod dependencies;
pub mod exists;
pub mod file_scope;
pub mod only_if;
pub mod review;
pub mod schema;
pub mod spec;
pub mod status;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::rules::spec::GateSpec;
use crate::task::Task;
pub use crate::taskdir::{Deadline, Stopped};
use crate::verdict::{Finding, GateOutcome};

pub use validator_reading::MAX_FINDINGS;

/// What a rule needs to know about the run it is part of.
pub struct Context<'a> {
    pub task: &'a Task,
    pub gate: &'a str,
    /// The time this gate may take: its own timeout, cut to what is left of the run's budget.
    pub timeout: Duration,
    /// The rules file's state directory (baselines live there).
    pub state_dir: &'a Path,
    /// Set by a supervisor (the watcher) that may stop the run.
    pub cancel: Option<&'a validator_process::Cancel>,
    /// A person asked for every file (`check --all-files`): `changed_only` reads all of them.
    pub all_files: bool,
    /// The user's global excludes, in a `validator check` that is the user's own: they hide
    /// files from the change set as the committed `.gitignore` files do.
    pub user_excludes: Option<&'a crate::git::UserExcludes>,
    /// The change sets this run has listed, shared by its gates.
    pub listed: &'a file_scope::Listed,
    /// When the gate started: its deadline is `timeout` from then, one clock for the cache
    /// key taken before it, the rule's own reads and the programs it starts.
    pub started: Instant,
    /// The tests this gate named as failed in the task's last run (a `test` gate with
    /// `select:` runs them first).
    pub failed_before: Option<&'a [String]>,
}

impl<'a> Context<'a> {
    /// When the gate must stop: `timeout` after it started, or sooner if its supervisor
    /// cancels. Every rule that walks or reads the task asks it between files and chunks.
    pub fn deadline(&self) -> Deadline<'a> {
        Deadline::new(self.started + self.timeout, self.cancel)
    }

    /// The gate's outcome, unless its deadline passed (or its run was cancelled) before the
    /// rule reached it: then a pass is a timeout, since what the rule judged may not be all it
    /// had to, and so is an error, since one would let a hook's agent stop on a timeout. A
    /// failure stands: what it found is there.
    /// The task's files, listed by the gate's deadline; past it, the timeout outcome to return.
    pub fn list_in_time(&self) -> Result<crate::taskdir::Listing, Outcome> {
        crate::taskdir::list_by(self.task, &self.deadline()).map_err(|stopped| {
            Outcome::stopped(self, stopped, "listing the task's files", Vec::new())
        })
    }

    pub fn in_time(&self, outcome: Outcome) -> Outcome {
        match (self.deadline().check(), outcome.outcome) {
            (Err(stopped), GateOutcome::Pass | GateOutcome::Error) => Outcome::stopped(
                self,
                stopped,
                "its deadline passed before it was done",
                Vec::new(),
            ),
            _ => outcome,
        }
    }
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
    pub blocked: Option<Box<str>>,
    /// What the gate counted as the worker's changes, for the verdict.
    pub changed_files: Option<Box<crate::verdict::ChangedFiles>>,
    /// The failed tests a `test` gate's runner named (boxed: most outcomes have none, and an
    /// outcome is passed by value).
    pub failed_tests: Option<Box<Vec<String>>>,
    /// Milliseconds of work the gate's answer rests on, done for it before it started (the
    /// run lists the worker's changes once, at its start): counted in the gate's time, or a
    /// scope gate that walked thousands of files would say 0ms.
    pub spent_before_ms: u32,
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
            changed_files: None,
            failed_tests: None,
            spent_before_ms: 0,
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

    /// A gate its deadline or its supervisor stopped before it finished, as a command gate's
    /// timeout reads: a failure (never a pass on the part it got through), with what it had
    /// found by then; cancelled, an error, as a cancelled command is. `progress` says how far
    /// it got, for whoever sets the timeout.
    pub fn stopped(
        ctx: &Context<'_>,
        stopped: Stopped,
        progress: &str,
        mut findings: Vec<Finding>,
    ) -> Self {
        findings.truncate(MAX_FINDINGS);
        let outcome = match stopped {
            Stopped::TimedOut => Outcome::fail(format!(
                "timed out after {} ({progress}); what it did not get to cannot pass",
                crate::duration::format(ctx.timeout)
            )),
            Stopped::Cancelled => Outcome::error("cancelled: validator is shutting down"),
        };
        Outcome {
            findings,
            ..outcome
        }
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
    /// Whether it starts a program (a command, a reviewer), which may change the task's files:
    /// what the worker changed is listed anew for the gates after it, and a gate of its group
    /// written after it that reads the task itself waits for it to end.
    pub starts_programs: bool,
    /// Whether what it starts is the worker's own code (tests) or an agent (a reviewer), which
    /// may write anything at any time: every gate of its group written after it waits for it
    /// to end. (A linter is the rules author's tool, trusted to leave the files alone.)
    pub runs_workers_code: bool,
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

/// What a rule's own file gives the registry: its declaration, how it reads its keys, and how
/// it judges. Only `ABOUT`, `from_spec` and `run` are needed; the rest say "nothing".
pub trait RuleDef: Sized {
    const ABOUT: About;

    /// Reads the rule's keys from a gate (the loader has already refused keys of other rules).
    /// `rules_dir` anchors paths written in the rules file.
    fn from_spec(spec: &GateSpec, rules_dir: &Path) -> Result<Self, KeyError>;

    fn run(&self, ctx: &Context<'_>) -> Outcome;

    /// Problems visible without running anything (a schema that does not compile, a program
    /// that is not on PATH), for `validator rules check`.
    fn preflight(&self) -> Option<String> {
        None
    }

    /// The program a command gate runs over `task`, as it is started (a bare name is looked up
    /// on PATH), whose identity is part of its cache key.
    fn program(&self, _task: &Task) -> Option<PathBuf> {
        None
    }

    /// Files outside the task that decide the outcome as much as the gate's keys (a schema):
    /// part of the gate's cache key.
    fn definition_files(&self) -> Vec<&Path> {
        Vec::new()
    }

    /// The command that fixes what the rule finds (`fix:`), as written.
    fn fix(&self) -> Option<&[String]> {
        None
    }

    /// The git revision the rule counts the worker's changes from (`base:`), if it asks what
    /// changed: the run pins it before its first gate.
    fn base(&self) -> Option<&str> {
        None
    }
}

/// Writes `RuleKind` (the names a rules file may give `rule:`) and `Rule` (a gate's rule with
/// its keys read) from one list, with every match over them: a rule is registered by one line.
macro_rules! registry {
    ($( $(#[$attr:meta])* $kind:ident = $name:literal => $rule:ty, )*) => {
        /// The rule a gate runs.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize, JsonSchema)]
        pub enum RuleKind {
            $( $(#[$attr])* #[serde(rename = $name)] $kind, )*
        }

        impl RuleKind {
            /// Every rule, in the order the registry lists them.
            pub const ALL: &'static [RuleKind] = &[$(RuleKind::$kind),*];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(RuleKind::$kind => $name,)*
                }
            }
        }

        /// A gate's rule with its keys read and checked.
        #[derive(Debug, Clone)]
        pub enum Rule {
            $( $kind($rule), )*
        }

        impl Rule {
            /// The registry: each rule's declaration, from its own file.
            pub fn about(kind: RuleKind) -> &'static About {
                match kind {
                    $(RuleKind::$kind => &<$rule as RuleDef>::ABOUT,)*
                }
            }

            pub fn kind(&self) -> RuleKind {
                match self {
                    $(Rule::$kind(_) => RuleKind::$kind,)*
                }
            }

            fn read(spec: &GateSpec, rules_dir: &Path) -> Result<Rule, KeyError> {
                Ok(match spec.rule {
                    $(RuleKind::$kind => Rule::$kind(<$rule as RuleDef>::from_spec(spec, rules_dir)?),)*
                })
            }

            pub fn run(&self, ctx: &Context<'_>) -> Outcome {
                match self {
                    $(Rule::$kind(rule) => rule.run(ctx),)*
                }
            }

            /// Problems visible without running anything, for `validator rules check`.
            pub fn preflight(&self) -> Option<String> {
                match self {
                    $(Rule::$kind(rule) => rule.preflight(),)*
                }
            }

            /// The program a command gate runs over `task`, as it is started: part of its
            /// cache key.
            pub fn program(&self, task: &Task) -> Option<PathBuf> {
                match self {
                    $(Rule::$kind(rule) => rule.program(task),)*
                }
            }

            /// Files outside the task that decide the outcome (a schema): part of the gate's
            /// cache key.
            pub fn definition_files(&self) -> Vec<&Path> {
                match self {
                    $(Rule::$kind(rule) => rule.definition_files(),)*
                }
            }

            /// The command that fixes what the gate finds (`fix:`).
            pub fn fix(&self) -> Option<&[String]> {
                match self {
                    $(Rule::$kind(rule) => rule.fix(),)*
                }
            }

            /// The revision the gate counts changes from, if it asks what changed.
            pub fn base(&self) -> Option<&str> {
                match self {
                    $(Rule::$kind(rule) => rule.base(),)*
                }
            }
        }
    };
}

// The registry. A rule's doc comment is what an editor shows for its name in `rule:`.
registry! {
    /// Every `paths` glob matches at least `min_count` files (non-empty ones with `non_empty`)
    /// and no `forbid` glob matches.
    Exists = "exists" => exists::Exists,
    /// `run` exits 0; `file:line[:col]: message` lines and rustc-style `--> file:line:col`
    /// blocks become findings.
    Lint = "lint" => command::lint::Lint,
    /// `run` exits 0; failed test names are read from cargo test, nextest, pytest, unittest,
    /// go test and a `junit` report.
    Test = "test" => command::test::Test,
    /// Every JSON/YAML file matching `files` validates against the JSON Schema `schema`.
    Schema = "schema" => schema::Schema,
    /// A reviewer program reads the task's context on stdin and answers APPROVED or REJECTED
    /// with `- file:line: issue` lines.
    Review = "review" => review::Review,
    /// Every changed file is inside `allow` (if given) and in neither `readonly` nor `deny`.
    FileScope = "file-scope" => file_scope::FileScope,
    /// The done signal says `STATUS: OK`; `STATUS: BLOCKED` ends the run BLOCKED with the
    /// worker's reason.
    Status = "status" => status::Status,
    /// No file matching `files` contains a `ban` pattern, and each contains every `require`
    /// pattern (regular expressions, linear time).
    Content = "content" => content::Content,
    /// When files matching `when` changed, files matching `then` changed too, unless the worker
    /// said why not after `skip_marker`.
    CoChange = "co-change" => co_change::CoChange,
    /// A contract's `dependencies_completed`; added by the contract, never written in a rules file.
    #[serde(skip_deserializing)]
    Dependencies = "dependencies" => dependencies::Dependencies,
}

impl fmt::Display for RuleKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Rule {
    /// Runs a command gate's `fix:` over `task` (`validator check --fix`); `None` for a gate
    /// without one.
    pub fn run_fix(
        &self,
        task: &Task,
        timeout: Duration,
        cancel: Option<&validator_process::Cancel>,
    ) -> Option<Result<String, String>> {
        match self {
            Rule::Lint(command::lint::Lint(rule)) | Rule::Test(command::test::Test(rule)) => {
                rule.run_fix(task, timeout, cancel)
            }
            _ => None,
        }
    }

    /// The rule-specific keys each rule takes.
    pub fn keys(kind: RuleKind) -> &'static [&'static str] {
        Rule::about(kind).keys
    }

    /// Reads the rule's keys from a gate, refusing keys that belong to other rules.
    /// `rules_dir` anchors paths written in the rules file.
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
        Rule::read(spec, rules_dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The README's table of rules lists, for each rule a rules file can name, exactly the keys
    /// its declaration says it takes: the tour stays true as rules and keys are added.
    #[test]
    fn the_readme_lists_each_rules_keys() {
        let readme = include_str!("../../../../README.md");
        for &kind in RuleKind::ALL {
            if kind == RuleKind::Dependencies {
                continue;
            }
            let row = readme
                .lines()
                .find(|line| line.starts_with(&format!("| `{kind}` |")))
                .unwrap_or_else(|| panic!("README.md's rules table has no row for `{kind}`"));
            let keys_cell = row.trim_end_matches('|').rsplit('|').next().unwrap_or("");
            let listed: Vec<&str> = keys_cell
                .split('`')
                .skip(1)
                .step_by(2)
                .filter(|word| word.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
                .collect();
            assert_eq!(listed, Rule::keys(kind), "README.md's row for `{kind}`");
        }
    }
}
