//! `schema`: every JSON or YAML file matching `files` validates against a JSON Schema (drafts 4
//! to 2020-12, picked from `$schema`, else from `draft:`, else 2020-12, which its messages then
//! say). `format` is asserted in every draft unless `formats: false`. The schema is compiled
//! once per run of the gate; `$ref` may name local files, or URLs under a `refs:` prefix, which
//! are read from the directory it maps to: the validator never fetches anything. Documents are
//! read and checked on every core at once, each thread stopping at the gate's deadline (which
//! then times the gate out: documents not checked are not valid).

pub use crate::rules::spec::Draft;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt::{self, Write as _};
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::{
    About, Context, Deadline, KeyError, MAX_FINDINGS, Outcome, Required, RuleDef, Stopped,
};
use crate::globs::PatternSet;
use crate::rules::spec::{GateSpec, RuleKind};
use crate::taskdir;
use crate::verdict::Finding;

/// Default largest document read: 10 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 10 * 1024 * 1024;
/// Largest schema read, the gate's own and each one its `$ref`s reach.
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
    formats: bool,
    draft: Option<Draft>,
    /// `refs:`, longest prefix first (the most specific mapping wins).
    refs: Vec<RefDir>,
}

impl Draft {
    const ALL: [Draft; 5] = [
        Draft::Draft4,
        Draft::Draft6,
        Draft::Draft7,
        Draft::Draft201909,
        Draft::Draft202012,
    ];

    /// As `draft:` writes it.
    pub fn name(self) -> &'static str {
        match self {
            Draft::Draft4 => "4",
            Draft::Draft6 => "6",
            Draft::Draft7 => "7",
            Draft::Draft201909 => "2019-09",
            Draft::Draft202012 => "2020-12",
        }
    }

    fn from_name(name: &str) -> Option<Draft> {
        let name = name.trim();
        Draft::ALL.into_iter().find(|draft| draft.name() == name)
    }

    fn engine(self) -> jsonschema::Draft {
        match self {
            Draft::Draft4 => jsonschema::Draft::Draft4,
            Draft::Draft6 => jsonschema::Draft::Draft6,
            Draft::Draft7 => jsonschema::Draft::Draft7,
            Draft::Draft201909 => jsonschema::Draft::Draft201909,
            Draft::Draft202012 => jsonschema::Draft::Draft202012,
        }
    }

    fn from_engine(draft: jsonschema::Draft) -> Option<Draft> {
        Draft::ALL.into_iter().find(|known| known.engine() == draft)
    }
}

impl fmt::Display for Draft {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "draft {}", self.name())
    }
}

impl Serialize for Draft {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Draft {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(DraftVisitor)
    }
}

struct DraftVisitor;

impl DraftVisitor {
    fn named<E: de::Error>(written: &str) -> Result<Draft, E> {
        Draft::from_name(written).ok_or_else(|| {
            E::custom(format!(
                "`{written}` is not a JSON Schema draft validator reads; write 4, 6, 7, 2019-09 or 2020-12"
            ))
        })
    }
}

impl Visitor<'_> for DraftVisitor {
    type Value = Draft;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON Schema draft: 4, 6, 7, 2019-09 or 2020-12")
    }

    fn visit_u64<E: de::Error>(self, number: u64) -> Result<Draft, E> {
        DraftVisitor::named(&number.to_string())
    }

    fn visit_i64<E: de::Error>(self, number: i64) -> Result<Draft, E> {
        DraftVisitor::named(&number.to_string())
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Draft, E> {
        DraftVisitor::named(text)
    }
}

impl schemars::JsonSchema for Draft {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SchemaDraft".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A JSON Schema draft: 4, 6, 7, 2019-09 or 2020-12.",
            "enum": [4, 6, 7, "4", "6", "7", "2019-09", "2020-12"]
        })
    }
}

/// One `refs:` entry: a URL prefix and the directory its `$ref`s are read from.
#[derive(Debug, Clone)]
struct RefDir {
    /// Normalised as the `$ref`s it is compared with are (lower-case scheme and host).
    prefix: String,
    /// As the rules file writes it, for messages.
    written: String,
    /// Joined to the rules file's directory.
    dir: PathBuf,
}

