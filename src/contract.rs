//! Handoff contracts (`contracts/<task>.yaml`, docs/rules-file.md): what a coordinator promised a
//! worker and expects back. Loading is as strict as the rules file (unknown keys, bad globs and
//! commands are errors with line and column); `Contract::expand` turns the checkable success
//! criteria into ordinary gates, and the rest stay `unchecked` for a person to see.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::config::{Gate, Pipeline, Route, Rules, error_at, parse_yaml};
use crate::error::{ConfigError, Error};
use crate::globs::Pattern;
use crate::rules::spec::{Argv, GateSpec, RuleKind};
use crate::rules::{Rule, dependencies::Dependencies, scope::FileScope};
use crate::task;
use crate::yaml::locate::Step;

/// Largest contract read: a contract is a page, not a data set.
const MAX_CONTRACT_BYTES: u64 = 1024 * 1024;

/// A contract as written; every key the format knows, nothing else.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawContract {
    task_id: String,
    #[serde(default)]
    files_owned: Vec<Pattern>,
    #[serde(default)]
    files_readonly: Vec<Pattern>,
    #[serde(default)]
    dependencies_completed: Vec<String>,
    #[serde(default)]
    success_criteria: Vec<String>,
    context: Option<String>,
}

/// A checked contract.
#[derive(Debug, Clone)]
pub struct Contract {
    pub path: PathBuf,
    /// The file as written, for reviewers and for people reading the verdict.
    pub source: String,
    pub task_id: String,
    pub files_owned: Vec<Pattern>,
    pub files_readonly: Vec<Pattern>,
    pub dependencies_completed: Vec<String>,
    pub criteria: Vec<Criterion>,
    pub context: Option<String>,
}

