//! The `review` rule through the real binary: stub reviewers (small sh scripts beside the task)
//! answer APPROVED, REJECTED or nonsense, record what they were given on stdin, hang, or are
//! missing, and the verdict and exit code must say what a user relies on.

use crate::common;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::{Project, copy_dir, gate, git, isolate_git, json_verdict, pipeline, reasons};
use serde_json::Value;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Writes an executable reviewer script beside (not inside) the task directory; returns its
/// absolute path.
fn reviewer(project: &Project, name: &str, body: &str) -> String {
    let rel = format!("reviewers/{name}");
    project.root_file(&rel, &format!("#!/bin/sh\n{body}"));
    std::fs::create_dir_all(project.path().join("record")).expect("record dir");
    let path = project.path().join(rel);
    make_executable(&path);
    path.display().to_string()
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// A review gate running `run` (a YAML value), with extra lines (indented 8) appended. The
/// reviewer may write only in `record/` beside the task (its sandbox refuses the rest).
fn review_gate(run: &str, extra: &str) -> String {
    format!(
        "      - name: review\n        rule: review\n        run: {run}\n        writable: [record]\n{extra}"
    )
}

/// A project whose one gate reviews with the script `body`.
fn reviewed_by(body: &str) -> Project {
    let project = Project::new();
    let path = reviewer(&project, "review.sh", body);
    project.rules(&pipeline(&review_gate(&format!("[\"{path}\"]"), "")));
    project
}

/// `check --format json`, git's environment pinned so nothing outside the test leaks in.
fn run_check(project: &Project, extra: &[&str]) -> (i32, Value) {
    let mut cmd = project.check();
    cmd.args(["--format", "json"]).args(extra);
    isolate_git(&mut cmd);
    json_verdict(cmd)
}

fn text<'v>(value: &'v Value, key: &str) -> &'v str {
    value[key].as_str().unwrap_or_default()
}

/// A reviewer that saves its stdin (and a few variables) beside the task, then approves.
const RECORDER: &str = "cat > \"$VALIDATOR_TASK_DIR/../record/context.md\"\nprintf '%s|%s|%s\\n' \"$VALIDATOR_TASK\" \"$VALIDATOR_ATTEMPT\" \"$REVIEW_MODEL\" > \"$VALIDATOR_TASK_DIR/../record/env.txt\"\necho APPROVED\n";

fn recorded(project: &Project) -> String {
    std::fs::read_to_string(project.path().join("record/context.md")).expect("the reviewer's stdin")
}

/// True while `pid` is a live process (a zombie counts as dead).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next());
            !matches!(state, Some('Z' | 'X') | None)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Verdicts
// ---------------------------------------------------------------------------------------------

#[test]
fn approved_passes_the_gate_and_the_run_exits_0() {
    let project = reviewed_by(
        "cat > /dev/null\necho 'I read the diff; it does what the contract asks.'\necho\necho '**APPROVED**'\n",
    );
    project.file("calc.py", "def add(a, b):\n    return a + b\n");
    let (code, verdict) = run_check(&project, &[]);
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(verdict["verdict"], "PASS");
    let review = gate(&verdict, "review");
    assert_eq!(review["outcome"], "pass");
    assert_eq!(review["rule"], "review");
    assert_eq!(review["exit_code"], 0);
    assert!(text(review, "summary").contains("approved"), "{review:#}");
}

