// The container sidecar. `validator status --health` against a real watcher process (none,
// running, SIGKILLed, stopped and wedged, a second one, a clean exit), and the hot reload a
// ConfigMap mount needs. Waiting is polling for a condition, never a guessed sleep.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, SystemTime};

use common::poll;
use serde_json::Value;
use tempfile::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_validator");
/// How long a watcher may take to start, or a condition to come true, on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(60);

/// A watcher's rules: a task passes with STATUS: OK and `out.txt`.
const RULES: &str = "version: 1\nstaging: staging\nverdicts: verdicts\nstate: state\npipelines:\n  - name: main\n    gates:\n      - {name: status, rule: status}\n      - {name: out, rule: exists, paths: [\"out.txt\"]}\n";

/// A temp project with a rules file, and (once started) a `validator watch` over it.
struct Sidecar {
    root: TempDir,
    config: PathBuf,
    child: Option<Child>,
    starts: usize,
}

impl Sidecar {
    fn new() -> Self {
        let root = tempfile::tempdir().expect("temp dir");
        let config = root.path().join("validator.yaml");
        fs::write(&config, RULES).expect("write rules");
        Sidecar::at(root, config)
    }

    fn at(root: TempDir, config: PathBuf) -> Self {
        // Logs in a subdirectory: the watcher watches the rules file's directory.
        fs::create_dir_all(root.path().join("logs")).expect("logs");
        Sidecar {
            root,
            config,
            child: None,
            starts: 0,
        }
    }

    fn path(&self) -> &Path {
        self.root.path()
    }

    fn record(&self) -> PathBuf {
        self.path().join("state/watcher.json")
    }

    fn stderr_log(&self, start: usize) -> PathBuf {
        self.path().join(format!("logs/watch-{start}.stderr"))
    }

    fn logs(&self) -> String {
        (1..=self.starts)
            .map(|s| fs::read_to_string(self.stderr_log(s)).unwrap_or_default())
            .collect()
    }

    /// `validator watch` with the rules file in VALIDATOR_CONFIG, as the image runs it; waits
    /// until it says it is watching.
    fn start(&mut self) {
        assert!(self.child.is_none(), "a watcher is already running");
        self.starts += 1;
        let log = self.stderr_log(self.starts);
        let child = self
            .command(&["watch"])
            .env("VALIDATOR_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(&log).expect("log"))
            .spawn()
            .expect("spawn validator watch");
        self.child = Some(child);
        let up = poll(PATIENCE, || {
            fs::read_to_string(&log).is_ok_and(|l| l.contains("watching"))
        });
        assert!(up, "the watcher did not start\n{}", self.logs());
    }

    /// `validator ARGS` in the logs directory (no `./validator.yaml` there), rules file from
    /// VALIDATOR_CONFIG.
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .current_dir(self.path().join("logs"))
            .env("VALIDATOR_CONFIG", &self.config)
            .env_remove("VALIDATOR_LOG")
            .env("NO_COLOR", "1");
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run validator")
    }

