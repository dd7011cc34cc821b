//! The rules file's `tools:` section, checked: the commands an agent's shell tool may not run
//! (or only with a person's say), what becomes of a command whose writes cannot be seen, and
//! when repeated refusals stop the agent. Writes are not configured here: they are held to the
//! same `file-scope` gates and contract the stop is judged by.

use std::sync::OnceLock;

use globset::{Glob, GlobBuilder, GlobMatcher};
use schemars::JsonSchema;
use serde::Deserialize;

use validator_shell::Word;

/// What the rules file says of agents' tool calls (`validator hook`'s pre-tool events).
#[derive(Debug, Clone, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct RawTools {
    /// Commands a shell tool would run, each matched against every command in the line (inside
    /// `&&`, pipes, substitutions and `sh -c` too); the first entry that matches decides.
    pub commands: Option<Vec<RawCommandRule>>,
    /// A shell command whose writes cannot be told before it runs (a program validator does not
    /// know, a path held in a variable): `allow` (default: it runs, and what it changed is
    /// checked as soon as it ends) or `deny`.
    pub unknown: Option<Unknown>,
    /// The same refusal this many times in a row stops the agent where it can be stopped
    /// (default: 3; 0: never).
    pub stop_after: Option<u32>,
    /// Whether the kernel holds each allowed shell call (and `validator run`'s agent) to the
    /// writes the stop would accept: `required` (a machine that cannot confine refuses the
    /// call), `best-effort` (default: confined as far as this machine can, and `status` says
    /// how far) or `off`.
    pub confine: Option<Confine>,
    /// Where else a confined process may write besides the task's own files and a fresh
    /// `$TMPDIR` and caches of its own: absolute paths or `~/…` (default: none; what is listed
    /// here is a way for a confined process to leave code that unconfined ones run later).
    pub writable: Option<Vec<String>>,
}

/// `tools.confine`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Confine {
    Required,
    #[default]
    BestEffort,
    Off,
}

/// `tools.writable` when the rules file does not say.
/// None: a user's caches hold code programs outside the confinement run later (OpenCode's own
/// tools in `~/.cache`, crates' `build.rs` in `~/.cargo/registry`), so a confined process gets
/// caches of its own instead ([`crate::confine::Plan::environment`]).
pub const DEFAULT_WRITABLE: &[&str] = &[];

