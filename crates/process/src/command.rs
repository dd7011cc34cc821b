//! Running a gate's command: its own process group, merged stdout/stderr captured up to a cap
//! (the tail is kept), a deadline after which the whole group is killed, and no shell anywhere.
//! Standard input is empty, or bytes fed from a thread of their own (a reviewer reads the task's
//! context there). This is the only place the validator starts or kills a worker-facing process.

use std::collections::HashSet;
use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// Default cap on captured output per command.
pub const OUTPUT_CAP: usize = 1024 * 1024;

pub use crate::reaper::MARK_VAR;

/// Lets a supervisor stop every command started under it: the watcher cancels on shutdown,
/// `check` and `hook` when asked to stop, which kills each running command's process group and
/// refuses to start new ones.
#[derive(Debug, Default)]
pub struct Cancel {
    cancelled: AtomicBool,
    groups: Mutex<HashSet<i32>>,
    mark: Option<String>,
    /// Whether each command runs in a cgroup of its own where one can be made (the watcher's).
    cgroups: bool,
    /// Numbers the commands started under the mark.
    runs: AtomicU64,
    /// Whether its commands run at the lowest CPU and I/O priority (a speculative run's, until
    /// a run at done waits for it).
    background: AtomicBool,
}

impl Cancel {
    /// The watcher's supervisor: its commands carry `VALIDATOR_WATCHER=<mark>.<n>` in their
    /// environment and each runs in a cgroup of its own where one can be made.
    pub fn marked(mark: String) -> Self {
        Cancel {
            mark: Some(mark),
            cgroups: true,
            ..Cancel::default()
        }
    }

    /// A one-shot run's supervisor (`check`, `hook`): its commands carry a mark no other run
    /// shares ([`one_shot_mark`]), and join no cgroup (a command would pay half a millisecond
    /// for it; the subreaper covers them while the run lives).
    pub fn one_shot() -> Self {
        Cancel {
            mark: Some(one_shot_mark(std::env::var_os(MARK_VAR))),
            ..Cancel::default()
        }
    }

    /// A speculative run's supervisor: marked as the watcher's commands are (`mark` is one
    /// under the watcher's, so what its commands leave is the watcher's to kill), without
    /// cgroups, its commands at the lowest CPU and I/O priority so every real run comes first.
    pub fn background(mark: String) -> Self {
        Cancel {
            mark: Some(mark),
            background: AtomicBool::new(true),
            ..Cancel::default()
        }
    }

    /// Puts the commands running under it, and those it starts from now on, back at the
    /// ordinary priority: a run at done is waiting for them. Raising a priority needs
    /// privilege the watcher may not have; without it they stay where they were.
    pub fn to_foreground(&self) {
        self.background.store(false, Ordering::SeqCst);
        for group in self.lock().iter() {
            set_priority(*group, Priority::Ordinary);
        }
    }

    pub fn mark(&self) -> Option<&str> {
        self.mark.as_deref()
    }

    /// Whether commands started under this one run in cgroups of their own.
    fn uses_cgroups(&self) -> bool {
        self.cgroups
    }

    /// The mark of the next command started under this one (`<mark>.<n>`), if marked.
    fn next_run_mark(&self) -> Option<String> {
        let mark = self.mark.as_deref()?;
        Some(format!(
            "{mark}.{}",
            self.runs.fetch_add(1, Ordering::Relaxed)
        ))
    }

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

/// A mark for one run of `check` or `hook`: this process's id and 64 random bits (from the
/// standard library's per-process random hash keys), so no other run, before or beside this
/// one, carries it, and a worker cannot name it before its gate starts.
///
/// Started by a gate of another validator (a `check` run as a gate under `watch`, an agent
/// under a watcher calling `hook`), the run inherits that gate's mark in `outer` and extends
/// it, `<outer>.<own>`: the outer validator's look for its gate's mark (`<outer>` and
/// `<outer>.…`) still finds what this run's commands leave, while this run's own looks (for
/// `<outer>.<own>.<n>`) never reach the outer gate, its siblings or this process's ancestors.
/// An inherited value that is no mark validator makes is ignored.
fn one_shot_mark(outer: Option<OsString>) -> String {
    use std::hash::BuildHasher;
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let random = std::collections::hash_map::RandomState::new().hash_one(since_epoch);
    let own = format!("{}-{random:016x}", std::process::id());
    match outer.as_deref().and_then(std::ffi::OsStr::to_str) {
        Some(outer) if is_a_mark(outer) => format!("{outer}.{own}"),
        _ => own,
    }
}

/// Whether `value` looks like a mark validator makes: short, of letters, digits, `-` and `.`.
fn is_a_mark(value: &str) -> bool {
    (1..=512).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
}

/// The variables git sets for a hook it runs (`git commit` hands a pre-commit hook its
/// repository and the index it is committing): a gate's command, run from validator under such
/// a hook, finds its own repository, and a test that drives git never writes into the commit
/// being made.
pub const GIT_HOOK_VARS: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_PREFIX",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
];

/// What to run and under which limits.
pub struct Spec<'a> {
    pub argv: &'a [OsString],
    pub cwd: &'a Path,
    pub env: &'a [(OsString, OsString)],
    /// Variables of validator's own environment the command must not inherit (unless `env`
    /// sets them anew).
    pub env_remove: &'a [&'a str],
    pub timeout: Duration,
    pub output_cap: usize,
    pub cancel: Option<&'a Cancel>,
    /// Keep stderr apart (in `Finished::errors`) instead of interleaving it with stdout, for
    /// tools whose stdout is data (git).
    pub separate_stderr: bool,
    /// Run the command inside this sandbox (git over a worker's repository).
    pub sandbox: Option<&'a crate::sandbox::Sandbox>,
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
    start(spec, None)?.finish(spec)
}

