//! Python's runners. pytest: its short test summary (`FAILED node - reason`) names the
//! failures; without one, `-v`'s status lines before the failure sections; a module that could
//! not be collected (an import or syntax error) is "could not run" with its `E   ` cause.
//! unittest: the `FAIL:`/`ERROR:` headers right under its `=====` rules (subTest failures name
//! their test once), a module that could not be imported is "could not run".

use super::{Failed, Report};
use crate::MAX_FINDINGS;

pub fn read(lines: &[&str], report: &mut Report) {
    read_pytest(lines, report);
    read_unittest(lines, report);
}

/// A pytest banner line: `==== short test summary info ====`, `=== 1 failed in 0.1s ===`.
fn banner(line: &str) -> Option<&str> {
    let inner = line.strip_prefix("==")?.trim_start_matches('=');
    let inner = inner.strip_suffix("==")?.trim_end_matches('=');
    Some(inner.trim())
}

fn read_pytest(lines: &[&str], report: &mut Report) {
    // The last banner is pytest's own; a test's captured output may print one before it.
    let summary = lines
        .iter()
        .rposition(|l| banner(l) == Some("short test summary info"));
    let sections = lines
        .iter()
        .position(|l| matches!(banner(l), Some("FAILURES" | "ERRORS")))
        .unwrap_or(lines.len());
    if let Some(start) = summary {
        let titles = section_titles(lines, sections);
        let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
        for line in &lines[start + 1..] {
            if banner(line).is_some() || report.failed.len() >= MAX_FINDINGS {
                break;
            }
            // pytest 9's subtests: `SUBFAILED(separator='::') node - why` names the test.
            let line = match line.strip_prefix("SUBFAILED") {
                Some(rest) => {
                    let rest = if rest.starts_with('(') {
                        rest.split_once(") ").map_or("", |(_, node)| node)
                    } else {
                        rest.trim_start()
                    };
                    format!("FAILED {rest}")
                }
                None => (*line).to_owned(),
            };
            for status in ["FAILED ", "ERROR "] {
                let Some(rest) = line.strip_prefix(status) else {
                    continue;
                };
                let (node, why) = match rest.split_once(" - ") {
                    Some((node, why)) => (node.trim(), Some(why.trim().to_owned())),
                    None => (rest.trim(), None),
                };
                if node.contains("::") {
                    // Each test is looked up once, however often a line names it.
                    if !seen.insert(node.to_owned()) {
                        continue;
                    }
                    let mut test = node_failed(node).because(why);
                    place_in_sections(lines, &titles, &mut test);
                    report.add(test);
                } else if status == "ERROR "
                    && node.ends_with(".py")
                    && report.could_not_run.is_none()
                {
                    let cause = collection_cause(lines, node).or(why);
                    report.cannot_run(&format!(
                        "collecting {node}: {}",
                        cause.as_deref().unwrap_or("error")
                    ));
                }
            }
        }
        return;
    }
    // Without a summary: `-v`'s `node FAILED [ 50%]` lines, before any failure's section.
    for line in &lines[..sections] {
        for status in [" FAILED", " ERROR"] {
            if let Some((node, after)) = line.split_once(status) {
                if node.contains("::")
                    && !node.contains(' ')
                    && (after.is_empty() || after.trim_start().starts_with('['))
                {
                    report.add(node_failed(node));
                }
            }
        }
    }
    if lines
        .iter()
        .any(|l| l.starts_with("!!") && l.contains("error") && l.contains("during collection"))
    {
        let cause = lines
            .iter()
            .find_map(|l| {
                l.strip_prefix("_")
                    .and_then(|_| l.trim_matches('_').trim().strip_prefix("ERROR collecting "))
            })
            .and_then(|node| {
                collection_cause(lines, node.trim())
                    .map(|c| format!("collecting {}: {c}", node.trim()))
            });
        report.cannot_run(cause.as_deref().unwrap_or("an error during collection"));
    }
}

fn node_failed(node: &str) -> Failed {
    Failed {
        file: node
            .split("::")
            .next()
            .filter(|f| f.ends_with(".py"))
            .map(str::to_owned),
        ..Failed::named(node)
    }
}

