"""Judges one `validator check --format json` run of tests/packs/run.sh against what the case
expects, with the standard library only.

    python3 verdict.py VERDICT_JSON EXIT_CODE EXPECT [--explain PROGRESS_TEXT]

EXPECT is `pass`, or `fail:test`, `fail:format`, `fail:lint`: the run must end FAIL (exit 1)
and its first failing gate must be of that class:

    test    a gate of rule `test`
    format  a gate of rule `lint` whose name says formatting (fmt, format, black, prettier)
    lint    a gate of rule `lint` whose name says linting (lint, vet, clippy, ruff, eslint, flake8)

That gate's outcome must be `fail` (a finding), not `error` (the tool could not run). Prints one
line: the verdict, the gate it failed at, and which gates ran and were skipped. Exits 0 when
the run is what the case expects, 1 when it is not (with why on the next lines), and with
--explain also prints, for a case that went wrong, the progress text validator wrote (its gate
lines and findings), the verdict's reasons, and each failing gate's output tail.
"""

import json
import re
import sys

FORMAT_GATE = re.compile(r"fmt|format|black|prettier", re.IGNORECASE)
LINT_GATE = re.compile(r"lint|vet|clippy|ruff|eslint|flake8", re.IGNORECASE)


def gate_class(gate):
    """The class of a gate, as EXPECT names it, or None."""
    rule = gate.get("rule", "")
    name = gate.get("name", "")
    if rule == "test":
        return "test"
    if rule == "lint":
        if FORMAT_GATE.search(name):
            return "format"
        if LINT_GATE.search(name):
            return "lint"
    return None


def describe(verdict):
    """`ran: a b c; skipped: d e` for the case line."""
    ran = [g["name"] for g in verdict.get("gates", []) if g.get("outcome") != "skipped"]
    skipped = [
        g["name"] for g in verdict.get("gates", []) if g.get("outcome") == "skipped"
    ]
    text = "ran: " + (" ".join(ran) or "none")
    if skipped:
        text += "; skipped: " + " ".join(skipped)
    return text


def judge(verdict, code, expect):
    """(summary, problems): what happened, and why it is not what `expect` wants."""
    gates = verdict.get("gates", [])
    failing = [g for g in gates if g.get("outcome") in ("fail", "error")]
    outcome = verdict.get("verdict", "?")
    if failing:
        first = failing[0]
        summary = f"{outcome} at {first['name']} ({first['outcome']}), exit {code}"
    else:
        summary = f"{outcome}, exit {code}"
    summary += f" [{describe(verdict)}]"

    problems = []
    if expect == "pass":
        if code != 0 or outcome != "PASS":
            problems.append(f"expected PASS (exit 0), got {outcome} (exit {code})")
        for g in failing:
            problems.append(f"gate {g['name']} {g['outcome']}: {g.get('summary', '')}")
        return summary, problems

    want = expect.split(":", 1)[1]
    if code != 1 or outcome != "FAIL":
        problems.append(
            f"expected FAIL (exit 1) at a {want} gate, got {outcome} (exit {code})"
        )
    if not failing:
        problems.append(f"no gate failed; expected a {want} gate to fail")
        return summary, problems
    first = failing[0]
    if gate_class(first) != want:
        problems.append(
            f"the first failing gate is {first['name']} (rule {first.get('rule')}), "
            f"not a {want} gate: {first.get('summary', '')}"
        )
    elif first.get("outcome") != "fail":
        problems.append(
            f"gate {first['name']} ended {first['outcome']} (it could not judge), not fail: "
            f"{first.get('summary', '')}"
        )
    return summary, problems


def explain(verdict, progress_path):
    """What validator said, for the log of a case that went wrong."""
    print("    --- validator's progress (stderr) ---")
    try:
        with open(progress_path, encoding="utf-8", errors="replace") as f:
            for line in f.read().splitlines():
                print("    " + line)
    except OSError as e:
        print(f"    (unreadable: {e})")
    reasons = verdict.get("reasons") or []
    if reasons:
        print("    --- verdict reasons ---")
        for r in reasons:
            print("    " + r)
    for w in verdict.get("warnings") or []:
        print("    warning: " + str(w))
    for g in verdict.get("gates", []):
        if g.get("outcome") not in ("fail", "error"):
            continue
        tail = (g.get("output_tail") or "").splitlines()[-40:]
        if tail:
            print(
                f"    --- gate {g['name']} ({g.get('rule')}) {g['outcome']}: its output's tail ---"
            )
            for line in tail:
                print("    " + line)


def main(argv):
    if len(argv) not in (4, 6) or (len(argv) == 6 and argv[4] != "--explain"):
        print(__doc__, file=sys.stderr)
        return 2
    path, code, expect = argv[1], int(argv[2]), argv[3]
    if expect not in ("pass", "fail:test", "fail:format", "fail:lint"):
        print(f"unknown expectation {expect!r}", file=sys.stderr)
        return 2
    try:
        with open(path, encoding="utf-8") as f:
            verdict = json.load(f)
    except (OSError, ValueError) as e:
        print(f"no verdict document (exit {code}): {e}")
        if len(argv) == 6:
            explain({}, argv[5])
        return 1
    summary, problems = judge(verdict, code, expect)
    print(summary)
    for p in problems:
        print("    " + p)
    if problems and len(argv) == 6:
        explain(verdict, argv[5])
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
