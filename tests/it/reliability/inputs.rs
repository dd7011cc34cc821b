//! Bad input from a worker (its files, its done signal) or in a rules file: hostile file names,
//! trees too deep for a path, symlink loops, a 2 GB sparse file, YAML alias bombs. Each must
//! end in a verdict or an error that says why, with no crash, in bounded time and memory.
//! `tests/it/hostile.rs` covers nesting bombs and special files; this covers the rest.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::process::Output;
use std::time::Duration;

use serde_json::Value;

use crate::common::{Project, gate, pipeline, reasons};
use crate::reliability::harness::{BIN, Sidecar};

/// Far beyond what any of these runs needs; a run that has not ended by then is a hang.
const HANG: Duration = Duration::from_secs(120);

/// Runs the binary with its address space capped at 1 GiB (`ulimit -v`): an expansion that
/// got past the parser's limits would abort the process instead of passing unnoticed.
fn capped(args: &[&OsStr]) -> Output {
    let output = assert_cmd::Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1048576 && exec \"$0\" \"$@\"")
        .arg(BIN)
        .args(args)
        .env_remove("VALIDATOR_CONFIG")
        .env_remove("VALIDATOR_LOG")
        .env("NO_COLOR", "1")
        .timeout(HANG)
        .output()
        .expect("run validator");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.code().is_some() && !stderr.contains("memory allocation"),
        "validator did not end on its own: {:?}\n{stderr}",
        output.status
    );
    output
}

fn verdict_of(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "not a verdict ({err}): {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

// ---------------------------------------------------------------------------------------------
// File names

/// Names a shell, a glob, a terminal, a CI log or a parser could take for something else.
fn hostile_names() -> Vec<Vec<u8>> {
    let mut names: Vec<Vec<u8>> = [
        &b"-rf.txt"[..],
        b"--help.txt",
        b"new\nline.txt",
        b"x\n::error file=pwned::injected.txt",
        b"cr\r.txt",
        b"tab\there.txt",
        b"\xff\xfe not utf-8.txt",
        b"$(touch PWNED).txt",
        b"`touch PWNED`.txt",
        b"; touch PWNED;.txt",
        b"*.txt",
        b"[x].txt",
        b"quote'\"s.txt",
        b"%0A%25.txt",
        b"<xml attr=\"&amp;\">.txt",
        b" leading space.txt",
        b"\x1b[31mred.txt",
    ]
    .iter()
    .map(|name| name.to_vec())
    .collect();
    // As long as a name can be.
    names.push([&b"x".repeat(251)[..], b".txt"].concat());
    names
}

#[test]
fn hostile_file_names_reach_commands_intact_and_every_format_survives_them() {
    let names = hostile_names();
    let project = Project::new();
    project.rules(&pipeline(&format!(
        r#"      - name: args
        rule: lint
        run: ["sh", "-c", "n=0; for a; do [ -f \"$a\" ] || {{ echo \"missing: $a\"; exit 1; }}; n=$((n+1)); done; [ $n -eq {n} ] || {{ echo \"got $n of {n}\"; exit 1; }}", "sh"]
        files: ["*.txt"]
      - {{name: present, rule: exists, paths: ["*.txt"], min_count: {n}}}
      - {{name: scope, rule: file-scope, allow: ["*.txt"]}}
      - {{name: forbidden, rule: exists, forbid: ["*.txt"], on_fail: CONTINUE}}
"#,
        n = names.len()
    )));
    for name in &names {
        std::fs::write(project.task_dir().join(OsStr::from_bytes(name)), "x\n")
            .expect("a hostile name");
    }
    let (code, verdict) = project.verdict();
    assert_eq!(code, 0, "{verdict:#}");
    for name in ["args", "present", "scope"] {
        assert_eq!(gate(&verdict, name)["outcome"], "pass", "{verdict:#}");
    }
    // Each name is a finding of the advisory gate, in every format.
    let forbidden = gate(&verdict, "forbidden");
    assert_eq!(
        forbidden["findings"].as_array().map(Vec::len),
        Some(names.len()),
        "{forbidden:#}"
    );
    for root in [project.path(), project.task_dir().as_path()] {
        assert!(!root.join("PWNED").exists(), "a file name ran as a command");
    }

    let format = |format: &str| {
        let output = project
            .check()
            .args(["--format", format])
            .timeout(HANG)
            .output()
            .expect("run validator");
        assert_eq!(
            output.status.code(),
            Some(0),
            "--format {format}: {output:?}"
        );
        String::from_utf8(output.stdout).expect("UTF-8 output")
    };
    // GitHub reads every line that starts with `::` as a command: a name must not start one.
    let github = format("github");
    let commands: Vec<&str> = github.lines().filter(|l| l.starts_with("::")).collect();
    assert_eq!(commands.len(), names.len(), "{github}");
    assert!(
        commands.iter().all(|l| l.starts_with("::warning ")),
        "{github}"
    );
    // JUnit is XML a CI parses: it must stay well-formed.
    let junit = format("junit");
    let mut reader = quick_xml::Reader::from_str(&junit);
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(_) => {}
            Err(err) => panic!("--format junit is not well-formed XML ({err}):\n{junit}"),
        }
    }
    assert!(format("feedback").lines().count() <= 60);
    let text = format("text");
    assert!(
        !text.contains('\u{1b}'),
        "a name's escape reached the terminal"
    );
}

