use crate::common;
use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::{Project, gate, git, isolate_git, json_verdict, pipeline, reasons};
use serde_json::Value;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// `check --format json` with git's environment pinned so nothing outside the test leaks in.
fn run_check(project: &Project) -> (i32, Value) {
    let mut cmd = project.check();
    cmd.args(["--format", "json"]);
    isolate_git(&mut cmd);
    json_verdict(cmd)
}

/// Writes `body` as a script beside (not inside) the task directory and returns its absolute path.
fn script(project: &Project, name: &str, body: &str) -> String {
    let rel = format!("scripts/{name}");
    project.root_file(&rel, body);
    project.path().join(rel).display().to_string()
}

/// A gate that runs `sh <script>` under `rule`, with extra YAML lines (indented 8) appended.
fn sh_gate(name: &str, rule: &str, script: &str, extra: &str) -> String {
    format!(
        "      - name: {name}\n        rule: {rule}\n        run: [\"sh\", \"{script}\"]\n{extra}"
    )
}

fn findings(gate: &Value) -> Vec<Value> {
    gate["findings"].as_array().cloned().unwrap_or_default()
}

/// The findings of `gate` about `file`.
fn findings_for(gate: &Value, file: &str) -> Vec<Value> {
    findings(gate)
        .into_iter()
        .filter(|f| f["file"] == file)
        .collect()
}

fn message(finding: &Value) -> &str {
    finding["message"].as_str().unwrap_or_default()
}

fn summary(gate: &Value) -> &str {
    gate["summary"].as_str().unwrap_or_default()
}

fn output_tail(gate: &Value) -> &str {
    gate["output_tail"].as_str().unwrap_or_default()
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().expect("canonicalize")
}

/// True while `pid` is a live process (a zombie waiting to be reaped counts as dead).
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

/// The pids a command wrote to `pids` in the task directory.
fn recorded_pids(project: &Project) -> Vec<u32> {
    let text = std::fs::read_to_string(project.task_dir().join("pids")).expect("pids file");
    let pids: Vec<u32> = text
        .split_whitespace()
        .map(|p| p.parse().expect("pid"))
        .collect();
    assert!(!pids.is_empty(), "no pid recorded");
    pids
}

/// Waits (generously) for every pid to be gone; returns the ones still alive.
fn survivors(pids: &[u32]) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left: Vec<u32> = pids.iter().copied().filter(|&p| alive(p)).collect();
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn kill_all(pids: &[u32]) {
    for pid in pids {
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    }
}

fn snapshot(project: &Project) {
    let mut cmd = common::validator();
    cmd.arg("snapshot")
        .arg("task")
        .arg("-c")
        .arg(project.rules_path())
        .arg("--task-dir")
        .arg(project.task_dir());
    cmd.assert().success();
}

// ---------------------------------------------------------------------------------------------
// exists
// ---------------------------------------------------------------------------------------------

const EXISTS_OUTPUTS: &str = "      - name: outputs\n        rule: exists\n        paths: [\"Cargo.toml\", \"src/**/*.rs\"]\n        forbid: [\"**/*.orig\"]\n";

#[test]
fn exists_passes_when_every_path_glob_matches() {
    let project = Project::new();
    project
        .rules(&pipeline(EXISTS_OUTPUTS))
        .file("Cargo.toml", "[package]\n")
        .file("src/deep/lib.rs", "fn a() {}\n");
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(verdict["verdict"], "PASS");
    assert_eq!(gate(&verdict, "outputs")["outcome"], "pass");
}

#[test]
fn exists_fails_naming_the_glob_that_matches_nothing() {
    let project = Project::new();
    project
        .rules(&pipeline(EXISTS_OUTPUTS))
        .file("Cargo.toml", "[package]\n")
        .file("README.md", "no sources\n");
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(verdict["verdict"], "FAIL");
    let outputs = gate(&verdict, "outputs");
    assert_eq!(outputs["outcome"], "fail");
    assert!(summary(outputs).contains("src/**/*.rs"), "{outputs:#}");
    assert!(summary(outputs).contains("no file matches"), "{outputs:#}");
    assert!(reasons(&verdict).contains("src/**/*.rs"), "{verdict:#}");
    assert!(
        !findings(outputs)
            .iter()
            .any(|f| message(f).contains("Cargo.toml")),
        "{outputs:#}"
    );
}

#[test]
fn exists_fails_naming_a_file_that_matches_forbid() {
    let project = Project::new();
    project
        .rules(&pipeline(EXISTS_OUTPUTS))
        .file("Cargo.toml", "[package]\n")
        .file("src/lib.rs", "fn a() {}\n")
        .file("src/lib.rs.orig", "fn a() {}\n");
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let outputs = gate(&verdict, "outputs");
    assert_eq!(outputs["outcome"], "fail");
    let found = findings_for(outputs, "src/lib.rs.orig");
    assert_eq!(found.len(), 1, "{outputs:#}");
    assert!(message(&found[0]).contains("forbid"), "{outputs:#}");
    assert_eq!(findings(outputs).len(), 1, "{outputs:#}");
}

#[test]
fn exists_non_empty_fails_on_an_empty_file() {
    let project = Project::new();
    project
        .rules(&pipeline(
            "      - name: outputs\n        rule: exists\n        paths: [\"*.md\"]\n        non_empty: true\n",
        ))
        .file("full.md", "content\n")
        .file("empty.md", "");
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let outputs = gate(&verdict, "outputs");
    let found = findings_for(outputs, "empty.md");
    assert_eq!(found.len(), 1, "{outputs:#}");
    assert!(message(&found[0]).contains("empty"), "{outputs:#}");
    assert!(findings_for(outputs, "full.md").is_empty(), "{outputs:#}");
}

#[test]
fn exists_min_count_fails_when_too_few_files_match_and_passes_when_enough_do() {
    let project = Project::new();
    project
        .rules(&pipeline(
            "      - name: outputs\n        rule: exists\n        paths: [\"tests/*.py\"]\n        min_count: 3\n",
        ))
        .file("tests/test_a.py", "")
        .file("tests/test_b.py", "");
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let outputs = gate(&verdict, "outputs");
    assert!(summary(outputs).contains("tests/*.py"), "{outputs:#}");
    assert!(
        summary(outputs).contains("2 files match, at least 3"),
        "{outputs:#}"
    );

    project.file("tests/test_c.py", "");
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(gate(&verdict, "outputs")["outcome"], "pass");
}

