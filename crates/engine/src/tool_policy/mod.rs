//! Tool-time enforcement: an agent's tool call judged before it runs, from the same rules and
//! contract that judge its stop. A write (a file tool, a patch, or a shell command whose writes
//! can be seen) is allowed only where the stop would allow the change; a shell command is held
//! to the rules file's `tools:` section. Nothing here runs a program or git: a decision reads
//! the rules, the contract and the paths it names, so it is ready before the agent waits.

mod place;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::config::Pipeline;
use crate::config::tools::{CommandDecision, Tools, Unknown};
use crate::contract::Contract;
use crate::rules::Rule;
use crate::rules::file_scope::FileScope;
use crate::task::Task;
use validator_text::name;

use place::{Made, Place};
pub use validator_shell::writes::{Copy, Seen};

/// Most files below a directory a command writes whole (`rm -r`, `cp -r`) that are judged one
/// by one; past it the command is refused, as what it would change cannot all be told.
const MAX_FILES_UNDER: usize = 10_000;

/// The work one decision may do (a path placed, a file below a directory judged): past it the
/// call is refused, never let run, so an answer always comes well inside the agent's hook
/// timeout. Each unit is a few system calls; a line that repeats work is judged once per
/// distinct path (see [`Line`]).
const MAX_WORK: usize = 50_000;

/// The time one decision may take, whatever its work: past it the call is refused, so the
/// whole answer (the process's start and the rules read included) comes under 100 ms. A debug
/// build (the tests') judges an order of magnitude slower and has the old budget.
const MAX_TIME: Duration = Duration::from_millis(if cfg!(debug_assertions) { 500 } else { 45 });

/// What a tool call does, as far as the rules need to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// A file tool or a patch writes these paths (as the tool names them).
    Write(Vec<String>),
    /// A shell tool runs this command line.
    Shell(String),
    /// A tool that writes no file (reading, searching, fetching): the rules say nothing of it.
    Other,
    /// A tool whose writes cannot be told (one validator does not know): held to
    /// `tools.unknown`, as a shell command whose writes cannot be told is.
    Unknown(String),
    /// A call too big to judge in time (a patch past its caps), and why: refused, whatever
    /// the rules, as it could write anything.
    TooBig(String),
}

/// The refusal of a call too big to judge in time (`why`): never let run.
fn too_big_to_judge(why: &str) -> Permission {
    Permission::Deny(format!(
        "validator ran out of its budget for judging this call: {why}, more than can be judged in time; split it into smaller calls"
    ))
}

/// The answer before a tool runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Permission {
    Allow,
    /// Refused, with the reason the agent reads (one line).
    Deny(String),
    /// A person must confirm it, where the agent can ask one; the reason says why.
    Ask(String),
}

/// A decision, and why some of what a shell command writes could not be told (it runs, and
/// what it changed is looked at when it ends).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ruling {
    pub decision: Permission,
    pub unknown: Vec<String>,
}

/// What the rules say of one task's tool calls: where it may write (the pipeline's blocking
/// `file-scope` gates and the contract's file lists, as at the stop) and which commands it may
/// run (`tools:`).
pub struct Policy<'a> {
    task: &'a Task,
    scopes: Vec<(String, FileScope)>,
    tools: &'a Tools,
    line: Line,
}

/// The files below a directory, or `None` past [`MAX_FILES_UNDER`].
type Walked = Option<Rc<Vec<String>>>;

/// What the call being judged has done so far and what it has cost: the links its line made
/// (followed by the writes after them), what was already judged (a line that repeats a command
/// is judged once per distinct path), and the work spent against [`MAX_WORK`] and [`MAX_TIME`].
#[derive(Default)]
struct Line {
    made: RefCell<Vec<Made>>,
    writes: RefCell<HashMap<(PathBuf, String), Option<String>>>,
    copies: RefCell<HashMap<(PathBuf, Copy), Option<String>>>,
    /// The files below each directory walked (`None`: too many).
    under: RefCell<HashMap<PathBuf, Walked>>,
    work: Cell<usize>,
    started: Cell<Option<Instant>>,
}

impl Line {
    /// Spends `units` of work; the refusal's reason once the budget is spent.
    fn spend(&self, units: usize) -> Result<(), String> {
        let work = self.work.get().saturating_add(units);
        self.work.set(work);
        let started = self.started.get().unwrap_or_else(|| {
            let now = Instant::now();
            self.started.set(Some(now));
            now
        });
        if work > MAX_WORK || started.elapsed() > MAX_TIME {
            return Err(format!(
                "validator ran out of its budget for judging this call (more than {MAX_WORK} paths to judge, or {} ms) before it could tell what it writes; split it into smaller commands",
                MAX_TIME.as_millis()
            ));
        }
        Ok(())
    }

