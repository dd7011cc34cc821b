//! `schema`: every JSON or YAML file matching `files` validates against a JSON Schema (drafts 4
//! to 2020-12, picked from `$schema`). The schema is compiled once per run of the gate; `$ref`
//! may name local files, never a URL: the validator does not fetch anything. Documents are
//! read and checked on every core at once.

use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

use super::{About, Context, KeyError, MAX_FINDINGS, Outcome, Required, RuleDef};
use crate::globs::PatternSet;
use crate::rules::spec::{GateSpec, RuleKind};
use crate::taskdir;
use crate::verdict::Finding;

/// Default largest document read: 10 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 10 * 1024 * 1024;
const MAX_SCHEMA_BYTES: u64 = 16 * 1024 * 1024;
/// Longest finding message, in characters: the validator's messages quote the offending
/// instance, which may be the whole (10 MiB) document.
const MAX_MESSAGE_CHARS: usize = 300;

/// Documents checked at once, at most.
const MAX_THREADS: usize = 8;

#[derive(Debug, Clone)]
pub struct Schema {
    schema: PathBuf,
    files: PatternSet,
    max_bytes: u64,
}

impl RuleDef for Schema {
    const ABOUT: About = About {
        keys: &["schema", "files", "max_bytes"],
        required: Required::All(&["schema", "files"]),
        cacheable: true,
        shows_timeout: false,
    };

    fn from_spec(spec: &GateSpec, rules_dir: &Path) -> Result<Self, KeyError> {
        let Some(schema) = &spec.schema else {
            return Err(KeyError::missing(
                "schema",
                RuleKind::Schema,
                "schemas/report.schema.json",
            ));
        };
        let Some(files) = spec.files.as_deref().filter(|f| !f.is_empty()) else {
            return Err(KeyError::missing(
                "files",
                RuleKind::Schema,
                "[\"report.json\"]",
            ));
        };
        Ok(Schema {
            schema: rules_dir.join(schema),
            files: PatternSet::new(files),
            max_bytes: spec.max_bytes.unwrap_or(DEFAULT_MAX_BYTES),
        })
    }

    fn run(&self, ctx: &Context<'_>) -> Outcome {
        let validator = match self.compile() {
            Ok(validator) => validator,
            Err(why) => return Outcome::error(why),
        };
        let listing = taskdir::list(ctx.task);
        let documents: Vec<&taskdir::Entry> = listing
            .files
            .iter()
            .filter(|e| self.files.is_match(&e.rel))
            .collect();
        let reader = taskdir::Reader::new(ctx.task);
        let mut found = self.check_all(&validator, &reader, &documents);
        let mut findings = Vec::new();
        let mut checked = 0usize;
        // Taken in the documents' order, so the verdict does not depend on the threads'.
        for slot in &mut found {
            checked += 1;
            if findings.len() >= MAX_FINDINGS {
                break;
            }
            findings.append(slot.get_or_insert_with(Vec::new));
        }
        for link in listing
            .escaping_links
            .iter()
            .filter(|l| self.files.is_match(l))
        {
            findings.push(Finding::in_file(
                link,
                "is a link that points outside the task directory; it was not read",
            ));
        }
        if checked == 0 && findings.is_empty() {
            let globs: Vec<&str> = self.files.patterns().iter().map(|p| p.as_str()).collect();
            return Outcome::fail(format!(
                "no file matches `files: [{}]`; the task must produce it",
                globs.join(", ")
            ));
        }
        let ok = format!(
            "{checked} document{} valid",
            if checked == 1 { "" } else { "s" }
        );
        Outcome::from_findings(findings, &ok, |n| format!("{n} schema problems"))
    }

    fn preflight(&self) -> Option<String> {
        self.compile().err()
    }

    fn definition_files(&self) -> Vec<&Path> {
        vec![&self.schema]
    }
}

