#!/usr/bin/env python3
"""The held-out round: real tools' captured output (captures/) scored through the real
`validator` binary against the truth written for each (truth/).

    python3 bench/heldout/run.py            # score the captures, print the table
    python3 bench/heldout/run.py --capture  # rerun the tools (installed as RESULTS.md says)
    python3 bench/heldout/run.py -v         # and each case's misses and inventions

Not part of `cargo test`: the captures are held out, never the reader's regression corpus.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
from cases import LINT, TEST  # noqa: E402

FX = Path("/tmp/hr-fx")
BIN = Path(os.environ.get("VALIDATOR_BIN", ROOT / "target/debug/validator"))


def capture():
    (HERE / "captures").mkdir(exist_ok=True)
    shutil.rmtree(FX, ignore_errors=True)
    for case, fixture, _, command in LINT + TEST:
        where = FX / fixture
        if not where.exists():
            shutil.copytree(HERE / "fixtures" / fixture, where)
            if (where / "build.sh").exists():
                subprocess.run(["sh", "build.sh"], cwd=where, check=True)
            if fixture == "test/js":
                (where / "node_modules").symlink_to("/tmp/h-read-npm/node_modules")
        env = {
            "PATH": os.environ["PATH"],
            "HOME": "/tmp/hr-home",
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "NO_COLOR": "1",
            "PYENV_VERSION": os.environ.get("PYENV_VERSION", ""),
        }
        done = subprocess.run(
            ["bash", "-c", command], cwd=where, env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120,
        )
        (HERE / "captures" / f"{case}.txt").write_bytes(done.stdout)
        print(f"{case}: exit {done.returncode}, {len(done.stdout)} bytes")


RULES = """version: 1
pipelines:
  - name: heldout
    gates:
      - name: gate
        rule: {rule}
        run: ["sh", "-c", "cat .hr-capture; exit 1"]
"""


def verdict(case, fixture, rule):
    """The gate's JSON as `validator check` answers over the fixture and the capture."""
    with tempfile.TemporaryDirectory() as tmp:
        task = Path(tmp) / "task"
        shutil.copytree(HERE / "fixtures" / fixture, task)
        text = (HERE / "captures" / f"{case}.txt").read_text(errors="replace")
        # The tool saw the fixture at /tmp/hr-fx/<fixture>: so does the task, here.
        text = text.replace(str(FX / fixture), str(task))
        (task / ".hr-capture").write_text(text)
        rules = Path(tmp) / "rules.yaml"
        rules.write_text(RULES.format(rule=rule))
        out = subprocess.run(
            [str(BIN), "check", "-c", str(rules), "--task-dir", str(task), "--format", "json",
             "--color", "never"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )
        gate = json.loads(out.stdout)["gates"][0]
        return gate


def norm(name):
    return " ".join(name.split())


def score_lint(case, fixture):
    truth = {(f, l) for f, l in json.loads((HERE / "truth" / f"{case}.json").read_text())["findings"]}
    gate = verdict(case, fixture, "lint")
    got = {(f.get("file"), f.get("line")) for f in gate.get("findings") or []}
    return truth, got, gate


def score_test(case, fixture):
    truth = json.loads((HERE / "truth" / f"{case}.json").read_text())["failed"]
    gate = verdict(case, fixture, "test")
    names = [norm(n) for n in gate.get("failed_tests") or []]
    found, invented = 0, []
    taken = set()
    for name in names:
        hit = next((i for i, spellings in enumerate(truth)
                    if i not in taken and name in {norm(s) for s in spellings}), None)
        if hit is None:
            invented.append(name)
        else:
            taken.add(hit)
    return len(truth), len(taken), invented, gate


def main():
    if "--capture" in sys.argv:
        capture()
        return
    verbose = "-v" in sys.argv
    rows = {}
    for case, fixture, fmt, _ in LINT:
        if not (HERE / "truth" / f"{case}.json").exists():
            continue
        truth, got, gate = score_lint(case, fixture)
        row = rows.setdefault(("findings", fmt), [0, 0, 0, 0])
        row[0] += len(truth)
        row[1] += len(truth & got)
        row[2] += len(got - truth)
        row[3] += 1
        if verbose:
            print(f"{case}: {len(truth & got)}/{len(truth)} invented {sorted(got - truth, key=str)}"
                  f" missed {sorted(truth - got)} | {gate.get('summary')}")
    for case, fixture, fmt, _ in TEST:
        if not (HERE / "truth" / f"{case}.json").exists():
            continue
        total, found, invented, gate = score_test(case, fixture)
        row = rows.setdefault(("names", fmt), [0, 0, 0, 0])
        row[0] += total
        row[1] += found
        row[2] += len(invented)
        row[3] += 1
        if verbose:
            print(f"{case}: {found}/{total} invented {invented} | {gate.get('summary')}")
    print("| what | output | cases | true | read | % | invented |")
    print("|---|---|---|---|---|---|---|")
    for (what, fmt), (total, found, invented, cases) in sorted(rows.items()):
        pct = 100 * found / total if total else 0
        print(f"| {what} | {fmt} | {cases} | {total} | {found} | {pct:.0f}% | {invented} |")


if __name__ == "__main__":
    main()
