//! What the commands of a shell line would write, told from the commands themselves before
//! they run: redirections, and the programs whose writes their arguments name (`cp`, `mv`,
//! `rm`, `tee`, `touch`, `sed -i`, `dd of=`, a patch fed on standard input, …). A wrapper
//! (`sudo`, `env`, `timeout`, `sh -c`, `eval`) is looked through. A program this module does
//! not know may write anything: its writes are unknown, never assumed to be none.

use super::options::{self, Spec};
use super::sed;
use crate::shell::{self, Command, Script, Word};

/// One command as the rules see it: its words (a wrapper and what it runs are each one), what
/// it writes, and why its writes cannot all be told.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    pub words: Vec<Word>,
    /// Paths it would write, create, move or remove, as written (a word that is not literal is
    /// a path that cannot be told, and makes the command unknown). One that is a directory
    /// stands for everything in it.
    pub writes: Vec<String>,
    /// What `cp`, `mv`, `install` and `ln` put where: into a destination that is a directory,
    /// each source lands under its own name.
    pub copies: Vec<Copy>,
    /// Directories it would create (`mkdir`): judged for where they land, not as changes.
    pub creates: Vec<String>,
    /// The directories it runs in, from the line's (`env -C DIR`, `sudo -D DIR`), in order:
    /// its relative paths are relative to the last.
    pub dirs: Vec<String>,
    pub unknown: Option<String>,
    /// Part of the line could not be read, so a command the rules refuse may be in it.
    pub unread: bool,
    /// Where its subcommand is among `words`, when the program has one (git).
    pub subcommand: Option<usize>,
    /// Read out of a string a program validator does not know was given (`watch 'CMD'`): it
    /// may be a command line, or an awk or python program. Only a command rule naming its
    /// program holds it; what it would write is not judged.
    pub speculative: bool,
    /// It runs in a shell of its own (see [`crate::shell::Command::isolated`]).
    pub isolated: bool,
}

/// Sources copied (or moved, or linked) to a destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copy {
    pub sources: Vec<String>,
    pub dest: String,
    /// `ln -s`: the sources are what the links will point at (relative to the link's own
    /// directory when not absolute), not files copied.
    pub symbolic: bool,
    /// `ln`, `cp -l`: a hard link shares its source's file, so a write through it lands there.
    pub hard: bool,
    /// `-T`: the destination is the copy itself, never a directory it lands in.
    pub no_target_directory: bool,
    /// `-b` (`--backup`): the file it replaces is kept beside it, under this suffix.
    pub backup: Option<String>,
}

/// Most levels of wrappers and `sh -c` looked through.
const MAX_DEPTH: usize = 8;

/// Every command `script` runs, as seen; a script that could not be read whole adds an unknown
/// command saying why.
pub fn seen(script: &Script) -> Vec<Seen> {
    let mut all = Vec::new();
    let mut keywords_steer = false;
    for command in &script.commands {
        let start = all.len();
        look(command, &command.words, 0, &mut all);
        if keywords_steer {
            for seen in &mut all[start..] {
                seen.unknown.get_or_insert_with(|| {
                    "after `set -k`, an assignment among a command's arguments steers it".into()
                });
            }
        }
        keywords_steer |= sets_keyword(&command.words);
    }
    if evaluates_unknown_values(script) {
        for seen in &mut all {
            seen.unknown.get_or_insert_with(|| {
                "it does arithmetic on a variable whose value is not known before it runs, which runs any `$(…)` in that value".into()
            });
        }
    }
    for why in &script.opaque {
        all.push(Seen {
            unknown: Some(format!("the command line cannot be read whole: {why}")),
            unread: true,
            ..Seen::default()
        });
    }
    all
}

/// Whether the line gives a variable a value not known before it runs (`read`, `mapfile`,
/// `x=$(cat f)`) and evaluates arithmetic (`$((x))`, `let`, `[[ $x -eq 1 ]]`, `declare -i`),
/// where bash runs a `$(…)` inside the value of a variable it meets (`a[$(cmd)]`).
fn evaluates_unknown_values(script: &Script) -> bool {
    let words = || {
        script
            .commands
            .iter()
            .flat_map(|c| c.words.iter().chain(&c.assignments))
    };
    let unknown_value = script.commands.iter().any(|command| {
        command.assignments.iter().any(|a| a.literal.is_none())
            || command.words.first().is_some_and(|program| {
                [
                    "read",
                    "mapfile",
                    "readarray",
                    "getopts",
                    "printf",
                    "declare",
                    "typeset",
                    "local",
                    "export",
                    "readonly",
                ]
                .iter()
                .any(|name| program.is(name))
            })
    });
    let arithmetic = words().any(|word| {
        word.raw.contains("$((")
            || word.raw.contains("$[")
            || word.raw.starts_with("((")
            || ["-eq", "-ne", "-lt", "-le", "-gt", "-ge"]
                .iter()
                .any(|op| word.is(op))
    }) || script.commands.iter().any(|command| {
        command.words.first().is_some_and(|program| {
            program.is("let")
                || program.is("((")
                || ((program.is("declare") || program.is("typeset") || program.is("local"))
                    && command.words[1..].iter().any(|w| {
                        w.literal
                            .as_deref()
                            .is_some_and(|w| w.starts_with('-') && w.contains('i'))
                    }))
        })
    });
    unknown_value && arithmetic
}

/// `set -k` (`set -o keyword`): from then on an assignment anywhere among a command's
/// arguments goes into its environment (`cat f LD_PRELOAD=./x.so`).
fn sets_keyword(words: &[Word]) -> bool {
    let Some((program, args)) = words.split_first() else {
        return false;
    };
    program.is("set")
        && args
            .iter()
            .enumerate()
            .any(|(at, arg)| match arg.literal.as_deref() {
                Some(flags) if flags.starts_with('-') && !flags.starts_with("--") => {
                    flags.contains('k')
                        || (flags.contains('o')
                            && args.get(at + 1).is_none_or(|next| {
                                next.literal.as_deref().is_none_or(|n| n == "keyword")
                            }))
                }
                None => true,
                _ => false,
            })
}

