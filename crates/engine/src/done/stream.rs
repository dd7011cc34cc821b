//! A done signal that is an agent CLI's JSON-lines event stream (what an orchestrator loop
//! captures from `claude -p --output-format stream-json`, `codex exec --json`, `gemini
//! --output-format stream-json` or `opencode run --format json`): the agent's final message is
//! read out of it and judged as the body. Each CLI's stream is recognised by the event types it
//! uses and read as the CLI writes it (tests/corpus/agent-streams has a real one of each):
//!
//! | CLI | final message |
//! |---|---|
//! | Claude Code | the `result` line's `result`, else the last `assistant` line's text |
//! | Codex CLI | the last `item.completed` whose item is an `agent_message` |
//! | Gemini CLI | the assistant `message` chunks after the last tool result, error or user message |
//! | OpenCode | the `text` parts of the message whose `step_finish` (reason `stop`) comes last |

use serde_json::Value;

/// Whether `text` is a stream of JSON objects, one a line (at least two), rather than one
/// JSON document.
pub fn is_stream(text: &str) -> bool {
    let mut objects = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    matches!(
        (objects.next(), objects.next()),
        (Some(Ok(Value::Object(_))), Some(Ok(Value::Object(_))))
    )
}

/// The final message of the agent whose stream `text` is; the error says what the stream is
/// and why no message was found in it.
pub fn final_message(text: &str) -> Result<String, String> {
    let events = serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .collect::<Result<Vec<Value>, _>>()
        .map_err(|err| format!("the done signal is a stream of JSON events, broken at {err}"))?;
    let types: Vec<&str> = events
        .iter()
        .map(|event| event.get("type").and_then(Value::as_str).unwrap_or(""))
        .collect();
    let reader = READERS
        .iter()
        .find(|reader| types.iter().all(|t| reader.types.contains(t)));
    let Some(reader) = reader else {
        let unknown: Vec<&str> = types
            .iter()
            .copied()
            .filter(|t| !t.is_empty())
            .take(5)
            .collect();
        return Err(format!(
            "the done signal is a stream of {} JSON events from no agent validator reads (event types {}); write the agent's final message as the signal, or capture one of Claude Code's, Codex CLI's, Gemini CLI's or OpenCode's JSON output",
            events.len(),
            if unknown.is_empty() {
                "none".into()
            } else {
                unknown.join(", ")
            }
        ));
    };
    (reader.read)(&events)
        .filter(|message| !message.trim().is_empty())
        .ok_or_else(|| {
            format!(
                "the done signal is {}'s JSON output, and it holds no final message from the agent",
                reader.agent
            )
        })
}

struct Reader {
    agent: &'static str,
    /// Every event type its stream may hold.
    types: &'static [&'static str],
    read: fn(&[Value]) -> Option<String>,
}

const READERS: &[Reader] = &[
    Reader {
        agent: "Claude Code",
        types: &[
            "system",
            "assistant",
            "user",
            "result",
            "stream_event",
            "rate_limit_event",
        ],
        read: claude,
    },
    Reader {
        agent: "Codex CLI",
        types: &[
            "thread.started",
            "turn.started",
            "turn.completed",
            "turn.failed",
            "item.started",
            "item.updated",
            "item.completed",
            "error",
        ],
        read: codex,
    },
    Reader {
        agent: "Gemini CLI",
        types: &[
            "init",
            "message",
            "tool_use",
            "tool_result",
            "error",
            "result",
        ],
        read: gemini,
    },
    Reader {
        agent: "OpenCode",
        types: &[
            "step_start",
            "step_finish",
            "text",
            "tool_use",
            "reasoning",
            "error",
        ],
        read: opencode,
    },
];

fn string<'v>(value: &'v Value, path: &[&str]) -> Option<&'v str> {
    path.iter()
        .try_fold(value, |at, key| at.get(key))
        .and_then(Value::as_str)
}

fn claude(events: &[Value]) -> Option<String> {
    if let Some(result) = events
        .iter()
        .rev()
        .find(|e| string(e, &["type"]) == Some("result"))
        .and_then(|e| string(e, &["result"]))
    {
        return Some(result.to_owned());
    }
    // No result line (a stream cut short): the last assistant line with text.
    events
        .iter()
        .rev()
        .filter(|e| string(e, &["type"]) == Some("assistant"))
        .find_map(|e| {
            let text: Vec<&str> = e
                .get("message")?
                .get("content")?
                .as_array()?
                .iter()
                .filter(|block| string(block, &["type"]) == Some("text"))
                .filter_map(|block| string(block, &["text"]))
                .collect();
            (!text.is_empty()).then(|| text.concat())
        })
}

