//! A Landlock sandbox for the programs validator runs over a worker's own files (git): they may
//! read the directories they are given and the system's libraries, execute nothing but
//! themselves (no shell, so no filter, textconv or hook a worker configured can run), write
//! nothing (but in a directory of validator's own they are given: where git keeps validator's
//! private index of a repository), connect nowhere and signal nothing outside the sandbox.
//!
//! Checks made before git starts (which repository, which programs its config names) can be
//! raced by a worker process that keeps running after it signalled done; the kernel's rules
//! cannot. They are built in the parent and entered in the child between fork and exec. Where
//! the kernel has no Landlock (before 5.13, or one that disables it), validator runs git
//! without it, says so once, and relies on those checks alone. A debug build run with
//! `VALIDATOR_DEBUG_NO_SANDBOX` set behaves so, for the tests of those checks.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Once;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope,
};

/// The Landlock ABI whose rights are asked for (on an older kernel, what it has of them).
const ABI_ASKED: ABI = ABI::V6;

/// System directories a dynamically linked program reads (libraries, locales) and may map
/// to execute (the dynamic loader, its libraries). Nothing there belongs to a worker.
const SYSTEM_LIBRARIES: &[&str] = &[
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/usr/lib",
    "/usr/lib32",
    "/usr/lib64",
    "/usr/libx32",
    "/usr/libexec",
    "/usr/share/locale",
    "/usr/share/i18n",
    "/nix/store",
];

/// Single system files a program reads at start.
const SYSTEM_FILES: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/ld.so.preload",
    "/etc/localtime",
    "/etc/locale.alias",
];

/// A ruleset ready to be entered by a child process.
#[derive(Debug)]
pub struct Sandbox {
    ruleset: OwnedFd,
}

impl Sandbox {
    /// A sandbox in which `program` may run and read beneath `readable`. `Ok(None)` when the
    /// kernel has no Landlock (said once per process); `Err` when the rules cannot be built.
    pub fn reading(program: &Path, readable: &[PathBuf]) -> Result<Option<Sandbox>, String> {
        Self::reading_and_writing(program, readable, None)
    }

    /// As [`Self::reading`], and the program may also make, replace and remove files directly
    /// in `writable` (a directory of validator's own; none of its subdirectories' names can
    /// be made or removed), as git writes an index: a lock file renamed over the old one.
    pub fn reading_and_writing(
        program: &Path,
        readable: &[PathBuf],
        writable: Option<&Path>,
    ) -> Result<Option<Sandbox>, String> {
        let read = AccessFs::ReadFile | AccessFs::ReadDir;
        let mut rules: Vec<(PathBuf, landlock::BitFlags<AccessFs>)> = Vec::new();
        for dir in readable {
            rules.push((dir.clone(), read));
        }
        if let Some(dir) = writable {
            rules.push((
                dir.to_path_buf(),
                read | AccessFs::WriteFile
                    | AccessFs::MakeReg
                    | AccessFs::RemoveFile
                    | AccessFs::Truncate,
            ));
        }
        for dir in SYSTEM_LIBRARIES {
            rules.push((PathBuf::from(dir), read | AccessFs::Execute));
        }
        for file in SYSTEM_FILES {
            rules.push((PathBuf::from(file), AccessFs::ReadFile.into()));
        }
        // Where git itself lives (not always /usr: /usr/local, a prefix of its own), and
        // its helpers beside it; `program` alone may be executed outside the libraries.
        let real = program
            .canonicalize()
            .map_err(|err| format!("cannot find {}: {err}", program.display()))?;
        rules.push((real.clone(), AccessFs::ReadFile | AccessFs::Execute));
        if let Some(prefix) = real.parent().and_then(Path::parent) {
            for helpers in ["libexec/git-core", "share/git-core", "lib"] {
                rules.push((prefix.join(helpers), read | AccessFs::Execute));
            }
        }
        rules.push((
            PathBuf::from("/dev/null"),
            AccessFs::ReadFile | AccessFs::WriteFile,
        ));

        // A debug build can be told to run as on a kernel without Landlock, so the tests can
        // show that what the sandbox backs up holds on its own.
        if cfg!(debug_assertions) && std::env::var_os("VALIDATOR_DEBUG_NO_SANDBOX").is_some() {
            return Ok(None);
        }
        let unsupported = |err: &dyn std::fmt::Display| {
            warn_once(&format!("it could not be set up ({err})"));
            Ok(None)
        };
        let ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(ABI_ASKED))
            .and_then(|ruleset| ruleset.handle_access(AccessNet::from_all(ABI_ASKED)))
            .and_then(|ruleset| ruleset.scope(Scope::from_all(ABI_ASKED)));
        let ruleset = match ruleset.and_then(|ruleset| ruleset.create()) {
            Ok(created) => created,
            Err(err) => return unsupported(&err),
        };
        let mut ruleset = ruleset;
        for (path, access) in rules {
            // A path this system does not have needs no rule.
            let Ok(fd) = PathFd::new(&path) else {
                continue;
            };
            let access = if path.is_dir() {
                access
            } else {
                access & AccessFs::from_file(ABI_ASKED)
            };
            ruleset = ruleset
                .add_rule(PathBeneath::new(fd, access))
                .map_err(|err| format!("cannot allow {}: {err}", path.display()))?;
        }
        match Option::<OwnedFd>::from(ruleset) {
            Some(ruleset) => Ok(Some(Sandbox { ruleset })),
            None => {
                warn_once("this kernel has no Landlock");
                Ok(None)
            }
        }
    }

    /// The raw descriptor a child enters ([`enter`]); valid while the sandbox lives.
    pub(crate) fn fd(&self) -> i32 {
        self.ruleset.as_raw_fd()
    }
}

