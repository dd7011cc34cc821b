"""Tool-time scenarios of harness.py: validator answering the agents' tool events (pre-tool,
post-tool) inside the real CLIs, as examples/hooks wires them, and the session breakers
(drift, the same tool error, max_tokens).

Each scenario is a spec (spec()): the rules the run uses, the scripted turns, and what must
hold. What "the model was told" means is always checked on the wire: the text validator logged
(events.jsonl: tool_denied's reason, tool_told's message, hook_answered's reasons) must be in
the body of the model server's next main request, and nowhere before where it says so.

The project of these runs has a first commit (seed.txt and the CLI's own settings), so the
file-scope gate has a base to compare with.
"""
import json
import os
import re

import confine_scenarios as CS

# The scope every write is held to: answer.txt may be written, seed.txt is read-only, the rest
# is outside `allow`. `git push` is a critical command.
TOOLS = 'tools:\n  commands:\n    - {match: "git push", decision: deny, reason: "a person pushes after the review"}\n'
SCOPE = ('      - name: scope\n        rule: file-scope\n        allow: ["answer.txt"]\n'
         '        readonly: ["seed.txt"]\n')
SEED = "old line\n"
PYTHON_WRITE = "python3 -c \"open('notes.txt','w').write('x')\""
PYTHON_UNDO = "python3 -c \"import os; os.remove('notes.txt')\""
FAILING = "ls missing-W5"
SAME_ERROR = "STOP. Same error 3 times. Use a different tool or approach."
REPEATING = "you are repeating yourself"
MAX_TOKENS = 3000  # past two scripted responses (at most 2564 tokens), short of three (at least 3771)
MAX_TOKENS_TOOL = 2000  # past two responses (at least 2510), short of one (at most 1280)
DONE = "I am done.\nSTATUS: OK"
WROTE = "Wrote answer.txt.\nSTATUS: OK"
PADDED = "*** Begin Patch\n  *** Add File: padded.txt\n+padded\n*** End Patch\n"
HEREDOC = "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: other.txt\n+other\n*** End Patch\nEOF\n"

ALL = ("claude", "codex", "gemini", "opencode")
# scenario -> the agents it runs with (OpenCode through the plugin, under `opencode serve`).
SCENARIOS = {
    "tool_refusals": ALL,
    "tool_subagent": ("claude",),   # Claude Code's Agent tool: its subagent's PreToolUse
    "patch_through": ("codex",),    # a patch no pre-tool hook refused: the post-tool check
    "tool_invisible": ALL,
    "tool_broken": ALL,
    "drift": ALL,
    "tool_strikes": ALL,
    "tokens": ALL,
    "tokens_tool": ALL,
}
# Confinement (validator exec under the pre-tool hook's rewrite, validator run): confine_scenarios.py
SCENARIOS.update(CS.SCENARIOS)


def rules(scenario, ok, broken):
    """The rules of SCENARIO: tests/agents/validator.yaml (OK) and what the scenario needs."""
    if scenario in CS.SCENARIOS:
        return CS.rules(scenario, ok)
    scoped = ok.replace("pipelines:\n", TOOLS + "pipelines:\n", 1) + SCOPE
    if scenario == "tool_broken":
        return broken
    if scenario == "patch_through":  # the second stop ends it: ESCALATED
        return scoped.replace("max_attempts: 3", "max_attempts: 1")
    if scenario == "drift":  # the drift breaker before the strikes (which win a tie)
        return ok.replace("strikes: 3", "strikes: 10\n  drift: {stops: 3}").replace("max_attempts: 3", "max_attempts: 10")
    if scenario == "tool_strikes":
        return ok.replace("strikes: 3", "strikes: 3\n  tool_strikes: 3")
    if scenario == "tokens":
        return ok.replace("strikes: 3", "strikes: 3\n  max_tokens: %d" % MAX_TOKENS)
    if scenario == "tokens_tool":
        return ok.replace("strikes: 3", "strikes: 3\n  max_tokens: %d" % MAX_TOKENS_TOOL)
    return scoped


# ------------------------------------------------------------------ the model's tool calls

def patch_add(rel, line):
    return "*** Begin Patch\n*** Add File: %s\n+%s\n*** End Patch\n" % (rel, line)


