#!/usr/bin/env python3
"""The figures of the code's shape that the workspace issue tracks, from the sources alone.

    python3 scripts/shape.py          # a table
    python3 scripts/shape.py --json   # the same, as JSON

What counts:
- `Result<_, String>`: signatures returning a string as their error, outside unit tests;
- long files: Rust files over 800 lines, unit tests included (what a reader scrolls);
- the longest functions: lines from `fn` to its closing brace, comments included (clippy's
  limit of 100 counts code lines only), and the longest unit test apart;
- public items: `pub` items (not `pub(crate)`/`pub(super)`) of the library crates outside
  their private modules, which is what another crate can reach; the binary's are its own;
- README lines.
"""

import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
FN = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+\"C\"\s+)?fn\s+(\w+)")
PUB_ITEM = re.compile(r"^\s*pub\s+(fn|struct|enum|trait|const|static|type|mod|use|union)\b")


def string_error(line):
    """Whether a line names `Result<T, String>`: the last of Result's top-level arguments."""
    for m in re.finditer(r"\bResult<", line):
        depth, args, start = 1, [], m.end()
        for i in range(m.end(), len(line)):
            c = line[i]
            if c in "<([":
                depth += 1
            elif c in ">)]":
                depth -= 1
                if depth == 0:
                    args.append(line[start:i])
                    break
            elif c == "," and depth == 1:
                args.append(line[start:i])
                start = i + 1
        if len(args) == 2 and args[1].strip() == "String":
            return True
    return False


def sources():
    for top in ("src", "crates"):
        base = ROOT / top
        if base.exists():
            yield from sorted(p for p in base.rglob("*.rs") if "target" not in p.parts)


def private_modules(lib):
    """The top-level modules a crate's lib.rs declares without `pub`: nothing in them is
    reachable from another crate but through a re-export (`pub use`, counted in lib.rs)."""
    text = lib.read_text(encoding="utf-8") if lib.exists() else ""
    return set(re.findall(r"^mod (\w+);", text, re.M))


def library(path):
    """Whether a file is a library crate's and reachable from outside it: under crates/ (the
    binary is src/), not in a private module."""
    rel = path.relative_to(ROOT).parts
    if rel[0] == "crates":
        if len(rel) < 4:
            return True
        top = rel[3].removesuffix(".rs")
        return top not in private_modules(ROOT / "crates" / rel[1] / "src" / "lib.rs")
    # Before the workspace: one crate whose library was everything but main.rs.
    return not (ROOT / "crates").exists() and rel[-1] != "main.rs"


def code_lines(text):
    """Lines before the file's unit tests."""
    return text.split("#[cfg(test)]")[0].splitlines()


def functions(lines):
    """(name, length) of every function with a body, by brace depth (strings and chars
    are stepped over roughly: enough for rustfmt-formatted code)."""
    found = []
    i = 0
    while i < len(lines):
        m = FN.match(lines[i])
        if not m:
            i += 1
            continue
        depth, started, j = 0, False, i
        while j < len(lines):
            line = re.sub(r'"(\\.|[^"\\])*"', '""', lines[j].split("//")[0])
            line = re.sub(r"'(\\.|[^'\\])'", "''", line)
            for c in line:
                if c == "{":
                    depth += 1
                    started = True
                elif c == "}":
                    depth -= 1
            if not started and line.rstrip().endswith(";"):
                break
            if started and depth <= 0:
                found.append((m.group(7), j - i + 1))
                break
            j += 1
        i += 1
    return found


def main():
    string_errors, long_files, fns, tests, public = [], [], [], [], 0
    for path in sources():
        text = path.read_text(encoding="utf-8")
        rel = str(path.relative_to(ROOT))
        lines = text.splitlines()
        code = code_lines(text)
        if len(lines) > 800:
            long_files.append((rel, len(lines)))
        string_errors += [f"{rel}:{n + 1}" for n, l in enumerate(code) if string_error(l) and not l.lstrip().startswith("//")]
        fns += [(length, f"{rel}::{name}") for name, length in functions(code)]
        tests += [(length, f"{rel}::{name}") for name, length in functions(lines[len(code):])]
        if library(path):
            public += sum(1 for l in code if PUB_ITEM.match(l))
    fns.sort(reverse=True)
    tests.sort(reverse=True)
    readme = len((ROOT / "README.md").read_text(encoding="utf-8").splitlines())
    figures = {
        "result_string": len(string_errors),
        "files_over_800": sorted(long_files, key=lambda f: -f[1]),
        "longest_functions": fns[:3],
        "longest_unit_tests": tests[:1],
        "public_items": public,
        "readme_lines": readme,
    }
    if "--json" in sys.argv:
        print(json.dumps(figures, indent=2))
        return
    print(f"Result<_, String>     {figures['result_string']}")
    print(f"files over 800 lines  {len(long_files)}")
    for rel, n in figures["files_over_800"]:
        print(f"    {n:5}  {rel}")
    print("longest functions")
    for n, name in figures["longest_functions"]:
        print(f"    {n:5}  {name}")
    for n, name in figures["longest_unit_tests"]:
        print(f"    {n:5}  {name} (a unit test)")
    print(f"public items          {public}")
    print(f"README lines          {readme}")


if __name__ == "__main__":
    main()
