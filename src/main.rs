//! The `validator` binary: the command line (`cli`) run under a guard that keeps the exit
//! codes' promise even should a bug panic.

#![forbid(unsafe_code)]

mod cli;
mod init;
mod progress;
mod watch;

use std::process::ExitCode;

use cli::{Command, EXIT_ERROR, EXIT_HOOK_ERROR, init_color, init_logging, print_error, run};

fn main() -> ExitCode {
    let cli = match cli::parse() {
        Ok(cli) => cli,
        Err(err) => {
            // clap exits 2 on a usage error; a mistyped hook command must not block the agent.
            // Any `hook` word counts, as options may come first (`-c FILE hook claude`).
            let hook = std::env::args().skip(1).any(|arg| arg == "hook");
            if hook && err.use_stderr() {
                let _ = err.print();
                return ExitCode::from(EXIT_HOOK_ERROR);
            }
            err.exit()
        }
    };
    let ansi = init_color(cli.color);
    init_logging(cli.verbose, cli.log_format, ansi);
    // A reader that closed its end (`validator rules check | head -2`) ends the output, as it
    // ends cat's: quietly, with the status a shell shows for a SIGPIPE. SIGPIPE itself stays
    // ignored, since a gate closing its stdin must never kill the watcher.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !closed_pipe_panic(info.payload()) {
            default_hook(info)
        }
    }));
    let hook = matches!(cli.command, Command::Hook { .. });
    // No input may panic validator; should a bug do so anyway, the exit code still keeps its
    // promise (2: could not judge; 1 for a hook, which must never block an agent by accident)
    // instead of Rust's 101, which no caller expects.
    let ran = std::panic::catch_unwind(|| run(cli));
    // What the gates leave (kept cgroups, processes re-parented here) ends with validator.
    validator_process::reaper::release_cgroups();
    validator_process::reaper::reap_adopted();
    match ran {
        Ok(Ok(code)) => code,
        Ok(Err(err)) if closed_pipe(&err) => ExitCode::from(EXIT_CLOSED_PIPE),
        Ok(Err(err)) => {
            print_error(&err);
            ExitCode::from(EXIT_ERROR)
        }
        Err(payload) if closed_pipe_panic(payload.as_ref()) => ExitCode::from(EXIT_CLOSED_PIPE),
        Err(_) => {
            eprintln!(
                "error: validator failed unexpectedly (the panic above); this is a bug in validator, please report it"
            );
            ExitCode::from(if hook { EXIT_HOOK_ERROR } else { EXIT_ERROR })
        }
    }
}

/// What a shell shows for a process a SIGPIPE ended (128 + 13).
const EXIT_CLOSED_PIPE: u8 = 141;

/// An error that is only the reader of stdout having gone away.
fn closed_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// `print!`'s panic when stdout's reader has gone away.
fn closed_pipe_panic(payload: &(dyn std::any::Any + Send)) -> bool {
    let text = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or_default();
    text.starts_with("failed printing to std") && text.contains("Broken pipe")
}
