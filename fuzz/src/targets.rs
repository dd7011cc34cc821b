//! One function per fuzz target: feed the bytes to a parser the validator points at text it
//! does not control (a rules file or contract a person wrote, a worker's done signal, a tool's
//! output, a JUnit report, a reviewer's answer) and check what a caller relies on besides "it
//! returned": bounded results, no empty names, errors that point inside the text.
//!
//! This file is also compiled into the validator's own tests (`tests/it/fuzz_seeds.rs`), which
//! replay the committed seeds through these same functions; it may use nothing but `validator`
//! and `std`.

use std::path::Path;

use validator::done::{MAX_BODY, Signal};
use validator::rules::review;
use validator_reading::{MAX_FINDINGS, findings, test_names};

/// Text as the validator reads it from a file: tool output is read lossily, and the loaders
/// refuse non-UTF-8 before parsing, so only the lossy reading can reach a parser.
fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

/// The rules-file loader (`Rules::parse`, what `validator rules check` and every command run
/// first), the gate-graph checks `rules check` prints, and the contract loader, which shares
/// its YAML path.
pub fn rules_file(data: &[u8]) {
    let source = text(data);
    // A directory that does not exist: nothing relative to it can be read while fuzzing.
    let path = Path::new("/nonexistent-validator-fuzz/validator.yaml");
    match validator::Rules::parse(path, &source) {
        Ok(rules) => {
            for pipeline in &rules.pipelines {
                let _ = validator::config::graph::warnings(pipeline);
                let _ = validator::config::graph::render(pipeline, rules.defaults.timeout);
            }
        }
        Err(err) => check_config_error(&err, &source),
    }
    let contract = Path::new("/nonexistent-validator-fuzz/contracts/fuzz.yaml");
    if let Err(err) = validator::contract::Contract::parse(contract, source.clone(), "fuzz") {
        check_config_error(&err, &source);
    }
}

/// An error in a file a person wrote must render, say something, and point at a line that
/// exists (the line after the last one is where "unexpected end of file" is). Lines are
/// counted as the YAML parser counts them: a CR alone, NEL, LS and PS end a line too.
fn check_config_error(err: &validator::ConfigError, source: &str) {
    let shown = err.to_string();
    assert!(!shown.trim().is_empty(), "an empty error for {source:?}");
    if let Some(line) = err.line {
        let lines = source
            .replace("\r\n", "\n")
            .split(['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}'])
            .count();
        assert!(
            (1..=lines + 1).contains(&line),
            "line {line} of a {lines}-line file: {shown}"
        );
    }
}

/// The done signal's body: size cap, hash, and the JSON / STATUS block / YAML / prose reading.
pub fn signal_body(data: &[u8]) {
    let signal = Signal::from_bytes(data, None);
    assert!(signal.sha256.as_deref().is_some_and(|sha| sha.len() == 64));
    assert_eq!(signal.body().len(), data.len().min(MAX_BODY));
    match &signal.report {
        Ok(report) => {
            let _ = report.declared();
            assert!(data.len() <= MAX_BODY, "an oversized body was parsed");
        }
        Err(why) => assert!(!why.trim().is_empty(), "an empty reason for {data:?}"),
    }
}

/// A linter's output in any format `findings::FORMATS` lists: a file, when named, is not
/// empty; a line, when given, counts from 1 and comes with its file; every finding says
/// something.
///
/// The general reader is asked about files as a task would answer: a path whose name ends in
/// an even byte exists, any other does not, so both of its branches are explored; a finding it
/// makes names a file that exists.
pub fn findings(data: &[u8]) {
    struct EvenNames;
    impl findings::Files for EvenNames {
        fn is_file(&self, path: &str) -> bool {
            path.bytes().last().is_some_and(|b| b % 2 == 0)
        }
    }
    let stripped = findings::strip_ansi(&text(data));
    assert!(!stripped.contains('\u{1b}'), "an escape survived stripping");
    let known = findings::parse(&stripped);
    let read = findings::read(&stripped, findings::Only::default(), &EvenNames).findings;
    for finding in &read {
        let general = !known
            .iter()
            .any(|k| k.file == finding.file && k.line == finding.line);
        assert!(
            !general
                || finding
                    .file
                    .as_deref()
                    .is_some_and(|f| findings::Files::is_file(&EvenNames, f)),
            "a location of a file that does not exist: {finding:?}"
        );
    }
    for finding in known.into_iter().chain(read) {
        assert!(finding.file.as_deref().is_none_or(|f| !f.trim().is_empty()));
        assert!(finding.line.is_none_or(|line| line > 0), "{finding:?}");
        assert!(
            finding.line.is_none() || finding.file.is_some(),
            "{finding:?}"
        );
        assert!(!finding.message.trim().is_empty(), "{finding:?}");
    }
}

