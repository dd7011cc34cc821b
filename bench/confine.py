#!/usr/bin/env python3
"""What confinement costs: a shell call run as the pre-tool hook rewrites it (`validator exec
… -- /bin/bash -c CMD`) against the same `/bin/bash -c CMD` unconfined, and an agent started
under `validator run -- AGENT` against the agent started alone. Alternated run by run, so both
see the same machine; the command is `true`, so what is timed is what confinement adds.

    python3 bench/confine.py [--validator target/release/validator] [--runs 200]

The project is a git repository with the python starter pack's scope (`allow`, `readonly`,
`deny` inside the allowed tree), validator's state inside it, so the plan binds paths read-only
in a mount namespace as well as entering Landlock. Targets (issue 41): a confined call at most
5 ms more than unconfined at p95; `validator run` at most 50 ms added to an agent's start.
Exits 1 if one is missed, 2 if this machine cannot confine. Standard library only.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

RULES = """version: 1
state: proj/.validator
pipelines:
  - name: main
    gates:
      - name: scope
        rule: file-scope
        allow: ["src/**", "tests/**"]
        readonly: ["src/locked.py"]
        deny: ["src/**/*.pem"]
"""


def timed(argv, cwd):
    started = time.perf_counter()
    subprocess.run(argv, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - started) * 1000


def p95(samples):
    return statistics.quantiles(samples, n=20)[18]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--validator", default="target/release/validator")
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    exe = os.path.abspath(args.validator)
    with tempfile.TemporaryDirectory() as root:
        task = os.path.join(root, "proj")
        for rel in ["src/app.py", "src/locked.py", "src/keys/a.pem", "tests/test_app.py", ".validator/x"]:
            path = os.path.join(task, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write("x\n")
        subprocess.run(["git", "init", "-q", task], check=True)
        rules = os.path.join(root, "validator.yaml")
        with open(rules, "w") as f:
            f.write(RULES)
        confined = [exe, "exec", "-c", rules, "--task-dir", task, "--task", "proj",
                    "--pipeline", "main", "--", "/bin/bash", "-c", "true"]
        check = subprocess.run(confined[:-3] + ["/bin/sh", "-c", "echo x > outside.txt"], cwd=task,
                               capture_output=True, text=True)
        if os.path.exists(os.path.join(task, "outside.txt")) or check.returncode == 126:
            print("this machine does not confine:", check.stderr.strip())
            return 2
        plain = ["/bin/bash", "-c", "true"]
        run = [exe, "run", "-c", rules, "--task-dir", task, "--task", "proj", "--", "/bin/true"]
        alone = ["/bin/true"]
        rows = {"unconfined": [], "confined": [], "agent alone": [], "agent under run": []}
        for _ in range(10):  # warm the page cache
            timed(confined, task)
            timed(run, task)
        for _ in range(args.runs):
            rows["unconfined"].append(timed(plain, task))
            rows["confined"].append(timed(confined, task))
            rows["agent alone"].append(timed(alone, task))
            rows["agent under run"].append(timed(run, task))
        for name, samples in rows.items():
            print(f"{name:16} p50 {statistics.median(samples):6.2f} ms  p95 {p95(samples):6.2f} ms")
        call = p95(rows["confined"]) - p95(rows["unconfined"])
        start = p95(rows["agent under run"]) - p95(rows["agent alone"])
        print(f"confined call adds {call:.2f} ms at p95 (target <= 5 ms); "
              f"ratio {p95(rows['confined']) / p95(rows['unconfined']):.2f}x")
        print(f"validator run adds {start:.2f} ms to an agent's start at p95 (target <= 50 ms)")
        return 0 if call <= 5 and start <= 50 else 1


if __name__ == "__main__":
    sys.exit(main())
