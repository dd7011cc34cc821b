//! The done signal: the file a worker creates when it has finished, and what its body says
//! (docs/signal.md). The body is untrusted: it is size-capped, never executed, and a body
//! that does not parse becomes a reason to fail, never a crash.

use std::borrow::Cow;
use std::io::{self, Read};
use std::path::Path;
use std::time::SystemTime;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::error::Error;

mod stream;

/// Bodies larger than this are refused without being parsed.
pub const MAX_BODY: usize = 1024 * 1024;

/// An oversized body's identity is its whole file's hash only up to this size; past it, hashing
/// would take too long (a 20 GB sparse file), and the body is refused anyway.
pub const MAX_HASHED: u64 = 64 * 1024 * 1024;

/// The keys of a report, as a YAML mapping spells them.
const REPORT_KEYS: &[&str] = &[
    "agent",
    "status",
    "summary",
    "reason",
    "task",
    "files_touched",
    "request",
];

/// What the worker reported about its own run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Report {
    pub agent: Option<String>,
    pub status: Option<String>,
    pub summary: Option<String>,
    pub reason: Option<String>,
    pub task: Option<String>,
    pub files_touched: Option<Vec<String>>,
    /// The person's own words, as whoever signalled hands them on (an orchestrator under
    /// `watch`): the `review` rule's ground truth where the front end has no other.
    pub request: Option<String>,
}

/// The status a worker declared, interpreted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Declared<'a> {
    Missing,
    Ok,
    Blocked,
    Other(&'a str),
}

impl Report {
    /// The signal's `request` as a reviewer is given it: said to come from the done file,
    /// which the worker may have written (it is where the worker writes, under `watch`), so a
    /// `review` takes it only where neither the front end nor a contract gives ground truth.
    pub fn request_for_review(&self) -> Option<String> {
        let request = self.request.as_deref().filter(|r| !r.trim().is_empty())?;
        Some(format!(
            "(from the done signal's `request`, which whoever wrote the done file wrote: the \
             worker can write it too)\n{request}"
        ))
    }

    pub fn declared(&self) -> Declared<'_> {
        match self.status.as_deref().map(str::trim) {
            None | Some("") => Declared::Missing,
            Some(s) if s.eq_ignore_ascii_case("ok") => Declared::Ok,
            Some(s) if s.eq_ignore_ascii_case("blocked") => Declared::Blocked,
            Some(other) => Declared::Other(other),
        }
    }
}

/// A done signal: its identity (hash and mtime, which make a verdict "current") and its body.
#[derive(Debug, Clone)]
pub struct Signal {
    /// Hex SHA-256 of the body; `None` when no signal was given at all.
    pub sha256: Option<String>,
    pub mtime: Option<SystemTime>,
    /// The done file's status-change time (seconds, nanoseconds). Unlike the mtime, no one but
    /// the kernel sets it, so a worker cannot replay an old signal identity with `touch -d`.
    pub changed: Option<(i64, i64)>,
    /// The parsed body, or why it could not be parsed.
    pub report: Result<Report, String>,
    /// The body as read, for readers that want the worker's own words (a reviewer).
    body: Body,
}

/// A signal's raw body, shared between clones of a task and kept out of `Debug` output.
#[derive(Clone, Default)]
struct Body(std::sync::Arc<[u8]>);

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<{} bytes>", self.0.len())
    }
}

impl Signal {
    /// No signal: a run started without a done file (e.g. `check` without `--signal`).
    pub fn none() -> Self {
        Signal {
            sha256: None,
            mtime: None,
            changed: None,
            report: Ok(Report::default()),
            body: Body::default(),
        }
    }

    /// The body as the worker wrote it, at most [`MAX_BODY`] bytes; empty when there was no
    /// signal. Untrusted text: show it, never run it.
    pub fn body(&self) -> &[u8] {
        &self.body.0
    }

