"""Confinement scenarios of harness.py (docs/rules-file.md, Confinement): the pre-tool hook
rewrites every shell call it allows to run under `validator exec`, and `validator run` confines
a whole agent. They are tool-time scenarios (tool_scenarios.py runs their spec and checks);
what is theirs is here: the rules, the CLI's own rule files, the command line, the facts.

The rules hold every write to `src/**` (the exists gate wants src/answer.txt), so the task's
root is not writable; src/ exists from the first commit (src/.keep), or its nearest existing
directory, the root, would be writable.

  confined_writes    (every CLI) writes validator's shell reader cannot see, each outside src/:
                     a program's own (`python3 -c "open('notes.txt','w')…"`), text piped into
                     `sh`, a script written in src/ and run from the root; and a program's write
                     inside src/. The kernel refuses the three (the files never exist, the model
                     reads `Permission denied` and validator's "confined by the kernel" in its
                     next request), the fourth lands; nothing out of scope, so the stop PASSes
  confined_own_deny  (every CLI) the user's own deny rule on `echo 42` in the CLI's own rule
                     file (Claude Code `permissions.deny`, Codex `rules/default.rules`, Gemini
                     CLI a policy, OpenCode `permission.bash`) still refuses it once validator
                     has rewritten the call (the call never runs: src/denied.txt is not written;
                     Codex's rules read no command with a redirect, so there plain `echo 42` and
                     the refusal's text); an allowed call after it runs, confined: its write in
                     src/ lands, its write at the root is refused by the kernel
  run_claude         (Claude Code) `validator run --task-dir PROJ -c RULES -- claude …`, no
                     PreToolUse/PostToolUse hook wired (the backstop alone): a subagent (the
                     Agent tool) whose Bash call writes outside.txt at the root through python;
                     the kernel refuses it, Claude Code itself runs to the end (its state in
                     $CLAUDE_CONFIG_DIR written, rc 0), both stops judged PASS by validator's own
                     hooks, which `run` judges outside the confinement (its broker), their state
                     and events kept. CLAUDE_CONFIG_DIR is set as docs/commands.md says: without
                     it Claude Code saves ~/.claude.json through a temporary file in $HOME, which
                     `run` does not make writable (PROTOCOLS.md, Confinement).
                     E2E_RUN_CLAUDE_HOOKS=1 keeps the tool hooks wired (an experiment)
"""
import json
import os

ALL = ("claude", "codex", "gemini", "opencode")
SCENARIOS = {
    "confined_writes": ALL,
    "confined_own_deny": ALL,
    "run_claude": ("claude",),
}

SCOPE = '      - name: scope\n        rule: file-scope\n        allow: ["src/**"]\n'
ANSWER = "src/answer.txt"
WROTE = "Wrote src/answer.txt.\nSTATUS: OK"
CONFINED = "your shell commands run confined by the kernel"
# The kernel's refusal as each program reports it (validator's own message says
# "`Permission denied`", in backquotes: these are the programs' words, not its).
PY_REFUSED = "Permission denied: '%s'"   # PermissionError: [Errno 13] Permission denied: 'notes.txt'
SH_REFUSED = "cannot create %s: Permission denied"  # sh: 1: cannot create piped.txt: Permission denied
# confined_writes: (command, the file it must not make, how its refusal reads) for each write
# outside src/.
OUTSIDE = [
    ("python3 -c \"open('notes.txt','w').write('x')\"", "notes.txt", PY_REFUSED % "notes.txt"),
    ("printf 'echo 42 > piped.txt' | sh", "piped.txt", SH_REFUSED % "piped.txt"),
    ("printf 'echo x > escaped.txt\\n' > src/w.sh", None, None),  # in scope: the script itself
    ("sh src/w.sh", "escaped.txt", SH_REFUSED % "escaped.txt"),   # run from the root
]
INSIDE = "python3 -c \"open('src/ok.txt','w').write('ok')\""
# confined_own_deny: the call the CLI's own rule refuses, and what the CLI says when it does.
DENIED = {"claude": "echo 42 > src/denied.txt", "codex": "echo 42",
          "gemini": "echo 42 > src/denied.txt", "opencode": "echo 42 > src/denied.txt"}
REFUSAL = {"claude": "has been denied",  # "Permission to use Bash with command … has been denied."
           "codex": "policy forbids commands starting with `echo 42`",
           "gemini": "denied by policy",  # "Tool execution denied by policy."
           "opencode": "The user has specified a rule which prevents you"}
ALLOWED = "python3 -c \"open('src/ok.txt','w').write('ok'); open('notes.txt','w').write('x')\""
SUBAGENT_WRITE = "python3 -c \"open('outside.txt','w').write('x')\""


def rules(scenario, ok):
    """tests/agents/validator.yaml with the answer in src/ and every write held to src/**."""
    return ok.replace('paths: ["answer.txt"]', 'paths: ["%s"]' % ANSWER) + SCOPE


