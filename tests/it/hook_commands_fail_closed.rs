// The Codex CLI and Gemini CLI hook commands of examples/hooks, run as those CLIs run them (a
// shell line, the hook's JSON on stdin): a validator that is missing or cannot run is never the
// non-blocking error (exit 127) that lets the agent stop unjudged. The line answers for it with
// exit 2, which both CLIs take as a block at every event (tests/agents/PROTOCOLS.md); a stop
// three times in a row at most, counted in the agent's home, then `continue: false` for a
// person. Only the CLI's own fixed text reaches the shell: the hook's input goes to validator
// on stdin, and the count is read as digits only.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::common::{Project, pipeline};

pub(crate) struct Ran {
    pub(crate) code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

pub(crate) fn command_of(file: &str, event: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/hooks")
        .join(file);
    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("example")).expect("JSON");
    settings["hooks"][event][0]["hooks"][0]["command"]
        .as_str()
        .expect("command")
        .to_owned()
}

/// Runs `command` with `sh -c` in the task directory, PATH `bin` then the system's, HOME `home`.
pub(crate) fn run(project: &Project, command: &str, bin: &Path, home: &Path, input: &Value) -> Ran {
    use std::io::Write;
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(project.task_dir())
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("HOME", home)
        .env("VALIDATOR_CONFIG", project.rules_path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sh runs");
    let _ = child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.to_string().as_bytes());
    let out = child.wait_with_output().expect("sh ends");
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A PATH directory holding `validator` as `body` (a script), or nothing when `body` is None.
pub(crate) fn bin_with(root: &Path, name: &str, body: Option<&str>) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).expect("bin dir");
    if let Some(body) = body {
        let path = dir.join("validator");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("script");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    dir
}

pub(crate) fn stop_input(project: &Project, event: &str, message: &str) -> Value {
    json!({
        "session_id": "s1", "cwd": project.task_dir(), "hook_event_name": event,
        "stop_hook_active": false, "last_assistant_message": message,
        "prompt_response": message,
    })
}

/// Each CLI's stop: (settings file, event, agent, its home under HOME).
const STOPS: [(&str, &str, &str, &str); 3] = [
    ("codex/hooks.json", "Stop", "codex", ".codex"),
    ("codex/hooks.json", "SubagentStop", "codex", ".codex"),
    ("gemini/settings.json", "AfterAgent", "gemini", ".gemini"),
];

#[test]
fn a_missing_or_broken_validator_holds_a_codex_or_gemini_stop_then_stops_for_a_person() {
    let project = Project::new();
    project.rules(&pipeline("      - {name: status, rule: status}\n"));
    for (broken, body) in [
        ("missing", None),
        ("exits", Some("exit 1")),
        ("foreign", Some("cat >/dev/null; echo hello")),
    ] {
        for (file, event, agent, home_dir) in STOPS {
            let home = project
                .path()
                .join(format!("home-{broken}-{agent}-{event}"));
            std::fs::create_dir_all(home.join(home_dir)).expect("home");
            let bin = bin_with(project.path(), &format!("bin-{broken}"), body);
            let command = command_of(file, event);
            let input = stop_input(&project, event, "Done.\nSTATUS: OK");
            for held in 1..=3 {
                let ran = run(&project, &command, &bin, &home, &input);
                assert_eq!(ran.code, Some(2), "{broken} {file} {event}: {}", ran.stderr);
                assert!(
                    ran.stderr
                        .contains(&format!("NOT JUDGED ({held} of 3 in a row)")),
                    "{broken} {file} {event}: {}",
                    ran.stderr
                );
            }
            let ran = run(&project, &command, &bin, &home, &input);
            assert_eq!(ran.code, Some(0), "{broken} {file} {event}: {}", ran.stderr);
            let answer: Value = serde_json::from_str(&ran.stdout).expect("a JSON answer");
            assert_eq!(answer["continue"], false, "{answer:#}");
            assert!(
                answer["stopReason"]
                    .as_str()
                    .is_some_and(|why| why.contains("NOT JUDGED")),
                "{answer:#}"
            );
        }
    }
}