    /// Reads a done file, never more than `MAX_BODY + 1` bytes of it.
    ///
    /// Only a regular file is read, and a link is never followed: the done file lies where the
    /// worker writes, and a link to a file only the validator can read (its signing key) would
    /// put that file's text before a reviewer and its hash in the verdict. A done file that is a
    /// link, a FIFO, a directory, a device or unreadable is still a signal: a refused one
    /// ([`Signal::refused`]), whose run fails saying why, so that whoever waits on it gets an
    /// answer. Only a done file that is not there at all is an error ([`Error::Read`], not found).
    ///
    /// The identity of an oversized body is the whole file's hash (what `sha256sum` says) when
    /// the file is at most [`MAX_HASHED`] bytes, else the hash of the head that was read; either
    /// way such a signal is refused.
    pub fn read(path: &Path) -> Result<Self, Error> {
        let read_err = |source| Error::Read {
            path: path.to_path_buf(),
            source,
        };
        let mut file = match open_done_file(path) {
            Ok(file) => file,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Err(read_err(err)),
            Err(err) => return Signal::refused(path, &err).map_err(read_err),
        };
        let metadata = file.metadata().ok();
        let mtime = metadata.as_ref().and_then(|m| m.modified().ok());
        let changed = metadata.as_ref().map(|m| {
            use std::os::unix::fs::MetadataExt;
            (m.ctime(), m.ctime_nsec())
        });
        let size = metadata.map(|m| m.len());
        let mut body = Vec::new();
        if let Err(err) = (&mut file).take(MAX_BODY as u64 + 1).read_to_end(&mut body) {
            return Signal::refused(path, &err).map_err(read_err);
        }
        let mut signal = Signal::from_bytes(&body, mtime);
        signal.changed = changed;
        if body.len() > MAX_BODY && size.is_some_and(|size| size <= MAX_HASHED) {
            // Only the head was kept; the rest streams through the hasher, never past
            // MAX_HASHED even if the file grows meanwhile.
            let mut hasher = Sha256::new();
            hasher.update(&body);
            std::io::copy(
                &mut (&mut file).take(MAX_HASHED.saturating_sub(body.len() as u64)),
                &mut hasher,
            )
            .map_err(read_err)?;
            signal.sha256 = Some(format!("{:x}", hasher.finalize()));
        }
        Ok(signal)
    }

    /// A done file that is there but is not a regular file validator may read (`why` says what
    /// opening or reading it met). Its identity comes from the entry itself (its kind, a link's
    /// target, its own times), never from what it points to, so a reader that meets the same
    /// entry finds the verdict current; its report is the reason the run fails.
    fn refused(path: &Path, why: &io::Error) -> io::Result<Self> {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        let entry = std::fs::symlink_metadata(path)?;
        let kind = entry.file_type();
        let (what, detail) = if kind.is_symlink() {
            let target = std::fs::read_link(path).unwrap_or_default();
            let shown = validator_text::name(&target.to_string_lossy()).into_owned();
            (
                format!(
                    "a link (to {shown}); links are not followed, so write the done file itself"
                ),
                target.as_os_str().as_bytes().to_vec(),
            )
        } else {
            let name = if kind.is_fifo() {
                Some("a FIFO")
            } else if kind.is_dir() {
                Some("a directory")
            } else if kind.is_socket() {
                Some("a socket")
            } else if kind.is_block_device() || kind.is_char_device() {
                Some("a device")
            } else {
                None
            };
            match name {
                Some(name) => (
                    format!("{name}, not a regular file; write a regular file"),
                    Vec::new(),
                ),
                None => (
                    format!("unreadable ({why}); make it a regular file validator can read"),
                    why.to_string().into_bytes(),
                ),
            }
        };
        let mut identity = Sha256::new();
        identity.update(b"validator: refused done file\0");
        identity.update(what.as_bytes());
        identity.update(b"\0");
        identity.update(&detail);
        Ok(Signal {
            sha256: Some(format!("{:x}", identity.finalize())),
            mtime: entry.modified().ok(),
            changed: Some((entry.ctime(), entry.ctime_nsec())),
            report: Err(format!("the done file is {what}")),
            body: Body::default(),
        })
    }

