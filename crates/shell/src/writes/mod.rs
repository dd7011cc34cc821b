//! What the commands of a shell line would write, told from the commands themselves before
//! they run: redirections, and the programs whose writes their arguments name (`cp`, `mv`,
//! `rm`, `tee`, `touch`, `sed -i`, `dd of=`, a patch fed on standard input, …). A wrapper
//! (`sudo`, `env`, `timeout`, `sh -c`, `eval`) is looked through. A program this module does
//! not know may write anything: its writes are unknown, never assumed to be none.

use crate::options::{self, Spec};
use crate::script::{self as shell, Command, Script, Word};
use programs::{How, Kind, SHELLS, Wrap, git_words, kind};

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
    /// It runs in a shell of its own (see [`crate::script::Command::isolated`]).
    pub isolated: bool,
    /// It runs text validator cannot read as a command (a pipe into a shell, `eval "$c"`,
    /// `sh -c "$c"`, a word that expands into a whole command): it may be any command, so every
    /// rule that refuses or asks holds it. Why it cannot be read.
    pub any: Option<String>,
    /// What it reads is too big to judge in time (a script it runs, `sh -c` or `eval`, of
    /// more than [`shell::MAX_COMMANDS`] commands; a patch past its caps), and why: the call
    /// is refused.
    pub too_big: Option<String>,
}

/// Sources copied (or moved, or linked) to a destination.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Copy {
    pub sources: Vec<String>,
    pub dest: String,
    /// `mv`: the destination is replaced (renamed over), never written through.
    pub moves: bool,
    /// `ln -s`: the sources are what the links will point at (relative to the link's own
    /// directory when not absolute), not files copied.
    pub symbolic: bool,
    /// `ln -sr`: the sources are named from the current directory (ln writes the link
    /// relative to its own directory).
    pub relative: bool,
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
pub fn seen(script: &Script, line: &str) -> Vec<Seen> {
    let mut all = Vec::new();
    let mut keywords_steer = false;
    let named = program_word::Named::of(line);
    for command in &script.commands {
        let start = all.len();
        look(command, &command.words, 0, &mut all);
        let end = all.len();
        for at in start..end {
            if bound_program(&mut all[at], &named) {
                // A program of that name validator does not know may run a string it is given
                // as a command (`"$SHELL" -c 'CMD'`), as `record` reads one for `Kind::Unknown`.
                let strings = command_strings(&all[at].words[1..]);
                let name = all[at].words[0].literal.clone().unwrap_or_default();
                for text in strings {
                    let inner = all.len();
                    look_into(&name, &text, 1, &mut all);
                    for seen in &mut all[inner..] {
                        seen.speculative = true;
                    }
                }
            }
        }
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
        let why = format!("the command line cannot be read whole: {why}");
        all.push(Seen {
            unknown: Some(why.clone()),
            any: Some(why),
            unread: true,
            ..Seen::default()
        });
    }
    all
}

