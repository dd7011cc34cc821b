//! `dependencies`: a contract's `dependencies_completed` hold — each named task has a current
//! PASS verdict in the verdicts directory. Not a rule a rules file names: the contract adds it
//! as the run's first gate, so a task whose inputs are not done fails before anything runs.

use std::path::PathBuf;
use std::sync::Arc;

use super::{Context, Outcome};
use crate::signal::Signal;
use crate::staging;
use crate::verdict::sign::{self, Key};
use crate::verdict::{Decision, Finding};

#[derive(Debug, Clone)]
pub struct Dependencies {
    pub tasks: Vec<String>,
    pub staging: PathBuf,
    pub verdicts: PathBuf,
    /// With a signing key, a dependency's verdict counts only if its signature verifies.
    pub key: Option<Arc<Key>>,
}

impl Dependencies {
    pub fn run(&self, _ctx: &Context<'_>) -> Outcome {
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

    /// Why `task` does not count as completed, or `None` if it does.
    fn unmet(&self, task: &str) -> Option<String> {
        if let Some(key) = &self.key {
            let path = staging::verdict_path(&self.verdicts, task);
            if path.exists() {
                let checked = sign::read_document(&path)
                    .map_err(|err| err.to_string())
                    .and_then(|text| sign::verify(&text, key).map_err(|err| err.to_string()));
                if let Err(why) = checked {
                    return Some(format!("its verdict does not count: {why}"));
                }
            }
        }
        let verdict = staging::read_verdict(&self.verdicts, task);
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
            (Some(_), Some(_)) => None,
        }
    }
}
