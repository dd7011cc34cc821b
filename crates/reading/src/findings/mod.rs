//! Reading findings out of a linter's output, as a person reading it would: every format in
//! [`FORMATS`] is recognised where it appears, line by line (one-line formats such as
//! `file:line:col: message` and `file(line,col): error TS..`), block by block (rustc and ruff's
//! `--> file:line:col` under a header, eslint's and yamllint's file headers over indented
//! entries, shellcheck's `In file line N:` with its caret, biome's header over its message,
//! formatters' "would reformat" lists), or whole (SARIF, checkstyle XML, reviewdog rdjson,
//! cargo's `--message-format=json` lines).
//!
//! The output is the tool's, so the worker's: it is read as text only, capped by the process
//! runner, and nothing in it is opened here (paths are made relative to the task afterwards).

mod blocks;
mod general;
mod lines;
mod structured;

pub use general::{Files, NoFiles};

use crate::Finding;

/// One format validator reads: its name (`format:` in a gate), what it matches, a line of it as
/// a real tool printed it, and the tools it came from. Adding a tool's format is a row here,
/// its reader, and the row's example read back by the test below.
pub struct Format {
    pub name: &'static str,
    pub matches: &'static str,
    pub example: &'static str,
    pub from: &'static str,
}

/// The formats validator reads, by the names `docs/reasons.md` gives them (a test holds the
/// two together). Auto-detection tries every one; `general` reads what none of the others
/// claims.
pub const FORMATS: &[Format] = &[
    Format {
        name: "gnu",
        matches: "`file:line[:col]: [severity:] message [code]`",
        example: "src/a.py:3:1: F401 `os` imported but unused",
        from: "gcc, ruff concise, flake8, mypy, go vet, staticcheck, shellcheck -f gcc",
    },
    Format {
        name: "located-space",
        matches: "`file:line[:col] CODE message`",
        example: "README.md:3 MD022/blanks-around-headings Headings should be surrounded",
        from: "markdownlint, markdownlint-cli2, hadolint",
    },
    Format {
        name: "paren",
        matches: "`file(line,col): error CODE: message`",
        example: "src/a.ts(2,3): error TS2322: Type 'string' is not assignable",
        from: "tsc in a pipe, MSBuild-style tools",
    },
    Format {
        name: "dash",
        matches: "`file:line:col - severity CODE: message`",
        example: "src/a.ts:2:3 - error TS2322: Type 'string' is not assignable",
        from: "tsc --pretty, pyright",
    },
    Format {
        name: "rustc",
        matches: "a header (`error[E0308]: msg`, `F401 msg`) over `--> file:line:col`",
        example: "error[E0308]: mismatched types\n --> src/main.rs:3:5",
        from: "rustc, clippy, ruff's default, ruff format --check",
    },
    Format {
        name: "stylish",
        matches: "a file name over indented `line:col severity message rule` rows",
        example: "src/a.js\n  1:7  error  'x' is assigned a value but never used  no-unused-vars",
        from: "eslint's default, yamllint's default, ruff grouped",
    },
    Format {
        name: "compact",
        matches: "`file: line N, col M, Error - message (rule)`",
        example: "src/a.js: line 1, col 7, Error - 'x' is never used (no-unused-vars)",
        from: "eslint compact",
    },
    Format {
        name: "shellcheck",
        matches: "`In file line N:`, the source line, `^-- SC2086 (info): message`",
        example: "In s.sh line 3:\necho $1\n     ^-- SC2086 (info): Double quote to prevent globbing",
        from: "shellcheck's default",
    },
    Format {
        name: "biome",
        matches: "`file:line:col rule ━━━` over `✖ message`",
        example: "src/a.js:1:7 lint/style/useConst ━━━━━━━━━━\n\n  ✖ This let declares a variable that is only assigned once.",
        from: "biome lint and check",
    },
    Format {
        name: "github",
        matches: "`::error file=..,line=..,col=..,title=..::message`",
        example: "::error title=Ruff (F401),file=src/a.py,line=1,col=8::src/a.py:1:8: F401 unused",
        from: "ruff, biome, yamllint GitHub output",
    },
    Format {
        name: "formatter",
        matches: "the files a formatter would change, one finding each",
        example: "Would reformat: src/a.py",
        from: "cargo fmt --check, ruff format --check, prettier --check, black --check, gofmt -l",
    },
    Format {
        name: "cargo-json",
        matches: "`--message-format=json` lines amid other output",
        example: r#"{"reason":"compiler-message","message":{"message":"unused variable: `x`","level":"warning","code":{"code":"unused_variables"},"spans":[{"file_name":"src/main.rs","line_start":2,"column_start":9,"is_primary":true}]}}"#,
        from: "cargo build, check, clippy",
    },
    Format {
        name: "sarif",
        matches: "a SARIF 2.1.0 document",
        example: r#"{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"ruff"}},"results":[{"ruleId":"F401","message":{"text":"unused"},"locations":[{"physicalLocation":{"artifactLocation":{"uri":"src/a.py"},"region":{"startLine":1}}}]}]}]}"#,
        from: "ruff, eslint, biome, hadolint",
    },
    Format {
        name: "checkstyle",
        matches: "a checkstyle XML document",
        example: r#"<checkstyle><file name="src/a.js"><error line="1" column="7" severity="error" message="unused" source="eslint.rules.no-unused-vars"/></file></checkstyle>"#,
        from: "eslint, biome, shellcheck, hadolint",
    },
    Format {
        name: "rdjson",
        matches: "reviewdog's rdjson document, or rdjsonl lines",
        example: r#"{"diagnostics":[{"message":"unused","location":{"path":"src/a.py","range":{"start":{"line":1}}}}]}"#,
        from: "ruff, eslint, biome",
    },
    Format {
        name: "general",
        matches: "any location of a file the task holds: `path:line[:col]` or `path(line,col)` anywhere on a line, `path, line N`, `line N … path`, a file named alone over `line:col message` rows, a snippet frame (`╭─[path:l:c]`, `Location: path:l`) under its block's first line",
        example: "[ERROR] src/a.py:3: something is wrong",
        from: "what no other format claims (the general reader)",
    },
];

