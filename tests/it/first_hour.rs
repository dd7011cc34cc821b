// A newcomer's first hour (issue 31): what a user brings from pre-commit and lefthook is
// either run as they meant it or refused with the fix, never run silently wrong.

use crate::common::{Project, pipeline, validator};

/// `rules check` on `gates`: exit code and stderr.
fn rules_check(gates: &str) -> (i32, String) {
    let project = Project::new();
    project.rules(&pipeline(gates));
    let output = validator()
        .arg("-c")
        .arg(project.rules_path())
        .args(["rules", "check"])
        .output()
        .expect("run validator");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn shell_syntax_in_a_run_string_is_refused_with_the_fix() {
    for (run, syntax) in [
        ("ruff check . && echo ok", "&&"),
        ("pytest | tee log", "|"),
        ("make lint; make test", ";"),
        ("ruff check > out.txt", ">"),
        ("echo $HOME", "$HOME"),
        ("echo \"$(date)\"", "$("),
        ("echo `date`", "`"),
    ] {
        let gates = format!(
            "      - name: lint\n        rule: lint\n        run: {}\n",
            serde_json::Value::String(run.into())
        );
        let (code, stderr) = rules_check(&gates);
        assert_eq!(code, 2, "{run}: {stderr}");
        assert!(stderr.contains(&format!("`{syntax}`")), "{run}: {stderr}");
        assert!(stderr.contains("run: [sh, -c,"), "{run}: {stderr}");
        // Said where it is written.
        assert!(stderr.contains(":8:14:"), "{run}: {stderr}");
    }
    // Quoted, it is a word; as a list, or through `sh -c`, it is what the author wrote.
    for run in [
        r#""echo 'a && b' \"c | d\"""#,
        r#"[sh, -c, "ruff check . && echo ok"]"#,
        r#""echo a\\;b""#,
        r#""python3 -m pytest -k 'not slow'""#,
    ] {
        let gates = format!("      - name: lint\n        rule: lint\n        run: {run}\n");
        let (code, stderr) = rules_check(&gates);
        assert_eq!(code, 0, "{run}: {stderr}");
    }
}

#[test]
fn quiet_prints_the_verdict_alone() {
    let project = Project::new();
    project.rules(&pipeline(
        "      - {name: first, rule: lint, run: [\"true\"]}\n      - {name: second, rule: lint, run: [\"false\"]}\n",
    ));
    project.file("a.txt", "a\n");
    for flag in ["--quiet", "-q"] {
        let output = project.check().arg(flag).output().expect("run validator");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(output.status.code(), Some(1), "{stdout}");
        assert_eq!(stdout.lines().count(), 1, "{stdout}");
        assert!(stdout.starts_with("FAIL  second:"), "{stdout}");
    }
}

/// `rules check` on a rules file written as is: exit code and stderr.
fn rules_check_text(text: &str) -> (i32, String) {
    let project = Project::new();
    project.rules(text);
    let output = validator()
        .arg("-c")
        .arg(project.rules_path())
        .args(["rules", "check"])
        .output()
        .expect("run validator");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn yaml_slips_are_named_as_a_person_makes_them() {
    let (code, stderr) = rules_check_text(
        "version: 1\npipelines:\n  - name: main\n    gates:\n\t- {name: a, rule: status}\n",
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains(":5:1: a tab"), "{stderr}");
    assert!(stderr.contains("replace the tab with spaces"), "{stderr}");

    // An unclosed `[` is shown where it opens, not at the end of the file.
    let (code, stderr) = rules_check_text(
        "version: 1\npipelines:\n  - name: main\n    gates: [\n      {name: a, rule: status},   # [ in a comment\n      {name: b, rule: status, run: \"[\"},\n",
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(":4:12: this `[` is never closed"),
        "{stderr}"
    );

    // Anything else points at the reference, not at the README as a whole.
    let (code, stderr) = rules_check_text("version: 1\npipelines: {a: [b}\n");
    assert_eq!(code, 2, "{stderr}");
    assert!(!stderr.contains("README"), "{stderr}");
}

/// `git commit` in `dir` as a person runs it (the hooks run): whether it was made.
fn commit(dir: &std::path::Path, message: &str) -> bool {
    std::process::Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
        .args(["-c", "commit.gpgsign=false", "commit", "-qm", message])
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .status()
        .expect("run git")
        .success()
}

fn install_hook(dir: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let output = validator()
        .arg("install-hook")
        .args(args)
        .current_dir(dir)
        .env_remove("VALIDATOR_CONFIG")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("run validator");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn install_hook_makes_validator_the_repositorys_pre_commit_hook() {
    let dir = tempfile::tempdir().expect("temp dir");
    let repo = dir.path();
    crate::common::git(repo, &["init", "-q"]);
    std::fs::write(
        repo.join("validator.yaml"),
        "version: 1\nstate: .validator\npipelines:\n  - name: main\n    gates:\n      - {name: leftovers, rule: exists, forbid: [\"**/*.orig\"]}\n",
    )
    .expect("rules");
    let (code, stdout, stderr) = install_hook(repo, &[]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("installed"), "{stdout}");
    // A commit the gates pass is made; one they fail is not.
    std::fs::write(repo.join("a.txt"), "a\n").expect("write");
    crate::common::git(repo, &["add", "-A"]);
    assert!(commit(repo, "first"), "a clean commit is made");
    std::fs::write(repo.join("a.txt.orig"), "a\n").expect("write");
    crate::common::git(repo, &["add", "-A"]);
    assert!(
        !commit(repo, "leftover"),
        "the hook stops a commit the gates fail"
    );
    // Installing again rewrites validator's own hook.
    assert_eq!(install_hook(repo, &[]).0, 0);
    // Another runner's hook is kept unless --force.
    let pre_push = repo.join(".git/hooks/pre-push");
    std::fs::write(
        &pre_push,
        "#!/bin/sh\n# lefthook\nexec lefthook run pre-push\n",
    )
    .expect("write");
    let (code, _, stderr) = install_hook(repo, &["--hook", "pre-push"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("lefthook's") && stderr.contains("--force"),
        "{stderr}"
    );
    assert!(
        std::fs::read_to_string(&pre_push)
            .expect("read")
            .contains("lefthook run")
    );
    let (code, _, stderr) = install_hook(repo, &["--hook", "pre-push", "--force"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        std::fs::read_to_string(&pre_push)
            .expect("read")
            .contains("check")
    );
    // Outside a repository, it says so.
    let outside = tempfile::tempdir().expect("temp dir");
    let (code, _, stderr) = install_hook(outside.path(), &[]);
    assert_ne!(code, 0);
    assert!(stderr.contains("not in a git repository"), "{stderr}");
}
