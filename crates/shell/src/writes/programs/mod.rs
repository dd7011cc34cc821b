//! What each program does with its arguments: reads, writes, creates, copies, runs another
//! command (a wrapper) or a script, or something that cannot be told before it runs.

mod git;

use super::steering;
use crate::options::{self, Spec};
use crate::script::Word;
use crate::sed;
use git::git;
pub(in crate::writes) use git::git_words;

/// What a program does with its arguments.
pub(super) enum Kind {
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
    /// Runs text validator cannot read as a command line (`eval "$c"`, `sh -c "$c"`): it may
    /// be any command. The reason says what could not be read.
    Any(String),
}

/// How a copy is made: what [`Copy`] says besides its paths.
#[derive(Default)]
pub(super) struct How {
    pub(super) symbolic: bool,
    /// `ln -sr`: the target is named from the current directory, not from the link's.
    pub(super) relative: bool,
    pub(super) hard: bool,
    pub(super) no_target_directory: bool,
    pub(super) backup: Option<String>,
}

/// What a wrapper runs, and how.
pub(super) struct Wrap {
    /// The word its command starts at, counted from the wrapper's own.
    pub(super) at: usize,
    /// The directory it runs the command in (`env -C`, `sudo -D`).
    pub(super) dir: Option<String>,
    /// What the wrapper itself writes (`time -o FILE`).
    pub(super) writes: Vec<Word>,
    /// Why what it runs may write what cannot be told (it sets a variable that steers it).
    pub(super) unknown: Option<String>,
    /// Set where an assignment chooses what it runs (`env PATH=… git`): it may be any command.
    pub(super) any: Option<String>,
    /// The name the command runs under (`exec -a NAME`).
    pub(super) argv0: Option<Word>,
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

pub(super) const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "ash", "busybox"];

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

pub(super) fn spec(short: &'static str, long: &'static [&'static str]) -> Spec {
    Spec {
        short,
        long,
        ..Spec::default()
    }
}

pub(super) fn kind(name: &str, args: &[Word]) -> Kind {
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
            None => Kind::Any("`eval` runs words not known before it runs".into()),
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
        // `hash -p FILE NAME` makes NAME run FILE for the rest of the line, and `enable -f`
        // loads a builtin from a library: what a later word runs may be any command.
        "hash" if has_p(args) => {
            Kind::Any("`hash -p` makes a name run a program not known before it runs".into())
        }
        "enable"
            if args.iter().any(|arg| {
                arg.literal
                    .as_deref()
                    .is_none_or(|a| a.starts_with('-') && a.contains('f'))
            }) =>
        {
            Kind::Any("`enable -f` loads a builtin not known before it runs".into())
        }
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
pub(super) fn literals(args: &[Word]) -> Option<Vec<String>> {
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
    // One that chooses what later commands run (`export GIT_EDITOR=…`) makes them any command.
    if let Some(why) = super::choosing(&assignments) {
        return Kind::Any(format!("`{name}`: {why}"));
    }
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
            None => Kind::Any("`trap` sets a command not known before it runs".into()),
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
pub(super) fn copied(name: &str, args: &[Word]) -> Kind {
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
            relative: symbolic && name == "ln" && parsed.has(&["-r", "--relative"]),
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
    // A word not known before it runs where its options or its command go may be the whole
    // command it runs (`env $c`).
    if parsed.unknown_option {
        return Kind::Any(format!("`{name}` runs a command not known before it runs"));
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
            _ => Kind::Any("`env -S` splits a string not known before it runs".into()),
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
        // Its arguments come at run time: one more word not known before it runs, and with
        // `-I R` (`-i`, `--replace`) every word holding R is replaced by what it reads
        // (`xargs -I{} sh -c {}` runs the text on its input).
        let replaced = xargs_replace(&parsed);
        let mut command: Vec<Word> = args[at..]
            .iter()
            .map(|word| match (&replaced, &word.literal) {
                (None, _) => word.clone(),
                (Some(Some(r)), Some(text)) if !text.contains(r.as_str()) => word.clone(),
                _ => Word {
                    raw: word.raw.clone(),
                    literal: None,
                },
            })
            .collect();
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
        any: super::choosing(&assignments),
        argv0: parsed.value(&["-a"]).filter(|_| name == "exec").cloned(),
    })
}

/// Whether `hash`'s options hold `-p` (or are not known before it runs).
fn has_p(args: &[Word]) -> bool {
    args.iter().any(|arg| {
        arg.literal
            .as_deref()
            .is_none_or(|a| a.starts_with('-') && a.contains('p'))
    })
}

/// The string `xargs` replaces in its command's words with what it reads: `Some(None)` when
/// it is not known before it runs, `None` when it replaces nothing.
fn xargs_replace(parsed: &options::Parsed) -> Option<Option<String>> {
    if let Some(given) = parsed.value(&["-I", "-i", "--replace"]) {
        return Some(given.literal.clone().filter(|r| !r.is_empty()));
    }
    parsed
        .options
        .iter()
        .any(|o| matches!(o.name.as_str(), "-i" | "--replace") || o.name.starts_with("--replace="))
        .then(|| Some("{}".to_owned()))
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
                    None => Kind::Any(format!(
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