#[test]
fn rejected_fails_with_the_issues_as_findings_whatever_the_exit_code() {
    let project = reviewed_by(
        "cat > /dev/null\necho 'Preamble: I assumed the work has bugs.'\necho REJECTED\necho '- src/a.py:3: off by one in the loop bound'\necho \"- $VALIDATOR_TASK_DIR/src/b.py:7:2: absolute paths become task paths\"\necho 'the tests never exercise the error path'\nexit 1\n",
    );
    project.file("src/a.py", "x = 1\n");
    let (code, verdict) = run_check(&project, &[]);
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(verdict["verdict"], "FAIL");
    let review = gate(&verdict, "review");
    assert_eq!(review["outcome"], "fail");
    assert_eq!(review["exit_code"], 1);
    let findings = review["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 3, "{review:#}");
    assert_eq!(findings[0]["file"], "src/a.py");
    assert_eq!(findings[0]["line"], 3);
    assert_eq!(findings[0]["message"], "off by one in the loop bound");
    assert_eq!(findings[1]["file"], "src/b.py");
    assert_eq!(findings[1]["line"], 7);
    assert_eq!(findings[1]["column"], 2);
    assert_eq!(
        findings[2]["message"],
        "the tests never exercise the error path"
    );
    assert!(findings[2].get("file").is_none(), "{review:#}");
    assert!(
        reasons(&verdict).contains("review: rejected"),
        "{verdict:#}"
    );
    assert!(
        text(review, "output_tail").contains("off by one"),
        "{review:#}"
    );
}

#[test]
fn rejected_without_reasons_still_fails_and_says_so() {
    let project = reviewed_by("echo REJECTED\n");
    let (code, verdict) = run_check(&project, &[]);
    assert_eq!(code, 1, "{verdict:#}");
    let review = gate(&verdict, "review");
    assert_eq!(review["outcome"], "fail");
    assert!(
        text(&review["findings"][0], "message").contains("without giving reasons"),
        "{review:#}"
    );
}

#[test]
fn an_answer_without_a_verdict_line_is_an_error_not_a_pass() {
    let project = reviewed_by("echo 'The code looks APPROVED-ish to me, mostly fine.'\n");
    let (code, verdict) = run_check(&project, &[]);
    assert_eq!(code, 2, "{verdict:#}");
    assert_eq!(verdict["verdict"], "ERROR");
    let review = gate(&verdict, "review");
    assert_eq!(review["outcome"], "error");
    assert!(text(review, "summary").contains("no verdict"), "{review:#}");
    assert!(
        text(review, "summary").contains("APPROVED or REJECTED"),
        "{review:#}"
    );
    assert!(reasons(&verdict).contains("no verdict"), "{verdict:#}");
    assert!(
        text(review, "output_tail").contains("APPROVED-ish"),
        "{review:#}"
    );
}

#[test]
fn a_failing_reviewer_without_a_verdict_is_an_error_naming_its_exit_code() {
    let project = reviewed_by("echo 'error: API key not set' >&2\nexit 3\n");
    let (code, verdict) = run_check(&project, &[]);
    assert_eq!(code, 2, "{verdict:#}");
    let review = gate(&verdict, "review");
    assert_eq!(review["outcome"], "error");
    assert_eq!(review["exit_code"], 3);
    assert!(
        text(review, "summary").contains("exited with 3"),
        "{review:#}"
    );
    assert!(text(review, "summary").contains("no verdict"), "{review:#}");
    assert!(
        text(review, "output_tail").contains("API key not set"),
        "{review:#}"
    );
}

#[test]
fn a_verdict_on_stderr_or_noise_on_stderr_does_not_count_as_issues() {
    let project = reviewed_by("echo 'warning: model is deprecated' >&2\necho APPROVED\n");
    let (code, verdict) = run_check(&project, &[]);
    assert_eq!(code, 0, "{verdict:#}");
    let review = gate(&verdict, "review");
    assert!(
        review
            .get("findings")
            .is_none_or(|f| f.as_array().is_some_and(Vec::is_empty)),
        "{review:#}"
    );
}

// ---------------------------------------------------------------------------------------------
// The context on stdin
// ---------------------------------------------------------------------------------------------

#[test]
fn the_reviewer_reads_the_task_the_signal_and_the_files_outside_git() {
    let project = reviewed_by(RECORDER);
    project
        .file("src/parser.rs", "pub fn parse() -> u32 { 41 }\n")
        .file("README.md", "# parser\n")
        .signal("Implemented the parser and its tests.\n\nSTATUS: OK\n");
    let (code, verdict) = run_check(&project, &["--task", "svc-parser", "--attempt", "2"]);
    assert_eq!(code, 0, "{verdict:#}");
    let context = recorded(&project);
    assert!(
        context.contains("task `svc-parser`, attempt 2"),
        "{context}"
    );
    assert!(
        context.contains("Implemented the parser and its tests.\n\nSTATUS: OK\n"),
        "{context}"
    );
    assert!(context.contains("README.md\nsrc/parser.rs\n"), "{context}");
    assert!(
        context.contains("pub fn parse() -> u32 { 41 }"),
        "{context}"
    );
    assert!(context.contains("No contract was given"), "{context}");
    let env = std::fs::read_to_string(project.path().join("record/env.txt")).expect("env");
    assert_eq!(env, "svc-parser|2|\n");
}

#[test]
fn in_git_the_reviewer_reads_the_changed_files_and_the_patch_against_head() {
    let project = Project::new();
    let path = reviewer(&project, "review.sh", RECORDER);
    project.rules(&pipeline(&review_gate(
        &format!("[\"{path}\"]"),
        "        env: {REVIEW_MODEL: opus}\n",
    )));
    let dir = project.task_dir();
    project
        .file("calc.py", "def add(a, b):\n    return a - b\n")
        .file("untouched.py", "print('same')\n");
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "."]);
    git(&dir, &["commit", "-q", "-m", "start"]);
    project
        .file("calc.py", "def add(a, b):\n    return a + b\n")
        .file("test_calc.py", "assert add(2, 2) == 4\n")
        .signal("{\"status\": \"OK\", \"summary\": \"fixed add\"}");

    let (code, verdict) = run_check(&project, &[]);
    assert_eq!(code, 0, "{verdict:#}");
    let context = recorded(&project);
    assert!(context.contains("(git, against HEAD)"), "{context}");
    assert!(context.contains("calc.py\ntest_calc.py\n"), "{context}");
    assert!(!context.contains("untouched.py"), "{context}");
    assert!(
        context.contains("-    return a - b\n+    return a + b\n"),
        "{context}"
    );
    assert!(context.contains("assert add(2, 2) == 4"), "{context}");
    assert!(
        context.contains("{\"status\": \"OK\", \"summary\": \"fixed add\"}"),
        "{context}"
    );
    let env = std::fs::read_to_string(project.path().join("record/env.txt")).expect("env");
    assert_eq!(env, "task|1|opus\n");
}