    /// A link made: what was judged before may land elsewhere now.
    fn made(&self, link: Made) {
        self.made.borrow_mut().push(link);
        self.writes.borrow_mut().clear();
        self.copies.borrow_mut().clear();
    }
}

impl<'a> Policy<'a> {
    /// The policy for `task` under `pipeline` (if one applies) and its `contract`.
    pub fn new(
        task: &'a Task,
        pipeline: Option<&Pipeline>,
        contract: Option<&Contract>,
        tools: &'a Tools,
    ) -> Self {
        let mut scopes = Vec::new();
        for gate in pipeline.map(|p| p.gates.as_slice()).unwrap_or_default() {
            let Rule::FileScope(scope) = &gate.rule else {
                continue;
            };
            // A gate whose failure lets the run go on, or that would not run, refuses nothing
            // at the stop either.
            let blocking = matches!(
                gate.on_fail,
                crate::config::Route::Block | crate::config::Route::Stop
            );
            let runs = gate
                .only_if
                .as_ref()
                .is_none_or(|only_if| only_if.unmet(task).is_none());
            if blocking && runs {
                scopes.push((gate.name.clone(), scope.clone()));
            }
        }
        // The stop's own `contract.scope` rule, so a call is refused exactly where the stop
        // would fail (`files_owned: []` owns nothing: every write is refused).
        if let Some(scope) = contract.and_then(Contract::scope) {
            scopes.push(("contract.scope".into(), scope));
        }
        Policy {
            task,
            scopes,
            tools,
            line: Line::default(),
        }
    }

    /// The scopes writes are held to, each with the gate that holds it.
    pub fn scopes(&self) -> &[(String, FileScope)] {
        &self.scopes
    }

    /// Judges `action`, made from `cwd` (the directory the agent's tool runs in).
    pub fn decide(&self, action: &Action, cwd: &Path) -> Ruling {
        let allowed = |unknown| Ruling {
            decision: Permission::Allow,
            unknown,
        };
        match action {
            Action::Other => allowed(Vec::new()),
            Action::Write(paths) => match paths.iter().find_map(|p| {
                self.refuse_write(cwd, p)
                    .or_else(|| self.refuse_through(cwd, p))
            }) {
                Some(why) => Ruling {
                    decision: Permission::Deny(why),
                    unknown: Vec::new(),
                },
                None => allowed(Vec::new()),
            },
            Action::Shell(line) => self.decide_shell(line, cwd),
            Action::Unknown(why) => self.unknown_writes(Permission::Allow, vec![why.clone()]),
            Action::TooBig(why) => Ruling {
                decision: too_big_to_judge(why),
                unknown: Vec::new(),
            },
        }
    }

    /// The answer to a call some of whose writes cannot be told (`unknown`, each why): refused
    /// under `tools.unknown: deny`, else `decision` (and what changed is looked at after).
    fn unknown_writes(&self, decision: Permission, unknown: Vec<String>) -> Ruling {
        match unknown.first() {
            Some(why) if self.tools.unknown == Unknown::Deny => Ruling {
                decision: Permission::Deny(format!(
                    "validator cannot tell before it runs what this writes ({why}), and the rules refuse such calls (`tools.unknown: deny`); write the files with your file tools, or ask a person to allow the command in the rules"
                )),
                unknown,
            },
            _ => Ruling { decision, unknown },
        }
    }

