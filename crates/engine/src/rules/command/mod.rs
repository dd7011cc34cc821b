//! The command rules, `lint` ([`lint`]) and `test` ([`test`]), and what they share: a command
//! (`run:`) run over the task and judged by its exit code, each rule reading its output its own
//! way, with the same keys but theirs ([`Command`]). The command never goes through a shell;
//! file names from `files:` are passed as separate arguments, in batches that fit the OS limit.
//! Whose fault a runner that is not there is, [`runner`] says.

pub mod lint;
mod node_tools;
mod runner;
mod select;
pub mod test;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::{Context, KeyError, MAX_FINDINGS, Outcome};
use crate::duration;
use crate::globs::PatternSet;
use crate::rules::spec::{GateSpec, RuleKind};
use crate::taskdir;
use crate::verdict::Finding;
use validator_process::{self as process, Exit, OUTPUT_CAP, SpawnError};
use validator_reading::findings;

/// Largest report read (`junit:`, `report:`).
const MAX_REPORT_BYTES: u64 = 16 * 1024 * 1024;
/// How much output the verdict keeps for a reader (the full capture feeds the parsers).
const TAIL_LINES: usize = 40;
const TAIL_BYTES: usize = 4096;

#[derive(Debug, Clone)]
pub struct Command {
    argv: Vec<String>,
    files: Option<PatternSet>,
    env: Vec<(String, String)>,
    cwd: Option<String>,
    junit: Option<String>,
    /// The formats findings are read from (`format:`; lint only).
    format: findings::Only,
    /// The command that fixes what the gate finds (`fix:`).
    fix: Option<Vec<String>>,
    /// A findings report the command writes (`report:`; lint only).
    report: Option<String>,
    /// Findings fail the gate even when the command exits 0 (`fail_on_findings:`; lint only).
    fail_on_findings: bool,
    /// `files:` are only the ones the worker changed, counted from `base` (`changed_only:`).
    changed_only: Option<String>,
    /// The command that runs just the tests it names (`select:`; test only).
    select: Option<Vec<String>>,
}

/// The variables a command is started with, on top of validator's own environment.
type Environment = Vec<(OsString, OsString)>;

/// What the command's runs came to: the output's tail, how many bytes of it were dropped, and
/// how the last run ended.
struct Ran {
    output: Vec<u8>,
    dropped: u64,
    exit: Exit,
}

/// What to read out of the output.
#[derive(Debug, Clone, Copy)]
pub enum Parse {
    Findings,
    TestNames,
}

/// `lint` and `test` are one command rule reading its output two ways: the same keys but
/// theirs, the same delegation. Written out in each rule's own file, so its paths are whole.
macro_rules! command_rule {
    ($rule:ident, $parse:expr, $about:expr) => {
        impl $crate::rules::RuleDef for $rule {
            const ABOUT: $crate::rules::About = $about;

            fn from_spec(
                spec: &$crate::rules::spec::GateSpec,
                _rules_dir: &std::path::Path,
            ) -> Result<Self, $crate::rules::KeyError> {
                $crate::rules::command::Command::from_spec(spec).map($rule)
            }

            fn run(&self, ctx: &$crate::rules::Context<'_>) -> $crate::rules::Outcome {
                self.0.run(ctx, $parse)
            }

            fn preflight(&self) -> Option<String> {
                self.0.preflight()
            }

            fn program(&self, task: &$crate::task::Task) -> Option<std::path::PathBuf> {
                self.0.program(task)
            }

            fn fix(&self) -> Option<&[String]> {
                self.0.fix.as_deref()
            }

            fn base(&self) -> Option<&str> {
                self.0.changed_only.as_deref()
            }
        }
    };
}
use command_rule;

