//! Review 33: speculative runs under `validator watch` and `select:` on test gates, attacked.
//! Each test drives the real binary: a watcher over one task `t` whose gates note each run in a
//! log outside staging, or the hook over a project.

use std::path::Path;

use crate::common::{Project, pipeline};
use crate::hooks::{hook, stop};

use crate::speculate::Sidecar as Watcher;

/// A rules file speculating after 200ms of quiet, `extra` at its top level, whose pipeline is
/// `status` then a `test` gate running `script` with `sh -c` in the task.
fn rules(extra: &str, script: &str) -> String {
    format!(
        "version: 1\nstaging: staging\nverdicts: verdicts\nstate: state\nspeculate: {{quiet: 200ms}}\n{extra}pipelines:\n  - name: p\n    gates:\n      - {{name: status, rule: status}}\n      - name: test\n        rule: test\n        run: [sh, -c, {script:?}]\n"
    )
}

/// Passes when `app.txt` reads `good`, noting what it saw.
const CHECKS_APP: &str =
    "echo \"start $(cat app.txt)\" >> LOG; grep -qx good app.txt; r=$?; echo end >> LOG; exit $r";

/// A file's bytes changed through a shared mapping whose page is already dirty: the kernel
/// sets a file's times at the first write fault only, so none of the later writes moves its
/// modification or change time (until writeback, some 30 seconds on).
struct Mapping {
    address: *mut nix::libc::c_void,
    len: usize,
    _file: std::fs::File,
}

