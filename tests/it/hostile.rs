// Hostile input from the worker, driven through the real binary: done signals and documents
// built to make the validator hang, burn CPU for hours, or bloat its verdict. Each must end
// promptly with a verdict (or a refusal) that says why.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Project, gate, pipeline};
use serde_json::Value;

/// The largest done-signal body that is still parsed (`validator::done::MAX_BODY`).
const MAX_BODY: usize = 1024 * 1024;

/// Only stops a hung test. Each input here is built so that a parser or reader that is not
/// linear in it runs for hours (or overflows its stack), while a debug build takes well under
/// a second of CPU over it: the bound tells those apart with room for a binary that gets a
/// small share of a loaded, shared two-core machine (10 s did not always).
const PROMPT: Duration = Duration::from_secs(60);

/// A project whose one gate passes, so that only the signal decides.
fn passing_project() -> Project {
    let project = Project::new();
    project
        .rules(&pipeline(
            "      - {name: present, rule: exists, paths: [\"a.txt\"]}\n",
        ))
        .file("a.txt", "a");
    project
}

/// `[[[…]]]` nested `depth` deep.
fn nested(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

/// What a bounded run of `validator check` gave.
struct Run {
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: String,
}

impl Run {
    /// The exit code and the verdict on standard output.
    fn verdict(&self) -> (i32, Value) {
        let verdict = serde_json::from_slice(&self.stdout).unwrap_or_else(|err| {
            panic!(
                "stdout is not a verdict ({err}):\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&self.stdout),
                self.stderr
            )
        });
        (self.code.expect("an exit code"), verdict)
    }
}

/// Runs `validator check --format json` over the project, with `--signal signal` (by default
/// the project's done file, if there is one), killing it and failing the test if it has not
/// ended within `limit`.
fn check_within(project: &Project, signal: Option<&Path>, limit: Duration) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_validator"));
    command
        .arg("check")
        .arg("-c")
        .arg(project.rules_path())
        .arg("--task-dir")
        .arg(project.task_dir())
        .args(["--format", "json"])
        .env_remove("VALIDATOR_CONFIG")
        .env_remove("VALIDATOR_LOG")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let default_signal = project.signal_path();
    match signal {
        Some(signal) => {
            command.arg("--signal").arg(signal);
        }
        None if std::fs::symlink_metadata(&default_signal).is_ok() => {
            command.arg("--signal").arg(&default_signal);
        }
        None => {}
    }
    let started = Instant::now();
    let mut child = command.spawn().expect("run validator");
    // Drained as it runs, so that a large verdict cannot stall the child on a full pipe.
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            pipe.read_to_end(&mut bytes).expect("read a pipe");
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("stderr")));
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for validator") {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("validator check still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run {
        code: status.code(),
        stdout: stdout.join().expect("stdout reader"),
        stderr: String::from_utf8_lossy(&stderr.join().expect("stderr reader")).into_owned(),
    }
}

/// `check_within(project, None, PROMPT)`'s exit code and verdict.
fn timed_verdict(project: &Project) -> (i32, Value) {
    check_within(project, None, PROMPT).verdict()
}

