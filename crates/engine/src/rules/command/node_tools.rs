//! Where a Node command's packages come from. node resolves a package, and npm a script's
//! programs (`node_modules/.bin`), from the nearest `node_modules` up the tree: a task without
//! its own is judged with whatever an enclosing directory holds (an operator's checkout two
//! levels up), which the verdict then says.

use std::path::{Path, PathBuf};

use crate::task::Task;

/// The programs that resolve packages from `node_modules`.
const NODE_PROGRAMS: &[&str] = &["node", "npm", "npx", "yarn", "pnpm", "bun"];

/// A note for the gate's line when `argv` runs a Node program in `cwd` and neither `cwd` nor a
/// directory above it inside the task has `node_modules`, but one outside the task does.
/// `Err` when that `node_modules` lies where workers write: the gate cannot trust what ran.
pub(super) fn from_outside(
    argv: &[String],
    task: &Task,
    cwd: &Path,
) -> Option<Result<String, String>> {
    let program = argv.first()?;
    let name = Path::new(program).file_name()?.to_str()?;
    if !NODE_PROGRAMS.contains(&name) {
        return None;
    }
    let has_own = |dir: &Path| dir.join("node_modules").is_dir();
    let inside = cwd
        .ancestors()
        .take_while(|dir| dir.starts_with(&task.dir))
        .any(has_own);
    if inside {
        return None;
    }
    let outside: PathBuf = task
        .dir
        .ancestors()
        .skip(1)
        .find(|dir| has_own(dir))?
        .join("node_modules");
    let shown = validator_text::clip(&validator_text::one_line(&outside.to_string_lossy()), 200);
    // Where workers write (the staging directory), another task's worker planted them.
    if task.worker_may_write(&outside) {
        return Some(Err(format!(
            "the task has no node_modules of its own, and its packages came from {shown}, where workers write: another task's code ran in this gate; give the task its own node_modules, or keep them out of staging"
        )));
    }
    Some(Ok(format!(
        "; the task has no node_modules of its own: its packages and tools came from {shown}, outside the task"
    )))
}
