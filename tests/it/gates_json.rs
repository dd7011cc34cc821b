// A gates.json file (the format of gates.json-based Claude Code hook runners) given to the real
// binary with `-c`: `check`, `rules check`, `hook` and `watch` read it as they read a
// validator.yaml. The files are shaped like seed 001's, with small real commands.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use crate::common::{Project, copy_dir, gate, json_verdict, reasons, validator};
use serde_json::{Value, json};

/// Seed 001's file: `check` chains to `test` on SubagentStop, for two agent types. `check`
/// passes once the task holds `built`, `test` once it holds `tested`.
fn seed() -> Value {
    json!({
        "gates": {
            "check": {"description": "Run quality checks", "command": "test -f built", "on_pass": "test", "on_fail": "BLOCK"},
            "test": {"description": "Run tests", "command": "sh -c 'test -f tested'", "on_pass": "CONTINUE", "on_fail": "BLOCK"}
        },
        "hooks": {
            "SubagentStop": {"enabled_agents": ["general-purpose", "cipherpowers:rust-agent"], "gates": ["check"]}
        }
    })
}

/// Writes `file` as `.claude/gates.json` in the project and returns its path.
fn write(project: &Project, file: &Value) -> PathBuf {
    let path = project.path().join(".claude/gates.json");
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(&path, serde_json::to_string_pretty(file).expect("json")).expect("write");
    path
}

/// `check --format json` over the task with `message` as the done signal.
fn check(project: &Project, rules: &Path, message: &str) -> (i32, Value) {
    let mut cmd = validator();
    cmd.arg("check")
        .arg("-c")
        .arg(rules)
        .arg("--task-dir")
        .arg(project.task_dir())
        .args(["--signal", "-", "--format", "json"])
        .write_stdin(message);
    json_verdict(cmd)
}

/// Each gate of a verdict as `name outcome`, in the order they ran (skipped ones last).
fn ran(verdict: &Value) -> Vec<String> {
    verdict["gates"]
        .as_array()
        .expect("gates")
        .iter()
        .map(|g| {
            format!(
                "{} {}",
                g["name"].as_str().unwrap_or("?"),
                g["outcome"].as_str().unwrap_or("?")
            )
        })
        .collect()
}

#[test]
fn the_seed_chain_runs_check_then_test_and_blocks_on_either() {
    let project = Project::new();
    let rules = write(&project, &seed());

    let (code, verdict) = check(&project, &rules, "done");
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(verdict["pipeline"], "SubagentStop");
    assert_eq!(ran(&verdict), ["check fail", "test skipped"]);
    assert!(
        reasons(&verdict).starts_with("check: Run quality checks — `test` exited with 1"),
        "{verdict:#}"
    );

    project.file("built", "");
    let (code, verdict) = check(&project, &rules, "done");
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(ran(&verdict), ["check pass", "test fail"]);
    assert_eq!(gate(&verdict, "test")["rule"], "test");

    project.file("tested", "");
    let (code, verdict) = check(&project, &rules, "done");
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(verdict["verdict"], "PASS");
    assert_eq!(ran(&verdict), ["check pass", "test pass"]);
}

#[test]
fn stop_ends_the_run_blocked_for_a_person() {
    let project = Project::new();
    let rules = write(
        &project,
        &json!({
            "gates": {
                "secrets": {"command": "test ! -f id_rsa", "on_fail": "STOP"},
                "check": {"command": "true"}
            },
            "hooks": {"Stop": {"gates": ["secrets", "check"]}}
        }),
    );
    project.file("id_rsa", "-----BEGIN PRIVATE KEY-----");
    let (code, verdict) = check(&project, &rules, "done");
    assert_eq!(code, 3, "{verdict:#}");
    assert_eq!(verdict["verdict"], "BLOCKED");
    assert_eq!(ran(&verdict), ["secrets fail", "check skipped"]);
    assert!(reasons(&verdict).contains("routed to STOP"), "{verdict:#}");
}

