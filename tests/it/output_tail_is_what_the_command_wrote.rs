//! A gate's `output_tail` is its command's output as a terminal shows it: the terminal
//! sequences (colours, a window title) taken out, every other control the command wrote (a NUL,
//! a BEL) kept, escaped in the verdict's JSON (docs/verdict.md) and made harmless where the tail
//! is shown as text; never raw, never silently dropped.

use crate::common::{self, Project};

/// A project whose one gate prints a NUL byte, colour codes and a window title, then fails.
fn project() -> Project {
    let project = Project::new();
    project.root_file(
        "noisy.sh",
        "printf 'before\\000after\\n\\033[31mred\\033[0m \\033]0;title\\007done bell\\007ring\\n'\nexit 1\n",
    );
    let script = project.path().join("noisy.sh");
    project.rules(&common::pipeline(&common::lint(
        "noisy",
        &format!("[sh, \"{}\"]", script.display()),
        "",
    )));
    project
}

#[test]
fn nul_bytes_and_other_controls_in_output_are_kept_escaped_in_the_verdict() {
    let project = project();
    let output = project
        .check()
        .args(["--format", "json"])
        .output()
        .expect("run validator");
    assert_eq!(output.status.code(), Some(1));
    let raw = String::from_utf8(output.stdout).expect("the verdict is UTF-8");
    for escaped in [r"before\u0000after", r"red done bell\u0007ring"] {
        assert!(raw.contains(escaped), "{escaped} not in {raw}");
    }
    assert!(!raw.contains(r"\u001b") && !raw.contains("title"), "{raw}");
    assert!(
        !raw.contains(['\0', '\u{1b}', '\u{7}']),
        "a control written raw: {raw:?}"
    );
    let verdict: serde_json::Value = serde_json::from_str(&raw).expect("JSON");
    let tail = common::gate(&verdict, "noisy")["output_tail"]
        .as_str()
        .expect("a tail")
        .to_owned();
    assert_eq!(tail, "before\0after\nred done bell\u{7}ring");
}

#[test]
fn an_output_tail_shown_as_text_holds_no_control_raw() {
    let project = project();
    let output = project.check().output().expect("run validator");
    assert_eq!(output.status.code(), Some(1));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("red done"), "{text}");
    assert!(
        text.contains("bell ring") || text.contains("bell�ring"),
        "{text}"
    );
    assert!(!text.contains("[31m") && !text.contains("title"), "{text}");
    assert!(
        !text.contains(['\0', '\u{1b}', '\u{7}']),
        "a control written raw: {text:?}"
    );
}
