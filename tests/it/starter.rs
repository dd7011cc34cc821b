//! Starting a project: `validator rules schema`, the `rules/` starter packs and `validator init`,
//! through the real binary on real temporary directories.

use crate::common;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::validator;

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

// ---------------------------------------------------------------------------------------------
// The packs

const KINDS: [&str; 5] = ["rust", "python", "node", "go", "generic"];

fn pack(kind: &str) -> String {
    std::fs::read_to_string(repo().join("rules").join(format!("{kind}.yaml")))
        .unwrap_or_else(|err| panic!("rules/{kind}.yaml: {err}"))
}

/// What `init` writes for `kind`: the pack, its first line naming the schema beside it.
fn initialized(kind: &str) -> String {
    let pack = pack(kind);
    let (first, rest) = pack.split_once('\n').expect("a pack has lines");
    assert_eq!(
        first,
        "# yaml-language-server: $schema=../schema/validator.schema.json"
    );
    format!("# yaml-language-server: $schema=validator.schema.json\n{rest}")
}

#[test]
fn there_is_a_pack_for_every_kind_and_nothing_else() {
    let mut found: Vec<String> = std::fs::read_dir(repo().join("rules"))
        .expect("rules/")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    found.sort();
    let mut expected: Vec<String> = KINDS.iter().map(|k| format!("{k}.yaml")).collect();
    expected.sort();
    assert_eq!(found, expected);
}

