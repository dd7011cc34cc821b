//! Every `validator` command the README and the docs show at a prompt (`$ validator …`,
//! `$ cargo run -q -- …`) is run by the real binary, in a copy of the repository's examples: a
//! flag renamed or a subcommand dropped fails here, not in a newcomer's terminal. A command
//! that waits (a watcher, `wait`) is stopped after a few seconds; what it said by then must not
//! be a usage error. The pages themselves hold together too: every relative link resolves,
//! docs/SUMMARY.md orders every page under docs/, and the README's test command is CI's.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The Markdown files under `dir`, at any depth, in a stable order.
fn markdown_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for path in entries.flatten().map(|entry| entry.path()) {
        if path.is_dir() {
            found.extend(markdown_under(&path));
        } else if path.extension().is_some_and(|ext| ext == "md") {
            found.push(path);
        }
    }
    found.sort();
    found
}

/// The README and every page of the guide and the reference, wherever under docs/ it lives.
fn readme_and_docs() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md")];
    pages.extend(markdown_under(&root().join("docs")));
    pages
}

/// The pages a newcomer runs commands from.
fn pages() -> Vec<PathBuf> {
    let mut pages = readme_and_docs();
    for dir in [
        "examples/gates-json",
        "examples/hooks",
        "examples/quickstart",
    ] {
        let Ok(entries) = std::fs::read_dir(root().join(dir)) else {
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
    let root = root();
    let mut checked = 0;
    let mut in_readme = 0;
    let mut in_docs = 0;
    let mut failures = Vec::new();
    for page in pages() {
        for (line, words) in commands(&page) {
            // A fresh copy each time: a command may change what the next one sees.
            let copy = tempfile::tempdir().expect("temp dir");
            crate::common::copy_dir(&root.join("examples"), &copy.path().join("examples"));
            crate::common::copy_dir(&root.join("examples/quickstart"), copy.path());
            let (code, said) = run(copy.path(), &words, Duration::from_secs(4));
            checked += 1;
            if page == root.join("README.md") {
                in_readme += 1;
            } else if page.starts_with(root.join("docs")) {
                in_docs += 1;
            }
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
    // Floors a little under what the pages hold, so a reader that stops finding commands (a
    // page moved out of its reach, a prompt written another way) fails rather than passes.
    assert!(
        in_readme >= 8,
        "only {in_readme} commands found in README.md: the reader is broken"
    );
    assert!(
        in_docs >= 15,
        "only {in_docs} commands found under docs/: the reader is broken"
    );
    assert!(
        checked >= 25,
        "only {checked} commands found: the reader is broken"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The README's first run, the bundled example, is among the commands run above: the one
/// command a newcomer types first is never left to rot.
#[test]
fn the_readme_runs_the_bundled_example() {
    let example = commands(&root().join("README.md"))
        .into_iter()
        .any(|(_, words)| {
            words.starts_with(&[
                "check".into(),
                "-c".into(),
                "examples/quickstart/validator.yaml".into(),
            ])
        });
    assert!(
        example,
        "README.md no longer shows the bundled example's check"
    );
}

/// The test command the README gives a newcomer is the one CI runs: `.ci/run` runs it as
/// written, so a README that says another one is a README that lies about what CI proves.
#[test]
fn the_readme_test_command_is_the_one_ci_runs() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let shown: Vec<&str> = code_lines(&readme)
        .into_iter()
        .filter_map(|line| line.trim().strip_prefix("$ "))
        .filter(|command| command.starts_with("cargo test"))
        .collect();
    assert_eq!(shown.len(), 1, "README.md's test commands: {shown:?}");
    let ci = std::fs::read_to_string(root().join(".ci/run")).expect(".ci/run");
    assert!(
        ci.lines().any(|line| line.trim() == shown[0]),
        ".ci/run does not run the README's `{}`",
        shown[0]
    );
}

/// The lines of `text` inside fenced code blocks.
fn code_lines(text: &str) -> Vec<&str> {
    let mut in_block = false;
    let mut found = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
        } else if in_block {
            found.push(line);
        }
    }
    found
}

/// The lines of `text` outside fenced code blocks, numbered from 1.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut in_block = false;
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
        } else if !in_block {
            found.push((n + 1, line));
        }
    }
    found
}

/// `line` with its inline code spans cut out: a span may show Markdown without being a link.
fn without_code_spans(line: &str) -> String {
    line.split('`').step_by(2).collect()
}

