//! What one gate leaves running is its own: a sibling's end (in a `group:`) must not kill it,
//! under every front end, and nothing a run cleans up may belong to another run or to whoever
//! started validator. No test here times anything: each waits on the event it means.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::common::{self, Project};

/// How gate `a` starts its daemon: as a test suite does (double fork, so that the process that
/// started it has exited and it is re-parented to validator), and maybe clearing its
/// environment (the mark with it) and leaving its process group too.
#[derive(Clone, Copy)]
enum Daemon {
    Forked,
    EnvCleared,
    EnvClearedAndSetsid,
}

impl Daemon {
    fn launcher(self) -> &'static str {
        match self {
            Daemon::Forked => "",
            Daemon::EnvCleared => "env -i PATH=/usr/bin:/bin ",
            Daemon::EnvClearedAndSetsid => "env -i PATH=/usr/bin:/bin setsid ",
        }
    }
}

/// A group of two gates. Gate `a` starts a daemon (in `root`) and waits for its answer; the
/// daemon answers only once `finished` (a file) holds a line matching `b_done`, which validator
/// writes when gate `b` has ended, i.e. after it cleaned up behind `b`. Gate `b` ends as soon as
/// the daemon has been re-parented. In order, `a` would wait for `b` forever; in the group, `a`
/// passes only if `b`'s end left `a`'s daemon alone. Gate `a` prints its cgroup.
fn daemon_and_sibling(root: &Path, daemon: Daemon, finished: &Path, b_done: &str) -> String {
    let script = format!(
        "i=0; until grep -q {b_done} {finished} 2>/dev/null || [ $i -ge 600 ]; do sleep 0.05; i=$((i+1)); done; echo ok > daemon.answer",
        b_done = shell_quoted(b_done),
        finished = shell_quoted(&finished.display().to_string()),
    );
    let daemon_path = root.join("daemon.sh");
    std::fs::write(&daemon_path, script).expect("write daemon.sh");
    // `sh -c '… sh daemon.sh &'` ends once the daemon is forked: from then on the daemon's
    // parent is validator, and `adopted` says so.
    let a = format!(
        "cat /proc/self/cgroup; sh -c '{launcher}sh {daemon} &'; touch adopted; i=0; while [ ! -e daemon.answer ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; [ -e daemon.answer ]",
        launcher = daemon.launcher(),
        daemon = daemon_path.display()
    );
    let b = "i=0; while [ ! -e adopted ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; [ -e adopted ]";
    format!("{}{}", grouped("a", &a), grouped("b", b))
}

/// `check` over a project whose pipeline is [`daemon_and_sibling`]: the exit code and verdict.
fn check_daemon_and_sibling(daemon: Daemon) -> (Option<i32>, Value, String) {
    let project = Project::new();
    // `check` prints each gate's line on stderr as the gate ends (after its clean-up).
    let progress = project.path().join("progress.txt");
    project.rules(&common::pipeline(&daemon_and_sibling(
        project.path(),
        daemon,
        &progress,
        " b  *pass",
    )));
    // (assert_cmd would pipe stderr: std's Command writes it to the file.)
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_validator"))
        .env_remove("VALIDATOR_CONFIG")
        .env_remove("VALIDATOR_LOG")
        .env("NO_COLOR", "1")
        .arg("check")
        .arg("-c")
        .arg(project.rules_path())
        .arg("--task-dir")
        .arg(project.task_dir())
        .args(["--format", "json", "--no-cache"])
        .stderr(std::fs::File::create(&progress).expect("progress file"))
        .output()
        .expect("run validator check");
    let verdict: Value = serde_json::from_slice(&output.stdout).expect("a verdict on stdout");
    let progress = std::fs::read_to_string(&progress).unwrap_or_default();
    (output.status.code(), verdict, progress)
}

/// The event log's line for gate `b`'s end.
const B_FINISHED: &str = r#""gate_finished".*"gate":"b""#;

