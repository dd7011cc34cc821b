//! The `schema` rule's drafts, formats and remote `$ref`s, through the real binary: `format`
//! asserted in every draft unless `formats: false`; `draft:` for a schema without `$schema`, and
//! messages that say when 2020-12 was assumed; `refs:` mapping a URL prefix to a directory, read
//! without ever leaving it, and every other remote `$ref` refused with a message that says how
//! to use a local file. (The JSON-Schema-Test-Suite itself runs as a unit test in
//! `src/rules/schema.rs`, through the same `refs:` mapping.)

use std::path::Path;

use serde_json::Value;

use crate::common::{Project, gate, isolate_git, json_verdict, pipeline, validator};

fn run_check(project: &Project) -> (i32, Value) {
    let mut cmd = project.check();
    cmd.args(["--format", "json"]);
    isolate_git(&mut cmd);
    json_verdict(cmd)
}

/// A `schema` gate named `report` over `files`, reading `schemas/report.schema.json`, with
/// `extra` YAML lines (indented 8) appended.
fn schema_gate(files: &str, extra: &str) -> String {
    pipeline(&format!(
        "      - name: report\n        rule: schema\n        schema: schemas/report.schema.json\n        files: {files}\n{extra}"
    ))
}

/// A project whose `report` gate checks `report.json` against `schema`.
fn project_with(schema: &str, extra: &str, document: &str) -> Project {
    let project = Project::new();
    project
        .rules(&schema_gate("[\"report.json\"]", extra))
        .root_file("schemas/report.schema.json", schema)
        .file("report.json", document);
    project
}

