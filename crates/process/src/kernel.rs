//! The few system calls the engine and the front ends make outside a command's start, each
//! behind a safe function here so that their crates can forbid `unsafe`: a thread's CPU time,
//! waiting for a pipe to be readable, whether a private mount namespace can be made, and
//! starting a program with work done between fork and exec.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::time::Duration;

use nix::libc;

/// CPU time, in microseconds, of the calling thread and of every child this process has reaped.
pub fn cpu_micros_of_thread_and_children() -> u64 {
    let mut total = 0u64;
    for who in [libc::RUSAGE_THREAD, libc::RUSAGE_CHILDREN] {
        // SAFETY: an all-zero rusage is a valid value of the plain C struct.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: getrusage writes one struct we own.
        if unsafe { libc::getrusage(who, &raw mut usage) } == 0 {
            for time in [usage.ru_utime, usage.ru_stime] {
                let micros = time.tv_sec.saturating_mul(1_000_000) + time.tv_usec;
                total = total.saturating_add(u64::try_from(micros).unwrap_or(0));
            }
        }
    }
    total
}

/// Waits at most `timeout` (at least a millisecond) for `fd` to be readable: `Ok(false)` when
/// it is not by then, or when a signal interrupted the wait (the caller looks at its clock).
pub fn readable_within(fd: BorrowedFd<'_>, timeout: Duration) -> io::Result<bool> {
    let mut poll = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let millis = libc::c_int::try_from(timeout.as_millis().max(1)).unwrap_or(libc::c_int::MAX);
    // SAFETY: one valid pollfd, for the duration of the call.
    let ready = unsafe { libc::poll(&mut poll, 1, millis) };
    if ready < 0 {
        let err = io::Error::last_os_error();
        return match err.kind() {
            io::ErrorKind::Interrupted => Ok(false),
            _ => Err(err),
        };
    }
    Ok(ready > 0)
}

/// Whether this machine lets a process make a private mount namespace (with a user namespace
/// where it is not root): `/bin/true` is started in one. `Err` says why not.
pub fn private_mount_namespace() -> Result<(), String> {
    let mut command = Command::new("/bin/true");
    // SAFETY: the closure makes system calls on constants only: nothing that allocates or
    // locks runs between fork and exec.
    unsafe {
        command.pre_exec(|| {
            if libc::unshare(libc::CLONE_NEWNS) != 0
                && libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) != 0
            {
                return Err(io::Error::last_os_error());
            }
            let flags = libc::MS_REC | libc::MS_PRIVATE;
            let root = c"/".as_ptr();
            let none = std::ptr::null();
            if libc::mount(none, root, none, flags, std::ptr::null()) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    match command.status() {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!("a probe in one exited {status}")),
        Err(err) => Err(err.to_string()),
    }
}

/// Starts `command` with `before_exec` run in the child between fork and exec (where a
/// confinement is entered, which allocates). That is sound only while no other thread can hold
/// a lock the child would need, so it is refused unless this process has one thread.
pub fn spawn_with_before_exec(
    command: &mut Command,
    before_exec: impl FnMut() -> io::Result<()> + Send + Sync + 'static,
) -> io::Result<Child> {
    let threads = std::fs::read_dir("/proc/self/task")?.count();
    if threads != 1 {
        return Err(io::Error::other(format!(
            "not started: work between fork and exec needs a process of one thread, and this one has {threads}"
        )));
    }
    // SAFETY: this process has one thread (counted just now, and only this thread could start
    // another), so what the closure does in the child cannot meet a lock another thread held.
    unsafe {
        command.pre_exec(before_exec);
    }
    command.spawn()
}
