//! Linters' real output (the second batch of `tests/corpus/findings`, issue 29) replayed by a
//! `lint` gate: the notes that explain a finding are said with it rather than counted as
//! findings of their own, the rule and severity a format carries are read out of the message,
//! and a SARIF result without a level has SARIF's default.

use serde_json::Value;

use crate::common::{gate, lint, project};

/// The findings a `lint` gate reads from the captured output of the corpus case `case`.
fn replayed(case: &str) -> Vec<Value> {
    let output = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus/findings")
        .join(case)
        .join("output.txt");
    let run = serde_json::json!([
        "sh",
        "-c",
        "cat \"$0\"; exit 1",
        output.display().to_string()
    ]);
    let project = project(&[lint("lint", &run.to_string(), "")]);
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1, "{case}: {verdict:#}");
    gate(&verdict, "lint")["findings"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The one finding of `found` at `file:line` with the rule `rule`.
fn finding<'f>(found: &'f [Value], file: &str, line: u64, rule: &str) -> &'f Value {
    found
        .iter()
        .find(|f| {
            f["file"].as_str().is_some_and(|f| f.ends_with(file))
                && f["line"] == line
                && f["rule"] == rule
        })
        .unwrap_or_else(|| panic!("no {file}:{line} [{rule}] in {found:#?}"))
}

#[test]
fn notes_that_explain_a_finding_are_said_with_it_not_counted() {
    for case in ["cppcheck-default", "cppcheck-gcc", "clang-tidy-default"] {
        let found = replayed(case);
        assert!(
            found.iter().all(|f| f["severity"] != "note"),
            "{case}: a note counted as a finding: {found:#?}"
        );
    }
    let found = replayed("cppcheck-default");
    let overrun = finding(&found, "src/main.cpp", 10, "bufferAccessOutOfBounds");
    let message = overrun["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("Assign p, buffer with size 10") && message.contains("Buffer overrun"),
        "{overrun:#}"
    );
    // ty's `info:` sub-diagnostic points into the Python environment, outside the task.
    let found = replayed("ty-full");
    assert!(
        found.iter().all(|f| {
            !f["file"]
                .as_str()
                .unwrap_or_default()
                .contains("site-packages")
                && f["rule"] != "info"
        }),
        "{found:#?}"
    );
    // A note with a code of its own is a finding (shellcheck's info-level checks).
    let found = replayed("shellcheck-gcc");
    assert!(
        found
            .iter()
            .any(|f| f["severity"] == "note" && f["rule"] == "SC2086")
    );
}

#[test]
fn the_rule_and_severity_a_format_carries_are_read_out_of_the_message() {
    // (case, file, line, rule, severity, message)
    let cases = [
        (
            "rubocop-progress",
            "app.rb",
            1,
            "Style/FrozenStringLiteralComment",
            "convention",
            "Missing frozen string literal comment.",
        ),
        (
            "rubocop-emacs",
            "app.rb",
            4,
            "Lint/UselessAssignment",
            "warning",
            "Useless assignment to variable - `unused`.",
        ),
        (
            "ty-concise",
            "app.py",
            17,
            "unresolved-reference",
            "error",
            "Name `teh_value` used when not defined",
        ),
        (
            "ty-github",
            "app.py",
            17,
            "unresolved-reference",
            "error",
            "Name `teh_value` used when not defined",
        ),
        (
            "oxlint-github",
            "src/app.js",
            5,
            "eslint(no-debugger)",
            "warning",
            "`debugger` statement is not allowed",
        ),
        (
            "oxlint-unix",
            "src/app.js",
            5,
            "eslint(no-debugger)",
            "warning",
            "`debugger` statement is not allowed",
        ),
        (
            "stylelint-unix",
            "styles/main.css",
            3,
            "property-no-unknown",
            "error",
            "Unknown property \"colr\"",
        ),
        (
            "phpcs-emacs",
            "index.php",
            3,
            "Squiz.Functions.FunctionDeclarationArgumentSpacing.NoSpaceBeforeArg",
            "error",
            "Expected 1 space between comma and argument \"$b\"; 0 found",
        ),
        (
            "phpcs-checkstyle",
            "src/Util/Helper.php",
            5,
            "Squiz.Classes.ValidClassName.NotCamelCaps",
            "error",
            "Class name \"helper\" is not in PascalCase format",
        ),
        (
            "luacheck-plain",
            "main.lua",
            1,
            "W211",
            "",
            "unused variable 'unused'",
        ),
        (
            "bandit-custom",
            "app.py",
            7,
            "B602",
            "high",
            "subprocess call with shell=True identified, security issue.",
        ),
        (
            "cpplint-default",
            "src/main.cpp",
            9,
            "readability/casting",
            "",
            "Using C-style cast.  Use reinterpret_cast<char*>(...) instead",
        ),
        (
            "zizmor-github",
            ".github/workflows/ci.yml",
            3,
            "dangerous-triggers",
            "error",
            "use of fundamentally insecure workflow trigger: pull_request_target is almost always used insecurely",
        ),
    ];
    for (case, file, line, rule, severity, message) in cases {
        let found = replayed(case);
        let f = finding(&found, file, line, rule);
        assert_eq!(
            f["severity"].as_str().unwrap_or_default(),
            severity,
            "{case}: {f:#}"
        );
        assert_eq!(f["message"], message, "{case}: {f:#}");
    }
}

#[test]
fn a_sarif_result_without_a_level_is_a_warning() {
    // bandit's SARIF gives its MEDIUM findings no `level`, and its rules declare none.
    let found = replayed("bandit-sarif");
    let eval = finding(&found, "app.py", 18, "B307");
    assert_eq!(eval["severity"], "warning", "{eval:#}");
    let shell = finding(&found, "app.py", 7, "B602");
    assert_eq!(shell["severity"], "error", "{shell:#}");
}