    fn decide_shell(&self, line: &str, cwd: &Path) -> Ruling {
        // The clock starts before the line is read: reading it is part of the answer's time.
        let _ = self.line.spend(0);
        let script = validator_shell::read(line);
        let seen = validator_shell::writes::seen(&script, line);
        let too_big = if line.len() > validator_shell::MAX_SCRIPT_BYTES {
            Some(format!(
                "it is longer than {} KiB",
                validator_shell::MAX_SCRIPT_BYTES / 1024
            ))
        } else if script.too_long || seen.len() > validator_shell::MAX_COMMANDS {
            Some(format!(
                "it runs more than {} commands",
                validator_shell::MAX_COMMANDS
            ))
        } else {
            seen.iter().find_map(|command| command.too_big.clone())
        };
        if let Some(why) = too_big {
            return Ruling {
                decision: too_big_to_judge(&why),
                unknown: Vec::new(),
            };
        }
        let mut asked = None;
        let mut unknown = Vec::new();
        // Where the next command may run: the agent's directory, moved by each `cd` (see
        // `moved`). Every place a write could land is judged.
        let mut here = vec![cwd.to_path_buf()];
        for command in &seen {
            let deny = |why: String| Ruling {
                decision: Permission::Deny(why),
                unknown: unknown.clone(),
            };
            if let Err(why) = self.line.spend(1) {
                return deny(why);
            }
            // Text that runs as a command validator could not read may be any command: every
            // rule that refuses or asks holds it, the strictest first.
            if let Some(why) = command.any.as_ref().filter(|_| !command.speculative) {
                match self.any_command(why) {
                    Some(Permission::Deny(said)) => return deny(said),
                    Some(Permission::Ask(said)) => {
                        asked.get_or_insert(said);
                    }
                    _ => {}
                }
            }
            // Before any rule: the answer to a call held for a person is never the worker's.
            if let Some(why) = answers_for_a_person(command) {
                return deny(why);
            }
            let mut allowed = false;
            if let Some(rule) = self.rule_for(command) {
                let said = rule_reason(rule, command);
                match rule.decision {
                    CommandDecision::Deny => return deny(said),
                    CommandDecision::Ask => {
                        asked.get_or_insert(said);
                    }
                    // It may run, whatever validator knows of its writes; where it visibly
                    // writes is still judged.
                    CommandDecision::Allow => allowed = true,
                }
            }
            // A string read as if it were a command line only answers to the command rules.
            if command.speculative {
                continue;
            }
            let places: Vec<PathBuf> = here
                .iter()
                .map(|at| command.dirs.iter().fold(at.clone(), |at, dir| at.join(dir)))
                .collect();
            if let Some(why) = self.refuse_command(command, &places) {
                return deny(why);
            }
            self.record_links(command, &places);
            if let Some(why) = command.unknown.as_ref().filter(|_| !allowed) {
                unknown.push(why.clone());
            }
            if let Some(why) = self.foreign_repository(command, &places) {
                unknown.push(why);
            }
            if let Err(why) = moved(&mut here, command) {
                unknown.push(why);
            }
        }
        self.unknown_writes(asked.map_or(Permission::Allow, Permission::Ask), unknown)
    }

    /// The answer to a command validator could not read (`why`): refused when any rule
    /// refuses a command, else asked when any asks, saying which; `None` when no rule does.
    fn any_command(&self, why: &str) -> Option<Permission> {
        let rules = &self.tools.commands;
        let strictest = rules
            .iter()
            .find(|rule| rule.decision == CommandDecision::Deny)
            .or_else(|| {
                rules
                    .iter()
                    .find(|rule| rule.decision == CommandDecision::Ask)
            })?;
        let because = strictest
            .reason
            .as_deref()
            .map(|r| format!(": {}", validator_text::one_line(r)))
            .unwrap_or_default();
        let advice = "write the command out so each command in it can be read";
        Some(match strictest.decision {
            CommandDecision::Deny => Permission::Deny(format!(
                "{why}: a command validator could not read may be any command, `{}` among them, which the rules refuse (`tools.commands`){because}; {advice}",
                strictest.pattern
            )),
            _ => Permission::Ask(format!(
                "{why}: a command validator could not read may be any command, `{}` among them, which needs a person's approval (`tools.commands`){because}; {advice}, or a person must run it",
                strictest.pattern
            )),
        })
    }

    /// Why what `command` writes (run in any of `places`) is refused, if it is.
    fn refuse_command(&self, command: &Seen, places: &[PathBuf]) -> Option<String> {
        // Removing or renaming over a file never writes through its other names.
        let program = command
            .words
            .first()
            .and_then(|w| w.literal.as_deref())
            .map(|p| p.rsplit('/').next().unwrap_or(p));
        let replaces = program.is_some_and(|p| ["rm", "rmdir", "unlink", "mv", "sed"].contains(&p));
        // Every path judged costs, a repeated one too (judged once, still looked up, and its
        // other names looked for each time): one command may name thousands.
        let spent = |units| self.line.spend(units).err();
        let per_write = if replaces { 1 } else { 2 };
        command
            .writes
            .iter()
            .flat_map(|path| places.iter().map(move |cwd| (cwd, path)))
            .find_map(|(cwd, path)| {
                spent(per_write)
                    .or_else(|| self.refuse_write(cwd, path))
                    .or_else(|| {
                        (!replaces)
                            .then(|| self.refuse_through(cwd, path))
                            .flatten()
                    })
            })
            .or_else(|| {
                command.copies.iter().find_map(|copy| {
                    places
                        .iter()
                        .find_map(|cwd| spent(1).or_else(|| self.refuse_copy_once(cwd, copy)))
                })
            })
            .or_else(|| {
                command
                    .creates
                    .iter()
                    .flat_map(|path| places.iter().map(move |cwd| (cwd, path)))
                    .find_map(|(cwd, path)| spent(1).or_else(|| self.refuse_place(cwd, path).err()))
            })
    }