/// A test runner's console output (cargo test, nextest, pytest, unittest, go test).
pub fn test_names(data: &[u8]) {
    let report = test_names::from_output(&text(data));
    if let Some(cause) = &report.could_not_run {
        assert!(!cause.trim().is_empty());
    }
    let failed = report.failed;
    assert!(failed.len() <= MAX_FINDINGS);
    let mut names = std::collections::BTreeSet::new();
    for test in failed {
        assert!(!test.name.trim().is_empty(), "an unnamed test: {test:?}");
        assert!(names.insert(test.name.clone()), "{} twice", test.name);
        let _ = test.into_finding();
    }
}

/// A JUnit XML report named by a `test` gate's `junit:`.
pub fn junit(data: &[u8]) {
    let read = test_names::from_junit(&text(data));
    assert!(read.failed.len() <= MAX_FINDINGS);
    // No failure is lost to a name that reads as nothing.
    assert!(read.failed.iter().all(|f| !f.name.trim().is_empty()));
    assert!(read.unread.is_none_or(|why| !why.trim().is_empty()));
}

/// A reviewer's answer: the APPROVED / REJECTED line and the issues after it.
pub fn review_answer(data: &[u8]) {
    if let Some(answer) = review::parse(&text(data)) {
        assert!(answer.issues.len() <= MAX_FINDINGS);
        for issue in &answer.issues {
            assert!(!issue.message.trim().is_empty(), "{issue:?}");
        }
    }
}

/// A stop hook's input from an agent (JSON on stdin): parsed for each agent, the last message
/// cut to the end a done signal may hold, never more and never a split character.
pub fn hook_input(data: &[u8]) {
    use validator::hook::{Agent, Input};
    for agent in [Agent::Claude, Agent::Codex, Agent::Gemini, Agent::Opencode] {
        let Ok(mut input) = Input::parse(agent, data) else {
            continue;
        };
        // Gemini's transcript is a file on the machine, read by its own tests.
        input.transcript_path = None;
        let (message, left_out) = input.message(agent);
        assert!(message.len() <= MAX_BODY);
        let whole = match agent {
            Agent::Claude | Agent::Codex | Agent::Opencode => {
                input.last_assistant_message.as_deref()
            }
            Agent::Gemini => input.prompt_response.as_deref(),
        }
        .unwrap_or_default();
        assert_eq!(
            &whole[left_out..],
            message,
            "the message's end was not kept"
        );
        // A tool event's call: what it does, read from any input without touching a file
        // beyond the paths it names.
        let call = validator::hook::tool::Call::of(&input);
        let _ = call.action(Path::new("/nonexistent-validator-fuzz"));
        assert_eq!(call.error_signature().len(), 64);
    }
}

/// A shell command line an agent's tool would run: read without running it, every command it
/// holds seen with what it writes. Whatever the line, the reading ends, names each write, and
/// says why when it cannot tell.
pub fn shell_line(data: &[u8]) {
    let line = text(data);
    let script = validator_shell::read(&line);
    for why in &script.opaque {
        assert!(!why.trim().is_empty());
    }
    for command in validator::tool_policy::commands_of(&line) {
        if let Some(why) = &command.unknown {
            assert!(!why.trim().is_empty(), "an empty reason for {line:?}");
        }
        let _ = validator::tool_policy::patch_files(&line);
    }
}

/// git's listings of the worker's files (`status --porcelain=v2 -z`, `ls-files -s -v`,
/// `diff-index --raw -z`), whose paths are the worker's names: every path read is a non-empty
/// path inside the task, and every name shows on one line.
pub fn git_listing(data: &[u8]) {
    for path in validator::git::read_listings(data) {
        assert!(!path.is_empty());
        let shown = validator_text::name(&path);
        assert!(!shown.contains(['\n', '\r', '\u{1b}', '\u{2028}', '\u{2029}', '\u{85}']));
        if shown != path {
            assert!(shown.len() >= 2 && shown.starts_with('"') && shown.ends_with('"'));
            assert!(!shown.chars().any(char::is_control), "{shown:?}");
        }
    }
}
