//! What validator prints and reads back, against a worker that controls names, reports and
//! verdict files: invisible and reordering characters never reach any output format raw; a
//! JUnit report with a DTD is refused out loud (its entities never expanded) and an unknown
//! entity is kept as written; a verdict with a key twice never verifies; a watcher whose state
//! directory is deleted (and made again) stops instead of judging beside a second watcher.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::{self, Project, Watching, commit_all, gate, isolate_git, poll};

const BIN: &str = env!("CARGO_BIN_EXE_validator");
/// How long a condition may take to come true on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(60);

/// Characters that must never reach a reader raw: C1 controls (U+009B is an 8-bit CSI), the
/// bidirectional controls that reorder what is shown, and the line and paragraph separators.
fn hazardous(c: char) -> bool {
    matches!(
        c,
        '\u{80}'..='\u{9F}'
            | '\u{61C}'
            | '\u{200E}'
            | '\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2066}'..='\u{2069}'
            | '\u{2028}'
            | '\u{2029}'
    )
}

fn raw_hazards(text: &str) -> Vec<String> {
    text.chars()
        .filter(|&c| hazardous(c))
        .map(|c| format!("U+{:04X}", c as u32))
        .collect()
}

/// The out-of-scope file the worker names to hide what it is.
const HOSTILE_FILE: &str = "evil\u{9B}31m\u{202E}txt.exe";

/// A git task with a scope gate (`src/**` only) and a lint gate whose tool reports a finding
/// at the hostile file with a message full of controls, then exits 1.
fn hostile_project() -> Project {
    let project = Project::new();
    let message = "evil\u{9B}31m\u{202E}txt.exe:1:1: error: bad \u{202E}gnp.exe\u{2066}x\u{2069} \u{200E}\u{200F}\u{61C}\u{202A}a\u{202C} \u{9B}2J\u{2028}next\u{2029}end\n";
    project.root_file("lint.out", message);
    let lint_out = project.path().join("lint.out");
    project
        .rules(&common::pipeline(&format!(
            "      - name: lint\n        rule: lint\n        run: {}\n      - name: scope\n        rule: file-scope\n        allow: [\"src/**\"]\n",
            serde_json::json!(["sh", "-c", "cat \"$0\"; exit 1", lint_out.display().to_string()])
        )))
        .file("src/lib.rs", "fn a() {}\n");
    commit_all(&project.task_dir());
    project.file(HOSTILE_FILE, "x\n");
    project
}

fn check_as(project: &Project, format: &str, summary: &Path) -> Output {
    let mut cmd = project.check();
    isolate_git(&mut cmd);
    cmd.args(["--keep-going", "--format", format])
        .env("GITHUB_STEP_SUMMARY", summary)
        .output()
        .expect("run validator check")
}

#[test]
fn no_output_format_prints_a_c1_or_bidi_control_raw() {
    let project = hostile_project();
    let summary = project.path().join("step-summary.md");
    for format in ["text", "json", "junit", "github", "feedback", "sarif"] {
        let output = check_as(&project, format, &summary);
        let stdout = String::from_utf8(output.stdout).expect("UTF-8 stdout");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{format}:\n{stdout}\n{stderr}"
        );
        assert!(
            raw_hazards(&stdout).is_empty(),
            "--format {format} printed {:?} raw:\n{stdout}",
            raw_hazards(&stdout)
        );
        assert!(
            raw_hazards(&stderr).is_empty(),
            "--format {format}'s gate lines printed {:?} raw:\n{stderr}",
            raw_hazards(&stderr)
        );
        match format {
            // The verdict document keeps the name exactly: escaped, not changed.
            "json" => {
                let verdict: Value = serde_json::from_str(&stdout).expect("verdict JSON");
                assert!(
                    gate(&verdict, "scope")["findings"]
                        .as_array()
                        .is_some_and(|f| f.iter().any(|f| f["file"] == HOSTILE_FILE)),
                    "{verdict:#}"
                );
            }
            "sarif" => {
                serde_json::from_str::<Value>(&stdout).expect("SARIF JSON");
            }
            "junit" => assert!(stdout.contains("<testsuite "), "{stdout}"),
            // The name is said, escaped where the runner shows it.
            "github" | "text" | "feedback" => {
                assert!(stdout.contains("evil\\u009b31m\\u202etxt.exe"), "{stdout}")
            }
            _ => {}
        }
    }
    let step_summary = fs::read_to_string(&summary).expect("job summary");
    assert!(
        raw_hazards(&step_summary).is_empty(),
        "the job summary holds {:?} raw:\n{step_summary}",
        raw_hazards(&step_summary)
    );
}

