//! Handoff contracts (`contracts/<task>.yaml`, or `.json`; docs/rules-file.md): what a
//! coordinator promised a worker and expects back. Two shapes load: the flat one (the terms at
//! the top) and the WorkerHandoff envelope (ADR-008, the Worker Handoff Protocol: the terms under `contract:`, with
//! `context:` and `escalation:` beside them), never a mix. Loading is as strict as the rules
//! file (unknown keys, bad globs and commands are errors with line and column, in either
//! shape); `Contract::expand` turns the checkable success criteria into ordinary gates, and the
//! rest stay `unchecked` for a person to see.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};

use crate::config::{Gate, Pipeline, Route, Rules, error_at, parse_yaml};
use crate::error::{ConfigError, Error};
use crate::globs::Pattern;
use crate::rules::spec::{Argv, GateSpec, RuleKind};
use crate::rules::{Rule, dependencies::Dependencies, file_scope::FileScope};
use crate::task;
use crate::verdict::Escalation;
use crate::yaml::locate::Step;

/// Largest contract read: a contract is a page, not a data set.
const MAX_CONTRACT_BYTES: u64 = 1024 * 1024;

/// The file names a task's contract may have, in the order they are looked for.
pub const EXTENSIONS: [&str; 3] = ["yaml", "yml", "json"];

/// The keys of a contract's terms: at the top in the flat shape, under `contract:` in the
/// WorkerHandoff shape. The loader refuses a file that has both; the schema says the same from this list.
pub const TERMS: [&str; 5] = [
    "task_id",
    "files_owned",
    "files_readonly",
    "dependencies_completed",
    "success_criteria",
];

/// A contract file as written: the WorkerHandoff envelope (`contract`, `context`, `escalation`) or
/// the flat shape (the terms at the top beside `context` and `escalation`), never both.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "validator handoff contract")]
pub(crate) struct RawHandoff {
    /// The machine-checked terms (the WorkerHandoff shape). Without it, the terms are
    /// written at the top of the file instead.
    pub(crate) contract: Option<RawTerms>,
    /// Flat shape: the task this contract is for; must be the file's name.
    pub(crate) task_id: Option<String>,
    /// Flat shape: globs of the files the worker may change; an empty list: none may change.
    pub(crate) files_owned: Option<Vec<Pattern>>,
    /// Flat shape: globs of files the worker may read but must not change.
    pub(crate) files_readonly: Option<Vec<Pattern>>,
    /// Flat shape: tasks whose current verdict must be PASS before this one is judged.
    #[schemars(inner(regex(pattern = r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$")))]
    pub(crate) dependencies_completed: Option<Vec<String>>,
    /// Flat shape: exit conditions. `Tests pass: CMD`, `Type check passes: CMD`, `Lint passes:
    /// CMD` and `File exists: PATH` are checked by a gate; the rest are listed for a person.
    pub(crate) success_criteria: Option<Vec<String>>,
    /// Why the task exists and how it fits, kept in front of the worker: free text, or the
    /// WorkerHandoff's labelled fields.
    pub(crate) context: Option<RawContext>,
    /// Where a worker turns when it is stuck or needs a file outside its scope.
    pub(crate) escalation: Option<RawEscalation>,
}

/// A contract's terms: what a machine holds the worker to.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTerms {
    /// The task this contract is for; must be the file's name.
    pub(crate) task_id: String,
    /// Globs of the files the worker may change; an empty list: none may change.
    #[serde(default)]
    pub(crate) files_owned: Option<Vec<Pattern>>,
    /// Globs of files the worker may read but must not change.
    #[serde(default)]
    pub(crate) files_readonly: Vec<Pattern>,
    /// Tasks whose current verdict must be PASS before this one is judged.
    #[serde(default)]
    #[schemars(inner(regex(pattern = r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$")))]
    pub(crate) dependencies_completed: Vec<String>,
    /// Exit conditions. `Tests pass: CMD`, `Type check passes: CMD`, `Lint passes: CMD` and
    /// `File exists: PATH` are checked by a gate; the rest are listed for a person.
    #[serde(default)]
    pub(crate) success_criteria: Vec<String>,
}

