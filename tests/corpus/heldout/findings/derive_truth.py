#!/usr/bin/env python3
"""Derive every <dir>/truth.json of the held-out findings corpus.

Adapted (copied, not imported) from ../../findings/derive_truth.py: same truth
conventions, but the project root is /tmp/heldout/<fixture> (meta.json
"fixture") and each directory has its own JSON source, written by capture.sh
to $JSONDIR/<dir>.json (default /tmp/heldout-json).  Tools without JSON
(flake8, tsc, yamllint) use strict per-tool patterns on output.txt.

Run: python3 derive_truth.py [--check]
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
JSONDIR = os.environ.get("JSONDIR", "/tmp/heldout-json")
VC = "/tmp/heldout"
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|\x1b\(B")


def meta(d):
    with open(os.path.join(HERE, d, "meta.json")) as f:
        return json.load(f)


def rel(path, fixture):
    if path.startswith("file://"):
        path = path[len("file://"):]
    root = f"{VC}/{fixture}/"
    if path.startswith(root):
        path = path[len(root):]
    while path.startswith("./"):
        path = path[2:]
    return path


def F(file, line, column, severity, rule):
    return {"file": file, "line": line, "column": column,
            "severity": severity, "rule": rule}


def load(name):
    with open(os.path.join(JSONDIR, name + ".json")) as f:
        return f.read()


def jlines(text):
    return [json.loads(ln) for ln in (x.strip() for x in text.splitlines())
            if ln.startswith("{")]


def output(d):
    with open(os.path.join(HERE, d, "output.txt"), encoding="utf-8") as f:
        return f.read()


def ruff(src, fx, col=True, sev=None):
    return [F(rel(x["filename"], fx), x["location"]["row"],
              x["location"]["column"] if col else None, sev, x["code"])
            for x in json.loads(load(src))]


def mypy(src, fx, col):
    return [F(x["file"], x["line"], x["column"] + 1 if col else None, x["severity"],
              x["code"] if x["severity"] == "error" else None)
            for x in jlines(load(src))]


def pyright(src, fx):
    d = json.loads(load(src))
    return [F(rel(x["file"], fx), x["range"]["start"]["line"] + 1,
              x["range"]["start"]["character"] + 1, x["severity"], x.get("rule"))
            for x in d["generalDiagnostics"]]


def pylint(src, fx, col):
    return [F(x["path"], x["line"], x["column"] if col else None, x["type"],
              x["message-id"]) for x in json.loads(load(src))]


def eslint(src, fx):
    out = []
    for f in json.loads(load(src)):
        for m in f["messages"]:
            out.append(F(rel(f["filePath"], fx), m["line"], m["column"],
                         {1: "warning", 2: "error"}[m["severity"]], m["ruleId"]))
    return out


def biome(src, fx):
    out = []
    for x in json.loads(load(src))["diagnostics"]:
        loc = x["location"]
        out.append(F(rel(loc["path"], fx), loc["start"]["line"] or None,
                     loc["start"]["column"] or None, x["severity"], x["category"]))
    return out


def biome_shown(d, src, fx):
    """biome prints at most --max-diagnostics (default 20) diagnostics: the
    truth is the JSON diagnostics whose header block appears in THIS output."""
    allf = biome(src, fx)
    shown = []
    for ln in ANSI.sub("", output(d)).splitlines():
        m = re.match(r"^(\S+?):(\d+):(\d+) (lint/\S+)", ln)
        if m:
            k = (m[1], int(m[2]), int(m[3]), m[4])
            hit = [x for x in allf if (x["file"], x["line"], x["column"], x["rule"]) == k]
            if not hit:
                raise SystemExit(f"{d}: header not in JSON: {ln}")
            shown.append(hit[0])
    return shown


def cargo(src, fx, rule=True):
    out = []
    for x in jlines(load(src)):
        if x.get("reason") != "compiler-message":
            continue
        m = x["message"]
        prim = [s for s in m["spans"] if s["is_primary"]]
        if not prim:
            continue
        s = prim[0]
        code = (m.get("code") or {}).get("code") if rule else None
        out.append(F(s["file_name"], s["line_start"], s["column_start"], m["level"], code))
    return out


def shellcheck(src, fx, sevmap=None):
    return [F(c["file"], c["line"], c["column"],
              sevmap[c["level"]] if sevmap else c["level"], f"SC{c['code']}")
            for c in json.loads(load(src))["comments"]]


def hadolint(src, fx, col=False):
    return [F(x["file"], x["line"], x["column"] if col else None, x["level"], x["code"])
            for x in json.loads(load(src))]


def markdownlint(src, fx):
    out = []
    for x in json.loads(load(src)):
        col = x["errorRange"][0] if x["errorRange"] else None
        out.append(F(x["fileName"], x["lineNumber"], col, x["severity"], x["ruleNames"][0]))
    return out


def rx(d, pattern, conv):
    return [conv(m) for m in (re.match(pattern, ln)
                              for ln in ANSI.sub("", output(d)).splitlines()) if m]


def flake8(d, fx):
    return rx(d, r"^(\S+?):(\d+):(\d+): ([A-Z]+\d+) ",
              lambda m: F(rel(m[1], fx), int(m[2]), int(m[3]), None, m[4]))


def tsc(d, fx):
    pat = r"^(\S+?)(?:\((\d+),(\d+)\)|:(\d+):(\d+)) ?:? ?-? ?(error|warning) (TS\d+):"
    return rx(d, pat, lambda m: F(m[1], int(m[2] or m[4]), int(m[3] or m[5]), m[6], m[7]))


def yamllint(d, fx):
    src = d.replace("yamllint-standard-", "yamllint-parsable-")
    return rx(src, r"^(\S+?):(\d+):(\d+): \[(\w+)\] .* \(([\w-]+)\)$",
              lambda m: F(rel(m[1], fx), int(m[2]), int(m[3]), m[4], m[5]))


def github(d, fx):
    out = []
    for ln in output(d).splitlines():
        m = re.match(r"^::(error|warning|notice) (.*?)::", ln)
        if not m:
            continue
        props = dict(p.split("=", 1) for p in m[2].split(","))
        title = props.get("title", "")
        rm = re.match(r"ruff \((\w+)\)$", title)
        rule = rm[1] if rm else (title or None)
        out.append(F(rel(props["file"], fx), int(props["line"]),
                     int(props["col"]) if "col" in props else None, m[1], rule))
    return out


def same_findings(a, b, what):
    key = lambda f: (f["file"], f["line"], f["column"], f["rule"])
    if sorted(map(key, a), key=str) != sorted(map(key, b), key=str):
        raise SystemExit(f"{what}: structured output disagrees with JSON source")


def with_cross(d, fx, structured, reference):
    s = structured(d, fx)
    same_findings(s, reference, d)
    return s


def staticcheck(src, fx):
    return [F(rel(x["location"]["file"], fx), x["location"]["line"],
              x["location"]["column"], None, x["code"]) for x in jlines(load(src))]


def go_vet(d, fx):
    return rx(d, r"^(\S+\.go):(\d+):(\d+): ",
              lambda m: F(rel(m[1], fx), int(m[2]), int(m[3]), None, None))


def gofmt(d, fx):
    return rx(d, r"^(\S+\.go)$", lambda m: F(m[1], None, None, None, None))


def actionlint(src, fx):
    return [F(x["filepath"], x["line"], x["column"], None, x["kind"])
            for x in json.loads(load(src))]


GCC = {"error": "error", "warning": "warning", "info": "note", "style": "note"}
S = "ruff-full-six"
TRUTH = {
    "ruff-full-six": lambda d, fx: ruff(S, fx),
    "ruff-concise-six": lambda d, fx: ruff(S, fx),
    "flake8-default-six": flake8,
    "pylint-text-six": lambda d, fx: pylint("pylint-text-six", fx, col=True),
    "pylint-parseable-six": lambda d, fx: pylint("pylint-text-six", fx, col=False),
    "mypy-default-six": lambda d, fx: mypy("mypy-default-six", fx, col=False),
    "mypy-columns-six": lambda d, fx: mypy("mypy-default-six", fx, col=True),
    "pyright-default-six": lambda d, fx: pyright("pyright-default-six", fx),
    "eslint-stylish-node-semver": lambda d, fx: eslint("eslint-stylish-node-semver", fx),
    "biome-lint-node-semver": lambda d, fx: biome_shown(d, "biome-lint-node-semver", fx),
    "biome-lint-maxdiag-node-semver": lambda d, fx: biome("biome-lint-node-semver", fx),
    "tsc-checkjs-node-semver": tsc,
    "eslint-unix-node-semver": lambda d, fx: eslint("eslint-stylish-node-semver", fx),
    "biome-github-node-semver": lambda d, fx: with_cross(d, fx, github, biome("biome-lint-node-semver", fx)),
    "go-vet-go-difflib": go_vet,
    "staticcheck-text-go-difflib": lambda d, fx: staticcheck("staticcheck-text-go-difflib", fx),
    "gofmt-list-go-difflib": gofmt,
    "shellcheck-gcc-zerocopy": lambda d, fx: shellcheck("shellcheck-tty-zerocopy", fx, GCC),
    "clippy-human-smallvec": lambda d, fx: cargo("clippy-human-smallvec", fx),
    "clippy-json-smallvec": lambda d, fx: cargo("clippy-human-smallvec", fx),
    "clippy-short-smallvec": lambda d, fx: cargo("clippy-human-smallvec", fx, rule=False),
    "shellcheck-tty-debian-bin": lambda d, fx: shellcheck("shellcheck-tty-debian-bin", fx),
    "shellcheck-gcc-debian-bin": lambda d, fx: shellcheck("shellcheck-tty-debian-bin", fx, GCC),
    "shellcheck-tty-zerocopy": lambda d, fx: shellcheck("shellcheck-tty-zerocopy", fx),
    "hadolint-tty-golang-crypto": lambda d, fx: hadolint("hadolint-tty-golang-crypto", fx),
    "hadolint-gnu-golang-crypto": lambda d, fx: hadolint("hadolint-tty-golang-crypto", fx),
    "actionlint-default-itertools": lambda d, fx: actionlint("actionlint-default-itertools", fx),
    "yamllint-standard-itertools": yamllint,
    "yamllint-parsable-itertools": yamllint,
    "markdownlint-default-slugify": lambda d, fx: markdownlint("markdownlint-default-slugify", fx),
    "markdownlint-cli2-default-slugify": lambda d, fx: markdownlint("markdownlint-default-slugify", fx),
}


def main():
    check = "--check" in sys.argv
    bad = 0
    for d, fn in TRUTH.items():
        if not os.path.isdir(os.path.join(HERE, d)):
            print(f"missing dir {d}", file=sys.stderr)
            continue
        truth = fn(d, meta(d)["fixture"])
        path = os.path.join(HERE, d, "truth.json")
        text = json.dumps(truth, indent=1) + "\n"
        if check:
            old = open(path).read() if os.path.exists(path) else ""
            if old != text:
                print(f"DIFFERS {d}")
                bad += 1
        else:
            with open(path, "w") as f:
                f.write(text)
        print(f"{d}: {len(truth)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
