//! Landlock sandboxes for the programs validator runs that must not change the worker's files.
//!
//! - git over a worker's own files ([`Sandbox::reading`], [`Sandbox::reading_and_writing`]):
//!   it may read the directories it is given and the system's libraries, execute nothing but
//!   itself (no shell, so no filter, textconv or hook a worker configured can run), write
//!   nothing (but in a directory of validator's own it is given: where git keeps validator's
//!   private index of a repository), connect nowhere and signal nothing outside the sandbox.
//! - a reviewer ([`Sandbox::confining`]): it may read and execute anything (its own program,
//!   its libraries, its home and configuration to authenticate, the task) but what it is told
//!   is hidden (validator's own: its key, state, rules directory), write only in the
//!   directories it is given (a scratch directory of its run, those the gate lists under
//!   `writable:`) and `/dev/null`, connect by TCP only to the ports it is given, signal
//!   nothing outside the sandbox, and change no file's mode, owner, times, extended
//!   attributes or flags (`chattr`'s ioctls; a seccomp filter: Landlock does not govern
//!   those), and use no io_uring (whose requests set extended attributes past that filter).
//!
//! Checks made before git starts (which repository, which programs its config names) can be
//! raced by a worker process that keeps running after it signalled done; the kernel's rules
//! cannot. They are built in the parent and entered in the child between fork and exec. Where
//! the kernel has no Landlock (before 5.13, or one that disables it), validator runs git
//! without it, says so once, and relies on those checks alone; a reviewer runs too, and its
//! gate's summary says what was not enforced (and, for the network, on a kernel whose Landlock
//! predates ABI 4, Linux 6.7). A debug build run with `VALIDATOR_DEBUG_NO_SANDBOX` set behaves
//! so, for the tests of those checks.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Once;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath,
    PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope,
};

/// The Landlock ABI whose rights are asked for (on an older kernel, what it has of them).
pub const ABI_ASKED: ABI = ABI::V6;

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

/// The first Landlock ABI that restricts TCP connections (Linux 6.7).
const ABI_NETWORK: i32 = 4;

/// A ruleset ready to be entered by a child process.
#[derive(Debug)]
pub struct Sandbox {
    ruleset: OwnedFd,
    /// Whether the program may execute others (a reviewer's CLI and its helpers; not git).
    /// Such a program is also kept from changing files' modes, owners, times and extended
    /// attributes, which Landlock does not govern ([`METADATA_CALLS`]).
    runs_programs: bool,
}

/// What a child needs to enter a sandbox: the ruleset's descriptor, and whether the metadata
/// calls are refused too.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    fd: i32,
    guards_metadata: bool,
}

/// What a reviewer's sandbox allows besides reading and executing, and what it may not read.
#[derive(Debug, Clone, Copy)]
pub struct Confinement<'a> {
    /// Directories it may write beneath (made, replaced, removed, renamed within them); none
    /// may be or hold one of `hidden` (one inside those is the caller's to refuse or allow).
    pub writable: &'a [PathBuf],
    /// TCP ports it may connect to; `None`: any connection (no network rule).
    pub ports: Option<&'a [u16]>,
    /// Validator's own (its signing key, state, rules directory), each with what it is: not
    /// read, listed or executed, nor anything beneath it.
    pub hidden: &'a [(PathBuf, &'a str)],
    /// What it must read even inside one of those (the task, its own program): beneath such a
    /// path, a hidden one deeper down is hidden again.
    pub readable: &'a [PathBuf],
}

/// Most directory entries looked at to build a reviewer's read rules; a walk past it is an
/// error, never a sandbox that reads too much.
const MAX_WALKED: usize = 200_000;

