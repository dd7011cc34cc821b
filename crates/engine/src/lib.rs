//! `validator` is a quality gate that sits outside the worker it judges. A worker (an AI coding
//! agent, a script, a CI job) writes its output to a task directory and signals "done"; the
//! validator runs the rules file's pipeline of gates over that output and produces a verdict:
//! PASS, or FAIL with reasons the worker can act on.
//!
//! The library is the engine; the `validator` binary is a thin front end over it. One path
//! judges a task for every front end ([`judge::Judge`]): the contract, the circuit breakers
//! (given a [`judge::History`]), the gates, the signature. It prints nothing and owns no
//! process-wide state but the set of commands it runs, so `check`, a long-running watcher and
//! the agent hook adapters all call it. This judges a task exactly as `validator check
//! --format json` does:
//!
//! ```no_run
//! use std::path::Path;
//! use validator::judge::{self, Case, Judge, Supervision};
//! use validator::{Rules, Signal, Task};
//!
//! let rules = Rules::load(Path::new("validator.yaml"))?;
//! let task = Task::new("svc-auth", Path::new("staging/svc-auth"))?
//!     .with_signal(Signal::read(Path::new("staging/svc-auth.done"))?);
//! let pipeline = rules.pipeline_for(&task.name, None)?;
//! let key = judge::signing(&rules);
//! let cache = validator::cache::Cache::new(&rules.state);
//! let judge = Judge::new(&rules, &key, Supervision { cache: Some(&cache), ..Default::default() })
//!     .signed(true);
//! let case = Case { task, pipeline: Ok(pipeline), refused: None };
//! let verdict = judge.judge(case, None).verdict;
//! println!("{}: {}", verdict.verdict, verdict.to_json());
//! # Ok::<(), validator::Error>(())
//! ```
//!
//! The documented modules are that API: [`config`] (the rules file), [`task`], [`done`] (the
//! done signal), [`judge`], [`verdict`], [`cache`], [`state`] and [`events`] (what a task
//! remembers), and [`error`]. The rest are the front ends' and the engine's own, public for the binary and
//! hidden from these docs; the floors they stand on are in ARCHITECTURE.md.

#![forbid(unsafe_code)]

#[doc(hidden)]
pub mod approvals;
#[doc(hidden)]
pub mod brief;
pub mod cache;
mod changes;
pub mod config;
#[doc(hidden)]
pub mod confine;
#[doc(hidden)]
pub mod contract;
#[doc(hidden)]
pub mod delivery;
pub mod done;
#[doc(hidden)]
pub mod duration;
pub mod error;
pub mod events;
#[doc(hidden)]
pub mod git;
mod globs;
#[doc(hidden)]
pub mod hook;
pub mod judge;
#[doc(hidden)]
pub mod pipeline;
#[doc(hidden)]
pub mod replace;
#[doc(hidden)]
pub mod rules;
mod shingles;
#[doc(hidden)]
pub mod snapshot;
#[doc(hidden)]
pub mod speculation;
#[doc(hidden)]
pub mod staging;
pub mod state;
pub mod task;
mod taskdir;
#[doc(hidden)]
pub mod timestamp;
#[doc(hidden)]
pub mod tool_policy;
mod toolcache;
pub mod verdict;
mod yaml;

pub use config::Rules;
pub use done::Signal;
pub use error::{ConfigError, Error};
pub use task::Task;
pub use verdict::{Decision, Verdict};
