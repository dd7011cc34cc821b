//! What the commands of a shell line would write, told from the commands themselves before
//! they run: redirections, and the programs whose writes their arguments name (`cp`, `mv`,
//! `rm`, `tee`, `touch`, `sed -i`, `dd of=`, a patch fed on standard input, …). A wrapper
//! (`sudo`, `env`, `timeout`, `sh -c`, `eval`) is looked through. A program this module does
//! not know may write anything: its writes are unknown, never assumed to be none.

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
    pub unknown: Option<String>,
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
}

/// Most levels of wrappers and `sh -c` looked through.
const MAX_DEPTH: usize = 8;

/// Every command `script` runs, as seen; a script that could not be read whole adds an unknown
/// command saying why.
pub fn seen(script: &Script) -> Vec<Seen> {
    let mut all = Vec::new();
    for command in &script.commands {
        look(command, &command.words, 0, &mut all);
    }
    for why in &script.opaque {
        all.push(Seen {
            unknown: Some(format!("the command line cannot be read whole: {why}")),
            ..Seen::default()
        });
    }
    all
}

fn look(command: &Command, words: &[Word], depth: usize, all: &mut Vec<Seen>) {
    let mut seen = Seen {
        words: words.to_vec(),
        isolated: command.isolated,
        ..Seen::default()
    };
    // The redirections are the outermost command's, whatever it wraps.
    if std::ptr::eq(words.as_ptr(), command.words.as_ptr()) {
        for redirect in command.redirects.iter().filter(|r| r.writes()) {
            write(&mut seen, &redirect.target);
        }
    }
    let Some((program, args)) = words.split_first() else {
        all.push(seen);
        return;
    };
    let Some(name) = program.literal.as_deref() else {
        seen.unknown = Some(format!(
            "the program `{}` is not known before it runs",
            program.raw
        ));
        all.push(seen);
        return;
    };
    let name = name.rsplit('/').next().unwrap_or(name);
    if depth > MAX_DEPTH {
        seen.unknown = Some("wrappers nest too deep to read".into());
        all.push(seen);
        return;
    }
    match kind(name, args) {
        Kind::Reads => all.push(seen),
        Kind::Writes(targets) => {
            for target in &targets {
                write(&mut seen, target);
            }
            all.push(seen);
        }
        Kind::Copies {
            sources,
            dest,
            moves,
            symbolic,
        } => {
            copies(&mut seen, name, &sources, dest, moves, symbolic);
            all.push(seen);
        }
        Kind::Patch(strip) => {
            patched(&mut seen, name, &command.inputs.concat(), strip);
            all.push(seen);
        }
        Kind::Wraps(at) => {
            all.push(seen);
            look(command, &words[at..], depth + 1, all);
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
            seen.unknown = Some(why);
            all.push(seen);
        }
    }
}

