//! gates.json: the gate file of gates.json-based Claude Code hook runners (cipherpowers'
//! quality hooks, turboshovel), read into the same checked [`Rules`] a validator.yaml becomes,
//! so `check`, `rules check`, `hook` and `watch` take the file as it is.
//!
//! ```json
//! {"gates": {"check": {"command": "mise run check", "on_pass": "test", "on_fail": "BLOCK"},
//!            "test":  {"command": "mise run test"}},
//!  "hooks": {"SubagentStop": {"enabled_agents": ["rust-agent"], "gates": ["check"]}}}
//! ```
//!
//! - Each stop hook (`Stop`, `SubagentStop`) becomes a pipeline named after its event and
//!   bound to it ([`HookBinding`]), so `validator hook` runs the event's own gates and honours
//!   `enabled_agents`. `Stop` is listed first: `check` without `--pipeline` runs it when the file
//!   has one. Hooks of other events (PostToolUse, UserPromptSubmit, …) are not stops; their event
//!   names are checked and a note says they stay with the other runner.
//! - The runner treats a jump as a subroutine call: the gates a hook lists run in order, a gate
//!   may jump to another, and CONTINUE goes back to the next gate of the list. Our routes jump
//!   within one list, so each entry of the hook's list brings its own copy of the gates it can
//!   jump to, whose CONTINUE leads to the next entry; a gate met again runs as `name#2`.
//! - `command` is the rules author's text, never the worker's. A plain command is split into
//!   words and run without a shell, like `run:`; one that uses shell syntax (`&&`, `|`, `$`,
//!   globs, redirections) runs as `/bin/sh -c COMMAND`, as the runner ran every command. A gate
//!   whose name holds `test` is a `test` rule (failed test names are read), any other `lint`.
//! - A gate without `command` is one of the runner's built-ins: `plan-compliance` is the
//!   `status` rule (and may be listed without being defined); any other is an error.

mod locate;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use globset::GlobSet;
use serde::Deserialize;
use serde::de::{self, MapAccess, Visitor};

use super::raw::{Argv, GateSpec, RuleKind};
use super::{Defaults, Gate, HookBinding, Pipeline, PromptHook, Route, Rules, bad_gate_name};
use crate::error::ConfigError;
use crate::rules::Rule;
use locate::{Aim, Step, locate};

/// The hook events that are an agent stopping, in the order their pipelines are listed.
const STOP_EVENTS: [&str; 2] = ["Stop", "SubagentStop"];
/// The person's prompt: its gates run when the prompt holds their keywords, and what they say
/// is added to the prompt as context.
const PROMPT_EVENT: &str = "UserPromptSubmit";
/// The other events a gates.json may configure (Claude Code's and the runners' own).
const OTHER_EVENTS: [&str; 13] = [
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "Notification",
    "SubagentStart",
    "PreCompact",
    "SessionStart",
    "SessionEnd",
    "SlashCommandStart",
    "SlashCommandEnd",
    "SkillStart",
    "SkillEnd",
];
/// The built-in gate that judges a stop: the agent's STATUS report.
const PLAN_COMPLIANCE: &str = "plan-compliance";
/// The runners' other built-ins: they add context or check the runner's own installation.
const CONTEXT_BUILTINS: [&str; 2] = ["commands", "plugin-path"];
/// What a command with shell syntax runs under (the shell Node's `exec` uses, as the runner did).
const SHELL: &str = "/bin/sh";
/// Characters that make a command shell syntax rather than plain words.
const SHELL_SYNTAX: &[char] = &[
    '|', '&', ';', '<', '>', '(', ')', '$', '`', '*', '?', '[', ']', '{', '}', '~', '#', '!', '\n',
    '\r',
];
/// Most gates one stop hook may expand to; each entry of its list copies the gates it jumps to.
const MAX_GATES: usize = 512;

/// Whether a rules file is a gates.json: named `*.json` or starting with `{`, unless its top
/// level has `version` or `pipelines` (a validator rules file written as JSON, which is YAML).
pub(super) fn is_gates_json(path: &Path, source: &str) -> bool {
    let named_json = path
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("json"));
    if !named_json && !source.trim_start().starts_with('{') {
        return false;
    }
    match serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(source) {
        Ok(top) => !top.contains_key("version") && !top.contains_key("pipelines"),
        Err(_) => named_json,
    }
}

/// Reads gates.json text into checked rules; `dir` is the file's directory, which anchors the
/// default `staging`, `verdicts` and `state` as for a validator.yaml that names none.
pub(super) fn parse(path: &Path, source: &str, dir: PathBuf) -> Result<Rules, ConfigError> {
    let source = source.strip_prefix('\u{feff}').unwrap_or(source);
    let file = File { path, source };
    let raw: RawFile = serde_json::from_str(source).map_err(|err| file.serde_error(&err))?;
    let mut reader = Reader {
        file,
        gates: &raw.gates.0,
        by_name: raw.gates.0.iter().map(|(n, g)| (n.as_str(), g)).collect(),
        routes: HashMap::new(),
        notes: Vec::new(),
    };
    reader.check_gates()?;
    let (mut stops, prompt_gates) = reader.check_hooks(&raw.hooks.0)?;
    // The prompt's gates are compiled as a stop's are, into a pipeline of their own.
    let runs_prompt_gates = prompt_gates.as_ref().is_some_and(|p| !p.gates.is_empty());
    if let Some(list) = prompt_gates.as_ref().filter(|_| runs_prompt_gates) {
        stops.push(StopHook {
            event: PROMPT_EVENT,
            gates: list.gates.clone(),
            agents: Vec::new(),
        });
    }
    let compiled = reader.compile_reachable(&stops)?;
    // Keywords wait for a prompt's words; a stop has none.
    let stop_heads = stops
        .iter()
        .filter(|stop| stop.event != PROMPT_EVENT)
        .flat_map(|stop| stop.gates.iter().copied());
    for (name, _) in reader.keywords_reached(stop_heads, &compiled) {
        reader.notes.push(format!(
            "gate `{name}`: `keywords` filters UserPromptSubmit only; on a stop the gate always runs"
        ));
    }
    let mut pipelines = Vec::new();
    let mut hooks = Vec::new();
    for stop in &stops {
        pipelines.push(reader.pipeline(stop, &compiled)?);
        if stop.event != PROMPT_EVENT {
            hooks.push(HookBinding {
                event: stop.event.to_owned(),
                pipeline: stop.event.to_owned(),
                agents: stop.agents.clone(),
            });
        }
    }
    // Every gate the prompt's list reaches waits for its own words, a jump's target too.
    let prompt = prompt_gates.map(|p| PromptHook {
        pipeline: runs_prompt_gates.then(|| PROMPT_EVENT.to_owned()),
        keywords: reader.keywords_reached(p.gates.iter().copied(), &compiled),
        commands: p.commands,
    });
    let staging = dir.join("staging");
    Ok(Rules {
        path: path.to_path_buf(),
        verdicts: staging.clone(),
        staging,
        state: dir.join(".validator"),
        contracts: None,
        signing_key_file: None,
        dir,
        defaults: Defaults::default(),
        tools: Default::default(),
        hook: Default::default(),
        speculate: Default::default(),
        events: Default::default(),
        pipelines,
        hooks,
        prompt,
        notes: reader.notes,
        written: Vec::new(),
    })
}

