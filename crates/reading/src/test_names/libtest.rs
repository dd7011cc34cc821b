//! Rust's runners: `cargo test` (libtest, normal and `--quiet`) and `cargo nextest`. libtest's
//! closing `failures:` list names every failed test; its `test x ... FAILED` lines are read
//! too, but never inside a test's captured `---- x stdout ----` section, which is where a
//! panic's message and place are taken from. A build that fails before any test runs is
//! "could not run", with the compiler's first error.

use super::{Failed, Report, joined};
use crate::MAX_FINDINGS;

pub fn read(lines: &[&str], report: &mut Report) {
    // Whichever runner speaks first is the runner: cargo test's `running N tests` comes before
    // any test's output, as nextest's `Starting N tests across` does; the other's lines after
    // it are something a test printed.
    let first = lines.iter().find_map(|l| {
        let t = l.trim_start();
        if is_running(l) || l.starts_with("test result: ") {
            Some(false)
        } else if t.starts_with("Starting ") && t.contains(" tests across ")
            || t.starts_with("Summary [")
        {
            Some(true)
        } else {
            None
        }
    });
    let (nextest, libtest) = (first == Some(true), first == Some(false));
    if nextest {
        read_nextest(lines, report);
    } else if libtest {
        for binary in lines.split(|l| starts_binary(l)) {
            for run in runs(binary) {
                read_libtest(run, report);
            }
        }
    }
    if !libtest && !nextest {
        compile_error(lines, report);
    }
}

fn is_running(line: &str) -> bool {
    line.strip_prefix("running ")
        .and_then(|rest| rest.split_whitespace().next())
        .is_some_and(|n| n.parse::<u64>().is_ok())
        && (line.ends_with(" tests") || line.ends_with(" test"))
}

/// cargo's line before each test binary's run: `     Running unittests src/lib.rs (...)`,
/// `   Doc-tests name`.
fn starts_binary(line: &str) -> bool {
    let trimmed = line.trim_start();
    trimmed.starts_with("Running ") && trimmed.ends_with(')') || trimmed.starts_with("Doc-tests ")
}

/// The test binaries' runs in `lines`: `cargo test -q` prints no `Running` line before each
/// binary, so one binary's run ends at its `test result:` line when the next line but blank
/// ones (and cargo's `error: test failed, to rerun pass …`) is another's `running N tests`.
fn runs<'a, 'b>(lines: &'b [&'a str]) -> Vec<&'b [&'a str]> {
    let mut runs = Vec::new();
    let (mut start, mut after_result) = (0, false);
    for (at, line) in lines.iter().enumerate() {
        if is_running(line) && after_result {
            runs.push(&lines[start..at]);
            start = at;
        }
        if !line.is_empty() && !line.starts_with("error: test failed, to rerun pass ") {
            after_result = line.starts_with("test result: ");
        }
    }
    runs.push(&lines[start..]);
    runs
}

/// One test binary's output. Its closing `test result:` line is its last; a test's own output
/// (with `--nocapture`, right in the stream) comes before it, so the names are the last
/// `failures:` list before that line, and none when it says `ok`.
fn read_libtest(lines: &[&str], report: &mut Report) {
    let Some(closing) = lines.iter().rposition(|l| l.starts_with("test result: ")) else {
        read_binary(lines, report);
        return;
    };
    if lines[closing].starts_with("test result: ok") {
        return;
    }
    read_binary(&lines[..closing], report);
}

fn read_binary(lines: &[&str], report: &mut Report) {
    // The closing `failures:` lists name every failed test; `test x ... FAILED` lines are the
    // fallback when the lists were cut off; captured sections give the panics.
    let mut listed: Vec<&str> = Vec::new();
    let mut reported: Vec<&str> = Vec::new();
    let mut panics: Vec<Failed> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(name) = line
            .strip_prefix("---- ")
            .and_then(|rest| rest.strip_suffix(" stdout ----"))
        {
            let end = lines[i + 1..]
                .iter()
                .position(|l| ends_capture(l))
                .map_or(lines.len(), |p| i + 1 + p);
            let mut test = Failed::named(name.trim());
            panic_in(&lines[i + 1..end], &mut test);
            if panics.len() < MAX_FINDINGS {
                panics.push(test);
            }
            i = end;
            continue;
        }
        if line == "failures:" {
            let mut j = i + 1;
            while j < lines.len() && lines[j].is_empty() {
                j += 1;
            }
            if j < lines.len() && lines[j].starts_with("    ") {
                // A later list replaces an earlier one: the last is the runner's own.
                listed.clear();
            }
            while j < lines.len() && lines[j].starts_with("    ") {
                if listed.len() < MAX_FINDINGS {
                    listed.push(lines[j].trim());
                }
                j += 1;
            }
            i = j.max(i + 1);
            continue;
        }
        // `test x ... FAILED`, and `x --- FAILED` under `--quiet`.
        if let Some(name) = line
            .strip_prefix("test ")
            .and_then(|rest| rest.strip_suffix(" ... FAILED"))
            .or_else(|| {
                line.strip_suffix(" --- FAILED")
                    .filter(|n| !n.contains(' '))
            })
        {
            let name = name.trim();
            if reported.len() < MAX_FINDINGS {
                reported.push(name.strip_suffix(" - should panic").unwrap_or(name).trim());
            }
        }
        i += 1;
    }
    let names = if listed.is_empty() { reported } else { listed };
    for name in names {
        let test = panics
            .iter()
            .find(|p| p.name == name)
            .cloned()
            .unwrap_or_else(|| Failed::named(name));
        report.add(test);
    }
}

