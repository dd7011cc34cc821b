// Forgery-proof verdicts, as a user relies on them: with a signing key the watcher (and
// `check --format json`) signs every verdict; `validator verify` accepts exactly those and
// rejects a hand-edited, stripped or foreign-key one; `wait` refuses a current verdict that does
// not verify; a key that is named but cannot be read stops the command; and the watcher warns
// at start when a worker could rewrite its own rules. Every watcher here is killed on drop.

use crate::common;
use crate::common::poll;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use tempfile::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_validator");
const KEY: &str = "5f0c3a6e1d2b4c8a9e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d\n";
const OTHER_KEY: &str = "another key entirely\n";

/// Verdicts, state and the key outside staging; one gate that needs `out.txt`. `extra` is more
/// top-level YAML (e.g. `signing_key_file: key\n`).
fn rules(extra: &str) -> String {
    format!(
        "version: 1\nstaging: staging\nverdicts: verdicts\nstate: state\n{extra}pipelines:\n  - name: main\n    gates:\n      - {{name: out, rule: exists, paths: [\"out.txt\"]}}\n"
    )
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A project directory with a rules file, a key, a staging directory and (once started) a
/// watcher.
struct Project {
    root: TempDir,
    /// The rules file, relative to the root.
    rules: &'static str,
    child: Option<Child>,
    starts: usize,
}

impl Project {
    fn new(yaml: &str) -> Self {
        Project::with_rules_at("validator.yaml", yaml)
    }

    /// A project whose rules file is at `rules` (relative to the root).
    fn with_rules_at(rules: &'static str, yaml: &str) -> Self {
        let root = tempfile::tempdir().expect("temp dir");
        let project = Project {
            root,
            rules,
            child: None,
            starts: 0,
        };
        project.write(rules, yaml);
        project.write("key", KEY);
        project.write("other-key", OTHER_KEY);
        fs::create_dir_all(project.path().join("staging")).expect("staging");
        fs::create_dir_all(project.path().join("logs")).expect("logs");
        project
    }

    fn path(&self) -> &Path {
        self.root.path()
    }

    fn write(&self, rel: &str, content: &str) {
        let path = self.path().join(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, content).expect("write");
    }

    fn rules_path(&self) -> PathBuf {
        self.path().join(self.rules)
    }

    fn verdict_path(&self, task: &str) -> PathBuf {
        self.path()
            .join("verdicts")
            .join(format!("{task}.verdict.json"))
    }

    fn stderr_path(&self, start: usize) -> PathBuf {
        self.path()
            .join("logs")
            .join(format!("watch-{start}.stderr"))
    }

    /// Spawns `validator watch -c <rules>` (no key in the environment).
    fn spawn(&mut self) -> PathBuf {
        assert!(self.child.is_none(), "a watcher is already running");
        self.starts += 1;
        let stderr = self.stderr_path(self.starts);
        let child = Command::new(BIN)
            .arg("watch")
            .arg("-c")
            .arg(self.rules_path())
            .current_dir(self.path())
            .env_remove("VALIDATOR_CONFIG")
            .env_remove("VALIDATOR_KEY_FILE")
            .env("VALIDATOR_LOG", "info")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(&stderr).expect("stderr log"))
            .spawn()
            .expect("spawn validator watch");
        self.child = Some(child);
        stderr
    }

    /// Starts a watcher and waits until it says it is watching; returns its stderr so far.
    fn start(&mut self) -> String {
        let stderr = self.spawn();
        let mut log = String::new();
        let ready = poll(crate::common::PATIENCE, || {
            log = fs::read_to_string(&stderr).unwrap_or_default();
            log.contains("watching")
        });
        assert!(ready, "the watcher did not start in time:\n{log}");
        log
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Runs `validator -c <rules> ARGS` in the project directory, without a key in the
    /// environment unless `env_key` names one.
    fn cli(&self, args: &[&str], env_key: Option<&str>) -> Output {
        let mut cmd = common::validator();
        cmd.arg("-c")
            .arg(self.rules_path())
            .args(args)
            .current_dir(self.path())
            .env_remove("VALIDATOR_KEY_FILE");
        if let Some(key) = env_key {
            cmd.env("VALIDATOR_KEY_FILE", self.path().join(key));
        }
        cmd.output().expect("run validator")
    }

    /// `validator verify FILE ARGS` from a directory without a rules file, so only `--key`
    /// or `VALIDATOR_KEY_FILE` can name the key.
    fn verify_elsewhere(&self, file: &Path, args: &[&str], env_key: Option<&str>) -> Output {
        let elsewhere = tempfile::tempdir().expect("temp dir");
        let mut cmd = common::validator();
        cmd.arg("verify")
            .arg(file)
            .args(args)
            .current_dir(elsewhere.path())
            .env_remove("VALIDATOR_KEY_FILE");
        if let Some(key) = env_key {
            cmd.env("VALIDATOR_KEY_FILE", self.path().join(key));
        }
        cmd.output().expect("run validator verify")
    }

    /// Signals `task` and waits for its verdict with `validator wait --format json`.
    fn judge(&self, task: &str) -> (i32, Value) {
        let signalled = self.cli(&["signal", task, "--status", "OK"], None);
        assert!(signalled.status.success(), "{signalled:?}");
        let output = self.cli(
            &[
                "wait",
                task,
                "--timeout",
                crate::common::PATIENCE_ARG,
                "--format",
                "json",
            ],
            None,
        );
        let verdict: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
            panic!(
                "wait printed no verdict ({err}); exit {:?}\nstderr:\n{}",
                output.status.code(),
                text(&output.stderr)
            )
        });
        (output.status.code().expect("exit code"), verdict)
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        self.stop();
    }
}

