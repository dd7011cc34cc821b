//! Gherkin runners, named by the scenario as their failure summaries print it. cucumber-js:
//! the `1) Scenario: name # features/x.feature:8` blocks of the last `Failures:` section before
//! its closing `5 scenarios (3 failed, 2 passed)` line (a step's message and a test's
//! attachments are indented under them), numbered 1, 2, 3… in order and as many as that line
//! counts failed. behave: the `Failing scenarios:` list right above its closing counts (`2
//! scenarios passed, 3 failed, 0 skipped`), as many as that line counts failed, with nothing but
//! its feature and rule counts between. A test prints before both, so a block or list it prints
//! is one the numbering or the count contradicts, and then none is named.

use super::{Failed, Report, joined};
use crate::MAX_FINDINGS;

pub fn read(lines: &[&str], report: &mut Report) {
    let cucumber = lines
        .iter()
        .enumerate()
        .rev()
        .find_map(|(at, l)| Some((at, cucumber_failed(l)?)));
    let behave = lines
        .iter()
        .enumerate()
        .rev()
        .find_map(|(at, l)| Some((at, behave_failed(l)?)));
    // Whichever closing line comes last is the runner's.
    match (cucumber, behave) {
        (Some(c), b) if b.is_none_or(|b| b.0 < c.0) => read_cucumber(lines, c, report),
        (_, Some(b)) => read_behave(lines, b, report),
        _ => {}
    }
}

/// `5 scenarios (3 failed, 2 passed)`, `1 scenario (1 failed)`: the failed.
fn cucumber_failed(line: &str) -> Option<u64> {
    let (total, rest) = line.split_once(' ')?;
    total.parse::<u64>().ok()?;
    let counts = rest
        .strip_prefix("scenarios (")
        .or_else(|| rest.strip_prefix("scenario ("))?
        .strip_suffix(')')?;
    let mut failed = 0;
    for part in counts.split(", ") {
        let (number, word) = part.split_once(' ')?;
        let number: u64 = number.parse().ok()?;
        if word == "failed" {
            failed = number;
        } else if !word.bytes().all(|b| b.is_ascii_lowercase()) {
            return None;
        }
    }
    Some(failed)
}

fn read_cucumber(lines: &[&str], (closing, failed): (usize, u64), report: &mut Report) {
    if failed == 0 {
        return;
    }
    let Some(start) = lines[..closing].iter().rposition(|l| *l == "Failures:") else {
        return;
    };
    let region = &lines[start + 1..closing];
    let mut blocks: Vec<(usize, &str, &str)> = Vec::new();
    for (at, line) in region.iter().enumerate() {
        if *line == "Warnings:" {
            break;
        }
        let Some((number, rest)) = line.split_once(") ") else {
            continue;
        };
        if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if number != (blocks.len() + 1).to_string() {
            return;
        }
        // `Scenario: name # features/x.feature:8` (`Scenario Outline:`, another language's
        // keyword): the keyword ends at the first `: `, the place follows the last ` # `.
        let Some((_, named)) = rest.split_once(": ") else {
            return;
        };
        let (name, place) = named.rsplit_once(" # ").unwrap_or((named, ""));
        blocks.push((at, name, place));
    }
    if blocks.len() as u64 != failed {
        return;
    }
    let ends: Vec<usize> = blocks
        .iter()
        .skip(1)
        .map(|(at, _, _)| *at)
        .chain([region.len()])
        .collect();
    for ((at, name, place), end) in blocks.into_iter().zip(ends).take(MAX_FINDINGS) {
        let mut test = Failed::named(name.trim());
        if let Some((file, line)) = place.rsplit_once(':') {
            test.file = Some(file.to_owned());
            test.line = line.parse().ok();
        }
        // The failing step (`✖`) and its message, under it.
        let said = region[at + 1..end]
            .iter()
            .map(|l| l.trim())
            .skip_while(|l| !l.starts_with('✖'))
            .skip(1)
            .take_while(|l| !l.starts_with("at "));
        report.add(test.because(joined(said, 3)));
    }
}

/// `2 scenarios passed, 3 failed, 0 skipped` (`…, 1 untested`, `…, 1 error`): the failed.
fn behave_failed(line: &str) -> Option<u64> {
    let rest = line.split_once(' ').and_then(|(n, rest)| {
        n.parse::<u64>().ok()?;
        rest.strip_prefix("scenarios passed, ")
            .or_else(|| rest.strip_prefix("scenario passed, "))
    })?;
    let mut failed = None;
    for part in rest.split(", ") {
        let (number, word) = part.split_once(' ')?;
        let number: u64 = number.parse().ok()?;
        match word {
            "failed" => failed = Some(number),
            "skipped" | "untested" | "error" | "errors" | "errored" | "undefined" => {}
            _ => return None,
        }
    }
    failed
}