/// As [`run`], with `input` on the command's standard input. The bytes are written from a thread
/// of their own, so a command that never reads them, or reads slowly while it writes a lot,
/// cannot stall the capture or the deadline; a command that closes its input early (a broken
/// pipe) simply does not get the rest.
pub fn run_with_input(spec: &Spec<'_>, input: &[u8]) -> Result<Finished, SpawnError> {
    start(spec, Some(input))?.finish(spec)
}

/// Starts `spec`'s command in a process group of its own (in its cgroup and its sandbox, when
/// it has them), `input` fed to it and its output read, each on a thread of its own.
fn start(spec: &Spec<'_>, input: Option<&[u8]>) -> Result<Running, SpawnError> {
    let program = spec.argv.first().cloned().unwrap_or_default();
    let program_name = program.to_string_lossy().into_owned();
    let io_err = |source: io::Error| SpawnError::Io {
        program: program_name.clone(),
        source,
    };
    let started = Instant::now();
    let pipes = Pipes::open(spec.separate_stderr, input.is_some()).map_err(io_err)?;
    let Some(resolved) = on_path(&program, spec.env) else {
        return Err(SpawnError::NotFound(program_name));
    };
    let run_mark = spec.cancel.and_then(Cancel::next_run_mark);
    let confinement = Confinement::new(spec, run_mark.as_deref());
    // With a step between fork and exec, std execs with execvp, which runs a file that is no
    // program under /bin/sh; posix_spawn (used otherwise) refuses it. Refuse it the same way.
    if (confinement.joins.is_some() || confinement.sandbox.is_some())
        && !runnable(Path::new(&resolved), spec.cwd)
    {
        return Err(io_err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a program this machine can run (a script needs a `#!` line naming its interpreter)",
        )));
    }
    let before_exec = before_exec(program, confinement.joins, confinement.sandbox);
    let expression = command(
        spec,
        &resolved,
        run_mark.as_deref(),
        pipes.child,
        before_exec,
    );
    let (handle, group) = spawn(
        expression,
        spec,
        &program_name,
        run_mark.as_deref(),
        confinement.cgroup.as_ref(),
    )?;
    let feeder = match (pipes.input, input) {
        (Some(writer), Some(bytes)) => Some(Feeder::start(writer, bytes.to_vec())),
        _ => None,
    };
    let output = Capture::start(pipes.output, spec.output_cap);
    let errors = pipes
        .errors
        .map(|reader| Capture::start(reader, spec.output_cap));
    Ok(Running {
        program: program_name,
        started,
        handle,
        group,
        run_mark,
        cgroup: confinement.cgroup,
        cgroup_prefix: confinement.cgroup_prefix,
        feeder,
        output,
        errors,
    })
}

/// A command's pipes: the ends validator reads its output from and writes its input to, and
/// the ends the command is given.
struct Pipes {
    output: os_pipe::PipeReader,
    /// Standard error apart, when `separate_stderr` asks for it.
    errors: Option<os_pipe::PipeReader>,
    /// Where its input is written, when it is given any.
    input: Option<os_pipe::PipeWriter>,
    child: ChildPipes,
}

/// The ends of its pipes a command is given.
struct ChildPipes {
    stdout: os_pipe::PipeWriter,
    /// Standard output's pipe again, unless standard error is kept apart.
    stderr: os_pipe::PipeWriter,
    /// None: `/dev/null`.
    stdin: Option<os_pipe::PipeReader>,
}

impl Pipes {
    fn open(separate_stderr: bool, fed: bool) -> io::Result<Pipes> {
        let (reader, writer) = os_pipe::pipe()?;
        let (error_reader, writer_for_stderr) = if separate_stderr {
            let (error_reader, error_writer) = os_pipe::pipe()?;
            (Some(error_reader), error_writer)
        } else {
            (None, writer.try_clone()?)
        };

        let (stdin_reader, stdin_writer) = if fed {
            let (reader, writer) = os_pipe::pipe()?;
            (Some(reader), Some(writer))
        } else {
            (None, None)
        };
        Ok(Pipes {
            output: reader,
            errors: error_reader,
            input: stdin_writer,
            child: ChildPipes {
                stdout: writer,
                stderr: writer_for_stderr,
                stdin: stdin_reader,
            },
        })
    }
}

/// Where a command is held besides its process group: the cgroup it joins and the sandbox it
/// enters, both between fork and exec.
struct Confinement {
    sandbox: Option<crate::sandbox::Entry>,
    cgroup_prefix: String,
    cgroup: Option<crate::reaper::Cgroup>,
    /// The cgroup's `cgroup.procs`, which the child writes itself into.
    joins: Option<i32>,
}

