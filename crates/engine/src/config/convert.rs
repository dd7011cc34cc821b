//! `validator init --from FILE`: the gate files other runners read (usually a
//! `.claude/gates.json`), written as a validator.yaml. The shapes come from a survey of such
//! files in public repositories: commands as lists of objects (`name`/`id`/`label` with
//! `run`/`command`/`cmd`/`script`, a string or an argv list), `[name, argv]` pairs or maps of
//! names to commands become `lint` and `test` gates; `ban_patterns` become `content` gates,
//! `coverage_rules` `co-change` gates, a `require_run` command a gate; protected and denied
//! paths a `file-scope` gate. What has no equivalent is listed at the top of the file with
//! why, never dropped silently. The hook runner's own dialect (which `-c gates.json` also
//! reads as it is) is loaded as `check` loads it and its pipelines written out, so the file
//! can grow the rules only a validator.yaml has.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Map, Value};

use super::Route;

/// A converted file: the validator.yaml text and what it could not carry over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Converted {
    pub yaml: String,
    pub left_out: Vec<String>,
    /// What became gates, counted: "3 commands, 1 ban pattern".
    pub summary: String,
}

/// Keys that hold commands under a name of the command's own.
const COMMAND_KEYS: [&str; 6] = ["run", "command", "cmd", "script", "argv", "npm"];
/// Keys that name a gate.
const NAME_KEYS: [&str; 4] = ["name", "id", "label", "title"];
/// The words a top-level key is made of when it holds commands to run (`"lint"`,
/// `"fast_tests"`, `"stopChecks"`, `"legs"`): a key is read as commands only when every one of
/// its words is one of these, so `forbidden_bash`, `never_run` or `dangerous_tests` (a list of
/// commands the agent must not run looks exactly like a list of checks) never runs.
const COMMAND_WORDS: [&str; 31] = [
    "build",
    "check",
    "checks",
    "ci",
    "clippy",
    "cmd",
    "cmds",
    "command",
    "commands",
    "e2e",
    "fast",
    "fmt",
    "format",
    "full",
    "gate",
    "gates",
    "integration",
    "legs",
    "lint",
    "lints",
    "quick",
    "run",
    "script",
    "scripts",
    "smoke",
    "stop",
    "test",
    "tests",
    "typecheck",
    "unit",
    "verify",
];
/// Words that make a name a permission, not a check: a gate so named is not run, and a
/// top-level key so named that also names commands (`forbidden_bash`, `askCommands`) becomes
/// `tools.commands` rules.
const DENY_WORDS: [&str; 17] = [
    "ban",
    "banned",
    "blacklist",
    "block",
    "blocked",
    "blocklist",
    "dangerous",
    "denied",
    "deny",
    "denylist",
    "disallow",
    "disallowed",
    "forbid",
    "forbidden",
    "never",
    "prohibit",
    "prohibited",
];
const ASK_WORDS: [&str; 4] = ["ask", "approval", "confirm", "confirmation"];
const ALLOW_WORDS: [&str; 6] = [
    "allow",
    "allowed",
    "allowlist",
    "permit",
    "permitted",
    "whitelist",
];
/// Words that make a permission key one about commands (rather than paths or patterns).
const SHELL_WORDS: [&str; 9] = [
    "bash", "cmd", "cmds", "command", "commands", "exec", "run", "sh", "shell",
];
/// The longest timeout a rules file may give (a year, as `duration` allows).
const MAX_TIMEOUT_SECONDS: u64 = 365 * 24 * 3600;
/// Keys whose map of names to commands is the gates (a map elsewhere may hold set-up
/// commands or anything else).
const COMMAND_MAPS: [&str; 4] = ["gates", "commands", "checks", "scripts"];
/// Of those, the keys that say every entry is a check; under the others an entry is one
/// only if its name says so.
const CHECK_MAPS: [&str; 2] = ["gates", "checks"];
/// Keys of a gate that say when or where the other runner ran it, or what it needed first.
const SCHEDULING_KEYS: [&str; 20] = [
    "band",
    "exclude",
    "paths",
    "fileGlob",
    "applies_to",
    "exempt",
    "watch",
    "when_changed",
    "match",
    "trigger",
    "scope",
    "stages",
    "stage",
    "tier",
    "needs",
    "after",
    "requires",
    "needsBuild",
    "changed_run",
    "platforms",
];
/// The keys of a command object the conversion reads; any other is listed as not carried
/// over.
const READ_GATE_KEYS: [&str; 26] = [
    "required",
    "enabled",
    "name",
    "id",
    "label",
    "title",
    "run",
    "command",
    "cmd",
    "script",
    "argv",
    "npm",
    "args",
    "timeout",
    "timeout_seconds",
    "timeoutSec",
    "timeoutMs",
    "fix",
    "cwd",
    "dir",
    "env",
    "environment",
    "allowFailure",
    "blocking",
    "level",
    "severity",
];
/// Keys of a command object that describe it or check its output, which the conversion knows
/// and lists as not carried over (the output checks) or leaves out (the descriptions).
const OTHER_GATE_KEYS: [&str; 10] = [
    "why",
    "doc",
    "docs",
    "rationale",
    "owner",
    "desc",
    "expect",
    "reject",
    "evidence",
    "evidence_pattern",
];
/// Keys of protected paths: the worker must not change what they match.
const READONLY_KEYS: [&str; 4] = [
    "protected_paths",
    "protectedPaths",
    "guardrails",
    "readonly",
];
/// Keys of denied paths: the worker must not write there at all.
const DENY_KEYS: [&str; 3] = ["denyPaths", "deny_paths", "secretPaths"];

