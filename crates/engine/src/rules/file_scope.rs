//! `file-scope`: the worker changed only what it was allowed to. "Changed" comes from a
//! baseline taken by `validator snapshot` before the worker started, else from git (against
//! `base`, untracked files included) in a work tree, else every file in the task directory
//! counts. A declared `files_touched` list is checked against what really changed, in both
//! directions. The task directory, its `.git` included, is the worker's: git runs as
//! [`crate::git`] runs it, and the tricks that would hide a change from it (ignore files,
//! a forged index, nested repositories) are undone there. What the changes are counted from
//! (no repository, a repository, one validator cannot use) and each base are fixed when the
//! run starts ([`Listed::pin`]): a repository a test makes, repairs or swaps later hides
//! nothing.
//!
//! The same listing, and the patch git shows for it, serve the `review` rule through
//! [`changed`] and [`diff`]; it is found one way only, here.

pub(crate) use crate::changes::{Changes, Patch, Problem, Source};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use super::{About, Context, KeyError, Outcome, Required, RuleDef};
use crate::git::{Accounted, Pinned, Repo};
use crate::globs::{Pattern, PatternSet};
use crate::rules::spec::GateSpec;
use crate::toolcache::{self, Stamp};
use crate::verdict::{Breach, ChangedFiles, Finding};
use validator_text::name;

use crate::{snapshot, taskdir};

impl Problem {
    /// The gate's outcome when its listing failed this way. Here, not beside `Problem`:
    /// [`crate::changes`] stands below the rules and knows no gate.
    pub(crate) fn outcome(self, ctx: &Context<'_>) -> Outcome {
        match self {
            Problem::Judge(why) => Outcome::error(why),
            Problem::Worker(why) => Outcome::fail(why),
            Problem::Stopped(stopped) => {
                Outcome::stopped(ctx, stopped, "listing what the worker changed", Vec::new())
            }
        }
    }
}

#[derive(Debug, Clone)]
pub struct FileScope {
    allow: PatternSet,
    readonly: PatternSet,
    deny: PatternSet,
    base: String,
    /// A contract's `files_owned: []`: it owns nothing, so every change breaks it.
    owns_nothing: bool,
}

/// The `base:` a gate counts changes from (default: HEAD), refused when git could take it for
/// an option or it is no revision at all. `file-scope`, `content` and `co-change` take it.
pub(crate) fn checked_base(spec: &GateSpec) -> Result<String, KeyError> {
    let base = spec.base.clone().unwrap_or_else(|| "HEAD".into());
    if base.is_empty()
        || base.starts_with('-')
        || base.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(KeyError::new(
            "base",
            format!("`{base}` is not a git revision"),
            "write a ref such as HEAD, main or origin/main",
        ));
    }
    Ok(base)
}

impl RuleDef for FileScope {
    /// Not cacheable: what changed depends on git history and the done signal, not the files alone.
    const ABOUT: About = About {
        keys: &["allow", "readonly", "deny", "base"],
        required: Required::None,
        cacheable: false,
        shows_timeout: false,
        starts_programs: false,
        runs_workers_code: false,
    };

    fn from_spec(spec: &GateSpec, _rules_dir: &Path) -> Result<Self, KeyError> {
        let base = checked_base(spec)?;
        let list = |globs: &Option<Vec<_>>| PatternSet::new(globs.as_deref().unwrap_or_default());
        Ok(FileScope {
            allow: list(&spec.allow),
            readonly: list(&spec.readonly),
            deny: list(&spec.deny),
            base,
            owns_nothing: false,
        })
    }

    fn base(&self) -> Option<&str> {
        Some(&self.base)
    }

    fn run(&self, ctx: &Context<'_>) -> Outcome {
        let Changes {
            source,
            files: changed,
            findings: listing,
            note,
            gate_written,
        } = match changed(ctx, &self.base, Instant::now() + ctx.timeout) {
            Ok(found) => found,
            Err(problem) => return ctx.in_time(problem.outcome(ctx)),
        };
        let listed_before = ctx.listed.take_unbilled(&self.base);
        // What matters first: how changes were hidden, then each breach by its weight, and
        // the files in tool caches (the worker's, but seldom its work) after the rest.
        let mut ranked: Vec<(u8, Finding)> = listing.into_iter().map(|f| (0, f)).collect();
        for file in &changed {
            if let Some((breach, why)) = self.breach(file) {
                let weight = match breach {
                    _ if self.deny.is_match(file) => 1,
                    Breach::Readonly => 2,
                    _ => 3,
                };
                let finding = Finding::in_file(file, format!("changed, but {why}"));
                ranked.push((weight, finding.breaching(breach)));
            }
        }
        ranked.extend(self.undeclared(ctx, &changed).into_iter().map(|f| (4, f)));
        let in_cache = |f: &Finding| f.file.as_deref().is_some_and(toolcache::is_cache);
        ranked.sort_by_key(|(weight, f)| (in_cache(f), *weight));
        let caches = ranked.iter().filter(|(_, f)| in_cache(f)).count();
        let findings = fold_virtualenvs(ranked.into_iter().map(|(_, f)| f).collect(), &changed);

        let from = match note {
            Some(note) => format!("{source}; {note}"),
            None => source.to_string(),
        };
        let count = changed.len();
        let ok = format!(
            "{count} changed file{} in scope ({from})",
            validator_text::plural(count)
        );
        let cache_hint = (caches > 0).then(|| {
            format!(
                "; {caches} in tool caches validator's gates did not write: delete {}, or ignore {} in a committed .gitignore",
                if caches == 1 { "it" } else { "them" },
                if caches == 1 { "it" } else { "them" },
            )
        });
        let mut outcome = Outcome::from_findings(findings, &ok, |n| {
            format!("{n} scope violations among {count} changed files ({from})")
        });
        if let Some(hint) = cache_hint {
            outcome.summary.push_str(&hint);
        }
        outcome.changed_files = Some(Box::new(ChangedFiles::new(
            changed.iter(),
            gate_written.keys(),
        )));
        outcome.spent_before_ms = u32::try_from(listed_before.as_millis()).unwrap_or(u32::MAX);
        ctx.in_time(outcome)
    }
}