impl Confinement {
    fn new(spec: &Spec<'_>, run_mark: Option<&str>) -> Confinement {
        let sandbox = spec.sandbox.map(crate::sandbox::Sandbox::fd);
        // Under a watcher a command gets a cgroup where one can be made: its end kills the cgroup
        // whole, and a watcher killed before that leaves it, named by its mark, to the next. (A
        // command in git's sandbox starts nothing; a reviewer in its own starts what it likes. A
        // one-shot run relies on being the subreaper: joining a cgroup costs a fork where a spawn
        // would do, half a millisecond a command.)
        let cgroup_prefix = crate::reaper::cgroup_prefix(run_mark);
        let in_cgroup = spec
            .sandbox
            .is_none_or(crate::sandbox::Sandbox::runs_programs)
            && spec.cancel.is_some_and(Cancel::uses_cgroups);
        let cgroup = match (in_cgroup, run_mark) {
            (true, Some(_)) => crate::reaper::Cgroup::new(&cgroup_prefix),
            _ => None,
        };
        let joins = cgroup.as_ref().map(crate::reaper::Cgroup::procs_fd);
        Confinement {
            sandbox,
            cgroup_prefix,
            cgroup,
            joins,
        }
    }
}

/// What the child does before it becomes the program: it leads a process group of its own,
/// sees its program's name as `argv[0]`, and, between fork and exec, joins its cgroup and
/// enters its sandbox.
fn before_exec(
    program: OsString,
    joins: Option<i32>,
    sandbox: Option<crate::sandbox::Entry>,
) -> impl Fn(&mut std::process::Command) -> io::Result<()> + Send + Sync + 'static {
    move |command| {
        command.process_group(0);
        // The program is spawned by its full path (see `on_path`); it still sees its name.
        command.arg0(&program);
        if let Some(procs) = joins {
            // SAFETY: `join` makes one system call, as a child between fork and exec may.
            unsafe {
                command.pre_exec(move || crate::reaper::join(procs));
            }
        }
        if let Some(ruleset) = sandbox {
            // SAFETY: `enter` makes two system calls and nothing else, as a child between
            // fork and exec may.
            unsafe {
                command.pre_exec(move || crate::sandbox::enter(ruleset));
            }
        }
        Ok(())
    }
}

/// The command as duct runs it: `resolved` with `spec`'s arguments, directory and
/// environment, its mark, its pipes, and `before_exec`.
fn command(
    spec: &Spec<'_>,
    resolved: &OsString,
    run_mark: Option<&str>,
    pipes: ChildPipes,
    before_exec: impl Fn(&mut std::process::Command) -> io::Result<()> + Send + Sync + 'static,
) -> duct::Expression {
    let mut expression = duct::cmd(resolved, &spec.argv[1..]).dir(spec.cwd);
    // Each command carries its own mark under its supervisor's (`<mark>.<n>`), so what escaped
    // this command's group can be found by it alone while other gates run on. Set first, as
    // duct applies the modifier added first last: a gate's `env` cannot replace it.
    if let Some(mark) = run_mark {
        expression = expression.env(MARK_VAR, mark);
    }
    expression = match pipes.stdin {
        Some(reader) => expression.stdin_file(reader),
        None => expression.stdin_null(),
    };
    let mut expression = expression
        .stdout_file(pipes.stdout)
        .stderr_file(pipes.stderr)
        .unchecked()
        .before_spawn(before_exec);
    // What `env` sets anew is not removed: duct applies the modifier added first last, so
    // removing it would undo the setting.
    for key in spec
        .env_remove
        .iter()
        .filter(|key| !spec.env.iter().any(|(name, _)| name == **key))
    {
        expression = expression.env_remove(key);
    }
    for (key, value) in spec.env {
        expression = expression.env(key, value);
    }
    expression
}

/// Spawns `expression`, registered as a running command (see `reaper`) and with `spec`'s
/// supervisor; its handle and its process group. A supervisor cancelled meanwhile has the
/// group killed at once.
fn spawn(
    expression: duct::Expression,
    spec: &Spec<'_>,
    program: &str,
    run_mark: Option<&str>,
    cgroup: Option<&crate::reaper::Cgroup>,
) -> Result<(duct::Handle, Option<Pid>), SpawnError> {
    let io_err = |source: io::Error| SpawnError::Io {
        program: program.to_owned(),
        source,
    };
    // Registered before anyone may look for what commands left behind (see `reaper`).
    let spawning = crate::reaper::Spawning::begin();
    let started_handle = expression.start();
    // The expression holds our copies of the pipe's write end; close them so the reader sees
    // end-of-file once the command's group is gone. It also holds our copy of the input's read
    // end: once it is closed, a command that stops reading makes our writes fail, not block.
    drop(expression);
    let handle = started_handle.map_err(|source| match source.kind() {
        io::ErrorKind::NotFound => SpawnError::NotFound(program.to_owned()),
        // execvp would have run it under /bin/sh; posix_spawn by path does not.
        _ if source.raw_os_error() == Some(nix::libc::ENOEXEC) => io_err(io::Error::new(
            source.kind(),
            format!(
                "{source}; not a program this machine can run (a script needs a `#!` line naming its interpreter)"
            ),
        )),
        _ => io_err(source),
    })?;
    let group = handle.pids().first().map(|&pid| Pid::from_raw(pid as i32));
    if let Some(group) = group {
        spawning.started(group.as_raw(), run_mark, cgroup);
    } else {
        drop(spawning);
    }
    if let (Some(cancel), Some(group)) = (spec.cancel, group) {
        if cancel.background.load(Ordering::SeqCst) {
            set_priority(group.as_raw(), Priority::Lowest);
        }
        if !cancel.register(group.as_raw()) {
            let _ = killpg(group, Signal::SIGKILL);
        }
    }
    Ok((handle, group))
}