/// Converts gates.json text read from `path`. `Err` says why the file cannot be converted.
pub fn from_gates_json(path: &Path, source: &str) -> Result<Converted, String> {
    let source = source.strip_prefix('\u{feff}').unwrap_or(source);
    let stripped;
    let (top, source): (Value, &str) = match serde_json::from_str(source) {
        Ok(top) => (top, source),
        Err(err) => {
            stripped = strip_line_comments(source);
            let top =
                serde_json::from_str(&stripped).map_err(|_| format!("it is not JSON: {err}"))?;
            (top, stripped.as_str())
        }
    };
    let mut out = Writer::default();
    match &top {
        Value::Array(items) => out.command_list("the top-level list", items, None),
        Value::Object(map) if is_hook_runner(map) => return from_hook_runner(path, source),
        Value::Object(map) => out.object(map),
        _ => return Err("it is neither a JSON object nor a list".into()),
    }
    if out.gates.is_empty() {
        return Err(format!(
            "nothing in it became a gate: validator reads commands (`gates`, `commands`, `legs`, ... as lists or maps), `ban_patterns`, `coverage_rules`, `require_run` and protected paths{}{}",
            match out.left_out.as_slice() {
                [] => String::new(),
                [first, rest @ ..] => format!(
                    "; {}{}",
                    one_line(first),
                    match rest.len() {
                        0 => String::new(),
                        n => format!(" (and {n} more)"),
                    }
                ),
            },
            match &top {
                Value::Object(map) if !map.is_empty() => format!(
                    "; its keys are {}",
                    map.keys()
                        .take(8)
                        .map(|k| format!("`{}`", one_line(k)))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                _ => String::new(),
            }
        ));
    }
    Ok(out.finish())
}

/// The cipherpowers/turboshovel dialect: `hooks`, or `gates` as a map of objects written only
/// in that runner's keys.
pub(super) fn is_hook_runner(top: &Map<String, Value>) -> bool {
    const RUNNER_KEYS: [&str; 9] = [
        "description",
        "command",
        "on_pass",
        "on_fail",
        "keywords",
        "file_patterns",
        "plugin",
        "gate",
        "comment",
    ];
    if top.get("hooks").is_some_and(Value::is_object) && top.get("gates").is_some() {
        return true;
    }
    let Some(Value::Object(gates)) = top.get("gates") else {
        return false;
    };
    !gates.is_empty()
        && gates.values().all(|gate| {
            gate.as_object().is_some_and(|gate| {
                gate.keys().all(|key| RUNNER_KEYS.contains(&key.as_str()))
                    && gate
                        .get("command")
                        .is_none_or(|command| command.is_string())
            })
        })
}

/// The hook runner's dialect, loaded exactly as `check -c gates.json` loads it: each stop
/// hook's pipeline, its gates with their routes, and the loader's notes as what was left out.
fn from_hook_runner(path: &Path, source: &str) -> Result<Converted, String> {
    let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    if let Some(refused) =
        other_dialect_error(path, source.strip_prefix('\u{feff}').unwrap_or(source))
    {
        return Err(refused.to_string());
    }
    let rules = super::gates_json::parse(path, source, dir).map_err(|err| err.to_string())?;
    let mut out = Writer::default();
    out.left_out.extend(rules.notes.iter().cloned());
    for binding in &rules.hooks {
        let agents = match binding.agents.as_slice() {
            [] => String::new(),
            agents => format!(" and only for the agent types {}", json(agents)),
        };
        out.left_out.push(format!(
            "the `{}` hook ran pipeline `{}`{agents}: a validator.yaml binds no events, so `validator hook` runs the first pipeline whose `tasks` match for every stop",
            one_line(&binding.event),
            one_line(&binding.pipeline),
        ));
    }
    let mut pipelines = Vec::new();
    for pipeline in &rules.pipelines {
        out.names.clear();
        let names: Vec<String> = pipeline
            .gates
            .iter()
            .map(|gate| out.name(&gate.name.replace('#', "-"), "gate"))
            .collect();
        let mut text = format!("  - name: {}\n    gates:\n", json(&pipeline.name));
        for (gate, name) in pipeline.gates.iter().zip(&names) {
            if let Some(about) = &gate.about {
                text.push_str(&format!("      # {}\n", comment(about)));
            }
            text.push_str(&format!("      - name: {name}\n"));
            let spec: Map<String, Value> =
                serde_json::from_str(&gate.definition).unwrap_or_default();
            for (key, value) in &spec {
                if value.is_null() || matches!(key.as_str(), "name" | "on_pass" | "on_fail") {
                    continue;
                }
                text.push_str(&format!("        {key}: {}\n", json(value)));
            }
            let route = |route: Route| match route {
                Route::Continue => "CONTINUE".to_owned(),
                Route::Block => "BLOCK".to_owned(),
                Route::Pass => "PASS".to_owned(),
                Route::Stop => "STOP".to_owned(),
                Route::Goto(index) => names.get(index).cloned().unwrap_or_else(|| "BLOCK".into()),
            };
            if gate.on_pass != Route::Continue {
                text.push_str(&format!("        on_pass: {}\n", route(gate.on_pass)));
            }
            if gate.on_fail != Route::Block {
                text.push_str(&format!("        on_fail: {}\n", route(gate.on_fail)));
            }
        }
        pipelines.push(text);
        out.kinds.push("hook pipeline");
    }
    Ok(out.finish_pipelines(&pipelines))
}

#[derive(Default)]
struct Writer {
    gates: Vec<String>,
    /// What each gate was in the other runner's file.
    kinds: Vec<&'static str>,
    names: Vec<String>,
    left_out: Vec<String>,
    /// Names a `required` list keeps blocking; the others of the file warn only.
    required: Option<BTreeSet<String>>,
    default_timeout: Option<u64>,
    readonly: Vec<String>,
    deny: Vec<String>,
    /// The `tools.commands` rules, each a line of YAML.
    tools: Vec<String>,
}

/// One command gate as the other runner wrote it.
struct Command<'a> {
    name: &'a str,
    argv: Vec<String>,
    timeout: Option<u64>,
    fix: Option<Vec<String>>,
    cwd: Option<&'a str>,
    env: Vec<(String, String)>,
    /// The other runner let it fail (`allowFailure`, `blocking: false`, `level: warn`).
    advisory: bool,
    /// Every name the file gives it (`name`, `id`, `label`, its key), for a `required` list.
    aliases: Vec<String>,
    /// A `require_run` command: a `required` list of commands never makes it optional.
    always_blocks: bool,
}

impl<'a> Command<'a> {
    fn new(name: &'a str, argv: Vec<String>) -> Self {
        Command {
            name,
            argv,
            timeout: None,
            fix: None,
            cwd: None,
            env: Vec::new(),
            advisory: false,
            aliases: vec![name.to_owned()],
            always_blocks: false,
        }
    }
}

impl Writer {
    fn object(&mut self, top: &Map<String, Value>) {
        self.default_timeout = top.get("timeout").and_then(Value::as_u64);
        let commands: BTreeSet<&str> = top
            .iter()
            .filter(|(_, value)| value.is_array() || value.is_object())
            .flat_map(|(_, value)| command_names(value))
            .collect();
        self.required_list(top, &commands);
        for (key, value) in top {
            let key = key.as_str();
            if super::gates_json::is_comment(key) {
                continue;
            }
            let taken = self.section(key, value)
                || self.paths(key, value)
                || self.command_rules(key, value)
                || self.commands(key, value, &commands);
            if !taken {
                self.other(key, value);
            }
        }
        self.scope_gate();
    }

    /// A `required` list makes the others warn only, if it names this file's commands; a list
    /// of anything else (tools, versions) must not make every gate optional.
    fn required_list(&mut self, top: &Map<String, Value>, commands: &BTreeSet<&str>) {
        let Some((key, names)) = ["required", "requiredCommands", "required_gates"]
            .iter()
            .find_map(|key| Some((*key, top.get(*key)?.as_array()?)))
        else {
            return;
        };
        let names: BTreeSet<String> = names
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        if !names.is_empty() && names.iter().all(|name| commands.contains(name.as_str())) {
            self.required = Some(names);
        } else {
            self.left_out.push(format!(
                "`{key}` {}: it does not name this file's commands, so every gate blocks",
                json(&names)
            ));
        }
    }

    /// A top-level key with a meaning of its own (timeouts, bans, coverage); false if `key` is
    /// not one.
    fn section(&mut self, key: &str, value: &Value) -> bool {
        match (key, value) {
            ("timeout", Value::Number(_)) => {}
            ("required" | "requiredCommands" | "required_gates", Value::Array(_)) => {}
            ("ban_patterns", Value::Array(list)) => list.iter().for_each(|item| self.ban(item)),
            ("coverage_rules", Value::Array(list)) => {
                list.iter().for_each(|item| self.coverage(item))
            }
            ("coverage_rules", Value::Object(map)) => self.object_rules(map),
            ("require_run", Value::Array(list)) => {
                list.iter().for_each(|item| self.require_run(item))
            }
            _ => return false,
        }
        true
    }

    /// A top-level key that lists paths (protected, denied, asked about); false if `key` is
    /// not one.
    fn paths(&mut self, key: &str, value: &Value) -> bool {
        match (key, value) {
            ("askPaths" | "ask_paths", _) => self.left_out.push(format!(
                "`{key}` {}: the other runner asked a person before such an edit; validator judges the result, so add them to the `file-scope` gate's `readonly` if the worker must not change them",
                json(&strings(Some(value)))
            )),
            (_, Value::Array(_)) if READONLY_KEYS.contains(&key) => {
                let globs = self.globs(&format!("`{key}`"), &strings(Some(value)));
                self.readonly.extend(globs)
            }
            (_, Value::Array(_)) if DENY_KEYS.contains(&key) => {
                let globs = self.globs(&format!("`{key}`"), &strings(Some(value)));
                self.deny.extend(globs)
            }
            // `"gates": ["docs/adr/**", ".github/**"]`: protected paths, not commands.
            ("gates", Value::Array(list))
                if !list.is_empty()
                    && list.iter().all(|i| i.as_str().is_some_and(looks_like_path)) =>
            {
                let globs = self.globs("`gates`", &strings(Some(value)));
                self.readonly.extend(globs);
                self.left_out.push("`gates` is a list of paths: they became the `file-scope` gate's `readonly` (the worker must not change them); who may approve a change to them is not carried over".into());
            }
            _ => return false,
        }
        true
    }

    /// A top-level key that holds commands to run, or names some of them; false if `key` does
    /// not. Only a key whose words all say it holds checks to run ([`is_command_key`]) is
    /// read as commands: any other is listed, whatever its values look like.
    fn commands(&mut self, key: &str, value: &Value, commands: &BTreeSet<&str>) -> bool {
        let runs = is_command_key(key);
        match (key, value) {
            (_, Value::Array(list)) if runs && is_command_list(list) => {
                self.command_list(&format!("`{}`", one_line(key)), list, Some(key))
            }
            (_, Value::Object(map)) if COMMAND_MAPS.contains(&key) && is_command_map(map) => {
                self.command_map(key, map)
            }
            // `"fast": {"command": ["make", "check-fast"]}`
            (_, Value::Object(gate)) if runs && command_of(gate).is_some() => {
                self.command_object(Some(key), gate)
            }
            (_, Value::String(command)) if runs && looks_like_command(command) => {
                self.command_text(key, command)
            }
            // `"frontend_checks": ["npm ci", "npm run lint"]`: shell lines, one gate each.
            (_, Value::Array(list)) if runs && is_shell_lines(list) => {
                for line in list.iter().filter_map(Value::as_str) {
                    let mut gate = Command::new(line, shell(line));
                    // A line is not a name the file gives: its words say nothing of whether
                    // it is a check.
                    gate.aliases.clear();
                    self.command_argv(gate);
                }
                self.left_out.push(format!(
                    "`{}`: its commands became gates of the one pipeline; when the other runner ran them is not carried over",
                    one_line(key)
                ));
            }
            // `"fast": ["lint", "typecheck"]`: a subset of the gates, to run at times.
            (_, Value::Array(list))
                if !list.is_empty()
                    && list
                        .iter()
                        .all(|i| i.as_str().is_some_and(|n| commands.contains(n))) =>
            {
                self.left_out.push(format!(
                    "`{}` {}: a subset of the gates the other runner ran at times; validator runs the whole pipeline (write a second pipeline with these gates and pick it with `check --pipeline`)",
                    one_line(key),
                    json(&strings(Some(value)))
                ))
            }
            _ => return false,
        }
        true
    }

