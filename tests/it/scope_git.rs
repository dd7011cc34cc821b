//! `file-scope` in a git work tree, through the real binary: what one `git status` walk sees,
//! and the ignore files that must not hide a new file from it.

use crate::common;
use crate::common::{Project, commit_all, gate, git, isolate_git};

/// A committed repository as the task directory (its `.gitignore`, if any, committed too) with
/// one scope gate.
fn repo(scope: &str, gitignore: Option<&str>) -> Project {
    let project = Project::new();
    project
        .rules(&format!(
            "version: 1\nstate: state\npipelines:\n  - name: main\n    gates:\n      - name: scope\n        rule: file-scope\n{scope}"
        ))
        .file("src/lib.rs", "fn a() {}\n");
    if let Some(gitignore) = gitignore {
        project.file(".gitignore", gitignore);
    }
    commit_all(&project.task_dir());
    project
}

fn verdict(project: &Project) -> (i32, serde_json::Value) {
    let mut cmd = project.check();
    isolate_git(&mut cmd);
    cmd.args(["--format", "json"]);
    common::json_verdict(cmd)
}

fn findings(verdict: &serde_json::Value) -> String {
    gate(verdict, "scope")["findings"].to_string()
}

/// The gate fails and names `file` among its findings.
fn assert_caught(project: &Project, file: &str) {
    let (code, verdict) = verdict(project);
    assert_eq!(code, 1, "{verdict:#}");
    assert!(findings(&verdict).contains(file), "{verdict:#}");
}

#[test]
fn a_new_gitignore_in_a_subdirectory_hides_nothing() {
    let project = repo("        deny: [\"**/*.sh\"]\n", None);
    project
        .file("src/tools/.gitignore", "evil.sh\n")
        .file("src/tools/evil.sh", "rm -rf /\n");
    assert_caught(&project, "src/tools/evil.sh");
}

#[test]
fn the_repositorys_exclude_file_hides_nothing() {
    let project = repo("        deny: [\"**/*.sh\"]\n", None);
    let exclude = project.task_dir().join(".git/info/exclude");
    std::fs::create_dir_all(exclude.parent().expect("parent")).expect("mkdir");
    std::fs::write(exclude, "*.sh\n").expect("exclude");
    project.file("evil.sh", "rm -rf /\n");
    assert_caught(&project, "evil.sh");
}

#[test]
fn a_new_gitignore_behind_the_exclude_file_hides_nothing() {
    let project = repo("        deny: [\"**/*.sh\"]\n", None);
    std::fs::write(
        project.task_dir().join(".git/info/exclude"),
        "src/tools/.gitignore\n",
    )
    .expect("exclude");
    project
        .file("src/tools/.gitignore", "evil.sh\n")
        .file("src/tools/evil.sh", "rm -rf /\n");
    assert_caught(&project, "src/tools/evil.sh");
}

#[test]
fn a_committed_gitignore_still_keeps_build_output_out() {
    let project = repo("        allow: [\"src/**\"]\n", Some("/target\n"));
    project
        .file("target/debug/app", "binary\n")
        .file("src/lib.rs", "fn b() {}\n")
        .file("src/new.rs", "fn c() {}\n");
    let (code, verdict) = verdict(&project);
    assert_eq!(code, 0, "{verdict:#}");
    let summary = gate(&verdict, "scope")["summary"].to_string();
    assert!(summary.contains("2 changed files"), "{summary}");
}

/// What tools leave in a project: a virtualenv (Python 3.13 and uv write `.venv/.gitignore`
/// with `*`), which the project ignores; a pytest cache that ignores itself, which the project
/// does not mention.
fn leave_tool_caches(project: &Project, under: &str) {
    project
        .root_file(&format!("{under}.venv/.gitignore"), "*\n")
        .root_file(&format!("{under}.venv/lib/certifi/cacert.pem"), "cert\n")
        .root_file(&format!("{under}.pytest_cache/.gitignore"), "*\n")
        .root_file(&format!("{under}.pytest_cache/v/cache/nodeids"), "[]\n");
}

