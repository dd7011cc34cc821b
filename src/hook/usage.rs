//! The budget breakers of a hook session: `max_time` from its first hook call, and
//! `max_tokens` from the agent's own usage records, read where the agent keeps them and only
//! as far as they grew since the last call (at most [`READ_PER_CALL`] a call), each message
//! counted once:
//!
//! | agent | record | counted |
//! |---|---|---|
//! | Claude Code | the transcript (`transcript_path`) and its subagents' (`<session>/subagents/agent-*.jsonl`) | each `message.id`'s `usage`: input, cache creation, cache read and output tokens |
//! | Codex CLI | the rollout file (`transcript_path`) | the last `token_count` event's `total_token_usage.total_tokens` (a running total) |
//! | Gemini CLI | the session file (`transcript_path`) | each message id's `tokens.total` |
//! | OpenCode | the plugin's `tokens`, a running total of its sessions' `message.updated` events | as sent |
//!
//! The records are the agent's files, read as untrusted: regular files only, never through a
//! link, capped; a record that shrank (rewritten) keeps what it counted.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::session::{Held, Source, Usage, now};
use super::{Agent, Input};
use crate::config::Rules;

/// Most bytes of one record read per hook call; the rest is read by the next.
const READ_PER_CALL: u64 = 8 * 1024 * 1024;
/// Most subagent transcripts of a session read.
const MAX_SUBAGENTS: usize = 64;
/// Message ids remembered per record to count each once (its lines are near each other).
const RECENT_IDS: usize = 32;

/// Why the session is past a budget, if it is (the figure and the limit).
pub fn over_budget(rules: &Rules, agent: Agent, input: &Input, held: &mut Held) -> Option<String> {
    let began = held.began();
    if let Some(max) = rules.defaults.max_time {
        let ran = now().saturating_sub(began);
        if ran > max.as_secs() {
            return Some(format!(
                "the session has run {} (max_time {})",
                crate::duration::format(std::time::Duration::from_secs(ran)),
                crate::duration::format(max)
            ));
        }
    }
    let max = rules.defaults.max_tokens?;
    let used = count(agent, input, &mut held.session.usage);
    (used > max).then(|| format!("{used} tokens used (max_tokens {max})"))
}

/// The session's tokens so far, its records read on from where they were left.
pub fn count(agent: Agent, input: &Input, usage: &mut Usage) -> u64 {
    let transcript = input.transcript_path.as_deref().map(PathBuf::from);
    match agent {
        Agent::Claude => {
            let mut records: Vec<PathBuf> = transcript.iter().cloned().collect();
            if let Some(main) = &transcript {
                records.extend(subagent_transcripts(main));
            }
            for record in records {
                read_on(&record, usage, claude_line);
            }
        }
        Agent::Codex => {
            if let Some(record) = &transcript {
                read_on(record, usage, codex_line);
            }
        }
        Agent::Gemini => {
            if let Some(record) = &transcript {
                read_on(record, usage, gemini_line);
            }
        }
        Agent::Opencode => {
            if let Some(tokens) = input.tokens {
                let source = usage.sources.entry("opencode".into()).or_default();
                source.counted = source.counted.max(tokens);
            }
        }
    }
    // Figures come from the agent's records and the state file: a huge one saturates (and so
    // trips `max_tokens`), never wraps or panics.
    usage.total = usage
        .sources
        .values()
        .fold(0, |total: u64, source| total.saturating_add(source.counted));
    usage.total
}

/// What one line of a record adds.
enum Counted {
    /// This message's tokens (once per id).
    Message { id: String, tokens: u64 },
    /// The record's running total so far.
    RunningTotal(u64),
}

/// Claude Code: `{"message": {"id": …, "usage": {"input_tokens", "cache_creation_input_tokens",
/// "cache_read_input_tokens", "output_tokens"}}}`.
fn claude_line(line: &Value) -> Option<Counted> {
    let message = line.get("message")?;
    let usage = message.get("usage")?;
    let field = |name: &str| usage.get(name).and_then(Value::as_u64).unwrap_or(0);
    let tokens = [
        "input_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "output_tokens",
    ]
    .into_iter()
    .fold(0, |sum: u64, name| sum.saturating_add(field(name)));
    Some(Counted::Message {
        id: message.get("id")?.as_str()?.to_owned(),
        tokens,
    })
}

/// Codex CLI: `{"type": "token_usage_record", "payload": {"thread_token_usage": {"total_tokens":
/// …}}}`, written before a response's tools run, and later `{"type": "event_msg", "payload":
/// {"type": "token_count", "info": {"total_token_usage": {"total_tokens": …}}}}`: both running
/// totals (input, cached included, and output).
fn codex_line(line: &Value) -> Option<Counted> {
    let payload = line.get("payload")?;
    let usage = if line.get("type")?.as_str()? == "token_usage_record" {
        payload.get("thread_token_usage")?
    } else if payload.get("type")?.as_str()? == "token_count" {
        payload.get("info")?.get("total_token_usage")?
    } else {
        return None;
    };
    Some(Counted::RunningTotal(usage.get("total_tokens")?.as_u64()?))
}

/// Gemini CLI: `{"id": …, "type": "gemini", "tokens": {"total": …}}`, each message written
/// twice (before and with its tool calls), the same figures both times.
fn gemini_line(line: &Value) -> Option<Counted> {
    let total = line.get("tokens")?.get("total")?.as_u64()?;
    Some(Counted::Message {
        id: line.get("id")?.as_str()?.to_owned(),
        tokens: total,
    })
}

