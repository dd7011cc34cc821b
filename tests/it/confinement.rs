//! The kernel holds the task's contract for every process an allowed shell call starts: the
//! pre-tool hook rewrites the call to run under `validator exec`, and a write the shell reader
//! cannot see (a program's own `open`, text piped into `sh`, a script written in scope and then
//! run) outside the writable part of the task does not happen. Each case runs the rewritten
//! command as Claude Code would: with `bash -c` in the task directory.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use super::common::pre_tool::input;
use super::common::{Project, pipeline, validator};

/// Whether this kernel can confine (Landlock ABI 3); the tests say so when it cannot.
fn kernel_confines() -> bool {
    validator::confine::landlock_abi() >= validator::confine::ABI_NEEDED
}

fn scoped(extra: &str) -> Project {
    let project = Project::new();
    project.rules(&pipeline(&format!(
        "      - name: scope\n        rule: file-scope\n        allow: [\"src/**\"]\n        readonly: [\"src/locked.txt\"]\n{extra}"
    )));
    project.file("src/locked.txt", "locked\n");
    project
}

/// The hook's answer to a Bash call running `line`, as JSON.
fn pre_tool(project: &Project, line: &str, env: &[(&str, &str)]) -> Value {
    let mut cmd = validator();
    cmd.arg("-c")
        .arg(project.rules_path())
        .args(["hook", "claude"])
        .current_dir(project.task_dir())
        .env("CLAUDE_PROJECT_DIR", project.task_dir());
    for (name, value) in env {
        cmd.env(name, value);
    }
    let call = input(
        project,
        "Bash",
        json!({"command": line, "description": "d"}),
    );
    let output = cmd.write_stdin(call.to_string()).output().unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    if stdout.trim().is_empty() {
        return Value::Null;
    }
    serde_json::from_str(&stdout).unwrap()
}

/// The command the hook rewrote `line` to (it must rewrite it).
fn rewritten(project: &Project, line: &str) -> String {
    let answer = pre_tool(project, line, &[]);
    let command = answer["hookSpecificOutput"]["updatedInput"]["command"]
        .as_str()
        .unwrap_or_else(|| panic!("no rewrite for {line}: {answer}"));
    assert_eq!(
        answer["hookSpecificOutput"]["updatedInput"]["description"], "d",
        "the rest of the call is kept"
    );
    assert!(
        answer["hookSpecificOutput"]["permissionDecision"].is_null(),
        "the agent's own rules still decide: {answer}"
    );
    command.to_owned()
}

/// Runs `command` as Claude Code runs a Bash call: `bash -c` in `dir`.
fn run_as_the_agent(dir: &Path, command: &str) -> Output {
    std::process::Command::new("bash")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .output()
        .unwrap()
}