#[test]
fn every_pack_passes_rules_check_and_validates_against_the_schema() {
    for kind in KINDS {
        let path = repo().join("rules").join(format!("{kind}.yaml"));
        let output = validator()
            .args(["rules", "check", "-c"])
            .arg(&path)
            .output()
            .expect("run validator");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "rules check failed on rules/{kind}.yaml:\n{stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(stdout.contains(": valid, 1 pipeline,"), "{stdout}");
        for gate in ["status", "outputs", "scope", "lint", "test"] {
            assert!(
                stdout.contains(&format!(" {gate} ")),
                "rules/{kind}.yaml has no `{gate}` gate:\n{stdout}"
            );
        }
        let errors = schema_errors(&pack(kind));
        assert!(
            errors.is_empty(),
            "rules/{kind}.yaml against the schema: {errors:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// validator init

/// `validator init ARGS` in `dir`; (exit code, stdout, stderr).
fn init(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let output = validator()
        .arg("init")
        .args(args)
        .current_dir(dir)
        // init needs no rules file: a broken pointer to one must not matter.
        .env("VALIDATOR_CONFIG", dir.join("nowhere.yaml"))
        .output()
        .expect("run validator init");
    (
        output.status.code().expect("exit code"),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// `rules check` finds ./validator.yaml in `dir` and passes it.
fn assert_rules_check_passes(dir: &Path) {
    let output = validator()
        .args(["rules", "check"])
        .current_dir(dir)
        .output()
        .expect("run validator");
    assert!(
        output.status.success(),
        "rules check failed in {}:\n{}{}",
        dir.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn init_detects_each_marker_and_writes_its_pack_and_schema() {
    for (marker, kind) in [
        ("Cargo.toml", "rust"),
        ("go.mod", "go"),
        ("pyproject.toml", "python"),
        ("setup.py", "python"),
        ("requirements.txt", "python"),
        ("package.json", "node"),
    ] {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join(marker), "").expect("write marker");
        let (code, stdout, stderr) = init(dir.path(), &[]);
        assert_eq!(code, 0, "init with {marker}: {stdout}{stderr}");
        assert!(
            stdout.contains(&format!("detected a {kind} project: {marker}")),
            "{stdout}"
        );
        assert!(
            stdout.contains(&format!("wrote validator.yaml: the {kind} pack")),
            "{stdout}"
        );
        assert!(
            stdout.contains("run the gates over this directory: validator check"),
            "{stdout}"
        );
        assert!(
            stdout.contains("keep state in `.validator/` (this pack's `check` writes none), and the watcher's workers write their tasks in `.validator/staging/`"),
            "{stdout}"
        );
        assert_eq!(
            read(&dir.path().join("validator.yaml")),
            initialized(kind),
            "{marker}"
        );
        assert_eq!(
            read(&dir.path().join("validator.schema.json")),
            printed_schema()
        );
        assert_rules_check_passes(dir.path());
    }
}

#[test]
fn init_without_a_marker_writes_the_generic_pack_and_says_what_to_edit() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join(".gitignore"), "/build\n.validator/\n").expect("gitignore");
    let (code, stdout, stderr) = init(dir.path(), &[]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains("no project file found here (Cargo.toml, go.mod"),
        "{stdout}"
    );
    assert!(stdout.contains("now `make lint`, `make test`"), "{stdout}");
    assert!(
        !stdout.contains(".gitignore"),
        "the state is ignored already: {stdout}"
    );
    assert_eq!(
        read(&dir.path().join("validator.yaml")),
        initialized("generic")
    );
    assert_rules_check_passes(dir.path());
}

#[test]
fn init_refuses_to_overwrite_a_rules_file_unless_forced() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("Cargo.toml"), "").expect("marker");
    let rules = dir.path().join("validator.yaml");
    std::fs::write(&rules, "# mine\n").expect("rules");
    let (code, stdout, stderr) = init(dir.path(), &[]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stderr.contains("validator.yaml already exists; nothing was written"),
        "{stderr}"
    );
    assert!(stderr.contains("validator init --force"), "{stderr}");
    assert_eq!(read(&rules), "# mine\n");
    assert!(!dir.path().join("validator.schema.json").exists());

    let (code, stdout, stderr) = init(dir.path(), &["--force"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(read(&rules), initialized("rust"));
}

#[test]
fn init_refreshes_its_own_schema_but_not_a_stranger_file_of_that_name() {
    let dir = tempfile::tempdir().expect("temp dir");
    let schema = dir.path().join("validator.schema.json");
    std::fs::write(
        &schema,
        "{\"title\": \"validator rules file\", \"old\": true}",
    )
    .expect("old");
    let (code, stdout, stderr) = init(dir.path(), &[]);
    assert_eq!(
        code, 0,
        "an older schema of ours is refreshed: {stdout}{stderr}"
    );
    assert_eq!(read(&schema), printed_schema());

    let dir = tempfile::tempdir().expect("temp dir");
    let schema = dir.path().join("validator.schema.json");
    std::fs::write(&schema, "{\"title\": \"something else\"}").expect("foreign");
    let (code, _, stderr) = init(dir.path(), &[]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("is not a schema `validator init` wrote"),
        "{stderr}"
    );
    assert!(!dir.path().join("validator.yaml").exists());
    let (code, _, stderr) = init(dir.path(), &["--force"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(read(&schema), printed_schema());
}

#[test]
fn kind_overrides_detection_and_several_markers_are_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("Cargo.toml"), "").expect("marker");
    std::fs::write(dir.path().join("package.json"), "{}").expect("marker");
    let (code, stdout, stderr) = init(dir.path(), &[]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains("detected a rust project: Cargo.toml"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "also found package.json: `validator init --kind node --force` writes the node pack instead"
        ),
        "{stdout}"
    );

    let (code, stdout, stderr) = init(dir.path(), &["--kind", "node", "--force"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("kind: node (--kind)"), "{stdout}");
    assert_eq!(
        read(&dir.path().join("validator.yaml")),
        initialized("node")
    );

    let (code, _, stderr) = init(dir.path(), &["--kind", "ruby", "--force"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("[possible values: rust, python, node, go, generic]"),
        "{stderr}"
    );
}

#[test]
fn init_with_c_writes_the_rules_file_there_and_says_how_to_use_it() {
    let project = tempfile::tempdir().expect("temp dir");
    let outside = tempfile::tempdir().expect("temp dir");
    std::fs::write(project.path().join("go.mod"), "module x\n").expect("marker");
    let rules = outside.path().join("hooks/project.yaml");
    let (code, stdout, stderr) = init(project.path(), &["-c", &rules.to_string_lossy()]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(read(&rules), initialized("go"));
    assert_eq!(
        read(&outside.path().join("hooks/validator.schema.json")),
        printed_schema()
    );
    assert!(
        stdout.contains(&format!("validator check -c {}", rules.display())),
        "{stdout}"
    );
    assert!(
        !stdout.contains(".gitignore"),
        "the state is not in the project: {stdout}"
    );
    assert!(!project.path().join("validator.yaml").exists());
}

// ---------------------------------------------------------------------------------------------
// The packs run for real: `validator init`, then `validator check` as CI runs it

/// Whether every command runs here (each `[program, args...]`, e.g. a `--version`). When one
/// does not, the test says so on stderr and is skipped; with VALIDATOR_TEST_REQUIRE_TOOLS set
/// (a machine that installs them all), a missing tool fails the test instead.
pub(crate) fn tools_present(test: &str, commands: &[&[&str]]) -> bool {
    for command in commands {
        let ran = std::process::Command::new(command[0])
            .args(&command[1..])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        if !ran {
            let missing = command.join(" ");
            assert!(
                std::env::var_os("VALIDATOR_TEST_REQUIRE_TOOLS").is_none(),
                "{test}: `{missing}` does not run here, and VALIDATOR_TEST_REQUIRE_TOOLS is set"
            );
            eprintln!("SKIPPED {test}: `{missing}` does not run on this machine");
            return false;
        }
    }
    true
}

/// A project directory named `tiny` (its task name) holding `files`, with `validator init` run
/// in it; `init_args` may name the kind.
fn project(files: &[(&str, &str)], init_args: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().expect("temp dir");
    let dir = root.path().join("tiny");
    for (rel, content) in files {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write");
    }
    let (code, stdout, stderr) = init(&dir, init_args);
    assert_eq!(code, 0, "init: {stdout}{stderr}");
    (root, dir)
}

/// `validator check --format json` in `dir`, as CI runs it; (exit code, verdict).
fn check(dir: &Path, env: &[(&str, &Path)]) -> (i32, Value) {
    let mut cmd = validator();
    cmd.args(["check", "--format", "json"])
        .current_dir(dir)
        .env("RUST_BACKTRACE", "0")
        .env("NPM_CONFIG_UPDATE_NOTIFIER", "false");
    for (name, value) in env {
        cmd.env(name, value);
    }
    common::isolate_git(&mut cmd);
    common::json_verdict(cmd)
}

/// Each gate's `name: outcome`, for messages and assertions.
fn outcomes(verdict: &Value) -> Vec<String> {
    verdict["gates"]
        .as_array()
        .map(|gates| {
            gates
                .iter()
                .map(|g| {
                    format!(
                        "{}: {}",
                        g["name"].as_str().unwrap_or("?"),
                        g["outcome"].as_str().unwrap_or("?")
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The run passed every gate; the status gate had no signal to read (as in CI) and was skipped.
fn assert_passed(kind: &str, code: i32, verdict: &Value, gates: &[&str]) {
    assert_eq!(
        (code, verdict["verdict"].as_str()),
        (0, Some("PASS")),
        "the {kind} pack on a good project: {:?}\n{verdict:#}",
        outcomes(verdict)
    );
    assert_eq!(common::gate(verdict, "status")["outcome"], "skipped");
    assert_eq!(verdict["warnings"], serde_json::json!([]), "{verdict:#}");
    for gate in gates {
        assert_eq!(
            common::gate(verdict, gate)["outcome"],
            "pass",
            "{kind}: {:?}",
            outcomes(verdict)
        );
    }
}

/// The run failed at `gate`, and the verdict's reasons name `says`.
fn assert_failed_at(kind: &str, code: i32, verdict: &Value, gate: &str, says: &str) {
    assert_eq!(
        (code, verdict["verdict"].as_str()),
        (1, Some("FAIL")),
        "the {kind} pack should fail at {gate}: {:?}\n{verdict:#}",
        outcomes(verdict)
    );
    assert_eq!(
        common::gate(verdict, gate)["outcome"],
        "fail",
        "{:?}",
        outcomes(verdict)
    );
    let reported = format!(
        "{}\n{}",
        common::reasons(verdict),
        common::gate(verdict, gate)["findings"]
    );
    assert!(
        reported.contains(says),
        "{kind}: `{says}` not reported:\n{reported}"
    );
}

const CRATE_LIB: &str = "/// Adds two numbers.\npub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::add(2, 2), 4);\n    }\n}\n";

#[test]
fn the_rust_pack_passes_a_clean_crate_and_names_a_clippy_warning_and_a_failing_test() {
    let (root, dir) = project(
        &[
            (
                "Cargo.toml",
                "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
            ),
            ("src/lib.rs", CRATE_LIB),
            (".gitignore", "/target\n/.validator/\n"),
        ],
        &[],
    );
    assert_eq!(read(&dir.join("validator.yaml")), initialized("rust"));
    common::git(&dir, &["init", "-q"]);
    common::git(&dir, &["add", "."]);
    common::git(&dir, &["commit", "-q", "-m", "tiny"]);
    // Outside the crate, so its files do not count as the crate's.
    let target = root.path().join("target");
    let env = [("CARGO_TARGET_DIR", target.as_path())];

    let (code, verdict) = check(&dir, &env);
    assert_passed(
        "rust",
        code,
        &verdict,
        &["outputs", "scope", "fmt", "lint", "test"],
    );

    // A worker's change with a warning clippy denies.
    let lib = dir.join("src/lib.rs");
    std::fs::write(
        &lib,
        CRATE_LIB.replace("    a + b\n", "    let unused = 1;\n    a + b\n"),
    )
    .expect("write");
    let (code, verdict) = check(&dir, &env);
    assert_failed_at("rust", code, &verdict, "lint", "unused variable: `unused`");
    assert_eq!(
        common::gate(&verdict, "lint")["findings"][0]["file"],
        "src/lib.rs"
    );
    assert_eq!(common::gate(&verdict, "test")["outcome"], "skipped");

    // Then one with a failing test: lint passes again, the test gate names the test.
    std::fs::write(&lib, CRATE_LIB.replace("add(2, 2), 4", "add(2, 2), 5")).expect("write");
    let (code, verdict) = check(&dir, &env);
    assert_failed_at("rust", code, &verdict, "test", "tests::adds");
    assert_eq!(common::gate(&verdict, "lint")["outcome"], "pass");

    // Fixed: PASS.
    std::fs::write(&lib, CRATE_LIB).expect("write");
    let (code, verdict) = check(&dir, &env);
    assert_eq!(code, 0, "{:?}", outcomes(&verdict));
    assert_eq!(common::gate(&verdict, "lint")["outcome"], "pass");
    assert_eq!(common::gate(&verdict, "test")["outcome"], "pass");
}

#[test]
fn the_python_pack_passes_a_clean_project_and_names_a_lint_finding_and_a_failing_test() {
    let test = "python pack";
    if !tools_present(
        test,
        &[
            &["python3", "-m", "pytest", "--version"],
            &["ruff", "--version"],
        ],
    ) {
        return;
    }
    let code_file = "def add(a, b):\n    return a + b\n";
    let test_file = "from tiny import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n";
    let project_only = "[project]\nname = \"tiny\"\nversion = \"0.1.0\"\n";
    let (_root, dir) = project(
        &[
            ("pyproject.toml", project_only),
            ("tiny.py", &format!("import os\n\n\n{code_file}")),
            ("test_tiny.py", test_file),
        ],
        &[],
    );
    assert_eq!(read(&dir.join("validator.yaml")), initialized("python"));
    // A project that never configured ruff is not held to it (its unused import included):
    // the gate says what would turn it on.
    let (code, verdict) = check(&dir, &[]);
    assert_passed("python", code, &verdict, &["outputs", "scope", "test"]);
    let lint = common::gate(&verdict, "lint");
    assert_eq!(lint["outcome"], "skipped");
    assert!(
        lint["summary"]
            .as_str()
            .is_some_and(|s| s.contains("not run") && s.contains("with `tool.ruff`")),
        "{lint}"
    );

    // With ruff and its formatter configured, both run.
    std::fs::write(
        dir.join("pyproject.toml"),
        format!("{project_only}\n[tool.ruff]\nline-length = 100\n\n[tool.ruff.format]\n"),
    )
    .expect("write");
    std::fs::write(dir.join("tiny.py"), code_file).expect("write");
    let (code, verdict) = check(&dir, &[]);
    assert_passed(
        "python",
        code,
        &verdict,
        &["outputs", "scope", "leftovers", "lint", "format", "test"],
    );
    for not_configured in ["flake8", "black"] {
        assert_eq!(common::gate(&verdict, not_configured)["outcome"], "skipped");
    }
    std::fs::write(dir.join("tiny.py"), code_file.replace("a + b", "a+b")).expect("write");
    let (code, verdict) = check(&dir, &[]);
    assert_failed_at("python", code, &verdict, "format", "tiny.py");

    // A debugger call left in is caught before the linter runs, at its line.
    std::fs::write(dir.join("tiny.py"), format!("{code_file}breakpoint()\n")).expect("write");
    let (code, verdict) = check(&dir, &[]);
    assert_failed_at(
        "python",
        code,
        &verdict,
        "leftovers",
        "a debugger call left in",
    );
    assert_eq!(
        common::gate(&verdict, "leftovers")["findings"][0]["line"],
        3
    );

    std::fs::write(dir.join("tiny.py"), format!("import os\n\n\n{code_file}")).expect("write");
    let (code, verdict) = check(&dir, &[]);
    assert_failed_at("python", code, &verdict, "lint", "F401");
    assert_eq!(
        common::gate(&verdict, "lint")["findings"][0]["file"],
        "tiny.py"
    );

    std::fs::write(dir.join("tiny.py"), code_file).expect("write");
    std::fs::write(dir.join("test_tiny.py"), test_file.replace("== 4", "== 5")).expect("write");
    let (code, verdict) = check(&dir, &[]);
    assert_failed_at("python", code, &verdict, "test", "test_tiny.py::test_add");
}

#[test]
fn the_node_pack_runs_the_package_scripts_and_fails_on_a_failing_test() {
    let test = "node pack";
    if !tools_present(test, &[&["node", "--version"], &["npm", "--version"]]) {
        return;
    }
    let package = r#"{"name": "tiny", "version": "1.0.0", "scripts": {"lint": "node --check index.js", "test": "node --test"}}"#;
    let test_file = "const test = require(\"node:test\");\nconst assert = require(\"node:assert\");\nconst { add } = require(\"./index.js\");\ntest(\"adds\", () => { assert.strictEqual(add(2, 2), 4); });\n";
    let (_root, dir) = project(
        &[
            ("package.json", package),
            ("index.js", "exports.add = (a, b) => a + b;\n"),
            ("add.test.js", test_file),
        ],
        &[],
    );
    assert_eq!(read(&dir.join("validator.yaml")), initialized("node"));
    let (code, verdict) = check(&dir, &[]);
    assert_passed(
        "node",
        code,
        &verdict,
        &["outputs", "scope", "lint", "test"],
    );

    std::fs::write(dir.join("index.js"), "exports.add = (a, b) => a +;\n").expect("write");
    let (code, verdict) = check(&dir, &[]);
    // node --check's error is read at its place: `index.js:1`, the SyntaxError after the source.
    assert_failed_at(
        "node",
        code,
        &verdict,
        "lint",
        r#""line":1,"message":"SyntaxError: Unexpected token ';'""#,
    );

    std::fs::write(dir.join("index.js"), "exports.add = (a, b) => a - b;\n").expect("write");
    let (code, verdict) = check(&dir, &[]);
    // node --test's TAP names the failed test, with the assertion's message.
    assert_failed_at("node", code, &verdict, "test", "test failed: adds");
    let output = common::gate(&verdict, "test")["output_tail"].to_string();
    assert!(output.contains("not ok 1 - adds"), "{output}");

    // A package without a lint script (most have none) is not failed for npm's "Missing
    // script": its lint gate is skipped, saying so. A `"lint"` outside `scripts` is no script.
    std::fs::write(dir.join("index.js"), "exports.add = (a, b) => a + b;\n").expect("write");
    std::fs::write(
        dir.join("package.json"),
        r#"{"name": "tiny", "version": "1.0.0", "keywords": ["lint"], "scripts": {"test": "node --test"}, "lint": {}}"#,
    )
    .expect("write");
    let (code, verdict) = check(&dir, &[]);
    assert_passed("node", code, &verdict, &["outputs", "scope", "test"]);
    assert_eq!(common::gate(&verdict, "lint")["outcome"], "skipped");
    assert_eq!(common::gate(&verdict, "format")["outcome"], "skipped");
}

#[test]
fn the_go_pack_passes_a_clean_module_and_names_a_vet_finding_and_a_failing_test() {
    let test = "go pack";
    if !tools_present(test, &[&["go", "version"]]) {
        return;
    }
    let code_file = "package tiny\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n";
    let test_file = "package tiny\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 2) != 4 {\n\t\tt.Fatal(\"wrong\")\n\t}\n}\n";
    let (root, dir) = project(
        &[
            ("go.mod", "module example.com/tiny\n\ngo 1.19\n"),
            ("tiny.go", code_file),
            ("tiny_test.go", test_file),
        ],
        &[],
    );
    assert_eq!(read(&dir.join("validator.yaml")), initialized("go"));
    // Go's build cache outside the module, so its files do not count as the module's.
    let cache = root.path().join("gocache");
    let env = [("GOCACHE", cache.as_path())];
    let (code, verdict) = check(&dir, &env);
    assert_passed(
        "go",
        code,
        &verdict,
        &["outputs", "scope", "format", "lint", "test"],
    );

    // gofmt exits 0 listing the files it would change: each is a finding that fails the gate.
    std::fs::write(dir.join("tiny.go"), code_file.replace("a + b", "a+b")).expect("write");
    let (code, verdict) = check(&dir, &env);
    assert_failed_at("go", code, &verdict, "format", "tiny.go");

    let vetted = code_file
        .replace("package tiny\n", "package tiny\n\nimport \"fmt\"\n")
        .replace(
            "{ return a + b }",
            "{\n\tfmt.Printf(\"%d\\n\")\n\treturn a + b\n}",
        );
    std::fs::write(dir.join("tiny.go"), vetted).expect("write");
    let (code, verdict) = check(&dir, &env);
    assert_failed_at(
        "go",
        code,
        &verdict,
        "lint",
        "reads arg #1, but call has 0 args",
    );

    std::fs::write(dir.join("tiny.go"), code_file.replace("a + b", "a - b")).expect("write");
    let (code, verdict) = check(&dir, &env);
    assert_failed_at("go", code, &verdict, "test", "TestAdd");
}

#[test]
fn the_generic_pack_runs_make_lint_and_make_test() {
    let test = "generic pack";
    if !tools_present(test, &[&["make", "--version"]]) {
        return;
    }
    let makefile = "lint:\n\tgrep -q hello greeting.txt\n\ntest:\n\tgrep -q world greeting.txt\n";
    let (_root, dir) = project(
        &[("Makefile", makefile), ("greeting.txt", "hello world\n")],
        &[],
    );
    assert_eq!(read(&dir.join("validator.yaml")), initialized("generic"));
    let (code, verdict) = check(&dir, &[]);
    assert_passed(
        "generic",
        code,
        &verdict,
        &["outputs", "scope", "lint", "test"],
    );

    std::fs::write(dir.join("greeting.txt"), "hello\n").expect("write");
    let (code, verdict) = check(&dir, &[]);
    assert_failed_at("generic", code, &verdict, "test", "`make` exited with 2");

    std::fs::write(dir.join("greeting.txt.orig"), "hello world\n").expect("write");
    let (code, verdict) = check(&dir, &[]);
    assert_failed_at("generic", code, &verdict, "outputs", "greeting.txt.orig");

    // A Makefile without those targets: nothing to run, said on each gate's line.
    std::fs::remove_file(dir.join("greeting.txt.orig")).expect("rm");
    std::fs::write(dir.join("Makefile"), "all:\n\ttrue\n").expect("write");
    let (code, verdict) = check(&dir, &[]);
    assert_passed("generic", code, &verdict, &["outputs", "scope"]);
    for gate in ["lint", "test"] {
        assert_eq!(common::gate(&verdict, gate)["outcome"], "skipped");
    }
}

#[test]
fn every_pack_keeps_secrets_out_of_a_change() {
    // The scope gate is the same in every pack; the generic one runs it without any tool.
    let (_root, dir) = project(&[("notes.txt", "x\n")], &["--kind", "generic"]);
    std::fs::write(dir.join(".env"), "TOKEN=x\n").expect("write");
    let (code, verdict) = check(&dir, &[]);
    assert_failed_at("generic", code, &verdict, "scope", ".env");
    let deny = |kind: &str| {
        pack(kind)
            .lines()
            .find(|line| line.trim_start().starts_with("deny:"))
            .map(str::to_owned)
    };
    for kind in KINDS {
        assert_eq!(deny(kind), deny("generic"), "rules/{kind}.yaml");
    }
}