#[test]
fn a_count_the_worker_rewrote_never_lets_a_stop_through() {
    let project = Project::new();
    project.rules(&pipeline("      - {name: status, rule: status}\n"));
    let bin = bin_with(project.path(), "bin-missing", None);
    let home = project.path().join("home");
    std::fs::create_dir_all(home.join(".codex")).expect("home");
    let marker = project.path().join("ran");
    let command = command_of("codex/hooks.json", "Stop");
    let input = stop_input(&project, "Stop", "Done.\nSTATUS: OK");
    for count in [
        format!("a[$(touch {})]", marker.display()),
        "-5".to_owned(),
        "99999999999999999999".to_owned(),
        String::new(),
    ] {
        std::fs::write(home.join(".codex/validator-unjudged"), &count).expect("count");
        let ran = run(&project, &command, &bin, &home, &input);
        assert_eq!(ran.code, Some(2), "{count:?}: {}", ran.stderr);
        assert!(
            ran.stderr.contains("NOT JUDGED (1 of 3"),
            "{count:?}: {}",
            ran.stderr
        );
        assert!(!marker.exists(), "the count was run as a command");
    }
}

#[test]
fn a_missing_validator_refuses_codex_and_gemini_tool_calls_and_prompts() {
    let project = Project::new();
    project.rules(&pipeline("      - {name: status, rule: status}\n"));
    let bin = bin_with(project.path(), "bin-missing", None);
    let home = project.path().join("home");
    for (file, event) in [
        ("codex/hooks.json", "PreToolUse"),
        ("codex/hooks.json", "PostToolUse"),
        ("codex/hooks.json", "UserPromptSubmit"),
        ("codex/hooks.json", "SessionStart"),
        ("gemini/settings.json", "BeforeTool"),
        ("gemini/settings.json", "AfterTool"),
        ("gemini/settings.json", "BeforeAgent"),
        ("gemini/settings.json", "SessionStart"),
    ] {
        let input = json!({"session_id": "s1", "cwd": project.task_dir(), "hook_event_name": event,
            "tool_name": "Bash", "tool_input": {"command": "echo hi"}, "prompt": "go"});
        let ran = run(&project, &command_of(file, event), &bin, &home, &input);
        assert_eq!(ran.code, Some(2), "{file} {event}: {}", ran.stderr);
        assert!(
            ran.stderr.contains("NOT JUDGED"),
            "{file} {event}: {}",
            ran.stderr
        );
    }
}

#[test]
fn a_validator_that_runs_answers_through_the_codex_and_gemini_commands() {
    let project = Project::new();
    project.rules(&pipeline("      - {name: status, rule: status}\n"));
    let bin = project.path().join("bin-real");
    std::fs::create_dir_all(&bin).expect("bin");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_validator"), bin.join("validator"))
        .expect("link");
    for (file, event, agent, home_dir) in STOPS {
        let home = project.path().join(format!("home-{agent}-{event}"));
        std::fs::create_dir_all(home.join(home_dir)).expect("home");
        // A count left by a validator that could not run is cleared by one that answers.
        let count = home.join(home_dir).join("validator-unjudged");
        std::fs::write(&count, "2").expect("count");
        let command = command_of(file, event);
        let ran = run(
            &project,
            &command,
            &bin,
            &home,
            &stop_input(&project, event, "Done, I think."),
        );
        assert_eq!(ran.code, Some(0), "{file} {event}: {}", ran.stderr);
        let answer: Value = serde_json::from_str(&ran.stdout).expect("validator's answer");
        assert!(answer["decision"].is_string(), "{answer:#}");
        assert!(!count.exists(), "{file} {event}: the count was kept");
        let ran = run(
            &project,
            &command,
            &bin,
            &home,
            &stop_input(&project, event, "Done.\nSTATUS: OK"),
        );
        assert_eq!(ran.code, Some(0), "{file} {event}: {}", ran.stderr);
        assert_eq!(ran.stdout, "", "{file} {event}");
    }
}