impl Schema {
    /// Each document's findings, checked on every core: documents are handed out in order, and
    /// no new one is started once [`MAX_FINDINGS`] are found, so those checked are always a
    /// prefix of the list (`None` marks the rest).
    fn check_all(
        &self,
        validator: &jsonschema::Validator,
        reader: &taskdir::Reader<'_>,
        documents: &[&taskdir::Entry],
    ) -> Vec<Option<Vec<Finding>>> {
        let next = AtomicUsize::new(0);
        let found = AtomicUsize::new(0);
        let work = || {
            let mut done = Vec::new();
            while found.load(Ordering::Relaxed) < MAX_FINDINGS {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(entry) = documents.get(index) else {
                    break;
                };
                let findings = self.check_one(validator, reader, entry);
                found.fetch_add(findings.len(), Ordering::Relaxed);
                done.push((index, findings));
            }
            done
        };
        // Each thread holds one parsed document, up to `max_bytes` and several times that
        // once parsed: on a large machine, memory rather than cores sets the bound.
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(MAX_THREADS)
            .min(documents.len());
        let done: Vec<_> = if threads <= 1 {
            work()
        } else {
            std::thread::scope(|scope| {
                let workers: Vec<_> = (0..threads).map(|_| scope.spawn(work)).collect();
                workers
                    .into_iter()
                    // A panic is the sequential run's: a document it lost must not pass.
                    .flat_map(|worker| {
                        worker
                            .join()
                            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                    })
                    .collect()
            })
        };
        let mut slots = vec![None; documents.len()];
        for (index, findings) in done {
            slots[index] = Some(findings);
        }
        slots
    }

    /// One document's findings: why it could not be read, or where it breaks the schema. The
    /// errors are collected only for a document the (faster) yes/no check rejected.
    fn check_one(
        &self,
        validator: &jsonschema::Validator,
        reader: &taskdir::Reader<'_>,
        entry: &taskdir::Entry,
    ) -> Vec<Finding> {
        let document = match self.read_document(reader, &entry.path) {
            Ok(document) => document,
            Err(finding) => {
                return vec![Finding {
                    file: Some(entry.rel.clone()),
                    ..finding
                }];
            }
        };
        if validator.is_valid(&document) {
            return Vec::new();
        }
        validator
            .iter_errors(&document)
            .take(MAX_FINDINGS)
            .map(|error| {
                let at = match error.instance_path().as_str() {
                    "" => "/".to_owned(),
                    path => path.to_owned(),
                };
                Finding::in_file(&entry.rel, clipped(format_args!("{at}: {error}")))
            })
            .collect()
    }

    fn compile(&self) -> Result<jsonschema::Validator, String> {
        let shown = self.schema.display();
        let bytes = crate::files::read(&self.schema, MAX_SCHEMA_BYTES, crate::files::Links::Follow)
            .map_err(|err| {
                format!("cannot read schema {shown}: {err}; fix `schema:` in the rules file")
            })?;
        let schema: Value = parse_document(&self.schema, &bytes)
            .map_err(|why| format!("schema {shown} does not parse: {why}"))?;
        let base = format!(
            "file://{}",
            self.schema
                .canonicalize()
                .unwrap_or_else(|_| self.schema.clone())
                .display()
        );
        jsonschema::options()
            .with_base_uri(base)
            .build(&schema)
            .map_err(|err| format!("schema {shown} is not a usable JSON Schema: {err}"))
    }

    fn read_document(&self, reader: &taskdir::Reader<'_>, path: &Path) -> Result<Value, Finding> {
        let bytes = reader
            .read_capped(path, self.max_bytes)
            .map_err(Finding::new)?
            .ok_or_else(|| {
                let size = std::fs::metadata(path)
                    .map_or("more than max_bytes".into(), |m| m.len().to_string());
                Finding::new(format!(
                    "is {size} bytes, over max_bytes ({}); it was not read",
                    self.max_bytes
                ))
            })?;
        parse_document(path, &bytes).map_err(|why| Finding {
            line: why.line,
            column: why.column,
            ..Finding::new(why.message)
        })
    }
}