/// One command rule.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCommandRule {
    /// The command's words, split as a shell would (`git push`, `rm -r*`, `./deploy*`), each a
    /// glob: the first matches the program (by its name or as written), the others arguments
    /// that must all appear after it, in this order.
    #[serde(rename = "match")]
    pub pattern: String,
    /// `deny` (refused, the reason said to the agent), `ask` (a person confirms, where the
    /// agent can ask one; elsewhere refused, saying a person must run it) or `allow` (known to
    /// write nothing the gates judge: never counted as unknown).
    pub decision: CommandDecision,
    /// Said to the agent with a refusal.
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CommandDecision {
    Deny,
    Ask,
    Allow,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Unknown {
    #[default]
    Allow,
    Deny,
}

/// The checked `tools:` section.
#[derive(Debug, Clone)]
pub struct Tools {
    pub commands: Vec<CommandRule>,
    pub unknown: Unknown,
    pub stop_after: u32,
    pub confine: Confine,
    /// `tools.writable`, each path absolute (`~` expanded where the home is known).
    pub writable: Vec<std::path::PathBuf>,
}

impl Default for Tools {
    fn default() -> Self {
        Tools {
            commands: Vec::new(),
            unknown: Unknown::Allow,
            stop_after: 3,
            confine: Confine::BestEffort,
            writable: DEFAULT_WRITABLE
                .iter()
                .filter_map(|path| expand_home(path).ok())
                .collect(),
        }
    }
}

/// `path` with a leading `~/` made the home directory's; `Err` when it is neither absolute
/// nor under the home, or the home is unknown.
pub fn expand_home(path: &str) -> Result<std::path::PathBuf, String> {
    if let Some(rest) = path.strip_prefix("~/") {
        return match std::env::var_os("HOME").filter(|home| !home.is_empty()) {
            Some(home) => Ok(std::path::Path::new(&home).join(rest)),
            None => Err(format!(
                "`{path}` is under the home directory, but $HOME is not set"
            )),
        };
    }
    let path = std::path::Path::new(path);
    if path.is_absolute()
        && !path
            .components()
            .any(|c| c == std::path::Component::ParentDir)
    {
        Ok(path.to_path_buf())
    } else {
        Err(format!("`{}` is not an absolute path", path.display()))
    }
}

/// `tools.commands` entries that name an agent's tool rather than a shell command (an MCP
/// server's `mcp__gmail__send_email`, or a bare `send_email` that is no program on this PATH):
/// they match the words of shell commands, so such an entry never matches the tool call. One
/// warning each, with what does hold such calls.
pub fn tool_names_in_commands(tools: &Tools) -> Vec<String> {
    tools
        .commands
        .iter()
        .filter_map(|rule| {
            let program = shell_words::split(&rule.pattern).ok()?.into_iter().next()?;
            let why = if program.starts_with("mcp__") {
                "names an MCP tool"
            } else if looks_like_a_tool_name(&program) && !on_path(&program) {
                "names no program on this PATH, and reads like an agent's tool (an MCP server's)"
            } else {
                return None;
            };
            Some(format!(
                "tools.commands `{}` {why}: tools.commands matches the words of shell commands, so it never matches a tool call. No key of the tool policy names one tool that is not a shell: `tools.unknown: deny` refuses every tool validator does not know (each MCP tool included), or deny the tool in the agent's own settings (Claude Code: `permissions.deny: [\"mcp__SERVER__TOOL\"]`)",
                rule.pattern
            ))
        })
        .collect()
}

/// A bare identifier with an underscore and no glob or path (`send_email`, `create_issue`),
/// as tools are named; programs are seldom named so.
fn looks_like_a_tool_name(word: &str) -> bool {
    word.contains('_')
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// A command rule with its words compiled.
#[derive(Debug, Clone)]
pub struct CommandRule {
    /// The `match:` text as written, for messages.
    pub pattern: String,
    words: Vec<CommandWord>,
    pub decision: CommandDecision,
    pub reason: Option<String>,
}

impl CommandRule {
    /// Compiles `raw`; the error says what is wrong with its `match:`.
    pub fn new(raw: &RawCommandRule) -> Result<CommandRule, String> {
        let words = shell_words::split(&raw.pattern)
            .map_err(|err| format!("`{}` cannot be split into words: {err}", raw.pattern))?;
        if words.is_empty() {
            return Err("`match:` is empty".into());
        }
        let words = meant_in_rule(&words);
        let words = words
            .iter()
            .map(|word| {
                GlobBuilder::new(word)
                    .literal_separator(false)
                    .backslash_escape(true)
                    .build()
                    .map(CommandWord::new)
                    .map_err(|err| format!("`{word}` is not a glob: {}", err.kind()))
            })
            .collect::<Result<_, _>>()?;
        Ok(CommandRule {
            pattern: raw.pattern.clone(),
            words,
            decision: raw.decision,
            reason: raw.reason.clone(),
        })
    }

    /// Whether the command `words` (program first) matches. A word whose value is not known
    /// before it runs (`$flags`, `$(echo git)`) may be anything: it matches any word of a rule
    /// that refuses or asks, the program's included, and none of one that allows, so neither
    /// can be slipped past by hiding a word.
    pub fn matches(&self, words: &[Word]) -> bool {
        self.matches_at(words, None)
    }

    /// As [`CommandRule::matches`], for a program whose subcommand is known to be the word at
    /// `subcommand` (git's, past its own options): a rule's first argument that names a
    /// subcommand (`push`, no glob, no `-`) is matched against that word alone, so a word not
    /// known before it runs further on (`git commit -m "$MSG"`) cannot stand for it.
    pub fn matches_at(&self, words: &[Word], subcommand: Option<usize>) -> bool {
        if let (Some(at), Some((_, rest))) = (subcommand, self.words.split_first())
            && let Some(named) = rest.first().filter(|word| word.names_a_subcommand())
            && let Some(sub) = words.get(at)
        {
            let sub_matches = match sub.literal.as_deref() {
                Some(sub) => named.is_match(sub),
                None => self.decision != CommandDecision::Allow,
            };
            if !sub_matches {
                return false;
            }
            // The rest of the rule among the words after the subcommand.
            let mut after: Vec<Word> = words[..1].to_vec();
            after.extend(words[at + 1..].iter().cloned());
            let rest_rule = CommandRule {
                words: [&self.words[..1], &rest[1..]].concat(),
                ..self.clone()
            };
            return rest_rule.matches(&after);
        }
        let unknown_matches = self.decision != CommandDecision::Allow;
        let Some((program, arguments)) = words.split_first() else {
            return false;
        };
        let Some((first, rest)) = self.words.split_first() else {
            return false;
        };
        let program_matches = match program.literal.as_deref() {
            Some(program) => {
                let name = program.rsplit('/').next().unwrap_or(program);
                first.is_match(program) || first.is_match(name)
            }
            None => unknown_matches,
        };
        if !program_matches {
            return false;
        }
        let name = program
            .literal
            .as_deref()
            .map(|p| p.rsplit('/').next().unwrap_or(p));
        let arguments = meant(name, arguments);
        let matched = |wanted: &[CommandWord]| {
            let mut arguments = arguments.iter();
            wanted.iter().all(|wanted| {
                arguments.any(|argument| match argument.literal.as_deref() {
                    // A rule's short options (`-*r*`) are never a long option's letters.
                    Some(value) if wanted.is_short_option() && value.starts_with("--") => false,
                    Some(value) => wanted.is_match(value),
                    None => unknown_matches,
                })
            })
        };
        // A program not known before it runs whose text holds the rule's next word may stand
        // for both (`"$(git --exec-path)"/git-push` is `git push`).
        let absorbs = program.literal.is_none()
            && unknown_matches
            && rest
                .first()
                .is_some_and(|next| program.raw.contains(next.glob.glob()));
        matched(rest) || (absorbs && matched(&rest[1..]))
    }
}

/// What a program's options mean, for matching them: its long options (each with the short one
/// it is the same as, if any; GNU takes any unambiguous prefix), short letters that are the same
/// as another (`rm -R` is `rm -r`), short ones that take a value (the rest of the cluster is
/// that value), and short ones that imply others (`cp -a` copies recursively).
struct Meanings {
    programs: &'static [&'static str],
    long: &'static [(&'static str, Option<char>)],
    same: &'static [(char, char)],
    valued: &'static str,
    implies: &'static [(char, &'static str)],
}

