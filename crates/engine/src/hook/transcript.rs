//! Gemini CLI's last model turn, read from its session transcript. Its `AfterAgent` hook
//! input's `prompt_response` is every model text of the prompt, joined across the stops the
//! hook denied, so a retry without a STATUS block would pass on the STATUS said before the
//! deny. The transcript (`transcript_path`, JSON lines) says where each turn starts: the model's
//! texts after the last message a person or the hook wrote are the answer being judged.
//!
//! The file is the agent's, written where the worker may write too: it is opened regular-only,
//! only its last [`TAIL`] bytes are read, lines that do not parse are skipped, and anything
//! unexpected is said as why the last turn cannot be known: never the hook input's own joined
//! answer, whose STATUS may be one a deny already answered.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde_json::Value;

use validator_process::files::{self, Links};

/// Opens an agent's record (a transcript, a rollout file) for reading if it is a regular file
/// reached through no link at all (`openat2` with `RESOLVE_NO_SYMLINKS`): a worker runs as the
/// same user as its CLI, so a link it planted in the record's directories, or in their place,
/// cannot be told from one the operator made; a CLI's data directory is named at its real path
/// (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`, `GEMINI_CLI_HOME`) instead. Where the kernel has no
/// `openat2`, only a link at the path itself is refused.
pub fn open(path: &Path) -> std::io::Result<std::fs::File> {
    use nix::fcntl::{AT_FDCWD, OFlag, OpenHow, ResolveFlag, openat2};
    let how = OpenHow::new()
        .flags(OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC | OFlag::O_NOCTTY)
        .resolve(ResolveFlag::RESOLVE_NO_SYMLINKS | ResolveFlag::RESOLVE_NO_MAGICLINKS);
    let file = match openat2(AT_FDCWD, path, how) {
        Ok(fd) => std::fs::File::from(fd),
        Err(nix::errno::Errno::ENOSYS) => return files::open(path, Links::Refuse),
        Err(nix::errno::Errno::ELOOP) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a link is on its path, which is not followed here",
            ));
        }
        Err(errno) => return Err(errno.into()),
    };
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(file)
}

/// The most of a transcript's end that is read: many turns of a long session.
const TAIL: u64 = 8 * 1024 * 1024;

/// The model's texts of the last turn, in order, or why the transcript cannot say.
pub fn last_model_turn(path: &Path) -> Result<String, String> {
    if !path.is_absolute() {
        return Err("transcript_path is not an absolute path".into());
    }
    let cannot = |err: std::io::Error| err.to_string();
    let mut file = open(path).map_err(cannot)?;
    let len = file.metadata().map_err(cannot)?.len();
    let start = len.saturating_sub(TAIL);
    file.seek(SeekFrom::Start(start)).map_err(cannot)?;
    let mut bytes = Vec::new();
    file.take(TAIL).read_to_end(&mut bytes).map_err(cannot)?;
    let text = String::from_utf8_lossy(&bytes);
    let mut lines = text.lines();
    if start > 0 {
        lines.next(); // a line cut by the start of the tail
    }
    last_turn(lines).ok_or_else(|| "it holds no model turn".to_owned())
}

/// The messages of the transcript lines in order, a message written again (the same `id`)
/// replacing its earlier record, then the model texts after the last text from the user side.
fn last_turn<'a>(lines: impl Iterator<Item = &'a str>) -> Option<String> {
    let mut messages: Vec<Value> = Vec::new();
    // Where each id's record is, so a long transcript costs one pass, not one per line.
    let mut by_id: HashMap<String, usize> = HashMap::new();
    for line in lines {
        let Ok(record) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let batch = match record.pointer("/$set/messages") {
            Some(Value::Array(list)) => list.clone(),
            _ if record.get("type").is_some() => vec![record],
            _ => continue,
        };
        for message in batch {
            let id = message.get("id").map(Value::to_string);
            match id.as_ref().and_then(|id| by_id.get(id)) {
                Some(&earlier) => messages[earlier] = message,
                None => {
                    if let Some(id) = id {
                        by_id.insert(id, messages.len());
                    }
                    messages.push(message);
                }
            }
        }
    }
    let mut texts = Vec::new();
    let mut saw_model = false;
    for message in messages.iter().rev() {
        match message.get("type").and_then(Value::as_str) {
            Some("gemini") => {
                saw_model = true;
                let text = content_text(message.get("content"));
                if !text.trim().is_empty() {
                    texts.push(text);
                }
            }
            Some("user") if !content_text(message.get("content")).trim().is_empty() => break,
            _ => {}
        }
    }
    if !saw_model {
        return None;
    }
    texts.reverse();
    Some(texts.join("\n"))
}

/// The most of a transcript's start read for the person's prompts: the first one (what they
/// set out to ask) is near the top.
const HEAD: u64 = 8 * 1024 * 1024;

