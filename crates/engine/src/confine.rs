//! The kernel's hold on a worker's own processes (`validator exec` around each allowed shell
//! call, `validator run` around a whole agent). They may write only where the stop would accept
//! a change (every blocking `file-scope` gate's `allow` and the contract's `files_owned`), a
//! fresh `$TMPDIR`, `tools.writable` and the terminal; never validator's state, rules, contracts
//! or verdicts, and never read its signing key. Reading the shell line before a call runs
//! (`tool_policy`) stays, for a refusal the model understands; this holds whatever the line hides.
//!
//! Landlock grants writes by tree, so a tree is the most a rule names: `src/**/*.rs` lets the
//! kernel allow all of `src`, and the post-tool check and the stop hold the rest. Landlock
//! cannot take a path back out of a granted tree: what must stay as it is inside one (a
//! `readonly` file, validator's state in the project) is bound read-only over itself in a
//! private mount namespace, and the key is covered by `/dev/null`, where the machine allows a
//! namespace. What this machine cannot hold is said ([`Held::unheld`]), never left out.

use std::path::{Path, PathBuf};

use landlock::{
    Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetStatus, Scope,
};

use crate::config::Rules;
use crate::config::tools::Confine;
use crate::rules::file_scope::FileScope;
use crate::task::Task;
use validator_process::sandbox::{ABI_ASKED, allow_paths, readable_but, real};

/// The first Landlock ABI that governs truncation (Linux 6.2): below it a confined process
/// could still empty any file it may read, the rules file among them.
pub const ABI_NEEDED: i32 = 3;

/// The Landlock ABI confinement can use here (0: none). A debug build run with
/// `VALIDATOR_DEBUG_NO_LANDLOCK` set answers 0, so the tests can show what a machine without
/// it does.
pub fn landlock_abi() -> i32 {
    if cfg!(debug_assertions) && std::env::var_os("VALIDATOR_DEBUG_NO_LANDLOCK").is_some() {
        return 0;
    }
    validator_process::sandbox::kernel_abi()
}

/// Most paths bound read-only inside the writable trees; past it the rest are the stop's.
const MAX_KEPT: usize = 256;

/// Most directory entries looked at to find the files a `readonly` or `deny` glob names now.
const MAX_LOOKED: usize = 20_000;

/// Devices a confined process writes as any program does: the null sinks and the terminal.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// A project's own settings of the agent CLIs (hooks, MCP servers, plugins), kept read-only
/// where they exist.
const PROJECT_AGENT_SETTINGS: &[&str] = &[
    ".claude",
    ".mcp.json",
    ".codex",
    ".gemini",
    ".opencode",
    "opencode.json",
    "opencode.jsonc",
];

/// Devices a confined process reads besides those it writes.
const READ_DEVICES: &[&str] = &["/dev/random", "/dev/urandom", "/dev/shm"];

/// Where a worker's processes may write, and what they may not touch inside that.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Task trees (and single files) writes may land in, reached through no link.
    pub writable: Vec<PathBuf>,
    /// Trees outside the task the operator lets be written (`tools.writable`, an agent's own
    /// state, the worker's caches), as real paths.
    pub also_writable: Vec<PathBuf>,
    /// The worker's own caches (`XDG_CACHE_HOME`, npm's, pip's, go's), kept per task apart from
    /// the user's: what a confined process plants there is never run by one that is not.
    pub cache: Option<PathBuf>,
    /// Trees whose files and directories may be removed (not written): the task.
    pub removable: Vec<PathBuf>,
    /// Inside those, what stays as it is: bound read-only.
    pub kept: Vec<PathBuf>,
    /// What is never read: validator's signing key.
    pub hidden: Vec<PathBuf>,
    /// What of the rules no kernel rule can hold, on any machine (a `deny` glob's files not
    /// made yet, a glob narrower than a tree); the post-tool check and the stop hold them.
    pub notes: Vec<String>,
}

/// What entering a plan held on this machine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Held {
    /// What this machine did not hold, and why; empty when all of it is held.
    pub unheld: Vec<String>,
}

