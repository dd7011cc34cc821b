//! `POST /approvals/ID/approve` and `POST /approvals/ID/deny[?reason=TEXT]` on the metrics
//! port, for a person's tool (a chat button, a pager) to answer a call waiting for approval.
//! They exist only when the rules name `hook.approvals.token_file`: a request must carry
//! `Authorization: Bearer <the file's token>`, compared in constant time. The answer is the one
//! `validator approve` writes (signed with the watcher's key when there is one); nothing the
//! client sent is written back.

use std::path::PathBuf;
use std::sync::Arc;

use percent_encoding::percent_decode_str;

use validator::approvals::{ApprovalError, Choice, Store};
use validator::verdict::sign::SigningKey;

/// The signing key in force (it changes with a reload of the rules).
pub type KeyInForce = Box<dyn Fn() -> Option<Arc<SigningKey>> + Send + Sync>;

/// What the endpoints need: the token, where the requests are, the key to sign answers with.
pub struct Endpoint {
    pub token: Vec<u8>,
    pub state: PathBuf,
    pub key: KeyInForce,
}

/// An answer's status, reason phrase and body.
pub type Reply = (u16, &'static str, &'static str);

/// Whether two secrets are the same, in time that depends on their length only.
fn same_secret(given: &[u8], token: &[u8]) -> bool {
    given.len() == token.len()
        && std::hint::black_box(
            given
                .iter()
                .zip(token)
                .fold(0u8, |acc, (a, b)| acc | (a ^ b)),
        ) == 0
}

/// The bearer token of a request's head, if it carries one.
fn bearer(head: &[u8]) -> Option<&[u8]> {
    head.split(|&b| b == b'\n').skip(1).find_map(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let colon = line.iter().position(|&b| b == b':')?;
        let (name, value) = line.split_at(colon);
        if !name.eq_ignore_ascii_case(b"authorization") {
            return None;
        }
        let value = value[1..].trim_ascii();
        let scheme = value.get(..7)?;
        scheme
            .eq_ignore_ascii_case(b"bearer ")
            .then(|| value[7..].trim_ascii())
    })
}

/// The answer to a POST to `target` (path and query), or `None` when it is no approvals path.
pub fn answer(head: &[u8], target: &[u8], endpoint: &Endpoint) -> Option<Reply> {
    let target = std::str::from_utf8(target).ok()?;
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let rest = path.strip_prefix("/approvals/")?;
    let (id, action) = rest.split_once('/')?;
    let choice = match action {
        "approve" => Choice::Approve,
        "deny" => Choice::Deny,
        _ => return None,
    };
    if !bearer(head).is_some_and(|given| same_secret(given, &endpoint.token)) {
        return Some((401, "Unauthorized", "unauthorized\n"));
    }
    let reason = query.split('&').find_map(|pair| {
        let value = pair.strip_prefix("reason=")?.replace('+', " ");
        Some(percent_decode_str(&value).decode_utf8_lossy().into_owned())
    });
    let key = (endpoint.key)();
    let store = Store::new(&endpoint.state);
    Some(
        match store.answer(id, choice, reason.as_deref(), key.as_deref()) {
            Ok(_) => match choice {
                Choice::Approve => (200, "OK", "approved\n"),
                Choice::Deny => (200, "OK", "denied\n"),
            },
            Err(ApprovalError::NotFound(_) | ApprovalError::BadId(_)) => {
                (404, "Not Found", "no such request waits\n")
            }
            Err(err) => {
                tracing::warn!("an approval over HTTP was not written: {err}");
                (409, "Conflict", "the request cannot be answered\n")
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_bearer_of_the_token_answers() {
        let dir = tempfile::tempdir().unwrap();
        let input = serde_json::json!({"command": "git push"});
        let store = Store::new(dir.path());
        let request = store
            .create(
                &validator::approvals::Draft {
                    session: "s",
                    agent: "codex",
                    tool: "Bash",
                    input: &input,
                    command: "git push",
                    reason: "r",
                    open_for: std::time::Duration::from_secs(60),
                },
                None,
            )
            .unwrap();
        let endpoint = Endpoint {
            token: b"s3cret".to_vec(),
            state: dir.path().to_path_buf(),
            key: Box::new(|| None),
        };
        let target = format!("/approvals/{}/deny?reason=not+now%21", request.id);
        let ask = |auth: &str| {
            let head = format!("POST {target} HTTP/1.1\r\n{auth}\r\n\r\n");
            answer(head.as_bytes(), target.as_bytes(), &endpoint)
        };
        assert_eq!(ask("Host: x").unwrap().0, 401);
        assert_eq!(ask("Authorization: Bearer s3cre").unwrap().0, 401);
        assert_eq!(ask("authorization: bearer s3cret").unwrap().0, 200);
        let answer_given = store.answer_of(&request, None).unwrap().unwrap();
        assert_eq!(answer_given.reason.as_deref(), Some("not now!"));
        let head = b"POST /approvals/nope/approve HTTP/1.1\r\nAuthorization: Bearer s3cret\r\n\r\n";
        assert_eq!(
            super::answer(head, b"/approvals/nope/approve", &endpoint)
                .unwrap()
                .0,
            404
        );
        assert!(super::answer(head, b"/metrics", &endpoint).is_none());
    }
}
