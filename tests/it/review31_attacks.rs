// Adversarial review of issue 31's changes: tool caches left out of the worker's change (and
// their record, `<state>/tool-caches/<task>.json`), and the missing-runner verdicts of the
// `lint`/`test` rules (ERROR for the environment's fault, FAIL for the task's). Seven were holes
// in the code reviewed (forged bytecode run from `__pycache__`, a forged or linked record, a
// runner on a PATH the command makes, a worker's `.python-version`), fixed since: the gates'
// tools keep their caches in a fresh directory of validator's per command, no record is kept
// where the worker can write it, and a command with a PATH of its own is not looked up on
// validator's. Every attack here must hold.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use serde_json::Value;

use crate::common::{Project, gate, pipeline, reasons, validator};

/// A repository holding its own rules file (state in `.validator/` inside it, as a hook's
/// project has), `src/` and `tests/` committed, a scope gate that allows `src/**` only after
/// `gates`, and `extra` files committed with it.
fn repository(gates: &str, extra: &[(&str, &str)]) -> tempfile::TempDir {
    // A name that is the task's name as it is (a `.tmp…` directory's loses its dot).
    let dir = tempfile::Builder::new()
        .prefix("r31-")
        .tempdir()
        .expect("temp dir");
    let repo = dir.path();
    let mut files = vec![("src/app.py", "x = 1\n")];
    files.extend_from_slice(extra);
    for (rel, text) in files {
        let path = repo.join(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, text).expect("write");
    }
    fs::write(
        repo.join("validator.yaml"),
        format!(
            "version: 1\nstate: .validator\npipelines:\n  - name: main\n    gates:\n{gates}      - {{name: scope, rule: file-scope, allow: [\"src/**\"]}}\n"
        ),
    )
    .expect("rules");
    crate::common::commit_all(repo);
    dir
}

fn check_in(repo: &Path) -> (i32, Value) {
    let mut cmd = validator();
    crate::common::isolate_git(&mut cmd);
    cmd.current_dir(repo).args(["check", "--format", "json"]);
    crate::common::json_verdict(cmd)
}

/// The task name `check` gives a repository: its directory's name.
fn task_name(repo: &Path) -> String {
    repo.file_name()
        .and_then(|n| n.to_str())
        .expect("a name")
        .to_owned()
}

fn python3() -> bool {
    std::process::Command::new("python3")
        .arg("-c")
        .arg("import importlib._bootstrap_external as b; b._code_to_timestamp_pyc")
        .status()
        .is_ok_and(|s| s.success())
}

/// The protected test, committed: it fails against the worker's `add`.
const TEST_CORE: &str = "import os, sys, unittest\nsys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'src'))\nimport core\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(core.add(2, 3), 5)\n";

/// Python that writes, for `tests/test_core.py`, the bytecode of a test that always passes,
/// stamped with the real source's modification time and size: Python (and pytest's own
/// rewritten-assertion cache) then loads it instead of the source, which never changed.
const PLANT: &str = r#"
import importlib.util, importlib._bootstrap_external as be, os
def _plant(root):
    src = os.path.join(root, 'tests', 'test_core.py')
    st = os.stat(src)
    fake = "import unittest\nclass T(unittest.TestCase):\n    def test_add(self):\n        pass\n"
    data = be._code_to_timestamp_pyc(compile(fake, src, 'exec'), int(st.st_mtime), st.st_size)
    pyc = importlib.util.cache_from_source(src)
    os.makedirs(os.path.dirname(pyc), exist_ok=True)
    with open(pyc, 'wb') as f:
        f.write(data)
"#;

const UNITTEST_GATE: &str =
    "      - {name: test, rule: test, run: [python3, -m, unittest, discover, -s, tests]}\n";