#[test]
fn the_reviewer_reads_the_contract_when_the_rules_file_names_a_contracts_directory() {
    let project = Project::new();
    let path = reviewer(&project, "review.sh", RECORDER);
    project.rules(&format!(
        "version: 1\nstate: state\ncontracts: contracts\npipelines:\n  - name: main\n    gates:\n{}",
        review_gate(&format!("[\"{path}\"]"), "")
    ));
    let contract =
        "task_id: task\nfiles_owned: [\"src/**\"]\nsuccess_criteria:\n  - \"parse returns 42\"\n";
    project.root_file("contracts/task.yaml", contract);
    project.file("src/parser.rs", "pub fn parse() -> u32 { 41 }\n");
    let (code, verdict) = run_check(&project, &[]);
    assert_eq!(code, 0, "{verdict:#}");
    let context = recorded(&project);
    assert!(context.contains(contract), "{context}");
}

#[test]
fn a_reviewer_that_ignores_a_large_context_still_answers() {
    let project = reviewed_by("echo APPROVED\n");
    project.file("big.txt", &"x".repeat(2 * 1024 * 1024));
    // Blocked writing a context nobody reads, the gate would time out: ERROR, not PASS.
    let (code, verdict) = run_check(&project, &[]);
    assert_eq!(code, 0, "{verdict:#}");
}

// ---------------------------------------------------------------------------------------------
// Which program runs
// ---------------------------------------------------------------------------------------------

#[test]
fn a_relative_reviewer_path_is_the_rules_files_never_the_workers() {
    let project = Project::new();
    project.root_file(
        "review.sh",
        "#!/bin/sh\necho REJECTED\necho '- calc.py:1: wrong'\n",
    );
    make_executable(&project.path().join("review.sh"));
    // The worker plants an approving reviewer of its own in the task directory.
    project.file("review.sh", "#!/bin/sh\necho APPROVED\n");
    make_executable(&project.task_dir().join("review.sh"));
    project.rules(&pipeline(&review_gate("./review.sh", "")));
    let (code, verdict) = run_check(&project, &[]);
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(gate(&verdict, "review")["findings"][0]["file"], "calc.py");
}

#[test]
fn a_missing_reviewer_is_an_error_that_names_it() {
    let project = Project::new();
    project.rules(&pipeline(&review_gate(
        "[\"no-such-reviewer-xyz\", \"-p\"]",
        "",
    )));
    let (code, verdict) = run_check(&project, &[]);
    assert_eq!(code, 2, "{verdict:#}");
    assert_eq!(verdict["verdict"], "ERROR");
    let review = gate(&verdict, "review");
    assert_eq!(review["outcome"], "error");
    assert!(
        text(review, "summary").contains("`no-such-reviewer-xyz`"),
        "{review:#}"
    );
    assert!(
        reasons(&verdict).contains("no-such-reviewer-xyz"),
        "{verdict:#}"
    );

    project.rules(&pipeline(&review_gate("./reviewers/gone.sh", "")));
    let (code, verdict) = run_check(&project, &[]);
    assert_eq!(code, 2, "{verdict:#}");
    let expected = project
        .path()
        .canonicalize()
        .expect("root")
        .join("reviewers/gone.sh");
    assert!(
        text(gate(&verdict, "review"), "summary").contains(&expected.display().to_string()),
        "{verdict:#}"
    );
}