/// How much lower than its supervisor's other threads a thread that runs gates may put itself
/// ([`lower_this_thread`]): the watcher's workers do, and with them every command they start
/// and the reading of its output (a process or a thread inherits the nice value of the thread
/// that made it). A gate that floods its output or takes every core then slows the other
/// gates, not the watcher's main loop and health answers, nor a probe or an agent beside it.
pub const GATE_NICENESS: i32 = 5;

/// Lowers the calling thread's CPU priority by `by` (Linux keeps a nice value per thread);
/// what fails is only faster.
pub fn lower_this_thread(by: i32) {
    #[cfg(target_os = "linux")]
    // SAFETY: one system call on a plain integer.
    unsafe {
        nix::libc::nice(by);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = by;
}

#[derive(Clone, Copy)]
enum Priority {
    /// nice 19, the idle I/O class.
    Lowest,
    /// The calling thread's nice value, the best-effort I/O class at its default level.
    Ordinary,
}

/// Sets a process group's CPU and I/O priority, which its later children inherit. Set from
/// outside, just after the start, so the program runs exactly as it would otherwise (no step
/// between fork and exec); what fails is only slower.
fn set_priority(group: i32, priority: Priority) {
    use nix::libc;
    const IOPRIO_WHO_PGRP: libc::c_long = 2;
    const IOPRIO_CLASS_SHIFT: libc::c_long = 13;
    let (nice, io_class, io_level) = match priority {
        Priority::Lowest => (19, 3, 0),
        // SAFETY: one system call on plain integers; -1 (an error) is as good a nice value.
        Priority::Ordinary => (unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) }, 2, 4),
    };
    let Ok(who) = libc::id_t::try_from(group) else {
        return;
    };
    // SAFETY: two system calls on plain integers; neither touches memory of ours.
    unsafe {
        libc::setpriority(libc::PRIO_PGRP, who, nice);
        libc::syscall(
            libc::SYS_ioprio_set,
            IOPRIO_WHO_PGRP,
            libc::c_long::from(group),
            (io_class << IOPRIO_CLASS_SHIFT) | io_level,
        );
    }
}

/// A command started: what it takes to wait for it, to kill what it leaves, and to read what
/// it wrote.
struct Running {
    program: String,
    started: Instant,
    handle: duct::Handle,
    /// Its process group: its leader's pid.
    group: Option<Pid>,
    run_mark: Option<String>,
    cgroup: Option<crate::reaper::Cgroup>,
    cgroup_prefix: String,
    feeder: Option<Feeder>,
    output: Capture,
    errors: Option<Capture>,
}

impl Running {
    /// Waits for the command until `spec`'s deadline, then kills its group and whatever it
    /// left, and reads what it wrote.
    fn finish(self, spec: &Spec<'_>) -> Result<Finished, SpawnError> {
        let (status, timed_out) = end(
            &self.handle,
            self.started + spec.timeout,
            self.group,
            self.feeder,
            self.cgroup,
            &self.cgroup_prefix,
        );
        let drained_by = Instant::now() + DRAIN_GRACE;
        let (
            Tail {
                kept: output,
                dropped,
                ..
            },
            closed,
        ) = self.output.finish(drained_by);
        let (errors, errors_closed) = self
            .errors
            .map(|capture| capture.finish(drained_by))
            .map_or((Vec::new(), true), |(tail, closed)| (tail.kept, closed));
        // Killed at its deadline or cancelled, a command may have left processes in groups of
        // their own (`setsid`, GNU `timeout`), and a pipe still open says something outlived the
        // group: find them by the command's mark. So may one whose end could not be waited for.
        // A command that ended by itself with its output closed pays nothing for the look.
        if let Some(mark) = &self.run_mark {
            if timed_out
                || status.is_err()
                || !closed
                || !errors_closed
                || spec.cancel.is_some_and(Cancel::is_cancelled)
            {
                kill_marked(mark);
            }
        }
        if let (Some(cancel), Some(group)) = (spec.cancel, self.group) {
            cancel.unregister(group.as_raw());
        }
        let status = status.map_err(|source| SpawnError::Io {
            program: self.program,
            source,
        })?;
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
            elapsed: self.started.elapsed(),
        })
    }
}

/// Waits for a command's leader until `deadline`, then kills its group, stops feeding it its
/// input, and kills and reaps what it left in its cgroup or re-parented to validator; how the
/// leader ended, and whether the deadline came first.
fn end(
    handle: &duct::Handle,
    deadline: Instant,
    group: Option<Pid>,
    feeder: Option<Feeder>,
    cgroup: Option<crate::reaper::Cgroup>,
    cgroup_prefix: &str,
) -> (io::Result<std::process::ExitStatus>, bool) {
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
    let status = handle.wait().map(|output| output.status);
    // Whatever the command left in its cgroup dies with it; whatever it left re-parented to
    // validator (it escaped group and mark) is killed and reaped.
    if let Some(cgroup) = cgroup {
        crate::reaper::finish(cgroup, cgroup_prefix);
    }
    if let Some(group) = group {
        crate::reaper::finished(group.as_raw());
    }
    crate::reaper::reap_adopted();
    (status, timed_out)
}