/// The top level: `gates` and `hooks`, and the comments the runners' own example files carry
/// (`description`, `comment`, `comment2`, `$schema`, `_note`, ...), which run nothing. Any
/// other key is refused, as serde's `deny_unknown_fields` would.
#[derive(Default)]
struct RawFile {
    gates: Entries<RawGate>,
    hooks: Entries<RawHook>,
}

impl<'de> Deserialize<'de> for RawFile {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FileVisitor;

        impl<'de> Visitor<'de> for FileVisitor {
            type Value = RawFile;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object with `gates` and `hooks`")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawFile, A::Error> {
                let mut file = RawFile::default();
                let (mut gates, mut hooks) = (false, false);
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "gates" if !gates => {
                            gates = true;
                            file.gates = map.next_value()?;
                        }
                        "hooks" if !hooks => {
                            hooks = true;
                            file.hooks = map.next_value()?;
                        }
                        "gates" | "hooks" => {
                            return Err(de::Error::custom(format!("`{key}` is given twice")));
                        }
                        _ if is_comment(&key) => {
                            map.next_value::<de::IgnoredAny>()?;
                        }
                        _ => return Err(de::Error::unknown_field(&key, &["gates", "hooks"])),
                    }
                }
                Ok(file)
            }
        }

        deserializer.deserialize_map(FileVisitor)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGate {
    description: Option<String>,
    command: Option<String>,
    on_pass: Option<String>,
    on_fail: Option<String>,
    /// UserPromptSubmit only: the gate runs when the prompt holds one of these words.
    keywords: Option<Vec<String>>,
    /// PostToolUse only: the gate runs when the edited file matches one of these globs.
    file_patterns: Option<Vec<String>>,
    /// turboshovel: the gate `gate` of another plugin's gates.json.
    plugin: Option<String>,
    gate: Option<String>,
    #[serde(default, rename = "comment")]
    _comment: Option<de::IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHook {
    enabled: Option<bool>,
    enabled_agents: Option<Vec<String>>,
    /// PostToolUse only: the tools whose use runs the gates.
    enabled_tools: Option<Vec<String>>,
    /// SlashCommandStart/End and SkillStart/End only: which commands or skills run the gates.
    enabled_commands: Option<Vec<String>>,
    enabled_skills: Option<Vec<String>>,
    #[serde(default)]
    gates: Vec<String>,
    #[serde(default, rename = "description")]
    _description: Option<de::IgnoredAny>,
    #[serde(default, rename = "comment")]
    _comment: Option<de::IgnoredAny>,
}

/// A JSON object read in file order. A key given twice is refused: JSON readers keep the last
/// one without a word, so the runner ran a gate its author may not have been looking at.
struct Entries<T>(Vec<(String, T)>);

impl<T> Default for Entries<T> {
    fn default() -> Self {
        Entries(Vec::new())
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Entries<T> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EntriesVisitor<T>(PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for EntriesVisitor<T> {
            type Value = Entries<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of named entries")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries<T>, A::Error> {
                let mut seen = HashSet::new();
                let mut entries = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    if !seen.insert(key.clone()) {
                        return Err(de::Error::custom(format!("`{key}` is given twice")));
                    }
                    let value = map.next_value()?;
                    entries.push((key, value));
                }
                Ok(Entries(entries))
            }
        }

        deserializer.deserialize_map(EntriesVisitor(PhantomData))
    }
}

/// Where a gate leads, as gates.json says it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Action {
    /// Back to the next gate of the hook's list.
    Continue,
    Block,
    Stop,
    /// A subroutine call: run that gate, whose own routes decide.
    Jump(String),
}

/// A stop hook that runs: its event, the gates it lists and the agents it judges.
struct StopHook<'a> {
    event: &'static str,
    gates: Vec<&'a str>,
    agents: Vec<String>,
}

/// The UserPromptSubmit hook as checked.
struct PromptGates<'a> {
    /// The gates it runs (those with a `command`), in its order.
    gates: Vec<&'a str>,
    /// It lists the runner's `commands` built-in.
    commands: bool,
}

/// A gate translated once, copied into every place a hook's list reaches it.
struct Compiled {
    rule: Rule,
    about: Option<String>,
    definition: String,
    on_pass: Action,
    on_fail: Action,
}

/// The file's path and text, for positioned errors.
struct File<'a> {
    path: &'a Path,
    source: &'a str,
}

impl File<'_> {
    /// An error at the node `at` (or its key: `aim`).
    fn error(
        &self,
        at: &[Step<'_>],
        aim: Aim,
        message: impl Into<String>,
        help: impl Into<String>,
    ) -> ConfigError {
        let position = locate(self.source, at, aim);
        ConfigError {
            file: self.path.to_path_buf(),
            line: position.map(|p| p.0),
            column: position.map(|p| p.1),
            message: message.into(),
            help: Some(help.into()),
        }
    }

    /// serde_json's own error, with its position moved to where a person looks: the column in
    /// characters, and the start of the key for a key that is refused.
    fn serde_error(&self, err: &serde_json::Error) -> ConfigError {
        let (line, column) = (err.line(), err.column());
        let mut message = err.to_string();
        if let Some(cut) = message.rfind(&format!(" at line {line} column {column}")) {
            message.truncate(cut);
        }
        let text = self
            .source
            .lines()
            .nth(line.saturating_sub(1))
            .unwrap_or_default();
        let mut column = char_column(text, column);
        if message.contains("unknown field") || message.contains("is given twice") {
            column = key_start(text, column);
        }
        let syntax = matches!(
            err.classify(),
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof
        );
        let help = if self.source.trim().is_empty() {
            "the file is empty: a gates.json is an object with \"gates\" and \"hooks\"".into()
        } else {
            hint(&message, text, syntax)
        };
        ConfigError {
            file: self.path.to_path_buf(),
            line: (line > 0).then_some(line),
            column: (line > 0).then_some(column),
            help: Some(help),
            message,
        }
    }
}

