//! Reading a shell command line without running it: its simple commands and their words
//! ([`read`], the script), and what those commands would write ([`writes`]), with the readers
//! of what their arguments hold (options, a `sed` script, a patch). Nothing runs and no file is
//! read; the environment is asked only for `HOME` (what `~` is) and whether `PATH` holds a
//! `git-<name>` (git's own subcommands). Every input is untrusted text, fuzzed as such.

#![forbid(unsafe_code)]

mod options;
pub mod patch;
mod script;
mod sed;
pub mod writes;

pub use script::*;