/// Reads `record` on from where it was left, counting each complete line once.
fn read_on(record: &Path, usage: &mut Usage, read: fn(&Value) -> Option<Counted>) {
    let key = record.to_string_lossy().into_owned();
    let source = usage.sources.entry(key).or_default();
    let Ok(mut file) = crate::files::open(record, crate::files::Links::Refuse) else {
        return;
    };
    let Ok(length) = file.metadata().map(|meta| meta.len()) else {
        return;
    };
    if length < source.offset {
        // Rewritten shorter: what was counted stays counted; only what grows after counts.
        source.offset = length;
        return;
    }
    if file.seek(SeekFrom::Start(source.offset)).is_err() {
        return;
    }
    let mut bytes = Vec::new();
    if file.take(READ_PER_CALL).read_to_end(&mut bytes).is_err() {
        return;
    }
    // Only complete lines: a line being written is read whole by the next call.
    let Some(end) = bytes.iter().rposition(|&b| b == b'\n') else {
        return;
    };
    for line in bytes[..end].split(|&b| b == b'\n') {
        let Ok(value) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        match read(&value) {
            Some(Counted::Message { id, tokens }) => add_once(source, id, tokens),
            Some(Counted::RunningTotal(total)) => source.counted = source.counted.max(total),
            None => {}
        }
    }
    source.offset = source
        .offset
        .saturating_add(u64::try_from(end).unwrap_or(u64::MAX))
        .saturating_add(1);
}

fn add_once(source: &mut Source, id: String, tokens: u64) {
    if source.recent.contains(&id) {
        return;
    }
    source.counted = source.counted.saturating_add(tokens);
    if source.recent.len() == RECENT_IDS {
        source.recent.remove(0);
    }
    source.recent.push(id);
}

/// Claude Code keeps a session's subagents in `<session>/subagents/agent-*.jsonl` beside
/// `<session>.jsonl`.
fn subagent_transcripts(main: &Path) -> Vec<PathBuf> {
    let Some(dir) = main
        .file_stem()
        .map(|stem| main.with_file_name(stem).join("subagents"))
    else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            path.extension().is_some_and(|ext| ext == "jsonl")
                && path
                    .file_name()
                    .is_some_and(|name| name.to_string_lossy().starts_with("agent-"))
        })
        .collect();
    found.sort();
    found.truncate(MAX_SUBAGENTS);
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn records_are_read_on_from_where_they_were_left_each_message_once() {
        let dir = tempfile::tempdir().unwrap();
        let record = dir.path().join("s.jsonl");
        let line = |id: &str, input: u64| {
            format!(
                "{{\"message\": {{\"id\": \"{id}\", \"usage\": {{\"input_tokens\": {input}, \"cache_creation_input_tokens\": 1, \"cache_read_input_tokens\": 2, \"output_tokens\": 3}}}}}}\n"
            )
        };
        std::fs::write(&record, line("a", 10) + &line("a", 10) + &line("b", 20)).unwrap();
        let mut usage = Usage::default();
        read_on(&record, &mut usage, claude_line);
        let counted = |usage: &Usage| usage.sources.values().map(|s| s.counted).sum::<u64>();
        assert_eq!(counted(&usage), 16 + 26);
        // A line half written is left for the next call.
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&record)
            .unwrap();
        let next = line("c", 100);
        file.write_all(&next.as_bytes()[..20]).unwrap();
        read_on(&record, &mut usage, claude_line);
        assert_eq!(counted(&usage), 42);
        file.write_all(&next.as_bytes()[20..]).unwrap();
        read_on(&record, &mut usage, claude_line);
        assert_eq!(counted(&usage), 42 + 106);
        // Rewritten shorter: nothing counted is lost.
        std::fs::write(&record, line("z", 1)).unwrap();
        read_on(&record, &mut usage, claude_line);
        assert_eq!(counted(&usage), 148);
    }

    #[test]
    fn a_running_total_counts_its_last_figure() {
        let dir = tempfile::tempdir().unwrap();
        let record = dir.path().join("rollout.jsonl");
        let event = |total: u64| {
            format!(
                "{{\"type\":\"event_msg\",\"payload\":{{\"type\":\"token_count\",\"info\":{{\"total_token_usage\":{{\"total_tokens\":{total}}}}}}}}}\n"
            )
        };
        std::fs::write(&record, event(100) + &event(250)).unwrap();
        let mut usage = Usage::default();
        read_on(&record, &mut usage, codex_line);
        assert_eq!(usage.sources.values().next().map(|s| s.counted), Some(250));
    }

    #[test]
    fn huge_figures_saturate_never_wrap() {
        let dir = tempfile::tempdir().unwrap();
        let record = dir.path().join("s.jsonl");
        let max = u64::MAX;
        std::fs::write(
            &record,
            format!(
                "{{\"message\":{{\"id\":\"a\",\"usage\":{{\"input_tokens\":{max},\"output_tokens\":2}}}}}}\n{{\"message\":{{\"id\":\"b\",\"usage\":{{\"output_tokens\":{max}}}}}}}\n"
            ),
        )
        .unwrap();
        let mut usage = Usage::default();
        read_on(&record, &mut usage, claude_line);
        assert_eq!(usage.sources.values().next().map(|s| s.counted), Some(max));
        // Counters from a state file add up without wrapping either.
        usage.sources.insert(
            "other".into(),
            Source {
                counted: max,
                ..Source::default()
            },
        );
        let input: Input = serde_json::from_str(r#"{"session_id": "s", "cwd": "/"}"#).unwrap();
        assert_eq!(count(Agent::Gemini, &input, &mut usage), max);
    }
}
