//! `init --from` reads a map of `scripts` or `commands` (a package.json's, a task runner's) as
//! what it is: everything the project can run, not its checks. Only an entry whose name says
//! it is a check (`lint`, `test`, `typecheck`) becomes a gate; `deploy`, `release` or `clean`
//! is listed as not carried over and never runs. A map under `gates` or `checks` is the
//! checks, whatever its names.

use crate::common::{self, Project};

#[test]
fn scripts_that_deploy_publish_or_delete_never_become_gates() {
    let project = Project::new();
    let canary = project.path().join("canary");
    std::fs::create_dir_all(&canary).expect("canary dir");
    let ran = |n: u32| format!("touch {}/{n}", canary.display());
    let from = project.path().join("gates.json");
    let gates = serde_json::json!({
        "scripts": {"lint": "true --lint", "deploy": ran(1), "release": ran(2), "clean": ran(3)},
        "commands": {"test": "true --test", "publish": ran(4)},
        "gates": {"eslint": "true --eslint"}
    });
    std::fs::write(&from, gates.to_string()).expect("write gates.json");
    let output = common::validator()
        .arg("-c")
        .arg(project.rules_path())
        .args(["init", "--from"])
        .arg(&from)
        .output()
        .expect("run validator");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    for key in [
        "`scripts.deploy`",
        "`scripts.release`",
        "`scripts.clean`",
        "`commands.publish`",
    ] {
        assert!(stdout.contains(key), "{key} not reported:\n{stdout}");
    }
    let yaml = std::fs::read_to_string(project.rules_path()).expect("written");
    for run in yaml.lines().filter(|l| l.trim_start().starts_with("run:")) {
        assert!(
            !run.contains("canary"),
            "a script became a gate: {run}\n{yaml}"
        );
    }
    for gate in ["name: lint", "name: test", "name: eslint"] {
        assert!(yaml.contains(gate), "{gate} not converted:\n{yaml}");
    }
    let (_, verdict) = project.verdict();
    assert_eq!(verdict["verdict"], "PASS", "{verdict}");
    let written: Vec<_> = std::fs::read_dir(&canary)
        .expect("canary")
        .flatten()
        .collect();
    assert!(written.is_empty(), "a script ran: {written:?}");
}