/// Kills every process whose environment carries `VALIDATOR_WATCHER=<mark>` or
/// `VALIDATOR_WATCHER=<mark>.<anything>`: what the gates of
/// a watcher that was SIGKILLed left running (no one else would ever kill those), or what left
/// its gate's group. Returns how many such processes there were.
///
/// The mark is read from `/proc/<pid>/environ`, the environment a process was started with: a
/// process of another user cannot be read (and is not ours). A marked process's whole group is
/// killed only when the group's leader is marked too, i.e. the group is one a gate made, so a
/// process that moved itself into someone else's group (`setpgid`) cannot get that group
/// killed; nor is the caller's own group ever signalled. A process started with a cleared
/// environment (`env -i`) is killed only with a marked group.
pub fn kill_marked(mark: &str) -> usize {
    let marks = [mark.to_owned()];
    let own_group = nix::unistd::getpgrp();
    let mut killed = HashSet::new();
    // A group being killed may be forking at that moment, and a process in the middle of an
    // exec shows no environment yet: look again until two looks in a row find nothing.
    let mut quiet = 0;
    for _ in 0..20 {
        let marked = marked_processes(&marks);
        if marked.is_empty() {
            quiet += 1;
            if quiet == 2 {
                break;
            }
            thread::sleep(Duration::from_millis(10));
            continue;
        }
        quiet = 0;
        for &pid in &marked {
            killed.insert(pid);
            let pid = Pid::from_raw(pid);
            if let Ok(group) = nix::unistd::getpgid(Some(pid)) {
                if group != own_group && marked.contains(&group.as_raw()) {
                    let _ = killpg(group, Signal::SIGKILL);
                }
            }
            let _ = nix::sys::signal::kill(pid, Signal::SIGKILL);
        }
        thread::sleep(Duration::from_millis(10));
    }
    killed.len()
}

/// Live processes that carry one of `marks` (see [`crate::reaper::carries_a_mark_of`]), except
/// this one and its ancestors: a watcher started from inside a gate (or from a shell that
/// copied a gate's environment) inherits the mark, and must not kill what started it.
fn marked_processes(marks: &[String]) -> Vec<i32> {
    let ancestors = ancestors();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| !ancestors.contains(pid))
        // A zombie's environment reads empty: it is dead already.
        .filter(|&pid| crate::reaper::carries_a_mark_of(pid, marks))
        .collect()
}

/// This process and every process above it, up to init.
fn ancestors() -> HashSet<i32> {
    let mut chain = HashSet::new();
    let mut pid = std::process::id() as i32;
    while pid > 1 && chain.insert(pid) {
        let Some(parent) = crate::reaper::parent_of(pid) else {
            break;
        };
        pid = parent;
    }
    chain
}

/// The full path a bare program name (`ruff`, `true`) is run from: the first directory of the
/// PATH the command will get (`env` may set one) that holds it as an executable file; `None`
/// when none does. A program with a `/` is returned as it is. Only absolute PATH entries
/// count: a relative one (`.`, `bin`, an empty entry) would be searched from the command's
/// working directory, the task's, where a worker could plant a program by a tool's name.
///
/// A program given by its full path is also spawned with posix_spawn (a vfork-style clone),
/// which is several times cheaper per gate than fork + execvp.
pub fn on_path(program: &OsString, env: &[(OsString, OsString)]) -> Option<OsString> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    if program.is_empty() || program.as_bytes().contains(&b'/') {
        return Some(program.clone());
    }
    let path = match env.iter().rev().find(|(key, _)| key == "PATH") {
        Some((_, value)) => Some(value.clone()),
        None => std::env::var_os("PATH"),
    };
    let path = path.unwrap_or_else(|| "/bin:/usr/bin".into());
    path.as_bytes()
        .split(|&b| b == b':')
        .filter(|dir| dir.starts_with(b"/"))
        .map(|dir| Path::new(std::ffi::OsStr::from_bytes(dir)).join(program))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
        .map(std::path::PathBuf::into_os_string)
}

/// Whether `program` (a path, or a bare name left to execvp) starts as a program does: an ELF
/// header or a `#!` line. One that cannot be read is left to exec to judge.
fn runnable(program: &Path, cwd: &Path) -> bool {
    if program.components().count() == 1 {
        return true;
    }
    let path = cwd.join(program);
    let Ok(file) = crate::files::open(&path, crate::files::Links::Follow) else {
        return true;
    };
    let mut head = [0u8; 4];
    let read = file.take(4).read(&mut head).unwrap_or(0);
    head[..read].starts_with(b"#!") || (read == 4 && head == *b"\x7fELF")
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

/// How much the reader takes from the pipe at a time: a full pipe's worth (Linux's default).
/// A wider pipe and larger reads were measured slower (`bench/flood.sh`): more time in the
/// kernel for the same bytes.
const READ_CHUNK: usize = 64 * 1024;

/// A pipe being read into a capped tail on its own thread.
struct Capture {
    tail: Arc<Mutex<Tail>>,
    eof: mpsc::Receiver<()>,
    cap: usize,
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
        Capture { tail, eof, cap }
    }

    /// What was read. A process that left the group (setsid) may still hold the pipe open;
    /// wait for end-of-file only until `by`, then take what is buffered.
    /// Also says whether the pipe reached end-of-file (no one holds it any more).
    fn finish(self, by: Instant) -> (Tail, bool) {
        let closed = self
            .eof
            .recv_timeout(by.saturating_duration_since(Instant::now()))
            .is_ok();
        let tail = std::mem::take(&mut *self.tail.lock().unwrap_or_else(|p| p.into_inner()));
        (tail.into_kept(self.cap), closed)
    }
}

/// How long to wait for the output pipe to close once the command's group is dead.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// The captured tail of a command's output: a ring of `cap` bytes once it is full, so each
/// byte read is copied once, whatever the command floods, and nothing is moved per read.
#[derive(Default)]
struct Tail {
    kept: Vec<u8>,
    /// Where the oldest byte is, once `kept` holds `cap` bytes (the ring's start).
    start: usize,
    dropped: u64,
}