impl Command {
    pub fn from_spec(spec: &GateSpec) -> Result<Self, KeyError> {
        let Some(run) = &spec.run else {
            let example = if spec.rule == RuleKind::Test {
                "cargo test --quiet"
            } else {
                "[\"ruff\", \"check\"]"
            };
            return Err(KeyError::missing("run", spec.rule, example));
        };
        let env = env_from_spec(spec)?;
        for (key, value) in [
            ("cwd", &spec.cwd),
            ("junit", &spec.junit),
            ("report", &spec.report),
        ] {
            if let Some(path) = value {
                if Path::new(path).is_absolute() || path.split('/').any(|part| part == "..") {
                    return Err(KeyError::new(
                        key,
                        format!("`{key}: {path}` leaves the task directory"),
                        format!("write `{key}:` relative to the task directory, without `..`"),
                    ));
                }
            }
        }
        let format = match spec.format.as_deref() {
            None => findings::Only::default(),
            Some(name) => findings::Only::named(name).ok_or_else(|| {
                let help = match validator_text::closest(name, findings::format_names()) {
                    Some(near) => format!("did you mean `{near}`?"),
                    _ => format!(
                        "write auto or one of: {}",
                        findings::format_names().collect::<Vec<_>>().join(", ")
                    ),
                };
                KeyError::new(
                    "format",
                    format!("validator reads no output format named `{name}`"),
                    help,
                )
            })?,
        };
        let changed_only = spec.changed_only.unwrap_or(false);
        if changed_only && spec.files.is_none() {
            return Err(KeyError::new(
                "changed_only",
                "`changed_only` picks among the files of `files:`, and this gate has none",
                "add the files the command takes, e.g. `files: [\"**/*.py\"]`, or remove `changed_only`",
            ));
        }
        if changed_only && spec.inputs.is_some() {
            return Err(KeyError::new(
                "inputs",
                "a gate that looks at the changed files only judges the change, which `inputs:` cannot key a cache by",
                "remove `inputs:` (the tool's own cache keeps it fast) or `changed_only`",
            ));
        }
        if spec.base.is_some() && !changed_only {
            return Err(KeyError::new(
                "base",
                "`base:` says what changes count from, and this gate has no `changed_only: true`",
                "add `changed_only: true`, or remove `base:`",
            ));
        }
        if let Some(select) = &spec.select {
            select::check(&select.0)?;
        }
        Ok(Command {
            select: spec.select.as_ref().map(|select| select.0.clone()),
            changed_only: changed_only.then(|| spec.base.clone().unwrap_or_else(|| "HEAD".into())),
            argv: run.0.clone(),
            files: spec.files.as_deref().map(PatternSet::new),
            env,
            cwd: spec.cwd.clone(),
            junit: spec.junit.clone(),
            format,
            fix: spec.fix.as_ref().map(|fix| fix.0.clone()),
            report: spec.report.clone(),
            fail_on_findings: spec.fail_on_findings.unwrap_or(false),
        })
    }

    /// Runs the gate's `fix:` command over `task`, where and as the gate's own command runs;
    /// `Ok` with how it ended, `Err` when it could not run.
    pub fn run_fix(
        &self,
        task: &crate::task::Task,
        timeout: std::time::Duration,
        cancel: Option<&process::Cancel>,
    ) -> Option<Result<String, String>> {
        let fix = self.fix.as_ref()?;
        let run = || -> Result<String, String> {
            let cwd = self.working_dir(task)?;
            let caches = crate::toolcache::scratch(task);
            let (argv, env) = self.launch(task, caches.as_ref().map(|d| d.path()), &cwd, fix)?;
            let finished = process::run(&process::Spec {
                argv: &argv,
                cwd: &cwd,
                env: &env,
                env_remove: process::GIT_HOOK_VARS,
                timeout,
                output_cap: OUTPUT_CAP,
                cancel,
                separate_stderr: false,
                sandbox: None,
            })
            .map_err(|err| err.to_string())?;
            let how = match finished.exit {
                Exit::Code(0) => return Ok("exited with 0".to_owned()),
                Exit::Code(code) => format!("exited with {code}"),
                Exit::Signal(signal) => format!("was killed by signal {signal}"),
                Exit::TimedOut => format!("timed out after {}", duration::format(timeout)),
                Exit::Cancelled => "was cancelled".to_owned(),
            };
            let output = String::from_utf8_lossy(&finished.output);
            let said = tail(&findings::strip_ansi(&output), 0).unwrap_or_default();
            Err(if said.trim().is_empty() {
                how
            } else {
                format!("{how}; it said:\n{said}")
            })
        };
        Some(run())
    }