/// The character column of serde_json's byte column `byte` (1-based) in `text`.
fn char_column(text: &str, byte: usize) -> usize {
    let end = (0..=byte.min(text.len()))
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    text[..end].chars().count().max(1)
}

/// serde_json reports a refused key after its closing quote; a person looks for its start.
fn key_start(text: &str, column: usize) -> usize {
    let chars: Vec<char> = text.chars().collect();
    if chars.get(column.wrapping_sub(1)) != Some(&'"') {
        return column;
    }
    (0..column.saturating_sub(1))
        .rev()
        .find(|&i| chars[i] == '"' && (i == 0 || chars[i - 1] != '\\'))
        .map_or(column, |i| i + 1)
}

/// A fix for serde_json's messages.
fn hint(message: &str, line: &str, syntax: bool) -> String {
    if let Some(rest) = message.split("unknown field `").nth(1) {
        let typed = rest.split('`').next().unwrap_or_default();
        let expected: Vec<&str> = rest
            .split("expected ")
            .nth(1)
            .unwrap_or_default()
            .split('`')
            .skip(1)
            .step_by(2)
            .collect();
        return match closest(typed, &expected) {
            Some(near) => format!("did you mean `{near}`?"),
            None => "remove it, or check which object it is in".into(),
        };
    }
    if message.contains("is given twice") {
        return "keep one: a JSON reader keeps only the last, so the first one is silently lost"
            .into();
    }
    if syntax && (line.contains("//") || line.contains("/*")) {
        return "JSON has no comments: remove the comment".into();
    }
    if message.contains("trailing comma") {
        return "remove the comma before the closing bracket: JSON allows none".into();
    }
    if message.contains("EOF while parsing") {
        return "the file ends too early: close every `{` and `[`".into();
    }
    if message.starts_with("expected `,` or") {
        return "put a `,` between two entries, or close the bracket".into();
    }
    if message.contains("key must be a string") {
        return "put the key in double quotes".into();
    }
    "see \"Coming from gates.json\" in README.md: `gates` maps names to gates, `hooks` maps events to {\"gates\": [names]}".into()
}

/// The candidate most like `typed`, if it is close enough to be what was meant.
fn closest<'c>(typed: &str, candidates: &[&'c str]) -> Option<&'c str> {
    validator_text::closest(typed, candidates.iter().copied())
}

/// How a command runs. It is the rules author's text, so its shell syntax is the author's to
/// use; a plain command runs without a shell, which keeps a missing program an ERROR naming it
/// instead of a shell's exit code 127 that would send the agent after it.
fn command_argv(command: &str) -> Result<Vec<String>, String> {
    let assignment = command
        .split_whitespace()
        .next()
        .is_some_and(|word| word.contains('='));
    if assignment || command.contains(SHELL_SYNTAX) {
        return Ok(vec![SHELL.into(), "-c".into(), command.into()]);
    }
    let words = shell_words::split(command).map_err(|err| err.to_string())?;
    match words.first() {
        Some(program) if !program.is_empty() => Ok(words),
        _ => Err("there is no program in it".into()),
    }
}

struct Reader<'a> {
    file: File<'a>,
    gates: &'a [(String, RawGate)],
    by_name: HashMap<&'a str, &'a RawGate>,
    /// Every defined gate's `on_pass` and `on_fail`, checked.
    routes: HashMap<&'a str, (Action, Action)>,
    notes: Vec<String>,
}