/// The error under `___ ERROR collecting <node> ___`: its last `E   SomeError: ...` line.
fn collection_cause(lines: &[&str], node: &str) -> Option<String> {
    let start = lines.iter().position(|l| {
        l.starts_with('_') && l.trim_matches('_').trim() == format!("ERROR collecting {node}")
    })?;
    let end = lines[start + 1..]
        .iter()
        .position(|l| l.starts_with('_') || banner(l).is_some())
        .map_or(lines.len(), |p| start + 1 + p);
    lines[start + 1..end]
        .iter()
        .filter_map(|l| l.strip_prefix("E   "))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .rfind(|l| {
            l.split(':')
                .next()
                .is_some_and(|kind| kind.ends_with("Error") || kind.ends_with("Exception"))
        })
        .map(str::to_owned)
}

/// The line a failure's section ends on (`tests/test_a.py:12: AssertionError`): where it
/// failed.
/// Where each failure's section starts, by its title (`___ TestC.test_b ___`), read once.
fn section_titles<'a>(
    lines: &[&'a str],
    sections: usize,
) -> std::collections::HashMap<&'a str, usize> {
    let mut titles = std::collections::HashMap::new();
    for (at, line) in lines.iter().enumerate().skip(sections) {
        if line.starts_with('_') {
            let heading = line.trim_matches('_').trim();
            // `ERROR at setup of test_b` is the section of `test_b`.
            let title = match heading.strip_prefix("ERROR at ") {
                Some(rest) => rest.split_once(" of ").map_or(heading, |(_, t)| t),
                None => heading,
            };
            titles.entry(title).or_insert(at);
        }
    }
    titles
}

fn place_in_sections(
    lines: &[&str],
    titles: &std::collections::HashMap<&str, usize>,
    test: &mut Failed,
) {
    // The section's title is the node id without its file, classes joined by `.`:
    // `TestC.test_b`, `test_p[x::y]` (a parameter may hold `::`).
    let (base, params) = match test.name.find('[') {
        Some(at) => test.name.split_at(at),
        None => (test.name.as_str(), ""),
    };
    let title = format!(
        "{}{params}",
        base.split("::").skip(1).collect::<Vec<_>>().join(".")
    );
    let Some(&start) = titles.get(title.as_str()) else {
        return;
    };
    let mut first_error: Option<&str> = None;
    for line in &lines[start + 1..] {
        if line.starts_with('_') || banner(line).is_some() || line.starts_with("---") {
            break;
        }
        if let Some(error) = line.strip_prefix("E ").map(str::trim) {
            first_error = first_error.or(Some(error).filter(|e| !e.is_empty()));
        }
        let Some((file, rest)) = line.split_once(':') else {
            continue;
        };
        if let Some((number, _)) = rest.split_once(": ") {
            if file.ends_with(".py") && !file.contains(' ') {
                if let Ok(number) = number.parse::<u32>() {
                    test.file = Some(file.to_owned());
                    test.line = Some(number);
                }
            }
        }
    }
    // pytest cuts its summary's reason to the terminal's width; the section has it whole.
    if test.message.as_deref().is_none_or(|m| m.ends_with("...")) {
        if let Some(error) = first_error {
            test.message = Some(super::clip(error));
        }
    }
}

