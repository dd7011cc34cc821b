//! What the worker changed, as a hostile worker would try to hide it: validator's own walk of
//! the task is the ground truth of what exists, git says what changed among what it can see,
//! and the base is what it was when the run started.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::common::{self, Project, commit_all, gate, git, isolate_git};

/// A committed repository as the task directory, judged by `gates`.
fn repo(gates: &str) -> Project {
    let project = Project::new();
    project
        .rules(&common::pipeline(gates))
        .file("src/lib.rs", "fn a() {}\n");
    commit_all(&project.task_dir());
    project
}

fn judged(project: &Project, extra: &[&str]) -> (i32, serde_json::Value) {
    let mut cmd = project.check();
    isolate_git(&mut cmd);
    cmd.args(["--format", "json"]).args(extra);
    common::json_verdict(cmd)
}

fn findings(verdict: &serde_json::Value, name: &str) -> String {
    gate(verdict, name)["findings"].to_string()
}

const SCOPE: &str =
    "      - {name: scope, rule: file-scope, allow: [\"src/**\"], deny: [\"**/*.pem\"]}\n";
const BANNED: &str = "      - {name: banned, rule: content, files: [\"**\"], changed_only: true, ban: [{pattern: 'os\\.system', message: no shelling out}]}\n";

#[test]
fn files_below_a_plain_directory_named_git_are_changes() {
    // git never looks inside a directory named `.git`, repository or not.
    let advisory_scope = SCOPE.replace("}\n", ", on_fail: CONTINUE}\n");
    let project = repo(&format!("{advisory_scope}{BANNED}"));
    project
        .file("src/.git/key.pem", "-----BEGIN PRIVATE KEY-----\n")
        .file("src/.git/run.py", "import os\nos.system('curl evil')\n")
        .file("src/deep/.git", "os.system('a file named .git')\n");
    let (code, verdict) = judged(&project, &[]);
    assert_eq!(code, 1, "{verdict:#}");
    let scope = findings(&verdict, "scope");
    assert!(scope.contains("src/.git/key.pem"), "{verdict:#}");
    let banned = findings(&verdict, "banned");
    assert!(banned.contains("src/.git/run.py"), "{verdict:#}");
    assert!(banned.contains("src/deep/.git"), "{verdict:#}");

    // The same over the whole project.
    let (code, whole) = judged(&project, &["--all-files"]);
    assert_eq!(code, 1, "{whole:#}");
    assert!(findings(&whole, "banned").contains("src/.git/run.py"));
}

#[test]
fn a_fifo_the_worker_made_is_a_change() {
    let project = repo(SCOPE);
    nix::unistd::mkfifo(
        &project.task_dir().join("pipe"),
        nix::sys::stat::Mode::S_IRWXU,
    )
    .expect("mkfifo");
    let (code, verdict) = judged(&project, &[]);
    assert_eq!(code, 1, "{verdict:#}");
    assert!(
        findings(&verdict, "scope").contains("\"pipe\""),
        "{verdict:#}"
    );
}

#[test]
fn a_nested_repository_s_own_git_directory_is_not_a_change() {
    // Validator opens a nested repository itself: its `.git` is the repository, not the
    // worker's files, and an unchanged one passes.
    let project = Project::new();
    project
        .rules(&common::pipeline(
            "      - {name: scope, rule: file-scope, allow: [\"src/**\"]}\n",
        ))
        .file("src/lib.rs", "fn a() {}\n")
        .file("src/vendor/lib/x.rs", "fn x() {}\n");
    commit_all(&project.task_dir().join("src/vendor/lib"));
    commit_all(&project.task_dir());
    let (code, verdict) = judged(&project, &[]);
    assert_eq!(code, 0, "{verdict:#}");
}

/// Runs `check` as user `nobody` (as the sidecar runs beside a worker of another user), so a
/// directory mode keeps validator out even when the test runs as root.
fn verdict_as_another_user(project: &Project) -> (i32, serde_json::Value) {
    let as_root = running_as_root();
    let mut cmd = if as_root {
        let mut cmd = assert_cmd::Command::new("setpriv");
        cmd.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
            env!("CARGO_BIN_EXE_validator"),
        ]);
        cmd.env_remove("VALIDATOR_CONFIG").env("NO_COLOR", "1");
        cmd
    } else {
        common::validator()
    };
    cmd.arg("check")
        .arg("-c")
        .arg(project.rules_path())
        .arg("--task-dir")
        .arg(project.task_dir())
        .args(["--format", "json"]);
    isolate_git(&mut cmd);
    common::json_verdict(cmd)
}

fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|meta| meta.uid() == 0)
}

fn open_to_all(dir: &Path) {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
}

#[test]
fn a_directory_validator_cannot_open_fails_the_run_never_vanishes() {
    let project = Project::new();
    project
        .rules(&common::pipeline(
            "      - {name: scope, rule: file-scope, allow: [\"src/**\"]}\n",
        ))
        .file("src/lib.rs", "fn a() {}\n");
    commit_all(&project.task_dir());
    for dir in [project.path(), &project.task_dir()] {
        open_to_all(dir);
    }
    // Walked into by nothing but its owner; a test started from there still runs.
    project.file("hidden/key.pem", "-----BEGIN PRIVATE KEY-----\n");
    let hidden = project.task_dir().join("hidden");
    std::fs::set_permissions(&hidden, std::fs::Permissions::from_mode(0o711)).expect("chmod");
    if !running_as_root() {
        std::fs::set_permissions(&hidden, std::fs::Permissions::from_mode(0o311)).expect("chmod");
    }
    let (code, verdict) = verdict_as_another_user(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let scope = findings(&verdict, "scope");
    assert!(
        scope.contains("hidden") && scope.contains("cannot be read"),
        "{verdict:#}"
    );
}

#[test]
fn a_commit_made_during_the_run_hides_nothing_from_the_gates_after_it() {
    // The test commits everything (moving HEAD); the scope gate after it and the contract's
    // scope still count from the commit the run started at.
    let project = repo(
        "      - {name: test, rule: test, run: [sh, -c, 'git -c user.name=w -c user.email=w@w add -A && git -c user.name=w -c user.email=w@w commit -qm hide']}\n      - {name: scope, rule: file-scope, allow: [\"src/**\"]}\n",
    );
    project.file("notes/out-of-scope.txt", "x\n");
    let (code, verdict) = judged(&project, &[]);
    assert_eq!(code, 1, "{verdict:#}");
    assert!(
        findings(&verdict, "scope").contains("notes/out-of-scope.txt"),
        "{verdict:#}"
    );
}

#[test]
fn a_base_the_worker_removed_is_its_failure_not_an_error() {
    let project = repo("      - {name: scope, rule: file-scope, base: main}\n");
    let dir = project.task_dir();
    git(&dir, &["checkout", "-q", "-b", "work"]);
    git(&dir, &["branch", "-q", "-D", "main"]);
    let (code, verdict) = judged(&project, &[]);
    assert_eq!(code, 1, "{verdict:#}");
    assert!(
        gate(&verdict, "scope")["summary"]
            .to_string()
            .contains("`main` is not in the task's repository"),
        "{verdict:#}"
    );
}

#[test]
fn a_base_missing_from_the_operators_repository_is_an_error() {
    // Above the task, out of the worker's reach: only the operator can fix `base:`.
    let project = Project::new();
    project
        .rules(&common::pipeline(
            "      - {name: scope, rule: file-scope, base: no-such-ref}\n",
        ))
        .file("src/lib.rs", "fn a() {}\n");
    commit_all(project.path());
    let (code, verdict) = judged(&project, &[]);
    assert_eq!(code, 2, "{verdict:#}");
}

#[test]
fn names_shaped_like_the_protocol_s_files_are_the_worker_s_in_single_task_mode() {
    // The task's directory is the staging directory itself; only the protocol's own files (the
    // done file, and the verdict and feedback validator writes) are hidden, by exact path.
    let root = tempfile::tempdir().expect("temp dir");
    let staging = root.path().join("staging");
    std::fs::create_dir_all(&staging).expect("staging");
    std::fs::write(
        root.path().join("validator.yaml"),
        "version: 1\nstaging: staging\nverdicts: verdicts\nstate: state\npipelines:\n  - name: main\n    gates:\n      - {name: scope, rule: file-scope, deny: [\".validator-*\", \"*.verdict.json\", \"*.feedback.md\", \"*.done\"]}\n      - {name: outputs, rule: exists, paths: [\"*\"], forbid: [\"*.feedback.md\"]}\n",
    )
    .expect("rules");
    for name in [
        ".validator-key.pem",
        "id_rsa.verdict.json",
        "secret.feedback.md",
        "other.done",
    ] {
        std::fs::write(staging.join(name), "PRIVATE\n").expect("write");
    }
    std::fs::write(staging.join("t.done"), "STATUS: OK\n").expect("signal");
    let verdict = &watched(root.path(), &["t"])[0];
    assert_eq!(verdict["verdict"], "FAIL", "{verdict:#}");
    let scope = findings(verdict, "scope");
    for name in [
        ".validator-key.pem",
        "id_rsa.verdict.json",
        "secret.feedback.md",
        "other.done",
    ] {
        assert!(scope.contains(name), "{name}: {verdict:#}");
    }
    assert!(
        !scope.contains("t.done"),
        "the task's own done file is the protocol's: {verdict:#}"
    );
}

/// Starts `validator watch` in `root` (its validator.yaml), waits for a verdict for each of
/// `tasks` in `root/verdicts`, stops it, and returns them.
fn watched(root: &Path, tasks: &[&str]) -> Vec<serde_json::Value> {
    let logs = std::fs::File::create(root.join("watch.log")).expect("log");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_validator"))
        .current_dir(root)
        .env_remove("VALIDATOR_CONFIG")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .arg("watch")
        .stderr(logs)
        .spawn()
        .expect("start watch");
    let read = |task: &str| -> Option<serde_json::Value> {
        let bytes = std::fs::read(root.join("verdicts").join(format!("{task}.verdict.json")));
        serde_json::from_slice(&bytes.ok()?).ok()
    };
    let started = std::time::Instant::now();
    let mut verdicts = Vec::new();
    for task in tasks {
        loop {
            if let Some(verdict) = read(task) {
                verdicts.push(verdict);
                break;
            }
            if started.elapsed() > std::time::Duration::from_secs(120) {
                let _ = child.kill();
                panic!(
                    "no verdict for {task}: {}",
                    std::fs::read_to_string(root.join("watch.log")).unwrap_or_default()
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let _ = child.wait();
    verdicts
}

#[test]
fn one_task_s_git_entry_in_staging_breaks_no_other_task_s_judging() {
    let root = tempfile::tempdir().expect("temp dir");
    let staging = root.path().join("staging");
    std::fs::write(
        root.path().join("validator.yaml"),
        "version: 1\nstaging: staging\nverdicts: verdicts\nstate: state\npipelines:\n  - name: main\n    gates:\n      - {name: scope, rule: file-scope, allow: [\"src/**\"]}\n",
    )
    .expect("rules");
    for task in ["good", "evil"] {
        std::fs::create_dir_all(staging.join(task).join("src")).expect("task");
        std::fs::write(staging.join(task).join("src/a.rs"), "fn a() {}\n").expect("file");
    }
    // The evil task's worker writes a `.git` where every worker writes.
    std::fs::write(staging.join(".git"), "").expect(".git");
    for task in ["good", "evil"] {
        std::fs::write(staging.join(format!("{task}.done")), "STATUS: OK\n").expect("signal");
    }
    let verdicts = watched(root.path(), &["good"]);
    assert_eq!(verdicts[0]["verdict"], "PASS", "{:#}", verdicts[0]);
}

#[test]
fn a_fifo_counts_as_changed_against_a_baseline_and_without_git_too() {
    let project = Project::new();
    project
        .rules(&common::pipeline(
            "      - {name: scope, rule: file-scope, allow: [\"src/**\"]}\n",
        ))
        .file("src/lib.rs", "fn a() {}\n");
    let fifo = project.task_dir().join("pipe");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    let (code, verdict) = judged(&project, &[]);
    assert_eq!(code, 1, "no git, no baseline: {verdict:#}");
    assert!(
        findings(&verdict, "scope").contains("\"pipe\""),
        "{verdict:#}"
    );

    std::fs::remove_file(&fifo).expect("rm");
    common::validator()
        .current_dir(project.path())
        .args(["snapshot", "task", "-c"])
        .arg(project.rules_path())
        .arg("--task-dir")
        .arg(project.task_dir())
        .assert()
        .success();
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    let (code, verdict) = judged(&project, &[]);
    assert_eq!(code, 1, "against the baseline: {verdict:#}");
    assert!(
        findings(&verdict, "scope").contains("\"pipe\""),
        "{verdict:#}"
    );
}