// ---------------------------------------------------------------------------------------------
// Deep trees

/// Creates `levels` nested directories named `d` under `root`, with `file` in the deepest,
/// one `openat` at a time: the whole path may be longer than the OS lets a path be.
fn deep_tree(root: &std::path::Path, levels: usize, file: &str) {
    use nix::fcntl::{OFlag, openat};
    use nix::sys::stat::{Mode, mkdirat};
    let mut dir = std::fs::File::open(root)
        .map(std::os::fd::OwnedFd::from)
        .expect("open the task dir");
    for _ in 0..levels {
        mkdirat(&dir, "d", Mode::S_IRWXU).expect("mkdirat");
        dir = openat(
            &dir,
            "d",
            OFlag::O_RDONLY | OFlag::O_DIRECTORY,
            Mode::empty(),
        )
        .expect("openat");
    }
    let fd = openat(
        &dir,
        file,
        OFlag::O_WRONLY | OFlag::O_CREAT,
        Mode::S_IRUSR | Mode::S_IWUSR,
    )
    .expect("create the deepest file");
    nix::unistd::write(&fd, b"x").expect("write");
}

#[test]
fn a_tree_2000_directories_deep_is_walked() {
    let project = Project::new();
    project.rules(&pipeline(
        r#"      - {name: present, rule: exists, paths: ["**/deep.txt"]}
      - {name: scope, rule: file-scope, allow: ["**"]}
      - {name: args, rule: lint, run: ["test", "-f"], files: ["**/deep.txt"]}
"#,
    ));
    deep_tree(&project.task_dir(), 2000, "deep.txt");
    let (code, verdict) = project.verdict();
    assert_eq!(
        code,
        0,
        "{}",
        verdict.to_string().chars().take(2000).collect::<String>()
    );
}

/// Past `PATH_MAX` (4096 bytes) a directory cannot be opened by its path: what lies beyond
/// cannot be judged, and the gate says so instead of passing without looking.
#[test]
fn a_tree_deeper_than_a_path_can_be_fails_and_says_why() {
    let project = Project::new();
    project.rules(&pipeline(
        "      - {name: present, rule: exists, paths: [\"**/*.txt\"]}\n",
    ));
    project.file("top.txt", "x");
    deep_tree(&project.task_dir(), 2100, "beyond.txt");
    let (code, verdict) = project.verdict();
    assert_eq!(code, 1);
    let findings = gate(&verdict, "present")["findings"].to_string();
    assert!(findings.contains("cannot be read"), "{findings:.500}");
}

// ---------------------------------------------------------------------------------------------
// Symlink loops

