//! `validator init`: a starter rules file for the project in a directory. The project's kind is
//! detected from its manifest (or named), and the matching pack from `rules/` is written as
//! `validator.yaml`, with `validator.schema.json` beside it so an editor with
//! yaml-language-server completes and checks the file as it is edited.
//!
//! The packs are compiled in (`include_str!`): what `init` writes is the file in `rules/`,
//! except for its first line, which points at the schema in this repository and is replaced by
//! one pointing at the schema written beside the rules file.

use std::fmt;
use std::path::{Path, PathBuf};

use validator::config::Rules;

/// The name `init` gives the rules file, found by every other command without `-c`.
pub const RULES_FILE: &str = "validator.yaml";
/// The schema `init` writes beside the rules file, named by the rules file's first line.
pub const SCHEMA_FILE: &str = "validator.schema.json";

/// The first line of every pack in `rules/`: the schema, for editing the packs themselves.
const PACK_SCHEMA_LINE: &str = "# yaml-language-server: $schema=../schema/validator.schema.json";

/// A kind of project, each with its starter pack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Rust,
    Python,
    Node,
    Go,
    Generic,
}

impl Kind {
    pub const ALL: [Kind; 5] = [
        Kind::Rust,
        Kind::Python,
        Kind::Node,
        Kind::Go,
        Kind::Generic,
    ];
    /// The names `--kind` takes.
    pub const NAMES: [&'static str; 5] = ["rust", "python", "node", "go", "generic"];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Rust => "rust",
            Kind::Python => "python",
            Kind::Node => "node",
            Kind::Go => "go",
            Kind::Generic => "generic",
        }
    }

    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// The pack as it is in `rules/<kind>.yaml`.
    pub fn pack(self) -> &'static str {
        match self {
            Kind::Rust => include_str!("../rules/rust.yaml"),
            Kind::Python => include_str!("../rules/python.yaml"),
            Kind::Node => include_str!("../rules/node.yaml"),
            Kind::Go => include_str!("../rules/go.yaml"),
            Kind::Generic => include_str!("../rules/generic.yaml"),
        }
    }

    /// The rules file `init` writes for this kind: the pack, its first line pointing at the
    /// schema beside it.
    pub fn rules_file(self) -> String {
        let pack = self.pack();
        let body = pack.strip_prefix(PACK_SCHEMA_LINE).unwrap_or(pack);
        format!("# yaml-language-server: $schema={SCHEMA_FILE}{body}")
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The files that mark a kind of project, in the order they decide. A compiled language's
/// manifest comes first and `package.json` last: repositories in other languages often carry a
/// `package.json` (or a `pyproject.toml`) only for their tooling, while a `Cargo.toml` or
/// `go.mod` is there because the code needs it.
pub const MARKERS: [(&str, Kind); 6] = [
    ("Cargo.toml", Kind::Rust),
    ("go.mod", Kind::Go),
    ("pyproject.toml", Kind::Python),
    ("setup.py", Kind::Python),
    ("requirements.txt", Kind::Python),
    ("package.json", Kind::Node),
];

/// What `detect` found in a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detected {
    /// The kind the first marker found says; `Generic` when there is none.
    pub kind: Kind,
    /// The marker that decided, if any.
    pub marker: Option<&'static str>,
    /// Other kinds whose markers are there too, each with its first marker.
    pub others: Vec<(Kind, &'static str)>,
}

/// The kind of project in `dir`, from the first of [`MARKERS`] that is there.
pub fn detect(dir: &Path) -> Detected {
    let mut found: Vec<(Kind, &'static str)> = Vec::new();
    for (marker, kind) in MARKERS {
        if dir.join(marker).is_file() && !found.iter().any(|(seen, _)| *seen == kind) {
            found.push((kind, marker));
        }
    }
    let mut found = found.into_iter();
    match found.next() {
        Some((kind, marker)) => Detected {
            kind,
            marker: Some(marker),
            others: found.collect(),
        },
        None => Detected {
            kind: Kind::Generic,
            marker: None,
            others: Vec::new(),
        },
    }
}

/// Why `init` wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    #[error("{} already exists; nothing was written\n  help: `validator rules check` checks it as it is; `validator init --force` replaces it with the starter pack", path.display())]
    Exists { path: PathBuf },
    #[error("{} exists and is not a schema `validator init` wrote; nothing was written\n  help: move it away, or pass --force to replace it", path.display())]
    ForeignSchema { path: PathBuf },
    #[error(transparent)]
    Io(#[from] validator::error::Error),
}

/// What `init` wrote.
#[derive(Debug, Clone)]
pub struct Initialized {
    pub kind: Kind,
    /// Whether the kind was named (`--kind`) rather than detected.
    pub named: bool,
    pub detected: Detected,
    pub rules: PathBuf,
    pub schema: PathBuf,
    /// The gates of the pack's pipeline, in order.
    pub gates: Vec<String>,
    /// Whether to tell the user to keep the state directory out of git.
    pub ignore_hint: bool,
    /// Whether other commands find the rules file without `-c`.
    pub found_by_default: bool,
    /// Whether the rules file lies in a git work tree, where it counts as a change until it is
    /// committed.
    pub in_git: bool,
    /// The project's `.editorconfig` asks every file for tab indentation, which YAML cannot
    /// have: its editorconfig checker would fail on the rules file once it is committed.
    pub tabs_everywhere: bool,
}

/// Writes the starter pack for the project in `project` to `rules` (and the schema beside it).
/// `kind` overrides detection; an existing rules file is replaced only with `force`.
pub fn init(
    project: &Path,
    rules: &Path,
    kind: Option<Kind>,
    force: bool,
) -> Result<Initialized, InitError> {
    let detected = detect(project);
    let chosen = kind.unwrap_or(detected.kind);
    let schema = rules.with_file_name(SCHEMA_FILE);
    if !force {
        if rules.symlink_metadata().is_ok() {
            return Err(InitError::Exists {
                path: rules.to_path_buf(),
            });
        }
        if schema.symlink_metadata().is_ok() && !is_our_schema(&schema) {
            return Err(InitError::ForeignSchema { path: schema });
        }
    }
    let text = chosen.rules_file();
    let gates = Rules::parse(rules, &text)
        .map(|parsed| {
            parsed
                .pipelines
                .iter()
                .flat_map(|p| p.gates.iter().map(|g| g.name.clone()))
                .collect()
        })
        .unwrap_or_default();
    let dir = match rules.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(|source| validator::error::Error::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    // The schema first: a rules file whose first line names a missing schema would make the
    // editor complain.
    validator::replace::atomically(
        &schema,
        validator::config::json_schema::rules_schema_text().as_bytes(),
    )?;
    validator::replace::atomically(rules, text.as_bytes())?;
    validator::replace::sync_dir(dir)?;
    // The state directory lies beside the rules file: in the project only if the rules are.
    let in_project = dir.canonicalize().ok() == project.canonicalize().ok();
    Ok(Initialized {
        kind: chosen,
        named: kind.is_some(),
        detected,
        rules: rules.to_path_buf(),
        schema,
        gates,
        ignore_hint: in_project && !ignores_state(dir),
        found_by_default: in_project && rules.file_name() == Some(RULES_FILE.as_ref()),
        in_git: dir
            .canonicalize()
            .is_ok_and(|dir| dir.ancestors().any(|d| d.join(".git").exists())),
        tabs_everywhere: tabs_everywhere(dir),
    })
}

/// Whether `dir`'s `.editorconfig` sets `indent_style = tab` for every file (`[*]`) and no
/// section names YAML files, so the rules file falls under it.
fn tabs_everywhere(dir: &Path) -> bool {
    let Ok(text) = read_capped(&dir.join(".editorconfig"), 1024 * 1024) else {
        return false;
    };
    let mut section = String::new();
    let mut tabs = false;
    for line in text.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            if name.contains("yml") || name.contains("yaml") || name.contains("validator") {
                return false;
            }
            section = name.to_owned();
        } else if section == "*" {
            let setting: Vec<&str> = line.splitn(2, '=').map(str::trim).collect();
            if let [key, value] = setting[..] {
                if key.eq_ignore_ascii_case("indent_style") {
                    tabs = value.eq_ignore_ascii_case("tab");
                }
            }
        }
    }
    tabs
}

/// A schema file is ours if it is the rules file's schema (of this or another version).
fn is_our_schema(path: &Path) -> bool {
    let Ok(text) = read_capped(path, 1024 * 1024) else {
        return false;
    };
    serde_json::from_str::<serde_json::Value>(&text).is_ok_and(|value| {
        value.get("title") == validator::config::json_schema::rules_schema().get("title")
    })
}

/// Whether the `.gitignore` beside the rules file keeps the packs' state directory out of git.
fn ignores_state(dir: &Path) -> bool {
    read_capped(&dir.join(".gitignore"), 1024 * 1024).is_ok_and(|text| {
        text.lines().map(str::trim).any(|line| {
            matches!(
                line,
                ".validator" | ".validator/" | "/.validator" | "/.validator/"
            )
        })
    })
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |name| name.to_string_lossy().into_owned(),
    )
}