impl Plan {
    /// The plan for the task in `dir` (named `name`) under `rules`, judged by `pipeline`
    /// (`None`: by the one `rules` picks for it; `Some(None)`: by none, its contract alone) and
    /// its contract, as a tool call of it is.
    pub fn for_rules(
        rules: &Rules,
        dir: &Path,
        name: &str,
        pipeline: Option<Option<&str>>,
        extra: &[PathBuf],
        kept: &[PathBuf],
    ) -> Result<Plan, String> {
        let task = Task::new(name, dir)
            .map_err(|err| format!("the task cannot be confined: {err}"))?
            .ignoring(&rules.state)
            .ignoring(&rules.verdicts);
        let contract = crate::contract::Contract::for_task(rules, &task.name)
            .map_err(|err| format!("the task's contract cannot be read: {err:#}"))?;
        let pipeline = match pipeline {
            Some(None) => None,
            Some(Some(name)) => Some(rules.pipeline_for(&task.name, Some(name))),
            None => Some(rules.pipeline_for(&task.name, None)),
        }
        .transpose()
        .map_err(|err| format!("the task's pipeline cannot be told: {err}"))?;
        let policy =
            crate::tool_policy::Policy::new(&task, pipeline, contract.as_ref(), &rules.tools);
        Plan::for_task(rules, &task, policy.scopes(), extra, kept)
    }

    /// The plan for `task`, whose writes `scopes` hold (the tool-time policy's: the stop's
    /// blocking `file-scope` gates and the contract), under `rules`; `extra` trees are writable
    /// too (an agent's own state, for `validator run`), but what `also_kept` names in them.
    /// `Err` when it cannot be built safely:
    /// validator's own file has another name a worker could write it by.
    pub fn for_task(
        rules: &Rules,
        task: &Task,
        scopes: &[(String, FileScope)],
        extra: &[PathBuf],
        also_kept: &[PathBuf],
    ) -> Result<Plan, String> {
        let mut plan = Plan::default();
        plan.add_task_trees(task, scopes);
        // Removing is let anywhere in the task: undoing a change the stop would fail (a file
        // made outside the scope) must stay possible, and a removal the stop would fail is
        // told at once and fails it, as any other change.
        plan.removable.push(task.dir.clone());
        for dir in rules.tools.writable.iter().chain(extra) {
            if dir.symlink_metadata().is_ok() {
                plan.also_writable.push(real(dir));
            }
        }
        if let Some(cache) = worker_cache(task) {
            plan.also_writable.push(cache.clone());
            plan.cache = Some(cache);
        }
        let own = [
            Some(rules.state.clone()),
            Some(rules.verdicts.clone()),
            Some(rules.path.clone()),
            rules.contracts.clone(),
            Some(task.dir.join(".git")),
            Call::dir().ok(),
        ];
        // The project's own agent settings name hooks and MCP servers the agent runs outside
        // any confinement next time; they are the person's, as `.git`'s are.
        let settings = PROJECT_AGENT_SETTINGS
            .iter()
            .map(|name| task.dir.join(name));
        let own = own
            .into_iter()
            .flatten()
            .chain(settings)
            .chain(task.ignore.iter().cloned())
            .chain(also_kept.iter().cloned());
        let mut kept: Vec<PathBuf> = own
            .filter(|path| path.symlink_metadata().is_ok())
            .map(|path| real(&path))
            // `.git` is the worker's where the operator made it writable.
            .filter(|path| !rules.tools.writable.iter().any(|dir| real(dir) == *path))
            .collect();
        let mut unheld_globs = Vec::new();
        for (_, scope) in scopes {
            for (glob, start) in scope.kept() {
                if start == glob {
                    let path = task.dir.join(glob);
                    if path.symlink_metadata().is_ok() {
                        kept.push(real(&path));
                    } else {
                        unheld_globs.push(glob.to_owned());
                    }
                    continue;
                }
                unheld_globs.push(glob.to_owned());
                kept.extend(existing_matches(task, scope, &start, &plan.writable));
            }
        }
        if !unheld_globs.is_empty() {
            unheld_globs.dedup();
            plan.notes.push(format!(
                "a file made anew that matches `readonly` or `deny` ({}) is refused by the post-tool check and the stop, not by the kernel",
                unheld_globs.join(", ")
            ));
        }
        kept.sort();
        kept.dedup();
        kept.retain(|path| {
            plan.writable
                .iter()
                .chain(&plan.also_writable)
                .chain(&plan.removable)
                .any(|tree| path.starts_with(tree))
        });
        if kept.len() > MAX_KEPT {
            plan.notes.push(format!(
                "{} paths must stay as they are inside the writable trees; the kernel holds the first {MAX_KEPT}, the stop the rest",
                kept.len()
            ));
            kept.truncate(MAX_KEPT);
        }
        plan.kept = kept;
        // The key in force (`$VALIDATOR_KEY_FILE` wins) and the rules file's, each.
        plan.add_keys(rules)?;
        Ok(plan)
    }

