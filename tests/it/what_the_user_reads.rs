// What validator prints is true and short (issue 42): each friction a newcomer's first hour
// found, asserted on what the user reads from the real binary.

use crate::common::{PATIENCE, Project, Watching, lint, pipeline, poll, validator};
use crate::hooks::{hook, stop};

/// `validator status` over `project`'s rules: its stdout.
fn status(project: &Project, args: &[&str]) -> String {
    let output = validator()
        .arg("-c")
        .arg(project.rules_path())
        .arg("status")
        .args(args)
        .output()
        .expect("run validator");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The row of `status`'s table for the one hook session there is.
fn hook_row(table: &str) -> Vec<String> {
    let row = table
        .lines()
        .find(|line| line.starts_with("hook-"))
        .unwrap_or_else(|| panic!("no hook session in\n{table}"));
    row.split_whitespace().map(str::to_owned).collect()
}

#[test]
fn status_shows_a_hook_sessions_decision() {
    let project = Project::new();
    project.rules(&pipeline(&lint("lint", r#"["true"]"#, "")));
    hook(&project, "claude", &stop(&project, "s1", "All done.")).passed();
    let table = status(&project, &[]);
    let row = hook_row(&table);
    // TASK VERDICT CURRENT ATTEMPT AGE: the session's PASS, no done file to be current with.
    assert_eq!(row[1], "PASS", "{table}");
    assert_eq!(row[2], "-", "{table}");
    assert_eq!(row[3], "1/3", "{table}");
    assert_ne!(row[4], "-", "{table}");
    let json: serde_json::Value =
        serde_json::from_str(&status(&project, &["--format", "json"])).expect("json");
    assert_eq!(json[0]["verdict"], "PASS", "{json:#}");
    assert_eq!(json[0]["hook_session"], true, "{json:#}");

    // A failing stop is shown as such, with its attempt.
    project.rules(&pipeline(&lint("lint", r#"["false"]"#, "")));
    hook(&project, "claude", &stop(&project, "s1", "Done again.")).blocked("block");
    let table = status(&project, &[]);
    let row = hook_row(&table);
    assert_eq!(row[1], "FAIL", "{table}");
    assert_eq!(row[3], "1/3", "{table}");
}

#[test]
fn watch_says_on_stderr_what_stopped_it_and_what_it_wrote() {
    let root = tempfile::tempdir().expect("temp dir");
    let dir = root.path();
    std::fs::write(
        dir.join("validator.yaml"),
        "version: 1\nstaging: staging\nverdicts: verdicts\nstate: state\npipelines:\n  - name: main\n    gates:\n      - {name: status, rule: status}\n",
    )
    .expect("rules");
    std::fs::create_dir_all(dir.join("staging/t")).expect("task dir");
    let (stdout, stderr) = (dir.join("watch.stdout"), dir.join("watch.stderr"));
    // At default verbosity: no `-v`, no VALIDATOR_LOG.
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_validator"))
        .args(["watch", "-c", "validator.yaml"])
        .current_dir(dir)
        .env_remove("VALIDATOR_CONFIG")
        .env_remove("VALIDATOR_LOG")
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&stdout).expect("stdout"))
        .stderr(std::fs::File::create(&stderr).expect("stderr"))
        .spawn()
        .expect("spawn validator watch");
    let mut watcher = Watching::default();
    watcher.set(child);
    let read = |path: &std::path::Path| std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        poll(PATIENCE, || read(&stdout).contains("watching")),
        "{}",
        read(&stderr)
    );
    std::fs::write(dir.join("staging/t.done"), "STATUS: OK\n").expect("signal");
    assert!(
        poll(PATIENCE, || dir.join("verdicts/t.verdict.json").exists()),
        "{}",
        read(&stderr)
    );
    let status = watcher.sigterm(PATIENCE).expect("stopped on SIGTERM");
    assert_eq!(status.code(), Some(0), "{}", read(&stderr));
    let said = read(&stderr);
    assert_eq!(
        said.lines().collect::<Vec<_>>(),
        ["validator watch: stopped (SIGTERM); 1 verdict written"],
        "{said}"
    );
}

#[test]
fn check_names_no_attempt_unless_its_caller_counts_them() {
    let project = Project::new();
    project.rules(&pipeline(&lint("lint", r#"["false"]"#, "")));
    project.file("a.txt", "a\n");
    let run = |args: &[&str], env: &[(&str, &std::path::Path)]| {
        let mut command = project.check();
        command.args(args);
        for (key, value) in env {
            command.env(key, value);
        }
        let output = command.output().expect("run validator");
        assert_eq!(output.status.code(), Some(1), "{output:?}");
        (
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (stdout, _) = run(&[], &[]);
    assert_eq!(
        stdout.lines().next(),
        Some("validator task task · pipeline main"),
        "{stdout}"
    );
    assert!(!stdout.contains("attempt"), "{stdout}");
    // GitHub: neither the annotations, the progress lines nor the job summary.
    let summary = project.path().join("summary.md");
    let (stdout, stderr) = run(
        &["--format", "github"],
        &[("GITHUB_STEP_SUMMARY", &summary)],
    );
    let summary_text = std::fs::read_to_string(&summary).expect("job summary");
    assert!(summary_text.starts_with("### ❌ validator: FAIL — task task, pipeline main\n"));
    for text in [&stdout, &stderr, &summary_text] {
        assert!(!text.contains("attempt"), "{text}");
    }
    // A caller that counts (an orchestrator's loop) says which attempt this is.
    let (stdout, _) = run(&["--attempt", "2"], &[]);
    assert_eq!(
        stdout.lines().next(),
        Some("validator task task · pipeline main · attempt 2/3"),
        "{stdout}"
    );
}

#[test]
fn a_scope_gates_time_counts_the_listing_it_rests_on() {
    let project = Project::new();
    project.rules(&pipeline(
        "      - {name: scope, rule: file-scope, allow: [\"**\"]}\n",
    ));
    // 32 MiB git hashes when it lists the changes (validator's own index of the repository
    // starts empty): hundreds of milliseconds of work, done once, at the run's start, before
    // the scope gate starts. That listing is the gate's work, so its time is the gate's.
    let big: Vec<u8> = (0u32..32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    std::fs::write(project.task_dir().join("big.bin"), big).expect("big file");
    project.file("a.txt", "a\n");
    crate::common::commit_all(&project.task_dir());
    project.file("a.txt", "changed\n");
    let mut check = project.check();
    check.args(["--format", "json"]);
    crate::common::isolate_git(&mut check);
    let (code, verdict) = crate::common::json_verdict(check);
    assert_eq!(code, 0, "{verdict:#}");
    let scope = crate::common::gate(&verdict, "scope");
    assert_eq!(
        scope["summary"], "1 changed file in scope (git, against HEAD)",
        "{verdict:#}"
    );
    // Before, the gate said 0ms here, whatever the listing cost. Hashing 32 MiB takes far more
    // than a millisecond on any machine; the assertion is that the listing is counted, not how
    // fast it is.
    assert!(scope["duration_ms"].as_u64() >= Some(1), "{verdict:#}");
}

/// A `test` gate that replays a real run captured by `what_the_user_reads/capture.sh`: its
/// output, then its exit code.
fn replayed(case: &str) -> Project {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/what_the_user_reads");
    let code = std::fs::read_to_string(dir.join(format!("{case}.code"))).expect("exit code");
    let output = dir.join(format!("{case}.txt"));
    let run = serde_json::json!([
        "sh",
        "-c",
        format!("cat \"$0\"; exit {}", code.trim()),
        output.display().to_string()
    ]);
    let project = Project::new();
    project.rules(&pipeline(&format!(
        "      - {{name: test, rule: test, run: {run}}}\n"
    )));
    project.file("a.txt", "a\n");
    project
}

/// `check --format feedback`'s output section: its title and its lines.
fn feedback_output(project: &Project) -> (String, Vec<String>) {
    let output = project
        .check()
        .args(["--format", "feedback"])
        .output()
        .expect("run validator");
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let title = text
        .lines()
        .find(|l| l.starts_with("## Output of `test`"))
        .unwrap_or_else(|| panic!("no output section in\n{text}"))
        .to_owned();
    let body: Vec<String> = text
        .lines()
        .skip_while(|l| !l.starts_with("## Output of"))
        .skip(2)
        .take_while(|l| !l.starts_with("```"))
        .map(str::to_owned)
        .collect();
    (title, body)
}

#[test]
fn a_fails_output_leaves_out_pytests_passing_lines_and_coverage_table_and_says_so() {
    for case in ["pytest-verbose-cov", "pytest-cov"] {
        let (title, body) = feedback_output(&replayed(case));
        let said = format!("{title}\n{}", body.join("\n"));
        for noise in [
            "PASSED",
            "Stmts",
            "TOTAL",
            "coverage: platform",
            "tests coverage",
        ] {
            assert!(!said.contains(noise), "{case}: {noise} in\n{said}");
        }
        // Every line that names the failure is there.
        for kept in [
            "FAILURES",
            ">       assert divide(7, 2) == 3.5",
            "E       assert 3 == 3.5",
            "test_calc.py:125: AssertionError",
            "FAILED test_calc.py::test_divide - assert 3 == 3.5",
            "1 failed, 30 passed in",
        ] {
            assert!(said.contains(kept), "{case}: {kept} missing from\n{said}");
        }
        // The progress line that holds the `F` names a failure: it stays.
        let left_out = match case {
            "pytest-verbose-cov" => "; 26 lines left out: passing tests, coverage table)",
            _ => {
                assert!(
                    body.iter()
                        .any(|l| l.starts_with("test_calc.py ....") && l.contains('F')),
                    "{said}"
                );
                "; 8 lines left out: coverage table)"
            }
        };
        assert!(title.ends_with(left_out), "{case}: {title}");
    }
}

#[test]
fn a_fails_output_leaves_out_tapes_passing_tests_and_nycs_table_and_says_so() {
    let (title, body) = feedback_output(&replayed("tape-nyc"));
    let said = format!("{title}\n{}", body.join("\n"));
    for noise in ["\nok ", "# more", "% Stmts", "All files", "|-----"] {
        assert!(!said.contains(noise), "{noise:?} in\n{said}");
    }
    for kept in [
        "# divide",
        "not ok 25 should be strictly equal",
        "    expected: 3.5",
        "    actual:   3",
        "test.js:77:5)",
        "# fail  1",
    ] {
        assert!(said.contains(kept), "{kept} missing from\n{said}");
    }
    assert!(
        title.ends_with("; 19 lines left out: passing tests, coverage table)"),
        "{title}"
    );
}

#[test]
fn checks_text_shows_the_tail_without_passing_lines_and_says_how_many_went() {
    let project = Project::new();
    let script: String = (1..=30)
        .map(|n| format!("echo 'ok {n} works'; "))
        .chain(["echo 'not ok 31 the parser rejects an empty file'; exit 1".to_owned()])
        .collect();
    project.rules(&pipeline(&lint(
        "lint",
        &serde_json::json!(["sh", "-c", script]).to_string(),
        "",
    )));
    project.file("a.txt", "a\n");
    let output = project.check().output().expect("run validator");
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(!text.contains("│ ok "), "{text}");
    assert!(
        text.contains("│ not ok 31 the parser rejects an empty file"),
        "{text}"
    );
    assert!(
        text.contains("│ … 30 lines left out: passing tests"),
        "{text}"
    );
}