impl RuleDef for Schema {
    const ABOUT: About = About {
        keys: &["schema", "files", "max_bytes", "formats", "draft", "refs"],
        required: Required::All(&["schema", "files"]),
        cacheable: true,
        shows_timeout: false,
        starts_programs: false,
        runs_workers_code: false,
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
        let mut refs = match &spec.refs {
            Some(refs) => ref_dirs(refs, rules_dir)?,
            None => Vec::new(),
        };
        refs.sort_by_key(|dir| std::cmp::Reverse(dir.prefix.len()));
        Ok(Schema {
            schema: rules_dir.join(schema),
            files: PatternSet::new(files),
            max_bytes: spec.max_bytes.unwrap_or(DEFAULT_MAX_BYTES),
            formats: spec.formats.unwrap_or(true),
            draft: spec.draft,
            refs,
        })
    }

    fn run(&self, ctx: &Context<'_>) -> Outcome {
        ctx.in_time(self.judge(ctx))
    }

    fn preflight(&self) -> Option<String> {
        self.compile().err()
    }

    fn definition_files(&self) -> Vec<&Path> {
        vec![&self.schema]
    }
}

impl Schema {
    fn judge(&self, ctx: &Context<'_>) -> Outcome {
        let compiled = match self.compile() {
            Ok(compiled) => compiled,
            Err(why) => return Outcome::error(why),
        };
        let deadline = ctx.deadline();
        let listing = match ctx.list_in_time() {
            Ok(listing) => listing,
            Err(timed_out) => return timed_out,
        };
        let documents: Vec<&taskdir::Entry> = listing
            .files
            .iter()
            .filter(|e| self.files.is_match(&e.rel))
            .collect();
        let reader = taskdir::Reader::new(ctx.task);
        let mut found = self.check_all(&compiled, &reader, &documents, &deadline);
        if let Err(stopped) = deadline.check() {
            let checked = found.iter().flatten().count();
            let progress = format!("{checked} of {} documents checked", documents.len());
            let findings = found.into_iter().flatten().flatten().collect();
            return Outcome::stopped(ctx, stopped, &progress, findings);
        }
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
            validator_text::plural(checked)
        );
        Outcome::from_findings(findings, &ok, |n| format!("{n} schema problems"))
    }
}

/// Reads `refs:`: each prefix an http(s) URL ending in `/` (so `…/schemas/` never also maps
/// `…/schemas-old/`), each directory a relative path.
fn ref_dirs(refs: &BTreeMap<String, PathBuf>, rules_dir: &Path) -> Result<Vec<RefDir>, KeyError> {
    let example = "map a URL prefix to a directory, such as `refs: {\"https://example.com/schemas/\": \"schemas/\"}`";
    let mut dirs = Vec::new();
    for (written, dir) in refs {
        let normal = jsonschema::uri::from_str(written)
            .ok()
            .filter(|uri| matches!(uri.scheme().as_str(), "http" | "https"))
            .filter(|uri| uri.query().is_none() && uri.fragment().is_none())
            .map(|uri| uri.as_str().to_owned());
        let Some(prefix) = normal else {
            return Err(KeyError::new(
                "refs",
                format!("`{written}` is not an http or https URL prefix"),
                example,
            ));
        };
        if !prefix.ends_with('/') {
            return Err(KeyError::new(
                "refs",
                format!("the prefix `{written}` does not end with `/`"),
                format!("write `{written}/`, so it names a folder and not the start of a name"),
            ));
        }
        if dir.as_os_str().is_empty() {
            return Err(KeyError::new(
                "refs",
                format!("the prefix `{written}` maps to an empty directory name"),
                example,
            ));
        }
        dirs.push(RefDir {
            prefix,
            written: written.clone(),
            dir: rules_dir.join(dir),
        });
    }
    Ok(dirs)
}

/// A compiled schema, and what its findings must say along with the validator's words.
struct Compiled {
    validator: jsonschema::Validator,
    /// Said in each finding: set when no draft was named and 2020-12 was assumed.
    note: &'static str,
}

/// Said in each finding of a schema read as 2020-12 because nothing named a draft, between
/// the place and the validator's words (which the clip may cut, never this).
const ASSUMED_NOTE: &str = "(read as draft 2020-12: the schema has no `$schema`; name its draft with `draft:` on the gate or `$schema`) ";
/// Longest instance path quoted in a finding, so the note after it always fits.
const MAX_PATH_CHARS: usize = 100;