impl FileScope {
    /// A declared `files_touched` list held against what really changed, both ways.
    fn undeclared(&self, ctx: &Context<'_>, changed: &BTreeSet<String>) -> Vec<Finding> {
        let Some(declared) = ctx
            .task
            .signal
            .report
            .as_ref()
            .ok()
            .and_then(|report| report.files_touched.as_ref())
        else {
            return Vec::new();
        };
        let declared: BTreeSet<String> = declared
            .iter()
            .map(|f| f.trim_start_matches("./").to_owned())
            .collect();
        let unsaid = changed.difference(&declared).map(|file| {
            Finding::in_file(file, "changed, but not declared in files_touched")
                .breaching(Breach::Undeclared)
        });
        let unmade = declared.difference(changed).map(|file| {
            Finding::in_file(file, "declared in files_touched, but it did not change")
                .breaching(Breach::Undeclared)
        });
        unsaid.chain(unmade).collect()
    }

    /// Whether changing `rel` (a task path) breaks this scope: the breach, and why in words
    /// that follow "changed, but" (the stop's finding) or "refused:" (a tool call's).
    pub fn breach(&self, rel: &str) -> Option<(Breach, String)> {
        if self.deny.is_match(rel) {
            Some((
                Breach::Scope,
                format!("it is in `deny` ({})", globs(&self.deny)),
            ))
        } else if self.readonly.is_match(rel) {
            Some((Breach::Readonly, "it is `readonly`".to_string()))
        } else if self.owns_nothing {
            Some((
                Breach::Scope,
                "the contract owns no file (`files_owned: []`), so none may change".to_string(),
            ))
        } else if !self.allow.is_empty() && !self.allow.is_match(rel) {
            Some((
                Breach::Scope,
                format!("it is outside `allow` ({})", globs(&self.allow)),
            ))
        } else {
            None
        }
    }

    /// The task trees a change may land in, by the literal start of each `allow` glob (what
    /// comes before its first wildcard): `None` when any task path may (no `allow`), none when
    /// nothing may. Coarser than the globs: a tree is the most a kernel rule can name.
    pub fn allowed_trees(&self) -> Option<Vec<String>> {
        if self.owns_nothing {
            return Some(Vec::new());
        }
        if self.allow.is_empty() {
            return None;
        }
        let mut trees = Vec::new();
        for pattern in self.allow.patterns() {
            let tree = literal_start(pattern.as_str());
            if tree.is_empty() {
                return None;
            }
            trees.push(tree);
        }
        Some(trees)
    }

    /// The `allow` globs as written.
    pub fn allowed_globs(&self) -> Vec<&str> {
        self.allow.patterns().iter().map(|p| p.as_str()).collect()
    }

    /// The `readonly` and `deny` globs, each with its literal start (whole, for a glob with no
    /// wildcard): what inside an allowed tree must stay as it is.
    pub fn kept(&self) -> impl Iterator<Item = (&str, String)> {
        self.readonly
            .patterns()
            .iter()
            .chain(self.deny.patterns())
            .map(|pattern| (pattern.as_str(), literal_start(pattern.as_str())))
    }

    /// Whether `rel` must stay as it is (`readonly` or `deny`).
    pub fn keeps(&self, rel: &str) -> bool {
        self.readonly.is_match(rel) || self.deny.is_match(rel)
    }

    /// A gate that holds a contract's file lists: `owned` `None` when the contract does not
    /// say what it owns (nothing is outside it), else the globs of what it owns (none: no file
    /// may change, as `files_touched ⊆ files_owned` says of an empty `files_owned`).
    pub fn from_contract(owned: Option<&[Pattern]>, readonly: &[Pattern]) -> FileScope {
        FileScope {
            allow: PatternSet::new(owned.unwrap_or_default()),
            readonly: PatternSet::new(readonly),
            deny: PatternSet::new(&[]),
            base: "HEAD".into(),
            owns_nothing: owned.is_some_and(<[Pattern]>::is_empty),
        }
    }
}

