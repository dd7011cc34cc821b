//! `kill -9` at random moments: a real `validator watch` judges signals as they arrive and is
//! SIGKILLed mid-run (sometimes again while it restarts), then started again; once it is quiet,
//! every signal must have exactly one current verdict that parses and answers its done file,
//! attempts must not have been counted twice, the event log must read back, and no process a
//! gate started may still be running.
//!
//! Each gate leaves a daemon behind that ignores SIGTERM: a watcher that dies cannot kill its
//! gates' process groups, so these daemons outlive it, and only the next watcher (which kills
//! what a predecessor on the same state directory left running) can end them.

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::reliability::harness::{
    MARK_VAR, MarkGuard, Rng, Sidecar, assert_ids_increase, describe, sha256_hex, survivors,
    survivors_after_settling, unique_mark,
};

const TASKS: usize = 24;
const ARGS: &[&str] = &["--jobs", "2"];

/// A status gate, then a gate that takes 10-90 ms, starts a daemon that ignores SIGTERM, and
/// passes if the task made `out.txt`. The breakers are out of the way: every verdict is PASS
/// or FAIL, decided by the task's files alone.
fn rules(mark: &str) -> String {
    format!(
        r#"version: 1
staging: staging
verdicts: verdicts
state: state
defaults: {{max_attempts: 100000, strikes: 100000, timeout: 2m}}
pipelines:
  - name: main
    gates:
      - {{name: status, rule: status}}
      - name: work
        rule: test
        run: ["sh", "-c", "sleep 0.0$(($$ % 9 + 1)); (trap '' TERM; exec sleep 600) & test -f out.txt"]
        env: {{{MARK_VAR}: "{mark}"}}
"#
    )
}

fn task_name(i: usize) -> String {
    format!("t{i:02}")
}

/// Tasks with `out.txt` pass; every third one has none and fails.
fn expected(task: &str) -> &'static str {
    let i: usize = task[1..].parse().expect("a task number");
    if i % 3 == 0 { "FAIL" } else { "PASS" }
}

/// Writes a done file as a worker would: atomically through a rename, or straight in.
fn write_signal(path: &Path, body: &str, atomic: bool) {
    if atomic {
        let temp = path.with_file_name(format!(".test-tmp-{}", std::process::id()));
        fs::write(&temp, body).expect("write temp signal");
        fs::rename(&temp, path).expect("rename signal");
    } else {
        fs::write(path, body).expect("write signal");
    }
}

/// What the test knows about each signalled task.
#[derive(Default, Clone, Copy)]
struct Seen {
    /// Done-file versions written so far.
    versions: u64,
    /// Versions and attempt at the last check.
    checked_versions: u64,
    checked_attempt: u64,
}

fn crash_and_restart(iterations: usize) {
    let (mut rng, seed) = Rng::from_env("VALIDATOR_CRASH_SEED");
    let replay = format!("replay with VALIDATOR_CRASH_SEED={seed}");
    let mark = unique_mark("crash");
    let _guard = MarkGuard(mark.clone());
    let mut w = Sidecar::new(&rules(&mark));
    for i in 0..TASKS {
        let files: &[(&str, &str)] = if i % 3 == 0 { &[] } else { &[("out.txt", "x")] };
        w.task(&task_name(i), files);
    }
    let mut seen: HashMap<String, Seen> = HashMap::new();
    let (mut crashes, mut startup_crashes, mut signals, mut orphaned) = (0, 0, 0, 0);
    let started = Instant::now();
    w.start(ARGS);
    for iteration in 1..=iterations {
        let context = format!("iteration {iteration} ({replay})");
        // Signals arrive while the watcher judges the earlier ones...
        for _ in 0..1 + rng.below(8) {
            let task = task_name(rng.below(TASKS as u64) as usize);
            let entry = seen.entry(task.clone()).or_default();
            entry.versions += 1;
            let body = format!("STATUS: OK\nSUMMARY: {task} version {}\n", entry.versions);
            write_signal(&w.done_path(&task), &body, rng.below(2) == 0);
            signals += 1;
            std::thread::sleep(rng.millis(20));
        }
        // ...and at a random moment it dies.
        std::thread::sleep(rng.millis(300));
        w.kill9();
        crashes += 1;
        orphaned += survivors(&mark).len();
        if rng.below(3) == 0 {
            // Killed again while starting: during its rescan of the pending signals.
            w.spawn(ARGS);
            std::thread::sleep(rng.millis(150));
            w.kill9();
            crashes += 1;
            startup_crashes += 1;
        }
        w.start(ARGS);
        let signalled: BTreeSet<String> = seen.keys().cloned().collect();
        w.wait_current(&signalled, Duration::from_secs(120), &context);
        check_invariants(&w, &mut seen, &context);
        let left = survivors_after_settling(&mark);
        assert!(
            left.is_empty(),
            "{context}: {} gate processes outlived the crashed watcher and its restart:\n{}\n{}",
            left.len(),
            describe(&left),
            w.logs()
        );
        assert!(w.running(), "{context}: the watcher died\n{}", w.logs());
    }
    let stderr = w.stderr();
    assert!(!stderr.contains("panicked"), "{stderr}");
    let killed_at_start: u64 = w
        .events()
        .iter()
        .filter(|e| e["event"] == "orphans_killed")
        .filter_map(|e| e["details"]["processes"].as_u64())
        .sum();
    if orphaned > 0 {
        assert!(killed_at_start > 0, "orphans were seen but none was killed");
    }
    eprintln!(
        "crash: {iterations} iterations, {crashes} SIGKILLs ({startup_crashes} while starting), \
         {signals} signals to {} tasks, {orphaned} gate processes found running after the \
         SIGKILLs, {killed_at_start} killed by the restarted watcher, 0 survivors, every \
         signal one current verdict, in {:.1?} ({replay})",
        seen.len(),
        started.elapsed()
    );
}

