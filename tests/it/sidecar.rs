// The container sidecar. `validator status --health` against a real watcher process (none,
// running, SIGKILLed, stopped and wedged, a second one, a clean exit), the hot reload a
// ConfigMap mount needs, the demo agent against a real watcher with the example's rules, and
// the invariants of the Dockerfile and the Kubernetes and Compose examples that a user relies
// on (no Docker engine is needed). Waiting is polling for a condition, never a guessed sleep.

use crate::common;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, SystemTime};

use crate::common::poll;
use serde_json::Value;
use tempfile::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_validator");
const REPO: &str = env!("CARGO_MANIFEST_DIR");
const HEALTH: [&str; 3] = ["validator", "status", "--health"];
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

// ---------------------------------------------------------------------------------------------
// The examples: the demo agent against a real watcher, and what the manifests promise.

fn example(name: &str) -> PathBuf {
    Path::new(REPO).join("examples/sidecar").join(name)
}

fn yaml(path: &Path) -> Value {
    let text = fs::read_to_string(path).expect("read example");
    yaml_serde::from_str(&text).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// The sidecar rules' `staging`, `verdicts` and `state`.
fn layout() -> (String, String, String) {
    let rules = yaml(&example("validator.yaml"));
    let get = |key: &str| rules[key].as_str().expect(key).to_owned();
    (get("staging"), get("verdicts"), get("state"))
}

#[test]
fn the_sidecar_rules_check_and_keep_verdicts_and_state_out_of_staging() {
    let out = Command::new(BIN)
        .args(["rules", "check", "-c"])
        .arg(example("validator.yaml"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let (staging, verdicts, state) = layout();
    for (what, path) in [("verdicts", &verdicts), ("state", &state)] {
        assert!(
            !Path::new(path).starts_with(&staging) && !Path::new(&staging).starts_with(path),
            "{what} ({path}) and staging ({staging}) must not nest"
        );
    }
}

#[test]
fn the_demo_agent_fails_then_fixes_its_work_against_a_real_watcher() {
    // The example's rules with its container paths moved under a temp directory.
    let root = tempfile::tempdir().unwrap();
    let base = root.path().display().to_string();
    let (staging, _, state) = layout();
    let rules = fs::read_to_string(example("validator.yaml"))
        .unwrap()
        .replace("/work/", &format!("{base}/work/"))
        .replace(&state, &format!("{base}/state"));
    let config = root.path().join("etc/validator.yaml");
    fs::create_dir_all(root.path().join("etc")).unwrap();
    fs::write(&config, rules).unwrap();
    let mut s = Sidecar::at(root, config);
    s.start();

    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("sh")
        .arg(example("agent.sh"))
        .current_dir(s.path().join("logs"))
        .env("PATH", path)
        .env("VALIDATOR_CONFIG", &s.config)
        .env("STAGING", format!("{base}{staging}"))
        .env_remove("VALIDATOR_LOG")
        .env("NO_COLOR", "1")
        .output()
        .expect("run agent.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        s.logs()
    );
    assert!(stdout.contains("attempt 1: exit 1"), "{stdout}");
    assert!(
        stdout.contains("README.md"),
        "the feedback names what is missing: {stdout}"
    );
    assert!(stdout.contains("attempt 2: exit 0"), "{stdout}");
    // What the HEALTHCHECK runs, with the image's VALIDATOR_CONFIG and nothing else.
    assert_eq!(s.health().0, 0, "{:?}", s.health());
}

/// The Dockerfile as (INSTRUCTION, arguments), continuation lines joined, comments dropped.
fn dockerfile() -> Vec<(String, String)> {
    let text = fs::read_to_string(Path::new(REPO).join("Dockerfile")).expect("Dockerfile");
    let mut instructions = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') || (trimmed.is_empty() && current.is_empty()) {
            continue;
        }
        match trimmed.strip_suffix('\\') {
            Some(part) => current += &format!("{} ", part.trim()),
            None => {
                current += trimmed;
                let (op, args) = current.split_once(' ').unwrap_or((&current, ""));
                instructions.push((op.to_uppercase(), args.trim().to_owned()));
                current.clear();
            }
        }
    }
    instructions
}

fn cargo_toml(key: &str) -> String {
    let text = fs::read_to_string(Path::new(REPO).join("Cargo.toml")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{key} = \"")))
        .and_then(|rest| rest.strip_suffix('"'))
        .unwrap_or_else(|| panic!("no {key} in Cargo.toml"))
        .to_owned()
}