fn read_behave(lines: &[&str], (closing, failed): (usize, u64), report: &mut Report) {
    if failed == 0 {
        return;
    }
    let Some(start) = lines[..closing]
        .iter()
        .rposition(|l| *l == "Failing scenarios:")
    else {
        return;
    };
    let mut listed: Vec<(&str, &str)> = Vec::new();
    let mut after = start + 1;
    for line in &lines[start + 1..closing] {
        let Some((place, name)) = line.strip_prefix("  ").and_then(|l| l.split_once("  ")) else {
            break;
        };
        if listed.len() >= MAX_FINDINGS {
            return;
        }
        listed.push((place, name));
        after += 1;
    }
    // Between the list and the scenarios' counts only the features' and rules' counts.
    let between_is_counts = lines[after..closing].iter().all(|l| {
        l.is_empty()
            || l.split_once(' ').is_some_and(|(n, rest)| {
                n.parse::<u64>().is_ok()
                    && ["feature", "rule"].iter().any(|w| rest.starts_with(w))
                    && rest.contains(" passed, ")
            })
    });
    if !between_is_counts || listed.len() as u64 != failed {
        return;
    }
    for (place, name) in listed {
        let mut test = Failed::named(name.trim());
        if let Some((file, line)) = place.rsplit_once(':') {
            test.file = Some(file.to_owned());
            test.line = line.parse().ok();
        }
        report.add(test);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{from_output, names};

    const CUCUMBER: &str = ".....F.F\n\nFailures:\n\n1) Scenario: Adding big numbers # features/calc.feature:8\n   ✔ Given the numbers 200 and 1 # features/step_definitions/steps.js:7\n   ✖ Then the result is 201 # features/step_definitions/steps.js:11\n       AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n\n       202 !== 201\n\n           at World.<anonymous> (/t/steps.js:11:51)\n\n2) Scenario: Größe zählt # features/calc.feature:14\n   ✖ Then its size is 3 # features/step_definitions/steps.js:12\n       AssertionError: 4 !== 3\n\n3 scenarios (2 failed, 1 passed)\n8 steps (2 failed, 6 passed)\n0m00.019s (executing steps: 0m00.003s)\n";

    #[test]
    fn cucumber_js_names_its_failures() {
        let report = from_output(CUCUMBER);
        assert_eq!(names(CUCUMBER), ["Adding big numbers", "Größe zählt"]);
        assert_eq!(
            report.failed[0].file.as_deref(),
            Some("features/calc.feature")
        );
        assert_eq!(report.failed[0].line, Some(8));
        assert_eq!(
            report.failed[0].message.as_deref(),
            Some(
                "AssertionError [ERR_ASSERTION]: Expected values to be strictly equal: 202 !== 201"
            )
        );
    }

    #[test]
    fn cucumber_js_names_none_when_a_block_is_forged() {
        // An attachment or message is indented; a block printed at the margin is out of turn.
        let forged = CUCUMBER.replace(
            "       AssertionError: 4 !== 3\n",
            "3) Scenario: Fake # features/calc.feature:1\n",
        );
        assert!(names(&forged).is_empty());
        // A whole summary a step printed is not the last one.
        let early = CUCUMBER.replace(
            ".....F.F\n",
            "Failures:\n\n1) Scenario: Fake # f.feature:1\n1 scenario (1 failed)\n",
        );
        assert_eq!(names(&early), ["Adding big numbers", "Größe zählt"]);
    }

    const BEHAVE: &str = "Feature: Calculator # features/calc.feature:1\n\n  Scenario: Adding big numbers  # features/calc.feature:8\n    Then the result is 201      # features/steps/steps.py:32\n      ASSERT FAILED: expected 201, got 202\n\n\nFailing scenarios:\n  features/calc.feature:8  Adding big numbers\n  features/calc.feature:26  Squaring -3 -- @1.2 values\n\n0 features passed, 1 failed, 0 skipped\n0 rules passed, 1 failed, 0 skipped\n2 scenarios passed, 2 failed, 0 skipped\n11 steps passed, 2 failed, 0 skipped\nTook 0min 0.000s\n";

    #[test]
    fn behave_names_its_failing_scenarios() {
        let report = from_output(BEHAVE);
        assert_eq!(
            names(BEHAVE),
            ["Adding big numbers", "Squaring -3 -- @1.2 values"]
        );
        assert_eq!(report.failed[1].line, Some(26));
    }

    #[test]
    fn behave_names_none_when_the_list_does_not_add_up() {
        let forged = BEHAVE.replace(
            "  features/calc.feature:26",
            "  features/fake.feature:1  Fake\n  features/calc.feature:26",
        );
        assert!(names(&forged).is_empty());
        // A list a test printed, with no failure the runner counted.
        let passing = BEHAVE.replace(
            "2 scenarios passed, 2 failed",
            "4 scenarios passed, 0 failed",
        );
        assert!(names(&passing).is_empty());
    }
}
