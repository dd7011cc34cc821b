//! Where a path an agent's tool names would land: inside the task (as the task path the rules
//! judge), or not. Decided from what is on disk now: each existing component is resolved as
//! the kernel would (links followed), so a link out of the task anywhere on the way, the last
//! component included, leaves it; what does not exist yet is taken as written.

use std::path::{Component, Path, PathBuf};

/// Where a written path lands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// Inside the task: its `/`-separated path from the task's top (empty for the top itself).
    Inside(String),
    /// Outside the task, or through a link out of it.
    Outside(PathBuf),
}

/// Most links followed on one path before it is taken as leaving (as the kernel's 40).
const MAX_LINKS: usize = 40;

/// Places `path` (absolute, or relative to `cwd`) against the task directory `task_dir`
/// (canonical).
pub fn place(task_dir: &Path, cwd: &Path, path: &str) -> Place {
    let joined = if Path::new(path).is_absolute() {
        PathBuf::from(path)
    } else {
        cwd.join(path)
    };
    match resolve(&joined) {
        Some(real) => match real.strip_prefix(task_dir) {
            Ok(rel) => Place::Inside(
                rel.components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/"),
            ),
            Err(_) => Place::Outside(real),
        },
        None => Place::Outside(joined),
    }
}

/// `path` with every existing component resolved (links followed) and the rest taken as
/// written; `None` when it cannot be told (a link loop, a link that cannot be read).
fn resolve(path: &Path) -> Option<PathBuf> {
    let mut real = PathBuf::from("/");
    let mut pending: Vec<std::ffi::OsString> = path
        .components()
        .rev()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name.to_os_string()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect();
    let mut links = 0;
    while let Some(name) = pending.pop() {
        if name == ".." {
            real.pop();
            continue;
        }
        let next = real.join(&name);
        match next.symlink_metadata() {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return None;
                }
                let target = std::fs::read_link(&next).ok()?;
                if target.is_absolute() {
                    real = PathBuf::from("/");
                }
                pending.extend(target.components().rev().filter_map(|c| match c {
                    Component::Normal(name) => Some(name.to_os_string()),
                    Component::ParentDir => Some("..".into()),
                    _ => None,
                }));
            }
            _ => real = next,
        }
    }
    Some(real)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn paths_are_placed_by_where_they_really_land() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let task = root.path().canonicalize().unwrap();
        std::fs::create_dir_all(task.join("src")).unwrap();
        symlink(outside.path(), task.join("out")).unwrap();
        symlink(outside.path().join("f"), task.join("file-link")).unwrap();
        symlink("src", task.join("inner")).unwrap();
        let inside = |p: &str| Place::Inside(p.to_owned());
        assert_eq!(place(&task, &task, "src/a.rs"), inside("src/a.rs"));
        assert_eq!(
            place(&task, &task.join("src"), "new/x.rs"),
            inside("src/new/x.rs")
        );
        assert_eq!(place(&task, &task, "inner/a.rs"), inside("src/a.rs"));
        assert_eq!(place(&task, &task, "src/../b"), inside("b"));
        assert_eq!(place(&task, &task, "."), inside(""));
        for leaving in ["../x", "out/x", "file-link", "/etc/passwd", "src/../../x"] {
            assert!(
                matches!(place(&task, &task, leaving), Place::Outside(_)),
                "{leaving}"
            );
        }
        // A loop never ends the walk badly.
        symlink("loop", task.join("loop")).unwrap();
        assert!(matches!(place(&task, &task, "loop/x"), Place::Outside(_)));
    }
}
