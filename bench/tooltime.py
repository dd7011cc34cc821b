#!/usr/bin/env python3
"""What a pre-tool decision costs an agent: `validator hook claude` answering a PreToolUse, timed
as an agent's hook runner sees it (spawn, stdin, wait for exit), against the floor of any hook,
`true` spawned the same way with the same stdin. Alternated call by call, so both see the same
machine. A hook written as a command line may be run through a shell by the agent, so the same
pair is also timed as `sh -c '<command>'`, where both pay for the shell; the target is judged on
the direct pair.

    python3 bench/tooltime.py [--validator target/release/validator] [--calls 300]
    python3 bench/tooltime.py --hostile [--calls 30]

The project is a git repository of --files files with the python starter pack's rules and a
`tools:` section; the calls are the four kinds a session makes most: a write in scope, a write
out of scope (refused), a shell command whose write is seen, and one that is not. Target
(issue 28): p95 <= 20 ms and <= 2x the floor's p95. Exits 1 if missed. Standard library only.

--hostile times instead the lines that cost validator most to judge, each as long as a line it
reads (256 KiB): thousands of short commands, each with a redirection or a pipe, copies of
the 2,000-file tree, distinct copies of it (each its own walk), substitutions, `sh -c`
scripts, one command with thousands of writes, one huge word. Target (issue 40): every answer, the
slowest included, under 100 ms; past its budget validator refuses, never lets the call run.
"""

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def project(root, files):
    task = os.path.join(root, "proj")
    for i in range(files):
        d = os.path.join(task, "src", f"m{i // 100:03}")
        if i % 100 == 0:
            os.makedirs(d)
        with open(os.path.join(d, f"f{i % 100:02}.py"), "w") as f:
            f.write(f"x = {i}\n")
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@b", "-c", "commit.gpgsign=false"]
    subprocess.run(git + ["init", "-q"], cwd=task, check=True)
    subprocess.run(git + ["add", "-A"], cwd=task, check=True)
    subprocess.run(git + ["commit", "-qm", "base"], cwd=task, check=True)
    pack = open(os.path.join(ROOT, "rules", "python.yaml")).read()
    pack = pack.replace("version: 1\n", "version: 1\n"
                        "tools:\n  commands:\n    - {match: \"git push\", decision: deny}\n"
                        "    - {match: \"rm -*r*\", decision: ask}\n", 1)
    rules = os.path.join(root, "rules", "validator.yaml")
    os.makedirs(os.path.dirname(rules))
    with open(rules, "w") as f:
        f.write(pack.replace("state: .validator", f"state: {root}/state"))
    return task, rules


def inputs(task):
    def pre(tool, tool_input):
        return json.dumps({
            "session_id": "bench", "transcript_path": "/nonexistent", "cwd": task,
            "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": tool_input,
        }).encode()
    return [
        pre("Write", {"file_path": f"{task}/src/new.py", "content": "x = 1\n"}),
        pre("Write", {"file_path": f"{task}/.env", "content": "SECRET=1\n"}),
        pre("Bash", {"command": "cd src && echo 'x = 2' > m000/f00.py && git diff --stat"}),
        pre("Bash", {"command": "python3 -m pytest -q"}),
    ]


HOSTILE_BYTES = 256 * 1024 - 64