    /// validator's keys, to be hidden; `Err` when one (or the rules file) has another name a
    /// worker could reach it by.
    fn add_keys(&mut self, rules: &Rules) -> Result<(), String> {
        let plan = self;
        for key in keys(rules) {
            if key.symlink_metadata().is_ok() && !plan.hidden.contains(&real(&key)) {
                plan.hidden.push(real(&key));
            }
        }
        let own_files: Vec<(PathBuf, &str)> = plan
            .hidden
            .iter()
            .map(|key| (key.clone(), "key"))
            .chain([(real(&rules.path), "rules file")])
            .collect();
        validator_process::sandbox::refuse_other_names(&own_files)
    }

    /// The task trees the stop would accept a change in, each where it is (none through a
    /// link), into `writable`; why one is coarser than its globs, into `notes`.
    fn add_task_trees(&mut self, task: &Task, scopes: &[(String, FileScope)]) {
        let plan = self;
        let mut trees: Option<Vec<String>> = None;
        for (_, scope) in scopes {
            if let Some(allowed) = scope.allowed_trees() {
                trees = Some(match trees {
                    None => allowed,
                    Some(before) => intersect(&before, &allowed),
                });
            }
        }
        for rel in trees.unwrap_or_else(|| vec![String::new()]) {
            // Through no link: a tree the worker made a link (`src -> /`) would grant where it
            // points. `enter` opens each tree again without following one, so a link put in
            // its place after this look grants nothing either.
            if let Some(link) = link_on_the_way(&task.dir, &rel) {
                plan.notes.push(format!(
                    "`{}` is a link, so nothing is written through it",
                    validator_text::name(&link)
                ));
                continue;
            }
            let path = task.dir.join(&rel);
            if path.symlink_metadata().is_ok() {
                plan.writable.push(path);
                continue;
            }
            // A tree not made yet: its nearest existing directory, so it can be made.
            let Some(existing) = path.ancestors().find(|at| at.is_dir()) else {
                continue;
            };
            if existing.starts_with(&task.dir) {
                plan.notes.push(format!(
                    "`{}` does not exist yet, so the kernel lets all of `{}` be written; the stop holds the rest",
                    validator_text::name(&rel),
                    validator_text::name(&existing.to_string_lossy())
                ));
                plan.writable.push(existing.to_path_buf());
            }
        }
    }

    /// Binds the kept paths read-only and covers the key in a private mount namespace, where
    /// one can be made; the keys left to hide from Landlock's reading rules instead.
    fn enter_mounts(&self, mode: Confine, held: &mut Held) -> Result<Vec<PathBuf>, String> {
        let mut hidden_by_walk = self.hidden.clone();
        if !self.kept.is_empty() || !self.hidden.is_empty() {
            match private_mounts() {
                Ok(()) => {
                    for path in &self.kept {
                        if let Err(why) = bind_read_only(path) {
                            held.unheld.push(format!(
                                "{} could not be kept read-only ({why}); the stop holds it",
                                path.display()
                            ));
                        }
                    }
                    hidden_by_walk.retain(|key| cover(key).is_err());
                }
                Err(why) if mode == Confine::Required => {
                    return Err(format!(
                        "no mount namespace can be made here ({why}), so {} inside the writable trees cannot be kept read-only (`tools.confine: required`)",
                        self.kept
                            .first()
                            .map_or_else(|| "the key".into(), |p| p.display().to_string())
                    ));
                }
                Err(why) => {
                    if !self.kept.is_empty() {
                        held.unheld.push(format!(
                            "{} read-only paths inside the writable trees (the first: {}) are held by the post-tool check and the stop, not the kernel: no mount namespace can be made here ({why})",
                            self.kept.len(),
                            self.kept[0].display()
                        ));
                    }
                }
            }
        }
        Ok(hidden_by_walk)
    }