/// The formats' names, for a gate's `format:`.
pub fn format_names() -> impl Iterator<Item = &'static str> {
    FORMATS.iter().map(|f| f.name)
}

/// Removes terminal control sequences of every kind (CSI colours, OSC titles and links,
/// charset shifts such as rustfmt's `ESC ( B`), which colourful tools emit even into pipes.
pub fn strip_ansi(text: &str) -> String {
    anstream::adapter::strip_str(text).to_string()
}

/// Which formats to read: every one (the default), or the one a gate's `format:` names, for
/// output that auto-detection would read as another format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Only(Option<&'static str>);

impl Only {
    /// The format named `name`, if validator reads one by that name.
    pub fn named(name: &str) -> Option<Only> {
        if name == "auto" {
            return Some(Only(None));
        }
        FORMATS
            .iter()
            .find(|f| f.name == name)
            .map(|f| Only(Some(f.name)))
    }

    /// Whether the format `name` is read.
    pub fn allows(self, name: &str) -> bool {
        self.0.is_none_or(|only| only == name)
    }
}

/// What a tool's output said: its findings, and how many lines read as a diagnostic (a
/// severity word) without giving one, so a clean exit is not called clean when it is not.
#[derive(Debug, Default)]
pub struct Read {
    pub findings: Vec<Finding>,
    pub unread: usize,
}

/// Finds every finding in `output` (already capped in size by the process runner), each once,
/// in the order the tool printed them, by the known formats alone.
pub fn parse(output: &str) -> Vec<Finding> {
    parse_as(output, Only::default())
}

/// [`parse`], reading only the formats `only` allows.
pub fn parse_as(output: &str, only: Only) -> Vec<Finding> {
    read(output, only, &NoFiles).findings
}

/// Every finding in `output`: the known formats first; the lines none of them claims read by
/// the general reader, whose locations count only where `files` says the file exists. A named
/// `format:` reads that format alone.
pub fn read(output: &str, only: Only, files: &dyn Files) -> Read {
    if let Some(found) = structured::parse(output, only)
        .or_else(|| only.allows("formatter").then(|| go_files(output)).flatten())
    {
        return finish(found, 0);
    }
    let lines: Vec<&str> = output.lines().collect();
    let (mut found, claimed) = blocks::Scanner::scan(&lines, only);
    let mut unread = 0;
    if only.allows("general") {
        let mut known = general::Known::new(files);
        unread = general::read(&lines, &claimed, &mut found, &mut known);
    }
    // Nothing read at all: every line that reads as a diagnostic went unread.
    if found.is_empty() {
        unread = lines.iter().filter(|l| general::is_diagnostic(l)).count();
    }
    finish(found.into_iter().map(|(_, f)| f).collect(), unread)
}

fn finish(mut found: Vec<Finding>, unread: usize) -> Read {
    for finding in &mut found {
        tidy(finding);
    }
    dedup(&mut found);
    Read {
        findings: found,
        unread,
    }
}

/// `gofmt -l`: nothing but the names of the Go files it would change, one a line.
fn go_files(output: &str) -> Option<Vec<Finding>> {
    let names: Vec<&str> = output
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let all_go = !names.is_empty()
        && names
            .iter()
            .all(|n| n.ends_with(".go") && lines::looks_like_path(n));
    all_go.then(|| {
        names
            .iter()
            .map(|name| {
                Finding::in_file(*name, "is not formatted; run `gofmt -w` to fix it")
                    .with_rule(Some("format"))
            })
            .collect()
    })
}