    /// How `written` (the gate's command or its `fix:`) is started from `cwd`: its argv, the
    /// program resolved as a shell there would, and its environment. A program inside the task
    /// is the worker's file: run only where it really is, never through a link out.
    fn launch(
        &self,
        task: &crate::task::Task,
        caches: Option<&Path>,
        cwd: &Path,
        written: &[String],
    ) -> Result<(Vec<OsString>, Environment), String> {
        let program = program_in(&written[0], cwd);
        if program.starts_with(&task.dir)
            && program
                .canonicalize()
                .is_ok_and(|real| !real.starts_with(&task.dir))
        {
            return Err(format!(
                "`{}` is a link that points outside the task directory; it was not run",
                written[0]
            ));
        }
        let argv = std::iter::once(program.into_os_string())
            .chain(written[1..].iter().map(OsString::from))
            .collect();
        let mut env: Vec<(OsString, OsString)> = vec![
            ("VALIDATOR_TASK".into(), task.name.clone().into()),
            ("VALIDATOR_TASK_DIR".into(), task.dir.clone().into()),
            ("VALIDATOR_ATTEMPT".into(), task.attempt.to_string().into()),
        ];
        // The tools keep their caches in validator's directory, not the task's: none a worker
        // planted is read, none is written into the work (see `toolcache`).
        if let Some(caches) = caches {
            env.extend(crate::toolcache::environment(caches));
        }
        // A backtrace in validator's environment would fill the output's tail, which the
        // worker reads, with frames instead of the failure; the gate's `env` may ask for one.
        if !self.env.iter().any(|(key, _)| key == "RUST_BACKTRACE") {
            env.push(("RUST_BACKTRACE".into(), "0".into()));
        }
        env.extend(self.env.iter().map(|(k, v)| (k.into(), v.into())));
        Ok((argv, env))
    }

    /// The directory the command runs in: the task's, or `cwd:` inside it. `Err` says why the
    /// gate fails instead (the directory is the worker's to make).
    fn working_dir(&self, task: &crate::task::Task) -> Result<PathBuf, String> {
        match &self.cwd {
            None => Ok(task.dir.clone()),
            Some(rel) => match taskdir::resolve_inside(task, rel) {
                Ok(dir) if dir.is_dir() => Ok(dir),
                Ok(_) => Err(format!("cwd `{rel}` is not a directory in the task")),
                Err(why) => Err(format!("cwd {why}")),
            },
        }
    }

    /// The program as it is started: a bare name is looked up on PATH; a relative path
    /// (`./check.sh`) is the one in the gate's working directory, as a shell there would run
    /// it, never one beside validator. `None` when the gate cannot run (see `working_dir`).
    pub fn program(&self, task: &crate::task::Task) -> Option<PathBuf> {
        let dir = self.working_dir(task).ok()?;
        Some(program_in(&self.argv[0], &dir))
    }

    /// Says so when the program is a bare name that no PATH directory holds.
    pub fn preflight(&self) -> Option<String> {
        let program = &self.argv[0];
        (!program.contains('/') && !on_path(program)).then(|| format!("command `{program}` is not on PATH here; the gate will end in ERROR unless it is installed where validator runs"))
    }

    pub fn run(&self, ctx: &Context<'_>, parse: Parse) -> Outcome {
        if let (Parse::TestNames, Some(select), Some(failed)) =
            (parse, &self.select, ctx.failed_before)
            && let Some(still) = self.still_failing(ctx, select, failed)
        {
            return still;
        }
        self.run_whole(ctx, parse)
    }

