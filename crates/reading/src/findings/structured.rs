//! Findings a tool wrote as data: SARIF 2.1.0, checkstyle XML and reviewdog's rdjson as a
//! whole output, and, line by line amid other output, cargo's and rustc's JSON messages and
//! rdjsonl diagnostics. Every field is optional to the reader: a document that is not what it
//! claims is read for what it has, never trusted to be well-formed.

use quick_xml::Reader;
use quick_xml::events::Event;
use serde_json::Value;

use crate::Finding;

/// The findings of an output that is one structured document, or `None` when it is not one.
pub fn parse(output: &str, only: super::Only) -> Option<Vec<Finding>> {
    let text = output.trim();
    if let Some(found) = document(text, only) {
        return Some(found);
    }
    // A tool may say something first (a warning on stderr, merged into the output): the
    // document may start at a later line. The first few such lines are tried, no more.
    text.match_indices('\n')
        .map(|(at, _)| &text[at + 1..])
        .filter(|rest| {
            rest.starts_with('{') || rest.starts_with("<?xml") || rest.starts_with("<checkstyle")
        })
        .take(3)
        .find_map(|rest| document(rest, only))
}

/// The findings of `text` if it is one structured document from its first character.
fn document(text: &str, only: super::Only) -> Option<Vec<Finding>> {
    if text.starts_with('{') {
        // The document may be followed by a trailer (biome prints a summary after it).
        let document: Value = serde_json::Deserializer::from_str(text)
            .into_iter::<Value>()
            .next()?
            .ok()?;
        if let Some(runs) = document
            .get("runs")
            .and_then(Value::as_array)
            .filter(|_| only.allows("sarif"))
        {
            return Some(runs.iter().flat_map(sarif_run).collect());
        }
        if let Some(diagnostics) = document
            .get("diagnostics")
            .and_then(Value::as_array)
            .filter(|_| only.allows("rdjson"))
        {
            // A diagnostic without a severity has the document's (ruff writes it once there).
            let default = self::text(&document, "/severity");
            return Some(
                diagnostics
                    .iter()
                    .filter_map(|d| rdjson(d, default))
                    .collect(),
            );
        }
        return None;
    }
    if (text.starts_with("<?xml") || text.starts_with("<checkstyle")) && only.allows("checkstyle") {
        return checkstyle(text);
    }
    None
}

/// The findings on one line of JSON amid other output: a cargo `compiler-message`, a rustc
/// diagnostic (`--error-format=json`) or an rdjsonl diagnostic.
pub fn json_line(line: &str, only: super::Only) -> Option<Vec<Finding>> {
    if !line.starts_with('{') {
        return None;
    }
    let value: Value = serde_json::from_str(line).ok()?;
    if !only.allows("cargo-json") && !only.allows("rdjson") {
        return None;
    }
    let cargo = only.allows("cargo-json");
    if !cargo {
        return (value.get("location").is_some() && value.get("message").is_some())
            .then(|| rdjson(&value, None).into_iter().collect());
    }
    if value.get("reason").and_then(Value::as_str) == Some("compiler-message") {
        return Some(rustc(value.get("message")?).into_iter().collect());
    }
    if value.get("$message_type").and_then(Value::as_str) == Some("diagnostic") {
        return Some(rustc(&value).into_iter().collect());
    }
    if value.get("reason").is_some() {
        // cargo's other messages (artifacts, build-finished) say nothing to fix.
        return Some(Vec::new());
    }
    if value.get("location").is_some() && value.get("message").is_some() && only.allows("rdjson") {
        return Some(rdjson(&value, None).into_iter().collect());
    }
    None
}

fn text<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value.pointer(pointer).and_then(Value::as_str)
}

fn number(value: &Value, pointer: &str) -> Option<u32> {
    value
        .pointer(pointer)
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
}