    pub fn from_bytes(body: &[u8], mtime: Option<SystemTime>) -> Self {
        let sha256 = Some(format!("{:x}", Sha256::digest(body)));
        let report = if body.len() > MAX_BODY {
            Err(format!(
                "the done signal's body is over {} KiB; keep it to a short STATUS block or a small JSON/YAML report",
                MAX_BODY / 1024
            ))
        } else {
            match std::str::from_utf8(body) {
                Ok(text) => parse(text),
                Err(_) => Err("the done signal's body is not UTF-8 text".into()),
            }
        };
        Signal {
            sha256,
            mtime,
            changed: None,
            report,
            body: Body(body[..body.len().min(MAX_BODY)].into()),
        }
    }
}

/// Opens a done file for reading: never through a link (`O_NOFOLLOW`), never waiting on a FIFO
/// (`O_NONBLOCK`), and only if what was opened is a regular file.
fn open_done_file(path: &Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(file)
}

/// Parses a body: empty, JSON (if it starts with `{`), a STATUS block, a YAML mapping, or else
/// plain text kept as the summary. Text that does not parse as YAML is still a summary, unless
/// it was plainly meant as a YAML report (it opens with `---` or with a report key such as
/// `status:`): then it is an error that says why, so a broken report cannot pass as prose.
pub fn parse(text: &str) -> Result<Report, String> {
    parse_body(text, Unwrap::Once)
}

/// Whether an agent's message found inside the body (a stream's final message, a hook input's
/// message) is read for another such message: once, never as deep as a worker nests them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unwrap {
    Once,
    Done,
}

/// The fields of a hook's input that hold the agent's message: a hook runner's `output` (seed
/// 001's test input), Claude Code's and Codex's `last_assistant_message`, Gemini CLI's
/// `prompt_response`.
const MESSAGE_FIELDS: [&str; 3] = ["output", "last_assistant_message", "prompt_response"];

fn parse_body(text: &str, unwrap: Unwrap) -> Result<Report, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Ok(Report::default());
    }
    if trimmed.starts_with('{') {
        let message = if stream::is_stream(trimmed) {
            // An agent CLI's JSON output: its final message is the body.
            Some(stream::final_message(trimmed)?)
        } else {
            let value: serde_json::Value = serde_json::from_str(trimmed).map_err(|err| {
                format!("the done signal starts with `{{` but is not a valid JSON report: {err}")
            })?;
            match hook_message(&value) {
                Some(message) => Some(message.to_owned()),
                None => {
                    return Report::deserialize(value).map_err(|err| {
                        format!("the done signal is a JSON report with a bad field: {err}")
                    });
                }
            }
        };
        return match (message, unwrap) {
            (Some(message), Unwrap::Once) => parse_body(&message, Unwrap::Done),
            _ => {
                Err("the agent's message is itself wrapped in JSON: write the report itself".into())
            }
        };
    }
    if let Some(report) = status_block(text) {
        return Ok(report);
    }
    // Prose often looks like YAML by accident ("Note: done"). Only a mapping that uses the
    // report's own keys is read as one.
    let summary = || {
        Ok(Report {
            summary: Some(trimmed.to_owned()),
            ..Report::default()
        })
    };
    match parse_yaml(&yaml_input(text, trimmed)) {
        Ok(yaml_serde::Value::Mapping(map)) if map.keys().any(is_report_key) => {
            yaml_serde::from_value::<Report>(yaml_serde::Value::Mapping(map))
                .map_err(|err| format!("the done signal is a YAML report with a bad field: {err}"))
        }
        Ok(_) => summary(),
        Err(why) => match report_opening(trimmed) {
            Some("---") => Err(format!(
                "the done signal starts a YAML document (`---`) that does not parse: {why}"
            )),
            Some(key) => Err(format!(
                "the done signal opens like a YAML report (`{key}:`) but is not valid YAML: {why}"
            )),
            None => summary(),
        },
    }
}

/// The agent's message when a JSON body is a hook's input saved as the done signal (no
/// `status` of its own, and one of [`MESSAGE_FIELDS`] a string).
fn hook_message(value: &serde_json::Value) -> Option<&str> {
    let object = value.as_object()?;
    if object.contains_key("status") {
        return None;
    }
    MESSAGE_FIELDS
        .iter()
        .find_map(|field| object.get(*field)?.as_str())
}