    /// Keeps the links `command` makes (`ln -s`, `ln`, `cp -s`, `cp -l`), so the writes after
    /// it in the line are followed through them.
    fn record_links(&self, command: &Seen, places: &[PathBuf]) {
        for copy in command.copies.iter().filter(|c| c.symbolic || c.hard) {
            for cwd in places {
                let into_dir = into_dir(cwd, copy);
                for source in &copy.sources {
                    let link = landing(copy, source, into_dir);
                    let Some(at) = place::link_place(cwd, &link, &self.line.made.borrow()) else {
                        continue;
                    };
                    let target = if copy.hard {
                        match self.place(cwd, source) {
                            Place::Inside(rel) => self.task.dir.join(rel),
                            Place::Outside(real) => real,
                        }
                    } else if copy.relative {
                        cwd.join(source)
                    } else {
                        PathBuf::from(source)
                    };
                    self.line.made(Made { at, target });
                }
            }
        }
    }

    /// Where `path` (from `cwd`) lands, through the links the line made before.
    fn place(&self, cwd: &Path, path: &str) -> Place {
        place::place(&self.task.dir, cwd, path, &self.line.made.borrow())
    }

    /// Why writing into the file `path` names (from `cwd`) is refused when it has other names:
    /// a hard link's write changes every name, and validator cannot tell cheaply where the
    /// others are (a file the rules protect, one outside the task).
    fn refuse_through(&self, cwd: &Path, path: &str) -> Option<String> {
        use std::os::unix::fs::MetadataExt;
        let Place::Inside(rel) = self.place(cwd, path) else {
            return None;
        };
        let meta = self.task.dir.join(&rel).symlink_metadata().ok()?;
        (meta.is_file() && meta.nlink() > 1).then(|| {
            format!(
                "writing {} is refused: the file has {} names (hard links), and a write through one changes them all, where validator cannot tell which files the others are; remove it and write a new file",
                name(path),
                meta.nlink()
            )
        })
    }

    /// Why git run where `command` runs would use a repository the worker may have written (a
    /// directory below the task that git takes for one: a `.git`, or `HEAD`, `objects` and
    /// `refs` side by side), whose settings choose programs git runs (`core.fsmonitor`).
    fn foreign_repository(&self, command: &Seen, places: &[PathBuf]) -> Option<String> {
        let program = command.words.first()?.literal.as_deref()?;
        if program.rsplit('/').next() != Some("git") {
            return None;
        }
        let root = self.task.dir.as_path();
        places.iter().find_map(|place| {
            let place = resolve_cwd(place);
            place
                .ancestors()
                .take_while(|dir| dir.starts_with(root) && *dir != root)
                .find(|dir| {
                    dir.join(".git").symlink_metadata().is_ok()
                        || (dir.join("HEAD").is_file()
                            && dir.join("objects").is_dir()
                            && dir.join("refs").is_dir())
                })
                .map(|dir| {
                    format!(
                        "git would run on the repository at {}, inside the task, whose settings may run any program",
                        name(&dir.to_string_lossy())
                    )
                })
        })
    }

    /// The first command rule that matches `command`. A program validator does not know may
    /// run any of its arguments as a command (`flock F git push`, `strace git push`): the
    /// rules that refuse or ask are matched against each tail of its words too.
    fn rule_for(&self, command: &Seen) -> Option<&crate::config::tools::CommandRule> {
        let rules = &self.tools.commands;
        // A command read out of a string stands for itself only when its program is known.
        if command.speculative && command.words.first()?.literal.is_none() {
            return None;
        }
        if let Some(rule) = rules
            .iter()
            .find(|rule| rule.matches_at(&command.words, command.subcommand))
        {
            return Some(rule);
        }
        command.unknown.as_ref()?;
        // A tail is a command only from a word known before it runs.
        (1..command.words.len())
            .filter(|at| command.words[*at].literal.is_some())
            .find_map(|at| {
                rules.iter().find(|rule| {
                    rule.decision != CommandDecision::Allow && rule.matches(&command.words[at..])
                })
            })
    }

    /// Why writing `path` (from `cwd`) is refused, if it is: it leaves the task, it is
    /// validator's own, or a scope of the stop's refuses the change (for a directory, the change
    /// of any file in it).
    fn refuse_write(&self, cwd: &Path, path: &str) -> Option<String> {
        let key = (cwd.to_path_buf(), path.to_owned());
        if let Some(judged) = self.line.writes.borrow().get(&key) {
            return judged.clone();
        }
        let judged = match self.line.spend(1) {
            Ok(()) => self.judge_write(cwd, path),
            Err(why) => Some(why),
        };
        self.line.writes.borrow_mut().insert(key, judged.clone());
        judged
    }

    fn judge_write(&self, cwd: &Path, path: &str) -> Option<String> {
        let rel = match self.refuse_place(cwd, path) {
            Ok(rel) => rel,
            Err(why) => return Some(why),
        };
        let real = self.task.dir.join(&rel);
        let is_dir = rel.is_empty()
            || real
                .symlink_metadata()
                .is_ok_and(|meta| meta.file_type().is_dir());
        if !is_dir {
            return self.refuse_file(path, &rel);
        }
        match self.files_under(&real) {
            Ok(Some(files)) => files.iter().find_map(|file| {
                let file = if file == "." {
                    rel.clone()
                } else if rel.is_empty() {
                    file.clone()
                } else {
                    format!("{rel}/{file}")
                };
                self.refuse_file(path, &file)
            }),
            Ok(None) => Some(format!(
                "writing {} is refused: it holds more than {MAX_FILES_UNDER} files, too many to tell that none is one the rules protect",
                name(path)
            )),
            Err(why) => Some(why),
        }
    }

