//! The README's first command, kept true: the bundled quickstart fails for the reason the README
//! shows, and the one-line fix it gives turns the verdict to PASS.

use crate::common;
use std::path::Path;

use crate::common::copy_dir;

#[test]
fn quickstart_fails_on_the_bug_and_passes_after_the_fix() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/quickstart");
    let copy = tempfile::tempdir().expect("temp dir");
    copy_dir(&example, copy.path());
    let run = || {
        common::validator()
            .current_dir(copy.path())
            .args([
                "check",
                "--task-dir",
                "staging/calc",
                "--signal",
                "staging/calc.done",
            ])
            .output()
            .expect("run validator")
    };

    let failed = run();
    let text = String::from_utf8_lossy(&failed.stdout);
    assert_eq!(failed.status.code(), Some(1), "{text}");
    assert!(
        text.contains("1 test failed: test_calc.TestCalc.test_divide"),
        "{text}"
    );
    assert!(text.contains("AssertionError: 3 != 3.5"), "{text}");

    let calc = copy.path().join("staging/calc/calc.py");
    let source = std::fs::read_to_string(&calc).expect("read calc.py");
    std::fs::write(&calc, source.replace("a // b", "a / b")).expect("fix calc.py");

    let passed = run();
    let text = String::from_utf8_lossy(&passed.stdout);
    assert_eq!(passed.status.code(), Some(0), "{text}");
    assert!(text.contains("PASS"), "{text}");
}

/// The CI and pre-commit files users copy: valid YAML, and the command they run is one the
/// binary accepts (`--help` of the exact subcommand line parses).
#[test]
fn ci_and_pre_commit_files_run_a_real_command() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (file, needle) in [
        (
            ".pre-commit-hooks.yaml",
            "entry: validator check --task-dir .",
        ),
        (
            "examples/ci/github-actions.yml",
            "args: check -c validator.yaml --task-dir . --all-files --format github",
        ),
        ("action.yml", "default: check --all-files --format github"),
    ] {
        let text = std::fs::read_to_string(root.join(file)).expect("read");
        let _: serde_json::Value = yaml_serde::from_str(&text).unwrap_or_else(|err| {
            panic!("{file} is not YAML: {err}");
        });
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(needle))
            .unwrap_or_else(|| panic!("{file} does not run `{needle}`"));
        // `entry: validator ARGS`, or an action's `args:` (what follows `validator`).
        let command = line
            .split_once("validator ")
            .or_else(|| line.split_once(": "))
            .expect("command")
            .1;
        let args = shell_words::split(command).expect("words");
        common::validator()
            .args(&args)
            .arg("--help")
            .assert()
            .success();
    }
}