/// A report that declares a DTD whose entities would grow a billion-fold (never expanded), and
/// names the failed test through one of them.
const DTD_REPORT: &str = r#"<?xml version="1.0"?>
<!DOCTYPE testsuite [
  <!ENTITY lol "lol">
  <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
  <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
  <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
  <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
  <!ENTITY x "test_login">
]>
<testsuite name="s"><testcase classname="auth" name="&x;"><failure message="&lol9;">boom</failure></testcase></testsuite>
"#;

/// A test gate whose command writes `report` as report.xml and exits `code`.
fn junit_project(report: &str, code: i32) -> Project {
    let project = Project::new();
    project.root_file("report.src.xml", report);
    let source = project.path().join("report.src.xml");
    project.rules(&common::pipeline(&format!(
        "      - name: tests\n        rule: test\n        run: {}\n        junit: report.xml\n",
        serde_json::json!([
            "sh",
            "-c",
            format!("cp \"$0\" report.xml; exit {code}"),
            source.display().to_string()
        ])
    )));
    project
}

#[test]
fn a_junit_report_with_a_dtd_is_refused_out_loud_and_the_gate_still_fails() {
    let project = junit_project(DTD_REPORT, 1);
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    let tests = gate(&verdict, "tests");
    assert_eq!(tests["outcome"], "fail", "{verdict:#}");
    let summary = tests["summary"].as_str().expect("summary");
    assert!(
        summary.contains("report.xml") && summary.contains("DOCTYPE"),
        "the unread report is not said: {verdict:#}"
    );
    // Nothing of the entities is expanded anywhere.
    assert!(!verdict.to_string().contains("lollol"), "{verdict:#}");
}

#[test]
fn an_undeclared_entity_in_a_junit_report_is_kept_as_written() {
    let report = "<testsuite name=\"s\"><testcase classname=\"auth\" name=\"login &x; works\"><failure message=\"got &y; &amp; more\"/></testcase></testsuite>";
    let project = junit_project(report, 1);
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    let findings = gate(&verdict, "tests")["findings"].to_string();
    assert!(
        findings.contains("login &x; works") && findings.contains("got &y; & more"),
        "the failed test is lost: {verdict:#}"
    );
}

#[test]
fn a_run_that_exits_zero_fails_on_the_failure_its_dtd_report_names_without_expanding_it() {
    let project = junit_project(DTD_REPORT, 0);
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    let tests = gate(&verdict, "tests");
    assert_eq!(tests["outcome"], "fail", "{verdict:#}");
    assert!(
        tests["findings"].to_string().contains("auth::&x;"),
        "{verdict:#}"
    );
    assert!(!verdict.to_string().contains("lollol"), "{verdict:#}");
}

const KEY: &str = "5f0c3a6e1d2b4c8a9e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d\n";

/// A project directory for watchers, which a test starts into `Watching` slots (each killed
/// when its slot is dropped).
struct Sidecar {
    root: tempfile::TempDir,
    starts: usize,
}

impl Sidecar {
    fn new(rules: &str) -> Self {
        let root = tempfile::tempdir().expect("temp dir");
        fs::write(root.path().join("validator.yaml"), rules).expect("rules");
        fs::create_dir_all(root.path().join("staging")).expect("staging");
        fs::create_dir_all(root.path().join("logs")).expect("logs");
        Sidecar { root, starts: 0 }
    }

    fn path(&self) -> &Path {
        self.root.path()
    }

    fn stderr_path(&self, start: usize) -> PathBuf {
        self.path().join(format!("logs/watch-{start}.stderr"))
    }

    fn stderr(&self, start: usize) -> String {
        fs::read_to_string(self.stderr_path(start)).unwrap_or_default()
    }

    fn logs(&self) -> String {
        (1..=self.starts)
            .map(|s| format!("--- watcher {s} ---\n{}", self.stderr(s)))
            .collect()
    }

