//! Reading a shell command line for what can be seen without running it: the simple commands
//! it would run (their words, each literal or not), the files its redirections name, and its
//! here-documents. An agent's shell tool hands validator such a line before it runs; what it
//! may write, and whether it runs a command the rules forbid, is judged from this reading.
//!
//! The reading is conservative, never a guess: a word whose value depends on the shell (a
//! variable, a substitution, a glob, `~`) is not literal; the commands inside a substitution
//! (`$(…)`, backquotes, `<(…)`) are read as commands of their own; a construct this reader does
//! not follow makes the script `opaque`, with the reason. Nothing here runs anything.

/// Most bytes of a command line read; past it the script is opaque.
pub const MAX_SCRIPT_BYTES: usize = 256 * 1024;
/// Most simple commands read from one line, substitutions' included; past it the line is
/// `too_long` (judging each takes microseconds, and an answer must come in well under 100 ms).
pub const MAX_COMMANDS: usize = 1_000;
/// How deep substitutions and `sh -c` scripts nest before the script is opaque.
const MAX_NESTING: usize = 8;

/// A word as written, and its value when it has one without running anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// The word's text as written (quotes included).
    pub raw: String,
    /// Its value after quote removal, if nothing in it expands.
    pub literal: Option<String>,
}

impl Word {
    pub fn is(&self, text: &str) -> bool {
        self.literal.as_deref() == Some(text)
    }
}

/// Where a redirection sends or takes data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// The operator (`>`, `>>`, `<`, `&>`, `>&`, `<>`, `>|`, …) without its descriptor number.
    pub op: String,
    pub target: Word,
}

impl Redirect {
    /// Whether the redirection writes its target (a file, not a descriptor).
    pub fn writes(&self) -> bool {
        matches!(self.op.as_str(), ">" | ">>" | ">|" | "&>" | "&>>" | "<>")
            || (self.op == ">&" && !self.target.literal.as_deref().is_some_and(is_descriptor))
    }
}

fn is_descriptor(target: &str) -> bool {
    target == "-" || target.chars().all(|c| c.is_ascii_digit())
}

/// One simple command: a program and its arguments, with what it redirects.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Command {
    /// The words after assignments and reserved words: the program first.
    pub words: Vec<Word>,
    /// The assignments before them (`PATH=./bin ls`), or alone (`PATH=./bin`), as written.
    pub assignments: Vec<Word>,
    pub redirects: Vec<Redirect>,
    /// The text of its here-documents (`<<EOF`) and here-strings (`<<<`) as the command reads
    /// it. One that expands when the line runs (an unquoted here-document holding `$` or a
    /// backquote, a here-string that is not literal) cannot be told before it runs: it is left
    /// empty, and `inputs_unknown` is set.
    pub inputs: Vec<String>,
    /// Some of `inputs` expands when the line runs: what the command reads is not known.
    pub inputs_unknown: bool,
    /// It runs in a shell of its own (inside `( … )`, a substitution, a pipeline, or `&`): a
    /// `cd` there does not move the commands after it.
    pub isolated: bool,
}

/// What a command line would run, as far as it can be read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Script {
    pub commands: Vec<Command>,
    /// Why some of it could not be read (empty when all of it was).
    pub opaque: Vec<String>,
    /// Whether it changes directory (`cd`, `pushd`, `popd`): relative paths after it may be
    /// relative to another directory.
    pub changes_directory: bool,
    /// Whether it holds more than [`MAX_COMMANDS`] commands (those past it are not read).
    pub too_long: bool,
}

/// The home directory `~` names: `$HOME` when it is an absolute path of plain characters.
fn home() -> Option<String> {
    let home = std::env::var("HOME").ok()?;
    (home.starts_with('/') && !home.contains(['\n', '\0'])).then_some(home)
}

/// Reads `text` as a shell would parse it.
pub fn read(text: &str) -> Script {
    let mut script = Script::default();
    if text.len() > MAX_SCRIPT_BYTES {
        script.opaque.push(format!(
            "the command is longer than {} KiB",
            MAX_SCRIPT_BYTES / 1024
        ));
        return script;
    }
    read_into(text, 0, &mut script);
    script.changes_directory = script.commands.iter().any(|command| {
        command
            .words
            .first()
            .is_some_and(|w| w.is("cd") || w.is("pushd") || w.is("popd"))
    });
    script
}

/// Reads `text` (a script, or the inside of a substitution) into `script`.
fn read_into(text: &str, depth: usize, script: &mut Script) {
    if depth > MAX_NESTING {
        script
            .opaque
            .push("substitutions nest too deep to read".into());
        return;
    }
    let mut lexer = Lexer {
        chars: text.char_indices().peekable(),
        depth,
        script,
        current: Command::default(),
        parens: 0,
        piped: false,
        pending_heredocs: Vec::new(),
        expect_target: None,
        at_start: true,
        cases: 0,
        expect_pattern: false,
    };
    lexer.run();
}

