//! Which task is judged when: one run per task at a time, a signal during a run asking for
//! exactly one more run after it ([`Scheduler`]); the done signals in staging that changed
//! since their last request, looked at whole ([`rescan`]) or tick by tick when polling
//! ([`poll`]); and the tasks whose verdict could not be written, asked for again with a
//! backoff ([`Retries`]). The main loop feeds it; the workers take what it sends.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use validator::events::{Event, Problem};
use validator::staging;

use super::file_events::Fingerprint;
use super::metrics;
use super::run::Shared;

/// Tasks whose verdict could not be written, each tried again after a pause that doubles with
/// every failure (1 s up to a minute): space may come back, a mount may be fixed.
#[derive(Default)]
pub(super) struct Retries(HashMap<String, (u32, Option<Instant>)>);

impl Retries {
    const FIRST: Duration = Duration::from_secs(1);
    const LONGEST: Duration = Duration::from_secs(60);

    pub(super) fn failed(&mut self, task: String) {
        let failures = self.0.get(&task).map_or(0, |(failures, _)| *failures) + 1;
        let pause = Self::FIRST
            .saturating_mul(1 << failures.saturating_sub(1).min(6))
            .min(Self::LONGEST);
        self.0
            .insert(task, (failures, Some(Instant::now() + pause)));
    }

    /// How long the main loop may sleep before a retry is due.
    pub(super) fn until_due(&self) -> Duration {
        self.0
            .values()
            .filter_map(|(_, due)| *due)
            .map(|due| due.saturating_duration_since(Instant::now()))
            .min()
            .unwrap_or(Duration::MAX)
    }

    /// The tasks due now, of those `waiting` still says wait to be written; a task tried
    /// keeps its count of failures until it is written, and is forgotten then.
    pub(super) fn due(&mut self, waiting: impl Fn(&str) -> bool) -> Vec<String> {
        let now = Instant::now();
        self.0.retain(|task, _| waiting(task));
        let mut due = Vec::new();
        for (task, (_, at)) in &mut self.0 {
            if at.is_some_and(|at| at <= now) {
                *at = None;
                due.push(task.clone());
            }
        }
        due
    }
}

/// The most done files with bad names remembered as reported.
const MAX_REFUSED: usize = 10_000;

/// One run per task at a time; a signal during a run asks for exactly one more run after it.
pub(super) struct Scheduler {
    jobs: Option<Sender<String>>,
    /// Counts the signals waiting: sent to the workers and not yet taken, or in `again`.
    metrics: Arc<metrics::Metrics>,
    pub(super) running: HashSet<String>,
    again: HashSet<String>,
    /// Done files with bad names already reported: one file fires several events.
    refused: HashSet<PathBuf>,
    /// What each done file looked like when its run was last requested, so a rescan (polling
    /// mode) requests runs only for signals that changed.
    seen: HashMap<String, Fingerprint>,
    /// Polling mode: each done file's fingerprint at the last tick.
    observed: HashMap<String, Fingerprint>,
}

impl Scheduler {
    pub(super) fn new(jobs: Sender<String>, metrics: Arc<metrics::Metrics>) -> Self {
        Scheduler {
            jobs: Some(jobs),
            metrics,
            running: HashSet::new(),
            again: HashSet::new(),
            refused: HashSet::new(),
            seen: HashMap::new(),
            observed: HashMap::new(),
        }
    }

    pub(super) fn request(&mut self, task: String) {
        if self.running.contains(&task) {
            if self.again.insert(task) {
                self.metrics.queued(1);
            }
        } else if let Some(jobs) = &self.jobs {
            // Counted before it is sent: a worker counts it out as soon as it takes it.
            self.metrics.queued(1);
            if jobs.send(task.clone()).is_ok() {
                self.running.insert(task);
            } else {
                self.metrics.queued(-1);
            }
        }
    }

    pub(super) fn finished(&mut self, task: &str) {
        self.running.remove(task);
        if self.again.remove(task) {
            self.metrics.queued(-1);
            self.request(task.to_owned());
        }
    }

    pub(super) fn close(&mut self) {
        self.jobs = None;
        self.metrics
            .queued(-i64::try_from(self.again.len()).unwrap_or(i64::MAX));
        self.again.clear();
    }
}

/// Requests a run for every done signal in staging that changed since its last request (all
/// of them at start); the run itself skips signals whose verdict is current.
pub(super) fn rescan(shared: &Shared, scheduler: &mut Scheduler) {
    let rules = shared.rules();
    let Ok(entries) = std::fs::read_dir(&rules.staging) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if let Some(task) = task_of(shared, scheduler, &path) {
            let now = Fingerprint::of_entry(&path);
            if now.is_some() && scheduler.seen.get(&task) != now.as_ref() {
                scheduler.seen.extend(now.map(|f| (task.clone(), f)));
                scheduler.request(task);
            }
        }
    }
}

/// Polling mode: requests a run for each done file that changed and then held still for one
/// interval, so a signal still being written is not judged half-written. Forgets files that
/// are gone.
pub(super) fn poll(shared: &Shared, scheduler: &mut Scheduler) {
    let rules = shared.rules();
    let Ok(entries) = std::fs::read_dir(&rules.staging) else {
        return;
    };
    let mut observed = HashMap::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let (Some(task), Some(now)) = (
            task_of(shared, scheduler, &path),
            Fingerprint::of_entry(&path),
        ) else {
            continue;
        };
        let settled = scheduler.observed.get(&task) == Some(&now);
        if settled && scheduler.seen.get(&task) != Some(&now) {
            scheduler.seen.insert(task.clone(), now);
            scheduler.request(task.clone());
        }
        observed.insert(task, now);
    }
    scheduler.seen.retain(|task, _| observed.contains_key(task));
    scheduler.observed = observed;
}

/// The task a path signals, logging (once, not failing on) a done file with a bad name.
pub(super) fn task_of(shared: &Shared, scheduler: &mut Scheduler, path: &Path) -> Option<String> {
    match staging::task_of_signal(path.file_name()?)? {
        Ok(task) => Some(task),
        Err(err) => {
            // Each bad name is reported once; the set is bounded, so a worker making names
            // without end cannot grow the watcher (past the bound, names may be reported again).
            if scheduler.refused.len() >= MAX_REFUSED {
                scheduler.refused.clear();
            }
            if scheduler.refused.insert(path.to_path_buf()) {
                tracing::error!(path = %path.display(), %err, "skipping a done signal with a bad task name");
                shared.events.record(
                    None,
                    None,
                    Event::Error(Problem::Unreadable {
                        error: err.to_string(),
                        path: path.display().to_string(),
                    }),
                );
            }
            None
        }
    }
}