fn code(output: &Output) -> i32 {
    output.status.code().expect("exit code")
}

#[test]
fn a_signed_verdict_verifies_and_a_hand_edited_one_does_not() {
    let mut project = Project::new(&rules("signing_key_file: key\n"));
    project.start();
    let (exit, verdict) = project.judge("svc");
    assert_eq!((exit, &verdict["verdict"]), (1, &Value::from("FAIL")));
    let signature = verdict["signature"].as_str().unwrap_or_default();
    assert!(
        signature.starts_with("hmac-sha256:") && signature.len() == 12 + 64,
        "{verdict:#}"
    );

    // The file the watcher wrote verifies, with the key from the rules file...
    let path = project.verdict_path("svc");
    let file = path.to_str().expect("utf-8 path");
    let ok = project.cli(&["verify", file], None);
    assert_eq!(code(&ok), 0, "{ok:?}");
    let line = text(&ok.stdout);
    assert!(
        line.contains("svc") && line.contains("FAIL") && line.contains("signature valid"),
        "{line}"
    );
    // ...and with `--key` alone, where there is no rules file.
    let ok = project.verify_elsewhere(
        &path,
        &["--key", project.path().join("key").to_str().expect("utf-8")],
        None,
    );
    assert_eq!(code(&ok), 0, "{ok:?}");

    let original = fs::read_to_string(&path).expect("verdict");
    let refused = |edited: &str, why: &str| {
        fs::write(&path, edited).expect("write edited verdict");
        let out = project.cli(&["verify", file], None);
        let stderr = text(&out.stderr);
        assert_eq!(code(&out), 1, "{edited}\n{stderr}");
        assert!(stderr.contains(file) && stderr.contains(why), "{stderr}");
        assert!(out.stdout.is_empty(), "{out:?}");
    };
    // FAIL turned into PASS.
    refused(
        &original.replace("\"verdict\": \"FAIL\"", "\"verdict\": \"PASS\""),
        "edited after signing or signed with another key",
    );
    // A reason changed.
    let mut reason: Value = serde_json::from_str(&original).expect("verdict JSON");
    reason["reasons"][0] = Value::from("all good");
    refused(&reason.to_string(), "edited after signing");
    // The signature stripped.
    let mut stripped: Value = serde_json::from_str(&original).expect("verdict JSON");
    stripped
        .as_object_mut()
        .expect("object")
        .remove("signature");
    refused(
        &serde_json::to_string_pretty(&stripped).expect("json"),
        "unsigned",
    );

    // The untouched verdict, re-indented, still verifies; with another key it does not, and
    // VALIDATOR_KEY_FILE wins over the rules file's key.
    let reindented: Value = serde_json::from_str(&original).expect("verdict JSON");
    fs::write(&path, reindented.to_string()).expect("write");
    assert_eq!(code(&project.cli(&["verify", file], None)), 0);
    let other = project.cli(&["verify", file, "--key", "other-key"], None);
    assert_eq!(code(&other), 1, "{other:?}");
    assert!(
        text(&other.stderr).contains("signed with another key"),
        "{other:?}"
    );
    assert_eq!(code(&project.cli(&["verify", file], Some("other-key"))), 1);
    assert_eq!(
        code(&project.verify_elsewhere(&path, &[], Some("key"))),
        0,
        "VALIDATOR_KEY_FILE alone names the key"
    );
}

