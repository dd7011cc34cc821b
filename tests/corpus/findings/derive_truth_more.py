#!/usr/bin/env python3
"""Derive truth.json for the second batch of this corpus (capture-more.sh).

Same conventions as derive_truth.py (see README.md): file relative to the
fixture root, line/column/severity/rule as THIS output shows them (null when
it does not), columns the tool's own numbers as printed.

Sources: the tool's JSON (or XML) output on the same fixture, written by
capture-more.sh to $JSONDIR, wherever the tool has one (bandit, ty, stylelint,
oxlint, htmlhint, cppcheck, rubocop, phpcs, sqlfluff, typos, zizmor); strict
per-tool patterns on output.txt for tools without one (pycodestyle, pyflakes,
pydocstyle, vulture, jshint, standard, cpplint, clang-tidy, luacheck, rstcheck,
doc8, codespell, cspell), each cross-checked by count against the output.

Run: python3 derive_truth_more.py [--check]   (--check: compare, do not write)
"""
import json
import os
import re
import sys
import urllib.parse
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
JSONDIR = os.environ.get("JSONDIR", "/tmp/vcorpus-json")
VC = "/tmp/vcorpus"
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


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


def output(d):
    with open(os.path.join(HERE, d, "output.txt"), encoding="utf-8") as f:
        return ANSI.sub("", f.read())


def matches(d, pattern):
    return [m for m in (re.match(pattern, ln) for ln in output(d).splitlines()) if m]


def exists(fixture, file):
    return os.path.isfile(os.path.join(HERE, "fixtures", fixture, file))


# ------------------------------------------------------------ patterns
def pycodestyle(d):
    return [F(rel(m[1], "pymore"), int(m[2]), int(m[3]), None, m[4])
            for m in matches(d, r"^(.+?):(\d+):(\d+): ([EWC]\d+) ")]


def pycodestyle_pylint(d):
    return [F(rel(m[1], "pymore"), int(m[2]), None, None, m[3])
            for m in matches(d, r"^(.+?):(\d+): \[([EWC]\d+)\] ")]


def pyflakes(d):
    return [F(rel(m[1], "pymore"), int(m[2]), int(m[3]), None, None)
            for m in matches(d, r"^(.+?\.py):(\d+):(\d+):? ")]


def pydocstyle(d):
    out, lines = [], output(d).splitlines()
    for i, ln in enumerate(lines):
        m = re.match(r"^(.+?\.py):(\d+) (in|at) ", ln)
        if m:
            code = re.match(r"^\s+(D\d+): ", lines[i + 1])[1]
            out.append(F(rel(m[1], "pymore"), int(m[2]), None, None, code))
    return out


def vulture(d):
    return [F(m[1], int(m[2]), None, None, None)
            for m in matches(d, r"^(.+?\.py):(\d+): .* \(\d+% confidence\)$")]


def bandit(d):
    data = json.loads(load("bandit"))["results"]
    out = []
    for r in data:
        file = rel(r["filename"], "pymore")
        sev = r["issue_severity"].lower()
        if d == "bandit-default":  # `Location: ./app.py:2:0`: col_offset as printed
            out.append(F(file, r["line_number"], r["col_offset"], sev, r["test_id"]))
        elif d == "bandit-custom":  # `{abspath}:{line}: {test_id}[bandit]: {severity}: {msg}`
            out.append(F(file, r["line_number"], None, sev, r["test_id"]))
    if d == "bandit-sarif":
        run = json.loads(output(d))["runs"][0]
        for r in run["results"]:
            loc = r["locations"][0]["physicalLocation"]
            uri = urllib.parse.unquote(loc["artifactLocation"]["uri"])
            # No `level`: SARIF's default, `warning` (bandit's rules declare none).
            out.append(F(rel(uri, "pymore"), loc["region"]["startLine"],
                         loc["region"].get("startColumn"), r.get("level", "warning"),
                         r["ruleId"]))
    return out


def ty(d):
    return [F(x["location"]["path"], x["location"]["positions"]["begin"]["line"],
              x["location"]["positions"]["begin"]["column"], "error", x["check_name"])
            for x in json.loads(load("ty"))]


def stylelint(d):
    out = []
    for f in json.loads(load("stylelint")):
        for w in f["warnings"]:
            out.append(F(rel(f["source"], "webproj"), w["line"], w["column"],
                         w["severity"], w["rule"]))
    return out