    /// The files below `dir` (see [`files_under`]), walked once per line; the error is the
    /// budget's.
    fn files_under(&self, dir: &Path) -> Result<Walked, String> {
        if let Some(walked) = self.line.under.borrow().get(dir) {
            return Ok(walked.clone());
        }
        // Out of budget is not kept: the budget refuses everything after it anyway.
        let walked = files_under(dir, &self.line)?;
        self.line
            .under
            .borrow_mut()
            .insert(dir.to_path_buf(), walked.clone());
        Ok(walked)
    }

    /// Where `path` (from `cwd`) lands in the task, or why it may not be written at all: it
    /// lands outside the task directory.
    fn refuse_place(&self, cwd: &Path, path: &str) -> Result<String, String> {
        match self.place(cwd, path) {
            Place::Inside(rel) => Ok(rel),
            Place::Outside(real) => Err(format!(
                "writing {} is refused: it lands outside the task directory ({}), where this task may not write; write only inside {}",
                name(path),
                name(&real.to_string_lossy()),
                name(&self.task.dir.to_string_lossy())
            )),
        }
    }

    /// Why changing the task file `rel` (named `path` by the tool) is refused, if it is.
    fn refuse_file(&self, path: &str, rel: &str) -> Option<String> {
        let shown = if path == rel {
            name(rel).into_owned()
        } else {
            format!("{} ({})", name(path), name(rel))
        };
        if self.task.is_ignored(rel) {
            return Some(format!(
                "writing {shown} is refused: it is validator's own file, which no worker changes"
            ));
        }
        // A repository's own files choose what git runs (hooks, filters, a pager): a worker
        // changes them only through git's commands.
        if rel.split('/').any(|part| part == ".git") {
            return Some(format!(
                "writing {shown} is refused: it is inside a `.git` directory, whose hooks and settings choose what git runs; use git's own commands"
            ));
        }
        self.scopes.iter().find_map(|(gate, scope)| {
            scope.breach(rel).map(|(_, why)| {
                format!(
                    "writing {shown} is refused: {why} in gate `{gate}`, which the stop would fail"
                )
            })
        })
    }

    /// Of the task files `changed` (what the worker changed, listed after a tool ran), each one
    /// the stop would fail, with why, in the words of a finding.
    pub fn breaches<'f>(&self, changed: impl IntoIterator<Item = &'f String>) -> Vec<String> {
        changed
            .into_iter()
            .filter_map(|rel| {
                if self.task.is_ignored(rel) {
                    return None;
                }
                self.scopes.iter().find_map(|(gate, scope)| {
                    scope.breach(rel).map(|(_, why)| {
                        format!("{}: changed, but {why} in gate `{gate}`", name(rel))
                    })
                })
            })
            .collect()
    }

    /// Why a copy is refused: what lands where it lands, each file under a copied directory
    /// included; for a symbolic link, also where it points (a link out of the task is one the
    /// stop fails).
    /// [`Policy::refuse_copy`], once per line for the same copy from the same place.
    fn refuse_copy_once(&self, cwd: &Path, copy: &Copy) -> Option<String> {
        let key = (cwd.to_path_buf(), copy.clone());
        if let Some(judged) = self.line.copies.borrow().get(&key) {
            return judged.clone();
        }
        let judged = self.refuse_copy(cwd, copy);
        self.line.copies.borrow_mut().insert(key, judged.clone());
        judged
    }

    fn refuse_copy(&self, cwd: &Path, copy: &Copy) -> Option<String> {
        let into_dir = into_dir(cwd, copy);
        // A hard link is its source's file: a write through it lands there, so making one is
        // judged as writing that file.
        if copy.hard
            && let Some(why) = copy
                .sources
                .iter()
                .find_map(|source| self.refuse_write(cwd, source))
        {
            return Some(format!(
                "a hard link shares its file, so a write through it changes that file: {why}"
            ));
        }
        if let Some(suffix) = &copy.backup
            && let Some(why) = copy.sources.iter().find_map(|source| {
                self.refuse_write(cwd, &format!("{}{suffix}", landing(copy, source, into_dir)))
            })
        {
            return Some(why);
        }
        if copy.symbolic {
            return copy.sources.iter().find_map(|target| {
                let link = landing(copy, target, into_dir);
                let link_dir = cwd.join(&link);
                // `ln -sr` names its target from here; a plain link from its own directory.
                let link_dir = match copy.relative {
                    true => cwd,
                    false => link_dir.parent().unwrap_or(cwd),
                };
                match self.place(link_dir, target) {
                    Place::Outside(real) => Some(format!(
                        "linking {} to {} is refused: the link would point outside the task directory, which the stop would fail",
                        name(&link),
                        name(&real.to_string_lossy())
                    )),
                    Place::Inside(_) => self.refuse_write(cwd, &link),
                }
            });
        }
        copy.sources.iter().find_map(|source| {
            let base = landing(copy, source, into_dir);
            let source = cwd.join(source);
            if source.is_dir() {
                match self.files_under(&source) {
                    Ok(Some(files)) => files.iter().find_map(|file| match file.as_str() {
                        "." => self.refuse_write(cwd, &base),
                        file => self.refuse_write(cwd, &format!("{base}/{file}")),
                    }),
                    Ok(None) => Some(format!(
                        "copying {} is refused: it holds more than {MAX_FILES_UNDER} files, too many to judge",
                        name(&source.to_string_lossy())
                    )),
                    Err(why) => Some(why),
                }
            } else {
                // A copy onto an existing file writes into it (`mv` renames over it).
                self.refuse_write(cwd, &base).or_else(|| {
                    (!copy.moves && !copy.symbolic)
                        .then(|| self.refuse_through(cwd, &base))
                        .flatten()
                })
            }
        })
    }
}

