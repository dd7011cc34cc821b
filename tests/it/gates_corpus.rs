//! `init --from` over the corpus of gates.json shapes (`tests/corpus/gates`): each file is
//! converted, the result passes `rules check`, and its gates run on a small project, once with
//! a healthy change (PASS) and once with a broken one (FAIL). `VALIDATOR_GATES_CORPUS_DIR`
//! points the conversion at another directory of gates.json files (the real ones the corpus
//! reproduces) and prints what became of each.

use std::path::{Path, PathBuf};

use crate::common::{self, copy_dir, git, isolate_git};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/gates")
}

/// The files that are not gate files validator can convert, and why not.
const NOT_CONVERTED: [(&str, &str); 4] = [
    ("registry.json", "nothing in it became a gate"),
    (
        "shell-lines.json",
        "`backend`: it holds commands, but its name does not say they are checks to run",
    ),
    ("all-unconfigured.json", "nothing in it became a gate"),
    ("invalid.json", "it is not JSON"),
];

fn corpus_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("corpus dir")
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    files
}

/// `init --from`: the exit code, stdout and stderr.
fn convert(from: &Path, to: &Path) -> (Option<i32>, String, String) {
    let output = common::validator()
        .arg("-c")
        .arg(to)
        .args(["init", "--from"])
        .arg(from)
        .output()
        .expect("run validator");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The fixture project as a git repository, and a worker's change to it.
fn project(root: &Path, broken: bool) -> PathBuf {
    let task = root.join("task");
    copy_dir(&corpus_dir().join("fixture"), &task);
    git(&task, &["init", "-q"]);
    git(&task, &["add", "-A"]);
    git(&task, &["commit", "-q", "-m", "base"]);
    if broken {
        // Wrong code, no test change, a protected file edited, a banned call.
        std::fs::write(task.join("calc.py"), "def add(a, b):\n    return a - b\n").expect("write");
        std::fs::write(task.join("docs/adr/0001-record.md"), "# rewritten\n").expect("write");
        std::fs::write(
            task.join("src/engine/sim.js"),
            "export const roll = () => Math.random();\n",
        )
        .expect("write");
    } else {
        std::fs::write(
            task.join("calc.py"),
            "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n",
        )
        .expect("write");
        std::fs::write(
            task.join("tests/test_calc.py"),
            "import unittest\n\nfrom calc import add, mul\n\n\nclass CalcTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n",
        )
        .expect("write");
    }
    task
}

fn judged(rules: &Path, task: &Path, signal: &Path) -> (i32, serde_json::Value) {
    let mut cmd = common::validator();
    cmd.arg("check")
        .arg("-c")
        .arg(rules)
        .arg("--task-dir")
        .arg(task)
        .arg("--signal")
        .arg(signal)
        .args(["--format", "json"]);
    isolate_git(&mut cmd);
    common::json_verdict(cmd)
}

#[test]
fn every_shape_converts_to_rules_that_load_and_judge_the_fixture() {
    let files = corpus_files(&corpus_dir());
    assert!(files.len() >= 18, "{files:?}");
    let mut converted = 0;
    for from in &files {
        let name = from
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let dir = tempfile::tempdir().expect("temp dir");
        let rules = dir.path().join("validator.yaml");
        let (code, stdout, stderr) = convert(from, &rules);
        if let Some((_, why)) = NOT_CONVERTED.iter().find(|(file, _)| *file == name) {
            assert_eq!(code, Some(2), "{name}: {stdout}{stderr}");
            assert!(stderr.contains(why), "{name}: {stderr}");
            assert!(!rules.exists(), "{name}: written anyway");
            continue;
        }
        assert_eq!(code, Some(0), "{name}: {stderr}");
        let (code, stderr) = common::rules_check(&rules);
        assert_eq!(code, Some(0), "{name}: {stderr}");
        let text = std::fs::read_to_string(&rules).expect("converted");

        let signal = dir.path().join("done");
        std::fs::write(&signal, "STATUS: OK\n").expect("signal");
        for broken in [false, true] {
            let root = tempfile::tempdir().expect("temp dir");
            let task = project(root.path(), broken);
            let (code, verdict) = judged(&rules, &task, &signal);
            let expected = if broken { 1 } else { 0 };
            assert_eq!(
                code,
                expected,
                "{name} ({}): {verdict:#}\n{text}",
                if broken { "broken" } else { "healthy" }
            );
            let errors: Vec<&serde_json::Value> = verdict["gates"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|gate| gate["status"] == "ERROR")
                .collect();
            assert!(errors.is_empty(), "{name}: {errors:#?}\n{text}");
        }
        converted += 1;
    }
    assert_eq!(converted, files.len() - NOT_CONVERTED.len());
}

#[test]
fn what_each_shape_could_not_carry_is_said_at_the_top() {
    for (file, expected) in [
        (
            "commit-policy.json",
            "`forbidden_bash`: how the other runner matched its entries",
        ),
        (
            "commit-policy.json",
            "the entry `git push --force(?!-with-lease)` reads as a regular expression",
        ),
        ("commit-policy.json", "look-around"),
        ("commit-policy.json", "not its output against `OK`"),
        ("commit-policy-ids.json", "`exclude_when_paths_match`"),
        ("command-ids-argv.json", "`modes`"),
        ("command-objects.json", "`fast` [\"compile\"]: a subset"),
        (
            "protected-paths.json",
            "`writeRights`: write permissions per role",
        ),
        ("deny-ask.json", "`askPaths`"),
        (
            "hook-runner.json",
            "hooks.SlashCommandEnd (test) is neither a stop nor the prompt",
        ),
        (
            "hook-runner.json",
            "only for the agent types [\"code-agent\"]",
        ),
        ("jsonc.json", "`expect`, `reject` not carried over"),
    ] {
        let dir = tempfile::tempdir().expect("temp dir");
        let rules = dir.path().join("validator.yaml");
        let (code, stdout, stderr) = convert(&corpus_dir().join(file), &rules);
        assert_eq!(code, Some(0), "{file}: {stderr}");
        assert!(
            stdout.contains(expected),
            "{file}: `{expected}` not in {stdout}"
        );
        let text = std::fs::read_to_string(&rules).expect("converted");
        assert!(
            text.contains(expected),
            "{file}: `{expected}` not in {text}"
        );
    }
}

/// `VALIDATOR_GATES_CORPUS_DIR=DIR cargo test --test it gates_corpus -- --nocapture`: every
/// file converts or says why not, and what converts loads; no file crashes validator.
#[test]
fn a_directory_of_real_gates_json_files_converts_or_says_why() {
    let Some(dir) = std::env::var_os("VALIDATOR_GATES_CORPUS_DIR") else {
        return;
    };
    let (mut loaded, mut refused) = (0, 0);
    for from in corpus_files(Path::new(&dir)) {
        let out = tempfile::tempdir().expect("temp dir");
        let rules = out.path().join("validator.yaml");
        let (code, _, stderr) = convert(&from, &rules);
        let name = from.display();
        match code {
            Some(0) => {
                let (code, stderr) = common::rules_check(&rules);
                assert_eq!(code, Some(0), "{name}: {stderr}");
                loaded += 1;
            }
            Some(2) => {
                assert!(stderr.contains("cannot be converted"), "{name}: {stderr}");
                println!(
                    "not converted: {name}: {}",
                    stderr.lines().next().unwrap_or_default()
                );
                refused += 1;
            }
            other => panic!("{name}: exit {other:?}: {stderr}"),
        }
    }
    println!("converted and loaded: {loaded}; not converted, with the reason: {refused}");
}