fn messages(gate: &Value) -> Vec<String> {
    gate["findings"]
        .as_array()
        .map(|found| {
            found
                .iter()
                .map(|f| f["message"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn summary(gate: &Value) -> &str {
    gate["summary"].as_str().unwrap_or_default()
}

/// `validator rules check` over the project's rules: (exit code, stdout and stderr).
fn rules_check(project: &Project) -> (i32, String) {
    let output = validator()
        .args(["rules", "check", "-c"])
        .arg(project.rules_path())
        .output()
        .expect("run validator");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code().unwrap_or(-1), text)
}

// ---------------------------------------------------------------------------------------------
// formats

fn ipv4_schema(dialect: &str) -> String {
    format!(
        r#"{{"$schema": "{dialect}", "type": "object", "properties": {{"ip": {{"type": "string", "format": "ipv4"}}}}}}"#
    )
}

#[test]
fn format_is_asserted_in_every_draft_by_default() {
    for dialect in [
        "https://json-schema.org/draft/2020-12/schema",
        "https://json-schema.org/draft/2019-09/schema",
        "http://json-schema.org/draft-07/schema#",
        "http://json-schema.org/draft-04/schema#",
    ] {
        let project = project_with(&ipv4_schema(dialect), "", r#"{"ip": "999.1.1.1"}"#);
        let (code, verdict) = run_check(&project);
        assert_eq!(code, 1, "{dialect}: {verdict:#}");
        let report = gate(&verdict, "report");
        let found = messages(report);
        assert_eq!(found.len(), 1, "{dialect}: {report:#}");
        assert!(found[0].starts_with("/ip"), "{dialect}: {report:#}");
        assert!(found[0].contains("ipv4"), "{dialect}: {report:#}");

        project.file("report.json", r#"{"ip": "10.0.0.1"}"#);
        let (code, verdict) = run_check(&project);
        assert_eq!(code, 0, "{dialect}: {verdict:#}");
    }
}

#[test]
fn formats_false_leaves_format_an_annotation() {
    for dialect in [
        "https://json-schema.org/draft/2020-12/schema",
        "http://json-schema.org/draft-07/schema#",
    ] {
        let project = project_with(
            &ipv4_schema(dialect),
            "        formats: false\n",
            r#"{"ip": "999.1.1.1"}"#,
        );
        let (code, verdict) = run_check(&project);
        assert_eq!(code, 0, "{dialect}: {verdict:#}");
        assert_eq!(gate(&verdict, "report")["outcome"], "pass");
    }
}

#[test]
fn a_format_validator_does_not_know_is_ignored() {
    let project = project_with(
        r#"{"$schema": "https://json-schema.org/draft/2020-12/schema", "properties": {"v": {"format": "semver"}}}"#,
        "",
        r#"{"v": "not a version"}"#,
    );
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 0, "{verdict:#}");
}

// ---------------------------------------------------------------------------------------------
// draft

/// Draft 4's boolean `exclusiveMaximum`, which later drafts' meta-schemas refuse.
const DRAFT4_WITHOUT_DIALECT: &str = r#"{
  "type": "object",
  "properties": {"count": {"type": "integer", "maximum": 10, "exclusiveMaximum": true}}
}"#;

#[test]
fn a_schema_without_dollar_schema_is_read_as_2020_12_and_the_error_says_so() {
    let project = project_with(DRAFT4_WITHOUT_DIALECT, "", r#"{"count": 10}"#);
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 2, "{verdict:#}");
    let report = gate(&verdict, "report");
    assert_eq!(report["outcome"], "error");
    let text = summary(report);
    assert!(text.contains("report.schema.json"), "{text}");
    assert!(
        text.contains("/properties/count/exclusiveMaximum"),
        "{text}"
    );
    assert!(text.contains("draft 2020-12"), "{text}");
    assert!(
        text.contains("draft:") && text.contains("$schema"),
        "{text}"
    );

    // `rules check` says the same before anything runs.
    let (_, out) = rules_check(&project);
    assert!(
        out.contains("draft 2020-12") && out.contains("draft:"),
        "{out}"
    );
}

#[test]
fn draft_reads_a_schema_without_dollar_schema() {
    for draft in ["4", "\"4\""] {
        let project = project_with(
            DRAFT4_WITHOUT_DIALECT,
            &format!("        draft: {draft}\n"),
            r#"{"count": 10}"#,
        );
        let (code, verdict) = run_check(&project);
        assert_eq!(code, 1, "{verdict:#}");
        let found = messages(gate(&verdict, "report"));
        assert_eq!(found.len(), 1, "{verdict:#}");
        assert!(found[0].starts_with("/count"), "{found:?}");
        // Named, not assumed: no note.
        assert!(!found[0].contains("assumed"), "{found:?}");
        assert!(!found[0].contains("read as"), "{found:?}");

        project.file("report.json", r#"{"count": 9}"#);
        let (code, verdict) = run_check(&project);
        assert_eq!(code, 0, "{verdict:#}");
    }
}

#[test]
fn each_draft_name_is_accepted() {
    // `2019-09` and `2020-12` stay strings in YAML; 6 and 7 are numbers, like 4.
    for draft in ["6", "7", "2019-09", "2020-12"] {
        let project = project_with(
            r#"{"properties": {"count": {"type": "integer"}}}"#,
            &format!("        draft: {draft}\n"),
            r#"{"count": "x"}"#,
        );
        let (code, verdict) = run_check(&project);
        assert_eq!(code, 1, "draft {draft}: {verdict:#}");
        let found = messages(gate(&verdict, "report"));
        assert_eq!(found.len(), 1, "draft {draft}: {verdict:#}");
    }
}

#[test]
fn findings_of_an_assumed_draft_say_it_was_assumed() {
    let project = project_with(
        r#"{"properties": {"count": {"type": "integer"}}}"#,
        "",
        r#"{"count": "x"}"#,
    );
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let found = messages(gate(&verdict, "report"));
    assert_eq!(found.len(), 1, "{verdict:#}");
    assert!(found[0].starts_with("/count"), "{found:?}");
    assert!(found[0].contains("read as draft 2020-12"), "{found:?}");
    assert!(
        found[0].contains("`draft:`") && found[0].contains("`$schema`"),
        "{found:?}"
    );
}

#[test]
fn a_draft_that_contradicts_dollar_schema_is_an_error() {
    let project = project_with(
        &ipv4_schema("http://json-schema.org/draft-04/schema#"),
        "        draft: 7\n",
        r#"{"ip": "10.0.0.1"}"#,
    );
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 2, "{verdict:#}");
    let text = summary(gate(&verdict, "report"));
    assert!(
        text.contains("draft 4") && text.contains("draft: 7"),
        "{text}"
    );
    assert!(text.contains("remove `draft:`"), "{text}");

    // Agreeing is fine.
    let project = project_with(
        &ipv4_schema("http://json-schema.org/draft-04/schema#"),
        "        draft: 4\n",
        r#"{"ip": "10.0.0.1"}"#,
    );
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 0, "{verdict:#}");
}

#[test]
fn an_unknown_draft_is_a_rules_error_at_its_line() {
    for draft in ["5", "draft-07", "2021-01", "[4]"] {
        let project = project_with(
            r#"{"type": "object"}"#,
            &format!("        draft: {draft}\n"),
            "{}",
        );
        let (code, out) = rules_check(&project);
        assert_eq!(code, 2, "{draft}: {out}");
        assert!(out.contains("validator.yaml:10"), "{draft}: {out}");
        assert!(out.contains("2019-09"), "{draft}: {out}");
    }
}

// ---------------------------------------------------------------------------------------------
// refs

const COUNT_SCHEMA: &str = r#"{"type": "integer", "minimum": 0}"#;

fn remote_ref_schema(url: &str) -> String {
    format!(
        r#"{{"$schema": "https://json-schema.org/draft/2020-12/schema", "properties": {{"count": {{"$ref": "{url}"}}}}}}"#
    )
}

#[test]
fn a_remote_ref_says_validator_never_fetches_and_how_to_use_a_local_file() {
    let project = project_with(
        &remote_ref_schema("https://example.com/schemas/count.json"),
        "",
        r#"{"count": 3}"#,
    );
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 2, "{verdict:#}");
    let text = summary(gate(&verdict, "report"));
    assert!(
        text.contains("https://example.com/schemas/count.json"),
        "{text}"
    );
    assert!(text.contains("never fetches"), "{text}");
    assert!(text.contains("local file"), "{text}");
    assert!(
        text.contains(r#"refs: {"https://example.com/schemas/": "#),
        "{text}"
    );
    // Not the crate's own words about its build features.
    assert!(!text.contains("resolve-http"), "{text}");
    assert!(!text.contains("feature"), "{text}");
}

#[test]
fn refs_reads_a_mapped_url_from_its_directory() {
    let project = project_with(
        &remote_ref_schema("https://Example.com/schemas/v1/count.json"),
        "        refs: {\"https://example.com/schemas/\": \"vendored/\"}\n",
        r#"{"count": -1}"#,
    );
    project.root_file("vendored/v1/count.json", COUNT_SCHEMA);
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let found = messages(gate(&verdict, "report"));
    assert_eq!(found.len(), 1, "{verdict:#}");
    assert!(found[0].starts_with("/count"), "{found:?}");

    project.file("report.json", r#"{"count": 2}"#);
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 0, "{verdict:#}");

    // A URL under no prefix is still refused.
    project.root_file(
        "schemas/report.schema.json",
        &remote_ref_schema("https://example.org/schemas/v1/count.json"),
    );
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 2, "{verdict:#}");
    assert!(
        summary(gate(&verdict, "report")).contains("never fetches"),
        "{verdict:#}"
    );
}

#[test]
fn the_longest_prefix_wins_and_yaml_files_are_read_too() {
    let project = project_with(
        &remote_ref_schema("https://example.com/schemas/special/count.yaml"),
        "        refs:\n          \"https://example.com/schemas/\": general\n          \"https://example.com/schemas/special/\": special\n",
        r#"{"count": "x"}"#,
    );
    project
        .root_file("general/special/count.yaml", "type: string\n")
        .root_file("special/count.yaml", "type: integer\n");
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert!(
        messages(gate(&verdict, "report"))[0].contains("integer"),
        "{verdict:#}"
    );
}

#[test]
fn refs_never_leaves_its_directory() {
    let refs = "        refs: {\"https://example.com/schemas/\": \"vendored\"}\n";
    let project = project_with(
        &remote_ref_schema("https://example.com/schemas/count.json"),
        refs,
        r#"{"count": 3}"#,
    );
    project
        .root_file("vendored/count.json", COUNT_SCHEMA)
        .root_file("secret.json", COUNT_SCHEMA);

    // An escaped `..` is decoded and resolved away before the prefix is matched (no longer
    // under it: refused as remote); an escaped `/` stays in one segment, refused by name.
    for (url, refusal) in [
        (
            "https://example.com/schemas/%2e%2e/secret.json",
            "never fetches",
        ),
        (
            "https://example.com/schemas/%2E%2E/secret.json",
            "never fetches",
        ),
        (
            "https://example.com/schemas/a%2f..%2f..%2fsecret.json",
            "not a path inside",
        ),
        (
            "https://example.com/schemas/a%2F..%2F..%2Fsecret.json",
            "not a path inside",
        ),
    ] {
        project.root_file("schemas/report.schema.json", &remote_ref_schema(url));
        let (code, verdict) = run_check(&project);
        assert_eq!(code, 2, "{url}: {verdict:#}");
        let text = summary(gate(&verdict, "report"));
        assert!(text.contains(refusal), "{url}: {text}");
    }

    // A plain `..` is resolved away before the prefix is matched: no longer under it.
    project.root_file(
        "schemas/report.schema.json",
        &remote_ref_schema("https://example.com/schemas/../secret.json"),
    );
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 2, "{verdict:#}");
    assert!(
        summary(gate(&verdict, "report")).contains("never fetches"),
        "{verdict:#}"
    );

    // A link inside the directory that leads out of it.
    std::os::unix::fs::symlink(
        project.path().join("secret.json"),
        project.path().join("vendored/link.json"),
    )
    .expect("symlink");
    project.root_file(
        "schemas/report.schema.json",
        &remote_ref_schema("https://example.com/schemas/link.json"),
    );
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 2, "{verdict:#}");
    let text = summary(gate(&verdict, "report"));
    assert!(text.contains("link") && text.contains("outside"), "{text}");

    // A link to a directory out of it.
    std::os::unix::fs::symlink(project.path(), project.path().join("vendored/up")).expect("link");
    project.root_file(
        "schemas/report.schema.json",
        &remote_ref_schema("https://example.com/schemas/up/secret.json"),
    );
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 2, "{verdict:#}");
    assert!(
        summary(gate(&verdict, "report")).contains("outside"),
        "{verdict:#}"
    );
}