    /// Starts `validator watch ARGS` into `slot` and waits until it says it is watching.
    fn start(&mut self, slot: &mut Watching, args: &[&str]) {
        self.starts += 1;
        let start = self.starts;
        let child = Command::new(BIN)
            .arg("watch")
            .arg("-c")
            .arg(self.path().join("validator.yaml"))
            .args(args)
            .current_dir(self.path())
            .env_remove("VALIDATOR_CONFIG")
            .env_remove("VALIDATOR_KEY_FILE")
            .env("VALIDATOR_LOG", "info")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(self.stderr_path(start)).expect("stderr log"))
            .spawn()
            .expect("spawn validator watch");
        slot.set(child);
        let ready = poll(PATIENCE, || self.stderr(start).contains("watching"));
        assert!(ready, "watcher {start} did not start:\n{}", self.logs());
    }

    fn cli(&self, args: &[&str]) -> Output {
        common::cli(self.path(), &self.path().join("validator.yaml"), args)
    }

    fn signal(&self, task: &str) {
        fs::create_dir_all(self.path().join("staging").join(task)).expect("task dir");
        let out = self.cli(&["signal", task, "--status", "OK"]);
        assert!(out.status.success(), "{out:?}");
    }

    fn verdict_path(&self, task: &str) -> PathBuf {
        self.path().join(format!("verdicts/{task}.verdict.json"))
    }
}

const WATCHED: &str = "version: 1\nstaging: staging\nverdicts: verdicts\nstate: state\nsigning_key_file: key\npipelines:\n  - name: main\n    gates:\n      - {name: status, rule: status}\n";

/// Waits for the watcher in `slot` to exit on its own; its exit code.
fn exited(slot: &mut Watching, sidecar: &Sidecar) -> i32 {
    let mut status = None;
    poll(PATIENCE, || {
        status = slot.try_wait();
        status.is_some()
    });
    let status = status.unwrap_or_else(|| panic!("the watcher went on:\n{}", sidecar.logs()));
    status.code().unwrap_or(-1)
}

#[test]
fn a_watcher_whose_state_directory_is_made_again_stops_and_a_second_one_takes_over() {
    let mut sidecar = Sidecar::new(WATCHED);
    fs::write(sidecar.path().join("key"), KEY).expect("key");
    let (mut first, mut second) = (Watching::default(), Watching::default());
    sidecar.start(&mut first, &["--heartbeat", "1s"]);
    let state = sidecar.path().join("state");
    fs::remove_dir_all(&state).expect("delete the state directory");
    fs::create_dir(&state).expect("make it again");
    let code = exited(&mut first, &sidecar);
    assert_eq!(code, 2, "{}", sidecar.logs());
    let said = sidecar.stderr(1);
    assert!(
        said.contains(&state.display().to_string()) && said.contains("deleted or replaced"),
        "the first watcher does not say why it stopped:\n{said}"
    );
    // Once it has stopped, a second one claims the directory there now (while it ran, one
    // was refused: tests/it/watcher_holds_its_claim.rs).
    sidecar.start(&mut second, &["--heartbeat", "1s"]);
    // The one that holds the directory judges.
    sidecar.signal("t");
    let waited = sidecar.cli(&["wait", "t", "--timeout", "60s", "--format", "json"]);
    assert_eq!(
        waited.status.code(),
        Some(0),
        "{waited:?}\n{}",
        sidecar.logs()
    );
    assert!(second.running(), "{}", sidecar.logs());
}

#[test]
fn a_watcher_whose_state_directory_vanished_judges_nothing_more() {
    let mut sidecar = Sidecar::new(WATCHED);
    fs::write(sidecar.path().join("key"), KEY).expect("key");
    let mut watcher = Watching::default();
    sidecar.start(&mut watcher, &["--heartbeat", "1s"]);
    fs::remove_dir_all(sidecar.path().join("state")).expect("delete the state directory");
    sidecar.signal("t");
    let code = exited(&mut watcher, &sidecar);
    assert_eq!(code, 2, "{}", sidecar.logs());
    assert!(
        sidecar.stderr(1).contains("deleted or replaced"),
        "{}",
        sidecar.logs()
    );
    assert!(
        !sidecar.verdict_path("t").exists(),
        "judged into a state directory nobody can see:\n{}",
        sidecar.logs()
    );
}

