//! The reasons a worker reads: findings read out of real tools' output (the corpus under
//! `tests/corpus/`), the feedback's advice fitting the way the worker is judged again, and
//! output free of terminal control sequences and of backtraces nobody asked for.

use crate::common::{gate, lint, project};

fn feedback(project: &crate::common::Project) -> (i32, String) {
    let output = project
        .check()
        .args(["--format", "feedback"])
        .output()
        .expect("run validator");
    (
        output.status.code().expect("exit code"),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[test]
fn a_check_tells_the_worker_to_fix_not_to_signal_again() {
    let project = project(&[lint(
        "lint",
        r#"["sh", "-c", 'echo "src/a.rs:3:1: bad thing"; exit 1']"#,
        "",
    )]);
    let (code, text) = feedback(&project);
    assert_eq!(code, 1, "{text}");
    assert!(!text.contains("signal done"), "{text}");
    assert!(!text.contains("attempt"), "{text}");
    assert!(text.contains("the same check judges the fix"), "{text}");
}

#[test]
fn a_failure_the_rules_route_on_is_said_once_as_a_warning() {
    let project = project(&[
        lint(
            "soft",
            r#"["sh", "-c", 'echo "src/a.rs:3:1: style nit"; exit 1']"#,
            "on_fail: CONTINUE",
        ),
        lint(
            "hard",
            r#"["sh", "-c", 'echo "src/b.rs:1:1: real bug"; exit 1']"#,
            "",
        ),
    ]);
    let (code, text) = feedback(&project);
    assert_eq!(code, 1, "{text}");
    let failed = text
        .split("## What failed")
        .nth(1)
        .and_then(|rest| rest.split("## ").next())
        .unwrap_or_else(|| panic!("no What failed section:\n{text}"));
    assert!(failed.contains("hard"), "{text}");
    assert!(!failed.contains("soft"), "{text}");
    let warnings = text
        .split("## Warnings")
        .nth(1)
        .unwrap_or_else(|| panic!("no Warnings section:\n{text}"));
    assert!(warnings.contains("soft"), "{text}");
}

#[test]
fn gates_run_without_rust_backtraces_unless_the_gate_asks() {
    let probe = r#"["sh", "-c", 'echo "RUST_BACKTRACE=$RUST_BACKTRACE"; exit 1']"#;
    let project = project(&[
        lint("plain", probe, "on_fail: CONTINUE"),
        lint("asks", probe, "env: {RUST_BACKTRACE: full}"),
    ]);
    let mut cmd = project.check();
    cmd.args(["--format", "json"]).env("RUST_BACKTRACE", "1");
    let (_, verdict) = crate::common::json_verdict(cmd);
    let tail = |name: &str| {
        gate(&verdict, name)["output_tail"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert!(tail("plain").contains("RUST_BACKTRACE=0"), "{verdict:#}");
    assert!(tail("asks").contains("RUST_BACKTRACE=full"), "{verdict:#}");
}

#[test]
fn terminal_control_sequences_of_every_kind_are_stripped() {
    // A colour, rustfmt's charset shift `ESC ( B`, a window title and a hyperlink.
    let project = project(&[lint(
        "lint",
        r#"["printf", '\033[31msrc/a.rs:1:1: red\033(B\033[m \033]0;title\007\033]8;;https://x\033\\link\033]8;;\033\\\n']"#,
        "",
    )]);
    let (_, verdict) = project.verdict();
    let shown = verdict.to_string();
    assert!(!shown.contains("\\u001b"), "{verdict:#}");
    assert!(!shown.contains("(B"), "{verdict:#}");
    let tail = gate(&verdict, "lint")["output_tail"]
        .as_str()
        .unwrap_or_default();
    assert!(tail.contains("red link"), "{verdict:#}");
}