#[test]
fn writes_hidden_from_the_shell_reader_outside_the_scope_do_not_happen_and_in_scope_ones_do() {
    if !kernel_confines() {
        eprintln!("skipped: this kernel has no Landlock ABI 3");
        return;
    }
    let project = scoped("");
    let task = project.task_dir();
    project.file("src/tool.sh", "echo 42 > answer.txt\n");
    for hidden in [
        "python3 -c \"open('answer.txt','w').write('42')\"",
        "printf 'echo 42 > answer.txt' | sh",
        "c='echo 42 > answer.txt'; eval \"$c\"",
        "sh src/tool.sh",
        "python3 -c \"open('src/locked.txt','a').write('42')\"",
        "python3 -c \"open('../validator.yaml','a').write('42')\"",
        // An original that closes a group the rewrite might have kept it in, to run the rest
        // outside the confinement.
        "true\n}\necho 42 > answer.txt\n{ :",
        "true)\necho 42 > answer.txt\n(:",
    ] {
        let answer = pre_tool(&project, hidden, &[]);
        if answer["hookSpecificOutput"]["permissionDecision"] == "deny" {
            assert!(hidden.contains('\n'), "{hidden} was refused: {answer}");
            continue;
        }
        let command = rewritten(&project, hidden);
        let ran = run_as_the_agent(&task, &command);
        let stderr = String::from_utf8_lossy(&ran.stderr);
        assert!(
            !task.join("answer.txt").exists(),
            "{hidden} wrote answer.txt"
        );
        assert!(
            stderr.contains("Permission denied") || stderr.contains("Read-only file system"),
            "{hidden}: the refusal is the kernel's, and says so: {stderr}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(task.join("src/locked.txt")).unwrap(),
        "locked\n",
        "readonly inside an allowed tree holds (a mount namespace)"
    );
    assert!(
        !std::fs::read_to_string(project.rules_path())
            .unwrap()
            .contains("42")
    );
    let command = rewritten(
        &project,
        "python3 -c \"open('src/ok.txt','w').write('ok')\"",
    );
    let ran = run_as_the_agent(&task, &command);
    assert!(ran.status.success(), "{ran:?}");
    assert_eq!(
        std::fs::read_to_string(task.join("src/ok.txt")).unwrap(),
        "ok"
    );
}

#[test]
fn a_confined_command_keeps_its_output_exit_code_directory_and_a_fresh_tmpdir() {
    if !kernel_confines() {
        eprintln!("skipped: this kernel has no Landlock ABI 3");
        return;
    }
    let project = scoped("");
    let task = project.task_dir();
    let command = rewritten(
        &project,
        "echo out; echo err >&2; cd src && pwd; touch \"$TMPDIR/t\" && echo tmp-ok; exit 7",
    );
    let ran = run_as_the_agent(&task, &command);
    let stdout = String::from_utf8_lossy(&ran.stdout);
    assert_eq!(ran.status.code(), Some(7));
    assert!(stdout.starts_with("out\n"), "{stdout}");
    assert!(stdout.contains("/task/src\n"), "{stdout}");
    assert!(stdout.contains("tmp-ok"), "{stdout}");
    assert_eq!(String::from_utf8_lossy(&ran.stderr), "err\n");
}

#[test]
fn validators_state_inside_the_project_and_its_key_are_out_of_reach() {
    if !kernel_confines() {
        eprintln!("skipped: this kernel has no Landlock ABI 3");
        return;
    }
    let project = Project::new();
    // No `allow`: the whole task is writable, with validator's state inside it.
    project.rules(
        "version: 1\nstate: task/.validator\nsigning_key_file: key\npipelines:\n  - name: main\n    gates:\n      - name: scope\n        rule: file-scope\n        deny: [\"secrets/**\"]\n",
    );
    project.root_file("key", "0123456789abcdef0123456789abcdef\n");
    project.file(".validator/record.json", "{}");
    project.file("secrets/a.pem", "pem");
    let task = project.task_dir();
    let command = rewritten(
        &project,
        "echo x > answer.txt; python3 -c \"open('.validator/record.json','a').write('1')\"; python3 -c \"open('secrets/a.pem','a').write('1')\"; cat ../key; echo done",
    );
    let ran = run_as_the_agent(&task, &command);
    let stdout = String::from_utf8_lossy(&ran.stdout);
    assert!(task.join("answer.txt").exists(), "the task is writable");
    assert_eq!(
        std::fs::read_to_string(task.join(".validator/record.json")).unwrap(),
        "{}"
    );
    assert_eq!(
        std::fs::read_to_string(task.join("secrets/a.pem")).unwrap(),
        "pem"
    );
    assert!(
        !stdout.contains("0123456789abcdef"),
        "the key was read: {stdout}"
    );
    assert!(stdout.contains("done"));
}

#[test]
fn where_the_kernel_cannot_confine_required_refuses_and_best_effort_says_so() {
    let best_effort = scoped("");
    let answer = pre_tool(
        &best_effort,
        "echo ok > src/ok.txt",
        &[("VALIDATOR_DEBUG_NO_LANDLOCK", "1")],
    );
    assert!(answer.is_null(), "nothing to rewrite to: {answer}");
    let status = validator()
        .arg("-c")
        .arg(best_effort.rules_path())
        .arg("status")
        .env("VALIDATOR_DEBUG_NO_LANDLOCK", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(text.contains("confinement: none on this machine"), "{text}");

    let required = Project::new();
    required.rules(
        &pipeline("      - name: scope\n        rule: file-scope\n        allow: [\"src/**\"]\n")
            .replace("pipelines:", "tools:\n  confine: required\npipelines:"),
    );
    let answer = pre_tool(
        &required,
        "echo ok > src/ok.txt",
        &[("VALIDATOR_DEBUG_NO_LANDLOCK", "1")],
    );
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecision"], "deny",
        "{answer}"
    );
    assert!(
        answer["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("tools.confine: required")
    );
    let ran = validator()
        .arg("-c")
        .arg(required.rules_path())
        .args(["exec", "--task-dir"])
        .arg(required.task_dir())
        .args(["--", "sh", "-c", "echo ran"])
        .env("VALIDATOR_DEBUG_NO_LANDLOCK", "1")
        .output()
        .unwrap();
    assert_eq!(ran.status.code(), Some(126));
    assert!(ran.stdout.is_empty(), "nothing ran");
}

#[test]
fn confinement_off_leaves_the_call_as_it_was() {
    let project = Project::new();
    project.rules(
        &pipeline("      - name: scope\n        rule: file-scope\n        allow: [\"src/**\"]\n")
            .replace("pipelines:", "tools:\n  confine: off\npipelines:"),
    );
    assert!(pre_tool(&project, "echo ok > src/ok.txt", &[]).is_null());
}

#[test]
fn validator_run_confines_a_whole_program_and_what_it_starts() {
    if !kernel_confines() {
        eprintln!("skipped: this kernel has no Landlock ABI 3");
        return;
    }
    let project = scoped("");
    let task = project.task_dir();
    let own = project.path().join("agent-home");
    std::fs::create_dir_all(&own).unwrap();
    let ran = validator()
        .arg("-c")
        .arg(project.rules_path())
        .args(["run", "--task-dir"])
        .arg(&task)
        .arg("--writable")
        .arg(&own)
        .args([
            "--",
            "sh",
            "-c",
            "echo state > ../agent-home/session; (sh -c 'echo 42 > answer.txt') ; echo ok > src/ok.txt",
        ])
        .current_dir(&task)
        .output()
        .unwrap();
    assert!(ran.status.success(), "{ran:?}");
    assert!(
        own.join("session").exists(),
        "the agent's own state is writable"
    );
    assert!(
        !task.join("answer.txt").exists(),
        "a child's write outside the scope"
    );
    assert!(task.join("src/ok.txt").exists());
}

#[test]
fn the_model_is_told_why_a_confined_write_failed() {
    if !kernel_confines() {
        eprintln!("skipped: this kernel has no Landlock ABI 3");
        return;
    }
    let project = scoped("");
    let mut call = input(&project, "Bash", json!({"command": "python3 x.py"}));
    call["hook_event_name"] = json!("PostToolUse");
    call["tool_response"] = json!({"stdout": "", "stderr": "PermissionError: [Errno 13] Permission denied: 'answer.txt'", "interrupted": false});
    let output = validator()
        .arg("-c")
        .arg(project.rules_path())
        .args(["hook", "claude"])
        .current_dir(project.task_dir())
        .env("CLAUDE_PROJECT_DIR", project.task_dir())
        .write_stdin(call.to_string())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("confined by the kernel"), "{stdout}");
    assert!(stdout.contains("src/**"), "{stdout}");
}

#[test]
fn an_allowed_tree_made_a_link_grants_nothing_and_the_key_in_force_is_never_read() {
    if !kernel_confines() {
        eprintln!("skipped: this kernel has no Landlock ABI 3");
        return;
    }
    let project = Project::new();
    project.rules(&pipeline(
        "      - name: scope\n        rule: file-scope\n        allow: [\"lib/**\", \"src/**\"]\n",
    ));
    project.file("src/a.txt", "a");
    project.root_file("outside/keep.txt", "keep");
    project.root_file("env-key", "0123456789abcdef-env\n");
    let task = project.task_dir();
    // A call makes the allowed tree that did not exist a link out of the task.
    std::os::unix::fs::symlink(project.path().join("outside"), task.join("lib")).unwrap();
    let ran = validator()
        .arg("-c")
        .arg(project.rules_path())
        .args(["exec", "--task-dir"])
        .arg(&task)
        .args([
            "--",
            "sh",
            "-c",
            "echo x > lib/planted.txt; cat \"$VALIDATOR_KEY_FILE\"; head -c 1 /dev/sda; echo ok > src/b.txt",
        ])
        .env("VALIDATOR_KEY_FILE", project.path().join("env-key"))
        .current_dir(&task)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&ran.stdout);
    assert!(!project.path().join("outside/planted.txt").exists());
    assert!(
        !stdout.contains("0123456789abcdef"),
        "the key was read: {stdout}"
    );
    assert!(task.join("src/b.txt").exists(), "{ran:?}");
}

