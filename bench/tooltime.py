#!/usr/bin/env python3
"""What a pre-tool decision costs an agent: `validator hook claude` answering a PreToolUse, timed
as an agent's hook runner sees it (spawn, stdin, wait for exit), against the floor of any hook,
`true` spawned the same way with the same stdin. Alternated call by call, so both see the same
machine. A hook written as a command line may be run through a shell by the agent, so the same
pair is also timed as `sh -c '<command>'`, where both pay for the shell; the target is judged on
the direct pair.

    python3 bench/tooltime.py [--validator target/release/validator] [--calls 300]

The project is a git repository of --files files with the python starter pack's rules and a
`tools:` section; the calls are the four kinds a session makes most: a write in scope, a write
out of scope (refused), a shell command whose write is seen, and one that is not. Target
(issue 28): p95 <= 20 ms and <= 2x the floor's p95. Exits 1 if missed. Standard library only.
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


def call(cmd, stdin, cwd):
    started = time.perf_counter()
    done = subprocess.run(cmd, input=stdin, cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
    took = time.perf_counter() - started
    return took, done


def p95(samples):
    return statistics.quantiles(samples, n=20)[-1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--validator", default=os.path.join(ROOT, "target", "release", "validator"))
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--files", type=int, default=2000)
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()