/// A copy's paths, when all are known.
fn copies(
    seen: &mut Seen,
    name: &str,
    sources: &[&Word],
    dest: &Word,
    moves: bool,
    symbolic: bool,
) {
    let literal = |w: &Word| w.literal.clone();
    match (
        sources
            .iter()
            .map(|w| literal(w))
            .collect::<Option<Vec<_>>>(),
        literal(dest),
    ) {
        (Some(sources), Some(dest)) => {
            if moves {
                seen.writes.extend(sources.iter().cloned());
            }
            seen.copies.push(Copy {
                sources,
                dest,
                symbolic,
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
    seen.writes
        .extend(super::patch::files(text, strip.unwrap_or(0)));
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
enum Kind<'w> {
    /// Writes no file (what it prints may be redirected, which is the redirection's).
    Reads,
    /// Writes these.
    Writes(Vec<Word>),
    /// Copies (moves, links) `sources` to `dest`.
    Copies {
        sources: Vec<&'w Word>,
        dest: &'w Word,
        moves: bool,
        symbolic: bool,
    },
    /// Runs the command that starts at this word with arguments not known before it runs
    /// (`xargs`, `find -exec`): what it writes cannot be told, but what it runs is seen.
    RunsUnknown(Vec<Word>),
    /// Applies a patch fed on its standard input, stripping this many components (`None`: not
    /// said).
    Patch(Option<usize>),
    /// Runs the command that starts at this word (a wrapper).
    Wraps(usize),
    /// Runs this script (`sh -c`, `eval`).
    Script(String),
    Unknown(String),
}

/// Programs that write no file whatever their arguments (their output goes where a redirection
/// sends it).
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
    "printf",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "ag",
    "ack",
    "wc",
    "cut",
    "tr",
    "diff",
    "cmp",
    "comm",
    "file",
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
    "test",
    "[",
    "[[",
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
    "xxd",
    "od",
    "hexdump",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "tree",
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
    "export",
    "set",
    "unset",
    "shift",
    "read",
    "wait",
    "jobs",
    "exit",
    "return",
    "history",
    "alias",
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
    "shuf",
    "nm",
    "objdump",
    "readelf",
    "ldd",
    "bc",
    "expr",
    "let",
    "local",
    "declare",
    "typeset",
    "readonly",
    "trap",
    "umask",
    "ulimit",
    "hash",
    "kill",
    "break",
    "continue",
];

/// Programs that run the command after their own options.
const WRAPPERS: &[&str] = &[
    "sudo", "doas", "command", "builtin", "exec", "nohup", "time", "nice", "ionice", "chrt",
    "taskset", "stdbuf", "timeout", "env", "xargs", "setsid", "unbuffer",
];

const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "ash", "busybox"];

fn kind<'w>(name: &str, args: &'w [Word]) -> Kind<'w> {
    let positional = || positional(args).into_iter().cloned().collect::<Vec<_>>();
    if WRAPPERS.contains(&name) {
        return wrapped(name, args);
    }
    if SHELLS.contains(&name) {
        return shell_script(name, args);
    }
    match name {
        "eval" => match args
            .iter()
            .map(|w| w.literal.clone())
            .collect::<Option<Vec<_>>>()
        {
            Some(words) => Kind::Script(words.join(" ")),
            None => Kind::Unknown("`eval` runs words not known before it runs".into()),
        },
        "tee" | "touch" | "rm" | "rmdir" | "unlink" | "shred" => Kind::Writes(positional()),
        "truncate" => Kind::Writes(
            positional_skipping(args, &["-s", "--size", "-r", "--reference"])
                .into_iter()
                .cloned()
                .collect(),
        ),
        "chmod" | "chown" | "chgrp" => mode_change(args),
        "cp" | "install" => copied(args, false, false),
        "ln" => copied(args, false, has_flag(args, 's', "--symbolic")),
        "mv" => copied(args, true, false),
        "dd" => Kind::Writes(args.iter().filter_map(dd_output).collect()),
        "sed" => sed(args),
        "perl" | "ruby" => {
            if args.iter().any(|a| {
                a.literal
                    .as_deref()
                    .is_some_and(|a| a.starts_with("-i") || a.starts_with("-pi"))
            }) {
                Kind::Unknown(format!("`{name} -i` edits files its script names"))
            } else {
                Kind::Unknown(format!("`{name}` runs a program that may write anything"))
            }
        }
        "mkdir" => Kind::Reads,
        "sort" => match option_value(args, &["-o", "--output"]) {
            Some(target) => Kind::Writes(vec![target.clone()]),
            None => Kind::Reads,
        },
        "uniq" => {
            let files = positional();
            Kind::Writes(files.into_iter().skip(1).collect())
        }
        "find" => find(args),
        "git" => git(args),
        "apply_patch" | "applypatch" => Kind::Patch(Some(0)),
        "patch" => {
            if option_value(args, &["-i", "--input"]).is_some() {
                Kind::Unknown("`patch -i` applies a patch file this line does not show".into())
            } else {
                Kind::Patch(strip_option(args))
            }
        }
        name if READ_ONLY.contains(&name) => Kind::Reads,
        _ => Kind::Unknown(format!("validator does not know what `{name}` writes")),
    }
}

