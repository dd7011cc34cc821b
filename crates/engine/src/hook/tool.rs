//! An agent's tool calls, as its hooks hand them to validator: before one runs (Claude Code and
//! Codex `PreToolUse`, Gemini CLI `BeforeTool`, OpenCode's plugin `tool.execute.before`) the
//! call is judged by [`crate::tool_policy`] from the rules and contract the stop is judged by;
//! after one ran (`PostToolUse`, `AfterTool`, `tool.execute.after`) what it changed is listed
//! and a breach the stop would fail is told to the agent at once, and the same tool error
//! three times in a row tells it to change approach.
//!
//! Refusals are not attempts: they count toward no breaker of the stop; each is a
//! `tool_denied` event, and the same refusal `tools.stop_after` times in a row stops the agent
//! where its CLI can be stopped from a hook.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::session::{Held, Memory};
use super::{Agent, Input, Project, session_key};
use crate::config::Rules;
use crate::events::{Event, EventLog};
use crate::rules::file_scope;
use crate::task::Task;
use crate::tool_policy::{Action, Permission, Policy, Ruling};

/// The part of a tool hook's input validator reads, named as each agent names it.
#[derive(Debug, Clone, Default)]
pub struct Call {
    pub tool: String,
    pub input: Value,
    /// What the tool gave back, after it ran.
    pub response: Value,
    /// Whether it failed (an error event, or an error in its response).
    pub failed: bool,
}

impl Call {
    /// The call an input describes.
    pub fn of(input: &Input) -> Call {
        let response = input.tool_response.clone().unwrap_or(Value::Null);
        let error = input.error.clone().filter(|e| !e.is_null());
        let failed = error.is_some()
            || input.hook_event_name.as_deref() == Some("PostToolUseFailure")
            || response_failed(&response);
        Call {
            tool: input.tool_name.clone().unwrap_or_default(),
            input: input.tool_input.clone().unwrap_or(Value::Null),
            response: match error {
                Some(error) => json!({"error": error, "response": response}),
                None => response,
            },
            failed,
        }
    }

    /// What the call does, and the directory it runs in (the input's `cwd`, or the tool's own
    /// working directory when it names one).
    pub fn action(&self, cwd: &Path) -> (Action, PathBuf) {
        let field = |names: &[&str]| {
            names
                .iter()
                .find_map(|name| self.input.get(name).and_then(Value::as_str))
        };
        let dir = field(&["workdir", "dir_path", "directory", "cwd"])
            .map(|dir| cwd.join(dir))
            .unwrap_or_else(|| cwd.to_path_buf());
        let tool = self.tool.to_ascii_lowercase();
        if PATCH_TOOLS.contains(&tool.as_str()) {
            let files = patch_text(&self.input).map(crate::tool_policy::patch_files);
            return match files {
                Some(Ok(files)) if !files.is_empty() => (Action::Write(files), dir),
                Some(Err(why)) => (
                    Action::TooBig(format!(
                        "the patch `{}` is too big: {why}",
                        validator_text::name(&self.tool)
                    )),
                    dir,
                ),
                _ => (
                    Action::Unknown(format!(
                        "the patch `{}` carries names no file validator can read",
                        validator_text::name(&self.tool)
                    )),
                    dir,
                ),
            };
        }
        if SHELL_TOOLS.contains(&tool.as_str()) {
            return match shell_line(&self.input) {
                Some(line) => (Action::Shell(line), dir),
                None => (Action::Other, dir),
            };
        }
        if WRITE_TOOLS.contains(&tool.as_str()) {
            let paths: Vec<String> = PATH_FIELDS
                .iter()
                .filter_map(|name| self.input.get(name).and_then(Value::as_str))
                .map(str::to_owned)
                .collect();
            if !paths.is_empty() {
                return (Action::Write(paths), dir);
            }
        }
        if READ_TOOLS.contains(&tool.as_str()) {
            return (Action::Other, dir);
        }
        (
            Action::Unknown(format!(
                "validator does not know what the tool `{}` writes",
                validator_text::name(&self.tool)
            )),
            dir,
        )
    }

