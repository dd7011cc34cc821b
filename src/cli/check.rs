//! `validator check`: one run over a directory, the verdict printed, the exit code the verdict's.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, Result, bail};

use super::{Format, Found, load, print_verdict};
use crate::progress::{Labels, Progress};
use validator::verdict::sign;
use validator::verdict::{feedback, format};
use validator::{Signal, Task, delivery, task};

#[derive(clap::Args)]
pub(crate) struct CheckArgs {
    /// The directory to judge [default: where the rules file was found, when it was found in
    /// a directory above; else the current directory]
    #[arg(long, value_name = "DIR")]
    pub(crate) task_dir: Option<PathBuf>,
    /// The task's name (picks the pipeline and the snapshot baseline) [default: DIR's name]
    #[arg(long, value_name = "NAME")]
    pub(crate) task: Option<String>,
    /// The done signal's body: a file, or - for standard input
    #[arg(long, value_name = "FILE")]
    pub(crate) signal: Option<PathBuf>,
    /// What the person asked for, in their own words (an issue's text): the ground truth a
    /// `review` gate's reviewer starts from; a file of at most 1 MiB, or - for standard input
    #[arg(long, value_name = "FILE")]
    pub(crate) request: Option<PathBuf>,
    /// Run this pipeline instead of the first one whose `tasks` match
    #[arg(long, value_name = "NAME")]
    pub(crate) pipeline: Option<String>,
    /// How to print the verdict
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
    /// The attempt number to record in the verdict (default 1), for a caller that counts
    /// attempts; without it the output names no attempt, since `check` keeps none
    #[arg(long, value_name = "N")]
    pub(crate) attempt: Option<u32>,
    /// Run every gate, even those whose `inputs:` are unchanged since they passed
    #[arg(long)]
    pub(crate) no_cache: bool,
    /// Run the `fix:` command of each gate that fails, then judge again
    #[arg(long)]
    pub(crate) fix: bool,
    /// Run only these gates (repeat, or separate with commas); the others are reported as not
    /// run
    #[arg(long, value_name = "GATE", value_delimiter = ',')]
    pub(crate) only: Vec<String>,
    /// Do not run these gates (repeat, or separate with commas); also VALIDATOR_SKIP, as
    /// pre-commit's SKIP
    #[arg(
        long,
        value_name = "GATE",
        value_delimiter = ',',
        env = "VALIDATOR_SKIP"
    )]
    pub(crate) skip: Vec<String>,
    /// Run every gate even after one fails, to see every failure at once (the verdict is the
    /// same)
    #[arg(long)]
    pub(crate) keep_going: bool,
    /// Gates with `changed_only` look at every file of the project, not only the changed ones:
    /// in git, the files it tracks plus the new ones it does not ignore (a whole-tree run in CI,
    /// as pre-commit's --all-files)
    #[arg(long)]
    pub(crate) all_files: bool,
    /// Judge what `git commit` would commit now (a pre-commit hook): the index, with unstaged
    /// changes and the untracked files it leaves out set aside until the run ends
    #[arg(long, conflicts_with_all = ["all_files", "pushed"])]
    pub(crate) staged: bool,
    /// Judge what `git push` sends (a pre-push hook): each pushed ref's commit, its changes
    /// counted from what REMOTE has; git's pre-push lines are read from standard input
    #[arg(long, value_name = "REMOTE", conflicts_with_all = ["all_files", "signal", "request"])]
    pub(crate) pushed: Option<String>,
    /// Print the verdict only: no line for each gate as it finishes (on stderr for formats
    /// other than text), and no progress
    #[arg(short, long)]
    pub(crate) quiet: bool,
}

/// Writes the rest of a text verdict to stdout; the exit code is the verdict's.
fn print_text(text: &str, verdict: &validator::verdict::Verdict) -> Result<ExitCode> {
    let mut out = anstream::stdout();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("cannot write the verdict to stdout")?;
    Ok(ExitCode::from(verdict.verdict.exit_code() as u8))
}

