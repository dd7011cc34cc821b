//! A hook session's records fail closed: the session's own record (`<state>/sessions/*.json`,
//! where a worker may reach it) that is there but cannot be read back holds the session until a
//! person resets it, instead of giving the worker its budgets back; an agent's usage record
//! that is another file than the one read so far, shorter than what was read, or reached
//! through a link anywhere on its path cannot be counted; and a Gemini CLI stop whose last turn
//! cannot be read is not judged on `prompt_response`, which may carry a STATUS from before a
//! deny.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::pre_tool::{answer, input as pre, refuses};
use crate::common::{self, Project, pipeline, validator};
use crate::hooks::{after_agent, hook};

/// A project judged by a status gate, its session held to `defaults`.
fn project_with(defaults: &str) -> Project {
    let project = Project::new();
    project
        .rules(&pipeline("      - {name: status, rule: status}\n").replace(
            "state: state\n",
            &format!("state: state\ndefaults:\n{defaults}"),
        ))
        .file("src/lib.rs", "fn a() {}\n");
    common::commit_all(&project.task_dir());
    project
}

/// A Write of `src/lib.rs` as Claude Code asks before it runs.
fn write(project: &Project) -> Value {
    let file = project.task_dir().join("src/lib.rs");
    pre(project, "Write", json!({"file_path": file, "content": "x"}))
}

/// Whether the tool call `input` was refused, and what was said.
fn tool_call(project: &Project, input: &Value) -> (bool, String) {
    let said = answer(project, "claude", input);
    (refuses(&said), said.1)
}

/// The one session record under the project's state.
fn session_record(project: &Project) -> PathBuf {
    let dir = project.path().join("state/sessions");
    let mut records: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("sessions")
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    assert_eq!(records.len(), 1, "{records:?}");
    records.remove(0)
}

fn reset(project: &Project, key: &str) {
    let output = validator()
        .arg("-c")
        .arg(project.rules_path())
        .args(["reset", key])
        .output()
        .expect("run validator");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
}

/// The record of a session that began long ago, past any `max_time`.
fn began_long_ago(record: &Path) {
    let mut session: Value =
        serde_json::from_slice(&std::fs::read(record).expect("record")).expect("json");
    session["first_seen"] = json!(1);
    std::fs::write(record, session.to_string()).expect("write record");
}

#[test]
fn a_session_record_that_cannot_be_read_back_holds_the_session_until_a_person_resets_it() {
    let project = project_with("  max_time: 1h\n");
    // The first call of a session has no record yet: it starts one.
    let (refused, said) = tool_call(&project, &write(&project));
    assert!(!refused, "a fresh session: {said}");
    let record = session_record(&project);
    let key = record
        .file_stem()
        .expect("stem")
        .to_string_lossy()
        .into_owned();
    began_long_ago(&record);
    let (refused, said) = tool_call(&project, &write(&project));
    assert!(refused && said.contains("max_time"), "{said}");

    // Damaged, the record would start max_time over; it holds the session instead.
    for damage in ["{\"first_seen\": ", "", "[1, 2]"] {
        reset(&project, &key);
        let (refused, said) = tool_call(&project, &write(&project));
        assert!(!refused, "reset starts the session over: {said}");
        began_long_ago(&record);
        std::fs::write(&record, damage).expect("damage");
        let (refused, said) = tool_call(&project, &write(&project));
        assert!(refused, "{damage:?}: {said}");
        assert!(
            said.contains("cannot be read back")
                && said.contains(&format!("validator reset {key}")),
            "{said}"
        );
        // Left as it is for a person to look at, not saved over as a fresh record.
        assert_eq!(std::fs::read(&record).expect("record"), damage.as_bytes());
    }

    // A link in the record's place, or a directory, is no record validator wrote either.
    for swap in ["link", "dir"] {
        reset(&project, &key);
        let elsewhere = project.path().join(format!("fresh-{swap}.json"));
        std::fs::write(&elsewhere, "{}").expect("fresh");
        match swap {
            "link" => std::os::unix::fs::symlink(&elsewhere, &record).expect("link"),
            _ => std::fs::create_dir(&record).expect("dir"),
        }
        let (refused, said) = tool_call(&project, &write(&project));
        assert!(
            refused && said.contains("cannot be read back"),
            "{swap}: {said}"
        );
    }
}

