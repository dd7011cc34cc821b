//! Glob patterns as the rules file writes them: always relative to the task directory, `*`
//! stays within one path segment and `**` crosses them, and nothing can name a path outside.

use std::sync::OnceLock;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Deserializer};

/// A glob pattern that compiled and cannot reach outside the task directory.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(transparent)]
pub struct Pattern(String);

impl Pattern {
    pub fn new(text: &str) -> Result<Self, String> {
        let text = text.strip_prefix("./").unwrap_or(text);
        if text.is_empty() {
            return Err("empty glob pattern".into());
        }
        if text.starts_with('/') {
            return Err(format!(
                "glob `{text}` is absolute; globs are relative to the task directory, so write it without the leading `/`"
            ));
        }
        if text.split('/').any(|part| part == "..") {
            return Err(format!(
                "glob `{text}` climbs out with `..`; globs never reach outside the task directory"
            ));
        }
        build(text)?;
        Ok(Pattern(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl schemars::JsonSchema for Pattern {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Glob".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        // What `Pattern::new` refuses without compiling: absolute paths and `..` segments.
        schemars::json_schema!({
            "type": "string",
            "minLength": 1,
            "not": {"anyOf": [{"pattern": "^/"}, {"pattern": r"(^|/)\.\.(/|$)"}]},
            "description": "A glob relative to the task directory: `*` stays within one path segment, `**` crosses them, `{a,b}` matches either; never absolute, never `..`.",
            "examples": ["src/**/*.rs", "report.json"]
        })
    }
}

impl<'de> Deserialize<'de> for Pattern {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        crate::yaml::scalar::parse_str(deserializer, "a glob such as `src/**/*.rs`", Pattern::new)
    }
}

fn build(text: &str) -> Result<globset::Glob, String> {
    GlobBuilder::new(text)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|err| format!("glob `{text}` does not compile: {}", err.kind()))
}

/// A list of patterns compiled into one matcher that also says which pattern matched.
///
/// Compiled when first matched, not when made: a rules file holds many sets that one call
/// never asks (a tool hook judges one call with the whole file loaded), and compiling a set is
/// most of what loading the file costs.
#[derive(Debug, Clone)]
pub struct PatternSet {
    patterns: Vec<Pattern>,
    set: OnceLock<GlobSet>,
}

impl PatternSet {
    pub fn new(patterns: &[Pattern]) -> Self {
        PatternSet {
            patterns: patterns.to_vec(),
            set: OnceLock::new(),
        }
    }

    fn set(&self) -> &GlobSet {
        self.set.get_or_init(|| {
            let mut builder = GlobSetBuilder::new();
            for pattern in &self.patterns {
                // Every Pattern parsed when it was made, so this cannot fail.
                if let Ok(glob) = build(pattern.as_str()) {
                    builder.add(glob);
                }
            }
            builder.build().unwrap_or_else(|_| GlobSet::empty())
        })
    }

    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    pub fn is_match(&self, path: &str) -> bool {
        self.set().is_match(path)
    }

    /// Indexes of the patterns that match `path`.
    pub fn matching(&self, path: &str) -> Vec<usize> {
        self.set().matches(path)
    }

    pub fn patterns(&self) -> &[Pattern] {
        &self.patterns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(patterns: &[&str]) -> PatternSet {
        let patterns: Vec<Pattern> = patterns.iter().map(|p| Pattern::new(p).unwrap()).collect();
        PatternSet::new(&patterns)
    }

    #[test]
    fn star_stays_in_one_segment_and_double_star_crosses() {
        let globs = set(&["*.json", "src/**/*.rs"]);
        assert!(globs.is_match("report.json"));
        assert!(!globs.is_match("sub/report.json"));
        assert!(globs.is_match("src/a/b/c.rs"));
        assert!(globs.is_match("src/c.rs"));
    }

    #[test]
    fn refuses_patterns_that_leave_the_task_directory() {
        assert!(Pattern::new("/etc/passwd").is_err());
        assert!(Pattern::new("../secrets/*").is_err());
        assert!(Pattern::new("a/../../b").is_err());
        assert!(Pattern::new("src/[").is_err());
        assert_eq!(Pattern::new("./src/*.rs").unwrap().as_str(), "src/*.rs");
    }
}
