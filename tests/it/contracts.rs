// Handoff contracts (`contracts/<task>.yaml`): the scope they give `file-scope`, the success
// criteria that run as gates, the ones listed as unchecked, dependencies on other tasks'
// verdicts, the events a coordinator learns from, and broken contracts.

use crate::common;
use std::fs;
use std::path::Path;

use crate::common::{Project, gate, pipeline, validator};
use serde_json::Value;

/// A rules file whose pipeline holds `gates`, with contracts in `contracts/`.
fn with_contracts(gates: &str) -> String {
    pipeline(gates).replace("state: state\n", "state: state\ncontracts: contracts\n")
}

fn contract(project: &Project, yaml: &str) {
    project.root_file("contracts/task.yaml", yaml);
}

fn snapshot(project: &Project) {
    validator()
        .args(["snapshot", "task", "-c"])
        .arg(project.rules_path())
        .arg("--task-dir")
        .arg(project.task_dir())
        .assert()
        .success();
}

fn messages(gate: &Value) -> Vec<String> {
    gate["findings"]
        .as_array()
        .map(|found| {
            found
                .iter()
                .map(|f| {
                    format!(
                        "{}: {}",
                        f["file"].as_str().unwrap_or("-"),
                        f["message"].as_str().unwrap_or_default()
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn events(project: &Project) -> Vec<Value> {
    fs::read_to_string(project.path().join("state/events.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).expect("event is JSON"))
        .collect()
}

fn names(verdict: &Value) -> Vec<&str> {
    verdict["gates"]
        .as_array()
        .expect("gates")
        .iter()
        .map(|g| g["name"].as_str().expect("name"))
        .collect()
}

const STATUS: &str = "      - {name: status, rule: status}\n";

#[test]
fn a_contract_gives_scope_its_owned_and_readonly_files_and_checks_declared_changes() {
    let project = Project::new();
    project.rules(&with_contracts(STATUS));
    contract(
        &project,
        "task_id: task\nfiles_owned: [\"src/**\"]\nfiles_readonly: [\"src/types.rs\"]\n",
    );
    project
        .file("src/auth.rs", "old\n")
        .file("src/types.rs", "old\n")
        .file("README.md", "old\n");
    snapshot(&project);
    project
        .file("src/auth.rs", "new\n")
        .file("src/types.rs", "new\n")
        .file("README.md", "new\n")
        .signal(r#"{"status": "OK", "files_touched": ["src/auth.rs", "src/session.rs"]}"#);

    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(names(&verdict), ["status", "contract.scope"]);
    let found = messages(gate(&verdict, "contract.scope"));
    let has = |file: &str, words: &str| {
        assert!(
            found
                .iter()
                .any(|m| m.starts_with(&format!("{file}: ")) && m.contains(words)),
            "{file} / {words}: {found:#?}"
        )
    };
    has("README.md", "outside `allow` (src/**)");
    has("src/types.rs", "`readonly`");
    has("src/types.rs", "not declared in files_touched");
    has("src/session.rs", "did not change");
    assert!(
        !found.iter().any(|m| m.starts_with("src/auth.rs: ")),
        "{found:#?}"
    );

    let kinds: Vec<String> = events(&project)
        .iter()
        .filter(|e| e["event"] == "contract_violation")
        .map(|e| e["details"]["kind"].as_str().unwrap_or_default().to_owned())
        .collect();
    for kind in ["scope", "readonly", "undeclared change"] {
        assert!(kinds.iter().any(|k| k == kind), "{kind}: {kinds:?}");
    }
}

#[test]
fn a_broad_or_advisory_pipeline_scope_does_not_widen_the_contract() {
    let project = Project::new();
    project.rules(&with_contracts(
        "      - {name: scope, rule: file-scope, allow: [\"src/**\", \"tests/**\"], on_fail: CONTINUE}\n",
    ));
    contract(
        &project,
        "task_id: task\nfiles_owned: [\"src/auth/**\"]\nfiles_readonly: [\"src/auth/types.rs\"]\n",
    );
    project
        .file("src/auth/a.rs", "old\n")
        .file("src/auth/types.rs", "old\n")
        .file("src/billing/b.rs", "old\n")
        .file("other.txt", "old\n");
    snapshot(&project);
    project.file("src/auth/a.rs", "new\n");
    let (code, verdict) = project.verdict();
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(names(&verdict), ["scope", "contract.scope"]);

    // Inside the pipeline's allow but outside what the contract owns; and a file the pipeline
    // does not allow, which its advisory gate only warns about.
    project
        .file("src/billing/b.rs", "new\n")
        .file("src/auth/types.rs", "new\n")
        .file("other.txt", "new\n");
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    let found = messages(gate(&verdict, "contract.scope"));
    assert_eq!(found.len(), 3, "{found:#?}");
    // A read-only file broken weighs more than one out of scope, and is listed first.
    assert!(found[0].starts_with("src/auth/types.rs: ") && found[0].contains("`readonly`"));
    assert!(
        found[1].starts_with("other.txt: ") && found[1].contains("outside `allow` (src/auth/**)")
    );
    assert!(found[2].starts_with("src/billing/b.rs: ") && found[2].contains("outside `allow`"));
    assert_eq!(gate(&verdict, "scope")["outcome"], "fail");
}

#[test]
fn checkable_criteria_run_after_the_pipeline_and_the_rest_are_listed_unchecked() {
    let project = Project::new();
    project.rules(&with_contracts(STATUS));
    contract(
        &project,
        r#"task_id: task
success_criteria:
  - "Tests pass: sh -c 'test -f tested'"
  - "Type check passes: true"
  - "Lint passes: sh -c 'echo src/a.py:3: unused import; exit 1'"
  - "File exists: report.json"
  - "AuthService::login returns a token"
context: |
  The auth service moves to OAuth2; keep the old login API working.
"#,
    );
    project.file("tested", "").signal("STATUS: OK\n");

    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(
        names(&verdict),
        [
            "status",
            "contract.criterion-1",
            "contract.criterion-2",
            "contract.criterion-3",
            "contract.criterion-4"
        ]
    );
    let outcome = |name: &str| gate(&verdict, name)["outcome"].as_str().unwrap().to_owned();
    assert_eq!(outcome("contract.criterion-1"), "pass");
    assert_eq!(outcome("contract.criterion-2"), "pass");
    assert_eq!(outcome("contract.criterion-3"), "fail");
    assert_eq!(outcome("contract.criterion-4"), "skipped");
    let lint = gate(&verdict, "contract.criterion-3");
    assert!(
        lint["summary"]
            .as_str()
            .unwrap()
            .starts_with("Lint passes: sh -c"),
        "{lint:#}"
    );
    assert_eq!(lint["findings"][0]["file"], "src/a.py");
    assert_eq!(lint["findings"][0]["line"], 3);
    assert_eq!(
        verdict["unchecked"],
        serde_json::json!(["AuthService::login returns a token"])
    );
    assert!(
        verdict["context"]
            .as_str()
            .unwrap()
            .contains("moves to OAuth2")
    );

    // The agent's feedback keeps the why and says what no machine checked.
    let mut cmd = project.check();
    cmd.args(["--format", "feedback"]);
    let feedback = String::from_utf8(cmd.output().unwrap().stdout).unwrap();
    assert!(feedback.contains("moves to OAuth2"), "{feedback}");
    assert!(
        feedback.contains("- AuthService::login returns a token"),
        "{feedback}"
    );
    let criterion_events = events(&project)
        .iter()
        .filter(|e| e["event"] == "contract_violation" && e["details"]["kind"] == "criterion")
        .count();
    assert_eq!(
        criterion_events, 2,
        "once per failing run: feedback ran again"
    );

    // Fixed: every criterion passes, the unchecked one is still listed for a person.
    fs::write(
        project.path().join("contracts/task.yaml"),
        fs::read_to_string(project.path().join("contracts/task.yaml"))
            .unwrap()
            .replace("exit 1", "exit 0"),
    )
    .unwrap();
    project.file("report.json", "{}");
    let (code, verdict) = project.verdict();
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(verdict["unchecked"].as_array().unwrap().len(), 1);
    let mut cmd = project.check();
    let text = String::from_utf8(cmd.output().unwrap().stdout).unwrap();
    assert!(text.contains("not checked by a machine"), "{text}");
    assert!(
        text.contains("AuthService::login returns a token"),
        "{text}"
    );
}

#[test]
fn a_fast_pass_in_the_pipeline_does_not_skip_the_contract() {
    let project = Project::new();
    project.rules(&with_contracts(
        "      - {name: status, rule: status, on_pass: PASS}\n      - {name: never, rule: lint, run: \"false\"}\n",
    ));
    contract(
        &project,
        "task_id: task\nsuccess_criteria: [\"File exists: report.json\"]\n",
    );
    project.signal("STATUS: OK\n");
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(gate(&verdict, "never")["outcome"], "skipped");
    assert_eq!(gate(&verdict, "contract.criterion-1")["outcome"], "fail");
}

/// A current verdict for `task` in `staging`: `check` over its done file, kept as the file a
/// watcher would have written.
fn judged(root: &Path, task: &str, rules: &Path, ok: bool) {
    let staging = root.join("staging");
    fs::create_dir_all(staging.join(task)).unwrap();
    let done = staging.join(format!("{task}.done"));
    fs::write(&done, if ok { "STATUS: OK\n" } else { "" }).unwrap();
    let mut cmd = validator();
    cmd.args(["check", "--format", "json", "--task", task, "-c"])
        .arg(rules)
        .arg("--task-dir")
        .arg(staging.join(task))
        .arg("--signal")
        .arg(&done);
    let output = cmd.output().unwrap();
    let verdicts = root.join("verdicts");
    fs::create_dir_all(&verdicts).unwrap();
    fs::write(verdicts.join(format!("{task}.verdict.json")), output.stdout).unwrap();
}

#[test]
fn dependencies_need_a_current_pass_verdict() {
    let project = Project::new();
    project.rules(&with_contracts(STATUS).replace(
        "state: state\n",
        "state: state\nstaging: staging\nverdicts: verdicts\n",
    ));
    let rules = project.rules_path();
    judged(project.path(), "schema-done", &rules, true);
    judged(project.path(), "schema-failed", &rules, false);
    judged(project.path(), "schema-again", &rules, true);
    // Signalled again after its verdict: the verdict answers an older signal.
    fs::write(
        project.path().join("staging/schema-again.done"),
        "STATUS: OK\nagain\n",
    )
    .unwrap();
    project.signal("STATUS: OK\n");

    contract(
        &project,
        "task_id: task\ndependencies_completed: [schema-done]\n",
    );
    let (code, verdict) = project.verdict();
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(names(&verdict), ["contract.dependencies", "status"]);

    contract(
        &project,
        "task_id: task\ndependencies_completed: [schema-done, schema-failed, schema-again, schema-never]\n",
    );
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    let deps = gate(&verdict, "contract.dependencies");
    let found = messages(deps);
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(
        found[0].contains("schema-failed: verdict FAIL (attempt 1)"),
        "{found:#?}"
    );
    assert!(
        found[1].contains("schema-again: signalled again since"),
        "{found:#?}"
    );
    assert!(
        found[2].contains("schema-never: not signalled done"),
        "{found:#?}"
    );
    // Nothing else ran on work whose inputs are not done.
    assert_eq!(gate(&verdict, "status")["outcome"], "skipped");
    assert!(
        events(&project)
            .iter()
            .any(|e| e["event"] == "contract_violation" && e["details"]["kind"] == "dependency")
    );
}

#[test]
fn a_broken_contract_is_an_error_naming_the_place_not_a_silent_pass() {
    let project = Project::new();
    project.rules(&with_contracts(STATUS));
    project.signal("STATUS: OK\n");
    for (yaml, words) in [
        (
            "task_id: task\nfiles_owend: [\"src/**\"]\n",
            "task.yaml:2:1: unknown field `files_owend`",
        ),
        (
            "task_id: other\n",
            "task.yaml:1:10: task_id `other` does not match",
        ),
        (
            "task_id: task\nfiles_owned: [\"/etc/**\"]\n",
            "task.yaml:2:15: files_owned[0]: glob `/etc/**` is absolute",
        ),
        (
            "task_id: task\nsuccess_criteria:\n  - \"Tests pass: 'unclosed\"\n",
            "task.yaml:3:5: cannot split",
        ),
        (
            "task_id: task\ncontext: \"unclosed\n",
            "task.yaml:3:1: found unexpected end of stream",
        ),
    ] {
        contract(&project, yaml);
        let (code, verdict) = project.verdict();
        assert_eq!(code, 2, "{yaml}: {verdict:#}");
        assert_eq!(verdict["verdict"], "ERROR");
        let reason = verdict["reasons"][0].as_str().unwrap();
        assert!(reason.contains(words), "{yaml}: {reason}");
        assert_eq!(gate(&verdict, "status")["outcome"], "skipped");
    }
}

#[test]
fn without_a_contract_file_the_pipeline_runs_as_written() {
    let project = Project::new();
    project.rules(&with_contracts(STATUS));
    project.signal("STATUS: OK\n");
    let (code, verdict) = project.verdict();
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(names(&verdict), ["status"]);
    assert!(verdict.get("unchecked").is_none());
}

#[test]
fn with_a_signing_key_a_dependencys_verdict_must_verify() {
    let project = Project::new();
    project.rules(
        &with_contracts(STATUS).replace("state: state\n", "state: state\nstaging: staging\n"),
    );
    project.root_file("key", "0123456789abcdef0123456789abcdef\n");
    let key = project.path().join("key");
    signed_verdict(
        project.path(),
        &project.rules_path(),
        &key,
        "dep-ok",
        "STATUS: OK\n",
    );
    signed_verdict(
        project.path(),
        &project.rules_path(),
        &key,
        "dep-failed",
        "",
    );
    project.signal("STATUS: OK\n");
    contract(
        &project,
        "task_id: task\ndependencies_completed: [dep-ok, dep-failed]\n",
    );
    let verdict_of = |project: &Project| {
        let mut cmd = project.check();
        cmd.env("VALIDATOR_KEY_FILE", &key)
            .args(["--format", "json"]);
        common::json_verdict(cmd)
    };
    let (code, verdict) = verdict_of(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let found = messages(gate(&verdict, "contract.dependencies"));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].contains("dep-failed: verdict FAIL"), "{found:#?}");

    // The FAIL turned into a PASS by hand does not count.
    let path = project.path().join("staging/dep-failed.verdict.json");
    let forged = fs::read_to_string(&path)
        .unwrap()
        .replace("\"FAIL\"", "\"PASS\"");
    fs::write(&path, forged).unwrap();
    let (code, verdict) = verdict_of(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let found = messages(gate(&verdict, "contract.dependencies"));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].contains("dep-failed: its verdict does not count: invalid signature"),
        "{found:#?}"
    );
}

/// The verdict `check --format json` signs with `key`, kept where a watcher would write it.
fn signed_verdict(root: &Path, rules: &Path, key: &Path, task: &str, body: &str) {
    let staging = root.join("staging");
    fs::create_dir_all(staging.join(task)).unwrap();
    let done = staging.join(format!("{task}.done"));
    fs::write(&done, body).unwrap();
    let output = validator()
        .env("VALIDATOR_KEY_FILE", key)
        .args(["check", "--format", "json", "--task", task, "-c"])
        .arg(rules)
        .arg("--task-dir")
        .arg(staging.join(task))
        .arg("--signal")
        .arg(&done)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&output.stdout).contains("hmac-sha256:"));
    fs::write(staging.join(format!("{task}.verdict.json")), output.stdout).unwrap();
}

#[test]
fn a_pass_verdict_a_worker_could_have_written_does_not_count() {
    let project = Project::new();
    // Verdicts in staging (the default) and no signing key.
    project.rules(
        &with_contracts(STATUS).replace("state: state\n", "state: state\nstaging: staging\n"),
    );
    let staging = project.path().join("staging");
    fs::create_dir_all(staging.join("dep")).unwrap();
    fs::write(staging.join("dep.done"), "STATUS: OK\n").unwrap();
    let output = validator()
        .args(["check", "--format", "json", "--task", "dep", "-c"])
        .arg(project.rules_path())
        .arg("--task-dir")
        .arg(staging.join("dep"))
        .arg("--signal")
        .arg(staging.join("dep.done"))
        .output()
        .unwrap();
    fs::write(staging.join("dep.verdict.json"), &output.stdout).unwrap();
    // Another task's verdict copied under this name does not count either.
    fs::write(staging.join("other.verdict.json"), &output.stdout).unwrap();
    fs::copy(staging.join("dep.done"), staging.join("other.done")).unwrap();
    project.signal("STATUS: OK\n");
    contract(
        &project,
        "task_id: task\ndependencies_completed: [dep, other]\n",
    );
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    let found = messages(gate(&verdict, "contract.dependencies"));
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(
        found[0].contains("dep: its PASS verdict lies in staging"),
        "{found:#?}"
    );
    assert!(
        found[1].contains("other: its verdict file holds task `dep`'s verdict"),
        "{found:#?}"
    );
}
