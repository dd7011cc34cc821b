//! Commands that misbehave: children that ignore SIGTERM and outlive their parent, output that
//! never stops, commands that never exit, a fork storm. After the gate ends, not one process it
//! started may be running (each carries a marker in its environment, which is how they are
//! found), the output kept stays capped, and the verdict says what happened.

use std::time::Duration;

use serde_json::Value;

use crate::common::{Project, gate, pipeline};
use crate::reliability::harness::{
    MARK_VAR, MarkGuard, Sidecar, describe, survivors, survivors_after_settling, unique_mark,
};

/// A `lint` gate running `script` under `sh -c`, marked, with `timeout`.
fn marked_gate(mark: &str, script: &str, timeout: &str) -> String {
    format!(
        "      - name: work\n        rule: lint\n        run: [\"sh\", \"-c\", {}]\n        timeout: {timeout}\n        env: {{{MARK_VAR}: \"{mark}\"}}\n",
        serde_json::to_string(script).expect("a YAML-safe string")
    )
}

/// Runs `check --format json` over a project with one marked gate; returns the exit code, the
/// verdict, the verdict's size in bytes, and asserts no marked process survives.
fn check_leaves_nothing(script: &str, timeout: &str) -> (i32, Value, usize) {
    let mark = unique_mark("proc");
    let _guard = MarkGuard(mark.clone());
    let project = Project::new();
    project.rules(&pipeline(&marked_gate(&mark, script, timeout)));
    let output = project
        .check()
        .args(["--format", "json"])
        .timeout(Duration::from_secs(120))
        .output()
        .expect("run validator check");
    let verdict: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "no verdict ({err}): {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let left = survivors_after_settling(&mark);
    assert!(
        left.is_empty(),
        "{} processes outlived the gate:\n{}",
        left.len(),
        describe(&left)
    );
    (
        output.status.code().expect("an exit code"),
        verdict,
        output.stdout.len(),
    )
}

#[test]
fn children_that_ignore_sigterm_die_with_the_gate_that_started_them() {
    let (code, verdict, _) = check_leaves_nothing(
        "(trap '' TERM HUP INT; exec sleep 600) & (trap '' TERM HUP INT; while :; do sleep 1; done) & echo started",
        "1m",
    );
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(gate(&verdict, "work")["outcome"], "pass");
}

#[test]
fn a_command_that_never_exits_is_killed_at_its_timeout_with_its_children() {
    let (code, verdict, _) = check_leaves_nothing(
        "trap '' TERM; (trap '' TERM; exec sleep 600) & sleep 600",
        "1s",
    );
    assert_eq!(code, 1, "{verdict:#}");
    let work = gate(&verdict, "work");
    assert_eq!(work["outcome"], "fail");
    assert!(
        work["summary"]
            .as_str()
            .is_some_and(|s| s.contains("timed out after 1s")),
        "{work:#}"
    );
}

#[test]
fn output_that_never_stops_is_capped_and_killed_at_the_timeout() {
    let (code, verdict, size) =
        check_leaves_nothing("yes flood-a & yes flood-b & exec yes flood-c", "2s");
    assert_eq!(code, 1, "{verdict:#}");
    let work = gate(&verdict, "work");
    assert!(
        work["summary"]
            .as_str()
            .is_some_and(|s| s.contains("timed out")),
        "{work:#}"
    );
    // The verdict keeps a short tail of the output, never the flood.
    assert!(size < 256 * 1024, "the verdict is {size} bytes");
    let tail = work["output_tail"].as_str().expect("an output tail");
    assert!(tail.starts_with('…') && tail.contains("flood-"), "{tail}");
}

#[test]
fn a_flood_that_ends_keeps_its_last_lines() {
    let (code, verdict, size) = check_leaves_nothing(
        "head -c 50000000 /dev/zero | tr '\\0' x; echo; echo the-last-line",
        "2m",
    );
    assert_eq!(code, 0, "{verdict:#}");
    assert!(size < 256 * 1024, "the verdict is {size} bytes");
    let tail = gate(&verdict, "work")["output_tail"].as_str().unwrap_or("");
    assert!(tail.ends_with("the-last-line"), "{tail:.200}");
}

#[test]
fn a_fork_storm_is_killed_whole() {
    let (code, verdict, _) = check_leaves_nothing(
        "i=0; while [ $i -lt 100 ]; do (trap '' TERM; exec sleep 600) & i=$((i+1)); done; exec sleep 600",
        "3s",
    );
    assert_eq!(code, 1, "{verdict:#}");
}

/// SIGTERM during a gate that never ends and ignores SIGTERM: after `--grace`, the watcher kills
/// the group and exits 0, leaving nothing.
#[test]
fn a_watcher_stopped_mid_gate_leaves_no_process_behind() {
    let mark = unique_mark("term");
    let _guard = MarkGuard(mark.clone());
    let mut w = signalled(
        &mark,
        "trap '' TERM; (trap '' TERM; exec sleep 600) & sleep 600",
        "1h",
        &["--grace", "500ms"],
    );
    assert!(
        crate::common::poll(Duration::from_secs(30), || survivors(&mark).len() >= 3),
        "the gate never started\n{}",
        w.logs()
    );
    stops_cleanly_leaving_nothing(&mut w, &mark);
}

