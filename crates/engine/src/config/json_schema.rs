//! The JSON Schema of the rules file, printed by `validator rules schema` and read by editors
//! (`yaml-language-server`) for completion, hover help and errors as the user types.
//!
//! It is derived from the serde types in `raw.rs` (schemars): their doc comments are the
//! descriptions, `deny_unknown_fields` becomes `additionalProperties: false`, and the custom
//! scalars (durations, globs, commands, routes) carry their own schemas. What the types cannot
//! say is added from the rule registry: which keys each rule takes (`Rule::keys`) and which it
//! cannot do without, so an editor flags `run:` on a `status` gate as the loader would.
//!
//! Draft-07, because it is the draft every editor's YAML and JSON support reads fully.
//!
//! The handoff contracts' schema (`rules schema --contract`) is made the same way from the
//! contract loader's types, with the two shapes (the terms at the top, or under `contract:`)
//! told apart by the loader's own list of terms.

use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use super::raw::{RawRules, RuleKind};
use crate::rules::{Required, Rule};

/// The rules file's JSON Schema.
pub fn rules_schema() -> Value {
    let generator = SchemaSettings::draft07().into_generator();
    let mut schema = generator.into_root_schema_for::<RawRules>().to_value();
    constrain_gates(&mut schema);
    describe_rule_keys(&mut schema);
    tidy(&mut schema);
    schema
}

/// The schema as `validator rules schema` prints it (and `schema/validator.schema.json` holds
/// it): pretty JSON and a final newline.
pub fn rules_schema_text() -> String {
    let mut text = serde_json::to_string_pretty(&rules_schema()).unwrap_or_default();
    text.push('\n');
    text
}

/// The keys a rule refuses to go without, from its declaration (a unit test holds it to what
/// its `from_spec` checks).
fn required(kind: RuleKind) -> Value {
    match Rule::about(kind).required {
        Required::None => json!({}),
        Required::All(keys) => json!({ "required": keys }),
        Required::AnyOf(keys) => {
            json!({"anyOf": keys.iter().map(|key| json!({"required": [key]})).collect::<Vec<_>>()})
        }
    }
}

/// Rules whose result depends on more than files, and so refuse `inputs:` (as the loader does).
fn uncacheable(kind: RuleKind) -> bool {
    !Rule::about(kind).cacheable
}

/// Adds, for each rule a gate can name, an `if rule is K then` clause: the other rules' keys
/// are not allowed and the rule's own required keys are required.
fn constrain_gates(schema: &mut Value) {
    let kinds = gate_kinds(schema);
    let Some(gate) = schema.pointer_mut("/definitions/GateSpec") else {
        return;
    };
    let rule_keys: Vec<&str> = kinds
        .iter()
        .flat_map(|kind| Rule::keys(*kind).iter().copied())
        .collect();
    let mut clauses = Vec::new();
    for kind in kinds {
        let own = Rule::keys(kind);
        let mut refused: Map<String, Value> = rule_keys
            .iter()
            .filter(|key| !own.contains(key))
            .map(|key| ((*key).to_owned(), Value::Bool(false)))
            .collect();
        if uncacheable(kind) {
            refused.insert("inputs".into(), Value::Bool(false));
        }
        let mut then = json!({"properties": refused});
        if let (Some(then), Value::Object(needed)) = (then.as_object_mut(), required(kind)) {
            then.extend(needed);
        }
        clauses.push(json!({
            "if": {"properties": {"rule": {"const": kind.as_str()}}, "required": ["rule"]},
            "then": then,
        }));
    }
    if let Some(gate) = gate.as_object_mut() {
        gate.insert("allOf".into(), Value::Array(clauses));
    }
}

/// Ends each rule's description with the keys it takes, from the registry.
fn describe_rule_keys(schema: &mut Value) {
    let Some(Value::Array(variants)) = schema.pointer_mut("/definitions/RuleKind/oneOf") else {
        return;
    };
    for variant in variants {
        let Some(kind) = variant
            .get("const")
            .and_then(|name| serde_json::from_value::<RuleKind>(name.clone()).ok())
        else {
            continue;
        };
        let keys = match Rule::keys(kind) {
            [] => "none of its own".to_owned(),
            keys => keys.join(", "),
        };
        if let Some(Value::String(text)) = variant.get_mut("description") {
            text.push_str(&format!(" Keys: {keys}."));
        }
    }
}