    /// Restricts this process, and every process it starts, to the plan; `tmp` is the per-call
    /// scratch directory, writable too. Under `required`, anything this machine cannot hold is
    /// an error and nothing is restricted (the caller runs nothing); under `best-effort` what
    /// it can is held and the rest said. Call it before any thread starts: a namespace can only
    /// be entered by a process of one thread.
    pub fn enter(&self, mode: Confine, tmp: &Path) -> Result<Held, String> {
        let mut held = Held::default();
        if mode == Confine::Off {
            held.unheld
                .push("confinement is off (`tools.confine: off`)".into());
            return Ok(held);
        }
        let abi = landlock_abi();
        if abi < ABI_NEEDED {
            let why = if abi < 1 {
                "this kernel has no Landlock".to_owned()
            } else {
                format!(
                    "this kernel's Landlock (ABI {abi}) does not govern truncation (ABI {ABI_NEEDED}, Linux 6.2)"
                )
            };
            if mode == Confine::Required {
                return Err(format!(
                    "{why}, so the writes the rules forbid cannot be refused by the kernel (`tools.confine: required`)"
                ));
            }
            held.unheld.push(format!(
                "nothing is confined: {why}; the post-tool check and the stop hold every rule"
            ));
            return Ok(held);
        }
        let hidden_by_walk = self.enter_mounts(mode, &mut held)?;
        let read = AccessFs::ReadFile | AccessFs::ReadDir | AccessFs::Execute;
        // Every directory may be listed; files are read anywhere but the key and `/dev`, whose
        // block devices would give the key's bytes past its cover (the devices a program uses
        // are granted below).
        let mut unread: Vec<&Path> = hidden_by_walk.iter().map(PathBuf::as_path).collect();
        unread.push(Path::new("/dev"));
        let mut rules: Vec<(PathBuf, landlock::BitFlags<AccessFs>)> =
            vec![(PathBuf::from("/"), AccessFs::ReadDir.into())];
        rules.extend(readable_but(&unread)?.into_iter().map(|path| (path, read)));
        let write = AccessFs::from_all(ABI_ASKED);
        rules.extend(self.also_writable.iter().map(|tree| (tree.clone(), write)));
        rules.push((tmp.to_path_buf(), write));
        rules.extend(self.removable.iter().map(|tree| {
            (
                tree.clone(),
                read | AccessFs::RemoveFile | AccessFs::RemoveDir,
            )
        }));
        rules.extend(
            READ_DEVICES
                .iter()
                .map(|device| (PathBuf::from(device), read)),
        );
        rules.extend(DEVICES.iter().map(|device| {
            (
                PathBuf::from(device),
                read | AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev,
            )
        }));
        let created = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(ABI_ASKED))
            .and_then(|ruleset| ruleset.scope(Scope::from_all(ABI_ASKED)))
            .and_then(|ruleset| ruleset.create())
            .map_err(|err| format!("cannot build the confinement: {err}"))?;
        let mut created = allow_paths(created, rules)?;
        for tree in &self.writable {
            match open_exactly(tree) {
                Ok(fd) => {
                    let access = if tree.is_dir() {
                        write
                    } else {
                        write & AccessFs::from_file(ABI_ASKED)
                    };
                    created = created
                        .add_rule(landlock::PathBeneath::new(fd, access))
                        .map_err(|err| format!("cannot allow {}: {err}", tree.display()))?;
                }
                Err(why) => held
                    .unheld
                    .push(format!("{} is not writable: {why}", tree.display())),
            }
        }
        let status = created
            .restrict_self()
            .map_err(|err| format!("cannot enter the confinement: {err}"))?;
        if status.ruleset == RulesetStatus::NotEnforced {
            return Err("this kernel's Landlock could not be used".into());
        }
        if abi < 6 {
            held.unheld.push(format!(
                "signals and abstract sockets to processes outside are not refused: this kernel's Landlock (ABI {abi}) cannot scope them (ABI 6, Linux 6.12)"
            ));
        }
        Ok(held)
    }
}