#[test]
fn readonly_inside_an_owned_tree_is_said_to_be_the_stops_where_no_namespace_can_be_made() {
    if !kernel_confines() {
        eprintln!("skipped: this kernel has no Landlock ABI 3");
        return;
    }
    let no_namespaces = [("VALIDATOR_DEBUG_NO_NAMESPACES", "1")];
    let project = scoped("");
    let status = validator()
        .arg("-c")
        .arg(project.rules_path())
        .arg("status")
        .envs(no_namespaces)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        text.contains("checked by the post-tool check and the stop only"),
        "{text}"
    );
    // Best effort: the call runs, writes outside `allow` are still refused by Landlock.
    let exec = |project: &Project, script: &str| {
        validator()
            .arg("-c")
            .arg(project.rules_path())
            .args(["exec", "--task-dir"])
            .arg(project.task_dir())
            .args(["--", "sh", "-c", script])
            .envs(no_namespaces)
            .current_dir(project.task_dir())
            .output()
            .unwrap()
    };
    let ran = exec(&project, "echo x > answer.txt; echo ran");
    assert_eq!(String::from_utf8_lossy(&ran.stdout), "ran\n");
    assert!(!project.task_dir().join("answer.txt").exists());
    // Required: a readonly path the kernel cannot hold refuses the call, saying why.
    let required = scoped("");
    let rules = std::fs::read_to_string(required.rules_path()).unwrap();
    required.rules(&rules.replace("pipelines:", "tools:\n  confine: required\npipelines:"));
    let ran = exec(&required, "echo ran");
    assert_eq!(ran.status.code(), Some(126));
    assert!(ran.stdout.is_empty());
    assert!(
        String::from_utf8_lossy(&ran.stderr).contains("cannot be kept read-only"),
        "{ran:?}"
    );
}