fn codex(events: &[Value]) -> Option<String> {
    events
        .iter()
        .rev()
        .filter(|e| string(e, &["type"]) == Some("item.completed"))
        .find(|e| string(e, &["item", "type"]) == Some("agent_message"))
        .and_then(|e| string(e, &["item", "text"]))
        .map(str::to_owned)
}

fn gemini(events: &[Value]) -> Option<String> {
    let mut message = String::new();
    for event in events {
        match (string(event, &["type"]), string(event, &["role"])) {
            (Some("message"), Some("assistant")) => {
                if event.get("delta").and_then(Value::as_bool) != Some(true) {
                    message.clear();
                }
                message.push_str(string(event, &["content"]).unwrap_or_default());
            }
            (Some("tool_result" | "tool_use" | "error"), _) | (Some("message"), _) => {
                message.clear();
            }
            _ => {}
        }
    }
    Some(message)
}

fn opencode(events: &[Value]) -> Option<String> {
    let last = events
        .iter()
        .rev()
        .filter(|e| string(e, &["type"]) == Some("step_finish"))
        .find(|e| string(e, &["part", "reason"]) == Some("stop"))
        .and_then(|e| string(e, &["part", "messageID"]))?;
    let text: Vec<&str> = events
        .iter()
        .filter(|e| string(e, &["type"]) == Some("text"))
        .filter(|e| string(e, &["part", "messageID"]) == Some(last))
        .filter_map(|e| string(e, &["part", "text"]))
        .collect();
    Some(text.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_clis_stream_gives_its_final_message() {
        let claude = r#"{"type":"system","subtype":"init"}
{"type":"assistant","message":{"content":[{"type":"text","text":"I am done.\nSTATUS: OK"}]}}
{"type":"user","message":{"content":[{"type":"text","text":"Stop hook feedback: FAIL"}]}}
{"type":"assistant","message":{"content":[{"type":"text","text":"Wrote it.\nSTATUS: OK"}]}}
{"type":"result","subtype":"success","result":"Wrote it.\nSTATUS: OK"}"#;
        let codex = r#"{"type":"thread.started"}
{"type":"item.completed","item":{"type":"agent_message","text":"I am done."}}
{"type":"item.completed","item":{"type":"file_change","changes":[]}}
{"type":"item.completed","item":{"type":"agent_message","text":"Wrote it.\nSTATUS: OK"}}
{"type":"turn.completed","usage":{}}"#;
        let gemini = r#"{"type":"init"}
{"type":"message","role":"assistant","content":"I am done.","delta":true}
{"type":"tool_result","status":"success"}
{"type":"message","role":"assistant","content":"Wrote it.\n","delta":true}
{"type":"message","role":"assistant","content":"STATUS: OK","delta":true}
{"type":"result","status":"success"}"#;
        let opencode = r#"{"type":"step_start","part":{"messageID":"m1"}}
{"type":"text","part":{"messageID":"m1","text":"Writing."}}
{"type":"step_finish","part":{"messageID":"m1","reason":"tool-calls"}}
{"type":"text","part":{"messageID":"m2","text":"Wrote it.\nSTATUS: OK"}}
{"type":"step_finish","part":{"messageID":"m2","reason":"stop"}}"#;
        for stream in [claude, codex, gemini, opencode] {
            assert!(is_stream(stream));
            assert_eq!(
                final_message(stream).as_deref(),
                Ok("Wrote it.\nSTATUS: OK"),
                "{stream}"
            );
        }
    }

    #[test]
    fn an_unknown_or_empty_stream_says_what_it_is() {
        let unknown = "{\"event\":\"a\"}\n{\"event\":\"b\"}";
        assert!(is_stream(unknown));
        assert!(
            final_message(unknown)
                .unwrap_err()
                .contains("from no agent validator reads")
        );
        let empty = "{\"type\":\"thread.started\"}\n{\"type\":\"turn.completed\"}";
        assert!(
            final_message(empty)
                .unwrap_err()
                .contains("holds no final message")
        );
        assert!(!is_stream("{\"status\": \"OK\"}"));
    }
}