impl Mapping {
    fn new(path: &Path) -> Mapping {
        use std::os::fd::AsRawFd;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .expect("open");
        let len = usize::try_from(file.metadata().expect("metadata").len()).expect("len");
        // SAFETY: a fresh shared mapping of a file we hold open, of its whole length.
        let address = unsafe {
            nix::libc::mmap(
                std::ptr::null_mut(),
                len,
                nix::libc::PROT_READ | nix::libc::PROT_WRITE,
                nix::libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        assert_ne!(address, nix::libc::MAP_FAILED, "mmap");
        Mapping {
            address,
            len,
            _file: file,
        }
    }

    fn write(&self, bytes: &[u8]) {
        assert_eq!(bytes.len(), self.len);
        // SAFETY: the mapping is `len` bytes long, writable, and ours until drop.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.address.cast::<u8>(), self.len);
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe {
            nix::libc::munmap(self.address, self.len);
        }
    }
}

#[test]
fn a_write_through_a_dirty_mapping_after_a_speculative_pass_is_judged_at_done() {
    let watcher = Watcher::new(&rules("", CHECKS_APP));
    let app = watcher.task("app.txt");
    std::fs::write(&app, "good\n").expect("write");
    let mapping = Mapping::new(&app);
    // The first write through the mapping: its fault sets the times, before the watcher looks.
    mapping.write(b"good\n");
    let watcher = watcher.spawn();
    watcher.wait_for_log("end", 1);
    let stamp = std::fs::metadata(&app).expect("metadata");
    mapping.write(b"bad!\n");
    let after = std::fs::metadata(&app).expect("metadata");
    {
        use std::os::unix::fs::MetadataExt;
        assert_eq!(
            (stamp.mtime_nsec(), stamp.ctime_nsec()),
            (after.mtime_nsec(), after.ctime_nsec()),
            "the premise: the write moved no time"
        );
    }
    assert_eq!(std::fs::read_to_string(&app).expect("read"), "bad!\n");
    let verdict = watcher.done();
    assert_eq!(verdict["verdict"], "FAIL", "{verdict:#}\n{}", watcher.log());
    assert!(watcher.log().contains("start bad!"), "{}", watcher.log());
}

#[test]
fn a_link_out_of_the_task_whose_target_changes_after_the_speculative_run_is_judged_at_done() {
    // Task `u` beside `t` rewrites a file of its own in each run, so it is run again once quiet:
    // the speculator runs one task at a time and looks at every task in each pass, so by its
    // second run `t` has had its turn.
    let script = "echo \"start $VALIDATOR_TASK $(cat app.txt)\" >> LOG; grep -qx good app.txt; r=$?; if [ \"$VALIDATOR_TASK\" = u ]; then date +%N > again.txt; fi; echo \"end $VALIDATOR_TASK\" >> LOG; exit $r";
    let watcher = Watcher::new(&rules("", script));
    let outside = watcher.path("outside/app.txt");
    std::fs::write(&outside, "good\n").expect("write");
    std::os::unix::fs::symlink(&outside, watcher.task("app.txt")).expect("symlink");
    std::fs::create_dir_all(watcher.path("staging/u")).expect("u");
    std::fs::write(watcher.path("staging/u/app.txt"), "good\n").expect("write");
    let watcher = watcher.spawn();
    watcher.wait_for_log("end u", 2);
    std::fs::write(&outside, "evil\n").expect("write");
    let verdict = watcher.done();
    assert_eq!(verdict["verdict"], "FAIL", "{verdict:#}\n{}", watcher.log());
    assert!(watcher.log().contains("start t evil"), "{}", watcher.log());
}

#[test]
fn a_contract_criterion_changed_after_the_speculative_run_is_run_at_done() {
    let rules = "version: 1\nstaging: staging\nverdicts: verdicts\nstate: state\ncontracts: contracts\nspeculate: {quiet: 200ms}\npipelines:\n  - name: p\n    gates:\n      - {name: status, rule: status}\n";
    let watcher = Watcher::new(rules);
    let log = watcher.path("runs.log");
    let criterion = |word: &str, code: u8| {
        format!(
            "task_id: t\nsuccess_criteria:\n  - \"Tests pass: sh -c 'echo {word} >> {}; exit {code}'\"\n",
            log.display()
        )
    };
    std::fs::write(watcher.path("contracts/t.yaml"), criterion("lenient", 0)).expect("contract");
    std::fs::write(watcher.task("app.txt"), "work\n").expect("write");
    let watcher = watcher.spawn();
    watcher.wait_for_log("lenient", 1);
    // The coordinator tightens the criterion before the worker says done.
    std::fs::write(watcher.path("contracts/t.yaml"), criterion("strict", 1)).expect("contract");
    let verdict = watcher.done();
    assert_eq!(verdict["verdict"], "FAIL", "{verdict:#}\n{}", watcher.log());
    assert!(watcher.log().contains("strict"), "{}", watcher.log());
}

/// A pytest-shaped report of 50 failed tests whose names are 480 four-byte characters each:
/// under every cap on names, over the state file's cap together.
fn swollen_report() -> String {
    let mut out = String::from(
        "============================= test session starts ==============================\ncollected 50 items\n\n",
    );
    out.push_str(
        "=========================== short test summary info ============================\n",
    );
    for n in 0..50 {
        let name: String = std::iter::repeat_n('\u{1D538}', 480).collect();
        out.push_str(&format!(
            "FAILED test_a.py::test_{n}_{name} - assert False\n"
        ));
    }
    out.push_str(
        "============================== 50 failed in 0.12s ==============================\n",
    );
    out
}

#[test]
fn failed_test_names_cannot_swell_the_state_past_its_cap_and_reset_the_breakers() {
    let project = Project::new();
    let gates = "      - name: test\n        rule: test\n        run: [sh, -c, \"cat report.txt; exit 1\"]\n";
    let rules = pipeline(gates).replacen(
        "pipelines:",
        "defaults:\n  max_attempts: 10\n  strikes: 2\npipelines:",
        1,
    );
    project.rules(&rules);
    project.file("report.txt", &swollen_report());
    hook(&project, "claude", &stop(&project, "s1", "done")).blocked("block");
    // The same failure again: the strikes breaker ends it, as it would for any failure.
    let reason = hook(&project, "claude", &stop(&project, "s1", "done")).stopped();
    assert!(
        reason.contains("the same failure 2 times in a row"),
        "{reason}"
    );
    // And it stays ended: the worker is not judged afresh until a person resets it.
    project.file("report.txt", "1 passed\n");
    hook(&project, "claude", &stop(&project, "s1", "done")).stopped();
}

#[test]
fn a_forged_failed_test_name_is_never_an_argument_file_for_the_runner() {
    if !crate::starter::tools_present(
        "a_forged_failed_test_name_is_never_an_argument_file_for_the_runner",
        &[&["python3", "-m", "pytest", "--version"]],
    ) {
        return;
    }
    let scratch = tempfile::tempdir().expect("tempdir");
    let planted = scratch.path().join("planted.xml");
    let project = Project::new();
    let gates = "      - name: test\n        rule: test\n        run: [sh, -c, \"cat report.txt; exit 1\"]\n        select: python3 -m pytest -q -p no:cacheprovider {tests}\n";
    project.rules(&pipeline(gates));
    // The worker's output names `@args::x` failed; pytest reads `@FILE` as more arguments.
    project.file(
        "report.txt",
        "=========================== short test summary info ============================\nFAILED @args::x - assert False\n============================== 1 failed in 0.01s ==============================\n",
    );
    project.file(
        "args::x",
        &format!("--junitxml={}\ntest_ok.py\n", planted.display()),
    );
    project.file("test_ok.py", "def test_ok():\n    assert True\n");
    hook(&project, "claude", &stop(&project, "s1", "done")).blocked("block");
    hook(&project, "claude", &stop(&project, "s1", "done")).blocked("block");
    assert!(
        !planted.exists(),
        "the runner took options from a file the worker named"
    );
}