/// How: the worker's `src/core.py` (in scope, judged) plants forged bytecode for the protected
/// `tests/test_core.py` when the test gate imports it. The file lands in
/// `tests/__pycache__/`, a cache name, written while a gate ran: left out and recorded. The
/// worker then takes the payload out of `core.py`. On the next run the record holds (Python
/// never rewrites bytecode whose source stamp matches), so the scope gate passes, and the test
/// gate runs the forged test instead of the committed one: the broken `add` passes, and no file
/// a person or a reviewer reads shows why. Severity: a PASS it should not give.
#[test]
fn forged_bytecode_a_gate_planted_passes_the_protected_tests_on_the_next_run() {
    if !python3() {
        eprintln!("skipped: no python3");
        return;
    }
    let dir = repository(UNITTEST_GATE, &[("tests/test_core.py", TEST_CORE)]);
    let repo = dir.path();
    let wrong = "def add(a, b):\n    return a - b\n";
    fs::write(
        repo.join("src/core.py"),
        format!(
            "{PLANT}\n_plant(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))\n{wrong}"
        ),
    )
    .expect("write");
    let (code, verdict) = check_in(repo);
    assert_eq!(code, 1, "the first run fails on the real test: {verdict:#}");

    fs::write(repo.join("src/core.py"), wrong).expect("write");
    let (code, verdict) = check_in(repo);
    assert_eq!(
        code, 1,
        "`add` is still wrong and tests/test_core.py is protected, yet: {verdict:#}"
    );
}

/// How: with the state inside the project (`state: .validator`, a hook's setup), the worker
/// writes the record itself. After one honest run, the worker writes forged bytecode for the
/// protected test and a record entry holding its inode, length, mtime and ctime (all readable
/// with `stat`; the schema is in the open). The
/// forged file is "as the gates left it": out of the scope gate's sight, and imported by the
/// test gate. The module doc accepts forged entries as hiding "only cache files"; a cache
/// file Python executes is code. Severity: a PASS it should not give.
#[test]
fn a_forged_record_hides_forged_bytecode_the_tests_then_run() {
    if !python3() {
        eprintln!("skipped: no python3");
        return;
    }
    let dir = repository(UNITTEST_GATE, &[("tests/test_core.py", TEST_CORE)]);
    let repo = dir.path();
    fs::write(
        repo.join("src/core.py"),
        "def add(a, b):\n    return a - b\n",
    )
    .expect("write");
    let (code, verdict) = check_in(repo);
    assert_eq!(code, 1, "{verdict:#}");

    // The worker's own moves: forge the bytecode, then its record entry.
    let planted = std::process::Command::new("python3")
        .arg("-c")
        .arg(format!("{PLANT}\n_plant('.')\n"))
        .current_dir(repo)
        .status()
        .expect("python3");
    assert!(planted.success());
    let pyc = std::process::Command::new("python3")
        .args([
            "-c",
            "import importlib.util; print(importlib.util.cache_from_source('tests/test_core.py'))",
        ])
        .current_dir(repo)
        .output()
        .expect("python3");
    let pyc = String::from_utf8_lossy(&pyc.stdout).trim().to_owned();
    let meta = fs::metadata(repo.join(&pyc)).expect("stat");
    let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
    let mut record = serde_json::json!({"schema": "validator.tool-caches/v1", "files": {}});
    record["files"][&pyc] = serde_json::json!({
        "ino": meta.ino(),
        "len": meta.len(),
        "mtime_ns": ns(meta.mtime(), meta.mtime_nsec()),
        "ctime_ns": ns(meta.ctime(), meta.ctime_nsec()),
    });
    let record_path = repo
        .join(".validator/tool-caches")
        .join(format!("{}.json", task_name(repo)));
    fs::create_dir_all(record_path.parent().expect("parent")).expect("mkdir");
    fs::write(&record_path, serde_json::to_vec(&record).expect("json")).expect("write");

    let (code, verdict) = check_in(repo);
    assert_eq!(
        code, 1,
        "`add` is wrong and the test is protected, yet: {verdict:#}"
    );
}

/// How: the worker makes `.validator/tool-caches` (inside the in-project state dir) a link to
/// a directory outside the task. At the run's end the pipeline saves the record through it:
/// `atomic::replace_unsynced` creates a temp file in the link's target and renames it over
/// `<target>/<task>.json`, whatever was there. The scope gate does call the link out, but the
/// write has already happened, whatever the verdict. Severity: a write outside the task (a
/// file named `<task>.json` replaced in any directory validator can write, as root here).
#[test]
fn the_record_is_not_written_through_a_link_out_of_the_task() {
    let dir = repository(
        "      - {name: test, rule: test, run: [sh, -c, \"mkdir -p .pytest_cache && date +%s%N > .pytest_cache/x\"]}\n",
        &[],
    );
    let repo = dir.path();
    let outside = tempfile::tempdir().expect("temp dir");
    let victim = outside.path().join(format!("{}.json", task_name(repo)));
    fs::write(&victim, "precious\n").expect("write");
    fs::create_dir_all(repo.join(".validator")).expect("mkdir");
    std::os::unix::fs::symlink(outside.path(), repo.join(".validator/tool-caches")).expect("link");
    let _ = check_in(repo);
    assert_eq!(
        fs::read_to_string(&victim).expect("read"),
        "precious\n",
        "validator replaced a file outside the task through the worker's link"
    );
}

