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
