//! Whose fault a failed command is when its runner was not there: a program or a Python module
//! the rules' `run:` names, missing where validator runs, is the environment's (ERROR: a worker
//! cannot fix it by changing its work); a project tool missing from the task's own
//! `node_modules` is the task's to install (FAIL, saying so). Decided only from what validator
//! looks up itself, never from output the worker's code could print ("No module named pytest",
//! exit 127): a worker's `pytest.py` printing that is judged as any failing test is.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::process::{self, Exit};
use crate::rules::Outcome;
use crate::task::Task;

/// Words a shell runs itself: never looked for on PATH.
const BUILTINS: &[&str] = &[
    ":", ".", "[", "[[", "alias", "bg", "break", "builtin", "case", "cd", "command", "continue",
    "declare", "echo", "eval", "exec", "exit", "export", "false", "fg", "getopts", "hash", "jobs",
    "kill", "let", "local", "printf", "pwd", "read", "readonly", "return", "set", "shift",
    "source", "test", "times", "trap", "true", "type", "typeset", "ulimit", "umask", "unalias",
    "unset", "wait",
];
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "ash"];
/// Asks an interpreter whether it can find a top-level module (found, not imported: no code of
/// a package runs), from a directory of validator's own, so no file of the task (a
/// `pytest.py`, a `.python-version` a pyenv shim would follow) answers for the environment.
/// Exit 3: it cannot.
const FIND_MODULE: &str =
    "import importlib.util,sys\nsys.exit(0 if importlib.util.find_spec(sys.argv[1]) else 3)";