/// A process that calls `setsid` and clears its environment leaves both its gate's process
/// group and the watcher's mark. It still dies with its gate: in the gate's cgroup where one
/// can be made, and in any case once re-parented to validator, the subreaper of its gates. The
/// test reads its pid from the file it writes, as no marker in its environment survives.
fn escaping_script(ending: &str) -> String {
    format!(
        "rm -f escaped.pid; env -i setsid sh -c 'echo $$ > escaped.pid; trap \"\" TERM HUP; exec sleep 600' </dev/null >/dev/null 2>&1 & while [ ! -s escaped.pid ]; do sleep 0.01; done; {ending}"
    )
}

/// The pid the escaping process wrote in `dir`, once it is there whole (the shell's `>` makes
/// the file before `echo` writes in it).
fn escaped_pid(dir: &std::path::Path) -> u32 {
    let read = || {
        std::fs::read_to_string(dir.join("escaped.pid"))
            .ok()
            .and_then(|pid| pid.trim().parse().ok())
    };
    let mut pid = None;
    crate::common::poll(Duration::from_secs(30), || {
        pid = read();
        pid.is_some()
    });
    pid.expect("the escaped process's pid")
}

/// Waits (up to 10 s, for a loaded machine) until `pid` is gone or a zombie.
fn dies(pid: u32) -> bool {
    crate::common::poll(Duration::from_secs(10), || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state == "Z" || state == "X")
        })
    })
}

/// Kills `pid` if a failed test left it running.
fn kill(pid: u32) {
    let _ = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .stderr(std::process::Stdio::null())
        .status();
}

#[test]
fn a_process_that_leaves_its_group_and_its_mark_dies_with_its_gate() {
    // Both ways a gate ends: by itself, and at its deadline.
    for (ending, timeout) in [("true", "1m"), ("exec sleep 600", "1s")] {
        let project = Project::new();
        project.rules(&pipeline(&format!(
            "      - name: work\n        rule: lint\n        run: [\"sh\", \"-c\", {}]\n        timeout: {timeout}\n",
            serde_json::to_string(&escaping_script(ending)).expect("a YAML-safe string")
        )));
        project
            .check()
            .timeout(Duration::from_secs(120))
            .output()
            .expect("run check");
        let pid = escaped_pid(&project.task_dir());
        let died = dies(pid);
        kill(pid);
        assert!(
            died,
            "ending `{ending}`: the escaped process outlived its gate"
        );
    }
}

#[test]
fn under_the_watcher_a_process_that_leaves_its_group_and_its_mark_dies_with_its_gate() {
    // With a cgroup per gate, and without (the subreaper alone).
    for env in [&[][..], &[("VALIDATOR_DEBUG_NO_CGROUPS", "1")][..]] {
        let mark = unique_mark("setsid");
        let _guard = MarkGuard(mark.clone());
        let mut w = Sidecar::new(&format!(
            "version: 1\nstaging: staging\nverdicts: verdicts\nstate: state\npipelines:\n  - name: main\n    gates:\n{}",
            marked_gate(&mark, &escaping_script("true"), "1m")
        ));
        w.task("t", &[]);
        w.start_with(&[], env);
        std::fs::write(w.done_path("t"), "STATUS: OK\n").expect("signal");
        wait_for_verdict(&w);
        let pid = escaped_pid(&w.staging().join("t"));
        let died = dies(pid);
        kill(pid);
        assert!(
            died,
            "{env:?}: the escaped process outlived its gate\n{}",
            w.logs()
        );
        stops_cleanly_leaving_nothing(&mut w, &mark);
    }
}

/// A watcher SIGKILLed while a gate runs cannot end it; the next watcher on the same state
/// does, before judging anything: by the mark, and by the gate's cgroup for what cleared it.
#[test]
fn the_next_watcher_ends_what_a_killed_one_left_running() {
    let mark = unique_mark("orphans");
    let _guard = MarkGuard(mark.clone());
    // Only the first run hangs: the next watcher judges the task again, and that run ends.
    let script = format!(
        "[ -e ran ] && exit 0; touch ran; {}",
        escaping_script("exec sleep 600")
    );
    let mut w = signalled(&mark, &script, "1m", &[]);
    let task = w.staging().join("t");
    assert!(
        crate::common::poll(Duration::from_secs(30), || task
            .join("escaped.pid")
            .exists()),
        "the gate never started\n{}",
        w.logs()
    );
    let pid = escaped_pid(&task);
    w.kill9();
    w.start(&[]);
    let left = survivors_after_settling(&mark);
    assert!(left.is_empty(), "{}", describe(&left));
    assert!(
        w.events().iter().any(|e| e["event"] == "orphans_killed"),
        "{}",
        w.logs()
    );
    // One that cleared its environment is found only by its cgroup, where there is one.
    if cgroups_here() {
        let died = dies(pid);
        kill(pid);
        assert!(
            died,
            "the escaped process outlived its watcher\n{}",
            w.logs()
        );
    } else {
        kill(pid);
    }
    stops_cleanly_leaving_nothing(&mut w, &mark);
}

