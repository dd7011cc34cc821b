//! What a fleet of sidecars is watched by (`watch --metrics-addr`): the watcher's counters and
//! gauges ([`Metrics`]: verdicts by decision, escalations, gate durations by rule, the queue,
//! the running tasks, the time of the last verdict), kept as it judges whether or not anyone
//! reads them, and their rendering in the Prometheus text exposition format 0.0.4. The numbers
//! live in atomics and one short mutex, which rendering only reads. [`http`] serves them.
//!
//! Labels are bounded and trusted: `decision` is the five decisions, `rule` a rule kind of the
//! compiled-in registry (`lint`, `exists`, …), never a gate's or a task's name: task names come
//! from workers, and gate names from contracts as well as the rules file, and each name would
//! be a series of its own for as long as the watcher lives.

pub mod approve;
pub mod http;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use validator::pipeline::Observer;
use validator::task::Task;
use validator::verdict::{Decision, GateOutcome, GateReport};

/// The decisions in the order they are rendered; each has its series from the start.
const DECISIONS: [Decision; 5] = [
    Decision::Pass,
    Decision::Fail,
    Decision::Blocked,
    Decision::Escalated,
    Decision::Error,
];

/// The gate duration histogram's upper bounds, in milliseconds: 10 ms to 10 minutes.
const BUCKETS_MS: [u64; 14] = [
    10, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 120_000, 300_000, 600_000,
];

/// Rule kinds are a closed set; a bound all the same, so no bug can grow the map.
const MAX_RULES: usize = 64;

/// The content type of the text exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The watcher's numbers. Updated by the main loop (the queue), the workers (running tasks,
/// published verdicts) and the engine as an [`Observer`] (gate durations).
pub struct Metrics {
    version: &'static str,
    /// Published verdicts, indexed as [`DECISIONS`].
    verdicts: [AtomicU64; 5],
    escalations: AtomicU64,
    queued: AtomicI64,
    running: AtomicI64,
    /// When the last verdict was published, in milliseconds since the Unix epoch; 0: none yet.
    last_judged_ms: AtomicU64,
    gates: Mutex<BTreeMap<String, Histogram>>,
    /// What speculative runs cost and gave (the speculator counts them).
    pub speculative: std::sync::Arc<Counts>,
    /// The state directory whose open approval requests the gauge counts (read when rendered:
    /// the hooks that write them are other processes).
    approvals: std::sync::OnceLock<std::path::PathBuf>,
}

/// One rule's gate durations: the count in each bucket (not cumulative), all of them, the sum.
#[derive(Debug, Default, Clone)]
struct Histogram {
    buckets: [u64; BUCKETS_MS.len()],
    count: u64,
    sum_ms: u64,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            version: env!("CARGO_PKG_VERSION"),
            verdicts: Default::default(),
            escalations: AtomicU64::new(0),
            queued: AtomicI64::new(0),
            running: AtomicI64::new(0),
            last_judged_ms: AtomicU64::new(0),
            gates: Mutex::new(BTreeMap::new()),
            speculative: Default::default(),
            approvals: std::sync::OnceLock::new(),
        }
    }
}

fn index(decision: Decision) -> usize {
    match decision {
        Decision::Pass => 0,
        Decision::Fail => 1,
        Decision::Blocked => 2,
        Decision::Escalated => 3,
        Decision::Error => 4,
    }
}

/// A task counted as being judged until this is dropped (however the run ends).
pub struct Judging<'a>(&'a Metrics);

impl Drop for Judging<'_> {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Whether a circuit breaker tripped in the run a verdict comes from: an escalation is counted
/// once, not with each answer a held task is given again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trip {
    Now,
    NotNow,
}

impl Metrics {
    /// Verdicts published since the watcher started, whatever they decided.
    pub fn published_total(&self) -> u64 {
        self.verdicts
            .iter()
            .map(|n| n.load(Ordering::Relaxed))
            .fold(0, u64::saturating_add)
    }