def oxlint(d):
    out = []
    for x in json.loads(load("oxlint"))["diagnostics"]:
        span = x["labels"][0]["span"]
        out.append(F(x["filename"], span["line"], span["column"], x["severity"], x["code"]))
    return out


def htmlhint(d):
    out = []
    for f in json.loads(load("htmlhint")):
        for m in f["messages"]:
            sev = m["type"] if d == "htmlhint-unix" else None
            # default: the column is the caret's (as shellcheck tty's truth is)
            out.append(F(rel(f["file"], "webproj"), m["line"], m["col"], sev, m["rule"]["id"]))
    return out


def jshint(d):
    if d == "jshint-checkstyle":
        root = ET.fromstring(output(d))
        return [F(f.get("name"), int(e.get("line")), int(e.get("column")),
                  e.get("severity"), e.get("source").split(".")[-1])
                for f in root.iter("file") for e in f.iter("error")]
    return [F(m[1], int(m[2]), int(m[3]), None, None)
            for m in matches(d, r"^(.+?\.js): line (\d+), col (\d+), ")]


def standard(d):
    return [F(rel(m[1], "webproj"), int(m[2]), int(m[3]),
              "warning" if m[5] else None, m[4])
            for m in matches(d, r"^  (.+?\.js):(\d+):(\d+): .* \(([\w@/-]+)\)( \(warning\))?$")]


def cppcheck(d):
    root = ET.fromstring(load("cppcheck" if d == "cppcheck-default" else "cppcheck-gcc"))
    out = []
    for e in root.iter("error"):
        loc = e.find("location")
        sev = e.get("severity") if d == "cppcheck-default" else "warning"
        out.append(F(loc.get("file"), int(loc.get("line")), int(loc.get("column")),
                     sev, e.get("id")))
    return out


def cpplint(d):
    if d == "cpplint-vs7":
        ms = matches(d, r"^(.+?)\((\d+)\): error cpplint: \[([\w/+-]+)\] ")
        sev, rule = "error", 3
    else:
        ms = matches(d, r"^(.+?):(\d+):  .*  \[([\w/+-]+)\] \[\d\]$")
        sev, rule = None, 3
    # line 0: the file as a whole (no copyright line): a finding without a line.
    return [F(m[1], int(m[2]) or None, None, sev, m[rule]) for m in ms]


def clang_tidy(d):
    return [F(rel(m[1], "cproj"), int(m[2]), int(m[3]), m[4], m[5])
            for m in matches(d, r"^(/.+?):(\d+):(\d+): (error|warning): .* \[([\w.,-]+)\]$")]


def luacheck(d):
    if d == "luacheck-plain":
        return [F(m[1], int(m[2]), int(m[3]), "warning" if m[4][0] == "W" else "error", m[4])
                for m in matches(d, r"^(.+?\.lua):(\d+):(\d+): \(([WE]\d+)\) ")]
    return [F(m[1], int(m[2]), int(m[3]), None, None)
            for m in matches(d, r"^    (.+?\.lua):(\d+):(\d+): ")]


def rubocop(d):
    out = []
    for f in json.loads(load("rubocop"))["files"]:
        for o in f["offenses"]:
            out.append(F(f["path"], o["location"]["line"], o["location"]["column"],
                         o["severity"], o["cop_name"]))
    return out


def phpcs(d):
    out = []
    for path, f in json.loads(load("phpcs"))["files"].items():
        for m in f["messages"]:
            col = None if d == "phpcs-full" else m["column"]
            rule = None if d == "phpcs-full" else m["source"]
            out.append(F(rel(path, "phpproj"), m["line"], col, m["type"].lower(), rule))
    return out


def sqlfluff(d):
    out = []
    for f in json.loads(load("sqlfluff")):
        for v in f["violations"]:
            sev = "warning" if d == "sqlfluff-github" else None
            out.append(F(f["filepath"], v["start_line_no"], v["start_line_pos"], sev, v["code"]))
    return out


def rstcheck(d):
    return [F(m[1], int(m[2]), None, m[3].lower(), None)
            for m in matches(d, r"^(.+?):(\d+): \((ERROR|WARNING|INFO|SEVERE)/\d\) ")]


def doc8(d):
    return [F(rel(m[1], "docproj"), int(m[2]), None, None, m[3])
            for m in matches(d, r"^(.+?):(\d+): (D\d+) ")]


