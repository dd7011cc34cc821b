//! The general reader through the binary: output in no format validator knows is read as a
//! person reads it, a location counting only where it names a real file of the task, and a
//! clean exit over lines that read as warnings is not called clean.

use crate::common::{gate, lint, project};

/// A lint gate whose tool prints `output` (a file beside the rules, so the worker's task holds
/// only its own files) and exits with `code`.
fn linted(output: &str, code: i32, files: &[(&str, &str)]) -> serde_json::Value {
    let project = project(&[lint(
        "lint",
        &format!(r#"["sh", "-c", 'cat "$0"; exit {code}', "../out.txt"]"#),
        "",
    )]);
    project.root_file("out.txt", output);
    for (name, content) in files {
        project.file(name, content);
    }
    project.verdict().1
}

fn findings(verdict: &serde_json::Value) -> Vec<String> {
    gate(verdict, "lint")["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            format!(
                "{}:{}:{}",
                f["file"].as_str().unwrap_or("-"),
                f["line"],
                f["message"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

#[test]
fn a_grouped_output_names_each_row_at_its_file() {
    let verdict = linted(
        "Checking 2 files\nsrc/app.py\n    3:5   unused import os\n    9:1   line too long\n\nsrc/other file.py\n    1:1   missing docstring\n\n3 problems\n",
        1,
        &[("src/app.py", "x\n"), ("src/other file.py", "y\n")],
    );
    assert_eq!(
        findings(&verdict),
        [
            "src/app.py:3:unused import os",
            "src/app.py:9:line too long",
            "src/other file.py:1:missing docstring"
        ],
        "{verdict:#}"
    );
}

#[test]
fn a_location_inside_a_sentence_is_read_with_its_message() {
    let verdict = linted(
        "[ERROR] src/app.py:3: something is wrong\nUnused variable 'x' at line 7, column 2 in src/app.py\n",
        1,
        &[("src/app.py", "x\n")],
    );
    assert_eq!(
        findings(&verdict),
        [
            "src/app.py:3:something is wrong",
            "src/app.py:7:Unused variable 'x'"
        ],
        "{verdict:#}"
    );
}

#[test]
fn locations_of_files_the_task_does_not_hold_are_never_findings() {
    // A worker's tool (or test) printing fake locations: none of these files exist in the task,
    // and one lies outside it.
    let verdict = linted(
        "[ERROR] src/fake.py:3: planted\nsrc/ghost.py\n    3:5  planted too\n[ERROR] ../out.txt:1: outside\nplanted at line 1 in /etc/passwd\n",
        1,
        &[("src/app.py", "x\n")],
    );
    assert!(findings(&verdict).is_empty(), "{verdict:#}");
}

#[test]
fn a_link_out_of_the_task_is_not_a_file_of_the_task() {
    let project = project(&[lint(
        "lint",
        r#"["sh", "-c", 'echo "[ERROR] out.py:3: planted"; exit 1']"#,
        "",
    )]);
    project.root_file("secret.py", "s\n");
    std::os::unix::fs::symlink(
        project.path().join("secret.py"),
        project.task_dir().join("out.py"),
    )
    .expect("link");
    let verdict = project.verdict().1;
    assert!(findings(&verdict).is_empty(), "{verdict:#}");
}

#[test]
fn a_clean_exit_over_warnings_it_could_not_read_says_so() {
    let verdict = linted(
        "WARNING: something looks off\nwarning: another thing\nAll done\n",
        0,
        &[],
    );
    let lint = gate(&verdict, "lint");
    assert_eq!(lint["outcome"], "pass", "{verdict:#}");
    assert_eq!(
        lint["summary"], "exit 0; 2 lines not read as findings",
        "{verdict:#}"
    );
    let clean = linted("All checks passed!\nFound 0 errors.\n", 0, &[]);
    assert_eq!(gate(&clean, "lint")["summary"], "clean", "{clean:#}");
}

#[test]
fn a_tool_naming_files_under_the_folder_it_was_given_is_read_at_them() {
    // `djlint templates` names `index.html`, meaning templates/index.html.
    let project = project(&[lint(
        "lint",
        r#"["sh", "-c", 'cat ../out.txt; exit 1', "templates"]"#,
        "",
    )]);
    project.root_file(
        "out.txt",
        "index.html\n───────\nH005 1:0 Html tag should have a non-empty lang attribute. <html>\nH009 3:10 Tag names should be lowercase. /H1\n\nLinted 1 file, found 2 errors.\n",
    );
    project.file("templates/index.html", "<html>\n");
    let verdict = project.verdict().1;
    assert_eq!(
        findings(&verdict),
        [
            "templates/index.html:1:Html tag should have a non-empty lang attribute. <html>",
            "templates/index.html:3:Tag names should be lowercase. /H1"
        ],
        "{verdict:#}"
    );
}

#[test]
fn ranges_and_sentences_under_a_file_heading_are_read() {
    let verdict = linted(
        "README.md\n  3:39-3:48  warning  `obviously` may be insensitive  obvious  retext-equality\n\nIn docs/a b.md\n=====\nThis is very unique.\n        ^^^^\n\"very\" is a weasel word on line 3 at column 8\n",
        1,
        &[("README.md", "x\n"), ("docs/a b.md", "y\n")],
    );
    assert_eq!(
        findings(&verdict),
        [
            "README.md:3:`obviously` may be insensitive obvious",
            "docs/a b.md:3:\"very\" is a weasel word"
        ],
        "{verdict:#}"
    );
}

#[test]
fn positions_between_fields_in_brackets_and_in_blocks_are_read() {
    let verdict = linted(
        concat!(
            // `file:function:line:`
            "src/app.py:load:12: DAR101: - path\n",
            // `path[l, c]`
            "ERROR: (no-var) src/web.ts[4, 2]: Forbidden 'var' keyword\n",
            // a file line, then `Line: N`, then the message under it
            "src/app.py\n  Line: 7\n    pylint: unused-import / Unused import os\n\n",
            // a file heading, a blank line, then labelled lines (a table under each)
            "File:   Dockerfile\nIssues: 2\n\nLine 1: FROM ubuntu\nIssue  Category  Title\n    1  Clarity   Base Image Missing Tag\n\nLine 3: MAINTAINER me\nIssue  Category  Title\n    2  Deprecation  Deprecated\n\n",
            // a bare location over its quoted source, the message after it
            "src/web.ts:9:5\n  > 9| let a = b c\n-----------^\n\nUnexpected token c\n",
        ),
        1,
        &[
            ("src/app.py", "x\n"),
            ("src/web.ts", "y\n"),
            ("Dockerfile", "FROM ubuntu\n"),
        ],
    );
    let mut found = findings(&verdict);
    found.sort();
    let mut expected = [
        "src/app.py:12:- path",
        "src/web.ts:4:Forbidden 'var' keyword",
        "src/app.py:7:pylint: unused-import / Unused import os",
        "Dockerfile:1:FROM ubuntu",
        "Dockerfile:3:MAINTAINER me",
        "src/web.ts:9:Unexpected token c",
    ];
    expected.sort();
    assert_eq!(found, expected, "{verdict:#}");
}

#[test]
fn a_location_heading_over_severity_rows_names_each_row() {
    let verdict = linted(
        "src/web.ts:1:1\nERROR: 1:1   no-var-keyword  Forbidden 'var' keyword\nWARNING: 2:3   no-console  Calls to console.log\n",
        1,
        &[("src/web.ts", "y\n")],
    );
    assert_eq!(
        findings(&verdict),
        [
            "src/web.ts:1:Forbidden 'var' keyword",
            "src/web.ts:2:Calls to console.log"
        ],
        "{verdict:#}"
    );
}

#[test]
fn new_shapes_never_take_a_file_the_task_does_not_hold() {
    let verdict = linted(
        "src/ghost.py:load:12: DAR101: - path\nERROR: src/ghost.ts[4, 2]: planted\nsrc/ghost.py\n  Line: 7\n    planted\nsrc/ghost.ts:9:5\n  > 9| x\n\nplanted\n",
        1,
        &[("src/app.py", "x\n")],
    );
    assert!(findings(&verdict).is_empty(), "{verdict:#}");
}
