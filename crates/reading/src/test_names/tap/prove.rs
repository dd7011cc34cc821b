//! prove (Perl's TAP::Harness) running Test::More tests: it reads each file's TAP itself and
//! prints, after all of them, `Test Summary Report` (each failed file, `Failed tests:  2-4,
//! 7`) and `Result: FAIL`. The failed tests' names are not in that summary: they are in
//! Test::More's diagnostics, which a test writes to stderr and prove passes through unread
//! (`#   Failed test 'name'` then `#   at t/x.t line 9.`, indented four more per subtest
//! level, the subtest's own failure after its children's).
//!
//! A test can print those diagnostics too, so they name a file's failures only when the file
//! is in prove's summary and as many of them sit at its top level, placed in that file, as the
//! summary counts failed tests there. A name is `file > test`, a subtest's `file > outer >
//! inner > leaf`.

use std::collections::{HashMap, HashSet};

use super::super::{Failed, Report, joined};
use super::MAX_DEPTH;
use crate::MAX_FINDINGS;

/// Reads prove's output; false when `lines` are not prove's (its `Result:` line is missing).
pub fn read(lines: &[&str], report: &mut Report) -> bool {
    let Some(end) = lines.iter().rposition(|l| {
        l.strip_prefix("Result: ")
            .is_some_and(|r| matches!(r.trim(), "FAIL" | "PASS" | "NOTESTS"))
    }) else {
        return false;
    };
    let Some(start) = lines[..end]
        .iter()
        .rposition(|l| l.trim() == "Test Summary Report")
    else {
        return true;
    };
    let files = summary(&lines[start + 1..end]);
    let mut placed: HashMap<&str, Vec<&Diagnostic>> = HashMap::new();
    let (diagnostics, names) = failures(&lines[..start]);
    for diagnostic in &diagnostics {
        placed
            .entry(diagnostic.file.as_str())
            .or_default()
            .push(diagnostic);
    }
    let mut named = false;
    for file in &files {
        let here = placed
            .get(file.name.as_str())
            .map_or(&[][..], Vec::as_slice);
        if file.failed == 0 || here.len() as u64 != file.failed {
            continue;
        }
        for diagnostic in here {
            for leaf in &diagnostic.leaves {
                if report.failed.len() >= MAX_FINDINGS {
                    return true;
                }
                let path: Vec<&str> = std::iter::once(file.name.as_str())
                    .chain(leaf.path.iter().map(|&n| names[n].as_str()))
                    .collect();
                let mut test =
                    Failed::named(&super::path_name(&path)).because(leaf.message.clone());
                test.file = Some(leaf.file.clone());
                test.line = Some(leaf.line);
                report.add(test);
                named = true;
            }
        }
    }
    // A file that ran no test at all died as it loaded: perl's own message says why.
    if !named && files.iter().any(|f| f.ran == 0) {
        let names: HashSet<&str> = files
            .iter()
            .filter(|f| f.ran == 0)
            .map(|f| f.name.as_str())
            .collect();
        if let Some(cause) = lines[..start].iter().find_map(|l| died(l, &names)) {
            report.cannot_run(&cause);
        }
    }
    true
}

/// A file in prove's summary: `t/x.t (Wstat: 1024 (exited 4) Tests: 7 Failed: 4)` and the
/// count of its `Failed tests:` list.
struct File {
    name: String,
    ran: u64,
    failed: u64,
}

