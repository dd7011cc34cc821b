//! Signed verdicts. A verdict file is only as trustworthy as the directory it sits in: where a
//! worker can write, it can write `"verdict": "PASS"`. With a signing key, every verdict the
//! validator publishes carries an HMAC-SHA256 of its content, and a reader holding the same key
//! (`validator wait`, `validator verify`, a CI step) can tell a verdict the validator wrote from
//! one edited or written by hand.
//!
//! What is signed is the *canonical JSON* of the verdict document: the document as parsed JSON,
//! without its `signature` member, object keys sorted (by their UTF-8 bytes) at every level,
//! no whitespace, strings escaped as serde_json escapes them. So re-indenting a verdict or
//! reordering its keys keeps it valid, while changing, adding or removing any value breaks it.
//! The result is stored in the document itself:
//!
//! ```json
//! {"schema": "validator.verdict/v1", "task": "svc-auth", "verdict": "FAIL", "…": "…",
//!  "signature": "hmac-sha256:3f1c…(64 lowercase hex digits)"}
//! ```
//!
//! The key is the content of a file (`VALIDATOR_KEY_FILE`, else the rules file's
//! `signing_key_file:`), surrounding whitespace trimmed, so `openssl rand -hex 32 > key` makes
//! one. A signature says who wrote a verdict, not when: it does not stop a worker that can
//! write the verdicts directory from putting back an older verdict it kept, which is why
//! verdicts belong outside staging as well.

use std::ffi::OsString;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

use super::Verdict;
use crate::error::Error;

/// The environment variable naming the key file; it wins over `signing_key_file:`.
pub const KEY_FILE_ENV: &str = "VALIDATOR_KEY_FILE";
/// What precedes the hex digest in the `signature` member.
pub const SCHEME: &str = "hmac-sha256:";
/// The member of the verdict document that holds the signature.
const MEMBER: &str = "signature";
/// A key is a secret of some dozens of bytes; a larger file is not a key.
const MAX_KEY_BYTES: u64 = 4096;
/// Verdicts are small; a document larger than this was not written by validator.
pub const MAX_DOCUMENT_BYTES: u64 = 16 * 1024 * 1024;

/// Where a key file was named, so an error can say what to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// `validator verify --key FILE`.
    Flag,
    /// `$VALIDATOR_KEY_FILE`.
    Env,
    /// `signing_key_file:` in this rules file.
    Rules(PathBuf),
}

impl fmt::Display for KeySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeySource::Flag => f.write_str("named by --key"),
            KeySource::Env => write!(f, "named by ${KEY_FILE_ENV}"),
            KeySource::Rules(rules) => {
                write!(f, "named by `signing_key_file:` in {}", rules.display())
            }
        }
    }
}

impl KeySource {
    /// What to change when the key file named this way cannot be used.
    pub fn help(&self) -> String {
        match self {
            KeySource::Flag => {
                "pass --key with the path of the key file the watcher signs with".into()
            }
            KeySource::Env => format!(
                "point ${KEY_FILE_ENV} at a readable, non-empty key file (make one with `openssl rand -hex 32 > key`), or unset it to run unsigned"
            ),
            KeySource::Rules(rules) => format!(
                "fix `signing_key_file:` in {} (a relative path is relative to its directory) or make the file readable by validator; remove the line to run unsigned",
                rules.display()
            ),
        }
    }
}

/// The signing key configured for a run, as the front end read it. A key that is named but
/// cannot be read is kept as its error: a run that must sign or verify with it fails for it,
/// and a run that needs no key is not stopped by it.
pub type Signing = Result<Option<std::sync::Arc<SigningKey>>, String>;

/// A rules file's `signing_key_file:` (resolved) and the rules file that names it.
#[derive(Debug, Clone, Copy)]
pub struct Named<'a> {
    pub key_file: &'a Path,
    pub rules_file: &'a Path,
}

/// A key file to read, and who named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyFile {
    pub path: PathBuf,
    pub source: KeySource,
}

impl KeyFile {
    /// The key file in force: `$VALIDATOR_KEY_FILE` if it is set and not empty, else the rules
    /// file's `signing_key_file:`, else none (verdicts are not signed).
    pub fn configured(rules: Option<Named<'_>>) -> Option<KeyFile> {
        choose(std::env::var_os(KEY_FILE_ENV), rules)
    }