fn version_tuple(version: &str) -> Vec<u32> {
    version.split('.').map(|p| p.parse().unwrap()).collect()
}

#[test]
fn the_dockerfile_builds_a_small_non_root_watch_image() {
    let ins = dockerfile();
    let all = |op: &str| -> Vec<&str> {
        ins.iter()
            .filter(|(o, _)| o == op)
            .map(|(_, a)| a.as_str())
            .collect()
    };
    let arg = |name: &str| {
        all("ARG")
            .into_iter()
            .find_map(|a| a.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("no ARG {name}="))
            .to_owned()
    };

    // Multi-stage: an official Rust builder pinned to a version the lockfile builds with.
    let froms = all("FROM");
    assert_eq!(froms.len(), 2, "{froms:?}");
    assert!(
        froms[0].starts_with("rust:${RUST_VERSION}-slim-") && froms[0].ends_with(" AS builder"),
        "{froms:?}"
    );
    let rust = version_tuple(&arg("RUST_VERSION"));
    assert_eq!(rust.len(), 3, "RUST_VERSION is an exact version");
    assert!(rust >= version_tuple(&cargo_toml("rust-version")));
    assert!(rust >= vec![1, 86, 0], "quick-xml in Cargo.lock needs 1.86");
    assert!(
        froms[1].starts_with("debian:${DEBIAN_RELEASE}-slim"),
        "{froms:?}"
    );

    // Dependencies cached in their own layer: the manifest and lockfile are copied and built
    // before the sources, and both builds are release builds from the lockfile.
    let position = |pred: &dyn Fn(&(String, String)) -> bool| ins.iter().position(pred);
    let manifest = position(&|(o, a)| o == "COPY" && a.contains("Cargo.lock")).expect("COPY lock");
    let sources = position(&|(o, a)| o == "COPY" && a.starts_with("src")).expect("COPY src");
    let builds: Vec<usize> = (0..ins.len())
        .filter(|&i| ins[i].0 == "RUN" && ins[i].1.contains("cargo build --release --locked"))
        .collect();
    assert_eq!(builds.len(), 2, "{ins:?}");
    assert!(manifest < builds[0] && builds[0] < sources && sources < builds[1]);
    assert!(
        ins[builds[0]].1.contains(".fingerprint/validator-*"),
        "the stub crate's fingerprints go, or the real sources may not be rebuilt"
    );

    // The runtime stage: the binary, git, a fixed non-root user, the watcher and its health.
    let runtime = &ins[ins.iter().rposition(|(o, _)| o == "FROM").unwrap()..];
    let in_runtime = |op: &str| -> Vec<&str> {
        runtime
            .iter()
            .filter(|(o, _)| o == op)
            .map(|(_, a)| a.as_str())
            .collect()
    };
    assert!(
        in_runtime("COPY")
            .iter()
            .any(|a| a.starts_with("--from=builder") && a.ends_with("/usr/local/bin/validator"))
    );
    let run = in_runtime("RUN").join(" ");
    for needed in ["git", "ca-certificates", "tini", "--uid 10001"] {
        assert!(run.contains(needed), "runtime stage lacks {needed}: {run}");
    }
    assert_eq!(in_runtime("USER"), ["10001:10001"]);
    assert_eq!(in_runtime("STOPSIGNAL"), ["SIGTERM"]);
    let entrypoint: Vec<String> = serde_json::from_str(in_runtime("ENTRYPOINT")[0]).unwrap();
    assert_eq!(
        entrypoint,
        ["tini", "--", "validator", "watch", "--log-format", "json"]
    );
    let healthcheck = in_runtime("HEALTHCHECK");
    let probe = healthcheck[0]
        .split_once("CMD ")
        .expect("HEALTHCHECK CMD")
        .1;
    let probe: Vec<String> = serde_json::from_str(probe).unwrap();
    assert_eq!(probe, HEALTH);
    // The probe and the watcher find the same rules file: from the environment, not `-c`.
    assert!(
        in_runtime("ENV").contains(&"VALIDATOR_CONFIG=/etc/validator/validator.yaml"),
        "{runtime:?}"
    );
    assert!(!entrypoint.iter().any(|a| a == "-c" || a == "--config"));
    let labels = in_runtime("LABEL").join(" ");
    for label in ["title", "description", "version", "licenses"] {
        assert!(
            labels.contains(&format!("org.opencontainers.image.{label}=")),
            "{labels}"
        );
    }
    assert_eq!(
        arg("VERSION"),
        cargo_toml("version"),
        "the image label's version"
    );

    // The build context is what the Dockerfile copies, and nothing else (no target/).
    let ignore = fs::read_to_string(Path::new(REPO).join(".dockerignore")).unwrap();
    let rules: Vec<&str> = ignore
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .collect();
    assert_eq!(
        rules,
        ["*", "!Cargo.toml", "!Cargo.lock", "!src/", "!benches/"]
    );
}

