//! The rules file (`validator.yaml`): loading, strict validation, and the checked model the
//! pipeline runs. Every error names the file, line and column, and says what to write instead.

pub mod convert;
mod gates_json;
pub mod graph;
pub mod json_schema;
pub mod keys;
pub mod raw;
pub mod tools;

use std::path::{Path, PathBuf};
use std::time::Duration;

use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::error::{ConfigError, Error};
use crate::globs::PatternSet;
use crate::rules::Rule;
use crate::yaml::locate::{Step, locate};
use raw::{GateSpec, RawRules, RuleKind};

/// Largest rules file read; a rules file is a page, not a data set.
pub const MAX_RULES_BYTES: u64 = 4 * 1024 * 1024;

/// Whether the positions of `source`'s errors count lines at LF alone, as serde_json does for a
/// hook runner's gates.json; a rules file's are YAML's, broken at CR, NEL, LS and PS too.
pub fn lines_end_at_lf_only(path: &Path, source: &str) -> bool {
    gates_json::is_gates_json(path, source)
}
/// `path` from the rules file, else `default`, relative to the file's directory `dir`.
fn resolve(dir: &Path, path: Option<PathBuf>, default: &str) -> PathBuf {
    dir.join(path.unwrap_or_else(|| PathBuf::from(default)))
}

/// Gate names that are routing words and so cannot name a gate.
const ROUTING_WORDS: [&str; 4] = ["CONTINUE", "BLOCK", "PASS", "STOP"];

/// A loaded, checked rules file.
#[derive(Debug, Clone)]
pub struct Rules {
    pub path: PathBuf,
    /// The rules file's directory; relative paths in it are resolved from here.
    pub dir: PathBuf,
    pub staging: PathBuf,
    pub verdicts: PathBuf,
    pub state: PathBuf,
    /// Where `<task>.yaml` handoff contracts live, if the rules file names a directory.
    pub contracts: Option<PathBuf>,
    /// The key file named by `signing_key_file:`, if any.
    pub signing_key_file: Option<PathBuf>,
    pub defaults: Defaults,
    /// How much of the event log is kept.
    pub events: crate::events::Retention,
    /// What agents' tool calls may do (`tools:`).
    pub tools: tools::Tools,
    /// What `validator hook` does beside judging (`hook:`).
    pub hook: HookSettings,
    /// Whether and when `validator watch` speculates (`speculate:`).
    pub speculate: Speculate,
    pub pipelines: Vec<Pipeline>,
    /// Agent hook events bound to pipelines (a gates.json's `hooks`). Empty when the rules file
    /// binds none: then every stop runs the pipeline [`Rules::pipeline_for`] picks.
    pub hooks: Vec<HookBinding>,
    /// What `validator hook` adds to the person's prompt (a gates.json's UserPromptSubmit).
    pub prompt: Option<PromptHook>,
    /// What the loader accepted but a reader should know (the parts of a gates.json validator
    /// does not run); `validator rules check` prints them.
    pub notes: Vec<String>,
    /// The keys of [`keys::KEYS`] the file itself writes, which some front end cannot honour:
    /// what the load-time warnings speak of.
    pub written: Vec<&'static str>,
}

/// `speculate:` checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Speculate {
    pub on: bool,
    /// How long a task's files must be left alone before a speculative run starts.
    pub quiet: Duration,
    /// Task paths the gates' tools write and nothing reads (`coverage`, `target`): a
    /// speculative run that writes only there is still used.
    pub ignore: Vec<String>,
}

impl Default for Speculate {
    fn default() -> Self {
        Speculate {
            on: true,
            quiet: Duration::from_secs(1),
            ignore: Vec::new(),
        }
    }
}

impl Speculate {
    /// `Err` names the entry of `ignore` that is no plain path inside the task.
    fn from_raw(raw: Option<&raw::RawSpeculate>) -> Result<Self, (usize, String)> {
        let fallback = Speculate::default();
        Ok(match raw {
            None => fallback,
            Some(raw::RawSpeculate::On(on)) => Speculate {
                on: *on,
                ..fallback
            },
            Some(raw::RawSpeculate::Settings(settings)) => {
                let ignore = settings.ignore.clone().unwrap_or_default();
                let plain = |path: &str| {
                    !path.is_empty()
                        && path
                            .split('/')
                            .all(|part| !part.is_empty() && part != "." && part != "..")
                };
                if let Some(at) = ignore.iter().position(|path| !plain(path)) {
                    return Err((at, ignore[at].clone()));
                }
                Speculate {
                    on: true,
                    quiet: settings.quiet.unwrap_or(fallback.quiet),
                    ignore,
                }
            }
        })
    }
}

/// `hook:` checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookSettings {
    /// Every subagent stop must carry a STATUS block, checked before the pipeline.
    pub subagent_status: bool,
    /// The task's brief is given to the agent when its session starts.
    pub brief: bool,
    /// How a person is asked for a call a rule holds for one (`hook.approvals`).
    pub approvals: Approvals,
}

/// `hook.approvals` checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approvals {
    /// Told of each new request: an `http://` or `https://` URL.
    pub webhook: Option<String>,
    /// How long a request stays open for a person.
    pub timeout: std::time::Duration,
    /// Claude Code's calls wait for `validator approve` as the other agents' do, instead of
    /// its own prompt asking its person.
    pub claude_waits: bool,
    /// The token `POST /approvals/…` on the watcher's metrics port must carry (resolved).
    pub token_file: Option<std::path::PathBuf>,
}