/// Every command a shell line would run, as the rules see it (for the fuzzer: an agent writes
/// the line).
#[doc(hidden)]
pub fn commands_of(line: &str) -> Vec<Seen> {
    validator_shell::writes::seen(&validator_shell::read(line), line)
}

/// The files a patch (Codex's `apply_patch` envelope, or a unified diff with its `a/` `b/`
/// prefixes kept) names; the error says why it is too big to judge.
pub fn patch_files(text: &str) -> Result<Vec<String>, String> {
    validator_shell::patch::files(text, 0)
}

/// Where `source` lands in a copy: under its own name in the destination when that is a
/// directory, else at the destination.
fn landing(copy: &Copy, source: &str, into_dir: bool) -> String {
    // `dir/.` is the directory's contents: they land in the destination itself.
    let contents = source.trim_end_matches('/');
    if !into_dir || contents == "." || contents.ends_with("/.") {
        return copy.dest.clone();
    }
    let file_name = Path::new(source)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("{}/{file_name}", copy.dest.trim_end_matches('/'))
}

/// Most places the commands of one line are kept as where they may run.
const MAX_PLACES: usize = 32;

/// Moves `here` (where the next command may run) by `command` if it changes directory: to
/// where it leads only when it surely gets there (a directory now, in this shell); else it may
/// stay too (a `cd` that fails, one in a shell of its own), so both are kept. The error says
/// why where it leads cannot be told.
fn moved(here: &mut Vec<PathBuf>, command: &Seen) -> Result<(), String> {
    let Some(program) = command.words.first() else {
        return Ok(());
    };
    if !(program.is("cd") || program.is("pushd") || program.is("popd")) {
        return Ok(());
    }
    let dir = match command.words.get(1) {
        Some(dir) => match &dir.literal {
            Some(literal) if !literal.starts_with('-') && !program.is("popd") => literal,
            _ => {
                return Err(format!(
                    "it changes to a directory not known before it runs ({})",
                    name(&dir.raw)
                ));
            }
        },
        None => {
            return Err("it changes to the home directory or back, which is not known here".into());
        }
    };
    let to: Vec<PathBuf> = here.iter().map(|at| at.join(dir)).collect();
    if !command.isolated && to.iter().all(|at| at.is_dir()) {
        *here = to;
    } else {
        here.extend(to);
    }
    here.dedup();
    if here.len() > MAX_PLACES {
        here.truncate(MAX_PLACES);
        return Err("it changes directory too many ways to follow".into());
    }
    Ok(())
}

/// What a matching command rule says to the agent.
fn rule_reason(rule: &crate::config::tools::CommandRule, command: &Seen) -> String {
    let words: Vec<&str> = command.words.iter().map(|w| w.raw.as_str()).collect();
    let command_text = name(&words.join(" ")).into_owned();
    let because = rule
        .reason
        .as_deref()
        .map(|r| format!(": {}", validator_text::one_line(r)))
        .unwrap_or_default();
    match rule.decision {
        CommandDecision::Deny => format!(
            "running {command_text} is refused by the rules (`tools.commands`: `{}`){because}",
            rule.pattern
        ),
        _ => format!(
            "running {command_text} needs a person's approval (`tools.commands`: `{}`){because}; if none can be asked, a person must run it",
            rule.pattern
        ),
    }
}

/// Where a copy's sources land: into its destination when that is a directory.
fn into_dir(cwd: &Path, copy: &Copy) -> bool {
    !copy.no_target_directory
        && (copy.dest.ends_with('/') || cwd.join(&copy.dest).is_dir() || copy.sources.len() > 1)
}