impl Tail {
    fn push(&mut self, mut bytes: &[u8], cap: usize) {
        if cap == 0 {
            self.dropped += bytes.len() as u64;
            return;
        }
        if bytes.len() >= cap {
            // Only its end survives: what was kept goes, and the rest of it too.
            self.dropped += (self.kept.len() + bytes.len() - cap) as u64;
            self.kept.clear();
            self.kept.extend_from_slice(&bytes[bytes.len() - cap..]);
            self.start = 0;
            return;
        }
        let room = cap.saturating_sub(self.kept.len()).min(bytes.len());
        self.kept.extend_from_slice(&bytes[..room]);
        bytes = &bytes[room..];
        // Full: each byte now takes the oldest one's place.
        while !bytes.is_empty() {
            let n = (cap - self.start).min(bytes.len());
            self.kept[self.start..self.start + n].copy_from_slice(&bytes[..n]);
            self.dropped += n as u64;
            self.start = (self.start + n) % cap;
            bytes = &bytes[n..];
        }
    }

    /// The kept bytes in the order they were written.
    fn into_kept(mut self, cap: usize) -> Tail {
        self.kept.rotate_left(self.start);
        if self.kept.len() > cap {
            let excess = self.kept.len() - cap;
            self.kept.drain(..excess);
            self.dropped += excess as u64;
        }
        Tail { start: 0, ..self }
    }
}