const MEANINGS: &[Meanings] = &[
    Meanings {
        programs: &["rm"],
        long: &[
            ("force", Some('f')),
            ("interactive", None),
            ("one-file-system", None),
            ("no-preserve-root", None),
            ("preserve-root", None),
            ("recursive", Some('r')),
            ("dir", Some('d')),
            ("verbose", Some('v')),
            ("help", None),
            ("version", None),
        ],
        same: &[('R', 'r')],
        valued: "",
        implies: &[],
    },
    Meanings {
        programs: &["cp"],
        long: &[
            ("archive", Some('a')),
            ("recursive", Some('r')),
            ("force", Some('f')),
            ("link", Some('l')),
            ("symbolic-link", Some('s')),
            ("target-directory", Some('t')),
            ("suffix", Some('S')),
            ("no-target-directory", Some('T')),
            ("verbose", Some('v')),
            ("interactive", Some('i')),
            ("no-clobber", Some('n')),
            ("update", None),
            ("parents", None),
            ("preserve", None),
            ("no-preserve", None),
            ("remove-destination", None),
            ("reflink", None),
            ("sparse", None),
            ("backup", None),
            ("dereference", Some('L')),
            ("no-dereference", Some('P')),
            ("one-file-system", Some('x')),
            ("strip-trailing-slashes", None),
            ("attributes-only", None),
            ("copy-contents", None),
            ("debug", None),
            ("context", None),
            ("help", None),
            ("version", None),
        ],
        same: &[('R', 'r')],
        valued: "tS",
        implies: &[('a', "r")],
    },
    Meanings {
        programs: &["chmod", "chown", "chgrp"],
        long: &[
            ("recursive", Some('R')),
            ("changes", Some('c')),
            ("silent", Some('f')),
            ("quiet", Some('f')),
            ("verbose", Some('v')),
            ("reference", None),
            ("from", None),
            ("dereference", None),
            ("no-dereference", Some('h')),
            ("preserve-root", None),
            ("no-preserve-root", None),
            ("help", None),
            ("version", None),
        ],
        same: &[],
        valued: "",
        implies: &[],
    },
];