impl Default for Approvals {
    fn default() -> Self {
        Approvals {
            webhook: None,
            timeout: std::time::Duration::from_secs(600),
            claude_waits: false,
            token_file: None,
        }
    }
}

impl Default for HookSettings {
    fn default() -> Self {
        HookSettings {
            subagent_status: true,
            brief: true,
            approvals: Approvals::default(),
        }
    }
}

impl HookSettings {
    fn from_raw(raw: &raw::RawHook) -> Self {
        let approvals = &raw.approvals;
        HookSettings {
            subagent_status: raw.subagent_status != Some(raw::SubagentStatus::Off),
            brief: raw.brief.unwrap_or(true),
            approvals: Approvals {
                webhook: approvals.webhook.clone(),
                timeout: approvals.timeout.unwrap_or(Approvals::default().timeout),
                claude_waits: approvals.claude == Some(raw::ClaudeApprovals::Wait),
                token_file: approvals.token_file.clone(),
            },
        }
    }
}

/// Why a webhook URL cannot be used, if it cannot: one the webhook client can reach (`http://`
/// or `https://`, a host, nothing a command line or a request line would read otherwise).
pub fn webhook_problem(url: &str) -> Option<&'static str> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    match rest {
        None => Some("it is no `http://` or `https://` URL"),
        Some(rest) if rest.is_empty() || rest.starts_with('/') => Some("it names no host"),
        Some(_) if url.chars().any(|c| c.is_whitespace() || c.is_control()) => {
            Some("it holds a space or a control character")
        }
        Some(_) => None,
    }
}

/// A gates.json's UserPromptSubmit hook: what the person's prompt runs before the agent sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptHook {
    /// The pipeline of its gates that run a command, if it lists any.
    pub pipeline: Option<String>,
    /// The words a gate (by its name in the file) waits for: it runs only for a prompt that
    /// holds one of them. A gate not listed here runs for every prompt.
    pub keywords: Vec<(String, Vec<String>)>,
    /// It lists the runner's `commands` built-in: the prompt gets the task's brief.
    pub commands: bool,
}

impl PromptHook {
    /// Whether gate `name` of its pipeline (a copy of a gate is `name#2`) runs for `prompt`:
    /// it has no keywords, or the prompt holds one as a whole word, in any case.
    pub fn runs_for(&self, name: &str, prompt: &str) -> bool {
        let base = name.split_once('#').map_or(name, |(base, _)| base);
        match self.keywords.iter().find(|(gate, _)| gate == base) {
            None => true,
            Some((_, words)) => words.iter().any(|word| holds_word(prompt, word)),
        }
    }
}

/// Whether `text` holds `word` (any case) with no letter or digit on either side.
fn holds_word(text: &str, word: &str) -> bool {
    let word = word.trim().to_lowercase();
    if word.is_empty() {
        return false;
    }
    let text = text.to_lowercase();
    let is_word_char = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    text.match_indices(&word).any(|(at, _)| {
        !is_word_char(text[..at].chars().next_back())
            && !is_word_char(text[at + word.len()..].chars().next())
    })
}

/// An agent hook event and the pipeline that answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookBinding {
    /// The event as the agent names it (`Stop`, `SubagentStop`).
    pub event: String,
    pub pipeline: String,
    /// Only stops of these agent types are judged (a gates.json's `enabled_agents`); the
    /// others may stop unjudged. Empty: every agent is judged.
    pub agents: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Defaults {
    pub timeout: Duration,
    pub max_attempts: u32,
    pub strikes: u32,
    pub budget: Duration,
    pub max_tokens: Option<u64>,
    pub max_time: Option<Duration>,
    pub drift: Drift,
    pub tool_strikes: u32,
}

/// The drift breaker's thresholds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Drift {
    /// Failed stops in a row alike enough to be the same before the agent is told so (0: off).
    pub stops: u32,
    /// How alike (0 to 1) two stops must be.
    pub similarity: f64,
}

impl Default for Defaults {
    fn default() -> Self {
        Defaults {
            timeout: Duration::from_secs(600),
            max_attempts: 3,
            strikes: 3,
            budget: Duration::from_secs(1800),
            max_tokens: None,
            max_time: None,
            drift: Drift {
                stops: 3,
                similarity: 0.9,
            },
            tool_strikes: 3,
        }
    }
}

/// A named list of gates and the tasks it applies to.
#[derive(Debug, Clone)]
pub struct Pipeline {
    pub name: String,
    /// Task-name globs as written; empty means every task.
    pub tasks: Vec<String>,
    task_matcher: GlobSet,
    pub gates: Vec<Gate>,
    /// Most gates of a group running at once.
    pub jobs: usize,
    /// A failure in a group keeps its gates that have not started from starting.
    pub fail_fast: bool,
}

impl Pipeline {
    pub fn applies_to(&self, task: &str) -> bool {
        self.tasks.is_empty() || self.task_matcher.is_match(task)
    }

    /// A pipeline of `gates` alone, for every task (one the front end adds, as plan compliance).
    pub fn of(name: &str, gates: Vec<Gate>) -> Pipeline {
        Pipeline {
            name: name.to_owned(),
            tasks: Vec::new(),
            task_matcher: GlobSet::empty(),
            gates,
            jobs: 1,
            fail_fast: false,
        }
    }

