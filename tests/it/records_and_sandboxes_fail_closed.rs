//! What validator cannot count or keep out fails closed: a contract that owns no file lets no
//! file change (at the stop and before a tool runs); the agent's usage records that cannot be
//! read, or past what is read, escalate the session instead of counting as no tokens; and a
//! reviewer reads nothing of validator's own (its key, its state, its rules directory) and
//! changes no file's flags.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::pre_tool::{answer, input as pre, refuses};
use crate::common::{self, Project, gate, pipeline};

// ---------------------------------------------------------------------------------------------
// A contract that owns no file
// ---------------------------------------------------------------------------------------------

/// A project with a committed `src/lib.rs`, judged by a status gate and `contract`.
fn contracted(contract: &str) -> Project {
    let project = Project::new();
    project
        .rules(
            &pipeline("      - {name: status, rule: status}\n")
                .replace("state: state\n", "state: state\ncontracts: contracts\n"),
        )
        .root_file("contracts/task.yaml", contract)
        .file("src/lib.rs", "fn a() {}\n")
        .file("README.md", "old\n");
    common::commit_all(&project.task_dir());
    project
}

fn scope_messages(verdict: &Value) -> String {
    gate(verdict, "contract.scope")["findings"]
        .as_array()
        .map(|found| {
            found
                .iter()
                .map(|f| format!("{}: {}\n", f["file"], f["message"]))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_contract_owning_no_file_lets_no_file_change_at_the_stop() {
    let project = contracted("task_id: task\nfiles_owned: []\n");
    project
        .file("src/lib.rs", "fn b() {}\n")
        .signal("STATUS: OK\n");
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    assert_eq!(gate(&verdict, "contract.scope")["outcome"], "fail");
    let found = scope_messages(&verdict);
    assert!(
        found.contains("src/lib.rs") && found.contains("owns no file"),
        "{found}"
    );

    // The envelope shape says the same.
    let project = contracted("contract:\n  task_id: task\n  files_owned: []\n");
    project.file("README.md", "new\n").signal("STATUS: OK\n");
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    assert!(scope_messages(&verdict).contains("owns no file"));
}

#[test]
fn a_contract_that_leaves_files_owned_out_limits_only_its_readonly_files() {
    let project = contracted("task_id: task\nfiles_readonly: [\"README.md\"]\n");
    project
        .file("src/lib.rs", "fn b() {}\n")
        .file("src/new.rs", "fn c() {}\n")
        .signal("STATUS: OK\n");
    let (code, verdict) = project.verdict();
    assert_eq!(code, 0, "{verdict:#}");
    project.file("README.md", "new\n");
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{verdict:#}");
    assert!(scope_messages(&verdict).contains("`readonly`"));

    // `files_owned: null` is the key left out.
    let project = contracted("task_id: task\nfiles_owned: null\n");
    project
        .file("src/lib.rs", "fn b() {}\n")
        .signal("STATUS: OK\n");
    let (code, verdict) = project.verdict();
    assert_eq!(code, 0, "{verdict:#}");
}

fn write(project: &Project, rel: &str) -> Value {
    let file = project.task_dir().join(rel);
    pre(project, "Write", json!({"file_path": file, "content": "x"}))
}

#[test]
fn a_contract_owning_no_file_refuses_every_write_before_it_runs() {
    let project = contracted("task_id: task\nfiles_owned: []\n");
    for rel in ["src/lib.rs", "README.md", "new.txt"] {
        let said = answer(&project, "claude", &write(&project, rel));
        assert!(refuses(&said), "{rel}: {said:?}");
        assert!(said.1.contains("owns no file"), "{said:?}");
    }
    let line = pre(
        &project,
        "Bash",
        json!({"command": "echo x > notes.txt", "description": "d"}),
    );
    assert!(refuses(&answer(&project, "claude", &line)));

    let open = contracted("task_id: task\nfiles_readonly: [\"README.md\"]\n");
    assert!(!refuses(&answer(
        &open,
        "claude",
        &write(&open, "src/lib.rs")
    )));
    assert!(refuses(&answer(
        &open,
        "claude",
        &write(&open, "README.md")
    )));
}

// ---------------------------------------------------------------------------------------------
// The agent's usage records, against max_tokens
// ---------------------------------------------------------------------------------------------

/// A project whose session may use 3000 tokens, with the transcript Claude Code names.
fn budgeted() -> Project {
    let project = Project::new();
    project
        .rules(&pipeline("      - {name: status, rule: status}\n").replace(
            "state: state\n",
            "state: state\ndefaults:\n  max_tokens: 3000\n",
        ))
        .file("src/lib.rs", "fn a() {}\n");
    common::commit_all(&project.task_dir());
    project
}

/// One assistant message of Claude Code's transcript, `tokens` in all.
fn message(id: &str, tokens: u64) -> String {
    format!(
        "{{\"type\":\"assistant\",\"message\":{{\"id\":\"{id}\",\"usage\":{{\"input_tokens\":{tokens},\"output_tokens\":0}}}}}}\n"
    )
}

/// The answer to a Write before it runs: whether it was refused, and what was said.
fn tool_call(project: &Project) -> (bool, String) {
    let said = answer(project, "claude", &write(project, "src/lib.rs"));
    (refuses(&said), said.1)
}

#[test]
fn a_transcript_swapped_for_a_link_escalates_instead_of_counting_nothing() {
    let project = budgeted();
    let transcript = project.path().join("transcript.jsonl");
    std::fs::write(&transcript, message("m1", 1000)).expect("transcript");
    let (refused, said) = tool_call(&project);
    assert!(!refused, "under max_tokens: {said}");

    let elsewhere = project.path().join("elsewhere.jsonl");
    std::fs::write(&elsewhere, message("m1", 1000) + &message("m2", 5000)).expect("copy");
    std::fs::remove_file(&transcript).expect("rm");
    std::os::unix::fs::symlink(&elsewhere, &transcript).expect("link");
    let (refused, said) = tool_call(&project);
    assert!(refused, "{said}");
    assert!(
        said.contains("cannot be counted") && said.contains("link"),
        "{said}"
    );
    assert!(said.contains("ESCALATED"), "{said}");

    // Gone, it cannot be counted either.
    let project = budgeted();
    std::fs::write(project.path().join("transcript.jsonl"), message("m1", 1000)).expect("t");
    assert!(!tool_call(&project).0);
    std::fs::remove_file(project.path().join("transcript.jsonl")).expect("rm");
    let (refused, said) = tool_call(&project);
    assert!(refused && said.contains("cannot be counted"), "{said}");
}

#[test]
fn message_ids_however_long_never_make_the_session_forget_what_it_counted() {
    // Ids are the worker's text: 32 of 64 KiB would not fit the session's record, and cutting
    // the record to fit must never drop what was counted or where the record was read.
    let project = budgeted();
    let transcript = project.path().join("transcript.jsonl");
    let huge: String = (0..32)
        .map(|n| message(&format!("h{n}{}", "x".repeat(64 * 1024)), 0))
        .collect();
    std::fs::write(&transcript, message("m1", 2000) + &huge).expect("transcript");
    let (refused, said) = tool_call(&project);
    assert!(!refused, "under max_tokens: {said}");

    // Rewritten with less than the budget left: counted from its start again, it would pass.
    std::fs::write(&transcript, message("m2", 2000)).expect("rewrite");
    let (refused, said) = tool_call(&project);
    assert!(refused && said.contains("cannot be counted"), "{said}");
    std::fs::remove_file(&transcript).expect("rm");
    let (refused, said) = tool_call(&project);
    assert!(refused && said.contains("cannot be counted"), "{said}");
}

#[test]
fn a_stray_byte_that_glues_the_agents_next_line_onto_it_escalates() {
    let project = budgeted();
    let transcript = project.path().join("transcript.jsonl");
    std::fs::write(&transcript, message("m1", 1000)).expect("transcript");
    assert!(!tool_call(&project).0);
    // The worker appends one byte; the CLI's next message lands on the same line.
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&transcript)
        .expect("open");
    std::io::Write::write_all(&mut file, format!("x{}", message("m2", 9_000)).as_bytes())
        .expect("append");
    drop(file);
    let (refused, said) = tool_call(&project);
    assert!(
        refused && said.contains("cannot be counted") && said.contains("not JSON"),
        "{said}"
    );
}

#[test]
fn a_transcript_rewritten_in_place_at_the_same_length_escalates() {
    let project = budgeted();
    let transcript = project.path().join("transcript.jsonl");
    std::fs::write(&transcript, message("m1", 1000)).expect("transcript");
    assert!(!tool_call(&project).0);
    // The same file, the same length, other bytes: not the record the CLI appends to.
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(&transcript)
        .expect("open");
    std::io::Write::write_all(&mut file, message("m2", 2000).as_bytes()).expect("write");
    drop(file);
    let (refused, said) = tool_call(&project);
    assert!(refused && said.contains("rewritten"), "{said}");
}

#[test]
fn a_transcript_not_yet_written_at_the_first_tool_is_counted_once_it_is_and_never_if_removed() {
    // The agent may ask for its first tool before its transcript is on disk: nothing the worker
    // did can have removed it yet, so that call is not refused, and what the record holds once
    // written is counted in full.
    let project = budgeted();
    let (refused, said) = tool_call(&project);
    assert!(
        !refused,
        "the first look, before the record is written: {said}"
    );
    let transcript = project.path().join("transcript.jsonl");
    std::fs::write(&transcript, message("m1", 2000) + &message("m2", 2000)).expect("t");
    let (refused, said) = tool_call(&project);
    assert!(refused && said.contains("4000 tokens used"), "{said}");

    // Looked for once and still missing: something removed it (or it never comes), and the
    // second call cannot be counted.
    let project = budgeted();
    assert!(!tool_call(&project).0);
    let (refused, said) = tool_call(&project);
    assert!(refused && said.contains("cannot be counted"), "{said}");
}

#[test]
fn decoy_subagent_transcripts_cannot_hide_a_real_subagents_tokens() {
    let project = budgeted();
    std::fs::write(project.path().join("transcript.jsonl"), message("m1", 10)).expect("main");
    let subagents = project.path().join("transcript/subagents");
    std::fs::create_dir_all(&subagents).expect("subagents");
    for i in 0..64 {
        std::fs::write(subagents.join(format!("agent-{i:03}.jsonl")), "").expect("decoy");
    }
    std::fs::write(subagents.join("agent-zzz.jsonl"), message("s1", 5000)).expect("real");
    let (refused, said) = tool_call(&project);
    assert!(refused, "{said}");
    assert!(
        said.contains("5010 tokens used (max_tokens 3000)"),
        "{said}"
    );

    // So many that they are past what is counted: the session's tokens cannot be told.
    let project = budgeted();
    std::fs::write(project.path().join("transcript.jsonl"), message("m1", 10)).expect("main");
    let subagents = project.path().join("transcript/subagents");
    std::fs::create_dir_all(&subagents).expect("subagents");
    for i in 0..300 {
        std::fs::write(subagents.join(format!("agent-{i:03}.jsonl")), "").expect("decoy");
    }
    let (refused, said) = tool_call(&project);
    assert!(refused, "{said}");
    assert!(
        said.contains("cannot be counted") && said.contains("subagent"),
        "{said}"
    );
}

// ---------------------------------------------------------------------------------------------
// A reviewer reads nothing of validator's own and changes no file's flags
// ---------------------------------------------------------------------------------------------

/// Whether this kernel has Landlock (the reviewer's sandbox); without it the gate's summary
/// says what was not enforced, and these tests have nothing to show.
pub(crate) fn landlock() -> bool {
    use nix::libc;
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: asks the kernel for its Landlock ABI; no memory is passed.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    abi >= 1
}

pub(crate) const KEY: &str = "k3y-0f-the-validator-5ecret";

/// A reviewer that tries to read `files` and prints what it got as its issues, after REJECTED.
pub(crate) fn reviewer_reading(project: &Project, files: &[&Path]) -> String {
    let mut body = String::from("#!/bin/sh\ncat > /dev/null\necho REJECTED\n");
    for file in files {
        body.push_str(&format!(
            "echo \"- read {0}: $(cat '{0}' 2>&1)\"\n",
            file.display()
        ));
    }
    let path = project.path().join("reviewers/review.sh");
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(&path, body).expect("reviewer");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path.display().to_string()
}

pub(crate) fn issues(verdict: &Value) -> String {
    serde_json::to_string(&gate(verdict, "review")["findings"]).unwrap_or_default()
}

#[test]
fn a_reviewer_cannot_read_validators_key_state_or_rules_and_so_cannot_hand_them_on() {
    if !landlock() {
        eprintln!("no Landlock on this machine: the reviewer's sandbox cannot be shown");
        return;
    }
    let project = Project::new();
    let keys = tempfile::tempdir().expect("key dir");
    let key = keys.path().join("signing.key");
    std::fs::write(&key, KEY).expect("key");
    let state_file = project.path().join("state/secret.json");
    project
        .root_file("state/secret.json", "{\"state\": \"of validator\"}")
        .root_file("notes.txt", "validator's rules directory")
        .file("work.txt", "the worker's work");
    let work = project.task_dir().join("work.txt");
    let notes = project.path().join("notes.txt");
    let reviewer = reviewer_reading(&project, &[&key, &state_file, &notes, &work]);
    project.rules(
        &pipeline(&format!(
            "      - {{name: review, rule: review, run: [\"{reviewer}\"]}}\n"
        ))
        .replace(
            "state: state\n",
            &format!("state: state\nsigning_key_file: {}\n", key.display()),
        ),
    );
    project.signal("STATUS: OK\n");
    let (_, verdict) = project.verdict();
    let said = issues(&verdict);
    assert_eq!(gate(&verdict, "review")["outcome"], "fail", "{verdict:#}");
    assert!(!said.contains(KEY), "the key reached the feedback: {said}");
    assert!(!said.contains("of validator"), "{said}");
    assert!(!said.contains("validator's rules directory"), "{said}");
    assert!(said.contains("Permission denied"), "{said}");
    assert!(
        said.contains("the worker's work"),
        "the task stays readable: {said}"
    );
    let feedback =
        std::fs::read_to_string(project.path().join("task.feedback.md")).unwrap_or_default();
    assert!(!feedback.contains(KEY), "{feedback}");

    // Named by $VALIDATOR_KEY_FILE, it is kept out all the same.
    let mut check = project.check();
    check
        .env("VALIDATOR_KEY_FILE", &key)
        .args(["--format", "json"]);
    let (_, verdict) = common::json_verdict(check);
    let said = issues(&verdict);
    assert!(
        !said.contains(KEY) && said.contains("Permission denied"),
        "{said}"
    );
}

#[test]
fn a_reviewer_changes_no_files_flags() {
    if !landlock() {
        eprintln!("no Landlock on this machine: the reviewer's sandbox cannot be shown");
        return;
    }
    let project = Project::new();
    project.file("work.txt", "the worker's work");
    let work = project.task_dir().join("work.txt");
    // FS_IOC_GETFLAGS, then FS_IOC_SETFLAGS with the same flags and FS_IOC_FSSETXATTR: each
    // refused (EPERM), whatever the flags.
    let script = format!(
        "#!/bin/sh\ncat > /dev/null\necho REJECTED\n/usr/bin/env python3 - <<'EOF'\nimport fcntl, os\nfd = os.open('{}', os.O_RDONLY)\nfor name, request, arg in [('setflags', 0x40086602, None), ('fssetxattr', 0x401c5820, bytes(28))]:\n    try:\n        if arg is None:\n            arg = fcntl.ioctl(fd, 0x80086601, bytes(8))\n        fcntl.ioctl(fd, request, arg)\n        print('- ' + name + ': changed')\n    except OSError as err:\n        print('- ' + name + ': errno ' + str(err.errno))\nEOF\n",
        work.display()
    );
    project.root_file("reviewers/flags.sh", &script);
    let path = project.path().join("reviewers/flags.sh");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    project.rules(&pipeline(&format!(
        "      - {{name: review, rule: review, run: [\"{}\"]}}\n",
        path.display()
    )));
    project.signal("STATUS: OK\n");
    let (_, verdict) = project.verdict();
    let said = issues(&verdict);
    if !said.contains("setflags") {
        eprintln!("no python3 here: {said}");
        return;
    }
    assert!(said.contains("setflags: errno 1"), "{said}");
    assert!(said.contains("fssetxattr: errno 1"), "{said}");
    assert!(!said.contains("changed"), "{said}");
}
