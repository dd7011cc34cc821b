//! Every `validator` command the README and the docs show at a prompt (`$ validator …`,
//! `$ cargo run -q -- …`) is run by the real binary, in a copy of the repository's examples: a
//! flag renamed or a subcommand dropped fails here, not in a newcomer's terminal. A command
//! that waits (a watcher, `wait`) is stopped after a few seconds; what it said by then must not
//! be a usage error.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The pages a newcomer runs commands from.
fn pages() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    for dir in [
        "docs",
        "examples/gates-json",
        "examples/hooks",
        "examples/quickstart",
    ] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        let mut found: Vec<PathBuf> = entries
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
            .collect();
        found.sort();
        pages.extend(found);
    }
    pages
}

/// The commands shown at a prompt in `page`'s code blocks, each as its words: the part before a
/// pipe, a `&`, a `;` or a comment, with `validator` (or `cargo run -q --`) first.
fn commands(page: &Path) -> Vec<(usize, Vec<String>)> {
    let text = std::fs::read_to_string(page).expect("page");
    let mut found = Vec::new();
    let mut in_block = false;
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        let Some(command) = line.trim_start().strip_prefix("$ ") else {
            continue;
        };
        if !in_block {
            continue;
        }
        let command = command
            .split(" | ")
            .next()
            .and_then(|c| c.split("  #").next())
            .and_then(|c| c.split(" &").next())
            .and_then(|c| c.split("; ").next())
            .unwrap_or_default()
            .trim();
        let Ok(mut words) = shell_words::split(command) else {
            continue;
        };
        if words.starts_with(&["cargo".into(), "run".into(), "-q".into(), "--".into()]) {
            words.drain(..4);
        } else if words.first().is_some_and(|w| w == "validator") {
            words.remove(0);
        } else {
            continue;
        }
        found.push((n + 1, words));
    }
    found
}

/// Runs the binary with `words` in `dir`, stopping it after `wait`: its exit code (None when it
/// was still running) and what it said.
fn run(dir: &Path, words: &[String], wait: Duration) -> (Option<i32>, String) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_validator"))
        .args(words)
        .current_dir(dir)
        .env("HOME", dir)
        .env("NO_COLOR", "1")
        .env_remove("VALIDATOR_CONFIG")
        .env("VALIDATOR_STAGING", dir.join("staging"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run validator");
    let until = Instant::now() + wait;
    let code = loop {
        if let Ok(Some(status)) = child.try_wait() {
            break status.code();
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = child.wait_with_output().expect("output");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (code, said)
}

#[test]
fn every_command_the_readme_and_the_docs_show_is_one_validator_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut checked = 0;
    let mut failures = Vec::new();
    for page in pages() {
        for (line, words) in commands(&page) {
            // A fresh copy each time: a command may change what the next one sees.
            let copy = tempfile::tempdir().expect("temp dir");
            crate::common::copy_dir(&root.join("examples"), &copy.path().join("examples"));
            crate::common::copy_dir(&root.join("examples/quickstart"), copy.path());
            let (code, said) = run(copy.path(), &words, Duration::from_secs(4));
            checked += 1;
            let usage_error = said.contains("\nUsage: ")
                || said.contains("unexpected argument")
                || said.contains("unrecognized subcommand")
                || said.contains("invalid value");
            if usage_error || code.is_some_and(|code| code > 2) {
                failures.push(format!(
                    "{}:{line}: validator {}\n  exit {code:?}: {}",
                    page.strip_prefix(root).unwrap_or(&page).display(),
                    words.join(" "),
                    said.lines().take(6).collect::<Vec<_>>().join("\n  ")
                ));
            }
        }
    }
    assert!(
        checked >= 10,
        "only {checked} commands found: the reader is broken"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