#[test]
fn refs_reads_only_regular_files() {
    let project = project_with(
        &remote_ref_schema("https://example.com/schemas/fifo.json"),
        "        refs: {\"https://example.com/schemas/\": \"vendored\"}\n",
        r#"{"count": 3}"#,
    );
    std::fs::create_dir_all(project.path().join("vendored/dir.json")).expect("mkdir");
    nix_mkfifo(&project.path().join("vendored/fifo.json"));
    // A FIFO nobody writes to would block a plain open: refused at once instead.
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 2, "{verdict:#}");
    let text = summary(gate(&verdict, "report"));
    assert!(text.contains("not a regular file"), "{text}");

    project.root_file(
        "schemas/report.schema.json",
        &remote_ref_schema("https://example.com/schemas/dir.json"),
    );
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 2, "{verdict:#}");
    assert!(
        summary(gate(&verdict, "report")).contains("not a regular file"),
        "{verdict:#}"
    );
}

fn nix_mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo");
    assert!(status.success());
}

#[test]
fn a_bad_refs_entry_is_a_rules_error() {
    for (refs, expected) in [
        (
            "{\"https://example.com/schemas\": \"vendored\"}",
            "does not end with `/`",
        ),
        (
            "{\"ftp://example.com/schemas/\": \"vendored\"}",
            "http or https",
        ),
        ("{\"schemas/\": \"vendored\"}", "http or https"),
    ] {
        let project = project_with(
            r#"{"type": "object"}"#,
            &format!("        refs: {refs}\n"),
            "{}",
        );
        let (code, out) = rules_check(&project);
        assert_eq!(code, 2, "{refs}: {out}");
        assert!(out.contains("validator.yaml:10"), "{refs}: {out}");
        assert!(out.contains(expected), "{refs}: {out}");
    }
}