    /// This pipeline with `gate` run before its own first gate, which the gate's CONTINUE
    /// leads to; the own gates' jumps still land on the gates they named.
    pub fn with_first(&self, gate: Gate) -> Pipeline {
        let shifted = self.gates.iter().map(|own| {
            let shift = |route: Route| match route {
                Route::Goto(index) => Route::Goto(index + 1),
                other => other,
            };
            Gate {
                on_pass: shift(own.on_pass),
                on_fail: shift(own.on_fail),
                ..own.clone()
            }
        });
        Pipeline {
            gates: std::iter::once(gate).chain(shifted).collect(),
            ..self.clone()
        }
    }
}

/// Where the run goes after a gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Continue,
    Block,
    Pass,
    Stop,
    /// Jump to the gate at this index of the pipeline.
    Goto(usize),
}

#[derive(Debug, Clone)]
pub struct Gate {
    pub name: String,
    pub rule: Rule,
    pub on_pass: Route,
    pub on_fail: Route,
    pub timeout: Option<Duration>,
    /// What the gate checks, in the words of whoever asked for it (a contract's criterion);
    /// the report's summary starts with it.
    pub about: Option<String>,
    /// `inputs:` globs: while the files they match, the definition and the tools are
    /// unchanged since the gate passed, it is not run again (see `cache`).
    pub inputs: Option<PatternSet>,
    /// `only_if:`: what must be in the task directory for the gate to run.
    pub only_if: Option<crate::rules::only_if::OnlyIf>,
    /// `unless:`: what in the task directory turns the gate off.
    pub unless: Option<crate::rules::only_if::OnlyIf>,
    /// `group:`: the gates next to it with the same group start together.
    pub group: Option<String>,
    /// The gate as written, in a canonical form: part of its cache key.
    pub definition: String,
}

impl Gate {
    pub fn kind(&self) -> RuleKind {
        self.rule.kind()
    }
}

impl Rules {
    /// Reads and checks a rules file.
    pub fn load(path: &Path) -> Result<Rules, Error> {
        let source = read(path)?;
        Ok(Rules::parse(path, &source)?)
    }

    /// Checks rules file text; `path` is where it came from (for messages and relative paths).
    /// A gates.json is read into the same model (see `config/gates_json.rs`).
    pub fn parse(path: &Path, source: &str) -> Result<Rules, ConfigError> {
        let dir = path
            .parent()
            .map(|p| {
                if p.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    p
                }
            })
            .unwrap_or(Path::new("."));
        let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        if gates_json::is_gates_json(path, source) {
            let text = source.strip_prefix('\u{feff}').unwrap_or(source);
            if let Some(refused) = convert::other_dialect_error(path, text) {
                return Err(refused);
            }
            return gates_json::parse(path, source, dir);
        }
        let loader = Loader { path, source };
        let raw: RawRules = parse_yaml(path, source, hint_for)?;
        let written = keys::written(&raw);
        let mut rules = loader.check(raw, dir)?;
        rules.written = written;
        Ok(rules)
    }

    /// What this file writes that does nothing under `fronts`, one line per key and reason.
    pub fn unhonoured(&self, fronts: &[keys::FrontEnd]) -> Vec<String> {
        keys::warnings(&self.written, fronts)
    }

    /// The handoff contract for `task`, if the rules file names a contracts directory and the
    /// coordinator wrote one. A contract that cannot be read or checked is an error.
    /// The key file this rules file names (`signing_key_file:`), with itself as the namer.
    pub fn key_named(&self) -> Option<crate::verdict::sign::Named<'_>> {
        self.signing_key_file
            .as_deref()
            .map(|key_file| crate::verdict::sign::Named {
                key_file,
                rules_file: &self.path,
            })
    }

    /// The pipeline for `task`: the one named, or the first whose `tasks` globs match.
    pub fn pipeline_for(&self, task: &str, named: Option<&str>) -> Result<&Pipeline, Error> {
        let available = || {
            self.pipelines
                .iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match named {
            Some(name) => self
                .pipelines
                .iter()
                .find(|p| p.name == name)
                .ok_or_else(|| Error::UnknownPipeline {
                    file: self.path.clone(),
                    name: name.to_owned(),
                    available: available(),
                }),
            None => self
                .pipelines
                .iter()
                .find(|p| p.applies_to(task))
                .ok_or_else(|| Error::NoPipeline {
                    file: self.path.clone(),
                    task: task.to_owned(),
                    available: available(),
                }),
        }
    }
}