    /// A top-level key that says which commands the agent may not run (`forbidden_bash`,
    /// `deny_commands`) or only with a person's say (`ask_commands`): its entries become
    /// `tools.commands` rules, which `validator hook` applies to the agent's shell tool before
    /// a command runs. Never a gate: nothing of such a key runs. False if `key` is not one.
    fn command_rules(&mut self, key: &str, value: &Value) -> bool {
        let Some(decision) = command_permission(key) else {
            return false;
        };
        let place = format!("`{}`", one_line(key));
        let entries: Vec<&Value> = match value {
            Value::Array(list) => list.iter().collect(),
            Value::String(_) | Value::Object(_) => vec![value],
            Value::Null => return true,
            _ => {
                self.left_out.push(format!(
                    "{place}: not a list of commands, so no `tools.commands` rule was made of it"
                ));
                return true;
            }
        };
        let before = self.tools.len();
        for entry in entries {
            self.command_rule(&place, entry, decision);
        }
        let made = self.tools.len() - before;
        if made > 0 {
            self.left_out.push(format!(
                "{place}: how the other runner matched its entries (as text or a regular expression) is not carried over: {made} became `tools.commands` `{decision}` rule{}, which match a command's words (the program, then arguments in order, each a glob) wherever it appears in a shell line, and which only `validator hook` on the agent's pre-tool event applies",
                validator_text::plural(made)
            ));
        }
        true
    }

    /// One entry of a command permission list: a command as words (a string, or an object's
    /// `pattern`/`match`/`command` with its `reason`), or listed when it is not one.
    fn command_rule(&mut self, place: &str, entry: &Value, decision: &str) {
        let (written, reason) = match entry {
            Value::String(text) => (text.as_str(), None),
            Value::Object(rule) => {
                let text = |k: &str| rule.get(k).and_then(Value::as_str);
                match ["match", "pattern", "command", "cmd"]
                    .iter()
                    .find_map(|k| text(k))
                {
                    Some(written) => (
                        written,
                        ["reason", "message", "why"].iter().find_map(|k| text(k)),
                    ),
                    None => {
                        self.left_out
                            .push(format!("{place}: an entry without a command, left out"));
                        return;
                    }
                }
            }
            _ => {
                self.left_out
                    .push(format!("{place}: an entry that is not a command, left out"));
                return;
            }
        };
        match command_words(written) {
            Ok(pattern) => {
                let reason = reason.map_or_else(
                    || format!("the project's gates.json lists it under {place}"),
                    str::to_owned,
                );
                self.tools.push(format!(
                    "    - {{match: {}, decision: {decision}, reason: {}}}\n",
                    json(&pattern),
                    json(&reason)
                ));
                self.kinds.push(match decision {
                    "ask" => "command ask rule",
                    _ => "command deny rule",
                });
            }
            Err(why) => self.left_out.push(format!(
                "{place}: the entry `{}` {why}; write it as a `tools.commands` rule (its words, each a glob)",
                one_line(written)
            )),
        }
    }

    /// A top-level key validator has no use for: listed, unless it is empty.
    fn other(&mut self, key: &str, value: &Value) {
        match value {
            Value::Null => {}
            Value::Object(roles) if is_role_permissions(roles) => self.left_out.push(format!(
                "`{}`: write permissions per role; give each worker a handoff contract with its `files_owned` (README, \"Contracts\"), or a pipeline whose `tasks` match its workers with a `file-scope` gate's `allow`",
                one_line(key)
            )),
            _ if holds_commands(value) => self.left_out.push(format!(
                "`{}`: it holds commands, but its name does not say they are checks to run (a list of commands the agent must not run looks the same), so none of them became a gate; to run them, put them under `commands`",
                one_line(key)
            )),
            _ => self.left_out.push(format!(
                "`{}`: validator has no equivalent (it judges a worker's files and its stop, not its commands or edits as they happen)",
                one_line(key)
            )),
        }
    }

    /// `coverage_rules` as an object: `{"require_run": [{"command", "evidence"}]}`.
    fn object_rules(&mut self, rules: &Map<String, Value>) {
        for (key, value) in rules {
            match (key.as_str(), value) {
                ("require_run", Value::Array(list)) => {
                    list.iter().for_each(|item| self.require_run(item))
                }
                _ => self.left_out.push(format!(
                    "`coverage_rules.{}`: not a shape validator reads",
                    one_line(key)
                )),
            }
        }
    }

    fn command_list(&mut self, place: &str, items: &[Value], key: Option<&str>) {
        if !is_command_list(items) {
            self.left_out.push(format!(
                "{place}: its entries are not commands (no `run`, `command`, `cmd` or `script`), so there is nothing to run"
            ));
            return;
        }
        for item in items {
            match item {
                Value::Array(pair) => self.pair(pair),
                Value::Object(gate) => self.command_object(None, gate),
                _ => self.left_out.push(format!(
                    "{place}: an entry that is neither a command nor a [name, command] pair"
                )),
            }
        }
        if let Some(key) = key.filter(|k| !matches!(*k, "gates" | "commands" | "checks" | "legs")) {
            self.left_out.push(format!(
                "`{}`: its commands became gates of the one pipeline; when the other runner ran them (its own event or match) is not carried over",
                one_line(key)
            ));
        }
    }

    /// `{"lint": "npm run lint", "build": ""}` or `{"lint": {"command": ...}}`. Under `gates`
    /// or `checks` every entry is a check; under `scripts` or `commands` (everything a project
    /// can run: `deploy`, `release`, `clean`) only one whose name says so ([`is_command_key`]).
    fn command_map(&mut self, key: &str, map: &Map<String, Value>) {
        let all_checks = CHECK_MAPS.contains(&key);
        for (name, value) in map {
            if super::gates_json::is_comment(name) {
                if runnable(value) {
                    self.left_out.push(format!(
                        "`{}.{}`: read as a comment, as its name says; if it is a command, rename it",
                        one_line(key),
                        one_line(name)
                    ));
                }
                continue;
            }
            if !all_checks && !is_command_key(name) && !names_a_permission(name) && !value.is_null()
            {
                self.left_out.push(format!(
                    "`{}.{}`: `{}` holds what the project can run, and this name does not say it is a check (`{}` is left unrun); to run it as one, add it to a gate",
                    one_line(key),
                    one_line(name),
                    one_line(key),
                    one_line(&match value {
                        Value::Object(gate) => command_of(gate)
                            .map(|(_, command)| command_text(command))
                            .unwrap_or_default(),
                        other => command_text(other),
                    })
                ));
                continue;
            }
            match value {
                Value::String(command) => self.command_text(name, command),
                Value::Object(gate) if command_of(gate).is_some() => {
                    self.command_object(Some(name), gate)
                }
                Value::Array(argv) if argv.is_empty() => self.left_out.push(format!(
                    "gate `{}`: its command is empty (not configured)",
                    one_line(name)
                )),
                Value::Array(argv) if argv.iter().all(Value::is_string) => {
                    self.command_argv(Command::new(name, strings(Some(value))))
                }
                Value::Null => self.left_out.push(format!(
                    "`{}.{}`: not configured (null)",
                    one_line(key),
                    one_line(name)
                )),
                _ => self.left_out.push(format!(
                    "`{}.{}`: not a command",
                    one_line(key),
                    one_line(name)
                )),
            }
        }
    }