fn read_unittest(lines: &[&str], report: &mut Report) {
    let rule = |l: &str| l.len() >= 20 && l.chars().all(|c| c == '=');
    for (i, line) in lines.iter().enumerate() {
        if !rule(line) {
            continue;
        }
        let Some(header) = lines.get(i + 1) else {
            continue;
        };
        let Some(rest) = header
            .strip_prefix("FAIL: ")
            .or_else(|| header.strip_prefix("ERROR: "))
        else {
            continue;
        };
        // `test_x (mod.Class.test_x)`, then perhaps ` [msg]` and ` (i=1)` for a subTest.
        let (short, id) = match rest.split_once(" (") {
            Some((short, after)) => (short, after.split(')').next().unwrap_or_default()),
            None => (rest, ""),
        };
        let traceback = &lines[(i + 2).min(lines.len())..];
        let block_end = traceback
            .iter()
            .position(|l| rule(l) || l.starts_with("Ran "))
            .unwrap_or(traceback.len());
        let block = &traceback[..block_end];
        let last = block
            .iter()
            .rev()
            .map(|l| l.trim())
            .find(|l| !l.is_empty() && !l.chars().all(|c| c == '-'));
        if id.starts_with("unittest.loader._FailedTest") {
            report.cannot_run(&format!(
                "importing {short}: {}",
                last.unwrap_or("the module could not be imported")
            ));
            continue;
        }
        let name = if id.ends_with(short) {
            id.to_owned()
        } else if id.is_empty() {
            short.to_owned()
        } else {
            // Before Python 3.11 the parentheses hold the class.
            format!("{id}.{short}")
        };
        if name.contains(' ') {
            continue;
        }
        let mut test = Failed::named(&name).because(last.map(str::to_owned));
        // The last `File "...", line N` of the traceback is where it failed.
        if let Some((file, number)) = block.iter().rev().find_map(|l| {
            let rest = l.trim_start().strip_prefix("File \"")?;
            let (file, rest) = rest.split_once("\", line ")?;
            let number = rest.split(',').next()?.parse::<u32>().ok()?;
            Some((file, number))
        }) {
            test.file = Some(file.to_owned());
            test.line = Some(number);
        }
        report.add(test);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{from_output, names};

    #[test]
    fn pytest_prefers_its_summary_and_never_reads_captured_output() {
        let out = "tests/test_a.py::test_one FAILED                [ 50%]\n\n=== FAILURES ===\n___ test_one ___\n    def test_one():\n>       assert 1 == 2\nE       assert 1 == 2\n\ntests/test_a.py:3: AssertionError\n--- Captured stdout call ---\nFAILED tests/test_fake.py::test_fake - printed\n=== short test summary info ===\nFAILED tests/test_a.py::test_one - assert 1 == 2\nERROR tests/test_b.py::test_two - ImportError\n=== 1 failed, 1 error in 0.1s ===\n";
        let report = from_output(out);
        assert_eq!(
            names(out),
            ["tests/test_a.py::test_one", "tests/test_b.py::test_two"]
        );
        assert_eq!(report.failed[0].line, Some(3));
        assert_eq!(report.failed[0].message.as_deref(), Some("assert 1 == 2"));
    }

    #[test]
    fn a_pytest_collection_error_is_tests_that_could_not_run() {
        let out = "=== ERRORS ===\n___ ERROR collecting tests/test_a.py ___\nImportError while importing test module '/t/tests/test_a.py'.\nE   ModuleNotFoundError: No module named 'requests'\n=== short test summary info ===\nERROR tests/test_a.py\n!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!\n=== 1 error in 0.1s ===\n";
        let report = from_output(out);
        assert!(report.failed.is_empty());
        assert_eq!(
            report.could_not_run.as_deref(),
            Some("collecting tests/test_a.py: ModuleNotFoundError: No module named 'requests'")
        );
    }

    #[test]
    fn unittest_names_each_test_once_subtests_included() {
        let out = "F\n======================================================================\nFAIL: test_div (test_calc.TestCalc.test_div) (i=1)\n----------------------------------------------------------------------\nTraceback (most recent call last):\n  File \"/t/test_calc.py\", line 9, in test_div\n    self.assertEqual(i, 0)\nAssertionError: 1 != 0\n\n======================================================================\nFAIL: test_div (test_calc.TestCalc.test_div) (i=2)\n----------------------------------------------------------------------\nAssertionError: 2 != 0\n\n======================================================================\nERROR: test_load (test_io.TestIo)\n----------------------------------------------------------------------\nRan 3 tests in 0.001s\n";
        let report = from_output(out);
        assert_eq!(
            names(out),
            ["test_calc.TestCalc.test_div", "test_io.TestIo.test_load"]
        );
        assert_eq!(report.failed[0].line, Some(9));
        assert_eq!(
            report.failed[0].message.as_deref(),
            Some("AssertionError: 1 != 0")
        );
    }

    #[test]
    fn a_unittest_import_error_is_tests_that_could_not_run() {
        let out = "E\n======================================================================\nERROR: test_calc (unittest.loader._FailedTest.test_calc)\n----------------------------------------------------------------------\nImportError: Failed to import test module: test_calc\nTraceback (most recent call last):\nModuleNotFoundError: No module named 'numpy'\n\n----------------------------------------------------------------------\nRan 1 test in 0.000s\n";
        assert_eq!(
            from_output(out).could_not_run.as_deref(),
            Some("importing test_calc: ModuleNotFoundError: No module named 'numpy'")
        );
    }
}