/// The change sets one run has listed. Every gate of a run that asks what the worker changed
/// gets the same answer, and git is asked once per base however many gates ask (a pack's scope,
/// content and changed-only linters each did, nine git processes apiece), until a gate that
/// starts a program (a test runs the worker's code, which may write files) has run: then
/// the gates after it list anew ([`Listed::forget`]), as each did on its own before. Only an
/// answer is kept, so a gate whose listing failed (its deadline passed, say) leaves the next
/// one to list under its own; and no gate waits on another's listing: two that ask at once
/// both list.
#[derive(Default)]
pub struct Listed {
    known: Mutex<Known>,
    /// A directory of this run's own for git's private indexes, when validator's state is no
    /// place for them (see [`index_home`]); removed with the run.
    scratch: OnceLock<Option<tempfile::TempDir>>,
}

#[derive(Default)]
struct Known {
    answers: HashMap<(String, Question), Changes>,
    /// Counts the forgettings: a listing begun before one is not kept after it.
    generation: u64,
    /// What the run counts changes from, as the task was when the run started (or, outside a
    /// run, when a gate first asked): never forgotten, so a test that makes, repairs or swaps
    /// a repository changes nothing the gates after it compare against.
    origin: Option<Origin>,
    /// Each base as the repository had it when the run started (or, if it could not be told
    /// then, when a gate first asked): never forgotten, so a commit made during the run (a
    /// test may make one) hides nothing from the gates after it. A base git could not read
    /// when the run started stays that failure.
    pinned: HashMap<String, Result<Pinned, Unusable>>,
    /// The tool-cache files earlier runs' gates wrote (see [`crate::toolcache`]), read when
    /// first needed.
    recorded: Option<std::sync::Arc<toolcache::Record>>,
    /// For each base, the tool-cache files that were the worker's changes when the run started
    /// ([`Listed::start`]): judged whatever a gate writes into them later. For a base not in
    /// it (outside a run, or before its first listing), only what the record holds is left out.
    caches_at_start: HashMap<String, BTreeSet<String>>,
    /// For each base listed at the run's start ([`Listed::start`]), before any gate, how long
    /// that took: the first scope gate that takes the listing counts it as its own time.
    unbilled: HashMap<String, Duration>,
}

/// What a run counts the worker's changes from.
#[derive(Clone)]
enum Origin {
    /// No repository: every file (or the baseline), whatever a test makes later.
    NoRepository,
    /// This git directory, and no other.
    Repository(PathBuf),
    /// A repository validator could not use, and why: the answer for the whole run.
    Unusable(Unusable),
}

/// A [`Problem`] kept for the rest of the run.
#[derive(Clone)]
struct Unusable {
    judge: bool,
    why: String,
}

impl Unusable {
    fn of(problem: &Problem) -> Unusable {
        match problem {
            Problem::Judge(why) => Unusable {
                judge: true,
                why: why.clone(),
            },
            Problem::Worker(why) => Unusable {
                judge: false,
                why: why.clone(),
            },
            Problem::Stopped(_) => Unusable {
                judge: false,
                why: "looking for the task's repository did not finish by the gate's deadline"
                    .into(),
            },
        }
    }

    fn problem(&self) -> Problem {
        match self.judge {
            true => Problem::Judge(self.why.clone()),
            false => Problem::Worker(self.why.clone()),
        }
    }

    /// As found when the run started, told to a gate that asks later (the task may look
    /// repaired by then).
    fn since_start(&self) -> Problem {
        Unusable {
            judge: self.judge,
            why: format!(
                "when the run started, {} (what the run counts changes from is fixed then)",
                self.why
            ),
        }
        .problem()
    }
}

/// The task's repository as the run pinned it, or none (and whether one was made since the
/// run started: it is not used).
enum Opened<'c> {
    Repo(Box<Repo<'c>>),
    None { appeared: bool },
}

/// What a gate asked of the change set.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Question {
    /// What the worker changed.
    Changed,
    /// What a `changed_only` gate considers under `check --all-files`: every file git sees.
    EveryFile,
}

impl Listed {
    fn known(&self) -> MutexGuard<'_, Known> {
        self.known.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn answer(
        &self,
        base: &str,
        question: Question,
        list: impl FnOnce() -> Result<Changes, Problem>,
    ) -> Result<Changes, Problem> {
        let key = (base.to_owned(), question);
        let generation = {
            let known = self.known();
            if let Some(changes) = known.answers.get(&key) {
                return Ok(changes.clone());
            }
            known.generation
        };
        let changes = list()?;
        let mut known = self.known();
        if known.generation == generation {
            known.answers.insert(key, changes.clone());
        }
        Ok(changes)
    }

