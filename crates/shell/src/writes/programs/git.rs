//! git's command line: its global options, its builtins (any other command word is an alias,
//! which may run anything), and what each subcommand writes.

use super::{Kind, copied, literals, spec};
use crate::options::{self, Spec};
use crate::script::Word;

/// Git's builtin commands: any other word where the command goes is an alias, which the
/// repository's or the line's settings may make any command (`-c alias.p=push p`).
const GIT_BUILTINS: &[&str] = &[
    "add",
    "am",
    "annotate",
    "apply",
    "archive",
    "backfill",
    "bisect",
    "blame",
    "branch",
    "bundle",
    "cat-file",
    "check-attr",
    "check-ignore",
    "check-mailmap",
    "check-ref-format",
    "checkout",
    "checkout-index",
    "cherry",
    "cherry-pick",
    "clean",
    "clone",
    "column",
    "commit",
    "commit-graph",
    "commit-tree",
    "config",
    "count-objects",
    "credential",
    "describe",
    "diff",
    "diff-files",
    "diff-index",
    "diff-tree",
    "difftool",
    "fetch",
    "fetch-pack",
    "filter-branch",
    "fmt-merge-msg",
    "for-each-ref",
    "for-each-repo",
    "format-patch",
    "fsck",
    "gc",
    "grep",
    "hash-object",
    "help",
    "index-pack",
    "init",
    "interpret-trailers",
    "log",
    "ls-files",
    "ls-remote",
    "ls-tree",
    "maintenance",
    "merge",
    "merge-base",
    "merge-file",
    "merge-tree",
    "mergetool",
    "mktag",
    "mktree",
    "multi-pack-index",
    "mv",
    "name-rev",
    "notes",
    "pack-objects",
    "pack-refs",
    "patch-id",
    "prune",
    "pull",
    "push",
    "range-diff",
    "read-tree",
    "rebase",
    "receive-pack",
    "reflog",
    "remote",
    "repack",
    "replace",
    "replay",
    "rerere",
    "reset",
    "restore",
    "rev-list",
    "rev-parse",
    "revert",
    "rm",
    "send-pack",
    "shortlog",
    "show",
    "show-branch",
    "show-ref",
    "sparse-checkout",
    "stash",
    "status",
    "submodule",
    "switch",
    "symbolic-ref",
    "tag",
    "update-index",
    "update-ref",
    "upload-pack",
    "var",
    "verify-commit",
    "verify-pack",
    "verify-tag",
    "version",
    "whatchanged",
    "worktree",
    "write-tree",
];

/// A git command's words as the rules match them, and where its subcommand is: a command
/// word that is not a builtin (an alias) is not known before it runs, so it matches any word
/// of a rule that refuses.
pub(in crate::writes) fn git_words(words: &[Word]) -> (Vec<Word>, Option<usize>) {
    let mut words = words.to_vec();
    let global = options::parse(&words[1..], GIT_GLOBAL);
    let at = global.rest_at + 1;
    // `send-pack` is what `push` runs: the rules see it as `push`.
    if let Some(sub) = words.get_mut(at).filter(|sub| sub.is("send-pack")) {
        sub.literal = Some("push".into());
    }
    if let Some(sub) = words.get_mut(at)
        && sub
            .literal
            .as_deref()
            .is_some_and(|s| !GIT_BUILTINS.contains(&s) && !is_external(s))
    {
        sub.literal = None;
    }
    // Options not known before it runs may hide where the subcommand is.
    let known = !global.unknown_option && at < words.len();
    (words, known.then_some(at))
}

