//! `validator approvals`, `approve` and `deny`: a person's side of the calls the pre-tool hook
//! holds for one ([`validator::approvals`]). Only these write an answer, signed with the
//! rules' key when there is one; the tool-time policy refuses them to a worker.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use validator::approvals::{Choice, Store};
use validator::verdict::sign;

use super::{StatusFormat, load};

/// `validator approvals`: the open requests, oldest first.
pub(crate) fn list(config: &std::path::Path, format: StatusFormat) -> Result<ExitCode> {
    let rules = load(config)?;
    let key = sign::configured_key(rules.key_named())?;
    let pending = Store::new(&rules.state).pending(key.as_ref());
    match format {
        StatusFormat::Json => {
            let text = serde_json::to_string_pretty(&pending)
                .context("cannot write the requests as JSON")?;
            println!("{}", validator_text::json_inert(&text));
        }
        StatusFormat::Text if pending.is_empty() => println!("no call waits for a person"),
        StatusFormat::Text => {
            for request in &pending {
                println!(
                    "{}  {:>6}  {}  {}  ({})",
                    request.id,
                    age(request.age()),
                    validator_text::name(&request.agent),
                    validator_text::one_line(&request.command),
                    validator_text::one_line(&request.reason),
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// An age for a listing, in its largest unit.
fn age(age: Duration) -> String {
    let secs = age.as_secs();
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m", secs / 60),
        _ => format!("{}h", secs / 3600),
    }
}

/// `validator approve ID` and `validator deny ID [--reason TEXT]`: the answer written for the
/// waiting hook to take.
pub(crate) fn answer(
    config: &std::path::Path,
    id: &str,
    decision: Choice,
    reason: Option<String>,
) -> Result<ExitCode> {
    let rules = load(config)?;
    let key = sign::configured_key(rules.key_named())?;
    let request = Store::new(&rules.state).answer(id, decision, reason.as_deref(), key.as_ref())?;
    let done = match decision {
        Choice::Approve => "approved",
        Choice::Deny => "denied",
    };
    println!(
        "{done} {}: {} ({}); the waiting call takes it, once",
        request.id,
        validator_text::one_line(&request.command),
        validator_text::name(&request.agent),
    );
    Ok(ExitCode::SUCCESS)
}