    /// `validator status --health`: exit code and stdout.
    fn health(&self) -> (i32, String) {
        let out = self.run(&["status", "--health"]);
        (
            out.status.code().expect("exit code"),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }

    fn health_json(&self) -> Value {
        let out = self.run(&["status", "--health", "--format", "json"]);
        serde_json::from_slice(&out.stdout).expect("health JSON")
    }

    fn pid(&self) -> i32 {
        self.child.as_ref().expect("a watcher").id() as i32
    }

    fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn signal_process(&self, signal: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid()), signal)
            .expect("signal the watcher");
    }

    /// SIGTERM, then the exit code once it exited.
    fn sigterm(&mut self) -> Option<i32> {
        self.signal_process(nix::sys::signal::Signal::SIGTERM);
        let mut child = self.child.take().expect("a watcher");
        let mut status = None;
        poll(PATIENCE, || {
            status = child.try_wait().expect("try_wait");
            status.is_some()
        });
        if status.is_none() {
            let _ = child.kill();
            let _ = child.wait();
        }
        status.and_then(|s| s.code())
    }

    fn events(&self, event: &str) -> Vec<Value> {
        fs::read_to_string(self.path().join("state/events.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| e["event"] == event)
            .collect()
    }

    /// Writes `staging/<task>/` with `files` and signals it; returns `validator wait`'s output.
    fn judge(&self, task: &str, files: &[(&str, &str)]) -> Output {
        let dir = self.path().join("staging").join(task);
        fs::create_dir_all(&dir).expect("task dir");
        for (name, body) in files {
            fs::write(dir.join(name), body).expect("task file");
        }
        let signalled = self.run(&["signal", task, "--status", "OK"]);
        assert!(signalled.status.success(), "{signalled:?}");
        self.run(&["wait", task, "--timeout", "60s", "--format", "json"])
    }
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        if self.child.is_some() {
            // A stopped watcher cannot die of SIGKILL until it is continued.
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(self.pid()),
                nix::sys::signal::Signal::SIGCONT,
            );
        }
        self.kill9();
    }
}

fn assert_one_line(text: &str) {
    assert_eq!(text.lines().count(), 1, "not one line: {text:?}");
}

// ---------------------------------------------------------------------------------------------
// `validator status --health` against a real watcher.

#[test]
fn health_is_unhealthy_with_no_watcher() {
    let s = Sidecar::new();
    let (code, out) = s.health();
    assert_eq!(code, 1, "{out}");
    assert_one_line(&out);
    assert!(out.starts_with("unhealthy: no watcher is running"), "{out}");
    let json = s.health_json();
    assert_eq!(json["healthy"], false, "{json:#}");
}

#[test]
fn health_without_a_rules_file_exits_1_not_the_runtimes_reserved_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["status", "--health"])
        .current_dir(dir.path())
        .env_remove("VALIDATOR_CONFIG")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert_one_line(&stdout);
    assert!(stdout.starts_with("unhealthy: no rules file"), "{stdout}");
}

#[test]
fn health_follows_a_watcher_from_start_to_clean_exit() {
    let mut s = Sidecar::new();
    s.start();
    let (code, out) = s.health();
    assert_eq!(code, 0, "{out}\n{}", s.logs());
    assert_one_line(&out);
    assert!(out.starts_with("healthy: "), "{out}");
    let json = s.health_json();
    assert_eq!(json["healthy"], true);
    assert_eq!(json["watcher"]["pid"], s.pid(), "{json:#}");

    assert_eq!(s.sigterm(), Some(0), "{}", s.logs());
    assert!(!s.record().exists(), "a clean exit removes the record");
    let (code, out) = s.health();
    assert_eq!(code, 1);
    assert!(out.starts_with("unhealthy: no watcher is running"), "{out}");
}

#[test]
fn a_watcher_killed_with_sigkill_reads_unhealthy_until_one_starts_again() {
    let mut s = Sidecar::new();
    s.start();
    assert_eq!(s.health().0, 0, "{}", s.logs());
    let pid = s.pid();
    s.kill9();
    // The record stays behind, with a pid that names nobody (or, later, someone else).
    assert!(s.record().exists());
    let (code, out) = s.health();
    assert_eq!(code, 1, "{out}");
    assert_one_line(&out);
    assert!(
        out.contains(&format!("pid {pid}")) && out.contains("gone without a clean exit"),
        "{out}"
    );

    // A restarted watcher (a container restart) takes the record over.
    s.start();
    let json = s.health_json();
    assert_eq!(
        (json["healthy"].as_bool(), json["watcher"]["pid"].as_i64()),
        (Some(true), Some(i64::from(s.pid()))),
        "{json:#}\n{}",
        s.logs()
    );
}