fn summary(lines: &[&str]) -> Vec<File> {
    let mut files: Vec<File> = Vec::new();
    let mut in_list = false;
    for line in lines {
        if let Some((name, rest)) = line
            .split_once(" (Wstat: ")
            .filter(|_| !line.starts_with(' '))
        {
            let ran = rest
                .split_once("Tests: ")
                .and_then(|(_, n)| n.split(' ').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            files.push(File {
                name: name.trim().to_owned(),
                ran,
                failed: 0,
            });
            in_list = false;
            continue;
        }
        let Some(file) = files.last_mut() else {
            continue;
        };
        let trimmed = line.trim();
        let list = match trimmed
            .strip_prefix("Failed tests:")
            .or_else(|| trimmed.strip_prefix("Failed test:"))
        {
            Some(list) => {
                in_list = true;
                list
            }
            // A long list goes on over indented lines of numbers.
            None if in_list
                && line.starts_with(' ')
                && !trimmed.is_empty()
                && trimmed
                    .bytes()
                    .all(|b| b.is_ascii_digit() || b"-, ".contains(&b)) =>
            {
                trimmed
            }
            None => {
                in_list = false;
                continue;
            }
        };
        file.failed = file.failed.saturating_add(count(list));
    }
    files
}

/// How many tests `2-4, 7` lists.
fn count(list: &str) -> u64 {
    list.split(',')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(|range| match range.split_once('-') {
            Some((from, to)) => match (from.trim().parse::<u64>(), to.trim().parse::<u64>()) {
                (Ok(from), Ok(to)) if to >= from => (to - from).saturating_add(1),
                _ => 0,
            },
            None => u64::from(range.parse::<u64>().is_ok()),
        })
        .fold(0, u64::saturating_add)
}

/// A top-level failure diagnostic: the file it was placed in, and the failed leaves it stands
/// for (itself, or its subtest's failed leaves).
struct Diagnostic {
    file: String,
    leaves: Vec<Leaf>,
}

struct Leaf {
    /// The names from the outermost subtest down, as places in the diagnostics' names.
    path: Vec<usize>,
    file: String,
    line: u32,
    message: Option<String>,
}

/// Test::More's failure diagnostics, subtests folded into their parents by indentation, and
/// the names they hold. A subtest's failures count only once its own `# Looks like you failed
/// N tests of M.` (at their indentation) says there were N of them, and only for the failure
/// that follows them. Diagnostics nested deeper than any runner nests are not read.
fn failures(lines: &[&str]) -> (Vec<Diagnostic>, Vec<String>) {
    let mut names: Vec<String> = Vec::new();
    // Diagnostics inside subtests, not yet claimed by their parent: (indentation, confirmed
    // by the subtest's count, leaves).
    let mut open: Vec<(usize, bool, Vec<Leaf>)> = Vec::new();
    let mut top = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if let Some((depth, failed)) = looks_like(line) {
            let unconfirmed = open
                .iter()
                .rev()
                .take_while(|(d, confirmed, _)| *d == depth && !confirmed)
                .count();
            let from = open.len() - unconfirmed;
            if unconfirmed as u64 == failed {
                open[from..].iter_mut().for_each(|entry| entry.1 = true);
            } else {
                open.truncate(from);
            }
            continue;
        }
        let Some((depth, name, file, at)) = diagnostic(line, lines.get(i + 1).copied())
            .filter(|(depth, ..)| *depth <= 4 * MAX_DEPTH)
        else {
            continue;
        };
        names.push(name);
        let name = names.len() - 1;
        let from = open
            .iter()
            .rposition(|(d, _, _)| *d <= depth)
            .map_or(0, |p| p + 1);
        let children: Vec<Leaf> = open
            .drain(from..)
            .filter(|(_, confirmed, _)| *confirmed)
            .flat_map(|(_, _, leaves)| leaves)
            .collect();
        let leaves = if children.is_empty() {
            let message = joined(
                lines[(i + 2).min(lines.len())..]
                    .iter()
                    .take(4)
                    .map_while(|l| l.trim_start().strip_prefix('#'))
                    .take_while(|l| {
                        let l = l.trim_start();
                        !l.starts_with("Failed test") && !l.starts_with("Looks like you failed")
                    }),
                3,
            );
            vec![Leaf {
                path: vec![name],
                file: file.clone(),
                line: at,
                message,
            }]
        } else {
            children
                .into_iter()
                .map(|mut leaf| {
                    leaf.path.insert(0, name);
                    leaf
                })
                .collect()
        };
        if depth == 0 {
            top.push(Diagnostic { file, leaves });
            open.clear();
        } else {
            open.push((depth, false, leaves));
        }
    }
    (top, names)
}

/// `# Looks like you failed N tests of M.`: (indentation, N).
fn looks_like(line: &str) -> Option<(usize, u64)> {
    let depth = line.len() - line.trim_start().len();
    let rest = line.trim_start().strip_prefix("# Looks like you failed ")?;
    let failed = rest.split(' ').next()?.parse().ok()?;
    Some((depth, failed))
}

/// `#   Failed test 'name'` followed by `#   at FILE line N.` (or the unnamed `#   Failed
/// test at FILE line N.`): (indentation, name, file, line).
fn diagnostic(line: &str, next: Option<&str>) -> Option<(usize, String, String, u32)> {
    let depth = line.len() - line.trim_start().len();
    let text = line.trim_start().strip_prefix('#')?.trim();
    let rest = text.strip_prefix("Failed test")?;
    if let Some(place) = rest.strip_prefix(" at ") {
        let (file, at) = place.strip_suffix('.')?.rsplit_once(" line ")?;
        let at: u32 = at.parse().ok()?;
        return Some((depth, format!("line {at}"), file.to_owned(), at));
    }
    let name = rest.trim().strip_prefix('\'')?.strip_suffix('\'')?;
    let next = next?;
    if next.len() - next.trim_start().len() != depth {
        return None;
    }
    let place = next
        .trim_start()
        .strip_prefix('#')?
        .trim()
        .strip_prefix("at ")?;
    let (file, at) = place.strip_suffix('.')?.rsplit_once(" line ")?;
    Some((depth, name.to_owned(), file.to_owned(), at.parse().ok()?))
}

