# Cross-checks every truth.json against the machine-readable evidence beside it:
# junit.xml (failing <testcase>s) and go test -json (Action "fail" events with a Test),
# and checks that outcome "passed" goes with exit code 0. Prints the differences, which
# are expected only where the report itself is fooled (see README.md).
import json, os, re, xml.etree.ElementTree as ET
D = os.path.dirname(os.path.abspath(__file__))
def junit_fails(path, kind):
    root = ET.parse(path).getroot()
    out = []
    def walk(el, suites):
        for ch in el:
            if ch.tag == "testsuite":
                walk(ch, suites + [ch.get("name")])
            elif ch.tag == "testcase":
                if any(c.tag in ("failure", "error") for c in ch):
                    cn, n = ch.get("classname"), ch.get("name")
                    if kind == "pytest":
                        if cn == "":
                            out.append("COLLECT:" + n); continue
                        parts = cn.split(".")
                        # find module part: tests.test_math[.Class]
                        mod = parts[:2]; cls = parts[2:]
                        out.append("/".join(mod) + ".py::" + "::".join(cls + [n]))
                    elif kind == "node":
                        out.append(" > ".join(suites + [n]))
                    elif kind in ("jest", "mocha"):
                        out.append(("%s" % n if kind == "jest" else f"{cn} {n}").strip())
                    elif kind == "maven":
                        out.append(f"{cn}.{n}")
                    elif kind == "phpunit":
                        out.append(f"{ch.get('class')}::{n}")
                    else:
                        out.append(n)
    walk(root if root.tag == "testsuites" else ET.Element("x", {}), [])
    if root.tag == "testsuite":
        walk(ET.ElementTree(ET.fromstring(f"<w>{ET.tostring(root, encoding='unicode')}</w>")).getroot(), [])
    return out
kinds = {"nextest": "nextest", "pytest": "pytest", "gotestsum": "go", "node": "node", "jest": "jest",
         "vitest": "vitest", "mocha": "mocha", "maven": "maven",
         "phpunit": "phpunit"}
bad = 0
for d in sorted(os.listdir(D)):
    p = f"{D}/{d}"
    if not os.path.isfile(f"{p}/truth.json"): continue
    t = json.load(open(f"{p}/truth.json")); m = json.load(open(f"{p}/meta.json"))
    # exit code consistency
    if (t["outcome"] == "passed") != (m["exit_code"] == 0):
        print("EXIT MISMATCH", d, m["exit_code"], t["outcome"]); bad += 1
    want = set(t["failed"])
    if t["outcome"] == "could_not_run": assert not want
    if os.path.isfile(f"{p}/junit.xml"):
        kind = kinds[d.split("-")[0]]
        got = junit_fails(f"{p}/junit.xml", kind)
        if kind in ("jest", "mocha"):
            want_cmp = {w.replace(" > ", " ") for w in want}
        else:
            want_cmp = want
        gs = set(got)
        note = ""
        if gs != want_cmp:
            note = f"  junit-only: {sorted(gs - want_cmp)}  truth-only: {sorted(want_cmp - gs)}"
        print(f"junit {d:34s} {len(got)} vs truth {len(want)}{note}")
    if d.startswith("go-test-json"):
        evs = [json.loads(l) for l in open(f"{p}/output.txt") if l.startswith("{")]
        got = {e["Test"] for e in evs if e["Action"] == "fail" and "Test" in e}
        print(f"json  {d:34s} fail events {sorted(got - want)} extra vs truth; missing {sorted(want - got)}")
print("bad", bad)