/// The task's writable part in words: the `allow` globs of every scope, and what they keep.
pub fn writable_words(scopes: &[(String, FileScope)]) -> String {
    let mut parts = Vec::new();
    for (gate, scope) in scopes {
        match scope.allowed_trees() {
            Some(trees) if trees.is_empty() => parts.push(format!("nothing (gate `{gate}`)")),
            Some(_) => parts.push(format!(
                "{} (gate `{gate}`)",
                scope.allowed_globs().join(", ")
            )),
            None => {}
        }
        let kept: Vec<&str> = scope.kept().map(|(glob, _)| glob).collect();
        if !kept.is_empty() {
            parts.push(format!("never {} (gate `{gate}`)", kept.join(", ")));
        }
    }
    if parts.is_empty() {
        "the task's files, but validator's own and `.git`".into()
    } else {
        validator_text::one_line(&parts.join("; "))
    }
}

/// validator's keys under `rules`: the signing key in force (`$VALIDATOR_KEY_FILE` wins) and
/// the rules file's, and the approvals endpoint's token (who reads it answers for a person).
pub fn keys(rules: &Rules) -> Vec<PathBuf> {
    rules
        .signing_key_file
        .iter()
        .cloned()
        .chain(crate::verdict::sign::KeyFile::configured(rules.key_named()).map(|key| key.path))
        .chain(rules.hook.approvals.token_file.clone())
        .collect()
}

