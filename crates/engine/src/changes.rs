//! What a run counts as the worker's changes, as git (`git`) and the rules' listing
//! (`rules::file_scope`) both speak of it: where the list came from, the list, the patch, and
//! why there is none. Below both, so that git's reading and the listing built on it do not
//! import each other; a failed listing as a gate's outcome is the rules' (`Problem::outcome`,
//! in `rules::file_scope`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::taskdir;
use crate::toolcache::Stamp;
use crate::verdict::Finding;

/// Where the list of changed files came from, said in the summary so a reader can trust it.
#[derive(Clone)]
pub(crate) enum Source {
    Git(String),
    Baseline,
    Everything,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Git(base) => write!(f, "git, against {base}"),
            Source::Baseline => f.write_str("the snapshot baseline"),
            Source::Everything => f.write_str("every file: no git and no baseline"),
        }
    }
}

/// Why the changes could not be listed: the validator's problem (ERROR), the worker's (FAIL,
/// e.g. a repository it broke), or the gate's deadline (a tree the worker made too large to
/// list in time: a timeout, never a pass on part of it).
pub(crate) enum Problem {
    Judge(String),
    Worker(String),
    Stopped(taskdir::Stopped),
}

impl Problem {
    /// In words, for a rule that reports it as text.
    pub(crate) fn into_reason(self) -> String {
        match self {
            Problem::Judge(why) | Problem::Worker(why) => why,
            Problem::Stopped(_) => {
                "listing what the worker changed did not finish by the gate's deadline".into()
            }
        }
    }
}

/// The changed files, and findings about how they were found (hidden changes, refused links).
#[derive(Clone)]
pub(crate) struct Changes {
    pub source: Source,
    pub files: BTreeSet<String>,
    pub findings: Vec<Finding>,
    pub note: Option<&'static str>,
    /// The files in tool caches left out because validator's own gates wrote them (see
    /// [`crate::toolcache`]), as they are now: what the run records at its end.
    pub gate_written: BTreeMap<String, Stamp>,
}

/// What git shows of the tracked files' changes against a base, cut to a size.
pub(crate) struct Patch {
    pub text: String,
    /// Bytes of the patch that were left out.
    pub cut: u64,
    /// The patch was too large to read whole, so `text` does not start at its beginning.
    pub from_middle: bool,
}
