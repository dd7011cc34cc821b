#!/usr/bin/env python3
"""The benchmark suite: `validator check` beside the tools a user would pick instead, on the same
inputs in the same run, reported as ratios (this machine is shared and noisy; a ratio of two
tools measured in turn means more than either time alone).

Run it through bench/run.sh, which builds the release binary first. Python 3 standard library
only. Peers are installed from their registries into target/bench-tools; a peer that cannot be
installed is skipped with a note in the results. QUICK=1 makes every input and run count small
(a sanity check that the suite works, not a measurement).

Timing: the commands of one comparison run in turn, round after round (A B C, A B C, ...),
after warm-up rounds, so load from elsewhere falls on all of them alike; the median is
reported.
"""

import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUICK = os.environ.get("QUICK") == "1"
TOOLS = ROOT / "target" / "bench-tools"
WORK = ROOT / "target" / "bench-work"
VALIDATOR = ROOT / "target" / "release" / "validator"
RESULTS = ROOT / "bench" / "RESULTS.md"

SMALL_DOCS = 500 if QUICK else 10_000
LARGE_DOCS = 5 if QUICK else 100
LARGE_ITEMS = 200 if QUICK else 4_000  # items per large document (~0.3 MB each at full size)
REPO_FILES = 5_000 if QUICK else 100_000
REPO_CHANGED = 10 if QUICK else 100
GATES = 10

notes = []


def log(message):
    print(message, file=sys.stderr, flush=True)


def run(argv, cwd=None, env=None, check=True):
    return subprocess.run(
        argv, cwd=cwd, env=env, check=check, capture_output=True, text=True
    )


def version(argv, cwd=None):
    try:
        out = run(argv, cwd=cwd, check=False)
        text = (out.stdout or out.stderr).strip().splitlines()
        return text[0] if text else "?"
    except OSError:
        return "not installed"


# --- peers -----------------------------------------------------------------------------------


def install_peers():
    """Installs the peers into target/bench-tools; returns {name: path to its command}."""
    TOOLS.mkdir(parents=True, exist_ok=True)
    found = {}
    venv = TOOLS / "venv"
    pip_packages = ["check-jsonschema", "pre-commit", "ruff"]
    try:
        if not (venv / "bin" / "pip").exists():
            run([sys.executable, "-m", "venv", str(venv)])
        run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check"]
            + pip_packages)
    except (subprocess.CalledProcessError, OSError) as err:
        notes.append(f"PyPI peers could not be installed ({err}); their comparisons are skipped.")
    for name, exe in [("check-jsonschema", "check-jsonschema"), ("pre-commit", "pre-commit"),
                      ("ruff", "ruff")]:
        if (venv / "bin" / exe).exists():
            found[name] = str(venv / "bin" / exe)
    node = TOOLS / "node"
    try:
        # No install scripts: lefthook's would install itself as the git hooks of whatever
        # repository it is run in (this one) and write a lefthook.yml at its top.
        run(["npm", "install", "--prefix", str(node), "--no-audit", "--no-fund", "--silent",
             "--ignore-scripts", "ajv-cli", "lefthook"])
    except (subprocess.CalledProcessError, OSError) as err:
        notes.append(f"npm peers could not be installed ({err}); their comparisons are skipped.")
    for name, exe in [("ajv-cli", "ajv"), ("lefthook", "lefthook")]:
        path = node / "node_modules" / ".bin" / exe
        if path.exists():
            found[name] = str(path)
    return found


def npm_version(package):
    manifest = TOOLS / "node" / "node_modules" / package / "package.json"
    try:
        return json.loads(manifest.read_text())["version"]
    except (OSError, ValueError, KeyError):
        return "not installed"


# --- timing ----------------------------------------------------------------------------------


def measure(cases, rounds, warmup=1):
    """cases: {label: (argv, cwd, env)}. Returns {label: [seconds, ...]}; each command must exit
    0, or the comparison would time a failure."""
    times = {label: [] for label in cases}
    labels = list(cases)
    for round_index in range(warmup + rounds):
        # Rotate who goes first, so no command always runs on a cache another just warmed.
        order = labels[round_index % len(labels):] + labels[:round_index % len(labels)]
        for label in order:
            argv, cwd, env = cases[label]
            started = time.perf_counter()
            done = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE)
            elapsed = time.perf_counter() - started
            if done.returncode != 0:
                raise RuntimeError(f"{label}: `{' '.join(map(str, argv))}` exited "
                                   f"{done.returncode}: {done.stderr.decode()[-2000:]}")
            if round_index >= warmup:
                times[label].append(elapsed)
    return times


