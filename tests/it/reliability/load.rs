//! A burst of signals, written as fast as the test can, straight into their done files as a
//! worker would: every one must get its own current verdict (the right one for its task), run
//! exactly once. And signals the OS could not even report: written while the watcher is
//! stopped, behind more events than inotify's queue holds, so it must rescan.

use std::collections::BTreeSet;
use std::fs;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::reliability::harness::Sidecar;

const RULES: &str = r#"version: 1
staging: staging
verdicts: verdicts
state: state
pipelines:
  - name: main
    gates:
      - {name: status, rule: status}
      - {name: out, rule: exists, paths: ["out.txt"]}
"#;

/// Even tasks have `out.txt` and pass; odd ones fail.
fn expected(i: usize) -> &'static str {
    if i % 2 == 0 { "PASS" } else { "FAIL" }
}

fn burst(n: usize, args: &[&str]) {
    let mut w = Sidecar::new(RULES);
    let tasks: Vec<String> = (0..n).map(|i| format!("t{i:05}")).collect();
    for (i, task) in tasks.iter().enumerate() {
        if expected(i) == "PASS" {
            w.task(task, &[("out.txt", "x")]);
        } else {
            w.task(task, &[]);
        }
    }
    w.start(args);
    let started = Instant::now();
    for task in &tasks {
        fs::write(w.done_path(task), "STATUS: OK\n").expect("done file");
    }
    let written = started.elapsed();
    let all: BTreeSet<String> = tasks.iter().cloned().collect();
    // Generous for a debug build on a loaded 2-core machine; a lost signal never arrives.
    let bound = Duration::from_secs(120 + n as u64 / 20);
    w.wait_current(&all, bound, &format!("a burst of {n} signals"));
    let elapsed = started.elapsed();

    let statuses = w.status();
    for (i, task) in tasks.iter().enumerate() {
        let status = listed(&statuses, task);
        assert_eq!(status["verdict"], expected(i), "{task}: {status}");
        assert_eq!(status["attempt"], 1, "{task}: {status}");
    }
    let events = w.events();
    let count = |name: &str| {
        let mut per_task = std::collections::HashMap::<&str, usize>::new();
        for event in events.iter().filter(|e| e["event"] == name) {
            *per_task
                .entry(event["task"].as_str().expect("a task"))
                .or_default() += 1;
        }
        per_task
    };
    for name in ["run_started", "verdict_written"] {
        let per_task = count(name);
        assert_eq!(per_task.len(), n, "{name}: not every task");
        let twice: Vec<_> = per_task.iter().filter(|(_, c)| **c != 1).take(5).collect();
        assert!(twice.is_empty(), "{name} more than once: {twice:?}");
    }
    let overflow = |e: &Value| {
        e["details"]["watcher"]
            .as_str()
            .is_some_and(|w| w.contains("overflow"))
    };
    let overflows = events
        .iter()
        .filter(|e| e["event"] == "error" && overflow(e))
        .count();
    let other_errors: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "error" && !overflow(e))
        .take(5)
        .collect();
    assert!(other_errors.is_empty(), "{other_errors:?}");
    assert!(w.running(), "{}", w.logs());
    eprintln!(
        "load: {n} signals ({}) written in {written:.1?}, all {n} current verdicts after \
         {elapsed:.1?} ({:.0} verdicts/s), 0 lost, each run once; {overflows} event-queue \
         overflows rescanned",
        args.join(" "),
        n as f64 / elapsed.as_secs_f64()
    );
}

/// The watcher is stopped (SIGSTOP) while more file events than inotify's queue holds pile up
/// in staging, then the signals; once it runs again, the queue has overflowed and only the
/// rescan can find them.
#[test]
fn signals_behind_an_event_queue_overflow_are_not_lost() {
    let queue: usize = fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .ok()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(16384);
    let mut w = Sidecar::new(RULES);
    let tasks: Vec<String> = (0..200).map(|i| format!("t{i:05}")).collect();
    for (i, task) in tasks.iter().enumerate() {
        if expected(i) == "PASS" {
            w.task(task, &[("out.txt", "x")]);
        } else {
            w.task(task, &[]);
        }
    }
    w.start(&["--jobs", "2"]);
    let signal = |sig: &str| {
        let status = std::process::Command::new("kill")
            .args([sig, &w.pid().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill {sig}");
    };
    signal("-STOP");
    // Two files written in turn: identical events in a row would be merged into one.
    for i in 0..queue {
        fs::write(w.staging().join(format!("noise-{}", i % 2)), i.to_string()).expect("noise");
    }
    for task in &tasks {
        fs::write(w.done_path(task), "STATUS: OK\n").expect("done file");
    }
    signal("-CONT");
    let all: BTreeSet<String> = tasks.iter().cloned().collect();
    w.wait_current(&all, Duration::from_secs(120), "signals behind an overflow");
    let statuses = w.status();
    for (i, task) in tasks.iter().enumerate() {
        let status = listed(&statuses, task);
        assert_eq!(status["verdict"], expected(i), "{task}: {status}");
    }
    let overflowed = w.events().iter().any(|e| {
        e["event"] == "error"
            && e["details"]["watcher"]
                .as_str()
                .is_some_and(|w| w.contains("overflow"))
    });
    assert!(overflowed, "the queue did not overflow\n{}", w.logs());
}

#[test]
fn a_burst_of_1000_signals_loses_none() {
    burst(1000, &["--jobs", "2"]);
}

#[test]
fn polling_a_burst_of_1000_signals_loses_none() {
    burst(1000, &["--jobs", "2", "--poll", "200ms"]);
}

#[test]
#[ignore = "long: cargo test --release --test it reliability:: -- --ignored"]
fn a_burst_of_10000_signals_loses_none() {
    burst(10_000, &["--jobs", "2"]);
}

#[test]
#[ignore = "long: cargo test --release --test it reliability:: -- --ignored"]
fn polling_a_burst_of_10000_signals_loses_none() {
    burst(10_000, &["--jobs", "2", "--poll", "200ms"]);
}

/// `task`'s entry in `validator status --format json`.
fn listed<'a>(statuses: &'a [Value], task: &str) -> &'a Value {
    statuses
        .iter()
        .find(|s| s["task"] == task)
        .unwrap_or_else(|| panic!("{task} is not listed"))
}