#[test]
fn continue_on_fail_is_a_warning_and_the_list_goes_on() {
    let project = Project::new();
    let rules = write(
        &project,
        &json!({
            "gates": {
                "style": {"command": "false", "on_fail": "CONTINUE"},
                "check": {"command": "true"}
            },
            "hooks": {"Stop": {"gates": ["style", "check"]}}
        }),
    );
    let (code, verdict) = check(&project, &rules, "done");
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(ran(&verdict), ["style fail", "check pass"]);
    assert!(
        verdict["warnings"][0]
            .as_str()
            .is_some_and(|w| w.starts_with("style:")),
        "{verdict:#}"
    );
}

#[test]
fn a_jump_is_a_subroutine_call_that_returns_to_the_hooks_list() {
    let project = Project::new();
    let rules = write(
        &project,
        &json!({
            "gates": {
                "check": {"command": "test -f built", "on_pass": "test", "on_fail": "explain"},
                "explain": {"command": "echo see CONTRIBUTING.md", "on_pass": "CONTINUE"},
                "test": {"command": "true"},
                "final": {"command": "true"}
            },
            "hooks": {"Stop": {"gates": ["check", "final"]}}
        }),
    );
    let (code, verdict) = check(&project, &rules, "done");
    assert_eq!(
        code, 0,
        "a failure routed to a jump is a warning: {verdict:#}"
    );
    assert_eq!(
        ran(&verdict),
        ["check fail", "explain pass", "final pass", "test skipped"]
    );

    project.file("built", "");
    let (_, verdict) = check(&project, &rules, "done");
    assert_eq!(
        ran(&verdict),
        ["check pass", "test pass", "final pass", "explain skipped"]
    );

    // As in the runner, a gate called by a jump and listed again runs both times.
    let rules = write(
        &project,
        &json!({
            "gates": {"check": {"command": "true", "on_pass": "test"}, "test": {"command": "true"}},
            "hooks": {"Stop": {"gates": ["check", "test"]}}
        }),
    );
    let (code, verdict) = check(&project, &rules, "done");
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(ran(&verdict), ["check pass", "test pass", "test#2 pass"]);
}

#[test]
fn plan_compliance_reads_the_status_report_before_the_other_gates() {
    let project = Project::new();
    let mut file = seed();
    file["hooks"]["SubagentStop"]["gates"] = json!(["plan-compliance", "check"]);
    let rules = write(&project, &file);
    project.file("built", "").file("tested", "");

    let (code, verdict) = check(&project, &rules, "All done.");
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(
        ran(&verdict),
        ["plan-compliance fail", "check skipped", "test skipped"]
    );
    assert!(reasons(&verdict).contains("no STATUS"), "{verdict:#}");

    let (code, verdict) = check(
        &project,
        &rules,
        "STATUS: BLOCKED\nREASON: plan says JWT, the service uses OAuth2\nTASK: task-3",
    );
    assert_eq!(code, 3, "{verdict:#}");
    assert!(
        reasons(&verdict).contains("plan says JWT, the service uses OAuth2"),
        "{verdict:#}"
    );

    let (code, verdict) = check(
        &project,
        &rules,
        "STATUS: OK\nTASK: task-3\nSUMMARY: implemented auth",
    );
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(
        ran(&verdict),
        ["plan-compliance pass", "check pass", "test pass"]
    );
}

#[test]
fn shell_syntax_runs_under_sh_and_a_plain_command_names_a_missing_program() {
    let project = Project::new();
    let rules = write(
        &project,
        &json!({
            "gates": {
                "both": {"command": "test -f a && test -f b"},
                "every": {"command": "cat -- * > /dev/null"}
            },
            "hooks": {"Stop": {"gates": ["both", "every"]}}
        }),
    );
    project.file("a", "");
    let (code, verdict) = check(&project, &rules, "done");
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(ran(&verdict), ["both fail", "every skipped"]);

    // The worker names its files; a glob hands them to the command as words, never as code.
    project
        .file("b", "")
        .file("$(touch PWNED)", "")
        .file("x;touch PWNED2", "")
        .file("`touch PWNED3`", "");
    let (code, verdict) = check(&project, &rules, "done");
    assert_eq!(code, 0, "{verdict:#}");
    for planted in ["PWNED", "PWNED2", "PWNED3"] {
        assert!(!project.task_dir().join(planted).exists(), "{planted}");
        assert!(!project.path().join(planted).exists(), "{planted}");
    }

    let rules = write(
        &project,
        &json!({
            "gates": {"check": {"command": "no-such-tool --check"}},
            "hooks": {"Stop": {"gates": ["check"]}}
        }),
    );
    let (code, verdict) = check(&project, &rules, "done");
    assert_eq!(code, 2, "{verdict:#}");
    assert!(
        reasons(&verdict).contains("command not found: `no-such-tool`"),
        "{verdict:#}"
    );
}