/// The text handed to the YAML parser: the trimmed body, after as many line breaks as were
/// trimmed off its head, so that the parser's line numbers are the file's.
fn yaml_input<'t>(text: &'t str, trimmed: &'t str) -> Cow<'t, str> {
    let head = &text[..text.len() - text.trim_start().len()];
    match head.matches('\n').count() {
        0 => Cow::Borrowed(trimmed),
        lines => Cow::Owned("\n".repeat(lines) + trimmed),
    }
}

/// Parses YAML, refusing first (in linear time) what is nested too deep to parse in time.
fn parse_yaml(yaml: &str) -> Result<yaml_serde::Value, String> {
    crate::yaml::check_flow_depth(yaml.as_bytes()).map_err(|too_deep| too_deep.to_string())?;
    yaml_serde::from_str::<yaml_serde::Value>(yaml).map_err(|err| err.to_string())
}

/// How a body that fails to parse as YAML shows it was meant as a report: its first line that
/// is neither blank nor a comment is `---` (returned as is) or opens with a report key and a
/// colon (the key is returned).
fn report_opening(trimmed: &str) -> Option<&'static str> {
    let line = trimmed
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty() && !line.starts_with('#'))?;
    if line.starts_with("---") {
        return Some("---");
    }
    let (quote, unquoted) = match line.chars().next() {
        Some(q @ ('"' | '\'')) => (Some(q), &line[1..]),
        _ => (None, line),
    };
    REPORT_KEYS.iter().copied().find(|key| {
        let Some(rest) = unquoted.strip_prefix(key) else {
            return false;
        };
        let rest = match quote {
            Some(q) => match rest.strip_prefix(q) {
                Some(rest) => rest,
                None => return false,
            },
            None => rest,
        };
        rest.trim_start_matches([' ', '\t']).starts_with(':')
    })
}

fn is_report_key(key: &yaml_serde::Value) -> bool {
    key.as_str().is_some_and(|key| REPORT_KEYS.contains(&key))
}

