//! `validator init --from FILE`: the gates.json shapes other runners read, written as a
//! validator.yaml. Command lists become `lint` and `test` gates, `ban_patterns` become
//! `content` gates, `coverage_rules` become `co-change` gates; what has no equivalent is
//! listed at the top of the file with why, never dropped silently. The hook runner's own
//! dialect (which `-c gates.json` also reads as it is) is loaded as `check` loads it and its
//! pipelines written out, so the file can grow the rules only a validator.yaml has.

use std::path::Path;

use serde_json::{Map, Value};

use super::Route;

/// A converted file: the validator.yaml text and what it could not carry over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Converted {
    pub yaml: String,
    pub left_out: Vec<String>,
}

/// Converts gates.json text read from `path`. `Err` says why the file cannot be converted.
pub fn from_gates_json(path: &Path, source: &str) -> Result<Converted, String> {
    let top: Map<String, Value> =
        serde_json::from_str(source).map_err(|err| format!("it is not a JSON object: {err}"))?;
    if let Some(Value::Object(gates)) = top.get("gates")
        && gates.values().all(Value::is_object)
    {
        return from_hook_runner(path, source);
    }
    let mut out = Writer::default();
    let default_timeout = top.get("timeout").and_then(Value::as_u64);
    for (key, value) in &top {
        match (key.as_str(), value) {
            ("gates", Value::Array(list)) => {
                for item in list {
                    out.command_item(item, default_timeout);
                }
            }
            ("gates", Value::Object(map)) => {
                for (name, command) in map {
                    match command.as_str() {
                        Some("") => out.left_out.push(format!(
                            "gate `{}`: its command is empty (not configured)",
                            one_line(name)
                        )),
                        Some(command) => out.command(name, command, default_timeout, None),
                        None => out.left_out.push(format!(
                            "gate `{}`: not a command string",
                            one_line(name)
                        )),
                    }
                }
            }
            ("ban_patterns", Value::Array(list)) => {
                for item in list {
                    out.ban(item);
                }
            }
            ("coverage_rules", Value::Array(list)) => {
                for item in list {
                    out.coverage(item);
                }
            }
            ("timeout" | "$comment" | "comment" | "description", _) => {}
            (_, Value::Array(list))
                if !list.is_empty()
                    && list
                        .iter()
                        .all(|i| i.get("command").or_else(|| i.get("run")).is_some()) =>
            {
                for item in list {
                    out.command_item(item, default_timeout);
                }
                out.left_out.push(format!(
                    "`{}`: its commands became gates of the one pipeline; when it ran them (its own event or match) is not carried over",
                    one_line(key)
                ));
            }
            _ => out.left_out.push(format!(
                "`{}`: validator has no equivalent (it judges a worker's files and its stop, not its commands or edits as they happen)",
                one_line(key)
            )),
        }
    }
    if out.gates.is_empty() {
        return Err(
            "nothing in it became a gate: it has no commands, ban_patterns or coverage_rules"
                .into(),
        );
    }
    Ok(out.finish())
}

/// The hook runner's dialect, loaded exactly as `check -c gates.json` loads it: each stop
/// hook's pipeline, its gates with their routes, and the loader's notes as what was left out.
fn from_hook_runner(path: &Path, source: &str) -> Result<Converted, String> {
    let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
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
                text.push_str(&format!("      # {}\n", one_line(about)));
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
    }
    Ok(out.finish_pipelines(&pipelines))
}

#[derive(Default)]
struct Writer {
    gates: Vec<String>,
    names: Vec<String>,
    left_out: Vec<String>,
}

impl Writer {
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

    fn command_item(&mut self, item: &Value, default_timeout: Option<u64>) {
        match item {
            // `[name, [argv...]]`
            Value::Array(pair) => {
                let name = pair.first().and_then(Value::as_str).unwrap_or("gate");
                match pair.get(1) {
                    Some(Value::Array(argv)) => {
                        let words: Vec<String> = argv
                            .iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect();
                        if words.is_empty() {
                            self.left_out
                                .push(format!("gate `{}`: an empty command", one_line(name)));
                            return;
                        }
                        self.command_argv(name, &words, default_timeout, None);
                    }
                    Some(Value::String(command)) => {
                        self.command(name, command, default_timeout, None)
                    }
                    _ => self
                        .left_out
                        .push(format!("gate `{}`: no command", one_line(name))),
                }
            }
            Value::Object(gate) => {
                let text = |key: &str| gate.get(key).and_then(Value::as_str);
                let name = text("name").or_else(|| text("label")).unwrap_or("gate");
                let command = text("run").or_else(|| text("command"));
                let timeout = gate
                    .get("timeout")
                    .and_then(Value::as_u64)
                    .or_else(|| {
                        gate.get("timeoutMs")
                            .and_then(Value::as_u64)
                            .map(|ms| ms.div_ceil(1000))
                    })
                    .or(default_timeout);
                match command {
                    Some(command) if !command.trim().is_empty() => {
                        self.command(name, command, timeout, text("fix"))
                    }
                    _ => self
                        .left_out
                        .push(format!("gate `{}`: no command", one_line(name))),
                }
            }
            _ => self.left_out.push(
                "an entry of `gates` that is neither a gate nor a [name, command] pair".into(),
            ),
        }
    }