/// `chmod`, `chown`, `chgrp`: the files after the mode or owner (all, with `--reference`).
fn mode_change(args: &[Word]) -> Kind<'_> {
    let mut targets: Vec<Word> = positional(args).into_iter().cloned().collect();
    let by_reference = args.iter().any(|a| {
        a.literal
            .as_deref()
            .is_some_and(|a| a.starts_with("--reference"))
    });
    if !by_reference && !targets.is_empty() {
        targets.remove(0);
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
fn find(args: &[Word]) -> Kind<'_> {
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

/// The arguments that are not options (after `--`, all of them).
fn positional(args: &[Word]) -> Vec<&Word> {
    let mut out = Vec::new();
    let mut options_over = false;
    for arg in args {
        match arg.literal.as_deref() {
            Some("--") if !options_over => options_over = true,
            Some(text) if !options_over && text.starts_with('-') && text.len() > 1 => {}
            _ => out.push(arg),
        }
    }
    out
}

/// As [`positional`], the values of `options` (`-s N`, `--size=N`) left out.
fn positional_skipping<'w>(args: &'w [Word], options: &[&str]) -> Vec<&'w Word> {
    let mut out = Vec::new();
    let mut skip_next = false;
    for arg in args {
        if skip_next {
            skip_next = false;
            continue;
        }
        match arg.literal.as_deref() {
            Some(text) if options.contains(&text) => skip_next = true,
            Some(text) if text.starts_with('-') && text.len() > 1 => {}
            _ => out.push(arg),
        }
    }
    out
}

/// The value of the first of `options` (`-o FILE`, `-oFILE` is not read, `--output=FILE`).
fn option_value<'w>(args: &'w [Word], options: &[&str]) -> Option<&'w Word> {
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let Some(text) = arg.literal.as_deref() else {
            continue;
        };
        if options.contains(&text) {
            return iter.next();
        }
        if options
            .iter()
            .any(|o| o.starts_with("--") && text.starts_with(&format!("{o}=")))
        {
            return Some(arg);
        }
    }
    None
}

/// `cp`, `install`, `ln`, `mv`: the destination (the last operand, or `-t DIR`), and for `mv`
/// the sources too, which it removes. A destination that is a directory gets each source's
/// name inside it; the caller judges both the destination as written and what lands in it.
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

fn copied(args: &[Word], moves: bool, symbolic: bool) -> Kind<'_> {
    let target_dir = option_value(args, &["-t", "--target-directory"]);
    let mut operands = positional_skipping(
        args,
        &[
            "-t",
            "--target-directory",
            "-S",
            "--suffix",
            "-m",
            "--mode",
            "-o",
            "--owner",
            "-g",
            "--group",
        ],
    );
    let dest = match target_dir {
        // `-t DIR`: a directory, even one written without a trailing `/`.
        Some(dir) => dir,
        None => match operands.pop() {
            Some(dest) => dest,
            None => return Kind::Reads,
        },
    };
    Kind::Copies {
        sources: operands,
        dest,
        moves,
        symbolic,
    }
}

fn sed(args: &[Word]) -> Kind<'_> {
    let in_place = args.iter().any(|a| {
        a.literal.as_deref().is_some_and(|a| {
            a == "--in-place"
                || a.starts_with("--in-place=")
                || (a.starts_with('-') && !a.starts_with("--") && a.contains('i'))
        })
    });
    let script_given = args.iter().any(|a| {
        a.literal.as_deref().is_some_and(|a| {
            matches!(a, "-e" | "-f" | "--expression" | "--file")
                || a.starts_with("--expression=")
                || a.starts_with("--file=")
        })
    });
    let mut operands = positional_skipping(
        args,
        &["-e", "-f", "--expression", "--file", "-l", "--line-length"],
    );
    let script = if script_given || operands.is_empty() {
        None
    } else {
        Some(operands.remove(0))
    };
    // A `w FILE` command in the script writes that file.
    let writes_in_script = args.iter().any(|a| {
        let text = a.literal.as_deref().unwrap_or(&a.raw);
        text.contains("/w ")
            || text.contains(";w ")
            || text.starts_with("w ")
            || text.contains("/W ")
    });
    if writes_in_script || script.is_some_and(|s| s.literal.is_none()) {
        return Kind::Unknown(
            "the `sed` script writes files it names, or is not known before it runs".into(),
        );
    }
    if in_place {
        Kind::Writes(operands.into_iter().cloned().collect())
    } else {
        Kind::Reads
    }
}