    /// The command as `run:` says, over its files.
    fn run_whole(&self, ctx: &Context<'_>, parse: Parse) -> Outcome {
        // The report files as they are before the command runs: one it leaves as it was, it
        // did not write (see `read_report`).
        let before = Before::take(ctx, [&self.junit, &self.report]);
        let task = ctx.task;
        // The directory is part of the task's output: its absence is the worker's doing.
        let cwd = match self.working_dir(task) {
            Ok(dir) => dir,
            Err(why) => return Outcome::fail(why),
        };
        let caches = crate::toolcache::scratch(task);
        let (base, env) =
            match self.launch(task, caches.as_ref().map(|d| d.path()), &cwd, &self.argv) {
                Ok(launch) => launch,
                Err(why) => return Outcome::fail(why),
            };
        let mut refused = Vec::new();
        let batches = match self.file_batches(ctx, &cwd, &base, &env, &mut refused) {
            Ok(batches) => batches,
            Err(outcome) => return outcome,
        };
        let deadline = ctx.started + ctx.timeout;
        let ran = match self.run_batches(ctx, &cwd, &base, &env, &batches, deadline) {
            Ok(ran) => ran,
            Err(outcome) => return outcome,
        };
        // The output is read without its terminal sequences; its tail in the verdict keeps
        // every other control the command wrote, escaped where it lands (docs/verdict.md).
        let output = String::from_utf8_lossy(&ran.output);
        let text = findings::strip_ansi(&output);
        // A runner that is not there at all is said as such, before the output is read.
        let missing = match ran.exit {
            Exit::Code(code) if code != 0 => {
                runner::missing(&self.argv, &env, ctx, &cwd, code, &text, deadline)
            }
            _ => None,
        };
        let mut outcome =
            missing.unwrap_or_else(|| self.judge(ctx, parse, ran.exit, &text, &cwd, &before));
        if !refused.is_empty() {
            let count = refused.len();
            refused.append(&mut outcome.findings);
            outcome.findings = refused;
            outcome.findings.truncate(MAX_FINDINGS);
            outcome.outcome = crate::verdict::GateOutcome::Fail;
            outcome.summary = format!(
                "{count} link(s) in `files:` point outside the task directory; {}",
                outcome.summary
            );
        }
        outcome.exit_code = match ran.exit {
            Exit::Code(code) => Some(code),
            _ => None,
        };
        outcome.output_tail = tail(&crate::verdict::terminal::shown(&output), ran.dropped);
        match node_tools::from_outside(&self.argv, task, &cwd) {
            Some(Ok(note)) => outcome.summary.push_str(&note),
            Some(Err(why)) => {
                outcome.outcome = crate::verdict::GateOutcome::Fail;
                outcome.summary = why;
            }
            None => {}
        }
        outcome
    }

    /// The file names each run of the command gets: none without `files:`, else the matching
    /// files (the changed ones with `changed_only`) in batches that fit the argument space.
    /// Links out of the task are left out and added to `refused`; `Err` is the gate's outcome
    /// when nothing is left to run on.
    fn file_batches(
        &self,
        ctx: &Context<'_>,
        cwd: &Path,
        base: &[OsString],
        env: &Environment,
        refused: &mut Vec<Finding>,
    ) -> Result<Vec<Vec<OsString>>, Outcome> {
        let Some(globs) = &self.files else {
            return Ok(vec![Vec::new()]);
        };
        let mut note = String::new();
        let changed = match self.changed_only.as_deref() {
            Some(base) => {
                let deadline = Instant::now() + ctx.timeout;
                match super::file_scope::considered(ctx, base, deadline) {
                    Ok(changes) => {
                        // Changes git was told to hide: what could not be seen is not clean.
                        refused.extend(changes.findings);
                        note = format!(" ({})", changes.source);
                        Some(changes.files)
                    }
                    Err(problem) => return Err(problem.outcome(ctx)),
                }
            }
            _ => None,
        };
        let (files, escaping) = matching_files(ctx.task, globs, cwd, changed.as_ref());
        refused.extend(escaping.into_iter().map(|link| {
            Finding::in_file(
                link,
                "is a link that points outside the task directory; it was not passed to the command",
            )
        }));
        if files.is_empty() {
            return Err(match refused.is_empty() {
                true if changed.is_some() => Outcome::new(
                    crate::verdict::GateOutcome::Skipped,
                    format!("not run: no changed file matches `files:`{note}"),
                ),
                true => Outcome::pass("no file matches `files:`; nothing to check"),
                false => Outcome::from_findings(std::mem::take(refused), "", |n| {
                    format!("{n} links point outside the task directory")
                }),
            });
        }
        Ok(batches(files, arg_budget(base, env)))
    }