fn look(command: &Command, words: &[Word], depth: usize, all: &mut Vec<Seen>) {
    let mut seen = Seen {
        words: words.to_vec(),
        isolated: command.isolated,
        ..Seen::default()
    };
    // The redirections and assignments are the outermost command's, whatever it wraps.
    if std::ptr::eq(words.as_ptr(), command.words.as_ptr()) {
        for redirect in command.redirects.iter().filter(|r| r.writes()) {
            write(&mut seen, &redirect.target);
        }
        if let Some(why) = steering(&command.assignments) {
            seen.unknown.get_or_insert(why);
        }
        quoted_substitutions(command, depth, all);
    }
    let Some((program, args)) = words.split_first() else {
        all.push(seen);
        return;
    };
    let Some(path) = program.literal.as_deref() else {
        seen.unknown = Some(format!(
            "the program `{}` is not known before it runs",
            program.raw
        ));
        all.push(seen);
        return;
    };
    let name = path.rsplit('/').next().unwrap_or(path);
    if depth > MAX_DEPTH {
        seen.unknown = Some("wrappers nest too deep to read".into());
        all.push(seen);
        return;
    }
    // `git-push` (a path into git's own directory, or a name `exec -a` gives) is `git push`.
    if let Some(sub) = name.strip_prefix("git-").filter(|sub| !sub.is_empty()) {
        let mut as_git = vec![
            Word {
                raw: program.raw.clone(),
                literal: Some(path.trim_end_matches(name).to_owned() + "git"),
            },
            Word {
                raw: sub.to_owned(),
                literal: Some(sub.to_owned()),
            },
        ];
        as_git.extend(args.iter().cloned());
        let start = all.len();
        look(command, &as_git, depth + 1, all);
        if let Some(first) = all.get_mut(start) {
            first.writes.append(&mut seen.writes);
            if let Some(why) = seen.unknown.take() {
                first.unknown.get_or_insert(why);
            }
        }
        return;
    }
    if name == "git" {
        (seen.words, seen.subcommand) = git_words(words);
    }
    // `./cat` is the task's own program, whatever its name: only the system's are known.
    let kind = if let Some(script) = script_on_stdin(name, args, command) {
        Kind::Script(script)
    } else if path.contains('/') && !is_system_program(path) {
        Kind::Unknown(format!(
            "`{path}` is a program of its own, not the system's `{name}`"
        ))
    } else {
        kind(name, args)
    };
    let start = all.len();
    record(kind, seen, command, words, depth, all);
    // An assignment in front steers everything the command runs.
    if let Some(why) = steering(&command.assignments) {
        for seen in &mut all[start..] {
            seen.unknown.get_or_insert_with(|| why.clone());
        }
    }
}

/// Adds what `kind` says of the command `words` (its `seen` so far) to `all`, looking into
/// what it runs.
fn record(
    kind: Kind,
    mut seen: Seen,
    command: &Command,
    words: &[Word],
    depth: usize,
    all: &mut Vec<Seen>,
) {
    let name = seen
        .words
        .first()
        .and_then(|w| w.literal.as_deref())
        .unwrap_or_default();
    let name = name.rsplit('/').next().unwrap_or(name).to_owned();
    let name = name.as_str();
    match kind {
        Kind::Reads => all.push(seen),
        Kind::Writes(targets) => {
            for target in &targets {
                write(&mut seen, target);
            }
            all.push(seen);
        }
        Kind::Creates(dirs) => {
            for dir in &dirs {
                match &dir.literal {
                    Some(dir) => seen.creates.push(dir.clone()),
                    None => write(&mut seen, dir),
                }
            }
            all.push(seen);
        }
        Kind::Copies {
            sources,
            dest,
            moves,
            how,
        } => {
            copies(&mut seen, name, &sources, &dest, moves, how);
            all.push(seen);
        }
        Kind::Patch { strip, writes } => {
            for target in &writes {
                write(&mut seen, target);
            }
            if command.inputs_unknown {
                seen.unknown = Some(format!(
                    "`{name}` reads a patch whose text is not known before it runs"
                ));
            } else {
                patched(&mut seen, name, &command.inputs.concat(), strip);
            }
            all.push(seen);
        }
        Kind::Wraps(wrap) => {
            for target in &wrap.writes {
                write(&mut seen, target);
            }
            all.push(seen);
            look_through(&wrap, command, words, depth, all);
        }
        Kind::RunsUnknown(runs) => {
            seen.unknown = Some(format!(
                "`{name}` runs a command on arguments not known before it runs"
            ));
            all.push(seen);
            let mut inner = Vec::new();
            look(command, &runs, depth + 1, &mut inner);
            // What it runs is matched against the rules; its writes stay unknown.
            for mut seen in inner {
                seen.unknown.get_or_insert_with(|| {
                    format!("`{name}` gives it arguments not known before it runs")
                });
                all.push(seen);
            }
        }
        Kind::Script(text) => {
            all.push(seen);
            look_into(name, &text, depth, all);
        }
        Kind::Unknown(why) => {
            seen.unknown.get_or_insert(why);
            let strings = command_strings(&words[1..]);
            all.push(seen);
            // A program validator does not know may run a string it is given as a command
            // (`flock F -c 'CMD'`, `watch 'CMD'`, `su -c 'CMD'`): each such string is read as
            // commands of the line too.
            for text in strings {
                let start = all.len();
                look_into(name, &text, depth, all);
                for seen in &mut all[start..] {
                    seen.speculative = true;
                }
            }
        }
    }
}

/// What a wrapper runs, as commands of the line: in the wrapper's directory, under the name
/// it gives (`exec -a`), unknown where the wrapper steers it.
fn look_through(wrap: &Wrap, command: &Command, words: &[Word], depth: usize, all: &mut Vec<Seen>) {
    let inner = all.len();
    look(command, &words[wrap.at..], depth + 1, all);
    // `exec -a NAME CMD`: CMD runs as NAME too (`git-push` is `git push` to git).
    if let Some(argv0) = &wrap.argv0 {
        let mut renamed = vec![argv0.clone()];
        renamed.extend(words[wrap.at + 1..].iter().cloned());
        look(command, &renamed, depth + 1, all);
    }
    for seen in &mut all[inner..] {
        if let Some(dir) = &wrap.dir {
            seen.dirs.insert(0, dir.clone());
        }
        if let Some(why) = &wrap.unknown {
            seen.unknown.get_or_insert_with(|| why.clone());
        }
    }
}

/// The arguments that read as a command line: literal, with a space or a shell operator.
fn command_strings(args: &[Word]) -> Vec<String> {
    args.iter()
        .filter_map(|arg| arg.literal.as_deref())
        .flat_map(|text| {
            // An option's value too: `--exec=CMD`, `-xCMD`.
            let value = text
                .strip_prefix('-')
                .map(|option| match option.split_once('=') {
                    Some((_, value)) => value,
                    None => option.get(1..).unwrap_or_default(),
                });
            std::iter::once(text).chain(value)
        })
        .filter(|text| text.contains([' ', '\t', '\n', ';', '|', '&']))
        .map(str::to_owned)
        .collect()
}