    /// A verdict was published (written where readers find it), and whether a circuit breaker
    /// tripped in the run that decided it.
    pub fn published(&self, decision: Decision, trip: Trip) {
        self.verdicts[index(decision)].fetch_add(1, Ordering::Relaxed);
        if trip == Trip::Now {
            self.escalations.fetch_add(1, Ordering::Relaxed);
        }
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |since| {
                u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
            });
        self.last_judged_ms.store(now, Ordering::Relaxed);
    }

    /// `n` signals more (or, negative, fewer) wait to be judged.
    pub fn queued(&self, n: i64) {
        self.queued.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts a task as being judged for the guard's life.
    pub fn judging(&self) -> Judging<'_> {
        self.running.fetch_add(1, Ordering::Relaxed);
        Judging(self)
    }

    /// A gate of `rule` (its kind) ran for `duration_ms`.
    pub fn gate_ran(&self, rule: &str, duration_ms: u64) {
        let mut gates = self.gates.lock().unwrap_or_else(|p| p.into_inner());
        if !gates.contains_key(rule) && gates.len() >= MAX_RULES {
            return;
        }
        let histogram = gates.entry(rule.to_owned()).or_default();
        if let Some(bucket) = BUCKETS_MS.iter().position(|&le| duration_ms <= le) {
            histogram.buckets[bucket] += 1;
        }
        histogram.count += 1;
        histogram.sum_ms = histogram.sum_ms.saturating_add(duration_ms);
    }

    /// Counts the open approval requests of this state directory from now on.
    pub fn count_approvals(&self, state: &std::path::Path) {
        let _ = self.approvals.set(state.to_path_buf());
    }

    /// Every metric in the text exposition format 0.0.4.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(4096);
        family(
            &mut out,
            "validator_build_info",
            "gauge",
            "The version of the validator serving these metrics (always 1).",
        );
        let _ = writeln!(
            out,
            "validator_build_info{{version=\"{}\"}} 1",
            escape(self.version)
        );
        family(
            &mut out,
            "validator_verdicts_total",
            "counter",
            "Verdicts published since the watcher started, by decision.",
        );
        for decision in DECISIONS {
            let _ = writeln!(
                out,
                "validator_verdicts_total{{decision=\"{}\"}} {}",
                escape(decision.as_str()),
                self.verdicts[index(decision)].load(Ordering::Relaxed)
            );
        }
        let approvals = self.approvals.get().map_or(0, |state| {
            validator::approvals::Store::new(state).count_pending()
        });
        let single: [(&str, &str, &str, String); 5] = [
            (
                "validator_escalations_total",
                "counter",
                "Tasks a circuit breaker escalated (max_attempts or strikes) since the watcher started; a held task's later ESCALATED answers are not counted again.",
                self.escalations.load(Ordering::Relaxed).to_string(),
            ),
            (
                "validator_queue_depth",
                "gauge",
                "Signals waiting to be judged: handed to the workers and not yet taken, or asking for one more run of a task being judged.",
                self.queued.load(Ordering::Relaxed).max(0).to_string(),
            ),
            (
                "validator_running_tasks",
                "gauge",
                "Tasks being judged now.",
                self.running.load(Ordering::Relaxed).max(0).to_string(),
            ),
            (
                "validator_last_judge_timestamp_seconds",
                "gauge",
                "When the last verdict was published, in seconds since the Unix epoch (0: none yet).",
                seconds(self.last_judged_ms.load(Ordering::Relaxed)),
            ),
            (
                "validator_approvals_pending",
                "gauge",
                "Tool calls waiting for a person's approval (`validator approvals`), not yet answered or expired.",
                approvals.to_string(),
            ),
        ];
        for (name, kind, help, value) in single {
            family(&mut out, name, kind, help);
            let _ = writeln!(out, "{name} {value}");
        }
        self.render_speculative(&mut out);
        let name = "validator_gate_duration_seconds";
        family(
            &mut out,
            name,
            "histogram",
            "How long gates ran, by rule (the gate's kind, not its name); gates answered from the cache are not counted.",
        );
        let gates = self.gates.lock().unwrap_or_else(|p| p.into_inner()).clone();
        for (rule, histogram) in &gates {
            let rule = escape(rule);
            let mut cumulative = 0;
            for (le, in_bucket) in BUCKETS_MS.iter().zip(histogram.buckets) {
                cumulative += in_bucket;
                let _ = writeln!(
                    out,
                    "{name}_bucket{{rule=\"{rule}\",le=\"{}\"}} {cumulative}",
                    seconds(*le)
                );
            }
            let count = histogram.count;
            let _ = writeln!(
                out,
                "{name}_bucket{{rule=\"{rule}\",le=\"+Inf\"}} {count}\n{name}_sum{{rule=\"{rule}\"}} {}\n{name}_count{{rule=\"{rule}\"}} {count}",
                seconds(histogram.sum_ms),
            );
        }
        out
    }
}

impl Metrics {
    fn render_speculative(&self, out: &mut String) {
        let tally = self.speculative.tally();
        let name = "validator_speculative_runs_total";
        family(
            out,
            name,
            "counter",
            "Speculative runs (a task's lint and test gates run while its worker is still writing): started, used at done, cancelled by a change to the task's files, discarded (they saw other files than the done signal's).",
        );
        for (outcome, count) in [
            ("started", tally.started),
            ("used", tally.used),
            ("cancelled", tally.cancelled),
            ("discarded", tally.discarded),
        ] {
            let _ = writeln!(out, "{name}{{outcome=\"{outcome}\"}} {count}");
        }
        let name = "validator_speculative_cpu_seconds_total";
        family(
            out,
            name,
            "counter",
            "CPU seconds the speculative runs spent (their commands and their own thread).",
        );
        let _ = writeln!(out, "{name} {}", seconds(tally.cpu_ms));
    }
}

