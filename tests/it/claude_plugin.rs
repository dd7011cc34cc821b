// The Claude Code plugin (`plugin/`, listed by `.claude-plugin/marketplace.json`): its manifests
// agree with the crate, and its hook wrapper, run as Claude Code runs it (a shell command, the
// hook's JSON on stdin, CLAUDE_PROJECT_DIR and CLAUDE_PLUGIN_DATA in the environment), hands the
// stop to the real binary with the right rules, and never lets a missing validator look like a
// pass. That the installed plugin works inside Claude Code itself is tests/agents'
// claude_plugin, plugin_default and plugin_missing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read_json(rel: &str) -> Value {
    let text = std::fs::read_to_string(root().join(rel)).expect("plugin file");
    serde_json::from_str(&text).expect("plugin file is JSON")
}

#[test]
fn manifests_carry_the_crates_version_and_the_marketplace_lists_the_plugin() {
    let plugin = read_json("plugin/.claude-plugin/plugin.json");
    assert_eq!(plugin["name"], "validator");
    assert_eq!(plugin["version"], env!("CARGO_PKG_VERSION"));
    let market = read_json(".claude-plugin/marketplace.json");
    let entry = &market["plugins"][0];
    assert_eq!(entry["name"], "validator");
    assert_eq!(entry["source"], "./plugin");
    assert_eq!(entry["version"], env!("CARGO_PKG_VERSION"));
}

#[test]
fn the_plugin_wires_the_examples_events_with_their_deadlines_through_the_wrapper() {
    let hooks = read_json("plugin/hooks/hooks.json");
    let events = hooks["hooks"].as_object().expect("hooks by event");
    let example = read_json("examples/hooks/claude/settings.json");
    let wanted = example["hooks"].as_object().expect("the example's hooks");
    let mut names: Vec<_> = events.keys().collect();
    let mut wanted_names: Vec<_> = wanted.keys().collect();
    names.sort();
    wanted_names.sort();
    assert_eq!(
        names, wanted_names,
        "the plugin and examples/hooks wire different events"
    );
    for (event, groups) in events {
        let hook = &groups[0]["hooks"][0];
        let theirs = &wanted[event][0]["hooks"][0];
        let command = hook["command"].as_str().expect("command");
        assert!(
            command.starts_with("\"${CLAUDE_PLUGIN_ROOT}/scripts/validator-hook\" ")
                && command.contains(&format!(" {event} ")),
            "{event}: {command}"
        );
        let deadline = |command: &str| {
            command
                .split("--deadline ")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
                .map(str::to_owned)
        };
        assert_eq!(
            deadline(command),
            deadline(theirs["command"].as_str().expect("command")),
            "{event}: not the example's deadline"
        );
        assert_eq!(
            hook["timeout"], theirs["timeout"],
            "{event}: not the example's timeout"
        );
        assert_eq!(
            groups[0]["matcher"], wanted[event][0]["matcher"],
            "{event}: matcher"
        );
    }
}

/// The wrapper run as Claude Code runs a plugin's hook, in an environment with nothing of the
/// test runner's: PATH holds only `bin` (when given) and the system's.
fn wrapper(event: &str, input: &Value, env: &[(&str, &Path)], bin: Option<&Path>) -> Output {
    let mut path = String::from("/usr/bin:/bin");
    if let Some(bin) = bin {
        path = format!("{}:{path}", bin.display());
    }
    let mut cmd = Command::new("/bin/sh");
    cmd.arg(root().join("plugin/scripts/validator-hook"))
        .args([event, "--deadline", "50s"])
        .env_clear()
        .env("PATH", path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in env {
        cmd.env(key, value);
    }
    let mut child = cmd.spawn().expect("sh");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(input.to_string().as_bytes())
            .expect("input");
    }
    child.wait_with_output().expect("wrapper")
}

fn answer(out: &Output) -> Value {
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim()).unwrap_or_else(|_| panic!("not one JSON answer: {text:?}"))
}

fn stop_input(project: &Path, event: &str, message: &str) -> Value {
    json!({"session_id": "plugin-test", "cwd": project, "hook_event_name": event,
           "agent_id": "a1", "agent_type": "general-purpose",
           "stop_hook_active": false, "last_assistant_message": message})
}