/// The targets of the Markdown links on `line`: what stands between `](` and `)`. A link's
/// text may span lines; its target never does.
fn link_targets(line: &str) -> Vec<&str> {
    line.match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &line[at + 2..];
            rest.find(')').map(|end| &rest[..end])
        })
        .filter(|target| !target.is_empty() && !target.contains(char::is_whitespace))
        .collect()
}

/// The anchors GitHub gives the headings of a Markdown page: lowercased, punctuation dropped,
/// spaces made hyphens, a repeated one numbered.
fn anchors(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut seen = std::collections::HashMap::<String, usize>::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        let Some(title) = line.get(hashes..).and_then(|rest| rest.strip_prefix(' ')) else {
            continue;
        };
        if !(1..=6).contains(&hashes) {
            continue;
        }
        let slug: String = title
            .trim()
            .to_lowercase()
            .chars()
            .filter(|&c| c.is_alphanumeric() || c == '-' || c == '_' || c == ' ')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let repeats = seen.entry(slug.clone()).or_default();
        found.push(if *repeats == 0 {
            slug
        } else {
            format!("{slug}-{repeats}")
        });
        *repeats += 1;
    }
    found
}

/// Every relative link in the README and the docs leads somewhere: a file or directory of the
/// repository, and, into a Markdown page, one of its headings. Pages move; a reader following
/// a link must not land on nothing.
#[test]
fn every_relative_link_in_the_readme_and_the_docs_resolves() {
    let mut links = 0;
    let mut broken = Vec::new();
    for page in readme_and_docs() {
        let text = std::fs::read_to_string(&page).expect("page");
        for (line, prose) in prose_lines(&text) {
            let prose = without_code_spans(prose);
            for target in link_targets(&prose) {
                let scheme = target.split_once(':').is_some_and(|(scheme, _)| {
                    !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_lowercase())
                });
                if scheme {
                    continue;
                }
                links += 1;
                let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
                let file = if path.is_empty() {
                    page.clone()
                } else {
                    page.parent().expect("a page's directory").join(path)
                };
                let name = page.strip_prefix(root()).unwrap_or(&page).display();
                if !file.exists() {
                    broken.push(format!("{name}:{line}: {target}: no such file"));
                } else if !anchor.is_empty() && file.extension().is_some_and(|ext| ext == "md") {
                    let into = std::fs::read_to_string(&file).expect("linked page");
                    if !anchors(&into).iter().any(|known| known == anchor) {
                        broken.push(format!("{name}:{line}: {target}: no such heading"));
                    }
                }
            }
        }
    }
    assert!(
        links >= 150,
        "only {links} links found: the reader is broken"
    );
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// The docs pages `text` links to by a relative name inside docs/, in the order it gives them.
fn docs_pages_linked(text: &str) -> Vec<String> {
    prose_lines(text)
        .iter()
        .flat_map(|(_, line)| {
            link_targets(line)
                .into_iter()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter(|target| {
            target.ends_with(".md") && !target.starts_with("../") && !target.contains('#')
        })
        .collect()
}

/// docs/SUMMARY.md is the order of the docs (mdBook's layout): a Guide part, then a Reference
/// part, every page under docs/ listed exactly once, so no page is left where no reader finds
/// it; docs/README.md, the index a reader lands on, names the same pages.
#[test]
fn the_summary_orders_every_docs_page_once_and_the_index_agrees() {
    let docs = root().join("docs");
    let summary = std::fs::read_to_string(docs.join("SUMMARY.md")).expect("docs/SUMMARY.md");
    let parts: Vec<&str> = summary
        .lines()
        .filter_map(|line| line.strip_prefix("# "))
        .collect();
    assert_eq!(
        parts,
        ["Summary", "Guide", "Reference"],
        "SUMMARY.md's parts"
    );
    let listed = docs_pages_linked(&summary);
    let mut unique = listed.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        listed.len(),
        "a page listed twice: {listed:?}"
    );
    let mut on_disk: Vec<String> = markdown_under(&docs)
        .iter()
        .map(|path| {
            path.strip_prefix(&docs)
                .expect("under docs")
                .display()
                .to_string()
        })
        .filter(|page| page != "SUMMARY.md")
        .collect();
    on_disk.sort();
    assert_eq!(unique, on_disk, "SUMMARY.md against the pages under docs/");

    let index = std::fs::read_to_string(docs.join("README.md")).expect("docs/README.md");
    let mut indexed = docs_pages_linked(&index);
    indexed.retain(|page| page != "SUMMARY.md");
    indexed.sort();
    indexed.dedup();
    let mut expected = on_disk;
    expected.retain(|page| page != "README.md");
    assert_eq!(indexed, expected, "docs/README.md against SUMMARY.md");
}