/// Options no program's table names, read as most programs mean them.
const COMMON_LONG: &[(&str, Option<char>)] = &[("recursive", Some('r')), ("force", Some('f'))];

/// `arguments` (of the program `name`) as the rules match them: each option written as the
/// short one it means (`--recursive` and `-R` are `rm -r`; `--force` is `-f`), options after
/// `--` and operands as written.
fn meant(name: Option<&str>, arguments: &[Word]) -> Vec<Word> {
    let table = name.and_then(|name| MEANINGS.iter().find(|m| m.programs.contains(&name)));
    let mut options_end = false;
    arguments
        .iter()
        .map(|argument| {
            let Some(text) = argument.literal.as_deref() else {
                return argument.clone();
            };
            if options_end && text.starts_with('-') {
                // An operand after `--` that looks like an option is a file (`./-r`).
                return Word {
                    raw: argument.raw.clone(),
                    literal: Some(format!("./{text}")),
                };
            }
            if options_end || !text.starts_with('-') || text == "-" {
                return argument.clone();
            }
            if text == "--" {
                options_end = true;
                return argument.clone();
            }
            let literal = match text.strip_prefix("--") {
                Some(long) => meant_long(table, long),
                None => table.map(|table| meant_short(table, &text[1..])),
            };
            match literal {
                Some(literal) => Word {
                    raw: argument.raw.clone(),
                    literal: Some(literal),
                },
                None => argument.clone(),
            }
        })
        .collect()
}

/// A rule's words with each literal option written as the short one it means, as a
/// command's are before they are matched ([`meant`]): a rule's `git push --force` matches the
/// command `git push --force`, and `rm --recursive` matches `rm -r`. Words with a glob are the
/// rule author's own pattern, kept as written.
fn meant_in_rule(words: &[String]) -> Vec<String> {
    let program = words
        .first()
        .map(|program| program.rsplit('/').next().unwrap_or(program));
    let table = program.and_then(|name| MEANINGS.iter().find(|m| m.programs.contains(&name)));
    let mut options_end = false;
    words
        .iter()
        .enumerate()
        .map(|(at, word)| {
            let literal = !word.contains(['*', '?', '[', '{', '\\']);
            if at == 0 || options_end || !literal || !word.starts_with('-') || word == "-" {
                return word.clone();
            }
            if word == "--" {
                options_end = true;
                return word.clone();
            }
            match word.strip_prefix("--") {
                Some(long) => meant_long(table, long),
                None => table.map(|table| meant_short(table, &word[1..])),
            }
            .unwrap_or_else(|| word.clone())
        })
        .collect()
}

/// A long option as the short one it means (`None`: kept as written).
fn meant_long(table: Option<&Meanings>, long: &str) -> Option<String> {
    let (long, _) = long.split_once('=').unwrap_or((long, ""));
    let names = table.map_or(COMMON_LONG, |table| table.long);
    let exact = names.iter().find(|(name, _)| *name == long);
    let mut prefixed = names.iter().filter(|(name, _)| name.starts_with(long));
    let found = exact.or_else(|| match (prefixed.next(), prefixed.next()) {
        (Some(only), None) if !long.is_empty() => Some(only),
        _ => None,
    })?;
    let short = found.1?;
    let implied = table
        .and_then(|t| t.implies.iter().find(|(c, _)| *c == short))
        .map_or("", |(_, implied)| implied);
    Some(format!("-{short}{implied}"))
}

/// A cluster of short options (after its `-`) with each letter as the one it means.
fn meant_short(table: &Meanings, cluster: &str) -> String {
    let mut meant = String::from("-");
    for letter in cluster.chars() {
        // The rest of the cluster is its value, whose letters are no options.
        if table.valued.contains(letter) {
            meant.push(letter);
            break;
        }
        let same = table
            .same
            .iter()
            .find(|(from, _)| *from == letter)
            .map_or(letter, |(_, to)| *to);
        meant.push(same);
        if let Some((_, implied)) = table.implies.iter().find(|(c, _)| *c == same) {
            meant.push_str(implied);
        }
    }
    meant
}

