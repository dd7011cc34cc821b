//! What validator asks of the kernel: starting and killing the commands it runs (their process
//! groups, output, deadlines, marks), reaping what they leave behind, confining them (Landlock
//! and seccomp), and opening files others may have planted (regular files only, never blocking,
//! capped). Every `unsafe` of validator is here, each with why it is sound; the other crates
//! forbid it.

mod command;
pub mod files;
pub mod kernel;
pub mod reaper;
pub mod sandbox;

pub use command::*;
