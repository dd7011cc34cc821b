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
//! The records are the agent's files, read as untrusted: regular files only, reached through
//! no link anywhere on their path ([`super::transcript::open`]), capped. Every CLI only
//! appends to its record, so the session remembers which file it read (device and inode) and
//! how far, and a digest of the bytes it read last. What cannot be counted is never counted
//! as no tokens: a record the hook's input does not name, that is missing (after the first
//! look: the agent may write it after it asks for its first tool), reached through a link or
//! no regular file, another file than the one read so far, shorter than what was read of it
//! or rewritten where it was read, a whole line that is not JSON, more subagent records than
//! [`MAX_SUBAGENTS`], or more grown since the last call than [`READ_PER_CALL`] all escalate
//! the session, with the reason (what was counted stays counted).
//! Every subagent record is read (one that has not grown costs a `stat`), so no number of
//! decoys can push a real one out of what is counted.

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::session::{Held, Source, Usage, now};
use super::{Agent, Input};
use crate::config::Rules;

/// Most bytes of a session's records read per hook call, all records together; more grown
/// since the last call cannot be counted in time.
const READ_PER_CALL: u64 = 64 * 1024 * 1024;
/// Most subagent transcripts of a session counted (the session's record keeps where each was
/// read); past it the session's tokens cannot be counted.
const MAX_SUBAGENTS: usize = 256;
/// Most entries of the subagents' directory looked at.
const MAX_ENTRIES: usize = 4096;
/// Message ids remembered per record to count each once (its lines are near each other).
const RECENT_IDS: usize = 32;
/// Bytes before where a record was read whose digest is kept, to tell it rewritten in place.
const TAIL_BYTES: u64 = 256;
/// How long the first look waits for a main record that is not there yet, and how often.
const FIRST_LOOK_WAIT: Duration = Duration::from_millis(200);
const FIRST_LOOK_POLL: Duration = Duration::from_millis(25);

/// Why the session is past a budget, if it is (the figure and the limit), or why its budgets
/// cannot be counted: its record cannot be read back (whatever limits are set: attempts and
/// repeated refusals are counted there too), or its tokens against `max_tokens`.
pub fn over_budget(rules: &Rules, agent: Agent, input: &Input, held: &mut Held) -> Option<String> {
    if let Some(why) = &held.unreadable {
        return Some(why.clone());
    }
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
    match count(agent, input, &mut held.session.usage) {
        Ok(used) => (used > max).then(|| format!("{used} tokens used (max_tokens {max})")),
        Err(why) => Some(format!(
            "the session's tokens cannot be counted against max_tokens {max}: {why}"
        )),
    }
}

/// The session's tokens so far, its records read on from where they were left; `Err` says
/// why they cannot all be counted (what could be is counted all the same).
pub fn count(agent: Agent, input: &Input, usage: &mut Usage) -> Result<u64, String> {
    let mut budget = READ_PER_CALL;
    let read = match agent {
        Agent::Opencode => match input.tokens {
            Some(tokens) => {
                let source = usage.sources.entry("opencode".into()).or_default();
                source.counted = source.counted.max(tokens);
                Ok(())
            }
            None => Err("the plugin sent no `tokens`".to_owned()),
        },
        _ => named_transcript(input).and_then(|main| {
            let reader = match agent {
                Agent::Codex => codex_line,
                Agent::Gemini => gemini_line,
                _ => claude_line,
            };
            let main_read = read_on(&main, usage, reader, &mut budget, true);
            if agent != Agent::Claude {
                return main_read;
            }
            // Each subagent's record is read even when another cannot be.
            let mut problems: Vec<String> = main_read.err().into_iter().collect();
            match subagent_transcripts(&main) {
                Ok(records) => problems.extend(records.iter().filter_map(|record| {
                    read_on(record, usage, claude_line, &mut budget, false).err()
                })),
                Err(why) => problems.push(why),
            }
            match problems.len() {
                0 => Ok(()),
                1 => Err(problems.remove(0)),
                n => Err(format!("{} (and {} more)", problems.remove(0), n - 1)),
            }
        }),
    };
    // Figures come from the agent's records and the state file: a huge one saturates (and so
    // trips `max_tokens`), never wraps or panics.
    usage.total = usage
        .sources
        .values()
        .fold(0, |total: u64, source| total.saturating_add(source.counted));
    read.map(|()| usage.total)
}

