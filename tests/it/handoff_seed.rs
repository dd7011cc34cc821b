// Seed 002 (ADR-008, the Worker Handoff Protocol): its example handoff, verbatim, as a task's
// contract. Its scope and criteria judged, its escalation paths told to the worker and logged,
// its context shown, the learning signals a coordinator reads (violations and what followed
// them, counted by `status`), the worker's brief, and the contract's JSON Schema.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{Project, gate, json_verdict, pipeline, validator};

/// The seed's "Example Handoff", byte for byte.
const SEED: &str = r#"{
  "contract": {
    "task_id": "bd-123.2",
    "files_owned": ["src/auth/service.ts", "src/auth/service.test.ts"],
    "files_readonly": ["src/types/user.ts", "src/lib/jwt.ts"],
    "dependencies_completed": ["bd-123.1"],
    "success_criteria": [
      "AuthService.login() returns JWT token",
      "Tests pass: bun test src/auth/service.test.ts",
      "Type check passes: tsc --noEmit"
    ]
  },
  "context": {
    "epic_summary": "Add OAuth authentication to user service",
    "your_role": "Implement AuthService with JWT token generation",
    "what_others_did": "bd-123.1 created User schema with email/password fields",
    "what_comes_next": "bd-123.3 will integrate this service into API routes"
  },
  "escalation": {
    "blocked_contact": "coordinator",
    "scope_change_protocol": "swarmmail_send(subject='Scope Change', ack_required=true)"
  }
}
"#;

const TASK: &str = "bd-123.2";
const PROTOCOL: &str = "swarmmail_send(subject='Scope Change', ack_required=true)";

/// A project judged as task bd-123.2 under the seed's contract (written as `file`, in
/// `contracts/`), with bd-123.1 done and passed, and the task's files recorded before work.
fn seeded(file: &str) -> Project {
    let project = Project::new();
    project.rules(&pipeline("      - {name: status, rule: status}\n").replace(
        "state: state\n",
        "state: state\ncontracts: contracts\nstaging: staging\nverdicts: verdicts\n",
    ));
    project.root_file(&format!("contracts/{file}"), SEED);
    dependency_passed(&project);
    project
        .file("src/auth/service.ts", "old\n")
        .file("src/lib/jwt.ts", "old\n")
        .file("src/api/routes.ts", "old\n");
    validator()
        .args(["snapshot", TASK, "-c"])
        .arg(project.rules_path())
        .arg("--task-dir")
        .arg(project.task_dir())
        .assert()
        .success();
    project
}

/// bd-123.1's current PASS verdict, as a watcher would have written it.
fn dependency_passed(project: &Project) {
    let staging = project.path().join("staging");
    fs::create_dir_all(staging.join("bd-123.1")).unwrap();
    let done = staging.join("bd-123.1.done");
    fs::write(&done, "STATUS: OK\n").unwrap();
    let output = validator()
        .args(["check", "--format", "json", "--task", "bd-123.1", "-c"])
        .arg(project.rules_path())
        .arg("--task-dir")
        .arg(staging.join("bd-123.1"))
        .arg("--signal")
        .arg(&done)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    fs::create_dir_all(project.path().join("verdicts")).unwrap();
    fs::write(
        project.path().join("verdicts/bd-123.1.verdict.json"),
        output.stdout,
    )
    .unwrap();
}

/// `check` of task bd-123.2 in `format`, with `path` first on PATH when given.
fn check(project: &Project, format: &str, path: Option<&Path>) -> assert_cmd::Command {
    let mut cmd = project.check();
    cmd.args(["--task", TASK, "--format", format]);
    if let Some(dir) = path {
        let inherited = std::env::var("PATH").unwrap_or_default();
        cmd.env("PATH", format!("{}:{inherited}", dir.display()));
    }
    cmd
}

fn judged(project: &Project, path: Option<&Path>) -> (i32, Value) {
    json_verdict(check(project, "json", path))
}

fn feedback(project: &Project) -> String {
    let output = check(project, "feedback", None).output().unwrap();
    String::from_utf8(output.stdout).unwrap()
}