/// The rules file's text: a regular file (through a link: a ConfigMap mounts it as one), read
/// whole or not at all, so a FIFO cannot stall a reload and a file past the cap is refused,
/// never parsed shortened.
fn read(path: &Path) -> Result<String, Error> {
    validator_process::files::read_text(
        path,
        MAX_RULES_BYTES,
        validator_process::files::Links::Follow,
    )
    .map_err(|source| Error::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// An error at the node `at` of the YAML file `path` holding `source`.
pub(crate) fn error_at(
    path: &Path,
    source: &str,
    at: &[Step],
    message: impl Into<String>,
    help: impl Into<String>,
) -> ConfigError {
    let position = locate(source, at);
    ConfigError {
        file: path.to_path_buf(),
        line: position.map(|p| p.0),
        column: position.map(|p| p.1),
        message: message.into(),
        help: Some(help.into()),
    }
}

/// Parses a YAML file a person wrote (a rules file, a contract) into `T`. Parser errors keep
/// their line and column, with `hint` turning the message into a fix; nesting the parser would
/// take quadratic time over is refused first.
pub(crate) fn parse_yaml<T: serde::de::DeserializeOwned>(
    path: &Path,
    source: &str,
    hint: impl Fn(&str) -> String,
) -> Result<T, ConfigError> {
    if let Err(too_deep) = crate::yaml::check_flow_depth(source.as_bytes()) {
        return Err(ConfigError {
            file: path.to_path_buf(),
            line: None,
            column: None,
            message: too_deep.to_string(),
            help: Some("write it as plain block YAML".into()),
        });
    }
    yaml_serde::from_str(source).map_err(|err| {
        let location = err.location();
        let mut message = err.to_string();
        if let Some(at) = &location {
            let suffix = format!(" at line {} column {}", at.line(), at.column());
            if let Some(cut) = message.find(&suffix) {
                message.truncate(cut);
            }
        }
        let mut line = location.as_ref().map(|l| l.line());
        let mut column = location.as_ref().map(|l| l.column());
        let mut help = None;
        // The parser's words for two slips a person makes, said as that person would.
        if let (Some(l), Some(c)) = (line, column)
            && char_at(source, l, c) == Some('\t')
        {
            message = "a tab: YAML indents with spaces only".into();
            help = Some("replace the tab with spaces".into());
        } else if let Some((open, l, c)) = (message.contains("did not find expected")
            || message.contains("flow"))
        .then(|| unclosed_bracket(source))
        .flatten()
        {
            message = format!("this `{open}` is never closed");
            help = Some(format!(
                "close it with `{}`, or write the list or mapping as block YAML",
                if open == '[' { ']' } else { '}' }
            ));
            (line, column) = (Some(l), Some(c));
        }
        ConfigError {
            file: path.to_path_buf(),
            line,
            column,
            help: Some(help.unwrap_or_else(|| hint(&message))),
            message,
        }
    })
}

/// The character at 1-based `line` and `column` of `source`.
fn char_at(source: &str, line: usize, column: usize) -> Option<char> {
    source
        .lines()
        .nth(line.checked_sub(1)?)?
        .chars()
        .nth(column.checked_sub(1)?)
}

/// The first flow bracket (`[` or `{`) still open at the end of `source`, with its line and
/// column, read outside quotes and comments; `None` when every one is closed.
fn unclosed_bracket(source: &str) -> Option<(char, usize, usize)> {
    let mut open: Vec<(char, usize, usize)> = Vec::new();
    for (l, text) in source.lines().enumerate() {
        let mut quote: Option<char> = None;
        let mut previous = ' ';
        let mut chars = text.chars().enumerate().peekable();
        while let Some((c, ch)) = chars.next() {
            match (quote, ch) {
                (Some('"'), '\\') => {
                    chars.next();
                }
                (Some(q), _) if ch == q => quote = None,
                (Some(_), _) => {}
                (None, '#') if previous.is_whitespace() => break,
                (None, '"' | '\'') if previous.is_whitespace() || "[{,:".contains(previous) => {
                    quote = Some(ch);
                }
                (None, '[' | '{') => open.push((ch, l + 1, c + 1)),
                (None, ']' | '}') => {
                    open.pop();
                }
                _ => {}
            }
            previous = ch;
        }
    }
    open.first().copied()
}

/// A reviewer reads nothing of validator's own, the signing key least of all: its review gates
/// are told where the key is.
fn keep_key_from_reviewers(pipelines: &mut [Pipeline], key: Option<&Path>) {
    let Some(key) = key else { return };
    for gate in pipelines.iter_mut().flat_map(|p| p.gates.iter_mut()) {
        if let Rule::Review(review) = &mut gate.rule {
            review.keep_from_reviewers(key);
        }
    }
}

struct Loader<'a> {
    path: &'a Path,
    source: &'a str,
}

impl Loader<'_> {
    fn error(
        &self,
        at: &[Step],
        message: impl Into<String>,
        help: impl Into<String>,
    ) -> ConfigError {
        error_at(self.path, self.source, at, message, help)
    }

    fn check(&self, raw: RawRules, dir: PathBuf) -> Result<Rules, ConfigError> {
        if raw.version != 1 {
            return Err(self.error(
                &[Step::Key("version")],
                format!("version {} is not supported", raw.version),
                "write `version: 1`",
            ));
        }
        let defaults = self.defaults(&raw.defaults)?;
        let events = self.retention(&raw.events)?;
        let speculate = self.speculate(raw.speculate.as_ref())?;
        let tools = self.tools(raw.tools.unwrap_or_default())?;
        if raw.pipelines.is_empty() {
            return Err(self.error(
                &[Step::Key("pipelines")],
                "there are no pipelines",
                "add at least one pipeline with `name:` and `gates:`",
            ));
        }
        let mut pipelines: Vec<Pipeline> = Vec::new();
        for (p, pipeline) in raw.pipelines.into_iter().enumerate() {
            let at = |rest: &[Step]| [&[Step::Key("pipelines"), Step::Index(p)], rest].concat();
            if pipelines.iter().any(|seen| seen.name == pipeline.name) {
                return Err(self.error(
                    &at(&[Step::Key("name")]),
                    format!("a second pipeline is named `{}`", pipeline.name),
                    "give each pipeline its own name",
                ));
            }
            let mut matcher = GlobSetBuilder::new();
            for (t, glob) in pipeline.tasks.iter().flatten().enumerate() {
                let compiled = Glob::new(&glob.0).map_err(|err| {
                    self.error(
                        &at(&[Step::Key("tasks"), Step::Index(t)]),
                        format!("task glob `{}` does not compile: {}", glob.0, err.kind()),
                        "write a glob such as `svc-*`",
                    )
                })?;
                matcher.add(compiled);
            }
            let task_matcher = matcher.build().map_err(|err| {
                self.error(
                    &at(&[Step::Key("tasks")]),
                    err.to_string(),
                    "simplify the task globs",
                )
            })?;
            if pipeline.gates.is_empty() {
                return Err(self.error(
                    &at(&[Step::Key("gates")]),
                    format!("pipeline `{}` has no gates", pipeline.name),
                    "add at least one gate",
                ));
            }
            let gates = self.check_gates(&pipeline.gates, &dir, &at)?;
            self.check_groups(&gates, &at)?;
            if pipeline.jobs == Some(0) {
                return Err(self.error(
                    &at(&[Step::Key("jobs")]),
                    "`jobs: 0` would run no gate of a group",
                    "give at least 1, or remove it (default: the number of cores)",
                ));
            }
            pipelines.push(Pipeline {
                name: pipeline.name,
                tasks: pipeline.tasks.into_iter().flatten().map(|g| g.0).collect(),
                task_matcher,
                gates,
                jobs: pipeline.jobs.map_or_else(
                    || std::thread::available_parallelism().map_or(2, |n| n.get()),
                    |jobs| jobs as usize,
                ),
                fail_fast: pipeline.fail_fast.unwrap_or(false),
            });
        }
        let hook = self.hook(&raw.hook, &dir)?;
        let signing_key_file = raw.signing_key_file.map(|p| dir.join(p));
        keep_key_from_reviewers(&mut pipelines, signing_key_file.as_deref());
        Ok(Rules {
            path: self.path.to_path_buf(),
            staging: resolve(&dir, raw.staging.clone(), "staging"),
            verdicts: resolve(&dir, raw.verdicts.or(raw.staging), "staging"),
            state: resolve(&dir, raw.state, ".validator"),
            contracts: raw.contracts.map(|p| dir.join(p)),
            signing_key_file,
            dir,
            defaults,
            events,
            tools,
            hook,
            speculate,
            pipelines,
            hooks: Vec::new(),
            prompt: None,
            notes: Vec::new(),
            written: Vec::new(),
        })
    }

    /// `hook:` checked: a webhook the client can reach, a timeout that leaves time to answer.
    fn hook(&self, raw: &raw::RawHook, dir: &Path) -> Result<HookSettings, ConfigError> {
        let at = |key| [Step::Key("hook"), Step::Key("approvals"), Step::Key(key)];
        if let Some(why) = raw.approvals.webhook.as_deref().and_then(webhook_problem) {
            return Err(self.error(
                &at("webhook"),
                format!("the webhook cannot be used: {why}"),
                "write an http:// or https:// URL, such as https://hooks.slack.com/services/…",
            ));
        }
        if raw.approvals.timeout.is_some_and(|t| t.is_zero()) {
            return Err(self.error(
                &at("timeout"),
                "`timeout: 0` leaves no time for a person to answer",
                "give the time a request stays open, such as 10m",
            ));
        }
        let mut hook = HookSettings::from_raw(raw);
        hook.approvals.token_file = hook.approvals.token_file.map(|file| dir.join(file));
        Ok(hook)
    }

    /// `speculate:` checked: each `ignore` entry a plain path inside the task.
    fn speculate(&self, raw: Option<&raw::RawSpeculate>) -> Result<Speculate, ConfigError> {
        Speculate::from_raw(raw).map_err(|(at, path)| {
            self.error(
                &[Step::Key("speculate"), Step::Key("ignore"), Step::Index(at)],
                format!(
                    "`{}` is no plain path inside the task",
                    validator_text::one_line(&path)
                ),
                "write a path relative to the task, without `..`, such as `coverage` or `target`",
            )
        })
    }

    /// `defaults:` checked: each breaker's and budget's value, or its default.
    fn defaults(&self, raw: &raw::RawDefaults) -> Result<Defaults, ConfigError> {
        let fallback = Defaults::default();
        let drift = raw.drift.as_ref();
        let defaults = Defaults {
            timeout: raw.timeout.unwrap_or(fallback.timeout),
            max_attempts: raw.max_attempts.unwrap_or(fallback.max_attempts),
            strikes: raw.strikes.unwrap_or(fallback.strikes),
            budget: raw.budget.unwrap_or(fallback.budget),
            max_tokens: raw.max_tokens,
            max_time: raw.max_time,
            drift: Drift {
                // As many repeats as the same failure is allowed, unless said.
                stops: drift
                    .and_then(|d| d.stops)
                    .unwrap_or(raw.strikes.unwrap_or(fallback.strikes)),
                similarity: drift
                    .and_then(|d| d.similarity)
                    .unwrap_or(fallback.drift.similarity),
            },
            tool_strikes: raw.tool_strikes.unwrap_or(fallback.tool_strikes),
        };
        if !(0.0..=1.0).contains(&defaults.drift.similarity) {
            return Err(self.error(
                &[
                    Step::Key("defaults"),
                    Step::Key("drift"),
                    Step::Key("similarity"),
                ],
                format!(
                    "`similarity: {}` is not between 0 and 1",
                    defaults.drift.similarity
                ),
                "write a fraction such as 0.9 (1 means identical)",
            ));
        }
        if drift.and_then(|d| d.stops) == Some(1) {
            return Err(self.error(
                &[
                    Step::Key("defaults"),
                    Step::Key("drift"),
                    Step::Key("stops"),
                ],
                "`stops: 1` would escalate every failure: a stop is alike to the one before it",
                "give at least 2 (the default is `strikes`), or 0 to turn the drift breaker off",
            ));
        }
        if defaults.max_tokens == Some(0) {
            return Err(self.error(
                &[Step::Key("defaults"), Step::Key("max_tokens")],
                "`max_tokens: 0` would stop every session at once",
                "give a positive number of tokens, or remove it",
            ));
        }
        for (key, zero) in [
            ("timeout", defaults.timeout.is_zero()),
            ("budget", defaults.budget.is_zero()),
            ("max_time", defaults.max_time.is_some_and(|t| t.is_zero())),
        ] {
            if zero {
                return Err(self.error(
                    &[Step::Key("defaults"), Step::Key(key)],
                    format!("`{key}` is zero"),
                    "give it a positive duration such as 10m",
                ));
            }
        }
        Ok(defaults)
    }

    fn tools(&self, raw: tools::RawTools) -> Result<tools::Tools, ConfigError> {
        let commands = raw
            .commands
            .iter()
            .flatten()
            .enumerate()
            .map(|(n, rule)| {
                tools::CommandRule::new(rule).map_err(|why| {
                    self.error(
                        &[
                            Step::Key("tools"),
                            Step::Key("commands"),
                            Step::Index(n),
                            Step::Key("match"),
                        ],
                        why,
                        "write the command's words, such as `git push` or `rm -*r*`",
                    )
                })
            })
            .collect::<Result<_, _>>()?;
        let fallback = tools::Tools::default();
        let writable = match &raw.writable {
            None => fallback.writable,
            Some(paths) => paths
                .iter()
                .enumerate()
                .map(|(n, path)| {
                    tools::expand_home(path).map_err(|why| {
                        self.error(
                            &[Step::Key("tools"), Step::Key("writable"), Step::Index(n)],
                            why,
                            "write an absolute path or one under `~/`, such as `~/.cache`",
                        )
                    })
                })
                .collect::<Result<_, _>>()?,
        };
        Ok(tools::Tools {
            commands,
            unknown: raw.unknown.unwrap_or(fallback.unknown),
            stop_after: raw.stop_after.unwrap_or(fallback.stop_after),
            confine: raw.confine.unwrap_or(fallback.confine),
            writable,
        })
    }

    fn retention(&self, raw: &raw::RawEvents) -> Result<crate::events::Retention, ConfigError> {
        use crate::events::{MAX_KEEP, MIN_MAX_BYTES, Retention};
        let fallback = Retention::default();
        let retention = Retention {
            max_bytes: raw.max_bytes.unwrap_or(fallback.max_bytes),
            keep: raw.keep.unwrap_or(fallback.keep),
        };
        if retention.max_bytes < MIN_MAX_BYTES {
            return Err(self.error(
                &[Step::Key("events"), Step::Key("max_bytes")],
                format!(
                    "`max_bytes: {}` is smaller than one event may be",
                    retention.max_bytes
                ),
                format!("give it at least {MIN_MAX_BYTES} (bytes)"),
            ));
        }
        if retention.keep > MAX_KEEP {
            return Err(self.error(
                &[Step::Key("events"), Step::Key("keep")],
                format!("`keep: {}` is more than {MAX_KEEP} files", retention.keep),
                format!("keep at most {MAX_KEEP} older logs, or raise `max_bytes`"),
            ));
        }
        Ok(retention)
    }

    fn check_gates(
        &self,
        specs: &[GateSpec],
        dir: &Path,
        at: &dyn Fn(&[Step]) -> Vec<Step>,
    ) -> Result<Vec<Gate>, ConfigError> {
        let gate_at =
            |g: usize, key: &'static str| at(&[Step::Key("gates"), Step::Index(g), Step::Key(key)]);
        for (g, spec) in specs.iter().enumerate() {
            if let Some(why) = bad_gate_name(&spec.name) {
                return Err(self.error(
                    &gate_at(g, "name"),
                    format!("`{}` cannot name a gate: {why}", spec.name),
                    "use letters, digits, `-`, `_` and `.`",
                ));
            }
            if specs[..g].iter().any(|earlier| earlier.name == spec.name) {
                return Err(self.error(
                    &gate_at(g, "name"),
                    format!("a second gate is named `{}`", spec.name),
                    "gate names are unique within a pipeline; rename one",
                ));
            }
            if spec.inputs.is_some() && !Rule::about(spec.rule).cacheable {
                return Err(self.error(
                    &gate_at(g, "inputs"),
                    format!(
                        "rule `{}` cannot be cached: it judges more than files (the done signal, git history, a reviewer's opinion)",
                        spec.rule
                    ),
                    "remove `inputs:` from this gate; it runs every time",
                ));
            }
            if spec.inputs.as_ref().is_some_and(Vec::is_empty) {
                return Err(self.error(
                    &gate_at(g, "inputs"),
                    "`inputs:` is empty, so the gate would be cached forever once it passed",
                    "list the files the gate reads, e.g. `inputs: [\"src/**/*.rs\", \"Cargo.toml\"]`, or remove the key",
                ));
            }
            if spec.timeout.is_some_and(|t| t.is_zero()) {
                return Err(self.error(
                    &gate_at(g, "timeout"),
                    "`timeout` is zero",
                    "give it a positive duration such as 5m",
                ));
            }
        }
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        let mut gates = Vec::with_capacity(specs.len());
        for (g, spec) in specs.iter().enumerate() {
            let rule = Rule::from_spec(spec, dir)
                .map_err(|err| self.error(&gate_at(g, err.key), err.message, err.help))?;
            let only_if = spec
                .only_if
                .as_deref()
                .map(crate::rules::only_if::OnlyIf::from_spec)
                .transpose()
                .map_err(|err| self.error(&gate_at(g, err.key), err.message, err.help))?;
            let unless = spec
                .unless
                .as_deref()
                .map(crate::rules::only_if::OnlyIf::from_unless)
                .transpose()
                .map_err(|err| self.error(&gate_at(g, err.key), err.message, err.help))?;
            let route = |text: &Option<raw::RouteText>,
                         key: &'static str,
                         default: Route|
             -> Result<Route, ConfigError> {
                let Some(text) = text else { return Ok(default) };
                parse_route(&text.0, &names)
                    .map_err(|(message, help)| self.error(&gate_at(g, key), message, help))
            };
            gates.push(Gate {
                name: spec.name.clone(),
                on_pass: route(&spec.on_pass, "on_pass", Route::Continue)?,
                on_fail: route(&spec.on_fail, "on_fail", Route::Block)?,
                timeout: spec.timeout,
                about: None,
                inputs: spec.inputs.as_deref().map(PatternSet::new),
                only_if,
                unless,
                group: spec.group.clone(),
                definition: serde_json::to_string(spec).unwrap_or_default(),
                rule,
            });
        }
        Ok(gates)
    }
}

