//! The index validator compares the work tree with: its own, read from the base's tree and
//! kept outside the task, never the worker's `.git/index` (which the worker may forge); what
//! the runs count changes from, fixed when each starts; and which ignore rules may hide a new
//! file (the base's committed ones alone).

use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::common::{self, Project, commit_all, gate, git, isolate_git, pipeline};
use crate::review27_attacks::edit_behind_a_forged_index_entry;

const SCOPE: &str = "      - {name: scope, rule: file-scope, allow: [\"src/**\", \"logs/**\", \"vendor/**\"], readonly: [\"Cargo.lock\"], deny: [\"**/*.pem\"]}\n";

/// A committed repository as the task directory, judged by `gates`.
fn repo(gates: &str) -> Project {
    let project = Project::new();
    project
        .rules(&pipeline(gates))
        .file("src/lib.rs", "fn a() {}\n")
        .file("Cargo.lock", "# base\n");
    commit_all(&project.task_dir());
    project
}

fn judged(project: &Project) -> (i32, Value) {
    let mut cmd = project.check();
    isolate_git(&mut cmd);
    cmd.args(["--format", "json"]);
    common::json_verdict(cmd)
}

fn findings(verdict: &Value, name: &str) -> String {
    gate(verdict, name)["findings"].to_string()
}