/// A quoted `$(…)` or backquote (`x='a[$(cmd)]'`, `let 'y[$(cmd)]'`) is text now, but bash
/// runs it later wherever the text is evaluated (arithmetic on a variable holding it, `eval`,
/// a subscript): the commands in it are read as commands of the line.
fn quoted_substitutions(command: &Command, depth: usize, all: &mut Vec<Seen>) {
    let texts = command
        .words
        .iter()
        .chain(&command.assignments)
        .filter_map(|word| word.literal.as_deref())
        .filter(|text| text.contains("$(") || text.contains('`'));
    for text in texts {
        // An assignment's value is what may be evaluated.
        let value = text
            .split_once('=')
            .filter(|(name, _)| !name.contains("$("))
            .map_or(text, |(_, value)| value);
        look_into("bash", value, depth, all);
    }
}

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
fn git_words(words: &[Word]) -> (Vec<Word>, Option<usize>) {
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
            .is_some_and(|s| !GIT_BUILTINS.contains(&s))
    {
        sub.literal = None;
    }
    // Options not known before it runs may hide where the subcommand is.
    let known = !global.unknown_option && at < words.len();
    (words, known.then_some(at))
}

/// The script a shell reads on its standard input (`bash <<< 'CMD'`, `sh -s <<EOF`,
/// `. /dev/stdin <<EOF`), when this line shows it.
fn script_on_stdin(name: &str, args: &[Word], command: &Command) -> Option<String> {
    if command.inputs.is_empty() || command.inputs_unknown {
        return None;
    }
    let reads_stdin = if SHELLS.contains(&name) && name != "busybox" {
        let parsed = options::parse(args, Spec::default());
        !parsed.options.iter().any(|o| o.name.contains('c'))
            && (parsed.operands.is_empty() || parsed.has(&["-s"]))
    } else {
        matches!(name, "." | "source")
            && args.first().is_some_and(|file| {
                file.literal
                    .as_deref()
                    .is_some_and(|f| matches!(f, "/dev/stdin" | "/proc/self/fd/0" | "/dev/fd/0"))
            })
    };
    reads_stdin.then(|| command.inputs.concat())
}

/// Where the system's own programs live; a program named by any other path is the worker's.
fn is_system_program(path: &str) -> bool {
    ["/bin/", "/usr/bin/", "/sbin/", "/usr/sbin/"]
        .iter()
        .any(|dir| {
            path.strip_prefix(dir)
                .is_some_and(|name| !name.contains('/'))
        })
}

/// Variables that choose which program runs or make a known one do something else (a search
/// path, a startup file, a preloaded library, a pager or editor, git's own settings): set on
/// a command, or for the rest of the line, what runs after them is not known.
fn steers(variable: &str) -> bool {
    matches!(
        variable,
        "PATH"
            | "ENV"
            | "BASH_ENV"
            | "IFS"
            | "CDPATH"
            | "HOME"
            | "PS4"
            | "PROMPT_COMMAND"
            | "SHELLOPTS"
            | "BASHOPTS"
            | "EDITOR"
            | "VISUAL"
            | "TMPDIR"
            | "RIPGREP_CONFIG_PATH"
            | "MAGIC"
            | "POSIXLY_CORRECT"
            | "TERMINFO"
            | "TERMINFO_DIRS"
    ) || ["LD_", "GIT_", "BASH_FUNC_", "LESS", "DYLD_", "XDG_"]
        .iter()
        .any(|prefix| variable.starts_with(prefix))
        || variable.ends_with("PAGER")
}

/// Why the assignments `words` (`NAME=value`) make what runs unknown, if one sets a variable
/// that [`steers`] or its name is not known.
fn steering(words: &[Word]) -> Option<String> {
    words.iter().find_map(|word| {
        let variable = word
            .raw
            .split_once('=')
            .map_or(word.raw.as_str(), |(name, _)| name);
        let variable = variable.strip_suffix('+').unwrap_or(variable);
        steers(variable)
            .then(|| format!("it sets `{variable}`, which changes what the commands after it run"))
    })
}

/// A copy's paths, when all are known.
fn copies(seen: &mut Seen, name: &str, sources: &[Word], dest: &Word, moves: bool, how: How) {
    let literal = |w: &Word| w.literal.clone();
    match (
        sources.iter().map(literal).collect::<Option<Vec<_>>>(),
        literal(dest),
    ) {
        (Some(sources), Some(dest)) => {
            if moves {
                seen.writes.extend(sources.iter().cloned());
            }
            seen.copies.push(Copy {
                sources,
                dest,
                symbolic: how.symbolic,
                hard: how.hard,
                no_target_directory: how.no_target_directory,
                backup: how.backup,
            });
        }
        _ => {
            seen.unknown = Some(format!(
                "`{name}` copies between paths not known before it runs"
            ));
        }
    }
}

/// The files a patch fed on standard input names.
fn patched(seen: &mut Seen, name: &str, text: &str, strip: Option<usize>) {
    if text.trim().is_empty() {
        seen.unknown = Some(format!("`{name}` reads a patch this line does not show"));
        return;
    }
    let files = super::patch::files(text, strip.unwrap_or(0));
    if files.is_empty() {
        seen.unknown = Some(format!(
            "`{name}` reads a patch that names no file validator can read"
        ));
        return;
    }
    seen.writes.extend(files);
    if strip.is_none() {
        seen.unknown = Some(format!(
            "`{name}` without `-p` may strip any part of the patch's names"
        ));
    }
}

/// The commands of a script a command runs (`sh -c`, `eval`), as commands of the line.
fn look_into(name: &str, text: &str, depth: usize, all: &mut Vec<Seen>) {
    let inner = shell::read(text);
    for inner_command in &inner.commands {
        look(inner_command, &inner_command.words, depth + 1, all);
    }
    for why in &inner.opaque {
        all.push(Seen {
            unknown: Some(format!(
                "the script `{name}` runs cannot be read whole: {why}"
            )),
            ..Seen::default()
        });
    }
}

fn write(seen: &mut Seen, target: &Word) {
    match &target.literal {
        Some(path) if is_device(path) => {}
        Some(path) => seen.writes.push(path.clone()),
        None => {
            seen.unknown.get_or_insert_with(|| {
                format!(
                    "it writes `{}`, which is not known before it runs",
                    target.raw
                )
            });
        }
    }
}

