//! The `review` rule's own keys beyond `run:` and `env:`: several `reviewers:` and the `mode`
//! they decide in, the directories a reviewer may write (`writable:`) and the TCP ports it may
//! connect to (`network:`), as the rules file writes them and as they are checked at load.

pub use crate::rules::spec::{Mode, Network, ReviewerSpec};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Component, Path, PathBuf};

use schemars::JsonSchema;
use serde::de::{self, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Reviewer;
use crate::rules::KeyError;
use crate::rules::spec::GateSpec;

/// The port a reviewer may connect to when the gate says nothing: HTTPS, what a model's API
/// is reached by.
pub const DEFAULT_PORTS: &[u16] = &[443];

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::All => "all",
            Mode::Majority => "majority",
            Mode::Critique => "critique",
        }
    }
}

impl Network {
    /// The ports the sandbox allows; `None`: every connection.
    pub fn ports(&self) -> Option<&[u16]> {
        match self {
            Network::Any => None,
            Network::Ports(ports) => Some(ports),
        }
    }
}

impl Serialize for Network {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Network::Any => serializer.serialize_str("any"),
            Network::Ports(ports) => ports.serialize(serializer),
        }
    }
}

impl JsonSchema for Network {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Network".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "The TCP ports the reviewer may connect to, such as [443] or [443, 11434] (a local model server), or `any`.",
            "anyOf": [
                {"const": "any"},
                {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 65535}}
            ]
        })
    }
}

impl<'de> Deserialize<'de> for Network {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NetworkVisitor)
    }
}

struct NetworkVisitor;

impl<'de> Visitor<'de> for NetworkVisitor {
    type Value = Network;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of TCP ports such as [443], or `any`")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Network, E> {
        match text {
            "any" => Ok(Network::Any),
            _ => Err(E::custom(format!(
                "`network: {text}` is neither `any` nor a list of ports; write [443] (HTTPS only), [443, 11434] or any"
            ))),
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Network, A::Error> {
        let mut ports = Vec::new();
        while let Some(port) = seq.next_element::<u16>()? {
            if port == 0 {
                return Err(de::Error::custom("port 0 is no port; write 1 to 65535"));
            }
            ports.push(port);
        }
        Ok(Network::Ports(ports))
    }
}

/// The reviewers of `reviewers:`, each with the gate's `env:` and its own over it; their names
/// must be distinct, as their issues are told apart by them.
pub(super) fn panel(
    list: &[ReviewerSpec],
    gate_env: &[(String, String)],
    rules_dir: &Path,
) -> Result<Vec<Reviewer>, KeyError> {
    if list.is_empty() {
        // No one to approve is no approval: `all` of none would pass anything.
        return Err(KeyError::new(
            "reviewers",
            "`reviewers:` lists no reviewer, so nothing would review the work",
            "list at least one, e.g. `- run: [./review.sh]`, or use `run:` for one",
        ));
    }
    let mut reviewers: Vec<Reviewer> = Vec::new();
    for spec in list {
        let mut env: BTreeMap<String, String> = gate_env.iter().cloned().collect();
        for (key, value) in spec.env.iter().flatten() {
            if key.is_empty() || key.contains('=') || key.contains('\0') {
                return Err(KeyError::new(
                    "reviewers",
                    format!("`{key}` is not an environment variable name"),
                    "use names such as REVIEW_MODEL",
                ));
            }
            env.insert(key.clone(), value.clone());
        }
        if let Some(name) = &spec.name {
            if name.is_empty()
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
            {
                return Err(KeyError::new(
                    "reviewers",
                    format!("reviewer name `{name}` is not a name"),
                    "use letters, digits, `.`, `_` and `-`, such as claude or gemini-pro",
                ));
            }
        }
        let reviewer = Reviewer::new(
            spec.name.as_deref(),
            &spec.run,
            env.into_iter().collect(),
            rules_dir,
        );
        if reviewers.iter().any(|other| other.name == reviewer.name) {
            return Err(KeyError::new(
                "reviewers",
                format!("two reviewers are named `{}`", reviewer.name),
                "give each a `name:` of its own: its issues are labelled with it",
            ));
        }
        reviewers.push(reviewer);
    }
    Ok(reviewers)
}

/// `mode:` checked against the reviewers it applies to: several of them, and exactly two for
/// `critique`.
pub(super) fn mode(spec: &GateSpec, reviewers: usize) -> Result<Mode, KeyError> {
    let Some(mode) = spec.mode else {
        return Ok(Mode::All);
    };
    if spec.run.is_some() {
        return Err(KeyError::new(
            "mode",
            "`mode:` says how several `reviewers:` decide, and `run:` names one",
            "list the reviewers under `reviewers:`, or remove `mode:`",
        ));
    }
    if mode == Mode::Critique && reviewers != 2 {
        return Err(KeyError::new(
            "mode",
            format!(
                "`mode: critique` takes two reviewers (the first answers, the second critiques it), and {reviewers} are listed"
            ),
            "list two reviewers, or use `mode: all` or `mode: majority`",
        ));
    }
    Ok(mode)
}

/// A `writable:` entry as a directory: `~/…` under validator's `$HOME`, a relative one under
/// the rules file's directory, `..` refused; `Err` says why. Whether it touches the task is
/// known only at run time ([`touches`]).
pub fn writable_dir(entry: &str, rules_dir: &Path) -> Result<PathBuf, String> {
    let path = if entry == "~" || entry.starts_with("~/") {
        let home = std::env::var_os("HOME")
            .filter(|home| !home.is_empty())
            .ok_or_else(|| format!("`{entry}` names the home directory, and $HOME is not set"))?;
        PathBuf::from(home).join(entry.trim_start_matches('~').trim_start_matches('/'))
    } else {
        rules_dir.join(entry)
    };
    if path.components().any(|part| part == Component::ParentDir) {
        return Err(format!("`{entry}` goes up with `..`"));
    }
    if path.parent().is_none() {
        return Err(format!("`{entry}` is the whole file system"));
    }
    Ok(path)
}

/// Whether a reviewer writing beneath `dir` could write in `area` (it is, holds or lies inside
/// it), compared as the kernel will see them: links resolved where they exist.
pub fn touches(dir: &Path, area: &Path) -> bool {
    let real = |path: &Path| path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let (dir, area) = (real(dir), real(area));
    dir.starts_with(&area) || area.starts_with(&dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_is_ports_or_any() {
        let read = |text: &str| yaml_serde::from_str::<Network>(text).map_err(|e| e.to_string());
        assert_eq!(read("any"), Ok(Network::Any));
        assert_eq!(read("[443, 11434]"), Ok(Network::Ports(vec![443, 11434])));
        assert!(read("all").unwrap_err().contains("neither `any`"));
        assert!(read("[0]").is_err());
        assert!(read("[70000]").is_err());
    }

    #[test]
    fn writable_entries_are_anchored_and_never_climb() {
        let rules = Path::new("/srv/rules");
        assert_eq!(
            writable_dir("out", rules).unwrap(),
            PathBuf::from("/srv/rules/out")
        );
        assert_eq!(
            writable_dir("/var/x", rules).unwrap(),
            PathBuf::from("/var/x")
        );
        assert!(writable_dir("../task", rules).is_err());
        assert!(writable_dir("/", rules).is_err());
        assert!(touches(Path::new("/a/b"), Path::new("/a")));
        assert!(touches(Path::new("/a"), Path::new("/a/b")));
        assert!(!touches(Path::new("/a/c"), Path::new("/a/b")));
    }
}
