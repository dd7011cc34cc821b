// Progress lines for people at a terminal: `check` and `watch` run with their stdout on a real
// pseudo-terminal show a slow gate's name and elapsed time, and erase it; on a pipe (CI logs,
// scripts, agents) nothing is redrawn. Either way each gate's result line comes as the gate
// finishes, not with the verdict.

use std::fs::File;
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::common::{PATIENCE, Project, pipeline, poll};

const BIN: &str = env!("CARGO_BIN_EXE_validator");
/// The line is erased in place before anything else is printed.
const ERASE: &str = "\r\x1b[2K";

/// A gate that runs for two seconds, past the mark at which a terminal would show its progress.
const SLOW: &str = "      - {name: slow, rule: lint, run: [\"sleep\", \"2\"]}\n";
const FAST: &str = "      - {name: fast, rule: lint, run: [\"true\"]}\n";
/// A gate that runs until the test creates `release` in the task directory (the bound only
/// stops a hung test), so a test can see its progress line before it ends.
const HELD: &str = "      - {name: slow, rule: lint, run: [sh, -c, 'i=0; while [ ! -e release ] && [ $i -lt 2400 ]; do sleep 0.05; i=$((i+1)); done; [ -e release ]']}\n";

/// Where the progress line of `gate` is on `screen`: its name and its elapsed time (`slow
/// 1.2s`), as drawn once the gate has run for a second, however late that draw comes.
fn progress_line(screen: &str, gate: &str) -> Option<usize> {
    let prefix = format!("{gate} ");
    screen.match_indices(&prefix).map(|(at, _)| at).find(|&at| {
        let time = &screen[at + prefix.len()..];
        let whole = time.bytes().take_while(u8::is_ascii_digit).count();
        whole > 0
            && time[whole..].starts_with('.')
            && time[whole + 1..]
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_digit())
            && time[whole + 2..].starts_with('s')
    })
}

/// A process whose stdout is the slave side of a new pseudo-terminal, and what it printed.
struct OnTerminal {
    child: Child,
    screen: Arc<Mutex<Vec<u8>>>,
    reader: Option<JoinHandle<()>>,
}

impl OnTerminal {
    fn spawn(mut command: Command) -> Self {
        let pty = nix::pty::openpty(None, None).expect("openpty");
        let child = command
            .env_remove("VALIDATOR_CONFIG")
            .env_remove("VALIDATOR_LOG")
            .env("NO_COLOR", "1")
            .env("TERM", "xterm")
            .stdin(Stdio::null())
            .stdout(Stdio::from(pty.slave))
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn validator");
        // The parent's copy of the slave is gone (moved into the child's stdio and dropped
        // with `command`'s spawn): reading the master ends when the child closes its side.
        drop(command);
        let screen = Arc::new(Mutex::new(Vec::new()));
        let reader = {
            let screen = Arc::clone(&screen);
            let mut master = File::from(pty.master);
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                // EIO once the slave side is closed by the child.
                while let Ok(n @ 1..) = master.read(&mut buf) {
                    screen.lock().expect("screen").extend_from_slice(&buf[..n]);
                }
            })
        };
        OnTerminal {
            child,
            screen,
            reader: Some(reader),
        }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.screen.lock().expect("screen")).into_owned()
    }

    /// Waits for the process and the last of its output.
    fn finish(mut self) -> (i32, String) {
        let status = self.child.wait().expect("wait");
        if let Some(reader) = self.reader.take() {
            reader.join().expect("reader");
        }
        (status.code().unwrap_or(-1), self.text())
    }
}

impl Drop for OnTerminal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn check_on_terminal(project: &Project) -> (i32, String) {
    let mut command = Command::new(BIN);
    command
        .arg("check")
        .arg("-c")
        .arg(project.rules_path())
        .arg("--task-dir")
        .arg(project.task_dir());
    OnTerminal::spawn(command).finish()
}

#[test]
fn check_on_a_terminal_shows_a_slow_gate_with_its_elapsed_time_then_erases_it() {
    let project = Project::new();
    project.rules(&pipeline(&format!("{FAST}{HELD}")));
    let mut command = Command::new(BIN);
    command
        .arg("check")
        .arg("-c")
        .arg(project.rules_path())
        .arg("--task-dir")
        .arg(project.task_dir());
    let check = OnTerminal::spawn(command);
    assert!(
        poll(PATIENCE, || progress_line(&check.text(), "slow").is_some()),
        "no progress line for `slow`: {:?}",
        check.text()
    );
    std::fs::write(project.task_dir().join("release"), "").expect("release the gate");
    let (code, screen) = check.finish();
    assert_eq!(code, 0, "{screen}");
    let shown = progress_line(&screen, "slow").expect("a progress line for `slow`");
    let erased = screen[shown..].find(ERASE).expect("the line is erased") + shown;
    let verdict = screen.find("PASS").expect("the verdict");
    assert!(erased < verdict, "erased before the verdict: {screen:?}");
    assert!(!screen.contains("fast 1."), "{screen:?}");
}

