// A newcomer's first hour (issue 31): what a user brings from pre-commit and lefthook is
// either run as they meant it or refused with the fix, never run silently wrong.

use crate::common::{Project, pipeline, validator};

/// `rules check` on `gates`: exit code and stderr.
fn rules_check(gates: &str) -> (i32, String) {
    rules_check_text(&pipeline(gates))
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
    crate::common::git_succeeds(dir, &["commit", "-qm", message])
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

/// A project as a newcomer has one: a git repository with `src/` committed, and rules whose
/// scope gate allows `src/**` only, then `gates`. With `state_inside`, the rules file sits in
/// the repository with its state in `.validator/` (`check` in a project, a hook); else the
/// rules and their state sit beside it, out of the worker's reach (the watcher's layout).
struct Repository {
    root: tempfile::TempDir,
    state_inside: bool,
}

impl Repository {
    fn new(gates: &str, state_inside: bool) -> Repository {
        let root = tempfile::tempdir().expect("temp dir");
        let repo = root.path().join("task");
        std::fs::create_dir_all(repo.join("src")).expect("mkdir");
        std::fs::write(repo.join("src/app.py"), "x = 1\n").expect("write");
        let (rules, state) = match state_inside {
            true => (repo.join("validator.yaml"), ".validator".to_owned()),
            false => (
                root.path().join("validator.yaml"),
                root.path().join("state").display().to_string(),
            ),
        };
        std::fs::write(
            rules,
            format!(
                "version: 1\nstate: {state}\npipelines:\n  - name: main\n    gates:\n      - {{name: scope, rule: file-scope, allow: [\"src/**\"]}}\n{gates}"
            ),
        )
        .expect("rules");
        crate::common::commit_all(&repo);
        Repository { root, state_inside }
    }

    fn path(&self) -> std::path::PathBuf {
        self.root.path().join("task")
    }

    fn command(&self) -> assert_cmd::Command {
        let mut cmd = validator();
        crate::common::isolate_git(&mut cmd);
        // Python writes its bytecode here unless told where (this machine may say not to).
        cmd.env_remove("PYTHONDONTWRITEBYTECODE");
        cmd.current_dir(self.path());
        if !self.state_inside {
            cmd.arg("-c").arg(self.root.path().join("validator.yaml"));
        }
        cmd
    }

    /// `check` with `args`: exit code and the JSON verdict.
    fn check(&self, args: &[&str]) -> (i32, serde_json::Value) {
        let mut cmd = self.command();
        cmd.args(["check", "--task-dir", "."])
            .args(["--format", "json"])
            .args(args);
        crate::common::json_verdict(cmd)
    }
}

/// A test gate whose tool writes its caches into the project whatever it is told (new content
/// each run, as a cache gets), then passes or fails.
fn writing_caches(exit: u8) -> String {
    format!(
        "      - name: test\n        rule: test\n        run: [sh, -c, \"mkdir -p .pytest_cache/v/cache .nyc_output && date +%s%N > .pytest_cache/v/cache/nodeids && date +%s%N > .nyc_output/out.json && printf 'Signature: 8a477f597d28d172789f06886806bc55' > .pytest_cache/CACHEDIR.TAG && exit {exit}\"]\n"
    )
}

fn files_of(verdict: &serde_json::Value, gate: &str) -> Vec<String> {
    crate::common::gate(verdict, gate)["findings"]
        .as_array()
        .map(|found| {
            found
                .iter()
                .filter_map(|f| f["file"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn real_pytest_and_ruff_leave_no_cache_in_the_project_and_the_second_run_passes() {
    if !crate::starter::tools_present(
        "real_pytest_and_ruff_leave_no_cache_in_the_project_and_the_second_run_passes",
        &[
            &["ruff", "--version"],
            &["python3", "-m", "pytest", "--version"],
        ],
    ) {
        return;
    }
    let repo = Repository::new(
        "      - {name: lint, rule: lint, run: ruff check --no-fix --output-format concise .}\n      - {name: test, rule: test, run: python3 -m pytest -q}\n",
        true,
    );
    std::fs::write(
        repo.path().join("src/test_app.py"),
        "from app import x\n\n\ndef test_x():\n    assert x == 1\n",
    )
    .expect("write");
    std::fs::write(
        repo.path().join("src/conftest.py"),
        "import os\nimport sys\n\nsys.path.insert(0, os.path.dirname(__file__))\n",
    )
    .expect("write");
    for run in 1..=3 {
        let (code, verdict) = repo.check(&[]);
        assert_eq!(code, 0, "run {run}: {verdict:#}");
    }
    for cache in [
        ".pytest_cache",
        ".ruff_cache",
        "src/__pycache__",
        ".validator",
    ] {
        assert!(
            !repo.path().join(cache).exists(),
            "{cache} was written into the project"
        );
    }
}

#[test]
fn caches_a_gate_wrote_are_left_out_of_its_run_and_of_later_ones_where_a_record_is_safe() {
    // The state out of the worker's reach: what the gates wrote is recorded, and left out of
    // every later run while it is as they left it, a failing run's included.
    for exit in [0, 1] {
        let repo = Repository::new(&writing_caches(exit), false);
        for run in 1..=3 {
            let (code, verdict) = repo.check(&[]);
            assert_eq!(code, i32::from(exit), "run {run}: {verdict:#}");
            assert_eq!(
                crate::common::gate(&verdict, "scope")["outcome"],
                "pass",
                "{verdict:#}"
            );
        }
        let (_, verdict) = repo.check(&[]);
        let counted = &crate::common::gate(&verdict, "scope")["changed_files"];
        assert_eq!(counted["count"], 0, "{verdict:#}");
        assert!(
            counted["left_out"]
                .to_string()
                .contains(".pytest_cache/v/cache/nodeids"),
            "{verdict:#}"
        );
        // A real change out of scope is the one reported.
        std::fs::write(repo.path().join("notes.txt"), "mine\n").expect("write");
        let (code, verdict) = repo.check(&[]);
        assert_eq!(code, 1, "{verdict:#}");
        assert_eq!(files_of(&verdict, "scope"), ["notes.txt"], "{verdict:#}");
    }
    // In the worker's reach, no record is kept: the run that wrote them passes, the next one
    // judges them, and says how to be rid of them.
    let repo = Repository::new(&writing_caches(0), true);
    assert_eq!(repo.check(&[]).0, 0);
    let (code, verdict) = repo.check(&[]);
    assert_eq!(code, 1, "{verdict:#}");
    let summary = crate::common::gate(&verdict, "scope")["summary"].to_string();
    assert!(
        summary.contains("ignore them in a committed .gitignore"),
        "{summary}"
    );
    assert!(!repo.path().join(".validator").exists());
}

#[test]
fn a_cache_the_worker_made_or_changed_is_judged() {
    for state_inside in [true, false] {
        let repo = Repository::new(&writing_caches(0), state_inside);
        // Made before any run, dressed as a cache every way there is.
        for (rel, text) in [
            (
                ".pytest_cache/CACHEDIR.TAG",
                "Signature: 8a477f597d28d172789f06886806bc55\n",
            ),
            (".pytest_cache/.gitignore", "*\n"),
            (".pytest_cache/payload.py", "import os\n"),
            ("src/__pycache__/evil.py", "import os\n"),
            (".mypy_cache/.gitignore", "*\n"),
        ] {
            let path = repo.path().join(rel);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        }
        for run in 1..=2 {
            let (code, verdict) = repo.check(&[]);
            assert_eq!(code, 1, "run {run}: {verdict:#}");
            let judged = files_of(&verdict, "scope");
            for rel in [
                ".pytest_cache/CACHEDIR.TAG",
                ".pytest_cache/payload.py",
                ".mypy_cache/.gitignore",
            ] {
                assert!(
                    judged.iter().any(|f| f == rel),
                    "run {run}: {rel} in {judged:?}"
                );
            }
        }
    }

    // After clean runs, a cache file the worker changes, or adds beside the gates', is its own.
    let repo = Repository::new(&writing_caches(0), false);
    assert_eq!(repo.check(&[]).0, 0);
    std::fs::write(
        repo.path().join(".pytest_cache/v/cache/nodeids"),
        "forged\n",
    )
    .expect("write");
    std::fs::write(repo.path().join(".pytest_cache/v/cache/extra"), "mine\n").expect("write");
    let (code, verdict) = repo.check(&["--only", "scope"]);
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(
        files_of(&verdict, "scope"),
        [
            ".pytest_cache/v/cache/extra",
            ".pytest_cache/v/cache/nodeids"
        ],
        "{verdict:#}"
    );
}

#[test]
fn what_a_gate_writes_outside_a_cache_is_still_judged_every_run() {
    let repo = Repository::new(
        "      - name: test\n        rule: test\n        run: [sh, -c, \"mkdir -p config && date +%s%N > config/generated.yaml\"]\n",
        false,
    );
    for run in 1..=2 {
        let (code, verdict) = repo.check(&[]);
        assert_eq!(code, 1, "run {run}: {verdict:#}");
        assert!(
            crate::common::reasons(&verdict).contains("config/generated.yaml"),
            "run {run}: {verdict:#}"
        );
    }
}

#[test]
fn real_violations_come_before_caches_and_verbose_lists_what_was_counted() {
    let repo = Repository::new("", true);
    for n in 0..12 {
        let path = repo.path().join(format!(".pytest_cache/v/cache/{n:02}"));
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, "x").expect("write");
    }
    std::fs::write(repo.path().join("zzz_notes.txt"), "mine\n").expect("write");
    let (code, verdict) = repo.check(&[]);
    assert_eq!(code, 1);
    assert_eq!(
        files_of(&verdict, "scope")[0],
        "zzz_notes.txt",
        "{verdict:#}"
    );
    // The text a person reads shows it within the first lines, and `-v` lists what counted.
    let output = repo
        .command()
        .args(["-v", "check"])
        .output()
        .expect("run validator");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let first = stdout
        .lines()
        .position(|l| l.contains("zzz_notes.txt: changed"))
        .expect("the real violation is listed");
    let cache = stdout
        .lines()
        .position(|l| l.contains(".pytest_cache/v/cache/00: changed"))
        .expect("a cache file is listed");
    assert!(first < cache, "{stdout}");
    assert!(stdout.contains("counted as changed: 13 files"), "{stdout}");
}

/// The interpreter itself (not a version manager's launcher), as the rules of a project with
/// its own virtualenv name it.
fn python_binary() -> Option<String> {
    let output = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()?;
    let path = String::from_utf8(output.stdout).ok()?.trim().to_owned();
    (output.status.success() && !path.is_empty()).then_some(path)
}

#[test]
fn a_missing_runner_named_by_the_rules_is_the_environments_fault() {
    let Some(python) = python_binary() else {
        eprintln!("skipped: no python3");
        return;
    };
    let project = Project::new();
    project.rules(&pipeline(&format!(
        "      - name: test\n        rule: test\n        run: [{python}, -m, validator_no_such_module]\n"
    )));
    let (code, verdict) = project.verdict();
    assert_eq!(code, 2, "{verdict:#}");
    let why = crate::common::reasons(&verdict);
    assert!(
        why.contains("has no module `validator_no_such_module`"),
        "{why}"
    );
    assert!(
        why.contains("pip install validator_no_such_module"),
        "{why}"
    );

    // A program the rules name straight that is on no PATH is too, as it always was.
    let project = Project::new();
    project.rules(&pipeline(
        "      - name: test\n        rule: test\n        run: validator-no-such-tool --check\n",
    ));
    let (code, verdict) = project.verdict();
    assert_eq!(code, 2, "{verdict:#}");

    // Through a shell, which may have its own PATH, it is said with its fix, as a failure.
    let project = Project::new();
    project.rules(&pipeline(
        "      - name: test\n        rule: test\n        run: [sh, -c, \"true && validator-no-such-tool --check\"]\n",
    ));
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    let why = crate::common::reasons(&verdict);
    assert!(
        why.contains("could not run: `validator-no-such-tool` was not found"),
        "{why}"
    );
}

#[test]
fn a_missing_runner_the_worker_can_fake_stays_a_failure() {
    // The worker's own module printing what a missing one would, its script calling a program
    // nobody has, a script exiting 127: each is the work failing, whatever it prints.
    for (run, file, text) in [
        (
            "python3 -m pytest_shadow",
            "pytest_shadow.py",
            "import sys\nprint('No module named pytest_shadow')\nsys.exit(1)\n",
        ),
        (
            "[sh, -c, \"sh ./run.sh\"]",
            "run.sh",
            "validator-no-such-tool --check\n",
        ),
        (
            "[sh, -c, \"sh ./run.sh\"]",
            "run.sh",
            "echo 'sh: 1: ruff: not found'; exit 127\n",
        ),
    ] {
        let project = Project::new();
        project
            .rules(&pipeline(&format!(
                "      - name: test\n        rule: test\n        run: {run}\n"
            )))
            .file(file, text);
        let (code, verdict) = project.verdict();
        assert_eq!(code, 1, "{run}: {verdict:#}");
        // A program the worker's script could not find is said as such, with the fix.
        if text.starts_with("validator-no-such-tool") {
            let why = crate::common::reasons(&verdict);
            assert!(
                why.contains("could not run: `validator-no-such-tool` was not found"),
                "{why}"
            );
        }
    }
}

#[test]
fn a_groups_live_lines_are_said_to_come_as_they_finish() {
    let project = Project::new();
    project.rules(&pipeline(
        "      - {name: one, rule: lint, run: \"true\", group: checks}\n      - {name: two, rule: lint, run: \"true\", group: checks}\n",
    ));
    let output = project.check().output().expect("run validator");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("group checks: 2 gates at once, each shown as it finishes"),
        "{stdout}"
    );
}

#[test]
fn a_linters_error_is_listed_before_its_warnings() {
    let project = Project::new();
    project.file("a.js", "var x = 1;\n").rules(&pipeline(
        "      - name: lint\n        rule: lint\n        run: [sh, -c, \"for n in 1 2 3 4 5 6 7 8 9 10 11 12; do echo \\\"a.js:$n:1: warning: No magic number [no-magic-numbers]\\\"; done; echo 'a.js:80:5: error: x is never used [no-unused-vars]'; exit 1\"]\n",
    ));
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    let lint = crate::common::gate(&verdict, "lint");
    assert_eq!(lint["findings"][0]["rule"], "no-unused-vars", "{verdict:#}");
    assert_eq!(
        lint["summary"], "13 findings (1 error) in a.js",
        "{verdict:#}"
    );
}