#[test]
fn a_tools_own_gitignore_inside_an_ignored_directory_hides_what_the_project_ignores() {
    let project = repo(
        "        deny: [\"**/*.pem\", \"**/*.sh\"]\n",
        Some(".venv/\n"),
    );
    leave_tool_caches(&project, "task/");
    project.file("src/new.rs", "fn n() {}\n");
    let (code, verdict) = verdict(&project);
    assert_eq!(code, 0, "{verdict:#}");
    // The pytest cache's own `*` is not trusted: its two files count beside src/new.rs; the
    // virtualenv's do not.
    let summary = gate(&verdict, "scope")["summary"].to_string();
    assert!(summary.contains("3 changed files"), "{summary}");

    // A worker's new directory that ignores itself still hides nothing.
    project
        .file("src/tools/.gitignore", "*\n")
        .file("src/tools/evil.sh", "rm -rf /\n");
    assert_caught(&project, "src/tools/evil.sh");
}

#[test]
fn a_tools_gitignore_is_read_the_same_in_a_task_below_the_repositorys_top() {
    let project = Project::new();
    project
        .rules("version: 1\nstate: state\npipelines:\n  - name: main\n    gates:\n      - name: scope\n        rule: file-scope\n        deny: [\"**/*.pem\", \"**/*.sh\"]\n")
        .root_file(".gitignore", "/task/.venv/\n")
        .file("src/lib.rs", "fn a() {}\n");
    commit_all(project.path());
    leave_tool_caches(&project, "task/");
    let (code, verdict) = verdict(&project);
    assert_eq!(code, 0, "{verdict:#}");
    project
        .file("src/tools/.gitignore", "*\n")
        .file("src/tools/evil.sh", "rm -rf /\n");
    assert_caught(&project, "src/tools/evil.sh");
}

#[test]
fn an_ignore_rule_the_worker_wrote_above_a_directory_hides_nothing_in_it() {
    // `src/.gitignore` (new) ignores `tools/`, inside which a tool-like `.gitignore` sits:
    // the rule git would read is the worker's, so nothing under `src/` is hidden.
    let project = repo("        deny: [\"**/*.sh\"]\n", Some(".venv/\n"));
    project
        .file("src/.gitignore", "tools/\n")
        .file("src/tools/.gitignore", "*\n")
        .file("src/tools/evil.sh", "rm -rf /\n");
    assert_caught(&project, "src/tools/evil.sh");
}

/// Ignore files a worker writes where a committed rule seems to reach, each of which git
/// itself reads: found by an adversarial review of the first way this was judged (asking
/// check-ignore about each directory), which all three got past.
#[test]
fn a_workers_gitignore_that_git_reads_hides_nothing_however_the_committed_rules_are_written() {
    // A directory whose name git would read as pathspec magic (`:node_modules`).
    let project = repo("        deny: [\"**/*.pem\"]\n", Some("node_modules/\n"));
    project
        .file(":node_modules/.gitignore", "*\n")
        .file(":node_modules/id.pem", "key\n");
    assert_caught(&project, ":node_modules/id.pem");

    // `dir/*` with exceptions (GitHub's Node template's `.yarn/*`): the directory itself is
    // not ignored, so git reads the ignore file inside a kept subdirectory.
    let project = repo(
        "        deny: [\"**/*.cjs\"]\n",
        Some(".yarn/*\n!.yarn/plugins\n"),
    );
    project
        .file(".yarn/plugins/.gitignore", "*\n")
        .file(".yarn/plugins/plugin-evil.cjs", "evil\n");
    assert_caught(&project, ".yarn/plugins/plugin-evil.cjs");

    // A whitelist (`*`, then `!*/`): directories are kept, so their ignore files are read.
    let project = repo(
        "        allow: [\"src/**\"]\n",
        Some("*\n!*/\n!*.rs\n!.gitignore\n"),
    );
    project
        .file("tests/.gitignore", "x.rs\n.gitignore\n")
        .file("tests/x.rs", "fn x() {}\n");
    assert_caught(&project, "tests/x.rs");
}

