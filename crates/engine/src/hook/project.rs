//! Where a stop is judged (`Project`): the directory the hook command names, else the agent's
//! project directory, else the repository the hook runs in, never the agent's `cwd`.

use std::path::PathBuf;

use super::Agent;
use crate::task;

/// Where a stop is judged: the project the agent works on, found without asking the agent. The
/// directory an agent's input names (`cwd`) is where it last moved to: judging that would let it
/// `cd` into a corner (a subdirectory no pipeline or contract names, a scratch directory) and
/// stop there unjudged.
#[derive(Debug, Clone)]
pub struct Project {
    pub dir: PathBuf,
    /// The task's name, when the hook command gives one (else the directory's name).
    pub task: Option<String>,
    /// How `dir` was found, for the event log.
    pub found_by: &'static str,
}

impl Project {
    /// The project of `agent`'s stop: `named_dir` if the hook command gives one; else the
    /// project directory the agent puts in the hook's environment (`env`); else the top of the
    /// git repository the hook runs in (`cwd`, which the agent started it in); else `cwd`.
    pub fn locate(
        agent: Agent,
        named_dir: Option<PathBuf>,
        task: Option<String>,
        env: impl Fn(&str) -> Option<std::ffi::OsString>,
        cwd: &std::path::Path,
    ) -> Project {
        let (dir, found_by) = if let Some(dir) = named_dir {
            (dir, "--task-dir")
        } else if let Some((var, dir)) = agent
            .project_dir_vars()
            .iter()
            .find_map(|var| env(var).filter(|v| !v.is_empty()).map(|dir| (*var, dir)))
        {
            (PathBuf::from(dir), var)
        } else if let Some(top) = repository_top(cwd) {
            (top, "the repository the hook runs in")
        } else {
            (cwd.to_path_buf(), "the hook's working directory")
        };
        Project {
            dir,
            task,
            found_by,
        }
    }

    pub(super) fn task_name(&self) -> String {
        self.task
            .clone()
            .unwrap_or_else(|| task::name_from_dir(&self.dir))
    }
}

/// The nearest directory at or above `dir` holding a `.git`.
fn repository_top(dir: &std::path::Path) -> Option<PathBuf> {
    let dir = dir.canonicalize().ok()?;
    dir.ancestors()
        .find(|at| at.join(".git").symlink_metadata().is_ok())
        .map(std::path::Path::to_path_buf)
}
