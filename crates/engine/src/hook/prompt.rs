//! The hook's answers before the work: when a session starts, the task's brief (its contract,
//! what the gates check, the STATUS block to end with: the seed's handoff, given up front); at
//! each prompt the person submits, the prompt kept as the person's own words (the ground truth a
//! reviewer starts from), the brief if the session has not had it, and the gates a gates.json
//! binds to UserPromptSubmit whose keywords the prompt holds.
//!
//! Every answer is context for the agent (`hookSpecificOutput.additionalContext`), never a
//! block: the prompt is the person's, not the worker's, and a failing gate is news for the
//! agent, not a reason to drop what the person asked.

use std::time::Instant;

use serde_json::json;

use super::{Agent, AnswerBy, Input, Limits, Project, session};
use crate::config::Rules;
use crate::judge::{Case, Judge};
use crate::task::Task;
use crate::verdict::{Decision, feedback};

/// Prompts kept per session: the first (what the person set out to ask) and the latest ones.
const MAX_PROMPTS: usize = 8;
/// Characters kept of one prompt; a pasted log is cut, its start kept.
const MAX_PROMPT_CHARS: usize = 8 * 1024;

/// Context for the agent, or nothing to add.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context(pub Option<String>);

impl Context {
    /// The JSON line to print, or `None` when there is nothing to add. Claude Code, Codex and
    /// Gemini CLI read the same shape at SessionStart, UserPromptSubmit and BeforeAgent.
    pub fn to_json(&self, event: &str) -> Option<String> {
        let text = self.0.as_deref()?;
        Some(
            json!({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}})
                .to_string(),
        )
    }
}

/// The session starts: the brief, unless the rules turn it off.
pub fn session_start(rules: &Rules, input: &Input, project: &Project) -> Context {
    if !rules.hook.brief {
        return Context(None);
    }
    let mut held = session::Held::open(&rules.state, &super::session_key(&input.session_id, None));
    let brief = brief(rules, input, project);
    if brief.is_some() {
        held.session.briefed = true;
    }
    held.save();
    Context(brief)
}

/// The person submitted a prompt: keep it, and say what the session has not been told and
/// what the prompt's gates found.
pub fn prompt(
    rules: &Rules,
    agent: Agent,
    input: &Input,
    project: &Project,
    cancel: Option<&validator_process::Cancel>,
    answer_by: AnswerBy,
) -> Context {
    let text = persons_words(agent, input.prompt.as_deref().unwrap_or_default());
    let mut parts = Vec::new();
    {
        let mut held =
            session::Held::open(&rules.state, &super::session_key(&input.session_id, None));
        keep_prompt(&mut held.session.prompts, text);
        let wants_brief = rules.prompt.as_ref().is_some_and(|p| p.commands)
            || (rules.hook.brief && !held.session.briefed);
        if wants_brief && let Some(brief) = brief(rules, input, project) {
            held.session.briefed = true;
            parts.push(brief);
        }
        held.save();
    }
    if let Some(said) = prompt_gates(rules, agent, text, project, cancel, answer_by) {
        parts.push(said);
    }
    Context((!parts.is_empty()).then(|| parts.join("\n\n")))
}

/// What the person typed: Gemini CLI puts the context hooks added before it (at session start)
/// in front of the prompt it hands `BeforeAgent`, each as `<hook_context>…</hook_context>` with
/// its `<` and `>` escaped, so no added text can close the block early.
fn persons_words(agent: Agent, prompt: &str) -> &str {
    const OPEN: &str = "<hook_context>";
    const CLOSE: &str = "</hook_context>";
    let mut rest = prompt;
    if agent == Agent::Gemini {
        while let Some(inside) = rest.trim_start().strip_prefix(OPEN) {
            match inside.find(CLOSE) {
                Some(end) => rest = &inside[end + CLOSE.len()..],
                None => break,
            }
        }
    }
    rest.trim_start()
}

/// The person's own words in this session, for a reviewer: each prompt the hook kept, in
/// order; where the prompt hook is not wired, those the agent's transcript records (said as
/// such: the agent's tools could have written that file).
pub fn request(rules: &Rules, agent: Agent, input: &Input) -> Option<String> {
    let held = session::Held::open(&rules.state, &super::session_key(&input.session_id, None));
    let mut prompts = held.session.prompts.clone();
    drop(held);
    let mut source = "";
    if prompts.is_empty()
        && matches!(agent, Agent::Claude | Agent::Codex)
        && let Some(path) = &input.transcript_path
    {
        for prompt in super::transcript::user_prompts(std::path::Path::new(path)) {
            keep_prompt(&mut prompts, &prompt);
        }
        source = "(from the agent's transcript, which its tools could write)\n";
    }
    // Gemini CLI with only `AfterAgent` wired: that event carries the turn's own prompt.
    if prompts.is_empty()
        && matches!(agent, Agent::Gemini)
        && let Some(prompt) = input.prompt.as_deref().filter(|p| !p.trim().is_empty())
    {
        keep_prompt(&mut prompts, prompt);
    }
    match prompts.len() {
        0 => None,
        1 => Some(format!("{source}{}", prompts[0])),
        _ => Some(
            std::iter::once(source.trim_end().to_owned())
                .filter(|s| !s.is_empty())
                .chain(
                    prompts
                        .iter()
                        .enumerate()
                        .map(|(i, prompt)| format!("Prompt {}:\n{prompt}", i + 1)),
                )
                .collect::<Vec<_>>()
                .join("\n\n"),
        ),
    }
}