def ms(seconds):
    return f"{seconds * 1000:.1f} ms" if seconds < 10 else f"{seconds:.2f} s"


rows = []      # (comparison, validator median, peer, peer median, ratio, target, verdict)
commands = []  # (comparison, label, command line)


def compare(name, cases, rounds, targets):
    """Measures `cases` (the first is validator's) and records one row per peer. targets:
    {peer label: (kind, number)}: kind "speedup" wants peer/validator >= number, "ratio" wants
    validator/peer <= number."""
    log(f"== {name}: {', '.join(cases)} ({rounds} rounds)")
    for label, (argv, cwd, _) in cases.items():
        commands.append((name, label, " ".join(map(str, argv)) + (f"   (in {cwd})" if cwd else "")))
    times = measure(cases, rounds)
    medians = {label: statistics.median(values) for label, values in times.items()}
    ours_label = next(iter(cases))
    ours = medians[ours_label]
    for label, median in medians.items():
        if label == ours_label:
            continue
        ratio = ours / median
        target = targets.get(label)
        if target is None:
            wanted, met = "(context)", ""
        elif target[0] == "speedup":
            wanted, met = f">= {target[1]}x faster", "met" if median / ours >= target[1] else "MISSED"
        else:
            wanted, met = f"<= {target[1]}x its time", "met" if ratio <= target[1] else "MISSED"
        rows.append((name, ms(ours), label, ms(median), f"{ratio:.3f} ({median / ours:.1f}x faster)"
                     if ratio < 1 else f"{ratio:.3f} ({ratio:.2f}x slower)", wanted, met))
        log(f"   {label}: {ms(median)} vs validator {ms(ours)}: ratio {ratio:.3f} {met}")


# What bounds a comparison whose target can be missed, said beside any miss (found by profiling,
# see README "How fast"): a target is never loosened silently.
LIMITS = {
    ("command gates: 10 x ruff check", "pre-commit"):
        "the ten ruff processes themselves take about as long as the whole validator run (see "
        "the floor row, the same commands back to back from sh): validator's own overhead is a "
        "few ms, and 0.1x pre-commit would need ruff to start faster than it does.",
    ("command gates: 10 x ruff check", "lefthook (serial)"):
        "as for pre-commit: ruff's own run time is the floor.",
    ("schema: 10000 small documents", "check-jsonschema"):
        "validator spends most of its time in the kernel opening and reading 10,000 files "
        "(openat2, fstat, two reads, close each) and parsing them; check-jsonschema's time is "
        "dominated by Python's per-document validation.",
    ("file-scope", "git status --porcelain"):
        "validator runs one `git status` against its own index of the base (kept in its state, "
        "refreshed by git), the listing of that index beside it, and its own walk of the task "
        "(the ground truth of what exists: files git cannot see count too); what is left above "
        "git's own walk is that walk, those calls and validator's start-up.",
}


def explanations():
    lines = []
    for name, _, peer, _, _, _, met in rows:
        if met != "MISSED":
            continue
        why = next((text for (prefix, who), text in LIMITS.items()
                    if name.startswith(prefix) and who == peer), "not analysed yet.")
        lines.append(f"- {name} vs {peer}: {why}")
    return ["", "## Missed targets: what limits them", ""] + lines if lines else []


def skipped(name, peer, why):
    rows.append((name, "", peer, "", "", "", f"skipped: {why}"))


# --- inputs ----------------------------------------------------------------------------------

SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": ["id", "name", "status", "tags", "items"],
    "additionalProperties": False,
    "properties": {
        "id": {"type": "integer", "minimum": 0},
        "name": {"type": "string", "minLength": 1, "maxLength": 200},
        "status": {"enum": ["ok", "blocked", "failed"]},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z][a-z0-9-]*$"},
                 "uniqueItems": True},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["file", "line", "message"],
                "additionalProperties": False,
                "properties": {
                    "file": {"type": "string"},
                    "line": {"type": "integer", "minimum": 1},
                    "message": {"type": "string", "maxLength": 1000},
                },
            },
        },
    },
}


def document(i, items):
    return {
        "id": i,
        "name": f"task-{i}",
        "status": ["ok", "blocked", "failed"][i % 3],
        "score": (i % 100) / 100,
        "tags": ["gate", f"t{i % 7}", "bench"],
        "items": [{"file": f"src/m{j % 50}.rs", "line": j + 1, "message": f"finding {j} of {i}"}
                  for j in range(items)],
    }


