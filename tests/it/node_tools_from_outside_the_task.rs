//! A task without its own `node_modules` passes on an enclosing directory's (node's
//! resolution walks up): the gate's line says where its packages came from. Through the real
//! binary and the real `node`.

use crate::common::{self, Project, gate, pipeline};

/// A task whose test gate requires `left-pad`, with `left-pad` installed in the directory
/// above the task (outside it).
fn project() -> Project {
    let project = Project::new();
    project
        .rules(&pipeline(
            "      - name: test\n        rule: test\n        run: [node, -e, \"require('left-pad')\"]\n",
        ))
        .root_file("node_modules/left-pad/index.js", "module.exports = () => ''\n")
        .file("package.json", "{\"name\": \"t\", \"version\": \"1.0.0\"}\n");
    project
}

fn node_here(test: &str) -> bool {
    crate::starter::tools_present(test, &[&["node", "--version"]])
}

#[test]
fn packages_from_outside_the_task_are_named_in_the_gates_line() {
    if !node_here("packages_from_outside_the_task_are_named_in_the_gates_line") {
        return;
    }
    let project = project();
    let (code, verdict) = project.verdict();
    assert_eq!(code, 0, "{verdict:#}");
    let summary = gate(&verdict, "test")["summary"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let outside = project
        .path()
        .canonicalize()
        .expect("root")
        .join("node_modules");
    assert!(
        summary.contains(&format!(
            "the task has no node_modules of its own: its packages and tools came from {}, outside the task",
            outside.display()
        )),
        "{summary}"
    );
}

#[test]
fn a_task_with_its_own_node_modules_gets_no_such_note() {
    if !node_here("a_task_with_its_own_node_modules_gets_no_such_note") {
        return;
    }
    let project = project();
    project.file(
        "node_modules/left-pad/index.js",
        "module.exports = () => ''\n",
    );
    let (code, verdict) = project.verdict();
    assert_eq!(code, 0, "{verdict:#}");
    let summary = common::gate(&verdict, "test")["summary"].to_string();
    assert!(!summary.contains("node_modules"), "{summary}");
}
