//! A rules-file error is drawn with the line the loader counted to: a gates.json's positions are
//! serde_json's (lines end at LF alone), a validator.yaml's are YAML's (CR, NEL, LS, PS too).

use crate::common::{Project, validator};

/// `rules check` on `name` holding `source`: its stderr.
fn rules_check_stderr(project: &Project, name: &str, source: &str) -> String {
    let path = project.path().join(name);
    std::fs::write(&path, source).expect("write");
    let output = validator()
        .current_dir(project.path())
        .arg("-c")
        .arg(&path)
        .args(["rules", "check"])
        .output()
        .expect("run validator");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_gates_json_error_quotes_the_line_its_number_names_past_a_line_separator_in_a_string() {
    let project = Project::new();
    let stderr = rules_check_stderr(
        &project,
        "gates.json",
        "{\n  \"gates\": {\"check\": {\"command\": \"echo a\u{2028}b\"}},\n  \"hooks\": {\"Stop\": {\"gates\": [\"check\", \"lint\"]}}\n}\n",
    );
    assert!(
        stderr.contains(":3:41: the Stop hook lists gate `lint`"),
        "{stderr}"
    );
    let quoted = stderr
        .lines()
        .find(|line| line.trim_start().starts_with("3 |"))
        .unwrap_or_else(|| panic!("no line 3 quoted:\n{stderr}"));
    assert!(quoted.contains("\"hooks\""), "{stderr}");
    assert!(
        !stderr.contains("b\"}}"),
        "the wrong line is quoted:\n{stderr}"
    );
}

#[test]
fn a_yaml_error_still_counts_a_lone_carriage_return_as_a_line() {
    let project = Project::new();
    let stderr = rules_check_stderr(
        &project,
        "validator.yaml",
        "version: 1 # c\rstate: state\npipelines:\n  - name: main\n    gates:\n      - name: a\n        rule: exists\n        on_fial: BLOCK\n",
    );
    let quoted = stderr
        .lines()
        .find(|line| line.contains("on_fial: BLOCK"))
        .unwrap_or_else(|| panic!("the line is not quoted:\n{stderr}"));
    assert!(quoted.trim_start().starts_with("8 |"), "{stderr}");
}
