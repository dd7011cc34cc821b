//! What a tool said it found, as precise as the tool allowed: the one value every reader here
//! returns. The engine's verdict carries it on, with what it knows that a tool cannot (which
//! rule of a contract a finding breaches).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Something a tool reported: where, how bad, under which of its codes, and what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    /// As the tool said it (`error`, `warning`, `note`, ...), lower case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<String>,
    /// The tool's code for what it found (`F401`, `E0308`, `clippy::needless_return`, `SC2086`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    pub message: String,
}

impl Finding {
    pub fn new(message: impl Into<String>) -> Self {
        Finding {
            file: None,
            line: None,
            column: None,
            severity: None,
            rule: None,
            message: message.into(),
        }
    }

    /// A finding at `file:line[:column]`, as a tool reported it.
    pub fn at(
        file: impl Into<String>,
        line: u32,
        column: Option<u32>,
        message: impl Into<String>,
    ) -> Self {
        Finding {
            file: Some(file.into()),
            line: Some(line),
            column,
            ..Finding::new(message)
        }
    }

    pub fn in_file(file: impl Into<String>, message: impl Into<String>) -> Self {
        Finding {
            file: Some(file.into()),
            ..Finding::new(message)
        }
    }

    pub fn with_severity(self, severity: Option<&str>) -> Self {
        Finding {
            severity: severity
                .map(|s| s.trim().to_ascii_lowercase())
                .filter(|s| !s.is_empty()),
            ..self
        }
    }

    pub fn with_rule(self, rule: Option<&str>) -> Self {
        Finding {
            rule: rule
                .map(str::trim)
                .filter(|r| !r.is_empty())
                .map(str::to_owned),
            ..self
        }
    }

    /// The message with its severity and rule, as a line reads best: `error: msg [E0308]`.
    pub fn text(&self) -> String {
        text(
            self.severity.as_deref(),
            &self.message,
            self.rule.as_deref(),
        )
    }

    /// `file:line:col`, with whatever parts are known.
    pub fn location(&self) -> Option<String> {
        location(self.file.as_deref(), self.line, self.column)
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.location() {
            Some(at) => write!(f, "{at}: {}", self.text()),
            None => f.write_str(&self.text()),
        }
    }
}

/// A finding's message with its severity and rule: `error: msg [E0308]`. The verdict's findings
/// read the same.
pub fn text(severity: Option<&str>, message: &str, rule: Option<&str>) -> String {
    let mut text = String::new();
    if let Some(severity) = severity {
        text.push_str(severity);
        text.push_str(": ");
    }
    text.push_str(message);
    if let Some(rule) = rule {
        text.push_str(" [");
        text.push_str(rule);
        text.push(']');
    }
    text
}

/// `file:line:col`, with whatever parts are known; the file as a name a reader cannot take for
/// anything else ([`validator_text::name`]: quoted when it holds a line break or the like).
pub fn location(file: Option<&str>, line: Option<u32>, column: Option<u32>) -> Option<String> {
    let file = validator_text::name(file?);
    Some(match (line, column) {
        (Some(line), Some(col)) => format!("{file}:{line}:{col}"),
        (Some(line), None) => format!("{file}:{line}"),
        _ => file.into_owned(),
    })
}