// ---------------------------------------------------------------------------------------------
// lint
// ---------------------------------------------------------------------------------------------

#[test]
fn lint_fails_with_file_line_column_findings_when_the_command_exits_nonzero() {
    let project = Project::new();
    let lint = script(
        &project,
        "lint.sh",
        "echo 'checking...'\necho 'src/a.rs:3:5: unused variable `x`'\nexit 1\n",
    );
    project
        .rules(&pipeline(&sh_gate("lint", "lint", &lint, "")))
        .file("src/a.rs", "fn main() {}\n");
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(verdict["verdict"], "FAIL");
    let lint = gate(&verdict, "lint");
    assert_eq!(lint["outcome"], "fail");
    assert_eq!(lint["exit_code"], 1);
    let found = findings(lint);
    assert_eq!(found.len(), 1, "{lint:#}");
    assert_eq!(found[0]["file"], "src/a.rs");
    assert_eq!(found[0]["line"], 3);
    assert_eq!(found[0]["column"], 5);
    assert_eq!(found[0]["message"], "unused variable `x`");
    assert!(summary(lint).contains("src/a.rs"), "{lint:#}");
}

#[test]
fn lint_passes_when_the_command_exits_zero() {
    let project = Project::new();
    let lint = script(&project, "lint.sh", "echo 'all good'\nexit 0\n");
    project.rules(&pipeline(&sh_gate("lint", "lint", &lint, "")));
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 0, "{verdict:#}");
    let lint = gate(&verdict, "lint");
    assert_eq!(lint["outcome"], "pass");
    assert_eq!(lint["exit_code"], 0);
    assert!(output_tail(lint).contains("all good"), "{lint:#}");
}

#[test]
fn lint_passes_each_matching_file_as_exactly_one_argument_without_a_shell() {
    let project = Project::new();
    let args = script(
        &project,
        "args.sh",
        "for a in \"$@\"; do printf 'ARG<%s>\\n' \"$a\"; done\n",
    );
    project
        .rules(&pipeline(&sh_gate(
            "lint",
            "lint",
            &args,
            "        files: [\"*.txt\"]\n",
        )))
        .file("$(touch pwned).txt", "x")
        .file("-rf.txt", "x")
        .file("a b.txt", "x")
        .file("plain.txt", "x")
        .file("ignored.md", "x");
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 0, "{verdict:#}");
    let lint = gate(&verdict, "lint");
    let mut got: Vec<&str> = output_tail(lint)
        .lines()
        .filter(|l| l.starts_with("ARG<"))
        .collect();
    got.sort_unstable();
    let mut want = vec![
        "ARG<$(touch pwned).txt>",
        "ARG<./-rf.txt>",
        "ARG<a b.txt>",
        "ARG<plain.txt>",
    ];
    want.sort_unstable();
    assert_eq!(got, want, "{lint:#}");
    for dir in [
        project.task_dir(),
        project.path().to_path_buf(),
        std::env::current_dir().expect("cwd"),
    ] {
        assert!(!dir.join("pwned").exists(), "pwned created in {dir:?}");
    }
    assert!(project.task_dir().join("-rf.txt").exists());
}

#[test]
fn lint_command_sees_the_task_the_attempt_and_the_gate_env() {
    let project = Project::new();
    let env = script(
        &project,
        "env.sh",
        "printf 'TASK=%s\\nDIR=%s\\nATTEMPT=%s\\nGREETING=%s\\n' \"$VALIDATOR_TASK\" \"$VALIDATOR_TASK_DIR\" \"$VALIDATOR_ATTEMPT\" \"$GREETING\"\n",
    );
    project.rules(&pipeline(&sh_gate(
        "lint",
        "lint",
        &env,
        "        env:\n          GREETING: \"hello world\"\n",
    )));
    let mut cmd = project.check();
    cmd.args(["--attempt", "3", "--format", "json"]);
    let (code, verdict) = json_verdict(cmd);
    assert_eq!(code, 0, "{verdict:#}");
    let tail = output_tail(gate(&verdict, "lint"));
    let lines: Vec<&str> = tail.lines().collect();
    let task_dir = canonical(&project.task_dir());
    assert!(lines.contains(&"TASK=task"), "{tail}");
    assert!(
        lines.contains(&format!("DIR={}", task_dir.display()).as_str()),
        "{tail}"
    );
    assert!(lines.contains(&"ATTEMPT=3"), "{tail}");
    assert!(lines.contains(&"GREETING=hello world"), "{tail}");
    assert_eq!(verdict["attempt"], 3);
}

#[test]
fn lint_runs_in_the_cwd_the_gate_names() {
    let project = Project::new();
    let pwd = script(&project, "pwd.sh", "printf 'PWD=%s\\n' \"$(pwd -P)\"\n");
    project
        .rules(&pipeline(&sh_gate(
            "lint",
            "lint",
            &pwd,
            "        cwd: sub/dir\n",
        )))
        .file("sub/dir/keep.txt", "x");
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 0, "{verdict:#}");
    let want = format!(
        "PWD={}",
        canonical(&project.task_dir().join("sub/dir")).display()
    );
    let tail = output_tail(gate(&verdict, "lint"));
    assert!(tail.lines().any(|l| l == want), "{tail}\nwanted {want}");
}

#[test]
fn lint_runs_in_the_task_directory_by_default() {
    let project = Project::new();
    let pwd = script(&project, "pwd.sh", "printf 'PWD=%s\\n' \"$(pwd -P)\"\n");
    project.rules(&pipeline(&sh_gate("lint", "lint", &pwd, "")));
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 0, "{verdict:#}");
    let want = format!("PWD={}", canonical(&project.task_dir()).display());
    let tail = output_tail(gate(&verdict, "lint"));
    assert!(tail.lines().any(|l| l == want), "{tail}\nwanted {want}");
}

