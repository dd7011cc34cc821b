//! The git hooks `validator install-hook` writes judge what is delivered, as a person works:
//! the pre-commit hook what is staged (partial staging, an edit made after `git add`, a file
//! left untracked), the pre-push hook what each pushed ref sends (a `--no-verify` commit, a new
//! branch, a force push), and the user's work tree is given back byte for byte.

use crate::common::{git, validator};

/// A repository with a committed rules file: `content` bans `breakpoint()` in changed Python
/// files, `lint` fails on any Python file holding `BAD` (the whole tree, as a linter does).
fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).expect("repo");
    std::fs::write(
        repo.join("validator.yaml"),
        r#"version: 1
state: ../state
pipelines:
  - name: main
    gates:
      - name: debugger
        rule: content
        changed_only: true
        files: ["**/*.py"]
        ban: [{pattern: 'breakpoint\(\)', message: remove the debugger call}]
      - name: lint
        rule: lint
        run: [sh, -c, "grep -rn --exclude-dir=.git --include=*.py BAD . | sed 's/$/: BAD found/'; ! grep -rq --exclude-dir=.git --include=*.py BAD ."]
"#,
    )
    .expect("rules");
    std::fs::write(repo.join("app.py"), "x = 1\n").expect("app");
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "base"]);
    for hook in ["pre-commit", "pre-push"] {
        let out = validator()
            .args(["install-hook", "--hook", hook])
            .current_dir(&repo)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .expect("install-hook");
        assert!(out.status.success(), "{out:?}");
    }
    dir
}

fn repo(dir: &tempfile::TempDir) -> std::path::PathBuf {
    dir.path().join("repo")
}

/// git as a person runs it, the hooks included, with HOME out of the test machine's.
fn git_ok(dir: &tempfile::TempDir, args: &[&str]) -> bool {
    git_run(dir, args).0
}

/// As [`git_ok`] for a command a hook must refuse: it failed, and a gate's FAIL said so (never
/// a broken rules file or a crash).
fn refused(dir: &tempfile::TempDir, args: &[&str], reason: &str) -> bool {
    let (ok, said) = git_run(dir, args);
    !ok && said.contains("FAIL") && said.contains(reason)
}

fn git_run(dir: &tempfile::TempDir, args: &[&str]) -> (bool, String) {
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let status = std::process::Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=t@example.com"])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(repo(dir))
        .env("HOME", &home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("NO_COLOR", "1")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("VALIDATOR_CONFIG")
        .output()
        .expect("git");
    // Shown when a test fails: what the hook said.
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&status.stdout),
        String::from_utf8_lossy(&status.stderr)
    );
    eprintln!("git {args:?}: {}\n{said}", status.status);
    (status.status.success(), said)
}

fn read(dir: &tempfile::TempDir, rel: &str) -> String {
    std::fs::read_to_string(repo(dir).join(rel)).unwrap_or_else(|err| panic!("{rel}: {err}"))
}

fn write(dir: &tempfile::TempDir, rel: &str, text: &str) {
    let path = repo(dir).join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("dir");
    }
    std::fs::write(path, text).expect("write");
}