/// How: the record's own path is left out of every listing, found by resolving its directory
/// (`toolcache::record_path`). With `.validator/` ignored by the project's committed
/// `.gitignore` (the link itself then unseen), `.validator/tool-caches -> ../config` makes
/// `config/<task>.json`, out of scope, "validator's own file": the scope gate passes while the
/// gates before it ran with the worker's out-of-scope file in place (the save replaces it
/// afterwards). Severity: a PASS it should not give (a file outside the cache names hidden).
#[test]
fn a_link_at_the_record_directory_does_not_hide_a_file_out_of_scope() {
    let dir = repository("", &[(".gitignore", ".validator/\n")]);
    let repo = dir.path();
    fs::create_dir_all(repo.join("config")).expect("mkdir");
    fs::write(
        repo.join("config")
            .join(format!("{}.json", task_name(repo))),
        "{\"admin\": true}\n",
    )
    .expect("write");
    fs::create_dir_all(repo.join(".validator")).expect("mkdir");
    std::os::unix::fs::symlink("../config", repo.join(".validator/tool-caches")).expect("link");
    let (code, verdict) = check_in(repo);
    assert_eq!(code, 1, "config/<task>.json is out of scope: {verdict:#}");
}

/// A task project (no repository) whose one test gate runs `run`, with `files` (path, text,
/// executable) in the task.
fn runner_project(run: &str, files: &[(&str, &str, bool)]) -> Project {
    let project = Project::new();
    project.rules(&pipeline(&format!(
        "      - name: test\n        rule: test\n        run: {run}\n"
    )));
    for (rel, text, exec) in files {
        project.file(rel, text);
        if *exec {
            let path = project.task_dir().join(rel);
            fs::set_permissions(path, fs::Permissions::from_mode(0o755)).expect("chmod");
        }
    }
    project
}

const FAILING_RUNNER: &str =
    "#!/bin/sh\necho 'FAILED tests/test_app.py::test_add - assert 1 == 5'\nexit 1\n";