def spec(cli, scenario, proj):
    import tool_scenarios as TS  # which imports this module
    tool = lambda kind, arg=None: {"tool": TS.call(cli, proj, kind, arg)}  # noqa: E731
    answer = tool("write", ANSWER)
    if scenario == "confined_writes":
        shells = [c for c, _, _ in OUTSIDE] + [INSIDE]
        kernel = {i: why for i, (_, _, why) in enumerate(OUTSIDE) if why}
        return {"turns": [tool("shell", c) for c in shells] + [answer, {"text": WROTE}],
                "told": sorted(kernel), "kernel": kernel, "verdicts": ["PASS/pass"]}
    if scenario == "confined_own_deny":
        return {"turns": [tool("shell", DENIED[cli]), tool("shell", ALLOWED), answer, {"text": WROTE}],
                "told": [1], "kernel": {1: PY_REFUSED % "notes.txt"}, "own_refusal": 0,
                "verdicts": ["PASS/pass"]}
    if scenario == "run_claude":  # the subagent's call refused by the kernel; it writes the answer
        agent = {"tool": {"name": "Agent", "input": {"description": "Write the answer",
                                                     "prompt": "Create src/answer.txt with the answer.",
                                                     "subagent_type": "general-purpose",
                                                     "run_in_background": False}}}
        return {"turns": [agent, tool("shell", SUBAGENT_WRITE), answer, {"text": "Sub done.\nSTATUS: OK"},
                          {"text": "The subagent wrote it.\nSTATUS: OK"}],
                "kernel": {1: PY_REFUSED % "outside.txt"}, "verdicts": ["PASS/pass", "PASS/pass"]}
    raise SystemExit("unknown confinement scenario " + scenario)


def prepare(H, cli, scenario, run, proj, rules_path, cmd, env):
    """Before the first commit: src/ made, the CLI's own deny rule, the agent under `validator run`."""
    os.makedirs(proj + "/src", exist_ok=True)
    open(proj + "/src/.keep", "w").close()
    if scenario == "confined_own_deny":
        if cli == "claude":  # the project's settings, beside the hooks
            path = proj + "/.claude/settings.json"
            settings = json.load(open(path))
            settings["permissions"] = {"deny": ["Bash(echo 42:*)"]}
            with open(path, "w") as f:
                json.dump(settings, f, indent=2)
        elif cli == "codex":
            os.makedirs(env["CODEX_HOME"] + "/rules", exist_ok=True)
            with open(env["CODEX_HOME"] + "/rules/default.rules", "w") as f:
                f.write('prefix_rule(pattern = ["echo", "42"], decision = "forbidden")\n')
        elif cli == "gemini":  # above harness.py's shell.toml (allow, priority 100)
            with open(env["HOME"] + "/.gemini/policies/deny.toml", "w") as f:
                f.write('[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "echo 42"\n'
                        'decision = "deny"\npriority = 200\n')
        else:  # the `opencode serve` the harness starts reads the same config
            config = json.loads(env["OPENCODE_CONFIG_CONTENT"])
            config["permission"]["bash"] = {"*": "allow", "echo 42*": "deny"}
            env["OPENCODE_CONFIG_CONTENT"] = json.dumps(config)
    if scenario == "run_claude":  # no tool hook: the kernel is all that holds the subagent's Bash
        if not os.environ.get("E2E_RUN_CLAUDE_HOOKS"):  # experiment: the tool hooks wired too
            path = proj + "/.claude/settings.json"
            settings = json.load(open(path))
            for event in ("PreToolUse", "PostToolUse", "PostToolUseFailure"):
                settings["hooks"].pop(event, None)
            with open(path, "w") as f:
                json.dump(settings, f, indent=2)
        env["CLAUDE_CONFIG_DIR"] = env["HOME"] + "/.claude"  # its state in one directory
        cmd = [H.VALIDATOR, "run", "--task-dir", proj, "-c", rules_path, "--"] + cmd
    return cmd, env


def check(cli, scenario, s, run, proj, rc, mains, ev, res, c):
    """The scenario's own facts, added to C (tool_scenarios.check's)."""
    import tool_scenarios as TS
    req = lambda i: mains[i] if 0 <= i < len(mains) else None  # noqa: E731
    exists = lambda rel: os.path.exists(os.path.join(proj, rel))  # noqa: E731
    told = [e["details"]["message"] for e in ev if e.get("event") == "tool_told"]
    # Each call the kernel holds: the refusal as the program saw it, in the very next request.
    c["kernel_refusal_in_next_request"] = all(TS.first_told_after(req, t, why) for t, why in s["kernel"].items())
    if s.get("told"):
        c["told_confined"] = len(told) == len(s["told"]) and all(CONFINED in m and "src" in m for m in told)
    c["rc"] = rc == 0
    if scenario == "confined_writes":
        c["files"] = exists(ANSWER) and exists("src/ok.txt") and exists("src/w.sh") and \
            not any(exists(f) for _, f, _ in OUTSIDE if f) and not os.path.exists(os.path.join(run, "escaped.txt"))
    if scenario == "confined_own_deny":
        c["own_refusal_in_next_request"] = TS.first_told_after(req, s["own_refusal"], REFUSAL[cli])
        c["files"] = exists(ANSWER) and exists("src/ok.txt") and not exists("notes.txt") and \
            not exists("src/denied.txt")
    if scenario == "run_claude":
        home = run + "/home"
        transcripts = [os.path.join(d, f) for d, _, fs in os.walk(home + "/.claude/projects") for f in fs
                       if f.endswith(".jsonl")]
        c["files"] = exists(ANSWER) and not exists("outside.txt")
        env = json.load(open(run + "/cmd.json"))["env"]
        # Its global config: ~/.claude.json, or in $CLAUDE_CONFIG_DIR when that is set.
        config = os.path.join(env.get("CLAUDE_CONFIG_DIR", home), ".claude.json")
        c["claude_state_written"] = bool(transcripts) and os.path.exists(config)
        c["under_validator_run"] = "run" in json.load(open(run + "/cmd.json"))["cmd"]
        # validator's own hooks run inside the confinement too: what they keep must be kept.
        c["hooks_recorded"] = os.path.exists(run + "/rules/.validator/events.jsonl")
        res["claude_state"] = {"transcripts": len(transcripts), "config": config,
                               "config_written": os.path.exists(config)}
    return c
