//! `dependencies`: a contract's `dependencies_completed` hold — each named task has a current
//! PASS verdict in the verdicts directory. Not a rule a rules file names: the contract adds it
//! as the run's first gate, so a task whose inputs are not done fails before anything runs.
//!
//! A verdict file proves nothing where a worker can write it. It counts when its signature
//! verifies (with a signing key), or when it lies outside staging, or when the watcher's own
//! state records that it judged exactly this done signal with a PASS.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{About, Context, KeyError, Outcome, Required, RuleDef};
use crate::done::Signal;
use crate::rules::spec::GateSpec;
use crate::staging;
use crate::state::TaskState;
use crate::verdict::sign::{self, SigningKey};
use crate::verdict::{Decision, Finding, Verdict};

#[derive(Debug, Clone)]
pub struct Dependencies {
    pub tasks: Vec<String>,
    pub staging: PathBuf,
    pub verdicts: PathBuf,
    pub state: PathBuf,
    /// With a signing key, a dependency's verdict counts only if its signature verifies.
    pub key: Option<Arc<SigningKey>>,
}

impl RuleDef for Dependencies {
    /// Only a contract adds it (`dependencies_completed`); a rules file cannot name it.
    const ABOUT: About = About {
        keys: &[],
        required: Required::None,
        cacheable: false,
        shows_timeout: false,
        starts_programs: false,
        runs_workers_code: false,
    };

    fn from_spec(_spec: &GateSpec, _rules_dir: &Path) -> Result<Self, KeyError> {
        Err(KeyError::new(
            "rule",
            "rule `dependencies` comes from a contract's `dependencies_completed`",
            "list the tasks under `dependencies_completed:` in contracts/<task>.yaml",
        ))
    }

    fn run(&self, _ctx: &Context<'_>) -> Outcome {
        let findings: Vec<Finding> = self
            .tasks
            .iter()
            .filter_map(|task| {
                self.unmet(task)
                    .map(|why| Finding::new(format!("{task}: {why}")))
            })
            .collect();
        let count = self.tasks.len();
        Outcome::from_findings(
            findings,
            &format!(
                "{count} dependenc{} completed",
                if count == 1 { "y" } else { "ies" }
            ),
            |n| format!("{n} of {count} dependencies are not completed"),
        )
    }
}

impl Dependencies {
    /// The dependency's verdict as read once (the bytes verified are the bytes judged), or why
    /// it cannot count.
    fn verdict(&self, task: &str) -> Result<Option<Verdict>, String> {
        let path = staging::verdict_path(&self.verdicts, task);
        let document = match sign::read_document(&path, validator_process::files::Links::Refuse) {
            Ok(document) => document,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(format!("its verdict cannot be read ({err})")),
        };
        if let Some(key) = &self.key {
            sign::verify(&document, key)
                .map_err(|why| format!("its verdict does not count: {why}"))?;
        }
        let verdict: Verdict = serde_json::from_str(&document)
            .map_err(|err| format!("its verdict is not a verdict document ({err})"))?;
        if verdict.task != task {
            return Err(format!(
                "its verdict file holds task `{}`'s verdict",
                verdict.task
            ));
        }
        Ok(Some(verdict))
    }

    /// Why `task` does not count as completed, or `None` if it does.
    fn unmet(&self, task: &str) -> Option<String> {
        let verdict = match self.verdict(task) {
            Ok(verdict) => verdict,
            Err(why) => return Some(why),
        };
        let signal = Signal::read(&staging::done_path(&self.staging, task)).ok();
        match (verdict, signal) {
            (None, None) => Some("not signalled done and no verdict".into()),
            (None, Some(_)) => Some("signalled done, not judged yet".into()),
            (Some(verdict), None) => Some(format!(
                "its done signal is gone (last verdict {})",
                verdict.verdict
            )),
            (Some(verdict), Some(signal)) if !staging::is_current(&verdict, &signal) => {
                Some(format!(
                    "signalled again since its last verdict ({}); not judged yet",
                    verdict.verdict
                ))
            }
            (Some(verdict), Some(_)) if verdict.verdict != Decision::Pass => Some(format!(
                "verdict {} (attempt {}){}",
                verdict.verdict,
                verdict.attempt,
                verdict
                    .reasons
                    .first()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            )),
            (Some(_), Some(signal)) if self.key.is_none() && self.forgeable() => {
                // The PASS sits where the worker could have written it: only the watcher's
                // record of judging this very signal vouches for it.
                let state = TaskState::load(&self.state, task);
                let vouched = state.last_verdict == Some(Decision::Pass)
                    && state.judged.is_some()
                    && state.judged == staging::signal_key(&signal);
                (!vouched).then(|| {
                    "its PASS verdict lies in staging, where a worker can write one, and no watcher record confirms it; put `verdicts:` outside staging or configure a signing key".to_string()
                })
            }
            (Some(_), Some(_)) => None,
        }
    }

    /// Whether the verdicts directory lies inside staging (the default), where workers write.
    fn forgeable(&self) -> bool {
        let real = |p: &PathBuf| p.canonicalize().unwrap_or_else(|_| p.clone());
        real(&self.verdicts).starts_with(real(&self.staging))
    }
}
