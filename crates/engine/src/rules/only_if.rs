//! `only_if:` on any gate: the gate runs only when the project has what it needs, such as a
//! tool's configuration file or a script in package.json; otherwise it is skipped and the
//! verdict says what was looked for, so a person knows what to add to have it run.
//!
//! The files are the task's, so this reads hostile input: only regular files inside the task
//! directory (never through a link out), each read up to a cap, and a walk no deeper than the
//! glob reaches unless it says `**`. In a run the look stops at the run's deadline, and what it
//! did not get to counts as present: the gate runs (and, its time gone, times out).

pub use crate::rules::spec::PresenceSpec;
use std::path::Path;

use super::KeyError;
use crate::globs::PatternSet;
use crate::task::Task;
use crate::taskdir::{self, Deadline};
use validator_text::one_line;

/// Largest file `contains` reads. A larger file, or one that cannot be read, lets the gate run:
/// when in doubt the gate judges, so a worker cannot turn it off by padding the file.
const MAX_BYTES: u64 = 1024 * 1024;

/// `only_if:` checked: the gate runs if any of these is present.
#[derive(Debug, Clone)]
pub struct OnlyIf {
    any: Vec<Presence>,
}

#[derive(Debug, Clone)]
struct Presence {
    file: PatternSet,
    /// How deep the walk goes to find `file` (`None`: the glob says `**`).
    depth: Option<usize>,
    contains: Option<super::content::Pattern>,
    key: Option<Vec<String>>,
    written: PresenceSpec,
}

impl OnlyIf {
    /// Whether `rel` (a task path) is one of the files it looks for.
    pub fn looks_at(&self, rel: &str) -> bool {
        self.any.iter().any(|presence| presence.file.is_match(rel))
    }

    pub fn from_spec(specs: &[PresenceSpec]) -> Result<OnlyIf, KeyError> {
        if specs.is_empty() {
            return Err(KeyError::new(
                "only_if",
                "`only_if:` is empty, so the gate would never run",
                "list what the gate needs, e.g. `only_if: [{file: ruff.toml}]`, or remove the key",
            ));
        }
        let any = specs
            .iter()
            .map(|spec| {
                let contains = spec
                    .contains
                    .as_deref()
                    .map(|pattern| super::content::Pattern::new("only_if", pattern))
                    .transpose()?;
                if contains.is_some() && spec.key.is_some() {
                    return Err(KeyError::new(
                        "only_if",
                        format!(
                            "`{}` has both `contains:` and `key:`",
                            one_line(spec.file.as_str())
                        ),
                        "give each entry one of them; list the file twice to accept either",
                    ));
                }
                let key = match spec.key.as_deref() {
                    None => None,
                    Some(key) if key.split('.').any(str::is_empty) => {
                        return Err(KeyError::new(
                            "only_if",
                            format!("`key: {}` has an empty part", one_line(key)),
                            "write the tables' names joined with `.`, e.g. `key: tool.ruff`",
                        ));
                    }
                    Some(key) => Some(key.split('.').map(str::to_owned).collect()),
                };
                let glob = spec.file.as_str();
                Ok(Presence {
                    file: PatternSet::new(std::slice::from_ref(&spec.file)),
                    depth: (!glob.contains("**")).then(|| glob.split('/').count()),
                    contains,
                    key,
                    written: spec.clone(),
                })
            })
            .collect::<Result<_, KeyError>>()?;
        Ok(OnlyIf { any })
    }

    /// `unless:`, checked as [`OnlyIf::from_spec`] checks `only_if:`; no `key:` (a document that
    /// does not parse cannot be said to have one, and must not turn a gate off).
    pub fn from_unless(specs: &[PresenceSpec]) -> Result<OnlyIf, KeyError> {
        if let Some(spec) = specs.iter().find(|spec| spec.key.is_some()) {
            return Err(KeyError::new(
                "unless",
                format!("`{}` in `unless:` has `key:`", one_line(spec.file.as_str())),
                "match the file's text with `contains:` instead",
            ));
        }
        OnlyIf::from_spec(specs).map_err(|err| KeyError {
            key: "unless",
            ..err
        })
    }

    /// `None` when the gate runs; otherwise why it does not, naming what was looked for.
    pub fn unmet(&self, task: &Task) -> Option<String> {
        self.unmet_within(task, None)
    }

    /// As [`OnlyIf::unmet`] in a run: past `deadline` the gate runs, what was not looked at
    /// counting as present.
    pub fn unmet_by(&self, task: &Task, deadline: &Deadline<'_>) -> Option<String> {
        self.unmet_within(task, Some(deadline))
    }

