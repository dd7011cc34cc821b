//! Third adversarial review of tool-time enforcement (issue 28, after review 28b's fixes) and
//! of the load-time pattern check. Each test asserts the correct answer and is ignored with
//! the hole or false refusal it shows; each attack was first run against the real program
//! (bash 5.2, git 2.47) in a temp dir and seen to push.
//!
//! `ALLOW` is the default `tools.unknown: allow` with a `git push` deny rule: every way of
//! running git push the line shows must be refused, and ordinary work must not be.

use crate::common::pre_tool::{
    assert_shell_allowed as assert_allowed, assert_shell_refused as assert_refused,
};
use crate::common::{self, Project};

const RULES: &str = r#"version: 1
state: state
defaults:
  strikes: 10
  max_attempts: 10
tools:
  commands:
    - {match: "git push", decision: deny, reason: pushing is for people}
pipelines:
  - name: main
    gates:
      - {name: scope, rule: file-scope, allow: ["**"]}
"#;

/// The default `tools.unknown: allow`: only the deny rule refuses.
fn allowing() -> Project {
    let project = Project::new();
    project.rules(RULES).file("src/lib.rs", "fn a() {}\n");
    common::commit_all(&project.task_dir());
    project
}

/// Whether Claude Code refuses this shell line on validator's `PreToolUse` answer.
/// The baseline: the plain and already-covered forms are refused, ordinary work is not.
#[test]
fn the_baseline_holds() {
    let project = allowing();
    assert_refused(
        &project,
        &[
            "git push origin main",
            "git rebase --exec 'git push origin main' HEAD~1",
            "bash -c 'git push origin main'",
            "eval 'git push origin main'",
        ],
    );
    assert_allowed(
        &project,
        &[
            "git commit -m 'use $(pwd)'",
            "for ((i=0;i<3;i++)); do echo $i; done",
            "cargo test",
            "python -m pytest",
            "mkdir -p build",
            "ls | head",
            "grep -rn x src",
            "test -n \"$HOME\"",
        ],
    );
}

// --- holes: git push the line shows, let through under `unknown: allow` -------------------

/// `git rebase --exec=CMD` and `-xCMD` run CMD after each commit, as `--exec CMD` does (a
/// branch was pushed so); only the separate-word form is read.
#[test]
fn rebase_exec_with_an_attached_value_is_read() {
    assert_refused(
        &allowing(),
        &[
            "git rebase --exec='git push origin main' HEAD~1",
            "git rebase -x'git push origin main' HEAD~1",
        ],
    );
}

/// A shell given its script on stdin by a here-document or here-string runs it: the text is
/// on the line, as plain as `bash -c`'s (each pushed a branch).
#[test]
fn a_script_fed_to_a_shell_on_stdin_is_read() {
    assert_refused(
        &allowing(),
        &[
            "bash <<'EOF'\ngit push origin main\nEOF\n",
            "bash <<< 'git push origin main'",
            "sh <<< 'git push origin main'",
            "bash -s <<< 'git push origin main'",
            ". /dev/stdin <<< 'git push origin main'",
        ],
    );
}

/// Inside double quotes `$'…'` is not ANSI-C quoting: `"git $'\x70ush'"` is that text, which
/// eval then reads with `$'\x70ush'` decoded to `push` (a branch was pushed so).
#[test]
fn ansi_c_quoting_inside_double_quotes_is_literal_text() {
    assert_refused(&allowing(), &["eval \"git $'\\x70ush' origin main\""]);
}

/// With `expand_aliases`, an alias defined on one line is expanded on the next (bash reads a
/// `-c` string or an eval command by command): `p` is `git push` (a branch was pushed so).
#[test]
fn an_alias_defined_on_an_earlier_line_is_what_it_stands_for() {
    assert_refused(
        &allowing(),
        &["shopt -s expand_aliases\nalias p='git push origin main'\np\n"],
    );
}

/// `git send-pack` is the plumbing `git push` runs: it updates the remote's refs (a branch
/// was pushed so). `git http-push` and `git push-to-checkout` are already refused.
#[test]
fn git_send_pack_is_a_push() {
    assert_refused(&allowing(), &["git send-pack ../remote.git main"]);
}

// --- false refusals under the default rules ---------------------------------------------

/// An unquoted `[` is a literal program (no closing bracket in its word): `[ -n "$X" ]` is
/// `test`, which `test -n "$X"` already shows. It is read as a program not known, which then
/// matches `git push` with `$X` standing for `push`.
#[test]
fn a_test_bracket_with_a_variable_is_not_git_push() {
    assert_allowed(
        &allowing(),
        &[
            "[ -n \"$HOME\" ] && echo ok",
            "if [ -z \"$X\" ]; then echo empty; fi",
            "[[ $X == y ]] && echo y",
        ],
    );
}

/// A word not known before it runs can stand for `push` only where git reads its command:
/// after `commit -m`, `add` or `log`, it is a message, a path or a revision. Claude Code's own
/// commit form (a message from a here-document in `$(…)`) is refused by the `git push` rule.
#[test]
fn a_variable_after_a_builtin_git_command_is_not_push() {
    assert_allowed(
        &allowing(),
        &[
            "git commit -m \"$(cat <<'EOF'\nfeat: x\n\nbody\nEOF\n)\"",
            "git commit -m \"$MSG\"",
            "for f in src/*.rs; do git add \"$f\"; done",
            "git log \"$X\"",
            "git diff \"$(git merge-base HEAD main)\"",
        ],
    );
}

// --- content patterns: checked at load, compiled when first matched --------------------

/// The load check is the forward NFA alone; the `regex` crate builds more under the same
/// limit, so `\w{30}` passes `rules check` yet can never be matched (the gate then fails every
/// file it reads: no PASS, but the rules file is called valid). The module doc says a pattern
/// the matcher refuses is refused at load.
#[test]
fn a_pattern_the_matcher_cannot_build_is_refused_at_load() {
    let project = Project::new();
    project.rules(&common::pipeline(
        "      - {name: c, rule: content, files: [\"**/*.py\"], ban: [{pattern: '\\w{30}'}]}\n",
    ));
    let (code, stderr) = common::rules_check(&project.rules_path());
    assert_ne!(code, Some(0), "called valid: {stderr}");
}

/// A pattern whose matcher cannot be built never lets the run pass: it is refused when the
/// rules load (and, were one to get past that, the gate fails every file it reads).
#[test]
fn a_pattern_that_cannot_be_matched_never_passes() {
    let project = Project::new();
    project
        .rules(&common::pipeline(
            "      - {name: c, rule: content, files: [\"**/*.py\"], require: [{pattern: '\\w{30}'}]}\n",
        ))
        .file("a.py", "x\n");
    let output = project.check().output().expect("run validator");
    assert_ne!(output.status.code(), Some(0), "a run passed");
}
