//! The broker of `validator run`. validator's own hooks are started by the agent, so under
//! `run` they are confined with it and could not write validator's state (attempts, sessions,
//! the event log, the call records). So `run` stays outside the confinement and runs each hook
//! for the one the agent started, on the operator's rules and the run's own task: what a hook
//! is handed (by the agent, or by a worker that finds the socket) never chooses them. The hook
//! inside only relays its input and the answer, over a socket in a directory of validator's
//! that no confined process can write.

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Names the broker's socket in the environment of the agent, and so of its hooks.
pub(crate) const BROKER_ENV: &str = "VALIDATOR_BROKER";

/// Hooks judged at once; one more waits for its turn.
const MAX_AT_ONCE: usize = 16;

/// Largest request header read.
const MAX_HEADER: u64 = 4096;

/// How long a relayed hook's request (header and input) may take to arrive.
const REQUEST_TIME: Duration = Duration::from_secs(5);

/// How much longer than its own deadline a hook is given before it is killed.
const GRACE: Duration = Duration::from_secs(5);

/// What the hook inside hands the broker, before its input.
#[derive(Debug, Serialize, Deserialize)]
struct Request {
    agent: String,
    deadline_ms: u64,
    cwd: PathBuf,
}

/// The hook's answer, as the broker's hook gave it.
#[derive(Debug, Serialize, Deserialize)]
struct Response {
    code: u8,
    stdout: String,
    stderr: String,
}

/// The broker's listening socket and the directory holding it (removed when dropped).
pub(crate) struct Broker {
    listener: UnixListener,
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

/// What the broker judges with: the operator's rules file and the run's task.
#[derive(Clone)]
pub(crate) struct Judged {
    pub(crate) rules: PathBuf,
    pub(crate) task_dir: PathBuf,
    pub(crate) task: String,
}

impl Broker {
    /// A socket in a fresh directory of the system's temporary directory (mode 0700).
    pub(crate) fn bind() -> Result<Broker, String> {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::Builder::new()
            .prefix("validator-broker-")
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()
            .map_err(|err| format!("cannot make the broker's directory: {err}"))?;
        let socket = dir.path().join("hooks.sock");
        let listener = UnixListener::bind(&socket)
            .map_err(|err| format!("cannot listen on {}: {err}", socket.display()))?;
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))
            .map_err(|err| format!("cannot keep {} to this user: {err}", socket.display()))?;
        Ok(Broker {
            listener,
            socket,
            _dir: dir,
        })
    }

    pub(crate) fn socket(&self) -> &Path {
        &self.socket
    }

    /// Serves hooks on a thread of its own until the process ends.
    pub(crate) fn serve(self, judged: Judged) {
        std::thread::spawn(move || {
            let at_once = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let _keep = &self._dir;
            for stream in self.listener.incoming() {
                let Ok(stream) = stream else { continue };
                let judged = judged.clone();
                let at_once = at_once.clone();
                // Full: this one is refused at once (its hook holds the call), never queued
                // behind connections that may never finish.
                if at_once.fetch_add(1, std::sync::atomic::Ordering::AcqRel) >= MAX_AT_ONCE {
                    at_once.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
                    continue;
                }
                std::thread::spawn(move || {
                    if let Err(why) = answer(stream, &judged) {
                        tracing::warn!("validator run: a hook was not relayed: {why}");
                    }
                    at_once.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
                });
            }
        });
    }
}