/// How a schema is compiled: what the gate's keys and the schema's `$schema` decide.
struct Build<'a> {
    /// The schema, for messages.
    shown: &'a str,
    /// The URI relative `$ref`s resolve against (the schema file's), if any.
    base: Option<String>,
    formats: bool,
    draft: Option<Draft>,
    retriever: Retriever,
}

impl Build<'_> {
    fn compile(self, schema: &Value) -> Result<Compiled, String> {
        let shown = self.shown;
        let declared = schema
            .as_object()
            .and_then(|object| object.get("$schema"))
            .and_then(Value::as_str);
        // `$schema` says what the file is written in; `draft:` is for a file that does not say.
        let (forced, dialect) = match (declared, self.draft) {
            (Some(uri), Some(draft)) => {
                match Draft::from_engine(jsonschema::Draft::from_schema_uri(uri)) {
                    Some(named) if named != draft => {
                        return Err(format!(
                            "schema {shown} says `$schema: {uri}` ({named}), but the gate says `draft: {}`; the file's `$schema` wins, so remove `draft:` or make the two agree",
                            draft.name()
                        ));
                    }
                    _ => (None, None),
                }
            }
            (Some(_), None) => (None, None),
            (None, Some(draft)) => (
                Some(draft),
                Some(format!(
                    "; it was read as {draft}, as `draft:` on the gate says (it has no `$schema`)"
                )),
            ),
            (None, None) => (
                Some(Draft::Draft202012),
                Some(
                    "; the schema has no `$schema`, so it was read as draft 2020-12: if it is written for another draft, say which with `draft:` on the gate (4, 6, 7, 2019-09) or `$schema` in the schema".to_owned(),
                ),
            ),
        };
        let mut options = jsonschema::options()
            .should_validate_formats(self.formats)
            .with_retriever(self.retriever);
        if let Some(base) = self.base {
            options = options.with_base_uri(base);
        }
        if let Some(draft) = forced {
            options = options.with_draft(draft.engine());
        }
        let note = if declared.is_none() && self.draft.is_none() {
            ASSUMED_NOTE
        } else {
            ""
        };
        options
            .build(schema)
            .map(|validator| Compiled { validator, note })
            .map_err(|err| {
                let dialect = dialect.unwrap_or_default();
                match err.kind() {
                    jsonschema::error::ValidationErrorKind::Referencing(
                        jsonschema::ReferencingError::UnknownSpecification { specification },
                    ) => {
                        let uri = clipped(format_args!("{specification}"));
                        format!(
                            "schema {shown} says `$schema: {uri}`, which is neither a draft validator knows (4, 6, 7, 2019-09, 2020-12) nor a meta-schema it can read: validator never fetches anything; write a draft's own `$schema` (such as https://json-schema.org/draft/2020-12/schema), or map the meta-schema's URL to a local copy with `refs:` on the gate"
                        )
                    }
                    jsonschema::error::ValidationErrorKind::Referencing(
                        jsonschema::ReferencingError::Unretrievable { uri, source },
                    ) => {
                        let uri = clipped(format_args!("{uri}"));
                        format!(
                            "schema {shown}: the `$ref` {uri} cannot be read: {source}{dialect}"
                        )
                    }
                    _ => {
                        let at = match err.instance_path().as_str() {
                            "" => "/".to_owned(),
                            path => path.to_owned(),
                        };
                        let clip = clipped(format_args!("{err}"));
                        format!(
                            "schema {shown} is not a usable JSON Schema: at {at}: {clip}{dialect}"
                        )
                    }
                }
            })
    }
}

/// Where a schema's `$ref`s are read from: a `file:` URI from that file (a regular file, within
/// [`MAX_SCHEMA_BYTES`]); a URL under a `refs:` prefix from the directory it maps to, never
/// from outside it; nothing else, ever.
struct Retriever {
    /// `(prefix, directory as resolved, directory as written)`, longest prefix first.
    dirs: Vec<(String, PathBuf, String)>,
}

type RetrieveError = Box<dyn std::error::Error + Send + Sync>;