/// One success criterion: a gate when a machine can check it, else text a person must verify.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Criterion {
    Check { text: String, kind: CheckKind },
    Unchecked(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckKind {
    /// `Tests pass: CMD`
    Tests(Argv),
    /// `Type check passes: CMD` or `Lint passes: CMD`
    Lint(Argv),
    /// `File exists: PATH`
    FileExists(Pattern),
}

/// The criterion prefixes a machine can check, matched case-insensitively.
const PREFIXES: [&str; 4] = [
    "tests pass:",
    "type check passes:",
    "lint passes:",
    "file exists:",
];

impl Contract {
    /// The contract for `task` in `dir`, if one was written. A contract that exists but cannot
    /// be read or checked is an error: a broken contract must never pass silently.
    pub fn find(dir: &Path, task: &str) -> Result<Option<Contract>, Error> {
        let path = dir.join(format!("{task}.yaml"));
        let bytes = match crate::files::read(&path, MAX_CONTRACT_BYTES, crate::files::Links::Follow)
        {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(Error::Read { path, source }),
        };
        let at_top = |message: String, help: &str| ConfigError {
            file: path.clone(),
            line: None,
            column: None,
            message,
            help: Some(help.into()),
        };
        if bytes.len() as u64 > MAX_CONTRACT_BYTES {
            return Err(at_top(
                format!("the contract is over {MAX_CONTRACT_BYTES} bytes"),
                "keep a contract to the task's scope, criteria and a short context",
            )
            .into());
        }
        let source = String::from_utf8(bytes)
            .map_err(|_| at_top("the contract is not UTF-8 text".into(), "save it as UTF-8"))?;
        Ok(Some(Contract::parse(&path, source, task)?))
    }

    /// Checks contract text; `task` is the task it must be about.
    pub fn parse(path: &Path, source: String, task: &str) -> Result<Contract, ConfigError> {
        let error =
            |at: &[Step], message: String, help: String| error_at(path, &source, at, message, help);
        let raw: RawContract = parse_yaml(path, &source, |_| {
            "a contract has task_id, files_owned, files_readonly, dependencies_completed, success_criteria and context".into()
        })?;
        if raw.task_id != task {
            return Err(error(
                &[Step::Key("task_id")],
                format!(
                    "task_id `{}` does not match the task `{task}` this file is named for",
                    raw.task_id
                ),
                format!(
                    "write `task_id: {task}`, or rename the file to {}.yaml",
                    raw.task_id
                ),
            ));
        }
        for (i, dependency) in raw.dependencies_completed.iter().enumerate() {
            if let Err(err) = task::validate_name(dependency) {
                return Err(error(
                    &[Step::Key("dependencies_completed"), Step::Index(i)],
                    format!("`{dependency}` is not a task name"),
                    err.to_string()
                        .split("help: ")
                        .nth(1)
                        .unwrap_or("name a task")
                        .to_owned(),
                ));
            }
            if dependency == task {
                return Err(error(
                    &[Step::Key("dependencies_completed"), Step::Index(i)],
                    format!("task `{task}` depends on itself"),
                    "remove it: a task cannot wait for its own verdict".into(),
                ));
            }
        }
        let mut criteria = Vec::with_capacity(raw.success_criteria.len());
        for (i, text) in raw.success_criteria.iter().enumerate() {
            let criterion = Criterion::parse(text).map_err(|(message, help)| {
                error(
                    &[Step::Key("success_criteria"), Step::Index(i)],
                    message,
                    help,
                )
            })?;
            criteria.push(criterion);
        }
        Ok(Contract {
            path: path.to_path_buf(),
            task_id: raw.task_id,
            files_owned: raw.files_owned,
            files_readonly: raw.files_readonly,
            dependencies_completed: raw.dependencies_completed,
            criteria,
            context: raw.context,
            source,
        })
    }

    /// The criteria no machine checks, as written.
    /// What the task carries of this contract for its readers.
    pub fn handoff(&self) -> crate::task::Handoff {
        crate::task::Handoff {
            path: self.path.clone(),
            source: self.source.clone(),
            unchecked: self.unchecked(),
            context: self.context.clone(),
        }
    }

    pub fn unchecked(&self) -> Vec<String> {
        self.criteria
            .iter()
            .filter_map(|c| match c {
                Criterion::Unchecked(text) => Some(text.clone()),
                Criterion::Check { .. } => None,
            })
            .collect()
    }

    /// The pipeline this contract asks for, built from `pipeline`:
    /// - `contract.dependencies` first, when the contract names dependencies, so nothing runs
    ///   before the work it builds on is done;
    /// - the pipeline's own gates, as written;
    /// - then `contract.scope` whenever the contract lists files (every changed file must be
    ///   in `files_owned`, none in `files_readonly`), and a `contract.criterion-N` gate per
    ///   checkable criterion. A pipeline gate that routes to PASS goes on to these instead: a
    ///   fast path through the pipeline is not a way around the contract.
    ///
    /// `contract.scope` is its own blocking gate, not a change to the pipeline's `file-scope`
    /// gates: those may be advisory (`on_fail: CONTINUE`) or skipped by routing, and a broad
    /// `allow` there must not widen what the contract grants. A change passes only when both
    /// agree: inside the contract's files and the gate's `allow`, in neither's `readonly`.
    ///
    /// The added gates route as any gate does by default (CONTINUE on pass, BLOCK on fail).
    pub fn expand(
        &self,
        pipeline: &Pipeline,
        rules: &Rules,
        key: &crate::verdict::sign::Signing,
    ) -> Result<Pipeline, String> {
        let gate = |name: &str, rule: Rule, about: Option<String>| Gate {
            name: format!("contract.{name}"),
            rule,
            on_pass: Route::Continue,
            on_fail: Route::Block,
            timeout: None,
            about,
            inputs: None,
            only_if: None,
            group: None,
            definition: String::new(),
        };
        let mut first = Vec::new();
        if !self.dependencies_completed.is_empty() {
            let key = key.clone()?;
            let rule = Rule::Dependencies(Dependencies {
                tasks: self.dependencies_completed.clone(),
                staging: rules.staging.clone(),
                verdicts: rules.verdicts.clone(),
                state: rules.state.clone(),
                key,
            });
            first.push(gate("dependencies", rule, None));
        }
        let mut last = Vec::new();
        let has_lists = !self.files_owned.is_empty() || !self.files_readonly.is_empty();
        if has_lists {
            let rule = Rule::FileScope(FileScope::from_contract(
                &self.files_owned,
                &self.files_readonly,
            ));
            last.push(gate("scope", rule, None));
        }
        for (spec, text) in self.gate_specs() {
            let rule = Rule::from_spec(&spec, &rules.dir)
                .map_err(|err| format!("criterion `{text}`: {}", err.message))?;
            last.push(gate(&spec.name, rule, Some(text)));
        }

        let shift = first.len();
        let after_own = shift + pipeline.gates.len();
        let reroute = |route: Route| match route {
            Route::Goto(index) => Route::Goto(index + shift),
            Route::Pass if !last.is_empty() => Route::Goto(after_own),
            other => other,
        };
        let own = pipeline.gates.iter().map(|own| {
            let mut gate = own.clone();
            gate.on_pass = reroute(own.on_pass);
            gate.on_fail = reroute(own.on_fail);
            gate
        });
        let gates: Vec<Gate> = first.iter().cloned().chain(own).collect();
        let mut expanded = pipeline.clone();
        expanded.gates = gates.into_iter().chain(last).collect();
        Ok(expanded)
    }

    /// A gate spec for each checkable criterion, named `criterion-N` (N counts from 1 in the
    /// contract's list), with the default routing: CONTINUE on pass, BLOCK on fail.
    pub fn gate_specs(&self) -> Vec<(GateSpec, String)> {
        self.criteria
            .iter()
            .enumerate()
            .filter_map(|(i, criterion)| {
                let Criterion::Check { text, kind } = criterion else {
                    return None;
                };
                let name = format!("criterion-{}", i + 1);
                let spec = match kind {
                    CheckKind::Tests(argv) => GateSpec {
                        run: Some(argv.clone()),
                        ..GateSpec::new(name, RuleKind::Test)
                    },
                    CheckKind::Lint(argv) => GateSpec {
                        run: Some(argv.clone()),
                        ..GateSpec::new(name, RuleKind::Lint)
                    },
                    CheckKind::FileExists(path) => GateSpec {
                        paths: Some(vec![path.clone()]),
                        ..GateSpec::new(name, RuleKind::Exists)
                    },
                };
                Some((spec, text.clone()))
            })
            .collect()
    }
}

/// A way a run broke its contract, for the `contract_violation` event a coordinator learns from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Violation {
    /// `scope`, `readonly`, `undeclared change`, `criterion` or `dependency`.
    pub kind: &'static str,
    pub gate: String,
    pub detail: String,
}