/// The outcome a failed command gets instead of its own when a runner it needs is missing:
/// one the rules name (looked up by validator), else, after exit 127, one a shell said it could
/// not find and that is indeed nowhere (a FAIL still: the script may be the worker's, as an npm
/// script is, and its fix is to install the project's dependencies).
pub(super) fn missing(
    argv: &[String],
    env: &[(OsString, OsString)],
    task: &Task,
    cwd: &Path,
    exit: i32,
    output: &str,
    deadline: Instant,
) -> Option<Outcome> {
    named_by_rules(argv, env, task, cwd, deadline).or_else(|| {
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

fn named_by_rules(
    argv: &[String],
    env: &[(OsString, OsString)],
    task: &Task,
    cwd: &Path,
    deadline: Instant,
) -> Option<Outcome> {
    for words in simple_commands(argv)? {
        let words = unwrapped(&words);
        let Some(program) = words.first() else {
            continue;
        };
        if program.contains('/') || BUILTINS.contains(&program.as_str()) {
            continue;
        }
        let Some(found) = process::on_path(&OsString::from(program), env) else {
            return Some(Outcome::error(format!(
                "could not run: `{program}` (named in `run:`) is not on PATH where validator runs; install it there (the environment's fault, not the work's)"
            )));
        };
        let found = PathBuf::from(found);
        if let Some(module) = python_module(program, words) {
            if !found_inside(&found, task)
                && !in_task(module, cwd, env)
                && !has_module(&found, module, env, deadline)
            {
                return Some(Outcome::error(format!(
                    "could not run: `{}` has no module `{module}` (named in `run:`); install it where validator runs (pip install {module}): the environment's fault, not the work's",
                    found.display()
                )));
            }
        }
        if let Some(tool) = npx_tool(program, words) {
            if process::on_path(&OsString::from(tool), env).is_none()
                && !in_node_modules(tool, cwd, task)
            {
                return Some(Outcome::fail(format!(
                    "could not run: `{tool}` is not installed (no node_modules/.bin/{tool}, not on PATH); install the project's dependencies (npm install)"
                )));
            }
        }
    }
    None
}

/// The commands the rules name, each as its literal words: the argv itself, or the simple
/// commands of a `sh -c` script (a word that expands is not known: that command is passed over).
/// None when the command looks its programs up on a PATH of its own making (it sets `PATH`,
/// or sources a file, as a virtualenv's `activate` does), or cannot be read whole: validator's
/// PATH is then not the one that failed to hold them.
fn simple_commands(argv: &[String]) -> Option<Vec<Vec<String>>> {
    let sets_path = |word: &str| word.starts_with("PATH=") || word.contains(" PATH=");
    let shell = argv
        .first()
        .and_then(|p| Path::new(p).file_name())
        .is_some_and(|name| SHELLS.iter().any(|s| name == *s));
    let script = match (shell, argv.get(1), argv.get(2)) {
        (true, Some(flag), Some(script))
            if flag.starts_with('-') && !flag.starts_with("--") && flag.contains('c') =>
        {
            script
        }
        _ if argv.iter().any(|w| sets_path(w)) => return None,
        _ => return Some(vec![argv.to_vec()]),
    };
    let read = crate::shell::read(script);
    let own_path = read.commands.iter().any(|c| {
        c.assignments.iter().any(|w| sets_path(&w.raw))
            || c.words.iter().any(|w| sets_path(&w.raw))
            || c.words
                .first()
                .is_some_and(|w| w.is(".") || w.is("source") || w.is("eval") || w.literal.is_none())
    });
    if own_path || !read.opaque.is_empty() {
        return None;
    }
    // A name the script defines, or tests for before it runs it, is not a program it needs.
    let tested = |name: &str| {
        script.contains(&format!("{name}()"))
            || script.contains(&format!("{name} ()"))
            || read.commands.iter().any(|c| {
                c.words.len() > 1
                    && c.words.iter().skip(1).any(|w| w.is(name))
                    && matches!(
                        c.words[0].literal.as_deref(),
                        Some("command" | "which" | "type" | "hash")
                    )
            })
    };
    Some(
        read.commands
            .iter()
            .filter_map(|c| {
                c.words
                    .iter()
                    .map(|w| w.literal.clone())
                    .collect::<Option<Vec<_>>>()
            })
            .filter(|words| words.first().is_some_and(|p| !tested(p)))
            .collect(),
    )
}

/// `env VAR=value … program …` is the program's command.
fn unwrapped(words: &[String]) -> &[String] {
    if words.first().is_some_and(|w| w == "env") {
        let at = words[1..]
            .iter()
            .position(|w| !w.contains('=') && !w.starts_with('-'))
            .map_or(words.len(), |i| i + 1);
        return &words[at..];
    }
    words
}

/// The module `python -m MODULE` runs.
fn python_module<'a>(program: &str, words: &'a [String]) -> Option<&'a str> {
    let version = program.strip_prefix("python")?;
    if !version.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return None;
    }
    let at = words.iter().position(|w| w == "-m")?;
    words
        .get(at + 1)
        .map(String::as_str)
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

fn found_inside(program: &Path, task: &Task) -> bool {
    program
        .canonicalize()
        .is_ok_and(|real| real.starts_with(&task.dir))
        || program.starts_with(&task.dir)
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
    let python_path = env
        .iter()
        .rev()
        .find(|(key, _)| key == "PYTHONPATH")
        .map(|(_, value)| value.clone())
        .or_else(|| std::env::var_os("PYTHONPATH"))
        .unwrap_or_default();
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
        env_remove: &[],
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
    fn a_shell_script_names_its_simple_commands_but_not_what_it_tests_for() {
        let argv = words(&[
            "sh",
            "-c",
            "ruff check . && python3 -m pytest; command -v mypy && mypy .",
        ]);
        let found: Vec<String> = simple_commands(&argv)
            .unwrap_or_default()
            .into_iter()
            .map(|w| w[0].clone())
            .collect();
        assert_eq!(found, ["ruff", "python3", "command"]);
        assert_eq!(
            simple_commands(&words(&["ruff", "check"])),
            Some(vec![words(&["ruff", "check"])])
        );
        // A PATH of the command's own making is not validator's to look programs up on.
        for own in [
            words(&["sh", "-c", ". .venv/bin/activate && runtests"]),
            words(&["sh", "-c", "PATH=$PWD/bin:$PATH tool"]),
            words(&["sh", "-c", "export PATH=/opt/x:$PATH; tool"]),
            words(&["env", "PATH=/opt/x", "tool"]),
            words(&["sh", "-c", "$RUNNER check"]),
        ] {
            assert_eq!(simple_commands(&own), None, "{own:?}");
        }
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
            npx_tool("npx", &words(&["npx", "--no-install", "eslint", "."])),
            Some("eslint")
        );
        assert_eq!(npx_tool("npx", &words(&["npx", "eslint"])), None);
        assert_eq!(
            unwrapped(&words(&["env", "A=1", "ruff", "x"])),
            &words(&["ruff", "x"])[..]
        );
    }
}
