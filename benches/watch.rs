//! Watcher benchmark: signal -> verdict latency, burst throughput, idle CPU and peak RSS of a
//! real `validator watch` process (release build), beside two peers measured in the same run:
//! the file-notification floor (write a file, see the event) and a naive sidecar that spawns
//! `validator check` for each signal.
//!
//! Run: `cargo bench --bench watch` (or `bench/watch.sh`). `IDLE_SECS` sets the idle window
//! (default 60).

// Tests and benchmarks unwrap, expect and panic: a failed one is how they say so.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use notify::{EventKind, RecursiveMode, Watcher};

const LATENCY_SIGNALS: usize = 300;
const BURST: usize = 1000;
const IDLE_TASKS: usize = 1000;

fn main() {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_validator"));
    let idle_secs: u64 = std::env::var("IDLE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("# validator watch benchmark");
    println!("machine: {cores} cores; binary: {}", exe.display());

    let floor = notification_floor();
    let naive = spawn_check_per_signal(&exe);

    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path();
    fs::write(
        root.join("validator.yaml"),
        "version: 1\nstaging: staging\nverdicts: verdicts\nstate: state\npipelines:\n  - name: trivial\n    gates:\n      - name: status\n        rule: status\n",
    )
    .expect("rules");
    fs::create_dir_all(root.join("staging")).expect("staging");
    fs::create_dir_all(root.join("verdicts")).expect("verdicts");
    let mut watcher = start(&exe, root);

    let latencies = latency(root, "lat", LATENCY_SIGNALS);
    let (p50, p99) = percentiles(&latencies);
    let (floor50, _) = percentiles(&floor);
    let (naive50, _) = percentiles(&naive);

    let burst = throughput(root, BURST);

    for i in 0..IDLE_TASKS {
        fs::create_dir_all(root.join("staging").join(format!("idle{i:04}"))).expect("task dir");
    }
    std::thread::sleep(Duration::from_secs(1));
    let before = cpu_seconds(watcher.id());
    std::thread::sleep(Duration::from_secs(idle_secs));
    let idle_cpu = cpu_seconds(watcher.id()) - before;
    let rss_kib = peak_rss_kib(watcher.id());
    let _ = watcher.kill();
    let _ = watcher.wait();

    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!();
    println!("| measure | validator watch | peer | ratio | target |");
    println!("|---|---|---|---|---|");
    println!(
        "| signal -> verdict p50 | {:.2} ms | notification floor {:.2} ms; spawn `check` per signal {:.2} ms | {:.1}x floor, {:.2}x spawn | <= 20 ms |",
        ms(p50),
        ms(floor50),
        ms(naive50),
        ms(p50) / ms(floor50).max(0.001),
        ms(p50) / ms(naive50).max(0.001)
    );
    println!(
        "| signal -> verdict p99 | {:.2} ms | | | <= 50 ms |",
        ms(p99)
    );
    println!("| burst of {BURST} signals | {burst:.0} verdicts/s | | | >= 500/s |");
    println!(
        "| idle CPU, {idle_secs} s, {IDLE_TASKS} task dirs | {:.1} ms ({:.2} ms/min) | | | < 1 ms/min |",
        idle_cpu * 1000.0,
        idle_cpu * 1000.0 * 60.0 / idle_secs as f64
    );
    println!(
        "| peak RSS | {:.1} MB | | | <= 60 MB |",
        rss_kib as f64 / 1024.0
    );
}

fn start(exe: &Path, root: &Path) -> Child {
    let child = Command::new(exe)
        .args(["watch", "-c"])
        .arg(root.join("validator.yaml"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start watcher");
    let events = root.join("state/events.jsonl");
    let started = Instant::now();
    while !events.exists() && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(200));
    child
}

/// Writes a done file the way `validator signal` does: a temporary file renamed into place.
fn signal(staging: &Path, task: &str) {
    let temp = staging.join(format!(".tmp-{task}"));
    fs::write(&temp, "STATUS: OK\n").expect("write signal");
    fs::rename(&temp, staging.join(format!("{task}.done"))).expect("rename signal");
}

/// A channel that receives the names of files created or renamed into `dir`.
fn arrivals(dir: &Path) -> (notify::RecommendedWatcher, mpsc::Receiver<String>) {
    let (tx, rx) = mpsc::channel();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(event) = event {
            if matches!(event.kind, EventKind::Create(_) | EventKind::Modify(_)) {
                for path in event.paths {
                    if let Some(name) = path.file_name() {
                        let _ = tx.send(name.to_string_lossy().into_owned());
                    }
                }
            }
        }
    })
    .expect("watcher");
    watcher
        .watch(dir, RecursiveMode::NonRecursive)
        .expect("watch");
    (watcher, rx)
}