#[test]
fn rules_check_warns_about_a_reviewer_that_is_not_installed() {
    let project = Project::new();
    project.rules(&pipeline(&review_gate("no-such-reviewer-xyz", "")));
    let output = common::validator()
        .args(["rules", "check", "-c"])
        .arg(project.rules_path())
        .output()
        .expect("run");
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(all.contains("no-such-reviewer-xyz"), "{all}");
    assert!(all.contains("not on PATH"), "{all}");
}

#[test]
fn a_review_gate_refuses_keys_it_does_not_take() {
    let project = Project::new();
    project.rules(&pipeline(&review_gate(
        "my-reviewer",
        "        files: [\"src/**\"]\n",
    )));
    let output = project.check().output().expect("run");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("`files` is not a key of rule `review`"),
        "{stderr}"
    );
    assert!(stderr.contains("run, env"), "{stderr}");
}

// ---------------------------------------------------------------------------------------------
// Time
// ---------------------------------------------------------------------------------------------

#[test]
fn a_reviewer_past_its_timeout_is_an_error_and_does_not_survive() {
    let project = reviewed_by(
        "echo $$ > \"$VALIDATOR_TASK_DIR/../record/pids\"\nsleep 60 &\necho $! >> \"$VALIDATOR_TASK_DIR/../record/pids\"\nwait\n",
    );
    project.rules(&pipeline(&review_gate(
        &format!(
            "[\"{}\"]",
            project.path().join("reviewers/review.sh").display()
        ),
        "        timeout: 1s\n",
    )));
    let (code, verdict) = run_check(&project, &[]);
    let pids: Vec<u32> = std::fs::read_to_string(project.path().join("record/pids"))
        .expect("pids")
        .split_whitespace()
        .map(|p| p.parse().expect("pid"))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut left: Vec<u32> = pids.clone();
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        left.retain(|&pid| alive(pid));
    }
    for pid in &left {
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    }

    assert_eq!(code, 2, "{verdict:#}");
    assert_eq!(verdict["verdict"], "ERROR");
    let review = gate(&verdict, "review");
    assert_eq!(review["outcome"], "error");
    assert!(
        text(review, "summary").contains("timed out after 1s"),
        "{review:#}"
    );
    assert_eq!(pids.len(), 2, "{pids:?}");
    assert!(left.is_empty(), "still alive after the timeout: {left:?}");
}

// ---------------------------------------------------------------------------------------------
// The shipped example: examples/review with a stub in place of the model CLI
// ---------------------------------------------------------------------------------------------

/// A copy of examples/review whose `REVIEW_CLI` is `cli` (a stub model written from `model`,
/// when given), checked; returns the exit code, the verdict and the copy.
fn example_with(model: Option<&str>, cli: &str) -> (i32, Value, tempfile::TempDir) {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/review");
    let copy = tempfile::tempdir().expect("temp dir");
    copy_dir(&example, copy.path());
    let mut cli = cli.to_owned();
    if let Some(body) = model {
        let path = copy.path().join("fake-model");
        std::fs::write(&path, format!("#!/bin/sh\n{body}")).expect("write model");
        make_executable(&path);
        cli = format!("{} {cli}", path.display());
    }
    let rules = copy.path().join("validator.yaml");
    let text = std::fs::read_to_string(&rules).expect("rules");
    let line = text
        .lines()
        .find(|line| line.trim_start().starts_with("REVIEW_CLI:"))
        .expect("the example sets REVIEW_CLI");
    let indent = &line[..line.len() - line.trim_start().len()];
    // The stub model writes what it read beside the task: the only place besides its scratch
    // directory the reviewer's sandbox lets it write.
    let writable = text
        .lines()
        .find(|line| line.trim_start().starts_with("writable:"))
        .expect("the example names what the model CLI writes");
    std::fs::create_dir_all(copy.path().join("record")).expect("record dir");
    std::fs::write(
        &rules,
        text.replace(line, &format!("{indent}REVIEW_CLI: {cli}"))
            .replace(writable, "        writable: [record]"),
    )
    .expect("write rules");
    let mut cmd = common::validator();
    cmd.current_dir(copy.path()).args([
        "check",
        "--task-dir",
        "staging/stats",
        "--signal",
        "staging/stats.done",
        "--format",
        "json",
    ]);
    isolate_git(&mut cmd);
    let (code, verdict) = json_verdict(cmd);
    (code, verdict, copy)
}