/// A Kubernetes container's mounts: volume name -> (mount path, read-only).
fn mounts(container: &Value) -> Vec<(String, String, bool)> {
    container["volumeMounts"]
        .as_array()
        .expect("volumeMounts")
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap().to_owned(),
                m["mountPath"].as_str().unwrap().to_owned(),
                m["readOnly"].as_bool().unwrap_or(false),
            )
        })
        .collect()
}

fn mount_of<'m>(
    mounts: &'m [(String, String, bool)],
    path: &str,
) -> Option<&'m (String, String, bool)> {
    mounts.iter().find(|(_, p, _)| p == path)
}

#[test]
fn the_pod_shares_staging_and_gives_the_agent_read_only_verdicts_and_no_state() {
    let (staging, verdicts, state) = layout();
    let pod = yaml(&example("pod.yaml"));
    assert_eq!(pod["kind"], "Pod");
    let spec = &pod["spec"];
    let containers: Vec<&Value> = ["containers", "initContainers"]
        .iter()
        .flat_map(|k| spec[*k].as_array().into_iter().flatten())
        .collect();
    let named = |name: &str| {
        *containers
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no container {name}"))
    };
    let (agent, validator) = (named("agent"), named("validator"));
    let (agent_mounts, validator_mounts) = (mounts(agent), mounts(validator));
    let volume = |name: &str| {
        spec["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == name)
            .unwrap_or_else(|| panic!("no volume {name}"))
            .clone()
    };

    // Staging: one emptyDir, writable by both, where the rules say.
    let a = mount_of(&agent_mounts, &staging).expect("agent mounts staging");
    let v = mount_of(&validator_mounts, &staging).expect("validator mounts staging");
    assert_eq!(a.0, v.0);
    assert!(!a.2 && !v.2, "both write staging");
    assert!(volume(&a.0)["emptyDir"].is_object());
    // Verdicts: written by the validator, read-only for the agent, not inside staging.
    let a = mount_of(&agent_mounts, &verdicts).expect("agent mounts verdicts");
    let v = mount_of(&validator_mounts, &verdicts).expect("validator mounts verdicts");
    assert_eq!(a.0, v.0);
    assert!(a.2, "the agent's verdicts mount must be read-only");
    assert!(!v.2);
    // State: the validator's alone.
    let v = mount_of(&validator_mounts, &state).expect("validator mounts state");
    assert!(!v.2);
    assert!(
        !agent_mounts
            .iter()
            .any(|(name, path, _)| name == &v.0 || path == &state),
        "the agent must not reach the state: {agent_mounts:?}"
    );
    // The rules file from a ConfigMap, where VALIDATOR_CONFIG points; the kustomization makes
    // that ConfigMap from examples/sidecar/validator.yaml.
    let env = validator["env"].as_array().unwrap();
    let config = env
        .iter()
        .find(|e| e["name"] == "VALIDATOR_CONFIG")
        .and_then(|e| e["value"].as_str())
        .expect("VALIDATOR_CONFIG");
    let rules_dir = Path::new(config).parent().unwrap().to_str().unwrap();
    let r = mount_of(&validator_mounts, rules_dir).expect("rules mount");
    assert!(r.2, "the rules are read-only");
    let map = volume(&r.0)["configMap"]["name"]
        .as_str()
        .unwrap()
        .to_owned();
    let kustomization = yaml(&example("kustomization.yaml"));
    let generated = kustomization["configMapGenerator"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == map.as_str())
        .unwrap_or_else(|| panic!("kustomization does not generate {map}"));
    assert_eq!(generated["files"], serde_json::json!(["validator.yaml"]));
    assert_eq!(
        kustomization["generatorOptions"]["disableNameSuffixHash"],
        true
    );

    // Metrics and health over HTTP: the watcher listens on every interface of the pod (the
    // kubelet and Prometheus come to the pod's IP), on the port the container declares, which
    // the readiness probe asks for /healthz and the scrape annotations name. Startup and
    // liveness ask `status --health` instead: the agent shares the pod's network, and a
    // client holding the port's connections busy must not get the judge restarted.
    let args: Vec<&str> = validator["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let listen = args[args
        .iter()
        .position(|a| *a == "--metrics-addr")
        .expect("--metrics-addr")
        + 1];
    let listen: std::net::SocketAddr = listen.parse().expect("an IP:PORT");
    assert!(
        listen.ip().is_unspecified(),
        "{listen}: probes come to the pod's IP"
    );
    let ports = validator["ports"].as_array().expect("ports");
    let port = ports
        .iter()
        .find(|p| p["containerPort"] == listen.port())
        .unwrap_or_else(|| panic!("no containerPort {}: {ports:?}", listen.port()));
    assert_eq!(port["protocol"], "TCP");
    let port_name = port["name"].as_str().expect("a named port");
    let get = &validator["readinessProbe"]["httpGet"];
    assert_eq!(get["path"], "/healthz");
    assert!(
        get["port"] == port_name || get["port"] == listen.port(),
        "{get}"
    );
    for probe in ["startupProbe", "livenessProbe"] {
        assert_eq!(
            validator[probe]["exec"]["command"],
            serde_json::json!(["validator", "status", "--health"]),
            "{probe}"
        );
        assert!(
            validator[probe]["httpGet"].is_null(),
            "{probe}: one handler"
        );
    }
    let annotations = &pod["metadata"]["annotations"];
    assert_eq!(annotations["prometheus.io/scrape"], "true");
    assert_eq!(annotations["prometheus.io/port"], listen.port().to_string());
    assert_eq!(annotations["prometheus.io/path"], "/metrics");
    // Non-root everywhere; the validator on a read-only root file system.
    assert_eq!(spec["securityContext"]["runAsNonRoot"], true);
    for c in [agent, validator] {
        let user = c["securityContext"]["runAsUser"]
            .as_u64()
            .expect("runAsUser");
        assert_ne!(user, 0);
        assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);
    }
    assert_eq!(validator["securityContext"]["readOnlyRootFilesystem"], true);
    assert_ne!(
        agent["securityContext"]["runAsUser"], validator["securityContext"]["runAsUser"],
        "the agent runs as another user than the validator"
    );
    // SIGTERM's grace: the pod waits longer than the watcher lets gates finish.
    let grace = args[args.iter().position(|a| *a == "--grace").unwrap() + 1];
    let grace = humantime::parse_duration(grace).unwrap().as_secs();
    assert!(spec["terminationGracePeriodSeconds"].as_u64().unwrap() > grace);
}

