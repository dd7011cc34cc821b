// One rules file means the same thing in every front end (issue 42): docs/keys.md is the
// binary's own table (`validator rules keys`), row by row, and holds every key of the rules
// file's schema; a key written where a front end cannot honour it is said at load, by `rules
// check` and by `watch`'s start; what `watch` can honour it does (`max_time` from a task's
// first attempt, the person's request handed on in the done signal).

use std::path::Path;
use std::process::{Child, Stdio};

use crate::common::{Project, json_verdict, validator};
use serde_json::Value;

fn repo(rel: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// The rows of the first Markdown table in `text`, each as its cells, heading included and the
/// `|---|` line left out.
fn table_rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .filter(|line| !line.starts_with("|---"))
        .map(|line| {
            line.trim()
                .trim_matches('|')
                .split('|')
                .map(|cell| cell.trim().to_owned())
                .collect()
        })
        .collect()
}

fn stdout_of(args: &[&str]) -> String {
    let out = validator().args(args).output().expect("run validator");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn docs_keys_md_is_the_binarys_table_row_by_row() {
    let printed = stdout_of(&["rules", "keys"]);
    let doc = std::fs::read_to_string(repo("docs/keys.md")).expect("docs/keys.md");
    let (code, docs) = (table_rows(&printed), table_rows(&doc));
    assert!(code.len() > 20, "{printed}");
    for (at, (code, docs)) in code.iter().zip(&docs).enumerate() {
        assert_eq!(
            code, docs,
            "row {at} of docs/keys.md differs from `validator rules keys`"
        );
    }
    assert_eq!(
        code.len(),
        docs.len(),
        "docs/keys.md has another number of rows"
    );
    // Why each `no` is one, as the binary says it.
    for line in printed.lines().filter(|line| line.starts_with("- `")) {
        assert!(doc.contains(line), "docs/keys.md lacks: {line}");
    }
    for page in ["docs/README.md", "docs/rules-file.md"] {
        let text = std::fs::read_to_string(repo(page)).expect(page);
        assert!(
            text.contains("keys.md"),
            "{page} does not link docs/keys.md"
        );
    }
}

/// The property names of `schema` at `pointer` (`$ref`s into `definitions` followed).
fn properties(schema: &Value, pointer: &str) -> Vec<String> {
    let mut node = schema
        .pointer(pointer)
        .unwrap_or_else(|| panic!("{pointer}"));
    for _ in 0..4 {
        let reference = node
            .get("$ref")
            .or_else(|| node.pointer("/anyOf/0/$ref"))
            .or_else(|| node.pointer("/allOf/0/$ref"))
            .and_then(Value::as_str);
        match reference.and_then(|r| r.strip_prefix('#')) {
            Some(target) => node = schema.pointer(target).expect("$ref target"),
            None => break,
        }
    }
    node["properties"]
        .as_object()
        .unwrap_or_else(|| panic!("no properties at {pointer}: {node}"))
        .keys()
        .cloned()
        .collect()
}

#[test]
fn every_key_of_the_schemas_top_level_defaults_tools_and_hook_has_a_row() {
    let schema: Value =
        serde_json::from_str(&stdout_of(&["rules", "schema"])).expect("the schema is JSON");
    let rows: Vec<String> = table_rows(&stdout_of(&["rules", "keys"]))
        .into_iter()
        .skip(1)
        .map(|cells| cells[0].trim_matches('`').to_owned())
        .collect();
    let mut keys = properties(&schema, "");
    for section in ["defaults", "tools", "hook"] {
        keys.extend(
            properties(&schema, &format!("/properties/{section}"))
                .into_iter()
                .map(|key| format!("{section}.{key}")),
        );
    }
    assert!(keys.contains(&"defaults.max_tokens".to_owned()), "{keys:?}");
    for key in &keys {
        assert!(
            rows.contains(key),
            "`{key}` has no row in `validator rules keys`"
        );
    }
}

/// `validator rules check` over `yaml`: its exit code and what it printed.
fn rules_check(yaml: &str) -> (Option<i32>, String) {
    let project = Project::new();
    project.rules(yaml);
    let out = validator()
        .arg("-c")
        .arg(project.rules_path())
        .args(["rules", "check"])
        .output()
        .expect("run validator");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

const STATUS_ONLY: &str =
    "pipelines:\n  - name: main\n    gates:\n      - {name: s, rule: status}\n";

#[test]
fn rules_check_says_which_front_end_cannot_count_tokens_and_why() {
    let (code, out) = rules_check(&format!(
        "version: 1\nstate: state\ndefaults: {{max_tokens: 100000, max_time: 1h}}\n{STATUS_ONLY}"
    ));
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("warning: `defaults.max_tokens` does nothing under watch, loop: the watcher reads the done signal, never the agent's usage records"),
        "{out}"
    );
    // `max_time` acts under the watcher: nothing is said of it.
    assert!(!out.contains("`defaults.max_time`"), "{out}");
    // A file that writes none of them is told nothing.
    let (_, quiet) = rules_check(&format!("version: 1\nstate: state\n{STATUS_ONLY}"));
    assert!(quiet.contains(", 0 warnings"), "{quiet}");
}

#[test]
fn rules_check_warns_of_a_tools_commands_entry_that_names_an_mcp_tool() {
    let (code, out) = rules_check(&format!(
        "version: 1\nstate: state\ntools:\n  commands:\n    - {{match: mcp__gmail__send_email, decision: deny}}\n    - {{match: send_email, decision: deny}}\n    - {{match: git push, decision: ask}}\n{STATUS_ONLY}"
    ));
    assert_eq!(code, Some(0), "{out}");
    for name in ["mcp__gmail__send_email", "send_email"] {
        let line = out
            .lines()
            .find(|line| line.contains(&format!("tools.commands `{name}`")))
            .unwrap_or_else(|| panic!("no warning for {name}: {out}"));
        assert!(line.contains("never matches a tool call"), "{line}");
        assert!(line.contains("`tools.unknown: deny`"), "{line}");
    }
    assert!(!out.contains("tools.commands `git push`"), "{out}");
    // OpenCode and the loop are named for the commands too.
    assert!(
        out.contains("`tools.commands` does nothing under loop"),
        "{out}"
    );
}

struct Watcher(Child);

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A watcher over `project`'s rules, its stderr kept.
fn watch(project: &Project) -> Watcher {
    Watcher(
        std::process::Command::new(env!("CARGO_BIN_EXE_validator"))
            .arg("-c")
            .arg(project.rules_path())
            .args(["watch", "--jobs", "1"])
            .env_remove("VALIDATOR_CONFIG")
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn validator watch"),
    )
}

/// Writes `body` as task `t`'s done signal and waits for the watcher's verdict on it.
fn signal_and_wait(project: &Project, body: &str) -> (i32, Value) {
    std::fs::write(project.path().join("staging/t.done"), body).expect("done");
    let mut wait = validator();
    wait.arg("-c").arg(project.rules_path()).args([
        "wait",
        "t",
        "--timeout",
        "5m",
        "--anyway",
        "--format",
        "json",
    ]);
    json_verdict(wait)
}

fn staged(yaml: &str) -> Project {
    let project = Project::new();
    project.rules(yaml);
    std::fs::create_dir_all(project.path().join("staging/t")).expect("task");
    project
}

#[test]
fn watch_escalates_a_task_past_max_time_since_its_first_attempt_and_says_what_it_cannot_count() {
    let project = staged(&format!(
        "version: 1\nstate: state\ndefaults: {{max_time: 1h, max_tokens: 5000}}\n{STATUS_ONLY}"
    ));
    // The task's first attempt began long ago (1970): its next attempt is past max_time.
    std::fs::create_dir_all(project.path().join("state/tasks")).expect("state");
    std::fs::write(
        project.path().join("state/tasks/t.json"),
        r#"{"attempt": 1, "signal": "an earlier one", "strikes": 0, "started": 1000}"#,
    )
    .expect("state");
    let mut watcher = watch(&project);
    let (code, verdict) = signal_and_wait(&project, "STATUS: OK\n");
    assert_eq!(verdict["verdict"], "ESCALATED", "{verdict:#}");
    assert_eq!(code, 4, "{verdict:#}");
    let reasons = verdict["reasons"].to_string();
    assert!(
        reasons.contains("since its first attempt (max_time 1h)"),
        "{reasons}"
    );

    let _ = watcher.0.kill();
    let mut stderr = String::new();
    use std::io::Read;
    watcher
        .0
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    assert!(
        stderr.contains("warning: `defaults.max_tokens` does nothing under watch, loop:"),
        "{stderr}"
    );
}

#[test]
fn a_fresh_task_under_watch_is_judged_within_max_time() {
    let project = staged(&format!(
        "version: 1\nstate: state\ndefaults: {{max_time: 1h}}\n{STATUS_ONLY}"
    ));
    let _watcher = watch(&project);
    let (code, verdict) = signal_and_wait(&project, "STATUS: OK\n");
    assert_eq!(
        (code, verdict["verdict"].as_str()),
        (0, Some("PASS")),
        "{verdict:#}"
    );
}

#[test]
fn the_request_in_a_done_signal_reaches_the_reviewer_under_watch() {
    let project = Project::new();
    let script = project.path().join("review.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nctx=$(cat)\ncase \"$ctx\" in\n  *\"from the done signal's \\`request\\`\"*\"Add a divide function\"*) echo APPROVED ;;\n  *) echo REJECTED; echo '- the request is not in the context' ;;\nesac\n",
    )
    .expect("reviewer");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let project = {
        project.rules(&format!(
            "version: 1\nstate: state\npipelines:\n  - name: main\n    gates:\n      - name: review\n        rule: review\n        run: [\"{}\"]\n",
            script.display()
        ));
        std::fs::create_dir_all(project.path().join("staging/t")).expect("task");
        project
    };
    let _watcher = watch(&project);
    let (code, verdict) = signal_and_wait(
        &project,
        r#"{"status": "OK", "request": "Add a divide function to calc.py"}"#,
    );
    assert_eq!(code, 0, "{verdict:#}");
    let (code, verdict) = signal_and_wait(&project, r#"{"status": "OK", "summary": "done"}"#);
    assert_eq!(
        code, 1,
        "without a request the reviewer has none: {verdict:#}"
    );
}

#[test]
fn gemini_clis_after_agent_alone_hands_its_prompt_to_the_reviewer() {
    let project = Project::new();
    let script = project.path().join("review.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nctx=$(cat)\ncase \"$ctx\" in\n  *\"Add a divide function\"*) echo APPROVED ;;\n  *) echo REJECTED; echo '- no request' ;;\nesac\n",
    )
    .expect("reviewer");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    project.rules(&format!(
        "version: 1\nstate: state\npipelines:\n  - name: main\n    gates:\n      - name: review\n        rule: review\n        run: [\"{}\"]\n",
        script.display()
    ));
    let stop = |session: &str, prompt: &str| {
        let input = serde_json::json!({
            "session_id": session, "cwd": project.task_dir(), "hook_event_name": "AfterAgent",
            "prompt": prompt, "prompt_response": "Done.\nSTATUS: OK", "stop_hook_active": false,
        });
        let out = validator()
            .arg("-c")
            .arg(project.rules_path())
            .args(["hook", "gemini", "--task-dir"])
            .arg(project.task_dir())
            .write_stdin(input.to_string())
            .output()
            .expect("hook");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(stop("g1", "Add a divide function to calc.py").trim(), "");
    assert!(stop("g2", "Make it faster").contains("deny"));
}