    /// Pins what the run counts changes from and each of `bases`, before the run's first gate
    /// (see [`Known::origin`] and [`Known::pinned`]). Nothing to pin under a baseline.
    pub fn pin<'b>(&self, ctx: &Context<'_>, bases: impl IntoIterator<Item = &'b str>) {
        if snapshot_in_use(ctx) {
            return;
        }
        let Ok(Opened::Repo(repo)) = self.repository(ctx, Instant::now() + ctx.timeout) else {
            return;
        };
        for base in bases {
            if self.known().pinned.contains_key(base) {
                continue;
            }
            let pinned = repo.pin(base).map_err(|why| Unusable {
                judge: false,
                why: format!("git cannot read the task's repository (rev-parse): {why}"),
            });
            self.known().pinned.entry(base.to_owned()).or_insert(pinned);
        }
    }

    /// The task's repository, if the run counts changes from one: the one it started with,
    /// else a FAIL that says so; the run's failure to use one when it started, whatever the
    /// task holds now; none if it had none then.
    fn repository<'c>(
        &self,
        ctx: &'c Context<'c>,
        deadline: Instant,
    ) -> Result<Opened<'c>, Problem> {
        let opened = index_home(ctx)
            .and_then(|home| Repo::open(ctx.task, ctx.cancel, deadline, &home, ctx.user_excludes));
        let now = match &opened {
            Ok(None) => Origin::NoRepository,
            Ok(Some(repo)) => Origin::Repository(repo.git_dir().to_path_buf()),
            Err(problem) => Origin::Unusable(Unusable::of(problem)),
        };
        let (origin, first) = {
            let mut known = self.known();
            let first = known.origin.is_none();
            (known.origin.get_or_insert(now).clone(), first)
        };
        match (origin, opened) {
            (Origin::Unusable(unusable), _) if first => Err(unusable.problem()),
            (Origin::Unusable(unusable), _) => Err(unusable.since_start()),
            (Origin::NoRepository, opened) => Ok(Opened::None {
                appeared: !matches!(opened, Ok(None)),
            }),
            (Origin::Repository(started), Ok(Some(repo))) if repo.git_dir() == started => {
                Ok(Opened::Repo(Box::new(repo)))
            }
            (Origin::Repository(started), Ok(Some(repo))) => Err(Problem::Worker(format!(
                "the task's repository is no longer the one the run started with ({}, now {}): a repository swapped during the run is not compared against",
                name(&started.to_string_lossy()),
                name(&repo.git_dir().to_string_lossy())
            ))),
            (Origin::Repository(started), Ok(None)) => Err(Problem::Worker(format!(
                "the task's repository ({}) is gone since the run started: its changes cannot be counted; leave it in place",
                name(&started.to_string_lossy())
            ))),
            (Origin::Repository(_), Err(problem)) => Err(problem),
        }
    }

    /// `base` as pinned for this run, pinned now if it was not yet.
    fn pinned(&self, repo: &Repo<'_>, base: &str) -> Result<Pinned, Problem> {
        if let Some(pinned) = self.known().pinned.get(base) {
            return pinned.clone().map_err(|unusable| unusable.since_start());
        }
        let pinned = repo.pin(base).map_err(|why| {
            Problem::Worker(format!(
                "git cannot read the task's repository (rev-parse): {why}"
            ))
        })?;
        let kept = self
            .known()
            .pinned
            .entry(base.to_owned())
            .or_insert(Ok(pinned))
            .clone();
        kept.map_err(|unusable| unusable.since_start())
    }

    /// This run's own directory for git's private indexes, made when first asked.
    fn scratch(&self) -> Option<PathBuf> {
        self.scratch
            .get_or_init(|| {
                tempfile::Builder::new()
                    .prefix("validator-index-")
                    .tempdir()
                    .ok()
            })
            .as_ref()
            .map(|dir| dir.path().to_path_buf())
    }

    /// Marks the run's start, after [`Listed::pin`] and before its first gate: what the worker
    /// changed in tool caches by then, against each of `bases`, stays the worker's change
    /// whatever a gate writes into it later; what else a gate writes into a tool cache during
    /// the run is not (see [`crate::toolcache`]). A base that cannot be listed now is left
    /// to its gates, which say why; for it only the record's files are left out.
    pub fn start<'b>(&self, ctx: &Context<'_>, bases: impl IntoIterator<Item = &'b str>) {
        for base in bases {
            let listing = Instant::now();
            let Ok(changes) = changed(ctx, base, ctx.started + ctx.timeout) else {
                continue;
            };
            self.known()
                .unbilled
                .insert(base.to_owned(), listing.elapsed());
            let judged = changes
                .files
                .into_iter()
                .filter(|rel| toolcache::is_cache(rel))
                .collect();
            self.known().caches_at_start.insert(base.to_owned(), judged);
        }
    }

    /// The tool-cache files the run's gates wrote, as they are at its end: the record the next
    /// run leaves them out by. None if the run never started or a base cannot be listed now
    /// (the earlier record stands).
    pub fn gate_written(&self, ctx: &Context<'_>) -> Option<toolcache::Record> {
        let bases: Vec<String> = self.known().caches_at_start.keys().cloned().collect();
        if bases.is_empty() {
            return None;
        }
        let mut record = toolcache::Record::default();
        for base in bases {
            record.extend(
                changed(ctx, &base, ctx.started + ctx.timeout)
                    .ok()?
                    .gate_written,
            );
        }
        Some(record)
    }

    /// Leaves out of `changes` (listed against `base`) the tool-cache files validator's own
    /// gates wrote: during this run, those that were not the worker's changes when it started;
    /// outside a run, those exactly as the record holds them.
    fn leave_out_gate_writes(&self, ctx: &Context<'_>, base: &str, changes: &mut Changes) {
        let stamped: Vec<(String, Stamp)> = changes
            .files
            .iter()
            .filter(|rel| toolcache::is_cache(rel))
            .filter_map(|rel| Some((rel.clone(), Stamp::of(ctx.task, rel)?)))
            .collect();
        if stamped.is_empty() {
            return;
        }
        let mut known = self.known();
        let written: BTreeMap<String, Stamp> = match known.caches_at_start.get(base) {
            Some(judged) => stamped
                .into_iter()
                .filter(|(rel, _)| !judged.contains(rel))
                .collect(),
            None => {
                let recorded = known
                    .recorded
                    .get_or_insert_with(|| {
                        std::sync::Arc::new(toolcache::load(ctx.state_dir, ctx.task))
                    })
                    .clone();
                stamped
                    .into_iter()
                    .filter(|(rel, stamp)| recorded.holds(rel, stamp))
                    .collect()
            }
        };
        drop(known);
        changes.files.retain(|rel| !written.contains_key(rel));
        changes.gate_written = written;
    }

    /// How long listing the changes against `base` took at the run's start, if no gate has
    /// counted it yet (and the listing is still the answer): counted once, by the gate asking.
    fn take_unbilled(&self, base: &str) -> Duration {
        self.known().unbilled.remove(base).unwrap_or_default()
    }

    /// Forgets every answer: the task's files may have changed since they were listed.
    pub fn forget(&self) {
        let mut known = self.known();
        known.answers.clear();
        known.unbilled.clear();
        known.generation += 1;
    }
}

