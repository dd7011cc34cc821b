//! What a git hook is about to deliver, as git records it: the entries of the index (what
//! `git commit` writes) or of a pushed commit's tree, HEAD's beside them, the blobs they name,
//! the untracked files the commit leaves out, and the range a push sends. Read-only, and run
//! hardened as every other git here: the user's index is read, never written.

use std::collections::{BTreeMap, BTreeSet};

use super::Repo;
use super::parse::{batch_contents, split_z};
use super::run::OUTPUT_CAP;

/// Most objects asked of `git cat-file --batch` at once: their contents come back whole, under
/// [`OUTPUT_CAP`].
const BLOBS_AT_ONCE: usize = 256;
/// The empty blob's id, in SHA-1 and SHA-256 repositories.
const EMPTY_BLOBS: [&str; 2] = [
    "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
    "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813",
];

/// One entry of a tree or of the index: its mode as git writes it (`100644`, `100755`,
/// `120000` a link, `160000` a nested repository) and its object id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeEntry {
    pub mode: String,
    pub oid: String,
}

/// Which tree is delivered: what the index holds (a commit being made), or a commit (a push).
#[derive(Debug, Clone)]
pub enum Delivered {
    Index,
    Commit(String),
}

impl Repo<'_> {
    /// The delivered tree's entries in the task, by task path, and the index's paths a commit
    /// leaves out (`git add -N`). An index with a conflict (an entry at a stage other than 0)
    /// is refused: what it would commit cannot be told.
    pub fn delivered_entries(
        &self,
        delivered: &Delivered,
    ) -> Result<(BTreeMap<String, TreeEntry>, Vec<String>), String> {
        match delivered {
            Delivered::Index => {
                let listed = self.run(&["ls-files", "-z", "-s", "--full-name", "--", "."])?;
                let mut entries = BTreeMap::new();
                for record in split_z(&listed) {
                    let (meta, path) = record
                        .split_once('\t')
                        .ok_or_else(|| format!("git listed an index entry oddly: {record:?}"))?;
                    let mut words = meta.split(' ');
                    let (Some(mode), Some(oid), Some(stage)) =
                        (words.next(), words.next(), words.next())
                    else {
                        return Err(format!("git listed an index entry oddly: {record:?}"));
                    };
                    if stage != "0" {
                        return Err(format!(
                            "the index holds a merge conflict at {}: resolve it and stage the result",
                            validator_text::one_line(path)
                        ));
                    }
                    if let Some(path) = self.in_task(path) {
                        entries.insert(path, entry(mode, oid));
                    }
                }
                let left_out = self.leave_out_intent_to_add(&mut entries)?;
                Ok((entries, left_out))
            }
            Delivered::Commit(commit) => Ok((self.tree_entries(commit)?, Vec::new())),
        }
    }

    /// Leaves out the entries `git add -N` made: the index holds them as empty files, and a
    /// commit leaves them out. Only an empty blob's entry can be one, and git's status of those
    /// alone says which (`.A`).
    fn leave_out_intent_to_add(
        &self,
        entries: &mut BTreeMap<String, TreeEntry>,
    ) -> Result<Vec<String>, String> {
        let empty: Vec<String> = entries
            .iter()
            .filter(|(_, entry)| EMPTY_BLOBS.contains(&entry.oid.as_str()))
            .map(|(path, _)| self.top_path(path))
            .collect();
        if empty.is_empty() {
            return Ok(Vec::new());
        }
        let mut args = vec![
            "status",
            "--porcelain=v2",
            "-z",
            "--untracked-files=no",
            "--ignore-submodules=all",
            "--no-renames",
            "--",
        ];
        let pathspecs: Vec<String> = empty
            .iter()
            .map(|path| format!(":(top,literal){path}"))
            .collect();
        args.extend(pathspecs.iter().map(String::as_str));
        let listed = self.run(&args)?;
        let mut left_out = Vec::new();
        for record in split_z(&listed) {
            let mut fields = record.splitn(9, ' ');
            if let (Some("1"), Some(".A"), Some(path)) =
                (fields.next(), fields.next(), fields.nth(6))
            {
                if let Some(path) = self.in_task(path) {
                    entries.remove(&path);
                    left_out.push(path);
                }
            }
        }
        Ok(left_out)
    }

    /// The entries of `commit`'s tree in the task, by task path.
    pub fn tree_entries(&self, commit: &str) -> Result<BTreeMap<String, TreeEntry>, String> {
        let tree = format!("{commit}^{{tree}}");
        let listed = self.run(&["ls-tree", "-r", "-z", "--full-name", &tree, "--", "."])?;
        let mut entries = BTreeMap::new();
        for record in split_z(&listed) {
            let (meta, path) = record
                .split_once('\t')
                .ok_or_else(|| format!("git listed a tree entry oddly: {record:?}"))?;
            let mut words = meta.split(' ');
            let (Some(mode), Some(_kind), Some(oid)) = (words.next(), words.next(), words.next())
            else {
                return Err(format!("git listed a tree entry oddly: {record:?}"));
            };
            if let Some(path) = self.in_task(path) {
                entries.insert(path, entry(mode, oid));
            }
        }
        Ok(entries)
    }

    /// The contents of the blobs `oids` names, in order, asked of git in batches that fit its
    /// output cap by their sizes; a single blob past the cap is refused, never cut.
    pub fn blobs(&self, oids: &[&str]) -> Result<Vec<Vec<u8>>, String> {
        let sizes = self.blob_sizes(oids)?;
        let mut contents = Vec::with_capacity(oids.len());
        let mut start = 0;
        while start < oids.len() {
            let mut end = start;
            let mut bytes = 0usize;
            while end < oids.len() && end - start < BLOBS_AT_ONCE {
                let size = sizes[end].saturating_add(128);
                if end > start && bytes.saturating_add(size) > OUTPUT_CAP / 2 {
                    break;
                }
                bytes = bytes.saturating_add(size);
                end += 1;
            }
            if bytes > OUTPUT_CAP {
                return Err(format!(
                    "a delivered file is over {} MiB",
                    OUTPUT_CAP / 1024 / 1024
                ));
            }
            let chunk = &oids[start..end];
            let mut input = chunk.join("\n");
            input.push('\n');
            let done = self.run_as(
                self.own(),
                &["cat-file", "--batch"],
                OUTPUT_CAP,
                Some(input.as_bytes()),
            )?;
            if done.dropped > 0 {
                return Err("git printed more of the delivered files than it said".into());
            }
            let read = batch_contents(&done.output, chunk.len())
                .ok_or("git did not print the delivered files' contents")?;
            contents.extend(read.into_iter().map(<[u8]>::to_vec));
            start = end;
        }
        Ok(contents)
    }

    /// The sizes of the objects `oids` names, in order.
    fn blob_sizes(&self, oids: &[&str]) -> Result<Vec<usize>, String> {
        if oids.is_empty() {
            return Ok(Vec::new());
        }
        let mut input = oids.join("\n");
        input.push('\n');
        let done = self.run_as(
            self.own(),
            &["cat-file", "--batch-check=%(objectsize)"],
            OUTPUT_CAP,
            Some(input.as_bytes()),
        )?;
        let sizes: Vec<usize> = String::from_utf8_lossy(&done.output)
            .lines()
            .filter_map(|line| line.trim().parse().ok())
            .collect();
        if sizes.len() != oids.len() {
            return Err("git did not say the delivered files' sizes".into());
        }
        Ok(sizes)
    }

    /// Of `paths` (untracked task paths), those `patterns` ignore: the user's own excludes, as
    /// their `core.excludesFile` holds them, which keep a file out of a commit as git's own
    /// listing does.
    pub fn ignored_by(
        &self,
        patterns: &[String],
        paths: &[&String],
    ) -> Result<BTreeSet<String>, String> {
        if patterns.is_empty() || paths.is_empty() {
            return Ok(BTreeSet::new());
        }
        let mut args = vec!["ls-files", "-z", "--others", "--ignored", "--full-name"];
        for pattern in patterns {
            args.push("-x");
            args.push(pattern);
        }
        args.extend(["--", "."]);
        let listed = self.run(&args)?;
        let wanted: BTreeSet<&str> = paths.iter().map(|path| path.as_str()).collect();
        Ok(split_z(&listed)
            .filter_map(|path| self.in_task(&path))
            .filter(|path| wanted.contains(path.as_str()))
            .collect())
    }

    /// Of `paths` (task paths), those git converts between the work tree and the blob (an
    /// `ident`, `text`, `eol` or `working-tree-encoding` attribute): git compares them
    /// converted, so the bytes in the work tree may differ while git sees no change.
    pub fn converted(&self, paths: &[&String]) -> Result<BTreeSet<String>, String> {
        if paths.is_empty() {
            return Ok(BTreeSet::new());
        }
        let under = self.layout.under.as_str();
        let mut input = Vec::new();
        for path in paths {
            input.extend_from_slice(path.strip_prefix(under).unwrap_or(path).as_bytes());
            input.push(0);
        }
        let args = [
            "check-attr",
            "-z",
            "--stdin",
            "ident",
            "text",
            "eol",
            "crlf",
            "working-tree-encoding",
        ];
        let done = self.run_as(self.own(), &args, OUTPUT_CAP, Some(&input))?;
        if done.dropped > 0 {
            return Err("git listed too many attributes".into());
        }
        let fields: Vec<String> = split_z(&done.output).collect();
        Ok(fields
            .chunks(3)
            .filter(|triple| {
                triple.len() == 3 && triple[2] != "unspecified" && triple[2] != "unset"
            })
            .map(|triple| format!("{under}{}", triple[0]))
            .collect())
    }

    /// Of `paths` (untracked task paths), those the `.gitignore` files of the delivered tree
    /// (`rules`: paths from the top, contents) hide: what the commit itself says to leave out.
    pub fn hidden_by_delivered(
        &self,
        rules: &[(String, Vec<u8>)],
        paths: &[&String],
    ) -> BTreeSet<String> {
        let from_top: Vec<String> = paths.iter().map(|path| self.top_path(path)).collect();
        let hidden = self.hidden_by_rules(rules, &from_top);
        paths
            .iter()
            .zip(&from_top)
            .filter(|(_, top)| hidden.contains(*top))
            .map(|(path, _)| (*path).clone())
            .collect()
    }

    /// A task path as git names it from the top of the work tree.
    pub fn path_from_top(&self, path: &str) -> String {
        self.top_path(path)
    }

    /// Whether `oid` names an object this repository has.
    pub fn has_object(&self, oid: &str) -> bool {
        self.run(&["cat-file", "-e", "--end-of-options", oid])
            .is_ok()
    }

    /// The best common ancestor of `a` and `b`, if they have one.
    pub fn merge_base(&self, a: &str, b: &str) -> Result<Option<String>, String> {
        match self.run(&["merge-base", "--end-of-options", a, b]) {
            Ok(oid) => Ok(Some(String::from_utf8_lossy(&oid).trim().to_owned())),
            // merge-base exits 1, saying nothing, when there is none.
            Err(said) if said.is_empty() => Ok(None),
            Err(said) => Err(said),
        }
    }

    /// The commits of `commit` that no ref of `remote` (`refs/remotes/<remote>/`) holds, oldest
    /// first, with the parents of each.
    pub fn not_on_remote(
        &self,
        commit: &str,
        remote: &str,
    ) -> Result<Vec<(String, Vec<String>)>, String> {
        let remotes = format!("--remotes={remote}");
        let listed = self.run(&[
            "rev-list",
            "--topo-order",
            "--reverse",
            "--parents",
            commit,
            "--not",
            &remotes,
        ])?;
        Ok(String::from_utf8_lossy(&listed)
            .lines()
            .filter_map(|line| {
                let mut oids = line.split(' ').map(str::to_owned);
                Some((oids.next()?, oids.collect()))
            })
            .collect())
    }
}

fn entry(mode: &str, oid: &str) -> TreeEntry {
    TreeEntry {
        mode: mode.to_owned(),
        oid: oid.to_owned(),
    }
}