    /// Reads the key; a key file that is named but unusable is an error, never "unsigned".
    pub fn read(&self) -> Result<SigningKey, Error> {
        let fail = |reason: String| Error::SigningKey {
            path: self.path.clone(),
            named_by: self.source.to_string(),
            help: self.source.help(),
            reason,
        };
        let bytes = validator_process::files::read(
            &self.path,
            MAX_KEY_BYTES,
            validator_process::files::Links::Follow,
        )
        .map_err(|err| match err.kind() {
            std::io::ErrorKind::InvalidData => fail(format!(
                "it is larger than {MAX_KEY_BYTES} bytes, so it is not a key"
            )),
            _ => fail(err.to_string()),
        })?;
        // A trailing newline (from `echo` or `openssl rand -hex 32 > key`) is not part of the key.
        let secret = bytes.trim_ascii();
        if secret.is_empty() {
            return Err(fail("it is empty (or only whitespace)".into()));
        }
        let mac = Hmac::<Sha256>::new_from_slice(secret).map_err(|err| fail(err.to_string()))?;
        Ok(SigningKey {
            mac,
            path: self.path.clone(),
        })
    }
}

fn choose(env: Option<OsString>, rules: Option<Named<'_>>) -> Option<KeyFile> {
    match env {
        Some(path) if !path.is_empty() => Some(KeyFile {
            path: PathBuf::from(path),
            source: KeySource::Env,
        }),
        _ => rules.map(|named| KeyFile {
            path: named.key_file.to_path_buf(),
            source: KeySource::Rules(named.rules_file.to_path_buf()),
        }),
    }
}

/// The configured key, read: `None` when no key file is configured.
pub fn configured_key(rules: Option<Named<'_>>) -> Result<Option<SigningKey>, Error> {
    KeyFile::configured(rules)
        .map(|file| file.read())
        .transpose()
}

/// A signing key, ready to use. Its `Debug` shows where it came from, never the secret.
#[derive(Clone)]
pub struct SigningKey {
    mac: Hmac<Sha256>,
    path: PathBuf,
}

impl SigningKey {
    /// The file the key was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The signature of a record of validator's other than a verdict (a person's approval): the
    /// HMAC of `value`'s canonical JSON, written as a verdict's `signature` is.
    pub fn sign_value(&self, value: &Value) -> String {
        let digest = self.digest(&canonical(value)).finalize().into_bytes();
        format!("{SCHEME}{digest:x}")
    }

    /// Whether `signature` is [`SigningKey::sign_value`]'s for `value` (compared in constant
    /// time).
    pub fn signed(&self, value: &Value, signature: &str) -> bool {
        signature
            .strip_prefix(SCHEME)
            .and_then(decode_hex)
            .is_some_and(|digest| self.digest(&canonical(value)).verify_slice(&digest).is_ok())
    }

    fn digest(&self, canonical: &str) -> Hmac<Sha256> {
        let mut mac = self.mac.clone();
        mac.update(canonical.as_bytes());
        mac
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// Why a verdict document does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("unsigned: it carries no signature")]
    Unsigned,
    #[error("invalid signature: the verdict was edited after signing or signed with another key")]
    Mismatch,
    /// A key twice in one object: JSON readers disagree on which one counts (serde_json and
    /// Python keep the last, others the first), so what was signed is not what every reader
    /// reads. validator never writes one.
    #[error(
        "ambiguous: it holds the key `{key}` twice{place}, and JSON readers disagree on which one counts; validator never writes such a document"
    )]
    DuplicateKey { key: String, place: String },
    #[error("cannot be checked: {0}")]
    Malformed(String),
}

/// Signs `verdict` in place: its `signature` becomes the HMAC of its canonical JSON.
pub fn sign(verdict: &mut Verdict, key: &SigningKey) {
    verdict.signature = None;
    // A verdict is strings, numbers and lists, which always serialise; were it ever not to,
    // the verdict stays unsigned, and a reader holding the key refuses it rather than trusts it.
    if let Ok(value) = serde_json::to_value(&*verdict) {
        let digest = key.digest(&canonical(&value)).finalize().into_bytes();
        verdict.signature = Some(format!("{SCHEME}{digest:x}"));
    }
}