fn events(project: &Project, name: &str) -> Vec<Value> {
    fs::read_to_string(project.path().join("state/events.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("event is JSON"))
        .filter(|e| e["event"] == name)
        .collect()
}

/// A directory holding `bun` and `tsc` stand-ins that exit with `code`.
fn tools(project: &Project, code: u8) -> PathBuf {
    let bin = project.path().join(format!("bin-{code}"));
    fs::create_dir_all(&bin).unwrap();
    for tool in ["bun", "tsc"] {
        let path = bin.join(tool);
        fs::write(&path, format!("#!/bin/sh\necho {tool} ran\nexit {code}\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    }
    bin
}

#[test]
fn the_seeds_handoff_as_written_holds_the_worker_to_its_scope_and_names_the_protocol() {
    for file in ["bd-123.2.yaml", "bd-123.2.json"] {
        let project = seeded(file);
        project
            .file("src/auth/service.ts", "new\n")
            .file("src/lib/jwt.ts", "new\n")
            .file("src/api/routes.ts", "new\n")
            .signal("STATUS: OK\n");
        let (code, verdict) = judged(&project, None);
        assert_eq!(code, 1, "{file}: {verdict:#}");
        let scope = gate(&verdict, "contract.scope");
        assert_eq!(scope["outcome"], "fail", "{verdict:#}");
        let found = scope["findings"].to_string();
        assert!(found.contains("src/lib/jwt.ts"), "{found}");
        assert!(found.contains("src/api/routes.ts"), "{found}");
        assert_eq!(gate(&verdict, "contract.dependencies")["outcome"], "pass");
        assert_eq!(
            verdict["escalation"],
            serde_json::json!({"blocked_contact": "coordinator", "scope_change_protocol": PROTOCOL})
        );
        assert_eq!(
            verdict["context"],
            "Epic summary: Add OAuth authentication to user service\nYour role: Implement AuthService with JWT token generation\nWhat others did: bd-123.1 created User schema with email/password fields\nWhat comes next: bd-123.3 will integrate this service into API routes"
        );

        let text = feedback(&project);
        assert!(
            text.contains(&format!(
                "A file outside your scope needs the scope-change protocol, not an edit: undo the change and ask with {PROTOCOL} (to coordinator)."
            )),
            "{text}"
        );
        assert!(text.contains("Your role: Implement AuthService"), "{text}");

        // The learning signal: which contract, what kind, how bad, which attempt, which run.
        let violations = events(&project, "contract_violation");
        assert!(!violations.is_empty());
        for event in &violations {
            let details = &event["details"];
            assert_eq!(details["task_id"], TASK, "{event}");
            assert_eq!(details["impact"], "negative", "{event}");
            assert_eq!(details["attempt"], 1, "{event}");
            assert!(details["run"].as_str().is_some_and(|r| !r.is_empty()));
        }
        let kinds: Vec<&str> = violations
            .iter()
            .filter_map(|e| e["details"]["kind"].as_str())
            .collect();
        assert!(
            kinds.contains(&"scope") && kinds.contains(&"readonly"),
            "{kinds:?}"
        );
    }
}

#[test]
fn the_seeds_criteria_run_as_gates_and_the_rest_wait_for_a_person() {
    let project = seeded("bd-123.2.yaml");
    project
        .file("src/auth/service.ts", "new\n")
        .signal("STATUS: OK\n");
    // No bun, no tsc on this machine: validator could not judge, it is not the worker's fault.
    let (code, verdict) = judged(&project, Some(Path::new("/nonexistent")));
    assert_eq!(code, 2, "{verdict:#}");
    assert_eq!(verdict["verdict"], "ERROR");
    let tests = gate(&verdict, "contract.criterion-2");
    assert_eq!(tests["rule"], "test");
    assert_eq!(tests["outcome"], "error", "{tests:#}");
    assert!(
        tests["summary"].as_str().unwrap().contains("bun"),
        "{tests:#}"
    );
    assert_eq!(
        verdict["unchecked"],
        serde_json::json!(["AuthService.login() returns JWT token"])
    );

    // With the tools there, the criteria are gates like any other.
    let (code, verdict) = judged(&project, Some(&tools(&project, 0)));
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(gate(&verdict, "contract.criterion-2")["outcome"], "pass");
    assert_eq!(gate(&verdict, "contract.criterion-3")["outcome"], "pass");
    let (code, verdict) = judged(&project, Some(&tools(&project, 1)));
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(gate(&verdict, "contract.criterion-2")["outcome"], "fail");
}

#[test]
fn a_blocked_worker_is_told_whom_to_turn_to_and_the_log_says_so() {
    let project = seeded("bd-123.2.json");
    project.signal("STATUS: BLOCKED\nREASON: src/lib/jwt.ts needs a new claim\nTASK: bd-123.2\n");
    let (code, verdict) = judged(&project, None);
    assert_eq!(code, 3, "{verdict:#}");
    assert_eq!(verdict["escalation"]["blocked_contact"], "coordinator");
    let text = feedback(&project);
    assert!(
        text.contains(&format!(
            "STATUS: BLOCKED — escalate to coordinator: {PROTOCOL}"
        )),
        "{text}"
    );
    let blocked = events(&project, "blocked");
    assert!(!blocked.is_empty());
    assert_eq!(
        blocked[0]["details"]["escalation"]["blocked_contact"],
        "coordinator"
    );
    assert_eq!(blocked[0]["task"], TASK);
}

#[test]
fn the_run_after_a_violation_says_what_followed_and_status_counts_them() {
    let project = seeded("bd-123.2.yaml");
    let bin = tools(&project, 0);
    project
        .file("src/lib/jwt.ts", "new\n")
        .signal("STATUS: OK\n");
    // Broken, broken the same way again, then fixed.
    for expected in [1, 1] {
        assert_eq!(judged(&project, Some(&bin)).0, expected);
    }
    project.file("src/lib/jwt.ts", "old\n");
    let (code, verdict_now) = judged(&project, Some(&bin));
    assert_eq!(code, 0, "{verdict_now:#}");
    // A later clean run has nothing to follow up.
    assert_eq!(judged(&project, Some(&bin)).0, 0);
    // Broken in another way, then escalated by the worker.
    project
        .file("src/api/routes.ts", "new\n")
        .file("src/lib/jwt.ts", "old\n");
    assert_eq!(judged(&project, Some(&bin)).0, 1);
    project.signal("STATUS: BLOCKED\nREASON: routes.ts is not mine\n");
    assert_eq!(judged(&project, Some(&bin)).0, 3);

    let outcomes: Vec<(String, String)> = events(&project, "contract_followup")
        .iter()
        .map(|e| {
            (
                e["details"]["outcome"].as_str().unwrap().to_owned(),
                e["details"]["after"].to_string(),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            ("repeated".to_owned(), r#"["readonly"]"#.to_owned()),
            ("fixed".to_owned(), r#"["readonly"]"#.to_owned()),
            ("escalated".to_owned(), r#"["scope"]"#.to_owned()),
        ]
    );

    let output = validator()
        .args(["status", "-c"])
        .arg(project.rules_path())
        .output()
        .unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    let row = text
        .lines()
        .find(|line| line.starts_with(TASK))
        .unwrap_or_else(|| panic!("no row for the contract:\n{text}"));
    let words: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(words[1], "3", "three runs broke it: {row}");
    assert!(row.contains("readonly 2, scope 1"), "{row}");
    assert!(row.contains("escalated 1, fixed 1, repeated 1"), "{row}");
    assert!(text.contains("RUNS BROKEN"), "{text}");
}

fn brief(project: &Project, args: &[&str]) -> (Option<i32>, String) {
    let output = validator()
        .args(["brief", "-c"])
        .arg(project.rules_path())
        .args(args)
        .output()
        .unwrap();
    let mut text = String::from_utf8(output.stdout).unwrap();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    (output.status.code(), text)
}

#[test]
fn the_brief_tells_the_worker_its_contract_gates_and_status_block_up_front() {
    let project = seeded("bd-123.2.json");
    project.rules(
        &pipeline(
            "      - {name: status, rule: status}\n      - {name: lint, rule: lint, run: \"eslint --max-warnings 0 src\"}\n      - {name: scope, rule: file-scope, allow: [\"src/**\"]}\n",
        )
        .replace("state: state\n", "state: state\ncontracts: contracts\n"),
    );
    let (code, text) = brief(&project, &["--task", TASK]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.lines().count() < 50, "{text}");
    for line in [
        "- Files you own (change only these): src/auth/service.ts, src/auth/service.test.ts",
        "- Read only (never change): src/types/user.ts, src/lib/jwt.ts",
        "- Done before you: bd-123.1",
        "  - AuthService.login() returns JWT token (a person checks)",
        "  - Tests pass: bun test src/auth/service.test.ts (checked by contract.criterion-2)",
        "> Your role: Implement AuthService with JWT token generation",
        "> What comes next: bd-123.3 will integrate this service into API routes",
        "STATUS: BLOCKED — escalate to coordinator: swarmmail_send(subject='Scope Change', ack_required=true)",
        "- contract.dependencies (dependencies): each has a current PASS verdict: bd-123.1",
        "- status (status): your last message's STATUS block says OK",
        "- lint (lint): runs `eslint --max-warnings 0 src`",
        "- scope (file-scope): allow: src/**",
        "- contract.scope (file-scope): changes only inside src/auth/service.ts, src/auth/service.test.ts; none to src/types/user.ts, src/lib/jwt.ts",
        "- contract.criterion-3 (lint): runs `tsc --noEmit`",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "no line {line:?} in:\n{text}"
        );
    }
    assert!(
        text.ends_with(
            "## End your last message with\nSTATUS: OK\nTASK: bd-123.2\nSUMMARY: <one line: what you did>\n(or, when you cannot go on: STATUS: BLOCKED, REASON: <why>, TASK: bd-123.2)\n"
        ),
        "{text}"
    );

    let (code, json) = brief(&project, &["--task", TASK, "--format", "json"]);
    assert_eq!(code, Some(0), "{json}");
    let json: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        json["contract"]["success_criteria"][0]["checked_by"],
        Value::Null
    );
    assert_eq!(
        json["contract"]["success_criteria"][1]["checked_by"],
        "contract.criterion-2"
    );
    assert_eq!(json["escalation"]["blocked_contact"], "coordinator");
    assert_eq!(json["gates"].as_array().unwrap().len(), 7);

    // No contract: the gates and the STATUS block alone.
    let (code, text) = brief(&project, &["--task", "bd-9"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(!text.contains("## Contract"), "{text}");
    assert!(text.contains("- lint (lint): runs `eslint"), "{text}");
    assert!(text.ends_with("TASK: bd-9)\n"), "{text}");

    // A broken contract is an error naming its place, as it is to a run.
    project.root_file(
        "contracts/bd-123.2.json",
        &SEED.replace("\"src/lib/jwt.ts\"", "\"/etc/passwd\""),
    );
    let (code, text) = brief(&project, &["--task", TASK]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("bd-123.2.json:5:"), "{text}");
    assert!(text.contains("is absolute"), "{text}");
}

#[test]
fn a_huge_contract_still_briefs_in_under_fifty_lines_each_field_on_one_line() {
    let project = Project::new();
    project.rules(
        &pipeline(
            &(0..30)
                .map(|i| format!("      - {{name: g{i}, rule: status}}\n"))
                .collect::<String>(),
        )
        .replace("state: state\n", "state: state\ncontracts: contracts\n"),
    );
    let criteria: Vec<String> = (0..40)
        .map(|i| format!("\"criterion {i}\\nSTATUS: OK\\u001b[2J\""))
        .collect();
    let context = "line\\n".repeat(100);
    project.root_file(
        "contracts/t.yaml",
        &format!(
            "task_id: t\nsuccess_criteria: [{}]\ncontext: \"{context}\"\nescalation: {{blocked_contact: \"a\\nSTATUS: OK\"}}\n",
            criteria.join(", ")
        ),
    );
    let (code, text) = brief(&project, &["--task", "t"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.lines().count() < 50,
        "{} lines:\n{text}",
        text.lines().count()
    );
    assert!(!text.contains('\u{1b}'), "{text}");
    assert!(text.contains("- … and 18 more"), "{text}");
    // The only STATUS lines at the start of a line are the block's own.
    let status_lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("STATUS: OK"))
        .collect();
    assert_eq!(status_lines, ["STATUS: OK"], "{text}");
}

fn printed_contract_schema() -> String {
    let output = validator()
        .args(["rules", "schema", "--contract"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn the_committed_contract_schema_is_what_rules_schema_prints_and_the_seed_validates() {
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/contract.schema.json");
    let committed =
        fs::read_to_string(committed).expect("schema/contract.schema.json is committed");
    assert!(
        committed == printed_contract_schema(),
        "schema/contract.schema.json is stale; refresh it:\n  cargo run -q -- rules schema --contract > schema/contract.schema.json"
    );

    // The seed's handoff, and a broken one, judged by a `schema` gate against it.
    let project = Project::new();
    project.root_file("contract.schema.json", &committed);
    project.rules(&pipeline(
        "      - {name: handoff, rule: schema, schema: contract.schema.json, files: [\"handoffs/*.json\"]}\n",
    ));
    project.file("handoffs/seed.json", SEED);
    let (code, verdict) = project.verdict();
    assert_eq!(code, 0, "{verdict:#}");
    for (name, broken) in [
        ("unknown-key.json", SEED.replace("your_role", "my_role")),
        (
            "mixed.json",
            SEED.replacen("{\n", "{\n  \"task_id\": \"bd-123.2\",\n", 1),
        ),
        (
            "escalation-key.json",
            SEED.replace("blocked_contact", "contact"),
        ),
    ] {
        project.file(&format!("handoffs/{name}"), &broken);
    }
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    let found = gate(&verdict, "handoff")["findings"].to_string();
    for name in ["unknown-key.json", "mixed.json", "escalation-key.json"] {
        assert!(found.contains(name), "{name}: {found}");
    }
    assert!(!found.contains("seed.json"), "{found}");
}

/// `validator rules check`: the exit code, stdout and stderr.
fn rules_check(project: &Project) -> (Option<i32>, String) {
    let output = validator()
        .args(["rules", "check", "-c"])
        .arg(project.rules_path())
        .output()
        .unwrap();
    let mut text = String::from_utf8(output.stdout).unwrap();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    (output.status.code(), text)
}

#[test]
fn rules_check_reads_every_contract_and_names_the_place_and_the_fix() {
    let project = seeded("bd-123.2.json");
    let (code, text) = rules_check(&project);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("1 checked, 0 broken"), "{text}");

    project.root_file(
        "contracts/bd-7.yaml",
        "contract:\n  task_id: bd-7\n  files_owned: [\"a\", \"b\", \"../c\"]\n",
    );
    project.root_file(
        "contracts/bd-8.yaml",
        "task_id: bd-8\ncontract: {task_id: bd-8}\n",
    );
    project.root_file("contracts/bd-9.yaml", "task_id: bd-9\n");
    project.root_file("contracts/bd-9.json", "{\"task_id\": \"bd-9\"}\n");
    let (code, text) = rules_check(&project);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("4 checked, 3 broken"), "{text}");
    assert!(
        text.contains("bd-7.yaml:3:27: contract.files_owned[2]: glob `../c`"),
        "{text}"
    );
    assert!(
        text.contains("help: write each glob relative to the task directory"),
        "{text}"
    );
    assert!(
        text.contains(
            "bd-8.yaml:1:10: `task_id` is at the top, but the terms are under `contract:`"
        ),
        "{text}"
    );
    assert!(
        text.contains("help: move `task_id` under `contract:`"),
        "{text}"
    );
    assert!(text.contains("task `bd-9` has two contracts"), "{text}");
}