def make_documents():
    base = WORK / "schema"
    stamp = base / f".made-{SMALL_DOCS}-{LARGE_DOCS}-{LARGE_ITEMS}"
    if stamp.exists():
        return base
    shutil.rmtree(base, ignore_errors=True)
    for kind, count, items in [("small", SMALL_DOCS, 2), ("large", LARGE_DOCS, LARGE_ITEMS)]:
        folder = base / kind
        folder.mkdir(parents=True)
        for i in range(count):
            (folder / f"doc{i:05}.json").write_text(json.dumps(document(i, items), indent=1))
    (base / "schema.json").write_text(json.dumps(SCHEMA, indent=2))
    stamp.touch()
    return base


def make_repo():
    repo = WORK / "repo" / "tree"
    stamp = WORK / "repo" / f".made-{REPO_FILES}"
    git_env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null")
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost",
           "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"]
    if not stamp.exists():
        shutil.rmtree(WORK / "repo", ignore_errors=True)
        repo.mkdir(parents=True)
        log(f"   generating a repository of {REPO_FILES} files")
        for i in range(REPO_FILES):
            folder = repo / f"d{i // 1000:03}" / f"s{(i // 100) % 10}"
            if i % 100 == 0:
                folder.mkdir(parents=True, exist_ok=True)
            (folder / f"f{i}.txt").write_text(f"file {i}\n")
        run(git + ["init", "-q"], cwd=repo, env=git_env)
        run(git + ["add", "-A"], cwd=repo, env=git_env)
        run(git + ["commit", "-q", "-m", "base"], cwd=repo, env=git_env)
        stamp.touch()
    # The same change every time: half edits, half new files.
    run(git + ["reset", "-q", "--hard"], cwd=repo, env=git_env)
    run(git + ["clean", "-q", "-fdx"], cwd=repo, env=git_env)
    step = REPO_FILES // REPO_CHANGED
    for n, i in enumerate(range(0, REPO_FILES, step)):
        folder = repo / f"d{i // 1000:03}" / f"s{(i // 100) % 10}"
        if n % 2 == 0:
            with open(folder / f"f{i}.txt", "a") as f:
                f.write("changed\n")
        else:
            (folder / f"new{i}.txt").write_text("new\n")
    run(["git", "status", "--porcelain"], cwd=repo)  # refresh the index once
    return repo


def make_python_project():
    project = WORK / "pyproject"
    if project.exists():
        return project
    (project / "pkg").mkdir(parents=True)
    for i in range(20):
        body = [f'"""Module {i}."""', "", "import os", "", ""]
        for j in range(15):
            body += [f"def function_{j}(value: int) -> int:",
                     f'    """Return value plus {j}."""',
                     f"    return value + {j} + len(os.sep)", "", ""]
        (project / "pkg" / f"m{i}.py").write_text("\n".join(body).rstrip() + "\n")
    (project / "pkg" / "__init__.py").write_text("")
    return project


def expect(check, summary):
    """A timed run means nothing unless it did the work: its gate's summary must say so."""
    out = run(check + ["--format", "json"])
    said = json.loads(out.stdout)["gates"][0]["summary"]
    if summary not in said:
        raise RuntimeError(f"`{' '.join(check)}` did something else: {said}")


def rules(path, gates, state):
    path.write_text(f"version: 1\nstate: {state}\npipelines:\n  - name: bench\n    gates:\n{gates}")
    return path


# --- comparisons -----------------------------------------------------------------------------


def bench_schema(peers):
    base = make_documents()
    schema = base / "schema.json"
    for kind, count, rounds in [("small", SMALL_DOCS, 3 if QUICK else 7),
                                ("large", LARGE_DOCS, 2 if QUICK else 5)]:
        folder = base / kind
        name = f"schema: {count} {kind} documents"
        rules_file = rules(WORK / f"schema-{kind}.yaml",
                           f"      - name: documents\n        rule: schema\n"
                           f"        schema: {schema}\n        files: [\"*.json\"]\n",
                           WORK / "state")
        cases = {"validator check": ([str(VALIDATOR), "check", "-c", str(rules_file),
                                      "--task-dir", str(folder)], None, None)}
        expect(cases["validator check"][0], f"{count} documents valid")
        files = sorted(str(p) for p in folder.glob("*.json"))
        targets = {}
        if "check-jsonschema" in peers:
            cases["check-jsonschema"] = ([peers["check-jsonschema"], "--schemafile", str(schema)]
                                         + files, None, None)
            if kind == "small":
                targets["check-jsonschema"] = ("speedup", 30)
        else:
            skipped(name, "check-jsonschema", "not installed")
        if "ajv-cli" in peers:
            cases["ajv-cli"] = ([peers["ajv-cli"], "validate", "--spec=draft7", "-s", str(schema),
                                 "-d", str(folder / "*.json")], None, None)
            if kind == "small":
                targets["ajv-cli"] = ("speedup", 3)
        else:
            skipped(name, "ajv-cli", "not installed")
        compare(name, cases, rounds, targets)


