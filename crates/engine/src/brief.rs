//! The worker's brief (`validator brief`; a hook can hand it to an agent as its session
//! starts): what the worker is held to, said up front in under 50 lines, as the seed's
//! WorkerHandoff asks ("handoff as JSON + a compact context wrapper"). The contract's terms
//! (files owned and read-only, dependencies done, the success criteria and which a gate
//! checks), its context and escalation paths, a line per gate the run will pass through, and
//! the STATUS block the worker's last message must end with (docs/signal.md).
//!
//! Everything a contract or the rules file says is operator text: shown one line per field.

use serde::Serialize;
use serde_json::Value;

use crate::config::{Gate, Pipeline, Rules};
use crate::contract::{CheckKind, Contract, Criterion};
use crate::error::Error;
use crate::verdict::Escalation;
use validator_text::{clip, one_line};

/// The most lines the text brief has, its STATUS block included: under 50, as the seed asks.
pub const MAX_LINES: usize = 49;
/// The longest line, in characters.
const MAX_LINE_CHARS: usize = 240;
/// The most gates listed one per line; the rest are counted.
const MAX_GATES: usize = 12;
/// The most criteria listed; the rest are counted.
const MAX_CRITERIA: usize = 8;
/// The most lines of context.
const MAX_CONTEXT_LINES: usize = 6;

/// A task's brief, as `--format json` prints it.
#[derive(Debug, Clone, Serialize)]
pub struct Brief {
    pub task: String,
    pub pipeline: String,
    /// The contract's terms, when the task has a contract.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contract: Option<Terms>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub escalation: Option<Escalation>,
    /// Every gate a run passes through, in order: the contract's with the pipeline's.
    pub gates: Vec<GateLine>,
    /// What the worker's last message must end with.
    pub status_block: String,
    /// How the worker's shell commands run here: confined by the kernel, or checked after.
    pub confinement: String,
}

/// A contract's terms, for the worker.
#[derive(Debug, Clone, Serialize)]
pub struct Terms {
    /// The contract file.
    pub path: String,
    pub task_id: String,
    pub files_owned: Vec<String>,
    pub files_readonly: Vec<String>,
    pub dependencies_completed: Vec<String>,
    pub success_criteria: Vec<CriterionLine>,
}

/// A success criterion and the gate that checks it (none: a person does).
#[derive(Debug, Clone, Serialize)]
pub struct CriterionLine {
    pub text: String,
    pub checked_by: Option<String>,
}

/// A gate, and what it checks in a few words.
#[derive(Debug, Clone, Serialize)]
pub struct GateLine {
    pub name: String,
    pub rule: String,
    pub checks: String,
}

/// The brief as text, at most [`MAX_LINES`] lines: what a hook front end hands an agent.
/// Without a contract for `task`, the gates and the STATUS block alone.
pub fn render(rules: &Rules, pipeline: &Pipeline, task: &str) -> Result<String, Error> {
    Ok(brief(rules, pipeline, task)?.text())
}

/// The brief of `task` judged by `pipeline` under `rules` (and its contract, if it has one).
/// A contract that cannot be read is an error, as it is to a run.
pub fn brief(rules: &Rules, pipeline: &Pipeline, task: &str) -> Result<Brief, Error> {
    crate::task::validate_name(task)?;
    let contract = crate::contract::Contract::for_task(rules, task)?;
    let mut gates = Vec::new();
    if let Some(contract) = contract.as_ref() {
        if !contract.dependencies_completed.is_empty() {
            gates.push(GateLine {
                name: "contract.dependencies".into(),
                rule: "dependencies".into(),
                checks: format!(
                    "each has a current PASS verdict: {}",
                    contract.dependencies_completed.join(", ")
                ),
            });
        }
    }
    gates.extend(pipeline.gates.iter().map(describe));
    if let Some(contract) = contract.as_ref() {
        gates.extend(contract_gates(contract));
    }
    Ok(Brief {
        task: task.to_owned(),
        pipeline: pipeline.name.clone(),
        context: contract.as_ref().and_then(|c| c.context.clone()),
        escalation: contract.as_ref().and_then(|c| c.escalation.clone()),
        contract: contract.as_ref().map(terms),
        gates,
        status_block: status_block(task),
        confinement: confinement_line(rules),
    })
}