#[test]
fn a_watcher_whose_main_loop_stops_reads_wedged_then_recovers() {
    let mut s = Sidecar::new();
    s.start();
    // A stopped process holds its lock but runs nothing: as wedged as a main loop gets. The
    // heartbeat is put back 10 minutes so the test need not wait a minute for it to age.
    s.signal_process(nix::sys::signal::Signal::SIGSTOP);
    fs::File::options()
        .write(true)
        .open(s.record())
        .and_then(|f| f.set_modified(SystemTime::now() - Duration::from_secs(600)))
        .expect("backdate the heartbeat");
    let (code, out) = s.health();
    assert_eq!(code, 1, "{out}");
    assert_one_line(&out);
    assert!(out.contains("has not made progress"), "{out}");

    // Continued, the loop touches the heartbeat again on its own timer.
    s.signal_process(nix::sys::signal::Signal::SIGCONT);
    let recovered = poll(PATIENCE, || s.health().0 == 0);
    assert!(recovered, "{:?}\n{}", s.health(), s.logs());
    assert_eq!(s.sigterm(), Some(0));
}

#[test]
fn a_second_watcher_on_the_same_state_is_refused() {
    let mut s = Sidecar::new();
    s.start();
    let second = s.run(&["watch"]);
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("another `validator watch`")
            && stderr.contains(&format!("pid {}", s.pid())),
        "{stderr}"
    );
    // The refused one did not take the first one's record with it.
    let json = s.health_json();
    assert_eq!(json["watcher"]["pid"], s.pid(), "{json:#}");
    assert_eq!(s.sigterm(), Some(0));
}

#[test]
fn health_probes_do_not_reload_the_rules() {
    let mut s = Sidecar::new();
    s.start();
    for _ in 0..5 {
        assert_eq!(s.health().0, 0);
    }
    // The watcher handles file events in order: once it judged a signal made after the
    // probes, it has seen every event the probes caused.
    let waited = s.judge("t", &[("out.txt", "x")]);
    assert_eq!(waited.status.code(), Some(0), "{waited:?}\n{}", s.logs());
    assert_eq!(s.events("config_reloaded"), Vec::<Value>::new());
}

#[test]
fn a_rules_file_behind_a_swapped_link_is_reloaded_as_a_configmap_update_needs() {
    // A ConfigMap volume: validator.yaml -> ..data/validator.yaml, ..data -> ..v1; an update
    // writes ..v2 and renames a new ..data link over the old one. No event names the file.
    let root = tempfile::tempdir().unwrap();
    let conf = root.path().join("conf");
    let rules = |needs: &str| {
        format!(
            "version: 1\nstaging: {0}/staging\nverdicts: {0}/verdicts\nstate: {0}/state\npipelines:\n  - name: main\n    gates:\n      - {{name: out, rule: exists, paths: [\"{needs}\"]}}\n",
            root.path().display()
        )
    };
    for (version, needs) in [("..v1", "a.txt"), ("..v2", "b.txt")] {
        fs::create_dir_all(conf.join(version)).unwrap();
        fs::write(conf.join(version).join("validator.yaml"), rules(needs)).unwrap();
    }
    std::os::unix::fs::symlink("..v1", conf.join("..data")).unwrap();
    std::os::unix::fs::symlink("..data/validator.yaml", conf.join("validator.yaml")).unwrap();
    let config = conf.join("validator.yaml");
    let mut s = Sidecar::at(root, config);
    s.start();
    assert_eq!(s.judge("one", &[("a.txt", "x")]).status.code(), Some(0));

    std::os::unix::fs::symlink("..v2", conf.join("..data_tmp")).unwrap();
    fs::rename(conf.join("..data_tmp"), conf.join("..data")).unwrap();
    let reloaded = poll(PATIENCE, || !s.events("config_reloaded").is_empty());
    assert!(reloaded, "no reload after the link swap\n{}", s.logs());
    let waited = s.judge("two", &[("b.txt", "x")]);
    assert_eq!(waited.status.code(), Some(0), "{waited:?}");
    // The health check still knows the watcher: it recorded the path, not the link's target.
    assert_eq!(s.health().0, 0, "{:?}", s.health());
}