    /// `[name, [argv...]]` or `[name, "command"]`.
    fn pair(&mut self, pair: &[Value]) {
        let name = pair.first().and_then(Value::as_str).unwrap_or("gate");
        match pair.get(1) {
            Some(Value::Array(argv)) if !argv.is_empty() && argv.iter().all(Value::is_string) => {
                self.command_argv(Command::new(name, strings(pair.get(1))))
            }
            Some(Value::String(command)) => self.command_text(name, command),
            _ => self
                .left_out
                .push(format!("gate `{}`: no command", one_line(name))),
        }
    }

    /// A name and a shell line; an empty line is the other runner's "not configured".
    fn command_text(&mut self, name: &str, command: &str) {
        if command.trim().is_empty() {
            self.left_out.push(format!(
                "gate `{}`: its command is empty (not configured)",
                one_line(name)
            ));
            return;
        }
        self.command_argv(Command::new(name, shell(command)));
    }

    fn command_object(&mut self, key: Option<&str>, gate: &Map<String, Value>) {
        let name = NAME_KEYS
            .iter()
            .find_map(|k| gate.get(*k).and_then(Value::as_str))
            .or(key)
            .unwrap_or("gate");
        let Some((field, command)) = command_of(gate) else {
            self.left_out
                .push(format!("gate `{}`: no command", one_line(name)));
            return;
        };
        // A key the conversion does not know may say the command is not to be run
        // (`"action": "deny"`, `"allowed": false`): such a gate is not carried over.
        let unknown = unknown_gate_keys(gate);
        if !unknown.is_empty() {
            self.left_out.push(format!(
                "gate `{}`: its {} not one validator knows, and may say the command is not a check to run (`{}` is left unrun)",
                one_line(name),
                match unknown.as_slice() {
                    [one] => format!("key `{}` is", one_line(one)),
                    many => format!(
                        "keys {} are",
                        many.iter()
                            .map(|k| format!("`{}`", one_line(k)))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                },
                one_line(&command_text(command))
            ));
            return;
        }
        if gate.get("enabled") == Some(&Value::Bool(false)) {
            self.left_out.push(format!(
                "gate `{}`: disabled (`enabled: false`) in the other runner, so not carried over",
                one_line(name)
            ));
            return;
        }
        let mut nested = None;
        let argv = match command {
            Value::String(script) if field == "npm" => {
                vec!["npm".to_owned(), "run".to_owned(), script.clone()]
            }
            Value::String(line) if line.trim().is_empty() => {
                self.command_text(name, line);
                return;
            }
            Value::String(line) => match gate.get("args").and_then(Value::as_array) {
                // `{"script": "tools/gate.sh", "args": ["--strict"]}`
                Some(args) if field == "script" => {
                    let mut argv = shell(&format!("{line} \"$@\""));
                    argv.push("sh".into());
                    argv.extend(args.iter().filter_map(Value::as_str).map(str::to_owned));
                    argv
                }
                _ => shell(line),
            },
            Value::Array(_) => strings(Some(command)),
            Value::Object(inner) => {
                nested = Some(inner);
                strings(inner.get("argv"))
            }
            _ => Vec::new(),
        };
        if argv.is_empty() {
            self.left_out
                .push(format!("gate `{}`: an empty command", one_line(name)));
            return;
        }
        let command = with_settings(Command::new(name, argv), key, gate, nested);
        self.scheduling_left_out(name, gate);
        self.command_argv(command);
    }

    /// The keys of a command object that say when the other runner ran it, or that
    /// validator does not read, are listed as not carried over.
    fn scheduling_left_out(&mut self, name: &str, gate: &Map<String, Value>) {
        let scheduling: Vec<&str> = gate
            .keys()
            .map(String::as_str)
            .filter(|k| {
                !READ_GATE_KEYS.contains(k)
                    && !super::gates_json::is_comment(k)
                    && !OTHER_GATE_KEYS[..6].contains(k)
            })
            .collect();
        if scheduling.is_empty() {
            return;
        }
        self.left_out.push(format!(
            "gate `{}`: {} not carried over ({})",
            one_line(name),
            scheduling
                .iter()
                .map(|k| format!("`{}`", one_line(k)))
                .collect::<Vec<_>>()
                .join(", "),
            if scheduling.iter().all(|k| SCHEDULING_KEYS.contains(k)) {
                "validator runs every gate of the pipeline on each stop, in order"
            } else {
                "validator judges a command by its exit status: check the gate means the same without them"
            }
        ));
    }

    fn command_argv(&mut self, command: Command<'_>) {
        // A gate named as a permission (`"deny": "git push --force"` in a map of commands)
        // lists what must not run, not a check.
        if let Some(alias) = command
            .aliases
            .iter()
            .find(|alias| names_a_permission(alias))
        {
            self.left_out.push(format!(
                "`{}`: its name says it is a permission, not a check to run (`{}` is left unrun); to refuse such commands, write a `tools.commands` rule",
                one_line(alias),
                one_line(&match command.argv.as_slice() {
                    [sh, c, line] if sh == "sh" && c == "-c" => line.clone(),
                    argv => shell_words::join(argv),
                })
            ));
            return;
        }
        let gate = self.name(command.name, "gate");
        let testing = |word: &str| word.to_ascii_lowercase().contains("test");
        let rule = if testing(command.name) || command.argv.iter().any(|w| testing(w)) {
            "test"
        } else {
            "lint"
        };
        let mut text = format!(
            "      - name: {gate}\n        rule: {rule}\n        run: {}\n",
            json(&command.argv)
        );
        match command.timeout.or(self.default_timeout).filter(|&s| s > 0) {
            Some(seconds) if seconds > MAX_TIMEOUT_SECONDS => self.left_out.push(format!(
                "gate `{gate}`: its timeout of {seconds} s is past validator's longest (a year); it has the default"
            )),
            Some(seconds) => text.push_str(&format!("        timeout: {seconds}s\n")),
            None => {}
        }
        if let Some(cwd) = command.cwd {
            text.push_str(&format!("        cwd: {}\n", json(cwd)));
        }
        if !command.env.is_empty() {
            let vars: Map<String, Value> = command
                .env
                .into_iter()
                .map(|(var, value)| (var, Value::String(value)))
                .collect();
            text.push_str(&format!("        env: {}\n", json(&vars)));
        }
        if let Some(fix) = command.fix {
            text.push_str(&format!("        fix: {}\n", json(&fix)));
        }
        let optional = !command.always_blocks
            && self.required.as_ref().is_some_and(|required| {
                !command.aliases.iter().any(|alias| required.contains(alias))
            });
        if command.advisory || optional {
            text.push_str("        on_fail: CONTINUE  # the other runner did not block on it\n");
        }
        self.gates.push(text);
        self.kinds.push("command");
    }

    /// A unique gate name from `name`: letters, digits, `-`, `_` and `.` only.
    fn name(&mut self, name: &str, fallback: &str) -> String {
        let mut base: String = name
            .trim()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect();
        while base.contains("--") {
            base = base.replace("--", "-");
        }
        base = base.trim_matches('-').to_owned();
        if base.is_empty() || matches!(base.as_str(), "continue" | "block" | "pass" | "stop") {
            base = fallback.to_owned();
        }
        base.truncate(60);
        let mut unique = base.clone();
        let mut n = 2;
        while self.names.contains(&unique) {
            unique = format!("{base}-{n}");
            n += 1;
        }
        self.names.push(unique.clone());
        unique
    }

    fn ban(&mut self, item: &Value) {
        let text = |key: &str| item.get(key).and_then(Value::as_str);
        let Some(written) = text("pattern") else {
            self.left_out.push("a ban pattern without `pattern`".into());
            return;
        };
        // JavaScript's flags: `i`, `m`, `s` are inline flags here; `g`, `u`, `y` change
        // nothing about whether a file matches.
        let flags = text("flags").unwrap_or_default();
        if let Some(flag) = flags.chars().find(|f| !"imsguy".contains(*f)) {
            self.left_out.push(format!(
                "ban pattern `{}`: its flag `{flag}` has no equivalent",
                one_line(written)
            ));
            return;
        }
        let inline: String = flags.chars().filter(|f| "ims".contains(*f)).collect();
        let pattern = if inline.is_empty() {
            written.to_owned()
        } else {
            format!("(?{inline}){written}")
        };
        if let Err(why) = compiles(&pattern) {
            self.left_out.push(format!(
                "ban pattern `{}`: validator's regex syntax refuses it ({why}); write it without look-around or back-references",
                one_line(written),
            ));
            return;
        }
        let mut written_files = strings(
            item.get("globs")
                .or_else(|| item.get("files"))
                .or_else(|| item.get("paths")),
        );
        written_files.extend(
            text("scope")
                .filter(|s| looks_like_path(s))
                .map(str::to_owned),
        );
        let place = format!("ban pattern `{}`", one_line(written));
        let mut files = self.globs(&place, &written_files);
        if files.is_empty() {
            if !written_files.is_empty() {
                return; // every glob was listed: a gate over every file would judge other files
            }
            files.push("**/*".to_owned());
        }
        let written_exclude = strings(
            item.get("exclude_globs")
                .or_else(|| item.get("exclude"))
                .or_else(|| item.get("exclude_paths")),
        );
        let exclude = self.globs(&place, &written_exclude);
        let gate = self.name(
            text("id").unwrap_or(&format!("ban-{}", self.gates.len() + 1)),
            "ban",
        );
        let message = text("message").unwrap_or(written);
        let mut gate_text = format!(
            "      - name: {gate}\n        rule: content\n        files: {}\n",
            json(&files)
        );
        if !exclude.is_empty() {
            gate_text.push_str(&format!("        exclude: {}\n", json(&exclude)));
        }
        gate_text.push_str(&format!(
            "        ban: [{{pattern: {}, message: {}}}]\n",
            json(&pattern),
            json(message),
        ));
        self.gates.push(gate_text);
        self.kinds.push("ban pattern");
        if let Some(marker) = text("override") {
            self.left_out.push(format!(
                "ban pattern `{}`: its override comment `{}` (a `content` ban has none: narrow `files` or `exclude` instead)",
                one_line(written),
                one_line(marker)
            ));
        }
    }

    fn coverage(&mut self, item: &Value) {
        let list = |keys: &[&str]| {
            keys.iter()
                .map(|key| strings(item.get(*key)))
                .find(|found| !found.is_empty())
                .unwrap_or_default()
        };
        let mut when = list(&["when_changed", "when_paths_match", "when"]);
        when.extend(
            item.get("scope")
                .and_then(Value::as_str)
                .filter(|s| looks_like_path(s))
                .map(str::to_owned),
        );
        let then = list(&[
            "require_changed",
            "require_paths_match",
            "requires_one_of",
            "then",
        ]);
        let place = format!("coverage rule over {}", json(&when));
        let when = self.globs(&place, &when);
        let then = self.globs(&place, &then);
        if item.get("require_run").is_some() {
            self.require_run(item);
            return;
        }
        if when.is_empty() || then.is_empty() {
            let what = if when.is_empty() {
                "no `when_changed`"
            } else {
                "no `require_changed`: the other runner asked only for its skip comment on such a change, which validator has no rule for"
            };
            self.left_out
                .push(format!("coverage rule over {}: {what}", json(&when)));
            return;
        }
        let gate = match item.get("id").and_then(Value::as_str) {
            Some(id) => self.name(id, "co-change"),
            None => self.name(&format!("co-change-{}", self.gates.len() + 1), "co-change"),
        };
        let mut text = format!(
            "      - name: {gate}\n        rule: co-change\n        when: {}\n        then: {}\n",
            json(&when),
            json(&then)
        );
        // `// no-engine-test-impact: <≥10 word reason>`: the marker is what comes before the
        // placeholder; the placeholder may say how many words.
        let skip = ["or_explicit_skip", "override", "override_tag"]
            .iter()
            .find_map(|key| item.get(*key).and_then(Value::as_str));
        if let Some(skip) = skip {
            let marker = skip.split(['<', '‹']).next().unwrap_or(skip).trim();
            if !marker.is_empty() {
                text.push_str(&format!("        skip_marker: {}\n", json(marker)));
                let words = item
                    .get("min_reason_words")
                    .and_then(Value::as_u64)
                    .and_then(|n| u32::try_from(n).ok())
                    .or_else(|| {
                        let rest = skip.split(['<', '‹']).nth(1)?;
                        let digits: String = rest
                            .chars()
                            .skip_while(|c| !c.is_ascii_digit())
                            .take_while(char::is_ascii_digit)
                            .collect();
                        digits.parse::<u32>().ok()
                    });
                if let Some(words) = words {
                    text.push_str(&format!("        min_reason_words: {words}\n"));
                }
            }
        }
        if item.get("exclude_when_paths_match").is_some() {
            self.left_out.push(format!(
                "co-change `{gate}`: `exclude_when_paths_match` (narrow `when` instead)"
            ));
        }
        self.gates.push(text);
        self.kinds.push("co-change rule");
    }

    /// A command the change must have run, with output as evidence: a gate that runs it.
    fn require_run(&mut self, item: &Value) {
        let text = |key: &str| item.get(key).and_then(Value::as_str);
        let (command, evidence) = match item.get("require_run") {
            Some(Value::String(command)) => (command.as_str(), text("evidence_pattern")),
            _ => match text("command") {
                Some(command) => (
                    command,
                    text("evidence_pattern").or_else(|| text("evidence")),
                ),
                None => {
                    self.left_out
                        .push("a `require_run` entry without a command".into());
                    return;
                }
            },
        };
        let name = text("id").unwrap_or(command);
        if command.trim().is_empty() {
            self.command_text(name, command);
        } else {
            let mut gate = Command::new(name, shell(command));
            gate.always_blocks = true;
            self.command_argv(gate);
        }
        let when = strings(
            item.get("when_changed")
                .or_else(|| item.get("when_paths_match")),
        );
        self.left_out.push(format!(
            "`require_run` `{}` became a gate that runs the command on every stop and judges its exit status{}{}",
            one_line(command),
            match evidence {
                Some(evidence) => format!(", not its output against `{}`", one_line(evidence)),
                None => String::new(),
            },
            if when.is_empty() {
                String::new()
            } else {
                format!(", not only when {} changed", json(&when))
            }
        ));
    }

    /// The globs of `written` as validator's patterns take them: a leading `/` (the repository
    /// root, as CODEOWNERS and .gitignore write it) dropped, a directory written with a
    /// trailing `/` meaning everything under it. One that still does not load is listed.
    fn globs(&mut self, place: &str, written: &[String]) -> Vec<String> {
        let mut kept = Vec::new();
        for glob in written {
            let relative = glob.trim_start_matches('/');
            let glob = match relative.strip_suffix('/') {
                Some(dir) => format!("{dir}/**"),
                None => relative.to_owned(),
            };
            match crate::globs::Pattern::new(&glob) {
                Ok(_) => kept.push(glob),
                Err(why) => self.left_out.push(format!(
                    "{place}: the glob `{}` ({})",
                    one_line(&glob),
                    one_line(&why)
                )),
            }
        }
        kept
    }

    /// Protected and denied paths become one `file-scope` gate.
    fn scope_gate(&mut self) {
        if self.readonly.is_empty() && self.deny.is_empty() {
            return;
        }
        let gate = self.name("protected-paths", "scope");
        let mut text = format!("      - name: {gate}\n        rule: file-scope\n");
        if !self.readonly.is_empty() {
            text.push_str(&format!("        readonly: {}\n", json(&self.readonly)));
        }
        if !self.deny.is_empty() {
            text.push_str(&format!("        deny: {}\n", json(&self.deny)));
        }
        self.gates.push(text);
        self.kinds.push("protected paths");
    }

    fn finish(mut self) -> Converted {
        let mut main = String::from("  - name: main\n    gates:\n");
        for gate in std::mem::take(&mut self.gates) {
            main.push_str(&gate);
        }
        self.finish_pipelines(&[main])
    }

    fn finish_pipelines(self, pipelines: &[String]) -> Converted {
        let mut yaml = String::from(
            "# validator rules converted from a gates.json (`validator init --from`).\n",
        );
        if self.left_out.is_empty() {
            yaml.push_str("# Everything in it was carried over.\n");
        } else {
            yaml.push_str("# Not carried over:\n");
            for item in &self.left_out {
                yaml.push_str(&format!("#   - {}\n", comment(item)));
            }
        }
        yaml.push_str("version: 1\nstate: .validator\npipelines:\n");
        for pipeline in pipelines {
            yaml.push_str(pipeline);
        }
        if !self.tools.is_empty() {
            yaml.push_str("tools:\n  commands:\n");
            for rule in &self.tools {
                yaml.push_str(rule);
            }
        }
        let mut counted: Vec<(&str, usize)> = Vec::new();
        for kind in &self.kinds {
            match counted.iter_mut().find(|(k, _)| k == kind) {
                Some((_, n)) => *n += 1,
                None => counted.push((kind, 1)),
            }
        }
        let summary = counted
            .iter()
            .map(|(kind, n)| match (*kind, n) {
                ("protected paths", _) => "protected paths".to_owned(),
                (kind, 1) => format!("1 {kind}"),
                (kind, n) => format!("{n} {kind}s"),
            })
            .collect::<Vec<_>>()
            .join(", ");
        Converted {
            yaml,
            left_out: self.left_out,
            summary,
        }
    }
}

/// A command object's settings besides its command: the names it goes by, its timeout, fix,
/// directory and environment (its own, or its nested command's), and whether the other runner
/// let it fail.
fn with_settings<'a>(
    mut command: Command<'a>,
    key: Option<&'a str>,
    gate: &'a Map<String, Value>,
    nested: Option<&Map<String, Value>>,
) -> Command<'a> {
    let text = |k: &str| gate.get(k).and_then(Value::as_str);
    let number = |k: &str| {
        gate.get(k)
            .or_else(|| nested.and_then(|inner| inner.get(k)))
            .and_then(Value::as_u64)
    };
    command.aliases = NAME_KEYS
        .iter()
        .filter_map(|k| text(k))
        .chain(key)
        .map(str::to_owned)
        .collect();
    command.timeout = number("timeout")
        .or_else(|| number("timeout_seconds"))
        .or_else(|| number("timeoutSec"))
        .or_else(|| number("timeoutMs").map(|ms| ms.div_ceil(1000)));
    command.fix = match gate.get("fix") {
        Some(Value::String(fix)) if !fix.trim().is_empty() => Some(shell(fix)),
        Some(fix @ Value::Array(_)) => Some(strings(Some(fix))).filter(|f| !f.is_empty()),
        _ => None,
    };
    command.cwd = text("cwd")
        .or_else(|| text("dir"))
        .filter(|d| !d.is_empty());
    for env in [gate.get("env"), gate.get("environment")]
        .into_iter()
        .chain([nested.and_then(|inner| inner.get("environment"))])
        .flatten()
    {
        if let Value::Object(vars) = env {
            for (var, value) in vars {
                if let Some(value) = value.as_str() {
                    command.env.push((var.clone(), value.to_owned()));
                }
            }
        }
    }
    command.advisory = gate.get("allowFailure") == Some(&Value::Bool(true))
        || gate.get("blocking") == Some(&Value::Bool(false))
        || gate.get("required") == Some(&Value::Bool(false))
        || ["level", "severity"]
            .iter()
            .any(|k| text(k).is_some_and(|v| v.eq_ignore_ascii_case("warn")));
    command
}