#[test]
fn under_validator_run_the_agents_own_hooks_are_judged_outside_and_keep_their_state() {
    if !kernel_confines() {
        eprintln!("skipped: this kernel has no Landlock ABI 3");
        return;
    }
    let project = scoped("");
    let task = project.task_dir();
    let stop = json!({
        "session_id": "run-1",
        "transcript_path": project.path().join("transcript.jsonl"),
        "cwd": task,
        "hook_event_name": "Stop",
        "stop_hook_active": false,
    });
    std::fs::write(project.path().join("stop.json"), stop.to_string()).unwrap();
    let exe = assert_cmd::cargo::cargo_bin("validator");
    // The "agent": it writes outside its scope, then calls its stop hook as a CLI would (with
    // no `-c`: the run's own rules judge it), and the hook keeps its state.
    let script = format!(
        "echo x > answer.txt; {} hook claude < ../stop.json",
        exe.display()
    );
    let ran = validator()
        .arg("-c")
        .arg(project.rules_path())
        .args(["run", "--task-dir"])
        .arg(&task)
        .args(["--", "sh", "-c", &script])
        .current_dir(&task)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&ran.stdout);
    assert!(!task.join("answer.txt").exists());
    assert!(ran.status.success(), "{ran:?}");
    assert!(
        stdout.contains("\"decision\""),
        "the stop was judged: {stdout}"
    );
    let state = project.path().join("state");
    let kept = walkdir::WalkDir::new(&state)
        .into_iter()
        .filter_map(Result::ok)
        .any(|entry| entry.file_type().is_file());
    assert!(
        kept,
        "the hook's state was written under {}",
        state.display()
    );
}

