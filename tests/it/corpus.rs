//! The corpus of real tools' output (`tests/corpus/`, captured from the real tools, each output
//! beside its truth): how many findings and failed tests validator reads, and whether it
//! invents any. `cargo test --test it corpus -- --nocapture` prints the table the README
//! reports.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use validator_reading::findings;

/// The corpus of `kind`: the committed one, or the one `$VALIDATOR_CORPUS_DIR` holds (the same
/// truth beside outputs captured afresh by `tests/corpus/live.sh`).
fn corpus(kind: &str) -> PathBuf {
    match std::env::var_os("VALIDATOR_CORPUS_DIR") {
        Some(dir) => PathBuf::from(dir).join(kind),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/corpus")
            .join(kind),
    }
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

/// The files of the project a capture ran on, as the general reader asks of a task: the
/// committed fixture standing where the tool saw it (`cwd` is the fixture's root, or a folder
/// in it).
struct Fixture {
    /// Where the fixture is committed, if it is.
    root: Option<PathBuf>,
    /// Or the list of its files, for a real project not committed (`fixtures/<name>.files`).
    listed: Option<std::collections::HashSet<String>>,
    /// Where the tool saw the fixture's root, and the directory it ran in.
    seen_root: PathBuf,
    cwd: PathBuf,
    /// The command's arguments that name directories of the fixture.
    given_dirs: Vec<String>,
}

impl Fixture {
    fn of(kind: &str, meta: &Value) -> Fixture {
        let name = meta["fixture"].as_str().unwrap_or_default();
        let cwd = PathBuf::from(meta["cwd"].as_str().unwrap_or_default());
        let seen_root = cwd
            .ancestors()
            .find(|a| a.file_name().is_some_and(|n| n == name))
            .map_or_else(|| cwd.clone(), Path::to_path_buf);
        let root = corpus(kind).join("fixtures").join(name);
        let listed = std::fs::read_to_string(corpus(kind).join(format!("fixtures/{name}.files")))
            .ok()
            .map(|list| list.lines().map(str::to_owned).collect());
        let mut fixture = Fixture {
            root: (!name.is_empty() && root.is_dir()).then_some(root),
            listed,
            seen_root,
            cwd,
            given_dirs: Vec::new(),
        };
        let command = meta["command"].as_str().unwrap_or_default();
        fixture.given_dirs = shell_words::split(command)
            .unwrap_or_default()
            .into_iter()
            .skip(1)
            .filter(|arg| !arg.starts_with('-') && arg != ".")
            .filter(|arg| {
                fixture
                    .root
                    .as_ref()
                    .is_some_and(|root| root.join(arg).is_dir())
            })
            .collect();
        fixture
    }
}

impl findings::Files for Fixture {
    fn given_dirs(&self) -> &[String] {
        &self.given_dirs
    }

    fn is_file(&self, path: &str) -> bool {
        if self.root.is_none() && self.listed.is_none() {
            return false;
        }
        let mut seen = PathBuf::new();
        for part in self.cwd.join(path).components() {
            match part {
                std::path::Component::ParentDir => {
                    seen.pop();
                }
                std::path::Component::CurDir => {}
                other => seen.push(other),
            }
        }
        let Ok(rel) = seen.strip_prefix(&self.seen_root) else {
            return false;
        };
        match (&self.root, &self.listed) {
            (Some(root), _) => root.join(rel).is_file(),
            (None, Some(listed)) => listed.contains(rel.to_string_lossy().as_ref()),
            (None, None) => false,
        }
    }
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
    let (total, misses) = measure_findings("findings");
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

/// The held-out corpus: outputs of the same tools on real published projects, captured after
/// the readers were written and not used to write them. Its figures are reported in the
/// README, not held to the targets here.
#[test]
fn held_out_findings_are_measured() {
    measure_findings("heldout/findings");
}

/// Reads every output of the corpus `kind` and prints a table of what was found, missed and
/// invented; returns the totals and each miss or invention.
fn measure_findings(kind: &str) -> (Tally, Vec<String>) {
    let mut by_tool: BTreeMap<String, Tally> = BTreeMap::new();
    let mut misses = Vec::new();
    for (name, dir) in cases(kind) {
        let meta = read_json(&dir.join("meta.json"));
        let cwd = meta["cwd"].as_str().unwrap_or_default();
        let truth = read_json(&dir.join("truth.json"));
        let truth = truth.as_array().cloned().unwrap_or_default();
        let output = std::fs::read(dir.join("output.txt")).expect("output.txt");
        let text = findings::strip_ansi(&String::from_utf8_lossy(&output));
        let fixture = Fixture::of(kind, &meta);
        let mut parsed: Vec<Option<validator_reading::Finding>> =
            findings::read(&text, findings::Only::default(), &fixture)
                .findings
                .into_iter()
                .map(Some)
                .collect();
        let tally = by_tool.entry(name.clone()).or_default();
        for expected in &truth {
            tally.truth += 1;
            let file = expected["file"].as_str().unwrap_or_default();
            let line = expected["line"].as_u64().map(|n| n as u32);
            let rule = expected["rule"].as_str();
            // Of the findings at the same place, the one with the same rule first.
            let at_place = |f: &validator_reading::Finding| {
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
    (total, misses)
}

/// Go reports a parent test as failed with its failing subtest; validator names the subtest
/// only (one failure, one name), so a truth name that is the parent of another is not asked for.
fn leaves(names: Vec<String>) -> Vec<String> {
    names
        .iter()
        .filter(|name| {
            !names
                .iter()
                .any(|other| other.starts_with(&format!("{name}/")))
        })
        .cloned()
        .collect()
}

#[derive(Default)]
struct Named {
    truth: usize,
    found: usize,
    invented: usize,
    ambiguous: usize,
    outcome_right: bool,
}

/// Names no reader of the output can tell from a real failure, each with why; the table
/// counts them apart and they are not held against the parser.
const AMBIGUOUS: &[(&str, &str, &str)] = &[
    (
        "go-test-default",
        "TestFake/sub",
        "plain `go test` of a failing package: a passing test printed `--- FAIL: TestFake (0.00s)` and its subtest line, exactly as go prints a failure (go's test2json and gotestsum report it too)",
    ),
    (
        "gotestsum-junit",
        "TestFake/sub",
        "gotestsum reads go's plain output: the same printed lines are a failure in its console and in its JUnit report",
    ),
];

/// The words of a sentence, for comparing causes worded apart.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() >= 3)
        .map(str::to_lowercase)
        .collect()
}

#[test]
fn failed_tests_are_named_from_real_runners_output_without_inventing_any() {
    let (truth, found, invented, outcomes, rows, problems) = measure_tests("tests");
    assert!(
        found * 100 >= truth * 99 && invented == 0 && outcomes == rows,
        "named {found} of {truth}, invented {invented}, {outcomes} of {rows} outcomes right:\n{}",
        problems.join("\n")
    );
}

/// The held-out runners' outputs (see [`held_out_findings_are_measured`]).
#[test]
fn held_out_failed_tests_are_measured() {
    measure_tests("heldout/tests");
}

/// (failed tests, named, invented, outcomes right, outputs, problems) over the corpus `kind`,
/// with the table printed.
fn measure_tests(kind: &str) -> (usize, usize, usize, usize, usize, Vec<String>) {
    use validator_reading::test_names;
    let mut rows: Vec<(String, Named)> = Vec::new();
    let mut problems = Vec::new();
    for (name, dir) in cases(kind) {
        let truth = read_json(&dir.join("truth.json"));
        let outcome = truth["outcome"].as_str().unwrap_or_default();
        let expected: Vec<String> = truth["failed"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|n| n.as_str().map(str::to_owned))
            .collect();
        let expected = leaves(expected);
        let output = std::fs::read(dir.join("output.txt")).expect("output.txt");
        let text = findings::strip_ansi(&String::from_utf8_lossy(&output));
        // As a `test` gate reads it: the console, and the JUnit report when the run wrote one.
        let report = test_names::from_output(&text);
        let mut names: Vec<String> = report.failed.iter().map(|f| f.name.clone()).collect();
        if let Ok(xml) = std::fs::read_to_string(dir.join("junit.xml")) {
            for test in test_names::from_junit(&xml).failed {
                if !names.iter().any(|n| test_names::same_test(n, &test.name)) {
                    names.push(test.name);
                }
            }
        }
        let could_not_run = names.is_empty() && report.could_not_run.is_some();
        let mut row = Named {
            truth: expected.len(),
            outcome_right: match outcome {
                "could_not_run" => could_not_run,
                _ => !could_not_run,
            },
            ..Named::default()
        };
        if !row.outcome_right {
            problems.push(format!(
                "{name}: outcome {outcome}, read as could_not_run={could_not_run} ({:?})",
                report.could_not_run
            ));
        }
        if outcome == "could_not_run" {
            let cause = truth["cause"].as_str().unwrap_or_default();
            let said = report.could_not_run.clone().unwrap_or_default();
            // The cause as the truth words it (the error and its message, before any
            // parenthesised note): most of its words are in what validator says.
            let wanted = words(cause.split(" (").next().unwrap_or(cause));
            let said_words = words(&said);
            let shared = wanted.iter().filter(|w| said_words.contains(*w)).count();
            if wanted.is_empty() || shared * 10 < wanted.len() * 7 {
                problems.push(format!("{name}: cause `{cause}`, said `{said}`"));
                row.outcome_right = false;
            }
        }
        let mut unmatched: Vec<&String> = expected.iter().collect();
        for reported in &names {
            if AMBIGUOUS
                .iter()
                .any(|(case, test, _)| *case == name && test == reported)
            {
                row.ambiguous += 1;
                continue;
            }
            match unmatched.iter().position(|e| *e == reported) {
                Some(i) => {
                    unmatched.remove(i);
                    row.found += 1;
                }
                None => {
                    row.invented += 1;
                    problems.push(format!(
                        "{name}: named `{reported}`, not a failed test as the runner names it"
                    ));
                }
            }
        }
        for missed in unmatched {
            problems.push(format!("{name}: missed `{missed}`"));
        }
        rows.push((name, row));
    }
    let truth: usize = rows.iter().map(|(_, r)| r.truth).sum();
    let found: usize = rows.iter().map(|(_, r)| r.found).sum();
    let invented: usize = rows.iter().map(|(_, r)| r.invented).sum();
    let outcomes = rows.iter().filter(|(_, r)| r.outcome_right).count();
    println!("| output | failed tests | named | invented | ambiguous | outcome right |");
    println!("|---|---|---|---|---|---|");
    for (name, r) in &rows {
        println!(
            "| {name} | {} | {} | {} | {} | {} |",
            r.truth,
            r.found,
            r.invented,
            r.ambiguous,
            if r.outcome_right { "yes" } else { "no" }
        );
    }
    for (case, test, why) in AMBIGUOUS {
        println!("ambiguous: {case}: `{test}`: {why}");
    }
    println!(
        "| **all {} outputs** | {truth} | {found} ({:.1}%) | {invented} | {outcomes} of {} |",
        rows.len(),
        100.0 * found as f64 / truth.max(1) as f64,
        rows.len()
    );
    for problem in &problems {
        println!("{problem}");
    }
    (truth, found, invented, outcomes, rows.len(), problems)
}

/// Prints what validator reads from one corpus output: `CORPUS_SHOW=<dir> cargo test --test it
/// corpus::show -- --nocapture --ignored`.
#[test]
#[ignore = "a tool for looking, not a check"]
fn show() {
    let Ok(name) = std::env::var("CORPUS_SHOW") else {
        return;
    };
    for (case, dir) in cases("findings") {
        if !case.starts_with(&name) {
            continue;
        }
        let meta = read_json(&dir.join("meta.json"));
        let output = std::fs::read(dir.join("output.txt")).expect("output.txt");
        let text = findings::strip_ansi(&String::from_utf8_lossy(&output));
        let read = findings::read(
            &text,
            findings::Only::default(),
            &Fixture::of("findings", &meta),
        );
        println!("== {case} ({} unread)", read.unread);
        for f in read.findings {
            println!("  {f}  [severity {:?}]", f.severity);
        }
    }
}
