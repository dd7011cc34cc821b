//! The corpus of real tools' output (`tests/corpus/`, captured from the real tools, each output
//! beside its truth): how many findings and failed tests validator reads, and whether it
//! invents any. `cargo test --test it corpus -- --nocapture` prints the table the README
//! reports.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use validator::rules::findings;

fn corpus(kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(kind)
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The captured cases of one corpus: (directory name, directory), sorted.
fn cases(kind: &str) -> Vec<(String, PathBuf)> {
    let mut cases: Vec<(String, PathBuf)> = std::fs::read_dir(corpus(kind))
        .expect("corpus directory")
        .flatten()
        .filter(|e| e.path().join("meta.json").is_file())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    cases.sort();
    cases
}

/// A finding's file as the task directory names it: the tool's working directory and `./`
/// taken off, as validator does for the directory a gate runs in.
fn relative(file: &str, cwd: &str) -> String {
    let file = file
        .strip_prefix(cwd)
        .map(|rest| rest.trim_start_matches('/'))
        .unwrap_or(file);
    file.trim_start_matches("./").to_owned()
}

#[derive(Default)]
struct Tally {
    truth: usize,
    found: usize,
    invented: usize,
    rule_right: usize,
    rule_known: usize,
}

#[test]
fn findings_are_read_from_real_tools_output_without_inventing_any() {
    let mut by_tool: BTreeMap<String, Tally> = BTreeMap::new();
    let mut misses = Vec::new();
    for (name, dir) in cases("findings") {
        let meta = read_json(&dir.join("meta.json"));
        let cwd = meta["cwd"].as_str().unwrap_or_default();
        let truth = read_json(&dir.join("truth.json"));
        let truth = truth.as_array().cloned().unwrap_or_default();
        let output = std::fs::read(dir.join("output.txt")).expect("output.txt");
        let text = findings::strip_ansi(&String::from_utf8_lossy(&output));
        let mut parsed: Vec<Option<validator::verdict::Finding>> =
            findings::parse(&text).into_iter().map(Some).collect();
        let tally = by_tool.entry(name.clone()).or_default();
        for expected in &truth {
            tally.truth += 1;
            let file = expected["file"].as_str().unwrap_or_default();
            let line = expected["line"].as_u64().map(|n| n as u32);
            let rule = expected["rule"].as_str();
            // Of the findings at the same place, the one with the same rule first.
            let at_place = |f: &validator::verdict::Finding| {
                f.file.as_deref().map(|f| relative(f, cwd)).as_deref() == Some(file)
                    && f.line == line
            };
            let slot = parsed
                .iter()
                .position(|f| {
                    f.as_ref()
                        .is_some_and(|f| at_place(f) && f.rule.as_deref() == rule)
                })
                .or_else(|| parsed.iter().position(|f| f.as_ref().is_some_and(at_place)));
            match slot.and_then(|i| parsed[i].take()) {
                Some(found) => {
                    tally.found += 1;
                    if rule.is_some() {
                        tally.rule_known += 1;
                        if found.rule.as_deref() == rule {
                            tally.rule_right += 1;
                        }
                    }
                }
                None => misses.push(format!("{name}: missed {expected}")),
            }
        }
        for extra in parsed.into_iter().flatten() {
            tally.invented += 1;
            misses.push(format!("{name}: invented {extra}"));
        }
    }
    let total = by_tool.values().fold(Tally::default(), |mut all, t| {
        all.truth += t.truth;
        all.found += t.found;
        all.invented += t.invented;
        all.rule_known += t.rule_known;
        all.rule_right += t.rule_right;
        all
    });
    println!("| output | findings | found | invented | rule code right |");
    println!("|---|---|---|---|---|");
    for (name, t) in &by_tool {
        println!(
            "| {name} | {} | {} | {} | {}/{} |",
            t.truth, t.found, t.invented, t.rule_right, t.rule_known
        );
    }
    println!(
        "| **all {} outputs** | {} | {} ({:.1}%) | {} | {}/{} |",
        by_tool.len(),
        total.truth,
        total.found,
        100.0 * total.found as f64 / total.truth.max(1) as f64,
        total.invented,
        total.rule_right,
        total.rule_known
    );
    for miss in &misses {
        println!("{miss}");
    }
    assert!(
        total.found * 100 >= total.truth * 98,
        "found {} of {} findings (target 98%):\n{}",
        total.found,
        total.truth,
        misses.join("\n")
    );
    assert_eq!(
        total.invented,
        0,
        "invented findings:\n{}",
        misses.join("\n")
    );
}