#[test]
fn symlink_loops_are_refused_not_followed() {
    let project = Project::new();
    project
        .rules(&pipeline(
            r#"      - {name: present, rule: exists, paths: ["**/real.txt"]}
      - {name: scope, rule: file-scope, allow: ["**"], on_fail: CONTINUE}
      - {name: docs, rule: schema, schema: schemas/object.json, files: ["**/*.json"], on_fail: CONTINUE}
      - {name: args, rule: lint, run: ["true"], files: ["**/*"], on_fail: CONTINUE}
      - {name: report, rule: test, run: ["false"], junit: loop.xml, on_fail: CONTINUE}
"#,
        ))
        .root_file("schemas/object.json", r#"{"type": "object"}"#)
        .file("real.txt", "x")
        .file("real.json", "{}")
        .file("sub/keep.txt", "x");
    let task = project.task_dir();
    let link = |target: &str, at: &str| {
        std::os::unix::fs::symlink(target, task.join(at)).expect("symlink");
    };
    link("b", "a"); // a -> b -> a
    link("a", "b");
    link("x.json", "x.json"); // itself
    link("loop.xml", "loop.xml");
    link(".", "self"); // a directory loop
    link("..", "sub/up");
    let (code, verdict) = project.verdict();
    assert_eq!(code, 0, "{verdict:#}");
    assert_eq!(gate(&verdict, "present")["outcome"], "pass");
    for name in ["scope", "docs", "args"] {
        let found = gate(&verdict, name);
        assert_eq!(found["outcome"], "fail", "{found:#}");
        let text = found["findings"].to_string();
        assert!(text.contains("x.json"), "{name}: {text}");
        assert!(!text.contains("sub/keep.txt"), "{name}: {text}");
    }
    let report = gate(&verdict, "report")["summary"].to_string();
    assert!(report.contains("loop.xml"), "{report}");
}

// ---------------------------------------------------------------------------------------------
// A 2 GB sparse file

/// `schema` refuses a document over `max_bytes` by its size, without reading it: the watcher
/// reads far less than the file holds while judging it.
#[test]
fn a_2_gb_sparse_file_is_refused_by_max_bytes_without_being_read() {
    let mut w = Sidecar::new(
        r#"version: 1
staging: staging
verdicts: verdicts
state: state
pipelines:
  - name: main
    gates:
      - {name: present, rule: exists, paths: ["*.json"], non_empty: true}
      - {name: report, rule: schema, schema: object.json, files: ["*.json"]}
"#,
    );
    std::fs::write(w.path().join("object.json"), r#"{"type": "object"}"#).expect("schema");
    w.task("t", &[]);
    std::fs::File::create(w.staging().join("t/big.json"))
        .and_then(|file| file.set_len(2 << 30))
        .expect("a sparse file");
    w.start(&[]);
    let before = w.bytes_read();
    std::fs::write(w.done_path("t"), "STATUS: OK\n").expect("signal");
    let mut verdict = Value::Null;
    let judged = crate::common::poll(HANG, || {
        verdict = std::fs::read(w.verdict_path("t"))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or(Value::Null);
        verdict.is_object()
    });
    assert!(judged, "no verdict\n{}", w.logs());
    let read = w.bytes_read() - before;
    assert_eq!(verdict["verdict"], "FAIL", "{verdict:#}");
    assert_eq!(gate(&verdict, "present")["outcome"], "pass");
    let findings = gate(&verdict, "report")["findings"].to_string();
    assert!(
        findings.contains("2147483648 bytes, over max_bytes"),
        "{findings}"
    );
    assert!(read < 64 << 20, "the watcher read {read} bytes judging it");
}

// ---------------------------------------------------------------------------------------------
// YAML alias bombs ("billion laughs"): nine levels of nine aliases, 9^9 strings expanded

fn alias_bomb() -> String {
    let mut lines = vec![format!("a: &a [{}]", ["\"lol\""; 9].join(","))];
    for (prev, name) in "abcdefgh".chars().zip("bcdefghi".chars()) {
        lines.push(format!(
            "{name}: &{name} [{}]",
            vec![format!("*{prev}"); 9].join(",")
        ));
    }
    lines.join("\n") + "\n"
}

#[test]
fn an_alias_bomb_in_a_rules_file_is_a_clear_error() {
    let project = Project::new();
    // The anchors where a rules file allows any key (none), and an alias where it wants a list.
    project.rules(&format!(
        "version: 1\n{}pipelines:\n  - name: main\n    tasks: *i\n    gates:\n      - {{name: s, rule: status}}\n",
        alias_bomb()
    ));
    for command in [&["rules", "check"][..], &["check", "--task-dir"][..]] {
        let mut args: Vec<&OsStr> = command.iter().map(OsStr::new).collect();
        let task = project.task_dir();
        if command[0] == "check" {
            args.push(task.as_os_str());
        }
        let rules = project.rules_path();
        args.extend([OsStr::new("-c"), rules.as_os_str()]);
        let output = capped(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("validator.yaml:2:1") && stderr.contains("unknown field `a`"),
            "{stderr}"
        );
    }
    // Where a rules file does take a list, an alias to the bomb is refused as the wrong type
    // before anything is expanded.
    project.rules(&format!(
        "version: 1\npipelines:\n  - name: main\n    tasks: &a [\"x\"]\n    gates:\n      - {{name: s, rule: exists, paths: [*a, *a, *a]}}\n  - name: other\n    tasks: [{}]\n    gates:\n      - {{name: s, rule: status}}\n",
        ["*a"; 9].join(",")
    ));
    let rules = project.rules_path();
    let output = capped(&[
        OsStr::new("rules"),
        OsStr::new("check"),
        OsStr::new("-c"),
        rules.as_os_str(),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("validator.yaml:"), "{stderr}");
}

fn passing_project() -> Project {
    let project = Project::new();
    project
        .rules(&pipeline(
            "      - {name: status, rule: status}\n      - {name: docs, rule: schema, schema: object.json, files: [\"*.yaml\"]}\n",
        ))
        .root_file("object.json", r#"{"type": "object"}"#)
        .file("doc.yaml", "a: 1\n");
    project
}

fn capped_check(project: &Project) -> (i32, Value) {
    let rules = project.rules_path();
    let task = project.task_dir();
    let signal = project.signal_path();
    let output = capped(&[
        OsStr::new("check"),
        OsStr::new("--format"),
        OsStr::new("json"),
        OsStr::new("-c"),
        rules.as_os_str(),
        OsStr::new("--task-dir"),
        task.as_os_str(),
        OsStr::new("--signal"),
        signal.as_os_str(),
    ]);
    (
        output.status.code().expect("exit code"),
        verdict_of(&output),
    )
}

#[test]
fn an_alias_bomb_in_a_done_signal_fails_the_run_without_expanding() {
    // Opening like a report, it must be one: the run fails and says why.
    let project = passing_project();
    project.signal(&format!("status: OK\n{}", alias_bomb()));
    let (code, verdict) = capped_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let why = reasons(&verdict);
    assert!(
        why.contains("done signal") && why.contains("repetition limit exceeded"),
        "{why}"
    );

    // Not opening like a report, it is prose: kept as the summary, unparsed, so it has no
    // STATUS and the status gate fails.
    let project = passing_project();
    project.signal(&format!("{}status: OK\n", alias_bomb()));
    let (code, verdict) = capped_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    assert!(
        gate(&verdict, "status")["summary"]
            .to_string()
            .contains("no STATUS"),
        "{verdict:#}"
    );
}

#[test]
fn an_alias_bomb_in_a_schema_document_is_a_finding() {
    let project = passing_project();
    project
        .file("doc.yaml", &alias_bomb())
        .signal("STATUS: OK\n");
    let (code, verdict) = capped_check(&project);
    assert_eq!(code, 1, "{verdict:#}");
    let docs = gate(&verdict, "docs")["findings"].to_string();
    assert!(
        docs.contains("does not parse as YAML") && docs.contains("repetition limit exceeded"),
        "{docs}"
    );
}

/// The watcher judges a bomb like any bad signal and carries on.
#[test]
fn the_watcher_fails_an_alias_bomb_and_carries_on() {
    let mut w = Sidecar::new(
        "version: 1\nstaging: staging\nverdicts: verdicts\nstate: state\npipelines:\n  - name: main\n    gates:\n      - {name: status, rule: status}\n",
    );
    w.task("bomb", &[]);
    w.task("good", &[]);
    w.start(&[]);
    std::fs::write(w.done_path("bomb"), format!("status: OK\n{}", alias_bomb())).expect("signal");
    std::fs::write(w.done_path("good"), "STATUS: OK\n").expect("signal");
    let tasks = ["bomb", "good"].iter().map(|t| t.to_string()).collect();
    w.wait_current(&tasks, HANG, "a bomb and a good signal");
    let status = w.status();
    let verdict = |task: &str| {
        status
            .iter()
            .find(|s| s["task"] == task)
            .map(|s| s["verdict"].clone())
    };
    assert_eq!(verdict("bomb"), Some(Value::from("FAIL")));
    assert_eq!(verdict("good"), Some(Value::from("PASS")));
    assert!(w.running(), "{}", w.logs());
}