fn reasons(verdict: &Value) -> String {
    verdict["reasons"]
        .as_array()
        .map(|reasons| {
            reasons
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// done signals
// ---------------------------------------------------------------------------------------------

#[test]
fn a_deeply_nested_yaml_report_fails_quickly() {
    let project = passing_project();
    let prefix = "status: ";
    let body = format!("{prefix}{}", nested((MAX_BODY - prefix.len()) / 2));
    assert!(body.len() <= MAX_BODY && body.len() > MAX_BODY - 2);
    project.signal(&body);
    let (code, verdict) = timed_verdict(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(verdict["verdict"], "FAIL");
    let why = reasons(&verdict);
    assert!(why.contains("YAML") && why.contains("128"), "{why}");
}

#[test]
fn deeply_nested_prose_is_not_parsed_either() {
    let project = passing_project();
    let body = format!("a: {}", nested((MAX_BODY - 3) / 2));
    project.signal(&body);
    // Not a report: kept as the worker's summary, so the passing gate decides.
    let (code, verdict) = timed_verdict(&project);
    assert_eq!(code, 0, "{verdict:#}");
}

#[test]
fn deep_block_nesting_is_parsed_quickly() {
    let mut indented = String::from("status: OK\nsummary:\n");
    let mut indent = 1;
    while indented.len() < MAX_BODY - 4096 {
        indented.push_str(&" ".repeat(indent));
        indented.push_str("a:\n");
        indent += 1;
    }
    let dashes = format!("status:\n{}x\n", "- ".repeat(MAX_BODY / 2 - 16));
    for body in [indented, dashes] {
        let project = passing_project();
        project.signal(&body);
        let (code, verdict) = timed_verdict(&project);
        assert_eq!(code, 1, "{verdict:#}");
        assert!(reasons(&verdict).contains("YAML"), "{verdict:#}");
    }
}

#[test]
fn a_broken_yaml_report_fails_instead_of_passing_as_prose() {
    let project = Project::new();
    project
        .rules(&pipeline(
            "      - {name: present, rule: exists, paths: [\"a.txt\"]}\n",
        ))
        .file("a.txt", "a")
        .signal("status: OK\nfiles_touched: [src/a.rs\n");
    let (code, verdict) = timed_verdict(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(verdict["verdict"], "FAIL");
    let why = reasons(&verdict);
    assert!(why.contains("done signal"), "{why}");
    assert!(why.contains("YAML"), "{why}");
    assert!(why.contains("line"), "{why}");
}

#[test]
fn a_fifo_as_the_signal_is_refused_without_blocking() {
    let project = passing_project();
    let fifo = project.path().join("task.fifo");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("run mkfifo");
    assert!(made.success());
    let (code, verdict) = check_within(&project, Some(&fifo), PROMPT).verdict();
    assert_eq!(code, 1, "{verdict:#}");
    assert!(
        reasons(&verdict).contains("a FIFO, not a regular file"),
        "{verdict:#}"
    );
}

#[test]
fn a_signal_linked_to_a_device_is_refused_without_reading_it() {
    let project = passing_project();
    let link = project.path().join("task.done");
    std::os::unix::fs::symlink("/dev/zero", &link).expect("symlink");
    let (code, verdict) = check_within(&project, Some(&link), PROMPT).verdict();
    assert_eq!(code, 1, "{verdict:#}");
    assert!(
        reasons(&verdict).contains("links are not followed"),
        "{verdict:#}"
    );
}

#[test]
fn a_huge_sparse_signal_fails_without_hashing_all_of_it() {
    let project = passing_project();
    std::fs::File::create(project.signal_path())
        .and_then(|file| file.set_len(20_000_000_000))
        .expect("sparse file");
    let (code, verdict) = timed_verdict(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert!(reasons(&verdict).contains("KiB"), "{verdict:#}");
    assert!(verdict["signal"]["sha256"].is_string(), "{verdict:#}");
}

// ---------------------------------------------------------------------------------------------
// the schema rule
// ---------------------------------------------------------------------------------------------

fn schema_project(schema: &str, files: &str) -> Project {
    let project = Project::new();
    project
        .rules(&pipeline(&format!(
            "      - name: report\n        rule: schema\n        schema: schemas/doc.schema.json\n        files: {files}\n"
        )))
        .root_file("schemas/doc.schema.json", schema);
    project
}

#[test]
fn a_deeply_nested_yaml_document_fails_the_schema_gate_quickly() {
    let project = schema_project(r#"{"type": "object"}"#, "[\"*.yaml\"]");
    project.file("doc.yaml", &format!("a: {}\n", nested(MAX_BODY / 2)));
    let (code, verdict) = timed_verdict(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let report = gate(&verdict, "report");
    assert_eq!(report["outcome"], "fail", "{report:#}");
    let text = report.to_string();
    assert!(text.contains("does not parse as YAML"), "{report:#}");
    assert!(text.contains("128"), "{report:#}");
}

#[test]
fn schema_findings_do_not_quote_whole_documents() {
    let project = schema_project(r#"{"type": "object"}"#, "[\"*.json\"]");
    let array = format!("[{}1]", "1234567,".repeat(128 * 1024));
    assert!(array.len() > MAX_BODY);
    for i in 0..6 {
        project.file(&format!("doc{i}.json"), &array);
    }
    let run = check_within(&project, None, 3 * PROMPT);
    assert!(
        run.stdout.len() < 100 * 1024,
        "the verdict is {} bytes",
        run.stdout.len()
    );
    let (code, verdict) = run.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    let report = gate(&verdict, "report");
    let findings = report["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 6, "{report:#}");
    for finding in findings {
        let message = finding["message"].as_str().expect("a message");
        assert!(message.starts_with("/: "), "{message}");
        assert!(message.ends_with('…'), "{message}");
        assert!(message.chars().count() <= 301, "{message}");
    }
}
