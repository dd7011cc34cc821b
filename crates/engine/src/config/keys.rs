//! Which rules-file keys act in which front end (`check`, `watch`, the hook per agent, the
//! agent loop): the one table `validator rules keys` prints and docs/keys.md is (a test checks
//! them row by row), and the load-time warnings `rules check` and `watch` give for a key the
//! file writes where a front end cannot honour it, with why.

use super::raw::{RawRules, RuleKind};

/// The front ends a rules file is read by, in the table's column order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrontEnd {
    Check,
    Watch,
    Claude,
    Codex,
    Gemini,
    Opencode,
    /// examples/agent-loop: `validator run` around the agent, `signal` and `wait` on a watcher.
    Loop,
}

impl FrontEnd {
    pub const ALL: [FrontEnd; 7] = [
        FrontEnd::Check,
        FrontEnd::Watch,
        FrontEnd::Claude,
        FrontEnd::Codex,
        FrontEnd::Gemini,
        FrontEnd::Opencode,
        FrontEnd::Loop,
    ];

    /// The column's heading, and how a warning names it.
    pub fn name(self) -> &'static str {
        match self {
            FrontEnd::Check => "check",
            FrontEnd::Watch => "watch",
            FrontEnd::Claude => "Claude Code",
            FrontEnd::Codex => "Codex",
            FrontEnd::Gemini => "Gemini CLI",
            FrontEnd::Opencode => "OpenCode",
            FrontEnd::Loop => "loop",
        }
    }

    fn column(self) -> usize {
        self as usize
    }
}

/// Whether a key acts in a front end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acts {
    Yes,
    /// The front end has what the key is about but cannot honour it, for this reason: a
    /// rules file that writes the key is warned at load.
    No(&'static str),
    /// The key is about something this front end does not do (a one-off `check` counts no
    /// attempts, `watch` sees no tool call).
    Moot,
}

impl Acts {
    /// The table's cell.
    pub fn cell(self) -> &'static str {
        match self {
            Acts::Yes => "yes",
            Acts::No(_) => "no",
            Acts::Moot => "—",
        }
    }
}

/// One row: a key (`defaults.max_tokens`) and whether it acts in each front end.
#[derive(Debug, Clone, Copy)]
pub struct Key {
    pub key: &'static str,
    pub acts: [Acts; 7],
}

impl Key {
    pub fn acts_in(&self, front: FrontEnd) -> Acts {
        self.acts[front.column()]
    }
}

use Acts::{Moot as M, No, Yes as Y};

const NO_USAGE: &str =
    "the watcher reads the done signal, never the agent's usage records, so it cannot count tokens";
const NO_COMMANDS: &str = "`validator run` confines the agent's writes but judges no command: only the hooks see a tool call before it runs";
const NO_TOOL_EVENTS: &str = "`validator run` sees no tool call, so none is counted";
const NO_SUBAGENT_STOP_GEMINI: &str = "Gemini CLI has no subagent stop event";
const NO_SUBAGENT_STOP_OPENCODE: &str = "OpenCode's plugin sends no subagent stop";
const NO_PROMPT_OPENCODE: &str = "OpenCode's plugin sends neither a session start nor a prompt";
const NO_REQUEST_OPENCODE: &str =
    "OpenCode's plugin sends no prompt, so the reviewer has the contract's `context` at most";
const NO_REQUEST_LOOP: &str = "run.sh signals the agent's last message, with no `request`; write the person's words in the task's contract `context`";

/// Every key of the rules file's top level and of `defaults`, `tools` and `hook`, and the
/// `review` rule's ground truth (the person's request), with where each acts.
pub const KEYS: &[Key] = &[
    row("version", [Y, Y, Y, Y, Y, Y, Y]),
    row("staging", [M, Y, M, M, M, M, Y]),
    row("verdicts", [M, Y, M, M, M, M, Y]),
    row("state", [Y, Y, Y, Y, Y, Y, Y]),
    row("contracts", [Y, Y, Y, Y, Y, Y, Y]),
    row("signing_key_file", [Y, Y, M, M, M, M, Y]),
    row("events", [M, Y, Y, Y, Y, Y, Y]),
    row("speculate", [M, Y, M, M, M, M, Y]),
    row("pipelines", [Y, Y, Y, Y, Y, Y, Y]),
    row("defaults", [Y, Y, Y, Y, Y, Y, Y]),
    row("defaults.timeout", [Y, Y, Y, Y, Y, Y, Y]),
    row("defaults.budget", [Y, Y, Y, Y, Y, Y, Y]),
    row("defaults.max_attempts", [M, Y, Y, Y, Y, Y, Y]),
    row("defaults.strikes", [M, Y, Y, Y, Y, Y, Y]),
    row("defaults.drift", [M, Y, Y, Y, Y, Y, Y]),
    row("defaults.max_time", [M, Y, Y, Y, Y, Y, Y]),
    row(
        "defaults.max_tokens",
        [M, No(NO_USAGE), Y, Y, Y, Y, No(NO_USAGE)],
    ),
    row(
        "defaults.tool_strikes",
        [M, M, Y, Y, Y, Y, No(NO_TOOL_EVENTS)],
    ),
    row("tools", [M, M, Y, Y, Y, Y, Y]),
    row("tools.commands", [M, M, Y, Y, Y, Y, No(NO_COMMANDS)]),
    row("tools.unknown", [M, M, Y, Y, Y, Y, No(NO_COMMANDS)]),
    row("tools.stop_after", [M, M, Y, Y, Y, Y, No(NO_COMMANDS)]),
    row("tools.confine", [M, M, Y, Y, Y, Y, Y]),
    row("tools.writable", [M, M, Y, Y, Y, Y, Y]),
    row("hook", [M, M, Y, Y, Y, Y, M]),
    row(
        "hook.subagent_status",
        [
            M,
            M,
            Y,
            Y,
            No(NO_SUBAGENT_STOP_GEMINI),
            No(NO_SUBAGENT_STOP_OPENCODE),
            M,
        ],
    ),
    row("hook.brief", [M, M, Y, Y, Y, No(NO_PROMPT_OPENCODE), M]),
    row("hook.approvals", [M, M, Y, Y, Y, Y, M]),
    row(
        "review (the person's request)",
        [Y, Y, Y, Y, Y, No(NO_REQUEST_OPENCODE), No(NO_REQUEST_LOOP)],
    ),
];