/// The files below `dir` (relative to it; `.` alone for an empty directory, judged as itself),
/// or `None` past [`MAX_FILES_UNDER`]; each entry is work spent from `line`'s budget, whose
/// refusal is the error. Links are not followed.
fn files_under(dir: &Path, line: &Line) -> Result<Walked, String> {
    let mut files = Vec::new();
    for entry in walkdir::WalkDir::new(dir).follow_links(false).min_depth(1) {
        line.spend(1)?;
        let Ok(entry) = entry else { continue };
        if entry.file_type().is_dir() {
            continue;
        }
        if files.len() == MAX_FILES_UNDER {
            return Ok(None);
        }
        let under = entry
            .path()
            .strip_prefix(dir)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        files.push(under);
    }
    if files.is_empty() {
        files.push(".".into());
    }
    Ok(Some(Rc::new(files)))
}

/// The directory `path` names, as an agent's tool input may give it relative to `cwd`.
pub fn resolve_cwd(cwd: &Path) -> PathBuf {
    cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf())
}

/// Why `command` is refused if it answers a call held for a person (`validator approve`,
/// `validator deny`, by any path or under any program that runs its arguments): that answer is
/// a person's, never the worker's. Any word after `validator` that is `approve` or `deny`, or
/// that cannot be read before it runs, refuses it: validator's own commands are few.
fn answers_for_a_person(command: &Seen) -> Option<String> {
    let words = &command.words;
    let at = words.iter().position(|word| {
        word.literal
            .as_deref()
            .map(|text| text.rsplit('/').next().unwrap_or(text))
            .is_some_and(|program| program == "validator")
    })?;
    let rest = &words[at + 1..];
    let answers = rest
        .iter()
        .any(|word| word.is("approve") || word.is("deny") || word.literal.is_none());
    answers.then(|| {
        "validator's approvals are a person's to give: a worker never runs `validator approve` or `validator deny`; wait for the person's answer, or ask them".to_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Rules;

    const RULES: &str = r#"version: 1
tools:
  commands:
    - {match: "git push", decision: deny, reason: pushing is for people}
    - {match: "./deploy*", decision: ask}
    - {match: "make test", decision: allow}
pipelines:
  - name: main
    gates:
      - {name: scope, rule: file-scope, allow: ["src/**", "tests/**"], readonly: ["src/lock.rs"], deny: ["**/*.pem"]}
      - {name: advice, rule: file-scope, allow: ["src/x/**"], on_fail: CONTINUE}
"#;

    struct Fixture {
        _dir: tempfile::TempDir,
        task: Task,
        rules: Rules,
    }

    fn fixture(rules: &str) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/sub")).unwrap();
        std::fs::write(dir.path().join("src/sub/a.rs"), "a").unwrap();
        std::fs::write(dir.path().join("src/lock.rs"), "l").unwrap();
        let rules = Rules::parse(&dir.path().join("validator.yaml"), rules).unwrap();
        let task = Task::new("t", dir.path()).unwrap();
        Fixture {
            _dir: dir,
            task,
            rules,
        }
    }

    fn decide(fixture: &Fixture, action: Action) -> Ruling {
        let policy = Policy::new(
            &fixture.task,
            fixture.rules.pipelines.first(),
            None,
            &fixture.rules.tools,
        );
        policy.decide(&action, &fixture.task.dir)
    }

    fn refused(judged: &Ruling) -> bool {
        matches!(judged.decision, Permission::Deny(_))
    }

    #[test]
    fn writes_are_judged_by_the_stops_blocking_scopes() {
        let f = fixture(RULES);
        let write = |p: &str| decide(&f, Action::Write(vec![p.to_owned()]));
        assert!(!refused(&write("src/new.rs")));
        assert!(!refused(&write("tests/t.rs")));
        for path in [
            "notes.txt",
            "src/lock.rs",
            "src/key.pem",
            "../x",
            "/etc/hosts",
        ] {
            let judged = write(path);
            assert!(refused(&judged), "{path}");
        }
        let Permission::Deny(why) = write("notes.txt").decision else {
            unreachable!()
        };
        assert!(
            why.contains("notes.txt")
                && why.contains("src/**, tests/**")
                && why.contains("`scope`"),
            "{why}"
        );
        assert!(!why.contains('\n'));
    }

    #[test]
    fn a_worker_never_answers_a_call_held_for_a_person() {
        let f = fixture(RULES);
        let shell = |line: &str| decide(&f, Action::Shell(line.to_owned()));
        for line in [
            "validator approve abc123",
            "/usr/local/bin/validator -c /x/validator.yaml deny abc123 --reason ok",
            "true && env validator approve abc123",
            "timeout 5 validator approve abc123",
            "validator \"$(printf approve)\" abc123",
            "sh -c 'validator approve abc123'",
        ] {
            assert!(refused(&shell(line)), "{line}");
        }
        for line in ["validator approvals", "validator status", "echo approve"] {
            assert!(!refused(&shell(line)), "{line}");
        }
    }

    #[test]
    fn shell_commands_are_held_to_the_rules_and_to_the_scope_of_their_writes() {
        let f = fixture(RULES);
        let shell = |line: &str| decide(&f, Action::Shell(line.to_owned()));
        assert!(refused(&shell("cd src && git push origin main")));
        assert!(refused(&shell("echo x > notes.txt")));
        assert!(refused(&shell("cd src && echo x > ../notes.txt")));
        assert!(refused(&shell("sed -i s/a/b/ src/lock.rs")));
        assert!(refused(&shell("rm -rf src")), "src holds a readonly file");
        assert!(refused(&shell("cp src/sub/a.rs /tmp/")));
        assert!(refused(&shell("cp -r src/sub notes")));
        assert!(!refused(&shell("cp -r src/sub src/copy")));
        assert!(!refused(&shell("echo x > src/out.txt && cat src/out.txt")));
        assert!(matches!(
            shell("./deploy.sh prod").decision,
            Permission::Ask(_)
        ));
        let unknown = shell("python gen.py");
        assert_eq!(unknown.decision, Permission::Allow);
        assert_eq!(unknown.unknown.len(), 1);
        assert!(
            shell("make test").unknown.is_empty(),
            "an allowed command is known"
        );
    }

    #[test]
    fn hiding_a_command_or_where_it_writes_does_not_get_it_past() {
        let f = fixture(RULES);
        let shell = |line: &str| decide(&f, Action::Shell(line.to_owned()));
        for line in [
            "$(echo git) push",
            "echo . | xargs git push",
            "find . -name x -exec git push \\;",
            "bash -c 'cd src && git push'",
            "eval git push",
            "f() { git push; }; f",
            "cd src && cd sub && echo x > ../../notes.txt",
            "(cd src); echo x > notes.txt",
            "ln -s /etc/passwd src/passwd",
            "ln -s ../../outside src/link",
        ] {
            assert!(refused(&shell(line)), "{line}");
        }
        assert!(!refused(&shell("ln -s sub/a.rs src/alias.rs")));
        assert!(!refused(&shell("cd src && echo x > out.rs")));
    }

    #[test]
    fn a_command_hidden_behind_a_program_validator_does_not_know_is_still_matched() {
        let f = fixture(RULES);
        let shell = |line: &str| decide(&f, Action::Shell(line.to_owned()));
        for line in [
            "flock /tmp/l git push",
            "strace -f git push origin",
            "watch -n1 git push",
            "exec -a name git push",
            "busybox env git push",
        ] {
            assert!(refused(&shell(line)), "{line}");
        }
        // A program it knows does not run its arguments.
        assert!(!refused(&shell("echo git push")));
        assert!(!refused(&shell("grep -r 'git push' src")));
    }

    #[test]
    fn directories_made_and_modes_changed_are_judged_where_they_land() {
        let f = fixture(RULES);
        let shell = |line: &str| decide(&f, Action::Shell(line.to_owned()));
        assert!(refused(&shell("mkdir ../x")));
        assert!(refused(&shell("mkdir -p -m 700 /tmp/elsewhere")));
        assert!(!refused(&shell("mkdir -p src/new/deeper")));
        // `-w` is a mode, not an option: the file after it is changed.
        assert!(refused(&shell("chmod -w src/lock.rs")));
        assert!(refused(&shell("chmod -x,+w src/lock.rs")));
        assert!(refused(&shell("echo x > .git/hooks/pre-commit")));
    }

    #[test]
    fn a_line_longer_than_can_be_read_is_refused_whatever_the_rules() {
        let f = fixture(RULES);
        let long = format!(
            "echo {}; git push",
            "x".repeat(validator_shell::MAX_SCRIPT_BYTES)
        );
        assert!(refused(&decide(&f, Action::Shell(long.clone()))));
        let without = RULES.replace(
            "    - {match: \"git push\", decision: deny, reason: pushing is for people}\n    - {match: \"./deploy*\", decision: ask}\n",
            "",
        );
        // With no command rule to hold it to, it is still too big to judge what it writes.
        let judged = decide(&fixture(&without), Action::Shell(long));
        assert!(refused(&judged), "{judged:?}");
    }

    #[test]
    fn unknown_commands_are_refused_only_when_the_rules_say_so() {
        let f = fixture(&RULES.replace("tools:\n", "tools:\n  unknown: deny\n"));
        let shell = |line: &str| decide(&f, Action::Shell(line.to_owned()));
        assert!(refused(&shell("python gen.py")));
        assert!(refused(&shell("echo x > $OUT")));
        assert!(!refused(&shell("ls src && make test")));
    }
}