impl Violation {
    /// The `contract_violation` event that tells a coordinator of it.
    pub fn event(&self) -> crate::events::Event<'_> {
        crate::events::Event::ContractViolation {
            detail: &self.detail,
            gate: &self.gate,
            kind: self.kind,
        }
    }
}

/// The contract violations a verdict reports (for a task that ran under a contract).
pub fn violations(verdict: &crate::verdict::Verdict) -> Vec<Violation> {
    use crate::verdict::GateOutcome;
    let mut found = Vec::new();
    for gate in &verdict.gates {
        if gate.outcome != GateOutcome::Fail {
            continue;
        }
        let whole = |kind| Violation {
            kind,
            gate: gate.name.clone(),
            detail: gate.summary.clone(),
        };
        if gate.rule == RuleKind::FileScope.as_str() {
            found.extend(gate.findings.iter().filter_map(|finding| {
                Some(Violation {
                    kind: finding.breach?.as_str(),
                    gate: gate.name.clone(),
                    detail: finding.to_string(),
                })
            }));
        } else if gate.rule == RuleKind::Dependencies.as_str() {
            found.push(whole("dependency"));
        } else if gate.name.starts_with("contract.criterion-") {
            found.push(whole("criterion"));
        }
    }
    found
}

impl Criterion {
    fn parse(text: &str) -> Result<Criterion, (String, String)> {
        let lower = text.to_ascii_lowercase();
        let Some(prefix) = PREFIXES.iter().find(|p| lower.starts_with(*p)) else {
            return Ok(Criterion::Unchecked(text.to_owned()));
        };
        // The prefixes are ASCII, so the byte length is the same in `text`.
        let rest = text[prefix.len()..].trim();
        if rest.is_empty() {
            return Err((
                format!("criterion `{text}` names nothing to check"),
                "write what to run or which file must exist after the colon, e.g. `Tests pass: cargo test auth`".into(),
            ));
        }
        let command = || -> Result<Argv, (String, String)> {
            let words = shell_words::split(rest).map_err(|err| {
                (
                    format!("cannot split `{rest}` into words ({err})"),
                    "close the quote; the command runs without a shell".into(),
                )
            })?;
            match words.first() {
                Some(program) if !program.is_empty() => Ok(Argv(words)),
                _ => Err((
                    format!("criterion `{text}` names no program to run"),
                    "write the command after the colon, e.g. `Tests pass: cargo test auth`".into(),
                )),
            }
        };
        let kind = match *prefix {
            "tests pass:" => CheckKind::Tests(command()?),
            "file exists:" => CheckKind::FileExists(
                Pattern::new(rest)
                    .map_err(|why| (why, "write a path relative to the task directory".into()))?,
            ),
            _ => CheckKind::Lint(command()?),
        };
        Ok(Criterion::Check {
            text: text.to_owned(),
            kind,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(source: &str) -> Result<Contract, ConfigError> {
        Contract::parse(Path::new("/c/svc.yaml"), source.into(), "svc")
    }

    #[test]
    fn criteria_are_sorted_into_checks_and_the_rest() {
        let contract = parse(
            "task_id: svc\nsuccess_criteria:\n  - \"Tests pass: cargo test auth\"\n  - \"type check passes: cargo check\"\n  - \"File exists: src/auth.rs\"\n  - \"login returns a token\"\n",
        )
        .unwrap();
        assert_eq!(contract.unchecked(), ["login returns a token"]);
        let specs = contract.gate_specs();
        let names: Vec<_> = specs.iter().map(|(s, _)| s.name.as_str()).collect();
        assert_eq!(names, ["criterion-1", "criterion-2", "criterion-3"]);
        assert_eq!(specs[0].0.rule, RuleKind::Test);
        assert_eq!(
            specs[0].0.run,
            Some(Argv(vec!["cargo".into(), "test".into(), "auth".into()]))
        );
        assert_eq!(specs[1].0.rule, RuleKind::Lint);
        assert_eq!(specs[2].0.rule, RuleKind::Exists);
    }

    #[test]
    fn errors_are_positioned() {
        let err = parse("task_id: svc\nfiles_ownd: [\"src/**\"]\n").unwrap_err();
        assert_eq!(err.line, Some(2));
        assert!(err.message.contains("unknown field `files_ownd`"), "{err}");
        let err = parse("task_id: other\n").unwrap_err();
        assert_eq!((err.line, err.column), (Some(1), Some(10)));
        let err =
            parse("task_id: svc\nsuccess_criteria:\n  - \"Tests pass: 'oops\"\n").unwrap_err();
        assert_eq!(err.line, Some(3));
        let err = parse("task_id: svc\nfiles_owned: [\"../x\"]\n").unwrap_err();
        assert_eq!(err.line, Some(2));
        let err = parse("task_id: svc\ndependencies_completed: [\"svc\"]\n").unwrap_err();
        assert!(err.message.contains("depends on itself"), "{err}");
    }
}
