//! A stop the hook could not judge at all (its rules file does not load, the project it judges
//! cannot be read): held as a FAIL is, never let through. An agent takes a hook that exits 1 as
//! a non-blocking error and stops, so silence there would be a free stop for any worker that
//! can break the rules file (a project's `validator.yaml` is in its reach). Each such stop is an
//! attempt of the session, counted where the rules keep the session's state (or would, by
//! default; with no rules file at all, the user's own state directory), so a session whose
//! every stop is one ends stopped for a person, not in a loop. A count wiped or garbled only
//! starts the holds again, and one that cannot be saved stops the session: never a pass.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use super::{Answer, Input};
use crate::events::{Event, EventLog, Retention};
use crate::state::TaskState;
use crate::verdict::Decision;

/// What is known of a stop the hook could not judge.
pub struct Unjudged<'a> {
    /// Where the session's state is kept: the rules' state directory, or where it would be.
    pub state: &'a Path,
    /// How many stops the session may take before a person is called in.
    pub max_attempts: u32,
    /// The rules file, when one was found (named in the reset command).
    pub rules: Option<&'a Path>,
    /// Why, for the agent: only what it may read (a rules file outside its reach is named
    /// only to the person).
    pub for_agent: String,
    /// Why, in full, for the person.
    pub for_person: String,
    /// The identity of the attempt this very call already counted and saved before it failed
    /// (a panic in the gates' run): that stop is not counted again.
    pub counted: Option<&'a str>,
}

/// The answer to a stop that could not be judged: held with the reason while the session has
/// attempts left, and stopped for a person past them (or when the count cannot be kept, since
/// an uncounted hold could loop for ever).
pub fn not_judged(input: &Input, unjudged: &Unjudged<'_>) -> Answer {
    let key = input.session_key();
    let mut state = TaskState::load(unjudged.state, &key);
    let held = state.escalated.is_some() || state.blocked.is_some();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let attempt = match unjudged.counted {
        Some(identity) if state.signal.as_deref() == Some(identity) => state.attempt,
        _ => state.attempt_for(Some(format!("not judged {nanos}"))),
    };
    state.last_verdict = Some(Decision::Error);
    let saved = state.save(unjudged.state, &key);
    let answer = if held || attempt > unjudged.max_attempts || saved.is_err() {
        stopped(&key, attempt, unjudged, saved.is_err())
    } else {
        Answer::Hold {
            reason: format!(
                "# validator: this stop could not be judged (attempt {attempt} of {})\n\n- {}\n\n## What to do next\nThe stop is not let through. If your work caused this (the rules file, or a file it names, changed or removed), restore it and finish again. If not, say so in your last message and finish: after {} such stops a person is called in.\n",
                unjudged.max_attempts,
                validator_text::one_line(&unjudged.for_agent),
                unjudged.max_attempts,
            ),
            system_message: format!(
                "validator could not judge this stop (attempt {attempt} of {}), so it was not let through: {}",
                unjudged.max_attempts, unjudged.for_person
            ),
        }
    };
    if let Ok(events) = EventLog::open(unjudged.state, Retention::default()) {
        events.record(
            Some(&key),
            None,
            Event::HookAnswered {
                answer: answer.word(),
                attempt,
                reasons: std::slice::from_ref(&unjudged.for_person),
                verdict: Decision::Error,
            },
        );
    }
    answer
}

/// The session stopped for a person: its attempts are spent, or could not be counted.
fn stopped(key: &str, attempt: u32, unjudged: &Unjudged<'_>, uncounted: bool) -> Answer {
    let why = if uncounted {
        format!(
            "its attempts cannot be counted in {}",
            unjudged.state.display()
        )
    } else {
        format!(
            "attempt {attempt} is over max_attempts ({})",
            unjudged.max_attempts
        )
    };
    let reset = match unjudged.rules {
        Some(rules) => format!(
            "validator -c {} reset {key}",
            shell_words::quote(&rules.to_string_lossy())
        ),
        // No rules file to name: once one loads, its own state judges the stops; this count
        // is cleared by hand.
        None => format!(
            "rm -f {}",
            shell_words::quote(
                &unjudged
                    .state
                    .join("tasks")
                    .join(format!("{key}.json"))
                    .to_string_lossy()
            )
        ),
    };
    Answer::Stop {
        stop_reason: format!(
            "validator: NOT JUDGED ({why}): {}. A person fixes it (`validator rules check`), then runs: {reset}",
            validator_text::one_line(&unjudged.for_agent)
        ),
        system_message: format!(
            "validator could not judge this session's stops and {why}: {}\nThis session is stopped for a person; afterwards run: {reset}",
            unjudged.for_person
        ),
    }
}

/// The fault a test can have a debug build suffer, as the watcher's
/// (`VALIDATOR_DEBUG_FAULT=panic:<task>`): judging the stop panics, so that what holds a stop
/// whatever goes wrong is tested through the real binary.
#[cfg(debug_assertions)]
#[expect(clippy::panic, reason = "a panic is the fault a test asks for")]
pub(super) fn injected_fault(task: &str) {
    if std::env::var("VALIDATOR_DEBUG_FAULT").is_ok_and(|spec| spec == format!("panic:{task}")) {
        panic!("fault injected: judging the stop of `{task}` panics");
    }
}