/// A command whose program word is not known before it runs: judged as the program its value
/// is bounded to (see [`program_word::bound`]), or as any command when it cannot be bounded.
fn bound_program(seen: &mut Seen, named: &program_word::Named) -> bool {
    let Some(program) = seen.words.first_mut() else {
        return false;
    };
    if program.literal.is_some() {
        return false;
    }
    match program_word::bound(&program.raw, named) {
        Some(name) => {
            seen.unknown.get_or_insert_with(|| {
                format!(
                    "`{}` is a program named `{name}` in a place not known before it runs",
                    program.raw
                )
            });
            // `"$(git --exec-path)"/git-push` is `git push`.
            match name.strip_prefix("git-").filter(|sub| !sub.is_empty()) {
                Some(sub) => {
                    let sub = Word {
                        raw: sub.to_owned(),
                        literal: Some(sub.to_owned()),
                    };
                    program.literal = Some("git".into());
                    seen.words.insert(1, sub);
                    seen.subcommand = Some(1);
                }
                None => program.literal = Some(name),
            }
            true
        }
        None => {
            seen.any.get_or_insert_with(|| {
                format!(
                    "the word `{}` expands into a command not known before it runs",
                    program.raw
                )
            });
            false
        }
    }
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
        if let Some(why) = choosing(&command.assignments) {
            seen.any.get_or_insert(why);
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
    } else if reads_script_from_stdin(name, args) {
        Kind::Any(format!(
            "`{name}` runs the text on its standard input, which validator cannot read"
        ))
    } else if let Some(file) = script_file_unread(name, args) {
        Kind::Any(format!(
            "`{name}` runs the script `{}`, text validator cannot read",
            file.raw
        ))
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
    if let Some(why) = choosing(&command.assignments) {
        for seen in &mut all[start..] {
            seen.any.get_or_insert_with(|| why.clone());
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
        Kind::Any(why) => {
            seen.unknown.get_or_insert_with(|| why.clone());
            seen.any = Some(why);
            all.push(seen);
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
        if let Some(why) = &wrap.any {
            seen.any.get_or_insert_with(|| why.clone());
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

/// The script a shell reads on its standard input (`bash <<< 'CMD'`, `sh -s <<EOF`,
/// `. /dev/stdin <<EOF`), when this line shows it.
fn script_on_stdin(name: &str, args: &[Word], command: &Command) -> Option<String> {
    if command.inputs.is_empty() || command.inputs_unknown {
        return None;
    }
    reads_script_from_stdin(name, args).then(|| command.inputs.concat())
}

/// Whether the shell `name` runs the script on its standard input (`bash`, `sh -s`, `bash -`,
/// `sh /dev/stdin`, `. /dev/stdin`).
fn reads_script_from_stdin(name: &str, args: &[Word]) -> bool {
    let is_stdin = |file: &Word| {
        file.literal
            .as_deref()
            .is_some_and(|f| matches!(f, "-" | "/dev/stdin" | "/proc/self/fd/0" | "/dev/fd/0"))
    };
    if SHELLS.contains(&name) && name != "busybox" {
        let parsed = options::parse(args, Spec::default());
        !parsed.options.iter().any(|o| o.name.contains('c'))
            && (parsed.operands.is_empty()
                || parsed.has(&["-s"])
                || parsed.operands.first().is_some_and(is_stdin))
    } else {
        matches!(name, "." | "source") && args.first().is_some_and(is_stdin)
    }
}

/// The script file a shell or `source` runs when it is text validator cannot read: another
/// command's output (`bash <(echo …)`, `. <(curl …)`) or a descriptor (`bash /dev/fd/3`,
/// `sh /proc/self/fd/4` with a here-string on it) may hold any command.
fn script_file_unread<'a>(name: &str, args: &'a [Word]) -> Option<&'a Word> {
    let file = if SHELLS.contains(&name) && name != "busybox" {
        let parsed = options::parse(args, Spec::default());
        if parsed.options.iter().any(|o| o.name.contains('c')) {
            return None;
        }
        let first = parsed.operands.first()?.raw.clone();
        args.iter().find(|arg| arg.raw == first)?
    } else if matches!(name, "." | "source") {
        args.first()?
    } else {
        return None;
    };
    let substituted = file.raw.starts_with("<(") || file.raw.starts_with(">(");
    let descriptor = file.literal.as_deref().is_some_and(|f| {
        f.starts_with("/dev/fd/") || (f.starts_with("/proc/") && f.contains("/fd/"))
    });
    (substituted || descriptor).then_some(file)
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
pub(super) fn steering(words: &[Word]) -> Option<String> {
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

/// Variables whose value is a command or program to run, or a file that names one (a pager, an
/// editor, git's ssh, diff, askpass and settings, a shell's startup file, a preloaded library,
/// the home and config directories git and shells read settings from). Not `PATH`: it chooses
/// where a program of the same name is found, and a program is judged by its name wherever it
/// lies (`./bin/git status` is `git status`, as `"$VIRTUAL_ENV/bin/python"` is python); what a
/// program the worker wrote does is the kernel's to hold, not the reader's.
fn chooses_program(variable: &str) -> bool {
    matches!(
        variable,
        "ENV"
            | "BASH_ENV"
            | "PROMPT_COMMAND"
            | "HOME"
            | "XDG_CONFIG_HOME"
            | "SSH_ASKPASS"
            | "GIT_SSH"
            | "GIT_EXTERNAL_DIFF"
            | "GIT_ASKPASS"
            | "GIT_EXEC_PATH"
            | "GIT_CONFIG"
            | "GIT_CONFIG_GLOBAL"
            | "GIT_CONFIG_SYSTEM"
            | "GIT_CONFIG_PARAMETERS"
            | "GIT_CONFIG_COUNT"
            | "GIT_DIR"
            | "GIT_TEMPLATE_DIR"
    ) || [
        "LD_",
        "DYLD_",
        "BASH_FUNC_",
        "GIT_CONFIG_KEY_",
        "GIT_CONFIG_VALUE_",
    ]
    .iter()
    .any(|prefix| variable.starts_with(prefix))
        || ["PAGER", "EDITOR", "VISUAL", "_COMMAND"]
            .iter()
            .any(|suffix| variable.ends_with(suffix))
}

/// Why the assignments `words` make the command they are set on run any command, if one sets
/// a variable that [`chooses_program`]: what it runs is then not the program its word names.
pub(super) fn choosing(words: &[Word]) -> Option<String> {
    words.iter().find_map(|word| {
        let variable = word
            .raw
            .split_once('=')
            .map_or(word.raw.as_str(), |(n, _)| n);
        let variable = variable.strip_suffix('+').unwrap_or(variable);
        chooses_program(variable)
            .then(|| format!("it sets `{variable}`, which chooses a program the command may run"))
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
                moves,
                symbolic: how.symbolic,
                relative: how.relative,
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
    let files = match crate::patch::files(text, strip.unwrap_or(0)) {
        Ok(files) => files,
        Err(why) => {
            seen.too_big = Some(format!("the patch `{name}` reads is too big: {why}"));
            return;
        }
    };
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
    if inner.too_long {
        all.push(Seen {
            too_big: Some(format!(
                "the script `{name}` runs holds more than {} commands",
                shell::MAX_COMMANDS
            )),
            ..Seen::default()
        });
        return;
    }
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

mod program_word;
mod programs;

#[cfg(test)]
mod tests {
    use super::*;

    fn writes(line: &str) -> (Vec<String>, bool) {
        let all = seen(&shell::read(line), line);
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
