// What validator prints is true and short (issue 42): each friction a newcomer's first hour
// found, asserted on what the user reads from the real binary.

use crate::common::{Project, lint, pipeline, validator};
use crate::hooks::{hook, stop};

/// `validator status` over `project`'s rules: its stdout.
fn status(project: &Project, args: &[&str]) -> String {
    let output = validator()
        .arg("-c")
        .arg(project.rules_path())
        .arg("status")
        .args(args)
        .output()
        .expect("run validator");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The row of `status`'s table for the one hook session there is.
fn hook_row(table: &str) -> Vec<String> {
    let row = table
        .lines()
        .find(|line| line.starts_with("hook-"))
        .unwrap_or_else(|| panic!("no hook session in\n{table}"));
    row.split_whitespace().map(str::to_owned).collect()
}

#[test]
fn status_shows_a_hook_sessions_decision() {
    let project = Project::new();
    project.rules(&pipeline(&lint("lint", r#"["true"]"#, "")));
    hook(&project, "claude", &stop(&project, "s1", "All done.")).passed();
    let table = status(&project, &[]);
    let row = hook_row(&table);
    // TASK VERDICT CURRENT ATTEMPT AGE: the session's PASS, no done file to be current with.
    assert_eq!(row[1], "PASS", "{table}");
    assert_eq!(row[2], "-", "{table}");
    assert_eq!(row[3], "1/3", "{table}");
    assert_ne!(row[4], "-", "{table}");
    let json: serde_json::Value =
        serde_json::from_str(&status(&project, &["--format", "json"])).expect("json");
    assert_eq!(json[0]["verdict"], "PASS", "{json:#}");
    assert_eq!(json[0]["hook_session"], true, "{json:#}");

    // A failing stop is shown as such, with its attempt.
    project.rules(&pipeline(&lint("lint", r#"["false"]"#, "")));
    hook(&project, "claude", &stop(&project, "s1", "Done again.")).blocked("block");
    let table = status(&project, &[]);
    let row = hook_row(&table);
    assert_eq!(row[1], "FAIL", "{table}");
    assert_eq!(row[3], "1/3", "{table}");
}