/// What Claude Code sends on `SubagentStop` for an agent of `agent_type`.
fn subagent_stop(project: &Project, agent_type: &str) -> Value {
    json!({
        "session_id": "s1",
        "transcript_path": "/home/u/.claude/projects/p/transcript.jsonl",
        "cwd": project.task_dir(),
        "hook_event_name": "SubagentStop",
        "stop_hook_active": false,
        "agent_id": format!("agent-{agent_type}"),
        "agent_type": agent_type,
        "last_assistant_message": "Implemented it.\nSTATUS: OK",
    })
}

/// `validator -c RULES hook claude` with `input` on stdin: exit code, stdout, stderr.
/// Runs the Claude Code hook as Claude Code does: with the project (the input's `cwd`) as
/// `CLAUDE_PROJECT_DIR`.
fn hook(rules: &Path, input: &Value) -> (i32, String, String) {
    let project = input["cwd"].as_str().expect("the input's cwd");
    let output = validator()
        .arg("-c")
        .arg(rules)
        .args(["hook", "claude"])
        .env("CLAUDE_PROJECT_DIR", project)
        .write_stdin(input.to_string())
        .output()
        .expect("run validator");
    (
        output.status.code().expect("exit code"),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The events the hook logged in the gates.json's default state directory.
fn events(project: &Project) -> Vec<Value> {
    std::fs::read_to_string(project.path().join(".claude/.validator/events.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

#[test]
fn the_hook_judges_only_the_agent_types_in_enabled_agents() {
    let project = Project::new();
    let rules = write(&project, &seed());

    let (code, stdout, stderr) = hook(&rules, &subagent_stop(&project, "general-purpose"));
    assert_eq!(code, 0, "{stderr}");
    let answer: Value = serde_json::from_str(&stdout).expect("one JSON answer");
    assert_eq!(answer["decision"], "block", "{answer:#}");
    assert!(
        answer["reason"]
            .as_str()
            .is_some_and(|r| r.contains("check (lint): Run quality checks")),
        "{answer:#}"
    );

    let (code, stdout, stderr) = hook(&rules, &subagent_stop(&project, "Explore"));
    assert_eq!((code, stdout.as_str()), (0, ""), "{stderr}");
    let skipped = events(&project)
        .into_iter()
        .filter(|e| e["event"] == "hook_skipped")
        .collect::<Vec<_>>();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert!(
        skipped[0]["details"]["reason"].as_str().is_some_and(
            |r| r.contains("`Explore` is not in the SubagentStop hook's enabled_agents")
        ),
        "{skipped:?}"
    );
    // Its gates did not run; plan compliance (seed 001: built in, on every subagent stop)
    // did, and passed its STATUS: OK.
    let judged: Vec<Value> = events(&project)
        .into_iter()
        .filter(|e| e["event"] == "hook_run")
        .collect();
    assert_eq!(judged.len(), 2, "{judged:?}");
    let mut silent = subagent_stop(&project, "Explore");
    silent["last_assistant_message"] = json!("Implemented it.");
    let (code, stdout, stderr) = hook(&rules, &silent);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("plan-compliance") && stdout.contains("no STATUS"),
        "{stdout}"
    );

    // The file has no Stop hook: the main agent stops unjudged, as the runner let it.
    let mut stop = subagent_stop(&project, "general-purpose");
    stop["hook_event_name"] = json!("Stop");
    stop.as_object_mut().expect("object").remove("agent_id");
    let (code, stdout, stderr) = hook(&rules, &stop);
    assert_eq!((code, stdout.as_str()), (0, ""), "{stderr}");

    // The listed agent passes once its work does.
    project.file("built", "").file("tested", "");
    let (code, stdout, stderr) = hook(&rules, &subagent_stop(&project, "cipherpowers:rust-agent"));
    assert_eq!((code, stdout.as_str()), (0, ""), "{stderr}");
}

#[test]
fn the_hook_runs_the_pipeline_of_its_own_event() {
    let project = Project::new();
    let rules = write(
        &project,
        &json!({
            "gates": {
                "whole": {"command": "test -f whole"},
                "part": {"command": "test -f part"}
            },
            "hooks": {"Stop": {"gates": ["whole"]}, "SubagentStop": {"gates": ["part"]}}
        }),
    );
    let reason = |input: &Value| {
        let (code, stdout, stderr) = hook(&rules, input);
        assert_eq!(code, 0, "{stderr}");
        let answer: Value = serde_json::from_str(&stdout).expect("one JSON answer");
        answer["reason"].as_str().unwrap_or_default().to_owned()
    };
    let mut stop = subagent_stop(&project, "general-purpose");
    stop["hook_event_name"] = json!("Stop");
    stop.as_object_mut().expect("object").remove("agent_id");
    assert!(reason(&stop).contains("- whole (lint)"));
    assert!(reason(&subagent_stop(&project, "any")).contains("- part (lint)"));

    // `check` without --pipeline runs Stop's gates; --pipeline picks the other.
    let (_, verdict) = check(&project, &rules, "done");
    assert_eq!(verdict["pipeline"], "Stop");
    let mut cmd = validator();
    cmd.arg("check")
        .arg("-c")
        .arg(&rules)
        .arg("--task-dir")
        .arg(project.task_dir())
        .args(["--pipeline", "SubagentStop", "--format", "json"]);
    let (_, verdict) = json_verdict(cmd);
    assert_eq!(ran(&verdict), ["part fail"]);
}

#[test]
fn rules_check_prints_the_graph_the_hooks_and_what_it_leaves_alone() {
    let project = Project::new();
    let mut file = seed();
    file["gates"]["test"]["on_fail"] = json!("check");
    file["hooks"]["PostToolUse"] = json!({"enabled_tools": ["Edit", "Write"], "gates": ["check"]});
    let rules = write(&project, &file);
    let output = validator()
        .arg("rules")
        .arg("check")
        .arg("-c")
        .arg(&rules)
        .output()
        .expect("run validator");
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{text}");
    for expected in [
        "pipeline SubagentStop (tasks: every task)",
        "1. check  lint        pass -> test, fail -> BLOCK (FAIL)  timeout 10m",
        "2. test   test        pass -> end (PASS), fail -> check  timeout 10m",
        "hook SubagentStop runs pipeline SubagentStop (agent types: general-purpose, cipherpowers:rust-agent)",
        "note: hooks.PostToolUse (check) is neither a stop nor the prompt",
        "warning: pipeline `SubagentStop`: gates check -> test -> check form a cycle",
        "valid, 1 pipeline, 2 gates, 1 warning",
    ] {
        assert!(text.contains(expected), "{expected}\n{text}");
    }
}

#[test]
fn errors_name_the_file_line_column_and_fix() {
    let project = Project::new();
    let path = project.path().join("gates.json");
    let cases = [
        (
            "{\n  \"gates\": {\n    \"check\": {\n      \"command\": \"x\",\n      \"on_fial\": \"BLOCK\"\n    }\n  }\n}\n",
            ":5:7: unknown field `on_fial`",
            "help: did you mean `on_fail`?",
        ),
        (
            "{\n  \"gates\": {\n    \"check\": {\"command\": \"x\", \"on_pass\": \"tset\"},\n    \"test\": {\"command\": \"y\"}\n  },\n  \"hooks\": {\"Stop\": {\"gates\": [\"check\"]}}\n}\n",
            ":3:42: there is no gate named `tset` to jump to",
            "help: did you mean `test`?",
        ),
        (
            "{\n  \"gates\": {\"check\": {\"command\": \"x\"}},\n  \"hooks\": {\"Stop\": {\"gates\": [\"check\", \"lint\"]}}\n}\n",
            ":3:41: the Stop hook lists gate `lint`, which this file does not define",
            "help: define it under \"gates\"",
        ),
        (
            "{\n  \"gates\": {\n    \"check\": {\"command\": \"x\"},\n    \"review\": {\"description\": \"TypeScript gate\"}\n  },\n  \"hooks\": {\"Stop\": {\"gates\": [\"check\", \"review\"]}}\n}\n",
            ":4:5: gate `review` has no `command`, and `review` is no built-in validator knows",
            "help: add \"command\"",
        ),
        (
            "{\n  \"gates\": {\n    \"check\": {\"command\": \"npm run lint\"}  // your command\n  }\n}\n",
            ":3:43: expected `,` or `}`",
            "help: JSON has no comments",
        ),
    ];
    for (source, error, help) in cases {
        std::fs::write(&path, source).expect("write");
        for args in [&["rules", "check"][..], &["check", "--task-dir", "."][..]] {
            let output = validator()
                .current_dir(project.path())
                .arg("-c")
                .arg(&path)
                .args(args)
                .output()
                .expect("run validator");
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(2), "{stderr}");
            let expected = format!("error: {}{error}", path.display());
            assert!(stderr.starts_with(&expected), "{expected}\n{stderr}");
            assert!(stderr.contains(help), "{help}\n{stderr}");
        }
        // A broken file never lets a stop through: held (stopped for a person once the
        // session's attempts are spent), the error on stderr for the person.
        let (code, stdout, stderr) = hook(&path, &subagent_stop(&project, "general-purpose"));
        assert_eq!(code, 0, "{stderr}");
        let answer: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON answer");
        assert!(
            answer["decision"] == "block" || answer["continue"] == false,
            "{answer}"
        );
        assert!(stderr.contains(error), "{stderr}");
    }
}

#[test]
fn the_example_passes_and_fails_for_the_reasons_its_readme_gives() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/gates-json/project");
    let copy = tempfile::tempdir().expect("temp dir");
    copy_dir(&example, copy.path());
    let run = |message: &str| {
        let mut cmd = validator();
        cmd.current_dir(copy.path())
            .args(["check", "-c", ".claude/gates.json", "--signal", "-"])
            .write_stdin(message);
        let output = cmd.output().expect("run validator");
        (
            output.status.code().expect("exit code"),
            String::from_utf8_lossy(&output.stdout).into_owned(),
        )
    };

    let (code, text) = run("Added divide.\nSTATUS: OK\n");
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("PASS  3 gates ran"), "{text}");

    let (code, text) = run("Added divide.\n");
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("FAIL  plan-compliance"), "{text}");

    let (code, text) = run("STATUS: BLOCKED\nREASON: the plan says floats, callers want ints\n");
    assert_eq!(code, 3, "{text}");
    assert!(text.contains("callers want ints"), "{text}");

    let calc = copy.path().join("calc.py");
    let source = std::fs::read_to_string(&calc).expect("read calc.py");
    std::fs::write(
        &calc,
        source.replace("    return a / b", "    breakpoint()\n    return a / b"),
    )
    .expect("plant a breakpoint");
    let (code, text) = run("Added divide.\nSTATUS: OK\n");
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("calc.py:11: breakpoint()"), "{text}");
    assert!(
        !copy.path().join("__pycache__").exists(),
        "python3 -B writes no bytecode"
    );
}