fn is_device(path: &str) -> bool {
    matches!(
        path,
        "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty" | "/dev/zero"
    ) || path.starts_with("/dev/fd/")
}

/// What a program does with its arguments.
enum Kind {
    /// Writes no file (what it prints may be redirected, which is the redirection's).
    Reads,
    /// Writes these.
    Writes(Vec<Word>),
    /// Creates these directories.
    Creates(Vec<Word>),
    /// Copies (moves, links) `sources` to `dest`.
    Copies {
        sources: Vec<Word>,
        dest: Word,
        moves: bool,
        how: How,
    },
    /// Runs the command that starts at this word with arguments not known before it runs
    /// (`xargs`, `find -exec`): what it writes cannot be told, but what it runs is seen.
    RunsUnknown(Vec<Word>),
    /// Applies a patch fed on its standard input, stripping this many components (`None`: not
    /// said), and writes `writes` besides (`patch FILE`, `-o OUT`, `-r REJECTS`).
    Patch {
        strip: Option<usize>,
        writes: Vec<Word>,
    },
    /// Runs a command of its arguments (a wrapper).
    Wraps(Wrap),
    /// Runs this script (`sh -c`, `eval`, `trap`).
    Script(String),
    Unknown(String),
}

/// How a copy is made: what [`Copy`] says besides its paths.
#[derive(Default)]
struct How {
    symbolic: bool,
    hard: bool,
    no_target_directory: bool,
    backup: Option<String>,
}

/// What a wrapper runs, and how.
struct Wrap {
    /// The word its command starts at, counted from the wrapper's own.
    at: usize,
    /// The directory it runs the command in (`env -C`, `sudo -D`).
    dir: Option<String>,
    /// What the wrapper itself writes (`time -o FILE`).
    writes: Vec<Word>,
    /// Why what it runs may write what cannot be told (it sets a variable that steers it).
    unknown: Option<String>,
    /// The name the command runs under (`exec -a NAME`).
    argv0: Option<Word>,
}

/// Programs that write no file and run no other program whatever their arguments (their
/// output goes where a redirection sends it). One that does with some option (`sort -o`,
/// `rg --pre`, `xxd IN OUT`) is not here but read in [`kind`].
const READ_ONLY: &[&str] = &[
    "cat",
    "head",
    "tail",
    "less",
    "more",
    "ls",
    "ll",
    "dir",
    "pwd",
    "echo",
    "grep",
    "egrep",
    "fgrep",
    "wc",
    "cut",
    "tr",
    "diff",
    "cmp",
    "comm",
    "stat",
    "du",
    "df",
    "which",
    "type",
    "whereis",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "true",
    "false",
    ":",
    "date",
    "printenv",
    "id",
    "whoami",
    "hostname",
    "uname",
    "jq",
    "od",
    "hexdump",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "nl",
    "fold",
    "column",
    "paste",
    "join",
    "seq",
    "sleep",
    "cd",
    "pushd",
    "popd",
    "set",
    "shift",
    "wait",
    "jobs",
    "exit",
    "return",
    "ps",
    "pgrep",
    "top",
    "free",
    "uptime",
    "nproc",
    "lsof",
    "tac",
    "rev",
    "expand",
    "unexpand",
    "fmt",
    "pr",
    "strings",
    "getconf",
    "locale",
    "tput",
    "clear",
    "look",
    "numfmt",
    "readelf",
    "bc",
    "expr",
    "umask",
    "ulimit",
    "kill",
    "break",
    "continue",
];

/// Builtins that evaluate their arguments as names or arithmetic, where bash runs a `$(…)`
/// written inside an array subscript even in single quotes (`let 'x[$(cmd)]=1'`).
const EVALUATING: &[&str] = &[
    "let",
    "declare",
    "typeset",
    "local",
    "readonly",
    "export",
    "printf",
    "read",
    "unset",
    "mapfile",
    "readarray",
    "getopts",
    "test",
    "[",
    "[[",
];

/// Programs that run the command after their own options.
const WRAPPERS: &[&str] = &[
    "sudo", "doas", "command", "builtin", "exec", "nohup", "time", "nice", "ionice", "chrt",
    "taskset", "stdbuf", "timeout", "env", "xargs", "setsid", "unbuffer",
];

const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "ash", "busybox"];

/// The options of `cp`, `mv`, `ln` and `install`, each its own: GNU takes any unambiguous
/// prefix of a long option, so `--o` is `--one-file-system` to `cp` and `--owner` to `install`.
fn copy_spec(name: &str) -> Spec {
    let (short, long, long_flags) = match name {
        "cp" => ("tS", CP_VALUED, CP_FLAGS),
        "mv" => ("tS", &CP_VALUED[..2], MV_FLAGS),
        "ln" => ("tS", &CP_VALUED[..2], LN_FLAGS),
        _ => ("tSmog", INSTALL_VALUED, INSTALL_FLAGS),
    };
    Spec {
        short,
        long,
        long_flags,
        ..Spec::default()
    }
}

const CP_VALUED: &[&str] = &["target-directory", "suffix", "no-preserve", "sparse"];
const INSTALL_VALUED: &[&str] = &[
    "target-directory",
    "suffix",
    "mode",
    "owner",
    "group",
    "strip-program",
];
const CP_FLAGS: &[&str] = &[
    "archive",
    "attributes-only",
    "backup",
    "copy-contents",
    "debug",
    "dereference",
    "force",
    "interactive",
    "link",
    "no-clobber",
    "no-dereference",
    "no-target-directory",
    "one-file-system",
    "parents",
    "preserve",
    "recursive",
    "reflink",
    "remove-destination",
    "strip-trailing-slashes",
    "symbolic-link",
    "update",
    "verbose",
    "context",
];
const MV_FLAGS: &[&str] = &[
    "backup",
    "debug",
    "exchange",
    "force",
    "interactive",
    "no-clobber",
    "no-copy",
    "no-target-directory",
    "strip-trailing-slashes",
    "update",
    "verbose",
    "context",
];
const LN_FLAGS: &[&str] = &[
    "backup",
    "directory",
    "force",
    "interactive",
    "logical",
    "no-dereference",
    "no-target-directory",
    "physical",
    "relative",
    "symbolic",
    "verbose",
];
const INSTALL_FLAGS: &[&str] = &[
    "backup",
    "compare",
    "debug",
    "directory",
    "no-target-directory",
    "preserve-context",
    "preserve-timestamps",
    "strip",
    "verbose",
    "context",
];