/// Checks the signature of a verdict document as it is on disk: every member but `signature`
/// is covered, including any the `Verdict` type does not know, and a document with a key twice
/// in any object never verifies ([`parse_strict`]).
pub fn verify(document: &str, key: &SigningKey) -> Result<(), VerifyError> {
    let mut value = parse_strict(document)?;
    let Some(object) = value.as_object_mut() else {
        return Err(VerifyError::Malformed(
            "it is not a JSON object, so not a verdict document".into(),
        ));
    };
    let signature = match object.remove(MEMBER) {
        None | Some(Value::Null) => return Err(VerifyError::Unsigned),
        Some(Value::String(signature)) => signature,
        Some(_) => {
            return Err(VerifyError::Malformed(format!(
                "its `{MEMBER}` is not a string"
            )));
        }
    };
    let Some(hex) = signature.strip_prefix(SCHEME) else {
        return Err(VerifyError::Malformed(format!(
            "its `{MEMBER}` does not start with `{SCHEME}`, the only scheme validator knows"
        )));
    };
    // Digits that are not a digest are a signature that does not match, like any other edit.
    let digest = decode_hex(hex).ok_or(VerifyError::Mismatch)?;
    key.digest(&canonical(&value))
        .verify_slice(&digest)
        .map_err(|_| VerifyError::Mismatch)
}

/// A verdict document as JSON, refused when any object in it holds a key twice: a reader
/// that keeps the first would read another document than the one signed (serde_json keeps the
/// last).
pub fn parse_strict(document: &str) -> Result<Value, VerifyError> {
    match serde_json::from_str::<Unique>(document) {
        Ok(Unique(value)) => Ok(value),
        Err(err) => {
            let message = err.to_string();
            match message.strip_prefix(DUPLICATE) {
                Some(rest) => {
                    let (key, _) = rest.rsplit_once(DUPLICATE_END).unwrap_or((rest, ""));
                    let key: String = serde_json::from_str(key).unwrap_or_else(|_| key.into());
                    Err(VerifyError::DuplicateKey {
                        key: validator_text::one_line(&key),
                        place: format!(" (line {}, column {})", err.line(), err.column()),
                    })
                }
                None => Err(VerifyError::Malformed(format!("it is not JSON ({err})"))),
            }
        }
    }
}

/// How [`Unique`] says a key came twice, so [`parse_strict`] can tell it from other errors:
/// the key follows as a JSON string.
const DUPLICATE: &str = "duplicate key ";
const DUPLICATE_END: &str = " in an object";

/// A JSON value read as `serde_json::Value` is, except that an object holding a key twice is
/// an error. Its depth is bounded by serde_json's recursion limit, as `Value`'s is.
struct Unique(Value);

impl<'de> serde::Deserialize<'de> for Unique {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(UniqueVisitor).map(Unique)
    }
}

struct UniqueVisitor;

impl<'de> serde::de::Visitor<'de> for UniqueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Unique(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(serde::de::Error::custom(format!(
                    "{DUPLICATE}{}{DUPLICATE_END}",
                    Value::from(key)
                )));
            }
            let Unique(value) = map.next_value()?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

/// Reads a verdict file for checking: regular files only, at most [`MAX_DOCUMENT_BYTES`]; a
/// link in its place is followed only if `links` says so (a path a person named, as `verify`
/// takes, not a verdict in the verdicts directory).
pub fn read_document(
    path: &Path,
    links: validator_process::files::Links,
) -> std::io::Result<String> {
    let file = validator_process::files::open(path, links)?;
    let mut bytes = Vec::new();
    file.take(MAX_DOCUMENT_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_DOCUMENT_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "larger than {} MiB, so not a verdict",
                MAX_DOCUMENT_BYTES >> 20
            ),
        ));
    }
    String::from_utf8(bytes)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"))
}