/// Kills the watcher when the test ends, however it ends.
struct Watcher(Child);

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn watch_judges_signals_with_a_gates_json() {
    let project = Project::new();
    let rules = write(&project, &seed());
    let staging = project.path().join(".claude/staging");
    std::fs::create_dir_all(staging.join("svc")).expect("mkdir");
    std::fs::write(staging.join("svc/built"), "").expect("write");
    let _watcher = Watcher(
        std::process::Command::new(assert_cmd::cargo::cargo_bin("validator"))
            .arg("-c")
            .arg(&rules)
            .args(["watch", "--jobs", "1"])
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn validator watch"),
    );
    let signal = validator()
        .arg("-c")
        .arg(&rules)
        .args(["signal", "svc", "--status", "OK"])
        .output()
        .expect("run validator");
    assert_eq!(signal.status.code(), Some(0), "{signal:?}");
    // The watcher was only just spawned: --anyway waits for it to come up rather than
    // answering that none runs.
    let mut wait = validator();
    wait.arg("-c").arg(&rules).args([
        "wait",
        "svc",
        "--timeout",
        "5m",
        "--anyway",
        "--format",
        "json",
    ]);
    let (code, verdict) = json_verdict(wait);
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(verdict["pipeline"], "SubagentStop");
    assert_eq!(ran(&verdict), ["check pass", "test fail"]);
}
