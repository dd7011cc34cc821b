//! The commands about the rules and the key: `rules check`, `rules schema`, `init`, `snapshot`,
//! `verify`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};

use super::{config_path, load};
use validator::config::graph;
use validator::contract::Contract;
use validator::verdict::sign::{self, KeyFile, KeySource, VerifyError};
use validator::{Rules, Task, snapshot, task};

pub(crate) fn rules_check(found: &super::Found) -> Result<ExitCode> {
    let config = &found.path;
    let rules = load(config)?;
    // Where `check` would judge: a gate that would not run there (`only_if`) lacks nothing.
    let dir = found.project_dir();
    let here = validator::Task::new(validator::task::name_from_dir(&dir), &dir).ok();
    let mut out = anstream::stdout();
    let mut warnings = Vec::new();
    let mut problems = Vec::new();
    for pipeline in &rules.pipelines {
        writeln!(out, "{}", graph::render(pipeline, rules.defaults.timeout))?;
        warnings.extend(graph::warnings(pipeline));
        problems.extend(graph::problems(pipeline, here.as_ref()));
    }
    if let Some(accepted) = validator::hook::Agent::Claude
        .blocks_accepted()
        .filter(|&accepted| rules.defaults.max_attempts > accepted)
    {
        warnings.push(format!(
            "max_attempts is {}, but Claude Code ends a turn by itself after {accepted} stop-hook blocks in a row: under `validator hook claude` the breaker trips at stop {} (raise CLAUDE_CODE_STOP_HOOK_BLOCK_CAP in the agent's environment to allow more)",
            rules.defaults.max_attempts,
            accepted + 1
        ));
    }
    warnings.extend(rules.unhonoured(&validator::config::keys::FrontEnd::ALL));
    warnings.extend(validator::config::tools::tool_names_in_commands(
        &rules.tools,
    ));
    print_hooks_and_notes(&mut out, &rules)?;
    if let Some(dir) = &rules.contracts {
        let (checked, broken) = check_contracts(&rules, dir);
        writeln!(
            out,
            "contracts in {}: {checked} checked, {} broken",
            dir.display(),
            broken.len()
        )?;
        problems.extend(broken);
    }
    let warn = anstyle::AnsiColor::Yellow.on_default();
    for warning in &warnings {
        writeln!(out, "{warn}warning{warn:#}: {warning}")?;
    }
    let gates: usize = rules.pipelines.iter().map(|p| p.gates.len()).sum();
    if !problems.is_empty() {
        // What `check` would end in ERROR is not a valid setup here, whatever the syntax.
        let error = anstyle::AnsiColor::Red.on_default();
        for problem in &problems {
            writeln!(out, "{error}error{error:#}: {problem}")?;
        }
        writeln!(
            out,
            "{}: {} problem{} that `check` would end in ERROR here",
            config.display(),
            problems.len(),
            validator_text::plural(problems.len()),
        )?;
        return Ok(ExitCode::from(super::EXIT_ERROR));
    }
    writeln!(
        out,
        "{}: valid, {} pipeline{}, {gates} gate{}, {} warning{}",
        config.display(),
        rules.pipelines.len(),
        validator_text::plural(rules.pipelines.len()),
        validator_text::plural(gates),
        warnings.len(),
        validator_text::plural(warnings.len()),
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Most contract files `rules check` reads: a directory of contracts is a team's, not a
/// data set's.
const MAX_CONTRACTS: usize = 10_000;

/// Checks every contract in `dir` as a run would read it (`<task>.yaml`, `<task>.json`): how
/// many were read, and each problem with its file, line and column and the fix.
fn check_contracts(rules: &Rules, dir: &Path) -> (usize, Vec<String>) {
    use std::collections::BTreeSet;
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return (0, Vec::new()),
        Err(err) => {
            return (
                0,
                vec![format!(
                    "cannot list the contracts in {}: {err}",
                    dir.display()
                )],
            );
        }
    };
    let mut tasks = BTreeSet::new();
    let mut problems = Vec::new();
    for entry in entries.flatten().take(MAX_CONTRACTS) {
        let path = entry.path();
        let is_contract = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|extension| validator::contract::EXTENSIONS.contains(&extension));
        let Some(stem) = path.file_stem().filter(|_| is_contract) else {
            continue;
        };
        let stem = stem.to_string_lossy().into_owned();
        match task::validate_name(&stem) {
            Ok(()) => {
                tasks.insert(stem);
            }
            Err(err) => problems.push(format!(
                "{}: no task can have this contract: {}\n  help: name the file <task>.yaml after a task name",
                path.display(),
                validator_text::one_line(&err.to_string())
            )),
        }
    }
    let key = validator::judge::signing(rules);
    for task in &tasks {
        let contract = match Contract::find(dir, task) {
            Ok(Some(contract)) => contract,
            Ok(None) => continue,
            Err(err) => {
                problems.push(err.to_string());
                continue;
            }
        };
        // The gates it adds must build under the pipeline that would judge it.
        if let Ok(pipeline) = rules.pipeline_for(task, None) {
            if let Err(why) = contract.expand(pipeline, rules, &key) {
                problems.push(format!("{}: {why}", contract.path.display()));
            }
        }
    }
    (tasks.len(), problems)
}

/// Which pipeline answers which agent hook event (a gates.json's `hooks`), and what the
/// loader accepted without running it.
pub(crate) fn print_hooks_and_notes(out: &mut impl Write, rules: &Rules) -> Result<()> {
    for binding in &rules.hooks {
        let agents = match binding.agents.as_slice() {
            [] => String::new(),
            agents => format!(" (agent types: {})", agents.join(", ")),
        };
        writeln!(
            out,
            "hook {} runs pipeline {}{agents}",
            binding.event, binding.pipeline
        )?;
    }
    for note in &rules.notes {
        writeln!(out, "note: {note}")?;
    }
    Ok(())
}