def bench_gates(peers):
    base = WORK / "gates"
    rounds = 3 if QUICK else 15
    project = make_python_project()
    ruff = peers.get("ruff")
    selections = ["E", "F", "W", "I", "B", "UP", "N", "C4", "SIM", "RET"]
    for kind in ["true", "ruff"]:
        if kind == "ruff" and not ruff:
            skipped("command gates: 10 x ruff", "all", "ruff not installed")
            continue
        repo = base / kind
        shutil.rmtree(repo, ignore_errors=True)
        shutil.copytree(project, repo)
        argvs = ([["true"]] * GATES if kind == "true" else
                 [[ruff, "check", "--no-cache", "--quiet", "--select", s, "--exit-zero", "."]
                  for s in selections])
        run(["git", "init", "-q"], cwd=repo)  # lefthook and pre-commit want a repository
        gates = "".join(f"      - name: g{i}\n        rule: lint\n        run: {json.dumps(a)}\n"
                        for i, a in enumerate(argvs))
        rules_file = rules(WORK / f"gates-{kind}.yaml", gates, WORK / "state")
        name = f"command gates: {GATES} x {'`true`' if kind == 'true' else 'ruff check'}"
        cases = {"validator check": ([str(VALIDATOR), "check", "-c", str(rules_file),
                                      "--task-dir", str(repo)], None, None)}
        # The floor: the same ten processes back to back from one shell, nothing else (by full
        # path, or sh would run its builtin `true` without starting a process).
        cases["floor: the 10 commands from sh"] = (
            ["sh", "-c", "; ".join(shlex.join([shutil.which(a[0]) or a[0]] + a[1:])
                                   for a in argvs)], repo, None)
        targets = {}
        if "lefthook" in peers:
            # lefthook reads lefthook.yml from the repository's top: one copy per mode.
            for mode in ["serial", "parallel"]:
                copy = base / f"{kind}-lefthook-{mode}"
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(repo, copy)
                config = f"pre-commit:\n  parallel: {str(mode == 'parallel').lower()}\n"
                config += "  commands:\n" + "".join(
                    f"    g{i}:\n      run: {json.dumps(' '.join(a))}\n"
                    for i, a in enumerate(argvs))
                (copy / "lefthook.yml").write_text(config)
                cases[f"lefthook ({mode})"] = (
                    [peers["lefthook"], "run", "pre-commit", "--no-auto-install", "--force",
                     "--no-tty", "--colors", "off"], copy, None)
            targets["lefthook (serial)"] = ("ratio", 0.5)
        else:
            skipped(name, "lefthook", "not installed")
        if "pre-commit" in peers:
            hooks = "".join(
                f"      - id: g{i}\n        name: g{i}\n        entry: {json.dumps(a[0])}\n"
                f"        args: {json.dumps(a[1:])}\n        language: system\n"
                f"        pass_filenames: false\n        always_run: true\n"
                for i, a in enumerate(argvs))
            (repo / ".pre-commit-config.yaml").write_text(
                f"repos:\n  - repo: local\n    hooks:\n{hooks}")
            env = dict(os.environ, PRE_COMMIT_HOME=str(TOOLS / "pre-commit-home"))
            cases["pre-commit"] = ([peers["pre-commit"], "run", "--all-files"], repo, env)
            # Ten ruff processes alone take about 0.28x pre-commit's run, so no runner can reach
            # 0.1x there: the ruff row's target is the floor's (README, "How fast").
            if kind == "true":
                targets["pre-commit"] = ("ratio", 0.1)
        else:
            skipped(name, "pre-commit", "not installed")
        if kind == "ruff":
            targets["floor: the 10 commands from sh"] = ("ratio", 1.05)
        compare(name, cases, rounds, targets)