/// perl's message for a file that died before its tests (`Can't locate X.pm in @INC (you
/// may need to install the X module) (@INC contains: …) at t/x.t line 4.`), the search path
/// left out.
fn died(line: &str, files: &HashSet<&str>) -> Option<String> {
    if line.starts_with('#') || line.starts_with(' ') {
        return None;
    }
    let (message, place) = line.rsplit_once(" at ")?;
    let (file, _) = place.strip_suffix('.')?.rsplit_once(" line ")?;
    if !files.contains(file) || message.starts_with("BEGIN failed") {
        return None;
    }
    Some(match message.split_once(" (@INC contains: ") {
        Some((said, _)) => said.to_owned(),
        None => message.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::super::super::{from_output, names};

    const SUMMARY: &str = "Test Summary Report\n-------------------\nt/a.t  (Wstat: 512 (exited 2) Tests: 4 Failed: 2)\n  Failed tests:  2, 4\n  Non-zero exit status: 2\nFiles=1, Tests=4,  0 wallclock secs\nResult: FAIL\n";

    #[test]
    fn prove_names_each_failure_its_summary_counts_by_file_and_subtest_path() {
        let out = format!(
            "\n#   Failed test 'adds'\n#   at t/a.t line 9.\n#          got: '5'\n\n        #   Failed test 'deep'\n        #   at t/a.t line 15.\n        # Looks like you failed 1 test of 2.\n\n    #   Failed test 'inner'\n    #   at t/a.t line 16.\n    # Looks like you failed 1 test of 1.\n\n#   Failed test 'outer'\n#   at t/a.t line 17.\n# Looks like you failed 2 tests of 4.\nt/a.t .. \nDubious, test returned 2 (wstat 512, 0x200)\nFailed 2/4 subtests\n\n{SUMMARY}"
        );
        assert_eq!(
            names(&out),
            ["t/a.t > adds", "t/a.t > outer > inner > deep"]
        );
        let report = from_output(&out);
        assert_eq!(report.failed[0].message.as_deref(), Some("got: '5'"));
        assert_eq!(report.failed[1].line, Some(15));
    }

    #[test]
    fn a_diagnostic_a_test_printed_is_not_a_failure() {
        // Placed in a file prove does not list, or one too many for the file's count.
        let elsewhere = format!(
            "#   Failed test 'fake'\n#   at t/fake.t line 3.\n#   Failed test 'adds'\n#   at t/a.t line 9.\n#   Failed test 'subs'\n#   at t/a.t line 12.\n{SUMMARY}"
        );
        assert_eq!(names(&elsewhere), ["t/a.t > adds", "t/a.t > subs"]);
        let one_too_many = format!(
            "#   Failed test 'fake'\n#   at t/a.t line 3.\n#   Failed test 'adds'\n#   at t/a.t line 9.\n#   Failed test 'subs'\n#   at t/a.t line 12.\n{SUMMARY}"
        );
        assert!(names(&one_too_many).is_empty());
        // A subtest's failures count only as many as its own count says.
        let forged_child = format!(
            "    #   Failed test 'fake'\n    #   at t/a.t line 1.\n#   Failed test 'adds'\n#   at t/a.t line 9.\n#   Failed test 'subs'\n#   at t/a.t line 12.\n{SUMMARY}"
        );
        assert_eq!(names(&forged_child), ["t/a.t > adds", "t/a.t > subs"]);
    }

    #[test]
    fn a_file_that_died_before_its_tests_is_the_cause() {
        let out = "Can't locate X.pm in @INC (you may need to install the X module) (@INC contains: /a /b) at t/a.t line 4.\nBEGIN failed--compilation aborted at t/a.t line 4.\nt/a.t .. \nDubious, test returned 2 (wstat 512, 0x200)\nNo subtests run \n\nTest Summary Report\n-------------------\nt/a.t (Wstat: 512 (exited 2) Tests: 0 Failed: 0)\n  Non-zero exit status: 2\n  Parse errors: No plan found in TAP output\nFiles=1, Tests=0\nResult: FAIL\n";
        let report = from_output(out);
        assert!(report.failed.is_empty());
        assert_eq!(
            report.could_not_run.as_deref(),
            Some("Can't locate X.pm in @INC (you may need to install the X module)")
        );
    }

    #[test]
    fn a_long_failed_list_goes_on_over_lines() {
        assert_eq!(super::count("1-3, 5"), 4);
        assert_eq!(super::count("9-7, x, 2"), 1);
    }
}