/// What a worker is told of how its shell commands run on this machine.
fn confinement_line(rules: &Rules) -> String {
    use crate::config::tools::Confine;
    let machine = crate::confine::Machine::probe();
    if rules.tools.confine == Confine::Off || machine.landlock < crate::confine::ABI_NEEDED {
        return "They are not confined on this machine: what each one changes is checked when it ends, and at the stop.".into();
    }
    let readonly = match machine.namespaces {
        Ok(()) => "",
        Err(_) => {
            " Read-only files inside what you may change are checked when each command ends and at the stop, not by the kernel."
        }
    };
    format!(
        "They run confined by the kernel: a write outside what you may change fails with `Permission denied` (or `Read-only file system`), however the command is written. Change only what the gates allow.{readonly}"
    )
}

/// The STATUS block of docs/signal.md for `task`, both endings.
fn status_block(task: &str) -> String {
    format!(
        "STATUS: OK\nTASK: {task}\nSUMMARY: <one line: what you did>\n(or, when you cannot go on: STATUS: BLOCKED, REASON: <why>, TASK: {task})"
    )
}

fn terms(contract: &Contract) -> Terms {
    let globs = |patterns: &[crate::globs::Pattern]| {
        patterns
            .iter()
            .map(|p| p.as_str().to_owned())
            .collect::<Vec<_>>()
    };
    let success_criteria = contract
        .criteria
        .iter()
        .enumerate()
        .map(|(i, criterion)| match criterion {
            Criterion::Check { text, .. } => CriterionLine {
                text: text.clone(),
                checked_by: Some(format!("contract.criterion-{}", i + 1)),
            },
            Criterion::Unchecked(text) => CriterionLine {
                text: text.clone(),
                checked_by: None,
            },
        })
        .collect();
    Terms {
        path: contract.path.display().to_string(),
        task_id: contract.task_id.clone(),
        files_owned: globs(&contract.files_owned),
        files_readonly: globs(&contract.files_readonly),
        dependencies_completed: contract.dependencies_completed.clone(),
        success_criteria,
    }
}