struct Lexer<'t, 's> {
    chars: std::iter::Peekable<std::str::CharIndices<'t>>,
    depth: usize,
    script: &'s mut Script,
    current: Command,
    /// `(` opened and not closed at this level.
    parens: usize,
    /// The command before this one was piped into it.
    piped: bool,
    /// Here-documents whose bodies start after the next newline.
    pending_heredocs: Vec<PendingHeredoc>,
    /// The redirection operator whose target the next word is.
    expect_target: Option<String>,
    /// Whether the next word starts a command (reserved words and assignments are read there).
    at_start: bool,
    /// `case` statements open (read up to `in`, not yet closed by `esac`).
    cases: usize,
    /// A `case` pattern comes next (after `in`, or after an arm's `;;`).
    expect_pattern: bool,
}

/// A here-document opened on the line being read, whose body starts after its newline.
struct PendingHeredoc {
    delimiter: String,
    /// `<<-`: leading tabs are stripped from the body's lines and the delimiter's.
    strip_tabs: bool,
    /// The delimiter is unquoted: the body expands like a double-quoted word (`$…`, backquotes,
    /// `\`-newline joins lines).
    expands: bool,
    /// The command it feeds (`None` while it is still `current`), and its slot in `inputs`.
    command: Option<usize>,
    slot: usize,
}

/// Words that begin or continue a compound command where a command would start: skipped, as
/// the commands they hold are read on their own.
const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "time",
    "coproc", "esac",
];

impl Lexer<'_, '_> {
    fn run(&mut self) {
        while let Some(&(_, c)) = self.chars.peek() {
            if self.expect_pattern && !matches!(c, ' ' | '\t' | '\n' | '#') {
                self.case_pattern();
                continue;
            }
            match c {
                ' ' | '\t' => {
                    self.chars.next();
                }
                '\n' => {
                    self.chars.next();
                    self.end_command();
                    self.read_heredoc_bodies();
                }
                '#' => self.skip_comment(),
                ';' | '&' | '|' | '(' | ')' => self.operator(c),
                '<' | '>' => self.redirection(),
                _ => self.word(),
            }
        }
        self.end_command();
        if !self.pending_heredocs.is_empty() {
            self.script.opaque.push("a here-document has no end".into());
        }
        if self.cases > 0 {
            self.script
                .opaque
                .push("a `case` statement has no `esac`".into());
        }
    }

    /// A `case` arm's pattern (`a|b)`, `(a))`), up to its `)`; or the `esac` that ends the
    /// statement. A substitution in the pattern is read as commands.
    fn case_pattern(&mut self) {
        let rest: String = self.chars.clone().take(5).map(|(_, c)| c).collect();
        if rest.starts_with("esac")
            && rest[4..]
                .chars()
                .next()
                .is_none_or(|c| !c.is_alphanumeric() && c != '_')
        {
            for _ in 0..4 {
                self.chars.next();
            }
            self.cases -= 1;
            self.expect_pattern = false;
            return;
        }
        self.eat('(');
        let mut text = String::new();
        let mut quote = None;
        while let Some((_, c)) = self.chars.next() {
            match (quote, c) {
                (None, ')') => break,
                (None, '\'' | '"') => quote = Some(c),
                (Some(open), c) if c == open => quote = None,
                (_, '\\') => {
                    text.push(c);
                    if let Some((_, escaped)) = self.chars.next() {
                        text.push(escaped);
                    }
                    continue;
                }
                _ => {}
            }
            text.push(c);
        }
        if text.contains("$(") || text.contains('`') {
            self.nested(&text);
        }
        self.expect_pattern = false;
        self.at_start = true;
    }

    fn skip_comment(&mut self) {
        while let Some(&(_, c)) = self.chars.peek() {
            if c == '\n' {
                break;
            }
            self.chars.next();
        }
    }

    fn operator(&mut self, c: char) {
        self.chars.next();
        let next = self.chars.peek().map(|&(_, n)| n);
        // Whether the command this ends runs in a shell of its own: piped onward, or sent to
        // the background.
        let mut apart = false;
        match (c, next) {
            ('&', Some('>')) => {
                // `&>file`, `&>>file`: both streams to a file.
                self.chars.next();
                let op = if self.eat('>') { "&>>" } else { "&>" };
                self.target_of(op);
                return;
            }
            (';', Some(';')) => {
                self.chars.next();
                self.eat('&');
                self.end_arm();
            }
            ('&', Some('&')) | ('|', Some('|')) => {
                self.chars.next();
            }
            ('|', Some('&')) => {
                self.chars.next();
                apart = true;
            }
            (';', Some('&')) => {
                self.chars.next();
                self.eat('&');
                self.end_arm();
            }
            ('|' | '&', _) => apart = true,
            // `(( expr ))` where a command starts: arithmetic, where `>` compares.
            ('(', Some('(')) if self.at_start && self.current.words.is_empty() => {
                self.chars.next();
                let inner = self.balanced(')');
                if self.eat(')') {
                    if inner.contains("$(") || inner.contains('`') {
                        self.nested(&inner);
                    }
                    self.at_start = false;
                    self.current.words.push(Word {
                        raw: "((".into(),
                        literal: Some("((".into()),
                    });
                    self.current.words.push(Word {
                        literal: Some(inner.clone()),
                        raw: inner,
                    });
                    return;
                }
                // `((cmd) )`: two subshells, the inner one read as commands of its own.
                self.parens += 1;
                self.nested(&inner);
                return;
            }
            ('(', _) => self.parens += 1,
            _ => {}
        }
        if self.expect_target.is_some() {
            self.script
                .opaque
                .push("a redirection has no target".into());
            self.expect_target = None;
        }
        self.current.isolated |= apart;
        self.end_command();
        // A `)` closes the shell the command it ends ran in.
        if c == ')' {
            self.parens = self.parens.saturating_sub(1);
        }
        // The next command reads this one's output through the pipe: a shell of its own too.
        self.piped = c == '|' && apart;
    }

