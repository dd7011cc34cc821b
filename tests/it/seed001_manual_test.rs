// Seed 001's own manual test of its plan-compliance gate ("Testing", around line 480 of the
// seed): a hand-made hook runner's input, `{"output": "STATUS: …"}`, with no event, session or
// agent, piped to the gate. Run here through `validator hook claude` over the seed's own
// gates.json, through the Claude Code plugin's wrapper over the plugin's gates.json, and through
// `validator check`: STATUS: OK passes, STATUS: BLOCKED and a missing STATUS never do.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::common::validator;
use serde_json::{Value, json};

/// The seed's three inputs, byte for byte as its `echo '…'` writes them (the `\n` is JSON's
/// escape; the seed's `won't` would end its shell quote, so the apostrophe is left out here).
const OK: &str = r#"{"output": "STATUS: OK\nTask complete"}"#;
const BLOCKED: &str = r#"{"output": "STATUS: BLOCKED\nREASON: Plan approach wont work"}"#;
const MISSING: &str = r#"{"output": "Task complete"}"#;

/// The seed's own gates.json ("Optional: Add Additional Gates"), with its commands as written:
/// a hand-made input names no agent type, so they never run for it.
fn seed_gates() -> Value {
    json!({
        "gates": {
            "check": {"description": "Run quality checks", "command": "mise run check", "on_pass": "test", "on_fail": "BLOCK"},
            "test": {"description": "Run tests", "command": "mise run test", "on_pass": "CONTINUE", "on_fail": "BLOCK"}
        },
        "hooks": {
            "SubagentStop": {
                "enabled_agents": ["general-purpose", "cipherpowers:rust-agent", "cipherpowers:code-agent"],
                "gates": ["check"]
            }
        }
    })
}

fn plugin_root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("plugin")
}

fn run(mut cmd: Command, input: &str) -> Output {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(input.as_bytes()).expect("input");
        stdin.write_all(b"\n").expect("newline");
    }
    child.wait_with_output().expect("wait")
}

/// What Claude Code would make of the answer: `pass` (exit 0, nothing said), `block` (sent
/// back to work) or `stop` (the session stopped for a person).
fn outcome(out: &Output) -> String {
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    if text.trim().is_empty() {
        return "pass".into();
    }
    let answer: Value = serde_json::from_str(text.trim())
        .unwrap_or_else(|_| panic!("not one JSON answer: {text:?}"));
    if answer["decision"] == "block" {
        "block".into()
    } else if answer["continue"] == false {
        "stop".into()
    } else {
        format!("other: {answer}")
    }
}

/// `validator -c gates.json hook claude` in a fresh project, as a person trying the gate runs it.
fn hook(input: &str) -> String {
    let tmp = tempfile::tempdir().expect("tmp");
    let rules = tmp.path().join("gates.json");
    std::fs::write(&rules, seed_gates().to_string()).expect("gates.json");
    let project = tmp.path().join("project");
    std::fs::create_dir_all(&project).expect("project");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_validator"));
    cmd.current_dir(&project)
        .env_remove("VALIDATOR_CONFIG")
        .env_remove("CLAUDE_PROJECT_DIR")
        .arg("-c")
        .arg(&rules)
        .args(["hook", "claude"]);
    outcome(&run(cmd, input))
}

/// The plugin's wrapper, as its hooks.json runs it on SubagentStop, with only the plugin's own
/// gates.json (the project has no rules of its own), in `tmp`.
fn plugin(tmp: &Path, input: &str) -> String {
    let project = tmp.join("project");
    std::fs::create_dir_all(&project).expect("project");
    let bin = tmp.join("bin");
    if !bin.exists() {
        std::fs::create_dir_all(&bin).expect("bin");
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_validator"), bin.join("validator"))
            .expect("link");
    }
    let mut cmd = Command::new("/bin/sh");
    cmd.arg(plugin_root().join("scripts/validator-hook"))
        .args(["SubagentStop", "--deadline", "50s"])
        .current_dir(&project)
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("HOME", tmp)
        .env("CLAUDE_PROJECT_DIR", &project)
        .env("CLAUDE_PLUGIN_DATA", tmp.join("data"));
    outcome(&run(cmd, input))
}

#[test]
fn the_seeds_manual_test_blocks_through_its_own_gates_json() {
    assert_eq!(hook(OK), "pass");
    assert_eq!(hook(BLOCKED), "stop");
    assert_eq!(hook(MISSING), "block");
}

#[test]
fn the_seeds_manual_test_blocks_through_the_claude_plugin() {
    for (input, expected) in [(OK, "pass"), (BLOCKED, "stop"), (MISSING, "block")] {
        let tmp = tempfile::tempdir().expect("tmp");
        assert_eq!(plugin(tmp.path(), input), expected, "{input}");
    }
    // Run one after another as the seed lists them: once BLOCKED, the session stays stopped
    // for a person, so the missing STATUS after it is not let through either.
    let tmp = tempfile::tempdir().expect("tmp");
    let seen: Vec<String> = [OK, BLOCKED, MISSING]
        .iter()
        .map(|input| plugin(tmp.path(), input))
        .collect();
    assert_eq!(seen, ["pass", "stop", "stop"]);
}

#[test]
fn the_seeds_input_as_a_done_signal_is_judged_the_same_by_check() {
    let tmp = tempfile::tempdir().expect("tmp");
    let rules = tmp.path().join("gates.json");
    std::fs::copy(plugin_root().join("hooks/gates.json"), &rules).expect("copy");
    let task = tmp.path().join("task");
    std::fs::create_dir_all(&task).expect("task");
    for (input, code) in [(OK, 0), (BLOCKED, 3), (MISSING, 1)] {
        let out = validator()
            .arg("-c")
            .arg(&rules)
            .arg("check")
            .arg("--task-dir")
            .arg(&task)
            .args(["--signal", "-"])
            .write_stdin(input)
            .output()
            .expect("check");
        assert_eq!(out.status.code(), Some(code), "{input}: {out:?}");
    }
}