/// `verbose` (`-v`) lists under each gate the files it counted as the worker's changes.
pub(crate) fn check(config: &Found, args: CheckArgs, verbose: bool) -> Result<ExitCode> {
    let task_dir = args
        .task_dir
        .clone()
        .unwrap_or_else(|| config.project_dir());
    let rules = load(&config.path)?;
    let name = args
        .task
        .clone()
        .unwrap_or_else(|| task::name_from_dir(&task_dir));
    // The state and verdict directories are not hidden from the rules here: inside a task
    // directory they are the worker's to write, so the rules must see them.
    let mut task = Task::new(name, &task_dir)?.with_attempt(args.attempt.unwrap_or(1));
    // A task in the staging directory sits where every worker writes, as under `watch`.
    task = task.with_worker_area(&rules.staging);
    if let Some(signal) = &args.signal {
        task = task.ignoring(signal).with_signal(read_signal(signal)?);
    }
    if let Some(request) = &args.request {
        task = task.with_request(Some(read_request(request, args.signal.as_deref())?));
    }
    // Installed before anything is set aside, so a stop signal ends the run and the user's
    // work is put back, never left half swapped.
    let cancel = cancel_on_stop_signals()?;
    let run = Run {
        config: &config.path,
        rules: &rules,
        args: &args,
        verbose,
        cancel: &cancel,
    };
    if args.staged {
        let swap = run.swap_in(&task, &delivery::Delivered::Index)?;
        let code = run.judge(task);
        said(swap.restore()?);
        return code;
    }
    let Some(remote) = &args.pushed else {
        return run.judge(task);
    };
    const MAX_PUSH_LINES: u64 = 16 << 20;
    let mut lines = String::new();
    std::io::stdin()
        .take(MAX_PUSH_LINES + 1)
        .read_to_string(&mut lines)
        .context("cannot read git's pre-push lines from standard input")?;
    // Never judged in part: a ref past the cap would go unjudged.
    if lines.len() as u64 > MAX_PUSH_LINES {
        bail!(
            "git's pre-push lines are over {} MiB: the push is refused rather than judged in part; push fewer refs at once",
            MAX_PUSH_LINES >> 20
        );
    }
    let mut worst = ExitCode::SUCCESS;
    for push in delivery::pushed(&task, remote, &lines)? {
        eprintln!(
            "validator: judging {} as pushed ({}), its changes counted from {}",
            validator_text::one_line(&push.local_ref),
            match push.new_commits {
                Some(n) => format!("{n} new commit{}", if n == 1 { "" } else { "s" }),
                None => push.commit.chars().take(12).collect(),
            },
            push.since.shown
        );
        let task = task.clone().with_since(Some(push.since));
        let swap = run.swap_in(&task, &delivery::Delivered::Commit(push.commit))?;
        let code = run.judge(task);
        said(swap.restore()?);
        let code = code?;
        if code != ExitCode::SUCCESS && worst == ExitCode::SUCCESS {
            worst = code;
        }
    }
    Ok(worst)
}

/// Tells the user what putting their work back said.
fn said(notes: Vec<String>) {
    for note in notes {
        eprintln!("validator: {note}");
    }
}

/// One `check`'s settings, to judge one task or, for a push, each ref in turn.
struct Run<'a> {
    config: &'a Path,
    rules: &'a validator::config::Rules,
    args: &'a CheckArgs,
    verbose: bool,
    cancel: &'a Arc<validator_process::Cancel>,
}