    /// The call's identity for the tool-error breaker: the tool, its input and its error, with
    /// numbers taken out (a duration or a pid does not make two errors differ).
    pub fn error_signature(&self) -> String {
        // A confined call is the call the model made: the rewrite's scratch names differ each
        // time.
        let mut input = self.input.clone();
        if let Some(Value::String(line)) = input.get_mut("command")
            && let Some(original) = unconfined(line)
        {
            *line = original.to_owned();
        }
        let text = format!("{}\n{}\n{}", self.tool, input, self.response);
        let normalized: String = text
            .chars()
            .map(|c| if c.is_ascii_digit() { '0' } else { c })
            .collect();
        use sha2::{Digest, Sha256};
        format!("{:x}", Sha256::digest(normalized.as_bytes()))
    }
}

/// The model's own command inside a line the pre-tool hook rewrote to run confined
/// ([`Setting::confined`]), for telling one call from another; never for judging.
fn unconfined(line: &str) -> Option<&str> {
    line.contains(" exec --call ")
        .then(|| line.rsplit_once("; exit; "))
        .flatten()
        .map(|(_, original)| original)
}

/// Why a tool call that names a path is refused for reaching one of validator's keys (the
/// signing key in force, the approvals token), or a directory that holds one: the agent's own
/// read tools run in the agent, not under `validator exec`, so the kernel does not hide them.
fn reads_a_key(rules: &Rules, call: &Call, cwd: &Path) -> Option<String> {
    let keys: Vec<PathBuf> = crate::confine::keys(rules)
        .iter()
        .filter_map(|key| key.canonicalize().ok())
        .collect();
    if keys.is_empty() {
        return None;
    }
    let mut named: Vec<&str> = PATH_FIELDS
        .iter()
        .chain(&["dir_path", "directory", "pattern", "cwd", "workdir"])
        .filter_map(|field| call.input.get(*field).and_then(Value::as_str))
        .collect();
    for field in ["paths", "absolute_paths", "file_paths"] {
        if let Some(Value::Array(items)) = call.input.get(field) {
            named.extend(items.iter().filter_map(Value::as_str));
        }
    }
    named.into_iter().find_map(|path| {
        let real = cwd.join(path).canonicalize().ok()?;
        keys.iter().any(|key| key.starts_with(&real)).then(|| {
            format!(
                "reading {} is refused: it is or holds a key of validator's, which no worker reads",
                validator_text::name(path)
            )
        })
    })
}

/// Tools that run a shell command line (`command`).
const SHELL_TOOLS: &[&str] = &[
    "bash",
    "shell",
    "run_shell_command",
    "exec_command",
    "local_shell",
    "container.exec",
    "unified_exec",
];

/// Tools that write the file their input names.
const WRITE_TOOLS: &[&str] = &[
    "write",
    "edit",
    "multiedit",
    "notebookedit",
    "write_file",
    "replace",
    "create_file",
    "str_replace_editor",
    "str_replace_based_edit_tool",
];

/// Tools that apply the patch their input carries (Codex's `apply_patch`, OpenCode's `patch`).
const PATCH_TOOLS: &[&str] = &["apply_patch", "applypatch", "patch"];

/// Tools that write no file in the task, whatever their input: reading, searching, fetching,
/// planning, asking. Any other tool (an MCP server's, one a newer CLI adds) may write
/// anything, and is held to `tools.unknown`.
const READ_TOOLS: &[&str] = &[
    // Claude Code
    "read",
    "glob",
    "grep",
    "ls",
    "webfetch",
    "websearch",
    "todowrite",
    "todoread",
    "task",
    "agent",
    "notebookread",
    "bashoutput",
    "killshell",
    "killbash",
    "exitplanmode",
    "askuserquestion",
    "listmcpresourcestool",
    "readmcpresourcetool",
    "enterplanmode",
    "skill",
    "slashcommand",
    // Codex CLI
    "read_file",
    "list_dir",
    "grep_files",
    "view_image",
    "update_plan",
    "web_search",
    "list_mcp_resources",
    "list_mcp_resource_templates",
    "read_mcp_resource",
    // Gemini CLI
    "read_many_files",
    "list_directory",
    "search_file_content",
    "web_fetch",
    "google_web_search",
    "write_todos",
    // OpenCode
    "list",
    "codesearch",
    "question",
];