#[test]
fn lint_findings_printed_absolute_or_with_dot_slash_are_relative_to_the_task() {
    let project = Project::new();
    let lint = script(
        &project,
        "lint.sh",
        "printf '%s/src/a.rs:1:2: absolute\\n' \"$VALIDATOR_TASK_DIR\"\necho './src/b.rs:3:4: dotted'\nexit 1\n",
    );
    project
        .rules(&pipeline(&sh_gate("lint", "lint", &lint, "")))
        .file("src/a.rs", "")
        .file("src/b.rs", "");
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let lint = gate(&verdict, "lint");
    assert_eq!(findings_for(lint, "src/a.rs").len(), 1, "{lint:#}");
    assert_eq!(findings_for(lint, "src/b.rs").len(), 1, "{lint:#}");
    assert_eq!(findings(lint).len(), 2, "{lint:#}");
}

#[test]
fn lint_findings_from_a_command_run_in_cwd_are_relative_to_the_task() {
    // The linter runs in `pkg/` and names its files relative to there; the verdict must name
    // files a reader can open from the task directory.
    let project = Project::new();
    let lint = script(
        &project,
        "lint.sh",
        "echo './mod.py:2:1: E999 dotted'\necho 'util.py:5:3: F401 plain'\nexit 1\n",
    );
    project
        .rules(&pipeline(&sh_gate(
            "lint",
            "lint",
            &lint,
            "        cwd: pkg\n",
        )))
        .file("pkg/mod.py", "x = (\n")
        .file("pkg/util.py", "import os\n");
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let lint = gate(&verdict, "lint");
    assert_eq!(findings_for(lint, "pkg/mod.py").len(), 1, "{lint:#}");
    assert_eq!(findings_for(lint, "pkg/util.py").len(), 1, "{lint:#}");
}

#[test]
fn lint_passes_every_file_even_when_they_do_not_fit_one_command_line() {
    let project = Project::new();
    let count = script(&project, "count.sh", "echo \"BATCH $#\"\n");
    project.rules(&pipeline(&sh_gate(
        "lint",
        "lint",
        &count,
        "        files: [\"many/*.txt\"]\n",
    )));
    // About 1.4 MB of arguments: more than one batch may hold.
    let total = 6000;
    let many = project.task_dir().join("many");
    std::fs::create_dir_all(&many).expect("mkdir");
    for i in 0..total {
        let name = format!("{i:05}_{}.txt", "n".repeat(200));
        std::fs::write(many.join(name), "").expect("write");
    }
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 0, "{verdict:#}");
    let lint = gate(&verdict, "lint");
    let batches: Vec<usize> = output_tail(lint)
        .lines()
        .filter_map(|l| l.strip_prefix("BATCH "))
        .map(|n| n.parse().expect("count"))
        .collect();
    assert!(batches.len() > 1, "{lint:#}");
    assert_eq!(batches.iter().sum::<usize>(), total, "{lint:#}");
}

#[test]
fn lint_never_passes_a_link_pointing_outside_the_task_as_an_argument() {
    let project = Project::new();
    let args = script(
        &project,
        "args.sh",
        "for a in \"$@\"; do printf 'ARG<%s>\\n' \"$a\"; done\n",
    );
    project
        .rules(&pipeline(&sh_gate(
            "lint",
            "lint",
            &args,
            "        files: [\"*.py\"]\n",
        )))
        .root_file("outside/secret.py", "SECRET = 1\n")
        .file("main.py", "print(1)\n");
    std::os::unix::fs::symlink(
        project.path().join("outside/secret.py"),
        project.task_dir().join("leak.py"),
    )
    .expect("symlink");
    let (code, verdict) = run_check(&project);
    // The link is reported (see the next test), so the gate fails; the command never saw it.
    assert_eq!(code, 1, "{verdict:#}");
    let tail = output_tail(gate(&verdict, "lint"));
    let args: Vec<&str> = tail.lines().filter(|l| l.starts_with("ARG<")).collect();
    assert_eq!(args, ["ARG<main.py>"], "{tail}");
}

#[test]
fn lint_reports_a_files_link_pointing_outside_the_task() {
    // docs/rules-file.md: "a symlink that points outside it is not followed and is reported".
    let project = Project::new();
    let args = script(&project, "args.sh", "exit 0\n");
    project
        .rules(&pipeline(&sh_gate(
            "lint",
            "lint",
            &args,
            "        files: [\"*.py\"]\n",
        )))
        .root_file("outside/secret.py", "SECRET = 1\n")
        .file("main.py", "print(1)\n");
    std::os::unix::fs::symlink(
        project.path().join("outside/secret.py"),
        project.task_dir().join("leak.py"),
    )
    .expect("symlink");
    let (_, verdict) = run_check(&project);
    let lint = gate(&verdict, "lint");
    let reported = findings_for(lint, "leak.py")
        .iter()
        .any(|f| message(f).contains("outside"))
        || summary(lint).contains("leak.py");
    assert!(
        reported,
        "the escaping link leak.py is not reported: {lint:#}"
    );
}

#[test]
fn a_command_killed_by_a_signal_fails_the_gate_saying_so() {
    let project = Project::new();
    let run = script(&project, "die.sh", "echo dying\nkill -9 $$\n");
    project.rules(&pipeline(&sh_gate("test", "test", &run, "")));
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let test = gate(&verdict, "test");
    assert_eq!(test["outcome"], "fail");
    assert!(summary(test).contains("signal 9"), "{test:#}");
}

#[test]
fn lint_with_a_command_that_is_not_found_is_an_error_naming_it() {
    let project = Project::new();
    project.rules(&pipeline(
        "      - name: lint\n        rule: lint\n        run: [\"no-such-linter-xyz\", \"--check\"]\n",
    ));
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 2, "{verdict:#}");
    assert_eq!(verdict["verdict"], "ERROR");
    let lint = gate(&verdict, "lint");
    assert_eq!(lint["outcome"], "error");
    assert!(summary(lint).contains("no-such-linter-xyz"), "{lint:#}");
    assert!(
        reasons(&verdict).contains("no-such-linter-xyz"),
        "{verdict:#}"
    );
}

// ---------------------------------------------------------------------------------------------
// test
// ---------------------------------------------------------------------------------------------

fn failing_test_gate(project: &Project, output: &str) -> Value {
    let body = format!("cat <<'EOF'\n{output}\nEOF\nexit 1\n");
    let run = script(project, "test.sh", &body);
    project.rules(&pipeline(&sh_gate("test", "test", &run, "")));
    let (code, verdict) = run_check(project);
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(verdict["verdict"], "FAIL");
    let test = gate(&verdict, "test").clone();
    assert_eq!(test["outcome"], "fail");
    test
}