    /// `;;`, `;&` or `;;&`: inside a `case`, the next arm's pattern comes next.
    fn end_arm(&mut self) {
        if self.cases > 0 {
            self.expect_pattern = true;
        }
    }

    fn eat(&mut self, expected: char) -> bool {
        if self.chars.peek().map(|&(_, c)| c) == Some(expected) {
            self.chars.next();
            true
        } else {
            false
        }
    }

    /// A redirection operator (its descriptor number, if any, already read as `fd`).
    fn redirection(&mut self) {
        let Some((_, first)) = self.chars.next() else {
            return;
        };
        // Process substitution: `<(cmd)`, `>(cmd)` is a word, not a redirection.
        if self.chars.peek().map(|&(_, c)| c) == Some('(') {
            self.chars.next();
            let inner = self.balanced(')');
            self.nested(&inner);
            self.push_word(Word {
                raw: format!("{first}({inner})"),
                literal: None,
            });
            return;
        }
        let op = match first {
            '<' => {
                if self.eat('<') {
                    if self.eat('<') {
                        "<<<"
                    } else if self.eat('-') {
                        "<<-"
                    } else {
                        "<<"
                    }
                } else if self.eat('&') {
                    "<&"
                } else if self.eat('>') {
                    "<>"
                } else {
                    "<"
                }
            }
            _ => {
                if self.eat('>') {
                    ">>"
                } else if self.eat('&') {
                    ">&"
                } else if self.eat('|') {
                    ">|"
                } else {
                    ">"
                }
            }
        };
        self.target_of(op);
    }

    fn target_of(&mut self, op: &str) {
        if self.expect_target.is_some() {
            self.script
                .opaque
                .push("a redirection has no target".into());
        }
        self.expect_target = Some(op.to_owned());
    }

    /// Reads one word, with its quotes, escapes and substitutions.
    fn word(&mut self) {
        let mut word = Reading::default();
        // Where a `~` would be expanded: at the start, and after an unquoted `=` or `:` in a
        // word holding an unquoted `=` (bash expands there in assignment-like words, older bash
        // and zsh in any such word; not literal either way).
        let mut tilde_expands = true;
        while let Some(&(_, c)) = self.chars.peek() {
            let tilde_here = std::mem::take(&mut tilde_expands);
            match c {
                ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' => break,
                '<' | '>' => {
                    // `2>file`: a descriptor number, not a word.
                    if !word.raw.is_empty()
                        && !word.quoted
                        && word.raw.chars().all(|d| d.is_ascii_digit())
                    {
                        self.redirection();
                        return;
                    }
                    break;
                }
                '\'' | '"' | '\\' | '$' | '`' => self.piece(c, &mut word),
                '*' | '?' => {
                    self.chars.next();
                    word.plain(c);
                    word.dynamic = true;
                }
                // `[…]` matches file names; a `[` no `]` follows is itself (`[ -n "$X" ]`).
                '[' | ']' => {
                    self.chars.next();
                    word.plain(c);
                    word.bracket_open |= c == '[';
                    word.dynamic |= c == ']' && word.bracket_open;
                }
                '~' if tilde_here => {
                    self.chars.next();
                    word.raw.push('~');
                    // `~` alone or before `/`, at a word's start, is `$HOME` (the home this
                    // process was given, the one the agent's shell has); `~user`, `~+` and one
                    // after `=` are not known here.
                    let ends = self.chars.peek().is_none_or(|&(_, next)| {
                        matches!(
                            next,
                            '/' | ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>'
                        )
                    });
                    match home().filter(|_| ends && word.value.is_empty() && !word.assigns) {
                        Some(home) => word.value.push_str(&home),
                        None => {
                            word.value.push('~');
                            word.dynamic = true;
                        }
                    }
                }
                '{' | '}' => {
                    // Brace expansion (`a{b,c}`) makes several words; `{` and `}` alone are
                    // reserved words.
                    self.chars.next();
                    word.brace_open |= c == '{';
                    // `{a,b}` and `{1..3}` expand; `{}` and `{x}` are themselves.
                    word.dynamic |= c == '}' && word.brace_open && word.brace_expands;
                    word.plain(c);
                }
                _ => {
                    self.chars.next();
                    word.brace_expands |=
                        word.brace_open && (c == ',' || (c == '.' && word.raw.ends_with('.')));
                    word.plain(c);
                    word.assigns |= c == '=';
                    tilde_expands = word.assigns && (c == '=' || c == ':');
                }
            }
        }
        if word.raw.is_empty() {
            // Not a word after all (a stray character this reader does not take): move on.
            if let Some((_, c)) = self.chars.next() {
                self.script.opaque.push(format!("`{c}` could not be read"));
            }
            return;
        }
        self.push_word(Word {
            literal: (!word.dynamic).then_some(word.value),
            raw: word.raw,
        });
    }