/// Where git keeps validator's private indexes of the task's repositories (see
/// [`crate::git`]): `<state>/git-index`, out of the worker's reach, so what git hashed once it
/// need not hash again in the next run; with the state where a worker writes (the task, or
/// the staging directory holding it, where any worker could forge another's) or unusable, a
/// directory of this run's own.
fn index_home(ctx: &Context<'_>) -> Result<PathBuf, Problem> {
    let reachable =
        |dir: &Path| dir.starts_with(&ctx.task.dir) || dir.starts_with(&ctx.task.worker_area);
    if !state_inside_task(ctx) {
        let home = ctx.state_dir.join("git-index");
        let made = std::fs::DirBuilder::new()
            .recursive(true)
            .create(&home)
            .and_then(|()| home.canonicalize());
        if let Ok(real) = made {
            if !reachable(&real) {
                return Ok(real);
            }
        }
    }
    ctx.listed.scratch().ok_or_else(|| {
        Problem::Judge(
            "validator cannot make a directory for its index of the task's repository (neither in its state directory nor a temporary one)".into(),
        )
    })
}

/// What the worker changed in the task directory: from the snapshot baseline, else git against
/// `base` (untracked files included), else every file; the validator's own files left out.
/// Any git it runs is hardened and ends by `deadline`. Listed once per run (see [`Listed`]).
pub(crate) fn changed(
    ctx: &Context<'_>,
    base: &str,
    deadline: Instant,
) -> Result<Changes, Problem> {
    ctx.listed.answer(base, Question::Changed, || {
        list_changes(ctx, base, deadline)
    })
}

/// Whether the run counts changes from a snapshot baseline rather than git: one taken outside
/// the task, where the worker could not have written it.
fn snapshot_in_use(ctx: &Context<'_>) -> bool {
    !state_inside_task(ctx) && snapshot::path(ctx.state_dir, &ctx.task.name).exists()
}

/// Whether the worker can write validator's state directory (inside the task or the staging
/// directory holding it, or reached through a link there): nothing in it is then trusted.
fn state_inside_task(ctx: &Context<'_>) -> bool {
    ctx.task.worker_may_write(ctx.state_dir)
}

