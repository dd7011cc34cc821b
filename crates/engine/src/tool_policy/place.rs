//! Where a path an agent's tool names would land: inside the task (as the task path the rules
//! judge), or not. Decided from what is on disk now: each existing component is resolved as
//! the kernel would (links followed), so a link out of the task anywhere on the way, the last
//! component included, leaves it; what does not exist yet is taken as written. Links the same
//! command line makes before the write (`ln -s .. up && echo > up/../x`) are followed as if they
//! were on disk already: they are, by the time the write runs.

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

/// A link the command line makes before a later command of it runs: at `at` (its real place,
/// its directory resolved), pointing at `target` (as a symbolic link's text: relative to the
/// link's directory unless absolute; a hard link's is its file's real path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Made {
    pub at: PathBuf,
    pub target: PathBuf,
}

/// Places `path` (absolute, or relative to `cwd`) against the task directory `task_dir`
/// (canonical), through the links the line made (`made`, in order).
pub fn place(task_dir: &Path, cwd: &Path, path: &str, made: &[Made]) -> Place {
    let joined = if Path::new(path).is_absolute() {
        PathBuf::from(path)
    } else {
        cwd.join(path)
    };
    match resolve(&joined, made) {
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

/// Where a link named `path` (from `cwd`) is made: its directory resolved, its own name kept.
pub fn link_place(cwd: &Path, path: &str, made: &[Made]) -> Option<PathBuf> {
    let joined = cwd.join(path);
    let name = joined.file_name()?;
    Some(resolve(joined.parent()?, made)?.join(name))
}

/// `path` with every existing component resolved (links followed, the line's own first) and
/// the rest taken as written; `None` when it cannot be told (a link loop, a link that cannot be
/// read).
fn resolve(path: &Path, made: &[Made]) -> Option<PathBuf> {
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
        if let Some(link) = made.iter().rev().find(|link| link.at == next) {
            links += 1;
            if links > MAX_LINKS {
                return None;
            }
            if link.target.is_absolute() {
                real = PathBuf::from("/");
            }
            pending.extend(link.target.components().rev().filter_map(|c| match c {
                Component::Normal(name) => Some(name.to_os_string()),
                Component::ParentDir => Some("..".into()),
                _ => None,
            }));
            continue;
        }
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

    fn place_now(task: &Path, cwd: &Path, path: &str) -> Place {
        place(task, cwd, path, &[])
    }

    #[test]
    fn a_link_the_line_made_is_followed_as_if_it_were_on_disk() {
        let root = tempfile::tempdir().unwrap();
        let task = root.path().canonicalize().unwrap();
        std::fs::create_dir_all(task.join("src")).unwrap();
        let up = Made {
            at: task.join("src/up"),
            target: "..".into(),
        };
        assert_eq!(
            place(&task, &task, "src/up/x", std::slice::from_ref(&up)),
            Place::Inside("x".into())
        );
        let up2 = Made {
            at: link_place(&task, "src/up2", std::slice::from_ref(&up)).unwrap(),
            target: "up/..".into(),
        };
        assert!(matches!(
            place(&task, &task, "src/up2/victim.txt", &[up, up2]),
            Place::Outside(_)
        ));
    }

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
        assert_eq!(place_now(&task, &task, "src/a.rs"), inside("src/a.rs"));
        assert_eq!(
            place_now(&task, &task.join("src"), "new/x.rs"),
            inside("src/new/x.rs")
        );
        assert_eq!(place_now(&task, &task, "inner/a.rs"), inside("src/a.rs"));
        assert_eq!(place_now(&task, &task, "src/../b"), inside("b"));
        assert_eq!(place_now(&task, &task, "."), inside(""));
        for leaving in ["../x", "out/x", "file-link", "/etc/passwd", "src/../../x"] {
            assert!(
                matches!(place_now(&task, &task, leaving), Place::Outside(_)),
                "{leaving}"
            );
        }
        // A loop never ends the walk badly.
        symlink("loop", task.join("loop")).unwrap();
        assert!(matches!(
            place_now(&task, &task, "loop/x"),
            Place::Outside(_)
        ));
    }
}