#[test]
fn wait_and_status_refuse_a_current_verdict_that_does_not_verify() {
    let mut project = Project::new(&rules("signing_key_file: key\n"));
    project.start();
    let (exit, verdict) = project.judge("svc");
    assert_eq!(exit, 1, "{verdict:#}");
    let path = project.verdict_path("svc");
    let original = fs::read_to_string(&path).expect("verdict");
    // Readers are what is under test. A watcher still running could see the signal's last
    // file events after its verdict and, rightly, re-judge the forgery before `status` runs.
    project.stop();

    // The worker's dream: the same verdict, PASS. Its signal fields are unchanged, so it is
    // "current"; only the signature gives it away.
    let forged = original.replace("\"verdict\": \"FAIL\"", "\"verdict\": \"PASS\"");
    fs::write(&path, &forged).expect("forge");
    let wait = project.cli(&["wait", "svc", "--timeout", "20s"], None);
    let stderr = text(&wait.stderr);
    assert_eq!(code(&wait), 2, "{stderr}");
    // Refused at once, not after the timeout (which would say "no current verdict").
    assert!(!stderr.contains("no current verdict"), "{stderr}");
    assert!(
        stderr.contains(path.to_str().expect("utf-8")) && stderr.contains("invalid signature"),
        "{stderr}"
    );
    assert!(
        wait.stdout.is_empty(),
        "nothing printed as a verdict: {wait:?}"
    );

    let status = project.cli(&["status", "--format", "json"], None);
    assert!(status.status.success(), "{status:?}");
    let tasks: Value = serde_json::from_slice(&status.stdout).expect("status JSON");
    assert_eq!(tasks[0]["task"], "svc", "{tasks:#}");
    assert_eq!(tasks[0]["current"], false, "{tasks:#}");
    assert_eq!(tasks[0]["signature"], "invalid", "{tasks:#}");
    let table = text(&project.cli(&["status"], None).stdout);
    assert!(
        table.contains("SIGNATURE") && table.contains("invalid"),
        "{table}"
    );

    // Unsigned is refused too, and named as such.
    let mut stripped: Value = serde_json::from_str(&original).expect("verdict JSON");
    stripped
        .as_object_mut()
        .expect("object")
        .remove("signature");
    fs::write(&path, stripped.to_string()).expect("strip");
    let wait = project.cli(&["wait", "svc", "--timeout", "20s"], None);
    assert_eq!(code(&wait), 2, "{wait:?}");
    assert!(text(&wait.stderr).contains("unsigned"), "{wait:?}");

    // A restarted watcher does not take the tampered file for its own: it judges the signal
    // again (same attempt) and publishes a verdict that verifies.
    project.start();
    let (exit, verdict) = project.judge_current("svc");
    assert_eq!(
        (exit, verdict["attempt"].as_u64()),
        (1, Some(1)),
        "{verdict:#}"
    );
    let status = project.cli(&["status", "--format", "json"], None);
    let tasks: Value = serde_json::from_slice(&status.stdout).expect("status JSON");
    assert_eq!(
        (&tasks[0]["current"], &tasks[0]["signature"]),
        (&Value::from(true), &Value::from("valid")),
        "{tasks:#}"
    );
}

impl Project {
    /// Waits (without signalling) until `wait` prints a verdict that verifies.
    fn judge_current(&self, task: &str) -> (i32, Value) {
        let mut last = None;
        let found = poll(crate::common::PATIENCE, || {
            let output = self.cli(&["wait", task, "--timeout", "1s", "--format", "json"], None);
            let done = !output.stdout.is_empty();
            last = Some(output);
            done
        });
        let output = last.expect("ran wait");
        assert!(found, "no verdict that verifies: {output:?}");
        let verdict = serde_json::from_slice(&output.stdout).expect("verdict JSON");
        (code(&output), verdict)
    }
}

#[test]
fn check_json_is_signed_with_the_key_from_the_environment() {
    let project = common::project(&[common::lint("ok", "[\"true\"]", "")]);
    fs::write(project.path().join("key"), KEY).expect("key");
    let output = project
        .check()
        .args(["--format", "json"])
        .env("VALIDATOR_KEY_FILE", project.path().join("key"))
        .output()
        .expect("run check");
    assert_eq!(code(&output), 0, "{output:?}");
    let verdict: Value = serde_json::from_slice(&output.stdout).expect("verdict JSON");
    assert!(
        verdict["signature"]
            .as_str()
            .is_some_and(|s| s.starts_with("hmac-sha256:")),
        "{verdict:#}"
    );
    let file = project.path().join("check.verdict.json");
    fs::write(&file, &output.stdout).expect("save verdict");
    let verify = common::validator()
        .arg("verify")
        .arg(&file)
        .arg("--key")
        .arg(project.path().join("key"))
        .current_dir(project.task_dir())
        .env_remove("VALIDATOR_KEY_FILE")
        .output()
        .expect("run verify");
    assert_eq!(code(&verify), 0, "{verify:?}");
    assert!(text(&verify.stdout).contains("PASS"), "{verify:?}");

    // Without a key, `check` prints what it always did: no signature member.
    let (_, unsigned) = common::json_verdict({
        let mut cmd = project.check();
        cmd.args(["--format", "json"])
            .env_remove("VALIDATOR_KEY_FILE");
        cmd
    });
    assert!(unsigned.get("signature").is_none(), "{unsigned:#}");
}

