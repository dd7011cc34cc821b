//! A patch too big to judge is refused, whichever way it comes: Codex's `apply_patch` tool, or
//! a here-document fed to `git apply`, `patch` or `apply_patch` on a shell line. Reading a
//! patch's names is linear and bounded: more than 1,000 files, a `diff --git` line of
//! thousands of spaces, or a name longer than any file's is refused with a reason saying
//! validator ran out of its budget for judging it. And the other way: an ordinary patch in scope is let through.

use serde_json::{Value, json};

use crate::common::pre_tool::{answer, decision_of, input};
use crate::common::{self, Project};

/// A task that may write under `src/` only.
fn project() -> Project {
    let project = Project::new();
    project
        .rules(
            "version: 1\nstate: state\npipelines:\n  - name: main\n    gates:\n      - {name: scope, rule: file-scope, allow: [\"src/**\"]}\n",
        )
        .file("src/lib.rs", "fn a() {}\n")
        .root_file("transcript.jsonl", "");
    common::commit_all(&project.task_dir());
    project
}

/// The decision (`allow` when validator says nothing) and its reason for `tool` called with
/// `tool_input`, as `agent`'s hook.
fn decide(project: &Project, agent: &str, tool: &str, tool_input: Value) -> (String, String) {
    let (code, stdout, stderr) = answer(project, agent, &input(project, tool, tool_input));
    assert_eq!(code, 0, "validator answers, never fails: {stderr}");
    decision_of(&stdout)
}

fn apply_patch(project: &Project, agent: &str, patch: &str) -> (String, String) {
    decide(project, agent, "apply_patch", json!({"command": patch}))
}

fn bash(project: &Project, line: &str) -> (String, String) {
    decide(
        project,
        "claude",
        "Bash",
        json!({"command": line, "description": "d"}),
    )
}

/// An `apply_patch` envelope adding `count` files under `src/`.
fn envelope(count: usize) -> String {
    let mut patch = String::from("*** Begin Patch\n");
    for k in 0..count {
        patch.push_str(&format!("*** Add File: src/d{}/f{k}.rs\n+x\n", k % 50));
    }
    patch + "*** End Patch\n"
}

fn assert_too_big((decision, why): (String, String), what: &str) {
    assert_eq!(decision, "deny", "{what} let through: {why}");
    assert!(why.contains("ran out of its budget"), "{what}: {why}");
}

#[test]
fn an_apply_patch_naming_thousands_of_files_is_refused_as_too_big_to_judge() {
    let project = project();
    for agent in ["codex", "claude"] {
        assert_too_big(
            apply_patch(&project, agent, &envelope(20_000)),
            "20,000 added files",
        );
    }
    let (decision, why) = apply_patch(&project, "codex", &envelope(1_001));
    assert_eq!(decision, "deny", "{why}");
    assert!(why.contains("more than 1000 files"), "{why}");
}

#[test]
fn a_shell_here_document_patch_too_big_to_judge_is_refused() {
    let project = project();
    let spaces = format!(
        "git apply <<'E'\ndiff --git {}\nE\n",
        "a ".repeat(100 * 1024)
    );
    assert_too_big(
        bash(&project, &spaces),
        "a diff --git line of 100 Ki spaces",
    );
    // A line longer than the shell reader reads is too big to judge too, whatever it runs.
    let (decision, why) = bash(
        &project,
        &format!("echo {} > src/x.rs", "a".repeat(300 * 1024)),
    );
    assert_eq!(decision, "deny", "{why}");
    assert!(why.contains("longer than 256 KiB"), "{why}");
    let files: String = (0..12_500)
        .map(|k| format!("*** Add File: src/f{k}.rs\n"))
        .collect();
    let here = format!("apply_patch <<'E'\n*** Begin Patch\n{files}*** End Patch\nE\n");
    assert_too_big(bash(&project, &here), "12,500 files in a here-document");
    let diffs: String = (0..2_000)
        .map(|k| format!("--- a/src/f{k}.rs\n+++ b/src/f{k}.rs\n@@ -0,0 +1 @@\n+x\n"))
        .collect();
    assert_too_big(
        bash(&project, &format!("patch -p1 <<'E'\n{diffs}E\n")),
        "2,000 files fed to patch",
    );
    let long = "n".repeat(5_000);
    assert_too_big(
        bash(
            &project,
            &format!("git apply <<'E'\ndiff --git a/src/{long} b/src/{long}\nE\n"),
        ),
        "a name longer than any file's",
    );
}