def call(cli, proj, kind, arg=None):
    """One tool call in CLI's own tool names and input shapes (tests/agents/PROTOCOLS.md):
    write ARG (a path in the project), read or edit seed.txt, shell ARG (a command line)."""
    path = os.path.join(proj, arg) if kind == "write" else os.path.join(proj, "seed.txt")
    if cli == "claude":
        return {"write": {"name": "Write", "input": {"file_path": path, "content": "42\n"}},
                "read": {"name": "Read", "input": {"file_path": path}},
                "edit": {"name": "Edit", "input": {"file_path": path, "old_string": "old line", "new_string": "new line"}},
                "shell": {"name": "Bash", "input": {"command": arg, "description": "scripted"}}}[kind]
    if cli == "codex":
        return {"write": {"name": "apply_patch", "input": patch_add(arg, "42")},
                "edit": {"name": "apply_patch",
                         "input": "*** Begin Patch\n*** Update File: seed.txt\n@@\n-old line\n+new line\n*** End Patch\n"},
                "shell": {"name": "exec_command", "input": {"cmd": arg}}}[kind]
    if cli == "gemini":
        return {"write": {"name": "write_file", "input": {"file_path": path, "content": "42\n"}},
                "edit": {"name": "replace", "input": {"file_path": path, "old_string": "old line",
                                                      "new_string": "new line", "instruction": "edit it"}},
                "shell": {"name": "run_shell_command", "input": {"command": arg, "description": "scripted"}}}[kind]
    return {"write": {"name": "write", "input": {"filePath": path, "content": "42\n"}},
            "read": {"name": "read", "input": {"filePath": path}},
            "edit": {"name": "edit", "input": {"filePath": path, "oldString": "old line", "newString": "new line"}},
            "shell": {"name": "bash", "input": {"command": arg, "description": "scripted"}}}[kind]


def spec(cli, scenario, proj):
    """The scripted turns of SCENARIO and what the check needs to know of them: "refused"
    (the turns whose call validator must refuse), "told" (the turns after whose call the model
    must be told something), "verdicts" (the stops, as verdict/answer)."""
    if scenario in CS.SCENARIOS:
        return CS.spec(cli, scenario, proj)

    def tool(kind, arg=None):
        return {"tool": call(cli, proj, kind, arg)}
    answer = tool("write", "answer.txt")
    if scenario == "tool_refusals":
        # Each refused call, with what its reason must say.
        outside, readonly = "is refused: it is outside `allow`", "is refused: it is `readonly`"
        calls = [(tool("write", "notes.txt"), ["notes.txt", outside])]
        if cli in ("claude", "opencode"):  # their edit tools want the file read first
            calls.append((tool("read"), None))
        calls += [(tool("edit"), ["seed.txt", readonly]),
                  (tool("shell", "git push origin main"),
                   ["running git push origin main is refused by the rules (`tools.commands`: `git push`)"]),
                  (tool("shell", "echo x > notes.txt"), ["notes.txt", outside])]
        if cli == "codex":
            # A hunk header with leading blanks: Codex's parser trims it (lenient), so it writes.
            calls.append(({"tool": {"name": "apply_patch", "input": PADDED}}, ["padded.txt", outside]))
            # A patch through the shell: Codex applies it itself.
            calls.append((tool("shell", HEREDOC), ["other.txt", outside]))
        return {"turns": [t for t, _ in calls] + [answer, {"text": WROTE}],
                "refused": [i for i, (_, why) in enumerate(calls) if why],
                "why": [why for _, why in calls if why], "verdicts": ["PASS/pass"]}
    if scenario == "tool_subagent":  # the subagent's write is refused; it writes the answer; both stops pass
        agent = {"tool": {"name": "Agent", "input": {"description": "Write the answer",
                                                     "prompt": "Create answer.txt with the answer.",
                                                     "subagent_type": "general-purpose",
                                                     "run_in_background": False}}}
        return {"turns": [agent, tool("write", "notes.txt"), answer, {"text": "Sub done.\nSTATUS: OK"},
                          {"text": "The subagent wrote it.\nSTATUS: OK"}],
                "refused": [1], "verdicts": ["PASS/pass", "PASS/pass"]}
    if scenario == "patch_through":  # PreToolUse not wired (harness.py): as if Codex had not asked
        return {"turns": [answer, tool("write", "notes.txt"), {"tool": call(cli, proj, "shell", HEREDOC)},
                          {"text": DONE}], "after_last": "repeat",
                "told": [1], "verdicts": ["FAIL/block", "ESCALATED/stop"]}
    if scenario == "tool_invisible":  # runs; told at once; the stop fails; undone; the stop passes
        return {"turns": [tool("shell", PYTHON_WRITE), answer, {"text": DONE}, tool("shell", PYTHON_UNDO),
                          {"text": WROTE}], "told": [0], "verdicts": ["FAIL/block", "PASS/pass"]}
    if scenario == "tool_broken":
        # Rules that do not load: the write is refused, and each stop is held until a person is
        # called in (never a free stop).
        return {"turns": [tool("write", "notes.txt"), {"text": DONE}], "after_last": "repeat",
                "verdicts": ["ERROR/block"] * 3 + ["ERROR/stop"]}
    if scenario == "drift":
        return {"turns": [{"text": DONE}], "after_last": "repeat",
                "verdicts": ["FAIL/block", "FAIL/block", "ESCALATED/stop"]}
    if scenario == "tool_strikes":
        return {"turns": [tool("shell", FAILING)] * 3 + [answer, {"text": WROTE}], "told": [2],
                "verdicts": ["PASS/pass"]}
    if scenario == "tokens":
        return {"turns": [tool("shell", "ls"), answer, {"text": WROTE}], "after_last": "repeat",
                "verdicts": ["ESCALATED/stop"]}
    if scenario == "tokens_tool":  # past max_tokens before a tool: refused, and the agent stopped where it can be
        return {"turns": [tool("shell", "ls"), answer, tool("shell", "touch late.txt"), {"text": WROTE}],
                "after_last": "repeat", "verdicts": None}
    raise SystemExit("unknown tool scenario " + scenario)


