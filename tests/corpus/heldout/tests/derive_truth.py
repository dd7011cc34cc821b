#!/usr/bin/env python3
"""Derive <dir>/truth.json of the held-out test-runner corpus.

Canonical names follow ../../tests/README.md.  Sources:
  pytest   the JUnit XML of the same project's --junitxml run (classname is
           mapped back to the file by looking for <cwd>/<dotted prefix>.py),
           cross-checked with the FAILED/ERROR/SUBFAILED summary lines of
           every output of that project;
  unittest the FAIL:/ERROR: headers (one name per test, subTests merged);
  cargo    the `test <name> ... FAILED` lines;
  go       "Action":"fail" events with a Test of `go test -json`, cross-checked
           with the `--- FAIL:` lines of the other go outputs;
  tape     the `# <test name>` comment preceding each `not ok` assertion.
Outcome: exit 0 -> passed; COULD_NOT_RUN below -> could_not_run; else failed.
Run: python3 derive_truth.py [--check]   (needs the projects under /tmp/heldout)
"""
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

COULD_NOT_RUN = {
    "pytest-missing-module-itsdangerous":
        "ModuleNotFoundError: No module named 'itsdangerous.url_safe' (collecting "
        "tests/test_itsdangerous/test_encoding.py and test_url_safe.py)",
    "unittest-import-error-slugify":
        "ModuleNotFoundError: No module named 'slugify.special' (every test module fails to import)",
    "cargo-test-compile-error-semver":
        "error[E0609]: no field `prerelease` on type `&Comparator` (src/eval.rs:131)",
    "mocha-missing-module-object-schema":
        "Error: Cannot find module './merge-strategy' (Exception during run)",
    "jest-could-not-run-gensync":
        'jest 30 refuses the suite: Returning a Promise from "describe" is not supported (test/index.test.js:203)',
    "go-test-compile-error-go-difflib":
        "difflib/difflib.go:470:48: m.c undefined [build failed]",
}
PYTEST_JUNIT = {"itsdangerous": "pytest-junitxml-itsdangerous", "slugify": "pytest-junitxml-slugify"}


def meta(d):
    return json.load(open(os.path.join(HERE, d, "meta.json")))


def text(d):
    return ANSI.sub("", open(os.path.join(HERE, d, "output.txt"), encoding="utf-8").read())


def uniq(xs):
    out = []
    for x in xs:
        if x not in out:
            out.append(x)
    return out


def pytest_nodeid(cwd, classname, name):
    parts = classname.split(".")
    for i in range(len(parts), 0, -1):
        path = "/".join(parts[:i]) + ".py"
        if os.path.isfile(os.path.join(cwd, path)):
            return "::".join([path] + parts[i:] + [name])
    raise SystemExit(f"no file for {classname}")


def pytest_junit(d):
    cwd = meta(d)["cwd"]
    root = ET.parse(os.path.join(HERE, d, "junit.xml")).getroot()
    return uniq(pytest_nodeid(cwd, tc.get("classname"), tc.get("name"))
                for tc in root.iter("testcase")
                if any(c.tag in ("failure", "error") for c in tc))


def pytest_summary(d):
    return uniq(m[2] for m in re.finditer(
        r"^(FAILED|ERROR|SUBFAILED\(.*?\)) (\S+?)(?: - .*)?$", text(d), re.M))


def pytest(d):
    proj = d.split("-")[-1]
    truth = pytest_junit(PYTEST_JUNIT[proj])
    summ = pytest_summary(d)
    if sorted(summ) != sorted(truth):
        raise SystemExit(f"{d}: summary {summ} != junit {truth}")
    return truth


def unittest(d):
    return uniq(m[1] for m in re.finditer(r"^(?:FAIL|ERROR): \S+ \((\S+)\)", text(d), re.M))


