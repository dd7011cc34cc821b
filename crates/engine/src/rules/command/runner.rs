//! Whose fault a failed command is when its runner was not there. Only what validator can
//! tell for certain is the environment's (ERROR: a worker cannot fix it by changing its work):
//! the rules run `python -m MODULE` directly (no shell, no `env` settings), with an interpreter
//! that is a program outside the task (not a version manager's shim, which picks the
//! interpreter by files a worker can write), and that interpreter, asked from a directory of
//! validator's own, has no such module, which is no module of the task's either: not in the
//! task now, and none of the worker's changes (against HEAD: a file of it changed, added or
//! deleted) is in it. A package the worker deleted is the worker's to restore (a FAIL that says
//! so), and so is one whose changes cannot be listed: the environment is blamed only when
//! validator has shown the module was never the task's. Anything a
//! script does (a `cd`, a `PATH` or `PYTHONPATH` of its own, a virtualenv it activates) is
//! beyond that: a program a shell could not find (exit 127) is said with its fix, as a FAIL;
//! so is a project tool missing from the task's own `node_modules`. Never decided from output
//! the worker's code could print ("No module named pytest"): a worker's `pytest.py` printing
//! that is judged as any failing test is.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::rules::{Context, Outcome};
use crate::task::Task;
use validator_process::{self as process, Exit};

/// Asks an interpreter whether it can find a top-level module (found, not imported: no code of
/// a package runs). Exit 3: it cannot.
const FIND_MODULE: &str =
    "import importlib.util,sys\nsys.exit(0 if importlib.util.find_spec(sys.argv[1]) else 3)";

/// The outcome a failed command gets instead of its own when a runner it needs is missing:
/// a module the rules name, missing from the environment (ERROR); a tool `npx --no-install`
/// finds nowhere, or one a shell could not find and that is indeed nowhere (FAIL, with the
/// install that fixes it).
pub(super) fn missing(
    argv: &[String],
    env: &[(OsString, OsString)],
    ctx: &Context<'_>,
    cwd: &Path,
    exit: i32,
    output: &str,
    deadline: Instant,
) -> Option<Outcome> {
    let task = ctx.task;
    named_by_rules(argv, env, ctx, cwd, deadline).or_else(|| {
        let program = (exit == 127).then(|| not_found_in(output)).flatten()?;
        (process::on_path(&OsString::from(program), env).is_none()
            && !in_node_modules(program, cwd, task))
        .then(|| {
            Outcome::fail(format!(
                "could not run: `{program}` was not found (exit 127; not on PATH, no node_modules/.bin/{program}); install it{}",
                dependencies(task)
            ))
        })
    })
}

fn named_by_rules(
    argv: &[String],
    env: &[(OsString, OsString)],
    ctx: &Context<'_>,
    cwd: &Path,
    deadline: Instant,
) -> Option<Outcome> {
    let task = ctx.task;
    let program = argv.first()?;
    // A relative path is a file of the task's.
    if program.contains('/') && Path::new(program).is_relative() {
        return None;
    }
    let found = PathBuf::from(process::on_path(&OsString::from(program), env)?);
    let program = found
        .file_name()
        .map_or(program.as_str(), |name| name.to_str().unwrap_or_default());
    if let Some(module) = python_module(program, argv) {
        if is_program_outside(&found, task)
            && !path_in_task(env, task)
            && path_of(env).all(|dir| dir.is_absolute())
            && !in_task(module, cwd, env)
            && !has_module(&found, module, env, deadline)
        {
            return Some(match worker_changed(ctx, module, cwd, env, deadline) {
                Ok(None) => Outcome::error(format!(
                    "could not run: `{}` has no module `{module}` (named in `run:`); install it where validator runs (pip install {module}): the environment's fault, not the work's",
                    found.display()
                )),
                Ok(Some(file)) => Outcome::fail(format!(
                    "could not run: module `{module}` (named in `run:`) is missing, and it is the task's: your changes removed or changed `{file}`; restore it (git checkout -- {})",
                    validator_text::name(&file)
                )),
                Err(why) => Outcome::fail(format!(
                    "could not run: module `{module}` (named in `run:`) is missing, and validator cannot tell whether your changes removed it ({why}); restore it if they did"
                )),
            });
        }
    }
    let tool = npx_tool(program, argv)?;
    (process::on_path(&OsString::from(tool), env).is_none() && !in_node_modules(tool, cwd, task))
        .then(|| {
            Outcome::fail(format!(
                "could not run: `{tool}` is not installed (no node_modules/.bin/{tool}, not on PATH); install the project's dependencies (npm install)"
            ))
        })
}