/// Reads to end-of-file into `tail`, keeping only the last `cap` bytes.
fn read_tail(mut reader: impl Read, cap: usize, tail: &Mutex<Tail>) {
    let mut chunk = vec![0u8; READ_CHUNK.min(cap.max(4096))];
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

    /// These tests' commands leave a process that sleeps for ten minutes, which a run that
    /// waited for it (the bug under test) would wait out: ending in less than this is the work
    /// the test asks for, not a claim about speed.
    const NOT_A_HANG: Duration = Duration::from_secs(120);

    /// Kills the process whose pid a test command printed on its first line (one it left
    /// running on purpose, outside its group).
    fn kill_escaped(output: &[u8]) {
        let pid = String::from_utf8_lossy(output)
            .lines()
            .next()
            .and_then(|line| line.trim().parse::<i32>().ok())
            .expect("the escaped process's pid");
        let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
    }

    fn spec_run(argv: &[&str], timeout: Duration, cap: usize) -> Result<Finished, SpawnError> {
        let argv: Vec<OsString> = argv.iter().map(OsString::from).collect();
        run(&Spec {
            argv: &argv,
            cwd: Path::new("."),
            env: &[],
            env_remove: &[],
            timeout,
            output_cap: cap,
            cancel: None,
            separate_stderr: false,
            sandbox: None,
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
    fn the_tail_keeps_the_last_bytes_in_order_however_they_arrive() {
        let written: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
        for chunk in [1, 3, 7, 64, 100, 101, 250, 4096] {
            let mut tail = Tail::default();
            for piece in written.chunks(chunk) {
                tail.push(piece, 100);
            }
            let tail = tail.into_kept(100);
            assert_eq!(
                tail.kept,
                written[written.len() - 100..],
                "chunks of {chunk}"
            );
            assert_eq!(
                tail.dropped,
                (written.len() - 100) as u64,
                "chunks of {chunk}"
            );
        }
        let mut short = Tail::default();
        short.push(b"ab", 100);
        short.push(b"cd", 100);
        assert_eq!(short.into_kept(100).kept, b"abcd");
    }

    #[test]
    fn a_timeout_kills_the_group_and_returns_promptly() {
        let done = spec_run(
            &["sh", "-c", "sleep 600 & sleep 600"],
            Duration::from_millis(300),
            OUTPUT_CAP,
        )
        .unwrap();
        assert_eq!(done.exit, Exit::TimedOut);
        assert!(done.elapsed < NOT_A_HANG);
    }

    #[test]
    fn a_background_child_does_not_hold_the_gate_open() {
        let done = spec_run(
            &["sh", "-c", "sleep 600 & echo started"],
            Duration::from_secs(20),
            OUTPUT_CAP,
        )
        .unwrap();
        assert_eq!(done.exit, Exit::Code(0));
        assert!(done.elapsed < NOT_A_HANG);
    }

    #[test]
    fn a_process_that_leaves_the_group_does_not_hang_the_gate() {
        let done = spec_run(
            &[
                "sh",
                "-c",
                "setsid sleep 600 & echo $!; sleep 0.5; echo started",
            ],
            Duration::from_secs(1200),
            OUTPUT_CAP,
        )
        .unwrap();
        kill_escaped(&done.output);
        assert_eq!(done.exit, Exit::Code(0));
        assert!(done.elapsed < NOT_A_HANG);
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
        let argv: Vec<OsString> = ["sleep", "600"].iter().map(OsString::from).collect();
        let spec = Spec {
            argv: &argv,
            cwd: Path::new("."),
            env: &[],
            env_remove: &[],
            timeout: Duration::from_secs(1200),
            output_cap: OUTPUT_CAP,
            cancel: Some(&cancel),
            separate_stderr: false,
            sandbox: None,
        };
        let done = run(&spec).unwrap();
        killer.join().unwrap();
        assert_eq!(done.exit, Exit::Cancelled);
        assert!(done.elapsed < NOT_A_HANG);
        assert_eq!(run(&spec).unwrap().exit, Exit::Cancelled);
    }

    fn input_run(argv: &[&str], input: &[u8], timeout: Duration) -> Finished {
        let argv: Vec<OsString> = argv.iter().map(OsString::from).collect();
        run_with_input(
            &Spec {
                argv: &argv,
                cwd: Path::new("."),
                env: &[],
                env_remove: &[],
                timeout,
                output_cap: OUTPUT_CAP,
                cancel: None,
                separate_stderr: false,
                sandbox: None,
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
        // Blocked on the input it never reads, the run would end at its deadline instead.
        let done = input_run(
            &["sh", "-c", "echo ignored"],
            &input,
            Duration::from_secs(1200),
        );
        assert_eq!(done.exit, Exit::Code(0));
        assert_eq!(done.output, b"ignored\n");
    }

    #[test]
    fn input_held_open_by_a_process_that_left_the_group_does_not_hang_the_gate() {
        let input = vec![b'x'; 5_000_000];
        let done = input_run(
            &[
                "sh",
                "-c",
                "setsid sleep 600 & echo $!; sleep 0.3; echo started",
            ],
            &input,
            Duration::from_secs(1200),
        );
        kill_escaped(&done.output);
        assert_eq!(done.exit, Exit::Code(0));
        assert!(done.elapsed < NOT_A_HANG, "{:?}", done.elapsed);
    }

    #[test]
    fn under_a_watcher_what_left_the_group_of_a_command_killed_at_its_deadline_dies_too() {
        let mark = format!("test-{}-{:?}", std::process::id(), Instant::now());
        let cancel = Cancel::marked(mark.clone());
        // GNU `timeout` and `setsid` both leave the gate's group; the deadline kills only it.
        let argv: Vec<OsString> = [
            "sh",
            "-c",
            "setsid sh -c 'trap \"\" TERM; sleep 600' & sleep 600",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        let done = run(&Spec {
            argv: &argv,
            cwd: Path::new("."),
            env: &[],
            env_remove: &[],
            timeout: Duration::from_millis(500),
            output_cap: OUTPUT_CAP,
            cancel: Some(&cancel),
            separate_stderr: false,
            sandbox: None,
        })
        .unwrap();
        assert_eq!(done.exit, Exit::TimedOut);
        let marks = [mark.clone()];
        assert!(
            marked_processes(&marks).is_empty(),
            "survivors: {:?}",
            marked_processes(&marks)
        );
    }

    #[test]
    fn a_mark_finds_its_commands_and_no_other_marks() {
        let mark = format!("test-{}-{:?}", std::process::id(), Instant::now());
        let spawn = |value: String| {
            std::process::Command::new("sleep")
                .arg("600")
                .env(MARK_VAR, value)
                .spawn()
                .unwrap()
        };
        let mut children = [
            spawn(format!("{mark}.7")),
            spawn(format!("{mark}x.7")),
            spawn(format!("{mark}.70")),
        ];
        let deadline = Instant::now() + Duration::from_secs(20);
        let find = |mark: String| {
            let mut found = marked_processes(&[mark]);
            found.sort();
            found
        };
        let ids = children.each_ref().map(|child| child.id() as i32);
        while find(mark.clone()).len() < 2 {
            assert!(Instant::now() < deadline, "the sleeps never started");
            thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(find(mark.clone()), {
            let mut both = vec![ids[0], ids[2]];
            both.sort();
            both
        });
        assert_eq!(find(format!("{mark}.7")), vec![ids[0]]);
        for child in &mut children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    #[test]
    fn a_timeout_with_unread_input_still_kills_the_group() {
        let input = vec![b'x'; 5_000_000];
        let done = input_run(
            &["sh", "-c", "sleep 600 & sleep 600"],
            &input,
            Duration::from_millis(300),
        );
        assert_eq!(done.exit, Exit::TimedOut);
        assert!(done.elapsed < NOT_A_HANG);
    }

    #[test]
    fn marked_commands_left_running_are_found_and_killed_with_their_groups() {
        let mark = format!("test-{}-{:?}", std::process::id(), Instant::now());
        let cancel = Cancel::marked(mark.clone());
        // What a gate leaves when its watcher is SIGKILLed: a running group, carrying the mark,
        // whose members ignore SIGTERM. Started the way `run` starts commands.
        let mut leader = std::process::Command::new("sh")
            .args(["-c", "trap '' TERM; sleep 600 & sleep 600 & wait"])
            .env(MARK_VAR, cancel.mark().unwrap())
            .process_group(0)
            .spawn()
            .unwrap();
        // Counted once both sleeps have exec'd: a child between fork and exec can read as
        // unmarked for a moment, and would then be killed with its group but not counted.
        let sleeping = || {
            marked_processes(std::slice::from_ref(&mark))
                .into_iter()
                .filter(|pid| {
                    std::fs::read_to_string(format!("/proc/{pid}/comm"))
                        .is_ok_and(|comm| comm.trim() == "sleep")
                })
                .count()
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while sleeping() < 2 {
            assert!(Instant::now() < deadline, "the sleeps never started");
            thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(kill_marked(&mark), 3);
        assert_eq!(leader.wait().unwrap().signal(), Some(9));
        assert!(marked_processes(std::slice::from_ref(&mark)).is_empty());
        assert_eq!(kill_marked(&mark), 0);
    }

    #[test]
    fn the_processes_above_this_one_are_its_ancestors() {
        let chain = ancestors();
        assert!(chain.contains(&(std::process::id() as i32)));
        assert!(chain.contains(&(std::os::unix::process::parent_id() as i32)));
    }

    #[test]
    fn a_marked_process_in_someone_elses_group_does_not_get_that_group_killed() {
        let mark = format!("test-{}-{:?}", std::process::id(), Instant::now());
        let mut bystander = std::process::Command::new("sleep")
            .arg("600")
            .process_group(0)
            .spawn()
            .unwrap();
        let mut intruder = std::process::Command::new("sleep")
            .arg("600")
            .env(MARK_VAR, &mark)
            .process_group(bystander.id() as i32)
            .spawn()
            .unwrap();
        // Until its exec is through, a new process shows no environment.
        let deadline = Instant::now() + Duration::from_secs(20);
        while marked_processes(std::slice::from_ref(&mark)).is_empty() {
            assert!(Instant::now() < deadline, "the intruder never started");
            thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(kill_marked(&mark), 1);
        assert_eq!(intruder.wait().unwrap().signal(), Some(9));
        assert!(
            bystander.try_wait().unwrap().is_none(),
            "the bystander was killed"
        );
        bystander.kill().unwrap();
        bystander.wait().unwrap();
    }

    #[test]
    fn a_marked_supervisor_marks_its_commands() {
        let cancel = Cancel::marked("m-123".into());
        let argv: Vec<OsString> = ["sh", "-c", "echo \"$VALIDATOR_WATCHER\""]
            .iter()
            .map(OsString::from)
            .collect();
        let spec = Spec {
            argv: &argv,
            cwd: Path::new("."),
            env: &[],
            env_remove: &[],
            timeout: Duration::from_secs(20),
            output_cap: OUTPUT_CAP,
            cancel: Some(&cancel),
            separate_stderr: false,
            sandbox: None,
        };
        let first = String::from_utf8(run(&spec).unwrap().output).unwrap();
        let second = String::from_utf8(run(&spec).unwrap().output).unwrap();
        assert!(first.starts_with("m-123."), "{first}");
        assert!(second.starts_with("m-123."), "{second}");
        assert_ne!(first, second, "each command has a mark of its own");
    }

    #[test]
    fn a_one_shot_mark_is_its_own_and_extends_a_mark_it_inherited() {
        let mine = one_shot_mark(None);
        assert!(
            mine.starts_with(&format!("{}-", std::process::id())),
            "{mine}"
        );
        assert!(is_a_mark(&mine) && !mine.contains('.'), "{mine}");
        assert_ne!(mine, one_shot_mark(None), "two runs never share a mark");
        // Run as a gate of another validator: under that gate's mark, never equal to it.
        let nested = one_shot_mark(Some("0123abcd.4".into()));
        let own = nested
            .strip_prefix("0123abcd.4.")
            .expect("under the outer mark");
        assert!(!own.is_empty() && !own.contains('.'), "{nested}");
        // A value validator never makes is not built on.
        for forged in ["", "a=b", "x\ny", "a b", &"a".repeat(600)] {
            let mark = one_shot_mark(Some(forged.into()));
            assert!(
                !mark.contains('.') && is_a_mark(&mark),
                "{forged:?}: {mark}"
            );
        }
    }

    #[test]
    fn every_supervisors_commands_are_marked_and_the_mark_wins_over_a_gates_env() {
        let cancel = Cancel::one_shot();
        assert!(!cancel.uses_cgroups(), "a one-shot run joins no cgroup");
        assert!(Cancel::marked("m".into()).uses_cgroups());
        let argv: Vec<OsString> = ["sh", "-c", "echo \"$VALIDATOR_WATCHER\""]
            .iter()
            .map(OsString::from)
            .collect();
        let env = [(OsString::from(MARK_VAR), OsString::from("forged"))];
        let done = run(&Spec {
            argv: &argv,
            cwd: Path::new("."),
            env: &env,
            env_remove: &[],
            timeout: Duration::from_secs(20),
            output_cap: OUTPUT_CAP,
            cancel: Some(&cancel),
            separate_stderr: false,
            sandbox: None,
        })
        .unwrap();
        let seen = String::from_utf8(done.output).unwrap();
        let mark = cancel.mark().expect("marked");
        assert_eq!(seen.trim(), format!("{mark}.0"));
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
        assert_eq!(
            on_path(&"tool".into(), &env),
            Some(tool.clone().into_os_string())
        );
        assert_eq!(on_path(&"./tool".into(), &env), Some("./tool".into()));
        // A relative entry is passed over: from the task's directory it would find the
        // worker's program.
        let relative: [(OsString, OsString); 1] = [(
            "PATH".into(),
            format!(".:bin:{}", bin.path().display()).into(),
        )];
        assert_eq!(
            on_path(&"tool".into(), &relative),
            Some(tool.clone().into_os_string())
        );
        assert_eq!(on_path(&"no-such-program-xyz".into(), &env), None);
        // A script without `#!` is an error that says what it lacks.
        std::fs::write(&tool, "echo hi\n").unwrap();
        let argv = [OsString::from("tool")];
        let err = run(&Spec {
            argv: &argv,
            cwd: Path::new("."),
            env: &env,
            env_remove: &[],
            timeout: Duration::from_secs(10),
            output_cap: OUTPUT_CAP,
            cancel: None,
            separate_stderr: false,
            sandbox: None,
        })
        .map(|done| done.exit)
        .expect_err("no interpreter");
        assert!(err.to_string().contains("`#!` line"), "{err}");
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