/// The first link on the way from `dir` down to `rel` (as a task path), if there is one.
fn link_on_the_way(dir: &Path, rel: &str) -> Option<String> {
    let mut at = dir.to_path_buf();
    let mut shown = Vec::new();
    for part in rel.split('/').filter(|part| !part.is_empty()) {
        at.push(part);
        shown.push(part);
        match at.symlink_metadata() {
            Ok(meta) if meta.file_type().is_symlink() => return Some(shown.join("/")),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}

/// `path` opened where it is, through no link: the descriptor a Landlock rule is made from, so
/// a link swapped in after the plan was made grants nothing.
fn open_exactly(path: &Path) -> Result<std::os::fd::OwnedFd, String> {
    use nix::fcntl::{OFlag, open};
    let fd = open(
        path,
        OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .map_err(|err| err.to_string())?;
    let opened = std::fs::read_link(format!(
        "/proc/self/fd/{}",
        std::os::fd::AsRawFd::as_raw_fd(&fd)
    ))
    .map_err(|err| format!("cannot tell what was opened: {err}"))?;
    if opened != path {
        return Err(format!(
            "it is reached through a link (it is {})",
            opened.display()
        ));
    }
    Ok(fd)
}

/// The worker's caches for `task`: `validator-worker-cache-<digest of its path>` in the system's
/// temporary directory, the user's alone; `None` when it cannot be made.
fn worker_cache(task: &Task) -> Option<PathBuf> {
    use sha2::{Digest, Sha256};
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let mut digest = Sha256::new();
    digest.update(task.dir.as_os_str().as_encoded_bytes());
    digest.update([0]);
    digest.update(task.name.as_bytes());
    let digest = digest.finalize();
    let name: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    let dir = std::env::temp_dir().join(format!("validator-worker-cache-{name}"));
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
    // Another user's (or a link) in its place is not the worker's cache.
    let meta = dir.symlink_metadata().ok()?;
    (meta.is_dir() && meta.uid() == nix::unistd::getuid().as_raw()).then(|| real(&dir))
}

impl Plan {
    /// What a confined command's environment says besides `TMPDIR`: where its tools keep their
    /// caches (the worker's own, never the user's).
    pub fn environment(&self) -> Vec<(&'static str, PathBuf)> {
        let Some(cache) = &self.cache else {
            return Vec::new();
        };
        vec![
            ("XDG_CACHE_HOME", cache.clone()),
            ("npm_config_cache", cache.join("npm")),
            ("PIP_CACHE_DIR", cache.join("pip")),
            ("UV_CACHE_DIR", cache.join("uv")),
            ("GOCACHE", cache.join("go-build")),
            ("GOMODCACHE", cache.join("go-mod")),
            ("YARN_CACHE_FOLDER", cache.join("yarn")),
        ]
    }
}

/// The trees both lists allow: each of one that lies inside a tree of the other.
fn intersect(one: &[String], other: &[String]) -> Vec<String> {
    let inside = |tree: &str, of: &str| {
        of.is_empty() || tree == of || tree.strip_prefix(of).is_some_and(|r| r.starts_with('/'))
    };
    let mut both: Vec<String> = one
        .iter()
        .filter(|tree| other.iter().any(|of| inside(tree, of)))
        .chain(
            other
                .iter()
                .filter(|tree| one.iter().any(|of| inside(tree, of))),
        )
        .cloned()
        .collect();
    both.sort();
    both.dedup();
    both
}

/// The files and directories now below `start` (a glob's literal start) that `scope` keeps,
/// inside the writable trees; at most [`MAX_LOOKED`] entries are looked at.
fn existing_matches(
    task: &Task,
    scope: &FileScope,
    start: &str,
    writable: &[PathBuf],
) -> Vec<PathBuf> {
    let root = task.dir.join(start);
    if !writable
        .iter()
        .any(|tree| root.starts_with(tree) || tree.starts_with(&root))
    {
        return Vec::new();
    }
    walkdir::WalkDir::new(&root)
        .follow_links(false)
        .into_iter()
        .take(MAX_LOOKED)
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let rel = entry.path().strip_prefix(&task.dir).ok()?.to_str()?;
            scope.keeps(rel).then(|| entry.path().to_path_buf())
        })
        .collect()
}

/// What this machine can hold, for `validator status`, `--health` and the brief.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    /// The Landlock ABI (0: none).
    pub landlock: i32,
    /// Whether a private mount namespace can be made (to keep paths read-only inside a
    /// writable tree); `Err` says why not.
    pub namespaces: Result<(), String>,
}

impl Machine {
    /// Looks, by starting `/bin/true` in a namespace of its own.
    pub fn probe() -> Machine {
        if cfg!(debug_assertions) && std::env::var_os("VALIDATOR_DEBUG_NO_NAMESPACES").is_some() {
            return Machine {
                landlock: landlock_abi(),
                namespaces: Err("VALIDATOR_DEBUG_NO_NAMESPACES".into()),
            };
        }
        let namespaces = validator_process::kernel::private_mount_namespace();
        Machine {
            landlock: landlock_abi(),
            namespaces,
        }
    }

    /// One line: what the kernel holds here under `mode`, and what only the stop checks.
    pub fn describe(&self, mode: Confine) -> String {
        if mode == Confine::Off {
            return "confinement: off (`tools.confine: off`); the post-tool check and the stop hold every rule".into();
        }
        if self.landlock < ABI_NEEDED {
            let abi = self.landlock;
            return format!(
                "confinement: none on this machine (Landlock ABI {abi}, {ABI_NEEDED} needed){}; the post-tool check and the stop hold every rule",
                if mode == Confine::Required {
                    ", so every shell call is refused (`tools.confine: required`)"
                } else {
                    ""
                }
            );
        }
        let inside = match &self.namespaces {
            Ok(()) => "read-only paths inside them bound read-only".to_owned(),
            Err(why) => format!(
                "read-only paths inside them checked by the post-tool check and the stop only (no mount namespace: {why})"
            ),
        };
        format!(
            "confinement: Landlock ABI {} holds every shell call's writes to the task's writable trees; {inside}",
            self.landlock
        )
    }
}