def bench_scope():
    repo = make_repo()
    rules_file = rules(WORK / "scope.yaml",
                       "      - name: scope\n        rule: file-scope\n        allow: [\"**\"]\n",
                       WORK / "state")
    cases = {
        "validator check": ([str(VALIDATOR), "check", "-c", str(rules_file), "--task-dir",
                             str(repo)], None, None),
        "git status --porcelain": (["git", "status", "--porcelain"], repo, None),
    }
    expect(cases["validator check"][0], f"{REPO_CHANGED} changed files")
    compare(f"file-scope: {REPO_FILES} files, {REPO_CHANGED} changed", cases,
            3 if QUICK else 15, {"git status --porcelain": ("ratio", 1.2)})


def bench_watch():
    """The watcher benchmark (benches/watch.rs) prints its own table, peers included."""
    env = dict(os.environ, IDLE_SECS="5" if QUICK else os.environ.get("IDLE_SECS", "60"))
    log("== watcher: cargo bench --locked --bench watch")
    done = subprocess.run(["cargo", "bench", "--locked", "--bench", "watch"], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        return [f"The watcher benchmark failed: {done.stderr[-1000:]}"]
    return [line for line in done.stdout.splitlines() if line.startswith("|")]


# --- report ----------------------------------------------------------------------------------


def machine():
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        memory = Path("/proc/meminfo").read_text().splitlines()[0].split()[1]
        memory = f"{int(memory) / 1024 / 1024:.0f} GiB"
    except OSError:
        memory = "?"
    return f"{os.cpu_count()} cores, {cpu}, {memory} memory; Linux {platform.release()}"


def report(peers, watch_rows, started, load_at_start):
    versions = [
        ("validator", version([str(VALIDATOR), "--version"])),
        ("rustc", version(["rustc", "--version"])),
        ("git", version(["git", "--version"])),
        ("python", platform.python_version()),
        ("node", version(["node", "--version"])),
        ("check-jsonschema", version([peers["check-jsonschema"], "--version"])
         if "check-jsonschema" in peers else "not installed"),
        ("ajv-cli", npm_version("ajv-cli")),
        ("lefthook", npm_version("lefthook")),
        ("pre-commit", version([peers["pre-commit"], "--version"])
         if "pre-commit" in peers else "not installed"),
        ("ruff", version([peers["ruff"], "--version"]) if "ruff" in peers else "not installed"),
    ]
    load_at_end = os.getloadavg()[0]
    lines = [
        "# Benchmark results",
        "",
        f"Made by `bench/run.sh`{' with QUICK=1 (small inputs: a sanity check, not a measurement)' if QUICK else ''}"
        f" on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}, in "
        f"{time.time() - started:.0f} s.",
        "",
        f"Machine: {machine()}. Load average (1 min) at the start {load_at_start:.2f}, at the "
        f"end {load_at_end:.2f}.",
        "" if load_at_start < 1.0 and load_at_end < 1.0 else
        "The load average shows other work on the machine during the run: compare the ratios, "
        "not the times.",
        "",
        "Each comparison runs its commands in turn, round after round after a warm-up round; the "
        "times are medians. Ratio = validator's time / the peer's time (below 1: validator is "
        "faster).",
        "",
        "| comparison | validator | peer | peer's time | ratio | target | |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    lines += explanations()
    lines += ["", "## Watcher (`cargo bench --bench watch`)", ""] + watch_rows
    lines += ["", "## Versions", ""] + [f"- {name}: {v}" for name, v in versions]
    lines += ["", "## Commands", ""]
    # Paths relative to the checkout, so the commands read the same on every machine.
    shown = [(name, label, command.replace(f"{ROOT}/", "./"))
             for name, label, command in commands]
    lines += [f"- {name}, {label}: `{command[:300]}{' …' if len(command) > 300 else ''}`"
              for name, label, command in shown]
    if notes:
        lines += ["", "## Notes", ""] + [f"- {note}" for note in notes]
    RESULTS.write_text("\n".join(lines) + "\n")
    log(f"wrote {RESULTS}")


def main():
    started = time.time()
    load_at_start = os.getloadavg()[0]
    if not VALIDATOR.exists():
        sys.exit("build the release binary first: bench/run.sh does")
    WORK.mkdir(parents=True, exist_ok=True)
    peers = install_peers()
    bench_schema(peers)
    bench_gates(peers)
    bench_scope()
    watch_rows = bench_watch()
    report(peers, watch_rows, started, load_at_start)


if __name__ == "__main__":
    main()