def hostile(task):
    """The costliest lines an agent can send, each cut to fit the shell reader's 256 KiB."""
    def line(unit, tail="git push"):
        return unit * ((HOSTILE_BYTES - len(tail)) // len(unit)) + tail
    def pre(command):
        return json.dumps({
            "session_id": "bench-hostile", "transcript_path": "/nonexistent", "cwd": task,
            "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": command},
        }).encode()
    return [
        pre(line("echo hi > src/x.py; ")),
        pre(line("true || cp -r src src2; ")),
        pre(line("cat src/m000/f00.py | grep x; ")),
        pre(line("echo $(true) ")),
        pre(line("sh -c 'true; true; true'; ")),
        pre("".join(f"cp -r src c{n}; " for n in range(900)) + "git push"),
        pre(line(" > src/x", "").replace(" > src/x", "echo > src/x", 1)),
        pre("echo | tee" + " src/x" * ((HOSTILE_BYTES - 10) // 6)),
        pre("echo " + "a" * (HOSTILE_BYTES - 5)),
    ]


def call(cmd, stdin, cwd):
    started = time.perf_counter()
    done = subprocess.run(cmd, input=stdin, cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
    took = time.perf_counter() - started
    return took, done


def p95(samples):
    return statistics.quantiles(samples, n=20, method="inclusive")[-1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--validator", default=os.path.join(ROOT, "target", "release", "validator"))
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--hostile", action="store_true")
    args = parser.parse_args()
    if args.hostile:
        return hostile_main(args)
    with tempfile.TemporaryDirectory() as root:
        task, rules = project(root, args.files)
        env_cmd = [args.validator, "-c", rules, "hook", "claude"]
        calls = inputs(task)
        answers = []
        for stdin in calls:  # warm-up, and what each answers
            _, done = call(env_cmd, stdin, task)
            if done.returncode != 0:
                sys.exit(f"validator failed: {done.stderr.decode()}")
            answers.append(done.stdout.decode().strip() or "(nothing: allowed)")
        line = " ".join(shlex.quote(word) for word in env_cmd)
        series = {
            "validator hook claude (PreToolUse)": env_cmd,
            "`true` (the floor of any hook)": ["true"],
            "sh -c 'validator hook claude'": ["sh", "-c", line],
            "sh -c true": ["sh", "-c", "true"],
        }
        times = {name: [] for name in series}
        for n in range(args.calls):
            stdin = calls[n % len(calls)]
            for name, cmd in series.items():
                times[name].append(call(cmd, stdin, task)[0] * 1000)
        names = list(series)
        hook_p95, floor_p95 = p95(times[names[0]]), p95(times[names[1]])
        ratio = hook_p95 / floor_p95
        shell_ratio = p95(times[names[2]]) / p95(times[names[3]])
        met = hook_p95 <= 20 and ratio <= 2
        print(f"pre-tool decision, {args.calls} calls over a {args.files}-file repository "
              f"(python pack + tools:), alternating with `true`:")
        print("| | p50 | p95 |")
        print("|---|---|---|")
        for name in names:
            print(f"| {name} | {statistics.median(times[name]):.1f} ms | {p95(times[name]):.1f} ms |")
        print(f"p95 ratio {ratio:.2f}x direct, {shell_ratio:.2f}x through `sh -c`; "
              f"target p95 <= 20 ms and <= 2x the floor: {'met' if met else 'MISSED'}")
        for stdin, answer in zip(calls, answers):
            tool = json.loads(stdin)["tool_name"]
            print(f"  {tool}: {answer[:140]}")
        sys.exit(0 if met else 1)


def hostile_main(args):
    with tempfile.TemporaryDirectory() as root:
        task, rules = project(root, args.files)
        hook = [args.validator, "-c", rules, "hook", "claude"]
        calls = hostile(task)
        times = {n: [] for n in range(len(calls))}
        floor = []
        answers = []
        for stdin in calls:
            _, done = call(hook, stdin, task)
            answers.append(json.loads(done.stdout or b"{}").get("hookSpecificOutput", {})
                           .get("permissionDecision", "allow"))
        for _ in range(args.calls):
            for n, stdin in enumerate(calls):
                times[n].append(call(hook, stdin, task)[0] * 1000)
                floor.append(call(["true"], stdin, task)[0] * 1000)
        slowest = max(max(t) for t in times.values())
        print(f"pre-tool decision on {len(calls)} hostile 256 KiB lines, {args.calls} calls each, "
              f"alternating with `true` (p95 {p95(floor):.1f} ms):")
        print("| line | answer | p50 | p95 | slowest | p95 / `true` |")
        print("|---|---|---|---|---|---|")
        for n, stdin in enumerate(calls):
            command = json.loads(stdin)["tool_input"]["command"]
            shown = command[:24].replace("|", "\\|") + "…"
            print(f"| `{shown}` | {answers[n]} | {statistics.median(times[n]):.1f} ms | "
                  f"{p95(times[n]):.1f} ms | {max(times[n]):.1f} ms | {p95(times[n]) / p95(floor):.1f}x |")
        met = slowest < 100 and "allow" not in answers[:6]
        print(f"slowest {slowest:.1f} ms; target every answer under 100 ms, none of the "
              f"`git push` lines allowed: {'met' if met else 'MISSED'}")
        sys.exit(0 if met else 1)


if __name__ == "__main__":
    main()