/// A command as a map may hold it: a one-line shell string or an argv list.
fn runnable(value: &Value) -> bool {
    match value {
        Value::String(line) => !line.trim().is_empty() && !line.contains('\n'),
        Value::Array(argv) => !argv.is_empty() && argv.iter().all(Value::is_string),
        _ => false,
    }
}

/// The field holding a command object's command, and its value.
fn command_of(gate: &Map<String, Value>) -> Option<(&'static str, &Value)> {
    COMMAND_KEYS.iter().find_map(|key| {
        let value = gate.get(*key)?;
        let runnable = match value {
            Value::String(_) => true,
            Value::Array(argv) => !argv.is_empty() && argv.iter().all(Value::is_string),
            Value::Object(inner) => inner.get("argv").is_some_and(Value::is_array),
            _ => false,
        };
        runnable.then_some((*key, value))
    })
}

fn is_command_list(items: &[Value]) -> bool {
    !items.is_empty()
        && items.iter().all(|item| match item {
            Value::Object(gate) => command_of(gate).is_some(),
            Value::Array(pair) => {
                pair.len() == 2
                    && pair[0].is_string()
                    && (pair[1].is_string()
                        || pair[1]
                            .as_array()
                            .is_some_and(|argv| argv.iter().all(Value::is_string)))
            }
            _ => false,
        })
}