fn list_changes(ctx: &Context<'_>, base: &str, deadline: Instant) -> Result<Changes, Problem> {
    let task = ctx.task;
    let by = taskdir::Deadline::new(deadline, ctx.cancel);
    let listed_by =
        |listing: Result<taskdir::Listing, taskdir::Stopped>| listing.map_err(Problem::Stopped);
    tracing::debug!(task = %task.name, gate = ctx.gate, base, "listing what the worker changed");
    let mut note = crate::git::passed_over_in_worker_area(task)
        .then_some("a `.git` in the staging directory, which every worker writes, was passed over");
    // A baseline the worker could have written is no baseline.
    let baseline = if state_inside_task(ctx) {
        if snapshot::path(ctx.state_dir, &task.name).exists() {
            note =
                Some("a baseline inside the task directory was ignored: move `state:` out of it");
        }
        None
    } else {
        snapshot::load(ctx.state_dir, &task.name).map_err(Problem::Judge)?
    };
    let mut changes = if let Some(baseline) = baseline {
        // An explicit baseline wins over git: the coordinator took it on purpose, while a
        // repository inside the task directory may be the worker's own.
        let files = snapshot::changes(task, &baseline, &by).map_err(|err| match err {
            snapshot::Unjudged::Stopped(stopped) => Problem::Stopped(stopped),
            snapshot::Unjudged::Unreadable(why) => Problem::Worker(why),
        })?;
        let findings = listing_problems(&listed_by(taskdir::list_by(task, &by))?);
        Changes {
            source: Source::Baseline,
            files,
            findings,
            note,
            gate_written: Default::default(),
        }
    } else {
        match ctx.listed.repository(ctx, deadline)? {
            Opened::Repo(repo) => {
                let pinned = ctx.listed.pinned(&repo, base)?;
                // Said in the verdict, so a file they hide is not hidden unseen.
                let note = note.or(ctx.user_excludes.map(|_| {
                    "the user's global excludes (core.excludesFile) count in the user's own `validator check`, never under watch, an agent hook or `validator run`"
                }));
                let (mut changes, accounted) = repo.changes(base, &pinned, note)?;
                let walked = listed_by(taskdir::list_passing_over_by(
                    task,
                    &|dir| accounted.dirs.contains(dir),
                    &by,
                ))?;
                add_unseen(ctx, &repo, &mut changes, &accounted, walked);
                changes
            }
            Opened::None { appeared } => {
                if appeared {
                    note = Some(
                        "the task had no repository when the run started; the one made since is not compared against",
                    );
                }
                let listing = listed_by(taskdir::list_by(task, &by))?;
                let findings = listing_problems(&listing);
                let files = listing
                    .files
                    .into_iter()
                    .map(|e| e.rel)
                    .chain(listing.special)
                    .collect();
                Changes {
                    source: Source::Everything,
                    files,
                    findings,
                    note,
                    gate_written: Default::default(),
                }
            }
        }
    };
    // The validator's own files (state, verdicts, the done file) are never the worker's change,
    // nor what its gates wrote into tool caches.
    changes.files.retain(|rel| !task.is_ignored(rel));
    ctx.listed.leave_out_gate_writes(ctx, base, &mut changes);
    Ok(changes)
}

/// Adds to `changes` what validator's own walk of the task finds and git's listings do not
/// account for: files under a directory named `.git` (git never looks inside one), FIFOs,
/// sockets and devices, anything behind a directory git could not open. The walk is the
/// ground truth of what exists, so nothing the worker makes is invisible by where it puts it.
/// A directory the walk cannot read either is a finding, unless the committed ignore rules
/// hide it (a tool's data directory another user owns).
fn add_unseen(
    ctx: &Context<'_>,
    repo: &Repo<'_>,
    changes: &mut Changes,
    accounted: &Accounted,
    listing: taskdir::Listing,
) {
    let unseen: Vec<String> = listing
        .files
        .iter()
        .map(|entry| &entry.rel)
        .chain(&listing.escaping_links)
        .chain(&listing.linked_dirs)
        .chain(&listing.special)
        .filter(|rel| !changes.files.contains(*rel) && !accounted.files.contains(*rel))
        .cloned()
        .collect();
    changes.files.extend(unseen);

    let (maybe_ignored, unreadable): (Vec<&String>, Vec<&String>) =
        listing.unreadable.iter().partition(|dir| {
            let dir = format!("{dir}/");
            accounted
                .ignored_dirs
                .iter()
                .any(|ignored| dir.starts_with(ignored.as_str()))
        });
    let hidden = if maybe_ignored.is_empty() {
        Vec::new()
    } else {
        repo.hidden_by_committed_rules(&maybe_ignored, accounted.ignore_rules.as_deref())
    };
    for dir in unreadable.into_iter().chain(
        maybe_ignored
            .into_iter()
            .filter(|dir| !hidden.contains(*dir)),
    ) {
        changes.findings.push(unreadable_finding(dir));
    }
    for file in &changes.files {
        if is_escaping_link(ctx.task, file) {
            changes.findings.push(Finding::in_file(
                file,
                "is a link that points outside the task directory",
            ));
        }
    }
}

