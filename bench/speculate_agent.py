"""bench/speculate.sh's scripted agent and its report (run by it; see its header).

`python3 bench/speculate_agent.py` measures one project set up by speculate.sh (its settings in
the environment: KIND, BASE, VALIDATOR, PRE_COMMIT, RUNS, WAITS, CHANGE_FILE, TEST_FILE,
FAILING_TEST, RAW, HARNESS_ONLY), appending a JSON line per measurement to RAW;
`python3 bench/speculate_agent.py report` writes the section of bench/RESULTS.md from RAW.
A verdict other than the expected one ends the measurement at once (exit 1), with the verdict.
"""

import hashlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
import uuid

POLL = 0.005          # the verdict file, while waiting for it
QUIET_AFTER = {"speculate": 2.0, "no-speculate": 0.5}   # no process under the watcher this long
TICK = os.sysconf("SC_CLK_TCK")
LOOPING = False       # set once a watcher with speculation has been seen never to go quiet


def die(message, verdict=None):
    print(f"bench/speculate.sh: {message}", file=sys.stderr)
    if verdict is not None:
        print(json.dumps({k: verdict.get(k) for k in ("verdict", "reasons", "warnings", "attempt")}, indent=2),
              file=sys.stderr)
        for gate in verdict.get("gates", []):
            print(f"  {gate.get('name')}: {gate.get('outcome')} {gate.get('duration_ms')} ms "
                  f"{gate.get('summary', '')}", file=sys.stderr)
            if gate.get("outcome") in ("fail", "error") and gate.get("output_tail"):
                print("    " + gate["output_tail"][-3000:].replace("\n", "\n    "), file=sys.stderr)
    sys.exit(1)


# --- the watcher --------------------------------------------------------------------------------

def children_map():
    kids = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(pid))
    return kids


def descendants(pid):
    kids, out, todo = children_map(), [], [pid]
    while todo:
        for kid in kids.get(todo.pop(), []):
            out.append(kid)
            todo.append(kid)
    return out


def cpu_seconds(pid):
    """The process's CPU time with its reaped children's (utime, stime, cutime, cstime)."""
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    fields = stat[stat.rindex(")") + 2:].split()
    return sum(int(x) for x in fields[11:15]) / TICK