/// A map of names to commands: one-line strings (empty for "not configured") or command
/// objects, comments aside.
fn is_command_map(map: &Map<String, Value>) -> bool {
    let entries = map
        .iter()
        .filter(|(key, _)| !super::gates_json::is_comment(key));
    let (mut commands, mut all) = (0, 0);
    for (_, value) in entries {
        all += 1;
        let command = match value {
            Value::String(text) => !text.contains('\n'),
            Value::Object(gate) => command_of(gate).is_some(),
            _ => false,
        };
        commands += usize::from(command);
    }
    commands > 0 && commands * 2 >= all
}

/// A list of shell lines (`"npm run lint"`), not of names or globs: every entry has words
/// and none starts with a glob.
fn is_shell_lines(list: &[Value]) -> bool {
    !list.is_empty()
        && list.iter().all(|item| {
            item.as_str().is_some_and(|line| {
                let mut words = line.split_whitespace();
                words
                    .next()
                    .is_some_and(|program| !program.contains(['*', '?', '[']))
                    && words.next().is_some()
                    && !line.contains('\n')
            })
        })
}

/// The names of the commands a list or map holds, for recognising subsets of them.
fn command_names(value: &Value) -> Vec<&str> {
    match value {
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::Object(gate) => NAME_KEYS
                    .iter()
                    .filter_map(|k| gate.get(*k).and_then(Value::as_str))
                    .collect(),
                Value::Array(pair) => pair.first().and_then(Value::as_str).into_iter().collect(),
                _ => Vec::new(),
            })
            .flat_map(|names: Vec<&str>| names)
            .collect(),
        Value::Object(map) if is_command_map(map) => map.keys().map(String::as_str).collect(),
        _ => Vec::new(),
    }
}

/// A value that runs something: words, or a path to a program; not a directory name such as
/// `"test_dir": "tests"`. Empty is "not configured".
fn looks_like_command(value: &str) -> bool {
    let value = value.trim();
    value.is_empty() || value.contains(char::is_whitespace) || value.contains('/')
}

/// A key's or name's words, lower case: split at anything but a letter or digit, and where a
/// lower-case letter meets an upper-case one (`stopChecks`, `fast_tests`, `e2e-full`).
fn key_words(key: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut lower_before = false;
    for c in key.chars() {
        if !c.is_alphanumeric() {
            words.extend((!word.is_empty()).then(|| std::mem::take(&mut word)));
            lower_before = false;
            continue;
        }
        if c.is_uppercase() && lower_before {
            words.push(std::mem::take(&mut word));
        }
        lower_before = c.is_lowercase() || c.is_ascii_digit();
        word.extend(c.to_lowercase());
    }
    words.extend((!word.is_empty()).then_some(word));
    words
}

/// Whether a top-level key says it holds checks to run: every word of it is one of
/// [`COMMAND_WORDS`]. A key with any other word (`forbidden_bash`, `test_dir`, `backend`)
/// does not, whatever its values look like.
fn is_command_key(key: &str) -> bool {
    let words = key_words(key);
    !words.is_empty() && words.iter().all(|w| COMMAND_WORDS.contains(&w.as_str()))
}

/// The `tools.commands` decision a top-level key asks for its commands: `deny` for a key
/// with a word of refusal and one of commands (`forbidden_bash`, `blockedCommands`), `ask`
/// for one asking a person (`ask_commands`); `None` for any other.
fn command_permission(key: &str) -> Option<&'static str> {
    let words = key_words(key);
    let has = |list: &[&str]| words.iter().any(|w| list.contains(&w.as_str()));
    if !has(&SHELL_WORDS) {
        return None;
    }
    if has(&DENY_WORDS) {
        Some("deny")
    } else if has(&ASK_WORDS) {
        Some("ask")
    } else {
        None
    }
}

/// Whether a gate's name says it is a permission (to refuse, ask about or allow), not a check.
fn names_a_permission(name: &str) -> bool {
    key_words(name).iter().any(|w| {
        let w = w.as_str();
        DENY_WORDS.contains(&w) || ASK_WORDS.contains(&w) || ALLOW_WORDS.contains(&w)
    })
}

/// Whether a value holds something that could be run: a shell line, a list of them, command
/// objects or pairs, a map of commands. Under a key that does not say it holds checks, it is
/// listed as such, never run.
fn holds_commands(value: &Value) -> bool {
    match value {
        Value::String(text) => text.trim().contains(char::is_whitespace),
        Value::Array(list) => is_command_list(list) || is_shell_lines(list),
        Value::Object(map) => command_of(map).is_some() || is_command_map(map),
        _ => false,
    }
}

/// The keys of a command object the conversion knows nothing of (every key it reads, that
/// say when it ran, that describe it or check its output, and comments are known; a `kind`
/// only when it names a kind of check, as `legs` write `"kind": "test"`).
fn unknown_gate_keys(gate: &Map<String, Value>) -> Vec<&str> {
    gate.iter()
        .filter(|(key, value)| {
            let key = key.as_str();
            let known = READ_GATE_KEYS.contains(&key)
                || SCHEDULING_KEYS.contains(&key)
                || OTHER_GATE_KEYS.contains(&key)
                || super::gates_json::is_comment(key)
                || (key == "kind" && value.as_str().is_some_and(is_command_key));
            !known
        })
        .map(|(key, _)| key.as_str())
        .collect()
}

