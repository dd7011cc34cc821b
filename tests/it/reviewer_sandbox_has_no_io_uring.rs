//! A reviewer's sandbox refuses io_uring: its requests (`IORING_OP_SETXATTR`,
//! `IORING_OP_FSETXATTR`, among others) are made by the kernel on the caller's behalf, never as
//! the system calls the seccomp filter refuses, so a reviewer with a ring could change the
//! worker's files' extended attributes all the same.

use crate::common::{Project, pipeline};
use crate::records_and_sandboxes_fail_closed::{issues, landlock};

#[test]
fn a_reviewer_cannot_reach_the_refused_file_calls_through_io_uring() {
    if !landlock() {
        eprintln!("no Landlock on this machine: the reviewer's sandbox cannot be shown");
        return;
    }
    let project = Project::new();
    project.file("work.txt", "the worker's work");
    // io_uring_setup(8, params): 425 on x86-64 and arm64 alike.
    let script = "#!/bin/sh\ncat > /dev/null\necho REJECTED\n/usr/bin/env python3 - <<'EOF'\nimport ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nparams = ctypes.create_string_buffer(120)\nfd = libc.syscall(425, 8, params)\nprint('- io_uring: ' + ('allowed' if fd >= 0 else 'errno ' + str(ctypes.get_errno())))\nEOF\n";
    project.root_file("reviewers/ring.sh", script);
    let path = project.path().join("reviewers/ring.sh");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    project.rules(&pipeline(&format!(
        "      - {{name: review, rule: review, run: [\"{}\"]}}\n",
        path.display()
    )));
    project.signal("STATUS: OK\n");
    let (_, verdict) = project.verdict();
    let said = issues(&verdict);
    if !said.contains("io_uring") {
        eprintln!("no python3 here: {said}");
        return;
    }
    assert!(said.contains("io_uring: errno 1"), "{said}");
}
