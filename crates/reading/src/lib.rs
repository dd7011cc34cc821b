//! Reading a tool's output the way a person does: the findings a linter printed
//! ([`findings`]) and the tests a runner says failed ([`test_names`]). One concern, used by the
//! `lint` and `test` rules and the reviewer, below the rules and knowing nothing of them.
//!
//! Everything read here is the worker's (a tool prints what the worker's files make it print):
//! text only, capped by whoever captured it, nothing in it run; a path in it is only looked up
//! through the [`findings::Files`] a caller hands in.

#![forbid(unsafe_code)]

pub mod finding;
pub mod findings;
pub mod test_names;

pub use finding::Finding;

/// Most findings one gate keeps; beyond this a verdict would stop being readable.
pub const MAX_FINDINGS: usize = 200;