/// A FAIL verdict signed by `check --format json`, saved in the project; its path.
fn signed_fail(project: &Project) -> PathBuf {
    fs::write(project.path().join("key"), KEY).expect("key");
    let output = project
        .check()
        .args(["--format", "json"])
        .env("VALIDATOR_KEY_FILE", project.path().join("key"))
        .output()
        .expect("run check");
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let file = project.path().join("signed.verdict.json");
    fs::write(&file, &output.stdout).expect("save verdict");
    file
}

fn verify(project: &Project, file: &Path) -> Output {
    common::validator()
        .arg("verify")
        .arg(file)
        .arg("--key")
        .arg(project.path().join("key"))
        .current_dir(project.task_dir())
        .env_remove("VALIDATOR_KEY_FILE")
        .output()
        .expect("run verify")
}

#[test]
fn a_verdict_with_a_key_twice_never_verifies() {
    let project = common::project(&[common::lint("bad", "[\"false\"]", "")]);
    let file = signed_fail(&project);
    let original = fs::read_to_string(&file).expect("verdict");
    assert_eq!(verify(&project, &file).status.code(), Some(0));
    let twice = |from: &str, to: &str| {
        assert!(original.contains(from), "{original}");
        original.replacen(from, to, 1)
    };
    let forgeries = [
        // A reader keeping the first sees PASS; serde_json, keeping the last, the signed FAIL.
        (
            "before",
            twice("{", "{\n  \"verdict\": \"PASS\","),
            "verdict",
        ),
        (
            "after",
            twice(
                "\"verdict\": \"FAIL\",",
                "\"verdict\": \"FAIL\", \"verdict\": \"PASS\",",
            ),
            "verdict",
        ),
        // Deeper down, even with the same value.
        (
            "nested",
            twice("\"agent\": null", "\"agent\": null, \"agent\": null"),
            "agent",
        ),
    ];
    for (name, forged, key) in forgeries {
        let path = project.path().join(format!("{name}.verdict.json"));
        fs::write(&path, &forged).expect("forge");
        let out = verify(&project, &path);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{name}: {forged}\n{stderr}");
        assert!(
            stderr.contains(&format!("`{key}`")) && stderr.contains("twice"),
            "{name}: the reason is not said:\n{stderr}"
        );
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("valid"),
            "{out:?}"
        );
    }
}

/// A current, signed verdict from a watcher, the watcher stopped; the verdict's path.
fn judged_and_stopped(sidecar: &mut Sidecar) -> PathBuf {
    let mut watcher = Watching::default();
    sidecar.start(&mut watcher, &[]);
    sidecar.signal("t");
    let waited = sidecar.cli(&["wait", "t", "--timeout", "60s", "--format", "json"]);
    assert_eq!(
        waited.status.code(),
        Some(0),
        "{waited:?}\n{}",
        sidecar.logs()
    );
    // The readers are under test: a watcher still running could judge the forgery again.
    watcher.kill9();
    sidecar.verdict_path("t")
}

#[test]
fn wait_and_status_refuse_a_verdict_with_a_key_twice_and_say_why() {
    let mut sidecar = Sidecar::new(WATCHED);
    fs::write(sidecar.path().join("key"), KEY).expect("key");
    let path = judged_and_stopped(&mut sidecar);
    let original = fs::read_to_string(&path).expect("verdict");
    let forged = original.replacen('{', "{\n  \"verdict\": \"FAIL\",", 1);
    fs::write(&path, forged).expect("forge");

    let wait = sidecar.cli(&["wait", "t", "--timeout", "20s", "--anyway"]);
    let stderr = String::from_utf8_lossy(&wait.stderr);
    assert_eq!(wait.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("`verdict`") && stderr.contains("twice"),
        "wait does not say why:\n{stderr}"
    );
    assert!(wait.stdout.is_empty(), "{wait:?}");

    let status = sidecar.cli(&["status", "--format", "json"]);
    let tasks: Value = serde_json::from_slice(&status.stdout).expect("status JSON");
    assert_eq!(
        (
            &tasks[0]["task"],
            &tasks[0]["current"],
            &tasks[0]["signature"]
        ),
        (
            &Value::from("t"),
            &Value::from(false),
            &Value::from("invalid")
        ),
        "{tasks:#}"
    );
}