fn summary(verdict: &Value, name: &str) -> String {
    gate(verdict, name)["summary"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Writes `content` to `path` (a new ctime), then sets its mtime to `mtime`.
fn write_with_mtime(path: &Path, content: &str, mtime: SystemTime) {
    std::fs::write(path, content).expect("write");
    std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|file| file.set_modified(mtime))
        .expect("set mtime");
}

#[test]
fn an_edit_in_the_second_the_last_run_recorded_is_a_change() {
    // git compares whole seconds of ctime: a file it hashed and recorded, changed again within
    // that second with its size and mtime kept, would look unchanged to the next run.
    let project = repo(SCOPE);
    let lock = project.task_dir().join("Cargo.lock");
    let old = SystemTime::UNIX_EPOCH + Duration::from_secs(946_684_800);
    write_with_mtime(&lock, "# base\n", old);
    let (code, verdict) = judged(&project);
    assert_eq!(code, 0, "{verdict:#}");
    write_with_mtime(&lock, "# evil\n", old);
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert!(
        findings(&verdict, "scope").contains("Cargo.lock"),
        "{verdict:#}"
    );
}

#[test]
fn the_workers_index_is_neither_read_nor_written_and_validators_is_kept_outside_the_task() {
    let project = repo(SCOPE);
    let task = project.task_dir();
    let index = std::fs::read(task.join(".git/index")).expect("index");
    project.file("src/new.rs", "fn b() {}\n");
    for _ in 0..2 {
        let (code, verdict) = judged(&project);
        assert_eq!(code, 0, "{verdict:#}");
        assert!(
            summary(&verdict, "scope").contains("1 changed file"),
            "{verdict:#}"
        );
    }
    assert_eq!(
        std::fs::read(task.join(".git/index")).expect("index"),
        index
    );
    let kept = std::fs::read_dir(project.path().join("state/git-index"))
        .expect("validator's indexes in its state")
        .count();
    assert_eq!(kept, 1);
}

#[test]
fn a_damaged_private_index_is_made_again() {
    let project = repo(SCOPE);
    let (code, verdict) = judged(&project);
    assert_eq!(code, 0, "{verdict:#}");
    for kept in std::fs::read_dir(project.path().join("state/git-index")).expect("indexes") {
        let index = kept.expect("entry").path().join("index");
        assert!(index.is_file(), "no index kept in {}", index.display());
        std::fs::write(index, "garbage").expect("damage");
    }
    project.file("Cargo.lock", "# edit\n");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert!(
        findings(&verdict, "scope").contains("Cargo.lock"),
        "{verdict:#}"
    );
}

#[test]
fn with_state_inside_the_task_a_forged_index_hides_nothing_and_nothing_is_kept() {
    let project = Project::new();
    project
        .rules(&pipeline(SCOPE).replace("state: state", "state: task/.validator"))
        .file(".gitignore", ".validator/\n")
        .file("src/lib.rs", "fn a() {}\n")
        .file("Cargo.lock", "# base\n");
    commit_all(&project.task_dir());
    let task = project.task_dir();
    edit_behind_a_forged_index_entry(&task, "Cargo.lock", "# evil\n");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert!(
        findings(&verdict, "scope").contains("Cargo.lock"),
        "{verdict:#}"
    );
    assert!(!task.join(".validator/git-index").exists());
}

#[test]
fn a_nested_repositorys_forged_index_hides_nothing() {
    let project = repo("      - {name: scope, rule: file-scope, readonly: [\"vendor/**\"]}\n");
    let task = project.task_dir();
    project.file("vendor/lib/src/x.rs", "fn x() {}\n");
    commit_all(&task.join("vendor/lib"));
    git(&task, &["add", "vendor/lib"]);
    git(&task, &["commit", "-q", "-m", "vendored"]);
    edit_behind_a_forged_index_entry(&task.join("vendor/lib"), "src/x.rs", "fn y() {}\n");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert!(
        findings(&verdict, "scope").contains("vendor/lib/src/x.rs"),
        "{verdict:#}"
    );
}

#[test]
fn an_exclude_rule_of_the_repository_hides_nothing() {
    let project = repo(SCOPE);
    let task = project.task_dir();
    std::fs::write(task.join(".git/info/exclude"), "*.pem\nsecret/\n").expect("exclude");
    project
        .file("key.pem", "k\n")
        .file("secret/run.sh", "echo\n");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let scope = findings(&verdict, "scope");
    assert!(scope.contains("key.pem"), "{verdict:#}");
    assert!(scope.contains("secret/run.sh"), "{verdict:#}");
}

#[test]
fn a_directory_the_base_ignores_in_part_is_looked_into_file_by_file() {
    let project = Project::new();
    project
        .rules(&pipeline(SCOPE))
        .file("src/lib.rs", "fn a() {}\n")
        .file(".gitignore", "*.log\ntarget/\n");
    commit_all(&project.task_dir());
    project
        .file(".gitignore", "*.log\ntarget/\nlogs/\n.*\n")
        .file("logs/run.log", "noise\n")
        .file("logs/key.pem", "k\n")
        .file("target/debug/key.pem", "build output\n");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let scope = findings(&verdict, "scope");
    assert!(scope.contains("logs/key.pem"), "{verdict:#}");
    // What the committed rules ignore stays ignored: a log, the build directory.
    assert!(!scope.contains("run.log"), "{verdict:#}");
    assert!(!scope.contains("target/"), "{verdict:#}");
}

/// A test gate running `script`, then the scope.
fn test_then_scope(project: &Project, script: &str) {
    project.rules(&pipeline(&format!(
        "      - {{name: test, rule: test, run: [sh, run.sh]}}\n{SCOPE}"
    )));
    project.file("run.sh", script);
}

#[test]
fn a_repository_a_test_swaps_for_another_is_refused() {
    let project = repo("");
    test_then_scope(
        &project,
        "mv .git .git2 && printf 'gitdir: .git2\\n' > .git\n",
    );
    project.file("key.pem", "k\n");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert!(
        summary(&verdict, "scope").contains("no longer the one the run started with"),
        "{verdict:#}"
    );
}

#[test]
fn a_repository_a_test_removes_hides_nothing() {
    let project = repo("");
    test_then_scope(&project, "rm -rf .git\n");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert!(
        summary(&verdict, "scope").contains("is gone since the run started"),
        "{verdict:#}"
    );
}

#[test]
fn with_state_in_staging_the_index_is_not_kept_where_workers_write() {
    let root = tempfile::tempdir().expect("temp dir");
    let staging = root.path().join("staging");
    std::fs::create_dir_all(staging.join("t/src")).expect("task");
    std::fs::write(
        root.path().join("validator.yaml"),
        format!("version: 1\nstaging: staging\nverdicts: verdicts\nstate: staging/.state\npipelines:\n  - name: main\n    gates:\n{SCOPE}"),
    )
    .expect("rules");
    std::fs::write(staging.join("t/src/lib.rs"), "fn a() {}\n").expect("write");
    std::fs::write(staging.join("t/Cargo.lock"), "# base\n").expect("write");
    commit_all(&staging.join("t"));
    std::fs::write(staging.join("t/src/lib.rs"), "fn b() {}\n").expect("write");
    std::fs::write(staging.join("t.done"), "STATUS: OK\n").expect("signal");
    let verdict = crate::review27_attacks::watched_once(root.path(), "verdicts", "t");
    assert_eq!(verdict["verdict"], "PASS", "{verdict:#}");
    assert!(
        summary(&verdict, "scope").contains("1 changed file"),
        "{verdict:#}"
    );
    assert!(!staging.join(".state/git-index").exists());
}