const PATH_FIELDS: &[&str] = &[
    "file_path",
    "filePath",
    "notebook_path",
    "path",
    "absolute_path",
];

/// The patch a patch tool's input carries: the first string field holding one. Only a patch
/// tool's input is read so: text that merely mentions a patch (a command, a file's content)
/// is not one.
fn patch_text(input: &Value) -> Option<&str> {
    let is_patch = |text: &&str| text.contains("*** Begin Patch");
    match input {
        Value::String(text) => Some(text.as_str()).filter(is_patch),
        Value::Object(fields) => fields.values().find_map(patch_text),
        Value::Array(items) => items.iter().find_map(patch_text),
        _ => None,
    }
}

/// The command line of a shell tool: a string, or an argv (`["bash", "-lc", "…"]` is its
/// script; any other argv is quoted back into a line).
fn shell_line(input: &Value) -> Option<String> {
    match input.get("command")? {
        Value::String(line) => Some(line.clone()),
        Value::Array(words) => {
            let words: Vec<&str> = words.iter().filter_map(Value::as_str).collect();
            match words.as_slice() {
                [shell, flag, script]
                    if flag.starts_with('-') && flag.contains('c') && is_shell(shell) =>
                {
                    Some((*script).to_owned())
                }
                _ => Some(shell_words::join(words)),
            }
        }
        _ => None,
    }
}

fn is_shell(program: &str) -> bool {
    let name = program.rsplit('/').next().unwrap_or(program);
    matches!(name, "sh" | "bash" | "zsh" | "dash")
}

/// Whether a tool's response says it failed: an error field, a non-zero exit code (a field,
/// or the `Exit code: N` line Codex CLI's and Gemini CLI's text carries), or, where the text is
/// all there is (Codex CLI's shell), an error a person would read in it.
fn response_failed(response: &Value) -> bool {
    match response {
        Value::String(text) => text_failed(text),
        Value::Object(fields) => {
            let exit = ["exit_code", "exitCode", "returncode", "exit"]
                .iter()
                .find_map(|name| fields.get(*name).and_then(Value::as_i64));
            exit.is_some_and(|code| code != 0)
                || fields.get("is_error").and_then(Value::as_bool) == Some(true)
                || fields
                    .get("error")
                    .is_some_and(|e| !e.is_null() && e != &Value::Bool(false) && e != "")
                || ["llmContent", "output"]
                    .iter()
                    .filter_map(|name| fields.get(*name).and_then(Value::as_str))
                    .any(exit_line_failed)
        }
        _ => false,
    }
}

/// An `Exit code: N` (or `Process exited with code N`) line with N other than 0.
fn exit_line_failed(text: &str) -> bool {
    text.lines().any(|line| {
        let line = line.trim();
        ["Exit code:", "Exit Code:", "Process exited with code"]
            .iter()
            .find_map(|prefix| line.strip_prefix(prefix))
            .and_then(|code| code.trim().parse::<i64>().ok())
            .is_some_and(|code| code != 0)
    })
}

/// Output text that says a command failed.
fn text_failed(text: &str) -> bool {
    exit_line_failed(text)
        || text.lines().map(str::trim_start).any(|line| {
            [
                "error:",
                "error[",
                "Error:",
                "ERROR:",
                "fatal:",
                "Traceback (most recent call last)",
            ]
            .iter()
            .any(|start| line.starts_with(start))
                || line.contains(": No such file or directory")
                || line.contains(": command not found")
                || line.contains(": Permission denied")
        })
}