fn spec(short: &'static str, long: &'static [&'static str]) -> Spec {
    Spec {
        short,
        long,
        ..Spec::default()
    }
}

fn kind(name: &str, args: &[Word]) -> Kind {
    if WRAPPERS.contains(&name) {
        return wrapped(name, args);
    }
    if SHELLS.contains(&name) {
        return shell_script(name, args);
    }
    if EVALUATING.contains(&name) {
        return evaluating(name, args);
    }
    let operands = |spec: Spec| options::parse(args, spec).operands;
    match name {
        "eval" => match literals(args) {
            Some(words) => Kind::Script(words.join(" ")),
            None => Kind::Unknown("`eval` runs words not known before it runs".into()),
        },
        "trap" => trap(args),
        "tee" | "rm" | "rmdir" | "unlink" => Kind::Writes(operands(Spec::default())),
        "shred" => Kind::Writes(operands(spec(
            "ns",
            &["iterations", "size", "random-source"],
        ))),
        "touch" => Kind::Writes(operands(spec("dtr", &["date", "reference", "time"]))),
        "truncate" => Kind::Writes(operands(spec("sr", &["size", "reference"]))),
        "mkdir" => Kind::Creates(operands(spec("m", &["mode"]))),
        "chmod" => chmod(args),
        "chown" | "chgrp" => {
            let parsed = options::parse(args, spec("", &["from", "reference"]));
            let skip = usize::from(!parsed.has(&["--reference"]));
            Kind::Writes(parsed.operands.into_iter().skip(skip).collect())
        }
        "cp" | "install" | "ln" | "mv" => copied(name, args),
        "dd" => Kind::Writes(args.iter().filter_map(dd_output).collect()),
        "sed" => sed(args),
        "perl" | "ruby" => {
            Kind::Unknown(format!("`{name}` runs a program that may write anything"))
        }
        "sort" | "shuf" | "tree" | "file" | "rg" | "ag" => reads_unless_told(name, args),
        "xxd" => xxd(args),
        "uniq" => Kind::Writes(
            operands(spec("fsw", &["skip-fields", "skip-chars", "check-chars"]))
                .into_iter()
                .skip(1)
                .collect(),
        ),
        // With arguments they change what later commands run (`hash -p ./x cat`,
        // `alias ls=…`) or write the history file.
        // An alias runs its value wherever its name is used after it.
        "alias" => match literals(args) {
            Some(args) => Kind::Script(
                args.iter()
                    .filter_map(|arg| arg.split_once('=').map(|(_, value)| value))
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            None => Kind::Unknown("`alias` defines a command not known before it runs".into()),
        },
        "hash" | "history" if args.is_empty() => Kind::Reads,
        "hash" | "history" => Kind::Unknown(format!(
            "`{name}` with arguments changes what later commands run or writes a file"
        )),
        "find" => find(args),
        "git" => git(args),
        "apply_patch" | "applypatch" => Kind::Patch {
            strip: Some(0),
            writes: Vec::new(),
        },
        "patch" => patch(args),
        name if READ_ONLY.contains(&name) => Kind::Reads,
        _ => Kind::Unknown(format!("validator does not know what `{name}` writes")),
    }
}

/// Programs that only read unless an option makes them write a file (`sort -o`, `tree -o`)
/// or run a program (`rg --pre`, `sort --compress-program`).
fn reads_unless_told(name: &str, args: &[Word]) -> Kind {
    match name {
        "sort" => output_or_program(
            args,
            spec(
                "kSTto",
                &[
                    "key",
                    "output",
                    "buffer-size",
                    "temporary-directory",
                    "field-separator",
                    "parallel",
                    "batch-size",
                    "compress-program",
                    "files0-from",
                    "random-source",
                    "sort",
                ],
            ),
            &["--compress-program"],
        ),
        "shuf" => output_or_program(
            args,
            spec(
                "ino",
                &["input-range", "head-count", "output", "random-source"],
            ),
            &[],
        ),
        "tree" => {
            let parsed = options::parse(
                args,
                spec(
                    "LPIoHT",
                    &["charset", "filelimit", "timefmt", "sort", "fromfile"],
                ),
            );
            if parsed.has(&["-R"]) {
                return Kind::Unknown("`tree -R` writes a listing into each directory".into());
            }
            Kind::Writes(parsed.value(&["-o"]).cloned().into_iter().collect())
        }
        "rg" | "ag"
            if args.iter().any(|a| {
                a.literal
                    .as_deref()
                    .is_none_or(|a| a.starts_with("--pre") || a.starts_with("--pager"))
            }) =>
        {
            Kind::Unknown(format!("`{name}` runs the program an option names"))
        }
        "rg" | "ag" => Kind::Reads,
        "file" => {
            let parsed = options::parse(
                args,
                spec(
                    "emfFP",
                    &[
                        "magic-file",
                        "files-from",
                        "separator",
                        "exclude",
                        "parameter",
                    ],
                ),
            );
            if parsed.has(&["-C", "--compile"]) {
                Kind::Unknown("`file -C` writes a compiled magic file".into())
            } else {
                Kind::Reads
            }
        }
        _ => Kind::Reads,
    }
}

/// The literal values of `args`, if all have one.
fn literals(args: &[Word]) -> Option<Vec<String>> {
    args.iter().map(|w| w.literal.clone()).collect()
}

/// A program that reads, unless an option names its output (`-o FILE`) or a program to run.
fn output_or_program(args: &[Word], spec: Spec, runs: &[&str]) -> Kind {
    let parsed = options::parse(args, spec);
    if parsed.has(runs) {
        return Kind::Unknown("an option names a program it runs".into());
    }
    Kind::Writes(parsed.values(&["-o", "--output"]).cloned().collect())
}

/// `xxd [options] [IN [OUT]]`: OUT is written. Its options are single-dash words (`-cols 8`).
fn xxd(args: &[Word]) -> Kind {
    const VALUED: &[&str] = &[
        "-c",
        "-cols",
        "-g",
        "-groupsize",
        "-l",
        "-len",
        "-n",
        "-name",
        "-o",
        "-offset",
        "-s",
        "-seek",
        "-R",
    ];
    let mut operands = Vec::new();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        match word.literal.as_deref() {
            Some(option) if VALUED.contains(&option) => {
                words.next();
            }
            Some(option) if option.starts_with('-') && option.len() > 1 => {}
            _ => operands.push(word.clone()),
        }
    }
    Kind::Writes(operands.into_iter().skip(1).take(1).collect())
}

/// `let`, `declare`, `read`, …: bash runs a substitution inside an array subscript of their
/// arguments, quoted or not; one that sets a variable that steers later commands makes them
/// unknown.
fn evaluating(name: &str, args: &[Word]) -> Kind {
    let hidden: Vec<&str> = args
        .iter()
        .map(|w| w.literal.as_deref().unwrap_or(&w.raw))
        .filter(|text| text.contains("$(") || text.contains('`'))
        .collect();
    if !hidden.is_empty() {
        return Kind::Script(hidden.join("\n"));
    }
    let assignments: Vec<Word> = args
        .iter()
        .filter(|w| w.raw.contains('='))
        .cloned()
        .collect();
    match steering(&assignments) {
        Some(why) => Kind::Unknown(format!("`{name}`: {why}")),
        None => Kind::Reads,
    }
}

/// `trap 'CMD' SIGNALS`: CMD runs later in this shell, as a script of the line.
fn trap(args: &[Word]) -> Kind {
    let parsed = options::parse(args, Spec::default());
    match parsed.operands.first() {
        None => Kind::Reads,
        Some(action) => match action.literal.as_deref() {
            Some("" | "-") => Kind::Reads,
            Some(script) if parsed.operands.len() > 1 => Kind::Script(script.to_owned()),
            // `trap SIGNAL` alone resets it.
            Some(_) => Kind::Reads,
            None => Kind::Unknown("`trap` sets a command not known before it runs".into()),
        },
    }
}

/// `chmod MODE FILE…`: a mode may look like an option (`-w`, `-x`), and `--reference` takes
/// its place.
fn chmod(args: &[Word]) -> Kind {
    let is_mode = |text: &str| {
        text.len() > 1
            && text.starts_with(['-', '+', '='])
            && text[1..]
                .chars()
                .all(|c| "rwxXstugoa,=+-01234567".contains(c))
    };
    let mut mode_given = args.iter().any(|a| {
        a.literal
            .as_deref()
            .is_some_and(|a| a.starts_with("--reference"))
    });
    let mut targets = Vec::new();
    let mut options_over = false;
    for arg in args {
        match arg.literal.as_deref() {
            Some("--") if !options_over => options_over = true,
            Some(text) if !options_over && !mode_given && is_mode(text) => mode_given = true,
            Some(text) if !options_over && text.starts_with('-') && text.len() > 1 => {}
            _ if !mode_given => mode_given = true,
            _ => targets.push(arg.clone()),
        }
    }
    Kind::Writes(targets)
}

/// Whether `-x` (alone or among short flags) or `long` is given.
fn has_flag(args: &[Word], short: char, long: &str) -> bool {
    args.iter().any(|a| {
        a.literal.as_deref().is_some_and(|a| {
            a == long || (a.starts_with('-') && !a.starts_with("--") && a.contains(short))
        })
    })
}

/// `dd`'s `of=FILE` as the path it names.
fn dd_output(arg: &Word) -> Option<Word> {
    arg.raw.strip_prefix("of=").map(|raw| Word {
        raw: raw.to_owned(),
        literal: arg
            .literal
            .as_deref()
            .and_then(|l| l.strip_prefix("of="))
            .map(str::to_owned),
    })
}

/// `find`: what its `-exec` runs, or whether it acts on what it finds (`-delete`, `-fprint`).
fn find(args: &[Word]) -> Kind {
    let acting = args.iter().any(|a| {
        a.literal.as_deref().is_some_and(|a| {
            matches!(
                a,
                "-delete"
                    | "-exec"
                    | "-execdir"
                    | "-ok"
                    | "-okdir"
                    | "-fprint"
                    | "-fprint0"
                    | "-fprintf"
                    | "-fls"
            )
        })
    });
    match find_exec(args) {
        Some(command) => Kind::RunsUnknown(command),
        None if acting => Kind::Unknown(
            "`find` acts on files it finds, which are not known before it runs".into(),
        ),
        None => Kind::Reads,
    }
}

/// The command `find -exec`/`-execdir`/`-ok` runs (up to its `;` or `+`), its `{}` a word not
/// known before it runs.
fn find_exec(args: &[Word]) -> Option<Vec<Word>> {
    let start = args.iter().position(|a| {
        a.literal
            .as_deref()
            .is_some_and(|a| matches!(a, "-exec" | "-execdir" | "-ok" | "-okdir"))
    })?;
    let command: Vec<Word> = args[start + 1..]
        .iter()
        .take_while(|a| !matches!(a.literal.as_deref(), Some(";" | "+")))
        .map(|a| {
            if a.literal.as_deref().is_some_and(|a| a.contains("{}")) {
                Word {
                    raw: a.raw.clone(),
                    literal: None,
                }
            } else {
                a.clone()
            }
        })
        .collect();
    (!command.is_empty()).then_some(command)
}

/// `cp`, `install`, `ln`, `mv`: the destination (the last operand, or `-t DIR`), and for `mv`
/// the sources too, which it removes. A destination that is a directory gets each source's
/// name inside it; the caller judges both the destination as written and what lands in it.
fn copied(name: &str, args: &[Word]) -> Kind {
    let moves = name == "mv";
    let parsed = options::parse(args, copy_spec(name));
    if parsed.unknown_option {
        return Kind::Unknown(format!("`{name}` has options not known before it runs"));
    }
    let suffix = parsed
        .value(&["-S", "--suffix"])
        .map(|suffix| suffix.literal.clone());
    if parsed.has(&["--parents", "--strip-program", "--exchange"])
        || suffix
            .as_ref()
            .is_some_and(|s| s.as_deref().is_none_or(|s| s.contains('/')))
    {
        return Kind::Unknown(format!(
            "`{name}` puts files where its options say, which is not read here"
        ));
    }
    let mut operands = parsed.operands.clone();
    if name == "install" && parsed.has(&["-d", "--directory"]) {
        return Kind::Creates(operands);
    }
    let dest = match parsed.value(&["-t", "--target-directory"]) {
        // `-t DIR`: a directory, even one written without a trailing `/`.
        Some(dir) => dir.clone(),
        None => match operands.pop() {
            Some(dest) => dest,
            None => return Kind::Reads,
        },
    };
    let symbolic = match name {
        "ln" => parsed.has(&["-s", "--symbolic"]),
        "cp" => parsed.has(&["-s", "--symbolic-link"]),
        _ => false,
    };
    let numbered = parsed.options.iter().any(|o| {
        o.name == "--backup"
            && o.value
                .as_ref()
                .is_some_and(|v| v.is("numbered") || v.is("t"))
    });
    // The file replaced is kept under the suffix (`~` unless said; numbered backups end
    // `.~N~`, judged as the first).
    let backup = parsed
        .has(&["-b", "--backup"])
        .then(|| match suffix.flatten() {
            Some(suffix) => suffix,
            None if numbered => ".~1~".to_owned(),
            None => "~".to_owned(),
        });
    Kind::Copies {
        sources: operands,
        dest,
        moves,
        how: How {
            symbolic,
            hard: !symbolic && (name == "ln" || (name == "cp" && parsed.has(&["-l", "--link"]))),
            no_target_directory: parsed.has(&["-T", "--no-target-directory"]),
            backup,
        },
    }
}

/// `sed`: `-i` writes its files; a script that runs a program or writes a file (`e`, `w`,
/// `s///e`), or one this line does not show (`-f FILE`), may write anything.
fn sed(args: &[Word]) -> Kind {
    let parsed = options::parse(
        args,
        Spec {
            short: "efl",
            short_optional: "i",
            long: &["expression", "file", "line-length"],
            long_flags: &[
                "in-place",
                "null-data",
                "separate",
                "regexp-extended",
                "quiet",
                "silent",
                "sandbox",
            ],
            stop_at_operand: false,
        },
    );
    if parsed.unknown_option || parsed.has(&["-f", "--file"]) {
        return Kind::Unknown("the `sed` script is not known before it runs".into());
    }
    let mut operands = parsed.operands.clone();
    let mut scripts: Vec<&Word> = parsed.values(&["-e", "--expression"]).collect();
    let first = (scripts.is_empty() && !operands.is_empty()).then(|| operands.remove(0));
    scripts.extend(first.as_ref());
    let edits_only = scripts
        .iter()
        .all(|script| script.literal.as_deref().is_some_and(sed::only_edits));
    if !edits_only && !parsed.has(&["--sandbox"]) {
        return Kind::Unknown(
            "the `sed` script runs a program or writes a file, or is not known before it runs"
                .into(),
        );
    }
    let suffix = parsed
        .options
        .iter()
        .rev()
        .find(|o| o.name == "-i" || o.name == "--in-place")
        .map(|o| o.value.as_ref());
    match suffix {
        // A suffix with a `/` puts the backup in another directory.
        Some(Some(suffix)) if suffix.literal.as_deref().is_none_or(|s| s.contains('/')) => {
            Kind::Unknown("`sed -i` puts its backups where its suffix says".into())
        }
        // A suffix with a `*` names the backup after the file in other ways.
        Some(Some(suffix)) if suffix.literal.as_deref().is_some_and(|s| s.contains('*')) => {
            Kind::Unknown("`sed -i` names its backups as its suffix says".into())
        }
        // The backup is the file's name and the suffix, beside it.
        Some(Some(suffix)) => {
            let suffix = suffix.literal.clone().unwrap_or_default();
            let backups: Vec<Word> = operands
                .iter()
                .map(|file| Word {
                    raw: format!("{}{suffix}", file.raw),
                    literal: file.literal.as_ref().map(|f| format!("{f}{suffix}")),
                })
                .collect();
            Kind::Writes(operands.into_iter().chain(backups).collect())
        }
        Some(None) => Kind::Writes(operands),
        None => Kind::Reads,
    }
}

/// `patch`: the file an operand names is the one patched, whatever the diff's names; `-o`
/// and `-r` write theirs; a patch file, a directory or a backup prefix cannot be followed.
fn patch(args: &[Word]) -> Kind {
    let parsed = options::parse(
        args,
        spec(
            "BDdFgiopVrYz",
            &[
                "prefix",
                "ifdef",
                "directory",
                "fuzz",
                "get",
                "input",
                "output",
                "strip",
                "version-control",
                "reject-file",
                "basename-prefix",
                "suffix",
                "quoting-style",
                "reject-format",
            ],
        ),
    );
    if parsed.unknown_option
        || parsed.has(&[
            "-i",
            "--input",
            "-d",
            "--directory",
            "-B",
            "--prefix",
            "-Y",
            "--basename-prefix",
            "-z",
            "--suffix",
        ])
        || parsed.operands.len() > 1
    {
        return Kind::Unknown(
            "`patch` reads a patch file or puts files where its options say, which is not read here"
                .into(),
        );
    }
    let strip = parsed
        .value(&["-p", "--strip"])
        .map(|n| n.literal.as_deref().and_then(|n| n.parse().ok()));
    let strip = match strip {
        Some(None) => return Kind::Unknown("`patch -p` strips a number not known here".into()),
        Some(Some(n)) => Some(n),
        None => None,
    };
    let mut writes = parsed.operands.clone();
    writes.extend(
        parsed
            .values(&["-o", "--output", "-r", "--reject-file"])
            .cloned(),
    );
    Kind::Patch { strip, writes }
}

fn wrapped(name: &str, args: &[Word]) -> Kind {
    let spec = wrapper_spec(name);
    let parsed = options::parse(
        args,
        Spec {
            stop_at_operand: true,
            ..spec
        },
    );
    if parsed.unknown_option {
        return Kind::Unknown(format!("`{name}` runs a command not known before it runs"));
    }
    // `env -S 'CMD ARGS'`: the string is split into the command it runs.
    if name == "env" && parsed.has(&["-S", "--split-string"]) {
        return match (
            parsed
                .value(&["-S", "--split-string"])
                .and_then(|w| w.literal.clone()),
            literals(&args[parsed.rest_at..]),
        ) {
            (Some(split), Some(rest)) => Kind::Script(format!("{split} {}", rest.join(" "))),
            _ => Kind::Unknown("`env -S` splits a string not known before it runs".into()),
        };
    }
    let refused = match name {
        "sudo" | "doas" => parsed
            .has(&[
                "-R", "--chroot", "-e", "--edit", "-s", "--shell", "-i", "--login",
            ])
            .then_some("`sudo` runs its command through a shell, in another root or as an editor"),
        "ionice" => parsed
            .has(&["-p", "--pid", "-P", "--pgid", "-u", "--uid"])
            .then_some(""),
        "command" => parsed.has(&["-v", "-V"]).then_some(""),
        _ => None,
    };
    match refused {
        Some("") => return Kind::Reads,
        Some(why) => return Kind::Unknown(why.into()),
        None => {}
    }
    let mut at = parsed.rest_at;
    let mut assignments = Vec::new();
    while let Some(word) = args.get(at) {
        let is_assignment = name == "env" && word.raw.contains('=') && !word.raw.starts_with('=');
        // `timeout DURATION`, `taskset MASK`, `chrt PRIORITY` come before the command.
        let is_operand = matches!(name, "timeout" | "taskset" | "chrt") && at == parsed.rest_at;
        if !(is_assignment || is_operand) {
            break;
        }
        if is_assignment {
            assignments.push(word.clone());
        }
        at += 1;
    }
    if matches!(name, "taskset" | "chrt") && has_flag(args, 'p', "--pid") {
        return Kind::Reads;
    }
    if at >= args.len() {
        return Kind::Writes(parsed.values(&["-o", "--output"]).cloned().collect());
    }
    if name == "xargs" {
        // Its arguments come at run time: one more word not known before it runs.
        let mut command = args[at..].to_vec();
        command.push(Word {
            raw: "<arguments read by xargs>".into(),
            literal: None,
        });
        return Kind::RunsUnknown(command);
    }
    let dir = match parsed.value(&["-C", "--chdir", "-D"]) {
        Some(dir) if name == "env" || matches!(name, "sudo" | "doas") => match &dir.literal {
            Some(dir) => Some(dir.clone()),
            None => {
                return Kind::Unknown(format!(
                    "`{name}` runs its command in a directory not known before it runs"
                ));
            }
        },
        _ => None,
    };
    Kind::Wraps(Wrap {
        at: at + 1,
        dir,
        writes: if name == "time" {
            parsed.values(&["-o", "--output"]).cloned().collect()
        } else {
            Vec::new()
        },
        unknown: steering(&assignments),
        argv0: parsed.value(&["-a"]).filter(|_| name == "exec").cloned(),
    })
}

/// The options of a wrapper that take a value.
fn wrapper_spec(name: &str) -> Spec {
    match name {
        "sudo" | "doas" => spec(
            "ugCDprtTUR",
            &[
                "user",
                "group",
                "close-from",
                "chdir",
                "host",
                "prompt",
                "chroot",
                "role",
                "type",
                "command-timeout",
                "other-user",
            ],
        ),
        "nice" => spec("n", &["adjustment"]),
        "ionice" => spec("cnpPu", &["class", "classdata", "pid", "pgid", "uid"]),
        "stdbuf" => spec("ioe", &["input", "output", "error"]),
        "timeout" => spec("sk", &["signal", "kill-after"]),
        "env" => spec("uCS", &["unset", "chdir", "split-string"]),
        "xargs" => Spec {
            short: "adEILnPs",
            short_optional: "eil",
            long: &[
                "arg-file",
                "delimiter",
                "max-args",
                "max-procs",
                "max-chars",
                "process-slot-var",
            ],
            ..Spec::default()
        },
        "exec" => spec("a", &[]),
        "time" => spec("fo", &["format", "output"]),
        _ => Spec::default(),
    }
}

fn shell_script(name: &str, args: &[Word]) -> Kind {
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.literal.as_deref() {
            Some(flags)
                if flags.starts_with('-') && !flags.starts_with("--") && flags.contains('c') =>
            {
                return match iter.next().and_then(|script| script.literal.clone()) {
                    Some(script) => Kind::Script(script),
                    None => Kind::Unknown(format!(
                        "`{name} -c` runs a script not known before it runs"
                    )),
                };
            }
            Some(option) if option.starts_with('-') => {}
            _ => break,
        }
    }
    Kind::Unknown(format!(
        "`{name}` runs a script file or its input, which may write anything"
    ))
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
fn git(args: &[Word]) -> Kind {
    let global = options::parse(args, GIT_GLOBAL);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn writes(line: &str) -> (Vec<String>, bool) {
        let all = seen(&shell::read(line));
        let writes = all
            .iter()
            .flat_map(|s| {
                s.writes.iter().cloned().chain(
                    s.copies
                        .iter()
                        .map(|c| format!("{}<-{}", c.dest, c.sources.join(","))),
                )
            })
            .collect();
        (writes, all.iter().any(|s| s.unknown.is_some()))
    }

    #[test]
    fn the_writes_of_known_programs_are_told() {
        for (line, expected) in [
            ("echo x > a.txt 2>/dev/null", vec!["a.txt"]),
            ("cat a | tee -a b c", vec!["b", "c"]),
            ("cp -r src dst/", vec!["dst/<-src"]),
            ("ln -s ../a.rs src/b.rs", vec!["src/b.rs<-../a.rs"]),
            ("mv -f a b", vec!["a", "b<-a"]),
            ("cp -t dir a b", vec!["dir<-a,b"]),
            ("rm -rf build dist", vec!["build", "dist"]),
            ("sed -i 's/a/b/' x.py y.py", vec!["x.py", "y.py"]),
            ("sed -i.bak -e 's/a/b/' x.py", vec!["x.py", "x.py.bak"]),
            ("touch a; truncate -s 0 b", vec!["a", "b"]),
            ("dd if=/dev/zero of=disk.img bs=1", vec!["disk.img"]),
            ("sudo -u root rm x", vec!["x"]),
            ("timeout 5 env A=1 touch y", vec!["y"]),
            ("sh -c 'echo hi > z'", vec!["z"]),
            ("eval touch w", vec!["w"]),
            ("git mv a b && git status", vec!["a", "b<-a"]),
            (
                "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: n.txt\n+x\n*** End Patch\nEOF\n",
                vec!["n.txt"],
            ),
            (
                "git apply <<EOF\n--- a/s.rs\n+++ b/s.rs\n@@ -1 +1 @@\n-a\n+b\nEOF\n",
                vec!["s.rs"],
            ),
        ] {
            let (found, unknown) = writes(line);
            assert_eq!(found, expected, "{line}");
            assert!(!unknown, "{line}");
        }
    }

    #[test]
    fn what_cannot_be_told_is_unknown() {
        for line in [
            "python script.py",
            "echo x > $OUT",
            "rm -rf $(cat list)",
            "xargs rm < list",
            "find . -delete",
            "bash build.sh",
            "sh -c \"$CMD\"",
            "$EDITOR file",
            "git checkout main",
            "patch < fix.diff",
            "echo 'open",
        ] {
            assert!(writes(line).1, "{line}");
        }
        for line in [
            "ls -la",
            "git status && git diff",
            "grep -r x . | head",
            "cd src && pwd",
        ] {
            assert_eq!(writes(line), (vec![], false), "{line}");
        }
    }
}