def cargo(d):
    t = text(d)
    # `test x ... FAILED` (default) or `x --- FAILED` (--quiet)
    live = uniq(re.findall(r"^(?:test (\S+) \.\.\. FAILED|(\S+) --- FAILED)$", t, re.M))
    live = uniq(a or b for a, b in live)
    # the `failures:` name list printed at the end of each failing binary
    listed = uniq(n for blk in re.findall(r"^failures:\n((?:    \S+\n)+)", t, re.M)
                  for n in blk.split())
    if sorted(live) != sorted(listed):
        raise SystemExit(f"{d}: {live} != {listed}")
    return live


def go_json(d):
    ev = [json.loads(l) for l in text(d).splitlines() if l.startswith("{")]
    return uniq(e["Test"] for e in ev if e.get("Action") == "fail" and e.get("Test"))


def go_text(d):
    return uniq(re.findall(r"^\s*--- FAIL: (\S+)", text(d), re.M))


def tape(d):
    cur, out = None, []
    for ln in text(d).splitlines():
        if ln.startswith("# ") and not re.match(r"# (tests|pass|fail|ok)\b", ln):
            cur = ln[2:]
        elif ln.startswith("not ok "):
            out.append(cur)
    return uniq(out)


JSONDIR = os.environ.get("JSONDIR", "/tmp/heldout-json")


def mocha(d):
    # titlePath() of each failed test, from a tiny reporter run on the same code
    # (/tmp/heldout/dl/titlepath-reporter.js), checked against the xunit report
    ev = [json.loads(l) for l in open(os.path.join(JSONDIR, "mocha-object-schema.jsonl"))]
    out = uniq(" > ".join(e["titlePath"]) for e in ev)
    root = ET.parse(os.path.join(HERE, "mocha-xunit-object-schema", "junit.xml")).getroot()
    xu = sorted((tc.get("classname") + " " + tc.get("name")) for tc in root.iter("testcase")
                if any(c.tag in ("failure", "error") for c in tc))
    if xu != sorted(" ".join(e["titlePath"]) for e in ev):
        raise SystemExit(f"{d}: xunit {xu} disagrees")
    return out


def jest(d):
    doc = json.load(open(os.path.join(JSONDIR, "jest-gensync.json")))
    return uniq(" > ".join(a["ancestorTitles"] + [a["title"]])
                for f in doc["testResults"] for a in f["assertionResults"]
                if a["status"] == "failed")


def names(d):
    if d.startswith("mocha-"):
        return mocha(d)
    if d.startswith("jest-"):
        return jest(d)
    if d.startswith("pytest-"):
        return pytest(d)
    if d.startswith("unittest-"):
        return unittest(d)
    if d.startswith("cargo-test-"):
        return cargo(d)
    if d.startswith("go-test-json"):
        return go_json(d)
    if d.startswith("go-test-"):
        t = go_text(d)
        j = go_json("go-test-json-go-difflib")
        if t and sorted(t) != sorted(j):
            raise SystemExit(f"{d}: {t} != json {j}")
        return t
    if d.startswith("tape-"):
        return tape(d)
    raise SystemExit(d)


def main():
    check = "--check" in sys.argv
    bad = 0
    for d in sorted(os.listdir(HERE)):
        if not os.path.isfile(os.path.join(HERE, d, "meta.json")):
            continue
        rc = meta(d)["exit_code"]
        if d in COULD_NOT_RUN:
            truth = {"outcome": "could_not_run", "failed": [], "cause": COULD_NOT_RUN[d]}
        elif rc == 0:
            truth = {"outcome": "passed", "failed": []}
        else:
            truth = {"outcome": "failed", "failed": names(d)}
        path = os.path.join(HERE, d, "truth.json")
        new = json.dumps(truth, indent=2, ensure_ascii=False) + "\n"
        if check:
            if not os.path.exists(path) or open(path).read() != new:
                print(f"DIFFERS {d}")
                bad += 1
        else:
            open(path, "w").write(new)
        print(f"{d}: {truth['outcome']} {len(truth['failed'])}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
