//! The reliability suite: the claims "nothing is lost, nothing is left running, nothing a
//! worker writes can crash or stall the gate", each driven through the real binary.
//!
//! - `crash`: `kill -9` of a busy `validator watch` at random moments, restart, then every
//!   signal has exactly one current verdict, every file parses, nothing a gate started lives on.
//! - `load`: a burst of signals, none lost.
//! - `processes`: commands that fork and ignore SIGTERM, flood stdout, never exit.
//! - `inputs`: hostile file names, deep trees, symlink loops, a 2 GB sparse file, alias bombs.
//!
//! The quick versions run in CI (`cargo test`). The long ones are `#[ignore]`d:
//! `cargo test --release --test it reliability:: -- --ignored --nocapture` runs 100 crashes and a
//! burst of 10,000 signals and prints the figures. `VALIDATOR_CRASH_SEED=N` replays a crash run.

mod crash;
mod faults;
mod harness;
mod inputs;
mod load;
mod processes;