impl<'a> Reader<'a> {
    fn gate(&self, name: &str) -> Option<&'a RawGate> {
        self.by_name.get(name).copied()
    }

    fn names(&self) -> Vec<&'a str> {
        self.gates.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// Names, shapes and routes of every gate, used by a stop hook or not (as the runner
    /// checks them when it loads the file).
    fn check_gates(&mut self) -> Result<(), ConfigError> {
        for (name, gate) in self.gates {
            let at = |rest: &[Step<'a>]| [&[Step::Key("gates"), Step::Key(name)], rest].concat();
            // turboshovel names gates of a plugin `plugin:gate`: the colon is safe in a name.
            if let Some(why) = bad_gate_name(&name.replace(':', "-")) {
                return Err(self.file.error(
                    &at(&[]),
                    Aim::Key,
                    format!("`{name}` cannot name a gate here: {why}"),
                    "rename it (and the routes and hook lists that name it), using letters, digits, `-`, `_`, `.` and `:`",
                ));
            }
            if gate.command.is_some() && (gate.plugin.is_some() || gate.gate.is_some()) {
                return Err(self.file.error(
                    &at(&[]),
                    Aim::Key,
                    format!("gate `{name}` has both `command` and `plugin`/`gate`"),
                    "keep one: `command` runs here, `plugin` and `gate` name another plugin's gate",
                ));
            }
            if gate.plugin.is_some() != gate.gate.is_some() {
                let (has, lacks) = match gate.plugin {
                    Some(_) => ("plugin", "gate"),
                    None => ("gate", "plugin"),
                };
                return Err(self.file.error(
                    &at(&[Step::Key(has)]),
                    Aim::Key,
                    format!("gate `{name}` has `{has}` but no `{lacks}`"),
                    format!("add `{lacks}`, or remove `{has}`"),
                ));
            }
            if let Some(command) = &gate.command {
                if let Err(why) = command_argv(command) {
                    return Err(self.file.error(
                        &at(&[Step::Key("command")]),
                        Aim::Value,
                        format!("gate `{name}`: cannot read `command` {command:?}: {why}"),
                        "write the command to run, closing every quote; or remove `command` for a built-in gate",
                    ));
                }
            }
            let on_pass =
                self.action(name, "on_pass", gate.on_pass.as_deref(), Action::Continue)?;
            let on_fail = self.action(name, "on_fail", gate.on_fail.as_deref(), Action::Block)?;
            self.routes.insert(name, (on_pass, on_fail));
        }
        Ok(())
    }

    fn action(
        &self,
        gate: &str,
        key: &'static str,
        text: Option<&str>,
        default: Action,
    ) -> Result<Action, ConfigError> {
        let Some(text) = text else {
            return Ok(default);
        };
        match text {
            "CONTINUE" => return Ok(Action::Continue),
            "BLOCK" => return Ok(Action::Block),
            "STOP" => return Ok(Action::Stop),
            name if self.gate(name).is_some() || name == PLAN_COMPLIANCE => {
                return Ok(Action::Jump(name.to_owned()));
            }
            _ => {}
        }
        let names = self.names();
        let actions = ["CONTINUE", "BLOCK", "STOP"];
        let (message, help) = if text == "PASS" {
            (
                "`PASS` is not a gates.json action".to_owned(),
                "write CONTINUE: a run passes when the hook's last gate continues (validator.yaml has PASS, if you move over to it)".to_owned(),
            )
        } else if let Some(word) = actions.iter().find(|w| w.eq_ignore_ascii_case(text)) {
            (
                format!("there is no gate named `{text}` to jump to"),
                format!("actions are upper case: write `{word}`"),
            )
        } else {
            let candidates: Vec<&str> = names.iter().copied().chain(actions).collect();
            let help = match closest(text, &candidates) {
                Some(near) => format!("did you mean `{near}`?"),
                None => format!(
                    "write CONTINUE, BLOCK, STOP or a gate of this file: {}",
                    names.join(", ")
                ),
            };
            (format!("there is no gate named `{text}` to jump to"), help)
        };
        Err(self.file.error(
            &[Step::Key("gates"), Step::Key(gate), Step::Key(key)],
            Aim::Value,
            message,
            help,
        ))
    }

    /// Checks every hook's event, and returns the stop hooks that run, `Stop` first, and the
    /// prompt's hook.
    fn check_hooks(
        &mut self,
        hooks: &'a [(String, RawHook)],
    ) -> Result<(Vec<StopHook<'a>>, Option<PromptGates<'a>>), ConfigError> {
        let mut stops = Vec::new();
        let mut prompt = None;
        for (event, hook) in hooks {
            let at = |rest: &[Step<'a>]| [&[Step::Key("hooks"), Step::Key(event)], rest].concat();
            if event == PROMPT_EVENT {
                prompt = self.check_prompt_hook(hook)?;
                continue;
            }
            let Some(stop_event) = STOP_EVENTS.iter().find(|e| *e == event) else {
                if !OTHER_EVENTS.contains(&event.as_str()) {
                    let known: Vec<&str> =
                        STOP_EVENTS.iter().chain(&OTHER_EVENTS).copied().collect();
                    let help = match closest(event, &known) {
                        Some(near) => format!("did you mean `{near}`?"),
                        None => format!("events are: {}", known.join(", ")),
                    };
                    return Err(self.file.error(
                        &at(&[]),
                        Aim::Key,
                        format!("`{event}` is not a hook event"),
                        help,
                    ));
                }
                if hook.enabled != Some(false) && !hook.gates.is_empty() {
                    self.notes.push(format!(
                        "hooks.{event} ({}) is neither a stop nor the prompt: `validator hook` runs gates on Stop, SubagentStop and UserPromptSubmit only, so leave these gates to your hook runner",
                        hook.gates.join(", ")
                    ));
                }
                continue;
            };
            if let Some(stop) = self.check_stop_hook(event, stop_event, hook)? {
                stops.push(stop);
            }
        }
        if stops.is_empty() && prompt.is_none() {
            let at = [Step::Key("hooks")];
            let has_hooks = locate(self.file.source, &at, Aim::Key).is_some();
            return Err(self.file.error(
                if has_hooks { &at[..] } else { &[] },
                Aim::Key,
                "no Stop, SubagentStop or UserPromptSubmit hook runs gates: validator judges an agent when it stops",
                "add one, e.g. \"hooks\": {\"SubagentStop\": {\"gates\": [\"check\"]}}",
            ));
        }
        stops.sort_by_key(|s| STOP_EVENTS.iter().position(|e| *e == s.event));
        Ok((stops, prompt))
    }

    /// Checks a stop hook (`Stop`, `SubagentStop`): its gates defined, its filters that do
    /// nothing said; `None` when it is off.
    fn check_stop_hook(
        &mut self,
        event: &'a str,
        stop_event: &'static str,
        hook: &'a RawHook,
    ) -> Result<Option<StopHook<'a>>, ConfigError> {
        let at = |rest: &[Step<'a>]| [&[Step::Key("hooks"), Step::Key(event)], rest].concat();
        if hook.enabled == Some(false) {
            self.notes.push(format!(
                "hooks.{event} is off (`enabled: false`): nothing runs on {event}"
            ));
            return Ok(None);
        }
        if hook.gates.is_empty() {
            let key = if locate(self.file.source, &at(&[Step::Key("gates")]), Aim::Key).is_some() {
                at(&[Step::Key("gates")])
            } else {
                at(&[])
            };
            return Err(self.file.error(
                &key,
                Aim::Key,
                format!("the {event} hook lists no gates, so it would judge nothing"),
                "list the gates to run when the agent stops, e.g. \"gates\": [\"check\"], or remove the hook",
            ));
        }
        for (i, name) in hook.gates.iter().enumerate() {
            if self.gate(name).is_none() && name != PLAN_COMPLIANCE {
                let names = self.names();
                let help = match closest(name, &names) {
                    Some(near) => format!("did you mean `{near}`?"),
                    None => format!(
                        "define it under \"gates\" (a gate your runner's own gates.json defined must be copied here), or list one of: {}",
                        names.join(", ")
                    ),
                };
                return Err(self.file.error(
                    &at(&[Step::Key("gates"), Step::Index(i)]),
                    Aim::Value,
                    format!(
                        "the {event} hook lists gate `{name}`, which this file does not define"
                    ),
                    help,
                ));
            }
        }
        for (key, set, filters) in [
            ("enabled_tools", hook.enabled_tools.is_some(), "PostToolUse"),
            (
                "enabled_commands",
                hook.enabled_commands.is_some(),
                "slash commands",
            ),
            ("enabled_skills", hook.enabled_skills.is_some(), "skills"),
        ] {
            if set {
                self.notes.push(format!(
                    "hooks.{event}.{key} has no effect: it filters {filters} only"
                ));
            }
        }
        let mut agents = hook.enabled_agents.clone().unwrap_or_default();
        if stop_event == "Stop" && !agents.is_empty() {
            self.notes.push(
                "hooks.Stop.enabled_agents has no effect: only SubagentStop says which agent stopped, so every Stop is judged".into(),
            );
            agents.clear();
        }
        Ok(Some(StopHook {
            event: stop_event,
            gates: hook.gates.iter().map(String::as_str).collect(),
            agents,
        }))
    }

    /// Checks the UserPromptSubmit hook: its gates with a `command` become a pipeline; the
    /// runner's `commands` built-in (the project's commands as context) is validator's brief.
    fn check_prompt_hook(
        &mut self,
        hook: &'a RawHook,
    ) -> Result<Option<PromptGates<'a>>, ConfigError> {
        if hook.enabled == Some(false) {
            self.notes.push(format!(
                "hooks.{PROMPT_EVENT} is off (`enabled: false`): nothing runs on {PROMPT_EVENT}"
            ));
            return Ok(None);
        }
        let mut gates = Vec::new();
        let mut commands = false;
        for (i, name) in hook.gates.iter().enumerate() {
            let at = [
                Step::Key("hooks"),
                Step::Key(PROMPT_EVENT),
                Step::Key("gates"),
                Step::Index(i),
            ];
            let builtin = self.gate(name).is_none_or(|g| g.command.is_none());
            if name == "commands" && builtin {
                commands = true;
            } else if name == PLAN_COMPLIANCE {
                return Err(self.file.error(
                    &at,
                    Aim::Value,
                    format!("the {PROMPT_EVENT} hook lists `{PLAN_COMPLIANCE}`, which reads the STATUS an agent ends its work with; a prompt has none"),
                    "list it under SubagentStop (validator checks STATUS on every subagent stop by default)",
                ));
            } else if self.gate(name).is_none() {
                let names = self.names();
                let help = match closest(name, &names) {
                    Some(near) => format!("did you mean `{near}`?"),
                    None => format!(
                        "define it under \"gates\", or list one of: {}",
                        names.join(", ")
                    ),
                };
                return Err(self.file.error(
                    &at,
                    Aim::Value,
                    format!("the {PROMPT_EVENT} hook lists gate `{name}`, which this file does not define"),
                    help,
                ));
            } else {
                gates.push(name.as_str());
            }
        }
        if gates.is_empty() && !commands {
            return Ok(None);
        }
        Ok(Some(PromptGates { gates, commands }))
    }

    /// The gates reachable from `heads` (jumps followed) that wait for keywords, once each, by
    /// name, with their words.
    fn keywords_reached<'h>(
        &self,
        heads: impl Iterator<Item = &'h str>,
        compiled: &HashMap<String, Compiled>,
    ) -> Vec<(String, Vec<String>)> {
        let mut reached: Vec<&str> = heads.flat_map(|head| reach(head, compiled)).collect();
        reached.sort_unstable();
        reached.dedup();
        reached
            .into_iter()
            .filter_map(|name| Some((name.to_owned(), self.gate(name)?.keywords.clone()?)))
            .collect()
    }

    /// Translates every gate a stop hook can reach, once each.
    fn compile_reachable(
        &mut self,
        stops: &[StopHook<'a>],
    ) -> Result<HashMap<String, Compiled>, ConfigError> {
        let mut compiled: HashMap<String, Compiled> = HashMap::new();
        let mut pending: Vec<String> = stops
            .iter()
            .flat_map(|s| s.gates.iter().map(|g| (*g).to_owned()))
            .collect();
        while let Some(name) = pending.pop() {
            if compiled.contains_key(&name) {
                continue;
            }
            let gate = self.compile(&name)?;
            for action in [&gate.on_pass, &gate.on_fail] {
                if let Action::Jump(target) = action {
                    pending.push(target.clone());
                }
            }
            compiled.insert(name, gate);
        }
        Ok(compiled)
    }

    fn compile(&mut self, name: &str) -> Result<Compiled, ConfigError> {
        let raw = self.gate(name);
        let (on_pass, on_fail) = self
            .routes
            .get(name)
            .cloned()
            .unwrap_or((Action::Continue, Action::Block));
        let here = [Step::Key("gates"), Step::Key(name)];
        let spec = match raw.and_then(|g| g.command.as_deref()) {
            Some(command) => {
                let kind = if name.to_ascii_lowercase().contains("test") {
                    RuleKind::Test
                } else {
                    RuleKind::Lint
                };
                let mut spec = GateSpec::new(name.to_owned(), kind);
                spec.run = command_argv(command).ok().map(Argv);
                spec
            }
            None => {
                let (plugin, builtin) = match raw.map(|g| (&g.plugin, &g.gate)) {
                    Some((Some(plugin), Some(gate))) => (Some(plugin.as_str()), gate.as_str()),
                    _ => (None, name),
                };
                if builtin == PLAN_COMPLIANCE {
                    GateSpec::new(name.to_owned(), RuleKind::Status)
                } else if let Some(plugin) = plugin {
                    return Err(self.file.error(
                        &here,
                        Aim::Key,
                        format!("gate `{name}` runs gate `{builtin}` of plugin `{plugin}`, which validator cannot reach"),
                        format!("copy that gate's `command` from {plugin}'s hooks/gates.json into this gate, in place of `plugin` and `gate`"),
                    ));
                } else if CONTEXT_BUILTINS.contains(&builtin) {
                    return Err(self.file.error(
                        &here,
                        Aim::Key,
                        format!("gate `{name}` is a built-in of the hook runner that adds context or checks the runner itself; it judges nothing, and validator does not have it"),
                        "take it out of the Stop and SubagentStop gate lists (and the jumps to it), or give it a `command`",
                    ));
                } else {
                    return Err(self.file.error(
                        &here,
                        Aim::Key,
                        format!("gate `{name}` has no `command`, and `{name}` is no built-in validator knows (it has `plan-compliance`)"),
                        "add \"command\": \"…\" with the program to run; a TypeScript gate of your runner has to become a command, e.g. \"node gates/check.js\"",
                    ));
                }
            }
        };
        if raw.is_some_and(|gate| gate.file_patterns.is_some()) {
            self.notes.push(format!(
                "gate `{name}`: `file_patterns` filters PostToolUse only; on a stop the gate always runs"
            ));
        }
        let rule = Rule::from_spec(&spec, Path::new("."))
            .map_err(|err| self.file.error(&here, Aim::Key, err.message, err.help))?;
        Ok(Compiled {
            rule,
            about: raw
                .and_then(|g| g.description.as_deref())
                .map(str::trim)
                .filter(|d| !d.is_empty())
                .map(str::to_owned),
            definition: serde_json::to_string(&spec).unwrap_or_default(),
            on_pass,
            on_fail,
        })
    }

    /// The pipeline of one stop hook: each entry of its list followed by the gates it can jump
    /// to (in the order a run meets them, passes first), each entry's CONTINUE leading to the
    /// next entry and the last one's to the end.
    fn pipeline(
        &self,
        stop: &StopHook<'a>,
        compiled: &HashMap<String, Compiled>,
    ) -> Result<Pipeline, ConfigError> {
        let mut segments: Vec<Vec<&str>> = Vec::new();
        let mut total = 0;
        for head in &stop.gates {
            let segment = reach(head, compiled);
            total += segment.len();
            segments.push(segment);
            if total > MAX_GATES {
                return Err(self.file.error(
                    &[Step::Key("hooks"), Step::Key(stop.event), Step::Key("gates")],
                    Aim::Key,
                    format!(
                        "the {} hook expands to more than {MAX_GATES} gates (each gate in its list brings every gate it can jump to)",
                        stop.event
                    ),
                    "list fewer gates, or shorten the chains of jumps",
                ));
            }
        }
        let mut starts = Vec::with_capacity(segments.len());
        let mut start = 0;
        for segment in &segments {
            starts.push(start);
            start += segment.len();
        }
        let mut copies: HashMap<&str, usize> = HashMap::new();
        let mut gates = Vec::with_capacity(total);
        for (s, segment) in segments.iter().enumerate() {
            let position: HashMap<&str, usize> = segment
                .iter()
                .enumerate()
                .map(|(p, name)| (*name, starts[s] + p))
                .collect();
            let next_entry = starts.get(s + 1).copied();
            for name in segment {
                let Some(gate) = compiled.get(*name) else {
                    continue;
                };
                let index = gates.len();
                let route = |action: &Action| match action {
                    Action::Block => Route::Block,
                    Action::Stop => Route::Stop,
                    Action::Jump(target) => position
                        .get(target.as_str())
                        .map_or(Route::Block, |&to| Route::Goto(to)),
                    Action::Continue => match next_entry {
                        Some(next) if next == index + 1 => Route::Continue,
                        Some(next) => Route::Goto(next),
                        None if index + 1 == total => Route::Continue,
                        None => Route::Pass,
                    },
                };
                let copy = copies.entry(name).or_insert(0);
                *copy += 1;
                gates.push(Gate {
                    name: match *copy {
                        1 => (*name).to_owned(),
                        n => format!("{name}#{n}"),
                    },
                    rule: gate.rule.clone(),
                    on_pass: route(&gate.on_pass),
                    on_fail: route(&gate.on_fail),
                    timeout: None,
                    about: gate.about.clone(),
                    inputs: None,
                    only_if: None,
                    unless: None,
                    group: None,
                    definition: gate.definition.clone(),
                });
            }
        }
        Ok(Pipeline {
            name: stop.event.to_owned(),
            tasks: Vec::new(),
            task_matcher: GlobSet::empty(),
            gates,
            jobs: 1,
            fail_fast: false,
        })
    }
}