/// A command value as one line, for a message.
fn command_text(command: &Value) -> String {
    match command {
        Value::String(line) => line.clone(),
        Value::Array(_) => shell_words::join(strings(Some(command))),
        Value::Object(inner) => shell_words::join(strings(inner.get("argv"))),
        other => other.to_string(),
    }
}

/// A command as a `tools.commands` `match:`: its words as written, `*` before a lone option
/// (`--no-verify`: any program given it). Refused, with why, when it is not words a rule can
/// match faithfully: a regular expression or glob (`force(?!-with-lease)`, `rm .*`), or text
/// that does not split into words.
fn command_words(written: &str) -> Result<String, String> {
    let written = written.trim();
    if written.is_empty() {
        return Err("is empty".into());
    }
    if written.contains([
        '\\', '^', '$', '(', ')', '[', ']', '{', '}', '|', '+', '?', '*',
    ]) {
        return Err(
            "reads as a regular expression or a glob, whose meaning as the other runner matched it a rule of words cannot keep".into(),
        );
    }
    // A rule is matched against each simple command of a line: words across `&&`, `;` or a
    // redirection would never match.
    if written.contains([';', '&', '<', '>', '`', '\n']) {
        return Err("spans more than one command (`;`, `&`, a redirection), which no rule of one command's words matches".into());
    }
    let words = shell_words::split(written).map_err(|err| format!("is not words ({err})"))?;
    match words.first() {
        None => Err("is empty".into()),
        Some(first) if first.starts_with('-') => Ok(format!("* {written}")),
        Some(_) => Ok(written.to_owned()),
    }
}

/// `{"architect": ["docs/**"], "tester": {"write": ["tests/**"]}}`: roles mapped to the
/// paths they may write.
fn is_role_permissions(roles: &Map<String, Value>) -> bool {
    let paths = |value: Option<&Value>| {
        value
            .and_then(Value::as_array)
            .is_some_and(|list| list.iter().all(|p| p.as_str().is_some_and(looks_like_path)))
    };
    let mut any = false;
    for (role, value) in roles {
        if super::gates_json::is_comment(role) {
            continue;
        }
        let writes = match value {
            Value::Array(_) => paths(Some(value)),
            Value::Object(role) => ["write", "may_write", "allow"]
                .iter()
                .any(|key| paths(role.get(*key))),
            _ => false,
        };
        if !writes {
            return false;
        }
        any = true;
    }
    any
}

fn looks_like_path(text: &str) -> bool {
    !text.is_empty() && !text.contains(char::is_whitespace) && text.contains(['/', '*', '.'])
}

/// Whether validator's regex syntax takes a pattern; the reason when it does not.
fn compiles(pattern: &str) -> Result<(), String> {
    regex::Regex::new(pattern).map(|_| ()).map_err(|err| {
        let why = err.to_string();
        one_line(why.lines().last().unwrap_or_default().trim())
    })
}

/// A command as a shell line: run through `sh -c`, as the runners that read these files
/// ran it (it is the rules author's text, never the worker's).
fn shell(command: &str) -> Vec<String> {
    vec!["sh".to_owned(), "-c".to_owned(), command.to_owned()]
}

/// JSON with `//` line comments (JSONC, as some of these files are written): the comments
/// removed, strings left alone.
fn strip_line_comments(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    for line in source.lines() {
        let mut in_string = false;
        let mut escaped = false;
        let mut cut = line.len();
        let bytes = line.as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            match b {
                _ if escaped => escaped = false,
                b'\\' if in_string => escaped = true,
                b'"' => in_string = !in_string,
                b'/' if !in_string && bytes.get(i + 1) == Some(&b'/') => {
                    cut = i;
                    break;
                }
                _ => {}
            }
        }
        out.push_str(&line[..cut]);
        out.push('\n');
    }
    out
}

/// The strings of a JSON list, or a lone string as a list of one (none for anything else).
fn strings(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::String(one)) => vec![one.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

/// A JSON value as YAML flow text: JSON strings and arrays are YAML too, quoted so that
/// nothing in them can be read as YAML structure.
fn json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    // JSON leaves these raw; YAML folds NEL and the Unicode line separators as line breaks
    // and refuses DEL, C1 controls and U+FFFE/FFFF. Escaped, they read the same in both.
    yaml_safe(&serde_json::to_string(value).unwrap_or_else(|_| "[]".to_owned()))
}

/// Text for a YAML comment: one line, and nothing YAML refuses.
fn comment(text: &str) -> String {
    yaml_safe(&one_line(text))
}

fn yaml_safe(text: &str) -> String {
    let mut safe = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\u{7f}'..='\u{9f}' | '\u{2028}' | '\u{2029}' | '\u{fffe}' | '\u{ffff}' => {
                safe.push_str(&format!("\\u{:04x}", u32::from(c)))
            }
            c => safe.push(c),
        }
    }
    safe
}

fn one_line(text: &str) -> String {
    validator_text::one_line(text)
}

/// A gates.json in another runner's format, refused where the hook runner's dialect is read,
/// with what `init --from` would make of it: not a typo to remove, but another format whose
/// gates say what the user wants. `None` for the dialect itself.
pub(super) fn other_dialect_error(path: &Path, source: &str) -> Option<crate::error::ConfigError> {
    let message = other_dialect(path, source)?;
    Some(crate::error::ConfigError {
        file: path.to_path_buf(),
        line: Some(1),
        column: Some(1),
        message,
        help: Some(
            "`validator init --from FILE` writes another runner's gate file as a validator.yaml (a `lint` or `test` gate per command, a `content` gate per ban pattern, a `co-change` gate per coverage rule, a `file-scope` gate for protected paths) and lists what has no equivalent"
                .into(),
        ),
    })
}