/// The findings in a new Python virtualenv (a directory whose `pyvenv.cfg` is among the
/// changes) folded into one per virtualenv that says what to do: ignore it in a committed
/// `.gitignore`. Its links to the interpreter and pip's `cacert.pem` are no work of the
/// worker's to fix, and deleting them breaks the project. It still fails: a `pyvenv.cfg` is
/// anyone's to write, so it hides nothing.
fn fold_virtualenvs(findings: Vec<Finding>, changed: &BTreeSet<String>) -> Vec<Finding> {
    let roots: Vec<String> = changed
        .iter()
        .filter_map(|file| match file.as_str() {
            "pyvenv.cfg" => None,
            file => file
                .strip_suffix("/pyvenv.cfg")
                .map(|dir| format!("{dir}/")),
        })
        .collect();
    if roots.is_empty() {
        return findings;
    }
    let root_of = |f: &Finding| {
        let file = f.file.as_deref()?;
        roots.iter().find(|root| file.starts_with(root.as_str()))
    };
    let mut folded: Vec<(String, usize, Option<Breach>)> = Vec::new();
    let mut rest = Vec::new();
    for finding in findings {
        match root_of(&finding) {
            Some(root) => match folded.iter_mut().find(|(r, _, _)| r == root) {
                Some((_, n, _)) => *n += 1,
                None => folded.push((root.clone(), 1, finding.breach)),
            },
            None => rest.push(finding),
        }
    }
    let mut out: Vec<Finding> = folded
        .into_iter()
        .map(|(root, n, breach)| {
            let files = changed.iter().filter(|f| f.starts_with(&root)).count();
            let finding = Finding::in_file(
                &root,
                format!(
                    "is a Python virtualenv (it has pyvenv.cfg) that no committed .gitignore ignores, so its {files} files count as changes ({n} finding{} in it): do not edit or delete it; add the line `/{root}` to the project's .gitignore and commit it. A global excludes file (core.excludesFile) or .git/info/exclude does not count here: a worker could write them",
                    validator_text::plural(n)
                ),
            );
            match breach {
                Some(breach) => finding.breaching(breach),
                None => finding,
            }
        })
        .collect();
    out.extend(rest);
    out
}

fn is_escaping_link(task: &crate::task::Task, rel: &str) -> bool {
    let path = task.dir.join(rel);
    path.symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
        && !path
            .canonicalize()
            .is_ok_and(|target| target.starts_with(&task.dir))
}

fn unreadable_finding(dir: &str) -> Finding {
    Finding::in_file(
        dir,
        "cannot be read, so its changes cannot be seen; make it readable",
    )
}

/// The files a `changed_only` gate looks at: what the worker changed, or with `check
/// --all-files` the whole project as git sees it: the base's files, plus the changes (new
/// files the committed ignore rules do not hide). Without git, every file.
pub(crate) fn considered(
    ctx: &Context<'_>,
    base: &str,
    deadline: Instant,
) -> Result<Changes, Problem> {
    if !ctx.all_files {
        return changed(ctx, base, deadline);
    }
    ctx.listed.answer(base, Question::EveryFile, || {
        every_file(ctx, base, deadline)
    })
}

fn every_file(ctx: &Context<'_>, base: &str, deadline: Instant) -> Result<Changes, Problem> {
    let mut changes = changed(ctx, base, deadline)?;
    if let Source::Git(_) = changes.source {
        if let Opened::Repo(repo) = ctx.listed.repository(ctx, deadline)? {
            let pinned = ctx.listed.pinned(&repo, base)?;
            changes
                .files
                .extend(repo.tracked(&pinned).map_err(Problem::Worker)?);
            changes.files.retain(|rel| !ctx.task.is_ignored(rel));
        }
    } else if let Source::Baseline = changes.source {
        changes.files = taskdir::list(ctx.task)
            .files
            .into_iter()
            .map(|e| e.rel)
            .filter(|rel| !ctx.task.is_ignored(rel))
            .collect();
    }
    Ok(changes)
}