/// Whether `git SUB` runs the program `git-SUB` (git's own directory, or on `PATH`): git runs
/// such a command before it looks for an alias, so it is that program (`git lfs`), not any.
fn is_external(sub: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    if sub.is_empty() || sub.contains('/') || sub.starts_with('-') {
        return false;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .chain(["/usr/lib/git-core".into(), "/usr/libexec/git-core".into()])
        .any(|dir| {
            std::fs::metadata(dir.join(format!("git-{sub}")))
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
}

/// Paths git is given: a pathspec with a glob or magic (`src/l*`, `:(glob)…`, `:/`) names
/// what git matches, not itself.
fn pathspecs(operands: Vec<Word>) -> Kind {
    let expands = operands.iter().any(|operand| {
        operand
            .literal
            .as_deref()
            .is_some_and(|path| path.starts_with(':') || path.contains(['*', '?', '[']))
    });
    if expands {
        Kind::Unknown("a pathspec git matches against the files, which is not read here".into())
    } else {
        Kind::Writes(operands)
    }
}

/// git's own options, before its command.
const GIT_GLOBAL: Spec = Spec {
    short: "Cc",
    short_optional: "",
    long: &[
        "git-dir",
        "work-tree",
        "namespace",
        "config-env",
        "super-prefix",
        "attr-source",
    ],
    long_flags: &["exec-path", "paginate", "no-pager", "bare"],
    stop_at_operand: true,
};

/// Which `git` commands change the work tree, and the paths they name where that is known. A
/// git that runs elsewhere (`-C`, `--work-tree`, `--git-dir`) or is told what to run (`-c`,
/// `--exec-path`, `--output`, a pager, an upload program) is not a read.
pub(super) fn git(args: &[Word]) -> Kind {
    let global = options::parse(args, GIT_GLOBAL);
    // A setting may name a command git runs (`core.fsmonitor`, `core.sshCommand`,
    // `diff.external`, a pager, an editor, a credential helper, a filter): only the few known
    // to run nothing are read as settings alone.
    if global.has(&["--config-env", "--exec-path"])
        || global.values(&["-c"]).any(|setting| !runs_nothing(setting))
    {
        return Kind::Any(
            "`git` is given a setting that may make it run a command not known before it runs"
                .into(),
        );
    }
    if global.unknown_option
        || global.has(&[
            "-C",
            "-c",
            "--git-dir",
            "--work-tree",
            "--config-env",
            "--exec-path",
            "--super-prefix",
            "--attr-source",
            "--bare",
        ])
    {
        return Kind::Unknown(
            "`git` runs on another directory or repository, or with settings that choose what it runs"
                .into(),
        );
    }
    let Some(sub) = args.get(global.rest_at) else {
        return Kind::Reads;
    };
    let Some(sub) = sub.literal.as_deref() else {
        return Kind::Unknown("the `git` command is not known before it runs".into());
    };
    git_subcommand(sub, &args[global.rest_at + 1..])
}

/// Whether the setting `-c KEY=VALUE` is one git runs nothing by (names, colours, advice).
fn runs_nothing(setting: &Word) -> bool {
    let Some(text) = setting.literal.as_deref() else {
        return false;
    };
    let key = text
        .split_once('=')
        .map_or(text, |(key, _)| key)
        .to_ascii_lowercase();
    ["user.", "color.", "advice.", "i18n.", "column."]
        .iter()
        .any(|prefix| key.starts_with(prefix))
        || matches!(
            key.as_str(),
            "core.quotepath" | "core.abbrev" | "init.defaultbranch" | "safe.directory" | "log.date"
        )
}

/// What `git SUB REST…` changes.
fn git_subcommand(sub: &str, rest: &[Word]) -> Kind {
    let runs = git_runs_or_writes(sub, rest);
    match sub {
        "status" | "diff" | "log" | "show" | "rev-parse" | "ls-files" | "blame" | "grep"
        | "describe" | "shortlog" | "reflog" | "ls-tree" | "cat-file" | "rev-list" | "help"
        | "version" | "whatchanged" | "name-rev" | "merge-base" | "var" | "check-ignore"
        | "count-objects" | "for-each-ref" | "show-ref" | "verify-commit" | "add" | "commit"
        | "fetch" | "push" | "tag" | "notes" | "remote" | "branch" | "fsck" | "gc" => {
            if runs {
                return Kind::Unknown(format!("`git {sub}` runs a program its options name"));
            }
            Kind::Writes(git_outputs(rest))
        }
        "config" if !runs && git_config_reads(rest) => Kind::Reads,
        "config" => Kind::Unknown("`git config` changes what git runs".into()),
        "init" => {
            let parsed = options::parse(
                rest,
                spec(
                    "b",
                    &[
                        "template",
                        "separate-git-dir",
                        "initial-branch",
                        "object-format",
                        "shared",
                    ],
                ),
            );
            if parsed.has(&["--template", "--separate-git-dir"]) || parsed.unknown_option {
                return Kind::Unknown(
                    "`git init` takes hooks or a repository from elsewhere".into(),
                );
            }
            Kind::Creates(parsed.operands)
        }
        "rm" => pathspecs(options::parse(rest, Spec::default()).operands),
        "mv" => copied("mv", rest),
        "restore" => {
            let parsed = options::parse(
                rest,
                spec("s", &["source", "pathspec-from-file", "conflict"]),
            );
            if parsed.has(&["--pathspec-from-file"]) || parsed.unknown_option {
                return Kind::Unknown(
                    "`git restore` restores paths this line does not show".into(),
                );
            }
            pathspecs(parsed.operands)
        }
        "apply" => git_apply(rest),
        other => Kind::Unknown(format!(
            "`git {other}` may change any file in the work tree"
        )),
    }
}

/// Whether a reading git command is told to run a program: an external diff, a pager for `grep`, an upload or receive program, `bisect run`. git takes any
/// unambiguous prefix of a long option (`--upl=`) and clustered short ones (`-iO…`), so any
/// prefix counts, and an option not known before it runs does too.
fn git_runs_or_writes(sub: &str, rest: &[Word]) -> bool {
    const LONG: &[&str] = &[
        "ext-diff",
        "open-files-in-pager",
        "upload-pack",
        "receive-pack",
        "exec",
        "run",
    ];
    rest.iter().any(|arg| match arg.literal.as_deref() {
        None => arg.raw.starts_with('-') || arg.raw.starts_with('$'),
        Some("--") | Some("-") => false,
        Some(long) if long.starts_with("--") => {
            let name = long[2..].split('=').next().unwrap_or_default();
            name.len() >= 2 && LONG.iter().any(|option| option.starts_with(name))
        }
        Some(short) if short.starts_with('-') => sub == "grep" && short[1..].contains('O'),
        Some(_) => false,
    })
}

/// The files `--output FILE` (or any prefix of it, `--out=FILE`) names.
fn git_outputs(rest: &[Word]) -> Vec<Word> {
    let mut outputs = Vec::new();
    let mut words = rest.iter();
    while let Some(word) = words.next() {
        let Some(long) = word.literal.as_deref().and_then(|w| w.strip_prefix("--")) else {
            continue;
        };
        let (name, value) = match long.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (long, None),
        };
        if name.len() < 2 || !"output".starts_with(name) {
            continue;
        }
        match value {
            Some(value) => outputs.push(Word {
                raw: value.to_owned(),
                literal: Some(value.to_owned()),
            }),
            None => outputs.extend(words.next().cloned()),
        }
    }
    outputs
}

/// Whether `git config REST` only reads: a `get`/`list` form (`--get*`, `-l`, `--list`, or the
/// newer `get`/`list` as its first word), never a key and a value to set.
fn git_config_reads(rest: &[Word]) -> bool {
    let Some(words) = literals(rest) else {
        return false;
    };
    let options: Vec<&str> = words
        .iter()
        .map(String::as_str)
        .filter(|w| w.starts_with('-'))
        .collect();
    let operands: Vec<&str> = words
        .iter()
        .map(String::as_str)
        .filter(|w| !w.starts_with('-'))
        .collect();
    let sets = options.iter().any(|o| {
        [
            "--add",
            "--unset",
            "--replace-all",
            "--rename-section",
            "--remove-section",
            "--edit",
            "-e",
        ]
        .iter()
        .any(|set| set.starts_with(o) && o.len() > 2 || o == set)
    });
    let get_option = options
        .iter()
        .any(|o| o.starts_with("--get") || *o == "-l" || *o == "--list");
    let get_word = matches!(operands.first(), Some(&"get" | &"list"));
    !sets && (get_option || get_word)
}

/// `git apply` fed on standard input: the patch's names, stripped as its `-p` says.
fn git_apply(rest: &[Word]) -> Kind {
    let parsed = options::parse(
        rest,
        spec(
            "pC",
            &[
                "directory",
                "include",
                "exclude",
                "whitespace",
                "build-fake-ancestor",
            ],
        ),
    );
    if !parsed.operands.is_empty() {
        return Kind::Unknown("`git apply` applies a patch file this line does not show".into());
    }
    if parsed.unknown_option || parsed.has(&["--directory", "--unsafe-paths"]) {
        return Kind::Unknown("`git apply` puts files where its options say".into());
    }
    match parsed
        .value(&["-p"])
        .map(|n| n.literal.as_deref().and_then(|n| n.parse().ok()))
    {
        Some(None) => Kind::Unknown("`git apply -p` strips a number not known here".into()),
        strip => Kind::Patch {
            strip: Some(strip.flatten().unwrap_or(1)),
            writes: Vec::new(),
        },
    }
}
