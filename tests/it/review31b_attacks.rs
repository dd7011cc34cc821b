// Adversarial review of review 31's fixes (7c70147) and the commits after them: the fresh
// per-command directory for the gates' tool caches (`toolcache::scratch`/`environment`), the
// record kept only out of the worker's reach, the ERROR for a runner the rules name that is
// missing (`rules::runner`), `init`'s `.editorconfig` reading and the lint severity sort.
// Six were holes in the code reviewed, fixed since: a state directory reached through a link
// in the task is the worker's (`Task::worker_may_write`), and the environment is blamed only for
// `python -m MODULE` run straight by an interpreter binary outside the task, on a PATH of no
// task directory (a script's `cd`, PATH, PYTHONPATH or a pyenv shim's choice are beyond what
// validator can tell). One is a limit, `#[ignore = "limit: …"]`: a cache the rules themselves
// keep in the task trusts modification times the worker can set back.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::Value;

use crate::common::{Project, gate, pipeline, reasons, validator};

fn has(program: &str, args: &[&str]) -> bool {
    std::process::Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A repository holding its own rules file (state in `.validator/`, a hook's layout), `files`
/// committed, and `gates` then a scope gate that allows `src/**`.
fn repository(gates: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("r31b-")
        .tempdir()
        .expect("temp dir");
    for (rel, text) in files {
        let path = dir.path().join(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, text).expect("write");
    }
    fs::write(
        dir.path().join("validator.yaml"),
        format!(
            "version: 1\nstate: .validator\npipelines:\n  - name: main\n    gates:\n{gates}      - {{name: scope, rule: file-scope, allow: [\"src/**\"]}}\n"
        ),
    )
    .expect("rules");
    crate::common::commit_all(dir.path());
    dir
}

fn check_in(repo: &Path) -> (i32, Value) {
    let mut cmd = validator();
    crate::common::isolate_git(&mut cmd);
    cmd.current_dir(repo).args(["check", "--format", "json"]);
    crate::common::json_verdict(cmd)
}

/// A task project whose one test gate runs `run` (a YAML flow value) with `extra` keys.
fn test_gate(run: &str, extra: &str) -> Project {
    let project = Project::new();
    project.rules(&pipeline(&format!(
        "      - name: test\n        rule: test\n        run: {run}\n{extra}"
    )));
    project
}

fn executable(project: &Project, rel: &str, text: &str) {
    project.file(rel, text);
    fs::set_permissions(
        project.task_dir().join(rel),
        fs::Permissions::from_mode(0o755),
    )
    .expect("chmod");
}

const FAILING_RUNNER: &str =
    "#!/bin/sh\necho 'FAILED tests/test_app.py::test_add - assert 1 == 5'\nexit 1\n";

// ---------------------------------------------------------------------------------------------
// 1. Tool caches.

/// How: the rules keep a tool's cache in the task on the command line (`ruff check --cache-dir
/// .ruff_cache`, as CI setups that cache it between jobs do; `mypy --cache-dir`, `eslint
/// --cache` alike), which wins over `RUFF_CACHE_DIR`, and the project ignores the cache in its
/// committed `.gitignore`, as docs/rules-file.md advises for a cache validator cannot redirect.
/// Run 1 passes on a clean `src/app.py`; ruff caches "clean" for it keyed on its modification
/// time and mode. The worker then writes a violation into `src/app.py` and sets its
/// modification time back (`touch -r`, any worker can): the cache the gate itself wrote, which
/// nobody changed, is read back and ruff skips the file. mypy does the same for an edit of the
/// same size (checked by hand: `mypy --cache-dir` passes `x: int = "12"`). The record and the
/// scope gate only ask whether the cache is as the gate left it, not whether the file it vouches
/// for still is. Severity: a PASS it should not give (a lint gate skips the worker's file).
#[test]
#[ignore = "limit: a cache the rules keep in the task (--cache-dir .ruff_cache) trusts modification times the worker can set back; documented, keep caches out of the task"]
fn a_gate_written_cache_replayed_after_a_same_mtime_edit_hides_a_violation() {
    if !has("ruff", &["--version"]) {
        eprintln!("skipped: no ruff");
        return;
    }
    let dir = repository(
        "      - {name: lint, rule: lint, run: [ruff, check, --no-fix, --cache-dir, .ruff_cache, src]}\n",
        &[
            (".gitignore", ".validator/\n.ruff_cache/\n"),
            ("src/.keep", ""),
        ],
    );
    let repo = dir.path();
    let app = repo.join("src/app.py");
    fs::write(&app, "x = 12345678\n").expect("write");
    let (code, verdict) = check_in(repo);
    assert_eq!(
        code,
        0,
        "run 1 is clean: {}\n{verdict:#}",
        reasons(&verdict)
    );

    let clean_mtime = fs::metadata(&app)
        .and_then(|m| m.modified())
        .expect("mtime");
    fs::write(&app, "import os\n").expect("write");
    fs::File::options()
        .write(true)
        .open(&app)
        .and_then(|f| f.set_modified(clean_mtime))
        .expect("set mtime back");
    let (code, verdict) = check_in(repo);
    assert_eq!(
        code,
        1,
        "src/app.py imports `os` unused (F401), yet: {}\n{verdict:#}",
        reasons(&verdict)
    );
}

/// Held: a project's own configuration naming a cache directory in the task (ruff's
/// `cache-dir`, mypy's `cache_dir`, pytest's `cache_dir` and an `addopts` of `-o cache_dir=`)
/// loses to the variables validator sets: nothing is written there, so nothing planted there is
/// read. Checked with the real tools where installed.
#[test]
fn a_project_config_naming_a_cache_in_the_task_does_not_win_over_validators_directory() {
    let mut gates = String::new();
    let mut expect_absent = Vec::new();
    if has("ruff", &["--version"]) {
        gates += "      - {name: ruff, rule: lint, run: [ruff, check, --no-fix, src]}\n";
        expect_absent.push("ruffcache");
    }
    if has("mypy", &["--version"]) {
        gates += "      - {name: mypy, rule: lint, run: [mypy, src/app.py]}\n";
        expect_absent.push("mypycache");
    }
    if has("python3", &["-m", "pytest", "--version"]) {
        gates += "      - {name: pytest, rule: test, run: [python3, -m, pytest, -q, -p, no:randomly, tests]}\n";
        expect_absent.push("pytestcache");
        expect_absent.push("pytestcache2");
    }
    if gates.is_empty() {
        eprintln!("skipped: none of ruff, mypy, pytest");
        return;
    }
    let project = test_gate("[\"true\"]", "");
    project.rules(&pipeline(&gates));
    project
        .file("src/app.py", "x: int = 1\n")
        .file(
            "pyproject.toml",
            "[tool.ruff]\ncache-dir = \"ruffcache\"\n\n[tool.mypy]\ncache_dir = \"mypycache\"\n",
        )
        .file(
            "pytest.ini",
            "[pytest]\ncache_dir = pytestcache\naddopts = -o cache_dir=pytestcache2\n",
        )
        .file("tests/test_app.py", "def test_one():\n    assert True\n");
    let (code, verdict) = project.verdict();
    assert_eq!(code, 0, "{}\n{verdict:#}", reasons(&verdict));
    for name in expect_absent {
        assert!(
            !project.task_dir().join(name).exists(),
            "a tool used the task's {name}: {verdict:#}"
        );
    }
    assert!(!project.task_dir().join("src/__pycache__").exists());
    assert!(!project.task_dir().join("tests/__pycache__").exists());
}

/// Held: a `TMPDIR` with a space and quotes still gives pytest its cache directory through
/// `PYTEST_ADDOPTS` (quoted as pytest splits it), nothing in the task; and the fresh
/// directory is gone when the command ends.
#[test]
fn a_tmpdir_with_spaces_and_quotes_keeps_pytests_cache_out_of_the_task_and_leaves_nothing() {
    if !has("python3", &["-m", "pytest", "--version"]) {
        eprintln!("skipped: no pytest");
        return;
    }
    let holder = tempfile::tempdir().expect("temp dir");
    let tmp = holder.path().join("it's a \"tmp\" dir");
    fs::create_dir_all(&tmp).expect("mkdir");
    let project = test_gate("[python3, -m, pytest, -q, -p, no:randomly, tests]", "");
    project.file("tests/test_app.py", "def test_one():\n    assert False\n");
    let mut cmd = project.check();
    cmd.args(["--format", "json"])
        .env("TMPDIR", &tmp)
        .env("PYTEST_ADDOPTS", "-q");
    let (code, verdict) = crate::common::json_verdict(cmd);
    assert_eq!(code, 1, "{}\n{verdict:#}", reasons(&verdict));
    let output = gate(&verdict, "test").to_string();
    assert!(!output.contains("usage:"), "{output}");
    assert!(!project.task_dir().join(".pytest_cache").exists());
    let left: Vec<_> = fs::read_dir(&tmp)
        .expect("read tmp")
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n.to_string_lossy().starts_with("validator-caches-"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

// ---------------------------------------------------------------------------------------------
// 3. Missing runners: ERROR (the environment's fault) only when the worker cannot have caused it.

/// How: the rules run a module of the project from the directory that holds it (`cd backend &&
/// python3 -m selftest`), a common shape. validator asks whether `selftest` is the task's from
/// the gate's `cwd` (the task root) only, and whether the interpreter has it from a scratch
/// directory: neither, so every failing run (the worker's broken code) is called the
/// environment's fault. Severity: an ERROR the worker gets for any real failure (a stop hook lets
/// the agent stop).
#[test]
fn a_project_module_run_after_cd_failing_is_a_failure_not_an_error() {
    if !has("python3", &["--version"]) {
        eprintln!("skipped: no python3");
        return;
    }
    let project = test_gate("[sh, -c, \"cd backend && python3 -m selftest\"]", "");
    project.file(
        "backend/selftest.py",
        "print('FAILED test_add: assert 1 == 5')\nraise SystemExit(1)\n",
    );
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{}\n{verdict:#}", reasons(&verdict));
}

/// How: the script names `PYTHONPATH` itself (`PYTHONPATH=src python3 -m app`, `export
/// PYTHONPATH=src; …`, `env PYTHONPATH=src python3 -m app`): `in_task` reads only the gate's
/// `env:` and validator's own `PYTHONPATH`, not the script's, so the project's module counts as
/// one the interpreter lacks and the worker's failing code is an ERROR. Severity: as above.
#[test]
fn a_project_module_on_the_scripts_own_pythonpath_failing_is_a_failure() {
    if !has("python3", &["--version"]) {
        eprintln!("skipped: no python3");
        return;
    }
    let mut wrong = Vec::new();
    for run in [
        "[sh, -c, \"PYTHONPATH=src python3 -m selftest\"]",
        "[sh, -c, \"export PYTHONPATH=src; python3 -m selftest\"]",
        "[env, PYTHONPATH=src, python3, -m, selftest]",
    ] {
        let project = test_gate(run, "");
        project.file(
            "src/selftest.py",
            "print('FAILED test_add: assert 1 == 5')\nraise SystemExit(1)\n",
        );
        let (code, verdict) = project.verdict();
        if code != 1 {
            wrong.push(format!("{run}: exit {code}: {}", reasons(&verdict)));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// How: the gate's own `env:` puts a directory of the task on PATH (`PATH:
/// ".venv/bin:/usr/bin:/bin"`, the project's virtualenv). The runner is there and runs, and
/// fails; validator looks it up on that PATH but passes over its relative entries, so it calls
/// the runner "not on PATH where validator runs": ERROR for every real failure. Severity: an
/// ERROR the worker gets for any failure.
#[test]
fn a_runner_on_a_relative_path_entry_of_the_gates_env_failing_is_a_failure() {
    let mut wrong = Vec::new();
    // (A bare `run: [validator-r31b-runtests]` is refused whatever the work: validator starts
    // programs only from absolute PATH entries. That is the rules' error, not the worker's.)
    for run in [
        "[sh, -c, validator-r31b-runtests]",
        "[sh, -c, \"cd . && validator-r31b-runtests\"]",
    ] {
        let project = test_gate(run, "        env: {PATH: \".venv/bin:/usr/bin:/bin\"}\n");
        executable(
            &project,
            ".venv/bin/validator-r31b-runtests",
            FAILING_RUNNER,
        );
        let (code, verdict) = project.verdict();
        if code != 1 {
            wrong.push(format!("{run}: exit {code}: {}", reasons(&verdict)));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// How: the gate's `env:` puts the task's own `.venv/bin` on PATH by its absolute path, and the
/// runner lives only there. The worker, whose tests fail, deletes it (a `.venv` is the worker's,
/// and usually ignored, so no scope gate sees the deletion): the bare argv fails to start
/// ("command not found": ERROR) and under `sh -c` exits 127, which validator, finding it on none
/// of the gate's PATH, calls the environment's fault. A program on a task directory of PATH is
/// the task's to provide, as a relative `./run.sh` already is. Severity: an ERROR the worker
/// can force.
#[test]
fn deleting_a_runner_from_a_task_directory_on_the_gates_path_is_a_failure() {
    let mut wrong = Vec::new();
    for run in [
        "[validator-r31b-runtests]",
        "[sh, -c, validator-r31b-runtests]",
    ] {
        let project = Project::new();
        let bin = project.task_dir().join(".venv/bin");
        project.rules(&pipeline(&format!(
            "      - name: test\n        rule: test\n        run: {run}\n        env: {{PATH: \"{}:/usr/bin:/bin\"}}\n",
            bin.display()
        )));
        project.file("test_app.py", "def test_add():\n    assert 1 + 1 == 3\n");
        fs::create_dir_all(&bin).expect("mkdir");
        // The worker's move: no runner, no failing run to show.
        let (code, verdict) = project.verdict();
        if code != 1 {
            wrong.push(format!("{run}: exit {code}: {}", reasons(&verdict)));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// How: under pyenv (`python3` a shim), validator asks "has this interpreter pytest?" from a
/// fresh directory under `TMPDIR`, and the shim picks the interpreter by the first
/// `.python-version` in that directory or above it. The worker's `conftest.py`, run by the test
/// gate with validator's rights (or the agent itself, under a hook, from its shell), writes
/// `.python-version` naming an interpreter without pytest (`system` here) into the temp
/// directory, and its tests fail: the lookup answers "no pytest" and the failure becomes
/// "the environment's fault". It stays so for every later run of every task on the machine
/// until someone finds the file. Severity: an ERROR the worker can force (and a denial of
/// judging for others).
#[test]
fn a_python_version_file_in_the_temp_dir_does_not_turn_a_failure_into_an_error() {
    let shim = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("python3"))
            .find(|p| p.exists())
    });
    let Some(shim) = shim.filter(|p| p.to_string_lossy().contains("/.pyenv/shims/")) else {
        eprintln!("skipped: python3 is not a pyenv shim here");
        return;
    };
    let probe = |version: Option<&str>| {
        let mut cmd = std::process::Command::new(&shim);
        cmd.args(["-c", "import pytest"])
            .env_remove("PYENV_VERSION");
        if let Some(version) = version {
            cmd.env("PYENV_VERSION", version);
        }
        cmd.output().is_ok_and(|o| o.status.success())
    };
    if !probe(None) || probe(Some("system")) {
        eprintln!("skipped: needs pytest in the default interpreter and not in `system`");
        return;
    }
    // A temp directory of this test's own (the real attack writes /tmp/.python-version).
    let tmp = tempfile::tempdir().expect("temp dir");
    let project = test_gate("[python3, -m, pytest, -q, -p, no:randomly]", "");
    project
        .file(
            "conftest.py",
            "import os, tempfile\nwith open(os.path.join(tempfile.gettempdir(), '.python-version'), 'w') as f:\n    f.write('system\\n')\n",
        )
        .file("test_app.py", "def test_add():\n    assert 1 + 1 == 3\n");
    let mut cmd = project.check();
    cmd.args(["--format", "json"])
        .env("TMPDIR", tmp.path())
        .env_remove("PYENV_VERSION");
    let (code, verdict) = crate::common::json_verdict(cmd);
    assert!(
        tmp.path().join(".python-version").exists(),
        "the conftest ran"
    );
    assert_eq!(code, 1, "{}\n{verdict:#}", reasons(&verdict));
}

/// Held: what the worker's code prints never makes the verdict: a "command not found" line and
/// exit 127 from its own script is a FAIL, whether the name it prints is somewhere or nowhere,
/// never an ERROR and never a PASS.
#[test]
fn a_workers_printed_not_found_line_is_a_failure_never_an_error_or_a_pass() {
    for printed in [
        "sh: 1: validator-r31b-nowhere: not found",
        "bash: sh: command not found",
        "env: 'pytest': No such file or directory",
        "/bin/sh: 1: python3: not found",
    ] {
        let project = test_gate("[sh, -c, ./run.sh]", "");
        executable(
            &project,
            "run.sh",
            &format!("#!/bin/sh\necho \"{printed}\" >&2\nexit 127\n"),
        );
        let (code, verdict) = project.verdict();
        assert_eq!(code, 1, "{printed}: {}\n{verdict:#}", reasons(&verdict));
        assert_eq!(
            gate(&verdict, "test")["outcome"],
            "fail",
            "{printed}: {verdict:#}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 4. init's .editorconfig, the severity sort.

/// Held: a FIFO named `.editorconfig` where `validator init` runs is not read (it would hang on
/// it): init finishes and says nothing of tabs.
#[test]
fn init_beside_a_fifo_named_editorconfig_finishes() {
    let dir = tempfile::tempdir().expect("temp dir");
    nix::unistd::mkfifo(
        &dir.path().join(".editorconfig"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .expect("mkfifo");
    let output = validator()
        .current_dir(dir.path())
        .arg("init")
        .timeout(crate::common::PATIENCE)
        .output()
        .expect("run init");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!text.contains("tabs"), "{text}");
}

/// Held: warnings printed before an error (the worker's files can make a linter print hundreds)
/// do not push the error out of the findings a person reads: errors come first, past the cap.
/// (Findings without a severity, as ruff's concise lines, keep the tool's order and are cut at
/// the cap: a worker's noise can push a real one out of the list, but not out of the count, and
/// the gate fails on the exit as it should. Not a hole of the verdict.)
#[test]
fn warnings_printed_first_do_not_hide_an_error_finding() {
    let mut script = String::from("#!/bin/sh\n");
    for i in 0..400 {
        script += &format!("echo 'src/noise.py:{i}:1: warning: trailing whitespace'\n");
    }
    script += "echo 'src/app.py:1:5: error: E999 invalid syntax'\nexit 1\n";
    let project = Project::new();
    project.rules(&pipeline(&crate::common::lint("lint", "[./lint.sh]", "")));
    executable(&project, "lint.sh", &script);
    project.file("src/app.py", "x = (\n");
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    let findings = gate(&verdict, "lint")["findings"].to_string();
    assert!(findings.contains("E999"), "{findings}");
}

// ---------------------------------------------------------------------------------------------
// 2. The record kept only out of the worker's reach.

/// How: with `state: .validator` (inside the project), the worker replaces `.validator` with a
/// link to a directory outside the task that it can write (`/tmp/…`: the agent's shell under a
/// hook, or its test code run by a gate). `out_of_reach` canonicalizes the state directory,
/// finds it outside the task and the worker area, and trusts `<state>/tool-caches/<task>.json`,
/// which the worker wrote: a forged entry with the stamp of a file it made in a cache
/// directory hides that file from the scope gate. (Without the `.gitignore` the link itself is
/// judged, and the planted file is still missing from the findings.) Severity: a file the scope forbids passes
/// (any cache-named path: `.pytest_cache/…`, a `.coverage.*`, an `.eslintcache` eslint then
/// reads); the record's guarantee (kept only where the worker cannot write) does not hold.
#[test]
fn a_state_directory_linked_out_of_the_task_by_the_worker_holds_no_trusted_record() {
    // The project ignores its state (`init` says to), as `.validator` (no slash: a link too).
    let dir = repository(
        "",
        &[("src/app.py", "x = 1\n"), (".gitignore", ".validator\n")],
    );
    let repo = dir.path();
    let outside = tempfile::tempdir().expect("temp dir");
    fs::create_dir_all(repo.join(".pytest_cache")).expect("mkdir");
    fs::write(repo.join(".pytest_cache/planted"), "the worker's\n").expect("write");
    let rel = ".pytest_cache/planted";
    let meta = fs::metadata(repo.join(rel)).expect("stat");
    use std::os::unix::fs::MetadataExt;
    let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
    let mut record = serde_json::json!({"schema": "validator.tool-caches/v1", "files": {}});
    record["files"][rel] = serde_json::json!({
        "ino": meta.ino(),
        "len": meta.len(),
        "mtime_ns": ns(meta.mtime(), meta.mtime_nsec()),
        "ctime_ns": ns(meta.ctime(), meta.ctime_nsec()),
    });
    let name = repo.file_name().and_then(|n| n.to_str()).expect("name");
    fs::create_dir_all(outside.path().join("tool-caches")).expect("mkdir");
    fs::write(
        outside
            .path()
            .join("tool-caches")
            .join(format!("{name}.json")),
        serde_json::to_vec(&record).expect("json"),
    )
    .expect("write");
    let _ = fs::remove_dir_all(repo.join(".validator"));
    std::os::unix::fs::symlink(outside.path(), repo.join(".validator")).expect("link");
    let (code, verdict) = check_in(repo);
    assert_eq!(
        code,
        1,
        "{rel} is the worker's and out of scope, yet: {}\n{verdict:#}",
        reasons(&verdict)
    );
    assert!(
        gate(&verdict, "scope")["findings"]
            .to_string()
            .contains(rel),
        "{verdict:#}"
    );
}