#[test]
fn a_missing_validator_is_never_a_silent_pass() {
    let tmp = tempfile::tempdir().expect("tmp");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let env = [("HOME", home.as_path()), ("CLAUDE_PROJECT_DIR", tmp.path())];
    let input = |event| stop_input(tmp.path(), event, "Done.\nSTATUS: OK");

    let stop = answer(&wrapper("Stop", &input("Stop"), &env, None));
    assert_eq!(stop["continue"], false, "{stop}");
    assert!(
        stop["stopReason"]
            .as_str()
            .is_some_and(|r| r.contains("NOT JUDGED")),
        "{stop}"
    );
    let sub = answer(&wrapper("SubagentStop", &input("SubagentStop"), &env, None));
    assert_eq!(sub["continue"], false, "{sub}");

    let prompt = answer(&wrapper(
        "UserPromptSubmit",
        &input("UserPromptSubmit"),
        &env,
        None,
    ));
    assert_eq!(prompt["decision"], "block", "{prompt}");
    assert!(
        prompt["reason"]
            .as_str()
            .is_some_and(|r| r.contains("validator is not installed"))
    );

    let tool = answer(&wrapper("PreToolUse", &input("PreToolUse"), &env, None));
    assert_eq!(
        tool["hookSpecificOutput"]["permissionDecision"], "deny",
        "{tool}"
    );
    assert_eq!(tool["continue"], false, "{tool}");

    let start = answer(&wrapper("SessionStart", &input("SessionStart"), &env, None));
    assert!(
        start["systemMessage"]
            .as_str()
            .is_some_and(|m| m.contains("validator is not installed"))
    );
}

/// A directory holding only `validator`, a link to the binary under test.
fn bin_dir(tmp: &Path) -> PathBuf {
    let bin = tmp.join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_validator"), bin.join("validator"))
        .expect("link");
    bin
}

#[test]
fn without_rules_of_its_own_a_subagent_must_end_with_a_status_block() {
    let tmp = tempfile::tempdir().expect("tmp");
    let project = tmp.path().join("proj");
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&project).expect("project");
    let bin = bin_dir(tmp.path());
    let env = [
        ("HOME", tmp.path()),
        ("CLAUDE_PROJECT_DIR", project.as_path()),
        ("CLAUDE_PLUGIN_DATA", data.as_path()),
    ];

    let out = wrapper(
        "SubagentStop",
        &stop_input(&project, "SubagentStop", "I wrote it."),
        &env,
        Some(&bin),
    );
    let blocked = answer(&out);
    assert_eq!(blocked["decision"], "block", "{blocked}");
    assert!(
        blocked["reason"]
            .as_str()
            .is_some_and(|r| r.contains("STATUS")),
        "{blocked}"
    );
    // The plugin's rules and their state live in its data directory, not beside the plugin.
    assert!(data.join("gates.json").is_file());
    assert!(data.join(".validator/events.jsonl").is_file());
    assert!(!root().join("plugin/hooks/.validator").exists());

    let passed = wrapper(
        "SubagentStop",
        &stop_input(&project, "SubagentStop", "I wrote it.\nSTATUS: OK"),
        &env,
        Some(&bin),
    );
    assert!(passed.status.success(), "{passed:?}");
    assert!(passed.stdout.is_empty(), "a pass says nothing: {passed:?}");

    // The main agent's stop: the plugin's own rules do not judge it.
    let parent = json!({"session_id": "plugin-test", "cwd": project, "hook_event_name": "Stop",
                        "stop_hook_active": false, "last_assistant_message": "All done."});
    let out = wrapper("Stop", &parent, &env, Some(&bin));
    assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
}

#[test]
fn the_projects_rules_come_before_the_plugins_and_the_environments_before_both() {
    let tmp = tempfile::tempdir().expect("tmp");
    let project = tmp.path().join("proj");
    std::fs::create_dir_all(&project).expect("project");
    let needs = |file: &str| {
        format!(
            "version: 1\nstate: {}\npipelines:\n  - name: agent\n    gates:\n      - {{name: {file}, rule: exists, paths: [\"{file}\"]}}\n",
            tmp.path().join(format!("state-{file}")).display()
        )
    };
    std::fs::write(project.join("validator.yaml"), needs("from-project.txt")).expect("rules");
    let bin = bin_dir(tmp.path());
    let data = tmp.path().join("data");
    let env = [
        ("HOME", tmp.path()),
        ("CLAUDE_PROJECT_DIR", project.as_path()),
        ("CLAUDE_PLUGIN_DATA", data.as_path()),
    ];
    let input = stop_input(&project, "Stop", "Done.\nSTATUS: OK");

    let by_project = answer(&wrapper("Stop", &input, &env, Some(&bin)));
    assert!(
        by_project["reason"]
            .as_str()
            .is_some_and(|r| r.contains("from-project.txt")),
        "{by_project}"
    );

    let named = tmp.path().join("outside.yaml");
    std::fs::write(&named, needs("from-env.txt")).expect("rules");
    let mut with_config = env.to_vec();
    with_config.push(("VALIDATOR_CONFIG", named.as_path()));
    let by_env = answer(&wrapper("Stop", &input, &with_config, Some(&bin)));
    let reason = by_env["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("from-env.txt") && !reason.contains("from-project.txt"),
        "{by_env}"
    );
}

/// A `validator` in `bin` that is there but cannot run, as `body` makes it (mode 0755).
fn broken_bin(tmp: &Path, name: &str, body: &[u8]) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = tmp.join(name);
    std::fs::create_dir_all(&bin).expect("bin");
    let path = bin.join("validator");
    std::fs::write(&path, body).expect("validator");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    bin
}