#[test]
fn test_names_the_failed_cargo_test() {
    let project = Project::new();
    let test = failing_test_gate(
        &project,
        "running 2 tests\ntest foo::ok ... ok\ntest foo::bar ... FAILED\n\nfailures:\n    foo::bar\n\ntest result: FAILED. 1 passed; 1 failed",
    );
    let found = findings(&test);
    assert_eq!(found.len(), 1, "{test:#}");
    assert!(message(&found[0]).contains("foo::bar"), "{test:#}");
    assert!(
        summary(&test).contains("1 test failed: foo::bar"),
        "{test:#}"
    );
    assert!(!summary(&test).contains("foo::ok"), "{test:#}");
}

#[test]
fn test_names_the_failed_pytest_test_with_its_file_and_reason() {
    let project = Project::new();
    let test = failing_test_gate(
        &project,
        "==== short test summary info ====\nFAILED tests/test_x.py::test_y - assert 1 == 2\n==== 1 failed, 3 passed ====",
    );
    let found = findings(&test);
    assert_eq!(found.len(), 1, "{test:#}");
    assert_eq!(found[0]["file"], "tests/test_x.py");
    assert!(
        message(&found[0]).contains("tests/test_x.py::test_y"),
        "{test:#}"
    );
    assert!(message(&found[0]).contains("assert 1 == 2"), "{test:#}");
}

#[test]
fn test_names_the_failed_go_test() {
    let project = Project::new();
    let test = failing_test_gate(
        &project,
        "=== RUN   TestX\n--- FAIL: TestX (0.00s)\n    x_test.go:9: got 1, want 2\nFAIL\nFAIL\texample.com/x\t0.002s",
    );
    assert!(
        findings(&test).iter().any(|f| message(f).contains("TestX")),
        "{test:#}"
    );
    assert!(summary(&test).contains("TestX"), "{test:#}");
}

#[test]
fn test_reads_failed_tests_from_a_junit_report() {
    let project = Project::new();
    let run = script(
        &project,
        "junit.sh",
        r#"mkdir -p reports
cat > reports/junit.xml <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="auth" tests="2" failures="1">
    <testcase classname="auth.Login" name="accepts_good_password"/>
    <testcase classname="auth.Login" name="rejects_bad_password"><failure message="expected 401">trace</failure></testcase>
  </testsuite>
</testsuites>
EOF
echo "1 of 2 tests failed"
exit 1
"#,
    );
    project.rules(&pipeline(&sh_gate(
        "test",
        "test",
        &run,
        "        junit: reports/junit.xml\n",
    )));
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let test = gate(&verdict, "test");
    let found = findings(test);
    assert_eq!(found.len(), 1, "{test:#}");
    assert!(
        message(&found[0]).contains("rejects_bad_password"),
        "{test:#}"
    );
    assert!(message(&found[0]).contains("expected 401"), "{test:#}");
    assert!(summary(test).contains("rejects_bad_password"), "{test:#}");
    assert!(!summary(test).contains("accepts_good_password"), "{test:#}");
}

#[test]
fn test_passes_when_the_command_exits_zero() {
    let project = Project::new();
    let run = script(&project, "test.sh", "echo 'test foo::ok ... ok'\n");
    project.rules(&pipeline(&sh_gate("test", "test", &run, "")));
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(gate(&verdict, "test")["outcome"], "pass");
}

// ---------------------------------------------------------------------------------------------
// timeouts, process groups, output cap
// ---------------------------------------------------------------------------------------------

#[test]
fn a_timeout_fails_the_gate_and_kills_the_whole_process_group() {
    let project = Project::new();
    let run = script(
        &project,
        "hang.sh",
        "echo $$ > pids\nsleep 600 & echo $! >> pids\nsleep 601 & echo $! >> pids\nwait\n",
    );
    project.rules(&pipeline(&sh_gate(
        "slow",
        "test",
        &run,
        "        timeout: 500ms\n",
    )));
    // Ten minutes of sleep behind the gate: a run that waited for them would not be done yet.
    let (code, verdict) = run_check(&project);
    let pids = recorded_pids(&project);
    let left = survivors(&pids);
    kill_all(&left);

    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(verdict["verdict"], "FAIL");
    let slow = gate(&verdict, "slow");
    assert_eq!(slow["outcome"], "fail");
    assert!(summary(slow).contains("timed out"), "{slow:#}");
    assert!(summary(slow).contains("500ms"), "{slow:#}");
    assert_eq!(pids.len(), 3, "{pids:?}");
    assert!(left.is_empty(), "still alive after the timeout: {left:?}");
}

#[test]
fn a_background_child_does_not_outlive_a_command_that_exits_zero() {
    let project = Project::new();
    let run = script(
        &project,
        "daemon.sh",
        "echo $$ > pids\nsleep 600 & echo $! >> pids\necho started\nexit 0\n",
    );
    project.rules(&pipeline(&sh_gate("lint", "lint", &run, "")));
    let (code, verdict) = run_check(&project);
    let pids = recorded_pids(&project);
    let left = survivors(&pids);
    kill_all(&left);

    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(gate(&verdict, "lint")["outcome"], "pass");
    assert_eq!(pids.len(), 2, "{pids:?}");
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn a_flood_of_output_keeps_the_verdict_small_and_keeps_the_tail() {
    let project = Project::new();
    let run = script(
        &project,
        "flood.sh",
        "head -c 50000000 /dev/zero | tr '\\0' 'x'\necho END\n",
    );
    project.rules(&pipeline(&sh_gate(
        "lint",
        "lint",
        &run,
        "        timeout: 2m\n",
    )));
    let output = project
        .check()
        .args(["--format", "json"])
        .output()
        .expect("run validator");
    assert!(
        output.stdout.len() < 200_000,
        "verdict is {} bytes",
        output.stdout.len()
    );
    let verdict: Value = serde_json::from_slice(&output.stdout).expect("verdict json");
    assert_eq!(output.status.code(), Some(0), "{verdict:#}");
    let lint = gate(&verdict, "lint");
    assert_eq!(lint["outcome"], "pass");
    assert!(output_tail(lint).ends_with("END"), "{lint:#}");
}

// ---------------------------------------------------------------------------------------------
// schema
// ---------------------------------------------------------------------------------------------

const REPORT_SCHEMA: &str = r#"{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["count"],
  "properties": {"count": {"type": "integer"}}
}"#;