/// `context:`: free text, or the WorkerHandoff's four labelled fields.
#[derive(Debug, JsonSchema)]
#[schemars(untagged)]
pub(crate) enum RawContext {
    /// Free text.
    Text(String),
    /// The WorkerHandoff's labelled fields, each optional.
    Fields(ContextFields),
}

/// The WorkerHandoff's context fields, shown to the worker one per line under these labels.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ContextFields {
    /// The big picture: the goal the task serves.
    pub(crate) epic_summary: Option<String>,
    /// What this task accomplishes.
    pub(crate) your_role: Option<String>,
    /// What the tasks before it produced.
    pub(crate) what_others_did: Option<String>,
    /// What the tasks after it expect.
    pub(crate) what_comes_next: Option<String>,
}

/// The labels the context fields are shown under, in order.
const CONTEXT_LABELS: [&str; 4] = [
    "Epic summary",
    "Your role",
    "What others did",
    "What comes next",
];

impl<'de> Deserialize<'de> for RawContext {
    // By hand, not `untagged`: an unknown key inside the mapping must keep its own message
    // and position, not become "matched no variant".
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Either;
        impl<'de> serde::de::Visitor<'de> for Either {
            type Value = RawContext;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(
                    "text, or a mapping of epic_summary, your_role, what_others_did and what_comes_next",
                )
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<RawContext, E> {
                Ok(RawContext::Text(text.to_owned()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<RawContext, A::Error> {
                ContextFields::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(RawContext::Fields)
            }
        }
        deserializer.deserialize_any(Either)
    }
}

impl RawContext {
    /// The context as the task's readers get it: the text as written, or each field given on
    /// its own labelled line (a field's own line breaks made spaces, so the labels hold).
    fn text(self) -> Option<String> {
        match self {
            RawContext::Text(text) => Some(text),
            RawContext::Fields(fields) => {
                let values = [
                    fields.epic_summary,
                    fields.your_role,
                    fields.what_others_did,
                    fields.what_comes_next,
                ];
                let lines: Vec<String> = CONTEXT_LABELS
                    .iter()
                    .zip(values)
                    .filter_map(|(label, value)| {
                        let value = validator_text::one_line(value?.trim());
                        (!value.is_empty()).then(|| format!("{label}: {value}"))
                    })
                    .collect();
                (!lines.is_empty()).then(|| lines.join("\n"))
            }
        }
    }
}

/// `escalation:`, with the WorkerHandoff's keys.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawEscalation {
    /// Whom a worker that is stuck turns to: `coordinator`, or an agent's name. A BLOCKED or
    /// ESCALATED verdict names it.
    pub(crate) blocked_contact: Option<String>,
    /// How a worker asks for a file outside its scope (`swarmmail_send(subject='Scope
    /// Change', ack_required=true)`): a scope violation's feedback names it.
    pub(crate) scope_change_protocol: Option<String>,
}

/// A checked contract.
#[derive(Debug, Clone)]
pub struct Contract {
    pub path: PathBuf,
    /// The file as written, for reviewers and for people reading the verdict.
    pub source: String,
    pub task_id: String,
    pub files_owned: Vec<Pattern>,
    /// `files_owned` was written (as a list, even an empty one, which owns nothing); left out
    /// or `null`, the contract does not limit which files change but by `files_readonly`.
    pub files_owned_written: bool,
    pub files_readonly: Vec<Pattern>,
    pub dependencies_completed: Vec<String>,
    pub criteria: Vec<Criterion>,
    /// The context as text: as written, or the WorkerHandoff's fields on labelled lines.
    pub context: Option<String>,
    pub escalation: Option<Escalation>,
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

/// The JSON Schema of a handoff contract (`contracts/<task>.yaml` or `.json`).
pub fn schema() -> serde_json::Value {
    let generator = schemars::generate::SchemaSettings::draft07().into_generator();
    let mut schema = generator.into_root_schema_for::<RawHandoff>().to_value();
    let flat_keys_refused: serde_json::Map<String, serde_json::Value> = TERMS
        .iter()
        .map(|key| ((*key).to_owned(), serde_json::Value::Bool(false)))
        .collect();
    if let Some(root) = schema.as_object_mut() {
        root.insert(
            "oneOf".into(),
            serde_json::json!([
                {
                    "description": "The WorkerHandoff shape: the terms under `contract:`.",
                    "required": ["contract"],
                    "properties": flat_keys_refused,
                },
                {
                    "description": "The flat shape: the terms at the top.",
                    "required": ["task_id"],
                    "properties": {"contract": false},
                },
            ]),
        );
    }
    crate::config::json_schema::tidy(&mut schema);
    schema
}

/// The contract schema as `validator rules schema --contract` prints it (and
/// `schema/contract.schema.json` holds it).
pub fn schema_text() -> String {
    let mut text = serde_json::to_string_pretty(&schema()).unwrap_or_default();
    text.push('\n');
    text
}

impl Contract {
    /// The contract for `task` where `rules` keep contracts (`contracts:`), if they keep any
    /// and one was written for it (see [`Contract::find`]).
    pub fn for_task(rules: &Rules, task: &str) -> Result<Option<Contract>, Error> {
        match &rules.contracts {
            Some(dir) => Contract::find(dir, task),
            None => Ok(None),
        }
    }