/// What validator answers a tool hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolAnswer {
    /// No opinion: the agent's own permission rules decide, as if there were no hook.
    Nothing,
    /// Refuse the call; the reason reaches the model.
    Deny(String),
    /// Refuse it and stop the agent (where it can be stopped from a hook).
    DenyAndStop { reason: String, stop: String },
    /// A person must confirm (where the agent can ask one).
    Ask(String),
    /// After a call: put this in front of the model before it goes on.
    Tell(String),
    /// Could not judge: say so to the person, leave the call to the agent's own rules.
    Notice(String),
    /// Run the call as `input` says instead (a shell call under `validator exec`); the agent's
    /// own rules still decide whether it runs, and `ask` whether a person confirms it first.
    Rewrite { input: Value, ask: Option<String> },
}

impl ToolAnswer {
    /// The answer to a decision.
    pub fn of(decision: Permission) -> ToolAnswer {
        match decision {
            Permission::Allow => ToolAnswer::Nothing,
            Permission::Deny(why) => ToolAnswer::Deny(why),
            Permission::Ask(why) => ToolAnswer::Ask(why),
        }
    }

    /// The JSON line for `agent`'s `event`, or `None` for no answer.
    pub fn to_json(&self, agent: Agent, event: &str) -> Option<String> {
        let prefixed = |why: &str| format!("validator: {why}");
        let value = match self {
            ToolAnswer::Nothing => return None,
            ToolAnswer::Notice(message) => json!({"systemMessage": prefixed(message)}),
            ToolAnswer::Deny(why) => deny(agent, event, &prefixed(why)),
            // Codex drops a whole answer that holds a field it does not support, the deny
            // with it: it cannot be stopped from a hook, so it is only refused.
            ToolAnswer::DenyAndStop { reason, .. } if agent == Agent::Codex => {
                deny(agent, event, &prefixed(reason))
            }
            // Claude Code stops only after running the tool unless the deny comes with it;
            // Gemini CLI refuses and stops; OpenCode's plugin aborts the session.
            ToolAnswer::DenyAndStop { reason, stop } => {
                let mut answer = deny(agent, event, &prefixed(reason));
                if let Some(fields) = answer.as_object_mut() {
                    fields.insert("continue".into(), json!(false));
                    fields.insert("stopReason".into(), json!(prefixed(stop)));
                }
                answer
            }
            // Only Claude Code can ask a person (headless, it refuses and the model reads why);
            // Gemini CLI's `ask` ends a headless run silently, Codex ignores it.
            ToolAnswer::Ask(why) => match agent {
                Agent::Claude => json!({"hookSpecificOutput": {
                    "hookEventName": event,
                    "permissionDecision": "ask",
                    "permissionDecisionReason": prefixed(why),
                }}),
                _ => deny(agent, event, &prefixed(why)),
            },
            // Added after the tool's output, which the model still reads: a `block` would
            // replace it (Codex, Gemini CLI) or name the hook's command line (Claude Code).
            // Claude Code applies a rewrite with no decision and still checks its own rules
            // against the rewritten call; Codex takes one only with `allow`.
            ToolAnswer::Rewrite { input, ask } => match agent {
                Agent::Claude => {
                    let mut answer = json!({"hookEventName": event, "updatedInput": input});
                    if let Some(why) = ask {
                        answer["permissionDecision"] = json!("ask");
                        answer["permissionDecisionReason"] = json!(prefixed(why));
                    }
                    json!({"hookSpecificOutput": answer})
                }
                Agent::Codex => json!({"hookSpecificOutput": {
                    "hookEventName": event,
                    "permissionDecision": "allow",
                    "permissionDecisionReason": prefixed(CONFINED),
                    "updatedInput": input,
                }}),
                Agent::Gemini => json!({"hookSpecificOutput": {
                    "hookEventName": event,
                    "tool_input": input,
                }}),
                Agent::Opencode => json!({"args": input}),
            },
            ToolAnswer::Tell(message) => match agent {
                Agent::Opencode => json!({"tell": prefixed(message)}),
                _ => json!({"hookSpecificOutput": {
                    "hookEventName": event,
                    "additionalContext": prefixed(message),
                }}),
            },
        };
        Some(value.to_string())
    }