impl Run<'_> {
    /// Puts what is delivered in the work tree, saying what was set aside.
    fn swap_in(&self, task: &Task, delivered: &delivery::Delivered) -> Result<delivery::Swap> {
        let keep = [self.rules.state.clone(), self.config.to_path_buf()];
        // The user's own excludes keep an untracked file in place as git leaves it out; where
        // the run may be a worker's (an agent's commit), none do, and more is set aside.
        let excludes: Vec<String> =
            validator::git::UserExcludes::for_own_check(&self.rules.staging, &task.dir, false)
                .map(|excludes| {
                    String::from_utf8_lossy(&excludes.rules)
                        .lines()
                        .map(str::trim_end)
                        .filter(|line| !line.is_empty() && !line.starts_with('#'))
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
        let swap = delivery::swap_in(
            task,
            &self.rules.state,
            delivered,
            &excludes,
            &keep,
            self.config,
        )?;
        said(swap.notes.clone());
        if swap.set_aside() > 0 || swap.written() > 0 {
            let mut named: Vec<String> = swap
                .set_aside_paths()
                .take(3)
                .map(validator_text::one_line)
                .collect();
            if swap.set_aside() > 3 {
                named.push("…".into());
            }
            eprintln!(
                "validator: judging what is {}: {} of your files set aside until the run ends{}{}",
                match delivered {
                    delivery::Delivered::Index => "staged",
                    delivery::Delivered::Commit(_) => "pushed",
                },
                swap.set_aside(),
                match named.is_empty() {
                    true => String::new(),
                    false => format!(" ({})", named.join(", ")),
                },
                match swap.written() {
                    0 => String::new(),
                    n => format!(", {n} written as delivered"),
                }
            );
        }
        Ok(swap)
    }

    fn judge(&self, task: Task) -> Result<ExitCode> {
        let (rules, args, verbose) = (self.rules, self.args, self.verbose);
        let pipeline = rules.pipeline_for(&task.name, args.pipeline.as_deref())?;
        let only = gate_names(&args.only, pipeline, "--only")?;
        let skip = gate_names(&args.skip, pipeline, "--skip or VALIDATOR_SKIP")?;
        // Only the JSON document carries a signature; a key that is named but unreadable stops
        // the run before any gate, never a silently unsigned verdict.
        let sign = matches!(args.format, Format::Json);
        let key = match sign {
            true => Ok(sign::configured_key(rules.key_named())?.map(Arc::new)),
            false => validator::judge::signing(rules),
        };
        let cache = (!args.no_cache).then(|| validator::cache::Cache::new(&rules.state));
        let user_excludes = validator::git::UserExcludes::for_own_check(
            &rules.staging,
            &task.dir,
            args.signal.is_some() || args.request.is_some(),
        );
        // Dropped (its progress line erased) before the verdict is printed.
        let stream = (!args.quiet).then(|| Stream::new(args.format, pipeline, verbose));
        let header = || {
            if let Some(stream) = &stream {
                stream.print(&format::text_header(
                    &task.name,
                    &pipeline.name,
                    args.attempt
                        .map(|attempt| (attempt, rules.defaults.max_attempts)),
                ));
            }
        };
        header();
        let supervision = validator::pipeline::Supervision {
            cancel: Some(self.cancel),
            observer: stream
                .as_ref()
                .map(|s| s as &dyn validator::pipeline::Observer),
            cache: cache.as_ref(),
            selection: validator::pipeline::Selection {
                only: &only,
                skip: &skip,
                keep_going: args.keep_going,
                all_files: args.all_files,
                user_excludes: user_excludes.as_ref(),
            },
            ..Default::default()
        };
        let judge = validator::judge::Judge::new(rules, &key, supervision).signed(sign);
        let judged = |task: Task| {
            let case = validator::judge::Case {
                task,
                pipeline: Ok(pipeline),
                refused: None,
            };
            judge.judge(case, None).verdict
        };
        let mut verdict = judged(task.clone());
        if args.fix && run_fixes(&verdict, pipeline, &task, rules, self.cancel) {
            if let Some(stream) = &stream {
                stream.restart();
            }
            header();
            verdict = judged(task.clone());
        }
        finish(stream, &verdict, args, pipeline, verbose, self.config)
    }
}

/// Prints what the live lines have not: in text, the gates that never ran and the decision
/// (the decision alone with `--quiet`); in another format, the verdict document.
fn finish(
    stream: Option<Stream>,
    verdict: &validator::verdict::Verdict,
    args: &CheckArgs,
    pipeline: &validator::config::Pipeline,
    verbose: bool,
    config: &std::path::Path,
) -> Result<ExitCode> {
    match stream {
        // The gates are on the screen already: the ones that never ran, then the decision.
        Some(stream) if matches!(args.format, Format::Text) => {
            let shown = stream.finish();
            let mut rest = String::new();
            for gate in verdict.gates.iter().skip(shown) {
                rest.push_str(&format::gate_text(gate, stream_width(pipeline)));
                if verbose {
                    rest.push_str(&format::changed_text(gate));
                }
            }
            rest.push_str(&format::text_footer(verdict));
            print_text(&rest, verdict)
        }
        // `--quiet`: the decision and its reasons, no line per gate.
        None if args.quiet && matches!(args.format, Format::Text) => print_text(
            format::text_footer(verdict).trim_start_matches('\n'),
            verdict,
        ),
        stream => {
            drop(stream);
            print_verdict(
                verdict,
                args.format,
                feedback::Retry::Rerun,
                args.attempt.is_some(),
                config,
            )
        }
    }
}

fn stream_width(pipeline: &validator::config::Pipeline) -> usize {
    format::name_width(pipeline.gates.iter().map(|g| g.name.as_str()))
}

/// Each gate's result printed as it finishes, with progress in between: a redrawn line for a
/// gate past a second on a terminal, a line every 30 s for one still running in a pipe. On
/// stdout for `--format text`, which is then printed piece by piece; on stderr for the other
/// formats, whose stdout is a document a program reads.
struct Stream {
    progress: Option<Arc<Progress>>,
    to_stdout: bool,
    width: usize,
    shown: AtomicUsize,
    /// Each gate's changed files under its line (`-v`).
    verbose: bool,
    /// Each gate's group, when it shares one with others: its name and size.
    groups: std::collections::HashMap<String, (String, usize)>,
    /// The groups whose gates have started, each announced once.
    announced: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl Stream {
    fn new(format: Format, pipeline: &validator::config::Pipeline, verbose: bool) -> Stream {
        let to_stdout = matches!(format, Format::Text);
        let progress = if to_stdout {
            progress_on(std::io::stdout(), Labels::Gate)
        } else {
            progress_on(std::io::stderr(), Labels::Gate)
        };
        Stream {
            progress: Some(progress),
            to_stdout,
            width: stream_width(pipeline),
            shown: AtomicUsize::new(0),
            verbose,
            groups: groups(pipeline),
            announced: Default::default(),
        }
    }

    fn print(&self, text: &str) {
        let write = || {
            // A closed stream is not worth failing a run over; the verdict's own write says so.
            let _ = match self.to_stdout {
                true => {
                    let mut out = anstream::stdout();
                    out.write_all(text.as_bytes()).and_then(|()| out.flush())
                }
                false => {
                    let mut out = anstream::stderr();
                    out.write_all(text.as_bytes()).and_then(|()| out.flush())
                }
            };
        };
        match &self.progress {
            Some(progress) => progress.suspend(write),
            None => write(),
        }
    }

    /// The line before `gate`'s group, once: a group's lines come as its gates finish (or are
    /// left out), not as they are written.
    fn announce_group(&self, gate: &str) {
        let Some((group, size)) = self.groups.get(gate) else {
            return;
        };
        let first = self
            .announced
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(group.clone());
        if first {
            self.print(&format::group_text(group, *size));
        }
    }

    /// A second judging (`--fix`) starts its count of printed gates again.
    fn restart(&self) {
        self.shown.store(0, Ordering::Relaxed);
        self.announced
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
    }

    /// How many gates were printed; the progress line is gone once this returns.
    fn finish(mut self) -> usize {
        self.progress = None;
        self.shown.load(Ordering::Relaxed)
    }
}

impl validator::pipeline::Observer for Stream {
    fn gate_started(&self, task: &Task, gate: &str) {
        self.announce_group(gate);
        if let Some(progress) = &self.progress {
            progress.gate_started(task, gate);
        }
    }

    fn gate_finished(&self, task: &Task, report: &validator::verdict::GateReport) {
        self.announce_group(&report.name);
        if let Some(progress) = &self.progress {
            progress.gate_finished(task, report);
        }
        let mut text = format::gate_text(report, self.width);
        if self.verbose {
            text.push_str(&format::changed_text(report));
        }
        self.print(&text);
        self.shown.fetch_add(1, Ordering::Relaxed);
    }
}

/// Each gate that shares its `group:` with others (written next to it): the group and its size.
fn groups(
    pipeline: &validator::config::Pipeline,
) -> std::collections::HashMap<String, (String, usize)> {
    let mut groups = std::collections::HashMap::new();
    for run in pipeline
        .gates
        .chunk_by(|a, b| a.group.is_some() && a.group == b.group)
    {
        if let (Some(group), true) = (&run[0].group, run.len() > 1) {
            for gate in run {
                groups.insert(gate.name.clone(), (group.clone(), run.len()));
            }
        }
    }
    groups
}

/// The gate names a person gave, each checked against the pipeline (a contract's gates,
/// `contract.*`, are added to it when the task has one); empty entries dropped.
fn gate_names(
    names: &[String],
    pipeline: &validator::config::Pipeline,
    flag: &str,
) -> Result<Vec<String>> {
    let known: Vec<&str> = pipeline.gates.iter().map(|g| g.name.as_str()).collect();
    let mut kept = Vec::new();
    for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        if !known.contains(&name) && !name.starts_with("contract.") {
            let near = validator_text::closest(name, known.iter().copied());
            bail!(
                "{flag} names `{}`, which pipeline `{}` has no gate called{}\n  help: its gates are {}",
                validator_text::one_line(name),
                pipeline.name,
                near.map(|n| format!(" (did you mean `{n}`?)"))
                    .unwrap_or_default(),
                known.join(", ")
            );
        }
        kept.push(name.to_owned());
    }
    Ok(kept)
}

/// Runs the `fix:` of every gate that failed, saying on stderr what ran and how it ended;
/// true if any ran (so the task is judged again). One round: a gate the first run never
/// reached is fixed on the next `check --fix`.
fn run_fixes(
    verdict: &validator::Verdict,
    pipeline: &validator::config::Pipeline,
    task: &Task,
    rules: &validator::config::Rules,
    cancel: &validator_process::Cancel,
) -> bool {
    let mut ran = false;
    for report in verdict.gates.iter().filter(|g| g.fix.is_some()) {
        let Some(gate) = pipeline.gates.iter().find(|g| g.name == report.name) else {
            continue;
        };
        let timeout = gate.timeout.unwrap_or(rules.defaults.timeout);
        let Some(result) = gate.rule.run_fix(task, timeout, Some(cancel)) else {
            continue;
        };
        let shown = report.fix.as_deref().unwrap_or_default();
        match result {
            Ok(how) => eprintln!("fixed `{}`: `{shown}` {how}", report.name),
            Err(why) => eprintln!("the fix of `{}` failed: `{shown}` {why}", report.name),
        }
        ran = true;
    }
    ran
}

/// A way to stop the gates of a one-shot run (`check`, `hook`) when the process is asked to end
/// (SIGTERM from a CI runner or an agent's hook timeout, SIGINT, SIGHUP from a closed terminal,
/// SIGQUIT): the running command's group and what carries its mark are killed and the run ends
/// as ERROR, instead of validator dying and leaving its gate running. Its commands carry this
/// run's own mark, so what one gate leaves running is told from another's (see `reaper`).
pub(crate) fn cancel_on_stop_signals() -> Result<Arc<validator_process::Cancel>> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
    let cancel = Arc::new(validator_process::Cancel::one_shot());
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP, SIGQUIT])
        .context("cannot install the handler of SIGTERM, SIGINT, SIGHUP and SIGQUIT")?;
    let cancelled = Arc::clone(&cancel);
    std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            cancelled.cancel();
        }
    });
    Ok(cancel)
}