def codespell(d):
    return [F(rel(m[1], "docproj"), int(m[2]), None, None, None)
            for m in matches(d, r"^(.+?):(\d+): .* ==> ")]


def typos(d):
    out = []
    for ln in load("typos").splitlines():
        x = json.loads(ln)
        if x.get("type") == "typo":
            out.append(F(rel(x["path"], "docproj"), x["line_num"], x["byte_offset"] + 1,
                         "error", None))
    return out


def cspell(d):
    return [F(m[1], int(m[2]), int(m[3]), None, None)
            for m in matches(d, r"^(.+?):(\d+):(\d+) - Unknown word ")]


def zizmor(d):
    if d == "zizmor-sarif":
        text = output(d)  # zizmor's log lines (stderr) come first
        run = json.loads(text[text.index("\n{") + 1:])["runs"][0]
        out = []
        for r in run["results"]:
            loc = r["locations"][0]["physicalLocation"]
            out.append(F(loc["artifactLocation"]["uri"], loc["region"]["startLine"],
                         loc["region"].get("startColumn"), r.get("level", "warning"),
                         r["ruleId"]))
        return out
    if d == "zizmor-github":
        return [F(m[2], int(m[3]), None, m[1], m[4])
                for m in matches(d, r"^::(error|warning) file=(.+?),line=(\d+),title=([\w-]+)::")]
    # default: `warning[artipacked]: ...` then ` --> ./path:line:col`
    out, lines = [], output(d).splitlines()
    for i, ln in enumerate(lines):
        m = re.match(r"^(error|warning|help|info)\[([\w-]+)\]: ", ln)
        if m:
            at = re.match(r"^\s*--> (.+?):(\d+):(\d+)$", lines[i + 1])
            out.append(F(rel(at[1], "ciproj"), int(at[2]), int(at[3]), m[1], m[2]))
    return out


CASES = {
    "pycodestyle-default": pycodestyle, "pycodestyle-pylint": pycodestyle_pylint,
    "pyflakes-default": pyflakes, "pydocstyle-default": pydocstyle,
    "vulture-default": vulture,
    "bandit-default": bandit, "bandit-custom": bandit, "bandit-sarif": bandit,
    "ty-full": ty, "ty-concise": ty, "ty-github": ty,
    "stylelint-string": stylelint, "stylelint-unix": stylelint, "stylelint-compact": stylelint,
    "oxlint-default": oxlint, "oxlint-github": oxlint, "oxlint-unix": oxlint,
    "oxlint-sarif": oxlint,
    "htmlhint-default": htmlhint, "htmlhint-unix": htmlhint,
    "jshint-default": jshint, "jshint-checkstyle": jshint, "standard-default": standard,
    "cppcheck-default": cppcheck, "cppcheck-gcc": cppcheck,
    "cpplint-default": cpplint, "cpplint-vs7": cpplint, "clang-tidy-default": clang_tidy,
    "luacheck-default": luacheck, "luacheck-plain": luacheck,
    "rubocop-progress": rubocop, "rubocop-emacs": rubocop,
    "phpcs-full": phpcs, "phpcs-emacs": phpcs, "phpcs-checkstyle": phpcs,
    "sqlfluff-human": sqlfluff, "sqlfluff-github": sqlfluff,
    "rstcheck-default": rstcheck, "doc8-default": doc8, "codespell-default": codespell,
    "typos-default": typos, "typos-brief": typos, "cspell-default": cspell,
    "zizmor-default": zizmor, "zizmor-github": zizmor, "zizmor-sarif": zizmor,
}


def main():
    check = "--check" in sys.argv
    bad = 0
    for d, derive in CASES.items():
        with open(os.path.join(HERE, d, "meta.json")) as f:
            fixture = json.load(f)["fixture"]
        truth = derive(d)
        for t in truth:
            if not exists(fixture, t["file"]):
                print(f"{d}: {t['file']} is not a file of {fixture}")
                bad += 1
        path = os.path.join(HERE, d, "truth.json")
        text = json.dumps(truth, indent=2) + "\n"
        if check:
            with open(path) as f:
                if f.read() != text:
                    print(f"{d}: truth differs")
                    bad += 1
        else:
            with open(path, "w") as f:
                f.write(text)
        print(f"{d}: {len(truth)}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