    /// `unless:` in a run: why the gate does not run when one of these is surely present
    /// (read, and matching); `None` when the gate runs. What cannot be told in time, or read,
    /// counts as absent here: when in doubt the gate judges.
    pub fn present_by(&self, task: &Task, deadline: &Deadline<'_>) -> Option<String> {
        let found = self
            .any
            .iter()
            .find(|presence| presence.holds(task, Some(deadline), false))?;
        Some(format!(
            "not run: the project has {} (`unless:`), so another gate does its work",
            found.describe()
        ))
    }

    fn unmet_within(&self, task: &Task, deadline: Option<&Deadline<'_>>) -> Option<String> {
        if self
            .any
            .iter()
            .any(|presence| presence.holds(task, deadline, true))
        {
            return None;
        }
        Some(format!(
            "not run: the project has none of {}; add one to run it",
            self.describe()
        ))
    }

    /// What the gate looks for, one line: "`ruff.toml`, `pyproject.toml` containing /…/".
    pub fn describe(&self) -> String {
        let wanted: Vec<String> = self.any.iter().map(Presence::describe).collect();
        wanted.join(", ")
    }
}

impl Presence {
    /// Whether the file is there (with what it must contain); `doubt` when that cannot be
    /// told (out of time, unreadable, too large, a pattern that cannot be built).
    fn holds(&self, task: &Task, deadline: Option<&Deadline<'_>>, doubt: bool) -> bool {
        let listing = match deadline {
            None => taskdir::list_to_depth(task, self.depth),
            Some(deadline) => match taskdir::list_to_depth_by(task, self.depth, deadline) {
                Ok(listing) => listing,
                Err(_) => return doubt,
            },
        };
        let out_of_time = || deadline.is_some_and(|deadline| deadline.check().is_err());
        listing
            .files
            .iter()
            .filter(|entry| self.file.is_match(&entry.rel))
            .any(|entry| match (&self.contains, &self.key) {
                _ if out_of_time() => doubt,
                // A pattern whose matcher cannot be built lets the gate run.
                (Some(pattern), _) => match pattern.regex() {
                    Ok(regex) => read(task, &entry.path, deadline)
                        .map_or(doubt, |bytes| regex.is_match(&bytes)),
                    Err(_) => doubt,
                },
                // A document that does not parse is a doubt too (see `has_key`).
                (None, Some(key)) => read(task, &entry.path, deadline)
                    .map_or(doubt, |bytes| has_key(&entry.rel, &bytes, key)),
                (None, None) => true,
            })
    }

    fn describe(&self) -> String {
        let file = one_line(self.written.file.as_str());
        match (&self.written.contains, &self.written.key) {
            (Some(pattern), _) => format!("`{file}` containing /{}/", one_line(pattern)),
            (None, Some(key)) => format!("`{file}` with `{}`", one_line(key)),
            (None, None) => format!("`{file}`"),
        }
    }
}

/// Whether the JSON or TOML document `bytes` (its kind by `name`'s extension) has `key`; a
/// document of another kind, or one that does not parse, counts as having it.
fn has_key(name: &str, bytes: &[u8], key: &[String]) -> bool {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return true;
    };
    if name.ends_with(".json") {
        let Ok(mut value) = serde_json::from_str::<serde_json::Value>(text) else {
            return true;
        };
        for part in key {
            match value.get_mut(part.as_str()) {
                Some(inner) => value = inner.take(),
                None => return false,
            }
        }
        true
    } else if name.ends_with(".toml") {
        let Ok(table) = toml::from_str::<toml::Table>(text) else {
            return true;
        };
        let mut value = toml::Value::Table(table);
        for part in key {
            match value.get_mut(part.as_str()) {
                Some(inner) => value = std::mem::replace(inner, toml::Value::Boolean(false)),
                None => return false,
            }
        }
        true
    } else {
        true
    }
}