/// A reviewer's sandbox as this kernel can enforce it.
#[derive(Debug)]
pub struct Confined {
    /// `None` where there is no Landlock: the program runs without a sandbox.
    pub sandbox: Option<Sandbox>,
    /// What is not enforced here and why, for the gate's summary; `None` when all of it is.
    pub unenforced: Option<String>,
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
        let ruleset = allow_paths(ruleset, rules)?;
        match Option::<OwnedFd>::from(ruleset) {
            Some(ruleset) => Ok(Some(Sandbox {
                ruleset,
                runs_programs: false,
            })),
            None => {
                warn_once("this kernel has no Landlock");
                Ok(None)
            }
        }
    }

    /// A reviewer's sandbox (see the module's doc): read and execute anywhere, write beneath
    /// `confinement.writable` only, connect by TCP to its ports only. `Err` when the rules
    /// cannot be built; where the kernel cannot enforce them, what it cannot is said in
    /// [`Confined::unenforced`], never left out silently.
    pub fn confining(confinement: Confinement<'_>) -> Result<Confined, String> {
        let unconfined = |why: String| {
            Ok(Confined {
                sandbox: None,
                unenforced: Some(why),
            })
        };
        if cfg!(debug_assertions) && std::env::var_os("VALIDATOR_DEBUG_NO_SANDBOX").is_some() {
            return unconfined("not sandboxed (VALIDATOR_DEBUG_NO_SANDBOX)".into());
        }
        let abi = kernel_abi();
        if abi < 1 {
            return unconfined("not sandboxed: this kernel has no Landlock, so the reviewer could write anywhere validator can and read validator's own files (its signing key, state and rules directory)".into());
        }
        let hidden: Vec<(PathBuf, &str)> = confinement
            .hidden
            .iter()
            .map(|(path, what)| (real(path), *what))
            .collect();
        let kept: Vec<PathBuf> = confinement.readable.iter().map(|p| real(p)).collect();
        refuse_other_names(&hidden)?;
        for dir in confinement.writable {
            let dir = real(dir);
            if let Some((path, what)) = hidden.iter().find(|(path, _)| path.starts_with(&dir)) {
                return Err(format!(
                    "the reviewer may write in {}, which is or holds validator's {what} ({}); name a directory of its own",
                    dir.display(),
                    path.display()
                ));
            }
        }
        let read = AccessFs::ReadFile | AccessFs::ReadDir | AccessFs::Execute;
        let write = AccessFs::from_all(ABI_ASKED) & !AccessFs::IoctlDev;
        let mut rules: Vec<(PathBuf, BitFlags<AccessFs>)> = vec![(
            PathBuf::from("/dev/null"),
            AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate,
        )];
        let marks: Vec<&Path> = hidden.iter().map(|(path, _)| path.as_path()).collect();
        let mut walk = Walk {
            hidden: &marks,
            kept: &kept,
            grants: Vec::new(),
            left: MAX_WALKED,
        };
        walk.visit(Path::new("/"), true)?;
        rules.extend(walk.grants.into_iter().map(|path| (path, read)));
        rules.extend(confinement.writable.iter().map(|dir| (dir.clone(), write)));
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(ABI_ASKED))
            .and_then(|ruleset| ruleset.scope(Scope::from_all(ABI_ASKED)));
        if confinement.ports.is_some() {
            ruleset = ruleset.and_then(|ruleset| {
                ruleset.handle_access(AccessNet::ConnectTcp | AccessNet::BindTcp)
            });
        }
        let created = ruleset
            .and_then(|ruleset| ruleset.create())
            .map_err(|err| format!("cannot build the reviewer's sandbox: {err}"))?;
        let mut created = allow_paths(created, rules)?;
        for &port in confinement.ports.unwrap_or_default() {
            created = created
                .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
                .map_err(|err| format!("cannot allow port {port}: {err}"))?;
        }
        let Some(ruleset) = Option::<OwnedFd>::from(created) else {
            return unconfined("not sandboxed: this kernel's Landlock could not be used".into());
        };
        let mut notes: Vec<String> = hidden
            .iter()
            .filter(|(path, _)| kept.contains(path))
            .map(|(path, what)| {
                format!(
                    "validator's {what} ({}) is also the task or the reviewer's own directory, so the reviewer reads it",
                    path.display()
                )
            })
            .collect();
        if confinement.ports.is_some() && abi < ABI_NETWORK {
            notes.push(format!("connections not restricted: this kernel's Landlock (ABI {abi}) cannot restrict the network (ABI {ABI_NETWORK}, Linux 6.7)"));
        }
        let unenforced = (!notes.is_empty()).then(|| notes.join("; "));
        Ok(Confined {
            sandbox: Some(Sandbox {
                ruleset,
                runs_programs: true,
            }),
            unenforced,
        })
    }

    /// Whether the sandboxed program may start others (so it gets a cgroup like any command).
    pub(crate) fn runs_programs(&self) -> bool {
        self.runs_programs
    }

    /// What a child enters ([`enter`]); valid while the sandbox lives.
    pub(crate) fn fd(&self) -> Entry {
        if self.runs_programs {
            // Built here, in the parent: the child only reads it.
            std::sync::LazyLock::force(&METADATA_FILTER);
        }
        Entry {
            fd: self.ruleset.as_raw_fd(),
            guards_metadata: self.runs_programs,
        }
    }
}