/// How: the rules run the project's tests from its own virtualenv (`. .venv/bin/activate &&
/// runtests`), a common shape. `runtests` is a literal simple command of the script, not on the
/// PATH validator itself runs with (the activate script put the task's `.venv/bin` first), so
/// every failing test run is called "not on PATH where validator runs": ERROR, the
/// environment's fault. A worker whose tests fail gets an ERROR, which a stop hook lets
/// through. Severity: an ERROR a worker can force (any real failure).
#[test]
fn a_runner_the_script_puts_on_path_failing_is_a_failure_not_an_error() {
    let project = runner_project(
        "[sh, -c, \". .venv/bin/activate && validator-r31-runtests\"]",
        &[
            (
                ".venv/bin/activate",
                "PATH=\"$PWD/.venv/bin:$PATH\"\nexport PATH\n",
                false,
            ),
            (".venv/bin/validator-r31-runtests", FAILING_RUNNER, true),
        ],
    );
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{}\n{verdict:#}", reasons(&verdict));
}

/// How: as above, with the PATH set in the script itself (`PATH=$PWD/bin:$PATH tool`, `export
/// PATH=…; tool`) or by an `env PATH=… tool` wrapper in the argv: validator looks the tool up
/// on its own PATH, not the one the command ran with. Severity: an ERROR on every real failure.
#[test]
fn a_runner_found_on_the_path_the_command_sets_failing_is_a_failure() {
    let mut wrong = Vec::new();
    for run in [
        "[sh, -c, \"PATH=$PWD/bin:$PATH validator-r31-runtests\"]",
        "[sh, -c, \"export PATH=$PWD/bin:$PATH; validator-r31-runtests\"]",
        "[env, \"PATH=TASK/bin:/usr/bin:/bin\", validator-r31-runtests]",
    ] {
        let project = Project::new();
        let run = run.replace("TASK", &project.task_dir().display().to_string());
        project.rules(&pipeline(&format!(
            "      - name: test\n        rule: test\n        run: {run}\n"
        )));
        project.file("bin/validator-r31-runtests", FAILING_RUNNER);
        fs::set_permissions(
            project.task_dir().join("bin/validator-r31-runtests"),
            fs::Permissions::from_mode(0o755),
        )
        .expect("chmod");
        let (code, verdict) = project.verdict();
        if code != 1 {
            wrong.push(format!("{run}: exit {code}: {}", reasons(&verdict)));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// How: under pyenv (python3 on PATH is a shim, as on this machine and many developers'), the
/// interpreter `python3` runs is chosen by the task's `.python-version`. The worker, whose
/// tests fail, writes `.python-version` naming an installed interpreter without pytest
/// (`system` here): the gate fails with "No module named pytest", and validator's own lookup,
/// run from the task through the same shim, agrees, so the failure is called the
/// environment's: ERROR. Severity: an ERROR a worker can force.
#[test]
fn a_workers_python_version_file_does_not_turn_a_failure_into_an_error() {
    let shim = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("python3"))
            .find(|p| p.exists())
    });
    let Some(shim) = shim.filter(|p| p.to_string_lossy().contains("/.pyenv/shims/")) else {
        eprintln!("skipped: python3 is not a pyenv shim here");
        return;
    };
    let has_pytest = |version: Option<&str>| {
        let mut cmd = std::process::Command::new(&shim);
        cmd.args(["-c", "import pytest"])
            .env_remove("PYENV_VERSION");
        if let Some(version) = version {
            cmd.env("PYENV_VERSION", version);
        }
        cmd.output().is_ok_and(|o| o.status.success())
    };
    if !has_pytest(None) || has_pytest(Some("system")) {
        eprintln!("skipped: needs pytest in the default interpreter and not in `system`");
        return;
    }
    let project = runner_project(
        "python3 -m pytest -q",
        &[
            (
                "test_app.py",
                "def test_add():\n    assert 1 + 1 == 3\n",
                false,
            ),
            (".python-version", "system\n", false),
        ],
    );
    let mut cmd = project.check();
    cmd.args(["--format", "json"]).env_remove("PYENV_VERSION");
    let (code, verdict) = crate::common::json_verdict(cmd);
    assert_eq!(code, 1, "{}\n{verdict:#}", reasons(&verdict));
}

/// Held: a worker deleting its `node_modules` gets a FAIL that says to install, not an ERROR.
#[test]
fn a_deleted_node_modules_is_a_failure_not_an_error() {
    let has_npx = std::process::Command::new("npx")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_npx {
        eprintln!("skipped: no npx");
        return;
    }
    let project = runner_project(
        "[npx, --no-install, validator-r31-no-such-linter, .]",
        &[(
            "package.json",
            "{\"name\": \"t\", \"version\": \"1.0.0\"}\n",
            false,
        )],
    );
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    assert!(reasons(&verdict).contains("npm install"), "{verdict:#}");
}

/// Held: a link a gate (the worker's test code) makes inside a cache is judged on every run,
/// never recorded as the gates' write.
#[test]
fn a_link_a_gate_makes_in_a_cache_is_judged_every_run() {
    let dir = repository(
        "      - {name: test, rule: test, run: [sh, -c, \"mkdir -p .pytest_cache && ln -sfn /etc/hostname .pytest_cache/link\"]}\n",
        &[],
    );
    let repo = dir.path();
    for run in 1..=2 {
        let (code, verdict) = check_in(repo);
        assert_eq!(code, 1, "run {run}: {verdict:#}");
        let judged = gate(&verdict, "scope")["findings"].to_string();
        assert!(
            judged.contains(".pytest_cache/link"),
            "run {run}: {verdict:#}"
        );
    }
}

/// Held: a cache directory the worker made a link (to a directory of the task out of scope),
/// which a gate then writes through, is judged: the link by its own name, the files where
/// they really are.
#[test]
fn a_cache_directory_that_is_a_link_is_judged_with_what_lands_through_it() {
    let dir = repository(
        "      - {name: test, rule: test, run: [sh, -c, \"date +%s%N > src/__pycache__/app.cpython-311.pyc\"]}\n",
        &[],
    );
    let repo = dir.path();
    fs::create_dir_all(repo.join("config")).expect("mkdir");
    std::os::unix::fs::symlink("../config", repo.join("src/__pycache__")).expect("link");
    for run in 1..=2 {
        let (code, verdict) = check_in(repo);
        assert_eq!(code, 1, "run {run}: {verdict:#}");
        let why = reasons(&verdict);
        assert!(
            why.contains("config/app.cpython-311.pyc"),
            "run {run}: {why}"
        );
    }
}