/// Enters a private mount namespace (in a user namespace of its own where this process may
/// not make one directly), whose mounts never reach the one outside.
fn private_mounts() -> Result<(), String> {
    use nix::mount::{MsFlags, mount};
    use nix::sched::{CloneFlags, unshare};
    // A debug build can be told to run as on a machine that allows no namespace, so the tests
    // can show what it says and refuses there.
    if cfg!(debug_assertions) && std::env::var_os("VALIDATOR_DEBUG_NO_NAMESPACES").is_some() {
        return Err("VALIDATOR_DEBUG_NO_NAMESPACES".into());
    }
    if unshare(CloneFlags::CLONE_NEWNS).is_err() {
        let uid = nix::unistd::getuid();
        let gid = nix::unistd::getgid();
        unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS)
            .map_err(|err| format!("unshare: {err}"))?;
        // The same ids inside as outside: files made are the user's, as without confinement.
        for (file, text) in [
            ("/proc/self/setgroups", "deny".to_owned()),
            ("/proc/self/uid_map", format!("{uid} {uid} 1")),
            ("/proc/self/gid_map", format!("{gid} {gid} 1")),
        ] {
            std::fs::write(file, text).map_err(|err| format!("{file}: {err}"))?;
        }
    }
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|err| format!("making the mounts private: {err}"))
}

/// Binds `path` read-only over itself, keeping the flags its mount has (a user namespace may
/// not drop them).
fn bind_read_only(path: &Path) -> Result<(), String> {
    use nix::mount::{MsFlags, mount};
    use nix::sys::statvfs::{FsFlags, statvfs};
    mount(
        Some(path),
        path,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(|err| format!("bind: {err}"))?;
    let had = statvfs(path)
        .map_err(|err| format!("statvfs: {err}"))?
        .flags();
    let mut flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY;
    for (has, keep) in [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if had.contains(has) {
            flags |= keep;
        }
    }
    mount(None::<&str>, path, None::<&str>, flags, None::<&str>)
        .map_err(|err| format!("remount read-only: {err}"))
}

/// Covers a file with `/dev/null`, so reading it reads nothing.
fn cover(path: &Path) -> Result<(), String> {
    use nix::mount::{MsFlags, mount};
    mount(
        Some("/dev/null"),
        path,
        None::<&str>,
        MsFlags::MS_BIND,
        None::<&str>,
    )
    .map_err(|err| format!("cover: {err}"))
}

/// What `validator exec --call ID` confines a call by, as the pre-tool hook left it: the rules
/// file and the task. Kept in the user's state directory (out of the worker's reach when its
/// processes are confined, and in no project), so the command line the model may be shown
/// names no rules file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Call {
    pub rules: PathBuf,
    pub task_dir: PathBuf,
    pub task: String,
    /// The pipeline whose scopes hold it; `None`: the contract alone.
    pub pipeline: Option<String>,
}

/// Largest call record read.
const MAX_CALL_BYTES: u64 = 64 * 1024;

impl Call {
    /// Where call records are kept.
    pub fn dir() -> Result<PathBuf, String> {
        crate::state::user_dir()
            .map(|dir| dir.join("calls"))
            .ok_or_else(|| "no state directory of the user's is known ($HOME is not set)".into())
    }

    /// Saves the record; its id (letters and digits) names it on `validator exec --call`.
    pub fn save(&self) -> Result<String, String> {
        let dir = Self::dir()?;
        let cannot = |err: &dyn std::fmt::Display| {
            format!("cannot keep the call's record in {}: {err}", dir.display())
        };
        std::fs::create_dir_all(&dir).map_err(|err| cannot(&err))?;
        let text = serde_json::to_vec(self).map_err(|err| cannot(&err))?;
        let mut file = tempfile::Builder::new()
            .prefix("")
            .suffix(".json")
            .rand_bytes(16)
            .tempfile_in(&dir)
            .map_err(|err| cannot(&err))?;
        std::io::Write::write_all(&mut file, &text).map_err(|err| cannot(&err))?;
        let (_, path) = file.keep().map_err(|err| cannot(&err))?;
        path.file_stem()
            .and_then(|stem| stem.to_str())
            .map(str::to_owned)
            .ok_or_else(|| cannot(&"a name that is not text"))
    }