/// The paths to grant reading (and executing) so that everything is read but `hidden` (real
/// paths) and what is beneath them ([`Walk`]).
pub fn readable_but(hidden: &[&Path]) -> Result<Vec<PathBuf>, String> {
    let mut walk = Walk {
        hidden,
        kept: &[],
        grants: Vec::new(),
        left: MAX_WALKED,
    };
    walk.visit(Path::new("/"), true)?;
    Ok(walk.grants)
}

/// The walk that grants reading everywhere but validator's own: Landlock only adds rights to
/// a tree, so `/` less a path is every entry on the way down to it but the one on the way, and
/// the path's siblings; a directory on the way is not itself granted (it cannot be listed),
/// and what appears in it after the walk is not readable. Links are not granted (the kernel
/// checks what they lead to, where that is), so none can lead a grant into a hidden path.
struct Walk<'a> {
    hidden: &'a [&'a Path],
    kept: &'a [PathBuf],
    grants: Vec<PathBuf>,
    /// Entries the walk may still look at.
    left: usize,
}

impl Walk<'_> {
    /// Grants what of `path` is to be read; `inherited`: whether what holds it is. The
    /// deepest mark decides: a path kept readable inside a hidden one is read, a hidden one
    /// inside that is not (a path both hidden and kept is kept: it is the reviewer's to read).
    fn visit(&mut self, path: &Path, inherited: bool) -> Result<(), String> {
        let readable = if self.kept.iter().any(|kept| kept == path) {
            true
        } else if self.hidden.contains(&path) {
            false
        } else {
            inherited
        };
        let beneath = |marked: &Path| marked != path && marked.starts_with(path);
        let turns = if readable {
            self.hidden.iter().any(|hidden| beneath(hidden))
        } else {
            self.kept.iter().any(|kept| beneath(kept))
        };
        if !turns {
            if readable {
                self.grants.push(path.to_path_buf());
            }
            return Ok(());
        }
        let cannot = |err: std::io::Error| {
            format!(
                "cannot list {} to keep validator's own files from the reviewer: {err}",
                path.display()
            )
        };
        for entry in std::fs::read_dir(path).map_err(cannot)? {
            let entry = entry.map_err(cannot)?;
            self.left = self.left.checked_sub(1).ok_or_else(|| {
                format!(
                    "more than {MAX_WALKED} entries on the way to validator's own files; the reviewer's sandbox cannot be built"
                )
            })?;
            if entry.file_type().map_err(cannot)?.is_symlink() {
                continue;
            }
            self.visit(&entry.path(), readable)?;
        }
        Ok(())
    }
}

/// Refuses a hidden file that has other names: Landlock grants by where a name is, so a hard
/// link to validator's key (which whoever can write the task can make) lies where it was
/// granted, and hiding the key's own path would not keep it from the reviewer.
pub fn refuse_other_names(hidden: &[(PathBuf, &str)]) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    for (path, what) in hidden {
        if let Ok(meta) = std::fs::symlink_metadata(path)
            && meta.is_file()
            && meta.nlink() > 1
        {
            return Err(format!(
                "validator's {what} ({}) has {} names (hard links), and the reviewer could read it by one not hidden; remove the other names (`find / -samefile {}`)",
                path.display(),
                meta.nlink(),
                shell_words::quote(&path.to_string_lossy())
            ));
        }
    }
    Ok(())
}

/// `path` made absolute with its links resolved, as far as it exists (the rest as written),
/// so it compares with what a walk from `/` meets.
pub fn real(path: &Path) -> PathBuf {
    let path = if path.as_os_str().is_empty() {
        Path::new(".")
    } else {
        path
    };
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(resolved) = existing.canonicalize() {
            return rest
                .iter()
                .rev()
                .fold(resolved, |whole, part| whole.join(part));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => return absolute,
        }
    }
}