/// The first of the worker's changes (against HEAD, deletions included) that lies in
/// `module`'s top-level package where the interpreter would look for it (the gate's directory,
/// its `PYTHONPATH`): `Ok(None)` when none does, `Err` when the changes cannot be listed.
fn worker_changed(
    ctx: &Context<'_>,
    module: &str,
    cwd: &Path,
    env: &[(OsString, OsString)],
    deadline: Instant,
) -> Result<Option<String>, String> {
    let top = module.split('.').next().unwrap_or(module);
    let changes = crate::rules::file_scope::changed(ctx, "HEAD", deadline)
        .map_err(crate::changes::Problem::into_reason)?;
    let python_path = variable(env, "PYTHONPATH");
    let places: Vec<String> = std::iter::once(cwd.to_path_buf())
        .chain(std::env::split_paths(&python_path).map(|dir| cwd.join(dir)))
        .filter_map(|dir| {
            let rel = dir.strip_prefix(&ctx.task.dir).ok()?.to_str()?.to_owned();
            Some(match rel.trim_matches('/') {
                "" => String::new(),
                rel => format!("{rel}/"),
            })
        })
        .collect();
    Ok(changes
        .files
        .iter()
        .find(|file| {
            places.iter().any(|place| {
                file.strip_prefix(place.as_str()).is_some_and(|rest| {
                    rest == format!("{top}.py")
                        || rest == top
                        || rest.strip_prefix(top).is_some_and(|r| r.starts_with('/'))
                })
            })
        })
        .cloned())
}

/// How the project's own dependencies are installed, by its manifest.
fn dependencies(task: &Task) -> &'static str {
    let has = |file: &str| task.dir.join(file).is_file();
    if has("package.json") {
        ", or the project's dependencies (npm install)"
    } else if has("pyproject.toml") || has("setup.py") || has("requirements.txt") {
        ", or the project's dependencies (pip install -e ., pip install -r requirements.txt)"
    } else {
        ""
    }
}

/// The program a shell or `env` said it could not find, in the output's last such line.
fn not_found_in(output: &str) -> Option<&str> {
    output.lines().rev().find_map(|line| {
        let line = line.trim_end();
        let name = line
            .strip_suffix(": command not found")
            .or_else(|| line.strip_suffix(": not found"))
            .and_then(|head| head.rsplit(": ").next())
            .or_else(|| {
                line.strip_prefix("env: ")?
                    .strip_suffix(": No such file or directory")
                    .map(|quoted| quoted.trim_matches(|c| c == '\'' || c == '‘' || c == '’'))
            })?;
        (!name.is_empty()
            && !name.contains('/')
            && name
                .chars()
                .all(|c| c.is_alphanumeric() || "._+-".contains(c)))
        .then_some(name)
    })
}

/// The module `python -m MODULE` runs.
fn python_module<'a>(program: &str, words: &'a [String]) -> Option<&'a str> {
    let version = program.strip_prefix("python")?;
    if !version.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return None;
    }
    // `-m` must come before the first argument that is not an option: after a script's name it
    // is the script's.
    let mut rest = words.iter().skip(1);
    let module = loop {
        match rest.next()?.as_str() {
            "-m" => break rest.next()?,
            "-W" | "-X" => {
                rest.next()?;
            }
            option if option.starts_with('-') && option != "-c" && option != "-" => {}
            _ => return None,
        }
    };
    Some(module.as_str())
        .filter(|m| !m.is_empty() && m.chars().all(|c| c.is_alphanumeric() || "._".contains(c)))
}

/// The tool `npx --no-install TOOL` (or `--no`) runs: without those, npx downloads it.
fn npx_tool<'a>(program: &str, words: &'a [String]) -> Option<&'a str> {
    if program != "npx" || !words.iter().any(|w| w == "--no-install" || w == "--no") {
        return None;
    }
    words[1..]
        .iter()
        .find(|w| !w.starts_with('-'))
        .map(String::as_str)
}

/// Whether `program` is a program (an ELF binary) outside the task, reached through no name
/// the worker writes: a launcher script (a pyenv or asdf shim) picks what it runs by files a
/// worker can write, so what it lacks is not known to be the environment's.
fn is_program_outside(program: &Path, task: &Task) -> bool {
    if task.worker_may_write(program) {
        return false;
    }
    let Ok(file) = validator_process::files::open(program, validator_process::files::Links::Follow)
    else {
        return false;
    };
    let mut head = [0u8; 4];
    file.take(4).read(&mut head).is_ok_and(|n| n == 4) && head == *b"\x7fELF"
}

