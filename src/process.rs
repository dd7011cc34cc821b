//! Running a gate's command: its own process group, merged stdout/stderr captured up to a cap
//! (the tail is kept), a deadline after which the whole group is killed, and no shell anywhere.
//! Standard input is empty, or bytes fed from a thread of their own (a reviewer reads the task's
//! context there). This is the only place the validator starts or kills a worker-facing process.

use std::collections::HashSet;
use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// Default cap on captured output per command.
pub const OUTPUT_CAP: usize = 1024 * 1024;

/// Lets a supervisor stop every command started under it: the watcher cancels on shutdown,
/// which kills each running command's process group and refuses to start new ones.
#[derive(Debug, Default)]
pub struct Cancel {
    cancelled: AtomicBool,
    groups: Mutex<HashSet<i32>>,
}

impl Cancel {
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
        for group in self.lock().iter() {
            let _ = killpg(Pid::from_raw(*group), Signal::SIGKILL);
        }
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    /// Records a running group; `false` if cancellation already happened (the caller kills it).
    fn register(&self, group: i32) -> bool {
        let mut groups = self.lock();
        if self.is_cancelled() {
            return false;
        }
        groups.insert(group);
        true
    }

    fn unregister(&self, group: i32) {
        self.lock().remove(&group);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<i32>> {
        self.groups
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// What to run and under which limits.
pub struct Spec<'a> {
    pub argv: &'a [OsString],
    pub cwd: &'a Path,
    pub env: &'a [(OsString, OsString)],
    pub timeout: Duration,
    pub output_cap: usize,
    pub cancel: Option<&'a Cancel>,
    /// Keep stderr apart (in `Finished::errors`) instead of interleaving it with stdout, for
    /// tools whose stdout is data (git).
    pub separate_stderr: bool,
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
    TimedOut,
    /// The supervisor cancelled the run (shutdown).
    Cancelled,
}

#[derive(Debug)]
pub struct Finished {
    pub exit: Exit,
    /// The last `output_cap` bytes of stdout and stderr, interleaved as written.
    pub output: Vec<u8>,
    /// Bytes that were written before the kept tail and dropped.
    pub dropped: u64,
    /// Standard error's tail, when `separate_stderr` was asked for.
    pub errors: Vec<u8>,
    pub elapsed: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("command not found: `{0}`")]
    NotFound(String),
    #[error("cannot run `{program}`: {source}")]
    Io { program: String, source: io::Error },
}

/// Runs `spec` to completion or to its deadline. Whatever happens, no process of its group is
/// left behind: the group is killed after the leader exits too, so daemonised children die.
/// Standard input is empty (`/dev/null`).
pub fn run(spec: &Spec<'_>) -> Result<Finished, SpawnError> {
    start(spec, None)
}

/// As [`run`], with `input` on the command's standard input. The bytes are written from a thread
/// of their own, so a command that never reads them, or reads slowly while it writes a lot,
/// cannot stall the capture or the deadline; a command that closes its input early (a broken
/// pipe) simply does not get the rest.
pub fn run_with_input(spec: &Spec<'_>, input: &[u8]) -> Result<Finished, SpawnError> {
    start(spec, Some(input))
}

fn start(spec: &Spec<'_>, input: Option<&[u8]>) -> Result<Finished, SpawnError> {
    let program = spec.argv.first().cloned().unwrap_or_default();
    let program_name = program.to_string_lossy().into_owned();
    let io_err = |source: io::Error| SpawnError::Io {
        program: program_name.clone(),
        source,
    };
    let started = Instant::now();
    let (reader, writer) = os_pipe::pipe().map_err(io_err)?;
    let (error_reader, writer_for_stderr) = if spec.separate_stderr {
        let (error_reader, error_writer) = os_pipe::pipe().map_err(io_err)?;
        (Some(error_reader), error_writer)
    } else {
        (None, writer.try_clone().map_err(io_err)?)
    };

    let (stdin_reader, stdin_writer) = match input {
        Some(_) => {
            let (reader, writer) = os_pipe::pipe().map_err(io_err)?;
            (Some(reader), Some(writer))
        }
        None => (None, None),
    };

    let mut expression = duct::cmd(on_path(&program, spec.env), &spec.argv[1..]).dir(spec.cwd);
    expression = match stdin_reader {
        Some(reader) => expression.stdin_file(reader),
        None => expression.stdin_null(),
    };
    let mut expression = expression
        .stdout_file(writer)
        .stderr_file(writer_for_stderr)
        .unchecked()
        .before_spawn(move |command| {
            command.process_group(0);
            // The program is spawned by its full path (see `on_path`); it still sees its name.
            command.arg0(&program);
            Ok(())
        });
    for (key, value) in spec.env {
        expression = expression.env(key, value);
    }
    let started_handle = expression.start();
    // The expression holds our copies of the pipe's write end; close them so the reader sees
    // end-of-file once the command's group is gone. It also holds our copy of the input's read
    // end: once it is closed, a command that stops reading makes our writes fail, not block.
    drop(expression);
    let handle = started_handle.map_err(|source| match source.kind() {
        io::ErrorKind::NotFound => SpawnError::NotFound(program_name.clone()),
        _ => io_err(source),
    })?;
    let group = handle.pids().first().map(|&pid| Pid::from_raw(pid as i32));
    if let (Some(cancel), Some(group)) = (spec.cancel, group) {
        if !cancel.register(group.as_raw()) {
            let _ = killpg(group, Signal::SIGKILL);
        }
    }
    let feeder = match (stdin_writer, input) {
        (Some(writer), Some(bytes)) => Some(Feeder::start(writer, bytes.to_vec())),
        _ => None,
    };
    let output = Capture::start(reader, spec.output_cap);
    let errors = error_reader.map(|reader| Capture::start(reader, spec.output_cap));

    let deadline = started + spec.timeout;
    let waited = handle.wait_deadline(deadline);
    let timed_out = matches!(waited, Ok(None));
    if let Some(group) = group {
        // ESRCH just means the group is already empty.
        let _ = killpg(group, Signal::SIGKILL);
    }
    // The group is dead; a process that left it may still hold the input open without reading.
    if let Some(feeder) = feeder {
        feeder.stop();
    }
    let status = handle.wait().map(|output| output.status).map_err(io_err)?;
    let drained_by = Instant::now() + DRAIN_GRACE;
    let Tail {
        kept: output,
        dropped,
    } = output.finish(drained_by);
    let errors = errors
        .map(|capture| capture.finish(drained_by).kept)
        .unwrap_or_default();
    if let (Some(cancel), Some(group)) = (spec.cancel, group) {
        cancel.unregister(group.as_raw());
    }
    let exit = if spec.cancel.is_some_and(Cancel::is_cancelled) {
        Exit::Cancelled
    } else if timed_out {
        Exit::TimedOut
    } else if let Some(code) = status.code() {
        Exit::Code(code)
    } else {
        Exit::Signal(status.signal().unwrap_or(0))
    };
    Ok(Finished {
        exit,
        output,
        dropped,
        errors,
        elapsed: started.elapsed(),
    })
}

/// The full path a bare program name (`ruff`, `true`) would be run from, or the name unchanged
/// when it has a `/`, is not found, or PATH holds a relative entry before it (left to `execvp`).
///
/// Why: duct clears the environment and sets it again, and std then spawns a bare name by
/// fork + execvp (a new PATH must be searched in the child); a program given by its path is
/// spawned with posix_spawn instead (a vfork-style clone), which is several times cheaper per
/// gate. The search mirrors execvp's over the PATH the command will get (`env` may set one).
fn on_path(program: &OsString, env: &[(OsString, OsString)]) -> OsString {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    if program.is_empty() || program.as_bytes().contains(&b'/') {
        return program.clone();
    }
    let path = match env.iter().rev().find(|(key, _)| key == "PATH") {
        Some((_, value)) => Some(value.clone()),
        None => std::env::var_os("PATH"),
    };
    let path = path.unwrap_or_else(|| "/bin:/usr/bin".into());
    for dir in path.as_bytes().split(|&b| b == b':') {
        if !dir.starts_with(b"/") {
            return program.clone();
        }
        let candidate = Path::new(std::ffi::OsStr::from_bytes(dir)).join(program);
        let executable = std::fs::metadata(&candidate)
            .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0);
        if executable {
            return candidate.into_os_string();
        }
    }
    program.clone()
}