    pub fn word(&self) -> &'static str {
        match self {
            ToolAnswer::Nothing => "allow",
            ToolAnswer::Deny(_) => "deny",
            ToolAnswer::DenyAndStop { .. } => "deny_and_stop",
            ToolAnswer::Ask(_) => "ask",
            ToolAnswer::Tell(_) => "tell",
            ToolAnswer::Notice(_) => "notice",
            ToolAnswer::Rewrite { .. } => "confine",
        }
    }
}

/// Why a call was rewritten, where the agent wants a reason.
const CONFINED: &str =
    "this command runs confined by the kernel to the writes the task's rules accept";

/// A refusal in `agent`'s words: Claude Code and Codex read `permissionDecision` (Codex only
/// with a reason), Gemini CLI a top-level `decision`, OpenCode's plugin throws the reason.
fn deny(agent: Agent, event: &str, why: &str) -> Value {
    match agent {
        Agent::Claude | Agent::Codex => json!({"hookSpecificOutput": {
            "hookEventName": event,
            "permissionDecision": "deny",
            "permissionDecisionReason": why,
        }}),
        Agent::Gemini | Agent::Opencode => json!({"decision": "deny", "reason": why}),
    }
}

/// The tool hooks' own deadline for listing what a tool changed: well inside every agent's
/// hook timeout, so an answer always comes.
const AFTER_TOOL_LISTING: std::time::Duration = std::time::Duration::from_secs(20);

/// The same tool error this many times in a row (`defaults.tool_strikes`) is answered with the
/// circuit breaker's words.
fn same_error_message(times: u32) -> String {
    format!("STOP. Same error {times} times. Use a different tool or approach.")
}

/// What a tool hook needs besides its input: the task the stop would judge and the session's
/// record.
struct Setting<'r> {
    rules: &'r Rules,
    task: Task,
    contract: Option<crate::contract::Contract>,
    /// The agent whose memory this is in the session record ("" for the session's own).
    agent_key: String,
    /// Opened when there is something to log: most calls are allowed and log nothing.
    events: std::cell::OnceCell<EventLog>,
    session: String,
}

