//! The result cache for gates that declare `inputs:`. A gate that passed is not run again while
//! nothing it depends on changed: the content of the files its `inputs` globs match, its own
//! definition (and the schema file a `schema` gate reads), the program it runs (path, size,
//! modification time: a new tool version is a new binary), the task, and the task's contract.
//! Such a gate reports `cached`. Only passes are remembered: a failure always runs again.
//!
//! Entries live in `<state>/cache/<task>.json`, one key per gate, replaced atomically. The cache
//! is an optimisation that must never pass something that would fail, so whenever the key
//! cannot be computed exactly (an input too large to hash, unreadable, or a link out of the
//! task directory) the gate simply runs. The key is taken on the gate's clock: hashing stops
//! at its deadline, and a key not finished in time is no key (no hit: the gate runs, and times
//! out), so a worker's pile of large inputs cannot turn into a late `cached`.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::config::Gate;
use crate::task::{self, Task};
use crate::taskdir::{self, Deadline};

/// Most input bytes hashed for one gate; past this the gate runs instead of being hashed.
const MAX_INPUT_BYTES: u64 = 256 * 1024 * 1024;
/// Largest cache file read (a task's cache holds a key per gate).
const MAX_CACHE_BYTES: u64 = 1024 * 1024;

/// Remembers which gates passed with which key, under a state directory.
#[derive(Debug, Clone)]
pub struct Cache {
    dir: PathBuf,
}

impl Cache {
    pub fn new(state_dir: &Path) -> Self {
        Cache {
            dir: state_dir.join("cache"),
        }
    }

    fn path(&self, task: &str) -> PathBuf {
        self.dir.join(format!("{task}.json"))
    }

    /// The passes remembered for `task`. Anything unreadable (a link or a FIFO planted in its
    /// place, a damaged file) remembers nothing: the gates simply run.
    fn entries(&self, task: &str) -> BTreeMap<String, String> {
        validator_process::files::read(
            &self.path(task),
            MAX_CACHE_BYTES,
            validator_process::files::Links::Refuse,
        )
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
    }

    /// Whether `gate` passed for `task` with exactly this key.
    pub fn hit(&self, task: &str, gate: &str, key: &str) -> bool {
        task::validate_name(task).is_ok() && self.entries(task).get(gate).is_some_and(|k| k == key)
    }

    /// Records that `gate` passed with `key`. A cache that cannot be written costs a re-run
    /// later, nothing else, so the failure is logged and dropped.
    pub fn store(&self, task: &str, gate: &str, key: &str) {
        if task::validate_name(task).is_err() {
            return;
        }
        let mut entries = self.entries(task);
        entries.insert(gate.to_owned(), key.to_owned());
        let text = serde_json::to_string_pretty(&entries).unwrap_or_default();
        let written = std::fs::create_dir_all(&self.dir)
            .map_err(|err| err.to_string())
            .and_then(|()| {
                crate::replace::without_sync(&self.path(task), text.as_bytes())
                    .map_err(|err| format!("{err:#}"))
            });
        if let Err(err) = written {
            tracing::warn!(task, gate, %err, "cannot write the result cache");
        }
    }
}

/// What a gate's run depends on, taken before it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunKey {
    /// The content key a pass is remembered under (stable across rewrites of the same bytes).
    pub content: String,
    /// The inputs' inode and change time (which no worker can set back): if they differ after
    /// the run, a file was replaced while the gate ran, and its pass proves nothing about the
    /// content the key describes.
    stamp: String,
}

impl RunKey {
    /// Whether `after`, taken once the gate finished, shows inputs untouched during the run.
    pub fn unchanged_by(&self, after: &RunKey) -> bool {
        self == after
    }
}