    /// Runs the command once per batch, until one fails: the output (its tail kept), how much
    /// was dropped, and how the last run ended. `Err` is the gate's outcome when it cannot start.
    fn run_batches(
        &self,
        ctx: &Context<'_>,
        cwd: &Path,
        base: &[OsString],
        env: &Environment,
        batches: &[Vec<OsString>],
        deadline: Instant,
    ) -> Result<Ran, Outcome> {
        let mut ran = Ran {
            output: Vec::new(),
            dropped: 0,
            exit: Exit::Code(0),
        };
        for batch in batches {
            let argv: Vec<OsString> = base.iter().chain(batch).cloned().collect();
            let spec = process::Spec {
                argv: &argv,
                cwd,
                env,
                env_remove: process::GIT_HOOK_VARS,
                timeout: deadline.saturating_duration_since(Instant::now()),
                output_cap: OUTPUT_CAP,
                cancel: ctx.cancel,
                separate_stderr: false,
                sandbox: None,
            };
            let finished =
                process::run(&spec).map_err(|err| self.not_started(err, env, ctx.task))?;
            ran.output.extend_from_slice(&finished.output);
            ran.dropped += finished.dropped;
            if ran.output.len() > OUTPUT_CAP {
                let excess = ran.output.len() - OUTPUT_CAP;
                ran.output.drain(..excess);
                ran.dropped += excess as u64;
            }
            if finished.exit != Exit::Code(0) {
                ran.exit = finished.exit;
                break;
            }
        }
        Ok(ran)
    }

    /// The gate's outcome when its command could not be started: whose fault it is.
    fn not_started(&self, err: SpawnError, env: &Environment, task: &crate::task::Task) -> Outcome {
        match err {
            // A relative path names a file of the task: missing is the worker's doing.
            SpawnError::NotFound(_) if is_relative_path(&self.argv[0]) => Outcome::fail(format!(
                "`{}` is missing from the task directory; the command cannot run",
                self.argv[0]
            )),
            // A PATH naming the task's own directories: a runner missing there (deleted from
            // the task's virtualenv) is the task's to provide.
            SpawnError::NotFound(program) if runner::path_in_task(env, task) => {
                Outcome::fail(format!(
                    "command not found: `{program}`, on a PATH that names the task's own directories; the task must provide it (its virtualenv or node_modules, installed)"
                ))
            }
            SpawnError::NotFound(program) => Outcome::error(format!(
                "command not found: `{program}`; install it where validator runs, or fix `run:` in the rules file"
            )),
            err => Outcome::error(err.to_string()),
        }
    }

