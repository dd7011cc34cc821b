//! `schema`: every JSON or YAML file matching `files` validates against a JSON Schema (drafts 4
//! to 2020-12, picked from `$schema`). The schema is compiled once per run of the gate; `$ref`
//! may name local files, never a URL: the validator does not fetch anything.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Context, KeyError, MAX_FINDINGS, Outcome};
use crate::config::raw::{GateSpec, RuleKind};
use crate::globs::PatternSet;
use crate::taskdir;
use crate::verdict::Finding;

pub const KEYS: &[&str] = &["schema", "files", "max_bytes"];

/// Default largest document read: 10 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 10 * 1024 * 1024;
const MAX_SCHEMA_BYTES: u64 = 16 * 1024 * 1024;

#[derive(Debug, Clone)]
pub struct Schema {
    schema: PathBuf,
    files: PatternSet,
    max_bytes: u64,
}

impl Schema {
    pub fn from_spec(spec: &GateSpec, rules_dir: &Path) -> Result<Self, KeyError> {
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

    pub fn run(&self, ctx: &Context<'_>) -> Outcome {
        let validator = match self.compile() {
            Ok(validator) => validator,
            Err(why) => return Outcome::error(why),
        };
        let listing = taskdir::list(ctx.task);
        let mut findings = Vec::new();
        let mut checked = 0usize;
        for entry in listing.files.iter().filter(|e| self.files.is_match(&e.rel)) {
            checked += 1;
            if findings.len() >= MAX_FINDINGS {
                break;
            }
            let document = match self.read_document(ctx, &entry.path, entry.size) {
                Ok(document) => document,
                Err(finding) => {
                    findings.push(Finding {
                        file: Some(entry.rel.clone()),
                        ..finding
                    });
                    continue;
                }
            };
            for error in validator.iter_errors(&document).take(MAX_FINDINGS) {
                let at = match error.instance_path().as_str() {
                    "" => "/".to_owned(),
                    path => path.to_owned(),
                };
                findings.push(Finding::in_file(&entry.rel, format!("{at}: {error}")));
            }
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

    pub fn preflight(&self) -> Option<String> {
        self.compile().err()
    }

    fn compile(&self) -> Result<jsonschema::Validator, String> {
        let shown = self.schema.display();
        let bytes = std::fs::File::open(&self.schema)
            .and_then(|file| {
                use std::io::Read;
                let mut bytes = Vec::new();
                file.take(MAX_SCHEMA_BYTES).read_to_end(&mut bytes)?;
                Ok(bytes)
            })
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

    fn read_document(&self, ctx: &Context<'_>, path: &Path, size: u64) -> Result<Value, Finding> {
        let too_big = |size: String| {
            Finding::new(format!(
                "is {size} bytes, over max_bytes ({}); it was not read",
                self.max_bytes
            ))
        };
        if size > self.max_bytes {
            return Err(too_big(size.to_string()));
        }
        let bytes = taskdir::read_capped(ctx.task, path, self.max_bytes)
            .map_err(Finding::new)?
            .ok_or_else(|| too_big("more than max_bytes".into()))?;
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

/// Reads JSON, or YAML for `.yaml`/`.yml` files (YAML's alias limit guards against bombs).
fn parse_document(path: &Path, bytes: &[u8]) -> Result<Value, ParseError> {
    let is_yaml = matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml")
    );
    if is_yaml {
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