impl jsonschema::Retrieve for Retriever {
    fn retrieve(&self, uri: &jsonschema::Uri<String>) -> Result<Value, RetrieveError> {
        let text = uri.as_str();
        if uri.scheme().as_str() == "file" {
            let path = PathBuf::from(OsString::from_vec(percent_decode(uri.path().as_str())?));
            return read_schema_file(&path, validator_process::files::Links::Follow);
        }
        for (prefix, dir, written) in &self.dirs {
            if let Some(rest) = text.strip_prefix(prefix.as_str()) {
                return read_beneath(dir, rest)
                    .map_err(|why| format!("{why} (under `refs:` `{prefix}` → {written})").into());
            }
        }
        let local = "validator never fetches anything; save that schema as a local file and `$ref` it by its path relative to this schema";
        let folder = match text.rfind('/') {
            Some(end) if end > text.find("://").map_or(0, |at| at + 2) => &text[..=end],
            _ => text,
        };
        Err(match uri.scheme().as_str() {
            "http" | "https" => format!(
                "{local}, or map its URL to a local directory with `refs: {{\"{folder}\": \"schemas/\"}}` on the gate"
            ),
            _ => format!("{local} (no schema here has that `$id`)"),
        }
        .into())
    }
}

/// Reads the file `rest` (a `$ref`'s path after its `refs:` prefix) names in `dir`: each
/// segment a plain name (no `..`, `.` or empty segment, no query), and the file it resolves
/// to, through any links, inside `dir`.
fn read_beneath(dir: &Path, rest: &str) -> Result<Value, String> {
    if rest.contains('?') {
        return Err(format!("`{rest}` has a query, which names no file"));
    }
    let mut path = dir.to_path_buf();
    for segment in rest.split('/') {
        let bytes = percent_decode(segment).map_err(|err| err.to_string())?;
        let name = OsString::from_vec(bytes);
        let plain = Path::new(&name).components().collect::<Vec<_>>();
        if !matches!(plain.as_slice(), [Component::Normal(one)] if *one == name) {
            return Err(format!(
                "`{rest}` is not a path inside the directory (empty, `.` or `..` segment); it was not read"
            ));
        }
        path.push(name);
    }
    let real = path
        .canonicalize()
        .map_err(|err| format!("cannot read {}: {err}", path.display()))?;
    if !real.starts_with(dir) {
        return Err(format!(
            "{} is a link that leads outside {}; it was not read",
            path.display(),
            dir.display()
        ));
    }
    // Resolved, so not a link: one put in its place since is refused.
    read_schema_file(&real, validator_process::files::Links::Refuse).map_err(|err| err.to_string())
}

/// A schema file a `$ref` names, JSON or YAML by its extension.
fn read_schema_file(
    path: &Path,
    links: validator_process::files::Links,
) -> Result<Value, RetrieveError> {
    let bytes = validator_process::files::read(path, MAX_SCHEMA_BYTES, links)
        .map_err(|err| format!("cannot read {}: {err}", path.display()))?;
    parse_document(path, &bytes)
        .map_err(|why| format!("{} does not parse: {why}", path.display()).into())
}

/// `%XX` escapes decoded, as a URI's path writes bytes it cannot hold as they are; a `%` that
/// starts no escape is refused.
fn percent_decode(text: &str) -> Result<Vec<u8>, RetrieveError> {
    let bytes = text.as_bytes();
    let stray = bytes.iter().enumerate().any(|(at, &byte)| {
        byte == b'%'
            && !bytes
                .get(at + 1..at + 3)
                .is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit))
    });
    if stray {
        return Err(format!("`{text}` has a `%` that is no escape").into());
    }
    Ok(validator_text::uri_path_bytes(text))
}

/// A path as a `file:` URI, each byte outside the unreserved set and `/` escaped.
fn file_uri(path: &Path) -> String {
    format!(
        "file://{}",
        validator_text::uri_path(path.as_os_str().as_bytes())
    )
}

