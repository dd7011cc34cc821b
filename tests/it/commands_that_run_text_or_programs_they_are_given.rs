//! A command whose program or script is chosen by text in the line it does not run as a word of
//! its own: a script read from another command's output or a descriptor (`bash <(…)`), the
//! words `xargs -I` fills in from its input, a name `hash -p` binds to a program, a variable
//! that names what runs (`GIT_EDITOR`, `GIT_EXTERNAL_DIFF`; not `PATH`, which only says where a program of that name is), a git setting that names
//! a command (`git -c core.fsmonitor=…`). Each may be any command, so every rule that refuses
//! holds it, under the shipped policy; ordinary work stays allowed.

use std::path::Path;

use crate::common::pre_tool::{assert_shell_allowed, assert_shell_refused};
use crate::common::{self, Project};

fn shipped() -> Project {
    let rules = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/hooks/validator.yaml"),
    )
    .expect("example rules");
    let project = Project::new();
    project
        .rules(&rules)
        .file("src/lib.rs", "fn a() {}\n")
        .file("Cargo.toml", "[package]\n")
        // The session's usage records, which the shipped `max_tokens` reads.
        .root_file("transcript.jsonl", "");
    common::commit_all(&project.task_dir());
    project
}

#[test]
fn a_script_read_from_a_substitution_or_a_descriptor_is_held_to_every_deny_rule() {
    assert_shell_refused(
        &shipped(),
        &[
            "bash <(echo git push)",
            "sh <(printf 'git push')",
            "source <(echo git push)",
            ". <(echo git push)",
            "bash 3<<<'git push' /dev/fd/3",
            "bash -c 'bash <(echo git push)'",
        ],
    );
}

#[test]
fn words_xargs_fills_from_its_input_are_held_to_every_deny_rule() {
    assert_shell_refused(
        &shipped(),
        &[
            "echo git push | xargs -I{} sh -c {}",
            "echo git push | xargs -I % bash -c %",
            "echo git push | xargs -i sh -c {}",
        ],
    );
}

#[test]
fn a_name_bound_to_a_program_is_held_to_every_deny_rule() {
    assert_shell_refused(&shipped(), &["hash -p /usr/bin/git g; g push"]);
}

#[test]
fn a_variable_that_chooses_the_program_is_held_to_every_deny_rule() {
    assert_shell_refused(
        &shipped(),
        &[
            "GIT_EXTERNAL_DIFF='git push' git diff",
            "GIT_EDITOR='git push' git commit",
            "GIT_SSH_COMMAND='git push' git fetch",
            "env GIT_PAGER='git push' git log",
            "export GIT_EXTERNAL_DIFF='git push'; git diff",
            "declare -x GIT_EDITOR='git push'; git commit",
        ],
    );
}

#[test]
fn a_git_setting_that_names_a_command_is_held_to_every_deny_rule() {
    assert_shell_refused(
        &shipped(),
        &[
            "git -c core.fsmonitor='git push' status",
            "git -c diff.external='git push' diff",
            "git -c core.sshCommand='git push' fetch",
            "git -c credential.helper='!git push' fetch",
            "git -c core.hooksPath=/tmp/h commit -m x",
            "git --config-env=core.pager=P log",
        ],
    );
}

#[test]
fn ordinary_lines_near_these_stay_allowed() {
    assert_shell_allowed(
        &shipped(),
        &[
            "ls | xargs -I{} echo {}",
            "echo a b | xargs -n1 echo",
            "hash -r",
            "bash scripts/build.sh",
            "source .venv/bin/activate",
            "git -c color.ui=never log",
            "git -c user.name=a -c user.email=a@b status",
            "cargo test",
            "git status && git diff",
            // The search path chooses where a program of that name is found, not what it is.
            "export PATH=\"$HOME/.cargo/bin:$PATH\" && cargo test",
            "PATH=/usr/local/go/bin:$PATH go test ./...",
        ],
    );
}