    /// The record `id` names: a regular file of the calls directory, reached through no link.
    pub fn load(id: &str) -> Result<Call, String> {
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(format!("`{}` names no call", validator_text::name(id)));
        }
        let path = Self::dir()?.join(format!("{id}.json"));
        let bytes = validator_process::files::read(
            &path,
            MAX_CALL_BYTES,
            validator_process::files::Links::Refuse,
        )
        .map_err(|err| format!("the call's record {} cannot be read: {err}", path.display()))?;
        serde_json::from_slice(&bytes)
            .map_err(|err| format!("the call's record {} is damaged: {err}", path.display()))
    }
}

/// A fresh scratch directory for one confined call, under the system's temporary directory
/// (named `validator-call-…`); those older than a day are removed, as a call's are not once it
/// ends (the command is executed in place of `validator exec`).
pub fn scratch() -> Result<PathBuf, String> {
    let base = std::env::temp_dir();
    // Listing the system's temporary directory costs more than the rest of a call: it is done
    // at most once an hour, as a marker of the user's own says.
    if prune_due(&base) {
        prune_old_scratch(&base, "validator-call-");
        if let Ok(calls) = Call::dir() {
            prune_old_scratch(&calls, "");
        }
    }
    tempfile::Builder::new()
        .prefix("validator-call-")
        .tempdir_in(&base)
        .map(tempfile::TempDir::keep)
        .map_err(|err| {
            format!(
                "cannot make a scratch directory in {}: {err}",
                base.display()
            )
        })
}

/// Whether an hour has passed since the scratch directories were last pruned (the marker
/// `validator-pruned-<uid>` in `base`, touched when it is).
fn prune_due(base: &Path) -> bool {
    const HOUR: std::time::Duration = std::time::Duration::from_secs(60 * 60);
    let marker = base.join(format!("validator-pruned-{}", nix::unistd::getuid()));
    let recent = marker
        .symlink_metadata()
        .ok()
        .filter(|meta| meta.is_file())
        .and_then(|meta| meta.modified().ok())
        .and_then(|at| at.elapsed().ok())
        .is_some_and(|age| age < HOUR);
    if recent {
        return false;
    }
    let _ = std::fs::remove_file(&marker);
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&marker);
    true
}

/// Removes what is older than a day in `base` whose name starts with `prefix`.
fn prune_old_scratch(base: &Path, prefix: &str) {
    const DAY: std::time::Duration = std::time::Duration::from_secs(24 * 60 * 60);
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten().take(10_000) {
        let old = entry
            .metadata()
            .and_then(|meta| meta.modified())
            .ok()
            .and_then(|at| at.elapsed().ok())
            .is_some_and(|age| age > DAY);
        let ours = entry
            .file_name()
            .to_str()
            .is_some_and(|name| name.starts_with(prefix));
        if !ours || !old {
            continue;
        }
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => {
                let _ = std::fs::remove_dir_all(entry.path());
            }
            Ok(kind) if kind.is_file() => {
                let _ = std::fs::remove_file(entry.path());
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trees(list: &[&str]) -> Vec<String> {
        list.iter().map(|t| (*t).to_owned()).collect()
    }

    #[test]
    fn two_scopes_allow_only_the_trees_both_allow() {
        assert_eq!(
            intersect(&trees(&["src", "docs"]), &trees(&["src/app", "tests"])),
            trees(&["src/app"])
        );
        assert_eq!(intersect(&trees(&[""]), &trees(&["src"])), trees(&["src"]));
        assert_eq!(intersect(&trees(&["srcx"]), &trees(&["src"])), trees(&[]));
    }

    #[test]
    fn a_machine_says_what_it_holds_and_what_it_does_not() {
        let none = Machine {
            landlock: 0,
            namespaces: Err("no".into()),
        };
        assert!(
            none.describe(Confine::Required)
                .contains("every shell call is refused")
        );
        let some = Machine {
            landlock: 6,
            namespaces: Err("EPERM".into()),
        };
        assert!(
            some.describe(Confine::BestEffort)
                .contains("post-tool check and the stop only")
        );
    }
}