fn head_message(dir: &tempfile::TempDir) -> String {
    let out = std::process::Command::new("git")
        .args(["log", "-1", "--format=%s"])
        .current_dir(repo(dir))
        .output()
        .expect("git log");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn no_stash_left(dir: &tempfile::TempDir) {
    assert!(
        !repo(dir).join(".git/validator-delivery").exists(),
        "the stash is gone after the run"
    );
}

#[test]
fn the_pre_commit_hook_refuses_a_staged_line_fixed_only_in_the_work_tree() {
    let dir = repository();
    write(&dir, "app.py", "x = 1\nbreakpoint()\n");
    assert!(git_ok(&dir, &["add", "app.py"]));
    write(&dir, "app.py", "x = 1\ny = 2  # fixed, not staged\n");
    assert!(
        refused(
            &dir,
            &["commit", "-q", "-m", "banned"],
            "remove the debugger call"
        ),
        "the staged line is judged"
    );
    assert_eq!(head_message(&dir), "base");
    assert_eq!(read(&dir, "app.py"), "x = 1\ny = 2  # fixed, not staged\n");
    no_stash_left(&dir);
    // Staging the fix makes the commit.
    assert!(git_ok(&dir, &["add", "app.py"]));
    assert!(git_ok(&dir, &["commit", "-q", "-m", "fixed"]));
    assert_eq!(head_message(&dir), "fixed");
}

#[test]
fn the_pre_commit_hook_passes_a_clean_stage_whatever_the_work_tree_holds() {
    let dir = repository();
    write(&dir, "app.py", "x = 2\n");
    assert!(git_ok(&dir, &["add", "app.py"]));
    // Not staged: an edit holding the banned line, and an untracked file the linter would fail.
    write(&dir, "app.py", "x = 2\nbreakpoint()\n");
    write(&dir, "scratch/notes.py", "BAD = 1\n");
    assert!(
        git_ok(&dir, &["commit", "-q", "-m", "clean stage"]),
        "only what is staged is judged"
    );
    assert_eq!(head_message(&dir), "clean stage");
    assert_eq!(
        read(&dir, "app.py"),
        "x = 2\nbreakpoint()\n",
        "the edit is given back"
    );
    assert_eq!(
        read(&dir, "scratch/notes.py"),
        "BAD = 1\n",
        "so is the untracked file"
    );
    no_stash_left(&dir);
    // Staged, the same file is judged.
    assert!(git_ok(&dir, &["add", "scratch/notes.py"]));
    assert!(refused(
        &dir,
        &["commit", "-q", "-m", "bad"],
        "scratch/notes.py"
    ));
}

#[test]
fn the_pre_commit_hook_judges_a_staged_deletion_and_a_new_file() {
    let dir = repository();
    write(&dir, "lib/new.py", "BAD = 1\n");
    assert!(git_ok(&dir, &["add", "lib/new.py"]));
    std::fs::remove_dir_all(repo(&dir).join("lib")).expect("remove");
    assert!(
        refused(&dir, &["commit", "-q", "-m", "new"], "lib/new.py"),
        "the staged file is judged though the work tree lost it"
    );
    assert!(
        !repo(&dir).join("lib/new.py").exists(),
        "and the work tree is as it was"
    );
    assert!(
        !repo(&dir).join("lib").exists(),
        "the directory made for it is gone"
    );
    no_stash_left(&dir);
}

#[test]
fn the_pre_push_hook_refuses_a_no_verify_commit_on_a_branch_new_or_forced() {
    let dir = repository();
    let remote = dir.path().join("remote.git");
    git(dir.path(), &["init", "-q", "--bare", "remote.git"]);
    assert!(git_ok(
        &dir,
        &["remote", "add", "origin", &remote.to_string_lossy()]
    ));
    assert!(
        git_ok(&dir, &["push", "-q", "origin", "HEAD:main"]),
        "a clean first push goes"
    );
    // A lint error committed past the pre-commit hook.
    write(&dir, "bad.py", "z = 'BAD'\n");
    assert!(git_ok(&dir, &["add", "bad.py"]));
    assert!(git_ok(&dir, &["commit", "-q", "--no-verify", "-m", "bad"]));
    assert!(
        refused(&dir, &["push", "-q", "origin", "HEAD:main"], "bad.py"),
        "the pushed commit is judged"
    );
    // A new branch holding it is refused too.
    assert!(refused(
        &dir,
        &["push", "-q", "origin", "HEAD:refs/heads/feature"],
        "bad.py"
    ));
    // The work tree's state is not what is pushed: a fix left unstaged changes nothing.
    std::fs::remove_file(repo(&dir).join("bad.py")).expect("remove");
    assert!(refused(
        &dir,
        &["push", "-q", "origin", "HEAD:main"],
        "bad.py"
    ));
    assert!(
        !repo(&dir).join("bad.py").exists(),
        "the work tree is given back"
    );
    no_stash_left(&dir);
    // History rewritten without it, force-pushed, goes; rewritten with it, is refused.
    assert!(git_ok(&dir, &["reset", "-q", "--hard", "HEAD~1"]));
    write(&dir, "ok.py", "fine = 1\n");
    assert!(git_ok(&dir, &["add", "ok.py"]));
    assert!(git_ok(&dir, &["commit", "-q", "-m", "ok"]));
    assert!(git_ok(&dir, &["push", "-q", "-f", "origin", "HEAD:main"]));
    assert!(git_ok(&dir, &["reset", "-q", "--hard", "HEAD~1"]));
    write(&dir, "other.py", "w = 'BAD'\n");
    assert!(git_ok(&dir, &["add", "other.py"]));
    assert!(git_ok(
        &dir,
        &["commit", "-q", "--no-verify", "-m", "rewritten"]
    ));
    assert!(refused(
        &dir,
        &["push", "-q", "-f", "origin", "HEAD:main"],
        "other.py"
    ));
    // Deleting a branch delivers nothing to judge.
    assert!(git_ok(
        &dir,
        &[
            "push",
            "-q",
            "--no-verify",
            "origin",
            "HEAD:refs/heads/gone"
        ]
    ));
    assert!(git_ok(&dir, &["push", "-q", "origin", "--delete", "gone"]));
}

#[test]
fn the_pushed_range_counts_changes_from_what_the_remote_has() {
    let dir = repository();
    git(dir.path(), &["init", "-q", "--bare", "remote.git"]);
    let remote = dir.path().join("remote.git");
    assert!(git_ok(
        &dir,
        &["remote", "add", "origin", &remote.to_string_lossy()]
    ));
    assert!(git_ok(&dir, &["push", "-q", "origin", "HEAD:main"]));
    // Two commits past the remote; the first holds the banned line, the second does not touch it.
    write(&dir, "first.py", "breakpoint()\n");
    assert!(git_ok(&dir, &["add", "first.py"]));
    assert!(git_ok(
        &dir,
        &["commit", "-q", "--no-verify", "-m", "first"]
    ));
    write(&dir, "second.txt", "notes\n");
    assert!(git_ok(&dir, &["add", "second.txt"]));
    assert!(git_ok(&dir, &["commit", "-q", "-m", "second"]));
    let head = |rev: &str| {
        let out = std::process::Command::new("git")
            .args(["rev-parse", rev])
            .current_dir(repo(&dir))
            .output()
            .expect("rev-parse");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    let line = format!(
        "refs/heads/main {} refs/heads/main {}\n",
        head("HEAD"),
        head("origin/main")
    );
    let out = validator()
        .args(["check", "--pushed", "origin", "--format", "json"])
        .current_dir(repo(&dir))
        .env("HOME", dir.path())
        .write_stdin(line)
        .output()
        .expect("check --pushed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("first.py"),
        "the earlier pushed commit counts: {stdout}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("counted from refs/heads/main on origin")
    );
}

#[test]
fn a_run_stopped_with_files_set_aside_is_undone_by_the_next() {
    let dir = repository();
    write(&dir, "app.py", "x = 3\n");
    assert!(git_ok(&dir, &["add", "app.py"]));
    write(&dir, "app.py", "x = 4  # mine\n");
    // What a run killed after setting the user's file aside leaves: the plan, the file in the
    // stash, the delivered version in its place.
    let stash = repo(&dir).join(".git/validator-delivery");
    std::fs::create_dir(&stash).expect("stash");
    std::fs::rename(repo(&dir).join("app.py"), stash.join("0")).expect("aside");
    write(&dir, "app.py", "x = 3\n");
    std::fs::write(
        stash.join("plan.json"),
        r#"{"aside": [["app.py", "0"]], "written": [["app.py", "6dba43e01d22fc87e8c47a8c04ba49a133b14f39947fe1a87d7344e5c03f33d4"]], "made": []}"#,
    )
    .expect("plan");
    assert!(git_ok(&dir, &["commit", "-q", "-m", "after a stop"]));
    assert_eq!(
        read(&dir, "app.py"),
        "x = 4  # mine\n",
        "the user's file is back"
    );
    no_stash_left(&dir);
}

#[test]
fn a_planted_plan_naming_a_path_outside_the_work_tree_moves_nothing() {
    let dir = repository();
    let outside = dir.path().join("victim.txt");
    std::fs::write(&outside, "keep me\n").expect("victim");
    let stash = repo(&dir).join(".git/validator-delivery");
    std::fs::create_dir(&stash).expect("stash");
    std::fs::write(stash.join("0"), "planted\n").expect("planted");
    for path in ["../victim.txt", "/tmp/x", "a/../../victim.txt"] {
        std::fs::write(
            stash.join("plan.json"),
            format!(r#"{{"pid": 0, "aside": [["{path}", "0"]], "written": [], "made": []}}"#),
        )
        .expect("plan");
        write(&dir, "app.py", "x = 5\n");
        assert!(git_ok(&dir, &["add", "app.py"]));
        let (made, said) = git_run(&dir, &["commit", "-q", "-m", "planted"]);
        assert!(
            !made && said.contains("not followed"),
            "{path}: refused: {said}"
        );
        assert_eq!(
            std::fs::read_to_string(&outside).expect("victim"),
            "keep me\n"
        );
    }
}

#[test]
fn a_link_in_the_work_tree_is_never_followed_out_of_it() {
    let dir = repository();
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).expect("outside");
    std::fs::write(outside.join("app.py"), "theirs\n").expect("theirs");
    write(&dir, "pkg/app.py", "x = 1\n");
    assert!(git_ok(&dir, &["add", "pkg/app.py"]));
    // The staged directory is a link out of the work tree now.
    std::fs::remove_dir_all(repo(&dir).join("pkg")).expect("rm");
    std::os::unix::fs::symlink(&outside, repo(&dir).join("pkg")).expect("link");
    let _ = git_ok(&dir, &["commit", "-q", "-m", "through a link"]);
    assert_eq!(
        std::fs::read_to_string(outside.join("app.py")).expect("theirs"),
        "theirs\n",
        "nothing outside was written or moved"
    );
    assert!(
        std::fs::symlink_metadata(repo(&dir).join("pkg"))
            .expect("link")
            .file_type()
            .is_symlink(),
        "the user's link is given back"
    );
    no_stash_left(&dir);
}

#[test]
fn a_file_only_marked_with_add_n_is_not_delivered_so_not_judged() {
    let dir = repository();
    write(&dir, "later.py", "BAD = 1\n");
    assert!(git_ok(&dir, &["add", "-N", "later.py"]));
    write(&dir, "app.py", "x = 9\n");
    assert!(git_ok(&dir, &["add", "app.py"]));
    assert!(
        git_ok(&dir, &["commit", "-q", "-m", "without later.py"]),
        "git commits no intent-to-add file, so it is not judged"
    );
    assert_eq!(read(&dir, "later.py"), "BAD = 1\n");
    no_stash_left(&dir);
}

// What an adversarial review of the hooks found, each kept.

/// A bare remote `origin` holding main.
fn with_origin(dir: &tempfile::TempDir) {
    let remote = dir.path().join("remote.git");
    git(dir.path(), &["init", "-q", "--bare", "remote.git"]);
    assert!(git_ok(
        dir,
        &["remote", "add", "origin", &remote.to_string_lossy()]
    ));
    assert!(git_ok(dir, &["push", "-q", "origin", "HEAD:main"]));
}

fn head_has(dir: &tempfile::TempDir, rel: &str, text: &str) -> bool {
    let out = std::process::Command::new("git")
        .args(["show", &format!("HEAD:{rel}")])
        .current_dir(repo(dir))
        .output()
        .expect("git show");
    String::from_utf8_lossy(&out.stdout).contains(text)
}

#[test]
fn commit_all_is_judged_from_the_index_git_commits() {
    // `git commit -a` (and `git commit <path>`) hand the hook GIT_INDEX_FILE=.git/index.lock
    // (or next-index-*.lock): that is what is committed, not .git/index.
    let dir = repository();
    write(&dir, "app.py", "x = 1\nBAD = 1\n");
    let (ok, _) = git_run(&dir, &["commit", "-q", "-a", "-m", "bad"]);
    assert!(
        !ok && !head_has(&dir, "app.py", "BAD"),
        "commit -a with BAD was let through"
    );
}

#[test]
fn commit_with_pathspec_is_judged_from_the_index_git_commits() {
    let dir = repository();
    write(&dir, "app.py", "x = 1\nBAD = 1\n");
    let (ok, _) = git_run(&dir, &["commit", "-q", "-m", "bad", "app.py"]);
    assert!(
        !ok && !head_has(&dir, "app.py", "BAD"),
        "commit <path> with BAD was let through"
    );
}

#[test]
fn an_intent_to_add_entry_is_not_delivered() {
    // `git add -N`: git commit leaves the entry out; validator wrote an empty file in its place.
    let dir = repository();
    std::fs::write(
        repo(&dir).join("validator.yaml"),
        "version: 1\nstate: ../state\npipelines:\n  - name: main\n    gates:\n      - name: exists\n        rule: lint\n        run: [sh, -c, \"test -e helper.py\"]\n",
    )
    .unwrap();
    assert!(git_ok(
        &dir,
        &["commit", "-q", "--no-verify", "-am", "rules"]
    ));
    write(&dir, "helper.py", "x = 1\n");
    write(&dir, "app.py", "import helper\n");
    assert!(git_ok(&dir, &["add", "app.py"]));
    assert!(git_ok(&dir, &["add", "-N", "helper.py"]));
    let (ok, _) = git_run(&dir, &["commit", "-q", "-m", "no helper"]);
    assert!(!ok, "a commit without helper.py passed a gate requiring it");
}

#[test]
fn a_forged_remote_tracking_ref_does_not_skip_a_new_branch() {
    let dir = repository();
    with_origin(&dir);
    write(&dir, "bad.py", "BAD = 1\n");
    assert!(git_ok(&dir, &["add", "bad.py"]));
    assert!(git_ok(&dir, &["commit", "-q", "--no-verify", "-m", "bad"]));
    assert!(git_ok(
        &dir,
        &["update-ref", "refs/remotes/origin/decoy", "HEAD"]
    ));
    let (ok, _) = git_run(&dir, &["push", "-q", "origin", "HEAD:refs/heads/feature"]);
    assert!(!ok, "a new branch was pushed unjudged");
}

#[test]
fn an_ignore_rule_outside_the_commit_does_not_keep_a_file_in_place() {
    let dir = repository();
    std::fs::write(
        repo(&dir).join("validator.yaml"),
        "version: 1\nstate: ../state\npipelines:\n  - name: main\n    gates:\n      - name: import\n        rule: lint\n        run: [python3, -c, \"import app\"]\n",
    )
    .unwrap();
    assert!(git_ok(
        &dir,
        &["commit", "-q", "--no-verify", "-am", "rules"]
    ));
    write(&dir, "app.py", "import helper\n");
    write(&dir, "helper.py", "x = 1\n");
    assert!(git_ok(&dir, &["add", "app.py"]));
    std::fs::write(repo(&dir).join(".git/info/exclude"), "helper.py\n").unwrap();
    let (ok, _) = git_run(&dir, &["commit", "-q", "-m", "imports a file left out"]);
    assert!(!ok, "helper.py, left out of the commit, was judged");
}

#[test]
fn a_pyvenv_cfg_does_not_keep_an_untracked_package_in_place() {
    let dir = repository();
    std::fs::write(
        repo(&dir).join("validator.yaml"),
        "version: 1\nstate: ../state\npipelines:\n  - name: main\n    gates:\n      - name: import\n        rule: lint\n        run: [python3, -c, \"import app\"]\n",
    )
    .unwrap();
    assert!(git_ok(
        &dir,
        &["commit", "-q", "--no-verify", "-am", "rules"]
    ));
    write(&dir, "app.py", "import helper\n");
    write(&dir, "helper/__init__.py", "x = 1\n");
    write(&dir, "helper/pyvenv.cfg", "");
    assert!(git_ok(&dir, &["add", "app.py"]));
    let (ok, _) = git_run(&dir, &["commit", "-q", "-m", "imports a package left out"]);
    assert!(!ok, "helper/, left out of the commit, was judged");
}

#[test]
fn a_clean_conversion_does_not_hide_a_work_tree_difference() {
    // .git/info/attributes `ident`: git takes `$Id: anything $` as `$Id$`, so the work tree's
    // bytes differ from the pushed blob while git reports no change.
    let dir = repository();
    with_origin(&dir);
    write(&dir, "bad.py", "s = '$Id$'  # BA\n");
    std::fs::write(
        repo(&dir).join("validator.yaml"),
        "version: 1\nstate: ../state\npipelines:\n  - name: main\n    gates:\n      - name: idcheck\n        rule: lint\n        run: [sh, -c, \"! grep -qF \\\"'\\\\$Id\\\\$'\\\" bad.py\"]\n",
    )
    .unwrap();
    assert!(git_ok(&dir, &["add", "-A"]));
    assert!(git_ok(&dir, &["commit", "-q", "--no-verify", "-m", "bad"]));
    std::fs::write(repo(&dir).join(".git/info/attributes"), "bad.py ident\n").unwrap();
    write(&dir, "bad.py", "s = '$Id: hidden $'  # BA\n");
    let (ok, _) = git_run(&dir, &["push", "-q", "origin", "HEAD:main"]);
    assert!(!ok, "the pushed blob was never in the work tree");
}

#[test]
fn a_push_of_another_history_does_not_keep_heads_files() {
    let dir = repository();
    let remote = dir.path().join("remote.git");
    git(dir.path(), &["init", "-q", "--bare", "remote.git"]);
    assert!(git_ok(
        &dir,
        &["remote", "add", "origin", &remote.to_string_lossy()]
    ));
    std::fs::write(
        repo(&dir).join("validator.yaml"),
        "version: 1\nstate: ../state\npipelines:\n  - name: main\n    gates:\n      - name: import\n        rule: lint\n        run: [python3, -c, \"import app\"]\n",
    )
    .unwrap();
    write(&dir, "helper.py", "x = 1\n");
    write(&dir, "app.py", "import helper\n");
    assert!(git_ok(&dir, &["add", "-A"]));
    assert!(git_ok(&dir, &["commit", "-q", "--no-verify", "-m", "main"]));
    assert!(git_ok(&dir, &["checkout", "-q", "--orphan", "rel"]));
    assert!(git_ok(&dir, &["rm", "-q", "--cached", "helper.py"]));
    assert!(git_ok(
        &dir,
        &["commit", "-q", "--no-verify", "-m", "rel without helper"]
    ));
    std::fs::remove_file(repo(&dir).join("helper.py")).ok();
    assert!(git_ok(&dir, &["checkout", "-q", "-f", "main"]));
    let (ok, _) = git_run(&dir, &["push", "-q", "origin", "rel"]);
    assert!(
        !ok,
        "rel's tree lacks helper.py, yet HEAD's stayed for the run"
    );
}

#[test]
fn a_gate_that_stages_a_file_does_not_get_it_committed_unjudged() {
    let dir = repository();
    write(
        &dir,
        "app.py",
        "import os, subprocess\nif not os.path.exists('sneak.py'):\n    open('sneak.py', 'w').write('BA' 'D = 1\\n')\n    subprocess.run(['git', 'add', 'sneak.py'])\n",
    );
    std::fs::write(
        repo(&dir).join("validator.yaml"),
        "version: 1\nstate: ../state\npipelines:\n  - name: main\n    gates:\n      - name: lint\n        rule: lint\n        run: [sh, -c, \"! grep -rq --exclude-dir=.git --include=*.py BAD .\"]\n      - name: import\n        rule: lint\n        run: [python3, -c, \"import app\"]\n",
    )
    .unwrap();
    assert!(git_ok(&dir, &["add", "-A"]));
    let (ok, _) = git_run(&dir, &["commit", "-q", "-m", "x"]);
    assert!(
        !(ok && head_has(&dir, "sneak.py", "BAD")),
        "a file staged during the run was committed unjudged"
    );
}

#[test]
fn edits_made_after_a_killed_run_are_not_discarded() {
    let dir = repository();
    write(&dir, "app.py", "x = 1\ny = 2\n");
    assert!(git_ok(&dir, &["add", "app.py"]));
    write(&dir, "app.py", "x = 1\ny = 2\nz = 3\n");
    // What a run killed after its swap leaves: the user's app.py in the stash, the staged one
    // in its place.
    let stash = repo(&dir).join(".git/validator-delivery");
    std::fs::create_dir(&stash).unwrap();
    std::fs::rename(repo(&dir).join("app.py"), stash.join("0")).unwrap();
    write(&dir, "app.py", "x = 1\ny = 2\n");
    std::fs::write(
        stash.join("plan.json"),
        r#"{"pid":999999999,"aside":[["app.py","0"]],"written":["app.py"],"made":[]}"#,
    )
    .unwrap();
    // The user, seeing their edit gone, writes new work, then commits again.
    write(&dir, "app.py", "x = 1\ny = 2\nnew work\n");
    let _ = git_run(&dir, &["commit", "-q", "-m", "again"]);
    let text = read(&dir, "app.py");
    let kept = text.contains("new work")
        || std::fs::read_dir(&stash)
            .map(|d| d.count() > 0)
            .unwrap_or(false);
    assert!(kept, "the new work was deleted without a word: {text:?}");
}

// What a second adversarial review found (after 0bf450d), each failing until fixed.

fn rules(dir: &tempfile::TempDir, gates: &str) {
    std::fs::write(
        repo(dir).join("validator.yaml"),
        format!("version: 1\nstate: ../state\npipelines:\n  - name: main\n    gates:\n{gates}"),
    )
    .unwrap();
    assert!(git_ok(dir, &["add", "-A"]));
    assert!(git_ok(dir, &["commit", "-q", "--no-verify", "-m", "rules"]));
}

/// As [`git_run`], with a global git config of the test's (`home/.gitconfig`).
fn git_run_global(dir: &tempfile::TempDir, args: &[&str]) -> (bool, String) {
    let home = dir.path().join("home");
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(repo(dir))
        .env("HOME", &home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", home.join(".gitconfig"))
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("VALIDATOR_CONFIG")
        .output()
        .expect("git");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("git {args:?}: {}\n{said}", out.status);
    (out.status.success(), said)
}

fn venv(dir: &tempfile::TempDir) {
    write(dir, ".venv/pyvenv.cfg", "");
    write(
        dir,
        ".venv/lib/site-packages/pdbish.py",
        "def f(): breakpoint()\n",
    );
}

#[test]
fn rules_edited_in_the_work_tree_only_do_not_judge_the_commit() {
    let dir = repository();
    write(&dir, "app.py", "x = 1\nBAD = 1\n");
    assert!(git_ok(&dir, &["add", "app.py"]));
    std::fs::write(
        repo(&dir).join("validator.yaml"),
        "version: 1\nstate: ../state\npipelines:\n  - name: main\n    gates:\n      - name: lint\n        rule: lint\n        run: [\"true\"]\n",
    )
    .unwrap();
    let (ok, _) = git_run(
        &dir,
        &["commit", "-q", "-m", "BAD under weakened unstaged rules"],
    );
    assert!(
        !(ok && head_has(&dir, "app.py", "BAD")),
        "the work tree's rules judged the commit"
    );
}

#[test]
fn a_fifo_at_the_lock_does_not_hang_the_hook() {
    let dir = repository();
    nix::unistd::mkfifo(
        &repo(&dir).join(".git/validator-delivery.lock"),
        nix::sys::stat::Mode::S_IRWXU,
    )
    .unwrap();
    write(&dir, "app.py", "x = 2\n");
    assert!(git_ok(&dir, &["add", "app.py"]));
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("validator"))
        .args(["check", "--staged", "-q"])
        .current_dir(repo(&dir))
        .stdin(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(30) {
            let _ = child.kill();
            panic!("check --staged hangs on a FIFO at .git/validator-delivery.lock");
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

#[test]
fn a_gate_that_rewrites_a_delivered_file_leaves_no_kept_copy() {
    let dir = repository();
    rules(
        &dir,
        "      - name: fmt\n        rule: lint\n        run: [sh, -c, \"sed -i s/x=/x_=/ app.py\"]\n",
    );
    write(&dir, "app.py", "x=2\n");
    assert!(git_ok(&dir, &["add", "app.py"]));
    write(&dir, "app.py", "x=2\ny=mine\n");
    assert!(git_ok(&dir, &["commit", "-q", "-m", "partial"]));
    assert_eq!(read(&dir, "app.py"), "x=2\ny=mine\n");
    assert!(
        !repo(&dir).join("app.py.validator-kept").exists(),
        "a formatter gate's output was left as app.py.validator-kept"
    );
}

#[test]
fn deleting_remote_tracking_refs_does_not_turn_only_if_off() {
    let dir = repository();
    write(
        &dir,
        "pyproject.toml",
        "[project]\nname = \"p\"\n[tool.ruff]\nline-length = 88\n",
    );
    rules(
        &dir,
        "      - name: ruff\n        rule: lint\n        only_if: [{file: pyproject.toml, key: tool.ruff}]\n        run: [sh, -c, \"! grep -rq --exclude-dir=.git --include=*.py BAD .\"]\n",
    );
    with_origin(&dir);
    write(&dir, "app.py", "BAD = 1\n");
    write(&dir, "pyproject.toml", "[project]\nname = \"p\"\n");
    assert!(git_ok(
        &dir,
        &["commit", "-q", "--no-verify", "-am", "drop ruff"]
    ));
    assert!(git_ok(
        &dir,
        &["update-ref", "-d", "refs/remotes/origin/main"]
    ));
    let (ok, _) = git_run(&dir, &["push", "-q", "origin", "HEAD:refs/heads/feature"]);
    assert!(
        !ok,
        "a push made to look like a first push skipped the gate"
    );
}

#[test]
fn files_given_back_are_newer_than_what_the_gates_built() {
    let dir = repository();
    write(&dir, "Makefile", "out: src.txt\n\tcp src.txt out\n");
    write(&dir, ".gitignore", "out\n");
    write(&dir, "src.txt", "v0\n");
    rules(
        &dir,
        "      - name: build\n        rule: lint\n        run: [make, -s]\n",
    );
    write(&dir, "src.txt", "staged\n");
    assert!(git_ok(&dir, &["add", "src.txt"]));
    std::thread::sleep(std::time::Duration::from_millis(1100));
    write(&dir, "src.txt", "mine\n");
    assert!(git_ok(&dir, &["commit", "-q", "-m", "staged"]));
    let made = std::process::Command::new("make")
        .arg("-s")
        .current_dir(repo(&dir))
        .status()
        .unwrap();
    assert!(made.success());
    assert_eq!(
        read(&dir, "out"),
        "mine\n",
        "make took the staged build for the user's file"
    );
}

#[test]
fn a_text_auto_repository_with_large_fixtures_can_commit() {
    let dir = repository();
    write(&dir, ".gitattributes", "* text=auto\n");
    let line = "abcdefghijklmnopqrstuvwxyz0123456789".repeat(8) + "\n";
    for n in 0..300 {
        write(&dir, &format!("data/f{n}.txt"), &line.repeat(1100));
    }
    rules(
        &dir,
        "      - name: ok\n        rule: lint\n        run: [\"true\"]\n",
    );
    write(&dir, "app.py", "x = 2\n");
    assert!(git_ok(&dir, &["add", "app.py"]));
    assert!(
        git_ok(&dir, &["commit", "-q", "-m", "small"]),
        "refused: the fixtures are over 64 MiB per 256 files"
    );
}

#[test]
fn a_venv_in_the_users_included_global_excludes_stays_and_is_not_a_change() {
    let dir = repository();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join(".gitconfig"),
        "[include]\n\tpath = ~/.gitconfig.local\n",
    )
    .unwrap();
    std::fs::write(
        home.join(".gitconfig.local"),
        "[core]\n\texcludesFile = ~/.gitignore_global\n",
    )
    .unwrap();
    std::fs::write(home.join(".gitignore_global"), ".venv/\n").unwrap();
    rules(
        &dir,
        "      - name: venv\n        rule: lint\n        run: [test, -f, .venv/pyvenv.cfg]\n",
    );
    venv(&dir);
    write(&dir, "app.py", "x = 2\n");
    assert!(git_run_global(&dir, &["add", "app.py"]).0);
    assert!(
        git_run_global(&dir, &["commit", "-q", "-m", "c"]).0,
        "the globally ignored .venv was set aside"
    );
}

#[test]
fn a_venv_in_the_users_global_excludes_is_not_the_commits_change() {
    let dir = repository();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join(".gitconfig"),
        "[core]\n\texcludesFile = ~/.gitignore_global\n",
    )
    .unwrap();
    std::fs::write(home.join(".gitignore_global"), ".venv/\n").unwrap();
    venv(&dir);
    write(&dir, "app.py", "x = 2\n");
    assert!(git_run_global(&dir, &["add", "app.py"]).0);
    assert!(
        git_run_global(&dir, &["commit", "-q", "-m", "c"]).0,
        "site-packages under the ignored .venv were judged as the commit's changes"
    );
}

#[test]
fn an_emptied_directory_comes_back_with_its_mode() {
    use std::os::unix::fs::PermissionsExt;
    let dir = repository();
    write(&dir, "shared/inner/notes.txt", "n\n");
    std::fs::set_permissions(
        repo(&dir).join("shared"),
        std::fs::Permissions::from_mode(0o2775),
    )
    .unwrap();
    std::fs::set_permissions(
        repo(&dir).join("shared/inner"),
        std::fs::Permissions::from_mode(0o1777),
    )
    .unwrap();
    write(&dir, "app.py", "x = 2\n");
    assert!(git_ok(&dir, &["add", "app.py"]));
    assert!(git_ok(&dir, &["commit", "-q", "-m", "c"]));
    let mode = |rel: &str| {
        std::fs::metadata(repo(&dir).join(rel))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    };
    assert_eq!((mode("shared"), mode("shared/inner")), (0o2775, 0o1777));
}

#[test]
fn the_hooks_index_does_not_leak_into_the_gates() {
    let dir = repository();
    rules(
        &dir,
        "      - name: tests\n        rule: lint\n        run: [sh, -c, \"d=$(mktemp -d) && cd $d && git init -q && echo t > t && git add t\"]\n",
    );
    write(&dir, "app.py", "x = 3\n");
    assert!(
        git_ok(&dir, &["commit", "-q", "-a", "-m", "all"]),
        "a test using git in a scratch repository wrote the commit's index"
    );
}

/// On a first push nothing tells what the project was, so `only_if` turns no gate off (local
/// remote-tracking refs are anyone's to delete); a gate that then fails says why it ran.
#[test]
fn a_gate_only_if_cannot_turn_off_on_a_first_push_says_why_it_ran() {
    let dir = repository();
    write(&dir, "setup.cfg", "[metadata]\nname = x\n");
    rules(
        &dir,
        "      - name: strict\n        rule: lint\n        run: [\"false\"]\n        only_if:\n          - {file: setup.cfg, contains: '\\[strict\\]'}\n",
    );
    let remote = dir.path().join("remote.git");
    git(dir.path(), &["init", "-q", "--bare", "remote.git"]);
    assert!(git_ok(
        &dir,
        &["remote", "add", "origin", &remote.to_string_lossy()]
    ));
    let (pushed, said) = git_run(&dir, &["push", "-q", "origin", "HEAD:main"]);
    assert!(!pushed, "{said}");
    assert!(
        said.contains("it ran though the project has none of `setup.cfg` containing"),
        "{said}"
    );
}