/// The gates the contract adds after the pipeline's: its scope, then a gate per checkable
/// criterion (named as `Contract::expand` names them).
fn contract_gates(contract: &Contract) -> Vec<GateLine> {
    let mut gates = Vec::new();
    if !contract.files_owned.is_empty() || !contract.files_readonly.is_empty() {
        let list = |patterns: &[crate::globs::Pattern]| {
            patterns
                .iter()
                .map(|p| p.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut checks = Vec::new();
        if !contract.files_owned.is_empty() {
            checks.push(format!(
                "changes only inside {}",
                list(&contract.files_owned)
            ));
        }
        if !contract.files_readonly.is_empty() {
            checks.push(format!("none to {}", list(&contract.files_readonly)));
        }
        gates.push(GateLine {
            name: "contract.scope".into(),
            rule: "file-scope".into(),
            checks: checks.join("; "),
        });
    }
    for (i, criterion) in contract.criteria.iter().enumerate() {
        let Criterion::Check { kind, .. } = criterion else {
            continue;
        };
        let (rule, checks) = match kind {
            CheckKind::Tests(argv) => ("test", format!("runs `{}`", shell_words::join(&argv.0))),
            CheckKind::Lint(argv) => ("lint", format!("runs `{}`", shell_words::join(&argv.0))),
            CheckKind::FileExists(path) => ("exists", format!("{} exists", path.as_str())),
        };
        gates.push(GateLine {
            name: format!("contract.criterion-{}", i + 1),
            rule: rule.into(),
            checks,
        });
    }
    gates
}

/// Keys of a gate that say how it runs, not what it checks.
const HOW_IT_RUNS: [&str; 11] = [
    "name", "rule", "on_pass", "on_fail", "timeout", "inputs", "group", "env", "fix", "only_if",
    "unless",
];

/// What a pipeline's gate checks, from the gate as written: its command, or the keys that
/// say what it looks at.
fn describe(gate: &Gate) -> GateLine {
    let rule = gate.kind().as_str().to_owned();
    let spec: Value = serde_json::from_str(&gate.definition).unwrap_or(Value::Null);
    let mut said = Vec::new();
    if let Value::Object(keys) = &spec {
        if let Some(run) = keys.get("run").and_then(words) {
            said.push(format!("runs `{}`", shell_words::join(run)));
        }
        for (key, value) in keys {
            if key == "run" || HOW_IT_RUNS.contains(&key.as_str()) || value.is_null() {
                continue;
            }
            let value = match (value, words(value)) {
                (_, Some(items)) => items.join(", "),
                (Value::String(text), _) => text.clone(),
                (other, _) => other.to_string(),
            };
            said.push(format!("{key}: {value}"));
        }
    }
    let checks = match (said.is_empty(), rule.as_str()) {
        (false, _) => said.join("; "),
        (true, "status") => "your last message's STATUS block says OK".into(),
        (true, "file-scope") => "what you changed, against the task's baseline".into(),
        (true, _) => gate.about.clone().unwrap_or_default(),
    };
    GateLine {
        name: gate.name.clone(),
        rule,
        checks,
    }
}

/// A list of strings, as such.
fn words(value: &Value) -> Option<Vec<String>> {
    value
        .as_array()?
        .iter()
        .map(|item| item.as_str().map(str::to_owned))
        .collect()
}

impl Brief {
    /// The brief for the worker: at most [`MAX_LINES`] lines, each field on one line, the
    /// STATUS block always whole at the end.
    pub fn text(&self) -> String {
        let mut body = vec![format!(
            "# Brief for task {} (validator, pipeline {})",
            one_line(&self.task),
            one_line(&self.pipeline)
        )];
        if let Some(terms) = &self.contract {
            body.extend(terms.lines());
        }
        if let Some(context) = self.context.as_deref().filter(|c| !c.trim().is_empty()) {
            body.push("## Context".into());
            body.extend(crate::verdict::feedback::quoted(context, MAX_CONTEXT_LINES));
        }
        if let Some(escalation) = &self.escalation {
            body.push("## When you are stuck".into());
            body.extend(escalation.instruction(crate::verdict::Decision::Blocked));
            body.extend(escalation.scope_change());
        }
        body.push(format!(
            "## What the gates check, in order ({} gates)",
            self.gates.len()
        ));
        body.extend(self.gates.iter().take(MAX_GATES).map(|gate| {
            format!(
                "- {} ({}): {}",
                one_line(&gate.name),
                one_line(&gate.rule),
                one_line(&gate.checks)
            )
        }));
        if self.gates.len() > MAX_GATES {
            body.push(format!("- … and {} more", self.gates.len() - MAX_GATES));
        }
        body.push("## Your shell commands".into());
        body.push(format!("- {}", self.confinement));
        let mut end = vec!["## End your last message with".to_string()];
        end.extend(self.status_block.lines().map(str::to_owned));

        let mut lines: Vec<String> = body
            .iter()
            .flat_map(|line| line.split('\n'))
            .map(|line| clip(line, MAX_LINE_CHARS))
            .collect();
        let room = MAX_LINES - end.len();
        if lines.len() > room {
            lines.truncate(room - 1);
            lines.push("… (shortened; `validator brief --format json` has everything)".into());
        }
        lines.extend(end);
        let mut text = lines.join("\n");
        text.push('\n');
        text
    }
}

impl Terms {
    fn lines(&self) -> Vec<String> {
        let list = |items: &[String]| {
            items
                .iter()
                .map(|item| one_line(item))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut lines = vec![format!("## Contract ({})", one_line(&self.path))];
        if !self.files_owned.is_empty() {
            lines.push(format!(
                "- Files you own (change only these): {}",
                list(&self.files_owned)
            ));
        }
        if !self.files_readonly.is_empty() {
            lines.push(format!(
                "- Read only (never change): {}",
                list(&self.files_readonly)
            ));
        }
        if !self.dependencies_completed.is_empty() {
            lines.push(format!(
                "- Done before you: {}",
                list(&self.dependencies_completed)
            ));
        }
        if !self.success_criteria.is_empty() {
            lines.push("- Success criteria:".into());
            lines.extend(self.success_criteria.iter().take(MAX_CRITERIA).map(
                |c| match &c.checked_by {
                    Some(gate) => {
                        format!("  - {} (checked by {})", one_line(&c.text), one_line(gate))
                    }
                    None => format!("  - {} (a person checks)", one_line(&c.text)),
                },
            ));
            if self.success_criteria.len() > MAX_CRITERIA {
                lines.push(format!(
                    "  - … and {} more",
                    self.success_criteria.len() - MAX_CRITERIA
                ));
            }
        }
        lines
    }
}