#[test]
fn check_on_a_terminal_draws_nothing_for_fast_gates() {
    let project = Project::new();
    project.rules(&pipeline(FAST));
    let (code, screen) = check_on_terminal(&project);
    assert_eq!(code, 0, "{screen}");
    assert!(!screen.contains(ERASE), "{screen:?}");
}

#[test]
fn check_into_a_pipe_prints_no_progress() {
    let project = Project::new();
    project.rules(&pipeline(SLOW));
    let output = project.check().env("TERM", "xterm").output().expect("run");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("slow"), "{stdout}");
    assert!(
        !stdout.contains('\r') && !stdout.contains('\x1b'),
        "{stdout:?}"
    );
}

/// Reads `stdout` line by line until a line contains `wanted`; everything read so far.
fn read_until(stdout: &mut impl std::io::BufRead, wanted: &str) -> String {
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        match stdout.read_line(&mut line) {
            Ok(0) | Err(_) => panic!("`{wanted}` never came; printed:\n{seen}"),
            Ok(_) => seen.push_str(&line),
        }
        if line.contains(wanted) {
            return seen;
        }
    }
}

#[test]
fn each_gate_result_is_printed_as_it_finishes_in_a_pipe_and_on_stderr_beside_a_document() {
    // The second gate waits for a file the test writes only once it has read the first gate's
    // result line: the run can end only if that line came while the second gate still ran.
    let project = Project::new();
    let go_on = project.path().join("go-on");
    let wait = format!(
        "      - {{name: waits, rule: test, run: [sh, -c, 'while [ ! -e \"$0\" ]; do sleep 0.05; done', {}]}}\n",
        go_on.display()
    );
    project.rules(&pipeline(&format!(
        "      - {{name: first, rule: lint, run: [\"true\"]}}\n{wait}"
    )));
    for format in ["text", "json"] {
        let _ = std::fs::remove_file(&go_on);
        let mut child = Command::new(BIN)
            .arg("check")
            .arg("-c")
            .arg(project.rules_path())
            .arg("--task-dir")
            .arg(project.task_dir())
            .args(["--format", format])
            .env_remove("VALIDATOR_CONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let lines = match format {
            "text" => child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
            _ => child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
        };
        let mut lines = std::io::BufReader::new(lines.expect("piped"));
        let seen = read_until(&mut lines, "first");
        assert!(seen.contains("✓ first"), "{format}: {seen}");
        assert!(!seen.contains("waits"), "{format}: {seen}");
        std::fs::write(&go_on, "").expect("write");
        let rest = read_until(&mut lines, "waits");
        assert!(rest.contains("✓ waits"), "{format}: {rest}");
        let mut after = String::new();
        lines.read_to_string(&mut after).expect("read");
        let output = child.wait_with_output().expect("wait");
        assert_eq!(output.status.code(), Some(0), "{format}");
        let stdout = String::from_utf8_lossy(&output.stdout);
        match format {
            // The result lines are not printed twice: only the decision follows.
            "text" => assert!(after.trim().starts_with("PASS  2 gates ran in"), "{after}"),
            // stdout stays the document alone.
            _ => {
                let verdict: serde_json::Value =
                    serde_json::from_str(&stdout).expect("stdout is the verdict alone");
                assert_eq!(verdict["verdict"], "PASS");
            }
        }
    }
}

#[test]
fn quiet_prints_the_verdict_alone() {
    let project = Project::new();
    project.rules(&pipeline(FAST));
    let output = project
        .check()
        .args(["--quiet", "--format", "json"])
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&output.stderr), "");
}

#[test]
fn watch_on_a_terminal_names_the_task_and_gate_then_prints_the_verdict_line_clean() {
    let project = Project::new();
    project.rules(&format!(
        "version: 1\nstaging: staging\nverdicts: verdicts\nstate: state\npipelines:\n  - name: main\n    gates:\n{HELD}"
    ));
    let staging = project.path().join("staging");
    std::fs::create_dir_all(staging.join("svc-auth")).expect("task dir");
    let mut command = Command::new(BIN);
    command.arg("watch").arg("-c").arg(project.rules_path());
    let watcher = OnTerminal::spawn(command);
    std::fs::write(staging.join("svc-auth.done"), "").expect("signal");
    assert!(
        poll(PATIENCE, || progress_line(
            &watcher.text(),
            "svc-auth: slow"
        )
        .is_some()),
        "no progress line for `svc-auth: slow`: {:?}",
        watcher.text()
    );
    std::fs::write(staging.join("svc-auth/release"), "").expect("release the gate");
    assert!(
        poll(PATIENCE, || watcher.text().contains("PASS")),
        "no verdict line: {:?}",
        watcher.text()
    );
    let screen = watcher.text();
    let shown = progress_line(&screen, "svc-auth: slow")
        .expect("a progress line naming the task and the gate");
    let verdict = screen.find("PASS").expect("the verdict line");
    let erased = screen[shown..].find(ERASE).expect("erased") + shown;
    assert!(erased < verdict, "{screen:?}");
    let line = screen[verdict..].lines().next().unwrap_or_default();
    assert!(line.contains("svc-auth (attempt 1/3)"), "{line:?}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(watcher.child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("SIGTERM");
    let (code, _) = watcher.finish();
    assert_eq!(code, 0);
}