/// What a gate file of another runner's format holds, if `source` is one: a sentence saying
/// what `init --from` would make of it, or why it is not a gate file at all. `None` for the
/// hook runner's dialect (`hooks`, or `gates` as a map of objects), whose mistakes are the
/// loader's to name.
fn other_dialect(path: &Path, source: &str) -> Option<String> {
    let top: serde_json::Value = serde_json::from_str(source).ok()?;
    if let serde_json::Value::Object(map) = &top {
        if map.get("hooks").is_some_and(serde_json::Value::is_object) {
            return None;
        }
        // `gates` as a map of objects: the runner's dialect, unless it is another runner's
        // whose objects `init --from` reads (a typo of the dialect's keys is the loader's).
        let objects = map.get("gates").is_some_and(|gates| {
            gates
                .as_object()
                .is_some_and(|gates| gates.values().all(serde_json::Value::is_object))
        });
        let runner_shaped = map
            .get("gates")
            .and_then(serde_json::Value::as_object)
            .is_some_and(|gates| {
                gates.values().all(|gate| {
                    gate.get("command").is_none_or(serde_json::Value::is_string)
                        && ["run", "cmd", "script", "argv", "npm", "id", "name", "label"]
                            .iter()
                            .all(|key| gate.get(*key).is_none())
                })
            });
        if objects && (runner_shaped || from_gates_json(path, source).is_err()) {
            return None;
        }
    }
    Some(match from_gates_json(path, source) {
        Ok(converted) => format!(
            "this gates.json is another runner's format ({} validator can convert), not the hook runner's dialect validator reads as it is (\"gates\" as an object of {{\"command\": ...}}, with \"hooks\")",
            converted.summary
        ),
        Err(why) => format!("this file is not a gate file validator reads: {why}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn convert(source: &str) -> Converted {
        from_gates_json(Path::new("gates.json"), source).expect("converts")
    }

    #[test]
    fn jsonc_comments_are_removed_outside_strings_only() {
        let text = strip_line_comments("{\"a\": \"http://x\", // note\n\"b\": 1}");
        assert_eq!(text, "{\"a\": \"http://x\", \n\"b\": 1}\n");
    }

    #[test]
    fn commands_as_argv_lists_under_ids_with_their_scheduling_named() {
        let out = convert(
            r#"{"modes": {"quick": ["notes"]}, "gates": [{"id": "notes", "command": ["gov", "note"], "paths": ["x/**"], "timeoutMs": 1500, "allowFailure": true}]}"#,
        );
        assert!(out.yaml.contains("name: notes\n        rule: lint\n        run: [\"gov\",\"note\"]\n        timeout: 2s\n"), "{}", out.yaml);
        assert!(out.yaml.contains("on_fail: CONTINUE"), "{}", out.yaml);
        assert!(
            out.left_out.iter().any(|l| l.contains("`paths`")),
            "{:?}",
            out.left_out
        );
        assert!(
            out.left_out.iter().any(|l| l.contains("`modes`")),
            "{:?}",
            out.left_out
        );
    }

    #[test]
    fn a_list_of_paths_under_gates_is_protected_paths() {
        let out =
            convert(r#"{"gates": ["docs/adr/**", ".github/"], "denyPaths": ["node_modules/**"]}"#);
        assert!(out.yaml.contains("rule: file-scope\n        readonly: [\"docs/adr/**\",\".github/**\"]\n        deny: [\"node_modules/**\"]"), "{}", out.yaml);
    }

    #[test]
    fn only_the_required_commands_block() {
        let out = convert(
            r#"{"commands": {"lint": "npm run lint", "test": "npm test", "build": ""}, "required": ["test"]}"#,
        );
        let lint = out
            .yaml
            .split("- name: ")
            .find(|g| g.starts_with("lint"))
            .unwrap_or_default();
        assert!(lint.contains("on_fail: CONTINUE"), "{}", out.yaml);
        let test = out
            .yaml
            .split("- name: ")
            .find(|g| g.starts_with("test"))
            .unwrap_or_default();
        assert!(!test.contains("on_fail"), "{}", out.yaml);
        assert!(
            out.left_out.iter().any(|l| l.contains("`build`")),
            "{:?}",
            out.left_out
        );
    }

    #[test]
    fn a_registry_of_decisions_is_not_converted() {
        let err = from_gates_json(
            Path::new("gates.json"),
            r#"{"gates": [{"id": "LAUNCH-5", "stage": "beta", "text": "Has a privacy policy"}]}"#,
        )
        .expect_err("nothing to run");
        assert!(err.contains("nothing in it became a gate"), "{err}");
    }

    #[test]
    fn a_required_list_of_anything_but_commands_leaves_every_gate_blocking() {
        let by_id = convert(
            r#"{"gates": [{"id": "test", "name": "Unit tests", "run": "pytest"}], "required": ["test"]}"#,
        );
        assert!(!by_id.yaml.contains("CONTINUE"), "{}", by_id.yaml);
        let tools =
            convert(r#"{"gates": [{"name": "lint", "run": "ruff ."}], "required": ["python3"]}"#);
        assert!(!tools.yaml.contains("CONTINUE"), "{}", tools.yaml);
        assert!(
            tools
                .left_out
                .iter()
                .any(|l| l.contains("every gate blocks"))
        );
    }

    #[test]
    fn globs_are_read_as_the_other_runner_meant_them_or_listed() {
        let out = convert(
            r#"{"protected_paths": ["/docs/adr/**", "[bad"], "ban_patterns": [{"pattern": "eval", "globs": ["src/"], "exclude": "src/vendor/"}],
                "coverage_rules": [{"when_changed": ["src/"], "require_changed": ["/tests/"]}]}"#,
        );
        for expected in [
            "readonly: [\"docs/adr/**\"]",
            "files: [\"src/**\"]\n        exclude: [\"src/vendor/**\"]",
            "when: [\"src/**\"]\n        then: [\"tests/**\"]",
        ] {
            assert!(
                out.yaml.contains(expected),
                "{expected} not in {}",
                out.yaml
            );
        }
        assert!(
            out.left_out.iter().any(|l| l.contains("`[bad`")),
            "{:?}",
            out.left_out
        );
    }

    #[test]
    fn regex_flags_carry_over_or_are_listed() {
        let out = convert(
            r#"{"ban_patterns": [{"pattern": "BEGIN.*KEY", "flags": "gs"}, {"pattern": "x", "flags": "v"}]}"#,
        );
        assert!(out.yaml.contains("(?s)BEGIN.*KEY"), "{}", out.yaml);
        assert!(
            out.left_out.iter().any(|l| l.contains("flag `v`")),
            "{:?}",
            out.left_out
        );
    }

    #[test]
    fn what_yaml_would_fold_or_refuse_is_escaped() {
        let out = convert(
            "{\"ban_patterns\": [{\"pattern\": \"a\u{85}b\u{2028}\u{7f}\", \"message\": \"\u{9b}\"}]}",
        );
        assert!(out.yaml.contains(r"a\u0085b\u2028\u007f"), "{}", out.yaml);
        assert!(
            !out.yaml.contains('\u{85}') && !out.yaml.contains('\u{9b}'),
            "{}",
            out.yaml
        );
    }

    #[test]
    fn empty_commands_huge_timeouts_and_comment_named_commands_are_listed() {
        let out = convert(
            r#"{"commands": {"lint": "eslint .", "e2e": [], "_fmt": "prettier -c ."}, "gates": [{"name": "t", "run": "make", "timeout": 99999999999}]}"#,
        );
        for expected in [
            "`e2e`: its command is empty",
            "`commands._fmt`: read as a comment",
            "past validator's longest",
        ] {
            assert!(
                out.left_out.iter().any(|l| l.contains(expected)),
                "{expected}: {:?}",
                out.left_out
            );
        }
        assert!(!out.yaml.contains("timeout:"), "{}", out.yaml);
    }

    #[test]
    fn only_a_key_made_of_command_words_holds_commands_to_run() {
        assert_eq!(key_words("stopChecks"), ["stop", "checks"]);
        assert_eq!(key_words("fast_tests"), ["fast", "tests"]);
        assert_eq!(key_words("e2e-Full"), ["e2e", "full"]);
        for key in ["lint", "fast_tests", "stopChecks", "legs", "typecheck_cmd"] {
            assert!(is_command_key(key), "{key}");
        }
        for key in [
            "forbidden_bash",
            "never_run",
            "dangerous_tests",
            "test_dir",
            "backend",
            "lint_ignore",
            "",
        ] {
            assert!(!is_command_key(key), "{key}");
        }
        assert_eq!(command_permission("forbidden_bash"), Some("deny"));
        assert_eq!(command_permission("blockedCommands"), Some("deny"));
        assert_eq!(command_permission("ask_commands"), Some("ask"));
        assert_eq!(command_permission("denyPaths"), None);
        assert_eq!(command_permission("forbidden"), None);
    }

    #[test]
    fn a_deny_list_of_commands_becomes_deny_rules_and_never_a_gate() {
        let out = convert(
            r#"{"lint": "npm run lint", "forbidden_bash": ["git push --force", "rm -rf /", "--no-verify", "rm .*", "a && b"]}"#,
        );
        assert!(
            out.yaml.contains("run: [\"sh\",\"-c\",\"npm run lint\"]"),
            "{}",
            out.yaml
        );
        assert!(
            !out.yaml.contains("run: [\"sh\",\"-c\",\"git"),
            "{}",
            out.yaml
        );
        for rule in [
            "tools:\n  commands:\n    - {match: \"git push --force\", decision: deny,",
            "{match: \"rm -rf /\", decision: deny,",
            "{match: \"* --no-verify\", decision: deny,",
        ] {
            assert!(out.yaml.contains(rule), "{rule} not in {}", out.yaml);
        }
        for listed in ["the entry `rm .*`", "the entry `a && b`"] {
            assert!(
                out.left_out.iter().any(|l| l.contains(listed)),
                "{listed}: {:?}",
                out.left_out
            );
        }
        assert!(
            out.summary.contains("3 command deny rules"),
            "{}",
            out.summary
        );
    }

    #[test]
    fn commands_under_unknown_keys_or_permission_names_are_listed_not_run() {
        let out = convert(
            r#"{"gates": [{"name": "ok", "run": "make"}, {"name": "x", "run": "git push -f", "action": "deny"}, {"name": "off", "run": "make off", "enabled": false}],
                "commands": {"deny": "rm -rf /", "test": "make test"},
                "frontend": ["npm ci", "npm run lint"], "forbidden": [{"command": "rm -rf /"}]}"#,
        );
        let rules: String = out.yaml.lines().filter(|l| !l.starts_with('#')).collect();
        for unrun in ["rm -rf", "push", "npm", "make off"] {
            assert!(!rules.contains(unrun), "{unrun}: {}", out.yaml);
        }
        assert!(rules.contains("make test"), "{}", out.yaml);
        for listed in [
            "gate `x`: its key `action` is not one validator knows",
            "gate `off`: disabled",
            "`deny`: its name says it is a permission",
            "`frontend`: it holds commands",
            "`forbidden`: it holds commands",
        ] {
            assert!(
                out.left_out.iter().any(|l| l.contains(listed)),
                "{listed}: {:?}",
                out.left_out
            );
        }
    }
}