#[test]
fn a_validator_that_is_there_but_cannot_run_holds_the_stop() {
    let tmp = tempfile::tempdir().expect("tmp");
    let project = tmp.path().join("proj");
    std::fs::create_dir_all(&project).expect("project");
    // An ELF header for another machine (aarch64 on x86-64, x86-64 elsewhere), cut short.
    let mut foreign = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x02\0".to_vec();
    foreign.extend_from_slice(if cfg!(target_arch = "aarch64") {
        b"\x3e\0"
    } else {
        b"\xb7\0"
    });
    foreign.extend_from_slice(&[0; 44]);
    let cases: [(&str, &[u8]); 5] = [
        ("loader", b"#!/nonexistent/ld-validator\n"),
        ("foreign", &foreign),
        ("exit127", b"#!/bin/sh\ncat >/dev/null\nexit 127\n"),
        ("exit126", b"#!/bin/sh\nexit 126\n"),
        ("silent", b"#!/bin/sh\ncat >/dev/null\nexit 0\n"),
    ];
    for (name, body) in cases {
        let bin = broken_bin(tmp.path(), name, body);
        let data = tmp.path().join(format!("data-{name}"));
        let env = [
            ("HOME", tmp.path()),
            ("CLAUDE_PROJECT_DIR", project.as_path()),
            ("CLAUDE_PLUGIN_DATA", data.as_path()),
        ];
        let input = stop_input(&project, "Stop", "Done.\nSTATUS: OK");
        for time in 1..=3 {
            let out = wrapper("Stop", &input, &env, Some(&bin));
            let held = answer(&out);
            assert_eq!(held["decision"], "block", "{name} {time}: {held}");
            assert!(
                held["reason"]
                    .as_str()
                    .is_some_and(|r| r.contains("NOT JUDGED") && r.contains("did not answer")),
                "{name}: {held}"
            );
            assert!(held["systemMessage"].is_string(), "{name}: {held}");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains("did not answer this call"),
                "{name}: {stderr}"
            );
        }
        // Held three times in a row: then the session is stopped for a person, not looped.
        let stop = answer(&wrapper("Stop", &input, &env, Some(&bin)));
        assert_eq!(stop["continue"], false, "{name}: {stop}");
        assert!(stop.get("decision").is_none(), "{name}: {stop}");
        // A tool call is refused and the session stopped, as when validator is missing.
        let tool = answer(&wrapper(
            "PreToolUse",
            &stop_input(&project, "PreToolUse", ""),
            &env,
            Some(&bin),
        ));
        assert_eq!(
            tool["hookSpecificOutput"]["permissionDecision"], "deny",
            "{name}: {tool}"
        );
    }
}

#[test]
fn a_validator_that_is_not_executable_holds_the_stop() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().expect("tmp");
    let project = tmp.path().join("proj");
    std::fs::create_dir_all(&project).expect("project");
    let named = tmp.path().join("validator");
    std::fs::copy(env!("CARGO_BIN_EXE_validator"), &named).expect("copy");
    std::fs::set_permissions(&named, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let data = tmp.path().join("data");
    let env = [
        ("HOME", tmp.path()),
        ("CLAUDE_PROJECT_DIR", project.as_path()),
        ("CLAUDE_PLUGIN_DATA", data.as_path()),
        ("VALIDATOR_BIN", named.as_path()),
    ];
    let out = wrapper("Stop", &stop_input(&project, "Stop", "Done."), &env, None);
    let held = answer(&out);
    assert_eq!(held["decision"], "block", "{held}");
    assert!(
        held["reason"]
            .as_str()
            .is_some_and(|r| r.contains("did not answer")),
        "{held}"
    );
}

#[test]
fn a_validator_that_runs_resets_the_count_of_calls_it_did_not_answer() {
    let tmp = tempfile::tempdir().expect("tmp");
    let project = tmp.path().join("proj");
    std::fs::create_dir_all(&project).expect("project");
    let data = tmp.path().join("data");
    let env = [
        ("HOME", tmp.path()),
        ("CLAUDE_PROJECT_DIR", project.as_path()),
        ("CLAUDE_PLUGIN_DATA", data.as_path()),
    ];
    let broken = broken_bin(tmp.path(), "broken", b"#!/bin/sh\nexit 127\n");
    let input = stop_input(&project, "Stop", "Done.\nSTATUS: OK");
    for _ in 0..2 {
        assert_eq!(
            answer(&wrapper("Stop", &input, &env, Some(&broken)))["decision"],
            "block"
        );
    }
    // The real one answers (the plugin's rules pass this subagent's STATUS block).
    let out = wrapper(
        "SubagentStop",
        &stop_input(&project, "SubagentStop", "Done.\nSTATUS: OK"),
        &env,
        Some(&bin_dir(tmp.path())),
    );
    assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
    assert!(!data.join("cannot-run").exists());
    assert_eq!(
        answer(&wrapper("Stop", &input, &env, Some(&broken)))["decision"],
        "block"
    );
}
