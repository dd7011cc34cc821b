//! `validator` is a quality gate that sits outside the worker it judges. A worker (an AI coding
//! agent, a script, a CI job) writes its output to a task directory and signals "done"; the
//! validator runs the rules file's pipeline of gates over that output and produces a verdict:
//! PASS, or FAIL with reasons the worker can act on.
//!
//! The engine is a plain function from (rules, pipeline, task) to a [`Verdict`] value: it does
//! no printing and owns no process-wide state, so the one-shot `check`, a long-running watcher
//! and agent hook adapters can all call it.
//!
//! ```no_run
//! use std::path::Path;
//! use validator::{Rules, Signal, Task};
//!
//! let rules = Rules::load(Path::new("validator.yaml"))?;
//! let task = Task::new("svc-auth", Path::new("staging/svc-auth"))?
//!     .with_signal(Signal::read(Path::new("staging/svc-auth.done"))?);
//! let pipeline = rules.pipeline_for(&task.name, None)?;
//! let verdict = validator::run(&rules, pipeline, &task);
//! println!("{}", verdict.verdict);
//! # Ok::<(), validator::Error>(())
//! ```

pub mod atomic;
pub mod cache;
pub mod config;
pub mod contract;
pub mod duration;
pub mod error;
pub mod events;
pub mod files;
pub mod globs;
pub mod hook;
pub mod init;
pub mod judge;
pub mod pipeline;
pub mod process;
pub mod progress;
pub mod reaper;
pub mod rules;
pub mod sandbox;
pub mod signal;
pub mod snapshot;
pub mod staging;
pub mod state;
pub mod task;
pub mod taskdir;
pub mod text;
pub mod timestamp;
pub mod verdict;
pub mod watch;
pub mod yaml;

pub use config::Rules;
pub use error::{ConfigError, Error};
pub use pipeline::run;
pub use signal::Signal;
pub use task::Task;
pub use verdict::{Decision, Verdict};