#[test]
fn staged_edited_deleted_and_new_files_all_count() {
    let project = repo("        allow: [\"docs/**\"]\n", None);
    project
        .file("src/staged.rs", "fn s() {}\n")
        .file("src/untracked.rs", "fn u() {}\n");
    git(&project.task_dir(), &["add", "src/staged.rs"]);
    std::fs::remove_file(project.task_dir().join("src/lib.rs")).expect("delete");
    let (code, verdict) = verdict(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let found = findings(&verdict);
    for file in ["src/staged.rs", "src/untracked.rs", "src/lib.rs"] {
        assert!(found.contains(file), "{file} missing from {found}");
    }
}

#[test]
fn a_task_in_a_subdirectory_sees_only_its_own_changes_by_its_own_paths() {
    let project = Project::new();
    project
        .rules("version: 1\nstate: state\npipelines:\n  - name: main\n    gates:\n      - name: scope\n        rule: file-scope\n        allow: [\"src/**\"]\n")
        .root_file("other/keep.txt", "keep\n")
        .file("src/lib.rs", "fn a() {}\n");
    commit_all(project.path());
    project
        .root_file("other/new.txt", "not the task's\n")
        .file("src/new.rs", "fn n() {}\n")
        .file("README.md", "outside allow\n");
    let (code, verdict) = verdict(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let found = findings(&verdict);
    assert!(found.contains("\"README.md\""), "{found}");
    assert!(
        !found.contains("other/") && !found.contains("src/new.rs"),
        "{found}"
    );
}

#[test]
fn before_the_first_commit_every_staged_file_is_new() {
    let project = Project::new();
    project
        .rules("version: 1\nstate: state\npipelines:\n  - name: main\n    gates:\n      - name: scope\n        rule: file-scope\n        deny: [\"secret.pem\", \"src/**\"]\n")
        .file("secret.pem", "key\n")
        .file("src/lib.rs", "fn a() {}\n");
    git(&project.task_dir(), &["init", "-q"]);
    git(&project.task_dir(), &["add", "secret.pem"]);
    let (code, verdict) = verdict(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let found = findings(&verdict);
    assert!(
        found.contains("secret.pem") && found.contains("src/lib.rs"),
        "{found}"
    );
}

#[test]
fn git_settings_of_an_enclosing_repository_do_not_redirect_the_task_s_git() {
    // As under a pre-commit hook of another repository: git has exported where its repository
    // and index are. The task's own git must still be the one read: only the new file changed.
    let outer = Project::new();
    outer.file("readme.txt", "outer\n");
    commit_all(&outer.task_dir());
    let project = repo("        allow: [\"new.txt\"]\n", None);
    project.file("new.txt", "new\n");
    let outer_git = outer.task_dir().join(".git");
    let mut cmd = project.check();
    isolate_git(&mut cmd);
    cmd.env("GIT_DIR", &outer_git)
        .env("GIT_INDEX_FILE", outer_git.join("index"))
        .env("GIT_WORK_TREE", outer.task_dir())
        .args(["--format", "json"]);
    let (code, verdict) = common::json_verdict(cmd);
    assert_eq!(code, 0, "{verdict:#}");
    let summary = gate(&verdict, "scope")["summary"].to_string();
    assert!(summary.contains("git, against HEAD"), "{verdict:#}");
}

/// The output of `git ARGS` in `dir`.
fn git_out(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?} failed");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Rewrites the project's rules with one scope gate holding `scope`.
fn scope_rules(project: &Project, scope: &str) {
    project.rules(&format!(
        "version: 1\nstate: state\npipelines:\n  - name: main\n    gates:\n      - name: scope\n        rule: file-scope\n{scope}"
    ));
}

#[test]
fn a_replacement_ref_does_not_pass_the_workers_commit_off_as_the_base() {
    let project = repo("", None);
    let dir = project.task_dir();
    let base = git_out(&dir, &["rev-parse", "HEAD"]);
    scope_rules(
        &project,
        &format!("        base: {base}\n        readonly: [\"src/**\"]\n"),
    );
    project.file("src/lib.rs", "fn changed() {}\n");
    git(&dir, &["commit", "-qam", "work"]);
    git(&dir, &["replace", &base, "HEAD"]);
    assert_caught(&project, "src/lib.rs");
}

#[test]
fn repository_settings_that_blind_git_to_a_change_are_overridden() {
    let project = repo("        allow: [\"docs/**\"]\n", None);
    let dir = project.task_dir();
    project
        .file("Makefile", "all:\n")
        .file("tool.sh", "echo hi\n");
    git(&dir, &["add", "Makefile", "tool.sh"]);
    git(&dir, &["commit", "-qm", "more"]);
    for (key, value) in [
        ("core.ignorecase", "true"),
        ("core.trustctime", "false"),
        ("core.checkStat", "minimal"),
        ("core.fileMode", "false"),
    ] {
        git(&dir, &["config", key, value]);
    }
    // An edit of the same size with the old mtime put back, a mode change, and a new name
    // that differs from a tracked one in case only.
    let lib = dir.join("src/lib.rs");
    let mtime = std::fs::metadata(&lib)
        .and_then(|m| m.modified())
        .expect("mtime");
    std::fs::write(&lib, "fn z() {}\n").expect("edit");
    std::fs::File::options()
        .write(true)
        .open(&lib)
        .and_then(|f| f.set_modified(mtime))
        .expect("set mtime back");
    std::fs::set_permissions(
        dir.join("tool.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    project.file("makefile", "all:\n\trm -rf /\n");
    let (code, verdict) = verdict(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let found = findings(&verdict);
    for file in ["src/lib.rs", "tool.sh", "makefile"] {
        assert!(found.contains(file), "{file} missing from {found}");
    }
}

#[test]
fn a_repository_staged_as_a_submodule_shows_its_files() {
    let project = repo("        deny: [\"**/*.pem\"]\n", None);
    let dir = project.task_dir();
    project.file("vendor/key.pem", "secret\n");
    commit_all(&dir.join("vendor"));
    git(&dir, &["add", "vendor"]);
    assert_caught(&project, "vendor/key.pem");
}

#[test]
fn a_promisor_remote_cannot_make_git_run_a_program() {
    let project = repo("        readonly: [\"src/**\"]\n", None);
    let dir = project.task_dir();
    let ran = project.path().join("ran");
    let hook = project.path().join("ssh.sh");
    std::fs::write(
        &hook,
        format!("#!/bin/sh\ntouch {}\nexit 1\n", ran.display()),
    )
    .expect("hook");
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    for (key, value) in [
        ("core.repositoryformatversion", "1"),
        ("extensions.partialClone", "origin"),
        ("remote.origin.url", "ssh://example.invalid/repo"),
        ("remote.origin.promisor", "true"),
        ("core.sshCommand", hook.to_str().expect("utf-8 path")),
    ] {
        git(&dir, &["config", key, value]);
    }
    // The blob git must read to compare a file whose line endings it is told to normalise.
    let blob = git_out(&dir, &["rev-parse", "HEAD:src/lib.rs"]);
    std::fs::remove_file(dir.join(".git/objects").join(&blob[..2]).join(&blob[2..]))
        .expect("remove the blob");
    std::fs::write(dir.join(".git/info/attributes"), "* text=auto\n").expect("attributes");
    // Same content, new mtime: git hashes the file, and to apply `text=auto` reads the blob.
    std::fs::File::options()
        .write(true)
        .open(dir.join("src/lib.rs"))
        .and_then(|f| {
            f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
        })
        .expect("touch");
    let _ = verdict(&project);
    assert!(!ran.exists(), "git ran the repository's sshCommand");
}

#[test]
fn a_linked_worktree_is_judged_against_the_repository_it_belongs_to() {
    let project = Project::new();
    project.rules("version: 1\nstate: state\npipelines:\n  - name: main\n    gates:\n      - {name: scope, rule: file-scope, readonly: [\"Cargo.lock\"]}\n");
    let main = project.path().join("main");
    std::fs::create_dir_all(&main).expect("mkdir");
    std::fs::write(main.join("Cargo.lock"), "lock\n").expect("write");
    commit_all(&main);
    std::fs::remove_dir_all(project.task_dir()).expect("rm task");
    git(&main, &["worktree", "add", "-q", "../task"]);
    std::fs::write(project.task_dir().join("Cargo.lock"), "changed\n").expect("edit");
    assert_caught(&project, "Cargo.lock");
}

#[test]
fn a_repository_borrowing_objects_from_outside_the_task_is_refused() {
    let project = Project::new();
    project.rules("version: 1\nstate: state\npipelines:\n  - name: main\n    gates:\n      - {name: scope, rule: file-scope}\n");
    let elsewhere = project.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).expect("mkdir");
    std::fs::write(elsewhere.join("secret.txt"), "TOP-SECRET\n").expect("write");
    commit_all(&elsewhere);
    std::fs::remove_dir_all(project.task_dir()).expect("rm task");
    git(
        project.path(),
        &["clone", "-q", "--shared", "elsewhere", "task"],
    );
    let (code, verdict) = verdict(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let summary = gate(&verdict, "scope")["summary"].to_string();
    assert!(summary.contains("borrows objects"), "{verdict:#}");
}
