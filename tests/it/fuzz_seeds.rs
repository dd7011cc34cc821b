//! The fuzz targets' committed seeds (`fuzz/seeds/<target>/`), replayed through the very
//! functions the fuzzers call, so `cargo test` keeps every input a fuzzer once broke (and the
//! hand-written seeds) passing without building libFuzzer. See `fuzz/README.md`.

#[path = "../../fuzz/src/targets.rs"]
mod targets;

use std::path::Path;

fn replay(target: &str, run: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds")
        .join(target);
    let mut seeds: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|err| panic!("{}: {err}", dir.display()))
        .map(|entry| entry.expect("a seed").path())
        .collect();
    seeds.sort();
    assert!(!seeds.is_empty(), "no seeds in {}", dir.display());
    for seed in seeds {
        let data = std::fs::read(&seed).expect("read a seed");
        // A panic names the seed that caused it.
        let outcome = std::panic::catch_unwind(|| run(&data));
        assert!(outcome.is_ok(), "{target}: seed {} failed", seed.display());
    }
}

#[test]
fn rules_file_seeds() {
    replay("rules_file", targets::rules_file);
}

#[test]
fn signal_body_seeds() {
    replay("signal_body", targets::signal_body);
}

#[test]
fn findings_seeds() {
    replay("findings", targets::findings);
}

#[test]
fn test_names_seeds() {
    replay("test_names", targets::test_names);
}

#[test]
fn junit_seeds() {
    replay("junit", targets::junit);
}

#[test]
fn review_answer_seeds() {
    replay("review_answer", targets::review_answer);
}

#[test]
fn hook_input_seeds() {
    replay("hook_input", targets::hook_input);
}

#[test]
fn git_listing_seeds() {
    replay("git_listing", targets::git_listing);
}

#[test]
fn shell_line_seeds() {
    replay("shell_line", targets::shell_line);
}