    fn judge(
        &self,
        ctx: &Context<'_>,
        parse: Parse,
        exit: Exit,
        text: &str,
        cwd: &Path,
        before: &Before,
    ) -> Outcome {
        let program = &self.argv[0];
        match exit {
            Exit::TimedOut => {
                return Outcome::fail(format!(
                    "`{program}` timed out after {}; its whole process group was killed",
                    duration::format(ctx.timeout)
                ));
            }
            Exit::Signal(signal) => {
                return Outcome::fail(format!("`{program}` was killed by signal {signal}"));
            }
            Exit::Cancelled => return Outcome::error("cancelled: validator is shutting down"),
            Exit::Code(_) => {}
        }
        let failed = exit != Exit::Code(0);
        let code = match exit {
            Exit::Code(code) => code,
            _ => -1,
        };
        match parse {
            Parse::Findings => self.judge_findings(ctx, text, cwd, before, failed, code),
            Parse::TestNames if !failed => self.judge_passed_tests(ctx, cwd, before),
            Parse::TestNames => self.judge_tests(ctx, text, cwd, before, code),
        }
    }
}

/// `written` as started from `dir`: a relative path with a `/` joined to it (`.` and `..`
/// resolved as written), anything else (a bare name for PATH, an absolute path) as it is.
fn program_in(written: &str, dir: &Path) -> PathBuf {
    if is_relative_path(written) {
        normalize(&dir.join(written))
    } else {
        PathBuf::from(written)
    }
}

fn is_relative_path(program: &str) -> bool {
    program.contains('/') && Path::new(program).is_relative()
}

/// The gate's `env:`, its names checked (the values are the rules file's to choose).
pub(super) fn env_from_spec(spec: &GateSpec) -> Result<Vec<(String, String)>, KeyError> {
    if let Some(name) = spec
        .env
        .iter()
        .flatten()
        .map(|(k, _)| k)
        .find(|k| k.is_empty() || k.contains('=') || k.contains('\0'))
    {
        return Err(KeyError::new(
            "env",
            format!("`{name}` is not an environment variable name"),
            "use names such as RUST_LOG or CI",
        ));
    }
    Ok(spec.env.clone().unwrap_or_default().into_iter().collect())
}

/// Whether a PATH directory holds an executable file named `program`.
pub(super) fn on_path(program: &str) -> bool {
    validator_process::on_path(&program.into(), &[]).is_some()
}

pub(super) fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// What the report files (`junit:`, `report:`) were before the command ran: when it started,
/// and each file's identity, time and size, so that a file the run did not write is told
/// apart from one it did, whatever time the file claims.
pub(super) struct Before {
    started: std::time::SystemTime,
    files: Vec<(String, Option<FileState>)>,
}

/// A file's inode, modification time and size.
type FileState = (u64, std::time::SystemTime, u64);

impl Before {
    fn take<'a>(
        ctx: &Context<'_>,
        reports: impl IntoIterator<Item = &'a Option<String>>,
    ) -> Before {
        Before {
            started: std::time::SystemTime::now(),
            files: reports
                .into_iter()
                .flatten()
                .map(|rel| (rel.clone(), file_state(ctx, rel)))
                .collect(),
        }
    }
}

fn file_state(ctx: &Context<'_>, rel: &str) -> Option<FileState> {
    use std::os::unix::fs::MetadataExt;
    let path = taskdir::resolve_inside(ctx.task, rel).ok()?;
    let meta = std::fs::symlink_metadata(path).ok()?;
    Some((meta.ino(), meta.modified().ok()?, meta.len()))
}