    /// A quoted, escaped or expanded piece of a word, starting at `c`.
    fn piece(&mut self, c: char, word: &mut Reading) {
        self.chars.next();
        match c {
            '\'' => {
                word.quoted = true;
                let inner = self.until('\'');
                word.raw.push('\'');
                word.raw.push_str(&inner);
                word.raw.push('\'');
                word.value.push_str(&inner);
            }
            '"' => {
                word.quoted = true;
                let ((raw, value), plain) = self.double_quoted();
                word.raw.push('"');
                word.raw.push_str(&raw);
                word.raw.push('"');
                word.value.push_str(&value);
                word.dynamic |= !plain;
            }
            '\\' => match self.chars.next() {
                // A line continuation joins the lines.
                Some((_, '\n')) | None => {}
                Some((_, escaped)) => {
                    word.raw.push('\\');
                    word.plain(escaped);
                }
            },
            '$' => {
                word.raw.push('$');
                match self.dollar() {
                    Some(text) => {
                        word.raw.push_str(&text);
                        word.dynamic = true;
                    }
                    None => word.value.push('$'),
                }
            }
            _ => {
                // A backquoted substitution: its commands are the line's too.
                let inner = self.until('`');
                self.nested(&inner.replace("\\`", "`"));
                word.raw.push('`');
                word.raw.push_str(&inner);
                word.raw.push('`');
                word.dynamic = true;
            }
        }
    }

    /// What follows a `$`: the expansion's text (after the `$`), or `None` for a `$` that is
    /// only a character. Substitutions are read as commands of their own.
    fn dollar(&mut self) -> Option<String> {
        let next = self.chars.peek().map(|&(_, c)| c)?;
        match next {
            '(' => {
                self.chars.next();
                if self.eat('(') {
                    // Arithmetic: no command, but a substitution inside it would be one.
                    let inner = self.balanced(')');
                    self.eat(')');
                    if inner.contains("$(") || inner.contains('`') {
                        self.nested(&inner);
                    }
                    return Some(format!("(({inner}))"));
                }
                let inner = self.balanced(')');
                self.nested(&inner);
                Some(format!("({inner})"))
            }
            '{' => {
                self.chars.next();
                let inner = self.balanced('}');
                if inner.contains("$(") || inner.contains('`') {
                    self.nested(&inner);
                }
                Some(format!("{{{inner}}}"))
            }
            '\'' => {
                // `$'…'`: ANSI-C quoting, whose escapes this reader does not decode.
                self.chars.next();
                let inner = self.until('\'');
                Some(format!("'{inner}'"))
            }
            '"' => {
                // `$"…"`: a translated string; read as double-quoted, not literal.
                self.chars.next();
                let ((inner, _), _) = self.double_quoted();
                Some(format!("\"{inner}\""))
            }
            c if c.is_ascii_alphanumeric() || "_@*#?$!-".contains(c) => {
                let mut name = String::new();
                if c.is_ascii_alphabetic() || c == '_' {
                    while let Some(&(_, c)) = self.chars.peek() {
                        if c.is_ascii_alphanumeric() || c == '_' {
                            name.push(c);
                            self.chars.next();
                        } else {
                            break;
                        }
                    }
                } else {
                    name.push(c);
                    self.chars.next();
                }
                Some(name)
            }
            _ => None,
        }
    }

    /// The inside of a double-quoted string (the opening quote read): its raw text and value,
    /// and whether nothing in it expands.
    fn double_quoted(&mut self) -> ((String, String), bool) {
        let mut raw = String::new();
        let mut value = String::new();
        let mut plain = true;
        while let Some((_, c)) = self.chars.next() {
            match c {
                '"' => return ((raw, value), plain),
                '\\' => {
                    raw.push('\\');
                    if let Some((_, escaped)) = self.chars.next() {
                        raw.push(escaped);
                        match escaped {
                            '$' | '`' | '"' | '\\' => value.push(escaped),
                            '\n' => {}
                            other => {
                                value.push('\\');
                                value.push(other);
                            }
                        }
                    }
                }
                // Inside double quotes `$'…'` is not ANSI-C quoting: a `$` and a quote.
                '$' if self.chars.peek().is_some_and(|&(_, next)| next == '\'') => {
                    raw.push('$');
                    value.push('$');
                }
                '$' => {
                    raw.push('$');
                    match self.dollar() {
                        Some(text) => {
                            raw.push_str(&text);
                            plain = false;
                        }
                        None => value.push('$'),
                    }
                }
                '`' => {
                    let inner = self.until('`');
                    self.nested(&inner.replace("\\`", "`"));
                    raw.push('`');
                    raw.push_str(&inner);
                    raw.push('`');
                    plain = false;
                }
                _ => {
                    raw.push(c);
                    value.push(c);
                }
            }
        }
        self.script
            .opaque
            .push("a double quote is not closed".into());
        ((raw, value), false)
    }