/// The transcript the hook's input names, as an absolute path.
fn named_transcript(input: &Input) -> Result<PathBuf, String> {
    match input.transcript_path.as_deref() {
        None | Some("") => Err("the hook's input names no transcript_path".into()),
        Some(path) if !Path::new(path).is_absolute() => Err(format!(
            "transcript_path {} is not an absolute path",
            validator_text::name(path)
        )),
        Some(path) => Ok(PathBuf::from(path)),
    }
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

/// Reads `record` on from where it was left, counting each complete line once, at most
/// `budget` bytes (what it reads is taken from it); `Err` says why it cannot be counted: it
/// cannot be opened as a regular file (missing, a link on its path), it is not the file read
/// so far, is shorter than what was read or was rewritten where it was read, or more of it is
/// unread than the budget left. The `main_record` (the one the hook's input names) is
/// remembered from the first look on, even missing or empty.
fn read_on(
    record: &Path,
    usage: &mut Usage,
    read: fn(&Value) -> Option<Counted>,
    budget: &mut u64,
    main_record: bool,
) -> Result<(), String> {
    let shown = || validator_text::name(&record.to_string_lossy()).to_string();
    let cannot = |err: std::io::Error| format!("{}: {err}", shown());
    let key = record.to_string_lossy().into_owned();
    let looked_for = usage.sources.contains_key(&key);
    let mut file = match open_record(record, main_record && !looked_for) {
        Ok(file) => file,
        // The agent may write its record only after it asks for its first tool: missing at
        // the first look (after a short wait) is nothing spent yet. Once looked for, it is
        // missing only because something removed it, and what it held cannot be counted.
        Err(err) if main_record && !looked_for && err.kind() == std::io::ErrorKind::NotFound => {
            usage.sources.insert(key, Source::main());
            return Ok(());
        }
        Err(err) => return Err(cannot(err)),
    };
    let meta = file.metadata().map_err(cannot)?;
    let (length, identity) = (meta.len(), (meta.dev(), meta.ino()));
    if let Some(source) = usage.sources.get(&key) {
        unchanged_so_far(source, &mut file, length, identity, &shown())?;
    }
    let offset = usage.sources.get(&key).map_or(0, |source| source.offset);
    if length == offset {
        // Nothing new (an empty subagent record is no source yet: a decoy costs no room in
        // the state). The main record is remembered, and which file it is.
        if main_record {
            let source = usage.sources.entry(key).or_insert_with(Source::main);
            source.file = Some(identity);
        }
        return Ok(());
    }
    let source = usage.sources.entry(key).or_default();
    source.main |= main_record;
    source.file = Some(identity);
    file.seek(SeekFrom::Start(source.offset)).map_err(cannot)?;
    let mut bytes = Vec::new();
    file.by_ref()
        .take(*budget)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    let taken = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    *budget = budget.saturating_sub(taken);
    let unread = length.saturating_sub(source.offset.saturating_add(taken));
    // Only complete lines: a line being written is read whole by the next call.
    if let Some(end) = bytes.iter().rposition(|&b| b == b'\n') {
        for line in bytes[..end].split(|&b| b == b'\n') {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            // Every CLI writes whole JSON lines: one that is not was not written by it alone (a
            // stray byte glues the CLI's next line onto it), and what it held cannot be counted.
            let parsed = serde_json::from_slice::<Value>(line).or_else(|_| {
                serde_json::from_slice::<Value>(&super::input::lone_surrogates_replaced(line))
            });
            let Ok(value) = parsed else {
                return Err(format!(
                    "{} holds a line that is not JSON (every agent CLI writes whole JSON lines)",
                    shown()
                ));
            };
            match read(&value) {
                Some(Counted::Message { id, tokens }) => add_once(source, &id, tokens),
                Some(Counted::RunningTotal(total)) => source.counted = source.counted.max(total),
                None => {}
            }
        }
        source.offset = source
            .offset
            .saturating_add(u64::try_from(end).unwrap_or(u64::MAX))
            .saturating_add(1);
        source.tail = tail_of(&mut file, source.offset).map_err(cannot)?;
    }
    if unread > 0 {
        return Err(format!(
            "{} has {unread} bytes past the {} MiB of usage records one hook call reads",
            shown(),
            READ_PER_CALL >> 20
        ));
    }
    Ok(())
}

/// Every CLI appends to its record (PROTOCOLS.md): another file in its place, one shorter
/// than what was read, or one whose bytes before where it was read changed, was not written
/// by the CLI, and what it held can no longer be read.
fn unchanged_so_far(
    source: &Source,
    file: &mut std::fs::File,
    length: u64,
    identity: (u64, u64),
    shown: &str,
) -> Result<(), String> {
    if source.file.is_some_and(|file| file != identity) {
        return Err(format!(
            "{shown} is not the file read so far (another was put in its place)"
        ));
    }
    if length < source.offset {
        return Err(format!(
            "{shown} is {length} bytes, shorter than the {} already read (it was rewritten)",
            source.offset
        ));
    }
    let tail = tail_of(file, source.offset).map_err(|err| format!("{shown}: {err}"))?;
    if source.offset > 0 && tail != source.tail {
        return Err(format!("{shown} was rewritten where it was already read"));
    }
    Ok(())
}

/// Opens a record; a main record not yet looked for (`wait`) that is missing is waited for a
/// moment, as its agent may be writing it as the hook starts.
fn open_record(record: &Path, wait: bool) -> std::io::Result<std::fs::File> {
    let mut waited = Duration::ZERO;
    loop {
        match super::transcript::open(record) {
            Err(err)
                if wait
                    && err.kind() == std::io::ErrorKind::NotFound
                    && waited < FIRST_LOOK_WAIT =>
            {
                std::thread::sleep(FIRST_LOOK_POLL);
                waited += FIRST_LOOK_POLL;
            }
            opened => return opened,
        }
    }
}

/// A digest of the bytes of `file` just before `offset` (up to [`TAIL_BYTES`]): what was
/// read last, checked at the next look so a record rewritten in place is told.
fn tail_of(file: &mut std::fs::File, offset: u64) -> std::io::Result<Option<String>> {
    if offset == 0 {
        return Ok(None);
    }
    let from = offset.saturating_sub(TAIL_BYTES);
    file.seek(SeekFrom::Start(from))?;
    let mut bytes = Vec::new();
    file.by_ref().take(offset - from).read_to_end(&mut bytes)?;
    Ok(Some(digest(&bytes)))
}

/// A short digest (hex): what the state keeps of a worker's text, whatever its length.
fn digest(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)[..12]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn add_once(source: &mut Source, id: &str, tokens: u64) {
    // Kept as a digest: an id is the worker's text, and the state must stay small.
    let id = digest(id.as_bytes());
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
/// `<session>.jsonl`: each of them, or why they cannot all be counted (the directory is a
/// link, cannot be listed, or holds more than [`MAX_SUBAGENTS`] or [`MAX_ENTRIES`]). No
/// directory: no subagents.
fn subagent_transcripts(main: &Path) -> Result<Vec<PathBuf>, String> {
    let Some(session) = main.file_stem().map(|stem| main.with_file_name(stem)) else {
        return Ok(Vec::new());
    };
    let dir = session.join("subagents");
    let shown = || validator_text::name(&dir.to_string_lossy()).to_string();
    for on_the_way in [&session, &dir] {
        match std::fs::symlink_metadata(on_the_way) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(err) => return Err(format!("{}: {err}", shown())),
            Ok(meta) if !meta.is_dir() => {
                return Err(format!(
                    "{} is not a directory (a link is not followed)",
                    validator_text::name(&on_the_way.to_string_lossy())
                ));
            }
            Ok(_) => {}
        }
    }
    let entries = std::fs::read_dir(&dir).map_err(|err| format!("{}: {err}", shown()))?;
    let mut found = Vec::new();
    for (seen, entry) in entries.enumerate() {
        if seen == MAX_ENTRIES {
            return Err(format!("{} holds more than {MAX_ENTRIES} entries", shown()));
        }
        let entry = entry.map_err(|err| format!("{}: {err}", shown()))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("agent-") && name.ends_with(".jsonl") {
            found.push(entry.path());
        }
    }
    if found.len() > MAX_SUBAGENTS {
        return Err(format!(
            "{} holds {} subagent transcripts, more than the {MAX_SUBAGENTS} counted",
            shown(),
            found.len()
        ));
    }
    found.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Reads a main record on, with a whole call's budget.
    fn read_main(
        record: &Path,
        usage: &mut Usage,
        reader: fn(&Value) -> Option<Counted>,
    ) -> Result<(), String> {
        read_on(record, usage, reader, &mut READ_PER_CALL.clone(), true)
    }

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
        read_main(&record, &mut usage, claude_line).unwrap();
        let counted = |usage: &Usage| usage.sources.values().map(|s| s.counted).sum::<u64>();
        assert_eq!(counted(&usage), 16 + 26);
        // A line half written is left for the next call.
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&record)
            .unwrap();
        let next = line("c", 100);
        file.write_all(&next.as_bytes()[..20]).unwrap();
        read_main(&record, &mut usage, claude_line).unwrap();
        assert_eq!(counted(&usage), 42);
        file.write_all(&next.as_bytes()[20..]).unwrap();
        read_main(&record, &mut usage, claude_line).unwrap();
        assert_eq!(counted(&usage), 42 + 106);
        // Rewritten shorter: it cannot be counted on, and nothing counted is lost.
        std::fs::write(&record, line("z", 1)).unwrap();
        let why = read_main(&record, &mut usage, claude_line);
        assert!(why.unwrap_err().contains("shorter"));
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
        read_main(&record, &mut usage, codex_line).unwrap();
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
        read_main(&record, &mut usage, claude_line).unwrap();
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
        assert!(count(Agent::Gemini, &input, &mut usage).is_err());
        assert_eq!(usage.total, max);
    }

    #[test]
    fn what_cannot_be_read_or_is_past_the_budget_is_not_counted_as_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let record = dir.path().join("s.jsonl");
        let line = "{\"message\":{\"id\":\"a\",\"usage\":{\"output_tokens\":5}}}\n";
        std::fs::write(&record, line.repeat(4)).unwrap();
        let mut usage = Usage::default();
        let mut budget = u64::try_from(line.len()).unwrap() * 2;
        let why = read_on(&record, &mut usage, claude_line, &mut budget, true).unwrap_err();
        assert!(why.contains("bytes past"), "{why}");
        assert_eq!(budget, 0);
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(&record, &link).unwrap();
        let why = read_on(
            &link,
            &mut usage,
            claude_line,
            &mut READ_PER_CALL.clone(),
            true,
        )
        .unwrap_err();
        assert!(why.contains("link"), "{why}");
        // A subagent's record listed and then gone cannot be counted; the main record is
        // missing once (before the agent writes it), never twice.
        let missing = dir.path().join("missing.jsonl");
        let mut look = |main| {
            read_on(
                &missing,
                &mut usage,
                claude_line,
                &mut READ_PER_CALL.clone(),
                main,
            )
        };
        assert!(look(false).is_err());
        assert!(look(true).is_ok());
        assert!(look(true).is_err());
    }

    #[test]
    fn every_subagent_record_is_read_and_past_the_cap_none_is_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("s.jsonl");
        std::fs::write(&main, "").unwrap();
        assert_eq!(subagent_transcripts(&main), Ok(Vec::new()));
        let subagents = dir.path().join("s/subagents");
        std::fs::create_dir_all(&subagents).unwrap();
        for i in 0..MAX_SUBAGENTS {
            std::fs::write(subagents.join(format!("agent-{i:04}.jsonl")), "").unwrap();
        }
        std::fs::write(subagents.join("agent-zzzz.jsonl"), "").unwrap();
        let why = subagent_transcripts(&main).unwrap_err();
        assert!(why.contains("more than"), "{why}");
        std::fs::remove_file(subagents.join("agent-0000.jsonl")).unwrap();
        assert_eq!(subagent_transcripts(&main).unwrap().len(), MAX_SUBAGENTS);
    }
}