/// Restricts the calling process to the ruleset `fd`. Called in the child between fork and
/// exec, so it makes two system calls and nothing else (no allocation, no lock).
pub(crate) fn enter(fd: i32) -> std::io::Result<()> {
    use nix::libc;
    // SAFETY: plain system calls on integers; `fd` is open in the child (inherited).
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

fn warn_once(why: &str) {
    static WARNED: Once = Once::new();
    WARNED.call_once(|| {
        tracing::warn!(
            "git runs without a Landlock sandbox: {why}; a worker process that keeps running after its done signal could race the checks made before git starts (see README: What a worker cannot do)"
        );
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `sh -c script` inside a sandbox that may read `readable`; its exit code.
    fn sandboxed(readable: &[PathBuf], program: &str, args: &[&str]) -> Option<i32> {
        use std::os::unix::process::CommandExt;
        let sandbox = Sandbox::reading(Path::new(program), readable).unwrap()?;
        let fd = sandbox.fd();
        let mut command = std::process::Command::new(program);
        command.args(args);
        // SAFETY: `enter` makes system calls only.
        unsafe {
            command.pre_exec(move || enter(fd));
        }
        Some(command.status().unwrap().code().unwrap_or(-1))
    }

    #[test]
    fn a_sandboxed_program_reads_what_it_is_given_and_runs_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let allowed = dir.path().join("allowed");
        std::fs::create_dir(&allowed).unwrap();
        let allowed = [allowed];
        std::fs::write(allowed[0].join("a"), "a").unwrap();
        std::fs::write(dir.path().join("secret"), "s").unwrap();
        let cat = "/bin/cat";
        let Some(code) = sandboxed(&allowed, cat, &[allowed[0].join("a").to_str().unwrap()]) else {
            eprintln!("no Landlock here: nothing to test");
            return;
        };
        assert_eq!(code, 0, "reading what it was given");
        let secret = dir.path().join("secret");
        assert_ne!(
            sandboxed(&allowed, cat, &[secret.to_str().unwrap()]),
            Some(0),
            "reading outside"
        );
        // A shell may not start another program (here `cat`), nor write.
        let sh = "/bin/sh";
        let script = format!("cat {}", allowed[0].join("a").display());
        assert_ne!(
            sandboxed(&allowed, sh, &["-c", &script]),
            Some(0),
            "running another program"
        );
        let write = format!("echo x > {}", allowed[0].join("b").display());
        assert_ne!(sandboxed(&allowed, sh, &["-c", &write]), Some(0), "writing");
    }

    #[test]
    fn a_sandboxed_program_writes_only_in_the_directory_it_is_given() {
        use std::os::unix::process::CommandExt;
        let dir = tempfile::tempdir().unwrap();
        let writable = dir.path().join("index");
        let read_only = dir.path().join("task");
        std::fs::create_dir(&writable).unwrap();
        std::fs::create_dir(&read_only).unwrap();
        let sh = Path::new("/bin/sh");
        let Some(sandbox) =
            Sandbox::reading_and_writing(sh, std::slice::from_ref(&read_only), Some(&writable))
                .unwrap()
        else {
            eprintln!("no Landlock here: nothing to test");
            return;
        };
        let run = |script: String| {
            let fd = sandbox.fd();
            let mut command = std::process::Command::new(sh);
            command.args(["-c", &script]);
            // SAFETY: `enter` makes system calls only.
            unsafe {
                command.pre_exec(move || enter(fd));
            }
            command.status().unwrap().success()
        };
        // Files made and written over (git's lock file, renamed over its index, is tested
        // where git writes one: tests/it/private_index.rs).
        let index = writable.join("index").display().to_string();
        assert!(run(format!("echo a > {index}.lock && echo b > {index}")));
        assert!(!run(format!("echo x > {}", read_only.join("x").display())));
        assert!(!run(format!("echo x > {}", dir.path().join("x").display())));
        assert!(!run(format!("mkdir {}", writable.join("sub").display())));
    }
}