#[test]
fn a_key_file_that_cannot_be_read_stops_the_command_with_exit_2() {
    let mut project = Project::new(&rules("signing_key_file: missing-key\n"));
    let stderr_path = project.spawn();
    let mut child = project.child.take().expect("watcher");
    let mut status = None;
    poll(Duration::from_secs(10), || {
        status = child.try_wait().expect("try_wait");
        status.is_some()
    });
    let Some(status) = status else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the watcher started with an unreadable key");
    };
    let stderr = fs::read_to_string(stderr_path).unwrap_or_default();
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("missing-key") && stderr.contains("signing_key_file"),
        "{stderr}"
    );
    assert!(
        !project.path().join("verdicts").exists(),
        "nothing was published"
    );

    // The same key file for `wait`, `status` and `check --format json`; and an unreadable
    // VALIDATOR_KEY_FILE, which is named as the culprit.
    for args in [
        &["wait", "svc", "--timeout", "1s"][..],
        &["status"],
        &["check", "--task-dir", "staging", "--format", "json"],
    ] {
        let out = project.cli(args, None);
        assert_eq!(code(&out), 2, "{args:?}: {out:?}");
        assert!(
            text(&out.stderr).contains("missing-key"),
            "{args:?}: {out:?}"
        );
    }
    let out = project.cli(&["verify", "anything.json"], Some("no-such-key"));
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 2, "{stderr}");
    assert!(
        stderr.contains("no-such-key") && stderr.contains("VALIDATOR_KEY_FILE"),
        "{stderr}"
    );
}

#[test]
fn verify_without_a_key_says_how_to_configure_one() {
    let project = Project::new(&rules(""));
    project.write("verdicts/svc.verdict.json", "{}");
    let file = project.verdict_path("svc");
    for out in [
        project.verify_elsewhere(&file, &[], None),
        project.cli(&["verify", file.to_str().expect("utf-8")], None),
    ] {
        let stderr = text(&out.stderr);
        assert_eq!(code(&out), 2, "{stderr}");
        assert!(
            stderr.contains("no signing key")
                && stderr.contains("--key")
                && stderr.contains("VALIDATOR_KEY_FILE")
                && stderr.contains("signing_key_file"),
            "{stderr}"
        );
    }
    // A file that is not a verdict cannot be judged either: exit 2, not 1.
    project.write("not-json.json", "PASS, honestly");
    let out = project.verify_elsewhere(
        &project.path().join("not-json.json"),
        &["--key", project.path().join("key").to_str().expect("utf-8")],
        None,
    );
    assert_eq!(code(&out), 2, "{out:?}");
    assert!(text(&out.stderr).contains("not JSON"), "{out:?}");
}

#[test]
fn the_watcher_warns_when_a_worker_could_rewrite_its_own_rules() {
    // The rules file and the contracts directory sit in staging; verdicts and state do not.
    let mut project = Project::with_rules_at(
        "staging/validator.yaml",
        "version: 1\nstaging: .\nverdicts: ../verdicts\nstate: ../state\ncontracts: contracts\npipelines:\n  - name: main\n    gates:\n      - {name: status, rule: status}\n",
    );
    let log = project.start();
    assert!(
        log.contains("the rules file is inside staging")
            && log.contains("a worker could rewrite its own rules")
            && log.contains("move the rules file outside staging"),
        "{log}"
    );
    assert!(
        log.contains("the contracts directory is inside staging")
            && log.contains("set `contracts:` to a directory outside staging"),
        "{log}"
    );
    assert!(
        !log.contains("verdicts directory is inside staging"),
        "{log}"
    );
    project.stop();

    // The layout the warnings ask for: nothing to warn about.
    let mut clean = Project::new(&rules("signing_key_file: key\n"));
    let log = clean.start();
    assert!(!log.contains("inside staging"), "{log}");
}