def script(s):
    return {"turns": s["turns"], "after_last": s.get("after_last", "text")}


# ------------------------------------------------------------------ checks

def strings(obj):
    """Every string in a JSON value."""
    if isinstance(obj, dict):
        for v in obj.values():
            yield from strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from strings(v)
    elif isinstance(obj, str):
        yield obj


def told_in(request, text):
    return times_in(request, text) > 0


def times_in(request, text):
    """How many strings of a request's body hold TEXT (a request repeats the whole conversation)."""
    return 0 if request is None else sum(text in s for s in strings(request.get("body")))


def feedback(mains):
    """The first stop's FAIL feedback as the model read it (every string holding it)."""
    for r in mains:
        found = [s for s in strings(r.get("body")) if "validator: FAIL" in s]
        if found:
            return " ".join(found)
    return ""


def first_told_after(requests, turn, text):
    """Whether TEXT reached the model with the request right after TURN (one more place holds
    it than in the request of TURN itself, which came before the call was answered)."""
    return times_in(requests(turn + 1), text) > times_in(requests(turn), text)


def check(cli, scenario, s, run, proj, rc, mains, ev, res):
    """Whether SCENARIO held; the details land in res["checks"] (each False names what failed)."""
    c = {}
    denied = [e["details"] for e in ev if e.get("event") == "tool_denied"]
    told = [e["details"] for e in ev if e.get("event") == "tool_told"]
    answered = [e for e in ev if e.get("event") == "hook_answered"]
    req = lambda i: mains[i] if 0 <= i < len(mains) else None  # noqa: E731
    exists = lambda rel: os.path.exists(os.path.join(proj, rel))  # noqa: E731
    if s["verdicts"] is not None:
        c["verdicts"] = res["verdicts"] == s["verdicts"]
    # Each refusal: one tool_denied, its reason in the very next request, never a stop.
    refused = s.get("refused", [])
    c["refused"] = len(denied) == len(refused) and not any(d["stopped"] for d in denied)
    c["reasons_in_next_request"] = all(first_told_after(req, t, d["reason"]) for t, d in zip(refused, denied))
    if "why" in s:
        c["reasons_say_why"] = len(denied) == len(s["why"]) and all(
            all(w in d["reason"] for w in why) for why, d in zip(s["why"], denied))
    # Each message after a tool: a tool_told, in the very next request and not before.
    want = s.get("told", [])
    c["told"] = len(told) == len(want)
    c["told_in_next_request"] = len(told) >= len(want) and all(
        first_told_after(req, t, m["message"]) for t, m in zip(want, told))
    if scenario in ("tool_refusals", "tool_subagent"):
        c["files"] = exists("answer.txt") and not any(exists(f) for f in ("notes.txt", "other.txt", "padded.txt")) and \
            open(os.path.join(proj, "seed.txt")).read() == SEED
    if scenario == "tool_subagent":  # refused in the subagent: its session key, not its parent's
        sub = [e for e in answered if e.get("agent", "").startswith("claude/")]
        denial = [e for e in ev if e.get("event") == "tool_denied"]
        c["in_subagent"] = bool(sub) and all(e["task"] == sub[0]["task"] for e in denial) and \
            any(e["task"] != sub[0]["task"] for e in answered)
    if scenario == "patch_through":  # the apply_patch is told at once; the heredoc has no post-tool event
        c["files"] = exists("notes.txt") and exists("other.txt")
        c["told_patch_not_heredoc"] = bool(told) and all("notes.txt" in m["message"] for m in told) and \
            not any("other.txt" in m["message"] for m in told) and not denied
        c["stop_names_both"] = "notes.txt" in feedback(mains) and "other.txt" in feedback(mains)
    if scenario == "tool_invisible":
        first = told[0]["message"] if told else ""
        c["told_what"] = "notes.txt" in first and "undo" in first
        c["stop_failed_on_it"] = "notes.txt" in feedback(mains)
        c["files"] = exists("answer.txt") and not exists("notes.txt") and not denied
    if scenario == "tool_broken":  # rules that do not load: the write refused, every stop held
        c["files"] = not exists("notes.txt")
        c["held_then_stopped"] = rc == 0
    if scenario == "drift":
        escalated = [e["details"] for e in ev if e.get("event") == "escalated"]
        c["breaker"] = [e["breaker"] for e in escalated] == ["drift"]
        c["told_repeating"] = len(mains) == 3 and told_in(req(2), REPEATING) and not told_in(req(1), REPEATING)
    if scenario == "tool_strikes":
        c["same_error"] = len(told) == 1 and SAME_ERROR in told[0]["message"]
        c["told_once"] = told_in(req(3), SAME_ERROR) and not any(told_in(req(i), SAME_ERROR) for i in (1, 2))
    if scenario == "tokens":
        c.update(tokens(run, ev, answered, res))
    if scenario == "tokens_tool":
        c.update(tokens_tool(cli, run, mains, ev, res))
        c["refused"] = bool(denied) and denied[0]["stopped"]
        c["files"] = not exists("late.txt")
    if scenario in CS.SCENARIOS:
        CS.check(cli, scenario, s, run, proj, rc, mains, ev, res, c)
    res["checks"] = c
    return all(c.values())