/// What a reader may rely on whatever the tool wrote: a file is named or absent, never empty;
/// a line is counted from 1; every finding says something.
fn tidy(finding: &mut Finding) {
    if finding.file.as_deref().is_some_and(|f| f.trim().is_empty()) {
        finding.file = None;
    }
    if finding.file.is_none() || finding.line == Some(0) {
        finding.line = None;
    }
    if finding.line.is_none() {
        finding.column = None;
    }
    if finding.message.trim().is_empty() {
        finding.message = "(the tool gave no message)".into();
    }
}

/// Drops a finding printed twice (cargo prints a crate's warnings for each target that builds
/// it; a tool may print a summary repeating its list).
pub fn dedup(found: &mut Vec<Finding>) {
    let mut seen = std::collections::HashSet::new();
    found.retain(|f| {
        seen.insert((
            f.file.clone(),
            f.line,
            f.column,
            f.rule.clone(),
            f.message.clone(),
        ))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(output: &str) -> Vec<String> {
        parse(output).iter().map(ToString::to_string).collect()
    }

    #[test]
    fn reads_file_line_col_message() {
        let found = parse(
            "src/auth.rs:12:5: unused variable `x`\nlib.py:3: E302 expected 2 blank lines\nnoise\n",
        );
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].location().as_deref(), Some("src/auth.rs:12:5"));
        assert_eq!(found[0].message, "unused variable `x`");
        assert_eq!(found[1].location().as_deref(), Some("lib.py:3"));
        assert_eq!(found[1].rule.as_deref(), Some("E302"));
        assert_eq!(found[1].message, "expected 2 blank lines");
    }

    #[test]
    fn reads_rustc_and_clippy_blocks_with_the_lint_name() {
        let out = "warning: unused variable: `x`\n --> src/main.rs:2:9\n  |\n2 |     let x = 1;\n  |\n  = note: `#[warn(unused_variables)]` on by default\n\nerror[E0308]: mismatched types\n --> src/main.rs:3:5\n\nerror: aborting due to 1 previous error\n";
        assert_eq!(
            shown(out),
            [
                "src/main.rs:2:9: warning: unused variable: `x` [unused_variables]",
                "src/main.rs:3:5: error: mismatched types [E0308]",
            ]
        );
    }

    #[test]
    fn ignores_urls_times_and_prose() {
        assert!(
            parse("see https://example.com:443/x\n12:30:01 started\nerror: something broke\nat 10:20 it ran\n")
                .is_empty()
        );
    }

    #[test]
    fn message_may_contain_colons() {
        let found = parse("a.c:1: error: expected ';': here\n");
        assert_eq!(found[0].message, "expected ';': here");
        assert_eq!(found[0].severity.as_deref(), Some("error"));
    }

    #[test]
    fn strips_every_kind_of_control_sequence() {
        assert_eq!(strip_ansi("\u{1b}[1;31merror\u{1b}[0m: x"), "error: x");
        assert_eq!(strip_ansi("\u{1b}(Bplain\u{1b}[m"), "plain");
        assert_eq!(
            strip_ansi("\u{1b}]8;;https://x\u{1b}\\link\u{1b}]8;;\u{1b}\\"),
            "link"
        );
    }

    #[test]
    fn the_reference_lists_every_format() {
        let reference = include_str!("../../../../docs/reasons.md");
        for format in format_names() {
            assert!(
                reference.contains(&format!("| `{format}` |")),
                "docs/reasons.md has no row for `{format}`"
            );
        }
    }

    /// Each row's example, read by that format alone, is a finding.
    #[test]
    fn every_format_reads_its_own_example() {
        struct Named;
        impl Files for Named {
            fn is_file(&self, path: &str) -> bool {
                path == "src/a.py"
            }
        }
        for format in FORMATS {
            let only = Only::named(format.name).unwrap_or_default();
            let found = read(format.example, only, &Named).findings;
            assert!(
                found.iter().any(|f| f.file.is_some()),
                "`{}` does not read its own example: {:?}",
                format.name,
                format.example
            );
        }
    }

    #[test]
    fn a_named_format_reads_only_that_format() {
        let out = "a.py:1:8: F401 unused\nerror[E0308]: mismatched types\n --> src/main.rs:3:5\n";
        assert_eq!(parse(out).len(), 2);
        let rustc = Only::named("rustc").unwrap_or_default();
        assert_eq!(
            parse_as(out, rustc)
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            ["src/main.rs:3:5: error: mismatched types [E0308]"]
        );
        assert_eq!(
            parse_as(out, Only::named("gnu").unwrap_or_default()).len(),
            1
        );
        assert!(Only::named("nonsense").is_none());
    }

    #[test]
    fn a_finding_printed_twice_is_kept_once() {
        assert_eq!(parse("a.py:1:1: F401 x\na.py:1:1: F401 x\n").len(), 1);
    }
}