/// Adds `prompt` to the kept ones: the first stays, the oldest after it goes.
fn keep_prompt(prompts: &mut Vec<String>, prompt: &str) {
    if prompt.trim().is_empty() {
        return;
    }
    if prompts.len() >= MAX_PROMPTS {
        prompts.remove(1);
    }
    prompts.push(validator_text::clip(prompt, MAX_PROMPT_CHARS));
}

/// The task's brief for the pipeline this session's stop runs, if one does.
fn brief(rules: &Rules, input: &Input, project: &Project) -> Option<String> {
    let task = project.task_name();
    let pipeline = super::stop_pipeline(rules, input, &task)?;
    match crate::brief::render(rules, pipeline, &task) {
        Ok(brief) => Some(brief),
        Err(err) => {
            tracing::warn!(
                "the task's brief cannot be made: {}",
                crate::error::with_causes(&err)
            );
            None
        }
    }
}

/// Runs the prompt hook's gates whose keywords `prompt` holds, over the project, and says
/// what they found; `None` when none runs.
fn prompt_gates(
    rules: &Rules,
    agent: Agent,
    prompt: &str,
    project: &Project,
    cancel: Option<&validator_process::Cancel>,
    answer_by: AnswerBy,
) -> Option<String> {
    let hook = rules.prompt.as_ref()?;
    let pipeline = rules
        .pipelines
        .iter()
        .find(|p| Some(&p.name) == hook.pipeline.as_ref())?;
    let (run, skip): (Vec<String>, Vec<String>) = pipeline
        .gates
        .iter()
        .map(|gate| gate.name.clone())
        .partition(|name| hook.runs_for(name, prompt));
    if run.is_empty() {
        return None;
    }
    let Limits { rules, .. } = Limits::of(rules, agent, answer_by);
    let rules = rules.as_ref();
    let task = match Task::new(project.task_name(), &project.dir) {
        Ok(task) => task.ignoring(&rules.state),
        Err(err) => return Some(format!("validator could not run the prompt's gates: {err}")),
    };
    let started = Instant::now();
    let key = crate::judge::signing(rules);
    let supervision = crate::pipeline::Supervision {
        cancel,
        selection: crate::pipeline::Selection {
            skip: &skip,
            ..Default::default()
        },
        ..Default::default()
    };
    let judge = Judge::new(rules, &key, supervision);
    let case = Case {
        task,
        pipeline: Ok(pipeline),
        refused: None,
    };
    let verdict = judge.judge(case, None).verdict;
    let names = run
        .iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let head = format!(
        "validator ran {names} for this prompt ({}, {}ms):",
        verdict.verdict,
        started.elapsed().as_millis()
    );
    Some(match verdict.verdict {
        Decision::Pass => format!("{head} every gate passed."),
        _ => format!(
            "{head}\n{}",
            feedback::render(&verdict, feedback::Retry::Rerun).trim_end()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_prompt_stays_and_the_oldest_after_it_go() {
        let mut prompts = Vec::new();
        for i in 0..20 {
            keep_prompt(&mut prompts, &format!("prompt {i}"));
        }
        keep_prompt(&mut prompts, "  \n");
        assert_eq!(prompts.len(), MAX_PROMPTS);
        assert_eq!(prompts[0], "prompt 0");
        assert_eq!(prompts[MAX_PROMPTS - 1], "prompt 19");
        assert_eq!(prompts[1], "prompt 13");
        keep_prompt(&mut prompts, &"é".repeat(MAX_PROMPT_CHARS * 2));
        assert_eq!(prompts[MAX_PROMPTS - 1].chars().count(), MAX_PROMPT_CHARS);
    }

    #[test]
    fn gemini_clis_added_context_is_not_the_persons_words() {
        let prompt =
            "<hook_context># Brief\n- check (lint) &lt;x&gt;</hook_context>\n\nFix the typo.";
        assert_eq!(persons_words(Agent::Gemini, prompt), "Fix the typo.");
        assert_eq!(persons_words(Agent::Claude, prompt), prompt);
        assert_eq!(
            persons_words(Agent::Gemini, "<hook_context>never closed"),
            "<hook_context>never closed"
        );
        assert_eq!(persons_words(Agent::Gemini, "  plain"), "plain");
    }

    #[test]
    fn context_is_the_agents_shape_or_nothing() {
        assert_eq!(Context(None).to_json("SessionStart"), None);
        let line = Context(Some("brief".into()))
            .to_json("UserPromptSubmit")
            .unwrap();
        let value: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            value["hookSpecificOutput"]["hookEventName"],
            "UserPromptSubmit"
        );
        assert_eq!(value["hookSpecificOutput"]["additionalContext"], "brief");
    }
}
