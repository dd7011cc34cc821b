//! Adversarial review 29: the tool-output reading floor (`src/reading/`), above all the general
//! reader (`findings/general.rs`) and the file lookups it makes (`rules/command.rs`
//! `TaskFiles`). Each `#[ignore = "hole: ..."]` test asserts the behaviour that should hold and
//! fails on the code as reviewed; the others guard what held.
//!
//! The outputs below are real tools' (tsc 5, eslint 9, stylelint 16, oxlint, bandit 1.9,
//! pylint 3, go 1.x, php 8, npm 10), captured on a project whose paths hold spaces; an
//! absolute path is written `@TASK@` and put back by the gate's command.

use std::io::Read;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::{Project, gate, lint, project};

/// Far beyond what reading a MiB takes in one pass (well under a second); the reader, not the
/// tool, is what runs past it.
const HARNESS_LIMIT: Duration = Duration::from_secs(90);

/// A project whose one lint gate prints `output`, `@TASK@` in it replaced by the task
/// directory's real path, and exits with `code`. The output file lies beside the task, so the
/// task holds only the files a test makes.
fn printing(output: &str, code: i32) -> Project {
    let project = project(&[lint(
        "lint",
        &format!(r#"["sh", "-c", 'sed "s|@TASK@|$(pwd -P)|g" ../out.txt; exit {code}']"#),
        "",
    )]);
    project.root_file("out.txt", output);
    project
}

/// `check --format json` run to its end, or killed and failed at [`HARNESS_LIMIT`].
fn verdict_within_limit(project: &Project) -> serde_json::Value {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_validator"));
    command
        .env_remove("VALIDATOR_CONFIG")
        .env_remove("VALIDATOR_LOG")
        .env("NO_COLOR", "1")
        .arg("check")
        .arg("-c")
        .arg(project.rules_path())
        .arg("--task-dir")
        .arg(project.task_dir())
        .args(["--format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let started = Instant::now();
    let mut child = command.spawn().expect("run validator");
    let mut stdout = child.stdout.take().expect("stdout");
    let drain = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        stdout.read_to_end(&mut bytes).expect("read stdout");
        bytes
    });
    loop {
        if child.try_wait().expect("wait for validator").is_some() {
            break;
        }
        if started.elapsed() > HARNESS_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("validator check still reading the output after {HARNESS_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let bytes = drain.join().expect("stdout reader");
    serde_json::from_slice(&bytes).unwrap_or_else(|err| {
        panic!(
            "stdout is not a verdict ({err}): {}",
            String::from_utf8_lossy(&bytes)
        )
    })
}

fn verdict(project: &Project) -> serde_json::Value {
    project.verdict().1
}

/// The lint gate's findings as `file:line:column: [severity] message [rule]`, fields absent
/// shown as `-`.
fn findings(verdict: &serde_json::Value) -> Vec<String> {
    gate(verdict, "lint")["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            let text = |key: &str| f[key].as_str().unwrap_or("-").to_owned();
            let number = |key: &str| f[key].as_u64().map_or("-".to_owned(), |n| n.to_string());
            format!(
                "{}:{}:{}: [{}] {} [{}]",
                text("file"),
                number("line"),
                number("column"),
                text("severity"),
                text("message"),
                text("rule")
            )
        })
        .collect()
}

/// Each gate's summary and findings, for a failure message.
fn shown(verdict: &serde_json::Value) -> String {
    verdict["gates"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|g| {
            let found: Vec<String> = g["findings"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|f| format!("\n    {f}"))
                .collect();
            format!("\n  {}: {}{}", g["name"], g["summary"], found.concat())
        })
        .collect()
}

fn summary(verdict: &serde_json::Value) -> String {
    gate(verdict, "lint")["summary"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

// ---------------------------------------------------------------------------------------------
// Slow: a MiB of output the reader takes minutes over, outside any gate's deadline.
// ---------------------------------------------------------------------------------------------

#[test]
fn a_long_run_of_commas_is_read_in_one_pass() {
    // A source line quoted by a linter (tsc --pretty, mypy --pretty quote it whole) or a
    // worker's own lint script: one MiB of separators on one line.
    let mut output = String::from("src/app.py ");
    output.push_str(&",".repeat(1024 * 1024 - 100));
    output.push('\n');
    let project = printing(&output, 1);
    project.file("src/app.py", "x\n");
    let verdict = verdict_within_limit(&project);
    assert_eq!(
        gate(&verdict, "lint")["outcome"],
        "fail",
        "{}",
        shown(&verdict)
    );
}

#[test]
fn bare_locations_are_matched_in_one_pass() {
    let mut output = String::new();
    let mut n = 0;
    while output.len() < 1024 * 1024 - 32 {
        n += 1;
        output.push_str(&format!(" a:{n}\n"));
    }
    let project = printing(&output, 1);
    project.file("a", "x\n");
    let verdict = verdict_within_limit(&project);
    assert_eq!(
        gate(&verdict, "lint")["outcome"],
        "fail",
        "{}",
        shown(&verdict)
    );
}

#[test]
fn a_deep_chain_of_links_costs_bounded_lookups() {
    let project = printing("", 1);
    // task/a/a/.../a (1500 deep), `d` a link to it, and in it `r` a link back to the task:
    // `d/r/d/r/...` is a short name that realpath walks 1500 components for at every `d`.
    let task = project.task_dir();
    let mut deep = task.clone();
    for _ in 0..1500 {
        deep.push("a");
        std::fs::create_dir(&deep).expect("mkdir");
    }
    std::os::unix::fs::symlink(deep.strip_prefix(&task).expect("inside"), task.join("d"))
        .expect("link d");
    std::os::unix::fs::symlink(&task, deep.join("r")).expect("link r");
    let chain = "d/r/".repeat(19);
    let output: String = (0..400)
        .map(|i| format!("[E] {chain}x{i:05}.py:1: planted\n"))
        .collect();
    project.root_file("out.txt", &output);
    let verdict = verdict_within_limit(&project);
    assert!(findings(&verdict).is_empty(), "{}", shown(&verdict));
}

// ---------------------------------------------------------------------------------------------
// Invented findings: lines that are not findings read as findings of files the task holds.
// ---------------------------------------------------------------------------------------------

#[test]
fn tsc_pretty_summary_is_not_a_finding() {
    // tsc -p . --pretty, piped (it colours even then).
    let output = "\u{1b}[96mmy pkg/sub dir/bad file.ts\u{1b}[0m:\u{1b}[93m1\u{1b}[0m:\u{1b}[93m7\u{1b}[0m - \u{1b}[91merror\u{1b}[0m\u{1b}[90m TS2322: \u{1b}[0mType 'string' is not assignable to type 'number'.\n\n\u{1b}[7m1\u{1b}[0m const x: number = \"s\";\n\u{1b}[7m \u{1b}[0m \u{1b}[91m      ~\u{1b}[0m\n\n\u{1b}[96mmy pkg/sub dir/bad file.ts\u{1b}[0m:\u{1b}[93m2\u{1b}[0m:\u{1b}[93m7\u{1b}[0m - \u{1b}[91merror\u{1b}[0m\u{1b}[90m TS2322: \u{1b}[0mType 'number' is not assignable to type 'string'.\n\n\u{1b}[7m2\u{1b}[0m const y: string = 3;\n\u{1b}[7m \u{1b}[0m \u{1b}[91m      ~\u{1b}[0m\n\n\nFound 2 errors in the same file, starting at: my pkg/sub dir/bad file.ts\u{1b}[90m:1\u{1b}[0m\n\n";
    let project = printing(output, 2);
    project.file("my pkg/sub dir/bad file.ts", "const x: number = \"s\";\n");
    let verdict = verdict(&project);
    assert_eq!(
        findings(&verdict),
        [
            "my pkg/sub dir/bad file.ts:1:7: [error] Type 'string' is not assignable to type 'number'. [TS2322]",
            "my pkg/sub dir/bad file.ts:2:7: [error] Type 'number' is not assignable to type 'string'. [TS2322]",
        ],
        "{}",
        shown(&verdict)
    );
}

#[test]
fn a_source_line_quoted_under_a_finding_is_not_a_finding() {
    // tsc -p . --pretty (colours stripped) over a file whose strings name places.
    let output = "my pkg/sub dir/bad file.ts:1:7 - error TS2322: Type 'string' is not assignable to type 'number'.

1 const x: number = \"src/app.py:3: planted by the source line\";
        ~

my pkg/sub dir/bad file.ts:2:7 - error TS2322: Type 'string' is not assignable to type 'number'.

2 const y: number = \"see my pkg/sub dir/bad file.ts, line 9\";
        ~

";
    let project = printing(output, 2);
    project
        .file("my pkg/sub dir/bad file.ts", "const x: number = \"s\";\n")
        .file("src/app.py", "x\n");
    let verdict = verdict(&project);
    assert_eq!(
        findings(&verdict),
        [
            "my pkg/sub dir/bad file.ts:1:7: [error] Type 'string' is not assignable to type 'number'. [TS2322]",
            "my pkg/sub dir/bad file.ts:2:7: [error] Type 'string' is not assignable to type 'number'. [TS2322]",
        ],
        "{}",
        shown(&verdict)
    );
}

#[test]
fn a_crashing_linters_esm_stack_is_not_a_finding() {
    // stylelint 16 with a plugin of the worker's that throws.
    let output = "TypeError: Cannot read properties of undefined (reading 'nodes')\n    at file://@TASK@/plugin.mjs:3:94\n    at runRule (file://@TASK@/node_modules/stylelint/lib/lintPostcssResult.mjs:140:11)\n    at Array.map (<anonymous>)\n    at lintPostcssResult (file://@TASK@/node_modules/stylelint/lib/lintPostcssResult.mjs:144:29)\n    at async lintSource (file://@TASK@/node_modules/stylelint/lib/lintSource.mjs:122:2)\n    at async file://@TASK@/node_modules/stylelint/lib/standalone.mjs:266:27\n    at async Promise.all (index 0)\n    at async standalone (file://@TASK@/node_modules/stylelint/lib/standalone.mjs:317:22)\n";
    let project = printing(output, 1);
    for file in [
        "plugin.mjs",
        "node_modules/stylelint/lib/lintPostcssResult.mjs",
        "node_modules/stylelint/lib/lintSource.mjs",
        "node_modules/stylelint/lib/standalone.mjs",
        "a.css",
    ] {
        project.file(file, "x\n");
    }
    let verdict = verdict(&project);
    assert!(findings(&verdict).is_empty(), "{}", shown(&verdict));
}

#[test]
fn a_file_url_location_is_named_relative_to_the_task() {
    let project = printing(
        "[ERROR] file://@TASK@/src/app.py:3: something is wrong\n",
        1,
    );
    project.file("src/app.py", "x\n");
    let verdict = verdict(&project);
    assert_eq!(
        findings(&verdict),
        ["src/app.py:3:-: [error] something is wrong [-]"],
        "{}",
        shown(&verdict)
    );
}

#[test]
fn a_crashing_php_linters_stack_is_not_a_finding() {
    // php vendor/acme/lint/bin/lint, as a composer-installed linter crashes.
    let output = "PHP Fatal error:  Uncaught RuntimeException: cannot parse configuration in @TASK@/vendor/acme/lint/src/Runner.php:8\nStack trace:\n#0 @TASK@/vendor/acme/lint/src/Runner.php(4): Runner->check()\n#1 @TASK@/vendor/acme/lint/bin/lint(3): Runner->run()\n#2 {main}\n  thrown in @TASK@/vendor/acme/lint/src/Runner.php on line 8\n";
    let project = printing(output, 255);
    project
        .file("vendor/acme/lint/src/Runner.php", "<?php\n")
        .file("vendor/acme/lint/bin/lint", "<?php\n")
        .file("a.php", "<?php echo 1;\n");
    let verdict = verdict(&project);
    assert!(findings(&verdict).is_empty(), "{}", shown(&verdict));
}

#[test]
fn a_go_panic_is_not_a_finding() {
    // go run ./tools/lint, the project's own lint tool panicking.
    let output = "panic: runtime error: index out of range [3] with length 1\n\ngoroutine 1 [running]:\nmain.check(...)\n\t@TASK@/tools/lint/main.go:9\nmain.main()\n\t@TASK@/tools/lint/main.go:15 +0x86\nexit status 2\n";
    let project = printing(output, 1);
    project.file("tools/lint/main.go", "package main\n");
    let verdict = verdict(&project);
    assert!(findings(&verdict).is_empty(), "{}", shown(&verdict));
}

#[test]
fn a_tools_own_log_line_is_not_a_finding() {
    // go run ./tools/lint with log.Lshortfile: `main.go` is tools/lint/main.go, but the task
    // has a main.go of its own at the top, which the line is read as naming.
    let project = printing("2026/11/27 04:53:23 main.go:14: checking 3 packages\n", 1);
    project
        .file("main.go", "package main\n\nfunc main() {}\n")
        .file("tools/lint/main.go", "package main\n");
    let verdict = verdict(&project);
    assert!(findings(&verdict).is_empty(), "{}", shown(&verdict));
}

// ---------------------------------------------------------------------------------------------
// Real tools misread: messages from the wrong line, findings lost.
// ---------------------------------------------------------------------------------------------

/// bandit -r . (1.9.4), four issues; the first two frames' blocks open on `Test results:` and
/// on the separator line.
const BANDIT: &str = "Run started:2026-11-27 04:49:29.341212+00:00

Test results:
>> Issue: [B307:blacklist] Use of possibly insecure function - consider using safer ast.literal_eval.
   Severity: Medium   Confidence: High
   CWE: CWE-78 (https://cwe.mitre.org/data/definitions/78.html)
   More Info: https://bandit.readthedocs.io/en/1.9.4/blacklists/blacklist_calls.html#b307-eval
   Location: ./my pkg/sub dir/bad mod.py:5:4
4\t    y: int = \"s\"
5\t    eval(x)
6\t    return  x

--------------------------------------------------
>> Issue: [B404:blacklist] Consider possible security implications associated with the subprocess module.
   Severity: Low   Confidence: High
   CWE: CWE-78 (https://cwe.mitre.org/data/definitions/78.html)
   More Info: https://bandit.readthedocs.io/en/1.9.4/blacklists/blacklist_imports.html#b404-import-subprocess
   Location: ./my pkg/sub dir/bad mod.py:10:0
9\t
10\timport subprocess
11\tsubprocess.call(\"ls\", shell=True)

--------------------------------------------------
>> Issue: [B607:start_process_with_partial_path] Starting a process with a partial executable path
   Severity: Low   Confidence: High
   CWE: CWE-78 (https://cwe.mitre.org/data/definitions/78.html)
   More Info: https://bandit.readthedocs.io/en/1.9.4/plugins/b607_start_process_with_partial_path.html
   Location: ./my pkg/sub dir/bad mod.py:11:0
10\timport subprocess
11\tsubprocess.call(\"ls\", shell=True)

--------------------------------------------------
>> Issue: [B602:subprocess_popen_with_shell_equals_true] subprocess call with shell=True seems safe, but may be changed in the future, consider rewriting without shell
   Severity: Low   Confidence: High
   CWE: CWE-78 (https://cwe.mitre.org/data/definitions/78.html)
   More Info: https://bandit.readthedocs.io/en/1.9.4/plugins/b602_subprocess_popen_with_shell_equals_true.html
   Location: ./my pkg/sub dir/bad mod.py:11:0
10\timport subprocess
11\tsubprocess.call(\"ls\", shell=True)

--------------------------------------------------

Code scanned:
\tTotal lines of code: 10
\tTotal lines skipped (#nosec): 0
\tTotal potential issues skipped due to specifically being disabled (e.g., #nosec BXXX): 0

Run metrics:
\tTotal issues (by severity):
\t\tUndefined: 0
\t\tLow: 3
\t\tMedium: 1
\t\tHigh: 0
\tTotal issues (by confidence):
\t\tUndefined: 0
\t\tLow: 0
\t\tMedium: 0
\t\tHigh: 4
Files skipped (0):
";

#[test]
fn bandit_issues_each_keep_their_own_message() {
    let project = printing(BANDIT, 1);
    project.file("my pkg/sub dir/bad mod.py", "import os\n");
    let verdict = verdict(&project);
    let found = findings(&verdict);
    assert_eq!(found.len(), 4, "{}", shown(&verdict));
    for (finding, said) in found.iter().zip([
        "Use of possibly insecure function",
        "Consider possible security implications",
        "Starting a process with a partial executable path",
        "subprocess call with shell=True",
    ]) {
        assert!(finding.contains(said), "{finding}: {}", shown(&verdict));
    }
}

#[test]
fn two_diagnostics_on_one_line_are_two_findings() {
    // oxlint . (its `-f json` says 4 diagnostics).
    let output = "
  ! eslint(no-unused-vars): Variable 'x' is declared but never used. Unused variables should start with a '_'.
   ,-[src/my dir/a b.js:1:5]
 1 | let x = 1;
   :     |
   :     `-- 'x' is declared here
 2 | function f(a) { debugger; return 1 }
   `----
  help: Consider removing this declaration.

  ! eslint(no-unused-vars): Function 'f' is declared but never used.
   ,-[src/my dir/a b.js:2:10]
 1 | let x = 1;
 2 | function f(a) { debugger; return 1 }
   :          |
   :          `-- 'f' is declared here
 3 | let y = 2; if (y == null) {}
   `----
  help: Consider removing this declaration.

  ! eslint(no-unused-vars): Parameter 'a' is declared but never used. Unused parameters should start with a '_'.
   ,-[src/my dir/a b.js:2:12]
 1 | let x = 1;
 2 | function f(a) { debugger; return 1 }
   :            |
   :            `-- 'a' is declared here
 3 | let y = 2; if (y == null) {}
   `----
  help: Consider removing this parameter.

  ! eslint(no-debugger): `debugger` statement is not allowed
   ,-[src/my dir/a b.js:2:17]
 1 | let x = 1;
 2 | function f(a) { debugger; return 1 }
   :                 ^^^^^^^^^
 3 | let y = 2; if (y == null) {}
   `----
  help: Remove the debugger statement

Found 4 warnings and 0 errors.
Finished in 46ms on 1 file with 96 rules using 2 threads.
";
    let project = printing(output, 1);
    project.file("src/my dir/a b.js", "let x = 1;\n");
    let verdict = verdict(&project);
    let places: Vec<String> = findings(&verdict)
        .iter()
        .map(|f| f.split(": [").next().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        places,
        [
            "src/my dir/a b.js:1:5",
            "src/my dir/a b.js:2:10",
            "src/my dir/a b.js:2:12",
            "src/my dir/a b.js:2:17"
        ],
        "{}",
        shown(&verdict)
    );
}

/// Two lint gates printing one output, each over the file named `plain` or `spaced` in it.
fn plain_and_spaced(output: &str, plain: &str, spaced: &str) -> serde_json::Value {
    let gate = |name: &str, file: &str| {
        lint(
            name,
            &format!(
                r#"["sh", "-c", 'sed -e "s|@TASK@|$(pwd -P)|g" -e "s|@FILE@|{file}|g" ../out.txt; exit 1']"#
            ),
            "on_fail: CONTINUE",
        )
    };
    let project = project(&[gate("plain", plain), gate("spaced", spaced)]);
    project.root_file("out.txt", output);
    project.file(plain, "x\n").file(spaced, "x\n");
    verdict(&project)
}

/// A gate's findings with the file left out.
fn said(verdict: &serde_json::Value, name: &str) -> Vec<serde_json::Value> {
    gate(verdict, name)["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            let mut f = f.clone();
            f["file"] = serde_json::Value::Null;
            f
        })
        .collect()
}

#[test]
fn eslint_under_a_spaced_path_reads_as_under_a_plain_one() {
    // eslint . (9), default formatter.
    let output = "\n@TASK@/@FILE@\n  1:5   error  'x' is never reassigned. Use 'const' instead  prefer-const\n  2:5   error  'unused' is assigned a value but never used   no-unused-vars\n  3:15  error  Missing semicolon                             semi\n\n\u{2716} 3 problems (3 errors, 0 warnings)\n  2 errors and 0 warnings potentially fixable with the `--fix` option.\n\n";
    let verdict = plain_and_spaced(output, "src/bad.js", "my pkg/sub dir/bad file.js");
    assert_eq!(said(&verdict, "plain").len(), 3, "{}", shown(&verdict));
    assert_eq!(
        said(&verdict, "spaced"),
        said(&verdict, "plain"),
        "{}",
        shown(&verdict)
    );
}

#[test]
fn pylint_under_a_spaced_path_reads_as_under_a_plain_one() {
    // pylint (3), default text output.
    let output = "************* Module bad mod\n@FILE@:1:0: C0114: Missing module docstring (missing-module-docstring)\n@FILE@:5:4: W0123: Use of eval (eval-used)\n@FILE@:7:0: R0903: Too few public methods (0/2) (too-few-public-methods)\n\n------------------------------------------------------------------\nYour code has been rated at 0.00/10\n\n";
    let verdict = plain_and_spaced(output, "src/bad.py", "my pkg/sub dir/bad mod.py");
    assert_eq!(said(&verdict, "plain").len(), 3, "{}", shown(&verdict));
    assert_eq!(
        said(&verdict, "spaced"),
        said(&verdict, "plain"),
        "{}",
        shown(&verdict)
    );
}

#[test]
fn stylelint_rows_read_their_severity_and_rule() {
    // stylelint "**/*.css" (16); its -f json says severity error, rule property-no-unknown.
    let project = printing(
        "\nstyles/a b.css\n  1:18  \u{2716}  Unknown property \"colr\"  property-no-unknown\n\n\u{2716} 1 problem (1 error, 0 warnings)\n\n",
        2,
    );
    project.file("styles/a b.css", "a { colr: red; }\n");
    let verdict = verdict(&project);
    assert_eq!(
        findings(&verdict),
        ["styles/a b.css:1:18: [error] Unknown property \"colr\" [property-no-unknown]"],
        "{}",
        shown(&verdict)
    );
}

#[test]
fn known_format_lines_do_not_spend_the_lookup_budget() {
    let mut output: String = (1..=5000)
        .map(|i| format!("src/app.py:{i}:80: E501 line too long ({i} > 79 characters)\n"))
        .collect();
    output.push_str(
        "./my pkg/sub dir/bad mod.py:3:5: F841 local variable 'l' is assigned to but never used\n",
    );
    let project = printing(&output, 1);
    project
        .file("src/app.py", "x\n")
        .file("my pkg/sub dir/bad mod.py", "x\n");
    let verdict = verdict(&project);
    assert!(
        summary(&verdict).starts_with("5001 findings in "),
        "{}",
        summary(&verdict)
    );
}

// ---------------------------------------------------------------------------------------------
// A clean exit called unread.
// ---------------------------------------------------------------------------------------------

#[test]
fn an_echoed_command_line_is_not_an_unread_warning() {
    // npm run lint (10) over a clean eslint, and make echoing its recipe.
    for output in [
        "\n> proj@1.0.0 lint\n> eslint --max-warnings 0 .\n\n",
        "cargo clippy --all-targets -- -D warnings\n    Checking x v0.1.0 (/t)\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 0.31s\n",
        "mypy --strict --warn-unreachable src\nSuccess: no issues found in 3 source files\n",
    ] {
        let verdict = verdict(&printing(output, 0));
        assert_eq!(
            summary(&verdict),
            "clean",
            "{output:?}: {}",
            shown(&verdict)
        );
    }
}

#[test]
fn a_clean_tool_saying_it_found_no_errors_is_clean() {
    for output in [
        "No syntax errors detected in a.php\n",
        "Checked 3 files; errors: 0, warnings: 0\n",
        "No errors or warnings found.\n",
    ] {
        let verdict = verdict(&printing(output, 0));
        assert_eq!(
            summary(&verdict),
            "clean",
            "{output:?}: {}",
            shown(&verdict)
        );
    }
}

// ---------------------------------------------------------------------------------------------
// What held.
// ---------------------------------------------------------------------------------------------

#[test]
fn clean_outputs_of_common_tools_stay_clean() {
    for output in [
        "Success: no issues found in 3 source files\n",
        "0 errors, 0 warnings, 0 informations \n",
        "Found 0 errors. Watching for file changes.\n",
        "0 issues.\n",
        "Passed: 0 failure(s), 0 warning(s) on 3 files.\n",
        "Summary: 0 error(s)\n",
        "Total: 0 warnings / 0 errors in 3 files\n",
    ] {
        let verdict = verdict(&printing(output, 0));
        assert_eq!(
            summary(&verdict),
            "clean",
            "{output:?}: {}",
            shown(&verdict)
        );
    }
}

#[test]
fn only_regular_files_that_really_lie_in_the_task_are_findings() {
    let output = "[E] ../outside/secret.py:1: dotdot
[E] sub/../../outside/secret.py:2: dotdot through a directory
[E] @TASK@/../outside/secret.py:3: absolute with dotdot
[E] linkdir/secret.py:5: through a link to a directory outside
[E] abs.py:7: a link to a file outside
[E] root/@OUTSIDE@/secret.py:8: through a link to /proc/self/root
[E] /proc/self/cwd/secret.py:9: the reader's own cwd
[E] pipe.py:10: a FIFO
[E] dir.py:11: a directory
[E] null.py:12: a link to a device
";
    let project = project(&[lint(
        "lint",
        r#"["sh", "-c", 'sed -e "s|@TASK@|$(pwd -P)|g" -e "s|@OUTSIDE@|$(cd ../outside && pwd -P)|g" ../out.txt; exit 1']"#,
        "",
    )]);
    project.root_file("out.txt", output);
    project.root_file("outside/secret.py", "s\n");
    let task = project.task_dir();
    std::fs::create_dir_all(task.join("sub")).expect("sub");
    std::fs::create_dir(task.join("dir.py")).expect("dir");
    let fifo = std::process::Command::new("mkfifo")
        .arg(task.join("pipe.py"))
        .status()
        .expect("mkfifo");
    assert!(fifo.success());
    let outside = project.path().join("outside");
    let link = |target: &Path, name: &str| {
        std::os::unix::fs::symlink(target, task.join(name)).expect("link");
    };
    link(&outside, "linkdir");
    link(&outside.join("secret.py"), "abs.py");
    link(Path::new("/proc/self/root"), "root");
    link(Path::new("/dev/null"), "null.py");
    // The FIFO is never opened: were it, the run would block on it until the harness limit.
    let verdict = verdict_within_limit(&project);
    assert!(findings(&verdict).is_empty(), "{}", shown(&verdict));
}