/// Where a libtest capture section ends: the next section, the lists, the closing line.
fn ends_capture(line: &str) -> bool {
    (line.starts_with("---- ") && line.ends_with(" ----"))
        || line == "failures:"
        || line.starts_with("test result: ")
        || is_running(line)
}

/// A panic in a test's captured output: `thread 'x' panicked at src/lib.rs:5:9:` and the
/// message under it (or, before Rust 1.73, `panicked at 'msg', src/lib.rs:5:9`).
fn panic_in(section: &[&str], test: &mut Failed) {
    // `thread 'x' panicked at ...`, and since Rust 1.91 `thread 'x' (12345) panicked at ...`.
    let Some(at) = section
        .iter()
        .position(|l| l.trim_start().starts_with("thread '") && l.contains(" panicked at "))
    else {
        return;
    };
    let line = section[at];
    let rest = line
        .split_once(" panicked at ")
        .map(|(_, rest)| rest)
        .unwrap_or_default();
    let (location, inline) = if let Some(location) = rest.strip_suffix(':') {
        (location, None)
    } else if let Some((message, location)) = rest.rsplit_once("', ") {
        (location, Some(message.trim_start_matches('\'').to_owned()))
    } else {
        (rest, None)
    };
    let mut parts = location.rsplitn(3, ':');
    let (_, line_no, file) = (parts.next(), parts.next(), parts.next());
    if let (Some(file), Some(Ok(line_no))) = (file, line_no.map(str::parse::<u32>)) {
        test.file = Some(file.to_owned());
        test.line = Some(line_no);
    }
    let message = inline.or_else(|| {
        joined(
            section[at + 1..]
                .iter()
                .copied()
                .map(|l| l.trim_start())
                .take_while(|l| !l.starts_with("note: ") && !l.starts_with("stack backtrace:")),
            6,
        )
    });
    test.message = message.map(|m| super::clip(&m));
}

fn read_nextest(lines: &[&str], report: &mut Report) {
    // The closing summary lists every failure again; before it, a test's captured output
    // could hold anything, so the summary is preferred when there is one.
    // The last summary is nextest's; a test may print one before it.
    let start = lines
        .iter()
        .rposition(|l| l.trim_start().starts_with("Summary ["))
        .unwrap_or(0);
    let mut named = Vec::new();
    for line in &lines[start..] {
        if let Some(name) = nextest_status(line) {
            if named.len() < MAX_FINDINGS {
                named.push(name);
            }
        }
    }
    for name in named {
        let mut test = Failed::named(name);
        // The panic, from the test's output nextest printed under its first result line
        // (indented, or under a `--- STDERR:` heading in older versions).
        if let Some(at) = lines[..start]
            .iter()
            .position(|l| nextest_status(l) == Some(name))
        {
            let end = lines[at + 1..start]
                .iter()
                .position(|l| is_status_line(l))
                .map_or(start, |p| at + 1 + p);
            panic_in(&lines[at + 1..end], &mut test);
        }
        report.add(test);
    }
}

/// Any of nextest's own lines: `PASS [   0.004s] ...`, `START [ ] ...`, `FAIL [...`.
fn is_status_line(line: &str) -> bool {
    let trimmed = line.trim_start();
    trimmed.split_once(" [").is_some_and(|(word, _)| {
        !word.is_empty() && word.chars().all(|c| c.is_ascii_uppercase() || c == '-')
    })
}