    /// A command as a shell line: run through `sh -c`, as the runners that read these files
    /// ran it (it is the rules author's text, never the worker's).
    fn command(&mut self, name: &str, command: &str, timeout: Option<u64>, fix: Option<&str>) {
        let words = vec!["sh".to_owned(), "-c".to_owned(), command.to_owned()];
        self.command_argv(name, &words, timeout, fix);
    }

    fn command_argv(
        &mut self,
        name: &str,
        argv: &[String],
        timeout: Option<u64>,
        fix: Option<&str>,
    ) {
        let gate = self.name(name, "gate");
        let rule = if gate.contains("test") {
            "test"
        } else {
            "lint"
        };
        let mut text = format!(
            "      - name: {gate}\n        rule: {rule}\n        run: {}\n",
            json(argv)
        );
        if let Some(seconds) = timeout.filter(|&s| s > 0) {
            text.push_str(&format!("        timeout: {seconds}s\n"));
        }
        if let Some(fix) = fix.filter(|f| !f.trim().is_empty()) {
            text.push_str(&format!("        fix: {}\n", json(&["sh", "-c", fix])));
        }
        self.gates.push(text);
    }

    fn ban(&mut self, item: &Value) {
        let text = |key: &str| item.get(key).and_then(Value::as_str);
        let Some(pattern) = text("pattern") else {
            self.left_out.push("a ban pattern without `pattern`".into());
            return;
        };
        if let Err(err) = regex::Regex::new(pattern) {
            let why = err.to_string();
            let why = why.lines().last().unwrap_or_default().trim();
            self.left_out.push(format!(
                "ban pattern `{}`: validator's regex syntax refuses it ({}); write it without look-around or back-references",
                one_line(pattern),
                one_line(why)
            ));
            return;
        }
        let mut globs = strings(item.get("globs").or_else(|| item.get("files")));
        if globs.is_empty() {
            globs.push("**/*".to_owned());
        }
        let gate = self.name(&format!("ban-{}", self.names.len() + 1), "ban");
        let message = text("message").unwrap_or("a banned pattern");
        self.gates.push(format!(
            "      - name: {gate}\n        rule: content\n        files: {}\n        ban: [{{pattern: {}, message: {}}}]\n",
            json(&globs),
            json(pattern),
            json(message),
        ));
    }

    fn coverage(&mut self, item: &Value) {
        let list = |key: &str| strings(item.get(key));
        let when = list("when_changed");
        let then = list("require_changed");
        if when.is_empty() || then.is_empty() {
            let what = if item.get("require_run").is_some() {
                "a rule that asks for a command's output as evidence (`require_run`, `evidence_pattern`) has no equivalent: make the command a `test` or `lint` gate"
            } else {
                "a rule without `when_changed` and `require_changed`"
            };
            self.left_out
                .push(format!("coverage rule over {}: {what}", json(&when)));
            return;
        }
        let gate = self.name(&format!("co-change-{}", self.names.len() + 1), "co-change");
        let mut text = format!(
            "      - name: {gate}\n        rule: co-change\n        when: {}\n        then: {}\n",
            json(&when),
            json(&then)
        );
        // `// no-engine-test-impact: <≥10 word reason>`: the marker is what comes before the
        // placeholder; the placeholder may say how many words.
        if let Some(skip) = item.get("or_explicit_skip").and_then(Value::as_str) {
            let marker = skip.split('<').next().unwrap_or(skip).trim();
            if !marker.is_empty() {
                text.push_str(&format!("        skip_marker: {}\n", json(marker)));
                let words = skip.split('<').nth(1).and_then(|rest| {
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
        self.gates.push(text);
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
                yaml.push_str(&format!("#   - {}\n", one_line(item)));
            }
        }
        yaml.push_str("version: 1\nstate: .validator\npipelines:\n");
        for pipeline in pipelines {
            yaml.push_str(pipeline);
        }
        Converted {
            yaml,
            left_out: self.left_out,
        }
    }
}

/// The strings of a JSON list (none for anything else).
fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// A JSON value as YAML flow text: JSON strings and arrays are YAML too, quoted so that
/// nothing in them can be read as YAML structure.
fn json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "[]".to_owned())
}

fn one_line(text: &str) -> String {
    crate::text::one_line(text)
}