impl<'r> Setting<'r> {
    fn new(rules: &'r Rules, input: &Input, project: &Project) -> Result<Setting<'r>, String> {
        let task = Task::new(project.task_name(), &project.dir)
            .map_err(|err| format!("the project cannot be judged: {err}"))?
            .ignoring(&rules.state);
        let contract = crate::contract::Contract::for_task(rules, &task.name)
            .map_err(|err| format!("the task's contract cannot be read: {err:#}"))?;
        Ok(Setting {
            rules,
            task,
            contract,
            agent_key: input.subagent().unwrap_or_default().to_owned(),
            events: std::cell::OnceCell::new(),
            session: input.session_key(),
        })
    }

    fn policy<'s>(&'s self, input: &Input) -> Policy<'s> {
        let pipeline = super::stop_pipeline(self.rules, input, &self.task.name);
        Policy::new(
            &self.task,
            pipeline,
            self.contract.as_ref(),
            &self.rules.tools,
        )
    }

    /// The shell call `call` rewritten to run under `validator exec` for this task: `None`
    /// for a call that is no shell command, with confinement off, or where this kernel cannot
    /// confine and the rules do not require it; `Err` (the call is refused) where they do.
    fn confined(
        &self,
        input: &Input,
        call: &Call,
        action: &Action,
    ) -> Result<Option<Value>, String> {
        use crate::config::tools::Confine;
        use crate::confine::ABI_NEEDED;
        let Action::Shell(line) = action else {
            return Ok(None);
        };
        let mode = self.rules.tools.confine;
        if mode == Confine::Off {
            return Ok(None);
        }
        let abi = crate::confine::landlock_abi();
        if abi < ABI_NEEDED {
            return match mode {
                Confine::Required => Err(format!(
                    "this machine cannot confine commands (Landlock ABI {abi}, {ABI_NEEDED} needed), and the rules require it (`tools.confine: required`); a person must run it, or run the agent on a kernel with Landlock"
                )),
                _ => Ok(None),
            };
        }
        let exe = std::env::current_exe()
            .map_err(|err| format!("validator cannot tell where its own program is: {err}"))?;
        let exe = exe.to_string_lossy();
        // The rules file is named in a record of the user's, not on the line: some CLIs show
        // the model the command they run, and the operator's rules file is never shown it.
        let rules = self
            .rules
            .path
            .canonicalize()
            .or_else(|_| std::path::absolute(&self.rules.path))
            .unwrap_or(self.rules.path.clone());
        let record = crate::confine::Call {
            rules,
            task_dir: self.task.dir.clone(),
            task: self.task.name.clone(),
            pipeline: super::stop_pipeline(self.rules, input, &self.task.name)
                .map(|pipeline| pipeline.name.clone()),
        };
        let id = record
            .save()
            .map_err(|why| format!("this call cannot be confined: {why}"))?;
        let shell = ["/bin/bash", "/usr/bin/bash", "/bin/sh"]
            .into_iter()
            .find(|shell| Path::new(shell).exists())
            .unwrap_or("sh");
        // Codex's rules read no command whose name is quoted: validator's path is written as
        // it is, so one that needs quoting cannot be used without blinding them.
        if shell_words::quote(&exe) != exe {
            return Err(format!(
                "validator's program lies at a path a shell must quote ({}), so a confined command line would hide the command from the agent's own rules; install validator where its path has no spaces or quotes",
                validator_text::name(&exe)
            ));
        }
        let confined = format!("{exe} exec --call {id}");
        // Every CLI's own rules read each simple command of the line it runs (Codex's none
        // inside a group, and none whose name is quoted): the original follows an `exit`, read
        // but never run. A `cd` in the call stays in it (Claude Code's next call does not start
        // there). No form that kept it held: the original kept in a group that never runs can
        // close that group itself and run what follows unconfined.
        let command = format!(
            "{confined} -- {shell} -c {}; exit; {line}",
            shell_words::quote(line)
        );
        let mut rewritten = call.input.clone();
        match rewritten.get_mut("command") {
            // An argv: its script when it is a shell's (`["bash", "-lc", "…"]`), else all of it.
            Some(Value::Array(words)) => {
                let script = matches!(words.as_slice(), [Value::String(program), Value::String(flag), Value::String(_)]
                    if is_shell(program) && flag.starts_with('-') && flag.contains('c'));
                if script {
                    words[2] = json!(command);
                } else {
                    *words = vec![json!(shell), json!("-c"), json!(command)];
                }
            }
            Some(slot) => *slot = json!(command),
            None => return Ok(None),
        }
        Ok(Some(rewritten))
    }

    /// What to tell the model of a confined shell call whose output says a write was refused
    /// (`Permission denied`, `Read-only file system`): where it may write, so it knows why.
    fn refused_by_the_kernel(&self, input: &Input, call: &Call, action: &Action) -> Option<String> {
        if !matches!(action, Action::Shell(_))
            || self.rules.tools.confine == crate::config::tools::Confine::Off
            || crate::confine::landlock_abi() < crate::confine::ABI_NEEDED
        {
            return None;
        }
        let text = call.response.to_string();
        if !text.contains("Permission denied") && !text.contains("Read-only file system") {
            return None;
        }
        let contract = self.contract.as_ref();
        let scopes: Vec<(String, file_scope::FileScope)> = {
            let pipeline = super::stop_pipeline(self.rules, input, &self.task.name);
            Policy::new(&self.task, pipeline, contract, &self.rules.tools)
                .scopes()
                .to_vec()
        };
        Some(format!(
            "your shell commands run confined by the kernel to the writes this task's rules accept: {}; any other write fails with `Permission denied` or `Read-only file system`, however the command is written. Write only there (and in $TMPDIR).",
            crate::confine::writable_words(&scopes)
        ))
    }

    /// The policy's ruling on `action`, and a refusal of any call that names one of
    /// validator's keys.
    fn decide(&self, input: &Input, call: &Call, action: &Action, dir: &Path) -> Ruling {
        let mut judged = self.policy(input).decide(action, dir);
        if let Some(why) = reads_a_key(self.rules, call, dir) {
            judged.decision = Permission::Deny(why);
        }
        judged
    }

    fn record(&self, event: Event<'_>) {
        self.events
            .get_or_init(|| EventLog::open_or_discard(&self.rules.state, self.rules.events))
            .record(Some(&self.session), None, event);
    }
}