/// Bytes being written to a command's standard input on their own thread. The pipe is
/// non-blocking so that [`Feeder::stop`] is always heard: a blocked `write` could not be
/// interrupted, and the thread would live as long as whoever holds the pipe's other end.
struct Feeder {
    stop: Arc<AtomicBool>,
    done: thread::JoinHandle<()>,
}

impl Feeder {
    fn start(writer: os_pipe::PipeWriter, input: Vec<u8>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let done = thread::spawn(move || feed(writer, &input, &stopped));
        Feeder { stop, done }
    }

    fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        // The thread checks the flag at least every FEED_PAUSE.
        let _ = self.done.join();
    }
}

/// The longest the input writer sleeps on a full pipe before trying again.
const FEED_PAUSE: Duration = Duration::from_millis(20);

/// Writes `input` until it is all written, the reader goes away (a broken pipe is the command's
/// right, not an error) or `stop` is set. Dropping `writer` at the end is the command's
/// end-of-file.
fn feed(mut writer: os_pipe::PipeWriter, input: &[u8], stop: &AtomicBool) {
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    if fcntl(&writer, FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).is_err() {
        return;
    }
    let mut rest = input;
    let mut pause = Duration::from_millis(1);
    while !rest.is_empty() && !stop.load(Ordering::SeqCst) {
        match writer.write(rest) {
            Ok(0) => break,
            Ok(n) => {
                rest = &rest[n..];
                pause = Duration::from_millis(1);
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                thread::sleep(pause);
                pause = (pause * 2).min(FEED_PAUSE);
            }
            Err(_) => break,
        }
    }
}