struct ParseError {
    message: String,
    line: Option<u32>,
    column: Option<u32>,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.line, self.column) {
            (Some(line), Some(col)) => write!(f, "{} (line {line}, column {col})", self.message),
            _ => f.write_str(&self.message),
        }
    }
}

/// Formats a message, keeping at most [`MAX_MESSAGE_CHARS`] characters of it (then `…`); the
/// formatting stops there, so a huge instance is never copied whole.
fn clipped(message: fmt::Arguments<'_>) -> String {
    struct Clip {
        text: String,
        chars: usize,
        clipped: bool,
    }
    impl fmt::Write for Clip {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            for c in s.chars() {
                if self.chars == MAX_MESSAGE_CHARS {
                    self.clipped = true;
                    return Err(fmt::Error);
                }
                self.text.push(c);
                self.chars += 1;
            }
            Ok(())
        }
    }
    let mut clip = Clip {
        text: String::new(),
        chars: 0,
        clipped: false,
    };
    // An error here is the clip stopping the formatting.
    let _ = clip.write_fmt(message);
    if clip.clipped {
        clip.text.push('…');
    }
    clip.text
}

/// Reads JSON, or YAML for `.yaml`/`.yml` files (YAML's alias limit guards against bombs, and
/// a linear pre-check against flow collections nested too deep for its quadratic parser).
fn parse_document(path: &Path, bytes: &[u8]) -> Result<Value, ParseError> {
    let is_yaml = matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml")
    );
    if is_yaml {
        if let Err(too_deep) = crate::yaml::check_flow_depth(bytes) {
            return Err(ParseError {
                message: format!("does not parse as YAML: {too_deep}"),
                line: Some(too_deep.line as u32),
                column: None,
            });
        }
        yaml_serde::from_slice::<Value>(bytes).map_err(|err| {
            let at = err.location();
            ParseError {
                message: format!("does not parse as YAML: {err}"),
                line: at.as_ref().map(|l| l.line() as u32),
                column: at.as_ref().map(|l| l.column() as u32),
            }
        })
    } else {
        serde_json::from_slice::<Value>(bytes).map_err(|err| ParseError {
            message: format!("does not parse as JSON: {err}"),
            line: Some(err.line() as u32),
            column: Some(err.column() as u32),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_nested_too_deep_is_a_parse_error_not_a_hang() {
        let n = 5 * 1024 * 1024;
        let bomb = format!("a: {}{}", "[".repeat(n), "]".repeat(n));
        // Refused by the linear depth check (it names its limit), never handed to the parser.
        let Err(why) = parse_document(Path::new("doc.yaml"), bomb.as_bytes()) else {
            panic!("a 10 MiB bomb parsed");
        };
        assert!(why.message.contains("does not parse as YAML"), "{why}");
        assert!(why.message.contains("128"), "{why}");
        assert_eq!(why.line, Some(1));
        // JSON has its own (linear) recursion limit.
        let json = format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(parse_document(Path::new("doc.json"), json.as_bytes()).is_err());
    }

    #[test]
    fn a_large_shallow_yaml_document_passes_the_depth_check() {
        // Dense with brackets and quotes, which the check must read as a parser would: the
        // brackets inside quotes do not nest. (Its speed is the schema benchmark's.)
        let doc = "- [1, {b: \"x]\", c: 'y['}]\n".repeat(20_000);
        assert_eq!(crate::yaml::check_flow_depth(doc.as_bytes()), Ok(()));
    }

    #[test]
    fn messages_are_clipped_on_a_char_boundary() {
        let short = clipped(format_args!("/: {}", "é".repeat(10)));
        assert_eq!(short, format!("/: {}", "é".repeat(10)));
        let exact = clipped(format_args!("{}", "é".repeat(MAX_MESSAGE_CHARS)));
        assert!(!exact.ends_with('…'));
        let long = clipped(format_args!("/: {}", "é".repeat(1_000_000)));
        assert_eq!(long.chars().count(), MAX_MESSAGE_CHARS + 1);
        assert!(long.starts_with("/: éé") && long.ends_with("é…"), "{long}");
    }
}