/// A report the command writes (`junit:`, `report:`), read only when this run wrote it: one
/// left in place before the command started could be the worker's, to name things.
fn read_report(ctx: &Context<'_>, report: &str, before: &Before) -> Result<String, String> {
    let path = taskdir::resolve_inside(ctx.task, report)?;
    let now = file_state(ctx, report).ok_or("cannot be read (is it there?)")?;
    let unchanged = before
        .files
        .iter()
        .any(|(rel, state)| rel == report && *state == Some(now));
    // Some file systems keep modification times to the second or two.
    let slack = std::time::Duration::from_secs(2);
    if unchanged || now.1 + slack < before.started {
        return Err("it was not written by this run, so it was not read".into());
    }
    let bytes = taskdir::read_capped(ctx.task, &path, MAX_REPORT_BYTES)?
        .ok_or_else(|| format!("over {} MiB; not read", MAX_REPORT_BYTES / 1024 / 1024))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// File paths as the tool printed them (absolute, or relative to the command's `cwd`) become
/// relative to the task directory; paths outside it are left as printed.
pub(super) fn relative_findings(
    task_dir: &Path,
    cwd: &Path,
    mut found: Vec<Finding>,
) -> Vec<Finding> {
    for finding in &mut found {
        if let Some(file) = &mut finding.file {
            let absolute = normalize(&cwd.join(file.as_str()));
            if let Ok(rel) = absolute.strip_prefix(task_dir) {
                if !rel.as_os_str().is_empty() {
                    *file = rel.to_string_lossy().into_owned();
                }
            }
        }
    }
    found
}

/// The task's files as the general reader of tool output asks for them: a path the tool
/// printed, from the directory it ran in, naming a regular file that really lies in the task
/// (links followed only while they stay inside; see [`taskdir::is_file_beneath`]).
struct TaskFiles<'a> {
    task_dir: &'a Path,
    cwd: &'a Path,
    /// The task directory, opened once for every lookup.
    opened: Option<std::fs::File>,
    /// The command's arguments that name directories of the task (relative, as written).
    given_dirs: Vec<String>,
}

impl<'a> TaskFiles<'a> {
    fn new(task_dir: &'a Path, cwd: &'a Path, argv: &[String]) -> Self {
        use std::os::unix::fs::OpenOptionsExt;
        let opened = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_DIRECTORY)
            .open(task_dir)
            .ok();
        let given_dirs = argv
            .iter()
            .skip(1)
            .filter(|arg| !arg.starts_with('-') && !arg.starts_with('/') && *arg != ".")
            .filter(|arg| {
                let dir = normalize(&cwd.join(arg));
                dir.starts_with(task_dir) && dir.is_dir()
            })
            .take(16)
            .cloned()
            .collect();
        TaskFiles {
            task_dir,
            cwd,
            opened,
            given_dirs,
        }
    }
}

impl findings::Files for TaskFiles<'_> {
    fn is_file(&self, path: &str) -> bool {
        let written = normalize(&self.cwd.join(path));
        let (Ok(rel), Some(dir)) = (written.strip_prefix(self.task_dir), &self.opened) else {
            return false;
        };
        !rel.as_os_str().is_empty() && taskdir::is_file_beneath(dir, self.task_dir, rel)
    }

    fn given_dirs(&self) -> &[String] {
        &self.given_dirs
    }
}