const fn row(key: &'static str, acts: [Acts; 7]) -> Key {
    Key { key, acts }
}

/// The keys a rules file writes, by their rows' names, so only what the file asks for is
/// warned about (a default the file never wrote does not).
pub fn written(raw: &RawRules) -> Vec<&'static str> {
    let d = &raw.defaults;
    let hook = &raw.hook;
    let tools = raw.tools.as_ref();
    let review = raw
        .pipelines
        .iter()
        .flat_map(|p| &p.gates)
        .any(|gate| gate.rule == RuleKind::Review);
    [
        ("defaults.max_tokens", d.max_tokens.is_some()),
        ("defaults.max_time", d.max_time.is_some()),
        ("defaults.tool_strikes", d.tool_strikes.is_some()),
        (
            "tools.commands",
            tools.is_some_and(|t| t.commands.is_some()),
        ),
        ("tools.unknown", tools.is_some_and(|t| t.unknown.is_some())),
        (
            "tools.stop_after",
            tools.is_some_and(|t| t.stop_after.is_some()),
        ),
        ("hook.subagent_status", hook.subagent_status.is_some()),
        ("hook.brief", hook.brief.is_some()),
        ("review (the person's request)", review),
    ]
    .into_iter()
    .filter_map(|(key, set)| set.then_some(key))
    .collect()
}

/// What the rules file writes that does nothing in one of `fronts`: one line per reason,
/// naming the keys it holds for and the front ends.
pub fn warnings(written: &[&str], fronts: &[FrontEnd]) -> Vec<String> {
    // (why, the front ends, the keys), in the table's order.
    let mut reasons: Vec<(&str, Vec<&str>, Vec<&str>)> = Vec::new();
    for key in KEYS.iter().filter(|key| written.contains(&key.key)) {
        for front in fronts {
            let Acts::No(why) = key.acts_in(*front) else {
                continue;
            };
            match reasons.iter_mut().find(|(seen, ..)| *seen == why) {
                Some((_, names, keys)) => {
                    if !names.contains(&front.name()) {
                        names.push(front.name());
                    }
                    if !keys.contains(&key.key) {
                        keys.push(key.key);
                    }
                }
                None => reasons.push((why, vec![front.name()], vec![key.key])),
            }
        }
    }
    reasons
        .into_iter()
        .map(|(why, names, keys)| warning(&keys, &names.join(", "), why))
        .collect()
}

/// One warning: the keys (or a rule's row, whose rule runs without what the row is about),
/// where, and why.
fn warning(keys: &[&str], fronts: &str, why: &str) -> String {
    if let [key] = keys
        && let Some((rule, about)) = key.split_once(" (")
    {
        let about = about.trim_end_matches(')');
        return format!("`{rule}` gates run without {about} under {fronts}: {why} (docs/keys.md)");
    }
    let named: Vec<String> = keys.iter().map(|key| format!("`{key}`")).collect();
    let verb = if keys.len() == 1 { "does" } else { "do" };
    format!(
        "{} {verb} nothing under {fronts}: {why} (docs/keys.md)",
        named.join(", ")
    )
}

/// The table as docs/keys.md holds it: a Markdown table, then why each `no` is one.
pub fn markdown() -> String {
    let mut out = String::from("| key |");
    for front in FrontEnd::ALL {
        out.push_str(&format!(" {} |", front.name()));
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(FrontEnd::ALL.len()));
    out.push('\n');
    for key in KEYS {
        out.push_str(&format!("| `{}` |", key.key));
        for acts in key.acts {
            out.push_str(&format!(" {} |", acts.cell()));
        }
        out.push('\n');
    }
    out.push_str("\nWhere a key does not act:\n\n");
    for key in KEYS {
        for front in FrontEnd::ALL {
            if let Acts::No(why) = key.acts_in(front) {
                out.push_str(&format!("- `{}` under {}: {why}.\n", key.key, front.name()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_named_once() {
        let mut names: Vec<&str> = KEYS.iter().map(|k| k.key).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), KEYS.len());
    }

    #[test]
    fn a_warning_names_the_key_the_front_ends_and_why() {
        let lines = warnings(
            &["defaults.max_tokens", "defaults.max_time"],
            &FrontEnd::ALL,
        );
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].starts_with("`defaults.max_tokens` does nothing under watch, loop: "));
        let tools = warnings(&["tools.commands", "tools.unknown"], &FrontEnd::ALL);
        assert_eq!(tools.len(), 1, "{tools:?}");
        assert!(tools[0].starts_with("`tools.commands`, `tools.unknown` do nothing under loop: "));
        let review = warnings(&["review (the person's request)"], &[FrontEnd::Opencode]);
        assert_eq!(review.len(), 1, "{review:?}");
        assert!(
            review[0]
                .starts_with("`review` gates run without the person's request under OpenCode: "),
            "{review:?}"
        );
    }
}