/// The signed form of a JSON value: keys sorted at every level, no whitespace. Sorting is done
/// here rather than left to `serde_json::Map`, whose order depends on a cargo feature any
/// dependency may switch on.
fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut members: Vec<_> = map.iter().collect();
            members.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (name, member)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::from(name.as_str()).to_string());
                out.push(':');
                write_canonical(member, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if hex.len() % 2 != 0 {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::{Decision, SCHEMA, SignalInfo};

    fn key(secret: &str) -> SigningKey {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, secret).unwrap();
        KeyFile {
            path,
            source: KeySource::Flag,
        }
        .read()
        .unwrap()
    }

    fn verdict() -> Verdict {
        Verdict {
            schema: SCHEMA.into(),
            task: "svc-auth".into(),
            verdict: Decision::Fail,
            attempt: 2,
            max_attempts: 3,
            pipeline: "rust".into(),
            signal: SignalInfo {
                sha256: Some("ab".repeat(32)),
                mtime: Some("2026-11-21T10:00:00.000000000Z".into()),
                agent: Some("ag\u{e9}nt \"x\"".into()),
                status: None,
            },
            started_at: "2026-11-21T10:00:00Z".into(),
            duration_ms: 8123,
            gates: Vec::new(),
            reasons: vec!["lint: 2 findings in src/auth.rs".into()],
            warnings: Vec::new(),
            unchecked: vec!["login returns a token".into()],
            context: Some("OAuth2".into()),
            escalation: None,
            signature: None,
        }
    }

    fn signed(key: &SigningKey) -> String {
        let mut verdict = verdict();
        sign(&mut verdict, key);
        verdict.to_json()
    }

    #[test]
    fn a_signed_verdict_verifies() {
        let key = key("s3cret");
        let json = signed(&key);
        assert!(json.contains("\"signature\": \"hmac-sha256:"), "{json}");
        assert_eq!(verify(&json, &key), Ok(()));
        // Signing twice gives the same signature: the old one is not part of what is signed.
        let mut verdict: Verdict = serde_json::from_str(&json).unwrap();
        let first = verdict.signature.clone();
        sign(&mut verdict, &key);
        assert_eq!(verdict.signature, first);
    }

    #[test]
    fn an_edited_added_or_removed_member_breaks_it() {
        let key = key("s3cret");
        let json = signed(&key);
        let pass = json.replace("\"FAIL\"", "\"PASS\"");
        assert_ne!(pass, json);
        assert_eq!(verify(&pass, &key), Err(VerifyError::Mismatch));
        let reason = json.replace("2 findings", "0 findings");
        assert_eq!(verify(&reason, &key), Err(VerifyError::Mismatch));
        let added = json.replacen('{', "{\"override\": true,", 1);
        assert_eq!(verify(&added, &key), Err(VerifyError::Mismatch));
        let mut removed: Value = serde_json::from_str(&json).unwrap();
        removed.as_object_mut().unwrap().remove("reasons");
        assert_eq!(
            verify(&removed.to_string(), &key),
            Err(VerifyError::Mismatch)
        );
    }

    #[test]
    fn a_key_twice_at_any_depth_never_verifies() {
        let key = key("s3cret");
        let json = signed(&key);
        for (forged, twice) in [
            (json.replacen('{', "{\"verdict\": \"PASS\",", 1), "verdict"),
            (
                json.replace(
                    "\"verdict\": \"FAIL\"",
                    "\"verdict\": \"FAIL\", \"verdict\": \"PASS\"",
                ),
                "verdict",
            ),
            (
                json.replace("\"status\": null", "\"status\": null, \"status\": null"),
                "status",
            ),
            (
                json.replace(
                    "\"OAuth2\"",
                    "[{\"a\": 1, \"b\": {\"a\\u0000\": 1, \"a\\u0000\": 1}}]",
                ),
                "a ",
            ),
        ] {
            match verify(&forged, &key) {
                Err(VerifyError::DuplicateKey { key, place }) => {
                    assert_eq!(key, twice, "{forged}");
                    assert!(place.contains("line"), "{place}");
                }
                other => panic!("{other:?} for {forged}"),
            }
        }
        // The same text inside a string is not a key.
        let mut verdict = verdict();
        verdict.reasons = vec!["duplicate key \"x\" in an object".into()];
        sign(&mut verdict, &key);
        assert_eq!(verify(&verdict.to_json(), &key), Ok(()));
    }

    #[test]
    fn reordered_keys_and_whitespace_still_verify() {
        let key = key("s3cret");
        let json = signed(&key);
        let value: Value = serde_json::from_str(&json).unwrap();
        // Rebuild every object with its keys in reverse order, written compactly.
        fn reversed(value: &Value) -> String {
            match value {
                Value::Object(map) => {
                    let mut members: Vec<_> = map.iter().collect();
                    members.sort_by(|a, b| b.0.cmp(a.0));
                    let inner: Vec<_> = members
                        .into_iter()
                        .map(|(k, v)| format!("{} :\n {}", Value::from(k.as_str()), reversed(v)))
                        .collect();
                    format!("{{ {} }}", inner.join(" ,\t"))
                }
                Value::Array(items) => format!(
                    "[{}]",
                    items.iter().map(reversed).collect::<Vec<_>>().join(", ")
                ),
                other => other.to_string(),
            }
        }
        let shuffled = reversed(&value);
        assert!(shuffled.starts_with("{ \"warnings\""), "{shuffled}");
        assert_eq!(verify(&shuffled, &key), Ok(()));
    }

    #[test]
    fn canonical_json_sorts_keys_at_every_level() {
        let value: Value =
            serde_json::from_str(r#"{"b": [ {"z": 1, "a": "\u00e9\n"} ], "a": null}"#).unwrap();
        assert_eq!(
            canonical(&value),
            "{\"a\":null,\"b\":[{\"a\":\"é\\n\",\"z\":1}]}"
        );
    }

    #[test]
    fn unsigned_wrong_key_and_malformed_documents_are_refused() {
        let key = key("s3cret");
        assert_eq!(
            verify(&verdict().to_json(), &key),
            Err(VerifyError::Unsigned)
        );
        let json = signed(&key);
        let other = self::key("another");
        assert_eq!(verify(&json, &other), Err(VerifyError::Mismatch));
        assert!(matches!(
            verify("{not json", &key),
            Err(VerifyError::Malformed(_))
        ));
        assert!(matches!(
            verify("[1]", &key),
            Err(VerifyError::Malformed(_))
        ));
        assert!(matches!(
            verify(r#"{"signature": "sha1:00"}"#, &key),
            Err(VerifyError::Malformed(_))
        ));
        assert_eq!(
            verify(r#"{"signature": "hmac-sha256:zz"}"#, &key),
            Err(VerifyError::Mismatch)
        );
    }

    #[test]
    fn key_files_are_trimmed_and_must_not_be_empty_or_huge() {
        // `openssl rand -hex 32 > key` writes a trailing newline; it is not part of the key.
        let json = signed(&key("abc123"));
        assert_eq!(verify(&json, &key("  abc123\n")), Ok(()));
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, content: &[u8]| {
            let path = dir.path().join(name);
            std::fs::write(&path, content).unwrap();
            KeyFile {
                path,
                source: KeySource::Env,
            }
        };
        let empty = file("empty", b" \n").read().unwrap_err().to_string();
        assert!(
            empty.contains("empty") && empty.contains("VALIDATOR_KEY_FILE"),
            "{empty}"
        );
        let huge = file("huge", &[b'k'; 5000]).read().unwrap_err().to_string();
        assert!(huge.contains("larger than 4096 bytes"), "{huge}");
        let missing = KeyFile {
            path: dir.path().join("missing"),
            source: KeySource::Flag,
        };
        let missing = missing.read().unwrap_err().to_string();
        assert!(
            missing.contains("missing") && missing.contains("--key"),
            "{missing}"
        );
    }

    #[test]
    fn the_environment_wins_over_the_rules_file() {
        let rules = Named {
            key_file: Path::new("/etc/v/key"),
            rules_file: Path::new("/etc/v/validator.yaml"),
        };
        let from_rules = choose(None, Some(rules)).unwrap();
        assert!(from_rules.path.ends_with("key"));
        assert!(matches!(from_rules.source, KeySource::Rules(_)));
        let from_env = choose(Some("/run/k".into()), Some(rules)).unwrap();
        assert_eq!(from_env.path, PathBuf::from("/run/k"));
        assert_eq!(from_env.source, KeySource::Env);
        // An empty variable is unset, as for VALIDATOR_CONFIG.
        assert_eq!(choose(Some("".into()), Some(rules)), Some(from_rules));
        assert_eq!(choose(None, None), None);
    }

    #[test]
    fn debug_never_shows_the_key() {
        let shown = format!("{:?}", key("do-not-print-me"));
        assert!(!shown.contains("do-not-print-me"), "{shown}");
        assert!(shown.contains("path"), "{shown}");
    }
}