/// A rustc diagnostic at its primary span; summaries without one (`aborting due to`) are not
/// findings.
fn rustc(message: &Value) -> Option<Finding> {
    let level = text(message, "/level")?;
    if !matches!(level, "error" | "warning") {
        return None;
    }
    let span = message
        .get("spans")?
        .as_array()?
        .iter()
        .find(|span| span.get("is_primary").and_then(Value::as_bool) == Some(true))?;
    let line = number(span, "/line_start").filter(|&n| n > 0)?;
    let mut rule = text(message, "/code/code").map(str::to_owned);
    if rule.is_none() {
        // A lint that carries no code names itself in a child note: `#[warn(unused)]`.
        rule = message
            .get("children")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|child| text(child, "/message"))
            .find_map(|note| {
                let inner = &note[note.find("#[")? + 2..];
                Some(inner.split_once('(')?.1.split(')').next()?.to_owned())
            });
    }
    Some(
        Finding::at(
            text(span, "/file_name")?,
            line,
            number(span, "/column_start"),
            text(message, "/message")?,
        )
        .with_severity(Some(level))
        .with_rule(rule.as_deref()),
    )
}

fn sarif_run(run: &Value) -> Vec<Finding> {
    let Some(results) = run.get("results").and_then(Value::as_array) else {
        return Vec::new();
    };
    let rules = SarifRules::of(run);
    results
        .iter()
        .map(|result| {
            let message = text(result, "/message/text").unwrap_or("(no message)");
            let location = result.pointer("/locations/0/physicalLocation");
            let file = location.and_then(|l| text(l, "/artifactLocation/uri"));
            let mut finding = Finding::new(message)
                .with_severity(Some(rules.level_of(result)))
                .with_rule(text(result, "/ruleId"));
            finding.file = file.map(file_uri);
            finding.line = location.and_then(|l| number(l, "/region/startLine"));
            finding.column = location.and_then(|l| number(l, "/region/startColumn"));
            finding
        })
        .collect()
}

/// The default levels a SARIF run's driver declares for its rules
/// (`rules[].defaultConfiguration.level`), by index and by id, read once per run.
struct SarifRules<'a> {
    by_index: Vec<Option<&'a str>>,
    by_id: std::collections::HashMap<&'a str, &'a str>,
}

impl<'a> SarifRules<'a> {
    fn of(run: &'a Value) -> Self {
        let rules = run
            .pointer("/tool/driver/rules")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let by_index: Vec<Option<&str>> = rules
            .iter()
            .map(|rule| text(rule, "/defaultConfiguration/level"))
            .collect();
        let by_id = rules
            .iter()
            .zip(&by_index)
            .filter_map(|(rule, level)| Some((text(rule, "/id")?, (*level)?)))
            .collect();
        SarifRules { by_index, by_id }
    }

    /// A result's level as SARIF defines it when the result says none: `none` for a result
    /// whose `kind` is not `fail`, else its rule's default level, else `warning`.
    fn level_of(&self, result: &'a Value) -> &'a str {
        if let Some(level) = text(result, "/level") {
            return level;
        }
        if text(result, "/kind").is_some_and(|kind| kind != "fail") {
            return "none";
        }
        let by_index = result
            .pointer("/ruleIndex")
            .or_else(|| result.pointer("/rule/index"))
            .and_then(Value::as_u64)
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| self.by_index.get(i).copied().flatten());
        by_index
            .or_else(|| {
                let id = text(result, "/ruleId").or_else(|| text(result, "/rule/id"))?;
                self.by_id.get(id).copied()
            })
            .unwrap_or("warning")
    }
}

/// A SARIF artifact URI as a path: `file:///t/a.py` → `/t/a.py`, `src/a%20b.py` → `src/a b.py`.
fn file_uri(uri: &str) -> String {
    let path = uri.strip_prefix("file://").unwrap_or(uri);
    String::from_utf8_lossy(&validator_text::uri_path_bytes(path)).into_owned()
}

fn rdjson(diagnostic: &Value, default_severity: Option<&str>) -> Option<Finding> {
    let mut finding = Finding::new(text(diagnostic, "/message")?)
        .with_severity(text(diagnostic, "/severity").or(default_severity))
        .with_rule(text(diagnostic, "/code/value"));
    finding.file = text(diagnostic, "/location/path").map(str::to_owned);
    finding.line = number(diagnostic, "/location/range/start/line");
    finding.column = number(diagnostic, "/location/range/start/column");
    Some(finding)
}

