//! Starting a project: `validator rules schema`, the `rules/` starter packs and `validator init`,
//! through the real binary on real temporary directories.

mod common;

use std::path::PathBuf;

use serde_json::Value;

use common::validator;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `validator rules schema`, run where there is no rules file at all.
fn printed_schema() -> String {
    let empty = tempfile::tempdir().expect("temp dir");
    let output = validator()
        .args(["rules", "schema"])
        .current_dir(empty.path())
        .output()
        .expect("run validator");
    assert!(
        output.status.success(),
        "rules schema failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 schema")
}

fn schema() -> Value {
    serde_json::from_str(&printed_schema()).expect("rules schema prints JSON")
}

/// Whether `yaml` validates against the printed schema, and the errors if not.
fn schema_errors(yaml: &str) -> Vec<String> {
    let instance: Value = yaml_serde::from_str(yaml).expect("YAML parses");
    let schema = schema();
    let validator = jsonschema::draft7::new(&schema).expect("the schema compiles");
    validator
        .iter_errors(&instance)
        .map(|err| format!("{} at {}", err, err.instance_path()))
        .collect()
}

#[test]
fn the_committed_schema_is_what_rules_schema_prints() {
    let committed = std::fs::read_to_string(repo().join("schema/validator.schema.json"))
        .expect("schema/validator.schema.json is committed");
    assert!(
        committed == printed_schema(),
        "schema/validator.schema.json is stale; refresh it:\n  cargo run -q -- rules schema > schema/validator.schema.json"
    );
}

#[test]
fn the_schema_is_draft_07_and_says_what_each_key_is() {
    let schema = schema();
    jsonschema::draft7::meta::validate(&schema).expect("a valid draft-07 schema");
    assert_eq!(schema["$schema"], "http://json-schema.org/draft-07/schema#");
    let gate = &schema["definitions"]["GateSpec"]["properties"];
    for key in ["run", "inputs", "on_fail", "timeout", "paths", "allow"] {
        let about = gate[key]["description"].as_str().unwrap_or_default();
        assert!(about.len() > 20, "`{key}` has no description: {about:?}");
    }
}

#[test]
fn the_schema_rejects_unknown_keys_and_wrong_types_as_the_loader_does() {
    let project = tempfile::tempdir().expect("temp dir");
    let good = "version: 1\npipelines:\n  - name: main\n    gates:\n      - name: test\n        rule: test\n        run: cargo test\n        timeout: 5m\n";
    assert!(schema_errors(good).is_empty(), "{:?}", schema_errors(good));
    for (bad, says) in [
        (good.replace("timeout: 5m", "on_fial: BLOCK"), "on_fial"),
        (good.replace("timeout: 5m", "timeout: 5"), "timeout"),
        (good.replace("timeout: 5m", "paths: [src]"), "paths"),
        (good.replace("rule: test", "rule: tests"), "rule"),
        (good.replace("version: 1", "version: 2"), "version"),
        (format!("{good}stagign: x\n"), "stagign"),
    ] {
        let errors = schema_errors(&bad).join("\n");
        assert!(
            errors.contains(says),
            "schema let through:\n{bad}\nerrors: {errors}"
        );
        let rules = project.path().join("validator.yaml");
        std::fs::write(&rules, &bad).expect("write rules");
        validator()
            .args(["rules", "check", "-c"])
            .arg(&rules)
            .assert()
            .code(2);
    }
}