def server_prefix_sums(mains):
    """The scripted model's tokens after each main response: [after 1, after 2, ...]."""
    sums, total = [], 0
    for r in mains:
        total += sum((r.get("usage") or {}).get("normalized", {}).values())
        sums.append(total)
    return sums


def tokens_tool(cli, run, mains, ev, res):
    """The first tool call past max_tokens: refused, the agent stopped (Codex cannot be: it is
    refused again, and its stop ESCALATED), the count the refusal gives the model's own."""
    denials = [e for e in ev if e.get("event") == "tool_denied"]
    if not denials:
        return {"budget_refusal": False}
    first = denials[0]
    found = re.search(r"^(\d+) tokens used \(max_tokens %d\)$" % MAX_TOKENS_TOOL, first["details"]["reason"])
    counted = int(found.group(1)) if found else None
    sums = server_prefix_sums(mains)
    # The responses the model server had sent when the call was refused (the event's id is its time).
    at = int(first["id"], 16) / 1e9
    sent = sum(1 for r in mains if r["t"] <= at)
    res["tokens"] = {"server_after_each_response": sums, "refusal_reason": counted, "responses_sent": sent}
    # Counted as far as the agent had recorded: every response sent, or all but the one whose
    # tool call this is (Claude Code writes its transcript late at times, OpenCode a step's
    # tokens after its tools: PROTOCOLS.md).
    out = {"budget_refusal_counts_server_tokens": counted is not None and counted > MAX_TOKENS_TOOL and
           any(k > 0 and sums[k - 1] == counted for k in (sent, sent - 1))}
    if cli == "codex":  # refused every time after, the stop ESCALATED
        answered = [e["details"]["verdict"] for e in ev if e.get("event") == "hook_answered"]
        out["codex_refused_after"] = all(d["details"]["stopped"] for d in denials) and \
            answered[-1:] == ["ESCALATED"]
    else:  # stopped: no request after the refusal
        out["stopped"] = len(mains) == sent
    return out


def tokens(run, ev, answered, res):
    """validator's count (its escalation reason, its session record) against the scripted model's
    totals (server.usage.json: every main response's tokens, however the API splits them)."""
    usage = {}
    if os.path.exists(run + "/server.usage.json"):
        usage = json.load(open(run + "/server.usage.json")).get("main") or {}
    server = sum(v for k, v in usage.items() if k != "responses")
    reasons = " ".join(r for e in answered for r in e["details"].get("reasons") or [])
    found = re.search(r"(\d+) tokens used \(max_tokens %d\)" % MAX_TOKENS, reasons)
    counted = int(found.group(1)) if found else None
    records = []
    sessions = run + "/rules/.validator/sessions"
    for name in sorted(os.listdir(sessions)) if os.path.isdir(sessions) else []:
        if name.endswith(".json"):
            records.append(json.load(open(os.path.join(sessions, name))).get("usage", {}).get("total"))
    res["tokens"] = {"server_main": server, "server_responses": usage.get("responses"),
                     "escalation_reason": counted, "session_records": records}
    escalated = [e["details"] for e in ev if e.get("event") == "escalated"]
    return {"tokens_reported_match_server": counted == server and server > MAX_TOKENS,
            "session_record_matches": records == [server],
            "budget_breaker": [e["breaker"] for e in escalated] == ["budget"]}