fn wait_for(rx: &mpsc::Receiver<String>, name: &str) {
    loop {
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(seen) if seen == name => return,
            Ok(_) => {}
            Err(_) => panic!("no {name} within 30 s"),
        }
    }
}

fn latency(root: &Path, prefix: &str, count: usize) -> Vec<Duration> {
    let (_watcher, rx) = arrivals(&root.join("verdicts"));
    let staging = root.join("staging");
    (0..count)
        .map(|i| {
            let task = format!("{prefix}{i:04}");
            let started = Instant::now();
            signal(&staging, &task);
            wait_for(&rx, &format!("{task}.verdict.json"));
            started.elapsed()
        })
        .collect()
}

fn throughput(root: &Path, count: usize) -> f64 {
    let (_watcher, rx) = arrivals(&root.join("verdicts"));
    let staging = root.join("staging");
    let started = Instant::now();
    for i in 0..count {
        signal(&staging, &format!("burst{i:04}"));
    }
    let mut seen = std::collections::HashSet::new();
    while seen.len() < count {
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(name) if name.starts_with("burst") && name.ends_with(".verdict.json") => {
                seen.insert(name);
            }
            Ok(_) => {}
            Err(_) => panic!("only {} of {count} verdicts within 60 s", seen.len()),
        }
    }
    count as f64 / started.elapsed().as_secs_f64()
}

/// The floor any watcher pays: write a file, receive its notification.
fn notification_floor() -> Vec<Duration> {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_watcher, rx) = arrivals(dir.path());
    (0..LATENCY_SIGNALS)
        .map(|i| {
            let task = format!("floor{i:04}");
            let started = Instant::now();
            signal(dir.path(), &task);
            wait_for(&rx, &format!("{task}.done"));
            started.elapsed()
        })
        .collect()
}

/// A naive sidecar: one `validator check` process per signal.
fn spawn_check_per_signal(exe: &Path) -> Vec<Duration> {
    let dir = tempfile::tempdir().expect("temp dir");
    fs::write(
        dir.path().join("validator.yaml"),
        "version: 1\npipelines:\n  - name: trivial\n    gates:\n      - name: status\n        rule: status\n",
    )
    .expect("rules");
    fs::write(dir.path().join("t.done"), "STATUS: OK\n").expect("signal");
    (0..100)
        .map(|_| {
            let started = Instant::now();
            let status = Command::new(exe)
                .current_dir(dir.path())
                .args(["check", "--signal", "t.done", "--format", "json"])
                .stdout(Stdio::null())
                .status()
                .expect("run check");
            assert!(status.success());
            started.elapsed()
        })
        .collect()
}

fn percentiles(samples: &[Duration]) -> (Duration, Duration) {
    let mut sorted = samples.to_vec();
    sorted.sort();
    let at = |q: f64| sorted[((sorted.len() as f64 - 1.0) * q).round() as usize];
    (at(0.50), at(0.99))
}

fn cpu_seconds(pid: u32) -> f64 {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).expect("proc stat");
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .expect("stat format")
        .1
        .split_whitespace()
        .collect();
    let ticks: f64 =
        fields[11].parse::<f64>().expect("utime") + fields[12].parse::<f64>().expect("stime");
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .unwrap_or(100) as f64;
    ticks / hz
}

fn peak_rss_kib(pid: u32) -> u64 {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .expect("proc status")
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