/// Everything a user relies on after a crash, checked on disk once the watcher is quiet.
fn check_invariants(w: &Sidecar, seen: &mut HashMap<String, Seen>, context: &str) {
    // Exactly one verdict (and its feedback) per signalled task, and no leftover temp file.
    let mut expected_files: Vec<String> = seen
        .keys()
        .flat_map(|t| [format!("{t}.feedback.md"), format!("{t}.verdict.json")])
        .collect();
    expected_files.sort();
    let mut files: Vec<String> = fs::read_dir(w.verdicts())
        .expect("verdicts dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files, expected_files, "{context}: the verdicts directory");

    for (task, seen) in seen.iter_mut() {
        let done = fs::read(w.done_path(task)).expect("done file");
        let verdict: Value =
            serde_json::from_slice(&fs::read(w.verdict_path(task)).expect("verdict"))
                .unwrap_or_else(|err| panic!("{context}: {task}'s verdict does not parse: {err}"));
        assert_eq!(verdict["schema"], "validator.verdict/v1", "{context}");
        assert_eq!(verdict["task"], task.as_str(), "{context}");
        assert_eq!(
            verdict["signal"]["sha256"].as_str(),
            Some(sha256_hex(&done).as_str()),
            "{context}: {task}'s verdict answers another signal"
        );
        assert_eq!(
            verdict["verdict"],
            expected(task),
            "{context}: {task}: {verdict:#}"
        );
        let feedback =
            fs::read_to_string(w.verdicts().join(format!("{task}.feedback.md"))).expect("feedback");
        assert!(
            feedback.contains(expected(task)) && feedback.lines().count() <= 60,
            "{context}: {task}'s feedback:\n{feedback}"
        );

        // A crash never counts an attempt twice: a PASS resets the count to 1, and a FAIL
        // counts each new signal once, whether or not it was judged before the crash.
        let attempt = verdict["attempt"].as_u64().expect("attempt");
        let new_versions = seen.versions - seen.checked_versions;
        if expected(task) == "PASS" {
            assert_eq!(attempt, 1, "{context}: {task}: {verdict:#}");
        } else {
            let counted = attempt - seen.checked_attempt;
            assert!(
                new_versions == 0 && counted == 0 || (1..=new_versions).contains(&counted),
                "{context}: {task} went from attempt {} to {attempt} over {new_versions} new signals",
                seen.checked_attempt
            );
        }
        seen.checked_versions = seen.versions;
        seen.checked_attempt = attempt;

        let state: Value = serde_json::from_slice(
            &fs::read(w.state().join("tasks").join(format!("{task}.json"))).expect("state"),
        )
        .unwrap_or_else(|err| panic!("{context}: {task}'s state does not parse: {err}"));
        assert_eq!(
            state["attempt"].as_u64(),
            Some(attempt),
            "{context}: {state:#}"
        );
        assert_eq!(state["judged"], state["signal"], "{context}: {state:#}");
    }
    let leftovers: Vec<String> = fs::read_dir(w.state().join("tasks"))
        .expect("state/tasks")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| !name.ends_with(".json"))
        .collect();
    assert!(leftovers.is_empty(), "{context}: {leftovers:?}");

    let events = w.events();
    assert_ids_increase(&events);
    for event in &events {
        if let Some(task) = event["task"].as_str() {
            assert!(seen.contains_key(task), "{context}: {event}");
        }
    }
}

#[test]
fn ten_crashes_lose_nothing_and_leave_nothing_running() {
    crash_and_restart(10);
}

#[test]
#[ignore = "long: cargo test --release --test it reliability:: -- --ignored"]
fn a_hundred_crashes_lose_nothing_and_leave_nothing_running() {
    crash_and_restart(100);
}

/// Killing another watcher's gates at start is safe only if no other watcher uses the state
/// directory: a second one is refused, naming the first, and the first carries on.
#[test]
fn a_second_watcher_on_the_same_state_directory_is_refused() {
    let mark = unique_mark("second");
    let _guard = MarkGuard(mark.clone());
    let mut w = Sidecar::new(&rules(&mark));
    w.task(&task_name(1), &[("out.txt", "x")]);
    w.start(ARGS);
    let second = assert_cmd::Command::new(crate::reliability::harness::BIN)
        .arg("watch")
        .arg("-c")
        .arg(w.rules_path())
        .env_remove("VALIDATOR_CONFIG")
        .timeout(Duration::from_secs(60))
        .output()
        .expect("run a second watcher");
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("another `validator watch` (pid {},", w.pid())),
        "{stderr}"
    );
    assert!(w.running(), "{}", w.logs());
    let task: BTreeSet<String> = [task_name(1)].into();
    write_signal(&w.done_path(&task_name(1)), "STATUS: OK\n", true);
    w.wait_current(
        &task,
        Duration::from_secs(60),
        "after a refused second watcher",
    );
}
