//! What an ignore rule may hide from the count of the worker's changes: only what the base's
//! committed `.gitignore` files would hide, wherever the rule that hid a file lives (a
//! `.gitignore` the worker wrote or edited, a directory above the task, `.git/info/exclude`).
//! Asked of git's own walk in a scratch tree that holds those files and an empty stand-in for
//! each path ignored, so git's rules decide, and nothing of the worker's is read. In the user's
//! own `validator check`, the user's global excludes ([`super::UserExcludes`]) count too.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::Repo;
use super::parse::{Status, batch_contents, split_z};
use super::private_index::Private;
use super::run::{Invocation, OUTPUT_CAP};
use validator_process::sandbox::Sandbox;

/// What [`Repo::behind_ignores`] found.
#[derive(Default)]
pub(super) struct Behind {
    /// Untracked files (and nested repositories, `dir/`) the committed rules do not hide: new
    /// in the task, so changes (task paths).
    pub(super) counted: Vec<String>,
    /// Every untracked path git listed in the ignored directories it looked into.
    pub(super) seen: Vec<String>,
    /// Ignored directories (and nested repositories) the committed rules hide whole (task
    /// paths, no `/` at the end).
    pub(super) hidden_dirs: Vec<String>,
    pub(super) rules: Option<Vec<(String, Vec<u8>)>>,
}

/// Most files only the listing hides that are asked about again; past it, they all count.
const MAX_SUSPECTS: usize = 200_000;

/// The empty file standing in for a nested repository's directory in the scratch tree.
const STAND_IN: &str = ".validator-stand-in";