/// Whether the command's PATH names a directory the worker writes (by its full path): what is
/// missing from it (a runner deleted from the task's own virtualenv) is the task's.
pub(super) fn path_in_task(env: &[(OsString, OsString)], task: &Task) -> bool {
    path_of(env).any(|dir| dir.is_absolute() && task.worker_may_write(&dir))
}

/// The value of `name` a command gets: its gate's `env`, else validator's own.
fn variable(env: &[(OsString, OsString)], name: &str) -> OsString {
    env.iter()
        .rev()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.clone())
        .or_else(|| std::env::var_os(name))
        .unwrap_or_default()
}

/// The PATH a command gets, its directories in order.
fn path_of(env: &[(OsString, OsString)]) -> impl Iterator<Item = PathBuf> {
    std::env::split_paths(&variable(env, "PATH"))
        .collect::<Vec<_>>()
        .into_iter()
}

/// Whether `node_modules/.bin/TOOL` is in `cwd` or a directory above it in the task.
fn in_node_modules(tool: &str, cwd: &Path, task: &Task) -> bool {
    cwd.ancestors()
        .take_while(|dir| dir.starts_with(&task.dir))
        .any(|dir| dir.join("node_modules/.bin").join(tool).exists())
}

/// Whether `module`'s top-level package is one the task holds (`python3 -m tests`, or a
/// worker's `pytest.py`): in the gate's directory, or a `PYTHONPATH` entry the gate has. Its
/// failure is then the task's.
fn in_task(module: &str, cwd: &Path, env: &[(OsString, OsString)]) -> bool {
    let top = module.split('.').next().unwrap_or(module);
    let python_path = variable(env, "PYTHONPATH");
    std::iter::once(cwd.to_path_buf())
        .chain(std::env::split_paths(&python_path).map(|dir| cwd.join(dir)))
        .any(|dir| {
            dir.join(format!("{top}.py")).symlink_metadata().is_ok()
                || dir.join(top).symlink_metadata().is_ok()
        })
}

/// Whether the interpreter finds `module`'s top-level package, asked from a scratch directory;
/// an answer not had (no scratch directory, a timeout, a failure to start) counts as yes: the
/// gate's own failure then stands.
fn has_module(
    python: &Path,
    module: &str,
    env: &[(OsString, OsString)],
    deadline: Instant,
) -> bool {
    let Ok(scratch) = tempfile::tempdir() else {
        return true;
    };
    let top = module.split('.').next().unwrap_or(module);
    let argv: Vec<OsString> = vec![python.into(), "-c".into(), FIND_MODULE.into(), top.into()];
    let asked = process::run(&process::Spec {
        argv: &argv,
        cwd: scratch.path(),
        env,
        env_remove: process::GIT_HOOK_VARS,
        timeout: deadline
            .saturating_duration_since(Instant::now())
            .min(std::time::Duration::from_secs(10)),
        output_cap: 4096,
        cancel: None,
        separate_stderr: false,
        sandbox: None,
    });
    !matches!(asked, Ok(finished) if finished.exit == Exit::Code(3))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn what_a_shell_could_not_find_is_read_from_its_own_words() {
        assert_eq!(not_found_in("sh: 1: nyc: not found\n"), Some("nyc"));
        assert_eq!(
            not_found_in("bash: line 1: tape: command not found"),
            Some("tape")
        );
        assert_eq!(
            not_found_in("env: ‘eslint’: No such file or directory"),
            Some("eslint")
        );
        assert_eq!(
            not_found_in("env: 'eslint': No such file or directory"),
            Some("eslint")
        );
        assert_eq!(not_found_in("sh: 1: ./x: not found"), None);
        assert_eq!(not_found_in("all fine"), None);
    }

    #[test]
    fn modules_and_npx_tools_are_read_from_the_rules_words() {
        assert_eq!(
            python_module("python3", &words(&["python3", "-m", "pytest", "-q"])),
            Some("pytest")
        );
        assert_eq!(
            python_module("python3.12", &words(&["python3.12", "-m", "flake8"])),
            Some("flake8")
        );
        assert_eq!(
            python_module("pythonista", &words(&["pythonista", "-m", "x"])),
            None
        );
        assert_eq!(
            python_module(
                "python3",
                &words(&["python3", "run_tests.py", "-m", "unit"])
            ),
            None
        );
        assert_eq!(
            python_module(
                "python3",
                &words(&["python3", "-W", "error", "-m", "pytest"])
            ),
            Some("pytest")
        );
        assert_eq!(
            npx_tool("npx", &words(&["npx", "--no-install", "eslint", "."])),
            Some("eslint")
        );
        assert_eq!(npx_tool("npx", &words(&["npx", "eslint"])), None);
    }
}
