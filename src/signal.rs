//! The done signal: the file a worker creates when it has finished, and what its body says
//! (DESIGN section 4). The body is untrusted: it is size-capped, never executed, and a body
//! that does not parse becomes a reason to fail, never a crash.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::time::SystemTime;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::error::Error;

/// Bodies larger than this are refused without being parsed.
pub const MAX_BODY: usize = 1024 * 1024;

/// What the worker reported about its own run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Report {
    pub agent: Option<String>,
    pub status: Option<String>,
    pub summary: Option<String>,
    pub reason: Option<String>,
    pub task: Option<String>,
    pub files_touched: Option<Vec<String>>,
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
    /// The parsed body, or why it could not be parsed.
    pub report: Result<Report, String>,
}

impl Signal {
    /// No signal: a run started without a done file (e.g. `check` without `--signal`).
    pub fn none() -> Self {
        Signal {
            sha256: None,
            mtime: None,
            report: Ok(Report::default()),
        }
    }

    /// Reads a done file, never more than `MAX_BODY + 1` bytes of it.
    pub fn read(path: &Path) -> Result<Self, Error> {
        let read_err = |source| Error::Read {
            path: path.to_path_buf(),
            source,
        };
        let mut file = File::open(path).map_err(read_err)?;
        let mtime = file.metadata().and_then(|m| m.modified()).ok();
        let mut body = Vec::new();
        (&mut file)
            .take(MAX_BODY as u64 + 1)
            .read_to_end(&mut body)
            .map_err(read_err)?;
        let mut signal = Signal::from_bytes(&body, mtime);
        if body.len() > MAX_BODY {
            // The identity is the whole file's hash (what `sha256sum` says), though only the
            // head was kept; the rest streams through the hasher.
            let mut hasher = Sha256::new();
            hasher.update(&body);
            std::io::copy(&mut file, &mut hasher).map_err(read_err)?;
            signal.sha256 = Some(format!("{:x}", hasher.finalize()));
        }
        Ok(signal)
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
            report,
        }
    }
}

/// Parses a body: empty, JSON (if it starts with `{`), a STATUS block, a YAML mapping, or else
/// plain text kept as the summary.
pub fn parse(text: &str) -> Result<Report, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Ok(Report::default());
    }
    if trimmed.starts_with('{') {
        return serde_json::from_str::<Report>(trimmed).map_err(|err| {
            format!("the done signal starts with `{{` but is not a valid JSON report: {err}")
        });
    }
    if let Some(report) = status_block(text) {
        return Ok(report);
    }
    // Prose often looks like YAML by accident ("Note: done"). Only a mapping that uses the
    // report's own keys is read as one; an explicit `---` document must parse.
    match yaml_serde::from_str::<yaml_serde::Value>(trimmed) {
        Ok(yaml_serde::Value::Mapping(map)) if map.keys().any(is_report_key) => {
            yaml_serde::from_value::<Report>(yaml_serde::Value::Mapping(map))
                .map_err(|err| format!("the done signal is a YAML report with a bad field: {err}"))
        }
        Err(err) if trimmed.starts_with("---") => Err(format!(
            "the done signal starts a YAML document (`---`) that does not parse: {err}"
        )),
        _ => Ok(Report {
            summary: Some(trimmed.to_owned()),
            ..Report::default()
        }),
    }
}

fn is_report_key(key: &yaml_serde::Value) -> bool {
    matches!(
        key.as_str(),
        Some("agent" | "status" | "summary" | "reason" | "task" | "files_touched")
    )
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
        assert!(Signal::from_bytes(&body, None).report.is_err());
    }

    #[test]
    fn yaml_alias_bombs_do_not_expand() {
        let bomb = "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\nstatus: [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n";
        // The parser's alias limit stops the expansion; the body is kept as text, unexpanded.
        let report = parse(bomb).unwrap();
        assert_eq!(report.declared(), Declared::Missing);
    }
}