impl Repo<'_> {
    /// What the ignore rules hid (`ignored`: task paths, directories ending in `/`, as
    /// `status --ignored=matching` lists them), as the base's committed `.gitignore` files
    /// alone would hide it: whatever rule hid a path (a `.gitignore` the worker wrote or
    /// edited, in the task or in a directory above it, `.git/info/exclude`), only those may.
    /// An ignored directory they do not hide whole is looked into, file by file.
    pub(super) fn behind_ignores(
        &self,
        private: &Private,
        ignored: &[String],
    ) -> Result<Behind, String> {
        let rules = self.committed_ignore_rules(private);
        let hidden_by_rules = |suspects: &[String]| match &rules {
            Some(rules) => self.hidden_by_rules(rules, suspects),
            None => BTreeSet::new(),
        };
        let from_top: Vec<String> = ignored.iter().map(|path| self.top_path(path)).collect();
        let hidden = hidden_by_rules(&from_top);
        let mut behind = Behind::default();
        let mut looked_into = Vec::new();
        for (path, top) in ignored.iter().zip(&from_top) {
            match (path.strip_suffix('/'), hidden.contains(top)) {
                (Some(dir), true) => behind.hidden_dirs.push(dir.to_owned()),
                (Some(_), false) => looked_into.push(top.as_str()),
                (None, false) => behind.counted.push(path.clone()),
                (None, true) => {}
            }
        }
        if !looked_into.is_empty() {
            // Every untracked path in them, a nested repository as `dir/`, asked again.
            let every = self.listing(
                self.with(private),
                &["ls-files", "-z", "--full-name", "--others", "--", "."],
            )?;
            let inside: Vec<String> = split_z(&every)
                .filter(|path| looked_into.iter().any(|dir| path.starts_with(dir)))
                .collect();
            let hidden = hidden_by_rules(&inside);
            for top in &inside {
                let Some(path) = self.in_task(top) else {
                    continue;
                };
                behind.seen.push(path.clone());
                match (path.strip_suffix('/'), hidden.contains(top)) {
                    (_, false) => behind.counted.push(path),
                    (Some(dir), true) => behind.hidden_dirs.push(dir.to_owned()),
                    (None, true) => {}
                }
            }
        }
        behind.rules = rules;
        Ok(behind)
    }

    /// The base's committed `.gitignore` files (paths from the top, contents), from
    /// validator's private index of it; `None` when they cannot be read.
    fn committed_ignore_rules(&self, private: &Private) -> Option<Vec<(String, Vec<u8>)>> {
        // What a push delivers is committed, its rules with it: they may hide only what it does
        // not deliver, which is set aside or ignored while it is judged.
        let delivered = match (&self.task.since, self.depth) {
            (Some(since), 0) => Some(format!("{}^{{tree}}", since.delivered)),
            _ => None,
        };
        let glob = ":(top,glob)**/.gitignore";
        let listed = match &delivered {
            // ls-tree takes no pathspec magic: every entry, the rules picked out below.
            Some(tree) => self.run(&["ls-tree", "-r", "-z", "--full-tree", tree]),
            None => self.listing(
                self.with(private),
                &["ls-files", "-z", "-s", "--full-name", "--", glob],
            ),
        }
        .ok()?;
        let mut blobs: Vec<(String, String)> = Vec::new();
        for entry in split_z(&listed) {
            // `<mode> <oid> <stage>\t<path>`, or `<mode> blob <oid>\t<path>` from a tree
            let Some((meta, path)) = entry.split_once('\t') else {
                continue;
            };
            let mut fields = meta.split(' ');
            let mode = fields.next();
            let oid = match delivered {
                Some(_) => fields.nth(1),
                None => fields.next(),
            };
            if let (Some("100644" | "100755"), Some(oid)) = (mode, oid) {
                if is_gitignore(path) {
                    blobs.push((path.to_owned(), oid.to_owned()));
                }
            }
        }
        if blobs.is_empty() {
            return Some(Vec::new());
        }
        let input: String = blobs.iter().map(|(_, oid)| format!("{oid}\n")).collect();
        let done = self
            .run_as(
                self.own(),
                &["cat-file", "--batch"],
                OUTPUT_CAP,
                Some(input.as_bytes()),
            )
            .ok()?;
        let contents = batch_contents(&done.output, blobs.len())?;
        Some(
            blobs
                .into_iter()
                .zip(contents)
                .map(|((path, _), content)| (path, content.to_vec()))
                .collect(),
        )
    }

    /// Of `dirs` (task paths of directories), those the base's committed `.gitignore` files
    /// (`rules`, as [`super::Accounted::ignore_rules`] holds them) hide whole. When that cannot be
    /// told, none.
    pub fn hidden_by_committed_rules(
        &self,
        dirs: &[&String],
        rules: Option<&[(String, Vec<u8>)]>,
    ) -> Vec<String> {
        let Some(rules) = rules else {
            return Vec::new();
        };
        let from_top: Vec<String> = dirs
            .iter()
            .map(|dir| format!("{}/", self.top_path(dir.trim_end_matches('/'))))
            .collect();
        let hidden = self.hidden_by_rules(rules, &from_top);
        dirs.iter()
            .zip(&from_top)
            .filter(|(_, top)| hidden.contains(*top))
            .map(|(dir, _)| (*dir).clone())
            .collect()
    }

    /// Of `suspects` (paths from the top: files, or `dir/` for a directory), those `rules`
    /// (committed `.gitignore` files, by path from the top) hide, as git's own walk says: in a
    /// scratch work tree (and a repository of its own, so no exclude file of the worker's is
    /// read) holding each rule file and an empty stand-in for each suspect. A directory is
    /// hidden when it is ignored whole, not when its stand-in is. Past [`MAX_SUSPECTS`], or if
    /// the tree cannot be made, none is hidden.
    pub(super) fn hidden_by_rules(
        &self,
        rules: &[(String, Vec<u8>)],
        suspects: &[String],
    ) -> BTreeSet<String> {
        let user = self.user_excludes.map(|user| user.rules.as_slice());
        // No committed rule (nor the user's own, where they count) hides anything.
        if (rules.is_empty() && user.is_none())
            || suspects.is_empty()
            || suspects.len() > MAX_SUSPECTS
        {
            return BTreeSet::new();
        }
        let Ok(scratch) = tempfile::Builder::new()
            .prefix("validator-ignore-")
            .tempdir()
        else {
            return BTreeSet::new();
        };
        let tree = scratch.path().join("tree");
        let git_dir = scratch.path().join("git");
        if !matches!(
            make_scratch(&tree, &git_dir, rules, user, suspects),
            Ok(true)
        ) {
            return BTreeSet::new();
        }
        let readable = [scratch.path().to_path_buf()];
        let Ok(sandbox) = Sandbox::reading(&self.git, &readable) else {
            return BTreeSet::new();
        };
        let how = Invocation {
            git_dir: &git_dir,
            work_tree: &tree,
            cwd: tree.clone(),
            index: None,
            reads_index: None,
            sandbox: sandbox.as_ref(),
        };
        let args = [
            "status",
            "--porcelain=v2",
            "-z",
            "--untracked-files=all",
            "--ignored=matching",
            "--no-renames",
        ];
        let Ok(shown) = self.listing(how, &args) else {
            return BTreeSet::new();
        };
        let ignored = Status::parse_with(&shown, |path| Some(path.to_owned())).ignored;
        let ignored: BTreeSet<&str> = ignored.iter().map(String::as_str).collect();
        suspects
            .iter()
            .filter(|suspect| is_hidden(suspect, &ignored))
            .cloned()
            .collect()
    }
}