/// The key of one run of `gate` over `task` under `pipeline`, or `None` when the gate has no
/// `inputs:`, the key cannot be computed exactly, or `deadline` (the gate's) came first.
pub fn key(task: &Task, pipeline: &str, gate: &Gate, deadline: &Deadline<'_>) -> Option<RunKey> {
    use std::os::unix::fs::MetadataExt;
    let inputs = gate.inputs.as_ref()?;
    let mut stamp = Sha256::new();
    let mut hash = Sha256::new();
    let mut field = |label: &str, bytes: &[u8]| {
        // Length-prefixed, so no two different field lists hash the same bytes.
        hash.update(label.as_bytes());
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(bytes);
    };
    field("validator", env!("CARGO_PKG_VERSION").as_bytes());
    field("task", task.name.as_bytes());
    field("pipeline", pipeline.as_bytes());
    field("gate", gate.definition.as_bytes());
    if let Some(contract) = &task.contract {
        field("contract", contract.source.as_bytes());
    }
    for file in gate.rule.definition_files() {
        let bytes = read_whole(file)?;
        field("definition file", &bytes);
    }
    if let Some(program) = gate.rule.program(task) {
        field(
            "program",
            program_identity(&program, task, deadline)?.as_bytes(),
        );
    }

    let listing = taskdir::list_by(task, deadline).ok()?;
    // A link out of the task directory or a directory that cannot be read may hide an input,
    // and so may a link to a directory inside it (a gate reading `src/lib/x` through a link
    // reads a file the listing shows elsewhere): no exact key, the gate runs.
    if !listing.linked_dirs.is_empty()
        || listing
            .escaping_links
            .iter()
            .chain(&listing.unreadable)
            .any(|rel| inputs.is_match(rel) || rel == ".")
    {
        return None;
    }
    let mut budget = MAX_INPUT_BYTES;
    let mut matched = 0usize;
    for entry in listing.files.iter().filter(|e| inputs.is_match(&e.rel)) {
        if task.is_ignored(&entry.rel) {
            continue;
        }
        let meta = entry.path.metadata().ok()?;
        if meta.len() > budget {
            return None;
        }
        stamp.update(entry.rel.as_bytes());
        stamp.update([0]);
        for number in [meta.ino(), meta.ctime() as u64, meta.ctime_nsec() as u64] {
            stamp.update(number.to_le_bytes());
        }
        // Hashed up to what is left of the budget, whatever the file grew to since its size
        // was read: a worker still writing cannot make each input cost the whole cap.
        let (digest, hashed) = hash_file(task, &entry.path, budget, deadline)?;
        budget -= hashed;
        field("input", entry.rel.as_bytes());
        field("content", &digest);
        matched += 1;
    }
    field("inputs", &(matched as u64).to_le_bytes());
    Some(RunKey {
        content: format!("{:x}", hash.finalize()),
        stamp: format!("{:x}", stamp.finalize()),
    })
}

/// The SHA-256 of a file inside the task directory, streamed, and its length; `None` past
/// `cap` bytes or `deadline`.
fn hash_file(
    task: &Task,
    path: &Path,
    cap: u64,
    deadline: &Deadline<'_>,
) -> Option<(Vec<u8>, u64)> {
    let mut file = taskdir::open_inside(task, path).ok()?;
    let mut hash = Sha256::new();
    let mut buffer = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        // Every 64 KiB: a clock read beside hashing them costs nothing.
        deadline.check().ok()?;
        let n = file.read(&mut buffer).ok()?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > cap {
            return None;
        }
        hash.update(&buffer[..n]);
    }
    Some((hash.finalize().to_vec(), total))
}

/// A file the rules file names (a schema), read whole under the input cap.
fn read_whole(path: &Path) -> Option<Vec<u8>> {
    validator_process::files::read(
        path,
        MAX_INPUT_BYTES,
        validator_process::files::Links::Follow,
    )
    .ok()
}

/// Which program a command gate runs: its resolved path, size and modification time. Upgrading
/// a tool replaces its binary, so this changes with the version without running the tool (a
/// `--version` flag may do real work in a script). A program inside the task directory is the
/// worker's, whose times it can set: its content counts instead.
pub fn program_identity(program: &Path, task: &Task, deadline: &Deadline<'_>) -> Option<String> {
    let task_dir = &task.dir;
    let path = if program.components().count() > 1 {
        program.to_path_buf()
    } else {
        validator_process::on_path(&program.as_os_str().to_owned(), &[])
            .map(std::path::PathBuf::from)?
    };
    let real = path.canonicalize().ok()?;
    if real.starts_with(task_dir) {
        let (digest, _) = hash_file(task, &real, MAX_INPUT_BYTES, deadline)?;
        return Some(format!("{} {digest:02x?}", real.display()));
    }
    let meta = real.metadata().ok()?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    Some(format!("{} {} {mtime}", real.display(), meta.len()))
}