impl Loader<'_> {
    /// A group is gates written next to each other that run together and are settled in order,
    /// so within it the run can only go on: every gate but the last goes on when it passes, a
    /// failure blocks, goes on or stops, and nothing jumps into its middle.
    fn check_groups(
        &self,
        gates: &[Gate],
        at: &dyn Fn(&[Step]) -> Vec<Step>,
    ) -> Result<(), ConfigError> {
        let gate_at =
            |g: usize, key: &'static str| at(&[Step::Key("gates"), Step::Index(g), Step::Key(key)]);
        for (g, gate) in gates.iter().enumerate() {
            let Some(group) = gate.group.as_deref() else {
                continue;
            };
            if let Some(why) = bad_gate_name(group) {
                return Err(self.error(
                    &gate_at(g, "group"),
                    format!("`{group}` cannot name a group: {why}"),
                    "use letters, digits, `-`, `_` and `.`",
                ));
            }
            let continues = gates.get(g + 1).and_then(|n| n.group.as_deref()) == Some(group);
            let started_before = gates[..g]
                .iter()
                .rposition(|earlier| earlier.group.as_deref() == Some(group))
                .is_some_and(|last| last + 1 != g);
            if started_before {
                return Err(self.error(
                    &gate_at(g, "group"),
                    format!(
                        "group `{group}` is split: its gates must be written next to each other"
                    ),
                    "move this gate up to the others of its group, or give it another group",
                ));
            }
            if continues && gate.on_pass != Route::Continue {
                return Err(self.error(
                    &gate_at(g, "on_pass"),
                    format!(
                        "`{}` is in group `{group}` with gates after it, which run with it whatever it routes to",
                        gate.name
                    ),
                    "remove `on_pass` (CONTINUE), or end the group at this gate",
                ));
            }
            if matches!(gate.on_fail, Route::Goto(_) | Route::Pass) {
                return Err(self.error(
                    &gate_at(g, "on_fail"),
                    format!(
                        "`{}` is in group `{group}`, whose gates run together: a failure can block (BLOCK), go on (CONTINUE) or stop (STOP), not jump",
                        gate.name
                    ),
                    "use BLOCK, CONTINUE or STOP, or take the gate out of the group",
                ));
            }
        }
        for (g, gate) in gates.iter().enumerate() {
            for (key, route) in [("on_pass", gate.on_pass), ("on_fail", gate.on_fail)] {
                let Route::Goto(target) = route else { continue };
                let into_middle = target > 0
                    && gates[target].group.is_some()
                    && gates[target].group == gates[target - 1].group;
                if into_middle {
                    return Err(self.error(
                        &gate_at(g, key),
                        format!(
                            "`{}` jumps into the middle of group `{}`",
                            gates[target].name,
                            gates[target].group.as_deref().unwrap_or_default()
                        ),
                        "jump to the group's first gate, which starts them all",
                    ));
                }
            }
        }
        Ok(())
    }
}

