//! Fourth review of tool-time enforcement (issue 28): false refusals of ordinary agent work
//! under the default policy, and writes a known program makes that land where the rules refuse.
//! Each test asserts the correct answer and is ignored with the false refusal or hole it shows;
//! each hole was first run against the real program (GNU sed 4.9, git 2.47, bash 5.2) in a temp
//! dir and seen to write what it says; each refused line was seen to write nothing there.
//!
//! `DEFAULT` is the policy a project starts from: `tools.unknown: allow`, a `git push` deny
//! rule, an `rm -*r*` ask rule, writes allowed under `src/` and `tests/`.

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
    - {match: "rm -*r*", decision: ask, reason: recursive delete}
  unknown: UNKNOWN
pipelines:
  - name: main
    gates:
      - {name: scope, rule: file-scope, allow: ["src/**", "tests/**"], readonly: ["src/lock.rs"], deny: ["**/*.pem"]}
"#;

/// The default `tools.unknown: allow`.
fn default_policy() -> Project {
    project("allow")
}

/// `tools.unknown: deny`: whatever validator cannot tell is refused.
fn strict() -> Project {
    project("deny")
}

fn project(unknown: &str) -> Project {
    let project = Project::new();
    project
        .rules(&RULES.replace("UNKNOWN", unknown))
        .file("src/lib.rs", "fn a() {}\n")
        .file("src/x.py", "x = 1\n")
        .file("src/lock.rs", "// locked\n")
        .file("src/lock", "x\n")
        .file("src/k.pem", "key\n");
    common::commit_all(&project.task_dir());
    project
}

/// The baseline: the rules' own refusals hold, and ordinary work of every shape runs.
#[test]
fn the_baseline_holds() {
    let project = default_policy();
    assert_refused(
        &project,
        &[
            "git push origin main",
            "git rm src/lock.rs",
            "sed -i s/a/b/ src/lock.rs",
        ],
    );
    assert_allowed(
        &project,
        &[
            "git commit -m \"$(cat <<'EOF'\nAdd retry\n\nCo-Authored-By: x <x@y>\nEOF\n)\"",
            "for i in $(seq 1 5); do echo $((i * 2)); done",
            "if [ -f package.json ]; then npm test; fi",
            "[[ -n \"$CI\" ]] && echo ci || echo local",
            "cat > src/x.py <<'EOF'\ndef f():\n    return 1\nEOF",
            "source .venv/bin/activate && pytest",
            "cd src && ls",
            "awk '{sum += $1} END {print sum}' src/x.py",
            "find . -name '*.py' | xargs grep -l foo",
            "sed -n '1,50p' src/lib.rs",
            "jq 'select(.a > 1)' package.json",
        ],
    );
}

// --- false refusals under the default policy --------------------------------------------

/// An awk program is awk's text, not a shell line: `>` in a pattern is a comparison (awk writes
/// no file `1`), and `$3`/`{print` are not a command that could be `git push`. Filtering rows
/// with awk is among the commonest things an agent runs.
#[test]
fn an_awk_program_is_not_a_shell_line() {
    assert_allowed(
        &default_policy(),
        &[
            "awk 'NR > 1' src/x.py",
            "awk 'NR>=10 && NR<=20' src/lib.rs",
            "awk '$3 > 100' src/x.py",
            "awk 'length > 80' src/lib.rs",
            "awk '{ if ($1 > 0) print $1 }' src/x.py",
            "awk -F, 'NR>1 && $3>0 {s+=$3} END {print s}' src/x.py",
            "awk '{print $1, $2}' src/x.py | sort",
            "awk '$3 > 100 {print $1}' src/x.py",
        ],
    );
}

/// Code given to an interpreter with `-c`/`-e` is that language's text: `1 > 0` compares.
#[test]
fn interpreter_code_is_not_a_shell_line() {
    assert_allowed(
        &default_policy(),
        &[
            "python -c \"print(1 > 0)\"",
            "node -e \"if (1 > 0) console.log('x')\"",
            "perl -ne 'print if $. > 5' src/x.py",
        ],
    );
}

/// `(( i > 3 ))` is bash arithmetic: `>` compares, no file `3` is written.
#[test]
fn a_comparison_in_arithmetic_is_not_a_redirection() {
    assert_allowed(
        &default_policy(),
        &[
            "i=5; (( i > 3 )) && echo big",
            "while (( n > 0 )); do n=$((n-1)); done",
        ],
    );
}

/// `xargs -I{} echo {}` runs `echo`, whatever the input: the program is on the line.
#[test]
fn xargs_with_a_replacement_string_runs_the_program_it_names() {
    assert_allowed(
        &default_policy(),
        &[
            "git diff --name-only | xargs -I{} echo {}",
            "git diff --name-only | xargs -I {} echo {}",
            "find . -name '*.py' | xargs -I{} wc -l {}",
        ],
    );
}

/// A `case` statement is refused whenever a deny rule exists ("cannot be read whole"); rare in
/// an agent's one-off lines (2 of ~350 probed), common in scripts it writes and then runs.
#[test]
fn a_case_statement_of_plain_commands_runs() {
    assert_allowed(
        &default_policy(),
        &[
            "case \"$OSTYPE\" in linux*) echo linux ;; darwin*) echo mac ;; esac",
            "case $1 in\n  build) cargo build ;;\n  *) echo usage ;;\nesac",
        ],
    );
}

// --- holes under `tools.unknown: deny` ----------------------------------------------------

/// git reads a pathspec as a glob (`*` and `?` cross `/`, `[l]` is a class): `git rm 'src/l*'`
/// deletes the readonly src/lock.rs, `git rm 'src/k.*'` the denied src/k.pem, and `git restore`
/// overwrites src/lock.rs; validator judges the quoted pattern as a literal file name.
#[test]
fn a_git_pathspec_glob_is_judged_by_what_it_matches() {
    assert_refused(
        &strict(),
        &[
            "git rm -q 'src/l*'",
            "git rm 'src/*.rs'",
            "git rm 'src/[l]ock.rs'",
            "git rm 'src/k.*'",
            "git restore --source=HEAD~1 'src/l*'",
            "git restore -s HEAD -- 'src/lo?k.rs'",
        ],
    );
}

/// `sed -i SUFFIX` keeps the original as FILE+SUFFIX: `-i.pem` on src/lib.rs writes the denied
/// src/lib.rs.pem, `-i.rs` on src/lock overwrites the readonly src/lock.rs. Only a suffix with
/// `/` is refused; the backup's own name is never judged.
#[test]
fn a_sed_backup_is_judged_where_it_lands() {
    assert_refused(
        &strict(),
        &[
            "sed -i.pem s/a/b/ src/lib.rs",
            "sed -i -e s/a/b/ --in-place=.pem src/lib.rs",
            "sed -i.rs s/x/y/ src/lock",
        ],
    );
}