    /// Everything up to `end` (consumed), with no quoting inside (single quotes, backquotes).
    fn until(&mut self, end: char) -> String {
        let mut inner = String::new();
        while let Some((_, c)) = self.chars.next() {
            if c == end {
                return inner;
            }
            if end == '`' && c == '\\' {
                inner.push(c);
                if let Some((_, escaped)) = self.chars.next() {
                    inner.push(escaped);
                }
                continue;
            }
            inner.push(c);
        }
        self.script.opaque.push(format!("a `{end}` is not closed"));
        inner
    }

    /// Everything up to the `close` that balances an opening one already read (consumed),
    /// stepping over quotes and nested pairs.
    fn balanced(&mut self, close: char) -> String {
        let open = if close == ')' { '(' } else { '{' };
        let mut inner = String::new();
        let mut level = 0usize;
        while let Some((_, c)) = self.chars.next() {
            match c {
                '\\' => {
                    inner.push(c);
                    if let Some((_, escaped)) = self.chars.next() {
                        inner.push(escaped);
                    }
                }
                '\'' | '"' | '`' => {
                    inner.push(c);
                    let quoted = if c == '"' {
                        let ((raw, _), _) = self.double_quoted();
                        raw
                    } else {
                        self.until(c)
                    };
                    inner.push_str(&quoted);
                    inner.push(c);
                }
                c if c == open => {
                    level += 1;
                    inner.push(c);
                }
                c if c == close => {
                    if level == 0 {
                        return inner;
                    }
                    level -= 1;
                    inner.push(c);
                }
                _ => inner.push(c),
            }
        }
        self.script.opaque.push(format!("a `{open}` is not closed"));
        inner
    }

    /// Reads `text` (a substitution's inside, a here-document's commands) as a script of its
    /// own whose commands are this one's too.
    fn nested(&mut self, text: &str) {
        read_into(text, self.depth + 1, self.script);
    }

    fn push_word(&mut self, word: Word) {
        if let Some(op) = self.expect_target.take() {
            if op == "<<" || op == "<<-" {
                let delimiter = word.literal.clone().unwrap_or_else(|| {
                    // A delimiter with quotes keeps its text, quotes removed.
                    word.raw.replace(['\'', '"', '\\'], "")
                });
                let slot = self.current.inputs.len();
                self.current.inputs.push(String::new());
                self.pending_heredocs.push(PendingHeredoc {
                    delimiter,
                    strip_tabs: op == "<<-",
                    // Any quoting in the delimiter keeps the body literal.
                    expands: !word.raw.contains(['\'', '"', '\\']),
                    command: None,
                    slot,
                });
                return;
            }
            if op == "<<<" {
                // Its substitutions were read with the word; its text is known only if literal.
                self.current.inputs_unknown |= word.literal.is_none();
                self.current.inputs.push(word.literal.unwrap_or_default());
                return;
            }
            self.current.redirects.push(Redirect { op, target: word });
            return;
        }
        if self.at_start {
            if let Some(text) = word.literal.as_deref() {
                if text == "esac" && self.cases > 0 {
                    self.cases -= 1;
                    return;
                }
                if RESERVED.contains(&text) {
                    return;
                }
                if is_assignment(text) {
                    self.current.assignments.push(word);
                    return;
                }
                if matches!(text, "for" | "select" | "case" | "function") {
                    // `for NAME in WORDS`, `case WORD in`, `function NAME`: no command here.
                    self.skip_header(text);
                    return;
                }
            } else if is_assignment(&word.raw) {
                self.current.assignments.push(word);
                return;
            }
        }
        self.at_start = false;
        self.current.words.push(word);
    }

    /// Skips a compound command's header up to where its commands start, reading any
    /// substitution in it.
    fn skip_header(&mut self, keyword: &str) {
        let stop_at_in = keyword == "case";
        let mut text = String::new();
        while let Some(&(_, c)) = self.chars.peek() {
            if c == '\n' || c == ';' || (keyword == "function" && (c == '{' || c == '(')) {
                break;
            }
            text.push(c);
            self.chars.next();
            if stop_at_in && (text.ends_with(" in") || text.ends_with("\tin")) {
                self.cases += 1;
                self.expect_pattern = true;
                break;
            }
        }
        if text.contains("$(") || text.contains('`') {
            self.nested(&text);
        }
    }

    fn end_command(&mut self) {
        if self.expect_target.take().is_some() {
            self.script
                .opaque
                .push("a redirection has no target".into());
        }
        let mut command = std::mem::take(&mut self.current);
        self.at_start = true;
        command.isolated |= self.parens > 0 || self.depth > 0 || self.piped;
        self.piped = false;
        if command.words.is_empty()
            && command.redirects.is_empty()
            && command.inputs.is_empty()
            && command.assignments.is_empty()
        {
            return;
        }
        let index = self.script.commands.len();
        if index == MAX_COMMANDS {
            self.script.too_long = true;
            return;
        }
        for pending in &mut self.pending_heredocs {
            pending.command.get_or_insert(index);
        }
        self.script.commands.push(command);
    }