fn parse_route(text: &str, names: &[&str]) -> Result<Route, (String, String)> {
    match text {
        "CONTINUE" => Ok(Route::Continue),
        "BLOCK" => Ok(Route::Block),
        "PASS" => Ok(Route::Pass),
        "STOP" => Ok(Route::Stop),
        name => match names.iter().position(|n| *n == name) {
            Some(index) => Ok(Route::Goto(index)),
            None => {
                let routing = ROUTING_WORDS.iter().find(|w| w.eq_ignore_ascii_case(name));
                let near =
                    validator_text::closest(name, names.iter().copied().chain(ROUTING_WORDS));
                let help = match (routing, near) {
                    (Some(word), _) => format!("routing words are upper case: write `{word}`"),
                    (None, Some(near)) => format!("did you mean `{near}`?"),
                    _ => format!(
                        "write CONTINUE, BLOCK, PASS, STOP or one of this pipeline's gates: {}",
                        names.join(", ")
                    ),
                };
                Err((format!("there is no gate named `{name}` to jump to"), help))
            }
        },
    }
}

fn bad_gate_name(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("it is empty")
    } else if ROUTING_WORDS.contains(&name) {
        Some("it is a routing word")
    } else if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        Some("it has characters other than letters, digits, `-`, `_` and `.`")
    } else {
        None
    }
}