/// `head` and every gate it can jump to, depth first with the pass route first, so a chain of
/// passes stays in order.
fn reach<'c>(head: &'c str, compiled: &'c HashMap<String, Compiled>) -> Vec<&'c str> {
    let mut order = Vec::new();
    let mut seen = HashSet::new();
    let mut stack = vec![head];
    while let Some(name) = stack.pop() {
        if !seen.insert(name) {
            continue;
        }
        order.push(name);
        if let Some(gate) = compiled.get(name) {
            for action in [&gate.on_fail, &gate.on_pass] {
                if let Action::Jump(target) = action {
                    if !seen.contains(target.as_str()) {
                        stack.push(target);
                    }
                }
            }
        }
    }
    order
}

/// Keys that comment the file rather than configure anything (here and in the hook runner's
/// own dialect, whose example files carry them too).
pub(super) fn is_comment(key: &str) -> bool {
    key.starts_with(['$', '_', '/', '#'])
        || key.starts_with("comment")
        || matches!(
            key,
            "description"
                | "note"
                | "notes"
                | "version"
                | "schema_version"
                | "generated"
                | "manifestHash"
                | "repo"
                | "project"
                | "name"
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse_at(name: &str, source: &str) -> Result<Rules, ConfigError> {
        Rules::parse(&Path::new("/nowhere/.claude").join(name), source)
    }

    fn parse(source: &str) -> Result<Rules, ConfigError> {
        parse_at("gates.json", source)
    }

    fn rules(value: serde_json::Value) -> Rules {
        parse(&serde_json::to_string_pretty(&value).unwrap()).unwrap()
    }

    fn err(value: serde_json::Value) -> ConfigError {
        parse(&serde_json::to_string_pretty(&value).unwrap()).unwrap_err()
    }

    /// Each gate as `name: pass -> target, fail -> target`, where a target is a gate name,
    /// `next`, `end` or a routing word.
    fn graph(pipeline: &Pipeline) -> Vec<String> {
        let target = |i: usize, route: Route| match route {
            Route::Continue if i + 1 < pipeline.gates.len() => {
                format!("next {}", pipeline.gates[i + 1].name)
            }
            Route::Continue => "end".to_owned(),
            Route::Goto(to) => pipeline.gates[to].name.clone(),
            other => format!("{other:?}").to_uppercase(),
        };
        pipeline
            .gates
            .iter()
            .enumerate()
            .map(|(i, g)| {
                format!(
                    "{}: pass -> {}, fail -> {}",
                    g.name,
                    target(i, g.on_pass),
                    target(i, g.on_fail)
                )
            })
            .collect()
    }

    fn seed() -> serde_json::Value {
        json!({
            "gates": {
                "check": {"description": "Run quality checks", "command": "mise run check", "on_pass": "test", "on_fail": "BLOCK"},
                "test": {"description": "Run tests", "command": "mise run test", "on_pass": "CONTINUE", "on_fail": "BLOCK"}
            },
            "hooks": {
                "SubagentStop": {"enabled_agents": ["general-purpose", "cipherpowers:rust-agent"], "gates": ["check"]}
            }
        })
    }

    #[test]
    fn the_seed_file_becomes_a_subagent_stop_pipeline_with_defaults() {
        let rules = rules(seed());
        assert_eq!(rules.pipelines.len(), 1);
        let pipeline = &rules.pipelines[0];
        assert_eq!(pipeline.name, "SubagentStop");
        assert!(pipeline.applies_to("any-task"));
        assert_eq!(
            graph(pipeline),
            [
                "check: pass -> test, fail -> BLOCK",
                "test: pass -> end, fail -> BLOCK"
            ]
        );
        assert_eq!(pipeline.gates[0].kind(), RuleKind::Lint);
        assert_eq!(pipeline.gates[1].kind(), RuleKind::Test);
        assert_eq!(
            pipeline.gates[0].about.as_deref(),
            Some("Run quality checks")
        );
        assert_eq!(
            rules.hooks,
            [HookBinding {
                event: "SubagentStop".into(),
                pipeline: "SubagentStop".into(),
                agents: vec!["general-purpose".into(), "cipherpowers:rust-agent".into()],
            }]
        );
        assert_eq!(rules.staging, Path::new("/nowhere/.claude/staging"));
        assert_eq!(rules.verdicts, rules.staging);
        assert_eq!(rules.state, Path::new("/nowhere/.claude/.validator"));
        assert_eq!(rules.defaults, Defaults::default());
        assert!(rules.notes.is_empty(), "{:?}", rules.notes);
    }

    #[test]
    fn continue_after_a_jump_returns_to_the_hooks_list() {
        let rules = rules(json!({
            "gates": {
                "format": {"command": "fmt", "on_pass": "check", "on_fail": "explain"},
                "check": {"command": "check"},
                "explain": {"command": "explain", "on_pass": "BLOCK"},
                "lint": {"command": "lint", "on_fail": "STOP"}
            },
            "hooks": {"Stop": {"gates": ["format", "lint"]}}
        }));
        assert_eq!(
            graph(&rules.pipelines[0]),
            [
                "format: pass -> check, fail -> explain",
                "check: pass -> lint, fail -> BLOCK",
                "explain: pass -> BLOCK, fail -> BLOCK",
                "lint: pass -> end, fail -> STOP",
            ]
        );
    }

    #[test]
    fn a_gate_reached_from_two_entries_runs_in_each_place() {
        // As the runner does: `check` calls `test`, then the list goes on to its own `test`.
        let rules = rules(json!({
            "gates": {
                "check": {"command": "check", "on_pass": "test"},
                "test": {"command": "test", "on_fail": "CONTINUE"}
            },
            "hooks": {"Stop": {"gates": ["check", "test"]}}
        }));
        assert_eq!(
            graph(&rules.pipelines[0]),
            [
                "check: pass -> test, fail -> BLOCK",
                "test: pass -> next test#2, fail -> next test#2",
                "test#2: pass -> end, fail -> end",
            ]
        );
    }

    #[test]
    fn continue_from_a_branch_skips_the_rest_of_its_entry() {
        let rules = rules(json!({
            "gates": {
                "a": {"command": "a", "on_fail": "fix"},
                "fix": {"command": "fix"},
                "b": {"command": "b", "on_fail": "fix"}
            },
            "hooks": {"Stop": {"gates": ["a", "b"]}}
        }));
        assert_eq!(
            graph(&rules.pipelines[0]),
            [
                "a: pass -> b, fail -> fix",
                "fix: pass -> next b, fail -> BLOCK",
                "b: pass -> PASS, fail -> fix#2",
                "fix#2: pass -> end, fail -> BLOCK",
            ]
        );
    }

    #[test]
    fn stop_comes_first_whatever_the_file_order() {
        let rules = rules(json!({
            "gates": {"check": {"command": "check"}},
            "hooks": {"SubagentStop": {"gates": ["check"]}, "Stop": {"enabled_agents": ["x"], "gates": ["check"]}}
        }));
        let names: Vec<&str> = rules.pipelines.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["Stop", "SubagentStop"]);
        assert!(rules.hooks[0].agents.is_empty(), "Stop has no agent type");
        assert!(
            rules.notes[0].contains("hooks.Stop.enabled_agents has no effect"),
            "{:?}",
            rules.notes
        );
    }

    #[test]
    fn plain_commands_run_without_a_shell_and_shell_syntax_with_one() {
        assert_eq!(
            command_argv("mise run check").unwrap(),
            ["mise", "run", "check"]
        );
        assert_eq!(
            command_argv("python3 -c 'import calc'").unwrap(),
            ["python3", "-c", "import calc"]
        );
        for shell in [
            "npm run lint && npm test",
            "cargo test 2>&1",
            "ls *.py",
            "echo $HOME",
            "RUST_LOG=debug cargo test",
            "a | b",
            "echo '[PLACEHOLDER] passed'",
        ] {
            assert_eq!(
                command_argv(shell).unwrap(),
                ["/bin/sh", "-c", shell],
                "{shell}"
            );
        }
        assert!(command_argv("echo 'open").is_err());
        assert!(command_argv("  ").is_err());
        let rules = rules(json!({
            "gates": {"check": {"command": "npm run lint && npm test"}},
            "hooks": {"Stop": {"gates": ["check"]}}
        }));
        assert!(
            rules.pipelines[0].gates[0]
                .definition
                .contains(r#"["/bin/sh","-c","npm run lint && npm test"]"#),
            "{}",
            rules.pipelines[0].gates[0].definition
        );
    }

    #[test]
    fn plan_compliance_is_the_status_rule_defined_or_not() {
        let listed = rules(json!({
            "gates": {"check": {"command": "check"}},
            "hooks": {"SubagentStop": {"gates": ["plan-compliance", "check"]}}
        }));
        let gates = &listed.pipelines[0].gates;
        assert_eq!(gates[0].kind(), RuleKind::Status);
        assert_eq!(
            graph(&listed.pipelines[0])[0],
            "plan-compliance: pass -> next check, fail -> BLOCK"
        );
        let defined = rules(json!({
            "gates": {
                "plan-compliance": {"description": "Verify work follows the active plan", "on_fail": "STOP"},
                "compliance": {"plugin": "cipherpowers", "gate": "plan-compliance"}
            },
            "hooks": {"SubagentStop": {"gates": ["plan-compliance", "compliance"]}}
        }));
        let gates = &defined.pipelines[0].gates;
        assert_eq!(gates[0].on_fail, Route::Stop);
        assert_eq!(gates[1].kind(), RuleKind::Status);
    }

    #[test]
    fn other_events_are_left_to_the_runner_with_a_note() {
        let mut file = seed();
        file["hooks"]["UserPromptSubmit"] = json!({"gates": ["commands"]});
        file["hooks"]["PostToolUse"] = json!({"enabled_tools": ["Edit"], "gates": ["check"]});
        file["hooks"]["Stop"] = json!({"enabled": false, "gates": ["check"]});
        file["gates"]["commands"] = json!({"description": "context", "keywords": ["x"]});
        file["gates"]["test"]["keywords"] = json!(["test"]);
        let rules = rules(file);
        assert_eq!(rules.pipelines.len(), 1);
        // The runner's `commands` built-in is validator's brief, given with the prompt.
        assert_eq!(
            rules.prompt,
            Some(PromptHook {
                pipeline: None,
                keywords: Vec::new(),
                commands: true
            })
        );
        let notes = rules.notes.join("\n");
        for expected in [
            "hooks.PostToolUse (check) is neither a stop nor the prompt",
            "hooks.Stop is off",
            "gate `test`: `keywords` filters UserPromptSubmit only",
        ] {
            assert!(notes.contains(expected), "{expected}\n{notes}");
        }
    }

    #[test]
    fn unknown_keys_point_at_the_key_with_a_suggestion() {
        let source = "{\n  \"gates\": {\n    \"check\": {\n      \"command\": \"x\",\n      \"on_fial\": \"BLOCK\"\n    }\n  }\n}\n";
        let err = parse(source).unwrap_err();
        assert_eq!(err.file, Path::new("/nowhere/.claude/gates.json"));
        assert_eq!((err.line, err.column), (Some(5), Some(7)));
        assert!(
            err.message.starts_with("unknown field `on_fial`"),
            "{}",
            err.message
        );
        assert_eq!(err.help.as_deref(), Some("did you mean `on_fail`?"));
    }

    #[test]
    fn syntax_errors_keep_their_place_and_say_what_json_allows() {
        let err = parse("{\n  \"gates\": {\"check\": {\"command\": \"x\",}}\n}").unwrap_err();
        assert_eq!(err.line, Some(2));
        assert!(err.message.contains("trailing comma"), "{}", err.message);
        let err = parse("{\n  \"gates\": {\n    \"check\": {\"command\": \"x\"}  // lint\n  }\n}")
            .unwrap_err();
        assert_eq!(err.line, Some(3));
        assert_eq!(
            err.help.as_deref(),
            Some("JSON has no comments: remove the comment")
        );
    }

    #[test]
    fn routes_must_name_an_action_or_a_gate() {
        let mut file = seed();
        file["gates"]["check"]["on_pass"] = json!("tset");
        let err_at = err(file);
        assert_eq!((err_at.line, err_at.column), (Some(7), Some(18)));
        assert!(
            err_at.message.contains("no gate named `tset`"),
            "{}",
            err_at.message
        );
        assert_eq!(err_at.help.as_deref(), Some("did you mean `test`?"));

        let mut file = seed();
        file["gates"]["check"]["on_fail"] = json!("block");
        assert_eq!(
            err(file).help.as_deref(),
            Some("actions are upper case: write `BLOCK`")
        );
        let mut file = seed();
        file["gates"]["check"]["on_pass"] = json!("PASS");
        assert!(
            err(file)
                .message
                .contains("`PASS` is not a gates.json action")
        );
    }

    #[test]
    fn hooks_must_list_defined_gates_under_known_events() {
        let mut file = seed();
        file["hooks"]["SubagentStop"]["gates"] = json!(["check", "lint"]);
        let err_at = err(file);
        assert_eq!((err_at.line, err_at.column), (Some(24), Some(9)));
        assert!(
            err_at
                .message
                .contains("lists gate `lint`, which this file does not define"),
            "{}",
            err_at.message
        );

        let mut file = seed();
        file["hooks"] = json!({"SubAgentStop": {"gates": ["check"]}});
        let err_at = err(file);
        assert!(
            err_at
                .message
                .contains("`SubAgentStop` is not a hook event")
        );
        assert_eq!(err_at.help.as_deref(), Some("did you mean `SubagentStop`?"));

        let mut file = seed();
        file["hooks"] = json!({"PostToolUse": {"gates": ["check"]}});
        assert!(
            err(file)
                .message
                .contains("no Stop, SubagentStop or UserPromptSubmit hook")
        );
        let mut file = seed();
        file.as_object_mut().unwrap().remove("hooks");
        assert!(
            err(file)
                .message
                .contains("no Stop, SubagentStop or UserPromptSubmit hook")
        );
        let mut file = seed();
        file["hooks"]["SubagentStop"]["gates"] = json!([]);
        assert!(err(file).message.contains("lists no gates"));
    }

    #[test]
    fn gates_without_a_command_must_be_plan_compliance() {
        let mut file = seed();
        file["gates"]["test"] = json!({"description": "a TypeScript gate"});
        let err_at = err(file);
        assert_eq!((err_at.line, err_at.column), (Some(9), Some(5)));
        assert!(
            err_at.message.contains("gate `test` has no `command`"),
            "{}",
            err_at.message
        );
        assert!(err_at.help.unwrap().contains("\"command\""));

        let mut file = seed();
        file["gates"]["commands"] = json!({"on_fail": "CONTINUE"});
        file["hooks"]["SubagentStop"]["gates"] = json!(["commands", "check"]);
        assert!(err(file).message.contains("built-in of the hook runner"));

        let mut file = seed();
        file["gates"]["test"] = json!({"plugin": "other", "gate": "test"});
        assert!(err(file).message.contains("gate `test` of plugin `other`"));

        // A gate no stop hook reaches is not translated, so it may be anything the runner has.
        let mut file = seed();
        file["gates"]["commands"] = json!({"description": "context injection"});
        file["hooks"]["UserPromptSubmit"] = json!({"gates": ["commands"]});
        assert!(parse(&file.to_string()).is_ok());
    }

    #[test]
    fn shapes_and_names_are_checked_for_every_gate() {
        let mut file = seed();
        file["gates"]["BLOCK"] = json!({"command": "x"});
        assert!(err(file).message.contains("`BLOCK` cannot name a gate"));
        let mut file = seed();
        file["gates"]["test"]["plugin"] = json!("cipherpowers");
        assert!(
            err(file)
                .message
                .contains("has both `command` and `plugin`/`gate`")
        );
        let mut file = seed();
        file["gates"]["test"]["command"] = json!("echo 'open");
        let err_at = err(file);
        assert_eq!(err_at.line, Some(10));
        assert!(err_at.message.contains("cannot read `command`"));
        let duplicate = "{\"gates\": {\"a\": {\"command\": \"x\"},\n \"a\": {\"command\": \"y\"}}}";
        let err_at = parse(duplicate).unwrap_err();
        assert_eq!((err_at.line, err_at.column), (Some(2), Some(2)));
        assert!(err_at.message.contains("`a` is given twice"));
    }

    #[test]
    fn chains_are_bounded() {
        let mut gates = serde_json::Map::new();
        for i in 0..40 {
            gates.insert(
                format!("g{i}"),
                json!({"command": "x", "on_fail": format!("g{}", (i + 1) % 40)}),
            );
        }
        let list: Vec<String> = (0..40).map(|i| format!("g{i}")).collect();
        let err_at = err(json!({"gates": gates, "hooks": {"Stop": {"gates": list}}}));
        assert!(
            err_at.message.contains("expands to more than 512 gates"),
            "{}",
            err_at.message
        );
    }

    #[test]
    fn json_is_recognised_by_name_or_by_a_brace_but_not_validator_rules_in_json() {
        let seed = seed().to_string();
        assert!(is_gates_json(Path::new("gates.json"), &seed));
        assert!(is_gates_json(Path::new("gates"), &seed));
        assert!(is_gates_json(Path::new("x.JSON"), "{ broken"));
        assert!(!is_gates_json(Path::new("rules.yaml"), "version: 1\n"));
        assert!(!is_gates_json(
            Path::new("rules"),
            "{version: 1, pipelines: []}"
        ));
        let validator_json = r#"{"version": 1, "pipelines": [{"name": "m", "gates": [{"name": "s", "rule": "status"}]}]}"#;
        assert!(!is_gates_json(Path::new("validator.json"), validator_json));
        assert!(parse_at("validator.json", validator_json).is_ok());
    }
}