#[test]
fn the_example_reviewer_gives_the_model_the_prompt_and_the_context_and_passes_its_rejection_on() {
    let (code, verdict, copy) = example_with(
        Some(
            "cat > \"$(dirname \"$0\")/record/model-input.md\"\necho 'Having read everything, my verdict:'\necho '**REJECTED**'\necho '- stats.py:11: median of an even-length list returns the upper middle value'\necho '- the signal says empty input is handled, but mean([]) raises ZeroDivisionError'\n",
        ),
        "--model reviewer",
    );
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(gate(&verdict, "test")["outcome"], "pass");
    let review = gate(&verdict, "review");
    assert_eq!(review["outcome"], "fail");
    assert_eq!(review["findings"][0]["file"], "stats.py");
    assert_eq!(review["findings"][0]["line"], 11);
    assert!(
        text(&review["findings"][1], "message").contains("mean([])"),
        "{review:#}"
    );

    let input =
        std::fs::read_to_string(copy.path().join("record/model-input.md")).expect("model input");
    let prompt = std::fs::read_to_string(copy.path().join("prompt.md")).expect("prompt");
    assert!(input.starts_with(&prompt), "{input}");
    assert!(
        input.contains("# Review: task `stats`, attempt 1"),
        "{input}"
    );
    assert!(
        input.contains("Both handle empty input and even-length lists."),
        "{input}"
    );
    assert!(input.contains("stats.py\ntest_stats.py\n"), "{input}");
    assert!(
        input.contains("   5      return sum(values) / len(values)"),
        "{input}"
    );
}

#[test]
fn the_example_reviewer_passes_an_approval_on() {
    let (code, verdict, _copy) = example_with(Some("cat > /dev/null\necho APPROVED\n"), "");
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(gate(&verdict, "review")["outcome"], "pass");
}

#[test]
fn the_example_reviewer_fails_closed_when_the_model_gives_no_verdict() {
    let (code, verdict, _copy) = example_with(
        Some("cat > /dev/null\necho 'Looks good to me overall.'\n"),
        "",
    );
    assert_eq!(code, 1, "{verdict:#}");
    let review = gate(&verdict, "review");
    assert_eq!(review["outcome"], "fail");
    assert!(
        text(&review["findings"][0], "message").contains("without a line APPROVED or REJECTED"),
        "{review:#}"
    );

    let (code, verdict, _copy) = example_with(
        Some("cat > /dev/null\necho 'rate limited' >&2\nexit 7\n"),
        "",
    );
    assert_eq!(code, 1, "{verdict:#}");
    let review = gate(&verdict, "review");
    assert!(
        text(&review["findings"][0], "message").contains("failed (exit 7)"),
        "{review:#}"
    );
    assert!(
        text(review, "output_tail").contains("rate limited"),
        "{review:#}"
    );
}

#[test]
fn the_example_reviewer_without_its_model_cli_is_an_error_not_an_approval() {
    let (code, verdict, _copy) = example_with(None, "no-such-model-cli -p");
    assert_eq!(code, 2, "{verdict:#}");
    assert_eq!(verdict["verdict"], "ERROR");
    let review = gate(&verdict, "review");
    assert_eq!(review["outcome"], "error");
    assert_eq!(review["exit_code"], 127);
    assert!(
        text(review, "output_tail").contains("'no-such-model-cli' is not installed"),
        "{review:#}"
    );
}

#[test]
fn a_reviewer_that_floods_its_output_past_the_cap_cannot_be_read_as_approving() {
    // REJECTED first, then more than the 1 MiB cap, then a line that would read as APPROVED
    // if only the kept tail were parsed.
    let project = reviewed_by(
        "echo REJECTED\necho '- a.py:1: wrong'\nhead -c 1200000 /dev/zero | tr '\\0' 'x'\necho\necho APPROVED\n",
    );
    let (code, verdict) = run_check(&project, &[]);
    assert_eq!(code, 2, "{verdict:#}");
    assert!(
        reasons(&verdict).contains("may be among the"),
        "{verdict:#}"
    );
}