impl Schema {
    /// Each document's findings, checked on every core: documents are handed out in order, and
    /// no new one is started once [`MAX_FINDINGS`] are found, so those checked are always a
    /// prefix of the list (`None` marks the rest). Past `deadline` each thread stops, and
    /// those checked are whatever each had finished.
    fn check_all(
        &self,
        compiled: &Compiled,
        reader: &taskdir::Reader<'_>,
        documents: &[&taskdir::Entry],
        deadline: &Deadline<'_>,
    ) -> Vec<Option<Vec<Finding>>> {
        let next = AtomicUsize::new(0);
        let found = AtomicUsize::new(0);
        let work = || {
            let mut done = Vec::new();
            while found.load(Ordering::Relaxed) < MAX_FINDINGS && deadline.check().is_ok() {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(entry) = documents.get(index) else {
                    break;
                };
                let Ok(findings) = self.check_one(compiled, reader, entry, deadline) else {
                    break;
                };
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

    /// One document's findings: why it could not be read, or where it breaks the schema; `Err`
    /// when `deadline` came before it was read. The errors are collected only for a document
    /// the (faster) yes/no check rejected.
    fn check_one(
        &self,
        compiled: &Compiled,
        reader: &taskdir::Reader<'_>,
        entry: &taskdir::Entry,
        deadline: &Deadline<'_>,
    ) -> Result<Vec<Finding>, Stopped> {
        let document = match self.read_document(reader, &entry.path, deadline)? {
            Ok(document) => document,
            Err(finding) => {
                return Ok(vec![Finding {
                    file: Some(entry.rel.clone()),
                    ..finding
                }]);
            }
        };
        let validator = &compiled.validator;
        if validator.is_valid(&document) {
            return Ok(Vec::new());
        }
        Ok(validator
            .iter_errors(&document)
            .take(MAX_FINDINGS)
            .map(|error| {
                let at = match error.instance_path().as_str() {
                    "" => "/".to_owned(),
                    path => path.to_owned(),
                };
                let at = clipped_to(MAX_PATH_CHARS, format_args!("{at}"));
                let note = compiled.note;
                Finding::in_file(&entry.rel, clipped(format_args!("{at}: {note}{error}")))
            })
            .collect())
    }

    fn compile(&self) -> Result<Compiled, String> {
        let shown = self.schema.display().to_string();
        let bytes = validator_process::files::read(
            &self.schema,
            MAX_SCHEMA_BYTES,
            validator_process::files::Links::Follow,
        )
        .map_err(|err| {
            format!("cannot read schema {shown}: {err}; fix `schema:` in the rules file")
        })?;
        let schema: Value = parse_document(&self.schema, &bytes)
            .map_err(|why| format!("schema {shown} does not parse: {why}"))?;
        let mut dirs = Vec::new();
        for RefDir {
            prefix,
            written,
            dir,
        } in &self.refs
        {
            let real = dir
                .canonicalize()
                .ok()
                .filter(|real| real.is_dir())
                .ok_or_else(|| {
                    format!(
                        "`refs:` maps `{written}` to {}, which is not a directory; fix `refs:` in the rules file (directories are relative to it)",
                        dir.display()
                    )
                })?;
            dirs.push((prefix.clone(), real, dir.display().to_string()));
        }
        let base = file_uri(
            &self
                .schema
                .canonicalize()
                .unwrap_or_else(|_| self.schema.clone()),
        );
        Build {
            shown: &shown,
            base: Some(base),
            formats: self.formats,
            draft: self.draft,
            retriever: Retriever { dirs },
        }
        .compile(&schema)
    }

    /// The document, or the finding that says why it is none; `Err` when `deadline` came
    /// before it was read whole.
    fn read_document(
        &self,
        reader: &taskdir::Reader<'_>,
        path: &Path,
        deadline: &Deadline<'_>,
    ) -> Result<Result<Value, Finding>, Stopped> {
        let bytes = match reader.read_capped_by(path, self.max_bytes, deadline) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => {
                let size = std::fs::metadata(path)
                    .map_or("more than max_bytes".into(), |m| m.len().to_string());
                return Ok(Err(Finding::new(format!(
                    "is {size} bytes, over max_bytes ({}); it was not read",
                    self.max_bytes
                ))));
            }
            Err(taskdir::Unread::Refused(why)) => return Ok(Err(Finding::new(why))),
            Err(taskdir::Unread::Stopped(stopped)) => return Err(stopped),
        };
        Ok(parse_document(path, &bytes).map_err(|why| Finding {
            line: why.line,
            column: why.column,
            ..Finding::new(why.message)
        }))
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
    clipped_to(MAX_MESSAGE_CHARS, message)
}

/// As [`clipped`], keeping at most `limit` characters.
fn clipped_to(limit: usize, message: fmt::Arguments<'_>) -> String {
    struct Clip {
        text: String,
        chars: usize,
        limit: usize,
        clipped: bool,
    }
    impl fmt::Write for Clip {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            for c in s.chars() {
                if self.chars == self.limit {
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
        limit,
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
    fn percent_escapes_decode_strictly_and_paths_encode_back() {
        assert_eq!(percent_decode("a%20b%2Fc").ok(), Some(b"a b/c".to_vec()));
        assert_eq!(percent_decode("%C3%A9").ok(), Some("é".as_bytes().to_vec()));
        for bad in ["%", "%2", "%+f", "%zz", "a%é"] {
            assert!(percent_decode(bad).is_err(), "{bad}");
        }
        let odd = Path::new("/tmp/odd dir #1/é%.json");
        let uri = file_uri(odd);
        assert_eq!(uri, "file:///tmp/odd%20dir%20%231/%C3%A9%25.json");
        let decoded = percent_decode(uri.trim_start_matches("file://")).unwrap_or_default();
        assert_eq!(OsString::from_vec(decoded), odd.as_os_str());
    }

    #[test]
    fn a_mapped_ref_is_read_only_from_inside_its_directory() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("vendored");
        std::fs::create_dir_all(dir.join("v1")).unwrap();
        std::fs::write(dir.join("v1/a.json"), r#"{"type": "integer"}"#).unwrap();
        std::fs::write(root.path().join("secret.json"), "{}").unwrap();
        let dir = dir.canonicalize().unwrap();
        assert_eq!(
            read_beneath(&dir, "v1/a.json").ok(),
            Some(serde_json::json!({"type": "integer"}))
        );
        for bad in [
            "",
            "v1/",
            "v1//a.json",
            "../secret.json",
            "%2e%2e/secret.json",
            "v1/%2F..%2F..%2Fsecret.json",
            "./v1/a.json",
            "v1/a.json?x=1",
            "v1/a%00.json",
        ] {
            let Err(why) = read_beneath(&dir, bad) else {
                panic!("{bad} was read");
            };
            assert!(!why.is_empty(), "{bad}");
        }
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

    /// Cases of the suite this validator is known to fail, with why (none today). A listed
    /// case that passes fails the test too, so the list stays true.
    const KNOWN_FAILURES: &[(&str, &str)] = &[];

    /// The official JSON-Schema-Test-Suite, drafts 4 to 2020-12 with `optional/` and
    /// `optional/format/`, compiled as a gate compiles a schema: `draft:` set to the suite's
    /// draft (its schemas for 4 to 7 have no `$schema`), formats asserted (but for the 2019-09
    /// and 2020-12 `format.json`, which tests the spec's default, `formats: false`), and the
    /// suite's remotes served through a `refs:` mapping of `http://localhost:1234/`. Each case
    /// passes, or is in `KNOWN_FAILURES`. Run with `--nocapture` for the pass rate per draft.
    ///
    /// The suite is not copied into this repository: `$VALIDATOR_TEST_JSON_SCHEMA_SUITE` names
    /// a copy of it (its `tests/` and `remotes/`); `.ci/run` takes the one the `jsonschema`
    /// package's source distribution on PyPI carries. Without it the test says so and passes,
    /// unless `VALIDATOR_TEST_REQUIRE_TOOLS` is set.
    #[test]
    fn the_json_schema_test_suite_passes() {
        let Some(root) = std::env::var_os("VALIDATOR_TEST_JSON_SCHEMA_SUITE") else {
            assert!(
                std::env::var_os("VALIDATOR_TEST_REQUIRE_TOOLS").is_none(),
                "$VALIDATOR_TEST_JSON_SCHEMA_SUITE is not set, and VALIDATOR_TEST_REQUIRE_TOOLS is"
            );
            eprintln!(
                "SKIPPED the JSON-Schema-Test-Suite: $VALIDATOR_TEST_JSON_SCHEMA_SUITE is not set (.ci/run sets it)"
            );
            return;
        };
        let root = std::path::PathBuf::from(root);
        let remotes = root
            .join("remotes")
            .canonicalize()
            .expect("the suite's remotes");
        let known: BTreeMap<String, String> = KNOWN_FAILURES
            .iter()
            .map(|(case, why)| ((*case).to_owned(), (*why).to_owned()))
            .collect();
        let drafts = [
            ("draft4", Draft::Draft4),
            ("draft6", Draft::Draft6),
            ("draft7", Draft::Draft7),
            ("draft2019-09", Draft::Draft201909),
            ("draft2020-12", Draft::Draft202012),
        ];
        let results: Vec<(&str, Vec<(String, bool)>)> = std::thread::scope(|scope| {
            let runs: Vec<_> = drafts
                .iter()
                .map(|&(folder, draft)| {
                    let root = &root;
                    let remotes = &remotes;
                    scope.spawn(move || (folder, run_suite_draft(root, folder, draft, remotes)))
                })
                .collect();
            runs.into_iter()
                .map(|run| run.join().expect("a draft's run"))
                .collect()
        });
        let (mut passed, mut total) = (0usize, 0usize);
        let mut unexpected = Vec::new();
        let mut stale = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for (folder, cases) in &results {
            let ok = cases.iter().filter(|(_, ok)| *ok).count();
            println!(
                "JSON-Schema-Test-Suite {folder}: {ok}/{} passed ({:.2}%)",
                cases.len(),
                100.0 * ok as f64 / cases.len().max(1) as f64
            );
            passed += ok;
            total += cases.len();
            for (case, ok) in cases {
                seen.insert(case.clone());
                match (ok, known.contains_key(case)) {
                    (false, false) => unexpected.push(case.clone()),
                    (true, true) => stale.push(case.clone()),
                    _ => {}
                }
            }
        }
        let rate = 100.0 * passed as f64 / total.max(1) as f64;
        println!("JSON-Schema-Test-Suite overall: {passed}/{total} passed ({rate:.2}%)");
        let missing: Vec<&String> = known.keys().filter(|case| !seen.contains(*case)).collect();
        assert!(
            unexpected.is_empty(),
            "{} cases failed that KNOWN_FAILURES does not list:\n{}",
            unexpected.len(),
            unexpected.join("\n")
        );
        assert!(
            stale.is_empty() && missing.is_empty(),
            "KNOWN_FAILURES lists cases that pass or do not exist; remove them:\n{stale:#?}\n{missing:#?}"
        );
        // A sanity floor for "the suite was found whole", not a target: the copy in the
        // jsonschema 4.26.0 sdist holds 7,247 cases.
        assert!(total > 7_000, "only {total} cases were found");
        assert!(rate >= 99.0, "{rate:.2}% passed, under the 99% target");
    }

    /// Each case of one draft's folder (its tests, `optional/`, then `optional/format/`) as
    /// (`folder/file: group: test`, whether it passed).
    fn run_suite_draft(
        root: &Path,
        folder: &str,
        draft: Draft,
        remotes: &Path,
    ) -> Vec<(String, bool)> {
        let tests = root.join("tests").join(folder);
        let mut files = Vec::new();
        for dir in [
            tests.clone(),
            tests.join("optional"),
            tests.join("optional/format"),
        ] {
            let mut listed: Vec<PathBuf> = std::fs::read_dir(&dir)
                .expect("a suite folder")
                .map(|entry| entry.expect("a suite file").path())
                .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
                .collect();
            listed.sort();
            files.extend(listed);
        }
        let mut cases = Vec::new();
        for file in files {
            let rel = file
                .strip_prefix(root.join("tests"))
                .expect("under tests/")
                .display()
                .to_string();
            let groups: Value =
                serde_json::from_slice(&std::fs::read(&file).expect("read")).expect("JSON");
            // The required format.json of 2019-09 and later tests the spec's default: formats
            // only annotate.
            let formats = !(rel.ends_with("/format.json")
                && matches!(draft, Draft::Draft201909 | Draft::Draft202012));
            for group in groups.as_array().expect("a list of groups") {
                let compiled = Build {
                    shown: &rel,
                    base: None,
                    formats,
                    draft: Some(draft),
                    retriever: Retriever {
                        dirs: vec![(
                            "http://localhost:1234/".to_owned(),
                            remotes.to_path_buf(),
                            "remotes".to_owned(),
                        )],
                    },
                }
                .compile(&group["schema"]);
                for test in group["tests"].as_array().expect("a list of tests") {
                    let case = format!(
                        "{rel}: {}: {}",
                        group["description"].as_str().unwrap_or_default(),
                        test["description"].as_str().unwrap_or_default()
                    );
                    let valid = test["valid"].as_bool().expect("`valid`");
                    let ok = match &compiled {
                        Ok(compiled) => {
                            let validator = &compiled.validator;
                            let judged = validator.is_valid(&test["data"]);
                            // The findings' path must agree with the yes/no check.
                            let errors = validator.iter_errors(&test["data"]).next().is_some();
                            judged == valid && errors != valid
                        }
                        Err(_) => false,
                    };
                    cases.push((case, ok));
                }
            }
        }
        cases
    }
}