/// The answer to a tool call validator cannot judge because what it is judged by (the rules,
/// the contract, the project) cannot be read: refused with `why`, as a worker that breaks its
/// rules file must not turn every tool-time rule off by it. A tool that only reads (the
/// `Action::Other` kind) is left to the agent's own rules, so the agent can still look.
pub fn not_judged(input: &Input, why: &str) -> ToolAnswer {
    // Only the kind of action is read here; the directory it runs in does not change it.
    let (action, _) = Call::of(input).action(Path::new("/"));
    if matches!(action, Action::Other) {
        ToolAnswer::Notice(format!("this tool call was not judged: {why}"))
    } else {
        ToolAnswer::Deny(format!(
            "this tool call cannot be judged, so it is refused: {why}; a tool that only reads still runs"
        ))
    }
}

/// Judges a tool call before it runs. What cannot be judged (a project or contract that cannot
/// be read) is refused and says why, except a tool that only reads; the stop still judges.
pub fn before(
    rules: &Rules,
    agent: Agent,
    input: &Input,
    project: &Project,
    answer_by: super::AnswerBy,
) -> ToolAnswer {
    let setting = match Setting::new(rules, input, project) {
        Ok(setting) => setting,
        Err(why) => return not_judged(input, &why),
    };
    let mut held = Held::open(&rules.state, &session_key(&input.session_id, None));
    held.began();
    if let Some(over) = super::usage::over_budget(rules, agent, input, &mut held) {
        held.save();
        super::escalate_session(rules, input, &over);
        setting.record(Event::ToolDenied {
            tool: input.tool_name.as_deref().unwrap_or_default(),
            reason: &over,
            times: 1,
            stopped: true,
        });
        return ToolAnswer::DenyAndStop {
            reason: format!("ESCALATED: {over}; no more tools run in this session"),
            stop: format!("ESCALATED: {over}. A person decides."),
        };
    }
    let cwd = crate::tool_policy::resolve_cwd(&input.cwd);
    let call = Call::of(input);
    let (action, dir) = call.action(&cwd);
    let judged = setting.decide(input, &call, &action, &dir);
    // Where the agent cannot ask its person, the call waits for one (`validator approve`).
    let decision = match judged.decision {
        Permission::Ask(why) if super::approval::waits(rules, agent) => {
            // The session's record is let go meanwhile: the session's other hooks wait on it.
            held.save();
            let decision = super::approval::hold(&super::approval::Asked {
                rules,
                agent,
                input,
                tool: &call.tool,
                tool_input: &call.input,
                action: &action,
                why: &why,
                answer_by,
            });
            held = Held::open(&rules.state, &session_key(&input.session_id, None));
            decision
        }
        decision => decision,
    };
    let memory = held.memory(&setting.agent_key);
    let answer = match decision {
        Permission::Allow => {
            memory.refusal = None;
            match setting.confined(input, &call, &action) {
                Ok(Some(input)) => ToolAnswer::Rewrite { input, ask: None },
                Ok(None) => ToolAnswer::Nothing,
                Err(why) => ToolAnswer::Deny(why),
            }
        }
        // Only Claude Code can ask a person; elsewhere an ask is refused. Which one it is comes
        // from the decision itself, never from the reason's text (a path can say anything).
        Permission::Ask(why) if agent == Agent::Claude => {
            match setting.confined(input, &call, &action) {
                Ok(Some(input)) => ToolAnswer::Rewrite {
                    input,
                    ask: Some(why),
                },
                Ok(None) => ToolAnswer::Ask(why),
                Err(why) => ToolAnswer::Deny(why),
            }
        }
        Permission::Deny(why) | Permission::Ask(why) => {
            let times = Memory::repeat(&mut memory.refusal, why.clone());
            let limit = rules.tools.stop_after;
            let stopped = limit > 0 && times >= limit;
            setting.record(Event::ToolDenied {
                tool: &call.tool,
                reason: &why,
                times,
                stopped,
            });
            if stopped {
                ToolAnswer::DenyAndStop {
                    stop: format!(
                        "the same tool call was refused {times} times in a row ({why}); the agent was stopped for a person to look"
                    ),
                    reason: why,
                }
            } else {
                ToolAnswer::Deny(why)
            }
        }
    };
    held.save();
    answer
}

