//! A speculative outcome stands at done only on what its gate could have read: every file of
//! the task (tool caches and `speculate.ignore` paths included), every directory's times, and
//! the pipeline's order (a gate that cannot be judged before done, or that refuses the files,
//! stops the speculative run there). Each test drives a real watcher over one task `t`.

use crate::speculate::Sidecar;

/// A rules file speculating after 200ms of quiet, `extra` at its top level, whose pipeline is
/// `gates` then a `test` gate running `script` with `sh -c` in the task (`LOG` a log outside).
fn rules(extra: &str, gates: &str, script: &str) -> String {
    format!(
        "version: 1\nstaging: staging\nverdicts: verdicts\nstate: state\nspeculate: {{quiet: 200ms{extra}}}\npipelines:\n  - name: p\n    gates:\n      - {{name: status, rule: status}}\n{gates}      - name: test\n        rule: test\n        run: [sh, -c, {script:?}]\n"
    )
}

/// Passes when `file` reads `good`, noting what it saw.
fn checks(file: &str) -> String {
    format!(
        "echo \"start $(cat {file})\" >> LOG; grep -qx good {file}; r=$?; echo end >> LOG; exit $r"
    )
}

fn write(watcher: &Sidecar, rel: &str, text: &str) {
    let path = watcher.task(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("dir");
    }
    std::fs::write(path, text).expect("write");
}

#[test]
fn a_rewrite_under_a_nested_tool_cache_after_a_speculative_pass_is_judged_at_done() {
    let file = "src/.pytest_cache/flag";
    let watcher = Sidecar::new(&rules("", "", &checks(file))).spawn();
    write(&watcher, file, "good\n");
    watcher.wait_for_log("end", 1);
    // Same length, same second: the worker's code reads it, so it is the worker's input.
    write(&watcher, file, "evil\n");
    let verdict = watcher.done();
    assert_eq!(verdict["verdict"], "FAIL", "{verdict:#}\n{}", watcher.log());
    assert!(watcher.log().contains("start evil"), "{}", watcher.log());
}

#[test]
fn a_rewrite_under_an_ignored_path_after_a_speculative_pass_is_judged_at_done() {
    let file = "target/out/gen.txt";
    let watcher = Sidecar::new(&rules(", ignore: [target]", "", &checks(file)));
    write(&watcher, file, "good\n");
    let watcher = watcher.spawn();
    watcher.wait_for_log("end", 1);
    // After the run's stamp of what it left (taken as its last command ends): a write during
    // the run cannot be told from the run's own there.
    std::thread::sleep(std::time::Duration::from_secs(2));
    // What a build left in its output directory (an OUT_DIR) is read by the next build.
    write(&watcher, file, "evil\n");
    let verdict = watcher.done();
    assert_eq!(verdict["verdict"], "FAIL", "{verdict:#}\n{}", watcher.log());
    assert!(watcher.log().contains("start evil"), "{}", watcher.log());
}

#[test]
fn a_file_that_comes_and_goes_after_a_speculative_run_makes_the_gate_run_again_at_done() {
    let watcher = Sidecar::new(&rules("", "", &checks("app.txt"))).spawn();
    write(&watcher, "app.txt", "good\n");
    watcher.wait_for_log("end", 1);
    // Gone before done: only its directory's times say it was there.
    write(&watcher, "transient.py", "import os\n");
    std::fs::remove_file(watcher.task("transient.py")).expect("remove");
    let verdict = watcher.done();
    assert_eq!(verdict["verdict"], "PASS", "{verdict:#}\n{}", watcher.log());
    assert_eq!(
        watcher.log(),
        "start good\nend\nstart good\nend\n",
        "the speculative outcome was not used: the gate ran again at done"
    );
}

#[test]
fn a_file_the_scope_gate_refuses_is_never_run_by_a_speculative_test() {
    // The test gate would run the worker's code (a conftest.py, here the script's own note);
    // the scope gate before it refuses that file at done, so nothing may run it before.
    let gates = "      - {name: lint, rule: lint, run: [sh, -c, 'echo lint >> LOG']}\n      - {name: scope, rule: file-scope, allow: [app.txt]}\n";
    let script = "echo ran >> LOG; test -f conftest.py";
    let watcher = Sidecar::new(&rules("", gates, script));
    write(&watcher, "app.txt", "good\n");
    write(
        &watcher,
        "conftest.py",
        "import os\nos.system('touch /tmp/owned')\n",
    );
    let watcher = watcher.spawn();
    // The speculative run has reached the lint gate; next is the scope gate, where it stops.
    // Give one that would go on to the test gate time to get there (its command notes it at
    // once).
    watcher.wait_for_log("lint", 1);
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert_eq!(watcher.log(), "lint\n", "the test gate ran before done");
    let verdict = watcher.done();
    assert_eq!(verdict["verdict"], "FAIL", "{verdict:#}");
    assert!(
        !watcher.log().contains("ran"),
        "the test gate ran: {}",
        watcher.log()
    );
}

#[test]
fn a_test_after_gates_that_judge_the_files_and_pass_is_still_speculated_on() {
    // The packs' order: the signal, the files judged in validator, then the commands.
    let gates = "      - {name: outputs, rule: exists, paths: [app.txt]}\n      - {name: scope, rule: file-scope, allow: [app.txt]}\n      - {name: leftovers, rule: content, files: [app.txt], ban: [{pattern: '<<<<<<<', message: a conflict}]}\n";
    let watcher = Sidecar::new(&rules("", gates, &checks("app.txt")));
    // In a repository: the scope gate lists the changes with git, which writes nothing there.
    write(&watcher, "app.txt", "first\n");
    let task = watcher.task("");
    for args in [
        &["init", "-q"][..],
        &["add", "app.txt"],
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "first",
        ],
    ] {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(&task)
            .status()
            .expect("git");
        assert!(status.success(), "git {args:?}");
    }
    write(&watcher, "app.txt", "good\n");
    let watcher = watcher.spawn();
    watcher.wait_for_log("end", 1);
    let verdict = watcher.done();
    assert_eq!(verdict["verdict"], "PASS", "{verdict:#}");
    assert_eq!(watcher.log(), "start good\nend\n", "used, not run again");
}

#[test]
fn a_test_grouped_after_a_review_is_never_run_speculatively() {
    // A review cannot be judged before done; the test written after it in its group waits for
    // it at done, and must not run before.
    let gates = "      - {name: lint, rule: lint, run: [sh, -c, 'echo lint >> LOG']}\n      - {name: review, rule: review, group: g, on_pass: CONTINUE, run: [sh, -c, 'echo APPROVED']}\n";
    let rules = rules("", gates, "echo ran >> LOG").replace(
        "      - name: test\n        rule: test\n",
        "      - name: test\n        rule: test\n        group: g\n",
    );
    let watcher = Sidecar::new(&rules);
    write(&watcher, "app.txt", "good\n");
    let watcher = watcher.spawn();
    watcher.wait_for_log("lint", 1);
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert_eq!(watcher.log(), "lint\n", "the test gate ran before done");
}
