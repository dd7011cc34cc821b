#!/usr/bin/env python3
"""Derive every <dir>/truth.json of this corpus.

Sources, in order of preference:
  * the same tool's machine-readable output on the same fixture, written by
    capture.sh to $JSONDIR (default /tmp/vcorpus-json);
  * for structured outputs (SARIF, rdjson, checkstyle, GitHub annotations) the
    output.txt itself, cross-checked against the JSON source;
  * for tools with no JSON output (flake8, tsc, yamllint, go build/vet, gofmt,
    prettier, rustfmt, ruff format) a strict per-tool pattern on output.txt.

Truth conventions (see README.md): file is relative to the fixture root;
line/column/severity/rule are what THIS output shows (null when the format
does not show it); columns are the tool's own numbers as printed (pylint's
are 0-based, all others 1-based).

Run: python3 derive_truth.py [--check]   (--check: compare, do not write)
The results were reviewed by hand against each output.txt.
"""
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
JSONDIR = os.environ.get("JSONDIR", "/tmp/vcorpus-json")
VC = "/tmp/vcorpus"
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|\x1b\(B")


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
    out = []
    for ln in text.splitlines():
        ln = ln.strip()
        if ln.startswith("{"):
            out.append(json.loads(ln))
    return out


def output(d):
    with open(os.path.join(HERE, d, "output.txt"), encoding="utf-8") as f:
        return f.read()


def fixture_of(d):
    with open(os.path.join(HERE, d, "meta.json")) as f:
        return json.load(f)["fixture"]


# ------------------------------------------------------------ JSON sources
def ruff(col=True, sev=None):
    return [F(rel(x["filename"], "pyproj"), x["location"]["row"],
              x["location"]["column"] if col else None, sev, x["code"])
            for x in json.loads(load("ruff"))]


def mypy(col):
    out = []
    for x in jlines(load("mypy")):
        out.append(F(x["file"], x["line"], x["column"] + 1 if col else None,
                     x["severity"],
                     x["code"] if x["severity"] == "error" else None))
    return out


def pyright():
    d = json.loads(load("pyright"))
    return [F(rel(x["file"], "pyproj"), x["range"]["start"]["line"] + 1,
              x["range"]["start"]["character"] + 1, x["severity"], x.get("rule"))
            for x in d["generalDiagnostics"]]


def pylint(col):
    return [F(x["path"], x["line"], x["column"] if col else None, x["type"],
              x["message-id"]) for x in json.loads(load("pylint"))]


def eslint(sevcase=str.lower):
    out = []
    for f in json.loads(load("eslint")):
        for m in f["messages"]:
            out.append(F(rel(f["filePath"], "jsproj"), m["line"], m["column"],
                         {1: "warning", 2: "error"}[m["severity"]], m["ruleId"]))
    return out


def biome(name):
    out = []
    for x in json.loads(load(name))["diagnostics"]:
        loc = x["location"]
        line = loc["start"]["line"] or None
        col = loc["start"]["column"] or None
        out.append(F(rel(loc["path"], "jsproj"), line, col, x["severity"],
                     x["category"]))
    return out


def cargo(name, rule=True):
    out = []
    for x in jlines(load(name)):
        if x.get("reason") != "compiler-message":
            continue
        m = x["message"]
        prim = [s for s in m["spans"] if s["is_primary"]]
        if not prim:
            continue
        s = prim[0]
        code = (m.get("code") or {}).get("code") if rule else None
        out.append(F(s["file_name"], s["line_start"], s["column_start"],
                     m["level"], code))
    return out


def staticcheck():
    return [F(rel(x["location"]["file"], "goproj"), x["location"]["line"],
              x["location"]["column"], None, x["code"])
            for x in jlines(load("staticcheck"))]


def shellcheck(sevmap=None):
    out = []
    for c in json.loads(load("shellcheck"))["comments"]:
        lvl = sevmap[c["level"]] if sevmap else c["level"]
        out.append(F(c["file"], c["line"], c["column"], lvl, f"SC{c['code']}"))
    return out


def hadolint(col=False):
    return [F(x["file"], x["line"], x["column"] if col else None, x["level"],
              x["code"]) for x in json.loads(load("hadolint"))]


def markdownlint():
    out = []
    for x in json.loads(load("markdownlint")):
        col = x["errorRange"][0] if x["errorRange"] else None
        out.append(F(x["fileName"], x["lineNumber"], col, x["severity"],
                     x["ruleNames"][0]))
    return out


def actionlint():
    return [F(x["filepath"], x["line"], x["column"], None, x["kind"])
            for x in json.loads(load("actionlint"))]


# ------------------------------------------------------------ text sources
def rx(d, pattern, conv):
    out = []
    for ln in ANSI.sub("", output(d)).splitlines():
        m = re.match(pattern, ln)
        if m:
            out.append(conv(m))
    return out


def flake8(d):
    return rx(d, r"^(\S+?):(\d+):(\d+): ([A-Z]+\d+) ",
              lambda m: F(rel(m[1], "pyproj"), int(m[2]), int(m[3]), None, m[4]))


def tsc(d):
    pat = r"^(\S+?)(?:\((\d+),(\d+)\)|:(\d+):(\d+)) ?:? ?-? ?(error|warning) (TS\d+):"
    return rx(d, pat, lambda m: F(m[1], int(m[2] or m[4]), int(m[3] or m[5]),
                                  m[6], m[7]))


def yamllint(d):
    # all yamllint formats carry the same findings; parse the parsable one
    return rx("yamllint-parsable", r"^(\S+?):(\d+):(\d+): \[(\w+)\] .* \(([\w-]+)\)$",
              lambda m: F(rel(m[1], "yamlproj"), int(m[2]), int(m[3]), m[4], m[5]))


def go_vet(d):
    return rx(d, r"^(\S+\.go):(\d+):(\d+): ",
              lambda m: F(rel(m[1], "goproj"), int(m[2]), int(m[3]), None, None))


def go_build(d):
    return rx(d, r"^(\S+\.go):(\d+):(\d+): ",
              lambda m: F(rel(m[1], "gobroken"), int(m[2]), int(m[3]), None, None))


def gofmt(d):
    return rx(d, r"^(\S+\.go)$", lambda m: F(m[1], None, None, None, None))


def prettier(d):
    return rx(d, r"^\[warn\] (\S+)$",
              lambda m: F(m[1], None, None, "warning", None))


def rustfmt(d):
    return rx(d, r"^Diff in (\S+):(\d+):$",
              lambda m: F(rel(m[1], "rustcrate"), int(m[2]), None, None, None))


def ruff_format(d):
    return rx(d, r"^\s*--> (\S+):(\d+):(\d+)$",
              lambda m: F(m[1], int(m[2]), int(m[3]), None, "unformatted"))


# ------------------------------------------------------------ structured outputs
def first_json(text):
    """The first JSON value in text (structured reporters may add a trailer)."""
    start = min(i for i in (text.find("{"), text.find("[")) if i >= 0)
    val, _ = json.JSONDecoder().raw_decode(text[start:])
    return val


def sarif(d):
    fx = fixture_of(d)
    out = []
    for run in first_json(output(d))["runs"]:
        for r in run["results"]:
            pl = r["locations"][0]["physicalLocation"]
            reg = pl.get("region", {})
            out.append(F(rel(pl["artifactLocation"]["uri"], fx), reg.get("startLine"),
                         reg.get("startColumn"), r.get("level"), r.get("ruleId")))
    return out


def rdjson(d):
    fx = fixture_of(d)
    doc = first_json(output(d))
    default = doc.get("severity")
    out = []
    for x in doc["diagnostics"]:
        st = x["location"].get("range", {}).get("start", {})
        sev = (x.get("severity") or default or "").lower() or None
        out.append(F(rel(x["location"]["path"], fx), st.get("line"), st.get("column"),
                     sev, (x.get("code") or {}).get("value")))
    return out


def checkstyle(d):
    fx = fixture_of(d)
    text = output(d)
    xml = text[text.index("<?xml"):text.index("</checkstyle>") + len("</checkstyle>")]
    out = []
    for f in ET.fromstring(xml.encode()).iter("file"):
        for e in f.iter("error"):
            src = e.get("source", "")
            rule = re.sub(r"^(eslint\.rules\.|ShellCheck\.)", "", src) or None
            out.append(F(rel(f.get("name"), fx), int(e.get("line")),
                         int(e.get("column")) if e.get("column") else None,
                         e.get("severity"), rule))
    return out


def github(d):
    fx = fixture_of(d)
    out = []
    for ln in output(d).splitlines():
        m = re.match(r"^::(error|warning|notice) (.*?)::", ln)
        if not m:
            continue
        props = dict(p.split("=", 1) for p in m[2].split(","))
        title = props.get("title", "")
        rm = re.match(r"ruff \((\w+)\)$", title)
        rule = rm[1] if rm else (title or None)
        if rule is None:  # yamllint puts the rule in the message: "1:1 [rule] msg"
            mm = re.search(r"::\d+:\d+ \[([\w-]+)\]", ln)
            rule = mm[1] if mm else None
        out.append(F(rel(props["file"], fx), int(props["line"]),
                     int(props["col"]) if "col" in props else None, m[1], rule))
    return out


def key(f):
    return (f["file"], f["line"], f["rule"])


def same_findings(a, b, what):
    ka = sorted(map(key, a), key=str)
    kb = sorted(map(key, b), key=str)
    if ka != kb:
        raise SystemExit(f"{what}: structured output disagrees with JSON source:\n{ka}\n{kb}")


def with_cross(d, structured, reference, ignore_rule=False):
    s = structured(d)
    r = reference
    if ignore_rule:
        s2 = [dict(x, rule=None) for x in s]
        r2 = [dict(x, rule=None) for x in r]
        same_findings(s2, r2, d)
    else:
        same_findings(s, r, d)
    return s


GCC = {"error": "error", "warning": "warning", "info": "note", "style": "note"}

TRUTH = {
    "ruff-full": lambda d: ruff(),
    "ruff-full-color": lambda d: ruff(),
    "ruff-concise": lambda d: ruff(),
    "ruff-grouped": lambda d: ruff(),
    "ruff-pylint": lambda d: ruff(col=False),
    "ruff-github": lambda d: with_cross(d, github, ruff(sev="error")),
    "ruff-sarif": lambda d: with_cross(d, sarif, ruff(sev="error")),
    "ruff-rdjson": lambda d: with_cross(d, rdjson, ruff(sev="warning")),
    "ruff-format-check": ruff_format,
    "mypy-default": lambda d: mypy(col=False),
    "mypy-default-color": lambda d: mypy(col=False),
    "mypy-columns": lambda d: mypy(col=True),
    "pyright-default": lambda d: pyright(),
    "pylint-text": lambda d: pylint(col=True),
    "pylint-colorized": lambda d: pylint(col=True),
    "pylint-parseable": lambda d: pylint(col=False),
    "flake8-default": flake8,
    "flake8-default-color": flake8,
    "eslint-stylish": lambda d: eslint(),
    "eslint-stylish-color": lambda d: eslint(),
    "eslint-unix": lambda d: eslint(),
    "eslint-compact": lambda d: eslint(),
    "eslint-checkstyle": lambda d: with_cross(d, checkstyle, eslint()),
    "eslint-sarif": lambda d: with_cross(d, sarif, eslint()),
    "eslint-rdjson": lambda d: with_cross(d, rdjson, eslint()),
    "biome-lint": lambda d: biome("biome-lint"),
    "biome-lint-color": lambda d: biome("biome-lint"),
    "biome-check": lambda d: biome("biome-check"),
    "biome-github": lambda d: with_cross(d, github, biome("biome-lint")),
    "biome-checkstyle": lambda d: with_cross(d, checkstyle, biome("biome-lint")),
    "biome-sarif": lambda d: with_cross(d, sarif, biome("biome-lint")),
    "biome-rdjson": lambda d: with_cross(d, rdjson, biome("biome-lint")),
    "prettier-check": prettier,
    "prettier-check-color": prettier,
    "tsc-default": tsc,
    "tsc-pretty-false": tsc,
    "tsc-pretty-color": tsc,
    "clippy-human": lambda d: cargo("clippy"),
    "clippy-human-color": lambda d: cargo("clippy"),
    "clippy-json": lambda d: cargo("clippy"),
    "clippy-short": lambda d: cargo("clippy", rule=False),
    "cargo-build-error": lambda d: cargo("cargo-build"),
    "cargo-fmt-check": rustfmt,
    "go-vet": go_vet,
    "go-build-error": go_build,
    "gofmt-list": gofmt,
    "staticcheck-text": lambda d: staticcheck(),
    "shellcheck-tty": lambda d: shellcheck(),
    "shellcheck-tty-color": lambda d: shellcheck(),
    "shellcheck-gcc": lambda d: shellcheck(GCC),
    "shellcheck-checkstyle": lambda d: with_cross(d, checkstyle, shellcheck()),
    "hadolint-tty": lambda d: hadolint(),
    "hadolint-tty-nocolor": lambda d: hadolint(),
    "hadolint-gnu": lambda d: hadolint(),
    "hadolint-checkstyle": lambda d: with_cross(d, checkstyle, hadolint(col=True)),
    "hadolint-sarif": lambda d: with_cross(d, sarif, hadolint(col=True)),
    "yamllint-standard": yamllint,
    "yamllint-parsable": yamllint,
    "yamllint-colored": yamllint,
    "yamllint-github": lambda d: with_cross(d, github, yamllint(d)),
    "markdownlint-default": lambda d: markdownlint(),
    "markdownlint-cli2-default": lambda d: markdownlint(),
    "actionlint-default": lambda d: actionlint(),
    "actionlint-default-color": lambda d: actionlint(),
}


def main():
    check = "--check" in sys.argv
    bad = 0
    for d, fn in TRUTH.items():
        if not os.path.isdir(os.path.join(HERE, d)):
            print(f"missing dir {d}", file=sys.stderr)
            continue
        truth = fn(d)
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