/// A Compose service's volumes: (source, target, read-only).
fn compose_volumes(service: &Value) -> Vec<(String, String, bool)> {
    service["volumes"]
        .as_array()
        .expect("volumes")
        .iter()
        .map(|v| {
            let parts: Vec<&str> = v.as_str().expect("short syntax").split(':').collect();
            let ro = parts
                .get(2)
                .is_some_and(|mode| mode.split(',').any(|m| m == "ro"));
            (parts[0].to_owned(), parts[1].to_owned(), ro)
        })
        .collect()
}

#[test]
fn the_compose_file_shares_staging_and_gives_the_agent_read_only_verdicts_and_no_state() {
    let (staging, verdicts, state) = layout();
    let compose = yaml(&example("compose.yaml"));
    let services = &compose["services"];
    let (agent, validator) = (&services["agent"], &services["validator"]);
    let (agent_volumes, validator_volumes) = (compose_volumes(agent), compose_volumes(validator));
    let at = |volumes: &[(String, String, bool)], target: &str| {
        volumes
            .iter()
            .find(|(_, t, _)| t == target)
            .cloned()
            .unwrap_or_else(|| panic!("nothing mounted at {target}: {volumes:?}"))
    };
    let named = |volume: &str| compose["volumes"].get(volume).is_some();

    let (a, v) = (
        at(&agent_volumes, &staging),
        at(&validator_volumes, &staging),
    );
    assert_eq!(a.0, v.0);
    assert!(
        named(&a.0) && !a.2 && !v.2,
        "staging: one named volume, both write"
    );
    let (a, v) = (
        at(&agent_volumes, &verdicts),
        at(&validator_volumes, &verdicts),
    );
    assert_eq!(a.0, v.0);
    assert!(
        named(&a.0) && a.2 && !v.2,
        "verdicts: read-only (`:ro`) for the agent"
    );
    let v = at(&validator_volumes, &state);
    assert!(named(&v.0) && !v.2);
    assert!(
        !agent_volumes
            .iter()
            .any(|(src, t, _)| src == &v.0 || t == &state),
        "the agent must not reach the state: {agent_volumes:?}"
    );

    assert_eq!(
        validator["healthcheck"]["test"],
        serde_json::json!(["CMD", "validator", "status", "--health"])
    );
    assert_eq!(
        validator["environment"]["VALIDATOR_CONFIG"],
        "/etc/validator/validator.yaml"
    );
    let rules = at(&validator_volumes, "/etc/validator/validator.yaml");
    assert!(rules.0 == "./validator.yaml" && rules.2, "{rules:?}");
    assert_eq!(
        agent["depends_on"]["validator"]["condition"],
        "service_healthy"
    );
    let user = agent["user"].as_str().unwrap();
    assert!(
        !user.starts_with("0:") && !user.starts_with("10001"),
        "{user}"
    );
    let command: Vec<&str> = validator["command"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let grace = command[command.iter().position(|a| *a == "--grace").unwrap() + 1];
    let grace = humantime::parse_duration(grace).unwrap();
    let stop = humantime::parse_duration(validator["stop_grace_period"].as_str().unwrap()).unwrap();
    assert!(stop > grace, "stop_grace_period must outlast --grace");
}

// ---------------------------------------------------------------------------------------------
// git in the image: the agent owns the task's repository, the validator's user reads it.

#[test]
fn file_scope_reads_a_repository_another_user_owns_without_any_git_config() {
    use std::os::unix::fs::MetadataExt;
    if fs::metadata("/proc/self").map_or(true, |m| m.uid() != 0) {
        eprintln!("skipped: needs root to give the repository to another user");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let task = root.path().join("task");
    fs::create_dir_all(&task).unwrap();
    fs::write(task.join("a.txt"), "a").unwrap();
    common::git(&task, &["init", "-q"]);
    common::git(&task, &["add", "."]);
    common::git(&task, &["commit", "-q", "-m", "base"]);
    fs::write(task.join("b.txt"), "b").unwrap();
    let status = Command::new("chown")
        .args(["-R", "1000:1000"])
        .arg(&task)
        .status()
        .unwrap();
    assert!(status.success());
    fs::write(
        root.path().join("validator.yaml"),
        "version: 1\nstate: state\npipelines:\n  - name: main\n    gates:\n      - {name: scope, rule: file-scope, allow: [\"b.txt\"]}\n",
    )
    .unwrap();
    // validator names the repository to git, so git's ownership check (which refuses a
    // repository it discovers that another user owns) is not in the way, whatever the
    // system's git config says; and that config is not read at all.
    let refusing = root.path().join("gitconfig");
    fs::write(&refusing, "[safe]\n\tdirectory = /nowhere\n").unwrap();
    let scope = |system_config: &Path| {
        let mut cmd = assert_cmd::Command::new(BIN);
        cmd.args(["check", "--format", "json", "-c"])
            .arg(root.path().join("validator.yaml"))
            .arg("--task-dir")
            .arg(&task)
            .env("GIT_CONFIG_SYSTEM", system_config)
            .env("GIT_CONFIG_GLOBAL", "/dev/null");
        common::isolate_git(&mut cmd);
        let (code, verdict) = common::json_verdict(cmd);
        let summary = common::gate(&verdict, "scope")["summary"]
            .as_str()
            .unwrap()
            .to_owned();
        (code, summary)
    };
    for system_config in [Path::new("/dev/null"), &refusing] {
        let (code, read) = scope(system_config);
        assert_eq!(code, 0, "{read}");
        assert!(
            read.contains("1 changed file in scope (git, against HEAD)"),
            "{read}"
        );
    }
}