fn schema_gate(files: &str, extra: &str) -> String {
    pipeline(&format!(
        "      - name: report\n        rule: schema\n        schema: schemas/report.schema.json\n        files: {files}\n{extra}"
    ))
}

#[test]
fn schema_passes_a_valid_json_document() {
    let project = Project::new();
    project
        .rules(&schema_gate("[\"report.json\"]", ""))
        .root_file("schemas/report.schema.json", REPORT_SCHEMA)
        .file("report.json", r#"{"count": 3}"#);
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(gate(&verdict, "report")["outcome"], "pass");
}

#[test]
fn schema_fails_naming_the_file_and_the_instance_path() {
    let project = Project::new();
    project
        .rules(&schema_gate("[\"*.json\"]", ""))
        .root_file("schemas/report.schema.json", REPORT_SCHEMA)
        .file("good.json", r#"{"count": 1}"#)
        .file("report.json", r#"{"count": "three"}"#);
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let report = gate(&verdict, "report");
    assert_eq!(report["outcome"], "fail");
    let found = findings_for(report, "report.json");
    assert_eq!(found.len(), 1, "{report:#}");
    assert!(message(&found[0]).starts_with("/count"), "{report:#}");
    assert!(findings_for(report, "good.json").is_empty(), "{report:#}");
}

#[test]
fn many_failing_documents_give_the_first_findings_in_file_order_whatever_the_threads_do() {
    let project = Project::new();
    project
        .rules(&schema_gate("[\"docs/*.json\"]", ""))
        .root_file("schemas/report.schema.json", REPORT_SCHEMA);
    for i in 0..400 {
        let body = if i % 2 == 0 {
            r#"{"count": 1}"#
        } else {
            r#"{"count": "x"}"#
        };
        project.file(&format!("docs/{i:03}.json"), body);
    }
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let files: Vec<String> = gate(&verdict, "report")["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| f["file"].as_str().unwrap_or_default().to_owned())
        .collect();
    let expected: Vec<String> = (0..400)
        .filter(|i| i % 2 == 1)
        .take(files.len())
        .map(|i| format!("docs/{i:03}.json"))
        .collect();
    assert!(files.len() >= 100, "{}", files.len());
    assert_eq!(files, expected);
}

#[test]
fn schema_validates_yaml_documents_too() {
    let project = Project::new();
    project
        .rules(&schema_gate("[\"*.yaml\"]", ""))
        .root_file("schemas/report.schema.json", REPORT_SCHEMA)
        .file("good.yaml", "count: 3\n")
        .file("bad.yaml", "count: many\n");
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let report = gate(&verdict, "report");
    let found = findings_for(report, "bad.yaml");
    assert_eq!(found.len(), 1, "{report:#}");
    assert!(message(&found[0]).starts_with("/count"), "{report:#}");
    assert!(findings_for(report, "good.yaml").is_empty(), "{report:#}");
}

#[test]
fn schema_fails_on_a_document_that_does_not_parse() {
    let project = Project::new();
    project
        .rules(&schema_gate("[\"report.json\"]", ""))
        .root_file("schemas/report.schema.json", REPORT_SCHEMA)
        .file("report.json", "{\"count\": 3,,}");
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let report = gate(&verdict, "report");
    assert_eq!(report["outcome"], "fail");
    let found = findings_for(report, "report.json");
    assert_eq!(found.len(), 1, "{report:#}");
    assert!(
        message(&found[0]).contains("does not parse as JSON"),
        "{report:#}"
    );
    assert_eq!(found[0]["line"], 1, "{report:#}");
}

#[test]
fn schema_does_not_read_a_file_over_max_bytes() {
    let project = Project::new();
    let big = format!(r#"{{"count": 1, "padding": "{}"}}"#, "p".repeat(500));
    project
        .rules(&schema_gate(
            "[\"report.json\"]",
            "        max_bytes: 100\n",
        ))
        .root_file("schemas/report.schema.json", REPORT_SCHEMA)
        .file("report.json", &big);
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let report = gate(&verdict, "report");
    let found = findings_for(report, "report.json");
    assert_eq!(found.len(), 1, "{report:#}");
    assert!(message(&found[0]).contains("max_bytes"), "{report:#}");
    assert!(message(&found[0]).contains("not read"), "{report:#}");
}

#[test]
fn schema_with_a_missing_schema_file_is_an_error() {
    let project = Project::new();
    project
        .rules(&schema_gate("[\"report.json\"]", ""))
        .file("report.json", r#"{"count": 3}"#);
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 2, "{verdict:#}");
    assert_eq!(verdict["verdict"], "ERROR");
    let report = gate(&verdict, "report");
    assert_eq!(report["outcome"], "error");
    assert!(summary(report).contains("report.schema.json"), "{report:#}");
}

#[test]
fn schema_honours_draft_04_semantics() {
    // In draft 4, `exclusiveMaximum` is a boolean modifying `maximum`; later drafts reject it.
    let project = Project::new();
    project
        .rules(&schema_gate("[\"report.json\"]", ""))
        .root_file(
            "schemas/report.schema.json",
            r#"{
  "$schema": "http://json-schema.org/draft-04/schema#",
  "type": "object",
  "properties": {"count": {"type": "integer", "maximum": 10, "exclusiveMaximum": true}}
}"#,
        )
        .file("report.json", r#"{"count": 10}"#);
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let report = gate(&verdict, "report");
    let found = findings_for(report, "report.json");
    assert_eq!(found.len(), 1, "{report:#}");
    assert!(message(&found[0]).starts_with("/count"), "{report:#}");

    project.file("report.json", r#"{"count": 9}"#);
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(gate(&verdict, "report")["outcome"], "pass");
}

#[test]
fn schema_with_a_remote_https_ref_is_an_error() {
    let project = Project::new();
    project
        .rules(&schema_gate("[\"report.json\"]", ""))
        .root_file(
            "schemas/report.schema.json",
            r#"{"properties": {"count": {"$ref": "https://example.com/schemas/count.json"}}}"#,
        )
        .file("report.json", r#"{"count": 3}"#);
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 2, "{verdict:#}");
    assert_eq!(verdict["verdict"], "ERROR");
    let report = gate(&verdict, "report");
    assert_eq!(report["outcome"], "error");
    assert!(
        summary(report).contains("https://example.com/schemas/count.json"),
        "{report:#}"
    );
}

#[test]
fn schema_never_fetches_a_remote_ref() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port();
    let project = Project::new();
    project
        .rules(&schema_gate("[\"report.json\"]", ""))
        .root_file(
            "schemas/report.schema.json",
            &format!(
                r#"{{"properties": {{"count": {{"$ref": "http://127.0.0.1:{port}/count.json"}}}}}}"#
            ),
        )
        .file("report.json", r#"{"count": 3}"#);
    let (code, verdict) = run_check(&project);
    let connection = listener.accept();
    assert!(
        matches!(&connection, Err(err) if err.kind() == ErrorKind::WouldBlock),
        "the validator connected to the $ref's server: {connection:?}"
    );
    assert_eq!(code, 2, "{verdict:#}");
    assert_eq!(verdict["verdict"], "ERROR");
}

#[test]
fn schema_resolves_a_local_ref_to_a_sibling_schema_file() {
    let project = Project::new();
    project
        .rules(&schema_gate("[\"report.json\"]", ""))
        .root_file(
            "schemas/report.schema.json",
            r#"{"type": "object", "properties": {"item": {"$ref": "item.schema.json"}}}"#,
        )
        .root_file(
            "schemas/item.schema.json",
            r#"{"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}"#,
        )
        .file("report.json", r#"{"item": {"id": 7}}"#);
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let report = gate(&verdict, "report");
    let found = findings_for(report, "report.json");
    assert_eq!(found.len(), 1, "{report:#}");
    assert!(message(&found[0]).starts_with("/item/id"), "{report:#}");

    project.file("report.json", r#"{"item": {"id": "seven"}}"#);
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(gate(&verdict, "report")["outcome"], "pass");
}

#[test]
fn schema_fails_when_no_file_matches() {
    let project = Project::new();
    project
        .rules(&schema_gate("[\"report.json\"]", ""))
        .root_file("schemas/report.schema.json", REPORT_SCHEMA)
        .file("other.json", r#"{"count": 3}"#);
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let report = gate(&verdict, "report");
    assert_eq!(report["outcome"], "fail");
    assert!(summary(report).contains("no file matches"), "{report:#}");
    assert!(summary(report).contains("report.json"), "{report:#}");
}

// ---------------------------------------------------------------------------------------------
// file-scope
// ---------------------------------------------------------------------------------------------

fn scope_gate(keys: &str) -> String {
    pipeline(&format!(
        "      - name: scope\n        rule: file-scope\n{keys}"
    ))
}

#[test]
fn file_scope_without_git_or_baseline_counts_every_file_as_changed() {
    let project = Project::new();
    project
        .rules(&scope_gate("        allow: [\"src/**\"]\n"))
        .file("src/lib.rs", "fn a() {}\n")
        .file("notes.txt", "stray\n");
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let scope = gate(&verdict, "scope");
    assert_eq!(scope["outcome"], "fail");
    let found = findings(scope);
    assert_eq!(found.len(), 1, "{scope:#}");
    assert_eq!(found[0]["file"], "notes.txt");
    assert!(message(&found[0]).contains("outside `allow`"), "{scope:#}");
}

#[test]
fn file_scope_passes_when_every_file_is_allowed_without_git_or_baseline() {
    let project = Project::new();
    project
        .rules(&scope_gate("        allow: [\"src/**\"]\n"))
        .file("src/lib.rs", "fn a() {}\n");
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(gate(&verdict, "scope")["outcome"], "pass");
}

#[test]
fn file_scope_with_a_baseline_reports_only_the_readonly_change() {
    let project = Project::new();
    project
        .rules(&scope_gate(
            "        allow: [\"src/**\", \"Cargo.lock\"]\n        readonly: [\"Cargo.lock\"]\n",
        ))
        .file("src/lib.rs", "fn a() {}\n")
        .file("Cargo.lock", "version = 3\n")
        .file("README.md", "outside allow, untouched\n");
    snapshot(&project);
    project
        .file("src/lib.rs", "fn a() { let changed = 1; }\n")
        .file("Cargo.lock", "version = 4\n");
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let scope = gate(&verdict, "scope");
    let found = findings(scope);
    assert_eq!(found.len(), 1, "{scope:#}");
    assert_eq!(found[0]["file"], "Cargo.lock");
    assert!(message(&found[0]).contains("readonly"), "{scope:#}");
}

#[test]
fn file_scope_with_a_baseline_reports_a_deleted_readonly_file() {
    let project = Project::new();
    project
        .rules(&scope_gate(
            "        allow: [\"**\"]\n        readonly: [\"Cargo.lock\"]\n",
        ))
        .file("src/lib.rs", "fn a() {}\n")
        .file("Cargo.lock", "version = 3\n");
    snapshot(&project);
    std::fs::remove_file(project.task_dir().join("Cargo.lock")).expect("rm");
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let scope = gate(&verdict, "scope");
    let found = findings(scope);
    assert_eq!(found.len(), 1, "{scope:#}");
    assert_eq!(found[0]["file"], "Cargo.lock");
    assert!(message(&found[0]).contains("readonly"), "{scope:#}");
}

#[test]
fn file_scope_with_a_baseline_passes_when_only_allowed_files_change() {
    let project = Project::new();
    project
        .rules(&scope_gate("        allow: [\"src/**\"]\n"))
        .file("src/lib.rs", "fn a() {}\n")
        .file("README.md", "outside allow, untouched\n");
    snapshot(&project);
    project.file("src/new.rs", "fn b() {}\n");
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(gate(&verdict, "scope")["outcome"], "pass");
}

#[test]
fn file_scope_in_git_reports_changed_and_untracked_files_outside_allow() {
    let project = Project::new();
    project
        .rules(&scope_gate("        allow: [\"src/**\"]\n"))
        .file("src/lib.rs", "fn a() {}\n")
        .file("README.md", "readme\n")
        .file("docs/guide.md", "untouched\n");
    let task = project.task_dir();
    git(&task, &["init", "-q"]);
    git(&task, &["add", "-A"]);
    git(&task, &["commit", "-q", "-m", "base"]);
    project
        .file("src/lib.rs", "fn a() { 1; }\n")
        .file("README.md", "edited\n")
        .file("notes.txt", "untracked\n");
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let scope = gate(&verdict, "scope");
    let mut files: Vec<String> = findings(scope)
        .iter()
        .map(|f| f["file"].as_str().unwrap_or_default().to_owned())
        .collect();
    files.sort();
    assert_eq!(files, ["README.md", "notes.txt"], "{scope:#}");
    assert!(
        findings(scope)
            .iter()
            .all(|f| message(f).contains("outside `allow`")),
        "{scope:#}"
    );
}

#[test]
fn file_scope_in_git_sees_a_denied_file_the_worker_hid_with_git_info_exclude() {
    // The task directory is the repository, so `.git/info/exclude` is the worker's to write.
    let project = Project::new();
    project
        .rules(&scope_gate(
            "        allow: [\"**\"]\n        deny: [\"secrets/**\"]\n",
        ))
        .file("src/lib.rs", "fn a() {}\n");
    let task = project.task_dir();
    git(&task, &["init", "-q"]);
    git(&task, &["add", "-A"]);
    git(&task, &["commit", "-q", "-m", "base"]);
    std::fs::write(task.join(".git/info/exclude"), "secrets/\n").expect("exclude");
    project.file("secrets/key.pem", "-----BEGIN-----\n");
    let (code, verdict) = run_check(&project);
    let scope = gate(&verdict, "scope");
    assert_eq!(
        findings_for(scope, "secrets/key.pem").len(),
        1,
        "a denied file hidden by .git/info/exclude passed: {scope:#}"
    );
    assert_eq!(code, 1, "{verdict:#}");
}

#[test]
fn file_scope_deny_fails_a_change_even_inside_allow() {
    let project = Project::new();
    project
        .rules(&scope_gate(
            "        allow: [\"**\"]\n        deny: [\"secrets/**\"]\n",
        ))
        .file("src/lib.rs", "fn a() {}\n")
        .file("secrets/key.pem", "-----BEGIN-----\n");
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let scope = gate(&verdict, "scope");
    let found = findings(scope);
    assert_eq!(found.len(), 1, "{scope:#}");
    assert_eq!(found[0]["file"], "secrets/key.pem");
    assert!(message(&found[0]).contains("deny"), "{scope:#}");
}

#[test]
fn file_scope_checks_declared_files_touched_against_real_changes() {
    let project = Project::new();
    project
        .rules(&scope_gate(""))
        .file("a.txt", "a\n")
        .file("b.txt", "b\n")
        .file("c.txt", "c\n");
    snapshot(&project);
    project
        .file("a.txt", "a changed\n")
        .file("b.txt", "b changed\n")
        .signal(r#"{"status":"OK","files_touched":["a.txt","ghost.txt"]}"#);
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let scope = gate(&verdict, "scope");
    let undeclared = findings_for(scope, "b.txt");
    assert_eq!(undeclared.len(), 1, "{scope:#}");
    assert!(
        message(&undeclared[0]).contains("not declared in files_touched"),
        "{scope:#}"
    );
    let ghost = findings_for(scope, "ghost.txt");
    assert_eq!(ghost.len(), 1, "{scope:#}");
    assert!(message(&ghost[0]).contains("did not change"), "{scope:#}");
    assert!(findings_for(scope, "a.txt").is_empty(), "{scope:#}");
    assert!(findings_for(scope, "c.txt").is_empty(), "{scope:#}");
    assert_eq!(findings(scope).len(), 2, "{scope:#}");
}

// ---------------------------------------------------------------------------------------------
// status
// ---------------------------------------------------------------------------------------------

const STATUS_GATE: &str = "      - name: status\n        rule: status\n";

#[test]
fn status_ok_passes() {
    let project = Project::new();
    project
        .rules(&pipeline(STATUS_GATE))
        .signal("Done, all tests pass.\n\nSTATUS: OK\n");
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(verdict["verdict"], "PASS");
    assert_eq!(gate(&verdict, "status")["outcome"], "pass");
}

#[test]
fn status_blocked_gives_a_blocked_verdict_with_the_reason() {
    let project = Project::new();
    project
        .rules(&pipeline(&format!(
            "{STATUS_GATE}      - name: after\n        rule: exists\n        paths: [\"**\"]\n"
        )))
        .signal("STATUS: BLOCKED\nREASON: plan says JWT, the service uses OAuth2\nTASK: task-3\n");
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 3, "{verdict:#}");
    assert_eq!(verdict["verdict"], "BLOCKED");
    assert!(
        reasons(&verdict).contains("plan says JWT, the service uses OAuth2"),
        "{verdict:#}"
    );
    assert_eq!(gate(&verdict, "after")["outcome"], "skipped");
}

#[test]
fn status_missing_fails() {
    let project = Project::new();
    project
        .rules(&pipeline(STATUS_GATE))
        .signal("I think I am done.\n");
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(verdict["verdict"], "FAIL");
    let status = gate(&verdict, "status");
    assert_eq!(status["outcome"], "fail");
    assert!(summary(status).contains("no STATUS"), "{status:#}");
}

#[test]
fn status_other_than_ok_or_blocked_fails() {
    let project = Project::new();
    project
        .rules(&pipeline(STATUS_GATE))
        .signal("STATUS: DONE\n");
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let status = gate(&verdict, "status");
    assert_eq!(status["outcome"], "fail");
    assert!(summary(status).contains("DONE"), "{status:#}");
}

#[test]
fn status_without_any_signal_is_skipped_not_failed() {
    // `check` without --signal (CI, pre-commit): no worker report exists to judge.
    let project = Project::new();
    project.rules(&pipeline(STATUS_GATE));
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 0, "{verdict:#}");
    let status = gate(&verdict, "status");
    assert_eq!(status["outcome"], "skipped");
    assert!(summary(status).contains("no done signal"), "{status:#}");
}

#[test]
fn status_with_an_empty_signal_fails() {
    let project = Project::new();
    project.rules(&pipeline(STATUS_GATE)).signal("");
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(gate(&verdict, "status")["outcome"], "fail");
}

#[test]
fn status_is_read_from_a_json_body() {
    let project = Project::new();
    project
        .rules(&pipeline(STATUS_GATE))
        .signal(r#"{"agent": "claude", "status": "OK", "summary": "added login"}"#);
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(gate(&verdict, "status")["outcome"], "pass");
    assert_eq!(verdict["signal"]["agent"], "claude");
    assert_eq!(verdict["signal"]["status"], "OK");
}

#[test]
fn status_blocked_is_read_from_a_json_body() {
    let project = Project::new();
    project
        .rules(&pipeline(STATUS_GATE))
        .signal(r#"{"status": "BLOCKED", "reason": "no credentials for the staging db"}"#);
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 3, "{verdict:#}");
    assert_eq!(verdict["verdict"], "BLOCKED");
    assert!(
        reasons(&verdict).contains("no credentials for the staging db"),
        "{verdict:#}"
    );
}

#[test]
fn a_broken_json_body_fails_the_run_saying_json() {
    let project = Project::new();
    project.rules(&pipeline(STATUS_GATE)).signal("{nope");
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(verdict["verdict"], "FAIL");
    assert_eq!(gate(&verdict, "status")["outcome"], "skipped");
    assert!(
        verdict["reasons"].to_string().contains("JSON"),
        "{verdict:#}"
    );
}

#[test]
fn a_broken_json_signal_fails_the_run_even_without_a_status_gate() {
    // docs/signal.md: broken JSON/YAML bodies "give a FAIL verdict that says why", whatever the gates.
    let project = Project::new();
    project
        .rules(&pipeline(
            "      - name: outputs\n        rule: exists\n        paths: [\"a.txt\"]\n",
        ))
        .file("a.txt", "a\n")
        .signal("{nope");
    let (code, verdict) = run_check(&project);
    assert_eq!(verdict["verdict"], "FAIL", "{verdict:#}");
    assert_eq!(code, 1, "{verdict:#}");
    assert!(reasons(&verdict).contains("JSON"), "{verdict:#}");
}

#[test]
fn a_signal_body_over_one_mib_fails_the_run_even_without_a_status_gate() {
    let project = Project::new();
    let body = format!("STATUS: OK\n{}", "x".repeat(1024 * 1024 + 16));
    project
        .rules(&pipeline(
            "      - name: outputs\n        rule: exists\n        paths: [\"a.txt\"]\n",
        ))
        .file("a.txt", "a\n")
        .signal(&body);
    let (code, verdict) = run_check(&project);
    assert_eq!(verdict["verdict"], "FAIL", "{verdict:#}");
    assert_eq!(code, 1, "{verdict:#}");
    assert!(reasons(&verdict).contains("KiB"), "{verdict:#}");
}

#[test]
fn a_body_over_one_mib_fails_the_run_before_the_status_gate() {
    let project = Project::new();
    let body = format!("STATUS: OK\n{}", "x".repeat(1024 * 1024 + 16));
    project.rules(&pipeline(STATUS_GATE)).signal(&body);
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(verdict["verdict"], "FAIL");
    // An unreadable signal fails the run before any gate runs, the status gate included.
    assert_eq!(gate(&verdict, "status")["outcome"], "skipped");
    let reasons = verdict["reasons"].to_string();
    assert!(
        reasons.contains("over") && reasons.contains("KiB"),
        "{reasons}"
    );
}

#[test]
fn status_require_summary_fails_without_a_summary_and_passes_with_one() {
    let project = Project::new();
    project
        .rules(&pipeline(
            "      - name: status\n        rule: status\n        require_summary: true\n",
        ))
        .signal("STATUS: OK\n");
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let status = gate(&verdict, "status");
    assert_eq!(status["outcome"], "fail");
    assert!(summary(status).contains("SUMMARY"), "{status:#}");

    project.signal("STATUS: OK\nSUMMARY: added the login endpoint\n");
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(gate(&verdict, "status")["outcome"], "pass");
}

// ---------------------------------------------------------------------------------------------
// symlinks
// ---------------------------------------------------------------------------------------------

/// A task holding a valid `report.json` and `leak.json`, a link to invalid JSON outside the task.
fn project_with_escaping_link() -> Project {
    let project = Project::new();
    project
        .root_file("outside/secret.json", "{this is not json")
        .root_file("schemas/report.schema.json", REPORT_SCHEMA)
        .file("report.json", r#"{"count": 1}"#);
    std::os::unix::fs::symlink(
        project.path().join("outside/secret.json"),
        project.task_dir().join("leak.json"),
    )
    .expect("symlink");
    project
}

#[test]
fn exists_reports_a_link_pointing_outside_the_task_and_does_not_follow_it() {
    let project = project_with_escaping_link();
    project.rules(&pipeline(
        "      - name: outputs\n        rule: exists\n        paths: [\"*.json\"]\n        min_count: 1\n",
    ));
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let outputs = gate(&verdict, "outputs");
    let found = findings_for(outputs, "leak.json");
    assert_eq!(found.len(), 1, "{outputs:#}");
    assert!(message(&found[0]).contains("outside"), "{outputs:#}");
    assert_eq!(findings(outputs).len(), 1, "{outputs:#}");
}

#[test]
fn schema_reports_a_link_pointing_outside_the_task_and_does_not_read_it() {
    let project = project_with_escaping_link();
    project.rules(&schema_gate("[\"*.json\"]", ""));
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let report = gate(&verdict, "report");
    assert_eq!(report["outcome"], "fail");
    let found = findings_for(report, "leak.json");
    assert_eq!(found.len(), 1, "{report:#}");
    assert!(message(&found[0]).contains("outside"), "{report:#}");
    assert!(
        !findings(report)
            .iter()
            .any(|f| message(f).contains("parse")),
        "the link's target was read: {report:#}"
    );
    assert!(findings_for(report, "report.json").is_empty(), "{report:#}");
}

#[test]
fn a_link_to_a_file_inside_the_task_counts_as_that_file() {
    let project = Project::new();
    project
        .rules(&schema_gate("[\"*.json\"]", ""))
        .root_file("schemas/report.schema.json", REPORT_SCHEMA)
        .file("data/real.json", r#"{"count": 2}"#);
    std::os::unix::fs::symlink(
        project.task_dir().join("data/real.json"),
        project.task_dir().join("report.json"),
    )
    .expect("symlink");
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(gate(&verdict, "report")["outcome"], "pass");
}