/// One word of a `match:`, compiled when first matched: most rules are never reached for a
/// given command (the program already differs), and each compile costs more than the match.
#[derive(Debug, Clone)]
struct CommandWord {
    glob: Glob,
    matcher: OnceLock<GlobMatcher>,
}

impl CommandWord {
    fn new(glob: Glob) -> CommandWord {
        CommandWord {
            glob,
            matcher: OnceLock::new(),
        }
    }

    /// A plain word: no glob, not an option (`push`, `run`).
    fn names_a_subcommand(&self) -> bool {
        let text = self.glob.glob();
        !text.starts_with('-') && !text.contains(['*', '?', '[', '{', '\\'])
    }

    /// Short options (`-*r*`, `-f`): a `-` not followed by another.
    fn is_short_option(&self) -> bool {
        let text = self.glob.glob();
        text.starts_with('-') && !text.starts_with("--")
    }

    fn is_match(&self, word: &str) -> bool {
        self.matcher
            .get_or_init(|| self.glob.compile_matcher())
            .is_match(word)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(pattern: &str, decision: CommandDecision) -> CommandRule {
        CommandRule::new(&RawCommandRule {
            pattern: pattern.into(),
            decision,
            reason: None,
        })
        .expect("compiles")
    }

    fn words(line: &str) -> Vec<Word> {
        let mut commands = validator_shell::read(line).commands;
        commands.pop().map(|c| c.words).unwrap_or_default()
    }

    #[test]
    fn a_rule_matches_its_program_and_its_arguments_in_order() {
        let push = rule("git push", CommandDecision::Deny);
        assert!(push.matches(&words("git push origin main")));
        assert!(push.matches(&words("/usr/bin/git -C dir push")));
        assert!(!push.matches(&words("git status")));
        assert!(!push.matches(&words("echo git push")));
        let rm = rule("rm -*r*", CommandDecision::Deny);
        assert!(rm.matches(&words("rm -fr build")));
        assert!(rm.matches(&words("rm -f -r build")));
        assert!(!rm.matches(&words("rm -f build")));
        // Options by what they mean, not by their letters.
        assert!(rm.matches(&words("rm -R build")));
        assert!(rm.matches(&words("rm --recursive build")));
        assert!(rm.matches(&words("rm --rec build")));
        assert!(rm.matches(&words("rm -fR build")));
        assert!(!rm.matches(&words("rm --force build")));
        // A rule's own long option means what the command's does.
        let force = rule("git push --force", CommandDecision::Deny);
        assert!(force.matches(&words("git push --force origin main")));
        assert!(force.matches(&words("git push -f origin main")));
        assert!(!force.matches(&words("git push --force-with-lease origin main")));
        let recursive = rule("rm --recursive", CommandDecision::Ask);
        assert!(recursive.matches(&words("rm -R build")));
        assert!(!rm.matches(&words("rm --no-preserve-root -f build")));
        assert!(!rm.matches(&words("rm -f -- -r")));
        let cp = rule("cp -*r*", CommandDecision::Ask);
        assert!(cp.matches(&words("cp -a src dst")));
        assert!(cp.matches(&words("cp --archive src dst")));
        assert!(!cp.matches(&words("cp -S.r a b")));
        let deploy = rule("./deploy*", CommandDecision::Ask);
        assert!(deploy.matches(&words("./deploy.sh prod")));
    }

    #[test]
    fn a_word_not_known_before_it_runs_cannot_slip_past_a_refusal() {
        let rm = rule("rm -*r*", CommandDecision::Deny);
        assert!(rm.matches(&words("rm $FLAGS build")));
        let allowed = rule("rm -*r*", CommandDecision::Allow);
        assert!(!allowed.matches(&words("rm $FLAGS build")));
        // Nor by hiding the program: a refusal takes it as possibly that program.
        assert!(rule("git push", CommandDecision::Deny).matches(&words("$g push")));
        assert!(!rule("git push", CommandDecision::Deny).matches(&words("$g status")));
        assert!(!rule("git push", CommandDecision::Allow).matches(&words("$g push")));
        assert!(
            rule("git push", CommandDecision::Deny)
                .matches(&words("\"$(git --exec-path)\"/git-push origin"))
        );
    }
}