/// `FAIL [   0.004s] (1/3) crate tests::x` (and TIMEOUT, SIGSEGV, ...): the test's path.
fn nextest_status(line: &str) -> Option<&str> {
    let trimmed = line.trim_start();
    let rest = [
        "FAIL [",
        "TIMEOUT [",
        "SIGSEGV [",
        "SIGABRT [",
        "SIGKILL [",
        "LEAK-FAIL [",
    ]
    .iter()
    .find_map(|status| trimmed.strip_prefix(status))?;
    let after = rest.split_once(']')?.1.trim();
    let after = match after.strip_prefix('(') {
        Some(counted) => counted.split_once(')')?.1.trim(),
        None => after,
    };
    let name = after.rsplit(' ').next()?;
    (!name.is_empty() && after.contains(' ')).then_some(name)
}

/// A build that failed before any test ran: rustc's first error, with its place.
fn compile_error(lines: &[&str], report: &mut Report) {
    if !lines
        .iter()
        .any(|l| l.starts_with("error: could not compile"))
    {
        return;
    }
    let Some(at) = lines.iter().position(|l| {
        l.starts_with("error[")
            || l.starts_with("error: ") && !l.starts_with("error: could not compile")
    }) else {
        return;
    };
    let place = lines
        .get(at + 1)
        .and_then(|l| l.trim_start().strip_prefix("--> "))
        .map(|place| format!(" at {}", place.trim()))
        .unwrap_or_default();
    report.cannot_run(&format!("the build failed: {}{place}", lines[at]));
}

#[cfg(test)]
mod tests {
    use super::super::{from_output, names};

    #[test]
    fn cargo_test_names_from_the_lines_and_the_list() {
        let out = "running 3 tests\ntest a::ok ... ok\ntest a::broken ... FAILED\ntest b::also - should panic ... FAILED\n\nfailures:\n\n---- a::broken stdout ----\ntest fake::one ... FAILED\nthread 'a::broken' panicked at src/a.rs:9:5:\nassertion `left == right` failed\n  left: 1\n right: 2\nnote: run with `RUST_BACKTRACE=1`\n\n\nfailures:\n    a::broken\n    b::also\n\ntest result: FAILED. 1 passed; 2 failed\n";
        let report = from_output(out);
        assert_eq!(names(out), ["a::broken", "b::also"]);
        let first = &report.failed[0];
        assert_eq!(first.file.as_deref(), Some("src/a.rs"));
        assert_eq!(first.line, Some(9));
        assert_eq!(
            first.message.as_deref(),
            Some("assertion `left == right` failed left: 1 right: 2")
        );
    }

    #[test]
    fn quiet_cargo_test_names_from_its_list() {
        let out = "running 2 tests\n.F\nfailures:\n\n---- t::x stdout ----\nthread 't::x' panicked at src/lib.rs:3:9:\nboom\n\n\nfailures:\n    t::x\n\ntest result: FAILED. 1 passed; 1 failed;\n";
        assert_eq!(names(out), ["t::x"]);
    }

    #[test]
    fn quiet_cargo_test_names_every_binarys_list() {
        // No `Running` lines under `-q`: the library's failures, then an integration binary's,
        // then doc tests that passed.
        let out = "\nrunning 2 tests\n.F\nfailures:\n\n---- t::x stdout ----\nboom\n\nfailures:\n    t::x\n\ntest result: FAILED. 1 passed; 1 failed;\n\nerror: test failed, to rerun pass `--lib`\n\nrunning 1 test\nintegration_fails --- FAILED\nfailures:\n\nfailures:\n    integration_fails\n\ntest result: FAILED. 0 passed; 1 failed;\n\n\nrunning 0 tests\n\ntest result: ok. 0 passed; 0 failed;\n\n";
        assert_eq!(names(out), ["t::x", "integration_fails"]);
        let cut = "running 2 tests\n.F 1/2\nt::y --- FAILED\n";
        assert_eq!(names(cut), ["t::y"]);
    }

    #[test]
    fn nextest_prefers_its_summary() {
        let out = "    Starting 3 tests across 1 binary\n        FAIL [   0.004s] (1/3) mycrate tests::broken\n--- STDOUT:              mycrate tests::broken ---\n        FAIL [   0.001s] mycrate fake::printed\n     Summary [   0.010s] 3 tests run: 2 passed, 1 failed\n        FAIL [   0.004s] (1/3) mycrate tests::broken\n";
        assert_eq!(names(out), ["tests::broken"]);
    }

    #[test]
    fn a_compile_error_is_tests_that_could_not_run() {
        let out = "   Compiling x v0.1.0\nerror[E0425]: cannot find value `y` in this scope\n --> src/lib.rs:3:5\n  |\nerror: could not compile `x` (lib test) due to 1 previous error\n";
        let report = from_output(out);
        assert!(report.failed.is_empty());
        assert_eq!(
            report.could_not_run.as_deref(),
            Some(
                "the build failed: error[E0425]: cannot find value `y` in this scope at src/lib.rs:3:5"
            )
        );
    }
}