/// A suggestion for serde's own messages: the closest known key or rule for a typo, else what
/// serde says it expected.
fn hint_for(message: &str) -> String {
    for (unknown, what) in [("unknown field `", "key"), ("unknown variant `", "value")] {
        let Some(rest) = message.split(unknown).nth(1) else {
            continue;
        };
        let typed = rest.split('`').next().unwrap_or_default();
        let expected: Vec<&str> = rest
            .split("expected ")
            .nth(1)
            .unwrap_or_default()
            .split('`')
            .skip(1)
            .step_by(2)
            .collect();
        return match validator_text::closest(typed, expected.iter().copied()) {
            Some(near) => format!("did you mean `{near}`?"),
            _ if what == "value" && !expected.is_empty() => {
                format!("write one of: {}", expected.join(", "))
            }
            _ => "remove it, or check its indentation: it may belong to another level".into(),
        };
    }
    if message.contains("does not compile") {
        return "close every `[` and `{`, or escape a literal `*`, `?`, `[` or `{` with a backslash".into();
    }
    if message.contains("duration") {
        return "write a duration such as 500ms, 30s, 10m or 1h".into();
    }
    if message.contains("leave") || message.contains("climbs out") || message.contains("absolute") {
        return "write paths and globs relative to the task directory".into();
    }
    if let Some(rest) = message.split("missing field `").nth(1) {
        let field = rest.split('`').next().unwrap_or_default();
        return format!("add `{field}:` here");
    }
    "see docs/rules-file.md, and `validator rules schema` for every key".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_gate_waits_for_its_words_whole_and_in_any_case() {
        let hook = PromptHook {
            pipeline: Some("UserPromptSubmit".into()),
            keywords: vec![("check".into(), vec!["check".into(), "lint it".into()])],
            commands: false,
        };
        assert!(hook.runs_for("check", "Please CHECK it."));
        assert!(hook.runs_for("check#2", "check"));
        assert!(hook.runs_for("check", "now lint it!"));
        assert!(!hook.runs_for("check", "rechecking, checks"));
        assert!(!hook.runs_for("check", "lint items"));
        assert!(hook.runs_for("other", "anything"));
        assert!(!holds_word("ééCheck", "check") && holds_word("é check", "check"));
        assert!(!holds_word("anything", " "));
    }

    fn parse(source: &str) -> Result<Rules, ConfigError> {
        Rules::parse(Path::new("/nowhere/validator.yaml"), source)
    }

    const MINIMAL: &str = "version: 1\npipelines:\n  - name: main\n    gates:\n      - name: status\n        rule: status\n";

    #[test]
    fn minimal_file_gets_defaults() {
        let rules = parse(MINIMAL).unwrap();
        assert_eq!(rules.defaults, Defaults::default());
        assert_eq!(rules.pipelines[0].gates[0].on_fail, Route::Block);
        assert_eq!(rules.staging, Path::new("/nowhere/staging"));
        assert_eq!(rules.verdicts, rules.staging);
    }

    #[test]
    fn unknown_keys_are_positioned_with_a_suggestion() {
        let err = parse(&MINIMAL.replace("rule: status", "rule: status\n        on_fial: BLOCK"))
            .unwrap_err();
        assert_eq!((err.line, err.column), (Some(7), Some(9)));
        assert!(
            err.message.contains("unknown field `on_fial`"),
            "{}",
            err.message
        );
        assert_eq!(err.help.as_deref(), Some("did you mean `on_fail`?"));
    }

    #[test]
    fn jump_targets_must_exist() {
        let err = parse(&MINIMAL.replace("rule: status", "rule: status\n        on_fail: lnit"))
            .unwrap_err();
        assert_eq!((err.line, err.column), (Some(7), Some(18)));
        assert!(err.message.contains("no gate named `lnit`"));
        let err = parse(&MINIMAL.replace("rule: status", "rule: status\n        on_fail: block"))
            .unwrap_err();
        assert_eq!(
            err.help.as_deref(),
            Some("routing words are upper case: write `BLOCK`")
        );
    }

    #[test]
    fn keys_of_other_rules_are_refused() {
        let err = parse(&MINIMAL.replace("rule: status", "rule: status\n        run: cargo test"))
            .unwrap_err();
        assert_eq!(err.line, Some(7));
        assert!(
            err.message.contains("`run` is not a key of rule `status`"),
            "{}",
            err.message
        );
    }

    #[test]
    fn duplicate_gate_names_are_refused() {
        let source = format!("{MINIMAL}      - name: status\n        rule: status\n");
        let err = parse(&source).unwrap_err();
        assert_eq!((err.line, err.column), (Some(7), Some(15)));
    }

    #[test]
    fn bad_durations_and_globs_point_at_the_value() {
        let err =
            parse(&MINIMAL.replace("rule: status", "rule: status\n        timeout: 10 minutes"))
                .unwrap_err();
        assert_eq!(err.line, Some(7));
        assert!(err.message.contains("duration"), "{}", err.message);
        let err =
            parse(&MINIMAL.replace("rule: status", "rule: exists\n        paths: [\"src/[\"]"))
                .unwrap_err();
        assert_eq!(err.line, Some(7));
        assert!(err.message.contains("does not compile"), "{}", err.message);
    }
}