/// Reads `STATUS:` / `REASON:` / `TASK:` / `SUMMARY:` / `AGENT:` lines anywhere in the text, as an
/// agent's final message ends with them; the last occurrence of a key wins. The keys are upper
/// case, as the protocol writes them, so a YAML report's `status:` stays YAML.
fn status_block(text: &str) -> Option<Report> {
    let mut report = Report::default();
    let mut seen_status = false;
    for line in text.lines() {
        let Some((key, value)) = line.trim().split_once(':') else {
            continue;
        };
        let value = Some(value.trim().to_owned()).filter(|v| !v.is_empty());
        match key.trim() {
            "STATUS" => {
                seen_status = true;
                report.status = value;
            }
            "REASON" => report.reason = value,
            "TASK" => report.task = value,
            "SUMMARY" => report.summary = value,
            "AGENT" => report.agent = value,
            _ => {}
        }
    }
    seen_status.then_some(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_in_a_report_is_given_to_a_review_said_as_the_signals() {
        for body in [
            r#"{"status": "OK", "request": "Add divide"}"#,
            "status: OK\nrequest: Add divide\n",
        ] {
            let report = parse(body).unwrap();
            let request = report.request_for_review().unwrap();
            assert!(
                request.starts_with("(from the done signal's `request`"),
                "{request}"
            );
            assert!(request.ends_with("\nAdd divide"), "{request}");
        }
        assert_eq!(parse("STATUS: OK").unwrap().request_for_review(), None);
    }

    #[test]
    fn empty_body_reports_nothing() {
        assert_eq!(parse("  \n"), Ok(Report::default()));
    }

    #[test]
    fn reads_a_status_block_at_the_end_of_a_message() {
        let report =
            parse("I tried.\n\nSTATUS: BLOCKED\nREASON: plan says JWT\nTASK: task-3\n").unwrap();
        assert_eq!(report.declared(), Declared::Blocked);
        assert_eq!(report.reason.as_deref(), Some("plan says JWT"));
        assert_eq!(report.task.as_deref(), Some("task-3"));
    }

    #[test]
    fn reads_json_and_yaml_reports() {
        let json = parse(r#"{"agent": "a", "status": "OK", "files_touched": ["x.rs"]}"#).unwrap();
        assert_eq!(json.declared(), Declared::Ok);
        assert_eq!(json.files_touched, Some(vec!["x.rs".to_string()]));
        let yaml = parse("status: OK\nsummary: done\n").unwrap();
        assert_eq!(yaml.declared(), Declared::Ok);
    }

    #[test]
    fn a_hook_input_saved_as_the_signal_is_read_for_its_message() {
        // Seed 001's own test input.
        let seed = parse(r#"{"output": "STATUS: OK\nTask complete"}"#).unwrap();
        assert_eq!(seed.declared(), Declared::Ok);
        let blocked =
            parse(r#"{"output": "STATUS: BLOCKED\nREASON: Plan approach won't work"}"#).unwrap();
        assert_eq!(blocked.declared(), Declared::Blocked);
        assert_eq!(
            parse(r#"{"output": "Task complete"}"#).unwrap().declared(),
            Declared::Missing
        );
        let claude = parse(r#"{"session_id": "s", "last_assistant_message": "done\nSTATUS: OK"}"#);
        assert_eq!(claude.unwrap().declared(), Declared::Ok);
        // A report's own status wins over a field that happens to be named `output`.
        let report = parse(r#"{"status": "BLOCKED", "output": "STATUS: OK"}"#).unwrap();
        assert_eq!(report.declared(), Declared::Blocked);
        // Wrapped twice is not unwrapped again.
        assert!(parse(r#"{"output": "{\"output\": \"STATUS: OK\"}"}"#).is_err());
    }

    #[test]
    fn broken_json_is_an_error_but_prose_is_a_summary() {
        assert!(parse("{not json").is_err());
        assert!(parse(r#"{"files_touched": "x"}"#).is_err());
        let prose = parse("Note: all done, see: report").unwrap();
        assert_eq!(prose.declared(), Declared::Missing);
        assert_eq!(
            prose.summary.as_deref(),
            Some("Note: all done, see: report")
        );
    }

    #[test]
    fn oversized_bodies_are_refused_unparsed() {
        let body = vec![b'a'; MAX_BODY + 1];
        let signal = Signal::from_bytes(&body, None);
        assert!(signal.report.is_err());
        assert_eq!(signal.body().len(), MAX_BODY);
    }

    #[test]
    fn the_raw_body_is_kept_as_written() {
        let body = b"I did it.\n\nSTATUS: OK\n";
        let signal = Signal::from_bytes(body, None);
        assert_eq!(signal.body(), body);
        assert!(Signal::none().body().is_empty());
        assert_eq!(format!("{signal:?}").matches("STATUS").count(), 0);
    }

    #[test]
    fn a_broken_yaml_report_is_an_error_not_a_summary() {
        let why = parse("status: OK\nfiles_touched: [src/a.rs").unwrap_err();
        assert!(why.contains("YAML"), "{why}");
        assert!(why.contains("`status:`"), "{why}");
        assert!(why.contains("line 3"), "{why}");
        // Blank lines and comments before the report are skipped, and lines count from the file's
        // first line.
        let why = parse("\n\n# report\nfiles_touched: [a\n").unwrap_err();
        assert!(why.contains("line 5"), "{why}");
        let why = parse("\"summary\" : [\nstatus: OK").unwrap_err();
        assert!(why.contains("`summary:`"), "{why}");
        let why = parse("---\nstatus: [\n").unwrap_err();
        assert!(why.contains("`---`"), "{why}");
    }

    #[test]
    fn prose_that_is_not_yaml_stays_a_summary() {
        for prose in [
            "I fixed [the bug in parse: it was {off by one",
            "Note: all done, see: report\n  - and: [this",
            "statuses: [unclosed",
            "it's done: 'really",
        ] {
            let report = parse(prose).unwrap();
            assert_eq!(report.summary.as_deref(), Some(prose));
            assert_eq!(report.declared(), Declared::Missing);
        }
    }

    #[test]
    fn block_nesting_by_indentation_stops_at_the_parsers_depth_limit() {
        // 1 MiB nested about 1,400 levels deep by indentation, and half a million levels of
        // dashes on one line. The work is bounded by where parsing stopped: at the parser's
        // recursion limit, near the start, whatever follows.
        let mut body = String::from("status: OK\nsummary:\n");
        let mut indent = 1;
        while body.len() < MAX_BODY - 4 * 1024 {
            body.push_str(&" ".repeat(indent));
            body.push_str("a:\n");
            indent += 1;
        }
        let why = parse(&body).unwrap_err();
        assert!(
            why.contains("recursion limit exceeded at line 130 "),
            "{why}"
        );
        let dashes = format!("status:\n{}x", "- ".repeat(MAX_BODY / 2 - 8));
        let why = parse(&dashes).unwrap_err();
        assert!(
            why.contains("recursion limit exceeded at line 2 column 2"),
            "{why}"
        );
    }

    #[test]
    fn special_files_and_links_are_refused_signals_read_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let refused = |path: &Path, what: &str| {
            let signal = Signal::read(path).unwrap();
            let why = signal.report.clone().unwrap_err();
            assert!(why.contains(what), "{why}");
            assert!(signal.body().is_empty());
            // The same entry, read again, is the same signal.
            assert_eq!(Signal::read(path).unwrap().sha256, signal.sha256);
            signal
        };
        let fifo = dir.path().join("task.done");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        refused(&fifo, "a FIFO");
        let zero = dir.path().join("zero.done");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        refused(&zero, "a link (to /dev/zero)");
        refused(dir.path(), "a directory");
        // A link to a readable file is not followed: its target's text is neither read nor hashed.
        let secret = dir.path().join("key");
        std::fs::write(&secret, "STATUS: OK\n").unwrap();
        let link = dir.path().join("link.done");
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        let signal = refused(&link, "links are not followed");
        assert_ne!(
            signal.sha256,
            Signal::read(&secret).unwrap().sha256,
            "the target's hash"
        );
        assert!(matches!(
            Signal::read(&dir.path().join("missing.done")),
            Err(Error::Read { .. })
        ));
    }

    #[test]
    fn an_oversized_body_is_hashed_whole_only_up_to_max_hashed() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("small.done");
        let body = vec![b'x'; 2 * MAX_BODY];
        std::fs::write(&small, &body).unwrap();
        let signal = Signal::read(&small).unwrap();
        assert!(signal.report.is_err());
        assert_eq!(signal.sha256, Some(format!("{:x}", Sha256::digest(&body))));

        // A 20 GB sparse file: only its head is hashed.
        let huge = dir.path().join("huge.done");
        std::fs::File::create(&huge)
            .unwrap()
            .set_len(20_000_000_000)
            .unwrap();
        let read_before = bytes_read_by_this_thread();
        let signal = Signal::read(&huge).unwrap();
        let read = bytes_read_by_this_thread() - read_before;
        assert!(read <= 2 * (MAX_BODY as u64 + 1), "{read} bytes read");
        assert!(signal.report.is_err());
        assert_eq!(
            signal.sha256,
            Some(format!("{:x}", Sha256::digest(vec![0u8; MAX_BODY + 1])))
        );
    }

    #[test]
    fn yaml_alias_bombs_do_not_expand() {
        let bomb = "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\nstatus: [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n";
        // The parser's alias limit stops the expansion; the body is kept as text, unexpanded.
        let report = parse(bomb).unwrap();
        assert_eq!(report.declared(), Declared::Missing);
    }

    /// Bytes this thread has read through system calls (`rchar`): the work a read did, which a
    /// loaded machine cannot change.
    fn bytes_read_by_this_thread() -> u64 {
        std::fs::read_to_string("/proc/thread-self/io")
            .ok()
            .and_then(|io| {
                io.lines()
                    .find_map(|line| line.strip_prefix("rchar: "))
                    .and_then(|n| n.trim().parse().ok())
            })
            .expect("/proc/thread-self/io")
    }
}
