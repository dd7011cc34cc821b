//! Follow-ups to review 28's here-document, tilde and patch-name holes: the same classes in
//! forms the review's own tests do not show (a body joined by `\`-newline past its apparent
//! delimiter, a patch whose here-document or here-string expands, a git name written with C
//! escapes). Each drives the real binary with the input Claude Code's `PreToolUse` sends.

use crate::common::pre_tool::shell_refused as refused;
use crate::common::{self, Project};

const RULES: &str = r#"version: 1
state: state
defaults:
  strikes: 10
  max_attempts: 10
tools:
  commands:
    - {match: "git push", decision: deny, reason: pushing is for people}
  unknown: UNKNOWN
pipelines:
  - name: main
    gates:
      - {name: scope, rule: file-scope, allow: ["src/**", "tests/**"], readonly: ["src/lock.rs"]}
"#;

fn project(unknown: &str) -> Project {
    let project = Project::new();
    project
        .rules(&RULES.replace("UNKNOWN", unknown))
        .file("src/lib.rs", "fn a() {}\n")
        .file("src/lock.rs", "// locked\n");
    common::commit_all(&project.task_dir());
    project
}

/// Whether Claude Code refuses this shell line on validator's answer.
#[test]
fn a_backslash_newline_does_not_end_a_here_document_early() {
    // bash joins `x\` to the `EOF` under it, so the body runs on to the second `EOF` and
    // `git push` runs after it; read as ending at the first, the quote in `it's` would hide it.
    let project = project("allow");
    assert!(refused(
        &project,
        "cat <<EOF\nx\\\nEOF\nit's\nEOF\ngit push origin main #'\n"
    ));
}

#[test]
fn a_patch_whose_input_expands_is_not_judged_from_its_text() {
    let project = project("deny");
    for line in [
        // The name bash hands `patch` is whatever `printf` prints, not the text as written.
        "patch -p1 <<EOF\n--- a/src/$(printf lock).rs\n+++ b/src/$(printf lock).rs\n@@ -1 +1 @@\n-// locked\n+// unlocked\nEOF\n",
        "patch -p1 <<< \"$(cat src/lib.rs)\"",
    ] {
        assert!(refused(&project, line), "{line}");
    }
    // The same patch with a quoted delimiter is literal and judged by its names.
    assert!(!refused(
        &project,
        "patch -p1 <<'EOF'\n--- a/src/$(printf lib).rs\n+++ b/src/$(printf lib).rs\n@@ -1 +1 @@\n-x\n+y\nEOF\n"
    ));
}

#[test]
fn a_quoted_git_name_is_the_file_its_escapes_spell() {
    let project = project("deny");
    // `\056` is `.`: `git apply` patches src/lock.rs.
    assert!(refused(
        &project,
        "git apply <<'EOF'\ndiff --git \"a/src/lock\\056rs\" \"b/src/lock\\056rs\"\n--- \"a/src/lock\\056rs\"\n+++ \"b/src/lock\\056rs\"\n@@ -1 +1 @@\n-// locked\n+// unlocked\nEOF\n"
    ));
}