#[test]
fn the_agents_read_tools_never_reach_a_key_and_a_hook_relays_only_to_its_own_run() {
    let project = scoped("");
    project.root_file("keys/signing", "0123456789abcdef0123456789abcdef\n");
    let rules = std::fs::read_to_string(project.rules_path()).unwrap();
    project.rules(&rules.replace(
        "version: 1\n",
        "version: 1\nsigning_key_file: keys/signing\n",
    ));
    for (tool, field, path) in [
        ("Read", "file_path", project.path().join("keys/signing")),
        ("Grep", "path", project.path().join("keys")),
    ] {
        let call = input(&project, tool, json!({ field: path, "pattern": "x" }));
        let output = validator()
            .arg("-c")
            .arg(project.rules_path())
            .args(["hook", "claude"])
            .current_dir(project.task_dir())
            .write_stdin(call.to_string())
            .output()
            .unwrap();
        let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(
            answer["hookSpecificOutput"]["permissionDecision"], "deny",
            "{tool}"
        );
    }
    // A socket a worker names (in a settings file it wrote, say) is no run's broker: the hook
    // holds the call rather than take its answer.
    let socket = project.path().join("fake.sock");
    // Served by a process of its own, as a worker's would be: no ancestor of the hook.
    let mut fake = std::process::Command::new("python3")
        .arg("-c")
        .arg(
            "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ns.bind(sys.argv[1])\ns.listen()\nprint('up',flush=True)\nwhile True:\n c,_=s.accept()\n c.sendall(b'{\"code\":0,\"stdout\":\"\",\"stderr\":\"\"}')\n c.close()",
        )
        .arg(&socket)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut up = [0u8; 3];
    std::io::Read::read_exact(fake.stdout.as_mut().unwrap(), &mut up).unwrap();
    let call = input(&project, "Bash", json!({"command": "echo x > answer.txt"}));
    let output = validator()
        .arg("-c")
        .arg(project.rules_path())
        .args(["hook", "claude"])
        .current_dir(project.task_dir())
        .env("VALIDATOR_BROKER", &socket)
        .write_stdin(call.to_string())
        .output()
        .unwrap();
    let _ = fake.kill();
    let _ = fake.wait();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(output.stdout.is_empty());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("no validator run"),
        "{output:?}"
    );
}

#[test]
fn the_projects_own_agent_settings_stay_as_they_are_when_the_whole_task_is_writable() {
    if !kernel_confines() {
        eprintln!("skipped: this kernel has no Landlock ABI 3");
        return;
    }
    let project = Project::new();
    project.rules(&pipeline(
        "      - name: scope\n        rule: file-scope\n        deny: [\"secrets/**\"]\n",
    ));
    project.file(".claude/settings.json", "{}");
    project.file(".mcp.json", "{}");
    let task = project.task_dir();
    let command = rewritten(
        &project,
        "python3 -c \"open('.claude/settings.local.json','w').write('{}')\"; python3 -c \"open('.mcp.json','a').write(' ')\"; echo ok > notes.txt",
    );
    let ran = run_as_the_agent(&task, &command);
    assert!(
        task.join("notes.txt").exists(),
        "the task is writable: {ran:?}"
    );
    assert!(!task.join(".claude/settings.local.json").exists());
    assert_eq!(
        std::fs::read_to_string(task.join(".mcp.json")).unwrap(),
        "{}"
    );
}
