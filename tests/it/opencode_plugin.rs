// OpenCode's plugin (examples/hooks/opencode/validator.js), loaded by node as OpenCode loads it
// (an ES module whose export is called with the client and the project directory) with a fake
// client that records what is sent into the session: a validator it cannot run, or an answer
// it cannot read, never lets an idle session through unjudged. That the plugin works inside
// OpenCode itself is tests/agents' plugin scenarios.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::{Project, pipeline};

/// Drives the plugin through `steps` ("idle": the session goes idle; "before": a write is about
/// to run) and returns, per step, what happened, and the plugin's log (stderr).
const DRIVER: &str = r#"
import { pathToFileURL } from "node:url"
const [plugin, directory, steps] = process.argv.slice(2)
const { ValidatorGate } = await import(pathToFileURL(plugin).href)
const sent = []
const client = { session: {
  messages: async () => [{ info: { role: "assistant" }, parts: [{ type: "text", text: process.env.LAST_MESSAGE ?? "" }] }],
  prompt: async (request) => { sent.push(request.body.parts[0].text) },
  abort: async () => {},
} }
const gate = await ValidatorGate({ client, directory })
const seen = []
for (const step of JSON.parse(steps)) {
  if (step === "idle") {
    const before = sent.length
    await gate.event({ event: { type: "session.idle", properties: { sessionID: "s1" } } })
    seen.push({ sent: sent.slice(before) })
  } else {
    try {
      await gate["tool.execute.before"]({ sessionID: "s1", tool: "write" }, { args: { filePath: "a.txt", content: "x" } })
      seen.push({ refused: null })
    } catch (err) {
      seen.push({ refused: err.message })
    }
  }
}
console.log(JSON.stringify(seen))
"#;

fn node() -> bool {
    let found = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if !found {
        eprintln!("skipped: node is not installed");
    }
    found
}

/// Runs the shipped plugin under node with `validator` as VALIDATOR_BIN; (steps seen, stderr).
fn drive(
    project: &Project,
    validator: &Path,
    message: &str,
    steps: &[&str],
) -> (Vec<Value>, String) {
    let plugin = project.path().join("validator.mjs");
    let shipped =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/hooks/opencode/validator.js");
    std::fs::copy(shipped, &plugin).expect("copy the plugin");
    let driver = project.path().join("driver.mjs");
    std::fs::write(&driver, DRIVER).expect("driver");
    let out = Command::new("node")
        .arg(&driver)
        .arg(&plugin)
        .arg(project.task_dir())
        .arg(serde_json::to_string(steps).expect("steps"))
        .env("VALIDATOR_BIN", validator)
        .env("VALIDATOR_RULES", project.rules_path())
        .env("LAST_MESSAGE", message)
        .output()
        .expect("node runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let seen: Vec<Value> = serde_json::from_slice(&out.stdout).expect("the driver's JSON");
    (seen, stderr)
}

fn sent(step: &Value) -> Vec<String> {
    step["sent"]
        .as_array()
        .expect("an idle step")
        .iter()
        .map(|text| text.as_str().expect("text").to_owned())
        .collect()
}

fn script(project: &Project, name: &str, body: &str) -> std::path::PathBuf {
    let path = project.path().join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

fn status_project() -> Project {
    let project = Project::new();
    project.rules(&pipeline("      - {name: status, rule: status}\n"));
    project
}

#[test]
fn a_validator_that_cannot_run_holds_an_idle_session_then_leaves_it_for_a_person() {
    if !node() {
        return;
    }
    let project = status_project();
    let missing = project.path().join("no-such-validator");
    let (seen, stderr) = drive(
        &project,
        &missing,
        "Done.\nSTATUS: OK",
        &["idle", "idle", "idle", "idle", "before"],
    );
    for (held, step) in seen[..3].iter().enumerate() {
        let texts = sent(step);
        assert_eq!(texts.len(), 1, "stop {}: {step}", held + 1);
        assert!(texts[0].contains("NOT JUDGED"), "{}", texts[0]);
        assert!(texts[0].contains("could not be started"), "{}", texts[0]);
        assert!(
            stderr.contains(&format!("NOT JUDGED ({} of 3 in a row)", held + 1)),
            "{stderr}"
        );
    }
    // The fourth in a row: nothing sent, the session left for a person, who is told.
    assert!(sent(&seen[3]).is_empty(), "{}", seen[3]);
    assert!(stderr.contains("stopped for a person"), "{stderr}");
    // A tool call it cannot judge is refused, with the reason the model reads.
    let refused = seen[4]["refused"].as_str().expect("refused");
    assert!(refused.contains("was not judged"), "{refused}");
}

#[test]
fn a_program_that_is_not_validator_or_answers_what_no_validator_says_holds_the_stop() {
    if !node() {
        return;
    }
    let project = status_project();
    let version =
        r#"if [ "$1" = --version ]; then echo "validator 0.1.0"; exit 0; fi; cat >/dev/null"#;
    for (name, body, why) in [
        ("silent", "exit 0", "answered as no validator does"),
        (
            "exits",
            &format!("{version}; echo broken >&2; exit 1"),
            "exited 1 with no answer: broken",
        ),
        (
            "garbage",
            &format!("{version}; echo 'all good'"),
            "its answer is not JSON",
        ),
        (
            "shapeless",
            &format!("{version}; echo '{{\"ok\": true}}'"),
            "none of a stop's",
        ),
    ] {
        let fake = script(&project, name, body);
        let (seen, _) = drive(&project, &fake, "Done.\nSTATUS: OK", &["idle"]);
        let texts = sent(&seen[0]);
        assert_eq!(texts.len(), 1, "{name}: {}", seen[0]);
        assert!(
            texts[0].contains("NOT JUDGED") && texts[0].contains(why),
            "{name}: {}",
            texts[0]
        );
    }
}

#[test]
fn the_real_validator_judges_an_idle_session_through_the_plugin() {
    if !node() {
        return;
    }
    let project = status_project();
    let validator = Path::new(env!("CARGO_BIN_EXE_validator"));
    let (seen, stderr) = drive(&project, validator, "Done, I think.", &["idle"]);
    let texts = sent(&seen[0]);
    assert_eq!(texts.len(), 1, "{stderr}");
    assert!(texts[0].contains("STATUS"), "{}", texts[0]);
    assert!(!texts[0].contains("NOT JUDGED"), "{}", texts[0]);
    let (seen, stderr) = drive(&project, validator, "Done.\nSTATUS: OK", &["idle"]);
    assert!(sent(&seen[0]).is_empty(), "{stderr}");
}