/// Whether this machine lets validator make a cgroup per gate (as it does when it can).
fn cgroups_here() -> bool {
    let Ok(membership) = std::fs::read_to_string("/proc/self/cgroup") else {
        return false;
    };
    let Some(path) = membership.lines().find_map(|line| line.strip_prefix("0::")) else {
        return false;
    };
    let Ok(mounts) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    let Some(mount) = mounts.lines().find_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        (after.split_whitespace().next() == Some("cgroup2"))
            .then(|| {
                before
                    .split_whitespace()
                    .nth(4)
                    .map(std::path::PathBuf::from)
            })
            .flatten()
    }) else {
        return false;
    };
    let probe = mount
        .join(path.trim_start_matches('/'))
        .join(format!("validator-test-probe-{}", std::process::id()));
    let made = std::fs::create_dir(&probe).is_ok();
    let _ = std::fs::remove_dir(&probe);
    made
}

/// A gate killed at its deadline takes with it what escaped its group (`setsid`, GNU `timeout`
/// without `--foreground`), at once: the task's next run must not share its directory with it.
#[test]
fn under_the_watcher_a_gate_killed_at_its_deadline_leaves_nothing_that_escaped_its_group() {
    let mark = unique_mark("deadline");
    let _guard = MarkGuard(mark.clone());
    let mut w = signalled(
        &mark,
        "setsid sh -c 'trap \"\" TERM; exec sleep 600' </dev/null >/dev/null 2>&1 & exec sleep 600",
        "1s",
        &[],
    );
    wait_for_verdict(&w);
    let left = survivors_after_settling(&mark);
    assert!(left.is_empty(), "{}", describe(&left));
    assert!(w.running(), "{}", w.logs());
}

/// A watcher over one task, `t`, whose only gate runs `script` (marked with `mark`, under
/// `timeout`), started with `args` and `t` signalled.
fn signalled(mark: &str, script: &str, timeout: &str, args: &[&str]) -> Sidecar {
    let mut w = Sidecar::new(&format!(
        "version: 1\nstaging: staging\nverdicts: verdicts\nstate: state\npipelines:\n  - name: main\n    gates:\n{}",
        marked_gate(mark, script, timeout)
    ));
    w.task("t", &[]);
    w.start(args);
    std::fs::write(w.done_path("t"), "STATUS: OK\n").expect("signal");
    w
}

/// Waits for `t`'s verdict.
fn wait_for_verdict(w: &Sidecar) {
    assert!(
        crate::common::poll(crate::common::PATIENCE, || w.verdict_path("t").exists()),
        "no verdict\n{}",
        w.logs()
    );
}

/// SIGTERM: the watcher exits 0 and no process carrying `mark` is left.
fn stops_cleanly_leaving_nothing(w: &mut Sidecar, mark: &str) {
    let status = w
        .sigterm(crate::common::PATIENCE)
        .unwrap_or_else(|| panic!("still running after SIGTERM\n{}", w.logs()));
    assert_eq!(status.code(), Some(0), "{}", w.logs());
    let left = survivors_after_settling(mark);
    assert!(left.is_empty(), "{}", describe(&left));
}

/// A CI runner cancelling a job (SIGTERM), Ctrl-C (SIGINT) or a closed terminal (SIGHUP) ends
/// `check` with its gate, not `check` alone with its gate left running.
#[test]
fn check_asked_to_stop_takes_its_running_gate_with_it() {
    for signal in ["TERM", "INT", "HUP"] {
        let project = Project::new();
        project.rules(&pipeline(
            "      - name: slow\n        rule: lint\n        run: [\"sh\", \"-c\", \"echo $$ > gate.pid; exec sleep 600\"]\n",
        ));
        let child = std::process::Command::new(crate::reliability::harness::BIN)
            .arg("check")
            .arg("-c")
            .arg(project.rules_path())
            .arg("--task-dir")
            .arg(project.task_dir())
            .args(["--format", "json"])
            .env_remove("VALIDATOR_CONFIG")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("spawn check");
        // The file exists from the moment the shell opens it, before it holds the pid: wait
        // for the pid itself.
        let pid_file = project.task_dir().join("gate.pid");
        let mut gate: Option<u32> = None;
        assert!(
            crate::common::poll(crate::common::PATIENCE, || {
                gate = std::fs::read_to_string(&pid_file)
                    .ok()
                    .and_then(|pid| pid.trim().parse().ok());
                gate.is_some()
            }),
            "the gate never started"
        );
        let gate = gate.expect("the gate's pid");
        let sent = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .expect("kill");
        assert!(sent.success());
        let output = child.wait_with_output().expect("wait for check");
        let died = dies(gate);
        kill(gate);
        assert!(died, "SIG{signal}: the gate outlived check");
        assert_eq!(output.status.code(), Some(2), "SIG{signal}");
        let verdict: Value = serde_json::from_slice(&output.stdout).expect("a verdict");
        assert!(
            verdict["reasons"].to_string().contains("cancelled"),
            "{verdict:#}"
        );
    }
}