/// A pipe being read into a capped tail on its own thread.
struct Capture {
    tail: Arc<Mutex<Tail>>,
    eof: mpsc::Receiver<()>,
}

impl Capture {
    fn start(reader: os_pipe::PipeReader, cap: usize) -> Self {
        let tail = Arc::new(Mutex::new(Tail::default()));
        let (eof_tx, eof) = mpsc::channel();
        let shared = Arc::clone(&tail);
        thread::spawn(move || {
            read_tail(reader, cap, &shared);
            let _ = eof_tx.send(());
        });
        Capture { tail, eof }
    }

    /// What was read. A process that left the group (setsid) may still hold the pipe open;
    /// wait for end-of-file only until `by`, then take what is buffered.
    fn finish(self, by: Instant) -> Tail {
        let _ = self
            .eof
            .recv_timeout(by.saturating_duration_since(Instant::now()));
        std::mem::take(&mut *self.tail.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// How long to wait for the output pipe to close once the command's group is dead.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// The captured tail of a command's output.
#[derive(Default)]
struct Tail {
    kept: Vec<u8>,
    dropped: u64,
}

impl Tail {
    fn push(&mut self, bytes: &[u8], cap: usize) {
        self.kept.extend_from_slice(bytes);
        if self.kept.len() > cap {
            let excess = self.kept.len() - cap;
            self.kept.drain(..excess);
            self.dropped += excess as u64;
        }
    }
}

/// Reads to end-of-file into `tail`, keeping only the last `cap` bytes.
fn read_tail(mut reader: impl Read, cap: usize, tail: &Mutex<Tail>) {
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => tail
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(&chunk[..n], cap),
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec_run(argv: &[&str], timeout: Duration, cap: usize) -> Result<Finished, SpawnError> {
        let argv: Vec<OsString> = argv.iter().map(OsString::from).collect();
        run(&Spec {
            argv: &argv,
            cwd: Path::new("."),
            env: &[],
            timeout,
            output_cap: cap,
            cancel: None,
            separate_stderr: false,
        })
    }

    #[test]
    fn captures_stdout_and_stderr_and_the_exit_code() {
        let done = spec_run(
            &["sh", "-c", "echo out; echo err >&2; exit 3"],
            Duration::from_secs(10),
            OUTPUT_CAP,
        )
        .unwrap();
        assert_eq!(done.exit, Exit::Code(3));
        let text = String::from_utf8_lossy(&done.output);
        assert!(text.contains("out") && text.contains("err"), "{text}");
    }

    #[test]
    fn keeps_only_the_tail_of_a_flood() {
        let done = spec_run(
            &["sh", "-c", "head -c 3000000 /dev/zero; echo END"],
            Duration::from_secs(30),
            1000,
        )
        .unwrap();
        assert_eq!(done.output.len(), 1000);
        assert!(done.output.ends_with(b"END\n"));
        assert_eq!(done.dropped, 3_000_004 - 1000);
    }

    #[test]
    fn a_timeout_kills_the_group_and_returns_promptly() {
        let done = spec_run(
            &["sh", "-c", "sleep 30 & sleep 30"],
            Duration::from_millis(300),
            OUTPUT_CAP,
        )
        .unwrap();
        assert_eq!(done.exit, Exit::TimedOut);
        assert!(done.elapsed < Duration::from_secs(10));
    }

    #[test]
    fn a_background_child_does_not_hold_the_gate_open() {
        let done = spec_run(
            &["sh", "-c", "sleep 30 & echo started"],
            Duration::from_secs(20),
            OUTPUT_CAP,
        )
        .unwrap();
        assert_eq!(done.exit, Exit::Code(0));
        assert!(done.elapsed < Duration::from_secs(10));
    }

    #[test]
    fn a_process_that_leaves_the_group_does_not_hang_the_gate() {
        let done = spec_run(
            &["sh", "-c", "setsid sleep 5 & sleep 0.5; echo started"],
            Duration::from_secs(20),
            OUTPUT_CAP,
        )
        .unwrap();
        assert_eq!(done.exit, Exit::Code(0));
        assert!(done.elapsed < Duration::from_secs(10));
        assert!(String::from_utf8_lossy(&done.output).contains("started"));
    }

    #[test]
    fn cancel_kills_running_commands_and_refuses_new_ones() {
        let cancel = Arc::new(Cancel::default());
        let canceller = Arc::clone(&cancel);
        let killer = thread::spawn(move || {
            thread::sleep(Duration::from_millis(300));
            canceller.cancel();
        });
        let argv: Vec<OsString> = ["sleep", "30"].iter().map(OsString::from).collect();
        let spec = Spec {
            argv: &argv,
            cwd: Path::new("."),
            env: &[],
            timeout: Duration::from_secs(60),
            output_cap: OUTPUT_CAP,
            cancel: Some(&cancel),
            separate_stderr: false,
        };
        let done = run(&spec).unwrap();
        killer.join().unwrap();
        assert_eq!(done.exit, Exit::Cancelled);
        assert!(done.elapsed < Duration::from_secs(10));
        assert_eq!(run(&spec).unwrap().exit, Exit::Cancelled);
    }

    fn input_run(argv: &[&str], input: &[u8], timeout: Duration) -> Finished {
        let argv: Vec<OsString> = argv.iter().map(OsString::from).collect();
        run_with_input(
            &Spec {
                argv: &argv,
                cwd: Path::new("."),
                env: &[],
                timeout,
                output_cap: OUTPUT_CAP,
                cancel: None,
                separate_stderr: false,
            },
            input,
        )
        .unwrap()
    }

    #[test]
    fn input_reaches_the_command_whole_and_then_ends() {
        let input: Vec<u8> = (0..3_000_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        let done = input_run(&["wc", "-c"], &input, Duration::from_secs(30));
        assert_eq!(done.exit, Exit::Code(0));
        assert_eq!(String::from_utf8_lossy(&done.output).trim(), "3000000");
        let done = input_run(&["cat"], b"line one\nline two\n", Duration::from_secs(30));
        assert_eq!(done.output, b"line one\nline two\n");
    }

    #[test]
    fn a_command_that_writes_a_lot_before_reading_does_not_deadlock() {
        let input = vec![b'x'; 2_000_000];
        let done = input_run(
            &["sh", "-c", "head -c 2000000 /dev/zero; wc -c"],
            &input,
            Duration::from_secs(30),
        );
        assert_eq!(done.exit, Exit::Code(0));
        assert!(
            done.output.ends_with(b"2000000\n"),
            "{:?}",
            done.output.len()
        );
    }

    #[test]
    fn a_command_that_never_reads_its_input_is_not_an_error() {
        let input = vec![b'x'; 5_000_000];
        let done = input_run(
            &["sh", "-c", "echo ignored"],
            &input,
            Duration::from_secs(30),
        );
        assert_eq!(done.exit, Exit::Code(0));
        assert_eq!(done.output, b"ignored\n");
        assert!(done.elapsed < Duration::from_secs(10));
    }

    #[test]
    fn input_held_open_by_a_process_that_left_the_group_does_not_hang_the_gate() {
        let input = vec![b'x'; 5_000_000];
        let done = input_run(
            &["sh", "-c", "setsid sleep 5 & sleep 0.3; echo started"],
            &input,
            Duration::from_secs(20),
        );
        assert_eq!(done.exit, Exit::Code(0));
        assert!(done.elapsed < Duration::from_secs(4), "{:?}", done.elapsed);
    }

    #[test]
    fn a_timeout_with_unread_input_still_kills_the_group() {
        let input = vec![b'x'; 5_000_000];
        let done = input_run(
            &["sh", "-c", "sleep 30 & sleep 30"],
            &input,
            Duration::from_millis(300),
        );
        assert_eq!(done.exit, Exit::TimedOut);
        assert!(done.elapsed < Duration::from_secs(10));
    }

    #[test]
    fn a_bare_name_is_found_on_the_commands_own_path() {
        let bin = tempfile::tempdir().unwrap();
        let tool = bin.path().join("tool");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&tool, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let path: OsString = format!("/nonexistent:{}", bin.path().display()).into();
        let env = [("PATH".into(), path)];
        assert_eq!(on_path(&"tool".into(), &env), tool.as_os_str());
        assert_eq!(on_path(&"./tool".into(), &env), "./tool");
        let relative = [("PATH".into(), "bin:/usr/bin".into())];
        assert_eq!(on_path(&"sh".into(), &relative), "sh");
        assert_eq!(
            on_path(&"no-such-program-xyz".into(), &env),
            "no-such-program-xyz"
        );
        // The command still sees the name it was given as its argv[0].
        let done = spec_run(
            &["sh", "-c", "echo $0"],
            Duration::from_secs(10),
            OUTPUT_CAP,
        )
        .unwrap();
        assert_eq!(done.output, b"sh\n");
    }

    #[test]
    fn a_missing_program_is_named() {
        let err =
            spec_run(&["no-such-program-xyz"], Duration::from_secs(5), OUTPUT_CAP).unwrap_err();
        assert!(matches!(err, SpawnError::NotFound(ref name) if name == "no-such-program-xyz"));
    }
}