/// Resolves `.` and `..` without touching the file system (the file may not exist).
fn normalize(path: &Path) -> std::path::PathBuf {
    use std::path::Component;
    let mut out = std::path::PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The files matching `globs`, as arguments for a command running in `cwd`, and the matching
/// links that point outside the task (never passed on). A name that starts with `-` gets a
/// `./` so no tool mistakes it for an option.
/// With `changed`, only the files in it (and only the links out that are in it).
fn matching_files(
    task: &crate::task::Task,
    globs: &PatternSet,
    cwd: &Path,
    changed: Option<&std::collections::BTreeSet<String>>,
) -> (Vec<OsString>, Vec<String>) {
    let listing = taskdir::list(task);
    let wanted = |rel: &str| globs.is_match(rel) && changed.is_none_or(|c| c.contains(rel));
    let escaping = listing
        .escaping_links
        .into_iter()
        .filter(|link| wanted(link))
        .collect();
    let files = listing
        .files
        .into_iter()
        .filter(|entry| wanted(&entry.rel))
        .map(|entry| {
            if cwd == task.dir {
                let rel = task_relative(&task.dir, &entry.path);
                if rel.as_encoded_bytes().starts_with(b"-") {
                    let mut dotted = OsString::from("./");
                    dotted.push(rel);
                    dotted
                } else {
                    rel
                }
            } else {
                entry.path.into_os_string()
            }
        })
        .collect();
    (files, escaping)
}

fn task_relative(dir: &Path, path: &Path) -> OsString {
    path.strip_prefix(dir)
        .map(|p| p.as_os_str().to_owned())
        .unwrap_or_else(|_| path.as_os_str().to_owned())
}

/// Bytes the argument list of one batch may use: the OS limit less the environment and the
/// command's own words, with room to spare.
fn arg_budget(base: &[OsString], env: &[(OsString, OsString)]) -> usize {
    let os_limit = nix::unistd::sysconf(nix::unistd::SysconfVar::ARG_MAX)
        .ok()
        .flatten()
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(128 * 1024);
    let pointer = std::mem::size_of::<usize>();
    let env_size: usize = std::env::vars_os()
        .chain(env.iter().cloned())
        .map(|(k, v)| k.len() + v.len() + 2 + pointer)
        .sum();
    let base_size: usize = base.iter().map(|a| a.len() + 1 + pointer).sum();
    os_limit
        .saturating_sub(env_size + base_size + 16 * 1024)
        .clamp(4 * 1024, 1024 * 1024)
}

/// Splits `files` into groups whose arguments fit in `budget` bytes (one file per group at least).
fn batches(files: Vec<OsString>, budget: usize) -> Vec<Vec<OsString>> {
    let pointer = std::mem::size_of::<usize>();
    let mut groups: Vec<Vec<OsString>> = Vec::new();
    let mut current = Vec::new();
    let mut used = 0;
    for file in files {
        let cost = file.len() + 1 + pointer;
        if !current.is_empty() && used + cost > budget {
            groups.push(std::mem::take(&mut current));
            used = 0;
        }
        used += cost;
        current.push(file);
    }
    if !current.is_empty() {
        groups.push(current);
    }
    groups
}

/// The last lines of the output, for a person or an agent to read in the verdict.
pub(super) fn tail(text: &str, dropped: u64) -> Option<String> {
    let text = text.trim_end();
    if text.is_empty() {
        return None;
    }
    let (mut kept, start) = validator_text::last_bytes(text, TAIL_BYTES);
    // Cut after the TAIL_LINES-th newline from the end; `\n` is always a char boundary.
    if let Some((cut, _)) = kept.match_indices('\n').rev().nth(TAIL_LINES - 1) {
        kept = &kept[cut + 1..];
    }
    let cut = start > 0 || kept.len() < text.len() || dropped > 0;
    Some(if cut {
        format!("…\n{kept}")
    } else {
        kept.to_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_respect_the_budget_and_keep_every_file() {
        let files: Vec<OsString> = (0..1000)
            .map(|i| OsString::from(format!("src/file_{i:04}.rs")))
            .collect();
        let groups = batches(files.clone(), 2048);
        assert!(groups.len() > 1);
        assert!(
            groups
                .iter()
                .all(|g| g.iter().map(|f| f.len() + 9).sum::<usize>() <= 2048)
        );
        assert_eq!(groups.concat(), files);
    }

    #[test]
    fn a_file_larger_than_the_budget_still_gets_a_batch() {
        let groups = batches(vec![OsString::from("x".repeat(100))], 10);
        assert_eq!(groups.len(), 1);
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        let text: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let kept = tail(&text, 0).unwrap();
        assert!(kept.starts_with("…\nline 60"));
        assert!(kept.ends_with("line 99"));
        assert_eq!(tail("short\n", 0).as_deref(), Some("short"));
    }

    #[test]
    fn tail_is_safe_on_crlf_and_multibyte_text() {
        let text = format!("{}é\r\n{}", "a\r\n".repeat(2), "x\r\n".repeat(40));
        let kept = tail(&text, 0).unwrap();
        assert_eq!(kept.lines().filter(|l| l.starts_with('x')).count(), 40);
    }
}
