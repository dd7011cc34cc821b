//! The starter packs' staging directory, through the real binary: `validator watch` judges a
//! worker's task in `.validator/staging/`, and the project's own `validator check` afterwards
//! (with `.validator/` in the committed .gitignore, as `init` advises) counts none of it.

use std::path::Path;
use std::time::Duration;

use crate::common::{self, Watching, commit_all, isolate_git, validator};

/// A git project with the generic pack (`init --kind generic`) and `.validator/` committed in
/// .gitignore.
fn project(dir: &Path) {
    std::fs::write(dir.join("README.md"), "a project\n").expect("readme");
    std::fs::write(dir.join(".gitignore"), ".validator/\n").expect("gitignore");
    let out = validator()
        .args(["init", "--kind", "generic"])
        .current_dir(dir)
        .output()
        .expect("init");
    assert!(out.status.success(), "{out:?}");
    commit_all(dir);
}

#[test]
fn a_task_the_watcher_judged_is_not_a_change_of_the_projects_own_check() {
    let root = tempfile::tempdir().expect("temp");
    let dir = root.path();
    project(dir);
    let rules = std::fs::read_to_string(dir.join("validator.yaml")).expect("rules");
    assert!(rules.contains("\nstaging: .validator/staging\n"), "{rules}");

    // A worker's task: a copy of the project with its change, and the done signal.
    let task = dir.join(".validator/staging/t1");
    std::fs::create_dir_all(task.join("src")).expect("task");
    for n in 0..20 {
        std::fs::write(task.join(format!("src/f{n}.txt")), "work\n").expect("file");
    }
    std::fs::write(dir.join(".validator/staging/t1.done"), "STATUS: OK\n").expect("done");
    let mut watcher = Watching::default();
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("validator"));
    cmd.args(["watch", "--poll", "50ms"])
        .current_dir(dir)
        .env_remove("VALIDATOR_CONFIG")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    watcher.set(cmd.spawn().expect("watch"));
    let verdict = dir.join(".validator/verdicts/t1.verdict.json");
    assert!(
        common::poll(Duration::from_secs(60), || verdict.exists()),
        "the watcher wrote no verdict for the staged task"
    );
    watcher.sigterm(Duration::from_secs(20));

    let mut check = validator();
    check.args(["check", "--format", "json"]).current_dir(dir);
    isolate_git(&mut check);
    let (code, verdict) = common::json_verdict(check);
    assert_eq!(code, 0, "{verdict:#}");
    let scope = common::gate(&verdict, "scope");
    assert_eq!(scope["changed_files"]["count"], 0, "{verdict:#}");
}