fn read_capped(path: &Path, cap: u64) -> std::io::Result<String> {
    validator_process::files::read_text(path, cap, validator_process::files::Links::Follow)
}

impl fmt::Display for Initialized {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let marker_list = MARKERS.map(|(marker, _)| marker).join(", ");
        match (self.named, self.detected.marker) {
            (true, _) => writeln!(f, "kind: {} (--kind)", self.kind)?,
            (false, Some(marker)) => writeln!(f, "detected a {} project: {marker}", self.kind)?,
            (false, None) => writeln!(
                f,
                "no project file found here ({marker_list}): using the generic pack"
            )?,
        }
        if !self.named {
            for (other, marker) in &self.detected.others {
                writeln!(
                    f,
                    "  also found {marker}: `validator init --kind {other} --force` writes the {other} pack instead"
                )?;
            }
        }
        writeln!(
            f,
            "wrote {}: the {} pack, gates {}",
            self.rules.display(),
            self.kind,
            self.gates.join(" → ")
        )?;
        writeln!(
            f,
            "wrote {}: its JSON Schema, for completion in editors (yaml-language-server)",
            self.schema.display()
        )?;
        writeln!(f)?;
        writeln!(f, "next:")?;
        if self.kind == Kind::Generic {
            writeln!(
                f,
                "  point the lint and test gates at your commands (now `make lint`, `make test`)"
            )?;
        }
        let check = match self.found_by_default {
            true => "validator check".to_owned(),
            false => format!("validator check -c {}", self.rules.display()),
        };
        if self.in_git {
            writeln!(
                f,
                "  commit {} and {}: until then they are changes like any other, which a `file-scope` gate with `allow:` fails on",
                file_name(&self.rules),
                file_name(&self.schema)
            )?;
        }
        if self.tabs_everywhere {
            writeln!(
                f,
                "  your .editorconfig asks every file for tabs, which YAML cannot indent with: give validator's files a section of their own, or an editorconfig checker fails on them:\n      [{}]\n      indent_style = space\n      indent_size = 2",
                format_args!("{{{},{}}}", file_name(&self.rules), file_name(&self.schema))
            )?;
        }
        writeln!(f, "  run the gates over this directory: {check}")?;
        if self.ignore_hint {
            writeln!(
                f,
                "  the watcher, agent hooks and gates with `inputs:` keep state in `.validator/` (this pack's `check` writes none), and the watcher's workers write their tasks in `.validator/staging/`: add `.validator/` to .gitignore before you use them, or the project's own check counts them as changes"
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_editorconfig_of_tabs_everywhere_is_named_unless_yaml_has_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join(".editorconfig");
        std::fs::write(&config, "root = true\n\n[*]\nindent_style = tab\n").unwrap();
        assert!(tabs_everywhere(dir.path()));
        std::fs::write(
            &config,
            "[*]\nindent_style = tab\n[*.{yml,yaml}]\nindent_style = space\n",
        )
        .unwrap();
        assert!(!tabs_everywhere(dir.path()));
        std::fs::write(&config, "[*]\nindent_style = space\n").unwrap();
        assert!(!tabs_everywhere(dir.path()));
        std::fs::remove_file(&config).unwrap();
        assert!(!tabs_everywhere(dir.path()));
    }

    #[test]
    fn kinds_round_trip_through_their_names() {
        for (kind, name) in Kind::ALL.into_iter().zip(Kind::NAMES) {
            assert_eq!(kind.name(), name);
            assert_eq!(Kind::from_name(name), Some(kind));
        }
        assert_eq!(Kind::from_name("ruby"), None);
    }

    #[test]
    fn every_pack_points_its_first_line_at_the_schema_and_loads() {
        for kind in Kind::ALL {
            assert!(
                kind.pack().starts_with(&format!("{PACK_SCHEMA_LINE}\n")),
                "rules/{kind}.yaml must start with `{PACK_SCHEMA_LINE}`"
            );
            let written = kind.rules_file();
            assert!(written.starts_with("# yaml-language-server: $schema=validator.schema.json\n"));
            assert_eq!(
                written.lines().skip(1).collect::<Vec<_>>(),
                kind.pack().lines().skip(1).collect::<Vec<_>>()
            );
            let rules = Rules::parse(Path::new("/nowhere/validator.yaml"), &written)
                .unwrap_or_else(|err| panic!("the {kind} pack: {err}"));
            assert_eq!(rules.pipelines.len(), 1);
        }
    }

    #[test]
    fn detection_follows_the_marker_order() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(detect(dir.path()).kind, Kind::Generic);
        std::fs::write(dir.path().join("package.json"), "{}").unwrap();
        assert_eq!(detect(dir.path()).kind, Kind::Node);
        std::fs::write(dir.path().join("requirements.txt"), "").unwrap();
        std::fs::write(dir.path().join("pyproject.toml"), "").unwrap();
        let found = detect(dir.path());
        assert_eq!(found.kind, Kind::Python);
        assert_eq!(found.marker, Some("pyproject.toml"));
        assert_eq!(found.others, vec![(Kind::Node, "package.json")]);
        std::fs::write(dir.path().join("Cargo.toml"), "").unwrap();
        assert_eq!(detect(dir.path()).kind, Kind::Rust);
        // A directory named like a marker is not one.
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("go.mod")).unwrap();
        assert_eq!(detect(dir.path()).kind, Kind::Generic);
    }

    #[test]
    fn the_gitignore_hint_goes_once_the_state_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!ignores_state(dir.path()));
        std::fs::write(dir.path().join(".gitignore"), "/target\n.validator-old\n").unwrap();
        assert!(!ignores_state(dir.path()));
        std::fs::write(dir.path().join(".gitignore"), "/target\n.validator/\n").unwrap();
        assert!(ignores_state(dir.path()));
    }
}