/// Adds a rule for each path and its access (a file's access cut to what a file can have); a
/// path this system does not have needs no rule.
pub fn allow_paths(
    mut ruleset: landlock::RulesetCreated,
    rules: Vec<(PathBuf, BitFlags<AccessFs>)>,
) -> Result<landlock::RulesetCreated, String> {
    for (path, access) in rules {
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
    Ok(ruleset)
}

/// Restricts the calling process to the ruleset, and for a program that runs others, refuses
/// it the metadata calls. Called in the child between fork and exec, so it makes system calls
/// and nothing else (no allocation, no lock: the filter was built in the parent).
pub(crate) fn enter(entry: Entry) -> std::io::Result<()> {
    use nix::libc;
    // SAFETY: plain system calls on integers and on the filter, which lives as long as the
    // process; `fd` is open in the child (inherited).
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::syscall(libc::SYS_landlock_restrict_self, entry.fd, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if entry.guards_metadata {
            let filter: &[libc::sock_filter] = &METADATA_FILTER;
            let program = libc::sock_fprog {
                len: filter.len() as u16,
                filter: filter.as_ptr().cast_mut(),
            };
            let program: *const libc::sock_fprog = &program;
            if libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, program) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// The system calls that change a file's mode, owner, times, extended attributes or flags:
/// Landlock does not govern them, so a reviewer confined to writing its own directories could
/// still `chmod`, `touch`, `chown` or `chattr +i` the worker's files (or validator's). Each
/// fails with EPERM instead, as do the ioctls of [`FLAG_IOCTLS`] and io_uring, whose requests
/// include setting and removing extended attributes without any of these calls.
#[cfg(target_arch = "x86_64")]
const METADATA_CALLS: &[u32] = &[
    90, 91, 268, 452, // chmod, fchmod, fchmodat, fchmodat2
    92, 93, 94, 260, // chown, fchown, lchown, fchownat
    132, 235, 261, 280, // utime, utimes, futimesat, utimensat
    188, 189, 190, 463, // setxattr, lsetxattr, fsetxattr, setxattrat
    197, 198, 199, 466, // removexattr, lremovexattr, fremovexattr, removexattrat
    469, // file_setattr (a file's fsxattr flags: immutable, append-only)
    425, 426,
    427, // io_uring_setup, io_uring_enter, io_uring_register: a ring's requests
         // (IORING_OP_SETXATTR, IORING_OP_FSETXATTR) are made for the caller, never as the calls above
];
#[cfg(target_arch = "aarch64")]
const METADATA_CALLS: &[u32] = &[
    52, 53, 452, // fchmod, fchmodat, fchmodat2
    55, 54, // fchown, fchownat
    88, // utimensat
    5, 6, 7, 463, // setxattr, lsetxattr, fsetxattr, setxattrat
    14, 15, 16, 466, // removexattr, lremovexattr, fremovexattr, removexattrat
    469, // file_setattr
    425, 426,
    427, // io_uring_setup, io_uring_enter, io_uring_register: a ring's requests
         // (IORING_OP_SETXATTR, IORING_OP_FSETXATTR) are made for the caller, never as the calls above
];
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const METADATA_CALLS: &[u32] = &[];

/// `ioctl`'s number, whose requests in [`FLAG_IOCTLS`] are refused.
#[cfg(target_arch = "x86_64")]
const IOCTL: u32 = 16;
#[cfg(target_arch = "aarch64")]
const IOCTL: u32 = 29;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const IOCTL: u32 = u32::MAX;

/// The ioctl requests that change a file's flags (`chattr`: immutable, append-only, no-dump,
/// …): `FS_IOC_SETFLAGS`, its 32-bit form `FS_IOC32_SETFLAGS`, and `FS_IOC_FSSETXATTR`. The
/// kernel reads a request as 32 bits, so only those of the argument are compared.
const FLAG_IOCTLS: &[u32] = &[0x4008_6602, 0x4004_6602, 0x401c_5820];

/// Where the low 32 bits of a call's second argument (an ioctl's request) are in
/// `struct seccomp_data`: after `nr`, `arch` and `instruction_pointer`, `args[1]`.
#[cfg(target_endian = "little")]
const REQUEST_AT: u32 = 24;
#[cfg(target_endian = "big")]
const REQUEST_AT: u32 = 28;

/// The audit architecture of the calls above: a call made under another (a 32-bit program's)
/// is refused whatever it is, as its numbers mean other calls.
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const AUDIT_ARCH: u32 = 0;

/// x86-64's x32 calls carry this bit; they are refused whatever they are.
const X32_BIT: u32 = 0x4000_0000;

/// The seccomp program refusing [`METADATA_CALLS`] and [`FLAG_IOCTLS`]: load the
/// architecture, refuse another; load the call's number, refuse x32's and each listed; an
/// ioctl: load its request, refuse each listed; allow the rest.
static METADATA_FILTER: std::sync::LazyLock<Vec<nix::libc::sock_filter>> =
    std::sync::LazyLock::new(|| {
        use nix::libc::{SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO, sock_filter};
        const LOAD: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
        const JEQ: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
        const JGE: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
        const RET: u16 = 0x06; // BPF_RET | BPF_K
        let refuse = SECCOMP_RET_ERRNO | nix::libc::EPERM as u32;
        let op = |code, jt, jf, k| sock_filter { code, jt, jf, k };
        let calls = METADATA_CALLS.len();
        // The refusal is the last instruction: 5 before the calls, 3 between them and the
        // requests, the allow after the requests, then it.
        let refusal = calls + FLAG_IOCTLS.len() + 9;
        // From the instruction after the jump at `at`, how far the refusal is.
        let to_refusal = |at: usize| u8::try_from(refusal - at - 1).unwrap_or(u8::MAX);
        let mut program = vec![
            op(LOAD, 0, 0, 4),                  // 0: the architecture
            op(JEQ, 1, 0, AUDIT_ARCH),          // 1: ours: skip the next
            op(RET, 0, 0, refuse),              // 2: another's: refused
            op(LOAD, 0, 0, 0),                  // 3: the call's number
            op(JGE, to_refusal(4), 0, X32_BIT), // 4: an x32 call: refused
        ];
        for (i, &call) in METADATA_CALLS.iter().enumerate() {
            program.push(op(JEQ, to_refusal(5 + i), 0, call));
        }
        program.push(op(JEQ, 1, 0, IOCTL)); // an ioctl: skip the next
        program.push(op(RET, 0, 0, SECCOMP_RET_ALLOW));
        program.push(op(LOAD, 0, 0, REQUEST_AT));
        for (i, &request) in FLAG_IOCTLS.iter().enumerate() {
            program.push(op(JEQ, to_refusal(calls + 8 + i), 0, request));
        }
        program.push(op(RET, 0, 0, SECCOMP_RET_ALLOW));
        program.push(op(RET, 0, 0, refuse));
        debug_assert_eq!(program.len(), refusal + 1);
        program
    });

/// The Landlock ABI this kernel offers; 0 when it has none (or disables it).
pub fn kernel_abi() -> i32 {
    use nix::libc;
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: asks the kernel for a number; no memory is passed.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    i32::try_from(version).unwrap_or(0).max(0)
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

    #[test]
    fn a_confined_program_runs_others_writes_only_where_it_may_and_connects_only_to_its_ports() {
        use std::os::unix::process::CommandExt;
        let dir = tempfile::tempdir().unwrap();
        let scratch = dir.path().join("scratch");
        let task = dir.path().join("task");
        std::fs::create_dir(&scratch).unwrap();
        std::fs::create_dir(&task).unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let writable = [scratch.clone()];
        let confined = Sandbox::confining(Confinement {
            writable: &writable,
            ports: Some(&[443]),
            hidden: &[],
            readable: &[],
        })
        .unwrap();
        let Some(sandbox) = confined.sandbox else {
            eprintln!("no Landlock here: nothing to test");
            return;
        };
        assert!(sandbox.runs_programs());
        let run = |script: String| {
            let fd = sandbox.fd();
            let mut command = std::process::Command::new("/bin/sh");
            command.args(["-c", &script]);
            // SAFETY: `enter` makes system calls only.
            unsafe {
                command.pre_exec(move || enter(fd));
            }
            command.status().unwrap().success()
        };
        // Other programs run (`mkdir`, `cat`), and the scratch directory is theirs to use.
        let inner = scratch.join("sub");
        assert!(run(format!(
            "mkdir {0} && echo a > {0}/f && mv {0}/f {0}/g && cat {0}/g > /dev/null",
            inner.display()
        )));
        assert!(!run(format!("echo x > {}", task.join("x").display())));
        assert!(!run(format!("echo x > {}", dir.path().join("x").display())));
        // No mode, time or owner of any file changes, the task's least of all.
        let mine = task.join("mine");
        std::fs::write(&mine, "x").unwrap();
        for change in ["chmod 600", "touch -d 2001-01-01", "chown 0:0"] {
            assert!(!run(format!("{change} {}", mine.display())), "{change}");
        }
        assert!(!run(format!("chmod 600 {}/g", inner.display())));
        // Nor any file's flags (`chattr` reads them, then sets them with FS_IOC_SETFLAGS).
        if Path::new("/usr/bin/chattr").exists()
            && std::process::Command::new("chattr")
                .arg("-d")
                .arg(&mine)
                .status()
                .is_ok_and(|status| status.success())
        {
            assert!(!run(format!("chattr +d {}", mine.display())), "chattr");
            assert!(!run(format!("chattr +d {}/g", inner.display())), "chattr");
        }
        if confined.unenforced.is_none() && kernel_abi() >= ABI_NETWORK {
            let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port}");
            let bash = |script: &str| {
                let fd = sandbox.fd();
                let mut command = std::process::Command::new("bash");
                command.args(["-c", script]);
                // SAFETY: `enter` makes system calls only.
                unsafe {
                    command.pre_exec(move || enter(fd));
                }
                command.status().is_ok_and(|status| status.success())
            };
            assert!(!bash(&connect), "connected to a port not given");
        }
    }

    #[test]
    fn a_confined_program_reads_nothing_hidden_but_what_is_kept_inside_it() {
        use std::os::unix::process::CommandExt;
        let dir = tempfile::tempdir().unwrap();
        let own = dir.path().join("own");
        let kept = own.join("task");
        let deeper = kept.join("state");
        std::fs::create_dir_all(&deeper).unwrap();
        std::fs::write(own.join("key"), "k").unwrap();
        std::fs::write(kept.join("work"), "w").unwrap();
        std::fs::write(deeper.join("record"), "r").unwrap();
        std::fs::write(dir.path().join("beside"), "b").unwrap();
        // A link beside the hidden directory, into it: the kernel judges where it leads.
        std::os::unix::fs::symlink(&own, dir.path().join("way-in")).unwrap();
        let hidden = [
            (own.clone(), "rules directory"),
            (deeper.clone(), "state directory"),
        ];
        let confined = Sandbox::confining(Confinement {
            writable: &[],
            ports: None,
            hidden: &hidden,
            readable: std::slice::from_ref(&kept),
        })
        .unwrap();
        let Some(sandbox) = confined.sandbox else {
            eprintln!("no Landlock here: nothing to test");
            return;
        };
        let cat = |path: &Path| {
            let fd = sandbox.fd();
            let mut command = std::process::Command::new("/bin/cat");
            command.arg(path).stdout(std::process::Stdio::null());
            // SAFETY: `enter` makes system calls only.
            unsafe {
                command.pre_exec(move || enter(fd));
            }
            command.status().unwrap().success()
        };
        assert!(cat(&dir.path().join("beside")), "a sibling on the way");
        assert!(cat(&kept.join("work")), "kept inside the hidden one");
        assert!(cat(Path::new("/etc/hostname")) || !Path::new("/etc/hostname").exists());
        assert!(!cat(&own.join("key")), "hidden");
        assert!(!cat(&deeper.join("record")), "hidden inside what is kept");
        assert!(!cat(&dir.path().join("way-in/key")), "through a link");
        // A writable directory that holds a hidden one is refused.
        let refused = Sandbox::confining(Confinement {
            writable: std::slice::from_ref(&kept),
            ports: None,
            hidden: &hidden,
            readable: &[],
        });
        assert!(refused.is_err());
    }
}