/// Doc comments arrive with their source line breaks: joined here so an editor's hover wraps
/// the text itself (blank lines stay paragraph breaks). `default: null` comes from
/// `#[serde(default)]` on keys whose real default is named in their description; offered as
/// a completion it would write a null where a value belongs, so it goes.
pub(crate) fn tidy(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("default") == Some(&Value::Null) {
                map.remove("default");
            }
            for (key, inner) in map.iter_mut() {
                match inner {
                    Value::String(text) if key == "description" => {
                        *text = text
                            .split("\n\n")
                            .map(|paragraph| paragraph.split('\n').collect::<Vec<_>>().join(" "))
                            .collect::<Vec<_>>()
                            .join("\n\n");
                    }
                    _ => tidy(inner),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(tidy),
        _ => {}
    }
}

/// The rules a gate may name, read from the generated `RuleKind` definition itself so the
/// clauses cover exactly what the schema offers.
fn gate_kinds(schema: &Value) -> Vec<RuleKind> {
    let mut names = Vec::new();
    collect_consts(
        schema
            .pointer("/definitions/RuleKind")
            .unwrap_or(&Value::Null),
        &mut names,
    );
    names
        .into_iter()
        .filter_map(|name| serde_json::from_value(name).ok())
        .collect()
}

fn collect_consts(value: &Value, out: &mut Vec<Value>) {
    match value {
        Value::Object(map) => {
            if let Some(constant) = map.get("const") {
                out.push(constant.clone());
            }
            if let Some(Value::Array(values)) = map.get("enum") {
                out.extend(values.iter().cloned());
            }
            for (key, inner) in map {
                if key != "const" && key != "enum" {
                    collect_consts(inner, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_consts(item, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::Rules;

    /// Each rule with the least it needs, as YAML flow-mapping entries (a rule that needs
    /// keys fails the first test below until it is listed here).
    fn minimal(kind: RuleKind) -> &'static str {
        match kind {
            RuleKind::Exists => "paths: [\"a.txt\"]",
            RuleKind::Lint | RuleKind::Test | RuleKind::Review => "run: [\"true\"]",
            RuleKind::Schema => "schema: s.json, files: [\"a.json\"]",
            RuleKind::Content => "files: [\"a.txt\"], ban: [{pattern: x}]",
            RuleKind::CoChange => "when: [\"a\"], then: [\"b\"]",
            _ => "",
        }
    }

    /// A value every rule key accepts, for offering a key to a rule that does not take it.
    fn sample(key: &str) -> &'static str {
        match key {
            "non_empty" | "require_summary" | "changed_only" | "formats" => "true",
            "min_count" | "max_bytes" | "min_reason_words" => "1",
            "ban" | "require" => "[{pattern: x}]",
            "skip_marker" => "x",
            "env" => "{A: b}",
            "run" => "[\"true\"]",
            "cwd" | "junit" | "base" | "schema" | "report" => "x",
            _ => "[\"x\"]",
        }
    }

    fn rules(gate: &str) -> String {
        format!("version: 1\npipelines:\n  - name: p\n    gates:\n      - {{name: g, {gate}}}\n")
    }

    /// (the loader accepts it, the schema accepts it)
    fn judged(source: &str) -> (bool, bool) {
        let loaded = Rules::parse(Path::new("/nowhere/validator.yaml"), source);
        let instance: Value = yaml_serde::from_str(source).expect("test YAML parses");
        let validator = jsonschema::draft7::new(&rules_schema()).expect("schema compiles");
        (loaded.is_ok(), validator.is_valid(&instance))
    }

    fn kinds() -> Vec<RuleKind> {
        gate_kinds(&rules_schema())
    }

    #[test]
    fn is_a_valid_draft_07_schema_offering_every_rule_a_file_can_name() {
        jsonschema::draft7::meta::validate(&rules_schema()).expect("valid draft-07");
        let names: Vec<&str> = kinds().iter().map(|kind| kind.as_str()).collect();
        assert_eq!(
            names,
            [
                "exists",
                "lint",
                "test",
                "schema",
                "review",
                "file-scope",
                "status",
                "content",
                "co-change"
            ]
        );
    }

    #[test]
    fn agrees_with_the_loader_on_what_each_rule_needs_and_refuses() {
        let all_keys: Vec<&str> = kinds()
            .iter()
            .flat_map(|k| Rule::keys(*k).to_vec())
            .collect();
        for kind in kinds() {
            let base = format!("rule: {kind}, {}", minimal(kind));
            let base = base.trim_end_matches([',', ' ']);
            assert_eq!(judged(&rules(base)), (true, true), "{base}");
            for key in ["paths", "forbid", "run", "schema", "files"] {
                if minimal(kind).contains(&format!("{key}:")) {
                    let without = format!("rule: {kind}, {}", strip_key(minimal(kind), key));
                    let without = without.trim_end_matches([',', ' ']);
                    assert_eq!(judged(&rules(without)), (false, false), "{without}");
                }
            }
            for key in all_keys
                .iter()
                .filter(|key| !Rule::keys(kind).contains(key))
            {
                let stray = format!("{base}, {key}: {}", sample(key));
                assert_eq!(judged(&rules(&stray)), (false, false), "{stray}");
            }
            let cached = format!("{base}, inputs: [\"src/**\"]");
            let loader_takes_inputs = judged(&rules(&cached)).0;
            assert_eq!(
                judged(&rules(&cached)),
                (loader_takes_inputs, loader_takes_inputs)
            );
            assert_eq!(loader_takes_inputs, !uncacheable(kind), "{cached}");
        }
    }

    fn strip_key(entries: &str, key: &str) -> String {
        entries
            .split(", ")
            .filter(|entry| !entry.starts_with(&format!("{key}:")))
            .collect::<Vec<_>>()
            .join(", ")
    }

    #[test]
    fn refuses_what_the_loader_refuses_in_the_custom_scalars() {
        for bad in [
            "rule: lint, run: \"\"",
            "rule: lint, run: []",
            "rule: lint, run: [\"x\"], timeout: 10 minutes",
            "rule: exists, paths: [\"/etc/passwd\"]",
            "rule: exists, paths: [\"../up\"]",
            "rule: exists, paths: [\"a/../../b\"]",
            "rule: status, on_fail: 3",
            "rule: file_scope",
        ] {
            assert_eq!(judged(&rules(bad)), (false, false), "{bad}");
        }
        for good in [
            "rule: lint, run: cargo clippy, timeout: 1h30m",
            "rule: lint, run: [cargo, clippy], timeout: 500ms, on_fail: CONTINUE",
            "rule: exists, paths: [\"./src/**/*.rs\", \"{a,b}.txt\"]",
        ] {
            assert_eq!(judged(&rules(good)), (true, true), "{good}");
        }
    }

    #[test]
    fn descriptions_come_from_the_doc_comments_unwrapped() {
        let schema = rules_schema();
        let timeout = schema
            .pointer("/definitions/GateSpec/properties/timeout/description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        assert!(
            timeout.starts_with("Longest this gate may run"),
            "{timeout}"
        );
        assert!(!timeout.contains('\n'), "{timeout}");
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(
            schema["definitions"]["GateSpec"]["additionalProperties"],
            false
        );
    }

    /// (the loader accepts it, the schema accepts it) for a contract of task `t`.
    fn contract_judged(source: &str) -> (bool, bool) {
        let loaded =
            crate::contract::Contract::parse(Path::new("/c/t.yaml"), source.to_owned(), "t");
        let instance: Value = yaml_serde::from_str(source).expect("test YAML parses");
        let validator =
            jsonschema::draft7::new(&crate::contract::schema()).expect("schema compiles");
        (loaded.is_ok(), validator.is_valid(&instance))
    }

    #[test]
    fn the_contract_schema_agrees_with_the_loader() {
        jsonschema::draft7::meta::validate(&crate::contract::schema()).expect("valid draft-07");
        for good in [
            "task_id: t\n",
            "task_id: t\nfiles_owned: [\"src/**\"]\ncontext: why\nescalation: {blocked_contact: c}\n",
            "contract: {task_id: t, success_criteria: [\"Tests pass: cargo test\", \"it works\"]}\ncontext: {your_role: r}\n",
        ] {
            assert_eq!(contract_judged(good), (true, true), "{good}");
        }
        for bad in [
            "files_owned: [\"src/**\"]\n",
            "contract: {task_id: t}\nfiles_owned: [\"src/**\"]\n",
            "contract: {task_id: t, context: x}\n",
            "task_id: t\nextra: 1\n",
            "task_id: t\ncontext: {epic: x}\n",
            "task_id: t\ncontext: [x]\n",
            "task_id: t\nescalation: {contact: c}\n",
            "task_id: t\nfiles_owned: [\"/etc/**\"]\n",
            "task_id: t\ndependencies_completed: [\"a b\"]\n",
        ] {
            assert_eq!(contract_judged(bad), (false, false), "{bad}");
        }
    }
}