/// The person's prompts in a Claude Code transcript or a Codex rollout, in order, from the
/// start of the file: messages of the user's role that are text, not a tool's answer, not the
/// agent's own notes (`isMeta`: a hook's feedback) and not a block the CLI wrapped in one tag
/// (`<environment_context>…`, `<hook_prompt …>…`). Empty when the file cannot say.
pub fn user_prompts(path: &Path) -> Vec<String> {
    if !path.is_absolute() {
        return Vec::new();
    }
    let Ok(file) = open(path) else {
        return Vec::new();
    };
    let mut bytes = Vec::new();
    if file.take(HEAD).read_to_end(&mut bytes).is_err() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|record| prompt_of(&record))
        .collect()
}

/// The person's words in one transcript record, if it holds them.
fn prompt_of(record: &Value) -> Option<String> {
    if record.get("isMeta").and_then(Value::as_bool) == Some(true) {
        return None;
    }
    // Claude Code: `{"type": "user", "message": {...}}`; Codex: `{"type": "response_item",
    // "payload": {"type": "message", ...}}`.
    let message = match record.get("type").and_then(Value::as_str) {
        Some("user") => record.get("message")?,
        Some("response_item") => record.get("payload")?,
        _ => return None,
    };
    if message.get("role").and_then(Value::as_str) != Some("user") {
        return None;
    }
    let content = message.get("content")?;
    let is_tool_answer = content.as_array().is_some_and(|parts| {
        parts
            .iter()
            .any(|part| part.get("type").and_then(Value::as_str) == Some("tool_result"))
    });
    let text = content_text(Some(content));
    let text = text.trim();
    (!is_tool_answer && !text.is_empty() && !wrapped_in_one_tag(text)).then(|| text.to_owned())
}

/// Whether `text` is one element the CLI wrapped around what it added itself: it opens with
/// `<name` and closes with `</name>`.
fn wrapped_in_one_tag(text: &str) -> bool {
    let Some(rest) = text.strip_prefix('<') else {
        return false;
    };
    let name: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
        .collect();
    !name.is_empty() && text.ends_with(&format!("</{name}>"))
}

/// A message's text: a string, or the `text` of its parts (a tool's answer has none).
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gemini CLI 0.61's transcript of a denied stop and its retry (shortened).
    const RETRY: &str = r##"{"sessionId": "s", "kind": "main"}
{"$set": {"messages": [{"id": "a", "type": "user", "content": [{"text": "<session_context>"}]}]}}
{"id": "b", "type": "user", "content": [{"text": "Create answer.txt."}]}
{"id": "c", "type": "gemini", "content": "I am done.\nSTATUS: OK"}
{"$set": {"lastUpdated": "x"}}
{"id": "d", "type": "user", "content": [{"text": "# validator: FAIL"}]}
{"id": "e", "type": "gemini", "content": ""}
{"id": "e", "type": "gemini", "content": "", "toolCalls": [{"name": "write_file"}]}
{"id": "f", "type": "user", "content": [{"functionResponse": {"name": "write_file"}}]}
{"id": "g", "type": "gemini", "content": "Wrote answer.txt."}
"##;

    #[test]
    fn the_persons_prompts_are_read_from_claude_and_codex_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let lines = [
            r#"{"type": "queue-operation"}"#,
            r#"{"type": "user", "message": {"role": "user", "content": "Create answer.txt."}}"#,
            r#"{"type": "user", "isMeta": true, "message": {"role": "user", "content": "Stop hook feedback: FAIL"}}"#,
            r#"{"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "content": "ok"}]}}"#,
            r#"{"type": "assistant", "message": {"role": "assistant", "content": "done"}}"#,
            r#"{"type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>
<cwd>/p</cwd>
</environment_context>"}]}}"#,
            r#"{"type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "And a <b>test</b>."}]}}"#,
            "not json",
        ];
        std::fs::write(&path, lines.join("\n")).unwrap();
        assert_eq!(
            user_prompts(&path),
            ["Create answer.txt.", "And a <b>test</b>."]
        );
        assert!(user_prompts(Path::new("relative.jsonl")).is_empty());
        assert!(user_prompts(&dir.path().join("missing")).is_empty());
    }

    #[test]
    fn the_retry_is_judged_without_the_answer_before_the_deny() {
        assert_eq!(
            last_turn(RETRY.lines()).as_deref(),
            Some("Wrote answer.txt.")
        );
    }

    #[test]
    fn a_first_answer_is_the_whole_turn_and_garbage_is_skipped() {
        let first = RETRY.lines().take(4).chain(["not json", "{\"type\": 3}"]);
        assert_eq!(last_turn(first).as_deref(), Some("I am done.\nSTATUS: OK"));
        assert_eq!(last_turn(["{}", "[]"].into_iter()), None);
    }
}