/// What speculation cost and gave, since the watcher started.
#[derive(Debug, Default)]
pub struct Counts {
    pub started: AtomicU64,
    pub used: AtomicU64,
    pub cancelled: AtomicU64,
    pub discarded: AtomicU64,
    pub cpu_micros: AtomicU64,
}

/// [`Counts`] read at one moment, as `status` shows them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    pub started: u64,
    pub used: u64,
    pub cancelled: u64,
    pub discarded: u64,
    pub cpu_ms: u64,
}

impl Counts {
    pub fn tally(&self) -> Tally {
        Tally {
            started: self.started.load(Ordering::Relaxed),
            used: self.used.load(Ordering::Relaxed),
            cancelled: self.cancelled.load(Ordering::Relaxed),
            discarded: self.discarded.load(Ordering::Relaxed),
            cpu_ms: self.cpu_micros.load(Ordering::Relaxed) / 1000,
        }
    }
}

/// A metric family's `# HELP` and `# TYPE` lines (the help texts hold no backslash or line
/// break, which would need escaping).
fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// The gates the engine runs: each that ran (not one the cache answered, nor one left out)
/// goes into its rule's histogram.
impl Observer for Metrics {
    fn gate_finished(&self, _task: &Task, report: &GateReport) {
        if !matches!(report.outcome, GateOutcome::Cached | GateOutcome::Skipped) {
            self.gate_ran(&report.rule, report.duration_ms);
        }
    }
}

/// Milliseconds as seconds, the shortest decimal that says them exactly: `0.01`, `2.5`, `60`.
fn seconds(ms: u64) -> String {
    let (whole, fraction) = (ms / 1000, ms % 1000);
    if fraction == 0 {
        return whole.to_string();
    }
    let fraction = format!("{fraction:03}");
    format!("{whole}.{}", fraction.trim_end_matches('0'))
}

