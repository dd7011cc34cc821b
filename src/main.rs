//! The `validator` command line: parse arguments, call the library, print, and map the verdict
//! to an exit code. Nothing here judges anything.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};

use validator::config::graph;
use validator::verdict::{feedback, format};
use validator::{Rules, Signal, Task, snapshot, task};

/// Exit code when the validator itself could not judge (bad rules file, bad arguments).
const EXIT_ERROR: u8 = 2;

#[derive(Parser)]
#[command(
    name = "validator",
    version,
    about = "A quality gate that sits outside the worker it judges."
)]
struct Cli {
    /// The rules file [default: ./validator.yaml, then $VALIDATOR_CONFIG]
    #[arg(short, long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// More log output on stderr (-v info, -vv debug); or set VALIDATOR_LOG
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the pipeline once over a directory; the exit code is the verdict
    Check(CheckArgs),
    /// Work with the rules file
    Rules {
        #[command(subcommand)]
        command: RulesCommand,
    },
    /// Record a task directory's files before its worker starts (the baseline file-scope uses
    /// when the task is not in a git work tree)
    Snapshot {
        /// The task name (its directory is <staging>/<TASK>, or <staging> itself)
        task: String,
        /// Snapshot this directory instead of the task's directory in staging
        #[arg(long, value_name = "DIR")]
        task_dir: Option<PathBuf>,
    },
}

#[derive(clap::Args)]
struct CheckArgs {
    /// The directory to judge
    #[arg(long, value_name = "DIR", default_value = ".")]
    task_dir: PathBuf,
    /// The done signal's body: a file, or - for standard input
    #[arg(long, value_name = "FILE")]
    signal: Option<PathBuf>,
    /// Run this pipeline instead of the first one whose `tasks` match
    #[arg(long, value_name = "NAME")]
    pipeline: Option<String>,
    /// How to print the verdict
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// The attempt number to record in the verdict
    #[arg(long, default_value_t = 1, value_name = "N")]
    attempt: u32,
}

#[derive(Subcommand)]
enum RulesCommand {
    /// Validate the rules file without running anything, and print the gate graph
    Check,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    /// For people: a line per gate, findings, the decision
    Text,
    /// The verdict document
    Json,
    /// JUnit XML, one testcase per gate
    Junit,
    /// GitHub Actions annotations
    Github,
    /// The feedback an agent reads (at most 60 lines)
    Feedback,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.verbose);
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("VALIDATOR_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
}

fn run(cli: Cli) -> Result<ExitCode> {
    let config = config_path(cli.config)?;
    match cli.command {
        Command::Check(args) => check(&config, args),
        Command::Rules {
            command: RulesCommand::Check,
        } => rules_check(&config),
        Command::Snapshot { task, task_dir } => snapshot(&config, &task, task_dir),
    }
}

/// `-c`, else `./validator.yaml`, else `$VALIDATOR_CONFIG`.
fn config_path(flag: Option<PathBuf>) -> Result<PathBuf> {
    if let Some(path) = flag {
        return Ok(path);
    }
    let local = PathBuf::from("validator.yaml");
    if local.exists() {
        return Ok(local);
    }
    match std::env::var_os("VALIDATOR_CONFIG") {
        Some(path) if !path.is_empty() => Ok(PathBuf::from(path)),
        _ => bail!(
            "no rules file: ./validator.yaml does not exist\n  help: pass -c FILE, or set VALIDATOR_CONFIG"
        ),
    }
}

fn load(config: &Path) -> Result<Rules> {
    Ok(Rules::load(config)?)
}

fn check(config: &Path, args: CheckArgs) -> Result<ExitCode> {
    let rules = load(config)?;
    let name = task::name_from_dir(&args.task_dir);
    let mut task = Task::new(name, &args.task_dir)?
        .with_attempt(args.attempt)
        .ignoring(&rules.state)
        .ignoring(&rules.verdicts);
    if let Some(signal) = &args.signal {
        task = task.ignoring(signal).with_signal(read_signal(signal)?);
    }
    let pipeline = rules.pipeline_for(&task.name, args.pipeline.as_deref())?;
    let verdict = validator::run(&rules, pipeline, &task);
    let rendered = match args.format {
        Format::Text => format::text(&verdict),
        Format::Json => verdict.to_json() + "\n",
        Format::Junit => format::junit(&verdict),
        Format::Github => format::github(&verdict),
        Format::Feedback => feedback::render(&verdict),
    };
    let mut out = anstream::stdout();
    out.write_all(rendered.as_bytes())
        .and_then(|()| out.flush())
        .context("cannot write the verdict to stdout")?;
    Ok(ExitCode::from(verdict.verdict.exit_code() as u8))
}

fn read_signal(path: &Path) -> Result<Signal> {
    if path == Path::new("-") {
        let mut body = Vec::new();
        std::io::stdin()
            .take(validator::signal::MAX_BODY as u64 + 1)
            .read_to_end(&mut body)
            .context("cannot read the done signal from standard input")?;
        return Ok(Signal::from_bytes(&body, None));
    }
    Ok(Signal::read(path)?)
}

fn rules_check(config: &Path) -> Result<ExitCode> {
    let rules = load(config)?;
    let mut out = anstream::stdout();
    let mut warnings = Vec::new();
    for pipeline in &rules.pipelines {
        writeln!(out, "{}", graph::render(pipeline, rules.defaults.timeout))?;
        warnings.extend(graph::warnings(pipeline));
    }
    let warn = anstyle::AnsiColor::Yellow.on_default();
    for warning in &warnings {
        writeln!(out, "{warn}warning{warn:#}: {warning}")?;
    }
    let gates: usize = rules.pipelines.iter().map(|p| p.gates.len()).sum();
    writeln!(
        out,
        "{}: valid, {} pipeline{}, {gates} gates, {} warning{}",
        config.display(),
        rules.pipelines.len(),
        if rules.pipelines.len() == 1 { "" } else { "s" },
        warnings.len(),
        if warnings.len() == 1 { "" } else { "s" },
    )?;
    Ok(ExitCode::SUCCESS)
}

fn snapshot(config: &Path, name: &str, task_dir: Option<PathBuf>) -> Result<ExitCode> {
    let rules = load(config)?;
    task::validate_name(name)?;
    let dir = task_dir.unwrap_or_else(|| {
        let own = rules.staging.join(name);
        if own.is_dir() {
            own
        } else {
            rules.staging.clone()
        }
    });
    let task = Task::new(name, &dir)?
        .ignoring(&rules.state)
        .ignoring(&rules.verdicts);
    let (path, baseline) = snapshot::take(&task, &rules.state)?;
    println!(
        "baseline of {name}: {} files in {} -> {}",
        baseline.files.len(),
        task.dir.display(),
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}