class Watcher:
    def __init__(self, base, validator, mode):
        self.mode = mode
        self.base = base
        self.rules = f"{base}/validator-{mode}.yaml"
        # Fresh verdicts and state: each watcher starts with a task it has never judged.
        for sub in ("verdicts", "state"):
            shutil.rmtree(f"{base}/{sub}", ignore_errors=True)
        try:
            os.unlink(f"{base}/staging/bench.done")
        except FileNotFoundError:
            pass
        self.log_path = f"{base}/watch-{mode}.log"
        log = open(self.log_path, "a")
        log.write(f"\n=== started {time.strftime('%H:%M:%S')}\n")
        log.flush()
        start = log.tell()  # the log is appended to: this watcher's lines follow
        self.proc = subprocess.Popen([os.environ["VALIDATOR"], "-c", self.rules, "watch",
                                      "--metrics-addr", "127.0.0.1:0", "--color", "never"],
                                     stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.addr = None
        self.quiet = None     # whether the last settle() saw it go quiet
        deadline = time.monotonic() + 30
        while self.addr is None:
            self.alive()
            with open(self.log_path) as f:
                f.seek(start)
                m = re.findall(r"metrics on http://(\S+)/metrics", f.read())
            if m:
                self.addr = m[-1]
            elif time.monotonic() > deadline:
                die(f"the watcher printed no metrics address in 30 s ({self.log_path})")
            else:
                time.sleep(0.02)

    def alive(self):
        if self.proc.poll() is not None:
            tail = open(self.log_path).read()[-3000:]
            die(f"the watcher ({self.mode}) exited with {self.proc.returncode}:\n{tail}")

    def metrics(self):
        with urllib.request.urlopen(f"http://{self.addr}/metrics", timeout=10) as answer:
            text = answer.read().decode()
        out = {}
        for line in text.splitlines():
            m = re.match(r'validator_speculative_runs_total\{outcome="(\w+)"\}\s+(\S+)', line)
            if m:
                out[m.group(1)] = float(m.group(2))
            m = re.match(r"validator_speculative_cpu_seconds_total\s+(\S+)", line)
            if m:
                out["cpu"] = float(m.group(1))
        return out

    def cpu(self):
        self.alive()
        return cpu_seconds(self.proc.pid)

    def settle(self):
        """Until no process has run under the watcher for QUIET_AFTER[mode] seconds; True then.
        A watcher with speculation that never goes quiet (its speculative runs restarting, each
        cancelled by what it wrote itself) is the product's behaviour, not the harness's: it is
        said once, each later wait is short, False is returned and the row records it. Without
        speculation, 120 s without going quiet stops the run."""
        global LOOPING
        quiet = QUIET_AFTER[self.mode]
        if self.mode == "no-speculate":
            limit = 120
        else:
            limit = 4 * quiet if LOOPING else 90
        start = last_busy = time.monotonic()
        while True:
            self.alive()
            now = time.monotonic()
            if descendants(self.proc.pid):
                last_busy = now
            elif now - last_busy >= quiet:
                self.quiet = True
                return True
            if now - start > limit:
                running = []
                for pid in descendants(self.proc.pid):
                    try:
                        running.append(open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")[:200])
                    except OSError:
                        pass
                text = (f"the watcher ({self.mode}) has not gone quiet in {limit:g} s (no process under it "
                        f"for {quiet:g} s): running {running}; its metrics {self.metrics()}; log {self.log_path}")
                if self.mode == "no-speculate":
                    die(text)
                if not LOOPING:
                    print(f"  WARNING: {text}; measuring on with it running (each row says whether the "
                          "watcher went quiet before the next edit)", file=sys.stderr, flush=True)
                LOOPING = True
                self.quiet = False
                return False
            time.sleep(0.05)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            die(f"the watcher ({self.mode}) did not stop within 60 s of SIGTERM")


# --- the agent ----------------------------------------------------------------------------------

class Project:
    def __init__(self):
        env = os.environ
        self.kind = env["KIND"]
        self.base = env["BASE"]
        self.task = f"{self.base}/staging/bench"
        self.pc = f"{self.base}/pre-commit"
        self.change_file = env["CHANGE_FILE"]
        self.test_file = env["TEST_FILE"]
        self.failing_test = env["FAILING_TEST"]
        self.files = {name: open(f"{self.base}/variants/{name}", "rb").read()
                      for name in ("change.orig", "change.a", "change.b", "test.orig", "test.broken")}
        self.turn = 0

    def edit(self, where, change, test):
        """The agent's edit: each file written in place, once, when its content is to change."""
        for rel, name in ((self.test_file, f"test.{test}"), (self.change_file, f"change.{change}")):
            path = f"{where}/{rel}"
            want = self.files[name]
            if open(path, "rb").read() != want:
                with open(path, "wb") as f:
                    f.write(want)

    def next_change(self):
        """The two one-line variants in turn, so every done sees a new edit."""
        self.turn += 1
        return "a" if self.turn % 2 else "b"


def signal_done(project, watcher, label):
    """Writes the done file (a rename, a body no other signal has), waits until the verdict
    answers it; returns (seconds from the rename to a current verdict, the verdict)."""
    body = f"STATUS: OK\nSUMMARY: bench {label} {uuid.uuid4()}\n".encode()
    digest = hashlib.sha256(body).hexdigest()
    tmp = f"{project.base}/bench.done.tmp"
    with open(tmp, "wb") as f:
        f.write(body)
        f.flush()
        os.fsync(f.fileno())
    verdict_path = f"{project.base}/verdicts/bench.verdict.json"
    t0 = time.perf_counter()
    os.rename(tmp, f"{project.base}/staging/bench.done")
    seen = None
    checks = 0
    while True:
        try:
            st = os.stat(verdict_path)
            key = (st.st_mtime_ns, st.st_size, st.st_ino)
            if key != seen:
                seen = key
                with open(verdict_path, "rb") as f:
                    verdict = json.loads(f.read())
                if (verdict.get("signal") or {}).get("sha256") == digest:
                    took = time.perf_counter() - t0
                    return took, verdict
        except (FileNotFoundError, json.JSONDecodeError):
            pass
        checks += 1
        if checks % 200 == 0:
            watcher.alive()
            if time.perf_counter() - t0 > 900:
                die(f"no verdict for {label} within 900 s")
        time.sleep(POLL)


def keep(project, label, verdict):
    with open(f"{project.base}/kept/{label}.verdict.json", "w") as f:
        json.dump(verdict, f, indent=1)


def test_gate(verdict):
    gates = [g for g in verdict.get("gates", []) if g.get("name") == "test"]
    return gates[-1] if gates else {}


def gates_of(verdict):
    """Each gate's name, outcome and time in the verdict: what ran at done, and for how long."""
    return [[g.get("name"), g.get("outcome"), g.get("duration_ms")] for g in verdict.get("gates", [])]


def expect_pass(verdict, label):
    if verdict.get("verdict") != "PASS":
        die(f"{label}: expected PASS, the verdict is {verdict.get('verdict')}", verdict)


def expect_named_fail(project, verdict, label):
    gate = test_gate(verdict)
    if verdict.get("verdict") != "FAIL" or gate.get("outcome") != "fail":
        die(f"{label}: expected FAIL at the test gate, the verdict is {verdict.get('verdict')} "
            f"(test gate: {gate.get('outcome')})", verdict)
    others = [g["name"] for g in verdict.get("gates", []) if g.get("outcome") == "fail" and g.get("name") != "test"]
    if others:
        die(f"{label}: gates other than test failed too: {others}", verdict)
    if project.failing_test not in json.dumps(gate, ensure_ascii=False):
        die(f"{label}: the test gate's FAIL does not name {project.failing_test!r}", verdict)


def record(raw, **row):
    with open(raw, "a") as f:
        f.write(json.dumps(row) + "\n")


def delta(after, before):
    return {k: round(after.get(k, 0) - before.get(k, 0), 4) for k in set(after) | set(before)}


def pre_commit(project, label, want_rc, name=None):
    """pre-commit run --all-files in the copy, timed; its exit code (and the test's name in its
    output) checked."""
    out_path = f"{project.base}/pre-commit-{label}.log"
    t0 = time.perf_counter()
    with open(out_path, "w") as out:
        rc = subprocess.run([os.environ["PRE_COMMIT"], "run", "--all-files"], cwd=project.pc,
                            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode
    took = time.perf_counter() - t0
    text = open(out_path, errors="replace").read()
    if rc != want_rc:
        die(f"pre-commit {label}: exit {rc}, expected {want_rc}:\n{text[-3000:]}")
    if name and name not in text:
        die(f"pre-commit {label}: its output does not name {name!r}:\n{text[-3000:]}")
    return took


def measure():
    env = os.environ
    project = Project()
    kind, raw = project.kind, env["RAW"]
    runs = int(env["RUNS"])
    waits = [float(x) for x in env["WAITS"].split()]
    modes = ["speculate", "no-speculate"]
    say = lambda text: print(f"  {kind} {text}", file=sys.stderr, flush=True)

    # pre-commit's first run (its own set-up, the tools' files read once), untimed.
    project.edit(project.pc, "a", "orig")
    pre_commit(project, "warm-A", 0)

    # A: done → verdict, after T seconds of the agent's final answer.
    for rnd in range(runs):
        for mode in modes[rnd % 2:] + modes[:rnd % 2]:
            project.edit(project.task, "orig", "orig")
            watcher = Watcher(project.base, env["VALIDATOR"], mode)
            watcher.settle()
            for wait in waits:
                label = f"A-{mode}-T{wait:g}-r{rnd}"
                m0, c0, quiet_before = watcher.metrics(), watcher.cpu(), watcher.quiet
                project.edit(project.task, project.next_change(), "orig")
                edited = time.perf_counter()
                time.sleep(max(0.0, edited + wait - time.perf_counter()))
                took, verdict = signal_done(project, watcher, label)
                expect_pass(verdict, label)
                keep(project, label, verdict)
                watcher.settle()
                spec = delta(watcher.metrics(), m0)
                cpu = watcher.cpu() - c0
                record(raw, kind=kind, row="A", mode=mode, wait=wait, round=rnd, seconds=took,
                       verdict=verdict["verdict"], verdict_ms=verdict.get("duration_ms"),
                       test_ms=test_gate(verdict).get("duration_ms"), spec=spec, watcher_cpu=cpu,
                       gates=gates_of(verdict), quiet_before=quiet_before, quiet_after=watcher.quiet)
                say(f"A {mode} T={wait:g}s: verdict {verdict['verdict']} {took * 1000:.0f} ms after done "
                    f"(speculative runs {spec or 'n/a'}; watcher CPU {cpu:.2f} s"
                    f"{'' if watcher.quiet else '; the watcher did not go quiet'})")
            watcher.stop()
        change = project.next_change()
        project.edit(project.pc, change, "orig")
        took = pre_commit(project, f"A-r{rnd}", 0)
        record(raw, kind=kind, row="A", mode="pre-commit", round=rnd, seconds=took)
        say(f"A pre-commit --all-files: {took:.2f} s")

    # B: a retry whose named failing test still fails, done at once.
    for mode in modes:
        project.edit(project.task, "orig", "orig")
        watcher = Watcher(project.base, env["VALIDATOR"], mode)
        watcher.settle()
        label = f"B-{mode}-first"
        project.edit(project.task, "orig", "broken")
        took, verdict = signal_done(project, watcher, label)
        expect_named_fail(project, verdict, label)
        keep(project, label, verdict)
        record(raw, kind=kind, row="B-first", mode=mode, seconds=took, verdict=verdict["verdict"],
               test_ms=test_gate(verdict).get("duration_ms"),
               failed_tests=test_gate(verdict).get("failed_tests"))
        say(f"B {mode} first FAIL (whole suite): {took:.2f} s, failed tests "
            f"{test_gate(verdict).get('failed_tests')}")
        watcher.settle()
        for rnd in range(runs):
            label = f"B-{mode}-r{rnd}"
            m0, c0, quiet_before = watcher.metrics(), watcher.cpu(), watcher.quiet
            project.edit(project.task, project.next_change(), "broken")
            took, verdict = signal_done(project, watcher, label)
            expect_named_fail(project, verdict, label)
            keep(project, label, verdict)
            watcher.settle()
            spec = delta(watcher.metrics(), m0)
            gate = test_gate(verdict)
            record(raw, kind=kind, row="B", mode=mode, round=rnd, seconds=took, verdict=verdict["verdict"],
                   verdict_ms=verdict.get("duration_ms"), test_ms=gate.get("duration_ms"),
                   test_summary=gate.get("summary"), failed_tests=gate.get("failed_tests"), spec=spec,
                   watcher_cpu=watcher.cpu() - c0, gates=gates_of(verdict), quiet_before=quiet_before,
                   quiet_after=watcher.quiet)
            say(f"B {mode} retry: FAIL {took * 1000:.0f} ms after done (test gate {gate.get('duration_ms')} ms: "
                f"{gate.get('summary')})")
        # The test fixed, done at once: the failing tests run first pass, and the PASS must
        # still come from the whole suite.
        label = f"B-{mode}-fixed"
        project.edit(project.task, project.next_change(), "orig")
        took, verdict = signal_done(project, watcher, label)
        expect_pass(verdict, label)
        keep(project, label, verdict)
        gate = test_gate(verdict)
        record(raw, kind=kind, row="B-fixed", mode=mode, seconds=took, verdict=verdict["verdict"],
               test_ms=gate.get("duration_ms"), test_summary=gate.get("summary"), gates=gates_of(verdict))
        say(f"B {mode} fixed: PASS {took:.2f} s after done (test gate {gate.get('duration_ms')} ms: "
            f"{gate.get('summary')})")
        watcher.settle()
        watcher.stop()
    for rnd in range(runs):
        project.edit(project.pc, project.next_change(), "broken")
        took = pre_commit(project, f"B-r{rnd}", 1, project.failing_test)
        record(raw, kind=kind, row="B", mode="pre-commit", round=rnd, seconds=took)
        say(f"B pre-commit --all-files: {took:.2f} s")
    project.edit(project.task, "orig", "orig")
    project.edit(project.pc, "orig", "orig")


# --- the report ---------------------------------------------------------------------------------

NAMES = {"python": "more-itertools 11.2.1 (ruff check, ruff format --check, pytest)",
         "node": "@fastify/error 4.3.0 (npm run lint: eslint; npm test: c8 node --test, tstyche)"}


def s(x):
    if x is None:
        return "n/a"
    return f"{x * 1000:.0f} ms" if x < 1 else f"{x:.2f} s"


def report():
    env = os.environ
    rows = [json.loads(line) for line in open(env["raw"]) if line.strip()]
    kinds = [k for k in ("python", "node") if any(r["kind"] == k for r in rows)]
    waits = [float(x) for x in env["WAITS"].split()]
    harness = bool(env.get("HARNESS_ONLY"))

    def pick(kind, row, mode, wait=None):
        return [r for r in rows if r["kind"] == kind and r["row"] == row and r["mode"] == mode
                and (wait is None or r.get("wait") == wait)]

    def med(rs, key="seconds"):
        vals = [r[key] for r in rs if r.get(key) is not None]
        return statistics.median(vals) if vals else None

    def spec_sum(rs, key):
        vals = [r.get("spec", {}).get(key) for r in rs]
        return None if any(v is None for v in vals) or not vals else sum(vals)

    def ratio(a, b, target=None):
        if a is None or not b:
            return "n/a", None
        r = a / b
        if target is None:
            return f"{r:.2f}", None
        return f"{r:.2f} (≤ {target}: {'met' if r <= target else 'MISSED'})", r <= target

    out = ["<!-- speculate:start (written by bench/speculate.sh; edits here are replaced) -->",
           "## The verdict at done: speculative runs and failing tests first (`bash bench/speculate.sh`)", "",
           f"Made on {env['made']}, in {env['elapsed']} s, with RUNS={env['RUNS']} (the median is shown), "
           f"T = {', '.join(f'{w:g}' for w in waits)} s. Build: {env['BUILD']}. Machine: {env['MACHINE']}. "
           f"Load average (1, 5, 15 min) at the start {env['load_start']}, at the end {env['load_end']}.", ""]
    if env.get("STOPPED"):
        out += ["**A project's run stopped early (its error is above): its rows are what was "
                "measured before the stop.**", ""]
    if harness:
        out += ["**HARNESS_ONLY: a binary without `speculate:`; both watchers ran without the key. "
                "Nothing here measures speculation.**", ""]
    out += ["The projects bench/real_projects.sh uses, set up the same way (`validator init`'s pack, "
            "pre-commit's `repo: local` hooks running the same commands), each the task `bench` of a "
            "`validator watch` (staging/bench/, a git repository; verdicts and state outside staging). "
            "**A**: a scripted agent edits one line of a source file (every gate still passes), waits "
            "T seconds, writes `staging/bench.done`; the time from that write to a current "
            "`verdicts/bench.verdict.json` (PASS), with speculation (the default) and with "
            "`speculate: false`, against `pre-commit run --all-files` on the same state. "
            "Speculation's cost per done is from the watcher's metrics "
            "(`validator_speculative_cpu_seconds_total`, and its runs by outcome) scraped before "
            "the edit and after the watcher went quiet again; the watcher's whole CPU time per "
            "done (itself and its reaped children, /proc) is shown for both modes. "
            "**B**: one test's expected value changed, done, FAIL (the whole suite, shown as the "
            "first FAIL); then a further one-line source edit keeping the same test failing, done "
            "at once (T = 0), the time to the FAIL naming the test; pre-commit on the same states. "
            "Last, the test fixed and done at once: the verdict must be PASS (from the whole suite).", "",
            "| project | T | speculation | `speculate: false` | pre-commit --all-files | speculation / pre-commit | speculation / no speculation | speculation CPU per done | speculative runs (started, used, cancelled, discarded) | watcher CPU per done: speculation, no speculation |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    met = []
    for kind in kinds:
        pc = med(pick(kind, "A", "pre-commit"))
        nospec_all = med([r for w in waits for r in pick(kind, "A", "no-speculate", w)])
        for i, wait in enumerate(waits):
            sp, ns = pick(kind, "A", "speculate", wait), pick(kind, "A", "no-speculate", wait)
            a, b = med(sp), med(ns)
            long_wait = nospec_all is not None and wait > nospec_all
            r_pc, ok_pc = ratio(a, pc, 0.1 if long_wait else None)
            r_ns, ok_ns = ratio(a, b, 1.0)
            met += [(kind, f"A T={wait:g}", "pre-commit", ok_pc), (kind, f"A T={wait:g}", "no speculation", ok_ns)]
            cpu = spec_sum(sp, "cpu")
            runs_ = [spec_sum(sp, k) for k in ("started", "used", "cancelled", "discarded")]
            runs_text = "n/a" if any(v is None for v in runs_) else ", ".join(f"{v:g}" for v in runs_)
            out.append(f"| {NAMES[kind] if i == 0 else ''} | {wait:g} s | {s(a)} | {s(b)} | {s(pc) if i == 0 else '〃'} "
                       f"| {r_pc}{'' if long_wait else ' (T ≤ the pipeline: no target)'} | {r_ns} "
                       f"| {'n/a' if cpu is None else f'{cpu / len(sp):.2f} s'} | {runs_text} "
                       f"| {s(med(sp, 'watcher_cpu'))}, {s(med(ns, 'watcher_cpu'))} |")
    out += ["", "The pipeline's time at done without speculation (the median over every T): " +
            ", ".join(f"{k} {s(med([r for w in waits for r in pick(k, 'A', 'no-speculate', w)]))}" for k in kinds) +
            ". Targets: speculation ≤ 0.1× pre-commit when T is longer than that; speculation ≤ 1.0× "
            "no speculation at every T.", "",
            "| project | retry, named failing test still fails | speculation | `speculate: false` | pre-commit --all-files | speculation / pre-commit | no speculation / pre-commit | test gate at the retry (speculation; its summary) | first FAIL, whole suite (speculation, no speculation) | the test fixed, done at once: PASS (speculation, no speculation) |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for kind in kinds:
        sp, ns, pcs = pick(kind, "B", "speculate"), pick(kind, "B", "no-speculate"), pick(kind, "B", "pre-commit")
        a, b, pc = med(sp), med(ns), med(pcs)
        r_a, ok_a = ratio(a, pc, 0.2)
        r_b, ok_b = ratio(b, pc, 0.2)
        met += [(kind, "B", "pre-commit (speculation)", ok_a), (kind, "B", "pre-commit (no speculation)", ok_b)]
        summary = sp[-1].get("test_summary") if sp else None
        first = [med(pick(kind, "B-first", m)) for m in ("speculate", "no-speculate")]
        fixed = [med(pick(kind, "B-fixed", m)) for m in ("speculate", "no-speculate")]
        out.append(f"| {kind} | T = 0 | {s(a)} | {s(b)} | {s(pc)} | {r_a} | {r_b} "
                   f"| {s(med(sp, 'test_ms') / 1000 if med(sp, 'test_ms') is not None else None)}"
                   f"{'; ' + summary.replace('|', '/') if summary else ''} | {s(first[0])}, {s(first[1])} "
                   f"| {s(fixed[0])}, {s(fixed[1])} |")
    missed = [m for m in met if m[3] is False]
    out += ["", "Targets missed: " + ("none." if not missed else "; ".join(f"{k} {row} vs {peer}" for k, row, peer, _ in missed) + "."),
            "", "What ran at done (each gate's median time in the verdicts, ms; `cached` and the "
            "gates speculation answered show as the verdict records them), and how often a "
            "speculative run was used:", ""]
    for kind in kinds:
        for row, mode, wait in ([("A", m, w) for w in waits for m in ("speculate", "no-speculate")] +
                                [("B", m, None) for m in ("speculate", "no-speculate")]):
            rs = pick(kind, row, mode, wait)
            if not rs:
                continue
            names = [g[0] for g in rs[0].get("gates", [])]
            cells = []
            for name in names:
                ms = [g[2] for r in rs for g in r.get("gates", []) if g[0] == name and g[2] is not None]
                outcomes = sorted({g[1] for r in rs for g in r.get("gates", []) if g[0] == name})
                cells.append(f"{name} {'/'.join(outcomes)} {statistics.median(ms):.0f}" if ms else name)
            used = spec_sum(rs, "used")
            used_text = "" if mode != "speculate" or used is None else f"; speculative runs used {used:g} of {len(rs)} dones"
            out.append(f"- {kind} {row}{f' T={wait:g} s' if wait is not None else ' retry'} {mode}: "
                       + ", ".join(cells) + used_text)
    for kind in kinds:
        spec_rows = [r for r in rows if r["kind"] == kind and r["mode"] == "speculate" and "quiet_before" in r]
        loud = [r for r in spec_rows if r.get("quiet_before") is False or r.get("quiet_after") is False]
        if loud:
            started = sum(r.get("spec", {}).get("started", 0) for r in spec_rows)
            cancelled = sum(r.get("spec", {}).get("cancelled", 0) for r in spec_rows)
            out.append(f"- **{kind}: the watcher with speculation never went quiet** around {len(loud)} of "
                       f"{len(spec_rows)} measured dones (no 2 s without a process under it, within 90 s at "
                       f"first, 8 s after): its speculative runs kept starting over ({started:g} started, "
                       f"{cancelled:g} cancelled across those dones), so those dones were measured with one "
                       "running in the background.")
    out += ["", ("Every verdict up to the stop" if env.get("STOPPED") else "Every verdict") +
            " was the expected one (the run stops at the first that is not): PASS in A, "
            "FAIL at the test gate naming the broken test in B and PASS once it is fixed, for both watchers; pre-commit exit 0 "
            "in A, 1 naming the test in B.", "",
            f"Versions: {env['BUILD']}; {env['V_PRE_COMMIT']} (PyPI); {env['V_PYTHON']}; node {env['V_NODE']}; "
            "the projects' tools as in the real-projects section.", "",
            "Reproduce: `bash bench/speculate.sh` (`RUNS=5` for more rounds, `PROJECTS=node` for one "
            "project, `WAITS=\"5 15 30\"` for the agent's waits). The projects, the watchers' rules "
            "(`validator-speculate.yaml`, `validator-no-speculate.yaml`) and logs are under "
            "target/bench-work/speculate/<kind>/, every measured verdict under its kept/, the raw "
            "figures in target/bench-work/speculate/runs.jsonl.", "",
            "Raw times (seconds, every measured run):", ""]
    for kind in kinds:
        for row, mode, wait in ([("A", m, w) for w in waits for m in ("speculate", "no-speculate")] +
                                [("A", "pre-commit", None), ("B-first", "speculate", None),
                                 ("B-first", "no-speculate", None), ("B-fixed", "speculate", None),
                                 ("B-fixed", "no-speculate", None), ("B", "speculate", None),
                                 ("B", "no-speculate", None), ("B", "pre-commit", None)]):
            rs = pick(kind, row, mode, wait)
            if rs:
                out.append(f"- {kind} {row} {mode}{f' T={wait:g}' if wait is not None else ''}: "
                           + " ".join(f"{r['seconds']:.3f}" for r in rs))
    out.append("<!-- speculate:end -->")
    section = "\n".join(out) + "\n"
    print(section)
    if not env.get("NO_RESULTS"):
        path = env["results"]
        text = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
        pattern = re.compile(r"<!-- speculate:start.*?<!-- speculate:end -->\n?", re.S)
        if pattern.search(text):
            text = pattern.sub(lambda _: section, text)
        else:
            text = text.rstrip("\n") + "\n\n" + section
        open(path, "w").write(text)
        print(f"wrote {path}")


if __name__ == "__main__":
    if sys.argv[1:] == ["report"]:
        report()
    else:
        measure()
