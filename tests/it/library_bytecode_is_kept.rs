//! Python's bytecode across runs, through the real binary and the real `python3`: a library's
//! (a virtualenv's `lib/` on PATH) is kept in the user's cache and compiled once; the
//! project's own never is, and neither is a virtualenv's in the task whose files are the
//! worker's changes.

use std::path::{Path, PathBuf};

use crate::common::{self, Project, commit_all, isolate_git, pipeline};

/// A project whose test gate imports `mylib` from a virtualenv outside the task (its `bin/` on
/// PATH) and the project's own `proj`, with HOME a temporary directory.
fn project() -> Project {
    let project = Project::new();
    let venv = project.path().join("venv");
    let gate = format!(
        "      - name: test\n        rule: test\n        run: [python3, -c, \"import sys; sys.path[:0] = ['{}', '.']; import mylib, proj\"]\n",
        venv.join("lib").display()
    );
    project
        .rules(&pipeline(&gate))
        .root_file("venv/pyvenv.cfg", "include-system-site-packages = false\n")
        .root_file("venv/bin/.keep", "")
        .root_file("venv/lib/mylib/__init__.py", "X = 1\n")
        .root_file("home/.keep", "")
        .file("proj.py", "Y = 2\n");
    project
}

fn kept(project: &Project) -> PathBuf {
    project.path().join("home/.cache/validator/python-bytecode")
}

fn pyc_under(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(pyc_under(&path));
        } else if path.extension().is_some_and(|ext| ext == "pyc") {
            found.push(path.display().to_string());
        }
    }
    found
}

fn judged(project: &Project) -> i32 {
    let mut cmd = project.check();
    isolate_git(&mut cmd);
    let path = format!(
        "{}:{}",
        project.path().join("venv/bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    cmd.env("HOME", project.path().join("home"))
        .env("PATH", path)
        .env_remove("XDG_CACHE_HOME")
        .env_remove("PYTHONDONTWRITEBYTECODE")
        .env_remove("PYTHONPYCACHEPREFIX")
        .args(["--format", "json"]);
    let (code, verdict) = common::json_verdict(cmd);
    assert_eq!(code, 0, "{verdict:#}");
    code
}

fn python_here(test: &str) -> bool {
    crate::starter::tools_present(test, &[&["python3", "--version"]])
}

#[test]
fn a_librarys_bytecode_is_kept_and_the_projects_is_not() {
    if !python_here("a_librarys_bytecode_is_kept_and_the_projects_is_not") {
        return;
    }
    let project = project();
    judged(&project);
    let pyc = pyc_under(&kept(&project));
    assert!(
        pyc.iter().any(|p| p.contains("/venv/lib/mylib/__init__.")),
        "{pyc:?}"
    );
    assert!(!pyc.iter().any(|p| p.contains("proj.")), "{pyc:?}");
    assert!(
        pyc_under(&project.task_dir()).is_empty(),
        "no bytecode is written into the task"
    );
}

#[test]
fn a_virtualenv_in_the_task_whose_files_are_changes_keeps_no_bytecode() {
    if !python_here("a_virtualenv_in_the_task_whose_files_are_changes_keeps_no_bytecode") {
        return;
    }
    let project = Project::new();
    let venv = project.task_dir().join(".venv");
    let gate = format!(
        "      - name: test\n        rule: test\n        run: [python3, -c, \"import sys; sys.path[:0] = ['{}']; import mylib\"]\n",
        venv.join("lib").display()
    );
    project
        .rules(&pipeline(&gate))
        .root_file("home/.keep", "")
        .file("README.md", "x\n");
    commit_all(&project.task_dir());
    project
        .file(".venv/pyvenv.cfg", "include-system-site-packages = false\n")
        .file(".venv/lib/mylib/__init__.py", "X = 1\n");
    let mut cmd = project.check();
    isolate_git(&mut cmd);
    cmd.env("HOME", project.path().join("home"))
        .env_remove("XDG_CACHE_HOME")
        .env_remove("PYTHONDONTWRITEBYTECODE")
        .args(["--format", "json"]);
    let (code, verdict) = common::json_verdict(cmd);
    assert_eq!(code, 0, "{verdict:#}");
    assert!(
        pyc_under(&kept(&project)).is_empty(),
        "{:?}",
        pyc_under(&kept(&project))
    );
}

#[test]
fn the_same_virtualenv_in_the_task_hidden_by_the_committed_gitignore_keeps_its_bytecode() {
    if !python_here(
        "the_same_virtualenv_in_the_task_hidden_by_the_committed_gitignore_keeps_its_bytecode",
    ) {
        return;
    }
    let project = Project::new();
    let venv = project.task_dir().join(".venv");
    let gate = format!(
        "      - name: test\n        rule: test\n        run: [python3, -c, \"import sys; sys.path[:0] = ['{}']; import mylib\"]\n",
        venv.join("lib").display()
    );
    project
        .rules(&pipeline(&gate))
        .root_file("home/.keep", "")
        .file(".gitignore", ".venv/\n");
    commit_all(&project.task_dir());
    project
        .file(".venv/pyvenv.cfg", "include-system-site-packages = false\n")
        .file(".venv/lib/mylib/__init__.py", "X = 1\n");
    let mut cmd = project.check();
    isolate_git(&mut cmd);
    cmd.env("HOME", project.path().join("home"))
        .env_remove("XDG_CACHE_HOME")
        .env_remove("PYTHONDONTWRITEBYTECODE")
        .args(["--format", "json"]);
    let (code, verdict) = common::json_verdict(cmd);
    assert_eq!(code, 0, "{verdict:#}");
    let pyc = pyc_under(&kept(&project));
    assert!(
        pyc.iter().any(|p| p.contains("/.venv/lib/mylib/__init__.")),
        "{pyc:?}"
    );
}