    /// After a newline: the bodies of the here-documents opened on the line before it.
    fn read_heredoc_bodies(&mut self) {
        for pending in std::mem::take(&mut self.pending_heredocs) {
            let (body, closed) = self.heredoc_lines(&pending);
            if !closed {
                self.script.opaque.push(format!(
                    "the here-document ending `{}` has no end",
                    pending.delimiter
                ));
            }
            let text = if pending.expands {
                self.expanded(&body)
            } else {
                Some(body)
            };
            if let Some(command) = pending
                .command
                .and_then(|command| self.script.commands.get_mut(command))
            {
                command.inputs_unknown |= text.is_none();
                if let Some(input) = command.inputs.get_mut(pending.slot) {
                    *input = text.unwrap_or_default();
                }
            }
        }
    }

    /// A here-document's lines up to its delimiter (consumed), and whether the delimiter came.
    fn heredoc_lines(&mut self, pending: &PendingHeredoc) -> (String, bool) {
        let mut body = String::new();
        loop {
            let mut line = String::new();
            let ended = loop {
                let mut ended = false;
                for (_, c) in self.chars.by_ref() {
                    if c == '\n' {
                        ended = true;
                        break;
                    }
                    line.push(c);
                }
                // In an expanding body bash joins a line ending in an unescaped `\` to the
                // next before it looks for the delimiter.
                let trailing = line.chars().rev().take_while(|&c| c == '\\').count();
                if !(pending.expands && ended && trailing % 2 == 1) {
                    break ended;
                }
                line.pop();
            };
            let compared = if pending.strip_tabs {
                line.trim_start_matches('\t')
            } else {
                line.as_str()
            };
            if compared == pending.delimiter {
                return (body, true);
            }
            body.push_str(compared);
            body.push('\n');
            if !ended {
                return (body, false);
            }
        }
    }

    /// An unquoted here-document's body as the command reads it, reading the commands of its
    /// substitutions as the line's; `None` when anything in it expands.
    fn expanded(&mut self, body: &str) -> Option<String> {
        let mut lexer = Lexer {
            chars: body.char_indices().peekable(),
            depth: self.depth,
            script: &mut *self.script,
            current: Command::default(),
            parens: 0,
            piped: false,
            pending_heredocs: Vec::new(),
            expect_target: None,
            at_start: true,
            cases: 0,
            expect_pattern: false,
        };
        lexer.heredoc_text()
    }

    /// Reads the rest as an expanding here-document body: like the inside of double quotes,
    /// except that quotes are characters and only `\$`, `` \` `` and `\\` are escapes.
    fn heredoc_text(&mut self) -> Option<String> {
        let mut value = String::new();
        let mut known = true;
        while let Some((_, c)) = self.chars.next() {
            let next = self.chars.peek().map(|&(_, n)| n);
            match (c, next) {
                ('\\', Some(escaped @ ('$' | '`' | '\\'))) => {
                    self.chars.next();
                    value.push(escaped);
                }
                // `$'…'` and `$"…"` are not quoting here: the `$` is a character.
                ('$', Some('\'' | '"') | None) => value.push('$'),
                ('$', _) => match self.dollar() {
                    Some(_) => known = false,
                    None => value.push('$'),
                },
                ('`', _) => {
                    let inner = self.until('`');
                    self.nested(&inner.replace("\\`", "`"));
                    known = false;
                }
                _ => value.push(c),
            }
        }
        known.then_some(value)
    }
}

/// A word as it is read: its text as written, its value so far, and what makes it not literal.
#[derive(Default)]
struct Reading {
    raw: String,
    value: String,
    /// Something in it expands (a variable, a substitution, a glob): no literal value.
    dynamic: bool,
    quoted: bool,
    brace_open: bool,
    /// After an unquoted `{`: an unquoted `,` or `..`, which make it expand.
    brace_expands: bool,
    /// An unquoted `[` is in it: a `]` after it makes a glob.
    bracket_open: bool,
    /// An unquoted `=` is in it: a `~` after it or a `:` may expand.
    assigns: bool,
}

impl Reading {
    /// A character that is itself in both the text and the value.
    fn plain(&mut self, c: char) {
        self.raw.push(c);
        self.value.push(c);
    }
}