/// One assistant message of Claude Code's transcript, `tokens` in all.
fn message(id: &str, tokens: u64) -> String {
    format!(
        "{{\"type\":\"assistant\",\"message\":{{\"id\":\"{id}\",\"usage\":{{\"input_tokens\":{tokens},\"output_tokens\":0}}}}}}\n"
    )
}

#[test]
fn a_transcript_put_in_place_of_the_one_read_so_far_cannot_be_counted() {
    for swap in ["same length", "shorter"] {
        let project = project_with("  max_tokens: 3000\n");
        let transcript = project.path().join("transcript.jsonl");
        std::fs::write(&transcript, message("m1", 1000)).expect("transcript");
        let (refused, said) = tool_call(&project, &write(&project));
        assert!(!refused, "under max_tokens: {said}");

        // Another file renamed into its place, of the same length (so a length alone cannot
        // tell); or the file itself rewritten shorter, hiding what it held.
        if swap == "same length" {
            let other = project.path().join("other.jsonl");
            std::fs::write(&other, message("m9", 1000)).expect("other");
            std::fs::rename(&other, &transcript).expect("swap");
        } else {
            std::fs::write(&transcript, message("m9", 1)).expect("rewrite");
        }
        let (refused, said) = tool_call(&project, &write(&project));
        assert!(refused, "{swap}: {said}");
        assert!(said.contains("cannot be counted"), "{swap}: {said}");
        let why = match swap {
            "same length" => "not the file read so far",
            _ => "shorter than",
        };
        assert!(said.contains(why), "{swap}: {said}");
    }
}

#[test]
fn a_transcript_grown_in_place_is_counted_on() {
    let project = project_with("  max_tokens: 3000\n");
    let transcript = project.path().join("transcript.jsonl");
    std::fs::write(&transcript, message("m1", 1000)).expect("transcript");
    assert!(!tool_call(&project, &write(&project)).0);
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&transcript)
        .expect("append");
    std::io::Write::write_all(&mut file, message("m2", 2500).as_bytes()).expect("append");
    let (refused, said) = tool_call(&project, &write(&project));
    assert!(
        refused && said.contains("3500 tokens used (max_tokens 3000)"),
        "{said}"
    );
}

#[test]
fn a_transcript_reached_through_a_linked_directory_cannot_be_counted() {
    let project = project_with("  max_tokens: 3000\n");
    let real = project.path().join("real");
    std::fs::create_dir(&real).expect("real");
    std::fs::write(real.join("transcript.jsonl"), message("m1", 1000)).expect("transcript");
    std::os::unix::fs::symlink(&real, project.path().join("linked")).expect("link");
    let mut input = write(&project);
    input["transcript_path"] = json!(project.path().join("linked/transcript.jsonl"));
    let (refused, said) = tool_call(&project, &input);
    assert!(refused, "{said}");
    assert!(
        said.contains("cannot be counted") && said.contains("link"),
        "{said}"
    );
}

#[test]
fn a_gemini_stop_whose_last_turn_cannot_be_read_is_not_judged_on_its_prompt_response() {
    let project = project_with("  max_attempts: 5\n");
    // Read from its transcript, the last turn passes.
    let input = after_agent(&project, "g1", "Done.\nSTATUS: OK");
    assert_eq!(hook(&project, "gemini", &input).stdout, "");

    // `prompt_response` joins the answers before a deny with the retry: a transcript that
    // cannot be read leaves the last turn unknown, never the joined text judged instead.
    let transcript = PathBuf::from(input["transcript_path"].as_str().expect("path"));
    let real = project.path().join("real");
    std::fs::create_dir(&real).expect("real");
    std::fs::copy(&transcript, real.join("session.jsonl")).expect("copy");
    std::os::unix::fs::symlink(&real, project.path().join("linked")).expect("link");
    let unreadable = [
        project.path().join("missing.jsonl"),
        project.path().join("real"),
        project.path().join("linked/session.jsonl"),
    ];
    for (n, path) in unreadable.into_iter().enumerate() {
        let session = format!("g2-{n}");
        let mut input = after_agent(&project, &session, "Done.\nSTATUS: OK\nFixed the parser.");
        input["transcript_path"] = json!(path);
        let reason = hook(&project, "gemini", &input).blocked("deny");
        assert!(reason.contains("cannot be known"), "{path:?}: {reason}");
        assert!(reason.contains("prompt_response"), "{path:?}: {reason}");
    }
}