/// A checkstyle `source` as its rule: `eslint.rules.no-unused-vars` → `no-unused-vars`,
/// `ShellCheck.SC2086` and `jshint.W104` → the code, a Java check's package path
/// (`com.puppycrawl.tools.checkstyle.checks.FooCheck`) → `FooCheck`; a name whose every part
/// counts is kept whole (phpcs's `PSR12.Files.FileHeader.SpacingAfterBlock`, biome's
/// `lint/style/useConst`).
fn checkstyle_rule(source: &str) -> &str {
    if source.contains('/') {
        return source;
    }
    if let Some((_, rule)) = source.split_once(".rules.").filter(|(_, r)| !r.is_empty()) {
        return rule;
    }
    let Some((package, last)) = source.rsplit_once('.').filter(|(_, l)| !l.is_empty()) else {
        return source;
    };
    let java_package = package
        .split('.')
        .all(|part| part.starts_with(|c: char| c.is_ascii_lowercase()));
    if super::lines::is_code(last) || java_package && package.contains('.') {
        return last;
    }
    source
}

/// `<file name=".."><error line="3" column="5" severity="error" message=".." source=".."/>`.
fn checkstyle(text: &str) -> Option<Vec<Finding>> {
    let mut reader = Reader::from_str(text);
    let mut file: Option<String> = None;
    let mut found = Vec::new();
    let mut is_checkstyle = false;
    loop {
        let event = reader.read_event().ok()?;
        let (Event::Start(element) | Event::Empty(element)) = &event else {
            if matches!(event, Event::Eof) {
                break;
            }
            continue;
        };
        let attribute = |name: &str| crate::test_names::attribute(element, name);
        match element.local_name().as_ref() {
            "checkstyle" => is_checkstyle = true,
            "file" => file = attribute("name"),
            "error" => {
                let mut finding = Finding::new(attribute("message").unwrap_or_default())
                    .with_severity(attribute("severity").as_deref())
                    .with_rule(attribute("source").as_deref().map(checkstyle_rule));
                finding.file = file.clone();
                finding.line = attribute("line").and_then(|n| n.parse().ok());
                finding.column = attribute("column").and_then(|n| n.parse().ok());
                found.push(finding);
            }
            _ => {}
        }
    }
    is_checkstyle.then_some(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sarif_results_become_findings() {
        let sarif = r#"{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"ruff"}},"results":[{"ruleId":"F401","level":"error","message":{"text":"`os` imported but unused"},"locations":[{"physicalLocation":{"artifactLocation":{"uri":"file:///t/a%20b.py"},"region":{"startLine":1,"startColumn":8}}}]}]}]}"#;
        let found = parse(sarif, super::super::Only::default()).unwrap_or_default();
        assert_eq!(
            found.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["/t/a b.py:1:8: error: `os` imported but unused [F401]"]
        );
    }

    #[test]
    fn checkstyle_and_rdjson_become_findings() {
        let xml = r#"<?xml version="1.0"?><checkstyle version="4.3"><file name="a.js"><error line="1" column="7" severity="error" message="&apos;x&apos; is unused" source="no-unused-vars"/></file></checkstyle>"#;
        assert_eq!(
            parse(xml, super::super::Only::default()).unwrap_or_default()[0].to_string(),
            "a.js:1:7: error: 'x' is unused [no-unused-vars]"
        );
        let rd = r#"{"source":{"name":"x"},"diagnostics":[{"message":"bad","location":{"path":"a.go","range":{"start":{"line":3,"column":2}}},"severity":"WARNING","code":{"value":"X1"}}]}"#;
        assert_eq!(
            parse(rd, super::super::Only::default()).unwrap_or_default()[0].to_string(),
            "a.go:3:2: warning: bad [X1]"
        );
    }

    #[test]
    fn a_sarif_result_without_a_level_has_the_sarif_default() {
        let sarif = r#"{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"t","rules":[{"id":"R1"},{"id":"R2","defaultConfiguration":{"level":"error"}}]}},"results":[
            {"ruleId":"R1","message":{"text":"a"}},
            {"ruleId":"R2","message":{"text":"b"}},
            {"ruleId":"X","ruleIndex":1,"message":{"text":"c"}},
            {"ruleId":"R2","level":"note","message":{"text":"d"}},
            {"ruleId":"R2","kind":"pass","message":{"text":"e"}}]}]}"#;
        let found = parse(sarif, super::super::Only::default()).unwrap_or_default();
        let levels: Vec<Option<&str>> = found.iter().map(|f| f.severity.as_deref()).collect();
        assert_eq!(
            levels,
            [
                Some("warning"),
                Some("error"),
                Some("error"),
                Some("note"),
                Some("none")
            ]
        );
    }

    #[test]
    fn checkstyle_sources_are_cut_only_where_a_part_is_the_tools_name() {
        for (source, rule) in [
            ("eslint.rules.no-unused-vars", "no-unused-vars"),
            ("ShellCheck.SC2086", "SC2086"),
            ("jshint.W104", "W104"),
            (
                "com.puppycrawl.tools.checkstyle.checks.whitespace.WhitespaceAroundCheck",
                "WhitespaceAroundCheck",
            ),
            (
                "PSR12.Files.FileHeader.SpacingAfterBlock",
                "PSR12.Files.FileHeader.SpacingAfterBlock",
            ),
            ("lint/style/useConst", "lint/style/useConst"),
            ("DL3008", "DL3008"),
        ] {
            assert_eq!(checkstyle_rule(source), rule);
        }
    }

    #[test]
    fn rdjson_diagnostics_take_the_documents_severity() {
        let rd = r#"{"source":{"name":"ruff"},"severity":"WARNING","diagnostics":[{"message":"bad","location":{"path":"a.py","range":{"start":{"line":1}}},"code":{"value":"F401"}}]}"#;
        assert_eq!(
            parse(rd, super::super::Only::default()).unwrap_or_default()[0].to_string(),
            "a.py:1: warning: bad [F401]"
        );
    }

    #[test]
    fn cargo_json_lines_read_the_primary_span() {
        let line = r#"{"reason":"compiler-message","message":{"message":"unused variable: `x`","code":{"code":"unused_variables"},"level":"warning","spans":[{"file_name":"src/main.rs","line_start":2,"column_start":9,"is_primary":true}],"children":[]}}"#;
        let found = json_line(line, super::super::Only::default()).unwrap_or_default();
        assert_eq!(
            found[0].to_string(),
            "src/main.rs:2:9: warning: unused variable: `x` [unused_variables]"
        );
        assert_eq!(
            json_line(
                r#"{"reason":"build-finished","success":false}"#,
                super::super::Only::default()
            ),
            Some(Vec::new())
        );
    }

    #[test]
    fn a_document_after_a_line_of_noise_is_still_read() {
        let out = "warning: `ruff` is a preview command\n{\"version\":\"2.1.0\",\"runs\":[{\"results\":[{\"ruleId\":\"F401\",\"message\":{\"text\":\"unused\"},\"locations\":[{\"physicalLocation\":{\"artifactLocation\":{\"uri\":\"a.py\"},\"region\":{\"startLine\":1}}}]}]}]}\n";
        assert_eq!(
            parse(out, super::super::Only::default()).unwrap_or_default()[0].to_string(),
            "a.py:1: warning: unused [F401]"
        );
    }

    #[test]
    fn broken_documents_are_not_trusted() {
        assert!(super::super::parse("{\"runs\": 3}").is_empty());
        assert!(
            parse(
                "<checkstyle><file name=\"a\"><error line=\"x\"",
                super::super::Only::default()
            )
            .is_none()
        );
        assert!(json_line("{not json", super::super::Only::default()).is_none());
    }
}
