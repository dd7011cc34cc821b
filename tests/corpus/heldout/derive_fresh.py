#!/usr/bin/env python3
"""Truth for the fresh held-out findings (capture-fresh.sh): strict per-tool patterns over each
output.txt, one finding per diagnostic the tool printed, checked against the tool's own count
where it prints one. `--check` compares with the committed truth.json instead of writing it.
(The tests' truth is written by hand from each runner's failure list: see README.md.)"""
import json, re, sys
from pathlib import Path

HERE = Path(__file__).parent / "findings"
ROOT = "/tmp/heldout2/prose-site/"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def F(file, line, column, severity, rule):
    return {"file": file, "line": line, "column": column, "severity": severity, "rule": rule}


def text(d):
    return ANSI.sub("", (HERE / d / "output.txt").read_text(encoding="utf-8", errors="replace"))


def proselint(t):
    return [F(m[1].removeprefix(ROOT), int(m[2]), int(m[3]), None, m[4])
            for m in re.finditer(r"^(.+?):(\d+):(\d+): ([\w.]+): ", t, re.M)]


def djlint(t):  # paths relative to the linted folder `templates`; columns 0-based
    out, file = [], None
    for line in t.splitlines():
        if re.fullmatch(r"\S.*\.html", line):
            file = "templates/" + line
        elif m := re.match(r"^([A-Z]\d{3}) (\d+):(\d+) ", line):
            out.append(F(file, int(m[2]), int(m[3]), None, m[1]))
    assert f"found {len(out)} errors" in t
    return out


def unified(t):  # remark, alex, textlint: a file header, then indented `l:c[-l:c] sev msg rule`
    out, file = [], None
    for line in t.splitlines():
        if line and not line[0].isspace() and not re.match(r"^\d+:\d+", line) and "problem" not in line and "warning" not in line:
            file = line.removeprefix(ROOT)
        elif m := re.match(r"^\s*(\d+):(\d+)(?:-\d+:\d+)?\s+(warning|error|info)\s+.*?\s(\S+)(?:\s+(?:retext|remark)-[\w-]+)?\s*$", line):
            out.append(F(file, int(m[1]), int(m[2]), m[3], m[4]))
    return out


def write_good(t):  # `In <file>` headers; `on line L at column C`, C 0-based
    out, file = [], None
    for line in t.splitlines():
        if line.startswith("In "):
            file = line[3:]
        elif m := re.search(r" on line (\d+) at column (\d+)$", line):
            out.append(F(file, int(m[1]), int(m[2]), None, None))
    return out


def xmllint(t):
    return [F(m[1], int(m[2]), None, "error", None)
            for m in re.finditer(r"^(.+?):(\d+): parser error : ", t, re.M)]


def tidy(t):  # no file name in the output: the one file on the command line
    out = [F("templates/partials/base page.html", int(m[1]), int(m[2]), m[3].lower(), None)
           for m in re.finditer(r"^line (\d+) column (\d+) - (Warning|Error|Info): ", t, re.M)]
    assert "Tidy found 2 warnings and 0 errors" in t and len(out) == 2
    return out


def jsonlint(t):  # no file name either: the one file on the command line
    return [F("data/nested/settings.json", int(m[1]), None, "error", None)
            for m in re.finditer(r"^Error: Parse error on line (\d+):", t, re.M)]


def perlcritic(t):
    return [F(m[1], int(m[2]), int(m[3]), m[4], None)
            for m in re.finditer(r"^(.+?): .* at line (\d+), column (\d+)\..*\(Severity: (\d)\)$", t, re.M)]


def checkbashisms(t):
    return [F(m[1], int(m[2]), None, None, None)
            for m in re.finditer(r"^possible bashism in (.+) line (\d+) \(", t, re.M)]


def shfmt(t):  # a diff is one file-level finding; a parse error is located
    out = [F(m[1], None, None, None, None) for m in re.finditer(r"^\+\+\+ (.+)$", t, re.M)]
    out += [F(m[1], int(m[2]), int(m[3]), "error", None)
            for m in re.finditer(r"^(.+?):(\d+):(\d+): ", t, re.M)]
    return out


def mdl(t):
    return [F(m[1].removeprefix("./"), int(m[2]), None, None, m[3])
            for m in re.finditer(r"^(.+?):(\d+): (MD\d{3}) ", t, re.M)]


READERS = {"proselint-default": proselint, "djlint-default": djlint, "remark-default": unified,
           "textlint-default": unified, "alex-default": unified, "write-good-default": write_good,
           "xmllint-default": xmllint, "tidy-default": tidy, "jsonlint-default": jsonlint,
           "perlcritic-default": perlcritic, "checkbashisms-default": checkbashisms,
           "shfmt-default": shfmt, "mdl-default": mdl}

fixture = HERE / "fixtures" / "prose-site"
bad = 0
for d, read in READERS.items():
    truth = read(text(d))
    for f in truth:
        assert (fixture / f["file"]).is_file(), (d, f)
    path = HERE / d / "truth.json"
    rendered = json.dumps(truth, indent=2, ensure_ascii=False) + "\n"
    if "--check" in sys.argv:
        if path.read_text() != rendered:
            print(f"{d}: differs"); bad += 1
    else:
        path.write_text(rendered)
    print(f"{d}: {len(truth)}")
sys.exit(bad)