/// `NAME=value` or `NAME+=value` at the start of a command: an assignment, not a program.
fn is_assignment(word: &str) -> bool {
    let Some((name, _)) = word.split_once('=') else {
        return false;
    };
    let name = name.strip_suffix('+').unwrap_or(name);
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_case_statement_is_read_arm_by_arm() {
        for text in [
            "case \"$1\" in start) git push;; stop|halt) rm -rf x ;; *) echo no;; esac",
            "case $x in\n  (a) git push\n  ;;\n  b) rm -rf x\nesac\n",
            "case $x in a) git push;& b) rm -rf x;;& esac; echo after",
        ] {
            let script = read(text);
            assert!(script.opaque.is_empty(), "{text}: {:?}", script.opaque);
            let programs: Vec<Vec<String>> = words(&script);
            assert!(
                programs.contains(&vec!["git".into(), "push".into()]),
                "{text}: {programs:?}"
            );
            assert!(
                programs.contains(&vec!["rm".into(), "-rf".into(), "x".into()]),
                "{text}: {programs:?}"
            );
        }
        // A pattern's substitution runs; an unclosed case cannot be read whole.
        let script = read("case a in $(git push)) ;; esac");
        assert!(words(&script).contains(&vec!["git".into(), "push".into()]));
        assert!(!read("case a in a) echo").opaque.is_empty());
    }

    fn words(script: &Script) -> Vec<Vec<String>> {
        script
            .commands
            .iter()
            .map(|c| {
                c.words
                    .iter()
                    .map(|w| w.literal.clone().unwrap_or_else(|| format!("?{}", w.raw)))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn commands_are_split_at_every_operator_and_read_inside_substitutions() {
        let script = read("cd src && FOO=1 git push origin main; echo $(rm -rf x) | tee out.txt &");
        assert_eq!(
            words(&script),
            [
                vec!["cd", "src"],
                vec!["git", "push", "origin", "main"],
                vec!["rm", "-rf", "x"],
                vec!["echo", "?$(rm -rf x)"],
                vec!["tee", "out.txt"],
            ]
        );
        assert!(script.changes_directory);
        assert!(script.opaque.is_empty(), "{:?}", script.opaque);
    }

    #[test]
    fn quotes_are_removed_and_expansions_are_not_literal() {
        let script = read(r#"echo 'a b' "c $HOME" "d\"e" f\ g ~nobody/x *.rs ${X} `date`"#);
        assert_eq!(
            words(&script),
            [
                vec!["date"],
                vec![
                    "echo",
                    "a b",
                    "?\"c $HOME\"",
                    "d\"e",
                    "f g",
                    "?~nobody/x",
                    "?*.rs",
                    "?${X}",
                    "?`date`"
                ]
            ]
        );
    }

    #[test]
    fn redirections_name_their_targets_and_descriptors_are_not_files() {
        let script = read("make >build.log 2>&1; cat < in > out 2>> err &> both; echo x >&2");
        let targets: Vec<(String, String, bool)> = script
            .commands
            .iter()
            .flat_map(|c| &c.redirects)
            .map(|r| {
                (
                    r.op.clone(),
                    r.target.literal.clone().unwrap_or_default(),
                    r.writes(),
                )
            })
            .collect();
        assert_eq!(
            targets,
            [
                (">".into(), "build.log".into(), true),
                (">&".into(), "1".into(), false),
                ("<".into(), "in".into(), false),
                (">".into(), "out".into(), true),
                (">>".into(), "err".into(), true),
                ("&>".into(), "both".into(), true),
                (">&".into(), "2".into(), false),
            ]
        );
    }

    #[test]
    fn here_documents_are_read_whole() {
        let script = read(
            "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch\nEOF\necho done\ncat <<-X > f\n\tbody\n\tX\n",
        );
        assert_eq!(
            words(&script),
            [vec!["apply_patch"], vec!["echo", "done"], vec!["cat"]]
        );
        assert_eq!(
            script.commands[0].inputs,
            ["*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch\n"]
        );
        assert_eq!(script.commands[2].inputs, ["body\n"]);
        // A substitution on the line is a command of its own; the body still feeds `cat`.
        let script = read("cat <<EOF $(echo x) > f\nbody\nEOF\n");
        assert_eq!(
            words(&script),
            [vec!["echo", "x"], vec!["cat", "?$(echo x)"]]
        );
        assert_eq!(script.commands[1].inputs, ["body\n"]);
        assert!(script.opaque.is_empty(), "{:?}", script.opaque);
    }

    #[test]
    fn an_unquoted_here_document_runs_its_substitutions_and_its_text_is_not_known() {
        let script = read(
            "patch -p1 <<EOF\n--- a/$(git push)\n`touch x`\n${Y:-$(rm y)} $((1 + $(id -u)))\nEOF\n",
        );
        let all = words(&script);
        for command in [
            vec!["git", "push"],
            vec!["touch", "x"],
            vec!["rm", "y"],
            vec!["id", "-u"],
        ] {
            assert!(
                all.contains(&command.iter().map(|w| (*w).to_owned()).collect()),
                "{all:?}"
            );
        }
        let patch = script.commands.iter().find(|c| c.words[0].is("patch"));
        let patch = patch.expect("the patch command");
        assert!(patch.inputs_unknown);
        assert_eq!(patch.inputs, [""]);
        assert!(script.opaque.is_empty(), "{:?}", script.opaque);
        // A variable alone is enough to make the text unknown; only `\$`, `` \` `` and `\\`
        // are escapes, and `$'…'`, `$"…"` and quotes are characters there (as bash has it).
        assert!(read("cat <<EOF\n$HOME\nEOF\n").commands[0].inputs_unknown);
        let plain = read("cat <<-EOF\n\t\\$x \\` \\\\ \\a $'q' $\"t\" \"q\" 's' $\n\tEOF\n");
        assert!(!plain.commands[0].inputs_unknown);
        assert_eq!(
            plain.commands[0].inputs,
            ["$x ` \\ \\a $'q' $\"t\" \"q\" 's' $\n"]
        );
    }

    #[test]
    fn a_quoted_here_document_delimiter_keeps_the_body_literal() {
        for line in [
            "cat <<'EOF'\n$(rm x) `rm x`\nEOF\n",
            "cat <<\"EOF\"\n$(rm x) `rm x`\nEOF\n",
            "cat <<\\EOF\n$(rm x) `rm x`\nEOF\n",
            "cat <<E'O'F\n$(rm x) `rm x`\nEOF\n",
        ] {
            let script = read(line);
            assert_eq!(words(&script), [vec!["cat"]], "{line}");
            assert_eq!(script.commands[0].inputs, ["$(rm x) `rm x`\n"], "{line}");
            assert!(!script.commands[0].inputs_unknown, "{line}");
        }
    }

    #[test]
    fn a_backslash_newline_in_an_unquoted_body_joins_the_delimiter_line() {
        // bash: the body is `xEOF\nit's\n`; `git push` runs after the second `EOF`.
        let script = read("cat <<EOF\nx\\\nEOF\nit's\nEOF\ngit push #'\n");
        assert_eq!(words(&script), [vec!["cat"], vec!["git", "push"]]);
        assert_eq!(script.commands[0].inputs, ["xEOF\nit's\n"]);
        // An escaped backslash does not join; a quoted body never does.
        let script = read("cat <<EOF\nx\\\\\nEOF\necho a\n");
        assert_eq!(script.commands[0].inputs, ["x\\\n"]);
        assert_eq!(words(&script)[1], ["echo", "a"]);
        let script = read("cat <<'EOF'\nx\\\nEOF\necho a\n");
        assert_eq!(script.commands[0].inputs, ["x\\\n"]);
    }

    #[test]
    fn a_here_string_that_expands_is_not_known() {
        let script = read("patch -p1 <<< \"$(cat x)\"; cat <<< 'plain'");
        assert_eq!(words(&script)[0], ["cat", "x"]);
        assert!(script.commands[1].inputs_unknown);
        assert_eq!(script.commands[1].inputs, [""]);
        assert!(!script.commands[2].inputs_unknown);
        assert_eq!(script.commands[2].inputs, ["plain"]);
    }

    #[test]
    fn a_tilde_after_an_unquoted_equals_or_colon_in_an_assignment_like_word_is_not_literal() {
        // bash 5.2 expands in assignment-like words only (`of=~`, `a=b:~`), older bash after
        // any unquoted `=` (`--target-directory=~`): not literal either way.
        let script = read(
            "dd of=~/x a=b:~/y --target-directory=~ a=b=~ x:~/y a\\=~ a='~' a=\\~ \"a\"=~ a~ ~user",
        );
        assert_eq!(
            words(&script),
            [vec![
                "dd",
                "?of=~/x",
                "?a=b:~/y",
                "?--target-directory=~",
                "?a=b=~",
                "x:~/y",
                "a=~",
                "a=~",
                "a=~",
                "?\"a\"=~",
                "a~",
                "?~user"
            ]]
        );
    }

    #[test]
    fn a_tilde_that_starts_a_word_is_the_home_directory() {
        let Some(home) = super::home() else { return };
        let script = read("cat ~/.bashrc ~ '~/x' ~+/y");
        assert_eq!(
            words(&script),
            [vec![
                "cat".to_owned(),
                format!("{home}/.bashrc"),
                home.clone(),
                "~/x".to_owned(),
                "?~+/y".to_owned()
            ]]
        );
    }

    #[test]
    fn compound_commands_show_the_commands_they_hold() {
        let script = read(
            "for f in $(ls); do rm \"$f\"; done; if true; then git push; fi; f() { touch x; }",
        );
        let all = words(&script);
        assert!(all.contains(&vec!["ls".to_owned()]), "{all:?}");
        assert!(all.contains(&vec!["git".to_owned(), "push".to_owned()]));
        assert!(all.contains(&vec!["touch".to_owned(), "x".to_owned()]));
        assert!(all.contains(&vec!["rm".to_owned(), "?\"$f\"".to_owned()]));
    }

    #[test]
    fn what_cannot_be_read_is_opaque_never_dropped() {
        for text in ["echo 'open", "cat <<EOF\nno end", "echo $(unclosed", "x >"] {
            assert!(!read(text).opaque.is_empty(), "{text}");
        }
        assert!(!read(&"a".repeat(MAX_SCRIPT_BYTES + 1)).opaque.is_empty());
        // Deep nesting ends, opaque.
        let deep = "$(".repeat(50) + &")".repeat(50);
        assert!(!read(&deep).opaque.is_empty());
    }
}