/// `validator init`: writes the rules file `-c` names, else ./validator.yaml, for the project
/// in the current directory.
pub(crate) fn init(config: Option<PathBuf>, kind: Option<&str>, force: bool) -> Result<ExitCode> {
    let rules = config.unwrap_or_else(|| PathBuf::from(crate::init::RULES_FILE));
    let kind = kind.and_then(crate::init::Kind::from_name);
    let written = crate::init::init(Path::new("."), &rules, kind, force)?;
    print!("{written}");
    Ok(ExitCode::SUCCESS)
}

/// `validator init --from FILE`: a gates.json of another runner's shape, written as a
/// validator.yaml that `rules check` accepts, with what could not be carried over listed at
/// its top.
pub(crate) fn init_from(config: Option<PathBuf>, from: &Path, force: bool) -> Result<ExitCode> {
    let rules = config.unwrap_or_else(|| PathBuf::from(crate::init::RULES_FILE));
    if !force && rules.symlink_metadata().is_ok() {
        bail!("{} exists; pass --force to replace it", rules.display());
    }
    let source = validator_process::files::read_text(
        from,
        4 * 1024 * 1024,
        validator_process::files::Links::Follow,
    )
    .with_context(|| format!("cannot read {}", from.display()))?;
    let converted = validator::config::convert::from_gates_json(from, &source)
        .map_err(|why| anyhow!("{} cannot be converted: {why}", from.display()))?;
    // What is written must load: a conversion that does not is a bug, said before anything
    // is written.
    Rules::parse(&rules, &converted.yaml).map_err(|err| {
        anyhow!(
            "the conversion of {} does not load ({err}); please report it",
            from.display()
        )
    })?;
    validator::replace::atomically(&rules, converted.yaml.as_bytes())
        .with_context(|| format!("cannot write {}", rules.display()))?;
    println!("wrote {} from {}", rules.display(), from.display());
    for item in &converted.left_out {
        println!("  not carried over: {}", validator_text::one_line(item));
    }
    Ok(ExitCode::SUCCESS)
}

/// `validator rules keys`: the table of which keys act where (docs/keys.md is this text).
pub(crate) fn rules_keys() -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    out.write_all(validator::config::keys::markdown().as_bytes())
        .and_then(|()| out.flush())
        .context("cannot write the table to stdout")?;
    Ok(ExitCode::SUCCESS)
}

/// `validator rules schema [--contract]`: needs no rules file, it describes them (or the
/// handoff contracts).
pub(crate) fn rules_schema(contract: bool) -> Result<ExitCode> {
    use validator::config::json_schema::rules_schema_text;
    let text = if contract {
        validator::contract::schema_text()
    } else {
        rules_schema_text()
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("cannot write the schema to stdout")?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn snapshot(config: &Path, name: &str, task_dir: Option<PathBuf>) -> Result<ExitCode> {
    let rules = load(config)?;
    task::validate_name(name)?;
    let dir = match task_dir {
        Some(dir) => dir,
        None => validator::staging::task_dir(&rules.staging, name).map_err(anyhow::Error::msg)?,
    };
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

/// `validator verify`: the key from `--key`, else `$VALIDATOR_KEY_FILE`, else the rules file's
/// `signing_key_file:` (a rules file is looked for only then, and need not exist).
pub(crate) fn verify(
    config: Option<PathBuf>,
    file: &Path,
    key: Option<PathBuf>,
) -> Result<ExitCode> {
    let key_file = match key {
        Some(path) => Some(KeyFile {
            path,
            source: KeySource::Flag,
        }),
        // Without a rules file, only $VALIDATOR_KEY_FILE can name the key; a rules file is
        // looked for only when it does not.
        None => match KeyFile::configured(None) {
            Some(from_env) => Some(from_env),
            None => {
                let rules = match config_path(config) {
                    Ok(path) => Some(load(&path)?),
                    Err(_) => None,
                };
                KeyFile::configured(rules.as_ref().and_then(Rules::key_named))
            }
        },
    };
    let Some(key_file) = key_file else {
        bail!(
            "no signing key to check {} with\n  help: pass --key KEYFILE, set {}, or set `signing_key_file:` in the rules file (-c FILE); the key must be the one the watcher signs with",
            file.display(),
            sign::KEY_FILE_ENV
        );
    };
    let key = key_file.read()?;
    let document = sign::read_document(file, validator_process::files::Links::Follow).map_err(|err| {
        anyhow!(
            "cannot read the verdict {}: {err}\n  help: pass the path of a <task>.verdict.json file",
            file.display()
        )
    })?;
    match sign::verify(&document, &key) {
        Ok(()) => {
            let value: serde_json::Value = serde_json::from_str(&document)?;
            let field = |name: &str| value[name].as_str().unwrap_or("?").to_owned();
            println!(
                "{}: task {}, verdict {}: signature valid",
                file.display(),
                field("task"),
                field("verdict")
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(
            why
            @ (VerifyError::Unsigned | VerifyError::Mismatch | VerifyError::DuplicateKey { .. }),
        ) => {
            eprintln!(
                "{}: {why}\n  help: do not trust this verdict (checked with the key in {}; the watcher must sign with the same key)",
                file.display(),
                key.path().display()
            );
            Ok(ExitCode::from(1))
        }
        Err(why @ VerifyError::Malformed(_)) => bail!(
            "{}: {why}\n  help: pass a verdict document written by validator",
            file.display()
        ),
    }
}