/// Whether git's walk of the scratch tree (`ignored`: what it listed ignored, directories
/// ending in `/`) hides `suspect`: it, or a directory above it, is ignored. A directory
/// suspect's own stand-in being ignored is not the directory.
fn is_hidden(suspect: &str, ignored: &BTreeSet<&str>) -> bool {
    ignored.contains(suspect)
        || suspect
            .char_indices()
            .filter(|&(_, c)| c == '/')
            .any(|(at, _)| ignored.contains(&suspect[..=at]))
}

/// Fills the scratch work tree `tree` (and its repository `git_dir`) for
/// [`Repo::hidden_by_rules`]; `false` when a path cannot be placed. The user's global excludes
/// (`user`, where they count) go in the scratch repository's exclude file: like a global
/// excludes file, below every `.gitignore` in precedence.
fn make_scratch(
    tree: &Path,
    git_dir: &Path,
    rules: &[(String, Vec<u8>)],
    user: Option<&[u8]>,
    suspects: &[String],
) -> std::io::Result<bool> {
    std::fs::create_dir_all(git_dir.join("objects"))?;
    std::fs::create_dir_all(git_dir.join("refs"))?;
    std::fs::write(git_dir.join("HEAD"), "ref: refs/heads/scratch\n")?;
    if let Some(user) = user {
        std::fs::create_dir_all(git_dir.join("info"))?;
        std::fs::write(git_dir.join("info").join("exclude"), user)?;
    }
    std::fs::create_dir_all(tree)?;
    for (path, content) in rules {
        let Some(at) = scratch_path(tree, path) else {
            return Ok(false);
        };
        if let Some(dir) = at.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(at, content)?;
    }
    for suspect in suspects {
        let (path, stand_in) = match suspect.strip_suffix('/') {
            Some(dir) => (format!("{dir}/{STAND_IN}"), true),
            None => (suspect.clone(), false),
        };
        let Some(at) = scratch_path(tree, &path) else {
            return Ok(false);
        };
        if let Some(dir) = at.parent() {
            std::fs::create_dir_all(dir)?;
        }
        if !(stand_in && at.exists()) {
            std::fs::File::create(at)?;
        }
    }
    Ok(true)
}

fn is_gitignore(path: &str) -> bool {
    path == ".gitignore" || path.ends_with("/.gitignore")
}

/// `path` (from a git listing, `/`-separated) under `tree`, or `None` for one that is not a
/// plain relative path.
fn scratch_path(tree: &Path, path: &str) -> Option<PathBuf> {
    let mut at = tree.to_path_buf();
    for part in path.split('/') {
        if matches!(part, "" | "." | "..") {
            return None;
        }
        at.push(part);
    }
    Some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_suspect_is_hidden_by_itself_or_a_directory_above_it_ignored() {
        let ignored: BTreeSet<&str> = ["target/", "a/x.pem", "d/.validator-stand-in"].into();
        assert!(is_hidden("target/", &ignored));
        assert!(is_hidden("target/debug/x", &ignored));
        assert!(is_hidden("a/x.pem", &ignored));
        assert!(!is_hidden("a/y.pem", &ignored));
        // A directory whose stand-in alone is ignored (`.*`) is not ignored whole.
        assert!(!is_hidden("d/", &ignored));
        assert!(!is_hidden("targets/x", &ignored));
    }
}