#[test]
fn a_refs_directory_that_does_not_exist_is_an_error_before_anything_runs() {
    let project = project_with(
        &remote_ref_schema("https://example.com/schemas/count.json"),
        "        refs: {\"https://example.com/schemas/\": \"missing\"}\n",
        r#"{"count": 3}"#,
    );
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 2, "{verdict:#}");
    let text = summary(gate(&verdict, "report"));
    assert!(text.contains("missing") && text.contains("refs:"), "{text}");
    let (_, out) = rules_check(&project);
    assert!(out.contains("not a directory"), "{out}");
}

#[test]
fn a_local_ref_beside_the_schema_is_read_even_through_an_odd_path() {
    // The schema's own path has a space and a `#`: its URI must escape them.
    let project = Project::new();
    project
        .rules(&pipeline(
            "      - name: report\n        rule: schema\n        schema: \"odd dir #1/report.schema.json\"\n        files: [\"report.json\"]\n",
        ))
        .root_file(
            "odd dir #1/report.schema.json",
            r#"{"$schema": "https://json-schema.org/draft/2020-12/schema", "properties": {"count": {"$ref": "count.json"}}}"#,
        )
        .root_file("odd dir #1/count.json", COUNT_SCHEMA)
        .file("report.json", r#"{"count": -5}"#);
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert!(
        messages(gate(&verdict, "report"))[0].starts_with("/count"),
        "{verdict:#}"
    );
}

#[test]
fn a_custom_meta_schema_is_read_through_refs_or_refused_clearly() {
    let project = project_with(
        r#"{"$schema": "https://example.com/meta/strict.json", "properties": {"count": {"type": "integer"}}}"#,
        "",
        r#"{"count": "x"}"#,
    );
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 2, "{verdict:#}");
    let text = summary(gate(&verdict, "report"));
    assert!(
        text.contains("https://example.com/meta/strict.json"),
        "{text}"
    );
    assert!(
        text.contains("never fetches") && text.contains("refs:"),
        "{text}"
    );
    assert!(!text.contains("registry"), "{text}");

    // A local copy of the meta-schema, mapped: the schema is read by it.
    project
        .rules(&schema_gate(
            "[\"report.json\"]",
            "        refs: {\"https://example.com/meta/\": meta}\n",
        ))
        .root_file(
            "meta/strict.json",
            r#"{"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://example.com/meta/strict.json", "$ref": "https://json-schema.org/draft/2020-12/schema"}"#,
        );
    let (code, verdict) = run_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert!(
        messages(gate(&verdict, "report"))[0].starts_with("/count"),
        "{verdict:#}"
    );
}