fn wrapped(name: &str, args: &[Word]) -> Kind<'static> {
    // Options each wrapper takes a value for.
    let valued: &[&str] = match name {
        "sudo" | "doas" => &[
            "-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "--user", "--group",
        ],
        "nice" => &["-n", "--adjustment"],
        "ionice" => &["-c", "-n", "-p", "--class", "--classdata"],
        "stdbuf" => &["-i", "-o", "-e"],
        "timeout" => &["-s", "-k", "--signal", "--kill-after"],
        "env" => &["-u", "-C", "-S", "--unset", "--chdir", "--split-string"],
        "xargs" => &[
            "-a",
            "-d",
            "-E",
            "-I",
            "-L",
            "-n",
            "-P",
            "-s",
            "--arg-file",
            "--delimiter",
            "--max-args",
            "--max-procs",
        ],
        "taskset" | "chrt" => &[],
        _ => &[],
    };
    if name == "env"
        && args.iter().any(|a| {
            a.literal
                .as_deref()
                .is_some_and(|a| a == "-S" || a.starts_with("--split-string"))
        })
    {
        return Kind::Unknown("`env -S` splits a string into the command it runs".into());
    }
    let mut at = 0;
    let mut needs_value = false;
    let mut positional_seen = 0;
    while let Some(arg) = args.get(at) {
        let Some(text) = arg.literal.as_deref() else {
            return Kind::Unknown(format!("`{name}` runs a command not known before it runs"));
        };
        if needs_value {
            needs_value = false;
        } else if text == "--" {
            at += 1;
            break;
        } else if text.starts_with('-') && text.len() > 1 {
            needs_value = valued.contains(&text);
        } else if name == "env" && text.contains('=') {
            // An assignment.
        } else if name == "timeout" && positional_seen == 0 {
            // The duration.
            positional_seen += 1;
        } else if matches!(name, "taskset" | "chrt") && positional_seen == 0 {
            positional_seen += 1;
        } else {
            break;
        }
        at += 1;
    }
    if at >= args.len() {
        return Kind::Reads;
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
    // `Wraps` counts from the wrapper's own word.
    Kind::Wraps(at + 1)
}

fn shell_script(name: &str, args: &[Word]) -> Kind<'static> {
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

/// Which `git` commands change the work tree, and the paths they name where that is known.
fn git(args: &[Word]) -> Kind<'_> {
    // Global options before the subcommand (`-C dir`, `-c k=v`).
    let mut at = 0;
    while let Some(text) = args.get(at).and_then(|a| a.literal.as_deref()) {
        if matches!(
            text,
            "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace"
        ) {
            if text == "-C" || text == "--git-dir" || text == "--work-tree" {
                return Kind::Unknown("`git` runs on another directory or repository".into());
            }
            at += 2;
        } else if text.starts_with('-') {
            at += 1;
        } else {
            break;
        }
    }
    let Some(sub) = args.get(at).and_then(|a| a.literal.as_deref()) else {
        return Kind::Reads;
    };
    let rest = &args[at + 1..];
    match sub {
        "status" | "diff" | "log" | "show" | "rev-parse" | "ls-files" | "blame" | "grep"
        | "describe" | "shortlog" | "reflog" | "ls-tree" | "cat-file" | "rev-list" | "help"
        | "version" | "whatchanged" | "name-rev" | "merge-base" | "var" | "check-ignore"
        | "count-objects" | "for-each-ref" | "show-ref" | "verify-commit" | "add" | "commit"
        | "fetch" | "push" | "tag" | "notes" | "config" | "remote" | "branch" | "bisect"
        | "fsck" | "gc" | "init" => Kind::Reads,
        "rm" => Kind::Writes(positional(rest).into_iter().cloned().collect()),
        "mv" => copied(rest, true, false),
        "restore" => Kind::Writes(
            positional_skipping(rest, &["-s", "--source"])
                .into_iter()
                .cloned()
                .collect(),
        ),
        "apply" => {
            if positional(rest).is_empty() {
                Kind::Patch(Some(strip_option(rest).unwrap_or(1)))
            } else {
                Kind::Unknown("`git apply` applies a patch file this line does not show".into())
            }
        }
        other => Kind::Unknown(format!(
            "`git {other}` may change any file in the work tree"
        )),
    }
}

/// `-pN` or `-p N` or `--strip=N`.
fn strip_option(args: &[Word]) -> Option<usize> {
    let mut iter = args.iter().filter_map(|a| a.literal.as_deref());
    while let Some(arg) = iter.next() {
        if arg == "-p" {
            return iter.next().and_then(|n| n.parse().ok());
        }
        if let Some(n) = arg
            .strip_prefix("--strip=")
            .or_else(|| arg.strip_prefix("-p"))
        {
            return n.parse().ok();
        }
    }
    None
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
            ("sed -i.bak -e 's/a/b/' x.py", vec!["x.py"]),
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
