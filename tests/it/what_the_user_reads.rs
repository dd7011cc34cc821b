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
    // Before, the gate said 0ms here. A floor far under what hashing 32 MiB takes (about
    // 400 ms on two slow cores), not a measure of speed.
    assert!(scope["duration_ms"].as_u64() >= Some(50), "{verdict:#}");
}