/// Runs `look` with a context of its own for `task`, outside any run (a hook between the
/// agent's steps): its own change set, no cancel, `timeout` for its git.
fn outside_a_run<T>(
    task: &crate::task::Task,
    state_dir: &Path,
    timeout: std::time::Duration,
    look: impl FnOnce(&Context<'_>, Instant) -> T,
) -> T {
    let listed = Listed::default();
    let ctx = Context {
        task,
        gate: "(between the agent's steps)",
        started: Instant::now(),
        failed_before: None,
        timeout,
        state_dir,
        cancel: None,
        all_files: false,
        user_excludes: None,
        listed: &listed,
    };
    look(&ctx, Instant::now() + timeout)
}

/// What differs from HEAD in the task's repository, as git tells it (never a snapshot
/// baseline, which is not HEAD): for a git hook to know which files to look at.
pub fn changed_in_git(
    task: &crate::task::Task,
    state_dir: &Path,
    timeout: std::time::Duration,
) -> Result<BTreeSet<String>, String> {
    outside_a_run(task, state_dir, timeout, |ctx, deadline| {
        let changes = changed(ctx, "HEAD", deadline).map_err(Problem::into_reason)?;
        match changes.source {
            Source::Git(_) => Ok(changes.files),
            other => Err(format!(
                "the changes were counted from {other}, not from git's HEAD"
            )),
        }
    })
}

/// What the worker changed against HEAD, outside any run (after an agent's tool ran).
pub fn changed_now(
    task: &crate::task::Task,
    state_dir: &Path,
    timeout: std::time::Duration,
) -> Result<BTreeSet<String>, String> {
    outside_a_run(task, state_dir, timeout, |ctx, deadline| {
        changed(ctx, "HEAD", deadline)
            .map(|changes| changes.files)
            .map_err(Problem::into_reason)
    })
}

/// What the worker changed, as text to compare one stop with the next (the drift breaker):
/// the changed files' names and the patch of the tracked ones against HEAD, cut at 256 KiB.
/// Empty when it cannot be listed in a few seconds.
pub fn patch_text(task: &crate::task::Task, state_dir: &Path) -> String {
    outside_a_run(
        task,
        state_dir,
        std::time::Duration::from_secs(10),
        |ctx, deadline| {
            let mut text = String::new();
            if let Ok(changes) = changed(ctx, "HEAD", deadline) {
                for file in &changes.files {
                    text.push_str(file);
                    text.push('\n');
                }
            }
            if let Ok(Some(patch)) = diff(ctx, "HEAD", deadline, 256 * 1024) {
                text.push_str(&patch.text);
            }
            text
        },
    )
}

/// The patch of the tracked files against `base`, its head kept up to `cap` bytes; `Ok(None)`
/// outside a git work tree or when `base` is not a commit.
pub(crate) fn diff(
    ctx: &Context<'_>,
    base: &str,
    deadline: Instant,
    cap: usize,
) -> Result<Option<Patch>, String> {
    match ctx
        .listed
        .repository(ctx, deadline)
        .map_err(Problem::into_reason)?
    {
        Opened::Repo(repo) => repo.patch(
            &ctx.listed
                .pinned(&repo, base)
                .map_err(Problem::into_reason)?,
            cap,
        ),
        Opened::None { .. } => Ok(None),
    }
}

/// The segments of a glob before the first that holds a wildcard (`src/**/*.rs`: `src`; a
/// glob without one: all of it).
pub fn literal_start(glob: &str) -> String {
    glob.split('/')
        .take_while(|part| !part.contains(['*', '?', '[', '{', '\\']))
        .collect::<Vec<_>>()
        .join("/")
}

fn globs(set: &PatternSet) -> String {
    set.patterns()
        .iter()
        .map(|p| p.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a listing could not see or refused to follow: each is a finding, never silence.
fn listing_problems(listing: &taskdir::Listing) -> Vec<Finding> {
    let unreadable = listing.unreadable.iter().map(|dir| unreadable_finding(dir));
    let links = listing
        .escaping_links
        .iter()
        .map(|link| Finding::in_file(link, "is a link that points outside the task directory"));
    unreadable.chain(links).collect()
}

#[cfg(test)]
mod tests {
    use super::{Changes, Listed, Problem, Question, Source};

    fn listing(file: &str) -> Result<Changes, Problem> {
        Ok(Changes {
            source: Source::Baseline,
            files: [file.to_owned()].into(),
            findings: Vec::new(),
            note: None,
            gate_written: Default::default(),
        })
    }

    fn files(answer: Result<Changes, Problem>) -> Vec<String> {
        answer.map_or_else(|_| Vec::new(), |c| c.files.into_iter().collect())
    }

    #[test]
    fn an_answer_is_kept_until_forgotten_and_a_failure_is_not_kept() {
        let listed = Listed::default();
        let failed = listed.answer("HEAD", Question::Changed, || {
            Err(Problem::Judge("timed out".into()))
        });
        assert!(failed.is_err());
        assert_eq!(
            files(listed.answer("HEAD", Question::Changed, || listing("a"))),
            ["a"]
        );
        assert_eq!(
            files(listed.answer("HEAD", Question::Changed, || listing("b"))),
            ["a"]
        );
        // Another base is another question.
        assert_eq!(
            files(listed.answer("main", Question::Changed, || listing("c"))),
            ["c"]
        );
        listed.forget();
        assert_eq!(
            files(listed.answer("HEAD", Question::Changed, || listing("d"))),
            ["d"]
        );
    }

    #[test]
    fn a_listing_begun_before_a_forgetting_is_not_kept_after_it() {
        // A gate lists while a sibling's command ends and the run forgets: what the first
        // found may predate the command's writes, so the next gate lists anew.
        let listed = Listed::default();
        let during = listed.answer("HEAD", Question::Changed, || {
            listed.forget();
            listing("before")
        });
        assert_eq!(files(during), ["before"]);
        assert_eq!(
            files(listed.answer("HEAD", Question::Changed, || listing("after"))),
            ["after"]
        );
    }
}
