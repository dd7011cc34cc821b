#!/usr/bin/env python3
"""How validator's cost grows with the size of what it judges: the growth exponent of each gate
kind and of the watcher's start-up recovery, so a regression to worse than linear shows.

    python3 bench/scaling.py [--validator target/release/validator] [--sizes 2000,20000,100000]

For each gate kind, a task of N files is made under a temporary directory and judged with
`validator check` (the median of --runs runs, after one warm-up); the exponent k of time ~ N^k
is fitted by least squares over log(time) against log(N). The watcher's recovery is N pending
done files at start, timed until every verdict is written. Exponents near 1 are linear; the
script exits 1 if any passes --limit (default 1.3). Only the standard library is used.
"""

import argparse
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

GATES = {
    "exists": '{name: g, rule: exists, paths: ["**/*.json"]}',
    "schema": '{name: g, rule: schema, schema: schema.json, files: ["**/*.json"]}',
    "content": "{name: g, rule: content, files: [\"**/*.json\"], ban: [{pattern: 'NEVER'}]}",
    "file-scope": '{name: g, rule: file-scope, deny: ["**/*.pem"]}',
    "lint files:": '{name: g, rule: lint, run: ["true"], files: ["**/*.json"]}',
}
SCHEMA = '{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}'


def make_task(root, n):
    task = os.path.join(root, "task")
    per_dir = 200
    for i in range(n):
        d = os.path.join(task, f"d{i // per_dir:05}")
        if i % per_dir == 0:
            os.makedirs(d)
        with open(os.path.join(d, f"f{i % per_dir:03}.json"), "w") as f:
            f.write('{"a": 1}')
    return task


def rules(root, gate):
    path = os.path.join(root, "validator.yaml")
    with open(os.path.join(root, "schema.json"), "w") as f:
        f.write(SCHEMA)
    with open(path, "w") as f:
        f.write(
            "version: 1\nstate: state\nverdicts: verdicts\nstaging: staging\n"
            "defaults: {timeout: 10m, budget: 30m}\n"
            f"pipelines:\n  - name: main\n    gates:\n      - {gate}\n"
        )
    return path


def timed(cmd, runs):
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        times.append(time.perf_counter() - start)
        if done.returncode not in (0, 1):
            sys.exit(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return statistics.median(times)


def recovery(validator, root, n):
    """N done files waiting when the watcher starts: seconds until every verdict is written."""
    staging = os.path.join(root, "staging")
    verdicts = os.path.join(root, "verdicts")
    os.makedirs(staging)
    for i in range(n):
        os.makedirs(os.path.join(staging, f"t{i:06}"))
        with open(os.path.join(staging, f"t{i:06}.done"), "w") as f:
            f.write("STATUS: OK\n")
    config = rules(root, "{name: g, rule: status}")
    start = time.perf_counter()
    watcher = subprocess.Popen(
        [validator, "-c", config, "watch"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        while True:
            done = 0
            if os.path.isdir(verdicts):
                done = sum(1 for name in os.listdir(verdicts) if name.endswith(".verdict.json"))
            if done >= n:
                return time.perf_counter() - start
            if time.perf_counter() - start > 600:
                sys.exit(f"recovery of {n} signals did not finish in 10 minutes ({done} done)")
            time.sleep(0.02)
    finally:
        watcher.terminate()
        watcher.wait()


def exponent(points):
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(t) for _, t in points]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--validator", default="target/release/validator")
    parser.add_argument("--sizes", default="2000,20000,100000")
    parser.add_argument("--recovery-sizes", default="100,400,1600")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--limit", type=float, default=1.3)
    args = parser.parse_args()
    validator = os.path.abspath(args.validator)
    sizes = [int(s) for s in args.sizes.split(",")]
    worst = 0.0
    print(f"{'gate':<14} " + " ".join(f"{n:>10}" for n in sizes) + "   exponent")
    for kind, gate in GATES.items():
        points = []
        for n in sizes:
            root = tempfile.mkdtemp(prefix="validator-scaling-")
            try:
                task = make_task(root, n)
                config = rules(root, gate)
                seconds = timed(
                    [validator, "check", "-c", config, "--task-dir", task, "--quiet", "--no-cache"],
                    args.runs,
                )
                points.append((n, seconds))
            finally:
                shutil.rmtree(root)
        k = exponent(points)
        worst = max(worst, k)
        row = " ".join(f"{t * 1000:>8.1f}ms" for _, t in points)
        print(f"{kind:<14} {row}   {k:.2f}")
    points = []
    recovery_sizes = [int(s) for s in args.recovery_sizes.split(",")]
    for n in recovery_sizes:
        root = tempfile.mkdtemp(prefix="validator-scaling-")
        try:
            points.append((n, recovery(validator, root, n)))
        finally:
            shutil.rmtree(root)
    k = exponent(points)
    worst = max(worst, k)
    row = " ".join(f"{t * 1000:>8.0f}ms" for _, t in points)
    print(f"{'watch recovery':<14} {row}   {k:.2f}   (signals: {args.recovery_sizes})")
    print(f"worst exponent {worst:.2f} (limit {args.limit})")
    return 1 if worst > args.limit else 0


if __name__ == "__main__":
    sys.exit(main())