#[test]
fn an_ordinary_patch_in_scope_is_still_let_through() {
    let project = project();
    for agent in ["codex", "claude"] {
        let (decision, why) = apply_patch(&project, agent, &envelope(1_000));
        assert_eq!(decision, "allow", "{agent}: {why}");
    }
    let diff = "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1 +1 @@\n-fn a() {}\n+fn b() {}\n";
    let (decision, why) = bash(&project, &format!("git apply <<'E'\n{diff}E\n"));
    assert_eq!(decision, "allow", "{why}");
    let spaced = "diff --git a/src/sp ace.rs b/src/sp ace.rs\nnew file mode 100644\n--- /dev/null\n+++ b/src/sp ace.rs\n@@ -0,0 +1 @@\n+x\n";
    let (decision, why) = bash(&project, &format!("git apply <<'E'\n{spaced}E\n"));
    assert_eq!(decision, "allow", "{why}");
    // Out of scope is still refused, for its scope.
    let (decision, why) = apply_patch(
        &project,
        "codex",
        "*** Begin Patch\n*** Add File: docs/x.md\n+x\n*** End Patch\n",
    );
    assert_eq!(decision, "deny", "{why}");
    assert!(!why.contains("too big"), "{why}");
}

#[test]
fn a_file_header_is_judged_for_every_name_a_patch_tool_may_read_off_it() {
    // GNU patch ends a name at its first space, git apply before a timestamp: the part out of
    // scope is the file written, whatever follows it.
    let project = project();
    let hunk = "@@ -1 +1 @@\n-a\n+b\n";
    for (tool, header) in [
        (
            "patch -p1",
            "--- a/README.md /../src/x\n+++ b/README.md /../src/x\n",
        ),
        ("patch -p1", "--- a/README.md junk\n+++ b/README.md junk\n"),
        (
            "git apply",
            "--- /dev/null\n+++ b/README.md 2024-01-01 00:00:00.000000000 +0000\n",
        ),
    ] {
        let (decision, why) = bash(&project, &format!("{tool} <<'E'\n{header}{hunk}E\n"));
        assert_eq!(decision, "deny", "{header}: {why}");
        assert!(why.contains("README.md"), "{header}: {why}");
    }
    // A name with spaces in scope is still let through.
    let spaced = "--- a/src/sp ace.rs\n+++ b/src/sp ace.rs\n";
    let (decision, why) = bash(&project, &format!("patch -p1 <<'E'\n{spaced}{hunk}E\n"));
    assert_eq!(decision, "allow", "{why}");
}

#[test]
fn a_rename_with_spaces_is_judged_by_the_names_git_reads() {
    // git takes a renamed file's names from its `rename` lines, not from splits of the
    // `diff --git` line: an in-scope rename is let through, one out of scope is not.
    let project = project();
    let rename = |to: &str| {
        format!(
            "git apply <<'E'\ndiff --git a/src/old name.rs b/{to}\nsimilarity index 100%\nrename from src/old name.rs\nrename to {to}\nE\n"
        )
    };
    let (decision, why) = bash(&project, &rename("src/new name with spaces.rs"));
    assert_eq!(decision, "allow", "{why}");
    let (decision, why) = bash(&project, &rename("docs/new name.rs"));
    assert_eq!(decision, "deny", "{why}");
    assert!(why.contains("docs/new name.rs"), "{why}");
}