/// A label value as the exposition format quotes it: backslash, double quote and line feed
/// escaped.
fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_decision_is_there_from_the_start_at_zero() {
        let text = Metrics::default().render();
        for decision in ["PASS", "FAIL", "BLOCKED", "ESCALATED", "ERROR"] {
            assert!(
                text.contains(&format!(
                    "validator_verdicts_total{{decision=\"{decision}\"}} 0\n"
                )),
                "{text}"
            );
        }
        for line in [
            "# TYPE validator_verdicts_total counter\n",
            "# TYPE validator_gate_duration_seconds histogram\n",
            "validator_escalations_total 0\n",
            "validator_queue_depth 0\n",
            "validator_running_tasks 0\n",
            "validator_last_judge_timestamp_seconds 0\n",
            "validator_approvals_pending 0\n",
            &format!(
                "validator_build_info{{version=\"{}\"}} 1\n",
                env!("CARGO_PKG_VERSION")
            ),
        ] {
            assert!(text.contains(line), "{line}\n{text}");
        }
    }

    #[test]
    fn the_approvals_gauge_counts_open_requests() {
        let dir = tempfile::tempdir().unwrap();
        let metrics = Metrics::default();
        metrics.count_approvals(dir.path());
        let input = serde_json::json!({"command": "git push"});
        let draft = validator::approvals::Draft {
            session: "s",
            agent: "codex",
            tool: "Bash",
            input: &input,
            command: "git push",
            reason: "r",
            open_for: std::time::Duration::from_secs(60),
        };
        validator::approvals::Store::new(dir.path())
            .create(&draft, None)
            .unwrap();
        assert!(metrics.render().contains("validator_approvals_pending 1\n"));
    }

    #[test]
    fn every_family_has_help_and_type_before_its_samples() {
        let metrics = Metrics::default();
        metrics.gate_ran("lint", 1);
        let text = metrics.render();
        let mut typed = Vec::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                typed.push(rest.split(' ').next().unwrap().to_owned());
                continue;
            }
            if line.starts_with("# HELP ") {
                continue;
            }
            let name = line.split(['{', ' ']).next().unwrap();
            let family = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| name.strip_suffix(s))
                .filter(|f| typed.last().is_some_and(|t| t == f))
                .unwrap_or(name);
            assert_eq!(typed.last().map(String::as_str), Some(family), "{line}");
            assert!(line.starts_with("validator_"), "{line}");
        }
        assert_eq!(text.matches("# HELP ").count(), typed.len());
    }

    #[test]
    fn verdicts_escalations_queue_and_running_are_counted() {
        let metrics = Metrics::default();
        metrics.published(Decision::Pass, Trip::NotNow);
        metrics.published(Decision::Fail, Trip::NotNow);
        metrics.published(Decision::Fail, Trip::NotNow);
        metrics.published(Decision::Escalated, Trip::Now);
        metrics.published(Decision::Escalated, Trip::NotNow);
        metrics.queued(3);
        metrics.queued(-1);
        let judging = metrics.judging();
        let text = metrics.render();
        for line in [
            "validator_verdicts_total{decision=\"PASS\"} 1\n",
            "validator_verdicts_total{decision=\"FAIL\"} 2\n",
            "validator_verdicts_total{decision=\"ESCALATED\"} 2\n",
            "validator_escalations_total 1\n",
            "validator_queue_depth 2\n",
            "validator_running_tasks 1\n",
        ] {
            assert!(text.contains(line), "{line}\n{text}");
        }
        drop(judging);
        assert!(metrics.render().contains("validator_running_tasks 0\n"));
        let stamp: f64 = metrics
            .render()
            .lines()
            .find_map(|l| l.strip_prefix("validator_last_judge_timestamp_seconds "))
            .unwrap()
            .parse()
            .unwrap();
        assert!(stamp > 1.6e9, "{stamp}");
    }

    #[test]
    fn gate_durations_are_a_cumulative_histogram_by_rule() {
        let metrics = Metrics::default();
        metrics.gate_ran("exists", 3);
        metrics.gate_ran("lint", 700);
        metrics.gate_ran("lint", 2_500);
        metrics.gate_ran("lint", 3_600_000);
        let text = metrics.render();
        for line in [
            "validator_gate_duration_seconds_bucket{rule=\"exists\",le=\"0.01\"} 1\n",
            "validator_gate_duration_seconds_sum{rule=\"exists\"} 0.003\n",
            "validator_gate_duration_seconds_bucket{rule=\"lint\",le=\"0.5\"} 0\n",
            "validator_gate_duration_seconds_bucket{rule=\"lint\",le=\"1\"} 1\n",
            "validator_gate_duration_seconds_bucket{rule=\"lint\",le=\"2.5\"} 2\n",
            "validator_gate_duration_seconds_bucket{rule=\"lint\",le=\"600\"} 2\n",
            "validator_gate_duration_seconds_bucket{rule=\"lint\",le=\"+Inf\"} 3\n",
            "validator_gate_duration_seconds_sum{rule=\"lint\"} 3603.2\n",
            "validator_gate_duration_seconds_count{rule=\"lint\"} 3\n",
        ] {
            assert!(text.contains(line), "{line}\n{text}");
        }
    }

    #[test]
    fn cached_and_skipped_gates_are_not_timed() {
        let metrics = Metrics::default();
        let task = Task::new("t", std::path::Path::new(".")).unwrap();
        let report = |outcome| GateReport {
            name: "g".into(),
            rule: "lint".into(),
            outcome,
            duration_ms: 5,
            exit_code: None,
            summary: String::new(),
            findings: Vec::new(),
            output_tail: None,
            fix: None,
            changed_files: None,
            failed_tests: Vec::new(),
        };
        metrics.gate_finished(&task, &report(GateOutcome::Cached));
        metrics.gate_finished(&task, &report(GateOutcome::Skipped));
        assert!(!metrics.render().contains("rule=\"lint\""));
        metrics.gate_finished(&task, &report(GateOutcome::Fail));
        assert!(
            metrics
                .render()
                .contains("validator_gate_duration_seconds_count{rule=\"lint\"} 1\n")
        );
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
        let metrics = Metrics::default();
        metrics.gate_ran("we\"ird\n", 1);
        assert!(
            metrics
                .render()
                .contains("validator_gate_duration_seconds_count{rule=\"we\\\"ird\\n\"} 1\n")
        );
    }

    #[test]
    fn the_rules_a_histogram_keeps_are_bounded() {
        let metrics = Metrics::default();
        for n in 0..MAX_RULES + 10 {
            metrics.gate_ran(&format!("r{n}"), 1);
        }
        let text = metrics.render();
        assert_eq!(text.matches("_count{").count(), MAX_RULES);
    }

    #[test]
    fn seconds_are_the_shortest_exact_decimal() {
        for (ms, text) in [
            (0, "0"),
            (10, "0.01"),
            (250, "0.25"),
            (1_000, "1"),
            (2_500, "2.5"),
            (1_234, "1.234"),
        ] {
            assert_eq!(seconds(ms), text);
        }
    }
}