/// `text` as one word for `sh`.
fn shell_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// A `lint` gate in group `checks` running `script` under `sh -c`.
fn grouped(name: &str, script: &str) -> String {
    format!(
        "      - {{name: {name}, rule: lint, run: [sh, -c, {}], group: checks}}\n",
        quoted(script)
    )
}

fn quoted(script: &str) -> String {
    serde_json::to_string(script).expect("a YAML-safe string")
}

fn outcomes(verdict: &Value) -> Vec<(String, String)> {
    verdict["gates"]
        .as_array()
        .expect("gates")
        .iter()
        .map(|g| {
            (
                g["name"].as_str().unwrap_or_default().to_owned(),
                g["outcome"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[test]
fn under_check_a_siblings_end_leaves_a_running_gates_daemon_alone() {
    let (code, verdict, progress) = check_daemon_and_sibling(Daemon::Forked);
    assert_eq!(code, Some(0), "{verdict:#}\n{progress}");
    assert_eq!(
        outcomes(&verdict),
        [("a".into(), "pass".into()), ("b".into(), "pass".into())]
    );
}

#[test]
fn under_check_a_daemon_that_cleared_its_environment_is_still_its_gates_by_its_group() {
    let (code, verdict, progress) = check_daemon_and_sibling(Daemon::EnvCleared);
    assert_eq!(code, Some(0), "{verdict:#}\n{progress}");
}

#[test]
fn under_hook_a_siblings_end_leaves_a_running_gates_daemon_alone() {
    let project = Project::new();
    // A hook records each gate's end (after its clean-up) in the task's event log.
    let events = project.path().join("state/events.jsonl");
    project.rules(&common::pipeline(&daemon_and_sibling(
        project.path(),
        Daemon::Forked,
        &events,
        B_FINISHED,
    )));
    let input = serde_json::json!({
        "session_id": "s1",
        "transcript_path": "/home/u/.claude/projects/p/transcript.jsonl",
        "cwd": project.task_dir(),
        "hook_event_name": "Stop",
        "stop_hook_active": false,
        "last_assistant_message": "All done.",
    });
    let output = hook_in(&project.rules_path())
        .write_stdin(input.to_string())
        .timeout(Duration::from_secs(120))
        .output()
        .expect("run validator hook");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // A PASS answers nothing.
    assert_eq!(stdout, "", "{stdout}");
}

/// `validator hook claude` as the agent runs it, in the project's task directory.
fn hook_in(rules: &Path) -> assert_cmd::Command {
    let mut command = common::validator();
    command
        .arg("-c")
        .arg(rules)
        .args(["hook", "claude"])
        .current_dir(rules.parent().expect("the rules' directory").join("task"));
    for var in [
        "CLAUDE_PROJECT_DIR",
        "GEMINI_PROJECT_DIR",
        "CODEX_PROJECT_DIR",
    ] {
        command.env_remove(var);
    }
    command
}

/// A process the test starts, carrying `VALIDATOR_WATCHER=<mark>` (the gate of an outer
/// validator, or one of that gate's siblings), killed when the test ends.
struct Bystander(std::process::Child);

impl Bystander {
    fn marked(mark: &str) -> Bystander {
        Bystander(
            std::process::Command::new("sleep")
                .arg("600")
                .env("VALIDATOR_WATCHER", mark)
                .spawn()
                .expect("start sleep"),
        )
    }

    fn alive(&mut self) -> bool {
        self.0.try_wait().expect("wait on the bystander").is_none()
    }
}

impl Drop for Bystander {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A mark no other test (or run) uses, as validator's own look (`<letters/digits/->`).
fn outer_mark() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("outer{}-{nanos}", std::process::id())
}

/// Whether process `pid` is gone (or a zombie no one reaped yet: dead all the same).
fn gone(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    })
}

/// The gate's output tail in a verdict.
fn tail<'v>(verdict: &'v Value, gate: &str) -> &'v str {
    common::gate(verdict, gate)["output_tail"]
        .as_str()
        .unwrap_or_default()
}

#[test]
fn a_gates_mark_is_its_runs_own_and_its_env_cannot_replace_it() {
    let project = common::project(&[common::lint(
        "mark",
        r#"[sh, -c, 'echo "$VALIDATOR_WATCHER"']"#,
        r#"env: {VALIDATOR_WATCHER: forged}"#,
    )]);
    let (code, verdict) = project.verdict();
    assert_eq!(code, 0, "{verdict:#}");
    let seen = tail(&verdict, "mark").trim();
    // `<pid>-<random>.<n>`: the run's own mark, then the command's number.
    let (run, command) = seen.rsplit_once('.').unwrap_or_else(|| panic!("{seen}"));
    assert_eq!(command, "0", "{seen}");
    assert!(
        run.split_once('-')
            .is_some_and(|(pid, random)| pid.parse::<u32>().is_ok() && random.len() == 16),
        "{seen}"
    );
}

#[test]
fn a_check_run_as_another_validators_gate_kills_only_what_carries_its_own_mark() {
    // What a `check` run as gate 3 of a watcher inherits, and what that gate and a sibling
    // carry: none of them is the check's to kill.
    let outer = outer_mark();
    let gate = format!("{outer}.3");
    let mut bystanders = [
        Bystander::marked(&outer),
        Bystander::marked(&gate),
        Bystander::marked(&format!("{outer}.4")),
    ];
    // Cancelled (so the check looks for what carries the command's mark), the gate leaves a
    // process outside its group.
    let project = common::project(&[common::lint(
        "slow",
        r#"[sh, -c, 'echo "$VALIDATOR_WATCHER" > mark.txt; setsid sleep 600 & echo $! > left.pid; touch ready; exec sleep 600']"#,
        "",
    )]);
    let mut check = std::process::Command::new(env!("CARGO_BIN_EXE_validator"))
        .env_remove("VALIDATOR_CONFIG")
        .env("VALIDATOR_WATCHER", &gate)
        .arg("check")
        .arg("-c")
        .arg(project.rules_path())
        .arg("--task-dir")
        .arg(project.task_dir())
        .args(["--format", "json", "--quiet"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start validator check");
    let in_task = |name: &str| project.task_dir().join(name);
    assert!(
        common::poll(Duration::from_secs(60), || in_task("ready").exists()),
        "the gate never started"
    );
    let stopped = std::process::Command::new("kill")
        .args(["-TERM", &check.id().to_string()])
        .status()
        .expect("run kill");
    assert!(stopped.success());
    let ended = check.wait().expect("wait for the check");
    assert!(!ended.success(), "a cancelled check is no PASS");
    let seen = std::fs::read_to_string(in_task("mark.txt")).expect("the gate's mark");
    let seen = seen.trim();
    // Under the gate's mark (the watcher's look finds it), never the gate's mark itself.
    let own = seen
        .strip_prefix(&format!("{gate}."))
        .unwrap_or_else(|| panic!("not under {gate}: {seen}"));
    assert!(own.ends_with(".0") && own.len() > 2, "{seen}");
    let left: u32 = std::fs::read_to_string(in_task("left.pid"))
        .ok()
        .and_then(|pid| pid.trim().parse().ok())
        .expect("the setsid child's pid");
    assert!(
        gone(left),
        "the gate's setsid child {left} outlived the check"
    );
    for (n, bystander) in bystanders.iter_mut().enumerate() {
        assert!(bystander.alive(), "bystander {n} was killed");
    }
}

#[test]
fn a_check_never_kills_what_another_check_beside_it_runs() {
    // The second check's gate has a daemon (re-parented to that check) that answers once the
    // first check is over; the first check's gate is killed at its deadline, so it looks for
    // what carries its mark while the daemon runs.
    let second = Project::new();
    let go = second.path().join("go");
    let daemon = format!(
        "i=0; until [ -e {go} ] || [ $i -ge 1200 ]; do sleep 0.05; i=$((i+1)); done; echo ok > daemon.answer",
        go = shell_quoted(&go.display().to_string())
    );
    second.root_file("daemon.sh", &daemon);
    let waits = format!(
        "sh -c 'sh {daemon} &'; touch adopted; i=0; while [ ! -e daemon.answer ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; [ -e daemon.answer ]",
        daemon = second.path().join("daemon.sh").display()
    );
    second.rules(&common::pipeline(&grouped("waits", &waits)));
    let running = std::process::Command::new(env!("CARGO_BIN_EXE_validator"))
        .env_remove("VALIDATOR_CONFIG")
        .env_remove("VALIDATOR_WATCHER")
        .arg("check")
        .arg("-c")
        .arg(second.rules_path())
        .arg("--task-dir")
        .arg(second.task_dir())
        .args(["--format", "json", "--no-cache", "--quiet"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start the second check");
    assert!(
        common::poll(Duration::from_secs(60), || second
            .task_dir()
            .join("adopted")
            .exists()),
        "the second check's daemon never started"
    );

    let first = common::project(&[common::lint(
        "slow",
        "[sh, -c, 'setsid sleep 600 & exec sleep 600']",
        "timeout: 1s",
    )]);
    let (code, verdict) = first.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    std::fs::write(&go, "").expect("write go");

    let output = running.wait_with_output().expect("the second check");
    let verdict: Value = serde_json::from_slice(&output.stdout).expect("a verdict");
    assert_eq!(output.status.code(), Some(0), "{verdict:#}");
}

#[test]
fn under_watch_a_daemon_that_left_its_group_and_its_mark_is_still_its_gates_by_its_cgroup() {
    let root = tempfile::tempdir().expect("temp dir");
    let root = root.path();
    let gates = daemon_and_sibling(
        root,
        Daemon::EnvClearedAndSetsid,
        &root.join("state/events.jsonl"),
        B_FINISHED,
    );
    std::fs::write(
        root.join("validator.yaml"),
        format!("version: 1\nstaging: staging\nverdicts: verdicts\nstate: state\npipelines:\n  - name: main\n    gates:\n{gates}"),
    )
    .expect("write rules");
    std::fs::create_dir_all(root.join("staging/t")).expect("task dir");
    let log = root.join("watch.log");
    let mut watching = common::Watching::default();
    watching.set(
        std::process::Command::new(env!("CARGO_BIN_EXE_validator"))
            .arg("watch")
            .arg("-c")
            .arg(root.join("validator.yaml"))
            .current_dir(root)
            .env_remove("VALIDATOR_CONFIG")
            .env_remove("VALIDATOR_WATCHER")
            .env("VALIDATOR_LOG", "info")
            .env("NO_COLOR", "1")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log"))
            .spawn()
            .expect("start validator watch"),
    );
    let logged = || std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        common::poll(Duration::from_secs(60), || logged().contains("watching")),
        "the watcher never started\n{}",
        logged()
    );
    std::fs::write(root.join("staging/t.done"), "STATUS: OK\n").expect("signal");
    let verdict_path = root.join("verdicts/t.verdict.json");
    assert!(
        common::poll(Duration::from_secs(90), || verdict_path.exists()),
        "no verdict\n{}",
        logged()
    );
    watching.sigterm(Duration::from_secs(30));
    let verdict: Value = serde_json::from_slice(&std::fs::read(&verdict_path).expect("verdict"))
        .expect("a JSON verdict");
    // Only a cgroup tells such a daemon's gate; where none can be made it is the known limit.
    if !tail(&verdict, "a")
        .lines()
        .any(|line| line.starts_with("0::") && line.contains("/validator-"))
    {
        eprintln!("no cgroup per gate on this machine: nothing to test");
        return;
    }
    assert_eq!(verdict["verdict"], "PASS", "{verdict:#}\n{}", logged());
}