/// The file's bytes, or `None` when it cannot be read whole (by `deadline`, if there is one).
fn read(task: &Task, path: &Path, deadline: Option<&Deadline<'_>>) -> Option<Vec<u8>> {
    match deadline {
        None => taskdir::read_capped(task, path, MAX_BYTES).ok()?,
        Some(deadline) => taskdir::read_capped_by(task, path, MAX_BYTES, deadline).ok()?,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn only_if(yaml: &str) -> OnlyIf {
        let specs: Vec<PresenceSpec> = yaml_serde::from_str(yaml).expect("yaml");
        OnlyIf::from_spec(&specs).expect("valid")
    }

    fn task(files: &[(&str, &str)]) -> (tempfile::TempDir, Task) {
        let dir = tempfile::tempdir().expect("tempdir");
        for (name, body) in files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, body).expect("write");
        }
        let task = Task::new("t", dir.path()).expect("task");
        (dir, task)
    }

    #[test]
    fn a_file_or_a_file_containing_a_pattern_lets_the_gate_run() {
        let rule =
            only_if("[{file: ruff.toml}, {file: pyproject.toml, contains: '^\\[tool\\.ruff'}]");
        let (_dir, with_section) = task(&[("pyproject.toml", "[project]\n[tool.ruff]\n")]);
        assert_eq!(rule.unmet(&with_section), None);
        let (_dir, with_file) = task(&[("ruff.toml", "")]);
        assert_eq!(rule.unmet(&with_file), None);
        let (_dir, without) = task(&[("pyproject.toml", "[project]\n# [tool.ruff]\n")]);
        let why = rule.unmet(&without).expect("skipped");
        assert!(
            why.contains("`ruff.toml`, `pyproject.toml` containing /^\\[tool\\.ruff/"),
            "{why}"
        );
    }

    #[test]
    fn a_glob_without_double_star_looks_no_deeper_than_it_reaches() {
        let rule = only_if("[{file: '.eslintrc*'}]");
        let (_dir, nested) = task(&[("node_modules/x/.eslintrc.json", "{}")]);
        assert!(rule.unmet(&nested).is_some());
        let (_dir, top) = task(&[(".eslintrc.json", "{}")]);
        assert_eq!(rule.unmet(&top), None);
        let deep = only_if("[{file: '**/conftest.py'}]");
        let (_dir, tests) = task(&[("tests/unit/conftest.py", "")]);
        assert_eq!(deep.unmet(&tests), None);
    }

    #[test]
    fn a_link_out_of_the_task_is_not_read() {
        let outside = tempfile::tempdir().expect("tempdir");
        std::fs::write(outside.path().join("pyproject.toml"), "[tool.ruff]\n").expect("write");
        let (dir, task) = task(&[]);
        std::os::unix::fs::symlink(
            outside.path().join("pyproject.toml"),
            dir.path().join("pyproject.toml"),
        )
        .expect("symlink");
        let rule = only_if("[{file: pyproject.toml, contains: 'tool'}]");
        assert!(rule.unmet(&task).is_some());
    }

    #[test]
    fn a_file_too_large_to_read_lets_the_gate_run() {
        let rule = only_if("[{file: pyproject.toml, contains: '^\\[tool\\.ruff'}]");
        let padded = "#".repeat(MAX_BYTES as usize + 1);
        let (_dir, task) = task(&[("pyproject.toml", &padded)]);
        assert_eq!(rule.unmet(&task), None);
    }

    #[test]
    fn a_key_is_found_however_the_file_writes_it() {
        let ruff = only_if("[{file: pyproject.toml, key: tool.ruff}]");
        for written in [
            "[tool.ruff]\n",
            "  [tool.ruff.lint]\nselect = [\"F\"]\n",
            "[ tool . \"ruff\" ]\n",
            "[tool]\nruff.line-length = 100\n",
        ] {
            let (_dir, project) = task(&[("pyproject.toml", written)]);
            assert_eq!(ruff.unmet(&project), None, "{written:?}");
        }
        let (_dir, project) = task(&[("pyproject.toml", "[tool.black]\n# [tool.ruff]\n")]);
        assert!(ruff.unmet(&project).is_some());

        let test = only_if("[{file: package.json, key: scripts.test}]");
        for written in [
            r#"{"scripts": {"build": "node -e \"if (x) {}\"", "test": "node --test"}}"#,
            r#"{"scripts": {"t\u0065st": "node --test"}}"#,
            "{not json",
        ] {
            let (_dir, project) = task(&[("package.json", written)]);
            assert_eq!(test.unmet(&project), None, "{written:?}");
        }
        let (_dir, project) = task(&[("package.json", r#"{"keywords": ["test"], "test": 1}"#)]);
        assert!(test.unmet(&project).is_some());
    }

    #[test]
    fn an_empty_list_or_a_bad_pattern_is_refused() {
        assert!(OnlyIf::from_spec(&[]).is_err());
        let specs: Vec<PresenceSpec> =
            yaml_serde::from_str("[{file: a, contains: '('}]").expect("yaml");
        assert!(OnlyIf::from_spec(&specs).is_err());
    }
}