/// Looks at what a tool did: a change the stop would fail, or the same error again, is told to
/// the agent at once.
pub fn after(
    rules: &Rules,
    _agent: Agent,
    input: &Input,
    project: &Project,
    answer_by: super::AnswerBy,
) -> ToolAnswer {
    let setting = match Setting::new(rules, input, project) {
        Ok(setting) => setting,
        Err(why) => return ToolAnswer::Notice(format!("this tool call was not looked at: {why}")),
    };
    let call = Call::of(input);
    let cwd = crate::tool_policy::resolve_cwd(&input.cwd);
    let (action, _) = call.action(&cwd);
    // What a command (or a write the agent's CLI let through) changed: listed before the
    // session's record is locked (a listing may take seconds, and the session's other hooks
    // wait on that lock), then judged as the stop will judge it.
    let changed = (!matches!(action, Action::Other)).then(|| {
        // Within the hook's own deadline, with a fifth of it kept to answer.
        let left = answer_by
            .at
            .saturating_duration_since(std::time::Instant::now());
        let listing = AFTER_TOOL_LISTING.min(left.mul_f32(0.8));
        file_scope::changed_now(&setting.task, &rules.state, listing)
    });
    let mut held = Held::open(&rules.state, &session_key(&input.session_id, None));
    held.began();
    let mut told = Vec::new();
    let strikes = rules.defaults.tool_strikes;
    let memory = held.memory(&setting.agent_key);
    if call.failed {
        let times = Memory::repeat(&mut memory.tool_error, call.error_signature());
        if strikes > 0 && times >= strikes {
            told.push(same_error_message(times));
        }
    } else {
        memory.tool_error = None;
    }
    if let Some(listed) = changed {
        match listed {
            Ok(changed) => {
                let policy = setting.policy(input);
                let memory = held.memory(&setting.agent_key);
                let new: Vec<String> = policy
                    .breaches(&changed)
                    .into_iter()
                    .filter(|breach| memory.first_time(breach))
                    .collect();
                if !new.is_empty() {
                    told.push(format!(
                        "what you just ran changed files the stop will fail; undo it now: {}",
                        new.join("; ")
                    ));
                }
            }
            Err(why) => tracing::warn!("what the tool changed cannot be listed: {why}"),
        }
    }
    held.save();
    if let Some(why) = setting.refused_by_the_kernel(input, &call, &action) {
        told.push(why);
    }
    if told.is_empty() {
        return ToolAnswer::Nothing;
    }
    let message = told.join(" ");
    setting.record(Event::ToolTold {
        tool: &call.tool,
        message: &message,
    });
    ToolAnswer::Tell(message)
}