    /// The contract for `task` in `dir` (`<task>.yaml`, else `<task>.json`), if one was
    /// written. A contract that exists but cannot be read or checked is an error, and so are
    /// both files at once: a broken or ambiguous contract must never pass silently.
    pub fn find(dir: &Path, task: &str) -> Result<Option<Contract>, Error> {
        let mut found: Option<(PathBuf, Vec<u8>)> = None;
        for extension in EXTENSIONS {
            let path = dir.join(format!("{task}.{extension}"));
            let bytes = match validator_process::files::read(
                &path,
                MAX_CONTRACT_BYTES,
                validator_process::files::Links::Follow,
            ) {
                Ok(bytes) => bytes,
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
                Err(source) => return Err(Error::Read { path, source }),
            };
            if let Some((first, _)) = &found {
                return Err(ConfigError {
                    file: path.clone(),
                    line: None,
                    column: None,
                    message: format!(
                        "task `{task}` has two contracts: {} and {}",
                        first.display(),
                        path.display()
                    ),
                    help: Some("keep one of them".into()),
                }
                .into());
            }
            found = Some((path, bytes));
        }
        let Some((path, bytes)) = found else {
            return Ok(None);
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

    /// Checks contract text (YAML, of which JSON is a part); `task` is the task it must be
    /// about.
    pub fn parse(path: &Path, source: String, task: &str) -> Result<Contract, ConfigError> {
        let error =
            |at: &[Step], message: String, help: String| error_at(path, &source, at, message, help);
        let raw: RawHandoff = parse_yaml(path, &source, |message| {
            if message.contains("glob") {
                "write each glob relative to the task directory, never absolute and never with `..`"
                    .into()
            } else {
                "a contract has task_id, files_owned, files_readonly, dependencies_completed and success_criteria (at the top, or under `contract:`), context and escalation".into()
            }
        })?;
        let (terms, base, raw) =
            terms(raw).map_err(|(at, message, help)| error(&at, message, help))?;
        let at = |rest: &[Step]| [base, rest].concat();
        if terms.task_id != task {
            return Err(error(
                &at(&[Step::Key("task_id")]),
                format!(
                    "task_id `{}` does not match the task `{task}` this file is named for",
                    terms.task_id
                ),
                format!(
                    "write `task_id: {task}`, or rename the file to {}.yaml",
                    terms.task_id
                ),
            ));
        }
        for (i, dependency) in terms.dependencies_completed.iter().enumerate() {
            if let Err(err) = task::validate_name(dependency) {
                return Err(error(
                    &at(&[Step::Key("dependencies_completed"), Step::Index(i)]),
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
                    &at(&[Step::Key("dependencies_completed"), Step::Index(i)]),
                    format!("task `{task}` depends on itself"),
                    "remove it: a task cannot wait for its own verdict".into(),
                ));
            }
        }
        let mut criteria = Vec::with_capacity(terms.success_criteria.len());
        for (i, text) in terms.success_criteria.iter().enumerate() {
            let criterion = Criterion::parse(text).map_err(|(message, help)| {
                error(
                    &at(&[Step::Key("success_criteria"), Step::Index(i)]),
                    message,
                    help,
                )
            })?;
            criteria.push(criterion);
        }
        let escalation = match raw.escalation {
            Some(raw) => Some(escalation(raw).map_err(|(key, message)| {
                error(
                    &[Step::Key("escalation"), Step::Key(key)],
                    message,
                    "write who to turn to (or how to ask), or leave the key out".into(),
                )
            })?),
            None => None,
        };
        Ok(Contract {
            path: path.to_path_buf(),
            task_id: terms.task_id,
            files_owned_written: terms.files_owned.is_some(),
            files_owned: terms.files_owned.unwrap_or_default(),
            files_readonly: terms.files_readonly,
            dependencies_completed: terms.dependencies_completed,
            criteria,
            context: raw.context.and_then(RawContext::text),
            escalation,
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
            escalation: self.escalation.clone(),
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
        // A gate's definition is what a speculative outcome (and the cache) is matched by: a
        // criterion's is its spec, so a criterion rewritten between a run and done is another
        // gate; the others are the contract's lists, whole.
        let gate = |name: &str, rule: Rule, about: Option<String>, definition: String| Gate {
            name: format!("contract.{name}"),
            rule,
            on_pass: Route::Continue,
            on_fail: Route::Block,
            timeout: None,
            about,
            inputs: None,
            only_if: None,
            unless: None,
            group: None,
            definition,
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
            let definition = serde_json::to_string(&self.dependencies_completed);
            first.push(gate(
                "dependencies",
                rule,
                None,
                definition.unwrap_or_default(),
            ));
        }
        let mut last = Vec::new();
        if let Some(scope) = self.scope() {
            let definition = serde_json::to_string(&(
                &self.files_owned,
                self.files_owned_written,
                &self.files_readonly,
            ));
            let rule = Rule::FileScope(scope);
            last.push(gate("scope", rule, None, definition.unwrap_or_default()));
        }
        for (spec, text) in self.gate_specs() {
            let rule = Rule::from_spec(&spec, &rules.dir)
                .map_err(|err| format!("criterion `{text}`: {}", err.message))?;
            let definition = serde_json::to_string(&spec).unwrap_or_default();
            last.push(gate(&spec.name, rule, Some(text), definition));
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

    /// What the contract's file lists hold the worker to, when they hold it to anything: the
    /// rule of the stop's `contract.scope` gate and of a tool call's (`tool_policy::Policy`), one
    /// decision for both. `files_owned: []` owns nothing, so no file may change; a contract
    /// that leaves `files_owned` out limits only by `files_readonly`.
    pub fn scope(&self) -> Option<FileScope> {
        let owned = self
            .files_owned_written
            .then_some(self.files_owned.as_slice());
        (owned.is_some() || !self.files_readonly.is_empty())
            .then(|| FileScope::from_contract(owned, &self.files_readonly))
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

/// An error found after parsing: where, what, and the fix.
type Placed = (Vec<Step>, String, String);

/// The terms, from whichever shape the file has, and the path to them in the file; the rest
/// of the file (`context`, `escalation`) is the same in both.
fn terms(raw: RawHandoff) -> Result<(RawTerms, &'static [Step], RawHandoff), Placed> {
    const NESTED: &[Step] = &[Step::Key("contract")];
    let present = [
        raw.task_id.is_some(),
        raw.files_owned.is_some(),
        raw.files_readonly.is_some(),
        raw.dependencies_completed.is_some(),
        raw.success_criteria.is_some(),
    ];
    let flat: Vec<&'static str> = TERMS
        .iter()
        .zip(present)
        .filter_map(|(key, present)| present.then_some(*key))
        .collect();
    let RawHandoff {
        contract,
        task_id,
        files_owned,
        files_readonly,
        dependencies_completed,
        success_criteria,
        context,
        escalation,
    } = raw;
    let rest = RawHandoff {
        contract: None,
        task_id: None,
        files_owned: None,
        files_readonly: None,
        dependencies_completed: None,
        success_criteria: None,
        context,
        escalation,
    };
    match (contract, flat.first(), task_id) {
        (Some(_), Some(first), _) => Err((
            vec![Step::Key(first)],
            format!(
                "`{first}` is at the top, but the terms are under `contract:`: the file mixes the two shapes"
            ),
            format!(
                "move {} under `contract:` (the WorkerHandoff shape), or drop `contract:` and write its keys at the top",
                flat.iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
        (Some(terms), None, _) => Ok((terms, NESTED, rest)),
        (None, _, Some(task_id)) => {
            let terms = RawTerms {
                task_id,
                files_owned,
                files_readonly: files_readonly.unwrap_or_default(),
                dependencies_completed: dependencies_completed.unwrap_or_default(),
                success_criteria: success_criteria.unwrap_or_default(),
            };
            Ok((terms, &[], rest))
        }
        (None, _, None) => Err((
            Vec::new(),
            "the contract names no task_id".into(),
            "write `task_id: <task>` at the top, or the WorkerHandoff shape: `contract: {task_id: <task>, files_owned: [...]}`".into(),
        )),
    }
}

/// The escalation paths, each given or left out, never blank; else the blank key and why.
fn escalation(raw: RawEscalation) -> Result<Escalation, (&'static str, String)> {
    let given = |key: &'static str, value: Option<String>| match value {
        Some(text) if text.trim().is_empty() => Err((key, format!("`{key}` is blank"))),
        other => Ok(other.map(|text| text.trim().to_owned())),
    };
    Ok(Escalation {
        blocked_contact: given("blocked_contact", raw.blocked_contact)?,
        scope_change_protocol: given("scope_change_protocol", raw.scope_change_protocol)?,
    })
}

/// A way a run broke its contract, for the `contract_violation` event a coordinator learns from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Violation {
    /// `scope`, `readonly`, `undeclared change`, `criterion` or `dependency`.
    pub kind: &'static str,
    pub gate: String,
    pub detail: String,
}

/// The run a violation happened in, as its event names it.
#[derive(Debug, Clone, Copy)]
pub struct Run<'a> {
    /// The contract's `task_id`.
    pub task_id: &'a str,
    pub attempt: u32,
    /// The same for every event of one run, unlike any other run's.
    pub id: &'a str,
}

impl Violation {
    /// The `contract_violation` event that tells a coordinator of it: a negative learning
    /// signal for the decomposition that led here.
    pub fn event<'a>(&'a self, run: Run<'a>) -> crate::events::Event<'a> {
        crate::events::Event::ContractViolation {
            attempt: run.attempt,
            detail: &self.detail,
            gate: &self.gate,
            impact: "negative",
            kind: self.kind,
            run: run.id,
            task_id: run.task_id,
        }
    }
}

/// What a run did after a run that broke its contract in the kinds `before`, for the
/// `contract_followup` event: `escalated` (it ended BLOCKED or ESCALATED: a person was
/// called in), `repeated` (a kind it broke before, again), `different` (other kinds), or
/// `fixed`. `None` when the run says nothing of the worker (ERROR) or nothing came before.
pub fn followup(
    before: &[String],
    verdict: &crate::verdict::Verdict,
    now: &[Violation],
) -> Option<&'static str> {
    use crate::verdict::{Decision, GateOutcome};
    if before.is_empty() {
        return None;
    }
    // Kept only where the contract's gates judged the run: a run another gate ended before
    // them has not shown the contract kept.
    let judged = verdict
        .gates
        .iter()
        .filter(|gate| gate.name.starts_with("contract."))
        .all(|gate| matches!(gate.outcome, GateOutcome::Pass | GateOutcome::Cached));
    Some(match verdict.verdict {
        Decision::Error => return None,
        Decision::Blocked | Decision::Escalated => "escalated",
        _ if now.iter().any(|v| before.iter().any(|k| k == v.kind)) => "repeated",
        _ if !now.is_empty() => "different",
        _ if judged => "fixed",
        _ => return None,
    })
}

/// Characters of a violation's detail an event keeps: a path the worker chose may be long.
const MAX_DETAIL_CHARS: usize = 300;

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
            detail: validator_text::clip(&gate.summary, MAX_DETAIL_CHARS),
        };
        if gate.rule == RuleKind::FileScope.as_str() {
            found.extend(gate.findings.iter().filter_map(|finding| {
                Some(Violation {
                    kind: finding.breach?.as_str(),
                    gate: gate.name.clone(),
                    detail: validator_text::clip(&finding.to_string(), MAX_DETAIL_CHARS),
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

    /// The seed's (ADR-008) example handoff, verbatim.
    pub(crate) const SEED_EXAMPLE: &str = r#"{
  "contract": {
    "task_id": "bd-123.2",
    "files_owned": ["src/auth/service.ts", "src/auth/service.test.ts"],
    "files_readonly": ["src/types/user.ts", "src/lib/jwt.ts"],
    "dependencies_completed": ["bd-123.1"],
    "success_criteria": [
      "AuthService.login() returns JWT token",
      "Tests pass: bun test src/auth/service.test.ts",
      "Type check passes: tsc --noEmit"
    ]
  },
  "context": {
    "epic_summary": "Add OAuth authentication to user service",
    "your_role": "Implement AuthService with JWT token generation",
    "what_others_did": "bd-123.1 created User schema with email/password fields",
    "what_comes_next": "bd-123.3 will integrate this service into API routes"
  },
  "escalation": {
    "blocked_contact": "coordinator",
    "scope_change_protocol": "swarmmail_send(subject='Scope Change', ack_required=true)"
  }
}
"#;

    fn seed(source: &str) -> Result<Contract, ConfigError> {
        Contract::parse(Path::new("/c/bd-123.2.json"), source.into(), "bd-123.2")
    }

    #[test]
    fn the_seeds_handoff_loads_as_written() {
        let contract = seed(SEED_EXAMPLE).unwrap();
        assert_eq!(contract.files_owned.len(), 2);
        assert_eq!(contract.files_readonly.len(), 2);
        assert_eq!(contract.dependencies_completed, ["bd-123.1"]);
        assert_eq!(
            contract.unchecked(),
            ["AuthService.login() returns JWT token"]
        );
        assert_eq!(contract.gate_specs().len(), 2);
        assert_eq!(
            contract.context.as_deref(),
            Some(
                "Epic summary: Add OAuth authentication to user service\nYour role: Implement AuthService with JWT token generation\nWhat others did: bd-123.1 created User schema with email/password fields\nWhat comes next: bd-123.3 will integrate this service into API routes"
            )
        );
        let escalation = contract.escalation.unwrap();
        assert_eq!(escalation.blocked_contact.as_deref(), Some("coordinator"));
        // Tabs, as many JSON writers indent.
        assert!(seed(&SEED_EXAMPLE.replace("  ", "\t")).is_ok());
    }

    #[test]
    fn errors_in_the_envelope_keep_their_positions() {
        let bad_glob = SEED_EXAMPLE.replace(
            r#""src/auth/service.test.ts"]"#,
            r#""src/auth/service.test.ts", "../x"]"#,
        );
        let err = seed(&bad_glob).unwrap_err();
        assert_eq!(err.line, Some(4), "{err}");
        assert!(err.message.contains("files_owned[2]"), "{err}");
        let err = seed(&SEED_EXAMPLE.replace("your_role", "my_role")).unwrap_err();
        assert_eq!(err.line, Some(15), "{err}");
        assert!(err.message.contains("unknown field `my_role`"), "{err}");
        let err = seed(&SEED_EXAMPLE.replace("blocked_contact", "contact")).unwrap_err();
        assert_eq!(err.line, Some(20), "{err}");
        let err = seed(&SEED_EXAMPLE.replace("\"bd-123.2\"", "\"bd-9\"")).unwrap_err();
        assert_eq!((err.line, err.column), (Some(3), Some(16)), "{err}");
        let err = seed(&SEED_EXAMPLE.replace("bun test", "bun 'test")).unwrap_err();
        assert_eq!(err.line, Some(9), "{err}");
        let mixed = SEED_EXAMPLE.replacen("{\n", "{\n  \"files_owned\": [\"a\"],\n", 1);
        let err = seed(&mixed).unwrap_err();
        assert_eq!(err.line, Some(2), "{err}");
        assert!(err.message.contains("mixes the two shapes"), "{err}");
        assert!(err.help.unwrap().contains("under `contract:`"));
        let err = parse("context: x\n").unwrap_err();
        assert!(err.message.contains("no task_id"), "{err}");
    }
}