/// Runs one relayed hook: `validator -c RULES hook AGENT --task-dir DIR --task T`, its input
/// the request's, in the request's directory where that lies in the task.
fn answer(mut stream: UnixStream, judged: &Judged) -> Result<(), String> {
    let io = |err: std::io::Error| err.to_string();
    // The whole request must come within a few seconds, however slowly it trickles in.
    let until = std::time::Instant::now() + REQUEST_TIME;
    let left = || {
        until
            .checked_duration_since(std::time::Instant::now())
            .filter(|left| !left.is_zero())
            .ok_or_else(|| "its request did not come in time".to_owned())
    };
    stream.set_read_timeout(Some(left()?)).map_err(io)?;
    let mut header = Vec::new();
    let mut byte = [0u8; 1];
    while header.len() as u64 <= MAX_HEADER {
        stream.read_exact(&mut byte).map_err(io)?;
        if byte[0] == b'\n' {
            break;
        }
        header.push(byte[0]);
    }
    let request: Request = serde_json::from_slice(&header).map_err(|err| err.to_string())?;
    let agent = match request.agent.as_str() {
        agent @ ("claude" | "codex" | "gemini" | "opencode") => agent,
        other => {
            return Err(format!("no agent is named {}", validator_text::name(other)));
        }
    };
    let mut input = Vec::new();
    let mut chunk = [0u8; 64 * 1024];
    loop {
        stream.set_read_timeout(Some(left()?)).map_err(io)?;
        let read = stream.read(&mut chunk).map_err(io)?;
        if read == 0 {
            break;
        }
        input.extend_from_slice(&chunk[..read]);
        if input.len() > validator::hook::MAX_INPUT {
            return Err("its input is too long".into());
        }
    }
    let deadline = Duration::from_millis(request.deadline_ms.min(10 * 60 * 1000));
    let cwd = match request.cwd.canonicalize() {
        Ok(cwd) if cwd.starts_with(&judged.task_dir) => cwd,
        _ => judged.task_dir.clone(),
    };
    let exe = std::env::current_exe().map_err(io)?;
    let mut child = Command::new(exe)
        .arg("-c")
        .arg(&judged.rules)
        .args(["hook", agent, "--task-dir"])
        .arg(&judged.task_dir)
        .args(["--task", &judged.task])
        .arg("--deadline")
        .arg(format!("{}ms", deadline.as_millis()))
        .current_dir(cwd)
        .env_remove(BROKER_ENV)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(io)?;
    if let Some(mut stdin) = child.stdin.take() {
        // A hook that reads no more of its input is no reason to stop relaying its answer.
        let _ = stdin.write_all(&input);
    }
    let output = wait_with_deadline(child, deadline + GRACE)?;
    let response = Response {
        code: output
            .status
            .code()
            .and_then(|c| u8::try_from(c).ok())
            .unwrap_or(1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    let text = serde_json::to_vec(&response).map_err(|err| err.to_string())?;
    stream.write_all(&text).map_err(io)
}

/// The child's output, or an error once `limit` has passed (the child is killed).
fn wait_with_deadline(
    child: std::process::Child,
    limit: Duration,
) -> Result<std::process::Output, String> {
    let pid = child.id();
    let (done, wait) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    match wait.recv_timeout(limit) {
        Ok(output) => output.map_err(|err| err.to_string()),
        Err(_) => {
            if let Ok(pid) = i32::try_from(pid) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            Err(format!("the hook did not answer within {limit:?}"))
        }
    }
}

/// The hook's side under `validator run`: hands its input to the broker named by
/// [`BROKER_ENV`] and gives back its answer, exit code and all. `None` when there is no broker
/// to hand it to; a broker that does not answer is an error (exit 1: the agent's hook command
/// then holds the call, as for any hook that fails).
pub(crate) fn relay(agent: &str, deadline: Duration) -> Option<ExitCode> {
    let socket = std::env::var_os(BROKER_ENV).filter(|v| !v.is_empty())?;
    Some(match relayed(Path::new(&socket), agent, deadline) {
        Ok(response) => {
            let _ = std::io::stdout().write_all(response.stdout.as_bytes());
            let _ = std::io::stderr().write_all(response.stderr.as_bytes());
            ExitCode::from(response.code)
        }
        Err(why) => {
            eprintln!(
                "validator hook {agent}: not judged: validator run's broker did not answer ({why})"
            );
            ExitCode::from(super::EXIT_HOOK_ERROR)
        }
    })
}

/// Whether `pid` is this process's parent, or its parent's, and so on up.
fn is_ancestor(pid: i32) -> bool {
    let mut at = nix::unistd::getppid().as_raw();
    for _ in 0..64 {
        if at == pid {
            return true;
        }
        if at <= 1 {
            return false;
        }
        // `/proc/PID/stat`: "pid (comm) state ppid …"; comm may hold spaces and parentheses.
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{at}/stat")) else {
            return false;
        };
        let Some(parent) = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|ppid| ppid.parse().ok())
        else {
            return false;
        };
        at = parent;
    }
    false
}

fn relayed(socket: &Path, agent: &str, deadline: Duration) -> Result<Response, String> {
    let io = |err: std::io::Error| err.to_string();
    // Read by the deadline: an agent that never closes the hook's input gets a held call, not
    // a hook that waits forever.
    let (read, got) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut input = Vec::new();
        let result = std::io::stdin()
            .lock()
            .take(validator::hook::MAX_INPUT as u64 + 1)
            .read_to_end(&mut input)
            .map(|_| input);
        let _ = read.send(result);
    });
    let input = got
        .recv_timeout(deadline)
        .map_err(|_| "its input did not end by the deadline".to_owned())?
        .map_err(io)?;
    let mut stream = UnixStream::connect(socket).map_err(io)?;
    // Only the `validator run` this hook runs under: a socket a worker named (in a settings
    // file it wrote, say) would answer for validator.
    let peer = nix::sys::socket::getsockopt(&stream, nix::sys::socket::sockopt::PeerCredentials)
        .map_err(|err| format!("cannot tell who listens on it: {err}"))?;
    if !is_ancestor(peer.pid()) {
        return Err(format!(
            "what listens on it (pid {}) is no validator run this hook runs under",
            peer.pid()
        ));
    }
    stream
        .set_read_timeout(Some(deadline + GRACE + Duration::from_secs(5)))
        .map_err(io)?;
    let request = Request {
        agent: agent.to_owned(),
        deadline_ms: u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX),
        cwd: std::env::current_dir().unwrap_or_default(),
    };
    let mut header = serde_json::to_vec(&request).map_err(|err| err.to_string())?;
    header.push(b'\n');
    stream.write_all(&header).map_err(io)?;
    stream.write_all(&input).map_err(io)?;
    stream.shutdown(std::net::Shutdown::Write).map_err(io)?;
    let mut answer = Vec::new();
    stream
        .take(2 * validator::hook::MAX_INPUT as u64)
        .read_to_end(&mut answer)
        .map_err(io)?;
    serde_json::from_slice(&answer).map_err(|err| format!("its answer is damaged: {err}"))
}