/// A status line for gates that take longer than a second, only when stdout is a terminal
/// that can redraw a line: pipes, files and CI logs get the verdict lines alone.
pub(crate) fn terminal_progress(labels: Labels) -> Option<Arc<Progress>> {
    let stdout = std::io::stdout();
    redraws(&stdout).then(|| progress_on(stdout, labels))
}

fn redraws(stream: &impl IsTerminal) -> bool {
    stream.is_terminal() && std::env::var_os("TERM").is_none_or(|term| term != "dumb")
}

/// Progress on `stream`: redrawn in place on a terminal, a line every 30 s elsewhere.
fn progress_on<S>(stream: S, labels: Labels) -> Arc<Progress>
where
    S: IsTerminal + std::os::fd::AsFd + Write + Send + 'static,
{
    if !redraws(&stream) {
        return Arc::new(Progress::log(Box::new(stream), labels));
    }
    let width = terminal_size::terminal_size_of(&stream).map_or(80, |(width, _)| width.0);
    Arc::new(Progress::new(Box::new(stream), usize::from(width), labels))
}

/// The user's request for `--request`, as text: a file of at most 1 MiB, or standard input's
/// first 1 MiB. The signal and the request
/// cannot both be standard input.
fn read_request(path: &Path, signal: Option<&Path>) -> Result<String> {
    const MAX_REQUEST: u64 = 1 << 20;
    let stdin = Path::new("-");
    if path == stdin && signal == Some(stdin) {
        bail!("--request and --signal cannot both read standard input; give one of them a file");
    }
    let mut bytes = Vec::new();
    if path == stdin {
        std::io::stdin()
            .take(MAX_REQUEST)
            .read_to_end(&mut bytes)
            .context("cannot read the request from standard input")?;
    } else {
        bytes = validator_process::files::read(
            path,
            MAX_REQUEST,
            validator_process::files::Links::Follow,
        )
        .with_context(|| format!("cannot read the request {}", path.display()))?;
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

pub(crate) fn read_signal(path: &Path) -> Result<Signal> {
    if path == Path::new("-") {
        let mut body = Vec::new();
        std::io::stdin()
            .take(validator::done::MAX_BODY as u64 + 1)
            .read_to_end(&mut body)
            .context("cannot read the done signal from standard input")?;
        return Ok(Signal::from_bytes(&body, None));
    }
    Ok(Signal::read(path)?)
}
